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

/// `agent add <name> [--local]`: append the catalogue's entry to agents.toml (home,
/// or the workspace's with `--local`). An entry already declared there is kept.
pub(super) fn add(ctx: &Ctx, name: &str, local: bool) -> anyhow::Result<i32> {
    let Some(section) = catalogue::section(name) else {
        anyhow::bail!(
            "agent add: {name:?} is not in the catalogue — it has: {} (declare any other ACP agent under [agents.<name>] in agents.toml)",
            catalogue::names().join(", ")
        );
    };
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
    if crate::agents::parse(&path, &existing)?
        .iter()
        .any(|a| a.name == name)
    {
        anyhow::bail!(
            "agent add: {} already declares {name:?} — edit it there, or remove it and add it again",
            path.display()
        );
    }
    let mut text = existing;
    if !text.is_empty() {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
    }
    text.push_str(&section);
    // The result must still read as a whole file before it replaces the old one.
    crate::agents::parse(&path, &text)?;
    write_file(&dir, &path, &text)?;
    let agent = catalogue::get(name).expect("a section has an entry");
    let state = match installed(agent) {
        (_, _, cell) if agent.command == SELF_COMMAND => cell,
        (true, _, cell) => format!("installed: {cell}"),
        (false, ..) => format!(
            "not installed: {}",
            agent.about.install.as_deref().unwrap_or("install it")
        ),
    };
    outln!(
        "Added {name} to {}: {} ({state}).",
        path.display(),
        agent.command_line()
    )?;
    Ok(0)
}

fn write_file(dir: &Path, path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".{}.tmp", crate::agents::FILE_NAME));
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}
