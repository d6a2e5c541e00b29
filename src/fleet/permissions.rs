//! The unattended permission answerer: every `session/request_permission` a unit
//! sends is decided by its mission's envelope. `allow` and `deny` are answered at
//! once; `approve` becomes a durable ask that an operator answers (from any
//! process), and the unit's tool call waits for it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::acp::{PermissionAsk, PermissionReply};
use crate::asks::{Asks, NewAsk, one_line_summary};
use crate::envelope::eval::{ToolCall, evaluate};
use crate::envelope::policy::Action;
use crate::envelope::search::Loaded;
use crate::sync::LockUnpoisoned;

use super::budget::Budget;

/// Everything the answerer needs about the unit it serves.
pub(super) struct Gate {
    pub mission_id: String,
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
}

/// Answer each request on its own task: one waiting for a human must not hold up
/// the next.
pub(super) fn spawn_answerer(mut rx: mpsc::UnboundedReceiver<PermissionAsk>, gate: Gate) {
    let gate = Arc::new(gate);
    tokio::spawn(async move {
        while let Some(ask) = rx.recv().await {
            let gate = gate.clone();
            tokio::spawn(async move {
                let reply = gate.decide(&ask).await;
                let _ = ask.reply.send(reply);
            });
        }
    });
}

impl Gate {
    async fn decide(&self, ask: &PermissionAsk) -> PermissionReply {
        if targets_mission_server(ask) {
            return PermissionReply::Allow;
        }
        // Counted before rule evaluation. The call that crosses `maxToolCalls`
        // (and every call while the budget stays spent) is refused; the drive loop
        // hears of the crossing, cancels the turn and applies `onExhausted`.
        if self.budget.gated_call(&ask.tool_call_id, &ask.title) {
            return PermissionReply::Reject;
        }
        let call = tool_call_of(ask);
        let verdict = evaluate(&self.envelope.name, &self.envelope.policy, &call);
        tracing::info!(
            mission = %self.mission_id,
            tool = %format!("{}.{}", call.tools, call.tool),
            action = verdict.action.as_str(),
            "permission request"
        );
        match verdict.action {
            Action::Allow => PermissionReply::Allow,
            Action::Deny => PermissionReply::Reject,
            Action::Approve if self.take_resumed_approval(&call, &ask.title) => {
                PermissionReply::Allow
            }
            Action::Approve => {
                let wait = if verdict.timeout_s > 0 {
                    Some(Duration::from_secs(verdict.timeout_s as u64))
                } else {
                    self.ask_ceiling
                };
                let new = NewAsk {
                    tools_name: call.tools.clone(),
                    tool_name: call.tool.clone(),
                    args_summary: summarize(&call, &ask.title, &self.cwd),
                    diff: diff_of(ask),
                    policy_name: self.envelope.name.clone(),
                    matched_rule: verdict.matched_rule.map(|r| r as i64),
                    on_timeout: verdict.on_timeout.as_str().to_string(),
                    instance_id: self.instance_id.clone(),
                    session_id: self.session_id.clone(),
                    agent_name: self.agent_name.clone(),
                    mission_id: Some(self.mission_id.clone()),
                    wait,
                    checkpoint_cwd: Some(self.cwd.clone()),
                    ..Default::default()
                };
                let asks = self.asks.clone();
                let row = match crate::store::blocking(move || asks.raise(new)).await {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::error!(mission = %self.mission_id, "could not raise a permission ask; refusing the call: {e}");
                        return PermissionReply::Reject;
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
                        let delivered =
                            crate::store::blocking(move || asks.claim_for_delivery(&id)).await;
                        if delivered.unwrap_or(false) && r.approved() == Some(true) {
                            PermissionReply::Allow
                        } else {
                            PermissionReply::Reject
                        }
                    }
                    Err(e) => {
                        tracing::error!(mission = %self.mission_id, "permission ask {} unreadable; refusing: {e}", row.id);
                        PermissionReply::Reject
                    }
                }
            }
        }
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

/// A request for one of our own mission tools: named in `_meta` (the documented
/// `missionboard.missionTool` key, or contenox's `toolsName: "mission"`), or by the
/// tool's name or display title in the title or raw input. Only non-mutating kinds
/// qualify, so a shell line that merely mentions a tool name is never waved through.
fn targets_mission_server(ask: &PermissionAsk) -> bool {
    if let Some(tool) = ask.meta.get(crate::tools::MISSION_TOOL_META_KEY) {
        return tool
            .as_str()
            .is_some_and(|t| crate::tools::MISSION_TOOL_NAMES.contains(&t));
    }
    if let Some(Value::String(t)) = ask.meta.get("toolsName") {
        return t == crate::tools::MISSION_SERVER_NAME;
    }
    if matches!(
        ask.kind.as_str(),
        "execute" | "edit" | "delete" | "move" | "fetch"
    ) {
        return false;
    }
    let raw = ask
        .raw_input
        .as_ref()
        .map(Value::to_string)
        .unwrap_or_default();
    crate::tools::names_mission_tool(&ask.title)
        || crate::tools::MISSION_TOOL_NAMES
            .iter()
            .any(|t| raw.contains(t))
}

/// The envelope's view of a request. Agents that name the tool (`_meta` toolsName /
/// toolName) are taken at their word; otherwise the ACP kind names it, and the raw
/// input supplies the arguments rules look at (`path`, `command`, `url`).
pub(super) fn tool_call_of(ask: &PermissionAsk) -> ToolCall {
    let named = |k: &str| ask.meta.get(k).and_then(Value::as_str).map(str::to_string);
    let (tools, tool) = match (named("toolsName"), named("toolName")) {
        (Some(a), Some(b)) => (a, b),
        _ => {
            let (a, b) = match ask.kind.as_str() {
                "read" => ("local_fs", "read_file"),
                "edit" => ("local_fs", "write_file"),
                "delete" => ("local_fs", "delete_file"),
                "move" => ("local_fs", "move_file"),
                "search" => ("local_fs", "grep"),
                "execute" => ("local_shell", "local_shell"),
                "fetch" => ("webtools", "web_get"),
                other => ("acp", if other.is_empty() { "other" } else { other }),
            };
            (a.to_string(), b.to_string())
        }
    };
    let mut args: Map<String, Value> = match &ask.raw_input {
        Some(Value::Object(m)) => m.clone(),
        Some(other) => Map::from_iter([("input".to_string(), other.clone())]),
        None => Map::new(),
    };
    let first = |keys: &[&str], args: &Map<String, Value>| {
        keys.iter()
            .find_map(|k| args.get(*k).and_then(Value::as_str).map(str::to_string))
    };
    if !args.contains_key("path") {
        let path = first(&["file_path", "filePath", "abs_path", "filename"], &args)
            .or_else(|| ask.locations.first().map(|p| p.display().to_string()));
        if let Some(p) = path {
            args.insert("path".into(), Value::String(p));
        }
    }
    if !args.contains_key("command")
        && let Some(c) = first(&["cmd"], &args)
    {
        args.insert("command".into(), Value::String(c));
    }
    if let Some(Value::Array(parts)) = args.get("command").cloned() {
        // `["git", "status"]` → command "git", args ["status"].
        let mut words = parts
            .iter()
            .map(|p| p.as_str().unwrap_or_default().to_string());
        if let Some(head) = words.next() {
            args.insert("command".into(), Value::String(head));
            args.insert(
                "args".into(),
                Value::Array(words.map(Value::String).collect()),
            );
        }
    }
    if !args.contains_key("url")
        && let Some(u) = first(&["uri"], &args)
    {
        args.insert("url".into(), Value::String(u));
    }
    ToolCall { tools, tool, args }
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
    use serde_json::json;

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
    fn requests_map_to_envelope_tool_calls() {
        let c = tool_call_of(&ask(
            "execute",
            "Run",
            json!({"command": ["git", "status"]}),
        ));
        assert_eq!(
            (c.tools.as_str(), c.tool.as_str()),
            ("local_shell", "local_shell")
        );
        assert_eq!(c.args["command"], "git");
        assert_eq!(c.args["args"], json!(["status"]));
        let c = tool_call_of(&ask("edit", "Edit", json!({"file_path": "src/a.rs"})));
        assert_eq!(
            (c.tool.as_str(), c.args["path"].as_str()),
            ("write_file", Some("src/a.rs"))
        );
        let mut named = ask("other", "x", json!({"path": "a"}));
        named.meta.insert("toolsName".into(), json!("git"));
        named.meta.insert("toolName".into(), json!("git_commit"));
        let c = tool_call_of(&named);
        assert_eq!((c.tools.as_str(), c.tool.as_str()), ("git", "git_commit"));
    }

    #[test]
    fn only_non_mutating_requests_for_mission_tools_are_ours() {
        assert!(targets_mission_server(&ask(
            "other",
            "mcp__mission__mission_report",
            json!({})
        )));
        assert!(!targets_mission_server(&ask(
            "execute",
            "echo mission_report",
            json!({})
        )));
        assert!(!targets_mission_server(&ask(
            "read",
            "read src/x",
            json!({})
        )));
        assert!(targets_mission_server(&ask(
            "other",
            "Report to the operator",
            json!({"summary": "x"})
        )));
        let mut by_meta = ask("other", "Tool call", json!({}));
        by_meta
            .meta
            .insert("missionboard.missionTool".into(), json!("mission_finish"));
        assert!(targets_mission_server(&by_meta));
        by_meta
            .meta
            .insert("missionboard.missionTool".into(), json!("local_shell"));
        assert!(!targets_mission_server(&by_meta), "only our four tools");
    }

    #[test]
    fn shell_summaries_name_the_directory() {
        let c = tool_call_of(&ask(
            "execute",
            "Run",
            json!({"command": "rm", "args": ["-rf", "x"]}),
        ));
        assert_eq!(summarize(&c, "Run", "/w"), "rm -rf x (in /w)");
    }
}
