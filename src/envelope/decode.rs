//! The Go-compatible decoder: the typed decode of a JSON tree ([`Json`]) into a not
//! yet validated policy. Wrong JSON types are
//! decode errors worded like Go `encoding/json`'s, so envelopes written for the Go
//! runtime fail here the same way.

use std::collections::BTreeMap;

use super::format::{
    Action, AttentionBounds, CheckDecl, ComputeBounds, Condition, DEFAULT_CHECK_TIMEOUT, Envelope,
    OnExhausted, Op, Rule, TrustedBinaries,
};
use super::glob::{Glob, GlobError};
use super::json::{Json, Num};
use super::quote::quote;

/// The value of field `name`. Validation has already refused case variants and
/// duplicates, so the key is exact and unique. A JSON `null` leaves a scalar at its
/// zero value, as in Go; for arrays and objects a `null` means absent.
fn field<'a>(obj: &'a [(String, Json)], name: &str, scalar: bool) -> Option<&'a Json> {
    let mut found = None;
    for (k, v) in obj {
        if k == name {
            if scalar && matches!(v, Json::Null) {
                continue;
            }
            found = Some(v);
        }
    }
    match found {
        Some(Json::Null) => None,
        other => other,
    }
}

fn type_error(value: &Json, path: &str, want: &str) -> String {
    match value {
        Json::Num(n) => {
            format!("json: cannot unmarshal number {n} into field {path} of type {want}")
        }
        other => format!(
            "json: cannot unmarshal {} into field {path} of type {want}",
            other.type_name()
        ),
    }
}

fn decode_string(obj: &[(String, Json)], name: &str, path: &str) -> Result<String, String> {
    match field(obj, name, true) {
        None => Ok(String::new()),
        Some(Json::Str(s)) => Ok(s.clone()),
        Some(other) => Err(type_error(other, path, "string")),
    }
}

fn decode_int(obj: &[(String, Json)], name: &str, path: &str) -> Result<i64, String> {
    match field(obj, name, true) {
        None => Ok(0),
        Some(Json::Num(Num::Int(i))) => Ok(*i),
        Some(other) => Err(type_error(other, path, "int")),
    }
}

/// A number that may have a fraction (an amount of money).
fn decode_number(obj: &[(String, Json)], name: &str, path: &str) -> Result<f64, String> {
    match field(obj, name, true) {
        None => Ok(0.0),
        Some(Json::Num(Num::Int(i))) => Ok(*i as f64),
        Some(Json::Num(Num::Float(x))) => Ok(*x),
        Some(other) => Err(type_error(other, path, "float64")),
    }
}

fn decode_bool(obj: &[(String, Json)], name: &str, path: &str) -> Result<bool, String> {
    match field(obj, name, true) {
        None => Ok(false),
        Some(Json::Bool(b)) => Ok(*b),
        Some(other) => Err(type_error(other, path, "bool")),
    }
}

fn decode_object<'a>(
    obj: &'a [(String, Json)],
    name: &str,
    path: &str,
) -> Result<Option<&'a [(String, Json)]>, String> {
    match field(obj, name, false) {
        None => Ok(None),
        Some(Json::Obj(entries)) => Ok(Some(entries)),
        Some(other) => Err(type_error(other, path, "object")),
    }
}

fn decode_array<'a>(
    obj: &'a [(String, Json)],
    name: &str,
    path: &str,
) -> Result<&'a [Json], String> {
    match field(obj, name, false) {
        None => Ok(&[]),
        Some(Json::Arr(items)) => Ok(items),
        Some(other) => Err(type_error(other, path, "array")),
    }
}

fn decode_string_list(
    obj: &[(String, Json)],
    name: &str,
    path: &str,
) -> Result<Vec<String>, String> {
    decode_array(obj, name, path)?
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Json::Str(s) => Ok(s.clone()),
            // Go leaves a null slice element at its zero value.
            Json::Null => Ok(String::new()),
            other => Err(type_error(other, &format!("{path}[{i}]"), "string")),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The decoded, not yet validated policy. Actions stay strings here so that
// validation can name the exact text the file carries.

#[derive(Debug, Clone, Default)]
pub(crate) struct RawEnvelope {
    pub(crate) version: i64,
    pub(crate) default_action: String,
    pub(crate) rules: Vec<RawRule>,
    pub(crate) compute: Option<RawCompute>,
    pub(crate) attention: Option<AttentionBounds>,
    pub(crate) trusted_binaries: Option<TrustedBinaries>,
    pub(crate) sandbox: Option<super::sandbox::SandboxDecl>,
    pub(crate) workspace: super::sandbox::WorkspaceMode,
    pub(crate) check: Option<RawCheck>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RawCheck {
    pub(crate) command: String,
    pub(crate) timeout: String,
    pub(crate) optional: bool,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RawRule {
    pub(crate) tools: String,
    pub(crate) tool: String,
    pub(crate) when: Vec<RawCondition>,
    pub(crate) action: String,
    pub(crate) timeout_s: i64,
    pub(crate) on_timeout: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RawCondition {
    pub(crate) key: String,
    pub(crate) op: String,
    pub(crate) value: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RawCompute {
    pub(crate) max_turns: i64,
    pub(crate) max_tool_calls: i64,
    pub(crate) max_tokens: i64,
    /// `maxCostUsd` in US dollars (0 when absent).
    pub(crate) max_cost_usd: f64,
    pub(crate) model_allowlist: Vec<String>,
    pub(crate) backend_allowlist: Vec<String>,
    pub(crate) on_exhausted: String,
    pub(crate) max_checks: i64,
    pub(crate) count_bounds: String,
}

/// The typed decode of a document whose keys and shapes validation has passed: a
/// wrong JSON type is an error worded like Go's.
pub(crate) fn decode_envelope(top: &[(String, Json)]) -> Result<RawEnvelope, String> {
    let mut raw = RawEnvelope {
        version: decode_int(top, "version", "version")?,
        default_action: decode_string(top, "default_action", "default_action")?,
        ..RawEnvelope::default()
    };
    for (i, item) in decode_array(top, "rules", "rules")?.iter().enumerate() {
        raw.rules.push(decode_rule(item, i)?);
    }
    if let Some(c) = decode_object(top, "compute", "compute")? {
        raw.compute = Some(RawCompute {
            max_turns: decode_int(c, "maxTurns", "compute.maxTurns")?,
            max_tool_calls: decode_int(c, "maxToolCalls", "compute.maxToolCalls")?,
            max_tokens: decode_int(c, "maxTokens", "compute.maxTokens")?,
            max_cost_usd: decode_number(c, "maxCostUsd", "compute.maxCostUsd")?,
            model_allowlist: decode_string_list(c, "modelAllowlist", "compute.modelAllowlist")?,
            backend_allowlist: decode_string_list(
                c,
                "backendAllowlist",
                "compute.backendAllowlist",
            )?,
            on_exhausted: decode_string(c, "onExhausted", "compute.onExhausted")?,
            max_checks: decode_int(c, "maxChecks", "compute.maxChecks")?,
            count_bounds: decode_string(c, "countBounds", "compute.countBounds")?,
        });
    }
    if let Some(a) = decode_object(top, "attention", "attention")? {
        raw.attention = Some(AttentionBounds {
            allow_agent_answers: decode_bool(
                a,
                "allowAgentAnswers",
                "attention.allowAgentAnswers",
            )?,
            max_agent_answers: decode_int(a, "maxAgentAnswers", "attention.maxAgentAnswers")?,
        });
    }
    if let Some(t) = decode_object(top, "trusted_binaries", "trusted_binaries")? {
        let mut trusted = TrustedBinaries {
            dirs: decode_string_list(t, "dirs", "trusted_binaries.dirs")?,
            hashes: BTreeMap::new(),
        };
        if let Some(h) = decode_object(t, "hashes", "trusted_binaries.hashes")? {
            for (path, hash) in h {
                match hash {
                    Json::Str(s) => {
                        trusted.hashes.insert(path.clone(), s.clone());
                    }
                    Json::Null => {
                        trusted.hashes.insert(path.clone(), String::new());
                    }
                    other => {
                        return Err(type_error(
                            other,
                            &format!("trusted_binaries.hashes[{}]", quote(path)),
                            "string",
                        ));
                    }
                }
            }
        }
        raw.trusted_binaries = Some(trusted);
    }
    if let Some(c) = decode_object(top, "check", "check")? {
        raw.check = Some(RawCheck {
            command: decode_string(c, "command", "check.command")?,
            timeout: decode_string(c, "timeout", "check.timeout")?,
            optional: decode_bool(c, "optional", "check.optional")?,
        });
    }
    if let Some(s) = field(top, "sandbox", false) {
        raw.sandbox = Some(super::sandbox::decode(s)?);
    }
    if let Some(w) = field(top, "workspace", true) {
        raw.workspace = super::sandbox::decode_workspace(w)?;
    }
    Ok(raw)
}

fn decode_rule(item: &Json, i: usize) -> Result<RawRule, String> {
    let path = format!("rules[{i}]");
    let Some(r) = item.as_obj() else {
        // Go decodes a null element to the zero rule, which then fails validation.
        if matches!(item, Json::Null) {
            return Ok(RawRule::default());
        }
        return Err(type_error(item, &path, "rule object"));
    };
    let mut rule = RawRule {
        tools: decode_string(r, "tools", &format!("{path}.tools"))?,
        tool: decode_string(r, "tool", &format!("{path}.tool"))?,
        action: decode_string(r, "action", &format!("{path}.action"))?,
        timeout_s: decode_int(r, "timeout_s", &format!("{path}.timeout_s"))?,
        on_timeout: decode_string(r, "on_timeout", &format!("{path}.on_timeout"))?,
        when: Vec::new(),
    };
    let when_path = format!("{path}.when");
    for (j, c) in decode_array(r, "when", &when_path)?.iter().enumerate() {
        let cpath = format!("{when_path}[{j}]");
        let cond = match c {
            Json::Null => RawCondition::default(),
            Json::Obj(entries) => RawCondition {
                key: decode_string(entries, "key", &format!("{cpath}.key"))?,
                op: decode_string(entries, "op", &format!("{cpath}.op"))?,
                value: decode_string(entries, "value", &format!("{cpath}.value"))?,
            },
            other => return Err(type_error(other, &cpath, "condition object")),
        };
        rule.when.push(cond);
    }
    Ok(rule)
}

impl RawEnvelope {
    /// Only called after validation passed, so unknown actions and malformed globs
    /// cannot occur; the fallbacks are the fail-closed choice all the same, and a
    /// glob that does not compile refuses the policy rather than drop its rule.
    pub(crate) fn into_envelope(self) -> Result<Envelope, GlobError> {
        let default_action = Action::parse(&self.default_action).unwrap_or(Action::Approve);
        let mut rules = Vec::with_capacity(self.rules.len());
        for r in self.rules {
            let mut when = Vec::with_capacity(r.when.len());
            for c in r.when {
                let op = Op::parse(&c.op).unwrap_or(Op::Eq);
                let glob = match op {
                    Op::Glob => Some(Glob::new(&c.value)?),
                    _ => None,
                };
                when.push(Condition {
                    key: c.key,
                    op,
                    value: c.value,
                    glob,
                });
            }
            rules.push(Rule {
                when,
                action: Action::parse(&r.action).unwrap_or(Action::Approve),
                timeout_s: r.timeout_s,
                on_timeout: Action::parse(&r.on_timeout).unwrap_or(Action::Deny),
                tools: r.tools,
                tool: r.tool,
            });
        }
        let compute = self
            .compute
            .map(|c| ComputeBounds {
                max_turns: c.max_turns.max(0) as u64,
                max_tool_calls: c.max_tool_calls.max(0) as u64,
                max_tokens: c.max_tokens.max(0) as u64,
                max_cost_micro_usd: crate::envelope::format::micro_usd(c.max_cost_usd),
                model_allowlist: c.model_allowlist,
                backend_allowlist: c.backend_allowlist,
                on_exhausted: if c.on_exhausted == "pause_ask" {
                    OnExhausted::PauseAsk
                } else {
                    OnExhausted::FinishStuck
                },
                max_checks: c.max_checks.max(0) as u64,
                count_bounds: if c.count_bounds == "total" {
                    crate::envelope::format::CountBounds::Total
                } else {
                    crate::envelope::format::CountBounds::PerRun
                },
            })
            .unwrap_or_default();
        Ok(Envelope {
            default_action,
            rules,
            compute,
            attention: self.attention,
            trusted_binaries: self.trusted_binaries,
            sandbox: self.sandbox,
            workspace: self.workspace,
            check: self.check.map(|c| CheckDecl {
                command: c.command.trim().to_string(),
                // Validation refused a timeout that does not parse.
                timeout: match c.timeout.trim() {
                    "" => DEFAULT_CHECK_TIMEOUT,
                    t => crate::duration::parse(t).unwrap_or(DEFAULT_CHECK_TIMEOUT),
                },
                optional: c.optional,
            }),
        })
    }
}
