//! Issue M: `missionboard acp`, driven as an editor drives it — the
//! agent-client-protocol crate's client side over the child's stdio — with stub
//! units and the scripted model backend for the session's own agent.

use std::process::Stdio;
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CloseSessionRequest, ContentBlock, Implementation, InitializeRequest,
    NewSessionRequest, NewSessionResponse, PromptRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionConfigKind, SessionNotification,
    SessionUpdate, StopReason, TextContent,
};
use agent_client_protocol::{Agent, Client, Lines};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

use crate::harness::{Sandbox, script, wait_for_async};

/// How long the editor waits for any one thing the agent should send.
const WAIT: Duration = Duration::from_secs(30);

/// An editor connected to `missionboard acp`.
struct Editor {
    child: tokio::process::Child,
    cx: ConnectionTo<Agent>,
    updates: mpsc::UnboundedReceiver<SessionNotification>,
    /// Every update received so far, in order.
    seen: Vec<SessionNotification>,
    /// Ends the client connection, which closes the agent's stdin.
    hang_up: oneshot::Sender<()>,
}

impl Editor {
    async fn start(sb: &Sandbox) -> Editor {
        let mut command = tokio::process::Command::from(sb.command(&["acp"]));
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("spawn missionboard acp");
        let mut stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (out_tx, mut out_rx) = futures::channel::mpsc::unbounded::<String>();
        tokio::spawn(async move {
            while let Some(line) = out_rx.next().await {
                let framed = format!("{line}\n");
                if stdin.write_all(framed.as_bytes()).await.is_err() || stdin.flush().await.is_err()
                {
                    break;
                }
            }
        });
        let sink = futures::sink::SinkExt::sink_map_err(out_tx, std::io::Error::other);
        let incoming = futures::stream::unfold(BufReader::new(stdout).lines(), |mut lines| async {
            match lines.next_line().await {
                Ok(Some(line)) => Some((Ok(line), lines)),
                Ok(None) => None,
                Err(e) => Some((Err(e), lines)),
            }
        })
        .boxed();
        let transport = Lines::new(sink, incoming);
        let (updates_tx, updates) = mpsc::unbounded_channel();
        let (cx_tx, cx_rx) = oneshot::channel();
        let (hang_up, hung_up) = oneshot::channel::<()>();
        tokio::spawn(
            Client
                .v1()
                .name("test-editor")
                .on_receive_notification(
                    async move |n: SessionNotification, _cx| {
                        let _ = updates_tx.send(n);
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .on_receive_request(
                    async move |_r: RequestPermissionRequest, responder, _cx| {
                        responder.respond(RequestPermissionResponse::new(
                            RequestPermissionOutcome::Cancelled,
                        ))
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .connect_with(transport, async move |cx| {
                    let _ = cx_tx.send(cx.clone());
                    tokio::select! {
                        _ = hung_up => {}
                        () = cx.incoming_closed() => {}
                    }
                    Ok(())
                }),
        );
        let cx = cx_rx.await.expect("the client connection");
        let init = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(ClientCapabilities::new())
            .client_info(Implementation::new("test-editor", "0"));
        let response = within(cx.send_request(init).block_task()).await.unwrap();
        assert_eq!(response.agent_info.unwrap().name, "missionboard-acp");
        assert!(
            response
                .agent_capabilities
                .session_capabilities
                .close
                .is_some(),
            "session/close is advertised"
        );
        Editor {
            child,
            cx,
            updates,
            seen: Vec::new(),
            hang_up,
        }
    }

    async fn new_session(&mut self, sb: &Sandbox) -> (String, NewSessionResponse) {
        let response = within(
            self.cx
                .send_request(NewSessionRequest::new(sb.cwd.clone()))
                .block_task(),
        )
        .await
        .unwrap();
        let id = response.session_id.0.to_string();
        // `/mission` is advertised once the session exists.
        self.until("the available commands", |u| match &u.update {
            SessionUpdate::AvailableCommandsUpdate(c) => {
                c.available_commands.iter().any(|c| c.name == "mission")
            }
            _ => false,
        })
        .await;
        (id, response)
    }

    /// Send a prompt; the text the agent said during it, and how it ended.
    async fn prompt(&mut self, session: &str, text: &str) -> (String, StopReason) {
        let before = self.seen.len();
        let request = PromptRequest::new(
            session.to_string(),
            vec![ContentBlock::Text(TextContent::new(text))],
        );
        let response = within(self.cx.send_request(request).block_task())
            .await
            .unwrap();
        // Updates sent before the response are queued ahead of it.
        while let Ok(u) = self.updates.try_recv() {
            self.seen.push(u);
        }
        let said: Vec<String> = self.seen[before..].iter().filter_map(chunk_text).collect();
        (said.join(""), response.stop_reason)
    }

    async fn close(&self, session: &str) {
        within(
            self.cx
                .send_request(CloseSessionRequest::new(session.to_string()))
                .block_task(),
        )
        .await
        .unwrap();
    }

    /// Wait for the first update (seen or still to come) that `pred` accepts.
    async fn until(
        &mut self,
        what: &str,
        pred: impl Fn(&SessionNotification) -> bool,
    ) -> SessionNotification {
        if let Some(u) = self.seen.iter().find(|u| pred(u)) {
            return u.clone();
        }
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            match tokio::time::timeout_at(deadline, self.updates.recv()).await {
                Ok(Some(u)) => {
                    self.seen.push(u.clone());
                    if pred(&u) {
                        return u;
                    }
                }
                Ok(None) => panic!("the agent hung up while waiting for {what}"),
                Err(_) => panic!(
                    "timed out waiting for {what}; said so far:\n{}",
                    self.said().join("\n")
                ),
            }
        }
    }

    /// Wait for a message chunk whose text contains `needle`; its text.
    async fn until_said(&mut self, needle: &str) -> String {
        let u = self
            .until(&format!("a message containing {needle:?}"), |u| {
                chunk_text(u).is_some_and(|t| t.contains(needle))
            })
            .await;
        chunk_text(&u).unwrap()
    }

    fn said(&self) -> Vec<String> {
        self.seen.iter().filter_map(chunk_text).collect()
    }

    /// Hang up like an editor that quits, and wait for the process to end.
    async fn quit(mut self) {
        let _ = self.hang_up.send(());
        let status = within(self.child.wait()).await.unwrap();
        assert!(status.success(), "missionboard acp exited with {status}");
    }
}

fn chunk_text(u: &SessionNotification) -> Option<String> {
    match &u.update {
        SessionUpdate::AgentMessageChunk(c) => match &c.content {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        },
        _ => None,
    }
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .expect("the agent answered in time")
}

/// A home with the presets, the session model replaced by `dialog`, and `stubs`.
fn world(sb: &Sandbox, dialog: Value, stubs: &[(&str, Option<&str>)]) -> std::path::PathBuf {
    sb.run(&["init"]).ok();
    sb.declare_stubs(stubs);
    let path = sb.cwd.join("dialog.json");
    sb.write(&path, &dialog.to_string());
    let url = format!("scripted:{}", path.display());
    sb.run(&["config", "set", "model-base-url", &url]).ok();
    path
}

fn show(sb: &Sandbox, id: &str) -> Value {
    let run = sb.run(&["mission", "show", id, "--json"]).ok();
    serde_json::from_str(&run.stdout).unwrap()
}

fn inbox(sb: &Sandbox) -> Vec<Value> {
    let run = sb.run(&["inbox", "list", "--json"]).ok();
    let v: Value = serde_json::from_str(&run.stdout).unwrap();
    v["items"].as_array().cloned().unwrap_or_default()
}

/// The model requests the scripted backend recorded.
fn requests(dialog: &std::path::Path) -> Vec<Value> {
    let path = format!("{}.requests.jsonl", dialog.display());
    std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the confirmation of a mission hosted by the session says becomes of it.
const SESSION_END: &str = "Reports arrive live in this session as the mission runs. This session hosts its unit: if the session ends first (the editor hangs up, or missionboard acp exits), a run waiting on a question stays parked and resumes when the question is answered, any other run ends abandoned, and its reports wait in the operator inbox. With a `missionboard host` running, /mission queues to it instead.";

/// The confirmation of a mission this session hosts, out of a turn's text. The unit
/// runs from the moment it is fired and its live lines are their own messages, so
/// on a loaded machine one may arrive in the same turn, before or after it.
fn hosted_confirmation(said: &str) -> &str {
    let start = said
        .find("Mission fired at ")
        .unwrap_or_else(|| panic!("no confirmation in: {said}"));
    let len = said[start..]
        .find(SESSION_END)
        .unwrap_or_else(|| panic!("the confirmation does not end its way: {said}"))
        + SESSION_END.len();
    &said[start..start + len]
}

fn mission_id_in(confirmation: &str) -> String {
    let at = confirmation.find("\nMission ").expect("a mission line") + "\nMission ".len();
    confirmation[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_fired_with_slash_mission_streams_its_reports_into_the_session() {
    let sb = Sandbox::new();
    let worker = script(
        r#"{"plan":[{"content":"survey","status":"in_progress","priority":"high"}]},{"report":{"kind":"progress","summary":"surveyed the docs"}},{"report":{"kind":"result","summary":"tidied","detail":"two files","refs":["README.md"]}},{"finish":"landed"}"#,
    );
    world(&sb, json!([]), &[("worker", Some(&worker))]);
    sb.write(&sb.cwd.join("README.md"), "# docs\n");
    sb.run(&["config", "set", "default-mission-policy", "default"])
        .ok();
    let mut editor = Editor::start(&sb).await;
    let (session, opened) = editor.new_session(&sb).await;

    // The envelope is a session config option the editor can show as a picker.
    let options = opened.config_options.expect("config options");
    let envelope = options.iter().find(|o| &*o.id.0 == "envelope").unwrap();
    let SessionConfigKind::Select(select) = &envelope.kind else {
        panic!("the envelope option is a select: {envelope:?}");
    };
    let listed = serde_json::to_string(&select.options).unwrap();
    assert!(listed.contains("hitl-policy-strict.json"), "{listed}");

    let (said, stop) = editor.prompt(&session, "/mission").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert!(
        said.starts_with("Fire a mission from this session:\n"),
        "{said}"
    );
    assert!(said.contains("Default envelope: default\n"), "{said}");
    assert!(said.contains("\nEnvelopes (--policy <name>):\n"), "{said}");
    // The board picker's lines: the character, then each bound's value and truthful
    // label (the stub never started here, so what it offers is not known yet).
    assert!(
        said.contains("\n* hitl-policy-default.json  unruled calls stop for approval · ≤300 tool calls (enforced) · an agent may answer 3 questions\n    maxToolCalls 300 · enforced; maxTokens 2,000,000 · best-effort; "),
        "{said}"
    );
    assert!(
        said.contains("  hitl-policy-strict.json  ")
            && said.contains("questions always wait for a human"),
        "{said}"
    );

    let (said, _) = editor
        .prompt(&session, "/mission worker tidy the docs")
        .await;
    let said = hosted_confirmation(&said);
    assert!(
        said.starts_with("Mission fired at named agent \"worker\" under envelope \"default\" (default-mission-policy).\n"),
        "{said}"
    );
    assert!(said.contains("\nIntent: tidy the docs\n"), "{said}");
    let id = mission_id_in(said);

    editor
        .until_said("unit worker revised its plan (rev 1)\n1 entries: 0 pending, 1 in progress, 0 completed")
        .await;
    editor
        .until_said("unit worker reported (progress): surveyed the docs")
        .await;
    let result = editor
        .until_said("unit worker reported (result): tidied")
        .await;
    assert_eq!(
        result,
        "unit worker reported (result): tidied\ntwo files\nrefs: README.md"
    );
    let landed = editor
        .until("the verdict", |u| {
            chunk_text(u).is_some_and(|t| t.starts_with("unit worker landed"))
        })
        .await;
    let SessionUpdate::AgentMessageChunk(chunk) = &landed.update else {
        unreachable!()
    };
    assert_eq!(
        chunk.message_id.as_ref().map(|m| m.0.to_string()),
        Some(format!("mission-status-{id}-open-landed"))
    );
    let meta = chunk.meta.as_ref().unwrap();
    assert_eq!(meta["missionboard.missionStatus"]["missionId"], json!(id));

    // The record names the session; the reports it took never reach the inbox.
    let record = show(&sb, &id);
    assert_eq!(record["parentSessionId"], json!(session));
    assert_eq!(record["status"], json!("landed"));
    let text = sb.run(&["mission", "show", &id]).ok();
    assert!(
        text.stdout
            .contains(&format!("\nFired by:  session {session}\n")),
        "{}",
        text.stdout
    );
    assert!(inbox(&sb).is_empty(), "{:?}", inbox(&sb));
    editor.quit().await;
}

/// A unit that asks `n` questions in a row, reporting each answer, then lands.
fn asking(n: usize) -> String {
    let mut steps =
        r#"{"report":{"kind":"result","summary":"all answered"}},{"finish":"landed"}"#.to_string();
    for i in (1..=n).rev() {
        steps = format!(
            r#"{{"ask":{{"summary":"Question {i}: go on?","then":[{{"report":{{"kind":"progress","summary":"answer {i}: {{{{answer}}}}"}}}},{steps}]}}}}"#
        );
    }
    script(&steps)
}

fn answer_call(answer: &str) -> Value {
    json!({"tool_calls": [{"name": "mission_answer",
        "arguments": {"askId": "{{input.askId}}", "answer": answer}}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_agent_answers_parented_questions_within_the_bound_and_the_operator_answers_the_rest()
 {
    let sb = Sandbox::new();
    // The session's agent answers the three offered questions, then is asked by the
    // operator to answer the fourth, past the envelope's cap of 3.
    let dialog = world(
        &sb,
        json!([
            answer_call("yes, one"), {"text": "Answered."},
            answer_call("yes, two"), {"text": "Answered."},
            answer_call("yes, three"), {"text": "Answered."},
            answer_call("yes, four"), {"text": "That one waits for you."},
        ]),
        &[("asker", Some(&asking(4)))],
    );
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;
    let (said, _) = editor
        .prompt(
            &session,
            "/mission --policy default asker settle four questions",
        )
        .await;
    let id = mission_id_in(&said);
    for i in 1..=3 {
        let shown = editor
            .until_said(&format!(
                "unit asker is waiting on you: Question {i}: go on?"
            ))
            .await;
        assert!(shown.contains("approvals respond"), "{shown}");
        let word = ["one", "two", "three"][i - 1];
        editor
            .until_said(&format!(
                "unit asker reported (progress): answer {i}: yes, {word}"
            ))
            .await;
    }
    // The fourth is shown, but not offered: the bound is spent.
    editor
        .until_said("unit asker is waiting on you: Question 4: go on?")
        .await;
    let fourth = wait_for_async(30, "the fourth question", || {
        sb.pending_ask_ids().first().cloned()
    })
    .await;
    let offered_fourth = requests(&dialog)
        .iter()
        .any(|r| r.to_string().contains(&fourth));
    assert!(!offered_fourth, "the spent bound makes no model call");

    // Asked to anyway, the session's agent is refused by the envelope.
    let (_, stop) = editor
        .prompt(
            &session,
            &json!({"askId": fourth, "note": "answer it"}).to_string(),
        )
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    let last = requests(&dialog).last().cloned().unwrap();
    // What the session was shown between turns reached its model too.
    let shown = last.to_string();
    assert!(
        shown.contains("Shown to the operator from the missions you fired")
            && shown.contains("unit asker is waiting on you: Question 4: go on?"),
        "{last:#}"
    );
    let tool_result = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        tool_result.starts_with(&format!("answer denied per policy for ask {fourth}.\n")),
        "{tool_result}"
    );
    assert!(
        tool_result.contains("spent its agent-answer bound (3 of 3)"),
        "{tool_result}"
    );
    assert_eq!(sb.pending_ask_ids(), vec![fourth.clone()]);

    // The operator still answers it, and the unit finishes.
    sb.run(&[
        "approvals",
        "respond",
        &fourth,
        "--answer",
        "from the operator",
    ])
    .ok();
    editor
        .until_said("unit asker reported (progress): answer 4: from the operator")
        .await;
    editor.until_said("unit asker landed").await;
    let record = show(&sb, &id);
    let by: Vec<String> = record["asks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["resolution"]["answeredBy"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        by,
        vec![format!("session-agent:{session}"); 3],
        "{record:#}"
    );
    editor.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_person_at_the_editor_answers_with_slash_answer_as_the_operator_and_the_agent_keeps_its_whole_bound()
 {
    let sb = Sandbox::new();
    // The session's agent leaves the first question to the person; the person answers
    // it with /answer; the agent then answers the other three — its whole cap of 3,
    // which the person's answer did not touch.
    let dialog = world(
        &sb,
        json!([
            {"text": "That one is yours to decide."},
            answer_call("yes, two"), {"text": "Answered."},
            answer_call("yes, three"), {"text": "Answered."},
            answer_call("yes, four"), {"text": "Answered."},
        ]),
        &[("asker", Some(&asking(4)))],
    );
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;
    editor
        .until("the answer commands", |u| match &u.update {
            SessionUpdate::AvailableCommandsUpdate(c) => ["answer", "approve", "deny"]
                .iter()
                .all(|n| c.available_commands.iter().any(|c| c.name == *n)),
            _ => false,
        })
        .await;
    let (said, _) = editor
        .prompt(
            &session,
            "/mission --policy default asker settle four questions",
        )
        .await;
    let id = mission_id_in(&said);
    let shown = editor
        .until_said("unit asker is waiting on you: Question 1: go on?")
        .await;
    let first = wait_for_async(30, "the first question", || {
        sb.pending_ask_ids().first().cloned()
    })
    .await;
    assert!(
        shown.contains(&format!(
            "answer it here with /answer {first} <your answer>"
        )),
        "{shown}"
    );
    editor.until_said("That one is yours to decide.").await;

    // A usage mistake is said, and settles nothing.
    let (said, stop) = editor.prompt(&session, "/answer").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        said,
        "usage: /answer <ask-id> <your answer> — the ask id is in the question"
    );
    let (said, _) = editor
        .prompt(
            &session,
            &format!("/answer {} from the editor", &first[..8]),
        )
        .await;
    assert_eq!(
        said,
        format!(
            "You answered ask {first} as the operator (Question 1: go on?): the unit has your verdict."
        )
    );
    editor
        .until_said("unit asker reported (progress): answer 1: from the editor")
        .await;
    // Answered: it is no longer this session's to settle.
    let (said, _) = editor
        .prompt(&session, &format!("/answer {first} again"))
        .await;
    assert!(
        said.contains("is not an ask a mission fired from this session is waiting on"),
        "{said}"
    );
    for (i, word) in [(2, "two"), (3, "three"), (4, "four")] {
        editor
            .until_said(&format!(
                "unit asker reported (progress): answer {i}: yes, {word}"
            ))
            .await;
    }
    editor.until_said("unit asker landed").await;
    let record = show(&sb, &id);
    let by: Vec<Option<String>> = record["asks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["resolution"]["answeredBy"].as_str().map(str::to_string))
        .collect();
    let agent = Some(format!("session-agent:{session}"));
    assert_eq!(by.len(), 4, "{record:#}");
    assert_eq!(
        by.iter().filter(|b| **b == agent).count(),
        3,
        "the agent answered three: {record:#}"
    );
    assert_eq!(
        by.iter().filter(|b| b.is_none()).count(),
        1,
        "the person's answer is the operator's, attributed to no agent: {record:#}"
    );
    let answers: Vec<&str> = record["asks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["resolution"]["answeredBy"].is_null())
        .filter_map(|a| a["resolution"]["answer"].as_str())
        .collect();
    assert_eq!(answers, ["from the editor"], "{record:#}");
    let typed = format!("/answer {} from the editor", &first[..8]);
    assert!(
        !requests(&dialog)
            .iter()
            .any(|r| r.to_string().contains(&typed)),
        "the slash command never went to the session's model"
    );
    editor.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_session_close_a_missions_reports_wait_in_the_inbox_as_parent_gone() {
    let sb = Sandbox::new();
    let waiter = script(
        r#"{"ask":{"summary":"Which branch?","then":[{"report":{"kind":"result","summary":"went with {{answer}}"}},{"finish":"landed"}]}}"#,
    );
    world(&sb, json!([]), &[("waiter", Some(&waiter))]);
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;
    // Human-only envelope: the session's agent is never offered the question.
    let (said, _) = editor
        .prompt(&session, "/mission --policy strict waiter pick a branch")
        .await;
    let id = mission_id_in(&said);
    editor
        .until_said("unit waiter is waiting on you: Which branch?")
        .await;
    let ask = wait_for_async(30, "the question", || sb.pending_ask_ids().first().cloned()).await;
    editor.close(&session).await;

    sb.run(&["approvals", "respond", &ask, "--answer", "main"])
        .ok();
    let item = wait_for_async(30, "the report in the inbox", || {
        inbox(&sb).into_iter().find(|i| i["missionId"] == json!(id))
    })
    .await;
    assert_eq!(item["reason"], json!("parent_gone"));
    assert_eq!(item["parentSessionId"], json!(session));
    assert_eq!(item["report"]["summary"], json!("went with main"));
    wait_for_async(30, "the mission to land", || {
        (show(&sb, &id)["status"] == json!("landed")).then_some(())
    })
    .await;
    assert!(
        !editor.said().iter().any(|t| t.contains("went with main")),
        "a closed session is sent nothing"
    );
    editor.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_mission_refuses_with_the_grammars_texts_and_the_fleet_width() {
    let sb = Sandbox::new();
    world(&sb, json!([]), &[("mute", Some(&script(r#""hang""#)))]);
    sb.run(&["config", "set", "fleet-max-parallel", "1"]).ok();
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;

    let (said, _) = editor.prompt(&session, "/mission mute wait here").await;
    assert_eq!(
        said,
        "no mission envelope: name one as `/mission --policy <envelope> <intent>`, or set a default with `missionboard config set default-mission-policy <envelope>` — a mission must name the HITL policy that bounds it. /mission with no arguments lists the envelopes"
    );
    let (said, _) = editor
        .prompt(&session, "/mission --policy default wait here")
        .await;
    assert_eq!(
        said,
        "no mission agent: name one as `/mission <agent-name> <intent>`, or set a default with `missionboard config set default-mission-agent <name>`"
    );
    let (said, _) = editor.prompt(&session, "/mission --policy").await;
    assert_eq!(
        said,
        "--policy needs an envelope name: usage: /mission [--policy <envelope>] [agent-name] <intent> — /mission with no arguments lists the envelopes"
    );
    let (said, _) = editor
        .prompt(&session, "/mission --policy nope mute wait")
        .await;
    assert!(
        said.starts_with("unknown mission envelope \"nope\" (--policy): no such policy file on the search path. Available: "),
        "{said}"
    );
    let (said, _) = editor
        .prompt(&session, "/mission --policy default mute wait here")
        .await;
    assert!(
        said.starts_with("Mission fired at named agent \"mute\""),
        "{said}"
    );
    let (said, _) = editor
        .prompt(&session, "/mission --policy default mute wait too")
        .await;
    assert!(
        said.contains("fleet admission refused: 1 units are already open, at the fleet-width cap (fleet-max-parallel=1)"),
        "{said}"
    );
    let missions = sb.run(&["mission", "list", "--json"]).ok();
    let listed: Value = serde_json::from_str(&missions.stdout).unwrap();
    assert_eq!(
        listed["missions"].as_array().map(Vec::len),
        Some(1),
        "the refused fires left no record: {listed:#}"
    );
    editor.quit().await;
}

const WAITER: &str = r#"{"ask":{"summary":"Which branch?","then":[{"report":{"kind":"result","summary":"went with {{answer}}"}},{"finish":"landed"}]}}"#;

fn pending_of(sb: &Sandbox, id: &str) -> Vec<String> {
    show(sb, id)["pendingAsks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_string())
        .collect()
}

fn trace_of(sb: &Sandbox, id: &str) -> Vec<String> {
    show(sb, id)["oracleTrace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oracle_mounted_elsewhere_leaves_a_parented_question_alone() {
    const TWO_ASKS: &str = r#"{"ask":{"summary":"Which region?","then":{"report":{"kind":"finding","summary":"region: {{answer}}"}}}},{"ask":{"summary":"Rename the env var too?","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#;
    let sb = Sandbox::new();
    let verdict = |needle: &str, args: Value| json!({"match": needle, "tool_calls": [{"name": "oracle.submit_verdict", "arguments": args}]});
    let dialog = world(
        &sb,
        json!([
            verdict("Which region", json!({"verdict": "wait", "askId": "{{input.askId}}"})),
            {"match": "Which region", "text": "DONE"},
            verdict("Rename", json!({"verdict": "answer", "askId": "{{input.askId}}", "answer": "yes", "evidence": "{{input.intent}}"})),
            {"match": "Rename", "text": "DONE"},
        ]),
        &[
            ("stub", Some(&script(TWO_ASKS))),
            ("waiter", Some(&script(WAITER))),
        ],
    );
    sb.run(&["config", "set", "opt-in-beta", "true"]).ok();
    let oracle_fire = crate::harness::Background::spawn(sb.command(&[
        "mission",
        "fire",
        "stub",
        "rename the setting and the env var too",
        "--wait",
        "--policy",
        "default",
        "--oracle",
    ]));
    let ours = wait_for_async(30, "the oracle's mission", || sb.newest_mission()).await;
    wait_for_async(30, "the oracle's first review", || {
        trace_of(&sb, &ours)
            .iter()
            .any(|l| l.contains("WAIT"))
            .then_some(())
    })
    .await;

    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;
    // Human-only, so the session's own agent makes no model call either.
    let (said, _) = editor
        .prompt(&session, "/mission --policy strict waiter pick a branch")
        .await;
    let theirs = mission_id_in(&said);
    editor
        .until_said("unit waiter is waiting on you: Which branch?")
        .await;
    let parented = wait_for_async(30, "the parented question", || {
        pending_of(&sb, &theirs).first().cloned()
    })
    .await;
    // The oracle's unit asks again only after this; the bus is ordered, so once the
    // oracle has answered that one it has passed over the parented question.
    let region = pending_of(&sb, &ours)[0].clone();
    sb.run(&["approvals", "respond", &region, "--answer", "eu"])
        .ok();
    let run = tokio::task::spawn_blocking(move || oracle_fire.join())
        .await
        .unwrap();
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.contains("  [result] renamed: yes\n"), "{run:#?}");
    assert!(trace_of(&sb, &theirs).is_empty());
    assert!(!run.stderr.contains(&parented), "{}", run.stderr);
    assert!(
        requests(&dialog)
            .iter()
            .all(|r| !r.to_string().contains("Which branch")),
        "no model call for a parented question, in the oracle or the session"
    );
    assert_eq!(pending_of(&sb, &theirs), vec![parented.clone()]);
    sb.run(&["approvals", "respond", &parented, "--answer", "main"])
        .ok();
    editor
        .until_said("unit waiter reported (result): went with main")
        .await;
    editor.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_acp_process_exits_its_units_go_and_a_later_answer_resumes_the_run_into_the_inbox()
{
    let sb = Sandbox::new();
    world(&sb, json!([]), &[("waiter", Some(&script(WAITER)))]);
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;
    let (said, _) = editor
        .prompt(&session, "/mission --policy strict waiter pick a branch")
        .await;
    let id = mission_id_in(&said);
    editor
        .until_said("unit waiter is waiting on you: Which branch?")
        .await;
    let ask = wait_for_async(30, "the question", || pending_of(&sb, &id).first().cloned()).await;
    let unit = sb.cwd.join("script-waiter.json").display().to_string();
    assert!(!crate::harness::processes_mentioning(&unit).is_empty());
    editor.quit().await;
    wait_for_async(30, "the unit to be torn down", || {
        crate::harness::processes_mentioning(&unit)
            .is_empty()
            .then_some(())
    })
    .await;
    let record = show(&sb, &id);
    assert_eq!(record["status"], json!("open"), "parked, not ended");
    let pending = record["pendingAsks"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{record:#}");
    assert_eq!(pending[0]["id"], json!(ask));
    assert_eq!(
        pending[0]["parked"],
        json!(true),
        "its turn ended with its unit"
    );
    // The session's end is on the record, and in the inbox.
    let parked = inbox_item(&sb, &id, "Mission parked: the session that fired it ended.")
        .expect("the settlement waits in the inbox");
    assert_eq!(parked["reason"], json!("parent_gone"));
    assert_eq!(parked["parentSessionId"], json!(session));
    let detail = parked["report"]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!("Its editor session ended (the editor hung up) and its unit went with missionboard acp, while the run waited on:\n- ask {ask}: Which branch?\n")),
        "{detail}"
    );

    // Answered from the CLI, the run resumes there; its session is gone.
    sb.run(&["approvals", "respond", &ask, "--answer", "main"])
        .ok();
    assert_eq!(show(&sb, &id)["status"], json!("landed"));
    let item = inbox_item(&sb, &id, "went with main").expect("the result waits in the inbox");
    assert_eq!(item["reason"], json!("parent_gone"));
    assert_eq!(item["parentSessionId"], json!(session));
    assert_eq!(item["report"]["kind"], json!("result"));
}

/// The inbox item of mission `id` whose report says `summary`.
fn inbox_item(sb: &Sandbox, id: &str, summary: &str) -> Option<Value> {
    inbox(sb)
        .into_iter()
        .find(|i| i["missionId"] == json!(id) && i["report"]["summary"] == json!(summary))
}

/// Every report on mission `id`'s record is in the inbox, with `reason`.
fn every_report_in_the_inbox(sb: &Sandbox, id: &str, reason: &str) {
    let record = show(sb, id);
    let items: Vec<Value> = inbox(sb)
        .into_iter()
        .filter(|i| i["missionId"] == json!(id))
        .collect();
    let reports = record["reports"].as_array().unwrap();
    assert!(!reports.is_empty(), "{record:#}");
    for r in reports {
        let item = items
            .iter()
            .find(|i| i["report"]["id"] == r["id"])
            .unwrap_or_else(|| panic!("report {r} is not in the inbox: {items:#?}"));
        assert_eq!(item["reason"], json!(reason), "{item:#}");
    }
}

/// Lands at once with a result.
const LANDS: &str = r#"{"report":{"kind":"result","summary":"tidied"}},{"finish":"landed"}"#;
/// Reports, then works for longer than any test runs.
const WORKS_LONG: &str = r#"{"report":{"summary":"working"}},{"sleep":120000},{"finish":"landed"}"#;

/// A one-shot client: connect, open a session, send one prompt, and hang up as soon
/// as it is answered (as `acpx exec` does). What the agent said in the prompt.
async fn one_shot(sb: &Sandbox, prompt: &str) -> String {
    let mut editor = Editor::start(sb).await;
    let (session, _) = editor.new_session(sb).await;
    let (said, stop) = editor.prompt(&session, prompt).await;
    assert_eq!(stop, StopReason::EndTurn);
    editor.quit().await;
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_editor_server_ends_its_working_missions_with_a_reason_naming_the_signal() {
    let sb = Sandbox::new();
    world(&sb, json!([]), &[("worker", Some(&script(WORKS_LONG)))]);
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;
    let (said, _) = editor
        .prompt(&session, "/mission --policy default worker tidy the docs")
        .await;
    let id = mission_id_in(&said);
    editor
        .until_said("unit worker reported (progress): working")
        .await;
    let pid = editor.child.id().expect("missionboard acp runs") as i32;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = within(editor.child.wait()).await.unwrap();
    assert!(status.success(), "missionboard acp exited with {status}");

    let record = show(&sb, &id);
    assert_eq!(record["status"], json!("abandoned"), "{record:#}");
    assert_eq!(
        record["statusReason"],
        json!(
            "its editor session ended (missionboard acp was told to stop by a signal) before it finished, and nothing could resume it"
        ),
        "{record:#}"
    );
    assert_eq!(
        inbox_item(&sb, &id, "working").expect("the streamed report is filed too")["reason"],
        json!("parent_gone")
    );
    every_report_in_the_inbox(&sb, &id, "parent_gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_slash_mission_with_a_host_running_is_queued_there_and_lands_into_the_inbox() {
    let sb = Sandbox::new();
    world(&sb, json!([]), &[("worker", Some(&script(LANDS)))]);
    sb.run(&["config", "set", "default-mission-policy", "default"])
        .ok();
    let host = crate::harness::Background::spawn(sb.command(&["host", "--width", "2"]));
    let hosts = missionboard::mission::hosts::Hosts::new(sb.store());
    wait_for_async(60, "the missionboard host to advertise itself", || {
        hosts
            .live()
            .unwrap()
            .into_iter()
            .find(|h| h.width.is_some())
    })
    .await;

    let said = one_shot(&sb, "/mission worker tidy the docs").await;
    let machine = missionboard::host::machine_name();
    assert!(
        said.starts_with(&format!("Mission queued for the missionboard host on {machine} (position 1): named agent \"worker\" under envelope \"default\" (default-mission-policy).\n")),
        "{said}"
    );
    assert!(said.contains("\nIntent: tidy the docs\n"), "{said}");
    let id = mission_id_in(&said);
    assert!(
        said.ends_with(&format!("\nMission {id} runs on that host whether or not this session lives; its reports wait in the operator inbox ('missionboard inbox list'), and 'missionboard mission show {id}' follows it.")),
        "{said}"
    );

    // The session is gone; the host claims the mission and it lands.
    wait_for_async(60, "the queued mission to land", || {
        (show(&sb, &id)["status"] == json!("landed")).then_some(())
    })
    .await;
    let record = show(&sb, &id);
    assert_eq!(
        record["host"]["pid"],
        json!(host.pid()),
        "run by the host: {record:#}"
    );
    assert_eq!(record["parentSessionId"], Value::Null, "{record:#}");
    let result = inbox_item(&sb, &id, "tidied").expect("the result waits in the inbox");
    assert_eq!(result["reason"], json!("operator_fired"));
    every_report_in_the_inbox(&sb, &id, "operator_fired");
    let text = sb.run(&["mission", "show", &id]).ok().stdout;
    assert!(text.contains("\nStatus:    landed\n"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_shot_slash_mission_without_a_host_ends_with_the_session_and_its_reports_wait_in_the_inbox()
 {
    let sb = Sandbox::new();
    world(&sb, json!([]), &[("worker", Some(&script(WORKS_LONG)))]);
    sb.run(&["config", "set", "default-mission-policy", "default"])
        .ok();
    let said = one_shot(&sb, "/mission worker tidy the docs").await;
    let said = hosted_confirmation(&said);
    assert!(
        said.starts_with("Mission fired at named agent \"worker\" under envelope \"default\" (default-mission-policy).\n"),
        "{said}"
    );
    let id = mission_id_in(said);

    // The process has exited: the mission is settled, not left open with no host.
    let record = show(&sb, &id);
    assert_eq!(record["status"], json!("abandoned"), "{record:#}");
    assert_eq!(
        record["statusReason"],
        json!(
            "its editor session ended (the editor hung up) before it finished, and nothing could resume it"
        ),
        "{record:#}"
    );
    let ended = inbox_item(&sb, &id, "Mission ended: the session that fired it ended.")
        .expect("the settlement waits in the inbox");
    assert_eq!(ended["report"]["kind"], json!("blocker"));
    assert_eq!(ended["reason"], json!("parent_gone"));
    every_report_in_the_inbox(&sb, &id, "parent_gone");
    let text = sb.run(&["mission", "show", &id]).ok().stdout;
    assert!(
        text.contains("\nStatus:    abandoned — its editor session ended (the editor hung up) before it finished, and nothing could resume it\n"),
        "{text}"
    );
    let unit = sb.cwd.join("script-worker.json").display().to_string();
    wait_for_async(30, "the unit to be torn down", || {
        crate::harness::processes_mentioning(&unit)
            .is_empty()
            .then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_agent_fires_with_mission_start_under_the_same_refusals() {
    let sb = Sandbox::new();
    let start = |args: Value| json!({"tool_calls": [{"name": "mission_start", "arguments": args}]});
    let dialog = world(
        &sb,
        json!([
            start(json!({"intent": "tidy   the docs"})),
            start(json!({"intent": "tidy the docs", "agent": "worker"})),
            start(json!({"intent": "tidy the docs", "agent": "worker", "policy": "default"})),
            {"text": "Fired it."},
        ]),
        &[(
            "worker",
            Some(&script(
                r#"{"report":{"kind":"progress","summary":"on it"}},{"finish":"landed"}"#,
            )),
        )],
    );
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;
    let (said, stop) = editor.prompt(&session, "get the docs tidied").await;
    assert_eq!(stop, StopReason::EndTurn);
    // The unit's live lines may already stream into this turn, after the reply.
    let (_, after) = said
        .rsplit_once("Fired it.")
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        "unit worker reported (progress): on itunit worker landed".starts_with(after),
        "{said}"
    );
    let results: Vec<String> = requests(&dialog).last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        results[0],
        "error: missiontools: mission_start needs an agent: name one, or set a default with `missionboard config set default-mission-agent <name>`"
    );
    assert_eq!(
        results[1],
        "error: missiontools: mission_start needs an envelope: name one, or set a default with `missionboard config set default-mission-policy <name>`"
    );
    let fired: Value = serde_json::from_str(&results[2]).unwrap();
    assert_eq!(fired["intent"], json!("tidy the docs"));
    let id = fired["missionId"].as_str().unwrap().to_string();
    editor
        .until_said("unit worker reported (progress): on it")
        .await;
    editor.until_said("unit worker landed").await;
    assert_eq!(show(&sb, &id)["parentSessionId"], json!(session));
    editor.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_envelope_option_picks_a_sessions_envelope_and_refuses_an_unknown_one() {
    use agent_client_protocol::v1::schema::SetSessionConfigOptionRequest;
    let sb = Sandbox::new();
    world(&sb, json!([]), &[("mute", Some(&script(r#""hang""#)))]);
    let mut editor = Editor::start(&sb).await;
    let (session, opened) = editor.new_session(&sb).await;
    let current =
        |options: &[agent_client_protocol::v1::schema::SessionConfigOption]| match &options
            .iter()
            .find(|o| &*o.id.0 == "envelope")
            .unwrap()
            .kind
        {
            SessionConfigKind::Select(s) => s.current_value.0.to_string(),
            other => panic!("{other:?}"),
        };
    assert_eq!(current(&opened.config_options.unwrap()), "(default)");

    let set = |value: &str| SetSessionConfigOptionRequest::new(session.clone(), "envelope", value);
    let picked = within(editor.cx.send_request(set("strict")).block_task())
        .await
        .unwrap();
    assert_eq!(current(&picked.config_options), "strict");
    let refused = within(editor.cx.send_request(set("nope")).block_task()).await;
    let err = format!("{:?}", refused.unwrap_err());
    assert!(
        err.contains("unknown mission envelope \\\"nope\\\" (the session's envelope option): no such policy file on the search path"),
        "{err}"
    );

    let (said, _) = editor.prompt(&session, "/mission").await;
    assert!(
        said.contains("\nThis session's envelope option: strict\n"),
        "{said}"
    );
    assert!(said.contains("\n* hitl-policy-strict.json  "), "{said}");
    let (said, _) = editor.prompt(&session, "/mission mute wait").await;
    assert!(
        said.starts_with("Mission fired at named agent \"mute\" under envelope \"strict\" (the session's envelope option).\n"),
        "{said}"
    );
    editor.quit().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_mission_fires_a_template_as_the_cli_does_with_this_session_its_parent() {
    let sb = Sandbox::new();
    world(&sb, json!([]), &[("worker", Some(&script(LANDS)))]);
    sb.write(
        &sb.workspace().join("templates/tidy.toml"),
        r#"agent = "worker"
envelope = "default"
intent = "Tidy the {{area}} of {{repo}}"

[params.repo]
description = "owner/name of the repository"

[params.area]
description = "what to tidy"
default = "docs"
"#,
    );
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;

    // Refused as the CLI refuses: a missing parameter is named, nothing is fired.
    let (said, _) = editor.prompt(&session, "/mission --template tidy").await;
    assert!(said.contains("repo"), "{said}");
    let (said, _) = editor
        .prompt(
            &session,
            "/mission --template tidy repo=acme/api colour=red",
        )
        .await;
    assert!(said.contains("colour"), "{said}");
    let listed = sb.run(&["mission", "list", "--all", "--json"]).ok().stdout;
    assert_eq!(
        serde_json::from_str::<Value>(&listed).unwrap()["total"],
        json!(0)
    );

    let (said, stop) = editor
        .prompt(&session, "/mission --template tidy repo=acme/api")
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    let start = said
        .find("Mission ")
        .unwrap_or_else(|| panic!("no confirmation: {said}"));
    let short: String = said[start + "Mission ".len()..].chars().take(8).collect();
    assert!(
        said[start..].starts_with(&format!(
            "Mission {short} fired from template \"tidy\" at agent \"worker\" under envelope \"default\": Tidy the docs of acme/api\n{SESSION_END}"
        )),
        "{said}"
    );
    let listed: Value =
        serde_json::from_str(&sb.run(&["mission", "list", "--all", "--json"]).ok().stdout).unwrap();
    let id = listed["missions"][0]["id"].as_str().unwrap().to_string();
    assert!(id.starts_with(&short), "{listed:#}");
    wait_for_async(60, "the template's mission to land", || {
        (show(&sb, &id)["status"] == json!("landed")).then_some(())
    })
    .await;
    let record = show(&sb, &id);
    assert_eq!(record["intent"], json!("Tidy the docs of acme/api"));
    assert_eq!(
        record["parentSessionId"],
        json!(session.to_string()),
        "{record:#}"
    );
    editor.quit().await;
}

/// Issue 43: `/revise <id> <feedback>` sends a rested mission back to its agent
/// from the editor. With no `missionboard host` to queue to, this process hosts the
/// revised run (a new run on the same record, the feedback its next prompt), which
/// lands again through its check. A prompt without feedback is refused with the
/// usage, moving nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_revise_sends_a_stuck_mission_back_and_it_lands_again_through_its_check() {
    let sb = Sandbox::new();
    world(&sb, json!([]), &[("stub", None)]);
    let id = sb.stuck_on_revise_check();
    let mut editor = Editor::start(&sb).await;
    let (session, _) = editor.new_session(&sb).await;
    let advertised = editor
        .until("the /revise command", |u| match &u.update {
            SessionUpdate::AvailableCommandsUpdate(c) => {
                c.available_commands.iter().any(|c| c.name == "revise")
            }
            _ => false,
        })
        .await;
    assert!(matches!(
        advertised.update,
        SessionUpdate::AvailableCommandsUpdate(_)
    ));

    let (said, stop) = editor.prompt(&session, &format!("/revise {id}")).await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        said,
        "usage: /revise <mission-id> <feedback> — the mission's id (or a unique prefix of it) and what its agent should change"
    );
    assert_eq!(show(&sb, &id)["status"], json!("stuck"), "nothing moved");

    let (said, stop) = editor
        .prompt(&session, &format!("/revise {} write revised.txt", &id[..8]))
        .await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(
        said,
        format!(
            "Mission {id} sent back to agent \"stub\" (run 2) in a fresh session, briefed on what was done: the feedback is its next prompt.\n'missionboard mission show {id}' follows it."
        )
    );
    let landed = wait_for_async(60, "the revised run to land", || {
        let v = show(&sb, &id);
        (v["status"] == json!("landed")).then_some(v)
    })
    .await;
    assert_eq!(
        (
            &landed["check"]["state"],
            &landed["check"]["tries"],
            &landed["runs"][0]["run"],
            &landed["runs"][0]["revisedBy"],
            &landed["runs"][0]["fromStatus"],
            &landed["runs"][0]["queued"],
        ),
        (
            &json!("passed"),
            &json!(1),
            &json!(2),
            &json!("editor"),
            &json!("stuck"),
            &json!(false),
        ),
        "{landed:#}"
    );
    // The feedback was the agent's next prompt: it wrote it, word for word.
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("revised.txt")).unwrap(),
        "write revised.txt"
    );
    let reports = crate::harness::report_summaries(&sb, &id);
    assert_eq!(
        reports.last().map(String::as_str),
        Some(
            format!(
                "[check] check passed (try 1 of 1): {} — exit 0",
                crate::harness::REVISE_CHECK
            )
            .as_str()
        ),
        "{reports:#?}"
    );
    assert!(
        reports.contains(
            &"[revise] revised by editor after it rested stuck (run 2): write revised.txt"
                .to_string()
        ),
        "{reports:#?}"
    );
    editor.quit().await;
}
