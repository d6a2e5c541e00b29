//! Claude Code through claude-agent-acp, on the scripted Anthropic Messages API.

use serde_json::json;

use crate::harness::*;

pub const PIN: Pin = Pin {
    package: "@zed-industries/claude-agent-acp",
    version: "0.23.1",
    bin: "claude-agent-acp",
};

/// The mission tools as Claude Code names MCP tools.
pub fn mission_tool(name: &str) -> String {
    format!("mcp__mission__{name}")
}

pub fn declared(model: &Model) -> Declared {
    Declared {
        name: "claude",
        command: install(&PIN),
        args: vec![],
        env: vec![
            ("ANTHROPIC_BASE_URL".into(), model.base.clone()),
            ("ANTHROPIC_API_KEY".into(), "sk-ant-scripted".into()),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
            ("DISABLE_TELEMETRY".into(), "1".into()),
            ("DISABLE_ERROR_REPORTING".into(), "1".into()),
            // claude-agent-acp offers the CLI `--allow-dangerously-skip-permissions`
            // whenever IS_SANDBOX is set at all, and the CLI run as root then exits
            // unless it is exactly "1": empty keeps bypass off, as the envelope needs.
            ("IS_SANDBOX".into(), String::new()),
        ],
    }
}

#[test]
fn talks() {
    let model = Model::start(
        "anthropic",
        vec![
            call(
                &mission_tool("mission_report"),
                json!({"kind": "result", "summary": "all done"}),
            ),
            call(&mission_tool("mission_finish"), json!({"status": "landed"})),
            say("Finished."),
        ],
    );
    let sb = Sandbox::new();
    declare(&sb, &declared(&model));
    let run = join_within(fire(&sb, "claude", "say hello", "dev"), 300);
    eprintln!("{run:#?}");
    for r in model.requests() {
        eprintln!("REQ {} turn={} {}", r["path"], r["turn"], r["body"].to_string().chars().take(300).collect::<String>());
    }
    assert_eq!(run.code, 0);
}
