//! The unattended drive loop: the intent turn, at most one nudge, and — if the unit
//! still reached nobody — a runtime blocker. Never a third prompt of that kind. A
//! turn that errors derails the mission and reaps the unit. A unit that reached its
//! operator stays resident, holding fleet width, until its mission comes to rest.
//!
//! Refusals are their own bounded turns, apart from the nudge: after any turn during
//! which the envelope refused a call, the unit is told exactly what was refused and
//! why (at most [`REFUSAL_TURNS`] times a session), so it can try another way or
//! finish. A unit that then stops with nothing pending would strand its mission
//! open; it is finished stuck instead, its reason naming the refused call.
//!
//! The loop runs on a tokio worker beside other missions' units, so every store
//! call it makes crosses the blocking boundary ([`Drive::store`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::{mpsc, watch};

use super::budget::{Budget, Crossing};
use super::mission_tools::HostLink;
use super::permissions::Refusals;
use super::prompts::{NUDGE, PREAMBLE, attach, extended_turn, refusal_turn, resume_turn};
use crate::acp_client::{CANCEL_GRACE, PromptOutcome, Unit, UnitError, UnitEvent};
use crate::asks::checkpoint::{Checkpoint, HostId};
use crate::asks::{Asks, BUDGET_TOOL, NewAsk, QUESTION_TOOLS};
use crate::envelope::bounds::BUDGET_ANSWER_GRAMMAR;
use crate::envelope::connect_refusal::{RefusedConnect, refused_connect};
use crate::mission::compute::ComputeLedger;
use crate::mission::{Mission, Missions, Status};
use crate::mission_mcp::MissionSocket;
use crate::text::excerpt;

/// Journal entries kept per unit (the "last words" come from here).
const JOURNAL_RING: usize = 512;

/// Refusal turns a unit gets per session. Each tells it of every call refused since
/// the last; past them, a unit that keeps walking into the envelope is stopped.
pub(super) const REFUSAL_TURNS: u32 = 2;

pub(super) struct Drive {
    pub missions: Missions,
    pub mission: Mission,
    pub unit: Unit,
    pub events: mpsc::UnboundedReceiver<UnitEvent>,
    pub stop: watch::Receiver<bool>,
    /// Held for the unit's lifetime; dropping it removes the socket file.
    pub socket: MissionSocket,
    pub asks: Asks,
    pub opening: Opening,
    /// The envelope's compute bounds (as raised by the operator) and the spend.
    pub budget: std::sync::Arc<Budget>,
    /// Crossings the permission answerer saw.
    pub crossings: mpsc::UnboundedReceiver<Crossing>,
    /// Calls the envelope refused, as the permission answerer recorded them.
    pub refusals: Refusals,
    pub ledger: ComputeLedger,
    /// How long a compute-bound question may wait (the approval ceiling).
    pub ask_ceiling: Option<std::time::Duration>,
    /// How long a compute-bound question holds a resumed session in the answering
    /// process (the park window): that process is transient, so past it the run
    /// stays parked for whoever answers, and the process moves on.
    pub park_window: std::time::Duration,
    /// The unit was started by an answering process to resume a parked run.
    pub resumer: bool,
    /// Set (to the runtime blocker's summary) when the loop has prompted its turns
    /// and the mission is still open with nothing pending: nothing will move it.
    pub idle: watch::Sender<Option<String>>,
    /// Shared with the unit's mission tools: whether the mission was seen at rest.
    pub link: Arc<HostLink>,
    /// A revised run: what it must beat to have reached outside its session — the
    /// time it was sent back (reports the unit filed since count) and the plan
    /// revision it started from. The earlier runs' record does not count.
    pub revised: Option<(i64, i64)>,
}

/// The drive's store-bound services, handed to work that runs off the async
/// workers (see [`crate::store::boundary`]).
struct Records {
    missions: Missions,
    asks: Asks,
    ledger: ComputeLedger,
    mission_id: String,
}

/// How a unit's first turn begins.
pub(super) enum Opening {
    /// A new mission: the preamble and the intent.
    Fresh,
    /// A fresh session resuming a run parked on `ask_id` (its host died).
    Resumed { blocks: Vec<String>, ask_id: String },
    /// A rested mission sent back with feedback (`mission revise`, at `since`, in
    /// ms): `blocks` open its new run, which then goes on as a fresh mission's does.
    Revised { blocks: Vec<String>, since: i64 },
}

/// How often a resident unit's parked questions are checked for an answer when no
/// commit wakes it sooner (commits are pushed: `store::changes`).
const RESUME_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// What the unit streamed, bounded.
#[derive(Default)]
pub(super) struct Journal {
    entries: std::collections::VecDeque<UnitEvent>,
    /// Where the latest prompt's events begin in `entries`.
    turn_start: usize,
}

impl Journal {
    fn record(&mut self, ev: UnitEvent) {
        if self.entries.len() == JOURNAL_RING {
            self.entries.pop_front();
            self.turn_start = self.turn_start.saturating_sub(1);
        }
        self.entries.push_back(ev);
    }

    /// A prompt goes out: what follows is its turn's.
    fn begin_turn(&mut self) {
        self.turn_start = self.entries.len();
    }

    /// The message chunks of the latest turn, each message's chunks concatenated:
    /// an earlier turn's words are neither quoted nor run into these.
    pub fn agent_text(&self) -> String {
        messages_text(self.entries.iter().skip(self.turn_start))
    }
}

/// The agent's messages among `events`: chunks joined in order, a blank line between
/// two messages where the agent tells them apart by message id (a chunk whose id
/// differs from the one before starts a new message). Chunks without an id, the way
/// most agents send them, cannot be told apart and run on as one message.
fn messages_text<'a>(events: impl Iterator<Item = &'a UnitEvent>) -> String {
    let mut out = String::new();
    let mut current: Option<&str> = None;
    for event in events {
        let UnitEvent::AgentText { text, message } = event else {
            continue;
        };
        let id = message.as_deref();
        if id.is_some() && current.is_some() && id != current && !out.is_empty() {
            out.truncate(out.trim_end().len());
            out.push_str("\n\n");
        }
        if id.is_some() {
            current = id;
        }
        out.push_str(text);
    }
    out
}

enum Turn {
    Done(PromptOutcome),
    Failed(UnitError),
    /// The mission came to rest (or the host is leaving) while the turn ran.
    Stopped,
}

/// How one prompt ended.
enum Prompted {
    Ended(Turn),
    /// A compute bound was crossed: mid-turn (the turn was cancelled: `ended` is
    /// `None`), or by the turn's own last updates (`ended` holds its result).
    Crossed {
        crossing: Crossing,
        ended: Option<Result<PromptOutcome, UnitError>>,
    },
}

impl Drive {
    pub async fn run(mut self) {
        let mut journal = Journal::default();
        let (first, resumed_ask) = match std::mem::replace(&mut self.opening, Opening::Fresh) {
            Opening::Fresh => (
                vec![PREAMBLE.to_string(), self.mission.intent.clone()],
                None,
            ),
            Opening::Resumed { blocks, ask_id } => (blocks, Some(ask_id)),
            Opening::Revised { blocks, .. } => (blocks, None),
        };
        if let Some(ask_id) = resumed_ask {
            // A resumer in the answering process: one turn, then the unit goes with it.
            match self.turn(first, &mut journal).await {
                Turn::Done(_) => {
                    self.heartbeat().await;
                    self.drop_checkpoint(&ask_id).await;
                    match self.answer_refusals(&mut journal).await {
                        Some(Turn::Failed(e)) => return self.fail_turn(e).await,
                        Some(_) => return self.reap().await,
                        None => self.note_if_idle().await,
                    }
                }
                Turn::Failed(e) => {
                    // The failed turn derails the mission: nothing is left to resume.
                    self.drop_checkpoint(&ask_id).await;
                    return self.fail_turn(e).await;
                }
                Turn::Stopped => self.spend_if_resting(&ask_id).await,
            }
            return self.reap().await;
        }
        let turns: [Vec<String>; 2] = [first, vec![NUDGE.to_string()]];
        let mut heard = false;
        for (n, blocks) in turns.into_iter().enumerate() {
            let max_turns = self.budget.bounds().max_turns;
            if n == 1 && max_turns == 1 {
                // The turn budget is spent: no nudge, unless the operator extends it.
                if !self
                    .exhausted(&Crossing::turns(max_turns), &mut journal)
                    .await
                {
                    return self.reap().await;
                }
            }
            match self.turn(blocks, &mut journal).await {
                Turn::Done(outcome) => {
                    tracing::debug!(mission = %self.mission.id, stop = %outcome.stop_reason, "turn ended");
                    self.heartbeat().await;
                    match self.answer_refusals(&mut journal).await {
                        Some(Turn::Failed(e)) => return self.fail_turn(e).await,
                        Some(_) => return self.reap().await,
                        None => {}
                    }
                    // A unit parked on a question is waiting for its operator, not mute.
                    if self.reached().await || !self.parked().await.is_empty() {
                        heard = true;
                        break;
                    }
                }
                Turn::Failed(e) => return self.fail_turn(e).await,
                Turn::Stopped => return self.reap().await,
            }
            if *self.stop.borrow() {
                return self.reap().await;
            }
        }
        if !heard {
            self.file_silent_blocker(&journal).await;
        } else {
            self.note_if_idle().await;
        }
        // Known at rest already: nothing to stay resident for.
        if self.link.at_rest.load(Ordering::Relaxed) {
            return self.reap().await;
        }
        // Resident until the mission rests (the teardown follower flips `stop`),
        // resuming the unit whenever a question it parked on is resolved.
        // A unit parks only during a turn, so the list is read now and after each
        // resume turn; a resident unit with nothing parked polls nothing.
        let mut changes = self.missions.store().changes().subscribe();
        let mut parked = self.parked().await;
        // The first look is at once: an answer may have come before the subscription.
        let mut looked = false;
        while !*self.stop.borrow() {
            let look_now = !looked;
            tokio::select! {
                changed = self.stop.changed() => if changed.is_err() { break },
                Some(ev) = self.events.recv() => journal.record(ev),
                _ = async { if !look_now { changes.next(RESUME_POLL).await } }, if !parked.is_empty() => {
                    looked = true;
                    let resumed = self.resume_answered(&mut parked, &mut journal).await;
                    match resumed {
                        Some(Turn::Failed(e)) => return self.fail_turn(e).await,
                        Some(_) => break,
                        None => {}
                    }
                }
            }
        }
        self.reap().await;
    }

    /// Run store-bound work `f` through the blocking boundary, off the async worker
    /// that also carries other missions' traffic.
    async fn store<T: Send + 'static>(&self, f: impl FnOnce(&Records) -> T + Send + 'static) -> T {
        let records = Records {
            missions: self.missions.clone(),
            asks: self.asks.clone(),
            ledger: self.ledger.clone(),
            mission_id: self.mission.id.clone(),
        };
        crate::store::blocking(move || f(&records)).await
    }

    /// This host's parked runs of the mission (the turn ended under the ask; a
    /// question still inside its park window is answered on its own turn).
    async fn parked(&self) -> Vec<Checkpoint> {
        let me = HostId::current();
        self.store(move |r| {
            r.asks
                .checkpoints_for(&r.mission_id)
                .unwrap_or_default()
                .into_iter()
                .filter(|c| c.host == me && c.parked_at.is_some())
                .collect()
        })
        .await
    }

    async fn drop_checkpoint(&self, ask_id: &str) {
        let ask_id = ask_id.to_string();
        let _ = self.store(move |r| r.asks.drop_checkpoint(&ask_id)).await;
    }

    /// If a question the unit parked on has been resolved, claim the resume and send
    /// the unit its answer as a new turn. Returns that turn when it ended the drive
    /// (it failed, or the mission came to rest under it).
    async fn resume_answered(
        &mut self,
        parked: &mut Vec<Checkpoint>,
        journal: &mut Journal,
    ) -> Option<Turn> {
        for cp in parked.clone() {
            let ask_id = cp.ask_id.clone();
            let claimed = self
                .store(move |r| {
                    // Past its deadline, the question takes its on-timeout verdict
                    // here: nobody else need be reading the approvals.
                    let ask = r.asks.require(&ask_id).ok()?;
                    let ask = r.asks.settle_if_overdue(ask).ok()?;
                    let claim =
                        !ask.is_pending() && r.asks.claim_checkpoint(&ask_id).unwrap_or(false);
                    claim.then_some(ask)
                })
                .await;
            let Some(ask) = claimed else {
                continue;
            };
            // A check pause is settled by its verdict, not by the unit: granted more
            // tries, the unit is told to fix the work; refused (denied, or expired
            // unanswered), the mission rests stuck on the failure and the unit is
            // not resumed to carry on.
            if ask.tool_name == crate::asks::CHECK_TOOL && ask.approved() != Some(true) {
                let refused = ask.clone();
                let rested = self
                    .store(move |r| super::check::rest_on_refused_pause(&r.missions, &refused))
                    .await;
                if let Err(e) = rested {
                    tracing::warn!(mission = %self.mission.id, "could not rest the mission on its refused check pause: {e}");
                }
                self.drop_checkpoint(&cp.ask_id).await;
                return Some(Turn::Stopped);
            }
            // A granted check pause is a verdict, not a question left unanswered.
            if ask.answer().is_none() && ask.tool_name != crate::asks::CHECK_TOOL {
                self.file_blocker(
                    crate::asks::one_line_summary(&ask.args_summary),
                    format!(
                        "{}(the unit asked for an operator and got no answer: the question was {} before anyone answered it)",
                        ask.diff.as_deref().map(|d| format!("{d}\n\n")).unwrap_or_default(),
                        ask.state.as_str()
                    ),
                )
                .await;
            }
            let text = resume_turn(&ask);
            match self.turn(vec![text], journal).await {
                Turn::Done(_) => {
                    self.heartbeat().await;
                    self.drop_checkpoint(&cp.ask_id).await;
                    if let Some(ended) = self.answer_refusals(journal).await {
                        return Some(ended);
                    }
                    // The resumed turn may have parked on a new question.
                    *parked = self.parked().await;
                    if parked.is_empty() {
                        self.note_if_idle().await;
                    }
                    return None;
                }
                Turn::Failed(e) => {
                    self.drop_checkpoint(&cp.ask_id).await;
                    return Some(Turn::Failed(e));
                }
                Turn::Stopped => {
                    self.spend_if_resting(&cp.ask_id).await;
                    return Some(Turn::Stopped);
                }
            }
        }
        None
    }

    /// After a turn that ended: when the envelope refused calls during it, tell the
    /// unit (a turn of its own), up to [`REFUSAL_TURNS`] a session. A unit that was
    /// told and then stops with nothing pending is finished stuck, its reason
    /// naming the refused call. Returns the turn that ended the drive, if one did.
    async fn answer_refusals(&mut self, journal: &mut Journal) -> Option<Turn> {
        let mut refused = false;
        while self.refusals.pending() {
            refused = true;
            if self.resting().await {
                self.refusals.drop_untold();
                return None;
            }
            if self.refusals.turns >= REFUSAL_TURNS {
                break;
            }
            self.refusals.turns += 1;
            let text = refusal_turn(&self.refusals.tell());
            match self.turn(vec![text], journal).await {
                Turn::Done(outcome) => {
                    tracing::debug!(mission = %self.mission.id, stop = %outcome.stop_reason, "refusal turn ended");
                    self.heartbeat().await;
                }
                ended => return Some(ended),
            }
        }
        if refused && self.stranded().await {
            self.finish_refused().await;
        }
        None
    }

    /// Open, with no question or gated call pending and no run parked: nothing the
    /// unit started will move the mission. (A parked run whose answer came before
    /// this look is about to resume: it is not stranded, though nothing is pending.)
    async fn stranded(&self) -> bool {
        // A mission at rest (the common end of a turn) settles it in one read.
        if self.resting().await {
            return false;
        }
        let pending = self
            .store(|r| {
                r.asks
                    .for_mission(&r.mission_id, 200)
                    .map(|asks| asks.iter().any(|a| a.is_pending()))
                    .unwrap_or(true)
            })
            .await;
        !pending && self.parked().await.is_empty() && !self.resting().await
    }

    /// The unit stopped after a refusal: finish the mission stuck on it.
    async fn finish_refused(&self) {
        let Some(refusal) = self.refusals.last.as_ref() else {
            return;
        };
        let reason = format!(
            "the envelope refused {} and the unit ended its turn without another way forward",
            refusal.line()
        );
        self.finish_stuck(&reason).await;
    }

    /// One host-driven turn: the prompt, and — when it crosses a compute bound
    /// that the operator then extends — the prompt that lets the unit carry on.
    async fn turn(&mut self, blocks: Vec<String>, journal: &mut Journal) -> Turn {
        let mut blocks = blocks;
        loop {
            let (crossing, ended) = match self.prompt(blocks, journal).await {
                Prompted::Ended(turn) => return turn,
                Prompted::Crossed { crossing, ended } => (crossing, ended),
            };
            if !self.exhausted(&crossing, journal).await {
                return Turn::Stopped;
            }
            match ended {
                Some(Ok(outcome)) => return Turn::Done(outcome),
                Some(Err(e)) => return Turn::Failed(e),
                None => {
                    let limit = crossing.field.limit(&self.budget.bounds());
                    let field = crossing.field;
                    blocks = vec![extended_turn(
                        field.key(),
                        &field.amount(crossing.limit),
                        &field.amount(limit),
                    )];
                }
            }
        }
    }

    async fn prompt(&mut self, blocks: Vec<String>, journal: &mut Journal) -> Prompted {
        if *self.stop.borrow() {
            return Prompted::Ended(Turn::Stopped);
        }
        self.budget.sent(&blocks);
        journal.begin_turn();
        let prompt = self.unit.prompt(blocks);
        tokio::pin!(prompt);
        let crossing = loop {
            tokio::select! {
                result = &mut prompt => {
                    let mut crossed = self.crossings.try_recv().ok();
                    let mut garbage = None;
                    while let Ok(ev) = self.events.try_recv() {
                        if let UnitEvent::StdoutGarbage(line) = &ev {
                            garbage.get_or_insert_with(|| stdout_garbage(line));
                        }
                        if crossed.is_none() {
                            crossed = self.account(&ev).await;
                        }
                        journal.record(ev);
                    }
                    // The meter's tokens are made durable once a turn, not per chunk.
                    self.budget.record_spend().await;
                    // A turn that ended right behind its garbage line failed all the same.
                    if let Some(err) = garbage {
                        self.record_derail(&err).await;
                        return Prompted::Ended(Turn::Failed(err));
                    }
                    return match crossed.or_else(|| self.budget.bound_exhausted()) {
                        Some(crossing) => Prompted::Crossed { crossing, ended: Some(result) },
                        None => Prompted::Ended(match result {
                            Ok(outcome) => Turn::Done(outcome),
                            Err(e) => Turn::Failed(e),
                        }),
                    };
                }
                Some(ev) = self.events.recv() => {
                    // Stdout belongs to the protocol: an agent that writes anything
                    // else there is broken, and its turn cannot be trusted.
                    if let UnitEvent::StdoutGarbage(line) = &ev {
                        let err = stdout_garbage(line);
                        // The derail is recorded before the cancel grace: a verdict the
                        // broken unit sends while it winds down must not outrun it.
                        self.record_derail(&err).await;
                        self.unit.cancel();
                        let _ = tokio::time::timeout(CANCEL_GRACE, &mut prompt).await;
                        return Prompted::Ended(Turn::Failed(err));
                    }
                    let crossed = self.account(&ev).await;
                    journal.record(ev);
                    if let Some(crossing) = crossed {
                        break crossing;
                    }
                }
                Some(crossing) = self.crossings.recv() => break crossing,
                changed = self.stop.changed() => {
                    if changed.is_err() || *self.stop.borrow() {
                        self.unit.cancel();
                        let _ = tokio::time::timeout(CANCEL_GRACE, &mut prompt).await;
                        // The mission rested (its own verdict, usually): what the turn
                        // sent as it wound down — its end-of-turn usage above all, which
                        // comes with the prompt's answer, after the verdict — still
                        // counts towards the spend and cost; no crossing matters now.
                        while let Ok(ev) = self.events.try_recv() {
                            let _ = self.account(&ev).await;
                            journal.record(ev);
                        }
                        self.budget.record_spend().await;
                        return Prompted::Ended(Turn::Stopped);
                    }
                }
            }
        };
        // A bound crossed mid-turn: the turn stops here, whatever follows. Under
        // finish_stuck the verdict lands first, so nothing the unit does while
        // its turn winds down can outrun it.
        if !crossing.pauses(&self.budget.bounds()) {
            self.finish_stuck(&crossing.reason).await;
        }
        self.unit.cancel();
        let _ = tokio::time::timeout(CANCEL_GRACE, &mut prompt).await;
        Prompted::Crossed {
            crossing,
            ended: None,
        }
    }

    /// An update off the event channel. The budget counted what the unit sent as
    /// its line was read (its crossings arrive on `crossings`); here the spend is
    /// made durable, and the turn's end-of-turn usage, which the host itself
    /// reports, is counted.
    async fn account(&self, ev: &UnitEvent) -> Option<Crossing> {
        match ev {
            UnitEvent::TurnUsage(_) => self.budget.record(ev).await,
            _ => {
                self.budget.settle(ev).await;
                None
            }
        }
    }

    /// A resume turn was cut short because the mission came to rest under it (the
    /// unit finished it mid-turn, an operator stopped it): the answer was delivered,
    /// so the checkpoint is spent. A host that is merely leaving keeps it.
    async fn spend_if_resting(&self, ask_id: &str) {
        if self.resting().await {
            self.drop_checkpoint(ask_id).await;
        }
    }

    /// A compute bound was crossed. `finish_stuck`: the mission finishes stuck with
    /// the reason. `pause_ask`: the operator is asked to extend the bound or stop.
    /// Returns whether the mission may go on (the bound was extended).
    async fn exhausted(&mut self, crossing: &Crossing, journal: &mut Journal) -> bool {
        if crossing.pauses(&self.budget.bounds()) && !self.resting().await {
            match self.pause(crossing, journal).await {
                Ok(extended) => return extended,
                Err(e) => {
                    tracing::error!(mission = %self.mission.id, "could not ask to extend the compute bound; finishing stuck: {e}")
                }
            }
        }
        if !self.resting().await {
            self.finish_stuck(&crossing.reason).await;
        }
        false
    }

    async fn finish_stuck(&self, reason: &str) {
        let reason = reason.to_string();
        self.store(move |r| {
            if let Err(e) = r.missions.finish(&r.mission_id, Status::Stuck, &reason) {
                tracing::info!(mission = %r.mission_id, "compute bound lost to another verdict: {e}");
            }
        })
        .await
    }

    /// Is the mission already at rest (nobody left to ask)?
    async fn resting(&self) -> bool {
        if self.link.at_rest.load(Ordering::Relaxed) {
            return true;
        }
        let resting = self
            .store(
                |r| matches!(r.missions.get(&r.mission_id), Ok(Some(m)) if m.status.is_terminal()),
            )
            .await;
        self.link.at_rest.fetch_or(resting, Ordering::Relaxed);
        resting
    }

    /// File the durable compute-bound question, park the run under it (so another
    /// process can settle it if this host dies), and wait for the operator. The
    /// mission stays open meanwhile; the unit's updates are still counted.
    /// `Ok(true)`: extended, and the budget holds the raised limit.
    async fn pause(&mut self, crossing: &Crossing, journal: &mut Journal) -> anyhow::Result<bool> {
        let m = &self.mission;
        let bound = format!(
            "{}={}",
            crossing.field.key(),
            crossing.field.amount(crossing.limit)
        );
        let session_id = self.unit.session_id().to_string();
        // The pause is on the record before its question exists, and the question
        // is checkpointed with its row: whenever this host dies, another process
        // finds enough to settle the mission.
        let ask_id = uuid::Uuid::new_v4().to_string();
        let question = NewAsk {
            id: ask_id.clone(),
            tools_name: QUESTION_TOOLS.into(),
            tool_name: BUDGET_TOOL.into(),
            args_summary: format!(
                "mission {} hit its compute bound {bound} — extend it or let it stop?",
                m.id
            ),
            diff: Some(format!(
                "{}\n\nThe unit's turn was cancelled and the mission is paused, not finished. To go on or not, {BUDGET_ANSWER_GRAMMAR}.",
                crossing.reason
            )),
            envelope_name: m.envelope_name.clone(),
            instance_id: m.instance_id.clone().unwrap_or_default(),
            session_id,
            agent_name: m.agent_name.clone(),
            mission_id: Some(m.id.clone()),
            wait: self.ask_ceiling,
            checkpoint_cwd: Some(m.cwd.clone()),
            ..Default::default()
        };
        let paused = crossing.clone();
        let ask = self
            .store(move |r| -> anyhow::Result<_> {
                r.ledger
                    .pause(&r.mission_id, &ask_id, paused.field, &paused.reason)?;
                let ask = r.asks.raise(question)?;
                // The turn is already over: the run is parked from the start.
                r.asks.mark_parked(&ask.id)?;
                Ok(ask)
            })
            .await?;
        tracing::info!(mission = %self.mission.id, ask = %ask.id, "paused on compute bound {bound}");
        // A resumer in an answering process holds the question only as long as a
        // unit's question would hold its turn.
        let resumer_gives_up = self
            .resumer
            .then(|| tokio::time::Instant::now() + self.park_window);
        let answered = loop {
            tokio::select! {
                _ = tokio::time::sleep_until(resumer_gives_up.unwrap_or_else(tokio::time::Instant::now)), if resumer_gives_up.is_some() => {
                    tracing::info!(mission = %m.id, ask = %ask.id, "parked on compute bound {bound}; the answering process moves on");
                    return Ok(false);
                }
                changed = self.stop.changed() => {
                    // Resting, or this host is leaving: the checkpoint stays for
                    // whichever process records the answer.
                    if changed.is_err() || *self.stop.borrow() {
                        return Ok(false);
                    }
                }
                Some(ev) = self.events.recv() => {
                    self.account(&ev).await;
                    journal.record(ev);
                }
                row = self.asks.wait(&ask.id, Some(std::time::Instant::now() + RESUME_POLL)) => {
                    let row = row?;
                    if !row.is_pending() {
                        break row;
                    }
                }
            }
        };
        let settled = crossing.clone();
        let raised = self
            .store(move |r| -> anyhow::Result<_> {
                if !r.asks.claim_checkpoint(&answered.id)? {
                    // Another process holds the resume; it settles the mission.
                    return Ok(None);
                }
                let raised = super::budget::settle_pause(
                    &r.ledger,
                    &r.missions,
                    &answered,
                    settled.field,
                    settled.limit,
                    &settled.reason,
                )?;
                r.asks.drop_checkpoint(&answered.id)?;
                Ok(raised)
            })
            .await?;
        // None: another process settles it, "stop", or the question closed
        // unanswered; the mission is stuck.
        let Some(limit) = raised else {
            return Ok(false);
        };
        tracing::info!(mission = %self.mission.id, "operator raised {} to {limit}", crossing.field.key());
        self.budget.extend(crossing.field, limit);
        self.heartbeat().await;
        Ok(true)
    }

    async fn heartbeat(&self) {
        // At rest: a stamp would touch nothing.
        if self.link.at_rest.load(Ordering::Relaxed) {
            return;
        }
        let stamped = self
            .store(|r| {
                r.missions.heartbeat(&r.mission_id).inspect_err(|e| {
                    tracing::warn!(mission = %r.mission_id, "heartbeat failed: {e}");
                })
            })
            .await;
        // Nothing open to stamp: the mission rests (a failed stamp says nothing).
        if let Ok(false) = stamped {
            self.link.at_rest.store(true, Ordering::Relaxed);
        }
    }

    /// Did the unit reach outside its session: any report, any plan, or a verdict?
    /// A read failure counts as not reached only when nothing proves otherwise.
    async fn reached(&self) -> bool {
        // A verdict is reaching out.
        if self.link.at_rest.load(Ordering::Relaxed) {
            return true;
        }
        let revised = self.revised;
        let plan_from = revised.map_or(0, |(_, p)| p);
        self.store(move |r| {
            // The row first: a verdict or a plan settles it without counting reports.
            // A revised run counts only what came after its revise.
            let reports = || {
                match revised {
                    Some((since, _)) => r.missions.report_count_since(&r.mission_id, since),
                    None => r.missions.report_count(&r.mission_id),
                }
                .unwrap_or(0)
                    > 0
            };
            match r.missions.get(&r.mission_id) {
                Ok(Some(m)) => m.status.is_terminal() || m.plan_revision > plan_from || reports(),
                _ => reports(),
            }
        })
        .await
    }

    /// The unit's failure, as `said` and its stderr tell it, when it is the sandbox
    /// refusing a connection: the blocker must say so, not the agent's own words.
    fn refused_connect(&self, said: &str) -> Option<RefusedConnect> {
        let site = self.link.connect.get()?;
        let said = format!("{said}\n{}", self.unit.stderr_tail());
        refused_connect(site, &self.mission.envelope_name, &said)
    }

    async fn file_silent_blocker(&self, journal: &Journal) {
        let session = self.unit.session_id();
        let words = journal.agent_text();
        let words = words.trim();
        let (summary, detail) = if let Some(refused) = self.refused_connect(words) {
            (
                excerpt(&refused.summary, 240),
                format!(
                    "{}\n\nThe unit's last words:\n\n{words}\n\n{}",
                    refused.detail,
                    attach(session)
                ),
            )
        } else if words.is_empty() {
            (
                format!("unit ended two turns without reporting; attach to session {session}"),
                attach(session),
            )
        } else {
            (
                excerpt(
                    &format!("unit ended two turns without reporting — last said: {words}"),
                    240,
                ),
                format!("The unit's last words:\n\n{words}\n\n{}", attach(session)),
            )
        };
        self.file_blocker(summary.clone(), detail).await;
        let _ = self.idle.send(Some(summary));
    }

    /// The unit reached its operator, but its turn ended with no verdict and nothing
    /// pending (an agent that ran out of steps ends this way), and the loop prompts a
    /// unit that reached someone no further: say so, durably, and mark the drive idle
    /// so a waiting `mission fire` returns instead of idling to its timeout.
    async fn note_if_idle(&self) {
        if !self.stranded().await {
            return;
        }
        let id = &self.mission.id;
        let session = self.unit.session_id();
        let summary = format!(
            "unit ended its turn with no verdict and nothing pending; attach to session {session}"
        );
        let detail = format!(
            "The unit's turn ended without mission_finish and with no question or gated tool call pending, and the drive loop prompts a unit that has reached its operator no further — an agent that ran out of steps ends this way. The mission stays open: read its reports, then fire it again or stop it ('missionboard mission stop {id}'). Attach to session {session} to read its transcript."
        );
        self.file_blocker(summary.clone(), detail).await;
        let _ = self.idle.send(Some(summary));
    }

    async fn file_blocker(&self, summary: String, detail: String) {
        self.store(move |r| {
            if let Err(e) = r.missions.add_blocker(&r.mission_id, summary, detail) {
                tracing::error!(mission = %r.mission_id, "could not file the runtime blocker: {e}");
            }
        })
        .await
    }

    /// A turn errored: reap the unit so it no longer holds width, and — unless the
    /// mission already rests — file the blocker and finish it derailed.
    async fn fail_turn(self, err: UnitError) {
        let session = self.unit.session_id().to_string();
        let missions = self.missions.clone();
        let id = self.mission.id.clone();
        let refused = self.refused_connect(&err.to_string());
        self.reap().await;
        crate::store::blocking(move || derail(&missions, &id, &session, &err, refused)).await
    }

    /// File the turn-failure blocker and finish the mission derailed, unless it
    /// already rests.
    async fn record_derail(&self, err: &UnitError) {
        let (session, err) = (self.unit.session_id().to_string(), err.clone());
        let refused = self.refused_connect(&err.to_string());
        self.store(move |r| derail(&r.missions, &r.mission_id, &session, &err, refused))
            .await
    }

    async fn reap(self) {
        let Drive { unit, socket, .. } = self;
        let status = unit.shutdown().await;
        tracing::debug!(?status, "unit reaped");
        drop(socket);
    }
}

/// The turn failure a non-JSON-RPC line on the unit's stdout is.
fn stdout_garbage(line: &str) -> UnitError {
    UnitError::Protocol {
        during: "session/prompt",
        detail: format!(
            "the agent wrote a line that is not JSON-RPC to stdout: {:?}",
            excerpt(line, 120)
        ),
    }
}

/// A turn errored: unless the mission already rests, file the blocker and finish it
/// derailed (a second call for the same failure finds it resting and does nothing).
/// A failure that was the sandbox refusing a connection is named so first.
fn derail(
    missions: &Missions,
    id: &str,
    session: &str,
    err: &UnitError,
    refused: Option<RefusedConnect>,
) {
    match missions.get(id) {
        Ok(Some(m)) if m.status.is_terminal() => {
            tracing::info!(mission = %id, "mission already at rest as {}; not derailing it", m.status);
            return;
        }
        _ => {}
    }
    let summary = match &refused {
        Some(r) => excerpt(&r.summary, 240),
        None => excerpt(&format!("unit turn failed: {err}"), 240),
    };
    let mut detail = format!(
        "The unit's turn on session {session} returned an error, and the drive loop is the only thing prompting a dispatched unit:\n\n{err}\n\nThe mission was finished derailed and the unit stopped, so it no longer holds fleet width. Re-dispatch once the cause is addressed."
    );
    if let Some(r) = refused {
        detail = format!("{}\n\n{detail}", r.detail);
    }
    if let Err(e) = missions.add_blocker(id, summary.clone(), detail) {
        tracing::error!(mission = %id, "could not file the turn-failure blocker: {e}");
    }
    if let Err(e) = missions.finish(id, Status::Derailed, &summary) {
        tracing::info!(mission = %id, "derail lost to another verdict: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(text: &str, message: Option<&str>) -> UnitEvent {
        UnitEvent::AgentText {
            text: text.into(),
            message: message.map(str::to_string),
        }
    }

    #[test]
    fn two_messages_of_one_turn_are_told_apart_by_their_ids() {
        let events = [
            chunk("Looking at ", Some("m1")),
            chunk("the logs.", Some("m1")),
            UnitEvent::Thought("hmm".into()),
            chunk("Nothing ", Some("m2")),
            chunk("found.", Some("m2")),
        ];
        assert_eq!(
            messages_text(events.iter()),
            "Looking at the logs.\n\nNothing found."
        );
    }

    #[test]
    fn chunks_without_ids_run_on_as_before() {
        let events = [chunk("one ", None), chunk("two", None)];
        assert_eq!(messages_text(events.iter()), "one two");
        // An id appearing after unnamed chunks starts no new message by itself.
        let events = [chunk("a", None), chunk("b", Some("m1")), chunk("c", None)];
        assert_eq!(messages_text(events.iter()), "abc");
    }
}
