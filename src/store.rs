//! The durable store: one SQLite file at `<home>/board.db` by default, or a shared
//! PostgreSQL database (`store-url = postgres://…`) that several hosts and boards use
//! at once.
//!
//! The store owns the connection, the migration runner and the change feed; each
//! service module owns its own tables (their DDL lives beside the code that reads
//! them) and talks to the database only through [`Store::with`] and [`Store::write`],
//! in the query layer's one dialect ([`sql`]). The list of migrations is handed in by
//! the caller ([`Store::open_with`]); `crate::schema` assembles the real one.
//!
//! Every call here blocks (on the connection's mutex, then on the database's lock
//! wait). Async code reaches the store only through [`blocking`]: see [`boundary`],
//! the blocking boundary.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

pub mod boundary;
pub mod changes;
mod pg_client;
pub mod pg_connect;
pub mod pg_dialect;
pub mod pg_outage;
mod pg_types;
pub mod postgres;
pub mod sql;
mod value;
pub use boundary::{blocking, blocking_in_place};
pub use changes::{Changes, Waiter};
pub use sql::Conn;

use crate::sync::LockUnpoisoned;
use postgres::PgSession;

/// One schema version: the DDL each owning module contributes to it, run in one
/// transaction. The ordered list of versions is assembled above the store (in
/// `crate::schema`), so the store never names the modules that own tables.
pub type Migration = &'static [&'static str];

/// How long a write waits for another process's lock before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// Where the durable record lives.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Location {
    /// An embedded SQLite file (the default: `<home>/board.db`).
    File(PathBuf),
    /// A shared PostgreSQL database, by its `postgres://` URL.
    Postgres(String),
}

impl Location {
    /// A `store-url` value: empty or `sqlite:` is `default_file`; `postgres://…` or
    /// `postgresql://…` is a shared database. Anything else is refused, naming both.
    pub fn parse(url: &str, default_file: &Path) -> Result<Location, String> {
        let url = url.trim();
        if url.is_empty() || url == "sqlite:" {
            return Ok(Location::File(default_file.to_path_buf()));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            pg_connect::Target::parse(url)
                .map_err(|e| format!("store-url {:?}: {e}", pg_connect::redact(url)))?;
            return Ok(Location::Postgres(url.to_string()));
        }
        Err(format!(
            "store-url {:?} is neither sqlite: (the embedded default) nor a postgres://user@host/database URL",
            pg_connect::redact(url)
        ))
    }

    pub fn is_postgres(&self) -> bool {
        matches!(self, Location::Postgres(_))
    }
}

impl fmt::Display for Location {
    /// The file's path, or the URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File(p) => write!(f, "{}", p.display()),
            Location::Postgres(url) => f.write_str(&pg_connect::redact(url)),
        }
    }
}

/// A handle to the database. Cheap to clone; all clones share one connection.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    location: Location,
    backend: Backend,
    changes: OnceLock<Changes>,
}

enum Backend {
    Sqlite(Mutex<Connection>),
    Postgres(Mutex<PgSession>),
}

/// A store failure, always naming the database and what to do about it.
#[derive(Debug)]
pub struct StoreError {
    message: String,
    busy: bool,
    unreachable: bool,
    damaged: bool,
}

impl StoreError {
    fn new(message: String) -> Self {
        StoreError {
            message,
            busy: false,
            unreachable: false,
            damaged: false,
        }
    }

    /// True when the embedded file is damaged (SQLite found corrupt pages, or no
    /// database where its header should be): nothing may run on it until it is
    /// recovered.
    pub fn is_damaged(&self) -> bool {
        self.damaged
    }

    /// True when the database stayed locked by another writer past the wait.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// True when a shared database could not be reached at all (as opposed to one
    /// reached that refused: a newer schema, a wrong password is still "cannot
    /// reach", a missing table is not).
    pub fn is_unreachable(&self) -> bool {
        self.unreachable
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

impl Store {
    /// Open (creating if needed) the database at `path`, apply the pending ones of
    /// `migrations` (in order; `PRAGMA user_version` records how many ran) and refuse
    /// a file written by a newer missionboard.
    pub fn open_with(path: &Path, migrations: &[Migration]) -> Result<Store, StoreError> {
        let location = Location::File(path.to_path_buf());
        if let Some(dir) = path.parent() {
            crate::paths::create_private_dir(dir).map_err(|e| {
                StoreError::new(format!(
                    "cannot create the missionboard home {}: {e} — set MISSIONBOARD_HOME to a writable directory",
                    dir.display()
                ))
            })?;
        }
        // Two processes initialising a fresh file at once can deadlock inside SQLite
        // (one switching to WAL while the other migrates), so setup is serialised by
        // an advisory lock beside the database.
        let _setup = SetupLock::acquire(path);
        crate::paths::create_private_file(path).map_err(|e| {
            StoreError::new(format!(
                "cannot create the missionboard database {} ({e}) — check that its directory is writable, or set MISSIONBOARD_HOME",
                path.display()
            ))
        })?;
        let conn = Connection::open(path).map_err(|e| describe(&location, sql::from_sqlite(e)))?;
        let store = Store::over(location, Backend::Sqlite(Mutex::new(conn)));
        store.configure()?;
        store.check_pages()?;
        store.migrate(migrations)?;
        Ok(store)
    }

    /// Connect to the shared PostgreSQL database at `url` and bring its schema to
    /// `migrations`' last version (refusing one written by a newer missionboard).
    pub fn connect_with(url: &str, migrations: &[Migration]) -> Result<Store, StoreError> {
        let location = Location::Postgres(url.to_string());
        let session = PgSession::connect(url).map_err(|e| describe(&location, e))?;
        let store = Store::over(location, Backend::Postgres(Mutex::new(session)));
        store.migrate(migrations)?;
        Ok(store)
    }

    /// Open an existing database read-only, without creating or migrating anything.
    /// `Ok(None)` when the file does not exist.
    pub fn open_read_only(path: &Path) -> Result<Option<Store>, StoreError> {
        let location = Location::File(path.to_path_buf());
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .and_then(|c| c.busy_timeout(BUSY_TIMEOUT).map(|()| c))
        .map_err(|e| describe(&location, sql::from_sqlite(e)))?;
        Ok(Some(Store::over(
            location,
            Backend::Sqlite(Mutex::new(conn)),
        )))
    }

    fn over(location: Location, backend: Backend) -> Store {
        Store {
            inner: Arc::new(Inner {
                location,
                backend,
                changes: OnceLock::new(),
            }),
        }
    }

    /// Where this store's record lives.
    pub fn location(&self) -> &Location {
        &self.inner.location
    }

    /// The SQLite file, on the embedded backend.
    pub fn sqlite_path(&self) -> Option<&Path> {
        match &self.inner.location {
            Location::File(p) => Some(p),
            Location::Postgres(_) => None,
        }
    }

    /// True on the shared PostgreSQL backend.
    pub fn is_postgres(&self) -> bool {
        self.inner.location.is_postgres()
    }

    /// Run `f` on the connection, each statement on its own. Errors come back
    /// described with the database's name.
    ///
    /// On PostgreSQL, a call that finds the server gone (a restart, an outage) waits
    /// for it and runs again, for as long as this process rides out outages
    /// ([`pg_outage::ride_out_outages`]); never when its writes may have committed.
    pub fn with<T>(&self, mut f: impl FnMut(&Conn<'_>) -> sql::Result<T>) -> Result<T, StoreError> {
        let out = match &self.inner.backend {
            Backend::Sqlite(conn) => f(&Conn::sqlite(&conn.lock_unpoisoned())),
            Backend::Postgres(session) => {
                let mut s = session.lock_unpoisoned();
                pg_outage::riding_out(&mut s, |s| {
                    s.revive()?;
                    let out = f(&Conn::postgres(s));
                    // What did commit is announced even when a later statement failed.
                    s.finish()?;
                    out
                })
            }
        };
        out.map_err(|e| describe(&self.inner.location, e))
    }

    /// Run `f` inside one write transaction that no other writer interleaves with:
    /// SQLite's IMMEDIATE transaction (the write lock taken up front), PostgreSQL's
    /// transaction under one advisory lock every writer takes. So a read-then-write
    /// inside `f` sees no other writer between its read and its write.
    pub fn write<T>(
        &self,
        mut f: impl FnMut(&Conn<'_>) -> sql::Result<T>,
    ) -> Result<T, StoreError> {
        let out = match &self.inner.backend {
            Backend::Sqlite(conn) => {
                let mut conn = conn.lock_unpoisoned();
                (|| {
                    let tx = conn
                        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                        .map_err(sql::from_sqlite)?;
                    let out = f(&Conn::sqlite(&tx))?;
                    tx.commit().map_err(sql::from_sqlite)?;
                    Ok(out)
                })()
            }
            Backend::Postgres(session) => {
                let mut s = session.lock_unpoisoned();
                pg_outage::riding_out(&mut s, |s| {
                    (|| {
                        s.revive()?;
                        s.begin_write()?;
                        match f(&Conn::postgres(s)) {
                            Ok(out) => s.commit().map(|()| out),
                            Err(e) => {
                                s.rollback();
                                Err(e)
                            }
                        }
                    })()
                    .inspect_err(|_| s.rollback())
                })
            }
        };
        out.map_err(|e| describe(&self.inner.location, e))
    }

    /// The store's change feed (pushed commits from any process; see [`changes`]).
    pub fn changes(&self) -> &Changes {
        self.inner
            .changes
            .get_or_init(|| Changes::of(&self.inner.location))
    }

    /// The schema version this database is at.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.with(schema_version)
    }

    /// Changes whenever another connection commits, so a reader can tell cheaply
    /// whether anything moved since it last looked: SQLite's `PRAGMA data_version`,
    /// or on PostgreSQL the count of commit announcements this process has heard.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        match &self.inner.backend {
            Backend::Sqlite(conn) => conn
                .lock_unpoisoned()
                .pragma_query_value(None, "data_version", |r| r.get(0))
                .map_err(|e| describe(&self.inner.location, sql::from_sqlite(e))),
            Backend::Postgres(_) => Ok(self.changes().heard() as i64),
        }
    }

    /// `ok` for a healthy database (SQLite's `PRAGMA integrity_check`; PostgreSQL
    /// checks its own pages, so there a live connection is the check).
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        match &self.inner.backend {
            Backend::Sqlite(conn) => conn
                .lock_unpoisoned()
                .pragma_query_value(None, "integrity_check", |r| r.get(0))
                .map_err(|e| describe(&self.inner.location, sql::from_sqlite(e))),
            Backend::Postgres(_) => self.with(|c| c.query_row("SELECT 'ok'", [], |r| r.get(0))),
        }
    }

    /// The database server's clock minus this machine's, in milliseconds (`None` on
    /// the embedded file, whose clock is this machine's).
    pub fn clock_skew_ms(&self) -> Result<Option<i64>, StoreError> {
        let Backend::Postgres(session) = &self.inner.backend else {
            return Ok(None);
        };
        let before = crate::clock::now_ms();
        let server = session
            .lock_unpoisoned()
            .server_now_ms()
            .map_err(|e| describe(&self.inner.location, e))?;
        let after = crate::clock::now_ms();
        Ok(Some(server - (before + after) / 2))
    }

    /// Refuse a damaged file before anything reads or writes it. SQLite notices a
    /// bad page only when a statement touches it, so a command whose queries miss
    /// the damage would carry on (and a fire would start a unit) on a record that
    /// is no longer whole: `quick_check` reads every page once, which on a board's
    /// file is a few milliseconds.
    fn check_pages(&self) -> Result<(), StoreError> {
        let Backend::Sqlite(conn) = &self.inner.backend else {
            return Ok(());
        };
        let found: String = conn
            .lock_unpoisoned()
            .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
            .map_err(|e| describe(&self.inner.location, sql::from_sqlite(e)))?;
        if found == "ok" {
            return Ok(());
        }
        Err(describe(
            &self.inner.location,
            sql::Error::Corrupt(crate::text::excerpt(found.trim(), 160)),
        ))
    }

    fn configure(&self) -> Result<(), StoreError> {
        let Backend::Sqlite(conn) = &self.inner.backend else {
            return Ok(());
        };
        let c = conn.lock_unpoisoned();
        (|| {
            c.busy_timeout(BUSY_TIMEOUT)?;
            // The first statement is where SQLite discovers a file is not a database.
            let _: String = c.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            c.pragma_update(None, "foreign_keys", "ON")?;
            c.set_prepared_statement_cache_capacity(64);
            Ok(())
        })()
        .map_err(|e| describe(&self.inner.location, sql::from_sqlite(e)))
    }

    fn migrate(&self, migrations: &[Migration]) -> Result<(), StoreError> {
        let known = migrations.len() as u32;
        if self.is_postgres() {
            // Under the write lock: two hosts connecting to a fresh database at once
            // create the version table once, and each version below migrates once.
            // (Looked for first, so an ordinary connect writes nothing.)
            let present: i64 = self.with(|c| {
                c.query_row(
                    "SELECT COUNT(*) FROM pg_tables WHERE tablename = 'missionboard_schema' AND schemaname = current_schema()",
                    [],
                    |r| r.get(0),
                )
            })?;
            if present == 0 {
                self.write(|tx| tx.execute_batch(postgres::SCHEMA_TABLE))?;
            }
        }
        let found = self.schema_version()?;
        if found > known {
            return Err(StoreError::new(format!(
                "the missionboard database {} is at schema version {found}, newer than this binary knows ({known}) — it was written by a newer missionboard; upgrade missionboard to use it (the {} was left untouched)",
                self.location(),
                if self.is_postgres() {
                    "database"
                } else {
                    "file"
                }
            )));
        }
        for (i, parts) in migrations.iter().enumerate().skip(found as usize) {
            let version = i as u32 + 1;
            self.write(|tx| {
                // Re-check under the write lock: another process may have migrated meanwhile.
                if schema_version(tx)? >= version {
                    return Ok(());
                }
                for sql in parts.iter() {
                    tx.execute_batch(sql)?;
                }
                set_schema_version(tx, version)
            })?;
        }
        Ok(())
    }
}

use sql::params;

fn schema_version(c: &Conn<'_>) -> sql::Result<u32> {
    if c.is_postgres() {
        c.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM missionboard_schema",
            [],
            |r| r.get(0),
        )
    } else {
        c.query_row("PRAGMA user_version", [], |r| r.get(0))
    }
}

fn set_schema_version(c: &Conn<'_>, version: u32) -> sql::Result<()> {
    if c.is_postgres() {
        c.execute("DELETE FROM missionboard_schema", [])?;
        c.execute(
            "INSERT INTO missionboard_schema (version) VALUES (?1)",
            params![version],
        )?;
    } else {
        // PRAGMA takes no parameters; the version is a number we computed.
        c.execute_batch(&format!("PRAGMA user_version = {version}"))?;
    }
    Ok(())
}

/// An exclusive `flock` on `<db>.lock`, held while a process configures and migrates.
/// Best effort: without it (an unusual filesystem) setup still works, just unserialised.
struct SetupLock {
    _file: Option<std::fs::File>,
}

impl SetupLock {
    fn acquire(db: &Path) -> SetupLock {
        use std::os::fd::AsRawFd;
        let mut lock_path = db.as_os_str().to_owned();
        lock_path.push(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(PathBuf::from(lock_path))
            .ok();
        if let Some(f) = &file {
            // SAFETY: flock on a descriptor we own; it is released when the file closes.
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) };
        }
        SetupLock { _file: file }
    }
}

/// Turn a query-layer error into a sentence that names the database and the fix.
fn describe(location: &Location, err: sql::Error) -> StoreError {
    use sql::Error as E;
    let busy = matches!(err, E::Busy(_));
    let unreachable = location.is_postgres() && matches!(err, E::CannotOpen(_));
    let damaged = matches!(
        (location, &err),
        (Location::File(_), E::NotADatabase(_) | E::Corrupt(_))
    );
    let message = match (location, &err) {
        (Location::File(p), E::NotADatabase(_)) => format!(
            "{} is not a missionboard database (file is not a database) — nothing was run on it; 'missionboard doctor' shows what it holds. If it was one, it is damaged: {}. If it never was, move it aside or set MISSIONBOARD_HOME to another directory",
            p.display(),
            recovery(p)
        ),
        (Location::File(p), E::Corrupt(_)) => format!(
            "the missionboard database {} is damaged ({err}) — nothing was run on it; 'missionboard doctor' shows the damage. {}",
            p.display(),
            recovery(p)
        ),
        (Location::File(p), E::Busy(_)) => format!(
            "the missionboard database {} stayed locked by another process for {}s ({err}) — retry once that process is done",
            p.display(),
            BUSY_TIMEOUT.as_secs()
        ),
        (Location::File(p), E::CannotOpen(_)) => format!(
            "cannot open the missionboard database {} ({err}) — check that the file and its directory are readable and writable, or set MISSIONBOARD_HOME",
            p.display()
        ),
        (Location::Postgres(_), E::Busy(_)) => format!(
            "the missionboard database {location} stayed locked by another host for {}s ({err}) — retry once that host is done",
            pg_client::LOCK_TIMEOUT.as_secs()
        ),
        (Location::Postgres(_), E::CannotOpen(_)) => format!(
            "cannot reach the missionboard database {location} ({err}) — check that the server is up and the URL's host, port, user, password and database are right (store-url, or MISSIONBOARD_STORE_URL)"
        ),
        _ => format!("missionboard database {location}: {err}"),
    };
    StoreError {
        message,
        busy,
        unreachable,
        damaged,
    }
}

/// How to recover a damaged file: what it still holds goes into a new file, and
/// the damaged one is kept.
pub fn recovery(db: &Path) -> String {
    let p = db.display();
    format!(
        "Recover what it still holds into a new file, keeping the damaged one: sqlite3 {p} .recover | sqlite3 {p}.recovered, then mv {p} {p}.damaged and mv {p}.recovered {p}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two versions, shaped like the real list but owned by this test.
    const TEST_MIGRATIONS: &[Migration] = &[
        &["CREATE TABLE a (id INTEGER PRIMARY KEY);"],
        &[
            "CREATE TABLE b (id INTEGER PRIMARY KEY);",
            "CREATE TABLE c (id INTEGER PRIMARY KEY);",
        ],
    ];

    fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, TEST_MIGRATIONS)
    }

    #[test]
    fn a_longer_list_applies_only_the_new_versions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.db");
        let s = Store::open_with(&path, &TEST_MIGRATIONS[..1]).unwrap();
        assert_eq!(s.schema_version().unwrap(), 1);
        drop(s);
        let s = open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), 2);
        let tables: i64 = s
            .with(|c| {
                c.query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('a','b','c')",
                    [],
                    |r| r.get(0),
                )
            })
            .unwrap();
        assert_eq!(tables, 3);
    }

    #[test]
    fn migrates_a_fresh_file_and_reopens_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home/board.db");
        let s = open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), TEST_MIGRATIONS.len() as u32);
        drop(s);
        let s = open(&path).unwrap();
        assert_eq!(s.integrity_check().unwrap(), "ok");
    }

    #[test]
    fn refuses_a_newer_schema_without_touching_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.db");
        {
            let c = Connection::open(&path).unwrap();
            c.pragma_update(None, "user_version", 99).unwrap();
        }
        let err = open(&path).err().unwrap().to_string();
        assert!(err.contains("schema version 99"), "{err}");
        assert!(err.contains("upgrade missionboard"), "{err}");
        let c = Connection::open(&path).unwrap();
        let v: u32 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, 99);
    }

    #[test]
    fn a_file_that_is_not_a_database_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.db");
        std::fs::write(
            &path,
            b"this is plainly not sqlite, it is a long line of text...",
        )
        .unwrap();
        let err = open(&path).err().unwrap().to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("not a missionboard database"), "{err}");
    }

    #[test]
    fn read_only_open_never_creates_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("board.db");
        assert!(Store::open_read_only(&path).unwrap().is_none());
        assert!(!path.exists());
    }
}
