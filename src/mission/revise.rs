//! Sending a rested mission back: `mission revise <id> "<feedback>"` reopens a
//! mission that landed, got stuck or derailed as a new run on the same record. Its
//! reports, plan, asks and earlier check tries stay; each revise is a row here
//! (which run it starts, the feedback, what the mission rested as before, who sent
//! it back), and a `revise` report on the mission says so in its history.
//!
//! The reopening is one guarded write (`… WHERE status IN ('landed','stuck',
//! 'derailed')`): of a revise racing another revise, or a stop, exactly one moves
//! the record. An abandoned mission is not revised (its operator stopped it, or its
//! host was lost): fire it again instead.

use serde::Serialize;

use super::{COLUMNS, Mission, MissionError, Missions, Result, Status, from_row, subjects};
use crate::clock;
use crate::host::HostId;
use crate::store::sql::{OptionalExtension, params};

/// v21: each revise of a mission — the run it starts, its feedback, what the
/// mission rested as before it, who sent it back, whether it went to the queue and
/// when a unit took it up, and the spend the mission had when it was sent back (a
/// run whose envelope counts bounds per run counts from there).
pub(crate) const SCHEMA_V21: &str = "
CREATE TABLE mission_runs (
    mission_id       TEXT NOT NULL,
    run              INTEGER NOT NULL,
    feedback         TEXT NOT NULL,
    from_status      TEXT NOT NULL,
    from_reason      TEXT,
    revised_by       TEXT NOT NULL,
    queued           INTEGER NOT NULL DEFAULT 0,
    revised_at       INTEGER NOT NULL,
    started_at       INTEGER,
    base_tool_calls  INTEGER NOT NULL DEFAULT 0,
    base_tokens      INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (mission_id, run)
);";

/// The PostgreSQL spelling of [`SCHEMA_V21`].
pub(crate) const PG_SCHEMA_V21: &str = "
CREATE TABLE mission_runs (
    mission_id       TEXT NOT NULL,
    run              BIGINT NOT NULL,
    feedback         TEXT NOT NULL,
    from_status      TEXT NOT NULL,
    from_reason      TEXT,
    revised_by       TEXT NOT NULL,
    queued           BIGINT NOT NULL DEFAULT 0,
    revised_at       BIGINT NOT NULL,
    started_at       BIGINT,
    base_tool_calls  BIGINT NOT NULL DEFAULT 0,
    base_tokens      BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (mission_id, run)
);";

/// The longest feedback accepted (it becomes a prompt).
pub const MAX_FEEDBACK_BYTES: usize = 16 * 1024;

/// The statuses a mission may be revised from.
pub const REVISABLE: [Status; 3] = [Status::Landed, Status::Stuck, Status::Derailed];

/// The operator's feedback for a revise: not blank, bounded, without control
/// characters but newlines and tabs. Checked once, where it is typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feedback(String);

impl Feedback {
    pub fn new(raw: &str) -> Result<Feedback> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(MissionError::Invalid(
                "revise: the feedback is empty — say what the agent should change (e.g. mission revise <id> \"the tests for the parser fail; fix them\")".into(),
            ));
        }
        if text.len() > MAX_FEEDBACK_BYTES {
            return Err(MissionError::Invalid(format!(
                "revise: the feedback is too long ({} bytes, max {MAX_FEEDBACK_BYTES}) — put the detail in a file in the workspace and name it",
                text.len()
            )));
        }
        if text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
        {
            return Err(MissionError::Invalid(
                "revise: the feedback must be text without control characters (newlines and tabs are fine)".into(),
            ));
        }
        Ok(Feedback(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a revise asks of the record.
#[derive(Debug, Clone)]
pub struct NewRevise {
    pub feedback: Feedback,
    /// Who sent it back: `cli`, `board`, `web`, `editor`.
    pub by: String,
    /// Hand it to a `missionboard host` (`queued`) rather than run it here (`open`,
    /// held by this process).
    pub queue: bool,
    /// The mission's spend when it was sent back (tool calls, tokens), read by the
    /// caller from its compute record: a run counted afresh counts from here.
    pub base: (u64, u64),
    /// Start the check afresh (its tries count per run): its tries go back to 0.
    pub checks_afresh: bool,
}

/// One revise on the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    /// The run it started (the fire was run 1).
    pub run: u64,
    pub feedback: String,
    /// What the mission rested as before it.
    pub from_status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_reason: Option<String>,
    pub revised_by: String,
    pub queued: bool,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub revised_at: i64,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "clock::ser_opt_rfc3339"
    )]
    pub started_at: Option<i64>,
    #[serde(skip)]
    pub base_tool_calls: u64,
    #[serde(skip)]
    pub base_tokens: u64,
}

const RUN_COLUMNS: &str = "run, feedback, from_status, from_reason, revised_by, queued, revised_at, started_at, base_tool_calls, base_tokens";

fn run_from_row(r: &crate::store::sql::Row<'_>) -> crate::store::sql::Result<Run> {
    let run: i64 = r.get(0)?;
    let queued: i64 = r.get(5)?;
    let calls: i64 = r.get(8)?;
    let tokens: i64 = r.get(9)?;
    Ok(Run {
        run: run.max(0) as u64,
        feedback: r.get(1)?,
        from_status: r.get(2)?,
        from_reason: r.get(3)?,
        revised_by: r.get(4)?,
        queued: queued != 0,
        revised_at: r.get(6)?,
        started_at: r.get(7)?,
        base_tool_calls: calls.max(0) as u64,
        base_tokens: tokens.max(0) as u64,
    })
}

/// Why a revise was refused, worded once for every surface.
pub fn refusal(m: &Mission) -> String {
    let id = &m.id;
    match m.status {
        Status::Open => format!(
            "revise refused: mission {id} is open — its unit is still working on it (or waiting on an answer). Send feedback once it rests (landed, stuck or derailed), or stop it with `missionboard mission stop {id}` and fire it again"
        ),
        Status::Queued => format!(
            "revise refused: mission {id} is queued — it has not run yet. Stop it with `missionboard mission stop {id}` and fire it again with the feedback in its intent"
        ),
        Status::Abandoned => format!(
            "revise refused: mission {id} was abandoned ({}) — only a landed, stuck or derailed mission is sent back. Fire it again with `missionboard mission fire`",
            m.status_reason.as_deref().unwrap_or("stopped")
        ),
        s => format!("revise refused: mission {id} is {s}"),
    }
}

impl Missions {
    /// Reopen rested mission `id` for `revise`: one guarded write moves it from
    /// landed, stuck or derailed to `open` (held by this process) or `queued`, records
    /// the run, sets its check to run again and files the `revise` report. Refused,
    /// naming why, when the mission is not in a revisable state — including when
    /// another revise or a stop moved it first.
    pub fn reopen(&self, id: &str, revise: &NewRevise) -> Result<(Mission, Run)> {
        let before = self.require(id)?;
        if !REVISABLE.contains(&before.status) {
            return Err(MissionError::Conflict(refusal(&before)));
        }
        let me = HostId::current();
        let now = clock::now_ms();
        let status = if revise.queue { "queued" } else { "open" };
        let won = self.store.write(|tx| {
            let moved = tx
                .query_row(
                    &format!(
                        "UPDATE missions SET status = ?2, status_reason = NULL, instance_id = NULL,
                             updated_at = ?3, last_heartbeat = ?3, last_error = NULL,
                             host_pid = ?4, host_start = ?5, host_id = ?6, host_machine = ?7
                         WHERE id = ?1 AND status = ?8 RETURNING {COLUMNS}"
                    ),
                    params![
                        id,
                        status,
                        now,
                        (!revise.queue).then_some(me.pid),
                        (!revise.queue).then_some(me.start.clone()),
                        (!revise.queue).then_some(me.id.clone()),
                        (!revise.queue).then_some(me.machine.clone()),
                        before.status.as_str()
                    ],
                    from_row,
                )
                .optional()?;
            let Some(moved) = moved else {
                return Ok(None);
            };
            let run: i64 = tx.query_row(
                "SELECT COALESCE(MAX(run), 1) + 1 FROM mission_runs WHERE mission_id = ?1",
                params![id],
                |r| r.get(0),
            )?;
            tx.execute(
                "INSERT INTO mission_runs (mission_id, run, feedback, from_status, from_reason, revised_by, queued, revised_at, base_tool_calls, base_tokens)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    id,
                    run,
                    revise.feedback.as_str(),
                    before.status.as_str(),
                    before.status_reason.clone(),
                    revise.by,
                    revise.queue as i64,
                    now,
                    revise.base.0.min(i64::MAX as u64) as i64,
                    revise.base.1.min(i64::MAX as u64) as i64
                ],
            )?;
            // The check runs again before the revised run lands; its tries start
            // over when the envelope counts per run.
            let (sql, values) = super::check::again_statement(id, revise.checks_afresh);
            tx.execute(sql, values.as_slice())?;
            if revise.queue {
                // Back in the queue behind what is already waiting.
                tx.execute("DELETE FROM mission_queue WHERE mission_id = ?1", params![id])?;
                tx.execute(
                    "INSERT INTO mission_queue (mission_id, worktree, queued_at) VALUES (?1, 0, ?2)",
                    params![id, now],
                )?;
            }
            let run = tx.query_row(
                &format!("SELECT {RUN_COLUMNS} FROM mission_runs WHERE mission_id = ?1 AND run = ?2"),
                params![id, run],
                run_from_row,
            )?;
            Ok(Some((moved, run)))
        })?;
        let Some((mission, run)) = won else {
            let now = self.require(id)?;
            return Err(MissionError::Conflict(if REVISABLE.contains(&now.status) {
                format!(
                    "revise refused: mission {id} moved while it was being sent back (it is {} now); look again and retry",
                    now.status
                )
            } else {
                refusal(&now)
            }));
        };
        let summary = format!(
            "revised by {} after it rested {} (run {}): {}",
            run.revised_by,
            run.from_status,
            run.run,
            crate::text::excerpt(&crate::text::one_line(revise.feedback.as_str()), 160)
        );
        self.add_report(
            id,
            super::ReportInput {
                kind: super::report::REVISE_KIND.into(),
                summary,
                detail: revise.feedback.as_str().to_string(),
                ..Default::default()
            },
        )?;
        self.publish(
            subjects::REVISED,
            serde_json::json!({"missionId": id, "run": run.run, "queued": run.queued}),
        );
        Ok((mission, run))
    }

    /// Mission `id`'s revises, oldest first (none: it ran once).
    pub fn runs(&self, id: &str) -> Result<Vec<Run>> {
        Ok(self.store.with(|c| {
            c.prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM mission_runs WHERE mission_id = ?1 ORDER BY run"
            ))?
            .query_map(params![id], run_from_row)?
            .collect()
        })?)
    }

    /// The latest revise of `id`, if it was ever revised.
    pub fn latest_run(&self, id: &str) -> Result<Option<Run>> {
        Ok(self.store.with(|c| {
            c.query_row(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM mission_runs WHERE mission_id = ?1 ORDER BY run DESC LIMIT 1"
                ),
                params![id],
                run_from_row,
            )
            .optional()
        })?)
    }

    /// The revise a unit has yet to take up (a queued revise a host claimed), if
    /// any: its feedback is the unit's opening prompt.
    pub fn pending_revise(&self, id: &str) -> Result<Option<Run>> {
        Ok(self.latest_run(id)?.filter(|r| r.started_at.is_none()))
    }

    /// A unit took up revise `run` of `id`.
    pub fn revise_started(&self, id: &str, run: u64) -> Result<()> {
        self.store.write(|tx| {
            tx.execute(
                "UPDATE mission_runs SET started_at = ?3 WHERE mission_id = ?1 AND run = ?2 AND started_at IS NULL",
                params![id, run as i64, clock::now_ms()],
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn revise(by: &str) -> NewRevise {
        NewRevise {
            feedback: Feedback::new("name the module").unwrap(),
            by: by.into(),
            queue: false,
            base: (0, 0),
            checks_afresh: true,
        }
    }

    #[test]
    fn of_two_revises_racing_exactly_one_moves_the_record() {
        let (_d, svc) = super::super::tests::service();
        let m = super::super::tests::fire(&svc);
        svc.finish(&m.id, Status::Landed, "done").unwrap();
        let racers: Vec<_> = ["cli", "board"]
            .into_iter()
            .map(|by| {
                let (svc, id) = (svc.clone(), m.id.clone());
                std::thread::spawn(move || svc.reopen(&id, &revise(by)))
            })
            .collect();
        let outcomes: Vec<_> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 1);
        let lost = outcomes.into_iter().find_map(Result::err).unwrap();
        assert_eq!(
            lost.to_string(),
            format!(
                "conflict: revise refused: mission {} is open — its unit is still working on it (or waiting on an answer). Send feedback once it rests (landed, stuck or derailed), or stop it with `missionboard mission stop {}` and fire it again",
                m.id, m.id
            )
        );
        let runs = svc.runs(&m.id).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].run, runs[0].from_status.as_str()), (2, "landed"));
        assert_eq!(svc.require(&m.id).unwrap().status, Status::Open);
        // A stop after it wins over nothing: the revised run is stopped, and a stopped
        // mission is not revised.
        svc.finish(&m.id, Status::Abandoned, "stopped by operator")
            .unwrap();
        let refused = svc.reopen(&m.id, &revise("cli")).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("was abandoned (stopped by operator)"),
            "{refused}"
        );
    }

    #[test]
    fn feedback_is_checked_where_it_is_typed() {
        assert!(Feedback::new("  ").is_err());
        assert!(Feedback::new("a\u{1b}[2Jb").is_err());
        assert_eq!(
            Feedback::new(" two\nlines\t ").unwrap().as_str(),
            "two\nlines"
        );
        assert!(Feedback::new(&"x".repeat(MAX_FEEDBACK_BYTES + 1)).is_err());
    }
}
