//! The keymap is data: every binding names an action and says what it does, and
//! the `?` help and the status-bar hints are generated from this one table, so they
//! cannot drift from what the keys really do.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Which table a key is looked up in (one per mode, plus the global keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    Global,
    Board,
    Answer,
    Verdict,
    Picker,
    Confirm,
    Filter,
    Command,
    Help,
    /// The selected worktree mission's diff.
    Diff,
    /// The schedules panel (`:schedules`).
    Schedules,
    /// Editing keys of every text field and the answer box; shown in `?`, never looked
    /// up (the text area itself handles them).
    Text,
    /// The keys only the answer box's multi-line draft has; documentation too.
    AnswerBox,
}

impl Context {
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Board => "Board",
            Context::Answer => "Answering a question",
            Context::Verdict => "Deciding a permission",
            Context::Picker => ":mission picker",
            Context::Confirm => "Confirm dialog",
            Context::Filter => "Filter (/)",
            Context::Command => "Command line (:)",
            Context::Help => "Help",
            Context::Diff => "Mission diff (v)",
            Context::Schedules => "Schedules (:schedules)",
            Context::Text => "Editing text (every field, the answer box)",
            Context::AnswerBox => "The answer box only (a question's draft)",
        }
    }
}

/// Named actions. `update` matches on these, never on raw keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    ForceQuit,
    Redraw,
    Suspend,
    Editor,
    ToggleOracle,
    Quit,
    Help,
    Down,
    Up,
    Top,
    Bottom,
    HalfDown,
    HalfUp,
    PageDown,
    PageUp,
    NextPane,
    PrevPane,
    FocusMissions,
    FocusAsks,
    FocusInbox,
    FocusTrace,
    FocusDetail,
    /// Cycle the missions' sort: state, age, heartbeat.
    SortNext,
    /// Hide or show the terminal missions.
    ToggleTerminal,
    /// The detail pane fills the screen, or goes back.
    Zoom,
    /// A new mission like the selected one (same agent, envelope, intent, workspace).
    Refire,
    /// Send the selected rested mission back to its agent with feedback.
    Revise,
    /// Mark or unmark the selected inbox item.
    Mark,
    /// Acknowledge the marked inbox items, else every one shown.
    AckAll,
    Open,
    Ack,
    Stop,
    /// Merge the selected worktree mission into the operator's branch.
    Merge,
    /// Show the selected worktree mission's changes.
    Diff,
    /// Discard the selected worktree mission's worktree and branch.
    Discard,
    Fire,
    CommandLine,
    Filter,
    ClearFilter,
    Submit,
    Close,
    Approve,
    Deny,
    Confirm,
    Cancel,
    Toggle,
    EditReason,
    /// Quitting with missions hosted here: stop them (with the reason), then quit.
    StopAndQuit,
    Back,
    /// Where a picked mission runs: this board, the queue, or the queue for a label.
    RunsWhere,
    /// The picker's templates: choose one, then fill its parameters.
    Templates,
    Run,
    Keep,
    /// A text area's own editing key (documentation only).
    EditText,
}

/// One key as shown and matched.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

const fn with(code: KeyCode, mods: KeyModifiers) -> Key {
    Key { code, mods }
}
const fn k(c: char) -> Key {
    with(KeyCode::Char(c), KeyModifiers::NONE)
}
const fn ctrl(c: char) -> Key {
    with(KeyCode::Char(c), KeyModifiers::CONTROL)
}
const fn code(code: KeyCode) -> Key {
    with(code, KeyModifiers::NONE)
}
const fn alt(code: KeyCode) -> Key {
    with(code, KeyModifiers::ALT)
}

impl Key {
    fn matches(&self, ev: &KeyEvent) -> bool {
        // Shifted letters arrive as the upper-case char, sometimes with SHIFT set.
        let mods = ev.modifiers - KeyModifiers::SHIFT;
        let want = self.mods - KeyModifiers::SHIFT;
        self.code == ev.code && mods == want
    }

    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "S-Tab".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            other => format!("{other:?}"),
        };
        if self.mods.contains(KeyModifiers::CONTROL) {
            format!("C-{base}")
        } else if self.mods.contains(KeyModifiers::ALT) {
            format!("M-{base}")
        } else {
            base
        }
    }
}

/// A binding: keys, the action, its help text, and whether it earns a place in the
/// status-bar hints (the few keys a newcomer needs in that mode).
#[derive(Debug)]
pub struct Binding {
    pub context: Context,
    pub keys: &'static [Key],
    /// A key sequence shown instead of `keys` (the `g g` chord is matched in `update`).
    pub chord: Option<&'static str>,
    pub action: Action,
    pub help: &'static str,
    pub hint: Option<&'static str>,
}

const fn b(
    context: Context,
    keys: &'static [Key],
    action: Action,
    help: &'static str,
    hint: Option<&'static str>,
) -> Binding {
    Binding {
        context,
        keys,
        chord: None,
        action,
        help,
        hint,
    }
}

use Context as C;

pub const BINDINGS: &[Binding] = &[
    b(
        C::Global,
        &[ctrl('c')],
        Action::ForceQuit,
        "quit now (drafts are lost)",
        None,
    ),
    b(
        C::Global,
        &[ctrl('l')],
        Action::Redraw,
        "repaint the whole screen",
        None,
    ),
    b(
        C::Global,
        &[ctrl('z')],
        Action::Suspend,
        "suspend to the shell; `fg` resumes (missions hosted here wait meanwhile)",
        None,
    ),
    b(C::Board, &[k('?')], Action::Help, "this help", Some("help")),
    b(
        C::Board,
        &[k('j'), code(KeyCode::Down)],
        Action::Down,
        "next row",
        None,
    ),
    b(
        C::Board,
        &[k('k'), code(KeyCode::Up)],
        Action::Up,
        "previous row",
        None,
    ),
    Binding {
        context: C::Board,
        keys: &[code(KeyCode::Home)],
        chord: Some("g g"),
        action: Action::Top,
        help: "first row",
        hint: None,
    },
    b(
        C::Board,
        &[k('G'), code(KeyCode::End)],
        Action::Bottom,
        "last row",
        None,
    ),
    b(
        C::Board,
        &[ctrl('d')],
        Action::HalfDown,
        "half a page down",
        None,
    ),
    b(
        C::Board,
        &[ctrl('u')],
        Action::HalfUp,
        "half a page up",
        None,
    ),
    b(
        C::Board,
        &[code(KeyCode::PageDown)],
        Action::PageDown,
        "a page down",
        None,
    ),
    b(
        C::Board,
        &[code(KeyCode::PageUp)],
        Action::PageUp,
        "a page up",
        None,
    ),
    b(
        C::Board,
        &[code(KeyCode::Tab)],
        Action::NextPane,
        "focus the next pane",
        None,
    ),
    b(
        C::Board,
        &[code(KeyCode::BackTab)],
        Action::PrevPane,
        "focus the previous pane",
        None,
    ),
    b(
        C::Board,
        &[k('1')],
        Action::FocusMissions,
        "focus missions",
        None,
    ),
    b(
        C::Board,
        &[k('2')],
        Action::FocusAsks,
        "focus pending asks",
        None,
    ),
    b(
        C::Board,
        &[k('3')],
        Action::FocusInbox,
        "focus the inbox",
        None,
    ),
    b(
        C::Board,
        &[k('4')],
        Action::FocusTrace,
        "focus the oracle trace",
        None,
    ),
    b(
        C::Board,
        &[k('5')],
        Action::FocusDetail,
        "focus the detail pane (j/k scroll it)",
        None,
    ),
    b(
        C::Board,
        &[k('z')],
        Action::Zoom,
        "zoom the detail pane to the full screen, or back (Esc too)",
        None,
    ),
    b(
        C::Board,
        &[k('s')],
        Action::SortNext,
        "missions: sort by state / age / heartbeat (needs-me on top)",
        None,
    ),
    b(
        C::Board,
        &[k('t')],
        Action::ToggleTerminal,
        "missions: hide / show the terminal missions",
        None,
    ),
    b(
        C::Board,
        &[code(KeyCode::Enter)],
        Action::Open,
        "missions, asks: answer or decide the pending ask of the selected row · inbox: open it in the detail pane (a acknowledges it)",
        Some("answer"),
    ),
    b(
        C::Board,
        &[k('a')],
        Action::Ack,
        "asks: approve the gated call · inbox: acknowledge the item",
        None,
    ),
    b(
        C::Board,
        &[k('d')],
        Action::Deny,
        "asks: deny the selected gated call",
        None,
    ),
    b(
        C::Board,
        &[k(' ')],
        Action::Mark,
        "inbox: mark / unmark the selected item",
        None,
    ),
    b(
        C::Board,
        &[k('A')],
        Action::AckAll,
        "inbox: acknowledge the marked items, else all on screen",
        None,
    ),
    b(
        C::Board,
        &[k('R')],
        Action::Refire,
        "re-fire the mission: same agent, envelope, intent (confirm)",
        None,
    ),
    b(
        C::Board,
        &[k('F')],
        Action::Revise,
        "revise a rested mission: back to its agent with your feedback",
        None,
    ),
    b(
        C::Board,
        &[k('x')],
        Action::Stop,
        "stop the selected mission (confirm, reason editable)",
        Some("stop"),
    ),
    b(
        C::Board,
        &[k('m')],
        Action::Merge,
        "merge the selected worktree mission into your current branch (confirm)",
        None,
    ),
    b(
        C::Board,
        &[k('v')],
        Action::Diff,
        "view the selected worktree mission's changes against its base",
        None,
    ),
    b(
        C::Diff,
        &[code(KeyCode::Esc), k('q')],
        Action::Close,
        "close the diff",
        Some("close"),
    ),
    b(
        C::Diff,
        &[k('j'), code(KeyCode::Down)],
        Action::Down,
        "scroll down",
        Some("scroll"),
    ),
    b(
        C::Diff,
        &[k('k'), code(KeyCode::Up)],
        Action::Up,
        "scroll up",
        None,
    ),
    b(
        C::Diff,
        &[code(KeyCode::PageDown), k(' ')],
        Action::PageDown,
        "scroll a page down",
        None,
    ),
    b(
        C::Diff,
        &[code(KeyCode::PageUp)],
        Action::PageUp,
        "scroll a page up",
        None,
    ),
    b(C::Diff, &[k('g')], Action::Top, "to the top", None),
    b(C::Diff, &[k('G')], Action::Bottom, "to the end", None),
    b(
        C::Schedules,
        &[code(KeyCode::Esc), k('q')],
        Action::Close,
        "close the schedules",
        Some("close"),
    ),
    b(
        C::Board,
        &[k('D')],
        Action::Discard,
        "discard the selected worktree mission's worktree and branch (confirm)",
        None,
    ),
    b(
        C::Board,
        &[k('f')],
        Action::Fire,
        "fire a mission: pick envelope, agent, intent",
        Some("fire"),
    ),
    b(
        C::Board,
        &[k(':')],
        Action::CommandLine,
        "command line: mission [--policy <envelope>] [agent] <intent>",
        Some("cmd"),
    ),
    b(
        C::Board,
        &[k('/')],
        Action::Filter,
        "filter the missions (id, state, agent, envelope, intent)",
        Some("filter"),
    ),
    b(
        C::Board,
        &[k('o')],
        Action::ToggleOracle,
        "mount / unmount the oracle for the missions this board hosts (beta)",
        None,
    ),
    b(
        C::Board,
        &[k('q')],
        Action::Quit,
        "quit (asks first if a draft is unsent or missions are hosted here)",
        Some("quit"),
    ),
    b(
        C::Board,
        &[code(KeyCode::Esc)],
        Action::ClearFilter,
        "dismiss the notices, else clear the filter",
        None,
    ),
    b(
        C::Answer,
        &[ctrl('s'), alt(KeyCode::Enter)],
        Action::Submit,
        "send the answer",
        Some("send"),
    ),
    b(
        C::Answer,
        &[ctrl('o')],
        Action::Editor,
        "edit in $VISUAL or $EDITOR",
        None,
    ),
    b(
        C::Answer,
        &[code(KeyCode::Esc)],
        Action::Close,
        "close (the draft is kept)",
        Some("close, keep draft"),
    ),
    b(
        C::Verdict,
        &[k('a')],
        Action::Approve,
        "approve the gated call",
        Some("approve"),
    ),
    b(
        C::Verdict,
        &[k('d')],
        Action::Deny,
        "deny the gated call",
        Some("deny"),
    ),
    b(
        C::Verdict,
        &[code(KeyCode::Esc)],
        Action::Close,
        "close without deciding",
        Some("close"),
    ),
    b(
        C::Picker,
        &[k('j'), code(KeyCode::Down)],
        Action::Down,
        "next envelope / agent",
        None,
    ),
    b(
        C::Picker,
        &[k('k'), code(KeyCode::Up)],
        Action::Up,
        "previous envelope / agent",
        None,
    ),
    b(
        C::Picker,
        &[code(KeyCode::Enter)],
        Action::Confirm,
        "choose / fire",
        Some("choose"),
    ),
    b(
        C::Picker,
        &[code(KeyCode::Tab)],
        Action::RunsWhere,
        "where it runs: on this board, queued for any `missionboard host`, or queued for a host with a label (as `mission fire --queue [--on <label>]`)",
        Some("queue"),
    ),
    b(
        C::Picker,
        &[code(KeyCode::BackTab)],
        Action::Back,
        "back one step",
        Some("back"),
    ),
    b(
        C::Picker,
        &[code(KeyCode::Esc)],
        Action::Cancel,
        "close the picker",
        Some("close"),
    ),
    b(
        C::Picker,
        &[k('t')],
        Action::Templates,
        "fire a template: choose one, then fill in its parameters (as `mission fire --template`)",
        Some("template"),
    ),
    b(C::Confirm, &[k('y')], Action::Confirm, "yes", Some("yes")),
    b(
        C::Confirm,
        &[k('n'), code(KeyCode::Esc)],
        Action::Cancel,
        "no",
        Some("no"),
    ),
    b(
        C::Confirm,
        &[code(KeyCode::Left), code(KeyCode::Right)],
        Action::Toggle,
        "move between No and Yes",
        None,
    ),
    b(
        C::Confirm,
        &[code(KeyCode::Enter)],
        Action::Run,
        "press the focused button (or finish editing the reason)",
        None,
    ),
    b(
        C::Confirm,
        &[code(KeyCode::Tab), k('e')],
        Action::EditReason,
        "edit the reason",
        Some("edit reason"),
    ),
    b(
        C::Confirm,
        &[k('s')],
        Action::StopAndQuit,
        "quitting with missions hosted here: stop them with the reason, then quit",
        None,
    ),
    b(
        C::Filter,
        &[code(KeyCode::Enter)],
        Action::Keep,
        "keep the filter",
        Some("keep"),
    ),
    b(
        C::Filter,
        &[code(KeyCode::Esc)],
        Action::ClearFilter,
        "clear the filter",
        Some("clear"),
    ),
    b(
        C::Command,
        &[code(KeyCode::Enter)],
        Action::Run,
        "run (`mission` alone opens the picker)",
        Some("run"),
    ),
    b(
        C::Command,
        &[code(KeyCode::Esc)],
        Action::Cancel,
        "cancel",
        Some("cancel"),
    ),
    b(
        C::Help,
        &[code(KeyCode::Esc), k('?')],
        Action::Close,
        "close help (type to filter it)",
        Some("close"),
    ),
    b(
        C::Help,
        &[code(KeyCode::Down)],
        Action::Down,
        "scroll down",
        Some("scroll"),
    ),
    b(C::Help, &[code(KeyCode::Up)], Action::Up, "scroll up", None),
    b(
        C::Help,
        &[code(KeyCode::PageDown)],
        Action::PageDown,
        "scroll a page down",
        None,
    ),
    b(
        C::Help,
        &[code(KeyCode::PageUp)],
        Action::PageUp,
        "scroll a page up",
        None,
    ),
    b(
        C::Text,
        &[
            code(KeyCode::Left),
            code(KeyCode::Right),
            code(KeyCode::Home),
            code(KeyCode::End),
            ctrl('a'),
            ctrl('e'),
        ],
        Action::EditText,
        "move the cursor; to the start, to the end",
        None,
    ),
    b(
        C::Text,
        &[
            alt(KeyCode::Char('b')),
            alt(KeyCode::Char('f')),
            with(KeyCode::Left, KeyModifiers::CONTROL),
            with(KeyCode::Right, KeyModifiers::CONTROL),
        ],
        Action::EditText,
        "a word back, a word forward",
        None,
    ),
    b(
        C::Text,
        &[ctrl('w'), alt(KeyCode::Backspace), ctrl('k'), ctrl('j')],
        Action::EditText,
        "delete the word before; to the end; to the start",
        None,
    ),
    b(
        C::Text,
        &[ctrl('y'), ctrl('u'), ctrl('r')],
        Action::EditText,
        "yank what was deleted, undo, redo",
        None,
    ),
    b(
        C::AnswerBox,
        &[code(KeyCode::Enter)],
        Action::EditText,
        "a new line (C-s or M-Enter sends)",
        None,
    ),
    b(
        C::AnswerBox,
        &[
            code(KeyCode::Backspace),
            ctrl('h'),
            code(KeyCode::Delete),
            ctrl('d'),
        ],
        Action::EditText,
        "delete the char before the cursor; the char under it",
        None,
    ),
    b(
        C::AnswerBox,
        &[alt(KeyCode::Char('d')), alt(KeyCode::Delete)],
        Action::EditText,
        "delete the word after the cursor",
        None,
    ),
    b(
        C::AnswerBox,
        &[code(KeyCode::Up), code(KeyCode::Down), ctrl('p'), ctrl('n')],
        Action::EditText,
        "a line up, a line down",
        None,
    ),
    b(
        C::AnswerBox,
        &[
            alt(KeyCode::Char('p')),
            alt(KeyCode::Char('n')),
            with(KeyCode::Up, KeyModifiers::CONTROL),
            with(KeyCode::Down, KeyModifiers::CONTROL),
        ],
        Action::EditText,
        "a paragraph back, a paragraph forward",
        None,
    ),
    b(
        C::AnswerBox,
        &[alt(KeyCode::Char('<')), alt(KeyCode::Char('>'))],
        Action::EditText,
        "to the first line, to the last line",
        None,
    ),
    b(
        C::AnswerBox,
        &[
            code(KeyCode::PageUp),
            code(KeyCode::PageDown),
            alt(KeyCode::Char('v')),
            ctrl('v'),
        ],
        Action::EditText,
        "scroll a page up, a page down",
        None,
    ),
    b(
        C::AnswerBox,
        &[code(KeyCode::Tab)],
        Action::EditText,
        "indent (spaces)",
        None,
    ),
];

/// The action `ev` triggers in `context` (mode keys first, then the global ones).
pub fn lookup(context: Context, ev: &KeyEvent) -> Option<Action> {
    let find = |ctx: Context| {
        BINDINGS
            .iter()
            .filter(|b| b.context == ctx)
            .find(|b| b.keys.iter().any(|key| key.matches(ev)))
            .map(|b| b.action)
    };
    find(context).or_else(|| find(Context::Global))
}

/// `keys` of a binding as shown: `j/↓`, or the chord plus the keys.
pub fn keys_label(binding: &Binding) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(chord) = binding.chord {
        parts.push(chord.to_string());
    }
    parts.extend(binding.keys.iter().map(Key::label));
    parts.join("/")
}

/// The status-bar hints for a context: `key label` pairs.
pub fn hints(context: Context) -> Vec<(String, &'static str)> {
    BINDINGS
        .iter()
        .filter(|b| b.context == context)
        .filter_map(|b| {
            let first = b
                .chord
                .map(str::to_string)
                .or_else(|| b.keys.first().map(Key::label))?;
            b.hint.map(|h| (first, h))
        })
        .collect()
}

/// The help overlay's rows, grouped by context: (section title, [(keys, help)]),
/// filtered by `query` (case-insensitive, over keys and text).
pub fn help_sections(query: &str) -> Vec<(&'static str, Vec<(String, &'static str)>)> {
    let q = query.to_lowercase();
    let order = [
        C::Board,
        C::Answer,
        C::Verdict,
        C::Picker,
        C::Confirm,
        C::Filter,
        C::Command,
        C::Help,
        C::Diff,
        C::Schedules,
        C::Text,
        C::AnswerBox,
        C::Global,
    ];
    order
        .into_iter()
        .filter_map(|ctx| {
            let rows: Vec<(String, &'static str)> = BINDINGS
                .iter()
                .filter(|b| b.context == ctx)
                .map(|b| (keys_label(b), b.help))
                .filter(|(keys, help)| {
                    q.is_empty()
                        || help.to_lowercase().contains(&q)
                        || keys.to_lowercase().contains(&q)
                })
                .collect();
            (!rows.is_empty()).then_some((ctx.title(), rows))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn lookups_follow_the_table() {
        assert_eq!(
            lookup(C::Board, &ev(KeyCode::Char('j'), KeyModifiers::NONE)),
            Some(Action::Down)
        );
        assert_eq!(
            lookup(C::Board, &ev(KeyCode::Char('G'), KeyModifiers::SHIFT)),
            Some(Action::Bottom)
        );
        assert_eq!(
            lookup(C::Answer, &ev(KeyCode::Char('s'), KeyModifiers::CONTROL)),
            Some(Action::Submit)
        );
        assert_eq!(
            lookup(C::Answer, &ev(KeyCode::Enter, KeyModifiers::ALT)),
            Some(Action::Submit)
        );
        // Plain Enter in the answer pane is a newline, not a submit.
        assert_eq!(
            lookup(C::Answer, &ev(KeyCode::Enter, KeyModifiers::NONE)),
            None
        );
        assert_eq!(
            lookup(C::Answer, &ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::ForceQuit)
        );
        assert_eq!(
            lookup(C::Board, &ev(KeyCode::Char(':'), KeyModifiers::NONE)),
            Some(Action::CommandLine)
        );
        assert_eq!(
            lookup(C::Board, &ev(KeyCode::Char('/'), KeyModifiers::NONE)),
            Some(Action::Filter)
        );
    }

    #[test]
    fn no_key_is_bound_twice_in_one_context() {
        for (i, a) in BINDINGS.iter().enumerate() {
            for b in &BINDINGS[i + 1..] {
                if a.context != b.context {
                    continue;
                }
                for ka in a.keys {
                    for kb in b.keys {
                        assert!(
                            !(ka.code == kb.code && ka.mods == kb.mods),
                            "{:?} bound twice in {:?}",
                            ka.label(),
                            a.context
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn help_lists_every_binding_and_filters() {
        let all: usize = help_sections("").iter().map(|(_, r)| r.len()).sum();
        assert_eq!(all, BINDINGS.len());
        let undo = help_sections("undo");
        assert!(
            undo.iter()
                .any(|(title, rows)| title.starts_with("Editing text")
                    && rows.iter().any(|(k, _)| k == "C-y/C-u/C-r"))
        );
        let stop = help_sections("stop");
        assert!(
            stop.iter()
                .any(|(_, rows)| rows.iter().any(|(k, _)| k == "x"))
        );
    }
}
