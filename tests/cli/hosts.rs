//! Issue #19 [O]: hosts across machines. A record names its host's machine; a host
//! on another machine is judged by its heartbeat row (here written through the
//! store, as that machine's host would), so "host gone", the answer that resumes
//! its parked run and the takeover of its claim work without probing its pid;
//! `doctor` reports the clock skew on a shared store.

use std::process::Stdio;

use missionboard::host::{HostId, machine_name};
use missionboard::mission::hosts::Hosts;
use missionboard::store::sql::params;
use serde_json::Value;

use crate::harness::{Background, Sandbox, wait_for};

const ASK_THEN_LAND: &str = r#"{"name":"t","turns":[{"steps":[{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}]}]}"#;

/// A host on another machine whose heartbeat stays fresh for the whole test (its
/// stamp is ahead of now), until the test makes it stale.
fn far_host(sb: &Sandbox, id: &str, machine: &str) -> HostId {
    let host = HostId {
        id: id.into(),
        machine: machine.into(),
        // A pid that runs here says nothing about a process on another machine.
        pid: std::process::id(),
        start: "elsewhere".into(),
    };
    let store = sb.store();
    Hosts::new(store.clone()).announce(&host).unwrap();
    let ahead = missionboard::clock::now_ms() + 3_600_000;
    store
        .with(|c| {
            c.execute(
                "UPDATE hosts SET heartbeat_at = ?2 WHERE id = ?1",
                params![id, ahead],
            )
        })
        .unwrap();
    host
}

/// Its heartbeat is long stale: that machine's host stopped beating.
fn goes_stale(sb: &Sandbox, id: &str) {
    sb.store()
        .with(|c| {
            c.execute(
                "UPDATE hosts SET heartbeat_at = 0 WHERE id = ?1",
                params![id],
            )
        })
        .unwrap();
}

fn list_json(sb: &Sandbox) -> Value {
    serde_json::from_str(&sb.run(&["mission", "list", "--json"]).ok().stdout).unwrap()
}

fn show(sb: &Sandbox, id: &str) -> String {
    sb.run(&["mission", "show", id]).ok().stdout
}

/// A question parked by a host that then died, its mission and checkpoint
/// rewritten as a host on machine `far-away` would have written them. Returns
/// (mission id, ask id).
fn parked_on_a_far_host(sb: &Sandbox) -> (String, String) {
    sb.declare_stubs(&[("stub", Some(ASK_THEN_LAND))]);
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let host = Background::own(
        sb.command(&[
            "mission", "fire", "stub", "rename", "--wait", "--policy", "default",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let (id, ask) = wait_for(20, "the parked question", || {
        let id = sb.newest_mission()?;
        let v: Value =
            serde_json::from_str(&sb.run(&["mission", "show", &id, "--json"]).ok().stdout).unwrap();
        let ask = v["pendingAsks"]
            .as_array()?
            .iter()
            .find(|a| a["parked"] == true)?["id"]
            .as_str()?
            .to_string();
        Some((id, ask))
    });
    host.kill();
    far_host(sb, "far-host", "far-away");
    sb.store()
        .with(|c| {
            c.execute(
                "UPDATE missions SET host_id = 'far-host', host_machine = 'far-away', host_start = 'elsewhere' WHERE id = ?1",
                params![id],
            )?;
            c.execute(
                "UPDATE checkpoints SET host_id = 'far-host', host_machine = 'far-away', host_start = 'elsewhere' WHERE ask_id = ?1",
                params![ask],
            )
        })
        .unwrap();
    (id, ask)
}

#[test]
fn mission_show_and_list_name_the_host_machine() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    sb.fire("stub", "land: say hello", &[]).ok();
    let id = sb.newest_mission().unwrap();
    let here = machine_name();

    let v = list_json(&sb);
    let m = &v["missions"][0];
    assert_eq!(m["host"]["machine"], here, "{v:#}");
    assert!(
        m["host"]["id"].as_str().is_some_and(|s| !s.is_empty()),
        "{v:#}"
    );
    assert!(
        m.get("hostGone").is_none(),
        "a landed mission needs no host: {v:#}"
    );

    let list = sb.run(&["mission", "list"]).ok();
    let header = list.lines()[0];
    assert!(header.contains("HOST"), "{list:#?}");
    let row = list
        .lines()
        .into_iter()
        .find(|l| l.starts_with(&id))
        .unwrap();
    assert!(row.contains(here), "{row}");

    let show = show(&sb, &id);
    assert!(
        show.lines()
            .any(|l| l.starts_with(&format!("Host:      {here} (pid "))),
        "{show}"
    );
}

#[test]
fn a_far_host_lives_by_its_heartbeat_and_once_stale_its_parked_run_resumes_here() {
    let sb = Sandbox::new();
    let (id, ask) = parked_on_a_far_host(&sb);

    // Beating: its local pid is no evidence either way, so it is not gone.
    let v = list_json(&sb);
    assert_eq!(v["missions"][0]["host"]["machine"], "far-away", "{v:#}");
    assert!(v["missions"][0].get("hostGone").is_none(), "{v:#}");
    let row = sb.run(&["mission", "list"]).ok().stdout;
    assert!(row.contains("far-away") && !row.contains("(gone)"), "{row}");
    let shown = show(&sb, &id);
    assert!(
        shown.contains("Host:      far-away (pid ") && !shown.contains("— gone"),
        "{shown}"
    );

    goes_stale(&sb, "far-host");
    let v = list_json(&sb);
    assert_eq!(v["missions"][0]["hostGone"], true, "{v:#}");
    let row = sb.run(&["mission", "list"]).ok().stdout;
    assert!(row.contains("far-away (gone)"), "{row}");
    assert!(
        show(&sb, &id).contains("Host:      far-away (pid "),
        "still named"
    );
    assert!(show(&sb, &id).contains("— gone, so nothing runs it"));

    // The answer claims its checkpoint here and resumes the run in this process.
    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    assert!(
        answered
            .stdout
            .contains("and the suspended run was resumed in this process"),
        "{answered:#?}"
    );
    let shown = show(&sb, &id);
    assert!(shown.contains("\nStatus:    landed\n"), "{shown}");
    assert!(
        shown.contains(&format!("Host:      {} (pid ", machine_name())),
        "the resuming host is now its host: {shown}"
    );
}

#[test]
fn a_claim_held_from_another_machine_stands_while_it_beats_and_is_taken_over_once_stale() {
    let sb = Sandbox::new();
    let (id, ask) = parked_on_a_far_host(&sb);
    goes_stale(&sb, "far-host");
    // A resumer on a third machine claimed the run, and still beats.
    let resumer = far_host(&sb, "far-resumer", "far-side");
    sb.store()
        .with(|c| {
            c.execute(
                "UPDATE checkpoints SET claimed_at = ?2, claimed_by = ?3 WHERE ask_id = ?1",
                params![ask, missionboard::clock::now_ms(), resumer.label()],
            )
        })
        .unwrap();

    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    assert!(
        answered
            .stdout
            .contains("that host resumes it with this answer"),
        "the live claim stands: {answered:#?}"
    );
    assert!(show(&sb, &id).contains("\nStatus:    open\n"));

    goes_stale(&sb, "far-resumer");
    let swept = sb.run(&["approvals", "list"]).ok();
    assert!(
        swept
            .stdout
            .contains("Resumed 1 stranded run(s) to completion in this process."),
        "{swept:#?}"
    );
    assert!(show(&sb, &id).contains("\nStatus:    landed\n"));
}

#[test]
fn a_run_answered_while_its_dead_host_still_looked_alive_is_resumed_by_a_board_once_it_goes_stale()
{
    let sb = Sandbox::new();
    let (id, ask) = parked_on_a_far_host(&sb);
    // The far host died, but its last beat is still fresh: the answer is left to it,
    // and the answerer says who else resumes it should it be gone.
    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    assert!(
        answered.stdout.contains(
            "Should that host die first, a running board or 'missionboard approvals list' on a machine that can start its agent resumes it once the host is known gone."
        ),
        "{answered:#?}"
    );
    // A board (another process, up the whole time) takes the run over as soon as
    // the host's heartbeat is stale, with nobody reading the approvals.
    let board = crate::board::board_in_terminal(&sb, "", "board");
    board.wait_screen(10, "the board", |s| s.contains("far-away"));
    assert!(show(&sb, &id).contains("\nStatus:    open\n"), "not before");
    goes_stale(&sb, "far-host");
    wait_for(15, "the board to resume the stranded run", || {
        show(&sb, &id)
            .contains("\nStatus:    landed\n")
            .then_some(())
    });
    let reports = sb.report_texts(&id);
    assert_eq!(
        reports
            .iter()
            .filter(|(text, _)| text == "renamed: yes")
            .count(),
        1,
        "resumed exactly once: {reports:?}"
    );
    board.quit();
}

#[test]
fn doctor_reports_the_clock_skew_of_this_machine_and_of_each_live_host_on_postgres() {
    let sb = Sandbox::on_postgres();
    sb.run(&["init"]).ok();
    far_host(&sb, "skewed", "far-away");
    sb.store()
        .with(|c| c.execute("UPDATE hosts SET skew_ms = 5000, pid = 4242", []))
        .unwrap();
    let doctor = sb.run(&["doctor"]);
    let lines = doctor.lines();
    let here = machine_name();
    assert!(
        lines.iter().any(
            |l| l.starts_with(&format!("Clock:     this machine ({here}) is "))
                && l.contains("the database server's clock")
        ),
        "{doctor:#?}"
    );
    assert!(
        lines.contains(&"Hosts:     1 live: far-away (pid 4242, 5000 ms behind)"),
        "{doctor:#?}"
    );
    assert!(
        lines.contains(&"Clock:     host pid 4242 on far-away is 5000 ms behind the database server's clock — more than 2 s off: synchronise far-away's clock (NTP: chrony or systemd-timesyncd), or hosts on other machines may read as gone"),
        "{doctor:#?}"
    );
}

#[test]
fn doctor_on_the_embedded_file_has_no_clock_to_compare() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let doctor = sb.run(&["doctor"]);
    let on_pg = crate::harness::pg::suites_on_postgres();
    assert_eq!(
        doctor.lines().iter().any(|l| l.starts_with("Clock:")),
        on_pg,
        "{doctor:#?}"
    );
}

/// The `store-url` entry of a `config list --json` listing.
fn listed_store_url(listing: &str) -> Value {
    let keys: Value = serde_json::from_str(listing).unwrap();
    keys.as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "store-url")
        .cloned()
        .expect("store-url is listed")
}

#[test]
fn config_shows_the_store_url_the_environment_sets() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let mut get = sb.command(&["config", "get", "store-url"]);
    get.env("MISSIONBOARD_STORE_URL", "sqlite:");
    assert_eq!(sb.run_with(get).ok().stdout, "sqlite:\n");
    let mut list = sb.command(&["config", "list", "--json"]);
    list.env("MISSIONBOARD_STORE_URL", "sqlite:");
    let url = listed_store_url(&sb.run_with(list).ok().stdout);
    assert_eq!(
        (&url["value"], &url["origin"]),
        (&"sqlite:".into(), &"env".into())
    );
}

#[test]
fn config_never_prints_the_store_urls_password() {
    let sb = Sandbox::on_postgres();
    sb.run(&["init"]).ok();
    let url = sb.store_url.clone().expect("on PostgreSQL");
    // The test server trusts local connections, so a password rides along unused.
    let joiner = if url.contains('?') { '&' } else { '?' };
    let secret = format!("{url}{joiner}password=s3cret");
    let shown = format!("{url}{joiner}password=***");
    let with_secret = |args: &[&str]| {
        let mut cmd = sb.command(args);
        cmd.env("MISSIONBOARD_STORE_URL", &secret);
        sb.run_with(cmd).ok()
    };
    let set = with_secret(&["config", "set", "store-url", &secret]);
    assert_eq!(set.stdout, format!("store-url = {shown}\n"));
    let get = with_secret(&["config", "get", "store-url"]);
    assert_eq!(get.stdout, format!("{shown}\n"));
    let list = with_secret(&["config", "list", "--json"]);
    assert_eq!(listed_store_url(&list.stdout)["value"], shown.as_str());
    let table = with_secret(&["config", "list"]);
    for out in [&set, &get, &list, &table] {
        assert!(
            !out.stdout.contains("s3cret") && !out.stderr.contains("s3cret"),
            "{out:#?}"
        );
    }
}
