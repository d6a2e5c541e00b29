//! The detail pane: the mission the focused list points at (the selected row, ask
//! or inbox item) in full — why it needs the operator, its workspace and spend, the
//! plan, every report with its detail and refs, the latest handover. Long lines
//! wrap (with a hanging indent), so the pane knows its exact height: it scrolls
//! when focused and zooms to the full screen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{age, kv, pane_block, wrap};
use crate::board::model::short;
use crate::board::model::{Detail, Model, Needs, Pane};

/// The detail shown for the current target, if the snapshot holds it.
fn shown(m: &Model) -> Option<&Detail> {
    let target = m.detail_target();
    m.snap
        .detail
        .as_ref()
        .filter(|d| target.as_deref() == Some(d.mission.id.as_str()))
}

/// Every line of the pane's content at `width` cells, wrapped.
pub fn lines(m: &Model, width: usize, now_ms: i64) -> Vec<Line<'static>> {
    let Some(d) = shown(m) else {
        return Vec::new();
    };
    let t = &m.theme;
    let sym = &m.symbols;
    let r = &d.mission;
    let mut out: Vec<(Line<'static>, usize)> = Vec::new();
    let mut push = |line: Line<'static>, indent: usize| out.push((line, indent));
    push(
        Line::from(vec![
            Span::styled(sym.status_badge(r.status), t.status(r.status)),
            Span::raw(format!(
                "{}agent {}{}envelope {}{}{} old{}",
                sym.sep,
                r.agent,
                sym.sep,
                r.envelope,
                sym.sep,
                age(now_ms, r.created_at),
                // The table leaves the heartbeat to this line, and the width to the intent.
                r.last_heartbeat
                    .map(|h| format!("{}beat {} ago", sym.sep, age(now_ms, h)))
                    .unwrap_or_default()
            )),
        ]),
        2,
    );
    if let Some(it) = m.detail_from_inbox() {
        push(
            kv(
                "Inbox: ",
                format!("{} {}{}{}", it.kind, it.summary, sym.sep, it.reason),
                t.title,
            ),
            2,
        );
    }
    push(kv("Intent: ", r.intent.clone(), t.title), 2);
    if let Some(by) = &d.fired_by {
        push(kv("Fired by: ", by.clone(), t.title), 2);
    }
    if let Some(n) = r.needs {
        let why = match n {
            Needs::Ask => "a question or a gated call waits for you (Enter opens it)",
            Needs::HostGone => {
                "its host process is gone, so nothing runs it: R re-fires it, x stops it"
            }
            Needs::Blocker => "it filed a blocker that waits unread in the inbox",
        };
        push(
            Line::from(vec![
                Span::styled(format!("{} Needs you: ", sym.warn), t.warning),
                Span::raw(why),
            ]),
            2,
        );
    }
    push(
        kv(
            "Workspace: ",
            d.worktree.clone().unwrap_or_else(|| "cwd".into()),
            t.title,
        ),
        2,
    );
    let host = match &d.host_role {
        Some(role) if r.host == "-" => role.clone(),
        Some(role) => format!("{}{}{role}", r.host, sym.sep),
        None => r.host.clone(),
    };
    push(kv("Host: ", host, t.title), 2);
    if let Some(spend) = &d.spend {
        push(kv("Spend: ", spend.clone(), t.title), 2);
    }
    if let Some(cost) = &d.cost {
        push(kv("Cost: ", cost.clone(), t.title), 2);
    }
    if let Some(context) = &d.context {
        push(kv("Context: ", context.clone(), t.title), 2);
    }
    if let Some((first, rest)) = d.check.split_first() {
        push(kv("Check: ", first.clone(), t.title), 2);
        for line in rest {
            push(Line::from(Span::raw(format!("       {line}"))), 2);
        }
    }
    if let Some(reason) = &r.status_reason {
        push(kv("Reason: ", reason.clone(), t.title), 2);
    }
    if let Some(err) = &d.last_error {
        push(
            Line::from(vec![
                Span::styled("Error: ", t.danger),
                Span::raw(err.clone()),
            ]),
            2,
        );
    }
    if !d.plan.is_empty() {
        // Counted as `mission show` counts it, so the two never disagree.
        let count = |status: &str| d.plan.iter().filter(|p| p.status == status).count() as i64;
        push(
            Line::styled(
                format!(
                    "Plan revision {} ({})",
                    d.plan_revision,
                    crate::mission::plan::counts_line(
                        count("pending"),
                        count("in_progress"),
                        count("completed")
                    )
                ),
                t.header,
            ),
            0,
        );
        for p in &d.plan {
            let style = if p.status == "completed" {
                t.muted
            } else {
                Style::new()
            };
            push(
                Line::styled(
                    format!(" {} {}", sym.plan_mark(&p.status), p.content),
                    style,
                ),
                3,
            );
        }
    }
    if !d.reports.is_empty() {
        push(
            Line::styled(
                format!("Reports {} (newest first)", d.reports.len()),
                t.header,
            ),
            0,
        );
        for rep in &d.reports {
            let mut spans = Vec::new();
            if rep.warning.is_some() {
                spans.push(Span::styled(format!("{} ", sym.warn), t.warning));
            }
            spans.push(Span::styled(
                format!("{} ", rep.kind),
                kind_style(m, &rep.kind),
            ));
            spans.push(Span::raw(rep.summary.clone()));
            spans.push(Span::styled(
                format!(" {}", age(now_ms, rep.created_at)),
                t.muted,
            ));
            push(Line::from(spans), 3);
            if let Some(w) = &rep.warning {
                push(Line::styled(format!("   {w}"), t.warning), 3);
            }
            for l in rep.detail.lines() {
                push(Line::raw(format!("   {l}")), 3);
            }
            if !rep.refs.is_empty() {
                push(
                    Line::styled(format!("   refs: {}", rep.refs.join(", ")), t.muted),
                    3,
                );
            }
        }
    }
    if !d.handover.is_empty() {
        push(Line::styled("Handover", t.header), 0);
        for h in &d.handover {
            push(Line::raw(format!(" {h}")), 3);
        }
    }
    out.into_iter()
        .flat_map(|(line, indent)| wrap(line, width, indent))
        .collect()
}

/// The pane's content rows in `area` (inside its borders).
fn inner(area: Rect) -> (usize, usize) {
    (
        area.width.saturating_sub(2) as usize,
        area.height.saturating_sub(2) as usize,
    )
}

/// How far the pane scrolls at most in `area`.
pub fn scroll_max(m: &Model, area: Rect, now_ms: i64) -> usize {
    let (w, h) = inner(area);
    lines(m, w, now_ms).len().saturating_sub(h)
}

pub fn render(frame: &mut Frame, area: Rect, m: &Model, now_ms: i64) {
    let t = &m.theme;
    let Some(d) = shown(m) else {
        let block = pane_block(m, " Detail ".into(), Some(Pane::Detail));
        let text = if m.detail_target().is_none() {
            "select a mission, an ask or an inbox item"
        } else {
            "loading…"
        };
        frame.render_widget(
            Paragraph::new(Line::styled(text, t.muted)).block(block),
            area,
        );
        return;
    };
    let (w, h) = inner(area);
    let all = lines(m, w, now_ms);
    let top = m.detail_scroll.min(all.len().saturating_sub(h));
    let mut title = format!(" Mission {} ", short(&d.mission.id));
    if all.len() > h {
        title.push_str(&format!(
            "{}lines {}-{} of {} ",
            m.symbols.sep.trim_start(),
            top + 1,
            (top + h).min(all.len()),
            all.len()
        ));
    }
    if m.detail_zoom {
        title.push_str("(zoomed: z or Esc returns) ");
    }
    let block = pane_block(m, title, Some(Pane::Detail));
    let visible: Vec<Line> = all.into_iter().skip(top).take(h).collect();
    frame.render_widget(Paragraph::new(visible).block(block), area);
}

fn kind_style(m: &Model, kind: &str) -> Style {
    match kind {
        "blocker" => m.theme.danger,
        "result" => m.theme.state_landed,
        "finding" | "decision" => m.theme.title,
        _ => m.theme.muted,
    }
}
