//! The attention panes: pending asks across all missions, the unacked inbox, and
//! the oracle trace. One line per item, so a mouse click maps to a row.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{age, fit, framed_pane, pane_block, truncate};
use crate::board::model::short;
use crate::board::model::{Model, Pane};
use crate::text::count;

fn selected_style(m: &Model, pane: Pane) -> ratatui::style::Style {
    if m.focus == pane && m.mode == crate::board::model::Mode::Board {
        m.theme.selection
    } else {
        m.theme.title
    }
}

/// A list pane's title: how many it holds, and how many it shows when that is
/// fewer (the store holds more than the snapshot reads).
fn counted_title(label: &str, shown: usize, total: usize, what: &str) -> String {
    if total > shown {
        format!(
            " {label} {} of {}{what} ",
            count(shown as u64),
            count(total as u64)
        )
    } else {
        format!(" {label} {}{what} ", count(total as u64))
    }
}

pub fn render_asks(frame: &mut Frame, area: Rect, m: &Model, now_ms: i64) {
    let s = &m.snap;
    let title = counted_title("Pending asks", s.asks.len(), s.pending_total, "");
    let inner = framed_pane(frame, area, m, title, Pane::Asks);
    let width = inner.width as usize;
    let e = m.symbols.ellipsis;
    let mut lines = Vec::new();
    if s.asks.is_empty() {
        lines.push(Line::styled("nothing is waiting for you", m.theme.muted));
    }
    let skip = m
        .ask_sel
        .saturating_sub(inner.height.saturating_sub(1) as usize);
    for (i, a) in s
        .asks
        .iter()
        .enumerate()
        .skip(skip)
        .take(inner.height as usize)
    {
        let marker = if a.question { "Q" } else { "P" };
        let draft = if m
            .drafts
            .get(&a.id)
            .is_some_and(|d| !d.text().trim().is_empty())
        {
            "*"
        } else {
            " "
        };
        let when = age(now_ms, a.created_at);
        let mission = a.mission_id.as_deref().map(short).unwrap_or("-");
        let head = format!("{marker}{draft}{} ", fit(mission, 8, e));
        let room = width.saturating_sub(super::cells(&head) + when.len() + 1);
        // The question first; the asking mission's intent fills what is left.
        let summary = truncate(&a.summary, room, e);
        let rest = room.saturating_sub(super::cells(&summary));
        let intent = if a.intent.is_empty() || rest <= super::cells(m.symbols.sep) + 1 {
            " ".repeat(rest)
        } else {
            fit(&format!("{}{}", m.symbols.sep, a.intent), rest, e)
        };
        let mut line = Line::from(vec![
            Span::styled(head, m.theme.ask_pending),
            Span::raw(summary),
            Span::styled(intent, m.theme.muted),
            Span::styled(format!(" {when}"), m.theme.muted),
        ]);
        if i == m.ask_sel {
            line = line.style(selected_style(m, Pane::Asks));
        }
        lines.push(line);
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

pub fn render_inbox(frame: &mut Frame, area: Rect, m: &Model, now_ms: i64) {
    let s = &m.snap;
    let mut title = counted_title("Inbox", s.inbox.len(), s.inbox_total, " unacked");
    if !m.marked.is_empty() {
        title.push_str(&format!(
            "{}{} marked ",
            m.symbols.sep.trim_start(),
            m.marked.len()
        ));
    }
    let inner = framed_pane(frame, area, m, title, Pane::Inbox);
    let width = inner.width as usize;
    let e = m.symbols.ellipsis;
    let mut lines = Vec::new();
    if s.inbox.is_empty() {
        lines.push(Line::styled("inbox clear", m.theme.muted));
    }
    let window = crate::board::layout::list_window(m.inbox_sel, s.inbox.len(), area.height);
    for (i, it) in s
        .inbox
        .iter()
        .enumerate()
        .skip(window.start)
        .take(window.len())
    {
        let mark = if m.marked.contains(&it.id) {
            m.symbols.dot
        } else {
            " "
        };
        let text = format!(
            "{mark}{} {}{}{}{}{} {}",
            fit(&it.kind, 8, e),
            it.summary,
            m.symbols.sep,
            short(&it.mission_id),
            m.symbols.sep,
            it.reason,
            age(now_ms, it.created_at),
        );
        let mut line = Line::raw(truncate(&text, width, e));
        if i == m.inbox_sel {
            line = line.style(selected_style(m, Pane::Inbox));
        }
        lines.push(line);
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Until an oracle (the board's `o`, or an `--oracle` fire) writes its first trace row.
pub const ORACLE_EMPTY: &str =
    "oracle not mounted — press o (beta) or fire with --oracle to see its trace here";

pub fn render_trace(frame: &mut Frame, area: Rect, m: &Model) {
    let s = &m.snap;
    let title = match &s.oracle_model {
        Some(model) => format!(" Oracle trace{}{model} ", m.symbols.sep),
        None => " Oracle trace ".into(),
    };
    let block = pane_block(m, title, Some(Pane::Trace));
    if s.oracle_trace.is_empty() {
        frame.render_widget(
            Paragraph::new(Line::styled(ORACLE_EMPTY, m.theme.muted))
                .block(block)
                .wrap(Wrap { trim: true }),
            area,
        );
        return;
    }
    let lines: Vec<Line> = s
        .oracle_trace
        .iter()
        .skip(m.trace_scroll)
        .map(|l| Line::raw(l.clone()))
        .collect();
    frame.render_widget(Paragraph::new(lines).block(block), area);
}
