//! Frames from a hand-built model at a fixed "now": deterministic snapshots of
//! every pane and overlay at the 80x24 floor and at 120x40.

use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

use crate::board::model::*;
use crate::board::theme::{Symbols, Theme};
use crate::mission::Status;

const NOW: i64 = 1_796_220_003_000;
const S: i64 = 1000;

fn mission(id: &str, status: Status, intent: &str, age_s: i64, asks: i64) -> MissionRow {
    MissionRow {
        id: id.into(),
        intent: intent.into(),
        agent: "demo".into(),
        envelope: "default".into(),
        status,
        status_reason: match status {
            Status::Stuck => Some("the stub is scripted to get stuck".into()),
            Status::Derailed => Some("stub derail: the scripted turn failed".into()),
            _ => None,
        },
        created_at: NOW - age_s * S,
        last_heartbeat: (status == Status::Open).then_some(NOW - 2 * S),
        pending_asks: asks,
        workspace: "cwd".into(),
        host: "box-a".into(),
        queue_position: None,
        needs: (asks > 0).then_some(Needs::Ask),
        check: None,
        cost: None,
    }
}

pub(crate) fn snapshot() -> Snapshot {
    // As the store thread orders them: what needs you (the pending asks) first, then
    // by state (open, stuck, derailed, abandoned, landed), newest first.
    let mut rows = vec![
        mission(
            "a1b2c3d4-0000",
            Status::Open,
            "ask-then-land: rename the config env var",
            40,
            1,
        ),
        mission(
            "f6a7b8c9-0000",
            Status::Open,
            "perm-1: tidy the imports under approval",
            60,
            1,
        ),
        mission(
            "c3d4e5f6-0000",
            Status::Stuck,
            "stuck: deploy to staging",
            300,
            0,
        ),
        mission(
            "d4e5f6a7-0000",
            Status::Derailed,
            "derail: migrate the schema",
            900,
            0,
        ),
        mission(
            "e5f6a7b8-0000",
            Status::Abandoned,
            "mute: audit the logging setup",
            4000,
            0,
        ),
        mission(
            "b2c3d4e5-0000",
            Status::Landed,
            "land: write the release notes",
            120,
            0,
        ),
    ];
    rows[5].workspace = "worktree".into();
    let detail = Detail {
        mission: rows[0].clone(),
        last_error: None,
        worktree: None,
        spend: Some("14 tool calls · 5,200 tokens · 20s so far".into()),
        context: None,
        fired_by: None,
        host_role: None,
        check: Vec::new(),
        plan: vec![
            PlanRow {
                content: "survey the task".into(),
                status: "completed".into(),
            },
            PlanRow {
                content: "do the work".into(),
                status: "in_progress".into(),
            },
            PlanRow {
                content: "report the result".into(),
                status: "pending".into(),
            },
        ],
        plan_revision: 2,
        reports: vec![
            ReportRow {
                kind: "result".into(),
                summary: "wrote docs/config.md".into(),
                detail: "Renamed APP_CONF to APP_CONFIG in the loader, the docs and the deploy script; the old name is still read, with a warning, for one release.".into(),
                refs: vec!["docs/config.md".into(), "src/config.rs".into()],
                warning: Some("claimed artifacts not found: docs/config.md".into()),
                created_at: NOW - 5 * S,
            },
            ReportRow {
                kind: "progress".into(),
                summary: "surveyed the task".into(),
                detail: String::new(),
                refs: vec![],
                warning: None,
                created_at: NOW - 30 * S,
            },
        ],
        handover: vec![
            "outcome: env var renamed".into(),
            "next: update the deploy docs".into(),
        ],
        cost: None,
    };
    Snapshot {
        generation: 1,
        total_missions: 6,
        open_missions: 2,
        listed: 6,
        needs_me: 2,
        matched: None,
        offset: 0,
        rows,
        detail: Some(detail),
        asks: vec![
            AskRow {
                id: "ask-1111-question".into(),
                mission_id: Some("a1b2c3d4-0000".into()),
                agent: "demo".into(),
                question: true,
                summary: "Should I proceed with the change?".into(),
                detail: Some("The env var is read in three places.".into()),
                tool: "mission.mission_ask_attention".into(),
                envelope: "default".into(),
                matched_rule: None,
                on_timeout: "wait".into(),
                intent: "ask-then-land: rename the config env var".into(),
                created_at: NOW - 35 * S,
                expires_at: 0,
            },
            AskRow {
                id: "ask-2222-permission".into(),
                mission_id: Some("f6a7b8c9-0000".into()),
                agent: "demo".into(),
                question: false,
                summary: "edit the workspace".into(),
                detail: Some("--- a/src/lib.rs\n+++ b/src/lib.rs".into()),
                tool: "fs.edit".into(),
                envelope: "default".into(),
                matched_rule: Some(2),
                on_timeout: "deny".into(),
                intent: "perm-1: tidy the imports under approval".into(),
                created_at: NOW - 10 * S,
                expires_at: NOW + 3600 * S,
            },
        ],
        pending_total: 2,
        inbox: vec![InboxRow {
            id: "inbox-1".into(),
            mission_id: "b2c3d4e5-0000".into(),
            agent: "demo".into(),
            reason: "operator-fired (no session)".into(),
            kind: "result".into(),
            summary: "the stub finished its scripted work".into(),
            created_at: NOW - 100 * S,
        }],
        inbox_total: 1,
        oracle_trace: vec![],
        oracle_model: None,
        beta: false,
        fleet_used: 2,
        fleet_cap: 8,
        fleet_memory: 0,
        fleet_memory_cap: None,
        hosts: Vec::new(),
        next_schedule: None,
        fleet_today: None,
        schedules: Vec::new(),
        schedules_total: 0,
        store_error: None,
        query: Query::default(),
    }
}

pub(crate) fn model(w: u16, h: u16, ascii: bool) -> Model {
    let symbols = if ascii {
        Symbols::ascii()
    } else {
        Symbols::unicode()
    };
    let theme = if ascii { Theme::mono() } else { Theme::dark() };
    let mut m = Model::new(theme, symbols, Rect::new(0, 0, w, h));
    m.snap = Arc::new(snapshot());
    m.now_ms = NOW;
    m
}

pub(crate) fn frame(m: &Model) -> String {
    let mut t = Terminal::new(TestBackend::new(m.size.width, m.size.height)).unwrap();
    t.draw(|f| super::draw(f, m, NOW)).unwrap();
    format!("{}", t.backend())
}

fn picker_data() -> PickerData {
    use crate::envelope::format::{ComputeBounds, OnExhausted};
    let silent = crate::agents::AgentCaps::default();
    PickerData {
        envelopes: vec![
            EnvelopeEntry {
                file_name: "hitl-policy-default.json".into(),
                short_name: "default".into(),
                summary: "unruled calls stop for approval · ≤300 tool calls (enforced) · an agent may answer 3 questions".into(),
                compute: Some(ComputeBounds {
                    max_tool_calls: 300,
                    max_tokens: 2_000_000,
                    model_allowlist: vec!["sonnet".into(), "opus".into()],
                    on_exhausted: OnExhausted::FinishStuck,
                    ..Default::default()
                }),
                sandbox: vec![("filesystem.write", "enforced (kernel)")],
                check: None,
            },
            EnvelopeEntry {
                file_name: "hitl-policy-strict.json".into(),
                short_name: "strict".into(),
                summary: "unruled calls are denied · questions always wait for a human".into(),
                compute: Some(ComputeBounds {
                    max_turns: 1,
                    on_exhausted: OnExhausted::PauseAsk,
                    ..Default::default()
                }),
                sandbox: vec![
                    ("filesystem.write", "enforced (kernel)"),
                    ("network.connect", "declared, not enforced"),
                ],
                check: None,
            },
            EnvelopeEntry {
                file_name: "hitl-policy-broken.json".into(),
                short_name: "broken".into(),
                summary: String::new(),
                compute: None,
                sandbox: vec![],
                check: None,
            },
        ],
        agents: vec![
            AgentEntry { name: "demo".into(), description: "the scripted stub agent".into(), caps: Some(silent) },
            AgentEntry { name: "claude".into(), description: "Claude over ACP".into(), caps: None },
        ],
        default_agent: Some("demo".into()),
        default_envelope: Some("default".into()),
        templates: vec![],
    }
}

macro_rules! both_sizes {
    ($name:ident, $setup:expr) => {
        #[test]
        fn $name() {
            for (w, h) in [(80u16, 24u16), (120, 40)] {
                let mut m = model(w, h, false);
                #[allow(clippy::redundant_closure_call)]
                ($setup)(&mut m);
                insta::assert_snapshot!(format!("{}_{w}x{h}", stringify!($name)), frame(&m));
            }
        }
    };
}

both_sizes!(board, |_m: &mut Model| {});
both_sizes!(board_asks_focused, |m: &mut Model| m.focus = Pane::Asks);
both_sizes!(answer_pane, |m: &mut Model| {
    let mut d = Draft::new();
    d.area.insert_str("yes, rename it everywhere");
    d.error = Some("ask ask-1111 was already answered — a verdict is recorded exactly once".into());
    m.drafts.insert("ask-1111-question".into(), d);
    m.mode = Mode::Answering {
        ask_id: "ask-1111-question".into(),
    };
});
both_sizes!(verdict_pane, |m: &mut Model| {
    m.drafts.insert("ask-2222-permission".into(), Draft::new());
    m.mode = Mode::Answering {
        ask_id: "ask-2222-permission".into(),
    };
});
both_sizes!(picker_envelopes, |m: &mut Model| {
    let mut p = Picker::new();
    p.data = Some(picker_data());
    m.mode = Mode::Picking(p);
});
both_sizes!(picker_agent, |m: &mut Model| {
    let mut p = Picker::new();
    p.data = Some(picker_data());
    p.step = PickStep::Agent;
    m.mode = Mode::Picking(p);
});
// The chosen agent has not started here: its modelAllowlist label hedges, and says why.
both_sizes!(picker_agent_not_started, |m: &mut Model| {
    let mut p = Picker::new();
    p.data = Some(picker_data());
    p.step = PickStep::Agent;
    p.agent = 1;
    m.mode = Mode::Picking(p);
});
both_sizes!(picker_intent_refused, |m: &mut Model| {
    let mut p = Picker::new();
    p.data = Some(picker_data());
    p.step = PickStep::Intent;
    p.intent = "land: write the notes".into();
    p.error = Some("conflict: fleet admission refused: 8 units are already open".into());
    m.mode = Mode::Picking(p);
});
both_sizes!(confirm_stop, |m: &mut Model| {
    m.mode = Mode::Confirm(Confirm {
        kind: ConfirmKind::Stop {
            mission_id: "a1b2c3d4-0000".into(),
            intent: "ask-then-land: rename".into(),
        },
        reason: "stopped by operator".into(),
        editing: false,
        yes_focused: false,
        error: None,
    });
});
both_sizes!(confirm_quit_hosted, |m: &mut Model| {
    let hosted = (1..=7)
        .map(|i| HostedMission {
            id: format!("{i}a2b3c4d-0000"),
            intent: format!("mission number {i}: a long intent that has to be cut at the dialog's edge somewhere"),
        })
        .collect();
    m.mode = Mode::Confirm(Confirm {
        kind: ConfirmKind::Quit { drafts: 1, hosted },
        reason: "stopped by operator".into(),
        editing: false,
        yes_focused: false,
        error: None,
    });
});
both_sizes!(help_overlay, |m: &mut Model| m.mode = Mode::Help {
    filter: Default::default(),
    scroll: 0
});
both_sizes!(command_line, |m: &mut Model| m.mode = Mode::CommandLine {
    line: "mission --policy strict demo land: go".into()
});
both_sizes!(filter_line, |m: &mut Model| {
    m.filter = "land".into();
    let mut s = snapshot();
    s.matched = Some(1);
    s.rows.retain(|r| r.intent.contains("land"));
    m.snap = Arc::new(s);
    m.mode = Mode::Filter;
    m.toasts.push(Toast {
        text: "new question from demo: Should I proceed?".into(),
        error: false,
        news: true,
        until_ms: None,
    });
    m.toasts.push(Toast {
        text:
            "unknown mission envelope \"nope\" (--policy): no such policy file on the search path"
                .into(),
        error: true,
        news: false,
        until_ms: None,
    });
});
// A notice takes the status line, never a pane: the newest error first, with how
// many more wait; news in a modal too.
both_sizes!(status_notice, |m: &mut Model| {
    m.toasts.push(Toast {
        text: "new question from demo: Should I proceed?".into(),
        error: false,
        news: true,
        until_ms: None,
    });
    m.toasts.push(Toast {
        text: "Mission a1b2c3d4 fired at \"demo\" under \"default\"\nmaxToolCalls 300 · enforced"
            .into(),
        error: false,
        news: false,
        until_ms: None,
    });
});
both_sizes!(status_error_notice, |m: &mut Model| {
    m.toasts.push(Toast {
        text: "new question from demo: Should I proceed?".into(),
        error: false,
        news: true,
        until_ms: None,
    });
    m.toasts.push(Toast {
        text: "unknown command \"wat\": try `:mission [--policy <envelope>] [agent] <intent>`, `:mission` (the picker), `:help` or `:q`".into(),
        error: true,
        news: false,
        until_ms: None,
    });
    m.mode = Mode::Help {
        filter: Default::default(),
        scroll: 0,
    };
});
both_sizes!(empty_board, |m: &mut Model| m.snap =
    Arc::new(Snapshot::default()));
both_sizes!(detail_focused_scrolled, |m: &mut Model| {
    m.focus = Pane::Detail;
    m.detail_scroll = 3;
});
both_sizes!(detail_zoomed, |m: &mut Model| {
    m.focus = Pane::Detail;
    m.detail_zoom = true;
});
both_sizes!(inbox_item_opened, |m: &mut Model| {
    let mut s = snapshot();
    let d = s.detail.as_mut().unwrap();
    d.mission = s.rows[5].clone();
    d.plan.clear();
    d.spend = Some("3 tool calls · 900 tokens · 1m in all".into());
    m.snap = Arc::new(s);
    m.focus = Pane::Detail;
    m.detail_from = Pane::Inbox;
    m.detail_zoom = true;
});
both_sizes!(sorted_by_heartbeat_terminal_hidden, |m: &mut Model| {
    let mut s = snapshot();
    s.rows.retain(|r| r.status == crate::mission::Status::Open);
    s.listed = 2;
    m.snap = Arc::new(s);
    m.order = crate::mission::Order::Heartbeat;
    m.hide_terminal = true;
});
both_sizes!(host_gone_badge, |m: &mut Model| {
    let mut s = snapshot();
    s.rows[0].pending_asks = 0;
    s.rows[0].needs = Some(Needs::HostGone);
    s.rows[0].last_heartbeat = Some(NOW - 3 * 3600 * S);
    s.rows[2].needs = Some(Needs::Blocker);
    s.asks.remove(0);
    s.pending_total = 1;
    s.needs_me = 3;
    let d = s.detail.as_mut().unwrap();
    d.mission = s.rows[0].clone();
    m.snap = Arc::new(s);
});
both_sizes!(honest_counts_and_marks, |m: &mut Model| {
    let mut s = snapshot();
    let item = s.inbox[0].clone();
    s.inbox = (0..3)
        .map(|i| InboxRow {
            id: format!("inbox-{i}"),
            summary: format!("report {i} of the scripted run"),
            ..item.clone()
        })
        .collect();
    s.inbox_total = 350;
    s.pending_total = 607;
    s.total_missions = 1_000_000;
    s.listed = 1_000_000;
    m.snap = Arc::new(s);
    m.focus = Pane::Inbox;
    m.inbox_sel = 2;
    m.marked.insert("inbox-0".into());
    m.marked.insert("inbox-2".into());
});
both_sizes!(confirm_refire, |m: &mut Model| {
    m.mode = Mode::Confirm(Confirm {
        kind: ConfirmKind::Refire {
            mission_id: "a1b2c3d4-0000".into(),
            agent: "demo".into(),
            envelope: "default".into(),
            intent: "ask-then-land: rename the config env var".into(),
        },
        reason: Default::default(),
        editing: false,
        yes_focused: false,
        error: None,
    });
});
both_sizes!(detail_follows_the_selected_ask, |m: &mut Model| {
    let mut s = snapshot();
    let d = s.detail.as_mut().unwrap();
    d.mission = s.rows[1].clone();
    d.reports.truncate(1);
    m.snap = Arc::new(s);
    m.focus = Pane::Asks;
    m.detail_from = Pane::Asks;
    m.ask_sel = 1;
});

#[test]
fn ascii_mono_frame() {
    let m = model(80, 24, true);
    let text = frame(&m);
    assert!(text.is_ascii(), "ASCII mode drew non-ASCII:\n{text}");
    insta::assert_snapshot!("ascii_mono_80x24", text);
    // Mono carries no colour at all: every cell's fg/bg is the terminal's default.
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    t.draw(|f| super::draw(f, &m, NOW)).unwrap();
    let buf = t.backend().buffer();
    for cell in buf.content() {
        assert_eq!(cell.fg, ratatui::style::Color::Reset);
        assert_eq!(cell.bg, ratatui::style::Color::Reset);
    }
}

#[test]
fn ascii_picker_frame() {
    let mut m = model(80, 24, true);
    let mut p = Picker::new();
    p.data = Some(picker_data());
    m.mode = Mode::Picking(p);
    insta::assert_snapshot!("ascii_picker_80x24", frame(&m));
}

#[test]
fn too_small_says_so() {
    let m = model(60, 20, false);
    assert!(frame(&m).contains("terminal too small (need 80x24, have 60x20)"));
}

#[test]
fn hostile_ask_text_renders_inert() {
    use crate::asks::{Ask, AskState};
    let hostile = Ask {
        id: "ask-evil".into(),
        tools_name: "mission".into(),
        tool_name: "mission_ask_attention".into(),
        args_summary: "\x1b[2J\x1b]0;owned\x07\x1b]8;;http://x\x1b\\click\x1b]8;;\x1b\\ me\u{202e}txet\x1b]52;c;aGk=\x07".into(),
        diff: Some("line\x1b[31m red\x1b[0m\r\n\x07bell".into()),
        envelope_name: "default".into(),
        matched_rule: None,
        on_timeout: "deny".into(),
        state: AskState::Pending,
        resolution: None,
        instance_id: String::new(),
        session_id: String::new(),
        agent_name: "evil\x1b[Hagent".into(),
        mission_id: None,
        created_at: NOW - S,
        expires_at: 0,
        resolved_at: None,
        answered_surface: None,
        answered_device: None,
        waited_ms: None,
        form: None,
        always_scope: None,
    };
    let row = crate::board::snapshot::ask_row(&hostile);
    assert_eq!(row.summary, "click metxet");
    assert_eq!(row.agent, "evilagent");
    let mut m = model(120, 40, false);
    let mut s = snapshot();
    s.asks = vec![row];
    m.snap = Arc::new(s);
    m.drafts.insert("ask-evil".into(), Draft::new());
    m.mode = Mode::Answering {
        ask_id: "ask-evil".into(),
    };
    let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
    t.draw(|f| super::draw(f, &m, NOW)).unwrap();
    for cell in t.backend().buffer().content() {
        let sym = cell.symbol();
        assert!(
            !sym.chars()
                .any(|c| c.is_control() || ('\u{202a}'..='\u{202e}').contains(&c)),
            "a control character reached the screen: {sym:?}"
        );
    }
    let text = format!("{}", t.backend());
    assert!(text.contains("click metxet"));
    assert!(!text.contains("owned") && !text.contains("aGk="));
}

#[test]
fn the_trace_pane_shows_the_oracle_model_and_its_newest_lines() {
    let mut m = model(120, 40, false);
    let mut s = snapshot();
    s.beta = true;
    s.oracle_model = Some("scripted (/tmp/d.json)".into());
    s.oracle_trace = vec![
        "oracle: reviewing ask a-1 (mission m-1): Rename it?".into(),
        "oracle: WAIT for ask a-1 (3ms) — the question stays with a human".into(),
    ];
    m.snap = Arc::new(s);
    let text = frame(&m);
    assert!(
        text.contains("Oracle trace · scripted (/tmp/d.json)"),
        "{text}"
    );
    assert!(
        text.contains("oracle: reviewing ask a-1 (mission"),
        "{text}"
    );
    assert!(text.contains("oracle: WAIT for ask a-1 (3ms)"), "{text}");
    assert!(!text.contains(crate::board::view::lists::ORACLE_EMPTY));
}

#[test]
fn the_detail_pane_names_a_worktree_mission_s_worktree() {
    let mut m = model(120, 40, false);
    let mut s = snapshot();
    assert!(frame(&m).contains("Workspace: cwd"), "no worktree: the cwd");
    if let Some(d) = &mut s.detail {
        d.worktree = Some("/r/.git/missionboard-worktrees/a1b2c3d4 on mission/a1b2c3d4".into());
    }
    m.snap = Arc::new(s);
    let text = frame(&m);
    assert!(
        text.contains("Workspace: /r/.git/missionboard-worktrees/a1b2c3d4 on mission/a1b2c3d4"),
        "{text}"
    );
}

#[test]
fn the_host_column_names_the_machine_and_gives_way_on_a_narrow_table() {
    let header = |text: &str| {
        text.lines()
            .find(|l| l.contains("STATE") && l.contains("INTENT"))
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    let mut wide = model(100, 30, false);
    let mut s = snapshot();
    s.rows[1].host = "box-b".into();
    wide.snap = Arc::new(s);
    let text = frame(&wide);
    assert!(header(&text).contains("HOST"), "{text}");
    let second = text
        .lines()
        .find(|l| l.contains(crate::board::model::short(&wide.snap.rows[1].id)))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(second.contains("box-b"), "{second}");
    let narrow = frame(&model(80, 24, false));
    let head = header(&narrow);
    assert!(
        !head.contains("HOST") && head.contains("WORKSPACE"),
        "{narrow}"
    );
    let side_by_side = frame(&model(120, 40, false));
    assert!(!header(&side_by_side).contains("HOST"), "{side_by_side}");
    assert!(
        side_by_side.contains("Host: box-a"),
        "the detail pane names it: {side_by_side}"
    );
}

#[test]
fn a_mission_s_check_shows_beside_its_state_and_in_its_detail() {
    let mut m = model(120, 40, false);
    let mut s = snapshot();
    assert!(!frame(&m).contains("Check:"), "no check, no line");
    s.rows[0].check = Some("✗");
    if let Some(d) = &mut s.detail {
        d.mission.check = Some("✗");
        d.check = vec![
            "failed 1 of 3 · `cargo test -q`".into(),
            "last try: exit 101".into(),
            "| test tally ... FAILED".into(),
        ];
    }
    m.snap = Arc::new(s);
    let text = frame(&m);
    let row = text
        .lines()
        .find(|l| {
            l.contains(crate::board::model::short(&m.snap.rows[0].id)) && !l.contains("STATE")
        })
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.contains(" ✗ "), "{text}");
    assert!(
        text.contains("Check: failed 1 of 3 · `cargo test -q`"),
        "{text}"
    );
    assert!(text.contains("last try: exit 101"), "{text}");
    assert!(text.contains("| test tally ... FAILED"), "{text}");
}

#[test]
fn a_mission_s_cost_leads_its_row_and_has_a_detail_line_and_today_s_total_is_in_the_status_line() {
    let mut m = model(120, 40, false);
    let mut s = snapshot();
    assert!(!frame(&m).contains("Cost:"), "no cost read, no line");
    s.rows[0].cost = Some("$0.0081 est.".into());
    s.rows[1].cost = Some("no price".into());
    if let Some(d) = &mut s.detail {
        d.cost = Some("$0.42 (reported by the agent)".into());
    }
    s.fleet_today = Some("today $0.75/$1.00 budget".into());
    m.snap = Arc::new(s);
    let text = frame(&m);
    let row_of = |i: usize| {
        text.lines()
            .find(|l| {
                l.contains(crate::board::model::short(&m.snap.rows[i].id)) && !l.contains("STATE")
            })
            .unwrap_or_else(|| panic!("{text}"))
            .to_string()
    };
    assert!(row_of(0).contains("$0.0081 est. · "), "{text}");
    assert!(text.contains(" no price · "), "never a zero: {text}");
    assert!(
        text.contains("Cost: $0.42 (reported by the agent)"),
        "{text}"
    );
    // The fleet facts ride on a status line wide enough to spell them out.
    let mut wide = model(220, 40, false);
    wide.snap = m.snap.clone();
    let text = frame(&wide);
    let status = text.lines().last().unwrap();
    assert!(status.contains(" today $0.75/$1.00 budget "), "{status}");
}

#[test]
fn the_detail_pane_names_the_session_that_fired_a_mission() {
    let mut m = model(120, 40, false);
    let mut s = snapshot();
    assert!(!frame(&m).contains("Fired by:"), "operator-fired, no line");
    if let Some(d) = &mut s.detail {
        d.fired_by = Some("session mb-session-1234".into());
    }
    m.snap = Arc::new(s);
    let text = frame(&m);
    assert!(text.contains("Fired by: session mb-session-1234"), "{text}");
}

/// Wide (CJK, emoji, a ZWJ sequence, a flag), zero-width (ZWJ, U+200B) and combining
/// text, in both column parities so some wide char straddles every overlay edge.
const WIDE: &str =
    "日本語の説明を書く 👩‍💻 é te\u{301}st a\u{200b}b\u{200d}c ❤️ 🇯🇵 x\u{336}y 👍🏽 終わり";

fn wide_model() -> Model {
    let mut m = model(120, 40, false);
    let mut s = snapshot();
    for (i, r) in s.rows.iter_mut().enumerate() {
        r.intent = format!("{}{WIDE} {WIDE}", "x".repeat(i % 2));
    }
    let d = s.detail.as_mut().unwrap();
    d.mission.intent = format!("{WIDE} x{WIDE} {WIDE}");
    d.reports[0].summary = format!("x{WIDE}");
    d.plan[0].content = WIDE.into();
    s.asks[0].summary = WIDE.into();
    s.inbox[0].summary = format!("x{WIDE}");
    s.oracle_trace = vec![WIDE.into(), format!("x{WIDE}")];
    m.snap = Arc::new(s);
    m
}

/// A terminal's screen as it follows ratatui's diff: printing into either half of a
/// wide char erases all of it, and a wide char covers the cells after it — what
/// xterm and tmux do, and what `TestBackend` (a plain grid) does not model.
struct Screen {
    shown: ratatui::buffer::Buffer,
    believed: ratatui::buffer::Buffer,
}

impl Screen {
    fn new(w: u16, h: u16) -> Screen {
        let area = Rect::new(0, 0, w, h);
        Screen {
            shown: ratatui::buffer::Buffer::empty(area),
            believed: ratatui::buffer::Buffer::empty(area),
        }
    }

    /// Draw `m` as the board's terminal would: only the diff reaches the screen.
    fn draw(&mut self, m: &Model) {
        use ratatui::buffer::CellWidth;
        let mut t = Terminal::new(TestBackend::new(m.size.width, m.size.height)).unwrap();
        let next = t.draw(|f| super::draw(f, m, NOW)).unwrap().buffer.clone();
        for cell in next.content() {
            let sym = cell.symbol();
            assert!(
                !sym.contains('\u{fe0f}')
                    && !sym.ends_with(super::UNSAFE_TAIL)
                    && !super::disputed(sym),
                "{sym:?} reaches the terminal: its width or its joiner is the terminal's guess"
            );
        }
        let width =
            |b: &ratatui::buffer::Buffer, x: u16, y: u16| b[(x, y)].symbol().cell_width().max(1);
        for (x, y, cell) in self.believed.diff(&next) {
            let w = cell.symbol().cell_width().max(1);
            let right = self.shown.area.right();
            // Any wide char the print lands on, from its left or inside, is erased whole.
            for c in x..(x + w).min(right) {
                for start in c.saturating_sub(1)..=c {
                    if start + width(&self.shown, start, y) > c && start != x {
                        let sw = width(&self.shown, start, y);
                        for k in start..(start + sw).min(right) {
                            self.shown[(k, y)].set_symbol(" ");
                        }
                    }
                }
            }
            let old = width(&self.shown, x, y);
            for k in x..(x + old.max(w)).min(right) {
                self.shown[(k, y)].set_symbol(" ");
            }
            self.shown[(x, y)] = cell.clone();
        }
        self.believed = next;
    }

    /// The screen matches a fresh frame of `m`, cell by cell.
    #[track_caller]
    fn assert_shows(&self, m: &Model) {
        let mut t = Terminal::new(TestBackend::new(m.size.width, m.size.height)).unwrap();
        let fresh = t.draw(|f| super::draw(f, m, NOW)).unwrap().buffer.clone();
        let area = fresh.area;
        for y in area.top()..area.bottom() {
            let row = |b: &ratatui::buffer::Buffer| {
                (area.left()..area.right())
                    .map(|x| b[(x, y)].symbol().to_string())
                    .collect::<Vec<_>>()
                    .concat()
            };
            assert_eq!(row(&self.shown), row(&fresh), "stale cells on row {y}");
        }
    }
}

#[test]
fn wide_zero_width_and_combining_text_leaves_no_stale_cells() {
    let mut m = wide_model();
    m.toasts.push(Toast {
        text: WIDE.into(),
        error: false,
        news: true,
        until_ms: None,
    });
    m.drafts.insert("ask-1111-question".into(), Draft::new());
    let mut screen = Screen::new(120, 40);
    let modes = [
        Mode::Board,
        Mode::Help {
            filter: Default::default(),
            scroll: 0,
        },
        Mode::Board,
        Mode::Answering {
            ask_id: "ask-1111-question".into(),
        },
        Mode::Picking(Picker {
            data: Some(picker_data()),
            ..Picker::new()
        }),
        Mode::Confirm(Confirm {
            kind: ConfirmKind::Quit {
                drafts: 1,
                hosted: vec![],
            },
            reason: Default::default(),
            editing: false,
            yes_focused: false,
            error: None,
        }),
        Mode::Board,
    ];
    for mode in modes {
        m.mode = mode;
        screen.draw(&m);
        screen.assert_shows(&m);
    }
    // The same board in plain ASCII over the wide one: nothing of it is left.
    let plain = model(120, 40, false);
    screen.draw(&plain);
    screen.assert_shows(&plain);
}

#[test]
fn cuts_and_pads_count_cells_as_the_buffer_draws_them() {
    use super::{cells, fit, truncate};
    assert_eq!(cells("👩‍💻"), 2, "a ZWJ sequence is one glyph");
    assert_eq!(cells("e\u{301}"), 1);
    assert_eq!(cells("a\u{200b}b"), 2);
    let drawn = |s: &str| {
        let mut buf = ratatui::buffer::Buffer::empty(Rect::new(0, 0, 60, 1));
        buf.set_stringn(0, 0, s, 60, ratatui::style::Style::new()).0 as usize
    };
    // unicode-width gives the halfwidth sound mark no cell; ratatui draws one.
    assert_eq!(cells("ｶﾞ"), drawn("ｶﾞ"));
    for width in 0..40 {
        let cut = truncate(WIDE, width, "…");
        assert!(cells(&cut) <= width, "{width}: {cut:?}");
        assert_eq!(cells(&fit(WIDE, width, "…")), width, "{width}");
        assert_eq!(drawn(&cut), cells(&cut), "{width}: {cut:?}");
    }
    // A cut never splits a grapheme: the ZWJ sequence is whole or gone.
    let cut = truncate("ab👩‍💻cd", 4, "…");
    assert!(cut == "ab…" || cut == "ab👩‍💻…", "{cut:?}");
}

#[test]
fn a_long_field_scrolls_to_keep_its_cursor_in_view() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let m = model(80, 24, false);
    // The field as drawn in 12 cells, behind a 2-cell label.
    let shown = |f: &crate::board::line::LineField| -> String {
        let spans = super::field(&m, ("> ", Default::default()), f, 12, Default::default());
        spans.iter().map(|s| s.content.as_ref()).collect()
    };
    let mut f = crate::board::line::LineField::from("mission --policy strict demo land: go");
    assert_eq!(shown(&f), "> …land: go_");
    f.input(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE));
    assert_eq!(shown(&f), "> mission -…");
    f.input(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    for _ in 0..4 {
        f.input(KeyEvent::new(KeyCode::Char('日'), KeyModifiers::NONE));
    }
    assert_eq!(shown(&f), "> …日日日日_");
    assert_eq!(super::cells(&shown(&f)), 12);
}

/// At 120 columns every mode's status line carries all of its hints, whole; at the
/// 80-column floor a cut drops whole hints, never half a word.
#[test]
fn the_status_line_says_how_long_the_store_has_been_unreachable() {
    let mut m = model(120, 40, false);
    assert!(frame(&m).contains("live"));
    m.now_ms = 1_000_000;
    m.store_outage_since = Some(1_000_000 - 42_000);
    let f = frame(&m);
    let status = f.lines().last().unwrap();
    assert!(
        status.contains("store unreachable for 42s, reconnecting"),
        "{status}"
    );
}

#[test]
fn the_status_hints_fit_at_120_columns_and_drop_whole_at_80() {
    use crate::board::keymap;
    let modes = [
        Mode::Board,
        Mode::Answering {
            ask_id: "ask-1111-question".into(),
        },
        Mode::Answering {
            ask_id: "ask-2222-permission".into(),
        },
        Mode::Picking(Picker::new()),
        Mode::Help {
            filter: Default::default(),
            scroll: 0,
        },
        Mode::Confirm(Confirm {
            kind: ConfirmKind::Stop {
                mission_id: "a1b2c3d4-0000".into(),
                intent: "x".into(),
            },
            reason: "stopped by operator".into(),
            editing: false,
            yes_focused: false,
            error: None,
        }),
    ];
    for mode in modes {
        for w in [120u16, 80] {
            let mut m = model(w, 40, false);
            m.drafts.insert("ask-1111-question".into(), Draft::new());
            m.mode = mode.clone();
            let text = frame(&m);
            let status = text.lines().last().unwrap().trim_matches('"').to_string();
            let hints: Vec<String> = keymap::hints(m.key_context())
                .into_iter()
                .map(|(k, h)| format!("{k} {h}"))
                .collect();
            if w == 120 {
                assert!(
                    status.contains(&hints.join(" · ")),
                    "{mode:?} at 120: {status}"
                );
            } else {
                assert!(!status.contains('…'), "{mode:?} at 80 cut a hint: {status}");
                assert!(status.contains(&hints[0]), "{mode:?} at 80: {status}");
            }
        }
    }
}

#[test]
fn wrap_breaks_at_spaces_and_cuts_nothing() {
    use super::{cells, wrap_text};
    assert_eq!(
        wrap_text("answer or decide the selected ask", 14),
        ["answer or", "decide the", "selected ask"]
    );
    // A word wider than the line is split between graphemes, wide ones counted as two.
    assert_eq!(
        wrap_text("日本語の説明 ok", 5),
        ["日本", "語の", "説明", "ok"]
    );
    assert_eq!(wrap_text("a\nb c", 10), ["a", "b c"]);
    let text = "maxTokens 2,000,000 · best-effort · modelAllowlist [\"a\", \"b\"] · declared, not enforced";
    for w in [1, 7, 20, 200] {
        let lines = wrap_text(text, w);
        assert!(lines.iter().all(|l| cells(l) <= w), "{w}: {lines:?}");
        let squeeze = |s: &str| s.replace(' ', "");
        assert_eq!(squeeze(&lines.concat()), squeeze(text), "{w}");
    }
}
both_sizes!(status_error_notice_on_the_board, |m: &mut Model| {
    m.toasts.push(Toast {
        text: "mission a1b2c3d4 is landed, not open: nothing to stop".into(),
        error: true,
        news: false,
        until_ms: None,
    });
});

/// The README's screenshot: the demo board at 120x40, as text and as SVG, drawn by
/// this renderer. Stale copies fail, naming the command that rewrites them.
#[test]
fn the_readme_screenshot_is_the_board_drawn_today() {
    let m = model(120, 40, false);
    let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
    t.draw(|f| super::draw(f, &m, NOW)).unwrap();
    let buffer = t.backend().buffer().clone();
    let text: String = (0..buffer.area.height)
        .map(|y| {
            let row: String = (0..buffer.area.width)
                .map(|x| buffer[(x, y)].symbol())
                .collect();
            format!("{}\n", row.trim_end())
        })
        .collect();
    let svg = svg_of(&buffer);
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    let regenerate = "MISSIONBOARD_WRITE_ASSETS=1 cargo test --lib the_readme_screenshot";
    if std::env::var_os("MISSIONBOARD_WRITE_ASSETS").is_some() {
        std::fs::write(assets.join("board.txt"), &text).unwrap();
        std::fs::write(assets.join("board.svg"), &svg).unwrap();
    }
    for (file, drawn) in [("board.txt", &text), ("board.svg", &svg)] {
        let kept = std::fs::read_to_string(assets.join(file)).unwrap_or_default();
        assert!(
            &kept == drawn,
            "assets/{file} is not the board drawn today: rewrite it with `{regenerate}`"
        );
    }
}

/// A buffer as SVG: one run of text per stretch of cells that share a style, each
/// placed on the cell grid so wide glyphs and borders line up in any font.
fn svg_of(buffer: &ratatui::buffer::Buffer) -> String {
    use ratatui::style::{Color, Modifier};
    const CW: f32 = 8.4;
    const CH: f32 = 17.0;
    const BG: &str = "#1e1e1e";
    const FG: &str = "#d4d4d4";
    fn hex(c: Color, default: &'static str) -> &'static str {
        match c {
            Color::Black => "#000000",
            Color::Red => "#f14c4c",
            Color::Green => "#23d18b",
            Color::Yellow => "#e5e510",
            Color::Blue => "#2472c8",
            Color::Magenta => "#d670d6",
            Color::Cyan => "#29b8db",
            Color::Gray => "#a0a0a0",
            Color::DarkGray => "#767676",
            Color::White => "#ffffff",
            _ => default,
        }
    }
    fn escape(s: &str) -> String {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    }
    let (w, h) = (buffer.area.width, buffer.area.height);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"14\">\n<rect width=\"100%\" height=\"100%\" fill=\"{BG}\"/>\n",
        f32::from(w) * CW,
        f32::from(h) * CH
    );
    for y in 0..h {
        let mut x = 0;
        while x < w {
            let first = &buffer[(x, y)];
            let style = (first.fg, first.bg, first.modifier);
            let start = x;
            let mut run = String::new();
            while x < w {
                let cell = &buffer[(x, y)];
                if (cell.fg, cell.bg, cell.modifier) != style {
                    break;
                }
                run.push_str(cell.symbol());
                x += 1;
            }
            let (fg, bg, modifier) = style;
            let (mut fg, mut bg) = (hex(fg, FG), hex(bg, BG));
            if modifier.contains(Modifier::REVERSED) {
                std::mem::swap(&mut fg, &mut bg);
            }
            let (x0, cells) = (f32::from(start) * CW, f32::from(x - start) * CW);
            let top = f32::from(y) * CH;
            if bg != BG {
                out.push_str(&format!(
                    "<rect x=\"{x0:.1}\" y=\"{top:.1}\" width=\"{cells:.1}\" height=\"{CH:.1}\" fill=\"{bg}\"/>\n"
                ));
            }
            if run.trim().is_empty() {
                continue;
            }
            let weight = if modifier.contains(Modifier::BOLD) {
                " font-weight=\"bold\""
            } else {
                ""
            };
            let underline = if modifier.contains(Modifier::UNDERLINED) {
                " text-decoration=\"underline\""
            } else {
                ""
            };
            out.push_str(&format!(
                "<text x=\"{x0:.1}\" y=\"{:.1}\" fill=\"{fg}\"{weight}{underline} textLength=\"{cells:.1}\" lengthAdjust=\"spacingAndGlyphs\" xml:space=\"preserve\">{}</text>\n",
                top + CH * 0.78,
                escape(&run)
            ));
        }
    }
    out.push_str("</svg>\n");
    out
}

#[test]
fn the_mode_label_names_what_the_open_ask_needs() {
    for (ask, label) in [
        ("ask-1111-question", "ANSWER "),
        ("ask-2222-permission", "APPROVE "),
    ] {
        for (w, h) in [(80u16, 24u16), (120, 40)] {
            let mut m = model(w, h, false);
            m.drafts.insert(ask.into(), Draft::new());
            m.mode = Mode::Answering { ask_id: ask.into() };
            let text = frame(&m);
            let status = text.lines().last().unwrap().trim_matches('"');
            assert!(status.starts_with(label), "{w}x{h}: {status}");
        }
    }
}

#[test]
fn the_plan_line_counts_the_plan_as_mission_show_does() {
    let m = model(120, 40, false);
    let text = frame(&m);
    // `mission show` prints `Plan:      revision N (…)` through the same counts.
    let expected = format!(
        "Plan revision 2 ({})",
        crate::mission::plan::counts_line(1, 1, 1)
    );
    assert_eq!(
        expected,
        "Plan revision 2 (1 pending, 1 in progress, 1 completed)"
    );
    assert!(text.contains(&expected), "{expected}\n{text}");
}

#[test]
fn the_missions_pane_gives_the_intent_the_width() {
    for (w, h, shown) in [
        (120u16, 40u16, "ask-then-land: rename the con"),
        (80, 24, "ask-then-land: rename the c"),
    ] {
        let m = model(w, h, false);
        let text = frame(&m);
        let row = text
            .lines()
            .find(|l| l.contains("a1b2c3d4 demo"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(row.contains(shown), "{w}x{h}: {row}");
        assert!(
            text.contains("envelope default ·") && text.contains("· beat 2s ago"),
            "the detail keeps what the table gave up: {text}"
        );
    }
}

#[test]
fn the_picker_wraps_agent_descriptions_instead_of_cutting_them() {
    let mut m = model(80, 24, false);
    let mut p = Picker::new();
    let mut data = picker_data();
    data.agents[1].description =
        "The scripted offline stub for demos: the intent picks the scenario (ask-then-land, land, mute, derail, tokens, stuck, perm-1)".into();
    p.data = Some(data);
    p.step = PickStep::Agent;
    m.mode = Mode::Picking(p);
    let text = frame(&m);
    assert!(text.contains("stuck, perm-1)"), "{text}");
    assert!(
        text.contains("  claude           The scripted offline stub for demos: the intent"),
        "{text}"
    );
}

#[test]
fn the_picker_marks_envelopes_scrolled_out_above_the_selection() {
    for (selected, marker) in [
        (0, None),
        (1, Some("↑ 1 more envelope above")),
        (2, Some("↑ 1 more envelope above")),
    ] {
        let mut m = model(80, 24, false);
        let mut p = Picker::new();
        p.data = Some(picker_data());
        p.envelope = selected;
        m.mode = Mode::Picking(p);
        let text = frame(&m);
        let shows_first = text.contains("hitl-policy-default.json");
        match marker {
            None => assert!(shows_first && !text.contains("more envelope"), "{text}"),
            Some(marker) => assert!(!shows_first && text.contains(marker), "{selected}: {text}"),
        }
    }
}

#[test]
fn a_long_fire_notice_wraps_above_the_status_line_instead_of_being_cut() {
    let notice = "Mission a1b2c3d4 fired at default mission agent \"demo\" under envelope \"default\" (default-mission-policy): maxToolCalls 300 · enforced; maxTokens 2,000,000 · best-effort; modelAllowlist [sonnet, opus] · declared, not enforced; onExhausted finish_stuck; filesystem.write · enforced (kernel)";
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let mut m = model(w, h, false);
        m.toasts.push(Toast {
            text: notice.into(),
            error: false,
            news: false,
            until_ms: None,
        });
        let text = frame(&m);
        let rows: Vec<&str> = text.lines().map(|l| l.trim_matches('"')).collect();
        let last = rows.len() - 1;
        // Every word is on screen, in order, on the bottom rows.
        let start = rows
            .iter()
            .rposition(|r| r.contains(" Mission a1b2c3d4 fired"))
            .unwrap_or_else(|| panic!("{w}x{h}: {text}"));
        let shown: Vec<&str> = rows[start..=last]
            .iter()
            .flat_map(|r| r.split_whitespace())
            .collect();
        let words: Vec<&str> = notice.split_whitespace().collect();
        let at = shown.iter().position(|w| *w == "Mission").unwrap();
        assert_eq!(&shown[at..at + words.len()], &words[..], "{w}x{h}: {text}");
        assert!(!rows[last].contains('…'), "{w}x{h}: {text}");
        assert!(last - start >= 1, "wrapped onto more than one row: {text}");
    }
}

#[test]
fn clusters_terminals_size_differently_are_drawn_as_their_first_char() {
    use super::disputed;
    for (cluster, is) in [
        ("👩\u{200d}💻", true),
        ("👍🏽", true),
        ("e\u{301}", false),
        ("x\u{336}", false),
        ("日", false),
        ("a", false),
    ] {
        assert_eq!(disputed(cluster), is, "{cluster:?}");
    }
    // Drawn: the first char takes the cluster's place, the rest of the row stays put.
    let mut m = model(120, 40, false);
    let mut s = snapshot();
    s.rows[0].intent = "ship 👩\u{200d}💻 and 👍🏽 today".into();
    m.snap = Arc::new(s);
    let text = frame(&m);
    let row = text.lines().find(|l| l.contains("ship ")).unwrap();
    assert!(row.contains("ship 👩 and 👍 today"), "{row}");
}

#[test]
fn the_schedules_panel_shows_each_schedule_s_next_run_and_last_outcome() {
    use crate::board::model::ScheduleRow;
    let mut m = model(120, 40, false);
    assert_eq!(m.query().schedules, 0, "closed: no schedule is read");
    m.mode = Mode::Schedules;
    let room = m.query().schedules;
    assert!(room > 2, "open: as many as it shows ({room})");
    let mut snap = (*m.snap).clone();
    snap.schedules = vec![
        ScheduleRow {
            name: "nightly".into(),
            when: "0 2 * * * (UTC)".into(),
            next: Some(NOW + 3 * 60 * S),
            last_tick: Some(NOW - 60 * S),
            last_outcome: Some("queued mission 1234".into()),
            fires: "template triage".into(),
        },
        ScheduleRow {
            name: "weekly".into(),
            when: "@every 2s (UTC)".into(),
            next: None,
            last_tick: None,
            last_outcome: None,
            fires: "stub: tidy the docs".into(),
        },
    ];
    snap.schedules_total = 4;
    m.snap = std::sync::Arc::new(snap);
    let screen = frame(&m);
    assert!(
        screen.contains("Schedules — next run and last outcome"),
        "{screen}"
    );
    assert!(screen.contains("nightly              in 3m"), "{screen}");
    assert!(
        screen.contains("template triage · 0 2 * * * (UTC)"),
        "{screen}"
    );
    assert!(
        screen.contains("last: queued mission 1234 (1m ago)"),
        "{screen}"
    );
    assert!(screen.contains("weekly               paused"), "{screen}");
    assert!(screen.contains("last: not ticked yet"), "{screen}");
    assert!(
        screen.contains("2 more — `missionboard schedule list` shows them all"),
        "{screen}"
    );
}
