//! `missionboard supervise`: the small process every unit runs under.
//!
//! The host starts it in place of the agent; it starts the agent, with the ACP stdio
//! passed straight through, and stays its parent. It is a child subreaper, so every
//! descendant of the agent — one that double-forks, one that calls `setsid` — is
//! re-parented to it rather than to init, and stays within its reach. It holds the
//! read end of a lifeline pipe whose write end only the host holds: end of file on
//! it means the host is gone, however it died. On that, on SIGTERM, SIGINT or
//! SIGHUP (a stop), or when the agent exits, it ends the whole tree (SIGTERM, a
//! grace, SIGKILL for whatever remains, reaping each), then exits with the agent's
//! status.
//!
//! It runs outside the unit's Landlock ruleset (it must read `/proc` to find the
//! tree, and signal it); the host hands it the ruleset's descriptor and it applies
//! it to the agent in the agent's pre-exec, so the agent and everything it starts
//! are confined exactly as before.
//!
//! A leaf: the host (`acp`) builds its command line with [`command_args`], and
//! `main` dispatches to [`main`] before any other set-up (no store, no logging, one
//! thread).

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::RawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// The hidden subcommand.
pub const SUBCOMMAND: &str = "supervise";

/// How long a torn-down tree gets between SIGTERM and SIGKILL.
pub const TEARDOWN_GRACE: Duration = Duration::from_secs(2);

/// Longest the SIGKILL sweep keeps finding new processes (a tree still forking as it
/// is killed) before the supervisor gives up on it and exits.
const KILL_SWEEP_LIMIT: Duration = Duration::from_secs(5);

/// Longest the supervisor waits, once its tree is empty, for children still
/// exiting to become reapable.
const FINAL_REAP_LIMIT: Duration = Duration::from_secs(1);

/// The exit code when the agent could not be started at all (as a shell says it).
pub const EXIT_CANNOT_START: i32 = 127;

const LIFELINE_FLAG: &str = "--lifeline";
const LANDLOCK_FLAG: &str = "--landlock";

/// The arguments after the executable: `supervise --lifeline <fd> [--landlock <fd>]
/// -- <program> <args…>`. Descriptors are numbers valid in the supervisor, which
/// inherits them.
pub fn command_args(
    lifeline: RawFd,
    landlock: Option<RawFd>,
    program: &Path,
    args: &[String],
) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![
        SUBCOMMAND.into(),
        LIFELINE_FLAG.into(),
        lifeline.to_string().into(),
    ];
    if let Some(fd) = landlock {
        argv.push(LANDLOCK_FLAG.into());
        argv.push(fd.to_string().into());
    }
    argv.push("--".into());
    argv.push(program.as_os_str().to_owned());
    argv.extend(args.iter().map(OsString::from));
    argv
}

/// What the host asked for.
#[derive(Debug, PartialEq)]
struct Plan {
    lifeline: RawFd,
    landlock: Option<RawFd>,
    program: OsString,
    args: Vec<OsString>,
}

impl Plan {
    /// Parse the arguments after `supervise`.
    fn parse(argv: &[OsString]) -> Result<Plan, String> {
        let mut lifeline = None;
        let mut landlock = None;
        let mut rest = argv.iter();
        let fd = |value: Option<&OsString>, flag: &str| -> Result<RawFd, String> {
            value
                .and_then(|v| v.to_str())
                .and_then(|v| v.parse::<RawFd>().ok())
                .filter(|fd| *fd > 2)
                .ok_or_else(|| format!("{flag} takes a descriptor number above 2"))
        };
        loop {
            match rest.next().map(OsString::as_os_str) {
                Some(a) if a == OsStr::new(LIFELINE_FLAG) => {
                    lifeline = Some(fd(rest.next(), LIFELINE_FLAG)?)
                }
                Some(a) if a == OsStr::new(LANDLOCK_FLAG) => {
                    landlock = Some(fd(rest.next(), LANDLOCK_FLAG)?)
                }
                Some(a) if a == OsStr::new("--") => break,
                Some(a) => return Err(format!("unexpected argument {a:?}")),
                None => return Err("no program after --".into()),
            }
        }
        let program = rest.next().ok_or("no program after --")?.clone();
        Ok(Plan {
            lifeline: lifeline.ok_or("--lifeline is required")?,
            landlock,
            program,
            args: rest.cloned().collect(),
        })
    }
}

/// Run the supervisor on `argv` (the arguments after `supervise`); returns the exit
/// code (the agent's, when it had one).
pub fn main(argv: &[OsString]) -> i32 {
    let plan = match Plan::parse(argv) {
        Ok(plan) => plan,
        Err(why) => {
            eprintln!("missionboard supervise: {why} (this subcommand is started by the host)");
            return 2;
        }
    };
    imp::run(plan)
}

/// Why the supervisor ends the tree.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Ending {
    /// The agent exited (its wait status).
    AgentExited(libc::c_int),
    /// The lifeline reached end of file: the host is gone.
    HostGone,
    /// A termination signal (a stop, or a Ctrl-C reaching this group).
    Signalled,
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use std::os::unix::process::CommandExt;

    fn last_error(what: &str) -> io::Error {
        let err = io::Error::last_os_error();
        io::Error::new(err.kind(), format!("{what}: {err}"))
    }

    pub(super) fn run(plan: Plan) -> i32 {
        match supervise(&plan) {
            Ok(code) => code,
            Err(err) => {
                eprintln!(
                    "missionboard supervise: cannot start unit program {}: {err}",
                    Path::new(&plan.program).display()
                );
                EXIT_CANNOT_START
            }
        }
    }

    /// The signals the supervisor takes through its signalfd.
    fn watched() -> libc::sigset_t {
        // SAFETY: sigemptyset/sigaddset initialise and fill a set we own.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            set
        }
    }

    fn supervise(plan: &Plan) -> io::Result<i32> {
        // SAFETY: fcntl, prctl, sigprocmask and signalfd act on this process's own
        // descriptors and signal state; every pointer is to a live local.
        let sigfd = unsafe {
            // Our descriptors stay ours: the agent inherits neither.
            for fd in std::iter::once(plan.lifeline).chain(plan.landlock) {
                if libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) == -1 {
                    return Err(last_error("the host's descriptor"));
                }
            }
            if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == -1 {
                return Err(last_error("PR_SET_CHILD_SUBREAPER"));
            }
            // Blocked before the spawn, so no signal in between is lost or acted on
            // by its default disposition.
            let set = watched();
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) == -1 {
                return Err(last_error("sigprocmask"));
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd == -1 {
                return Err(last_error("signalfd"));
            }
            fd
        };
        let me = std::process::id() as libc::pid_t;
        let landlock = plan.landlock;
        let mut cmd = std::process::Command::new(&plan.program);
        // Stdio is inherited: the host's pipes reach the agent untouched. Its own
        // group, so a stop's signals reach the agent's helpers that share it.
        cmd.args(&plan.args).process_group(0);
        // SAFETY: only async-signal-safe calls (prctl, getppid, sigprocmask, the
        // Landlock syscalls) on the forked child's own state.
        unsafe {
            cmd.pre_exec(move || {
                // Should this supervisor be SIGKILLed, the agent goes with it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                    return Err(io::Error::last_os_error());
                }
                if libc::getppid() != me {
                    return Err(io::Error::from_raw_os_error(libc::ESRCH));
                }
                let set = watched();
                if libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) == -1 {
                    return Err(io::Error::last_os_error());
                }
                if let Some(fd) = landlock {
                    crate::confine::apply_fd(fd)?;
                }
                Ok(())
            });
        }
        // A host that died while we were starting leaves nothing to start for.
        if host_gone_already(plan.lifeline) {
            return Ok(1);
        }
        let agent = cmd.spawn()?;
        let agent = agent.id() as libc::pid_t;
        if let Some(fd) = plan.landlock {
            // SAFETY: closing our own copy of the ruleset, which the agent now holds.
            unsafe { libc::close(fd) };
        }
        release_stdio();
        let ending = watch(plan.lifeline, sigfd, agent);
        let agent_status = teardown(agent, sigfd, ending);
        Ok(exit_code(agent_status))
    }

    /// Point our stdin and stdout at /dev/null: only the agent holds the ACP pipes, so
    /// the host sees end of file when the agent closes them. Stderr stays: our own last
    /// words go where the agent's do.
    fn release_stdio() {
        // SAFETY: open/dup2/close on descriptors this process owns.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            if null >= 0 {
                libc::dup2(null, 0);
                libc::dup2(null, 1);
                libc::close(null);
            }
        }
    }

    /// Wait for the first reason to end the tree.
    fn watch(lifeline: RawFd, sigfd: RawFd, agent: libc::pid_t) -> Ending {
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: lifeline,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: sigfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: fds is a live array of two pollfd.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n == -1 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // poll itself failing leaves nothing to wait on: end the tree.
                return Ending::HostGone;
            }
            if fds[0].revents != 0 && lifeline_ended(lifeline) {
                return Ending::HostGone;
            }
            if fds[1].revents != 0 {
                let mut stopped = false;
                while let Some(signo) = read_signal(sigfd) {
                    stopped |= signo != libc::SIGCHLD as u32;
                }
                if let Some(status) = reap(agent) {
                    return Ending::AgentExited(status);
                }
                if stopped {
                    return Ending::Signalled;
                }
            }
        }
    }

    /// Whether the lifeline has already reached end of file, without waiting.
    fn host_gone_already(lifeline: RawFd) -> bool {
        let mut fd = libc::pollfd {
            fd: lifeline,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd; a zero timeout only asks.
        let ready = unsafe { libc::poll(&mut fd, 1, 0) } == 1;
        ready && lifeline_ended(lifeline)
    }

    /// True when the host's end is closed (nothing is ever written on it).
    fn lifeline_ended(lifeline: RawFd) -> bool {
        let mut byte = [0u8; 64];
        // SAFETY: reading into a live local buffer of its own length.
        let n = unsafe { libc::read(lifeline, byte.as_mut_ptr().cast(), byte.len()) };
        n == 0 || (n == -1 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted)
    }

    /// One pending signal's number; `None` when none is pending (the signalfd does
    /// not block).
    fn read_signal(sigfd: RawFd) -> Option<u32> {
        // SAFETY: a zeroed signalfd_siginfo is a valid value (plain integers).
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: reading one signalfd_siginfo into a live local of that size.
        let n = unsafe { libc::read(sigfd, (&raw mut info).cast(), size) };
        (n == size as isize).then_some(info.ssi_signo)
    }

    /// Reap every child that has exited (orphans re-parented to us included); the
    /// agent's wait status when it was among them.
    fn reap(agent: libc::pid_t) -> Option<libc::c_int> {
        reap_counting(agent).0
    }

    /// [`reap`], and whether any child is left (alive, or exiting and not yet a
    /// zombie): `waitpid` says ECHILD only when none is.
    fn reap_counting(agent: libc::pid_t) -> (Option<libc::c_int>, bool) {
        let mut agent_status = None;
        loop {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a live local. __WALL: a child
            // cloned with another exit signal than SIGCHLD is reaped too.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG | libc::__WALL) };
            if pid <= 0 {
                return (agent_status, pid == 0);
            }
            if pid == agent {
                agent_status = Some(status);
            }
        }
    }

    /// Reap until we have no child at all, for at most `limit`. The tree walk counts
    /// only live processes, so a child that died after the last reap is a zombie
    /// it no longer sees: left unreaped when we exit, it would be re-parented to
    /// init, which reaps it and takes its CPU time (and that of everything it reaped)
    /// with it — the unit's, lost from ours and so from the host's account.
    fn reap_all(agent: libc::pid_t, sigfd: RawFd, limit: Duration) -> Option<libc::c_int> {
        let deadline = Instant::now() + limit;
        let mut agent_status = None;
        loop {
            let (status, left) = reap_counting(agent);
            agent_status = agent_status.or(status);
            if !left || Instant::now() >= deadline {
                return agent_status;
            }
            // A child is still exiting: its SIGCHLD wakes us.
            nap(sigfd, Duration::from_millis(20));
        }
    }

    /// Every live process below `root`, found by walking `/proc` parent links. As a
    /// subreaper, `root` inherits every orphan of its tree, so none can leave it.
    fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut parent_of = std::collections::HashMap::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<libc::pid_t>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // `pid (comm) state ppid …`; comm may hold anything, so split after its
            // last parenthesis.
            let Some((_, after)) = stat.rsplit_once(')') else {
                continue;
            };
            let mut fields = after.split_whitespace();
            let state = fields.next().unwrap_or("");
            let Some(ppid) = fields.next().and_then(|p| p.parse::<libc::pid_t>().ok()) else {
                continue;
            };
            parent_of.insert(pid, (ppid, state == "Z" || state == "X"));
        }
        let below = |pid: libc::pid_t| {
            let mut at = pid;
            for _ in 0..parent_of.len() {
                match parent_of.get(&at) {
                    Some(&(ppid, _)) if ppid == root => return true,
                    Some(&(ppid, _)) if ppid > 1 && ppid != at => at = ppid,
                    _ => return false,
                }
            }
            false
        };
        parent_of
            .iter()
            .filter(|&(&pid, &(_, dead))| !dead && pid != root && below(pid))
            .map(|(&pid, _)| pid)
            .collect()
    }

    fn signal_all(pids: &[libc::pid_t], signal: libc::c_int) {
        for &pid in pids {
            // SAFETY: kill(2) has no memory preconditions; a gone pid is ESRCH.
            unsafe {
                libc::kill(pid, signal);
            }
        }
    }

    /// Wait up to `limit` for a child to change state (the signalfd wakes us).
    fn nap(sigfd: RawFd, limit: Duration) {
        let mut fd = libc::pollfd {
            fd: sigfd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = limit.as_millis().clamp(1, 1000) as libc::c_int;
        // SAFETY: one live pollfd.
        if unsafe { libc::poll(&mut fd, 1, ms) } == 1 {
            while read_signal(sigfd).is_some() {}
        }
    }

    /// End every process below us: SIGTERM, the grace (cut short when the tree is
    /// empty), then SIGKILL until none is left. Returns the agent's wait status.
    fn teardown(agent: libc::pid_t, sigfd: RawFd, ending: Ending) -> Option<libc::c_int> {
        let me = std::process::id() as libc::pid_t;
        let mut agent_status = match ending {
            Ending::AgentExited(status) => Some(status),
            Ending::HostGone | Ending::Signalled => None,
        };
        let mut remember = |status: Option<libc::c_int>| {
            if agent_status.is_none() {
                agent_status = status;
            }
        };
        let tree = descendants(me);
        if tree.is_empty() {
            remember(reap_all(agent, sigfd, FINAL_REAP_LIMIT));
            return agent_status;
        }
        // The agent's group first (helpers that share it), then every process found.
        // SAFETY: kill(2) on the agent's group; ESRCH when it is gone.
        unsafe {
            libc::kill(-agent, libc::SIGTERM);
        }
        signal_all(&tree, libc::SIGTERM);
        let deadline = Instant::now() + TEARDOWN_GRACE;
        loop {
            remember(reap(agent));
            if descendants(me).is_empty() {
                // What died during the walk is a zombie the walk skipped.
                remember(reap_all(agent, sigfd, FINAL_REAP_LIMIT));
                return agent_status;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            nap(sigfd, left.min(Duration::from_millis(50)));
        }
        let deadline = Instant::now() + KILL_SWEEP_LIMIT;
        loop {
            let tree = descendants(me);
            if tree.is_empty() || Instant::now() >= deadline {
                remember(reap_all(agent, sigfd, FINAL_REAP_LIMIT));
                return agent_status;
            }
            signal_all(&tree, libc::SIGKILL);
            remember(reap(agent));
            nap(sigfd, Duration::from_millis(20));
        }
    }

    /// Our exit mirrors the agent's: its code, or death by its signal.
    fn exit_code(status: Option<libc::c_int>) -> i32 {
        let Some(status) = status else {
            return 1;
        };
        if libc::WIFEXITED(status) {
            return libc::WEXITSTATUS(status);
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            // SAFETY: restoring the default disposition and raising the signal on
            // ourselves, unblocked, to die the way the agent did.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, sig);
                libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
                libc::raise(sig);
            }
            return 128 + sig;
        }
        1
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// Elsewhere there is no subreaper: the agent replaces the supervisor.
    pub(super) fn run(plan: Plan) -> i32 {
        let err = std::process::Command::new(&plan.program)
            .args(&plan.args)
            .exec();
        eprintln!(
            "missionboard supervise: cannot start unit program {}: {err}",
            Path::new(&plan.program).display()
        );
        EXIT_CANNOT_START
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_round_trips() {
        let argv = command_args(
            7,
            Some(9),
            Path::new("/usr/bin/agent"),
            &["--acp".into(), "--".into()],
        );
        assert_eq!(argv[0], SUBCOMMAND);
        let plan = Plan::parse(&argv[1..]).unwrap();
        assert_eq!(
            plan,
            Plan {
                lifeline: 7,
                landlock: Some(9),
                program: "/usr/bin/agent".into(),
                args: vec!["--acp".into(), "--".into()],
            }
        );
        assert!(Plan::parse(&["--".into(), "x".into()]).is_err());
        assert!(Plan::parse(&[LIFELINE_FLAG.into(), "1".into(), "--".into(), "x".into()]).is_err());
    }
}
