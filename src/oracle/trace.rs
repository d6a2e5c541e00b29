//! The oracle's operator trace: one line per review step, written to the firing
//! process's stderr and to the durable `oracle_trace` table, so the board (another
//! process) and `mission show` can show what the oracle did.

use rusqlite::params;

use crate::clock;
use crate::store::{Store, StoreError};

pub(crate) const SCHEMA_V6: &str = "
CREATE TABLE oracle_trace (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    mission_id TEXT NOT NULL,
    ask_id     TEXT NOT NULL,
    line       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX oracle_trace_by_mission ON oracle_trace (mission_id, id);";

/// One recorded trace line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceLine {
    pub ask_id: String,
    pub line: String,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub created_at: i64,
}

/// Writes and reads trace lines.
#[derive(Clone)]
pub struct Trace {
    store: Store,
    /// Echo each line to stderr (the firing process); readers leave it off.
    echo: bool,
}

impl Trace {
    pub fn new(store: Store, echo: bool) -> Self {
        Trace { store, echo }
    }

    /// Emit one line about `ask_id` of `mission_id`. Stderr first: a store that
    /// cannot take the row must not hide the line from the operator watching.
    pub fn emit(&self, mission_id: &str, ask_id: &str, line: &str) {
        if self.echo {
            // The line quotes the question and the model's reply: written inert.
            eprintln!("{}", crate::text::sanitize(line));
        }
        let written = self.store.with(|c| {
            c.execute(
                "INSERT INTO oracle_trace (mission_id, ask_id, line, created_at) VALUES (?1, ?2, ?3, ?4)",
                params![mission_id, ask_id, line, clock::now_ms()],
            )
        });
        if let Err(e) = written {
            tracing::warn!(mission = %mission_id, ask = %ask_id, "cannot record an oracle trace line: {e}");
        }
    }

    /// The newest `limit` lines of every mission, oldest first (the board's pane).
    pub fn recent(&self, limit: usize) -> Result<Vec<String>, StoreError> {
        self.store.with(|c| {
            let mut s = c.prepare_cached(
                "SELECT line FROM (SELECT id, line FROM oracle_trace ORDER BY id DESC LIMIT ?1) ORDER BY id",
            )?;
            s.query_map(params![limit as i64], |r| r.get(0))?.collect()
        })
    }

    /// The newest `limit` lines of one mission, oldest first.
    pub fn for_mission(
        &self,
        mission_id: &str,
        limit: usize,
    ) -> Result<Vec<TraceLine>, StoreError> {
        self.store.with(|c| {
            let mut s = c.prepare_cached(
                "SELECT ask_id, line, created_at FROM
                   (SELECT id, ask_id, line, created_at FROM oracle_trace WHERE mission_id = ?1 ORDER BY id DESC LIMIT ?2)
                 ORDER BY id",
            )?;
            s.query_map(params![mission_id, limit as i64], |r| {
                Ok(TraceLine {
                    ask_id: r.get(0)?,
                    line: r.get(1)?,
                    created_at: r.get(2)?,
                })
            })?
            .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_back_newest_last_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let trace = Trace::new(Store::open(&dir.path().join("b.db")).unwrap(), false);
        for i in 0..5 {
            trace.emit(
                if i % 2 == 0 { "m1" } else { "m2" },
                "a",
                &format!("line {i}"),
            );
        }
        assert_eq!(trace.recent(3).unwrap(), ["line 2", "line 3", "line 4"]);
        let m1: Vec<String> = trace
            .for_mission("m1", 2)
            .unwrap()
            .into_iter()
            .map(|l| l.line)
            .collect();
        assert_eq!(m1, ["line 2", "line 4"]);
    }
}
