//! The unit's child process: environment scrubbing, spawning it under its
//! supervisor (in its own process group, holding the lifeline), the stderr ring, the
//! reaper, and the teardown.
//!
//! Nothing here knows about ACP; `super` wires the pipes into a connection.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::watch;

/// How much of a unit's stderr we keep: enough for a useful error message,
/// bounded so a chatty agent cannot grow the host's memory.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// The name patterns of host variables that look like credentials (`*` is any
/// text, case-insensitive). The README lists the same patterns.
pub const SECRET_NAME_PATTERNS: &[&str] = &[
    "*_TOKEN",
    "*_KEY",
    "*_SECRET",
    "*PASS*",
    "*PASSWD*",
    "*PASSWORD*",
    "*APIKEY*",
    "*AUTH*",
    "*CREDENTIAL*",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
];

/// True for host variables that look like credentials: a name matching
/// [`SECRET_NAME_PATTERNS`]. Agents get the user's privileges already; we at least
/// avoid handing every unit every secret.
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PATTERNS
        .iter()
        .any(|p| match (p.strip_prefix('*'), p.strip_suffix('*')) {
            (Some(_), Some(_)) => upper.contains(p.trim_matches('*')),
            (Some(suffix), None) => upper.ends_with(suffix),
            _ => upper == *p,
        })
}

/// True for a value that carries a credential whatever its name: a URL with
/// userinfo (`https://user:token@host/…`).
pub fn is_secret_value(value: &OsStr) -> bool {
    let value = value.to_string_lossy();
    value.split_whitespace().any(|word| {
        word.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && rest
                    .split(['/', '?', '#'])
                    .next()
                    .is_some_and(|authority| authority.contains('@'))
        })
    })
}

/// The environment a unit starts with: the host's, minus anything that looks
/// like a secret (unless the declaration names it), with the declared
/// variables merged over the top. Host variables need not be UTF-8.
pub fn unit_environment(
    host: impl IntoIterator<Item = (OsString, OsString)>,
    declared: &BTreeMap<String, String>,
) -> BTreeMap<OsString, OsString> {
    let mut env: BTreeMap<OsString, OsString> = host
        .into_iter()
        .filter(|(name, value)| {
            let name = name.to_string_lossy();
            declared.contains_key(name.as_ref())
                || !(is_secret_name(&name) || is_secret_value(value))
        })
        .collect();
    for (name, value) in declared {
        env.insert(name.into(), value.into());
    }
    env
}

/// How a unit's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit code, when the process exited normally.
    pub code: Option<i32>,
    /// The signal that killed it, when it did not.
    pub signal: Option<i32>,
}

impl ExitInfo {
    fn from_status(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        ExitInfo {
            code: status.code(),
            signal: status.signal(),
        }
    }
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exit code {code}"),
            (None, Some(sig)) => write!(f, "killed by signal {sig}"),
            (None, None) => f.write_str("unknown exit status"),
        }
    }
}

/// A bounded tail of the child's stderr, shared with the reader task.
#[derive(Clone)]
pub struct StderrTail {
    ring: Arc<Mutex<VecDeque<u8>>>,
    /// Becomes true when the pipe reaches EOF.
    drained: watch::Receiver<bool>,
}

impl StderrTail {
    fn new() -> (StderrTail, watch::Sender<bool>) {
        let (tx, rx) = watch::channel(false);
        (
            StderrTail {
                ring: Arc::default(),
                drained: rx,
            },
            tx,
        )
    }

    fn push(&self, bytes: &[u8]) {
        let mut ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        ring.extend(bytes);
        let excess = ring.len().saturating_sub(STDERR_TAIL_BYTES);
        ring.drain(..excess);
    }

    /// The retained tail as text (lossy: agents may write anything).
    pub fn text(&self) -> String {
        let ring = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = ring.as_slices();
        let mut bytes = Vec::with_capacity(ring.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Wait (bounded) until the pipe is drained, so an error message built
    /// right after the child died includes its last words. Bounded because
    /// a grandchild may hold the pipe open long after the child is gone.
    pub async fn settle(&self, limit: Duration) {
        let mut rx = self.drained.clone();
        let _ = tokio::time::timeout(limit, rx.wait_for(|done| *done)).await;
    }
}

/// How long an error message waits for the last of a dead child's stderr.
pub const STDERR_SETTLE: Duration = Duration::from_millis(300);

/// A spawned unit: the pid is its supervisor's (`missionboard supervise`), the
/// agent's parent, whose exit mirrors the agent's. The `Child` itself lives in the
/// reaper task so that exactly one place waits on it; everyone else watches `exit`.
pub struct UnitProcess {
    pub pid: u32,
    pub stderr: StderrTail,
    exit: watch::Receiver<Option<ExitInfo>>,
    /// The write end of the supervisor's lifeline. Only this process holds it
    /// (close-on-exec), so it closes when the unit is dropped or the host dies by any
    /// means, and the supervisor then ends the unit's whole tree.
    _lifeline: OwnedFd,
}

pub struct SpawnedPipes {
    pub stdin: pipe::Sender,
    pub stdout: pipe::Receiver,
}

/// Spawn `program` in `cwd` with exactly `env`, under its supervisor (`supervisor
/// supervise …`, normally this very binary) in a fresh process group, inside
/// `confinement` when one is given (the ruleset was built by the caller, before the
/// spawn; the supervisor applies it to the agent only, staying outside to watch the
/// tree).
pub fn spawn(
    supervisor: &Path,
    program: &Path,
    args: &[String],
    env: &BTreeMap<OsString, OsString>,
    cwd: &Path,
    confinement: Option<crate::confine::Prepared>,
) -> std::io::Result<(UnitProcess, SpawnedPipes)> {
    // A program that is not there fails here, as a spawn error, rather than as
    // the supervisor's exit.
    ensure_runnable(program, env, cwd)?;
    let (lifeline_read, lifeline_write) = super::spawn::pipe()?;
    let ruleset = match confinement {
        Some(prepared) => Some(
            prepared
                .into_fd()
                .ok_or_else(|| std::io::Error::from_raw_os_error(libc::ENOSYS))?,
        ),
        None => None,
    };
    // The supervisor finds its lifeline and ruleset at fixed numbers.
    let mut pass = vec![(lifeline_read.as_raw_fd(), SUPERVISOR_LIFELINE_FD)];
    pass.extend(
        ruleset
            .as_ref()
            .map(|fd| (fd.as_raw_fd(), SUPERVISOR_RULESET_FD)),
    );
    let args = crate::supervise::command_args(
        SUPERVISOR_LIFELINE_FD,
        ruleset.as_ref().map(|_| SUPERVISOR_RULESET_FD),
        program,
        args,
    );
    // Its own process group: a Ctrl-C on the host's terminal does not reach the
    // unit directly; the host ends it through its supervisor.
    let child = super::spawn::spawn(supervisor, &args, env, cwd, &pass).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!("the unit supervisor {}: {e}", supervisor.display()),
        )
    })?;
    // The supervisor holds its own copies now.
    drop((lifeline_read, ruleset));
    let super::spawn::Spawned {
        pid: child_pid,
        stdin,
        stdout,
        stderr: stderr_pipe,
    } = child;
    let pid = child_pid as u32;
    let (stderr, drained) = StderrTail::new();
    tokio::spawn(pump_stderr(stderr_pipe, stderr.clone(), drained, pid));

    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let info = match super::spawn::wait(child_pid).await {
            Ok(status) => ExitInfo::from_status(status),
            Err(err) => {
                tracing::warn!(pid, %err, "waiting on unit process failed");
                ExitInfo {
                    code: None,
                    signal: None,
                }
            }
        };
        tracing::debug!(pid, %info, "unit process exited");
        let _ = exit_tx.send(Some(info));
    });

    Ok((
        UnitProcess {
            pid,
            stderr,
            exit: exit_rx,
            _lifeline: lifeline_write,
        },
        SpawnedPipes { stdin, stdout },
    ))
}

/// Where the supervisor finds its lifeline and its Landlock ruleset.
const SUPERVISOR_LIFELINE_FD: std::os::fd::RawFd = 3;
const SUPERVISOR_RULESET_FD: std::os::fd::RawFd = 4;

/// `program` names an executable file: a path-shaped word relative to `cwd`, a bare
/// name on the `PATH` of `env` (where the agent's exec looks).
fn ensure_runnable(
    program: &Path,
    env: &BTreeMap<OsString, OsString>,
    cwd: &Path,
) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if program.as_os_str().as_encoded_bytes().contains(&b'/') {
        runnable(&cwd.join(program))
    } else {
        env.get(OsStr::new("PATH"))
            .is_some_and(|path| std::env::split_paths(path).any(|dir| runnable(&dir.join(program))))
    };
    if found {
        Ok(())
    } else {
        Err(std::io::Error::from(std::io::ErrorKind::NotFound))
    }
}

async fn pump_stderr(
    mut pipe: pipe::Receiver,
    tail: StderrTail,
    drained: watch::Sender<bool>,
    pid: u32,
) {
    let mut buf = [0u8; 4096];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.push(&buf[..n]);
                tracing::trace!(pid, stderr = %String::from_utf8_lossy(&buf[..n]), "unit stderr");
            }
        }
    }
    let _ = drained.send(true);
}

impl UnitProcess {
    /// The exit status, if the process has been reaped.
    pub fn exited(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// [`Self::wait_exit`], then (if it exited) give its stderr a moment to
    /// drain: for building error messages.
    pub async fn wait_exit_for_report(&self, limit: Duration) -> Option<ExitInfo> {
        let status = self.wait_exit(limit).await;
        if status.is_some() {
            self.stderr.settle(STDERR_SETTLE).await;
        }
        status
    }

    /// Wait up to `limit` for the process to be reaped.
    pub async fn wait_exit(&self, limit: Duration) -> Option<ExitInfo> {
        let mut rx = self.exit.clone();
        let waited = tokio::time::timeout(limit, rx.wait_for(|s| s.is_some())).await;
        match waited {
            Ok(Ok(status)) => *status,
            _ => self.exited(),
        }
    }

    /// Signal the supervisor (alone in its process group). Errors (ESRCH: it is
    /// gone) are expected during teardown and ignored.
    pub fn signal_group(&self, signal: libc::c_int) {
        let Ok(pgid) = libc::pid_t::try_from(self.pid) else {
            return;
        };
        // SAFETY: kill(2) has no memory-safety preconditions; a negative pid
        // addresses the process group we created with process_group(0).
        unsafe {
            libc::kill(-pgid, signal);
        }
    }

    /// Have the supervisor end the unit's whole tree now (its SIGTERM, grace and
    /// SIGKILL), without waiting for it.
    pub fn tear_down(&self) {
        self.signal_group(libc::SIGTERM);
    }

    /// The escalation after stdin has been closed: a grace period for the agent to
    /// leave on its own, then the supervisor's teardown of the tree (its own grace,
    /// then SIGKILL for what remains), and only if the supervisor itself does not
    /// exit in time, SIGKILL for it.
    pub async fn terminate(&self, grace: Duration) -> Option<ExitInfo> {
        if let Some(info) = self.wait_exit(grace).await {
            return Some(info);
        }
        self.tear_down();
        let teardown = crate::supervise::TEARDOWN_GRACE + SUPERVISOR_SLACK;
        if let Some(info) = self.wait_exit(teardown).await {
            return Some(info);
        }
        tracing::warn!(pid = self.pid, "unit supervisor did not exit; killing it");
        self.signal_group(libc::SIGKILL);
        self.wait_exit(Duration::from_secs(5)).await
    }
}

/// Beyond its grace, how long a supervisor may take to kill and reap a tree.
const SUPERVISOR_SLACK: Duration = Duration::from_secs(8);

/// How a command run under a unit's supervisor ended ([`run_supervised`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SupervisedEnd {
    /// It exited (or was killed by a signal) within its time.
    Exited(ExitInfo),
    /// It ran past its time and its tree was ended.
    TimedOut,
    /// It could not be started at all.
    NotStarted(String),
}

/// What a command run under a unit's supervisor did: how it ended and the tail of
/// its output (stdout and stderr as one stream, at most `tail_bytes`, lossy UTF-8,
/// not yet sanitized).
#[derive(Debug, Clone)]
pub struct SupervisedRun {
    pub end: SupervisedEnd,
    pub output: String,
}

/// Run `sh -c <command>` in `cwd` with exactly `env`, the way a unit is run: under
/// its own supervisor (whose tree ends with it, or with this process), inside
/// `confinement` when one is given, stdin closed. Waited on asynchronously (no
/// thread waits on it); past `timeout` its whole tree is ended.
pub async fn run_supervised(
    supervisor: &Path,
    command: &str,
    env: &BTreeMap<OsString, OsString>,
    cwd: &Path,
    confinement: Option<crate::confine::Prepared>,
    timeout: Duration,
    tail_bytes: usize,
) -> SupervisedRun {
    // One stream, in the order the command wrote it: the shell sends its stderr to
    // its stdout before it runs the command.
    let script = format!("exec 2>&1\n{command}");
    let args = ["-c".to_string(), script];
    let spawned = spawn(
        supervisor,
        Path::new("/bin/sh"),
        &args,
        env,
        cwd,
        confinement,
    );
    let (unit, pipes) = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            return SupervisedRun {
                end: SupervisedEnd::NotStarted(e.to_string()),
                output: String::new(),
            };
        }
    };
    // The command reads nothing: its stdin is closed at once.
    drop(pipes.stdin);
    let ring = Arc::new(Mutex::new(VecDeque::<u8>::new()));
    let reader = {
        let ring = ring.clone();
        let mut stdout = pipes.stdout;
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            loop {
                match stdout.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut r = ring.lock().unwrap_or_else(|e| e.into_inner());
                        r.extend(&buf[..n]);
                        let excess = r.len().saturating_sub(tail_bytes);
                        r.drain(..excess);
                    }
                }
            }
        })
    };
    let end = match unit.wait_exit(timeout).await {
        Some(info) => SupervisedEnd::Exited(info),
        None => {
            unit.terminate(Duration::ZERO).await;
            SupervisedEnd::TimedOut
        }
    };
    // The tree is gone (the supervisor ends it before it exits): what it wrote is
    // read to its end, bounded in case a descendant escaped with the pipe.
    let _ = tokio::time::timeout(STDERR_SETTLE, reader).await;
    unit.stderr.settle(STDERR_SETTLE).await;
    let mut bytes: Vec<u8> = ring
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .copied()
        .collect();
    // What the supervisor itself said (a command it could not start).
    let said = unit.stderr.text();
    if !said.trim().is_empty() {
        bytes.extend(said.as_bytes());
        let excess = bytes.len().saturating_sub(tail_bytes);
        bytes.drain(..excess);
    }
    SupervisedRun {
        end,
        output: String::from_utf8_lossy(&bytes).into_owned(),
    }
}
