//! Envelope validation: the one function, [`check`], through which both the loader
//! (`mission fire`, the board, the fleet) and `missionboard vet` pass a file, so the
//! two can never disagree. An envelope never widens by mistake: an unknown field at
//! any level (a misspelt `when` would otherwise turn a rule unconditional), a case
//! variant of a field, a duplicate field (only one copy would count), a value of the
//! wrong type and a rule that can never match are all refused.
//!
//! Rule and condition indices in messages are 0-based, as in the Go loop index the
//! message formats come from.

use super::decode::{RawCheck, RawCompute, RawEnvelope, RawRule, decode_envelope};
use super::format::{
    Action, Envelope, EnvelopeError, MAX_AGENT_ANSWERS_CEILING, MAX_ALLOWLIST_ENTRIES,
    MAX_ALLOWLIST_ENTRY_BYTES, MAX_CHECK_COMMAND_BYTES, MAX_CHECK_TIMEOUT, MAX_CHECKS_CAP,
    MAX_COST_USD_CAP, MAX_TOKENS_CAP, MAX_TOOL_CALLS_CAP, MAX_TURNS_CAP, Op, POLICY_VERSION,
    TrustedBinaries,
};
use super::glob;
use super::json::{Json, is_annotation_key, parse_object};
use super::quote::quote;

/// Every top-level field an envelope may carry, in the order messages list them,
/// with the fields of each object block. A new block is one entry here (and its
/// decode).
const TOP_LEVEL: &[(&str, Option<&[&str]>)] = &[
    ("default_action", None),
    ("rules", None),
    (
        "compute",
        Some(&[
            "maxTurns",
            "maxToolCalls",
            "maxTokens",
            "maxCostUsd",
            "modelAllowlist",
            "backendAllowlist",
            "onExhausted",
            "maxChecks",
            "countBounds",
        ]),
    ),
    ("attention", Some(&["allowAgentAnswers", "maxAgentAnswers"])),
    ("trusted_binaries", Some(&["dirs", "hashes"])),
    ("version", None),
    ("sandbox", Some(&["filesystem", "network"])),
    ("workspace", None),
    ("check", Some(&["command", "timeout", "optional"])),
];
const RULE_FIELDS: &[&str] = &["tools", "tool", "when", "action", "timeout_s", "on_timeout"];
const CONDITION_FIELDS: &[&str] = &["key", "op", "value"];

/// Seven days: a longer wait is a typo, not an intent.
pub const MAX_RULE_TIMEOUT_S: i64 = 604_800;

/// Checks an envelope file's bytes and decodes it. `Err` holds every problem
/// found, in file order, each naming the field it is about.
pub(crate) fn check(bytes: &[u8]) -> Result<RawEnvelope, Vec<String>> {
    let top = parse_object(bytes).map_err(|e| vec![e])?;
    let mut errs = Vec::new();
    // A shape error already says why the decode would fail; repeating it as a
    // decode error would only say it twice.
    if !check_shapes(&top, &mut errs) {
        return Err(errs);
    }
    let raw = match decode_envelope(&top) {
        Ok(raw) => raw,
        Err(e) => {
            errs.push(format!("policy does not parse: {e}"));
            return Err(errs);
        }
    };
    validate(&raw, &mut errs);
    check_rule_semantics(&raw, &mut errs);
    check_never_matching(&raw, &mut errs);
    if errs.is_empty() { Ok(raw) } else { Err(errs) }
}

impl Envelope {
    /// Loads a policy file's bytes: the one validation `missionboard vet` runs too
    /// ([`check`]), the Go-compatible decode, and every glob compiled once. `name`
    /// only labels errors: give the file's path, so the operator knows which copy
    /// to fix.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Envelope, EnvelopeError> {
        let invalid = |messages| EnvelopeError::invalid(name, messages);
        check(bytes)
            .map_err(invalid)?
            .into_envelope()
            .map_err(|e| invalid(vec![e.to_string()]))
    }
}

/// Exact keys, each once. `prefix` names the object as messages do (`rule 2`),
/// `path` as a field path (`rules[2]`; empty at the top level).
pub(crate) fn check_keys(
    prefix: &str,
    path: &str,
    entries: &[(String, Json)],
    known: &[&str],
    errs: &mut Vec<String>,
) {
    for (k, _) in entries {
        if !is_annotation_key(k) && !known.contains(&k.as_str()) {
            errs.push(format!(
                "{prefix}: unknown field {} at {} — known fields: {} (keys starting with // are comments; $schema is allowed)",
                quote(k),
                field_path(path, k),
                known.join(", ")
            ));
        }
    }
    check_duplicates(prefix, path, entries, known, errs);
}

/// A field given twice: JSON decoders keep one copy and silently drop the other,
/// so the file would not say what it means. `only` limits the check to those keys
/// (unknown keys are reported as such); empty means every key.
fn check_duplicates(
    prefix: &str,
    path: &str,
    entries: &[(String, Json)],
    only: &[&str],
    errs: &mut Vec<String>,
) {
    for (i, (k, _)) in entries.iter().enumerate() {
        let counted = !is_annotation_key(k) && (only.is_empty() || only.contains(&k.as_str()));
        // Reported once, at the second copy.
        if counted && entries[..i].iter().filter(|(e, _)| e == k).count() == 1 {
            errs.push(format!(
                "{prefix}: duplicate field {} at {} — only one copy would count; write it once",
                quote(k),
                field_path(path, k)
            ));
        }
    }
}

fn field_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Exact keys at every level plus the container shapes. Returns whether every
/// container had the right shape.
fn check_shapes(top: &[(String, Json)], errs: &mut Vec<String>) -> bool {
    let mut shapes_ok = true;
    let mut shape_error = |errs: &mut Vec<String>, msg: String| {
        shapes_ok = false;
        errs.push(msg);
    };
    let known: Vec<&str> = TOP_LEVEL.iter().map(|(name, _)| *name).collect();
    check_keys("policy", "", top, &known, errs);
    for (key, value) in top {
        let block = TOP_LEVEL
            .iter()
            .find(|(name, _)| name == key)
            .and_then(|(_, fields)| *fields);
        match (key.as_str(), value, block) {
            (_, Json::Null, _) => {}
            ("rules", Json::Arr(rules), _) => {
                for (i, rule) in rules.iter().enumerate() {
                    if let Err(msg) = check_rule_shape(i, rule, errs) {
                        shape_error(errs, msg);
                    }
                }
            }
            ("rules", other, _) => shape_error(
                errs,
                format!(
                    "rules: must be an array of rule objects: got {}",
                    other.type_name()
                ),
            ),
            (name, Json::Obj(entries), Some(known)) => {
                check_keys(name, name, entries, known, errs);
                if name == "trusted_binaries"
                    && let Some((_, hashes)) = entries.iter().rev().find(|(k, _)| k == "hashes")
                {
                    match hashes {
                        Json::Obj(h) => check_duplicates(
                            "trusted_binaries.hashes",
                            "trusted_binaries.hashes",
                            h,
                            &[],
                            errs,
                        ),
                        Json::Null => {}
                        other => shape_error(
                            errs,
                            format!(
                                "trusted_binaries.hashes: must be an object: got {}",
                                other.type_name()
                            ),
                        ),
                    }
                }
            }
            (name, other, Some(_)) => shape_error(
                errs,
                format!("{name}: must be an object: got {}", other.type_name()),
            ),
            _ => {}
        }
    }
    shapes_ok
}

/// One rule's keys and its `when` conditions. `Err` is a shape error.
fn check_rule_shape(i: usize, rule: &Json, errs: &mut Vec<String>) -> Result<(), String> {
    let Json::Obj(entries) = rule else {
        return Err(format!(
            "rule {i}: must be an object: got {}",
            rule.type_name()
        ));
    };
    check_keys(
        &format!("rule {i}"),
        &format!("rules[{i}]"),
        entries,
        RULE_FIELDS,
        errs,
    );
    for (key, when) in entries {
        if key != "when" {
            continue;
        }
        match when {
            Json::Null => {}
            Json::Arr(conds) => {
                for (j, cond) in conds.iter().enumerate() {
                    match cond {
                        Json::Obj(c) => check_keys(
                            &format!("rule {i}, condition {j}"),
                            &format!("rules[{i}].when[{j}]"),
                            c,
                            CONDITION_FIELDS,
                            errs,
                        ),
                        Json::Null => {}
                        other => {
                            return Err(format!(
                                "rule {i}, condition {j}: must be an object: got {}",
                                other.type_name()
                            ));
                        }
                    }
                }
            }
            other => {
                return Err(format!(
                    "rule {i}: when must be an array of {{key, op, value}} conditions: got {}",
                    other.type_name()
                ));
            }
        }
    }
    Ok(())
}

/// The value checks on a decoded policy, in file order.
fn validate(raw: &RawEnvelope, errs: &mut Vec<String>) {
    if raw.version != 0 && raw.version != POLICY_VERSION {
        errs.push(format!(
            "policy declares version {} but this binary knows only {POLICY_VERSION} — update missionboard to load it",
            raw.version
        ));
    }
    if !raw.default_action.is_empty() && Action::parse(&raw.default_action).is_none() {
        errs.push(format!(
            "unknown default_action {}",
            quote(&raw.default_action)
        ));
    }
    for (i, rule) in raw.rules.iter().enumerate() {
        validate_rule(i, rule, errs);
    }
    if let Some(c) = &raw.compute {
        validate_compute(c, errs);
    }
    if let Some(a) = &raw.attention {
        if a.max_agent_answers < 0 {
            errs.push("attention.maxAgentAnswers must not be negative".to_string());
        } else if a.max_agent_answers > MAX_AGENT_ANSWERS_CEILING {
            errs.push(format!(
                "attention.maxAgentAnswers {} exceeds the sanity ceiling {MAX_AGENT_ANSWERS_CEILING}",
                a.max_agent_answers
            ));
        }
    }
    if let Some(t) = &raw.trusted_binaries {
        validate_trusted_binaries(t, errs);
    }
    if let Some(c) = &raw.check {
        validate_check(c, errs);
    }
}

/// A check that could never run, or never end, is refused: the envelope would
/// promise a gate it does not hold.
fn validate_check(c: &RawCheck, errs: &mut Vec<String>) {
    let command = c.command.trim();
    if command.is_empty() {
        errs.push(
            "check: command is empty — name the command that must pass before a mission lands (e.g. \"cargo test -q\"), or remove the check block".to_string(),
        );
    } else if command.len() > MAX_CHECK_COMMAND_BYTES {
        errs.push(format!(
            "check: command is too long ({} bytes, max {MAX_CHECK_COMMAND_BYTES}) — put it in a script in the workspace and name that",
            command.len()
        ));
    } else if command.chars().any(|ch| ch.is_control() && ch != '\t') {
        errs.push("check: command must be one line without control characters".to_string());
    }
    if !c.timeout.trim().is_empty() {
        match crate::duration::parse(&c.timeout) {
            Err(e) => errs.push(format!("check: timeout: {e}")),
            Ok(d) if d.is_zero() => {
                errs.push("check: timeout must be longer than zero (absent: 10m0s)".to_string())
            }
            Ok(d) if d > MAX_CHECK_TIMEOUT => errs.push(format!(
                "check: timeout {} is out of range (max {})",
                crate::duration::format(d),
                crate::duration::format(MAX_CHECK_TIMEOUT)
            )),
            Ok(_) => {}
        }
    }
}

fn validate_rule(i: usize, rule: &RawRule, errs: &mut Vec<String>) {
    if Action::parse(&rule.action).is_none() {
        errs.push(format!("rule {i}: unknown action {}", quote(&rule.action)));
    }
    match rule.on_timeout.as_str() {
        "" | "deny" | "approve" => {}
        "allow" => errs.push(format!(
            "rule {i}: on_timeout={} is not permitted (would silently bypass approval)",
            quote(&rule.on_timeout)
        )),
        other => errs.push(format!("rule {i}: unknown on_timeout {}", quote(other))),
    }
    if rule.timeout_s < 0 {
        // The format has no "wait forever" value, so a negative is always a mistake.
        errs.push(format!(
            "rule {i}: timeout_s {} is not a wait; write a positive number of seconds, or zero to leave the ask on the operator's approval ceiling",
            rule.timeout_s
        ));
    }
    for (j, cond) in rule.when.iter().enumerate() {
        match Op::parse(&cond.op) {
            None => errs.push(format!(
                "rule {i}, condition {j}: unknown op {}",
                quote(&cond.op)
            )),
            Some(Op::Glob) => {
                if let Err(e) = glob::validate(&cond.value) {
                    errs.push(format!("rule {i}, condition {j}: {e}"));
                }
            }
            Some(_) => {}
        }
    }
}

fn validate_compute(c: &RawCompute, errs: &mut Vec<String>) {
    let counters = [
        ("maxTurns", c.max_turns, MAX_TURNS_CAP),
        ("maxToolCalls", c.max_tool_calls, MAX_TOOL_CALLS_CAP),
        ("maxTokens", c.max_tokens, MAX_TOKENS_CAP),
        ("maxChecks", c.max_checks, MAX_CHECKS_CAP),
    ];
    for (name, value, cap) in counters {
        if value < 0 {
            errs.push(format!(
                "compute: {name} must not be negative (got {value})"
            ));
        } else if value > cap {
            errs.push(format!(
                "compute: {name} is out of range (got {value}, max {cap})"
            ));
        }
    }
    let usd = c.max_cost_usd;
    if !usd.is_finite() || usd < 0.0 {
        errs.push(format!(
            "compute: maxCostUsd must be an amount of US dollars, 0 or more (got {usd})"
        ));
    } else if usd > MAX_COST_USD_CAP {
        errs.push(format!(
            "compute: maxCostUsd is out of range (got {usd}, max {MAX_COST_USD_CAP})"
        ));
    } else if usd > 0.0 && usd < 0.000_001 {
        errs.push(format!(
            "compute: maxCostUsd is below a micro-dollar (got {usd}); write 0 for no money bound"
        ));
    }
    match c.on_exhausted.as_str() {
        "" | "finish_stuck" | "pause_ask" => {}
        other => errs.push(format!(
            "compute: unknown onExhausted {} (must be finish_stuck or pause_ask)",
            quote(other)
        )),
    }
    match c.count_bounds.as_str() {
        "" | "per_run" | "total" => {}
        other => errs.push(format!(
            "compute: unknown countBounds {} (must be per_run or total)",
            quote(other)
        )),
    }
    for (name, list) in [
        ("modelAllowlist", &c.model_allowlist),
        ("backendAllowlist", &c.backend_allowlist),
    ] {
        if list.len() > MAX_ALLOWLIST_ENTRIES {
            errs.push(format!(
                "compute: {name} has too many entries ({}, max {MAX_ALLOWLIST_ENTRIES})",
                list.len()
            ));
            continue;
        }
        for (k, entry) in list.iter().enumerate() {
            if entry.trim().is_empty() {
                errs.push(format!("compute: {name} entry {k} is empty"));
            } else if entry.len() > MAX_ALLOWLIST_ENTRY_BYTES {
                errs.push(format!(
                    "compute: {name} entry {k} exceeds max length ({} bytes, max {MAX_ALLOWLIST_ENTRY_BYTES})",
                    entry.len()
                ));
            }
        }
    }
}

/// Relative trust anchors would depend on the process's cwd, and a malformed hash
/// can never match, so both are refused rather than left to fail silently.
fn validate_trusted_binaries(t: &TrustedBinaries, errs: &mut Vec<String>) {
    for (k, dir) in t.dirs.iter().enumerate() {
        if !dir.starts_with('/') {
            errs.push(format!(
                "trusted_binaries: dirs entry {k} ({}) is not an absolute path — write the full directory path",
                quote(dir)
            ));
        }
    }
    for (path, hash) in &t.hashes {
        if !path.starts_with('/') {
            errs.push(format!(
                "trusted_binaries: hashes key {} is not an absolute path — key each hash by the binary's real path",
                quote(path)
            ));
        }
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            errs.push(format!(
                "trusted_binaries: hash for {} is not a sha256 hex digest (64 hex digits)",
                quote(path)
            ));
        }
    }
}

/// Waits that can never happen: a typo, not an intent.
fn check_rule_semantics(raw: &RawEnvelope, errs: &mut Vec<String>) {
    for (i, rule) in raw.rules.iter().enumerate() {
        if rule.timeout_s > MAX_RULE_TIMEOUT_S {
            errs.push(format!(
                "rule {i}: timeout_s {} is out of range (max {MAX_RULE_TIMEOUT_S}, seven days) — a longer wait is a typo, not an intent",
                rule.timeout_s
            ));
        }
        let waits = rule.timeout_s != 0 || !rule.on_timeout.is_empty();
        if let Some(action) = Action::parse(&rule.action)
            && action != Action::Approve
            && waits
        {
            errs.push(format!(
                "rule {i}: timeout_s/on_timeout only apply when action is {} — this rule's action {} never waits, so they would silently do nothing",
                quote(Action::Approve.as_str()),
                quote(action.as_str())
            ));
        }
    }
}

/// Tool names compare exactly at runtime, so `local_*` silently never matches;
/// only vet can say so.
fn check_never_matching(raw: &RawEnvelope, errs: &mut Vec<String>) {
    for (i, rule) in raw.rules.iter().enumerate() {
        for (field, value) in [("tools", &rule.tools), ("tool", &rule.tool)] {
            if value.contains('*') && value != "*" {
                errs.push(format!(
                    "rule {i}: {field} {} can never match — tool names are compared exactly, and the only wildcard is \"*\" on its own; name the tool exactly or use \"*\"",
                    quote(value)
                ));
            }
        }
    }
}
