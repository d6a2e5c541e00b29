//! Cline (`cline --acp`, the Cline CLI), on the scripted OpenAI Chat Completions API
//! through its OpenAI-compatible provider, configured as a user configures it:
//! `cline auth -p openai -k <key> -m <model> -b <base url>`, then `CLINE_PROVIDER`
//! and `CLINE_API_KEY` exported (its ACP mode opens a session only with a key in
//! its environment or a Cline account login).

use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{Conformer, Model, Pin, STEP_SECS, World, call, install};

pub const PIN: Pin = Pin {
    package: "cline",
    version: "3.0.65",
    bin: "cline",
};

/// `cline auth` run once for the scripted server into a data dir of this case (what
/// `CLINE_DATA_DIR` points at), and the two variables its ACP mode needs.
fn provider_env(model: &Model) -> Vec<(String, String)> {
    let data = model.dir().join("cline-data");
    let out = Command::new(install(&PIN))
        .args([
            "auth",
            "-p",
            "openai",
            "-k",
            "sk-scripted",
            "-m",
            "scripted-model",
            "-b",
        ])
        .arg(format!("{}/v1", model.base))
        .env("CLINE_DATA_DIR", &data)
        .env("CLINE_SESSION_BACKEND_MODE", "local")
        .env("CLINE_NO_AUTO_UPDATE", "1")
        .output()
        .expect("cline auth did not start");
    assert!(
        out.status.success() && data.join("settings/providers.json").is_file(),
        "cline auth failed: {out:#?}"
    );
    [
        ("CLINE_DATA_DIR", data.display().to_string()),
        ("CLINE_PROVIDER", "openai-compatible".to_string()),
        ("CLINE_API_KEY", "sk-scripted".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Cline names an MCP tool `<server>__<tool>`.
fn mission_tool(name: &str) -> String {
    format!("mission__{name}")
}

/// `apply_patch`, Cline's file tool: its input is the patch text.
fn write_call(path: &str, content: &str) -> Value {
    let added: String = content.lines().map(|l| format!("+{l}\n")).collect();
    call(
        "apply_patch",
        json!({"input": format!("*** Begin Patch\n*** Add File: {path}\n{added}*** End Patch\n")}),
    )
}

fn shell_call(command: &str) -> Value {
    call("run_commands", json!({"commands": [command]}))
}

pub static CLINE: Conformer = Conformer {
    name: "cline",
    pin: PIN,
    api: "openai_chat",
    provider_env,
    mission_tool,
    write_call,
    shell_call,
    workspace_setup: None,
};

// Cline 3.0.65 cannot work a mission: its ACP mode keeps the `mcpServers` of
// `session/new` but never starts them (the session it builds takes its MCP servers
// only from its own `cline_mcp_settings.json` and plugins), so the mission tools
// never reach its model and it can neither report, ask nor finish. The operator
// cases would all fail on that alone; the one case below holds the fact (and fails,
// saying so, the day a release offers the tools, when the sample of six joins).

/// Under `strict`, on the endpoint only its providers.json names (no hand grant):
/// Cline reaches the scripted model — the grant is right — but the model is offered
/// Cline's own tools and none of the mission's, a call to one is refused by Cline as
/// unavailable, and the mission does not land.
#[test]
fn its_model_is_never_offered_the_mission_tools() {
    let world = World::new(
        &CLINE,
        vec![
            call(
                &mission_tool("mission_report"),
                json!({"kind": "result", "summary": "the greeting is written"}),
            ),
            json!({"text": "Done."}),
            // The nudges an unfinished turn gets, so no request finds the script
            // exhausted (Cline retries those, slowly).
            json!({"text": "Done."}),
            json!({"text": "Done."}),
        ],
    );
    let run = world
        .fire("write a greeting", "strict")
        .join_within(STEP_SECS * 3);
    let requests = world.model.requests();
    assert!(
        !requests.is_empty(),
        "the model was never reached: {run:#?}"
    );
    let offered: Vec<String> = requests[0]["body"]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        offered,
        [
            "read_files",
            "search_codebase",
            "run_commands",
            "fetch_web_content",
            "apply_patch",
            "spawn_agent"
        ],
        "{run:#?}"
    );
    let refused = requests
        .iter()
        .flat_map(|r| {
            r["body"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .any(|c| c.contains("unavailable tool 'mission__mission_report'"));
    assert!(refused, "{:#}", json!(requests));
    assert_ne!(world.show()["status"], "landed", "{run:#?}");
    assert!(!run.stdout.contains("[result]"), "{run:#?}");
}
