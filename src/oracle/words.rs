//! How the oracle's deterministic checks read text: words, their crude stems, and the
//! filler that carries no subject. The screen and the evidence check share it, so a
//! word means the same thing to both.

/// Words that carry no subject: the grammar around what a sentence is about.
pub const FILLER: &[&str] = &[
    "the", "a", "an", "and", "or", "but", "to", "of", "in", "on", "at", "for", "with", "by", "is",
    "are", "be", "it", "its", "this", "that", "these", "those", "too", "also", "as", "from",
    "into", "we", "you", "i", "me", "us", "should", "do", "does", "can", "could", "will", "would",
    "shall", "may", "might", "please", "so", "if", "then", "them", "they", "their", "our", "my",
    "your", "there", "here", "which", "what", "where", "when", "how", "well", "now", "still",
    "yes", "no", "not", "all", "any",
];

/// Lowercased words: alphanumeric runs, `_` kept inside identifiers (`MB_LISTEN`), an
/// apostrophe's tail dropped (`don't` reads `don`, `t` — see [`NEGATIONS`]).
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The words of `text` worth comparing: [`words`] without [`FILLER`].
pub fn content_words(text: &str) -> Vec<String> {
    words(text).into_iter().filter(|w| !is_filler(w)).collect()
}

pub fn is_filler(word: &str) -> bool {
    FILLER.contains(&word)
}

/// A crude stem, so `renames`, `renamed`, `renaming` and `rename` compare equal. Only
/// ever used to compare two words, never shown.
pub fn stem(word: &str) -> &str {
    let mut w = word;
    for suffix in ["ing", "ed", "es", "s"] {
        if let Some(s) = w.strip_suffix(suffix)
            && s.chars().count() >= 3
        {
            w = s;
            break;
        }
    }
    match w.strip_suffix('e') {
        Some(s) if s.chars().count() >= 3 => s,
        _ => w,
    }
}

/// Whether `word` has the stem of one of `among`.
pub fn stem_in(word: &str, among: &[String]) -> bool {
    let s = stem(word);
    among.iter().any(|w| stem(w) == s)
}

/// Words that turn what follows into its opposite (`don't` is read as `don` + `t`).
pub const NEGATIONS: &[&str] = &[
    "not", "no", "never", "don", "dont", "doesn", "isn", "shouldn", "mustn", "without", "avoid",
    "except", "nor", "neither", "nothing", "none",
];

/// Words that bound a mission's scope, so the intent can settle a "no": "fix the typo in
/// main.rs only" settles "update the docs too?".
pub const LIMITS: &[&str] = &[
    "only",
    "just",
    "leave",
    "alone",
    "untouched",
    "instead",
    "rather",
    "solely",
];

/// Whitespace collapsed and lowercased: a span copied out of the intent may differ from
/// it in case and spacing, never in words.
pub fn normalized(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Whether `lower` holds `pattern` as a whole word or phrase (a trailing `*`: as the
/// start of a word).
pub fn mentions(lower: &str, pattern: &str) -> bool {
    mention_at(lower, pattern).is_some()
}

/// Where `lower` first holds `pattern` (see [`mentions`]), as a byte offset.
pub fn mention_at(lower: &str, pattern: &str) -> Option<usize> {
    mentions_at(lower, pattern).next()
}

/// Every place `lower` holds `pattern` (see [`mentions`]), as byte offsets.
pub fn mentions_at<'a>(lower: &'a str, pattern: &'a str) -> impl Iterator<Item = usize> + 'a {
    let (stem, prefix) = match pattern.strip_suffix('*') {
        Some(s) => (s, true),
        None => (pattern, false),
    };
    let word_char = |c: char| c.is_alphanumeric() || c == '_';
    lower.match_indices(stem).filter_map(move |(at, _)| {
        let before_ok = lower[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !word_char(c))
            || !stem.starts_with(word_char);
        let after_ok = prefix
            || lower[at + stem.len()..]
                .chars()
                .next()
                .is_none_or(|c| !word_char(c))
            || !stem.ends_with(word_char);
        (before_ok && after_ok).then_some(at)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_compare_a_words_forms() {
        for (a, b) in [
            ("rename", "renamed"),
            ("renames", "renaming"),
            ("tests", "test"),
            ("migrate", "migrating"),
            ("spaces", "space"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
        assert_ne!(stem("improve"), stem("migrate"));
        assert_eq!(stem("is"), "is", "short words stay whole");
    }

    #[test]
    fn words_keep_identifiers_and_split_the_rest() {
        assert_eq!(
            words("Rename MB_PORT to `MB_LISTEN`, don't wait!"),
            ["rename", "mb_port", "to", "mb_listen", "don", "t", "wait"]
        );
        assert_eq!(content_words("Should I use the spaces?"), ["use", "spaces"]);
    }

    #[test]
    fn mentions_reads_whole_words_and_prefixes() {
        assert!(mentions("delete the file", "delet*"));
        assert!(!mentions("undelete the file", "delet*"));
        assert!(mentions("rm -rf build", "rm"));
        assert!(!mentions("the rms value", "rm"));
        assert!(mentions("push --force now", "--force"));
    }
}
