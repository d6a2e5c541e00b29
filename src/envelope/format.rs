//! The envelope file format's domain types. A file becomes a [`Envelope`] through
//! [`Envelope::parse`], which lives beside the checks it shares with `missionboard
//! vet` (see `validate`).
//!
//! What refuses a file: an unknown field at any level, a case variant or a
//! duplicate of a field, a value of the wrong JSON type, an invalid value, and a
//! rule that could never do what it says. `//` comment keys (and `$schema`) are
//! allowed everywhere. A refused envelope refuses the fire, the board's launch and
//! the fleet's resume alike; it is never loaded with a part of it ignored, because
//! an ignored key can only ever widen what the envelope allows (a misspelt `when`
//! makes its rule unconditional).
//!
//! Where this loader departs from the Go loader on purpose, each time
//! because the lenient reading would make a rule or a bound silently inert:
//!
//! * unknown, case-variant and duplicate keys refuse the file (Go ignored the
//!   first outside `compute`, folded case and let the last duplicate win);
//! * `compute.maxTurns` takes any value up to [`MAX_TURNS_CAP`] (vet warns from 2
//!   on, since only 1 changes anything), and `onExhausted: "pause_ask"` is
//!   accepted, because this runtime implements it;
//! * `version` is understood (absent, 0 or 1 load);
//! * a negative `timeout_s` is refused: the format has no "wait forever" value;
//! * `trusted_binaries` entries must be absolute paths and well-formed digests,
//!   and a malformed `[...]` glob class fails the load like a malformed brace.

use std::fmt;

use super::glob::Glob;
use super::quote::quote;
pub use super::trusted::{TrustedBinaries, sha256_file};

/// The largest `maxTurns` accepted. Only 0 and 1 change anything today; the cap
/// only keeps an absurd value from looking intentional.
pub const MAX_TURNS_CAP: i64 = 1000;
pub const MAX_TOOL_CALLS_CAP: i64 = 10_000_000;
pub const MAX_TOKENS_CAP: i64 = 100_000_000_000;
/// The largest `maxCostUsd` accepted, in US dollars: a larger one is a typo, not a budget.
pub const MAX_COST_USD_CAP: f64 = 1_000_000.0;
pub const MAX_ALLOWLIST_ENTRIES: usize = 256;
pub const MAX_ALLOWLIST_ENTRY_BYTES: usize = 512;
/// `maxAgentAnswers` of 0 (or omitted) means this, never "unlimited".
pub const DEFAULT_MAX_AGENT_ANSWERS: u32 = 3;
pub const MAX_AGENT_ANSWERS_CEILING: i64 = 1000;
/// The only policy format version this binary understands.
pub const POLICY_VERSION: i64 = 1;

/// What a rule (or the default) decides for a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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

    /// Exact, case-sensitive: an action is a value, not a key.
    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "allow" => Some(Action::Allow),
            "approve" => Some(Action::Approve),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A condition operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Eq,
    Glob,
    Host,
    CommandBlacklist,
    CommandAskAlways,
    NoCommandSubstitution,
    CommandPrefixAllowlist,
}

impl Op {
    pub const ALL: [Op; 7] = [
        Op::Eq,
        Op::Glob,
        Op::Host,
        Op::CommandBlacklist,
        Op::CommandAskAlways,
        Op::NoCommandSubstitution,
        Op::CommandPrefixAllowlist,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Glob => "glob",
            Op::Host => "host",
            Op::CommandBlacklist => "command_blacklist",
            Op::CommandAskAlways => "command_ask_always",
            Op::NoCommandSubstitution => "no_command_substitution",
            Op::CommandPrefixAllowlist => "command_prefix_allowlist",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.as_str() == s)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub key: String,
    pub op: Op,
    pub value: String,
    /// `value` compiled when the envelope loaded; present exactly when `op` is
    /// [`Op::Glob`], so no tool call ever recompiles it.
    pub glob: Option<Glob>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Toolset name; `""` or `"*"` matches any.
    pub tools: String,
    /// Tool name inside the toolset; `""` or `"*"` matches any.
    pub tool: String,
    pub when: Vec<Condition>,
    pub action: Action,
    /// `> 0` waits that long; `0` leaves the ask on the approval ceiling.
    pub timeout_s: i64,
    /// What an expired ask resolves to; stored as `deny` when the file leaves it empty.
    pub on_timeout: Action,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnExhausted {
    #[default]
    FinishStuck,
    PauseAsk,
}

impl OnExhausted {
    pub fn as_str(self) -> &'static str {
        match self {
            OnExhausted::FinishStuck => "finish_stuck",
            OnExhausted::PauseAsk => "pause_ask",
        }
    }
}

/// How a revised mission's compute bounds count (`compute.countBounds`): each run
/// afresh (`per_run`, the default: `maxToolCalls`, `maxTokens` and `maxChecks`
/// count from the revise), or over every run of the mission together (`total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CountBounds {
    #[default]
    PerRun,
    Total,
}

impl CountBounds {
    pub fn as_str(self) -> &'static str {
        match self {
            CountBounds::PerRun => "per_run",
            CountBounds::Total => "total",
        }
    }
}

/// Compute ceilings. Zero (or an empty list) means unbounded, so the default is
/// unbounded; bounds only ever restrict.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ComputeBounds {
    pub max_turns: u64,
    pub max_tool_calls: u64,
    pub max_tokens: u64,
    /// `maxCostUsd`, held in micro-dollars (0: unbounded) so the bound is a whole
    /// number like the others and the ledger's cost figures.
    pub max_cost_micro_usd: u64,
    pub model_allowlist: Vec<String>,
    pub backend_allowlist: Vec<String>,
    pub on_exhausted: OnExhausted,
    /// `maxChecks`: how many times a mission's check may run before it rests stuck
    /// (0: the default, [`DEFAULT_MAX_CHECKS`]).
    pub max_checks: u64,
    /// `countBounds`: how a revised mission's bounds count.
    pub count_bounds: CountBounds,
}

/// US dollars as whole micro-dollars (a negative or non-finite amount is none:
/// validation refused it before any decode reaches here).
pub fn micro_usd(usd: f64) -> u64 {
    if usd.is_finite() && usd > 0.0 {
        (usd * 1_000_000.0).round() as u64
    } else {
        0
    }
}

/// `maxChecks` of 0 (or omitted) means this many tries of the check.
pub const DEFAULT_MAX_CHECKS: u64 = 3;
pub const MAX_CHECKS_CAP: i64 = 100;
/// A check runs this long at most unless its `timeout` says otherwise.
pub const DEFAULT_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);
/// The longest `check.timeout` accepted: a longer one is a typo, not an intent.
pub const MAX_CHECK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(24 * 3600);
/// The longest check command accepted.
pub const MAX_CHECK_COMMAND_BYTES: usize = 4096;

impl ComputeBounds {
    /// How many tries of its check a mission gets.
    pub fn effective_max_checks(&self) -> u64 {
        if self.max_checks == 0 {
            DEFAULT_MAX_CHECKS
        } else {
            self.max_checks
        }
    }

    pub fn is_unbounded(&self) -> bool {
        self.max_turns == 0
            && self.max_tool_calls == 0
            && self.max_tokens == 0
            && self.max_cost_micro_usd == 0
            && self.model_allowlist.is_empty()
            && self.backend_allowlist.is_empty()
    }
}

/// Who may answer the unit's questions. Absent means a human only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AttentionBounds {
    pub allow_agent_answers: bool,
    pub max_agent_answers: i64,
}

impl AttentionBounds {
    /// `0` or omitted means the default cap, not unlimited and not zero.
    pub fn effective_max_agent_answers(&self) -> u32 {
        if self.max_agent_answers <= 0 {
            DEFAULT_MAX_AGENT_ANSWERS
        } else {
            u32::try_from(self.max_agent_answers).unwrap_or(u32::MAX)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub default_action: Action,
    pub rules: Vec<Rule>,
    pub compute: ComputeBounds,
    pub attention: Option<AttentionBounds>,
    pub trusted_binaries: Option<TrustedBinaries>,
    /// The `sandbox` block; `None`: the baseline ([`super::sandbox::SandboxDecl::baseline`]).
    pub sandbox: Option<super::sandbox::SandboxDecl>,
    /// `workspace`: where the unit works unless the fire says otherwise.
    pub workspace: super::sandbox::WorkspaceMode,
    /// `check`: what must pass before a mission under this envelope lands.
    pub check: Option<CheckDecl>,
}

/// An envelope's `check` block: the command run in the mission's workspace, under
/// its unit's confinement, when the unit finishes `landed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckDecl {
    pub command: String,
    /// `timeout` (absent: [`DEFAULT_CHECK_TIMEOUT`]).
    pub timeout: std::time::Duration,
    /// `optional`: a fire may skip it with `--no-check`.
    pub optional: bool,
}

impl Envelope {
    /// The sandbox the unit runs under: the declared block, else the baseline.
    pub fn sandbox_or_baseline(&self) -> super::sandbox::SandboxDecl {
        self.sandbox
            .clone()
            .unwrap_or_else(super::sandbox::SandboxDecl::baseline)
    }

    /// What a policy that failed to load evaluates as: every call asks, including
    /// reads, and there are no bounds and no attention grant. Never allow.
    pub fn builtin_default() -> Envelope {
        Envelope {
            default_action: Action::Approve,
            rules: Vec::new(),
            compute: ComputeBounds::default(),
            attention: None,
            trusted_binaries: None,
            sandbox: None,
            workspace: Default::default(),
            check: None,
        }
    }
}

/// Why a policy did not load. `Display` is the full user-facing message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvelopeError {
    name: String,
    kind: ErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKind {
    NotFound(String),
    Read(String),
    /// Every problem, in file order; the display shows the first and counts the
    /// rest, vet shows them all.
    Invalid(Vec<String>),
}

impl EnvelopeError {
    fn new(name: &str, kind: ErrorKind) -> EnvelopeError {
        EnvelopeError {
            name: name.to_string(),
            kind,
        }
    }

    /// For policy sources: the file is on no search-path directory.
    pub fn not_found(name: &str, cause: impl fmt::Display) -> EnvelopeError {
        EnvelopeError::new(name, ErrorKind::NotFound(cause.to_string()))
    }

    /// For policy sources: the file exists but could not be read.
    /// The file was read but refused: every message the validation found.
    pub(super) fn invalid(name: &str, messages: Vec<String>) -> EnvelopeError {
        EnvelopeError::new(name, ErrorKind::Invalid(messages))
    }

    pub fn read(name: &str, cause: impl fmt::Display) -> EnvelopeError {
        EnvelopeError::new(name, ErrorKind::Read(cause.to_string()))
    }

    pub fn envelope_name(&self) -> &str {
        &self.name
    }

    /// The bare validation messages (no `invalid hitl policy` wrapper); empty when
    /// the file could not be found or read.
    pub fn validation_messages(&self) -> &[String] {
        match &self.kind {
            ErrorKind::Invalid(messages) => messages,
            _ => &[],
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self.kind, ErrorKind::NotFound(_))
    }
}

impl fmt::Display for EnvelopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = quote(&self.name);
        match &self.kind {
            ErrorKind::NotFound(cause) => write!(f, "hitl policy {name} not found: {cause}"),
            ErrorKind::Read(cause) => write!(f, "read hitl policy {name}: {cause}"),
            ErrorKind::Invalid(messages) => {
                let first = messages.first().map(String::as_str).unwrap_or("");
                write!(f, "invalid hitl policy {name}: {first}")?;
                match messages.len() {
                    0 | 1 => Ok(()),
                    n => write!(
                        f,
                        " (and {} more; `missionboard vet` on this file lists them all)",
                        n - 1
                    ),
                }
            }
        }
    }
}

impl std::error::Error for EnvelopeError {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<Envelope, EnvelopeError> {
        Envelope::parse("x.json", v.to_string().as_bytes())
    }

    fn parse_str(s: &str) -> Result<Envelope, EnvelopeError> {
        Envelope::parse("x.json", s.as_bytes())
    }

    fn err(v: serde_json::Value) -> String {
        parse(v).expect_err("policy must not load").to_string()
    }

    #[test]
    fn builtin_default_asks_for_everything() {
        let p = Envelope::builtin_default();
        assert_eq!(p.default_action, Action::Approve);
        assert!(p.rules.is_empty());
        assert_eq!(p.compute, ComputeBounds::default());
        assert!(p.attention.is_none() && p.trusted_binaries.is_none());
    }

    #[test]
    fn full_policy_round_trips() {
        let p = parse(json!({
            "//": "comment",
            "$schema": "https://example.invalid/schema.json",
            "version": 1,
            "default_action": "deny",
            "rules": [
                {"//": "why", "tools": "local_fs", "tool": "*", "action": "deny",
                 "when": [{"key": "path", "op": "glob", "value": "**/{.ssh,.aws}/**", "//": "x"}]},
                {"tools": "local_shell", "tool": "local_shell", "action": "approve",
                 "timeout_s": 1800, "on_timeout": "deny"}
            ],
            "compute": {"maxTurns": 1, "maxToolCalls": 300, "maxTokens": 2000000,
                        "modelAllowlist": ["m1"], "backendAllowlist": ["b1", "b2"],
                        "onExhausted": "pause_ask"},
            "attention": {"allowAgentAnswers": true, "maxAgentAnswers": 5},
            "trusted_binaries": {"dirs": ["/usr/bin"], "hashes": {"/usr/bin/go": "ab".repeat(32)}}
        }))
        .unwrap();
        assert_eq!(p.default_action, Action::Deny);
        assert_eq!(
            p.rules[0],
            Rule {
                tools: "local_fs".into(),
                tool: "*".into(),
                when: vec![Condition {
                    key: "path".into(),
                    op: Op::Glob,
                    value: "**/{.ssh,.aws}/**".into(),
                    glob: Some(Glob::new("**/{.ssh,.aws}/**").unwrap()),
                }],
                action: Action::Deny,
                timeout_s: 0,
                on_timeout: Action::Deny,
            }
        );
        assert_eq!(
            (p.rules[1].timeout_s, p.rules[1].on_timeout),
            (1800, Action::Deny)
        );
        assert_eq!(
            p.compute,
            ComputeBounds {
                max_turns: 1,
                max_tool_calls: 300,
                max_tokens: 2_000_000,
                max_cost_micro_usd: 0,
                model_allowlist: vec!["m1".into()],
                backend_allowlist: vec!["b1".into(), "b2".into()],
                on_exhausted: OnExhausted::PauseAsk,
                max_checks: 0,
                count_bounds: CountBounds::PerRun,
            }
        );
        assert_eq!(
            p.attention.as_ref().unwrap().effective_max_agent_answers(),
            5
        );
        let t = p.trusted_binaries.unwrap();
        assert!(t.is_enforced());
        assert!(t.covers("/usr/bin/go") && !t.covers("/usr/local/bin/go"));
    }

    #[test]
    fn absent_compute_is_unbounded_and_attention_defaults() {
        let p = parse(json!({"rules": []})).unwrap();
        assert!(p.compute.is_unbounded());
        assert_eq!(p.compute.on_exhausted, OnExhausted::FinishStuck);
        let a = AttentionBounds::default();
        assert_eq!(a.effective_max_agent_answers(), 3);
        let a = AttentionBounds {
            allow_agent_answers: true,
            max_agent_answers: 0,
        };
        assert_eq!(a.effective_max_agent_answers(), 3);
        assert!(!TrustedBinaries::default().is_enforced());
        // An envelope is an object; a bare `null` is not one.
        assert_eq!(
            parse_str("null").unwrap_err().to_string(),
            r#"invalid hitl policy "x.json": not a JSON object: got null"#
        );
    }

    /// What Go's decoder would have read leniently (folded case, last duplicate,
    /// ignored keys) widens the envelope, so each refuses the load and names the
    /// field.
    #[test]
    fn unknown_case_variant_and_duplicate_fields_refuse_the_load() {
        let known_rule = "tools, tool, when, action, timeout_s, on_timeout";
        let comments = "(keys starting with // are comments; $schema is allowed)";
        let cases = [
            (
                r#"{"rules":[{"action":"deny"},{"tools":"local_fs","action":"allow","wehn":[{"key":"path","op":"glob","value":"/tmp/**"}]}]}"#,
                format!(
                    r#"rule 1: unknown field "wehn" at rules[1].wehn — known fields: {known_rule} {comments}"#
                ),
            ),
            (
                r#"{"Default_Action":"deny"}"#,
                format!(
                    r#"policy: unknown field "Default_Action" at Default_Action — known fields: default_action, rules, compute, attention, trusted_binaries, version, sandbox, workspace, check {comments}"#
                ),
            ),
            (
                r#"{"rules":[{"action":"deny","when":[{"key":"path","op":"eq","valeu":"x"}]}]}"#,
                format!(
                    r#"rule 0, condition 0: unknown field "valeu" at rules[0].when[0].valeu — known fields: key, op, value {comments}"#
                ),
            ),
            (
                r#"{"attention":{"maxAgentAnswer":5,"allowAgentAnswers":true}}"#,
                format!(
                    r#"attention: unknown field "maxAgentAnswer" at attention.maxAgentAnswer — known fields: allowAgentAnswers, maxAgentAnswers {comments}"#
                ),
            ),
            (
                r#"{"default_action":"deny","default_action":"allow"}"#,
                r#"policy: duplicate field "default_action" at default_action — only one copy would count; write it once"#.to_string(),
            ),
            (
                r#"{"rules":[{"action":"deny","action":"allow"}]}"#,
                r#"rule 0: duplicate field "action" at rules[0].action — only one copy would count; write it once"#.to_string(),
            ),
            (
                r#"{"compute":{"maxTokens":5,"maxTokens":0}}"#,
                r#"compute: duplicate field "maxTokens" at compute.maxTokens — only one copy would count; write it once"#.to_string(),
            ),
        ];
        for (doc, want) in cases {
            let e = parse_str(doc).expect_err(doc);
            assert_eq!(
                e.validation_messages(),
                std::slice::from_ref(&want),
                "{doc}"
            );
            assert_eq!(
                e.to_string(),
                format!("invalid hitl policy \"x.json\": {want}")
            );
        }
        // Comment keys may repeat: they carry notes, never data.
        assert!(parse_str(r#"{"//":"a","//":"b","rules":[{"//":"c","action":"deny"}]}"#).is_ok());
    }

    #[test]
    fn a_refusal_with_several_problems_counts_the_rest() {
        let e = parse(json!({"defaults": 1, "default_action": "maybe"})).unwrap_err();
        assert_eq!(e.validation_messages().len(), 2);
        assert!(
            e.to_string()
                .ends_with(" (and 1 more; `missionboard vet` on this file lists them all)"),
            "{e}"
        );
    }

    #[test]
    fn wrong_json_types_and_shapes_refuse_the_load() {
        for doc in [
            json!({"attention": {"maxAgentAnswers": "3"}}),
            json!({"attention": {"maxAgentAnswers": 3.5}}),
            json!({"attention": {"allowAgentAnswers": "true"}}),
            json!({"rules": [{"action": 1}]}),
            json!({"rules": [{"action": "approve", "timeout_s": "30"}]}),
            json!({"rules": [{"action": "allow", "when": [{"key": "k", "op": "eq", "value": 3}]}]}),
            json!({"compute": {"maxTokens": 1e3}}),
            json!({"compute": {"modelAllowlist": "m"}}),
            json!({"compute": {"modelAllowlist": [1]}}),
            json!({"default_action": true}),
            json!({"version": "1"}),
            json!({"trusted_binaries": {"hashes": {"/x": 1}}}),
        ] {
            let e = err(doc.clone());
            assert!(
                e.starts_with(
                    "invalid hitl policy \"x.json\": policy does not parse: json: cannot unmarshal"
                ),
                "{doc}: {e}"
            );
        }
        assert_eq!(
            err(json!({"attention": {"maxAgentAnswers": 3.5}})),
            "invalid hitl policy \"x.json\": policy does not parse: json: cannot unmarshal number 3.5 into field attention.maxAgentAnswers of type int"
        );
        for (doc, want) in [
            (
                json!({"rules": {}}),
                "rules: must be an array of rule objects: got object",
            ),
            (
                json!({"rules": ["allow"]}),
                "rule 0: must be an object: got string",
            ),
            (
                json!({"rules": [{"action": "allow", "when": {"key": "k"}}]}),
                "rule 0: when must be an array of {key, op, value} conditions: got object",
            ),
            (
                json!({"compute": []}),
                "compute: must be an object: got array",
            ),
            (json!([1]), "not a JSON object: got array"),
        ] {
            assert_eq!(err(doc), format!("invalid hitl policy \"x.json\": {want}"));
        }
        assert!(
            parse_str("{not json")
                .unwrap_err()
                .to_string()
                .starts_with("invalid hitl policy \"x.json\": not a JSON object: ")
        );
        assert!(parse_str(r#"{"compute":{"maxTokens":99999999999999999999}}"#).is_err());
    }

    #[test]
    fn a_typo_in_a_bounds_block_fails_the_whole_policy() {
        let unknown = |section: &str, key: &str, known: &str| {
            format!(
                r#"invalid hitl policy "x.json": {section}: unknown field "{key}" at {section}.{key} — known fields: {known} (keys starting with // are comments; $schema is allowed)"#
            )
        };
        let compute = "maxTurns, maxToolCalls, maxTokens, maxCostUsd, modelAllowlist, backendAllowlist, onExhausted, maxChecks, countBounds";
        assert_eq!(
            err(json!({"compute": {"maxTurn": 1}})),
            unknown("compute", "maxTurn", compute)
        );
        assert_eq!(
            err(json!({"compute": {"maxTokens": 5, "onExhaust": "finish_stuck"}})),
            unknown("compute", "onExhaust", compute)
        );
        assert_eq!(
            err(json!({"trusted_binaries": {"dir": ["/usr/bin"]}})),
            unknown("trusted_binaries", "dir", "dirs, hashes")
        );
        // Comment keys are not typos, so every block takes them.
        assert!(parse(json!({"compute": {"//": "note", "$schema": "x"}})).is_ok());
    }

    #[test]
    fn validation_messages_are_verbatim() {
        let cases = [
            (
                json!({"default_action": "maybe"}),
                r#"unknown default_action "maybe""#,
            ),
            (
                json!({"rules": [{"action": "permit"}]}),
                r#"rule 0: unknown action "permit""#,
            ),
            (
                json!({"rules": [{"tool": "x"}]}),
                r#"rule 0: unknown action """#,
            ),
            (
                json!({"rules": [{"action": "allow"}, {"action": "approve", "on_timeout": "allow"}]}),
                r#"rule 1: on_timeout="allow" is not permitted (would silently bypass approval)"#,
            ),
            (
                json!({"rules": [{"action": "approve", "on_timeout": "later"}]}),
                r#"rule 0: unknown on_timeout "later""#,
            ),
            (
                json!({"rules": [{"action": "allow", "when": [{"key": "k", "op": "eq"}, {"key": "k", "op": "like"}]}]}),
                r#"rule 0, condition 1: unknown op "like""#,
            ),
            (
                json!({"rules": [{"action": "approve", "timeout_s": -1}]}),
                "rule 0: timeout_s -1 is not a wait; write a positive number of seconds, or zero to leave the ask on the operator's approval ceiling",
            ),
            (
                json!({"version": 2}),
                "policy declares version 2 but this binary knows only 1 — update missionboard to load it",
            ),
            (
                json!({"version": -1}),
                "policy declares version -1 but this binary knows only 1 — update missionboard to load it",
            ),
            (
                json!({"attention": {"maxAgentAnswers": -1}}),
                "attention.maxAgentAnswers must not be negative",
            ),
            (
                json!({"attention": {"maxAgentAnswers": 1001}}),
                "attention.maxAgentAnswers 1001 exceeds the sanity ceiling 1000",
            ),
            (
                json!({"trusted_binaries": {"dirs": ["bin"]}}),
                r#"trusted_binaries: dirs entry 0 ("bin") is not an absolute path — write the full directory path"#,
            ),
            (
                json!({"trusted_binaries": {"dirs": ["/bin"], "hashes": {"/bin/ls": "xyz"}}}),
                r#"trusted_binaries: hash for "/bin/ls" is not a sha256 hex digest (64 hex digits)"#,
            ),
        ];
        for (doc, want) in cases {
            let e = parse(doc.clone()).expect_err("must not load");
            assert_eq!(e.validation_messages(), [want.to_string()], "{doc}");
            assert_eq!(
                e.to_string(),
                format!("invalid hitl policy \"x.json\": {want}")
            );
        }
        for v in [0, 1] {
            assert!(parse(json!({"version": v})).is_ok());
        }
    }

    #[test]
    fn compute_validation_matrix() {
        let bad = |compute: serde_json::Value| -> Vec<String> {
            parse(json!({"compute": compute}))
                .expect_err("must not load")
                .validation_messages()
                .to_vec()
        };
        let one = |compute: serde_json::Value, want: &str| {
            assert_eq!(bad(compute.clone()), [want.to_string()], "{compute}");
        };
        one(
            json!({"maxTurns": -1}),
            "compute: maxTurns must not be negative (got -1)",
        );
        one(
            json!({"maxTurns": 1001}),
            "compute: maxTurns is out of range (got 1001, max 1000)",
        );
        one(
            json!({"maxTurns": 1000000}),
            "compute: maxTurns is out of range (got 1000000, max 1000)",
        );
        one(
            json!({"maxToolCalls": -5}),
            "compute: maxToolCalls must not be negative (got -5)",
        );
        one(
            json!({"maxToolCalls": 10_000_001}),
            "compute: maxToolCalls is out of range (got 10000001, max 10000000)",
        );
        one(
            json!({"maxTokens": -1}),
            "compute: maxTokens must not be negative (got -1)",
        );
        one(
            json!({"maxTokens": 100_000_000_001_i64}),
            "compute: maxTokens is out of range (got 100000000001, max 100000000000)",
        );
        one(
            json!({"onExhausted": "stop"}),
            r#"compute: unknown onExhausted "stop" (must be finish_stuck or pause_ask)"#,
        );
        one(
            json!({"modelAllowlist": vec!["m"; 257]}),
            "compute: modelAllowlist has too many entries (257, max 256)",
        );
        one(
            json!({"backendAllowlist": ["ok", "  "]}),
            "compute: backendAllowlist entry 1 is empty",
        );
        one(
            json!({"modelAllowlist": ["x".repeat(513)]}),
            "compute: modelAllowlist entry 0 exceeds max length (513 bytes, max 512)",
        );
        // Several problems are all reported, in order.
        assert_eq!(
            bad(json!({"maxTurns": -1, "maxTokens": -2, "onExhausted": "x"})),
            [
                "compute: maxTurns must not be negative (got -1)",
                "compute: maxTokens must not be negative (got -2)",
                r#"compute: unknown onExhausted "x" (must be finish_stuck or pause_ask)"#,
            ]
        );

        for good in [
            json!({}),
            json!({"maxTurns": 0}),
            json!({"maxTurns": 1}),
            json!({"maxTurns": 2}),
            json!({"maxTurns": 1000}),
            json!({"maxToolCalls": 10_000_000}),
            json!({"maxTokens": 100_000_000_000_i64}),
            json!({"onExhausted": ""}),
            json!({"onExhausted": "finish_stuck"}),
            json!({"onExhausted": "pause_ask"}),
            json!({"modelAllowlist": vec!["m"; 256]}),
            json!({"backendAllowlist": ["y".repeat(512)]}),
        ] {
            assert!(parse(json!({"compute": good.clone()})).is_ok(), "{good}");
        }
    }

    #[test]
    fn glob_values_are_validated_at_load() {
        let e = parse(json!({"rules": [{"action": "deny", "when": [
            {"key": "path", "op": "eq", "value": "{"},
            {"key": "path", "op": "glob", "value": "a}"}
        ]}]}))
        .unwrap_err();
        assert_eq!(
            e.validation_messages(),
            [r#"rule 0, condition 1: unbalanced '}' in glob "a}""#]
        );
    }

    #[test]
    fn source_errors_read_like_the_loader() {
        assert_eq!(
            EnvelopeError::not_found("hitl-policy-x.json", "no such file").to_string(),
            r#"hitl policy "hitl-policy-x.json" not found: no such file"#
        );
        assert_eq!(
            EnvelopeError::read("p", "denied").to_string(),
            r#"read hitl policy "p": denied"#
        );
        assert!(EnvelopeError::not_found("p", "x").is_not_found());
        assert!(
            EnvelopeError::read("p", "x")
                .validation_messages()
                .is_empty()
        );
    }
}
