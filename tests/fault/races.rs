//! Races end in exactly one outcome: agent answers against their cap, a unit's
//! verdict against an operator's stop and the reclaim sweep. Each racer holds its own
//! connection to the file, as separate processes do.

use std::process::Stdio;
use std::sync::{Arc, Barrier};

use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS, bounds};
use missionboard::fleet::sweep;
use missionboard::mission::{EnvelopeName, Intent, Missions, NewMission, Status, subjects};
use missionboard::ops::host::{Host, Hosting};
use missionboard::ops::stop::stop_mission;
use missionboard::paths::Paths;
use missionboard::store::Store;

use crate::harness::Sandbox;
use crate::integrity;

const CAP: i64 = 7;

#[test]
fn a_thousand_racing_agent_answers_land_exactly_the_cap() {
    const QUESTIONS: usize = 1000;
    const THREADS: usize = 16;
    const PROCESSES: usize = 16;
    let sb = Sandbox::new();
    sb.write(
        &sb.home.join("hitl-policy-capped.json"),
        &format!(
            r#"{{"default_action":"approve","rules":[],"attention":{{"allowAgentAnswers":true,"maxAgentAnswers":{CAP}}}}}"#
        ),
    );
    let store = sb.store();
    let mission = Missions::new(store.clone())
        .create(NewMission::new(
            "stub",
            Intent::new("a thousand questions").unwrap(),
            EnvelopeName::new("capped").unwrap(),
        ))
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
    // The first answers come from separate `approvals respond --as-agent` processes,
    // the rest from threads, each thread on its own connection; all start together.
    let children: Vec<_> = ids[..PROCESSES]
        .iter()
        .map(|id| {
            let mut c = sb.command(&[
                "approvals",
                "respond",
                id,
                "--answer",
                "routine",
                "--as-agent",
                "bot",
            ]);
            c.env("MISSIONBOARD_OPT_IN_BETA", "1")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let paths = Paths::resolve(sb.home.clone(), sb.cwd.clone());
    let rest = Arc::new(ids[PROCESSES..].to_vec());
    let start = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let (rest, start, paths, db) = (rest.clone(), start.clone(), paths.clone(), sb.location());
            std::thread::spawn(move || {
                let store = Store::open_at(&db).unwrap();
                let (asks, missions) = (Asks::new(store.clone()), Missions::new(store));
                start.wait();
                let mut landed = 0;
                let mut refused = 0;
                for id in rest.iter().skip(t).step_by(THREADS) {
                    match bounds::answer_as_agent_within_bounds(&paths, &asks, &missions, id, "bot", "routine", &missionboard::asks::Surface::Cli) {
                        Ok(_) => landed += 1,
                        Err(bounds::AgentAnswerError::Refused(why)) => {
                            assert!(why.contains(&format!("spent its agent-answer bound ({CAP} of {CAP}); this question waits for a human")), "{why}");
                            refused += 1;
                        }
                        Err(e) => panic!("unexpected failure: {e}"),
                    }
                }
                (landed, refused)
            })
        })
        .collect();
    let (mut landed, mut refused) = (0, 0);
    for t in threads {
        let (l, r) = t.join().unwrap();
        landed += l;
        refused += r;
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        if out.status.success() {
            landed += 1;
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("spent its agent-answer bound"), "{err}");
            refused += 1;
        }
    }
    assert_eq!(landed, CAP, "exactly the cap landed");
    assert_eq!(refused, QUESTIONS as i64 - CAP);
    assert_eq!(
        bounds::count(&asks, &mission.id).unwrap(),
        CAP,
        "the durable count agrees"
    );
    assert_eq!(asks.pending_count().unwrap(), QUESTIONS as i64 - CAP);
    assert_eq!(integrity(&sb), "ok");
}

/// Status-change events the bus holds for `id`.
fn status_events(missions: &Missions, id: &str) -> usize {
    missions
        .bus()
        .since(0, 100_000)
        .unwrap()
        .into_iter()
        .filter(|e| e.subject == subjects::STATUS_CHANGED && e.data["missionId"] == id)
        .count()
}

#[test]
fn a_verdict_racing_a_stop_and_a_sweep_ends_in_exactly_one_terminal_state() {
    // At least TRIALS, and on until each racer has won some: a race one side never
    // wins proves nothing about the guard. Bounded, so a side that cannot win fails.
    const TRIALS: usize = 200;
    const MAX_TRIALS: usize = 2000;
    let sb = Sandbox::new();
    let store = sb.store();
    let missions = Missions::new(store.clone());
    let mut wins = [0usize; 3];
    let mut trial = 0;
    while trial < MAX_TRIALS && (trial < TRIALS || wins.contains(&0)) {
        trial += 1;
        let m = missions
            .create(NewMission::new(
                "stub",
                Intent::new(&format!("race {trial}")).unwrap(),
                EnvelopeName::new("default").unwrap(),
            ))
            .unwrap();
        // Silent for seven hours: the sweep's default floor (six) says its host is gone.
        store
            .with(|c| {
                c.execute(
                    "UPDATE missions SET created_at = created_at - 25200000 WHERE id = ?1",
                    missionboard::store::sql::params![m.id],
                )
            })
            .unwrap();
        let start = Arc::new(Barrier::new(3));
        let racer = |which: usize| {
            let (start, db, id) = (start.clone(), sb.location(), m.id.clone());
            let paths = Paths::resolve(sb.home.clone(), sb.cwd.clone());
            std::thread::spawn(move || {
                let store = Store::open_at(&db).unwrap();
                let (missions, asks) = (Missions::new(store.clone()), Asks::new(store.clone()));
                let host = Host::open(&paths, &store, Hosting::OnNeed).unwrap();
                start.wait();
                match which {
                    0 => missions
                        .finish(&id, Status::Landed, "the unit's verdict")
                        .is_ok(),
                    1 => stop_mission(&host, &id, Some("the operator's stop")).is_ok(),
                    _ => sweep::reclaim(&missions, &asks).unwrap() == 1,
                }
            })
        };
        let racers: Vec<_> = (0..3).map(racer).collect();
        let ok: Vec<bool> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let after = missions.require(&m.id).unwrap();
        let reason = after.status_reason.clone().unwrap_or_default();
        let winner = match (after.status, reason.as_str()) {
            (Status::Landed, "the unit's verdict") => 0,
            (Status::Abandoned, "the operator's stop") => 1,
            (Status::Abandoned, r) if r.starts_with("reclaimed") => 2,
            other => panic!("trial {trial}: unexpected end state {other:?}"),
        };
        wins[winner] += 1;
        assert!(
            ok[winner],
            "trial {trial}: the winner saw its write land: {ok:?}"
        );
        assert!(
            !ok[0] || winner == 0,
            "trial {trial}: a losing verdict is refused"
        );
        assert!(
            !ok[2] || winner == 2,
            "trial {trial}: a losing sweep reclaims nothing"
        );
        assert_eq!(
            status_events(&missions, &m.id),
            1,
            "trial {trial}: one transition announced"
        );
    }
    assert!(
        !wins.contains(&0),
        "each of the verdict, the stop and the sweep won some of {trial} trials: {wins:?}"
    );
    assert_eq!(integrity(&sb), "ok");
}
