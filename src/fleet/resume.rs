//! Answering an ask whose run is parked. The answer is recorded exactly once; the
//! run resumes exactly once: by its own host while that host lives (it watches the
//! row), else here, in the process that recorded the answer.

use crate::asks::bounds::answer_as_agent_within_bounds;
use crate::asks::checkpoint::Checkpoint;
use crate::asks::{Asks, OperatorVerdict};
use crate::fleet::Fleet;
use crate::mission::Missions;
use crate::paths::Paths;
use crate::store::{Store, blocking_in_place};

/// Who answers.
pub enum Answerer<'a> {
    Operator(&'a OperatorVerdict),
    /// An agent's words, within the mission envelope's attention bounds.
    Agent {
        name: &'a str,
        text: &'a str,
    },
}

/// What became of the run after the answer was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Afterwards {
    /// Nothing was parked under the ask: the run waiting on it carries on by itself.
    NothingParked,
    /// Parked, and its host is alive: that host resumes it.
    HostResumes,
    /// Parked with its host gone: resumed here, and driven to the end of its turn.
    ResumedHere,
    /// Parked with its host gone, and the answer ended it here without a unit (a
    /// compute-bound question answered "stop", or a mission already at rest).
    SettledHere,
}

/// An answer on the record, and the run it unblocks if this process must resume it.
pub struct Recorded {
    /// The run's checkpoint as it stood before the answer (`None`: nothing waits).
    parked: Option<Checkpoint>,
    /// The fleet that resumes it here: its host is gone.
    resumer: Option<Fleet>,
}

/// Record an answer and see the run it unblocks resumed: the one path every
/// surface answers through.
pub async fn answer(
    paths: &Paths,
    store: &Store,
    ask_id: &str,
    who: Answerer<'_>,
) -> anyhow::Result<Afterwards> {
    // Synchronous store work (and, with the host gone, a fleet's boot sweeps):
    // in place, the worker's other tasks handed off first.
    let recorded = blocking_in_place(|| record(paths, &Asks::new(store.clone()), ask_id, who))?;
    resume(paths, store, ask_id, recorded).await
}

/// The recording half of [`answer`], for a surface that cannot wait on a resume
/// (the oracle answers from inside the host that holds the unit, so the run it
/// unblocks is never stranded by it). `asks` is the caller's ask service, so a
/// waiter in this process is woken at once. Refusals keep their type
/// ([`crate::asks::bounds::AgentAnswerError`], [`crate::asks::AskError`]) inside the error.
pub fn record(
    paths: &Paths,
    asks: &Asks,
    ask_id: &str,
    who: Answerer<'_>,
) -> anyhow::Result<Recorded> {
    let store = &asks.store;
    let missions = Missions::new(store.clone());
    let parked = asks.checkpoint(ask_id)?;
    // A one-shot verdict is never spent on a process that cannot resume the run it
    // unblocks: check the capability first, record second.
    let resumer = match &parked {
        Some(cp) if !asks.host_lives(cp) && !a_queue_host_resumes(store, cp) => {
            let fleet = Fleet::new(paths.clone(), store.clone())?;
            if let Err(e) = fleet.can_resume(&cp.mission_id) {
                anyhow::bail!(
                    "ask {ask_id} has a suspended run checkpointed under it, and this process (on {here}) cannot resume it: {e}\nThe verdict was NOT recorded — the ask is still pending. Fix the configuration here (declare the mission's agent in agents.toml, install its command, restore its envelope), or answer from a terminal that can start it (it was parked on machine {there})",
                    here = crate::host::machine_name(),
                    there = cp.host.machine_label(),
                );
            }
            Some(fleet)
        }
        _ => None,
    };
    match who {
        Answerer::Operator(v) => {
            asks.operator_verdict(ask_id, v)?;
        }
        Answerer::Agent { name, text } => {
            answer_as_agent_within_bounds(paths, asks, &missions, ask_id, name, text)?;
        }
    }
    Ok(Recorded { parked, resumer })
}

/// The resuming half of [`answer`], for a surface that shows the answer recorded
/// before the run it unblocks has finished its turn (the board).
pub async fn resume(
    paths: &Paths,
    store: &Store,
    ask_id: &str,
    recorded: Recorded,
) -> anyhow::Result<Afterwards> {
    let (cp, fleet) = match (recorded.parked, recorded.resumer) {
        (None, _) => return Ok(Afterwards::NothingParked),
        (Some(cp), Some(fleet)) => (cp, fleet),
        // The host was alive when we looked. Had it died since, before it could
        // claim the run, the answer would wait for a reconciling read: resume it
        // here now if this process can (the claim keeps it exactly once).
        (Some(cp), None)
            if !blocking_in_place(|| {
                Asks::new(store.clone()).host_lives(&cp) || a_queue_host_resumes(store, &cp)
            }) =>
        {
            let capable = blocking_in_place(|| {
                let fleet = Fleet::new(paths.clone(), store.clone())?;
                fleet.can_resume(&cp.mission_id).map(|_| fleet)
            });
            match capable {
                Ok(fleet) => (cp, fleet),
                Err(_) => return Ok(Afterwards::HostResumes),
            }
        }
        (Some(_), None) => return Ok(Afterwards::HostResumes),
    };
    Ok(if drive_resume(&fleet, ask_id, &cp.mission_id).await? {
        Afterwards::ResumedHere
    } else if blocking_in_place(|| Asks::new(store.clone()).checkpoint(ask_id))?.is_some() {
        // Another process holds the claim and resumes it.
        Afterwards::HostResumes
    } else {
        Afterwards::SettledHere
    })
}

/// With its own host gone, is a live `missionboard host` there to resume the run
/// (one that may run the mission)? Then it does, not the answering process.
fn a_queue_host_resumes(store: &Store, cp: &Checkpoint) -> bool {
    let label = Missions::new(store.clone())
        .run_on(&cp.mission_id)
        .unwrap_or(None);
    crate::mission::hosts::Hosts::new(store.clone())
        .queue_host_lives(label.as_deref())
        .unwrap_or(false)
}

/// What [`settle_overdue`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// Asks past their deadline that took their on-timeout verdict.
    pub expired: usize,
    /// Runs whose host is gone, resumed (and driven to the end of their turn) here.
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
    /// resuming through its answer path is left to it (a board, or a host, sweeping
    /// on its own). So a run whose answer came while its host still looked alive,
    /// and whose host then died, is resumed as soon as the host is known gone.
    Resumable,
}

/// How long a resolved ask is left to the process that answered it before a
/// sweep takes its run over (that process claims it within milliseconds).
const LEFT_TO_THE_ANSWERER_MS: i64 = 2_000;

/// The reconciling sweep: every ask past its deadline takes its on-timeout verdict,
/// and the resolved runs `which` names whose host is gone are resumed here. What
/// `approvals list` runs, and a board runs on its own while it is up, so an expiry
/// acts without anyone reading the approvals (a live host settles its own runs as
/// it waits).
pub async fn settle_overdue(
    paths: &Paths,
    store: &Store,
    which: Stranded,
) -> anyhow::Result<Settled> {
    let asks = Asks::new(store.clone());
    let expired = blocking_in_place(|| asks.sweep_expired())?.len();
    let (resumed, failed) = resume_stranded(paths, store, which).await?;
    Ok(Settled {
        expired,
        resumed,
        failed,
    })
}

/// Resume every answered run whose host is gone. Returns (resumed, failed).
async fn resume_stranded(
    paths: &Paths,
    store: &Store,
    which: Stranded,
) -> anyhow::Result<(usize, usize)> {
    let asks = Asks::new(store.clone());
    let stranded: Vec<_> = blocking_in_place(|| -> anyhow::Result<Vec<_>> {
        let mut out = Vec::new();
        for cp in asks.stranded_checkpoints()? {
            let wanted = match which {
                Stranded::All => true,
                Stranded::Resumable => asks.get(&cp.ask_id)?.is_some_and(|a| {
                    a.resolved_at
                        .is_some_and(|at| crate::clock::now_ms() - at >= LEFT_TO_THE_ANSWERER_MS)
                }),
            };
            if wanted && !asks.host_lives(&cp) {
                out.push(cp);
            }
        }
        Ok(out)
    })?;
    if stranded.is_empty() {
        return Ok((0, 0));
    }
    let fleet = Fleet::new(paths.clone(), store.clone())?;
    let (mut resumed, mut failed) = (0, 0);
    for cp in stranded {
        let (probe, mission) = (fleet.clone(), cp.mission_id.clone());
        if which == Stranded::Resumable
            && let Err(e) = crate::store::blocking(move || probe.can_resume(&mission)).await
        {
            tracing::debug!(ask = %cp.ask_id, "stranded run left to a process that can start it: {e}");
            continue;
        }
        match drive_resume(&fleet, &cp.ask_id, &cp.mission_id).await {
            Ok(true) => resumed += 1,
            // Another process claimed it first, or nothing was left to run: not ours.
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(ask = %cp.ask_id, "resume failed: {e}");
                failed += 1;
            }
        }
    }
    Ok((resumed, failed))
}

/// Whether a unit was resumed (`false`: there was nothing to run).
async fn drive_resume(fleet: &Fleet, ask_id: &str, mission_id: &str) -> anyhow::Result<bool> {
    let teardown = fleet.spawn_teardown();
    let result = fleet.resume_parked(ask_id).await;
    if matches!(result, Ok(true)) {
        fleet.wait_unit(mission_id).await;
    }
    fleet.shutdown().await;
    teardown.abort();
    result
}
