//! A unit repeating itself: the one rule for every agent. The same call (a report,
//! a gated tool call) made over and over is first refused with a correction, then
//! rests the mission stuck, since no further turn will change it. The host applies
//! it to what crosses into it (reports, envelope-gated calls); the native agent
//! applies it to the calls it runs itself. Both count and word it here.

use crate::sync::LockUnpoisoned;

/// The same call this many times in a row is refused (not done), with a correction.
pub const REFUSED_FROM: u32 = 3;
/// The same call this many times in a row rests the mission stuck: it is repeating
/// itself, whatever agent it is.
pub const BOUND: u32 = 5;

/// What a unit's newest call is, counted against the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repeat {
    /// New, or repeated fewer than [`REFUSED_FROM`] times: it goes ahead.
    Fresh,
    /// The same call `n` times in a row: refused, with [`correction`].
    Refused(u32),
    /// The same call `n` (≥ [`BOUND`]) times in a row: the mission rests stuck on
    /// [`reason`].
    Bound(u32),
}

/// The unit's last call and how many times in a row it was made. One counter per
/// unit: any other call in between breaks the run.
#[derive(Default)]
pub struct Repeats {
    last: std::sync::Mutex<(String, u32)>,
}

impl Repeats {
    /// Count `key` (the call's name and arguments, exactly) as the unit's newest call.
    pub fn count(&self, key: String) -> Repeat {
        let mut last = self.last.lock_unpoisoned();
        if last.0 == key {
            last.1 += 1;
        } else {
            *last = (key, 1);
        }
        match last.1 {
            n if n >= BOUND => Repeat::Bound(n),
            n if n >= REFUSED_FROM => Repeat::Refused(n),
            _ => Repeat::Fresh,
        }
    }
}

/// The key a report is counted by: its kind and words, with every id in them (a
/// UUID, such as the id of the report it echoes) read as one. A unit that files
/// "recorded finding report <id>" back about each report it just filed repeats
/// itself though no two of its reports are equal word for word.
pub fn report_key(kind: &str, summary: &str, detail: &str) -> String {
    static ID: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}",
        )
        .unwrap()
    });
    let words = format!("{kind}\0{summary}\0{detail}");
    format!("report\0{}", ID.replace_all(&words, "<id>"))
}

/// What a refused repeat tells the unit: `not_done` is what did not happen ("filed",
/// "run"), `what` the plural of what it repeats ("reports", "calls").
pub fn correction(not_done: &str, what: &str, repeats: u32) -> String {
    format!(
        "not {not_done} — it repeats your last {} {what} word for word. Report something new, do the next step of your plan, or call mission_finish (stuck, saying why, if you cannot go on).",
        repeats.saturating_sub(1)
    )
}

/// The blocker a mission rests on at the bound: `did` names the repeated thing
/// ("filed the same progress report", "made the same call"), `excerpt` shows it.
pub fn reason(did: &str, repeats: u32, excerpt: &str) -> String {
    format!(
        "repeating itself: the unit {did} {repeats} times in a row: {}",
        crate::text::excerpt(excerpt, 120)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_call_is_refused_from_the_third_and_bound_at_the_fifth() {
        let repeats = Repeats::default();
        let seen: Vec<Repeat> = (0..6).map(|_| repeats.count("ls".into())).collect();
        assert_eq!(
            seen,
            [
                Repeat::Fresh,
                Repeat::Fresh,
                Repeat::Refused(3),
                Repeat::Refused(4),
                Repeat::Bound(5),
                Repeat::Bound(6)
            ]
        );
        assert_eq!(repeats.count("pwd".into()), Repeat::Fresh);
        assert_eq!(repeats.count("ls".into()), Repeat::Fresh, "a run is broken");
    }

    #[test]
    fn reports_that_differ_only_in_the_ids_they_echo_are_one_report() {
        let echo = |id: &str| report_key("finding", &format!("Recorded finding report {id}"), "");
        let repeats = Repeats::default();
        let seen: Vec<Repeat> = [
            "45f15a7b-67bf-48ec-8376-8d3853b52e84",
            "fb9c58e0-6a11-45cc-b303-90bf4a6523f8",
            "af12bbdf-28c8-4c1a-90b3-bc5653a3f9c2",
        ]
        .iter()
        .map(|id| repeats.count(echo(id)))
        .collect();
        assert_eq!(seen, [Repeat::Fresh, Repeat::Fresh, Repeat::Refused(3)]);
        assert_ne!(
            report_key("finding", "3 files", ""),
            report_key("finding", "2 files", ""),
            "other words are another report"
        );
    }

    #[test]
    fn the_wording_names_the_loop() {
        assert_eq!(
            reason("made the same call", 5, "local_fs.read_file: a.txt"),
            "repeating itself: the unit made the same call 5 times in a row: local_fs.read_file: a.txt"
        );
        assert!(correction("run", "calls", 3).starts_with(
            "not run — it repeats your last 2 calls word for word. Report something new"
        ));
    }
}
