//! Claim latency through the durable queue: a mission queued → its unit's first
//! prompt at the stub, with a `missionboard host` (in this process, width 1) doing
//! the claiming, beside the floor: the same path minus ours — the same queueing
//! commit (of a row queued for a label no host carries), the store's next pushed
//! tick (what wakes the host), the same guarded claim write, then the fire floor's
//! bare start of the same stub to its first prompt. And fleet throughput through the
//! queue: `units` missions queued at once and run to landed by a host as wide,
//! beside the same missions dispatched straight to a fleet (the queue's path minus
//! the queueing and the claim), each side warmed once and then run in alternate
//! rounds, its median round reported.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::fire::{DETECT, arrived, bare_first_prompt, bare_unit};
use super::scratch::{POLICY, Scratch, child_processes, report_and_land, until};
use super::{Latency, Row, Scale};
use crate::host::HostId;
use crate::mission::queue::NewQueued;
use crate::mission::{EnvelopeName, Intent, Missions, Status};
use crate::store::blocking;

const THROUGHPUT_LIMIT: Duration = Duration::from_secs(180);
const THROUGHPUT_TARGET: f64 = 1.25;
/// The claim's target: as the fire overhead's, the bare start being most of both.
const CLAIM_TARGET: f64 = 1.5;
/// The label the floor's rows are queued for: the bench's host never takes them.
const FLOOR_LABEL: &str = "bench-floor";

fn queued(scratch: &Scratch, intent: &str, run_on: Option<&str>) -> anyhow::Result<NewQueued> {
    Ok(NewQueued {
        intent: Intent::new(intent)?,
        agent_name: "stub".into(),
        envelope: EnvelopeName::new(POLICY)?,
        cwd: scratch.paths.cwd.display().to_string(),
        worktree: false,
        run_on: run_on.map(str::to_string),
        check: None,
    })
}

/// A `missionboard host` in this process, up and claiming.
struct Daemon {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Daemon {
    /// Start one `width` wide and return once it is up: a figure's clock starts
    /// there, as the direct run's starts once its fleet is built, so both measure
    /// the missions, not the boot.
    async fn start(scratch: &Scratch, width: u64) -> Daemon {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let ready = Arc::new(tokio::sync::Notify::new());
        let up = ready.clone();
        let (paths, store) = (scratch.paths.clone(), scratch.store.clone());
        let host = crate::store::blocking(move || crate::daemon::open_host(&paths, &store))
            .await
            .expect("the queue's host to open");
        let task = tokio::spawn(crate::daemon::run(
            host,
            crate::daemon::Options {
                width: Some(width),
                ..Default::default()
            },
            async {
                let _ = stopped.await;
            },
            move |event| {
                if matches!(event, crate::daemon::Event::Started { .. }) {
                    up.notify_one();
                }
            },
        ));
        ready.notified().await;
        Daemon { stop, task }
    }

    async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.task.await?
    }
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    let transcript = scratch.declare_landing_stub()?;
    let (bare_spec, _socket) = bare_unit(&scratch, &transcript).await?;
    let missions = Missions::new(scratch.store.clone());
    let limit = Duration::from_secs(30);
    // One untimed round of each first; each round spawns an agent, so a fifth of
    // the samples keeps the run short.
    let rounds = (scale.samples / 5).max(3);

    // The host is up only for its own rounds: woken by the floor's commit, its
    // claim would contend with the floor's for the one write lock.
    let host = Daemon::start(&scratch, 1).await;
    let mut claimed = Vec::new();
    for round in 0..=rounds {
        let _ = std::fs::remove_file(&transcript);
        let (svc, new) = (missions.clone(), queued(&scratch, "queue bench", None)?);
        let t = Instant::now();
        let m = blocking(move || svc.enqueue(new)).await?;
        until("the first prompt at the stub", limit, DETECT, || {
            arrived(&transcript)
        })
        .await?;
        let took = t.elapsed();
        let svc = missions.clone();
        until(
            "the mission to land",
            limit,
            Duration::from_millis(5),
            || matches!(svc.get(&m.id), Ok(Some(m)) if m.status == Status::Landed),
        )
        .await?;
        // Its unit gone too, as the floor's is before its next sample.
        until(
            "the landed unit to exit",
            limit,
            Duration::from_millis(1),
            || child_processes() == 0,
        )
        .await?;
        if round > 0 {
            claimed.push(took);
        }
    }
    host.stop().await?;

    let mut floor = Vec::new();
    for round in 0..=rounds {
        let _ = std::fs::remove_file(&transcript);
        let mut woken = scratch.store.changes().subscribe();
        let (svc, new) = (
            missions.clone(),
            queued(&scratch, "floor", Some(FLOOR_LABEL))?,
        );
        let t = Instant::now();
        let m = blocking(move || svc.enqueue(new)).await?;
        woken.next(limit).await;
        let svc = missions.clone();
        let got = blocking(move || {
            svc.claim_queued(&HostId::current(), &[FLOOR_LABEL.to_string()], &|_| true)
        })
        .await?;
        anyhow::ensure!(
            got.is_some_and(|c| c.mission.id == m.id),
            "bench: the floor's claim took another row"
        );
        let took = bare_first_prompt(&bare_spec, &transcript, t, limit).await?;
        let svc = missions.clone();
        blocking(move || svc.finish(&m.id, Status::Abandoned, "bench floor")).await?;
        if round > 0 {
            floor.push(took);
        }
    }
    Ok(vec![
        Row::latency(
            "claim latency (queued → first prompt at the stub, via missionboard host)",
            Latency::of(&mut claimed),
            Latency::of(&mut floor),
            "the same queueing commit, the store's next pushed tick, the same guarded claim write (queued → open), then a bare start of the same stub to its first prompt (as the fire floor)",
        )
        .within(Some(CLAIM_TARGET), None, None),
    ])
}

/// Until no mission of the store is open or waiting in the queue.
async fn until_all_rest(missions: &Missions, what: &str) -> anyhow::Result<()> {
    until(what, THROUGHPUT_LIMIT, Duration::from_millis(5), || {
        // The queue first: a claim moves a mission from it to open between the two
        // reads, never back, so nothing queued and then nothing open is at rest.
        missions.list_queued(1).is_ok_and(|q| q.is_empty())
            && missions.counts().is_ok_and(|(_, open)| open == 0)
    })
    .await
}

/// Every one of `ids` landed.
fn all_landed(missions: &Missions, ids: &[String]) -> anyhow::Result<()> {
    for id in ids {
        let m = missions.require(id)?;
        anyhow::ensure!(
            m.status == Status::Landed,
            "bench: mission {id} came to rest {:?}, not landed",
            m.status.as_str()
        );
    }
    Ok(())
}

/// One round of `n` missions dispatched straight to a fleet, to landed: missions/s.
async fn direct_round(scratch: &Scratch, missions: &Missions, n: usize) -> anyhow::Result<f64> {
    no_units_left().await?;
    let direct = scratch.host()?;
    let t = Instant::now();
    let dispatched = futures::future::try_join_all((0..n).map(|i| {
        let direct = direct.clone();
        async move {
            let f = crate::ops::fire::Fire::new(
                "stub",
                EnvelopeName::new(POLICY)?,
                Intent::new(&format!("direct {i}"))?,
            );
            crate::ops::fire::dispatch(&direct, f).await
        }
    }))
    .await?;
    until_all_rest(missions, "every direct mission to rest").await?;
    let rate = n as f64 / t.elapsed().as_secs_f64();
    let ids: Vec<String> = dispatched.into_iter().map(|d| d.mission_id).collect();
    all_landed(missions, &ids)?;
    direct.close("the direct round ended").await;
    Ok(rate)
}

/// One round of `n` missions queued at once and run by a host as wide: missions/s
/// (clocked once the host is up, as the direct round's is once its host is open).
async fn queued_round(scratch: &Scratch, missions: &Missions, n: usize) -> anyhow::Result<f64> {
    no_units_left().await?;
    let host = Daemon::start(scratch, n as u64).await;
    let batch: Vec<NewQueued> = (0..n)
        .map(|i| queued(scratch, &format!("queued {i}"), None))
        .collect::<anyhow::Result<_>>()?;
    let t = Instant::now();
    let svc = missions.clone();
    let ids = blocking(move || -> anyhow::Result<Vec<String>> {
        batch.into_iter().map(|q| Ok(svc.enqueue(q)?.id)).collect()
    })
    .await?;
    until_all_rest(missions, "every queued mission to rest").await?;
    let rate = n as f64 / t.elapsed().as_secs_f64();
    host.stop().await?;
    all_landed(missions, &ids)?;
    Ok(rate)
}

/// Until the last round's units have all exited, so no round pays another's
/// teardown.
async fn no_units_left() -> anyhow::Result<()> {
    until(
        "the last round's units to exit",
        THROUGHPUT_LIMIT,
        Duration::from_millis(1),
        || child_processes() == 0,
    )
    .await
}

fn median(mut rates: Vec<f64>) -> f64 {
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// Missions/s to landed: `units` missions queued at once and run by a host as wide
/// (in this process), beside the same missions dispatched straight to a fleet. Each
/// side runs once unclocked (a process's first connections, threads and spawns are
/// not the per-mission cost), then in alternate rounds; each figure is its median.
pub async fn throughput(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    scratch.declare_stub("stub", &report_and_land(), &[])?;
    let missions = Missions::new(scratch.store.clone());
    let n = scale.units;
    let rounds = if scale.quick { 1 } else { 5 };
    direct_round(&scratch, &missions, n).await?;
    queued_round(&scratch, &missions, n).await?;
    let (mut direct, mut queue) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        direct.push(direct_round(&scratch, &missions, n).await?);
        queue.push(queued_round(&scratch, &missions, n).await?);
    }
    let (direct_rate, queued_rate) = (median(direct), median(queue));

    Ok(vec![
        Row::rate(
            &format!(
                "queue throughput ({n} missions queued at once, a host of width {n}, to landed)"
            ),
            queued_rate,
            "missions/s",
            direct_rate,
            &format!("the same missions dispatched straight to a fleet in the same run (fire, to landed; each side warmed once, then the median of {rounds} alternate rounds)"),
        )
        .target(
            format!("≤ {THROUGHPUT_TARGET}x floor"),
            direct_rate / queued_rate <= THROUGHPUT_TARGET,
        ),
    ])
}
