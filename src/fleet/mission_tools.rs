//! What the four mission tools do for one mission. The MCP server in `tools` carries
//! the calls; this is where they meet the mission and ask services. Arguments may
//! arrive as native JSON or as strings (some agents stringify everything).

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};
use crate::mission::report::{
    downgrade_paragraph, missing_claims, quoted_list, unverified_claims, unverified_paragraph,
};
use crate::mission::{Handover, Missions, PlanEntry, ReportInput, Status, subjects};
use crate::mission_mcp::PARKED_PREFIX;
use crate::mission_mcp::repeats::{self, Repeat};
use crate::mission_mcp::{MISSION_ASK_ATTENTION, MISSION_FINISH, MISSION_PLAN, MISSION_REPORT};

/// The mission a tool call speaks for, and the services it writes through.
#[derive(Clone)]
pub struct MissionToolCalls {
    pub mission_id: String,
    pub missions: Missions,
    pub asks: Asks,
    /// The unit's working directory: relative claimed artifacts are checked against it.
    pub workdir: String,
    pub agent_name: String,
    pub session_id: String,
    /// How long a question waits when nobody answers (`None`: until answered).
    pub ask_ceiling: Option<Duration>,
    /// How long a question holds the unit's turn before the run parks.
    pub park_window: Duration,
    /// What the host hands the calls once it hosts the mission, and what they tell
    /// its drive back.
    pub link: std::sync::Arc<HostLink>,
}

/// Shared between a hosted unit's mission tools and its drive.
#[derive(Default)]
pub struct HostLink {
    /// Set once the unit's budget exists: a verdict is judged on everything the
    /// unit said before it (empty: the verdict is taken as it comes).
    pub verdicts: std::sync::OnceLock<VerdictGate>,
    /// The mission's row as its host holds it: a report's inbox copy needs only
    /// what never changes on it (intent, agent, parent session), so it is not read
    /// again per report.
    pub mission: std::sync::OnceLock<crate::mission::Mission>,
    /// The mission was seen at rest (a verdict these calls filed, or the drive's own
    /// look). Terminal statuses are final, so what only an open mission needs (a
    /// liveness stamp, the looks a turn's end takes) is skipped from then on.
    pub at_rest: std::sync::atomic::AtomicBool,
    /// The unit's last report or gated call, and how many times in a row it made it
    /// (the one counter both are held to: a unit repeating itself).
    pub repeats: crate::mission_mcp::repeats::Repeats,
    /// How the mission's check runs, as the unit runs: set when the unit starts.
    /// A `landed` verdict waits on the check (when the mission has one).
    pub check: std::sync::OnceLock<super::check::CheckSite>,
    /// What the unit may connect to and where its agent was pointed: set when the
    /// unit starts, read when it fails to tell a sandbox refusal apart.
    pub connect: std::sync::OnceLock<crate::envelope::connect_refusal::ConnectSite>,
}

impl HostLink {
    /// Rest the mission stuck on `reason` (a unit repeating itself): the mission is
    /// at rest from here on, and the drive ends the unit.
    pub(super) fn rest_repeating(
        &self,
        missions: &Missions,
        mission_id: &str,
        reason: &str,
    ) -> Result<(), String> {
        missions
            .finish(mission_id, Status::Stuck, reason)
            .map_err(|e| e.to_string())?;
        self.at_rest
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// Orders a unit's verdict and reports after its updates: they travel on the
/// mission socket, the updates on the unit's stdout, and a compute bound crossed by
/// an update the unit sent before them must hold — nothing after the crossing is
/// filed.
pub struct VerdictGate {
    pub(super) stdout: std::sync::Arc<crate::acp_client::stdout_mark::StdoutMark>,
    pub(super) budget: std::sync::Arc<super::budget::Budget>,
}

/// How long a verdict waits for the unit's earlier updates to be read. The reader
/// is never blocked on anything but the pipe, so this is only a guard against a
/// wedged connection: past it the verdict is judged on what was counted.
const VERDICT_CATCH_UP: Duration = Duration::from_secs(10);

impl VerdictGate {
    /// Refuse the verdict or report (`what`) when a compute bound was crossed by
    /// then: the drive loop settles the mission on the crossing (stuck, or the
    /// operator's question).
    async fn judge(&self, mission_id: &str, what: &str) -> Result<(), String> {
        if !self.stdout.caught_up(VERDICT_CATCH_UP).await {
            tracing::warn!(mission = %mission_id, "the unit's stdout was not read up to its verdict within {}; judging it on what was counted", crate::duration::format(VERDICT_CATCH_UP));
        }
        match self.budget.crossed() {
            Some(reason) => Err(format!(
                "missiontools: {what}: refused — {reason} The host settles the mission on the bound; end your turn."
            )),
            None => Ok(()),
        }
    }
}

type ToolResult = Result<String, String>;

/// Served directly when the session id is known up front (the bench does this; the
/// fleet fills it in after `session/new`, behind its own handler).
impl crate::mission_mcp::MissionToolHandler for MissionToolCalls {
    fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> futures::future::BoxFuture<'static, Result<String, String>> {
        let calls = self.clone();
        let tool = tool.to_string();
        Box::pin(async move { MissionToolCalls::call(&calls, &tool, args).await })
    }
}

impl MissionToolCalls {
    /// Dispatch one call by tool name.
    pub async fn call(&self, tool: &str, args: Map<String, Value>) -> ToolResult {
        match tool {
            MISSION_REPORT => {
                if let Some(gate) = self.link.verdicts.get() {
                    gate.judge(&self.mission_id, "report").await?;
                }
                self.store(move |c| c.report(&args)).await
            }
            MISSION_PLAN => self.store(move |c| c.plan(&args)).await,
            MISSION_ASK_ATTENTION => self.ask(&args).await,
            MISSION_FINISH => {
                if let Some(gate) = self.link.verdicts.get() {
                    gate.judge(&self.mission_id, "finish mission").await?;
                }
                let landed = Status::parse(text(&args, "status").trim()) == Some(Status::Landed);
                if landed && let Some(site) = self.link.check.get() {
                    match site.gate(&self.missions, &self.mission_id).await? {
                        super::check::Gate::Pass => {}
                        super::check::Gate::Retry(refused) => return Err(refused),
                        super::check::Gate::Exhausted { reason, told, ran } => {
                            let pause = ran
                                && self.link.verdicts.get().is_some_and(|v| {
                                    v.budget.bounds().on_exhausted
                                        == crate::envelope::format::OnExhausted::PauseAsk
                                });
                            if pause {
                                return Err(self.store(move |c| c.pause_on_check(&reason)).await?);
                            }
                            // Still paused on the operator: nothing rests until they decide.
                            if let Some(waiting) = self.store(|c| c.check_pause_pending()).await {
                                return Err(format!(
                                    "missiontools: finish mission: not landed — no check tries remain while the operator decides whether to grant more (ask_id={waiting}). End your turn now: your next prompt says what they decided."
                                ));
                            }
                            self.store(move |c| c.rest_on_check(&reason)).await?;
                            return Err(told);
                        }
                    }
                }
                self.store(move |c| c.finish(&args)).await
            }
            other => Err(crate::mission_mcp::unknown_tool_error(other)),
        }
    }

    /// Run the store-bound part of a call through the blocking boundary.
    async fn store<T: Send + 'static>(
        &self,
        f: impl FnOnce(&MissionToolCalls) -> T + Send + 'static,
    ) -> T {
        let calls = self.clone();
        crate::store::blocking(move || f(&calls)).await
    }

    fn heartbeat(&self) {
        if let Err(e) = self.missions.heartbeat(&self.mission_id) {
            tracing::warn!(mission = %self.mission_id, "heartbeat failed: {e}");
        }
    }

    fn report(&self, args: &Map<String, Value>) -> ToolResult {
        let mut input = ReportInput {
            kind: text(args, "kind"),
            summary: text(args, "summary"),
            detail: text(args, "detail"),
            refs: string_list(args.get("refs")),
            handover: handover(args.get("handover"))?,
        };
        let key = repeats::report_key(&input.kind, &input.summary, &input.detail);
        match self.link.repeats.count(key) {
            Repeat::Fresh => {}
            Repeat::Refused(n) => {
                return Err(format!(
                    "missiontools: file report: {}",
                    repeats::correction("filed", "reports", n)
                ));
            }
            Repeat::Bound(n) => return Err(self.repeating_itself(&input, n)),
        }
        let mut downgraded = Vec::new();
        if input.kind.trim() == "result" {
            let urls = unverified_claims(&input.refs, input.handover.as_ref());
            if !urls.is_empty() {
                input.detail = [input.detail.trim_end(), &unverified_paragraph(&urls)]
                    .join("\n\n")
                    .trim_start()
                    .to_string();
            }
            downgraded = missing_claims(&input.refs, input.handover.as_ref(), &self.workdir);
            if !downgraded.is_empty() {
                input.kind = "progress".into();
                let warning = downgrade_paragraph(&downgraded);
                input.detail = if input.detail.trim().is_empty() {
                    warning
                } else {
                    format!("{}\n\n{warning}", input.detail.trim_end())
                };
            }
        }
        // The liveness stamp rides in the report's own transaction.
        let report = match self.link.mission.get() {
            Some(m) => self.missions.add_unit_report_on(m, input),
            None => self.missions.add_unit_report(&self.mission_id, input),
        }
        .map_err(|e| format!("missiontools: file report: {e}"))?;
        // No id: no tool takes one, and small models echo it into their next reports.
        let mut out = format!("recorded {} report", report.kind);
        if !downgraded.is_empty() {
            out.push_str(&format!(
                " (downgraded from result: claimed artifacts not found: {})",
                quoted_list(&downgraded)
            ));
        }
        Ok(out)
    }

    /// A unit filing one report over and over rests stuck: "repeating itself" names
    /// the report, so the operator sees the loop rather than a wall of copies.
    fn repeating_itself(&self, input: &ReportInput, repeats: u32) -> String {
        let reason = repeats::reason(
            &format!("filed the same {} report", input.kind.trim()),
            repeats,
            &input.summary,
        );
        match self
            .link
            .rest_repeating(&self.missions, &self.mission_id, &reason)
        {
            Ok(()) => format!(
                "missiontools: file report: not filed — {reason}. The mission is finished stuck; end your turn."
            ),
            Err(e) => format!("missiontools: file report: not filed — {reason} ({e})"),
        }
    }

    fn plan(&self, args: &Map<String, Value>) -> ToolResult {
        let entries = match args.get("entries") {
            None | Some(Value::Null) => {
                return Err(
                    "missiontools: mission_plan requires an 'entries' array (a full snapshot of the plan)"
                        .into(),
                );
            }
            Some(Value::String(s)) => serde_json::from_str::<Vec<Value>>(s).map_err(|e| {
                format!("missiontools: mission_plan 'entries' must be a JSON array: {e}")
            })?,
            Some(Value::Array(a)) => a.clone(),
            Some(other) => {
                return Err(format!(
                    "missiontools: mission_plan 'entries' must be a JSON array: got {other}"
                ));
            }
        };
        let entries: Vec<PlanEntry> = entries
            .iter()
            .map(|e| {
                let field = |k: &str| e.get(k).map(value_text).unwrap_or_default();
                PlanEntry {
                    id: field("id"),
                    content: field("content"),
                    status: field("status"),
                    priority: field("priority"),
                }
            })
            .collect();
        let plan = self
            .missions
            .set_plan(
                &self.mission_id,
                entries,
                &text(args, "explanation"),
                "tool",
            )
            .map_err(|e| format!("missiontools: set plan: {e}"))?;
        self.heartbeat();
        Ok(serde_json::to_string(&plan).unwrap_or_default())
    }

    async fn ask(&self, args: &Map<String, Value>) -> ToolResult {
        let summary = text(args, "summary");
        if summary.trim().is_empty() {
            return Err("missiontools: mission_ask_attention requires a summary".into());
        }
        let detail = text(args, "detail");
        self.store(MissionToolCalls::heartbeat).await;
        let unanswered = match self
            .raise_and_wait(&summary, &detail, &text(args, "ask_id"))
            .await
        {
            Ok(Waited::Answered(answer)) => {
                self.store(MissionToolCalls::heartbeat).await;
                return Ok(answer);
            }
            Ok(Waited::Parked(id)) => {
                self.store(MissionToolCalls::heartbeat).await;
                return Ok(format!(
                    "{PARKED_PREFIX}{id}): the operator has not answered within the park window. The question stays pending and this run is checkpointed under it. End your turn now: the operator's answer will come back to you as your next prompt."
                ));
            }
            Ok(Waited::Closed) => "nobody answered before the ask closed".to_string(),
            Err(e) => e,
        };
        self.store(move |c| {
            // A question closed by a stop needs no blocker: the mission already rests.
            if let Ok(Some(m)) = c.missions.get(&c.mission_id)
                && m.status.is_terminal()
            {
                return Ok(format!(
                    "the mission is at rest as {}; this question was closed without an answer",
                    m.status
                ));
            }
            c.file_unanswered(&summary, &detail, &unanswered)
        })
        .await
    }

    /// Raise the durable question (or take up the pending one `ask_id` names), announce
    /// it, and wait up to the park window; past it, the run parks.
    async fn raise_and_wait(
        &self,
        summary: &str,
        detail: &str,
        ask_id: &str,
    ) -> Result<Waited, String> {
        let (asking, summary, detail) =
            (ask_id.to_string(), summary.to_string(), detail.to_string());
        let ask_id = self
            .store(move |c| match c.reasked(&asking)? {
                Some(ask) => Ok(ask.id),
                None => c.raise_question(&summary, &detail),
            })
            .await?;
        self.wait_or_park(&ask_id).await
    }

    /// Raise the durable question and announce it on the bus; returns its id.
    fn raise_question(&self, summary: &str, detail: &str) -> Result<String, String> {
        let ask = self
            .asks
            .raise(NewAsk {
                tools_name: QUESTION_TOOLS.into(),
                tool_name: QUESTION_TOOL.into(),
                args_summary: summary.trim().to_string(),
                diff: Some(detail.trim().to_string()),
                agent_name: self.agent_name.clone(),
                session_id: self.session_id.clone(),
                mission_id: Some(self.mission_id.clone()),
                wait: self.ask_ceiling,
                checkpoint_cwd: Some(self.workdir.clone()),
                ..Default::default()
            })
            .map_err(|e| e.to_string())?;
        let mission = self.missions.get(&self.mission_id).ok().flatten();
        let parent = mission.as_ref().and_then(|m| m.parent_session_id.clone());
        self.missions.publish(
            subjects::ATTENTION_ASKED,
            json!({
                "missionId": self.mission_id,
                "askId": ask.id,
                "parentSessionId": parent,
                "agentName": self.agent_name,
                "intent": mission.map(|m| m.intent),
                "summary": ask.args_summary,
                "detail": ask.diff,
            }),
        );
        Ok(ask.id)
    }

    /// A re-ask: the unit names a question of its own mission that is still pending.
    fn reasked(&self, ask_id: &str) -> Result<Option<crate::asks::Ask>, String> {
        if ask_id.trim().is_empty() {
            return Ok(None);
        }
        let row = self.asks.get(ask_id.trim()).map_err(|e| e.to_string())?;
        Ok(row.filter(|a| a.is_question() && a.mission_id.as_deref() == Some(&self.mission_id)))
    }

    /// Hold the turn on the question up to the park window. The run has been
    /// checkpointed since the row was written; an answer inside the window is
    /// delivered here only under the checkpoint's claim, so a process that resumes
    /// the run elsewhere and this host can never both deliver it.
    async fn wait_or_park(&self, ask_id: &str) -> Result<Waited, String> {
        let deadline = Instant::now() + self.park_window;
        let row = self
            .asks
            .wait(ask_id, Some(deadline))
            .await
            .map_err(|e| e.to_string())?;
        let ask_id = ask_id.to_string();
        self.store(move |c| {
            if row.is_pending() {
                c.asks.mark_parked(&ask_id).map_err(|e| e.to_string())?;
                return Ok(Waited::Parked(ask_id));
            }
            if !c
                .asks
                .claim_for_delivery(&ask_id)
                .map_err(|e| e.to_string())?
            {
                return Ok(Waited::Parked(ask_id));
            }
            Ok(match row.answer() {
                Some(answer) => Waited::Answered(answer.to_string()),
                None => Waited::Closed,
            })
        })
        .await
    }

    /// Nobody answered: the question becomes a blocker report and the unit carries on.
    fn file_unanswered(&self, summary: &str, detail: &str, why: &str) -> ToolResult {
        let note = format!("(the unit asked for a decision and got no answer: {why})");
        let detail = if detail.trim().is_empty() {
            note
        } else {
            format!("{}\n\n{note}", detail.trim_end())
        };
        self.missions
            .add_blocker(
                &self.mission_id,
                crate::asks::one_line_summary(summary.trim()),
                detail,
            )
            .map_err(|e| format!("missiontools: file report: {e}"))?;
        self.heartbeat();
        Ok("attention requested (recorded as blocker — nobody answered)".into())
    }

    /// The check failed its last try: the failure is the mission's blocker, and it
    /// rests stuck on it.
    fn rest_on_check(&self, reason: &str) -> Result<String, String> {
        let detail = match self.missions.check(&self.mission_id) {
            Ok(Some(c)) => c.last_output.unwrap_or_default(),
            _ => String::new(),
        };
        self.missions
            .add_blocker(&self.mission_id, crate::text::excerpt(reason, 160), detail)
            .map_err(|e| format!("missiontools: finish mission: {e}"))?;
        let mut args = Map::new();
        args.insert(
            "status".into(),
            Value::String(Status::Stuck.as_str().into()),
        );
        args.insert("reason".into(), Value::String(reason.to_string()));
        self.finish(&args)
    }

    /// The pending ask a paused check raised on this mission, if any.
    fn check_pause_pending(&self) -> Option<String> {
        self.asks
            .for_mission(&self.mission_id, 50)
            .ok()?
            .into_iter()
            .find(|a| a.is_pending() && a.tool_name == crate::asks::CHECK_TOOL)
            .map(|a| a.id)
    }

    /// The check failed its last try under `onExhausted: pause_ask`: the mission
    /// stays open, parked on an ask that names the failure (approve: more tries;
    /// deny: it rests stuck on it), checkpointed like a parked question so the
    /// answer resumes the run wherever it is given. Returns what the unit is told.
    fn pause_on_check(&self, reason: &str) -> Result<String, String> {
        let fail = |e: String| format!("missiontools: finish mission: {e}");
        let output = match self.missions.check(&self.mission_id) {
            Ok(Some(c)) => c.last_output.unwrap_or_default(),
            _ => String::new(),
        };
        let output = if output.trim().is_empty() {
            "(no output)".to_string()
        } else {
            output.trim_end().to_string()
        };
        let ask = self
            .asks
            .raise(NewAsk {
                tools_name: QUESTION_TOOLS.into(),
                tool_name: crate::asks::CHECK_TOOL.into(),
                args_summary: format!(
                    "mission {}: {} — grant more tries or let it stop?",
                    self.mission_id,
                    crate::text::excerpt(reason, 200)
                ),
                diff: Some(format!(
                    "{reason}\n\nOutput (tail):\n{output}\n\nThe mission is paused, not finished. Approve to grant it the envelope's maxChecks tries again (the unit fixes the work and finishes again); deny to let it rest stuck on this failure."
                )),
                on_timeout: "deny".into(),
                agent_name: self.agent_name.clone(),
                session_id: self.session_id.clone(),
                mission_id: Some(self.mission_id.clone()),
                wait: self.ask_ceiling,
                checkpoint_cwd: Some(self.workdir.clone()),
                ..Default::default()
            })
            .map_err(|e| fail(e.to_string()))?;
        // The unit ends its turn on this: the run is parked from the start.
        self.asks
            .mark_parked(&ask.id)
            .map_err(|e| fail(e.to_string()))?;
        let mission = self.missions.get(&self.mission_id).ok().flatten();
        self.missions.publish(
            subjects::ATTENTION_ASKED,
            json!({
                "missionId": self.mission_id,
                "askId": ask.id,
                "parentSessionId": mission.as_ref().and_then(|m| m.parent_session_id.clone()),
                "agentName": self.agent_name,
                "intent": mission.map(|m| m.intent),
                "summary": ask.args_summary,
                "detail": ask.diff,
            }),
        );
        Ok(format!(
            "missiontools: finish mission: not landed — {reason}. Output (tail):\n{output}\n\nNo tries remain: the operator is asked whether to grant more (ask_id={}). End your turn now. Your next prompt says what they decided: if they approved, fix the work and call mission_finish with status landed again (the check runs again); if they denied, the mission rests stuck.",
            ask.id
        ))
    }

    fn finish(&self, args: &Map<String, Value>) -> ToolResult {
        let status = text(args, "status");
        let status = status.trim();
        if status.is_empty() {
            return Err(
                "missiontools: mission_finish requires a status (landed|derailed|stuck|abandoned)"
                    .into(),
            );
        }
        let Some(st) = Status::parse(status).filter(|s| s.is_terminal()) else {
            return Err(format!(
                "missiontools: finish mission: cannot finish mission {:?} as {status:?}: a terminal status is required (landed|derailed|stuck|abandoned)",
                self.mission_id
            ));
        };
        // The spend so far rides with the verdict: the turn's end then has nothing
        // left to record.
        let budget = self.link.verdicts.get().map(|g| &g.budget);
        let spend = budget.and_then(|b| b.unrecorded());
        let also = spend.iter().map(|(_, stmt)| stmt.clone()).collect();
        let fail = |e| format!("missiontools: finish mission: {e}");
        let read;
        let known = match self.link.mission.get() {
            Some(held) => held,
            None => {
                read = self.missions.require(&self.mission_id).map_err(fail)?;
                &read
            }
        };
        let done = self
            .missions
            .finish_with(known, st, &text(args, "reason"), also)
            .map_err(fail)?;
        if let (Some(b), Some((spent, _)), true) = (budget, spend, done.changed) {
            b.recorded(spent);
        }
        // No liveness stamp: the mission is at rest now, which a stamp never touches.
        self.link
            .at_rest
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(format!("mission finished as {}", done.mission.status))
    }
}

/// How a question's wait ended.
enum Waited {
    Answered(String),
    /// Past the park window, still pending — or resolved while another process holds
    /// the run's resume: either way this turn must end.
    Parked(String),
    /// Resolved without words: denied, expired, closed by a stop.
    Closed,
}

/// A string argument; non-strings are rendered as JSON text, absent is empty.
fn text(args: &Map<String, Value>, key: &str) -> String {
    args.get(key).map(value_text).unwrap_or_default()
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `refs`: a JSON array, or a string split on commas and newlines.
fn string_list(v: Option<&Value>) -> Vec<String> {
    let items: Vec<String> = match v {
        Some(Value::Array(a)) => a.iter().map(value_text).collect(),
        Some(Value::String(s)) => s.split([',', '\n']).map(str::to_string).collect(),
        _ => vec![],
    };
    items
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn handover(v: Option<&Value>) -> Result<Option<Handover>, String> {
    let obj = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).map_err(|e| {
            format!("missiontools: mission_report 'handover' must be a JSON object: {e}")
        })?,
        Some(other) => other.clone(),
    };
    let shape = |detail: String| {
        format!(
            "missiontools: mission_report 'handover' must be a {{outcome, artifacts, handoverForNext, caveats}} object: {detail}"
        )
    };
    let Value::Object(map) = obj else {
        return Err(shape(format!("got {obj}")));
    };
    let field = |k: &str| map.get(k).map(value_text).unwrap_or_default();
    Ok(Some(Handover {
        outcome: field("outcome"),
        artifacts: string_list(map.get("artifacts")),
        handover_for_next: field("handoverForNext"),
        caveats: field("caveats"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mission::{EnvelopeName, Intent, NewMission};
    use crate::store::Store;

    fn calls() -> (tempfile::TempDir, MissionToolCalls) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("board.db")).unwrap();
        let missions = Missions::new(store.clone());
        let m = missions
            .create(NewMission::new(
                "stub",
                Intent::new("do it").unwrap(),
                EnvelopeName::new("default").unwrap(),
            ))
            .unwrap();
        let wd = dir.path().to_str().unwrap().to_string();
        (
            dir,
            MissionToolCalls {
                mission_id: m.id,
                missions,
                asks: Asks::new(store),
                workdir: wd,
                agent_name: "stub".into(),
                session_id: "s".into(),
                ask_ceiling: Some(Duration::from_secs(5)),
                park_window: Duration::from_secs(5),
                link: Default::default(),
            },
        )
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[tokio::test]
    async fn a_result_naming_a_missing_artifact_is_downgraded() {
        let (dir, c) = calls();
        std::fs::write(dir.path().join("real.md"), "x").unwrap();
        let out = c
            .call(
                "mission_report",
                args(json!({"kind":"result","summary":"done","refs":"real.md, notes/missing.md"})),
            )
            .await
            .unwrap();
        assert_eq!(
            out,
            "recorded progress report (downgraded from result: claimed artifacts not found: \"notes/missing.md\")"
        );
        let r = &c.missions.reports(&c.mission_id, 10).unwrap()[0];
        assert_eq!(r.refs, ["real.md", "notes/missing.md"]);
        assert!(r.downgrade_warning().is_some());
        let ok = c
            .call(
                "mission_report",
                args(json!({"kind":"result","summary":"done","refs":["real.md"]})),
            )
            .await
            .unwrap();
        assert_eq!(ok, "recorded result report");
    }

    #[tokio::test]
    async fn plan_accepts_a_stringified_snapshot_and_echoes_ids() {
        let (_d, c) = calls();
        let out = c
            .call(
                "mission_plan",
                args(json!({"entries": "[{\"content\":\"a\",\"status\":\"in_progress\",\"priority\":\"high\"}]"})),
            )
            .await
            .unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["revision"], 1);
        assert!(!v["entries"][0]["id"].as_str().unwrap().is_empty());
        assert_eq!(
            c.call("mission_plan", Map::new()).await.unwrap_err(),
            "missiontools: mission_plan requires an 'entries' array (a full snapshot of the plan)"
        );
    }

    #[tokio::test]
    async fn an_answered_question_is_the_tool_result() {
        let (_d, c) = calls();
        let asks = c.asks.clone();
        let answerer = tokio::spawn(async move {
            let pending = crate::clock::poll_until(
                Duration::from_secs(30),
                Duration::from_millis(10),
                || asks.pending(1).unwrap().first().cloned(),
            )
            .await
            .expect("the question is asked");
            asks.answer(&pending.id, "yes, rename it", &crate::asks::Surface::Cli)
                .unwrap();
        });
        let out = c
            .call(
                "mission_ask_attention",
                args(json!({"summary":"Rename the env var too?"})),
            )
            .await
            .unwrap();
        answerer.await.unwrap();
        assert_eq!(out, "yes, rename it");
        assert!(c.missions.reports(&c.mission_id, 10).unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_question_closed_without_words_becomes_a_blocker() {
        let (_d, c) = calls();
        let asks = c.asks.clone();
        let mission = c.mission_id.clone();
        let closer = tokio::spawn(async move {
            crate::clock::poll_until(Duration::from_secs(30), Duration::from_millis(10), || {
                let closed = asks.abandon_mission(&mission).unwrap();
                (!closed.is_empty()).then_some(())
            })
            .await
            .expect("the question is asked, then closed");
        });
        let out = c
            .call(
                "mission_ask_attention",
                args(json!({"summary":"Which region?","detail":"eu or us"})),
            )
            .await
            .unwrap();
        closer.await.unwrap();
        assert_eq!(
            out,
            "attention requested (recorded as blocker — nobody answered)"
        );
        let r = &c.missions.reports(&c.mission_id, 10).unwrap()[0];
        assert_eq!(
            (r.kind.as_str(), r.summary.as_str()),
            ("blocker", "Which region?")
        );
        assert!(
            r.detail
                .starts_with("eu or us\n\n(the unit asked for a decision and got no answer: ")
        );
    }

    #[tokio::test]
    async fn finish_is_terminal_and_a_second_verdict_conflicts() {
        let (_d, c) = calls();
        assert_eq!(
            c.call("mission_finish", args(json!({"status":"landed"})))
                .await
                .unwrap(),
            "mission finished as landed"
        );
        let err = c
            .call("mission_finish", args(json!({"status":"derailed"})))
            .await
            .unwrap_err();
        assert!(
            err.starts_with("missiontools: finish mission: conflict: mission"),
            "{err}"
        );
        assert_eq!(
            c.call("mission_finish", Map::new()).await.unwrap_err(),
            "missiontools: mission_finish requires a status (landed|derailed|stuck|abandoned)"
        );
    }
}
