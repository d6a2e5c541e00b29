//! Notifications (`notify-url`) against receivers the tests run on loopback: each
//! event reaches each receiver once, in its format; a receiver that is down is
//! caught up once it is back, and a restart of the deliverer repeats nothing; a
//! slow receiver never holds up a mission; agent text arrives sanitized, or not at
//! all under `notify-text none`. The deliverer is the real binary's
//! `missionboard web`; the outbox is read back from the store.

#[path = "common/mod.rs"]
mod harness;

#[path = "web/server.rs"]
#[allow(dead_code)]
mod server;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};
use missionboard::notify::Outbox;
use serde_json::Value;

use harness::{Sandbox, script, wait_for};
use server::Web;

/// One request a receiver got.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HashMap<String, String>,
    body: String,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
    fn event(&self) -> String {
        self.headers
            .get("x-missionboard-event")
            .cloned()
            .unwrap_or_default()
    }
}

/// How a receiver answers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Answer,
    /// Take the request and answer only once released.
    Hold,
}

#[derive(Clone)]
struct Shared {
    got: Arc<Mutex<Vec<Received>>>,
    mode: Arc<Mutex<Mode>>,
    release: Arc<tokio::sync::Notify>,
}

/// A webhook receiver on a loopback port, on a runtime of its own; stopped (its
/// port refusing connections) when dropped.
struct Receiver {
    port: u16,
    shared: Shared,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

async fn receive(
    State(s): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> StatusCode {
    let headers = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                v.to_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    s.got.lock().unwrap().push(Received {
        path: uri.path().to_string(),
        headers,
        body,
    });
    if *s.mode.lock().unwrap() == Mode::Hold {
        s.release.notified().await;
    }
    StatusCode::OK
}

impl Receiver {
    /// Listening on `port` (0: a fresh one), answering as `mode` says.
    fn start(port: u16, mode: Mode) -> Receiver {
        let shared = Shared {
            got: Arc::default(),
            mode: Arc::new(Mutex::new(mode)),
            release: Arc::default(),
        };
        Receiver::serving(port, shared)
    }

    fn serving(port: u16, shared: Shared) -> Receiver {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let app = axum::Router::new()
            .fallback(axum::routing::post(receive))
            .with_state(shared.clone());
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let serve = axum::serve(listener, app);
                tokio::select! {
                    _ = serve => {}
                    _ = stopped => {}
                }
            });
        });
        Receiver {
            port,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn got(&self) -> Vec<Received> {
        self.shared.got.lock().unwrap().clone()
    }

    /// Wait until `n` requests have come.
    #[track_caller]
    fn wait_for(&self, n: usize, what: &str) -> Vec<Received> {
        wait_for(120, what, || {
            let got = self.got();
            (got.len() >= n).then_some(got)
        })
    }

    fn answer_now(&self) {
        *self.shared.mode.lock().unwrap() = Mode::Answer;
        self.shared.release.notify_waiters();
    }

    /// Stop listening; a new receiver on the same port keeps the same record.
    fn restart(mut self) -> Receiver {
        let (port, shared) = (self.port, self.shared.clone());
        self.shut();
        Receiver::serving(port, shared)
    }

    fn shut(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.shared.release.notify_waiters();
        self.shut();
    }
}

const ASK_THEN_LAND: &str = r#"{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#;

/// The outbox's deliveries: (event kind, target, state), oldest first.
fn deliveries(sb: &Sandbox) -> Vec<(String, String, String)> {
    Outbox::new(sb.store())
        .deliveries()
        .unwrap()
        .into_iter()
        .map(|d| (d.kind, d.target, d.state))
        .collect()
}

/// Wait until every delivery is recorded sent, and there are `n`.
#[track_caller]
fn wait_all_sent(sb: &Sandbox, n: usize) -> Vec<(String, String, String)> {
    wait_for(120, &format!("{n} deliveries recorded sent"), || {
        let d = deliveries(sb);
        (d.len() == n && d.iter().all(|(_, _, s)| s == "sent")).then_some(d)
    })
}

fn raise_question(sb: &Sandbox, mission: &str, summary: &str) -> String {
    Asks::new(sb.store())
        .raise(NewAsk {
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: summary.into(),
            mission_id: Some(mission.into()),
            ..Default::default()
        })
        .unwrap()
        .id
}

#[test]
fn notify_url_is_repeatable_and_a_bad_entry_is_refused_naming_the_fix() {
    let sb = Sandbox::new();
    let one = sb
        .run(&["config", "set", "notify-url", "https://ntfy.sh/mb-topic"])
        .ok();
    assert_eq!(one.stdout, "notify-url = https://ntfy.sh/mb-topic\n");
    let two = sb
        .run(&[
            "config",
            "set",
            "notify-url",
            "https://hooks.example/mb format=slack events=asks,host-lost",
        ])
        .ok();
    assert_eq!(
        two.stdout,
        "notify-url = https://ntfy.sh/mb-topic\nhttps://hooks.example/mb format=slack events=question,gated,bound,host-lost\n"
    );
    let bad = sb.run(&[
        "config",
        "set",
        "notify-url",
        "https://x.example events=lunch",
    ]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr,
        "Error: notify-url: events names \"lunch\", which is none of question, gated, bound, landed, derailed, stuck, host-lost, asks, rested\n"
    );
    let scheme = sb.run(&["config", "set", "notify-url", "ftp://x.example"]);
    assert_eq!(
        scheme.stderr,
        "Error: notify-url must be an http:// or https:// URL with a host (got \"ftp://x.example\")\n"
    );
    let list = sb.run(&["config", "list"]).ok();
    assert!(
        list.stdout
            .contains("https://ntfy.sh/mb-topic; https://hooks.example/mb format=slack"),
        "{}",
        list.stdout
    );
    sb.run(&["config", "unset", "notify-url"]).ok();
    assert_eq!(sb.run(&["config", "get", "notify-url"]).stdout, "");
}

#[test]
fn a_question_and_a_landing_reach_each_receiver_once_in_its_format() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    let receiver = Receiver::start(0, Mode::Answer);
    for entry in [
        format!("{} format=json", receiver.url("/json")),
        format!("{} format=ntfy events=question", receiver.url("/ntfy")),
        format!("{} format=slack events=rested", receiver.url("/slack")),
    ] {
        sb.run(&["config", "set", "notify-url", &entry]).ok();
    }
    sb.run(&["config", "set", "web-url", "https://laptop.example.ts.net/"])
        .ok();
    let _web = Web::start(&sb, &[]);

    let fired = sb.fire_in_background("stub", "rename the env var", &[]);
    let ask = wait_for(30, "the question", || sb.pending_ask_ids().first().cloned());
    let mission = sb.newest_mission().unwrap();
    // The question is announced to the two receivers that take questions.
    receiver.wait_for(2, "the question's two notifications");
    sb.run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    assert_eq!(fired.join().code, 0);
    let sent = wait_all_sent(&sb, 4);
    assert_eq!(
        sent.iter().map(|(k, _, _)| k.as_str()).collect::<Vec<_>>(),
        ["question", "question", "landed", "landed"]
    );
    let mut got = receiver.wait_for(4, "the landing's two notifications");
    got.sort_by_key(|r| (r.event().parse::<i64>().unwrap(), r.path.clone()));
    assert_eq!(got.len(), 4, "each once: {got:#?}");
    let short = &mission[..8];
    let by_path = |p: &str| -> Vec<&Received> { got.iter().filter(|r| r.path == p).collect() };

    let json = by_path("/json");
    assert_eq!(json.len(), 2);
    let q = json[0].json();
    assert_eq!(q["kind"], "question");
    assert_eq!(q["mission"], short);
    assert_eq!(q["summary"], "Rename the env var too?");
    assert_eq!(
        q["link"],
        format!("https://laptop.example.ts.net/#ask-{ask}")
    );
    let landed = json[1].json();
    assert_eq!(landed["kind"], "landed");
    assert_eq!(
        landed["link"],
        format!("https://laptop.example.ts.net/missions/{mission}")
    );

    let ntfy = by_path("/ntfy");
    assert_eq!(ntfy.len(), 1);
    assert_eq!(ntfy[0].body, "Rename the env var too?");
    assert_eq!(
        ntfy[0].headers["title"],
        format!("missionboard: a question waits (mission {short})")
    );
    assert_eq!(
        ntfy[0].headers["click"],
        format!("https://laptop.example.ts.net/#ask-{ask}")
    );

    let slack = by_path("/slack");
    assert_eq!(slack.len(), 1);
    let text = slack[0].json()["text"].as_str().unwrap().to_string();
    assert!(
        text.starts_with(&format!(
            "missionboard: a mission landed (mission {short}): rename the env var"
        )),
        "{text}"
    );
}

#[test]
fn a_receiver_that_was_down_is_caught_up_once_and_a_restart_repeats_nothing() {
    let sb = Sandbox::new();
    let mission = sb.record_missions("down", 1).remove(0);
    // A port nothing listens on, for now.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/hook");
    sb.run(&["config", "set", "notify-url", &format!("{url} format=json")])
        .ok();
    let web = Web::start(&sb, &[]);
    let first = raise_question(&sb, &mission, "Asked while the receiver was down?");
    wait_for(120, "a failed try recorded", || {
        Outbox::new(sb.store())
            .deliveries()
            .unwrap()
            .first()
            .filter(|d| d.state == "pending" && d.attempts >= 1)
            .cloned()
    });
    // The deliverer restarts while the delivery waits for its retry.
    drop(web);
    let receiver = Receiver::start(port, Mode::Answer);
    let web = Web::start(&sb, &[]);
    let got = receiver.wait_for(1, "the caught-up notification");
    assert_eq!(
        got[0].json()["summary"],
        "Asked while the receiver was down?"
    );
    wait_all_sent(&sb, 1);

    // Restarted again, receiver too: the sent one is not sent again, a new one is.
    drop(web);
    let receiver = receiver.restart();
    let _web = Web::start(&sb, &[]);
    let second = raise_question(&sb, &mission, "Asked after the restarts?");
    let got = receiver.wait_for(2, "the second notification");
    wait_all_sent(&sb, 2);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(got[1].json()["summary"], "Asked after the restarts?");
    assert_ne!(got[0].event(), got[1].event());
    for ask in [first, second] {
        sb.run(&["approvals", "respond", &ask, "--answer", "done"])
            .ok();
    }
}

#[test]
fn a_slow_receiver_never_holds_up_a_mission() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(ASK_THEN_LAND)))]);
    let receiver = Receiver::start(0, Mode::Hold);
    sb.run(&[
        "config",
        "set",
        "notify-url",
        &format!("{} format=json", receiver.url("/hook")),
    ])
    .ok();
    let _web = Web::start(&sb, &[]);
    let fired = sb.fire_in_background("stub", "slow receiver", &[]);
    let ask = wait_for(30, "the question", || sb.pending_ask_ids().first().cloned());
    receiver.wait_for(1, "the question's notification, held");
    // The receiver holds that request; the mission goes on and lands regardless.
    sb.run(&["approvals", "respond", &ask, "--answer", "go on"])
        .ok();
    let run = fired.join();
    assert_eq!(run.code, 0, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    assert!(sb.status_line(&id).starts_with("landed"));
    receiver.answer_now();
    wait_all_sent(&sb, 2);
    let kinds: Vec<String> = {
        let mut seen: Vec<(String, String)> = receiver
            .got()
            .iter()
            .map(|r| (r.event(), r.json()["kind"].as_str().unwrap().to_string()))
            .collect();
        // A held request the deliverer gave up on is sent again: count events.
        seen.sort_by_key(|(e, _)| e.parse::<i64>().unwrap());
        seen.dedup();
        seen.into_iter().map(|(_, k)| k).collect()
    };
    assert_eq!(kinds, ["question", "landed"]);
}

#[test]
fn a_summary_is_sent_sanitized_and_notify_text_none_sends_no_agent_text() {
    let sb = Sandbox::new();
    let mission = sb.record_missions("hostile", 1).remove(0);
    let receiver = Receiver::start(0, Mode::Answer);
    sb.run(&[
        "config",
        "set",
        "notify-url",
        &format!("{} format=json", receiver.url("/json")),
    ])
    .ok();
    sb.run(&[
        "config",
        "set",
        "notify-url",
        &format!("{} format=ntfy", receiver.url("/ntfy")),
    ])
    .ok();
    let _web = Web::start(&sb, &[]);
    let hostile =
        "Deploy\u{202e}gnp.exe\u{202c} now?\n\x1b]0;pwned\x07\x1b[31mred\x1b[0m\tand more";
    let first = raise_question(&sb, &mission, hostile);
    let got = receiver.wait_for(2, "both notifications");
    for r in &got {
        let summary = if r.path == "/json" {
            r.json()["summary"].as_str().unwrap().to_string()
        } else {
            r.body.clone()
        };
        assert_eq!(summary, "Deploygnp.exe now? red and more", "{r:?}");
    }
    sb.run(&["approvals", "respond", &first, "--answer", "no"])
        .ok();

    sb.run(&["config", "set", "notify-text", "none"]).ok();
    let second = raise_question(&sb, &mission, "The secret plan is in notes.txt");
    let got = receiver.wait_for(4, "both quiet notifications");
    for r in &got[2..] {
        assert!(!r.body.contains("secret"), "{r:?}");
        assert!(!r.body.contains("notes"), "{r:?}");
        if r.path == "/json" {
            let v = r.json();
            assert!(v.get("summary").is_none(), "{v}");
            assert_eq!(v["kind"], "question");
            assert_eq!(v["mission"], &mission[..8]);
        } else {
            assert_eq!(
                r.body,
                format!("missionboard: a question waits (mission {})", &mission[..8])
            );
        }
    }
    sb.run(&["approvals", "respond", &second, "--answer", "no"])
        .ok();
}
