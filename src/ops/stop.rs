//! Stop: abandon the mission, close every pending ask it raised, and let whichever
//! host holds its unit reap it (the status event reaches it on the bus; this
//! process's own fleet is told at once).

use crate::mission::{Mission, MissionError, Status};
use crate::ops::host::Host;

/// The reason recorded when the operator gives none.
pub const DEFAULT_REASON: &str = "stopped by operator";

/// Stop a mission. Stopping an abandoned mission again is a no-op that keeps the
/// first reason; stopping one that finished otherwise is a conflict.
pub fn stop_mission(host: &Host, id: &str, reason: Option<&str>) -> Result<Mission, MissionError> {
    let (missions, asks) = (host.missions(), host.asks());
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
pub fn stop_here(host: &Host, id: &str, reason: &str) -> Result<Mission, MissionError> {
    let m = stop_mission(host, id, Some(reason))?;
    if let Some(fleet) = host.started_fleet() {
        fleet.release(&m.id);
    }
    Ok(m)
}
