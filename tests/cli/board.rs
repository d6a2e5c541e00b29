//! The board: answering in place against the real stub (in process), and black-box
//! runs of the real binary in a real terminal (a pseudo-terminal read through a
//! terminal-emulator parser, `harness::terminal`).

use std::path::Path;
use std::sync::Arc;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use missionboard::board::effects::{self, Services};
use missionboard::board::model::{Mode, Model};
use missionboard::board::snapshot::{self, Source};
use missionboard::board::theme::{Symbols, Theme};
use missionboard::board::update::{Msg, update};
use missionboard::fleet::{DispatchRequest, Fleet};
use missionboard::mission::{EnvelopeName, Intent, Status};
use missionboard::paths::Paths;
use missionboard::presets;
use missionboard::store::Store;
use ratatui::layout::Rect;

use crate::harness::terminal::Terminal;
use crate::harness::{BIN, Background, ForeignLock, Sandbox, wait_for, wait_for_async};

fn press(
    m: &mut Model,
    code: KeyCode,
    mods: KeyModifiers,
) -> Vec<missionboard::board::update::Effect> {
    update(m, Msg::Term(Event::Key(KeyEvent::new(code, mods))))
}

/// The mission once it has left `open`, within 30 s.
async fn come_to_rest(fleet: &Fleet, id: &str) -> missionboard::mission::Mission {
    wait_for_async(30, "the mission to come to rest", || {
        let mission = fleet.missions().require(id).unwrap();
        (mission.status != Status::Open).then_some(mission)
    })
    .await
}

/// Keys in, the answer through the operator path, and the real stub unit carries
/// on and lands its mission.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answering_in_the_board_lets_the_real_stub_land() {
    let sb = Sandbox::new();
    presets::seed(&sb.home, presets::Mode::Upgrade).unwrap();
    sb.write(
        &sb.home.join("agents.toml"),
        &format!("[agents.stub]\ncommand = {BIN:?}\nargs = [\"stub-agent\"]\ndescription = \"test stub\"\n"),
    );
    let paths = Paths::resolve(sb.home.clone(), sb.cwd.clone());
    let store = Store::open(&paths.db_path()).unwrap();
    let fleet = Fleet::with_executable(paths.clone(), store, BIN.into()).unwrap();
    let _teardown = fleet.spawn_teardown();
    let d = fleet
        .dispatch(DispatchRequest {
            agent_name: "stub".into(),
            intent: Intent::new("ask-then-land: proceed with the change to rename the env var")
                .unwrap(),
            envelope: EnvelopeName::new("default").unwrap(),
            cwd: None,
            worktree: false,
            check: Default::default(),
            add_dirs: Vec::new(),
        })
        .await
        .expect("dispatch");
    let svc = Services::new(missionboard::ops::host::Host::over(&paths, fleet.clone()));
    let src = Source::open(&svc.host, Box::new(|| (1, 0)), false).unwrap();
    let mut m = Model::new(Theme::mono(), Symbols::ascii(), Rect::new(0, 0, 120, 40));

    wait_for_async(30, "the stub's question on the board", || {
        let snap = snapshot::build(&src, &m.query());
        update(&mut m, Msg::Snapshot(Arc::new(snap)));
        (!m.snap.asks.is_empty()).then_some(())
    })
    .await;
    assert_eq!(
        m.snap.asks[0].mission_id.as_deref(),
        Some(d.mission_id.as_str())
    );

    press(&mut m, KeyCode::Char('2'), KeyModifiers::NONE);
    press(&mut m, KeyCode::Enter, KeyModifiers::NONE);
    assert!(matches!(m.mode, Mode::Answering { .. }));
    for c in "yes, rename it".chars() {
        press(&mut m, KeyCode::Char(c), KeyModifiers::NONE);
    }
    let fx = press(&mut m, KeyCode::Enter, KeyModifiers::ALT);
    assert_eq!(fx.len(), 1, "{fx:?}");
    let done = {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        effects::spawn(fx[0].clone(), &svc, tx);
        rx.recv().await.expect("the verdict's outcome")
    };
    update(&mut m, done);
    assert_eq!(m.mode, Mode::Board);

    let mission = come_to_rest(&fleet, &d.mission_id).await;
    assert_eq!(mission.status, Status::Landed, "{mission:?}");
    let reports = fleet.missions().reports(&d.mission_id, 50).unwrap();
    assert!(
        reports
            .iter()
            .any(|r| r.summary == "answer was: yes, rename it"),
        "{reports:#?}"
    );
    fleet.shutdown().await;
}

/// `o` mounts the same oracle driver `mission fire --oracle` runs, on the board's own
/// fleet: a routine question of a mission the board hosts is answered as oracle, the
/// trace reaches the board's snapshot, and a second `o` unmounts it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_mounts_its_oracle_and_it_answers_a_routine_question() {
    let sb = Sandbox::new();
    presets::seed(&sb.home, presets::Mode::Upgrade).unwrap();
    sb.write(
        &sb.home.join("agents.toml"),
        &format!("[agents.stub]\ncommand = {BIN:?}\nargs = [\"stub-agent\"]\ndescription = \"test stub\"\n"),
    );
    let dialog = sb.home.join("dialog.json");
    sb.write(
        &dialog,
        &serde_json::json!({"turns": [
            {"tool_calls": [{"name": "oracle.submit_verdict", "arguments":
                {"verdict": "answer", "askId": "{{input.askId}}", "answer": "yes, rename it",
                 "evidence": "{{input.intent}}"}}]}
        ]})
        .to_string(),
    );
    let paths = Paths::resolve(sb.home.clone(), sb.cwd.clone());
    let store = Store::open(&paths.db_path()).unwrap();
    let config = missionboard::config::Config::new(store.clone());
    config.set("opt-in-beta", "true").unwrap();
    config
        .set("model-base-url", &format!("scripted:{}", dialog.display()))
        .unwrap();
    let fleet = Fleet::with_executable(paths.clone(), store, BIN.into()).unwrap();
    let _teardown = fleet.spawn_teardown();
    let svc = Services::new(missionboard::ops::host::Host::over(&paths, fleet.clone()));
    let src = Source::open(&svc.host, Box::new(|| (1, 0)), true).unwrap();
    let mut m = Model::new(Theme::mono(), Symbols::ascii(), Rect::new(0, 0, 120, 40));
    let snap = snapshot::build(&src, &m.query());
    update(&mut m, Msg::Snapshot(Arc::new(snap)));

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let toggle = |m: &mut Model| {
        let fx = press(m, KeyCode::Char('o'), KeyModifiers::NONE);
        assert_eq!(fx.len(), 1, "{fx:?}");
        effects::spawn(fx[0].clone(), &svc, tx.clone());
    };
    toggle(&mut m);
    let toggled = rx.recv().await.unwrap();
    assert!(
        matches!(&toggled, Msg::OracleToggled(Ok(Some(line))) if line.starts_with("Oracle attention driver mounted (chain-oracle-default.json")),
        "{toggled:?}"
    );
    update(&mut m, toggled);
    assert!(m.host.oracle_on);

    let d = fleet
        .dispatch(DispatchRequest {
            agent_name: "stub".into(),
            intent: Intent::new("ask-then-land: proceed with the change to rename the env var")
                .unwrap(),
            envelope: EnvelopeName::new("default").unwrap(),
            cwd: None,
            worktree: false,
            check: Default::default(),
            add_dirs: Vec::new(),
        })
        .await
        .expect("dispatch");
    let mission = come_to_rest(&fleet, &d.mission_id).await;
    assert_eq!(mission.status, Status::Landed, "{mission:?}");
    let asks = fleet.asks().for_mission(&d.mission_id, 10).unwrap();
    assert_eq!(asks.len(), 1, "{asks:?}");
    assert_eq!(
        asks[0].resolution.as_ref().map(|r| r["answeredBy"].clone()),
        Some(serde_json::json!("oracle")),
        "{asks:?}"
    );
    let snap = snapshot::build(&src, &m.query());
    update(&mut m, Msg::Snapshot(Arc::new(snap)));
    assert!(
        m.snap
            .oracle_trace
            .iter()
            .any(|l| l.contains(&format!("reviewing ask {}", asks[0].id))),
        "{:?}",
        m.snap.oracle_trace
    );

    toggle(&mut m);
    let toggled = rx.recv().await.unwrap();
    assert!(
        matches!(toggled, Msg::OracleToggled(Ok(None))),
        "{toggled:?}"
    );
    update(&mut m, toggled);
    assert!(!m.host.oracle_on);
    fleet.shutdown().await;
}

/// The board's command line typed at an interactive shell in a real terminal of the
/// test's own (`harness::terminal`), read back as the screen a user sees.
pub(crate) struct BoardTerminal(Terminal);

impl std::ops::Deref for BoardTerminal {
    type Target = Terminal;

    fn deref(&self) -> &Terminal {
        &self.0
    }
}

impl BoardTerminal {
    /// `q`, then the shell's screen once the board has exited.
    pub(crate) fn quit(&self) -> String {
        self.keys(&["q"]);
        self.wait_screen(30, "the board to exit", |s| {
            s.lines().any(|l| l.starts_with("EXITED:"))
        })
    }

    /// Focus the asks pane, open its selected ask and type `draft` into the answer
    /// pane (not sent: the caller sends it, or edits it first).
    fn draft_answer(&self, draft: &str) {
        self.keys(&["2"]);
        self.keys(&["Enter"]);
        self.wait_screen(10, "the answer pane", |s| s.contains("your answer"));
        self.literal(draft);
        self.wait_screen(10, "the typed answer", |s| s.contains(draft));
    }
}

fn shell_quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

/// `missionboard <args>` against the sandbox, with `env` (shell words) added, typed at
/// an interactive shell with job control — as an operator has, so Ctrl-Z really
/// stops the board and `fg` brings it back — in a 120x40 terminal. It prints
/// `EXITED:<code>` when it ends.
pub(crate) fn board_in_terminal(sb: &Sandbox, env: &str, args: &str) -> BoardTerminal {
    // The board reads the sandbox's store, as its other commands do.
    let store = match &sb.store_url {
        Some(url) => format!("MISSIONBOARD_STORE_URL={}", shell_quote(Path::new(url))),
        None => "-u MISSIONBOARD_STORE_URL".to_string(),
    };
    let command_line = format!(
        "(cd {cwd} && env {store} MISSIONBOARD_HOME={home} HOME={home_parent} LANG=C.UTF-8 TERM=xterm-256color {env} {bin} {args}; echo EXITED:$((0+$?)))",
        cwd = shell_quote(&sb.cwd),
        home = shell_quote(&sb.home),
        home_parent = shell_quote(sb.home.parent().unwrap()),
        bin = shell_quote(Path::new(BIN)),
    );
    let term = Terminal::shell(120, 40);
    term.literal(&command_line);
    term.keys(&["Enter"]);
    BoardTerminal(term)
}

#[test]
fn terminal_demo_shows_states_answers_in_place_and_restores_the_terminal() {
    let sb = Sandbox::new();
    // The operator's editor: appends to the draft it is handed.
    let editor = sb.cwd.join("fake-editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nprintf ', rename it' >> \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let term = board_in_terminal(
        &sb,
        &format!("VISUAL= EDITOR={}", shell_quote(&editor)),
        "board --demo",
    );

    // Missions in several states, and the demo's question waiting.
    let screen = term.wait_screen(
        60,
        "missions in several states and the demo question",
        |s| {
            let states = ["open", "landed", "derailed", "stuck"]
                .iter()
                .filter(|w| s.contains(&format!(" {w} ")))
                .count();
            states >= 3 && s.contains("Should I proceed")
        },
    );
    assert!(screen.contains("Missions"), "{screen}");
    assert!(screen.contains("Pending asks"), "{screen}");
    assert!(screen.contains("oracle not mounted"), "{screen}");

    // Reflow at the 80x24 floor, and back. Each is a full redraw by a debug build
    // while the demo's units run: on a loaded 2-core machine it can take seconds.
    term.resize(80, 24);
    term.wait_screen(30, "the 80x24 reflow", |s| {
        s.lines().count() <= 24
            && s.lines()
                .next()
                // The board's own 80-column frame (the missions pane spans it), not
                // a wider frame the shrunken screen cut at 80.
                .is_some_and(|l| {
                    l.starts_with("╭ Missions") && l.ends_with('╮') && l.chars().count() == 80
                })
    });
    term.resize(120, 40);
    term.wait_screen(30, "the 120x40 reflow", |s| {
        s.lines().next().is_some_and(|l| l.chars().count() == 120)
    });

    // Answer the question in place: focus the asks pane, open the oldest ask (the
    // demo fires its question first), type, send with C-s.
    term.draft_answer("yes");
    // C-o hands the draft to $EDITOR; what it wrote comes back as the draft.
    term.keys(&["C-o"]);
    term.wait_screen(10, "the edited answer", |s| s.contains("yes, rename it"));
    term.keys(&["C-s"]);
    term.wait_screen(10, "the answer pane to close", |s| {
        !s.contains("your answer")
    });

    // The asked mission lands: read back through the CLI against the same home.
    wait_for(60, "the ask-then-land mission to land", || {
        let out = sb.run(&["mission", "list", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).ok()?;
        let landed = v["missions"].as_array()?.iter().any(|m| {
            m["intent"]
                .as_str()
                .is_some_and(|i| i.starts_with("ask-then-land"))
                && m["status"] == "landed"
        });
        landed.then_some(())
    });

    // C-z gives the terminal back to the shell; `fg` brings the board back whole.
    term.keys(&["C-z"]);
    term.wait_screen(10, "the shell's job control to report the stop", |s| {
        s.contains("Stopped") && !s.contains("Pending asks")
    });
    term.literal("fg");
    term.keys(&["Enter"]);
    term.wait_screen(10, "the board to come back", |s| s.contains("Pending asks"));

    // q asks first (the demo's mute mission is still open, hosted here), y leaves
    // it open and quits; the alternate screen is gone and the process exited 0.
    term.keys(&["q"]);
    let dialog = term.wait_screen(10, "the quit dialog", |s| s.contains("Quit the board?"));
    assert!(dialog.contains("mute: audit the logging setup"), "{dialog}");
    term.keys(&["y"]);
    let screen = term.wait_screen(30, "the board to exit", |s| {
        s.lines().any(|l| l.starts_with("EXITED:"))
    });
    assert!(screen.contains("EXITED:0"), "{screen}");
    assert!(screen.contains("missionboard demo home:"), "{screen}");
    assert!(
        !screen.contains("Pending asks"),
        "the board is still on screen:\n{screen}"
    );
}

/// The stub asks "Rename the env var too?", then reports the answer and lands.
const ASK_THEN_LAND: &str = r#"{"name":"t","turns":[{"steps":[{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}]}]}"#;

/// The ask of mission `id` once its run has parked under it.
fn parked_ask_of(sb: &Sandbox, id: &str) -> Option<String> {
    let show = sb.run(&["mission", "show", id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).ok()?;
    v["pendingAsks"]
        .as_array()?
        .iter()
        .find(|a| a["parked"] == true)
        .and_then(|a| a["id"].as_str().map(str::to_string))
}

/// The stub asks a question whose summary tries to smuggle an OSC sequence of its
/// own into the terminal, then waits for the answer.
const HOSTILE_ASK: &str = r#"{"name":"t","turns":[{"steps":[{"ask":{"summary":"Rename the env var too?\u001b]9;pwned\u0007\u001b]777;notify;x;pwned\u001b\\","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}]}]}"#;

/// With `notify = bell,osc,osc777,desktop`, a question arriving rings the bell and
/// sends OSC 9 and OSC 777 — seen in the raw bytes the board writes to its pty, agent
/// text made inert inside them — and runs the notify-send found on PATH. Quitting while the board hosts that open mission asks
/// first, naming it; `n` stays, `:q` asks again, and `s` stops it with the reason
/// (recorded as `mission stop` records it) before the board exits.
#[test]
fn terminal_a_question_notifies_and_quitting_a_host_asks_and_can_stop_its_missions() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(HOSTILE_ASK))]);
    sb.run(&["config", "set", "notify", "desktop,osc777, bell,osc"])
        .ok();
    let listed = sb.run(&["config", "list"]).ok();
    assert!(
        listed
            .stdout
            .lines()
            .any(|l| l.starts_with("notify") && l.contains("bell,osc,osc777,desktop")),
        "{listed:#?}"
    );
    // A notify-send of our own on PATH: it writes down what it was asked to show.
    let bin = sb.cwd.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let shown = sb.cwd.join("notify-send.args");
    let fake = bin.join("notify-send");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" >> {}\n",
            shell_quote(&shown)
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("PATH={}:\"$PATH\"", shell_quote(&bin));
    let term = board_in_terminal(&sb, &path, "board");
    term.wait_screen(30, "the board", |s| s.contains("Pending asks"));
    // Everything the board writes from here on, byte for byte, as the terminal gets it.
    let mark = term.output_mark();

    term.keys(&[":"]);
    term.literal("mission --policy default stub rename the env var");
    term.keys(&["Enter"]);
    term.wait_screen(30, "the question on the board", |s| {
        s.contains("Rename the env var too?")
    });
    let id = wait_for(10, "the mission", || sb.newest_mission());
    let short = &id[..8];
    let bytes = wait_for(10, "the notification in the raw output", || {
        let text = String::from_utf8_lossy(&term.output_since(mark)).into_owned();
        text.contains("\x1b]777;notify;").then_some(text)
    });
    let body = format!("question from stub (mission {short}): Rename the env var too?");
    assert!(
        bytes.contains(&format!("\x07\x1b]9;missionboard: {body}")),
        "no bell and OSC 9 in {bytes:?}"
    );
    assert!(
        bytes.contains(&format!("\x1b]777;notify;missionboard;{body}")),
        "no OSC 777 in {bytes:?}"
    );
    assert!(
        !bytes.contains("\x1b]9;pwned") && !bytes.contains("\x1b]777;notify;x"),
        "the agent's own sequence reached the terminal: {bytes:?}"
    );
    let args = wait_for(10, "notify-send to run", || {
        std::fs::read_to_string(&shown)
            .ok()
            .filter(|a| a.contains("Rename"))
    });
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "--app-name=missionboard",
            "--",
            "missionboard",
            &body as &str
        ],
        "{args:?}"
    );

    // q asks first, naming the hosted mission and what quitting does; n stays.
    term.keys(&["q"]);
    let dialog = term.wait_screen(10, "the quit dialog", |s| s.contains("Quit the board?"));
    assert!(
        dialog.contains("1 open mission(s) hosted by this board:"),
        "{dialog}"
    );
    assert!(
        dialog.contains(&format!("{short}  rename the env var")),
        "{dialog}"
    );
    assert!(dialog.contains("Quitting stops their units"), "{dialog}");
    assert!(dialog.contains("Reason: stopped by operator"), "{dialog}");
    term.keys(&["n"]);
    term.wait_screen(10, "the dialog to close", |s| {
        !s.contains("Quit the board?") && s.contains("Pending asks")
    });
    // `:q` asks the same; s stops the mission with an edited reason, then quits.
    term.keys(&[":"]);
    term.literal("q");
    term.keys(&["Enter"]);
    term.wait_screen(10, "the quit dialog again", |s| {
        s.contains("Quit the board?")
    });
    term.keys(&["e", "C-j"]);
    term.literal("done for today");
    term.keys(&["Enter"]);
    term.wait_screen(10, "the edited reason", |s| {
        s.contains("Reason: done for today")
    });
    term.keys(&["s"]);
    let screen = term.wait_screen(30, "the board to exit", |s| {
        s.lines().any(|l| l.starts_with("EXITED:"))
    });
    assert!(screen.contains("EXITED:0"), "{screen}");
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "abandoned", "{v:#}");
    assert_eq!(v["statusReason"], "done for today", "{v:#}");
}

/// Fire the declared `stub` (its script asks a question) from a host process, wait
/// until its run is parked on that question, then kill the host: the mission id and
/// the ask id, for a board to pick up.
fn parked_on_a_dead_host(sb: &Sandbox) -> (String, String) {
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let host = sb.command(&[
        "mission", "fire", "stub", "rename", "--wait", "--policy", "default",
    ]);
    let host = Background::spawn(host);
    let id = wait_for(20, "the mission", || sb.newest_mission());
    let ask = wait_for(20, "the parked question", || parked_ask_of(sb, &id));
    host.kill();
    (id, ask)
}

/// The one answer path on the board: a run parked under a question whose host was
/// killed resumes in the board's own process when the board answers it, and lands.
#[test]
fn terminal_a_board_answer_resumes_a_parked_run_whose_host_is_gone() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(ASK_THEN_LAND))]);
    let (id, ask) = parked_on_a_dead_host(&sb);

    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the parked question on the board", |s| {
        s.contains("Rename the env var too?")
    });
    term.draft_answer("yes, from the board");
    term.keys(&["C-s"]);
    term.wait_screen(60, "the board to say it resumed the run", |s| {
        s.contains("this board resumed it")
    });
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "landed", "{v:#}");
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(
        reports.stdout.contains("renamed: yes, from the board"),
        "{reports:#?}"
    );
    let asks = sb.run(&["approvals", "list"]).ok();
    assert!(!asks.stdout.contains(&ask), "{asks:#?}");
    let screen = term.quit();
    assert!(screen.contains("EXITED:0"), "{screen}");
}

/// The stub asks, and once answered reports the answer and hangs in that turn.
const ASK_THEN_HANG: &str = r#"{"name":"t","turns":[{"steps":[{"ask":{"summary":"Rename the env var too?","then":[{"report":{"kind":"progress","summary":"resumed: {{answer}}"}},"hang"]}}]}]}"#;

/// The pane says the run an answer unblocks was resumed in the board's process
/// (its host being gone) as soon as its unit is under way, while its turn still
/// runs: nothing the operator reads waits for the turn's end.
#[test]
fn terminal_a_board_answer_says_its_run_resumed_here_while_the_turn_runs_on() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(ASK_THEN_HANG))]);
    let (id, _) = parked_on_a_dead_host(&sb);

    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the parked question on the board", |s| {
        s.contains("Rename the env var too?")
    });
    term.draft_answer("yes");
    term.keys(&["C-s"]);
    let resumed = |sb: &Sandbox| {
        let show = sb.run(&["mission", "reports", &id]).ok();
        show.stdout.contains("resumed: yes")
    };
    wait_for(30, "the resumed turn", || resumed(&sb).then_some(()));
    // The resumed turn hangs: the pane says what it is sure of without waiting for
    // the turn's end — the answer went in, and this board resumed the run.
    let screen = term.wait_screen(10, "the resume's notice", |s| {
        s.contains("this board resumed it")
    });
    assert!(!screen.contains("sending…"), "{screen}");
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "open", "its turn is still running: {v:#}");
    sb.run(&["mission", "stop", &id]).ok();
    let screen = term.quit();
    assert!(screen.contains("EXITED:0"), "{screen}");
}

/// A run the board resumes (its host gone) is the board's own: it counts among the
/// missions this board hosts, so the quit dialog names it, and stopping from the
/// dialog ends it.
#[test]
fn terminal_a_run_the_board_resumes_is_offered_by_its_quit_dialog() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(ASK_THEN_HANG))]);
    let (id, _) = parked_on_a_dead_host(&sb);

    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the parked question on the board", |s| {
        s.contains("Rename the env var too?")
    });
    term.draft_answer("yes");
    term.keys(&["C-s"]);
    wait_for(30, "the resumed turn", || {
        let reports = sb.run(&["mission", "reports", &id]).ok();
        reports.stdout.contains("resumed: yes").then_some(())
    });
    term.keys(&["q"]);
    let dialog = term.wait_screen(10, "the quit dialog", |s| s.contains("Quit the board?"));
    assert!(
        dialog.contains("1 open mission(s) hosted by this board:"),
        "{dialog}"
    );
    assert!(
        dialog.contains(&format!("{}  rename", &id[..8])),
        "{dialog}"
    );
    term.keys(&["s"]);
    let screen = term.wait_screen(30, "the board to exit", |s| {
        s.lines().any(|l| l.starts_with("EXITED:"))
    });
    assert!(screen.contains("EXITED:0"), "{screen}");
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "abandoned", "{v:#}");
}

/// A gated call whose host died expires while a board is up: the board applies the
/// on-timeout denial and settles the run on its own, with nobody reading approvals.
#[test]
fn terminal_a_board_settles_a_run_stranded_by_an_expired_ask_on_its_own() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(
            r#"{"name":"t","turns":[{"steps":[{"permission":{"title":"rm -rf build","kind":"execute","report":true,"on_deny":"finish_stuck"}},{"finish":"landed"}]}]}"#,
        ),
    )]);
    sb.write(
        &sb.home.join("hitl-policy-gate.json"),
        r#"{"default_action":"allow","rules":[{"tools":"local_shell","tool":"local_shell","action":"approve","timeout_s":2}]}"#,
    );
    let host = sb.command(&[
        "mission", "fire", "stub", "clean", "--wait", "--policy", "gate",
    ]);
    let host = Background::spawn(host);
    let id = wait_for(20, "the mission", || sb.newest_mission());
    let pending = |sb: &Sandbox| -> serde_json::Value {
        let show = sb.run(&["mission", "show", &id, "--json"]).ok();
        serde_json::from_str(&show.stdout).unwrap()
    };
    wait_for(20, "the permission ask", || {
        (!pending(&sb)["pendingAsks"].as_array().unwrap().is_empty()).then_some(())
    });
    host.kill();

    let term = board_in_terminal(&sb, "", "board");
    // Waited on through `mission show`, a read that never settles an ask.
    let v = wait_for(30, "the run to be settled", || {
        let v = pending(&sb);
        (v["status"] != "open").then_some(v)
    });
    assert_eq!(v["status"], "stuck", "{v:#}");
    assert_eq!(v["asks"][0]["state"], "expired", "{v:#}");
    term.wait_screen(10, "the board's notice", |s| {
        s.contains("stranded run(s) (their host was gone) in this board")
    });
    let screen = term.quit();
    assert!(screen.contains("EXITED:0"), "{screen}");
}

/// A screen with its clock taken out: ages tick while the test looks.
fn without_ages(screen: &str) -> String {
    let mut out = String::new();
    let mut prev = ' ';
    for c in screen.chars() {
        let c = if c.is_ascii_digit() { '#' } else { c };
        if !(c == prev && (c == '#' || c == ' ')) {
            out.push(c);
        }
        prev = c;
    }
    out
}

/// Wide (CJK, emoji, a ZWJ sequence), zero-width (ZWJ, U+200B) and combining text in
/// a real terminal emulator: after an overlay over it closes, and after the
/// selection moves to an ASCII mission, the screen is exactly what a full repaint
/// (C-l) draws — no cell is left stale.
#[test]
fn terminal_wide_zero_width_and_combining_text_leaves_no_stale_cells() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let wide = "日本語の説明を書く 👩‍💻 te\u{301}st a\u{200b}b\u{200d}c";
    assert_eq!(sb.fire("stub", "land: plain ascii notes", &[]).code, 0);
    let fired = sb.fire(
        "stub",
        &format!("land: {wide} x{wide} {wide} x{wide} {wide}"),
        &[],
    );
    assert_eq!(fired.code, 0, "{fired:#?}");

    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "both missions", |s| {
        s.contains("Missions 2") && s.contains("Intent: land: 日本語")
    });
    let repainted = |what: &str| {
        let before = without_ages(&term.settled());
        // Compared after the full repaint C-l asks for, not before it arrives.
        let after = without_ages(&term.settled_after(&["C-l"]));
        assert_eq!(before, after, "stale cells {what}");
    };
    // The help overlay's left edge lands inside the wide text of the detail pane.
    term.keys(&["?"]);
    term.wait_screen(10, "the help overlay", |s| s.contains("every key"));
    term.keys(&["Escape"]);
    term.wait_screen(10, "the help to close", |s| !s.contains("every key"));
    repainted("after the help overlay closed");
    term.keys(&["j"]);
    term.wait_screen(10, "the ASCII mission's detail", |s| {
        s.contains("Intent: land: plain ascii notes")
    });
    repainted("after the detail went from wide text to ASCII");
    let screen = term.quit();
    assert!(screen.contains("EXITED:0"), "{screen}");
}

/// The signals that end a long-lived command: each of SIGINT, SIGTERM and SIGHUP ends
/// `mission fire --wait` on a unit still working its turn with its interrupted line
/// and exit code 1. (A mute unit would not do: its two silent turns end the wait on
/// their own, and on a loaded machine before the signal is sent.)
#[test]
fn a_signal_ends_the_wait_of_mission_fire() {
    use std::io::BufRead;
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut fire = sb.command(&[
            "mission",
            "fire",
            "stub",
            "hang: keep working",
            "--wait",
            "--policy",
            "default",
        ]);
        fire.stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = Background::own(fire.spawn().unwrap());
        let mut out = std::io::BufReader::new(child.child().stdout.take().unwrap());
        let mut seen = String::new();
        while !seen.contains("Waiting for a terminal status") {
            let mut line = String::new();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "fire ended early: {seen}"
            );
            seen.push_str(&line);
        }
        // SAFETY: kill(2) on a child of ours that has not been reaped.
        assert_eq!(unsafe { libc::kill(child.pid() as i32, signal) }, 0);
        std::io::Read::read_to_string(&mut out, &mut seen).unwrap();
        let status = child.child().wait().unwrap();
        assert_eq!(status.code(), Some(1), "signal {signal}: {seen}");
        assert!(
            seen.contains("wait interrupted: the unit is torn down with this process"),
            "signal {signal}: {seen}"
        );
    }
}

/// While another process holds the database's write lock, the board's own fires wait
/// on the store, and the board still answers every key: the help overlay opens,
/// filters as typed and closes — all before the lock is released. The fires land
/// once it is.
#[test]
fn the_board_redraws_on_keys_while_another_process_holds_the_write_lock() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(r#"{"name":"t","turns":[{"steps":[{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}]}]}"#),
    )]);
    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the board", |s| s.contains("Pending asks"));

    let lock = ForeignLock::hold(&sb.db(), 20);
    const FIRES: usize = 4;
    for n in 1..=FIRES {
        term.keys(&[":"]);
        term.literal(&format!("mission --policy default stub held fire {n}"));
        term.keys(&["Enter"]);
    }
    term.keys(&["?"]);
    term.wait_screen(10, "the help overlay", |s| s.contains("Help — every key"));
    // One key at a time, each drawn before the next is sent: the fires reach the
    // store (and wait there) while the keys are still coming.
    let mut typed = String::new();
    for c in "suspend the board".chars() {
        typed.push(c);
        term.literal(&c.to_string());
        let shown = format!("filter: {typed}_");
        term.wait_screen(10, "the typed filter", |s| s.contains(&shown));
    }
    term.keys(&["Escape"]);
    term.wait_screen(10, "the help overlay to close", |s| {
        !s.contains("Help — every key")
    });
    assert!(
        lock.is_held(),
        "every key was drawn while the other process still held the lock"
    );
    lock.release();

    wait_for(60, "the board's fires to land", || {
        let out = sb.run(&["mission", "list", "--json"]);
        let v: serde_json::Value = serde_json::from_str(&out.stdout).ok()?;
        let landed = v["missions"]
            .as_array()?
            .iter()
            .filter(|m| {
                m["intent"]
                    .as_str()
                    .is_some_and(|i| i.starts_with("held fire"))
                    && m["status"] == "landed"
            })
            .count();
        (landed == FIRES).then_some(())
    });
    let screen = term.quit();
    assert!(screen.contains("EXITED:0"), "{screen}");
}

/// The stub reports that it started, then hangs: its mission stays open as long as
/// its host lives.
const HANG: &str = r#"{"name":"h","turns":[{"steps":[{"report":{"kind":"progress","summary":"started"}},"hang"]}]}"#;

/// What needs you first, in a real terminal: a mission whose host was killed leads
/// the table as "host gone"; `s` re-sorts it, `t` hides the terminal missions, the
/// detail pane takes the focus and zooms, and `R` re-fires the dead mission.
#[test]
fn terminal_the_board_puts_a_dead_host_first_sorts_and_opens_the_detail() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None), ("hanger", Some(HANG))]);
    sb.fire("stub", "land: write the release notes", &[]).ok();
    let host = sb.command(&[
        "mission",
        "fire",
        "hanger",
        "hang: audit the logging setup",
        "--wait",
        "--policy",
        "default",
    ]);
    let host = Background::spawn(host);
    let dead = wait_for(20, "the hanging mission's first report", || {
        let id = sb.newest_mission()?;
        let reports = sb.run(&["mission", "reports", &id]).ok();
        reports.stdout.contains("started").then_some(id)
    });
    host.kill();

    let term = board_in_terminal(&sb, "", "board");
    let screen = term.wait_screen(30, "the dead host flagged on top", |s| {
        s.contains("by state") && s.contains("1 need you")
    });
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| l.contains("hang: audit") || l.contains("land: write"))
        .collect();
    assert!(
        rows.first().is_some_and(|l| l.contains("⚠ host gone")),
        "{screen}"
    );
    assert!(screen.contains("✓ landed"), "{screen}");

    term.keys(&["s"]);
    term.wait_screen(10, "the age sort", |s| s.contains("by age"));
    term.keys(&["s"]);
    term.wait_screen(10, "the heartbeat sort", |s| s.contains("by heartbeat"));
    term.keys(&["t"]);
    let hidden = term.wait_screen(10, "the terminal missions hidden", |s| {
        s.contains("Missions 1 open of 2 (terminal hidden)")
    });
    assert!(!hidden.contains("✓ landed"), "{hidden}");
    assert!(hidden.contains("⚠ host gone"), "{hidden}");

    // The detail pane: focused, zoomed over the board, and back.
    term.keys(&["5"]);
    term.keys(&["z"]);
    let zoomed = term.wait_screen(10, "the zoomed detail", |s| {
        s.contains("(zoomed: z or Esc returns)")
    });
    assert!(
        zoomed.contains("Needs you: its host process is gone"),
        "{zoomed}"
    );
    assert!(zoomed.contains("Spend: "), "{zoomed}");
    assert!(zoomed.contains("progress started"), "{zoomed}");
    assert!(!zoomed.contains("Pending asks"), "{zoomed}");
    term.keys(&["Escape"]);
    term.wait_screen(10, "the board again", |s| s.contains("Pending asks"));

    // R re-fires the dead mission as a new one, after a confirm.
    term.keys(&["1"]);
    term.keys(&["R"]);
    term.wait_screen(10, "the re-fire confirm", |s| s.contains("Re-fire mission"));
    term.keys(&["y"]);
    term.wait_screen(30, "the re-fire's toast", |s| {
        s.contains("re-fired mission")
    });
    let refired = wait_for(20, "the re-fired mission", || {
        sb.newest_mission().filter(|id| *id != dead)
    });
    let show = sb.run(&["mission", "show", &refired, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["intent"], "hang: audit the logging setup", "{v:#}");
    assert_eq!(v["agentName"], "hanger", "{v:#}");
    sb.run(&["mission", "stop", &refired]).ok();
    term.keys(&["C-c"]);
    let screen = term.wait_screen(30, "the board to exit", |s| {
        s.lines().any(|l| l.starts_with("EXITED:"))
    });
    assert!(screen.contains("EXITED:0"), "{screen}");
}

/// The picker's Tab sends a mission to the queue (`mission fire --queue`): the board
/// shows it `queued #1`, waiting for a `missionboard host`; a host started afterwards
/// claims it, the detail names that host as a `missionboard host`, quitting the board
/// asks nothing about a mission the host runs, and the host lands it.
#[test]
fn terminal_a_mission_queued_from_the_picker_is_claimed_and_landed_by_a_host() {
    let sb = Sandbox::new();
    let steps = r#"{"report":{"summary":"working"}},{"sleep":5000},{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}"#;
    sb.declare_stubs(&[("stub", Some(&crate::harness::script(steps)))]);
    sb.run(&["config", "set", "default-mission-policy", "default"])
        .ok();
    sb.run(&["config", "set", "default-mission-agent", "stub"])
        .ok();
    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the board", |s| s.contains("Pending asks"));
    // The default envelope and agent are preselected: on to the intent.
    term.keys(&["f"]);
    term.wait_screen(10, "the envelope step", |s| s.contains("Envelopes"));
    term.keys(&["Enter"]);
    term.wait_screen(10, "the agent step", |s| s.contains("Agents (declared"));
    term.keys(&["Enter"]);
    term.wait_screen(10, "the intent step", |s| {
        s.contains("Runs:     on this board")
    });
    term.literal("tidy the readme");
    term.keys(&["Tab"]);
    term.wait_screen(10, "the queue chosen", |s| {
        s.contains("Runs:     queued for a `missionboard host`")
    });
    term.keys(&["Enter"]);
    let screen = term.wait_screen(10, "the queued mission on the board", |s| {
        s.contains("queued #1")
    });
    assert!(
        screen.contains("queued at position 1") || screen.contains("queued #1"),
        "{screen}"
    );
    let id = wait_for(10, "the mission", || sb.newest_mission());
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "queued", "{v:#}");
    assert_eq!(v["queuePosition"], 1, "{v:#}");
    assert_eq!(v["intent"], "tidy the readme", "{v:#}");

    let host = crate::harness::Background::spawn(sb.command(&["host", "--width", "2"]));
    let screen = term.wait_screen(30, "the host's claim in the detail", |s| {
        s.contains("`missionboard host` (pid")
    });
    assert!(!screen.contains("queued #1"), "{screen}");
    // The board hosts nothing: its quit asks no question.
    let exited = term.quit();
    assert!(exited.contains("EXITED:0"), "{exited}");
    assert!(!exited.contains("Quit the board?"), "{exited}");
    wait_for(60, "the host to land the mission", || {
        let show = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
        (v["status"] == "landed").then_some(())
    });
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(reports.stdout.contains("done"), "{reports:#?}");
    drop(host);
}

#[test]
fn terminal_revoke_ends_a_paired_web_device_from_the_board() {
    let sb = Sandbox::new();
    let devices = missionboard::devices::Devices::new(sb.store());
    let code = devices.start_pairing("phone").unwrap();
    let (_, credential) = devices.redeem(&code).unwrap();
    assert!(devices.authenticate(&credential).unwrap().is_some());

    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the board", |s| s.contains("Pending asks"));
    term.keys(&[":"]);
    term.literal("revoke phone");
    term.keys(&["Enter"]);
    term.wait_screen(30, "the revocation's notice", |s| {
        s.contains("device phone revoked: its next request is refused")
    });
    assert!(devices.authenticate(&credential).unwrap().is_none());
    let listed = sb.run(&["web", "devices", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(v["devices"], serde_json::json!([]), "{v}");

    // A name that is not paired is refused, saying so.
    term.keys(&[":"]);
    term.literal("revoke tablet");
    term.keys(&["Enter"]);
    term.wait_screen(30, "the refusal", |s| s.contains("tablet"));
    let shell = term.quit();
    assert!(shell.contains("EXITED:0"), "{shell}");
}

/// The picker's `t` lists the templates; choosing one asks for each parameter,
/// named with what it is and its default; a required one left empty is refused in
/// the verb's words, and once given the template's mission runs on this board and
/// lands with the intent its parameters made.
#[test]
fn terminal_a_template_fired_from_the_picker_asks_for_its_parameters() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&crate::harness::script(
            r#"{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}"#,
        )),
    )]);
    sb.write(
        &sb.workspace().join("templates/triage.toml"),
        r#"agent = "stub"
envelope = "default"
intent = "Triage the {{label}} issues of {{repo}}"
[params.repo]
description = "owner/name of the repository"
[params.label]
description = "the issue label"
default = "bug"
"#,
    );
    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the board", |s| s.contains("Pending asks"));
    term.keys(&["f"]);
    term.wait_screen(10, "the picker lists the template", |s| {
        s.contains("  triage label=… repo=…")
    });
    term.keys(&["t"]);
    term.wait_screen(10, "the template step", |s| {
        s.contains("Templates (Enter asks for the parameters")
    });
    term.keys(&["Enter"]);
    let screen = term.wait_screen(10, "the parameters step", |s| {
        s.contains("repo (owner/name of the repository; required)")
    });
    assert!(
        screen.contains("label (the issue label; default \"bug\")"),
        "{screen}"
    );
    term.keys(&["Enter"]);
    term.wait_screen(10, "the refusal naming the parameter", |s| {
        s.contains("missing template parameter: give repo=… (owner/name of the repository)")
    });
    assert_eq!(sb.newest_mission(), None, "a refusal records nothing");
    term.keys(&["Down"]);
    term.literal("acme/api");
    term.keys(&["Enter"]);
    term.wait_screen(30, "the fire's notice", |s| {
        s.contains("fired from template \"triage\" at agent \"stub\"")
    });
    let id = wait_for(10, "the mission", || sb.newest_mission());
    wait_for(60, "the mission to land", || {
        let show = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
        (v["status"] == "landed").then_some(v)
    });
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["intent"], "Triage the bug issues of acme/api", "{v:#}");
    assert_eq!(v["agentName"], "stub", "{v:#}");
    let exited = term.quit();
    assert!(exited.contains("EXITED:0"), "{exited}");
}

/// A board hosts units, so it ticks the schedules as a `missionboard host` does
/// (each tick claimed once, into the queue), says so, and `:schedules` shows each
/// schedule's next run and last outcome.
#[test]
fn terminal_a_board_ticks_the_schedules_and_shows_them() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&crate::harness::script(r#"{"finish":"landed"}"#)),
    )]);
    sb.run(&[
        "schedule",
        "add",
        "tick",
        "--cron",
        "@every 2s",
        "stub",
        "tidy the docs",
        "--policy",
        "default",
    ])
    .ok();
    sb.run(&[
        "schedule",
        "add",
        "nightly",
        "--cron",
        "0 3 * * *",
        "stub",
        "refresh",
        "--policy",
        "default",
    ])
    .ok();
    sb.run(&["schedule", "pause", "nightly"]).ok();
    let term = board_in_terminal(&sb, "", "board");
    term.wait_screen(30, "the board", |s| s.contains("Pending asks"));
    // No `missionboard host` runs: the board's own tick queued it.
    let id = wait_for(30, "a mission fired by the schedule", || {
        sb.newest_mission()
    });
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["firedBy"]["kind"], "schedule", "{v:#}");
    assert_eq!(v["firedBy"]["name"], "tick", "{v:#}");
    assert_eq!(v["intent"], "tidy the docs", "{v:#}");

    term.keys(&[":"]);
    term.literal("schedules");
    term.keys(&["Enter"]);
    let screen = term.wait_screen(30, "the schedules panel with an outcome", |s| {
        s.contains("Schedules — next run and last outcome") && s.contains("last: queued mission")
    });
    assert!(screen.contains("nightly              paused"), "{screen}");
    assert!(
        screen.contains("stub: tidy the docs · @every 2s"),
        "{screen}"
    );
    term.keys(&["Escape"]);
    term.wait_screen(10, "the board again", |s| {
        !s.contains("Schedules — next run and last outcome")
    });
    sb.run(&["schedule", "pause", "tick"]).ok();
    let shell = term.quit();
    assert!(shell.contains("EXITED:0"), "{shell}");
}

/// Issue 43: `F` on a rested mission sends it back to its agent with the feedback
/// typed into its dialog; the board hosts the revised run (a new run on the same
/// record, the feedback its next prompt), which lands again through the check.
#[test]
fn terminal_f_on_a_stuck_mission_sends_it_back_with_feedback_and_it_lands_through_its_check() {
    let sb = Sandbox::new();
    // The stub's revise-land scenario lands without `revised.txt`; sent back, it
    // writes the feedback there and lands again.
    sb.declare_stubs(&[("stub", None)]);
    let id = sb.stuck_on_revise_check();
    let check = crate::harness::REVISE_CHECK;
    let short = &id[..8];

    let term = board_in_terminal(&sb, "", "board");
    let screen = term.wait_screen(30, "the stuck mission's check in its detail", |s| {
        s.contains("Check: failed 1 of 1 · `test -f revised.txt")
    });
    assert!(
        screen.contains("▲ stuck · agent stub · envelope once"),
        "{screen}"
    );
    term.keys(&["1"]);
    term.keys(&["F"]);
    let dialog = term.wait_screen(10, "the revise dialog", |s| {
        s.contains(&format!("Revise mission {short}"))
    });
    assert!(
        dialog.contains("It rested stuck; it goes back to its agent, in its own session"),
        "{dialog}"
    );
    // Nothing is sent without feedback: Enter ends the typing, y asks for it.
    term.keys(&["Enter"]);
    term.keys(&["y"]);
    term.wait_screen(10, "the empty feedback refused", |s| {
        s.contains("type the feedback first (e edits it)")
    });
    assert_eq!(
        sb.status_line(&id),
        format!("stuck — check failed 1 of 1 tries: `{check}` — exit 1"),
        "nothing was sent back"
    );
    term.keys(&["e"]);
    term.literal("write revised.txt");
    term.wait_screen(10, "the typed feedback", |s| {
        s.contains("Feedback: write revised.txt")
    });
    term.keys(&["Enter"]);
    term.keys(&["y"]);
    term.wait_screen(30, "the revise's toast", |s| {
        s.contains(&format!("Mission {id} sent back to agent"))
    });
    // The board hosts the revised run until it lands.
    let landed = wait_for(60, "the revised run to land", || {
        let out = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        (v["status"] == "landed").then_some(v)
    });
    assert_eq!(
        (
            &landed["check"]["state"],
            &landed["check"]["tries"],
            &landed["runs"][0]["run"],
            &landed["runs"][0]["revisedBy"],
            &landed["runs"][0]["fromStatus"],
            &landed["runs"][0]["feedback"],
        ),
        (
            &serde_json::json!("passed"),
            &serde_json::json!(1),
            &serde_json::json!(2),
            &serde_json::json!("board"),
            &serde_json::json!("stuck"),
            &serde_json::json!("write revised.txt"),
        ),
        "{landed:#}"
    );
    // The feedback was the agent's next prompt: it wrote it, word for word.
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("revised.txt")).unwrap(),
        "write revised.txt"
    );
    let reports = crate::harness::report_summaries(&sb, &id);
    let revise_at = reports
        .iter()
        .position(|r| {
            r == "[revise] revised by board after it rested stuck (run 2): write revised.txt"
        })
        .unwrap_or_else(|| panic!("{reports:#?}"));
    assert_eq!(
        reports[revise_at..].last().map(String::as_str),
        Some(format!("[check] check passed (try 1 of 1): {check} — exit 0").as_str()),
        "{reports:#?}"
    );
    term.wait_screen(30, "the landed mission's check in its detail", |s| {
        s.contains("Check: passed (try 1 of 1) · `test -f revised.txt")
    });
    let shell = term.quit();
    assert!(shell.contains("EXITED:0"), "{shell}");
}
