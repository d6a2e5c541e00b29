//! When a schedule ticks: a cron expression (5 fields, or 6 with seconds first;
//! `@daily` and the other nicknames) read in a time zone, by a maintained cron
//! crate (`croner`) and the IANA zone database (`chrono-tz`). Debug builds also
//! take `@every <N>s`, a steady tick for tests.

use std::str::FromStr;

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// A schedule's timing, parsed and checked.
#[derive(Debug, Clone)]
pub struct When {
    kind: Kind,
    zone: Tz,
}

#[derive(Debug, Clone)]
enum Kind {
    Cron(Box<Cron>),
    /// Every this many milliseconds from the epoch (debug builds only).
    Every(i64),
}

/// The zone a schedule without `--tz` reads its expression in.
pub const DEFAULT_ZONE: &str = "UTC";

impl When {
    /// Parse `expr` in `zone`; the refusal names the fix.
    pub fn parse(expr: &str, zone: &str) -> Result<When, String> {
        let zone = Tz::from_str(zone.trim()).map_err(|_| {
            format!(
                "--tz {zone:?} is not a time zone: give an IANA name such as UTC, Europe/Berlin or America/New_York"
            )
        })?;
        let expr = expr.trim();
        if let Some(every) = expr.strip_prefix("@every ") {
            return Ok(When {
                kind: Kind::Every(every_ms(every)?),
                zone,
            });
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| {
                format!(
                    "--cron {expr:?} is not a cron expression ({e}): write five fields, minute hour day-of-month month day-of-week, e.g. \"0 9 * * MON-FRI\" for 09:00 on weekdays (a sixth field in front counts seconds), or @hourly, @daily, @weekly"
                )
            })?;
        let when = When {
            kind: Kind::Cron(Box::new(cron)),
            zone,
        };
        // An expression that never matches (30 February) is refused here, not at
        // the first tick.
        when.next_after(crate::clock::now_ms()).ok_or_else(|| {
            format!(
                "--cron {expr:?} never comes: no date matches it; check the day and month fields"
            )
        })?;
        Ok(when)
    }

    /// The first tick strictly after `after_ms`; `None` if there is none.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match &self.kind {
            Kind::Every(step) => Some((after_ms.div_euclid(*step) + 1) * step),
            Kind::Cron(cron) => {
                let after: DateTime<Tz> = self.zone.from_utc_datetime(
                    &DateTime::<Utc>::from_timestamp_millis(after_ms)?.naive_utc(),
                );
                cron.find_next_occurrence(&after, false)
                    .ok()
                    .map(|t| t.timestamp_millis())
            }
        }
    }
}

/// `@every 2s`: accepted by debug builds only, where tests need a tick that comes
/// within seconds; a release build refuses it, naming the cron equivalent.
fn every_ms(spec: &str) -> Result<i64, String> {
    let refused = || {
        format!(
            "--cron \"@every {spec}\" is for tests (debug builds only): write a cron expression, e.g. \"*/5 * * * * *\" for every five seconds"
        )
    };
    if !cfg!(debug_assertions) {
        return Err(refused());
    }
    let secs: i64 = spec
        .trim()
        .strip_suffix('s')
        .and_then(|n| n.parse().ok())
        .filter(|n| *n >= 1)
        .ok_or_else(refused)?;
    Ok(secs * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(rfc: &str) -> i64 {
        DateTime::parse_from_rfc3339(rfc)
            .unwrap()
            .timestamp_millis()
    }

    #[test]
    fn weekday_mornings_in_a_zone() {
        let w = When::parse("0 9 * * MON-FRI", "Europe/Berlin").unwrap();
        // Friday 2026-12-04 10:00 Berlin → Monday 2026-12-07 09:00 Berlin (08:00 UTC).
        assert_eq!(
            w.next_after(ms("2026-12-04T09:00:00Z")),
            Some(ms("2026-12-07T08:00:00Z"))
        );
    }

    #[test]
    fn seconds_and_every_tick_within_seconds() {
        let w = When::parse("*/2 * * * * *", "UTC").unwrap();
        assert_eq!(
            w.next_after(ms("2026-01-01T00:00:01Z")),
            Some(ms("2026-01-01T00:00:02Z"))
        );
        let e = When::parse("@every 3s", "UTC").unwrap();
        assert_eq!(e.next_after(3000), Some(6000));
        assert_eq!(e.next_after(2999), Some(3000));
    }

    #[test]
    fn bad_expressions_and_zones_name_the_fix() {
        let e = When::parse("61 * * * *", "UTC").unwrap_err();
        assert!(
            e.contains("is not a cron expression") && e.contains("0 9 * * MON-FRI"),
            "{e}"
        );
        let e = When::parse("0 9 * * *", "Mars/Olympus").unwrap_err();
        assert!(
            e.contains("--tz \"Mars/Olympus\" is not a time zone"),
            "{e}"
        );
        let e = When::parse("0 0 30 2 *", "UTC").unwrap_err();
        assert!(
            e.contains("never comes") || e.contains("not a cron expression"),
            "{e}"
        );
    }
}
