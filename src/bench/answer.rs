//! Answer round-trip: an operator's answer committed → the waiting stub unit holds
//! its tool result (it says so over ACP, which is where the clock stops). Measured
//! for an answer from this process (the waiter's own `Asks` wakes it at once) and
//! from another connection to the store, as `approvals respond` in another process,
//! or a board on another host, is (the commit is pushed to the waiter:
//! `store::changes`, inotify on the file, LISTEN/NOTIFY on PostgreSQL).
//!
//! The floor is the same work minus ours, by construction: the same stub asks
//! through the same bridge and socket, a bare server raises the same durable row
//! and holds the question, the same driver finds the row the same way, lets the
//! store settle the same way, and commits the same guarded answer on the same
//! connection; then the bare server is woken the same way (in this process: told
//! at once, as `Asks::answer` wakes its waiter; from another connection: the next
//! tick of the store's change feed) and answers with the words it was given —
//! no re-read of the row, no claim for delivery, no heartbeat. So the ratio is
//! what our waiting, re-reading and delivery bookkeeping cost on top.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::scratch::{Scratch, one_turn, seed, until};
use super::{Latency, Row, Scale};
use crate::acp_client::{Unit, UnitEvent, UnitSpec};
use crate::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};
use crate::fleet::mission_tools::MissionToolCalls;
use crate::mission::{Missions, NewMission};
use crate::mission_mcp::{MissionToolHandler, bridge_server_entry, serve_mission_socket};
use crate::store::{Store, Waiter, blocking};

/// How long the store is left quiet once the question is pending, before the
/// answer's clock starts: longer than the change feed's trailing ticks after the
/// question's own commit, so no tick of it wakes either side early.
const QUIET: Duration = Duration::from_millis(15);

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
            if matches!(&ev, UnitEvent::AgentText { text: t, .. } if t.contains(want)) {
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

/// How the bare server learns that its question was answered.
enum Wake {
    /// Told in this process once the answer commits, as `Asks::answer` wakes a
    /// waiter of its own.
    Told(oneshot::Receiver<()>),
    /// The next tick of the store's change feed (subscribed before the commit).
    Pushed(Waiter),
}

/// A held question of the bare server: its row, and where its answer comes from.
struct Held {
    ask_id: String,
    answer: oneshot::Sender<(String, Wake)>,
}

/// The floor's server: raises the same durable row our handler raises for a
/// question (untimed: it happens before the driver finds it), then answers with the
/// words it is handed once woken — reading nothing back, writing nothing more.
struct BareAsker {
    asks: Asks,
    mission_id: String,
    held: mpsc::UnboundedSender<Held>,
}

impl MissionToolHandler for BareAsker {
    fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<String, String>> {
        if tool != crate::mission_mcp::MISSION_ASK_ATTENTION {
            return Box::pin(async { Ok("ok".to_string()) });
        }
        let (asks, mission_id, held) = (
            self.asks.clone(),
            self.mission_id.clone(),
            self.held.clone(),
        );
        Box::pin(async move {
            let summary = args
                .get("summary")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let ask = blocking(move || {
                asks.raise(NewAsk {
                    tools_name: QUESTION_TOOLS.into(),
                    tool_name: QUESTION_TOOL.into(),
                    args_summary: summary,
                    agent_name: "stub".into(),
                    mission_id: Some(mission_id),
                    ..Default::default()
                })
            })
            .await
            .map_err(|e| e.to_string())?;
            let (answer, answered) = oneshot::channel();
            held.send(Held {
                ask_id: ask.id,
                answer,
            })
            .map_err(|_| "bench: the driver went away".to_string())?;
            let (words, wake) = answered
                .await
                .map_err(|_| "bench: the driver went away".to_string())?;
            match wake {
                Wake::Told(told) => {
                    told.await
                        .map_err(|_| "bench: the driver went away".to_string())?;
                }
                Wake::Pushed(mut feed) => feed.next(LIMIT).await,
            }
            Ok(words)
        })
    }
}

/// The driver's two halves: who commits the answer (our `Asks`, whose waiters it
/// wakes, or another connection's), and samples of each.
struct Answerers {
    here: Asks,
    elsewhere: Asks,
}

/// Until `mission_id` has a pending question; then the store is left quiet.
async fn pending_question(elsewhere: &Asks, mission_id: &str) -> anyhow::Result<String> {
    let mut ask_id = None;
    until(
        "the stub's question",
        LIMIT,
        Duration::from_millis(1),
        || {
            ask_id = elsewhere
                .pending_questions(Some(mission_id), 1)
                .ok()
                .and_then(|p| p.first().map(|a| a.id.clone()));
            ask_id.is_some()
        },
    )
    .await?;
    tokio::time::sleep(QUIET).await;
    Ok(ask_id.expect("found above"))
}

/// Commit `words` as the answer to `ask_id`, through this process's `Asks` when
/// `here`, else through the other connection.
async fn commit(by: &Answerers, here: bool, ask_id: &str, words: &str) -> anyhow::Result<()> {
    let by = if here { &by.here } else { &by.elsewhere }.clone();
    let (ask_id, words) = (ask_id.to_string(), words.to_string());
    blocking(move || by.answer(&ask_id, &words, &crate::asks::Surface::Cli)).await?;
    Ok(())
}

fn mission(missions: &Missions, intent: &str) -> anyhow::Result<String> {
    Ok(missions
        .create(NewMission {
            intent: intent.into(),
            agent_name: "stub".into(),
            envelope_name: super::scratch::POLICY.into(),
            ..Default::default()
        })?
        .id)
}

/// The floor: `rounds` answers each way to the bare server, alternately.
async fn floor(
    scratch: &Scratch,
    by: &Answerers,
    missions: &Missions,
    rounds: usize,
) -> anyhow::Result<(Latency, Latency)> {
    let mission_id = mission(missions, "answer floor")?;
    let (held, mut questions) = mpsc::unbounded_channel();
    let bare = Arc::new(BareAsker {
        asks: Asks::new(scratch.store.clone()),
        mission_id: mission_id.clone(),
        held,
    });
    let (unit, mut events, _socket) =
        asking_unit(scratch, "answer-floor", &mission_id, (rounds + 1) * 2, bare).await?;
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    let driver = async {
        for i in 0..(rounds + 1) * 2 {
            let ask_id = pending_question(&by.elsewhere, &mission_id).await?;
            let question = tokio::time::timeout(LIMIT, questions.recv())
                .await
                .ok()
                .flatten()
                .ok_or_else(|| anyhow::anyhow!("bench: the floor stub never asked"))?;
            anyhow::ensure!(
                question.ask_id == ask_id,
                "bench: the floor's question is not the pending one"
            );
            let words = format!("f{i}");
            let here = i % 2 == 0;
            let t;
            if here {
                let (tell, told) = oneshot::channel();
                let _ = question.answer.send((words.clone(), Wake::Told(told)));
                t = Instant::now();
                commit(by, here, &ask_id, &words).await?;
                let _ = tell.send(());
            } else {
                let feed = scratch.store.changes().subscribe();
                let _ = question.answer.send((words.clone(), Wake::Pushed(feed)));
                t = Instant::now();
                commit(by, here, &ask_id, &words).await?;
            }
            heard(&mut events, &format!("got {words}")).await?;
            // The first answer each way warms its path; it is not a sample.
            if i >= 2 {
                if here { &mut local } else { &mut remote }.push(t.elapsed());
            }
        }
        anyhow::Ok(())
    };
    let (turn, driven) = tokio::join!(unit.prompt(vec!["answer floor".into()]), driver);
    driven?;
    turn?;
    unit.shutdown().await;
    Ok((Latency::of(&mut local), Latency::of(&mut remote)))
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    // The store holds the scale's missions, so the waiter's reads are at that size.
    seed(&scratch, scale.missions, 0)?;
    let rounds = scale.samples;
    let missions = Missions::new(scratch.store.clone());
    let asks = Asks::new(scratch.store.clone());
    // Another connection to the same store: what `approvals respond` in another
    // process, or another host, holds. Its Asks has no waiters of ours to wake.
    let by = Answerers {
        here: asks.clone(),
        elsewhere: Asks::new(Store::open_at(scratch.store.location())?),
    };
    let (floor_here, floor_elsewhere) = floor(&scratch, &by, &missions, rounds).await?;

    let mission_id = mission(&missions, "answer round-trips")?;
    let calls = MissionToolCalls {
        mission_id: mission_id.clone(),
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
    let (unit, mut events, _socket) = asking_unit(
        &scratch,
        "answer",
        &mission_id,
        (rounds + 1) * 2,
        Arc::new(calls),
    )
    .await?;

    let mut local = Vec::new();
    let mut remote = Vec::new();
    let driver = async {
        for i in 0..(rounds + 1) * 2 {
            let ask_id = pending_question(&by.elsewhere, &mission_id).await?;
            let words = format!("a{i}");
            let here = i % 2 == 0;
            let t = Instant::now();
            commit(&by, here, &ask_id, &words).await?;
            heard(&mut events, &format!("got {words}")).await?;
            if i >= 2 {
                if here { &mut local } else { &mut remote }.push(t.elapsed());
            }
        }
        anyhow::Ok(())
    };
    let (turn, driven) = tokio::join!(unit.prompt(vec!["answer bench".into()]), driver);
    driven?;
    turn?;
    unit.shutdown().await;

    let floor_here_is = format!(
        "the same stub, bridge and socket; a bare server raises the same row and holds the question; the same guarded answer committed here, the server told at once and answering with the words it was handed (no re-read, no delivery claim) ({rounds} samples)"
    );
    let floor_elsewhere_is = format!(
        "the same, the answer committed through another connection and the bare server woken by the store's next pushed tick ({}) ({rounds} samples)",
        if scale.postgres {
            "one commit's NOTIFY received on this process's LISTEN connection"
        } else {
            "inotify on the file's log"
        }
    );
    let at = format!("{} missions", scale.missions);
    Ok(vec![
        Row::latency(
            &format!("answer round-trip, answered in-process ({at})"),
            Latency::of(&mut local),
            floor_here,
            &floor_here_is,
        )
        .within(Some(1.5), None, None),
        Row::latency(
            &format!("answer round-trip, answered from another process or host ({at})"),
            Latency::of(&mut remote),
            floor_elsewhere,
            &floor_elsewhere_is,
        )
        // Milliseconds promised for the embedded file; on PostgreSQL an answer from
        // another host must reach the unit within 5 ms (median).
        .within(
            Some(1.5),
            Some(if scale.postgres { 5.0 } else { 2.0 }),
            (!scale.postgres).then_some(10.0),
        ),
    ])
}
