//! Elicitation (ACP `elicitation/create`): a unit's form becomes an ask the operator
//! fills with `approvals respond --field key=value` (checked against the form before
//! the one guarded write), a page ask shows its full host and is never fetched, and
//! the answer reaches the unit as the protocol's action.

use crate::harness::{Sandbox, report_summaries, wait_for};

/// A stub that sends `elicit` (a step's JSON), reports the outcome it got, lands.
fn elicit_then_report(sb: &Sandbox, elicit: &str) {
    sb.declare_stubs(&[(
        "stub",
        Some(&format!(
            r#"{{"name":"t","turns":[{{"steps":[{{"elicit":{elicit}}},{{"report":{{"kind":"result","summary":"got: {{{{answer}}}}"}}}},{{"finish":"landed"}}]}}]}}"#
        )),
    )]);
}

const DEPLOY_FORM: &str = r#"{"message":"Where should it deploy?","schema":{"type":"object","properties":{"branch":{"type":"string","title":"Branch"},"env":{"type":"string","enum":["staging","prod"]},"retries":{"type":"integer","minimum":0,"maximum":5,"default":1}},"required":["branch","env"]}}"#;

/// The pending ask of `kind` (`form`, `url`), from `approvals list --json`.
fn pending_of_kind(sb: &Sandbox, kind: &str) -> Option<String> {
    let out = sb.run(&["approvals", "list", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    v["asks"]
        .as_array()?
        .iter()
        .find(|a| a["toolsName"] == "elicitation" && a["toolName"] == kind)
        .and_then(|a| a["id"].as_str().map(str::to_string))
}

#[test]
fn a_form_is_filled_from_the_cli_checked_against_its_fields() {
    let sb = Sandbox::new();
    elicit_then_report(&sb, DEPLOY_FORM);
    let fire = sb.fire_in_background("stub", "deploy it", &[]);
    let ask = wait_for(20, "the form ask", || pending_of_kind(&sb, "form"));

    let list = sb.run(&["approvals", "list"]).ok();
    for line in [
        format!("Fields of {ask}:"),
        "branch (text, required) — Branch".to_string(),
        "env (one of staging, prod, required)".to_string(),
        "retries (whole number) [default 1]".to_string(),
        "Fill a form with '--field key=value' (once per field), or decline it with --deny."
            .to_string(),
    ] {
        assert!(
            list.stdout.lines().any(|l| l == line),
            "{line:?} missing:\n{}",
            list.stdout
        );
    }

    // A value the form does not take is refused before anything is recorded.
    let bad = sb.run(&[
        "approvals",
        "respond",
        &ask,
        "--field",
        "branch=main",
        "--field",
        "env=dev",
    ]);
    assert_eq!(bad.code, 1, "{bad:#?}");
    assert!(
        bad.stderr
            .contains("field env takes one of staging, prod, not \"dev\""),
        "{bad:#?}"
    );
    let missing = sb.run(&["approvals", "respond", &ask, "--field", "env=prod"]);
    assert_eq!(missing.code, 1, "{missing:#?}");
    assert!(
        missing
            .stderr
            .contains("field branch is required: add --field branch=<text>"),
        "{missing:#?}"
    );
    assert_eq!(pending_of_kind(&sb, "form").as_deref(), Some(ask.as_str()));

    sb.run(&[
        "approvals",
        "respond",
        &ask,
        "--field",
        "branch=main",
        "--field",
        "env=prod",
    ])
    .ok();
    let run = fire.join();
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    // The unit got `accept` with the typed values, the default filled in.
    assert_eq!(
        report_summaries(&sb, &id),
        ["[result] got: accept branch=main; env=prod; retries=1"]
    );
    let history = sb.run(&["approvals", "history"]).ok();
    assert!(
        history
            .stdout
            .lines()
            .any(|l| l.starts_with(&ask) && l.contains(" form ") && l.contains("answered")),
        "{}",
        history.stdout
    );
}

#[test]
fn a_declined_form_is_declined_to_the_unit() {
    let sb = Sandbox::new();
    elicit_then_report(&sb, DEPLOY_FORM);
    let fire = sb.fire_in_background("stub", "deploy it", &[]);
    let ask = wait_for(20, "the form ask", || pending_of_kind(&sb, "form"));
    sb.run(&["approvals", "respond", &ask, "--deny"]).ok();
    assert_eq!(fire.join().code, 0);
    let id = sb.newest_mission().unwrap();
    assert_eq!(report_summaries(&sb, &id), ["[result] got: decline"]);
}

#[test]
fn a_form_asking_for_a_secret_is_never_answered_by_an_agent() {
    let sb = Sandbox::new();
    elicit_then_report(
        &sb,
        r#"{"message":"Log in to the registry","schema":{"type":"object","properties":{"user":{"type":"string"},"apiKey":{"type":"string","description":"Your registry API key"}},"required":["user","apiKey"]}}"#,
    );
    let fire = sb.fire_in_background("stub", "publish", &[]);
    let ask = wait_for(20, "the form ask", || pending_of_kind(&sb, "form"));
    sb.run(&["config", "set", "opt-in-beta", "true"]).ok();
    let refused = sb.run(&[
        "approvals",
        "respond",
        &ask,
        "--as-agent",
        "oracle",
        "--field",
        "user=me",
        "--field",
        "apiKey=x",
    ]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains(&format!(
            "agent answer refused: form {ask} asks for a secret (field apiKey); a human must answer"
        )),
        "{refused:#?}"
    );
    assert_eq!(pending_of_kind(&sb, "form").as_deref(), Some(ask.as_str()));
    sb.run(&["approvals", "respond", &ask, "--deny"]).ok();
    assert_eq!(fire.join().code, 0);
}

#[test]
fn a_page_ask_shows_its_full_host_and_is_answered_done_or_declined() {
    let sb = Sandbox::new();
    elicit_then_report(
        &sb,
        r#"{"message":"Authorize the deploy key","url":"https://user:pw@Login.Example.com:8443/device?code=XY"}"#,
    );
    let fire = sb.fire_in_background("stub", "deploy", &[]);
    let ask = wait_for(20, "the page ask", || pending_of_kind(&sb, "url"));
    let list = sb.run(&["approvals", "list"]).ok();
    assert!(
        list.stdout
            .lines()
            .any(|l| l == "Host: https://login.example.com:8443"),
        "{}",
        list.stdout
    );
    assert!(
        list.stdout
            .contains("Authorize the deploy key — visit https://login.example.com:8443"),
        "{}",
        list.stdout
    );
    // Words are no answer to a page.
    let words = sb.run(&["approvals", "respond", &ask, "--answer", "ok"]);
    assert_eq!(words.code, 1, "{words:#?}");
    sb.run(&["approvals", "respond", &ask, "--approve"]).ok();
    assert_eq!(fire.join().code, 0);
    let id = sb.newest_mission().unwrap();
    assert_eq!(report_summaries(&sb, &id), ["[result] got: accept"]);
}

/// The board fills a form in place: its answer pane names it a form, lists its
/// fields and how to fill them, and `key=value` lines typed there go through the
/// one answer path to the unit, checked against the form like `--field`.
#[test]
fn terminal_a_form_is_filled_from_the_board() {
    let sb = Sandbox::new();
    elicit_then_report(&sb, DEPLOY_FORM);
    let fire = sb.fire_in_background("stub", "deploy it", &[]);
    let ask = wait_for(20, "the form ask", || pending_of_kind(&sb, "form"));

    let term = crate::board::board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the form on the board", |s| {
        s.contains("Where should it deploy?")
    });
    term.keys(&["2"]);
    term.keys(&["Enter"]);
    let pane = term.wait_screen(10, "the answer pane", |s| s.contains("your answer"));
    for line in [
        "Form from stub",
        "branch (text, required) — Branch",
        "env (one of staging, prod, required)",
        "retries (whole number) [default 1]",
        "Fill it as key=value, one field a line",
    ] {
        assert!(pane.contains(line), "{line:?} missing:\n{pane}");
    }
    // A value the form does not take is refused in the pane; nothing is recorded.
    term.literal("branch=main");
    term.keys(&["Enter"]);
    term.literal("env=dev");
    term.keys(&["C-s"]);
    term.wait_screen(10, "the refusal", |s| s.contains("not \"dev\""));
    assert_eq!(pending_of_kind(&sb, "form").as_deref(), Some(ask.as_str()));
    term.keys(&["BSpace", "BSpace", "BSpace"]);
    term.literal("prod");
    term.keys(&["C-s"]);
    term.wait_screen(10, "the answer recorded", |s| {
        s.contains("answer recorded for ask")
    });

    let run = fire.join();
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    assert_eq!(
        report_summaries(&sb, &id),
        ["[result] got: accept branch=main; env=prod; retries=1"]
    );
    let screen = term.quit();
    assert!(screen.contains("EXITED:0"), "{screen}");
}

/// A form outlives its host: the host SIGKILLed while the form waits, the form is
/// still pending (a checkpoint was written with it), the operator fills it later from
/// another process, which resumes the run there; the unit is told the answer in its
/// first turn (its request went with the killed host) and carries on from the form
/// with the values it would have received; a second answer is refused.
#[test]
fn a_form_answered_after_its_host_died_resumes_the_run_with_the_values() {
    let sb = Sandbox::new();
    elicit_then_report(&sb, DEPLOY_FORM);
    let transcript = sb.cwd.join("transcript.log");
    let mut cmd = sb.command(&[
        "mission",
        "fire",
        "stub",
        "deploy it",
        "--wait",
        "--policy",
        "default",
    ]);
    cmd.env("STUB_TRANSCRIPT", &transcript);
    let host = crate::harness::Background::spawn(cmd);
    let ask = wait_for(20, "the form ask", || pending_of_kind(&sb, "form"));
    host.kill();
    let id = sb.newest_mission().unwrap();
    assert_eq!(pending_of_kind(&sb, "form").as_deref(), Some(ask.as_str()));

    let mut respond = sb.command(&[
        "approvals",
        "respond",
        &ask,
        "--field",
        "branch=main",
        "--field",
        "env=prod",
    ]);
    respond.env("STUB_TRANSCRIPT", &transcript);
    let answered = sb.run_with(respond).ok();
    assert!(
        answered
            .stdout
            .contains("and the suspended run was resumed in this process"),
        "{answered:#?}"
    );
    assert_eq!(
        report_summaries(&sb, &id),
        ["[result] got: accept branch=main; env=prod; retries=1"]
    );
    assert_eq!(sb.status_line(&id), "landed");
    let told = std::fs::read_to_string(&transcript).unwrap();
    assert!(
        told.lines()
            .any(|l| l.starts_with("turn=") && l.contains("You are resuming a parked mission")),
        "{told}"
    );
    let again = sb.run(&["approvals", "respond", &ask, "--deny"]);
    assert_eq!(again.code, 1, "{again:#?}");
    assert!(again.stderr.contains("was already answered"), "{again:#?}");
}
