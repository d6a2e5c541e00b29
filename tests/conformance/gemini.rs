//! Gemini CLI (`gemini --acp`), on the scripted Gemini API.

use serde_json::{Value, json};

use crate::cases;
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
    workspace_setup: None,
};

cases::agent_cases!(GEMINI, killed_host, hitl);

/// Gemini CLI configured only through the workspace's `.gemini/.env`: no variable in
/// the host's environment names the endpoint.
static GEMINI_BY_ENV_FILE: Conformer = Conformer {
    name: "gemini",
    pin: PIN,
    api: "gemini",
    provider_env: |_| Vec::new(),
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: Some(env_file_setup),
};

/// The API key and the base URL in `.gemini/.env`, as a user keeps a project's.
fn env_file_setup(workspace: &std::path::Path, model: &Model) {
    let dir = workspace.join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    let lines: String = provider_env(model)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    std::fs::write(dir.join(".env"), lines).unwrap();
}

/// A custom endpoint under `strict`: the scripted server on loopback named only in
/// the workspace's `.gemini/.env` (no `GOOGLE_GEMINI_BASE_URL` exported, no hand
/// grant) — its port is the one `{model}` opens, and the mission lands.
#[test]
fn lands_under_strict_on_the_endpoint_its_env_file_names() {
    cases::lands(&GEMINI_BY_ENV_FILE, "strict");
}
