//! The attention oracle (beta): `mission fire --oracle` mounts a driver that reviews
//! the questions of the missions this fire dispatched, and answers the routine ones
//! in-process as agent `oracle`, within the mission envelope's attention bounds.
//! Everything else waits for a human, exactly as without it.
//!
//! The driver follows the shared bus for `attention_asked` events, self-selects (only
//! operator-fired asks of missions this host holds; everything else is declined
//! without a model call), screens the question ([`screen`]: imitations, risky
//! classes and the mission envelope's own rules send it to WAIT with no model call),
//! runs the chain ([`chain`]) against the verdict contract ([`contract`], whose
//! answers must also pass [`screen`]'s evidence and yes/no checks), and delivers
//! through the one bounded agent-answer function. Every step — each model call,
//! retry and failure, each rejected verdict and why, recovery, the delivered answer
//! or WAIT — leaves a trace line on the fire's stderr and in the `oracle_trace` table
//! (`asks::trace`). The driver never fails the fire: every non-answer leaves the ask on
//! its ordinary path.
//!
//! The driver shares the host's runtime with its units, so its store calls cross
//! the blocking boundary ([`crate::store::boundary`]).

pub mod chain;
pub mod contract;
pub mod corpus;
pub mod eval;
pub mod grounds;
pub mod screen;
mod words;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::asks::AskError;
use crate::asks::bounds::AgentAnswerError;
use crate::asks::trace::Trace;
use crate::config::{self, Config};
use crate::envelope::search;
use crate::fleet::Fleet;
use crate::mission::{Mission, subjects};
use crate::model::{ModelClient, ModelError, ModelSettings};
use crate::paths::Paths;
use crate::store::{Store, blocking, blocking_in_place};
use crate::text::one_line;
use chain::{Chain, ChainFile};
use contract::{AnswerError, Answerer, Binding, Outcome};
use screen::Question;

/// The name the oracle's answers are recorded under.
pub const AGENT: &str = "oracle";
/// The oracle chain's own envelope: it allows the two oracle tools and nothing else.
pub const ENVELOPE: &str = "hitl-policy-oracle.json";

/// How often the driver looks at the bus for new questions when no commit wakes it.
const BUS_POLL: Duration = Duration::from_millis(100);

/// How many calls at `oracle-call-timeout` one review may take in all: its budget, which
/// the review keeps and a fire waiting on the review honours (see [`Mounted`]). Enough
/// for a review call and its two retries, recovery's and its two, and their backoffs: a
/// model that is merely slow is never cut short by anything but its own timeouts.
pub const REVIEW_BUDGET_CALLS: u32 = 7;

/// A mounted oracle: the chain, its envelope and the model, ready to follow the bus.
pub struct Oracle {
    paths: Paths,
    chain: ChainFile,
    envelope: search::Loaded,
    /// A model that could not be connected is kept as its error: every review then
    /// ends as a `chain error` and the fire itself is unaffected.
    model: Result<ModelClient, ModelError>,
    trace: Trace,
    /// `oracle-call-timeout`, of which a review's budget is [`REVIEW_BUDGET_CALLS`].
    call_timeout: Duration,
}

/// How the oracle's answer is recorded: `(ask id, agent name, text)` through the
/// bounded agent answer, which keeps the refusal's type inside the error
/// ([`AgentAnswerError`], [`AskError`], [`crate::store::StoreError`]).
pub type AnswerPath = Arc<dyn Fn(&str, &str, &str) -> anyhow::Result<()> + Send + Sync>;

/// A running driver, as its host holds it: which review is in flight and when its
/// budget ends, so a fire that waits on a question does not cut the review short;
/// and the unmounting, which says why in the trace of a review it ends.
pub struct Mounted {
    task: tokio::task::JoinHandle<()>,
    state: Arc<DriverState>,
}

#[derive(Default)]
struct DriverState {
    /// The ask under review and the end of its budget.
    review: Mutex<Option<(String, Instant)>>,
    /// Why the driver was unmounted: the closing line of a review it cut short.
    unmounted: Mutex<Option<String>>,
}

impl Mounted {
    /// The ask under review, and when the review's budget runs out.
    pub fn review_in_flight(&self) -> Option<(String, Instant)> {
        self.state
            .review
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }

    /// Stop following the bus; a review in flight closes its trace as abandoned, `why`.
    pub fn unmount(self, why: &str) {
        if let Ok(mut w) = self.state.unmounted.lock() {
            *w = Some(why.to_string());
        }
        self.task.abort();
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Oracle {
    /// Load the chain `oracle-variant` selects (workspace, then home, so an operator's
    /// edited copy is the one that runs), the oracle envelope, and connect the model.
    /// An error here means nothing may be fired.
    pub fn mount(paths: &Paths, store: &Store) -> anyhow::Result<Oracle> {
        let config = Config::new(store.clone());
        let variant = config.get(config::ORACLE_VARIANT)?.unwrap_or_default();
        let chain = ChainFile::load(paths, chain::file_for_variant(&variant))?;
        let envelope = search::load(paths, ENVELOPE)
            .map_err(|e| anyhow::anyhow!("--oracle: load {ENVELOPE}: {e}"))?;
        let mut settings = ModelSettings::from_config(&config)?;
        // Its own setting, not the park window: a first prompt on a busy CPU server
        // takes longer than a unit waits in its turn, and an answer past the window
        // still lands through the durable respond path.
        let call_timeout = config.oracle_call_timeout()?;
        settings.timeout = call_timeout;
        let model = ModelClient::connect(&settings);
        match &model {
            Ok(m) => {
                tracing::info!(model = %m.describe(), chain = %chain.file_name, "oracle mounted")
            }
            Err(e) => tracing::warn!("oracle mounted without a model: {e}"),
        }
        Ok(Oracle {
            paths: paths.clone(),
            chain,
            envelope,
            model,
            trace: Trace::new(store.clone(), true),
            call_timeout,
        })
    }

    /// What `mission fire` prints on stdout once the driver is mounted.
    pub fn mount_line(&self) -> String {
        format!(
            "Oracle attention driver mounted ({} under {ENVELOPE}): routine questions may be answered as agent \"{AGENT}\" within the mission envelope's attention bounds.",
            self.chain.file_name
        )
    }

    /// How long one review may take: [`REVIEW_BUDGET_CALLS`] calls at their timeout.
    pub fn review_budget(&self) -> Duration {
        self.call_timeout * REVIEW_BUDGET_CALLS
    }

    /// Follow the bus from now on, reviewing the questions `fleet` is host to, one at a
    /// time, until it is unmounted (the fire ends). Its answers go through `answer`,
    /// the operations layer's bounded answer path, handed down by the host that
    /// mounts it (the oracle sits below that layer and never names it).
    pub fn spawn(self, fleet: Fleet, answer: AnswerPath) -> anyhow::Result<Mounted> {
        let mut after = fleet.missions().bus().head()?;
        let mut changes = fleet.missions().store().changes().subscribe();
        let state = Arc::new(DriverState::default());
        let driver_state = state.clone();
        let task = tokio::spawn(async move {
            let state = driver_state;
            loop {
                changes.next(BUS_POLL).await;
                let missions = fleet.missions().clone();
                let events = match blocking(move || missions.bus().since(after, 100)).await {
                    Ok(e) => e,
                    Err(e) => {
                        tracing::warn!("oracle: bus poll failed: {e}");
                        continue;
                    }
                };
                for ev in events {
                    after = ev.id;
                    if ev.subject == subjects::ATTENTION_ASKED {
                        self.offer(&fleet, &answer, &ev.data, &state).await;
                    }
                }
            }
        });
        Ok(Mounted { task, state })
    }

    /// One `attention_asked` event: review it, or decline without a model call.
    async fn offer(&self, fleet: &Fleet, answer: &AnswerPath, event: &Value, state: &DriverState) {
        let field = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or_default();
        let (ask_id, mission_id) = (field("askId"), field("missionId"));
        let (missions, asks) = (fleet.missions().clone(), fleet.asks().clone());
        let (mission_key, ask_key) = (mission_id.to_string(), ask_id.to_string());
        let Some((mission, ask)) = blocking(move || {
            let mission = missions.get(&mission_key).ok().flatten()?;
            Some((mission, asks.get(&ask_key).ok().flatten()))
        })
        .await
        else {
            return;
        };
        let parent = [
            field("parentSessionId"),
            mission.parent_session_id.as_deref().unwrap_or_default(),
        ];
        if let Some(why) = declines(ask_id, &parent, fleet.holds(&mission.id)) {
            tracing::debug!(ask = %ask_id, mission = %mission.id, "oracle declines: {why}");
            return;
        }
        // A human may have been quicker; a settled question costs no model call.
        if !ask.is_some_and(|a| a.is_pending() && a.is_question()) {
            return;
        }
        let budget = self.review_budget();
        if let Ok(mut r) = state.review.lock() {
            *r = Some((ask_id.to_string(), Instant::now() + budget));
        }
        self.review(fleet, answer, &mission, ask_id, event, state)
            .await;
        if let Ok(mut r) = state.review.lock() {
            *r = None;
        }
    }

    async fn review(
        &self,
        fleet: &Fleet,
        answer: &AnswerPath,
        mission: &Mission,
        ask_id: &str,
        event: &Value,
        state: &DriverState,
    ) {
        let input = review_input(event);
        let summary = one_line(
            event
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        );
        let emit = |line: String| {
            let (trace, mission_id, ask_id) =
                (self.trace.clone(), mission.id.clone(), ask_id.to_string());
            blocking(move || trace.emit(&mission_id, &ask_id, &line))
        };
        emit(format!(
            "oracle: reviewing ask {ask_id} (mission {}): {summary}",
            mission.id
        ))
        .await;
        let started = Instant::now();
        let (paths, policy) = (self.paths.clone(), mission.envelope_name.clone());
        let envelope = blocking(move || search::load(&paths, &policy)).await;
        if let Some(refusal) = screen::screen_question(&Question::from_input(&input), &envelope) {
            let elapsed = crate::duration::format(round_to_ms(started.elapsed()));
            emit(format!(
                "oracle: WAIT for ask {ask_id} ({elapsed}) without asking the model — refused by the {refusal} — the question stays with a human"
            ))
            .await;
            return;
        }
        let deliver = Deliver {
            oracle: self,
            fleet,
            answer,
            mission_id: &mission.id,
            parked: AtomicBool::new(false),
            delivered: Mutex::new(None),
        };
        let mut closing = Abandoned {
            trace: &self.trace,
            mission_id: &mission.id,
            ask_id,
            started,
            delivered: &deliver.delivered,
            unmounted: &state.unmounted,
            ran_out: None,
            armed: true,
        };
        let mut binding = Binding::new(ask_id, &input, &deliver);
        // Called mid-chain on the driver's worker: the store insert runs in place.
        let step = |line: String| {
            blocking_in_place(|| self.trace.emit(&mission.id, ask_id, &line));
        };
        let chain = Chain {
            model: &self.model,
            file: &self.chain,
            envelope: &self.envelope,
            ask_id,
            trace: &step,
        };
        let budget = self.review_budget();
        // What the model calls spent is charged to the mission reviewed, however
        // the review ends.
        let meter = Arc::new(Mutex::new(crate::model::Usage::default()));
        let _charge = Charge {
            oracle: self,
            mission_id: &mission.id,
            meter: meter.clone(),
        };
        let run = chain::metered_into(meter, chain.run(&input, &mut binding));
        let Ok(ran) = tokio::time::timeout(budget, run).await else {
            // The closing line, answered or abandoned, is the guard's to write.
            closing.ran_out = Some(format!(
                "its budget of {} ({REVIEW_BUDGET_CALLS} × oracle-call-timeout {}) ran out",
                crate::duration::format(budget),
                crate::duration::format(self.call_timeout)
            ));
            return;
        };
        closing.armed = false;
        let elapsed = crate::duration::format(round_to_ms(started.elapsed()));
        let line = match (binding.outcome(), ran) {
            (Outcome::Answered(text), _) => answered_line(
                ask_id,
                &elapsed,
                text,
                deliver.parked.load(Ordering::Relaxed),
            ),
            (Outcome::Wait, _) => format!(
                "oracle: WAIT for ask {ask_id} ({elapsed}) — the question stays with a human"
            ),
            (Outcome::Open, Err(e)) => format!(
                "oracle: chain error for ask {ask_id} ({elapsed}): {e} — the question stays with a human"
            ),
            (Outcome::Open, Ok(())) => format!(
                "oracle: no verdict for ask {ask_id} within the chain budgets ({elapsed}) — the question stays with a human"
            ),
        };
        // Written in place, with no await since the chain returned: an answer often
        // lands the mission at once, and the fire then aborts this task and shuts the
        // runtime down, which drops blocking work not yet started — a closing line
        // spawned as such work could vanish from stderr and the table alike.
        let (trace, mission_id) = (&self.trace, &mission.id);
        blocking_in_place(|| trace.emit(mission_id, ask_id, &line));
    }
}

/// Charges a review's model calls to its mission when the review ends (dropped:
/// answered, waited, errored or cut short alike). Written in place, like the
/// closing trace line, so a runtime shutting down right after cannot drop it.
struct Charge<'a> {
    oracle: &'a Oracle,
    mission_id: &'a str,
    meter: Arc<Mutex<crate::model::Usage>>,
}

impl Drop for Charge<'_> {
    fn drop(&mut self) {
        use crate::sync::LockUnpoisoned;
        let usage = *self.meter.lock_unpoisoned();
        let Ok(model) = &self.oracle.model else {
            return;
        };
        if usage.prompt_tokens + usage.completion_tokens == 0 {
            return;
        }
        let name = model.model_name().to_string();
        let spent = crate::mission::compute::Spend {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
            ..Default::default()
        };
        let cost =
            crate::fleet::budget::price::unit_price(&self.oracle.paths.home, &name).map(|p| {
                (crate::fleet::budget::price::tokens_usd(&p, &spent) * 1_000_000.0).round() as u64
            });
        let ledger = crate::mission::compute::ComputeLedger::new(self.oracle.trace.store().clone());
        let recorded = blocking_in_place(|| {
            ledger.record_oracle(
                self.mission_id,
                &name,
                usage.prompt_tokens,
                usage.completion_tokens,
                cost,
            )
        });
        if let Err(e) = recorded {
            tracing::warn!(mission = %self.mission_id, "could not charge the oracle's spend to the mission: {e}");
        }
    }
}

/// The closing line of a review whose answer went out.
fn answered_line(ask_id: &str, elapsed: &str, text: &str, parked: bool) -> String {
    format!(
        "oracle: answered ask {ask_id} in {elapsed} as agent \"{AGENT}\": {text:?}{}",
        if parked {
            " (past the park window: the ask had checkpointed; the durable respond path resumed it)"
        } else {
            ""
        }
    )
}

/// The closing line of a review that never finished: the driver is dropped with the
/// fire (or the board unmounts it) while the chain still runs, and the trace must not
/// end on "reviewing".
struct Abandoned<'a> {
    trace: &'a Trace,
    mission_id: &'a str,
    ask_id: &'a str,
    started: Instant,
    /// The answer that went out, if one did: then the review ended answered, however
    /// it was cut short.
    delivered: &'a Mutex<Option<(String, bool)>>,
    /// Why the review was cut short, when its host said (see [`Mounted::unmount`]).
    unmounted: &'a Mutex<Option<String>>,
    /// Set when the review's own budget ended it.
    ran_out: Option<String>,
    /// Cleared once the review wrote its own closing line.
    armed: bool,
}

impl Drop for Abandoned<'_> {
    // Drop cannot await the blocking boundary, and `blocking_in_place` may panic while
    // the runtime is being torn down: this one short insert runs where it stands.
    fn drop(&mut self) {
        if self.armed {
            let elapsed = crate::duration::format(round_to_ms(self.started.elapsed()));
            let delivered = self.delivered.lock().map(|d| d.clone()).unwrap_or_default();
            let why = self
                .ran_out
                .take()
                .or_else(|| self.unmounted.lock().ok().and_then(|w| w.clone()))
                .unwrap_or_else(|| "the oracle was unmounted".into());
            let line = match delivered {
                Some((text, parked)) => answered_line(self.ask_id, &elapsed, &text, parked),
                None => format!(
                    "oracle: abandoned the review of ask {} ({elapsed}): {why} before a verdict — the question stays with a human",
                    self.ask_id
                ),
            };
            self.trace.emit(self.mission_id, self.ask_id, &line);
        }
    }
}

/// Why the driver leaves an ask alone, if it does: a parented ask belongs to the
/// session that fired the mission, and another host's mission to that host (every
/// host follows the same bus, so without this one `--oracle` fire would spend model
/// calls on other terminals' missions).
fn declines(ask_id: &str, parent_sessions: &[&str], held_here: bool) -> Option<&'static str> {
    if ask_id.is_empty() {
        Some("the event names no ask")
    } else if parent_sessions.iter().any(|p| !p.is_empty()) {
        Some("a parented ask: the firing session answers it")
    } else if !held_here {
        Some("a mission this host did not dispatch")
    } else {
        None
    }
}

/// The INPUT the model reviews: the operator's intent first, the one text evidence
/// may be copied from, then the unit's question and its detail; absent ones left out.
/// No ids: the chain reviews one ask and never makes the model echo which.
pub(crate) fn review_input(event: &Value) -> String {
    let mut input = Map::new();
    for key in ["intent", "summary", "detail"] {
        if let Some(Value::String(s)) = event.get(key)
            && !s.is_empty()
        {
            input.insert(key.to_string(), Value::String(s.clone()));
        }
    }
    Value::Object(input).to_string()
}

fn round_to_ms(d: Duration) -> Duration {
    Duration::from_millis(((d.as_nanos() + 500_000) / 1_000_000) as u64)
}

/// The answerer the contract calls: the row's checks, then the bounded write.
struct Deliver<'a> {
    oracle: &'a Oracle,
    fleet: &'a Fleet,
    /// The answer path the host handed down: records the answer, bounded.
    answer: &'a AnswerPath,
    mission_id: &'a str,
    /// Whether the run had parked on a checkpoint by the time the answer landed.
    parked: AtomicBool,
    /// The answer recorded, and whether the run had parked: what an interrupted
    /// review's closing line reports.
    delivered: Mutex<Option<(String, bool)>>,
}

impl Deliver<'_> {
    /// The reason goes to the operator, exactly one line per refusal; the model is
    /// only told the answer was denied.
    fn refuse(&self, ask_id: &str, reason: &str) -> Result<(), AnswerError> {
        self.oracle.trace.emit(
            self.mission_id,
            ask_id,
            &format!("oracle: answer refused for ask {ask_id}: {reason}"),
        );
        Err(AnswerError::Refused)
    }

    fn deliver(&self, ask_id: &str, text: &str) -> Result<(), AnswerError> {
        let asks = self.fleet.asks();
        let row = match asks.get(ask_id) {
            Ok(Some(r)) => r,
            Ok(None) => return self.refuse(ask_id, &format!("ask {ask_id} no longer exists")),
            Err(e) => return Err(AnswerError::Transient(format!("read ask {ask_id}: {e}"))),
        };
        if !row.is_question() {
            return self.refuse(
                ask_id,
                &format!("ask {ask_id} is a permission request, not a question"),
            );
        }
        let parked = || asks.is_parked(ask_id).unwrap_or(false);
        let parked_before = parked();
        // The one answer path, over the fleet's own ask service: a unit waiting
        // inside its park window in this process is woken at once. Past the window,
        // the run's checkpoint is ours, and this host's drive loop resumes it from
        // the durable row.
        match (self.answer)(ask_id, AGENT, text) {
            Ok(_) => {
                let was_parked = parked_before || parked();
                self.parked.store(was_parked, Ordering::Relaxed);
                if let Ok(mut d) = self.delivered.lock() {
                    *d = Some((text.to_string(), was_parked));
                }
                Ok(())
            }
            Err(e) => match e.downcast::<AgentAnswerError>() {
                Ok(AgentAnswerError::Refused(reason)) => self.refuse(ask_id, &reason),
                Ok(AgentAnswerError::Ask(AskError::Store(e))) => {
                    Err(AnswerError::Transient(e.to_string()))
                }
                Ok(AgentAnswerError::Ask(e)) => self.refuse(ask_id, &e.to_string()),
                Err(e) => match e.downcast::<crate::store::StoreError>() {
                    Ok(e) => Err(AnswerError::Transient(e.to_string())),
                    Err(e) => self.refuse(ask_id, &e.to_string()),
                },
            },
        }
    }
}

impl Answerer for Deliver<'_> {
    /// Called mid-chain on the driver's worker and unable to await: the store work
    /// runs in place, with the worker's other tasks handed off first.
    fn answer(&self, ask_id: &str, text: &str) -> Result<(), AnswerError> {
        blocking_in_place(|| self.deliver(ask_id, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_operator_fired_asks_of_held_missions_are_reviewed() {
        assert_eq!(declines("a1", &["", ""], true), None);
        assert!(declines("", &["", ""], true).is_some());
        assert_eq!(
            declines("a1", &["", "sess-9"], true),
            Some("a parented ask: the firing session answers it")
        );
        assert_eq!(
            declines("a1", &["", ""], false),
            Some("a mission this host did not dispatch")
        );
    }

    #[test]
    fn the_input_sets_the_intent_first_and_carries_no_ids() {
        let event = json!({"summary": "Rename it?", "detail": null, "askId": "a1",
                           "missionId": "m1", "agentName": "stub", "intent": "rename"});
        assert_eq!(
            review_input(&event),
            r#"{"intent":"rename","summary":"Rename it?"}"#
        );
    }

    #[test]
    fn an_interrupted_review_closes_abandoned_only_when_no_answer_went_out() {
        let dir = tempfile::tempdir().unwrap();
        let trace = Trace::new(Store::open(&dir.path().join("b.db")).unwrap(), false);
        let close = |delivered: Option<(String, bool)>, unmounted: Option<&str>, ran_out| {
            let delivered = Mutex::new(delivered);
            let unmounted = Mutex::new(unmounted.map(str::to_string));
            drop(Abandoned {
                trace: &trace,
                mission_id: "m1",
                ask_id: "a1",
                started: Instant::now(),
                delivered: &delivered,
                unmounted: &unmounted,
                ran_out,
                armed: true,
            });
        };
        close(None, None, None);
        close(Some(("yes, rename it".into(), false)), None, None);
        close(None, Some("the fire's --timeout 2m ran out"), None);
        close(
            None,
            Some("the fire's --timeout 2m ran out"),
            Some("its budget of 6m ran out".into()),
        );
        let lines: Vec<String> = trace
            .for_mission("m1", 10)
            .unwrap()
            .into_iter()
            .map(|l| l.line)
            .collect();
        assert!(
            lines[0].starts_with("oracle: abandoned the review of ask a1 (")
                && lines[0].ends_with(
                    "): the oracle was unmounted before a verdict — the question stays with a human"
                ),
            "{lines:?}"
        );
        assert!(
            lines[1].starts_with("oracle: answered ask a1 in ")
                && lines[1].ends_with(" as agent \"oracle\": \"yes, rename it\""),
            "{lines:?}"
        );
        assert!(
            lines[2].ends_with(
                "): the fire's --timeout 2m ran out before a verdict — the question stays with a human"
            ),
            "{lines:?}"
        );
        assert!(
            lines[3].ends_with(
                "): its budget of 6m ran out before a verdict — the question stays with a human"
            ),
            "the review's own budget is named first: {lines:?}"
        );
    }

    #[test]
    fn elapsed_rounds_to_the_millisecond() {
        assert_eq!(
            crate::duration::format(round_to_ms(Duration::from_micros(8_921_600))),
            "8.922s"
        );
    }
}
