//! opencode (`opencode acp`), on the scripted OpenAI Chat Completions API through an
//! OpenAI-compatible provider named in the project's `opencode.json`.

use std::path::Path;

use serde_json::{Value, json};

use crate::cases;
use crate::harness::{Conformer, Model, Pin, call};

pub static OPENCODE: Conformer = Conformer {
    name: "opencode",
    pin: Pin {
        package: "opencode-ai",
        version: "1.18.33",
        bin: "opencode",
    },
    api: "openai_chat",
    provider_env,
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: Some(workspace_setup),
};

fn provider_env(_model: &Model) -> Vec<(String, String)> {
    [
        // No OPENAI_BASE_URL: the endpoint is in the project's opencode.json only,
        // where missionboard reads `{model}` from too.
        ("OPENAI_API_KEY", "sk-scripted".to_string()),
        // Loopback only: no models.dev catalogue, no update checks, no downloads.
        ("OPENCODE_DISABLE_MODELS_FETCH", "1".to_string()),
        ("OPENCODE_DISABLE_AUTOUPDATE", "1".to_string()),
        ("OPENCODE_DISABLE_LSP_DOWNLOAD", "1".to_string()),
        ("OPENCODE_DISABLE_SHARE", "1".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The project config a user writes to point opencode at an OpenAI-compatible server.
fn workspace_setup(workspace: &Path, model: &Model) {
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            "scripted": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Scripted",
                "options": {"baseURL": format!("{}/v1", model.base), "apiKey": "sk-scripted"},
                "models": {"scripted-model": {"name": "Scripted model", "tool_call": true}}
            }
        },
        "model": "scripted/scripted-model",
        "small_model": "scripted/scripted-model",
        "autoupdate": false,
        "share": "disabled"
    });
    std::fs::write(
        workspace.join("opencode.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
}

/// opencode names an MCP tool `<server>_<tool>`.
fn mission_tool(name: &str) -> String {
    format!("mission_{name}")
}

fn write_call(path: &str, content: &str) -> Value {
    call("write", json!({"filePath": path, "content": content}))
}

fn shell_call(command: &str) -> Value {
    call("bash", json!({"command": command, "description": "run it"}))
}

cases::agent_cases!(OPENCODE, killed_host, hitl);

/// A custom endpoint under `strict`: the scripted server on loopback named only in
/// the project's opencode.json (no `OPENAI_BASE_URL`, no hand grant) — its port is
/// the one `{model}` opens, and the mission lands.
#[test]
fn lands_under_strict_on_the_endpoint_its_opencode_json_names() {
    cases::lands(&OPENCODE, "strict");
}
