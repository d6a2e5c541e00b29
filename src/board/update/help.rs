//! The `?` overlay: scroll it, or type to filter it.

use crossterm::event::KeyEvent;

use super::Effect;
use crate::board::keymap::Action;
use crate::board::model::{Mode, Model};

pub(super) fn key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    let Mode::Help { filter, scroll } = &mut m.mode else {
        return vec![];
    };
    match action {
        Some(Action::Close) => m.mode = Mode::Board,
        Some(Action::Down) => *scroll += 1,
        Some(Action::Up) => *scroll = scroll.saturating_sub(1),
        Some(Action::PageDown) => *scroll += 10,
        Some(Action::PageUp) => *scroll = scroll.saturating_sub(10),
        _ => {
            if filter.input(key) {
                *scroll = 0;
            }
        }
    }
    vec![]
}
