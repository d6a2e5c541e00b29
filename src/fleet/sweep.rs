//! The reclaim sweep: an open mission whose host process is gone (its unit died
//! with it) is collected as abandoned — unless a pending ask could still explain the
//! silence. It runs on host boot, `mission list`, `mission show` and `doctor`.

use std::time::Duration;

use crate::asks::Asks;
use crate::clock;
use crate::mission::{Mission, MissionError, Missions};

/// Silence longer than this means the host is gone.
pub const STALE_AFTER: Duration = Duration::from_secs(6 * 3600);
/// Test hook: overrides the floor in milliseconds, so a test need not wait six hours.
/// Debug builds only (the black-box tests run one): a release build never reads it,
/// so nothing in an operator's environment can shorten the floor.
#[cfg(debug_assertions)]
pub const FLOOR_ENV: &str = "MISSIONBOARD_TEST_RECLAIM_AFTER_MS";
/// At most this many missions are reclaimed per sweep.
const BATCH: usize = 200;

/// The floor in force (in a debug build, the test hook; else six hours).
pub fn floor() -> Duration {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var(FLOOR_ENV).ok().and_then(|v| v.parse().ok()) {
        return Duration::from_millis(ms);
    }
    STALE_AFTER
}

/// `less than a minute`, else the duration rounded to the minute (`7h0m0s`).
pub fn silence_text(d: Duration) -> String {
    if d < Duration::from_secs(60) {
        return "less than a minute".into();
    }
    let minutes = (d.as_secs() + 30) / 60;
    crate::duration::format(Duration::from_secs(minutes * 60))
}

/// Reclaim what the floor (widened by pending asks) says is gone. Returns how many.
pub fn reclaim(missions: &Missions, asks: &Asks) -> Result<usize, MissionError> {
    let floor = floor();
    let now = clock::now_ms();
    let mut reclaimed = 0;
    for m in missions.silent_since(now - floor.as_millis() as i64, BATCH)? {
        let last_seen = m.created_at.max(m.last_heartbeat.unwrap_or(0));
        let silence = Duration::from_millis((now - last_seen).max(0) as u64);
        let Some(bound) = bound_for(&m, asks, floor) else {
            continue;
        };
        if silence <= bound {
            continue;
        }
        let reason = format!(
            "reclaimed: host process gone, no heartbeat for {}",
            silence_text(silence)
        );
        if !missions.reclaim(&m.id, last_seen, &reason)? {
            continue;
        }
        reclaimed += 1;
        let detail = format!(
            "No heartbeat for {} (a mission unit is a child of the process that fired it, so the unit died with its host), longer than any park still open on it could explain. The mission was reclaimed as abandoned, the bound being {} of silence. This collects the mission record only: any run it checkpointed is untouched, and any ask it filed is left pending on its own expiry.",
            silence_text(silence),
            silence_text(bound)
        );
        missions.add_blocker(
            &m.id,
            "Mission reclaimed: its host process is gone.".into(),
            detail,
        )?;
    }
    Ok(reclaimed)
}

/// The silence that proves the host gone: the floor, widened to the longest window
/// of a pending ask; `None` (never) while an ask with no deadline is pending.
fn bound_for(m: &Mission, asks: &Asks, floor: Duration) -> Option<Duration> {
    let mut bound = floor;
    for a in asks.for_mission(&m.id, 200).ok()? {
        if !a.is_pending() {
            continue;
        }
        if a.expires_at == 0 {
            return None;
        }
        bound = bound.max(Duration::from_millis(
            (a.expires_at - a.created_at).max(0) as u64
        ));
    }
    Some(bound)
}

/// The line list/show/doctor print when a sweep reclaimed anything.
pub fn count_line(n: usize) -> String {
    format!(
        "Missions: {n} reclaimed as abandoned — open with no heartbeat for at least {}, so their host process is gone (missionboard mission list). A mission waiting on a pending ask is not reclaimed while that ask is still answerable: its bound widens to the ask's own window, and an ask with no deadline holds it open indefinitely (missionboard mission show <id>).",
        crate::duration::format(floor())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_reads_in_minutes() {
        assert_eq!(silence_text(Duration::from_secs(59)), "less than a minute");
        assert_eq!(silence_text(Duration::from_secs(7 * 3600 + 10)), "7h0m0s");
        assert_eq!(silence_text(Duration::from_secs(6 * 3600 + 89)), "6h1m0s");
    }
}
