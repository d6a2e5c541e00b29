//! Missions that start themselves: templates (data files on the envelope search
//! path), schedules (in the store, each tick claimed once across hosts) and signed
//! webhook triggers. This module owns their files, tables and rules; firing them is
//! `ops::schedule`'s, and the hosts and the web server call that.

pub mod cron;
pub mod schedules;
pub mod template;
pub mod triggers;

/// A schedule's or a trigger's name: 1 to 64 letters, digits, `-` or `_`, so it
/// reads the same in a table, a log and a URL path. `what` names the kind.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if fine {
        Ok(())
    } else {
        Err(format!(
            "{what} name {name:?} must be 1 to 64 letters, digits, '-' or '_'"
        ))
    }
}
