//! The `/mission` picker: envelope → agent → intent, then fire; or (`t`) a
//! template → its parameters, then fire.

use crossterm::event::KeyEvent;

use super::board::{Move, step};
use super::{Effect, toast};
use crate::board::keymap::Action;
use crate::board::line::LineField;
use crate::board::model::{Mode, Model, PickStep, Picker, PickerData, TOAST_MS, Toast};

pub(super) fn key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    let Mode::Picking(p) = &mut m.mode else {
        return vec![];
    };
    if action == Some(Action::RunsWhere) {
        let mut labels: Vec<String> = m
            .snap
            .hosts
            .iter()
            .flat_map(|h| h.labels.iter().cloned())
            .collect();
        labels.sort();
        labels.dedup();
        p.runs = p.runs.next(&labels);
        p.error = None;
        return vec![];
    }
    // In the parameters step letters are text; the arrows move between the fields.
    if p.step == PickStep::Params {
        match (action, key.code) {
            (Some(Action::Cancel), _) => m.mode = Mode::Board,
            (Some(Action::Back), _) => {
                p.step = PickStep::Template;
                p.error = None;
            }
            (Some(Action::Confirm), _) => return fire_template(m),
            (_, crossterm::event::KeyCode::Down) => {
                p.param = step(p.param, p.params.len(), Move::By(1))
            }
            (_, crossterm::event::KeyCode::Up) => {
                p.param = step(p.param, p.params.len(), Move::By(-1))
            }
            _ => {
                if p.params.get_mut(p.param).is_some_and(|f| f.input(key)) {
                    p.error = None;
                }
            }
        }
        return vec![];
    }
    // In the intent step letters are text: only the structural keys act.
    if p.step == PickStep::Intent {
        match action {
            Some(Action::Cancel) => m.mode = Mode::Board,
            Some(Action::Back) => p.step = PickStep::Agent,
            Some(Action::Confirm) => return fire_picked(m),
            _ => {
                if p.intent.input(key) {
                    p.error = None;
                }
            }
        }
        return vec![];
    }
    let Some(data) = &p.data else {
        if action == Some(Action::Cancel) {
            m.mode = Mode::Board;
        }
        return vec![];
    };
    if action == Some(Action::Templates) && p.step != PickStep::Template {
        if data.templates.is_empty() {
            p.error = Some(crate::board::picker::NO_TEMPLATES.into());
        } else {
            p.step = PickStep::Template;
            p.error = None;
        }
        return vec![];
    }
    let (len, cur) = match p.step {
        PickStep::Envelope => (data.envelopes.len(), &mut p.envelope),
        PickStep::Template => (data.templates.len(), &mut p.template),
        _ => (data.agents.len(), &mut p.agent),
    };
    match action {
        Some(Action::Back) if p.step == PickStep::Template => {
            p.step = PickStep::Envelope;
            p.error = None;
        }
        Some(Action::Confirm) if p.step == PickStep::Template => {
            let t = &data.templates[p.template];
            match &t.error {
                Some(e) => p.error = Some(format!("template {:?} does not load: {e}", t.name)),
                None => {
                    p.params = t.params.iter().map(|_| LineField::new()).collect();
                    p.param = 0;
                    p.error = None;
                    p.step = PickStep::Params;
                }
            }
        }
        Some(Action::Down) => *cur = step(*cur, len, Move::By(1)),
        Some(Action::Up) => *cur = step(*cur, len, Move::By(-1)),
        Some(Action::Cancel) => m.mode = Mode::Board,
        Some(Action::Back) if p.step == PickStep::Agent => p.step = PickStep::Envelope,
        Some(Action::Confirm) if len > 0 => {
            p.error = None;
            if p.step == PickStep::Envelope {
                p.step = PickStep::Agent;
                p.agent = data
                    .default_agent
                    .as_deref()
                    .and_then(|d| data.agents.iter().position(|a| a.name == d))
                    .unwrap_or(0);
            } else {
                p.step = PickStep::Intent;
            }
        }
        Some(Action::Confirm) => {
            p.error = Some(if p.step == PickStep::Envelope {
                crate::board::picker::NO_ENVELOPES.to_string()
            } else {
                "no agents are declared — run `missionboard init` to seed agents.toml".to_string()
            })
        }
        _ => {}
    }
    vec![]
}

fn fire_picked(m: &mut Model) -> Vec<Effect> {
    let Mode::Picking(p) = &mut m.mode else {
        return vec![];
    };
    if p.busy {
        return vec![];
    }
    let Some(data) = &p.data else { return vec![] };
    let (Some(env), Some(agent)) = (data.envelopes.get(p.envelope), data.agents.get(p.agent))
    else {
        return vec![];
    };
    let checked = crate::mission::Intent::new(p.intent.as_str())
        .and_then(|i| Ok((i, crate::mission::EnvelopeName::new(&env.short_name)?)));
    let (intent, envelope) = match checked {
        Ok(c) => c,
        Err(e) => {
            p.error = Some(e.to_string());
            return vec![];
        }
    };
    let effect = Effect::Fire {
        agent: agent.name.clone(),
        envelope,
        intent,
        labels: crate::board::picker::bound_labels(env, agent.caps.as_ref()),
        runs: p.runs.clone(),
    };
    p.busy = true;
    m.busy += 1;
    vec![effect]
}

/// Fire the chosen template with the parameters typed (an empty field gives none);
/// every refusal is the fire verb's own.
fn fire_template(m: &mut Model) -> Vec<Effect> {
    let Mode::Picking(p) = &mut m.mode else {
        return vec![];
    };
    if p.busy {
        return vec![];
    }
    let Some(t) = p.data.as_ref().and_then(|d| d.templates.get(p.template)) else {
        return vec![];
    };
    let pairs = t
        .params
        .iter()
        .zip(&p.params)
        .filter(|(_, f)| !f.is_empty())
        .map(|(param, f)| (param.name.clone(), f.as_str().to_string()))
        .collect();
    let effect = Effect::FireTemplate {
        name: t.name.clone(),
        pairs,
        runs: p.runs.clone(),
    };
    p.busy = true;
    m.busy += 1;
    vec![effect]
}

fn default_index(data: &PickerData) -> usize {
    data.default_envelope
        .as_deref()
        .and_then(|d| {
            data.envelopes
                .iter()
                .position(|e| e.short_name == d || e.file_name == d)
        })
        .unwrap_or(0)
}

/// The picker's data arrived for the picker already open.
pub(super) fn on_loaded(m: &mut Model, r: Result<PickerData, String>) {
    if let Mode::Picking(p) = &mut m.mode {
        match r {
            Ok(data) => {
                p.envelope = default_index(&data);
                p.data = Some(data);
            }
            Err(e) => p.error = Some(e),
        }
    }
}

/// Open the picker on data already read (a bare `:mission`).
pub(super) fn open_with(m: &mut Model, data: PickerData) {
    let mut p = Picker::new();
    p.envelope = default_index(&data);
    p.data = Some(data);
    m.mode = Mode::Picking(p);
}

pub(super) fn on_fired(m: &mut Model, r: Result<String, String>) {
    match r {
        Ok(text) => {
            if matches!(m.mode, Mode::Picking(_)) {
                m.mode = Mode::Board;
            }
            // The confirmation is long; give it time to be read.
            let now = m.now_ms;
            m.toasts.push(Toast {
                text,
                error: false,
                news: false,
                until_ms: Some(now + 3 * TOAST_MS),
            });
        }
        Err(e) => match &mut m.mode {
            Mode::Picking(p) => {
                p.busy = false;
                p.error = Some(e);
            }
            _ => toast(m, e, true),
        },
    }
}
