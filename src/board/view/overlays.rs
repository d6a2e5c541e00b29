//! Modal surfaces drawn over the board: the answer/verdict pane, the confirm
//! dialog, the diff and the help overlay.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::{age, field, kv, truncate, wrap_text};
use crate::board::keymap;
use crate::board::layout::centered;
use crate::board::line::LineField;
use crate::board::model::short;
use crate::board::model::{Confirm, ConfirmKind, Model};

fn modal<'a>(m: &Model, title: String) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_set(m.symbols.border)
        .border_style(m.theme.focus_border)
        .title(Span::styled(title, m.theme.title))
}

/// The schedules panel: each schedule's next run (or that it is paused), what a
/// tick fires, and its last tick's outcome; as many as fit, read for that many.
pub fn schedules(frame: &mut Frame, area: Rect, m: &Model) {
    let t = &m.theme;
    let rect = crate::board::layout::schedules_rect(area);
    frame.render_widget(Clear, rect);
    let block = modal(
        m,
        " Schedules — next run and last outcome (Esc closes) ".into(),
    );
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let width = inner.width as usize;
    let e = m.symbols.ellipsis;
    let now = m.now_ms;
    let mut lines: Vec<Line> = Vec::new();
    let snap = &m.snap;
    if snap.schedules.is_empty() {
        lines.push(Line::styled(
            "no schedules — add one with `missionboard schedule add <name> --cron \"<expr>\" …`",
            t.muted,
        ));
    } else {
        lines.push(Line::styled(
            truncate(
                &format!("{:<20} {:<16} {}", "SCHEDULE", "NEXT RUN", "FIRES"),
                width,
                e,
            ),
            t.header,
        ));
    }
    for s in &snap.schedules {
        let next = match s.next {
            Some(at) if at <= now => "due now".to_string(),
            Some(at) => format!("in {}", age(at, now)),
            None => "paused".to_string(),
        };
        lines.push(Line::raw(truncate(
            &format!("{:<20} {:<16} {} · {}", s.name, next, s.fires, s.when),
            width,
            e,
        )));
        let last = match (&s.last_outcome, s.last_tick) {
            (Some(outcome), Some(at)) => format!("  last: {outcome} ({} ago)", age(now, at)),
            (Some(outcome), None) => format!("  last: {outcome}"),
            _ => "  last: not ticked yet".to_string(),
        };
        lines.push(Line::styled(truncate(&last, width, e), t.muted));
    }
    if snap.schedules_total > snap.schedules.len() {
        lines.push(Line::styled(
            format!(
                "{} more — `missionboard schedule list` shows them all",
                snap.schedules_total - snap.schedules.len()
            ),
            t.muted,
        ));
    }
    frame.render_widget(Paragraph::new(lines), inner);
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
                    if a.is_form() {
                        "Form"
                    } else if a.question {
                        "Question"
                    } else {
                        "Gated call"
                    },
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
            if a.is_form() {
                head.push(Line::styled(
                    format!(
                        "Fill it as key=value, one field a line (a field left out takes its default); decline with: missionboard approvals respond {} --deny",
                        a.id
                    ),
                    t.muted,
                ));
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
    let quitting = matches!(c.kind, ConfirmKind::Quit { .. });
    let width = if quitting { 76 } else { 64 }.min(area.width);
    let text_w = width.saturating_sub(4) as usize;
    let e = m.symbols.ellipsis;
    let wrapped = |text: &str| -> Vec<Line<'static>> {
        wrap_text(text, text_w).into_iter().map(Line::raw).collect()
    };
    let (title, mut lines) = match &c.kind {
        ConfirmKind::Stop { mission_id, intent } => (
            format!(" Stop mission {}? ", short(mission_id)),
            vec![
                Line::raw(truncate(intent, text_w, e)),
                Line::raw("It is abandoned, its pending asks close, its unit is reaped."),
            ],
        ),
        ConfirmKind::Merge { mission_id, intent } => (
            format!(" Merge mission {}? ", short(mission_id)),
            vec![
                Line::raw(truncate(intent, text_w, e)),
                Line::raw("Its leftovers are committed, its branch merged into your current"),
                Line::raw("branch; refused on a dirty tree or a conflict, changing nothing."),
            ],
        ),
        ConfirmKind::Discard { mission_id, intent } => (
            format!(" Discard mission {}'s worktree? ", short(mission_id)),
            vec![
                Line::raw(truncate(intent, text_w, e)),
                Line::raw("Its worktree and its branch are removed, work and all."),
            ],
        ),
        ConfirmKind::Revise {
            mission_id,
            intent,
            status,
        } => (
            format!(" Revise mission {}? ", short(mission_id)),
            vec![
                Line::raw(truncate(intent, text_w, e)),
                Line::raw(format!(
                    "It rested {status}; it goes back to its agent, in its own session"
                )),
                Line::raw("where it can, with your feedback; its check runs again."),
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
                Line::raw(truncate(intent, text_w, e)),
                Line::raw(format!(
                    "A new mission: agent {agent}, envelope {envelope}, same workspace."
                )),
                Line::raw("This one stays as it is (stop it with x)."),
            ],
        ),
        ConfirmKind::Quit { drafts, hosted } => {
            let mut lines = Vec::new();
            if *drafts > 0 {
                lines.push(Line::raw(format!(
                    "{drafts} unsent answer draft(s) will be lost."
                )));
            }
            if !hosted.is_empty() {
                lines.push(Line::styled(
                    format!("{} open mission(s) hosted by this board:", hosted.len()),
                    t.title,
                ));
                for h in hosted.iter().take(QUIT_LISTED) {
                    lines.push(Line::raw(truncate(
                        &format!("  {}  {}", short(&h.id), h.intent),
                        text_w,
                        e,
                    )));
                }
                if hosted.len() > QUIT_LISTED {
                    lines.push(Line::raw(format!(
                        "  and {} more",
                        hosted.len() - QUIT_LISTED
                    )));
                }
                lines.extend(wrapped(&quit_consequence()));
            }
            (" Quit the board? ".to_string(), lines)
        }
    };
    if c.kind.has_reason() {
        let label = if matches!(c.kind, ConfirmKind::Revise { .. }) {
            "Feedback: "
        } else {
            "Reason: "
        };
        lines.push(Line::from(if c.editing {
            field(m, (label, t.title), &c.reason, text_w, t.selection)
        } else {
            vec![
                Span::styled(label, t.title),
                Span::raw(truncate(
                    c.reason.as_str(),
                    text_w.saturating_sub(label.len()),
                    e,
                )),
            ]
        }));
    }
    if let Some(err) = &c.error {
        lines.push(Line::styled(err.clone(), t.danger));
    }
    lines.push(Line::raw(""));
    let button = |label: &'static str, focused: bool| {
        Span::styled(label, if focused { t.selection } else { t.title })
    };
    let keys = match &c.kind {
        ConfirmKind::Quit { hosted, .. } if !hosted.is_empty() => {
            "   y quit · s stop them, then quit · e edit reason · n no"
        }
        ConfirmKind::Stop { .. } => "   y yes · n no · e edit reason",
        ConfirmKind::Revise { .. } => "   Enter ends typing · y sends · n no · e edits",
        _ => "   y yes · n no",
    };
    lines.push(Line::from(vec![
        button("[ No ]", !c.yes_focused),
        Span::raw("  "),
        button("[ Yes ]", c.yes_focused),
        Span::styled(keys, t.muted),
    ]));
    let height = (lines.len() as u16 + 2).max(9).min(area.height);
    let rect = centered(area, width, height);
    frame.render_widget(Clear, rect);
    let block = modal(m, title);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// How many hosted missions the quit dialog names one by one.
const QUIT_LISTED: usize = 5;

/// What quitting does to the missions this board hosts.
fn quit_consequence() -> String {
    format!(
        "Quitting stops their units; the missions stay open. One waiting on a question or a gated call resumes once it is answered (on a board, or `missionboard approvals respond`); the others are reclaimed as abandoned after {}h without a heartbeat. Press s to stop them now instead, with this reason:",
        crate::ops::sweep::stale_after().as_secs() / 3600
    )
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
    // Two columns when each still has room for a key and a readable description;
    // a description wraps under itself, never cut.
    let columns = if inner.width >= 90 { 2 } else { 1 };
    let col_w = (inner.width / columns) as usize;
    let mut cells: Vec<Vec<String>> = Vec::new();
    let flush = |cells: &mut Vec<Vec<String>>, lines: &mut Vec<Line>| {
        let height = cells.iter().map(Vec::len).max().unwrap_or(0);
        for i in 0..height {
            let mut row = String::new();
            for (c, cell) in cells.iter().enumerate() {
                let text = cell.get(i).map_or("", String::as_str);
                if c + 1 < cells.len() {
                    row.push_str(&super::fit(text, col_w, m.symbols.ellipsis));
                } else {
                    row.push_str(text);
                }
            }
            lines.push(Line::raw(row));
        }
        cells.clear();
    };
    for (title, rows) in keymap::help_sections(filter.as_str()) {
        lines.push(Line::styled(title, t.header));
        for (keys, help) in rows {
            cells.push(help_cell(&keys, help, col_w.saturating_sub(1)));
            if cells.len() == columns as usize {
                flush(&mut cells, &mut lines);
            }
        }
        flush(&mut cells, &mut lines);
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

/// Width of the keys column of the help.
const HELP_KEYS: usize = 14;

/// One binding in the help, `width` cells wide: the keys, then the description
/// wrapped beside them (keys longer than their column get a line of their own).
fn help_cell(keys: &str, help: &str, width: usize) -> Vec<String> {
    let text_w = width.saturating_sub(HELP_KEYS + 1).max(1);
    let pad = " ".repeat(HELP_KEYS + 1);
    let mut out = Vec::new();
    let mut first = if super::cells(keys) <= HELP_KEYS {
        Some(format!("{} ", super::fit(keys, HELP_KEYS, "")))
    } else {
        out.push(keys.to_string());
        None
    };
    for part in wrap_text(help, text_w) {
        let lead = first.take().unwrap_or_else(|| pad.clone());
        out.push(format!("{lead}{part}"));
    }
    out
}
