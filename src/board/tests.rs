//! Key-driven tests of the whole update loop: keys in, effects out, and the
//! store-bound effects run against a real database in a tempdir.

use std::sync::Arc;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

use super::effects::{self, Services};
use super::model::{ConfirmKind, HostedMission, Mode, Model, Pane, TerminalRequest};
use super::notify::{Alert, Notify};
use super::snapshot::{self, Source};
use super::update::{Effect, Msg, update};
use super::view::tests::model;
use crate::asks::{NewAsk, OperatorVerdict, QUESTION_TOOL, QUESTION_TOOLS};
use crate::mission::NewMission;
use crate::ops::host::{Host, Hosting};
use crate::paths::Paths;
use crate::store::Store;

fn key(m: &mut Model, code: KeyCode) -> Vec<Effect> {
    update(
        m,
        Msg::Term(Event::Key(KeyEvent::new(code, KeyModifiers::NONE))),
    )
}

fn ctrl(m: &mut Model, c: char) -> Vec<Effect> {
    update(
        m,
        Msg::Term(Event::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::CONTROL,
        ))),
    )
}

fn typed(m: &mut Model, text: &str) {
    for c in text.chars() {
        key(m, KeyCode::Char(c));
    }
}

#[test]
fn vim_and_arrow_navigation() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('j'));
    key(&mut m, KeyCode::Down);
    assert_eq!(m.mission_sel, 2);
    key(&mut m, KeyCode::Char('k'));
    assert_eq!(m.mission_sel, 1);
    key(&mut m, KeyCode::Char('G'));
    assert_eq!(m.mission_sel, 5);
    key(&mut m, KeyCode::Char('g'));
    assert!(m.chord_g);
    key(&mut m, KeyCode::Char('g'));
    assert_eq!(m.mission_sel, 0);
    // A broken chord does nothing but drop the pending g.
    key(&mut m, KeyCode::Char('g'));
    key(&mut m, KeyCode::Char('j'));
    assert!(!m.chord_g);
    assert_eq!(m.mission_sel, 1);
    key(&mut m, KeyCode::Tab);
    assert_eq!(m.focus, Pane::Detail);
    key(&mut m, KeyCode::Tab);
    assert_eq!(m.focus, Pane::Asks);
    key(&mut m, KeyCode::Char('j'));
    assert_eq!(m.ask_sel, 1);
    key(&mut m, KeyCode::BackTab);
    assert_eq!(m.focus, Pane::Detail);
    key(&mut m, KeyCode::BackTab);
    assert_eq!(m.focus, Pane::Missions);
    key(&mut m, KeyCode::Char('3'));
    assert_eq!(m.focus, Pane::Inbox);
    assert_eq!(
        key(&mut m, KeyCode::Char('a')),
        vec![Effect::Ack {
            inbox_id: "inbox-1".into()
        }]
    );
}

#[test]
fn command_line_and_filter_do_not_collide() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('/'));
    assert_eq!(m.mode, Mode::Filter);
    typed(&mut m, "mission x");
    assert_eq!(m.filter, "mission x");
    key(&mut m, KeyCode::Esc);
    assert_eq!((m.mode.clone(), m.filter.as_str()), (Mode::Board, ""));

    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "mission --policy strict demo land: go");
    let fx = key(&mut m, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::RunMission {
            args: "--policy strict demo land: go".into()
        }]
    );

    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "/mission");
    assert_eq!(key(&mut m, KeyCode::Enter), vec![Effect::LoadPicker]);
    assert!(matches!(m.mode, Mode::Picking(_)));
}

#[test]
fn stop_confirms_with_an_editable_reason_and_focus_on_no() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('x'));
    assert!(
        matches!(&m.mode, Mode::Confirm(c) if c.reason == "stopped by operator" && !c.yes_focused)
    );
    // Enter on the default focus (No) cancels.
    assert!(key(&mut m, KeyCode::Enter).is_empty());
    assert_eq!(m.mode, Mode::Board);

    key(&mut m, KeyCode::Char('x'));
    key(&mut m, KeyCode::Char('e'));
    for _ in 0.."stopped by operator".len() {
        key(&mut m, KeyCode::Backspace);
    }
    typed(&mut m, "wrong repo");
    key(&mut m, KeyCode::Enter);
    let fx = key(&mut m, KeyCode::Char('y'));
    assert_eq!(
        fx,
        vec![Effect::Stop {
            mission_id: "a1b2c3d4-0000".into(),
            reason: "wrong repo".into()
        }]
    );
}

fn hosted(id: &str, intent: &str) -> HostedMission {
    HostedMission {
        id: id.into(),
        intent: intent.into(),
    }
}

#[test]
fn quit_asks_first_when_a_draft_is_unsent() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('2'));
    key(&mut m, KeyCode::Enter);
    typed(&mut m, "half an answer");
    key(&mut m, KeyCode::Esc);
    assert_eq!(key(&mut m, KeyCode::Char('q')), vec![Effect::LoadHosted]);
    assert!(!m.quit);
    update(&mut m, Msg::HostedLoaded(vec![]));
    assert!(
        matches!(&m.mode, Mode::Confirm(c) if c.kind == ConfirmKind::Quit { drafts: 1, hosted: vec![] })
    );
    assert!(!m.quit);
    key(&mut m, KeyCode::Char('y'));
    assert!(m.quit);
}

#[test]
fn quit_with_nothing_hosted_and_no_draft_leaves_at_once() {
    for via_command_line in [false, true] {
        let mut m = model(120, 40, false);
        let fx = if via_command_line {
            key(&mut m, KeyCode::Char(':'));
            typed(&mut m, "q");
            key(&mut m, KeyCode::Enter)
        } else {
            key(&mut m, KeyCode::Char('q'))
        };
        assert_eq!(fx, vec![Effect::LoadHosted]);
        update(&mut m, Msg::HostedLoaded(vec![]));
        assert!(m.quit);
    }
}

#[test]
fn quit_with_hosted_missions_names_them_and_can_stop_them_with_a_reason() {
    let mut m = model(120, 40, false);
    let both = vec![
        hosted("a1b2c3d4-0000", "ask-then-land: rename"),
        hosted("f6a7b8c9-0000", "perm-1: tidy"),
    ];
    // `:q` asks exactly as `q` does.
    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "q");
    assert_eq!(key(&mut m, KeyCode::Enter), vec![Effect::LoadHosted]);
    update(&mut m, Msg::HostedLoaded(both.clone()));
    let Mode::Confirm(c) = &m.mode else {
        panic!("no confirm: {:?}", m.mode)
    };
    assert_eq!(
        c.kind,
        ConfirmKind::Quit {
            drafts: 0,
            hosted: both.clone()
        }
    );
    assert_eq!(c.reason.as_str(), "stopped by operator");
    // No, then ask again: y quits and leaves the missions open (no effect).
    key(&mut m, KeyCode::Char('n'));
    assert_eq!(m.mode, Mode::Board);
    assert!(!m.quit);
    key(&mut m, KeyCode::Char('q'));
    update(&mut m, Msg::HostedLoaded(both.clone()));
    assert!(key(&mut m, KeyCode::Char('y')).is_empty());
    assert!(m.quit);

    // s stops them with the edited reason, and the board quits once they stopped.
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('q'));
    update(&mut m, Msg::HostedLoaded(both.clone()));
    key(&mut m, KeyCode::Char('e'));
    ctrl(&mut m, 'j');
    typed(&mut m, "closing for the night");
    key(&mut m, KeyCode::Enter);
    let fx = key(&mut m, KeyCode::Char('s'));
    assert_eq!(
        fx,
        vec![Effect::StopHosted {
            mission_ids: vec!["a1b2c3d4-0000".into(), "f6a7b8c9-0000".into()],
            reason: "closing for the night".into(),
        }]
    );
    assert!(!m.quit, "the board waits for the stops");
    update(&mut m, Msg::HostedStopped(Err("could not stop".into())));
    assert!(!m.quit, "a refused stop keeps the board open");
    assert!(
        m.toasts
            .iter()
            .any(|t| t.error && t.text == "could not stop")
    );
    update(&mut m, Msg::HostedStopped(Ok("stopped 2".into())));
    assert!(m.quit);
}

#[test]
fn s_in_a_quit_without_hosted_missions_or_a_stop_dialog_does_nothing() {
    let mut m = model(120, 40, false);
    m.drafts.insert("ask-1111-question".into(), {
        let mut d = crate::board::model::Draft::new();
        d.area.insert_str("draft");
        d
    });
    key(&mut m, KeyCode::Char('q'));
    update(&mut m, Msg::HostedLoaded(vec![]));
    assert!(key(&mut m, KeyCode::Char('s')).is_empty());
    assert!(matches!(m.mode, Mode::Confirm(_)));
    // Without hosted missions there is no reason to edit.
    key(&mut m, KeyCode::Char('e'));
    assert!(matches!(&m.mode, Mode::Confirm(c) if !c.editing));
}

#[test]
fn a_new_ask_is_announced_as_notify_says() {
    let mut m = model(120, 40, false);
    let mut first = (*m.snap).clone();
    let newcomer = first.asks.pop().expect("an ask");
    update(&mut m, Msg::Snapshot(Arc::new(first.clone())));
    assert!(m.alerts.is_empty(), "a first snapshot announces nothing");
    let mut with_it = first.clone();
    with_it.asks.push(newcomer.clone());
    with_it.generation += 1;

    // notify = off (the default): a toast only.
    let mut quiet = model(120, 40, false);
    update(&mut quiet, Msg::Snapshot(Arc::new(first.clone())));
    update(&mut quiet, Msg::Snapshot(Arc::new(with_it.clone())));
    assert!(quiet.alerts.is_empty());

    m.host.notify = Notify::from_config("bell");
    update(&mut m, Msg::Snapshot(Arc::new(with_it.clone())));
    assert_eq!(
        m.alerts,
        vec![Alert {
            title: "missionboard".into(),
            body: format!(
                "gated call from {} (mission f6a7b8c9): {}",
                newcomer.agent, newcomer.summary
            ),
        }]
    );
    // Seen once, announced once.
    m.alerts.clear();
    update(&mut m, Msg::Snapshot(Arc::new(with_it)));
    assert!(m.alerts.is_empty());
}

#[test]
fn ctrl_z_suspends_and_ctrl_o_hands_the_draft_to_the_editor() {
    let mut m = model(120, 40, false);
    ctrl(&mut m, 'z');
    assert_eq!(m.terminal_request.take(), Some(TerminalRequest::Suspend));
    key(&mut m, KeyCode::Char('2'));
    key(&mut m, KeyCode::Enter);
    let Mode::Answering { ask_id } = m.mode.clone() else {
        panic!("not answering: {:?}", m.mode);
    };
    typed(&mut m, "first");
    ctrl(&mut m, 'o');
    assert_eq!(
        m.terminal_request.take(),
        Some(TerminalRequest::Edit {
            ask_id: ask_id.clone(),
            text: "first".into()
        })
    );
    // The editor's text replaces the draft; typing goes on at its end.
    update(
        &mut m,
        Msg::Edited {
            ask_id: ask_id.clone(),
            result: Ok("line one\nline two\n".into()),
        },
    );
    typed(&mut m, "!");
    assert_eq!(m.drafts[&ask_id].text(), "line one\nline two!");
    // An editor that failed leaves the draft and says why.
    update(
        &mut m,
        Msg::Edited {
            ask_id: ask_id.clone(),
            result: Err(
                "the editor `false` exited with exit status: 1; the draft is unchanged".into(),
            ),
        },
    );
    assert_eq!(m.drafts[&ask_id].text(), "line one\nline two!");
    assert!(
        m.toasts
            .iter()
            .any(|t| t.text.contains("the draft is unchanged"))
    );
}

#[test]
fn the_oracle_toggle_needs_the_beta() {
    let mut m = model(120, 40, false);
    assert!(!m.snap.beta);
    assert_eq!(key(&mut m, KeyCode::Char('o')), vec![]);
    assert!(m.toasts.iter().any(|t| t.error
        && t.text == "the oracle is a beta feature: `missionboard config set opt-in-beta true`, then reopen the board"));
    assert!(!m.host.oracle_on);
}

/// A scratch world: a real store with one open mission and its pending question.
fn world() -> (tempfile::TempDir, Services, String) {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let paths = Paths::resolve(home.clone(), dir.path().to_path_buf());
    let store = Store::open(&paths.db_path()).unwrap();
    let host = Host::open(&paths, &store, Hosting::Units).unwrap();
    host.missions()
        .create(NewMission {
            id: "m-1".into(),
            ..crate::mission::NewMission::new(
                "demo",
                crate::mission::Intent::new("ask-then-land: rename it").unwrap(),
                crate::mission::EnvelopeName::new("default").unwrap(),
            )
        })
        .unwrap();
    let ask = host
        .asks()
        .raise(NewAsk {
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: "Should I proceed with the change?".into(),
            agent_name: "demo".into(),
            mission_id: Some("m-1".into()),
            ..Default::default()
        })
        .unwrap();
    (dir, Services::new(host), ask.id)
}

/// Run `effect` through the board's effect runner ([`effects::spawn`]) on a test
/// runtime, as the board does on its own, and return the first message it sends.
fn run_effect(effect: Effect, svc: &Services) -> Msg {
    let runtime = crate::runtime::multi_thread().unwrap();
    runtime.block_on(async {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        effects::spawn(effect, svc, tx);
        tokio::time::timeout(std::time::Duration::from_secs(30), rx.recv())
            .await
            .expect("the effect to answer within 30s")
            .expect("the effect to send its outcome")
    })
}

fn snapshot_of(svc: &Services, m: &Model) -> Msg {
    let src = Source::open(&svc.host, Box::new(|| (0, 0)), false).unwrap();
    Msg::Snapshot(Arc::new(snapshot::build(&src, &m.query())))
}

#[test]
fn answering_in_place_writes_the_ask_through_the_operator_path() {
    let (_dir, svc, ask_id) = world();
    let mut m = model(120, 40, false);
    let msg = snapshot_of(&svc, &m);
    update(&mut m, msg);
    assert_eq!(m.snap.asks.len(), 1);
    assert_eq!(m.snap.rows[0].pending_asks, 1);

    key(&mut m, KeyCode::Char('2'));
    key(&mut m, KeyCode::Enter);
    assert_eq!(
        m.mode,
        Mode::Answering {
            ask_id: ask_id.clone()
        }
    );
    typed(&mut m, "yes, go");
    // A refresh while typing keeps the draft.
    let msg = snapshot_of(&svc, &m);
    update(&mut m, msg);
    assert_eq!(m.drafts[&ask_id].text(), "yes, go");

    let fx = ctrl(&mut m, 's');
    assert_eq!(
        fx,
        vec![Effect::Verdict {
            ask_id: ask_id.clone(),
            verdict: OperatorVerdict::Answer("yes, go".into())
        }]
    );
    let done = run_effect(fx[0].clone(), &svc);
    update(&mut m, done);
    assert_eq!(m.mode, Mode::Board);
    let row = svc.host.asks().require(&ask_id).unwrap();
    assert!(!row.is_pending());
    assert_eq!(row.answer(), Some("yes, go"));

    // A second answer is refused by the service; the refusal shows inline and the
    // typed text survives.
    m.mode = Mode::Answering {
        ask_id: ask_id.clone(),
    };
    m.drafts
        .entry(ask_id.clone())
        .or_default()
        .area
        .insert_str("again");
    let again = run_effect(
        Effect::Verdict {
            ask_id: ask_id.clone(),
            verdict: OperatorVerdict::Answer("again".into()),
        },
        &svc,
    );
    update(&mut m, again);
    let draft = &m.drafts[&ask_id];
    assert_eq!(draft.text(), "again");
    assert!(
        draft.error.as_deref().unwrap().contains("already answered"),
        "{:?}",
        draft.error
    );
    assert!(matches!(m.mode, Mode::Answering { .. }));
}

#[test]
fn a_yes_no_verdict_on_a_question_is_refused_inline() {
    let (_dir, svc, ask_id) = world();
    let msg = run_effect(
        Effect::Verdict {
            ask_id: ask_id.clone(),
            verdict: OperatorVerdict::Approve,
        },
        &svc,
    );
    match msg {
        Msg::VerdictDone { result: Err(e), .. } => assert!(e.contains("is a QUESTION"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(svc.host.asks().require(&ask_id).unwrap().is_pending());
}

#[test]
fn stop_and_filter_against_the_store() {
    let (_dir, svc, ask_id) = world();
    let msg = run_effect(
        Effect::Stop {
            mission_id: "m-1".into(),
            reason: "wrong repo".into(),
        },
        &svc,
    );
    assert!(matches!(msg, Msg::StopDone(Ok(_))), "{msg:?}");
    let mission = svc.host.missions().require("m-1").unwrap();
    assert_eq!(mission.status_reason.as_deref(), Some("wrong repo"));
    assert!(!svc.host.asks().require(&ask_id).unwrap().is_pending());

    let src = Source::open(&svc.host, Box::new(|| (0, 0)), false).unwrap();
    let mut q = super::model::Query {
        offset: 0,
        limit: 5,
        selected: 0,
        filter: "abandoned".into(),
        ..Default::default()
    };
    let s = snapshot::build(&src, &q);
    assert_eq!((s.matched, s.rows.len()), (Some(1), 1));
    assert_eq!(
        s.detail.unwrap().mission.status_reason.as_deref(),
        Some("wrong repo")
    );
    q.filter = "landed".into();
    assert_eq!(snapshot::build(&src, &q).matched, Some(0));
}

#[test]
fn picker_walks_envelope_agent_intent_and_fires() {
    use super::model::{AgentEntry, EnvelopeEntry, PickerData};
    let mut m = model(120, 40, false);
    assert_eq!(key(&mut m, KeyCode::Char('f')), vec![Effect::LoadPicker]);
    let entry = |f: &str, s: &str| EnvelopeEntry {
        file_name: f.into(),
        short_name: crate::envelope::search::short_name(f).into(),
        summary: s.into(),
        compute: Some(crate::envelope::format::ComputeBounds {
            model_allowlist: vec!["m".into()],
            ..Default::default()
        }),
        sandbox: vec![],
        check: None,
    };
    update(
        &mut m,
        Msg::PickerLoaded(Ok(PickerData {
            envelopes: vec![
                entry("hitl-policy-default.json", "d"),
                entry("hitl-policy-strict.json", "s"),
            ],
            agents: vec![
                AgentEntry {
                    name: "claude".into(),
                    description: String::new(),
                    caps: None,
                },
                AgentEntry {
                    name: "demo".into(),
                    description: String::new(),
                    // It started here before and showed no session models.
                    caps: Some(crate::agents::AgentCaps::default()),
                },
            ],
            default_agent: Some("demo".into()),
            default_envelope: Some("strict".into()),
            templates: vec![],
        })),
    );
    // The default envelope and agent are preselected.
    key(&mut m, KeyCode::Enter);
    key(&mut m, KeyCode::Enter);
    typed(&mut m, "land: jk typed as text");
    let fx = key(&mut m, KeyCode::Enter);
    assert_eq!(
        fx,
        vec![Effect::Fire {
            agent: "demo".into(),
            envelope: crate::mission::EnvelopeName::new("strict").unwrap(),
            intent: crate::mission::Intent::new("land: jk typed as text").unwrap(),
            // Labelled for demo as `mission show` would label its mission.
            labels: vec![
                "modelAllowlist [m] · declared, not enforced".into(),
                "onExhausted finish_stuck".into()
            ],
            runs: crate::board::model::Runs::Here,
        }]
    );
    // A refusal keeps the picker open with the exact text.
    update(
        &mut m,
        Msg::Fired(Err("conflict: fleet admission refused".into())),
    );
    assert!(
        matches!(&m.mode, Mode::Picking(p) if p.error.as_deref() == Some("conflict: fleet admission refused"))
    );
    // Back to the agents, the other one: the labels are recomputed for it.
    update(
        &mut m,
        Msg::Term(Event::Key(KeyEvent::new(
            KeyCode::BackTab,
            KeyModifiers::SHIFT,
        ))),
    );
    key(&mut m, KeyCode::Char('k'));
    key(&mut m, KeyCode::Enter);
    let Effect::Fire { agent, labels, .. } = &key(&mut m, KeyCode::Enter)[0] else {
        panic!("no fire")
    };
    assert_eq!(agent, "claude");
    assert_eq!(labels[0], "modelAllowlist [m] · best-effort");
    update(&mut m, Msg::Fired(Ok("Mission fired".into())));
    assert_eq!(m.mode, Mode::Board);
}

#[test]
fn mouse_click_selects_the_row_under_it() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut m = model(120, 40, false);
    let a = super::layout::areas(m.size);
    let click = |col, row| {
        Msg::Term(Event::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: col,
            row,
            modifiers: KeyModifiers::NONE,
        }))
    };
    // Border, header, then rows 0, 1, 2…
    update(&mut m, click(a.missions.x + 3, a.missions.y + 4));
    assert_eq!((m.focus, m.mission_sel), (Pane::Missions, 2));
    update(&mut m, click(a.asks.x + 3, a.asks.y + 2));
    assert_eq!((m.focus, m.ask_sel), (Pane::Asks, 1));
}

#[test]
fn toasts_announce_new_asks_and_terminal_states() {
    let mut m = model(120, 40, false);
    let mut s = (*m.snap).clone();
    update(&mut m, Msg::Snapshot(Arc::new(s.clone())));
    assert!(m.toasts.is_empty(), "the first snapshot is the baseline");
    s.rows[0].status = crate::mission::Status::Landed;
    s.asks[0].id = "ask-new".into();
    update(&mut m, Msg::Snapshot(Arc::new(s)));
    let texts: Vec<&str> = m.toasts.iter().map(|t| t.text.as_str()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("new question from demo")),
        "{texts:?}"
    );
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("mission a1b2c3d4 landed")),
        "{texts:?}"
    );
    let later = m.now_ms + 10_000;
    update(&mut m, Msg::Tick(later));
    assert!(m.toasts.is_empty());
}

#[test]
fn notices_expire_on_the_board_s_clock_and_esc_dismisses_them() {
    let mut m = model(120, 40, false);
    let start = m.now_ms;
    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "wat");
    key(&mut m, KeyCode::Enter);
    update(
        &mut m,
        Msg::Toast {
            text: "news".into(),
            error: false,
        },
    );
    assert_eq!(m.toasts.len(), 2);
    update(&mut m, Msg::Tick(start + crate::board::model::TOAST_MS + 1));
    let left: Vec<(&str, bool)> = m.toasts.iter().map(|t| (&t.text[..], t.error)).collect();
    assert_eq!(left.len(), 1, "the news went, the error stays: {left:?}");
    assert!(left[0].1 && left[0].0.starts_with("unknown command \"wat\""));
    update(
        &mut m,
        Msg::Tick(start + crate::board::model::ERROR_TOAST_MS + 1),
    );
    assert!(m.toasts.is_empty(), "errors expire too, later");

    update(
        &mut m,
        Msg::Toast {
            text: "boom".into(),
            error: true,
        },
    );
    key(&mut m, KeyCode::Esc);
    assert!(m.toasts.is_empty(), "Esc dismisses");
}

#[test]
fn the_selection_follows_its_mission_when_new_ones_arrive() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('j'));
    let chosen = m.selected_mission().unwrap().id.clone();
    // A mission fired meanwhile lands on top and pushes every row down one.
    let mut s = (*m.snap).clone();
    let mut fresh = s.rows[0].clone();
    fresh.id = "f00dbabe-0000-0000-0000-000000000000".into();
    s.rows.insert(0, fresh);
    s.rows.pop();
    update(&mut m, Msg::Snapshot(Arc::new(s)));
    assert_eq!(m.selected_mission().unwrap().id, chosen);
}

/// A paste with CR LF and a bare CR shows three lines, and exactly what the box
/// shows is what the store records.
#[test]
fn a_pasted_answer_is_shown_and_sent_exactly() {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    let (_dir, svc, ask_id) = world();
    let mut m = model(120, 40, false);
    let msg = snapshot_of(&svc, &m);
    update(&mut m, msg);
    key(&mut m, KeyCode::Char('2'));
    key(&mut m, KeyCode::Enter);
    update(&mut m, Msg::Term(Event::Paste("a\r\nb\rc\x1b[2J".into())));
    let shown = m.drafts[&ask_id].text();
    assert_eq!(shown, "a\nb\nc");

    let mut t = Terminal::new(TestBackend::new(120, 40)).unwrap();
    t.draw(|f| super::view::draw(f, &m, m.now_ms)).unwrap();
    let screen = format!("{}", t.backend());
    let rows: Vec<&str> = screen.lines().collect();
    let box_row = rows
        .iter()
        .position(|r| r.contains("your answer"))
        .expect("the answer box is on screen");
    for (i, line) in ["a", "b", "c"].iter().enumerate() {
        let row = rows[box_row + 1 + i];
        assert!(
            row.contains(&format!("│{line}  ")),
            "line {i} of the box: {row}"
        );
    }

    let fx = ctrl(&mut m, 's');
    assert_eq!(fx.len(), 1, "{fx:?}");
    let done = run_effect(fx[0].clone(), &svc);
    update(&mut m, done);
    let row = svc.host.asks().require(&ask_id).unwrap();
    assert_eq!(row.answer(), Some(shown.as_str()));
}

#[test]
fn m_and_shift_d_confirm_before_merging_or_discarding_and_refuse_without_a_worktree() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('m'));
    assert!(
        matches!(&m.mode, Mode::Confirm(c) if matches!(c.kind, crate::board::model::ConfirmKind::Merge { .. })),
        "{:?}",
        m.mode
    );
    // Focus starts on No: Enter cancels.
    assert!(key(&mut m, KeyCode::Enter).is_empty());
    assert_eq!(m.mode, Mode::Board);
    key(&mut m, KeyCode::Char('m'));
    assert_eq!(
        key(&mut m, KeyCode::Char('y')),
        vec![Effect::Worktree {
            mission_id: "a1b2c3d4-0000".into(),
            merge: true
        }]
    );
    key(&mut m, KeyCode::Char('D'));
    assert_eq!(
        key(&mut m, KeyCode::Char('y')),
        vec![Effect::Worktree {
            mission_id: "a1b2c3d4-0000".into(),
            merge: false
        }]
    );

    // Against the store: a mission fired without a worktree is refused, changing nothing.
    let (_dir, svc, _ask) = world();
    let msg = run_effect(
        Effect::Worktree {
            mission_id: "m-1".into(),
            merge: true,
        },
        &svc,
    );
    match msg {
        Msg::WorktreeDone(Err(e)) => assert!(e.contains("has no worktree"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn v_opens_the_selected_worktree_mission_s_diff_coloured_and_scrollable() {
    // A real worktree of a real repository, made for the world's mission m-1.
    let (dir, svc, _ask) = world();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("notes.txt"), "old line\n").unwrap();
    git(&["add", "notes.txt"]);
    git(&["commit", "-q", "-m", "init"]);
    let wt = crate::worktree::Worktrees::new(svc.host.missions().store().clone())
        .create(&repo, "m-1")
        .unwrap();
    std::fs::write(wt.path.join("notes.txt"), "new line\n").unwrap();
    let Msg::DiffLoaded(Ok(view)) = run_effect(
        Effect::LoadDiff {
            mission_id: "m-1".into(),
        },
        &svc,
    ) else {
        panic!("the diff loads");
    };
    assert!(
        view.files.iter().any(|f| f.contains("notes.txt")),
        "{view:?}"
    );
    assert!(view.lines.contains(&"-old line".to_string()), "{view:?}");
    assert!(view.lines.contains(&"+new line".to_string()), "{view:?}");

    let mut m = model(120, 40, false);
    assert_eq!(
        key(&mut m, KeyCode::Char('v')),
        vec![Effect::LoadDiff {
            mission_id: "a1b2c3d4-0000".into()
        }]
    );
    update(&mut m, Msg::DiffLoaded(Ok(view.clone())));
    assert!(matches!(m.mode, Mode::Diff(_)), "{:?}", m.mode);
    let text = crate::board::view::tests::frame(&m);
    assert!(
        text.contains("+new line") && text.contains("notes.txt"),
        "{text}"
    );
    key(&mut m, KeyCode::Char('j'));
    key(&mut m, KeyCode::Char('G'));
    let Mode::Diff(d) = &m.mode else { panic!() };
    assert_eq!(d.scroll, view.lines.len() - 1);
    key(&mut m, KeyCode::Esc);
    assert_eq!(m.mode, Mode::Board);

    // A mission without a worktree says so.
    let (_dir2, svc2, _) = world();
    match run_effect(
        Effect::LoadDiff {
            mission_id: "m-1".into(),
        },
        &svc2,
    ) {
        Msg::DiffLoaded(Err(e)) => assert!(e.contains("has no worktree"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_outcome_of_an_action_outranks_news_that_lands_after_it() {
    let mut m = model(120, 40, false);
    let mut s = (*m.snap).clone();
    update(&mut m, Msg::Snapshot(Arc::new(s.clone())));
    update(
        &mut m,
        Msg::StopDone(Ok("mission a1b2c3d4 stopped: done".into())),
    );
    let b = s
        .rows
        .iter()
        .position(|r| r.id.starts_with("b2c3d4e5"))
        .unwrap();
    s.rows[b].status = crate::mission::Status::Open;
    update(&mut m, Msg::Snapshot(Arc::new(s.clone())));
    s.rows[b].status = crate::mission::Status::Landed;
    update(&mut m, Msg::Snapshot(Arc::new(s)));
    assert!(
        m.toasts
            .iter()
            .any(|t| t.news && t.text.starts_with("mission b2c3d4e5 landed"))
    );
    let status = |m: &Model| {
        super::view::tests::frame(m)
            .lines()
            .last()
            .unwrap()
            .to_string()
    };
    assert!(
        status(&m).contains("mission a1b2c3d4 stopped: done (+1)"),
        "{}",
        status(&m)
    );
    // Once the outcome expires, the news shows.
    m.toasts.retain(|t| t.news);
    assert!(
        status(&m).contains("mission b2c3d4e5 landed"),
        "{}",
        status(&m)
    );
}

/// Set a mission's columns directly (ages, heartbeats, a host) so orders are exact.
fn set(svc: &Services, id: &str, sql: &str) {
    svc.host
        .missions()
        .store()
        .with(|c| {
            c.execute(
                &format!("UPDATE missions SET {sql} WHERE id = ?1"),
                crate::store::sql::params![id],
            )
        })
        .unwrap();
}

fn ids(msg: &Msg) -> Vec<String> {
    match msg {
        Msg::Snapshot(s) => s.rows.iter().map(|r| r.id.clone()).collect(),
        other => panic!("{other:?}"),
    }
}

/// A store where three missions need the operator (a pending ask, a dead host, an
/// unread blocker) among others in every state, at known ages and heartbeats.
fn crowded() -> (tempfile::TempDir, Services) {
    use crate::mission::Status;
    let (dir, svc, _ask) = world();
    let missions = svc.host.missions();
    for id in ["m-2", "m-3", "m-4", "m-5", "m-6"] {
        missions
            .create(NewMission {
                id: id.into(),
                ..crate::mission::NewMission::new(
                    "demo",
                    crate::mission::Intent::new(&format!("work {id}")).unwrap(),
                    crate::mission::EnvelopeName::new("default").unwrap(),
                )
            })
            .unwrap();
    }
    let base = crate::clock::now_ms();
    // m-1 oldest … m-6 newest; heartbeats in the opposite order.
    for (i, id) in ["m-1", "m-2", "m-3", "m-4", "m-5", "m-6"]
        .iter()
        .enumerate()
    {
        let i = i as i64;
        set(
            &svc,
            id,
            &format!(
                "created_at = {}, last_heartbeat = {}",
                base - (60 - i) * 60_000,
                base - i * 1000
            ),
        );
    }
    // m-2's host: this pid, but not this process (its start time differs): gone.
    set(
        &svc,
        "m-2",
        &format!(
            "host_pid = {}, host_start = 'another-process'",
            std::process::id()
        ),
    );
    missions.finish("m-3", Status::Landed, "done").unwrap();
    missions
        .add_blocker("m-4", "cannot reach staging".into(), String::new())
        .unwrap();
    missions.finish("m-4", Status::Stuck, "bound").unwrap();
    missions
        .finish("m-6", Status::Derailed, "turn failed")
        .unwrap();
    missions
        .store()
        .with(|c| {
            c.execute(
                "INSERT INTO mission_worktrees (mission_id, repo, path, branch, base, state)
                 VALUES ('m-3', '/r', '/r/.git/wt/m-3', 'mission/m-3', 'abc', 'merged')",
                [],
            )
        })
        .unwrap();
    (dir, svc)
}

#[test]
fn the_table_puts_what_needs_you_first_then_sorts_and_hides_as_asked() {
    use super::model::Needs;
    let (_dir, svc) = crowded();
    let mut m = model(120, 40, false);
    let msg = snapshot_of(&svc, &m);
    // Needs-me (ask, host gone, blocker), then by state: open, derailed, landed.
    assert_eq!(ids(&msg), ["m-1", "m-2", "m-4", "m-5", "m-6", "m-3"]);
    update(&mut m, msg);
    let needs: Vec<Option<Needs>> = m.snap.rows.iter().map(|r| r.needs).collect();
    assert_eq!(
        needs,
        [
            Some(Needs::Ask),
            Some(Needs::HostGone),
            Some(Needs::Blocker),
            None,
            None,
            None
        ]
    );
    assert_eq!((m.snap.listed, m.snap.needs_me), (6, 3));
    let workspaces: Vec<&str> = m.snap.rows.iter().map(|r| r.workspace.as_str()).collect();
    assert_eq!(workspaces, ["cwd", "cwd", "cwd", "cwd", "cwd", "merged"]);

    // `s`: by age (newest first), then by heartbeat (latest first); the group stays.
    key(&mut m, KeyCode::Char('s'));
    assert_eq!(
        ids(&snapshot_of(&svc, &m)),
        ["m-1", "m-2", "m-4", "m-6", "m-5", "m-3"]
    );
    key(&mut m, KeyCode::Char('s'));
    assert_eq!(m.query().order, crate::mission::Order::Heartbeat);
    assert_eq!(
        ids(&snapshot_of(&svc, &m)),
        ["m-1", "m-2", "m-4", "m-3", "m-5", "m-6"]
    );
    key(&mut m, KeyCode::Char('s'));
    assert_eq!(m.query().order, crate::mission::Order::State);

    // `t` hides the terminal missions, the stuck one with its blocker too.
    key(&mut m, KeyCode::Char('j'));
    key(&mut m, KeyCode::Char('t'));
    assert_eq!(m.mission_sel, 0, "a new listing starts at its top");
    let msg = snapshot_of(&svc, &m);
    assert_eq!(ids(&msg), ["m-1", "m-2", "m-5"]);
    update(&mut m, msg);
    assert_eq!(m.snap.listed, 3);
    let text = crate::board::view::tests::frame(&m);
    assert!(
        text.contains("Missions 3 open of 6 (terminal hidden) by state"),
        "{text}"
    );
    assert!(text.contains("⚠ host gone"), "{text}");

    // A page deep in the listing reads only its window, across the group's edge.
    let q = super::model::Query {
        offset: 2,
        limit: 2,
        ..Default::default()
    };
    let src = Source::open(&svc.host, Box::new(|| (0, 0)), false).unwrap();
    let page = snapshot::build(&src, &q);
    let got: Vec<&str> = page.rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(got, ["m-4", "m-5"]);
    // A filter searches the same order.
    let q = super::model::Query {
        limit: 10,
        filter: "work".into(),
        ..Default::default()
    };
    let got: Vec<String> = snapshot::build(&src, &q)
        .rows
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(got, ["m-2", "m-4", "m-5", "m-6", "m-3"]);
}

#[test]
fn r_re_fires_the_selected_mission_after_a_confirm() {
    let mut m = model(120, 40, false);
    assert!(key(&mut m, KeyCode::Char('R')).is_empty());
    match &m.mode {
        Mode::Confirm(c) => assert_eq!(
            c.kind,
            ConfirmKind::Refire {
                mission_id: "a1b2c3d4-0000".into(),
                agent: "demo".into(),
                envelope: "default".into(),
                intent: "ask-then-land: rename the config env var".into(),
            }
        ),
        other => panic!("{other:?}"),
    }
    assert!(!m.mode.eq(&Mode::Board));
    assert_eq!(
        key(&mut m, KeyCode::Char('y')),
        vec![Effect::Refire {
            mission_id: "a1b2c3d4-0000".into()
        }]
    );
    assert_eq!(m.mode, Mode::Board);
    // No stays no.
    key(&mut m, KeyCode::Char('R'));
    assert!(key(&mut m, KeyCode::Char('n')).is_empty());
    assert_eq!(m.mode, Mode::Board);
}

#[test]
fn the_detail_pane_focuses_scrolls_and_zooms() {
    let mut m = model(80, 24, false);
    key(&mut m, KeyCode::Char('5'));
    assert_eq!(m.focus, Pane::Detail);
    let max = crate::board::view::detail_scroll_max(&m, m.now_ms);
    assert!(max > 0, "the fixture's detail overflows the 80x24 pane");
    key(&mut m, KeyCode::Char('j'));
    key(&mut m, KeyCode::Char('j'));
    assert_eq!(m.detail_scroll, 2);
    assert_eq!(m.mission_sel, 0, "j scrolls the detail, not the table");
    key(&mut m, KeyCode::Char('G'));
    assert_eq!(m.detail_scroll, max);
    key(&mut m, KeyCode::Char('j'));
    assert_eq!(m.detail_scroll, max, "no scrolling past the end");
    let text = crate::board::view::tests::frame(&m);
    assert!(
        text.contains("refs: docs/config.md, src/config.rs"),
        "{text}"
    );

    key(&mut m, KeyCode::Char('z'));
    assert!(m.detail_zoom);
    let zoomed_max = crate::board::view::detail_scroll_max(&m, m.now_ms);
    assert!(zoomed_max < max, "the full screen shows more at once");
    let text = crate::board::view::tests::frame(&m);
    assert!(text.contains("(zoomed: z or Esc returns)"), "{text}");
    assert!(
        !text.contains("Pending asks"),
        "zoomed, the pane covers the board"
    );
    key(&mut m, KeyCode::Esc);
    assert!(!m.detail_zoom);
    key(&mut m, KeyCode::Char('z'));
    key(&mut m, KeyCode::Char('z'));
    assert!(!m.detail_zoom);

    // Another mission selected: its detail starts at the top.
    key(&mut m, KeyCode::Char('1'));
    key(&mut m, KeyCode::Char('j'));
    assert_eq!((m.mission_sel, m.detail_scroll), (1, 0));
}

#[test]
fn the_detail_follows_the_selected_ask_or_inbox_item_and_enter_opens_an_item() {
    let mut m = model(120, 40, false);
    assert_eq!(
        m.query().detail_for,
        None,
        "the table's selection, by default"
    );
    key(&mut m, KeyCode::Char('2'));
    key(&mut m, KeyCode::Char('j'));
    assert_eq!(m.query().detail_for.as_deref(), Some("f6a7b8c9-0000"));
    assert_eq!(m.detail_target().as_deref(), Some("f6a7b8c9-0000"));
    // Focusing the detail keeps what it follows.
    key(&mut m, KeyCode::Tab);
    key(&mut m, KeyCode::BackTab);
    key(&mut m, KeyCode::Char('5'));
    assert_eq!(m.query().detail_for.as_deref(), Some("f6a7b8c9-0000"));

    key(&mut m, KeyCode::Char('3'));
    assert_eq!(m.query().detail_for.as_deref(), Some("b2c3d4e5-0000"));
    assert!(
        key(&mut m, KeyCode::Enter).is_empty(),
        "Enter opens, never acks"
    );
    assert!(m.detail_zoom);
    assert_eq!((m.focus, m.detail_from), (Pane::Detail, Pane::Inbox));
    key(&mut m, KeyCode::Esc);
    key(&mut m, KeyCode::Char('1'));
    assert_eq!(m.query().detail_for, None);
}

#[test]
fn a_and_d_on_the_asks_pane_decide_a_gated_call_in_place() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('2'));
    // The first ask is a question: `a` opens its answer pane instead.
    assert!(key(&mut m, KeyCode::Char('a')).is_empty());
    assert_eq!(
        m.mode,
        Mode::Answering {
            ask_id: "ask-1111-question".into()
        }
    );
    key(&mut m, KeyCode::Esc);
    key(&mut m, KeyCode::Char('j'));
    assert_eq!(
        key(&mut m, KeyCode::Char('d')),
        vec![Effect::Verdict {
            ask_id: "ask-2222-permission".into(),
            verdict: OperatorVerdict::Deny
        }]
    );
    assert_eq!(m.mode, Mode::Board);
    // On its way: a second key sends nothing more.
    assert!(key(&mut m, KeyCode::Char('a')).is_empty());
    update(
        &mut m,
        Msg::VerdictDone {
            ask_id: "ask-2222-permission".into(),
            result: Err("ask ask-2222 was already answered".into()),
        },
    );
    assert_eq!(
        key(&mut m, KeyCode::Char('a')),
        vec![Effect::Verdict {
            ask_id: "ask-2222-permission".into(),
            verdict: OperatorVerdict::Approve
        }]
    );
    // `d` off the asks pane decides nothing.
    key(&mut m, KeyCode::Char('1'));
    assert!(key(&mut m, KeyCode::Char('d')).is_empty());
}

#[test]
fn space_marks_inbox_items_and_shift_a_acks_them_through_the_cli_s_call() {
    let (_dir, svc, _ask) = world();
    let missions = svc.host.missions();
    for s in ["first", "second", "third"] {
        missions
            .add_report(
                "m-1",
                crate::mission::ReportInput {
                    kind: "progress".into(),
                    summary: s.into(),
                    ..Default::default()
                },
            )
            .unwrap();
    }
    let mut m = model(120, 40, false);
    let msg = snapshot_of(&svc, &m);
    update(&mut m, msg);
    assert_eq!((m.snap.inbox.len(), m.snap.inbox_total), (3, 3));
    key(&mut m, KeyCode::Char('3'));
    key(&mut m, KeyCode::Char(' '));
    assert_eq!(m.inbox_sel, 1, "Space marks and moves on");
    key(&mut m, KeyCode::Char(' '));
    key(&mut m, KeyCode::Char('k'));
    // Space again unmarks.
    key(&mut m, KeyCode::Char(' '));
    let marked = vec![m.snap.inbox[0].id.clone()];
    assert_eq!(m.marked.iter().cloned().collect::<Vec<_>>(), marked);
    let text = crate::board::view::tests::frame(&m);
    assert!(text.contains("Inbox 3 unacked · 1 marked"), "{text}");
    let fx = key(&mut m, KeyCode::Char('A'));
    assert_eq!(
        fx,
        vec![Effect::AckMany {
            inbox_ids: marked.clone()
        }]
    );
    assert!(m.marked.is_empty());
    let done = run_effect(fx[0].clone(), &svc);
    assert!(
        matches!(&done, Msg::AckDone(Ok(t)) if t == "acknowledged 1 inbox item(s)"),
        "{done:?}"
    );
    assert!(missions.inbox_item(&marked[0]).unwrap().acked);
    assert_eq!(missions.inbox_count(false).unwrap(), 2);

    // Nothing marked: `A` acks every item shown.
    let msg = snapshot_of(&svc, &m);
    update(&mut m, msg);
    let fx = key(&mut m, KeyCode::Char('A'));
    let done = run_effect(fx[0].clone(), &svc);
    assert!(
        matches!(&done, Msg::AckDone(Ok(t)) if t == "acknowledged 2 inbox item(s)"),
        "{done:?}"
    );
    assert_eq!(missions.inbox_count(false).unwrap(), 0);
    // One that fails does not stop the rest, and the toast says which.
    let some_gone = Effect::AckMany {
        inbox_ids: vec!["no-such-item".into(), marked[0].clone()],
    };
    let again = run_effect(some_gone, &svc);
    assert!(
        matches!(&again, Msg::AckDone(Err(e)) if e.starts_with("acknowledged 1 of 2 inbox item(s); no-such-")),
        "{again:?}"
    );
    let msg = snapshot_of(&svc, &m);
    update(&mut m, msg);
    assert!(key(&mut m, KeyCode::Char('A')).is_empty());
}

#[test]
fn titles_count_what_they_do_not_show() {
    let mut m = model(120, 40, false);
    let mut s = (*m.snap).clone();
    s.pending_total = 607;
    s.inbox_total = 350;
    m.snap = Arc::new(s);
    let text = crate::board::view::tests::frame(&m);
    assert!(text.contains("Pending asks 2 of 607 "), "{text}");
    assert!(text.contains("Inbox 1 of 350 unacked "), "{text}");
    // A filter over more missions than it scans says how far it looked.
    let mut s = (*m.snap).clone();
    s.listed = 7000;
    s.matched = Some(3);
    m.snap = Arc::new(s);
    m.filter = "tidy".into();
    m.size = ratatui::layout::Rect::new(0, 0, 80, 24);
    let text = crate::board::view::tests::frame(&m);
    assert!(
        text.contains("/tidy (3 matched of 5,000 scanned)"),
        "{text}"
    );
}

#[test]
fn a_mission_hosted_on_another_machine_is_gone_once_its_heartbeat_is_stale() {
    use super::model::Needs;
    let (_dir, svc, _ask) = world();
    let missions = svc.host.missions();
    missions
        .create(NewMission {
            id: "m-far".into(),
            ..crate::mission::NewMission::new(
                "demo",
                crate::mission::Intent::new("work elsewhere").unwrap(),
                crate::mission::EnvelopeName::new("default").unwrap(),
            )
        })
        .unwrap();
    // Its host: another machine's process (a pid that runs here proves nothing).
    let far = crate::host::HostId {
        id: "far-host".into(),
        machine: "far-away".into(),
        pid: std::process::id(),
        start: "elsewhere".into(),
    };
    crate::mission::hosts::Hosts::new(missions.store().clone())
        .announce(&far)
        .unwrap();
    set(
        &svc,
        "m-far",
        "host_id = 'far-host', host_machine = 'far-away', host_start = 'elsewhere'",
    );
    let m = model(120, 40, false);
    let row = |msg: Msg| match msg {
        Msg::Snapshot(s) => s.rows.iter().find(|r| r.id == "m-far").cloned().unwrap(),
        other => panic!("{other:?}"),
    };
    let beating = row(snapshot_of(&svc, &m));
    assert_eq!((beating.host.as_str(), beating.needs), ("far-away", None));
    missions
        .store()
        .with(|c| {
            c.execute(
                "UPDATE hosts SET heartbeat_at = 0 WHERE id = 'far-host'",
                [],
            )
        })
        .unwrap();
    let stale = row(snapshot_of(&svc, &m));
    assert_eq!(stale.needs, Some(Needs::HostGone));
}

#[test]
fn the_picker_s_tab_cycles_here_the_queue_and_each_live_host_label() {
    use crate::board::model::Runs;
    let mut m = model(120, 40, false);
    let mut snap = (*m.snap).clone();
    let host = |labels: &[&str]| crate::mission::hosts::HostRow {
        id: "h".into(),
        machine: "box".into(),
        pid: 1,
        started_at: 0,
        heartbeat_at: 0,
        skew_ms: None,
        width: Some(2),
        load: Some(0),
        labels: labels.iter().map(|l| l.to_string()).collect(),
    };
    snap.hosts = vec![host(&["gpu"]), host(&["gpu", "arm"])];
    m.snap = Arc::new(snap);
    m.mode = Mode::Picking(super::model::Picker::new());
    let runs = |m: &Model| match &m.mode {
        Mode::Picking(p) => p.runs.clone(),
        _ => panic!("the picker closed"),
    };
    assert_eq!(runs(&m), Runs::Here);
    let seen: Vec<Runs> = (0..4)
        .map(|_| {
            key(&mut m, KeyCode::Tab);
            runs(&m)
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            Runs::Queued(None),
            Runs::Queued(Some("arm".into())),
            Runs::Queued(Some("gpu".into())),
            Runs::Here,
        ]
    );
}

#[test]
fn revoke_ends_a_web_device_from_the_command_line() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "revoke phone");
    assert_eq!(
        key(&mut m, KeyCode::Enter),
        vec![Effect::Revoke {
            device: "phone".into()
        }]
    );
    update(
        &mut m,
        Msg::RevokeDone(Ok(
            "device phone revoked: its next request is refused".into()
        )),
    );
    assert_eq!(
        m.toasts.last().map(|t| (&t.text[..], t.error)),
        Some(("device phone revoked: its next request is refused", false))
    );
    // Without a name it says what it takes, and does nothing.
    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "revoke");
    assert_eq!(key(&mut m, KeyCode::Enter), vec![]);
    assert!(
        m.toasts
            .last()
            .unwrap()
            .text
            .starts_with("`:revoke <device>`")
    );
    // `:revoke allowance <id>` ends an allow-always instead.
    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "revoke allowance 1a2b3c4d");
    assert_eq!(
        key(&mut m, KeyCode::Enter),
        vec![Effect::RevokeAllowance {
            id: "1a2b3c4d".into()
        }]
    );
}

#[test]
fn colon_schedules_opens_the_schedules_panel_and_esc_closes_it() {
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "schedules");
    assert_eq!(key(&mut m, KeyCode::Enter), vec![]);
    assert_eq!(m.mode, Mode::Schedules);
    assert!(m.query().schedules > 0);
    key(&mut m, KeyCode::Esc);
    assert_eq!(m.mode, Mode::Board);
    assert_eq!(m.query().schedules, 0);
}

/// Picker data with two templates: `triage` (a required `repo`, a `label` with a
/// default) and `broken` (a file that does not load).
fn with_templates() -> super::model::PickerData {
    use crate::ops::fire::{ParamEntry, TemplateEntry};
    super::model::PickerData {
        templates: vec![
            TemplateEntry {
                name: "broken".into(),
                params: vec![],
                error: Some("unknown field `agnet`".into()),
            },
            TemplateEntry {
                name: "triage".into(),
                params: vec![
                    ParamEntry {
                        name: "label".into(),
                        description: "the issue label".into(),
                        default: Some("bug".into()),
                    },
                    ParamEntry {
                        name: "repo".into(),
                        description: "owner/name of the repository".into(),
                        default: None,
                    },
                ],
                error: None,
            },
        ],
        ..Default::default()
    }
}

#[test]
fn the_picker_fires_a_template_with_the_parameters_typed() {
    use crate::board::model::{PickStep, Runs};
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char('f'));
    update(&mut m, Msg::PickerLoaded(Ok(with_templates())));
    let step = |m: &Model| match &m.mode {
        Mode::Picking(p) => (p.step, p.error.clone()),
        _ => panic!("the picker closed"),
    };
    key(&mut m, KeyCode::Char('t'));
    assert_eq!(step(&m), (PickStep::Template, None));
    // A template that does not load is refused, saying why.
    assert_eq!(key(&mut m, KeyCode::Enter), vec![]);
    assert_eq!(
        step(&m),
        (
            PickStep::Template,
            Some("template \"broken\" does not load: unknown field `agnet`".into())
        )
    );
    key(&mut m, KeyCode::Char('j'));
    key(&mut m, KeyCode::Enter);
    assert_eq!(step(&m), (PickStep::Params, None));
    // Each parameter is named with what it is and its default.
    let screen = super::view::tests::frame(&m);
    assert!(
        screen.contains("label (the issue label; default \"bug\")"),
        "{screen}"
    );
    assert!(
        screen.contains("repo (owner/name of the repository; required)"),
        "{screen}"
    );
    // Letters are text here (`j`, `t` included); the arrows move between fields;
    // an empty field gives nothing, so the default or the verb's refusal applies.
    key(&mut m, KeyCode::Down);
    typed(&mut m, "acme/jt");
    key(&mut m, KeyCode::Tab);
    assert_eq!(
        key(&mut m, KeyCode::Enter),
        vec![Effect::FireTemplate {
            name: "triage".into(),
            pairs: vec![("repo".into(), "acme/jt".into())],
            runs: Runs::Queued(None),
        }]
    );
    // The verb's refusal keeps the picker open with its exact text.
    update(
        &mut m,
        Msg::Fired(Err("template \"triage\": missing template parameter: give repo=… (owner/name of the repository)".into())),
    );
    assert!(
        matches!(&m.mode, Mode::Picking(p) if p.step == PickStep::Params
        && p.error.as_deref() == Some("template \"triage\": missing template parameter: give repo=… (owner/name of the repository)"))
    );
    // Back to the templates, then to the envelopes.
    update(
        &mut m,
        Msg::Term(Event::Key(KeyEvent::new(
            KeyCode::BackTab,
            KeyModifiers::SHIFT,
        ))),
    );
    assert_eq!(step(&m).0, PickStep::Template);
    update(&mut m, Msg::Fired(Ok("Mission fired".into())));
    assert_eq!(m.mode, Mode::Board);

    // With no template on the search path, `t` says how to write one.
    key(&mut m, KeyCode::Char('f'));
    update(&mut m, Msg::PickerLoaded(Ok(Default::default())));
    key(&mut m, KeyCode::Char('t'));
    assert_eq!(
        step(&m),
        (
            PickStep::Envelope,
            Some(super::picker::NO_TEMPLATES.to_string())
        )
    );
}

#[test]
fn the_command_line_fires_a_template_with_its_parameters() {
    use crate::board::model::Runs;
    let mut m = model(120, 40, false);
    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "mission --template triage repo=acme/api label=p1");
    assert_eq!(
        key(&mut m, KeyCode::Enter),
        vec![Effect::FireTemplate {
            name: "triage".into(),
            pairs: vec![
                ("repo".into(), "acme/api".into()),
                ("label".into(), "p1".into())
            ],
            runs: Runs::Here,
        }]
    );
    key(&mut m, KeyCode::Char(':'));
    typed(&mut m, "mission --template triage acme/api");
    assert_eq!(key(&mut m, KeyCode::Enter), vec![]);
    assert_eq!(
        m.toasts.last().map(|t| (&t.text[..], t.error)),
        Some((
            "template parameter \"acme/api\" must be written key=value",
            true
        ))
    );
}

/// The template fire against a real store, through the same verb as `mission fire
/// --template`: its refusals (missing, unknown, not one line) record nothing; a
/// good fire is queued with the intent its parameters made.
#[test]
fn a_template_fired_from_the_board_is_refused_or_queued_as_the_command_line_does() {
    use crate::board::model::Runs;
    let (dir, svc, _) = world();
    let home = dir.path().join("home");
    crate::presets::seed_policies_quietly(&home).unwrap();
    std::fs::create_dir_all(home.join("templates")).unwrap();
    std::fs::write(
        home.join("templates/triage.toml"),
        "agent = \"claude\"\nenvelope = \"default\"\nintent = \"Triage the {{label}} issues of {{repo}}\"\n\
[params.repo]\ndescription = \"owner/name of the repository\"\n[params.label]\ndefault = \"bug\"\n",
    )
    .unwrap();
    let fire = |pairs: &[(&str, &str)]| {
        run_effect(
            Effect::FireTemplate {
                name: "triage".into(),
                pairs: pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                runs: Runs::Queued(None),
            },
            &svc,
        )
    };
    let refused = |msg: Msg| match msg {
        Msg::Fired(Err(e)) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(fire(&[])),
        "template \"triage\": missing template parameter: give repo=… (owner/name of the repository)"
    );
    assert_eq!(
        refused(fire(&[("repo", "a"), ("team", "x")])),
        "template \"triage\": unknown template parameter \"team\": it takes label, repo"
    );
    assert_eq!(
        refused(fire(&[("repo", "a\nb")])),
        "template \"triage\": template parameter \"repo\" must be a single line of text (no line breaks or control characters)"
    );
    assert_eq!(svc.host.missions().list(10).unwrap().len(), 1, "only m-1");
    let Msg::Fired(Ok(text)) = fire(&[("repo", "acme/api")]) else {
        panic!("not fired")
    };
    let queued = svc
        .host
        .missions()
        .list(10)
        .unwrap()
        .into_iter()
        .find(|m| m.id != "m-1")
        .unwrap();
    assert_eq!(queued.intent, "Triage the bug issues of acme/api");
    assert_eq!(queued.status, crate::mission::Status::Queued);
    assert_eq!(
        text,
        format!(
            "Mission {} queued from template \"triage\" at position 1: Triage the bug issues of acme/api",
            super::model::short(&queued.id)
        )
    );
}
