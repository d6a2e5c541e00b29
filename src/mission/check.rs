//! A mission's check: the command that must pass before the mission lands, chosen
//! when it was fired (`--check`, or its envelope's `check`), and how its tries went.
//! A mission fired without one has no row here: its check state is `none`.
//!
//! The host runs it (`fleet::check`); this module only keeps its record: what runs,
//! how many tries it gets, and the last try's outcome. Each try is also a `check`
//! report on the mission, filed by the host.

use std::time::Duration;

use serde::Serialize;

use super::{Missions, Result};
use crate::clock;
use crate::store::sql::{OptionalExtension, Params, params};

pub(crate) const SCHEMA_V15: &str = "
CREATE TABLE mission_checks (
    mission_id       TEXT PRIMARY KEY NOT NULL,
    command          TEXT NOT NULL,
    timeout_ms       INTEGER NOT NULL,
    max_tries        INTEGER NOT NULL,
    tries            INTEGER NOT NULL DEFAULT 0,
    state            TEXT NOT NULL DEFAULT 'none',
    last_exit        INTEGER,
    last_outcome     TEXT,
    last_output      TEXT,
    last_duration_ms INTEGER,
    updated_at       INTEGER NOT NULL
);";

/// The PostgreSQL spelling of [`SCHEMA_V15`].
pub(crate) const PG_SCHEMA_V15: &str = "
CREATE TABLE mission_checks (
    mission_id       TEXT PRIMARY KEY NOT NULL,
    command          TEXT NOT NULL,
    timeout_ms       BIGINT NOT NULL,
    max_tries        BIGINT NOT NULL,
    tries            BIGINT NOT NULL DEFAULT 0,
    state            TEXT NOT NULL DEFAULT 'none',
    last_exit        BIGINT,
    last_outcome     TEXT,
    last_output      TEXT,
    last_duration_ms BIGINT,
    updated_at       BIGINT NOT NULL
);";

/// A check still `running` when its mission comes to rest was cut short (the
/// mission stopped, the unit or its host went): it goes back to what its tries so
/// far say. Written ahead of a terminal transition, in its transaction, and only
/// while the mission is still open (`?1` the mission, `?2` the time).
pub(crate) const SETTLE_INTERRUPTED: &str = "UPDATE mission_checks
     SET state = CASE WHEN tries = 0 THEN 'none' ELSE 'failed' END, updated_at = ?2
     WHERE mission_id = ?1 AND state = 'running'
       AND EXISTS (SELECT 1 FROM missions WHERE id = ?1 AND status = 'open')";

/// What a fire asks of the check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum CheckChoice {
    /// The envelope's `check`, if it names one.
    #[default]
    FromEnvelope,
    /// `--check "<command>"`: this command, in place of the envelope's.
    Command(String),
    /// `--no-check`: none (refused when the envelope names a check it does not
    /// mark `optional`).
    Skip,
}

/// A check as a mission is fired with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewCheck {
    pub command: String,
    pub timeout: Duration,
    /// How many tries it gets (the envelope's `compute.maxChecks`).
    pub max_tries: u64,
}

impl NewCheck {
    /// What `choice` comes to under an envelope whose `check` is `declared` and whose
    /// `maxChecks` gives `max_tries`; `Err`: the fire is refused, in words that say
    /// how to fire it.
    pub fn resolve(
        choice: &CheckChoice,
        declared: Option<&crate::envelope::format::CheckDecl>,
        max_tries: u64,
        envelope: &str,
    ) -> std::result::Result<Option<NewCheck>, String> {
        let timeout = declared.map_or(crate::envelope::format::DEFAULT_CHECK_TIMEOUT, |d| {
            d.timeout
        });
        match choice {
            CheckChoice::FromEnvelope => Ok(declared.map(|d| NewCheck {
                command: d.command.clone(),
                timeout,
                max_tries,
            })),
            CheckChoice::Command(command) => {
                let command = command.trim();
                if command.is_empty() {
                    return Err("--check: the command is empty — name the command that must pass before the mission lands (e.g. --check \"cargo test -q\")".into());
                }
                if command.chars().any(|c| c.is_control() && c != '\t') {
                    return Err(
                        "--check: the command must be one line without control characters".into(),
                    );
                }
                if command.len() > crate::envelope::format::MAX_CHECK_COMMAND_BYTES {
                    return Err(format!(
                        "--check: the command is too long ({} bytes, max {}) — put it in a script in the workspace and name that",
                        command.len(),
                        crate::envelope::format::MAX_CHECK_COMMAND_BYTES
                    ));
                }
                Ok(Some(NewCheck {
                    command: command.to_string(),
                    timeout,
                    max_tries,
                }))
            }
            CheckChoice::Skip => match declared {
                Some(d) if !d.optional => Err(format!(
                    "--no-check refused: envelope {envelope:?} names a check ({:?}) that every mission under it must pass; it may be skipped only where the envelope's check says \"optional\": true. Fire without --no-check, or give a command of your own with --check",
                    d.command
                )),
                _ => Ok(None),
            },
        }
    }
}

/// Where a mission's check stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckState {
    /// No check, or one that has not run yet.
    None,
    Running,
    Passed,
    Failed,
}

impl CheckState {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckState::None => "none",
            CheckState::Running => "running",
            CheckState::Passed => "passed",
            CheckState::Failed => "failed",
        }
    }

    fn parse(s: &str) -> CheckState {
        match s {
            "running" => CheckState::Running,
            "passed" => CheckState::Passed,
            "failed" => CheckState::Failed,
            _ => CheckState::None,
        }
    }
}

/// A mission's check record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckRecord {
    pub command: String,
    #[serde(skip)]
    pub timeout: Duration,
    pub state: CheckState,
    pub tries: u64,
    pub max_checks: u64,
    /// The last try's exit code, when it exited.
    pub last_exit: Option<i32>,
    /// The last try's outcome in words (`exit 1`, `timed out after 5s`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_outcome: Option<String>,
    /// The tail of the last try's output, sanitized.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_duration_ms: Option<i64>,
}

impl CheckRecord {
    /// Tries left before the mission rests stuck.
    pub fn remaining(&self) -> u64 {
        self.max_checks.saturating_sub(self.tries)
    }

    /// `passed`, `failed 1 of 3`, `running (try 2 of 3)`, `not run yet (3 tries)`:
    /// the state as every surface words it.
    pub fn state_words(&self) -> String {
        match self.state {
            CheckState::None => format!("not run yet ({} tries)", self.max_checks),
            CheckState::Running => {
                format!("running (try {} of {})", self.tries + 1, self.max_checks)
            }
            CheckState::Passed => format!("passed (try {} of {})", self.tries, self.max_checks),
            CheckState::Failed => format!("failed {} of {}", self.tries, self.max_checks),
        }
    }

    /// A short marker for a list row: `✓`, `✗1/3`, `…`, `·`.
    pub fn marker(&self) -> String {
        match self.state {
            CheckState::None => "·".into(),
            CheckState::Running => "…".into(),
            CheckState::Passed => "✓".into(),
            CheckState::Failed => format!("✗{}/{}", self.tries, self.max_checks),
        }
    }
}

/// How one try of a check went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckTry {
    pub passed: bool,
    /// The exit code, when the command exited.
    pub exit: Option<i32>,
    /// The outcome in words: `exit 0`, `exit 1`, `timed out after 5s`, `could not
    /// start: …`, `killed by signal 9`.
    pub outcome: String,
    /// The output's tail, already sanitized.
    pub output: String,
    pub duration: Duration,
}

/// The statement that records `check` for `mission_id`, for a write that carries it
/// in the mission's own transaction (its create, or its queueing).
pub(crate) fn insert_statement(
    mission_id: &str,
    check: &NewCheck,
) -> (&'static str, Vec<crate::store::sql::Value>) {
    (
        "INSERT INTO mission_checks (mission_id, command, timeout_ms, max_tries, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            mission_id,
            check.command,
            check.timeout.as_millis().min(i64::MAX as u128) as i64,
            check.max_tries.min(i64::MAX as u64) as i64,
            clock::now_ms()
        ]
        .values(),
    )
}

/// The statement that sets `mission_id`'s check to run again (a revise): its state
/// back to not run, its tries to 0 when they count per run (`afresh`), else kept.
pub(crate) fn again_statement(
    mission_id: &str,
    afresh: bool,
) -> (&'static str, Vec<crate::store::sql::Value>) {
    (
        "UPDATE mission_checks SET state = 'none',
             tries = CASE WHEN ?2 = 1 THEN 0 ELSE tries END, updated_at = ?3
         WHERE mission_id = ?1",
        params![mission_id, afresh as i64, clock::now_ms()].values(),
    )
}

const COLUMNS: &str = "command, timeout_ms, state, tries, max_tries, last_exit, last_outcome, last_output, last_duration_ms";

fn from_row(r: &crate::store::sql::Row<'_>) -> crate::store::sql::Result<CheckRecord> {
    from_row_at(r, 0)
}

/// A record from [`COLUMNS`] starting at column `at`.
fn from_row_at(
    r: &crate::store::sql::Row<'_>,
    at: usize,
) -> crate::store::sql::Result<CheckRecord> {
    let state: String = r.get(at + 2)?;
    let timeout_ms: i64 = r.get(at + 1)?;
    let tries: i64 = r.get(at + 3)?;
    let max: i64 = r.get(at + 4)?;
    let last_exit: Option<i64> = r.get(at + 5)?;
    Ok(CheckRecord {
        command: r.get(at)?,
        timeout: Duration::from_millis(timeout_ms.max(0) as u64),
        state: CheckState::parse(&state),
        tries: tries.max(0) as u64,
        max_checks: max.max(0) as u64,
        last_exit: last_exit.and_then(|e| i32::try_from(e).ok()),
        last_outcome: r.get(at + 6)?,
        last_output: r.get(at + 7)?,
        last_duration_ms: r.get(at + 8)?,
    })
}

impl Missions {
    /// The check `mission_id` was fired with (`None`: it has none).
    pub fn check(&self, mission_id: &str) -> Result<Option<CheckRecord>> {
        Ok(self.store.with(|c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM mission_checks WHERE mission_id = ?1"),
                params![mission_id],
                from_row,
            )
            .optional()
        })?)
    }

    /// The check records of `ids` that have one, by mission id (a listing's page).
    pub fn checks_of(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashMap<String, CheckRecord>> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        // One read for the page, not one per mission.
        let wanted = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
        Ok(self.store.with(|c| {
            c.prepare_cached(&format!(
                "SELECT mission_id, {COLUMNS} FROM mission_checks
                 WHERE mission_id IN (SELECT value FROM json_each(?1))"
            ))?
            .query_map(params![wanted], |r| {
                let id: String = r.get(0)?;
                Ok((id, from_row_at(r, 1)?))
            })?
            .collect()
        })?)
    }

    /// Grant `more` tries past those spent (an operator approved them on the ask a
    /// paused check raised).
    pub fn grant_check_tries(&self, mission_id: &str, more: u64) -> Result<()> {
        self.store.write(|tx| {
            tx.execute(
                "UPDATE mission_checks SET max_tries = tries + ?2, updated_at = ?3 WHERE mission_id = ?1",
                params![mission_id, more.min(i64::MAX as u64) as i64, clock::now_ms()],
            )
        })?;
        self.publish_check(mission_id);
        Ok(())
    }

    /// Mark the check running (a try has started).
    pub fn check_running(&self, mission_id: &str) -> Result<()> {
        self.store.write(|tx| {
            tx.execute(
                "UPDATE mission_checks SET state = 'running', updated_at = ?2 WHERE mission_id = ?1",
                params![mission_id, clock::now_ms()],
            )
        })?;
        self.publish_check(mission_id);
        Ok(())
    }

    /// A try was cut short before its outcome (its call was dropped): the state goes
    /// back to what the tries so far say, and the try is not counted.
    pub fn check_interrupted(&self, mission_id: &str) -> Result<()> {
        self.store.write(|tx| {
            tx.execute(
                "UPDATE mission_checks SET state = CASE WHEN tries = 0 THEN 'none' ELSE 'failed' END,
                 updated_at = ?2 WHERE mission_id = ?1 AND state = 'running'",
                params![mission_id, clock::now_ms()],
            )
        })?;
        self.publish_check(mission_id);
        Ok(())
    }

    /// Record one try: the row's count and last outcome, and a `check` report on the
    /// mission saying what ran, how it ended, how long it took and the output's
    /// tail. Returns the record as it stands after the try.
    pub fn record_check_try(&self, mission_id: &str, t: &CheckTry) -> Result<CheckRecord> {
        let state = if t.passed { "passed" } else { "failed" };
        let duration_ms = t.duration.as_millis().min(i64::MAX as u128) as i64;
        self.store.write(|tx| {
            tx.execute(
                "UPDATE mission_checks SET tries = tries + 1, state = ?2, last_exit = ?3,
                 last_outcome = ?4, last_output = ?5, last_duration_ms = ?6, updated_at = ?7
                 WHERE mission_id = ?1",
                params![
                    mission_id,
                    state,
                    t.exit.map(i64::from),
                    t.outcome,
                    t.output,
                    duration_ms,
                    clock::now_ms()
                ],
            )
        })?;
        let record = self.check(mission_id)?.ok_or_else(|| {
            super::MissionError::NotFound(format!("{mission_id} (its check record)"))
        })?;
        let summary = format!(
            "check {state} (try {} of {}): {} — {}",
            record.tries,
            record.max_checks,
            crate::text::excerpt(&record.command, 120),
            t.outcome
        );
        let detail = format!(
            "command: {}\noutcome: {}\nduration: {}\n\noutput (tail):\n{}",
            record.command,
            t.outcome,
            crate::duration::format(Duration::from_millis(duration_ms as u64)),
            if t.output.trim().is_empty() {
                "(none)"
            } else {
                t.output.trim_end()
            }
        );
        self.add_report(
            mission_id,
            super::ReportInput {
                kind: super::report::CHECK_KIND.into(),
                summary,
                detail,
                ..Default::default()
            },
        )?;
        Ok(record)
    }

    fn publish_check(&self, mission_id: &str) {
        self.publish(
            "mission.check_changed",
            serde_json::json!({ "missionId": mission_id }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::format::CheckDecl;

    fn decl(optional: bool) -> CheckDecl {
        CheckDecl {
            command: "cargo test -q".into(),
            timeout: Duration::from_secs(60),
            optional,
        }
    }

    #[test]
    fn a_fire_replaces_or_skips_the_envelopes_check_only_as_allowed() {
        let required = decl(false);
        let from = NewCheck::resolve(&CheckChoice::FromEnvelope, Some(&required), 3, "strict")
            .unwrap()
            .unwrap();
        assert_eq!(from.command, "cargo test -q");
        assert_eq!(from.timeout, Duration::from_secs(60));
        let own = NewCheck::resolve(
            &CheckChoice::Command(" make lint ".into()),
            Some(&required),
            2,
            "strict",
        )
        .unwrap()
        .unwrap();
        assert_eq!((own.command.as_str(), own.max_tries), ("make lint", 2));
        let refused =
            NewCheck::resolve(&CheckChoice::Skip, Some(&required), 3, "strict").unwrap_err();
        assert!(
            refused.starts_with(
                "--no-check refused: envelope \"strict\" names a check (\"cargo test -q\")"
            ),
            "{refused}"
        );
        assert_eq!(
            NewCheck::resolve(&CheckChoice::Skip, Some(&decl(true)), 3, "loose").unwrap(),
            None
        );
        assert_eq!(
            NewCheck::resolve(&CheckChoice::Skip, None, 3, "none").unwrap(),
            None
        );
        assert!(NewCheck::resolve(&CheckChoice::Command("a\nb".into()), None, 3, "x").is_err());
    }

    #[test]
    fn each_try_is_counted_and_reported() {
        let (_d, svc) = super::super::tests::service();
        let m = super::super::tests::fire(&svc);
        assert_eq!(svc.check(&m.id).unwrap(), None);
        let new = NewCheck {
            command: "test -f ok".into(),
            timeout: Duration::from_secs(5),
            max_tries: 3,
        };
        svc.store()
            .write(|tx| {
                let (sql, values) = insert_statement(&m.id, &new);
                tx.execute_at_commit(vec![(sql, values)])
            })
            .unwrap();
        let fresh = svc.check(&m.id).unwrap().unwrap();
        assert_eq!(fresh.state_words(), "not run yet (3 tries)");
        svc.check_running(&m.id).unwrap();
        assert_eq!(
            svc.check(&m.id).unwrap().unwrap().state,
            CheckState::Running
        );
        let failed = svc
            .record_check_try(
                &m.id,
                &CheckTry {
                    passed: false,
                    exit: Some(1),
                    outcome: "exit 1".into(),
                    output: "missing ok\n".into(),
                    duration: Duration::from_millis(20),
                },
            )
            .unwrap();
        assert_eq!(
            (failed.state_words(), failed.remaining(), failed.last_exit),
            ("failed 1 of 3".to_string(), 2, Some(1))
        );
        let r = &svc.reports(&m.id, 10).unwrap()[0];
        assert_eq!(r.kind, "check");
        assert_eq!(r.summary, "check failed (try 1 of 3): test -f ok — exit 1");
        assert_eq!(
            r.detail,
            "command: test -f ok\noutcome: exit 1\nduration: 20ms\n\noutput (tail):\nmissing ok"
        );
    }
}
