//! `mission stop`: abandon the mission, close every pending ask it raised, and let
//! whichever host holds its unit reap it (the status event reaches it on the bus).

use crate::asks::Asks;
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
