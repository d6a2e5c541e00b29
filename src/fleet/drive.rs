//! The unattended drive loop: the intent turn, at most one nudge, and — if the unit
//! still reached nobody — a runtime blocker. Never a third prompt. A turn that
//! errors derails the mission and reaps the unit. A unit that reached its operator
//! stays resident, holding fleet width, until its mission comes to rest.

use tokio::sync::{mpsc, watch};

use super::prompts::{NUDGE, PREAMBLE, attach, excerpt, resume_turn};
use crate::acp::{CANCEL_GRACE, PromptOutcome, Unit, UnitError, UnitEvent};
use crate::asks::Asks;
use crate::asks::checkpoint::{Checkpoint, HostId};
use crate::envelope::policy::ComputeBounds;
use crate::mission::{Mission, Missions, Status};
use crate::tools::MissionSocket;

/// Journal entries kept per unit (the "last words" come from here).
const JOURNAL_RING: usize = 512;

pub(super) struct Drive {
    pub missions: Missions,
    pub mission: Mission,
    /// The envelope's compute bounds, read once at dispatch.
    pub compute: ComputeBounds,
    pub unit: Unit,
    pub events: mpsc::UnboundedReceiver<UnitEvent>,
    pub stop: watch::Receiver<bool>,
    /// Held for the unit's lifetime; dropping it removes the socket file.
    pub socket: MissionSocket,
    pub asks: Asks,
    pub opening: Opening,
    pub budget: std::sync::Arc<super::budget::Budget>,
}

/// How a unit's first turn begins.
pub(super) enum Opening {
    /// A new mission: the preamble and the intent.
    Fresh,
    /// A fresh session resuming a run parked on `ask_id` (its host died).
    Resumed { blocks: Vec<String>, ask_id: String },
}

/// How often a resident unit's parked questions are checked for an answer.
const RESUME_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// What the unit streamed, bounded.
#[derive(Default)]
pub(super) struct Journal {
    entries: std::collections::VecDeque<UnitEvent>,
}

impl Journal {
    fn record(&mut self, ev: UnitEvent) {
        if self.entries.len() == JOURNAL_RING {
            self.entries.pop_front();
        }
        self.entries.push_back(ev);
    }

    /// Every message chunk the unit sent, concatenated.
    pub fn agent_text(&self) -> String {
        self.entries
            .iter()
            .filter_map(|e| match e {
                UnitEvent::AgentText(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

enum Turn {
    Done(PromptOutcome),
    Failed(UnitError),
    /// The mission came to rest (or the host is leaving) while the turn ran.
    Stopped,
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
        };
        if let Some(ask_id) = resumed_ask {
            // A resumer in the answering process: one turn, then the unit goes with it.
            match self.turn(first, &mut journal).await {
                Turn::Done(_) => {
                    self.heartbeat();
                    let _ = self.asks.drop_checkpoint(&ask_id);
                }
                Turn::Failed(e) => {
                    let _ = self.asks.fail_checkpoint(&ask_id, &e.to_string());
                    return self.fail_turn(e).await;
                }
                Turn::Stopped => self.spend_if_resting(&ask_id),
            }
            return self.reap().await;
        }
        let turns: [Vec<String>; 2] = [first, vec![NUDGE.to_string()]];
        let mut heard = false;
        for (n, blocks) in turns.into_iter().enumerate() {
            if n == 1 && self.compute.max_turns == 1 {
                // The turn budget is spent: no nudge, and the mission stops here.
                let reason = format!(
                    "compute bound exhausted: maxTurns={} — the mission spent its turn budget without reaching its operator.",
                    self.compute.max_turns
                );
                if let Err(e) = self
                    .missions
                    .finish(&self.mission.id, Status::Stuck, &reason)
                {
                    tracing::info!(mission = %self.mission.id, "turn bound lost to another verdict: {e}");
                }
                return self.reap().await;
            }
            match self.turn(blocks, &mut journal).await {
                Turn::Done(outcome) => {
                    tracing::debug!(mission = %self.mission.id, stop = %outcome.stop_reason, "turn ended");
                    self.heartbeat();
                    // A unit parked on a question is waiting for its operator, not mute.
                    if self.reached() || !self.parked().is_empty() {
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
            self.file_silent_blocker(&journal);
        }
        // Resident until the mission rests (the teardown follower flips `stop`),
        // resuming the unit whenever a question it parked on is resolved.
        // A unit parks only during a turn, so the list is read now and after each
        // resume turn; a resident unit with nothing parked polls nothing.
        let mut parked = self.parked();
        let mut tick = tokio::time::interval(RESUME_POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        while !*self.stop.borrow() {
            tokio::select! {
                changed = self.stop.changed() => if changed.is_err() { break },
                Some(ev) = self.events.recv() => journal.record(ev),
                _ = tick.tick(), if !parked.is_empty() => match self.resume_answered(&mut parked, &mut journal).await {
                    Some(Turn::Failed(e)) => return self.fail_turn(e).await,
                    Some(_) => break,
                    None => {}
                },
            }
        }
        self.reap().await;
    }

    /// This host's parked runs of the mission.
    fn parked(&self) -> Vec<Checkpoint> {
        let me = HostId::current();
        self.asks
            .checkpoints_for(&self.mission.id)
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.host == me)
            .collect()
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
            let Ok(ask) = self.asks.require(&cp.ask_id) else {
                continue;
            };
            if ask.is_pending() || !self.asks.claim_checkpoint(&cp.ask_id).unwrap_or(false) {
                continue;
            }
            let answer = ask.answer().map(str::to_string);
            if answer.is_none() {
                self.file_blocker(
                    crate::asks::one_line_summary(&ask.args_summary),
                    format!(
                        "{}(the unit asked for an operator and got no answer: the question was {} before anyone answered it)",
                        ask.diff.as_deref().map(|d| format!("{d}\n\n")).unwrap_or_default(),
                        ask.state.as_str()
                    ),
                );
            }
            let text = resume_turn(&ask.args_summary, answer.as_deref());
            match self.turn(vec![text], journal).await {
                Turn::Done(_) => {
                    self.heartbeat();
                    let _ = self.asks.drop_checkpoint(&cp.ask_id);
                    // The resumed turn may have parked on a new question.
                    *parked = self.parked();
                    return None;
                }
                Turn::Failed(e) => {
                    let _ = self.asks.fail_checkpoint(&cp.ask_id, &e.to_string());
                    return Some(Turn::Failed(e));
                }
                Turn::Stopped => {
                    self.spend_if_resting(&cp.ask_id);
                    return Some(Turn::Stopped);
                }
            }
        }
        None
    }

    async fn turn(&mut self, blocks: Vec<String>, journal: &mut Journal) -> Turn {
        if *self.stop.borrow() {
            return Turn::Stopped;
        }
        self.budget.sent(&blocks);
        let prompt = self.unit.prompt(blocks);
        tokio::pin!(prompt);
        loop {
            tokio::select! {
                result = &mut prompt => {
                    let mut crossed = None;
                    while let Ok(ev) = self.events.try_recv() {
                        crossed = crossed.or_else(|| self.budget.record(&ev));
                        journal.record(ev);
                    }
                    if let Some(reason) = crossed.or_else(|| self.budget.tokens_exhausted()) {
                        self.exhausted(&reason);
                        return Turn::Stopped;
                    }
                    return match result {
                        Ok(outcome) => Turn::Done(outcome),
                        Err(e) => Turn::Failed(e),
                    };
                }
                Some(ev) = self.events.recv() => {
                    // Stdout belongs to the protocol: an agent that writes anything
                    // else there is broken, and its turn cannot be trusted.
                    if let UnitEvent::StdoutGarbage(line) = &ev {
                        let detail = format!(
                            "the agent wrote a line that is not JSON-RPC to stdout: {:?}",
                            excerpt(line, 120)
                        );
                        self.unit.cancel();
                        let _ = tokio::time::timeout(CANCEL_GRACE, &mut prompt).await;
                        return Turn::Failed(UnitError::Protocol { during: "session/prompt", detail });
                    }
                    if let Some(reason) = self.budget.record(&ev) {
                        // A bound crossed mid-turn: the mission stops here, and so does the turn.
                        journal.record(ev);
                        self.exhausted(&reason);
                        self.unit.cancel();
                        let _ = tokio::time::timeout(CANCEL_GRACE, &mut prompt).await;
                        return Turn::Stopped;
                    }
                    journal.record(ev);
                }
                changed = self.stop.changed() => {
                    if changed.is_err() || *self.stop.borrow() {
                        self.unit.cancel();
                        let _ = tokio::time::timeout(CANCEL_GRACE, &mut prompt).await;
                        return Turn::Stopped;
                    }
                }
            }
        }
    }

    /// A resume turn was cut short because the mission came to rest under it (the
    /// unit finished it mid-turn, an operator stopped it): the answer was delivered,
    /// so the checkpoint is spent. A host that is merely leaving keeps it.
    fn spend_if_resting(&self, ask_id: &str) {
        if matches!(self.missions.get(&self.mission.id), Ok(Some(m)) if m.status.is_terminal()) {
            let _ = self.asks.drop_checkpoint(ask_id);
        }
    }

    /// A compute bound was crossed: finish the mission stuck with the reason (unless
    /// another verdict got there first).
    fn exhausted(&self, reason: &str) {
        if let Err(e) = self
            .missions
            .finish(&self.mission.id, Status::Stuck, reason)
        {
            tracing::info!(mission = %self.mission.id, "compute bound lost to another verdict: {e}");
        }
    }

    fn heartbeat(&self) {
        if let Err(e) = self.missions.heartbeat(&self.mission.id) {
            tracing::warn!(mission = %self.mission.id, "heartbeat failed: {e}");
        }
    }

    /// Did the unit reach outside its session: any report, any plan, or a verdict?
    /// A read failure counts as not reached only when nothing proves otherwise.
    fn reached(&self) -> bool {
        let id = &self.mission.id;
        let reports = self.missions.report_count(id).unwrap_or(0);
        match self.missions.get(id) {
            Ok(Some(m)) => reports > 0 || m.status.is_terminal() || m.plan_revision > 0,
            _ => reports > 0,
        }
    }

    fn file_silent_blocker(&self, journal: &Journal) {
        let session = self.unit.session_id();
        let words = journal.agent_text();
        let words = words.trim();
        let (summary, detail) = if words.is_empty() {
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
        self.file_blocker(summary, detail);
    }

    fn file_blocker(&self, summary: String, detail: String) {
        let r = self.missions.add_blocker(&self.mission.id, summary, detail);
        if let Err(e) = r {
            tracing::error!(mission = %self.mission.id, "could not file the runtime blocker: {e}");
        }
    }

    /// A turn errored: reap the unit so it no longer holds width, and — unless the
    /// mission already rests — file the blocker and finish it derailed.
    async fn fail_turn(self, err: UnitError) {
        let id = self.mission.id.clone();
        let session = self.unit.session_id().to_string();
        let missions = self.missions.clone();
        self.reap().await;
        match missions.get(&id) {
            Ok(Some(m)) if m.status.is_terminal() => {
                tracing::info!(mission = %id, "mission already at rest as {}; unit reaped", m.status);
                return;
            }
            _ => {}
        }
        let summary = excerpt(&format!("unit turn failed: {err}"), 240);
        let detail = format!(
            "The unit's turn on session {session} returned an error, and the drive loop is the only thing prompting a dispatched unit:\n\n{err}\n\nThe mission was finished derailed and the unit stopped, so it no longer holds fleet width. Re-dispatch once the cause is addressed."
        );
        if let Err(e) = missions.add_blocker(&id, summary.clone(), detail) {
            tracing::error!(mission = %id, "could not file the turn-failure blocker: {e}");
        }
        if let Err(e) = missions.finish(&id, Status::Derailed, &summary) {
            tracing::info!(mission = %id, "derail lost to another verdict: {e}");
        }
    }

    async fn reap(self) {
        let Drive { unit, socket, .. } = self;
        let status = unit.shutdown().await;
        tracing::debug!(?status, "unit reaped");
        drop(socket);
    }
}
