//! The `/mission` picker: the §7 header, then envelope → agent → intent.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::{field, truncate};
use crate::board::layout::centered;
use crate::board::model::{Model, PickStep, Picker};
use crate::board::picker::{NO_ENVELOPES, envelope_line, header_lines, labels_line};

pub fn render(frame: &mut Frame, area: Rect, m: &Model, p: &Picker) {
    let t = &m.theme;
    let rect = centered(
        area,
        area.width.saturating_sub(2),
        area.height.saturating_sub(2),
    );
    frame.render_widget(Clear, rect);
    let step = |s: PickStep, label: &'static str| {
        Span::styled(label, if p.step == s { t.selection } else { t.muted })
    };
    let title = Line::from(vec![
        Span::styled(" /mission ", t.title),
        step(PickStep::Envelope, "1 envelope"),
        Span::raw(" > "),
        step(PickStep::Agent, "2 agent"),
        Span::raw(" > "),
        step(PickStep::Intent, "3 intent"),
        Span::raw(" "),
    ]);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(m.symbols.border)
        .border_style(t.focus_border)
        .title(title);
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let width = inner.width as usize;
    let e = m.symbols.ellipsis;
    let Some(data) = &p.data else {
        let text = p
            .error
            .clone()
            .unwrap_or_else(|| "reading the search path…".into());
        frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }), inner);
        return;
    };
    let mut lines: Vec<Line> = header_lines(data)
        .into_iter()
        .map(|l| Line::raw(truncate(&l, width, e)))
        .collect();
    lines.push(Line::raw(""));
    match p.step {
        PickStep::Envelope => {
            lines.push(Line::styled("Envelopes (--policy <name>):", t.header));
            if data.envelopes.is_empty() {
                lines.push(Line::raw(NO_ENVELOPES));
            }
            // Keep the selection in view: each envelope takes one or two lines.
            let room = inner.height.saturating_sub(lines.len() as u16 + 3) as usize / 2;
            let skip = p.envelope.saturating_sub(room.saturating_sub(1));
            for (i, env) in data.envelopes.iter().enumerate().skip(skip) {
                let mut line = Line::raw(truncate(
                    &envelope_line(env, data.default_envelope.as_deref()),
                    width,
                    e,
                ));
                if i == p.envelope {
                    line = line.style(t.selection);
                }
                lines.push(line);
                if let Some(labels) = labels_line(env, m.symbols.sep) {
                    lines.push(Line::styled(truncate(&labels, width, e), t.muted));
                }
            }
        }
        PickStep::Agent => {
            let env = data.envelopes.get(p.envelope);
            lines.push(Line::raw(format!(
                "Envelope: {}",
                env.map_or("", |e| e.file_name.as_str())
            )));
            lines.push(Line::styled("Agents (declared in agents.toml):", t.header));
            if data.agents.is_empty() {
                lines.push(Line::raw(
                    "no agents are declared — run `missionboard init` to seed agents.toml",
                ));
            }
            for (i, a) in data.agents.iter().enumerate() {
                let marker = if data.default_agent.as_deref() == Some(a.name.as_str()) {
                    "* "
                } else {
                    "  "
                };
                let mut line = Line::raw(truncate(
                    &format!("{marker}{:<16} {}", a.name, a.description),
                    width,
                    e,
                ));
                if i == p.agent {
                    line = line.style(t.selection);
                }
                lines.push(line);
            }
        }
        PickStep::Intent => {
            let env = data.envelopes.get(p.envelope);
            let agent = data.agents.get(p.agent);
            lines.push(Line::raw(format!(
                "Envelope: {}",
                env.map_or("", |e| e.file_name.as_str())
            )));
            if let Some(s) = env.map(|e| e.summary.as_str()).filter(|s| !s.is_empty()) {
                lines.push(Line::styled(truncate(&format!("  {s}"), width, e), t.muted));
            }
            lines.push(Line::raw(format!(
                "Agent:    {}",
                agent.map_or("", |a| a.name.as_str())
            )));
            lines.push(Line::raw(""));
            lines.push(Line::from(field(
                m,
                ("Intent: ", t.title),
                &p.intent,
                width,
                t.selection,
            )));
            lines.push(Line::styled(
                if p.busy {
                    "firing…"
                } else {
                    "Enter fires · S-Tab back · Esc closes"
                },
                t.muted,
            ));
        }
    }
    if let Some(err) = &p.error {
        lines.push(Line::raw(""));
        lines.push(Line::styled(err.clone(), t.danger));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
