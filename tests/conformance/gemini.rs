//! Gemini CLI (`gemini --acp`), on the scripted Gemini API.

use serde_json::{Value, json};

use crate::harness::*;
use crate::{cases, hitl};

pub const PIN: Pin = Pin {
    package: "@google/gemini-cli",
    version: "0.61.0",
    bin: "gemini",
};

/// An API key and the base URL of the Gemini API (the catalogue passes both through).
fn provider_env(model: &Model) -> Vec<(String, String)> {
    vec![
        ("GEMINI_API_KEY".into(), "scripted-gemini-key".into()),
        ("GOOGLE_GEMINI_BASE_URL".into(), model.base.clone()),
    ]
}

/// gemini names an MCP server's tools `mcp_<server>_<tool>`.
fn mission_tool(name: &str) -> String {
    format!("mcp_mission_{name}")
}

fn write_call(path: &str, content: &str) -> Value {
    call(
        "write_file",
        json!({ "file_path": path, "content": content }),
    )
}

fn shell_call(command: &str) -> Value {
    call(
        "run_shell_command",
        json!({ "command": command, "description": "run the command" }),
    )
}

pub static GEMINI: Conformer = Conformer {
    name: "gemini",
    pin: PIN,
    api: "gemini",
    provider_env,
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: None,
};

#[test]
fn lands_under_default() {
    cases::lands(&GEMINI, "default");
}

#[test]
fn gated_write_approved_under_default() {
    cases::gated_write_approved(&GEMINI, "default");
}

#[test]
fn gated_write_approved_under_strict() {
    cases::gated_write_approved(&GEMINI, "strict");
}

#[test]
fn question_answered_under_default() {
    cases::question_answered(&GEMINI, "default");
}

#[test]
fn denied_call_under_default() {
    cases::denied_call(&GEMINI, "default");
}

#[test]
fn denied_call_under_strict() {
    cases::denied_call(&GEMINI, "strict");
}

#[test]
fn stopped_under_default() {
    cases::stopped(&GEMINI, "default");
}

#[test]
fn stopped_under_strict() {
    cases::stopped(&GEMINI, "strict");
}

#[test]
fn killed_host_resumed_under_default() {
    cases::killed_host_resumed(&GEMINI, "default");
}

#[test]
fn killed_host_resumed_once_after_its_survivors_are_reaped() {
    hitl::killed_host_resumed_once_after_its_survivors_are_reaped(&GEMINI);
}

#[test]
fn refusal_named_to_the_model() {
    hitl::refusal_named_to_the_model(&GEMINI);
}

// acpx: a driver nobody vetted; everything but the mission tools is refused.
#[test]
fn lands_under_acpx() {
    cases::lands(&GEMINI, "acpx");
}

#[test]
fn denied_call_under_acpx() {
    cases::denied_call(&GEMINI, "acpx");
}

#[test]
fn killed_mid_handshake_leaves_nothing() {
    cases::killed_host_leaves_nothing(&GEMINI, "default", cases::Kill::MidHandshake);
}

#[test]
fn killed_mid_turn_leaves_nothing() {
    cases::killed_host_leaves_nothing(&GEMINI, "default", cases::Kill::MidTurn);
}
