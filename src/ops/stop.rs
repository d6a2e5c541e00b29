//! Stop: abandon the mission, close every pending ask it raised, and let whichever
//! host holds its unit reap it (the status event reaches it on the bus; this
//! process's own fleet is told at once).

use crate::asks::Asks;
use crate::fleet::Fleet;
use crate::mission::{Mission, MissionError, Missions, Status};

/// The reason recorded when the operator gives none.
pub const DEFAULT_REASON: &str = "stopped by operator";

/// Stop a mission. Stopping an abandoned mission again is a no-op that keeps the
/// first reason; stopping one that finished otherwise is a conflict.
pub fn stop_mission(
    missions: &Missions,
    asks: &Asks,
    id: &str,
    reason: Option<&str>,
) -> Result<Mission, MissionError> {
    let reason = reason
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .unwrap_or(DEFAULT_REASON);
    // A queued mission ends where it waits: no unit, no asks, no checkpoints.
    if missions.unqueue(id, reason)? {
        return missions.require(id);
    }
    let done = missions.finish(id, Status::Abandoned, reason)?;
    asks.abandon_mission(id).map_err(|e| {
        MissionError::Invalid(format!(
            "mission {id} is abandoned, but closing its pending asks failed: {e}"
        ))
    })?;
    // Every run checkpointed on the mission is dropped, never resumed: those under
    // the asks just closed, and any a resumer claimed and never finished.
    asks.drop_mission_checkpoints(id).map_err(|e| {
        MissionError::Invalid(format!(
            "mission {id} is abandoned, but deleting its checkpoints failed: {e}"
        ))
    })?;
    Ok(done.mission)
}

/// [`stop_mission`] from a process that hosts units: its own unit of the mission
/// is released at once, without waiting for the bus.
pub fn stop_here(fleet: &Fleet, id: &str, reason: &str) -> Result<Mission, MissionError> {
    let m = stop_mission(fleet.missions(), fleet.asks(), id, Some(reason))?;
    fleet.release(&m.id);
    Ok(m)
}

/// What [`stop_all_hosted`] did.
#[derive(Debug, Default)]
pub struct StoppedHosted {
    pub stopped: usize,
    /// `(mission id, why)` for each that could not be stopped.
    pub failed: Vec<(String, String)>,
}

/// Stop every mission in `ids` that `fleet` hosts, before its host quits. One that
/// came to rest meanwhile needs no stop; any other refusal is kept.
pub fn stop_all_hosted(fleet: &Fleet, ids: &[String], reason: &str) -> StoppedHosted {
    let mut out = StoppedHosted::default();
    for id in ids {
        match stop_here(fleet, id, reason) {
            Ok(_) => out.stopped += 1,
            Err(_)
                if fleet
                    .missions()
                    .get(id)
                    .ok()
                    .flatten()
                    .is_some_and(|m| m.status.is_terminal()) => {}
            Err(e) => out.failed.push((id.clone(), e.to_string())),
        }
    }
    out
}
