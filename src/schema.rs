//! The database schema: every table-owning module's migrations, in version order.
//!
//! This is the one place that names them all, so it sits above every module that
//! owns a table and the store below them only runs the list it is handed. Append
//! only: a released version is never edited or reordered, so files written by an
//! older missionboard still open and migrate forward.

use std::path::Path;

use crate::store::{Migration, Store, StoreError};

/// Version `i + 1` is `MIGRATIONS[i]`; `PRAGMA user_version` records how many ran.
pub const MIGRATIONS: &[Migration] = &[
    // v1: configuration and the cross-process bus.
    &[crate::config::SCHEMA_V1, crate::bus::SCHEMA_V1],
    // v2: missions, their reports, plan revisions and the operator inbox.
    &[
        crate::mission::SCHEMA_V2,
        crate::mission::report::SCHEMA_V2,
        crate::mission::plan::SCHEMA_V2,
        crate::mission::inbox::SCHEMA_V2,
    ],
    // v3: durable asks.
    &[crate::asks::SCHEMA_V3],
    // v4: runs parked on an ask past its park window.
    &[crate::asks::checkpoint::SCHEMA_V4],
    // v5: per-mission compute: the unit's session model, raised limits, a pause.
    &[crate::fleet::budget::SCHEMA_V5],
    // v6: the oracle's operator trace.
    &[crate::oracle::trace::SCHEMA_V6],
    // v7: checkpoints written with their ask (parked marks the turn's end); the
    // compute each mission has spent, so a resumed session continues it.
    &[
        crate::asks::checkpoint::SCHEMA_V7,
        crate::fleet::budget::SCHEMA_V7,
    ],
    // v8: which mission owns which git worktree, and the commit it started from.
    &[crate::worktree::SCHEMA_V8],
    // v9: the host process of each mission, and the last-activity index.
    &[crate::mission::SCHEMA_V9],
    // v10: the editor sessions that fire missions, and whether each still lives.
    &[crate::mission::parent::SCHEMA_V10],
];

impl Store {
    /// Open (creating if needed) the missionboard database at `path` with the full
    /// schema: pending migrations applied, a file from a newer missionboard refused.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, MIGRATIONS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_file_reaches_the_last_version_and_reopens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home/board.db");
        let s = Store::open(&path).unwrap();
        assert_eq!(s.schema_version().unwrap(), MIGRATIONS.len() as u32);
        drop(s);
        let s = Store::open(&path).unwrap();
        assert_eq!(s.integrity_check().unwrap(), "ok");
    }
}
