//! Real agents' permission requests, replayed by the stub from the frames kept under
//! `tests/fixtures/acp/<agent>/`: mission tools in every agent's spelling pass at
//! once and never count as tool calls; a refused call is a report on the mission,
//! the unit's next prompt names it and why, and a unit that stops after a refusal
//! leaves its mission stuck on that refusal, never open with nothing pending.

use serde_json::{Value, json};

use crate::harness::Sandbox;

/// The frames of fixture `<agent>/<case>.json`: its `tool_call` update (the
/// `session/update` params' `update`), if it has one, and its permission request's
/// params without the session id (the stub fills in its own).
fn frames(agent: &str, case: &str) -> (Option<Value>, Value) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/acp")
        .join(agent)
        .join(format!("{case}.json"));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut update = None;
    let mut request = None;
    for frame in doc["frames"].as_array().unwrap() {
        match frame["method"].as_str() {
            Some("session/update") => update = Some(frame["params"]["update"].clone()),
            Some("session/request_permission") => {
                let mut params = frame["params"].clone();
                params.as_object_mut().unwrap().remove("sessionId");
                request = Some(params);
            }
            _ => {}
        }
    }
    (
        update,
        request.expect("the fixture holds a permission request"),
    )
}

/// The shipped strict envelope, written to the home as `name` with `edit` applied.
fn strict_as(sb: &Sandbox, name: &str, edit: impl FnOnce(&mut Value)) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/hitl-policy-strict.json");
    let mut policy: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    edit(&mut policy);
    sb.write(
        &sb.home.join(format!("hitl-policy-{name}.json")),
        &serde_json::to_string_pretty(&policy).unwrap(),
    );
}

/// The index of the shipped strict envelope's rule that blacklists `shred`.
fn strict_shred_rule() -> usize {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/hitl-policy-strict.json");
    let policy: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    policy["rules"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| {
            r["when"][0]["op"] == "command_blacklist"
                && r["when"][0]["value"].as_str().unwrap().contains("shred")
        })
        .expect("strict blacklists shred")
}

fn script(turns: Value) -> String {
    json!({"name": "refusals", "turns": turns}).to_string()
}

#[test]
fn under_strict_a_gemini_shell_line_with_no_raw_input_is_denied_reported_and_told_to_the_unit() {
    let sb = Sandbox::new();
    let (_, request) = frames("gemini", "shell_shred");
    sb.declare_stubs(&[(
        "stub",
        Some(&script(json!([
            {"steps": [{"agent_permission": {"request": request, "on_reject": "end_turn"}}]},
            {"steps": [{"report": {"kind": "progress", "summary": "heard: {{prompt}}"}}]},
        ]))),
    )]);
    let transcript = sb.cwd.join("transcript.log");
    let run = sb.fire_stub("strict", "60s", Some(&transcript));
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let cwd = sb.cwd.display().to_string();
    let refused = format!(
        "local_shell.local_shell: shred -u victim.txt (in {cwd}) — denied by rule {} of envelope \"strict\"",
        strict_shred_rule()
    );

    // Denied by the rule at once: never an operator ask.
    assert!(sb.pending_ask_ids().is_empty(), "no ask was raised");
    let show: Value =
        serde_json::from_str(&sb.run(&["mission", "show", &id, "--json"]).ok().stdout).unwrap();
    assert_eq!(show["asks"].as_array().map_or(0, Vec::len), 0, "{show:#}");

    // On the record, and the unit's next prompt named it and why.
    let reports = sb.report_texts(&id);
    assert_eq!(reports.len(), 2, "{reports:#?}");
    assert!(
        reports[0].0.starts_with(&format!("refused {refused}")),
        "{reports:#?}"
    );
    assert!(
        reports[0].1.contains("Call:   local_shell.local_shell\n"),
        "{reports:#?}"
    );
    assert!(
        reports[1].0.starts_with(&format!(
            "heard: The envelope refused a tool call of yours: - {refused}"
        )),
        "{reports:#?}"
    );
    let prompts = std::fs::read_to_string(&transcript).unwrap();
    let lines: Vec<&str> = prompts.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "the intent and the refusal turn, no nudge: {prompts}"
    );
    assert!(
        lines[1].starts_with("turn=2 The envelope refused a tool call of yours:"),
        "{prompts}"
    );

    // The unit reported but did not finish: stuck on the refusal, not "nothing pending".
    let status = sb.status_line(&id);
    assert!(
        status.starts_with(&format!("stuck — the envelope refused {refused}")),
        "{status}"
    );
    assert!(
        status.ends_with("and the unit ended its turn without another way forward"),
        "{status}"
    );
    let show = sb.run(&["mission", "show", &id]).ok().stdout;
    assert!(!show.contains("nothing pending"), "{show}");
    assert!(show.contains(&format!("refused {refused}")), "{show}");
    let inbox = sb.run(&["inbox", "list", "--all"]).ok().stdout;
    assert!(inbox.contains("refused local_shell.local_shell"), "{inbox}");
}

#[test]
fn a_codex_turn_cancelled_by_its_reject_gets_the_refusal_and_a_silent_unit_ends_stuck_on_it() {
    let sb = Sandbox::new();
    let (_, request) = frames("codex", "exec_shred");
    sb.declare_stubs(&[(
        "stub",
        Some(&script(json!([
            {"steps": [{"agent_permission": {"request": request, "on_reject": "cancel"}}]},
            {"steps": ["mute"]},
            {"steps": ["mute"]},
        ]))),
    )]);
    let transcript = sb.cwd.join("transcript.log");
    let run = sb.fire_stub("strict", "60s", Some(&transcript));
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let prompts = std::fs::read_to_string(&transcript).unwrap();
    let lines: Vec<&str> = prompts.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "the refusal turn, then nothing more: {prompts}"
    );
    assert!(
        lines[1].starts_with("turn=2 The envelope refused a tool call of yours:"),
        "{prompts}"
    );
    let status = sb.status_line(&id);
    assert!(
        status.starts_with(
            "stuck — the envelope refused local_shell.local_shell: bash -lc shred -u victim.txt"
        ) && status.contains(&format!(
            "denied by rule {} of envelope \"strict\"",
            strict_shred_rule()
        )),
        "{status}"
    );
    let reports = sb.report_texts(&id);
    assert_eq!(reports.len(), 1, "only the refusal: {reports:#?}");
    assert!(
        reports[0]
            .0
            .starts_with("refused local_shell.local_shell: bash -lc shred -u victim.txt"),
        "{reports:#?}"
    );
}

#[test]
fn qwen_shaped_mission_reports_are_allowed_under_strict_and_never_count_as_tool_calls() {
    let sb = Sandbox::new();
    let (update, request) = frames("qwen", "mission_report");
    // The same call twice under fresh ids, each announced the way qwen does.
    let call = |id: &str| {
        let (mut update, mut request) = (update.clone().unwrap(), request.clone());
        update["toolCallId"] = json!(id);
        request["toolCall"]["toolCallId"] = json!(id);
        json!({"agent_permission": {"update": update, "request": request, "report": true}})
    };
    sb.declare_stubs(&[(
        "stub",
        Some(&script(json!([{"steps": [
            call("qwen-report-1"),
            call("qwen-report-2"),
            {"tool_call": {"title": "read notes.txt", "kind": "read"}},
            {"finish": "landed"},
        ]}]))),
    )]);
    strict_as(&sb, "strict1", |p| p["compute"]["maxToolCalls"] = json!(1));
    let transcript = sb.cwd.join("transcript.log");
    let run = sb.fire_stub("strict1", "60s", Some(&transcript));
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    assert_eq!(sb.status_line(&id), "landed");
    let summaries: Vec<String> = sb.report_texts(&id).into_iter().map(|r| r.0).collect();
    let title = request["toolCall"]["title"].as_str().unwrap();
    assert_eq!(
        summaries,
        [
            format!("agent permission for {title}: allowed"),
            format!("agent permission for {title}: allowed"),
        ]
    );
    let show: Value =
        serde_json::from_str(&sb.run(&["mission", "show", &id, "--json"]).ok().stdout).unwrap();
    assert_eq!(show["asks"].as_array().map_or(0, Vec::len), 0, "{show:#}");
}

/// An envelope that allows everything but asks before every shell line, each ask
/// waiting `timeout_s`.
fn gate(sb: &Sandbox, timeout_s: u64) {
    sb.write(
        &sb.home.join("hitl-policy-gate.json"),
        &format!(
            r#"{{"default_action":"allow","rules":[{{"tools":"local_shell","tool":"local_shell","action":"approve","timeout_s":{timeout_s}}}]}}"#
        ),
    );
}

/// Turn 1: qwen's shell request, the turn ending on a reject; turn 2: report the
/// prompt it got, then land.
fn qwen_shell_then_land() -> String {
    let (_, request) = frames("qwen", "shell_rm");
    script(json!([
        {"steps": [{"agent_permission": {"request": request, "on_reject": "end_turn"}}]},
        {"steps": [
            {"report": {"kind": "progress", "summary": "heard: {{prompt}}"}},
            {"finish": "landed"},
        ]},
    ]))
}

#[test]
fn an_operators_deny_reaches_the_unit_and_the_record() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&qwen_shell_then_land()))]);
    gate(&sb, 60);
    let host = crate::harness::Background::spawn(sb.fire_stub_command("gate", "60s", None));
    let ask = crate::harness::wait_for(30, "the gated call's ask", || {
        sb.pending_ask_ids().into_iter().next()
    });
    sb.run(&["approvals", "respond", &ask, "--deny"]).ok();
    let run = host.join();
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let refused = format!(
        "local_shell.local_shell: rm -rf build (in {}) — denied by the operator (approval {ask})",
        sb.cwd.display()
    );
    let summaries: Vec<String> = sb.report_texts(&id).into_iter().map(|r| r.0).collect();
    assert_eq!(summaries.len(), 2, "{summaries:#?}");
    assert_eq!(summaries[0], format!("refused {refused}"));
    assert!(
        summaries[1].starts_with(&format!(
            "heard: The envelope refused a tool call of yours: - {refused} Do not make"
        )),
        "{summaries:#?}"
    );
    assert_eq!(sb.status_line(&id), "landed", "the unit found another way");
}

#[test]
fn an_ask_that_expires_is_a_refusal_naming_its_deadline() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&qwen_shell_then_land()))]);
    gate(&sb, 1);
    let transcript = sb.cwd.join("transcript.log");
    let run = sb.fire_stub("gate", "60s", Some(&transcript));
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let show: Value =
        serde_json::from_str(&sb.run(&["mission", "show", &id, "--json"]).ok().stdout).unwrap();
    let ask = show["asks"][0]["id"].as_str().unwrap().to_string();
    let refused = format!(
        "local_shell.local_shell: rm -rf build (in {}) — nobody answered approval {ask} before its deadline, so its on-timeout verdict (deny) applied",
        sb.cwd.display()
    );
    let summaries: Vec<String> = sb.report_texts(&id).into_iter().map(|r| r.0).collect();
    assert_eq!(summaries.len(), 2, "{summaries:#?}");
    assert!(summaries[0].starts_with(&format!("refused local_shell.local_shell: rm -rf build (in {}) — nobody answered approval {ask}", sb.cwd.display())), "{summaries:#?}");
    assert!(
        summaries[1].starts_with(&format!(
            "heard: The envelope refused a tool call of yours: - {refused}"
        )),
        "{summaries:#?}"
    );
}
