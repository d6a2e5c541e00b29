//! Issue 43: a mission lands only when its check passes. The check runs by the host,
//! in the mission's workspace, under the unit's own confinement, when the unit
//! finishes `landed`; a failure goes back to the unit as its `mission_finish` result
//! (the stub quotes it back in a report through `{{finish}}`), `compute.maxChecks`
//! bounds the tries, and `mission merge` refuses a worktree whose check did not pass.

use serde_json::{Value, json};

use crate::harness::{Run, Sandbox, git, processes_mentioning, wait_for};

/// The check every test but the timeout's runs: passes once the unit wrote `fixed`.
const CHECK: &str = "test -f fixed || { echo 'fixed is missing'; exit 1; }";

/// Declare stub `fixer` running `steps` in one turn.
fn fixer(sb: &Sandbox, steps: Vec<Value>) {
    let script = json!({"name": "fixer", "turns": [{"steps": steps}]}).to_string();
    sb.declare_stubs(&[("fixer", Some(&script))]);
}

/// Finish landed, then file what the finish returned as a finding.
fn finish_and_quote() -> [Value; 2] {
    [
        json!({"finish": "landed"}),
        json!({"report": {"kind": "finding", "summary": "finish said", "detail": "{{finish}}"}}),
    ]
}

/// Envelope `name` in the home: every call allowed, writes confined to the
/// workspace and the temp dir, with `extra` (JSON object fields) merged in.
fn envelope(sb: &Sandbox, name: &str, extra: Value) {
    let mut v = json!({
        "default_action": "allow",
        "rules": [],
        "sandbox": {"filesystem": {"write": ["{workspace}", "{tmp}"]}}
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    sb.write(
        &sb.home.join(format!("hitl-policy-{name}.json")),
        &v.to_string(),
    );
}

fn fire(sb: &Sandbox, policy: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "mission",
        "fire",
        "fixer",
        "make the check pass",
        "--wait",
        "--policy",
        policy,
        "--timeout",
        "60s",
    ];
    args.extend_from_slice(extra);
    sb.run(&args)
}

/// `(kind, summary, detail)` of each of mission `id`'s reports, oldest first.
fn reports(sb: &Sandbox, id: &str) -> Vec<(String, String, String)> {
    let out = sb.run(&["mission", "reports", id, "--json"]).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (s("kind"), s("summary"), s("detail"))
        })
        .collect()
}

fn show_json(sb: &Sandbox, id: &str) -> Value {
    serde_json::from_str(&sb.run(&["mission", "show", id, "--json"]).ok().stdout).unwrap()
}

/// The refusal a failed try with tries left returns to the unit.
fn retry_text(try_n: u64, of: u64, output: &str) -> String {
    let left = of - try_n;
    let remain = if left == 1 {
        "1 try remains".to_string()
    } else {
        format!("{left} tries remain")
    };
    format!(
        "missiontools: finish mission: not landed — the check failed (try {try_n} of {of}): `{CHECK}` — exit 1. Output (tail):\n{output}\n\n{remain}: fix the work, then call mission_finish with status landed again (the check runs again)."
    )
}

#[test]
fn a_passing_check_lands_the_mission_with_the_check_on_its_record() {
    let sb = Sandbox::new();
    fixer(
        &sb,
        vec![
            json!({"write": {"path": "fixed", "text": "ok"}}),
            json!({"finish": "landed"}),
        ],
    );
    let fired = fire(&sb, "default", &["--check", CHECK]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    assert!(
        fired.stdout.contains(&format!(
            "Check: `{CHECK}` must pass in its workspace before it lands (run under the unit's own sandbox; up to 3 tries, 10m0s each).\n"
        )),
        "{fired:#?}"
    );
    assert!(
        fired.stdout.contains(&format!(
            "  [check] check passed (try 1 of 3): {CHECK} — exit 0\n"
        )),
        "{fired:#?}"
    );
    let reports = reports(&sb, &id);
    let (kind, _, detail) = reports.last().unwrap();
    assert_eq!(kind, "check");
    assert!(
        detail.starts_with(&format!("command: {CHECK}\noutcome: exit 0\nduration: ")),
        "{detail}"
    );
    assert!(detail.ends_with("\n\noutput (tail):\n(none)"), "{detail}");
    let shown = show_json(&sb, &id);
    assert_eq!(shown["status"], "landed");
    assert_eq!(
        (
            &shown["check"]["command"],
            &shown["check"]["state"],
            &shown["check"]["tries"],
            &shown["check"]["maxChecks"],
            &shown["check"]["lastExit"],
        ),
        (
            &json!(CHECK),
            &json!("passed"),
            &json!(1),
            &json!(3),
            &json!(0)
        )
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains(&format!(
            "Check:     passed (try 1 of 3) — `{CHECK}` (timeout 10m0s)\n"
        )),
        "{show:#?}"
    );
    let list = sb.run(&["mission", "list"]).ok();
    assert!(list.lines()[1].contains(" landed · check ✓ "), "{list:#?}");
}

#[test]
fn a_failing_check_goes_back_to_the_agent_which_fixes_the_work_and_lands() {
    let sb = Sandbox::new();
    let [finish, quote] = finish_and_quote();
    fixer(
        &sb,
        vec![
            finish,
            quote,
            json!({"write": {"path": "fixed", "text": "ok"}}),
            json!({"finish": "landed"}),
        ],
    );
    let fired = fire(&sb, "default", &["--check", CHECK]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let reports = reports(&sb, &id);
    let kinds: Vec<(&str, &str)> = reports
        .iter()
        .map(|(k, s, _)| (k.as_str(), s.as_str()))
        .collect();
    let failed = format!("check failed (try 1 of 3): {CHECK} — exit 1");
    let passed = format!("check passed (try 2 of 3): {CHECK} — exit 0");
    assert_eq!(
        kinds,
        [
            ("check", failed.as_str()),
            ("finding", "finish said"),
            ("finding", "write fixed: ok"),
            ("check", passed.as_str()),
        ]
    );
    // What the unit got back from its refused finish, word for word.
    assert_eq!(reports[1].2, retry_text(1, 3, "fixed is missing"));
    // The failed try is on the record with its output.
    assert!(
        reports[0]
            .2
            .ends_with("\n\noutput (tail):\nfixed is missing"),
        "{:?}",
        reports[0]
    );
    assert_eq!(show_json(&sb, &id)["check"]["state"], "passed");
}

#[test]
fn a_check_never_fixed_rests_the_mission_stuck_after_max_checks_on_the_failure() {
    let sb = Sandbox::new();
    envelope(&sb, "twice", json!({"compute": {"maxChecks": 2}}));
    // The last finish rests the mission: the unit is reaped on it, so nothing it
    // would do after can be counted on.
    let [finish, quote] = finish_and_quote();
    fixer(&sb, vec![finish.clone(), quote, finish]);
    let fired = fire(&sb, "twice", &["--check", CHECK]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let reason = format!("check failed 2 of 2 tries: `{CHECK}` — exit 1");
    assert!(
        fired
            .stdout
            .contains(&format!("Mission {id} finished: stuck — {reason}\n")),
        "{fired:#?}"
    );
    let reports = reports(&sb, &id);
    let quoted: Vec<&str> = reports
        .iter()
        .filter(|(_, s, _)| s == "finish said")
        .map(|(_, _, d)| d.as_str())
        .collect();
    assert_eq!(quoted, [retry_text(1, 2, "fixed is missing")]);
    let blocker = reports
        .iter()
        .find(|(k, _, _)| k == "blocker")
        .expect("a blocker report");
    assert_eq!(
        (blocker.1.as_str(), blocker.2.as_str()),
        (reason.as_str(), "fixed is missing")
    );
    let checks = reports.iter().filter(|(k, _, _)| k == "check").count();
    assert_eq!(checks, 2, "a report per try: {reports:#?}");
    let shown = show_json(&sb, &id);
    assert_eq!(
        (
            &shown["status"],
            &shown["check"]["state"],
            &shown["check"]["tries"]
        ),
        (&json!("stuck"), &json!("failed"), &json!(2))
    );
    assert_eq!(shown["check"]["lastOutput"], "fixed is missing\n");
    let list = sb.run(&["mission", "list"]).ok();
    assert!(
        list.lines()[1].contains(" stuck · check ✗2/2 "),
        "{list:#?}"
    );
}

#[test]
fn a_check_that_runs_past_its_timeout_is_a_failure_that_says_so() {
    let sb = Sandbox::new();
    envelope(
        &sb,
        "hasty",
        json!({
            "compute": {"maxChecks": 1},
            "check": {"command": "echo started; sleep 30", "timeout": "1s"}
        }),
    );
    fixer(&sb, vec![json!({"finish": "landed"})]);
    let fired = fire(&sb, "hasty", &[]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let outcome = "timed out after 1s (its processes were ended)";
    assert!(
        fired.stdout.contains(&format!(
            "finished: stuck — check failed 1 of 1 tries: `echo started; sleep 30` — {outcome}\n"
        )),
        "{fired:#?}"
    );
    let shown = show_json(&sb, &id);
    assert_eq!(shown["check"]["lastOutcome"], outcome);
    assert_eq!(shown["check"]["lastExit"], Value::Null);
    assert_eq!(shown["check"]["lastOutput"], "started\n");
}

#[test]
fn a_mission_stopped_while_its_check_runs_ends_the_check_and_records_no_try() {
    let sb = Sandbox::new();
    fixer(&sb, vec![json!({"finish": "landed"})]);
    // An argument only this test's check carries — the sleep's own, so the sleep
    // is found whether or not the shell execs it — to find its processes by.
    let marker = format!("120.{}", std::process::id());
    let check = format!("sleep {marker}");
    let fire = sb.fire_in_background("fixer", "wait on me", &["--check", &check]);
    let id = wait_for(30, "the mission's check to run", || {
        let id = sb.newest_mission()?;
        (show_json(&sb, &id)["check"]["state"] == "running").then_some(id)
    });
    // The sleep itself (the fire's and the supervisor's arguments name it too).
    let sleeps = || {
        processes_mentioning(&marker)
            .into_iter()
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|c| c.starts_with(b"sleep\0"))
            })
            .count()
    };
    wait_for(30, "the check's sleep", || (sleeps() == 1).then_some(()));
    sb.run(&["mission", "stop", &id]).ok();
    let shown = show_json(&sb, &id);
    assert_eq!(
        (
            &shown["status"],
            &shown["check"]["state"],
            &shown["check"]["tries"]
        ),
        (&json!("abandoned"), &json!("none"), &json!(0)),
        "a try cut short is not counted, and the check does not run on"
    );
    wait_for(30, "the check's sleep to end", || {
        (sleeps() == 0).then_some(())
    });
    assert_eq!(fire.join().code, 1);
}

#[test]
fn a_check_cannot_write_outside_the_workspace() {
    let sb = Sandbox::new();
    sb.require_landlock();
    envelope(&sb, "once", json!({"compute": {"maxChecks": 1}}));
    fixer(&sb, vec![json!({"finish": "landed"})]);
    // The home the unit and its check run with is the sandbox's own directory; a
    // directory there beside the workspace is outside it.
    let elsewhere = sb.home.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let outside = elsewhere.join("outside");
    let check = "touch ~/elsewhere/outside && echo wrote it";
    let fired = fire(&sb, "once", &["--check", check]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    assert!(!outside.exists(), "the kernel refused the check's write");
    let id = sb.newest_mission().unwrap();
    let shown = show_json(&sb, &id);
    assert_eq!(shown["check"]["lastOutcome"], "exit 1");
    let output = shown["check"]["lastOutput"].as_str().unwrap();
    assert!(
        output.contains(&format!(
            "touch: cannot touch '{}': Permission denied",
            outside.display()
        )),
        "{output}"
    );
    // Under an envelope that lets the unit write there, its check may too.
    let allowed = fire(&sb, "dev", &["--check", check]);
    assert_eq!(allowed.code, 0, "{allowed:#?}");
    assert!(outside.exists());
}

#[test]
fn no_check_is_refused_when_the_envelope_requires_its_check_and_allowed_when_optional() {
    let sb = Sandbox::new();
    envelope(&sb, "gated", json!({"check": {"command": "cargo test -q"}}));
    envelope(
        &sb,
        "loose",
        json!({"check": {"command": "cargo test -q", "optional": true}}),
    );
    fixer(&sb, vec![json!({"finish": "landed"})]);
    let refused = fire(&sb, "gated", &["--no-check"]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains(
            "--no-check refused: envelope \"gated\" names a check (\"cargo test -q\") that every mission under it must pass; it may be skipped only where the envelope's check says \"optional\": true."
        ),
        "{refused:#?}"
    );
    assert_eq!(sb.newest_mission(), None, "a refused fire records nothing");
    let skipped = fire(&sb, "loose", &["--no-check"]);
    assert_eq!(skipped.code, 0, "{skipped:#?}");
    let id = sb.newest_mission().unwrap();
    assert_eq!(show_json(&sb, &id)["check"]["state"], "none");
    // An envelope's check that names an unknown field refuses, like every field.
    envelope(
        &sb,
        "typo",
        json!({"check": {"command": "true", "timeut": "1m"}}),
    );
    let typo = fire(&sb, "typo", &[]);
    assert_eq!(typo.code, 1, "{typo:#?}");
    assert!(
        typo.stderr.contains(
            "check: unknown field \"timeut\" at check.timeut — known fields: command, timeout, optional"
        ),
        "{typo:#?}"
    );
}

fn git_cmd(sb: &Sandbox, args: &[&str]) -> Run {
    let mut c = sb.command(args);
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("USER", "operator-ann");
    sb.run_with(c)
}

#[test]
fn merge_refuses_a_worktree_whose_check_did_not_pass_and_force_merges_it_on_the_record() {
    let sb = Sandbox::new();
    envelope(&sb, "once", json!({"compute": {"maxChecks": 1}}));
    fixer(
        &sb,
        vec![
            json!({"write": {"path": "notes.txt", "text": "two\n"}}),
            json!({"finish": "landed"}),
        ],
    );
    git(&sb.cwd, &["init", "-q", "-b", "main"]);
    std::fs::write(sb.cwd.join("notes.txt"), "one\n").unwrap();
    git(&sb.cwd, &["add", "-A"]);
    git(&sb.cwd, &["commit", "-q", "-m", "init"]);
    let fired = git_cmd(
        &sb,
        &[
            "mission",
            "fire",
            "fixer",
            "edit the notes",
            "--wait",
            "--policy",
            "once",
            "--timeout",
            "60s",
            "--worktree",
            "--check",
            CHECK,
        ],
    );
    assert_eq!(fired.code, 1, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let id8 = &id[..8];
    let refused = git_cmd(&sb, &["mission", "merge", id8]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains(&format!(
            "merge refused: mission {id}'s check did not pass (failed 1 of 1: `{CHECK}`, last try: exit 1) — nothing was merged. Fix the work and fire it again, or merge it anyway with `missionboard mission merge {id8} --force` (recorded on the mission)"
        )),
        "{refused:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("notes.txt")).unwrap(),
        "one\n"
    );
    let forced = git_cmd(&sb, &["mission", "merge", id8, "--force"]).ok();
    assert_eq!(
        forced.lines()[0],
        format!(
            "Merged past the check (failed 1 of 1: `{CHECK}`), as --force asked; recorded on mission {id}."
        )
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("notes.txt")).unwrap(),
        "two\n"
    );
    let (kind, summary, _) = reports(&sb, &id).pop().unwrap();
    assert_eq!(kind, "check");
    assert!(
        summary.starts_with("merged without a passing check: forced by operator-ann on ")
            && summary.ends_with(" (check failed 1 of 1)"),
        "{summary}"
    );
}

#[test]
fn the_check_fix_scenario_fails_its_first_finish_then_lands_with_both_tries_on_the_record() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("fixer", None)]);
    let fired = sb.run(&[
        "mission",
        "fire",
        "fixer",
        "run the check-fix scenario",
        "--wait",
        "--policy",
        "default",
        "--timeout",
        "60s",
        "--check",
        CHECK,
    ]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let reports = reports(&sb, &id);
    let checks: Vec<&str> = reports
        .iter()
        .filter(|(k, _, _)| k == "check")
        .map(|(_, s, _)| s.as_str())
        .collect();
    assert_eq!(
        checks,
        [
            format!("check failed (try 1 of 3): {CHECK} — exit 1").as_str(),
            format!("check passed (try 2 of 3): {CHECK} — exit 0").as_str(),
        ]
    );
    let refused = reports
        .iter()
        .find(|(_, s, _)| s == "the check refused the finish")
        .expect("the stub quoted its refused finish");
    assert_eq!(refused.2, retry_text(1, 3, "fixed is missing"));
    let shown = show_json(&sb, &id);
    assert_eq!(
        (
            &shown["status"],
            &shown["check"]["state"],
            &shown["check"]["tries"]
        ),
        (&json!("landed"), &json!("passed"), &json!(2))
    );
}

/// A stub that can load its session: it lands once the check passes and, sent back,
/// writes the feedback to `revised.txt` and lands again.
fn reviser(sb: &Sandbox) {
    let script = json!({
        "name": "reviser",
        "load_session": true,
        "turns": [{"steps": [
            {"write": {"path": "fixed", "text": "ok"}},
            {"report": {"kind": "result", "summary": "first run done"}},
            {"finish": "landed"}
        ]}],
        "on_revise": {"steps": [
            {"write": {"path": "revised.txt", "text": "{{feedback}}"}},
            {"report": {"kind": "result", "summary": "acted on: {{feedback}}"}},
            {"finish": "landed"}
        ]}
    })
    .to_string();
    sb.declare_stubs(&[("fixer", Some(&script))]);
}

fn with_state(sb: &Sandbox, args: &[&str]) -> Run {
    let mut c = sb.command(args);
    c.env("STUB_STATE_DIR", sb.cwd.join("stub-state"));
    sb.run_with(c)
}

#[test]
fn a_revised_landed_mission_continues_in_its_own_session_and_lands_again_through_the_check() {
    let sb = Sandbox::new();
    reviser(&sb);
    let fired = with_state(
        &sb,
        &[
            "mission",
            "fire",
            "fixer",
            "do it",
            "--wait",
            "--policy",
            "default",
            "--timeout",
            "60s",
            "--check",
            CHECK,
        ],
    );
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let session = show_json(&sb, &id)["sessionId"].clone();
    assert!(session.is_string(), "{session}");
    let revised = with_state(
        &sb,
        &[
            "mission",
            "revise",
            &id[..8],
            "name the module in the summary",
            "--wait",
            "--timeout",
            "60s",
        ],
    );
    assert_eq!(revised.code, 0, "{revised:#?}");
    assert_eq!(
        revised.lines()[0],
        format!(
            "Mission {id} sent back to agent \"fixer\" (run 2) in its own session: the feedback is its next prompt."
        )
    );
    assert!(
        revised
            .stdout
            .contains(&format!("Mission {id} finished: landed")),
        "{revised:#?}"
    );
    // The agent acted on the feedback, in the same workspace.
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("revised.txt")).unwrap(),
        "name the module in the summary"
    );
    let shown = show_json(&sb, &id);
    assert_eq!(shown["status"], "landed");
    assert_eq!(shown["sessionId"], session, "the agent's own session");
    // Counted per run (the default): the revised run's check is its try 1.
    assert_eq!(
        (&shown["check"]["state"], &shown["check"]["tries"]),
        (&json!("passed"), &json!(1))
    );
    assert_eq!(shown["runs"][0]["run"], 2);
    assert_eq!(shown["runs"][0]["fromStatus"], "landed");
    assert_eq!(
        shown["runs"][0]["feedback"],
        "name the module in the summary"
    );
    // The history is kept: both runs' reports, the revise between them.
    let summaries: Vec<(String, String)> = reports(&sb, &id)
        .into_iter()
        .map(|(k, s, _)| (k, s))
        .collect();
    let pass = format!("check passed (try 1 of 3): {CHECK} — exit 0");
    assert_eq!(
        summaries,
        [
            ("finding".to_string(), "write fixed: ok".to_string()),
            ("result".into(), "first run done".into()),
            ("check".into(), pass.clone()),
            (
                "revise".into(),
                "revised by cli after it rested landed (run 2): name the module in the summary"
                    .into()
            ),
            ("finding".into(), "write revised.txt: ok".into()),
            (
                "result".into(),
                "acted on: name the module in the summary".into()
            ),
            ("check".into(), pass),
        ]
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout
            .contains("Runs:      2 — revised by cli after it rested landed: \"name the module in the summary\"\n"),
        "{show:#?}"
    );
}

#[test]
fn a_revise_counted_in_total_keeps_the_check_tries_of_earlier_runs() {
    let sb = Sandbox::new();
    envelope(
        &sb,
        "total",
        json!({"compute": {"maxChecks": 1, "countBounds": "total"}}),
    );
    reviser(&sb);
    let fired = with_state(
        &sb,
        &[
            "mission",
            "fire",
            "fixer",
            "do it",
            "--wait",
            "--policy",
            "total",
            "--timeout",
            "60s",
            "--check",
            CHECK,
        ],
    );
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let revised = with_state(
        &sb,
        &[
            "mission",
            "revise",
            &id,
            "one more thing",
            "--wait",
            "--timeout",
            "60s",
        ],
    );
    assert_eq!(revised.code, 1, "{revised:#?}");
    let reason = format!("no check tries remain: 1 of 1 spent on `{CHECK}` (last try: exit 0)");
    assert!(
        revised
            .stdout
            .contains(&format!("Mission {id} finished: stuck — {reason}\n")),
        "{revised:#?}"
    );
}

#[test]
fn a_revise_of_a_running_mission_is_refused_naming_why() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("fixer", None)]);
    let fire = sb.fire_in_background("fixer", "hang", &[]);
    let id = wait_for(30, "the mission to run", || sb.newest_mission());
    let refused = sb.run(&["mission", "revise", &id, "do better", "--wait"]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains(&format!(
            "revise refused: mission {id} is open — its unit is still working on it (or waiting on an answer). Send feedback once it rests (landed, stuck or derailed), or stop it with `missionboard mission stop {id}` and fire it again"
        )),
        "{refused:#?}"
    );
    assert_eq!(show_json(&sb, &id)["status"], "open");
    sb.run(&["mission", "stop", &id]).ok();
    assert_eq!(fire.join().code, 1);
    // Abandoned: not revised either.
    let abandoned = sb.run(&["mission", "revise", &id, "do better", "--wait"]);
    assert_eq!(abandoned.code, 1, "{abandoned:#?}");
    assert!(
        abandoned.stderr.contains(&format!(
            "revise refused: mission {id} was abandoned (stopped by operator) — only a landed, stuck or derailed mission is sent back."
        )),
        "{abandoned:#?}"
    );
}

/// A mission whose check failed its last try under `onExhausted: pause_ask`,
/// paused on the operator's ask.
struct Paused {
    fire: crate::harness::Background,
    id: String,
    ask: String,
}

/// Fire `fixer` under an envelope of one check try and `onExhausted: pause_ask`:
/// its first turn finishes landed twice (the first try fails and pauses on an ask,
/// the second is refused while the operator decides), quoting each refusal; its
/// turn after the operator's verdict runs `then`. Returns once both refusals are
/// on the record, with what the ask and the refusals said checked.
fn paused_on_check(sb: &Sandbox, then: Vec<Value>) -> Paused {
    envelope(
        sb,
        "asking",
        json!({"compute": {"maxChecks": 1, "onExhausted": "pause_ask"}}),
    );
    let script = json!({"name": "fixer", "turns": [
        {"steps": [
            {"finish": "landed"},
            {"report": {"kind": "finding", "summary": "finish said", "detail": "{{finish}}"}},
            {"finish": "landed"},
            {"report": {"kind": "finding", "summary": "finish said again", "detail": "{{finish}}"}}
        ]},
        {"steps": then}
    ]})
    .to_string();
    sb.declare_stubs(&[("fixer", Some(&script))]);
    let fire = crate::harness::Background::spawn(sb.command(&[
        "mission",
        "fire",
        "fixer",
        "make it pass",
        "--wait",
        "--policy",
        "asking",
        "--timeout",
        "60s",
        "--check",
        CHECK,
    ]));
    let (ask, row) = wait_for(30, "the check's ask", || {
        let out = sb.run(&["approvals", "list", "--json"]).ok();
        let v: Value = serde_json::from_str(&out.stdout).unwrap();
        v.as_array()
            .or_else(|| v["asks"].as_array())?
            .first()
            .map(|a| (a["id"].as_str().unwrap().to_string(), a.clone()))
    });
    let id = sb.newest_mission().unwrap();
    assert_eq!(
        row["argsSummary"].as_str().unwrap_or_default(),
        format!(
            "mission {id}: check failed 1 of 1 tries: `{CHECK}` — exit 1 — grant more tries or let it stop?"
        )
    );
    wait_for(30, "the unit to quote both refusals", || {
        (reports(sb, &id)
            .iter()
            .filter(|(_, s, _)| s.starts_with("finish said"))
            .count()
            == 2)
            .then_some(())
    });
    let quoted: Vec<String> = reports(sb, &id)
        .into_iter()
        .filter(|(_, s, _)| s.starts_with("finish said"))
        .map(|(_, _, d)| d)
        .collect();
    assert!(
        quoted[0].contains(&format!("No tries remain: the operator is asked whether to grant more (ask_id={ask}). End your turn now.")),
        "{quoted:#?}"
    );
    assert_eq!(
        quoted[1],
        format!(
            "missiontools: finish mission: not landed — no check tries remain while the operator decides whether to grant more (ask_id={ask}). End your turn now: your next prompt says what they decided."
        )
    );
    assert_eq!(show_json(sb, &id)["status"], "open", "paused, not stuck");
    Paused { fire, id, ask }
}

/// The turn after the verdict of an agent that carries on without finishing: what
/// becomes of the mission is the runtime's doing, not the agent's.
fn carries_on() -> Vec<Value> {
    vec![json!({"report": {"kind": "progress", "summary": "carried on after the verdict"}})]
}

#[test]
fn a_failing_check_under_pause_ask_parks_on_an_ask_and_lands_once_more_tries_are_granted() {
    let sb = Sandbox::new();
    let paused = paused_on_check(
        &sb,
        vec![
            json!({"write": {"path": "fixed", "text": "ok"}}),
            json!({"finish": "landed"}),
        ],
    );
    sb.run(&["approvals", "respond", &paused.ask, "--approve"])
        .ok();
    assert_eq!(paused.fire.join().code, 0);
    let shown = show_json(&sb, &paused.id);
    assert_eq!(
        (
            &shown["status"],
            &shown["check"]["state"],
            &shown["check"]["tries"],
            &shown["check"]["maxChecks"]
        ),
        (&json!("landed"), &json!("passed"), &json!(2), &json!(2))
    );
    let reports = reports(&sb, &paused.id);
    assert!(
        !reports.iter().any(|(k, _, _)| k == "blocker"),
        "granted tries are no unanswered question: {reports:#?}"
    );
}

#[test]
fn a_paused_check_denied_by_the_operator_rests_stuck_on_its_failure() {
    let sb = Sandbox::new();
    let Paused { fire, id, ask } = paused_on_check(&sb, carries_on());
    sb.run(&["approvals", "respond", &ask, "--deny"]).ok();
    let done = fire.join();
    assert_eq!(done.code, 1, "{done:#?}");
    let reason =
        format!("check failed 1 of 1 tries: `{CHECK}` — exit 1; the operator granted no more");
    assert!(
        done.stdout
            .contains(&format!("Mission {id} finished: stuck — {reason}\n")),
        "{done:#?}"
    );
    assert_rests_stuck_on_the_check(&sb, &id, &reason);
}

#[test]
fn a_paused_check_whose_ask_expires_takes_its_on_timeout_verdict_and_rests_stuck() {
    let sb = Sandbox::new();
    // Every ask from now on closes after a second unanswered.
    sb.run(&["config", "set", "approval-ceiling", "1s"]).ok();
    let Paused { fire, id, ask } = paused_on_check(&sb, carries_on());
    // Nobody answers: the host watching its parked run applies the deadline.
    let done = fire.join();
    assert_eq!(done.code, 1, "{done:#?}");
    let reason = format!(
        "check failed 1 of 1 tries: `{CHECK}` — exit 1; its ask expired before anyone granted more"
    );
    assert!(
        done.stdout
            .contains(&format!("Mission {id} finished: stuck — {reason}\n")),
        "{done:#?}"
    );
    let history = sb.run(&["approvals", "history", "--json"]).ok();
    let v: Value = serde_json::from_str(&history.stdout).unwrap();
    let rows = v
        .as_array()
        .or_else(|| v["asks"].as_array())
        .unwrap()
        .clone();
    let row = rows.iter().find(|a| a["id"] == ask.as_str()).unwrap();
    assert_eq!(row["state"], "expired", "{row:#}");
    assert_rests_stuck_on_the_check(&sb, &id, &reason);
}

/// Mission `id` rests stuck with `reason`, its check failed with no try added,
/// the last failure its blocker, and its unit never resumed to carry on.
fn assert_rests_stuck_on_the_check(sb: &Sandbox, id: &str, reason: &str) {
    let shown = show_json(sb, id);
    assert_eq!(
        (
            &shown["status"],
            &shown["check"]["state"],
            &shown["check"]["tries"],
            &shown["check"]["maxChecks"]
        ),
        (&json!("stuck"), &json!("failed"), &json!(1), &json!(1))
    );
    let reports = reports(sb, id);
    let blockers: Vec<(&str, &str)> = reports
        .iter()
        .filter(|(k, _, _)| k == "blocker")
        .map(|(_, s, d)| (s.as_str(), d.as_str()))
        .collect();
    assert_eq!(blockers, [(reason, "fixed is missing")], "{reports:#?}");
    assert!(
        !reports
            .iter()
            .any(|(_, s, _)| s == "carried on after the verdict"),
        "a mission at rest is not resumed: {reports:#?}"
    );
}
