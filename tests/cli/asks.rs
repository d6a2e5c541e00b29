//! Issue C: durable asks — the park window, checkpoints and exactly-once resume,
//! racing answers, attention bounds, expiry, the reclaim sweep, doctor.

use std::process::Stdio;

use crate::harness::{Background, Run, Sandbox, report_summaries, wait_for};

fn script(steps: &str) -> String {
    format!(r#"{{"name":"t","turns":[{{"steps":[{steps}]}}]}}"#)
}

const ASK_THEN_LAND: &str = r#"{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#;

/// The pending asks of the newest mission as `mission show --json` reports them.
fn pending(sb: &Sandbox) -> Vec<serde_json::Value> {
    let Some(id) = sb.newest_mission() else {
        return vec![];
    };
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    v["pendingAsks"].as_array().cloned().unwrap_or_default()
}

fn parked_ask(sb: &Sandbox) -> Option<String> {
    pending(sb)
        .into_iter()
        .find(|a| a["parked"] == true)
        .and_then(|a| a["id"].as_str().map(str::to_string))
}

/// The run's checkpoint, read back from the store (`None`: spent or never written).
fn checkpoint_of(sb: &Sandbox, ask: &str) -> Option<missionboard::asks::checkpoint::Checkpoint> {
    let store = sb.store();
    missionboard::asks::Asks::new(store)
        .checkpoint(ask)
        .unwrap()
}

#[test]
fn an_answer_inside_the_park_window_continues_the_same_turn_under_the_checkpoint_claim() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    sb.run(&["config", "set", "ask-park-window", "60s"]).ok();
    let bg = sb.fire_in_background("stub", "rename", &[]);
    let ask = wait_for(20, "the question", || sb.pending_ask_ids().first().cloned());
    assert!(
        pending(&sb).iter().all(|a| a["parked"] == false),
        "inside the window nothing is parked"
    );
    let cp = checkpoint_of(&sb, &ask).expect("checkpointed with the ask row itself");
    assert_eq!(cp.parked_at, None);
    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    assert!(
        answered
            .stdout
            .contains("that host resumes it with this answer"),
        "{answered:#?}"
    );
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("  [result] renamed: yes\n"),
        "{fired:#?}"
    );
    assert!(
        checkpoint_of(&sb, &ask).is_none(),
        "the host spent the claim"
    );
}

#[test]
fn a_live_host_resumes_a_parked_run_with_the_answer() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    sb.run(&["config", "set", "ask-park-window", "300ms"]).ok();
    let bg = sb.fire_in_background("stub", "rename", &[]);
    let ask = wait_for(20, "the parked question", || parked_ask(&sb));
    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "later, yes"])
        .ok();
    assert!(
        answered
            .stdout
            .contains("that host resumes it with this answer"),
        "{answered:#?}"
    );
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("  [result] renamed: later, yes\n"),
        "{fired:#?}"
    );
}

/// Fire, let the question park, SIGKILL the host, answer from a new process.
fn kill_then_answer(sb: &Sandbox, transcript: &std::path::Path) -> (String, Run) {
    let mut cmd = sb.command(&[
        "mission", "fire", "stub", "rename", "--wait", "--policy", "default",
    ]);
    cmd.env("STUB_TRANSCRIPT", transcript);
    let host = Background::spawn(cmd);
    let ask = wait_for(20, "the parked question", || parked_ask(sb));
    host.kill();
    let mut respond = sb.command(&["approvals", "respond", &ask, "--answer", "yes"]);
    respond.env("STUB_TRANSCRIPT", transcript);
    (ask, sb.run_with(respond))
}

#[test]
fn an_answer_after_the_host_died_resumes_the_run_exactly_once() {
    for round in 0..20 {
        let sb = Sandbox::new();
        sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
        sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
        let transcript = sb.cwd.join("transcript.log");
        let (ask, answered) = kill_then_answer(&sb, &transcript);
        let answered = answered.ok();
        assert!(
            answered
                .stdout
                .contains("and the suspended run was resumed in this process"),
            "round {round}: {answered:#?}"
        );
        let id = sb.newest_mission().unwrap();
        let show = sb.run(&["mission", "show", &id]).ok();
        assert!(
            show.stdout.contains("\nStatus:    landed\n"),
            "round {round}: {}",
            show.stdout
        );
        let resumes = std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            .filter(|l| l.contains("You are resuming a parked mission"))
            .count();
        assert_eq!(resumes, 1, "round {round}: the run resumed exactly once");
        let again = sb.run(&["approvals", "respond", &ask, "--answer", "again"]);
        assert_eq!(
            again.code, 1,
            "round {round}: a second answer never runs it twice"
        );
    }
}

#[test]
fn two_racing_answers_to_one_ask_end_in_exactly_one_verdict() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    let bg = sb.fire_in_background("stub", "race", &[]);
    let ask = wait_for(20, "the question", || sb.pending_ask_ids().first().cloned());
    let racers: Vec<_> = ["first", "second"]
        .into_iter()
        .map(|word| {
            sb.command(&["approvals", "respond", &ask, "--answer", word])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outs: Vec<_> = racers
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let ok = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(ok, 1, "{outs:?}");
    let loser = outs.iter().find(|o| !o.status.success()).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&loser.stderr),
        format!(
            "Error: ask {ask} was already answered by cli — a verdict is recorded exactly once\n"
        )
    );
    assert_eq!(bg.join().code, 0);
}

/// A mission with `n` pending questions, created through the library on the real
/// store (what a unit's asks would leave behind), under envelope `policy`.
fn mission_with_questions(sb: &Sandbox, policy: &str, n: usize) -> Vec<String> {
    use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};
    use missionboard::mission::{Missions, NewMission};
    let store = sb.store();
    let m = Missions::new(store.clone())
        .create(NewMission {
            intent: "many questions".into(),
            agent_name: "stub".into(),
            envelope_name: policy.into(),
            ..Default::default()
        })
        .unwrap();
    let asks = Asks::new(store);
    (0..n)
        .map(|i| {
            asks.raise(NewAsk {
                tools_name: QUESTION_TOOLS.into(),
                tool_name: QUESTION_TOOL.into(),
                args_summary: format!("question {i}"),
                mission_id: Some(m.id.clone()),
                ..Default::default()
            })
            .unwrap()
            .id
        })
        .collect()
}

fn beta(sb: &Sandbox, args: &[&str]) -> std::process::Command {
    let mut c = sb.command(args);
    c.env("MISSIONBOARD_OPT_IN_BETA", "1");
    c
}

#[test]
fn eight_racing_agent_answers_land_exactly_the_cap() {
    let sb = Sandbox::new();
    sb.write(
        &sb.home.join("hitl-policy-two.json"),
        r#"{"default_action":"approve","rules":[],"attention":{"allowAgentAnswers":true,"maxAgentAnswers":2}}"#,
    );
    let ids = mission_with_questions(&sb, "two", 8);
    let racers: Vec<_> = ids
        .iter()
        .map(|id| {
            beta(
                &sb,
                &[
                    "approvals",
                    "respond",
                    id,
                    "--answer",
                    "routine",
                    "--as-agent",
                    "bot",
                ],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let outs: Vec<_> = racers
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let landed = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(landed, 2, "{outs:?}");
    for o in outs.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("spent its agent-answer bound (2 of 2); this question waits for a human"),
            "{err}"
        );
    }
    let winner = outs.iter().find(|o| o.status.success()).unwrap();
    assert!(String::from_utf8_lossy(&winner.stdout).starts_with(
        "Answered as agent \"bot\" — the durable record attributes this answer to it"
    ));
    assert_eq!(sb.pending_ask_ids().len(), 6);
    // Human answers never consume the budget.
    sb.run(&[
        "approvals",
        "respond",
        &sb.pending_ask_ids()[0],
        "--answer",
        "from a human",
    ])
    .ok();
}

#[test]
fn a_human_only_envelope_refuses_agent_answers_and_the_row_stays_pending() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let ids = mission_with_questions(&sb, "strict", 1);
    let run = sb.run_with(beta(
        &sb,
        &[
            "approvals",
            "respond",
            &ids[0],
            "--answer",
            "x",
            "--as-agent",
            "oracle",
        ],
    ));
    assert_eq!(run.code, 1);
    let id = sb.newest_mission().unwrap();
    assert_eq!(
        run.stderr,
        format!(
            "Error: agent answer refused: envelope \"strict\" of mission {id} does not allow agent answers (no attention.allowAgentAnswers grant); a human must answer\n"
        )
    );
    assert_eq!(sb.pending_ask_ids(), ids);
    let plain = sb.run(&[
        "approvals",
        "respond",
        &ids[0],
        "--answer",
        "x",
        "--as-agent",
        "bot",
    ]);
    assert_eq!(plain.code, 2, "without the opt-in the flag does not exist");
}

#[test]
fn respond_validates_its_arguments_in_order() {
    let sb = Sandbox::new();
    let ids = mission_with_questions(&sb, "default", 1);
    let cases: [(&[&str], &str); 4] = [
        (
            &["approvals", "respond"],
            "Error: respond takes exactly one ask id — 'missionboard approvals list' shows what is pending\n",
        ),
        (
            &["approvals", "respond", "x"],
            "Error: exactly one of --approve, --deny, --answer, or --field (a form's, repeated) is required\n",
        ),
        (
            &["approvals", "respond", "nope", "--approve"],
            "Error: no ask \"nope\" exists — 'missionboard approvals list' shows what is pending\n",
        ),
        (&["approvals", "respond", &ids[0], "--approve"], ""),
    ];
    for (args, want) in cases {
        let run = sb.run(args);
        assert_eq!(run.code, 1, "{args:?}");
        if !want.is_empty() {
            assert_eq!(run.stderr, want, "{args:?}");
        } else {
            assert!(run.stderr.contains("is a QUESTION (question 0) — answer it with --answer \"your words\", not a yes/no verdict"), "{run:#?}");
        }
    }
    let asks = sb.run(&["mission", "asks"]).ok();
    assert!(asks.stdout.starts_with("ID"), "{}", asks.stdout);
    assert!(asks.stdout.contains("question 0"), "{}", asks.stdout);
}

#[test]
fn a_question_that_expires_takes_its_on_timeout_verdict_and_becomes_a_blocker() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    sb.run(&["config", "set", "approval-ceiling", "1s"]).ok();
    let run = sb.fire("stub", "nobody answers", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(reports.stdout.contains("[blocker]"), "{}", reports.stdout);
    assert!(
        reports.stdout.contains("Summary: Rename the env var too?"),
        "{}",
        reports.stdout
    );
    assert!(
        reports
            .stdout
            .contains("(the unit asked for a decision and got no answer: "),
        "{}",
        reports.stdout
    );
    assert!(
        sb.run(&["approvals", "list"])
            .ok()
            .stdout
            .starts_with("No pending asks.")
    );
}

#[test]
fn a_silent_mission_is_reclaimed_but_one_waiting_on_a_longer_ask_is_not() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[
        (
            "mute",
            Some(r#"{"name":"mute","turns":[{"steps":["mute"]},{"steps":["mute"]}]}"#),
        ),
        ("asker", Some(&script(ASK_THEN_LAND))),
    ]);
    assert_eq!(sb.fire("mute", "say nothing", &["--timeout", "2s"]).code, 1);
    let mute = sb.newest_mission().unwrap();
    assert_eq!(
        sb.fire("asker", "ask and wait", &["--timeout", "2s"]).code,
        1
    );
    let asker = sb.newest_mission().unwrap();

    let mut list = sb.command(&["mission", "list"]);
    list.env("MISSIONBOARD_TEST_RECLAIM_AFTER_MS", "100");
    let out = sb.run_with(list).ok();
    assert!(
        out.stdout.starts_with("Missions: 1 reclaimed as abandoned — open with no heartbeat for at least 100ms, so their host process is gone"),
        "{}",
        out.stdout
    );
    let show = sb.run(&["mission", "show", &mute]).ok();
    assert!(
        show.stdout.contains("\nStatus:    abandoned — reclaimed: host process gone, no heartbeat for less than a minute\n"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout
            .contains("  [blocker] Mission reclaimed: its host process is gone."),
        "{}",
        show.stdout
    );
    let waiting = sb.run(&["mission", "show", &asker]).ok();
    assert!(
        waiting.stdout.contains("\nStatus:    open\n"),
        "{}",
        waiting.stdout
    );
}

#[test]
fn doctor_gives_a_verdict_first() {
    let sb = Sandbox::new();
    let bare = sb.run(&["doctor"]);
    assert_eq!(bare.code, 1);
    assert!(
        bare.stdout
            .starts_with("Ready: no — run: missionboard init"),
        "{bare:#?}"
    );
    sb.run(&["init"]).ok();
    let ready = sb.run(&["doctor"]).ok();
    assert_eq!(ready.lines()[0], "Ready: yes — run: missionboard board");
}

/// `mission fire stub <intent> --wait --policy <policy>` as a host in the background,
/// its unit appending to `transcript`.
fn host(sb: &Sandbox, policy: &str, transcript: &std::path::Path) -> Background {
    let mut cmd = sb.command(&[
        "mission", "fire", "stub", "work", "--wait", "--policy", policy,
    ]);
    cmd.env("STUB_TRANSCRIPT", transcript);
    Background::spawn(cmd)
}

fn show_json(sb: &Sandbox, id: &str) -> serde_json::Value {
    serde_json::from_str(&sb.run(&["mission", "show", id, "--json"]).ok().stdout).unwrap()
}

/// `approvals respond <args…>` from a fresh process whose unit appends to
/// `transcript` (plus `env`): it says it resumed the run here.
#[track_caller]
fn respond_and_resume(
    sb: &Sandbox,
    transcript: &std::path::Path,
    args: &[&str],
    env: &[(&str, &std::path::Path)],
) {
    let mut respond = sb.command(&[&["approvals", "respond"], args].concat());
    respond.env("STUB_TRANSCRIPT", transcript);
    for (k, v) in env {
        respond.env(k, v);
    }
    let answered = sb.run_with(respond).ok();
    assert!(
        answered
            .stdout
            .contains("and the suspended run was resumed in this process"),
        "{answered:#?}"
    );
}

fn resumes(transcript: &std::path::Path) -> usize {
    std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .filter(|l| l.contains("You are resuming a parked mission"))
        .count()
}

/// An envelope that allows everything but gates the shell (`timeout_s` 0: no
/// deadline of its own).
fn gate_envelope(sb: &Sandbox, timeout_s: u64) {
    sb.write(
        &sb.home.join("hitl-policy-gate.json"),
        &format!(
            r#"{{"default_action":"allow","rules":[{{"tools":"local_shell","tool":"local_shell","action":"approve","timeout_s":{timeout_s}}}]}}"#
        ),
    );
}

/// Report, request a gated shell call (reporting its outcome; a denial finishes
/// the mission stuck), report the outcome, land.
const GATED_THEN_LAND: &str = r#"{"report":{"kind":"progress","summary":"before the call"}},{"permission":{"title":"rm -rf build","kind":"execute","report":true,"on_deny":"finish_stuck"}},{"report":{"kind":"result","summary":"cleaned: {{perm}}"}},{"finish":"landed"}"#;

/// Fire under the gate, wait for the permission ask, SIGKILL the host.
fn gated_host_killed(sb: &Sandbox, transcript: &std::path::Path) -> (String, String) {
    let child = host(sb, "gate", transcript);
    let ask = wait_for(20, "the permission ask", || {
        sb.pending_ask_ids().first().cloned()
    });
    child.kill();
    (sb.newest_mission().unwrap(), ask)
}

#[test]
fn a_gated_call_approved_after_the_host_died_resumes_in_a_fresh_session_that_makes_it() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(GATED_THEN_LAND)))]);
    gate_envelope(&sb, 0);
    let transcript = sb.cwd.join("transcript.log");
    let (id, ask) = gated_host_killed(&sb, &transcript);
    respond_and_resume(&sb, &transcript, &[&ask, "--approve"], &[]);
    assert_eq!(resumes(&transcript), 1);
    // The brief named the call and its approval: the fresh session carried on from
    // that call, made it once more, and the approval stood for it — no second ask.
    assert_eq!(
        report_summaries(&sb, &id),
        [
            "[progress] before the call",
            "[progress] permission 1/1 for rm -rf build: allowed",
            "[result] cleaned: allowed",
        ]
    );
    let v = show_json(&sb, &id);
    assert_eq!(v["status"], "landed");
    assert_eq!(v["asks"].as_array().unwrap().len(), 1, "asked exactly once");
}

#[test]
fn a_gated_call_denied_after_the_host_died_resumes_a_session_that_takes_the_denial() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(GATED_THEN_LAND)))]);
    gate_envelope(&sb, 0);
    let transcript = sb.cwd.join("transcript.log");
    let (id, ask) = gated_host_killed(&sb, &transcript);
    respond_and_resume(&sb, &transcript, &[&ask, "--deny"], &[]);
    assert_eq!(resumes(&transcript), 1);
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout
            .contains("\nStatus:    stuck — permission denied: rm -rf build\n"),
        "{}",
        show.stdout
    );
    assert_eq!(show_json(&sb, &id)["asks"].as_array().unwrap().len(), 1);
}

#[test]
fn a_gated_call_that_expires_after_the_host_died_settles_its_run_on_the_next_reconciling_read() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(GATED_THEN_LAND)))]);
    gate_envelope(&sb, 1);
    let transcript = sb.cwd.join("transcript.log");
    let (id, ask) = gated_host_killed(&sb, &transcript);
    let mut list = sb.command(&["approvals", "list"]);
    list.env("STUB_TRANSCRIPT", &transcript);
    let reconciled = wait_for(20, "the ask's deadline", || {
        let mut list = sb.command(&["approvals", "list"]);
        list.env("STUB_TRANSCRIPT", &transcript);
        let run = sb.run_with(list).ok();
        run.stdout
            .starts_with("Swept 1 expired ask(s)")
            .then_some(run)
    });
    assert!(
        reconciled
            .stdout
            .contains("Resumed 1 stranded run(s) to completion in this process."),
        "{reconciled:#?}"
    );
    assert_eq!(resumes(&transcript), 1);
    let v = show_json(&sb, &id);
    assert_eq!(
        v["status"], "stuck",
        "the on-timeout denial settled the run"
    );
    assert_eq!(v["asks"][0]["id"], ask.as_str());
    assert_eq!(v["asks"][0]["state"], "expired");
    // Exactly once: a later read finds nothing left to resume.
    let mut again = sb.command(&["approvals", "list"]);
    again.env("STUB_TRANSCRIPT", &transcript);
    let again = sb.run_with(again).ok();
    assert!(!again.stdout.contains("Resumed"), "{again:#?}");
    assert_eq!(resumes(&transcript), 1);
}

#[test]
fn a_resume_interrupted_mid_turn_leaves_no_claimed_checkpoint_once_the_mission_rests() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"ask":{"summary":"Go on?","then":[{"report":{"kind":"progress","summary":"resumed: {{answer}}"}},"hang"]}}"#,
        )),
    )]);
    sb.run(&["config", "set", "ask-park-window", "100ms"]).ok();
    let transcript = sb.cwd.join("transcript.log");
    let child = host(&sb, "default", &transcript);
    let ask = wait_for(20, "the parked question", || parked_ask(&sb));
    child.kill();
    let id = sb.newest_mission().unwrap();
    // The answering process resumes the run, and dies in the middle of its turn.
    let mut respond = sb.command(&["approvals", "respond", &ask, "--answer", "yes"]);
    respond.env("STUB_TRANSCRIPT", &transcript);
    let resumer = Background::spawn(respond);
    wait_for(20, "the resumed turn", || {
        report_summaries(&sb, &id)
            .contains(&"[progress] resumed: yes".to_string())
            .then_some(())
    });
    let claimed = checkpoint_of(&sb, &ask).expect("the resume holds the checkpoint");
    assert!(claimed.claimed_at.is_some());
    resumer.kill();
    // The mission comes to rest (a restart's sweep reclaims it): the claim goes.
    wait_for(20, "the mission to be reclaimed", || {
        let mut list = sb.command(&["mission", "list"]);
        list.env("MISSIONBOARD_TEST_RECLAIM_AFTER_MS", "100");
        sb.run_with(list);
        (show_json(&sb, &id)["status"] == "abandoned").then_some(())
    });
    assert!(
        checkpoint_of(&sb, &ask).is_none(),
        "no claimed checkpoint left"
    );
    let list = sb.run(&["approvals", "list"]).ok();
    assert!(!list.stdout.contains("Resumed"), "{list:#?}");
    assert_eq!(resumes(&transcript), 1);
}

#[test]
fn compute_spend_is_durable_a_resumed_session_continues_it_and_is_stopped_at_the_bound() {
    let sb = Sandbox::new();
    sb.write(
        &sb.home.join("hitl-policy-five.json"),
        r#"{"default_action":"allow","rules":[],"compute":{"maxToolCalls":5}}"#,
    );
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"permission":{"title":"first","kind":"read","times":3,"report":true}},{"ask":{"summary":"Go on?","then":{"permission":{"title":"then","kind":"read","times":5,"report":true}}}},{"finish":"landed"}"#,
        )),
    )]);
    sb.run(&["config", "set", "ask-park-window", "100ms"]).ok();
    let transcript = sb.cwd.join("transcript.log");
    let child = host(&sb, "five", &transcript);
    let ask = wait_for(20, "the parked question", || parked_ask(&sb));
    let id = sb.newest_mission().unwrap();
    let allowed = |sb: &Sandbox| {
        report_summaries(sb, &id)
            .into_iter()
            .filter(|r| r.ends_with(": allowed"))
            .collect::<Vec<_>>()
    };
    assert_eq!(allowed(&sb).len(), 3, "3 of maxToolCalls=5 spent");
    child.kill();
    respond_and_resume(&sb, &transcript, &[&ask, "--answer", "go"], &[]);
    assert_eq!(resumes(&transcript), 1);
    // The fresh session continued the spend: calls 4 and 5 ran, the 6th crossed.
    assert_eq!(
        allowed(&sb),
        [
            "[progress] permission 1/3 for first: allowed",
            "[progress] permission 2/3 for first: allowed",
            "[progress] permission 3/3 for first: allowed",
            "[progress] permission 1/5 for then: allowed",
            "[progress] permission 2/5 for then: allowed",
        ]
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains("\nStatus:    stuck — compute bound exhausted: maxToolCalls=5 — the mission reached its envelope-gated action budget; this call and any after it are refused.\n"),
        "{}",
        show.stdout
    );
}

#[test]
fn an_agent_that_loads_sessions_resumes_its_own_session_after_the_host_died() {
    let (session, lines) = reopened_after_the_host_died(r#""load_session":true"#);
    // Only `session/load` is advertised: the resume loads it, and nothing closes a
    // session the agent did not say it can close.
    assert_eq!(
        lines,
        [
            format!("session/new {session}"),
            format!("session/load {session}")
        ],
        "the stub's session requests"
    );
}

#[test]
fn an_agent_that_advertises_session_resume_is_resumed_not_loaded_and_its_session_closed() {
    let (session, lines) = reopened_after_the_host_died(
        r#""load_session":true,"resume_session":true,"close_session":true"#,
    );
    // `session/resume` is preferred to `session/load` when both are advertised, and
    // the landed unit's session is closed before its process is ended.
    assert_eq!(
        lines,
        [
            format!("session/new {session}"),
            format!("session/resume {session}"),
            format!("session/close {session}")
        ],
        "the stub's session requests"
    );
}

/// Fire a stub advertising `caps` (script keys), park its question, SIGKILL the
/// host, answer from a fresh process: the agent's own session carries on, told
/// only the answer. The session id, and the session requests the stubs received.
#[track_caller]
fn reopened_after_the_host_died(caps: &str) -> (String, Vec<String>) {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&format!(
            r#"{{"name":"t",{caps},"turns":[{{"steps":[{ASK_THEN_LAND}]}}]}}"#
        )),
    )]);
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let state = sb.cwd.join("stub-state");
    let transcript = sb.cwd.join("transcript.log");
    let sessions = sb.cwd.join("sessions.log");
    let mut fire = sb.command(&[
        "mission", "fire", "stub", "rename", "--wait", "--policy", "default",
    ]);
    fire.env("STUB_TRANSCRIPT", &transcript)
        .env("STUB_STATE_DIR", &state)
        .env("STUB_SESSIONS", &sessions);
    let child = Background::spawn(fire);
    let ask = wait_for(20, "the parked question", || parked_ask(&sb));
    child.kill();
    let id = sb.newest_mission().unwrap();
    let session = show_json(&sb, &id)["sessionId"].clone();
    assert!(session.is_string(), "{session}");
    respond_and_resume(
        &sb,
        &transcript,
        &[&ask, "--answer", "yes"],
        &[
            ("STUB_STATE_DIR", state.as_path()),
            ("STUB_SESSIONS", sessions.as_path()),
        ],
    );
    // The same session, told only the answer — no brief.
    let v = show_json(&sb, &id);
    assert_eq!(v["status"], "landed");
    assert_eq!(
        v["sessionId"], session,
        "the agent's own session was reopened"
    );
    assert_eq!(
        report_summaries(&sb, &id),
        ["[result] renamed: yes"],
        "the reopened session carried on from its own place in the script"
    );
    let lines = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(resumes(&transcript), 0, "{lines}");
    assert_eq!(
        lines
            .lines()
            .filter(|l| l.contains("The operator answered the question you parked on."))
            .count(),
        1,
        "{lines}"
    );
    let requests = std::fs::read_to_string(&sessions)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    (session.as_str().unwrap().to_string(), requests)
}

#[test]
fn a_parked_question_expires_on_time_in_its_live_host_with_nobody_reading_approvals() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    // The turn parks long before the question's deadline: the resident host, not
    // the unit's waiting tool call, is what must see the deadline pass.
    sb.run(&["config", "set", "ask-park-window", "100ms"]).ok();
    sb.run(&["config", "set", "approval-ceiling", "1s"]).ok();
    let transcript = sb.cwd.join("transcript.log");
    let child = host(&sb, "default", &transcript);
    let ask = wait_for(20, "the parked question", || parked_ask(&sb));
    let id = sb.newest_mission().unwrap();
    // Waited on through `mission show`, a read that never settles an ask: what
    // settles it is the host holding the run.
    let status = wait_for(20, "the mission to come to rest", || {
        let v = show_json(&sb, &id);
        (v["status"] != "open").then(|| v["status"].as_str().unwrap().to_string())
    });
    assert_eq!(status, "landed", "the resumed run went on to land");
    let v = show_json(&sb, &id);
    assert_eq!(v["asks"][0]["id"], ask.as_str());
    assert_eq!(v["asks"][0]["state"], "expired");
    assert_eq!(
        report_summaries(&sb, &id),
        [
            "[blocker] Rename the env var too?",
            "[result] renamed: (none — the question closed without an answer)",
        ]
    );
    child.kill();
}

#[test]
fn a_gated_call_expires_on_time_in_its_live_host_with_nobody_reading_approvals() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(GATED_THEN_LAND)))]);
    gate_envelope(&sb, 1);
    let transcript = sb.cwd.join("transcript.log");
    let child = host(&sb, "gate", &transcript);
    let id = wait_for(20, "the mission", || sb.newest_mission());
    let status = wait_for(20, "the mission to come to rest", || {
        let v = show_json(&sb, &id);
        (v["status"] != "open").then(|| v["status"].as_str().unwrap().to_string())
    });
    assert_eq!(status, "stuck", "the on-timeout denial reached the call");
    let v = show_json(&sb, &id);
    assert_eq!(v["asks"].as_array().unwrap().len(), 1);
    assert_eq!(v["asks"][0]["state"], "expired");
    let ask = v["asks"][0]["id"].as_str().unwrap();
    assert_eq!(
        report_summaries(&sb, &id),
        [
            "[progress] before the call".to_string(),
            // The refusal is on the record, naming the deadline that refused it.
            format!(
                "[blocker] refused local_shell.local_shell: rm -rf build — nobody answered approval {ask} before its deadline, so its on-timeout verdict (deny) applied"
            ),
            "[progress] permission 1/1 for rm -rf build: denied".to_string(),
        ]
    );
    child.kill();
}

#[test]
fn a_slow_resumer_that_still_lives_keeps_its_claim_however_old() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"ask":{"summary":"Go on?","then":[{"report":{"kind":"progress","summary":"resumed: {{answer}}"}},"hang"]}}"#,
        )),
    )]);
    sb.run(&["config", "set", "ask-park-window", "100ms"]).ok();
    let transcript = sb.cwd.join("transcript.log");
    let child = host(&sb, "default", &transcript);
    let ask = wait_for(20, "the parked question", || parked_ask(&sb));
    child.kill();
    let id = sb.newest_mission().unwrap();
    // The answering process resumes the run, and stays in its turn.
    let mut respond = sb.command(&["approvals", "respond", &ask, "--answer", "yes"]);
    respond.env("STUB_TRANSCRIPT", &transcript);
    let resumer = Background::spawn(respond);
    wait_for(20, "the resumed turn", || {
        report_summaries(&sb, &id)
            .contains(&"[progress] resumed: yes".to_string())
            .then_some(())
    });
    // Its claim is made a day old: age alone no longer marks it abandoned.
    let store = sb.store();
    let day_ago = missionboard::clock::now_ms() - 24 * 3600 * 1000;
    let backdated = store
        .with(|c| {
            c.execute(
                "UPDATE checkpoints SET claimed_at = ?2 WHERE ask_id = ?1 AND claimed_at IS NOT NULL",
                missionboard::store::sql::params![ask, day_ago],
            )
        })
        .unwrap();
    assert_eq!(backdated, 1, "the resumer holds the claim");
    let mut list = sb.command(&["approvals", "list"]);
    list.env("STUB_TRANSCRIPT", &transcript);
    let list = sb.run_with(list).ok();
    assert!(!list.stdout.contains("Resumed"), "{list:#?}");
    assert_eq!(resumes(&transcript), 1, "not doubled");
    resumer.kill();
    sb.run(&["mission", "stop", &id]).ok();
}
