//! The durable store: one SQLite file at `<home>/board.db`.
//!
//! The store owns the connection, the pragmas and the migration runner; each service
//! module owns its own tables (their DDL lives beside the code that reads them) and
//! talks to SQLite through [`Store::with`]. The list of migrations is handed in by
//! the caller ([`Store::open_with`]); `crate::schema` assembles the real one.
//! Keeping every SQL statement inside the owning module is what lets a shared
//! PostgreSQL store replace this one later.
//!
//! Every call here blocks (on the connection's mutex, then on SQLite's busy
//! timeout). Async code reaches the store only through [`blocking`]: see
//! [`boundary`], the blocking boundary.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags};

pub mod boundary;
pub mod changes;
pub use boundary::{blocking, blocking_in_place};
pub use changes::{Changes, Waiter};

use crate::sync::LockUnpoisoned;

/// One schema version: the DDL each owning module contributes to it, run in one
/// transaction. The ordered list of versions is assembled above the store (in
/// `crate::schema`), so the store never names the modules that own tables.
pub type Migration = &'static [&'static str];

/// How long a write waits for another process's lock before it gives up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// A handle to the database. Cheap to clone; all clones share one connection.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
    changes: OnceLock<Changes>,
}

/// A store failure, always naming the database file and what to do about it.
#[derive(Debug)]
pub struct StoreError {
    message: String,
    code: Option<ErrorCode>,
}

impl StoreError {
    fn new(message: String) -> Self {
        StoreError {
            message,
            code: None,
        }
    }

    /// True when SQLite reported the database busy or locked past the busy timeout.
    pub fn is_busy(&self) -> bool {
        matches!(
            self.code,
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
        )
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
        let conn = Connection::open(path).map_err(|e| describe(path, e))?;
        let store = Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                conn: Mutex::new(conn),
                changes: OnceLock::new(),
            }),
        };
        store.configure()?;
        store.migrate(migrations)?;
        Ok(store)
    }

    /// Open an existing database read-only, without creating or migrating anything.
    /// `Ok(None)` when the file does not exist.
    pub fn open_read_only(path: &Path) -> Result<Option<Store>, StoreError> {
        if !path.exists() {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| describe(path, e))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(|e| describe(path, e))?;
        Ok(Some(Store {
            inner: Arc::new(Inner {
                path: path.to_path_buf(),
                conn: Mutex::new(conn),
                changes: OnceLock::new(),
            }),
        }))
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Run `f` on the connection. Errors come back described with the file's path.
    pub fn with<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let conn = self.inner.conn.lock_unpoisoned();
        f(&conn).map_err(|e| describe(&self.inner.path, e))
    }

    /// Run `f` inside an IMMEDIATE transaction (the write lock is taken up front, so a
    /// read-then-write inside `f` cannot interleave with another writer).
    pub fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let mut conn = self.inner.conn.lock_unpoisoned();
        let run = |conn: &mut Connection| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let out = f(&tx)?;
            tx.commit()?;
            Ok(out)
        };
        run(&mut conn).map_err(|e| describe(&self.inner.path, e))
    }

    /// The file's change feed (pushed commits from any process; see [`changes`]).
    pub fn changes(&self) -> &Changes {
        self.inner
            .changes
            .get_or_init(|| Changes::of(&self.inner.path))
    }

    /// The schema version this file is at.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.with(|c| c.pragma_query_value(None, "user_version", |r| r.get(0)))
    }

    /// `PRAGMA data_version`: changes whenever another connection commits, so a reader
    /// can tell cheaply whether anything moved since it last looked.
    pub fn data_version(&self) -> Result<i64, StoreError> {
        self.with(|c| c.pragma_query_value(None, "data_version", |r| r.get(0)))
    }

    /// `PRAGMA integrity_check` — `ok` for a healthy file.
    pub fn integrity_check(&self) -> Result<String, StoreError> {
        self.with(|c| c.pragma_query_value(None, "integrity_check", |r| r.get(0)))
    }

    fn configure(&self) -> Result<(), StoreError> {
        self.with(|c| {
            c.busy_timeout(BUSY_TIMEOUT)?;
            // The first statement is where SQLite discovers a file is not a database.
            let _: String = c.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            c.pragma_update(None, "foreign_keys", "ON")?;
            Ok(())
        })
    }

    fn migrate(&self, migrations: &[Migration]) -> Result<(), StoreError> {
        let known = migrations.len() as u32;
        let found = self.schema_version()?;
        if found > known {
            return Err(StoreError::new(format!(
                "the missionboard database {} is at schema version {found}, newer than this binary knows ({known}) — it was written by a newer missionboard; upgrade missionboard to use it (the file was left untouched)",
                self.path().display()
            )));
        }
        for (i, parts) in migrations.iter().enumerate().skip(found as usize) {
            let version = i as u32 + 1;
            self.write(|tx| {
                // Re-check under the write lock: another process may have migrated meanwhile.
                let now: u32 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
                if now >= version {
                    return Ok(());
                }
                for sql in parts.iter() {
                    tx.execute_batch(sql)?;
                }
                tx.pragma_update(None, "user_version", version)?;
                Ok(())
            })?;
        }
        Ok(())
    }
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

/// Turn a SQLite error into a sentence that names the file and the fix.
fn describe(path: &Path, err: rusqlite::Error) -> StoreError {
    let code = err.sqlite_error_code();
    let p = path.display();
    let message = match code {
        Some(ErrorCode::NotADatabase) => format!(
            "{p} is not a missionboard database (file is not a database) — move it aside, or set MISSIONBOARD_HOME to another directory"
        ),
        Some(ErrorCode::DatabaseCorrupt) => format!(
            "the missionboard database {p} is corrupt ({err}) — move it aside to start afresh, or restore it from a backup"
        ),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
            "the missionboard database {p} stayed locked by another process for {}s ({err}) — retry once that process is done",
            BUSY_TIMEOUT.as_secs()
        ),
        Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied | ErrorCode::ReadOnly) => format!(
            "cannot open the missionboard database {p} ({err}) — check that the file and its directory are readable and writable, or set MISSIONBOARD_HOME"
        ),
        _ => format!("missionboard database {p}: {err}"),
    };
    StoreError { message, code }
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
