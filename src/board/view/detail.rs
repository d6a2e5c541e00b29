//! The selected mission: intent, why it rests, its plan with progress, reports
//! newest first (with the downgrade flag) and the latest handover.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{age, kv, pane_block};
use crate::board::model::Model;
use crate::board::update::short;

pub fn render(frame: &mut Frame, area: Rect, m: &Model, now_ms: i64) {
    let t = &m.theme;
    let sym = &m.symbols;
    let detail = m
        .snap
        .detail
        .as_ref()
        .filter(|d| m.selected_mission().is_some_and(|r| r.id == d.mission.id));
    let Some(d) = detail else {
        let block = pane_block(m, " Detail ".into(), None);
        let text = if m.snap.rows.is_empty() {
            "select a mission to see its plan and reports"
        } else {
            "loading…"
        };
        frame.render_widget(
            Paragraph::new(Line::styled(text, t.muted)).block(block),
            area,
        );
        return;
    };
    let r = &d.mission;
    let block = pane_block(m, format!(" Mission {} ", short(&r.id)), None);
    let mut lines: Vec<Line> = vec![Line::from(vec![
        Span::styled(sym.status_badge(r.status), t.status(r.status)),
        Span::raw(format!(
            "{}agent {}{}envelope {}{}{} old",
            sym.sep,
            r.agent,
            sym.sep,
            r.envelope,
            sym.sep,
            age(now_ms, r.created_at)
        )),
    ])];
    lines.push(kv("Intent: ", r.intent.clone(), t.title));
    if let Some(session) = &d.fired_by {
        lines.push(kv("Fired by: ", format!("session {session}"), t.title));
    }
    if let Some(wt) = &d.worktree {
        lines.push(kv("Worktree: ", wt.clone(), t.title));
    }
    if let Some(reason) = &r.status_reason {
        lines.push(kv("Reason: ", reason.clone(), t.title));
    }
    if let Some(err) = &d.last_error {
        lines.push(Line::from(vec![
            Span::styled("Error: ", t.danger),
            Span::raw(err.clone()),
        ]));
    }
    if !d.plan.is_empty() {
        let done = d.plan.iter().filter(|p| p.status == "completed").count();
        lines.push(Line::styled(
            format!(
                "Plan (rev {}) {done}/{} done",
                d.plan_revision,
                d.plan.len()
            ),
            t.header,
        ));
        for p in &d.plan {
            let style = if p.status == "completed" {
                t.muted
            } else {
                ratatui::style::Style::new()
            };
            lines.push(Line::styled(
                format!(" {} {}", sym.plan_mark(&p.status), p.content),
                style,
            ));
        }
    }
    if !d.reports.is_empty() {
        lines.push(Line::styled(
            format!("Reports {} (newest first)", d.reports.len()),
            t.header,
        ));
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
            lines.push(Line::from(spans));
            if let Some(w) = &rep.warning {
                lines.push(Line::styled(format!("   {w}"), t.warning));
            }
        }
    }
    if !d.handover.is_empty() {
        lines.push(Line::styled("Handover", t.header));
        for h in &d.handover {
            lines.push(Line::raw(format!(" {h}")));
        }
    }
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}

fn kind_style(m: &Model, kind: &str) -> ratatui::style::Style {
    match kind {
        "blocker" => m.theme.danger,
        "result" => m.theme.state_landed,
        "finding" | "decision" => m.theme.title,
        _ => m.theme.muted,
    }
}
