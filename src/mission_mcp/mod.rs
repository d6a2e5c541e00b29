//! The mission tools, served to units as an MCP server.
//!
//! Each mission gets its own Unix socket ([`serve_mission_socket`]); the
//! socket *is* the mission's identity, so no tool takes a mission id, and a
//! connection must first present the socket's token, which only the mission's
//! own bridge entry carries. Units
//! reach it through a stdio MCP entry running `missionboard mcp-bridge
//! <socket>` ([`bridge_server_entry`], [`run_mcp_bridge`]), which every ACP
//! agent supports. What the tools *do* is up to the [`MissionToolHandler`]
//! the mission service supplies; this module only carries calls to it.

mod bridge;
pub mod client;
pub mod repeats;
mod server;
mod socket;

use std::path::Path;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

pub use bridge::run_mcp_bridge;
pub use server::serve_mission_stream;
pub use socket::{MissionSocket, connect_mission_socket, serve_mission_socket, socket_path_for};

use crate::acp_client::McpStdioServer;

/// The mission service's side of the tools.
///
/// `tool` is one of [`MISSION_TOOL_NAMES`] (unknown names never reach the
/// handler) and `args` is the call's raw arguments object, unvalidated.
/// `Ok(text)` becomes the tool result; `Err(text)` becomes an MCP tool error
/// result (`isError: true`) carrying that text, which the agent's model reads.
///
/// The future may run for as long as the answer takes (an ask blocks until
/// someone answers). It is dropped if the unit hangs up or cancels the call.
pub trait MissionToolHandler: Send + Sync + 'static {
    fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<String, String>>;
}

pub const MISSION_REPORT: &str = "mission_report";
pub const MISSION_PLAN: &str = "mission_plan";
/// The name an ask row records for the question this tool files.
pub const MISSION_ASK_ATTENTION: &str = crate::asks::QUESTION_TOOL;
pub const MISSION_FINISH: &str = "mission_finish";

/// The tools' display titles (MCP `title`), which some agents show in place of names.
const REPORT_TITLE: &str = "Report to the operator";
const PLAN_TITLE: &str = "File or revise the plan";
const ASK_TITLE: &str = "Ask the operator";
const FINISH_TITLE: &str = "Finish the mission";
const MISSION_TOOL_TITLES: [&str; 4] = [REPORT_TITLE, PLAN_TITLE, ASK_TITLE, FINISH_TITLE];

/// The four tools, in the order they are listed.
pub const MISSION_TOOL_NAMES: [&str; 4] = [
    MISSION_REPORT,
    MISSION_PLAN,
    MISSION_ASK_ATTENTION,
    MISSION_FINISH,
];

/// The start of the tool result a parked question returns; agents (the native agent, our
/// stub) recognise it, and re-asking with the `ask_id` waits on the same question again.
pub const PARKED_PREFIX: &str = "no answer yet (ask_id=";

/// The marker lines of the turn that delivers a parked question's answer; a resumed
/// unit (our stub, or a model) reads its answer from them.
pub const QUESTION_LINE: &str = "Your question: ";
pub const ANSWER_LINE: &str = "The operator's answer: ";
/// The marker lines of a resumed gated call: which call, and the verdict on it.
pub const GATED_CALL_LINE: &str = "Your gated tool call: ";
pub const VERDICT_LINE: &str = "The operator's verdict: ";
/// The marker line of a resumed elicitation: the message of the form (or page) the
/// unit sent, its answer following on an [`ANSWER_LINE`] as `accept k=v; …`,
/// `decline` or `cancel`.
pub const FORM_LINE: &str = "Your form: ";
/// The marker that opens the operator's feedback in a revised run's first turn
/// (`mission revise`), and the line that closes it: the feedback may span lines.
pub const FEEDBACK_LINE: &str = "The operator's feedback: ";
pub const FEEDBACK_END: &str = "(end of the operator's feedback)";

/// The name of the MCP server entry units get (`mission`).
pub const MISSION_SERVER_NAME: &str = "mission";

/// The `_meta` key (on a permission request or its tool call) by which an agent
/// names the mission tool it asks to run: `{"missionboard.missionTool": "mission_report"}`.
pub const MISSION_TOOL_META_KEY: &str = "missionboard.missionTool";

/// Does `label` — a tool call's or permission request's title, or a tool name as an
/// agent spells it — name one of the mission tools? Agents qualify names their own
/// way (`mcp__mission__mission_report`, `mission/mission_report`) or show the tool's
/// display title (`Report to the operator`, perhaps with a trailing `(…)` naming the
/// server); a title must match whole, so a title that merely mentions one does not.
pub fn names_mission_tool(label: &str) -> bool {
    if MISSION_TOOL_NAMES.iter().any(|t| label.contains(t)) {
        return true;
    }
    let mut title = label.trim();
    if title.ends_with(')')
        && let Some(open) = title.rfind(" (")
    {
        title = title[..open].trim_end();
    }
    MISSION_TOOL_TITLES
        .iter()
        .any(|t| t.eq_ignore_ascii_case(title))
}

/// The error text for a tool that is not one of ours.
pub fn unknown_tool_error(name: &str) -> String {
    format!(
        "missiontools: unknown tool {name:?} (want mission_report, mission_ask_attention, mission_plan or mission_finish)"
    )
}

/// The bridge's flag naming its one-use token file.
pub const TOKEN_FILE_FLAG: &str = "--token-file";

/// The stdio MCP entry that connects a unit to its mission socket: `exe
/// mcp-bridge <socket> --token-file <file>`, where `exe` is normally
/// `std::env::current_exe()` and the file, in `private_dir` (the unit's own temp
/// dir), holds a one-use token the bridge unlinks as it reads it. The entry carries
/// no secret in its arguments or environment.
pub fn bridge_server_entry(
    exe: &Path,
    socket: &MissionSocket,
    private_dir: &Path,
) -> std::io::Result<McpStdioServer> {
    let token_file = socket.issue_bridge_token(private_dir)?;
    Ok(McpStdioServer {
        name: MISSION_SERVER_NAME.to_owned(),
        command: exe.to_path_buf(),
        args: vec![
            "mcp-bridge".to_owned(),
            socket.path().display().to_string(),
            TOKEN_FILE_FLAG.to_owned(),
            token_file.display().to_string(),
        ],
        env: Default::default(),
    })
}

/// One tool as listed to agents.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input_schema: Map<String, Value>,
}

fn object_schema(schema: Value) -> Map<String, Value> {
    match schema {
        Value::Object(map) => map,
        _ => unreachable!("tool schemas are object literals"),
    }
}

/// The tool catalogue: names, descriptions and JSON Schemas.
pub fn mission_tool_specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: MISSION_REPORT,
            title: REPORT_TITLE,
            description: "File a report on this mission for the operator. Nobody reads your \
                prose: reports are how progress, findings, blockers and results become visible. \
                Use kind=result (with refs to the artifacts you produced) when the work is done; \
                claimed artifacts that do not exist downgrade the report to progress.",
            input_schema: object_schema(json!({
                "type": "object",
                "properties": {
                    "kind": {
                        "type": "string",
                        "enum": ["progress", "finding", "blocker", "result"],
                        "description": "What this report is. Defaults to progress."
                    },
                    "summary": {
                        "type": "string",
                        "description": "One line saying what happened."
                    },
                    "detail": {
                        "type": "string",
                        "description": "Optional longer explanation; several lines are fine."
                    },
                    "refs": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Paths or URLs this report refers to. References only, never content."
                    },
                    "handover": {
                        "type": "object",
                        "description": "Optional structured hand-off for whoever picks the work up next.",
                        "properties": {
                            "outcome": {"type": "string", "description": "What was achieved."},
                            "artifacts": {
                                "type": "array",
                                "items": {"type": "string"},
                                "description": "Where the produced artifacts live."
                            },
                            "handoverForNext": {"type": "string", "description": "What the next unit should know or do."},
                            "caveats": {"type": "string", "description": "Known gaps, risks or shortcuts."}
                        }
                    }
                },
                "required": ["summary"]
            })),
        },
        ToolSpec {
            name: MISSION_PLAN,
            title: PLAN_TITLE,
            description: "Set this mission's plan. Every call is a full snapshot: entries you \
                leave out are deleted. Echo an entry's id to carry it forward; omit the id for a \
                new entry. Keep exactly one entry in_progress. The stored plan, with the ids the \
                runtime assigned, comes back as the result.",
            input_schema: object_schema(json!({
                "type": "object",
                "properties": {
                    "entries": {
                        "type": "array",
                        "description": "The whole plan, in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": {"type": "string", "description": "The id of an existing entry; omit for a new one."},
                                "content": {"type": "string", "description": "The step, in a line."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                                "priority": {"type": "string", "enum": ["high", "medium", "low"]}
                            },
                            "required": ["content", "status", "priority"]
                        }
                    },
                    "explanation": {
                        "type": "string",
                        "description": "Optional note on why the plan changed."
                    }
                },
                "required": ["entries"]
            })),
        },
        ToolSpec {
            name: MISSION_ASK_ATTENTION,
            title: ASK_TITLE,
            description: "Ask for a decision you cannot make yourself. The call waits for the \
                answer and returns its text. If it returns \"no answer yet\" with an ask_id, call \
                again with that ask_id to keep waiting, or carry on without it.",
            input_schema: object_schema(json!({
                "type": "object",
                "properties": {
                    "summary": {"type": "string", "description": "The question, in a line."},
                    "detail": {"type": "string", "description": "Optional context: options, trade-offs, what you would pick."},
                    "ask_id": {"type": "string", "description": "Resume waiting on an earlier ask instead of asking again."}
                },
                "required": ["summary"]
            })),
        },
        ToolSpec {
            name: MISSION_FINISH,
            title: FINISH_TITLE,
            description: "Declare the mission's final state. landed: the work is done (file a \
                result report first). derailed: it went wrong. stuck: you cannot proceed. \
                abandoned: it should not be done. This is final and cannot be changed.",
            input_schema: object_schema(json!({
                "type": "object",
                "properties": {
                    "status": {
                        "type": "string",
                        "enum": ["landed", "derailed", "stuck", "abandoned"]
                    },
                    "reason": {"type": "string", "description": "Optional one-line reason."}
                },
                "required": ["status"]
            })),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_lists_exactly_the_four_tools() {
        let specs = mission_tool_specs();
        let names: Vec<&str> = specs.iter().map(|s| s.name).collect();
        assert_eq!(names, MISSION_TOOL_NAMES);
        for spec in &specs {
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
            assert!(spec.input_schema["required"].is_array(), "{}", spec.name);
        }
        let report = &specs[0].input_schema;
        assert_eq!(
            report["properties"]["kind"]["enum"],
            json!(["progress", "finding", "blocker", "result"])
        );
    }

    #[test]
    fn mission_tools_are_named_by_name_or_whole_display_title() {
        for label in [
            "mcp__mission__mission_report",
            "mission/mission_finish",
            "Report to the operator",
            "  ask the operator ",
            "Finish the mission (mission MCP Server)",
        ] {
            assert!(names_mission_tool(label), "{label}");
        }
        for label in [
            "Report to the operator and delete src/",
            "read src/report.rs",
            "Finish the mission docs",
            "",
        ] {
            assert!(!names_mission_tool(label), "{label}");
        }
    }

    #[test]
    fn unknown_tool_text() {
        assert_eq!(
            unknown_tool_error("mission_launch"),
            "missiontools: unknown tool \"mission_launch\" (want mission_report, mission_ask_attention, mission_plan or mission_finish)"
        );
    }
}
