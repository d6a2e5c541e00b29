//! The truth about compute bounds: for each field an envelope may set, whether this
//! build enforces it for a given agent. One function answers it for every surface
//! (vet, `mission show`, the board's picker, `mission fire`'s narration), so no
//! surface can claim more than the runtime does.

use serde_json::Value;

use super::policy::ComputeBounds;
use crate::acp::AgentCaps;

/// A compute field of an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeField {
    MaxTurns,
    MaxToolCalls,
    MaxTokens,
    ModelAllowlist,
    BackendAllowlist,
}

impl ComputeField {
    pub const ALL: [ComputeField; 5] = [
        ComputeField::MaxTurns,
        ComputeField::MaxToolCalls,
        ComputeField::MaxTokens,
        ComputeField::ModelAllowlist,
        ComputeField::BackendAllowlist,
    ];

    /// The field's name in the envelope file.
    pub fn key(self) -> &'static str {
        match self {
            ComputeField::MaxTurns => "maxTurns",
            ComputeField::MaxToolCalls => "maxToolCalls",
            ComputeField::MaxTokens => "maxTokens",
            ComputeField::ModelAllowlist => "modelAllowlist",
            ComputeField::BackendAllowlist => "backendAllowlist",
        }
    }

    /// Does `bounds` set this field?
    pub fn is_set(self, bounds: &ComputeBounds) -> bool {
        match self {
            ComputeField::MaxTurns => bounds.max_turns > 0,
            ComputeField::MaxToolCalls => bounds.max_tool_calls > 0,
            ComputeField::MaxTokens => bounds.max_tokens > 0,
            ComputeField::ModelAllowlist => !bounds.model_allowlist.is_empty(),
            ComputeField::BackendAllowlist => !bounds.backend_allowlist.is_empty(),
        }
    }
}

/// How far the runtime holds a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundStatus {
    /// Counted by the host, and crossing it stops the mission.
    Enforced,
    /// Held, but on an estimate rather than an exact count.
    BestEffort,
    /// Parsed and validated; nothing counts it yet.
    DeclaredNotEnforced,
    /// Accepted, but the value cannot change what a mission does.
    NoEffect,
}

impl BoundStatus {
    pub fn label(self) -> &'static str {
        match self {
            BoundStatus::Enforced => "enforced",
            BoundStatus::BestEffort => "best-effort",
            BoundStatus::DeclaredNotEnforced => "declared, not enforced",
            BoundStatus::NoEffect => "no effect",
        }
    }
}

/// The status of `field` as set in `bounds`, for an agent whose capabilities are
/// known (`None`: not started yet, so nothing agent-specific can be promised).
pub fn bound_status(
    field: ComputeField,
    bounds: &ComputeBounds,
    agent: Option<&AgentCaps>,
) -> BoundStatus {
    let _ = agent;
    match field {
        // The drive loop prompts at most twice: only 1 changes anything (no nudge).
        ComputeField::MaxTurns if bounds.max_turns == 1 => BoundStatus::Enforced,
        ComputeField::MaxTurns => BoundStatus::NoEffect,
        // Every ACP tool call and every gated request is counted by the host.
        ComputeField::MaxToolCalls => BoundStatus::Enforced,
        // Reported usage when the agent sends it, else a bytes/4 meter: held, but
        // on an estimate unless the agent reports.
        ComputeField::MaxTokens => BoundStatus::BestEffort,
        // Model selection is not wired to ACP session models yet.
        ComputeField::ModelAllowlist | ComputeField::BackendAllowlist => {
            BoundStatus::DeclaredNotEnforced
        }
    }
}

/// The one-line character of an envelope file, parts joined by ` · `: what unruled
/// calls do, the tool-call ceiling with its truthful label, and who may answer the
/// unit's questions. Parsed leniently; an unparseable file gets an empty summary,
/// never a wrong one.
pub fn envelope_summary(policy_bytes: &[u8]) -> String {
    let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(policy_bytes) else {
        return String::new();
    };
    let get = |k: &str| {
        doc.iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(k))
            .map(|(_, v)| v)
    };
    let mut parts = Vec::new();
    parts.push(
        match get("default_action").and_then(Value::as_str).unwrap_or("") {
            "" | "approve" => "unruled calls stop for approval".to_string(),
            "deny" => "unruled calls are denied".to_string(),
            "allow" => "unruled calls run unreviewed".to_string(),
            other => format!("unruled calls take default_action {other:?}"),
        },
    );
    let compute = get("compute");
    let number = |v: Option<&Value>, k: &str| {
        v.and_then(|c| c.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let calls = number(compute, "maxToolCalls");
    if calls > 0 {
        let bounds = ComputeBounds {
            max_tool_calls: calls,
            ..Default::default()
        };
        parts.push(format!(
            "≤{calls} tool calls ({})",
            bound_status(ComputeField::MaxToolCalls, &bounds, None).label()
        ));
    }
    let attention = get("attention");
    let allowed = attention
        .and_then(|a| a.get("allowAgentAnswers"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if allowed {
        let max = attention
            .and_then(|a| a.get("maxAgentAnswers"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let cap = if max <= 0 { 3 } else { max };
        parts.push(format!("an agent may answer {cap} questions"));
    } else {
        parts.push("questions always wait for a human".to_string());
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_read_the_character_of_an_envelope() {
        let default = br#"{"default_action":"approve","compute":{"maxToolCalls":300},"attention":{"allowAgentAnswers":true,"maxAgentAnswers":0}}"#;
        assert_eq!(
            envelope_summary(default),
            "unruled calls stop for approval · ≤300 tool calls (enforced) · an agent may answer 3 questions"
        );
        let strict = br#"{"default_action":"deny","attention":{"allowAgentAnswers":false}}"#;
        assert_eq!(
            envelope_summary(strict),
            "unruled calls are denied · questions always wait for a human"
        );
        assert_eq!(envelope_summary(b"{not json"), "");
    }

    #[test]
    fn every_field_has_a_truthful_label() {
        let one = ComputeBounds {
            max_turns: 1,
            ..Default::default()
        };
        let five = ComputeBounds {
            max_turns: 5,
            ..Default::default()
        };
        assert_eq!(
            bound_status(ComputeField::MaxTurns, &one, None),
            BoundStatus::Enforced
        );
        assert_eq!(
            bound_status(ComputeField::MaxTurns, &five, None),
            BoundStatus::NoEffect
        );
        assert_eq!(
            bound_status(ComputeField::MaxToolCalls, &one, None),
            BoundStatus::Enforced
        );
        assert_eq!(
            bound_status(ComputeField::MaxTokens, &one, None),
            BoundStatus::BestEffort
        );
        for f in [ComputeField::ModelAllowlist, ComputeField::BackendAllowlist] {
            assert_eq!(
                bound_status(f, &one, None),
                BoundStatus::DeclaredNotEnforced,
                "{f:?}"
            );
        }
    }
}
