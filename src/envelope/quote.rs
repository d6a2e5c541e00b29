//! Quoting like Go's `%q` verb, so an envelope's messages read as they did under
//! the Go loader that first defined the format.

/// `s` in double quotes, with quotes, backslashes and control characters escaped
/// the way Go's `%q` escapes them.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0B}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7F}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_is_go_percent_q() {
        assert_eq!(quote("plain"), r#""plain""#);
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("l1\nl2\t\u{1}\u{7f}"), r#""l1\nl2\t\x01\x7f""#);
        assert_eq!(quote("naïve — ok"), "\"naïve — ok\"");
    }
}
