//! The lazy reclaim sweep the read views run (`mission list`, `mission show`,
//! `doctor`): an open mission whose host died is collected as abandoned, unless a
//! pending ask explains the silence.

use crate::asks::Asks;
use crate::mission::{MissionError, Missions};

/// How long an open mission may go without its host's heartbeat before it counts
/// as abandoned; the board's quit dialog names it.
pub fn stale_after() -> std::time::Duration {
    crate::fleet::sweep::STALE_AFTER
}

/// Reclaim every open mission whose host is gone: the line that says how many,
/// when it collected any.
pub fn reclaim(missions: &Missions) -> Result<Option<String>, MissionError> {
    let asks = Asks::new(missions.store().clone());
    let n = crate::fleet::sweep::reclaim(missions, &asks)?;
    Ok((n > 0).then(|| crate::fleet::sweep::count_line(n)))
}
