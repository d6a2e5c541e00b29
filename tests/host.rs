//! `missionboard host` and the durable queue, black-box: the real binary hosting
//! real stub units over ACP, the record read back through `mission show|list`
//! (and, for claim times no command prints, the store's own queue rows).

mod common;

use std::collections::HashMap;

use common::{Background, Run, Sandbox, report_summaries, script, wait_for};
use missionboard::mission::queue::NewQueued;
use missionboard::mission::{EnvelopeName, Intent, Missions};
use serde_json::Value;

/// Lands after a short sleep: long enough that four run side by side.
const SLEEP_THEN_LAND: &str =
    r#"{"sleep":300},{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}"#;
const LAND: &str = r#"{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}"#;
/// Runs until its host goes.
const RUN_LONG: &str = r#"{"report":{"summary":"working"}},{"sleep":120000},{"finish":"landed"}"#;
/// Asks, parks past the (short) park window, and lands on the answer.
const ASK_THEN_LAND: &str = r#"{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#;

/// A script whose session a restarted stub can load (its place saved in
/// `STUB_STATE_DIR`), so a resumed run carries on where it parked.
fn loadable(steps: &str) -> String {
    format!(r#"{{"name":"t","load_session":true,"turns":[{{"steps":[{steps}]}}]}}"#)
}

/// `missionboard host` plus `args`, in the background; its units save their
/// sessions under the sandbox's `stub-state`.
fn host(sb: &Sandbox, args: &[&str]) -> Background {
    let mut c = sb.command(&[&["host"], args].concat());
    c.env("STUB_STATE_DIR", sb.cwd.join("stub-state"));
    Background::spawn(c)
}

/// Queue a mission through the CLI; its id.
fn queue(sb: &Sandbox, agent: &str, intent: &str) -> String {
    let out = sb
        .run(&[
            "mission", "fire", agent, intent, "--queue", "--policy", "default",
        ])
        .ok();
    let first = out.lines()[0].to_string();
    assert!(first.contains(" queued at position "), "{out:#?}");
    first.split_whitespace().nth(1).unwrap().to_string()
}

/// Queue `n` missions straight into the store (setup, not the thing tested).
fn queue_many(sb: &Sandbox, agent: &str, n: usize) -> Vec<String> {
    let missions = Missions::new(sb.store());
    (0..n)
        .map(|i| {
            missions
                .enqueue(NewQueued {
                    intent: Intent::new(&format!("task {i}")).unwrap(),
                    agent_name: agent.into(),
                    envelope: EnvelopeName::new("default").unwrap(),
                    cwd: sb.cwd.display().to_string(),
                    worktree: false,
                    run_on: None,
                    check: None,
                })
                .unwrap()
                .id
        })
        .collect()
}

fn show(sb: &Sandbox, id: &str) -> Value {
    serde_json::from_str(&sb.run(&["mission", "show", id, "--json"]).ok().stdout).unwrap()
}

fn statuses(sb: &Sandbox) -> HashMap<String, String> {
    let out = sb.run(&["mission", "list", "--all", "--json"]).ok();
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    v["missions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_string(),
                m["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Wait until every one of `ids` rests as `status`.
#[track_caller]
fn wait_all(sb: &Sandbox, ids: &[String], status: &str, secs: u64) {
    wait_for(secs, &format!("{} missions {status}", ids.len()), || {
        let now = statuses(sb);
        ids.iter()
            .all(|id| now.get(id).map(String::as_str) == Some(status))
            .then_some(())
    });
}

/// The parked question of mission `id`, once its turn ended under it.
fn parked_ask(sb: &Sandbox, id: &str) -> Option<String> {
    show(sb, id)["pendingAsks"]
        .as_array()?
        .iter()
        .find(|a| a["parked"] == true)
        .and_then(|a| a["id"].as_str().map(str::to_string))
}

/// The host (`hosts` row id) that claimed each mission, and when; and when each
/// came to rest — the queue's own record, which no command prints.
fn claims(sb: &Sandbox) -> Vec<(String, String, i64, i64)> {
    sb.store()
        .with(|c| {
            let mut s = c.prepare(
                "SELECT q.mission_id, COALESCE(q.claimed_by, ''), COALESCE(q.claimed_at, 0), m.updated_at
                 FROM mission_queue q JOIN missions m ON m.id = q.mission_id",
            )?;
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect()
        })
        .unwrap()
}

/// The most missions that ran at once, from claim to rest.
fn most_at_once(spans: &[(i64, i64)]) -> usize {
    let mut edges: Vec<(i64, i32)> = spans
        .iter()
        .flat_map(|&(from, to)| [(from, 1), (to, -1)])
        .collect();
    // At one instant a rest comes before a claim: the slot was freed first.
    edges.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    most as usize
}

/// Wait until `n` `missionboard host`s advertise themselves on the store.
fn wait_hosts_up(sb: &Sandbox, n: usize) {
    let hosts = missionboard::mission::hosts::Hosts::new(sb.store());
    wait_for(60, &format!("{n} hosts up"), || {
        (hosts
            .live()
            .unwrap()
            .iter()
            .filter(|h| h.width.is_some())
            .count()
            >= n)
            .then_some(())
    });
}

fn term(bg: Background) -> Run {
    unsafe { libc::kill(bg.pid() as i32, libc::SIGTERM) };
    bg.join()
}

#[test]
fn twenty_queued_at_width_four_run_four_at_a_time_and_all_land() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(SLEEP_THEN_LAND)))]);
    let first = queue(&sb, "stub", "task first");
    let mut ids = vec![first.clone()];
    ids.extend(queue_many(&sb, "stub", 19));
    let list = sb.run(&["mission", "list", "--all"]).ok();
    assert!(
        list.lines()
            .iter()
            .any(|l| l.starts_with(&first) && l.contains(" queued #1 ")),
        "{}",
        list.stdout
    );
    let v: Value =
        serde_json::from_str(&sb.run(&["mission", "list", "--json"]).ok().stdout).unwrap();
    let row = v["missions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == first.as_str())
        .unwrap()
        .clone();
    assert_eq!(
        (row["status"].clone(), row["queuePosition"].clone()),
        ("queued".into(), 1.into())
    );

    let h = host(&sb, &["--width", "4"]);
    wait_all(&sb, &ids, "landed", 180);
    let out = term(h);
    assert_eq!(out.code, 0, "{out:#?}");
    for id in &ids {
        assert_eq!(
            report_summaries(&sb, id),
            ["[result] done"],
            "{id} ran once"
        );
        assert_eq!(
            out.stdout
                .lines()
                .filter(|l| l.starts_with(&format!("Claimed mission {id} ")))
                .count(),
            1,
            "{}",
            out.stdout
        );
    }
    let spans: Vec<(i64, i64)> = claims(&sb).iter().map(|c| (c.2, c.3)).collect();
    assert_eq!(spans.len(), 20);
    assert_eq!(most_at_once(&spans), 4, "{spans:?}");
    // Claimed in queue order: the first queued was the first claimed.
    let first_claimed = claims(&sb).into_iter().min_by_key(|c| c.2).unwrap().0;
    assert_eq!(first_claimed, first);
}

#[test]
fn a_queued_fire_s_check_is_run_by_the_host_that_claims_it() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    let out = sb
        .run(&[
            "mission",
            "fire",
            "stub",
            "check me",
            "--queue",
            "--policy",
            "default",
            "--check",
            "echo checked by the host; exit 4",
        ])
        .ok();
    let id = out.lines()[0]
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    assert_eq!(show(&sb, &id)["check"]["state"], "none");
    let h = host(&sb, &["--width", "1"]);
    // The stub finishes once: its check fails, and it has nothing left to do, so
    // its turn ends open; the record of the try is what this test reads.
    wait_for(60, "the check's first try", || {
        (show(&sb, &id)["check"]["tries"] == 1).then_some(())
    });
    term(h);
    let check = show(&sb, &id)["check"].clone();
    assert_eq!(
        (&check["state"], &check["lastExit"], &check["lastOutput"]),
        (
            &Value::from("failed"),
            &Value::from(4),
            &Value::from("checked by the host\n")
        )
    );
    assert!(
        report_summaries(&sb, &id).contains(
            &"[check] check failed (try 1 of 3): echo checked by the host; exit 4 — exit 4"
                .to_string()
        ),
        "{:?}",
        report_summaries(&sb, &id)
    );
}

#[test]
fn a_queued_mission_stopped_before_it_starts_never_spawns_a_unit() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    let transcript = sb.cwd.join("transcript.log");
    let stopped = queue(&sb, "stub", "never run this");
    let out = sb
        .run(&["mission", "stop", &stopped, "--reason", "changed my mind"])
        .ok();
    assert_eq!(
        out.lines(),
        [format!(
            "Mission {stopped} abandoned before it started: it leaves the queue and no unit ever runs it."
        )]
    );
    let mut c = sb.command(&["host", "--width", "2"]);
    c.env("STUB_TRANSCRIPT", &transcript);
    let h = Background::spawn(c);
    let ran = queue(&sb, "stub", "run this one");
    wait_all(&sb, std::slice::from_ref(&ran), "landed", 120);
    let out = term(h);
    let v = show(&sb, &stopped);
    assert_eq!(v["status"], "abandoned");
    assert_eq!(v["statusReason"], "changed my mind");
    assert!(v.get("sessionId").is_none(), "no unit was bound: {v}");
    assert!(v.get("host").is_none(), "no host took it: {v}");
    assert!(!out.stdout.contains(&stopped), "{}", out.stdout);
    // One unit ran, one first turn: the other mission's.
    let t = std::fs::read_to_string(&transcript).unwrap_or_default();
    assert_eq!(
        t.lines().filter(|l| l.starts_with("turn=1 ")).count(),
        1,
        "{t}"
    );
}

#[test]
fn a_parked_mission_frees_its_slot_and_takes_one_again_on_its_answer() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[
        ("asker", Some(&loadable(ASK_THEN_LAND))),
        ("lander", Some(&script(LAND))),
    ]);
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let h = host(&sb, &["--width", "1"]);
    let asker = queue(&sb, "asker", "rename");
    let ask = wait_for(120, "the parked question", || parked_ask(&sb, &asker));
    // Width 1, and the only running mission is parked: the next one runs.
    let lander = queue(&sb, "lander", "land");
    wait_all(&sb, std::slice::from_ref(&lander), "landed", 120);
    assert_eq!(show(&sb, &asker)["status"], "open");
    sb.run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    wait_all(&sb, std::slice::from_ref(&asker), "landed", 120);
    assert_eq!(report_summaries(&sb, &asker), ["[result] renamed: yes"]);
    term(h);
}

/// Two hosts on one store share sixty queued missions: each runs exactly once.
fn two_hosts_share_sixty(sb: &Sandbox) {
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    let (a, b) = (host(sb, &["--width", "6"]), host(sb, &["--width", "6"]));
    wait_hosts_up(sb, 2);
    let ids = queue_many(sb, "stub", 60);
    wait_all(sb, &ids, "landed", 300);
    let (a, b) = (term(a), term(b));
    let mut by_host: HashMap<String, usize> = HashMap::new();
    for (id, claimer, _, _) in claims(sb) {
        *by_host.entry(claimer).or_default() += 1;
        assert_eq!(
            report_summaries(sb, &id),
            ["[result] done"],
            "{id} ran once"
        );
    }
    assert_eq!(by_host.values().sum::<usize>(), 60);
    assert_eq!(by_host.len(), 2, "both hosts took work: {by_host:?}");
    let claimed_lines = |r: &Run| {
        r.stdout
            .lines()
            .filter(|l| l.starts_with("Claimed mission "))
            .count()
    };
    assert_eq!(claimed_lines(&a) + claimed_lines(&b), 60, "{a:#?}\n{b:#?}");
}

#[test]
fn two_hosts_on_one_sqlite_file_claim_sixty_queued_with_none_run_twice() {
    two_hosts_share_sixty(&Sandbox::on_file());
}

#[test]
fn two_hosts_on_one_postgres_database_claim_sixty_queued_with_none_run_twice() {
    two_hosts_share_sixty(&Sandbox::on_postgres());
}

#[test]
fn a_host_killed_with_four_running_has_each_resumed_or_reclaimed_once_on_the_other() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[
        ("asker", Some(&loadable(ASK_THEN_LAND))),
        ("runner", Some(&script(RUN_LONG))),
    ]);
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let doomed = host(&sb, &["--width", "4"]);
    let askers = [
        queue(&sb, "asker", "rename a"),
        queue(&sb, "asker", "rename b"),
    ];
    let runners = [queue(&sb, "runner", "run a"), queue(&sb, "runner", "run b")];
    let asks: Vec<String> = askers
        .iter()
        .map(|id| wait_for(120, "a parked question", || parked_ask(&sb, id)))
        .collect();
    for id in &runners {
        wait_for(120, "the runner working", || {
            (!report_summaries(&sb, id).is_empty()).then_some(())
        });
    }
    let survivor = host(&sb, &["--width", "4"]);
    unsafe { libc::kill(doomed.pid() as i32, libc::SIGKILL) };
    drop(doomed.join());
    // Nothing can resume a run killed mid-turn: the other host collects it, once.
    wait_all(&sb, &runners, "abandoned", 120);
    for id in &runners {
        let v = show(&sb, id);
        assert!(
            v["statusReason"]
                .as_str()
                .unwrap()
                .starts_with("reclaimed: its host on "),
            "{v}"
        );
        assert_eq!(
            report_summaries(&sb, id),
            [
                "[progress] working",
                "[blocker] Mission reclaimed: its host process is gone."
            ]
        );
    }
    // A parked run resumes on its answer, on the live host, once.
    for ask in &asks {
        sb.run(&["approvals", "respond", ask, "--answer", "yes"])
            .ok();
    }
    wait_all(&sb, &askers, "landed", 120);
    let out = term(survivor);
    for id in &askers {
        assert_eq!(report_summaries(&sb, id), ["[result] renamed: yes"]);
        assert_eq!(
            out.stdout
                .lines()
                .filter(|l| *l == format!("Resumed mission {id}: its question was answered."))
                .count(),
            1,
            "{}",
            out.stdout
        );
    }
    for id in &runners {
        assert_eq!(
            out.stdout
                .lines()
                .filter(|l| l.starts_with(&format!("Collected mission {id} ")))
                .count(),
            1,
            "{}",
            out.stdout
        );
    }
}

#[test]
fn a_term_parks_its_units_and_a_restarted_host_resumes_them() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[
        ("asker", Some(&loadable(ASK_THEN_LAND))),
        ("runner", Some(&script(
            r#"{"report":{"summary":"working"}},{"sleep":1500},{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}"#,
        ))),
    ]);
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let first = host(&sb, &["--width", "2"]);
    let asker = queue(&sb, "asker", "rename");
    let runner = queue(&sb, "runner", "run");
    let ask = wait_for(120, "the parked question", || parked_ask(&sb, &asker));
    wait_for(120, "the runner working", || {
        (!report_summaries(&sb, &runner).is_empty()).then_some(())
    });
    let out = term(first);
    assert_eq!(out.code, 0, "{out:#?}");
    assert_eq!(
        out.lines().last().copied(),
        Some("Host leaving: 1 mission(s) back in the queue, 1 parked on a question, 0 stopped.")
    );
    assert_eq!(show(&sb, &runner)["status"], "queued");
    assert_eq!(show(&sb, &asker)["status"], "open");

    let second = host(&sb, &["--width", "2"]);
    wait_all(&sb, std::slice::from_ref(&runner), "landed", 120);
    sb.run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    wait_all(&sb, std::slice::from_ref(&asker), "landed", 120);
    assert_eq!(report_summaries(&sb, &asker), ["[result] renamed: yes"]);
    let out = term(second);
    // The runner's stub loads no sessions: it began again from its intent, and said so.
    assert!(
        out.lines()
            .iter()
            .any(|l| l.starts_with(&format!("Mission {runner} starts afresh in session "))),
        "{out:#?}"
    );
}

/// A running mission a leaving host gave back keeps its session: the next host to
/// claim it loads that session (`session/load`, the stub advertising `loadSession`)
/// and the agent carries on from where it was, instead of beginning again.
#[test]
fn a_requeued_mission_carries_on_in_its_earlier_session_on_the_next_host() {
    let sb = Sandbox::new();
    // Turn 1 reports and ends (the stub saves its place); the nudge turn runs long.
    sb.declare_stubs(&[(
        "runner",
        Some(
            r#"{"name":"t","load_session":true,"turns":[{"steps":[{"report":{"summary":"working"}}]},{"steps":[{"sleep":3000},{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}]}]}"#,
        ),
    )]);
    let first = host(&sb, &["--width", "1"]);
    let id = queue(&sb, "runner", "run");
    let session = wait_for(120, "the first turn saved by the stub", || {
        let session = show(&sb, &id)["sessionId"].as_str()?.to_string();
        sb.cwd
            .join("stub-state")
            .join(format!("{session}.json"))
            .exists()
            .then_some(session)
    });
    let out = term(first);
    assert_eq!(
        out.lines().last().copied(),
        Some("Host leaving: 1 mission(s) back in the queue, 0 parked on a question, 0 stopped."),
        "{out:#?}"
    );
    let queued = show(&sb, &id);
    assert_eq!(queued["status"], "queued");
    assert_eq!(queued["sessionId"], session.as_str());

    let second = host(&sb, &["--width", "1"]);
    wait_all(&sb, std::slice::from_ref(&id), "landed", 120);
    let landed = show(&sb, &id);
    assert_eq!(landed["sessionId"], session.as_str(), "{landed:#}");
    // Turn 1 ran once: the loaded session went on with the turn after it.
    let reports = report_summaries(&sb, &id);
    assert_eq!(
        reports
            .iter()
            .filter(|r| *r == "[progress] working")
            .count(),
        1,
        "{reports:?}"
    );
    assert_eq!(reports.last().map(String::as_str), Some("[result] done"));
    let out = term(second);
    assert!(
        out.lines().contains(
            &format!(
                "Mission {id} carries on in its earlier session {session}: its agent loaded it (session/load)."
            )
            .as_str()
        ),
        "{out:#?}"
    );
}

#[test]
fn a_queued_fire_with_wait_follows_its_mission_to_the_verdict_without_hosting_it() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    let unknown = sb.run(&[
        "mission", "fire", "nobody", "x", "--queue", "--policy", "default",
    ]);
    assert_eq!(unknown.code, 1);
    assert_eq!(
        unknown.stderr.trim(),
        "Error: unknown mission agent \"nobody\": not in agents.toml nor the catalogue — declared agents: stub (see 'missionboard agent list')"
    );
    assert!(statuses(&sb).is_empty(), "a refused fire queues nothing");
    let h = host(&sb, &[]);
    wait_hosts_up(&sb, 1);
    let out = sb
        .run(&[
            "mission", "fire", "stub", "follow", "me", "--queue", "--wait", "--policy", "default",
        ])
        .ok();
    let lines = out.lines();
    let id = lines[0].split_whitespace().nth(1).unwrap();
    assert!(
        !out.stdout.contains("No `missionboard host`"),
        "a host is up: {}",
        out.stdout
    );
    assert_eq!(
        lines.last().copied(),
        Some(format!("Mission {id} finished: landed").as_str()),
        "{}",
        out.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("Mission {id} was claimed by a host on "))),
        "{}",
        out.stdout
    );
    let v = show(&sb, id);
    let host_pid = v["host"]["pid"].as_u64().unwrap() as u32;
    assert_eq!(host_pid, h.pid(), "the host ran it, not the fire: {v}");
    term(h);
}

#[test]
fn a_mission_for_a_label_waits_for_a_host_carrying_it() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    let out = sb
        .run(&[
            "mission", "fire", "stub", "on", "the", "gpu", "--queue", "--on", "gpu", "--policy",
            "default",
        ])
        .ok();
    assert!(
        out.lines()[0].ends_with(" queued at position 1 for a host labelled \"gpu\": agent \"stub\" under envelope \"default\"."),
        "{}",
        out.stdout
    );
    let gpu = out.lines()[0]
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    let plain = host(&sb, &["--label", "cpu"]);
    let other = queue(&sb, "stub", "anywhere");
    wait_all(&sb, std::slice::from_ref(&other), "landed", 120);
    assert_eq!(
        show(&sb, &gpu)["status"],
        "queued",
        "no host with the label yet"
    );
    assert_eq!(show(&sb, &gpu)["queuePosition"], 1);
    let text = sb.run(&["mission", "show", &gpu]).ok();
    assert!(
        text.lines().contains(
            &"Queue:     position 1, waiting for a `missionboard host` labelled \"gpu\" to claim it"
        ),
        "{}",
        text.stdout
    );
    let labelled = host(&sb, &["--label", "gpu"]);
    wait_all(&sb, std::slice::from_ref(&gpu), "landed", 120);
    assert_eq!(
        show(&sb, &gpu)["host"]["pid"].as_u64().unwrap() as u32,
        labelled.pid()
    );
    term(plain);
    term(labelled);
}

/// Reports a cost of `usd` dollars (cumulative, as ACP's `usage_update` does) and lands.
fn costing(usd: &str) -> String {
    script(&format!(
        r#"{{"usage":{{"used":10,"size":1000,"cost":{{"amount":{usd},"currency":"USD"}}}}}},{{"report":{{"kind":"result","summary":"done"}}}},{{"finish":"landed"}}"#
    ))
}

/// Queue `agent` under envelope `envelope`, for a host labelled `on` when named.
fn queue_under(
    sb: &Sandbox,
    agent: &str,
    intent: &str,
    envelope: &str,
    on: Option<&str>,
) -> String {
    let mut args = vec![
        "mission", "fire", agent, intent, "--queue", "--policy", envelope,
    ];
    if let Some(label) = on {
        args.extend(["--on", label]);
    }
    let out = sb.run(&args).ok();
    let first = out.lines()[0].to_string();
    assert!(first.contains(" queued at position "), "{out:#?}");
    first.split_whitespace().nth(1).unwrap().to_string()
}

/// A fleet with a $1 daily budget: `held` missions set their $0.60 `maxCostUsd`
/// aside and cost that much; `cheap` ones set nothing aside and cost $0.10.
fn budgeted(sb: &Sandbox) {
    sb.declare_stubs(&[
        ("held", Some(&costing("0.6"))),
        ("cheap", Some(&costing("0.1"))),
    ]);
    sb.write_compute_envelope("held", r#"{"maxCostUsd":0.6}"#);
    sb.write_compute_envelope("free", "{}");
    sb.run(&["config", "set", "budget-daily", "1"]).ok();
}

fn spent_today(sb: &Sandbox) -> f64 {
    let v: Value =
        serde_json::from_str(&sb.run(&["spend", "--since", "1d", "--json"]).ok().stdout).unwrap();
    v["total"]["costUsd"].as_f64().unwrap()
}

#[test]
fn a_host_never_starts_a_queued_mission_past_the_fleet_budget() {
    let sb = Sandbox::new();
    budgeted(&sb);
    let first = queue_under(&sb, "held", "first", "held", None);
    let second = queue_under(&sb, "held", "second", "held", None);
    // Queued behind the second: claimed only by a round that passed over it.
    let third = queue_under(&sb, "cheap", "third", "free", None);
    let h = host(&sb, &["--width", "4"]);
    wait_all(&sb, &[first.clone(), third.clone()], "landed", 120);
    let h = term(h);
    assert_eq!(
        show(&sb, &second)["status"],
        "queued",
        "$0.60 spent and $0.60 more would pass the $1 budget: {h:#?}"
    );
    assert!((spent_today(&sb) - 0.7).abs() < 1e-9);
    let claimed: Vec<&str> = h
        .stdout
        .lines()
        .filter(|l| l.starts_with("Claimed mission "))
        .collect();
    assert_eq!(claimed.len(), 2, "{h:#?}");
}

/// Two hosts on one store race to start two missions whose money bounds together
/// pass the fleet's budget: exactly one starts.
fn two_hosts_hold_the_budget(sb: &Sandbox) {
    budgeted(sb);
    let racing = [
        queue_under(sb, "held", "one", "held", None),
        queue_under(sb, "held", "two", "held", None),
    ];
    // Each host's own cheap mission, queued behind the racing pair: when both have
    // landed, both hosts have passed over whichever of the pair is left.
    let cheap = [
        queue_under(sb, "cheap", "a's", "free", Some("a")),
        queue_under(sb, "cheap", "b's", "free", Some("b")),
    ];
    let (a, b) = (
        host(sb, &["--width", "4", "--label", "a"]),
        host(sb, &["--width", "4", "--label", "b"]),
    );
    wait_all(sb, &cheap, "landed", 120);
    wait_for(120, "one of the racing pair landed", || {
        let now = statuses(sb);
        racing
            .iter()
            .any(|id| now.get(id).map(String::as_str) == Some("landed"))
            .then_some(())
    });
    let (a, b) = (term(a), term(b));
    let now = statuses(sb);
    let mut pair: Vec<&str> = racing.iter().map(|id| now[id].as_str()).collect();
    pair.sort_unstable();
    assert_eq!(pair, ["landed", "queued"], "{a:#?}\n{b:#?}");
    let spent = spent_today(sb);
    assert!((spent - 0.8).abs() < 1e-9 && spent <= 1.0, "{spent}");
}

#[test]
fn two_hosts_on_one_sqlite_file_never_start_past_the_fleet_budget_together() {
    two_hosts_hold_the_budget(&Sandbox::on_file());
}

#[test]
fn two_hosts_on_one_postgres_database_never_start_past_the_fleet_budget_together() {
    two_hosts_hold_the_budget(&Sandbox::on_postgres());
}

/// Agents for the memory tests: `holder` keeps 96 MiB resident and then waits on a
/// question (its unit stays, parked), `small` lands; each declares its expected peak.
fn declare_memory_agents(sb: &Sandbox) {
    let holder = sb.cwd.join("script-holder.json");
    sb.write(
        &holder,
        &loadable(
            r#"{"hold_memory":96},{"ask":{"summary":"Keep going?","then":{"report":{"kind":"result","summary":"kept: {{answer}}"}}}},{"finish":"landed"}"#,
        ),
    );
    let small = sb.cwd.join("script-small.json");
    sb.write(&small, &script(SLEEP_THEN_LAND));
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.holder]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\nexpected_rss = \"20M\"\n\n\
             [agents.small]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\nexpected_rss = \"10M\"\n",
            holder.display().to_string(),
            small.display().to_string()
        ),
    );
}

/// A queued mission waits while the host's units' measured memory leaves no room for
/// its agent's expected peak, and lands once a unit ends and frees it; the record
/// keeps each mission's peak memory and CPU time.
#[test]
fn under_fleet_max_memory_a_queued_mission_waits_for_room_then_lands() {
    let sb = Sandbox::new();
    declare_memory_agents(&sb);
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    sb.run(&["config", "set", "fleet-max-memory", "100M"]).ok();
    let h = host(&sb, &["--width", "4"]);
    let holder = queue(&sb, "holder", "hold memory");
    let ask = wait_for(120, "the holder's parked question", || {
        parked_ask(&sb, &holder)
    });
    // Its 96 MiB sampled and on its record: the host measures the same figure.
    wait_for(120, "the holder's peak on its record", || {
        let peak = show(&sb, &holder)["resources"]["peakRssBytes"].as_u64()?;
        (peak >= 96 << 20).then_some(())
    });
    let small = queue(&sb, "small", "land");
    // The holder is parked: the width has room, the memory has none.
    sb.run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    let landed = missionboard::clock::poll_until_blocking(
        std::time::Duration::from_secs(120),
        std::time::Duration::from_millis(50),
        || {
            let now = statuses(&sb);
            [&holder, &small]
                .iter()
                .all(|id| now.get(*id).map(String::as_str) == Some("landed"))
                .then_some(())
        },
    );
    let out = term(h);
    assert!(landed.is_some(), "both land: {:?}\n{out:#?}", statuses(&sb));
    let waits = format!("Mission {small} waits in the queue for memory: ");
    let said: Vec<&str> = out
        .lines()
        .into_iter()
        .filter(|l| l.starts_with(&waits))
        .collect();
    assert_eq!(said.len(), 1, "said once: {out:#?}");
    assert!(
        said[0].ends_with(
            " in use by 1 unit + 10M expected for \"small\" (10M (its declared expected_rss)) exceeds fleet-max-memory=100M. It starts when units end and free the room."
        ),
        "{}",
        said[0]
    );
    // From the queue's own record: the small mission was claimed only after the
    // holder rested.
    let spans: HashMap<String, (i64, i64)> = claims(&sb)
        .into_iter()
        .map(|(id, _, claimed, rested)| (id, (claimed, rested)))
        .collect();
    assert!(spans[&small].0 >= spans[&holder].1, "{spans:?}");
    let shown = show(&sb, &holder);
    assert!(shown["resources"]["peakRssBytes"].as_u64().unwrap() >= 96 << 20);
    let text = sb.run(&["mission", "show", &holder]).ok();
    let line = text
        .lines()
        .into_iter()
        .find(|l| l.starts_with("Resources: peak memory "))
        .unwrap_or_else(|| panic!("{text:#?}"));
    assert!(line.contains(" · CPU "), "{line}");
    // The rollup carries them per group: the units' CPU, the largest unit's peak.
    let spend: Value =
        serde_json::from_str(&sb.run(&["spend", "--by", "agent", "--json"]).ok().stdout).unwrap();
    let row = |agent: &str| {
        spend["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"] == agent)
            .cloned()
            .unwrap_or_else(|| panic!("{spend:#}"))
    };
    assert!(
        row("holder")["peakRssBytes"].as_u64().unwrap() >= 96 << 20,
        "{spend:#}"
    );
    assert!(
        row("small")["peakRssBytes"].as_u64().unwrap()
            < row("holder")["peakRssBytes"].as_u64().unwrap(),
        "the holder's 96 MiB shows: {spend:#}"
    );
    assert_eq!(
        spend["total"]["cpuMs"].as_u64().unwrap(),
        row("holder")["cpuMs"].as_u64().unwrap() + row("small")["cpuMs"].as_u64().unwrap()
    );
    let table = sb.run(&["spend"]).ok();
    let header: Vec<&str> = table.lines()[0].split_whitespace().collect();
    assert!(
        header.ends_with(&["TOOL", "CALLS", "CPU", "PEAK", "MEM"]),
        "{header:?}"
    );
}

/// A direct fire whose agent's expected peak does not fit `fleet-max-memory` is
/// refused naming the figures, and leaves no record.
#[test]
fn a_direct_fire_past_fleet_max_memory_is_refused_naming_the_figures() {
    let sb = Sandbox::new();
    declare_memory_agents(&sb);
    sb.run(&["config", "set", "fleet-max-memory", "8M"]).ok();
    let out = sb.run(&[
        "mission", "fire", "small", "land", "--policy", "default", "--wait",
    ]);
    assert_ne!(out.code, 0, "{out:#?}");
    assert!(
        out.stderr.contains(
            "fleet admission refused: 0B in use by 0 units + 10M expected for \"small\" (10M (its declared expected_rss)) exceeds fleet-max-memory=8M. Wait for a unit to conclude or stop one, fire it with --queue to wait for room on a `missionboard host`, or raise the bound: `missionboard config set fleet-max-memory <size>` (off = no bound)."
        ),
        "{out:#?}"
    );
    assert!(sb.mission_ids().is_empty(), "a refusal leaves no record");
    // Learned peaks replace the declared figure: with the bound lifted the mission
    // lands and records its peak, which the next fire is then measured against.
    sb.run(&["config", "set", "fleet-max-memory", "off"]).ok();
    sb.run(&[
        "mission", "fire", "small", "land", "--policy", "default", "--wait",
    ])
    .ok();
    sb.run(&["config", "set", "fleet-max-memory", "1K"]).ok();
    let out = sb.run(&[
        "mission", "fire", "small", "land", "--policy", "default", "--wait",
    ]);
    assert!(
        out.stderr.contains(" expected for \"small\" (")
            && out
                .stderr
                .contains(" (the p90 of its 1 recorded peak)) exceeds fleet-max-memory=1K."),
        "{out:#?}"
    );
}

/// Issue 43: `mission revise --queue` hands the revised run to a `missionboard host`
/// like any queued fire: the mission waits queued (run 2 on its record) until a host
/// claims it, and that host runs it, the feedback its next prompt, through its check
/// again. With a host up, `--queue --wait` follows the next revise to its verdict
/// without hosting it.
#[test]
fn a_queued_revise_is_claimed_and_run_by_a_host_through_its_check() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let id = sb.stuck_on_revise_check();
    let queued = sb
        .run(&["mission", "revise", &id, "write", "revised.txt", "--queue"])
        .ok();
    assert_eq!(
        queued.lines(),
        [
            format!(
                "Mission {id} sent back (run 2) and queued at position 1 for a `missionboard host`: the feedback is its next prompt."
            )
            .as_str(),
            format!(
                "Follow it with 'missionboard mission show {id}'; stop it before it starts with 'missionboard mission stop {id}'."
            )
            .as_str(),
        ]
    );
    let waiting = show(&sb, &id);
    assert_eq!(
        (
            &waiting["status"],
            &waiting["queuePosition"],
            &waiting["runs"][0]["run"],
            &waiting["runs"][0]["queued"],
            &waiting["runs"][0]["feedback"],
        ),
        (
            &Value::from("queued"),
            &Value::from(1),
            &Value::from(2),
            &Value::from(true),
            &Value::from("write revised.txt"),
        ),
        "{waiting:#}"
    );
    assert!(
        !sb.cwd.join("revised.txt").exists(),
        "nothing runs it before a host claims it"
    );

    let h = host(&sb, &["--width", "1"]);
    wait_all(&sb, std::slice::from_ref(&id), "landed", 120);
    let landed = show(&sb, &id);
    assert_eq!(
        landed["host"]["pid"].as_u64(),
        Some(u64::from(h.pid())),
        "the host ran it: {landed:#}"
    );
    assert_eq!(
        (&landed["check"]["state"], &landed["check"]["tries"]),
        (&Value::from("passed"), &Value::from(1)),
        "{landed:#}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("revised.txt")).unwrap(),
        "write revised.txt"
    );

    // A host is up: the next queued revise is followed to its verdict here.
    let followed = sb
        .run(&[
            "mission",
            "revise",
            &id,
            "write it again",
            "--queue",
            "--wait",
            "--timeout",
            "120s",
        ])
        .ok();
    let lines = followed.lines();
    assert_eq!(
        lines.first().copied(),
        Some(
            format!(
                "Mission {id} sent back (run 3) and queued at position 1 for a `missionboard host`: the feedback is its next prompt."
            )
            .as_str()
        ),
        "{followed:#?}"
    );
    assert_eq!(
        lines.last().copied(),
        Some(format!("Mission {id} finished: landed").as_str()),
        "{followed:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("revised.txt")).unwrap(),
        "write it again"
    );
    let out = term(h);
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with(&format!("Claimed mission {id} ")))
            .count(),
        2,
        "{out:#?}"
    );
    let runs: Vec<(u64, String)> = show(&sb, &id)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run"].as_u64().unwrap(),
                r["revisedBy"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(runs, [(2, "cli".to_string()), (3, "cli".to_string())]);
}
