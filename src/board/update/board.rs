//! The board itself: moving over the panes, opening what is selected, the keys
//! that enter every other mode, the mouse, and what a fresh snapshot changes.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Position;

use super::{Effect, confirm, news, short, toast};
use crate::board::keymap::Action;
use crate::board::layout;
use crate::board::line::LineField;
use crate::board::model::{Mode, Model, Pane, Picker, Snapshot};
use crate::board::notify::Alert;
use crate::mission::Status;

pub(super) fn key(m: &mut Model, key: KeyEvent, action: Option<Action>) -> Vec<Effect> {
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
        Action::Quit => return confirm::request_quit(m),
        Action::Help => {
            m.mode = Mode::Help {
                filter: LineField::new(),
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
        Action::Stop => match m.selected_mission() {
            Some(row) => m.mode = Mode::Confirm(confirm::stop(row)),
            None => toast(m, "no mission selected".into(), true),
        },
        Action::Diff => match m.selected_mission().map(|row| row.id.clone()) {
            Some(mission_id) => {
                m.busy += 1;
                return vec![Effect::LoadDiff { mission_id }];
            }
            None => toast(m, "no mission selected".into(), true),
        },
        Action::Merge | Action::Discard => match m.selected_mission() {
            Some(row) => {
                m.mode = Mode::Confirm(confirm::worktree(row, action == Action::Merge))
            }
            None => toast(m, "no mission selected".into(), true),
        },
        Action::Fire => {
            m.mode = Mode::Picking(Picker::new());
            m.busy += 1;
            return vec![Effect::LoadPicker];
        }
        Action::CommandLine => {
            m.mode = Mode::CommandLine {
                line: LineField::new(),
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

/// The filter changed: its matches start at the top.
pub(super) fn reset_missions(m: &mut Model) {
    m.mission_sel = 0;
    m.mission_offset = 0;
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
pub(super) enum Move {
    By(isize),
    Top,
    Bottom,
}

/// `cur` moved by `mv` within `0..len`.
pub(super) fn step(cur: usize, len: usize, mv: Move) -> usize {
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

/// Keep the selected mission inside the visible window.
pub(super) fn scroll_to_selection(m: &mut Model) {
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

pub(super) fn on_oracle_toggled(m: &mut Model, result: Result<Option<String>, String>) {
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
}

pub(super) fn on_snapshot(m: &mut Model, s: Arc<Snapshot>) {
    if m.primed {
        for a in &s.asks {
            if !m.seen_asks.contains(&a.id) {
                let kind = if a.question { "question" } else { "permission" };
                news(m, format!("new {kind} from {}: {}", a.agent, a.summary));
                if !m.host.notify.is_off() {
                    let kind = if a.question { "question" } else { "gated call" };
                    let mission = a.mission_id.as_deref().map(short).unwrap_or("-");
                    m.alerts.push(Alert {
                        title: "missionboard".into(),
                        body: format!("{kind} from {} (mission {mission}): {}", a.agent, a.summary),
                    });
                }
            }
        }
        for r in &s.rows {
            if let Some(prev) = m.seen_status.get(&r.id)
                && *prev == Status::Open
                && r.status.is_terminal()
            {
                let text = format!("mission {} {}: {}", short(&r.id), r.status, r.intent);
                // Terminal states are news, not failures of the board: they expire too.
                news(m, text);
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

pub(super) fn on_mouse(m: &mut Model, ev: MouseEvent) {
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
