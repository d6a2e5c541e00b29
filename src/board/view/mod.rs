//! Rendering: pure functions of the model and "now". No I/O, no locks; only the
//! visible rows were read, and only they are formatted.

mod detail;
mod hosts;
mod lists;
mod missions;
mod overlays;
mod picker;
mod status;

use ratatui::Frame;
use ratatui::buffer::CellWidth;
use ratatui::layout::{Alignment, Rect};
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
    if m.detail_zoom {
        detail::render(frame, detail_area(m), m, now_ms);
    } else {
        missions::render(frame, a.missions, m, now_ms);
        detail::render(frame, a.detail, m, now_ms);
        lists::render_asks(frame, a.asks, m, now_ms);
        lists::render_inbox(frame, a.inbox, m, now_ms);
        lists::render_trace(frame, a.trace, m);
    }
    match &m.mode {
        Mode::Answering { ask_id } => overlays::answer(frame, area, m, ask_id, now_ms),
        Mode::Picking(p) => picker::render(frame, area, m, p),
        Mode::Confirm(c) => overlays::confirm(frame, area, m, c),
        Mode::Help { filter, scroll } => overlays::help(frame, area, m, filter, *scroll),
        Mode::Diff(d) => overlays::diff(frame, area, m, d),
        Mode::Schedules => overlays::schedules(frame, area, m),
        Mode::Board | Mode::Filter | Mode::CommandLine { .. } => {}
    }
    // Last: a notice that wraps grows upward over whatever is open.
    status::render(frame, a.status, m);
    terminal_safe(frame.buffer_mut());
    if m.symbols.ascii {
        asciify(frame.buffer_mut());
    }
}

/// Where the detail pane is drawn: its place on the board, or (zoomed) everything
/// above the status line.
fn detail_area(m: &Model) -> ratatui::layout::Rect {
    let a = layout::areas(m.size);
    if m.detail_zoom {
        ratatui::layout::Rect {
            height: a.status.y.saturating_sub(m.size.y),
            ..m.size
        }
    } else {
        a.detail
    }
}

/// Content rows the detail pane shows at once (its page size).
pub fn detail_rows(m: &Model) -> usize {
    detail_area(m).height.saturating_sub(layout::LIST_CHROME) as usize
}

/// How far the detail pane can scroll for what it shows now.
pub fn detail_scroll_max(m: &Model, now_ms: i64) -> usize {
    detail::scroll_max(m, detail_area(m), now_ms)
}

/// `line` broken into lines of at most `width` cells, at spaces where it can (else
/// mid-word), each continuation indented by `indent` cells; styles and the line's
/// own style carry over.
pub(super) fn wrap(line: Line<'static>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = indent.min(width / 2);
    let line_style = line.style;
    let cells_of: Vec<(String, Style)> = line
        .spans
        .iter()
        .flat_map(|sp| {
            sp.content
                .graphemes(true)
                .map(|g| (g.to_string(), sp.style))
                .collect::<Vec<_>>()
        })
        .collect();
    let finish = |row: &[(String, Style)]| -> Line<'static> {
        let mut spans: Vec<Span<'static>> = Vec::new();
        for (g, st) in row {
            match spans.last_mut() {
                Some(last) if last.style == *st => last.content.to_mut().push_str(g),
                _ => spans.push(Span::styled(g.clone(), *st)),
            }
        }
        Line::from(spans).style(line_style)
    };
    let mut out = Vec::new();
    let mut row: Vec<(String, Style)> = Vec::new();
    let mut used = 0;
    let lead = |row: &mut Vec<(String, Style)>| {
        row.extend((0..indent).map(|_| (" ".to_string(), Style::new())));
    };
    for (g, st) in cells_of {
        let w = grapheme_cells(&g);
        if used + w > width && used > 0 {
            // Break at the last space past the indent, carrying the word over.
            let floor = if out.is_empty() { 0 } else { indent };
            let cut = row
                .iter()
                .rposition(|(c, _)| c == " ")
                .filter(|&i| i > floor);
            let carry: Vec<(String, Style)> = match cut {
                Some(i) => {
                    let tail = row.split_off(i + 1);
                    row.pop();
                    tail
                }
                None => Vec::new(),
            };
            out.push(finish(&row));
            row.clear();
            lead(&mut row);
            row.extend(carry);
            used = row.iter().map(|(c, _)| grapheme_cells(c)).sum();
            if g == " " && used == indent {
                continue;
            }
        }
        used += w;
        row.push((g, st));
    }
    if !row.is_empty() || out.is_empty() {
        out.push(finish(&row));
    }
    out
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
///   went meanwhile: it is dropped;
/// - a cluster whose width is not the sum of its chars' widths (an emoji ZWJ
///   sequence, a skin-tone modifier) is one glyph on some terminals and its parts on
///   others (tmux draws "👩‍💻" as four cells): only its first char is drawn, which
///   every terminal sizes alike.
fn terminal_safe(buf: &mut ratatui::buffer::Buffer) {
    for cell in buf.content.iter_mut() {
        let sym = cell.symbol();
        if sym.contains('\u{fe0f}') || sym.ends_with(UNSAFE_TAIL) {
            let safe = sym.replace('\u{fe0f}', "");
            let safe = safe.trim_end_matches(UNSAFE_TAIL);
            cell.set_symbol(if safe.is_empty() { " " } else { safe });
        }
        let sym = cell.symbol();
        if disputed(sym) {
            let first = sym.chars().next().map(String::from).unwrap_or_default();
            let fits = first.as_str().cell_width() <= sym.cell_width();
            cell.set_symbol(if fits && !first.is_empty() {
                &first
            } else {
                " "
            });
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

/// Whether terminals may disagree on how many cells `cluster` takes: it is more
/// than one char, and its width as one glyph is not the sum of its chars' widths.
pub(super) fn disputed(cluster: &str) -> bool {
    let mut chars = cluster.chars();
    if chars.next().is_none() || chars.next().is_none() {
        return false;
    }
    let parts: u16 = cluster
        .chars()
        .map(|c| c.encode_utf8(&mut [0; 4]).cell_width())
        .sum();
    parts != cluster.cell_width()
}

/// The last word of the ASCII fallback: whatever text still carries non-ASCII
/// (our own strings with dashes, agent text) is folded cell by cell, so a terminal
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

/// Draws a pane's border with `title`; the area inside it, for the pane's content.
pub(super) fn framed_pane(
    frame: &mut Frame,
    area: Rect,
    m: &Model,
    title: String,
    pane: Pane,
) -> Rect {
    let block = pane_block(m, title, Some(pane));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
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

/// `s` broken into lines of at most `width` cells, as [`wrap`] breaks a line: each
/// `\n` starts a new line and nothing but the spaces at a break is cut.
pub(super) fn wrap_text(s: &str, width: usize) -> Vec<String> {
    s.split('\n')
        .flat_map(|para| wrap(Line::raw(para.to_string()), width, 0))
        .map(|l| l.to_string())
        .collect()
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
