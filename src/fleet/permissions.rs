//! The unattended permission answerer: every `session/request_permission` a unit
//! sends is read by the one normaliser ([`super::normalise`]) and decided by its
//! mission's envelope. Our mission tools are allowed at once; `allow` and `deny`
//! are answered at once; `approve` becomes a durable ask that an operator answers
//! (from any process), and the unit's tool call waits for it.
//!
//! A refused call (a deny rule, an operator's deny, an ask that expired) is a
//! blocker report on the mission and goes to the drive loop, which tells the unit
//! what was refused and why on its next turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::acp_client::{PermissionAsk, PermissionReply};
use crate::asks::{Ask, AskState, Asks, NewAsk, one_line_summary};
use crate::envelope::always::always_scope;
use crate::envelope::eval::{ToolCall, Verdict, evaluate};
use crate::envelope::format::Action;
use crate::envelope::search::Loaded;
use crate::mission::Missions;
use crate::mission_mcp::repeats::{self, Repeat};
use crate::sync::LockUnpoisoned;

use super::budget::Budget;
use super::normalise::{Shape, mission_tool, tool_call};

/// A call the envelope refused, as the unit and the record are told of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Refusal {
    /// `tools.tool`, e.g. `local_shell.local_shell`.
    pub call: String,
    /// The call's input in one line (the command and its directory, the path…).
    pub input: String,
    /// Who refused it and by what: the rule, the operator, the deadline.
    pub why: String,
}

impl Refusal {
    /// `local_shell.local_shell: shred -u victim.txt (in /w) — denied by rule 44 of envelope "strict"`
    pub fn line(&self) -> String {
        format!("{}: {} — {}", self.call, self.input, self.why)
    }
}

/// Everything the answerer needs about the unit it serves.
pub(super) struct Gate {
    pub mission_id: String,
    /// Where a refused call is recorded.
    pub missions: Missions,
    pub agent_name: String,
    pub session_id: String,
    pub instance_id: String,
    pub cwd: String,
    pub envelope: Loaded,
    pub asks: Asks,
    pub ask_ceiling: Option<Duration>,
    /// Every gated call counts against `maxToolCalls`.
    pub budget: Arc<Budget>,
    /// A session resumed after its operator approved a gated call whose host had
    /// died: that verdict stands for the call once more, so the operator is not
    /// asked the same thing twice.
    pub resumed_approval: std::sync::Mutex<Option<crate::asks::Ask>>,
    /// Shared with the unit's mission tools: one count of the unit repeating itself.
    pub link: Arc<super::mission_tools::HostLink>,
}

/// The refusals of one unit's session, as the drive loop tells them.
pub(super) struct Refusals {
    rx: mpsc::UnboundedReceiver<Refusal>,
    /// Refused since the unit was last told.
    untold: Vec<Refusal>,
    /// The latest refusal of the session (what a stranded mission's reason names).
    pub last: Option<Refusal>,
    /// Refusal turns sent so far.
    pub turns: u32,
}

impl Refusals {
    fn new(rx: mpsc::UnboundedReceiver<Refusal>) -> Refusals {
        Refusals {
            rx,
            untold: Vec::new(),
            last: None,
            turns: 0,
        }
    }

    /// Take in what the answerer refused; whether the unit has refusals to hear.
    pub fn pending(&mut self) -> bool {
        while let Ok(r) = self.rx.try_recv() {
            self.last = Some(r.clone());
            self.untold.push(r);
        }
        !self.untold.is_empty()
    }

    /// The untold refusals, as lines, now told.
    pub fn tell(&mut self) -> Vec<String> {
        self.untold.drain(..).map(|r| r.line()).collect()
    }

    /// Forget the untold ones (the mission rests: nobody is left to tell).
    pub fn drop_untold(&mut self) {
        self.untold.clear();
    }
}

/// Answer each request on its own task: one waiting for a human must not hold up
/// the next. Returns where refused calls reach the drive loop.
pub(super) fn spawn_answerer(
    mut rx: mpsc::UnboundedReceiver<PermissionAsk>,
    gate: Gate,
) -> Refusals {
    let (refused_tx, refused_rx) = mpsc::unbounded_channel();
    let gate = Arc::new(gate);
    tokio::spawn(async move {
        while let Some(ask) = rx.recv().await {
            let (gate, refused_tx) = (gate.clone(), refused_tx.clone());
            tokio::spawn(async move {
                let (reply, refusal) = gate.decide(&ask).await;
                // Recorded before the unit hears the answer: the turn it ends on
                // the refusal must find the refusal on the record and in the
                // drive loop's channel.
                if let Some(refusal) = refusal {
                    gate.record_refusal(&refusal).await;
                    let _ = refused_tx.send(refusal);
                }
                let _ = ask.reply.send(reply);
            });
        }
    });
    Refusals::new(refused_rx)
}

impl Gate {
    /// The answer to one request, and the refusal to record when it is refused by
    /// the envelope (a spent compute budget is the drive loop's to handle).
    async fn decide(&self, ask: &PermissionAsk) -> (PermissionReply, Option<Refusal>) {
        let shape = Shape::of_request(ask);
        if let Some(tool) = mission_tool(&shape) {
            tracing::debug!(mission = %self.mission_id, tool, "mission tool allowed");
            self.budget.mission_call(&ask.tool_call_id).await;
            return (PermissionReply::Allow, None);
        }
        // Counted before rule evaluation. The call that crosses `maxToolCalls`
        // (and every call while the budget stays spent) is refused; the drive loop
        // hears of the crossing, cancels the turn and applies `onExhausted`.
        if self.budget.gated_call(&ask.tool_call_id).await {
            return (PermissionReply::Reject, None);
        }
        let call = tool_call(&shape);
        if let Some(refused) = self.repeated(&call, &ask.title).await {
            return (PermissionReply::Reject, refused);
        }
        let verdict = evaluate(&self.envelope.name, &self.envelope.declared, &call);
        tracing::info!(
            mission = %self.mission_id,
            tool = %format!("{}.{}", call.tools, call.tool),
            action = verdict.action.as_str(),
            "permission request"
        );
        let refused = |why: String| {
            Some(Refusal {
                call: format!("{}.{}", call.tools, call.tool),
                input: summarize(&call, &ask.title, &self.cwd),
                why,
            })
        };
        match verdict.action {
            Action::Allow => (PermissionReply::Allow, None),
            Action::Deny => (PermissionReply::Reject, refused(self.rule_words(&verdict))),
            Action::Approve if self.take_resumed_approval(&call, &ask.title) => {
                (PermissionReply::Allow, None)
            }
            Action::Approve => {
                let scope = always_scope(&call, &verdict, &summarize(&call, &ask.title, &self.cwd));
                if self.allowed_always(&scope).await {
                    return (PermissionReply::Allow, None);
                }
                // An operator may allow this scope always only where the agent
                // offered to remember such a grant: we keep it in its place.
                let offered = ask.options.iter().any(|(_, kind)| kind == "allow_always");
                match self
                    .ask_operator(ask, &call, &verdict, offered.then_some(scope))
                    .await
                {
                    Ok(()) => (PermissionReply::Allow, None),
                    Err(why) => (PermissionReply::Reject, refused(why)),
                }
            }
        }
    }

    /// A call the unit made word for word over and over is not run: from
    /// [`repeats::REFUSED_FROM`] times in a row it is refused with a correction
    /// (told on the next turn, like any refusal), and at [`repeats::BOUND`] the
    /// mission rests stuck, repeating itself. `None`: the call goes on to the rules.
    async fn repeated(&self, call: &ToolCall, title: &str) -> Option<Option<Refusal>> {
        let key = format!(
            "{}.{}\0{}\0{title}",
            call.tools,
            call.tool,
            Value::Object(call.args.clone())
        );
        let shown = format!(
            "{}.{}: {}",
            call.tools,
            call.tool,
            summarize(call, title, &self.cwd)
        );
        match self.link.repeats.count(key) {
            Repeat::Fresh => None,
            Repeat::Refused(n) => Some(Some(Refusal {
                call: format!("{}.{}", call.tools, call.tool),
                input: summarize(call, title, &self.cwd),
                why: repeats::correction("run", "calls", n),
            })),
            Repeat::Bound(n) => {
                if !self.link.at_rest.load(std::sync::atomic::Ordering::Relaxed) {
                    let reason = repeats::reason("made the same call", n, &shown);
                    let (link, missions, id) = (
                        self.link.clone(),
                        self.missions.clone(),
                        self.mission_id.clone(),
                    );
                    let rested = crate::store::blocking(move || {
                        link.rest_repeating(&missions, &id, &reason)
                    })
                    .await;
                    if let Err(e) = rested {
                        tracing::error!(mission = %self.mission_id, "could not rest a unit repeating itself: {e}");
                    }
                }
                Some(None)
            }
        }
    }

    /// Which rule of which envelope refused a call.
    fn rule_words(&self, verdict: &Verdict) -> String {
        let name = &self.envelope.name;
        let detail = verdict.detail.trim();
        let rule = match verdict.matched_rule {
            Some(i) => format!("denied by rule {i} of envelope \"{name}\""),
            None => format!("denied by the default action of envelope \"{name}\""),
        };
        if detail.is_empty() {
            rule
        } else {
            format!("{rule} ({})", one_line_summary(detail))
        }
    }

    /// Raise the durable ask and wait for the operator. `Err` says why the call is
    /// refused: the operator denied it, nobody answered in time, or the ask could
    /// not be filed or read.
    async fn ask_operator(
        &self,
        ask: &PermissionAsk,
        call: &ToolCall,
        verdict: &Verdict,
        always_scope: Option<String>,
    ) -> Result<(), String> {
        let wait = if verdict.timeout_s > 0 {
            Some(Duration::from_secs(verdict.timeout_s as u64))
        } else {
            self.ask_ceiling
        };
        let new = NewAsk {
            tools_name: call.tools.clone(),
            tool_name: call.tool.clone(),
            args_summary: summarize(call, &ask.title, &self.cwd),
            diff: diff_of(ask),
            envelope_name: self.envelope.name.clone(),
            matched_rule: verdict.matched_rule.map(|r| r as i64),
            on_timeout: verdict.on_timeout.as_str().to_string(),
            instance_id: self.instance_id.clone(),
            session_id: self.session_id.clone(),
            agent_name: self.agent_name.clone(),
            mission_id: Some(self.mission_id.clone()),
            wait,
            checkpoint_cwd: Some(self.cwd.clone()),
            always_scope,
            ..Default::default()
        };
        let asks = self.asks.clone();
        let row = match crate::store::blocking(move || asks.raise(new)).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(mission = %self.mission_id, "could not raise a permission ask; refusing the call: {e}");
                return Err(format!("refused: the approval could not be filed ({e})"));
            }
        };
        let deadline = wait.map(|w| Instant::now() + w);
        // The run is checkpointed with the ask: the verdict reaches this
        // waiting call only under the checkpoint's claim, so a process that
        // resumes the run elsewhere (this host presumed dead) and this call
        // never both act on it.
        match self.asks.wait(&row.id, deadline).await {
            // Resolved, or still pending at the deadline (the call is
            // refused, so nothing waits on the row any more): either way
            // this call spends the checkpoint, unless another process
            // holds the run.
            Ok(r) => {
                let (asks, id) = (self.asks.clone(), r.id.clone());
                let delivered = crate::store::blocking(move || asks.claim_for_delivery(&id)).await;
                if !delivered.unwrap_or(false) {
                    return Err(format!(
                        "refused: approval {} is held by another process resuming this mission",
                        r.id
                    ));
                }
                match r.approved() {
                    Some(true) => Ok(()),
                    _ => Err(operator_words(&r)),
                }
            }
            Err(e) => {
                tracing::error!(mission = %self.mission_id, "permission ask {} unreadable; refusing: {e}", row.id);
                Err(format!(
                    "refused: approval {} could not be read ({e})",
                    row.id
                ))
            }
        }
    }

    /// Does an operator's allowance in this mission cover `scope`? Its use is
    /// counted on the allowance's record; the agent is answered allow-once, as for
    /// any approval. A store that cannot be read allows nothing: the call is asked.
    async fn allowed_always(&self, scope: &str) -> bool {
        let (asks, mission, key) = (
            self.asks.clone(),
            self.mission_id.clone(),
            scope.to_string(),
        );
        match crate::store::blocking(move || asks.use_allowance(&mission, &key)).await {
            Ok(Some(a)) => {
                tracing::info!(mission = %self.mission_id, allowance = %a.id, granted_by = %a.granted_by(), scope, "allowed by the operator's allowance");
                true
            }
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(mission = %self.mission_id, "allowances unreadable; asking: {e}");
                false
            }
        }
    }

    /// Put a refused call on the mission's record: a blocker report naming the call
    /// and why (sanitized and bounded where it is shown).
    async fn record_refusal(&self, refusal: &Refusal) {
        let summary = crate::text::excerpt(&format!("refused {}", refusal.line()), 240);
        let detail = format!(
            "A tool call of the unit's was refused.\n\nCall:   {}\nInput:  {}\nWhy:    {}\n\nThe unit is told on its next turn, so it can try another way or finish.",
            refusal.call, refusal.input, refusal.why
        );
        let (missions, id) = (self.missions.clone(), self.mission_id.clone());
        crate::store::blocking(move || {
            if let Err(e) = missions.add_blocker(&id, summary, detail) {
                tracing::error!(mission = %id, "could not record a refused call: {e}");
            }
        })
        .await
    }

    /// Is this the call an operator approved before the session was resumed? The
    /// approval is spent on the first match.
    fn take_resumed_approval(&self, call: &ToolCall, title: &str) -> bool {
        let mut approved = self.resumed_approval.lock_unpoisoned();
        let matches = approved.as_ref().is_some_and(|a| {
            a.tools_name == call.tools
                && a.tool_name == call.tool
                && a.args_summary == summarize(call, title, &self.cwd)
        });
        if matches {
            *approved = None;
        }
        matches
    }
}

/// Why an operator's ask ended in a refusal.
fn operator_words(ask: &Ask) -> String {
    match ask.state {
        // Still pending at its deadline, or settled as expired.
        AskState::Pending | AskState::Expired => format!(
            "nobody answered approval {} before its deadline, so its on-timeout verdict ({}) applied",
            ask.id, ask.on_timeout
        ),
        _ => format!("denied by the operator (approval {})", ask.id),
    }
}

/// What the approvals table shows of a call.
fn summarize(call: &ToolCall, title: &str, cwd: &str) -> String {
    let get = |k: &str| {
        call.args
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string()
    };
    if call.tools == "local_shell" {
        let mut line = get("command");
        if let Some(Value::Array(a)) = call.args.get("args") {
            for w in a {
                line.push(' ');
                line.push_str(w.as_str().unwrap_or_default());
            }
        }
        if !line.trim().is_empty() {
            return one_line_summary(&format!("{} (in {cwd})", line.trim()));
        }
    }
    let text = ["path", "url", "pattern"]
        .iter()
        .map(|k| get(k))
        .find(|v| !v.is_empty())
        .unwrap_or_else(|| title.trim().to_string());
    one_line_summary(&text)
}

/// The change a gated edit would make, when the agent sent it.
fn diff_of(ask: &PermissionAsk) -> Option<String> {
    let raw = ask.raw_input.as_ref()?;
    let text = ["diff", "new_string", "newText", "content"]
        .iter()
        .find_map(|k| raw.get(*k).and_then(Value::as_str))?;
    let mut t: String = text.chars().take(4000).collect();
    if t.len() < text.len() {
        t.push_str("\n…");
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, json};

    fn ask(kind: &str, title: &str, raw: Value) -> PermissionAsk {
        PermissionAsk {
            tool_call_id: "t1".into(),
            title: title.into(),
            kind: kind.into(),
            raw_input: Some(raw),
            locations: vec![],
            options: vec![],
            meta: Map::new(),
            reply: tokio::sync::oneshot::channel().0,
        }
    }

    #[test]
    fn shell_summaries_name_the_directory() {
        let c = tool_call(&Shape::of_request(&ask(
            "execute",
            "Run",
            json!({"command": "rm", "args": ["-rf", "x"]}),
        )));
        assert_eq!(summarize(&c, "Run", "/w"), "rm -rf x (in /w)");
    }
}
