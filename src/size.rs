//! Amounts of memory as operators write them (`8G`, `400M`, `512K`, bytes) and as
//! every surface prints them (`1.2G`, `310M`). Binary units: `1K` is 1024 bytes, as
//! `free -h`, `ps` and the kernel's own figures count.

const UNITS: &[(char, u64)] = &[
    ('K', 1 << 10),
    ('M', 1 << 20),
    ('G', 1 << 30),
    ('T', 1 << 40),
];

/// Parse `8G`, `1.5G`, `400M`, `400MB`, `400MiB`, `512k`, or a number of bytes.
pub fn parse(text: &str) -> Result<u64, String> {
    let s = text.trim();
    let bad = || format!("invalid size {s:?}: write a number with a unit, e.g. 8G, 400M, 512K");
    let digits = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    if digits == 0 {
        return Err(bad());
    }
    let value: f64 = s[..digits].parse().map_err(|_| bad())?;
    let unit = s[digits..].trim();
    let scale = if unit.is_empty() || unit.eq_ignore_ascii_case("b") {
        1
    } else {
        let mut chars = unit.chars();
        let first = chars.next().map(|c| c.to_ascii_uppercase());
        let rest: String = chars.collect();
        if !["", "B", "IB"].contains(&rest.to_ascii_uppercase().as_str()) {
            return Err(bad());
        }
        UNITS
            .iter()
            .find(|(u, _)| Some(*u) == first)
            .map(|(_, scale)| *scale)
            .ok_or_else(bad)?
    };
    let bytes = value * scale as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes.round() as u64)
}

/// `310M`, `1.2G`, `512K`, `900B`: one decimal below ten of a unit, none above.
pub fn text(bytes: u64) -> String {
    let Some(&(unit, scale)) = UNITS.iter().rev().find(|(_, scale)| bytes >= *scale) else {
        return format!("{bytes}B");
    };
    let value = bytes as f64 / scale as f64;
    if value < 10.0 {
        let tenths = (value * 10.0).round() / 10.0;
        if tenths.fract() == 0.0 {
            format!("{}{unit}", tenths as u64)
        } else {
            format!("{tenths:.1}{unit}")
        }
    } else {
        format!("{}{unit}", value.round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_binary_units_and_refuse_what_is_not_one() {
        assert_eq!(parse("8G"), Ok(8 << 30));
        assert_eq!(parse(" 400M "), Ok(400 << 20));
        assert_eq!(parse("400MiB"), Ok(400 << 20));
        assert_eq!(parse("400mb"), Ok(400 << 20));
        assert_eq!(parse("1.5G"), Ok(3 << 29));
        assert_eq!(parse("512k"), Ok(512 << 10));
        assert_eq!(parse("1000"), Ok(1000));
        assert_eq!(parse("0"), Ok(0));
        for bad in ["", "G", "8X", "8 gigs", "-1G", "1e3"] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse("lots").unwrap_err(),
            "invalid size \"lots\": write a number with a unit, e.g. 8G, 400M, 512K"
        );
    }

    #[test]
    fn sizes_print_short() {
        assert_eq!(text(900), "900B");
        assert_eq!(text(512 << 10), "512K");
        assert_eq!(text(310 << 20), "310M");
        assert_eq!(text(1288490189), "1.2G");
        assert_eq!(text(8 << 30), "8G");
        assert_eq!(text(parse(&text(400 << 20)).unwrap()), "400M");
    }
}
