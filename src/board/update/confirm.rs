//! The confirm dialog: stop a mission (with an editable reason), merge, discard or
//! re-fire it, or quit with unsent drafts or missions hosted here (whose units stop;
//! `s` stops the missions too, with the reason). Focus starts on No.

use crossterm::event::{KeyCode, KeyEvent};

use super::Effect;
use crate::board::keymap::Action;
use crate::board::line::LineField;
use crate::board::model::{Confirm, ConfirmKind, HostedMission, MissionRow, Mode, Model};
use crate::ops::stop::DEFAULT_REASON;

/// Stopping `row`, with the default reason ready to edit.
pub(super) fn stop(row: &MissionRow) -> Confirm {
    dialog(
        ConfirmKind::Stop {
            mission_id: row.id.clone(),
            intent: row.intent.clone(),
        },
        LineField::from(DEFAULT_REASON),
    )
}

/// Merging (`merge`) or discarding `row`'s worktree.
pub(super) fn worktree(row: &MissionRow, merge: bool) -> Confirm {
    let (mission_id, intent) = (row.id.clone(), row.intent.clone());
    let kind = if merge {
        ConfirmKind::Merge { mission_id, intent }
    } else {
        ConfirmKind::Discard { mission_id, intent }
    };
    dialog(kind, LineField::new())
}

/// Sending `row` back to its agent: the field takes the feedback, typed at once.
pub(super) fn revise(row: &MissionRow) -> Confirm {
    let mut c = dialog(
        ConfirmKind::Revise {
            mission_id: row.id.clone(),
            intent: row.intent.clone(),
            status: row.status,
        },
        LineField::new(),
    );
    c.editing = true;
    c
}

/// Firing `row`'s agent, envelope and intent again, as a new mission.
pub(super) fn refire(row: &MissionRow) -> Confirm {
    dialog(
        ConfirmKind::Refire {
            mission_id: row.id.clone(),
            agent: row.agent.clone(),
            envelope: row.envelope.clone(),
            intent: row.intent.clone(),
        },
        LineField::new(),
    )
}

/// `q` or `:q`: first learn which missions this board hosts; the answer
/// ([`on_hosted`]) quits at once or asks.
pub(super) fn request_quit(m: &mut Model) -> Vec<Effect> {
    m.busy += 1;
    vec![Effect::LoadHosted]
}

/// Quit now when nothing would be lost or stopped, else ask — unless the operator
/// moved on to another mode meanwhile.
pub(super) fn on_hosted(m: &mut Model, hosted: Vec<HostedMission>) {
    if m.mode != Mode::Board {
        return;
    }
    let drafts = m.unsent_drafts();
    if drafts == 0 && hosted.is_empty() {
        m.quit = true;
    } else {
        m.mode = Mode::Confirm(quit(drafts, hosted));
    }
}

fn quit(drafts: usize, hosted: Vec<HostedMission>) -> Confirm {
    let reason = if hosted.is_empty() {
        LineField::new()
    } else {
        LineField::from(DEFAULT_REASON)
    };
    dialog(ConfirmKind::Quit { drafts, hosted }, reason)
}

fn dialog(kind: ConfirmKind, reason: LineField) -> Confirm {
    Confirm {
        kind,
        reason,
        editing: false,
        yes_focused: false,
        error: None,
    }
}

pub(super) fn key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    let Mode::Confirm(c) = &mut m.mode else {
        return vec![];
    };
    if c.editing {
        match key.code {
            KeyCode::Enter | KeyCode::Tab | KeyCode::Esc => c.editing = false,
            _ => {
                c.reason.input(key);
            }
        }
        return vec![];
    }
    let go = match action {
        Some(Action::Confirm) => true,
        Some(Action::Run) => c.yes_focused,
        Some(Action::Toggle) => {
            c.yes_focused = !c.yes_focused;
            return vec![];
        }
        Some(Action::EditReason) => {
            if c.kind.has_reason() {
                c.editing = true;
            }
            return vec![];
        }
        Some(Action::StopAndQuit) => {
            let ConfirmKind::Quit { hosted, .. } = &c.kind else {
                return vec![];
            };
            if hosted.is_empty() {
                return vec![];
            }
            let effect = Effect::StopHosted {
                mission_ids: hosted.iter().map(|h| h.id.clone()).collect(),
                reason: c.reason.as_str().to_string(),
            };
            m.mode = Mode::Board;
            m.busy += 1;
            return vec![effect];
        }
        Some(Action::Cancel) => false,
        _ => return vec![],
    };
    if go && matches!(c.kind, ConfirmKind::Revise { .. }) && c.reason.as_str().trim().is_empty() {
        c.error = Some("type the feedback first (e edits it)".into());
        return vec![];
    }
    let c = c.clone();
    m.mode = Mode::Board;
    if !go {
        return vec![];
    }
    match c.kind {
        ConfirmKind::Quit { .. } => {
            m.quit = true;
            vec![]
        }
        ConfirmKind::Stop { mission_id, .. } => {
            m.busy += 1;
            vec![Effect::Stop {
                mission_id,
                reason: c.reason.as_str().to_string(),
            }]
        }
        ConfirmKind::Merge { mission_id, .. } => {
            m.busy += 1;
            vec![Effect::Worktree {
                mission_id,
                merge: true,
            }]
        }
        ConfirmKind::Discard { mission_id, .. } => {
            m.busy += 1;
            vec![Effect::Worktree {
                mission_id,
                merge: false,
            }]
        }
        ConfirmKind::Refire { mission_id, .. } => {
            m.busy += 1;
            vec![Effect::Refire { mission_id }]
        }
        ConfirmKind::Revise { mission_id, .. } => {
            m.busy += 1;
            vec![Effect::Revise {
                mission_id,
                feedback: c.reason.as_str().to_string(),
            }]
        }
    }
}
