//! Modal surfaces drawn over the board: the answer/verdict pane, the confirm
//! dialog, the help overlay and the toasts.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::{age, cells, field, kv, truncate};
use crate::board::keymap;
use crate::board::layout::centered;
use crate::board::line::LineField;
use crate::board::model::{Confirm, ConfirmKind, Model};
use crate::board::update::short;

fn modal<'a>(m: &Model, title: String) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_set(m.symbols.border)
        .border_style(m.theme.focus_border)
        .title(Span::styled(title, m.theme.title))
}

/// The answer pane (a question: a text area) or the verdict pane (a permission).
pub fn answer(frame: &mut Frame, area: Rect, m: &Model, ask_id: &str, now_ms: i64) {
    let t = &m.theme;
    let rect = centered(
        area,
        area.width.saturating_sub(6).min(100),
        area.height.saturating_sub(4).min(18),
    );
    frame.render_widget(Clear, rect);
    let ask = m.ask(ask_id);
    let question = ask.is_none_or(|a| a.question);
    let title = if question {
        format!(" Answer {} ", short(ask_id))
    } else {
        format!(" Permission {} ", short(ask_id))
    };
    let block = modal(m, title);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let draft = m.drafts.get(ask_id);
    let mut head: Vec<Line> = Vec::new();
    match ask {
        Some(a) => {
            let mission = a.mission_id.as_deref().map(short).unwrap_or("-");
            let expires = if a.expires_at > 0 {
                format!("{}expires in {}", m.symbols.sep, crate::duration::age((a.expires_at - now_ms).div_euclid(1000)))
            } else {
                String::new()
            };
            head.push(Line::styled(
                format!(
                    "{} from {} (mission {mission}){}asked {} ago{expires}",
                    if a.question { "Question" } else { "Gated call" },
                    a.agent,
                    m.symbols.sep,
                    age(now_ms, a.created_at)
                ),
                t.muted,
            ));
            if a.question {
                head.push(Line::styled(a.summary.clone(), t.title));
            }
            if !a.intent.is_empty() {
                head.push(kv("Mission: ", a.intent.clone(), t.title));
            }
            if !a.question {
                // Everything the decision rests on: what would run, on what, and
                // which rule of which envelope stopped it, and what silence does.
                head.push(kv("Tool: ", a.tool.clone(), t.title));
                head.push(kv("Input: ", a.summary.clone(), t.title));
                let rule = match a.matched_rule {
                    Some(i) => format!("rules[{i}] of envelope {}", a.envelope),
                    None => format!("no rule matched: envelope {}'s default", a.envelope),
                };
                head.push(kv("Rule: ", rule, t.title));
                let timeout = if a.expires_at > 0 {
                    format!(
                        "{} in {}",
                        a.on_timeout,
                        crate::duration::age((a.expires_at - now_ms).div_euclid(1000))
                    )
                } else {
                    format!("{} (no deadline: it waits for you)", a.on_timeout)
                };
                head.push(kv("On timeout: ", timeout, t.title));
            }
            if let Some(d) = &a.detail {
                for l in d.lines().take(8) {
                    head.push(Line::raw(l.to_string()));
                }
            }
        }
        None => head.push(Line::styled(
            "this ask is no longer pending (answered elsewhere, expired, or its mission stopped) — the draft is kept",
            t.warning,
        )),
    }
    if let Some(err) = draft.and_then(|d| d.error.as_ref()) {
        head.push(Line::from(vec![
            Span::styled("! ", t.danger),
            Span::styled(err.clone(), t.danger),
        ]));
    }
    if draft.is_some_and(|d| d.sending) {
        head.push(Line::styled("sending…", t.muted));
    }
    let head_h =
        (head.len() as u16 + 1).min(inner.height.saturating_sub(if question { 3 } else { 1 }));
    let [top, bottom] =
        Layout::vertical([Constraint::Length(head_h), Constraint::Fill(1)]).areas(inner);
    frame.render_widget(Paragraph::new(head).wrap(Wrap { trim: false }), top);
    if question {
        if let Some(d) = draft {
            let mut area = d.area.clone();
            area.set_block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_set(m.symbols.border)
                    .border_style(t.border)
                    .title(" your answer — C-s or M-Enter sends · Esc closes, keeps the draft "),
            );
            area.set_cursor_line_style(ratatui::style::Style::new());
            frame.render_widget(&area, bottom);
        }
    } else {
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("a", t.key),
                Span::raw(" approve   "),
                Span::styled("d", t.key),
                Span::raw(" deny   "),
                Span::styled("Esc", t.key),
                Span::raw(" close without deciding"),
            ])),
            bottom,
        );
    }
}

pub fn confirm(frame: &mut Frame, area: Rect, m: &Model, c: &Confirm) {
    let t = &m.theme;
    let rect = centered(area, 64.min(area.width), 9);
    frame.render_widget(Clear, rect);
    let (title, lines) = match &c.kind {
        ConfirmKind::Stop { mission_id, intent } => {
            const LABEL: &str = "Reason: ";
            let text_w = rect.width.saturating_sub(4) as usize;
            let reason = if c.editing {
                field(m, (LABEL, t.title), &c.reason, text_w, t.selection)
            } else {
                vec![
                    Span::styled(LABEL, t.title),
                    Span::raw(c.reason.as_str().to_string()),
                ]
            };
            (
                format!(" Stop mission {}? ", short(mission_id)),
                vec![
                    Line::raw(truncate(intent, text_w, m.symbols.ellipsis)),
                    Line::raw("It is abandoned, its pending asks close, its unit is reaped."),
                    Line::from(reason),
                ],
            )
        }
        ConfirmKind::Merge { mission_id, intent } => (
            format!(" Merge mission {}? ", short(mission_id)),
            vec![
                Line::raw(truncate(
                    intent,
                    rect.width.saturating_sub(4) as usize,
                    m.symbols.ellipsis,
                )),
                Line::raw("Its leftovers are committed, its branch merged into your current"),
                Line::raw("branch; refused on a dirty tree or a conflict, changing nothing."),
            ],
        ),
        ConfirmKind::Discard { mission_id, intent } => (
            format!(" Discard mission {}'s worktree? ", short(mission_id)),
            vec![
                Line::raw(truncate(
                    intent,
                    rect.width.saturating_sub(4) as usize,
                    m.symbols.ellipsis,
                )),
                Line::raw("Its worktree and its branch are removed, work and all."),
            ],
        ),
        ConfirmKind::Refire {
            mission_id,
            agent,
            envelope,
            intent,
        } => (
            format!(" Re-fire mission {}? ", short(mission_id)),
            vec![
                Line::raw(truncate(
                    intent,
                    rect.width.saturating_sub(4) as usize,
                    m.symbols.ellipsis,
                )),
                Line::raw(format!(
                    "A new mission: agent {agent}, envelope {envelope}, same workspace."
                )),
                Line::raw("This one stays as it is (stop it with x)."),
            ],
        ),
        ConfirmKind::Quit { drafts } => (
            " Quit? ".to_string(),
            vec![Line::raw(format!(
                "{drafts} unsent answer draft(s) will be lost."
            ))],
        ),
    };
    let block = modal(m, title);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let mut lines = lines;
    lines.push(Line::raw(""));
    let button = |label: &'static str, focused: bool| {
        Span::styled(label, if focused { t.selection } else { t.title })
    };
    lines.push(Line::from(vec![
        button("[ No ]", !c.yes_focused),
        Span::raw("  "),
        button("[ Yes ]", c.yes_focused),
        Span::styled(
            if matches!(c.kind, ConfirmKind::Stop { .. }) {
                "   y yes · n no · e edit reason"
            } else {
                "   y yes · n no"
            },
            t.muted,
        ),
    ]));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// The diff view: the files touched, then the patch from `scroll`, `+`/`-` coloured.
pub fn diff(frame: &mut Frame, area: Rect, m: &Model, d: &crate::board::model::DiffView) {
    let t = &m.theme;
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(120),
        area.height.saturating_sub(2),
    );
    frame.render_widget(Clear, rect);
    let block = modal(
        m,
        format!(
            " Mission {} — changes against its base (j/k scroll, Esc closes) ",
            short(&d.mission_id)
        ),
    );
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let width = inner.width as usize;
    let e = m.symbols.ellipsis;
    let mut lines: Vec<Line> = Vec::new();
    if d.lines.is_empty() {
        lines.push(Line::styled("no changes against the base", t.muted));
    }
    for f in &d.files {
        lines.push(Line::styled(truncate(f, width, e), t.header));
    }
    for l in d.lines.iter().skip(d.scroll) {
        let style = if l.starts_with("+++") || l.starts_with("---") || l.starts_with("diff ") {
            t.title
        } else if l.starts_with('+') {
            t.added
        } else if l.starts_with('-') {
            t.removed
        } else if l.starts_with("@@") {
            t.muted
        } else {
            Style::new()
        };
        lines.push(Line::styled(truncate(l, width, e), style));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

pub fn help(frame: &mut Frame, area: Rect, m: &Model, filter: &LineField, scroll: usize) {
    let t = &m.theme;
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(96),
        area.height.saturating_sub(2),
    );
    frame.render_widget(Clear, rect);
    let block = modal(m, " Help — every key (type to filter, Esc closes) ".into());
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let mut lines = vec![Line::from(field(
        m,
        ("filter: ", t.title),
        filter,
        inner.width as usize,
        Style::new(),
    ))];
    let wide = inner.width >= 90;
    let mut row = Vec::new();
    for (title, rows) in keymap::help_sections(filter.as_str()) {
        lines.push(Line::styled(title, t.header));
        for (keys, help) in rows {
            let cell = format!("{:<14} {help}", keys);
            if wide {
                row.push(cell);
                if row.len() == 2 {
                    let left = super::fit(&row[0], (inner.width / 2) as usize, m.symbols.ellipsis);
                    lines.push(Line::raw(format!("{left}{}", row[1])));
                    row.clear();
                }
            } else {
                lines.push(Line::raw(cell));
            }
        }
        if let Some(r) = row.pop() {
            lines.push(Line::raw(r));
        }
    }
    if let Some(dir) = &m.host.log_dir {
        lines.push(Line::styled(format!("logs: {}", dir.display()), t.muted));
    }
    // The filter line stays put; the rest scrolls (clamped to the last page).
    let body: Vec<Line> = lines.split_off(1);
    let room = inner.height.saturating_sub(1) as usize;
    let scroll = scroll.min(body.len().saturating_sub(room));
    lines.extend(body.into_iter().skip(scroll));
    frame.render_widget(Paragraph::new(lines), inner);
}

/// Top-right stack; errors stay until dismissed.
pub fn toasts(frame: &mut Frame, area: Rect, m: &Model) {
    let width = (area.width * 2 / 5).clamp(30, 48).min(area.width);
    let mut y = area.y + 1;
    // Errors first (they wait to be dismissed), then the newest news; at most three,
    // and no news over a modal the operator is working in.
    let modal = !matches!(
        m.mode,
        crate::board::model::Mode::Board
            | crate::board::model::Mode::Filter
            | crate::board::model::Mode::CommandLine { .. }
    );
    let errors = m.toasts.iter().rev().filter(|t| t.error);
    let news = m.toasts.iter().rev().filter(|t| !t.error && !modal);
    for toast in errors.chain(news).take(3) {
        let inner_w = width.saturating_sub(2) as usize;
        let lines: Vec<Line> = toast
            .text
            .lines()
            .map(|l| Line::raw(l.to_string()))
            .collect();
        let wrapped: u16 = toast
            .text
            .lines()
            .map(|l| cells(l).max(1).div_ceil(inner_w.max(1)) as u16)
            .sum();
        let h = (wrapped + 2).min(8);
        if y + h > area.y + area.height.saturating_sub(1) {
            break;
        }
        let rect = Rect::new(area.x + area.width - width, y, width, h);
        frame.render_widget(Clear, rect);
        let style = if toast.error {
            m.theme.toast_error
        } else {
            m.theme.toast
        };
        let block = Block::default()
            .borders(Borders::ALL)
            .border_set(m.symbols.border)
            .style(style)
            .title(if toast.error {
                " error — Esc dismisses "
            } else {
                ""
            });
        frame.render_widget(
            Paragraph::new(lines)
                .block(block)
                .style(style)
                .wrap(Wrap { trim: false }),
            rect,
        );
        y += h;
    }
}
