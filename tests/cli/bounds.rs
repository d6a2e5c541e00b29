//! Issue D: compute bounds, all of them enforced — turns, tool calls, tokens, the
//! model allowlist, and `onExhausted: pause_ask` — through the real binary, a real
//! stub agent per case, and the record read back through our own commands.

use crate::harness::{Background, Sandbox, wait_for};

const TURNS_REASON: &str = "compute bound exhausted: maxTurns=1 — the mission spent its turn budget without reaching its operator.";
const TOOLS_REASON: &str = "compute bound exhausted: maxToolCalls=3 — the mission reached its envelope-gated action budget; this call and any after it are refused.";

fn reports(sb: &Sandbox, id: &str) -> Vec<String> {
    let out = sb.run(&["mission", "reports", id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_turn_bound_of_one_sends_exactly_one_prompt_and_finishes_stuck() {
    let sb = Sandbox::new();
    let transcript = sb.cwd.join("transcript.log");
    sb.declare_stubs(&[(
        "stub",
        Some(r#"{"name":"mute","turns":[{"steps":["mute"]},{"steps":["mute"]}]}"#),
    )]);
    sb.write_compute_envelope("oneturn", r#"{"maxTurns":1}"#);
    let run = sb.fire_stub("oneturn", "60s", Some(&transcript));
    assert_eq!(run.code, 1, "{run:#?}");
    run.assert_stdout_has(
        "\nCompute bounds: maxTurns=1 (enforced); a crossed bound finishes the mission stuck.\n",
    );
    let id = sb.newest_mission().unwrap();
    run.assert_stdout_has(&format!("Mission {id} finished: stuck — {TURNS_REASON}\n"));
    let prompts = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(prompts.lines().count(), 1, "no nudge: {prompts}");
    assert_eq!(sb.status_line(&id), format!("stuck — {TURNS_REASON}"));
    assert!(reports(&sb, &id).is_empty(), "and no silent blocker");
}

#[test]
fn the_fourth_of_five_tool_calls_under_a_bound_of_three_finishes_stuck() {
    let sb = Sandbox::new();
    // The unit's own card for its mission_report call is not one of its tool calls.
    let mut steps = vec![
        r#"{"report":{"summary":"starting"}}"#.to_string(),
        r#"{"tool_call":"mcp__mission__mission_report"}"#.to_string(),
    ];
    for n in 1..=5 {
        steps.push(format!(r#"{{"tool_call":"call {n}"}}"#));
        steps.push(format!(r#"{{"report":{{"summary":"after call {n}"}}}}"#));
    }
    steps.push(r#"{"finish":"landed"}"#.to_string());
    let script = format!(
        r#"{{"name":"five","delay_ms":100,"turns":[{{"steps":[{}]}}]}}"#,
        steps.join(",")
    );
    sb.declare_stubs(&[("stub", Some(&script))]);
    sb.write_compute_envelope("three", r#"{"maxToolCalls":3}"#);
    let run = sb.fire_stub("three", "60s", None);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    assert_eq!(sb.status_line(&id), format!("stuck — {TOOLS_REASON}"));
    assert_eq!(
        reports(&sb, &id),
        ["starting", "after call 1", "after call 2", "after call 3"],
        "the 4th call stopped the mission; nothing after it was recorded"
    );
}

#[test]
fn gated_permission_requests_count_and_the_crossing_one_is_refused() {
    let sb = Sandbox::new();
    // Each outcome is reported: three allowed, then the fourth is refused and the
    // mission is stuck before the unit can carry on.
    let script = r#"{"name":"perms","delay_ms":50,"turns":[{"steps":[{"permission":{"title":"edit src/x.rs","times":5,"report":true}},{"finish":"landed"}]}]}"#;
    sb.declare_stubs(&[("stub", Some(script))]);
    sb.write_compute_envelope("three", r#"{"maxToolCalls":3}"#);
    let run = sb.fire_stub("three", "60s", None);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    assert_eq!(sb.status_line(&id), format!("stuck — {TOOLS_REASON}"));
    let filed = reports(&sb, &id);
    assert!(
        filed.len() >= 3 && filed[..3].iter().all(|r| r.contains("allowed")),
        "{filed:?}"
    );
    assert!(
        !filed.iter().skip(3).any(|r| r.contains("allowed")),
        "nothing past the bound was allowed: {filed:?}"
    );
}

#[test]
fn the_token_bound_holds_on_reported_usage() {
    let sb = Sandbox::new();
    let script = r#"{"name":"usage","delay_ms":50,"turns":[{"steps":[{"report":{"summary":"go"}},{"usage":{"used":500,"size":32768}},{"report":{"summary":"past the bound"}},{"finish":"landed"}]}]}"#;
    sb.declare_stubs(&[("stub", Some(script))]);
    sb.write_compute_envelope("small", r#"{"maxTokens":100}"#);
    let run = sb.fire_stub("small", "60s", None);
    assert_eq!(run.code, 1, "{run:#?}");
    run.assert_stdout_has("Compute bounds: maxTokens=100 (best-effort);");
    let id = sb.newest_mission().unwrap();
    assert_eq!(
        sb.status_line(&id),
        "stuck — compute bound exhausted: maxTokens=100 (reported usage 500) — the mission spent its token budget."
    );
    assert_eq!(reports(&sb, &id), ["go"]);
}

#[test]
fn with_no_usage_reported_the_meter_holds_the_token_bound() {
    let sb = Sandbox::new();
    let chat = "x".repeat(2048);
    let script = format!(
        r#"{{"name":"chatty","delay_ms":50,"turns":[{{"steps":[{{"say":"{chat}"}},{{"report":{{"summary":"past the bound"}}}},{{"finish":"landed"}}]}}]}}"#
    );
    sb.declare_stubs(&[("stub", Some(&script))]);
    sb.write_compute_envelope("small", r#"{"maxTokens":100}"#);
    let prompts = sb.cwd.join("prompts.jsonl");
    let mut fire = sb.fire_stub_command("small", "60s", None);
    fire.env("STUB_PROMPTS", &prompts);
    let run = sb.run_with(fire);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    // Everything that crossed the boundary by then, as the unit received it: the
    // first prompt's blocks and the 2 KB message, at a token per four bytes.
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&prompts)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let prompt_bytes: usize = first["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap().len())
        .sum();
    assert!(
        prompt_bytes > "go".len(),
        "the preamble came first: {first}"
    );
    let metered = missionboard::text::count(((prompt_bytes + chat.len()) / 4) as u64);
    assert_eq!(
        sb.status_line(&id),
        format!(
            "stuck — compute bound exhausted: maxTokens=100 (metered usage {metered}, counted as bytes/4 of the text crossing the ACP boundary because the agent reports none) — the mission spent its token budget."
        )
    );
    assert!(reports(&sb, &id).is_empty());
}

const ON_MODEL: &str = r#"{"name":"models","models":["a","b"],"turns":[{"steps":[{"report":{"kind":"result","summary":"running on {{model}}"}},{"finish":"landed"}]}]}"#;

#[test]
fn an_agent_offering_models_runs_on_the_one_the_allowlist_permits() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(ON_MODEL))]);
    sb.write_compute_envelope("onlyb", r#"{"modelAllowlist":["b"]}"#);
    let run = sb.fire_stub("onlyb", "60s", None).ok();
    run.assert_stdout_has("\nCompute bounds: modelAllowlist=[\"b\"] (enforced); a crossed bound finishes the mission stuck.\nModel: \"b\", of the models agent \"stub\" offers (a, b), as modelAllowlist permits.\n");
    let id = sb.newest_mission().unwrap();
    assert_eq!(reports(&sb, &id), ["running on b"]);
    let show = sb.run(&["mission", "show", &id]).ok();
    show.assert_stdout_has("\nModel:     b\n");
    show.assert_stdout_has(
        "\nCompute:   modelAllowlist=[\"b\"] (enforced) (onExhausted finish_stuck)\n",
    );
    assert_eq!(
        picker_labels(&sb, "stub", "onlyb")[..2],
        ["modelAllowlist [b] · enforced", "onExhausted finish_stuck"]
    );
}

#[test]
fn an_allowlist_naming_no_offered_model_refuses_the_fire_and_leaves_no_record() {
    let sb = Sandbox::new();
    let transcript = sb.cwd.join("transcript.log");
    sb.declare_stubs(&[("stub", Some(ON_MODEL))]);
    sb.write_compute_envelope("onlyc", r#"{"modelAllowlist":["c"]}"#);
    let run = sb.fire_stub("onlyc", "60s", Some(&transcript));
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        run.stderr.lines().next().unwrap(),
        "Error: compute bound refused: modelAllowlist — this mission's envelope permits only \"c\"; agent \"stub\" offers \"a\", \"b\". Nothing was sent and no mission was recorded: fire under an envelope whose modelAllowlist names one of the agent's models, or at an agent that offers an allowed one"
    );
    assert!(sb.newest_mission().is_none(), "no record");
    assert!(!transcript.exists(), "no prompt was sent");
}

#[test]
fn an_agent_offering_no_models_is_told_once_the_allowlist_is_not_enforced() {
    let sb = Sandbox::new();
    let script = r#"{"name":"plain","turns":[{"steps":[{"report":{"kind":"result","summary":"on {{model}}?"}},{"finish":"landed"}]}]}"#;
    sb.declare_stubs(&[("stub", Some(script))]);
    sb.write_compute_envelope("onlyb", r#"{"modelAllowlist":["b"]}"#);
    let run = sb.fire_stub("onlyb", "60s", None).ok();
    let note = "modelAllowlist is declared, not enforced for agent \"stub\": it advertises no session models, so the host can neither see nor choose the model it runs on.";
    assert_eq!(run.stdout.matches(note).count(), 1, "{}", run.stdout);
    run.assert_stdout_has("Compute bounds: modelAllowlist=[\"b\"] (declared, not enforced);");
    let id = sb.newest_mission().unwrap();
    let show = sb.run(&["mission", "show", &id]).ok();
    show.assert_stdout_has(
        "\nCompute:   modelAllowlist=[\"b\"] (declared, not enforced) (onExhausted finish_stuck)\n",
    );

    // The board's picker labels the next fire at this agent as `mission show`
    // labelled this one: from what the agent offered when it last started.
    assert_eq!(
        picker_labels(&sb, "stub", "onlyb")[0],
        "modelAllowlist [b] · declared, not enforced"
    );
}

/// The labels the board's picker shows for `envelope` when `agent` is chosen, read
/// the way the board reads them.
fn picker_labels(sb: &Sandbox, agent: &str, envelope: &str) -> Vec<String> {
    use missionboard::board::picker;
    use missionboard::ops::fire;
    let paths = missionboard::paths::Paths::resolve(sb.home.clone(), sb.cwd.clone());
    let host = missionboard::ops::host::Host::open(
        &paths,
        &sb.store(),
        missionboard::ops::host::Hosting::OnNeed,
    )
    .unwrap();
    let data = fire::load_picker(&host).unwrap();
    let caps = data
        .agents
        .iter()
        .find(|a| a.name == agent)
        .expect("the agent");
    let env = data
        .envelopes
        .iter()
        .find(|e| e.short_name == envelope)
        .expect("the envelope");
    picker::bound_labels(env, caps.caps.as_ref())
}

/// Turn 1 crosses `maxToolCalls=3` on its 4th call; the turn after an extension
/// (the stub's turn 2) lands.
fn pausing_stub(sb: &Sandbox) {
    let mut steps = vec![r#"{"report":{"summary":"starting"}}"#.to_string()];
    for n in 1..=5 {
        steps.push(format!(r#"{{"tool_call":"call {n}"}}"#));
    }
    steps.push(r#"{"finish":"landed"}"#.to_string());
    let script = format!(
        r#"{{"name":"pause","delay_ms":100,"turns":[{{"steps":[{}]}},{{"steps":[{{"report":{{"kind":"result","summary":"carried on"}}}},{{"finish":"landed"}}]}}]}}"#,
        steps.join(",")
    );
    sb.declare_stubs(&[("stub", Some(&script))]);
    sb.write_compute_envelope("pausing", r#"{"maxToolCalls":3,"onExhausted":"pause_ask"}"#);
}

/// The pausing stub's mission, fired in the background and now paused on its
/// compute-bound question.
struct Paused {
    host: Background,
    ask: String,
    summary: String,
    id: String,
}

fn fire_until_paused(sb: &Sandbox, transcript: &std::path::Path) -> Paused {
    let host = Background::spawn(sb.fire_stub_command("pausing", "60s", Some(transcript)));
    let (ask, summary) = budget_question(sb);
    let id = sb.newest_mission().unwrap();
    Paused {
        host,
        ask,
        summary,
        id,
    }
}

/// The compute-bound question, once it is pending: (id, summary).
fn budget_question(sb: &Sandbox) -> (String, String) {
    wait_for(30, "the compute-bound question", || {
        let id = sb.newest_mission()?;
        let show = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
        let ask = v["pendingAsks"]
            .as_array()?
            .iter()
            .find(|a| a["toolName"] == "compute_bound" && a["parked"] == true)?
            .clone();
        Some((
            ask["id"].as_str()?.to_string(),
            ask["argsSummary"].as_str()?.to_string(),
        ))
    })
}

#[test]
fn pause_ask_extended_by_the_operator_carries_on_and_lands() {
    let sb = Sandbox::new();
    let transcript = sb.cwd.join("transcript.log");
    pausing_stub(&sb);
    let Paused {
        host,
        ask,
        summary,
        id,
    } = fire_until_paused(&sb, &transcript);
    assert_eq!(
        summary,
        format!("mission {id} hit its compute bound maxToolCalls=3 — extend it or let it stop?")
    );
    assert_eq!(sb.status_line(&id), "open", "paused, not finished");
    let list = sb.run(&["approvals", "list"]).ok();
    list.assert_stdout_has("compute");
    list.assert_stdout_has("mission.compute_bound");

    // An answer outside the grammar is refused, and the question stays open.
    let wrong = sb.run(&["approvals", "respond", &ask, "--answer", "sure, go on"]);
    assert_eq!(wrong.code, 1, "{wrong:#?}");
    assert_eq!(
        wrong.stderr.trim_end(),
        "Error: \"sure, go on\" is not an answer to a compute-bound question: answer \"extend N%\" to raise the bound by N percent (\"extend 50%\": by half, rounded up), \"extend +N\" to raise it by N (N dollars for maxCostUsd), or \"stop\" to let the mission finish stuck"
    );
    let mut agent_answer = sb.command(&[
        "approvals",
        "respond",
        &ask,
        "--answer",
        "extend 50%",
        "--as-agent",
        "oracle",
    ]);
    agent_answer.env("MISSIONBOARD_OPT_IN_BETA", "1");
    let as_agent = sb.run_with(agent_answer);
    assert_eq!(as_agent.code, 1, "{as_agent:#?}");
    assert!(
        as_agent
            .stderr
            .contains("only an operator may extend a mission's budget or stop it"),
        "{as_agent:#?}"
    );

    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "extend 50%"])
        .ok();
    assert!(
        answered
            .stdout
            .contains("that host resumes it with this answer"),
        "{answered:#?}"
    );
    let run = host.join();
    assert_eq!(run.code, 0, "{run:#?}");
    run.assert_stdout_has(&format!("Mission {id} finished: landed"));
    assert_eq!(reports(&sb, &id), ["starting", "carried on"]);
    let prompts = std::fs::read_to_string(&transcript).unwrap();
    let prompts: Vec<&str> = prompts.lines().collect();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(
        prompts[1].starts_with(
            "turn=2 Your previous turn was cancelled when the mission reached its compute bound"
        ),
        "{prompts:?}"
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    show.assert_stdout_has("\nCompute:   maxToolCalls=5 (enforced), raised from 3 by the operator (onExhausted pause_ask)\n");
}

#[test]
fn pause_ask_answered_stop_finishes_stuck_with_the_bound_reason() {
    let sb = Sandbox::new();
    let transcript = sb.cwd.join("transcript.log");
    pausing_stub(&sb);
    let Paused { host, ask, id, .. } = fire_until_paused(&sb, &transcript);
    sb.run(&["approvals", "respond", &ask, "--answer", "stop"])
        .ok();
    let run = host.join();
    assert_eq!(run.code, 1, "{run:#?}");
    run.assert_stdout_has(&format!("Mission {id} finished: stuck — {TOOLS_REASON}\n"));
    assert_eq!(reports(&sb, &id), ["starting"]);
    let prompts = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(prompts.lines().count(), 1, "nothing more was sent");
}

#[test]
fn a_pause_outlives_its_host_and_the_answering_process_settles_it() {
    let sb = Sandbox::new();
    let transcript = sb.cwd.join("transcript.log");
    pausing_stub(&sb);
    let Paused { host, ask, id, .. } = fire_until_paused(&sb, &transcript);
    host.kill();
    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "stop"])
        .ok();
    assert!(
        answered.stdout.contains(&format!(
            "Its run had no live host and nothing was left to resume, so it was settled here: 'missionboard mission show {id}' has the outcome."
        )),
        "{answered:#?}"
    );
    assert_eq!(sb.status_line(&id), format!("stuck — {TOOLS_REASON}"));
}

#[test]
fn an_extension_answered_after_the_host_died_resumes_the_mission_here_and_its_spend_carries_on() {
    let sb = Sandbox::new();
    let transcript = sb.cwd.join("transcript.log");
    pausing_stub(&sb);
    // The answering process holds a further pause only this long before moving on.
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let Paused { host, ask, id, .. } = fire_until_paused(&sb, &transcript);
    host.kill();
    let mut respond = sb.command(&["approvals", "respond", &ask, "--answer", "extend +2"]);
    respond.env("STUB_TRANSCRIPT", &transcript);
    let answered = sb.run_with(respond).ok();
    assert!(
        answered
            .stdout
            .contains("the suspended run was resumed in this process"),
        "{answered:#?}"
    );
    let prompts = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        prompts
            .lines()
            .nth(1)
            .is_some_and(|l| l.contains("You are resuming a parked mission")),
        "{prompts}"
    );
    // The fresh session replays the script's five calls, but the mission had spent
    // four of them already (the fourth crossed 3): a refilled budget would fit all
    // five under the raised five; the durable one crosses again on the replay's
    // second call, and the mission pauses on a new question.
    let (again, summary) = budget_question(&sb);
    assert_ne!(again, ask);
    assert!(summary.contains("maxToolCalls=5"), "{summary}");
    assert_eq!(sb.status_line(&id), "open");
    let show = sb.run(&["mission", "show", &id]).ok();
    show.assert_stdout_has("maxToolCalls=5 (enforced), raised from 3 by the operator");
    sb.run(&["approvals", "respond", &again, "--answer", "stop"])
        .ok();
    assert!(
        sb.status_line(&id)
            .starts_with("stuck — compute bound exhausted: maxToolCalls=5"),
        "{}",
        sb.status_line(&id)
    );
}
