//! Rendering: pure functions of the model and "now". No I/O, no locks; only the
//! visible rows were read, and only they are formatted.

mod detail;
mod lists;
mod missions;
mod overlays;
mod picker;
mod status;

use ratatui::Frame;
use ratatui::buffer::CellWidth;
use ratatui::layout::Alignment;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use unicode_segmentation::UnicodeSegmentation;

use super::layout;
use super::line::LineField;
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
        Mode::Diff(d) => overlays::diff(frame, area, m, d),
        Mode::Board | Mode::Filter | Mode::CommandLine { .. } => {}
    }
    terminal_safe(frame.buffer_mut());
    if m.symbols.ascii {
        asciify(frame.buffer_mut());
    }
}

/// Chars that must not end a cell: the joiners.
pub(super) const UNSAFE_TAIL: &[char] = &['\u{200c}', '\u{200d}'];

/// The frame as a terminal will really show it, so the next frame's diff starts
/// from the truth. Three things differ otherwise:
/// - a wide char whose trailing cell was drawn over afterwards (an overlay's or a
///   the detail pane's wide text): printing into half of it erases it whole, yet the buffer
///   would still hold it, so a later frame drawing it again would look unchanged to
///   the diff and leave the blank behind. It is blanked here too (and the buffer is
///   the well-formed one ratatui's diff assumes: no wide char before a non-blank);
/// - an emoji presentation selector (U+FE0F) makes a char one cell wide on some
///   terminals and two on others, and the diff cannot know which: it is dropped,
///   so the char takes the one cell every terminal agrees on;
/// - a joiner (ZWJ, ZWNJ) ending a cell ("b\u{200d}c" is two cells) stays pending in
///   the terminal and glues itself to whatever is printed next, wherever the cursor
///   went meanwhile: it is dropped. Inside one glyph (an emoji ZWJ sequence) it stays.
fn terminal_safe(buf: &mut ratatui::buffer::Buffer) {
    for cell in buf.content.iter_mut() {
        let sym = cell.symbol();
        if sym.contains('\u{fe0f}') || sym.ends_with(UNSAFE_TAIL) {
            let safe = sym.replace('\u{fe0f}', "");
            let safe = safe.trim_end_matches(UNSAFE_TAIL);
            cell.set_symbol(if safe.is_empty() { " " } else { safe });
        }
    }
    let area = buf.area;
    for y in area.top()..area.bottom() {
        let mut x = area.left();
        while x < area.right() {
            let w = buf[(x, y)].symbol().cell_width().max(1);
            let covered = (1..w)
                .map(|i| x + i)
                .any(|t| t < area.right() && buf[(t, y)].symbol() != " ");
            if covered {
                buf[(x, y)].set_symbol(" ");
                x += 1;
            } else {
                x += w;
            }
        }
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

/// Cells `s` takes on screen, grapheme by grapheme as the buffer draws it: a wide
/// char (CJK, most emoji, a ZWJ sequence) two, a combining mark none beyond its
/// base, a zero-width or control grapheme none (it is not drawn). Measuring by char
/// instead counts a ZWJ sequence as several glyphs and a halfwidth sound mark as
/// none, and a cut or a pad computed that way leaves cells the next frame misses.
pub(super) fn cells(s: &str) -> usize {
    s.graphemes(true).map(grapheme_cells).sum()
}

fn grapheme_cells(g: &str) -> usize {
    if g.contains(char::is_control) {
        0
    } else {
        g.cell_width() as usize
    }
}

/// Cut `s` to `width` cells, marking a cut with the ellipsis (`…`, or `~` in ASCII);
/// never inside a grapheme.
pub(super) fn truncate(s: &str, width: usize, ellipsis: &str) -> String {
    if cells(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let room = width.saturating_sub(cells(ellipsis));
    let mut out = String::new();
    let mut used = 0;
    for g in s.graphemes(true) {
        let w = grapheme_cells(g);
        if used + w > room {
            break;
        }
        used += w;
        out.push_str(g);
    }
    out.push_str(ellipsis);
    out
}

/// `s` broken into lines of at most `width` cells: at spaces where it can, inside
/// a word (never inside a grapheme) only when one word alone is wider. Nothing is
/// cut: every grapheme of `s` except the spaces at a break is on some line.
pub(super) fn wrap(s: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    for para in s.split('\n') {
        // A paragraph's own indent stays on its first line; runs of spaces inside
        // it stay too, except at a break.
        let body = para.trim_start_matches(' ');
        let mut line = " ".repeat((para.len() - body.len()).min(width - 1));
        let mut used = line.len();
        let mut fresh = true;
        for word in body.split(' ') {
            let w = cells(word);
            let gap = usize::from(!fresh);
            if used + gap + w <= width {
                if gap == 1 {
                    line.push(' ');
                }
                line.push_str(word);
                used += gap + w;
                fresh = false;
                continue;
            }
            if !fresh {
                lines.push(std::mem::take(&mut line));
                used = 0;
            }
            for g in word.graphemes(true) {
                let gw = grapheme_cells(g);
                if used + gw > width && !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                    used = 0;
                }
                line.push_str(g);
                used += gw;
            }
            fresh = word.is_empty();
        }
        lines.push(line);
    }
    lines
}

/// Pad or cut to exactly `width` cells.
pub(super) fn fit(s: &str, width: usize, ellipsis: &str) -> String {
    let t = truncate(s, width, ellipsis);
    let w = cells(&t);
    format!("{t}{}", " ".repeat(width.saturating_sub(w)))
}

/// A labelled text field in at most `width` cells: the label, then the text in
/// `style` with the cell under the cursor in the theme's cursor role (past the end,
/// a `_`), scrolled so the cursor stays in view (a cut end shows the ellipsis).
pub(super) fn field(
    m: &Model,
    (label, label_style): (&'static str, Style),
    f: &LineField,
    width: usize,
    style: Style,
) -> Vec<Span<'static>> {
    let width = width.saturating_sub(cells(label));
    let e = m.symbols.ellipsis;
    let (before, after) = f.split_at_cursor();
    let mut rest = after.graphemes(true);
    let (at, at_style) = match rest.next() {
        Some(g) => (g, style.patch(m.theme.cursor)),
        None => ("_", style),
    };
    let at_w = grapheme_cells(at).max(1);
    let (lead, before) = if cells(before) + at_w <= width {
        ("", before)
    } else {
        // Scrolled: keep the longest tail of the text before the cursor that fits.
        let room = width.saturating_sub(at_w + cells(e));
        let mut start = before.len();
        let mut used = 0;
        for (i, g) in before.grapheme_indices(true).rev() {
            used += grapheme_cells(g);
            if used > room {
                break;
            }
            start = i;
        }
        (e, &before[start..])
    };
    let used = cells(lead) + cells(before) + at_w;
    let tail = truncate(rest.as_str(), width.saturating_sub(used), e);
    vec![
        Span::styled(label, label_style),
        Span::styled(format!("{lead}{before}"), style),
        Span::styled(at.to_string(), at_style),
        Span::styled(tail, style),
    ]
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
