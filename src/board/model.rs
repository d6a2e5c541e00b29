//! What the board knows. `Snapshot` is what the store thread reads (already
//! sanitized, only the visible window); `Model` is the UI's state around it. Both are
//! plain data, so views can be tested from hand-built values.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use ratatui::layout::Rect;
use ratatui_textarea::TextArea;

use super::keymap::Context;
use super::line::{LineField, line_breaks};
use super::theme::{Symbols, Theme};
use crate::mission::{Order, Status};
use crate::text::sanitize;

/// Why a mission is in the "needs me" group at the top of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Needs {
    /// A question or a gated call waits for the operator.
    Ask,
    /// Open, but the process that hosted its unit is gone.
    HostGone,
    /// It filed a blocker that waits unacknowledged in the inbox.
    Blocker,
}

impl Needs {
    pub fn label(self) -> &'static str {
        match self {
            Needs::Ask => "ask",
            Needs::HostGone => "host gone",
            Needs::Blocker => "blocker",
        }
    }
}

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
    /// Where it works: `cwd`, or its worktree (`worktree`, `merged`, `discarded`).
    pub workspace: String,
    /// The machine of the host that runs (or ran) it (`-`: a record from before
    /// hosts were recorded).
    pub host: String,
    /// Its place in the queue (1 = next) while it waits for a `missionboard host`.
    pub queue_position: Option<usize>,
    /// Set when it is in the needs-me group, with the most pressing reason.
    pub needs: Option<Needs>,
    /// Its check's mark beside the state (`✓` passed, `✗` failed, `…` running);
    /// `None`: no check, or one not run yet.
    pub check: Option<&'static str>,
    /// What it cost, short (`$0.0081 est.`, `$0.42 reported`, `no price`); `None`:
    /// it started no unit, or the row was built without it.
    pub cost: Option<String>,
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
    /// The envelope rule that asked (its index in `rules`), if a rule did.
    pub matched_rule: Option<i64>,
    /// What the ask resolves to when its deadline passes.
    pub on_timeout: String,
    /// The asking mission's intent (empty when it has none or is not in view).
    pub intent: String,
    pub created_at: i64,
    /// 0 = no deadline.
    pub expires_at: i64,
}

impl AskRow {
    /// A form the unit sent (an elicitation): filled in words, `key=value` a line.
    pub fn is_form(&self) -> bool {
        self.tool
            == format!(
                "{}.{}",
                crate::asks::ELICITATION_TOOLS,
                crate::asks::FORM_TOOL
            )
    }
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
    /// The long form, sanitized, multi-line (empty when none).
    pub detail: String,
    /// The references it cites.
    pub refs: Vec<String>,
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
    /// What it has spent: tool calls, tokens (durable, across sessions), time.
    pub spend: Option<String>,
    /// How full the agent's context is, as its last `usage_update` said.
    pub context: Option<String>,
    /// What fired it, when not the operator: an editor session, a schedule's tick
    /// or a webhook trigger's delivery (`session mb-…`, `schedule nightly (tick …)`).
    pub fired_by: Option<String>,
    /// What kind of process hosts it (a `missionboard host`, this board, the process
    /// that fired it), or where it waits in the queue.
    pub host_role: Option<String>,
    /// Its check: the state and command, then the last try's outcome and the tail
    /// of its output (empty: fired without a check).
    pub check: Vec<String>,
    /// Its cost as `mission show` words it (reported or estimated, the oracle's
    /// share, or why there is no price).
    pub cost: Option<String>,
}

/// What the store thread publishes. Everything text in it is sanitized.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Bumped per publish, so the UI can tell a fresh read from a repeat.
    pub generation: u64,
    pub total_missions: usize,
    pub open_missions: usize,
    /// Missions in the current listing (the terminal ones left out when hidden).
    pub listed: usize,
    /// How many of them lead the listing as needing the operator.
    pub needs_me: usize,
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
    /// Unacknowledged items in all (the pane shows at most the newest page).
    pub inbox_total: usize,
    /// The newest oracle trace lines of every mission, oldest first.
    pub oracle_trace: Vec<String>,
    /// The model an `--oracle` fire would consult, under the beta: `scripted (path)`
    /// or `<model> at <url>`.
    pub oracle_model: Option<String>,
    pub beta: bool,
    pub fleet_used: usize,
    pub fleet_cap: u64,
    /// The resident memory this board's units use, and `fleet-max-memory`.
    pub fleet_memory: u64,
    pub fleet_memory_cap: Option<u64>,
    /// The live `missionboard host`s sharing the store, with their width and load.
    pub hosts: Vec<crate::mission::hosts::HostRow>,
    /// The live schedule that ticks soonest: its name, when, and its last outcome.
    pub next_schedule: Option<(String, i64, Option<String>)>,
    /// What the fleet spent today (UTC) as its budgets count it, with the daily
    /// budget when one is set: `today $0.75/$1.00`. `None` until anything is spent.
    pub fleet_today: Option<String>,
    /// The schedules panel's rows (read only while it is open, only as many as it
    /// shows), and how many schedules there are in all.
    pub schedules: Vec<ScheduleRow>,
    pub schedules_total: usize,
    pub store_error: Option<String>,
    /// The query it was read for: the first snapshot for a new query answers the
    /// operator's input and is drawn at once ([`super::answers_input`]).
    pub query: Query,
}

/// One schedule as the schedules panel shows it (every text sanitized).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScheduleRow {
    pub name: String,
    /// Its cron expression and zone.
    pub when: String,
    /// Its next tick; `None` while paused.
    pub next: Option<i64>,
    /// The last tick it came to, and what that tick did.
    pub last_tick: Option<i64>,
    pub last_outcome: Option<String>,
    /// What a tick fires: `template triage`, or `stub: tidy the docs`.
    pub fires: String,
}

/// What the UI asks the store thread to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub offset: usize,
    pub limit: usize,
    pub selected: usize,
    pub filter: String,
    pub order: Order,
    pub hide_terminal: bool,
    /// The mission the detail pane follows instead of the selected row (the
    /// selected ask's or inbox item's).
    pub detail_for: Option<String>,
    /// How many schedules the schedules panel has room for (0: it is closed, and
    /// none are read).
    pub schedules: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Missions,
    Detail,
    Asks,
    Inbox,
    Trace,
}

impl Pane {
    pub const ORDER: [Pane; 5] = [
        Pane::Missions,
        Pane::Detail,
        Pane::Asks,
        Pane::Inbox,
        Pane::Trace,
    ];
}

pub use crate::ops::fire::{AgentEntry, EnvelopeEntry, PickerData};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickStep {
    Envelope,
    Agent,
    Intent,
    /// The templates on the search path (`t` from the envelope or agent step).
    Template,
    /// The chosen template's parameters, one field each.
    Params,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Picker {
    pub data: Option<PickerData>,
    pub step: PickStep,
    pub envelope: usize,
    pub agent: usize,
    pub intent: LineField,
    /// The template chosen (an index into the data's templates).
    pub template: usize,
    /// One field per parameter of the chosen template, in its order; an empty field
    /// gives nothing (the default, else the fire's refusal naming it).
    pub params: Vec<LineField>,
    /// The parameter field being typed in.
    pub param: usize,
    pub error: Option<String>,
    pub busy: bool,
    /// Where the picked mission runs.
    pub runs: Runs,
}

/// Where a mission fired from the picker runs: on this board's own fleet, or
/// recorded `queued` for a `missionboard host` (`mission fire --queue`), with a
/// label only a host carrying it takes (`--on <label>`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Runs {
    #[default]
    Here,
    Queued(Option<String>),
}

impl Runs {
    /// The next choice after `self`: here, the queue, then the queue for each label
    /// a live `missionboard host` carries, then here again.
    pub fn next(&self, labels: &[String]) -> Runs {
        let mut choices = vec![Runs::Here, Runs::Queued(None)];
        choices.extend(labels.iter().map(|l| Runs::Queued(Some(l.clone()))));
        let at = choices.iter().position(|c| c == self).unwrap_or(0);
        choices[(at + 1) % choices.len()].clone()
    }

    /// How the picker names the choice.
    pub fn label(&self) -> String {
        match self {
            Runs::Here => "on this board".into(),
            Runs::Queued(None) => "queued for a `missionboard host`".into(),
            Runs::Queued(Some(l)) => format!("queued for a `missionboard host` labelled {l}"),
        }
    }
}

impl Picker {
    pub fn new() -> Picker {
        Picker {
            data: None,
            step: PickStep::Envelope,
            envelope: 0,
            agent: 0,
            intent: LineField::new(),
            template: 0,
            params: Vec::new(),
            param: 0,
            error: None,
            busy: false,
            runs: Runs::Here,
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
    /// Leaving the board: unsent drafts are lost, and the units of the missions this
    /// board hosts stop (their missions stay open).
    Quit {
        drafts: usize,
        hosted: Vec<HostedMission>,
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
    /// `mission revise`: the rested mission goes back to its agent with the feedback
    /// typed in the dialog's field.
    Revise {
        mission_id: String,
        intent: String,
        status: Status,
    },
    /// A new mission with the same agent, envelope and intent (one whose host died).
    Refire {
        mission_id: String,
        agent: String,
        envelope: String,
        intent: String,
    },
}

impl ConfirmKind {
    /// Does this dialog carry a reason to edit (a stop, or a quit that may stop)?
    pub fn has_reason(&self) -> bool {
        match self {
            ConfirmKind::Stop { .. } | ConfirmKind::Revise { .. } => true,
            ConfirmKind::Quit { hosted, .. } => !hosted.is_empty(),
            ConfirmKind::Merge { .. }
            | ConfirmKind::Discard { .. }
            | ConfirmKind::Refire { .. } => false,
        }
    }
}

/// An open mission whose unit this board process holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedMission {
    pub id: String,
    pub intent: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confirm {
    pub kind: ConfirmKind,
    /// The stop reason (of one mission, or of every hosted one when quitting).
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
    /// Every schedule's next run and last outcome (`:schedules`).
    Schedules,
    /// Editing `Model::filter`, which stays applied after the mode ends.
    Filter,
    CommandLine {
        line: LineField,
    },
}

/// A notice: the outcome of an effect, or news. The status line shows the newest
/// (an error before any news), so a notice never covers a pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toast {
    pub text: String,
    pub error: bool,
    /// News from a snapshot (a new ask, a mission at rest), which the outcome of the
    /// operator's own action outranks while both last.
    pub news: bool,
    /// When the board's clock drops it (`None`: only Esc does).
    pub until_ms: Option<i64>,
}

/// How long an info notice stays.
pub const TOAST_MS: i64 = 4000;
/// How long an error stays unless Esc dismisses it first.
pub const ERROR_TOAST_MS: i64 = 30_000;

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
    /// How a new question or gated call is announced beyond the board (`notify`).
    pub notify: super::notify::Notify,
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
    /// The list pane the detail pane follows (missions, asks or inbox).
    pub detail_from: Pane,
    pub detail_scroll: usize,
    /// The detail pane fills the screen.
    pub detail_zoom: bool,
    pub order: Order,
    pub hide_terminal: bool,
    /// Inbox items marked (Space) for a bulk acknowledge.
    pub marked: HashSet<String>,
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
    /// Announcements for the event loop to deliver (bell, OSC, desktop); it drains them.
    pub alerts: Vec<super::notify::Alert>,
    /// A pending `g` of the `g g` chord.
    pub chord_g: bool,
    pub now_ms: i64,
    pub tick: u64,
    /// Since when (ms) the shared store has been unreachable while this process
    /// waits to reconnect; `None` while it answers.
    pub store_outage_since: Option<i64>,
    pub host: HostInfo,
    /// For toasts: asks and mission states seen in earlier snapshots.
    pub seen_asks: HashSet<String>,
    pub seen_status: HashMap<String, Status>,
    pub primed: bool,
}

/// An id as the board shows it: its first eight characters.
pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

impl Model {
    /// The keymap context of the current mode: which keys act, and which hints the
    /// status bar shows.
    pub fn key_context(&self) -> Context {
        match &self.mode {
            Mode::Board => Context::Board,
            Mode::Answering { ask_id } => match self.ask(ask_id) {
                Some(a) if !a.question => Context::Verdict,
                _ => Context::Answer,
            },
            Mode::Picking(_) => Context::Picker,
            Mode::Confirm(_) => Context::Confirm,
            Mode::Help { .. } => Context::Help,
            Mode::Diff(_) => Context::Diff,
            Mode::Schedules => Context::Schedules,
            Mode::Filter => Context::Filter,
            Mode::CommandLine { .. } => Context::Command,
        }
    }

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
            detail_from: Pane::Missions,
            detail_scroll: 0,
            detail_zoom: false,
            order: Order::default(),
            hide_terminal: false,
            marked: HashSet::new(),
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
            alerts: Vec::new(),
            chord_g: false,
            now_ms: 0,
            tick: 0,
            store_outage_since: None,
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
            order: self.order,
            hide_terminal: self.hide_terminal,
            detail_for: match self.detail_from {
                Pane::Asks | Pane::Inbox => self.detail_target(),
                _ => None,
            },
            schedules: if self.mode == Mode::Schedules {
                super::layout::schedule_rows(self.size)
            } else {
                0
            },
        }
    }

    /// The mission the detail pane shows: that of the selected row, ask or inbox
    /// item, whichever list it follows.
    pub fn detail_target(&self) -> Option<String> {
        match self.detail_from {
            Pane::Asks => self.selected_ask().and_then(|a| a.mission_id.clone()),
            Pane::Inbox => self.selected_inbox().map(|i| i.mission_id.clone()),
            _ => self.selected_mission().map(|r| r.id.clone()),
        }
    }

    /// The inbox item the detail pane was opened on, if it follows the inbox.
    pub fn detail_from_inbox(&self) -> Option<&InboxRow> {
        (self.detail_from == Pane::Inbox)
            .then(|| self.selected_inbox())
            .flatten()
    }

    pub fn selected_inbox(&self) -> Option<&InboxRow> {
        self.snap.inbox.get(self.inbox_sel)
    }

    /// How many missions the table scrolls over (filtered or not).
    pub fn mission_count(&self) -> usize {
        self.snap.matched.unwrap_or(self.snap.listed)
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
