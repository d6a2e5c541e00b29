//! Firing sessions: the editor sessions (`missionboard acp`) that fire missions as
//! their parent. A parented mission's reports stream into its parent while that
//! session lives; once it has ended — closed, or its process gone — they wait in the
//! operator inbox as `parent_gone`. Liveness is durable, so a report written by any
//! process (a resumed run, the reclaim sweep) routes the same way.

use crate::store::sql::{OptionalExtension, params};

use super::report::{PARENT_GONE, copy_to_inbox, report_at};
use super::{Mission, Missions, Result};
use crate::clock;
use crate::host::HostId;

pub(crate) const SCHEMA_V10: &str = "
CREATE TABLE parent_sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    host_pid    INTEGER NOT NULL,
    host_start  TEXT NOT NULL,
    opened_at   INTEGER NOT NULL,
    closed_at   INTEGER
);";

/// v12: the session's host id and machine (see `super::hosts`).
pub(crate) const SCHEMA_V12: &str = "
ALTER TABLE parent_sessions ADD COLUMN host_id TEXT;
ALTER TABLE parent_sessions ADD COLUMN host_machine TEXT;";

/// The PostgreSQL spelling of [`SCHEMA_V12`].
pub(crate) const PG_SCHEMA_V12: &str = SCHEMA_V12;

/// The PostgreSQL spelling of this module's tables as of schema v11 (see `crate::schema`).
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE parent_sessions (
    id          TEXT PRIMARY KEY NOT NULL,
    host_pid    BIGINT NOT NULL,
    host_start  TEXT NOT NULL,
    opened_at   BIGINT NOT NULL,
    closed_at   BIGINT
);";

impl Missions {
    /// Record that this process opened firing session `id`.
    pub fn open_parent_session(&self, id: &str) -> Result<()> {
        let host = HostId::current();
        self.store.with(|c| {
            c.execute(
                "INSERT INTO parent_sessions (id, host_pid, host_start, opened_at, host_id, host_machine)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (id) DO UPDATE SET host_pid = ?2, host_start = ?3, closed_at = NULL,
                     host_id = ?5, host_machine = ?6",
                params![id, host.pid, host.start, clock::now_ms(), host.id, host.machine],
            )
        })?;
        Ok(())
    }

    /// Firing session `id` has ended (`session/close`, or its process winding down).
    pub fn close_parent_session(&self, id: &str) -> Result<()> {
        self.store.with(|c| {
            c.execute(
                "UPDATE parent_sessions SET closed_at = ?2 WHERE id = ?1 AND closed_at IS NULL",
                params![id, clock::now_ms()],
            )
        })?;
        Ok(())
    }

    /// Is firing session `id` open, in a process that still runs?
    pub fn parent_session_live(&self, id: &str) -> Result<bool> {
        let row: Option<(HostId, Option<i64>)> = self.store.with(|c| {
            c.query_row(
                "SELECT host_pid, host_start, host_id, host_machine, closed_at FROM parent_sessions WHERE id = ?1",
                params![id],
                |r| {
                    let host = HostId {
                        pid: r.get(0)?,
                        start: r.get(1)?,
                        id: r.get::<Option<String>>(2)?.unwrap_or_default(),
                        machine: r.get::<Option<String>>(3)?.unwrap_or_default(),
                    };
                    Ok((host, r.get(4)?))
                },
            )
            .optional()
        })?;
        Ok(match row {
            Some((host, None)) => super::hosts::Hosts::new(self.store.clone()).lives(&host),
            _ => false,
        })
    }

    /// A parented report its live parent could not take after all (the session ended
    /// between the write and the delivery): into the inbox as `parent_gone`, once.
    pub fn inbox_parent_gone(&self, mission: &Mission, report_id: &str) -> Result<()> {
        self.store.write(|tx| {
            let report = tx
                .query_row(
                    "SELECT id, mission_id, kind, summary, detail, refs, handover, created_at
                     FROM reports WHERE id = ?1",
                    params![report_id],
                    |r| report_at(r, 0),
                )
                .optional()?;
            match report {
                Some(r) => copy_to_inbox(tx, mission, &r, PARENT_GONE),
                None => Ok(()),
            }
        })?;
        Ok(())
    }

    /// Every firing session this process opened has ended (it is winding down).
    pub fn close_parent_sessions_of_this_host(&self) -> Result<()> {
        let host = HostId::current();
        self.store.with(|c| {
            c.execute(
                "UPDATE parent_sessions SET closed_at = ?3
                 WHERE host_pid = ?1 AND host_start = ?2 AND COALESCE(host_id, ?4) = ?4
                     AND closed_at IS NULL",
                params![host.pid, host.start, clock::now_ms(), host.id],
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mission::tests::service;
    use crate::mission::{NewMission, Report, ReportInput};

    fn parented(svc: &Missions, parent: &str) -> Mission {
        svc.create(NewMission {
            parent_session_id: Some(parent.into()),
            ..crate::mission::NewMission::new(
                "demo",
                crate::mission::Intent::new("tidy the docs").unwrap(),
                crate::mission::EnvelopeName::new("default").unwrap(),
            )
        })
        .unwrap()
    }

    fn report(svc: &Missions, m: &Mission, summary: &str) -> Report {
        svc.add_report(
            &m.id,
            ReportInput {
                summary: summary.into(),
                ..Default::default()
            },
        )
        .unwrap()
    }

    #[test]
    fn a_live_parent_takes_the_reports_and_an_ended_one_leaves_them_in_the_inbox() {
        let (_d, svc) = service();
        svc.open_parent_session("s-1").unwrap();
        let m = parented(&svc, "s-1");
        assert!(svc.parent_session_live("s-1").unwrap());
        report(&svc, &m, "while it lives");
        assert!(
            svc.inbox(true, 50).unwrap().is_empty(),
            "streamed, not filed"
        );

        svc.close_parent_session("s-1").unwrap();
        assert!(!svc.parent_session_live("s-1").unwrap());
        report(&svc, &m, "after it ended");
        let items = svc.inbox(true, 50).unwrap();
        assert_eq!(items.len(), 1);
        assert_eq!(
            (items[0].reason.as_str(), items[0].report.summary.as_str()),
            (PARENT_GONE, "after it ended")
        );
        assert_eq!(items[0].parent_session_id.as_deref(), Some("s-1"));
    }

    #[test]
    fn a_parent_never_recorded_or_whose_process_is_gone_is_not_live() {
        let (_d, svc) = service();
        assert!(!svc.parent_session_live("nobody").unwrap());
        svc.store
            .with(|c| {
                c.execute(
                    "INSERT INTO parent_sessions (id, host_pid, host_start, opened_at) VALUES ('s-2', ?1, 'not-its-start', 0)",
                    params![std::process::id()],
                )
            })
            .unwrap();
        assert!(!svc.parent_session_live("s-2").unwrap(), "a reused pid");
        svc.open_parent_session("s-3").unwrap();
        svc.close_parent_sessions_of_this_host().unwrap();
        assert!(!svc.parent_session_live("s-3").unwrap());
    }

    #[test]
    fn a_parent_on_another_machine_lives_while_its_host_beats() {
        let (_d, svc) = service();
        let hosts = crate::mission::hosts::Hosts::new(svc.store.clone());
        let far = HostId {
            id: "far-host".into(),
            machine: "another-machine".into(),
            pid: 1,
            start: "1".into(),
        };
        hosts.announce(&far).unwrap();
        svc.store
            .with(|c| {
                c.execute(
                    "INSERT INTO parent_sessions (id, host_pid, host_start, opened_at, host_id, host_machine)
                     VALUES ('s-far', 1, '1', 0, 'far-host', 'another-machine')",
                    [],
                )
            })
            .unwrap();
        assert!(svc.parent_session_live("s-far").unwrap(), "its host beats");
        svc.store
            .with(|c| c.execute("UPDATE hosts SET heartbeat_at = 0", []))
            .unwrap();
        assert!(
            !svc.parent_session_live("s-far").unwrap(),
            "its beat is stale"
        );
    }

    #[test]
    fn a_report_filed_late_for_an_ended_parent_is_filed_once() {
        let (_d, svc) = service();
        svc.open_parent_session("s-4").unwrap();
        let m = parented(&svc, "s-4");
        let r = report(&svc, &m, "raced the close");
        svc.close_parent_session("s-4").unwrap();
        svc.inbox_parent_gone(&m, &r.id).unwrap();
        svc.inbox_parent_gone(&m, &r.id).unwrap();
        assert_eq!(svc.inbox(true, 50).unwrap().len(), 1);
    }
}
