//! Agent text is untrusted: a unit (or anything it read) can put terminal escape
//! sequences into a report, an ask, a plan entry or a verdict. Painted raw, `ESC[2J`
//! would clear the operator's screen, OSC 52 would write their clipboard, OSC 8 would
//! plant links and a bidi override would make text read differently than it is.
//! This is the one sanitizer: the board passes everything it shows from the store
//! through [`sanitize`] when the snapshot is built, and the CLI passes every line it
//! writes through it (or, for `--json`, through [`escape_json`]).
//!
//! A leaf: it depends on no other module of the crate.

/// Strip escape sequences (CSI, OSC, DCS/SOS/PM/APC strings, two-byte escapes, and
/// their 8-bit C1 forms), the remaining C0/C1 controls and the Unicode bidi
/// controls. Newlines survive (views split on them); a tab becomes a space; `\r` and
/// everything else invisible is dropped.
pub fn sanitize(text: &str) -> String {
    // Most text (ids, names, an agent's plain sentences) has nothing to strip.
    if text.bytes().all(|b| b == b'\n' || is_printable_ascii(b)) {
        return text.to_string();
    }
    strip(text)
}

/// [`sanitize`]'s work, character by character.
fn strip(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => skip_csi(&mut chars),
                Some(']' | 'P' | 'X' | '^' | '_') => skip_string(&mut chars),
                // A two-byte escape (ESC c, ESC 7, …) or a truncated one: drop both.
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => skip_string(&mut chars),
            '\n' => out.push('\n'),
            '\t' => out.push(' '),
            c if c.is_control() => {}
            c if is_bidi_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// A byte a terminal shows as itself: printable ASCII (no control, no escape).
fn is_printable_ascii(b: u8) -> bool {
    (0x20..0x7f).contains(&b)
}

/// [`sanitize`], then every line break folded into a space: for one-line cells.
pub fn one_line(text: &str) -> String {
    // Nothing to strip and no line to fold: only the ends' spaces go.
    if text.bytes().all(is_printable_ascii) {
        return text.trim().to_string();
    }
    fold(&sanitize(text))
}

/// [`one_line`]'s work on sanitized text: lines trimmed, the empty ones dropped,
/// the rest joined by a space.
fn fold(clean: &str) -> String {
    let mut out = String::with_capacity(clean.len());
    for (i, part) in clean.split('\n').enumerate() {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        if i > 0 && !out.is_empty() {
            out.push(' ');
        }
        out.push_str(part);
    }
    out
}

/// [`one_line`] with runs of whitespace collapsed, cut at `max` characters with `…`:
/// the one way agent text becomes a short line (ask summaries, blockers, excerpts).
pub fn excerpt(text: &str, max: usize) -> String {
    let flat = one_line(text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if flat.chars().count() > max {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    } else {
        flat
    }
}

/// Serialized JSON with every C1 control (U+0080–U+009F), DEL and bidi control
/// written as a `\uXXXX` escape. serde_json escapes C0 itself but passes these
/// through raw, and a terminal acts on them. Outside strings JSON is plain ASCII, so
/// every such character sits inside a string, where the escape is the same text.
pub fn escape_json(serialized: &str) -> String {
    let mut out = String::with_capacity(serialized.len());
    for c in serialized.chars() {
        if c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || is_bidi_control(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// CSI: parameter and intermediate bytes, then one final byte in `@`..=`~`.
fn skip_csi(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            return;
        }
        // A control inside a CSI aborts it (as terminals do); swallow it too.
        if c.is_control() {
            return;
        }
    }
}

/// OSC/DCS/SOS/PM/APC: everything up to BEL, ST (`ESC \`) or 8-bit ST.
fn skip_string(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(c) = chars.next() {
        match c {
            '\x07' | '\u{9c}' => return,
            '\x1b' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                return;
            }
            _ => {}
        }
    }
}

/// A count as every surface prints it: digits grouped by thousands, `2,000,000`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

/// A count with its noun, singular for exactly one: `1 tool call`, `5,200 tokens`.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_group_thousands_and_nouns_agree_with_them() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(2_000_000), "2,000,000");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(counted(1, "tool call", "tool calls"), "1 tool call");
        assert_eq!(counted(0, "tool call", "tool calls"), "0 tool calls");
        assert_eq!(counted(5200, "token", "tokens"), "5,200 tokens");
    }

    #[test]
    fn csi_sequences_vanish() {
        assert_eq!(sanitize("a\x1b[2Jb"), "ab");
        assert_eq!(sanitize("\x1b[1;31mred\x1b[0m"), "red");
        assert_eq!(sanitize("x\x1b[?1049hy"), "xy");
        assert_eq!(sanitize("8bit\u{9b}2Jcsi"), "8bitcsi");
    }

    #[test]
    fn osc_strings_vanish_with_either_terminator() {
        assert_eq!(sanitize("\x1b]0;pwned title\x07after"), "after");
        assert_eq!(
            sanitize("\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\"),
            "link"
        );
        assert_eq!(sanitize("\x1b]52;c;aGVsbG8=\x07clip"), "clip");
        assert_eq!(sanitize("\x1bPq#0;2;0;0;0\x1b\\dcs"), "dcs");
        assert_eq!(sanitize("\u{9d}0;t\u{9c}ok"), "ok");
        // An unterminated string eats the rest rather than leaking it.
        assert_eq!(sanitize("ok\x1b]0;never ends"), "ok");
    }

    #[test]
    fn controls_and_bidi_overrides_vanish() {
        assert_eq!(sanitize("a\x07b\x08c\x00d\re"), "abcde");
        assert_eq!(sanitize("tab\there"), "tab here");
        assert_eq!(sanitize("line1\nline2"), "line1\nline2");
        assert_eq!(sanitize("\u{85}next\u{9f}"), "next");
        assert_eq!(sanitize("abc\u{202e}fed\u{202c}"), "abcfed");
        assert_eq!(sanitize("\u{2066}iso\u{2069}\u{200f}"), "iso");
        assert_eq!(sanitize("\x1bcreset"), "reset");
    }

    #[test]
    fn json_escapes_c1_del_and_bidi_and_stays_the_same_value() {
        let value =
            serde_json::json!({"s": "a\x1b[2J\u{9b}1m\u{202e}rlo\u{2066}\x7f\u{9d}0;t\u{9c}é"});
        let escaped = escape_json(&serde_json::to_string(&value).unwrap());
        assert!(
            escaped
                .chars()
                .all(|c| (c.is_ascii() && !c.is_ascii_control()) || c == 'é'),
            "raw control in {escaped:?}"
        );
        assert!(
            escaped.contains("\\u009b") && escaped.contains("\\u202e"),
            "{escaped}"
        );
        let back: serde_json::Value = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn the_plain_text_shortcut_agrees_with_the_full_pass() {
        for text in [
            "",
            "   ",
            "plain words",
            "  padded both ends  ",
            "two\nlines",
            " \n lead and trail \n\n",
            "tab\there",
            "ünïcode stays",
            "esc\x1b[1mape",
        ] {
            assert_eq!(sanitize(text), strip(text), "sanitize {text:?}");
            assert_eq!(one_line(text), fold(&strip(text)), "one_line {text:?}");
        }
    }

    #[test]
    fn plain_text_and_unicode_survive() {
        assert_eq!(sanitize("héllo · ≤300 ✓ 日本"), "héllo · ≤300 ✓ 日本");
        assert_eq!(one_line("  one\n\n two \nthree"), "one two three");
    }

    #[test]
    fn excerpts_are_single_line_inert_and_bounded() {
        assert_eq!(excerpt("a\n\n  b\tc", 240), "a b c");
        assert_eq!(excerpt("a\x1b[2Jb\u{202e}c", 240), "abc");
        let cut = excerpt(&"x".repeat(300), 240);
        assert_eq!(cut.chars().count(), 241);
        assert!(cut.ends_with('…'));
        assert_eq!(excerpt(&"x".repeat(240), 240), "x".repeat(240));
    }
}
