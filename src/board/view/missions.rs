//! The missions table: only the rows of the visible window exist in the snapshot.
//! What needs the operator leads it (a pending ask, a dead host, an unread
//! blocker); the rest follow in the chosen sort, the terminal ones optionally hidden.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{age, fit, framed_pane, truncate};
use crate::board::model::short;
use crate::board::model::{Model, Needs, Pane};
use crate::text::count;

/// Column widths (cells); the intent takes what is left. The envelope and the
/// heartbeat are the detail pane's: a mission is told apart by its intent.
const STATE: usize = 11;
const ID: usize = 8;
const AGENT: usize = 8;
const AGE: usize = 4;
const ASKS: usize = 4;
const WORKSPACE: usize = 9;
const HOST: usize = 10;
/// The intent keeps at least this much before the workspace column shows (and the
/// host column, which gives way first).
const MIN_INTENT: usize = 24;

pub fn render(frame: &mut Frame, area: Rect, m: &Model, now_ms: i64) {
    let s = &m.snap;
    let mut title = if m.hide_terminal {
        format!(
            " Missions {} open of {} (terminal hidden) ",
            count(s.listed as u64),
            count(s.total_missions as u64)
        )
    } else {
        format!(
            " Missions {} ({} open) ",
            count(s.total_missions as u64),
            count(s.open_missions as u64)
        )
    };
    title.push_str(&format!("by {} ", m.order.as_str()));
    if s.needs_me > 0 {
        title.push_str(&format!(
            "{}{} need you ",
            m.symbols.sep.trim_start(),
            s.needs_me
        ));
    }
    if !m.filter.is_empty() || m.mode == crate::board::model::Mode::Filter {
        let matched = s.matched.unwrap_or(0);
        let cap = crate::board::snapshot::FILTER_SCAN_CAP;
        // A filter scans a bounded prefix of the listing: say so when it is cut.
        let scope = if s.listed > cap {
            format!(" of {} scanned", count(cap as u64))
        } else {
            String::new()
        };
        title.push_str(&format!(
            "/{} ({matched} matched{scope}) ",
            m.filter.as_str()
        ));
    }
    let inner = framed_pane(frame, area, m, title, Pane::Missions);
    let e = m.symbols.ellipsis;
    let fixed = STATE + ID + AGENT + AGE + ASKS + 5;
    // The workspace column gives way to the intent on a narrow pane (the side-by-side
    // layout's table); the detail pane always names the workspace.
    // The host column gives way before it; the detail pane always names the host.
    let width = inner.width as usize;
    let with_workspace = width >= fixed + WORKSPACE + 1 + MIN_INTENT;
    let with_host = with_workspace && width >= fixed + WORKSPACE + 1 + HOST + 1 + MIN_INTENT;
    let workspace_w = if with_workspace { WORKSPACE } else { 0 };
    let host_w = if with_host { HOST } else { 0 };
    let intent_w = width.saturating_sub(
        fixed
            + if with_workspace { WORKSPACE + 1 } else { 0 }
            + if with_host { HOST + 1 } else { 0 },
    );
    let cols = [STATE, ID, AGENT, AGE, ASKS, workspace_w, host_w, intent_w];
    let row = |cells: [String; 8]| -> String {
        cells
            .iter()
            .zip(cols)
            .filter(|(_, w)| *w > 0)
            .map(|(c, w)| fit(c, w, e))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut lines = vec![Line::styled(
        row([
            "STATE",
            "ID",
            "AGENT",
            "AGE",
            "ASKS",
            "WORKSPACE",
            "HOST",
            "INTENT",
        ]
        .map(String::from)),
        m.theme.header,
    )];
    if s.rows.is_empty() {
        let text = if m.filter.is_empty() {
            "no missions yet — press f (or :mission) to fire one"
        } else {
            "no mission matches the filter — Esc clears it"
        };
        lines.push(Line::styled(
            truncate(text, inner.width as usize, e),
            m.theme.muted,
        ));
    }
    for (i, r) in s
        .rows
        .iter()
        .enumerate()
        .take(inner.height.saturating_sub(1) as usize)
    {
        let selected = s.offset + i == m.mission_sel;
        let asks = if r.pending_asks > 0 {
            r.pending_asks.to_string()
        } else {
            String::new()
        };
        // A dead host or an unread blocker says so where the state is (the detail
        // pane still names the state); a pending ask shows in ASKS.
        let (badge, badge_style) = match r.needs {
            Some(n @ (Needs::HostGone | Needs::Blocker)) => {
                (format!("{} {}", m.symbols.warn, n.label()), m.theme.warning)
            }
            // Its place in the queue says more than the glyph, and fits the column.
            _ => match r.queue_position {
                Some(n) => (format!("queued #{n}"), m.theme.status(r.status)),
                // A check's mark rides beside the state: ✓ passed, ✗ failed.
                None => (
                    match r.check {
                        Some(mark) => format!("{} {mark}", m.symbols.status_badge(r.status)),
                        None => m.symbols.status_badge(r.status).to_string(),
                    },
                    m.theme.status(r.status),
                ),
            },
        };
        let badge = fit(&badge, STATE, e);
        let rest = row([
            String::new(),
            short(&r.id).to_string(),
            r.agent.clone(),
            age(now_ms, r.created_at),
            asks,
            r.workspace.clone(),
            r.host.clone(),
            // Its cost leads the intent, where a narrow pane still shows it.
            match &r.cost {
                Some(cost) => format!("{cost}{}{}", m.symbols.sep, r.intent),
                None => r.intent.clone(),
            },
        ]);
        // `rest` starts with the empty state cell's padding; replace it with the badge.
        let rest = rest.get(STATE..).unwrap_or("").to_string();
        let mut spans = vec![Span::styled(badge, badge_style), Span::raw(rest)];
        if r.pending_asks > 0 {
            spans[1].style = spans[1].style.patch(m.theme.ask_pending);
        }
        let mut line = Line::from(spans);
        if selected {
            line = line.style(if m.focus == Pane::Missions {
                m.theme.selection
            } else {
                m.theme.title
            });
        }
        lines.push(line);
    }
    frame.render_widget(Paragraph::new(lines), inner);
}
