//! Gemini CLI (`gemini --acp`), on the scripted Gemini API.

use serde_json::{Value, json};

use crate::harness::*;

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
};

#[test]
fn lands_under_default() {
    crate::cases::lands(&GEMINI, "default");
}

#[test]
fn gated_write_approved_under_default() {
    crate::hitl::gated_write_approved(&GEMINI, "default");
}

#[test]
fn gated_write_approved_under_strict() {
    crate::hitl::gated_write_approved(&GEMINI, "strict");
}

#[test]
fn question_answered_under_default() {
    crate::hitl::question_answered(&GEMINI, "default");
}

#[test]
#[ignore = "needs norm: gemini's shell request has rawInput null, its command only in the title, so no command rule matches and it becomes an operator ask"]
fn denied_under_strict() {
    crate::hitl::denied_under_strict(&GEMINI);
}

#[test]
#[ignore = "needs norm: the shell command from the title, and the refusal turn that names the refused call"]
fn refusal_named_to_the_model() {
    crate::hitl::refusal_named_to_the_model(&GEMINI);
}

#[test]
fn stopped_under_default() {
    crate::hitl::stopped(&GEMINI, "default");
}

#[test]
fn stopped_under_strict() {
    crate::hitl::stopped(&GEMINI, "strict");
}

#[test]
fn killed_while_parked_resumes_once() {
    crate::hitl::killed_while_parked_resumes_once(&GEMINI);
}

#[test]
fn no_process_outlives_a_killed_host() {
    crate::hitl::no_process_outlives_a_killed_host(&GEMINI);
}
