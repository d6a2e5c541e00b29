//! CLI edges: abbreviated ask ids, a stdout that closes early, a unit that stops
//! without a verdict, and what a fire that times out says.

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::Stdio;

use crate::harness::{Background, Sandbox, script, wait_for};

const ASK_THEN_LAND: &str = r#"{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#;

#[test]
fn ask_ids_abbreviate_like_mission_ids_and_short_prefixes_say_so() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    sb.run(&["config", "set", "ask-park-window", "60s"]).ok();
    let bg = sb.fire_in_background("stub", "rename", &[]);
    let ask = wait_for(20, "the question", || sb.pending_ask_ids().first().cloned());
    let mission = sb.newest_mission().unwrap();

    let short = sb.run(&["approvals", "respond", &ask[..3], "--answer", "yes"]);
    assert_eq!(short.code, 1);
    assert_eq!(
        short.stderr,
        format!(
            "Error: ask id prefix {:?} is too short — type at least 4 characters of the id (see 'missionboard approvals list')\n",
            &ask[..3]
        )
    );
    let short = sb.run(&["mission", "show", &mission[..3]]);
    assert_eq!(short.code, 1);
    assert_eq!(
        short.stderr,
        format!(
            "Error: mission id prefix {:?} is too short — type at least 4 characters of the id (see 'missionboard mission list')\n",
            &mission[..3]
        )
    );
    let unknown = sb.run(&["approvals", "respond", "ffffffff-0000", "--answer", "yes"]);
    assert_eq!(
        unknown.stderr,
        "Error: no ask \"ffffffff-0000\" exists — 'missionboard approvals list' shows what is pending\n"
    );

    let answered = sb
        .run(&["approvals", "respond", &ask[..8], "--answer", "yes"])
        .ok();
    assert!(
        answered
            .stdout
            .starts_with(&format!("Verdict recorded for {ask}.")),
        "{answered:#?}"
    );
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("  [result] renamed: yes\n"),
        "{fired:#?}"
    );
}

/// Killed by SIGPIPE, or exited with the status a shell reports for it; and silent.
#[track_caller]
fn assert_quiet_closed_stdout(what: &str, status: std::process::ExitStatus, stderr: &str) {
    assert!(
        status.signal() == Some(libc::SIGPIPE) || status.code() == Some(141),
        "{what}: {status:?}, stderr: {stderr}"
    );
    assert_eq!(stderr, "", "{what}");
}

#[test]
fn a_stdout_that_closes_early_ends_any_command_quietly() {
    let sb = Sandbox::new();
    let detail: String = (0..20_000).map(|i| format!("line {i}\\n")).collect();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(&format!(
            r#"{{"report":{{"kind":"progress","summary":"big","detail":"{detail}"}}}},{{"finish":"landed"}}"#
        ))),
    )]);
    sb.fire("stub", "write a lot", &[]).ok();
    let id = sb.newest_mission().unwrap();

    // `| head -1`: read one line of a large output, then close the pipe.
    for args in [
        vec!["mission", "reports", id.as_str()],
        vec!["mission", "reports", id.as_str(), "--json"],
        vec!["mission", "show", id.as_str(), "--json"],
        vec!["config", "list"],
        vec!["vet", "--all"],
        vec!["--help"],
    ] {
        let mut child = sb
            .command(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let what = args.join(" ");
        if out.status.success() {
            // Small enough to be written whole before the pipe closed: then it must have
            // said what it says on an open stdout, and nothing on stderr.
            assert!(
                !what.starts_with("mission reports"),
                "{what} should not fit a pipe"
            );
            let whole = sb.run(&args).ok();
            assert_eq!(
                first.trim_end(),
                whole.stdout.lines().next().unwrap_or_default(),
                "{what}"
            );
            assert_eq!(String::from_utf8_lossy(&out.stderr), "", "{what}");
            continue;
        }
        assert_quiet_closed_stdout(&what, out.status, &String::from_utf8_lossy(&out.stderr));
    }

    // A fire hosts a unit: it tears it down and exits the same quiet way, and the
    // record survives.
    let mut child = sb
        .command(&[
            "mission", "fire", "stub", "again", "--wait", "--policy", "default",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_quiet_closed_stdout(
        "mission fire",
        out.status,
        &String::from_utf8_lossy(&out.stderr),
    );
    let list = sb.run(&["mission", "list"]).ok();
    assert_eq!(list.lines().len(), 3, "{list:#?}");
}

#[test]
fn a_unit_that_stops_without_a_verdict_gets_a_blocker_and_the_fire_returns_at_once() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"report":{"kind":"progress","summary":"half way"}}"#,
        )),
    )]);
    let run = sb.fire("stub", "do half of it", &["--timeout", "60s"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    assert!(
        !run.stdout.contains("did not finish within"),
        "it must not idle to the timeout: {run:#?}"
    );
    assert!(
        run.stdout.contains(&format!(
            "\nMission {id} is still open with no verdict and nothing pending: unit ended its turn with no verdict and nothing pending; attach to session stub-session-1. It is torn down with this process; its record and reports survive — see 'missionboard mission show {id}'.\nReports:\n  [progress] half way\n  [blocker] unit ended its turn with no verdict and nothing pending; attach to session stub-session-1\n"
        )),
        "{run:#?}"
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains("\nStatus:    open\n"),
        "{}",
        show.stdout
    );
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(
        reports.stdout.contains("the drive loop prompts a unit that has reached its operator no further — an agent that ran out of steps ends this way"),
        "{}",
        reports.stdout
    );
}

#[test]
fn a_fire_that_times_out_names_the_pending_ask_and_how_to_answer_it() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    let run = sb.fire("stub", "rename", &["--timeout", "2s"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let ask = sb
        .pending_ask_ids()
        .first()
        .cloned()
        .expect("the ask survives");
    assert!(
        run.stdout.ends_with(&format!(
            "It is waiting on question ask {ask}: Rename the env var too?\nAnswer it with 'missionboard approvals respond {ask} --answer \"...\"'.\n"
        )),
        "{run:#?}"
    );
}

#[test]
fn a_resumed_run_that_stops_without_a_verdict_gets_the_blocker_too() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"ask":{"summary":"Which region?","then":{"report":{"kind":"progress","summary":"region: {{answer}}"}}}}"#,
        )),
    )]);
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let host = Background::own(
        sb.command(&[
            "mission", "fire", "stub", "pick", "--wait", "--policy", "default",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let ask = wait_for(20, "the parked question", || {
        let id = sb.newest_mission()?;
        let show = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
        v["pendingAsks"]
            .as_array()?
            .iter()
            .find(|a| a["parked"] == true)
            .and_then(|a| a["id"].as_str().map(str::to_string))
    });
    host.kill();
    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "eu"])
        .ok();
    assert!(
        answered.stdout.contains("resumed in this process"),
        "{answered:#?}"
    );
    let id = sb.newest_mission().unwrap();
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains("\nStatus:    open\n"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.ends_with(
            "  [progress] region: eu\n  [blocker] unit ended its turn with no verdict and nothing pending; attach to session stub-session-1\n"
        ),
        "{}",
        show.stdout
    );
}

#[test]
fn a_unit_filing_one_report_over_and_over_is_corrected_then_rests_stuck_repeating_itself() {
    let sb = Sandbox::new();
    let same = r#"{"report":{"kind":"progress","summary":"The report, in order."}}"#;
    sb.declare_stubs(&[("stub", Some(&script(&[same; 7].join(","))))]);
    let run = sb.fire("stub", "write the report", &["--timeout", "60s"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let record: serde_json::Value =
        serde_json::from_str(&sb.run(&["mission", "show", &id, "--json"]).ok().stdout).unwrap();
    assert_eq!(record["status"], "stuck", "{record:#}");
    assert_eq!(
        record["statusReason"],
        "repeating itself: the unit filed the same progress report 5 times in a row: The report, in order."
    );
    let filed: Vec<&serde_json::Value> = record["reports"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["summary"] == "The report, in order.")
        .collect();
    assert_eq!(
        filed.len(),
        2,
        "the third and later copies are not filed: {record:#}"
    );
}

#[test]
fn a_unit_making_one_gated_call_over_and_over_is_refused_then_rests_stuck_repeating_itself() {
    let sb = Sandbox::new();
    let same = r#"{"permission":{"title":"read notes.txt","kind":"read","path":"notes.txt"}}"#;
    let steps = format!(r#"{},{{"finish":"landed"}}"#, [same; 6].join(","));
    sb.declare_stubs(&[("stub", Some(&script(&steps)))]);
    let run = sb.fire("stub", "read the notes", &["--timeout", "60s"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let record: serde_json::Value =
        serde_json::from_str(&sb.run(&["mission", "show", &id, "--json"]).ok().stdout).unwrap();
    assert_eq!(record["status"], "stuck", "{record:#}");
    assert_eq!(
        record["statusReason"],
        "repeating itself: the unit made the same call 5 times in a row: local_fs.read_file: notes.txt"
    );
    // The first two ran; the third and fourth were refused with the correction, on
    // the record as blockers; the fifth rested the mission, and the verdict after it
    // did not land.
    let refused: Vec<&str> = record["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"].as_str().unwrap())
        .collect();
    let correction = "word for word. Report something new, do the next step of your plan, or call mission_finish (stuck, saying why, if you cannot go on).";
    assert_eq!(
        refused,
        [
            format!(
                "refused local_fs.read_file: notes.txt — not run — it repeats your last 2 calls {correction}"
            ),
            format!(
                "refused local_fs.read_file: notes.txt — not run — it repeats your last 3 calls {correction}"
            ),
        ],
        "{record:#}"
    );
}

/// The harness's own promise (issue 46): a background command a test panics before
/// joining is ended with everything it started — a fire with its unit, a command
/// that leads a process group with what it left there — before the panic goes on,
/// so no process outlives its test to run on against a home or database that is
/// gone.
#[test]
fn a_background_command_dropped_by_a_panic_leaves_no_process_behind() {
    let sb = Sandbox::new();
    let hang = r#"{"name":"h","turns":[{"steps":[{"report":{"kind":"progress","summary":"started"}},"hang"]}]}"#;
    sb.declare_stubs(&[("hanger", Some(hang))]);
    let unit_script = sb.cwd.join("script-hanger.json").display().to_string();
    let fire = sb.fire_in_background("hanger", "hang until the test ends", &[]);
    let fire_pid = fire.pid();
    wait_for(30, "the unit to run", || {
        (!crate::harness::processes_mentioning(&unit_script).is_empty()).then_some(())
    });
    // A sleep orphaned in the group of a command that leads its own: no longer its
    // descendant, still its group's.
    let marker = format!("600.{}", std::process::id());
    let mut grouped = std::process::Command::new("sh");
    grouped
        .args(["-c", &format!("(sleep {marker} &); exec sleep 601")])
        .process_group(0);
    let grouped = crate::harness::Background::spawn(grouped);
    wait_for(10, "the orphaned sleep", || {
        (!crate::harness::processes_mentioning(&marker).is_empty()).then_some(())
    });

    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _held = (fire, grouped);
        panic!("the test fails mid-way");
    }));
    assert!(panicked.is_err());
    // Gone by the time the panic has unwound past them: nothing to wait for.
    assert!(!crate::harness::pid_alive(fire_pid), "the fire was ended");
    assert_eq!(
        crate::harness::processes_mentioning(&unit_script),
        Vec::<u32>::new(),
        "the fire's unit was ended"
    );
    assert_eq!(
        crate::harness::processes_mentioning(&marker),
        Vec::<u32>::new(),
        "what the group's leader left in its group was ended"
    );
}
