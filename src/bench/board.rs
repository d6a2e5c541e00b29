//! Board frame: the real render path (`update` with a snapshot, then `view::draw`
//! through a ratatui `Terminal` on a `TestBackend`) over a store holding the scaled
//! missions and pending asks, against the 16 ms frame budget. The store thread's
//! read of that snapshot is reported beside it, against the 100 ms refresh promise.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use rusqlite::params;

use super::scratch::Scratch;
use super::{Row, Scale, median_ms};
use crate::board::model::{Model, Query};
use crate::board::snapshot::{Source, build};
use crate::board::theme::{Symbols, Theme};
use crate::board::update::{Msg, update};
use crate::board::{layout, view};

const FRAME_BUDGET_MS: f64 = 16.0;
const FRAME_TARGET_MS: f64 = 2.0;
const REFRESH_MS: f64 = 100.0;
const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;

/// Seed `missions` missions (every `missions / asks`-th one open with a pending
/// question) in one transaction of prepared inserts.
fn seed(scratch: &Scratch, missions: usize, asks: usize) -> anyhow::Result<()> {
    let now = crate::clock::now_ms();
    let every = (missions / asks.max(1)).max(1);
    scratch.store.write(|tx| {
        let mut m = tx.prepare(
            "INSERT INTO missions (id, intent, agent_name, policy_name, status, status_reason, created_at, updated_at)
             VALUES (?1, ?2, 'stub', 'bench', ?3, ?4, ?5, ?5)",
        )?;
        let mut a = tx.prepare(
            "INSERT INTO asks (id, tools_name, tool_name, args_summary, policy_name, agent_name, mission_id, created_at, expires_at)
             VALUES (?1, 'mission', 'mission_ask_attention', ?2, 'bench', 'stub', ?3, ?4, 0)",
        )?;
        let mut raised = 0;
        for i in 0..missions {
            let id = format!("{i:08x}-bench-mission");
            let asking = i % every == 0 && raised < asks;
            let (status, reason) = match i % 5 {
                _ if asking => ("open", None),
                0 => ("landed", None),
                1 => ("stuck", Some("compute bound exhausted")),
                2 => ("derailed", Some("unit turn failed")),
                3 => ("abandoned", Some("stopped by the operator")),
                _ => ("open", None),
            };
            let created = now - (missions - i) as i64 * 1000;
            m.execute(params![id, format!("mission {i}: tidy module {}", i % 97), status, reason, created])?;
            if asking {
                a.execute(params![format!("{i:08x}-bench-ask"), format!("question {i}: proceed?"), id, created])?;
                raised += 1;
            }
        }
        Ok(())
    })?;
    Ok(())
}

pub fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new()?;
    seed(&scratch, scale.missions, scale.asks)?;
    let source =
        Source::open(scratch.store.path(), Box::new(|| 0), false).map_err(anyhow::Error::msg)?;
    let size = Rect::new(0, 0, WIDTH, HEIGHT);
    let query = Query {
        offset: 0,
        limit: layout::mission_rows(size),
        selected: 0,
        filter: String::new(),
        ..Query::default()
    };
    let samples = scale.samples * 5;
    let mut reads: Vec<Duration> = Vec::with_capacity(samples);
    let mut snapshot = None;
    for _ in 0..samples {
        let t = Instant::now();
        let snap = build(&source, &query);
        reads.push(t.elapsed());
        anyhow::ensure!(
            snap.store_error.is_none(),
            "bench: snapshot failed: {:?}",
            snap.store_error
        );
        anyhow::ensure!(
            snap.total_missions == scale.missions && snap.pending_total == scale.asks,
            "bench: the snapshot saw {} missions and {} asks",
            snap.total_missions,
            snap.pending_total
        );
        snapshot = Some(snap);
    }

    let mut model = Model::new(Theme::dark(), Symbols::unicode(), size);
    update(
        &mut model,
        Msg::Snapshot(Arc::new(snapshot.expect("samples > 0"))),
    );
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT))?;
    let now = crate::clock::now_ms();
    let mut frames = Vec::with_capacity(samples);
    for i in 0..samples {
        // Every frame differs a little (the clock moves), as a live board's do.
        let at = now + i as i64 * 1000;
        let t = Instant::now();
        terminal.draw(|f| view::draw(f, &model, at))?;
        frames.push(t.elapsed());
    }
    let frame = median_ms(&mut frames);
    let read = median_ms(&mut reads);
    let what = format!(
        "{} missions + {} asks, {WIDTH}x{HEIGHT}",
        scale.missions, scale.asks
    );
    Ok(vec![
        Row::cost(
            &format!("board frame ({what})"),
            frame,
            "ms",
            FRAME_BUDGET_MS,
            "the 16 ms frame budget (60 fps)",
        )
        .target(format!("≤ {FRAME_TARGET_MS} ms"), frame <= FRAME_TARGET_MS),
        Row::cost(
            &format!("board snapshot read ({what})"),
            read,
            "ms",
            REFRESH_MS,
            "the board's 100 ms refresh promise (the store thread reads off the UI task)",
        )
        .target(format!("≤ {REFRESH_MS} ms"), read <= REFRESH_MS),
    ])
}
