//! Durations in the notation operators already know from the reference runtime:
//! Go's `time.Duration` format (`30m0s`, `8.922s`, `950ms`), parsed and printed.

use std::time::Duration;

/// Parse `30s`, `1h30m`, `1.5h`, `250ms`. A bare `0` is zero. Units: ns, us, µs, ms, s, m, h.
pub fn parse(text: &str) -> Result<Duration, String> {
    let s = text.trim();
    let bad = || format!("invalid duration {s:?}: write a number with a unit, e.g. 30s, 5m, 1h30m");
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() || s.starts_with('-') {
        return Err(bad());
    }
    let mut rest = s.strip_prefix('+').unwrap_or(s);
    let mut total_ns: f64 = 0.0;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_len == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_len].parse().map_err(|_| bad())?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return Err(bad()),
        };
        rest = &rest[unit_len..];
        total_ns += value * scale;
    }
    if !total_ns.is_finite() || total_ns > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(Duration::from_nanos(total_ns.round() as u64))
}

/// Print like Go's `Duration.String()`: `0s`, `950ms`, `8.922s`, `30m0s`, `2h0m0s`.
pub fn format(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns == 0 {
        return "0s".into();
    }
    if ns < 1_000_000_000 {
        // Sub-second values use the largest unit that keeps the integer part non-zero.
        let (unit, scale) = if ns < 1_000 {
            ("ns", 1u128)
        } else if ns < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", frac(ns, scale));
    }
    let total_secs = ns / 1_000_000_000;
    let sub_ns = ns % 1_000_000_000;
    let h = total_secs / 3600;
    let m = (total_secs % 3600) / 60;
    let s = frac((total_secs % 60) * 1_000_000_000 + sub_ns, 1_000_000_000);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// `value/scale` with the fraction's trailing zeros dropped.
fn frac(value: u128, scale: u128) -> String {
    let int = value / scale;
    let rem = value % scale;
    if rem == 0 {
        return int.to_string();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{rem:0width$}");
    format!("{int}.{}", digits.trim_end_matches('0'))
}

/// Round to the nearest millisecond (trace lines print elapsed time this way).
pub fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(((d.as_micros() + 500) / 1000) as u64)
}

/// Ages in tables: `Ns` under a minute, `Nm` under an hour, `Nh` under a day, else `Nd`.
pub fn age(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_go() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_millis(950), "950ms"),
            (Duration::from_millis(8922), "8.922s"),
            (Duration::from_secs(30 * 60), "30m0s"),
            (Duration::from_secs(2 * 3600), "2h0m0s"),
            (Duration::from_secs(6 * 3600 + 60), "6h1m0s"),
            (Duration::from_secs(20), "20s"),
            (Duration::from_micros(1500), "1.5ms"),
        ];
        for (d, want) in cases {
            assert_eq!(format(d), want, "{d:?}");
        }
    }

    #[test]
    fn parses_go_notation_and_refuses_junk() {
        assert_eq!(parse("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        for junk in ["", "30", "-5s", "5x", "s", "1..5s"] {
            assert!(parse(junk).is_err(), "{junk:?} should be refused");
        }
    }

    #[test]
    fn ages_clamp_and_bucket() {
        assert_eq!(age(-5), "0s");
        assert_eq!(age(59), "59s");
        assert_eq!(age(60), "1m");
        assert_eq!(age(3600), "1h");
        assert_eq!(age(86_400 * 3), "3d");
    }
}
