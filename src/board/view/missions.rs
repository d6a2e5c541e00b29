//! The missions table: only the rows of the visible window exist in the snapshot.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{age, fit, pane_block, truncate};
use crate::board::snapshot::count_label;
use crate::board::model::{Model, Pane};
use crate::board::update::short;

/// Column widths (cells); the intent takes what is left.
const STATE: usize = 11;
const ID: usize = 8;
const AGENT: usize = 10;
const ENVELOPE: usize = 9;
const AGE: usize = 4;
const BEAT: usize = 4;
const ASKS: usize = 4;

pub fn render(frame: &mut Frame, area: Rect, m: &Model, now_ms: i64) {
    let s = &m.snap;
    let mut title = format!(
        " Missions {} ({} open) ",
        s.total_missions,
        count_label(s.open_missions)
    );
    if !m.filter.is_empty() || m.mode == crate::board::model::Mode::Filter {
        let matched = s.matched.unwrap_or(0);
        title.push_str(&format!("/{} ({matched} matched) ", m.filter.as_str()));
    }
    let block = pane_block(m, title, Some(Pane::Missions));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let e = m.symbols.ellipsis;
    let intent_w = (inner.width as usize)
        .saturating_sub(STATE + ID + AGENT + ENVELOPE + AGE + BEAT + ASKS + 7);
    let cols = [STATE, ID, AGENT, ENVELOPE, AGE, BEAT, ASKS, intent_w];
    let row = |cells: [String; 8]| -> String {
        cells
            .iter()
            .zip(cols)
            .map(|(c, w)| fit(c, w, e))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut lines = vec![Line::styled(
        row([
            "STATE", "ID", "AGENT", "ENVELOPE", "AGE", "BEAT", "ASKS", "INTENT",
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
        let beat = r.last_heartbeat.map_or("-".to_string(), |h| age(now_ms, h));
        let badge = fit(m.symbols.status_badge(r.status), STATE, e);
        let rest = row([
            String::new(),
            short(&r.id).to_string(),
            r.agent.clone(),
            r.envelope.clone(),
            age(now_ms, r.created_at),
            beat,
            asks,
            r.intent.clone(),
        ]);
        // `rest` starts with the empty state cell's padding; replace it with the badge.
        let rest = rest.get(STATE..).unwrap_or("").to_string();
        let mut spans = vec![
            Span::styled(badge, m.theme.status(r.status)),
            Span::raw(rest),
        ];
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
