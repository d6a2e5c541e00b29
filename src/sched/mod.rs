//! Missions that start themselves: templates (data files on the envelope search
//! path), schedules (in the store, each tick claimed once across hosts) and signed
//! webhook triggers. This module owns their files, tables and rules; firing them is
//! `ops::schedule`'s, and the hosts and the web server call that.

pub mod cron;
pub mod schedules;
pub mod template;
pub mod triggers;
