//! TEMPORARY stand-in until the envelope core lands (same API).
use super::policy::{Action, Policy};
pub struct ToolCall {
    pub tools: String,
    pub tool: String,
    pub args: serde_json::Map<String, serde_json::Value>,
}
#[derive(Debug, Clone)]
pub struct Verdict {
    pub action: Action,
    pub matched_rule: Option<usize>,
    pub timeout_s: i64,
    pub on_timeout: Action,
    pub policy_name: String,
    pub detail: String,
}
pub fn evaluate(policy_name: &str, policy: &Policy, call: &ToolCall) -> Verdict {
    let _ = call;
    Verdict {
        action: policy.default_action,
        matched_rule: None,
        timeout_s: 0,
        on_timeout: Action::Deny,
        policy_name: policy_name.to_string(),
        detail: String::new(),
    }
}
