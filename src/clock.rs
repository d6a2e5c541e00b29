//! Wall-clock time as stored (unix milliseconds) and as printed (RFC 3339, UTC),
//! and the one way to wait on a condition with a deadline.

use std::ops::ControlFlow;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `2026-12-02T14:00:03Z` for a stored timestamp (second precision, like the reference CLI).
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Seconds elapsed since a stored timestamp (negative clamps to zero at display time).
pub fn age_secs(ms: i64) -> i64 {
    (now_ms() - ms).div_euclid(1000)
}

// Howard Hinnant's days-to-civil algorithm: proleptic Gregorian calendar from day 0 = 1970-01-01.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Serde helper: a stored timestamp as RFC 3339.
pub fn ser_rfc3339<S: serde::Serializer>(ms: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*ms))
}

/// Serde helper: an optional stored timestamp as RFC 3339.
pub fn ser_opt_rfc3339<S: serde::Serializer>(ms: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) => s.serialize_str(&rfc3339(*ms)),
        None => s.serialize_none(),
    }
}

/// Check `probe` every `every` until it yields `Some`; `None` once `limit` has
/// passed without it. For async callers: it sleeps on the runtime, not the thread.
pub async fn poll_until<T>(
    limit: Duration,
    every: Duration,
    probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    poll(limit, probe, || tokio::time::sleep(every)).await
}

/// [`poll_until`] for a plain thread: it sleeps the thread between checks. A plain
/// loop, not an executor: a probe may read the PostgreSQL store, whose calls block
/// on an executor of their own, and executors of that kind cannot nest.
pub fn poll_until_blocking<T>(
    limit: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let ControlFlow::Break(found) = check(deadline, &mut probe) {
            return found;
        }
        std::thread::sleep(every);
    }
}

/// The async polling loop: probe, give up past the deadline, `pause`, again.
async fn poll<T, P: Future<Output = ()>>(
    limit: Duration,
    mut probe: impl FnMut() -> Option<T>,
    mut pause: impl FnMut() -> P,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let ControlFlow::Break(found) = check(deadline, &mut probe) {
            return found;
        }
        pause().await;
    }
}

/// One check of a poll: done with the probe's value, or with `None` once the deadline
/// has passed; otherwise pause and check again.
fn check<T>(deadline: Instant, probe: &mut impl FnMut() -> Option<T>) -> ControlFlow<Option<T>> {
    match probe() {
        Some(v) => ControlFlow::Break(Some(v)),
        None if Instant::now() >= deadline => ControlFlow::Break(None),
        None => ControlFlow::Continue(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_220_003_000), "2026-12-02T14:00:03Z");
    }

    #[test]
    fn a_poll_returns_the_first_value_or_none_at_the_deadline() {
        let mut n = 0;
        let got = poll_until_blocking(Duration::from_secs(30), Duration::ZERO, || {
            n += 1;
            (n == 3).then_some(n)
        });
        assert_eq!(got, Some(3));
        let never: Option<()> = poll_until_blocking(Duration::ZERO, Duration::ZERO, || None);
        assert_eq!(never, None);
    }
}
