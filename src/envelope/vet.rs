//! The linter behind `missionboard vet`: classifies files and checks envelopes
//! and chain files, collecting every problem in one run.
//!
//! An envelope's errors are exactly the loader's (one function, so vet and the
//! runtime can never disagree). Warnings are not defects: the file loads and the
//! runtime accepts it, but something in it has no effect or is rarely meant.

use std::collections::HashMap;
use std::path::Path;

use super::decode::RawEnvelope;
use super::format::{self, MAX_TURNS_CAP, sha256_file};
use super::json::{Json, Num, parse_object};
use super::quote::quote;
use super::shell::path_base;
use super::validate::{self, check_keys};

/// Above this many `**` in one glob, vet warns: matching stays linear, but each
/// one lets any run of directories match, which is rarely what so many meant.
pub const MAX_QUIET_DOUBLE_STARS: usize = 4;

const CHAIN_FIELDS: &[&str] = &[
    "id",
    "description",
    "variant",
    "token_limit",
    "budgets",
    "examples",
    "tasks",
];
const EXAMPLE_FIELDS: &[&str] = &["input", "call"];
const EXAMPLE_INPUT_FIELDS: &[&str] = &["intent", "summary", "detail"];
const BUDGET_FIELDS: &[&str] = &["tool_rounds", "text_corrections", "recovery_rounds"];
const TASK_FIELDS: &[&str] = &[
    "id",
    "handler",
    "tools",
    "system_instruction",
    "transitions",
    "input_var",
];
const TRANSITION_FIELDS: &[&str] = &["when", "goto"];
const HANDLERS: &[&str] = &["chat_completion", "execute_tool_calls", "tools"];
const VARIANTS: &[&str] = &["default", "conservative"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Envelope,
    Chain,
    Skip,
}

/// What a file is, by content first and name second: a `tasks` array makes a
/// chain; a `rules` array or a `default_action` key makes an envelope; a file
/// named `hitl-policy*` is an envelope even when it does not parse, so a broken
/// envelope fails vet instead of being skipped.
pub fn classify(file_name: &str, bytes: &[u8]) -> FileKind {
    if let Ok(doc) = serde_json::from_slice::<Json>(bytes)
        && let Some(top) = doc.as_obj()
    {
        if matches!(last(top, "tasks"), Some(Json::Arr(_))) {
            return FileKind::Chain;
        }
        if matches!(last(top, "rules"), Some(Json::Arr(_))) || last(top, "default_action").is_some()
        {
            return FileKind::Envelope;
        }
    }
    if path_base(file_name).starts_with("hitl-policy") {
        return FileKind::Envelope;
    }
    FileKind::Skip
}

/// Everything vet found in one file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VetReport {
    pub errors: Vec<String>,
    /// `(field, message)`, printed as `<field>: <message>`.
    pub warnings: Vec<(String, String)>,
}

impl VetReport {
    /// No errors; warnings never fail a file.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Vets an envelope (HITL policy) file: exactly the loader's checks, then the
/// warnings, which only a file that passes can draw.
pub fn vet_envelope(bytes: &[u8]) -> VetReport {
    match validate::check(bytes) {
        Ok(raw) => VetReport {
            errors: Vec::new(),
            warnings: envelope_warnings(&raw),
        },
        Err(errors) => VetReport {
            errors,
            warnings: Vec::new(),
        },
    }
}

/// The last entry under exactly `key`, as a Go map decode would keep it.
fn last<'a>(entries: &'a [(String, Json)], key: &str) -> Option<&'a Json> {
    entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// `field` may be left out, but when it is there it is a string; `at` names the
/// object as messages do (`chain`, `task 2`).
fn optional_string(entries: &[(String, Json)], field: &str, at: &str, errs: &mut Vec<String>) {
    if let Some(v) = last(entries, field)
        && !matches!(v, Json::Str(_))
    {
        errs.push(format!(
            "{at}: {field} must be a string (got {})",
            describe(v)
        ));
    }
}

fn envelope_warnings(raw: &RawEnvelope) -> Vec<(String, String)> {
    use super::bounds::{BoundStatus, ComputeField, bound_status};
    let mut warnings = Vec::new();
    if let Some(c) = &raw.compute {
        // Labelled as the picker and `mission show` label them, before any agent
        // is known: only what holds whatever the agent is draws a warning.
        let bounds = super::format::ComputeBounds {
            // Out of range is an error already; it gets no warning on top.
            max_turns: if (0..=MAX_TURNS_CAP).contains(&c.max_turns) {
                c.max_turns as u64
            } else {
                0
            },
            backend_allowlist: c.backend_allowlist.clone(),
            ..Default::default()
        };
        for field in [ComputeField::MaxTurns, ComputeField::BackendAllowlist] {
            if !field.is_set(&bounds) {
                continue;
            }
            let message = match (field, bound_status(field, &bounds, None)) {
                (ComputeField::MaxTurns, BoundStatus::NoEffect) => format!(
                    "maxTurns is {}, but a mission runs at most two prompt turns (its own, plus one runtime nudge when it reports nothing): values of 2 or more have no effect today — only 1 changes anything (it drops the nudge)",
                    c.max_turns
                ),
                (ComputeField::BackendAllowlist, BoundStatus::DeclaredNotEnforced) => "backendAllowlist is declared, not enforced: an ACP agent exposes no backend or provider to the host, so nothing can check it — hold the agent to its models with modelAllowlist instead".to_string(),
                _ => continue,
            };
            warnings.push((format!("compute.{}", field.key()), message));
        }
    }
    for (i, rule) in raw.rules.iter().enumerate() {
        for (j, cond) in rule.when.iter().enumerate() {
            let double_stars = cond.value.matches("**").count();
            if cond.op == "glob" && double_stars > MAX_QUIET_DOUBLE_STARS {
                warnings.push((
                    format!("rules[{i}].when[{j}].value"),
                    format!(
                        "glob {} has {double_stars} \"**\" segments (more than {MAX_QUIET_DOUBLE_STARS}): each lets any run of directories match, so a pattern this loose rarely says what was meant — name the directories, or collapse the \"**\"s",
                        quote(&cond.value)
                    ),
                ));
            }
        }
    }
    if let Some(decl) = &raw.sandbox {
        use super::sandbox::{SandboxField, SandboxStatus, sandbox_status};
        let abi = crate::confine::landlock_abi();
        for field in SandboxField::ALL {
            if sandbox_status(field, decl, abi) == SandboxStatus::DeclaredNotEnforced {
                warnings.push((
                    format!("sandbox.{}", field.key()),
                    format!(
                        "{} is declared, not enforced: this kernel offers Landlock ABI {abi}, too old to hold it — the unit is not confined by it here",
                        field.key()
                    ),
                ));
            }
        }
    }
    if let Some(trusted) = &raw.trusted_binaries {
        for (path, declared) in &trusted.hashes {
            if let Some(message) = hash_warning(trusted, path, declared) {
                warnings.push(("trusted_binaries.hashes".to_string(), message));
            }
        }
    }
    warnings
}

/// Declarations that no longer describe this host. Checked statically first: a
/// hash outside every trusted dir is moot whatever is on disk.
fn hash_warning(trusted: &format::TrustedBinaries, path: &str, declared: &str) -> Option<String> {
    if !trusted.covers(path) {
        return Some(format!(
            "{path}: declared outside every trusted_binaries.dirs entry — its hash can never be reached"
        ));
    }
    match sha256_file(Path::new(path)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(format!(
            "{path}: declared but not present on this host — remove the entry or restore the binary"
        )),
        Err(e) => Some(format!(
            "{path}: declared but unreadable ({e}) — calls naming it will be refused"
        )),
        Ok(on_disk) if !on_disk.eq_ignore_ascii_case(declared) => Some(format!(
            "{path}: does not match the declared hash (on disk {on_disk}) — re-declare after verifying the upgrade, or investigate"
        )),
        Ok(_) => None,
    }
}

// ---------------------------------------------------------------------------
// Chain files.

/// A value for a message: numbers and strings as written, anything else by type.
fn describe(v: &Json) -> String {
    match v {
        Json::Num(n) => n.to_string(),
        Json::Str(s) => quote(s),
        other => other.type_name().to_string(),
    }
}

fn non_negative_int(v: &Json) -> Option<i64> {
    match v {
        Json::Num(Num::Int(i)) if *i >= 0 => Some(*i),
        _ => None,
    }
}

/// Vets a chain file (prompts and budgets for a chain implemented in code).
pub fn vet_chain(bytes: &[u8]) -> VetReport {
    let mut report = VetReport::default();
    let top = match parse_object(bytes) {
        Ok(top) => top,
        Err(e) => {
            report.errors.push(e);
            return report;
        }
    };
    let top = top.as_slice();
    let errs = &mut report.errors;
    check_keys("chain", "", top, CHAIN_FIELDS, errs);

    match last(top, "id") {
        None => errs.push("chain: id is required".to_string()),
        Some(Json::Str(s)) if !s.trim().is_empty() => {}
        Some(other) => errs.push(format!(
            "chain: id must be a non-empty string (got {})",
            describe(other)
        )),
    }
    optional_string(top, "description", "chain", errs);
    match last(top, "variant") {
        None => {}
        Some(Json::Str(v)) if VARIANTS.contains(&v.as_str()) => {}
        Some(other) => errs.push(format!(
            "chain: unknown variant {} (must be default or conservative)",
            describe(other)
        )),
    }
    if let Some(t) = last(top, "token_limit")
        && non_negative_int(t).is_none_or(|n| n == 0)
    {
        errs.push(format!(
            "chain: token_limit must be a positive integer (got {})",
            describe(t)
        ));
    }
    match last(top, "budgets") {
        None => {}
        Some(Json::Obj(budgets)) => {
            check_keys("budgets", "budgets", budgets, BUDGET_FIELDS, errs);
            for (k, v) in budgets {
                if BUDGET_FIELDS.contains(&k.as_str()) && non_negative_int(v).is_none() {
                    errs.push(format!(
                        "budgets: {k} must be a non-negative integer (got {})",
                        describe(v)
                    ));
                }
            }
        }
        Some(other) => errs.push(format!(
            "budgets: must be an object: got {}",
            other.type_name()
        )),
    }
    match last(top, "examples") {
        None => {}
        Some(Json::Arr(examples)) => check_examples(examples, errs),
        Some(other) => errs.push(format!(
            "examples: must be an array of example objects: got {}",
            other.type_name()
        )),
    }
    match last(top, "tasks") {
        None => errs.push("chain: tasks is required".to_string()),
        Some(Json::Arr(tasks)) if tasks.is_empty() => errs.push(
            "tasks: must be a non-empty array of task objects: got an empty array".to_string(),
        ),
        Some(Json::Arr(tasks)) => check_tasks(tasks, errs),
        Some(other) => errs.push(format!(
            "tasks: must be a non-empty array of task objects: got {}",
            other.type_name()
        )),
    }
    report
}

/// Worked reviews shown to the model before the real one: an INPUT and the verdict
/// call it earns. Their shape is checked here; that each call is one the contract
/// accepts is checked where the chain is loaded.
fn check_examples(examples: &[Json], errs: &mut Vec<String>) {
    for (i, example) in examples.iter().enumerate() {
        let at = format!("examples[{i}]");
        let Some(entries) = example.as_obj() else {
            errs.push(format!(
                "{at}: must be an object: got {}",
                example.type_name()
            ));
            continue;
        };
        check_keys(&at, &at, entries, EXAMPLE_FIELDS, errs);
        match last(entries, "input") {
            Some(Json::Obj(input)) => {
                let field = format!("{at}.input");
                check_keys(&field, &field, input, EXAMPLE_INPUT_FIELDS, errs);
                for key in ["intent", "summary"] {
                    if !matches!(last(input, key), Some(Json::Str(s)) if !s.trim().is_empty()) {
                        errs.push(format!("{field}: {key} must be a non-empty string"));
                    }
                }
                if let Some(detail) = last(input, "detail")
                    && !matches!(detail, Json::Str(_))
                {
                    errs.push(format!("{field}: detail must be a string"));
                }
            }
            other => errs.push(format!(
                "{at}: input must be an object with intent and summary (got {})",
                other.map_or("nothing", Json::type_name)
            )),
        }
        if !matches!(last(entries, "call"), Some(Json::Obj(_))) {
            errs.push(format!(
                "{at}: call must be the verdict call's arguments, an object"
            ));
        }
    }
}

fn check_tasks(tasks: &[Json], errs: &mut Vec<String>) {
    // Ids first, so a transition may jump forward.
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        let Some(entries) = task.as_obj() else {
            errs.push(format!(
                "task {i}: must be an object: got {}",
                task.type_name()
            ));
            continue;
        };
        check_keys(
            &format!("task {i}"),
            &format!("tasks[{i}]"),
            entries,
            TASK_FIELDS,
            errs,
        );
        match last(entries, "id") {
            Some(Json::Str(id)) if !id.trim().is_empty() => {
                if let Some(first) = ids.get(id.as_str()) {
                    errs.push(format!(
                        "task {i}: duplicate id {} (already used by task {first})",
                        quote(id)
                    ));
                } else {
                    ids.insert(id, i);
                    order.push(id);
                }
            }
            None => errs.push(format!("task {i}: id is required")),
            Some(other) => errs.push(format!(
                "task {i}: id must be a non-empty string (got {})",
                describe(other)
            )),
        }
        match last(entries, "handler") {
            None => errs.push(format!(
                "task {i}: handler is required (one of chat_completion, execute_tool_calls, tools)"
            )),
            Some(Json::Str(h)) if HANDLERS.contains(&h.as_str()) => {}
            Some(other) => errs.push(format!(
                "task {i}: unknown handler {} (must be chat_completion, execute_tool_calls or tools)",
                describe(other)
            )),
        }
        match last(entries, "tools") {
            None => {}
            Some(Json::Arr(items)) => {
                for (k, item) in items.iter().enumerate() {
                    if !matches!(item, Json::Str(_)) {
                        errs.push(format!(
                            "task {i}: tools entry {k} must be a string (got {})",
                            describe(item)
                        ));
                    }
                }
            }
            Some(other) => errs.push(format!(
                "task {i}: tools must be an array of strings (got {})",
                other.type_name()
            )),
        }
        for field in ["system_instruction", "input_var"] {
            optional_string(entries, field, &format!("task {i}"), errs);
        }
    }
    let known = order
        .iter()
        .map(|id| quote(id))
        .collect::<Vec<_>>()
        .join(", ");
    for (i, task) in tasks.iter().enumerate() {
        let Some(transitions) = task.as_obj().and_then(|e| last(e, "transitions")) else {
            continue;
        };
        let Json::Arr(transitions) = transitions else {
            errs.push(format!(
                "task {i}: transitions must be an array of {{when, goto}} objects: got {}",
                transitions.type_name()
            ));
            continue;
        };
        for (j, t) in transitions.iter().enumerate() {
            let prefix = format!("task {i}, transition {j}");
            let Some(entries) = t.as_obj() else {
                errs.push(format!(
                    "{prefix}: must be an object: got {}",
                    t.type_name()
                ));
                continue;
            };
            check_keys(
                &prefix,
                &format!("tasks[{i}].transitions[{j}]"),
                entries,
                TRANSITION_FIELDS,
                errs,
            );
            optional_string(entries, "when", &prefix, errs);
            match last(entries, "goto") {
                None => errs.push(format!("{prefix}: goto is required")),
                Some(Json::Str(g)) if g == "end" || ids.contains_key(g.as_str()) => {}
                Some(Json::Str(g)) => errs.push(format!(
                    "{prefix}: goto {} names no task — known tasks: {known}, or \"end\"",
                    quote(g)
                )),
                Some(other) => errs.push(format!(
                    "{prefix}: goto must be a string (got {})",
                    describe(other)
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn vet(v: Value) -> VetReport {
        vet_envelope(v.to_string().as_bytes())
    }

    fn errors(v: Value) -> Vec<String> {
        vet(v).errors
    }

    fn unknown(prefix: &str, path: &str, key: &str, known: &str) -> String {
        format!(
            "{prefix}: unknown field \"{key}\" at {path} — known fields: {known} (keys starting with // are comments; $schema is allowed)"
        )
    }

    const POLICY_KNOWN: &str = "default_action, rules, compute, attention, trusted_binaries, version, sandbox, workspace, check";
    const RULE_KNOWN: &str = "tools, tool, when, action, timeout_s, on_timeout";

    #[test]
    fn builtin_default_and_shipped_shapes_vet_clean() {
        let r = vet_envelope(br#"{"default_action":"approve","rules":[]}"#);
        assert_eq!(r, VetReport::default());
        let r = vet(json!({
            "//": "what this envelope is for",
            "$schema": "https://example.invalid/hitl-policy-v1.schema.json",
            "version": 1,
            "default_action": "approve",
            "rules": [
                {"//": "quarantine", "tools":"local_fs","tool":"*","action":"deny",
                 "when":[{"key":"path","op":"glob","value":"**/{.ssh,.aws}/**"}]},
                {"tools":"local_fs","tool":"read_file","action":"allow"},
                {"tools":"local_shell","tool":"local_shell","action":"approve","timeout_s":1800,"on_timeout":"deny"}
            ],
            "//compute": "generous ceilings",
            "//compute-fields": "disclosure note",
            "compute": {"maxToolCalls": 300, "maxTokens": 2000000, "onExhausted": "finish_stuck"},
            "//attention": "note",
            "attention": {"allowAgentAnswers": true, "maxAgentAnswers": 3}
        }));
        // Silent about maxToolCalls and maxTokens: no warnings at all.
        assert_eq!(r, VetReport::default());
    }

    #[test]
    fn malformed_json_is_one_error() {
        let r = vet_envelope(b"{\"rules\": [");
        assert_eq!(r.errors.len(), 1);
        assert!(
            r.errors[0].starts_with("not a JSON object: "),
            "{:?}",
            r.errors
        );
        assert_eq!(
            vet_envelope(b"[1,2]").errors,
            ["not a JSON object: got array"]
        );
    }

    #[test]
    fn unknown_fields_at_every_level_with_exact_prefixes() {
        let r = errors(json!({
            "Default_Action": "approve",
            "rules": [{"tools":"a","action":"allow","timeout":5,
                       "when":[{"key":"k","op":"eq","value":"v","vaule":"x"}]}],
            "compute": {"maxTurn": 1},
            "attention": {"maxAgentAnswer": 5},
            "trusted_binaries": {"dir": []}
        }));
        assert_eq!(
            r,
            [
                unknown("policy", "Default_Action", "Default_Action", POLICY_KNOWN),
                unknown("rule 0", "rules[0].timeout", "timeout", RULE_KNOWN),
                unknown(
                    "rule 0, condition 0",
                    "rules[0].when[0].vaule",
                    "vaule",
                    "key, op, value"
                ),
                unknown(
                    "compute",
                    "compute.maxTurn",
                    "maxTurn",
                    "maxTurns, maxToolCalls, maxTokens, maxCostUsd, modelAllowlist, backendAllowlist, onExhausted, maxChecks, countBounds"
                ),
                unknown(
                    "attention",
                    "attention.maxAgentAnswer",
                    "maxAgentAnswer",
                    "allowAgentAnswers, maxAgentAnswers"
                ),
                unknown(
                    "trusted_binaries",
                    "trusted_binaries.dir",
                    "dir",
                    "dirs, hashes"
                ),
            ]
        );
    }

    #[test]
    fn shape_errors() {
        assert_eq!(
            errors(json!({"rules": {"tools": "x"}})),
            ["rules: must be an array of rule objects: got object"]
        );
        assert_eq!(
            errors(json!({"rules": ["allow"]})),
            ["rule 0: must be an object: got string"]
        );
        assert_eq!(
            errors(json!({"rules": [{"action":"allow","when":{"key":"k"}}]})),
            ["rule 0: when must be an array of {key, op, value} conditions: got object"]
        );
        assert_eq!(
            errors(json!({"compute": [1]})),
            ["compute: must be an object: got array"]
        );
        assert_eq!(
            errors(json!({"attention": true})),
            ["attention: must be an object: got bool"]
        );
        assert_eq!(
            errors(json!({"trusted_binaries": {"hashes": []}})),
            ["trusted_binaries.hashes: must be an object: got array"]
        );
        // A wrong scalar type is the loader's parse error, reported as such.
        let r = errors(json!({"attention": {"maxAgentAnswers": "3"}}));
        assert_eq!(r.len(), 1);
        assert!(
            r[0].starts_with("policy does not parse: json: cannot unmarshal string"),
            "{r:?}"
        );
    }

    #[test]
    fn loader_validation_is_reused() {
        assert_eq!(
            errors(json!({"default_action":"permit"})),
            [r#"unknown default_action "permit""#]
        );
        assert_eq!(
            errors(json!({"rules":[{"action":"approve","on_timeout":"allow"}]})),
            [r#"rule 0: on_timeout="allow" is not permitted (would silently bypass approval)"#]
        );
        assert_eq!(
            errors(json!({"rules":[{"action":"ok"}]})),
            [r#"rule 0: unknown action "ok""#]
        );
        assert_eq!(
            errors(json!({"compute":{"onExhausted":"later"}})),
            [r#"compute: unknown onExhausted "later" (must be finish_stuck or pause_ask)"#]
        );
        assert!(vet(json!({"compute":{"onExhausted":"pause_ask"}})).is_ok());
        assert_eq!(
            errors(json!({"version": 3})),
            [
                "policy declares version 3 but this binary knows only 1 — update missionboard to load it"
            ]
        );
    }

    #[test]
    fn a_check_block_is_vetted_like_every_field() {
        assert!(
            vet(json!({"check": {"command": "cargo test -q", "timeout": "10m", "optional": true}, "compute": {"maxChecks": 5}}))
                .is_ok()
        );
        assert_eq!(
            errors(
                json!({"check": {"command": " ", "timeout": "soon"}, "compute": {"maxChecks": 101}})
            ),
            [
                "compute: maxChecks is out of range (got 101, max 100)",
                "check: command is empty — name the command that must pass before a mission lands (e.g. \"cargo test -q\"), or remove the check block",
                "check: timeout: invalid duration \"soon\": write a number with a unit, e.g. 30s, 5m, 1h30m",
            ]
        );
        assert_eq!(
            errors(json!({"check": {"command": "make", "timeout": "0"}})),
            ["check: timeout must be longer than zero (absent: 10m0s)"]
        );
        assert_eq!(
            errors(json!({"check": {"command": "make", "timeout": "25h"}})),
            ["check: timeout 25h0m0s is out of range (max 24h0m0s)"]
        );
        assert_eq!(
            errors(json!({"check": "make"})),
            ["check: must be an object: got string"]
        );
        assert_eq!(
            errors(json!({"check": {"command": "make", "Optional": true}})),
            [unknown(
                "check",
                "check.Optional",
                "Optional",
                "command, timeout, optional"
            )]
        );
    }

    #[test]
    fn vet_and_the_loader_refuse_exactly_the_same_files_with_the_same_words() {
        let docs = [
            json!({"rules": [{"action": "allow", "wehn": [{"key": "path", "op": "glob", "value": "/tmp/**"}]}]}),
            json!({"Default_Action": "deny"}),
            json!({"attention": {"maxAgentAnswer": 5}}),
            json!({"rules": [{"tools": "local_*", "action": "deny"}]}),
            json!({"rules": [{"action": "deny", "timeout_s": 30}]}),
            json!({"compute": {"maxTurn": 1}}),
            json!({"compute": {"MaxTurns": 1, "onExhaust": "x"}}),
            json!({"COMPUTE": {"maxTurn": 1}}),
            json!({"trusted_binaries": {"dir": []}}),
            json!({"attention": {"maxAgentAnswers": 3.5}}),
            json!({"rules": [{"action": "allow", "when": [{"key": "p", "op": "glob", "value": "{a"}]}]}),
            json!({"rules": [{"action": "approve", "timeout_s": -1}]}),
            json!({"rules": [null]}),
            json!({"version": 2}),
            json!({"default_action": 1}),
        ];
        for doc in docs {
            let bytes = doc.to_string();
            let refused =
                crate::envelope::format::Envelope::parse("p", bytes.as_bytes()).expect_err(&bytes);
            let vetted = vet_envelope(bytes.as_bytes());
            assert!(!vetted.is_ok(), "{doc}");
            assert_eq!(refused.validation_messages(), vetted.errors, "{doc}");
        }
        let commented = json!({"compute": {"//": "note", "maxTokens": 5}});
        assert!(vet(commented.clone()).is_ok());
        assert!(
            crate::envelope::format::Envelope::parse("p", commented.to_string().as_bytes()).is_ok()
        );
    }

    #[test]
    fn timeout_values() {
        let t = |rule: Value| errors(json!({"rules": [rule]}));
        assert_eq!(
            t(json!({"action":"approve","timeout_s":-5})),
            [
                "rule 0: timeout_s -5 is not a wait; write a positive number of seconds, or zero to leave the ask on the operator's approval ceiling"
            ]
        );
        assert_eq!(
            t(json!({"action":"approve","timeout_s":-1,"on_timeout":"deny"})).len(),
            1
        );
        assert_eq!(
            t(json!({"action":"approve","timeout_s":999999999})),
            [
                "rule 0: timeout_s 999999999 is out of range (max 604800, seven days) — a longer wait is a typo, not an intent"
            ]
        );
        assert!(t(json!({"action":"approve","timeout_s":604800})).is_empty());
        assert_eq!(
            t(json!({"action":"deny","timeout_s":30})),
            [
                r#"rule 0: timeout_s/on_timeout only apply when action is "approve" — this rule's action "deny" never waits, so they would silently do nothing"#
            ]
        );
        assert_eq!(t(json!({"action":"allow","on_timeout":"deny"})).len(), 1);
        assert!(t(json!({"action":"approve","timeout_s":30,"on_timeout":"approve"})).is_empty());
    }

    #[test]
    fn never_matching_tool_patterns() {
        assert_eq!(
            errors(
                json!({"rules":[{"tools":"local_*","tool":"git_*","action":"deny"},{"tools":"*","tool":"","action":"allow"}]})
            ),
            [
                r#"rule 0: tools "local_*" can never match — tool names are compared exactly, and the only wildcard is "*" on its own; name the tool exactly or use "*""#,
                r#"rule 0: tool "git_*" can never match — tool names are compared exactly, and the only wildcard is "*" on its own; name the tool exactly or use "*""#,
            ]
        );
    }

    #[test]
    fn every_error_is_collected_in_one_run() {
        let r = errors(json!({
            "defaults": 1,
            "default_action": "sometimes",
            "rules": [
                {"tools":"local_*","action":"deny","timeout_s":10},
                {"action":"approve","on_timeout":"allow","when":[{"key":"p","op":"like"}]}
            ],
            "compute": {"maxTurns": -1, "maxTokens": -1},
            "attention": {"maxAgentAnswers": 5000}
        }));
        assert_eq!(
            r,
            [
                unknown("policy", "defaults", "defaults", POLICY_KNOWN),
                r#"unknown default_action "sometimes""#.to_string(),
                r#"rule 1: on_timeout="allow" is not permitted (would silently bypass approval)"#.to_string(),
                r#"rule 1, condition 0: unknown op "like""#.to_string(),
                "compute: maxTurns must not be negative (got -1)".to_string(),
                "compute: maxTokens must not be negative (got -1)".to_string(),
                "attention.maxAgentAnswers 5000 exceeds the sanity ceiling 1000".to_string(),
                r#"rule 0: timeout_s/on_timeout only apply when action is "approve" — this rule's action "deny" never waits, so they would silently do nothing"#.to_string(),
                r#"rule 0: tools "local_*" can never match — tool names are compared exactly, and the only wildcard is "*" on its own; name the tool exactly or use "*""#.to_string(),
            ]
        );
    }

    #[test]
    fn a_backend_allowlist_warns_that_nothing_holds_it() {
        let r = vet(json!({"compute": {"backendAllowlist": ["openai"], "modelAllowlist": ["b"]}}));
        assert!(r.is_ok());
        assert_eq!(
            r.warnings,
            [(
                "compute.backendAllowlist".to_string(),
                "backendAllowlist is declared, not enforced: an ACP agent exposes no backend or provider to the host, so nothing can check it — hold the agent to its models with modelAllowlist instead".to_string()
            )]
        );
    }

    #[test]
    fn max_turns_of_two_or_more_warns_but_passes() {
        let r = vet(json!({"compute": {"maxTurns": 2}}));
        assert!(r.is_ok());
        assert_eq!(
            r.warnings,
            [(
                "compute.maxTurns".to_string(),
                "maxTurns is 2, but a mission runs at most two prompt turns (its own, plus one runtime nudge when it reports nothing): values of 2 or more have no effect today — only 1 changes anything (it drops the nudge)".to_string()
            )]
        );
        assert!(vet(json!({"compute": {"maxTurns": 1}})).warnings.is_empty());
        let r = vet(json!({"compute": {"maxTurns": 1001}}));
        assert!(!r.is_ok() && r.warnings.is_empty());
    }

    #[test]
    fn trusted_binary_warnings() {
        let dir = tempfile::tempdir().unwrap();
        let dir_path = std::fs::canonicalize(dir.path()).unwrap();
        let bin = dir_path.join("tool");
        std::fs::write(&bin, "v2").unwrap();
        let bin = bin.to_string_lossy().into_owned();
        let good = sha256_file(Path::new(&bin)).unwrap();
        let missing = dir_path.join("gone").to_string_lossy().into_owned();
        let r = vet(json!({"trusted_binaries": {
            "dirs": [dir_path.to_string_lossy()],
            "hashes": {
                bin.clone(): "0".repeat(64),
                missing.clone(): good.clone(),
                "/opt/elsewhere/x": good.clone()
            }
        }}));
        assert!(r.is_ok(), "{:?}", r.errors);
        // In path order: the hashes map is sorted.
        let messages: Vec<&str> = r
            .warnings
            .iter()
            .map(|(f, m)| {
                assert_eq!(f, "trusted_binaries.hashes");
                m.as_str()
            })
            .collect();
        assert_eq!(
            messages,
            [
                "/opt/elsewhere/x: declared outside every trusted_binaries.dirs entry — its hash can never be reached".to_string(),
                format!("{missing}: declared but not present on this host — remove the entry or restore the binary"),
                format!("{bin}: does not match the declared hash (on disk {good}) — re-declare after verifying the upgrade, or investigate"),
            ]
        );
        let r = vet(
            json!({"trusted_binaries": {"dirs": [dir_path.to_string_lossy()], "hashes": {bin: good}}}),
        );
        assert_eq!(r, VetReport::default());
    }

    #[test]
    fn classify_by_content_then_name() {
        let cases: &[(&str, &str, FileKind)] = &[
            (
                "chain-oracle-default.json",
                r#"{"id":"x","tasks":[]}"#,
                FileKind::Chain,
            ),
            (
                "hitl-policy-odd.json",
                r#"{"tasks":[],"rules":[]}"#,
                FileKind::Chain,
            ),
            ("whatever.json", r#"{"rules":[]}"#, FileKind::Envelope),
            (
                "whatever.json",
                r#"{"default_action":"deny"}"#,
                FileKind::Envelope,
            ),
            (
                "whatever.json",
                r#"{"default_action":null}"#,
                FileKind::Envelope,
            ),
            ("whatever.json", r#"{"rules":{}}"#, FileKind::Skip),
            ("whatever.json", r#"{"tasks":"x"}"#, FileKind::Skip),
            (
                "dir/hitl-policy-broken.json",
                "{not json",
                FileKind::Envelope,
            ),
            ("hitl-policy.json", "[]", FileKind::Envelope),
            ("agents.json", r#"{"agents":{}}"#, FileKind::Skip),
            ("notes.json", "{oops", FileKind::Skip),
            ("my-hitl-policy.json", r#"{"x":1}"#, FileKind::Skip),
        ];
        for &(name, body, want) in cases {
            assert_eq!(classify(name, body.as_bytes()), want, "{name}: {body}");
        }
    }

    fn chain_errors(v: Value) -> Vec<String> {
        vet_chain(v.to_string().as_bytes()).errors
    }

    fn good_chain() -> Value {
        json!({
            "//": "oracle chain prompts",
            "id": "chain-oracle-default",
            "description": "reviews a mission's question",
            "variant": "default",
            "token_limit": 8192,
            "budgets": {"tool_rounds": 3, "text_corrections": 2, "recovery_rounds": 2},
            "tasks": [
                {"id": "oracle_review", "handler": "chat_completion", "tools": ["oracle"],
                 "system_instruction": "You review…", "input_var": "input",
                 "transitions": [{"when": "tool-call", "goto": "oracle_tools"}, {"when": "default", "goto": "end"}]},
                {"id": "oracle_tools", "handler": "execute_tool_calls",
                 "transitions": [{"goto": "oracle_review"}]},
                {"id": "oracle_recovery", "handler": "tools", "//": "note"}
            ]
        })
    }

    #[test]
    fn chain_good_shape_vets_clean() {
        assert_eq!(
            vet_chain(good_chain().to_string().as_bytes()),
            VetReport::default()
        );
    }

    #[test]
    fn chain_errors_are_all_collected() {
        let r = chain_errors(json!({
            "id": "",
            "descripton": "typo",
            "variant": "bold",
            "token_limit": 0,
            "budgets": {"tool_rounds": -1, "nudges": 2},
            "tasks": [
                {"id": "a", "handler": "chat", "tools": "oracle", "extra": 1,
                 "transitions": [{"goto": "b"}, {"when": 1}, "x"]},
                {"id": "a", "handler": "tools", "system_instruction": 5},
                7
            ]
        }));
        assert_eq!(
            r,
            [
                unknown("chain", "descripton", "descripton", "id, description, variant, token_limit, budgets, examples, tasks"),
                r#"chain: id must be a non-empty string (got "")"#.to_string(),
                r#"chain: unknown variant "bold" (must be default or conservative)"#.to_string(),
                "chain: token_limit must be a positive integer (got 0)".to_string(),
                unknown("budgets", "budgets.nudges", "nudges", "tool_rounds, text_corrections, recovery_rounds"),
                "budgets: tool_rounds must be a non-negative integer (got -1)".to_string(),
                unknown("task 0", "tasks[0].extra", "extra", "id, handler, tools, system_instruction, transitions, input_var"),
                r#"task 0: unknown handler "chat" (must be chat_completion, execute_tool_calls or tools)"#.to_string(),
                "task 0: tools must be an array of strings (got string)".to_string(),
                r#"task 1: duplicate id "a" (already used by task 0)"#.to_string(),
                "task 1: system_instruction must be a string (got 5)".to_string(),
                "task 2: must be an object: got number".to_string(),
                r#"task 0, transition 0: goto "b" names no task — known tasks: "a", or "end""#.to_string(),
                "task 0, transition 1: when must be a string (got 1)".to_string(),
                "task 0, transition 1: goto is required".to_string(),
                "task 0, transition 2: must be an object: got string".to_string(),
            ]
        );
    }

    #[test]
    fn chain_required_fields_and_shapes() {
        assert_eq!(
            chain_errors(json!({})),
            ["chain: id is required", "chain: tasks is required"]
        );
        assert_eq!(
            chain_errors(json!({"id": "c", "tasks": []})),
            ["tasks: must be a non-empty array of task objects: got an empty array"]
        );
        assert_eq!(
            chain_errors(json!({"id": "c", "tasks": {}})),
            ["tasks: must be a non-empty array of task objects: got object"]
        );
        assert_eq!(
            chain_errors(json!({"id": "c", "budgets": 3, "tasks": [{"handler": "tools"}]})),
            [
                "budgets: must be an object: got number",
                "task 0: id is required"
            ]
        );
        assert_eq!(
            chain_errors(json!({"id": "c", "tasks": [{"id": "t", "transitions": {}}]})),
            [
                "task 0: handler is required (one of chat_completion, execute_tool_calls, tools)",
                "task 0: transitions must be an array of {when, goto} objects: got object",
            ]
        );
        assert_eq!(vet_chain(b"nope").errors.len(), 1);
        assert!(vet_chain(b"nope").errors[0].starts_with("not a JSON object: "));
    }

    #[test]
    fn chain_examples_need_an_input_and_a_call() {
        let task = json!([{"id": "t", "handler": "tools"}]);
        assert_eq!(
            chain_errors(json!({"id": "c", "tasks": task, "examples": {}})),
            ["examples: must be an array of example objects: got object"]
        );
        assert_eq!(
            chain_errors(json!({"id": "c", "tasks": task, "examples": [
                7,
                {"input": {"intent": "x", "summary": ""}, "call": "wait", "note": 1},
                {"input": {"intent": "x", "summary": "y", "detail": 2, "askId": "a"}, "call": {}},
                {"call": {}},
            ]})),
            [
                "examples[0]: must be an object: got number",
                &unknown("examples[1]", "examples[1].note", "note", "input, call"),
                "examples[1].input: summary must be a non-empty string",
                "examples[1]: call must be the verdict call's arguments, an object",
                &unknown(
                    "examples[2].input",
                    "examples[2].input.askId",
                    "askId",
                    "intent, summary, detail"
                ),
                "examples[2].input: detail must be a string",
                "examples[3]: input must be an object with intent and summary (got nothing)",
            ]
        );
    }
}
