//! Answer: the operator's (or an agent's) verdict on an ask, recorded once, and the
//! run it unblocks resumed exactly once — by its own host while that host lives (it
//! watches the row), else on this process's one host ([`Host`]): a long-lived
//! surface's own fleet, so a run resumed here counts in its width and is offered
//! by its quit dialog; for a one-shot command, one fleet started the first time a
//! run must resume here. Also the reconciling sweep that expires overdue asks and
//! resumes runs whose host is gone.

use std::sync::{Arc, OnceLock};

use crate::asks::Asks;
pub use crate::asks::Surface;
pub use crate::fleet::resume::{Answerer, Recorded};
use crate::fleet::{Fleet, Startable};
use crate::paths::Paths;
use crate::store::{Store, blocking};

/// This process's one fleet, for the runs an answer or a sweep resumes here.
#[derive(Clone)]
pub struct Host {
    paths: Paths,
    store: Store,
    fleet: Arc<OnceLock<Fleet>>,
    /// A one-shot command's fleet lives only for the runs it resumes: each is
    /// driven to the end of its turn and its unit reaped before the verb returns.
    one_shot: bool,
}

impl Host {
    /// A long-lived surface's own fleet (the board, the editor session).
    pub fn running(paths: &Paths, fleet: &Fleet) -> Host {
        Host {
            paths: paths.clone(),
            store: fleet.missions().store().clone(),
            fleet: Arc::new(OnceLock::from(fleet.clone())),
            one_shot: false,
        }
    }

    /// A one-shot command's: no fleet (no boot sweeps, no heartbeat) until a run
    /// must resume here.
    pub fn one_shot(paths: &Paths, store: &Store) -> Host {
        Host {
            paths: paths.clone(),
            store: store.clone(),
            fleet: Arc::default(),
            one_shot: true,
        }
    }

    /// The ask service answers go through: the fleet's, once there is one, so a
    /// unit waiting on the ask in this process is woken at once.
    fn asks(&self) -> Asks {
        match self.fleet.get() {
            Some(f) => f.asks().clone(),
            None => Asks::new(self.store.clone()),
        }
    }

    /// The fleet, started on first use (its boot sweeps are store work: call this
    /// off the async workers).
    fn fleet(&self) -> anyhow::Result<Fleet> {
        if let Some(f) = self.fleet.get() {
            return Ok(f.clone());
        }
        let started = Fleet::new(self.paths.clone(), self.store.clone())?;
        Ok(self.fleet.get_or_init(|| started).clone())
    }
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
/// its turn (the board).
pub fn record(
    host: &Host,
    ask_id: &str,
    who: Answerer<'_>,
    via: &Surface,
) -> anyhow::Result<Recorded> {
    crate::fleet::resume::record(&host.paths, &host.asks(), ask_id, who, via, || host.fleet())
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
                let missions = crate::mission::Missions::new(h.store.clone());
                if h.asks().host_lives(&parked) || missions.queue_host_takes(&parked.mission_id) {
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

/// Resume every answered run whose host is gone. Returns (resumed, failed).
async fn resume_stranded(host: &Host, which: Stranded) -> anyhow::Result<(usize, usize)> {
    let h = host.clone();
    let stranded: Vec<_> = blocking(move || -> anyhow::Result<Vec<_>> {
        let asks = h.asks();
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
    })
    .await?;
    if stranded.is_empty() {
        return Ok((0, 0));
    }
    let h = host.clone();
    let fleet = blocking(move || h.fleet()).await?;
    let (mut resumed, mut failed) = (0, 0);
    for cp in stranded {
        let startable = match which {
            Stranded::All => None,
            Stranded::Resumable => {
                let (probe, mission) = (fleet.clone(), cp.mission_id.clone());
                match blocking(move || probe.can_resume(&mission)).await {
                    Ok(s) => Some(s),
                    Err(e) => {
                        tracing::debug!(ask = %cp.ask_id, "stranded run left to a process that can start it: {e}");
                        continue;
                    }
                }
            }
        };
        match drive_resume(host, &fleet, &cp.ask_id, &cp.mission_id, startable).await {
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

/// Resume the run parked on `ask_id` on `fleet` (the host's; `startable`: what the
/// check that it can start loaded) and wait for the end of its turn. Whether a unit was resumed (`false`: there was nothing to run). A
/// one-shot command's fleet follows the bus and reaps the unit for the while.
async fn drive_resume(
    host: &Host,
    fleet: &Fleet,
    ask_id: &str,
    mission_id: &str,
    startable: Option<Startable>,
) -> anyhow::Result<bool> {
    let teardown = host.one_shot.then(|| fleet.spawn_teardown());
    let result = fleet.resume_parked(ask_id, startable).await;
    if matches!(result, Ok(true)) {
        fleet.wait_unit(mission_id).await;
    }
    if let Some(teardown) = teardown {
        fleet.shutdown().await;
        teardown.abort();
    }
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
