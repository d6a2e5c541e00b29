//! The answer pane (a question: a multi-line draft) and the verdict pane (a
//! permission gate: approve or deny). Drafts outlive the pane and refreshes.

use crossterm::event::KeyEvent;

use super::{Effect, toast};
use crate::asks::OperatorVerdict;
use crate::board::keymap::Action;
use crate::board::model::{Mode, Model, TerminalRequest};

pub(super) fn key(
    m: &mut Model,
    ask_id: &str,
    key: KeyEvent,
    action: Option<Action>,
) -> Vec<Effect> {
    let question = m.ask(ask_id).is_none_or(|a| a.question);
    let pending = m.ask(ask_id).is_some();
    match action {
        Some(Action::Close) => {
            m.mode = Mode::Board;
            return vec![];
        }
        Some(Action::Editor) if question => {
            let draft = m.drafts.entry(ask_id.to_string()).or_default();
            if !draft.sending {
                m.terminal_request = Some(TerminalRequest::Edit {
                    ask_id: ask_id.to_string(),
                    text: draft.text(),
                });
            }
            return vec![];
        }
        Some(Action::Submit) if question => {
            let draft = m.drafts.entry(ask_id.to_string()).or_default();
            if draft.sending {
                return vec![];
            }
            let text = draft.text();
            if text.trim().is_empty() {
                draft.error = Some("type an answer first".into());
                return vec![];
            }
            if !pending {
                draft.error = Some(format!(
                    "ask {ask_id} is no longer pending — it was answered, expired or its mission stopped"
                ));
                return vec![];
            }
            return send(m, ask_id, OperatorVerdict::Answer(text));
        }
        Some(a @ (Action::Approve | Action::Deny)) if !question => {
            if m.drafts.get(ask_id).is_some_and(|d| d.sending) {
                return vec![];
            }
            let verdict = if a == Action::Approve {
                OperatorVerdict::Approve
            } else {
                OperatorVerdict::Deny
            };
            return send(m, ask_id, verdict);
        }
        _ => {}
    }
    if question && let Some(draft) = editable(m, ask_id) {
        draft.area.input(key);
        draft.error = None;
    }
    vec![]
}

/// The verdict leaves; the draft waits, read-only, for its outcome.
pub(super) fn send(m: &mut Model, ask_id: &str, verdict: OperatorVerdict) -> Vec<Effect> {
    let draft = m.drafts.entry(ask_id.to_string()).or_default();
    draft.sending = true;
    draft.error = None;
    m.busy += 1;
    vec![Effect::Verdict {
        ask_id: ask_id.to_string(),
        verdict,
    }]
}

/// The draft of `ask_id`, unless its answer is on its way.
fn editable<'m>(m: &'m mut Model, ask_id: &str) -> Option<&'m mut crate::board::model::Draft> {
    Some(m.drafts.entry(ask_id.to_string()).or_default()).filter(|d| !d.sending)
}

pub(super) fn paste(m: &mut Model, ask_id: &str, text: &str) {
    if m.ask(ask_id).is_none_or(|a| a.question)
        && let Some(draft) = editable(m, ask_id)
    {
        draft.paste(text);
    }
}

pub(super) fn on_verdict_done(m: &mut Model, ask_id: String, result: Result<String, String>) {
    match result {
        Ok(text) => {
            m.drafts.remove(&ask_id);
            if matches!(&m.mode, Mode::Answering { ask_id: a } if *a == ask_id) {
                m.mode = Mode::Board;
            }
            toast(m, text, false);
        }
        Err(e) => {
            let answering = matches!(&m.mode, Mode::Answering { ask_id: a } if *a == ask_id);
            let draft = m.drafts.entry(ask_id).or_default();
            draft.sending = false;
            draft.error = Some(e.clone());
            if !answering {
                toast(m, e, true);
            }
        }
    }
}

pub(super) fn on_edited(m: &mut Model, ask_id: String, result: Result<String, String>) {
    match result {
        Ok(text) => m.drafts.entry(ask_id).or_default().set_text(&text),
        Err(e) => toast(m, e, true),
    }
}
