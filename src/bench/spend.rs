//! `spend`: the cost rollup operators run (`missionboard spend`, its defaults: by
//! agent, the last seven days) over a store of the scaled missions, each with a
//! compute record as hosts leave them — a model, tokens, a reported cost on a third,
//! CPU time and peak memory, an oracle review on a tenth, a queue label on a third.
//!
//! Floor: the very statement the rollup runs — the whole hours from the spend
//! rollup the triggers keep, the window's edge hour from the missions — bare, on a
//! connection of its own: every row fetched and every column read, nothing decoded
//! into our types, no price table, no grouping of the rows by name.

use std::time::{Duration, Instant};

use super::board::{Arg, BareReader};
use super::scratch::{Scratch, seed};
use super::{Latency, Row, Scale};
use crate::mission::compute::{SpendGroup, spend_sql, spend_window};
use crate::store::sql::params;

/// What `missionboard spend` answers within, on 100k missions.
const SPEND_TARGET_MS: f64 = 50.0;
/// Its ratio to the bare statement.
const SPEND_TARGET_RATIO: f64 = 1.5;
/// `spend`'s default window.
const SINCE: Duration = Duration::from_secs(7 * 86_400);

const AGENTS: [&str; 4] = ["claude", "codex", "qwen", "gemini"];
/// Priced models, and one the table has no price for.
const MODELS: [&str; 5] = [
    "claude-sonnet-4",
    "gpt-5",
    "gpt-4o-mini",
    "o3",
    "in-house-unpriced",
];
const HOSTS: [&str; 3] = ["build-1", "build-2", "laptop"];
const LABELS: [&str; 2] = ["gpu", "linux"];

/// Give each seeded mission an agent and a host, and most of them the compute
/// record their hosts would have left.
fn seed_compute(scratch: &Scratch, missions: usize) -> anyhow::Result<()> {
    let now = crate::clock::now_ms();
    // Past the spend rollup's per-row triggers on PostgreSQL (see `seed`).
    scratch.store.write(|tx| crate::mission::spend_rollup::bulk_load(tx, |tx| {
        let mut m = tx.prepare("UPDATE missions SET agent_name = ?2, host_machine = ?3 WHERE id = ?1")?;
        let mut c = tx.prepare(
            "INSERT INTO mission_compute (mission_id, model, spent_tool_calls, spent_tokens,
                 spent_input_tokens, spent_output_tokens, spent_cached_tokens, reported_cost_micro_usd,
                 cpu_ms, peak_rss_bytes, oracle_model, oracle_calls, oracle_cost_micro_usd, admitted_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)",
        )?;
        let mut q = tx.prepare(
            "INSERT INTO mission_queue (mission_id, run_on, waiting, queued_at) VALUES (?1, ?2, 0, ?3)",
        )?;
        for i in 0..missions {
            let id = format!("{i:08x}-bench-mission");
            m.execute(params![id, AGENTS[i % AGENTS.len()], HOSTS[i % HOSTS.len()]])?;
            // One mission in ten never started a unit: no compute record.
            if i % 10 == 9 {
                continue;
            }
            let input = 20_000 + (i % 1000) as i64 * 37;
            let output = 2_000 + (i % 300) as i64 * 11;
            let reported: Option<i64> = (i % 3 == 0).then_some(40_000 + (i % 500) as i64 * 90);
            let reviewed = i % 10 == 0;
            c.execute(params![
                id,
                MODELS[i % MODELS.len()],
                (i % 40) as i64,
                input + output,
                input,
                output,
                input / 4,
                reported,
                1_000 + (i % 5000) as i64,
                300_000_000 + (i % 200) as i64 * 1_000_000,
                reviewed.then_some("gpt-5-mini"),
                if reviewed { 1i64 } else { 0 },
                reviewed.then_some(1_200i64),
                now
            ])?;
            if i % 3 == 1 {
                q.execute(params![id, LABELS[i % LABELS.len()], now])?;
            }
        }
        Ok(())
    }))?;
    if scratch.store.is_postgres() {
        // Settled statistics, as `seed` leaves the missions (see there).
        scratch.store.with(|c| c.execute_batch("VACUUM ANALYZE"))?;
    }
    Ok(())
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    seed(&scratch, scale.missions, scale.asks)?;
    seed_compute(&scratch, scale.missions)?;
    let counted = |report: &crate::ops::spend::SpendReport| {
        report
            .groups
            .iter()
            .map(|g| g.missions as usize)
            .sum::<usize>()
    };
    // Missions older than the window are not counted (at 1M the seed spans 11 days).
    let since_ms = crate::clock::now_ms() - SINCE.as_millis() as i64;
    let in_window: usize = scratch.store.with(|c| {
        c.query_row(
            "SELECT COUNT(*) FROM missions WHERE created_at >= ?1",
            params![since_ms],
            |r| r.get::<i64>(0),
        )
    })? as usize;

    // The verb as `missionboard spend` runs it: on a host that starts no fleet.
    let host = crate::ops::host::Host::open(
        &scratch.paths,
        &scratch.store,
        crate::ops::host::Hosting::OnNeed,
    )?;
    let mut took = Vec::with_capacity(scale.samples);
    for _ in 0..scale.samples {
        let t = Instant::now();
        let report = crate::ops::spend::spend(&host, "agent", SINCE)?;
        took.push(t.elapsed());
        // A loose check that it read them all: the window's edge moves with the clock.
        anyhow::ensure!(
            counted(&report).abs_diff(in_window) <= 10 && report.groups.len() == AGENTS.len(),
            "bench: spend counted {} missions in {} groups, the window holds {in_window}",
            counted(&report),
            report.groups.len()
        );
    }

    let sql = spend_sql(SpendGroup::Agent);
    let mut bare = BareReader::open(&scratch.store).await?;
    let mut floor = Vec::with_capacity(scale.samples);
    for _ in 0..scale.samples {
        let since_ms = crate::clock::now_ms() - SINCE.as_millis() as i64;
        let t = Instant::now();
        let window = spend_window(since_ms);
        let rows = bare.rows(&sql, &window.map(Arg::Int)).await?;
        floor.push(t.elapsed());
        anyhow::ensure!(rows > 0, "bench: the bare spend statement read no rows");
    }
    drop(bare);

    Ok(vec![
        Row::latency(
            &format!("spend rollup (by agent, last 7 days, {} missions)", scale.missions),
            Latency::of(&mut took),
            Latency::of(&mut floor),
            "the same statement bare on a connection of its own (every row fetched, every column read, nothing decoded, no prices)",
        )
        .within(Some(SPEND_TARGET_RATIO), Some(SPEND_TARGET_MS), None),
    ])
}
