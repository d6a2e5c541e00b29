//! The cross-process event bus: rows in `bus_events`, persisted first and read by
//! every host that shares the database when a commit wakes it (`store::changes`;
//! a poll is the fallback). This is how a `mission stop` in one process reaches the
//! process that hosts the unit.

use rusqlite::params;
use serde_json::Value;

use crate::store::{Store, StoreError};

pub(crate) const SCHEMA_V1: &str = "
CREATE TABLE bus_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    subject    TEXT NOT NULL,
    data       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX bus_events_created ON bus_events (created_at);";

/// Events older than this are pruned; subscribers never replay history anyway.
const RETENTION_MS: i64 = 5 * 60 * 1000;

/// One published event.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: i64,
    pub subject: String,
    pub data: Value,
}

/// Publishes to and reads the bus.
#[derive(Clone)]
pub struct Bus {
    store: Store,
}

impl Bus {
    pub fn new(store: Store) -> Self {
        Bus { store }
    }

    /// Append an event. Callers publish only after their own write is durable.
    pub fn publish(&self, subject: &str, data: &Value) -> Result<i64, StoreError> {
        self.store.with(|c| {
            c.execute(
                "INSERT INTO bus_events (subject, data, created_at) VALUES (?1, ?2, ?3)",
                params![subject, data.to_string(), crate::clock::now_ms()],
            )?;
            Ok(c.last_insert_rowid())
        })
    }

    /// The newest event id; a subscriber starts here so it sees only what comes next.
    pub fn head(&self) -> Result<i64, StoreError> {
        self.store.with(|c| {
            c.query_row("SELECT COALESCE(MAX(id), 0) FROM bus_events", [], |r| {
                r.get(0)
            })
        })
    }

    /// Events after `after`, oldest first, at most `limit`.
    pub fn since(&self, after: i64, limit: usize) -> Result<Vec<Event>, StoreError> {
        self.store.with(|c| {
            let mut stmt = c.prepare_cached(
                "SELECT id, subject, data FROM bus_events WHERE id > ?1 ORDER BY id LIMIT ?2",
            )?;
            let rows = stmt.query_map(params![after, limit as i64], |r| {
                let data: String = r.get(2)?;
                Ok(Event {
                    id: r.get(0)?,
                    subject: r.get(1)?,
                    data: serde_json::from_str(&data).unwrap_or(Value::Null),
                })
            })?;
            rows.collect()
        })
    }

    /// Drop events past the retention window.
    pub fn prune(&self) -> Result<usize, StoreError> {
        self.store.with(|c| {
            c.execute(
                "DELETE FROM bus_events WHERE created_at < ?1",
                params![crate::clock::now_ms() - RETENTION_MS],
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscribers_see_only_what_comes_after_their_head() {
        let dir = tempfile::tempdir().unwrap();
        let bus = Bus::new(Store::open(&dir.path().join("b.db")).unwrap());
        bus.publish("a", &serde_json::json!({"n": 1})).unwrap();
        let head = bus.head().unwrap();
        bus.publish("b", &serde_json::json!({"n": 2})).unwrap();
        let seen = bus.since(head, 10).unwrap();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].subject, "b");
        assert_eq!(seen[0].data["n"], 2);
    }
}
