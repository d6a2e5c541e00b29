//! Qwen Code (`qwen --acp`), on the scripted OpenAI Chat Completions API.

use std::path::Path;

use serde_json::{Value, json};

use crate::cases;
use crate::harness::{Conformer, Model, Pin, call};

const PIN: Pin = Pin {
    package: "@qwen-code/qwen-code",
    version: "0.24.4",
    bin: "qwen",
};

pub static QWEN: Conformer = Conformer {
    name: "qwen",
    pin: PIN,
    api: "openai_chat",
    provider_env,
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: Some(workspace_setup),
};

fn provider_env(model: &Model) -> Vec<(String, String)> {
    [
        ("OPENAI_BASE_URL", format!("{}/v1", model.base)),
        ("OPENAI_API_KEY", "sk-scripted".to_string()),
        ("OPENAI_MODEL", "scripted-model".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Qwen Code runs background agents after a turn (memory extraction and
/// consolidation, skill review, follow-up suggestions) whose requests offer tools,
/// so the scripted model would spend the case's turns on them; the workspace's
/// settings turn them off.
fn workspace_setup(workspace: &Path, _model: &Model) {
    let settings = json!({
        "memory": {
            "enableManagedAutoMemory": false,
            "enableManagedAutoDream": false,
            "enableAutoSkill": false
        },
        "ui": {"enableFollowupSuggestions": false}
    });
    let dir = workspace.join(".qwen");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

/// Qwen Code names an MCP tool `mcp__<server>__<tool>`.
fn mission_tool(name: &str) -> String {
    format!("mcp__mission__{name}")
}

fn write_call(path: &str, content: &str) -> Value {
    call("write_file", json!({"file_path": path, "content": content}))
}

fn shell_call(command: &str) -> Value {
    call(
        "run_shell_command",
        json!({"command": command, "description": "run it", "is_background": false}),
    )
}

cases::agent_cases!(QWEN, killed_host, hitl, check);

/// Qwen Code configured only through the workspace's `.qwen/.env`, as a user keeps a
/// project's provider: no variable in the host's environment names the endpoint.
static QWEN_BY_ENV_FILE: Conformer = Conformer {
    name: "qwen",
    pin: PIN,
    api: "openai_chat",
    provider_env: |_| Vec::new(),
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: Some(env_file_setup),
};

/// The quiet settings, and the provider's three variables in `.qwen/.env`.
fn env_file_setup(workspace: &Path, model: &Model) {
    workspace_setup(workspace, model);
    let lines: String = provider_env(model)
        .into_iter()
        .map(|(k, v)| format!("{k}={v}\n"))
        .collect();
    std::fs::write(workspace.join(".qwen").join(".env"), lines).unwrap();
}

/// A custom endpoint under `strict`: the scripted server on loopback named only in
/// the workspace's `.qwen/.env` (no `OPENAI_BASE_URL` exported, no hand grant) — its
/// port is the one `{model}` opens, and the mission lands.
#[test]
fn lands_under_strict_on_the_endpoint_its_env_file_names() {
    cases::lands(&QWEN_BY_ENV_FILE, "strict");
}
