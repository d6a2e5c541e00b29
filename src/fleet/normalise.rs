//! The one reading of what a unit asks to run. Every agent describes a tool call its
//! own way — in a `session/request_permission` and in its `tool_call` updates — and
//! this module turns each shape into the envelope's view: one of our mission tools
//! (allowed at once, never counted as a foreign call), or a [`ToolCall`] with
//! `tools.tool` and the arguments rules look at (`command`, `path`, `url`).
//!
//! The shapes it reads, by the agent that sends them:
//! - a tool name in `_meta.toolName` (qwen), `_meta.claudeCode.toolName` (Claude
//!   Code), or our own `_meta["missionboard.missionTool"]`;
//! - MCP names qualified by server: `mcp__mission__mission_report` (Claude, qwen),
//!   `mcp_mission_mission_report` (gemini), `mission_mission_report` (opencode),
//!   `mission/mission_report` and `Tool: mission/mission_report` (codex);
//! - display titles: `mission_report (mission MCP Server)` (gemini), the tool's MCP
//!   title (`Report to the operator`), goose's reworded qualified name
//!   (`Mission: Mission Report`, kind `other`, no tool name anywhere else);
//! - a shell command only in the title when `rawInput` is absent (gemini), or in
//!   backticks (older Claude Code); a command array (codex, which may label a `cat`
//!   as a read: a shell line is a shell line whatever its kind);
//! - file paths under `path`, `file_path`, `filePath`, `absolute_path`, … or only in
//!   the call's locations;
//! - a text editor's `{path, command: view|write|str_replace|insert|…}` (goose's
//!   developer extension), whose `command` is an editing operation, not a shell line.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::acp_client::{PermissionAsk, UnitEvent};
use crate::envelope::eval::ToolCall;
use crate::mission_mcp::{MISSION_SERVER_NAME, MISSION_TOOL_META_KEY, MISSION_TOOL_NAMES};

/// What an agent told us about one tool call, whichever message carried it.
pub(super) struct Shape<'a> {
    pub title: &'a str,
    /// The ACP tool kind (`other` when the agent sent none).
    pub kind: &'a str,
    pub raw_input: Option<&'a Value>,
    pub locations: &'a [PathBuf],
    pub meta: &'a Map<String, Value>,
}

impl<'a> Shape<'a> {
    pub fn of_request(ask: &'a PermissionAsk) -> Shape<'a> {
        Shape {
            title: &ask.title,
            kind: &ask.kind,
            raw_input: ask.raw_input.as_ref(),
            locations: &ask.locations,
            meta: &ask.meta,
        }
    }

    /// The shape of a `tool_call` update; `None` for any other event.
    pub fn of_event(event: &'a UnitEvent) -> Option<Shape<'a>> {
        match event {
            UnitEvent::ToolCall {
                title,
                kind,
                raw_input,
                meta,
                ..
            } => Some(Shape {
                title,
                kind,
                raw_input: raw_input.as_ref(),
                locations: &[],
                meta,
            }),
            _ => None,
        }
    }
}

/// Kinds that change or reach outside the workspace: a call of one of these kinds
/// is never taken for a mission tool, whatever its title says, so a shell line
/// that merely mentions `mission_report` is still a shell line.
const EFFECT_KINDS: [&str; 5] = ["execute", "edit", "delete", "move", "fetch"];

/// Which of our mission tools the call is, if it is one.
pub(super) fn mission_tool(shape: &Shape) -> Option<&'static str> {
    // No mission tool takes a command line or a file: an input carrying one is a
    // shell or file call, whatever its title or `_meta` claims.
    if carries_command_or_path(shape.raw_input) {
        return None;
    }
    // Our own key is authoritative: naming anything else in it is not ours.
    if let Some(named) = shape.meta.get(MISSION_TOOL_META_KEY) {
        return named.as_str().and_then(bare_tool);
    }
    // contenox names the server and the tool apart.
    if let Some(Value::String(server)) = shape.meta.get("toolsName") {
        if server != MISSION_SERVER_NAME {
            return None;
        }
        return shape
            .meta
            .get("toolName")
            .and_then(Value::as_str)
            .and_then(|t| bare_tool(t).or_else(|| qualified_tool(t)));
    }
    if let Some(name) = meta_tool_name(shape.meta) {
        // The agent named the tool it runs: that name decides, the title is
        // display text (qwen puts the arguments there).
        return qualified_tool(name);
    }
    if EFFECT_KINDS.contains(&shape.kind) {
        return None;
    }
    // codex names the MCP server in the call's input (`server`, `server_name`):
    // another server's tool is never ours, whatever it is titled.
    if let Some(server) = shape
        .raw_input
        .and_then(|raw| raw.get("server_name").or_else(|| raw.get("server")))
        .and_then(Value::as_str)
        && server != MISSION_SERVER_NAME
    {
        return None;
    }
    if shape.kind == "other"
        && let Some(tool) = goose_titled_tool(shape.title)
    {
        return Some(tool);
    }
    labelled_tool(shape.title)
}

/// Does a call's input carry a shell command line (`command`, or codex's `cmd`) or
/// a file path (under any of [`PATH_KEYS`])?
fn carries_command_or_path(raw: Option<&Value>) -> bool {
    raw.and_then(Value::as_object).is_some_and(|m| {
        ["command", "cmd"]
            .iter()
            .chain(PATH_KEYS.iter())
            .any(|k| m.contains_key(*k))
    })
}

/// The mission tool goose titles `title`: goose shows a tool by its qualified name
/// `<extension>__<tool>` reworded for display, so `mission__mission_report` reads
/// `Mission: Mission Report`. The whole title must be one of those.
fn goose_titled_tool(title: &str) -> Option<&'static str> {
    let title = title.trim();
    MISSION_TOOL_NAMES
        .iter()
        .copied()
        .find(|tool| goose_title(&format!("{MISSION_SERVER_NAME}__{tool}")) == title)
}

/// How goose displays a qualified tool name: the extension and the tool apart at
/// the first `__` (`Extension: Tool`), underscores read as spaces, every word
/// capitalised. A name with no `__` is only reworded.
fn goose_title(qualified: &str) -> String {
    let words = |part: &str| {
        part.split(['_', ' '])
            .filter(|w| !w.is_empty())
            .map(|w| {
                let mut chars = w.chars();
                chars
                    .next()
                    .map(|c| c.to_uppercase().chain(chars).collect::<String>())
                    .unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    match qualified.split_once("__") {
        Some((extension, tool)) => format!("{}: {}", words(extension), words(tool)),
        None => words(qualified),
    }
}

/// The tool name an agent put in `_meta`: `toolName` (qwen) or
/// `claudeCode.toolName` (Claude Code).
fn meta_tool_name(meta: &Map<String, Value>) -> Option<&str> {
    meta.get("toolName").and_then(Value::as_str).or_else(|| {
        meta.get("claudeCode")
            .and_then(|c| c.get("toolName"))
            .and_then(Value::as_str)
    })
}

fn bare_tool(name: &str) -> Option<&'static str> {
    MISSION_TOOL_NAMES.iter().copied().find(|t| *t == name)
}

/// A tool name as an agent qualifies it with our server's name.
fn qualified_tool(name: &str) -> Option<&'static str> {
    let name = name.trim();
    let server = MISSION_SERVER_NAME;
    let prefixes = [
        format!("mcp__{server}__"),
        format!("mcp_{server}_"),
        format!("{server}__"),
        format!("{server}/"),
        format!("{server}."),
        format!("{server}:"),
        format!("{server}_"),
    ];
    prefixes
        .iter()
        .find_map(|p| name.strip_prefix(p.as_str()))
        .and_then(bare_tool)
}

/// A title that names a mission tool: qualified or bare, behind codex's `Tool: ` /
/// `Approve ` lead-ins, or gemini's `name (mission MCP Server)`; or the tool's MCP
/// display title. The whole title must be the name, so one that merely mentions
/// it does not count.
fn labelled_tool(title: &str) -> Option<&'static str> {
    let mut label = title.trim();
    for lead in ["Tool: ", "Approve "] {
        if let Some(rest) = label.strip_prefix(lead) {
            label = rest.trim();
        }
    }
    if let Some(body) = label.strip_suffix(')')
        && let Some(open) = body.rfind(" (")
    {
        let server_note = &body[open + 2..];
        if server_note != format!("{MISSION_SERVER_NAME} MCP Server") {
            return None;
        }
        label = body[..open].trim_end();
    }
    bare_tool(label)
        .or_else(|| qualified_tool(label))
        .or_else(|| display_title_tool(label))
}

/// The mission tool whose MCP display title `label` is (`Report to the operator`).
fn display_title_tool(label: &str) -> Option<&'static str> {
    // A label holding a tool name was judged as a name already.
    if MISSION_TOOL_NAMES.iter().any(|n| label.contains(n)) {
        return None;
    }
    crate::mission_mcp::names_mission_tool(label).then_some(DISPLAY_TITLED)
}

/// What a call recognised by its display title is called here: the titles are the
/// tools module's to map, and only the fact that the call is ours matters.
const DISPLAY_TITLED: &str = "mission tool (by its display title)";

/// Keys under which agents put the file a call touches.
const PATH_KEYS: [&str; 8] = [
    "path",
    "file_path",
    "filePath",
    "filepath",
    "absolute_path",
    "abs_path",
    "notebook_path",
    "filename",
];

/// Keys whose presence beside a path says the call writes it (an agent that sends
/// no kind for an edit).
const CONTENT_KEYS: [&str; 6] = [
    "content",
    "new_string",
    "old_string",
    "newText",
    "edits",
    "diff",
];

/// The envelope's view of a call that is not a mission tool.
pub(super) fn tool_call(shape: &Shape) -> ToolCall {
    let raw = shape.raw_input.filter(|v| !v.is_null());
    let mut args: Map<String, Value> = match raw {
        Some(Value::Object(m)) => m.clone(),
        Some(other) => Map::from_iter([("input".to_string(), other.clone())]),
        None => Map::new(),
    };
    let named = |k: &str| shape.meta.get(k).and_then(Value::as_str);
    if let (Some(tools), Some(tool)) = (named("toolsName"), named("toolName")) {
        // contenox names both halves; its arguments are already the rule keys.
        return ToolCall {
            tools: tools.to_string(),
            tool: tool.to_string(),
            args,
        };
    }
    if shape.kind != "execute"
        && !titled_shell(shape.title)
        && let Some(tool) = text_editor_tool(&mut args)
    {
        return ToolCall {
            tools: "local_fs".into(),
            tool: tool.into(),
            args,
        };
    }
    if !args.contains_key("command")
        && let Some(c) = args.get("cmd").cloned()
    {
        args.insert("command".into(), c);
    }
    let has_command = matches!(
        args.get("command"),
        Some(Value::String(_) | Value::Array(_))
    );
    if has_command || shape.kind == "execute" {
        // Only an agent that sends no input at all (gemini) puts the line in the
        // title; beside an input, a title is display text.
        let title_line = raw.is_none().then_some(shape.title);
        shell_args(&mut args, title_line);
        return ToolCall {
            tools: "local_shell".into(),
            tool: "local_shell".into(),
            args,
        };
    }
    if !args.contains_key("path") {
        let path = PATH_KEYS
            .iter()
            .find_map(|k| args.get(*k).and_then(Value::as_str).map(str::to_string))
            .or_else(|| shape.locations.first().map(|p| p.display().to_string()));
        if let Some(p) = path {
            args.insert("path".into(), Value::String(p));
        }
    }
    if !args.contains_key("url")
        && let Some(u) = args.get("uri").and_then(Value::as_str).map(str::to_string)
    {
        args.insert("url".into(), Value::String(u));
    }
    let writes = args.contains_key("path") && CONTENT_KEYS.iter().any(|k| args.contains_key(*k));
    let (tools, tool) = match shape.kind {
        "read" => ("local_fs", "read_file"),
        "edit" => ("local_fs", "write_file"),
        "delete" => ("local_fs", "delete_file"),
        "move" => ("local_fs", "move_file"),
        "search" => ("local_fs", "grep"),
        "fetch" => ("webtools", "web_get"),
        // An agent that sends no kind for an edit still names the file and the text.
        "other" | "" if writes => ("local_fs", "write_file"),
        other => ("acp", if other.is_empty() { "other" } else { other }),
    };
    ToolCall {
        tools: tools.to_string(),
        tool: tool.to_string(),
        args,
    }
}

/// The arguments a text editor tool takes (goose's developer `text_editor`, the
/// same shape as Anthropic's editor tool): a call whose input holds nothing else is
/// an editor call.
const EDITOR_KEYS: [&str; 7] = [
    "path",
    "command",
    "view_range",
    "file_text",
    "old_str",
    "new_str",
    "insert_line",
];

/// A text editor's operations and the file tool each one is: viewing reads the
/// file, every other operation changes it.
const EDITOR_OPERATIONS: [(&str, &str); 6] = [
    ("view", "read_file"),
    ("write", "write_file"),
    ("create", "write_file"),
    ("str_replace", "write_file"),
    ("insert", "write_file"),
    ("undo_edit", "write_file"),
];

/// Does the agent title the call as a shell (goose's `Developer: Shell`)? Such a
/// call runs its `command`, whatever else its input holds.
fn titled_shell(title: &str) -> bool {
    title.trim().to_ascii_lowercase().ends_with("shell")
}

/// The `local_fs` tool a text editor call is, when `args` is one: a string `path`,
/// a `command` naming an editor operation, and no key the editor does not take.
/// Its `command` moves to `operation`, so no shell rule reads it as a command line.
fn text_editor_tool(args: &mut Map<String, Value>) -> Option<&'static str> {
    if !args.get("path").is_some_and(Value::is_string)
        || !args.keys().all(|k| EDITOR_KEYS.contains(&k.as_str()))
    {
        return None;
    }
    let operation = args.get("command").and_then(Value::as_str)?;
    let tool = EDITOR_OPERATIONS
        .iter()
        .find_map(|(op, tool)| (*op == operation).then_some(*tool))?;
    if let Some(operation) = args.remove("command") {
        args.insert("operation".into(), operation);
    }
    Some(tool)
}

/// Fill `command` (and `args`) for a shell call: `["git", "status"]` becomes
/// command `git` with args `["status"]`; with no input at all, the title is the
/// command line (gemini sends no `rawInput`; a line in backticks is unwrapped).
fn shell_args(args: &mut Map<String, Value>, title: Option<&str>) {
    if let Some(Value::Array(parts)) = args.get("command").cloned() {
        let mut words = parts.iter().map(|p| match p {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        });
        if let Some(head) = words.next() {
            args.insert("command".into(), Value::String(head));
            args.insert(
                "args".into(),
                Value::Array(words.map(Value::String).collect()),
            );
        }
        return;
    }
    if args.get("command").is_some_and(Value::is_string) {
        return;
    }
    let Some(title) = title else {
        return;
    };
    let line = title.trim();
    let line = line
        .strip_prefix('`')
        .and_then(|l| l.strip_suffix('`'))
        .map(|l| l.replace("\\`", "`"))
        .unwrap_or_else(|| line.to_string());
    if !line.is_empty() {
        args.insert("command".into(), Value::String(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shape_call(
        kind: &str,
        title: &str,
        raw: Option<Value>,
        meta: Value,
    ) -> (Option<&'static str>, ToolCall) {
        let meta = match meta {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let shape = Shape {
            title,
            kind,
            raw_input: raw.as_ref(),
            locations: &[],
            meta: &meta,
        };
        (mission_tool(&shape), tool_call(&shape))
    }

    #[test]
    fn mission_tools_are_recognised_in_every_spelling() {
        for (kind, title, meta) in [
            (
                "other",
                "{\"summary\":\"x\"}",
                json!({"toolName": "mcp__mission__mission_report"}),
            ),
            ("other", "mcp__mission__mission_report", json!({})),
            ("other", "mcp_mission_mission_report", json!({})),
            ("other", "mission_mission_report", json!({})),
            ("other", "mission/mission_report", json!({})),
            ("other", "Tool: mission/mission_report", json!({})),
            ("other", "mission_report (mission MCP Server)", json!({})),
            ("other", "Report to the operator", json!({})),
            (
                "other",
                "x",
                json!({"missionboard.missionTool": "mission_report"}),
            ),
            (
                "other",
                "x",
                json!({"claudeCode": {"toolName": "mcp__mission__mission_report"}}),
            ),
            (
                "other",
                "x",
                json!({"toolsName": "mission", "toolName": "mission_report"}),
            ),
        ] {
            assert_eq!(
                shape_call(kind, title, None, meta.clone()).0,
                Some(if title == "Report to the operator" {
                    DISPLAY_TITLED
                } else {
                    "mission_report"
                }),
                "{title} {meta}"
            );
        }
    }

    #[test]
    fn look_alikes_are_not_mission_tools() {
        for (kind, title, meta) in [
            ("execute", "echo mission_report", json!({})),
            ("execute", "mcp__mission__mission_report", json!({})),
            ("other", "mission_report (evil MCP Server)", json!({})),
            ("other", "mcp__evil__mission_report", json!({})),
            ("other", "please run mission_report for me", json!({})),
            (
                "other",
                "x",
                json!({"missionboard.missionTool": "local_shell"}),
            ),
            (
                "other",
                "mission_report",
                json!({"toolName": "mcp__evil__mission_report"}),
            ),
            (
                "other",
                "mission_report",
                json!({"toolsName": "evil", "toolName": "mission_report"}),
            ),
            ("read", "read src/x", json!({})),
        ] {
            assert_eq!(
                shape_call(kind, title, None, meta.clone()).0,
                None,
                "{title} {meta}"
            );
        }
        let evil = json!({"server_name": "evil", "request": {}});
        let (ours, _) = shape_call("other", "Approve mission_report", Some(evil), json!({}));
        assert_eq!(ours, None, "codex names another server");
    }

    /// What a fixture's frames must normalise to.
    #[derive(serde::Deserialize, Default)]
    #[serde(deny_unknown_fields)]
    struct Expect {
        #[serde(default)]
        mission: bool,
        /// `tools.tool`
        #[serde(default)]
        call: Option<String>,
        /// Arguments the call must carry (a subset of its args).
        #[serde(default)]
        args: Map<String, Value>,
        /// The verdict of the shipped strict envelope, when the fixture checks it.
        #[serde(default)]
        strict: Option<String>,
    }

    /// What a frame recorded by the conformance suite (`request_permission.<case>.
    /// <title>.json`, `tool_call.<case>.<title>.json`) must normalise to, by its
    /// title. `None`: a recording this table has no row for yet.
    fn recorded_expect(kind: &str, title: &str) -> Option<Expect> {
        let mission = Expect {
            mission: true,
            ..Expect::default()
        };
        let call = |call: &str, args: Value, strict: Option<&str>| Expect {
            call: Some(call.to_string()),
            args: args.as_object().cloned().unwrap_or_default(),
            strict: strict.map(str::to_string),
            ..Expect::default()
        };
        if kind == "tool_call" {
            let ours = title.starts_with("tool_mission_mission_") || title.starts_with("mission_");
            return Some(Expect {
                mission: ours,
                ..Expect::default()
            });
        }
        Some(match title {
            // codex: `Approve <MCP tool title>`; gemini: `<tool> (mission MCP Server)`.
            t if t.starts_with("approve_") || t.ends_with("_mission_mcp_server") => mission,
            "edit_tmp_conformance_work_approved_txt" | "writing_to_approved_txt" => call(
                "local_fs.write_file",
                json!({"path": "/tmp/conformance/work/approved.txt"}),
                None,
            ),
            "printf_hi_out_txt" => call("local_shell.local_shell", json!({}), Some("approve")),
            "shred_u_victim_txt" => call("local_shell.local_shell", json!({}), Some("deny")),
            _ => return None,
        })
    }

    /// A fixture's frames as JSON-RPC messages, and what they must normalise to.
    /// Hand-written fixtures hold both (`frames`, `expect`); a conformance recording
    /// holds one frame, its expectation found by its file name.
    fn fixture(name: &str, doc: Value) -> Option<(Vec<Value>, Expect)> {
        if let Some(frames) = doc.get("frames") {
            let expect = serde_json::from_value(doc["expect"].clone()).unwrap_or_else(|e| {
                panic!("{name}: needs an 'expect' of mission/call/args/strict: {e}")
            });
            return Some((frames.as_array().cloned().unwrap_or_default(), expect));
        }
        let file = name.rsplit('/').next().unwrap().trim_end_matches(".json");
        let mut parts = file.splitn(3, '.');
        let (kind, _case, title) = (parts.next()?, parts.next()?, parts.next()?);
        let frame = match kind {
            "request_permission" => {
                json!({"method": "session/request_permission", "params": doc["params"]})
            }
            "tool_call" => json!({"method": "session/update", "params": doc}),
            // Handshake results and notes: nothing to normalise.
            _ => return None,
        };
        let expect = recorded_expect(kind, title).unwrap_or_else(|| {
            panic!("{name}: a recorded frame with no row in recorded_expect; add one")
        });
        Some((vec![frame], expect))
    }

    /// Every frame under `tests/fixtures/acp/<agent>/` — the hand-written ones and
    /// those the conformance suite recorded — read the way the host reads them off
    /// the wire, and normalised.
    #[test]
    fn every_agent_fixture_normalises_as_it_expects() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp");
        let strict_bytes = crate::presets::get("hitl-policy-strict.json")
            .unwrap()
            .bytes;
        let strict = crate::envelope::format::Envelope::parse("strict", strict_bytes).unwrap();
        let mut files = Vec::new();
        for agent in std::fs::read_dir(&root).expect("tests/fixtures/acp exists") {
            for file in std::fs::read_dir(agent.unwrap().path()).unwrap() {
                let path = file.unwrap().path();
                if path.extension().is_some_and(|e| e == "json") {
                    files.push(path);
                }
            }
        }
        files.sort();
        let recorded_checked = check_recorded_transcripts(&root);
        assert!(
            recorded_checked >= 20,
            "only {recorded_checked} recorded permission requests under {}/*/recorded",
            root.display()
        );
        for agent in ["claude", "codex", "gemini", "qwen", "opencode", "goose"] {
            assert!(
                files.iter().any(|f| f.parent().unwrap().ends_with(agent)),
                "no fixture for {agent}: {files:?}"
            );
        }
        let mut checked = 0;
        for file in &files {
            let name = file.strip_prefix(&root).unwrap().display().to_string();
            let doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap())
                .unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
            let Some((frames, expect)) = fixture(&name, doc) else {
                continue;
            };
            checked += 1;
            for frame in frames {
                let params = frame["params"].clone();
                match frame["method"].as_str() {
                    Some("session/request_permission") => {
                        let ask = crate::acp_client::permission_ask_from_params(params.clone())
                            .unwrap_or_else(|e| panic!("{name}: request unreadable: {e}"));
                        for (reply, once) in [
                            (crate::acp_client::PermissionReply::Allow, "allow_once"),
                            (crate::acp_client::PermissionReply::Reject, "reject_once"),
                        ] {
                            let id =
                                crate::acp_client::option_chosen_from_params(params.clone(), reply)
                                    .unwrap();
                            let kind = ask.options.iter().find(|(o, _)| Some(o) == id.as_ref());
                            assert_eq!(
                                kind.map(|(_, k)| k.as_str()),
                                Some(once),
                                "{name}: {reply:?} answers the {once} option, never an always one"
                            );
                        }
                        let shape = Shape::of_request(&ask);
                        assert_eq!(
                            mission_tool(&shape).is_some(),
                            expect.mission,
                            "{name}: mission tool?"
                        );
                        if expect.mission {
                            continue;
                        }
                        let call = tool_call(&shape);
                        assert_eq!(
                            Some(format!("{}.{}", call.tools, call.tool)),
                            expect.call,
                            "{name}: {call:?}"
                        );
                        for (k, v) in &expect.args {
                            assert_eq!(call.args.get(k), Some(v), "{name}: args.{k} of {call:?}");
                        }
                        if let Some(want) = &expect.strict {
                            let got = crate::envelope::eval::evaluate("strict", &strict, &call);
                            assert_eq!(got.action.as_str(), want, "{name}: strict on {call:?}");
                        }
                    }
                    Some("session/update") => {
                        let event = crate::acp_client::unit_event_from_params(params)
                            .unwrap_or_else(|e| panic!("{name}: update unreadable: {e}"));
                        let shape = event.as_ref().and_then(Shape::of_event);
                        let shape = shape.unwrap_or_else(|| panic!("{name}: not a tool_call"));
                        assert_eq!(
                            mission_tool(&shape).is_some(),
                            expect.mission,
                            "{name}: tool_call update a mission tool?"
                        );
                    }
                    other => panic!("{name}: unexpected frame {other:?}"),
                }
            }
        }
        assert!(checked >= 26, "only {checked} fixtures held frames");
    }

    /// The transcripts the conformance suite recorded from the real agents
    /// (`<agent>/recorded/*.json`: every frame of a case, requests and answers). Their
    /// scripted models call only the mission tools, a shell line and a file write, so
    /// each permission request must read as a mission tool exactly when it names one,
    /// and as a shell or file call otherwise — never as a foreign `acp.*` tool.
    /// Returns how many requests were checked.
    fn check_recorded_transcripts(root: &std::path::Path) -> usize {
        let mut checked = 0;
        for agent in std::fs::read_dir(root).unwrap() {
            let dir = agent.unwrap().path().join("recorded");
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let path = entry.unwrap().path();
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let name = path.strip_prefix(root).unwrap().display().to_string();
                let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
                    .unwrap_or_else(|e| panic!("{name}: not JSON: {e}"));
                let frames = doc["frames"].as_array().cloned().unwrap_or_default();
                for frame in frames
                    .iter()
                    .filter(|f| f["method"] == "session/request_permission")
                {
                    let names_one = crate::mission_mcp::MISSION_TOOL_NAMES
                        .iter()
                        .any(|t| frame["params"].to_string().contains(t));
                    let ask =
                        crate::acp_client::permission_ask_from_params(frame["params"].clone())
                            .unwrap_or_else(|e| panic!("{name}: request unreadable: {e}"));
                    let shape = Shape::of_request(&ask);
                    assert_eq!(
                        mission_tool(&shape).is_some(),
                        names_one,
                        "{name}: a mission tool exactly when it names one: {frame}"
                    );
                    if !names_one {
                        let call = tool_call(&shape);
                        assert!(
                            call.tools == "local_shell" || call.tools == "local_fs",
                            "{name}: a shell or file call, not {call:?}: {frame}"
                        );
                    }
                    checked += 1;
                }
            }
        }
        checked
    }

    #[test]
    fn goose_titles_name_mission_tools_only_for_a_call_with_no_command_or_file() {
        assert_eq!(goose_title("developer__shell"), "Developer: Shell");
        assert_eq!(
            goose_title("developer__text_editor"),
            "Developer: Text Editor"
        );
        assert_eq!(
            goose_title("mission__mission_report"),
            "Mission: Mission Report"
        );
        let report = json!({"kind": "progress", "summary": "x"});
        for (title, tool) in [
            ("Mission: Mission Report", "mission_report"),
            ("Mission: Mission Plan", "mission_plan"),
            ("Mission: Mission Ask Attention", "mission_ask_attention"),
            ("Mission: Mission Finish", "mission_finish"),
        ] {
            let (ours, _) = shape_call("other", title, Some(report.clone()), json!({}));
            assert_eq!(ours, Some(tool), "{title}");
            let (ours, _) = shape_call("other", title, None, json!({}));
            assert_eq!(ours, Some(tool), "{title} as a tool_call update titles it");
        }
        for (kind, title) in [
            ("execute", "Mission: Mission Report"),
            ("other", "Evil: Mission Report"),
            ("other", "Mission: Mission Report Now"),
            ("other", "Mission Mission: Report"),
            ("other", "Please call Mission: Mission Report"),
        ] {
            let (ours, _) = shape_call(kind, title, Some(report.clone()), json!({}));
            assert_eq!(ours, None, "{kind} {title}");
        }
        // A hostile agent titles a shell call as a mission tool, or names one in
        // `_meta`: the command line in its input says what it runs.
        for meta in [
            json!({}),
            json!({"toolName": "mcp__mission__mission_finish"}),
        ] {
            let (ours, call) = shape_call(
                "other",
                "Mission: Mission Finish",
                Some(json!({"command": "rm -rf ~"})),
                meta.clone(),
            );
            assert_eq!(ours, None, "{meta}");
            assert_eq!(
                (call.tools.as_str(), call.args["command"].as_str()),
                ("local_shell", Some("rm -rf ~"))
            );
        }
        let (ours, _) = shape_call(
            "other",
            "Mission: Mission Finish",
            Some(json!({"cmd": ["rm", "-rf", "~"]})),
            json!({}),
        );
        assert_eq!(ours, None, "codex's cmd is a command line too");
        let (ours, call) = shape_call(
            "other",
            "Mission: Mission Report",
            Some(json!({"path": "/home/u/.ssh/id_ed25519", "summary": "x"})),
            json!({"toolName": "mcp__mission__mission_report"}),
        );
        assert_eq!(ours, None, "no mission tool takes a file");
        assert_eq!(call.args["path"], "/home/u/.ssh/id_ed25519");
    }

    #[test]
    fn text_editor_calls_are_file_calls_and_shell_calls_stay_shell_calls() {
        let (_, c) = shape_call(
            "other",
            "Developer: Text Editor",
            Some(json!({"path": "/w/a.txt", "command": "view", "view_range": [1, 5]})),
            json!({}),
        );
        assert_eq!(
            (c.tools.as_str(), c.tool.as_str()),
            ("local_fs", "read_file")
        );
        assert_eq!(
            c.args.get("command"),
            None,
            "an operation, not a command line"
        );
        assert_eq!(c.args["operation"], "view");
        assert_eq!(c.args["path"], "/w/a.txt");
        for op in ["write", "create", "str_replace", "insert", "undo_edit"] {
            let (_, c) = shape_call(
                "other",
                "Developer: Text Editor",
                Some(json!({"path": "/w/a.txt", "command": op})),
                json!({}),
            );
            assert_eq!(
                (c.tools.as_str(), c.tool.as_str()),
                ("local_fs", "write_file"),
                "{op}"
            );
        }
        for (kind, title, raw) in [
            // goose's shell runs `command` and ignores what else its input holds.
            (
                "other",
                "Developer: Shell",
                json!({"path": "/w/a", "command": "view"}),
            ),
            (
                "execute",
                "view",
                json!({"path": "/w/a", "command": "view"}),
            ),
            // A key the editor does not take: not the editor's shape.
            (
                "other",
                "Developer: Text Editor",
                json!({"path": "/w/a", "command": "write", "shell": true}),
            ),
            // An operation the editor does not have.
            (
                "other",
                "Developer: Text Editor",
                json!({"path": "/w/a", "command": "rm -rf /w"}),
            ),
            (
                "other",
                "Developer: Text Editor",
                json!({"path": 7, "command": "view"}),
            ),
        ] {
            let (_, c) = shape_call(kind, title, Some(raw.clone()), json!({}));
            assert_eq!(c.tools, "local_shell", "{kind} {title} {raw}");
        }
    }

    #[test]
    fn shell_lines_come_from_the_input_or_the_title() {
        let (_, c) = shape_call("execute", "shred -u victim.txt", None, json!({}));
        assert_eq!(
            (c.tools.as_str(), c.args["command"].as_str()),
            ("local_shell", Some("shred -u victim.txt"))
        );
        let (_, c) = shape_call(
            "other",
            "`rm -rf x`",
            Some(json!({"command": "rm -rf x"})),
            json!({}),
        );
        assert_eq!(c.tools, "local_shell");
        let (_, c) = shape_call(
            "read",
            "Read a.txt",
            Some(json!({"command": ["bash", "-lc", "cat a.txt"]})),
            json!({}),
        );
        assert_eq!(
            c.tools, "local_shell",
            "a shell line that reads is a shell line"
        );
        assert_eq!(c.args["command"], "bash");
        assert_eq!(c.args["args"], json!(["-lc", "cat a.txt"]));
    }

    #[test]
    fn file_calls_map_to_local_fs() {
        let (_, c) = shape_call(
            "edit",
            "Edit",
            Some(json!({"file_path": "src/a.rs"})),
            json!({}),
        );
        assert_eq!(
            (c.tool.as_str(), c.args["path"].as_str()),
            ("write_file", Some("src/a.rs"))
        );
        let (_, c) = shape_call(
            "other",
            "Write",
            Some(json!({"file_path": "a", "content": "x"})),
            json!({}),
        );
        assert_eq!(
            (c.tools.as_str(), c.tool.as_str()),
            ("local_fs", "write_file")
        );
        let (_, c) = shape_call(
            "other",
            "x",
            Some(json!({"path": "a"})),
            json!({"toolsName": "git", "toolName": "git_commit"}),
        );
        assert_eq!((c.tools.as_str(), c.tool.as_str()), ("git", "git_commit"));
    }
}
