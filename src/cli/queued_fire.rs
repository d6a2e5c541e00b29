//! `missionboard mission fire <agent> <intent…> --queue [--on <label>] [--wait]`:
//! record the mission queued for a `missionboard host` and return with its id; with
//! `--wait`, follow it to its verdict. This process hosts nothing, so leaving it
//! early (a timeout, Ctrl-C) ends only the following, never the mission.

use std::time::Duration;

use super::Ctx;
use super::fire::{FireArgs, envelope_name};
use super::mission_cmd::status_line;
use super::out::outln;
use crate::mission::Status;
use crate::mission::hosts::Hosts;
use crate::mission::queue::NewQueued;
use crate::presets;

/// How often `--wait` re-reads the mission.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

pub(super) fn run(ctx: &Ctx, args: FireArgs) -> anyhow::Result<i32> {
    if args.oracle {
        anyhow::bail!(
            "--oracle cannot ride a queued fire: the oracle lives in the process that hosts the unit, and a queued mission runs on a `missionboard host`"
        );
    }
    let timeout =
        crate::duration::parse(&args.timeout).map_err(|e| anyhow::anyhow!("--timeout: {e}"))?;
    let store = ctx.store()?;
    if let Err(e) = presets::seed_policies_quietly(&ctx.paths.home) {
        tracing::warn!("could not refresh the preset envelopes: {e}");
    }
    let policy = envelope_name(&store, args.policy)?;
    let agent = args.agent.trim().to_string();
    // Refused here, not by a host later: the envelope and the agent must resolve now.
    crate::envelope::search::load(&ctx.paths, &policy).map_err(|e| {
        anyhow::anyhow!("hitl policy {policy:?} could not be loaded: it must name an existing policy (see `missionboard vet --all`) — {e}")
    })?;
    let registry = crate::agents::Registry::load(&ctx.paths)?;
    if registry.get(&agent).is_none() && crate::agents::catalogue::get(&agent).is_none() {
        anyhow::bail!("resolve agent {agent:?}: not found — see 'missionboard agent list'");
    }
    let on = args.on.map(|l| l.trim().to_string());
    if on.as_ref().is_some_and(|l| l.is_empty() || l.contains(char::is_whitespace)) {
        anyhow::bail!("--on: a host label is one word (e.g. gpu, laptop)");
    }
    let missions = crate::mission::Missions::new(store.clone());
    let m = missions.enqueue(NewQueued {
        intent: args.intent.join(" "),
        agent_name: agent.clone(),
        policy_name: policy.clone(),
        cwd: ctx.paths.cwd.display().to_string(),
        worktree: args.worktree,
        run_on: on.clone(),
    })?;
    let position = missions.queue_positions()?.get(&m.id).copied().unwrap_or(1);
    let (id, intent) = (&m.id, &m.intent);
    let place = match &on {
        Some(label) => format!(" for a host labelled {label:?}"),
        None => String::new(),
    };
    outln!(
        "Mission {id} queued at position {position}{place}: agent {agent:?} under envelope {policy:?}."
    )?;
    outln!("Intent: {intent}")?;
    let hosts_up = Hosts::new(store)
        .live()?
        .iter()
        .any(|h| h.width.is_some() && on.as_ref().is_none_or(|l| h.labels.contains(l)));
    if !hosts_up {
        outln!(
            "No `missionboard host` that can take it is running on this store: start one with 'missionboard host'{}.",
            on.as_ref()
                .map(|l| format!(" --label {l}"))
                .unwrap_or_default()
        )?;
    }
    if !args.wait {
        outln!(
            "Follow it with 'missionboard mission show {id}'; stop it before it starts with 'missionboard mission stop {id}'."
        )?;
        return Ok(0);
    }
    outln!(
        "Following it to its verdict (timeout {}; leaving early ends only the following)…",
        crate::duration::format(timeout)
    )?;
    let mut claimed = false;
    let settled = crate::clock::poll_until_blocking(timeout, FOLLOW_EVERY, || {
        let m = match missions.require(id) {
            Ok(m) => m,
            Err(e) => return Some(Err(e)),
        };
        if m.status == Status::Open && !claimed {
            claimed = true;
            let machine = m.host.as_ref().map_or("-", |h| h.machine_label());
            let _ = outln!("Mission {id} was claimed by a host on {machine}.");
        }
        m.status.is_terminal().then_some(Ok(m))
    });
    match settled {
        Some(m) => {
            let m = m?;
            outln!("Mission {id} finished: {}", status_line(&m))?;
            Ok(if m.status == Status::Landed { 0 } else { 1 })
        }
        None => {
            outln!(
                "mission {id} reached no verdict within {}: it stays with its host (or in the queue). Follow it with 'missionboard mission show {id}'.",
                crate::duration::format(timeout)
            )?;
            Ok(1)
        }
    }
}
