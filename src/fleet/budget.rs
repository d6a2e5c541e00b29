//! A unit's compute spend against its envelope's bounds, shared by its drive loop
//! (which sees every ACP update) and its permission answerer (which sees every gated
//! call). Tool calls are counted once per ACP tool-call id, whichever side saw them
//! first; tokens come from the usage the agent reports, and when it reports none,
//! from a meter over the text crossing the ACP boundary — so the bound is never inert.
//!
//! The durable side is the `mission_compute` table: what the agent offered and
//! which model the unit runs on, the limits an operator raised on a
//! `pause_ask` question, and the pause itself (so a host that dies while it
//! waits leaves enough for another process to resume or stop the mission).

use std::collections::HashSet;
use std::sync::Mutex;

use rusqlite::{OptionalExtension, params};
use tokio::sync::mpsc;

use crate::acp::UnitEvent;
use crate::clock;
use crate::envelope::bounds::{BudgetAnswer, ComputeField};
use crate::envelope::policy::ComputeBounds;
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

/// The meter's estimate: a token per four bytes of text, the usual rough figure for
/// English prose and code.
pub const BYTES_PER_TOKEN: u64 = 4;

/// A bound crossed: which, at what limit, and the mission's stuck reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crossing {
    pub field: ComputeField,
    pub limit: u64,
    pub reason: String,
}

impl Crossing {
    /// The stuck reason for the turn bound (crossed before the nudge, not counted).
    pub fn turns(limit: u64) -> Crossing {
        Crossing {
            field: ComputeField::MaxTurns,
            limit,
            reason: format!(
                "compute bound exhausted: maxTurns={limit} — the mission spent its turn budget without reaching its operator."
            ),
        }
    }
}

#[derive(Default)]
struct Spent {
    bounds: ComputeBounds,
    tool_calls: HashSet<String>,
    /// The largest `usage_update.used` seen (context occupancy).
    max_used: Option<u64>,
    /// The sum of end-of-turn totals, when the agent reports them.
    turn_totals: Option<u64>,
    metered_bytes: u64,
    /// Set once a bound is crossed, so the crossing is reported exactly once;
    /// cleared when an operator extends the bound.
    exhausted: bool,
}

pub(super) struct Budget {
    spent: Mutex<Spent>,
    /// Crossings the permission answerer saw: the drive loop cancels the turn.
    gated: mpsc::UnboundedSender<Crossing>,
}

impl Budget {
    /// A budget, and the channel on which crossings seen by the permission
    /// answerer reach the drive loop.
    pub fn new(bounds: ComputeBounds) -> (Budget, mpsc::UnboundedReceiver<Crossing>) {
        let (gated, rx) = mpsc::unbounded_channel();
        let spent = Spent {
            bounds,
            ..Spent::default()
        };
        (
            Budget {
                spent: Mutex::new(spent),
                gated,
            },
            rx,
        )
    }

    /// The bounds in force (the envelope's, as raised by the operator).
    pub fn bounds(&self) -> ComputeBounds {
        self.spent.lock().unwrap().bounds.clone()
    }

    /// An operator raised `field` to `limit`: the mission may spend again.
    pub fn extend(&self, field: ComputeField, limit: u64) {
        let mut s = self.spent.lock().unwrap();
        field.set_limit(&mut s.bounds, limit);
        s.exhausted = false;
    }

    /// Count a tool call by id. Returns the crossing when this call crosses
    /// `maxToolCalls` (reported once; later calls return `None` but are refused by
    /// [`Budget::is_exhausted`]).
    pub fn tool_call(&self, id: &str, title: &str) -> Option<Crossing> {
        if crate::tools::MISSION_TOOL_NAMES
            .iter()
            .any(|t| title.contains(t))
        {
            return None;
        }
        let mut s = self.spent.lock().unwrap();
        let max = s.bounds.max_tool_calls;
        let key = if id.is_empty() {
            format!("untitled-{}", s.tool_calls.len())
        } else {
            id.to_string()
        };
        s.tool_calls.insert(key);
        if max > 0 && s.tool_calls.len() as u64 > max && !s.exhausted {
            s.exhausted = true;
            return Some(Crossing {
                field: ComputeField::MaxToolCalls,
                limit: max,
                reason: format!(
                    "compute bound exhausted: maxToolCalls={max} — the mission reached its envelope-gated action budget; this call and any after it are refused."
                ),
            });
        }
        None
    }

    /// A gated permission request: counted like any tool call. Returns whether it
    /// must be refused (it crossed the bound, or the budget is already spent); a
    /// crossing goes to the drive loop, which cancels the turn.
    pub fn gated_call(&self, id: &str, title: &str) -> bool {
        if let Some(crossing) = self.tool_call(id, title) {
            let _ = self.gated.send(crossing);
            return true;
        }
        self.is_exhausted()
    }

    /// Has a bound been crossed (and not extended since)?
    pub fn is_exhausted(&self) -> bool {
        self.spent.lock().unwrap().exhausted
    }

    /// The text the host sends counts towards the meter.
    pub fn sent(&self, blocks: &[String]) {
        let bytes: usize = blocks.iter().map(String::len).sum();
        self.spent.lock().unwrap().metered_bytes += bytes as u64;
    }

    /// Account for one update from the unit. Returns the crossing when it crosses
    /// a bound.
    pub fn record(&self, ev: &UnitEvent) -> Option<Crossing> {
        match ev {
            UnitEvent::ToolCall { id, title, .. } => {
                self.meter(title.len());
                self.tool_call(id, title)
            }
            UnitEvent::AgentText(t) | UnitEvent::Thought(t) => {
                self.meter(t.len());
                self.tokens_exhausted()
            }
            UnitEvent::ToolCallUpdate { title, .. } => {
                self.meter(title.as_deref().map_or(0, str::len));
                None
            }
            UnitEvent::Usage { used, .. } => {
                let mut s = self.spent.lock().unwrap();
                s.max_used = Some(s.max_used.unwrap_or(0).max(*used));
                drop(s);
                self.tokens_exhausted()
            }
            UnitEvent::TurnUsage(u) => {
                let mut s = self.spent.lock().unwrap();
                s.turn_totals = Some(s.turn_totals.unwrap_or(0) + u.total_tokens);
                drop(s);
                self.tokens_exhausted()
            }
            _ => None,
        }
    }

    fn meter(&self, bytes: usize) {
        self.spent.lock().unwrap().metered_bytes += bytes as u64;
    }

    /// The crossing when the token bound is crossed (reported once).
    pub fn tokens_exhausted(&self) -> Option<Crossing> {
        let mut s = self.spent.lock().unwrap();
        let max = s.bounds.max_tokens;
        if max == 0 || s.exhausted {
            return None;
        }
        let reported = match (s.turn_totals, s.max_used) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0).max(b.unwrap_or(0))),
        };
        let (used, measure) = match reported {
            Some(u) => (u, format!("reported usage {u}")),
            None => {
                let u = s.metered_bytes / BYTES_PER_TOKEN;
                (
                    u,
                    format!(
                        "metered usage {u}, counted as bytes/4 of the text crossing the ACP boundary because the agent reports none"
                    ),
                )
            }
        };
        if used <= max {
            return None;
        }
        s.exhausted = true;
        Some(Crossing {
            field: ComputeField::MaxTokens,
            limit: max,
            reason: format!(
                "compute bound exhausted: maxTokens={max} ({measure}) — the mission spent its token budget."
            ),
        })
    }
}

/// Hold `modelAllowlist` on a started unit: keep its session model when the
/// envelope allows it, else switch to the first allowed model it offers (in the
/// envelope's order; names compare exactly, ignoring case). An agent that
/// advertises no models cannot be held to the list (its label says so). `Err`
/// refuses the fire, before anything is prompted.
pub(super) async fn select_allowed_model(
    unit: &mut crate::acp::Unit,
    bounds: &ComputeBounds,
    agent: &str,
) -> anyhow::Result<()> {
    let allow = &bounds.model_allowlist;
    let Some(models) = unit.capabilities().offered_models().cloned() else {
        return Ok(());
    };
    if allow.is_empty() {
        return Ok(());
    }
    let allowed = |m: &str| allow.iter().any(|a| a.trim().eq_ignore_ascii_case(m));
    if allowed(&models.current) {
        return Ok(());
    }
    let quoted = |list: &[String]| {
        list.iter()
            .map(|m| format!("{:?}", m.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let pick = allow.iter().find_map(|a| {
        models
            .available
            .iter()
            .find(|m| m.eq_ignore_ascii_case(a.trim()))
    });
    let Some(pick) = pick.cloned() else {
        anyhow::bail!(
            "compute bound refused: modelAllowlist — this mission's envelope permits only {}; agent {agent:?} offers {}. Nothing was sent and no mission was recorded: fire under an envelope whose modelAllowlist names one of the agent's models, or at an agent that offers an allowed one",
            quoted(allow),
            quoted(&models.available)
        );
    };
    unit.select_model(&pick).await.map_err(|e| {
        anyhow::anyhow!(
            "compute bound refused: modelAllowlist — agent {agent:?} did not switch to the allowed model {pick:?}: {e}. Nothing was sent and no mission was recorded"
        )
    })
}

/// Settle a mission's pause on `ask` (resolved): an extension raises `field`
/// above `limit` on the record; "stop" — or a question that closed unanswered —
/// finishes the mission stuck with the bound's `reason`. Returns the raised
/// limit, `None` when the mission stops.
pub(super) fn settle_pause(
    ledger: &ComputeLedger,
    missions: &crate::mission::Missions,
    ask: &crate::asks::Ask,
    field: ComputeField,
    limit: u64,
    reason: &str,
) -> anyhow::Result<Option<u64>> {
    let mission_id = ask.mission_id.as_deref().unwrap_or_default();
    let raised = ask
        .answer()
        .and_then(|a| BudgetAnswer::parse(a).ok())
        .and_then(|a| a.raise(limit, field.cap()))
        .filter(|l| *l > limit);
    ledger.end_pause(mission_id, &ask.id, raised.map(|l| (field, l)))?;
    if raised.is_none()
        && let Err(e) = missions.finish(mission_id, crate::mission::Status::Stuck, reason)
    {
        tracing::info!(mission = %mission_id, "compute bound lost to another verdict: {e}");
    }
    Ok(raised)
}

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
    /// The compute-bound question the mission is paused on, if any.
    pub pause: Option<Pause>,
}

/// A mission waiting for its operator to extend a crossed bound or stop it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    pub ask_id: String,
    pub field: ComputeField,
    pub reason: String,
}

impl ComputeRecord {
    /// The envelope's bounds with the operator's raised limits applied.
    pub fn apply(&self, envelope: &ComputeBounds) -> ComputeBounds {
        let mut b = envelope.clone();
        for (field, raised) in [
            (ComputeField::MaxTurns, self.max_turns),
            (ComputeField::MaxToolCalls, self.max_tool_calls),
            (ComputeField::MaxTokens, self.max_tokens),
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
        ComputeField::ModelAllowlist | ComputeField::BackendAllowlist => None,
    }
}

/// The `mission_compute` table.
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
                "SELECT models, model, max_turns, max_tool_calls, max_tokens, paused_ask, paused_field, paused_reason
                 FROM mission_compute WHERE mission_id = ?1",
                params![mission_id],
                |r| {
                    let models: Option<String> = r.get(0)?;
                    let ask: Option<String> = r.get(5)?;
                    let field: Option<String> = r.get(6)?;
                    let pause = match (ask, field.as_deref().and_then(ComputeField::from_key)) {
                        (Some(ask_id), Some(field)) => Some(Pause {
                            ask_id,
                            field,
                            reason: r.get::<_, Option<String>>(7)?.unwrap_or_default(),
                        }),
                        _ => None,
                    };
                    Ok(ComputeRecord {
                        models: models.and_then(|m| serde_json::from_str(&m).ok()),
                        model: r.get(1)?,
                        max_turns: r.get::<_, Option<i64>>(2)?.map(|v| v.max(0) as u64),
                        max_tool_calls: r.get::<_, Option<i64>>(3)?.map(|v| v.max(0) as u64),
                        max_tokens: r.get::<_, Option<i64>>(4)?.map(|v| v.max(0) as u64),
                        pause,
                    })
                },
            )
            .optional()
        })
    }

    /// What a freshly started unit offered and runs on (a resumed unit records
    /// its own; raised limits and a pause are kept).
    pub fn record_unit(
        &self,
        mission_id: &str,
        models: Option<&[String]>,
        model: Option<&str>,
    ) -> Result<(), StoreError> {
        let models = models.map(|m| serde_json::to_string(m).unwrap_or_default());
        self.store.with(|c| {
            c.execute(
                "INSERT INTO mission_compute (mission_id, models, model, updated_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (mission_id) DO UPDATE SET models = ?2, model = ?3, updated_at = ?4",
                params![mission_id, models, model, clock::now_ms()],
            )
        })?;
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(calls: u64, tokens: u64) -> Budget {
        Budget::new(ComputeBounds {
            max_tool_calls: calls,
            max_tokens: tokens,
            ..Default::default()
        })
        .0
    }

    #[test]
    fn tool_calls_count_once_per_id_and_never_our_own() {
        let b = budget(2, 0);
        assert_eq!(b.tool_call("a", "read x"), None);
        assert_eq!(
            b.tool_call("a", "read x"),
            None,
            "the same id twice is one call"
        );
        assert_eq!(b.tool_call("m", "mcp__mission__mission_report"), None);
        assert_eq!(b.tool_call("b", "edit y"), None);
        let reason = b.tool_call("c", "run z").unwrap().reason;
        assert!(
            reason.starts_with("compute bound exhausted: maxToolCalls=2 — "),
            "{reason}"
        );
        assert!(b.is_exhausted());
        assert_eq!(
            b.tool_call("d", "again"),
            None,
            "the crossing is reported once"
        );
    }

    #[test]
    fn reported_usage_wins_over_the_meter() {
        let b = budget(0, 100);
        assert_eq!(b.record(&UnitEvent::AgentText("x".repeat(100))), None);
        let r = b
            .record(&UnitEvent::Usage {
                used: 150,
                size: 1000,
                cost: None,
            })
            .unwrap()
            .reason;
        assert_eq!(
            r,
            "compute bound exhausted: maxTokens=100 (reported usage 150) — the mission spent its token budget."
        );
    }

    #[test]
    fn with_no_usage_the_meter_holds_the_bound() {
        let b = budget(0, 100);
        b.sent(&["p".repeat(200)]);
        let r = b
            .record(&UnitEvent::AgentText("y".repeat(300)))
            .unwrap()
            .reason;
        assert!(
            r.starts_with(
                "compute bound exhausted: maxTokens=100 (metered usage 125, counted as bytes/4 "
            ),
            "{r}"
        );
    }

    #[test]
    fn an_extension_lets_the_mission_spend_again() {
        let b = budget(1, 0);
        assert_eq!(b.tool_call("a", "one"), None);
        let crossing = b.tool_call("b", "two").unwrap();
        assert_eq!(
            (crossing.field, crossing.limit),
            (ComputeField::MaxToolCalls, 1)
        );
        assert!(b.gated_call("c", "three"), "refused while spent");
        b.extend(ComputeField::MaxToolCalls, 4);
        assert!(!b.is_exhausted());
        assert!(!b.gated_call("d", "four"), "4 calls within the raised 4");
        assert!(b.gated_call("e", "five"), "and the fifth crosses again");
    }

    #[test]
    fn the_ledger_applies_raised_limits_and_ends_a_pause_once() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = ComputeLedger::new(Store::open(&dir.path().join("b.db")).unwrap());
        assert_eq!(ledger.get("m").unwrap(), None);
        ledger
            .record_unit("m", Some(&["a".into(), "b".into()]), Some("b"))
            .unwrap();
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
