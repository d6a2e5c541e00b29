//! `missionboard mission revise <id> "<feedback>" --wait [--timeout 30m]` (hosted
//! here, like a fire) or `--queue [--wait]` (handed to a `missionboard host`): send
//! a rested mission back to its agent with the operator's feedback.

use std::time::Duration;

use super::Ctx;
use super::fire::wait_for_rest;
use super::mission_cmd::status_line;
use super::out::outln;
use crate::ops::host::{Host, Hosting};
use crate::ops::revise::{Revised, revise};
use crate::signals::Signals;

/// How often a queued revise's `--wait` re-reads the mission.
const FOLLOW_EVERY: Duration = Duration::from_millis(200);

pub(super) struct ReviseArgs {
    pub id: String,
    pub feedback: Vec<String>,
    pub wait: bool,
    pub queue: bool,
    pub timeout: String,
}

pub(super) fn run(ctx: &Ctx, args: ReviseArgs) -> anyhow::Result<i32> {
    if !args.wait && !args.queue {
        anyhow::bail!(
            "mission revise requires --wait or --queue: the revised run's unit is a child subprocess of this command and dies when it exits. Pass --wait to host it here until it rests, or --queue to hand it to a `missionboard host`"
        );
    }
    let timeout =
        crate::duration::parse(&args.timeout).map_err(|e| anyhow::anyhow!("--timeout: {e}"))?;
    let store = ctx.required_store()?;
    let feedback = args.feedback.join(" ");
    let runtime = crate::runtime::multi_thread()?;
    runtime.block_on(async move {
        let mut signals = Signals::termination_or_interrupt()?;
        let hosting = if args.queue {
            Hosting::OnNeed
        } else {
            Hosting::Units
        };
        let host = Host::open(&ctx.paths, &store, hosting)?;
        let mut ended = String::from("the revise ended");
        let code =
            revise_and_follow(&host, &mut signals, &args, &feedback, timeout, &mut ended).await;
        host.close(&ended).await;
        code
    })
}

async fn revise_and_follow(
    host: &Host,
    signals: &mut Signals,
    args: &ReviseArgs,
    feedback: &str,
    timeout: Duration,
    ended: &mut String,
) -> anyhow::Result<i32> {
    let revised = tokio::select! {
        r = revise(host, &args.id, feedback, "cli", args.queue) => r.map_err(anyhow::Error::msg)?,
        _ = signals.next() => {
            outln!("mission revise interrupted while the unit was starting: it is torn down with this process.")?;
            *ended = "the revise was interrupted".into();
            return Ok(1);
        }
    };
    outln!("{}", revised.line())?;
    let id = revised.mission().id.clone();
    match &revised {
        Revised::Running { dispatched, .. } => {
            outln!(
                "Mission {id} (instance {}, session {}).",
                dispatched.instance_id,
                dispatched.session_id
            )?;
            if let Some(c) = host.missions().check(&id)? {
                outln!(
                    "Check: `{}` must pass again before it lands ({}).",
                    crate::text::one_line(&c.command),
                    c.state_words()
                )?;
            }
            outln!(
                "Waiting for a terminal status (timeout {}; the unit is a child of this process and is torn down when it exits)…",
                crate::duration::format(timeout)
            )?;
            wait_for_rest(host, signals, &id, timeout, ended).await
        }
        Revised::Queued { .. } => {
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
            let missions = host.missions().clone();
            let settled = crate::clock::poll_until_blocking(timeout, FOLLOW_EVERY, || {
                missions
                    .require(&id)
                    .ok()
                    .filter(|m| m.status.is_terminal())
            });
            match settled {
                Some(m) => {
                    outln!("Mission {id} finished: {}", status_line(&m))?;
                    Ok(if m.status == crate::mission::Status::Landed {
                        0
                    } else {
                        1
                    })
                }
                None => {
                    outln!(
                        "mission {id} did not finish within {}; it stays queued or running on its host — see 'missionboard mission show {id}'.",
                        crate::duration::format(timeout)
                    )?;
                    Ok(1)
                }
            }
        }
    }
}
