//! A host SIGKILLed mid-turn, mid-ask and mid-plan-write leaves every record intact
//! and consistent; an answer after the crash resumes the run exactly once.

use std::process::Stdio;

use serde_json::Value;

use crate::harness::{Sandbox, report_kinds, wait_for};
use crate::{Host, integrity, script, show};

/// `mission list` with the reclaim floor at 100 ms: what a restart's sweep does.
fn restart_sweep(sb: &Sandbox) -> String {
    let mut list = sb.command(&["mission", "list"]);
    list.env("MISSIONBOARD_TEST_RECLAIM_AFTER_MS", "100");
    sb.run_with(list).ok().stdout
}

/// Wait until a restart's sweep reclaims exactly one mission (the silence has to
/// outlast the 100 ms floor first).
fn reclaimed_by_a_restart(sb: &Sandbox) {
    wait_for(10, "a restart sweep to reclaim the mission", || {
        let swept = restart_sweep(sb);
        assert!(
            !swept.contains("reclaimed") || swept.starts_with("Missions: 1 reclaimed as abandoned"),
            "{swept}"
        );
        swept.contains("reclaimed").then_some(())
    });
}

#[test]
fn a_host_killed_mid_turn_leaves_its_reports_and_is_reclaimed_once() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"report":{"kind":"progress","summary":"started"}},"hang""#,
        )),
    )]);
    let host = Host::fire(&sb, "stub", "work then hang", &[]);
    let id = host.mission.clone();
    wait_for(20, "the first report", || {
        (report_kinds(&show(&sb, &id)).len() == 1).then_some(())
    });
    host.kill();
    assert_eq!(integrity(&sb), "ok");
    reclaimed_by_a_restart(&sb);
    let v = show(&sb, &id);
    assert_eq!(v["status"], "abandoned");
    let kinds = report_kinds(&v);
    assert_eq!(kinds[0], ("progress".into(), "started".into()));
    assert_eq!(
        kinds.len(),
        2,
        "the report and the reclaim blocker: {kinds:?}"
    );
    assert_eq!(kinds[1].0, "blocker");
    // A second sweep finds nothing more to do.
    assert!(!restart_sweep(&sb).contains("reclaimed"));
    assert_eq!(integrity(&sb), "ok");
}

#[test]
fn a_host_killed_inside_the_park_window_leaves_a_run_an_answer_resumes() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"ask":{"summary":"Proceed with the migration?","then":{"report":{"kind":"result","summary":"migrated: {{answer}}"}}}},{"finish":"landed"}"#,
        )),
    )]);
    sb.run(&["config", "set", "ask-park-window", "60s"]).ok();
    let host = Host::fire(&sb, "stub", "ask then land", &[]);
    let id = host.mission.clone();
    let ask = wait_for(20, "the pending question", || {
        show(&sb, &id)["pendingAsks"]
            .as_array()
            .and_then(|a| a.first().cloned())
    });
    assert_eq!(ask["parked"], false, "killed inside the park window");
    host.kill();
    assert_eq!(integrity(&sb), "ok");
    // A pending question explains the silence: the sweep leaves the mission open.
    assert!(!restart_sweep(&sb).contains("reclaimed"));
    assert_eq!(show(&sb, &id)["status"], "open");
    let ask_id = ask["id"].as_str().unwrap();
    let answered = sb
        .run(&["approvals", "respond", ask_id, "--answer", "yes"])
        .ok();
    assert!(
        answered
            .stdout
            .contains("and the suspended run was resumed in this process"),
        "{answered:#?}"
    );
    let v = show(&sb, &id);
    assert_eq!(v["status"], "landed");
    assert_eq!(
        report_kinds(&v).pop().unwrap(),
        ("result".into(), "migrated: yes".into())
    );
    assert_eq!(v["pendingAsks"], Value::Array(vec![]));
    assert_eq!(integrity(&sb), "ok");
}

#[test]
fn a_host_killed_mid_plan_write_leaves_a_plan_whose_revisions_agree() {
    // Each round kills the host at a different point of a stream of plan writes.
    for (round, kill_at) in [1i64, 7, 23, 41].into_iter().enumerate() {
        let sb = Sandbox::new();
        let steps: Vec<String> = (1..=300)
            .map(|i| {
                format!(
                    r#"{{"plan":[{{"content":"step {i}","status":"in_progress","priority":"high"}},{{"content":"after {i}","status":"pending","priority":"low"}}]}}"#
                )
            })
            .collect();
        sb.declare_stubs(&[("stub", Some(&script(&steps.join(","))))]);
        let host = Host::fire(&sb, "stub", "plan a lot", &[]);
        let id = host.mission.clone();
        wait_for(30, "the plan to reach the kill point", || {
            (show(&sb, &id)["planRevision"].as_i64().unwrap() >= kill_at).then_some(())
        });
        host.kill();
        assert_eq!(integrity(&sb), "ok", "round {round}");
        let v = show(&sb, &id);
        let revision = v["planRevision"].as_i64().unwrap();
        assert!(revision >= kill_at, "round {round}");
        assert_eq!(
            v["plan"]["revision"].as_i64().unwrap(),
            revision,
            "round {round}"
        );
        // The snapshot is the one the stub wrote as that revision, whole.
        let entries = v["plan"]["entries"].as_array().unwrap();
        assert_eq!(entries.len(), 2, "round {round}");
        assert_eq!(
            entries[0]["content"],
            format!("step {revision}"),
            "round {round}"
        );
        assert_eq!(
            entries[1]["content"],
            format!("after {revision}"),
            "round {round}"
        );
        // The history ring ends at that revision, without gaps.
        let revs: Vec<i64> = v["planRevisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["revision"].as_i64().unwrap())
            .collect();
        let want: Vec<i64> = ((revision - 19).max(1)..=revision).collect();
        assert_eq!(revs, want, "round {round}");
    }
}

/// A pseudo-random number from the standard library's per-process hash keys.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// Answer-after-crash, 100 times: batches of hosts raise a question and are
/// SIGKILLed each at a random moment between the ask and the park (the window is
/// 3 s; the kill comes within 1 s of the row); then two answers race for each
/// question from two fresh processes. Exactly one answer lands, and its process
/// resumes the run exactly once (the stub's transcript, one file per trial, counts
/// the resume prompts).
#[test]
fn an_answer_after_a_crash_resumes_exactly_once_over_100_trials() {
    const TRIALS: usize = 100;
    const BATCH: usize = 10;
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"ask":{"summary":"Ship it?","then":{"report":{"kind":"result","summary":"shipped: {{answer}}"}}}},{"finish":"landed"}"#,
        )),
    )]);
    sb.run(&["config", "set", "ask-park-window", "10m"]).ok();
    let store = sb.store();
    let asks = missionboard::asks::Asks::new(store);
    for batch in 0..TRIALS / BATCH {
        let trials: Vec<(usize, std::path::PathBuf, std::time::Duration)> = (0..BATCH)
            .map(|i| {
                let n = batch * BATCH + i;
                let kill_after = std::time::Duration::from_millis(random() % 1000);
                (n, sb.cwd.join(format!("transcript-{n}.log")), kill_after)
            })
            .collect();
        // Each trial's host is fired and watched on a thread of its own, so every
        // watcher sees its question the moment the row exists (firing the batch one
        // after another first would eat into the park window before anyone looked);
        // the host dies a random while later, its turn still held inside the window.
        let (missions, parked): (Vec<String>, Vec<String>) = std::thread::scope(|scope| {
            let killers: Vec<_> = trials
                .iter()
                .map(|(n, t, kill_after)| {
                    let (asks, sb) = (&asks, &sb);
                    scope.spawn(move || {
                        let h = Host::fire(
                            sb,
                            "stub",
                            &format!("trial {n}"),
                            &[("STUB_TRANSCRIPT", t)],
                        );
                        let ask = wait_for(120, "the question", || {
                            asks.for_mission(&h.mission, 5)
                                .unwrap()
                                .first()
                                .map(|a| a.id.clone())
                        });
                        std::thread::sleep(*kill_after);
                        let mission = h.mission.clone();
                        h.kill();
                        let cp = asks.checkpoint(&ask).unwrap();
                        let cp = cp.unwrap_or_else(|| {
                            panic!("trial {n}: the run is checkpointed with its ask")
                        });
                        assert_eq!(
                            cp.parked_at, None,
                            "trial {n}: killed {kill_after:?} after the ask, before the park"
                        );
                        (mission, ask)
                    })
                })
                .collect();
            killers.into_iter().map(|k| k.join().unwrap()).unzip()
        });
        let racers: Vec<Vec<std::process::Child>> = parked
            .iter()
            .zip(&trials)
            .map(|(ask, (_, transcript, _))| {
                ["left", "right"]
                    .into_iter()
                    .map(|word| {
                        let mut c = sb.command(&["approvals", "respond", ask, "--answer", word]);
                        c.env("STUB_TRANSCRIPT", transcript)
                            .stdout(Stdio::piped())
                            .stderr(Stdio::piped())
                            .spawn()
                            .unwrap()
                    })
                    .collect()
            })
            .collect();
        for (((pair, ask), mission), (n, transcript, kill_after)) in
            racers.into_iter().zip(&parked).zip(&missions).zip(&trials)
        {
            let outs: Vec<_> = pair
                .into_iter()
                .map(|c| c.wait_with_output().unwrap())
                .collect();
            let won: Vec<_> = outs.iter().filter(|o| o.status.success()).collect();
            assert_eq!(
                won.len(),
                1,
                "trial {n} (killed after {kill_after:?}): exactly one answer lands: {outs:?}"
            );
            let winner = if String::from_utf8_lossy(&outs[0].stdout).is_empty() {
                "right"
            } else {
                "left"
            };
            assert!(
                String::from_utf8_lossy(&won[0].stdout)
                    .contains("and the suspended run was resumed in this process"),
                "trial {n} (killed after {kill_after:?}): {outs:?}"
            );
            let resumes = std::fs::read_to_string(transcript)
                .unwrap()
                .lines()
                .filter(|l| l.contains("You are resuming a parked mission"))
                .count();
            assert_eq!(resumes, 1, "trial {n}: the run resumed exactly once");
            let v = show(&sb, mission);
            assert_eq!(v["status"], "landed", "trial {n}");
            let last = report_kinds(&v).pop().unwrap();
            assert_eq!(
                last,
                ("result".into(), format!("shipped: {winner}")),
                "trial {n}: the resumed run got the winning answer"
            );
            assert!(
                asks.checkpoint(ask).unwrap().is_none(),
                "trial {n}: checkpoint spent"
            );
        }
    }
    assert_eq!(integrity(&sb), "ok");
}
