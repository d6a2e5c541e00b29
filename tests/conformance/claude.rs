//! Claude Code through claude-agent-acp, on the scripted Anthropic Messages API.

use serde_json::{Value, json};

use crate::cases;
use crate::harness::{Conformer, Model, Pin, call};

pub static CLAUDE: Conformer = Conformer {
    name: "claude",
    pin: Pin {
        package: "@zed-industries/claude-agent-acp",
        version: "0.23.1",
        bin: "claude-agent-acp",
    },
    api: "anthropic",
    provider_env,
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: None,
};

fn provider_env(model: &Model) -> Vec<(String, String)> {
    [
        ("ANTHROPIC_BASE_URL", model.base.as_str()),
        ("ANTHROPIC_API_KEY", "sk-ant-scripted"),
        // Loopback only: no update checks, telemetry or error reports.
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("DISABLE_TELEMETRY", "1"),
        ("DISABLE_ERROR_REPORTING", "1"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Claude Code names an MCP tool `mcp__<server>__<tool>`.
fn mission_tool(name: &str) -> String {
    format!("mcp__mission__{name}")
}

fn write_call(path: &str, content: &str) -> Value {
    call("Write", json!({"file_path": path, "content": content}))
}

fn shell_call(command: &str) -> Value {
    call("Bash", json!({"command": command, "description": "run it"}))
}

cases::agent_cases!(CLAUDE, killed_host);
