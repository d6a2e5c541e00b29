//! The board loses its terminal (a closed tmux pane, an SSH drop): it leaves as a
//! quit would — its units stop, their missions stay open — writes nothing more to the
//! terminal, exits nonzero, and says why in one log line. Run in a real
//! pseudo-terminal whose master side is then closed.

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use crate::harness::{Sandbox, wait_for};

/// A fresh pseudo-terminal: (master, slave).
fn open_pty() -> (std::fs::File, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors we then own; the other pointers are null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty failed: {}", std::io::Error::last_os_error());
    // SAFETY: fcntl on the descriptors just opened. The board must not inherit the
    // master: closing it here is the terminal going away.
    unsafe {
        libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC);
        libc::fcntl(slave, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    // SAFETY: both descriptors were just opened for us.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            OwnedFd::from_raw_fd(slave),
        )
    }
}

#[test]
fn the_board_leaves_cleanly_when_its_terminal_goes_away() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let (master, slave) = open_pty();
    let mut cmd = sb.command(&["board"]);
    cmd.env("TERM", "xterm-256color")
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    let slave_fd = slave.as_raw_fd();
    // SAFETY: setsid and TIOCSCTTY in the forked child, both async-signal-safe: the
    // pty becomes the board's controlling terminal, as a terminal emulator's is.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            let _ = slave_fd;
            Ok(())
        });
    }
    let mut board = cmd.spawn().expect("start the board");
    drop(slave);

    // The board draws: its frame reaches the master side (read without blocking,
    // so the master stays the one descriptor to close).
    // SAFETY: fcntl on a descriptor we own.
    unsafe { libc::fcntl(master.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
    let mut screen = Vec::new();
    let read_some = |screen: &mut Vec<u8>| {
        let mut buf = [0u8; 4096];
        while let Ok(n) = (&master).read(&mut buf) {
            if n == 0 {
                break;
            }
            screen.extend_from_slice(&buf[..n]);
        }
    };
    wait_for(30, "the board to draw its first frame", || {
        read_some(&mut screen);
        let text = String::from_utf8_lossy(&screen);
        (text.contains("\u{1b}[?1049h") && screen.len() > 200).then_some(())
    });

    // The terminal goes away.
    drop(master);
    let status = match missionboard::clock::poll_until_blocking(
        std::time::Duration::from_secs(30),
        std::time::Duration::from_millis(20),
        || board.try_wait().unwrap(),
    ) {
        Some(status) => status,
        None => {
            let _ = board.kill();
            panic!("the board did not exit; its log:\n{}", sb.log_text());
        }
    };
    assert_eq!(
        status.code(),
        Some(1),
        "a lost terminal is a nonzero exit, not a panic (101) or a signal: {status:?}"
    );
    let log = sb.log_text();
    let lost: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("board: the terminal went away"))
        .collect();
    assert_eq!(lost.len(), 1, "one line says so:\n{log}");
    assert!(
        lost[0].contains(
            "leaving as quitting would: this board's units stop, their missions stay open"
        ),
        "{}",
        lost[0]
    );
    assert!(!log.contains("panic"), "no panic:\n{log}");
}
