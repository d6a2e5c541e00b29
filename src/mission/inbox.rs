//! The operator inbox: a copy of every report that reached no live session. Filing
//! the report writes its copy ([`super::report::copy_to_inbox`]); here the inbox is
//! read and acked. Acking marks an item read; it never deletes it and never touches
//! the report or an ask.

use crate::store::sql::{OptionalExtension, params};
use serde::Serialize;

use super::report::{PARENT_GONE, Report, report_at};
use super::{MissionError, Missions, Result};
use crate::clock;

pub(crate) const SCHEMA_V2: &str = "
CREATE TABLE inbox (
    id                TEXT PRIMARY KEY NOT NULL,
    mission_id        TEXT NOT NULL REFERENCES missions (id),
    report_id         TEXT NOT NULL UNIQUE REFERENCES reports (id),
    reason            TEXT NOT NULL,
    agent_name        TEXT NOT NULL DEFAULT '',
    intent            TEXT NOT NULL DEFAULT '',
    parent_session_id TEXT,
    created_at        INTEGER NOT NULL,
    acked_at          INTEGER
);
CREATE INDEX inbox_by_created ON inbox (created_at DESC, id DESC);
CREATE INDEX inbox_unacked ON inbox (acked_at, created_at DESC);";

/// The PostgreSQL spelling of this module's tables as of schema v11 (see
/// `crate::schema`); `rowid` is the insertion order SQLite keeps implicitly.
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE inbox (
    id                TEXT PRIMARY KEY NOT NULL,
    rowid             BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    mission_id        TEXT NOT NULL REFERENCES missions (id),
    report_id         TEXT NOT NULL UNIQUE REFERENCES reports (id),
    reason            TEXT NOT NULL,
    agent_name        TEXT NOT NULL DEFAULT '',
    intent            TEXT NOT NULL DEFAULT '',
    parent_session_id TEXT,
    created_at        BIGINT NOT NULL,
    acked_at          BIGINT
);
CREATE INDEX inbox_by_created ON inbox (created_at DESC, id DESC);
CREATE INDEX inbox_unacked ON inbox (acked_at, created_at DESC);";

/// One inbox item with the report it copies.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    pub id: String,
    pub mission_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub agent_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub intent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    pub reason: String,
    pub report: Report,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub created_at: i64,
    pub acked: bool,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "clock::ser_opt_rfc3339"
    )]
    pub acked_at: Option<i64>,
}

impl InboxItem {
    /// The label the CLI and the board show for `reason`.
    pub fn reason_label(&self) -> &'static str {
        if self.reason == PARENT_GONE {
            "parent session gone"
        } else {
            "operator-fired (no session)"
        }
    }
}

const SELECT: &str = "SELECT i.id, i.mission_id, i.agent_name, i.intent, i.parent_session_id, i.reason, i.created_at, i.acked_at,
        r.id, r.mission_id, r.kind, r.summary, r.detail, r.refs, r.handover, r.created_at
   FROM inbox i JOIN reports r ON r.id = i.report_id";

fn item_from_row(row: &crate::store::sql::Row<'_>) -> crate::store::sql::Result<InboxItem> {
    let acked_at: Option<i64> = row.get(7)?;
    let report = report_at(row, 8)?;
    Ok(InboxItem {
        id: row.get(0)?,
        mission_id: row.get(1)?,
        agent_name: row.get(2)?,
        intent: row.get(3)?,
        parent_session_id: row.get(4)?,
        reason: row.get(5)?,
        created_at: row.get(6)?,
        acked: acked_at.is_some(),
        acked_at,
        report,
    })
}

impl Missions {
    /// Inbox items newest first: unacknowledged only, or all.
    pub fn inbox(&self, include_acked: bool, limit: usize) -> Result<Vec<InboxItem>> {
        let filter = if include_acked {
            ""
        } else {
            " WHERE i.acked_at IS NULL"
        };
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(&format!(
                "{SELECT}{filter} ORDER BY i.created_at DESC, i.rowid DESC LIMIT ?1"
            ))?;
            s.query_map(params![limit as i64], item_from_row)?.collect()
        })?)
    }

    /// How many items [`inbox`](Self::inbox) would list with no limit.
    pub fn inbox_count(&self, include_acked: bool) -> Result<i64> {
        let filter = if include_acked {
            ""
        } else {
            " WHERE acked_at IS NULL"
        };
        Ok(self.store.with(|c| {
            c.prepare_cached(&format!("SELECT COUNT(*) FROM inbox{filter}"))?
                .query_row([], |r| r.get(0))
        })?)
    }

    /// One item.
    pub fn inbox_item(&self, id: &str) -> Result<InboxItem> {
        self.store
            .with(|c| {
                c.query_row(
                    &format!("{SELECT} WHERE i.id = ?1"),
                    params![id],
                    item_from_row,
                )
                .optional()
            })?
            .ok_or_else(|| inbox_not_found(id))
    }

    /// Mark an item read (idempotent: the first ack's time is kept).
    pub fn ack(&self, id: &str) -> Result<InboxItem> {
        let changed = self.store.with(|c| {
            c.execute(
                "UPDATE inbox SET acked_at = COALESCE(acked_at, ?2) WHERE id = ?1",
                params![id, clock::now_ms()],
            )
        })?;
        if changed == 0 {
            return Err(inbox_not_found(id));
        }
        self.inbox_item(id)
    }
}

fn inbox_not_found(id: &str) -> MissionError {
    MissionError::Invalid(format!(
        "no inbox item {id:?} exists — 'missionboard inbox list --all' shows every item, acknowledged or not"
    ))
}

#[cfg(test)]
mod tests {
    use crate::mission::tests::{fire, report_input, service};

    #[test]
    fn operator_fired_reports_land_in_the_inbox_and_ack_only_marks_them() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let r = svc
            .add_report(&m.id, report_input("finding", "found it"))
            .unwrap();
        let items = svc.inbox(false, 50).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].report, r);
        assert_eq!(items[0].reason_label(), "operator-fired (no session)");
        let acked = svc.ack(&items[0].id).unwrap();
        assert!(acked.acked);
        assert!(svc.inbox(false, 50).unwrap().is_empty());
        assert_eq!(svc.inbox(true, 50).unwrap().len(), 1);
        assert_eq!(svc.reports(&m.id, 10).unwrap(), vec![r]);
        assert!(
            svc.ack("nope")
                .unwrap_err()
                .to_string()
                .starts_with("no inbox item \"nope\" exists")
        );
    }
}
