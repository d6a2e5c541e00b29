//! `missionboard mission fire <agent> <intent…> --queue [--on <label>] [--wait]`:
//! record the mission queued for a `missionboard host` and return with its id; with
//! `--wait`, follow it to its verdict. This process hosts nothing, so leaving it
//! early (a timeout, Ctrl-C) ends only the following, never the mission.

use std::time::Duration;

use super::Ctx;
use super::fire::FireArgs;
use super::mission_cmd::status_line;
use super::out::outln;
use crate::mission::Status;
use crate::mission::hosts::Hosts;
use crate::ops::fire;

/// How often `--wait` re-reads the mission.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

pub(super) fn run(ctx: &Ctx, args: FireArgs) -> anyhow::Result<i32> {
    if args.oracle {
        anyhow::bail!(
            "--oracle cannot ride a queued fire: the oracle lives in the process that hosts the unit, and a queued mission runs on a `missionboard host`"
        );
    }
    let (timeout, store, request) = args.request(ctx)?;
    let run_on = args.run_on(ctx)?;
    let m = fire::enqueue(&ctx.host(&store)?, request, run_on.as_deref())?;
    let (agent, policy, on) = (
        &m.agent_name,
        &m.envelope_name,
        run_on.as_deref().map(str::trim),
    );
    let missions = crate::mission::Missions::new(store.clone());
    let position = missions.queue_positions()?.get(&m.id).copied().unwrap_or(1);
    let (id, intent) = (&m.id, &m.intent);
    let place = match on {
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
        .any(|h| h.width.is_some() && on.is_none_or(|l| h.labels.iter().any(|have| have == l)));
    if !hosts_up {
        outln!(
            "No `missionboard host` that can take it is running on this store: start one with 'missionboard host'{}.",
            on.map(|l| format!(" --label {l}")).unwrap_or_default()
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
        // Said once, even when the mission ran whole between two looks.
        if let Some(h) = m.host.as_ref().filter(|_| !claimed) {
            claimed = true;
            let _ = outln!(
                "Mission {id} was claimed by a host on {}.",
                h.machine_label()
            );
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
