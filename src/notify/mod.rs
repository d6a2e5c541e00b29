//! Notifications for the operator who walked away: an ntfy topic, a JSON webhook or
//! a Slack/Discord incoming webhook hears when a question or a gated call waits, a
//! compute bound is crossed, a mission rests, or a host with missions is lost.
//!
//! Durable end to end. Each event is written by a trigger in the same transaction as
//! the row it announces (an ask raised, a mission's status changed), so no event is
//! lost between the write and a crash. Each configured target (`notify-url`) is fanned
//! out from a per-target cursor into one delivery row per (event, target), keyed so a
//! second fan-out (another host, a restart) adds nothing. A delivery is sent by the
//! one process whose guarded claim took it, retried with backoff, and recorded sent
//! once its receiver said 2xx: a restart neither loses nor repeats one. Sending runs
//! on a task of its own with timeouts, so a receiver that is down or slow never
//! slows a mission.

mod deliver;
pub mod target;

use crate::clock;
use crate::store::sql::{OptionalExtension, params};
use crate::store::{Store, StoreError};

pub use deliver::{Deliverer, spawn};
pub use target::{EventKind, Format, Target};

/// v17: the events notifications announce, written by triggers in the transaction
/// that raises an ask or rests a mission; each target's deliveries; how far each
/// target has been fanned out.
pub(crate) const SCHEMA_V17: &str = "
CREATE TABLE notify_events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    kind       TEXT NOT NULL,
    mission_id TEXT,
    ask_id     TEXT,
    summary    TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);
CREATE INDEX notify_events_by_time ON notify_events (created_at);
CREATE TABLE notify_deliveries (
    event_id      INTEGER NOT NULL,
    target        TEXT NOT NULL,
    state         TEXT NOT NULL DEFAULT 'pending',
    attempts      INTEGER NOT NULL DEFAULT 0,
    next_at       INTEGER NOT NULL,
    claimed_by    TEXT,
    claimed_until INTEGER,
    last_error    TEXT,
    created_at    INTEGER NOT NULL,
    done_at       INTEGER,
    PRIMARY KEY (event_id, target)
);
CREATE INDEX notify_deliveries_due ON notify_deliveries (state, next_at);
CREATE TABLE notify_cursors (
    target     TEXT PRIMARY KEY NOT NULL,
    seen_until INTEGER NOT NULL
);
CREATE TRIGGER notify_ask_waits AFTER INSERT ON asks WHEN NEW.state = 'pending' BEGIN
    INSERT INTO notify_events (kind, mission_id, ask_id, summary, created_at) VALUES (
        CASE WHEN NEW.tools_name = 'mission' AND NEW.tool_name = 'mission_ask_attention' THEN 'question'
             WHEN NEW.tools_name = 'mission' AND NEW.tool_name = 'compute_bound' THEN 'bound'
             ELSE 'gated' END,
        NEW.mission_id, NEW.id,
        CASE WHEN NEW.tools_name = 'mission' THEN NEW.args_summary
             ELSE NEW.tools_name || '.' || NEW.tool_name || ': ' || NEW.args_summary END,
        NEW.created_at);
END;
CREATE TRIGGER notify_mission_rests AFTER UPDATE OF status ON missions
    WHEN OLD.status IS NOT NEW.status AND (NEW.status IN ('landed', 'derailed', 'stuck')
        OR (NEW.status = 'abandoned' AND NEW.status_reason LIKE 'reclaimed%')) BEGIN
    INSERT INTO notify_events (kind, mission_id, ask_id, summary, created_at) VALUES (
        CASE NEW.status WHEN 'abandoned' THEN 'host-lost' ELSE NEW.status END,
        NEW.id, NULL,
        NEW.intent || COALESCE(' — ' || NEW.status_reason, ''),
        NEW.updated_at);
END;";

/// The PostgreSQL spelling of [`SCHEMA_V17`]: one trigger function per table.
pub(crate) const PG_SCHEMA_V17: &str = "
CREATE TABLE notify_events (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       TEXT NOT NULL,
    mission_id TEXT,
    ask_id     TEXT,
    summary    TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL
);
CREATE INDEX notify_events_by_time ON notify_events (created_at);
CREATE TABLE notify_deliveries (
    event_id      BIGINT NOT NULL,
    target        TEXT NOT NULL,
    state         TEXT NOT NULL DEFAULT 'pending',
    attempts      BIGINT NOT NULL DEFAULT 0,
    next_at       BIGINT NOT NULL,
    claimed_by    TEXT,
    claimed_until BIGINT,
    last_error    TEXT,
    created_at    BIGINT NOT NULL,
    done_at       BIGINT,
    PRIMARY KEY (event_id, target)
);
CREATE INDEX notify_deliveries_due ON notify_deliveries (state, next_at);
CREATE TABLE notify_cursors (
    target     TEXT PRIMARY KEY NOT NULL,
    seen_until BIGINT NOT NULL
);
CREATE FUNCTION notify_ask_waits() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO notify_events (kind, mission_id, ask_id, summary, created_at) VALUES (
        CASE WHEN NEW.tools_name = 'mission' AND NEW.tool_name = 'mission_ask_attention' THEN 'question'
             WHEN NEW.tools_name = 'mission' AND NEW.tool_name = 'compute_bound' THEN 'bound'
             ELSE 'gated' END,
        NEW.mission_id, NEW.id,
        CASE WHEN NEW.tools_name = 'mission' THEN NEW.args_summary
             ELSE NEW.tools_name || '.' || NEW.tool_name || ': ' || NEW.args_summary END,
        NEW.created_at);
    RETURN NULL;
END $$;
CREATE TRIGGER notify_ask_waits AFTER INSERT ON asks
    FOR EACH ROW WHEN (NEW.state = 'pending') EXECUTE FUNCTION notify_ask_waits();
CREATE FUNCTION notify_mission_rests() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO notify_events (kind, mission_id, ask_id, summary, created_at) VALUES (
        CASE NEW.status WHEN 'abandoned' THEN 'host-lost' ELSE NEW.status END,
        NEW.id, NULL,
        NEW.intent || COALESCE(' — ' || NEW.status_reason, ''),
        NEW.updated_at);
    RETURN NULL;
END $$;
CREATE TRIGGER notify_mission_rests AFTER UPDATE OF status ON missions
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status AND (NEW.status IN ('landed', 'derailed', 'stuck')
        OR (NEW.status = 'abandoned' AND NEW.status_reason LIKE 'reclaimed%')))
    EXECUTE FUNCTION notify_mission_rests();";

/// How far back a fan-out looks past its target's cursor: an event committed late
/// (its time taken before a slower transaction's) is still found; the delivery key
/// keeps it from being added twice.
const FAN_OUT_SLACK_MS: i64 = 10 * 60 * 1000;
/// How often a target's cursor is moved forward (well inside the slack).
const CURSOR_EVERY_MS: i64 = 60 * 1000;
/// Events and deliveries older than this are pruned.
const KEEP_MS: i64 = 7 * 24 * 3600 * 1000;
/// How many times a delivery is tried before it is given up.
pub const MAX_ATTEMPTS: i64 = 8;

/// One event to announce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: i64,
    pub kind: EventKind,
    pub mission_id: Option<String>,
    pub ask_id: Option<String>,
    /// Agent-written: sanitized before it leaves.
    pub summary: String,
    pub created_at: i64,
}

/// A delivery this process claimed: its event, where it goes.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub event: Event,
    pub target: String,
    pub attempts: i64,
}

/// The notification outbox of a store.
#[derive(Clone)]
pub struct Outbox {
    store: Store,
}

impl Outbox {
    pub fn new(store: Store) -> Outbox {
        Outbox { store }
    }

    /// Add a delivery to `target` for every event since its cursor that it wants.
    /// A target seen for the first time starts at `configured_at`, when it was
    /// configured: it is sent nothing from before, and everything since, even when
    /// no deliverer ran in between. How many deliveries were added.
    pub fn fan_out(&self, target: &Target, configured_at: i64) -> Result<usize, StoreError> {
        let now = clock::now_ms();
        let key = target.key();
        self.store.write(|c| {
            let cursor: Option<i64> = c
                .query_row(
                    "SELECT seen_until FROM notify_cursors WHERE target = ?1",
                    params![key],
                    |r| r.get(0),
                )
                .optional()?;
            let since = match cursor {
                Some(since) => since,
                None => {
                    c.execute(
                        "INSERT INTO notify_cursors (target, seen_until) VALUES (?1, ?2)",
                        params![key, configured_at],
                    )?;
                    // The slack applies to a cursor a fan-out moved, not to this start.
                    configured_at + FAN_OUT_SLACK_MS
                }
            };
            let events: Vec<(i64, String)> = c.query_map(
                "SELECT id, kind FROM notify_events WHERE created_at >= ?1 ORDER BY id",
                params![since - FAN_OUT_SLACK_MS],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let mut added = 0;
            for (id, kind) in events {
                let Some(kind) = EventKind::parse(&kind) else {
                    continue;
                };
                if !target.wants(kind) {
                    continue;
                }
                added += c.execute(
                    "INSERT INTO notify_deliveries (event_id, target, next_at, created_at)
                     VALUES (?1, ?2, ?3, ?3) ON CONFLICT (event_id, target) DO NOTHING",
                    params![id, key, now],
                )?;
            }
            // The cursor moves only now and then: every commit wakes every process
            // watching the store (this task too), so a round that found nothing new
            // writes nothing. The window it leaves is re-read, and keyed, each round.
            if cursor.is_some_and(|at| now - at >= CURSOR_EVERY_MS) {
                c.execute(
                    "UPDATE notify_cursors SET seen_until = ?2 WHERE target = ?1 AND seen_until < ?2",
                    params![key, now],
                )?;
            }
            Ok(added)
        })
    }

    /// Claim up to `limit` due deliveries for `me`, each by a guarded write only one
    /// process wins, for `lease_ms` (past it, another may take it again).
    pub fn claim_due(
        &self,
        me: &str,
        lease_ms: i64,
        limit: usize,
    ) -> Result<Vec<Claimed>, StoreError> {
        let now = clock::now_ms();
        let due: Vec<(i64, String)> = self.store.with(|c| {
            c.query_map(
                "SELECT event_id, target FROM notify_deliveries
                 WHERE state = 'pending' AND next_at <= ?1
                   AND (claimed_until IS NULL OR claimed_until < ?1)
                 ORDER BY next_at, event_id LIMIT ?2",
                params![now, limit as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })?;
        let mut claimed = Vec::new();
        for (event_id, target) in due {
            let won = self.store.with(|c| {
                c.execute(
                    "UPDATE notify_deliveries SET claimed_by = ?3, claimed_until = ?4
                     WHERE event_id = ?1 AND target = ?2 AND state = 'pending' AND next_at <= ?5
                       AND (claimed_until IS NULL OR claimed_until < ?5)",
                    params![event_id, target, me, now + lease_ms, now],
                )
            })?;
            if won != 1 {
                continue;
            }
            let row = self.store.with(|c| {
                c.query_row(
                    "SELECT e.id, e.kind, e.mission_id, e.ask_id, e.summary, e.created_at, d.attempts
                     FROM notify_events e JOIN notify_deliveries d ON d.event_id = e.id
                     WHERE d.event_id = ?1 AND d.target = ?2",
                    params![event_id, target],
                    |r| {
                        Ok((
                            r.get::<i64>(0)?,
                            r.get::<String>(1)?,
                            r.get::<Option<String>>(2)?,
                            r.get::<Option<String>>(3)?,
                            r.get::<String>(4)?,
                            r.get::<i64>(5)?,
                            r.get::<i64>(6)?,
                        ))
                    },
                )
                .optional()
            })?;
            let Some((id, kind, mission_id, ask_id, summary, created_at, attempts)) = row else {
                continue;
            };
            let Some(kind) = EventKind::parse(&kind) else {
                self.finish(event_id, &target, me, "skipped", Some("unknown event kind"))?;
                continue;
            };
            claimed.push(Claimed {
                event: Event {
                    id,
                    kind,
                    mission_id,
                    ask_id,
                    summary,
                    created_at,
                },
                target,
                attempts,
            });
        }
        Ok(claimed)
    }

    /// Record a claimed delivery done: `sent`, or `skipped` (nothing to announce any
    /// more). Only the claim's holder records it.
    pub fn finish(
        &self,
        event_id: i64,
        target: &str,
        me: &str,
        state: &str,
        note: Option<&str>,
    ) -> Result<bool, StoreError> {
        let n = self.store.with(|c| {
            c.execute(
                "UPDATE notify_deliveries SET state = ?4, done_at = ?5, claimed_until = NULL,
                        attempts = attempts + 1, last_error = ?6
                 WHERE event_id = ?1 AND target = ?2 AND claimed_by = ?3 AND state = 'pending'",
                params![event_id, target, me, state, clock::now_ms(), note],
            )
        })?;
        Ok(n == 1)
    }

    /// Record a failed try: tried again after a backoff, or given up after
    /// [`MAX_ATTEMPTS`].
    pub fn failed(&self, claimed: &Claimed, me: &str, error: &str) -> Result<(), StoreError> {
        let attempts = claimed.attempts + 1;
        let now = clock::now_ms();
        let state = if attempts >= MAX_ATTEMPTS {
            "failed"
        } else {
            "pending"
        };
        self.store.with(|c| {
            c.execute(
                "UPDATE notify_deliveries SET state = ?4, attempts = ?5, next_at = ?6,
                        claimed_until = NULL, last_error = ?7
                 WHERE event_id = ?1 AND target = ?2 AND claimed_by = ?3 AND state = 'pending'",
                params![
                    claimed.event.id,
                    claimed.target,
                    me,
                    state,
                    attempts,
                    now + backoff_ms(attempts),
                    crate::text::excerpt(&crate::text::one_line(error), 300)
                ],
            )
        })?;
        Ok(())
    }

    /// Whether ask `id` still waits (a notification about an ask answered meanwhile
    /// is not sent).
    pub fn ask_waits(&self, id: &str) -> Result<bool, StoreError> {
        let state: Option<String> = self.store.with(|c| {
            c.query_row("SELECT state FROM asks WHERE id = ?1", params![id], |r| {
                r.get(0)
            })
            .optional()
        })?;
        Ok(state.as_deref() == Some("pending"))
    }

    /// Drop events and deliveries past their keeping time, and cursors of targets
    /// no longer configured.
    pub fn prune(&self, targets: &[Target]) -> Result<(), StoreError> {
        let cutoff = clock::now_ms() - KEEP_MS;
        let keys: Vec<String> = targets.iter().map(Target::key).collect();
        self.store.with(|c| {
            c.execute(
                "DELETE FROM notify_deliveries WHERE created_at < ?1",
                params![cutoff],
            )?;
            c.execute(
                "DELETE FROM notify_events WHERE created_at < ?1",
                params![cutoff],
            )?;
            let cursors: Vec<String> =
                c.query_map("SELECT target FROM notify_cursors", params![], |r| r.get(0))?;
            for gone in cursors.iter().filter(|t| !keys.contains(t)) {
                c.execute(
                    "DELETE FROM notify_cursors WHERE target = ?1",
                    params![gone],
                )?;
            }
            Ok(())
        })
    }

    /// Every delivery, oldest first: what tests and diagnostics read.
    pub fn deliveries(&self) -> Result<Vec<Delivery>, StoreError> {
        self.store.with(|c| {
            c.query_map(
                "SELECT d.event_id, e.kind, d.target, d.state, d.attempts
                 FROM notify_deliveries d JOIN notify_events e ON e.id = d.event_id
                 ORDER BY d.event_id, d.target",
                params![],
                |r| {
                    Ok(Delivery {
                        event_id: r.get(0)?,
                        kind: r.get(1)?,
                        target: r.get(2)?,
                        state: r.get(3)?,
                        attempts: r.get(4)?,
                    })
                },
            )
        })
    }
}

/// One delivery as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub event_id: i64,
    pub kind: String,
    /// The receiver's URL.
    pub target: String,
    /// `pending`, `sent`, `skipped` or `failed`.
    pub state: String,
    pub attempts: i64,
}

/// The wait before try `attempts + 1`: 2 s doubling, at most 5 minutes.
pub fn backoff_ms(attempts: i64) -> i64 {
    let shift = attempts.clamp(1, 20) - 1;
    (2_000i64 << shift).min(5 * 60 * 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_triggers_name_the_ask_tools_the_asks_module_uses() {
        for sql in [SCHEMA_V17, PG_SCHEMA_V17] {
            assert!(sql.contains(&format!(
                "NEW.tools_name = '{}' AND NEW.tool_name = '{}'",
                crate::asks::QUESTION_TOOLS,
                crate::asks::QUESTION_TOOL
            )));
            assert!(sql.contains(&format!("NEW.tool_name = '{}'", crate::asks::BUDGET_TOOL)));
        }
    }

    fn outbox() -> (tempfile::TempDir, Store, Outbox) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("board.db")).unwrap();
        (dir, store.clone(), Outbox::new(store))
    }

    fn raise(store: &Store, summary: &str) -> String {
        crate::asks::Asks::new(store.clone())
            .raise(crate::asks::NewAsk {
                tools_name: crate::asks::QUESTION_TOOLS.into(),
                tool_name: crate::asks::QUESTION_TOOL.into(),
                args_summary: summary.into(),
                ..Default::default()
            })
            .unwrap()
            .id
    }

    #[test]
    fn an_event_is_fanned_out_once_and_claimed_by_one_process() {
        let (_d, store, outbox) = outbox();
        let target = Target::parse("http://127.0.0.1:9/hook").unwrap();
        let configured = clock::now_ms() - 1;
        let ask = raise(&store, "Which name?");
        assert_eq!(outbox.fan_out(&target, configured).unwrap(), 1);
        // Again (a restart, another host): keyed, nothing added.
        assert_eq!(outbox.fan_out(&target, configured).unwrap(), 0);
        let mine = outbox.claim_due("host-a", 60_000, 10).unwrap();
        assert_eq!(mine.len(), 1);
        assert_eq!(mine[0].event.kind, EventKind::Question);
        assert_eq!(mine[0].event.ask_id.as_deref(), Some(ask.as_str()));
        assert_eq!(mine[0].event.summary, "Which name?");
        assert!(outbox.claim_due("host-b", 60_000, 10).unwrap().is_empty());
        // Only the holder records it.
        assert!(
            !outbox
                .finish(mine[0].event.id, &mine[0].target, "host-b", "sent", None)
                .unwrap()
        );
        assert!(
            outbox
                .finish(mine[0].event.id, &mine[0].target, "host-a", "sent", None)
                .unwrap()
        );
        let d = outbox.deliveries().unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].state.as_str(), d[0].attempts), ("sent", 1));
    }

    #[test]
    fn a_target_is_sent_nothing_from_before_it_was_configured() {
        let (_d, store, outbox) = outbox();
        raise(&store, "before");
        let target = Target::parse("http://127.0.0.1:9/hook events=landed").unwrap();
        let configured = clock::now_ms() + 1;
        assert_eq!(outbox.fan_out(&target, configured).unwrap(), 0);
        raise(&store, "a question, which this target does not take");
        assert_eq!(outbox.fan_out(&target, configured).unwrap(), 0);
        assert!(outbox.deliveries().unwrap().is_empty());
    }

    #[test]
    fn a_failed_try_is_retried_after_its_backoff_and_given_up_at_the_last() {
        let (_d, store, outbox) = outbox();
        // Configured before the event is raised, however slowly this test runs.
        let configured = clock::now_ms();
        raise(&store, "retry me");
        let target = Target::parse("http://127.0.0.1:9/hook").unwrap();
        outbox.fan_out(&target, configured).unwrap();
        let mut claimed = outbox.claim_due("me", 60_000, 1).unwrap().remove(0);
        outbox.failed(&claimed, "me", "down").unwrap();
        // Not due again until the backoff passes.
        assert!(outbox.claim_due("me", 60_000, 1).unwrap().is_empty());
        claimed.attempts = MAX_ATTEMPTS - 1;
        store
            .with(|c| {
                c.execute(
                    "UPDATE notify_deliveries SET claimed_by = 'me', attempts = ?1",
                    params![MAX_ATTEMPTS - 1],
                )
            })
            .unwrap();
        outbox.failed(&claimed, "me", "still down").unwrap();
        let d = outbox.deliveries().unwrap();
        assert_eq!(
            (d[0].state.as_str(), d[0].attempts),
            ("failed", MAX_ATTEMPTS)
        );
    }

    #[test]
    fn a_rest_and_a_lost_host_are_events_and_a_stop_is_not() {
        use crate::mission::{Missions, NewMission, Status};
        let (_d, store, outbox) = outbox();
        let missions = Missions::new(store.clone());
        let new = |intent: &str| {
            missions
                .create(NewMission {
                    intent: intent.into(),
                    agent_name: "stub".into(),
                    envelope_name: "default".into(),
                    ..Default::default()
                })
                .unwrap()
        };
        let (landed, lost, stopped) = (new("land it"), new("lose it"), new("stop it"));
        missions
            .finish(&landed.id, Status::Landed, "all done")
            .unwrap();
        assert!(
            missions
                .reclaim(&lost.id, lost.created_at, "reclaimed: host process gone")
                .unwrap()
        );
        missions
            .finish(&stopped.id, Status::Abandoned, "stopped by the operator")
            .unwrap();
        let target = Target::parse("http://127.0.0.1:9/hook").unwrap();
        assert_eq!(outbox.fan_out(&target, 0).unwrap(), 2);
        let mut claimed = outbox.claim_due("me", 60_000, 10).unwrap();
        claimed.sort_by_key(|c| c.event.id);
        let seen: Vec<(EventKind, Option<&str>, &str)> = claimed
            .iter()
            .map(|c| {
                (
                    c.event.kind,
                    c.event.mission_id.as_deref(),
                    c.event.summary.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    EventKind::Landed,
                    Some(landed.id.as_str()),
                    "land it — all done"
                ),
                (
                    EventKind::HostLost,
                    Some(lost.id.as_str()),
                    "lose it — reclaimed: host process gone"
                ),
            ]
        );
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff_ms(1), 2_000);
        assert_eq!(backoff_ms(2), 4_000);
        assert_eq!(backoff_ms(3), 8_000);
        assert_eq!(backoff_ms(30), 300_000);
    }
}
