//! Codex through codex-acp, on the scripted OpenAI Responses API.

use serde_json::{Value, json};

use crate::cases;
use crate::harness::*;

pub const PIN: Pin = Pin {
    package: "@zed-industries/codex-acp",
    version: "0.16.0",
    bin: "codex-acp",
};

/// codex reads its endpoint only from its own config (never `OPENAI_BASE_URL`), and
/// a provider of its own needs no login: the operator's `CODEX_HOME` holds one that
/// names the scripted server, which is all missionboard reads its `{model}` port from
/// too. No retries: an exhausted script fails the turn at once.
fn provider_env(model: &Model) -> Vec<(String, String)> {
    vec![("CODEX_HOME".into(), codex_home(model).display().to_string())]
}

/// The `CODEX_HOME` whose config.toml names the scripted server as its provider.
fn codex_home(model: &Model) -> std::path::PathBuf {
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
    home
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

cases::agent_cases!(CODEX, killed_host, hitl, check);

/// One real agent through the durable queue: `mission fire --queue --wait` and a
/// `missionboard host` that claims and lands it.
#[test]
fn lands_through_the_queue_under_default() {
    cases::lands_through_the_queue(&CODEX, "default");
}

/// A custom endpoint under `strict`: the scripted server on loopback named only in
/// codex's own config.toml (no `OPENAI_BASE_URL`, no hand grant) — its port is the one
/// `{model}` opens, and the mission lands.
#[test]
fn lands_under_strict_on_the_endpoint_its_config_toml_names() {
    cases::lands(&CODEX, "strict");
}

/// An agents.toml entry for codex written by hand without the catalogue's endpoint
/// reader: `{model}` opens only OpenAI's port, the sandbox refuses codex's connection
/// to the scripted server, and the mission's blocker says so — the endpoint, the
/// envelope and the fix — on `mission show`.
#[test]
fn a_connection_the_sandbox_refuses_is_named_in_the_blocker() {
    cases::refused_connection_named(&CODEX);
}
