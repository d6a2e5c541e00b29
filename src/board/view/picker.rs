//! The `:mission` picker: its header, then envelope → agent → intent, each
//! envelope's bounds labelled for the agent that would run it, wrapped, never cut.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::{field, truncate, wrap_text};
use crate::board::layout::centered;
use crate::board::model::{AgentEntry, EnvelopeEntry, Model, PickStep, Picker};
use crate::board::picker::{
    FiredFrom, LABEL_SEP, NO_ENVELOPES, bound_labels, envelope_line, header_lines,
};

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
    let title = if matches!(p.step, PickStep::Template | PickStep::Params) {
        Line::from(vec![
            Span::styled(" :mission ", t.title),
            step(PickStep::Template, "1 template"),
            Span::raw(" > "),
            step(PickStep::Params, "2 parameters"),
            Span::raw(" "),
        ])
    } else {
        Line::from(vec![
            Span::styled(" :mission ", t.title),
            step(PickStep::Envelope, "1 envelope"),
            Span::raw(" > "),
            step(PickStep::Agent, "2 agent"),
            Span::raw(" > "),
            step(PickStep::Intent, "3 intent"),
            Span::raw(" "),
        ])
    };
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
    let mut lines: Vec<Line> = header_lines(data, FiredFrom::Board)
        .iter()
        .flat_map(|l| wrap_indented(l, width, 4))
        .map(Line::raw)
        .collect();
    lines.push(Line::raw(""));
    let agent_named =
        |name: Option<&str>| data.agents.iter().find(|a| Some(a.name.as_str()) == name);
    match p.step {
        PickStep::Envelope => {
            // Labelled for the default agent until one is chosen.
            let agent = agent_named(data.default_agent.as_deref());
            lines.push(Line::styled(
                match agent {
                    Some(a) => format!(
                        "Envelopes (--policy <name>), bounds labelled for the default agent {:?}:",
                        a.name
                    ),
                    None => "Envelopes (--policy <name>):".to_string(),
                },
                t.header,
            ));
            if data.envelopes.is_empty() {
                lines.push(Line::raw(NO_ENVELOPES));
            }
            let blocks: Vec<Vec<Line>> = data
                .envelopes
                .iter()
                .enumerate()
                .map(|(i, env)| {
                    let style = if i == p.envelope {
                        t.selection
                    } else {
                        Style::new()
                    };
                    let mut block: Vec<Line> = wrap_indented(
                        &envelope_line(env, data.default_envelope.as_deref()),
                        width,
                        4,
                    )
                    .into_iter()
                    .map(|l| Line::styled(l, style))
                    .collect();
                    block.extend(label_lines(m, env, agent, width));
                    block
                })
                .collect();
            // Keep the selected envelope's whole block in view; when that hides
            // envelopes above it, a marker line says how many (and takes a row).
            let room = (inner.height as usize).saturating_sub(lines.len() + 2);
            let mut skip = 0;
            while skip < p.envelope
                && blocks[skip..=p.envelope]
                    .iter()
                    .map(Vec::len)
                    .sum::<usize>()
                    + usize::from(skip > 0)
                    > room
            {
                skip += 1;
            }
            if skip > 0 {
                lines.push(Line::styled(
                    truncate(&hidden_above(m, skip), width, e),
                    t.muted,
                ));
            }
            lines.extend(blocks.into_iter().skip(skip).flatten());
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
                let style = if i == p.agent {
                    t.selection
                } else {
                    Style::new()
                };
                // Continuation lines start under the description, past the name.
                lines.extend(
                    wrap_indented(
                        &format!("{marker}{:<16} {}", a.name, a.description),
                        width,
                        AGENT_NAME_CELLS,
                    )
                    .into_iter()
                    .map(|l| Line::styled(l, style)),
                );
            }
            if let (Some(env), Some(agent)) = (env, data.agents.get(p.agent)) {
                lines.push(Line::raw(""));
                lines.push(Line::styled(
                    format!("Bounds of {} for {:?}:", env.file_name, agent.name),
                    t.header,
                ));
                lines.extend(label_lines(m, env, Some(agent), width));
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
                lines.extend(
                    wrap_indented(&format!("  {s}"), width, 2)
                        .into_iter()
                        .map(|l| Line::styled(l, t.muted)),
                );
            }
            lines.push(Line::raw(format!(
                "Agent:    {}",
                agent.map_or("", |a| a.name.as_str())
            )));
            if let Some(env) = env {
                lines.extend(label_lines(m, env, agent, width));
            }
            lines.push(Line::raw(format!("Runs:     {}", p.runs.label())));
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
                    "Enter fires · Tab here/queue · S-Tab back · Esc closes"
                },
                t.muted,
            ));
        }
        PickStep::Template => {
            lines.push(Line::styled(
                "Templates (Enter asks for the parameters · S-Tab back to the envelopes):",
                t.header,
            ));
            for (i, tpl) in data.templates.iter().enumerate() {
                let style = if i == p.template {
                    t.selection
                } else {
                    Style::new()
                };
                lines.extend(
                    wrap_indented(&format!("  {} {}", tpl.name, tpl.params_line()), width, 4)
                        .into_iter()
                        .map(|l| Line::styled(l, style)),
                );
            }
        }
        PickStep::Params => {
            if let Some(tpl) = data.templates.get(p.template) {
                lines.push(Line::raw(format!("Template: {}", tpl.name)));
                lines.push(Line::raw(format!("Runs:     {}", p.runs.label())));
                lines.push(Line::raw(""));
                if tpl.params.is_empty() {
                    lines.push(Line::raw("It takes no parameters."));
                }
                for (i, (param, f)) in tpl.params.iter().zip(&p.params).enumerate() {
                    let what = match (&param.default, param.description.is_empty()) {
                        (Some(d), true) => format!("default {d:?}"),
                        (Some(d), false) => format!("{}; default {d:?}", param.description),
                        (None, true) => "required".to_string(),
                        (None, false) => format!("{}; required", param.description),
                    };
                    lines.extend(
                        wrap_indented(&format!("{} ({what})", param.name), width, 2)
                            .into_iter()
                            .map(|l| Line::styled(l, t.muted)),
                    );
                    let label = format!("{}= ", param.name);
                    let style = if i == p.param {
                        t.selection
                    } else {
                        Style::new()
                    };
                    if i == p.param {
                        let mut spans = vec![Span::styled(label.clone(), t.title)];
                        spans.extend(field(
                            m,
                            ("", Style::new()),
                            f,
                            width.saturating_sub(label.chars().count()),
                            style,
                        ));
                        lines.push(Line::from(spans));
                    } else {
                        lines.push(Line::raw(truncate(
                            &format!("{label}{}", f.as_str()),
                            width,
                            e,
                        )));
                    }
                }
            }
            lines.push(Line::styled(
                if p.busy {
                    "firing…"
                } else {
                    "Enter fires · ↑/↓ between the parameters · Tab here/queue · S-Tab back · Esc closes"
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

/// An agent line's marker and padded name: `* demo             `.
const AGENT_NAME_CELLS: usize = 19;

/// The marker over a list scrolled past `n` entries.
fn hidden_above(m: &Model, n: usize) -> String {
    let arrow = if m.symbols.ascii { "^" } else { "↑" };
    let noun = if n == 1 { "envelope" } else { "envelopes" };
    format!("  {arrow} {n} more {noun} above")
}

/// `text` wrapped to `width`, its continuation lines indented by `indent`.
fn wrap_indented(text: &str, width: usize, indent: usize) -> Vec<String> {
    let mut lines = wrap_text(text, width);
    if lines.len() > 1 {
        let rest = lines.split_off(1).join(" ");
        let pad = " ".repeat(indent);
        lines.extend(
            wrap_text(&rest, width.saturating_sub(indent).max(1))
                .into_iter()
                .map(|l| format!("{pad}{l}")),
        );
    }
    lines
}

/// `env`'s bounds labelled for `agent`, indented and wrapped (empty when it sets
/// none); for an agent not started here yet, a line saying why one label hedges.
fn label_lines(
    m: &Model,
    env: &EnvelopeEntry,
    agent: Option<&AgentEntry>,
    width: usize,
) -> Vec<Line<'static>> {
    let labels = bound_labels(env, agent.and_then(|a| a.caps.as_ref()));
    if labels.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Line> = wrap_text(&labels.join(LABEL_SEP), width.saturating_sub(4).max(1))
        .into_iter()
        .map(|l| Line::styled(format!("    {l}"), m.theme.muted))
        .collect();
    let hedged = env
        .compute
        .as_ref()
        .is_some_and(|b| !b.model_allowlist.is_empty());
    if let Some(a) = agent.filter(|a| a.caps.is_none() && hedged) {
        out.push(Line::styled(
            format!(
                "    ({:?} has not started here yet: whether it shows its models is learned then)",
                a.name
            ),
            m.theme.muted,
        ));
    }
    out
}
