//! Schedules in the store, and the record of what schedules and triggers fired.
//!
//! Each tick fires exactly once across every host sharing the store: a host claims
//! a tick by one guarded write (`UPDATE … WHERE next_tick = <the tick it read>`,
//! which also moves `next_tick` on), and the mission it fires is queued in that same
//! transaction, so of any number of hosts racing one wins the tick, and a host dying
//! mid-claim leaves either both (the claim and its queued mission) or neither.

use serde::Serialize;

use crate::clock;
use crate::mission::queue::NewQueued;
use crate::store::sql::{Conn, OptionalExtension, Row, params};
use crate::store::{Store, StoreError};

/// v18: schedules, triggers (see `triggers`) and what each fired.
pub(crate) const SCHEMA_V18: &str = "
CREATE TABLE schedules (
    name         TEXT PRIMARY KEY NOT NULL,
    cron         TEXT NOT NULL,
    tz           TEXT NOT NULL,
    template     TEXT,
    params       TEXT NOT NULL,
    agent        TEXT,
    intent       TEXT,
    policy       TEXT,
    cwd          TEXT NOT NULL,
    missed       TEXT NOT NULL,
    overlap      TEXT NOT NULL,
    paused       INTEGER NOT NULL DEFAULT 0,
    next_tick    INTEGER NOT NULL,
    last_tick    INTEGER,
    last_outcome TEXT,
    last_mission TEXT,
    created_at   INTEGER NOT NULL
);
CREATE INDEX schedules_next ON schedules (next_tick) WHERE paused = 0;
CREATE TABLE sched_fires (
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    fire_key   TEXT NOT NULL,
    mission_id TEXT,
    outcome    TEXT NOT NULL,
    at         INTEGER NOT NULL,
    PRIMARY KEY (kind, name, fire_key)
);
CREATE INDEX sched_fires_mission ON sched_fires (mission_id);";

/// The PostgreSQL spelling of [`SCHEMA_V18`].
pub(crate) const PG_SCHEMA_V18: &str = "
CREATE TABLE schedules (
    name         TEXT PRIMARY KEY NOT NULL,
    cron         TEXT NOT NULL,
    tz           TEXT NOT NULL,
    template     TEXT,
    params       TEXT NOT NULL,
    agent        TEXT,
    intent       TEXT,
    policy       TEXT,
    cwd          TEXT NOT NULL,
    missed       TEXT NOT NULL,
    overlap      TEXT NOT NULL,
    paused       BIGINT NOT NULL DEFAULT 0,
    next_tick    BIGINT NOT NULL,
    last_tick    BIGINT,
    last_outcome TEXT,
    last_mission TEXT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX schedules_next ON schedules (next_tick) WHERE paused = 0;
CREATE TABLE sched_fires (
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    fire_key   TEXT NOT NULL,
    mission_id TEXT,
    outcome    TEXT NOT NULL,
    at         BIGINT NOT NULL,
    PRIMARY KEY (kind, name, fire_key)
);
CREATE INDEX sched_fires_mission ON sched_fires (mission_id);";

/// What a schedule fires: a template with its parameters, or a plain fire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Fires {
    Template {
        template: String,
        params: Vec<(String, String)>,
    },
    Plain {
        agent: String,
        intent: String,
        /// The envelope (`policyName`, as every `--json` calls it).
        #[serde(rename = "policyName")]
        policy: String,
    },
}

/// A schedule as stored.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    pub name: String,
    pub cron: String,
    pub tz: String,
    pub fires: Fires,
    /// The workspace it was added in (its templates, envelopes and the unit's cwd).
    pub cwd: String,
    /// `skip` or `once`.
    pub missed: String,
    /// `skip` or `queue`.
    pub overlap: String,
    pub paused: bool,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub next_tick: i64,
    #[serde(serialize_with = "clock::ser_opt_rfc3339")]
    pub last_tick: Option<i64>,
    pub last_outcome: Option<String>,
    pub last_mission: Option<String>,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub created_at: i64,
}

const COLUMNS: &str = "name, cron, tz, template, params, agent, intent, policy, cwd, missed, overlap, paused, next_tick, last_tick, last_outcome, last_mission, created_at";

fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Schedule> {
    let template: Option<String> = r.get(3)?;
    let params: String = r.get(4)?;
    let fires = match template {
        Some(template) => Fires::Template {
            template,
            params: serde_json::from_str(&params).unwrap_or_default(),
        },
        None => Fires::Plain {
            agent: r.get::<Option<String>>(5)?.unwrap_or_default(),
            intent: r.get::<Option<String>>(6)?.unwrap_or_default(),
            policy: r.get::<Option<String>>(7)?.unwrap_or_default(),
        },
    };
    Ok(Schedule {
        name: r.get(0)?,
        cron: r.get(1)?,
        tz: r.get(2)?,
        fires,
        cwd: r.get(8)?,
        missed: r.get(9)?,
        overlap: r.get(10)?,
        paused: r.get::<i64>(11)? != 0,
        next_tick: r.get(12)?,
        last_tick: r.get(13)?,
        last_outcome: r.get(14)?,
        last_mission: r.get(15)?,
        created_at: r.get(16)?,
    })
}

/// What claiming a tick does besides moving the schedule on.
#[derive(Debug, Clone)]
pub enum TickAction {
    /// Queue this mission (its id chosen by the caller), recorded as this outcome.
    Fire {
        mission_id: String,
        queued: Box<NewQueued>,
        outcome: String,
    },
    /// Fire nothing; the outcome says why (missed, overlap, a fire that cannot be
    /// built any more).
    Skip { outcome: String },
}

/// Who fired a mission, as `mission show` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FiredBy {
    /// `schedule` or `trigger`.
    pub kind: String,
    pub name: String,
    /// The tick (ms, as text) or the webhook delivery id.
    pub key: String,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub at: i64,
}

impl FiredBy {
    /// `schedule nightly (tick 2026-12-07T09:00:00Z)`, `trigger release (delivery …)`.
    pub fn describe(&self) -> String {
        match self.kind.as_str() {
            "schedule" => {
                let tick = self
                    .key
                    .parse::<i64>()
                    .map(clock::rfc3339)
                    .unwrap_or_else(|_| self.key.clone());
                format!("schedule {} (tick {tick})", self.name)
            }
            _ => format!(
                "{} {} (delivery {})",
                self.kind,
                self.name,
                crate::text::one_line(&self.key)
            ),
        }
    }
}

/// The schedules service.
#[derive(Clone)]
pub struct Schedules {
    store: Store,
}

impl Schedules {
    pub fn new(store: Store) -> Schedules {
        Schedules { store }
    }

    /// Record a new schedule; `false` if one of that name exists.
    pub fn add(&self, s: &Schedule) -> Result<bool, StoreError> {
        let (template, params, agent, intent, policy) = match &s.fires {
            Fires::Template { template, params } => (
                Some(template.clone()),
                serde_json::to_string(params).unwrap_or_else(|_| "[]".into()),
                None,
                None,
                None,
            ),
            Fires::Plain {
                agent,
                intent,
                policy,
            } => (
                None,
                "[]".to_string(),
                Some(agent.clone()),
                Some(intent.clone()),
                Some(policy.clone()),
            ),
        };
        self.store.write(|c| {
            let n = c.execute(
                "INSERT INTO schedules (name, cron, tz, template, params, agent, intent, policy, cwd, missed, overlap, paused, next_tick, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 0, ?12, ?13) ON CONFLICT (name) DO NOTHING",
                params![s.name, s.cron, s.tz, template, params, agent, intent, policy, s.cwd, s.missed, s.overlap, s.next_tick, s.created_at],
            )?;
            Ok(n == 1)
        })
    }

    pub fn get(&self, name: &str) -> Result<Option<Schedule>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM schedules WHERE name = ?1");
        self.store
            .with(|c| c.query_row(&sql, params![name], from_row).optional())
    }

    /// Every schedule, by name.
    pub fn list(&self) -> Result<Vec<Schedule>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM schedules ORDER BY name");
        self.store.with(|c| c.query_map(&sql, [], from_row))
    }

    /// The first `limit` schedules by name, and how many there are in all: what a
    /// panel with room for `limit` rows shows (it reads no more than it draws).
    pub fn page(&self, limit: usize) -> Result<(Vec<Schedule>, usize), StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM schedules ORDER BY name LIMIT ?1");
        let rows = self
            .store
            .with(|c| c.query_map(&sql, params![limit as i64], from_row))?;
        let total: i64 = self
            .store
            .with(|c| c.query_row("SELECT COUNT(*) FROM schedules", [], |r| r.get(0)))?;
        Ok((rows, total.max(0) as usize))
    }

    /// Live schedules whose next tick is due by `now`.
    pub fn due(&self, now: i64) -> Result<Vec<Schedule>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM schedules WHERE paused = 0 AND next_tick <= ?1 ORDER BY next_tick"
        );
        self.store
            .with(|c| c.query_map(&sql, params![now], from_row))
    }

    /// The soonest tick of any live schedule.
    pub fn soonest(&self) -> Result<Option<i64>, StoreError> {
        self.store.with(|c| {
            c.query_row(
                "SELECT MIN(next_tick) FROM schedules WHERE paused = 0",
                [],
                |r| r.get::<Option<i64>>(0),
            )
        })
    }

    /// Pause or resume; a resumed schedule's next tick is `next_tick` (ticks while
    /// paused are not owed). `false`: no such schedule.
    pub fn set_paused(&self, name: &str, paused: bool, next_tick: i64) -> Result<bool, StoreError> {
        self.store.write(|c| {
            let n = if paused {
                c.execute(
                    "UPDATE schedules SET paused = 1 WHERE name = ?1",
                    params![name],
                )?
            } else {
                c.execute(
                    "UPDATE schedules SET paused = 0, next_tick = ?2 WHERE name = ?1",
                    params![name, next_tick],
                )?
            };
            Ok(n == 1)
        })
    }

    /// Remove a schedule (what it fired keeps its record); `false`: none of that name.
    pub fn remove(&self, name: &str) -> Result<bool, StoreError> {
        self.store
            .write(|c| Ok(c.execute("DELETE FROM schedules WHERE name = ?1", params![name])? == 1))
    }

    /// Claim the tick `due` of schedule `name` — the one guarded write every host
    /// races for — moving it on to `next`, and do `action` in the same transaction.
    /// `false`: another host claimed it first (or the schedule was paused, removed
    /// or re-timed), and nothing was done.
    pub fn claim_tick(
        &self,
        name: &str,
        due: i64,
        fired_tick: i64,
        next: i64,
        action: &TickAction,
    ) -> Result<bool, StoreError> {
        let now = clock::now_ms();
        self.store.write(|c| {
            let (mission, outcome) = match action {
                TickAction::Fire {
                    mission_id,
                    outcome,
                    ..
                } => (Some(mission_id.as_str()), outcome.as_str()),
                TickAction::Skip { outcome } => (None, outcome.as_str()),
            };
            let claimed = c.execute(
                "UPDATE schedules SET next_tick = ?3, last_tick = ?4, last_outcome = ?5,
                     last_mission = COALESCE(?6, last_mission)
                 WHERE name = ?1 AND next_tick = ?2 AND paused = 0",
                params![name, due, next, fired_tick, outcome, mission],
            )?;
            if claimed != 1 {
                return Ok(false);
            }
            // The (schedule, tick) key holds the same line a second way.
            let recorded = record_fire(
                c,
                "schedule",
                name,
                &fired_tick.to_string(),
                mission,
                outcome,
                now,
            )?;
            if !recorded {
                return Ok(false);
            }
            if let TickAction::Fire {
                mission_id, queued, ..
            } = action
            {
                crate::mission::queue::insert_queued(c, mission_id, queued, now)?;
            }
            Ok(true)
        })
    }

    /// Which schedule or trigger fired `mission_id`, if one did.
    pub fn fired_by(&self, mission_id: &str) -> Result<Option<FiredBy>, StoreError> {
        self.store.with(|c| {
            c.query_row(
                "SELECT kind, name, fire_key, at FROM sched_fires WHERE mission_id = ?1",
                params![mission_id],
                |r| {
                    Ok(FiredBy {
                        kind: r.get(0)?,
                        name: r.get(1)?,
                        key: r.get(2)?,
                        at: r.get(3)?,
                    })
                },
            )
            .optional()
        })
    }

    /// The missions `kind` `name` fired, newest first.
    pub fn fired(
        &self,
        kind: &str,
        name: &str,
        limit: i64,
    ) -> Result<Vec<(FiredBy, Option<String>, String)>, StoreError> {
        self.store.with(|c| {
            c.query_map(
                "SELECT kind, name, fire_key, at, mission_id, outcome FROM sched_fires
                 WHERE kind = ?1 AND name = ?2 ORDER BY at DESC LIMIT ?3",
                params![kind, name, limit],
                |r| {
                    Ok((
                        FiredBy {
                            kind: r.get(0)?,
                            name: r.get(1)?,
                            key: r.get(2)?,
                            at: r.get(3)?,
                        },
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
        })
    }
}

/// Record one fire under its unique (kind, name, key); `false` if that key was
/// recorded before (a tick claimed twice, a webhook delivery replayed).
pub(crate) fn record_fire(
    c: &Conn<'_>,
    kind: &str,
    name: &str,
    key: &str,
    mission: Option<&str>,
    outcome: &str,
    now: i64,
) -> crate::store::sql::Result<bool> {
    Ok(c.execute(
        "INSERT INTO sched_fires (kind, name, fire_key, mission_id, outcome, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (kind, name, fire_key) DO NOTHING",
        params![kind, name, key, mission, outcome, now],
    )? == 1)
}
