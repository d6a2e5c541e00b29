//! `missionboard agent list [--available]`, `agent add <name>`, `agent install <name>`
//! and `agent registry refresh`.

use std::path::Path;

use super::Ctx;
use super::out::{self, out, outln};
use crate::agents::acp_registry::{self, Install};
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
    let (name, section, entry) = match catalogue::section(name) {
        Some(section) => (
            name.to_string(),
            section,
            catalogue::get(name)
                .expect("a section has an entry")
                .clone(),
        ),
        None => from_registry(ctx, name)?,
    };
    let (name, entry) = (name.as_str(), &entry);
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

/// An ACP registry entry as `agent add` declares it: the name it is declared under
/// (the catalogue's, where the catalogue knows the agent), its section, its entry.
fn from_registry(ctx: &Ctx, id: &str) -> anyhow::Result<(String, String, Agent)> {
    let index = acp_registry::load(&ctx.paths.home)?;
    let Some(found) = index.get(id) else {
        anyhow::bail!(
            "agent add: {id:?} is neither in the catalogue ({}) nor in the ACP registry's index ({}; 'missionboard agent list --available' lists its agents) — declare any other ACP agent under [agents.<name>] in agents.toml",
            catalogue::names().join(", "),
            index.source
        );
    };
    let Some(section) = found.declaration(id) else {
        anyhow::bail!(
            "agent add: {id:?} is distributed only as binaries for {} — none for this machine ({}); declare it by hand under [agents.{id}] in agents.toml",
            found
                .distribution
                .binary
                .as_ref()
                .map(|b| b.keys().cloned().collect::<Vec<_>>().join(", "))
                .unwrap_or_default(),
            acp_registry::platform()
        );
    };
    let mut agents = crate::agents::parse(Path::new(catalogue::SOURCE), &section)?;
    let entry = agents.remove(0);
    if let Some(known) = found.catalogue_entry() {
        outln!(
            "{id} is the catalogue's {}: declared as the catalogue has it (the flags that make it ask, its state dirs, its endpoints).",
            known.name
        )?;
    }
    Ok((entry.name.clone(), section, entry))
}

/// `agent list --available`: every agent of the ACP registry's index.
pub(super) fn available(ctx: &Ctx, json: bool) -> anyhow::Result<i32> {
    let index = acp_registry::load(&ctx.paths.home)?;
    let declared = Registry::load(&ctx.paths)?;
    let rows_of = |e: &acp_registry::Entry| {
        let install = e.install();
        let kind = install.as_ref().map_or_else(
            || format!("binary (none for {})", acp_registry::platform()),
            |i| match i {
                Install::Npm { package, .. } => format!("npx {package}"),
                Install::Uv { package, .. } => format!("uvx {package}"),
                Install::Archive { sha256, .. } => format!(
                    "binary {}{}",
                    acp_registry::platform(),
                    if sha256.is_some() { " (sha256)" } else { "" }
                ),
            },
        );
        let known = e.catalogue_entry().map(|c| c.name.clone());
        let name = known.clone().unwrap_or_else(|| e.id.clone());
        let is_declared = declared
            .get(&name)
            .is_some_and(|a| a.about.registry.as_deref() == Some(e.id.as_str()) || known.is_some());
        (kind, known, is_declared)
    };
    if json {
        let items: Vec<_> = index
            .entries
            .iter()
            .map(|e| {
                let (kind, known, is_declared) = rows_of(e);
                serde_json::json!({
                    "id": e.id,
                    "name": e.name,
                    "version": e.version,
                    "description": e.description,
                    "distribution": kind,
                    "catalogue": known,
                    "declared": is_declared,
                })
            })
            .collect();
        out::json(&serde_json::json!({"source": index.source, "agents": items}))?;
        return Ok(0);
    }
    let mut rows = vec![row![
        "ID",
        "VERSION",
        "DISTRIBUTION",
        "CATALOGUE",
        "DECLARED",
        "NAME"
    ]];
    for e in &index.entries {
        let (kind, known, is_declared) = rows_of(e);
        rows.push(row![
            e.id,
            e.version,
            kind,
            known.unwrap_or_else(|| "—".into()),
            if is_declared { "yes" } else { "no" },
            e.name
        ]);
    }
    out!("{}", crate::table::render(&rows))?;
    outln!(
        "From {}. 'missionboard agent add <id>' declares one; 'missionboard agent registry refresh' fetches a newer index.",
        index.source
    )?;
    Ok(0)
}

/// `agent registry refresh [--from URL|FILE]`: the index into the home, checked first.
pub(super) fn refresh(ctx: &Ctx, from: Option<&str>) -> anyhow::Result<i32> {
    let from = from.unwrap_or(acp_registry::DEFAULT_URL);
    let text = if from.starts_with("https://") || from.starts_with("http://") {
        fetch_text(from)?
    } else {
        std::fs::read_to_string(from)
            .map_err(|e| anyhow::anyhow!("agent registry refresh: cannot read {from}: {e}"))?
    };
    let index = acp_registry::parse(&text, from)?;
    let home = &ctx.paths.home;
    std::fs::create_dir_all(home)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", home.display()))?;
    let path = home.join(acp_registry::FILE_NAME);
    let tmp = home.join(format!(".{}.tmp", acp_registry::FILE_NAME));
    std::fs::write(&tmp, &text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    outln!(
        "Refreshed the ACP registry's index from {from}: {} agents, in {} (read before the shipped snapshot).",
        index.entries.len(),
        path.display()
    )?;
    Ok(0)
}

/// How long a download may take.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// The bytes at `url`: `http(s)://`, or a `file://` path (a mirror on disk).
fn fetch_bytes(url: &str) -> anyhow::Result<Vec<u8>> {
    if let Some(path) = url.strip_prefix("file://") {
        return std::fs::read(path).map_err(|e| anyhow::anyhow!("cannot read {path}: {e}"));
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = crate::runtime::multi_thread()?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .map_err(|e| anyhow::anyhow!("cannot build an HTTP client: {e}"))?;
        let response = client
            .get(url)
            .send()
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| anyhow::anyhow!("cannot fetch {url}: {e} — is it reachable from here?"))?;
        Ok(response
            .bytes()
            .await
            .map_err(|e| anyhow::anyhow!("cannot read {url}: {e}"))?
            .to_vec())
    })
}

fn fetch_text(url: &str) -> anyhow::Result<String> {
    String::from_utf8(fetch_bytes(url)?)
        .map_err(|_| anyhow::anyhow!("{url} did not answer with text"))
}

/// `agent install <name>`: a declared registry agent's install step.
pub(super) fn install(ctx: &Ctx, name: &str) -> anyhow::Result<i32> {
    let reg = Registry::load(&ctx.paths)?;
    let agent = reg.get(name).or_else(|| catalogue::get(name)).ok_or_else(|| {
        anyhow::anyhow!(
            "agent install: no agent {name:?} is declared — 'missionboard agent add {name}' first"
        )
    })?;
    let index = acp_registry::load(&ctx.paths.home)?;
    let entry = agent.about.registry.as_deref().and_then(|id| index.get(id));
    let Some(install) = entry.and_then(|e| {
        if e.catalogue_entry().is_some() {
            None
        } else {
            e.install()
        }
    }) else {
        let line = agent
            .about
            .install
            .as_deref()
            .unwrap_or("install it the way its documentation says");
        anyhow::bail!("agent install: {name:?} is not installed by missionboard — run: {line}");
    };
    let id = entry.map(|e| e.id.clone()).unwrap_or_default();
    match &install {
        Install::Npm { package, .. } => run_step(&["npm", "install", "-g", package])?,
        Install::Uv { package, .. } => run_step(&["uv", "tool", "install", package])?,
        Install::Archive {
            url,
            sha256,
            dir,
            program,
        } => {
            let bytes = fetch_bytes(url)?;
            let got = crate::presets::sha256(&bytes);
            match sha256 {
                Some(want) if !want.eq_ignore_ascii_case(&got) => anyhow::bail!(
                    "agent install: {url} has sha256 {got}, but the registry says {want} — nothing was installed; refresh the index ('missionboard agent registry refresh') or report it to the agent's publisher"
                ),
                Some(_) => outln!("sha256 {got}: as the registry says.")?,
                None => outln!("sha256 {got} (the registry gives none to check it against).")?,
            }
            unpack(url, &bytes, dir)?;
            if !program.is_file() {
                anyhow::bail!(
                    "agent install: {url} holds no {} — nothing to run",
                    program.display()
                );
            }
        }
    }
    outln!(
        "Installed {name} ({}: {}).",
        install.kind(),
        install.line(&id)
    )?;
    Ok(0)
}

fn run_step(argv: &[&str]) -> anyhow::Result<()> {
    outln!("Running: {}", argv.join(" "))?;
    let status = std::process::Command::new(argv[0])
        .args(&argv[1..])
        .status()
        .map_err(|e| {
            anyhow::anyhow!(
                "agent install: {} did not start ({e}) — install it first",
                argv[0]
            )
        })?;
    if !status.success() {
        anyhow::bail!("agent install: {} failed ({status})", argv.join(" "));
    }
    Ok(())
}

/// Unpack an archive (`.tar.gz`, `.tgz`, `.zip`) into `dir`, with the system's tar/unzip.
fn unpack(url: &str, bytes: &[u8], dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let file = dir.join(".archive");
    std::fs::write(&file, bytes)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
    let (program, args): (&str, Vec<String>) = if url.ends_with(".zip") {
        (
            "unzip",
            vec![
                "-o".into(),
                "-q".into(),
                file.display().to_string(),
                "-d".into(),
                dir.display().to_string(),
            ],
        )
    } else {
        (
            "tar",
            vec![
                "-xzf".into(),
                file.display().to_string(),
                "-C".into(),
                dir.display().to_string(),
            ],
        )
    };
    let status = std::process::Command::new(program)
        .args(&args)
        .status()
        .map_err(|e| anyhow::anyhow!("cannot unpack with {program}: {e}"))?;
    let _ = std::fs::remove_file(&file);
    if !status.success() {
        anyhow::bail!("cannot unpack {url} with {program} ({status})");
    }
    Ok(())
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
