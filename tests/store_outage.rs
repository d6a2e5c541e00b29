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
