//! What becomes of a host's missions when it leaves, and who resumes a parked run:
//! one policy for every process that hosts units (`missionboard host`, the editor
//! server, the board's stop-and-quit), and one answer to "who resumes this run"
//! for the answer path, the sweeps and `missionboard host` alike.

use crate::asks::checkpoint::Checkpoint;
use crate::host::HostId;
use crate::ops::host::{Host, Hosting};

/// Who resumes a parked run once its ask is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resumer {
    /// Its own host lives: it watches the row and resumes it.
    ItsHost,
    /// Its host is gone and a live `missionboard host` that may run it (its `--on`
    /// label fits) is there: that host resumes it, not the process that answered.
    QueueHost,
    /// Its host is gone and nothing else will: this process resumes it (the
    /// checkpoint claim keeps that exactly once).
    Here,
}

/// Who resumes the run parked on `cp`, seen from `host`. A `missionboard host` is
/// itself the queue host the others leave such runs to. Store reads: call off the
/// async workers.
pub fn who_resumes(host: &Host, cp: &Checkpoint) -> Resumer {
    if host.asks().host_lives(cp) {
        Resumer::ItsHost
    } else if host.hosting() != Hosting::Queue && host.missions().queue_host_takes(&cp.mission_id) {
        Resumer::QueueHost
    } else {
        Resumer::Here
    }
}

/// What a leaving host does with the open missions it ran. Whatever the choice, a
/// run checkpointed under a question stays parked on it (an answer resumes it,
/// wherever it is given) unless the missions are stopped.
#[derive(Debug, Clone)]
pub enum Departure {
    /// `missionboard host`: every other mission goes back to the queue in its old
    /// place, for the next host to claim.
    Requeue,
    /// `missionboard acp`: every other mission ends `abandoned`, for `why` (its
    /// unit went with the process and nothing can resume it).
    Abandon { why: String },
    /// `missionboard host --stop-on-exit`, the board's stop-and-quit: every one is
    /// stopped as `mission stop` does, for `reason`.
    Stop { reason: String },
}

/// What became of one mission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Parked,
    Requeued,
    Abandoned,
    Stopped,
}

/// What leaving did.
#[derive(Debug, Default)]
pub struct Left {
    pub parked: usize,
    pub requeued: usize,
    pub abandoned: usize,
    pub stopped: usize,
    /// `(mission id, why)` for each that could not be settled (one that came to
    /// rest meanwhile needs nothing and is not here).
    pub failed: Vec<(String, String)>,
}

/// Settle each of `ids`, the open missions `host` ran, as `how` says. `before` is
/// called with each mission's fate before it is written, for what the surface says
/// about it (the editor server's blocker reports), so a reader that sees the
/// mission at rest finds it there. Store work: call off the async workers, once
/// the host's units are reaped (nothing of theirs writes behind it).
pub fn leave(
    host: &Host,
    ids: &[String],
    how: &Departure,
    mut before: impl FnMut(&str, Fate) -> anyhow::Result<()>,
) -> Left {
    let me = HostId::current();
    let (missions, asks) = (host.missions(), host.asks());
    let mut out = Left::default();
    for id in ids {
        let checkpointed = || asks.checkpoints_for(id).is_ok_and(|c| !c.is_empty());
        let fate = match how {
            Departure::Stop { .. } => Fate::Stopped,
            _ if checkpointed() => Fate::Parked,
            Departure::Requeue => Fate::Requeued,
            Departure::Abandon { .. } => Fate::Abandoned,
        };
        let done = before(id, fate).and_then(|()| match (fate, how) {
            (Fate::Parked, _) => Ok(true),
            (Fate::Requeued, _) => Ok(missions.requeue(id, &me)?),
            (Fate::Stopped, Departure::Stop { reason }) => {
                crate::ops::stop::stop_here(host, id, reason)?;
                Ok(true)
            }
            (_, Departure::Abandon { why }) => {
                crate::ops::stop::stop_mission(host, id, Some(why))?;
                Ok(true)
            }
            (_, _) => Ok(false),
        });
        match done {
            Ok(true) => match fate {
                Fate::Parked => out.parked += 1,
                Fate::Requeued => out.requeued += 1,
                Fate::Abandoned => out.abandoned += 1,
                Fate::Stopped => out.stopped += 1,
            },
            Ok(false) => {}
            Err(_)
                if missions
                    .get(id)
                    .ok()
                    .flatten()
                    .is_some_and(|m| m.status.is_terminal()) => {}
            Err(e) => out.failed.push((id.clone(), format!("{e:#}"))),
        }
    }
    out
}
