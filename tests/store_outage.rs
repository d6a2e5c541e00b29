//! A shared store that goes away and comes back: the database restarted, or stopped
//! for a while, under a `mission fire --wait` whose unit is running and whose
//! question is pending. The fire rides the outage out and the mission ends exactly as
//! it would have without it — landed once, its answer delivered once.

mod common;

use std::time::Duration;

use common::pg::OwnCluster;
use common::{Sandbox, wait_for};

const ASK_THEN_LAND: &str = r#"{"name":"t","turns":[{"steps":[{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}]}]}"#;

/// A home on a database of `cluster`'s, with the question-then-land stub declared.
fn home_on(cluster: &OwnCluster) -> Sandbox {
    let mut sb = Sandbox::on_file();
    sb.store_url = Some(cluster.url());
    sb.declare_stubs(&[("stub", Some(ASK_THEN_LAND))]);
    sb
}

fn pending_ask(sb: &Sandbox) -> String {
    wait_for(30, "the pending question", || {
        sb.pending_ask_ids().into_iter().next()
    })
}

fn lands_once(sb: &Sandbox, fire: common::Background) {
    let run = fire.join();
    assert_eq!(run.code, 0, "the fire rode the outage out: {run:#?}");
    let id = sb.newest_mission().expect("the mission");
    let shown = sb.run(&["mission", "show", &id]).ok().stdout;
    assert!(shown.contains("\nStatus:    landed\n"), "{shown}");
    let reports = sb.report_texts(&id);
    assert_eq!(
        reports
            .iter()
            .filter(|(text, _)| text == "renamed: yes")
            .count(),
        1,
        "the answer delivered once: {reports:?}"
    );
}

#[test]
fn a_database_restart_under_a_waiting_fire_ends_no_mission() {
    let cluster = OwnCluster::new_started(|_| {});
    let sb = home_on(&cluster);
    let fire = sb.fire_in_background("stub", "rename", &[]);
    let ask = pending_ask(&sb);
    cluster.restart();
    sb.run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    lands_once(&sb, fire);
}

#[test]
fn a_database_stopped_for_seconds_under_a_waiting_fire_ends_no_mission() {
    let cluster = OwnCluster::new_started(|_| {});
    let sb = home_on(&cluster);
    let fire = sb.fire_in_background("stub", "rename", &[]);
    let ask = pending_ask(&sb);
    cluster.stop();
    // The outage itself: the server stays away this long while the fire waits.
    std::thread::sleep(Duration::from_secs(8));
    cluster.start_again();
    sb.run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    lands_once(&sb, fire);
}

#[test]
fn a_one_shot_command_during_an_outage_fails_naming_the_store() {
    let cluster = OwnCluster::new_started(|_| {});
    let sb = home_on(&cluster);
    sb.run(&["mission", "list"]).ok();
    cluster.stop();
    let run = sb.run(&["mission", "list"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr
            .contains("cannot reach the missionboard database"),
        "{run:#?}"
    );
    cluster.start_again();
    sb.run(&["mission", "list"]).ok();
}

/// A unit that is busy through the outage: it reports, works a while, reports again.
const WORK_THEN_LAND: &str = r#"{"name":"w","turns":[{"steps":[{"report":{"kind":"progress","summary":"started"}},{"sleep":4000},{"report":{"kind":"result","summary":"worked through"}},{"finish":"landed"}]}]}"#;

/// The mission `agent` runs (each agent of these tests fires one).
fn mission_of(sb: &Sandbox, agent: &str) -> Option<String> {
    let out = sb.run(&["mission", "list", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    v["missions"]
        .as_array()?
        .iter()
        .find(|m| m["agentName"] == agent)
        .and_then(|m| m["id"].as_str().map(str::to_string))
}

/// The pending question of `mission`.
fn ask_of(sb: &Sandbox, mission: &str) -> Option<String> {
    let out = sb.run(&["mission", "show", mission, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    v["pendingAsks"].as_array()?.first()?["id"]
        .as_str()
        .map(str::to_string)
}

fn landed_with_once(sb: &Sandbox, fire: common::Background, mission: &str, report: &str) {
    let run = fire.join();
    assert_eq!(run.code, 0, "the fire rode the outage out: {run:#?}");
    let shown = sb.run(&["mission", "show", mission]).ok().stdout;
    assert!(shown.contains("\nStatus:    landed\n"), "{shown}");
    let reports = sb.report_texts(mission);
    assert_eq!(
        reports.iter().filter(|(text, _)| text == report).count(),
        1,
        "{report:?} filed once: {reports:?}"
    );
}

#[test]
fn a_twenty_second_outage_under_working_waiting_and_just_answered_missions_ends_each_as_without_it()
{
    let cluster = OwnCluster::new_started(|_| {});
    let mut sb = Sandbox::on_file();
    sb.store_url = Some(cluster.url());
    sb.declare_stubs(&[
        ("worker", Some(WORK_THEN_LAND)),
        ("waiter", Some(ASK_THEN_LAND)),
        ("answered", Some(ASK_THEN_LAND)),
    ]);
    let worker = sb.fire_in_background("worker", "work through it", &[]);
    let waiter = sb.fire_in_background("waiter", "wait on a question", &[]);
    let answered = sb.fire_in_background("answered", "answered in the dark", &[]);
    let (worker_id, waiter_id, answered_id) = wait_for(60, "three missions", || {
        Some((
            mission_of(&sb, "worker")?,
            mission_of(&sb, "waiter")?,
            mission_of(&sb, "answered")?,
        ))
    });
    let (waiter_ask, answered_ask) = wait_for(60, "both questions pending", || {
        Some((ask_of(&sb, &waiter_id)?, ask_of(&sb, &answered_id)?))
    });
    wait_for(60, "the worker at work", || {
        sb.report_texts(&worker_id)
            .iter()
            .any(|(text, _)| text == "started")
            .then_some(())
    });
    // Answered as the server goes away: the answer's delivery crosses the outage.
    sb.run(&["approvals", "respond", &answered_ask, "--answer", "yes"])
        .ok();
    cluster.stop();
    // The outage itself: the server stays away this long under all three.
    std::thread::sleep(Duration::from_secs(20));
    cluster.start_again();
    sb.run(&["approvals", "respond", &waiter_ask, "--answer", "yes"])
        .ok();
    landed_with_once(&sb, worker, &worker_id, "worked through");
    landed_with_once(&sb, waiter, &waiter_id, "renamed: yes");
    landed_with_once(&sb, answered, &answered_id, "renamed: yes");
}

/// `url` with `role` as its user (no password: the test servers trust local users).
fn as_role(url: &str, role: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let (_, host_and_db) = rest.split_once('@').expect("a URL naming its user");
    format!("{scheme}://{role}@{host_and_db}")
}

/// Lines of the home's logs that contain `needle`.
fn log_lines(sb: &Sandbox, needle: &str) -> Vec<String> {
    let text = sb.log_text();
    text.lines()
        .filter(|l| l.contains(needle))
        .map(str::to_string)
        .collect()
}

/// Two questions, then a verdict.
const TWO_ASKS_THEN_LAND: &str = r#"{"name":"t","turns":[{"steps":[{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"progress","summary":"first: {{answer}}"}}}},{"ask":{"summary":"And the docs?","then":{"report":{"kind":"result","summary":"second: {{answer}}"}}}},{"finish":"landed"}]}]}"#;

/// A role held to one connection: a waiting fire's store calls take it and its
/// change feed's LISTEN is refused. That is said once, with the fix, however often
/// the listener retries, and the fire re-reads on its timeouts meanwhile, so an
/// answer still reaches it. Once the limit allows, the feed listens again, says so,
/// and the next answer is pushed; the mission lands with both.
#[test]
fn a_refused_change_feed_is_said_once_per_streak_and_answers_still_arrive() {
    let db = common::pg::fresh_database();
    let role = format!(
        "mb_limited_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let name = db
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_string();
    common::pg::admin_sql(&format!("CREATE ROLE {role} LOGIN"));
    common::pg::admin_sql(&format!("ALTER DATABASE {name} OWNER TO {role}"));
    let limited = as_role(&db, &role);
    let mut sb = Sandbox::on_file();
    // The role makes the tables (so it may use them); the test reads as the admin.
    sb.store_url = Some(limited.clone());
    sb.declare_stubs(&[("stub", Some(TWO_ASKS_THEN_LAND))]);
    assert_eq!(sb.run(&["mission", "list"]).code, 0);
    sb.store_url = Some(db);
    common::pg::admin_sql(&format!("ALTER ROLE {role} CONNECTION LIMIT 1"));
    let refusals = || log_lines(&sb, "store changes: cannot LISTEN for commits");
    let recoveries = || log_lines(&sb, "store changes: listening for commits again");

    let mut cmd = sb.command(&[
        "mission", "fire", "stub", "rename", "--wait", "--policy", "default",
    ]);
    cmd.env("MISSIONBOARD_STORE_URL", &limited);
    let fire = common::Background::spawn(cmd);
    let first = pending_ask(&sb);
    let refused = wait_for(30, "the refused LISTEN in the log", || {
        Some(refusals()).filter(|l| !l.is_empty())
    });
    assert!(
        refused[0].contains("too many connections for role")
            && refused[0].contains("raise its limit (ALTER ROLE <role> CONNECTION LIMIT <n>"),
        "{refused:?}"
    );
    sb.run(&["approvals", "respond", &first, "--answer", "yes"])
        .ok();
    let second = wait_for(30, "the second question, after a re-read", || {
        sb.pending_ask_ids().into_iter().find(|a| *a != first)
    });
    assert!(recoveries().is_empty(), "still refused: {:?}", recoveries());

    common::pg::admin_sql(&format!("ALTER ROLE {role} CONNECTION LIMIT 2"));
    wait_for(30, "the feed listening again", || {
        (!recoveries().is_empty()).then_some(())
    });
    sb.run(&["approvals", "respond", &second, "--answer", "no"])
        .ok();
    let run = fire.join();
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().expect("the mission");
    let texts: Vec<String> = sb.report_texts(&id).into_iter().map(|(t, _)| t).collect();
    assert!(
        texts.contains(&"first: yes".to_string()) && texts.contains(&"second: no".to_string()),
        "{texts:?}"
    );
    assert_eq!(
        refusals().len(),
        1,
        "said once for the streak: {:?}",
        refusals()
    );
    assert_eq!(recoveries().len(), 1);
    common::pg::admin_sql(&format!("ALTER ROLE {role} CONNECTION LIMIT -1"));
}
