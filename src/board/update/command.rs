//! `:`: the command line — `:mission …` (or `:/mission …`, `:m …`), `:revoke
//! <device>`, `:help`, `:q`.

use crossterm::event::KeyEvent;

use super::{Effect, toast};
use crate::board::keymap::Action;
use crate::board::line::LineField;
use crate::board::model::{Mode, Model, Picker};

pub(super) fn key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    let Mode::CommandLine { line } = &mut m.mode else {
        return vec![];
    };
    match action {
        Some(Action::Cancel) => m.mode = Mode::Board,
        Some(Action::Run) => {
            let line = line.take();
            m.mode = Mode::Board;
            return run(m, &line);
        }
        _ => {
            line.input(key);
        }
    }
    vec![]
}

fn run(m: &mut Model, line: &str) -> Vec<Effect> {
    let line = line.trim();
    let line = line.strip_prefix('/').unwrap_or(line);
    let (cmd, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match cmd {
        "" => vec![],
        "mission" | "m" => {
            m.busy += 1;
            if args.trim().is_empty() {
                m.mode = Mode::Picking(Picker::new());
                vec![Effect::LoadPicker]
            } else {
                vec![Effect::RunMission {
                    args: args.to_string(),
                }]
            }
        }
        "revoke" => {
            let name = args.trim();
            if name.is_empty() {
                toast(
                    m,
                    "`:revoke <device>` ends a paired web device at once (`missionboard web devices` lists them)".into(),
                    true,
                );
                return vec![];
            }
            m.busy += 1;
            vec![Effect::Revoke {
                device: name.to_string(),
            }]
        }
        "q" | "quit" => super::confirm::request_quit(m),
        "help" => {
            m.mode = Mode::Help {
                filter: LineField::from(args.trim()),
                scroll: 0,
            };
            vec![]
        }
        other => {
            toast(
                m,
                format!(
                    "unknown command {other:?}: try `:mission [--policy <envelope>] [agent] <intent>`, `:mission` (the picker), `:help` or `:q`"
                ),
                true,
            );
            vec![]
        }
    }
}
