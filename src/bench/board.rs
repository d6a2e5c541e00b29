//! The board: one frame of the real render path (`update` with a snapshot, then
//! `view::draw` through a ratatui `Terminal` on a `TestBackend`), the store thread's
//! read of that snapshot, keypress-to-redraw (a key through `update`, its frame
//! drawn) and keypress-to-detail (the query to the real store thread, its snapshot
//! back through `update`, the frame drawn), while 200 open missions heartbeat from another connection — each over a store
//! holding the scaled missions and pending asks.
//!
//! Floors: the frame's is drawing the very cells it drew as one bare `Paragraph` on
//! the same backend; the snapshot's is the bare SELECTs of the same rows on a
//! connection of its own, values read and dropped, and the same host probes;
//! keypress-to-redraw's is the bare frame; keypress-to-detail's is that frame plus
//! the snapshot read floor, the work the detail cannot avoid.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use tokio::sync::watch;

use super::scratch::{Scratch, seed};
use super::{Latency, Row, Scale};
use crate::board::model::{Model, Query, Snapshot};
use crate::board::snapshot::{Source, build};
use crate::board::theme::{Symbols, Theme};
use crate::board::update::{Msg, update};
use crate::board::{layout, view};
use crate::mission::{EnvelopeName, Intent, Missions, NewMission};
use crate::ops::host::{Host, Hosting};
use crate::store::Store;

const FRAME_TARGET_MS: f64 = 2.0;
const SNAPSHOT_TARGET_MS: f64 = 10.0;
const KEY_TARGET_MS: f64 = 16.0;
const SEEN_TARGET_MS: f64 = 20.0;
/// Another host's change on a board connected to a shared PostgreSQL.
const SEEN_TARGET_POSTGRES_MS: f64 = 100.0;
const WIDTH: u16 = 120;
const HEIGHT: u16 = 40;
/// The open missions that heartbeat while keys are pressed.
const LOAD_MISSIONS: usize = 200;
const LIMIT: Duration = Duration::from_secs(30);

/// The cells of a drawn frame as lines of styled runs: what a bare `Paragraph`
/// needs to draw the same frame.
fn as_lines(buffer: &Buffer) -> Vec<Line<'static>> {
    let area = buffer.area;
    (area.y..area.y + area.height)
        .map(|y| {
            let mut spans: Vec<Span<'static>> = Vec::new();
            for x in area.x..area.x + area.width {
                let cell = &buffer[(x, y)];
                match spans.last_mut() {
                    Some(last) if last.style == cell.style() => {
                        last.content.to_mut().push_str(cell.symbol())
                    }
                    _ => spans.push(Span::styled(cell.symbol().to_string(), cell.style())),
                }
            }
            Line::from(spans)
        })
        .collect()
}

/// A bound argument of a bare read.
pub(super) enum Arg {
    Int(i64),
    Text(String),
}

impl Arg {
    fn sqlite(&self) -> &dyn rusqlite::ToSql {
        match self {
            Arg::Int(i) => i,
            Arg::Text(t) => t,
        }
    }

    fn postgres(&self) -> &(dyn tokio_postgres::types::ToSql + Sync) {
        match self {
            Arg::Int(i) => i,
            Arg::Text(t) => t,
        }
    }
}

/// The SQL of the rows a snapshot holds, in the house dialect, with its arguments.
fn bare_statements(q: &Query, selected: &str) -> Vec<(String, Vec<Arg>)> {
    use crate::board::snapshot::{ASKS_LIMIT, INBOX_LIMIT, TRACE_LIMIT};
    let page = || vec![Arg::Int(q.limit.max(1) as i64), Arg::Int(q.offset as i64)];
    let page_ids = "SELECT id FROM missions ORDER BY created_at DESC, id DESC LIMIT ?1 OFFSET ?2";
    vec![
        ("SELECT MAX(rowid) FROM missions".into(), vec![]),
        (
            "SELECT n FROM mission_status_counts WHERE status = 'open'".into(),
            vec![],
        ),
        (
            format!("SELECT * FROM asks WHERE state = 'pending' ORDER BY created_at DESC, id DESC LIMIT {ASKS_LIMIT}"),
            vec![],
        ),
        (
            format!("SELECT * FROM inbox WHERE acked_at IS NULL ORDER BY created_at DESC, rowid DESC LIMIT {INBOX_LIMIT}"),
            vec![],
        ),
        // The needs-me group: the missions of the pending asks read (whose intents
        // the asks pane shows).
        (
            format!("SELECT * FROM missions WHERE id IN (SELECT mission_id FROM asks WHERE state = 'pending' ORDER BY created_at DESC, id DESC LIMIT {ASKS_LIMIT})"),
            vec![],
        ),
        (
            "SELECT * FROM missions ORDER BY created_at DESC, id DESC LIMIT ?1 OFFSET ?2".into(),
            page(),
        ),
        (
            format!("SELECT mission_id, COUNT(*) FROM asks WHERE state = 'pending' AND mission_id IN ({page_ids}) GROUP BY mission_id"),
            page(),
        ),
        (
            format!("SELECT * FROM mission_worktrees WHERE mission_id IN ({page_ids})"),
            page(),
        ),
        // The selected mission's detail: its reports and its compute spend.
        (
            "SELECT * FROM reports WHERE mission_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT 200".into(),
            vec![Arg::Text(selected.to_string())],
        ),
        (
            "SELECT * FROM mission_compute WHERE mission_id = ?1".into(),
            vec![Arg::Text(selected.to_string())],
        ),
        (
            "SELECT n FROM ask_state_counts WHERE state = 'pending'".into(),
            vec![],
        ),
        (
            "SELECT COUNT(*) FROM inbox WHERE acked_at IS NULL".into(),
            vec![],
        ),
        (
            format!("SELECT line FROM (SELECT id, line FROM oracle_trace ORDER BY id DESC LIMIT {TRACE_LIMIT}) AS t ORDER BY id"),
            vec![],
        ),
    ]
}

/// A dead-host scan needs each open mission's id and host, nothing else.
const OPEN_HOSTS: &str = "SELECT id, host_pid, host_start, host_id, host_machine FROM missions WHERE status = 'open' ORDER BY created_at, id LIMIT ?1";

/// The same host probe a snapshot makes: one read of `/proc/<pid>/stat` per host.
fn probe(hosts: &mut std::collections::HashSet<i64>, pid: Option<i64>) {
    if let Some(pid) = pid
        && hosts.insert(pid)
    {
        let _ = std::fs::read_to_string(format!("/proc/{pid}/stat"));
    }
}

/// A connection of its own to the bench's store, for the snapshot's floor: the
/// driver's own statements, every row fetched, nothing decoded into our types.
pub(super) enum BareReader {
    Sqlite(rusqlite::Connection),
    Postgres {
        client: tokio_postgres::Client,
        prepared: std::collections::HashMap<String, tokio_postgres::Statement>,
    },
}

impl BareReader {
    pub(super) async fn open(store: &Store) -> anyhow::Result<BareReader> {
        Ok(match store.location() {
            crate::store::Location::File(path) => {
                BareReader::Sqlite(rusqlite::Connection::open(path)?)
            }
            crate::store::Location::Postgres(url) => {
                let (client, connection) =
                    tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
                tokio::spawn(connection);
                BareReader::Postgres {
                    client,
                    prepared: Default::default(),
                }
            }
        })
    }

    /// One statement (in the house dialect), bare: prepared once, every row fetched
    /// and every column read, nothing decoded. How many rows it gave.
    pub(super) async fn rows(&mut self, sql: &str, args: &[Arg]) -> anyhow::Result<usize> {
        match self {
            BareReader::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql)?;
                let columns = stmt.column_count();
                let mut rows =
                    stmt.query(rusqlite::params_from_iter(args.iter().map(Arg::sqlite)))?;
                let mut n = 0;
                while let Some(row) = rows.next()? {
                    for i in 0..columns {
                        let _ = row.get_ref(i)?;
                    }
                    n += 1;
                }
                Ok(n)
            }
            BareReader::Postgres { client, prepared } => {
                let stmt = match prepared.get(sql) {
                    Some(s) => s.clone(),
                    None => {
                        let s = client
                            .prepare(&crate::store::pg_dialect::translate(sql))
                            .await?;
                        prepared.insert(sql.to_string(), s.clone());
                        s
                    }
                };
                let args: Vec<_> = args.iter().map(Arg::postgres).collect();
                Ok(client.query(&stmt, &args).await?.len())
            }
        }
    }

    /// The bare reads of the rows a snapshot holds, and its host probes (for each
    /// distinct host of the open missions it scans).
    async fn read(&mut self, q: &Query, selected: &str) -> anyhow::Result<()> {
        let scan = (
            OPEN_HOSTS.to_string(),
            vec![Arg::Int(crate::board::snapshot::OPEN_SCAN as i64)],
        );
        let mut hosts = std::collections::HashSet::new();
        let statements = bare_statements(q, selected);
        match self {
            BareReader::Sqlite(conn) => {
                let read = |(sql, args): &(String, Vec<Arg>),
                            each: &mut dyn FnMut(&rusqlite::Row<'_>)| {
                    let mut stmt = conn.prepare_cached(sql)?;
                    let columns = stmt.column_count();
                    let mut rows =
                        stmt.query(rusqlite::params_from_iter(args.iter().map(Arg::sqlite)))?;
                    while let Some(row) = rows.next()? {
                        for i in 0..columns {
                            let _ = row.get_ref(i)?;
                        }
                        each(row);
                    }
                    anyhow::Ok(())
                };
                for statement in &statements {
                    read(statement, &mut |_| {})?;
                }
                read(&scan, &mut |row| {
                    probe(&mut hosts, row.get(1).ok().flatten())
                })?;
            }
            BareReader::Postgres { client, prepared } => {
                for (i, (sql, args)) in statements.iter().chain([&scan]).enumerate() {
                    let stmt = match prepared.get(sql) {
                        Some(s) => s.clone(),
                        None => {
                            let s = client
                                .prepare(&crate::store::pg_dialect::translate(sql))
                                .await?;
                            prepared.insert(sql.clone(), s.clone());
                            s
                        }
                    };
                    let args: Vec<_> = args.iter().map(Arg::postgres).collect();
                    let rows = client.query(&stmt, &args).await?;
                    // The last statement is the open-host scan.
                    if i == statements.len() {
                        for row in &rows {
                            probe(&mut hosts, row.get(1));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// A key as the terminal delivers it.
fn key(code: KeyCode) -> Msg {
    Msg::Term(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

/// Heartbeat `ids` round-robin from another connection until `stop` (each mission
/// about once a second): the write load a fleet of that many missions puts on the file.
fn load(
    store: &crate::store::Location,
    ids: Vec<String>,
    stop: watch::Receiver<bool>,
) -> anyhow::Result<std::thread::JoinHandle<()>> {
    let missions = Missions::new(Store::open_at(store)?);
    let pace = Duration::from_secs(1) / ids.len().max(1) as u32;
    Ok(std::thread::spawn(move || {
        for id in ids.iter().cycle() {
            if *stop.borrow() {
                return;
            }
            let _ = missions.heartbeat(id);
            // Pacing a load generator, not waiting on a condition.
            std::thread::sleep(pace);
        }
    }))
}

pub async fn run(scale: Scale) -> anyhow::Result<Vec<Row>> {
    let scratch = Scratch::new(&scale)?;
    seed(&scratch, scale.missions, scale.asks)?;
    let host = Host::open(&scratch.paths, &scratch.store, Hosting::OnNeed)?;
    let source = Source::open(&host, Box::new(|| (0, 0)), false).map_err(anyhow::Error::msg)?;
    let size = Rect::new(0, 0, WIDTH, HEIGHT);
    let query = Query {
        offset: 0,
        limit: layout::mission_rows(size),
        selected: 0,
        filter: String::new(),
        ..Query::default()
    };
    let samples = scale.samples;
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
    let snapshot = snapshot.expect("samples > 0");
    let selected = snapshot
        .rows
        .first()
        .map(|r| r.id.clone())
        .unwrap_or_default();
    let mut bare = BareReader::open(&scratch.store).await?;
    let mut bare_times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let t = Instant::now();
        bare.read(&query, &selected).await?;
        bare_times.push(t.elapsed());
    }
    drop(bare);

    let mut model = Model::new(Theme::dark(), Symbols::unicode(), size);
    update(&mut model, Msg::Snapshot(Arc::new(snapshot)));
    let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT))?;
    let now = crate::clock::now_ms();
    // Frames alternate between two clock readings, as a live board's do, so each
    // draw changes some cells; the floor alternates between the same two frames.
    let at = |i: usize| now + (i % 2) as i64 * 61_000;
    let mut drawn = Vec::new();
    for i in 0..2 {
        terminal.draw(|f| view::draw(f, &model, at(i)))?;
        drawn.push(as_lines(terminal.backend().buffer()));
    }
    let mut frames = Vec::with_capacity(samples);
    for i in 0..samples {
        let t = Instant::now();
        terminal.draw(|f| view::draw(f, &model, at(i)))?;
        frames.push(t.elapsed());
    }
    let mut floor_frames = Vec::with_capacity(samples);
    for i in 0..samples {
        let t = Instant::now();
        terminal.draw(|f| f.render_widget(Paragraph::new(drawn[i % 2].clone()), f.area()))?;
        floor_frames.push(t.elapsed());
    }
    let frame_floor = Latency::of(&mut floor_frames);
    let read_floor = Latency::of(&mut bare_times);
    let live = keypresses(&scratch, &mut model, &mut terminal, samples).await?;
    let sum = |parts: &[Latency]| Latency {
        median: parts.iter().map(|l| l.median).sum(),
        p99: parts.iter().map(|l| l.p99).sum(),
        max: parts.iter().map(|l| l.max).sum(),
    };
    let detail_floor = sum(&[frame_floor, read_floor]);
    let seen_floor = sum(&[live.commit, frame_floor, read_floor]);

    let what = format!(
        "{} missions + {} asks, {WIDTH}x{HEIGHT}",
        scale.missions, scale.asks
    );
    Ok(vec![
        Row::latency(
            &format!("board frame ({what})"),
            Latency::of(&mut frames),
            frame_floor,
            "the same cells drawn as one bare Paragraph on the same TestBackend",
        )
        .within(Some(3.0), Some(FRAME_TARGET_MS), None),
        Row::latency(
            &format!("board snapshot read ({what})"),
            Latency::of(&mut reads),
            read_floor,
            "the bare SELECTs of the same rows (every column read, nothing decoded) on a connection of its own, and the same host probes",
        )
        .within(Some(2.0), Some(SNAPSHOT_TARGET_MS), None),
        Row::latency(
            &format!("board shows another process's change ({what})"),
            live.seen,
            seen_floor,
            "that process's commit + one bare snapshot read + one bare frame",
        )
        .within(
            None,
            None,
            Some(if scale.postgres {
                SEEN_TARGET_POSTGRES_MS
            } else {
                SEEN_TARGET_MS
            }),
        ),
        Row::latency(
            &format!("board keypress to redraw ({what}, {LOAD_MISSIONS} missions heartbeating)"),
            live.keys,
            frame_floor,
            "one bare frame (a key is drawn at once and reads nothing)",
        )
        .within(None, None, Some(KEY_TARGET_MS)),
        Row::latency(
            &format!("board keypress to the selection's detail ({what}, {LOAD_MISSIONS} missions heartbeating)"),
            live.detail,
            detail_floor,
            "one bare frame + one bare snapshot read (the work the detail cannot skip)",
        )
        .within(None, None, Some(KEY_TARGET_MS)),
    ])
}

/// Keypress to redraw: ↓ moves the selection and its frame is drawn at once, as the
/// board's loop draws a key; then the clock runs on until a frame shows the newly
/// selected mission's detail, read by the real store thread and drawn as the loop
/// draws snapshot frames (the one answering the key at once, the rest paced: at
/// once, or one frame period after the last).
async fn keypresses(
    scratch: &Scratch,
    model: &mut Model,
    terminal: &mut Terminal<TestBackend>,
    samples: usize,
) -> anyhow::Result<Pipeline> {
    let missions = Missions::new(scratch.store.clone());
    let mut ids = Vec::with_capacity(LOAD_MISSIONS);
    for i in 0..LOAD_MISSIONS {
        ids.push(
            missions
                .create(NewMission::new(
                    "stub",
                    Intent::new(&format!("busy mission {i}"))?,
                    EnvelopeName::new(super::scratch::POLICY)?,
                ))?
                .id,
        );
    }
    let (query_tx, query_rx) = watch::channel(model.query());
    let (snap_tx, mut snap_rx) = watch::channel(Arc::new(Snapshot::default()));
    let thread = crate::board::snapshot::spawn(
        Host::open(&scratch.paths, &scratch.store, Hosting::OnNeed)?,
        Box::new(|| (0, 0)),
        false,
        query_rx,
        snap_tx,
    )?;
    // Another process's change: a mission it creates shows in the board's count.
    let elsewhere = Missions::new(Store::open_at(scratch.store.location())?);
    let before = elsewhere.counts()?.0 as usize;
    let mut seen = Vec::with_capacity(samples);
    let mut commits = Vec::with_capacity(samples);
    // The query of the last snapshot seen, as the board's loop keeps it.
    let mut answered = None;
    let appeared = async {
        for i in 0..samples {
            let t = Instant::now();
            let id = elsewhere
                .create(NewMission::new(
                    "stub",
                    Intent::new(&format!("made elsewhere {i}"))?,
                    EnvelopeName::new(super::scratch::POLICY)?,
                ))?
                .id;
            commits.push(t.elapsed());
            loop {
                tokio::time::timeout(LIMIT, snap_rx.changed())
                    .await
                    .map_err(|_| anyhow::anyhow!("bench: the store thread never showed {id}"))??;
                let snap = snap_rx.borrow_and_update().clone();
                // The new mission may sort below the visible page (what needs the
                // operator leads), but the missions title counts it.
                let shows = snap.total_missions == before + i + 1;
                crate::board::answers_input(&mut answered, &snap);
                anyhow::ensure!(
                    t.elapsed() < LIMIT,
                    "bench: no snapshot showed {id} after {LIMIT:?}"
                );
                let _ = update(model, Msg::Snapshot(snap));
                if shows {
                    terminal.draw(|f| view::draw(f, model, crate::clock::now_ms()))?;
                    break;
                }
            }
            seen.push(t.elapsed());
        }
        anyhow::Ok(())
    }
    .await;
    let (stop_tx, stop_rx) = watch::channel(false);
    let loader = load(scratch.store.location(), ids, stop_rx)?;
    let mut took = Vec::with_capacity(samples);
    let mut detailed = Vec::with_capacity(samples);
    let result = async {
        appeared?;
        for i in 0..samples {
            // Down, then back up: the selection walks between the first two rows.
            let code = if i % 2 == 0 { KeyCode::Down } else { KeyCode::Up };
            let t = Instant::now();
            let _ = update(model, key(code));
            let q = model.query();
            let selected = q.selected - q.offset;
            query_tx.send_replace(q);
            // As the board's loop does: a key is drawn at once, reading nothing.
            terminal.draw(|f| view::draw(f, model, crate::clock::now_ms()))?;
            took.push(t.elapsed());
            // Snapshots update the model as they come (the channel coalesces them);
            // a frame for them is drawn at most every FRAME.
            let mut next_draw = Instant::now() + crate::board::FRAME;
            let (mut dirty, mut shows) = (false, false);
            loop {
                anyhow::ensure!(
                    t.elapsed() < LIMIT,
                    "bench: no snapshot showed the selection after {LIMIT:?}"
                );
                tokio::select! {
                    changed = tokio::time::timeout(LIMIT, snap_rx.changed()) => {
                        changed
                            .map_err(|_| anyhow::anyhow!("bench: the store thread sent no snapshot"))??;
                        let snap = snap_rx.borrow_and_update().clone();
                        // Read for the new selection: its detail is that row's.
                        shows = snap.detail.as_ref().map(|d| &d.mission.id)
                            == snap.rows.get(selected).map(|r| &r.id);
                        let at_once = crate::board::answers_input(&mut answered, &snap);
                        let _ = update(model, Msg::Snapshot(snap));
                        dirty = true;
                        // The snapshot answering the key is drawn at once, as the loop does.
                        if at_once {
                            terminal.draw(|f| view::draw(f, model, crate::clock::now_ms()))?;
                            next_draw = Instant::now() + crate::board::FRAME;
                            dirty = false;
                            if shows {
                                break;
                            }
                        }
                    }
                    _ = tokio::time::sleep_until(next_draw.into()), if dirty => {
                        terminal.draw(|f| view::draw(f, model, crate::clock::now_ms()))?;
                        next_draw = Instant::now() + crate::board::FRAME;
                        dirty = false;
                        if shows {
                            break;
                        }
                    }
                }
            }
            detailed.push(t.elapsed());
            // Keys come at a person's pace, not back to back.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        anyhow::Ok(())
    }
    .await;
    drop(query_tx);
    let _ = stop_tx.send(true);
    let _ = tokio::task::spawn_blocking(move || {
        let _ = thread.join();
        let _ = loader.join();
    })
    .await;
    result?;
    Ok(Pipeline {
        keys: Latency::of(&mut took),
        detail: Latency::of(&mut detailed),
        seen: Latency::of(&mut seen),
        commit: Latency::of(&mut commits),
    })
}

/// What the live-board figures measured.
struct Pipeline {
    /// A key to its own frame (the selection moved, nothing read).
    keys: Latency,
    /// A key to the frame showing the newly selected mission's detail.
    detail: Latency,
    seen: Latency,
    /// The other process's commits alone (part of the seen figure's floor).
    commit: Latency,
}
