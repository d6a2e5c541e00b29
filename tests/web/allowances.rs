//! "Allow always (this mission)" from the page: offered only where the agent
//! offered an allow-always, behind a second step; kept by missionboard, which
//! answers the agent allow-once each time; the envelope still denies what it
//! denies; revocable from the page; on the record with who granted it; ended with
//! the mission.

use missionboard::asks::{Asks, NewAsk};
use serde_json::Value;

use crate::harness::{Background, Sandbox, script, wait_for};
use crate::server::Web;

/// Shell calls are asked about, except a forced push, which is denied first.
const GATE: &str = r#"{"default_action":"allow","rules":[
  {"tools":"local_shell","tool":"local_shell","action":"deny","when":[{"key":"command","op":"glob","value":"*--force*"}]},
  {"tools":"local_shell","tool":"local_shell","action":"approve"}]}"#;

/// A push (asked), a status (the same program under the same rule), a forced
/// push (denied by rule 0), a question (the test revokes meanwhile), a log (asked
/// again), land. Every permission reports its outcome as the agent saw it.
const CALLS: &str = r#"{"permission":{"title":"git push origin main","command":"git push origin main","kind":"execute","report":true}},
{"permission":{"title":"git status","command":"git status","kind":"execute","report":true}},
{"permission":{"title":"git push --force origin main","command":"git push --force origin main","kind":"execute","report":true}},
{"ask":{"summary":"Carry on?"}},
{"permission":{"title":"git log","command":"git log","kind":"execute","report":true}},
{"finish":"landed"}"#;

fn json(sb: &Sandbox, args: &[&str]) -> Value {
    serde_json::from_str(&sb.run(args).ok().stdout).unwrap()
}

#[test]
fn allow_always_on_the_page_is_kept_by_us_scoped_to_the_mission_denied_calls_stay_denied_and_revocable()
 {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(&CALLS.replace('\n', ""))))]);
    sb.write(&sb.home.join("hitl-policy-gate.json"), GATE);
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let fired = Background::spawn(sb.command(&[
        "mission",
        "fire",
        "stub",
        "push the release",
        "--wait",
        "--policy",
        "gate",
    ]));
    let push = wait_for(30, "the push's permission ask", || {
        sb.pending_ask_ids().first().cloned()
    });

    // The page offers it behind a second step: a closed <details> around the
    // confirming button, naming what it would allow.
    let page = web.get("/", Some(&credential)).text().unwrap();
    let card = &page[page.find(&format!("data-ask=\"{push}\"")).unwrap()..];
    let card = &card[..card.find("</li>").unwrap()];
    assert!(
        card.contains("<details class=\"always\"><summary>Allow always (this mission)…</summary>"),
        "{card}"
    );
    assert!(
        card.contains(
            "local_shell.local_shell running git, asked by rule 1 of envelope &quot;gate&quot;"
        ),
        "{card}"
    );
    assert!(
        card.contains("<button name=\"verdict\" value=\"always\""),
        "{card}"
    );

    let granted = web.answer(&credential, &push, "always", "");
    assert_eq!(granted.status(), 200);
    let v: Value = granted.json().unwrap();
    assert_eq!(
        v["message"],
        "Approved, and allowed always in this mission (its page lists it to revoke)."
    );

    // `git status` ran without asking; the forced push was denied by its rule; the
    // question waits. Nothing else was asked.
    let question = wait_for(30, "the question", || {
        sb.pending_ask_ids().into_iter().find(|id| *id != push)
    });
    let mission = sb.newest_mission().unwrap();
    let show = json(&sb, &["mission", "show", &mission, "--json"]);
    assert_eq!(show["asks"].as_array().unwrap().len(), 2, "{show:#}");
    let allowance = &show["allowances"][0];
    assert_eq!(allowance["state"], "active");
    assert_eq!(allowance["uses"], 1);
    assert_eq!(allowance["grantedSurface"], "web");
    assert_eq!(allowance["grantedDevice"], "phone");
    assert_eq!(allowance["askId"], push.as_str());
    let allowance_id = allowance["id"].as_str().unwrap().to_string();
    let summaries: Vec<String> = show["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["summary"].as_str().unwrap().to_string())
        .collect();
    let refused = format!(
        "refused local_shell.local_shell: git push --force origin main (in {}) — denied by rule 0 of envelope \"gate\"",
        sb.cwd.display()
    );
    assert_eq!(
        summaries,
        [
            "always allowed in this mission by web (phone): local_shell.local_shell running git, asked by rule 1 of envelope \"gate\"",
            // The agent was answered allow-once each time, never allow-always.
            "permission 1/1 for git push origin main: allowed",
            "permission 1/1 for git status: allowed",
            refused.as_str(),
            "permission 1/1 for git push --force origin main: denied",
        ],
        "{show:#}"
    );

    // The mission's page lists it with who granted it, and revokes it.
    let detail = web
        .get(&format!("/missions/{mission}"), Some(&credential))
        .text()
        .unwrap();
    assert!(detail.contains("<h2>Always allowed</h2>"), "{detail}");
    assert!(detail.contains("granted by web (phone)"), "{detail}");
    assert!(
        detail.contains(&format!(
            "<input type=\"hidden\" name=\"allowance\" value=\"{allowance_id}\">"
        )),
        "{detail}"
    );
    let csrf = web.csrf(&credential);
    let revoked = web.post(
        "/api/revoke-allowance",
        Some(&credential),
        &[("csrf", &csrf), ("allowance", &allowance_id)],
    );
    assert_eq!(revoked.status(), 200);
    let again = web.post(
        "/api/revoke-allowance",
        Some(&credential),
        &[("csrf", &csrf), ("allowance", &allowance_id)],
    );
    assert_eq!(again.status(), 409);
    let v: Value = again.json().unwrap();
    assert_eq!(
        v["error"],
        format!("allowance {allowance_id} was already revoked by web (phone) — nothing changed")
    );

    // Revoked: the next git call is asked about again.
    assert_eq!(
        web.answer(&credential, &question, "answer", "yes").status(),
        200
    );
    let log = wait_for(30, "the log's permission ask", || {
        sb.pending_ask_ids()
            .into_iter()
            .find(|id| *id != push && *id != question)
    });
    assert_eq!(web.answer(&credential, &log, "approve", "").status(), 200);
    let run = fired.join();
    assert_eq!(run.code, 0, "{run:#?}");

    let show = json(&sb, &["mission", "show", &mission, "--json"]);
    assert_eq!(show["status"], "landed");
    assert_eq!(show["asks"].as_array().unwrap().len(), 3, "{show:#}");
    let all = json(&sb, &["approvals", "allowances", "--json"]);
    assert_eq!(all["allowances"].as_array().unwrap().len(), 1, "{all:#}");
    assert_eq!(all["allowances"][0]["state"], "revoked");
    assert_eq!(all["allowances"][0]["uses"], 1);
    assert_eq!(all["allowances"][0]["revokedDevice"], "phone");
    let text = sb.run(&["mission", "show", &mission]).ok().stdout;
    assert!(
        text.contains(&format!(
            "             [{}] always allowed: local_shell.local_shell running git, asked by rule 1 of envelope \"gate\" — granted by web (phone) on approval {push}, used 1 time(s), revoked by web (phone)\n",
            &allowance_id[..8]
        )),
        "{text}"
    );
    let history = sb.run(&["approvals", "history"]).ok().stdout;
    let push_line = history.lines().find(|l| l.starts_with(&push)).unwrap();
    assert!(push_line.contains("approved always"), "{history}");
}

#[test]
fn allow_always_is_refused_where_the_agent_offered_none_and_nothing_is_recorded() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let mission = sb.record_missions("tidy", 1).remove(0);
    let ask = Asks::new(sb.store())
        .raise(NewAsk {
            tools_name: "local_shell".into(),
            tool_name: "local_shell".into(),
            args_summary: "git push".into(),
            envelope_name: "default".into(),
            mission_id: Some(mission),
            ..Default::default()
        })
        .unwrap();
    let page = web.get("/", Some(&credential)).text().unwrap();
    assert!(page.contains(&format!("data-ask=\"{}\"", ask.id)), "{page}");
    assert!(!page.contains("Allow always"), "{page}");
    let refused = web.answer(&credential, &ask.id, "always", "");
    assert_eq!(refused.status(), 400);
    let v: Value = refused.json().unwrap();
    assert_eq!(
        v["error"],
        format!(
            "ask {}'s agent offered no \"allow always\" for this call (local_shell.local_shell) — approve or deny it once",
            ask.id
        )
    );
    assert_eq!(
        sb.pending_ask_ids(),
        vec![ask.id.clone()],
        "nothing recorded"
    );
    let all = json(&sb, &["approvals", "allowances", "--json"]);
    assert_eq!(all["allowances"], serde_json::json!([]));
}
