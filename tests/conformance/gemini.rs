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
