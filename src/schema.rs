//! The database schema: every table-owning module's migrations, in version order.
//!
//! This is the one place that names them all, so it sits above every module that
//! owns a table and the store below them only runs the list it is handed. Append
//! only: a released version is never edited or reordered, so files written by an
//! older missionboard still open and migrate forward.

use std::path::Path;

use crate::store::{Location, Migration, Store, StoreError};

/// Version `i + 1` is `MIGRATIONS[i]`; `PRAGMA user_version` records how many ran.
pub const MIGRATIONS: &[Migration] = &[
    // v1: configuration and the cross-process bus.
    &[crate::config::SCHEMA_V1, crate::bus::SCHEMA_V1],
    // v2: missions, their reports, plan revisions and the operator inbox.
    &[
        crate::mission::ddl::SCHEMA_V2,
        crate::mission::report::SCHEMA_V2,
        crate::mission::plan::SCHEMA_V2,
        crate::mission::inbox::SCHEMA_V2,
    ],
    // v3: durable asks.
    &[crate::asks::SCHEMA_V3],
    // v4: runs parked on an ask past its park window.
    &[crate::asks::checkpoint::SCHEMA_V4],
    // v5: per-mission compute: the unit's session model, raised limits, a pause.
    &[crate::mission::compute::SCHEMA_V5],
    // v6: the oracle's operator trace.
    &[crate::asks::trace::SCHEMA_V6],
    // v7: checkpoints written with their ask (parked marks the turn's end); the
    // compute each mission has spent, so a resumed session continues it.
    &[
        crate::asks::checkpoint::SCHEMA_V7,
        crate::mission::compute::SCHEMA_V7,
    ],
    // v8: which mission owns which git worktree, and the commit it started from.
    &[crate::worktree::SCHEMA_V8],
    // v9: the host process of each mission, and the last-activity index.
    &[crate::mission::ddl::SCHEMA_V9],
    // v10: the editor sessions that fire missions, and whether each still lives.
    &[crate::mission::parent::SCHEMA_V10],
    // v11: per-status mission counts and per-state ask counts, kept by triggers.
    &[crate::mission::ddl::SCHEMA_V11, crate::asks::SCHEMA_V11],
    // v12: hosts across machines: each host's row and heartbeat, and the host id
    // and machine beside the pid on every record that names a host.
    &[
        crate::mission::hosts::SCHEMA_V12,
        crate::mission::ddl::SCHEMA_V12,
        crate::mission::parent::SCHEMA_V12,
        crate::asks::checkpoint::SCHEMA_V12,
    ],
    // v13: the durable queue (queued missions and their fire choices), and the
    // width, load and labels each host advertises.
    &[crate::mission::queue::SCHEMA_V13],
    // v14: who answered each ask (surface and device); the web surface's paired
    // devices and pairing codes.
    &[crate::asks::SCHEMA_V14, crate::devices::SCHEMA_V14],
    // v15: each mission's check — its command, timeout and tries, and how the last
    // try went.
    &[crate::mission::check::SCHEMA_V15],
    // v16: what each mission's spend cost: tokens split as prices are, and the
    // agent's own reported cost.
    &[crate::mission::compute::SCHEMA_V16],
    // v17: the notification outbox: events written by triggers with the ask or the
    // status they announce, each target's deliveries and fan-out cursor.
    &[crate::notify::SCHEMA_V17],
    // v18: schedules, webhook triggers and what each fired.
    &[
        crate::sched::schedules::SCHEMA_V18,
        crate::sched::triggers::SCHEMA_V18,
    ],
    // v19: the form an elicitation ask carries.
    &[crate::asks::SCHEMA_V19],
    // v20: allowances: an operator's "allow always (this mission)", kept by us.
    &[crate::asks::allowances::SCHEMA_V20],
    // v21: each revise of a mission (`mission revise`): the run it starts, its
    // feedback, what the mission rested as before.
    &[crate::mission::revise::SCHEMA_V21],
    // v22: what each mission's units used: the peak memory of a unit's process
    // tree and the CPU time of its units' trees.
    &[crate::mission::compute::SCHEMA_V22],
    // v23: the agent's context fill (its last `usage_update`) on the compute record,
    // and a mission's extra roots (`--add-dir`).
    &[
        crate::mission::compute::SCHEMA_V23_CONTEXT,
        crate::mission::roots::SCHEMA_V23_ROOTS,
    ],
    // v24: money — a raised maxCostUsd, each mission's priced cost and the oracle's
    // spend on it, and its admission against the fleet's budgets.
    &[crate::mission::compute::SCHEMA_V24],
    // v25: the spend rollup — each UTC hour's spend per agent, envelope, label,
    // host and model, kept by triggers and backfilled from existing records.
    &[crate::mission::spend_rollup::SCHEMA_V25],
];

/// The same versions on PostgreSQL, numbered alike so a version means one schema on
/// both. PostgreSQL support began at v11, so its v11 creates every table as SQLite's
/// v1–v11 leave them (v1–v10 have nothing to do on a database that starts there);
/// from v12 on, each version lands in both lists at once.
pub const PG_MIGRATIONS: &[Migration] = &[
    &[],
    &[],
    &[],
    &[],
    &[],
    &[],
    &[],
    &[],
    &[],
    &[],
    &[
        crate::config::PG_SCHEMA_V11,
        crate::bus::PG_SCHEMA_V11,
        crate::mission::ddl::PG_SCHEMA_V11,
        crate::mission::report::PG_SCHEMA_V11,
        crate::mission::plan::PG_SCHEMA_V11,
        crate::mission::inbox::PG_SCHEMA_V11,
        crate::asks::PG_SCHEMA_V11,
        crate::asks::checkpoint::PG_SCHEMA_V11,
        crate::mission::compute::PG_SCHEMA_V11,
        crate::asks::trace::PG_SCHEMA_V11,
        crate::worktree::PG_SCHEMA_V11,
        crate::mission::parent::PG_SCHEMA_V11,
    ],
    &[
        crate::mission::hosts::PG_SCHEMA_V12,
        crate::mission::ddl::PG_SCHEMA_V12,
        crate::mission::parent::PG_SCHEMA_V12,
        crate::asks::checkpoint::PG_SCHEMA_V12,
    ],
    &[crate::mission::queue::PG_SCHEMA_V13],
    &[crate::asks::PG_SCHEMA_V14, crate::devices::PG_SCHEMA_V14],
    &[crate::mission::check::PG_SCHEMA_V15],
    &[crate::mission::compute::PG_SCHEMA_V16],
    &[crate::notify::PG_SCHEMA_V17],
    &[
        crate::sched::schedules::PG_SCHEMA_V18,
        crate::sched::triggers::PG_SCHEMA_V18,
    ],
    &[crate::asks::PG_SCHEMA_V19],
    &[crate::asks::allowances::PG_SCHEMA_V20],
    &[crate::mission::revise::PG_SCHEMA_V21],
    &[crate::mission::compute::PG_SCHEMA_V22],
    &[
        crate::mission::compute::PG_SCHEMA_V23_CONTEXT,
        crate::mission::roots::PG_SCHEMA_V23_ROOTS,
    ],
    &[crate::mission::compute::PG_SCHEMA_V24],
    &[crate::mission::spend_rollup::PG_SCHEMA_V25],
];

impl Store {
    /// Open (creating if needed) the missionboard database at `path` with the full
    /// schema: pending migrations applied, a file from a newer missionboard refused.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        Store::open_with(path, MIGRATIONS)
    }

    /// Open the store at `location` (either backend) with the full schema.
    pub fn open_at(location: &Location) -> Result<Store, StoreError> {
        match location {
            Location::File(path) => Store::open(path),
            Location::Postgres(url) => Store::connect_with(url, PG_MIGRATIONS),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_backends_know_the_same_versions() {
        assert_eq!(MIGRATIONS.len(), PG_MIGRATIONS.len());
    }

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

    /// The count tables (v11) against a real COUNT of the rows they stand for.
    fn counted(s: &Store) -> Vec<(String, i64, i64)> {
        s.with(|c| {
            let mut out = Vec::new();
            for (table, column, counts) in [
                ("missions", "status", "mission_status_counts"),
                ("asks", "state", "ask_state_counts"),
            ] {
                let sql = format!(
                    "SELECT v, COALESCE((SELECT n FROM {counts} WHERE {column} = v), 0),
                            (SELECT COUNT(*) FROM {table} WHERE {column} = v)
                     FROM (SELECT 'open' AS v UNION SELECT 'done' UNION SELECT 'pending'
                           UNION SELECT 'answered')"
                );
                let mut st = c.prepare(&sql)?;
                let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
                for row in rows {
                    out.push(row?);
                }
            }
            Ok(out)
        })
        .unwrap()
    }

    fn insert(c: &crate::store::Conn<'_>, id: &str, status: &str) -> crate::store::sql::Result<()> {
        c.execute(
            "INSERT INTO missions (id, intent, agent_name, policy_name, status, created_at, updated_at)
             VALUES (?1, 'i', 'a', 'p', ?2, 0, 0)",
            crate::store::sql::params![id, status],
        )?;
        c.execute(
            "INSERT INTO asks (id, tools_name, tool_name, state, mission_id, created_at, expires_at)
             VALUES (?1, 't', 't', ?2, ?1, 0, 0)",
            crate::store::sql::params![id, if status == "open" { "pending" } else { "answered" }],
        )?;
        Ok(())
    }

    #[test]
    fn status_counts_are_backfilled_and_kept_exact_by_every_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home/board.db");
        let before_counts = 10; // v11 brought the counts
        let old = Store::open_with(&path, &MIGRATIONS[..before_counts]).unwrap();
        old.with(|c| {
            for (i, status) in ["open", "open", "done"].iter().enumerate() {
                insert(c, &format!("m{i}"), status)?;
            }
            Ok(())
        })
        .unwrap();
        drop(old);

        let s = Store::open(&path).unwrap();
        let exact = |rows: Vec<(String, i64, i64)>, open: i64| {
            for (value, kept, counted) in &rows {
                assert_eq!(kept, counted, "{value}: kept {kept}, counted {counted}");
            }
            assert!(rows.contains(&("open".into(), open, open)), "{rows:?}");
        };
        exact(counted(&s), 2);

        s.with(|c| {
            insert(c, "m3", "open")?;
            c.execute(
                "UPDATE missions SET status = 'done' WHERE id IN ('m0', 'm1')",
                [],
            )?;
            c.execute("UPDATE asks SET state = 'answered' WHERE id = 'm0'", [])?;
            // A write that leaves the status as it was changes no count.
            c.execute("UPDATE missions SET status = 'open' WHERE id = 'm3'", [])?;
            c.execute("DELETE FROM asks WHERE id = 'm2'", [])?;
            Ok(())
        })
        .unwrap();
        exact(counted(&s), 1);
    }
}

#[cfg(test)]
mod spend_rollup_tests {
    use super::*;

    /// The spend rollup's rows against the same sums worked out afresh from every
    /// mission's record.
    fn rollup_and_afresh(s: &Store) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
        const GROUP: &str = "hour_bucket, agent, envelope, label, host, has_model, model";
        const SUMS: &str = "reported, reported_micro_usd, unreported_with_tokens, unreported_input,
            unreported_output, unreported_cached, tokens, tool_calls, oracle_micro_usd, oracle_unpriced, cpu_ms";
        let sums_of = SUMS
            .split(',')
            .map(|c| format!("SUM({})", c.trim()))
            .collect::<Vec<_>>()
            .join(", ");
        let read = |sql: &str| {
            s.with(|c| {
                let mut st = c.prepare(sql)?;
                let rows = st.query_map([], |r| {
                    (0..20)
                        .map(|i| {
                            r.get::<Option<i64>>(i)
                                .map(|v| format!("{v:?}"))
                                .or_else(|_| r.get::<String>(i))
                        })
                        .collect::<crate::store::sql::Result<Vec<String>>>()
                })?;
                rows.collect::<crate::store::sql::Result<Vec<_>>>()
            })
            .unwrap()
        };
        (
            read(&format!(
                "SELECT {GROUP}, missions, {SUMS}, peak_rss_bytes FROM spend_rollup ORDER BY {GROUP}"
            )),
            read(&format!(
                "SELECT {GROUP}, COUNT(*), {sums_of}, MAX(peak_rss_bytes) FROM spend_contributions
                 GROUP BY {GROUP} ORDER BY {GROUP}"
            )),
        )
    }

    fn exact(s: &Store, when: &str) {
        let (kept, afresh) = rollup_and_afresh(s);
        assert_eq!(kept, afresh, "{when}");
    }

    fn mission(
        c: &crate::store::Conn<'_>,
        id: &str,
        agent: &str,
        at: i64,
    ) -> crate::store::sql::Result<()> {
        c.execute(
            "INSERT INTO missions (id, intent, agent_name, policy_name, status, created_at, updated_at)
             VALUES (?1, 'i', ?2, 'p', 'open', ?3, ?3)",
            crate::store::sql::params![id, agent, at],
        )?;
        Ok(())
    }

    fn compute(
        c: &crate::store::Conn<'_>,
        id: &str,
        model: &str,
        tokens: i64,
        peak: Option<i64>,
    ) -> crate::store::sql::Result<()> {
        c.execute(
            "INSERT INTO mission_compute (mission_id, model, spent_input_tokens, spent_output_tokens, spent_tokens,
                 peak_rss_bytes, cpu_ms, updated_at)
             VALUES (?1, ?2, ?3, 1, ?3 + 1, ?4, 7, 0)",
            crate::store::sql::params![id, model, tokens, peak],
        )?;
        Ok(())
    }

    #[test]
    fn the_spend_rollup_is_backfilled_and_kept_exact_by_every_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home/board.db");
        let before_rollup = 24;
        let old = Store::open_with(&path, &MIGRATIONS[..before_rollup]).unwrap();
        old.with(|c| {
            mission(c, "m0", "claude", 1_000)?;
            compute(c, "m0", "gpt-5", 100, Some(500))?;
            mission(c, "m1", "claude", 2_000)?;
            compute(c, "m1", "gpt-5", 50, Some(900))?;
            // A mission that never started a unit counts, with no model.
            mission(c, "m2", "codex", 3_600_000 * 5 + 1)?;
            Ok(())
        })
        .unwrap();
        drop(old);

        let s = Store::open(&path).unwrap();
        exact(&s, "backfilled");
        let (kept, _) = rollup_and_afresh(&s);
        assert_eq!(kept.len(), 2, "{kept:?}");

        s.with(|c| {
            // A usage report adds to the record: a delta, not a second count.
            c.execute(
                "UPDATE mission_compute SET spent_input_tokens = spent_input_tokens + 40,
                     spent_tokens = spent_tokens + 40, reported_cost_micro_usd = 1200 WHERE mission_id = 'm0'",
                [],
            )?;
            Ok(())
        })
        .unwrap();
        exact(&s, "after a usage report");
        s.with(|c| {
            // The group's peak holder moves to another model: the peak falls back.
            c.execute(
                "UPDATE mission_compute SET model = 'o3' WHERE mission_id = 'm1'",
                [],
            )?;
            Ok(())
        })
        .unwrap();
        exact(&s, "after the peak holder moved");
        s.with(|c| {
            // A record written before its mission, then the mission.
            compute(c, "m3", "gpt-5", 10, None)?;
            mission(c, "m3", "qwen", 4_000)?;
            c.execute(
                "INSERT INTO mission_queue (mission_id, run_on, queued_at) VALUES ('m2', 'gpu', 0)",
                [],
            )?;
            c.execute(
                "UPDATE missions SET host_machine = 'build-1' WHERE id = 'm0'",
                [],
            )?;
            c.execute(
                "UPDATE missions SET created_at = created_at + 7200000 WHERE id = 'm1'",
                [],
            )?;
            c.execute("DELETE FROM mission_queue WHERE mission_id = 'm2'", [])?;
            c.execute("DELETE FROM mission_compute WHERE mission_id = 'm3'", [])?;
            // A write no figure reads changes nothing.
            c.execute(
                "UPDATE mission_compute SET context_used = 5 WHERE mission_id = 'm0'",
                [],
            )?;
            Ok(())
        })
        .unwrap();
        exact(&s, "after moves between groups");
    }
}
