//! Answers from the page: the one answer path, first answer wins across surfaces,
//! the record says who answered, a restart keeps every ask answerable.

use std::process::Stdio;

use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};

use crate::harness::{Sandbox, script, wait_for};
use crate::server::Web;

const ASK_THEN_LAND: &str = r#"{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#;

fn show_json(sb: &Sandbox, id: &str) -> serde_json::Value {
    serde_json::from_str(&sb.run(&["mission", "show", id, "--json"]).ok().stdout).unwrap()
}

#[test]
fn a_question_answered_on_the_page_lets_the_mission_go_on_exactly_once() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let fired = sb.fire_in_background("stub", "rename", &[]);
    let ask = wait_for(30, "the question", || sb.pending_ask_ids().first().cloned());

    let page = web.get("/", Some(&credential)).text().unwrap();
    assert!(page.contains("Rename the env var too?"), "{page}");
    assert!(page.contains(&format!("data-ask=\"{ask}\"")));

    let answered = web.answer(&credential, &ask, "answer", "yes, from the phone");
    assert_eq!(answered.status(), 200);
    let v: serde_json::Value = answered.json().unwrap();
    assert_eq!(v["message"], "Answered.");

    let run = fired.join();
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout
            .contains("  [result] renamed: yes, from the phone\n"),
        "{run:#?}"
    );
    let id = sb.newest_mission().unwrap();
    let show = show_json(&sb, &id);
    assert_eq!(show["status"], "landed");
    let asks = show["asks"].as_array().unwrap();
    assert_eq!(asks.len(), 1, "one ask, one answer");
    assert_eq!(asks[0]["answeredSurface"], "web");
    assert_eq!(asks[0]["answeredDevice"], "phone");
    assert!(asks[0]["waitedMs"].as_i64().unwrap() >= 0);
    let results: Vec<_> = show["reports"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "result")
        .collect();
    assert_eq!(results.len(), 1, "the mission went on once: {show:#}");

    // The audit reads it back: `mission show`, `approvals history`.
    let text = sb.run(&["mission", "show", &id]).ok().stdout;
    assert!(
        text.contains(&format!(
            "             [{ask}] answered by web (phone) after "
        )),
        "{text}"
    );
    let history = sb.run(&["approvals", "history", "--json"]).ok();
    let h: serde_json::Value = serde_json::from_str(&history.stdout).unwrap();
    assert_eq!(h["total"], 1);
    assert_eq!(h["asks"][0]["id"], ask.as_str());
    assert_eq!(h["asks"][0]["answeredDevice"], "phone");
    let table = sb.run(&["approvals", "history"]).ok();
    assert!(table.stdout.starts_with("ID"), "{}", table.stdout);
    assert!(table.stdout.contains("web (phone)"), "{}", table.stdout);

    // A second answer is told who answered first.
    let again = web.answer(&credential, &ask, "answer", "no");
    assert_eq!(again.status(), 409);
    let v: serde_json::Value = again.json().unwrap();
    assert_eq!(
        v["error"],
        format!(
            "ask {ask} was already answered by web (phone) — a verdict is recorded exactly once"
        )
    );
}

#[test]
fn the_web_and_the_cli_race_for_one_ask_and_exactly_one_wins() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let csrf = web.csrf(&credential);
    let fired = sb.fire_in_background("stub", "race", &[]);
    let ask = wait_for(30, "the question", || sb.pending_ask_ids().first().cloned());

    let cli = sb
        .command(&["approvals", "respond", &ask, "--answer", "from the cli"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let from_web = web.post(
        "/api/answer",
        Some(&credential),
        &[
            ("csrf", &csrf),
            ("ask", &ask),
            ("verdict", "answer"),
            ("text", "from the web"),
        ],
    );
    let web_status = from_web.status().as_u16();
    let web_body: serde_json::Value = from_web.json().unwrap();
    let cli = cli.wait_with_output().unwrap();
    let cli_won = cli.status.success();
    assert_ne!(
        cli_won,
        web_status == 200,
        "exactly one wins: cli {cli:?}, web {web_status} {web_body}"
    );
    if cli_won {
        assert_eq!(web_status, 409);
        assert_eq!(
            web_body["error"],
            format!("ask {ask} was already answered by cli — a verdict is recorded exactly once")
        );
    } else {
        assert_eq!(
            String::from_utf8_lossy(&cli.stderr),
            format!(
                "Error: ask {ask} was already answered by web (phone) — a verdict is recorded exactly once\n"
            )
        );
    }
    assert_eq!(fired.join().code, 0);
    let show = show_json(&sb, &sb.newest_mission().unwrap());
    let winner = if cli_won { "cli" } else { "web" };
    assert_eq!(show["asks"][0]["answeredSurface"], winner, "{show:#}");
}

#[test]
fn asks_pending_across_a_restart_are_listed_and_answerable() {
    let sb = Sandbox::new();
    let ids = sb.record_missions("wait for me", 1);
    let asks = Asks::new(sb.store());
    let ask = asks
        .raise(NewAsk {
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: "Still there after a restart?".into(),
            mission_id: Some(ids[0].clone()),
            ..Default::default()
        })
        .unwrap();
    // The gate is younger by at least a millisecond: two asks of one millisecond
    // have no order of age between them.
    wait_for(5, "the clock to pass the question's time", || {
        (missionboard::clock::now_ms() > ask.created_at).then_some(())
    });
    let gate = asks
        .raise(NewAsk {
            tools_name: "shell".into(),
            tool_name: "run".into(),
            args_summary: "rm -rf build".into(),
            envelope_name: "default".into(),
            matched_rule: Some(2),
            mission_id: Some(ids[0].clone()),
            ..Default::default()
        })
        .unwrap();
    let first = Web::start(&sb, &[]);
    let credential = first.pair(&sb, "phone");
    let page = first.get("/", Some(&credential)).text().unwrap();
    assert!(page.contains("Still there after a restart?"));
    drop(first);

    let web = Web::start(&sb, &[]);
    let page = web.get("/", Some(&credential)).text().unwrap();
    // Longest-waiting first, each with what it needs.
    let (q, g) = (
        page.find("Still there after a restart?").unwrap(),
        page.find("rm -rf build").unwrap(),
    );
    assert!(q < g, "the older ask comes first");
    assert!(
        page.contains("Asked by rule 2 of envelope default"),
        "{page}"
    );
    assert_eq!(
        web.answer(&credential, &ask.id, "answer", "yes").status(),
        200
    );
    assert_eq!(web.answer(&credential, &gate.id, "deny", "").status(), 200);
    let show = show_json(&sb, &ids[0]);
    let states: Vec<_> = show["asks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["state"].as_str().unwrap().to_string(),
                a["answeredDevice"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        states.contains(&("approved".into(), "phone".into())),
        "{states:?}"
    );
    assert!(
        states.contains(&("denied".into(), "phone".into())),
        "{states:?}"
    );
    // A gated call takes a verdict, not words; a second verdict loses to the first.
    let wrong = web.answer(&credential, &gate.id, "answer", "words");
    assert_eq!(wrong.status(), 400);
    let again = web.answer(&credential, &gate.id, "approve", "");
    assert_eq!(again.status(), 409);
}

#[test]
fn a_mission_stopped_on_the_page_is_abandoned_with_its_asks_closed() {
    let sb = Sandbox::new();
    let ids = sb.record_missions("stop me", 1);
    let ask = Asks::new(sb.store())
        .raise(NewAsk {
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: "Go on?".into(),
            mission_id: Some(ids[0].clone()),
            ..Default::default()
        })
        .unwrap();
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let page = web
        .get(&format!("/missions/{}", ids[0]), Some(&credential))
        .text()
        .unwrap();
    assert!(
        page.contains("stop me 0") && page.contains("Stop mission"),
        "{page}"
    );
    let csrf = web.csrf(&credential);
    let no_token = web.post("/api/stop", Some(&credential), &[("mission", &ids[0])]);
    assert_eq!(no_token.status(), 403);
    let stopped = web.post(
        "/api/stop",
        Some(&credential),
        &[("csrf", &csrf), ("mission", &ids[0])],
    );
    assert_eq!(stopped.status(), 200);
    let show = show_json(&sb, &ids[0]);
    assert_eq!(show["status"], "abandoned");
    assert_eq!(show["statusReason"], "stopped from the web (phone)");
    assert_eq!(show["asks"][0]["id"], ask.id.as_str());
    assert_eq!(show["asks"][0]["state"], "denied");
    let again = web.post(
        "/api/stop",
        Some(&credential),
        &[("csrf", &csrf), ("mission", &ids[0])],
    );
    assert_eq!(
        again.status(),
        200,
        "stopping an abandoned mission again keeps the first reason"
    );
}

#[test]
fn a_host_that_serves_the_page_runs_a_queued_mission_answered_from_the_phone() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    let web = Web::start_command(&sb, &["host", "--web", "127.0.0.1:0"]);
    let credential = web.pair(&sb, "phone");
    let queued = sb
        .run(&[
            "mission",
            "fire",
            "stub",
            "walk away",
            "--queue",
            "--policy",
            "default",
        ])
        .ok();
    let id = queued.stdout.split_whitespace().nth(1).unwrap().to_string();
    let ask = wait_for(30, "the queued mission's question", || {
        sb.pending_ask_ids().first().cloned()
    });
    assert_eq!(
        web.answer(&credential, &ask, "answer", "later").status(),
        200
    );
    wait_for(30, "the mission to land", || {
        (show_json(&sb, &id)["status"] == "landed").then_some(())
    });
    let show = show_json(&sb, &id);
    assert_eq!(show["asks"][0]["answeredDevice"], "phone");
    assert!(
        show["reports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["summary"] == "renamed: later"),
        "{show:#}"
    );
}

#[test]
fn two_devices_racing_for_one_ask_end_in_one_verdict_and_the_loser_hears_which_device() {
    let sb = Sandbox::new();
    let ids = sb.record_missions("race", 1);
    let ask = Asks::new(sb.store())
        .raise(NewAsk {
            tools_name: "shell".into(),
            tool_name: "run".into(),
            args_summary: "make deploy".into(),
            mission_id: Some(ids[0].clone()),
            ..Default::default()
        })
        .unwrap();
    let web = Web::start(&sb, &[]);
    let devices: Vec<_> = ["phone", "tablet"]
        .into_iter()
        .map(|name| {
            let credential = web.pair(&sb, name);
            let csrf = web.csrf(&credential);
            (name, credential, csrf)
        })
        .collect();
    let results: Vec<(String, u16, serde_json::Value)> = std::thread::scope(|s| {
        let racers: Vec<_> = devices
            .iter()
            .zip(["approve", "deny"])
            .map(|((name, credential, csrf), verdict)| {
                let web = &web;
                let id = &ask.id;
                s.spawn(move || {
                    let r = web.post(
                        "/api/answer",
                        Some(credential),
                        &[("csrf", csrf), ("ask", id), ("verdict", verdict)],
                    );
                    (name.to_string(), r.status().as_u16(), r.json().unwrap())
                })
            })
            .collect();
        racers.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let winners: Vec<_> = results
        .iter()
        .filter(|(_, status, _)| *status == 200)
        .collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    let winner = &winners[0].0;
    let (_, status, body) = results.iter().find(|(n, _, _)| n != winner).unwrap();
    assert_eq!(*status, 409);
    assert_eq!(
        body["error"],
        format!(
            "ask {} was already answered by web ({winner}) — a verdict is recorded exactly once",
            ask.id
        )
    );
    let show = show_json(&sb, &ids[0]);
    assert_eq!(show["asks"][0]["answeredDevice"], winner.as_str());
}

/// A form the unit sent gets one input per field on the page (a list for a choice),
/// posted as `fill` through the one answer path: a value the form does not take is
/// refused naming the field, a good one reaches the unit with the default filled in.
#[test]
fn a_form_is_filled_on_the_page_one_input_per_field() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"elicit":{"message":"Where should it deploy?","schema":{"type":"object","properties":{"branch":{"type":"string","title":"Branch"},"env":{"type":"string","enum":["staging","prod"]},"retries":{"type":"integer","default":1}},"required":["branch","env"]}}},{"report":{"kind":"result","summary":"got: {{answer}}"}},{"finish":"landed"}"#,
        )),
    )]);
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let fired = sb.fire_in_background("stub", "deploy", &[]);
    let ask = wait_for(30, "the form", || sb.pending_ask_ids().first().cloned());

    let page = web.get("/", Some(&credential)).text().unwrap();
    assert!(page.contains("Where should it deploy?"), "{page}");
    for input in [
        r#"<input type="text" name="f.branch">"#,
        r#"<select name="f.env"><option value=""></option><option value="staging">staging</option><option value="prod">prod</option></select>"#,
        r#"<input type="text" name="f.retries">"#,
        r#"<button name="verdict" value="fill" class="approve">Submit</button>"#,
        r#"<button name="verdict" value="deny" class="deny">Decline</button>"#,
    ] {
        assert!(page.contains(input), "{input} missing:\n{page}");
    }
    assert!(page.contains("branch (text, required) — Branch"), "{page}");

    let fill = |fields: &[(&str, &str)]| {
        let csrf = web.csrf(&credential);
        let mut form = vec![
            ("csrf", csrf.as_str()),
            ("ask", ask.as_str()),
            ("verdict", "fill"),
        ];
        form.extend_from_slice(fields);
        web.post("/api/answer", Some(&credential), &form)
    };
    let bad = fill(&[("f.branch", "main"), ("f.env", "dev"), ("f.retries", "")]);
    assert_eq!(bad.status(), 400);
    let v: serde_json::Value = bad.json().unwrap();
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("field env takes one of staging, prod, not \"dev\""),
        "{v}"
    );
    assert_eq!(sb.pending_ask_ids(), std::slice::from_ref(&ask));

    let good = fill(&[("f.branch", "main"), ("f.env", "prod"), ("f.retries", "")]);
    assert_eq!(good.status(), 200);
    let v: serde_json::Value = good.json().unwrap();
    assert_eq!(v["message"], "Answered.");
    let run = fired.join();
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout
            .contains("  [result] got: accept branch=main; env=prod; retries=1\n"),
        "{run:#?}"
    );
}
