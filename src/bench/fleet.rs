//! The fleet at width: `units` concurrent stub missions to landed and reaped
//! (missions/s), and the host's resident memory per held unit. Each is set against
//! the same work done by bare ACP units: the same stub script (spawn, initialize,
//! session/new connecting the same bridge, one turn making the same mission-tool
//! calls) against a bare server per unit that answers every call at once — no fleet,
//! store, envelope or mission record. Resident-memory figures run in fresh
//! processes, so neither is measured over memory the other freed.

use std::time::{Duration, Instant};

use serde_json::json;

use super::bare::Bare;
use super::scratch::{POLICY, Scratch, one_turn, report_and_land, rss_bytes, until, until_reaped};
use super::{Row, Scale};
use crate::acp_client::{Unit, UnitSpec};
use crate::mission::Status;
use crate::mission::{EnvelopeName, Intent};
use crate::mission_mcp::{MissionSocket, bridge_server_entry, serve_mission_socket};
use crate::ops::fire::{self, Fire};
use crate::ops::host::Host;

const LIMIT: Duration = Duration::from_secs(120);
const MB: f64 = 1024.0 * 1024.0;
const RSS_TARGET_MB: f64 = 0.25;
const THROUGHPUT_TARGET: f64 = 1.25;

/// Fire mission `i` at `agent` through the fire verb every surface uses.
async fn fire_one(host: &Host, agent: &str, i: usize) -> anyhow::Result<crate::fleet::Dispatched> {
    let f = Fire::new(
        agent,
        EnvelopeName::new(POLICY)?,
        Intent::new(&format!("fleet bench mission {i}"))?,
    );
    fire::dispatch(host, f).await
}

fn resident() -> serde_json::Value {
    one_turn(json!([{"report": {"kind": "progress", "summary": "working"}}]))
}

/// `n` bare units running `script` concurrently, each through the bridge to a bare
/// server on a socket of its own (held with the unit), each given one turn.
async fn bare_units(
    scratch: &Scratch,
    tag: &str,
    n: usize,
    script: &serde_json::Value,
) -> anyhow::Result<Vec<(Unit, MissionSocket)>> {
    let script = scratch.write_script(&format!("bare-{tag}"), script)?;
    let spec = scratch.stub_unit(&script, "bench-bare")?;
    let starts = (0..n).map(|i| {
        let spec = spec.clone();
        let path = scratch.home().join(format!("bare-{tag}-{i}.sock"));
        async move {
            let socket = serve_mission_socket(&path, Bare::at_once()).await?;
            let unit = Unit::start(UnitSpec {
                mcp_servers: vec![bridge_server_entry(&spec.program, &socket, scratch.home())?],
                pid_slot: Some(socket.unit_pid_slot()),
                supervisor: None,
                ..spec
            })
            .await?;
            anyhow::Ok((unit, socket))
        }
    });
    let units = futures::future::try_join_all(starts).await?;
    futures::future::try_join_all(units.iter().map(|(u, _)| u.prompt(vec!["bare".into()]))).await?;
    Ok(units)
}

async fn shutdown(units: Vec<(Unit, MissionSocket)>) {
    futures::future::join_all(units.into_iter().map(|(u, _socket)| u.shutdown())).await;
}

/// Rounds of each side per throughput figure, alternating, so drift on a shared
/// machine falls on both; each side's figure is its median round. A narrow round
/// lasts a fraction of a second, where one scheduling hiccup moves it most: it gets
/// more rounds, so about as many missions are timed at every width.
fn rounds(units: usize) -> usize {
    (144 / units.max(1)).max(5)
}

/// Missions/s to landed, through the fleet and bare.
pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    scratch.declare_stub("land", &report_and_land(), &[])?;
    let host = scratch.host()?;
    let n = scale.units;
    let rounds = if scale.quick { 1 } else { rounds(n) };

    // Each side warmed by one run of its own first, so neither clock holds what a
    // process pays once (its store connections and their prepared statements, its
    // change feed, its first threads and page faults).
    fire_one(&host, "land", n).await?;
    until_reaped(&host, "the warm-up unit to be reaped", LIMIT).await?;
    shutdown(bare_units(&scratch, "warm", 1, &report_and_land()).await?).await;
    let (mut fleet_rates, mut bare_rates) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        fleet_rates.push(fleet_round(&host, n).await?);
        let t = Instant::now();
        let tag = format!("land{round}");
        shutdown(bare_units(&scratch, &tag, n, &report_and_land()).await?).await;
        bare_rates.push(n as f64 / t.elapsed().as_secs_f64());
    }
    let (fleet_rate, bare_rate) = (median(fleet_rates), median(bare_rates));

    Ok(vec![
        Row::rate(
            &format!("fleet throughput ({n} concurrent stub missions to landed and reaped)"),
            fleet_rate,
            "missions/s",
            bare_rate,
            "as many bare units, concurrently: the same stub script (report, finish) through the same bridge to a bare server each that answers at once, then shut down (each side the median of its rounds, run alternately)",
        )
        .target(
            format!("≤ {THROUGHPUT_TARGET}x floor"),
            bare_rate / fleet_rate <= THROUGHPUT_TARGET,
        ),
        Row::rate(
            &format!("fleet throughput per unit ({n} units)"),
            fleet_rate / n as f64,
            "missions/s",
            bare_rate / n as f64,
            "the bare units' throughput per unit",
        ),
    ])
}

/// One round through the fleet: `n` missions fired at once, to every unit reaped
/// (missions/s), then every mission checked to have landed.
async fn fleet_round(host: &Host, n: usize) -> anyhow::Result<f64> {
    let t = Instant::now();
    let dispatched =
        futures::future::try_join_all((0..n).map(|i| fire_one(host, "land", i))).await?;
    // Every unit reaped (the clock stops as the last one leaves the fleet, and reads
    // nothing from the store meanwhile), then every mission checked once.
    until_reaped(host, "every unit to be reaped", LIMIT).await?;
    let rate = n as f64 / t.elapsed().as_secs_f64();
    let missions = host.missions();
    for d in &dispatched {
        anyhow::ensure!(
            matches!(missions.get(&d.mission_id)?, Some(m) if m.status == Status::Landed),
            "bench: mission {} was reaped without landing",
            d.mission_id
        );
    }
    Ok(rate)
}

/// The middle value (the upper one of an even count).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Host resident memory per unit the fleet holds (`units` resident missions).
pub async fn rss(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    scratch.declare_stub("resident", &resident(), &[])?;
    let host = scratch.host()?;
    let n = scale.units;
    // Warm up: one mission through every path, so the baseline holds the runtime,
    // the store's caches and the code pages.
    let warm = fire_one(&host, "resident", 0).await?;
    let missions = host.missions().clone();
    until(
        "the warm-up report",
        LIMIT,
        Duration::from_millis(5),
        || missions.report_count(&warm.mission_id).unwrap_or(0) > 0,
    )
    .await?;
    missions.finish(&warm.mission_id, Status::Abandoned, "bench warm-up")?;
    until_reaped(&host, "the warm-up unit to be reaped", LIMIT).await?;
    let baseline = rss_bytes();

    let dispatched =
        futures::future::try_join_all((0..n).map(|i| fire_one(&host, "resident", i))).await?;
    until(
        "every unit to report and stay resident",
        LIMIT,
        Duration::from_millis(5),
        || {
            host.open_units() == n
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
    until_reaped(&host, "every unit to be reaped", LIMIT).await?;
    let per_unit = held.saturating_sub(baseline) as f64 / n as f64 / MB;

    let floor = super::child_rows("bare-rss", scale, None)?
        .first()
        .map(|r| r.measured)
        .ok_or_else(|| anyhow::anyhow!("the bare-rss bench printed no row"))?;
    Ok(vec![
        Row::cost(
            &format!("host RSS per unit ({n} resident fleet units)"),
            per_unit,
            "MB",
            floor,
            "host RSS per bare unit held (the same stub and report through the same bridge to a bare server, its socket held; in a fresh process)",
        )
        .target(format!("≤ {RSS_TARGET_MB} MB"), per_unit <= RSS_TARGET_MB),
    ])
}

/// The floor of [`rss`]: host memory per bare unit held open.
pub async fn bare_rss(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    let n = scale.units;
    shutdown(bare_units(&scratch, "warm", 1, &resident()).await?).await;
    let baseline = rss_bytes();
    let units = bare_units(&scratch, "held", n, &resident()).await?;
    let held = rss_bytes();
    shutdown(units).await;
    let per_unit = held.saturating_sub(baseline) as f64 / n as f64 / MB;
    Ok(vec![Row::cost(
        "bare RSS per unit",
        per_unit,
        "MB",
        per_unit,
        "itself",
    )])
}
