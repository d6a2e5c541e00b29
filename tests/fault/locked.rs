//! Someone else holds the database's write lock: our writers wait it out (the busy
//! timeout is longer) and every write lands; and while they wait, nothing else on the
//! host stalls — other units' ACP traffic keeps flowing. The holder is a connection of
//! the test's own (`ForeignLock::hold_store`): on the SQLite file a transaction in
//! `BEGIN EXCLUSIVE`, on PostgreSQL the store's write lock and every table locked
//! EXCLUSIVE, so writers of both kinds wait.

use std::process::Stdio;

use missionboard::acp_client::{Unit, UnitEvent, UnitSpec, mission_meta};
use missionboard::fleet::DispatchRequest;
use missionboard::mission::{EnvelopeName, Intent, Status};

use crate::harness::{BIN, FleetHost, ForeignLock, Sandbox, wait_for_async};
use crate::{integrity, script, show};

#[test]
fn writes_during_a_five_second_exclusive_lock_by_another_process_all_land() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"report":{"kind":"progress","summary":"one"}},{"report":{"kind":"result","summary":"two"}},{"finish":"landed"}"#,
        )),
    )]);
    let ids = sb.record_missions("to be stopped", 8);

    let mut lock = ForeignLock::hold_store(&sb.location(), 5);

    let spawn = |args: &[&str]| {
        sb.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut writers: Vec<_> = ids
        .iter()
        .map(|id| spawn(&["mission", "stop", id, "--reason", "held up"]))
        .collect();
    writers.push(spawn(&["config", "set", "ask-park-window", "45s"]));
    writers.push(spawn(&[
        "mission",
        "fire",
        "stub",
        "during the lock",
        "--wait",
        "--policy",
        "default",
    ]));
    let outs: Vec<_> = writers
        .into_iter()
        .map(|w| w.wait_with_output().unwrap())
        .collect();
    lock.wait();
    for out in &outs {
        assert!(
            out.status.success(),
            "every writer waited and landed: {out:?}"
        );
    }

    for id in &ids {
        let v = show(&sb, id);
        assert_eq!(v["status"], "abandoned", "{id}");
        assert_eq!(v["statusReason"], "held up", "{id}");
    }
    assert_eq!(
        sb.run(&["config", "get", "ask-park-window"]).ok().stdout,
        "45s\n"
    );
    let fired = sb.newest_mission().unwrap();
    let v = show(&sb, &fired);
    assert_eq!(v["status"], "landed");
    assert_eq!(v["reports"].as_array().unwrap().len(), 2);
    assert_eq!(integrity(&sb), "ok");
}

/// Reports a unit files, one every 100 ms, before it lands.
const TICKS: usize = 30;

/// Units whose mission tools wait on a foreign lock hold no async worker: on the
/// same two-worker runtime, another unit starts, opens its session and streams a
/// turn over ACP before the lock is released. Afterwards every waiting write lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_waiting_on_a_foreign_lock_stall_no_other_units_acp_traffic() {
    let ticks: Vec<String> = (1..=TICKS)
        .map(|n| format!(r#"{{"report":{{"summary":"tick {n}"}}}},{{"sleep":100}}"#))
        .collect();
    let ticker = script(&format!(r#"{},{{"finish":"landed"}}"#, ticks.join(",")));
    let h = FleetHost::new("8", &[("ticker", &ticker)]);
    let _teardown = h.fleet.spawn_teardown();
    let mut ids = Vec::new();
    for n in 0..3 {
        let d = h
            .fleet
            .dispatch(DispatchRequest {
                agent_name: "ticker".into(),
                intent: Intent::new(&format!("tick {n}")).unwrap(),
                envelope: EnvelopeName::new("default").unwrap(),
                cwd: None,
                worktree: false,
                check: Default::default(),
                add_dirs: Vec::new(),
            })
            .await
            .unwrap();
        ids.push(d.mission_id);
    }
    let missions = h.fleet.missions().clone();
    let reporting = |n: usize| {
        ids.iter()
            .all(|id| missions.report_count(id).unwrap() as usize >= n)
    };
    wait_for_async(30, "every ticker to report", || reporting(1).then_some(())).await;

    // Held past the tickers' next reports, and well inside the 15 s busy timeout.
    let lock = ForeignLock::hold_store(missions.store().location(), 10);
    let other = h.home.join("other.json");
    std::fs::write(
        &other,
        script(r#"{"say":{"text":"the other unit is heard","chunks":3}}"#),
    )
    .unwrap();
    let mut unit = Unit::start(UnitSpec {
        program: BIN.into(),
        args: vec![
            "stub-agent".into(),
            "--script".into(),
            other.display().to_string(),
        ],
        env: Default::default(),
        cwd: h.home.clone(),
        additional_dirs: Vec::new(),
        mcp_servers: Vec::new(),
        meta: mission_meta("other"),
        pid_slot: None,
        supervisor: Some(BIN.into()),
    })
    .await
    .expect("the other unit starts");
    let mut events = unit.take_events().unwrap();
    unit.prompt(vec!["speak".into()])
        .await
        .expect("the other unit's turn ends");
    let mut heard = String::new();
    while let Ok(ev) = events.try_recv() {
        if let UnitEvent::AgentText { text: t, .. } = ev {
            heard.push_str(&t);
        }
    }
    assert_eq!(heard, "the other unit is heard");
    assert!(
        lock.is_held(),
        "the other unit's session and turn ran while the lock was still held"
    );
    assert!(
        !reporting(TICKS),
        "the tickers were still reporting when the lock was taken"
    );
    unit.shutdown().await;
    lock.release();

    for id in &ids {
        wait_for_async(60, "every ticker to land", || {
            (missions.require(id).unwrap().status == Status::Landed).then_some(())
        })
        .await;
        assert_eq!(
            missions.report_count(id).unwrap() as usize,
            TICKS,
            "every report waited out the lock and landed"
        );
    }
    h.fleet.shutdown().await;
    assert_eq!(missions.store().integrity_check().unwrap(), "ok");
}
