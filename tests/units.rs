//! End-to-end unit plumbing: the library is the host, the built
//! `missionboard stub-agent` is the child, and mission tools go through the
//! real `missionboard mcp-bridge` into the host's socket.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use missionboard::acp_client::{PermissionReply, StopReason, TurnUsage, UnitError, UnitEvent};
use serde_json::{Value, json};

async fn within<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(TEST_DEADLINE, fut)
        .await
        .expect("test exceeded its deadline")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_mission_turn_plans_reports_asks_and_finishes() {
    within(async {
        let script = json!({
            "name": "full",
            "turns": [{ "steps": [
                {"plan": [{"content": "read config", "status": "in_progress", "priority": "high"},
                          {"content": "write summary", "status": "pending", "priority": "medium"}],
                 "via": "both"},
                {"say": {"text": "Reading the config loader.", "chunks": 3}},
                {"think": "hmm"},
                {"tool_call": {"title": "read src/config.rs", "kind": "read"}},
                {"usage": {"used": 1200, "size": 32768, "input": 900, "output": 300}},
                {"report": {"kind": "progress", "summary": "config read", "refs": ["src/config.rs"]}},
                {"ask": {"summary": "Rename the env var too?", "detail": "it is public",
                         "then": {"report": {"kind": "finding", "summary": "answer was: {{answer}}"}}}},
                {"finish": {"status": "landed", "reason": "done"}}
            ]}]
        });
        let mut h = start(Options { script: Some(script), ..Default::default() }).await;
        assert!(h.unit.session_id().starts_with("stub-session-"));
        assert_eq!(h.unit.capabilities().agent_name.as_deref(), Some("missionboard-stub"));

        let outcome = h.unit.prompt(vec!["preamble".into(), "audit the config".into()]).await.unwrap();
        assert_eq!(outcome.stop_reason, StopReason::EndTurn);
        assert_eq!(
            outcome.usage,
            Some(TurnUsage { total_tokens: 1200, input_tokens: 900, output_tokens: 300, ..Default::default() })
        );

        let calls = h.handler.calls();
        let names: Vec<&str> = calls.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["mission_plan", "mission_report", "mission_ask_attention", "mission_report", "mission_finish"]
        );
        assert_eq!(calls[0].1["entries"][0]["content"], "read config");
        assert_eq!(calls[0].1["entries"][1]["priority"], "medium");
        assert_eq!(Value::Object(calls[1].1.clone()), json!({"kind": "progress", "summary": "config read", "refs": ["src/config.rs"]}));
        assert_eq!(Value::Object(calls[2].1.clone()), json!({"summary": "Rename the env var too?", "detail": "it is public"}));
        assert_eq!(calls[3].1["summary"], "answer was: yes", "{{answer}} substituted");
        assert_eq!(Value::Object(calls[4].1.clone()), json!({"status": "landed", "reason": "done"}));

        // Ordering guarantee: every update of the turn is already queued.
        let events = drain(&mut h.events);
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                UnitEvent::AgentText { text: t, .. } => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "Reading the config loader.");
        assert!(events.contains(&UnitEvent::Thought("hmm".into())));
        let plan = events.iter().find_map(|e| match e {
            UnitEvent::Plan(items) => Some(items.clone()),
            _ => None,
        });
        let plan = plan.expect("a native plan update arrived");
        assert_eq!((plan[0].content.as_str(), plan[0].status.as_str(), plan[0].priority.as_str()), ("read config", "in_progress", "high"));
        assert!(events.iter().any(|e| matches!(e, UnitEvent::ToolCall { title, kind, status, .. }
            if title == "read src/config.rs" && kind == "read" && status == "in_progress")));
        assert!(events.iter().any(|e| matches!(e, UnitEvent::ToolCallUpdate { status: Some(s), .. } if s == "completed")));
        assert!(events.contains(&UnitEvent::Usage { used: 1200, size: 32768, cost: None }));
        assert!(matches!(events.last(), Some(UnitEvent::TurnUsage(u)) if u.total_tokens == 1200));

        let socket = h.socket.take().unwrap();
        assert!(socket.connections_accepted() >= 1);
        h.unit.shutdown().await;
        socket.close().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn b_permissions_are_answered_by_kind_and_reported() {
    within(async {
        let script = json!({"steps": [
            {"permission": {"title": "edit src/lib.rs", "kind": "edit", "times": 2, "report": true}},
            {"say": "perms={{perms}}"}
        ]});
        let mut h = start(Options { script: Some(script), ..Default::default() }).await;
        let mut asks = h.unit.take_permissions().unwrap();
        let answerer = tokio::spawn(async move {
            let mut seen = Vec::new();
            for reply in [PermissionReply::Allow, PermissionReply::Reject] {
                let ask = asks.recv().await.expect("a permission ask");
                seen.push((ask.tool_call_id.clone(), ask.title.clone(), ask.kind.clone(), ask.options.clone(), ask.raw_input.clone()));
                ask.reply.send(reply).unwrap();
            }
            seen
        });
        let outcome = h.unit.prompt(vec!["go".into()]).await.unwrap();
        assert_eq!(outcome.stop_reason, StopReason::EndTurn);
        let seen = answerer.await.unwrap();
        assert_eq!(seen.len(), 2);
        assert_ne!(seen[0].0, seen[1].0, "each request has a fresh tool call id");
        assert_eq!((seen[0].1.as_str(), seen[0].2.as_str()), ("edit src/lib.rs", "edit"));
        let kinds: Vec<&str> = seen[0].3.iter().map(|(_, k)| k.as_str()).collect();
        assert_eq!(kinds, ["allow_once", "allow_always", "reject_once", "reject_always"]);
        assert_eq!(seen[0].4, Some(json!({"stub": true, "attempt": 1})));

        let summaries: Vec<String> = h
            .handler
            .calls()
            .iter()
            .map(|(_, a)| a["summary"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            summaries,
            ["permission 1/2 for edit src/lib.rs: allowed", "permission 2/2 for edit src/lib.rs: denied"]
        );
        let events = drain(&mut h.events);
        assert!(events.contains(&UnitEvent::AgentText { text: "perms=allowed,denied".into(), message: None }));
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn b2_dropped_permission_asks_are_cancelled_not_invented() {
    within(async {
        // Only allow options offered: a Reject must come back `cancelled`,
        // and an ask dropped unanswered is `cancelled` too.
        let script = json!({"steps": [
            {"permission": {"title": "run rm", "kind": "execute", "times": 2, "options": ["allow_always"]}},
            {"say": "perms={{perms}}"}
        ]});
        let mut h = start(Options { script: Some(script), ..Default::default() }).await;
        let mut asks = h.unit.take_permissions().unwrap();
        let answerer = tokio::spawn(async move {
            let first = asks.recv().await.unwrap();
            first.reply.send(PermissionReply::Reject).unwrap();
            drop(asks.recv().await.unwrap());
        });
        h.unit.prompt(vec!["go".into()]).await.unwrap();
        answerer.await.unwrap();
        let events = drain(&mut h.events);
        assert!(events.contains(&UnitEvent::AgentText { text: "perms=cancelled,cancelled".into(), message: None }), "{events:?}");
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn c_an_errored_turn_is_an_rpc_error_with_the_agents_message() {
    within(async {
        let script = json!({"steps": [{"say": "trying"}, {"error": {"code": -32001, "message": "the model fell over"}}]});
        let h = start(Options { script: Some(script), ..Default::default() }).await;
        let err = h.unit.prompt(vec!["go".into()]).await.unwrap_err();
        match &err {
            UnitError::Rpc { code, message, during, .. } => {
                assert_eq!((*code, message.as_str(), *during), (-32001, "the model fell over", "session/prompt"));
            }
            other => panic!("wanted an Rpc error, got {other:?}"),
        }
        assert_eq!(err.to_string(), "agent returned error -32001 to session/prompt: the model fell over");
        // The unit survives an errored turn.
        assert!(h.unit.exit_status().is_none());
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn d_a_crash_mid_turn_names_the_exit_and_is_reaped() {
    within(async {
        let h = start(Options {
            args: vec![],
            ..Default::default()
        })
        .await;
        let pid = h.unit.pid();
        let err = h
            .unit
            .prompt(vec!["preamble".into(), "@stub scenario=crash".into()])
            .await
            .unwrap_err();
        match &err {
            UnitError::Exited {
                status,
                stderr_tail,
                during,
            } => {
                assert_eq!(status.code, Some(3));
                assert_eq!(*during, "session/prompt");
                assert!(
                    stderr_tail.contains("crash: exiting with code 3"),
                    "{stderr_tail}"
                );
            }
            other => panic!("wanted Exited, got {other:?}"),
        }
        let text = err.to_string();
        assert!(
            text.starts_with("unit process exited (exit code 3) during session/prompt; stderr: "),
            "{text}"
        );
        assert_eq!(h.unit.exit_status().and_then(|s| s.code), Some(3));
        assert!(!pid_alive(pid), "the crashed child was reaped");
        // Prompting a dead unit is an error too, never a panic or a hang.
        let again = h.unit.prompt(vec!["again".into()]).await.unwrap_err();
        assert!(
            matches!(
                again,
                UnitError::Exited { .. } | UnitError::ConnectionClosed { .. }
            ),
            "{again:?}"
        );
        h.unit.shutdown().await;
    })
    .await;
}

/// Garbage on the agent's stdout is dropped and reported; the turn it
/// happened in completes normally.
#[tokio::test(flavor = "multi_thread")]
async fn e_stdout_garbage_is_survived_and_reported() {
    within(async {
        let script = json!({"steps": [
            {"stdout_garbage": "Debugger listening on ws://127.0.0.1:9229"},
            {"say": "still here"},
            "stdout_garbage",
            {"report": {"summary": "after the garbage"}}
        ]});
        let mut h = start(Options {
            script: Some(script),
            ..Default::default()
        })
        .await;
        let outcome = h.unit.prompt(vec!["go".into()]).await.unwrap();
        assert_eq!(outcome.stop_reason, StopReason::EndTurn);
        let events = drain(&mut h.events);
        assert!(
            events.contains(&UnitEvent::StdoutGarbage(
                "Debugger listening on ws://127.0.0.1:9229".into()
            )),
            "{events:?}"
        );
        assert!(events.contains(&UnitEvent::StdoutGarbage(
            "this line is not JSON-RPC".into()
        )));
        assert!(events.contains(&UnitEvent::AgentText {
            text: "still here".into(),
            message: None
        }));
        assert_eq!(h.handler.names(), ["mission_report"]);
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn f_an_exhausted_script_is_an_error_with_the_exact_text() {
    within(async {
        let transcript = tempfile::NamedTempFile::new().unwrap();
        let script = json!({"name": "one-turn", "turns": [{"steps": [{"mute": "just prose"}]}]});
        let mut env = std::collections::BTreeMap::new();
        env.insert(
            "STUB_TRANSCRIPT".to_owned(),
            transcript.path().display().to_string(),
        );
        let h = start(Options {
            script: Some(script),
            env,
            ..Default::default()
        })
        .await;
        let first = h
            .unit
            .prompt(vec!["preamble".into(), "do the thing".into()])
            .await
            .unwrap();
        assert_eq!(first.stop_reason, StopReason::EndTurn);
        let err = h
            .unit
            .prompt(vec!["You said nothing; report.".into()])
            .await
            .unwrap_err();
        match err {
            UnitError::Rpc { message, .. } => {
                assert_eq!(
                    message,
                    "stub script 'one-turn' exhausted: prompt asked for turn 2, script holds 1"
                )
            }
            other => panic!("wanted an Rpc error, got {other:?}"),
        }
        let lines = std::fs::read_to_string(transcript.path()).unwrap();
        let lines: Vec<&str> = lines.lines().collect();
        assert_eq!(
            lines,
            [
                "turn=1 preamble do the thing",
                "turn=2 You said nothing; report."
            ]
        );
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn g_hang_then_cancel_ends_the_turn_cancelled_quickly() {
    within(async {
        let Harness {
            unit,
            mut events,
            socket: _socket,
            dir: _dir,
            ..
        } = start(Options::default()).await;
        let unit = Arc::new(unit);
        let turn = tokio::spawn({
            let unit = unit.clone();
            async move {
                unit.prompt(vec!["preamble".into(), "please hang".into()])
                    .await
            }
        });
        wait_event(&mut events, Duration::from_secs(10), |e| {
            matches!(e, UnitEvent::AgentText { .. })
        })
        .await;
        unit.cancel();
        // A deadline against a hang, not a latency figure (the hang script never ends
        // its turn by itself, so only the cancel can).
        let outcome = tokio::time::timeout(Duration::from_secs(30), turn)
            .await
            .expect("the cancel ended the turn")
            .unwrap()
            .unwrap();
        assert_eq!(outcome.stop_reason, StopReason::Cancelled);
        // The session stays usable after a cancel... but the hang script has
        // only one turn.
        let err = unit.prompt(vec!["next".into()]).await.unwrap_err();
        assert!(err.to_string().contains("exhausted"), "{err}");
        Arc::into_inner(unit).unwrap().shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn g2_cancel_answers_a_pending_permission_cancelled() {
    within(async {
        let script =
            json!({"steps": [{"permission": {"title": "edit", "times": 1}}, {"say": "never"}]});
        let Harness {
            mut unit,
            mut events,
            socket: _socket,
            dir: _dir,
            ..
        } = start(Options {
            script: Some(script),
            ..Default::default()
        })
        .await;
        let mut asks = unit.take_permissions().unwrap();
        let unit = Arc::new(unit);
        let turn = tokio::spawn({
            let unit = unit.clone();
            async move { unit.prompt(vec!["go".into()]).await }
        });
        let ask = tokio::time::timeout(Duration::from_secs(10), asks.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(!ask.reply.is_closed());
        unit.cancel();
        let outcome = tokio::time::timeout(Duration::from_secs(30), turn)
            .await
            .expect("the cancel ended the turn")
            .unwrap()
            .unwrap();
        assert_eq!(outcome.stop_reason, StopReason::Cancelled);
        // The adapter answered for us and stopped listening for our reply.
        assert!(eventually(Duration::from_secs(30), || ask.reply.is_closed()).await);
        assert!(!drain(&mut events).contains(&UnitEvent::AgentText {
            text: "never".into(),
            message: None
        }));
        Arc::into_inner(unit).unwrap().shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn i_shutdown_leaves_no_process_and_removes_the_socket() {
    within(async {
        let mut h = start(Options::default()).await;
        let pid = h.unit.pid();
        assert!(pid_alive(pid));
        // The default scenario lands through the bridge.
        let outcome = h
            .unit
            .prompt(vec!["preamble".into(), "land it".into()])
            .await
            .unwrap();
        assert_eq!(outcome.stop_reason, StopReason::EndTurn);
        assert_eq!(
            h.handler.names(),
            [
                "mission_plan",
                "mission_report",
                "mission_report",
                "mission_report",
                "mission_finish"
            ]
        );
        let socket_arg = h.socket_path.display().to_string();
        assert!(
            !processes_mentioning(&socket_arg).is_empty(),
            "the bridge runs while the unit lives"
        );

        let status = h.unit.shutdown().await;
        assert!(status.is_some(), "shutdown reaped the child");
        assert!(!pid_alive(pid), "unit pid {pid} is gone");
        assert!(
            eventually(Duration::from_secs(30), || processes_mentioning(
                &socket_arg
            )
            .is_empty())
            .await,
            "the mcp-bridge grandchild exited too"
        );
        let socket = h.socket.take().unwrap();
        assert!(h.socket_path.exists());
        socket.close().await;
        assert!(!h.socket_path.exists(), "socket file removed");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_a_unit_kills_its_process_group() {
    within(async {
        let h = start(Options::default()).await;
        let pid = h.unit.pid();
        let unit = h.unit;
        drop(unit);
        assert!(
            eventually(Duration::from_secs(30), || !pid_alive(pid)).await,
            "pid {pid} reaped after drop"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mission_steps_without_a_mission_server_fail_clearly() {
    within(async {
        let script = json!({"steps": [{"say": "hi"}, {"report": {"summary": "x"}}]});
        let h = start(Options {
            script: Some(script),
            mission_server: false,
            ..Default::default()
        })
        .await;
        let err = h.unit.prompt(vec!["go".into()]).await.unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("needs the 'mission' MCP server, but session/new provided none"),
            "{text}"
        );
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn builtins_are_picked_from_the_intent_and_the_nudge_takes_turn_two() {
    within(async {
        let mut h = start(Options::default()).await;
        let first = h
            .unit
            .prompt(vec![
                "Finish stuck if you must.".into(),
                "nudged: audit it".into(),
            ])
            .await
            .unwrap();
        assert_eq!(first.stop_reason, StopReason::EndTurn);
        assert!(h.handler.calls().is_empty(), "turn 1 of nudged is mute");
        // The nudge text names another scenario; it must not re-parse.
        h.unit.prompt(vec!["crash now".into()]).await.unwrap();
        assert_eq!(
            h.handler.names().last().map(String::as_str),
            Some("mission_finish")
        );
        let events = drain(&mut h.events);
        assert!(
            events
                .iter()
                .any(|e| matches!(e, UnitEvent::AgentText { .. }))
        );
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn fenced_stub_blocks_and_tools_n() {
    within(async {
        let mut h = start(Options::default()).await;
        let intent = "do it\n```stub\n{\"steps\": [{\"say\": \"inline {{turn}}\"}], \"stop\": \"refusal\"}\n```".to_owned();
        let outcome = h.unit.prompt(vec![intent]).await.unwrap();
        assert_eq!(outcome.stop_reason, StopReason::Refusal);
        assert!(drain(&mut h.events).contains(&UnitEvent::AgentText { text: "inline 1".into(), message: None }));
        h.unit.shutdown().await;

        let mut h = start(Options::default()).await;
        h.unit.prompt(vec!["p".into(), "run tools-3".into()]).await.unwrap();
        let cards = drain(&mut h.events)
            .into_iter()
            .filter(|e| matches!(e, UnitEvent::ToolCall { .. }))
            .count();
        assert_eq!(cards, 3);
        assert_eq!(h.handler.names(), ["mission_report", "mission_finish"]);
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_script_file_fails_startup_with_the_reason() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, r#"{"steps": [{"jump": 1}]}"#).unwrap();
        let spec = missionboard::acp_client::UnitSpec {
            program: EXE.into(),
            args: vec![
                "stub-agent".into(),
                "--script".into(),
                path.display().to_string(),
            ],
            cwd: dir.path().to_path_buf(),
            additional_dirs: Vec::new(),
            supervisor: Some(EXE.into()),
            ..Default::default()
        };
        let err = missionboard::acp_client::Unit::start(spec)
            .await
            .err()
            .expect("startup fails");
        let text = err.to_string();
        assert!(text.contains("during initialize"), "{text}");
        assert!(
            text.contains("stub: script ") && text.contains("a step must name exactly one of"),
            "{text}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_program_is_a_spawn_error() {
    let spec = missionboard::acp_client::UnitSpec {
        program: "/nonexistent/agent".into(),
        cwd: std::env::temp_dir(),
        additional_dirs: Vec::new(),
        supervisor: Some(EXE.into()),
        ..Default::default()
    };
    let err = missionboard::acp_client::Unit::start(spec)
        .await
        .err()
        .expect("spawn fails");
    assert!(matches!(err, UnitError::Spawn { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_within_times_out_and_cancels_the_turn() {
    within(async {
        let h = start(Options::default()).await;
        let err = h
            .unit
            .prompt_within(vec!["p".into(), "hang".into()], Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                UnitError::Timeout {
                    during: "session/prompt",
                    ..
                }
            ),
            "{err:?}"
        );
        // The stub honoured the cancel (its own word), so the grace was not sat out.
        assert!(
            h.unit.stderr_tail().contains("cancelled"),
            "{}",
            h.unit.stderr_tail()
        );
        h.unit.shutdown().await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_program_that_is_not_an_agent_fails_startup_clearly() {
    within(async {
        let dir = tempfile::tempdir().unwrap();
        let spec = |script: &str| missionboard::acp_client::UnitSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: dir.path().to_path_buf(),
            additional_dirs: Vec::new(),
            supervisor: Some(EXE.into()),
            ..Default::default()
        };
        // Chatter and exit: the exit and its stderr are named.
        let err = missionboard::acp_client::Unit::start(spec(
            "echo hello; echo 'no such agent' >&2; exit 7",
        ))
        .await
        .err()
        .unwrap();
        assert!(
            matches!(&err, UnitError::Exited { status, .. } if status.code == Some(7)),
            "{err:?}"
        );
        assert!(err.to_string().contains("no such agent"), "{err}");

        // Hanging up stdout while staying alive: a closed connection.
        let err = missionboard::acp_client::Unit::start(spec("exec 1>&-; exec sleep 30"))
            .await
            .err()
            .unwrap();
        assert!(
            matches!(
                err,
                UnitError::ConnectionClosed {
                    during: "initialize",
                    ..
                }
            ),
            "{err:?}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parked_ask_is_asked_again_with_its_ask_id() {
    within(async {
        let script = json!({"steps": [
            {"ask": {"summary": "ship it?", "retries": 2}},
            {"report": {"kind": "finding", "summary": "got {{answer}}"}}
        ]});
        let h = start(Options { script: Some(script), ..Default::default() }).await;
        h.handler.ask_replies.lock().unwrap().extend([
            "no answer yet (ask_id=ask-42); call mission_ask_attention again with this ask_id to keep waiting, or carry on".to_owned(),
        ]);
        h.unit.prompt(vec!["go".into()]).await.unwrap();
        let calls = h.handler.calls();
        assert_eq!(calls.len(), 3);
        assert_eq!(calls[0].1.get("ask_id"), None);
        assert_eq!(calls[1].1["ask_id"], "ask-42");
        assert_eq!(calls[1].1["summary"], "ship it?");
        assert_eq!(calls[2].1["summary"], "got yes");
        h.unit.shutdown().await;
    })
    .await;
}
