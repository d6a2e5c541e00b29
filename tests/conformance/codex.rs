//! Codex through codex-acp, on the scripted OpenAI Responses API.

use serde_json::{Value, json};

use crate::harness::*;
use crate::{cases, hitl};

pub const PIN: Pin = Pin {
    package: "@zed-industries/codex-acp",
    version: "0.16.0",
    bin: "codex-acp",
};

/// codex reads its endpoint only from its own config (never `OPENAI_BASE_URL`), and
/// a provider of its own needs no login: the operator's `CODEX_HOME` holds one that
/// names the scripted server. `OPENAI_BASE_URL` names the same endpoint for the
/// catalogue's `{model}` port. No retries: an exhausted script fails the turn at once.
fn provider_env(model: &Model) -> Vec<(String, String)> {
    let home = model.dir().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let base_url = format!("{}/v1", model.base);
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model = \"gpt-5.4\"\n\
             model_provider = \"scripted\"\n\
             \n\
             [model_providers.scripted]\n\
             name = \"scripted\"\n\
             base_url = \"{base_url}\"\n\
             wire_api = \"responses\"\n\
             request_max_retries = 0\n\
             stream_max_retries = 0\n"
        ),
    )
    .unwrap();
    vec![
        ("CODEX_HOME".into(), home.display().to_string()),
        ("OPENAI_BASE_URL".into(), base_url),
    ]
}

/// codex offers an MCP server's tools in a namespace (`mcp__mission`) under their own
/// names; the scripted server sends a call in the namespace its tool was offered in.
fn mission_tool(name: &str) -> String {
    name.to_string()
}

/// `apply_patch`, codex's freeform (custom) tool: its input is the patch text.
fn write_call(path: &str, content: &str) -> Value {
    let added: String = content.lines().map(|l| format!("+{l}\n")).collect();
    json!({
        "tool": "apply_patch",
        "input": format!("*** Begin Patch\n*** Add File: {path}\n{added}*** End Patch\n"),
    })
}

fn shell_call(command: &str) -> Value {
    call("exec_command", json!({ "cmd": command }))
}

pub static CODEX: Conformer = Conformer {
    name: "codex",
    pin: PIN,
    api: "openai_responses",
    provider_env,
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: None,
};

#[test]
fn lands_under_default() {
    cases::lands(&CODEX, "default");
}

#[test]
fn lands_through_the_queue_under_default() {
    cases::lands_through_the_queue(&CODEX, "default");
}

#[test]
fn gated_write_approved_under_default() {
    cases::gated_write_approved(&CODEX, "default");
}

#[test]
fn gated_write_approved_under_strict() {
    cases::gated_write_approved(&CODEX, "strict");
}

#[test]
fn question_answered_under_default() {
    cases::question_answered(&CODEX, "default");
}

#[test]
fn denied_call_under_default() {
    cases::denied_call(&CODEX, "default");
}

#[test]
fn denied_call_under_strict() {
    cases::denied_call(&CODEX, "strict");
}

#[test]
fn stopped_under_default() {
    cases::stopped(&CODEX, "default");
}

#[test]
fn stopped_under_strict() {
    cases::stopped(&CODEX, "strict");
}

#[test]
fn killed_host_resumed_under_default() {
    cases::killed_host_resumed(&CODEX, "default");
}

#[test]
fn killed_host_resumed_once_after_its_survivors_are_reaped() {
    hitl::killed_host_resumed_once_after_its_survivors_are_reaped(&CODEX);
}

#[test]
fn refusal_named_to_the_model() {
    hitl::refusal_named_to_the_model(&CODEX);
}

// acpx: a driver nobody vetted; everything but the mission tools is refused.
#[test]
fn lands_under_acpx() {
    cases::lands(&CODEX, "acpx");
}

#[test]
fn denied_call_under_acpx() {
    cases::denied_call(&CODEX, "acpx");
}

#[test]
fn killed_mid_handshake_leaves_nothing() {
    cases::killed_host_leaves_nothing(&CODEX, "default", cases::Kill::MidHandshake);
}

#[test]
fn killed_mid_turn_leaves_nothing() {
    cases::killed_host_leaves_nothing(&CODEX, "default", cases::Kill::MidTurn);
}
