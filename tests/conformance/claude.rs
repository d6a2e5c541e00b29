//! Claude Code through claude-agent-acp, on the scripted Anthropic Messages API.

use serde_json::{Value, json};

use crate::cases;
use crate::harness::{Conformer, Model, Pin, call};

pub static CLAUDE: Conformer = Conformer {
    name: "claude",
    pin: Pin {
        package: "@zed-industries/claude-agent-acp",
        version: "0.23.1",
        bin: "claude-agent-acp",
    },
    api: "anthropic",
    provider_env,
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: None,
};

fn provider_env(model: &Model) -> Vec<(String, String)> {
    [
        ("ANTHROPIC_BASE_URL", model.base.as_str()),
        ("ANTHROPIC_API_KEY", "sk-ant-scripted"),
        // Loopback only: no update checks, telemetry or error reports.
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Claude Code names an MCP tool `mcp__<server>__<tool>`.
fn mission_tool(name: &str) -> String {
    format!("mcp__mission__{name}")
}

fn write_call(path: &str, content: &str) -> Value {
    call("Write", json!({"file_path": path, "content": content}))
}

fn shell_call(command: &str) -> Value {
    call("Bash", json!({"command": command, "description": "run it"}))
}

#[test]
fn lands_under_default() {
    cases::lands(&CLAUDE, "default");
}

#[test]
fn gated_write_approved_under_default() {
    cases::gated_write_approved(&CLAUDE, "default");
}

#[test]
fn gated_write_approved_under_strict() {
    cases::gated_write_approved(&CLAUDE, "strict");
}

#[test]
fn question_answered_under_default() {
    cases::question_answered(&CLAUDE, "default");
}

#[test]
fn denied_call_under_default() {
    cases::denied_call(&CLAUDE, "default");
}

#[test]
fn denied_call_under_strict() {
    cases::denied_call(&CLAUDE, "strict");
}

#[test]
fn stopped_under_default() {
    cases::stopped(&CLAUDE, "default");
}

#[test]
fn stopped_under_strict() {
    cases::stopped(&CLAUDE, "strict");
}

#[test]
fn killed_host_resumed_under_default() {
    cases::killed_host_resumed(&CLAUDE, "default");
}

// acpx: a driver nobody vetted; everything but the mission tools is refused.
#[test]
fn lands_under_acpx() {
    cases::lands(&CLAUDE, "acpx");
}

#[test]
fn denied_call_under_acpx() {
    cases::denied_call(&CLAUDE, "acpx");
}

#[test]
fn killed_mid_handshake_leaves_nothing() {
    cases::killed_host_leaves_nothing(&CLAUDE, "default", cases::Kill::MidHandshake);
}

#[test]
fn killed_mid_turn_leaves_nothing() {
    cases::killed_host_leaves_nothing(&CLAUDE, "default", cases::Kill::MidTurn);
}
