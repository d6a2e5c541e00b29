//! The durable side of a mission's compute: the `mission_compute` table — what the
//! agent offered and which model the unit runs on, the limits an operator raised
//! on a `pause_ask` question, and the pause itself (so a host that dies while it
//! waits leaves enough for another process to resume or stop the mission).
//!
//! The record is the mission's, so the table is kept here beside the missions: the
//! fleet's in-memory spend (`fleet::budget`) writes it, the oracle adds its own
//! calls to it, and the read views and `spend` read it — all through this API.

use crate::store::sql::{OptionalExtension, params};

use crate::clock;
use crate::envelope::bounds::ComputeField;
use crate::envelope::format::ComputeBounds;
use crate::store::{Store, StoreError};

pub(crate) const SCHEMA_V5: &str = "
CREATE TABLE mission_compute (
    mission_id     TEXT PRIMARY KEY NOT NULL,
    models         TEXT,
    model          TEXT,
    max_turns      INTEGER,
    max_tool_calls INTEGER,
    max_tokens     INTEGER,
    paused_ask     TEXT,
    paused_field   TEXT,
    paused_reason  TEXT,
    updated_at     INTEGER NOT NULL
);";

/// v7: what the mission has spent, across every session that ran it.
pub(crate) const SCHEMA_V7: &str = "
ALTER TABLE mission_compute ADD COLUMN spent_tool_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN spent_tokens INTEGER NOT NULL DEFAULT 0;";

/// v15: what the spend cost: the tokens split the way prices are (input, of which
/// cached, and output), and the agent's own cumulative cost when it reports one
/// (micro-dollars, so the spend stays a whole-number record that only grows).
pub(crate) const SCHEMA_V16: &str = "
ALTER TABLE mission_compute ADD COLUMN spent_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN spent_output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN spent_cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN reported_cost_micro_usd INTEGER;";

/// v23: the agent's context fill, as its last `usage_update` said: tokens in its
/// context and the context's size.
pub(crate) const SCHEMA_V23_CONTEXT: &str = "
ALTER TABLE mission_compute ADD COLUMN context_used INTEGER;
ALTER TABLE mission_compute ADD COLUMN context_size INTEGER;";

/// The PostgreSQL spelling of [`SCHEMA_V23_CONTEXT`].
pub(crate) const PG_SCHEMA_V23_CONTEXT: &str = "
ALTER TABLE mission_compute ADD COLUMN context_used BIGINT;
ALTER TABLE mission_compute ADD COLUMN context_size BIGINT;";

/// The PostgreSQL spelling of [`SCHEMA_V16`].
pub(crate) const PG_SCHEMA_V16: &str = "
ALTER TABLE mission_compute ADD COLUMN spent_input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN spent_output_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN spent_cached_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN reported_cost_micro_usd BIGINT;";

/// v22: what the mission's units used: the peak resident memory of a unit's whole
/// process tree (bytes; the largest of its sessions), and the CPU time (user and
/// system, in milliseconds) its units' trees spent, summed over its sessions.
pub(crate) const SCHEMA_V22: &str = "
ALTER TABLE mission_compute ADD COLUMN peak_rss_bytes INTEGER;
ALTER TABLE mission_compute ADD COLUMN cpu_ms INTEGER NOT NULL DEFAULT 0;";

/// The PostgreSQL spelling of [`SCHEMA_V22`].
pub(crate) const PG_SCHEMA_V22: &str = "
ALTER TABLE mission_compute ADD COLUMN peak_rss_bytes BIGINT;
ALTER TABLE mission_compute ADD COLUMN cpu_ms BIGINT NOT NULL DEFAULT 0;";
/// v24: money. The limit an operator raised `maxCostUsd` to; what the spend cost
/// as its host priced it (the agent's reported cost, else its tokens at the list
/// prices; NULL: no price), and what the oracle's model calls for the mission
/// cost and counted (its model, tokens; NULL cost: no price); the fleet budget's
/// admission — when the mission was admitted against it and what it set aside
/// (its `maxCostUsd`, held while it runs).
pub(crate) const SCHEMA_V24: &str = "
ALTER TABLE mission_compute ADD COLUMN max_cost_micro_usd INTEGER;
ALTER TABLE mission_compute ADD COLUMN cost_micro_usd INTEGER;
ALTER TABLE mission_compute ADD COLUMN oracle_model TEXT;
ALTER TABLE mission_compute ADD COLUMN oracle_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN oracle_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN oracle_output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN oracle_cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN oracle_cost_micro_usd INTEGER;
ALTER TABLE mission_compute ADD COLUMN hold_micro_usd INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN admitted_at INTEGER;
UPDATE mission_compute SET admitted_at = (SELECT created_at FROM missions WHERE missions.id = mission_compute.mission_id);
CREATE INDEX mission_compute_admitted ON mission_compute (admitted_at);";

/// The PostgreSQL spelling of [`SCHEMA_V24`].
pub(crate) const PG_SCHEMA_V24: &str = "
ALTER TABLE mission_compute ADD COLUMN max_cost_micro_usd BIGINT;
ALTER TABLE mission_compute ADD COLUMN cost_micro_usd BIGINT;
ALTER TABLE mission_compute ADD COLUMN oracle_model TEXT;
ALTER TABLE mission_compute ADD COLUMN oracle_calls BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN oracle_input_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN oracle_output_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN oracle_cached_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN oracle_cost_micro_usd BIGINT;
ALTER TABLE mission_compute ADD COLUMN hold_micro_usd BIGINT NOT NULL DEFAULT 0;
ALTER TABLE mission_compute ADD COLUMN admitted_at BIGINT;
UPDATE mission_compute SET admitted_at = (SELECT created_at FROM missions WHERE missions.id = mission_compute.mission_id);
CREATE INDEX mission_compute_admitted ON mission_compute (admitted_at);";

/// The PostgreSQL spelling of this module's tables as of schema v11 (see `crate::schema`).
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE mission_compute (
    mission_id       TEXT PRIMARY KEY NOT NULL,
    models           TEXT,
    model            TEXT,
    max_turns        BIGINT,
    max_tool_calls   BIGINT,
    max_tokens       BIGINT,
    paused_ask       TEXT,
    paused_field     TEXT,
    paused_reason    TEXT,
    updated_at       BIGINT NOT NULL,
    spent_tool_calls BIGINT NOT NULL DEFAULT 0,
    spent_tokens     BIGINT NOT NULL DEFAULT 0
);";

/// What the record says about one mission's compute.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ComputeRecord {
    /// The session models the agent advertised; `None`: it advertised none.
    pub models: Option<Vec<String>>,
    /// The session model the unit runs on, when the agent advertised models.
    pub model: Option<String>,
    /// Limits an operator raised (`None`: the envelope's).
    pub max_turns: Option<u64>,
    pub max_tool_calls: Option<u64>,
    pub max_tokens: Option<u64>,
    pub max_cost_micro_usd: Option<u64>,
    /// The compute-bound question the mission is paused on, if any.
    pub pause: Option<Pause>,
    /// What every session of the mission has spent so far.
    pub spent: Spend,
    /// What the oracle's model calls about the mission's questions spent.
    pub oracle: OracleSpend,
    /// How full the agent's context was at its last `usage_update`, if it sent one.
    pub context: Option<ContextFill>,
}

/// An agent's context fill: tokens in its context, of the context's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextFill {
    pub used: u64,
    pub size: u64,
}

impl ContextFill {
    /// `41,200 / 200,000 tokens (20%)`.
    pub fn describe(&self) -> String {
        // A size of 0 says nothing about the fill: no percentage.
        let pct = self
            .used
            .saturating_mul(100)
            .checked_div(self.size)
            .map_or_else(String::new, |p| format!(" ({}%)", p.min(999)));
        format!(
            "{} / {} tokens{pct}",
            crate::text::count(self.used),
            crate::text::count(self.size)
        )
    }
}

/// The oracle's model calls for one mission: how many, on which model, their
/// tokens, and what they cost as the oracle's process priced them (`None`: no
/// price for its model).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OracleSpend {
    pub calls: u64,
    pub model: Option<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_tokens: u64,
    pub cost_micro_usd: Option<u64>,
}

/// A mission's durable spend: counted tool calls and tokens, and what it cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Spend {
    pub tool_calls: u64,
    pub tokens: u64,
    /// Prompt tokens (the cached ones among them), as the agent's end-of-turn
    /// usage counts them, else as metered.
    pub input_tokens: u64,
    pub cached_tokens: u64,
    /// Tokens the model wrote, likewise.
    pub output_tokens: u64,
    /// The agent's own cumulative cost in micro-dollars, when it reports one.
    pub reported_cost_micro_usd: Option<u64>,
    /// What the spend cost as its host priced it: the reported cost, else the
    /// tokens at the list prices of the unit's model (`None`: neither is known).
    /// The fleet budget sums it.
    pub cost_micro_usd: Option<u64>,
}

/// A mission waiting for its operator to extend a crossed bound or stop it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    pub ask_id: String,
    pub field: ComputeField,
    pub reason: String,
}

impl ComputeRecord {
    /// The record a fresh mission's [`unit_statement`] leaves: what its unit offered
    /// and runs on, nothing raised, paused or spent yet.
    pub fn of_fresh_unit(models: Option<&[String]>, model: Option<&str>) -> ComputeRecord {
        ComputeRecord {
            models: models.map(<[String]>::to_vec),
            model: model.map(str::to_string),
            ..ComputeRecord::default()
        }
    }

    /// The envelope's bounds with the operator's raised limits applied.
    pub fn apply(&self, envelope: &ComputeBounds) -> ComputeBounds {
        let mut b = envelope.clone();
        for (field, raised) in [
            (ComputeField::MaxTurns, self.max_turns),
            (ComputeField::MaxToolCalls, self.max_tool_calls),
            (ComputeField::MaxTokens, self.max_tokens),
            (ComputeField::MaxCostUsd, self.max_cost_micro_usd),
        ] {
            if let Some(limit) = raised {
                field.set_limit(&mut b, limit);
            }
        }
        b
    }

    /// What the agent offered, as far as the labels care.
    pub fn agent_caps(&self) -> crate::agents::AgentCaps {
        crate::agents::AgentCaps {
            models: self.models.as_ref().map(|m| crate::agents::SessionModels {
                available: m.clone(),
                current: self.model.clone().unwrap_or_default(),
                config_id: None,
            }),
            ..Default::default()
        }
    }
}

fn column(field: ComputeField) -> Option<&'static str> {
    match field {
        ComputeField::MaxTurns => Some("max_turns"),
        ComputeField::MaxToolCalls => Some("max_tool_calls"),
        ComputeField::MaxTokens => Some("max_tokens"),
        ComputeField::MaxCostUsd => Some("max_cost_micro_usd"),
        ComputeField::ModelAllowlist | ComputeField::BackendAllowlist => None,
    }
}

/// The `mission_compute` table.
/// The columns [`record_from_row`] reads.
const RECORD_COLUMNS: &str = "models, model, max_turns, max_tool_calls, max_tokens, paused_ask, paused_field, paused_reason, spent_tool_calls, spent_tokens, spent_input_tokens, spent_output_tokens, spent_cached_tokens, reported_cost_micro_usd, max_cost_micro_usd, cost_micro_usd, oracle_calls, oracle_model, oracle_input_tokens, oracle_output_tokens, oracle_cached_tokens, oracle_cost_micro_usd, context_used, context_size";

fn record_from_row(r: &crate::store::sql::Row<'_>) -> crate::store::sql::Result<ComputeRecord> {
    record_from_row_at(r, 0)
}

/// [`record_from_row`] for a row whose record columns start at column `at`.
fn record_from_row_at(
    r: &crate::store::sql::Row<'_>,
    at: usize,
) -> crate::store::sql::Result<ComputeRecord> {
    let models: Option<String> = r.get(at)?;
    let ask: Option<String> = r.get(at + 5)?;
    let field: Option<String> = r.get(at + 6)?;
    let pause = match (ask, field.as_deref().and_then(ComputeField::from_key)) {
        (Some(ask_id), Some(field)) => Some(Pause {
            ask_id,
            field,
            reason: r.get::<Option<String>>(at + 7)?.unwrap_or_default(),
        }),
        _ => None,
    };
    Ok(ComputeRecord {
        models: models.and_then(|m| serde_json::from_str(&m).ok()),
        model: r.get(at + 1)?,
        max_turns: r.get::<Option<i64>>(at + 2)?.map(|v| v.max(0) as u64),
        max_tool_calls: r.get::<Option<i64>>(at + 3)?.map(|v| v.max(0) as u64),
        max_tokens: r.get::<Option<i64>>(at + 4)?.map(|v| v.max(0) as u64),
        pause,
        spent: Spend {
            tool_calls: r.get::<i64>(at + 8)?.max(0) as u64,
            tokens: r.get::<i64>(at + 9)?.max(0) as u64,
            input_tokens: r.get::<i64>(at + 10)?.max(0) as u64,
            output_tokens: r.get::<i64>(at + 11)?.max(0) as u64,
            cached_tokens: r.get::<i64>(at + 12)?.max(0) as u64,
            reported_cost_micro_usd: r.get::<Option<i64>>(at + 13)?.map(|v| v.max(0) as u64),
            cost_micro_usd: r.get::<Option<i64>>(at + 15)?.map(|v| v.max(0) as u64),
        },
        max_cost_micro_usd: r.get::<Option<i64>>(at + 14)?.map(|v| v.max(0) as u64),
        oracle: OracleSpend {
            calls: r.get::<i64>(at + 16)?.max(0) as u64,
            model: r.get(at + 17)?,
            input_tokens: r.get::<i64>(at + 18)?.max(0) as u64,
            output_tokens: r.get::<i64>(at + 19)?.max(0) as u64,
            cached_tokens: r.get::<i64>(at + 20)?.max(0) as u64,
            cost_micro_usd: r.get::<Option<i64>>(at + 21)?.map(|v| v.max(0) as u64),
        },
        context: match (
            r.get::<Option<i64>>(at + 22)?,
            r.get::<Option<i64>>(at + 23)?,
        ) {
            (Some(used), Some(size)) => Some(ContextFill {
                used: used.max(0) as u64,
                size: size.max(0) as u64,
            }),
            _ => None,
        },
    })
}

#[derive(Clone)]
pub struct ComputeLedger {
    store: Store,
}

impl ComputeLedger {
    pub fn new(store: Store) -> ComputeLedger {
        ComputeLedger { store }
    }

    pub fn get(&self, mission_id: &str) -> Result<Option<ComputeRecord>, StoreError> {
        self.store.with(|c| {
            c.query_row(
                &format!("SELECT {RECORD_COLUMNS} FROM mission_compute WHERE mission_id = ?1"),
                params![mission_id],
                record_from_row,
            )
            .optional()
        })
    }

    /// The records of `ids` that have one, in one query (a listing's rows).
    pub fn get_many(
        &self,
        ids: &[String],
    ) -> Result<std::collections::HashMap<String, ComputeRecord>, StoreError> {
        if ids.is_empty() {
            return Ok(Default::default());
        }
        let list = serde_json::to_string(ids).unwrap_or_default();
        self.store.with(|c| {
            let mut st = c.prepare(&format!(
                "SELECT mission_id, {RECORD_COLUMNS} FROM mission_compute
                 WHERE mission_id IN (SELECT value FROM json_each(?1))"
            ))?;
            let rows = st.query_map(params![list], |r| {
                let id: String = r.get(0)?;
                Ok((id, record_from_row_at(r, 1)?))
            })?;
            rows.collect()
        })
    }

    /// What `agent` offered when it last started a unit here, as far as the labels
    /// care (`None`: none of its newest missions recorded a start). A fire is
    /// labelled with this before it starts, as `mission show` labels a mission with
    /// what its own start recorded — the same caps into the same `bound_status`.
    pub fn last_seen_caps(
        &self,
        missions: &crate::mission::Missions,
        agent: &str,
    ) -> Option<crate::agents::AgentCaps> {
        const LOOK_BACK: usize = 20;
        let newest = missions.newest_of_agent(agent, LOOK_BACK).ok()?;
        newest
            .iter()
            .find_map(|m| self.get(&m.id).ok().flatten())
            .map(|r| r.agent_caps())
    }

    /// What a freshly started unit offered and runs on (a resumed unit records
    /// its own; raised limits and a pause are kept). Returns the whole record as
    /// the write left it: one statement, no read after it.
    pub fn record_unit(
        &self,
        mission_id: &str,
        models: Option<&[String]>,
        model: Option<&str>,
    ) -> Result<ComputeRecord, StoreError> {
        let (sql, values) = unit_statement(mission_id, models, model);
        self.store.with(|c| {
            c.query_row(
                &format!("{sql} RETURNING {RECORD_COLUMNS}"),
                values.as_slice(),
                record_from_row,
            )
        })
    }

    /// Record the agent's context fill as its last `usage_update` said.
    pub fn record_context(&self, mission_id: &str, context: ContextFill) -> Result<(), StoreError> {
        self.store.with(|c| {
            c.execute(
                "INSERT INTO mission_compute (mission_id, context_used, context_size, updated_at)
                 VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (mission_id) DO UPDATE SET context_used = ?2, context_size = ?3, updated_at = ?4",
                params![
                    mission_id,
                    context.used.min(i64::MAX as u64) as i64,
                    context.size.min(i64::MAX as u64) as i64,
                    clock::now_ms()
                ],
            )
        })?;
        Ok(())
    }

    /// Record what the mission has spent. Spend only grows: a write carrying less
    /// than the record (a session that started before another's last write) never
    /// lowers it.
    pub fn record_spend(&self, mission_id: &str, spent: Spend) -> Result<(), StoreError> {
        let (sql, values) = spend_statement(mission_id, spent);
        self.store.with(|c| c.execute(sql, values.as_slice()))?;
        Ok(())
    }

    /// Charge one oracle review of mission `mission_id`'s question to it: the
    /// model it called, the tokens its calls reported, and what they cost at that
    /// model's list price (`None`: no price — the record keeps no figure rather
    /// than a zero).
    pub fn record_oracle(
        &self,
        mission_id: &str,
        model: &str,
        input_tokens: u64,
        output_tokens: u64,
        cost_micro_usd: Option<u64>,
    ) -> Result<(), StoreError> {
        let now = clock::now_ms();
        self.store.with(|c| {
            c.execute(
                "INSERT INTO mission_compute (mission_id, oracle_model, oracle_calls, oracle_input_tokens,
                     oracle_output_tokens, oracle_cost_micro_usd, updated_at, admitted_at)
                 VALUES (?1, ?2, 1, ?3, ?4, ?5, ?6, ?6)
                 ON CONFLICT (mission_id) DO UPDATE SET oracle_model = ?2,
                     oracle_calls = mission_compute.oracle_calls + 1,
                     oracle_input_tokens = mission_compute.oracle_input_tokens + ?3,
                     oracle_output_tokens = mission_compute.oracle_output_tokens + ?4,
                     oracle_cost_micro_usd = CASE WHEN CAST(?5 AS BIGINT) IS NULL
                         THEN mission_compute.oracle_cost_micro_usd
                         ELSE COALESCE(mission_compute.oracle_cost_micro_usd, 0) + CAST(?5 AS BIGINT) END,
                     updated_at = ?6",
                params![
                    mission_id,
                    model,
                    input_tokens as i64,
                    output_tokens as i64,
                    cost_micro_usd.map(|v| v as i64),
                    now
                ],
            )
        })?;
        Ok(())
    }

    /// What the missions fired since `since_ms` spent, grouped by `by` and by the
    /// model each ran on: one query over the spend rollup's whole hours and the
    /// missions of the partial hour at the window's edge.
    pub fn spend_by(&self, by: SpendGroup, since_ms: i64) -> Result<Vec<SpendRow>, StoreError> {
        let sql = spend_sql(by);
        let [since_ms, first_hour, first_hour_ms] = spend_window(since_ms);
        let n = |v: i64| v.max(0) as u64;
        self.store.with(|c| {
            let mut st = c.prepare(&sql)?;
            let rows = st.query_map(params![since_ms, first_hour, first_hour_ms], |r| {
                Ok(SpendRow {
                    key: r.get(0)?,
                    model: r.get(1)?,
                    missions: n(r.get(2)?),
                    reported: n(r.get(3)?),
                    reported_micro_usd: n(r.get(4)?),
                    unreported_with_tokens: n(r.get(5)?),
                    unreported: Spend {
                        input_tokens: n(r.get(6)?),
                        output_tokens: n(r.get(7)?),
                        cached_tokens: n(r.get(8)?),
                        ..Spend::default()
                    },
                    tokens: n(r.get(9)?),
                    tool_calls: n(r.get(10)?),
                    oracle_micro_usd: n(r.get(11)?),
                    oracle_unpriced: n(r.get(12)?),
                    cpu_ms: n(r.get(13)?),
                    peak_rss_bytes: r.get::<Option<i64>>(14)?.map(n),
                })
            })?;
            rows.collect()
        })
    }

    /// The mission waits on `ask_id` for a crossed bound.
    pub fn pause(
        &self,
        mission_id: &str,
        ask_id: &str,
        field: ComputeField,
        reason: &str,
    ) -> Result<(), StoreError> {
        self.store.with(|c| {
            c.execute(
                "INSERT INTO mission_compute (mission_id, paused_ask, paused_field, paused_reason, updated_at) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (mission_id) DO UPDATE SET paused_ask = ?2, paused_field = ?3, paused_reason = ?4, updated_at = ?5",
                params![mission_id, ask_id, field.key(), reason, clock::now_ms()],
            )
        })?;
        Ok(())
    }

    /// End the pause on `ask_id`, raising its bound to `raised` when the operator
    /// extended it. Guarded on the pause, so exactly one resumer applies it;
    /// `false` when it was already ended.
    pub fn end_pause(
        &self,
        mission_id: &str,
        ask_id: &str,
        raised: Option<(ComputeField, u64)>,
    ) -> Result<bool, StoreError> {
        let set = match raised.and_then(|(f, limit)| column(f).map(|c| (c, limit))) {
            Some((col, limit)) => format!("{col} = {limit}, "),
            None => String::new(),
        };
        let changed = self.store.with(|c| {
            c.execute(
                &format!(
                    "UPDATE mission_compute SET {set}paused_ask = NULL, paused_field = NULL, paused_reason = NULL, updated_at = ?3
                     WHERE mission_id = ?1 AND paused_ask = ?2"
                ),
                params![mission_id, ask_id, clock::now_ms()],
            )
        })?;
        Ok(changed == 1)
    }
}

/// The one statement `spend_by` runs for `by`, in the house dialect (its
/// arguments: [`spend_window`]). Public so the bench runs the very statement bare,
/// as its floor.
pub fn spend_sql(by: SpendGroup) -> String {
    let (rollup_key, edge_key) = by.key_sql();
    super::spend_rollup::spend_sql(rollup_key, edge_key)
}

/// The arguments of [`spend_sql`] for a window starting at `since_ms`: that time,
/// the first whole UTC hour in the window (hours since the epoch) and its start in
/// ms — whole hours are read from the rollup, the ones before from the missions.
pub fn spend_window(since_ms: i64) -> [i64; 3] {
    const HOUR_MS: i64 = 3_600_000;
    let first_hour = since_ms.div_euclid(HOUR_MS) + i64::from(since_ms.rem_euclid(HOUR_MS) != 0);
    [since_ms, first_hour, first_hour * HOUR_MS]
}

/// What a mission's units used, as sampled from `/proc` by the host that ran them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnitResources {
    /// The peak resident memory of one unit's process tree, in bytes (`None`: no
    /// unit of it was ever sampled).
    pub peak_rss_bytes: Option<u64>,
    /// CPU time (user + system) its units' trees spent, in milliseconds.
    pub cpu_ms: u64,
}

/// One unit's figures since the ledger last heard of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceSample {
    pub mission_id: String,
    /// The unit's peak so far (the record keeps the largest).
    pub peak_rss_bytes: u64,
    /// CPU time spent since the last write (the record adds it).
    pub cpu_ms_since: u64,
}

impl ComputeLedger {
    /// What the units of `mission_id` used, if it has a compute record.
    pub fn resources(&self, mission_id: &str) -> Result<Option<UnitResources>, StoreError> {
        self.store.with(|c| {
            c.query_row(
                "SELECT peak_rss_bytes, cpu_ms FROM mission_compute WHERE mission_id = ?1",
                params![mission_id],
                |r| {
                    Ok(UnitResources {
                        peak_rss_bytes: r.get::<Option<i64>>(0)?.map(|v| v.max(0) as u64),
                        cpu_ms: r.get::<i64>(1)?.max(0) as u64,
                    })
                },
            )
            .optional()
        })
    }

    /// Record what units used since the last write, every unit in one transaction
    /// (one commit per sampling round, whatever the fleet's size). The peak only
    /// grows; CPU time adds up across sessions.
    pub fn record_resources(&self, samples: &[ResourceSample]) -> Result<(), StoreError> {
        if samples.is_empty() {
            return Ok(());
        }
        let now = clock::now_ms();
        self.store.write(|c| {
            for s in samples {
                c.execute(
                    "INSERT INTO mission_compute (mission_id, peak_rss_bytes, cpu_ms, updated_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (mission_id) DO UPDATE SET
                         peak_rss_bytes = MAX(COALESCE(mission_compute.peak_rss_bytes, 0), ?2),
                         cpu_ms = mission_compute.cpu_ms + ?3, updated_at = ?4",
                    params![
                        s.mission_id,
                        s.peak_rss_bytes as i64,
                        s.cpu_ms_since as i64,
                        now
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// The recorded peaks of `agent`'s newest `limit` rested missions, newest first:
    /// what its next unit is expected to reach.
    pub fn recorded_peaks(&self, agent: &str, limit: usize) -> Result<Vec<u64>, StoreError> {
        self.store.with(|c| {
            let mut st = c.prepare_cached(
                "SELECT c.peak_rss_bytes FROM missions m JOIN mission_compute c ON c.mission_id = m.id
                 WHERE m.agent_name = ?1 AND c.peak_rss_bytes IS NOT NULL
                   AND m.status IN ('landed', 'derailed', 'stuck', 'abandoned')
                 ORDER BY m.created_at DESC LIMIT ?2",
            )?;
            let rows = st.query_map(params![agent, limit as i64], |r| {
                Ok(r.get::<i64>(0)?.max(0) as u64)
            })?;
            rows.collect()
        })
    }
}

/// What `spend` groups missions by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendGroup {
    Agent,
    Envelope,
    /// The label a queued mission was fired to run on (`--on`); `-` for none.
    Label,
    /// The machine of the host that ran it.
    Host,
    /// The UTC day it was fired on.
    Day,
}

impl SpendGroup {
    /// The group key, as text, in the rollup's rows (`r`) and in the missions'
    /// contributions at the window's edge (`v`).
    fn key_sql(self) -> (&'static str, &'static str) {
        match self {
            SpendGroup::Agent => ("r.agent", "v.agent"),
            SpendGroup::Envelope => ("r.envelope", "v.envelope"),
            SpendGroup::Label => ("r.label", "v.label"),
            SpendGroup::Host => ("r.host", "v.host"),
            // UTC hours fall whole into UTC days.
            SpendGroup::Day => (
                "CAST(r.hour_bucket / 24 AS TEXT)",
                "CAST(v.created_at / 86400000 AS TEXT)",
            ),
        }
    }
}

/// One group's missions that ran on one model: what they spent. Costs are worked
/// out by the caller from the price table (the store holds no prices); the tokens
/// here are those of the missions whose agent reported no cost of its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpendRow {
    /// The group's key (for `Day`, days since the Unix epoch, as text).
    pub key: String,
    pub model: Option<String>,
    pub missions: u64,
    /// Missions whose agent reported its cost, and its sum.
    pub reported: u64,
    pub reported_micro_usd: u64,
    /// Missions with no reported cost that spent tokens: priced, or unpriced.
    pub unreported_with_tokens: u64,
    /// The tokens of the missions with no reported cost.
    pub unreported: Spend,
    /// Every mission's tokens and tool calls.
    pub tokens: u64,
    pub tool_calls: u64,
    /// What the oracle's reviews of these missions cost (priced when recorded),
    /// and how many of them reviewed on a model with no price.
    pub oracle_micro_usd: u64,
    pub oracle_unpriced: u64,
    /// The CPU time of every mission's units, in milliseconds.
    pub cpu_ms: u64,
    /// The largest peak memory of one unit among them (`None`: none was sampled).
    pub peak_rss_bytes: Option<u64>,
}

/// The write of what a started unit offered and runs on ([`ComputeLedger::record_unit`]),
/// for a writer that records a fresh mission's unit in the mission's own create
/// transaction; the record it leaves is [`ComputeRecord::of_fresh_unit`].
pub(crate) fn unit_statement(
    mission_id: &str,
    models: Option<&[String]>,
    model: Option<&str>,
) -> (&'static str, Vec<crate::store::sql::Value>) {
    use crate::store::sql::Params;
    let models = models.map(|m| serde_json::to_string(m).unwrap_or_default());
    (
        "INSERT INTO mission_compute (mission_id, models, model, updated_at, admitted_at) VALUES (?1, ?2, ?3, ?4, ?4)
         ON CONFLICT (mission_id) DO UPDATE SET models = ?2, model = ?3, updated_at = ?4,
             admitted_at = COALESCE(mission_compute.admitted_at, ?4)",
        params![mission_id, models, model, clock::now_ms()].values(),
    )
}

/// The statement [`ComputeLedger::record_spend`] runs, for a write that carries the
/// spend in its own transaction (a verdict).
pub(crate) fn spend_statement(
    mission_id: &str,
    spent: Spend,
) -> (&'static str, Vec<crate::store::sql::Value>) {
    use crate::store::sql::Params;
    (
        "INSERT INTO mission_compute (mission_id, spent_tool_calls, spent_tokens, updated_at,
             spent_input_tokens, spent_output_tokens, spent_cached_tokens, reported_cost_micro_usd,
             cost_micro_usd, admitted_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?4)
         ON CONFLICT (mission_id) DO UPDATE SET spent_tool_calls = MAX(mission_compute.spent_tool_calls, ?2),
             spent_tokens = MAX(mission_compute.spent_tokens, ?3), updated_at = ?4,
             spent_input_tokens = MAX(mission_compute.spent_input_tokens, ?5),
             spent_output_tokens = MAX(mission_compute.spent_output_tokens, ?6),
             spent_cached_tokens = MAX(mission_compute.spent_cached_tokens, ?7),
             reported_cost_micro_usd = MAX(COALESCE(mission_compute.reported_cost_micro_usd, ?8), COALESCE(?8, mission_compute.reported_cost_micro_usd)),
             cost_micro_usd = MAX(COALESCE(mission_compute.cost_micro_usd, ?9), COALESCE(?9, mission_compute.cost_micro_usd)),
             admitted_at = COALESCE(mission_compute.admitted_at, ?4)",
        params![
            mission_id,
            spent.tool_calls as i64,
            spent.tokens as i64,
            clock::now_ms(),
            spent.input_tokens as i64,
            spent.output_tokens as i64,
            spent.cached_tokens as i64,
            spent.reported_cost_micro_usd.map(|v| v as i64),
            spent.cost_micro_usd.map(|v| v as i64)
        ]
        .values(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ledger_applies_raised_limits_and_ends_a_pause_once() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ComputeLedger::new(Store::open(&dir.path().join("b.db")).unwrap());
        assert_eq!(ledger.get("m").unwrap(), None);
        let models = ["a".to_string(), "b".to_string()];
        let recorded = ledger.record_unit("m", Some(&models), Some("b")).unwrap();
        assert_eq!(Some(recorded.clone()), ledger.get("m").unwrap());
        assert_eq!(
            recorded,
            ComputeRecord::of_fresh_unit(Some(&models), Some("b")),
            "a fresh mission's start takes this record without reading it back"
        );
        ledger
            .pause("m", "ask-1", ComputeField::MaxToolCalls, "why")
            .unwrap();
        let r = ledger.get("m").unwrap().unwrap();
        assert_eq!(r.model.as_deref(), Some("b"));
        assert_eq!(
            r.pause,
            Some(Pause {
                ask_id: "ask-1".into(),
                field: ComputeField::MaxToolCalls,
                reason: "why".into()
            })
        );
        assert!(
            ledger
                .end_pause("m", "ask-1", Some((ComputeField::MaxToolCalls, 5)))
                .unwrap()
        );
        assert!(
            !ledger.end_pause("m", "ask-1", None).unwrap(),
            "exactly once"
        );
        let r = ledger.get("m").unwrap().unwrap();
        assert_eq!(r.pause, None);
        let envelope = ComputeBounds {
            max_tool_calls: 3,
            max_tokens: 9,
            ..Default::default()
        };
        let applied = r.apply(&envelope);
        assert_eq!((applied.max_tool_calls, applied.max_tokens), (5, 9));
    }
}
