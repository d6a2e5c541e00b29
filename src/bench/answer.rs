//! Answer round-trip: an operator's answer committed → the waiting stub unit holds
//! its tool result (it says so over ACP, which is where the clock stops). Measured
//! for an answer from this process (the waiter's own `Asks` wakes it at once) and
//! from another connection to the file, as `approvals respond` in another process
//! is (the commit is pushed to the waiter: `store::changes`).
//!
//! The floor is the same hop done by a bare server: the same stub asks through the
//! same bridge and socket, the server holds the question as ours does, and when the
//! driver releases it commits one row and answers. Both clocks run between the same
//! two events — the driver starting the answer, and the stub saying it holds it —
//! so the ratio is what waiting, waking and re-reading the ask cost on top.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::bare::Bare;
use super::scratch::{Scratch, one_turn, seed, until};
use super::{Latency, Row, Scale};
use crate::acp_client::{Unit, UnitEvent, UnitSpec};
use crate::asks::Asks;
use crate::config::Config;
use crate::fleet::mission_tools::MissionToolCalls;
use crate::mission::{Missions, NewMission};
use crate::mission_mcp::{MissionToolHandler, bridge_server_entry, serve_mission_socket};
use crate::store::{Store, blocking};

const LIMIT: Duration = Duration::from_secs(30);

/// A stub that asks `rounds` questions through `handler` on its own socket, saying
/// `got <answer>` after each, then finishes.
async fn asking_unit(
    scratch: &Scratch,
    name: &str,
    mission_id: &str,
    rounds: usize,
    handler: Arc<dyn MissionToolHandler>,
) -> anyhow::Result<(
    Unit,
    mpsc::UnboundedReceiver<UnitEvent>,
    crate::mission_mcp::MissionSocket,
)> {
    let steps: Vec<Value> = (0..rounds)
        .map(|i| json!({"ask": {"summary": format!("q{i}"), "then": {"say": "got {{answer}}"}}}))
        .chain([json!({"finish": "landed"})])
        .collect();
    let script = scratch.write_script(name, &one_turn(Value::Array(steps)))?;
    let socket =
        serve_mission_socket(&scratch.home().join(format!("{name}.sock")), handler).await?;
    let bare = scratch.stub_unit(&script, mission_id)?;
    let mut unit = Unit::start(UnitSpec {
        mcp_servers: vec![bridge_server_entry(&bare.program, &socket, scratch.home())?],
        pid_slot: Some(socket.unit_pid_slot()),
        supervisor: None,
        ..bare
    })
    .await?;
    let events = unit.take_events().expect("fresh unit");
    Ok((unit, events, socket))
}

/// Until the unit says `want`.
async fn heard(events: &mut mpsc::UnboundedReceiver<UnitEvent>, want: &str) -> anyhow::Result<()> {
    let said = tokio::time::timeout(LIMIT, async {
        while let Some(ev) = events.recv().await {
            if matches!(&ev, UnitEvent::AgentText(t) if t.contains(want)) {
                return true;
            }
        }
        false
    })
    .await;
    anyhow::ensure!(
        matches!(said, Ok(true)),
        "bench: the stub never said {want:?}"
    );
    Ok(())
}

/// The floor: the held bare server's answers, each from its release.
async fn floor(scratch: &Scratch, rounds: usize) -> anyhow::Result<Latency> {
    let (bare, mut releases) = Bare::held(Config::new(scratch.store.clone()));
    let (unit, mut events, _socket) =
        asking_unit(scratch, "answer-floor", "bench-floor", rounds, bare).await?;
    let mut took = Vec::with_capacity(rounds);
    let driver = async {
        for i in 0..rounds {
            let release = tokio::time::timeout(LIMIT, releases.recv())
                .await
                .ok()
                .flatten()
                .ok_or_else(|| anyhow::anyhow!("bench: the floor stub never asked"))?;
            let t = Instant::now();
            let _ = release.send(());
            heard(&mut events, &format!("got answer-{i}")).await?;
            took.push(t.elapsed());
        }
        anyhow::Ok(())
    };
    let (turn, driven) = tokio::join!(unit.prompt(vec!["answer floor".into()]), driver);
    driven?;
    turn?;
    unit.shutdown().await;
    Ok(Latency::of(&mut took))
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    // The store holds the scale's missions, so the waiter's reads are at that size.
    seed(&scratch, scale.missions, 0)?;
    let rounds = scale.samples;
    let floor = floor(&scratch, rounds).await?;

    let missions = Missions::new(scratch.store.clone());
    let asks = Asks::new(scratch.store.clone());
    let mission = missions.create(NewMission {
        intent: "answer round-trips".into(),
        agent_name: "stub".into(),
        envelope_name: super::scratch::POLICY.into(),
        ..Default::default()
    })?;
    let calls = MissionToolCalls {
        mission_id: mission.id.clone(),
        missions: missions.clone(),
        asks: asks.clone(),
        workdir: scratch.paths.cwd.display().to_string(),
        agent_name: "stub".into(),
        session_id: String::new(),
        ask_ceiling: None,
        park_window: Duration::from_secs(120),
        link: Default::default(),
    };
    // Two rounds per sample: one answered here, one through another connection.
    let (unit, mut events, _socket) =
        asking_unit(&scratch, "answer", &mission.id, rounds * 2, Arc::new(calls)).await?;
    // Another connection to the same file: what `approvals respond` in another
    // process holds. Its Asks has no waiters of ours to wake.
    let elsewhere = Asks::new(Store::open_at(scratch.store.location())?);

    let mut local = Vec::new();
    let mut remote = Vec::new();
    let driver = async {
        for i in 0..rounds * 2 {
            let mut ask_id = None;
            until(
                "the stub's question",
                LIMIT,
                Duration::from_millis(1),
                || {
                    ask_id = elsewhere
                        .pending_questions(Some(&mission.id), 1)
                        .ok()
                        .and_then(|p| p.first().map(|a| a.id.clone()));
                    ask_id.is_some()
                },
            )
            .await?;
            let ask_id = ask_id.expect("found above");
            let answer = format!("a{i}");
            let by = if i % 2 == 0 { &asks } else { &elsewhere }.clone();
            let t = Instant::now();
            let text = answer.clone();
            blocking(move || by.answer(&ask_id, &text, &crate::asks::Surface::Cli)).await?;
            heard(&mut events, &format!("got {answer}")).await?;
            if i % 2 == 0 { &mut local } else { &mut remote }.push(t.elapsed());
        }
        anyhow::Ok(())
    };
    let (turn, driven) = tokio::join!(unit.prompt(vec!["answer bench".into()]), driver);
    driven?;
    turn?;
    unit.shutdown().await;

    let floor_is = format!(
        "the same stub asking through the same bridge and socket a bare server that holds the question, then commits one row and answers, from the answer's start to the stub holding it ({rounds} samples)"
    );
    let at = format!("{} missions", scale.missions);
    Ok(vec![
        Row::latency(
            &format!("answer round-trip, answered in-process ({at})"),
            Latency::of(&mut local),
            floor,
            &floor_is,
        )
        .within(Some(1.5), None, None),
        Row::latency(
            &format!("answer round-trip, answered from another process ({at})"),
            Latency::of(&mut remote),
            floor,
            &floor_is,
        )
        // Milliseconds promised for the embedded file; a PostgreSQL server's own
        // round trips can exceed them, so there the ratio is the target.
        .within(
            Some(1.5),
            (!scale.postgres).then_some(2.0),
            (!scale.postgres).then_some(10.0),
        ),
    ])
}
