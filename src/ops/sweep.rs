//! The lazy reclaim sweep the read views run (`mission list`, `mission show`,
//! `doctor`): an open mission whose host died is collected as abandoned, unless a
//! pending ask explains the silence.

use crate::mission::MissionError;
use crate::ops::host::Host;

/// How long an open mission may go without its host's heartbeat before it counts
/// as abandoned; the board's quit dialog names it.
pub fn stale_after() -> std::time::Duration {
    crate::fleet::sweep::STALE_AFTER
}

/// Reclaim every open mission whose host is gone: the line that says how many,
/// when it collected any.
pub fn reclaim(host: &Host) -> Result<Option<String>, MissionError> {
    let n = crate::fleet::sweep::reclaim(host.missions(), &host.asks())?;
    Ok((n > 0).then(|| crate::fleet::sweep::count_line(n)))
}
