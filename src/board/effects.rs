//! The effect runner: turns an `Effect` into service calls on spawned tasks and
//! sends the outcome back as a `Msg`. The UI task never waits on any of it, and
//! store-bound work crosses the blocking boundary ([`crate::store::boundary`]).

use tokio::sync::mpsc::UnboundedSender;

use super::model::{HostedMission, Runs, short};
use super::picker::{self, Resolved};
use super::update::{Effect, Msg};
use crate::asks::OperatorVerdict;
use crate::asks::Surface;
use crate::ops::answer::{self, Afterwards, Answerer};
use crate::ops::host::Host;
use crate::ops::{self, fire};

/// What effects act on: this board's host (its paths, its store, the fleet holding
/// its units, whose `Asks` is the one they wait on so an answer wakes them at once,
/// and the oracle when mounted); the answers and sweeps of this board resume runs
/// on it.
#[derive(Clone)]
pub struct Services {
    pub host: Host,
}

impl Services {
    pub fn new(host: Host) -> Services {
        Services { host }
    }
}

/// Run `effect` in the background; its result arrives on `tx`.
pub fn spawn(effect: Effect, svc: &Services, tx: UnboundedSender<Msg>) {
    let svc = svc.clone();
    match effect {
        Effect::RunMission { args } => {
            tokio::spawn(async move {
                let _ = tx.send(run_mission(&svc, &args).await);
            });
        }
        Effect::Refire { mission_id } => {
            tokio::spawn(async move {
                let _ = tx.send(Msg::Fired(refire(&svc, mission_id).await));
            });
        }
        Effect::Revise {
            mission_id,
            feedback,
        } => {
            tokio::spawn(async move {
                let r =
                    crate::ops::revise::revise(&svc.host, &mission_id, &feedback, "board", false)
                        .await
                        .map(|revised| revised.line());
                let _ = tx.send(Msg::Fired(r));
            });
        }
        Effect::Fire {
            agent,
            envelope,
            intent,
            labels,
            runs,
        } => {
            tokio::spawn(async move {
                let r = Resolved {
                    agent,
                    agent_named: true,
                    envelope,
                    origin: "picked",
                    agent_origin: "picked",
                    intent,
                };
                let fired = match runs {
                    Runs::Here => fire_picked(&svc.host, &r, &labels).await,
                    Runs::Queued(on) => queue_picked(&svc, r, on).await,
                };
                let _ = tx.send(Msg::Fired(fired));
            });
        }
        Effect::FireTemplate { name, pairs, runs } => {
            tokio::spawn(async move {
                let queue = match runs {
                    Runs::Here => None,
                    Runs::Queued(on) => Some(on),
                };
                let fired = ops::schedule::fire_template(&svc.host, &name, pairs, queue)
                    .await
                    .map(|f| {
                        tracing::info!(mission = %f.mission_id, template = %name, "board fired a template");
                        picker::template_confirmation(&name, &f)
                    })
                    .map_err(|e| picker::on_board(format!("{e:#}")));
                let _ = tx.send(Msg::Fired(fired));
            });
        }
        Effect::Verdict { ask_id, verdict } => {
            tokio::spawn(async move { answer_then_resume(svc, ask_id, verdict, tx).await });
        }
        other => {
            tokio::spawn(async move {
                let done = crate::store::blocking(move || execute(other, &svc)).await;
                let _ = tx.send(done);
            });
        }
    }
}

/// `mission diff` for the board: the file summary and the patch, sanitized (the unit
/// wrote every byte of it).
fn load_diff(host: &Host, mission_id: &str) -> Result<crate::board::model::DiffView, String> {
    let m = host
        .missions()
        .require(mission_id)
        .map_err(|e| e.to_string())?;
    let text = |stat| {
        ops::worktree::diff(host, &m, stat)
            .map(|(_, t)| {
                crate::text::sanitize(&t)
                    .lines()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .map_err(|e| e.to_string())
    };
    Ok(crate::board::model::DiffView {
        mission_id: m.id.clone(),
        files: text(true)?,
        lines: text(false)?,
        scroll: 0,
    })
}

/// `mission merge` / `mission discard` from the board: the same verbs and refusals
/// (no worktree, still open, dirty tree, conflict), said in a toast.
fn worktree_effect(host: &Host, mission_id: &str, merge: bool) -> Result<String, String> {
    let m = host
        .missions()
        .require(mission_id)
        .map_err(|e| e.to_string())?;
    if merge {
        // The board never forces a merge past a check: that is the command line's
        // `--force`, recorded.
        let (wt, merged, _) = ops::worktree::merge(host, &m, false).map_err(|e| e.to_string())?;
        Ok(format!("merged {} into {}", wt.branch, merged.into))
    } else {
        let wt = ops::worktree::discard(host, &m).map_err(|e| e.to_string())?;
        Ok(format!("discarded {} and its worktree", wt.branch))
    }
}

/// Mount the oracle on this board's fleet (the same driver `mission fire --oracle`
/// runs), or abort it. Mounting reads files and the store, so it runs with the other
/// blocking effects; the driver is spawned from there onto the board's runtime.
fn toggle_oracle(svc: &Services, mount: bool) -> Result<Option<String>, String> {
    svc.host.unmount_oracle("the board unmounted the oracle");
    if !mount {
        return Ok(None);
    }
    let oracle = ops::host::mount_oracle(svc.host.paths(), svc.host.store())
        .map_err(|e| format!("oracle not mounted: {e}"))?;
    let line = oracle.mount_line();
    answer::start_oracle(&svc.host, oracle).map_err(|e| format!("oracle not mounted: {e}"))?;
    Ok(Some(line))
}

/// The store-bound effects, synchronously: [`spawn`] runs them off the async
/// workers.
fn execute(effect: Effect, svc: &Services) -> Msg {
    match effect {
        Effect::ToggleOracle { mount } => Msg::OracleToggled(toggle_oracle(svc, mount)),
        Effect::Stop { mission_id, reason } => Msg::StopDone(
            stop(svc, &mission_id, &reason)
                .map(|id| format!("mission {} stopped: {}", short(&id), reason.trim())),
        ),
        Effect::LoadHosted => Msg::HostedLoaded(hosted(svc)),
        Effect::StopHosted {
            mission_ids,
            reason,
        } => Msg::HostedStopped(stop_hosted(svc, &mission_ids, &reason)),
        Effect::LoadDiff { mission_id } => Msg::DiffLoaded(load_diff(&svc.host, &mission_id)),
        Effect::Worktree { mission_id, merge } => {
            Msg::WorktreeDone(worktree_effect(&svc.host, &mission_id, merge))
        }
        Effect::Ack { inbox_id } => Msg::AckDone(
            ops::inbox::ack(&svc.host, &inbox_id)
                .map(|i| format!("acknowledged {}", short(&i.id)))
                .map_err(|e| e.to_string()),
        ),
        Effect::AckMany { inbox_ids } => Msg::AckDone(ack_many(&svc.host, &inbox_ids)),
        Effect::Revoke { device } => Msg::RevokeDone(
            ops::devices::revoke(&svc.host, &device)
                .map(|()| {
                    format!(
                        "device {} revoked: its next request is refused",
                        crate::text::one_line(&device)
                    )
                })
                .map_err(|e| crate::text::one_line(&e.to_string())),
        ),
        Effect::RevokeAllowance { id } => Msg::RevokeDone(
            ops::allowances::revoke(&svc.host, &id, &Surface::Board)
                .map(|a| {
                    format!(
                        "allowance {} revoked: {}",
                        short(&a.id),
                        crate::text::one_line(&a.scope)
                    )
                })
                .map_err(|e| crate::text::one_line(&e.to_string())),
        ),
        Effect::LoadPicker => Msg::PickerLoaded(fire::load_picker(&svc.host)),
        Effect::RunMission { .. }
        | Effect::Fire { .. }
        | Effect::FireTemplate { .. }
        | Effect::Refire { .. }
        | Effect::Revise { .. }
        | Effect::Verdict { .. } => Msg::Toast {
            text: "internal: async effect run synchronously".into(),
            error: true,
        },
    }
}

/// `mission stop` for the board: the same verb, with this host's unit of the
/// mission released at once. The stopped mission's id, or why not.
fn stop(svc: &Services, mission_id: &str, reason: &str) -> Result<String, String> {
    ops::stop::stop_here(&svc.host, mission_id, reason)
        .map(|m| m.id)
        .map_err(|e| e.to_string())
}

/// The open missions whose units this board holds, oldest first. A mission the
/// store cannot be asked about is still listed: its unit is here all the same.
fn hosted(svc: &Services) -> Vec<HostedMission> {
    let missions = svc.host.missions();
    let mut found: Vec<(i64, HostedMission)> = svc
        .host
        .hosted_missions()
        .into_iter()
        .filter_map(|id| match missions.get(&id) {
            Ok(Some(m)) if m.status.is_terminal() => None,
            Ok(Some(m)) => Some((
                m.created_at,
                HostedMission {
                    intent: crate::text::one_line(&m.intent),
                    id,
                },
            )),
            Ok(None) | Err(_) => Some((
                i64::MAX,
                HostedMission {
                    id,
                    intent: String::new(),
                },
            )),
        })
        .collect();
    found.sort_by(|a, b| (a.0, &a.1.id).cmp(&(b.0, &b.1.id)));
    found.into_iter().map(|(_, h)| h).collect()
}

/// Stop every mission in `ids` as `mission stop` would, before the board quits.
/// One that came to rest meanwhile needs no stop; any other refusal is said.
fn stop_hosted(svc: &Services, ids: &[String], reason: &str) -> Result<String, String> {
    let how = ops::leave::Departure::Stop {
        reason: reason.to_string(),
    };
    let done = ops::leave::leave(&svc.host, ids, &how, |_, _| Ok(()));
    if done.failed.is_empty() {
        Ok(format!(
            "stopped {} mission(s) hosted here: {}",
            done.stopped,
            reason.trim()
        ))
    } else {
        let failed: Vec<String> = done
            .failed
            .iter()
            .map(|(id, e)| format!("{}: {e}", short(id)))
            .collect();
        Err(format!(
            "could not stop every mission hosted here ({}); the board stays open",
            failed.join("; ")
        ))
    }
}

/// Acknowledge each item through the verb `inbox ack` uses; one that fails (acked
/// elsewhere meanwhile, say) does not stop the rest, and the toast says so.
fn ack_many(host: &Host, ids: &[String]) -> Result<String, String> {
    let (done, failed) = ops::inbox::ack_many(host, ids);
    if failed.is_empty() {
        Ok(format!("acknowledged {done} inbox item(s)"))
    } else {
        let failed: Vec<String> = failed
            .iter()
            .map(|(id, e)| format!("{}: {e}", short(id)))
            .collect();
        Err(format!(
            "acknowledged {done} of {} inbox item(s); {}",
            ids.len(),
            failed.join("; ")
        ))
    }
}

/// Fire a mission like `mission_id` again.
async fn refire(svc: &Services, mission_id: String) -> Result<String, String> {
    let (m, d) = fire::refire(&svc.host, &mission_id).await?;
    tracing::info!(mission = %d.mission_id, from = %m.id, "board re-fired a mission");
    Ok(format!(
        "re-fired mission {} as {}: {}",
        short(&m.id),
        short(&d.mission_id),
        crate::text::one_line(&m.intent)
    ))
}

/// How often a board reconciles overdue asks on its own.
const SETTLE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// While the board is up, asks past their deadline take their on-timeout verdict
/// and resolved runs whose host is gone (expired, or answered while their host
/// still looked alive) are resumed here, with nobody reading the approvals; what it
/// resumed is a notice in the status line.
pub fn spawn_settler(svc: &Services, tx: UnboundedSender<Msg>) -> tokio::task::JoinHandle<()> {
    let svc = svc.clone();
    tokio::spawn(async move {
        loop {
            match answer::settle_overdue(&svc.host, answer::Stranded::Resumable).await {
                Ok(s) => {
                    if s.resumed > 0 {
                        let text = format!(
                            "resumed {} stranded run(s) (their host was gone) in this board",
                            s.resumed
                        );
                        let _ = tx.send(Msg::Toast { text, error: false });
                    }
                    if s.failed > 0 {
                        let text = format!(
                            "{} resume(s) of stranded runs failed; 'missionboard approvals list' retries them",
                            s.failed
                        );
                        let _ = tx.send(Msg::Toast { text, error: true });
                    }
                }
                Err(e) => tracing::warn!("board: overdue-ask sweep failed: {e:#}"),
            }
            tokio::time::sleep(SETTLE_EVERY).await;
        }
    })
}

/// Record the operator's verdict through the one answer path every surface uses
/// (`approvals respond` too), then resume the run it unblocks: the pane hears
/// "recorded" as soon as the verdict is durable, and the resume (a run parked under
/// the ask whose host is gone resumes in the board's process, to the end of its
/// turn) goes on in the background, its outcome a notice in the status line.
async fn answer_then_resume(
    svc: Services,
    ask_id: String,
    verdict: OperatorVerdict,
    tx: UnboundedSender<Msg>,
) {
    let (s, id, v) = (svc.clone(), ask_id.clone(), verdict.clone());
    let recorded = crate::store::blocking(move || record(&s, &id, &v)).await;
    let recorded = match recorded {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Msg::VerdictDone {
                ask_id,
                result: Err(e),
            });
            return;
        }
    };
    let _ = tx.send(Msg::VerdictDone {
        ask_id: ask_id.clone(),
        result: Ok(recorded_text(&ask_id, &verdict)),
    });
    let after = answer::resume(&svc.host, &ask_id, recorded).await;
    if let Some((text, error)) = resumed_notice(&ask_id, after) {
        let _ = tx.send(Msg::Toast { text, error });
    }
}

/// The recording half, with this board's ask service (so a waiter in this
/// process is woken at once).
fn record(
    svc: &Services,
    ask_id: &str,
    verdict: &OperatorVerdict,
) -> Result<answer::Recorded, String> {
    answer::record(
        &svc.host,
        ask_id,
        Answerer::Operator(verdict),
        &Surface::Board,
    )
    .map_err(|e| format!("{e:#}"))
}

fn recorded_text(ask_id: &str, verdict: &OperatorVerdict) -> String {
    let id = short(ask_id);
    match verdict {
        OperatorVerdict::Approve => format!("approved ask {id}"),
        OperatorVerdict::ApproveAlways => {
            format!("approved ask {id} and allowed it always in its mission")
        }
        OperatorVerdict::Deny => format!("denied ask {id}"),
        OperatorVerdict::Answer(_) | OperatorVerdict::Fields(_) => {
            format!("answer recorded for ask {id}")
        }
    }
}

/// What the status line says of the resume, when there is anything to say
/// (`true`: an error).
fn resumed_notice(ask_id: &str, after: anyhow::Result<Afterwards>) -> Option<(String, bool)> {
    let id = short(ask_id);
    match after {
        Ok(Afterwards::NothingParked | Afterwards::HostResumes) => None,
        Ok(Afterwards::ResumedHere) => Some((
            format!("ask {id}: its run's host was gone, so this board resumed it"),
            false,
        )),
        Ok(Afterwards::SettledHere) => Some((
            format!("ask {id}: its run's host was gone and nothing was left to run: settled here"),
            false,
        )),
        Err(e) => Some((
            format!("ask {id}: the answer is recorded, but resuming its run failed: {e:#}"),
            true,
        )),
    }
}

async fn run_mission(svc: &Services, args: &str) -> Msg {
    let from = fire::LineFrom {
        envelope_pick: None,
        parent_session: None,
    };
    match fire::mission_line(&svc.host, args, from).await {
        Ok(fire::LineOutcome::List(data)) => Msg::OpenPicker(data),
        Ok(fire::LineOutcome::Fired {
            resolved,
            labels,
            dispatched,
        }) => {
            tracing::info!(mission = %dispatched.mission_id, agent = %resolved.agent, envelope = %resolved.envelope, "board fired a mission");
            Msg::Fired(Ok(picker::confirmation(
                &resolved,
                &labels,
                &dispatched.mission_id,
            )))
        }
        Err(e) => Msg::Fired(Err(picker::on_board(e))),
    }
}

/// Dispatch what the picker chose; a refusal's text is shown verbatim.
async fn fire_picked(host: &Host, r: &Resolved, labels: &[String]) -> Result<String, String> {
    let d = fire::dispatch(host, fire::Fire::resolved(r))
        .await
        .map_err(|e| format!("{e:#}"))?;
    tracing::info!(mission = %d.mission_id, agent = %r.agent, envelope = %r.envelope, "board fired a mission");
    Ok(picker::confirmation(r, labels, &d.mission_id))
}

/// Queue what the picker chose for a `missionboard host` (`mission fire --queue`,
/// with `on` as `--on`); a refusal's text is shown verbatim.
async fn queue_picked(svc: &Services, r: Resolved, on: Option<String>) -> Result<String, String> {
    let host = svc.host.clone();
    crate::store::blocking(move || {
        let store = host.store().clone();
        let m = fire::enqueue(&host, fire::Fire::resolved(&r), on.as_deref())
            .map_err(|e| format!("{e:#}"))?;
        tracing::info!(mission = %m.id, agent = %r.agent, envelope = %r.envelope, "board queued a mission");
        let missions = crate::mission::Missions::new(store.clone());
        let position = missions
            .queue_positions()
            .map_err(|e| e.to_string())?
            .get(&m.id)
            .copied()
            .unwrap_or(1);
        let host_up = crate::mission::hosts::Hosts::new(store)
            .queue_host_lives(on.as_deref())
            .unwrap_or(false);
        Ok(picker::queued_confirmation(
            &r,
            &m.id,
            position,
            on.as_deref(),
            host_up,
        ))
    })
    .await
}

#[cfg(test)]
mod tests {
    use crate::ops::fire::envelope_entry;

    fn labels(file_name: &str) -> Vec<(&'static str, &'static str)> {
        let preset = crate::presets::get(file_name).expect("a preset");
        envelope_entry(file_name, preset.bytes).sandbox
    }

    #[test]
    fn the_picker_labels_the_sandbox_limits_an_envelope_sets_and_only_those() {
        let kernel = |key: &str, got: &[(&str, &str)]| {
            got.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, label)| label.to_string())
        };
        let strict = labels("hitl-policy-strict.json");
        for key in ["filesystem.write", "filesystem.read", "network.connect"] {
            let label = kernel(key, &strict).unwrap_or_else(|| panic!("{key}: {strict:?}"));
            assert!(
                label == "enforced (kernel)" || label == "declared, not enforced",
                "{key}: {label}"
            );
        }
        let default = labels("hitl-policy-default.json");
        assert!(
            kernel("filesystem.write", &default).is_some(),
            "{default:?}"
        );
        assert_eq!(kernel("filesystem.read", &default), None, "reads are open");
        assert_eq!(
            kernel("network.connect", &default),
            None,
            "connects are open"
        );
    }
}
