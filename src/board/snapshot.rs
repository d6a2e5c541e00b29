//! The store thread: its own SQLite connection (so the board's reads never queue
//! behind the fleet's writes on the shared one), woken by a new query or by a commit
//! from any process (`store::changes`, confirmed by `PRAGMA data_version`),
//! publishing `Arc<Snapshot>` on a `watch` (which coalesces: the UI only ever sees
//! the latest). It reads only the visible window.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use std::collections::HashMap;

use super::model::{
    AskRow, Detail, InboxRow, MissionRow, Needs, PlanRow, Query, ReportRow, ScheduleRow, Snapshot,
};
use crate::asks::trace::Trace;
use crate::asks::{Ask, Asks};
use crate::config::Config;
use crate::host::HostId;
use crate::mission::compute::ComputeLedger;
use crate::mission::inbox::InboxItem;
use crate::mission::{Listing, Mission, Missions, Report, Status};
use crate::ops::host::Host;
use crate::text::{one_line, sanitize};

/// How often it asks SQLite whether another connection committed when no commit is
/// pushed (the 100 ms refresh promise is this fallback's).
const CHANGE_POLL: Duration = Duration::from_millis(100);
/// Rebuild at least this often anyway: expiry sweeps, fleet width, live ages.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// The pending asks and inbox items read per refresh.
pub(crate) const ASKS_LIMIT: usize = 200;
pub(crate) const INBOX_LIMIT: usize = 200;
const REPORTS_LIMIT: usize = 200;
pub(crate) const TRACE_LIMIT: usize = 200;
/// A filter scans the missions newest first in pages, up to this many rows.
pub const FILTER_SCAN_CAP: usize = 5000;
const FILTER_PAGE: usize = 500;

/// Facts only the host knows: how many units it holds right now.
/// This process's units: how many, and the resident memory they use.
pub type FleetProbe = Box<dyn Fn() -> (usize, u64) + Send>;

pub struct Source {
    /// The host the snapshot thread reads through: the board's paths, over a
    /// connection of its own.
    pub host: Host,
    pub missions: Missions,
    pub asks: Asks,
    pub config: Config,
    pub fleet_probe: FleetProbe,
    pub beta: bool,
}

impl Source {
    /// The reading side of `host`: a host of its own over a new connection to the
    /// same store.
    pub fn open(host: &Host, fleet_probe: FleetProbe, beta: bool) -> Result<Source, String> {
        let host = host.reader().map_err(|e| format!("{e:#}"))?;
        let store = host.store().clone();
        Ok(Source {
            missions: host.missions().clone(),
            asks: Asks::new(store.clone()),
            config: Config::new(store),
            host,
            fleet_probe,
            beta,
        })
    }
}

/// Start the thread (from inside the runtime: it waits on the query and the change
/// feed through it). It ends when the query sender (the UI) is dropped.
pub fn spawn(
    host: Host,
    fleet_probe: FleetProbe,
    beta: bool,
    mut queries: watch::Receiver<Query>,
    out: watch::Sender<Arc<Snapshot>>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Handle::current();
    std::thread::Builder::new()
        .name("board-store".into())
        .spawn(move || {
            let src = match Source::open(&host, fleet_probe, beta) {
                Ok(s) => s,
                Err(e) => {
                    let _ = out.send(Arc::new(Snapshot {
                        store_error: Some(e),
                        ..Snapshot::default()
                    }));
                    return;
                }
            };
            let mut generation = 0u64;
            let mut last_query: Option<Query> = None;
            let mut last_snap: Option<Arc<Snapshot>> = None;
            let mut last_version: Option<i64> = None;
            let mut last_build: Option<Instant> = None;
            let mut changes = src.missions.store().changes().subscribe();
            loop {
                if queries.has_changed().is_err() || out.is_closed() {
                    return;
                }
                let query = queries.borrow_and_update().clone();
                let heartbeat = last_build.is_none_or(|t| t.elapsed() >= HEARTBEAT);
                // Every wake may be a commit: one cheap pragma tells.
                let v = src.missions.store().data_version().ok();
                let mut stale = v != last_version || heartbeat;
                last_version = v;
                if heartbeat {
                    // The reconciling sweep: past-deadline asks get their on-timeout verdict.
                    if let Err(e) = src.asks.sweep_expired() {
                        tracing::warn!("board: ask sweep failed: {e}");
                    }
                }
                // A key that only moved the selection is answered first, from the last
                // snapshot and the newly selected mission's own rows: the operator waits
                // on one mission's read, not on the whole board's.
                let moved = if last_query.as_ref() != Some(&query) {
                    let moved = last_snap
                        .as_deref()
                        .zip(last_query.as_ref())
                        .and_then(|(snap, was)| moved_selection(&src, snap, was, &query));
                    stale |= moved.is_none();
                    last_query = Some(query.clone());
                    moved
                } else {
                    None
                };
                let mut publish = |mut snap: Snapshot| {
                    generation += 1;
                    snap.generation = generation;
                    let snap = Arc::new(snap);
                    last_snap = Some(snap.clone());
                    out.send(snap).is_ok()
                };
                if let Some(snap) = moved
                    && !publish(snap)
                {
                    return;
                }
                if stale {
                    if !publish(build(&src, &query)) {
                        return;
                    }
                    last_build = Some(Instant::now());
                }
                let beat = HEARTBEAT.saturating_sub(last_build.map_or(HEARTBEAT, |t| t.elapsed()));
                runtime.block_on(async {
                    tokio::select! {
                        _ = queries.changed() => {}
                        _ = changes.next(CHANGE_POLL.min(beat)) => {}
                        _ = out.closed() => {}
                    }
                });
            }
        })
}

/// The last snapshot with the detail of the row `now` selects, when `now` differs
/// from the query `was` (that snapshot's) only in which row of the same page is
/// selected. `None` (read a whole snapshot instead) for any other change, or when
/// the mission cannot be read.
fn moved_selection(src: &Source, last: &Snapshot, was: &Query, now: &Query) -> Option<Snapshot> {
    let same_page = Query {
        selected: now.selected,
        ..was.clone()
    } == *now;
    if !same_page || now.detail_for.is_some() || last.store_error.is_some() {
        return None;
    }
    let row = last.rows.get(now.selected.checked_sub(last.offset)?)?;
    let mission = src.missions.get(&row.id).ok()??;
    let worktree = crate::worktree::Worktrees::new(src.missions.store().clone())
        .get(&mission.id)
        .ok()?;
    let detail = match detail(&src.host, &mission, row.clone(), worktree.as_ref()) {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!("board: detail read failed: {e}");
            return None;
        }
    };
    Some(Snapshot {
        detail: Some(detail),
        query: now.clone(),
        ..last.clone()
    })
}

/// Read one snapshot for `q`. Failures land in `store_error` (shown in the status
/// bar) instead of ending the thread: a locked or missing file may recover.
pub fn build(src: &Source, q: &Query) -> Snapshot {
    let snap = match try_build(src, q) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("board: snapshot failed: {e}");
            Snapshot {
                store_error: Some(one_line(&e)),
                beta: src.beta,
                ..Snapshot::default()
            }
        }
    };
    Snapshot {
        query: q.clone(),
        ..snap
    }
}

/// Open missions checked for a dead host per refresh (each check reads /proc once
/// per distinct host, not per mission).
pub(crate) const OPEN_SCAN: usize = 500;

fn try_build(src: &Source, q: &Query) -> Result<Snapshot, String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let (total, open) = src.missions.counts().map_err(|e| s(&e))?;
    let pending = src.asks.pending(ASKS_LIMIT).map_err(|e| s(&e))?;
    let inbox_items = src.missions.inbox(false, INBOX_LIMIT).map_err(|e| s(&e))?;
    let mut hosts = HostProbe(crate::mission::hosts::Probe::new(
        src.missions.store().clone(),
    ));
    let (needs, intents) = needs_me(src, &pending, &inbox_items, q.hide_terminal, &mut hosts)?;
    let (group, why): (Vec<Mission>, Vec<Needs>) = needs.into_iter().unzip();
    let listing = Listing {
        order: q.order,
        open_only: q.hide_terminal,
        exclude: &group,
    };
    let listed = group.len() + src.missions.listing_len(&listing, (total, open));
    // The needs-me group leads; the sorted listing follows it.
    let ordered = |offset: usize, limit: usize| -> Result<Vec<Mission>, String> {
        let mut out: Vec<Mission> = group.iter().skip(offset).take(limit).cloned().collect();
        if out.len() < limit {
            let rest = offset.saturating_sub(group.len());
            out.extend(
                src.missions
                    .listing_page(&listing, rest, limit - out.len())
                    .map_err(|e| s(&e))?,
            );
        }
        Ok(out)
    };
    let limit = q.limit.max(1);
    let (page, selected, matched, offset) = if q.filter.trim().is_empty() {
        let page = ordered(q.offset, limit)?;
        let selected = q
            .selected
            .checked_sub(q.offset)
            .and_then(|i| page.get(i))
            .cloned();
        (page, selected, None, q.offset)
    } else {
        let matches = filtered(&ordered, &q.filter)?;
        let offset = q.offset.min(matches.len().saturating_sub(1));
        let page: Vec<Mission> = matches.iter().skip(offset).take(limit).cloned().collect();
        let selected = matches.get(q.selected).cloned();
        (page, selected, Some(matches.len()), offset)
    };
    let shown = match &q.detail_for {
        Some(id) => src.missions.get(id).map_err(|e| s(&e))?,
        None => selected,
    };
    let ids: Vec<&str> = page
        .iter()
        .chain(shown.as_ref())
        .map(|m| m.id.as_str())
        .collect();
    let pending_counts = src.asks.pending_counts(&ids).map_err(|e| s(&e))?;
    let worktrees = crate::worktree::Worktrees::new(src.missions.store().clone())
        .of_many(&ids)
        .map_err(|e| s(&e))?;
    let needs_of: HashMap<&str, Needs> = group.iter().map(|m| m.id.as_str()).zip(why).collect();
    let queue = if page
        .iter()
        .chain(shown.as_ref())
        .any(|m| m.status == Status::Queued)
    {
        src.missions.queue_positions().map_err(|e| s(&e))?
    } else {
        HashMap::new()
    };
    let owned_ids: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
    let checks = src.missions.checks_of(&owned_ids).map_err(|e| s(&e))?;
    let costs = crate::ops::show::mission_costs(&src.host, &owned_ids).map_err(|e| s(&e))?;
    let mut row_of = |m: &Mission| {
        let mut row = mission_row(m, pending_counts.get(&m.id).copied().unwrap_or(0));
        row.check = checks.get(&m.id).and_then(check_mark);
        row.cost = costs.get(&m.id).map(|c| one_line(&c.short()));
        row.queue_position = queue.get(&m.id).copied();
        row.workspace = workspace(worktrees.get(&m.id));
        row.needs = needs_of.get(m.id.as_str()).copied().or_else(|| {
            (m.status == Status::Open && hosts.gone(m.host.as_ref())).then_some(Needs::HostGone)
        });
        row
    };
    let rows: Vec<MissionRow> = page.iter().map(&mut row_of).collect();
    let detail = match shown {
        // Its worktree was read with the page's (the ids read include it).
        Some(m) => {
            let cost = costs.get(&m.id).map(|c| one_line(&c.line()));
            let mut d = detail(&src.host, &m, row_of(&m), worktrees.get(&m.id))?;
            d.cost = cost;
            Some(d)
        }
        None => None,
    };
    // The asks pane names each ask's mission by its intent, from the needs-me read
    // (every ask read is of a mission that read covered).
    let mut asks: Vec<AskRow> = pending
        .iter()
        .map(|a| {
            let mut row = ask_row(a);
            row.intent = a
                .mission_id
                .as_ref()
                .and_then(|id| intents.get(id).cloned())
                .unwrap_or_default();
            row
        })
        .collect();
    asks.reverse();
    let pending_total = src.asks.pending_count().map_err(|e| s(&e))? as usize;
    let inbox: Vec<InboxRow> = inbox_items.iter().map(inbox_row).collect();
    let inbox_total = src.missions.inbox_count(false).map_err(|e| s(&e))? as usize;
    let (schedules, schedules_total) = schedule_rows(src, q.schedules)?;
    Ok(Snapshot {
        generation: 0,
        total_missions: total as usize,
        open_missions: open as usize,
        listed,
        needs_me: group.len(),
        matched,
        offset,
        rows,
        detail,
        asks,
        pending_total,
        inbox_total,
        inbox,
        oracle_trace: oracle_trace(src)?,
        oracle_model: if src.beta {
            oracle_model(&src.config)
        } else {
            None
        },
        beta: src.beta,
        fleet_used: (src.fleet_probe)().0,
        fleet_cap: src.config.fleet_max_parallel().unwrap_or(0),
        fleet_memory: (src.fleet_probe)().1,
        fleet_memory_cap: src.config.fleet_max_memory().unwrap_or(None),
        hosts: crate::mission::hosts::Hosts::new(src.missions.store().clone())
            .live()
            .map_err(|e| s(&e))?
            .into_iter()
            .filter(|h| h.width.is_some())
            .collect(),
        next_schedule: crate::sched::schedules::Schedules::new(src.missions.store().clone())
            .list()
            .map_err(|e| s(&e))?
            .into_iter()
            .filter(|sc| !sc.paused)
            .min_by_key(|sc| sc.next_tick)
            .map(|sc| {
                (
                    one_line(&sc.name),
                    sc.next_tick,
                    sc.last_outcome.as_deref().map(one_line),
                )
            }),
        fleet_today: fleet_today(src),
        schedules,
        schedules_total,
        store_error: None,
        query: Query::default(),
    })
}

/// The schedules panel's rows: the first `shown` by name, when it is open.
fn schedule_rows(src: &Source, shown: usize) -> Result<(Vec<ScheduleRow>, usize), String> {
    if shown == 0 {
        return Ok((Vec::new(), 0));
    }
    let (page, total) = crate::sched::schedules::Schedules::new(src.missions.store().clone())
        .page(shown)
        .map_err(|e| e.to_string())?;
    let rows = page
        .into_iter()
        .map(|sc| ScheduleRow {
            name: one_line(&sc.name),
            when: one_line(&format!("{} ({})", sc.cron, sc.tz)),
            next: (!sc.paused).then_some(sc.next_tick),
            last_tick: sc.last_tick,
            last_outcome: sc.last_outcome.as_deref().map(one_line),
            fires: one_line(&match &sc.fires {
                crate::sched::schedules::Fires::Template { template, .. } => {
                    format!("template {template}")
                }
                crate::sched::schedules::Fires::Plain { agent, intent, .. } => {
                    format!("{agent}: {intent}")
                }
            }),
        })
        .collect();
    Ok((rows, total))
}

/// Whether hosts are alive, each checked once per refresh.
struct HostProbe(crate::mission::hosts::Probe);

impl HostProbe {
    /// The mission names a host and that host is gone (a record from before hosts
    /// were recorded names none, and is never called gone).
    fn gone(&mut self, host: Option<&HostId>) -> bool {
        host.is_some_and(|h| !self.0.lives(h))
    }
}

/// One-line intents by mission id.
type Intents = HashMap<String, String>;

/// The missions that need the operator, most pressing reason first, then newest:
/// those with a pending ask (of the asks read), open ones whose host is gone (of
/// the open ones scanned), and those whose blocker waits unread in the inbox.
/// Also the one-line intent of every mission it read (the asks pane's, as the
/// missions of all the pending asks read are among them).
fn needs_me(
    src: &Source,
    pending: &[Ask],
    inbox: &[InboxItem],
    open_only: bool,
    hosts: &mut HostProbe,
) -> Result<(Vec<(Mission, Needs)>, Intents), String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let mut why: HashMap<String, Needs> = HashMap::new();
    let mut note = |id: &str, n: Needs| {
        let e = why.entry(id.to_string()).or_insert(n);
        *e = (*e).min(n);
    };
    for a in pending {
        if let Some(id) = &a.mission_id {
            note(id, Needs::Ask);
        }
    }
    for i in inbox.iter().filter(|i| i.report.kind == "blocker") {
        note(&i.mission_id, Needs::Blocker);
    }
    let open = src.missions.open_hosts(OPEN_SCAN).map_err(|e| s(&e))?;
    for (id, _) in open.iter().filter(|(_, h)| hosts.gone(h.as_ref())) {
        note(id, Needs::HostGone);
    }
    let ids: Vec<String> = why.keys().cloned().collect();
    let read = src.missions.get_many(&ids).map_err(|e| s(&e))?;
    let intents = read
        .iter()
        .map(|m| (m.id.clone(), one_line(&m.intent)))
        .collect();
    let mut out: Vec<(Mission, Needs)> = read
        .into_iter()
        .filter(|m| !(open_only && m.status.is_terminal()))
        .map(|m| {
            let n = why[&m.id];
            (m, n)
        })
        .collect();
    out.sort_by(|(a, na), (b, nb)| {
        na.cmp(nb)
            .then(b.created_at.cmp(&a.created_at))
            .then(b.id.cmp(&a.id))
    });
    Ok((out, intents))
}

/// The workspace column: `cwd` (the directory it was fired in), else its worktree
/// (branch `mission/<id8>`, named in the detail pane) and what became of it.
fn workspace(wt: Option<&crate::worktree::Worktree>) -> String {
    use crate::worktree::State;
    match wt.map(|w| w.state) {
        None => "cwd",
        Some(State::Active | State::Merging) => "worktree",
        Some(State::Merged) => "merged",
        Some(State::Discarded) => "discarded",
    }
    .to_string()
}

/// The newest oracle trace lines of every mission, oldest first, as one line each.
fn oracle_trace(src: &Source) -> Result<Vec<String>, String> {
    let lines = Trace::reader(src.host.store().clone())
        .recent(TRACE_LIMIT)
        .map_err(|e| e.to_string())?;
    Ok(lines.iter().map(|l| one_line(l)).collect())
}

/// The configured oracle model, described without connecting to it.
fn oracle_model(config: &Config) -> Option<String> {
    let settings = crate::model::ModelSettings::from_config(config).ok()?;
    Some(one_line(&match settings.scripted_path() {
        Some(path) => format!("scripted ({})", path.display()),
        None => format!(
            "{} at {}",
            settings.model.as_deref().unwrap_or("no model-name"),
            settings.base_url
        ),
    }))
}

/// Missions matching `filter` (id, state, agent, envelope or intent contain it),
/// in the board's order, scanning at most [`FILTER_SCAN_CAP`] rows page by page.
fn filtered(
    ordered: &dyn Fn(usize, usize) -> Result<Vec<Mission>, String>,
    filter: &str,
) -> Result<Vec<Mission>, String> {
    let needle = filter.trim().to_lowercase();
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < FILTER_SCAN_CAP {
        let page = ordered(offset, FILTER_PAGE)?;
        let n = page.len();
        out.extend(page.into_iter().filter(|m| matches(m, &needle)));
        if n < FILTER_PAGE {
            break;
        }
        offset += n;
    }
    Ok(out)
}

fn matches(m: &Mission, needle: &str) -> bool {
    [
        m.id.as_str(),
        m.status.as_str(),
        m.agent_name.as_str(),
        m.envelope_name.as_str(),
        m.intent.as_str(),
    ]
    .iter()
    .any(|f| f.to_lowercase().contains(needle))
}

pub fn mission_row(m: &Mission, pending_asks: i64) -> MissionRow {
    MissionRow {
        id: one_line(&m.id),
        intent: one_line(&m.intent),
        agent: one_line(&m.agent_name),
        envelope: one_line(&m.envelope_name),
        status: m.status,
        status_reason: m
            .status_reason
            .as_deref()
            .map(one_line)
            .filter(|r| !r.is_empty()),
        created_at: m.created_at,
        last_heartbeat: m.last_heartbeat,
        pending_asks,
        workspace: "cwd".to_string(),
        host: m
            .host
            .as_ref()
            .map_or_else(|| "-".to_string(), |h| one_line(h.machine_label())),
        cost: None,
        queue_position: None,
        needs: None,
        check: None,
    }
}

pub fn ask_row(a: &Ask) -> AskRow {
    AskRow {
        id: one_line(&a.id),
        mission_id: a.mission_id.clone(),
        agent: one_line(&a.agent_name),
        question: a.takes_words(),
        summary: one_line(&a.args_summary),
        detail: a
            .diff
            .as_deref()
            .map(sanitize)
            .filter(|d| !d.trim().is_empty()),
        tool: one_line(&format!("{}.{}", a.tools_name, a.tool_name)),
        envelope: one_line(&a.envelope_name),
        matched_rule: a.matched_rule,
        on_timeout: one_line(&a.on_timeout),
        intent: String::new(),
        created_at: a.created_at,
        expires_at: a.expires_at,
    }
}

pub fn inbox_row(i: &InboxItem) -> InboxRow {
    InboxRow {
        id: i.id.clone(),
        mission_id: i.mission_id.clone(),
        agent: one_line(&i.agent_name),
        reason: i.reason_label().to_string(),
        kind: one_line(&i.report.kind),
        summary: one_line(&i.report.summary),
        created_at: i.created_at,
    }
}

pub fn report_row(r: &Report) -> ReportRow {
    ReportRow {
        kind: one_line(&r.kind),
        summary: one_line(&r.summary),
        detail: sanitize(r.detail.trim()),
        refs: r.refs.iter().map(|x| one_line(x)).collect(),
        warning: r.downgrade_warning().map(one_line),
        created_at: r.created_at,
    }
}

/// The mark a row shows beside its state for its check.
fn check_mark(c: &crate::mission::check::CheckRecord) -> Option<&'static str> {
    use crate::mission::check::CheckState;
    match c.state {
        CheckState::None => None,
        CheckState::Running => Some("…"),
        CheckState::Passed => Some("✓"),
        CheckState::Failed => Some("✗"),
    }
}

/// How many lines of the last check output the detail shows.
const DETAIL_CHECK_LINES: usize = 6;

/// The detail's check lines: state and command, the last try, the output's tail.
fn check_detail(c: &crate::mission::check::CheckRecord) -> Vec<String> {
    let mut lines = vec![one_line(&format!("{} · `{}`", c.state_words(), c.command))];
    if let Some(outcome) = &c.last_outcome {
        lines.push(one_line(&format!("last try: {outcome}")));
    }
    if let Some(output) = &c.last_output {
        let all: Vec<&str> = output.trim_end().lines().collect();
        lines.extend(
            all[all.len().saturating_sub(DETAIL_CHECK_LINES)..]
                .iter()
                .map(|l| format!("| {}", one_line(l))),
        );
    }
    lines
}

/// The detail of `m`, given its row and its worktree (`None`: it has none).
/// What kind of process hosts mission `m`, for the detail's host line: a
/// `missionboard host` (it advertised a width), this board, or the process that
/// fired it; or where it waits in the queue.
fn host_role(
    missions: &Missions,
    m: &Mission,
    row: &MissionRow,
) -> crate::mission::Result<Option<String>> {
    if m.status == Status::Queued {
        let at = row
            .queue_position
            .map(|n| format!(" at #{n}"))
            .unwrap_or_default();
        let on = missions
            .run_on(&m.id)?
            .map(|l| format!(" labelled {}", one_line(&l)))
            .unwrap_or_default();
        return Ok(Some(format!(
            "waiting in the queue{at} for a `missionboard host`{on}"
        )));
    }
    let Some(host) = &m.host else {
        return Ok(None);
    };
    let pid = host.pid;
    Ok(Some(if missions.run_by_queue_host(&m.id)? {
        format!("a `missionboard host` (pid {pid})")
    } else if host.id == crate::host::HostId::current().id {
        "this board".to_string()
    } else {
        format!(
            "the process that fired it (pid {pid}: a board, an editor session or `mission fire --wait`)"
        )
    }))
}

fn detail(
    host: &Host,
    m: &Mission,
    row: MissionRow,
    worktree: Option<&crate::worktree::Worktree>,
) -> Result<Detail, String> {
    let missions = host.missions();
    let mut reports = missions
        .reports(&m.id, REPORTS_LIMIT)
        .map_err(|e| e.to_string())?;
    reports.reverse();
    let handover = reports
        .iter()
        .find_map(|r| r.handover.as_ref())
        .map(|h| {
            let mut lines = Vec::new();
            if !h.outcome.is_empty() {
                lines.push(format!("outcome: {}", one_line(&h.outcome)));
            }
            if !h.artifacts.is_empty() {
                let a: Vec<String> = h.artifacts.iter().map(|a| one_line(a)).collect();
                lines.push(format!("artifacts: {}", a.join(", ")));
            }
            if !h.handover_for_next.is_empty() {
                lines.push(format!("next: {}", one_line(&h.handover_for_next)));
            }
            if !h.caveats.is_empty() {
                lines.push(format!("caveats: {}", one_line(&h.caveats)));
            }
            lines
        })
        .unwrap_or_default();
    let plan = if m.plan_revision > 0 {
        missions.plan(&m.id).map_err(|e| e.to_string())?.entries
    } else {
        Vec::new()
    };
    let worktree = worktree.map(|wt| {
        one_line(&format!(
            "{} on {} ({})",
            wt.path.display(),
            wt.branch,
            crate::worktree::workspace_label(Some(wt.state))
        ))
    });
    let record = ComputeLedger::new(host.store().clone())
        .get(&m.id)
        .map_err(|e| e.to_string())?;
    let context = record
        .as_ref()
        .and_then(|r| r.context)
        .map(|c| c.describe());
    let spent = record.map(|r| r.spent).unwrap_or_default();
    let until = if m.status.is_terminal() {
        m.updated_at
    } else {
        crate::clock::now_ms()
    };
    let spend = format!(
        "{} · {} · {} {}",
        crate::text::counted(spent.tool_calls, "tool call", "tool calls"),
        crate::text::counted(spent.tokens, "token", "tokens"),
        crate::duration::age((until - m.created_at).div_euclid(1000)),
        if m.status.is_terminal() {
            "in all"
        } else {
            "so far"
        }
    );
    // What its units used, once a sampling round saw one.
    let spend = match crate::ops::show::resources(host, &m.id)
        .map_err(|e| e.to_string())?
        .filter(|r| r.peak_rss_bytes.is_some())
    {
        Some(r) => format!("{spend} · {}", r.line()),
        None => spend,
    };
    let check = missions
        .check(&m.id)
        .map_err(|e| e.to_string())?
        .map(|c| check_detail(&c))
        .unwrap_or_default();
    Ok(Detail {
        check,
        host_role: host_role(missions, m, &row).map_err(|e| e.to_string())?,
        worktree,
        spend: Some(spend),
        context,
        fired_by: crate::ops::show::fired_by(host, m).map_err(|e| e.to_string())?,
        mission: row,
        last_error: m
            .last_error
            .as_deref()
            .map(one_line)
            .filter(|e| !e.is_empty()),
        plan: plan
            .iter()
            .map(|p| PlanRow {
                content: one_line(&p.content),
                status: p.status.clone(),
            })
            .collect(),
        plan_revision: m.plan_revision,
        reports: reports.iter().map(report_row).collect(),
        handover,
        cost: None,
    })
}

/// `today $0.75/$1.00 budget`: the fleet's spend today as its budgets count it,
/// once anything is spent or a daily budget is set.
fn fleet_today(src: &Source) -> Option<String> {
    let (spent, budget) = crate::ops::show::fleet_today(&src.host).ok()?;
    let usd = crate::ops::spend::usd_text;
    match budget {
        Some(b) => Some(format!("today {}/{} budget", usd(spent), usd(b))),
        None if spent > 0.0 => Some(format!("today {}", usd(spent))),
        None => None,
    }
}
