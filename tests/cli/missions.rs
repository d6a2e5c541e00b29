//! Issue B: missions over real ACP units (the stub agent as a child process, its
//! mission tools over the real MCP bridge), read back through our own commands.

use crate::harness::{Sandbox, script, wait_for};

const LAND: &str =
    r#"{"report":{"kind":"result","summary":"work done"}},{"finish":{"status":"landed"}}"#;

#[test]
fn a_fire_without_wait_is_refused_and_says_why_the_flag_exists() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let run = sb.run(&["mission", "fire", "stub", "land", "--policy", "default"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.starts_with("Error: mission fire requires --wait: the dispatched unit is a child subprocess of this command and dies when it exits"),
        "{run:#?}"
    );
    assert!(
        sb.run(&["mission", "list"])
            .ok()
            .stdout
            .starts_with("No missions recorded.")
    );
}

#[test]
fn a_fire_with_no_envelope_is_refused_rather_than_guessed_at() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let run = sb.run(&["mission", "fire", "stub", "land", "--wait"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "Error: no mission envelope: pass --policy <policy>, or set a default with `missionboard config set default-mission-policy <policy>` — a mission must name the HITL policy that bounds it\n"
    );
    assert!(sb.newest_mission().is_none());
}

#[test]
fn the_envelope_named_at_fire_time_is_written_into_the_record() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    sb.run(&["config", "set", "default-mission-policy", "strict"])
        .ok();
    sb.run(&["mission", "fire", "stub", "audit the loader", "--wait"])
        .ok();
    sb.run(&["config", "set", "default-mission-policy", "dev"])
        .ok();
    let id = sb.newest_mission().unwrap();
    let show = sb.run(&["mission", "show", &id]).ok();
    let lines = show.lines();
    assert_eq!(lines[0], format!("Mission:   {id}"));
    assert_eq!(lines[1], "Intent:    audit the loader");
    assert_eq!(lines[2], "Agent:     stub");
    assert_eq!(lines[3], "Envelope:  strict");
    assert_eq!(lines[4], "Status:    landed");
}

#[test]
fn an_undeclared_agent_is_refused_before_a_mission_record_exists() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let run = sb.fire("notanagent", "do things", &[]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "Error: unknown mission agent \"notanagent\": not in agents.toml nor the catalogue — declared agents: stub (see 'missionboard agent list')\n",
        "{run:#?}"
    );
    assert!(sb.newest_mission().is_none());
}

#[test]
fn an_unknown_envelope_is_refused_naming_the_flag_or_key_it_was_typed_in() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let available = "Available: hitl-policy-acp.json, hitl-policy-acpx.json, hitl-policy-default.json, hitl-policy-dev.json, hitl-policy-oracle.json, hitl-policy-strict.json";
    for extra in [&[][..], &["--queue"]] {
        let mut args = vec![
            "mission", "fire", "stub", "go", "--wait", "--policy", "nosuch",
        ];
        args.extend_from_slice(extra);
        let run = sb.run(&args);
        assert_eq!(run.code, 1, "{run:#?}");
        assert_eq!(
            run.stderr,
            format!(
                "Error: unknown mission envelope \"nosuch\" (--policy): no such policy file on the search path. {available}\n"
            ),
            "{extra:?}"
        );
    }
    sb.run(&["config", "set", "default-mission-policy", "gone"])
        .ok();
    let run = sb.run(&["mission", "fire", "stub", "go", "--wait"]);
    assert_eq!(
        run.stderr,
        format!(
            "Error: unknown mission envelope \"gone\" (default-mission-policy): no such policy file on the search path. {available}\n"
        ),
        "{run:#?}"
    );
    // One that is there but does not load says so, and how to find out why.
    sb.write(&sb.home.join("hitl-policy-broken.json"), "{");
    let run = sb.run(&[
        "mission", "fire", "stub", "go", "--wait", "--policy", "broken",
    ]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr
            .starts_with("Error: mission envelope \"broken\" (--policy) does not load: ")
            && run.stderr.ends_with(
                " — fix the file, or name another (`missionboard vet --all` checks every envelope)\n"
            )
            && !run.stderr.contains("hitlPolicyName"),
        "{run:#?}"
    );
    assert!(sb.newest_mission().is_none());
}

#[test]
fn a_landed_mission_exits_zero_and_prints_its_reports() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let run = sb.fire("stub", "land the release notes", &[]).ok();
    let id = sb.newest_mission().unwrap();
    let lines = run.lines();
    assert_eq!(
        lines[0],
        "Mission fired at agent \"stub\" under envelope \"default\"."
    );
    assert_eq!(lines[1], "Intent: land the release notes");
    assert!(
        lines[2].starts_with(&format!("Mission {id} (instance ")),
        "{}",
        run.stdout
    );
    assert_eq!(
        lines[3],
        "Compute bounds: maxToolCalls=300 (enforced) · maxTokens=2,000,000 (best-effort); a crossed bound finishes the mission stuck."
    );
    assert!(
        lines[4].starts_with(
            "Sandbox: filesystem.write enforced (kernel) [{workspace}, {tmp}, ~/.cache]; filesystem.read not limited; network.connect not limited (Landlock ABI "
        ),
        "{}",
        run.stdout
    );
    assert_eq!(
        lines[5],
        "Waiting for a terminal status (timeout 30m0s; the unit is a child of this process and is torn down when it exits)…"
    );
    assert!(
        run.stdout
            .contains(&format!("\nMission {id} finished: landed\nReports:\n")),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  [result] "), "{}", run.stdout);
    assert_eq!(
        lines.last(),
        Some(&format!("Full detail: missionboard mission reports {id}").as_str())
    );
}

#[test]
fn a_derailed_mission_exits_nonzero_naming_the_status_and_the_reason() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"finish":{"status":"derailed","reason":"the schema is gone"}}"#,
        )),
    )]);
    let run = sb.fire("stub", "migrate", &[]);
    assert_eq!(run.code, 1);
    let id = sb.newest_mission().unwrap();
    assert!(
        run.stdout.contains(&format!(
            "Mission {id} finished: derailed — the schema is gone\n"
        )),
        "{run:#?}"
    );
}

#[test]
fn a_wait_that_runs_out_exits_nonzero_and_leaves_the_record_open() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(r#""hang""#)))]);
    let run = sb.fire("stub", "wait forever", &["--timeout", "2s"]);
    assert_eq!(run.code, 1);
    let id = sb.newest_mission().unwrap();
    assert!(
        run.stdout.contains(&format!(
            "mission {id} did not finish within 2s: it is torn down with this process (the unit is a child subprocess). Its record and any reports so far survive — see 'missionboard mission show {id}'."
        )),
        "{run:#?}"
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains("\nStatus:    open\n"),
        "{}",
        show.stdout
    );
}

#[test]
fn a_mute_unit_gets_one_nudge_and_then_the_runtime_files_the_blocker_itself() {
    let sb = Sandbox::new();
    let transcript = sb.cwd.join("transcript.log");
    sb.declare_stubs(&[(
        "stub",
        Some(r#"{"name":"mute","turns":[{"steps":["mute"]},{"steps":["mute"]}]}"#),
    )]);
    let mut cmd = sb.command(&[
        "mission",
        "fire",
        "stub",
        "say nothing",
        "--wait",
        "--policy",
        "default",
        "--timeout",
        "60s",
    ]);
    cmd.env("STUB_TRANSCRIPT", &transcript);
    let run = sb.run_with(cmd);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    // Nothing will move it now, so the wait ends here rather than at its timeout.
    assert!(
        run.stdout.contains(&format!(
            "\nMission {id} is still open with no verdict and nothing pending: unit ended two turns without reporting — last said: "
        )),
        "{run:#?}"
    );

    let prompts = std::fs::read_to_string(&transcript).unwrap();
    let prompts: Vec<&str> = prompts.lines().collect();
    assert_eq!(
        prompts.len(),
        2,
        "exactly the intent turn and one nudge: {prompts:?}"
    );
    assert!(
        prompts[1].contains("Your last turn ended without reaching outside"),
        "{prompts:?}"
    );

    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains("\nStatus:    open\n"),
        "{}",
        show.stdout
    );
    let reports = sb.run(&["mission", "reports", &id, "--json"]).ok();
    let reports: serde_json::Value = serde_json::from_str(&reports.stdout).unwrap();
    let reports = reports.as_array().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0]["kind"], "blocker");
    let detail = reports[0]["detail"].as_str().unwrap();
    assert!(
        detail.ends_with("The unit produced no mission report across two turns (its first turn and one runtime nudge). Attach to session stub-session-1 to read its transcript and continue it."),
        "{detail}"
    );
    assert!(
        reports[0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("unit ended two turns without reporting — last said: ")
    );
}

#[test]
fn a_turn_that_errors_skips_the_nudge_and_derails_the_mission() {
    let sb = Sandbox::new();
    let transcript = sb.cwd.join("transcript.log");
    sb.declare_stubs(&[(
        "stub",
        Some(&script(r#"{"error":"context length exceeded"}"#)),
    )]);
    let mut cmd = sb.command(&[
        "mission", "fire", "stub", "overflow", "--wait", "--policy", "default",
    ]);
    cmd.env("STUB_TRANSCRIPT", &transcript);
    let run = sb.run_with(cmd);
    assert_eq!(run.code, 1);
    let id = sb.newest_mission().unwrap();
    assert!(
        run.stdout.contains(&format!(
            "Mission {id} finished: derailed — unit turn failed: "
        )),
        "{run:#?}"
    );
    assert!(run.stdout.contains("context length exceeded"), "{run:#?}");
    assert_eq!(
        std::fs::read_to_string(&transcript)
            .unwrap()
            .lines()
            .count(),
        1,
        "no nudge"
    );
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert_eq!(
        reports.stdout.matches("[blocker]").count(),
        1,
        "{}",
        reports.stdout
    );
    assert!(
        reports.stdout.contains("so it no longer holds fleet width"),
        "{}",
        reports.stdout
    );
}

#[test]
fn a_second_terminal_verdict_never_replaces_the_first() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(r#"{"finish":{"status":"landed","reason":"first"}},{"finish":{"status":"derailed","reason":"second"}}"#)),
    )]);
    sb.fire("stub", "decide twice", &[]).ok();
    let id = sb.newest_mission().unwrap();
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains("\nStatus:    landed — first\n"),
        "{}",
        show.stdout
    );
}

#[test]
fn stopping_twice_is_a_no_op_and_stopping_a_finished_mission_is_a_conflict() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[
        ("stub", Some(&script(LAND))),
        ("hang", Some(&script(r#""hang""#))),
    ]);
    sb.fire("stub", "land", &[]).ok();
    let landed = sb.newest_mission().unwrap();
    let run = sb.run(&["mission", "stop", &landed]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        format!(
            "Error: conflict: mission {landed:?} already finished as \"landed\"; cannot re-finish as \"abandoned\"\n"
        )
    );

    let bg = sb.fire_in_background("hang", "block", &[]);
    let id = wait_for(20, "the hanging mission", || {
        sb.newest_mission().filter(|m| *m != landed)
    });
    let line = format!(
        "Mission {id} abandoned. Pending asks are closed; any live unit is being reaped by its host process.\n"
    );
    assert_eq!(sb.run(&["mission", "stop", &id]).ok().stdout, line);
    assert_eq!(
        sb.run(&["mission", "stop", &id, "--reason", "again"])
            .ok()
            .stdout,
        line
    );
    let fired = bg.join();
    assert_eq!(fired.code, 1);
    assert!(
        fired.stdout.contains(&format!(
            "Mission {id} finished: abandoned — stopped by operator"
        )),
        "{fired:#?}"
    );
}

#[test]
fn mission_stop_closes_the_pending_ask_and_records_the_reason() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(r#"{"ask":"Which region?"}"#)))]);
    let bg = sb.fire_in_background("stub", "deploy", &[]);
    wait_for(20, "the question", || sb.pending_ask_ids().first().cloned());
    let id = sb.newest_mission().unwrap();
    sb.run(&["mission", "stop", &id, "--reason", "wrong quarter"])
        .ok();
    assert!(
        sb.run(&["approvals", "list"])
            .ok()
            .stdout
            .starts_with("No pending asks."),
        "the stop closed the ask"
    );
    let fired = bg.join();
    assert!(
        fired.stdout.contains("finished: abandoned — wrong quarter"),
        "{fired:#?}"
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout
            .contains("\nStatus:    abandoned — wrong quarter\n"),
        "{}",
        show.stdout
    );
}

#[test]
fn a_report_an_ask_and_an_inbox_item_are_three_rows_with_three_lifecycles() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"report":{"kind":"finding","summary":"the env var is read twice"}},{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#,
        )),
    )]);
    let bg = sb.fire_in_background("stub", "audit the config loader", &[]);
    let ask = wait_for(20, "the question", || sb.pending_ask_ids().first().cloned());
    let id = sb.newest_mission().unwrap();

    let approvals = sb.run(&["approvals", "list"]).ok();
    let row = approvals
        .lines()
        .into_iter()
        .find(|l| l.starts_with(&ask))
        .unwrap()
        .to_string();
    assert!(
        row.contains("  question  mission.mission_ask_attention  Rename the env var too?  "),
        "{row}"
    );
    assert!(row.contains(&id), "{row}");

    let inbox = sb.run(&["inbox", "list"]).ok();
    let item = inbox.lines()[1]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(
        inbox.stdout.contains("operator-fired (no session)"),
        "{}",
        inbox.stdout
    );
    assert!(
        inbox.stdout.contains("the env var is read twice"),
        "{}",
        inbox.stdout
    );
    assert_eq!(
        sb.run(&["inbox", "ack", &item]).ok().stdout,
        format!("Inbox item {item} acknowledged.\n")
    );
    assert!(
        sb.run(&["inbox", "list"])
            .ok()
            .stdout
            .starts_with("No unacknowledged inbox items.")
    );
    let all = sb.run(&["inbox", "list", "--all"]).ok();
    assert!(all.lines()[1].trim_end().ends_with("yes"), "{}", all.stdout);
    // Acking touched neither the report nor the ask.
    assert_eq!(sb.pending_ask_ids(), vec![ask.clone()]);
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains(&format!(
            "Asks:      1 pending — answer with 'missionboard approvals respond <id> --answer \"...\"' (missionboard mission asks {id}):\n             [{ask}] Rename the env var too?\n"
        )),
        "{}",
        show.stdout
    );

    sb.run(&["approvals", "respond", &ask, "--answer", "yes, everywhere"])
        .ok();
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains(
            "  [finding] the env var is read twice\n  [result] renamed: yes, everywhere\n"
        ),
        "{fired:#?}"
    );
}

#[test]
fn a_result_report_carries_a_structured_handover_of_references() {
    let sb = Sandbox::new();
    sb.write(&sb.cwd.join("notes/summary.md"), "# summary\n");
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"report":{"kind":"result","summary":"summary written","refs":["notes/summary.md"],"handover":{"outcome":"the loader is audited","artifacts":["notes/summary.md"],"handoverForNext":"wire the new key","caveats":"tests are slow"}}},{"finish":"landed"}"#,
        )),
    )]);
    sb.fire("stub", "summarise", &[]).ok();
    let id = sb.newest_mission().unwrap();
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(
        reports.stdout.contains(
            "Summary: summary written\nRefs: notes/summary.md\nHandover:\n  Outcome:  the loader is audited\n  Artifacts: notes/summary.md\n  For next: wire the new key\n  Caveats:  tests are slow\n"
        ),
        "{}",
        reports.stdout
    );
    assert!(reports.stdout.contains("\n[result] "), "{}", reports.stdout);
}

#[test]
fn mission_show_flags_a_report_the_verification_gate_downgraded() {
    let sb = Sandbox::new();
    sb.write(&sb.cwd.join("notes/real.md"), "x");
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"report":{"kind":"result","summary":"migration notes written","refs":["notes/missing-migration.md"]}},{"report":{"kind":"result","summary":"real notes written","refs":["notes/real.md"]}},{"finish":"landed"}"#,
        )),
    )]);
    sb.fire("stub", "write notes", &[]).ok();
    let id = sb.newest_mission().unwrap();
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains(
            "  [progress] migration notes written\n        refs: notes/missing-migration.md\n        ⚠ claimed artifacts not found: \"notes/missing-migration.md\""
        ),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout
            .contains("  [result] real notes written\n        refs: notes/real.md\n"),
        "{}",
        show.stdout
    );
}

#[test]
fn the_plan_is_a_full_snapshot_and_mission_plan_prints_its_revisions() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"plan":{"entries":[{"content":"survey the tags","status":"completed","priority":"high"},{"content":"cut the release tag","status":"in_progress","priority":"high"},{"content":"announce","status":"pending","priority":"low"}],"explanation":"first pass over the release"}},
               {"plan":{"entries":[{"content":"survey the tags","status":"completed","priority":"high"},{"content":"cut the release tag","status":"completed","priority":"high"}]}},
               {"finish":"landed"}"#,
        )),
    )]);
    sb.fire("stub", "release", &[]).ok();
    let id = sb.newest_mission().unwrap();
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout
            .contains("\nPlan:      revision 2 (0 pending, 0 in progress, 2 completed)\n"),
        "{}",
        show.stdout
    );
    let plan = sb.run(&["mission", "plan", &id]).ok();
    assert_eq!(
        plan.stdout,
        format!(
            "Mission {id} — plan revision 2\n\nSTATUS     PRIORITY  ENTRY\ncompleted  high      survey the tags\ncompleted  high      cut the release tag\n\nRevision history (oldest first):\n  rev 1: +3/-0 (1 pending, 1 in progress, 1 completed) — first pass over the release\n  rev 2: +0/-1 (0 pending, 0 in progress, 2 completed)\n"
        )
    );
}

#[test]
fn a_mission_with_no_plan_says_so_rather_than_printing_an_empty_table() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    sb.fire("stub", "land", &[]).ok();
    let id = sb.newest_mission().unwrap();
    assert_eq!(
        sb.run(&["mission", "plan", &id]).ok().stdout,
        format!(
            "Mission {id} has no plan yet (revision 0) — no resident planner has run for this mission.\n"
        )
    );
}

#[test]
fn a_gated_tool_call_raises_a_durable_permission_ask_another_process_releases() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"permission":{"title":"edit src/config.rs","kind":"edit","report":true}},{"finish":"landed"}"#,
        )),
    )]);
    let bg = sb.fire_in_background("stub", "edit the config", &[]);
    let ask = wait_for(20, "the permission ask", || {
        sb.pending_ask_ids().first().cloned()
    });
    let list = sb.run(&["approvals", "list"]).ok();
    assert!(
        list.stdout.contains("  permission  local_fs.write_file  "),
        "{}",
        list.stdout
    );
    let answered = sb.run(&["approvals", "respond", &ask, "--answer", "yes"]);
    assert_eq!(answered.code, 1);
    assert!(
        answered.stderr.contains(
            "is a permission ask (local_fs.write_file) — it takes --approve or --deny, not text"
        ),
        "{answered:#?}"
    );
    sb.run(&["approvals", "respond", &ask, "--approve"]).ok();
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("allowed"),
        "the stub reports the outcome: {fired:#?}"
    );
}

#[test]
fn an_agent_that_crashes_mid_turn_derails_with_a_blocker_naming_the_exit() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(r#"{"say":"working"},{"crash":7}"#)))]);
    let run = sb.fire("stub", "crash", &[]);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("finished: derailed — unit turn failed: unit process exited (exit code 7) during session/prompt"), "{run:#?}");
}

#[test]
fn an_agent_that_writes_garbage_on_stdout_derails_and_the_host_carries_on() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"stdout_garbage":"hello from a chatty agent"},{"sleep":2000},{"finish":"landed"}"#,
        )),
    )]);
    let run = sb.fire("stub", "chatter", &[]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stdout
            .contains("finished: derailed — unit turn failed: "),
        "{run:#?}"
    );
    assert!(run.stdout.contains("not JSON-RPC"), "{run:#?}");
    assert!(
        run.stdout
            .contains("Full detail: missionboard mission reports"),
        "the host finished normally: {run:#?}"
    );
}

#[test]
fn a_mission_id_that_does_not_exist_is_named_along_with_where_to_look() {
    let sb = Sandbox::new();
    // A store without that row (with no store at all, the error says so instead).
    sb.store();
    for cmd in ["show", "reports", "plan"] {
        let run = sb.run(&["mission", cmd, "no-such-mission"]);
        assert_eq!(run.code, 1);
        assert_eq!(
            run.stderr,
            "Error: mission \"no-such-mission\" not found — see 'missionboard mission list' for recorded missions\n"
        );
    }
    let run = sb.run(&["inbox", "show", "nope"]);
    assert_eq!(
        run.stderr,
        "Error: no inbox item \"nope\" exists — 'missionboard inbox list --all' shows every item, acknowledged or not\n"
    );
}

#[test]
fn the_empty_mission_list_and_inbox_say_what_would_fill_them() {
    let sb = Sandbox::new();
    assert_eq!(
        sb.run(&["mission", "list"]).ok().stdout,
        "No missions recorded. Fire one with 'missionboard mission fire <agent> \"<intent>\" --wait', or :mission on the board.\n"
    );
    assert_eq!(
        sb.run(&["inbox", "list"]).ok().stdout,
        "No unacknowledged inbox items. 'missionboard inbox list --all' also shows what was already read.\n"
    );
    assert!(sb.run(&["inbox", "list", "--all"]).ok().stdout.starts_with("Operator inbox is empty. A mission's report lands here only when it had no live session to reach"));
    assert!(sb.run(&["approvals", "list"]).ok().stdout.starts_with("No pending asks. Gated tool calls and mission questions land here when nobody is watching the session."));
}

#[test]
fn the_shipped_demo_scripts_run() {
    let sb = Sandbox::new();
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/stub");
    let script = std::fs::read_to_string(assets.join("release-notes.json")).unwrap();
    sb.declare_stubs(&[("notes", Some(&script))]);
    let run = sb.fire("notes", "draft the release notes", &[]).ok();
    assert!(
        run.stdout.contains("  [result] release notes drafted\n"),
        "{run:#?}"
    );
}
