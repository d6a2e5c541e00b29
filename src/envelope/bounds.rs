//! The truth about compute bounds: for each field an envelope may set, whether this
//! build enforces it for a given agent. One function answers it for every surface
//! (vet, `mission show`, the board's picker, `mission fire`'s narration), so no
//! surface can claim more than the runtime does.

use serde_json::Value;

use super::format::{
    ComputeBounds, MAX_COST_USD_CAP, MAX_TOKENS_CAP, MAX_TOOL_CALLS_CAP, MAX_TURNS_CAP,
};
use crate::agents::AgentCaps;

/// A compute field of an envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComputeField {
    MaxTurns,
    MaxToolCalls,
    MaxTokens,
    /// `maxCostUsd`; its limit is held in micro-dollars.
    MaxCostUsd,
    ModelAllowlist,
    BackendAllowlist,
}

impl ComputeField {
    pub const ALL: [ComputeField; 6] = [
        ComputeField::MaxTurns,
        ComputeField::MaxToolCalls,
        ComputeField::MaxTokens,
        ComputeField::MaxCostUsd,
        ComputeField::ModelAllowlist,
        ComputeField::BackendAllowlist,
    ];

    /// The field's name in the envelope file.
    pub fn key(self) -> &'static str {
        match self {
            ComputeField::MaxTurns => "maxTurns",
            ComputeField::MaxToolCalls => "maxToolCalls",
            ComputeField::MaxTokens => "maxTokens",
            ComputeField::MaxCostUsd => "maxCostUsd",
            ComputeField::ModelAllowlist => "modelAllowlist",
            ComputeField::BackendAllowlist => "backendAllowlist",
        }
    }

    /// The field named `key` (as in the envelope file).
    pub fn from_key(key: &str) -> Option<ComputeField> {
        ComputeField::ALL.into_iter().find(|f| f.key() == key)
    }

    /// The numeric limit `bounds` sets on this field (0: unbounded, or a list).
    pub fn limit(self, bounds: &ComputeBounds) -> u64 {
        match self {
            ComputeField::MaxTurns => bounds.max_turns,
            ComputeField::MaxToolCalls => bounds.max_tool_calls,
            ComputeField::MaxTokens => bounds.max_tokens,
            ComputeField::MaxCostUsd => bounds.max_cost_micro_usd,
            ComputeField::ModelAllowlist | ComputeField::BackendAllowlist => 0,
        }
    }

    /// Raise a numeric field to `limit` (an operator's extension); lists are untouched.
    pub fn set_limit(self, bounds: &mut ComputeBounds, limit: u64) {
        match self {
            ComputeField::MaxTurns => bounds.max_turns = limit,
            ComputeField::MaxToolCalls => bounds.max_tool_calls = limit,
            ComputeField::MaxTokens => bounds.max_tokens = limit,
            ComputeField::MaxCostUsd => bounds.max_cost_micro_usd = limit,
            ComputeField::ModelAllowlist | ComputeField::BackendAllowlist => {}
        }
    }

    /// The largest value an envelope (or an extension) may give a numeric field.
    pub fn cap(self) -> u64 {
        match self {
            ComputeField::MaxTurns => MAX_TURNS_CAP as u64,
            ComputeField::MaxToolCalls => MAX_TOOL_CALLS_CAP as u64,
            ComputeField::MaxTokens => MAX_TOKENS_CAP as u64,
            ComputeField::MaxCostUsd => crate::envelope::format::micro_usd(MAX_COST_USD_CAP),
            ComputeField::ModelAllowlist | ComputeField::BackendAllowlist => 0,
        }
    }

    /// A limit of this field as a reader reads it: a count, or dollars.
    pub fn amount(self, limit: u64) -> String {
        match self {
            ComputeField::MaxCostUsd => usd(limit),
            _ => crate::text::count(limit),
        }
    }

    /// What one unit of an operator's `extend +N` adds to this field's limit: a
    /// dollar for the money bound (held in micro-dollars), else one.
    pub fn extend_unit(self) -> u64 {
        match self {
            ComputeField::MaxCostUsd => 1_000_000,
            _ => 1,
        }
    }

    /// Does `bounds` set this field?
    pub fn is_set(self, bounds: &ComputeBounds) -> bool {
        match self {
            ComputeField::MaxTurns => bounds.max_turns > 0,
            ComputeField::MaxToolCalls => bounds.max_tool_calls > 0,
            ComputeField::MaxTokens => bounds.max_tokens > 0,
            ComputeField::MaxCostUsd => bounds.max_cost_micro_usd > 0,
            ComputeField::ModelAllowlist => !bounds.model_allowlist.is_empty(),
            ComputeField::BackendAllowlist => !bounds.backend_allowlist.is_empty(),
        }
    }
}

/// How far the runtime holds a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundStatus {
    /// Counted (or checked) by the host, and crossing it stops the mission.
    Enforced,
    /// Held, but not exactly: on an estimate when the agent reports no usage, or
    /// — before the agent is known — only if it turns out to make the field visible.
    BestEffort,
    /// Parsed and validated; nothing the host can see lets it hold the field.
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
    match field {
        // The drive loop prompts at most twice: only 1 changes anything (no nudge).
        ComputeField::MaxTurns if bounds.max_turns == 1 => BoundStatus::Enforced,
        ComputeField::MaxTurns => BoundStatus::NoEffect,
        // Every ACP tool call and every gated request is counted by the host.
        ComputeField::MaxToolCalls => BoundStatus::Enforced,
        // Reported usage when the agent sends it, else a bytes/4 meter. No agent
        // declares up front that it reports usage, so this is never more than
        // best-effort: the meter is an estimate.
        ComputeField::MaxTokens => BoundStatus::BestEffort,
        // The agent's reported cost when it sends one, else its tokens (reported,
        // or metered when it reports none) at its model's list prices: an estimate
        // unless the agent reports, which no agent declares up front.
        ComputeField::MaxCostUsd => BoundStatus::BestEffort,
        // The host selects an allowed session model when the agent advertises
        // models, and refuses the fire when none is allowed.
        ComputeField::ModelAllowlist => match agent {
            None => BoundStatus::BestEffort,
            Some(caps) if caps.offered_models().is_some() => BoundStatus::Enforced,
            Some(_) => BoundStatus::DeclaredNotEnforced,
        },
        // ACP exposes no backend or provider to the client: nothing to check.
        ComputeField::BackendAllowlist => BoundStatus::DeclaredNotEnforced,
    }
}

/// `maxToolCalls=3 (enforced)`, `modelAllowlist=["b"] (enforced)`: a set field
/// with its value and its truthful label.
pub fn describe(field: ComputeField, bounds: &ComputeBounds, agent: Option<&AgentCaps>) -> String {
    let value = match field {
        ComputeField::MaxTurns => crate::text::count(bounds.max_turns),
        ComputeField::MaxToolCalls => crate::text::count(bounds.max_tool_calls),
        ComputeField::MaxTokens => crate::text::count(bounds.max_tokens),
        ComputeField::MaxCostUsd => field.amount(bounds.max_cost_micro_usd),
        ComputeField::ModelAllowlist => format!("{:?}", bounds.model_allowlist),
        ComputeField::BackendAllowlist => format!("{:?}", bounds.backend_allowlist),
    };
    format!(
        "{}={value} ({})",
        field.key(),
        bound_status(field, bounds, agent).label()
    )
}

/// `maxTokens 2,000,000 · best-effort`, `modelAllowlist [a, b] · enforced`: a set
/// field as the board's picker and fire notice show it — the value for a reader,
/// then the same truthful label `describe` gives.
pub fn label(field: ComputeField, bounds: &ComputeBounds, agent: Option<&AgentCaps>) -> String {
    let value = match field {
        ComputeField::ModelAllowlist => format!("[{}]", bounds.model_allowlist.join(", ")),
        ComputeField::BackendAllowlist => format!("[{}]", bounds.backend_allowlist.join(", ")),
        numeric => numeric.amount(numeric.limit(bounds)),
    };
    format!(
        "{} {value} · {}",
        field.key(),
        bound_status(field, bounds, agent).label()
    )
}

/// Every set field of `bounds`, described, joined by ` · ` (empty when unbounded).
pub fn describe_all(bounds: &ComputeBounds, agent: Option<&AgentCaps>) -> String {
    ComputeField::ALL
        .into_iter()
        .filter(|f| f.is_set(bounds))
        .map(|f| describe(f, bounds, agent))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// Micro-dollars as dollars: `$1.50`, `$0.0500`.
pub fn usd(micro: u64) -> String {
    let usd = micro as f64 / 1_000_000.0;
    if usd != 0.0 && usd < 0.1 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// The grammar of an answer to a compute-bound question, as the question states it.
pub const BUDGET_ANSWER_GRAMMAR: &str = "answer \"extend N%\" to raise the bound by N percent (\"extend 50%\": by half, rounded up), \"extend +N\" to raise it by N (N dollars for maxCostUsd), or \"stop\" to let the mission finish stuck";

/// An operator's answer to a compute-bound question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetAnswer {
    /// Raise the bound by this percentage of its current limit.
    ExtendPercent(u64),
    /// Raise the bound by this much.
    ExtendBy(u64),
    Stop,
}

impl BudgetAnswer {
    /// Parse `extend 50%`, `extend +20` or `stop` (case and spacing are free).
    pub fn parse(text: &str) -> Result<BudgetAnswer, String> {
        let words: Vec<String> = text.split_whitespace().map(str::to_lowercase).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let amount = |s: &str| s.parse::<u64>().ok().filter(|n| *n > 0);
        let parsed = match words.as_slice() {
            ["stop"] => Some(BudgetAnswer::Stop),
            ["extend", arg] => match (arg.strip_suffix('%'), arg.strip_prefix('+')) {
                (Some(p), _) => amount(p).map(BudgetAnswer::ExtendPercent),
                (_, Some(n)) => amount(n).map(BudgetAnswer::ExtendBy),
                _ => None,
            },
            ["extend", n, "%"] => amount(n).map(BudgetAnswer::ExtendPercent),
            ["extend", "+", n] => amount(n).map(BudgetAnswer::ExtendBy),
            _ => None,
        };
        parsed.ok_or_else(|| {
            format!(
                "{:?} is not an answer to a compute-bound question: {BUDGET_ANSWER_GRAMMAR}",
                text.trim()
            )
        })
    }

    /// The raised limit for a bound at `limit`, at most `cap`; always above
    /// `limit` (when the cap allows), so an extension never leaves the mission
    /// where it stopped. `None` for `stop`.
    pub fn raise(self, limit: u64, cap: u64) -> Option<u64> {
        self.raise_by_units(limit, cap, 1)
    }

    /// [`BudgetAnswer::raise`] for `field`, whose `extend +N` counts in its own
    /// unit (dollars for `maxCostUsd`).
    pub fn raise_field(self, field: ComputeField, limit: u64) -> Option<u64> {
        self.raise_by_units(limit, field.cap(), field.extend_unit())
    }

    fn raise_by_units(self, limit: u64, cap: u64, unit: u64) -> Option<u64> {
        let by = match self {
            BudgetAnswer::Stop => return None,
            BudgetAnswer::ExtendPercent(p) => limit.saturating_mul(p).div_ceil(100).max(1),
            BudgetAnswer::ExtendBy(n) => n.saturating_mul(unit),
        };
        Some(limit.saturating_add(by).min(cap))
    }
}

/// The one-line character of an envelope file, parts joined by ` · `: what unruled
/// calls do, the tool-call ceiling with its truthful label, and who may answer the
/// unit's questions. A file the loader refuses gets an empty summary, never a
/// wrong one: it bounds nothing, because nothing can fire under it.
pub fn envelope_summary(envelope_bytes: &[u8]) -> String {
    if super::validate::check(envelope_bytes).is_err() {
        return String::new();
    }
    let Ok(Value::Object(doc)) = serde_json::from_slice::<Value>(envelope_bytes) else {
        return String::new();
    };
    let get = |k: &str| doc.get(k);
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
            "≤{} ({})",
            crate::text::counted(calls, "tool call", "tool calls"),
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
        parts.push(format!(
            "an agent may answer {}",
            crate::text::counted(cap.unsigned_abs(), "question", "questions")
        ));
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
        // A case variant refuses the load, so it draws no character either.
        assert_eq!(envelope_summary(br#"{"Default_Action":"allow"}"#), "");
    }

    #[test]
    fn every_field_has_a_truthful_label_for_every_agent() {
        use crate::agents::SessionModels;
        let advertising = AgentCaps {
            models: Some(SessionModels {
                available: vec!["a".into(), "b".into()],
                current: "a".into(),
                config_id: Some("model".into()),
            }),
            ..Default::default()
        };
        let silent = AgentCaps::default();
        // An empty model list is no advertisement at all.
        let empty = AgentCaps {
            models: Some(SessionModels {
                available: vec![],
                current: String::new(),
                config_id: None,
            }),
            ..Default::default()
        };
        let agents: [(&str, Option<&AgentCaps>); 4] = [
            ("unknown", None),
            ("advertises models", Some(&advertising)),
            ("advertises none", Some(&silent)),
            ("advertises an empty list", Some(&empty)),
        ];
        let one = ComputeBounds {
            max_turns: 1,
            max_tool_calls: 3,
            max_tokens: 100,
            max_cost_micro_usd: 1_500_000,
            model_allowlist: vec!["b".into()],
            backend_allowlist: vec!["x".into()],
            ..Default::default()
        };
        let five = ComputeBounds {
            max_turns: 5,
            ..one.clone()
        };
        use BoundStatus::*;
        use ComputeField::*;
        // (field, bounds, expected per agent, in the order of `agents`)
        let table: [(ComputeField, &ComputeBounds, [BoundStatus; 4]); 7] = [
            (MaxTurns, &one, [Enforced; 4]),
            (MaxTurns, &five, [NoEffect; 4]),
            (MaxToolCalls, &one, [Enforced; 4]),
            (MaxTokens, &one, [BestEffort; 4]),
            (MaxCostUsd, &one, [BestEffort; 4]),
            (
                ModelAllowlist,
                &one,
                [
                    BestEffort,
                    Enforced,
                    DeclaredNotEnforced,
                    DeclaredNotEnforced,
                ],
            ),
            (BackendAllowlist, &one, [DeclaredNotEnforced; 4]),
        ];
        for field in ComputeField::ALL {
            assert!(
                table.iter().any(|(f, ..)| *f == field),
                "{field:?} has no row"
            );
        }
        for (field, bounds, expected) in &table {
            for ((agent, caps), want) in agents.iter().zip(expected) {
                assert_eq!(
                    bound_status(*field, bounds, *caps),
                    *want,
                    "{field:?} for an agent that {agent}"
                );
            }
        }
        assert_eq!(
            describe_all(&one, Some(&advertising)),
            "maxTurns=1 (enforced) · maxToolCalls=3 (enforced) · maxTokens=100 (best-effort) · maxCostUsd=$1.50 (best-effort) · modelAllowlist=[\"b\"] (enforced) · backendAllowlist=[\"x\"] (declared, not enforced)"
        );
        assert_eq!(describe_all(&ComputeBounds::default(), None), "");
        let preset = ComputeBounds {
            max_tokens: 2_000_000,
            ..one.clone()
        };
        assert_eq!(
            label(MaxTokens, &preset, None),
            "maxTokens 2,000,000 · best-effort"
        );
        assert_eq!(label(MaxTurns, &one, None), "maxTurns 1 · enforced");
        assert_eq!(
            label(ModelAllowlist, &one, Some(&silent)),
            "modelAllowlist [b] · declared, not enforced"
        );
        assert_eq!(
            label(ModelAllowlist, &one, Some(&advertising)),
            "modelAllowlist [b] · enforced"
        );
        let big = ComputeBounds {
            max_tokens: 2_000_000,
            ..Default::default()
        };
        // One number format: the picker's label and mission show's line agree.
        assert_eq!(
            label(ComputeField::MaxTokens, &big, None),
            "maxTokens 2,000,000 · best-effort"
        );
        assert_eq!(
            describe(ComputeField::MaxTokens, &big, None),
            "maxTokens=2,000,000 (best-effort)"
        );
    }

    #[test]
    fn budget_answers_follow_the_documented_grammar() {
        assert_eq!(
            BudgetAnswer::parse("extend 50%"),
            Ok(BudgetAnswer::ExtendPercent(50))
        );
        assert_eq!(
            BudgetAnswer::parse("  Extend  +20 "),
            Ok(BudgetAnswer::ExtendBy(20))
        );
        assert_eq!(
            BudgetAnswer::parse("extend 50 %"),
            Ok(BudgetAnswer::ExtendPercent(50))
        );
        assert_eq!(BudgetAnswer::parse("STOP"), Ok(BudgetAnswer::Stop));
        for bad in [
            "extend",
            "extend 50",
            "extend 0%",
            "extend +0",
            "extend -5",
            "go on",
            "stop now",
            "",
        ] {
            let err = BudgetAnswer::parse(bad).unwrap_err();
            assert!(err.ends_with(BUDGET_ANSWER_GRAMMAR), "{bad}: {err}");
        }
        assert_eq!(BudgetAnswer::ExtendPercent(50).raise(3, 100), Some(5));
        assert_eq!(BudgetAnswer::ExtendPercent(50).raise(100, 1000), Some(150));
        assert_eq!(
            BudgetAnswer::ExtendPercent(1).raise(1, 1000),
            Some(2),
            "at least one more"
        );
        assert_eq!(
            BudgetAnswer::ExtendBy(20).raise(100, 110),
            Some(110),
            "capped"
        );
        assert_eq!(BudgetAnswer::Stop.raise(3, 100), None);
    }
}
