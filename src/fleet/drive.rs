//! The unattended drive loop: the intent turn, at most one nudge, and — if the unit
//! still reached nobody — a runtime blocker. Never a third prompt. A turn that
//! errors derails the mission and reaps the unit. A unit that reached its operator
//! stays resident, holding fleet width, until its mission comes to rest.

use tokio::sync::{mpsc, watch};

use super::prompts::{NUDGE, PREAMBLE, attach, excerpt};
use crate::acp::{CANCEL_GRACE, PromptOutcome, Unit, UnitError, UnitEvent};
use crate::envelope::policy::ComputeBounds;
use crate::mission::{Mission, Missions, ReportInput, Status};
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
}

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
        let intent = self.mission.intent.clone();
        let turns: [Vec<String>; 2] = [vec![PREAMBLE.to_string(), intent], vec![NUDGE.to_string()]];
        let mut reached = false;
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
                    if self.reached() {
                        reached = true;
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
        if !reached {
            self.file_silent_blocker(&journal);
        }
        // Resident until the mission rests (the teardown follower flips `stop`).
        while !*self.stop.borrow() {
            tokio::select! {
                changed = self.stop.changed() => if changed.is_err() { break },
                Some(ev) = self.events.recv() => journal.record(ev),
            }
        }
        self.reap().await;
    }

    async fn turn(&mut self, blocks: Vec<String>, journal: &mut Journal) -> Turn {
        if *self.stop.borrow() {
            return Turn::Stopped;
        }
        let prompt = self.unit.prompt(blocks);
        tokio::pin!(prompt);
        loop {
            tokio::select! {
                result = &mut prompt => {
                    while let Ok(ev) = self.events.try_recv() {
                        journal.record(ev);
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
        let r = self.missions.add_report(
            &self.mission.id,
            ReportInput {
                kind: "blocker".into(),
                summary,
                detail,
                ..Default::default()
            },
        );
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
        if let Err(e) = missions.add_report(
            &id,
            ReportInput {
                kind: "blocker".into(),
                summary: summary.clone(),
                detail,
                ..Default::default()
            },
        ) {
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
