//! opencode (`opencode acp`), on the scripted OpenAI Chat Completions API through an
//! OpenAI-compatible provider named in the project's `opencode.json`. Kilo is built on
//! opencode: its module takes the project config, the variables and the tool names
//! from here, under its own names.

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
    offline_env("OPENCODE", &[])
}

/// The host variables of an agent of opencode's line whose variables start with
/// `prefix` (`OPENCODE`, `KILO`): no `OPENAI_BASE_URL` (the endpoint is in the
/// project's config only, where missionboard reads `{model}` from too), the key, and
/// loopback only — no models.dev catalogue, no update checks, no downloads, no
/// sharing — plus `{prefix}_DISABLE_<what>` for each of `more`.
pub fn offline_env(prefix: &str, more: &[&str]) -> Vec<(String, String)> {
    let mut env = vec![("OPENAI_API_KEY".to_string(), "sk-scripted".to_string())];
    for what in ["MODELS_FETCH", "AUTOUPDATE", "LSP_DOWNLOAD", "SHARE"]
        .iter()
        .chain(more)
    {
        env.push((format!("{prefix}_DISABLE_{what}"), "1".to_string()));
    }
    env
}

fn workspace_setup(workspace: &Path, model: &Model) {
    write_project_config(&workspace.join("opencode.json"), model);
}

/// The project config a user writes to point opencode (or Kilo) at an
/// OpenAI-compatible server: the scripted one, as its only provider and model.
pub fn write_project_config(path: &Path, model: &Model) {
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
    std::fs::write(path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
}

/// opencode (and Kilo) name an MCP tool `<server>_<tool>`.
pub fn mission_tool(name: &str) -> String {
    format!("mission_{name}")
}

pub fn write_call(path: &str, content: &str) -> Value {
    call("write", json!({"filePath": path, "content": content}))
}

pub fn shell_call(command: &str) -> Value {
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

/// opencode declared without the catalogue's reader of its opencode.json: the
/// sandbox refuses its connection to the scripted server on loopback, and the
/// mission's blocker names the address, the envelope and the fix.
#[test]
fn a_connection_the_sandbox_refuses_is_named_in_the_blocker() {
    cases::refused_connection_named(&OPENCODE);
}
