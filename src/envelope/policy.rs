//! TEMPORARY stand-in until the envelope core lands (same API).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Allow,
    Approve,
    Deny,
}
impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Approve => "approve",
            Action::Deny => "deny",
        }
    }
}
#[derive(Debug, Clone, Default)]
pub struct ComputeBounds {
    pub max_turns: u64,
    pub max_tool_calls: u64,
    pub max_tokens: u64,
    pub model_allowlist: Vec<String>,
    pub backend_allowlist: Vec<String>,
}
#[derive(Debug, Clone)]
pub struct AttentionBounds {
    pub allow_agent_answers: bool,
    pub max_agent_answers: i64,
}
#[derive(Debug, Clone)]
pub struct Policy {
    pub default_action: Action,
    pub compute: ComputeBounds,
    pub attention: Option<AttentionBounds>,
}
#[derive(Debug)]
pub struct PolicyError(pub String);
impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for PolicyError {}
impl Policy {
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Policy, PolicyError> {
        let v: serde_json::Value = serde_json::from_slice(bytes)
            .map_err(|e| PolicyError(format!("parse hitl policy {name:?}: {e}")))?;
        let default_action = match v.get("default_action").and_then(|a| a.as_str()) {
            Some("allow") => Action::Allow,
            Some("deny") => Action::Deny,
            _ => Action::Approve,
        };
        Ok(Policy {
            default_action,
            compute: ComputeBounds::default(),
            attention: None,
        })
    }
    pub fn builtin_default() -> Policy {
        Policy {
            default_action: Action::Approve,
            compute: ComputeBounds::default(),
            attention: None,
        }
    }
}
