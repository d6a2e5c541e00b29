//! `/`: the missions filter, applied as it is typed and kept after Enter.

use crossterm::event::KeyEvent;

use super::Effect;
use super::board::reset_missions;
use crate::board::keymap::Action;
use crate::board::model::{Mode, Model};

pub(super) fn key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    match action {
        Some(Action::Keep) => m.mode = Mode::Board,
        Some(Action::ClearFilter) => {
            m.filter.clear();
            reset_missions(m);
            m.mode = Mode::Board;
        }
        _ => {
            if m.filter.input(key) {
                reset_missions(m);
            }
        }
    }
    vec![]
}

pub(super) fn paste(m: &mut Model, text: &str) {
    if m.filter.paste(text) {
        reset_missions(m);
    }
}
