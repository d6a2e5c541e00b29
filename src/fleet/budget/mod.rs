//! A unit's compute spend against its envelope's bounds, shared by its drive loop
//! (which sees every ACP update) and its permission answerer (which sees every gated
//! call). Tool calls are counted once per ACP tool-call id, whichever side saw them
//! first; tokens come from the usage the agent reports, and when it reports none,
//! from a meter over the text crossing the ACP boundary — so the bound is never inert.
//!
//! The module splits along its responsibilities: this file is the in-memory
//! spend, written through the mission's durable compute record
//! (`mission::compute`, which owns the `mission_compute` table); [`model`] holds
//! the model allowlist on a started unit; [`pause`] settles a `pause_ask`
//! question.

use std::collections::HashSet;
use std::sync::Mutex;

use tokio::sync::mpsc;

use crate::acp_client::UnitEvent;
use crate::envelope::bounds::ComputeField;
use crate::envelope::format::ComputeBounds;
use crate::mission::compute::{self, ComputeLedger, ContextFill, Spend};
use crate::sync::LockUnpoisoned;

pub mod fleet;
mod model;
mod pause;
pub mod price;

pub(super) use model::select_allowed_model;
pub(super) use pause::settle_pause;

/// The meter's estimate: a token per four bytes of text, the usual rough figure for
/// English prose and code.
pub const BYTES_PER_TOKEN: u64 = 4;

/// A bound crossed: which, at what limit, and the mission's stuck reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crossing {
    pub field: ComputeField,
    pub limit: u64,
    pub reason: String,
    /// Pause on a question whatever the envelope's `onExhausted` says: the fleet's
    /// budget was crossed under `budget-on-exceeded pause`.
    pub always_pause: bool,
}

impl Crossing {
    /// The stuck reason for the turn bound (crossed before the nudge, not counted).
    pub fn turns(limit: u64) -> Crossing {
        Crossing {
            field: ComputeField::MaxTurns,
            limit,
            reason: format!(
                "compute bound exhausted: maxTurns={} — the mission spent its turn budget without reaching its operator.",
                crate::text::count(limit)
            ),
            always_pause: false,
        }
    }

    /// Does this crossing pause the mission on a question (else it finishes stuck)?
    pub fn pauses(&self, bounds: &ComputeBounds) -> bool {
        self.always_pause || bounds.on_exhausted == crate::envelope::format::OnExhausted::PauseAsk
    }
}

#[derive(Default)]
struct Spent {
    bounds: ComputeBounds,
    tool_calls: HashSet<String>,
    /// Ids of calls known to be our mission tools: never counted.
    mission_calls: HashSet<String>,
    /// The largest `usage_update.used` seen (context occupancy).
    max_used: Option<u64>,
    /// The last `usage_update`'s context fill, and the one the ledger last heard.
    context: Option<ContextFill>,
    context_recorded: Option<ContextFill>,
    /// The sum of end-of-turn totals, when the agent reports them.
    turn_totals: Option<u64>,
    metered_bytes: u64,
    /// The part of `metered_bytes` the agent wrote (the rest the host sent).
    metered_out_bytes: u64,
    /// Input, output and cached-input tokens summed over the end-of-turn usage
    /// reports, when the agent sends them.
    turn_io: Option<(u64, u64, u64)>,
    /// The agent's cumulative cost of this session in micro-dollars, as it last
    /// reported it.
    reported_cost: Option<u64>,
    /// What earlier sessions of the mission spent (from the ledger): this session
    /// continues it, never refills it.
    prior: Spend,
    /// What the ledger last heard, so unchanged spend is not rewritten.
    recorded: Spend,
    /// The part of `prior` the bounds do not count: the spend before a revise, when
    /// the envelope counts bounds per run (tool calls, tokens).
    not_counted: (u64, u64),
    /// Set once a bound is crossed, so the crossing is reported exactly once;
    /// cleared when an operator extends the bound.
    exhausted: bool,
    /// The reason of the last crossing.
    crossed: Option<String>,
    /// The unit's model and its list price, when the price table has one: what
    /// prices the tokens of an agent that reports no cost.
    price: Option<(String, price::Price)>,
}

/// How this session's tokens are known.
#[derive(Clone, Copy)]
enum Measure {
    Reported,
    Metered,
}

/// How a mission's cost is known.
enum CostMeasure {
    /// The agent reported it.
    Reported,
    /// Its tokens at its model's list price; `metered` when this session's
    /// tokens are the meter's estimate because the agent reports none.
    Estimated {
        tokens: Spend,
        model: String,
        as_of: String,
        metered: bool,
    },
}

impl Spent {
    /// This session's tokens: the usage the agent reports, else the meter.
    fn session_tokens(&self) -> (u64, Measure) {
        match (self.turn_totals, self.max_used) {
            (None, None) => (self.metered_bytes / BYTES_PER_TOKEN, Measure::Metered),
            (a, b) => (a.unwrap_or(0).max(b.unwrap_or(0)), Measure::Reported),
        }
    }

    /// What the mission cost so far, with how that is known: the agent's
    /// cumulative report (earlier sessions' reports added), else every session's
    /// tokens at the unit's model's list price. `None`: neither is known.
    fn cost(&self) -> Option<(u64, CostMeasure)> {
        let reported = match (self.prior.reported_cost_micro_usd, self.reported_cost) {
            (None, None) => None,
            (prior, session) => Some(prior.unwrap_or(0) + session.unwrap_or(0)),
        };
        if let Some(micros) = reported {
            return Some((micros, CostMeasure::Reported));
        }
        let (model, price) = self.price.as_ref()?;
        let (input, output, cached) = self.session_io();
        let tokens = Spend {
            input_tokens: self.prior.input_tokens + input,
            output_tokens: self.prior.output_tokens + output,
            cached_tokens: self.prior.cached_tokens + cached,
            ..Spend::default()
        };
        let micros = (price::tokens_usd(price, &tokens) * 1_000_000.0).round() as u64;
        let metered = self.turn_io.is_none() && self.metered_bytes > 0;
        Some((
            micros,
            CostMeasure::Estimated {
                tokens,
                model: model.clone(),
                as_of: price.as_of.clone(),
                metered,
            },
        ))
    }

    /// This session's (input, output, cached) tokens: the agent's end-of-turn
    /// reports, else the meter's split of what crossed the boundary each way.
    fn session_io(&self) -> (u64, u64, u64) {
        self.turn_io.unwrap_or_else(|| {
            let out = self.metered_out_bytes / BYTES_PER_TOKEN;
            let all = self.metered_bytes / BYTES_PER_TOKEN;
            (all.saturating_sub(out), out, 0)
        })
    }
}

pub(super) struct Budget {
    spent: Mutex<Spent>,
    /// Crossings the permission answerer saw: the drive loop cancels the turn.
    gated: mpsc::UnboundedSender<Crossing>,
    /// Where the spend is made durable, as it is counted.
    ledger: Option<(ComputeLedger, String)>,
    /// The fleet's budgets, when a running mission pauses on crossing them
    /// (`budget-on-exceeded pause`), and the store their spend is read from.
    fleet: Option<(crate::store::Store, fleet::FleetBudgets)>,
    /// Set once this session reported the fleet's budget crossed: the operator's
    /// answer (its own `maxCostUsd` extended, or stop) governs it from there.
    fleet_crossed: std::sync::atomic::AtomicBool,
    /// Held while a write to the ledger is under way, so the drive loop's and the
    /// permission answerer's writes land one after the other, each with the spend
    /// as of its turn: the newest is the one that stays.
    writing: tokio::sync::Mutex<()>,
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
                ledger: None,
                fleet: None,
                fleet_crossed: std::sync::atomic::AtomicBool::new(false),
                writing: tokio::sync::Mutex::new(()),
            },
            rx,
        )
    }

    /// Continue mission `mission_id`'s durable spend: what its earlier sessions
    /// spent counts against the bounds, and every call and token counted here is
    /// recorded as it is counted.
    pub fn continuing(mut self, ledger: ComputeLedger, mission_id: &str, prior: Spend) -> Budget {
        let s = self.spent.get_mut().unwrap();
        s.prior = prior;
        s.recorded = prior;
        self.ledger = Some((ledger, mission_id.to_string()));
        self
    }

    /// Price this unit's tokens at `price` (its model's entry in the home's price
    /// table), for an agent that reports no cost of its own.
    pub fn priced(self, model: &str, price: Option<price::Price>) -> Budget {
        self.spent.lock_unpoisoned().price = price.map(|p| (model.to_string(), p));
        self
    }

    /// Pause the mission when the fleet's spend crosses one of `budgets`, read
    /// from `store` after each spend this session records.
    pub fn watching_fleet(
        mut self,
        store: crate::store::Store,
        budgets: fleet::FleetBudgets,
    ) -> Budget {
        if budgets.is_set() && budgets.on_exceeded == fleet::OnExceeded::Pause {
            self.fleet = Some((store, budgets));
        }
        self
    }

    /// After a recorded spend: has the fleet's spend crossed a budget? The
    /// crossing (once a session) goes to the drive loop, which pauses the mission.
    async fn watch_fleet(&self) {
        use std::sync::atomic::Ordering;
        let Some((store, budgets)) = &self.fleet else {
            return;
        };
        if self.fleet_crossed.load(Ordering::Relaxed) || self.is_exhausted() {
            return;
        }
        let (store, budgets) = (store.clone(), *budgets);
        let over = crate::store::blocking(move || {
            store.with(|c| fleet::first_over(c, &budgets, crate::clock::now_ms()))
        })
        .await;
        let over = match over {
            Ok(Some(over)) => over,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!("could not read the fleet's spend against its budgets: {e}");
                return;
            }
        };
        if self.fleet_crossed.swap(true, Ordering::Relaxed) {
            return;
        }
        let reason = over.crossed();
        let limit = {
            let mut s = self.spent.lock_unpoisoned();
            s.exhausted = true;
            s.crossed = Some(reason.clone());
            s.cost().map_or(0, |(micros, _)| micros)
        };
        let _ = self.gated.send(Crossing {
            field: ComputeField::MaxCostUsd,
            limit,
            reason,
            always_pause: true,
        });
    }

    /// Count the bounds from `base` (tool calls, tokens) of the mission's spend: a
    /// revised run whose envelope counts bounds per run. The spend recorded is still
    /// the mission's whole.
    pub fn counting_from(self, base: (u64, u64)) -> Budget {
        self.spent.lock_unpoisoned().not_counted = base;
        self
    }

    /// What the mission has spent, this session included.
    pub fn spend(&self) -> Spend {
        let s = self.spent.lock_unpoisoned();
        let cost_micro_usd = s.cost().map(|(micros, _)| micros);
        let (input, output, cached) = s.session_io();
        // The agent's figure is cumulative over its session: the mission's is what
        // earlier sessions cost plus this one's last report.
        let reported_cost_micro_usd = match (s.prior.reported_cost_micro_usd, s.reported_cost) {
            (None, None) => None,
            (prior, session) => Some(prior.unwrap_or(0) + session.unwrap_or(0)),
        };
        Spend {
            tool_calls: s.prior.tool_calls + s.tool_calls.len() as u64,
            tokens: s.prior.tokens + s.session_tokens().0,
            input_tokens: s.prior.input_tokens + input,
            output_tokens: s.prior.output_tokens + output,
            cached_tokens: s.prior.cached_tokens + cached,
            reported_cost_micro_usd,
            cost_micro_usd,
        }
    }

    /// Make the spend durable if it changed since the ledger last heard of it.
    /// Awaited by the drive loop and the permission answerer before they go on, so
    /// a host killed right after has the spend on the record.
    pub async fn record_spend(&self) {
        let Some((ledger, mission_id)) = &self.ledger else {
            return;
        };
        let _writing = self.writing.lock().await;
        // The context fill is the last report, not a sum: it may fall (the agent
        // compacted its context), so it is written on its own when it changed.
        let context = {
            let mut s = self.spent.lock_unpoisoned();
            let changed = s.context.filter(|c| Some(*c) != s.context_recorded);
            if changed.is_some() {
                s.context_recorded = changed;
            }
            changed
        };
        if let Some(context) = context {
            let (ledger, id) = (ledger.clone(), mission_id.clone());
            let written = crate::store::blocking(move || ledger.record_context(&id, context)).await;
            if let Err(e) = written {
                tracing::warn!(mission = %mission_id, "could not record the context fill: {e}");
            }
        }
        let now = self.spend();
        if now == self.spent.lock_unpoisoned().recorded {
            return;
        }
        let (ledger, id) = (ledger.clone(), mission_id.clone());
        let written = crate::store::blocking(move || ledger.record_spend(&id, now)).await;
        match written {
            // Only once it is committed: until then a verdict judged meanwhile carries
            // the spend in its own transaction ([`Budget::unrecorded`]), so a mission
            // is never at rest on the record without its cost — another host's budget
            // admission would read it as free. (Both writes keep the larger figures.)
            Ok(()) => self.spent.lock_unpoisoned().recorded = now,
            Err(e) => {
                tracing::warn!(mission = %mission_id, "could not record the compute spend: {e}")
            }
        }
        self.watch_fleet().await;
    }

    /// The spend to record, with the statement that records it, when it changed
    /// since the ledger last heard: for a write that goes anyway (a verdict) to
    /// carry in its transaction. Say [`Budget::recorded`] once that committed.
    pub fn unrecorded(&self) -> Option<(Spend, (&'static str, Vec<crate::store::sql::Value>))> {
        let (_, mission_id) = self.ledger.as_ref()?;
        let now = self.spend();
        (now != self.spent.lock_unpoisoned().recorded)
            .then(|| (now, compute::spend_statement(mission_id, now)))
    }

    /// `spent` is on the record (carried by another write).
    pub fn recorded(&self, spent: Spend) {
        self.spent.lock_unpoisoned().recorded = spent;
    }

    /// The bounds in force (the envelope's, as raised by the operator).
    pub fn bounds(&self) -> ComputeBounds {
        self.spent.lock_unpoisoned().bounds.clone()
    }

    /// An operator raised `field` to `limit`: the mission may spend again.
    pub fn extend(&self, field: ComputeField, limit: u64) {
        let mut s = self.spent.lock_unpoisoned();
        field.set_limit(&mut s.bounds, limit);
        s.exhausted = false;
    }

    /// Count a foreign tool call by id. Returns the crossing when this call crosses
    /// `maxToolCalls` (reported once; later calls return `None` but are refused by
    /// [`Budget::is_exhausted`]). A call known to be one of our mission tools is
    /// never counted.
    pub async fn tool_call(&self, id: &str) -> Option<Crossing> {
        let (counted, crossing) = self.count_tool_call(id);
        if counted {
            self.record_spend().await;
        }
        crossing
    }

    /// [`Budget::tool_call`] in memory (the stdout tap counts this way; the drive
    /// loop records right behind it): whether it counted, and the crossing.
    fn count_tool_call(&self, id: &str) -> (bool, Option<Crossing>) {
        let mut s = self.spent.lock_unpoisoned();
        if !id.is_empty() && s.mission_calls.contains(id) {
            return (false, None);
        }
        let max = s.bounds.max_tool_calls;
        let key = if id.is_empty() {
            format!("untitled-{}", s.tool_calls.len())
        } else {
            id.to_string()
        };
        let counted = s.tool_calls.insert(key);
        let calls = s.prior.tool_calls.saturating_sub(s.not_counted.0) + s.tool_calls.len() as u64;
        let crossed = max > 0 && calls > max && !s.exhausted;
        if crossed {
            s.exhausted = true;
            s.crossed = Some(tool_calls_reason(max));
        }
        drop(s);
        let crossing = crossed.then(|| Crossing {
            field: ComputeField::MaxToolCalls,
            limit: max,
            reason: tool_calls_reason(max),
            always_pause: false,
        });
        (counted, crossing)
    }

    /// A gated permission request: counted like any tool call. Returns whether it
    /// must be refused (it crossed the bound, or the budget is already spent); a
    /// crossing goes to the drive loop, which cancels the turn.
    pub async fn gated_call(&self, id: &str) -> bool {
        if let Some(crossing) = self.tool_call(id).await {
            let _ = self.gated.send(crossing);
            return true;
        }
        self.is_exhausted()
    }

    /// The call with this id is one of our mission tools (its permission request
    /// said so, perhaps after its `tool_call` update was counted): it does not count,
    /// now or when its updates arrive.
    pub async fn mission_call(&self, id: &str) {
        if self.mission_call_counted(id) {
            self.record_spend().await;
        }
    }

    /// [`Budget::mission_call`] in memory: whether a count was taken back.
    fn mission_call_counted(&self, id: &str) -> bool {
        if id.is_empty() {
            return false;
        }
        let mut s = self.spent.lock_unpoisoned();
        s.mission_calls.insert(id.to_string());
        s.tool_calls.remove(id)
    }

    /// The stuck reason of the bound crossed, while it is not extended.
    pub fn crossed(&self) -> Option<String> {
        let s = self.spent.lock_unpoisoned();
        s.exhausted.then(|| s.crossed.clone().unwrap_or_default())
    }

    /// Has a bound been crossed (and not extended since)?
    pub fn is_exhausted(&self) -> bool {
        self.spent.lock_unpoisoned().exhausted
    }

    /// The text the host sends counts towards the meter.
    pub fn sent(&self, blocks: &[String]) {
        let bytes: usize = blocks.iter().map(String::len).sum();
        self.spent.lock_unpoisoned().metered_bytes += bytes as u64;
    }

    /// Account for one update from the unit and make the spend durable. Returns
    /// the crossing when it crosses a bound.
    pub async fn record(&self, ev: &UnitEvent) -> Option<Crossing> {
        let crossed = self.count(ev);
        self.settle(ev).await;
        crossed
    }

    /// Make the spend durable after an update already counted (by [`Budget::observe`]),
    /// when it is one that moves the ledger: a tool call or reported usage. The
    /// meter's tokens are made durable once a turn, not per chunk.
    pub async fn settle(&self, ev: &UnitEvent) {
        if matches!(
            ev,
            UnitEvent::ToolCall { .. } | UnitEvent::Usage { .. } | UnitEvent::TurnUsage(_)
        ) {
            self.record_spend().await;
        }
    }

    /// An update read off the unit's stdout, counted the moment its line is read
    /// (so a verdict that follows it is judged with it counted); a crossing goes to
    /// the drive loop, which settles it and makes the spend durable.
    pub fn observe(&self, ev: &UnitEvent) {
        if let Some(crossing) = self.count(ev) {
            let _ = self.gated.send(crossing);
        }
    }

    /// Account for one update in memory. Returns the crossing when it crosses a
    /// bound.
    fn count(&self, ev: &UnitEvent) -> Option<Crossing> {
        match ev {
            UnitEvent::ToolCall { id, title, .. } => {
                self.meter_out(title.len());
                let ours = crate::fleet::normalise::Shape::of_event(ev)
                    .is_some_and(|shape| crate::fleet::normalise::mission_tool(&shape).is_some());
                if ours {
                    self.mission_call_counted(id);
                    return None;
                }
                self.count_tool_call(id).1
            }
            UnitEvent::AgentText { text: t, .. } | UnitEvent::Thought(t) => {
                self.meter_out(t.len());
                self.bound_exhausted()
            }
            UnitEvent::ToolCallUpdate { title, .. } => {
                self.meter_out(title.as_deref().map_or(0, str::len));
                None
            }
            UnitEvent::Usage { used, size, cost } => {
                let mut s = self.spent.lock_unpoisoned();
                s.max_used = Some(s.max_used.unwrap_or(0).max(*used));
                s.context = Some(ContextFill {
                    used: *used,
                    size: *size,
                });
                match cost {
                    // Cumulative: the newest report is the session's cost so far.
                    Some((amount, currency))
                        if currency.eq_ignore_ascii_case("USD")
                            && amount.is_finite()
                            && *amount >= 0.0 =>
                    {
                        s.reported_cost = Some((amount * 1_000_000.0).round() as u64);
                    }
                    Some((_, currency)) => tracing::debug!(
                        currency = %crate::text::sanitize(currency),
                        "a reported cost not in US dollars is not recorded; the tokens are priced instead"
                    ),
                    None => {}
                }
                drop(s);
                self.bound_exhausted()
            }
            UnitEvent::TurnUsage(u) => {
                let mut s = self.spent.lock_unpoisoned();
                s.turn_totals = Some(s.turn_totals.unwrap_or(0) + u.total_tokens);
                let (i, o, c) = s.turn_io.unwrap_or_default();
                s.turn_io = Some((
                    i + u.input_tokens,
                    o + u.output_tokens,
                    c + u.cached_read_tokens.unwrap_or(0),
                ));
                drop(s);
                self.bound_exhausted()
            }
            _ => None,
        }
    }

    /// Text the agent wrote counts towards the meter, as output.
    fn meter_out(&self, bytes: usize) {
        let mut s = self.spent.lock_unpoisoned();
        s.metered_bytes += bytes as u64;
        s.metered_out_bytes += bytes as u64;
    }

    /// The crossing when the spend crosses its token or money bound (reported
    /// once): the one check run after every usage report and every metered chunk.
    pub fn bound_exhausted(&self) -> Option<Crossing> {
        self.tokens_exhausted().or_else(|| self.cost_exhausted())
    }

    /// The crossing when the money bound is crossed (reported once). A mission
    /// whose cost is unknown — no reported cost, no price for its model — cannot
    /// cross it: the bound is best-effort, and `mission show` says why.
    fn cost_exhausted(&self) -> Option<Crossing> {
        let mut s = self.spent.lock_unpoisoned();
        let max = s.bounds.max_cost_micro_usd;
        if max == 0 || s.exhausted {
            return None;
        }
        let (cost, measure) = s.cost()?;
        if cost <= max {
            return None;
        }
        let usd = crate::envelope::bounds::usd;
        let how = match measure {
            CostMeasure::Reported => format!("reported cost {} by the agent", usd(cost)),
            CostMeasure::Estimated {
                tokens,
                model,
                as_of,
                metered,
            } => format!(
                "estimated cost {}: {} input ({} cached) + {} output tokens{} at {}'s list prices of {as_of}",
                usd(cost),
                crate::text::count(tokens.input_tokens),
                crate::text::count(tokens.cached_tokens.min(tokens.input_tokens)),
                crate::text::count(tokens.output_tokens),
                if metered {
                    ", metered as bytes/4 of the text crossing the ACP boundary because the agent reports none"
                } else {
                    ""
                },
                crate::text::sanitize(&model)
            ),
        };
        let reason = format!(
            "compute bound exhausted: maxCostUsd={} ({how}) — the mission spent its money budget.",
            usd(max)
        );
        s.exhausted = true;
        s.crossed = Some(reason.clone());
        Some(Crossing {
            field: ComputeField::MaxCostUsd,
            limit: max,
            reason,
            always_pause: false,
        })
    }

    /// The crossing when the token bound is crossed (reported once).
    fn tokens_exhausted(&self) -> Option<Crossing> {
        let mut s = self.spent.lock_unpoisoned();
        let max = s.bounds.max_tokens;
        if max == 0 || s.exhausted {
            return None;
        }
        let (session, measure) = s.session_tokens();
        let counted_prior = s.prior.tokens.saturating_sub(s.not_counted.1);
        let used = counted_prior + session;
        if used <= max {
            return None;
        }
        let [used, prior, session] = [used, counted_prior, session].map(crate::text::count);
        let measure = match (measure, counted_prior) {
            (Measure::Reported, 0) => format!("reported usage {used}"),
            (Measure::Metered, 0) => format!(
                "metered usage {used}, counted as bytes/4 of the text crossing the ACP boundary because the agent reports none"
            ),
            (Measure::Reported, _) => format!(
                "reported usage {used}: {prior} spent by earlier sessions of the mission, {session} by this one"
            ),
            (Measure::Metered, _) => format!(
                "metered usage {used}: {prior} spent by earlier sessions of the mission, {session} by this one, counted as bytes/4 of the text crossing the ACP boundary because the agent reports none"
            ),
        };
        let reason = format!(
            "compute bound exhausted: maxTokens={} ({measure}) — the mission spent its token budget.",
            crate::text::count(max)
        );
        s.exhausted = true;
        s.crossed = Some(reason.clone());
        Some(Crossing {
            field: ComputeField::MaxTokens,
            limit: max,
            reason,
            always_pause: false,
        })
    }
}

fn tool_calls_reason(max: u64) -> String {
    format!(
        "compute bound exhausted: maxToolCalls={} — the mission reached its envelope-gated action budget; this call and any after it are refused.",
        crate::text::count(max)
    )
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

    #[tokio::test]
    async fn tool_calls_count_once_per_id_and_never_our_own() {
        let b = budget(2, 0);
        assert_eq!(b.tool_call("a").await, None);
        assert_eq!(
            b.tool_call("a").await,
            None,
            "the same id twice is one call"
        );
        let qwen = UnitEvent::ToolCall {
            id: "m".into(),
            title: "{\"summary\":\"x\"}".into(),
            kind: "other".into(),
            status: "pending".into(),
            raw_input: Some(serde_json::json!({"summary": "x"})),
            meta: serde_json::Map::from_iter([(
                "toolName".to_string(),
                serde_json::json!("mcp__mission__mission_report"),
            )]),
        };
        assert_eq!(b.record(&qwen).await, None);
        assert_eq!(b.tool_call("m").await, None);
        // Counted before its permission request said it was ours: uncounted.
        assert_eq!(b.tool_call("late").await, None);
        b.mission_call("late").await;
        assert_eq!(b.spend().tool_calls, 1);
        assert_eq!(b.tool_call("b").await, None);
        let reason = b.tool_call("c").await.unwrap().reason;
        assert!(
            reason.starts_with("compute bound exhausted: maxToolCalls=2 — "),
            "{reason}"
        );
        assert!(b.is_exhausted());
        assert_eq!(
            b.tool_call("d").await,
            None,
            "the crossing is reported once"
        );
    }

    #[tokio::test]
    async fn reported_usage_wins_over_the_meter() {
        let b = budget(0, 100);
        assert_eq!(
            b.record(&UnitEvent::AgentText {
                text: "x".repeat(100),
                message: None
            })
            .await,
            None
        );
        let r = b
            .record(&UnitEvent::Usage {
                used: 150,
                size: 1000,
                cost: None,
            })
            .await
            .unwrap()
            .reason;
        assert_eq!(
            r,
            "compute bound exhausted: maxTokens=100 (reported usage 150) — the mission spent its token budget."
        );
    }

    #[tokio::test]
    async fn with_no_usage_the_meter_holds_the_bound() {
        let b = budget(0, 100);
        b.sent(&["p".repeat(200)]);
        let r = b
            .record(&UnitEvent::AgentText {
                text: "y".repeat(300),
                message: None,
            })
            .await
            .unwrap()
            .reason;
        assert!(
            r.starts_with(
                "compute bound exhausted: maxTokens=100 (metered usage 125, counted as bytes/4 "
            ),
            "{r}"
        );
    }

    #[tokio::test]
    async fn an_extension_lets_the_mission_spend_again() {
        let b = budget(1, 0);
        assert_eq!(b.tool_call("a").await, None);
        let crossing = b.tool_call("b").await.unwrap();
        assert_eq!(
            (crossing.field, crossing.limit),
            (ComputeField::MaxToolCalls, 1)
        );
        assert!(b.gated_call("c").await, "refused while spent");
        b.extend(ComputeField::MaxToolCalls, 4);
        assert!(!b.is_exhausted());
        assert!(!b.gated_call("d").await, "4 calls within the raised 4");
        assert!(b.gated_call("e").await, "and the fifth crosses again");
    }

    #[tokio::test]
    async fn a_continuing_budget_counts_earlier_sessions_and_records_what_it_adds() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("b.db")).unwrap();
        let ledger = ComputeLedger::new(store);
        let prior = Spend {
            tool_calls: 3,
            ..Spend::default()
        };
        let b = budget(5, 0).continuing(ledger.clone(), "m", prior);
        assert_eq!(b.tool_call("a").await, None);
        assert_eq!(b.tool_call("b").await, None);
        let crossing = b.tool_call("c").await.expect("the sixth call overall");
        assert_eq!(
            (crossing.field, crossing.limit),
            (ComputeField::MaxToolCalls, 5)
        );
        assert_eq!(ledger.get("m").unwrap().unwrap().spent.tool_calls, 6);
    }

    #[tokio::test]
    async fn a_resumed_session_adds_its_reported_cost_and_tokens_to_the_earlier_ones() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("b.db")).unwrap();
        let ledger = ComputeLedger::new(store);
        let prior = Spend {
            input_tokens: 10,
            reported_cost_micro_usd: Some(1_000_000),
            ..Spend::default()
        };
        let b = budget(0, 0).continuing(ledger.clone(), "m", prior);
        let usage = |amount: f64, currency: &str| UnitEvent::Usage {
            used: 7,
            size: 100,
            cost: Some((amount, currency.to_string())),
        };
        b.record(&usage(0.1, "USD")).await;
        // Cumulative: the session's newest figure replaces its older one.
        b.record(&usage(0.25, "USD")).await;
        b.record(&usage(9.0, "EUR")).await;
        b.record(&UnitEvent::TurnUsage(crate::acp_client::TurnUsage {
            total_tokens: 7,
            input_tokens: 5,
            output_tokens: 2,
            cached_read_tokens: Some(1),
            ..Default::default()
        }))
        .await;
        let spent = ledger.get("m").unwrap().unwrap().spent;
        assert_eq!(spent.reported_cost_micro_usd, Some(1_250_000));
        assert_eq!(
            (spent.input_tokens, spent.output_tokens, spent.cached_tokens),
            (15, 2, 1)
        );
    }
}
