//! A mission's extra roots (`mission fire --add-dir`): directories beyond its
//! workspace that its unit is granted as it is granted the workspace, and that the
//! agent is told of (ACP `additionalDirectories`) when it takes them. Kept with the
//! mission so every start of its unit — a resume, a requeue — grants the same.
//! A mission fired without any has no row here.

use std::path::PathBuf;

use super::{Missions, Result};
use crate::clock;
use crate::store::sql::{OptionalExtension, Params, params};

pub(crate) const SCHEMA_V23_ROOTS: &str = "
CREATE TABLE mission_roots (
    mission_id TEXT PRIMARY KEY NOT NULL,
    paths      TEXT NOT NULL,
    created_at INTEGER NOT NULL
);";

/// The PostgreSQL spelling of [`SCHEMA_V23_ROOTS`].
pub(crate) const PG_SCHEMA_V23_ROOTS: &str = "
CREATE TABLE mission_roots (
    mission_id TEXT PRIMARY KEY NOT NULL,
    paths      TEXT NOT NULL,
    created_at BIGINT NOT NULL
);";

/// The statement that records a fresh mission's extra roots (canonical paths, in
/// the order given), for its create transaction: a mission is born with them.
pub(crate) fn insert_statement(
    mission_id: &str,
    roots: &[PathBuf],
) -> (&'static str, Vec<crate::store::sql::Value>) {
    let paths: Vec<String> = roots.iter().map(|p| p.display().to_string()).collect();
    let json = serde_json::to_string(&paths).unwrap_or_default();
    (
        "INSERT INTO mission_roots (mission_id, paths, created_at) VALUES (?1, ?2, ?3)",
        params![mission_id, json, clock::now_ms()].values(),
    )
}

impl Missions {
    /// `mission_id`'s extra roots (empty: it has none).
    pub fn roots(&self, mission_id: &str) -> Result<Vec<PathBuf>> {
        let json: Option<String> = self.store.with(|c| {
            c.query_row(
                "SELECT paths FROM mission_roots WHERE mission_id = ?1",
                params![mission_id],
                |r| r.get(0),
            )
            .optional()
        })?;
        Ok(json
            .and_then(|j| serde_json::from_str::<Vec<String>>(&j).ok())
            .unwrap_or_default()
            .into_iter()
            .map(PathBuf::from)
            .collect())
    }
}
