//! `missionboard agent list`.

use super::Ctx;
use super::out::{self, out, outln};
use crate::agents::Registry;
use crate::row;

pub(super) fn list(ctx: &Ctx, json: bool) -> anyhow::Result<i32> {
    let reg = Registry::load(&ctx.paths)?;
    if json {
        // Declared `env` values stay out: they are where API keys live.
        let agents: Vec<_> = reg
            .all()
            .map(|a| {
                serde_json::json!({
                    "name": a.name,
                    "command": a.command,
                    "args": a.args,
                    "description": a.description,
                    "source": a.source.display().to_string(),
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
        return Ok(0);
    }
    let mut rows = vec![row!["NAME", "COMMAND", "DESCRIPTION"]];
    for a in reg.all() {
        rows.push(row![a.name, a.command_line(), a.description]);
    }
    out!("{}", crate::table::render(&rows))?;
    Ok(0)
}
