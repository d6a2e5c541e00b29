//! Kilo (`kilo acp`, the Kilo Code CLI, built on opencode), on the scripted OpenAI
//! Chat Completions API through an OpenAI-compatible provider named in the project's
//! `kilo.json`.

use std::path::Path;

use serde_json::{Value, json};

use crate::cases;
use crate::harness::{Conformer, Model, Pin, call};

pub static KILO: Conformer = Conformer {
    name: "kilo",
    pin: Pin {
        package: "@kilocode/cli",
        version: "7.7.7",
        bin: "kilo",
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
        // No OPENAI_BASE_URL: the endpoint is in the project's kilo.json only,
        // where missionboard reads `{model}` from too.
        ("OPENAI_API_KEY", "sk-scripted".to_string()),
        // Loopback only: no models.dev catalogue, no update checks, no downloads.
        ("KILO_DISABLE_MODELS_FETCH", "1".to_string()),
        ("KILO_DISABLE_AUTOUPDATE", "1".to_string()),
        ("KILO_DISABLE_LSP_DOWNLOAD", "1".to_string()),
        ("KILO_DISABLE_SHARE", "1".to_string()),
        // Nothing a case needs, each slow on a loaded machine: its codebase index,
        // session upload, presence, default plugins, external skills, Claude Code's.
        ("KILO_DISABLE_CODEBASE_INDEXING", "1".to_string()),
        ("KILO_DISABLE_SESSION_INGEST", "1".to_string()),
        ("KILO_DISABLE_PRESENCE", "1".to_string()),
        ("KILO_DISABLE_DEFAULT_PLUGINS", "1".to_string()),
        ("KILO_DISABLE_EXTERNAL_SKILLS", "1".to_string()),
        ("KILO_DISABLE_CLAUDE_CODE", "1".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// The project config a user writes to point Kilo at an OpenAI-compatible server.
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
        workspace.join("kilo.json"),
        serde_json::to_string_pretty(&config).unwrap(),
    )
    .unwrap();
}

/// Kilo names an MCP tool `<server>_<tool>`, as opencode does.
fn mission_tool(name: &str) -> String {
    format!("mission_{name}")
}

fn write_call(path: &str, content: &str) -> Value {
    call("write", json!({"filePath": path, "content": content}))
}

fn shell_call(command: &str) -> Value {
    call("bash", json!({"command": command, "description": "run it"}))
}

// Kilo takes a minute or more per case on this 2-core machine (a 170 MB runtime
// started per unit), past the suite's per-step wait once the rest of `cargo test`
// shares the cores: its cases run on demand, `cargo test --test conformance -- --ignored
// kilo::` (each passes run alone).
cases::agent_cases!(
    #[ignore = "slow: run with --ignored kilo::"]
    KILO,
    killed_host,
    hitl
);

/// A custom endpoint under `strict`: the scripted server on loopback named only in
/// the project's kilo.json (no `OPENAI_BASE_URL`, no hand grant) — its port is
/// the one `{model}` opens, and the mission lands.
#[test]
#[ignore = "slow: run with --ignored kilo::"]
fn lands_under_strict_on_the_endpoint_its_kilo_json_names() {
    cases::lands(&KILO, "strict");
}
