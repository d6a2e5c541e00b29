//! `missionboard agent list` and `missionboard agent add <name>`.

use std::path::Path;

use super::Ctx;
use super::out::{self, out, outln};
use crate::agents::{Agent, Registry, SELF_COMMAND, catalogue};
use crate::row;

/// Is the agent's program here, and which version: `built in`, the version, `yes`
/// (found, version unknown) or `no`.
fn installed(agent: &Agent) -> (bool, Option<String>, String) {
    if agent.command == SELF_COMMAND {
        return (true, None, "built in".to_string());
    }
    match catalogue::installed_version(agent) {
        Some((path, version)) => {
            let cell = version.clone().unwrap_or_else(|| "yes".to_string());
            (true, version, format!("{cell} ({})", path.display()))
        }
        None => (false, None, "no".to_string()),
    }
}

pub(super) fn list(ctx: &Ctx, json: bool) -> anyhow::Result<i32> {
    let reg = Registry::load(&ctx.paths)?;
    if json {
        // Declared `env` values stay out: they are where API keys live.
        let agents: Vec<_> = reg
            .all()
            .map(|a| {
                let (is_installed, version, _) = installed(a);
                serde_json::json!({
                    "name": a.name,
                    "command": a.command,
                    "args": a.args,
                    "description": a.description,
                    "source": a.source.display().to_string(),
                    "installed": is_installed,
                    "version": version,
                    "catalogue": a.is_catalogue_entry(),
                    "install": a.about.install,
                    "limits": a.about.limits,
                })
            })
            .collect();
        out::json(&agents)?;
        return Ok(0);
    }
    if reg.files.is_empty() {
        outln!(
            "No agents declared. Run 'missionboard init' to seed agents.toml with the built-in agents, or declare one under [agents.<name>] in {}.",
            ctx.paths.home.join(crate::agents::FILE_NAME).display()
        )?;
    } else {
        let mut rows = vec![row!["NAME", "COMMAND", "INSTALLED", "DESCRIPTION"]];
        for a in reg.all() {
            rows.push(row![
                a.name,
                a.command_line(),
                installed(a).2,
                a.description
            ]);
        }
        out!("{}", crate::table::render(&rows))?;
    }
    let undeclared: Vec<String> = catalogue::all()
        .iter()
        .filter(|c| reg.get(&c.name).is_none())
        .map(|c| match installed(c) {
            (true, Some(v), _) => format!("{} (installed, {v})", c.name),
            (true, None, _) => format!("{} (installed)", c.name),
            (false, ..) => format!("{} (not installed)", c.name),
        })
        .collect();
    if !undeclared.is_empty() {
        outln!(
            "In the catalogue, not declared here: {} — 'missionboard agent add <name>' declares one.",
            undeclared.join(", ")
        )?;
    }
    Ok(0)
}

/// `agent add <name> [--local] [--force]`: append the catalogue's entry to
/// agents.toml (home's, or the workspace's with `--local`). A declaration of that name
/// already there as the catalogue has it is left alone and said so (`init` seeds the
/// whole catalogue, so `init` then `agent add` must succeed); one that differs is
/// shown as a diff and replaced only under `--force`.
pub(super) fn add(ctx: &Ctx, name: &str, local: bool, force: bool) -> anyhow::Result<i32> {
    let Some(section) = catalogue::section(name) else {
        anyhow::bail!(
            "agent add: {name:?} is not in the catalogue — it has: {} (declare any other ACP agent under [agents.<name>] in agents.toml)",
            catalogue::names().join(", ")
        );
    };
    let entry = catalogue::get(name).expect("a section has an entry");
    let dir = if local {
        ctx.paths.local_dir()
    } else {
        ctx.paths.home.clone()
    };
    let path = dir.join(crate::agents::FILE_NAME);
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => anyhow::bail!("cannot read agents file {}: {e}", path.display()),
    };
    let declared = crate::agents::parse(&path, &existing)?
        .into_iter()
        .find(|a| a.name == name);
    let (text, done) = match declared {
        None => (appended(existing, &section), format!("Added {name} to")),
        Some(mut declared) => {
            declared.source = entry.source.clone();
            if declared == *entry {
                outln!(
                    "{name} is already declared in {} as the catalogue has it: {} ({}).",
                    path.display(),
                    entry.command_line(),
                    install_state(entry)
                )?;
                return Ok(0);
            }
            let yours = catalogue::declaration_text(&existing, name);
            out!(
                "{}",
                line_diff(
                    &path.display().to_string(),
                    &yours,
                    "the catalogue",
                    &section
                )
            )?;
            if !force {
                anyhow::bail!(
                    "agent add: {} declares {name:?} differently from the catalogue (above: - yours, + the catalogue's) — keep yours, or run 'missionboard agent add {name}{} --force' to replace it with the catalogue's entry",
                    path.display(),
                    if local { " --local" } else { "" }
                );
            }
            (
                replaced(&existing, name, &section, &path)?,
                format!("Replaced {name} in"),
            )
        }
    };
    // The result must still read as a whole file before it replaces the old one.
    crate::agents::parse(&path, &text)?;
    write_file(&dir, &path, &text)?;
    outln!(
        "{} {}: {} ({}).",
        done,
        path.display(),
        entry.command_line(),
        install_state(entry)
    )?;
    Ok(0)
}

/// Whether a catalogue agent's program is here, as `agent add` says it.
fn install_state(agent: &Agent) -> String {
    match installed(agent) {
        (_, _, cell) if agent.command == SELF_COMMAND => cell,
        (true, _, cell) => format!("installed: {cell}"),
        (false, ..) => format!(
            "not installed: {}",
            agent.about.install.as_deref().unwrap_or("install it")
        ),
    }
}

/// `text` with `section` appended after a blank line.
fn appended(mut text: String, section: &str) -> String {
    if !text.is_empty() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
    }
    text.push_str(section);
    text
}

/// `text` with agent `name`'s tables taken out and `section` put where the first of
/// them was; everything else in the file (other agents, comments) as it was.
fn replaced(text: &str, name: &str, section: &str, path: &Path) -> anyhow::Result<String> {
    let runs = catalogue::declaration_lines(text, name);
    let Some(first) = runs.first().map(|r| r.start) else {
        anyhow::bail!(
            "agent add: {} declares {name:?} other than as an [agents.{name}] table, so it cannot be replaced — edit it there",
            path.display()
        );
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if i == first {
            out.extend(section.lines());
        }
        if !runs.iter().any(|r| r.contains(&i)) {
            out.push(line);
        }
    }
    Ok(out.join("\n") + "\n")
}

/// A whole-text line diff of `old` against `new`: every line, prefixed `-` (only in
/// `old`), `+` (only in `new`) or a space (in both), in order.
fn line_diff(old_name: &str, old: &str, new_name: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    // Longest common subsequence, from the ends (declarations are a few dozen lines).
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    let (mut i, mut j) = (0, 0);
    // The file is the operator's, but a terminal is about to read it.
    let mut line = |mark: char, text: &str| {
        out.push_str(&format!("{mark}{}\n", crate::text::sanitize(text)));
    };
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            line(' ', a[i]);
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || common[i + 1][j] >= common[i][j + 1]) {
            line('-', a[i]);
            i += 1;
        } else {
            line('+', b[j]);
            j += 1;
        }
    }
    out
}

fn write_file(dir: &Path, path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".{}.tmp", crate::agents::FILE_NAME));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_diff_keeps_common_lines_and_marks_the_rest() {
        assert_eq!(
            line_diff("mine", "a\nb\nc\n", "theirs", "a\nB\nc\nd\n"),
            "--- mine\n+++ theirs\n a\n-b\n+B\n c\n+d\n"
        );
    }

    #[test]
    fn a_replaced_declaration_takes_the_place_of_the_first_of_its_tables() {
        let text = "# notes\n\n[agents.a]\ncommand = \"old\"\n\n[agents.b]\ncommand = \"y\"\n\n[agents.a.env]\nK = \"v\"\n";
        assert_eq!(
            replaced(text, "a", "[agents.a]\ncommand = \"new\"\n", Path::new("f")).unwrap(),
            "# notes\n\n[agents.a]\ncommand = \"new\"\n\n[agents.b]\ncommand = \"y\"\n\n"
        );
        assert!(
            replaced("agents.a.command = \"x\"\n", "a", "", Path::new("f"))
                .unwrap_err()
                .to_string()
                .contains("cannot be replaced")
        );
    }
}
