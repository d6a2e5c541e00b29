//! The bottom line: mode, host state, counts, fleet width, beta/oracle, key hints —
//! or the command/filter line being typed, or the newest notice, which so never
//! covers a pane.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{cells, field, truncate, wrap_text};
use crate::board::keymap;
use crate::board::model::{Mode, Model};

pub fn render(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let width = area.width as usize;
    match &m.mode {
        Mode::CommandLine { line } => {
            const HINT: &str = "  Enter run · Esc cancel";
            let mut spans = field(m, (":", t.title), line, width.saturating_sub(30), t.title);
            spans.push(Span::styled(HINT, t.muted));
            frame.render_widget(Paragraph::new(Line::from(spans)), area);
            return;
        }
        Mode::Filter => {
            const HINT: &str = "  Enter keep · Esc clear";
            let mut spans = field(
                m,
                ("/", t.title),
                &m.filter,
                width.saturating_sub(cells(HINT)),
                t.title,
            );
            spans.push(Span::styled(HINT, t.muted));
            frame.render_widget(Paragraph::new(Line::from(spans)), area);
            return;
        }
        _ => {}
    }
    let mode = match &m.mode {
        Mode::Board => "BOARD",
        // The same pane answers a question and decides a gated call.
        Mode::Answering { ask_id } => {
            if m.snap.asks.iter().any(|a| &a.id == ask_id && !a.question) {
                "APPROVE"
            } else {
                "ANSWER"
            }
        }
        Mode::Picking(_) => "FIRE",
        Mode::Confirm(_) => "CONFIRM",
        Mode::Help { .. } => "HELP",
        Mode::Diff(_) => "DIFF",
        Mode::Schedules => "SCHEDULES",
        Mode::Filter => "FILTER",
        Mode::CommandLine { .. } => "CMD",
    };
    let s = &m.snap;
    let (dot_style, host) = match (m.store_outage_since, &s.store_error) {
        (Some(since), _) => (
            t.danger,
            format!(
                "store unreachable for {}, reconnecting",
                super::age(m.now_ms, since)
            ),
        ),
        (None, Some(e)) => (t.danger, format!("store error: {e}")),
        (None, None) => (t.state_landed, "live".to_string()),
    };
    let spin = if m.busy > 0 {
        let frames = m.symbols.spinner;
        format!(" {}", frames[(m.tick as usize) % frames.len()])
    } else {
        String::new()
    };
    let cap = if s.fleet_cap == 0 {
        "∞".to_string()
    } else {
        s.fleet_cap.to_string()
    };
    let cap = if m.symbols.ascii && s.fleet_cap == 0 {
        "inf".to_string()
    } else {
        cap
    };
    let demo = if m.host.demo_home.is_some() {
        " DEMO"
    } else {
        ""
    };
    // Spelled out, compact, or only what needs the operator: the first that leaves
    // every hint room.
    let facts = |tier: usize| {
        let sep = if tier == 0 { m.symbols.sep } else { " " };
        if tier == 2 {
            return format!(
                " {host}{spin} asks {} open {}",
                s.pending_total, s.open_missions
            );
        }
        // The oracle needs the beta: with the beta off, "beta off" says both.
        let beta = match (s.beta, m.host.oracle_on) {
            (false, _) => "beta off".to_string(),
            (true, o) => format!("beta on{sep}oracle {}", if o { "on" } else { "off" }),
        };
        let hosts = super::hosts::fact(m, sep)
            .into_iter()
            .chain(super::hosts::schedule_fact(m))
            .map(|h| format!("{sep}{h}"))
            .collect::<String>();
        // Memory once units run or a bound is set: in use, against the bound.
        let memory = match (s.fleet_memory, s.fleet_memory_cap) {
            (0, None) => String::new(),
            (used, None) => format!("{sep}mem {}", crate::size::text(used)),
            (used, Some(cap)) => format!(
                "{sep}mem {}/{}",
                crate::size::text(used),
                crate::size::text(cap)
            ),
        };
        format!(
            " {host}{spin}{sep}asks {}{sep}open {}{sep}inbox {}{sep}fleet {}/{cap}{memory}{hosts}{sep}{beta}",
            s.pending_total, s.open_missions, s.inbox_total, s.fleet_used,
        )
    };
    let board_tag = if m.mode == Mode::Board { "" } else { mode };
    // A notice keeps only what needs the operator (pending asks, open missions).
    let lead = vec![
        Span::styled(format!("{board_tag} ").trim_start().to_string(), t.key),
        Span::styled(m.symbols.dot, dot_style),
        Span::raw(facts(2)),
        Span::raw(" "),
    ];
    if let Some(lines) = notice(m, lead, width) {
        // A notice too long for the line grows upward over the panes, whole.
        let rows = (lines.len() as u16).min(area.y + 1);
        let rect = Rect {
            y: area.y + 1 - rows,
            height: rows,
            ..area
        };
        frame.render_widget(ratatui::widgets::Clear, rect);
        frame.render_widget(Paragraph::new(lines), rect);
        return;
    }
    let hints: Vec<String> = keymap::hints(m.key_context())
        .into_iter()
        .map(|(k, h)| format!("{k} {h}"))
        .collect();
    const HINT_SEP: &str = " · ";
    let all_hints = hints.join(HINT_SEP);
    let line = |mode: &str, facts: String| {
        let tag = format!("{mode}{demo} ").trim_start().to_string();
        let used = cells(&tag) + cells(m.symbols.dot) + cells(&facts) + 2;
        (tag, facts, used)
    };
    // Everything fits spelled out; else the facts go compact (and the board's own
    // mode tag goes), so the hints still fit at 120 columns; at 80 a mode's hints
    // win over the fleet and beta facts.
    let (tag, facts, used) = [
        line(mode, facts(0)),
        line(board_tag, facts(1)),
        line(board_tag, facts(2)),
    ]
    .into_iter()
    .find(|l| l.2 + cells(&all_hints) <= width)
    .unwrap_or_else(|| line(board_tag, facts(if m.mode == Mode::Board { 1 } else { 2 })));
    // Whole hints only, in the table's order (the first ones matter most); `?` is
    // the way to the rest.
    let room = width.saturating_sub(used);
    let mut hint_text = String::new();
    for h in &hints {
        let next = if hint_text.is_empty() {
            h.clone()
        } else {
            format!("{hint_text}{HINT_SEP}{h}")
        };
        if cells(&next) > room {
            break;
        }
        hint_text = next;
    }
    let spans = vec![
        Span::styled(tag, t.key),
        Span::styled(m.symbols.dot, dot_style),
        Span::raw(truncate(
            &facts,
            width.saturating_sub(2),
            m.symbols.ellipsis,
        )),
        Span::raw("  "),
        Span::styled(hint_text, t.muted),
    ];
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The most rows a notice takes (its last one cut, if it needs more).
pub const NOTICE_ROWS: usize = 6;

/// The newest error, else the newest outcome of an action, else the newest news,
/// after `lead`, with how many more wait — wrapped, never cut, onto as many rows as
/// it needs (up to [`NOTICE_ROWS`]), continuation rows indented under its text;
/// `None` when there is none.
fn notice(m: &Model, lead: Vec<Span<'static>>, width: usize) -> Option<Vec<Line<'static>>> {
    let newest = m
        .toasts
        .iter()
        .rev()
        .find(|t| t.error)
        .or_else(|| m.toasts.iter().rev().find(|t| !t.news))
        .or_else(|| m.toasts.last())?;
    let t = &m.theme;
    let (style, kind) = if newest.error {
        (t.toast_error, " error: ")
    } else {
        (t.toast, " ")
    };
    // Said for an error, which stays longest; Esc is the board's (in another mode it
    // closes that mode, and the notice expires).
    let dismiss = if newest.error && m.mode == Mode::Board {
        " · Esc dismisses"
    } else {
        ""
    };
    let more = match m.toasts.len() - 1 {
        0 => String::new(),
        n => format!(" (+{n})"),
    };
    let tail = format!("{more}{dismiss} ");
    let text: Vec<&str> = newest
        .text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let used: usize = lead.iter().map(Span::width).sum();
    let room = width
        .saturating_sub(used + cells(kind) + cells(&tail))
        .max(1);
    let mut body = wrap_text(&text.join(m.symbols.sep), room);
    if body.len() > NOTICE_ROWS {
        let rest = body.split_off(NOTICE_ROWS - 1).join(" ");
        body.push(truncate(&rest, room, m.symbols.ellipsis));
    }
    let last = body.len() - 1;
    let indent = " ".repeat(used);
    let lines = body
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            let head = if i == 0 {
                kind.to_string()
            } else {
                " ".repeat(cells(kind))
            };
            let end = if i == last { tail.as_str() } else { "" };
            let bar = format!("{head}{chunk}{end}");
            let pad = " ".repeat(width.saturating_sub(used + cells(&bar)));
            let mut spans = if i == 0 {
                lead.clone()
            } else {
                vec![Span::raw(indent.clone())]
            };
            spans.push(Span::styled(format!("{bar}{pad}"), style));
            Line::from(spans)
        })
        .collect();
    Some(lines)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::board::view::tests::{frame, model};

    #[test]
    fn the_status_line_shows_the_units_memory_against_fleet_max_memory() {
        let mut m = model(200, 40, false);
        let status = |m: &crate::board::model::Model| frame(m).lines().last().unwrap().to_string();
        assert!(!status(&m).contains("mem "), "no units, no bound: no fact");
        let mut snap = (*m.snap).clone();
        snap.fleet_memory = 310 << 20;
        m.snap = Arc::new(snap.clone());
        assert!(
            status(&m).contains("fleet 2/8 · mem 310M "),
            "{}",
            status(&m)
        );
        snap.fleet_memory_cap = Some(8 << 30);
        m.snap = Arc::new(snap);
        assert!(
            status(&m).contains("fleet 2/8 · mem 310M/8G "),
            "{}",
            status(&m)
        );
    }
}
