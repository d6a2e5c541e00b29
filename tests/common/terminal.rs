//! A real terminal for black-box tests, in process: a pseudo-terminal whose slave
//! side runs an interactive bash with job control (as an operator's terminal does, so
//! Ctrl-Z really stops a job and `fg` brings it back), and whose master side this
//! process reads into a terminal-emulator parser to see the screen as a user would.
//! Keys are written to the master as a terminal writes them.

use std::ffi::CStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use missionboard::clock::poll_until_blocking;

/// What the master side has received: the parsed screen, and every byte as written.
struct Seen {
    parser: vt100::Parser,
    raw: Vec<u8>,
    /// When bytes last arrived.
    last_output: Instant,
}

/// An interactive bash in a pseudo-terminal of its own, killed (with everything it
/// started in its session) on drop.
pub struct Terminal {
    /// The master side, for keys and the window size.
    master: File,
    shell: Child,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
}

fn check(what: &str, rc: libc::c_int) {
    assert!(
        rc >= 0,
        "{what} failed: {}",
        std::io::Error::last_os_error()
    );
}

/// A new pseudo-terminal pair `(master, slave)`, neither inherited by children.
fn open_pty() -> (OwnedFd, OwnedFd) {
    // SAFETY: plain libc calls on descriptors this function owns; each result is checked.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        check("posix_openpt", master);
        let master = OwnedFd::from_raw_fd(master);
        check("grantpt", libc::grantpt(master.as_raw_fd()));
        check("unlockpt", libc::unlockpt(master.as_raw_fd()));
        let mut name = [0 as libc::c_char; 128];
        let rc = libc::ptsname_r(master.as_raw_fd(), name.as_mut_ptr(), name.len());
        assert_eq!(
            rc,
            0,
            "ptsname_r failed: {}",
            std::io::Error::from_raw_os_error(rc)
        );
        let slave = libc::open(
            CStr::from_ptr(name.as_ptr()).as_ptr(),
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        check("open the pty's slave", slave);
        (master, OwnedFd::from_raw_fd(slave))
    }
}

fn set_window_size(master: &File, cols: u16, rows: u16) {
    let size = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads the winsize this borrows, on a descriptor we own.
    let rc = unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &size) };
    check("TIOCSWINSZ", rc);
}

/// The bytes a terminal sends for a key named as tmux names them (`Enter`, `Escape`,
/// `C-x`, `Up`…); any other name is typed as it is.
fn key_bytes(key: &str) -> Vec<u8> {
    let named: Option<&[u8]> = match key {
        "Enter" => Some(b"\r"),
        "Escape" => Some(b"\x1b"),
        "Tab" => Some(b"\t"),
        "BTab" => Some(b"\x1b[Z"),
        "BSpace" => Some(b"\x7f"),
        "Space" => Some(b" "),
        "Up" => Some(b"\x1b[A"),
        "Down" => Some(b"\x1b[B"),
        "Right" => Some(b"\x1b[C"),
        "Left" => Some(b"\x1b[D"),
        "Home" => Some(b"\x1b[H"),
        "End" => Some(b"\x1b[F"),
        "PageUp" | "PPage" => Some(b"\x1b[5~"),
        "PageDown" | "NPage" => Some(b"\x1b[6~"),
        "Delete" | "DC" => Some(b"\x1b[3~"),
        _ => None,
    };
    if let Some(bytes) = named {
        return bytes.to_vec();
    }
    if let Some(c) = key.strip_prefix("C-")
        && let [c] = c.as_bytes()
        && c.is_ascii_alphabetic()
    {
        return vec![c.to_ascii_lowercase() & 0x1f];
    }
    key.as_bytes().to_vec()
}

impl Terminal {
    /// `bash --norc --noprofile -i` with the prompt `$ ` in a `cols`x`rows` terminal,
    /// once its prompt is on screen.
    pub fn shell(cols: u16, rows: u16) -> Terminal {
        let (master, slave) = open_pty();
        let master = File::from(master);
        set_window_size(&master, cols, rows);
        let stdio = |fd: &OwnedFd| Stdio::from(fd.try_clone().expect("dup the pty's slave"));
        let mut bash = Command::new("bash");
        bash.args(["--norc", "--noprofile", "-i"])
            .env("PS1", "$ ")
            .env("TERM", "xterm-256color")
            .stdin(stdio(&slave))
            .stdout(stdio(&slave))
            .stderr(stdio(&slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a session of its
        // own, with the slave (its stdin) as the controlling terminal, as a terminal
        // emulator starts its shell.
        unsafe {
            bash.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let shell = bash.spawn().unwrap_or_else(|e| {
            panic!("the test terminal runs bash, which did not start ({e}): install bash")
        });
        drop(slave);

        let seen = Arc::new(Mutex::new(Seen {
            parser: vt100::Parser::new(
                rows.try_into().expect("rows > 0"),
                cols.try_into().expect("cols > 0"),
                0,
            ),
            raw: Vec::new(),
            last_output: Instant::now(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (seen, stop) = (seen.clone(), stop.clone());
            let mut from = master.try_clone().expect("dup the pty's master");
            std::thread::spawn(move || read_until_stopped(&mut from, &seen, &stop))
        };
        let term = Terminal {
            master,
            shell,
            seen,
            stop,
            reader: Some(reader),
        };
        term.wait_screen(10, "the shell prompt", |s| {
            s.lines().any(|l| l.trim_end() == "$")
        });
        term
    }

    /// The screen as text: every row, trailing blanks cut.
    pub fn screen(&self) -> String {
        let seen = self.seen.lock().unwrap();
        let screen = seen.parser.screen();
        let (_, cols) = screen.size();
        let mut text = String::new();
        for row in screen.rows(0, cols.get()) {
            text.push_str(row.trim_end());
            text.push('\n');
        }
        text
    }

    /// Type each key (see [`key_bytes`]), one write per key.
    pub fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.write(&key_bytes(key));
        }
    }

    /// Type `text` as it is.
    pub fn literal(&self, text: &str) {
        self.write(text.as_bytes());
    }

    fn write(&self, bytes: &[u8]) {
        (&self.master)
            .write_all(bytes)
            .expect("write to the terminal");
    }

    /// Resize the terminal: the screen takes the new size and the foreground job gets
    /// SIGWINCH, as when a terminal window is resized.
    pub fn resize(&self, cols: u16, rows: u16) {
        let mut seen = self.seen.lock().unwrap();
        seen.parser.screen_mut().set_size(
            rows.try_into().expect("rows > 0"),
            cols.try_into().expect("cols > 0"),
        );
        set_window_size(&self.master, cols, rows);
    }

    /// How many bytes the terminal has received so far: a mark for
    /// [`Terminal::output_since`].
    pub fn output_mark(&self) -> usize {
        self.seen.lock().unwrap().raw.len()
    }

    /// Every byte written to the terminal since `mark`, as written.
    pub fn output_since(&self, mark: usize) -> Vec<u8> {
        self.seen.lock().unwrap().raw[mark..].to_vec()
    }

    /// Wait until the screen satisfies `cond`, with a deadline, returning it. It is
    /// judged only between frames (nothing arrived for a moment): a program writes a
    /// frame in several chunks, and a screen read between two of them is half old.
    #[track_caller]
    pub fn wait_screen(&self, secs: u64, what: &str, cond: impl Fn(&str) -> bool) -> String {
        const BETWEEN_FRAMES: Duration = Duration::from_millis(40);
        let mut screen = String::new();
        let seen =
            poll_until_blocking(Duration::from_secs(secs), Duration::from_millis(50), || {
                let quiet = self.seen.lock().unwrap().last_output.elapsed() >= BETWEEN_FRAMES;
                screen = self.screen();
                (quiet && cond(&screen)).then(|| screen.clone())
            });
        match seen {
            Some(screen) => screen,
            None => panic!("timed out waiting for {what}; screen:\n{screen}"),
        }
    }

    /// The screen once nothing has arrived for a while (a frame is not half drawn).
    #[track_caller]
    /// Send `keys`, then the screen once the program has answered them with output
    /// and gone quiet: a screen read before its answer came would be the old one.
    pub fn settled_after(&self, keys: &[&str]) -> String {
        let before = self.seen.lock().unwrap().raw.len();
        self.keys(keys);
        let answered =
            poll_until_blocking(Duration::from_secs(10), Duration::from_millis(20), || {
                (self.seen.lock().unwrap().raw.len() > before).then_some(())
            });
        assert!(
            answered.is_some(),
            "nothing was drawn after {keys:?}:\n{}",
            self.screen()
        );
        self.settled()
    }

    pub fn settled(&self) -> String {
        const QUIET: Duration = Duration::from_millis(300);
        let quiet = poll_until_blocking(Duration::from_secs(10), Duration::from_millis(50), || {
            let seen = self.seen.lock().unwrap();
            (seen.last_output.elapsed() >= QUIET).then_some(())
        });
        assert!(
            quiet.is_some(),
            "the terminal never went quiet:\n{}",
            self.screen()
        );
        self.screen()
    }
}

/// Feed the master's output to the parser until the slave side is gone or `stop`.
fn read_until_stopped(from: &mut File, seen: &Mutex<Seen>, stop: &AtomicBool) {
    let mut buf = [0u8; 8192];
    while !stop.load(Ordering::SeqCst) {
        let mut ready = libc::pollfd {
            fd: from.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll on one pollfd this frame owns; the timeout lets `stop` be seen.
        let n = unsafe { libc::poll(&mut ready, 1, 50) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if n == 0 {
            continue;
        }
        match from.read(&mut buf) {
            // EIO: every holder of the slave side has closed it.
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let mut seen = seen.lock().unwrap();
                seen.raw.extend_from_slice(&buf[..n]);
                seen.parser.process(&buf[..n]);
                seen.last_output = Instant::now();
            }
        }
    }
}

/// Pids of the live processes in session `sid`.
fn session_members(sid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_string_lossy().parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // After the command name: state, ppid, pgrp, session.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let in_session = fields.get(3)?.parse::<u32>().ok()? == sid;
            (in_session && fields.first() != Some(&"Z")).then_some(pid)
        })
        .collect()
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // The terminal goes away, as when its window is closed: SIGHUP to the session.
        let sid = self.shell.id();
        for pid in session_members(sid) {
            // SAFETY: signalling processes of the session this terminal started.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGHUP) };
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGCONT) };
        }
        let gone = poll_until_blocking(Duration::from_secs(5), Duration::from_millis(20), || {
            session_members(sid).is_empty().then_some(())
        });
        if gone.is_none() {
            for pid in session_members(sid) {
                // SAFETY: as above; what ignored the hangup is killed.
                unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            }
        }
        let _ = self.shell.wait();
        self.stop.store(true, Ordering::SeqCst);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}
