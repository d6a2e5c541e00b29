//! Missions run by a third-party agent written on the official Python SDKs
//! (`agent-client-protocol` for ACP, `mcp` for the mission tools): the real binary
//! hosts `tests/agents/sdk_agent.py`, which reaches its mission only through the
//! `missionboard mcp-bridge` entry it is handed in `session/new`.
//!
//! The SDKs come from a venv the tests make in the build tree from the pinned
//! `tests/agents/requirements.txt` (`harness::python`): python3 with its venv module
//! and a reachable package index are all they need; without them they fail, saying so.

#[path = "../common/mod.rs"]
mod harness;

use harness::python::sdk_python;
use harness::terminal::Terminal;
use harness::{BIN, Run, Sandbox, report_kinds, wait_for};
use serde_json::Value;

const AGENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents/sdk_agent.py");

/// A scratch world with the presets seeded and `sdk` declared as the SDK agent.
fn sdk_world() -> Sandbox {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.sdk]\ncommand = {:?}\nargs = [{:?}]\ndescription = \"the Python ACP SDK test agent\"\n",
            sdk_python().display().to_string(),
            AGENT
        ),
    );
    sb
}

fn show(sb: &Sandbox, id: &str) -> Value {
    let out = sb.run(&["mission", "show", id, "--json"]).ok();
    serde_json::from_str(&out.stdout).unwrap()
}

/// `(kind, summary)` of every report of the newest mission, as recorded.
fn reports(sb: &Sandbox) -> Vec<(String, String)> {
    let id = sb.newest_mission().expect("a mission");
    report_kinds(&show(sb, &id))
}

/// The fire's verdict line: `Mission <id> finished: <verdict>`.
#[track_caller]
fn assert_finished(sb: &Sandbox, run: &Run, verdict: &str) {
    let id = sb.newest_mission().expect("a mission");
    let line = format!("Mission {id} finished: {verdict}");
    assert!(
        run.stdout.lines().any(|l| l == line),
        "wanted the line {line:?}:\n{run:#?}"
    );
}

#[test]
fn a_mission_lands_through_the_sdk_agent_and_its_mcp_client() {
    let sb = sdk_world();
    let bg = sb.fire_in_background("sdk", "sdk: land", &[]);
    let ask = wait_for(60, "the sdk agent's question", || {
        sb.pending_ask_ids().first().cloned()
    });
    let asks = sb.run(&["approvals", "list"]).ok();
    assert!(
        asks.stdout
            .contains("Which branch should the release go on?"),
        "{}",
        asks.stdout
    );
    sb.run(&["approvals", "respond", &ask, "--answer", "main"])
        .ok();
    let run = bg.join();
    assert_eq!(run.code, 0, "{run:#?}");
    assert_finished(&sb, &run, "landed — released by the sdk agent");
    let id = sb.newest_mission().unwrap();
    assert_eq!(show(&sb, &id)["status"], "landed");
    let reports = reports(&sb);
    assert!(
        reports.contains(&("progress".into(), "sdk agent at work".into())),
        "{reports:?}"
    );
    assert!(
        reports.contains(&("result".into(), "released on: main".into())),
        "{reports:?}"
    );
}

#[test]
fn the_sdk_agents_turn_error_is_quoted_with_its_data() {
    let sb = sdk_world();
    let run = sb.fire("sdk", "sdk: error", &[]);
    assert_eq!(run.code, 1, "{run:#?}");
    let reason = "unit turn failed: agent returned error -32603 to session/prompt: Internal error (the upstream model answered HTTP 500: overloaded)";
    assert_finished(&sb, &run, &format!("derailed — {reason}"));
    let id = sb.newest_mission().unwrap();
    let record = show(&sb, &id);
    assert_eq!(record["status"], "derailed");
    assert!(
        reports(&sb).contains(&("blocker".into(), reason.into())),
        "the blocker quotes the SDK's details: {record:#}"
    );
}

#[test]
fn permission_requests_for_mission_tools_are_recognised_by_title_and_meta() {
    let sb = sdk_world();
    // Under strict every unruled call is denied: only a request recognised as one of
    // the mission tools is allowed.
    let run = sb.run(&[
        "mission",
        "fire",
        "sdk",
        "sdk: permissions",
        "--wait",
        "--policy",
        "strict",
    ]);
    assert_eq!(run.code, 0, "{run:#?}");
    let findings: Vec<String> = reports(&sb)
        .into_iter()
        .filter(|(kind, _)| kind == "finding")
        .map(|(_, summary)| summary)
        .collect();
    assert_eq!(
        findings,
        [
            "permission by title: allowed",
            "permission by _meta: allowed",
            "permission unnamed: rejected"
        ]
    );
}

#[test]
fn a_non_json_stdout_line_derails_even_when_the_agent_finishes_during_the_cancel_grace() {
    let sb = sdk_world();
    let run = sb.fire("sdk", "sdk: garbage", &[]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_finished(
        &sb,
        &run,
        "derailed — unit turn failed: unexpected answer to session/prompt: the agent wrote a line that is not JSON-RPC to stdout: \"sdk agent says hello on stdout\"",
    );
    let id = sb.newest_mission().unwrap();
    assert_eq!(show(&sb, &id)["status"], "derailed");
}

#[test]
fn a_turn_that_ends_right_behind_its_stdout_garbage_derails_too() {
    let sb = sdk_world();
    let run = sb.fire("sdk", "sdk: garbage-end", &[]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_finished(
        &sb,
        &run,
        "derailed — unit turn failed: unexpected answer to session/prompt: the agent wrote a line that is not JSON-RPC to stdout: \"sdk agent says goodbye on stdout\"",
    );
}

/// A form from a third-party agent (the Python SDK's `create_elicitation`, form mode)
/// is an ask the operator fills from the CLI, checked against its fields; the agent
/// receives `accept` with the typed values (the default filled in) and lands.
#[test]
fn a_form_from_the_sdk_agent_is_filled_from_the_cli() {
    let sb = sdk_world();
    let bg = sb.fire_in_background("sdk", "sdk: elicit", &[]);
    let ask = wait_for(60, "the sdk agent's form", || {
        let out = sb.run(&["approvals", "list", "--json"]).ok();
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        v["asks"].as_array()?.iter().find_map(|a| {
            (a["toolsName"] == "elicitation" && a["toolName"] == "form")
                .then(|| a["id"].as_str().map(str::to_string))
                .flatten()
        })
    });
    let list = sb.run(&["approvals", "list"]).ok();
    assert!(
        list.stdout
            .lines()
            .any(|l| l == "env (one of staging, prod, required)"),
        "{}",
        list.stdout
    );
    let wrong = sb.run(&["approvals", "respond", &ask, "--field", "env=prod"]);
    assert_eq!(wrong.code, 1, "{wrong:#?}");
    sb.run(&[
        "approvals",
        "respond",
        &ask,
        "--field",
        "branch=main",
        "--field",
        "env=staging",
    ])
    .ok();
    let run = bg.join();
    assert_eq!(run.code, 0, "{run:#?}");
    assert_finished(&sb, &run, "landed");
    assert_eq!(
        reports(&sb),
        [(
            "result".to_string(),
            "form: accept branch=main; env=staging; retries=1".to_string()
        )]
    );
    // The record: the form answered from the CLI, with the values given there.
    let row = history_row(&sb, &ask);
    assert_eq!(row["toolName"], "form", "{row:#}");
    assert_eq!(row["answeredSurface"], "cli", "{row:#}");
    let resolution = row["resolution"].to_string();
    assert!(
        resolution.contains("main") && resolution.contains("staging"),
        "{row:#}"
    );
}

/// The `approvals history --json` row of `ask`.
fn history_row(sb: &Sandbox, ask: &str) -> Value {
    let history = sb.run(&["approvals", "history", "--json"]).ok();
    let v: Value = serde_json::from_str(&history.stdout).unwrap();
    v["asks"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == ask))
        .unwrap_or_else(|| panic!("no history row for {ask}: {v:#}"))
        .clone()
}

/// The form ask the SDK agent sent, once it is pending.
fn pending_form(sb: &Sandbox) -> Option<String> {
    let out = sb.run(&["approvals", "list", "--json"]).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    v["asks"].as_array()?.iter().find_map(|a| {
        (a["toolsName"] == "elicitation" && a["toolName"] == "form")
            .then(|| a["id"].as_str().map(str::to_string))
            .flatten()
    })
}

/// `'…'` for a shell word.
fn shell_quote(p: &std::path::Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// `missionboard board` against the sandbox, typed at an interactive shell in a
/// 120x40 terminal of the test's own; it prints `EXITED:<code>` when it ends.
fn board_in_terminal(sb: &Sandbox) -> Terminal {
    let store = match &sb.store_url {
        Some(url) => format!(
            "MISSIONBOARD_STORE_URL={}",
            shell_quote(std::path::Path::new(url))
        ),
        None => "-u MISSIONBOARD_STORE_URL".to_string(),
    };
    let term = Terminal::shell(120, 40);
    term.literal(&format!(
        "(cd {cwd} && env {store} MISSIONBOARD_HOME={home} HOME={home_parent} LANG=C.UTF-8 TERM=xterm-256color {bin} board; echo EXITED:$((0+$?)))",
        cwd = shell_quote(&sb.cwd),
        home = shell_quote(&sb.home),
        home_parent = shell_quote(sb.home.parent().unwrap()),
        bin = shell_quote(std::path::Path::new(BIN)),
    ));
    term.keys(&["Enter"]);
    term
}

/// The same form from the Python SDK agent, filled on the board: its answer pane
/// names the form and its fields, `key=value` lines typed there are checked against
/// it (a value it does not take is refused in place, nothing recorded), and the
/// answer goes to the agent, which receives `accept` with the typed values and the
/// default; the record says the board answered it.
#[test]
fn terminal_a_form_from_the_sdk_agent_is_filled_from_the_board() {
    let sb = sdk_world();
    let bg = sb.fire_in_background("sdk", "sdk: elicit", &[]);
    let ask = wait_for(60, "the sdk agent's form", || pending_form(&sb));

    let term = board_in_terminal(&sb);
    term.wait_screen(60, "the form on the board", |s| {
        s.contains("Where should the release go?")
    });
    term.keys(&["2"]);
    term.keys(&["Enter"]);
    let pane = term.wait_screen(20, "the answer pane", |s| s.contains("your answer"));
    for line in [
        "Form from sdk",
        "branch (text, required) — Branch",
        "env (one of staging, prod, required)",
        "retries (whole number) [default 1]",
        "Fill it as key=value, one field a line",
    ] {
        assert!(pane.contains(line), "{line:?} missing:\n{pane}");
    }
    term.literal("branch=main");
    term.keys(&["Enter"]);
    term.literal("env=dev");
    term.keys(&["C-s"]);
    term.wait_screen(20, "the refusal", |s| s.contains("not \"dev\""));
    assert_eq!(pending_form(&sb).as_deref(), Some(ask.as_str()));
    term.keys(&["BSpace", "BSpace", "BSpace"]);
    term.literal("prod");
    term.keys(&["C-s"]);
    term.wait_screen(20, "the answer recorded", |s| {
        s.contains("answer recorded for ask")
    });

    let run = bg.join();
    assert_eq!(run.code, 0, "{run:#?}");
    assert_finished(&sb, &run, "landed");
    // What the agent received, as it reported it.
    assert_eq!(
        reports(&sb),
        [(
            "result".to_string(),
            "form: accept branch=main; env=prod; retries=1".to_string()
        )]
    );
    // The record: the form answered, on the board, with the values typed there.
    let row = history_row(&sb, &ask);
    assert_eq!(row["toolName"], "form", "{row:#}");
    assert_eq!(row["answeredSurface"], "board", "{row:#}");
    let resolution = row["resolution"].to_string();
    assert!(
        resolution.contains("main") && resolution.contains("prod"),
        "{row:#}"
    );
    term.keys(&["q"]);
    let screen = term.wait_screen(30, "the board to exit", |s| {
        s.lines().any(|l| l.starts_with("EXITED:"))
    });
    assert!(screen.contains("EXITED:0"), "{screen}");
}

// ---- The TypeScript SDK's agent. ----

const FORM_AGENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/agents/form_agent.mjs");
/// The published ACP SDK for TypeScript, pinned.
const TS_SDK: (&str, &str) = ("@agentclientprotocol/sdk", "2.4.0");

/// `tests/agents/form_agent.mjs` beside the pinned SDK, installed from npm (once,
/// under a lock) into `<target>/agents-npm`, where node resolves its import.
fn form_agent_script() -> std::path::PathBuf {
    let prefix = harness::target_dir().join("agents-npm");
    std::fs::create_dir_all(&prefix).unwrap();
    let _lock = harness::FileLock::take(&prefix.join(".install.lock"));
    let (package, version) = TS_SDK;
    let installed = || harness::installed_version(&prefix, package);
    if installed().as_deref() != Some(version) {
        let out = std::process::Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(format!("{package}@{version}"))
            .output()
            .expect("these tests install the TypeScript ACP SDK with npm: install Node.js and npm");
        assert!(
            out.status.success(),
            "npm install {package}@{version} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(installed().as_deref(), Some(version));
    }
    let script = prefix.join("form_agent.mjs");
    std::fs::copy(FORM_AGENT, &script).unwrap();
    script
}

/// A scratch world with `form` declared as the TypeScript SDK agent.
fn ts_world() -> Sandbox {
    let script = form_agent_script();
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.form]\ncommand = \"node\"\nargs = [{:?}]\ndescription = \"the TypeScript ACP SDK form agent\"\n",
            script.display().to_string()
        ),
    );
    sb
}

/// What the agent received for its form, once it has written it.
fn received(sb: &Sandbox) -> Value {
    let file = sb.cwd.join("received.json");
    let text = wait_for(60, "the agent's received.json", || {
        std::fs::read_to_string(&file).ok()
    });
    serde_json::from_str(&text).unwrap()
}

/// Stop the newest mission and wait for its fire to return.
fn stop_newest(sb: &Sandbox, bg: harness::Background) -> Run {
    let id = sb.newest_mission().expect("a mission");
    sb.run(&["mission", "stop", &id]).ok();
    bg.join()
}

/// A form from an agent on the TypeScript SDK (`elicitation/create` through its
/// connection), filled from the CLI: the agent receives `accept` with the values
/// given and the default filled in, and the record says the CLI answered it.
#[test]
fn a_form_from_the_typescript_sdk_agent_is_filled_from_the_cli() {
    let sb = ts_world();
    let bg = sb.fire_in_background("form", "release it", &[]);
    let ask = wait_for(60, "the agent's form", || pending_form(&sb));
    let list = sb.run(&["approvals", "list"]).ok();
    for line in [
        "train (one of stable, beta, required) — Train",
        "notes (text, required) — Release notes",
    ] {
        assert!(
            list.stdout.lines().any(|l| l == line),
            "{line:?} missing:\n{}",
            list.stdout
        );
    }
    sb.run(&[
        "approvals",
        "respond",
        &ask,
        "--field",
        "train=stable",
        "--field",
        "notes=from the cli",
    ])
    .ok();
    assert_eq!(
        received(&sb),
        serde_json::json!({"action": "accept", "content": {"train": "stable", "notes": "from the cli", "hotfix": false}})
    );
    let row = history_row(&sb, &ask);
    assert_eq!(row["answeredSurface"], "cli", "{row:#}");
    let run = stop_newest(&sb, bg);
    assert!(run.stdout.contains("Mission "), "{run:#?}");
}

/// The same form filled on the board (pty-driven): the pane names the form from the
/// agent, `key=value` lines typed there reach the agent as `accept` with the values,
/// and the record says the board answered it.
#[test]
fn terminal_a_form_from_the_typescript_sdk_agent_is_filled_from_the_board() {
    let sb = ts_world();
    let bg = sb.fire_in_background("form", "release it", &[]);
    let ask = wait_for(60, "the agent's form", || pending_form(&sb));
    let term = board_in_terminal(&sb);
    term.wait_screen(60, "the form on the board", |s| {
        s.contains("Which release train")
    });
    term.keys(&["2"]);
    term.keys(&["Enter"]);
    let pane = term.wait_screen(20, "the answer pane", |s| s.contains("your answer"));
    for line in [
        "Form from form",
        "train (one of stable, beta, required) — Train",
        "notes (text, required) — Release notes",
    ] {
        assert!(pane.contains(line), "{line:?} missing:\n{pane}");
    }
    term.literal("train=beta");
    term.keys(&["Enter"]);
    term.literal("notes=from the board");
    term.keys(&["C-s"]);
    term.wait_screen(20, "the answer recorded", |s| {
        s.contains("answer recorded for ask")
    });
    assert_eq!(
        received(&sb),
        serde_json::json!({"action": "accept", "content": {"train": "beta", "notes": "from the board", "hotfix": false}})
    );
    let row = history_row(&sb, &ask);
    assert_eq!(row["answeredSurface"], "board", "{row:#}");
    stop_newest(&sb, bg);
    term.keys(&["q"]);
    let screen = term.wait_screen(30, "the board to exit", |s| {
        s.lines().any(|l| l.starts_with("EXITED:"))
    });
    assert!(screen.contains("EXITED:0"), "{screen}");
}
