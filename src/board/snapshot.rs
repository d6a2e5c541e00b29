//! The store thread: its own SQLite connection (so the board's reads never queue
//! behind the fleet's writes on the shared one), woken by `PRAGMA data_version`
//! changes or a new query, publishing `Arc<Snapshot>` on a `watch` (which
//! coalesces: the UI only ever sees the latest). It reads only the visible window.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::model::{AskRow, Detail, InboxRow, MissionRow, PlanRow, Query, ReportRow, Snapshot};
use crate::asks::{Ask, Asks};
use crate::config::Config;
use crate::mission::inbox::InboxItem;
use crate::mission::{Mission, Missions, Report};
use crate::oracle::trace::Trace;
use crate::store::Store;
use crate::text::{one_line, sanitize};

/// How often the thread looks for a new query (keys feel instant).
const QUERY_POLL: Duration = Duration::from_millis(20);
/// How often it asks SQLite whether another connection committed (the 100 ms
/// refresh promise).
const CHANGE_POLL: Duration = Duration::from_millis(100);
/// Rebuild at least this often anyway: expiry sweeps, fleet width, live ages.
const HEARTBEAT: Duration = Duration::from_secs(1);
/// The pending asks and inbox items read per refresh.
const ASKS_LIMIT: usize = 200;
const INBOX_LIMIT: usize = 200;
const REPORTS_LIMIT: usize = 200;
const TRACE_LIMIT: usize = 200;
/// A filter scans the missions newest first in pages, up to this many rows.
pub const FILTER_SCAN_CAP: usize = 5000;
const FILTER_PAGE: usize = 500;

/// Facts only the host knows: how many units it holds right now.
pub type FleetProbe = Box<dyn Fn() -> usize + Send>;

pub struct Source {
    pub missions: Missions,
    pub asks: Asks,
    pub config: Config,
    pub fleet_probe: FleetProbe,
    pub beta: bool,
}

impl Source {
    pub fn open(
        db: &std::path::Path,
        fleet_probe: FleetProbe,
        beta: bool,
    ) -> Result<Source, String> {
        let store = Store::open(db).map_err(|e| e.to_string())?;
        Ok(Source {
            missions: Missions::new(store.clone()),
            asks: Asks::new(store.clone()),
            config: Config::new(store),
            fleet_probe,
            beta,
        })
    }
}

/// Start the thread. It ends when the query sender (the UI) is dropped.
pub fn spawn(
    db: PathBuf,
    fleet_probe: FleetProbe,
    beta: bool,
    mut queries: watch::Receiver<Query>,
    out: watch::Sender<Arc<Snapshot>>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("board-store".into())
        .spawn(move || {
            let src = match Source::open(&db, fleet_probe, beta) {
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
            let mut last_version: Option<i64> = None;
            let mut last_build: Option<Instant> = None;
            let mut last_check = Instant::now();
            loop {
                if queries.has_changed().is_err() || out.is_closed() {
                    return;
                }
                let query = queries.borrow_and_update().clone();
                let heartbeat = last_build.is_none_or(|t| t.elapsed() >= HEARTBEAT);
                let mut changed = last_query.as_ref() != Some(&query) || heartbeat;
                if last_check.elapsed() >= CHANGE_POLL || heartbeat {
                    last_check = Instant::now();
                    let v = src.missions.store().data_version().ok();
                    changed |= v != last_version;
                    last_version = v;
                }
                if heartbeat {
                    // The reconciling sweep: past-deadline asks get their on-timeout verdict.
                    if let Err(e) = src.asks.sweep_expired() {
                        tracing::warn!("board: ask sweep failed: {e}");
                    }
                }
                if changed {
                    generation += 1;
                    let mut snap = build(&src, &query);
                    snap.generation = generation;
                    if out.send(Arc::new(snap)).is_err() {
                        return;
                    }
                    last_query = Some(query);
                    last_build = Some(Instant::now());
                }
                std::thread::sleep(QUERY_POLL);
            }
        })
}

/// Read one snapshot for `q`. Failures land in `store_error` (shown in the status
/// bar) instead of ending the thread: a locked or missing file may recover.
pub fn build(src: &Source, q: &Query) -> Snapshot {
    match try_build(src, q) {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("board: snapshot failed: {e}");
            Snapshot {
                store_error: Some(one_line(&e)),
                beta: src.beta,
                ..Snapshot::default()
            }
        }
    }
}

fn try_build(src: &Source, q: &Query) -> Result<Snapshot, String> {
    let s = |e: &dyn std::fmt::Display| e.to_string();
    let (total, open) = src.missions.counts().map_err(|e| s(&e))?;
    let limit = q.limit.max(1);
    let (page, selected, matched, offset) = if q.filter.trim().is_empty() {
        let page = src.missions.list_page(q.offset, limit).map_err(|e| s(&e))?;
        let selected = q
            .selected
            .checked_sub(q.offset)
            .and_then(|i| page.get(i))
            .cloned();
        (page, selected, None, q.offset)
    } else {
        let matches = filtered(&src.missions, &q.filter)?;
        let offset = q.offset.min(matches.len().saturating_sub(1));
        let page: Vec<Mission> = matches.iter().skip(offset).take(limit).cloned().collect();
        let selected = matches.get(q.selected).cloned();
        (page, selected, Some(matches.len()), offset)
    };
    let ids: Vec<&str> = page
        .iter()
        .chain(selected.as_ref())
        .map(|m| m.id.as_str())
        .collect();
    let pending = src.asks.pending_counts(&ids).map_err(|e| s(&e))?;
    let count_of = |id: &str| pending.get(id).copied().unwrap_or(0);
    let rows: Vec<MissionRow> = page
        .iter()
        .map(|m| mission_row(m, count_of(&m.id)))
        .collect();
    let detail = match selected {
        Some(m) => Some(detail(&src.missions, &m, count_of(&m.id))?),
        None => None,
    };
    let mut asks: Vec<AskRow> = src
        .asks
        .pending(ASKS_LIMIT)
        .map_err(|e| s(&e))?
        .iter()
        .map(ask_row)
        .collect();
    asks.reverse();
    let pending_total = src.asks.pending_count().map_err(|e| s(&e))? as usize;
    let inbox: Vec<InboxRow> = src
        .missions
        .inbox(false, INBOX_LIMIT)
        .map_err(|e| s(&e))?
        .iter()
        .map(inbox_row)
        .collect();
    Ok(Snapshot {
        generation: 0,
        total_missions: total as usize,
        open_missions: open as usize,
        matched,
        offset,
        rows,
        detail,
        asks,
        pending_total,
        inbox_total: inbox.len(),
        inbox,
        oracle_trace: oracle_trace(src)?,
        oracle_model: if src.beta {
            oracle_model(&src.config)
        } else {
            None
        },
        beta: src.beta,
        fleet_used: (src.fleet_probe)(),
        fleet_cap: src.config.fleet_max_parallel().unwrap_or(0),
        store_error: None,
    })
}

/// The newest oracle trace lines of every mission, oldest first, as one line each.
fn oracle_trace(src: &Source) -> Result<Vec<String>, String> {
    let lines = Trace::new(src.missions.store().clone(), false)
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
/// newest first, scanning at most [`FILTER_SCAN_CAP`] rows page by page.
fn filtered(missions: &Missions, filter: &str) -> Result<Vec<Mission>, String> {
    let needle = filter.trim().to_lowercase();
    let mut out = Vec::new();
    let mut offset = 0;
    while offset < FILTER_SCAN_CAP {
        let page = missions
            .list_page(offset, FILTER_PAGE)
            .map_err(|e| e.to_string())?;
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
        m.hitl_policy_name.as_str(),
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
        envelope: one_line(&m.hitl_policy_name),
        status: m.status,
        status_reason: m
            .status_reason
            .as_deref()
            .map(one_line)
            .filter(|r| !r.is_empty()),
        created_at: m.created_at,
        last_heartbeat: m.last_heartbeat,
        pending_asks,
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
        envelope: one_line(&a.policy_name),
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
        warning: r.downgrade_warning().map(one_line),
        created_at: r.created_at,
    }
}

fn detail(missions: &Missions, m: &Mission, pending: i64) -> Result<Detail, String> {
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
    let worktree = crate::worktree::Worktrees::new(missions.store().clone())
        .get(&m.id)
        .map_err(|e| e.to_string())?
        .map(|wt| {
            one_line(&format!(
                "{} on {} ({})",
                wt.path.display(),
                wt.branch,
                crate::worktree::workspace_label(Some(wt.state))
            ))
        });
    Ok(Detail {
        worktree,
        fired_by: m.parent_session_id.as_deref().map(one_line),
        mission: mission_row(m, pending),
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
    })
}
