//! What the board knows. `Snapshot` is what the store thread reads (already
//! sanitized, only the visible window); `Model` is the UI's state around it. Both are
//! plain data, so views can be tested from hand-built values.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use ratatui::layout::Rect;
use ratatui_textarea::TextArea;

use super::line::{LineField, line_breaks};
use super::theme::{Symbols, Theme};
use crate::mission::Status;
use crate::text::sanitize;

/// One mission row of the visible window.
#[derive(Debug, Clone, PartialEq)]
pub struct MissionRow {
    pub id: String,
    pub intent: String,
    pub agent: String,
    pub envelope: String,
    pub status: Status,
    pub status_reason: Option<String>,
    pub created_at: i64,
    pub last_heartbeat: Option<i64>,
    pub pending_asks: i64,
}

/// A pending ask, across all missions.
#[derive(Debug, Clone, PartialEq)]
pub struct AskRow {
    pub id: String,
    pub mission_id: Option<String>,
    pub agent: String,
    pub question: bool,
    /// One line: the question, or the gated call's summary.
    pub summary: String,
    /// The question's detail or the permission's diff, multi-line.
    pub detail: Option<String>,
    pub tool: String,
    pub envelope: String,
    pub created_at: i64,
    /// 0 = no deadline.
    pub expires_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct InboxRow {
    pub id: String,
    pub mission_id: String,
    pub agent: String,
    pub reason: String,
    pub kind: String,
    pub summary: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReportRow {
    pub kind: String,
    pub summary: String,
    /// The verification gate's line when the report was downgraded (the ⚠ flag).
    pub warning: Option<String>,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlanRow {
    pub content: String,
    pub status: String,
}

/// The selected mission in full.
#[derive(Debug, Clone, PartialEq)]
pub struct Detail {
    pub mission: MissionRow,
    pub last_error: Option<String>,
    pub plan: Vec<PlanRow>,
    pub plan_revision: i64,
    /// Newest first.
    pub reports: Vec<ReportRow>,
    /// The latest handover, as labelled lines.
    pub handover: Vec<String>,
    /// Its git worktree, when it was fired with one: path, branch, what became of it.
    pub worktree: Option<String>,
    /// The editor session that fired it, when one did.
    pub fired_by: Option<String>,
}

/// What the store thread publishes. Everything text in it is sanitized.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Bumped per publish, so the UI can tell a fresh read from a repeat.
    pub generation: u64,
    pub total_missions: usize,
    pub open_missions: usize,
    /// With a filter: how many missions matched (of those scanned).
    pub matched: Option<usize>,
    /// Index of `rows[0]` in the (filtered) ordering.
    pub offset: usize,
    pub rows: Vec<MissionRow>,
    pub detail: Option<Detail>,
    /// Oldest first: the longest wait is the most urgent.
    pub asks: Vec<AskRow>,
    pub pending_total: usize,
    pub inbox: Vec<InboxRow>,
    pub inbox_total: usize,
    /// The newest oracle trace lines of every mission, oldest first.
    pub oracle_trace: Vec<String>,
    /// The model an `--oracle` fire would consult, under the beta: `scripted (path)`
    /// or `<model> at <url>`.
    pub oracle_model: Option<String>,
    pub beta: bool,
    pub fleet_used: usize,
    pub fleet_cap: u64,
    pub store_error: Option<String>,
}

/// What the UI asks the store thread to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub offset: usize,
    pub limit: usize,
    pub selected: usize,
    pub filter: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Missions,
    Asks,
    Inbox,
    Trace,
}

impl Pane {
    pub const ORDER: [Pane; 4] = [Pane::Missions, Pane::Asks, Pane::Inbox, Pane::Trace];
}

/// One envelope as the picker lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeEntry {
    pub file_name: String,
    pub short_name: String,
    /// The §7 character line (empty for an unparseable file).
    pub summary: String,
    /// `(field, label)` for each compute field the envelope sets.
    pub labels: Vec<(&'static str, &'static str)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentEntry {
    pub name: String,
    pub description: String,
}

/// What the picker needs from disk and config, read by an effect.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PickerData {
    pub envelopes: Vec<EnvelopeEntry>,
    pub agents: Vec<AgentEntry>,
    pub default_agent: Option<String>,
    pub default_envelope: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickStep {
    Envelope,
    Agent,
    Intent,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Picker {
    pub data: Option<PickerData>,
    pub step: PickStep,
    pub envelope: usize,
    pub agent: usize,
    pub intent: LineField,
    pub error: Option<String>,
    pub busy: bool,
}

impl Picker {
    pub fn new() -> Picker {
        Picker {
            data: None,
            step: PickStep::Envelope,
            envelope: 0,
            agent: 0,
            intent: LineField::new(),
            error: None,
            busy: false,
        }
    }
}

impl Default for Picker {
    fn default() -> Self {
        Picker::new()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfirmKind {
    Stop {
        mission_id: String,
        intent: String,
    },
    Quit {
        drafts: usize,
    },
    /// `mission merge`: the worktree's work onto the operator's current branch.
    Merge {
        mission_id: String,
        intent: String,
    },
    /// `mission discard`: the worktree and its branch go, work and all.
    Discard {
        mission_id: String,
        intent: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    pub kind: ConfirmKind,
    /// The stop reason (a quit confirms nothing editable).
    pub reason: LineField,
    pub editing: bool,
    /// Focus starts on No: a stray Enter never confirms.
    pub yes_focused: bool,
    pub error: Option<String>,
}

/// A mission's changes against its worktree's base, sanitized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffView {
    pub mission_id: String,
    /// `--stat` lines: the files touched.
    pub files: Vec<String>,
    /// The patch, line by line.
    pub lines: Vec<String>,
    pub scroll: usize,
}

/// The board's modes; key routing is `match (mode, key)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Board,
    /// The answer pane (a question) or the verdict pane (a permission gate).
    Answering {
        ask_id: String,
    },
    Picking(Picker),
    Confirm(Confirm),
    Help {
        filter: LineField,
        scroll: usize,
    },
    /// The selected worktree mission's diff.
    Diff(DiffView),
    /// Editing `Model::filter`, which stays applied after the mode ends.
    Filter,
    CommandLine {
        line: LineField,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toast {
    pub text: String,
    pub error: bool,
    /// Info toasts expire; errors stay until dismissed (any key in board mode).
    pub until_ms: Option<i64>,
}

/// How long an info toast stays.
pub const TOAST_MS: i64 = 4000;

/// The answer pane state of one ask: the draft survives refreshes and closing.
pub struct Draft {
    pub area: TextArea<'static>,
    pub error: Option<String>,
    pub sending: bool,
}

impl Draft {
    pub fn new() -> Draft {
        let mut area = TextArea::default();
        area.set_placeholder_text("type the answer · Enter = newline · C-s or M-Enter sends");
        Draft {
            area,
            error: None,
            sending: false,
        }
    }

    pub fn text(&self) -> String {
        self.area.lines().join("\n")
    }

    /// Pasted text at the cursor. What the box shows is what is sent: every line
    /// break becomes a real one (a bare `\r` too, which the text area would keep as
    /// an invisible char), and escapes and controls are stripped as from agent text.
    pub fn paste(&mut self, text: &str) {
        self.area.insert_str(sanitize(&line_breaks(text)));
        self.error = None;
    }

    /// Replace the draft (after the operator's editor), cursor at the end; its text is
    /// cleaned as a paste is.
    pub fn set_text(&mut self, text: &str) {
        let placeholder = self.area.placeholder_text().to_string();
        let text = sanitize(&line_breaks(text));
        self.area = TextArea::from(text.trim_end_matches('\n').lines());
        self.area.set_placeholder_text(placeholder);
        self.area.move_cursor(ratatui_textarea::CursorMove::Bottom);
        self.area.move_cursor(ratatui_textarea::CursorMove::End);
        self.error = None;
    }
}

impl Default for Draft {
    fn default() -> Self {
        Draft::new()
    }
}

/// A hand-over of the terminal: the board steps aside, then takes it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TerminalRequest {
    /// Ctrl-Z: stop the process as a shell's job control expects.
    Suspend,
    /// Ctrl-O: edit this ask's draft in the operator's editor.
    Edit { ask_id: String, text: String },
}

/// Facts about the host shown in the status bar and on exit.
#[derive(Debug, Clone, Default)]
pub struct HostInfo {
    pub demo_home: Option<PathBuf>,
    pub log_dir: Option<PathBuf>,
    /// This board's own oracle driver is following its missions' questions.
    pub oracle_on: bool,
}

pub struct Model {
    pub snap: Arc<Snapshot>,
    pub size: Rect,
    pub focus: Pane,
    /// Absolute index in the (filtered) missions ordering.
    pub mission_sel: usize,
    /// First visible row: the page the store thread reads.
    pub mission_offset: usize,
    pub ask_sel: usize,
    pub inbox_sel: usize,
    pub trace_scroll: usize,
    pub mode: Mode,
    pub drafts: HashMap<String, Draft>,
    pub filter: LineField,
    pub toasts: Vec<Toast>,
    /// Effects in flight (the status-bar spinner).
    pub busy: usize,
    pub theme: Theme,
    pub symbols: Symbols,
    pub quit: bool,
    pub redraw: bool,
    /// Something only the terminal's owner (the event loop) can do; it takes it.
    pub terminal_request: Option<TerminalRequest>,
    /// A pending `g` of the `g g` chord.
    pub chord_g: bool,
    pub now_ms: i64,
    pub tick: u64,
    pub host: HostInfo,
    /// For toasts: asks and mission states seen in earlier snapshots.
    pub seen_asks: HashSet<String>,
    pub seen_status: HashMap<String, Status>,
    pub primed: bool,
}

impl Model {
    pub fn new(theme: Theme, symbols: Symbols, size: Rect) -> Model {
        Model {
            snap: Arc::new(Snapshot::default()),
            size,
            focus: Pane::Missions,
            mission_sel: 0,
            mission_offset: 0,
            ask_sel: 0,
            inbox_sel: 0,
            trace_scroll: 0,
            mode: Mode::Board,
            drafts: HashMap::new(),
            filter: LineField::new(),
            toasts: Vec::new(),
            busy: 0,
            theme,
            symbols,
            quit: false,
            redraw: false,
            terminal_request: None,
            chord_g: false,
            now_ms: 0,
            tick: 0,
            host: HostInfo::default(),
            seen_asks: HashSet::new(),
            seen_status: HashMap::new(),
            primed: false,
        }
    }

    /// The window the store thread should read for the current scroll and size.
    pub fn query(&self) -> Query {
        Query {
            offset: self.mission_offset,
            limit: super::layout::mission_rows(self.size),
            selected: self.mission_sel,
            filter: self.filter.as_str().to_string(),
        }
    }

    /// How many missions the table scrolls over (filtered or not).
    pub fn mission_count(&self) -> usize {
        self.snap.matched.unwrap_or(self.snap.total_missions)
    }

    /// The selected mission, if its row is in the current window.
    pub fn selected_mission(&self) -> Option<&MissionRow> {
        self.mission_sel
            .checked_sub(self.snap.offset)
            .and_then(|i| self.snap.rows.get(i))
    }

    pub fn selected_ask(&self) -> Option<&AskRow> {
        self.snap.asks.get(self.ask_sel)
    }

    pub fn ask(&self, id: &str) -> Option<&AskRow> {
        self.snap.asks.iter().find(|a| a.id == id)
    }

    pub fn unsent_drafts(&self) -> usize {
        self.drafts
            .values()
            .filter(|d| !d.text().trim().is_empty())
            .count()
    }
}
