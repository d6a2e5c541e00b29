//! The bottom line: mode, host state, counts, fleet width, beta/oracle, key hints —
//! or the command/filter line being typed, or the newest notice, which so never
//! covers a pane.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{cells, field, truncate};
use crate::board::keymap;
use crate::board::model::{Mode, Model};
use crate::board::update::current_context;

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
        Mode::Answering { .. } => "ANSWER",
        Mode::Picking(_) => "FIRE",
        Mode::Confirm(_) => "CONFIRM",
        Mode::Help { .. } => "HELP",
        Mode::Diff(_) => "DIFF",
        Mode::Filter => "FILTER",
        Mode::CommandLine { .. } => "CMD",
    };
    if let Some(line) = notice(m, mode, width) {
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let s = &m.snap;
    let (dot_style, host) = match &s.store_error {
        Some(e) => (t.danger, format!("store error: {e}")),
        None => (t.state_landed, "live".to_string()),
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
    // At the 80-column floor the facts go compact so the key hints still fit.
    let narrow = width < crate::board::layout::WIDE_BREAKPOINT as usize;
    let sep = if narrow { " " } else { m.symbols.sep };
    let demo = if m.host.demo_home.is_some() {
        " DEMO"
    } else {
        ""
    };
    // The oracle needs the beta: with the beta off, "beta off" says both.
    let beta = match (s.beta, m.host.oracle_on) {
        (false, _) => "beta off".to_string(),
        (true, o) => format!("beta on{sep}oracle {}", if o { "on" } else { "off" }),
    };
    let facts = format!(
        " {host}{spin}{sep}asks {}{sep}open {}{sep}inbox {}{sep}fleet {}/{cap}{sep}{beta}",
        s.pending_total, s.open_missions, s.inbox_total, s.fleet_used,
    );
    let hints: Vec<String> = keymap::hints(current_context(m))
        .into_iter()
        .map(|(k, h)| format!("{k} {h}"))
        .collect();
    let mode = if narrow && m.mode == Mode::Board {
        ""
    } else {
        mode
    };
    let mut spans = vec![
        Span::styled(format!("{mode}{demo} ").trim_start().to_string(), t.key),
        Span::styled(m.symbols.dot, dot_style),
        Span::raw(facts),
        Span::raw("  "),
    ];
    let used: usize = spans.iter().map(Span::width).sum();
    let hint_text = truncate(
        &hints.join(" · "),
        width.saturating_sub(used),
        m.symbols.ellipsis,
    );
    spans.push(Span::styled(hint_text, t.muted));
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The newest error, else the newest news, on one line after the mode, with how
/// many more wait; `None` when there is none.
fn notice(m: &Model, mode: &str, width: usize) -> Option<Line<'static>> {
    let newest = m
        .toasts
        .iter()
        .rev()
        .find(|t| t.error)
        .or_else(|| m.toasts.last())?;
    let t = &m.theme;
    let (style, lead) = if newest.error {
        (t.toast_error, " error: ")
    } else {
        (t.toast, " ")
    };
    // Esc is the board's; in another mode it closes that mode, and the notice expires.
    let dismiss = if m.mode == Mode::Board {
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
    let tag = format!("{mode} ");
    let room = width.saturating_sub(cells(&tag) + cells(lead) + cells(&tail));
    let body = truncate(&text.join(m.symbols.sep), room, m.symbols.ellipsis);
    let bar = format!("{lead}{body}{tail}");
    let pad = " ".repeat(width.saturating_sub(cells(&tag) + cells(&bar)));
    Some(Line::from(vec![
        Span::styled(tag, t.key),
        Span::styled(format!("{bar}{pad}"), style),
    ]))
}
