//! Rendering: pure functions of the model and "now". No I/O, no locks; only the
//! visible rows were read, and only they are formatted.

mod detail;
mod lists;
mod missions;
mod overlays;
mod picker;
mod status;

use ratatui::Frame;
use ratatui::layout::Alignment;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::layout;
use super::model::{Mode, Model, Pane};

/// Draw the whole board as of `now_ms` (passed in, so frames are reproducible).
pub fn draw(frame: &mut Frame, m: &Model, now_ms: i64) {
    let area = frame.area();
    if layout::too_small(area) {
        let text = format!(
            "terminal too small (need {}x{}, have {}x{}) — enlarge it, or press q to quit",
            layout::MIN_WIDTH,
            layout::MIN_HEIGHT,
            area.width,
            area.height
        );
        frame.render_widget(
            Paragraph::new(text)
                .alignment(Alignment::Center)
                .wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return;
    }
    let a = layout::areas(area);
    missions::render(frame, a.missions, m, now_ms);
    detail::render(frame, a.detail, m, now_ms);
    lists::render_asks(frame, a.asks, m, now_ms);
    lists::render_inbox(frame, a.inbox, m, now_ms);
    lists::render_trace(frame, a.trace, m);
    status::render(frame, a.status, m);
    match &m.mode {
        Mode::Answering { ask_id } => overlays::answer(frame, area, m, ask_id, now_ms),
        Mode::Picking(p) => picker::render(frame, area, m, p),
        Mode::Confirm(c) => overlays::confirm(frame, area, m, c),
        Mode::Help { filter, scroll } => overlays::help(frame, area, m, filter, *scroll),
        Mode::Board | Mode::Filter | Mode::CommandLine { .. } => {}
    }
    overlays::toasts(frame, area, m);
    if m.symbols.ascii {
        asciify(frame.buffer_mut());
    }
}

/// The last word of the ASCII fallback: whatever text still carries non-ASCII
/// (spec strings with dashes, agent text) is folded cell by cell, so a terminal
/// without UTF-8 never receives a byte it cannot show.
fn asciify(buf: &mut ratatui::buffer::Buffer) {
    for cell in buf.content.iter_mut() {
        let sym = cell.symbol();
        if sym.is_ascii() {
            continue;
        }
        let folded = match sym {
            "—" | "–" | "─" | "·" => "-",
            "…" => "~",
            "≤" => "<",
            "≥" => ">",
            "↑" => "^",
            "↓" => "v",
            "←" => "<",
            "→" => ">",
            "∞" => "*",
            "“" | "”" => "\"",
            "‘" | "’" => "'",
            _ => "?",
        };
        cell.set_symbol(folded);
    }
}

/// A bordered pane whose border says whether it has focus.
pub(super) fn pane_block<'a>(m: &Model, title: String, pane: Option<Pane>) -> Block<'a> {
    let focused = pane.is_some_and(|p| p == m.focus) && m.mode == Mode::Board
        || pane.is_some_and(|p| p == m.focus) && matches!(m.mode, Mode::Filter);
    let style = if focused {
        m.theme.focus_border
    } else {
        m.theme.border
    };
    Block::default()
        .borders(Borders::ALL)
        .border_set(m.symbols.border)
        .border_style(style)
        .title(Span::styled(title, m.theme.title))
}

/// Terminal cells a char takes (0 for combining marks, 2 for wide CJK).
fn char_width(c: char) -> usize {
    let mut buf = [0u8; 4];
    Span::raw(&*c.encode_utf8(&mut buf)).width()
}

/// Cut `s` to `width` cells, marking a cut with the ellipsis (`…`, or `~` in ASCII).
pub(super) fn truncate(s: &str, width: usize, ellipsis: &str) -> String {
    if Span::raw(s).width() <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let room = width.saturating_sub(1);
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push_str(ellipsis);
    out
}

/// Pad or cut to exactly `width` cells.
pub(super) fn fit(s: &str, width: usize, ellipsis: &str) -> String {
    let t = truncate(s, width, ellipsis);
    let w = Span::raw(t.as_str()).width();
    format!("{t}{}", " ".repeat(width.saturating_sub(w)))
}

/// `12s`, `4m`, `3h` since a stored timestamp.
pub(super) fn age(now_ms: i64, at_ms: i64) -> String {
    crate::duration::age((now_ms - at_ms).div_euclid(1000))
}

/// One styled line (helper for the many label: value rows).
pub(super) fn kv<'a>(label: &'a str, value: String, label_style: Style) -> Line<'a> {
    Line::from(vec![Span::styled(label, label_style), Span::raw(value)])
}

#[cfg(test)]
pub(crate) mod tests;
