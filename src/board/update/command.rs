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
            if let Some(rest) = crate::ops::fire::template_args(args) {
                return fire_template_line(m, rest);
            }
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
                    "`:revoke <device>` ends a paired web device at once (`missionboard web devices` lists them); `:revoke allowance <id>` ends an allow-always (`missionboard approvals allowances` lists them)".into(),
                    true,
                );
                return vec![];
            }
            if let Some(("allowance", id)) = name.split_once(char::is_whitespace) {
                m.busy += 1;
                return vec![Effect::RevokeAllowance {
                    id: id.trim().to_string(),
                }];
            }
            m.busy += 1;
            vec![Effect::Revoke {
                device: name.to_string(),
            }]
        }
        "schedules" => {
            m.mode = Mode::Schedules;
            vec![]
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

/// `:mission --template <name> [key=value…]`: the template fired here with the
/// parameters typed, as `mission fire --template` fires it (its refusals are the
/// verb's, in a toast).
fn fire_template_line(m: &mut Model, rest: String) -> Vec<Effect> {
    let words: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    let Some((name, params)) = words.split_first() else {
        toast(
            m,
            "`:mission --template <name> key=value…` fires a template; `:mission` then t lists them".into(),
            true,
        );
        return vec![];
    };
    match crate::sched::template::parse_pairs(params) {
        Ok(pairs) => {
            m.busy += 1;
            vec![Effect::FireTemplate {
                name: name.clone(),
                pairs,
                runs: crate::board::model::Runs::Here,
            }]
        }
        Err(e) => {
            toast(m, e, true);
            vec![]
        }
    }
}
