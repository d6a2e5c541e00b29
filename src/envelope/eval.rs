//! Deciding one tool call against a policy.
//!
//! Rules run top to bottom and the first match is final; `default_action`
//! applies only when nothing matches. The compute and attention blocks never
//! change the outcome.
//!
//! Two small departures from the Go evaluator: a non-string arg value is tested
//! as its compact JSON text (`3`, `true`, `{"a":1}`) rather than Go's `%v`
//! rendering (which would print `1e+06` for a million), and the `host` op treats
//! `localhost.` as `localhost`, since both resolve alike.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value};

use super::format::{Action, Condition, Envelope, EnvelopeError, Op, Rule};
use super::quote::quote;
use super::shell::{self, Allowlist};

/// A tool call as the envelope sees it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolCall {
    /// Toolset name (`local_fs`, `local_shell`, an MCP server name, …).
    pub tools: String,
    pub tool: String,
    pub args: Map<String, Value>,
}

impl ToolCall {
    /// Convenience for callers holding args as a JSON value; anything but an
    /// object counts as no args.
    pub fn new(tools: &str, tool: &str, args: Value) -> ToolCall {
        ToolCall {
            tools: tools.to_string(),
            tool: tool.to_string(),
            args: match args {
                Value::Object(map) => map,
                _ => Map::new(),
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    MatchedRule,
    DefaultAction,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::MatchedRule => "matched_rule",
            Reason::DefaultAction => "default_action",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub action: Action,
    /// Index of the deciding rule; `None` when `default_action` applied.
    pub matched_rule: Option<usize>,
    pub reason: Reason,
    /// Only meaningful for `approve`: `> 0` waits that long, `0` uses the ceiling.
    pub timeout_s: i64,
    pub on_timeout: Action,
    pub envelope_name: String,
    /// What the deciding rule saw (a blacklist hit) and, when the call ends on
    /// `approve`, why the allowlists it passed did not allow it.
    pub detail: String,
}

/// How long an ask waits when its rule sets no `timeout_s` (the operator may
/// configure another ceiling).
pub const DEFAULT_APPROVAL_CEILING: Duration = Duration::from_secs(3600);

impl Verdict {
    /// The wait for an ask raised on this verdict: a rule's positive `timeout_s`
    /// exactly (it beats the ceiling either way), else the ceiling.
    pub fn ask_wait(&self, ceiling: Duration) -> Duration {
        match u64::try_from(self.timeout_s) {
            Ok(secs) if secs > 0 => Duration::from_secs(secs),
            _ => ceiling,
        }
    }
}

/// An edit of part of a file (`local_fs.edit_file`): a write too, so no envelope lets
/// an edit through where it would stop the write, including envelopes written
/// before edits existed.
pub const EDIT_FILE: &str = "edit_file";
const WRITE_FILE: &str = "write_file";

/// Decides `call` against `policy`. `envelope_name` only labels the verdict. An edit
/// meets the rules for edits and for writes, and the stricter verdict holds.
pub fn evaluate(envelope_name: &str, policy: &Envelope, call: &ToolCall) -> Verdict {
    let own = evaluate_as_named(envelope_name, policy, call);
    if call.tools != "local_fs" || call.tool != EDIT_FILE {
        return own;
    }
    let as_write = ToolCall {
        tool: WRITE_FILE.to_string(),
        ..call.clone()
    };
    let write = evaluate_as_named(envelope_name, policy, &as_write);
    let strictness = |a: Action| match a {
        Action::Allow => 0,
        Action::Approve => 1,
        Action::Deny => 2,
    };
    if strictness(write.action) > strictness(own.action) {
        write
    } else {
        own
    }
}

/// The first rule naming `call`'s toolset and tool that matches, else the default.
fn evaluate_as_named(envelope_name: &str, policy: &Envelope, call: &ToolCall) -> Verdict {
    let mut refusals = Vec::new();
    let mut decided = None;
    for (i, rule) in policy.rules.iter().enumerate() {
        if !name_matches(&rule.tools, &call.tools) || !name_matches(&rule.tool, &call.tool) {
            continue;
        }
        if let Some(detail) = rule_matches(rule, policy, call, &mut refusals) {
            decided = Some((i, rule, detail));
            break;
        }
    }
    let mut verdict = match decided {
        Some((i, rule, detail)) => Verdict {
            action: rule.action,
            matched_rule: Some(i),
            reason: Reason::MatchedRule,
            timeout_s: rule.timeout_s,
            on_timeout: rule.on_timeout,
            envelope_name: envelope_name.to_string(),
            detail,
        },
        None => Verdict {
            action: policy.default_action,
            matched_rule: None,
            reason: Reason::DefaultAction,
            timeout_s: 0,
            on_timeout: Action::Deny,
            envelope_name: envelope_name.to_string(),
            detail: String::new(),
        },
    };
    // The operator deciding an ask wants to know why the allowlist let it through
    // to them; on allow or deny nobody reads it.
    if verdict.action == Action::Approve && !refusals.is_empty() {
        let mut parts: Vec<String> = Vec::new();
        if !verdict.detail.is_empty() {
            parts.push(std::mem::take(&mut verdict.detail));
        }
        parts.extend(refusals);
        verdict.detail = parts.join("; ");
    }
    verdict
}

/// Fail closed: a policy that failed to load evaluates as the built-in default
/// (every call asks, no bounds), never as allow.
pub fn evaluate_or_fail_closed(
    envelope_name: &str,
    loaded: &Result<Envelope, EnvelopeError>,
    call: &ToolCall,
) -> Verdict {
    match loaded {
        Ok(policy) => evaluate(envelope_name, policy, call),
        Err(err) => {
            tracing::warn!("hitl: falling back to built-in default policy: {err}");
            evaluate(envelope_name, &Envelope::builtin_default(), call)
        }
    }
}

/// Exact and case-sensitive; the only wildcard is `*` on its own (or empty).
fn name_matches(pattern: &str, name: &str) -> bool {
    pattern.is_empty() || pattern == "*" || pattern == name
}

/// `Some(detail)` when every condition holds (AND). Conditions stop at the first
/// that fails, so later conditions neither run nor leave refusals behind.
fn rule_matches(
    rule: &Rule,
    policy: &Envelope,
    call: &ToolCall,
    refusals: &mut Vec<String>,
) -> Option<String> {
    let mut detail = String::new();
    for cond in &rule.when {
        if !condition_holds(cond, rule.action, policy, call, &mut detail, refusals) {
            return None;
        }
    }
    Some(detail)
}

fn condition_holds(
    cond: &Condition,
    action: Action,
    policy: &Envelope,
    call: &ToolCall,
    detail: &mut String,
    refusals: &mut Vec<String>,
) -> bool {
    // An absent key is false for every op, including the ones that look at the
    // whole call: the named key is what scopes them.
    let Some(value) = call.args.get(&cond.key) else {
        return false;
    };
    match cond.op {
        Op::Eq => elements(value).contains(&cond.value),
        Op::Glob => cond
            .glob
            .as_ref()
            .is_some_and(|g| elements(value).iter().any(|e| g.matches(e))),
        Op::Host => elements(value).iter().any(|e| host_matches(e, &cond.value)),
        Op::CommandBlacklist | Op::CommandAskAlways => {
            match shell::blacklist_match(&call.args, &cond.value) {
                Some(name) => {
                    *detail = format!("shell command {} matched {}", quote(&name), cond.value);
                    true
                }
                None => false,
            }
        }
        Op::NoCommandSubstitution => shell::args_have_substitution(&call.args),
        Op::CommandPrefixAllowlist => match shell::prefix_allowlist(&call.args, &cond.value) {
            Allowlist::Refused(reason) => {
                refusals.push(format!("command_prefix_allowlist: {reason}"));
                false
            }
            Allowlist::Allowed { programs } => {
                // Trust gates only what the allowlist would allow outright; it
                // never turns an ask into anything else.
                let Some(trusted) = policy
                    .trusted_binaries
                    .as_ref()
                    .filter(|t| t.is_enforced() && action == Action::Allow)
                else {
                    return true;
                };
                let cwd = match call.args.get("cwd") {
                    Some(Value::String(c)) => Some(Path::new(c.as_str())),
                    _ => None,
                };
                for program in &programs {
                    if let Err(why) = trusted.verify(program, cwd) {
                        refusals.push(format!("trusted_binaries: {why}"));
                        return false;
                    }
                }
                true
            }
        },
    }
}

/// An arg value as the strings a condition tests: a string is itself, an array
/// is its elements (OR), anything else is its compact JSON text.
fn elements(value: &Value) -> Vec<String> {
    fn text(v: &Value) -> String {
        match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
    match value {
        Value::Array(items) => items.iter().map(text).collect(),
        other => vec![text(other)],
    }
}

/// The `host` op: exact host, or a subdomain of a pattern unless the host is an
/// IP literal. No scheme means no host, so `localhost:8080` never matches.
pub fn host_matches(url: &str, patterns: &str) -> bool {
    let Some(host) = url_hostname(url) else {
        return false;
    };
    // `localhost.` resolves like `localhost`; without this it would slip past.
    let host = host.strip_suffix('.').unwrap_or(&host);
    let is_ip = host.parse::<IpAddr>().is_ok();
    shell::list_entries(patterns)
        .map(|p| p.to_ascii_lowercase())
        .any(|p| {
            let p = p.strip_suffix('.').unwrap_or(&p);
            host == p
                || (!is_ip
                    && host.len() > p.len()
                    && host.ends_with(p)
                    && host[..host.len() - p.len()].ends_with('.'))
        })
}

/// The hostname a Go `url.Parse` + `Hostname()` would report, lowercased; `None`
/// where that parse fails or the host is empty.
pub fn url_hostname(raw: &str) -> Option<String> {
    let s = raw.trim();
    let s = s.split('#').next().unwrap_or("");
    let rest = strip_scheme(s)?;
    let rest = rest.split('?').next().unwrap_or("");
    // Opaque (`mailto:x`, `localhost:8080`) and path-only references have no host.
    let authority = rest.strip_prefix("//")?;
    let authority = authority.split('/').next().unwrap_or("");
    let hostport = match authority.rfind('@') {
        Some(i) => &authority[i + 1..],
        None => authority,
    };
    let host = if let Some(bracketed) = hostport.strip_prefix('[') {
        let end = bracketed.find(']')?;
        let after = &bracketed[end + 1..];
        if !after.is_empty() && !valid_port(after) {
            return None;
        }
        &bracketed[..end]
    } else {
        match hostport.rfind(':') {
            Some(i) if valid_port(&hostport[i..]) => &hostport[..i],
            Some(_) => return None,
            None => hostport,
        }
    };
    let host = percent_decode(host)?;
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    Some(host.to_lowercase())
}

/// The text after `scheme:`, or the whole reference when it has no scheme;
/// `None` for the references Go refuses to parse.
fn strip_scheme(s: &str) -> Option<&str> {
    for (i, c) in s.char_indices() {
        match c {
            ':' if i == 0 => return None,
            ':' => return Some(&s[i + 1..]),
            c if c.is_ascii_alphabetic() => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            _ => break,
        }
    }
    // No scheme: a colon in the first segment is a parse error in Go.
    let first_segment = s.split('/').next().unwrap_or("");
    if first_segment.contains(':') {
        return None;
    }
    Some(s)
}

fn valid_port(p: &str) -> bool {
    p.strip_prefix(':')
        .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(v: Value) -> Envelope {
        Envelope::parse("test.json", v.to_string().as_bytes()).expect("policy loads")
    }

    fn decide(p: &Envelope, tools: &str, tool: &str, args: Value) -> Verdict {
        evaluate("test.json", p, &ToolCall::new(tools, tool, args))
    }

    fn action(p: &Envelope, tools: &str, tool: &str, args: Value) -> Action {
        decide(p, tools, tool, args).action
    }

    /// One rule over `key` with `op`/`value`, allow on match, deny otherwise.
    fn single(key: &str, op: &str, value: &str) -> Envelope {
        load(json!({
            "default_action": "deny",
            "rules": [{"action": "allow", "when": [{"key": key, "op": op, "value": value}]}]
        }))
    }

    /// The SH5 shell tiers of the default preset.
    fn shell_tiers() -> Envelope {
        load(json!({
            "default_action": "approve",
            "rules": [
                {"tools":"local_shell","tool":"local_shell","action":"deny",
                 "when":[{"key":"command","op":"command_blacklist","value":"mkfs,mke2fs,fdisk,shred,wipefs"}]},
                {"tools":"local_shell","tool":"local_shell","action":"approve",
                 "when":[{"key":"args","op":"no_command_substitution","value":""}]},
                {"tools":"local_shell","tool":"local_shell","action":"allow",
                 "when":[{"key":"command","op":"command_prefix_allowlist","value":
                 "go build,go test,go vet,go list,go doc,go env,go version,gofmt -l,gofmt -d,ls,cat,head,tail,wc,pwd,echo,grep,rg,npm test,npm ls,tsc --noEmit,eslint,vitest run,jest,pytest,python -m pytest,python3 -m pytest,ruff check,mypy,pip list,pip show"}]},
                {"tools":"local_shell","tool":"local_shell","action":"approve",
                 "when":[{"key":"command","op":"command_ask_always","value":"rm,sudo,dd,chmod,chown,mv,cp"}]},
                {"tools":"local_shell","tool":"local_shell","action":"approve"},
                {"tools":"shell_session","tool":"shell_session_read","action":"allow"}
            ]
        }))
    }

    fn sh(p: &Envelope, args: Value) -> Verdict {
        decide(p, "local_shell", "local_shell", args)
    }

    #[test]
    fn worked_example_rule_allow_vs_default_deny() {
        let p = load(
            json!({"default_action":"deny","rules":[{"tools":"webtools","tool":"call","action":"allow"}]}),
        );
        let v = decide(&p, "webtools", "call", json!({}));
        assert_eq!(
            (v.action, v.matched_rule, v.reason),
            (Action::Allow, Some(0), Reason::MatchedRule)
        );
        let v = decide(&p, "local_fs", "write_file", json!({}));
        assert_eq!(
            (v.action, v.matched_rule, v.reason),
            (Action::Deny, None, Reason::DefaultAction)
        );
        assert_eq!(v.envelope_name, "test.json");
    }

    #[test]
    fn an_edit_is_never_let_through_where_the_write_would_stop() {
        // Written before edits existed: it names write_file only.
        let p = load(json!({"default_action": "allow", "rules": [
            {"tools":"local_fs","tool":"write_file","action":"deny",
             "when":[{"key":"path","op":"glob","value":"**/.ssh/**"}]},
            {"tools":"local_fs","tool":"write_file","action":"approve"}
        ]}));
        let edit = |path: &str| decide(&p, "local_fs", EDIT_FILE, json!({ "path": path }));
        assert_eq!(
            (
                edit("/home/u/.ssh/config").action,
                edit("/home/u/.ssh/config").matched_rule
            ),
            (Action::Deny, Some(0))
        );
        assert_eq!(edit("src/lib.rs").action, Action::Approve);
        // Rules for edits may be stricter than for writes, never looser.
        let p = load(json!({"default_action": "allow", "rules": [
            {"tools":"local_fs","tool":"edit_file","action":"allow"},
            {"tools":"local_fs","tool":"write_file","action":"deny"}
        ]}));
        assert_eq!(
            action(&p, "local_fs", EDIT_FILE, json!({"path": "a"})),
            Action::Deny
        );
        let p = load(json!({"default_action": "allow", "rules": [
            {"tools":"local_fs","tool":"edit_file","action":"deny"}
        ]}));
        assert_eq!(
            action(&p, "local_fs", EDIT_FILE, json!({"path": "a"})),
            Action::Deny
        );
        assert_eq!(
            action(&p, "local_fs", "write_file", json!({"path": "a"})),
            Action::Allow
        );
    }

    #[test]
    fn worked_example_glob_then_timeout_rule() {
        let p = load(json!({"rules":[
            {"tools":"local_fs","tool":"write_file","action":"allow",
             "when":[{"key":"path","op":"glob","value":"./src/**"}]},
            {"tools":"local_fs","tool":"write_file","action":"approve","timeout_s":30,"on_timeout":"deny"}
        ]}));
        let v = decide(
            &p,
            "local_fs",
            "write_file",
            json!({"path":"./src/main.go"}),
        );
        assert_eq!((v.action, v.matched_rule), (Action::Allow, Some(0)));
        let v = decide(&p, "local_fs", "write_file", json!({"path":"./etc/passwd"}));
        assert_eq!(
            (v.action, v.matched_rule, v.timeout_s, v.on_timeout),
            (Action::Approve, Some(1), 30, Action::Deny)
        );
    }

    #[test]
    fn worked_example_default_preset_shell_tiers() {
        let p = shell_tiers();
        let v = sh(&p, json!({"command":"mkfs","args":["/dev/sda"]}));
        assert_eq!((v.action, v.matched_rule), (Action::Deny, Some(0)));
        assert_eq!(
            v.detail,
            r#"shell command "mkfs" matched mkfs,mke2fs,fdisk,shred,wipefs"#
        );
        let v = sh(&p, json!({"command":"echo","args":["$(whoami)"]}));
        assert_eq!((v.action, v.matched_rule), (Action::Approve, Some(1)));
        let v = sh(&p, json!({"command":"go","args":["test","./..."]}));
        assert_eq!((v.action, v.matched_rule), (Action::Allow, Some(2)));
        let v = sh(&p, json!({"command":"git","args":["status"]}));
        assert_eq!((v.action, v.matched_rule), (Action::Approve, Some(4)));
        assert!(v.detail.contains("not on the allowlist"), "{}", v.detail);
        let v = sh(&p, json!({"command":"cat a > b"}));
        assert_eq!((v.action, v.matched_rule), (Action::Approve, Some(4)));
        assert!(v.detail.contains("redirect"), "{}", v.detail);
        let v = sh(&p, json!({"command":"rm","args":["-rf","x"]}));
        assert_eq!((v.action, v.matched_rule), (Action::Approve, Some(3)));
        assert_eq!(
            v.detail,
            r#"shell command "rm" matched rm,sudo,dd,chmod,chown,mv,cp; command_prefix_allowlist: "rm -rf x" is not on the allowlist"#
        );
        // Compound lines: a blacklisted command anywhere denies; a fully
        // allowlisted line allows; a mixed one asks.
        assert_eq!(
            sh(&p, json!({"command":"ls && mkfs /dev/sda"})).action,
            Action::Deny
        );
        assert_eq!(
            sh(&p, json!({"command":"go vet ./... && go test ./..."})).action,
            Action::Allow
        );
        assert_eq!(sh(&p, json!({"command":"ls; rm x"})).matched_rule, Some(3));
        assert_eq!(
            sh(&p, json!({"command":"ls", "shell": true})).action,
            Action::Approve
        );
        assert_eq!(
            decide(&p, "shell_session", "shell_session_read", json!({})).action,
            Action::Allow
        );
    }

    #[test]
    fn annotated_example_envelope() {
        let p = load(json!({
            "//": "what this envelope is for",
            "default_action": "approve",
            "rules": [
                {"tools":"local_fs","tool":"*","action":"deny",
                 "when":[{"key":"path","op":"glob","value":"**/{.ssh,.aws}/**"}]},
                {"tools":"local_fs","tool":"read_file","action":"allow"},
                {"tools":"local_shell","tool":"local_shell","action":"approve","timeout_s":1800,"on_timeout":"deny"}
            ],
            "//compute-fields": "disclosure note (ignored by loader)",
            "compute": {"maxToolCalls": 300, "maxTokens": 2000000, "onExhausted": "finish_stuck"},
            "attention": {"allowAgentAnswers": true, "maxAgentAnswers": 3}
        }));
        let read = |path: &str| action(&p, "local_fs", "read_file", json!({"path": path}));
        assert_eq!(read("/home/u/.ssh/id_ed25519"), Action::Deny);
        assert_eq!(read("README.md"), Action::Allow);
        assert_eq!(
            action(&p, "local_fs", "write_file", json!({"path":"README.md"})),
            Action::Approve
        );
        let v = sh(&p, json!({"command":"ls"}));
        assert_eq!(
            (v.action, v.timeout_s, v.on_timeout),
            (Action::Approve, 1800, Action::Deny)
        );
        assert_eq!(p.compute.max_tool_calls, 300);
    }

    #[test]
    fn oracle_envelope_allows_exactly_its_two_tools() {
        let p = load(json!({
            "default_action": "deny",
            "rules": [
                {"//": "the verdict", "tools":"oracle","tool":"submit_verdict","action":"allow"},
                {"//": "its state", "tools":"oracle","tool":"verdict_state","action":"allow"}
            ],
            "attention": {"allowAgentAnswers": false},
            "compute": {"onExhausted": "finish_stuck"}
        }));
        for (tools, tool, want) in [
            ("oracle", "submit_verdict", Action::Allow),
            ("oracle", "verdict_state", Action::Allow),
            ("local_shell", "local_shell", Action::Deny),
            ("local_fs", "read_file", Action::Deny),
            ("local_fs", "write_file", Action::Deny),
            ("webtools", "web_get", Action::Deny),
            ("git", "git_commit", Action::Deny),
            ("oracle", "imagined_tool", Action::Deny),
        ] {
            assert_eq!(action(&p, tools, tool, json!({})), want, "{tools}.{tool}");
        }
    }

    #[test]
    fn eq_table() {
        let p = single("mode", "eq", "fast");
        assert_eq!(action(&p, "t", "x", json!({"mode":"fast"})), Action::Allow);
        assert_eq!(action(&p, "t", "x", json!({"mode":"Fast"})), Action::Deny);
        assert_eq!(
            action(&p, "t", "x", json!({"mode":["slow","fast"]})),
            Action::Allow
        );
        assert_eq!(action(&p, "t", "x", json!({"mode":["slow"]})), Action::Deny);
        assert_eq!(action(&p, "t", "x", json!({"other":"fast"})), Action::Deny);
        let p = single("n", "eq", "3");
        assert_eq!(action(&p, "t", "x", json!({"n":3})), Action::Allow);
        assert_eq!(action(&p, "t", "x", json!({"n":[1,3]})), Action::Allow);
        let p = single("b", "eq", "true");
        assert_eq!(action(&p, "t", "x", json!({"b":true})), Action::Allow);
    }

    #[test]
    fn glob_table() {
        let p = single("path", "glob", "**/{.ssh,.aws}/**");
        for (path, want) in [
            (json!("/home/u/.ssh/id_rsa"), Action::Allow),
            (json!("~/.aws/credentials"), Action::Allow),
            (json!("/home/u/src/main.go"), Action::Deny),
            (json!(["/tmp/x", "/home/u/.ssh/config"]), Action::Allow),
            (json!(["/tmp/x", "/tmp/y"]), Action::Deny),
            (json!([]), Action::Deny),
        ] {
            assert_eq!(
                action(&p, "local_fs", "read_file", json!({"path": path})),
                want,
                "{path}"
            );
        }
        let p = single("path", "glob", "logs/app[0-9].log");
        assert_eq!(
            action(&p, "t", "x", json!({"path":"logs/app7.log"})),
            Action::Allow
        );
        assert_eq!(
            action(&p, "t", "x", json!({"path":"logs/appX.log"})),
            Action::Deny
        );
        let p = single("path", "glob", "src/*.rs");
        assert_eq!(
            action(&p, "t", "x", json!({"path":"./src/lib.rs"})),
            Action::Allow
        );
        assert_eq!(
            action(&p, "t", "x", json!({"path":"src/a/lib.rs"})),
            Action::Deny
        );
    }

    #[test]
    fn malformed_brace_glob_fails_the_policy_closed() {
        let bytes = json!({"default_action":"allow","rules":[
            {"tools":"local_fs","tool":"*","action":"deny","when":[{"key":"path","op":"glob","value":"**/{.ssh/**"}]}
        ]}).to_string();
        let loaded = Envelope::parse("p.json", bytes.as_bytes());
        let err = loaded.as_ref().unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"invalid hitl policy "p.json": rule 0, condition 0: unbalanced '{' in glob "**/{.ssh/**""#
        );
        let v = evaluate_or_fail_closed(
            "p.json",
            &loaded,
            &ToolCall::new("local_fs", "read_file", json!({"path":"x"})),
        );
        assert_eq!(
            (v.action, v.reason),
            (Action::Approve, Reason::DefaultAction)
        );
    }

    #[test]
    fn host_table() {
        let p = single("url", "host", "example.com, LOCALHOST ,,127.0.0.1,::1");
        for (url, want) in [
            ("https://example.com", true),
            ("https://example.com:8443/path?q=1", true),
            ("https://api.example.com/v1", true),
            ("https://EXAMPLE.com", true),
            ("  https://example.com  ", true),
            ("https://user:pw@example.com/", true),
            ("https://badexample.com", false),
            ("https://example.com.evil.net", false),
            ("http://localhost:8080/x", true),
            ("http://localhost./x", true),
            ("localhost:8080", false),
            ("example.com/path", false),
            ("http://example.org/?redir=localhost", false),
            ("http://example.org/#localhost", false),
            ("http://127.0.0.1:9000/", true),
            ("http://127.0.0.2/", false),
            ("http://[::1]:8080/", true),
            ("//example.com/x", true),
            ("http:example.com", false),
            ("http://exa%6dple.com/", true),
            ("http://example.com:port/", false),
        ] {
            let want = if want { Action::Allow } else { Action::Deny };
            assert_eq!(
                action(&p, "webtools", "web_get", json!({"url": url})),
                want,
                "{url}"
            );
        }
        // An IP literal never matches by suffix.
        let p = single("url", "host", "0.1");
        assert_eq!(
            action(&p, "t", "x", json!({"url":"http://127.0.0.1/"})),
            Action::Deny
        );
        let p = single("url", "host", "");
        assert_eq!(
            action(&p, "t", "x", json!({"url":"http://example.com/"})),
            Action::Deny
        );
    }

    #[test]
    fn blacklist_and_ask_always_table() {
        for op in ["command_blacklist", "command_ask_always"] {
            let p = single("command", op, "rm,sudo");
            for (args, want) in [
                (json!({"command":"rm","args":["-rf","x"]}), Action::Allow),
                (json!({"command":"/bin/rm -rf x"}), Action::Allow),
                (json!({"command":"sudo"}), Action::Allow),
                (json!({"command":"rmdir x"}), Action::Deny),
                (json!({"command":"cd x && rm y"}), Action::Allow),
                (json!({"args":["rm"]}), Action::Deny), // the named key is absent
            ] {
                assert_eq!(
                    action(&p, "local_shell", "local_shell", args.clone()),
                    want,
                    "{op} {args}"
                );
            }
            let p = single("command", op, "rm -rf");
            assert_eq!(
                action(&p, "t", "x", json!({"command":"rm -rf x"})),
                Action::Deny
            );
            let p = single("command", op, "");
            assert_eq!(action(&p, "t", "x", json!({"command":"rm"})), Action::Deny);
        }
    }

    #[test]
    fn substitution_table() {
        let p = single("args", "no_command_substitution", "");
        for (args, want) in [
            (
                json!({"command":"echo","args":["$(whoami)"]}),
                Action::Allow,
            ),
            (json!({"command":"echo","args":["`id`"]}), Action::Allow),
            (
                json!({"command":"diff","args":["<(ls)", "b"]}),
                Action::Allow,
            ),
            (json!({"command":"echo $(id)","args":[]}), Action::Allow), // any arg, not only `args`
            (
                json!({"command":"echo","args":["$HOME","${MY_VAR}"]}),
                Action::Deny,
            ),
            (json!({"command":"echo $(id)"}), Action::Deny), // no `args` key at all
        ] {
            assert_eq!(
                action(&p, "local_shell", "local_shell", args.clone()),
                want,
                "{args}"
            );
        }
    }

    #[test]
    fn prefix_allowlist_table() {
        let p = single(
            "command",
            "command_prefix_allowlist",
            "git log,git status,go test",
        );
        for (args, want) in [
            (
                json!({"command":"git","args":["log","--oneline"]}),
                Action::Allow,
            ),
            (json!({"command":"git log -p"}), Action::Allow),
            (
                json!({"command":"/usr/bin/git","args":["status"]}),
                Action::Allow,
            ),
            (
                json!({"command":"git","args":["clean","-fd"]}),
                Action::Deny,
            ),
            (json!({"command":"gitk"}), Action::Deny),
            (
                json!({"command":"git","args":["log"],"shell":"on"}),
                Action::Deny,
            ),
            (json!({"command":"git log && go test ./..."}), Action::Allow),
            (json!({"command":"git log | sh"}), Action::Deny),
            (json!({"command":"git log > x"}), Action::Deny),
            (
                json!({"command":"git","args":["log","$(id)"]}),
                Action::Deny,
            ),
        ] {
            assert_eq!(
                action(&p, "local_shell", "local_shell", args.clone()),
                want,
                "{args}"
            );
        }
    }

    #[test]
    fn conditions_and_and_absent_keys() {
        let p = load(
            json!({"default_action":"deny","rules":[{"action":"allow","when":[
                {"key":"path","op":"glob","value":"src/**"},
                {"key":"mode","op":"eq","value":"ro"}
            ]}]}),
        );
        assert_eq!(
            action(&p, "t", "x", json!({"path":"src/a","mode":"ro"})),
            Action::Allow
        );
        assert_eq!(
            action(&p, "t", "x", json!({"path":"src/a","mode":"rw"})),
            Action::Deny
        );
        assert_eq!(action(&p, "t", "x", json!({"path":"src/a"})), Action::Deny);
        assert_eq!(action(&p, "t", "x", json!({})), Action::Deny);
    }

    #[test]
    fn names_match_exactly_and_first_match_wins() {
        // A partial wildcard could never match, so it refuses the load.
        let partial = json!({"rules":[{"tools":"local_*","action":"deny"}]});
        assert!(Envelope::parse("test.json", partial.to_string().as_bytes()).is_err());
        let p = load(json!({"default_action":"allow","rules":[
            {"tools":"local_fs","tool":"read_file","action":"approve"},
            {"tools":"local_fs","tool":"*","action":"deny"},
            {"tools":"local_fs","tool":"read_file","action":"allow"},
            {"tools":"","tool":"","action":"approve"}
        ]}));
        assert_eq!(
            decide(&p, "local_fs", "read_file", json!({})).matched_rule,
            Some(0)
        );
        assert_eq!(
            decide(&p, "local_fs", "Read_File", json!({})).matched_rule,
            Some(1)
        );
        assert_eq!(
            decide(&p, "LOCAL_FS", "read_file", json!({})).matched_rule,
            Some(3)
        );
        assert_eq!(
            decide(&p, "mcp", "anything", json!({})).matched_rule,
            Some(3)
        );
    }

    #[test]
    fn ask_wait_uses_the_rule_timeout_or_the_ceiling() {
        let p = load(json!({"rules":[
            {"tools":"a","action":"approve","timeout_s":7200},
            {"action":"approve"}
        ]}));
        let ceiling = DEFAULT_APPROVAL_CEILING;
        assert_eq!(
            decide(&p, "a", "t", json!({})).ask_wait(ceiling),
            Duration::from_secs(7200)
        );
        assert_eq!(decide(&p, "b", "t", json!({})).ask_wait(ceiling), ceiling);
    }

    #[test]
    fn default_action_defaults_to_approve() {
        for doc in [json!({}), json!({"default_action":""}), json!({"rules":[]})] {
            let v = decide(&load(doc), "local_fs", "read_file", json!({}));
            assert_eq!(
                (v.action, v.reason, v.on_timeout, v.timeout_s),
                (Action::Approve, Reason::DefaultAction, Action::Deny, 0)
            );
        }
        let p = load(json!({"rules":[{"action":"approve","timeout_s":5}]}));
        assert_eq!(decide(&p, "a", "b", json!({})).on_timeout, Action::Deny);
        let p = load(json!({"rules":[{"action":"approve","on_timeout":"approve"}]}));
        assert_eq!(decide(&p, "a", "b", json!({})).on_timeout, Action::Approve);
    }

    #[test]
    fn failed_load_asks_for_everything_including_reads() {
        let calls = [
            ToolCall::new("local_fs", "read_file", json!({"path":"README.md"})),
            ToolCall::new("local_shell", "local_shell", json!({"command":"ls"})),
            ToolCall::new("some_mcp", "do_thing", json!({})),
        ];
        let missing: Result<Envelope, EnvelopeError> = Err(EnvelopeError::not_found(
            "hitl-policy-nope.json",
            "no such file",
        ));
        let bad_compute = Envelope::parse(
            "dev.json",
            br#"{"default_action":"allow","compute":{"maxTurn":1,"maxTokens":5}}"#,
        );
        assert!(bad_compute.is_err());
        for loaded in [&missing, &bad_compute] {
            for call in &calls {
                let v = evaluate_or_fail_closed("x", loaded, call);
                assert_eq!((v.action, v.matched_rule), (Action::Approve, None));
            }
        }
        // The fallback carries no ceilings and no attention grant.
        let fallback = Envelope::builtin_default();
        assert!(fallback.compute.is_unbounded());
        assert!(fallback.attention.is_none());
    }

    #[test]
    fn compute_and_attention_never_change_the_action() {
        let base = json!({"default_action":"deny","rules":[{"tools":"a","action":"allow"}]});
        let mut bounded = base.clone();
        bounded["compute"] = json!({"maxToolCalls":1,"maxTokens":1,"maxTurns":1});
        bounded["attention"] = json!({"allowAgentAnswers":true});
        for (tools, want) in [("a", Action::Allow), ("b", Action::Deny)] {
            assert_eq!(action(&load(base.clone()), tools, "t", json!({})), want);
            assert_eq!(action(&load(bounded.clone()), tools, "t", json!({})), want);
        }
    }

    mod trusted {
        use super::*;
        use crate::envelope::format::sha256_file;
        use std::os::unix::fs::PermissionsExt;

        fn fake_binary(dir: &Path, name: &str, body: &str) -> String {
            let path = dir.join(name);
            std::fs::write(&path, body).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::canonicalize(&path)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        }

        fn policy(action: &str, dirs: Vec<String>, hashes: Value) -> Envelope {
            load(json!({
                "default_action": "approve",
                "trusted_binaries": {"dirs": dirs, "hashes": hashes},
                "rules": [{"tools":"local_shell","action":action,
                    "when":[{"key":"command","op":"command_prefix_allowlist","value":"go test,ls,./go test"}]}]
            }))
        }

        #[test]
        fn allow_requires_a_binary_under_a_trusted_dir() {
            let trusted = tempfile::tempdir().unwrap();
            let elsewhere = tempfile::tempdir().unwrap();
            let good = fake_binary(trusted.path(), "go", "#!/bin/sh\n");
            let bad = fake_binary(elsewhere.path(), "go", "#!/bin/sh\n");
            let dir = std::fs::canonicalize(trusted.path())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let p = policy("allow", vec![dir], json!({}));
            let v = decide(
                &p,
                "local_shell",
                "local_shell",
                json!({"command": format!("{good} test ./...")}),
            );
            assert_eq!(v.action, Action::Allow);
            let v = decide(
                &p,
                "local_shell",
                "local_shell",
                json!({"command": format!("{bad} test ./...")}),
            );
            assert_eq!(v.action, Action::Approve);
            assert!(
                v.detail
                    .contains("outside every trusted_binaries.dirs entry"),
                "{}",
                v.detail
            );
            // Relative program words resolve against the call's cwd.
            let v = decide(
                &p,
                "local_shell",
                "local_shell",
                json!({"command":"./go test", "cwd": trusted.path()}),
            );
            assert_eq!(v.action, Action::Allow);
            let v = decide(
                &p,
                "local_shell",
                "local_shell",
                json!({"command":"./go test", "cwd": elsewhere.path()}),
            );
            assert_eq!(v.action, Action::Approve);
        }

        #[test]
        fn a_pinned_hash_must_match() {
            let trusted = tempfile::tempdir().unwrap();
            let good = fake_binary(trusted.path(), "ls", "real ls");
            let dir = std::fs::canonicalize(trusted.path())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let hash = sha256_file(Path::new(&good)).unwrap();
            let p = policy("allow", vec![dir.clone()], json!({ good.clone(): hash }));
            assert_eq!(
                action(
                    &p,
                    "local_shell",
                    "local_shell",
                    json!({"command": good.clone()})
                ),
                Action::Allow
            );
            let p = policy("allow", vec![dir], json!({ good.clone(): "0".repeat(64) }));
            let v = decide(&p, "local_shell", "local_shell", json!({"command": good}));
            assert_eq!(v.action, Action::Approve);
            assert!(
                v.detail.contains("does not match its declared hash"),
                "{}",
                v.detail
            );
        }

        #[test]
        fn trust_never_touches_an_approve_rule_or_an_empty_block() {
            let elsewhere = tempfile::tempdir().unwrap();
            let bad = fake_binary(elsewhere.path(), "go", "x");
            let p = policy("approve", vec!["/nonexistent".into()], json!({}));
            let v = decide(
                &p,
                "local_shell",
                "local_shell",
                json!({"command": format!("{bad} test")}),
            );
            assert_eq!((v.action, v.matched_rule), (Action::Approve, Some(0)));
            let p = policy("allow", vec![], json!({}));
            assert_eq!(
                action(
                    &p,
                    "local_shell",
                    "local_shell",
                    json!({"command": format!("{bad} test")})
                ),
                Action::Allow
            );
        }
    }
}
