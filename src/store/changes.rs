//! Push, not poll: how everyone who waits on the store learns that it may have
//! changed — a waiting run (`asks`), a bus subscriber (the fleet's teardown, the
//! oracle), the board's store thread, `mission fire`'s wait.
//!
//! Every commit to the file appends to its write-ahead log, so on Linux one inotify
//! watch per process on the database's directory (`board.db-wal` modified or created)
//! turns any process's commit into a tick here within microseconds. A tick carries
//! no authority and no content: the woken side re-reads the store and believes only
//! what it finds, so a spurious or forged event costs one read, never a decision.
//!
//! The log is written a moment before the commit becomes visible to readers (SQLite
//! then updates its shared index). So a log event is not yet a tick: the watcher
//! asks its own read-only connection for SQLite's `data_version` at once and again a
//! few times after the burst ([`SETTLE`]), and ticks when it has moved — once per
//! visible commit, however many writes the commit took, and never for a reader to
//! find nothing. (Without that connection every look ticks.) The index itself is
//! never opened outside SQLite: closing a descriptor of it would drop the locks
//! SQLite holds on it in this process.
//! Where inotify is unavailable (another OS, no instances left) nothing ticks and
//! every waiter falls back to its own poll period: slower, never wrong.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::watch;

use super::Location;
use crate::sync::LockUnpoisoned;

/// After the last event of a burst, look at the commit count again once this much
/// later each, quiet. The first is soon: the writer updates the shared index
/// microseconds after its last log write. The later ones cover a writer the
/// scheduler held up between the two; a look that finds nothing new wakes nobody.
const SETTLE: [Duration; 5] = [
    Duration::from_micros(300),
    Duration::from_millis(2),
    Duration::from_millis(10),
    Duration::from_millis(50),
    Duration::from_millis(250),
];
/// How often an idle watcher thread checks whether anyone still listens.
const IDLE: Duration = Duration::from_secs(1);

/// The change feed of one database file, shared by every handle in this process.
#[derive(Clone)]
pub struct Changes {
    feed: Arc<Feed>,
}

struct Feed {
    tick: watch::Sender<u64>,
    pushed: bool,
}

/// One waiter's view of the feed: what it has seen so far.
pub struct Waiter {
    rx: watch::Receiver<u64>,
}

impl Changes {
    /// The feed of the database at `location` (one watch per database per process):
    /// inotify on a SQLite file's log, LISTEN on a PostgreSQL database.
    pub fn of(location: &Location) -> Changes {
        static FEEDS: OnceLock<Mutex<HashMap<Location, Weak<Feed>>>> = OnceLock::new();
        let mut feeds = FEEDS.get_or_init(Default::default).lock_unpoisoned();
        feeds.retain(|_, f| f.strong_count() > 0);
        if let Some(feed) = feeds.get(location).and_then(Weak::upgrade) {
            return Changes { feed };
        }
        let (tick, _) = watch::channel(0u64);
        let feed = match location {
            Location::File(db) => {
                let watcher = inotify::Watch::start(db);
                let feed = Arc::new(Feed {
                    tick,
                    pushed: watcher.is_some(),
                });
                if let Some(w) = watcher {
                    w.run(Arc::downgrade(&feed));
                }
                feed
            }
            Location::Postgres(url) => {
                let feed = Arc::new(Feed { tick, pushed: true });
                listen::run(url.clone(), Arc::downgrade(&feed));
                feed
            }
        };
        feeds.insert(location.clone(), Arc::downgrade(&feed));
        Changes { feed }
    }

    /// How many commits (or trailing ticks) this process has been told of so far.
    pub fn heard(&self) -> u64 {
        *self.feed.tick.borrow()
    }

    /// True when commits are pushed; false when waiters only poll.
    pub fn pushed(&self) -> bool {
        self.feed.pushed
    }

    /// A waiter that has seen everything so far: subscribe before the first read,
    /// so a commit between that read and the wait is never missed.
    pub fn subscribe(&self) -> Waiter {
        Waiter {
            rx: self.feed.tick.subscribe(),
        }
    }
}

impl Waiter {
    /// Until the store may have changed since the last call (or the subscription),
    /// or `fallback` has passed — the poll period when nothing is pushed.
    pub async fn next(&mut self, fallback: Duration) {
        // A closed sender cannot happen while we hold the feed; fall back if it does.
        if tokio::time::timeout(fallback, self.rx.changed())
            .await
            .is_ok_and(|r| r.is_err())
        {
            tokio::time::sleep(fallback).await;
        }
    }
}

impl Feed {
    fn bump(&self) {
        self.tick.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// PostgreSQL: every commit that changed something runs `NOTIFY` on one channel
/// (`store::postgres`), and one connection per database per process LISTENs on it.
/// A dropped connection is re-established; while it is down, waiters poll.
mod listen {
    use std::sync::Weak;
    use std::time::Duration;

    use super::{Feed, IDLE};
    use crate::store::postgres::PgSession;

    pub fn run(url: String, feed: Weak<Feed>) {
        let spawned = std::thread::Builder::new()
            .name("store-listen".into())
            .spawn(move || keep_listening(&url, &feed));
        if let Err(e) = spawned {
            tracing::warn!("store changes: cannot start the listener thread ({e}); waiters poll");
        }
    }

    /// Hold one listening connection while anyone holds the feed; reconnect when the
    /// server drops it (a commit between two connections is not heard, so each new
    /// connection ticks once).
    fn keep_listening(url: &str, feed: &Weak<Feed>) {
        let mut retry = Duration::from_millis(100);
        // The first refusal of a streak is said (waiters fall back to re-reading on
        // their timeouts, which an operator sees as a slower board); retries are not.
        let mut refused = false;
        while feed.strong_count() > 0 {
            let for_listener = feed.clone();
            let client = PgSession::listen(url, move || match for_listener.upgrade() {
                Some(f) => {
                    f.bump();
                    true
                }
                None => false,
            });
            let client = match client {
                Ok(c) => c,
                Err(e) => {
                    if !refused {
                        tracing::warn!(
                            "store changes: cannot LISTEN for commits ({e}); waiters re-read on their timeouts until it can, retrying"
                        );
                        refused = true;
                    }
                    std::thread::sleep(retry);
                    retry = (retry * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            retry = Duration::from_millis(100);
            if std::mem::take(&mut refused) {
                tracing::info!("store changes: listening for commits again");
            }
            if let Some(f) = feed.upgrade() {
                f.bump();
            }
            while !client.is_closed() && feed.strong_count() > 0 {
                std::thread::sleep(IDLE);
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod inotify {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;
    use std::sync::Weak;

    use super::{Feed, IDLE, SETTLE};

    /// An inotify descriptor watching the database's directory, the two names in it
    /// that a commit writes, and a connection that tells when a commit is in.
    pub struct Watch {
        fd: OwnedFd,
        names: [Vec<u8>; 2],
        commits: Option<Commits>,
    }

    /// A read-only connection of the watcher's own, whose `data_version` moves with
    /// every commit any other connection makes, in this process or another. (The
    /// store's own `Store::data_version` cannot serve: it does not move for the
    /// commits of the connection it asks, and this process commits through that one.)
    pub(super) struct Commits {
        conn: rusqlite::Connection,
        /// The version last ticked for.
        ticked: Option<i64>,
    }

    impl Commits {
        pub(super) fn open(db: &Path) -> Option<Commits> {
            use rusqlite::OpenFlags;
            let conn = rusqlite::Connection::open_with_flags(
                db,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .ok()?;
            let mut commits = Commits { conn, ticked: None };
            commits.ticked = Some(commits.version()?);
            Some(commits)
        }

        fn version(&self) -> Option<i64> {
            self.conn
                .pragma_query_value(None, "data_version", |r| r.get(0))
                .ok()
        }

        /// Whether a commit came in since the last time this said so (when the
        /// version cannot be read, say it did: a spurious tick costs one read).
        pub(super) fn moved(&mut self) -> bool {
            let now = self.version();
            let moved = now.is_none() || now != self.ticked;
            self.ticked = now;
            moved
        }
    }

    impl Watch {
        /// `None` when the watch cannot be set up (the caller polls instead).
        pub fn start(db: &Path) -> Option<Watch> {
            let name = db.file_name()?.as_bytes().to_vec();
            let dir = match db.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            let mut wal = name.clone();
            wal.extend_from_slice(b"-wal");
            let dir = CString::new(dir.as_os_str().as_bytes()).ok()?;
            // SAFETY: plain syscalls; the descriptor is owned by `fd` from here on.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if fd < 0 {
                tracing::debug!(
                    "store changes: inotify unavailable ({}); waiters poll",
                    std::io::Error::last_os_error()
                );
                return None;
            }
            // SAFETY: `fd` is a fresh descriptor nobody else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let mask = libc::IN_MODIFY | libc::IN_CREATE | libc::IN_MOVED_TO;
            // SAFETY: `dir` is a valid NUL-terminated path.
            if unsafe { libc::inotify_add_watch(fd.as_raw_fd(), dir.as_ptr(), mask) } < 0 {
                tracing::debug!(
                    "store changes: cannot watch {dir:?} ({}); waiters poll",
                    std::io::Error::last_os_error()
                );
                return None;
            }
            // Opened once the watch is set, so every commit after it moves it.
            Some(Watch {
                fd,
                names: [wal, name],
                commits: Commits::open(db),
            })
        }

        /// Tick `feed` on every commit until nobody holds it.
        pub fn run(self, feed: Weak<Feed>) {
            let spawned = std::thread::Builder::new()
                .name("store-changes".into())
                .spawn(move || self.pump(feed));
            if let Err(e) = spawned {
                tracing::warn!(
                    "store changes: cannot start the watcher thread ({e}); waiters poll"
                );
            }
        }

        fn pump(mut self, feed: Weak<Feed>) {
            let mut buf = [0u8; 4096];
            // Looks still owed after the last burst.
            let mut settle = SETTLE.len();
            loop {
                let wait = SETTLE.get(settle).copied().unwrap_or(IDLE);
                let mut pfd = libc::pollfd {
                    fd: self.fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // ppoll, not poll: the first settle look is finer than a millisecond.
                let timeout = libc::timespec {
                    tv_sec: wait.as_secs() as libc::time_t,
                    tv_nsec: wait.subsec_nanos() as libc::c_long,
                };
                // SAFETY: one valid pollfd, a valid timespec, no signal mask.
                let ready = unsafe { libc::ppoll(&mut pfd, 1, &timeout, std::ptr::null()) };
                let Some(feed) = feed.upgrade() else { return };
                if ready < 0 {
                    if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                        continue;
                    }
                    tracing::warn!(
                        "store changes: poll failed ({}); waiters poll",
                        std::io::Error::last_os_error()
                    );
                    return;
                }
                let look = if ready > 0 {
                    let hit = self.drain(&mut buf);
                    if hit {
                        settle = 0;
                    }
                    hit
                } else if settle < SETTLE.len() {
                    settle += 1;
                    true
                } else {
                    false
                };
                if look && self.commits.as_mut().is_none_or(Commits::moved) {
                    feed.bump();
                }
            }
        }

        /// Read every queued event; true when one names the log or the database.
        fn drain(&self, buf: &mut [u8; 4096]) -> bool {
            let mut hit = false;
            loop {
                // SAFETY: reading into a buffer we own, of its length.
                let n =
                    unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    return hit;
                }
                hit |= self.names_a_commit(&buf[..n as usize]);
            }
        }

        fn names_a_commit(&self, mut events: &[u8]) -> bool {
            const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
            let mut hit = false;
            while events.len() >= HEADER {
                // The name length is the header's last field (wd, mask, cookie, len).
                let len = u32::from_ne_bytes(events[12..16].try_into().expect("4 bytes")) as usize;
                let end = (HEADER + len).min(events.len());
                let name = &events[HEADER..end];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                hit |= self.names.iter().any(|n| n.as_slice() == name);
                events = &events[end..];
            }
            hit
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod inotify {
    use std::path::Path;
    use std::sync::Weak;

    use super::Feed;

    /// No push on this platform: waiters poll.
    pub struct Watch;

    impl Watch {
        pub fn start(_db: &Path) -> Option<Watch> {
            None
        }

        pub fn run(self, _feed: Weak<Feed>) {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn another_connections_commit_wakes_a_waiter() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("board.db");
        let ours =
            super::super::Store::open_with(&db, &[&["CREATE TABLE t (n INTEGER);"]]).unwrap();
        let theirs =
            super::super::Store::open_with(&db, &[&["CREATE TABLE t (n INTEGER);"]]).unwrap();
        let changes = ours.changes();
        assert!(changes.pushed(), "inotify is available on Linux");
        let mut waiter = changes.subscribe();
        theirs
            .write(|tx| tx.execute("INSERT INTO t VALUES (1)", []))
            .unwrap();
        // Woken by the push: the fallback is far longer than the test's limit.
        tokio::time::timeout(
            Duration::from_secs(30),
            waiter.next(Duration::from_secs(3600)),
        )
        .await
        .expect("the commit was pushed");
        let n: i64 = ours
            .with(|c| c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)))
            .unwrap();
        assert_eq!(n, 1);
    }

    /// What the watcher ticks on: its count moves with every commit, whichever
    /// connection made it, and stays put for a read.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_watchers_commit_count_moves_with_each_commit_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("board.db");
        let schema: &[&[&str]] = &[&["CREATE TABLE t (n INTEGER);"]];
        let ours = super::super::Store::open_with(&db, schema).unwrap();
        let theirs = super::super::Store::open_with(&db, schema).unwrap();
        let mut commits = inotify::Commits::open(&db).expect("a database opens read-only");
        assert!(!commits.moved(), "nothing committed since it opened");
        for (n, store) in [&theirs, &ours, &theirs].into_iter().enumerate() {
            store
                .write(|tx| {
                    tx.execute(
                        "INSERT INTO t VALUES (?1)",
                        [&(n as i64) as &dyn crate::store::sql::ToParam],
                    )
                })
                .unwrap();
            assert!(commits.moved(), "commit {n} moved it");
            let count: i64 = ours
                .with(|c| c.query_row("SELECT COUNT(*) FROM t", [], |r| r.get(0)))
                .unwrap();
            assert_eq!(count, n as i64 + 1);
            assert!(!commits.moved(), "a read leaves it as it was");
        }
    }

    #[test]
    fn handles_of_one_file_share_one_feed() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("board.db");
        let a = Changes::of(&Location::File(db.clone()));
        let b = Changes::of(&Location::File(db));
        assert!(Arc::ptr_eq(&a.feed, &b.feed));
        assert!(!Arc::ptr_eq(
            &a.feed,
            &Changes::of(&Location::File(dir.path().join("other.db"))).feed
        ));
    }
}
