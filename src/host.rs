//! This process as other processes can recognise it later: its pid and its start
//! time, so a record naming a host can tell a live host from a later process that
//! reused its pid. Missions record theirs (the board flags an open mission whose
//! host is gone), checkpoints theirs (an answer resumes a run on the host that
//! parked it, if it still lives), firing sessions theirs (a report whose session
//! ended goes to the inbox).

/// A host process, told apart from a later process that reused its pid.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostId {
    pub pid: u32,
    pub start: String,
}

impl HostId {
    /// This process.
    pub fn current() -> HostId {
        let pid = std::process::id();
        HostId {
            pid,
            start: start_time(pid).unwrap_or_default(),
        }
    }

    /// Is that process still running (and still the same process)?
    pub fn is_alive(&self) -> bool {
        match start_time(self.pid) {
            Some(start) => start == self.start,
            None => false,
        }
    }

    /// `pid@start`: how a record names a host in one column.
    pub fn label(&self) -> String {
        format!("{}@{}", self.pid, self.start)
    }

    /// The host a [`HostId::label`] names (`None`: not a label).
    pub fn from_label(label: &str) -> Option<HostId> {
        let (pid, start) = label.split_once('@')?;
        Some(HostId {
            pid: pid.parse().ok()?,
            start: start.to_string(),
        })
    }

    /// Is the host a label names still running? A claim no live process can be
    /// shown to hold (an unreadable label) is nobody's.
    pub fn label_is_alive(label: &str) -> bool {
        HostId::from_label(label).is_some_and(|h| h.is_alive())
    }
}

/// The process start time (field 22 of /proc/<pid>/stat), in clock ticks since boot.
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}
