//! The diff view (`v`): a worktree mission's changes, scrolled; any close key returns.

use super::Effect;
use crate::board::keymap::Action;
use crate::board::model::{Mode, Model};

/// A page, in lines: what PageDown/PageUp move.
const PAGE: usize = 20;

pub(super) fn key(m: &mut Model, action: Option<Action>) -> Vec<Effect> {
    let Mode::Diff(view) = &mut m.mode else {
        return vec![];
    };
    let last = view.lines.len().saturating_sub(1);
    view.scroll = match action {
        Some(Action::Close) => {
            m.mode = Mode::Board;
            return vec![];
        }
        Some(Action::Down) => view.scroll + 1,
        Some(Action::Up) => view.scroll.saturating_sub(1),
        Some(Action::PageDown) => view.scroll + PAGE,
        Some(Action::PageUp) => view.scroll.saturating_sub(PAGE),
        Some(Action::Top) => 0,
        Some(Action::Bottom) => last,
        _ => return vec![],
    }
    .min(last);
    vec![]
}
