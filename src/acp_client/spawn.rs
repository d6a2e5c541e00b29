//! Spawning a unit's supervisor with `posix_spawn`, handing it descriptors beyond
//! its stdio through the spawn's own file actions.
//!
//! The supervisor inherits two descriptors besides its pipes (its lifeline and,
//! when confined, its Landlock ruleset). Clearing their close-on-exec flag in a
//! `pre_exec` step would make the host `fork` itself for every unit — copying its
//! page tables and turning each page it writes afterwards into a fault — where
//! `posix_spawn` (a `vfork`-like clone) costs neither. Making them inheritable in
//! the host instead would leak them to whatever else the host spawns meanwhile.
//! Here each is duplicated onto a fixed number in the child only, by the spawn.

use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;

/// A spawned child: its pid and the host's ends of its stdin, stdout and stderr.
pub(super) struct Spawned {
    pub pid: libc::pid_t,
    pub stdin: tokio::net::unix::pipe::Sender,
    pub stdout: tokio::net::unix::pipe::Receiver,
    pub stderr: tokio::net::unix::pipe::Receiver,
}

/// Spawn `program` with `args` in `cwd`, with exactly `env`, in a process group of
/// its own, its stdio on fresh pipes, and each `(descriptor, number)` of `pass`
/// open as that number in the child (numbers above 2); nothing else of the host's
/// is inherited. Signal dispositions and mask start as a fresh process's.
pub(super) fn spawn(
    program: &Path,
    args: &[OsString],
    env: &BTreeMap<OsString, OsString>,
    cwd: &Path,
    pass: &[(RawFd, RawFd)],
) -> io::Result<Spawned> {
    let c = |bytes: &[u8]| {
        CString::new(bytes).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "a NUL byte in an argument, the environment or the path",
            )
        })
    };
    // The spawn changes directory before it executes: a relative program would be
    // looked up from `cwd`.
    let program = std::path::absolute(program)?;
    let path = c(program.as_os_str().as_bytes())?;
    let argv = std::iter::once(Ok(path.clone()))
        .chain(args.iter().map(|a| c(a.as_bytes())))
        .collect::<io::Result<Vec<_>>>()?;
    let envp = env
        .iter()
        .map(|(k, v)| c(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
        .collect::<io::Result<Vec<_>>>()?;
    let dir = c(cwd.as_os_str().as_bytes())?;

    let (stdin_child, stdin_host) = pipe()?;
    let (stdout_host, stdout_child) = pipe()?;
    let (stderr_host, stderr_child) = pipe()?;
    // Every source is first copied above the numbers the child gets, so no dup2
    // of the spawn overwrites a source another one still needs.
    let mut mapping = vec![
        (above_targets(stdin_child.as_raw_fd())?, 0),
        (above_targets(stdout_child.as_raw_fd())?, 1),
        (above_targets(stderr_child.as_raw_fd())?, 2),
    ];
    for &(fd, number) in pass {
        debug_assert!(
            (3..ABOVE_TARGETS).contains(&number),
            "fd {number} out of range"
        );
        mapping.push((above_targets(fd)?, number));
    }

    let mut pid: libc::pid_t = 0;
    // SAFETY: the file actions and attributes are initialised before use and
    // destroyed on every path; every pointer handed to posix_spawn points into a
    // CString or array that outlives the call.
    unsafe {
        let mut actions: libc::posix_spawn_file_actions_t = std::mem::zeroed();
        let mut attrs: libc::posix_spawnattr_t = std::mem::zeroed();
        check(libc::posix_spawn_file_actions_init(&mut actions))?;
        if let Err(e) = check(libc::posix_spawnattr_init(&mut attrs)) {
            libc::posix_spawn_file_actions_destroy(&mut actions);
            return Err(e);
        }
        let spawned = (|| {
            for (source, number) in &mapping {
                // dup2 leaves the copy without close-on-exec: only these cross.
                check(libc::posix_spawn_file_actions_adddup2(
                    &mut actions,
                    source.as_raw_fd(),
                    *number,
                ))?;
            }
            check(libc::posix_spawn_file_actions_addchdir_np(
                &mut actions,
                dir.as_ptr(),
            ))?;
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            check(libc::posix_spawnattr_setsigmask(&mut attrs, &none))?;
            // The host ignores SIGPIPE (as every Rust program does); the child
            // starts with it at its default, as a shell would start it.
            let mut defaults: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut defaults);
            libc::sigaddset(&mut defaults, libc::SIGPIPE);
            check(libc::posix_spawnattr_setsigdefault(&mut attrs, &defaults))?;
            check(libc::posix_spawnattr_setpgroup(&mut attrs, 0))?;
            let flags = libc::POSIX_SPAWN_SETPGROUP
                | libc::POSIX_SPAWN_SETSIGMASK
                | libc::POSIX_SPAWN_SETSIGDEF;
            check(libc::posix_spawnattr_setflags(
                &mut attrs,
                flags as libc::c_short,
            ))?;
            let mut argv_ptrs: Vec<*mut libc::c_char> =
                argv.iter().map(|a| a.as_ptr().cast_mut()).collect();
            argv_ptrs.push(std::ptr::null_mut());
            let mut envp_ptrs: Vec<*mut libc::c_char> =
                envp.iter().map(|e| e.as_ptr().cast_mut()).collect();
            envp_ptrs.push(std::ptr::null_mut());
            check(libc::posix_spawn(
                &mut pid,
                path.as_ptr(),
                &actions,
                &attrs,
                argv_ptrs.as_ptr(),
                envp_ptrs.as_ptr(),
            ))
        })();
        libc::posix_spawn_file_actions_destroy(&mut actions);
        libc::posix_spawnattr_destroy(&mut attrs);
        spawned?;
    }
    Ok(Spawned {
        pid,
        stdin: tokio::net::unix::pipe::Sender::from_owned_fd(stdin_host)?,
        stdout: tokio::net::unix::pipe::Receiver::from_owned_fd(stdout_host)?,
        stderr: tokio::net::unix::pipe::Receiver::from_owned_fd(stderr_host)?,
    })
}

/// Wait for child `pid` of this process to exit, and reap it: woken by its pidfd
/// on the runtime, so no thread waits per child (but on a kernel older than 5.3,
/// which has no pidfd).
pub(super) async fn wait(pid: libc::pid_t) -> io::Result<ExitStatus> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return tokio::task::spawn_blocking(move || waitpid(pid, 0))
            .await
            .map_err(io::Error::other)?
            .map(|status| status.expect("a blocking waitpid returns a status"));
    }
    // SAFETY: the descriptor was just opened and is owned by nothing else, and the
    // OwnedFd keeps it open, unchanged, for as long as the AsyncFd holds it.
    let pidfd = unsafe {
        AsyncFd::register_with_interest(OwnedFd::from_raw_fd(fd as RawFd), Interest::READABLE)
    }
    .map_err(|e| e.into_parts().1)?;
    loop {
        let mut ready = pidfd.readable().await?;
        match waitpid(pid, libc::WNOHANG)? {
            Some(status) => return Ok(status),
            None => ready.clear_ready(),
        }
    }
}

/// `waitpid` for child `pid`; `None`: still running (under `WNOHANG`).
fn waitpid(pid: libc::pid_t, options: libc::c_int) -> io::Result<Option<ExitStatus>> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid writes the status through a live pointer.
        return match unsafe { libc::waitpid(pid, &mut status, options) } {
            0 => Ok(None),
            -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            -1 => Err(io::Error::last_os_error()),
            _ => Ok(Some(ExitStatus::from_raw(status))),
        };
    }
}

/// A close-on-exec pipe: (read end, write end).
pub(super) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into a live array of two.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The lowest number a source is copied to before the spawn maps it.
const ABOVE_TARGETS: RawFd = 10;

/// A close-on-exec copy of `fd` numbered [`ABOVE_TARGETS`] or higher.
fn above_targets(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor this process holds returns a new one.
    let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, ABOVE_TARGETS) };
    if copy == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(copy) })
}

/// posix_spawn and its helpers return an error number rather than setting errno.
fn check(rc: libc::c_int) -> io::Result<()> {
    match rc {
        0 => Ok(()),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}
