//! This process as other processes can recognise it later, on this machine or on
//! another one sharing the store: a fresh id per process, the machine it runs on,
//! and its pid and start time, so a record naming a host can tell a live host from
//! a later process that reused its pid. Missions record theirs (the board flags an
//! open mission whose host is gone), checkpoints theirs (an answer resumes a run on
//! the host that parked it, if it still lives), firing sessions theirs (a report
//! whose session ended goes to the inbox).
//!
//! Only the local half of liveness lives here (is that pid, with that start time,
//! running on this machine?); whether a host on another machine lives is its
//! heartbeat's to say, which `mission::hosts` reads.

use std::sync::OnceLock;

use serde::Serialize;

/// A host process, told apart from a later process that reused its pid, and from
/// a process with the same pid on another machine.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct HostId {
    /// Minted when the process first names itself; empty on a record older than it.
    pub id: String,
    /// The machine's name ([`machine_name`]); empty on a record older than it, which
    /// was always written on the machine that reads it.
    pub machine: String,
    pub pid: u32,
    #[serde(skip)]
    pub start: String,
}

impl HostId {
    /// This process (the same id for its whole life).
    pub fn current() -> HostId {
        static ME: OnceLock<HostId> = OnceLock::new();
        ME.get_or_init(|| {
            let pid = std::process::id();
            let ticks = start_time(pid).unwrap_or_default();
            HostId {
                id: uuid::Uuid::new_v4().to_string(),
                machine: machine_name().to_string(),
                pid,
                start: match pid_space() {
                    "" => ticks,
                    space => format!("{ticks}/{space}"),
                },
            }
        })
        .clone()
    }

    /// A host recorded before hosts had ids: a pid and start time on this machine.
    pub fn local(pid: u32, start: String) -> HostId {
        HostId {
            id: String::new(),
            machine: String::new(),
            pid,
            start,
        }
    }

    /// Does it run (or did it run) on this machine, where its pid can be probed? Two
    /// containers may share a hostname but not a pid space: a host recorded from
    /// another one (another boot, or another pid namespace) is judged as a far host,
    /// by its heartbeat, never by a pid that means something else here.
    pub fn is_on_this_machine(&self) -> bool {
        let same_name = self.machine.is_empty() || self.machine == machine_name();
        // A record without a pid space predates it and was written here.
        let same_space = self
            .start
            .split_once('/')
            .is_none_or(|(_, space)| space == pid_space());
        same_name && same_space
    }

    /// Is that process running on this machine (and still the same process)? Only
    /// meaningful for a host [on this machine](HostId::is_on_this_machine).
    pub fn process_alive(&self) -> bool {
        let ticks = self.start.split('/').next().unwrap_or_default();
        match start_time(self.pid) {
            Some(start) => start == ticks,
            None => false,
        }
    }

    /// The machine as shown to an operator (a record older than machine names was
    /// written here).
    pub fn machine_label(&self) -> &str {
        if self.machine.is_empty() {
            machine_name()
        } else {
            &self.machine
        }
    }

    /// `pid@start@machine@id`: how a record names a host in one column.
    pub fn label(&self) -> String {
        format!("{}@{}@{}@{}", self.pid, self.start, self.machine, self.id)
    }

    /// The host a [`HostId::label`] names, or one written before labels carried a
    /// machine (`pid@start`, this machine's). `None`: not a label.
    pub fn from_label(label: &str) -> Option<HostId> {
        let mut parts = label.splitn(4, '@');
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.to_string();
        let machine = parts.next().unwrap_or_default().to_string();
        let id = parts.next().unwrap_or_default().to_string();
        Some(HostId {
            id,
            machine,
            pid,
            start,
        })
    }
}

/// This machine's name (its hostname), made safe to show and to embed in a label:
/// only letters, digits, `.`, `-` and `_` survive; `unknown` when it has none.
pub fn machine_name() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| sanitize_machine(&hostname()))
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length; gethostname writes at most
    // that many bytes and we stop at the first NUL (or the end, if it truncated).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn sanitize_machine(raw: &str) -> String {
    let name: String = raw
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .take(64)
        .collect();
    if name.is_empty() {
        "unknown".into()
    } else {
        name
    }
}

/// Which kernel boot and pid namespace this process's pids belong to: the first
/// field of the boot id and the pid namespace's inode (`""` where /proc cannot say,
/// and a host is then told by its name alone, as before).
fn pid_space() -> &'static str {
    static SPACE: OnceLock<String> = OnceLock::new();
    SPACE.get_or_init(|| {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
        let boot = boot.trim().split('-').next().unwrap_or_default();
        let ns = std::fs::read_link("/proc/self/ns/pid").unwrap_or_default();
        let ns: String = ns
            .to_string_lossy()
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        let boot: String = boot.chars().filter(char::is_ascii_hexdigit).collect();
        if boot.is_empty() || ns.is_empty() {
            String::new()
        } else {
            format!("{boot}-{ns}")
        }
    })
}

/// The process start time (field 22 of /proc/<pid>/stat), in clock ticks since boot.
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses; fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19).map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_name_keeps_only_safe_characters() {
        assert_eq!(sanitize_machine("box-1.lan"), "box-1.lan");
        assert_eq!(sanitize_machine("evil\u{1b}[2J@x y"), "evil2Jxy");
        assert_eq!(sanitize_machine(""), "unknown");
        assert!(!machine_name().is_empty());
    }

    #[test]
    fn a_label_round_trips_and_an_old_one_reads_as_this_machine() {
        let me = HostId::current();
        assert_eq!(HostId::from_label(&me.label()), Some(me.clone()));
        assert_eq!(HostId::current().id, me.id, "one id for the process's life");
        let old = HostId::from_label("42@977").unwrap();
        assert_eq!(old, HostId::local(42, "977".into()));
        assert!(old.is_on_this_machine());
        assert_eq!(HostId::from_label("not a label"), None);
    }

    #[test]
    fn a_host_of_the_same_name_in_another_pid_space_is_not_probed_here() {
        let me = HostId::current();
        assert!(me.is_on_this_machine() && me.process_alive());
        // The same hostname and this very pid, recorded from another container.
        let ticks = me.start.split('/').next().unwrap().to_string();
        let twin = HostId {
            start: format!("{ticks}/0badc0de-4026531999"),
            ..me.clone()
        };
        assert!(
            !twin.is_on_this_machine(),
            "judged by its heartbeat instead"
        );
        // A record from before pid spaces were recorded is this machine's.
        let legacy = HostId { start: ticks, ..me };
        assert!(legacy.is_on_this_machine() && legacy.process_alive());
    }
}
