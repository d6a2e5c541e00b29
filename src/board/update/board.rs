//! The board itself: moving over the panes, opening what is selected, the keys
//! that enter every other mode, the mouse, and what a fresh snapshot changes.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::Position;

use super::{Effect, answer, confirm, news, toast};
use crate::asks::OperatorVerdict;
use crate::board::keymap::Action;
use crate::board::layout;
use crate::board::line::LineField;
use crate::board::model::short;
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
            focus(m, Pane::ORDER[next % n]);
        }
        Action::FocusMissions => focus(m, Pane::Missions),
        Action::FocusDetail => focus(m, Pane::Detail),
        Action::FocusAsks => focus(m, Pane::Asks),
        Action::FocusInbox => focus(m, Pane::Inbox),
        Action::FocusTrace => focus(m, Pane::Trace),
        Action::Zoom => {
            m.detail_zoom = !m.detail_zoom;
            if m.detail_zoom {
                m.focus = Pane::Detail;
            }
        }
        Action::SortNext => {
            m.order = m.order.next();
            reset_missions(m);
            toast(
                m,
                format!(
                    "missions sorted by {} (what needs you stays on top)",
                    m.order.as_str()
                ),
                false,
            );
        }
        Action::ToggleTerminal => {
            m.hide_terminal = !m.hide_terminal;
            reset_missions(m);
        }
        Action::Revise => match m.selected_mission() {
            Some(row) if crate::mission::revise::REVISABLE.contains(&row.status) => {
                m.mode = Mode::Confirm(confirm::revise(row));
            }
            Some(row) => {
                let why = format!(
                    "only a landed, stuck or derailed mission is sent back — {} is {}",
                    crate::board::model::short(&row.id),
                    row.status
                );
                toast(m, why, true);
            }
            None => toast(m, "no mission selected".into(), true),
        },
        Action::Refire => match m.selected_mission() {
            Some(row) => m.mode = Mode::Confirm(confirm::refire(row)),
            None => toast(m, "no mission selected".into(), true),
        },
        Action::Mark if m.focus == Pane::Inbox => {
            if let Some(id) = m.selected_inbox().map(|i| i.id.clone())
                && !m.marked.remove(&id)
            {
                m.marked.insert(id);
            }
            move_sel(m, Move::By(1));
        }
        Action::AckAll if m.focus == Pane::Inbox => return ack_all(m),
        Action::Ack if m.focus == Pane::Asks => return decide(m, OperatorVerdict::Approve),
        Action::Deny if m.focus == Pane::Asks => return decide(m, OperatorVerdict::Deny),
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
            Pane::Inbox if m.selected_inbox().is_some() => {
                // Open the item: its mission and full report, on the whole screen.
                m.focus = Pane::Detail;
                m.detail_from = Pane::Inbox;
                m.detail_scroll = 0;
                m.detail_zoom = true;
            }
            Pane::Inbox | Pane::Detail | Pane::Trace => {}
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
            if m.detail_zoom {
                m.detail_zoom = false;
            } else if !m.toasts.is_empty() {
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

/// Focus `pane`; a list pane also becomes what the detail pane follows.
fn focus(m: &mut Model, pane: Pane) {
    m.focus = pane;
    if matches!(pane, Pane::Missions | Pane::Asks | Pane::Inbox) && m.detail_from != pane {
        m.detail_from = pane;
        m.detail_scroll = 0;
    }
}

/// `a` / `d` on the asks pane: the selected gated call's verdict, straight away
/// (a question takes words, so it opens its answer pane instead).
fn decide(m: &mut Model, verdict: OperatorVerdict) -> Vec<Effect> {
    match m.selected_ask().map(|a| (a.id.clone(), a.question)) {
        Some((id, false)) if m.drafts.get(&id).is_some_and(|d| d.sending) => vec![],
        Some((id, false)) => answer::send(m, &id, verdict),
        Some((_, true)) => open_ask(m),
        None => {
            toast(m, "no pending ask selected".into(), true);
            vec![]
        }
    }
}

/// `A`: acknowledge the marked inbox items, else every item the pane shows, one
/// service call each (the same `inbox ack` the CLI makes).
fn ack_all(m: &mut Model) -> Vec<Effect> {
    let shown = layout::list_window(
        m.inbox_sel,
        m.snap.inbox.len(),
        layout::areas(m.size).inbox.height,
    );
    let marked: Vec<String> = m
        .snap
        .inbox
        .iter()
        .filter(|i| m.marked.contains(&i.id))
        .map(|i| i.id.clone())
        .collect();
    let inbox_ids = if marked.is_empty() {
        m.snap.inbox[shown].iter().map(|i| i.id.clone()).collect()
    } else {
        marked
    };
    if inbox_ids.is_empty() {
        toast(m, "the inbox is clear: nothing to acknowledge".into(), true);
        return vec![];
    }
    m.marked.clear();
    m.busy += 1;
    vec![Effect::AckMany { inbox_ids }]
}

/// The filter changed: its matches start at the top.
pub(super) fn reset_missions(m: &mut Model) {
    m.mission_sel = 0;
    m.mission_offset = 0;
}

fn page_size(m: &Model) -> usize {
    match m.focus {
        Pane::Missions => layout::mission_rows(m.size),
        Pane::Detail => crate::board::view::detail_rows(m),
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
    if m.focus != Pane::Detail {
        // Another item selected: its detail starts at the top.
        m.detail_scroll = 0;
    }
    match m.focus {
        Pane::Missions => {
            m.mission_sel = step(m.mission_sel, m.mission_count(), mv);
            scroll_to_selection(m);
        }
        Pane::Detail => {
            let max = crate::board::view::detail_scroll_max(m, m.now_ms);
            m.detail_scroll = step(m.detail_scroll, max + 1, mv);
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
    let inbox = &m.snap.inbox;
    m.marked.retain(|id| inbox.iter().any(|i| i.id == *id));
}

pub(super) fn on_mouse(m: &mut Model, ev: MouseEvent) {
    if m.mode != Mode::Board || layout::too_small(m.size) {
        return;
    }
    let a = layout::areas(m.size);
    let at = Position::new(ev.column, ev.row);
    let pane = [
        (a.missions, Pane::Missions),
        (a.detail, Pane::Detail),
        (a.asks, Pane::Asks),
        (a.inbox, Pane::Inbox),
        (a.trace, Pane::Trace),
    ]
    .into_iter()
    .find(|(r, _)| r.contains(at));
    let Some((rect, pane)) = pane else { return };
    match ev.kind {
        MouseEventKind::Down(MouseButton::Left) => {
            focus(m, pane);
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
            focus(m, pane);
            move_sel(m, Move::By(1));
        }
        MouseEventKind::ScrollUp => {
            focus(m, pane);
            move_sel(m, Move::By(-1));
        }
        _ => {}
    }
}
