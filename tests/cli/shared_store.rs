//! Issue #19: several hosts on one PostgreSQL. Each test runs two homes (two hosts:
//! their own processes, agents.toml, envelopes, sockets and logs) against one shared
//! database, and reads the outcome back through our commands in either home.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS, bounds};
use missionboard::board::model::Query;
use missionboard::board::snapshot::{self, Source};
use missionboard::mission::{Missions, NewMission};
use missionboard::paths::Paths;
use missionboard::store::{Location, Store};

use crate::harness::{Background, Sandbox, pid_alive, processes_mentioning, script, wait_for};

const ASK_THEN_LAND: &str = r#"{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#;

/// Host A and host B: two homes on one fresh PostgreSQL database, both declaring the
/// stub agent with `steps` (each home's script lives in its own working directory).
fn two_hosts(steps: &str) -> (Sandbox, Sandbox) {
    let a = Sandbox::on_postgres();
    let b = a.another_host();
    for host in [&a, &b] {
        // Each machine's home is its own: set up there, with its own agents.toml.
        host.run(&["init"]).ok();
        host.declare_stubs(&[("stub", Some(&script(steps)))]);
    }
    (a, b)
}

fn show_json(sb: &Sandbox, id: &str) -> serde_json::Value {
    serde_json::from_str(&sb.run(&["mission", "show", id, "--json"]).ok().stdout).unwrap()
}

/// The parked question of mission `id`, as `mission show --json` in `sb` sees it.
fn parked_ask(sb: &Sandbox, id: &str) -> Option<String> {
    show_json(sb, id)["pendingAsks"]
        .as_array()?
        .iter()
        .find(|a| a["parked"] == true)
        .and_then(|a| a["id"].as_str().map(str::to_string))
}

/// `mission fire stub <intent> --wait --policy default` in `sb`'s home, its unit
/// appending one line per prompt to `transcript`; ended with its unit should the
/// test fail before joining it.
fn host_fire(sb: &Sandbox, intent: &str, transcript: &Path) -> Background {
    let mut cmd = sb.command(&[
        "mission", "fire", "stub", intent, "--wait", "--policy", "default",
    ]);
    cmd.env("STUB_TRANSCRIPT", transcript);
    Background::spawn(cmd)
}

fn resumes(transcript: &Path) -> usize {
    std::fs::read_to_string(transcript)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("You are resuming a parked mission"))
        .count()
}

#[test]
fn a_question_raised_on_host_a_is_answered_from_host_b_and_a_resumes_it() {
    let (a, b) = two_hosts(ASK_THEN_LAND);
    // Config keys other than store-url live in the shared store: set on B, A parks by it.
    b.run(&["config", "set", "ask-park-window", "300ms"]).ok();
    // Both in the mission's workspace (A's working directory): the one place a
    // confined unit may write, whichever host starts it.
    let (a_log, b_log) = (
        a.cwd.join("transcript-a.log"),
        a.cwd.join("transcript-b.log"),
    );
    let fire = host_fire(&a, "rename on A", &a_log);
    let id = wait_for(20, "A's mission, seen from B", || b.newest_mission());
    let ask = wait_for(20, "the parked question, seen from B", || {
        parked_ask(&b, &id)
    });
    let mut respond = b.command(&["approvals", "respond", &ask, "--answer", "yes, from B"]);
    respond.env("STUB_TRANSCRIPT", &b_log);
    let answered = b.run_with(respond).ok();
    assert!(
        answered
            .stdout
            .contains("that host resumes it with this answer"),
        "{answered:#?}"
    );
    let fired = fire.join();
    let stdout = &fired.stdout;
    assert_eq!(fired.code, 0, "{fired:?}");
    assert!(
        stdout.contains("  [result] renamed: yes, from B\n"),
        "{stdout}"
    );
    // A resumed it: its own unit got the resume prompt, B started none.
    // A resumed it: its own live unit was told the answer, and B started no unit.
    let a_prompts = std::fs::read_to_string(&a_log).unwrap();
    assert_eq!(
        a_prompts
            .lines()
            .filter(|l| l.contains("The operator answered the question you parked on."))
            .count(),
        1,
        "{a_prompts}"
    );
    assert!(!b_log.exists(), "B started no unit");
    for host in [&a, &b] {
        let v = show_json(host, &id);
        assert_eq!(v["status"], "landed", "{v:#}");
        let reports = host.report_texts(&id);
        assert!(
            reports.iter().any(|(s, _)| s == "renamed: yes, from B"),
            "{reports:?}"
        );
    }
}

/// SIGKILL `pid` (a process of a host this test started).
fn sigkill(pid: u32) {
    // SAFETY: signalling a process id this test started (or its unit's).
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

#[test]
fn host_a_killed_while_its_question_is_parked_b_answers_and_resumes_it_on_b() {
    let (a, b) = two_hosts(ASK_THEN_LAND);
    a.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    // Both in the mission's workspace (A's working directory): the one place a
    // confined unit may write, whichever host starts it.
    let (a_log, b_log) = (
        a.cwd.join("transcript-a.log"),
        a.cwd.join("transcript-b.log"),
    );
    let fire = host_fire(&a, "rename on A", &a_log);
    let id = wait_for(20, "A's mission, seen from B", || b.newest_mission());
    let ask = wait_for(20, "the parked question, seen from B", || {
        parked_ask(&b, &id)
    });
    // Host A dies outright: its fire process and the unit it started (the stub runs
    // A's script, so its command line names A's working directory).
    let a_script = a.cwd.join("script-stub.json").display().to_string();
    let units = processes_mentioning(&a_script);
    assert!(!units.is_empty(), "A's unit is running");
    fire.kill();
    for pid in &units {
        sigkill(*pid);
    }
    wait_for(20, "A's unit to be gone", || {
        units.iter().all(|p| !pid_alive(*p)).then_some(())
    });
    let mut respond = b.command(&["approvals", "respond", &ask, "--answer", "yes, from B"]);
    respond.env("STUB_TRANSCRIPT", &b_log);
    let answered = b.run_with(respond).ok();
    assert!(
        answered
            .stdout
            .contains("and the suspended run was resumed in this process"),
        "{answered:#?}"
    );
    // The resumed run's unit was B's: B's transcript has the one resume, A's none.
    let prompts = |log: &Path| std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(
        resumes(&b_log),
        1,
        "resumed exactly once, on B: B {} A {}",
        prompts(&b_log),
        prompts(&a_log)
    );
    assert_eq!(resumes(&a_log), 0);
    for host in [&a, &b] {
        let v = show_json(host, &id);
        assert_eq!(v["status"], "landed", "{v:#}");
        let reports = host.report_texts(&id);
        assert!(
            reports.iter().any(|(s, _)| s == "renamed: yes, from B"),
            "{reports:?}"
        );
    }
    let again = a.run(&["approvals", "respond", &ask, "--answer", "again"]);
    assert_eq!(again.code, 1, "a second answer never runs it twice");
}

// ---- A thousand agent answers from two processes against one cap. ----

const CAP: i64 = 7;
const QUESTIONS: usize = 1000;
const RACER_THREADS: usize = 8;
/// The racer process's environment: its home, the store URL, the ids file, the
/// files it touches when ready and waits on to start, and where it writes its tally.
const RACER_ENV: &str = "MB_TEST_RACER";

/// Not a test on its own: the body of one racing process, which
/// `a_thousand_agent_answers_from_two_hosts_land_exactly_the_cap` starts as a copy
/// of this test binary. Without its environment it does nothing.
#[test]
#[ignore = "run by a_thousand_agent_answers_from_two_hosts_land_exactly_the_cap"]
fn agent_answer_racer() {
    let Ok(dir) = std::env::var(RACER_ENV) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let home = PathBuf::from(std::env::var("MISSIONBOARD_HOME").unwrap());
    let url = std::env::var("MISSIONBOARD_STORE_URL").unwrap();
    let ids: Vec<String> = std::fs::read_to_string(dir.join("ids"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let paths = Paths::resolve(home, std::env::current_dir().unwrap());
    let ids = Arc::new(ids);
    let ready = Arc::new(std::sync::Barrier::new(RACER_THREADS + 1));
    let threads: Vec<_> = (0..RACER_THREADS)
        .map(|t| {
            let (ids, ready, paths, url, dir) = (
                ids.clone(),
                ready.clone(),
                paths.clone(),
                url.clone(),
                dir.clone(),
            );
            std::thread::spawn(move || {
                // Each thread on its own connection, as separate hosts are.
                let store = Store::open_at(&Location::Postgres(url)).unwrap();
                let (asks, missions) = (Asks::new(store.clone()), Missions::new(store));
                ready.wait();
                wait_for(60, "the start signal", || dir.join("go").exists().then_some(()));
                let (mut landed, mut refused) = (0i64, 0i64);
                for id in ids.iter().skip(t).step_by(RACER_THREADS) {
                    match bounds::answer_as_agent_within_bounds(
                        &paths, &asks, &missions, id, "bot", "routine",
                        &missionboard::asks::Surface::Cli,
                    ) {
                        Ok(_) => landed += 1,
                        Err(bounds::AgentAnswerError::Refused(why)) => {
                            assert!(
                                why.contains(&format!(
                                    "spent its agent-answer bound ({CAP} of {CAP}); this question waits for a human"
                                )),
                                "{why}"
                            );
                            refused += 1;
                        }
                        Err(e) => panic!("unexpected failure: {e}"),
                    }
                }
                (landed, refused)
            })
        })
        .collect();
    ready.wait();
    std::fs::write(dir.join("ready"), "").unwrap();
    let (mut landed, mut refused) = (0, 0);
    for t in threads {
        let (l, r) = t.join().unwrap();
        landed += l;
        refused += r;
    }
    std::fs::write(dir.join("tally"), format!("{landed} {refused}")).unwrap();
}

/// Start a racer process in `host`'s home over `ids`; its directory.
fn start_racer(host: &Sandbox, name: &str, ids: &[String]) -> (Background, PathBuf) {
    let dir = host.cwd.join(format!("racer-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ids"), ids.join("\n")).unwrap();
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "shared_store::agent_answer_racer",
        "--exact",
        "--ignored",
        "--test-threads",
        "1",
    ])
    .current_dir(&host.cwd)
    .env(RACER_ENV, &dir)
    .env("MISSIONBOARD_HOME", &host.home)
    .env("MISSIONBOARD_STORE_URL", host.store_url.as_ref().unwrap());
    (Background::spawn(c), dir)
}

#[test]
fn a_thousand_agent_answers_from_two_hosts_land_exactly_the_cap() {
    let a = Sandbox::on_postgres();
    let b = a.another_host();
    // Envelopes are per home: both hosts carry the capped one.
    for host in [&a, &b] {
        host.write(
            &host.home.join("hitl-policy-capped.json"),
            &format!(
                r#"{{"default_action":"approve","rules":[],"attention":{{"allowAgentAnswers":true,"maxAgentAnswers":{CAP}}}}}"#
            ),
        );
    }
    let store = a.store();
    let mission = Missions::new(store.clone())
        .create(NewMission {
            intent: "a thousand questions".into(),
            agent_name: "stub".into(),
            envelope_name: "capped".into(),
            ..Default::default()
        })
        .unwrap();
    let asks = Asks::new(store);
    let ids: Vec<String> = (0..QUESTIONS)
        .map(|i| {
            asks.raise(NewAsk {
                tools_name: QUESTION_TOOLS.into(),
                tool_name: QUESTION_TOOL.into(),
                args_summary: format!("routine question {i}"),
                mission_id: Some(mission.id.clone()),
                ..Default::default()
            })
            .unwrap()
            .id
        })
        .collect();
    // Interleaved halves: both processes reach for the first questions at once.
    let (even, odd): (Vec<_>, Vec<_>) = ids
        .iter()
        .cloned()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    let half = |v: Vec<(usize, String)>| v.into_iter().map(|(_, id)| id).collect::<Vec<_>>();
    let racers = [
        start_racer(&a, "a", &half(even)),
        start_racer(&b, "b", &half(odd)),
    ];
    wait_for(60, "both racers connected and ready", || {
        racers
            .iter()
            .all(|(_, dir)| dir.join("ready").exists())
            .then_some(())
    });
    // One signal starts both processes' threads.
    std::fs::write(a.cwd.join("racer-a").join("go"), "").unwrap();
    std::fs::write(b.cwd.join("racer-b").join("go"), "").unwrap();
    let (mut landed, mut refused) = (0i64, 0i64);
    for (child, dir) in racers {
        let out = child.join();
        assert_eq!(out.code, 0, "{out:?}");
        let tally = std::fs::read_to_string(dir.join("tally"))
            .unwrap_or_else(|_| panic!("the racer ran: {out:?}"));
        let (l, r) = tally.split_once(' ').unwrap();
        landed += l.parse::<i64>().unwrap();
        refused += r.parse::<i64>().unwrap();
    }
    assert_eq!(landed, CAP, "exactly the cap landed");
    assert_eq!(refused, QUESTIONS as i64 - CAP);
    // Read back through our commands, from either host: the rest still wait.
    for host in [&a, &b] {
        let out = host.run(&["mission", "asks", &mission.id, "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(v["total"], QUESTIONS as i64 - CAP, "{}", out.stdout);
    }
    // And one more agent answer is refused naming the durable count.
    let refused_cli = b.run_with({
        let mut c = b.command(&[
            "approvals",
            "respond",
            &ids[QUESTIONS - 1],
            "--answer",
            "one more",
            "--as-agent",
            "bot",
        ]);
        c.env("MISSIONBOARD_OPT_IN_BETA", "1");
        c
    });
    assert_eq!(refused_cli.code, 1, "{refused_cli:#?}");
    assert!(
        refused_cli.stderr.contains(&format!(
            "spent its agent-answer bound ({CAP} of {CAP}); this question waits for a human"
        )),
        "{refused_cli:#?}"
    );
}

// ---- A board on the shared store sees another host's missions. ----

/// The stub asks and waits: its mission stays open on its host until answered.
const ASK_AND_WAIT: &str = r#"{"ask":{"summary":"Ship it?","then":{"report":{"kind":"result","summary":"shipped: {{answer}}"}}}},{"finish":"landed"}"#;

#[test]
fn a_board_source_on_host_b_lists_a_mission_host_a_fires() {
    let (a, b) = two_hosts(ASK_AND_WAIT);
    let src = Source::open(
        &Location::Postgres(b.store_url.clone().unwrap()),
        Box::new(|| (1, 0)),
        false,
    )
    .unwrap();
    let before = snapshot::build(&src, &Query::default());
    assert_eq!(before.total_missions, 0, "{:?}", before.store_error);
    let a_log = a.cwd.join("transcript.log");
    let fire = host_fire(&a, "deploy from host A", &a_log);
    let row = wait_for(20, "A's mission on B's board", || {
        let snap = snapshot::build(&src, &Query::default());
        snap.rows
            .into_iter()
            .find(|r| r.intent == "deploy from host A")
    });
    let asked = wait_for(20, "A's question on B's board", || {
        let snap = snapshot::build(&src, &Query::default());
        snap.asks
            .into_iter()
            .find(|q| q.mission_id.as_deref() == Some(&row.id))
    });
    b.run(&["approvals", "respond", &asked.id, "--answer", "go"])
        .ok();
    let fired = fire.join();
    assert_eq!(fired.code, 0, "{fired:?}");
    let landed = wait_for(20, "the landing on B's board", || {
        let snap = snapshot::build(&src, &Query::default());
        snap.rows
            .into_iter()
            .find(|r| r.id == row.id && r.status == missionboard::mission::Status::Landed)
    });
    assert_eq!(landed.agent, "stub");
}

#[test]
fn terminal_a_board_on_host_b_shows_host_a_missions_live() {
    let (a, b) = two_hosts(ASK_AND_WAIT);
    let term = crate::board::board_in_terminal(&b, "", "board");
    term.wait_screen(30, "B's board to draw", |s| s.contains("Pending asks"));
    let a_log = a.cwd.join("transcript.log");
    let fire = host_fire(&a, "deploy from host A", &a_log);
    // Nobody touches B's board: what it shows arrives over the shared store.
    term.wait_screen(30, "A's mission on B's board", |s| {
        s.contains("deploy from host A")
    });
    term.wait_screen(30, "A's question on B's board", |s| s.contains("Ship it?"));
    let id = a.newest_mission().unwrap();
    let ask = wait_for(20, "the question", || {
        show_json(&a, &id)["pendingAsks"][0]["id"]
            .as_str()
            .map(str::to_string)
    });
    a.run(&["approvals", "respond", &ask, "--answer", "go"])
        .ok();
    let fired = fire.join();
    assert_eq!(fired.code, 0, "{fired:?}");
    term.wait_screen(30, "the landing on B's board", |s| {
        s.lines()
            .any(|l| l.contains("deploy from host A") && l.contains("landed"))
    });
    let screen = term.quit();
    assert!(screen.contains("EXITED:0"), "{screen}");
}
