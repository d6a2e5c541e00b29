//! Claim latency through the durable queue: a mission queued → its unit's first
//! prompt at the stub, with a `missionboard host` (in this process, width 1) doing
//! the claiming, beside the floor: the same guarded claim write alone, on a row
//! queued for a label no host carries.

use std::path::Path;
use std::time::{Duration, Instant};

use super::scratch::{POLICY, Scratch, until};
use super::{Latency, Row, Scale};
use crate::host::HostId;
use crate::mission::queue::NewQueued;
use crate::mission::{EnvelopeName, Intent, Missions, Status};
use crate::store::blocking;

const DETECT: Duration = Duration::from_micros(100);
/// The label the floor's rows are queued for: the bench's host never takes them.
const FLOOR_LABEL: &str = "bench-floor";

fn arrived(transcript: &Path) -> bool {
    std::fs::metadata(transcript).is_ok_and(|m| m.len() > 0)
}

fn queued(scratch: &Scratch, intent: &str, run_on: Option<&str>) -> anyhow::Result<NewQueued> {
    Ok(NewQueued {
        intent: Intent::new(intent)?,
        agent_name: "stub".into(),
        envelope: EnvelopeName::new(POLICY)?,
        cwd: scratch.paths.cwd.display().to_string(),
        worktree: false,
        run_on: run_on.map(str::to_string),
    })
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    let transcript = scratch.declare_landing_stub()?;
    let missions = Missions::new(scratch.store.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let host = tokio::spawn(crate::daemon::run(
        scratch.paths.clone(),
        scratch.store.clone(),
        crate::daemon::Options {
            width: Some(1),
            ..Default::default()
        },
        async {
            let _ = stopped.await;
        },
        |_| {},
    ));
    let limit = Duration::from_secs(30);
    let (mut claimed, mut floor) = (Vec::new(), Vec::new());
    for round in 0..=(scale.samples / 5).max(3) {
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

        let (svc, new) = (
            missions.clone(),
            queued(&scratch, "floor", Some(FLOOR_LABEL))?,
        );
        let floor_took = blocking(move || -> anyhow::Result<Duration> {
            let m = svc.enqueue(new)?;
            let me = HostId::current();
            let t = Instant::now();
            let got = svc.claim_queued(&me, &[FLOOR_LABEL.to_string()], &|_| true)?;
            let took = t.elapsed();
            anyhow::ensure!(
                got.is_some_and(|c| c.mission.id == m.id),
                "bench: the floor's claim took another row"
            );
            svc.finish(&m.id, Status::Abandoned, "bench floor")?;
            Ok(took)
        })
        .await?;
        if round > 0 {
            claimed.push(took);
            floor.push(floor_took);
        }
    }
    let _ = stop.send(());
    host.await??;
    Ok(vec![Row::latency(
        "claim latency (queued → first prompt at the stub, via missionboard host)",
        Latency::of(&mut claimed),
        Latency::of(&mut floor),
        "the guarded claim write alone (queued → open, one transaction)",
    )])
}
