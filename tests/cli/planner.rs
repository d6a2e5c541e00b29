//! Issue G: `agent-planner`, the native agent, fired from the shipped preset against
//! the scripted model backend (and against a model endpoint that is down). The
//! agent is the real `missionboard agent` child; its mission tools go over the real
//! MCP bridge and its own tools through the real envelope.

use serde_json::{Value, json};

use crate::harness::model_server::{self, ModelServer, Reply};
use crate::harness::{Background, Sandbox, wait_for};

/// A scratch world with the presets seeded and the model replaced by `dialog`.
/// Returns the dialog's path (its recorded requests sit beside it).
fn planner_world(sb: &Sandbox, dialog: Value) -> std::path::PathBuf {
    sb.run(&["init"]).ok();
    let path = sb.cwd.join("dialog.json");
    sb.write(&path, &dialog.to_string());
    let url = format!("scripted:{}", path.display());
    sb.run(&["config", "set", "model-base-url", &url]).ok();
    path
}

/// What the model was sent, one request per line of `<dialog>.requests.jsonl`.
fn requests(dialog: &std::path::Path) -> Vec<Value> {
    let path = format!("{}.requests.jsonl", dialog.display());
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no recorded requests at {path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The content of the last message of a recorded request.
fn last_message(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    messages.last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// What a turn that did work, filed no result and ended in prose is asked.
const VERDICT_ASK_UNREPORTED: &str = "What is your verdict? If the intent is done: 1. call mission_report with kind result, a one-line summary and the files in refs; 2. call mission_finish with status landed. If not, call mission_finish with status stuck, derailed or abandoned, and the reason.";

/// The newest tool result in a request: what the model read of its last call.
fn last_result(request: &Value) -> String {
    let messages = request["messages"].as_array().unwrap();
    let result = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    result["content"].as_str().unwrap_or_default().to_string()
}

/// The two calls that land a mission, as the hints number them.
const LANDING_STEPS: &str = "1. call mission_report with kind result, a one-line summary and the files in refs; 2. call mission_finish with status landed.";

/// The line that follows a step that went through (`opening` says which: "That
/// worked." after a change, "Filed." after a report short of the result): the two
/// calls that land the mission, if the intent is done.
fn landing_hint(opening: &str) -> String {
    format!("{opening} If the intent is done: {LANDING_STEPS}")
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"name": name, "arguments": arguments}]})
}

fn approve_next_ask(sb: &Sandbox, seen: &mut Vec<String>) -> String {
    let ask = wait_for(30, "a permission ask", || {
        sb.pending_ask_ids()
            .into_iter()
            .find(|id| !seen.contains(id))
    });
    seen.push(ask.clone());
    sb.run(&["approvals", "respond", &ask, "--approve"]).ok();
    ask
}

#[test]
fn agent_planner_plans_reads_writes_with_approval_reports_a_result_and_lands() {
    let sb = Sandbox::new();
    sb.write(&sb.cwd.join("notes/input.txt"), "alpha\nbeta\n");
    let dialog = planner_world(
        &sb,
        json!({"turns": [
            call("mission_plan", json!({"entries": [
                {"content": "read the input", "status": "in_progress", "priority": "high"},
                {"content": "write the summary", "status": "pending", "priority": "medium"}]})),
            call("read_file", json!({"path": "notes/input.txt"})),
            {"text": "Writing the summary.", "tool_calls": [{"name": "write_file",
                "arguments": {"path": "notes/summary.md", "content": "# Summary\nalpha, beta\n"}}]},
            call("mission_report", json!({"kind": "result", "summary": "summary written",
                "refs": ["notes/summary.md"]})),
            call("mission_finish", json!({"status": "landed", "reason": "summary written"})),
        ]}),
    );
    let bg = sb.fire_in_background("agent-planner", "summarise notes/input.txt", &[]);
    let ask = wait_for(30, "the write_file ask", || {
        sb.pending_ask_ids().first().cloned()
    });
    let list = sb.run(&["approvals", "list"]).ok();
    assert!(
        list.stdout.contains("  permission  local_fs.write_file  "),
        "{}",
        list.stdout
    );
    assert!(
        !sb.cwd.join("notes/summary.md").exists(),
        "nothing is written before the operator approves"
    );
    sb.run(&["approvals", "respond", &ask, "--approve"]).ok();
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired
            .stdout
            .contains("finished: landed — summary written\n"),
        "{fired:#?}"
    );
    assert!(
        fired.stdout.contains("  [result] summary written\n"),
        "the result kept its kind: {fired:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("notes/summary.md")).unwrap(),
        "# Summary\nalpha, beta\n"
    );
    let id = sb.newest_mission().unwrap();
    let plan = sb.run(&["mission", "plan", &id]).ok();
    assert!(plan.stdout.contains("read the input"), "{}", plan.stdout);
    let sent = requests(&dialog);
    assert_eq!(sent.len(), 5, "one model call per scripted turn");
    assert_eq!(
        sent[0]["messages"][0]["role"], "system",
        "the agent's own system prompt leads"
    );
    assert!(
        last_message(&sent[0]).contains("summarise notes/input.txt"),
        "the intent reached the model"
    );
    let tools: Vec<&str> = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        [
            "mission_report",
            "mission_plan",
            "mission_ask_attention",
            "mission_finish",
            "read_file",
            "list_dir",
            "grep",
            "find_files",
            "write_file",
            "edit_file",
            "shell"
        ]
    );
    assert_eq!(
        last_message(&sent[2]),
        "alpha\nbeta",
        "the read ran ungated and its text went to the model"
    );
    assert!(
        last_result(&sent[3]).starts_with("wrote ")
            && last_result(&sent[3]).ends_with("notes/summary.md (22 bytes)"),
        "{}",
        last_result(&sent[3])
    );
    assert_eq!(
        last_message(&sent[3]),
        landing_hint("That worked."),
        "a change that went through is followed by how to land"
    );
    assert_eq!(
        sb.pending_ask_ids(),
        Vec::<String>::new(),
        "only the write asked"
    );
}

#[test]
fn the_shell_tool_asks_every_time_under_the_strict_envelope() {
    let sb = Sandbox::new();
    let dialog = planner_world(
        &sb,
        json!({"turns": [
            call("shell", json!({"command": "echo one"})),
            call("shell", json!({"command": "echo one"})),
            call("mission_report", json!({"kind": "progress", "summary": "echoed twice"})),
            call("mission_finish", json!({"status": "landed"})),
        ]}),
    );
    let bg = Background::spawn(sb.command(&[
        "mission",
        "fire",
        "agent-planner",
        "echo one, twice",
        "--wait",
        "--policy",
        "strict",
    ]));
    let mut seen = Vec::new();
    approve_next_ask(&sb, &mut seen);
    approve_next_ask(&sb, &mut seen);
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert_ne!(seen[0], seen[1], "the same command asked again");
    let sent = requests(&dialog);
    for reply in [&sent[1], &sent[2]] {
        assert_eq!(last_result(reply), "exit code 0\n--- stdout ---\none");
        assert_eq!(last_message(reply), landing_hint("That worked."));
    }
    assert_eq!(
        last_message(&sent[3]),
        landing_hint("Filed."),
        "a report short of the result is followed by how to land"
    );
}

#[test]
fn the_shell_tool_is_refused_under_acpx_and_the_agent_reports_the_refusal() {
    let sb = Sandbox::new();
    let dialog = planner_world(
        &sb,
        json!({"turns": [
            call("shell", json!({"command": "ls -la"})),
            call("mission_finish", json!({"status": "stuck", "reason": "no shell here"})),
        ]}),
    );
    let fired = sb.run(&[
        "mission",
        "fire",
        "agent-planner",
        "list the files",
        "--wait",
        "--policy",
        "acpx",
    ]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    assert!(
        fired.stdout.contains("finished: stuck — no shell here\n"),
        "{fired:#?}"
    );
    assert!(
        fired
            .stdout
            .contains("  [blocker] refused: shell: ls -la\n"),
        "{fired:#?}"
    );
    let told = last_message(&requests(&dialog)[1]);
    assert!(
        told.starts_with(
            "refused: the mission's envelope did not allow shell: ls -la. The operator has been told. Do not retry it"
        ),
        "{told}"
    );
    assert_eq!(sb.pending_ask_ids(), Vec::<String>::new(), "nothing asked");
}

#[test]
fn a_model_endpoint_that_is_down_derails_the_mission_with_the_error_in_the_blocker() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    sb.run(&["config", "set", "model-base-url", &url]).ok();
    sb.run(&["config", "set", "model-name", "qwen3:8b"]).ok();
    let fired = sb.fire("agent-planner", "summarise the notes", &[]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    let expected = format!(
        "finished: derailed — unit turn failed: agent returned error -32603 to session/prompt: model endpoint {url}/chat/completions is unreachable ("
    );
    assert!(fired.stdout.contains(&expected), "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(
        reports.stdout.contains(
            "start the model server or set `missionboard config set model-base-url <url>`"
        ),
        "the blocker carries the model client's whole message: {}",
        reports.stdout
    );
}

#[test]
fn the_declaration_s_model_keys_win_over_config() {
    let sb = Sandbox::new();
    let dialog = planner_world(
        &sb,
        json!({"turns": [call("mission_finish", json!({"status": "landed"}))]}),
    );
    // config points at a dead endpoint; the declaration at the dialog.
    sb.run(&["config", "set", "model-base-url", "http://127.0.0.1:9/v1"])
        .ok();
    sb.write(
        &sb.cwd.join(".missionboard/agents.toml"),
        &format!(
            "[agents.local-planner]\ncommand = \"missionboard\"\nargs = [\"agent\"]\nbase_url = \"scripted:{}\"\n",
            dialog.display()
        ),
    );
    let fired = sb.fire("local-planner", "land at once", &[]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert_eq!(requests(&dialog).len(), 1);
}

/// Declare `http-planner`: the native agent on `server`, with `--max-tokens 512`.
fn http_planner(sb: &Sandbox, server: &ModelServer) {
    sb.run(&["init"]).ok();
    sb.write(
        &sb.cwd.join(".missionboard/agents.toml"),
        &format!(
            "[agents.http-planner]\ncommand = \"missionboard\"\nargs = [\"agent\", \"--max-tokens\", \"512\"]\nbase_url = \"{}\"\nmodel = \"test-model\"\n",
            server.url
        ),
    );
}

#[test]
fn agent_planner_works_against_a_model_server_that_validates_like_llama_cpp() {
    let server = ModelServer::start(vec![
        model_server::tool_call(
            "mission_report",
            json!({"kind": "progress", "summary": "working over http"}),
        ),
        model_server::tool_call(
            "mission_finish",
            json!({"status": "landed", "reason": "done over http"}),
        ),
    ]);
    let sb = Sandbox::new();
    http_planner(&sb, &server);
    let fired = sb.fire("http-planner", "land over http", &[]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("finished: landed — done over http\n"),
        "{fired:#?}"
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 2, "none refused, none retried: {sent:#?}");
    for request in &sent {
        assert_eq!(request["max_tokens"], 512, "the configured reply cap");
        assert_eq!(request["model"], "test-model");
    }
    let echoed = sent[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant" && m["tool_calls"].is_array())
        .expect("the tool call went back to the model");
    assert_eq!(echoed["content"], "", "never null: {echoed}");
}

#[test]
fn a_4xx_from_the_model_server_is_not_retried_and_derails_with_its_body() {
    let body = r#"{"error":{"message":"'tool_choice' is not supported by this model"}}"#;
    let server = ModelServer::start(vec![Reply::Status(400, body.into())]);
    let sb = Sandbox::new();
    http_planner(&sb, &server);
    let fired = sb.fire("http-planner", "land over http", &[]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    let expected = format!(
        "finished: derailed — unit turn failed: agent returned error -32603 to session/prompt: model endpoint {}/chat/completions answered HTTP 400: {body}",
        server.url
    );
    assert!(fired.stdout.contains(&expected), "{fired:#?}");
    assert_eq!(server.requests().len(), 1, "a 4xx is not retried");
}

#[test]
fn a_model_call_past_model_timeout_is_retried_then_derails_naming_the_timeout() {
    let server = ModelServer::start(vec![Reply::Hang, Reply::Hang, Reply::Hang]);
    let sb = Sandbox::new();
    http_planner(&sb, &server);
    sb.run(&["config", "set", "model-timeout", "1s"]).ok();
    let fired = sb.fire("http-planner", "land over http", &[]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    let expected = format!(
        "finished: derailed — unit turn failed: agent returned error -32603 to session/prompt: model endpoint {}/chat/completions did not answer within 1s",
        server.url
    );
    assert!(fired.stdout.contains(&expected), "{fired:#?}");
    assert_eq!(server.requests().len(), 3, "a timeout is tried three times");
}

/// Declare `small-planner`: the native agent on `server` with its default window and
/// reply cap (a 32k window, 4,096 reply tokens), plus `extra` arguments.
fn small_planner(sb: &Sandbox, server: &ModelServer, extra: &[&str]) {
    sb.run(&["init"]).ok();
    let mut args = vec!["agent".to_string()];
    args.extend(extra.iter().map(|a| a.to_string()));
    sb.write(
        &sb.cwd.join(".missionboard/agents.toml"),
        &format!(
            "[agents.small-planner]\ncommand = \"missionboard\"\nargs = {}\nbase_url = \"{}\"\nmodel = \"test-model\"\n",
            json!(args),
            server.url
        ),
    );
}

fn report_then_finish() -> Vec<Reply> {
    vec![
        model_server::tool_call(
            "mission_report",
            json!({"kind": "progress", "summary": "fits the window"}),
        ),
        model_server::tool_call(
            "mission_finish",
            json!({"status": "landed", "reason": "done in 4k"}),
        ),
    ]
}

#[test]
fn on_a_4k_server_that_reports_its_window_agent_planner_fits_from_the_first_request() {
    let server = ModelServer::serving(
        report_then_finish(),
        model_server::Serves {
            context: Some(4096),
            props: true,
            ..Default::default()
        },
    );
    let sb = Sandbox::new();
    small_planner(&sb, &server, &[]);
    let fired = sb.fire("small-planner", "land inside 4k", &[]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("finished: landed — done in 4k\n"),
        "{fired:#?}"
    );
    assert_eq!(server.gets(), ["/props"], "the window is read once");
    let sent = server.requests();
    assert_eq!(
        sent.len(),
        2,
        "none refused: {:?}",
        sent.iter()
            .map(|r| (model_server::served_tokens(r), r["max_tokens"].clone()))
            .collect::<Vec<_>>()
    );
    for request in &sent {
        let cap = request["max_tokens"].as_u64().unwrap();
        assert!(cap <= 1024, "at most a quarter of the served window");
        assert!(model_server::served_tokens(request) + cap <= 4096);
    }
}

#[test]
fn on_a_4k_server_that_refuses_the_request_agent_planner_shrinks_and_retries_once() {
    let server = ModelServer::serving(
        report_then_finish(),
        model_server::Serves {
            context: Some(4096),
            ..Default::default()
        },
    );
    let sb = Sandbox::new();
    small_planner(&sb, &server, &[]);
    let fired = sb.fire("small-planner", "land inside 4k", &[]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("finished: landed — done in 4k\n"),
        "{fired:#?}"
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 3, "one refusal, then the two calls: {sent:#?}");
    assert_eq!(sent[0]["max_tokens"], 4096, "the 32k defaults, refused");
    for request in &sent[1..] {
        let cap = request["max_tokens"].as_u64().unwrap();
        assert!(
            cap <= 1024 && model_server::served_tokens(request) + cap <= 4096,
            "inside the window the refusal named"
        );
    }
}

#[test]
fn a_server_window_too_small_for_the_dialog_derails_naming_context_tokens() {
    let server = ModelServer::serving(
        report_then_finish(),
        model_server::Serves {
            context: Some(600),
            ..Default::default()
        },
    );
    let sb = Sandbox::new();
    small_planner(&sb, &server, &[]);
    let fired = sb.fire("small-planner", "land inside 600 tokens", &[]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    assert!(
        fired.stdout.contains(
            "finished: derailed — unit turn failed: agent returned error -32603 to session/prompt: the model server's context window is too small for this dialog even at 600 tokens — set the agent's `--context-tokens` to the server's context size"
        ),
        "{fired:#?}"
    );
    let id = sb.newest_mission().unwrap();
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(
        reports.stdout.contains(&format!(
            "or start the server with a larger window: model endpoint {}/chat/completions answered HTTP 400: ",
            server.url
        )),
        "the blocker carries the server's refusal too: {}",
        reports.stdout
    );
    assert_eq!(server.requests().len(), 2, "one shrink, one retry");
}

#[test]
fn doctor_asks_the_endpoint_whether_it_serves_the_configured_model() {
    let server = ModelServer::start(vec![]);
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    sb.run(&["config", "set", "model-base-url", &server.url])
        .ok();
    sb.run(&["config", "set", "model-name", "test-model"]).ok();
    let doctor = sb.run(&["doctor"]);
    assert!(
        doctor
            .lines()
            .contains(&format!("Models:    {}/models serves test-model", server.url).as_str()),
        "{doctor:#?}"
    );
    sb.run(&["config", "set", "model-name", "qwen3:8b"]).ok();
    let doctor = sb.run(&["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor:#?}");
    assert!(
        doctor.lines().contains(
            &format!(
                "Models:    {}/models does not serve qwen3:8b (it lists test-model) — set model-name to one it serves, or load qwen3:8b on the server",
                server.url
            )
            .as_str()
        ),
        "{doctor:#?}"
    );
    // A base URL without its /v1: the connection works, the path does not.
    let root = server.url.strip_suffix("/v1").unwrap();
    sb.run(&["config", "set", "model-base-url", root]).ok();
    sb.run(&["config", "set", "model-name", "test-model"]).ok();
    let doctor = sb.run(&["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor:#?}");
    assert!(
        doctor.stdout.contains(&format!(
            "Models:    GET {root}/models: model endpoint {root}/models answered HTTP 404: "
        )) && doctor.stdout.contains(
            "model-base-url must be the OpenAI-compatible base, ending in /v1 for most servers"
        ),
        "{doctor:#?}"
    );
    assert!(
        doctor.lines()[0].contains(
            "point model-base-url and model-name at a model the server serves (see above)"
        ),
        "{doctor:#?}"
    );
    assert_eq!(server.requests().len(), 0, "no completion was asked for");
}

#[test]
fn tool_calls_written_as_text_are_run_and_a_broken_one_is_corrected_not_read_as_prose() {
    let sb = Sandbox::new();
    let dialog = planner_world(
        &sb,
        json!({"turns": [
            // As llama-cpp-python's function-calling format leaks it, with nothing after.
            {"text": "functions.mission_report:"},
            {"text": "<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"hello.txt\", \"content\": \"hello\\n\"}}\n</tool_call>"},
            {"text": "functions.mission_report: {\"kind\": \"result\", \"summary\": \"hello.txt written\", \"refs\": [\"hello.txt\"]}"},
            {"text": "{\"name\": \"mission_finish\", \"arguments\": {\"status\": \"landed\", \"reason\": \"hello.txt holds hello\"}}"},
        ]}),
    );
    let fired = fire_waiting(&sb, "create hello.txt containing hello");
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired
            .stdout
            .contains("finished: landed — hello.txt holds hello\n"),
        "{fired:#?}"
    );
    assert!(
        fired.stdout.contains("  [result] hello.txt written\n"),
        "{fired:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("hello.txt")).unwrap(),
        "hello\n"
    );
    let sent = requests(&dialog);
    assert_eq!(sent.len(), 4, "one model call per scripted turn");
    assert_eq!(
        last_message(&sent[1]),
        "Your reply wrote a tool call as text instead of making it, and nothing was run: \"mission_report\" (functions.NAME:): no JSON object of arguments follows the name. Make the call again, with a JSON object of its arguments."
    );
    let recovered = &sent[2]["messages"];
    let echoed = recovered
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .unwrap();
    assert_eq!(
        echoed["tool_calls"][0]["function"]["name"], "write_file",
        "the recovered call went back into the dialog as the call it was: {echoed}"
    );
    assert_eq!(
        echoed["content"].as_str().unwrap_or_default(),
        "",
        "and not as the text it was written in: {echoed}"
    );
}

#[test]
fn edit_file_changes_one_piece_under_the_envelope_and_keeps_the_rest_of_the_file() {
    let sb = Sandbox::new();
    let lib = "def sub(a, b):\n    return a - b\n";
    sb.write(&sb.cwd.join("lib.py"), lib);
    let dialog = planner_world(
        &sb,
        json!({"turns": [
            call("edit_file", json!({"path": "lib.py", "old_text": "def mul", "new_text": "x"})),
            call("edit_file", json!({"path": "lib.py", "old_text": "    return a - b\n",
                "new_text": "    return a - b\n\n\ndef add(a, b):\n    return a + b\n"})),
            {"text": "Added add(a, b) to lib.py."},
            call("mission_report", json!({"kind": "result", "summary": "add(a, b) added",
                "refs": ["lib.py"]})),
            call("mission_finish", json!({"status": "landed", "reason": "add is in lib.py"})),
        ]}),
    );
    let bg = sb.fire_in_background("agent-planner", "add a function add(a,b) to lib.py", &[]);
    let mut seen = Vec::new();
    approve_next_ask(&sb, &mut seen);
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("lib.py")).unwrap(),
        "def sub(a, b):\n    return a - b\n\n\ndef add(a, b):\n    return a + b\n",
        "sub is still there"
    );
    let sent = requests(&dialog);
    assert_eq!(
        last_result(&sent[1]),
        "error: edit_file: old_text does not occur in lib.py; read the file and copy the text to replace exactly",
        "an edit that cannot apply is refused before anyone is asked"
    );
    assert_eq!(
        last_message(&sent[1]),
        "Not done yet: add a function add(a,b) to lib.py. Do it with your tools.",
        "a change that failed is followed by the intent"
    );
    assert_eq!(seen.len(), 1, "one ask, for the edit that applies");
    let history = sb
        .run(&["mission", "show", &sb.newest_mission().unwrap(), "--json"])
        .ok();
    let record: Value = serde_json::from_str(&history.stdout).unwrap();
    assert_eq!(record["asks"][0]["toolName"], "edit_file", "{record:#}");
    // A turn that did work and ended in prose was asked for its verdict, once, with
    // the result report landing needs (none was filed yet).
    assert_eq!(last_message(&sent[3]), VERDICT_ASK_UNREPORTED);
}

/// Fire agent-planner at `intent` under `dev`, waiting for its verdict.
fn fire_waiting(sb: &Sandbox, intent: &str) -> crate::harness::Run {
    sb.run(&[
        "mission",
        "fire",
        "agent-planner",
        intent,
        "--wait",
        "--policy",
        "dev",
    ])
}

/// Fire agent-planner at `intent` under `dev`, waiting: it exits 1 with the mission
/// resting stuck, whose record is returned.
fn fired_stuck(sb: &Sandbox, intent: &str) -> Value {
    let fired = fire_waiting(sb, intent);
    assert_eq!(fired.code, 1, "{fired:#?}");
    let record: Value = serde_json::from_str(
        &sb.run(&["mission", "show", &sb.newest_mission().unwrap(), "--json"])
            .ok()
            .stdout,
    )
    .unwrap();
    assert_eq!(record["status"], "stuck", "{record:#}");
    record
}

#[test]
fn a_model_repeating_one_call_is_refused_then_the_mission_rests_stuck_repeating_itself() {
    let sb = Sandbox::new();
    sb.write(&sb.cwd.join("notes.txt"), "alpha\n");
    let mut again = call("read_file", json!({"path": "notes.txt"}));
    again["repeat"] = json!(true);
    let dialog = planner_world(&sb, json!({"turns": [again]}));
    let record = fired_stuck(&sb, "read notes.txt");
    assert_eq!(
        record["statusReason"],
        r#"repeating itself: the unit made the same call 5 times in a row: local_fs.read_file: {"path":"notes.txt"}"#
    );
    let sent = requests(&dialog);
    assert_eq!(sent.len(), 5, "the fifth call ended the turn");
    assert_eq!(last_message(&sent[2]), "alpha", "the second ran");
    for (at, before) in [(3, 2), (4, 3)] {
        assert_eq!(
            last_message(&sent[at]),
            format!(
                "refused: not run — it repeats your last {before} calls word for word. Report something new, do the next step of your plan, or call mission_finish (stuck, saying why, if you cannot go on)."
            )
        );
    }
}

/// As Qwen2.5-Coder-1.5B answered "add a function add(a,b) to lib.py", word for word
/// at temperature 0 however it was corrected: a call to a tool named in the intent.
#[test]
fn a_model_writing_the_same_broken_call_is_told_the_intent_is_no_tool_then_rests_stuck() {
    let sb = Sandbox::new();
    let add = r#"```json
{"name": "add", "arguments": {"a": 1, "b": 2}}
```"#;
    let dialog = planner_world(&sb, json!({"turns": [{"text": add, "repeat": true}]}));
    let record = fired_stuck(&sb, "add a function add(a,b) to lib.py");
    assert_eq!(
        record["statusReason"],
        r#"repeating itself: the unit wrote the same broken tool call as text 5 times in a row: ```json {"name": "add", "arguments": {"a": 1, "b": 2}} ```"#
    );
    let sent = requests(&dialog);
    assert_eq!(sent.len(), 5, "the fifth reply ended the turn");
    let correction = "Your reply wrote a tool call as text instead of making it, and nothing was run: \"add\" (a bare JSON object): there is no tool \"add\". Make the call itself, through the tool-calling interface, with a JSON object of its arguments. The tools are: mission_report, mission_plan, mission_ask_attention, mission_finish, read_file, list_dir, grep, find_files, write_file, edit_file, shell. A name in the intent is not a tool: do the intent's work with the tools there are, starting with mission_plan if you have not filed your plan. What no tool does itself (renaming, moving or deleting a file, running a program) is a command line for shell, e.g. shell with command \"mv old.txt new.txt\".";
    assert_eq!(last_message(&sent[1]), correction);
    assert_eq!(last_message(&sent[2]), correction);
    for (at, before) in [(3, 2), (4, 3)] {
        assert_eq!(
            last_message(&sent[at]),
            format!(
                "{correction} This is the same reply as your last {before}: write something different."
            )
        );
    }
}

#[test]
fn a_model_that_answers_the_verdict_ask_in_prose_is_asked_once_more_for_mission_finish() {
    let sb = Sandbox::new();
    let dialog = planner_world(
        &sb,
        json!({"turns": [
            call("write_file", json!({"path": "hello.txt", "content": "hello\n"})),
            {"text": "I created hello.txt."},
            {"text": "The task is done: hello.txt contains hello."},
            call("mission_report", json!({"kind": "result", "summary": "hello.txt written",
                "refs": ["hello.txt"]})),
            call("mission_finish", json!({"status": "landed", "reason": "hello.txt holds hello"})),
        ]}),
    );
    let fired = fire_waiting(&sb, "create hello.txt containing hello");
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired
            .stdout
            .contains("finished: landed — hello.txt holds hello\n"),
        "{fired:#?}"
    );
    let sent = requests(&dialog);
    assert_eq!(sent.len(), 5, "{sent:#?}");
    assert_eq!(last_message(&sent[2]), VERDICT_ASK_UNREPORTED);
    assert_eq!(
        last_message(&sent[3]),
        "Prose finishes nothing: no one reads it. Call mission_finish now, with status landed, stuck, derailed or abandoned."
    );
}

/// As Qwen2.5-Coder-1.5B did: a result filed before the work, naming a file not
/// there yet, is followed by the intent, not done; after the result filed for real,
/// a turn that ends in nothing is asked for its verdict alone, the four named.
#[test]
fn after_a_filed_result_a_turn_ending_in_prose_is_asked_for_the_verdict_alone() {
    let sb = Sandbox::new();
    let result = call(
        "mission_report",
        json!({"kind": "result", "summary": "hello.txt written", "refs": ["hello.txt"]}),
    );
    let dialog = planner_world(
        &sb,
        json!({"turns": [
            result,
            call("write_file", json!({"path": "hello.txt", "content": "hello\n"})),
            result,
            {"text": ""},
            call("mission_finish", json!({"status": "landed", "reason": "hello.txt holds hello"})),
        ]}),
    );
    let fired = fire_waiting(&sb, "create hello.txt containing hello");
    assert_eq!(fired.code, 0, "{fired:#?}");
    let sent = requests(&dialog);
    assert_eq!(sent.len(), 5, "{sent:#?}");
    assert!(
        last_result(&sent[1]).contains("(downgraded from result: claimed artifacts not found:"),
        "{}",
        last_result(&sent[1])
    );
    assert_eq!(
        last_message(&sent[1]),
        "Not done yet: create hello.txt containing hello. Do it with your tools."
    );
    assert_eq!(last_message(&sent[2]), landing_hint("That worked."));
    assert_eq!(
        last_message(&sent[4]),
        "What is your verdict? Call mission_finish with it: landed, stuck, derailed or abandoned."
    );
}

/// Qwen2.5-Coder-1.5B on "add a function add(a,b) to lib.py", as recorded: it filed
/// its plan, then a result report and a landing — as two ```json blocks — without
/// touching the workspace. The plan's result tells it the work is still to do; only
/// the first written call runs, and its premature result is sent back once, not
/// filed; once it has worked, its result and landing go through.
#[test]
fn a_result_claimed_after_the_plan_before_any_work_is_sent_back_once() {
    let sb = Sandbox::new();
    let plan = call(
        "mission_plan",
        json!({"entries": [{"id": "add", "content": "add a function add(a,b) to lib.py",
            "status": "in_progress", "priority": "high"}]}),
    );
    let claim = "```json\n{\"name\": \"mission_report\", \"arguments\": {\"kind\": \"result\", \"summary\": \"The plan is set.\", \"refs\": [\"lib.py\"]}}\n```\n```json\n{\"name\": \"mission_finish\", \"arguments\": {\"status\": \"landed\", \"reason\": \"The plan is set.\"}}\n```";
    let dialog = planner_world(
        &sb,
        json!({"turns": [
            plan,
            {"text": claim},
            call("write_file", json!({"path": "lib.py", "content": "def add(a, b):\n    return a + b\n"})),
            call("mission_report", json!({"kind": "result", "summary": "add is in lib.py", "refs": ["lib.py"]})),
            call("mission_finish", json!({"status": "landed", "reason": "lib.py has add"})),
        ]}),
    );
    let fired = sb.run(&[
        "mission",
        "fire",
        "agent-planner",
        "add a function add(a,b) to lib.py",
        "--wait",
        "--policy",
        "dev",
    ]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("finished: landed — lib.py has add\n"),
        "{fired:#?}"
    );
    let id = sb.newest_mission().unwrap();
    assert_eq!(
        crate::harness::report_summaries(&sb, &id),
        ["[result] add is in lib.py"],
        "the premature result was not filed"
    );
    let sent = requests(&dialog);
    assert_eq!(sent.len(), 5, "{sent:#?}");
    assert!(
        last_message(&sent[1]).ends_with(
            "\nYour plan is filed; nothing is done yet. Now do its first step with your own tools (read_file, list_dir, write_file, edit_file, shell)."
        ),
        "{}",
        last_message(&sent[1])
    );
    // A mission's replies stop where a second written call would begin.
    assert_eq!(
        sent[0]["stop"],
        json!(["\n```\n", "\n{\"name\"", "\n<tool_call>"])
    );
    // Only the first written call ran (the second was written blind to its result),
    // its claim sent back, and the model told the rest did not run.
    let results: Vec<&str> = sent[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default())
        .collect();
    let refusal = "refused: not filed, for you have not used your own tools on the workspace yet (read_file, list_dir, write_file, edit_file, shell…), so the intent's work is not done. Do it now, step by step; report the result and finish only once it is done. If the intent truly needs no work in the workspace, make this call again.";
    assert_eq!(
        results[1..],
        [format!(
            "{refusal}\nOnly this first of the calls your reply wrote out ran: the others were written before you saw its result. Make one call at a time."
        )],
        "{results:#?}"
    );
}
