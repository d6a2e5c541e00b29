//! The fleet at width: `units` concurrent stub missions to landed (missions/s), and
//! the host's resident memory per held unit. Each is set against the same work done
//! with bare ACP units (spawn, initialize, session/new, one turn) and no fleet, store
//! or mission tools. Resident-memory figures run in fresh processes, so neither is
//! measured over memory the other freed.

use std::time::{Duration, Instant};

use serde_json::json;

use super::scratch::{POLICY, Scratch, one_turn, rss_bytes, until, until_reaped};
use super::{Row, Scale};
use crate::acp::Unit;
use crate::fleet::DispatchRequest;
use crate::mission::Status;

const LIMIT: Duration = Duration::from_secs(120);
const MB: f64 = 1024.0 * 1024.0;
const RSS_TARGET_MB: f64 = 1.0;

fn request(agent: &str, i: usize) -> DispatchRequest {
    DispatchRequest {
        agent_name: agent.into(),
        intent: format!("fleet bench mission {i}"),
        policy_name: POLICY.into(),
        cwd: None,
        worktree: false,
    }
}

async fn bare_units(scratch: &Scratch, n: usize) -> anyhow::Result<Vec<Unit>> {
    let script = scratch.write_script("bare", &one_turn(json!([{"say": "hi"}])))?;
    let spec = scratch.stub_unit(&script, "bench-bare")?;
    let starts = (0..n).map(|_| Unit::start(spec.clone()));
    let units: Vec<Unit> = futures::future::try_join_all(starts).await?;
    futures::future::try_join_all(units.iter().map(|u| u.prompt(vec!["bare".into()]))).await?;
    Ok(units)
}

/// Missions/s to landed, through the fleet and bare.
pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new()?;
    let land =
        one_turn(json!([{"report": {"kind": "result", "summary": "done"}}, {"finish": "landed"}]));
    scratch.declare_stub("land", &land, &[])?;
    let (fleet, _teardown) = scratch.fleet()?;
    let n = scale.units;

    let t = Instant::now();
    let dispatched =
        futures::future::try_join_all((0..n).map(|i| fleet.dispatch(request("land", i)))).await?;
    let missions = fleet.missions().clone();
    until(
        "every mission to land",
        LIMIT,
        Duration::from_millis(5),
        || {
            dispatched.iter().all(|d| {
            matches!(missions.get(&d.mission_id), Ok(Some(m)) if m.status == Status::Landed)
        })
        },
    )
    .await?;
    let fleet_rate = n as f64 / t.elapsed().as_secs_f64();
    until_reaped(&fleet, "every unit to be reaped", LIMIT).await?;

    let t = Instant::now();
    let units = bare_units(&scratch, n).await?;
    futures::future::join_all(units.into_iter().map(Unit::shutdown)).await;
    let bare_rate = n as f64 / t.elapsed().as_secs_f64();

    Ok(vec![Row::rate(
        &format!("fleet throughput ({n} concurrent stub missions to landed)"),
        fleet_rate,
        "missions/s",
        bare_rate,
        &format!(
            "{n} bare stub units started, given one turn and reaped concurrently (no fleet, store or mission tools)"
        ),
    )])
}

/// Host resident memory per unit the fleet holds (`units` resident missions).
pub async fn rss(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new()?;
    let resident = one_turn(json!([{"report": {"kind": "progress", "summary": "working"}}]));
    scratch.declare_stub("resident", &resident, &[])?;
    let (fleet, _teardown) = scratch.fleet()?;
    let n = scale.units;
    // Warm up: one mission through every path, so the baseline holds the runtime,
    // the store's caches and the code pages.
    let warm = fleet.dispatch(request("resident", 0)).await?;
    let missions = fleet.missions().clone();
    until(
        "the warm-up report",
        LIMIT,
        Duration::from_millis(5),
        || missions.report_count(&warm.mission_id).unwrap_or(0) > 0,
    )
    .await?;
    missions.finish(&warm.mission_id, Status::Abandoned, "bench warm-up")?;
    until_reaped(&fleet, "the warm-up unit to be reaped", LIMIT).await?;
    let baseline = rss_bytes();

    let dispatched =
        futures::future::try_join_all((0..n).map(|i| fleet.dispatch(request("resident", i))))
            .await?;
    until(
        "every unit to report and stay resident",
        LIMIT,
        Duration::from_millis(5),
        || {
            fleet.open_units() == n
                && dispatched
                    .iter()
                    .all(|d| missions.report_count(&d.mission_id).unwrap_or(0) > 0)
        },
    )
    .await?;
    let held = rss_bytes();
    for d in &dispatched {
        missions.finish(&d.mission_id, Status::Abandoned, "bench done")?;
    }
    until_reaped(&fleet, "every unit to be reaped", LIMIT).await?;
    let per_unit = held.saturating_sub(baseline) as f64 / n as f64 / MB;

    let floor = super::child_rows("bare-rss", scale)?
        .first()
        .map(|r| r.measured)
        .ok_or_else(|| anyhow::anyhow!("the bare-rss bench printed no row"))?;
    Ok(vec![
        Row::cost(
            &format!("host RSS per unit ({n} resident fleet units)"),
            per_unit,
            "MB",
            floor,
            &format!(
                "host RSS per bare ACP unit ({n} held by the adapter alone, in a fresh process)"
            ),
        )
        .target(format!("≤ {RSS_TARGET_MB} MB"), per_unit <= RSS_TARGET_MB),
    ])
}

/// The floor of [`rss`]: host memory per bare unit held open.
pub async fn bare_rss(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new()?;
    let n = scale.units;
    let warm = bare_units(&scratch, 1).await?;
    futures::future::join_all(warm.into_iter().map(Unit::shutdown)).await;
    let baseline = rss_bytes();
    let units = bare_units(&scratch, n).await?;
    let held = rss_bytes();
    futures::future::join_all(units.into_iter().map(Unit::shutdown)).await;
    let per_unit = held.saturating_sub(baseline) as f64 / n as f64 / MB;
    Ok(vec![Row::cost(
        "bare RSS per unit",
        per_unit,
        "MB",
        per_unit,
        "itself",
    )])
}
