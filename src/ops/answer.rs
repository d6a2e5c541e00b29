//! Answer: the operator's (or an agent's, the oracle's included) verdict on an ask,
//! recorded once, and the run it unblocks resumed exactly once — by whoever
//! [`leave::who_resumes`] names: its own host while that host lives (it watches the
//! row), else a live `missionboard host` that may run it, else this process's one
//! host ([`Host`]): a long-lived surface's own fleet, so a run resumed here counts
//! in its width and is offered by its quit dialog; for a one-shot command, one fleet
//! started the first time a run must resume here. Also the reconciling sweep that
//! expires overdue asks, and the stranded-run resumption it shares with
//! `missionboard host`.

use crate::asks::bounds::answer_as_agent_within_bounds;
use crate::asks::checkpoint::Checkpoint;
use crate::asks::{OperatorVerdict, Surface};
use crate::fleet::{Fleet, Startable};
use crate::ops::host::Host;
use crate::ops::leave::{self, Resumer};
use crate::store::blocking;

/// Who answers.
pub enum Answerer<'a> {
    Operator(&'a OperatorVerdict),
    /// An agent's words, within the mission envelope's attention bounds.
    Agent {
        name: &'a str,
        text: &'a str,
    },
}

/// An answer on the record, and the run it unblocks if this process must resume it.
pub struct Recorded {
    /// The run's checkpoint as it stood before the answer (`None`: nothing waits).
    parked: Option<Checkpoint>,
    /// The fleet that resumes it here (its host is gone), and what it starts.
    resumer: Option<(Fleet, Startable)>,
}

/// What became of the run after the answer was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Afterwards {
    /// Nothing was parked under the ask: the run waiting on it carries on by itself.
    NothingParked,
    /// Parked, and its host is alive: that host resumes it.
    HostResumes,
    /// Parked with its host gone: resumed here (a one-shot command drives it to
    /// the end of its turn).
    ResumedHere,
    /// Parked with its host gone, and the answer ended it here without a unit (a
    /// compute-bound question answered "stop", or a mission already at rest).
    SettledHere,
}

/// Record an answer and see the run it unblocks resumed: the one path every
/// surface answers through, naming itself (`via`) so the record says who answered.
pub async fn answer(
    host: &Host,
    ask_id: &str,
    who: Answerer<'_>,
    via: Surface,
) -> anyhow::Result<Afterwards> {
    let recorded = {
        let (h, id) = (host.clone(), ask_id.to_string());
        let who = OwnedAnswerer::from(who);
        blocking(move || record(&h, &id, who.borrowed(), &via)).await?
    };
    resume(host, ask_id, recorded).await
}

/// The recording half of [`answer`] (store work: off the async workers), for a
/// surface that shows the answer recorded before the run it unblocks has finished
/// its turn (the board). The answer is recorded exactly once, and never spent on a
/// process that cannot resume the run it unblocks: when the run is parked and
/// [`leave::who_resumes`] says here, the host's fleet must be able to start it
/// first. Refusals keep their type ([`crate::asks::bounds::AgentAnswerError`],
/// [`crate::asks::AskError`]) inside the error.
pub fn record(
    host: &Host,
    ask_id: &str,
    who: Answerer<'_>,
    via: &Surface,
) -> anyhow::Result<Recorded> {
    let asks = host.asks();
    let parked = asks.checkpoint(ask_id)?;
    // A one-shot verdict is never spent on a process that cannot resume the run it
    // unblocks: check the capability first, record second.
    let resumer = match &parked {
        Some(cp) if leave::who_resumes(host, cp) == Resumer::Here => {
            let fleet = host.fleet()?;
            let startable = fleet.can_resume(&cp.mission_id).map_err(|e| {
                anyhow::anyhow!(
                    "ask {ask_id} has a suspended run checkpointed under it, and this process (on {here}) cannot resume it: {e}\nThe verdict was NOT recorded — the ask is still pending. Fix the configuration here (declare the mission's agent in agents.toml, install its command, restore its envelope), or answer from a terminal that can start it (it was parked on machine {there})",
                    here = crate::host::machine_name(),
                    there = cp.host.machine_label(),
                )
            })?;
            Some((fleet, startable))
        }
        _ => None,
    };
    match who {
        Answerer::Operator(OperatorVerdict::ApproveAlways) => {
            crate::ops::allowances::grant(host, ask_id, via)?;
        }
        Answerer::Operator(v) => {
            if matches!(v, OperatorVerdict::Approve) {
                grant_check_tries(host, &asks.require(ask_id)?)?;
            }
            let ask = asks.operator_verdict(ask_id, v, via)?;
            // A refused check pause rests its mission stuck on the failure: here only
            // when no run is parked under the ask, else by whoever claims the run's
            // checkpoint (its live host, or the process that resumes it), so the
            // failure is filed as its blocker exactly once.
            if parked.is_none() {
                crate::fleet::check::rest_on_refused_pause(host.missions(), &ask)?;
            }
        }
        Answerer::Agent { name, text } => {
            answer_as_agent_within_bounds(
                host.paths(),
                &asks,
                host.missions(),
                ask_id,
                name,
                text,
                via,
            )?;
        }
    }
    Ok(Recorded { parked, resumer })
}

/// A mission paused on its check's last failure (`onExhausted: pause_ask`) and
/// approved gets the envelope's `maxChecks` tries again — granted before the
/// approval is recorded, so the unit the approval resumes (at once, on its host)
/// never finishes against the spent tries. The grant sets the bound from the tries
/// made, so a second grant changes nothing; an approval that then loses its race
/// leaves the raised bound on a mission the winning verdict settled.
fn grant_check_tries(host: &Host, ask: &crate::asks::Ask) -> anyhow::Result<()> {
    let (crate::asks::CHECK_TOOL, true, Some(mission_id)) = (
        ask.tool_name.as_str(),
        ask.is_pending(),
        ask.mission_id.as_deref(),
    ) else {
        return Ok(());
    };
    let missions = host.missions();
    if missions.check(mission_id)?.is_none() {
        return Ok(());
    }
    let m = missions.require(mission_id)?;
    let more = crate::envelope::search::load(host.paths(), &m.envelope_name)
        .map(|l| l.declared.compute.effective_max_checks())
        .unwrap_or(crate::envelope::format::DEFAULT_MAX_CHECKS);
    missions.grant_check_tries(mission_id, more)?;
    Ok(())
}

/// Start `oracle` (loaded by [`crate::ops::host::mount_oracle`]) on `host`'s
/// fleet: from now on it reviews the questions of the units held there, and
/// answers through the bounded agent answer of [`record`], naming itself. The run
/// it answers resumes on this host's own drive loop, which holds the unit.
pub fn start_oracle(host: &Host, oracle: crate::oracle::Oracle) -> anyhow::Result<()> {
    let answers = host.clone();
    let path: crate::oracle::AnswerPath =
        std::sync::Arc::new(move |ask_id: &str, name: &str, text: &str| {
            record(
                &answers,
                ask_id,
                Answerer::Agent { name, text },
                &Surface::Oracle,
            )
            .map(|_| ())
        });
    host.hold_oracle(oracle.spawn(host.fleet()?, path)?);
    Ok(())
}

/// The resuming half of [`answer`].
pub async fn resume(host: &Host, ask_id: &str, recorded: Recorded) -> anyhow::Result<Afterwards> {
    let (cp, (fleet, startable)) = match (recorded.parked, recorded.resumer) {
        (None, _) => return Ok(Afterwards::NothingParked),
        (Some(cp), Some(resumer)) => (cp, resumer),
        // The host was alive when we looked. Had it died since, before it could
        // claim the run, the answer would wait for a reconciling read: resume it
        // here now if this process can (the claim keeps it exactly once).
        (Some(cp), None) => {
            let (h, parked) = (host.clone(), cp.clone());
            let capable = blocking(move || -> Option<(Fleet, Startable)> {
                if leave::who_resumes(&h, &parked) != Resumer::Here {
                    return None;
                }
                let fleet = h.fleet().ok()?;
                let startable = fleet.can_resume(&parked.mission_id).ok()?;
                Some((fleet, startable))
            })
            .await;
            match capable {
                Some(resumer) => (cp, resumer),
                None => return Ok(Afterwards::HostResumes),
            }
        }
    };
    if drive_resume(host, &fleet, ask_id, &cp.mission_id, Some(startable)).await? {
        return Ok(Afterwards::ResumedHere);
    }
    let (h, id) = (host.clone(), ask_id.to_string());
    let still_parked = blocking(move || h.asks().checkpoint(&id)).await?.is_some();
    // Still parked: another process holds the claim and resumes it.
    Ok(if still_parked {
        Afterwards::HostResumes
    } else {
        Afterwards::SettledHere
    })
}

/// What [`settle_overdue`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// Asks past their deadline that took their on-timeout verdict.
    pub expired: usize,
    /// Runs whose host is gone, resumed here.
    pub resumed: usize,
    pub failed: usize,
}

/// Which stranded runs a sweep resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stranded {
    /// Every resolved run whose host is gone; one this process cannot start is a
    /// failure to report (`approvals list`).
    All,
    /// Every resolved run whose host is gone and that this process can start,
    /// once its ask has been resolved for a moment: an answer this very process is
    /// resuming through its answer path is left to it (a board sweeping on its
    /// own). So a run whose answer came while its host still looked alive, and
    /// whose host then died, is resumed as soon as the host is known gone.
    Resumable,
    /// Every resolved run whose host is gone and that this process can start, at
    /// once: `missionboard host`, to which the answer path leaves them.
    AsQueueHost,
}

/// How long a resolved ask is left to the process that answered it before a
/// sweep takes its run over (that process claims it within milliseconds).
const LEFT_TO_THE_ANSWERER_MS: i64 = 2_000;

/// The reconciling sweep: every ask past its deadline takes its on-timeout verdict,
/// and the resolved runs `which` names whose host is gone are resumed on `host`.
/// What `approvals list` runs, and a board runs on its own while it is up, so an
/// expiry acts without anyone reading the approvals (a live host settles its own
/// runs as it waits).
pub async fn settle_overdue(host: &Host, which: Stranded) -> anyhow::Result<Settled> {
    let h = host.clone();
    let expired = blocking(move || h.asks().sweep_expired()).await?.len();
    let (resumed, failed) = resume_stranded(host, which).await?;
    Ok(Settled {
        expired,
        resumed,
        failed,
    })
}

/// Resume every answered run whose host is gone that `which` names, one after
/// the other (a one-shot command drives each to the end of its turn). Returns
/// (resumed, failed).
pub async fn resume_stranded(host: &Host, which: Stranded) -> anyhow::Result<(usize, usize)> {
    let h = host.clone();
    let stranded = blocking(move || stranded_runs(&h, which)).await?;
    let (mut resumed, mut failed) = (0, 0);
    for run in stranded {
        let ask = run.ask_id.clone();
        match resume_stranded_run(host, run).await {
            Ok(true) => resumed += 1,
            // Another process claimed it first, or nothing was left to run: not ours.
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(ask = %ask, "resume failed: {e}");
                failed += 1;
            }
        }
    }
    Ok((resumed, failed))
}

/// A run parked under an answered ask whose host is gone, that this process is
/// to resume ([`stranded_runs`], [`resume_stranded_run`]).
pub struct StrandedRun {
    pub ask_id: String,
    pub mission_id: String,
    fleet: Fleet,
    /// What the check that it can start here loaded (`None`: not checked, the
    /// resume reports why it cannot start).
    startable: Option<Startable>,
}

/// The stranded runs `which` names that [`leave::who_resumes`] gives to this
/// process (store work: off the async workers; the fleet starts if there are any).
pub fn stranded_runs(host: &Host, which: Stranded) -> anyhow::Result<Vec<StrandedRun>> {
    let asks = host.asks();
    let mut found = Vec::new();
    for cp in asks.stranded_checkpoints()? {
        let wanted = match which {
            Stranded::All | Stranded::AsQueueHost => true,
            Stranded::Resumable => asks.get(&cp.ask_id)?.is_some_and(|a| {
                a.resolved_at
                    .is_some_and(|at| crate::clock::now_ms() - at >= LEFT_TO_THE_ANSWERER_MS)
            }),
        };
        if wanted && leave::who_resumes(host, &cp) == Resumer::Here {
            found.push(cp);
        }
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let fleet = host.fleet()?;
    let mut out = Vec::new();
    for cp in found {
        let startable = match which {
            Stranded::All => None,
            Stranded::Resumable | Stranded::AsQueueHost => match fleet.can_resume(&cp.mission_id) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::debug!(ask = %cp.ask_id, "stranded run left to a process that can start it: {e}");
                    continue;
                }
            },
        };
        out.push(StrandedRun {
            ask_id: cp.ask_id,
            mission_id: cp.mission_id,
            fleet: fleet.clone(),
            startable,
        });
    }
    Ok(out)
}

/// Resume one stranded run on `host` (see [`drive_resume`]): whether a unit was
/// resumed (`false`: another process claimed it first, or nothing was
/// left to run).
pub async fn resume_stranded_run(host: &Host, run: StrandedRun) -> anyhow::Result<bool> {
    drive_resume(
        host,
        &run.fleet,
        &run.ask_id,
        &run.mission_id,
        run.startable,
    )
    .await
}

/// Resume the run parked on `ask_id` on `fleet` (the host's; `startable`: what the
/// check that it can start loaded). Whether a unit was resumed (`false`: there was
/// nothing to run). A process that hosts units returns once the unit is under way:
/// its fleet carries the turn on, and whoever reads the record may already see the
/// mission at rest, so nothing said about the resume may wait for the turn's end. A
/// one-shot command drives the turn to its end first, its fleet following the bus
/// and reaping the unit for the while.
async fn drive_resume(
    host: &Host,
    fleet: &Fleet,
    ask_id: &str,
    mission_id: &str,
    startable: Option<Startable>,
) -> anyhow::Result<bool> {
    if host.hosting() != crate::ops::host::Hosting::OnNeed {
        return fleet.resume_parked(ask_id, startable).await;
    }
    let teardown = fleet.spawn_teardown();
    let result = fleet.resume_parked(ask_id, startable).await;
    // The turn is driven to its end before the unit is released: released at once,
    // the resumed unit is stopped before its first prompt reaches it.
    if matches!(result, Ok(true)) {
        fleet.wait_unit(mission_id).await;
    }
    // Only this run's unit: the host may be resuming others at the same time.
    fleet.release(mission_id);
    fleet.wait_unit(mission_id).await;
    teardown.abort();
    result
}

/// An [`Answerer`] that can cross to a blocking thread.
enum OwnedAnswerer {
    Operator(crate::asks::OperatorVerdict),
    Agent { name: String, text: String },
}

impl OwnedAnswerer {
    fn from(who: Answerer<'_>) -> OwnedAnswerer {
        match who {
            Answerer::Operator(v) => OwnedAnswerer::Operator(v.clone()),
            Answerer::Agent { name, text } => OwnedAnswerer::Agent {
                name: name.to_string(),
                text: text.to_string(),
            },
        }
    }

    fn borrowed(&self) -> Answerer<'_> {
        match self {
            OwnedAnswerer::Operator(v) => Answerer::Operator(v),
            OwnedAnswerer::Agent { name, text } => Answerer::Agent { name, text },
        }
    }
}
