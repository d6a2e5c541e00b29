//! `missionboard doctor`: is this machine ready to run missions? The first line is the
//! verdict; each following line names one part and, when it is missing, the fix.

use super::Ctx;
use crate::agents::Registry;
use crate::config::{self, Config};
use crate::envelope::search;
use crate::presets;

pub(super) fn run(ctx: &Ctx) -> anyhow::Result<i32> {
    let mut lines = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    lines.push(format!("Home:      {}", ctx.paths.home.display()));
    if let Some(ws) = &ctx.paths.workspace {
        lines.push(format!("Workspace: {}", ws.display()));
    }

    let store = match ctx.store() {
        Ok(s) => {
            let check = s.integrity_check().unwrap_or_else(|e| e.to_string());
            lines.push(format!(
                "Store:     {} (schema v{}, integrity {check})",
                s.path().display(),
                s.schema_version()?
            ));
            if check != "ok" {
                fixes.push(format!("repair or move aside {}", s.path().display()));
            }
            Some(s)
        }
        Err(e) => {
            lines.push(format!("Store:     {e}"));
            fixes.push("fix the store (see above)".into());
            None
        }
    };

    let envelopes = search::list(&ctx.paths);
    let policies = presets::PRESETS
        .iter()
        .filter(|p| p.kind == presets::Kind::Policy)
        .count();
    let found_presets = presets::PRESETS
        .iter()
        .filter(|p| p.kind == presets::Kind::Policy)
        .filter(|p| envelopes.iter().any(|e| e.file_name == p.file_name))
        .count();
    lines.push(format!(
        "Envelopes: {} on the search path ({found_presets} of {policies} presets)",
        envelopes.len()
    ));
    if envelopes.is_empty() {
        fixes.push("run: missionboard init".into());
    }

    match Registry::load(&ctx.paths) {
        Ok(reg) if reg.files.is_empty() => {
            lines.push("Agents:    none declared".into());
            fixes.push("run: missionboard init".into());
        }
        Ok(reg) => lines.push(format!("Agents:    {}", reg.names().join(", "))),
        Err(e) => {
            lines.push(format!("Agents:    {e}"));
            fixes.push("fix agents.toml (see above)".into());
        }
    }

    if let Some(store) = &store {
        let cfg = Config::new(store.clone());
        let url = cfg.get(config::MODEL_BASE_URL)?.unwrap_or_default();
        let model = cfg.get(config::MODEL_NAME)?;
        lines.push(format!(
            "Model:     {url} — {}",
            match &model {
                Some(m) => format!("model {m}"),
                None => "no model-name set: agent-planner and the oracle need one (missionboard config set model-name <model>); the stub agents need none".into(),
            }
        ));
        let missions = crate::mission::Missions::new(store.clone());
        let asks = crate::asks::Asks::new(store.clone());
        match crate::fleet::sweep::reclaim(&missions, &asks) {
            Ok(0) => {}
            Ok(n) => lines.push(crate::fleet::sweep::count_line(n)),
            Err(e) => lines.push(format!(
                "Missions: the abandoned-mission sweep did not run ({e}) — a mission whose host process is gone may still read as open."
            )),
        }
        let policy = cfg.get(config::DEFAULT_MISSION_POLICY)?;
        lines.push(format!(
            "Defaults:  envelope {}, fleet width {}",
            policy.as_deref().unwrap_or("(none — pass --policy, or missionboard config set default-mission-policy <envelope>)"),
            cfg.fleet_max_parallel()?
        ));
    }
    lines.push(format!(
        "Beta:      {}",
        if ctx.beta { "on" } else { "off" }
    ));

    fixes.dedup();
    if fixes.is_empty() {
        println!("Ready: yes — run: missionboard board");
    } else {
        println!("Ready: no — {}", fixes.join("; "));
    }
    for l in lines {
        println!("{l}");
    }
    Ok(if fixes.is_empty() { 0 } else { 1 })
}
