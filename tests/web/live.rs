//! The event stream: the live part pushed on every change, caught up on reconnect.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};

use crate::harness::Sandbox;
use crate::server::Web;

/// One server-sent event: its id and its data.
struct Event {
    id: String,
    data: String,
}

/// Open `/events` (with `last` as `Last-Event-ID`) and read its events on a thread.
fn follow(web: &Web, credential: &str, last: Option<&str>) -> mpsc::Receiver<Event> {
    let mut req = web
        .client
        .get(web.url("/events"))
        .header("Cookie", format!("mb_device={credential}"))
        .header("Origin", web.origin())
        .timeout(Duration::from_secs(600));
    if let Some(id) = last {
        req = req.header("Last-Event-ID", id);
    }
    let response = req.send().unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let (mut id, mut data) = (String::new(), Vec::new());
        for line in BufReader::new(response).lines() {
            let Ok(line) = line else { return };
            if let Some(v) = line.strip_prefix("id: ") {
                id = v.to_string();
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push(v.to_string());
            } else if line.is_empty() && !data.is_empty() {
                let event = Event {
                    id: std::mem::take(&mut id),
                    data: data.join("\n"),
                };
                data.clear();
                if tx.send(event).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The next event whose data satisfies `want`, within a deadline.
fn next_where(rx: &mpsc::Receiver<Event>, what: &str, want: impl Fn(&str) -> bool) -> Event {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(e) if want(&e.data) => return e,
            Ok(_) => continue,
            Err(_) => panic!("no event with {what} on the stream"),
        }
    }
}

#[test]
fn an_ask_appears_and_an_answer_elsewhere_removes_it_from_the_open_page() {
    let sb = Sandbox::new();
    let ids = sb.record_missions("live", 1);
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let events = follow(&web, &credential, None);
    let first = next_where(&events, "the empty state", |d| {
        d.contains("Nothing is waiting on you.")
    });
    assert!(!first.id.is_empty());

    let asks = Asks::new(sb.store());
    let ask = asks
        .raise(NewAsk {
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: "Pushed, not polled?".into(),
            mission_id: Some(ids[0].clone()),
            ..Default::default()
        })
        .unwrap();
    let shown = next_where(&events, "the new ask", |d| {
        d.contains("Pushed, not polled?")
    });

    // Answered on another surface: the card goes from the open page.
    sb.run(&["approvals", "respond", &ask.id, "--answer", "yes"])
        .ok();
    next_where(&events, "the ask gone", |d| !d.contains(&ask.id));

    // A page that reconnects with an old id is caught up at once.
    let again = follow(&web, &credential, Some(&shown.id));
    let current = next_where(&again, "the current state", |d| {
        d.contains("Nothing is waiting on you.")
    });
    // One that already has the current state is not sent it again: its first event
    // is the next change.
    let up_to_date = follow(&web, &credential, Some(&current.id));
    asks.raise(NewAsk {
        tools_name: QUESTION_TOOLS.into(),
        tool_name: QUESTION_TOOL.into(),
        args_summary: "After the reconnect?".into(),
        mission_id: Some(ids[0].clone()),
        ..Default::default()
    })
    .unwrap();
    let first = up_to_date
        .recv_timeout(Duration::from_secs(30))
        .expect("an event after the change");
    assert!(
        first.data.contains("After the reconnect?"),
        "{}",
        first.data
    );

    // A revoked device's stream ends.
    sb.run(&["web", "revoke", "phone"]).ok();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match events.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
            Ok(_) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("the revoked device's stream did not end")
            }
        }
    }
}
