//! Another process holds the database's write lock for 5 s: our writers wait it out
//! (the busy timeout is longer) and every write lands.

use std::process::{Command, Stdio};

use missionboard::mission::{Missions, NewMission};
use missionboard::store::Store;

use crate::harness::{Sandbox, wait_for};
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
    let store = Store::open(&sb.db()).unwrap();
    let missions = Missions::new(store);
    let ids: Vec<String> = (0..8)
        .map(|i| {
            missions
                .create(NewMission {
                    intent: format!("to be stopped {i}"),
                    agent_name: "stub".into(),
                    policy_name: "default".into(),
                    ..Default::default()
                })
                .unwrap()
                .id
        })
        .collect();

    // The holder: the sqlite3 shell takes the write lock, says so through a file,
    // holds it for five seconds, then commits.
    let held = sb.home.join("lock-held");
    let mut holder = Command::new("sqlite3")
        .arg(sb.db())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the sqlite3 shell (apt-get install sqlite3) holds the lock in this test");
    {
        use std::io::Write;
        let mut stdin = holder.stdin.take().unwrap();
        writeln!(
            stdin,
            "BEGIN EXCLUSIVE;\nUPDATE config SET value = value WHERE 0;\n.shell touch {}\n.shell sleep 5\nCOMMIT;",
            held.display()
        )
        .unwrap();
    }
    wait_for(20, "the other process to hold the lock", || {
        held.exists().then_some(())
    });

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
    let holder = holder.wait_with_output().unwrap();
    assert!(holder.status.success(), "{holder:?}");
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
