//! `update(&mut Model, Msg) -> Vec<Effect>`: every user-visible behaviour, pure and
//! synchronous. No terminal, no runtime, no database — effects say what to do and
//! their results come back as messages.

use std::sync::Arc;

use crossterm::event::{
    Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Rect};

use super::keymap::{self, Action, Context};
use super::layout;
use super::model::{
    Confirm, ConfirmKind, Mode, Model, Pane, PickStep, Picker, PickerData, Snapshot, TOAST_MS,
    TerminalRequest, Toast,
};
use crate::asks::OperatorVerdict;
use crate::fleet::stop::DEFAULT_REASON;
use crate::mission::Status;

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
    AckDone(Result<String, String>),
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
    Ack {
        inbox_id: String,
    },
    LoadPicker,
    /// The arguments of a typed `/mission` line (the runner reads the registry,
    /// config and search path, then parses and resolves).
    RunMission {
        args: String,
    },
    /// Mount (or unmount) this board's oracle driver.
    ToggleOracle {
        mount: bool,
    },
    /// A mission chosen in the picker.
    Fire {
        agent: String,
        envelope: String,
        intent: String,
        summary: String,
    },
}

pub fn update(m: &mut Model, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Term(Event::Key(key)) if key.kind != KeyEventKind::Release => on_key(m, key),
        Msg::Term(Event::Key(_)) => vec![],
        Msg::Term(Event::Mouse(ev)) => {
            on_mouse(m, ev);
            vec![]
        }
        Msg::Term(Event::Paste(text)) => {
            on_paste(m, &text);
            vec![]
        }
        Msg::Term(Event::Resize(w, h)) => {
            m.size = Rect::new(0, 0, w, h);
            scroll_to_selection(m);
            vec![]
        }
        Msg::Term(_) => vec![],
        Msg::Snapshot(s) => {
            on_snapshot(m, s);
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
            match result {
                Ok(text) => {
                    m.drafts.remove(&ask_id);
                    if matches!(&m.mode, Mode::Answering { ask_id: a } if *a == ask_id) {
                        m.mode = Mode::Board;
                    }
                    toast(m, text, false);
                }
                Err(e) => {
                    let answering =
                        matches!(&m.mode, Mode::Answering { ask_id: a } if *a == ask_id);
                    let draft = m.drafts.entry(ask_id).or_default();
                    draft.sending = false;
                    draft.error = Some(e.clone());
                    if !answering {
                        toast(m, e, true);
                    }
                }
            }
            vec![]
        }
        Msg::StopDone(r) | Msg::AckDone(r) => {
            m.busy = m.busy.saturating_sub(1);
            match r {
                Ok(t) => toast(m, t, false),
                Err(e) => toast(m, e, true),
            }
            vec![]
        }
        Msg::PickerLoaded(r) => {
            m.busy = m.busy.saturating_sub(1);
            if let Mode::Picking(p) = &mut m.mode {
                match r {
                    Ok(data) => {
                        p.envelope = default_index(&data);
                        p.data = Some(data);
                    }
                    Err(e) => p.error = Some(e),
                }
            }
            vec![]
        }
        Msg::OpenPicker(data) => {
            m.busy = m.busy.saturating_sub(1);
            let mut p = Picker::new();
            p.envelope = default_index(&data);
            p.data = Some(data);
            m.mode = Mode::Picking(p);
            vec![]
        }
        Msg::Fired(r) => {
            m.busy = m.busy.saturating_sub(1);
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
            vec![]
        }
        Msg::Toast { text, error } => {
            toast(m, text, error);
            vec![]
        }
        Msg::OracleToggled(result) => {
            m.busy = m.busy.saturating_sub(1);
            match result {
                Ok(Some(line)) => {
                    m.host.oracle_on = true;
                    toast(m, line, false);
                }
                Ok(None) => {
                    m.host.oracle_on = false;
                    toast(m, "oracle unmounted: questions wait for you".into(), false);
                }
                Err(e) => toast(m, e, true),
            }
            vec![]
        }
        Msg::Edited { ask_id, result } => {
            match result {
                Ok(text) => m.drafts.entry(ask_id).or_default().set_text(&text),
                Err(e) => toast(m, e, true),
            }
            vec![]
        }
    }
}

fn toast(m: &mut Model, text: String, error: bool) {
    let until_ms = (!error).then_some(m.now_ms + TOAST_MS);
    m.toasts.push(Toast {
        text,
        error,
        until_ms,
    });
    // Keep the stack short: the oldest info toasts go first.
    while m.toasts.len() > 4 {
        let i = m.toasts.iter().position(|t| !t.error).unwrap_or(0);
        m.toasts.remove(i);
    }
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

fn on_snapshot(m: &mut Model, s: Arc<Snapshot>) {
    if m.primed {
        for a in &s.asks {
            if !m.seen_asks.contains(&a.id) {
                let kind = if a.question { "question" } else { "permission" };
                toast(
                    m,
                    format!("new {kind} from {}: {}", a.agent, a.summary),
                    false,
                );
            }
        }
        for r in &s.rows {
            if let Some(prev) = m.seen_status.get(&r.id)
                && *prev == Status::Open
                && r.status.is_terminal()
            {
                let text = format!("mission {} {}: {}", short(&r.id), r.status, r.intent);
                // Terminal states are news, not failures of the board: they expire too.
                toast(m, text, false);
            }
        }
    }
    for a in &s.asks {
        m.seen_asks.insert(a.id.clone());
    }
    for r in &s.rows {
        m.seen_status.insert(r.id.clone(), r.status);
    }
    m.primed = true;
    // Selection follows the mission, not the row: a mission fired meanwhile pushes
    // rows down, and a key pressed next must still act on what the operator chose.
    let chosen = m.selected_mission().map(|r| r.id.clone());
    m.snap = s;
    if let Some(i) = chosen.and_then(|id| m.snap.rows.iter().position(|r| r.id == id)) {
        m.mission_sel = m.snap.offset + i;
    }
    let count = m.mission_count();
    if count == 0 {
        m.mission_sel = 0;
    } else if m.mission_sel >= count {
        m.mission_sel = count - 1;
    }
    scroll_to_selection(m);
    m.ask_sel = m.ask_sel.min(m.snap.asks.len().saturating_sub(1));
    m.inbox_sel = m.inbox_sel.min(m.snap.inbox.len().saturating_sub(1));
}

pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// Keep the selected mission inside the visible window.
fn scroll_to_selection(m: &mut Model) {
    let rows = layout::mission_rows(m.size);
    if m.mission_sel < m.mission_offset {
        m.mission_offset = m.mission_sel;
    } else if m.mission_sel >= m.mission_offset + rows {
        m.mission_offset = m.mission_sel + 1 - rows;
    }
    let count = m.mission_count();
    if count > 0 && m.mission_offset + rows > count {
        m.mission_offset = count.saturating_sub(rows);
    }
}

fn context(mode: &Mode, m: &Model) -> Context {
    match mode {
        Mode::Board => Context::Board,
        Mode::Answering { ask_id } => match m.ask(ask_id) {
            Some(a) if !a.question => Context::Verdict,
            _ => Context::Answer,
        },
        Mode::Picking(_) => Context::Picker,
        Mode::Confirm(_) => Context::Confirm,
        Mode::Help { .. } => Context::Help,
        Mode::Filter => Context::Filter,
        Mode::CommandLine { .. } => Context::Command,
    }
}

/// The hints the status bar shows for the current mode.
pub fn current_context(m: &Model) -> Context {
    context(&m.mode, m)
}

fn on_key(m: &mut Model, key: KeyEvent) -> Vec<Effect> {
    let ctx = context(&m.mode, m);
    let action = keymap::lookup(ctx, &key);
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
        Mode::Board => board_key(m, key, action),
        Mode::Answering { ask_id } => {
            let ask_id = ask_id.clone();
            answering_key(m, &ask_id, key, action)
        }
        Mode::Picking(_) => picker_key(m, key, action),
        Mode::Confirm(_) => confirm_key(m, key, action),
        Mode::Help { .. } => {
            if let Mode::Help { filter, scroll } = &mut m.mode {
                match (action, key.code) {
                    (Some(Action::Close), _) => m.mode = Mode::Board,
                    (Some(Action::Down), _) => *scroll += 1,
                    (Some(Action::Up), _) => *scroll = scroll.saturating_sub(1),
                    (Some(Action::PageDown), _) => *scroll += 10,
                    (Some(Action::PageUp), _) => *scroll = scroll.saturating_sub(10),
                    (_, KeyCode::Backspace) => {
                        filter.pop();
                        *scroll = 0;
                    }
                    (_, KeyCode::Char(c)) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                        filter.push(c);
                        *scroll = 0;
                    }
                    _ => {}
                }
            }
            vec![]
        }
        Mode::Filter => {
            match (action, key.code) {
                (Some(Action::Keep), _) => m.mode = Mode::Board,
                (Some(Action::ClearFilter), _) => {
                    m.filter.clear();
                    reset_missions(m);
                    m.mode = Mode::Board;
                }
                (_, KeyCode::Backspace) => {
                    m.filter.pop();
                    reset_missions(m);
                }
                (_, KeyCode::Char(c)) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                    m.filter.push(c);
                    reset_missions(m);
                }
                _ => {}
            }
            vec![]
        }
        Mode::CommandLine { .. } => command_key(m, key, action),
    }
}

fn reset_missions(m: &mut Model) {
    m.mission_sel = 0;
    m.mission_offset = 0;
}

fn board_key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    // The `g g` chord: a first `g` waits for the second; any other key drops it.
    if key.code == KeyCode::Char('g') && key.modifiers == KeyModifiers::NONE {
        if m.chord_g {
            m.chord_g = false;
            move_sel(m, Move::Top);
        } else {
            m.chord_g = true;
        }
        return vec![];
    }
    m.chord_g = false;
    let Some(action) = action else {
        return vec![];
    };
    let page = page_size(m);
    match action {
        Action::Quit => {
            let drafts = m.unsent_drafts();
            if drafts > 0 {
                m.mode = Mode::Confirm(Confirm {
                    kind: ConfirmKind::Quit { drafts },
                    reason: String::new(),
                    editing: false,
                    yes_focused: false,
                    error: None,
                });
            } else {
                m.quit = true;
            }
        }
        Action::Help => {
            m.mode = Mode::Help {
                filter: String::new(),
                scroll: 0,
            }
        }
        Action::Down => move_sel(m, Move::By(1)),
        Action::Up => move_sel(m, Move::By(-1)),
        Action::Top => move_sel(m, Move::Top),
        Action::Bottom => move_sel(m, Move::Bottom),
        Action::HalfDown => move_sel(m, Move::By((page / 2).max(1) as isize)),
        Action::HalfUp => move_sel(m, Move::By(-((page / 2).max(1) as isize))),
        Action::PageDown => move_sel(m, Move::By(page as isize)),
        Action::PageUp => move_sel(m, Move::By(-(page as isize))),
        Action::NextPane | Action::PrevPane => {
            let i = Pane::ORDER.iter().position(|p| *p == m.focus).unwrap_or(0);
            let n = Pane::ORDER.len();
            let next = if action == Action::NextPane {
                i + 1
            } else {
                i + n - 1
            };
            m.focus = Pane::ORDER[next % n];
        }
        Action::FocusMissions => m.focus = Pane::Missions,
        Action::FocusAsks => m.focus = Pane::Asks,
        Action::FocusInbox => m.focus = Pane::Inbox,
        Action::FocusTrace => m.focus = Pane::Trace,
        Action::ToggleOracle if !m.snap.beta => toast(
            m,
            "the oracle is a beta feature: `missionboard config set opt-in-beta true`, then reopen the board".into(),
            true,
        ),
        Action::ToggleOracle => {
            m.busy += 1;
            return vec![Effect::ToggleOracle {
                mount: !m.host.oracle_on,
            }];
        }
        Action::Open => match m.focus {
            Pane::Asks | Pane::Missions => return open_ask(m),
            Pane::Inbox => return ack(m),
            Pane::Trace => {}
        },
        Action::Ack if m.focus == Pane::Inbox => return ack(m),
        Action::Stop => {
            if let Some(row) = m.selected_mission() {
                m.mode = Mode::Confirm(Confirm {
                    kind: ConfirmKind::Stop {
                        mission_id: row.id.clone(),
                        intent: row.intent.clone(),
                    },
                    reason: DEFAULT_REASON.to_string(),
                    editing: false,
                    yes_focused: false,
                    error: None,
                });
            } else {
                toast(m, "no mission selected".into(), true);
            }
        }
        Action::Fire => {
            m.mode = Mode::Picking(Picker::new());
            m.busy += 1;
            return vec![Effect::LoadPicker];
        }
        Action::CommandLine => {
            m.mode = Mode::CommandLine {
                line: String::new(),
            }
        }
        Action::Filter => m.mode = Mode::Filter,
        Action::ClearFilter => {
            if !m.toasts.is_empty() {
                m.toasts.clear();
            } else if !m.filter.is_empty() {
                m.filter.clear();
                reset_missions(m);
            }
        }
        _ => {}
    }
    vec![]
}

fn page_size(m: &Model) -> usize {
    match m.focus {
        Pane::Missions => layout::mission_rows(m.size),
        Pane::Asks => layout::areas(m.size)
            .asks
            .height
            .saturating_sub(layout::LIST_CHROME) as usize,
        Pane::Inbox => layout::areas(m.size)
            .inbox
            .height
            .saturating_sub(layout::LIST_CHROME) as usize,
        Pane::Trace => layout::areas(m.size)
            .trace
            .height
            .saturating_sub(layout::LIST_CHROME) as usize,
    }
    .max(1)
}

#[derive(Clone, Copy)]
enum Move {
    By(isize),
    Top,
    Bottom,
}

fn step(cur: usize, len: usize, mv: Move) -> usize {
    if len == 0 {
        return 0;
    }
    match mv {
        Move::Top => 0,
        Move::Bottom => len - 1,
        Move::By(d) => cur.saturating_add_signed(d).min(len - 1),
    }
}

fn move_sel(m: &mut Model, mv: Move) {
    match m.focus {
        Pane::Missions => {
            m.mission_sel = step(m.mission_sel, m.mission_count(), mv);
            scroll_to_selection(m);
        }
        Pane::Asks => m.ask_sel = step(m.ask_sel, m.snap.asks.len(), mv),
        Pane::Inbox => m.inbox_sel = step(m.inbox_sel, m.snap.inbox.len(), mv),
        Pane::Trace => m.trace_scroll = step(m.trace_scroll, m.snap.oracle_trace.len(), mv),
    }
}

/// Enter on an ask (or on a mission with one pending): open its answer pane.
fn open_ask(m: &mut Model) -> Vec<Effect> {
    let ask = match m.focus {
        Pane::Asks => m.selected_ask().cloned(),
        _ => {
            let id = m.selected_mission().map(|r| r.id.clone());
            m.snap
                .asks
                .iter()
                .find(|a| a.mission_id.is_some() && a.mission_id == id)
                .cloned()
        }
    };
    match ask {
        Some(a) => {
            m.drafts.entry(a.id.clone()).or_default();
            m.mode = Mode::Answering { ask_id: a.id };
        }
        None if m.focus == Pane::Asks => toast(m, "no pending ask selected".into(), true),
        None => {}
    }
    vec![]
}

fn ack(m: &mut Model) -> Vec<Effect> {
    match m.snap.inbox.get(m.inbox_sel) {
        Some(item) => {
            m.busy += 1;
            vec![Effect::Ack {
                inbox_id: item.id.clone(),
            }]
        }
        None => vec![],
    }
}

fn answering_key(
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
            draft.sending = true;
            draft.error = None;
            m.busy += 1;
            return vec![Effect::Verdict {
                ask_id: ask_id.to_string(),
                verdict: OperatorVerdict::Answer(text),
            }];
        }
        Some(a @ (Action::Approve | Action::Deny)) if !question => {
            let draft = m.drafts.entry(ask_id.to_string()).or_default();
            if draft.sending {
                return vec![];
            }
            draft.sending = true;
            draft.error = None;
            m.busy += 1;
            let verdict = if a == Action::Approve {
                OperatorVerdict::Approve
            } else {
                OperatorVerdict::Deny
            };
            return vec![Effect::Verdict {
                ask_id: ask_id.to_string(),
                verdict,
            }];
        }
        _ => {}
    }
    if question {
        let draft = m.drafts.entry(ask_id.to_string()).or_default();
        if !draft.sending {
            draft.area.input(key);
            draft.error = None;
        }
    }
    vec![]
}

fn on_paste(m: &mut Model, text: &str) {
    match &mut m.mode {
        Mode::Answering { ask_id } => {
            let draft = m.drafts.entry(ask_id.clone()).or_default();
            draft.area.insert_str(text);
        }
        Mode::CommandLine { line } => line.push_str(&crate::text::one_line(text)),
        Mode::Filter => {
            m.filter.push_str(&crate::text::one_line(text));
            reset_missions(m);
        }
        Mode::Picking(p) if p.step == PickStep::Intent => {
            p.intent.push_str(&crate::text::one_line(text))
        }
        _ => {}
    }
}

fn picker_key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    let Mode::Picking(p) = &mut m.mode else {
        return vec![];
    };
    // In the intent step letters are text: only the structural keys act.
    if p.step == PickStep::Intent {
        match (action, key.code) {
            (Some(Action::Cancel), _) => m.mode = Mode::Board,
            (Some(Action::Back), _) => p.step = PickStep::Agent,
            (Some(Action::Confirm), _) => return fire_picked(m),
            (_, KeyCode::Backspace) => {
                p.intent.pop();
                p.error = None;
            }
            (_, KeyCode::Char(c)) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                p.intent.push(c);
                p.error = None;
            }
            _ => {}
        }
        return vec![];
    }
    let Some(data) = &p.data else {
        if action == Some(Action::Cancel) {
            m.mode = Mode::Board;
        }
        return vec![];
    };
    let (len, cur) = match p.step {
        PickStep::Envelope => (data.envelopes.len(), &mut p.envelope),
        _ => (data.agents.len(), &mut p.agent),
    };
    match action {
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
                super::picker::NO_ENVELOPES.to_string()
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
    if p.intent.trim().is_empty() {
        p.error = Some("missing parameter: intent: intent is required".into());
        return vec![];
    }
    p.busy = true;
    let effect = Effect::Fire {
        agent: agent.name.clone(),
        envelope: env.short_name.clone(),
        intent: p.intent.trim().to_string(),
        summary: env.summary.clone(),
    };
    m.busy += 1;
    vec![effect]
}

fn confirm_key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    let Mode::Confirm(c) = &mut m.mode else {
        return vec![];
    };
    if c.editing {
        match key.code {
            KeyCode::Enter | KeyCode::Tab | KeyCode::Esc => c.editing = false,
            KeyCode::Backspace => {
                c.reason.pop();
            }
            KeyCode::Char(ch) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                c.reason.push(ch)
            }
            _ => {}
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
            if matches!(c.kind, ConfirmKind::Stop { .. }) {
                c.editing = true;
            }
            return vec![];
        }
        Some(Action::Cancel) => false,
        _ => return vec![],
    };
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
                reason: c.reason,
            }]
        }
    }
}

fn command_key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
    let Mode::CommandLine { line } = &mut m.mode else {
        return vec![];
    };
    match (action, key.code) {
        (Some(Action::Cancel), _) => m.mode = Mode::Board,
        (Some(Action::Run), _) => {
            let line = std::mem::take(line);
            m.mode = Mode::Board;
            return run_command(m, &line);
        }
        (_, KeyCode::Backspace) => {
            line.pop();
        }
        (_, KeyCode::Char(c)) if !key.modifiers.contains(KeyModifiers::CONTROL) => line.push(c),
        _ => {}
    }
    vec![]
}

/// `:mission …` (or `:/mission …`, `:m …`), `:help`, `:q`.
fn run_command(m: &mut Model, line: &str) -> Vec<Effect> {
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
        "q" | "quit" => {
            m.quit = true;
            vec![]
        }
        "help" => {
            m.mode = Mode::Help {
                filter: args.trim().to_string(),
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

fn on_mouse(m: &mut Model, ev: MouseEvent) {
    if m.mode != Mode::Board || layout::too_small(m.size) {
        return;
    }
    let a = layout::areas(m.size);
    let at = Position::new(ev.column, ev.row);
    let pane = [
        (a.missions, Pane::Missions),
        (a.asks, Pane::Asks),
        (a.inbox, Pane::Inbox),
        (a.trace, Pane::Trace),
    ]
    .into_iter()
    .find(|(r, _)| r.contains(at));
    let Some((rect, pane)) = pane else { return };
    match ev.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            m.focus = pane;
            // First content row: below the border (and the table's header).
            let first = rect.y + if pane == Pane::Missions { 2 } else { 1 };
            if ev.row < first || ev.row >= rect.y + rect.height - 1 {
                return;
            }
            let i = (ev.row - first) as usize;
            match pane {
                Pane::Missions => {
                    let idx = m.mission_offset + i;
                    if idx < m.mission_count() {
                        m.mission_sel = idx;
                    }
                }
                Pane::Asks if i < m.snap.asks.len() => m.ask_sel = i,
                Pane::Inbox if i < m.snap.inbox.len() => m.inbox_sel = i,
                _ => {}
            }
        }
        MouseEventKind::ScrollDown => {
            m.focus = pane;
            move_sel(m, Move::By(1));
        }
        MouseEventKind::ScrollUp => {
            m.focus = pane;
            move_sel(m, Move::By(-1));
        }
        _ => {}
    }
}

/// A draft for `ask_id` exists (tests and views).
pub fn has_draft(m: &Model, ask_id: &str) -> bool {
    m.drafts.contains_key(ask_id)
}
