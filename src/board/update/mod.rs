//! `update(&mut Model, Msg) -> Vec<Effect>`: every user-visible behaviour, pure and
//! synchronous. No terminal, no runtime, no database — effects say what to do and
//! their results come back as messages.
//!
//! This file routes; each mode's keys (and the results that land in it) live in its
//! own file. The text fields of the one-line modes are [`LineField`]s.
//!
//! [`LineField`]: super::line::LineField

mod answer;
mod board;
mod command;
mod confirm;
mod diff;
mod filter;
mod help;
mod picker;

use std::sync::Arc;

use crossterm::event::{Event, KeyEvent, KeyEventKind};
use ratatui::layout::Rect;

use super::keymap::{self, Action};
use super::model::{
    ERROR_TOAST_MS, Mode, Model, PickStep, PickerData, Snapshot, TOAST_MS, TerminalRequest, Toast,
};
use crate::asks::OperatorVerdict;

#[derive(Debug)]
pub enum Msg {
    Term(Event),
    Snapshot(Arc<Snapshot>),
    /// The 1 Hz clock: ages, toast expiry, the spinner.
    Tick(i64),
    VerdictDone {
        ask_id: String,
        result: Result<String, String>,
    },
    StopDone(Result<String, String>),
    WorktreeDone(Result<String, String>),
    DiffLoaded(Result<crate::board::model::DiffView, String>),
    AckDone(Result<String, String>),
    RevokeDone(Result<String, String>),
    PickerLoaded(Result<PickerData, String>),
    /// A `/mission` line with no arguments, resolved by its effect: open the picker.
    OpenPicker(PickerData),
    Fired(Result<String, String>),
    Toast {
        text: String,
        error: bool,
    },
    /// The oracle toggle's outcome: mounted (with its mount line), unmounted, or why not.
    OracleToggled(Result<Option<String>, String>),
    /// The open missions this board hosts, asked for by a quit.
    HostedLoaded(Vec<crate::board::model::HostedMission>),
    /// The hosted missions were stopped (the board then quits), or why not.
    HostedStopped(Result<String, String>),
    /// The operator's editor returned: the draft's new text, or why it could not run.
    Edited {
        ask_id: String,
        result: Result<String, String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Verdict {
        ask_id: String,
        verdict: OperatorVerdict,
    },
    Stop {
        mission_id: String,
        reason: String,
    },
    /// Read a mission's worktree diff (`mission diff`).
    LoadDiff {
        mission_id: String,
    },
    /// Merge (or discard) a mission's worktree, as `mission merge|discard` does.
    Worktree {
        mission_id: String,
        merge: bool,
    },
    Ack {
        inbox_id: String,
    },
    /// Acknowledge several inbox items (the marked ones, or every one shown).
    AckMany {
        inbox_ids: Vec<String>,
    },
    /// Fire a new mission like `mission_id` (agent, envelope, intent, workspace).
    Refire {
        mission_id: String,
    },
    /// Send rested mission `mission_id` back to its agent with `feedback`.
    Revise {
        mission_id: String,
        feedback: String,
    },
    LoadPicker,
    /// End a paired web device, as `web revoke` does.
    Revoke {
        device: String,
    },
    /// End an operator's allowance, as `approvals revoke` does.
    RevokeAllowance {
        id: String,
    },
    /// The arguments of a typed `/mission` line (the runner reads the registry,
    /// config and search path, then parses and resolves).
    RunMission {
        args: String,
    },
    /// List the open missions whose units this board holds (before a quit).
    LoadHosted,
    /// Stop these hosted missions with `reason`, as `mission stop` does, then quit.
    StopHosted {
        mission_ids: Vec<String>,
        reason: String,
    },
    /// Mount (or unmount) this board's oracle driver.
    ToggleOracle {
        mount: bool,
    },
    /// A template chosen in the picker (or typed as `:mission --template`), with its
    /// parameters as given, fired as `mission fire --template` fires it.
    FireTemplate {
        name: String,
        pairs: Vec<(String, String)>,
        runs: crate::board::model::Runs,
    },
    /// A mission chosen in the picker.
    Fire {
        agent: String,
        envelope: crate::mission::EnvelopeName,
        intent: crate::mission::Intent,
        /// The envelope's bounds labelled for this agent (the fire notice says them).
        labels: Vec<String>,
        /// On this board's fleet, or queued for a `missionboard host`.
        runs: crate::board::model::Runs,
    },
}

pub fn update(m: &mut Model, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Term(Event::Key(key)) if key.kind != KeyEventKind::Release => on_key(m, key),
        Msg::Term(Event::Key(_)) => vec![],
        Msg::Term(Event::Mouse(ev)) => {
            board::on_mouse(m, ev);
            vec![]
        }
        Msg::Term(Event::Paste(text)) => {
            on_paste(m, &text);
            vec![]
        }
        Msg::Term(Event::Resize(w, h)) => {
            m.size = Rect::new(0, 0, w, h);
            board::scroll_to_selection(m);
            vec![]
        }
        Msg::Term(_) => vec![],
        Msg::Snapshot(s) => {
            board::on_snapshot(m, s);
            vec![]
        }
        Msg::Tick(now) => {
            m.now_ms = now;
            m.tick += 1;
            m.toasts.retain(|t| t.until_ms.is_none_or(|u| u > now));
            vec![]
        }
        Msg::VerdictDone { ask_id, result } => {
            m.busy = m.busy.saturating_sub(1);
            answer::on_verdict_done(m, ask_id, result);
            vec![]
        }
        Msg::DiffLoaded(r) => {
            m.busy = m.busy.saturating_sub(1);
            match r {
                Ok(view) if m.mode == Mode::Board => m.mode = Mode::Diff(view),
                Ok(_) => {}
                Err(e) => toast(m, e, true),
            }
            vec![]
        }
        Msg::StopDone(r) | Msg::AckDone(r) | Msg::WorktreeDone(r) | Msg::RevokeDone(r) => {
            m.busy = m.busy.saturating_sub(1);
            match r {
                Ok(t) => toast(m, t, false),
                Err(e) => toast(m, e, true),
            }
            vec![]
        }
        Msg::PickerLoaded(r) => {
            m.busy = m.busy.saturating_sub(1);
            picker::on_loaded(m, r);
            vec![]
        }
        Msg::OpenPicker(data) => {
            m.busy = m.busy.saturating_sub(1);
            picker::open_with(m, data);
            vec![]
        }
        Msg::Fired(r) => {
            m.busy = m.busy.saturating_sub(1);
            picker::on_fired(m, r);
            vec![]
        }
        Msg::Toast { text, error } => {
            toast(m, text, error);
            vec![]
        }
        Msg::OracleToggled(result) => {
            m.busy = m.busy.saturating_sub(1);
            board::on_oracle_toggled(m, result);
            vec![]
        }
        Msg::HostedLoaded(hosted) => {
            m.busy = m.busy.saturating_sub(1);
            confirm::on_hosted(m, hosted);
            vec![]
        }
        Msg::HostedStopped(r) => {
            m.busy = m.busy.saturating_sub(1);
            match r {
                Ok(_) => m.quit = true,
                Err(e) => toast(m, e, true),
            }
            vec![]
        }
        Msg::Edited { ask_id, result } => {
            answer::on_edited(m, ask_id, result);
            vec![]
        }
    }
}

fn toast(m: &mut Model, text: String, error: bool) {
    push_toast(m, text, error, false);
}

/// News from a snapshot: shown after any error or outcome still showing.
fn news(m: &mut Model, text: String) {
    push_toast(m, text, false, true);
}

fn push_toast(m: &mut Model, text: String, error: bool, news: bool) {
    let until_ms = Some(m.now_ms + if error { ERROR_TOAST_MS } else { TOAST_MS });
    m.toasts.push(Toast {
        text,
        error,
        news,
        until_ms,
    });
    // Keep the stack short: the oldest info toasts go first.
    while m.toasts.len() > 4 {
        let i = m.toasts.iter().position(|t| !t.error).unwrap_or(0);
        m.toasts.remove(i);
    }
}

fn on_key(m: &mut Model, key: KeyEvent) -> Vec<Effect> {
    let action = keymap::lookup(m.key_context(), &key);
    match action {
        Some(Action::ForceQuit) => {
            m.quit = true;
            return vec![];
        }
        Some(Action::Redraw) => {
            m.redraw = true;
            return vec![];
        }
        Some(Action::Suspend) => {
            m.terminal_request = Some(TerminalRequest::Suspend);
            return vec![];
        }
        _ => {}
    }
    match &m.mode {
        Mode::Board => board::key(m, key, action),
        Mode::Answering { ask_id } => {
            let ask_id = ask_id.clone();
            answer::key(m, &ask_id, key, action)
        }
        Mode::Picking(_) => picker::key(m, key, action),
        Mode::Confirm(_) => confirm::key(m, key, action),
        Mode::Help { .. } => help::key(m, key, action),
        Mode::Diff(_) => diff::key(m, action),
        Mode::Schedules => {
            if action == Some(Action::Close) {
                m.mode = Mode::Board;
            }
            vec![]
        }
        Mode::Filter => filter::key(m, key, action),
        Mode::CommandLine { .. } => command::key(m, key, action),
    }
}

/// A paste goes to the text the mode is editing, if any.
fn on_paste(m: &mut Model, text: &str) {
    match &mut m.mode {
        Mode::Answering { ask_id } => {
            let ask_id = ask_id.clone();
            answer::paste(m, &ask_id, text);
        }
        Mode::CommandLine { line } => {
            line.paste(text);
        }
        Mode::Filter => filter::paste(m, text),
        Mode::Picking(p) if p.step == PickStep::Intent => {
            p.intent.paste(text);
        }
        Mode::Picking(p) if p.step == PickStep::Params => {
            if let Some(f) = p.params.get_mut(p.param) {
                f.paste(text);
            }
        }
        Mode::Confirm(c) if c.editing => {
            c.reason.paste(text);
        }
        Mode::Help { filter, scroll } => {
            filter.paste(text);
            *scroll = 0;
        }
        _ => {}
    }
}

/// A draft for `ask_id` exists (tests and views).
pub fn has_draft(m: &Model, ask_id: &str) -> bool {
    m.drafts.contains_key(ask_id)
}
