//! What missionboard takes from an agent's ACP beyond prompts and permissions:
//! the context fill of its `usage_update`, extra roots (`--add-dir`) sent as
//! `additionalDirectories`, the login command when a session needs one, and the
//! `$/cancel_request` of a turn given up on.

use crate::board::board_in_terminal;
use crate::harness::{Sandbox, wait_for};

/// The stub reports its context fill and a cumulative cost, then lands.
const USAGE_THEN_LAND: &str = r#"{"name":"t","turns":[{"steps":[{"usage":{"used":41200,"size":200000,"cost":{"amount":0.42}}},{"finish":"landed"}]}]}"#;

#[test]
fn the_agents_context_fill_is_on_the_compute_record_and_the_boards_detail() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(USAGE_THEN_LAND))]);
    let run = sb.fire("stub", "summarise the logs", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout
            .lines()
            .any(|l| l == "Context:   41,200 / 200,000 tokens (20%)"),
        "{}",
        show.stdout
    );

    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the mission on the board", |s| {
        s.contains("summarise the logs")
    });
    term.keys(&["5"]);
    term.keys(&["z"]);
    term.wait_screen(10, "the context fill in the detail", |s| {
        s.contains("Context: 41,200 / 200,000 tokens (20%)")
    });
    term.keys(&["C-c"]);
    let screen = term.wait_screen(30, "the board to exit", |s| {
        s.lines().any(|l| l.starts_with("EXITED:"))
    });
    assert!(screen.contains("EXITED:0"), "{screen}");
}

/// A stub that lists a terminal login and answers `session/new` with auth-required.
fn declare_locked(sb: &Sandbox, auth: &str) {
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.locked]\ncommand = \"missionboard\"\nargs = [\"stub-agent\"]\ndescription = \"test stub\"\nenv = {{ STUB_AUTH_REQUIRED = {auth:?} }}\n"
        ),
    );
}

#[test]
fn auth_required_names_the_login_the_agent_advertises_on_the_fire_and_in_doctor() {
    let sb = Sandbox::new();
    declare_locked(&sb, "terminal --login");
    let login =
        "run 'missionboard stub-agent --login' in a terminal and log in (Log in to the stub)";

    let fire = sb.run(&[
        "mission", "fire", "locked", "do it", "--wait", "--policy", "default",
    ]);
    assert_ne!(fire.code, 0, "{fire:#?}");
    assert!(
        fire.stderr.contains(&format!(
            "agent \"locked\" needs a login before it can open a session (agent returned error -32000 to session/new: Authentication required) — {login}"
        )),
        "{fire:#?}"
    );

    let doctor = sb.run(&["doctor", "--agent", "locked"]);
    assert_ne!(doctor.code, 0, "{doctor:#?}");
    assert!(doctor.stdout.contains(login), "{doctor:#?}");
}

#[test]
fn auth_required_without_a_terminal_login_falls_back_to_the_catalogue_or_the_docs() {
    let sb = Sandbox::new();
    declare_locked(&sb, "agent");
    let fire = sb.run(&[
        "mission", "fire", "locked", "do it", "--wait", "--policy", "default",
    ]);
    assert_ne!(fire.code, 0, "{fire:#?}");
    assert!(
        fire.stderr.contains(
            "— log in with missionboard the way its documentation says, or export its API key"
        ),
        "{fire:#?}"
    );
}

/// `--add-dir`: checked when fired, granted in the unit's ruleset as the workspace
/// is (a write there succeeds where one beside it is refused by the kernel), sent to
/// the agent as `additionalDirectories`, and listed by `mission show`.
#[test]
fn an_added_dir_is_granted_like_the_workspace_sent_to_the_agent_and_shown() {
    let sb = Sandbox::new();
    sb.require_landlock();
    let outside = sb.home.parent().unwrap();
    let shared = outside.join("shared-data");
    let beside = outside.join("beside");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::create_dir_all(&beside).unwrap();
    // Named through a symlink: the grant is of the directory it resolves to.
    let link = outside.join("data-link");
    std::os::unix::fs::symlink(&shared, &link).unwrap();
    let shared = shared.canonicalize().unwrap();
    let sessions = sb.cwd.join("sessions.log");
    let script = format!(
        r#"{{"name":"t","turns":[{{"steps":[{{"write":{{"path":{:?},"text":"x"}}}},{{"write":{{"path":{:?},"text":"x"}}}},{{"finish":"landed"}}]}}]}}"#,
        shared.join("out.txt").display().to_string(),
        beside.join("out.txt").display().to_string()
    );
    let script_path = sb.cwd.join("script.json");
    sb.write(&script_path, &script);
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.stub]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\ndescription = \"test stub\"\nenv = {{ STUB_SESSIONS = {:?} }}\n",
            script_path.display().to_string(),
            sessions.display().to_string()
        ),
    );

    // Refused before anything is recorded: a path that is not there, a file, the home.
    for (dir, says) in [
        (
            outside.join("nope"),
            "does not exist — name an existing directory".to_string(),
        ),
        (
            script_path.clone(),
            "is not a directory — name a directory".to_string(),
        ),
        (
            sb.home.clone(),
            "which no unit may be granted — name a directory outside it".to_string(),
        ),
    ] {
        let refused = sb.run(&[
            "mission",
            "fire",
            "stub",
            "work",
            "--wait",
            "--policy",
            "default",
            "--add-dir",
            &dir.display().to_string(),
        ]);
        assert_eq!(refused.code, 1, "{refused:#?}");
        assert!(
            refused
                .stderr
                .contains(&format!("--add-dir {}: ", dir.display()))
                && refused.stderr.contains(&says),
            "{says}: {refused:#?}"
        );
    }
    assert!(
        sb.newest_mission().is_none(),
        "a refused fire records nothing"
    );

    let fired = sb.run(&[
        "mission",
        "fire",
        "stub",
        "work",
        "--wait",
        "--policy",
        "default",
        "--add-dir",
        &link.display().to_string(),
    ]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(
        reports
            .stdout
            .contains(&format!("write {}: ok", shared.join("out.txt").display())),
        "{reports:#?}"
    );
    assert!(
        reports.stdout.contains(&format!(
            "write {}: EACCES (os error 13)",
            beside.join("out.txt").display()
        )),
        "{reports:#?}"
    );
    let log = std::fs::read_to_string(&sessions).unwrap();
    assert!(
        log.lines().any(|l| l.starts_with("session/new ")
            && l.ends_with(&format!(" dirs={}", shared.display()))),
        "{log}"
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.lines().any(|l| l
            == format!(
                "Grant:     write {}: the mission's --add-dir",
                shared.display()
            )),
        "{}",
        show.stdout
    );
}

/// A turn the agent does not wind down on `session/cancel` (the stub told to ignore
/// it): a stop waits out the cancel grace, then gives the prompt up with the
/// protocol's `$/cancel_request` naming it, which the agent honours — the stub ends
/// the turn and logs the cancel — before the unit is torn down.
#[test]
fn a_stopped_turn_the_agent_ignores_is_cancelled_with_cancel_request() {
    let sb = Sandbox::new();
    let sessions = sb.cwd.join("sessions.log");
    let transcript = sb.cwd.join("transcript.log");
    let script_path = sb.cwd.join("script.json");
    sb.write(&script_path, r#"{"name":"t","turns":[{"steps":["hang"]}]}"#);
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.stub]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\ndescription = \"test stub\"\nenv = {{ STUB_SESSIONS = {:?}, STUB_TRANSCRIPT = {:?}, STUB_IGNORE_SESSION_CANCEL = \"1\" }}\n",
            script_path.display().to_string(),
            sessions.display().to_string(),
            transcript.display().to_string()
        ),
    );
    let fire = sb.fire_in_background("stub", "wait for ever", &[]);
    let id = wait_for(30, "the mission's turn to be under way", || {
        let prompted = std::fs::read_to_string(&transcript).is_ok_and(|t| t.starts_with("turn=1"));
        prompted.then(|| sb.newest_mission()).flatten()
    });
    sb.run(&["mission", "stop", &id, "--reason", "enough"]).ok();
    let run = fire.join();
    assert_eq!(run.code, 1, "{run:#?}");
    let log = std::fs::read_to_string(&sessions).unwrap();
    let session = log
        .lines()
        .find_map(|l| l.strip_prefix("session/new "))
        .unwrap_or_else(|| panic!("no session/new in {log}"));
    assert!(
        log.lines()
            .any(|l| l == format!("$/cancel_request session/prompt {session}")),
        "the abandoned prompt was never cancelled as a request:\n{log}"
    );
}
