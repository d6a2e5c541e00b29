//! Answer round-trip: an operator's answer committed → the waiting stub unit holds
//! its tool result (it says so over ACP, which is where the clock stops). Measured
//! for an answer from this process (the waiter is woken at once) and from another
//! connection, as `approvals respond` in another process is (the waiter sees it on
//! its next poll of the row, so its answers are spread over the poll period). The
//! floor is one WAL commit on the same file.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::scratch::{Scratch, one_turn, until};
use super::{Row, Scale, median_ms};
use crate::acp::{Unit, UnitEvent, UnitSpec};
use crate::asks::{Asks, POLL_INTERVAL};
use crate::config::Config;
use crate::fleet::mission_tools::MissionToolCalls;
use crate::mission::{Missions, NewMission};
use crate::store::Store;
use crate::tools::{bridge_server_entry, serve_mission_socket};

/// The median of `samples` trivial commits through the config service.
pub fn commit_floor(store: &Store, samples: usize) -> anyhow::Result<f64> {
    let config = Config::new(store.clone());
    let mut times = Vec::with_capacity(samples);
    for i in 0..samples.max(10) {
        let t = Instant::now();
        config.set(crate::config::ASK_PARK_WINDOW, &format!("{}s", 60 + i % 2))?;
        times.push(t.elapsed());
    }
    Ok(median_ms(&mut times))
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new()?;
    let commit = commit_floor(&scratch.store, scale.samples * 5)?;

    let missions = Missions::new(scratch.store.clone());
    let asks = Asks::new(scratch.store.clone());
    let mission = missions.create(NewMission {
        intent: "answer round-trips".into(),
        agent_name: "stub".into(),
        policy_name: super::scratch::POLICY.into(),
        ..Default::default()
    })?;
    // Two rounds per sample: one answered here, one through another connection.
    let rounds = scale.samples * 2;
    let steps: Vec<Value> = (0..rounds)
        .map(|i| json!({"ask": {"summary": format!("q{i}"), "then": {"say": "got {{answer}}"}}}))
        .chain([json!({"finish": "landed"})])
        .collect();
    let script = scratch.write_script("answer", &one_turn(Value::Array(steps)))?;

    let socket_path = scratch.home().join("answer.sock");
    let calls = MissionToolCalls {
        mission_id: mission.id.clone(),
        missions: missions.clone(),
        asks: asks.clone(),
        workdir: scratch.paths.cwd.display().to_string(),
        agent_name: "stub".into(),
        session_id: String::new(),
        ask_ceiling: None,
        park_window: Duration::from_secs(120),
    };
    let socket = serve_mission_socket(&socket_path, Arc::new(calls)).await?;
    let bare = scratch.stub_unit(&script, &mission.id)?;
    let mut unit = Unit::start(UnitSpec {
        mcp_servers: vec![bridge_server_entry(&bare.program, &socket)],
        pid_slot: Some(socket.unit_pid_slot()),
        ..bare
    })
    .await?;
    let mut events = unit.take_events().expect("fresh unit");
    // Another connection to the same file: what `approvals respond` in another
    // process holds. Its Asks has no waiters of ours to wake.
    let elsewhere = Asks::new(Store::open(scratch.store.path())?);

    let mut local = Vec::new();
    let mut remote = Vec::new();
    let driver = async {
        for i in 0..rounds {
            let mut ask_id = None;
            until(
                "the stub's question",
                Duration::from_secs(30),
                Duration::from_millis(1),
                || {
                    ask_id = elsewhere
                        .pending(1)
                        .ok()
                        .and_then(|p| p.first().map(|a| a.id.clone()));
                    ask_id.is_some()
                },
            )
            .await?;
            let ask_id = ask_id.expect("found above");
            // Operators answer at any moment: spread the answers evenly over the
            // waiter's poll period (deterministically), instead of always landing
            // just after a poll, which would measure the worst case every time.
            let phase = POLL_INTERVAL.mul_f64(((i / 2) * 37 % 100) as f64 / 100.0);
            tokio::time::sleep(phase).await;
            let answer = format!("a{i}");
            let t = Instant::now();
            if i % 2 == 0 {
                asks.answer(&ask_id, &answer)?;
            } else {
                elsewhere.answer(&ask_id, &answer)?;
            }
            let want = format!("got {answer}");
            let heard = tokio::time::timeout(Duration::from_secs(30), async {
                while let Some(ev) = events.recv().await {
                    if matches!(&ev, UnitEvent::AgentText(t) if t.contains(&want)) {
                        return true;
                    }
                }
                false
            })
            .await;
            anyhow::ensure!(
                matches!(heard, Ok(true)),
                "bench: the stub never said {want:?}"
            );
            if i % 2 == 0 { &mut local } else { &mut remote }.push(t.elapsed());
        }
        anyhow::Ok(())
    };
    let (turn, driven) = tokio::join!(unit.prompt(vec!["answer bench".into()]), driver);
    driven?;
    turn?;
    unit.shutdown().await;

    let poll = POLL_INTERVAL.as_secs_f64() * 1e3;
    let limit = 3.0 * commit + poll;
    let target = format!("≤ {limit:.1} ms (3x commit + {poll:.0} ms poll)");
    let floor_is = format!(
        "one WAL commit on the same file (config set), median of {}",
        scale.samples * 5
    );
    let slowest = remote.iter().max().map_or(0.0, |d| d.as_secs_f64() * 1e3);
    let mut rows = Vec::new();
    for (figure, samples) in [
        ("answer round-trip, answered in-process", &mut local),
        (
            "answer round-trip, answered from another process",
            &mut remote,
        ),
    ] {
        let ms = median_ms(samples);
        rows.push(
            Row::cost(figure, ms, "ms", commit, &floor_is).target(target.clone(), ms <= limit),
        );
    }
    // The worst case is one whole poll period plus the hop back to the unit; shown
    // so nobody mistakes the median for a bound.
    rows.push(Row::cost(
        "answer round-trip from another process, slowest",
        slowest,
        "ms",
        commit,
        &floor_is,
    ));
    Ok(rows)
}
