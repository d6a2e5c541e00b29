//! Contract tests for the mission-tools MCP server, the socket and the
//! bridge, driven by a plain rmcp client.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::Duration;

use common::*;
use futures::future::BoxFuture;
use missionboard::mission_mcp::{
    MissionSocket, MissionToolHandler, TOKEN_FILE_FLAG, connect_mission_socket,
    serve_mission_socket,
};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};

async fn client(socket: &MissionSocket) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    let stream = connect_mission_socket(socket.path(), socket.token())
        .await
        .unwrap();
    ().serve(stream).await.unwrap()
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn lists_exactly_four_tools_and_forwards_raw_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m-1.sock");
    let handler = RecordingHandler::new("blue");
    let socket = serve_mission_socket(&path, handler.clone()).await.unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    let c = client(&socket).await;
    let tools = c.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "mission_report",
            "mission_plan",
            "mission_ask_attention",
            "mission_finish"
        ]
    );
    let finish = &tools[3];
    assert_eq!(finish.input_schema["required"], json!(["status"]));
    assert!(
        finish
            .description
            .as_deref()
            .unwrap_or("")
            .contains("final")
    );

    let args = json!({"kind": "finding", "summary": "s", "refs": "a,b", "whatever": 1});
    let result = c
        .call_tool(
            CallToolRequestParams::new("mission_report")
                .with_arguments(args.as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(text(&result), "recorded finding report");
    assert_eq!(
        Value::Object(handler.calls()[0].1.clone()),
        args,
        "arguments arrive untouched"
    );

    let answer = c
        .call_tool(CallToolRequestParams::new("mission_ask_attention").with_arguments(Map::new()))
        .await
        .unwrap();
    assert_eq!(text(&answer), "blue");

    // A handler error is a tool error result carrying the text.
    let err = c
        .call_tool(CallToolRequestParams::new("mission_finish"))
        .await
        .unwrap();
    assert_eq!(err.is_error, Some(true));
    assert_eq!(
        text(&err),
        "missiontools: mission_finish requires a status (landed|derailed|stuck|abandoned)"
    );

    let unknown = c
        .call_tool(CallToolRequestParams::new("mission_launch"))
        .await
        .unwrap();
    assert_eq!(unknown.is_error, Some(true));
    assert_eq!(
        text(&unknown),
        "missiontools: unknown tool \"mission_launch\" (want mission_report, mission_ask_attention, mission_plan or mission_finish)"
    );
    assert_eq!(
        handler.calls().len(),
        3,
        "unknown tools never reach the handler"
    );
    c.cancel().await.unwrap();
    socket.close().await;
    assert!(!path.exists());
}

/// Holds every ask until the test releases it, to show a blocking ask does
/// not hold up other calls or connections.
struct HeldAsk(Arc<tokio::sync::Notify>);

impl MissionToolHandler for HeldAsk {
    fn call(
        &self,
        tool: &str,
        _args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<String, String>> {
        let release = (tool == "mission_ask_attention").then(|| self.0.clone());
        Box::pin(async move {
            match release {
                Some(release) => {
                    release.notified().await;
                    Ok("eventually".into())
                }
                None => Ok("quick".into()),
            }
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn many_connections_and_a_blocking_ask_does_not_block_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m-2.sock");
    let release = Arc::new(tokio::sync::Notify::new());
    let socket = serve_mission_socket(&path, Arc::new(HeldAsk(release.clone())))
        .await
        .unwrap();
    let asker = client(&socket).await;
    let other = client(&socket).await;
    let ask = tokio::spawn(async move {
        let r = asker
            .call_tool(CallToolRequestParams::new("mission_ask_attention"))
            .await
            .unwrap();
        text(&r)
    });
    let quick = tokio::time::timeout(
        Duration::from_secs(10),
        other.call_tool(CallToolRequestParams::new("mission_report")),
    )
    .await
    .expect("the report is not held up by the pending ask")
    .unwrap();
    assert_eq!(text(&quick), "quick");
    assert!(
        !ask.is_finished(),
        "the ask is still waiting for its answer"
    );
    release.notify_one();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(10), ask)
            .await
            .unwrap()
            .unwrap(),
        "eventually"
    );
    assert_eq!(socket.connections_accepted(), 2);
    drop(socket);
    assert!(!path.exists(), "dropping the socket removes the file");
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_sockets_are_replaced_and_other_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m-3.sock");
    // A socket file left behind by a dead host. Other tests in this binary spawn
    // children, and one forked at this moment holds a copy of the listener until it
    // execs (a live socket, which the probe rightly refuses to replace): the file is
    // stale once connecting to it is refused.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    wait_for_async(60, "the dropped listener to refuse connections", || {
        match std::os::unix::net::UnixStream::connect(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Some(()),
            _ => None,
        }
    })
    .await;
    let socket = serve_mission_socket(&path, RecordingHandler::new("x"))
        .await
        .unwrap();
    let c = client(&socket).await;
    assert_eq!(c.list_all_tools().await.unwrap().len(), 4);
    socket.close().await;

    let file = dir.path().join("m-4.sock");
    std::fs::write(&file, "precious").unwrap();
    let err = serve_mission_socket(&file, RecordingHandler::new("x"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "precious");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bridge_reports_an_unreachable_socket_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("m-none.token");
    std::fs::write(&token_file, "x").unwrap();
    let output = tokio::process::Command::new(EXE)
        .args(["mcp-bridge", "/nonexistent/m-none.sock", TOKEN_FILE_FLAG])
        .arg(&token_file)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "missionboard mcp-bridge: cannot reach mission socket /nonexistent/m-none.sock"
        ),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_bridge_pipes_a_whole_mcp_session() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m-5.sock");
    let handler = RecordingHandler::new("x");
    let socket = serve_mission_socket(&path, handler.clone()).await.unwrap();
    let token_file = socket.issue_bridge_token(dir.path()).unwrap();
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let handed = std::fs::read_to_string(&token_file).unwrap();
    let mut child = tokio::process::Command::new(EXE)
        .arg("mcp-bridge")
        .arg(&path)
        .arg(TOKEN_FILE_FLAG)
        .arg(&token_file)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let c = ().serve((stdout, stdin)).await.unwrap();
    let r = c
        .call_tool(
            CallToolRequestParams::new("mission_plan")
                .with_arguments(json!({"entries": []}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(false));
    assert_eq!(handler.names(), ["mission_plan"]);
    // The bridge spent its token; the next one waits in the same file for a bridge
    // the agent may start again.
    let next = std::fs::read_to_string(&token_file).unwrap();
    assert_eq!(next.len(), handed.len());
    assert_ne!(next, handed);
    // Closing the client's side (the bridge's stdin) ends the bridge.
    c.cancel().await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_without_the_mission_token_is_refused_and_reaches_no_tool() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m-6.sock");
    let handler = RecordingHandler::new("x");
    let socket = serve_mission_socket(&path, handler.clone()).await.unwrap();
    let finish = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mission_finish","arguments":{"status":"derailed"}}}"#;
    for preamble in [
        String::new(),
        "missionboard-token guessed\n".to_string(),
        format!("missionboard-token {}x\n", socket.token()),
    ] {
        let mut stream = tokio::net::UnixStream::connect(&path).await.unwrap();
        // The socket may hang up as soon as the bad first line is read, so the rest of
        // this write can meet a closed pipe; the refusal is already on its way back.
        let _ = stream
            .write_all(format!("{preamble}{finish}\n").as_bytes())
            .await;
        let mut reply = String::new();
        BufReader::new(stream).read_line(&mut reply).await.unwrap();
        assert!(
            reply.contains(
                "mission socket: refused: this connection did not present the mission's token"
            ),
            "{preamble:?}: {reply}"
        );
    }
    assert!(handler.names().is_empty(), "{:?}", handler.names());

    // The bridge without its token file says what is missing.
    let output = tokio::process::Command::new(EXE)
        .arg("mcp-bridge")
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("missionboard mcp-bridge: no mission token: the host names its file with --token-file in the mission server entry it hands the agent"),
        "{stderr}"
    );
    // A bridge token admits one connection: a replayed token is refused, and a bridge
    // that finds no token file says so.
    let token_file = socket.issue_bridge_token(dir.path()).unwrap();
    let token = std::fs::read_to_string(&token_file).unwrap();
    let first = connect_mission_socket(&path, &token).await.unwrap();
    let c1 = ().serve(first).await.unwrap();
    assert_eq!(c1.list_all_tools().await.unwrap().len(), 4);
    let mut replay = connect_mission_socket(&path, &token).await.unwrap();
    let mut reply = String::new();
    BufReader::new(&mut replay)
        .read_line(&mut reply)
        .await
        .unwrap();
    assert!(
        reply.contains("this connection did not present the mission's token"),
        "{reply}"
    );
    std::fs::remove_file(&token_file).unwrap();
    let output = tokio::process::Command::new(EXE)
        .arg("mcp-bridge")
        .arg(&path)
        .arg(TOKEN_FILE_FLAG)
        .arg(&token_file)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot read the mission token at")
            && stderr.contains("the host writes one there for each bridge of the mission's unit"),
        "{stderr}"
    );
    // The real token still works.
    let c = client(&socket).await;
    assert_eq!(c.list_all_tools().await.unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn once_the_unit_is_known_the_token_admits_only_its_own_process_tree() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m-8.sock");
    let handler = RecordingHandler::new("x");
    let socket = serve_mission_socket(&path, handler.clone()).await.unwrap();
    // A unit that is not this test process nor one of its ancestors: the test holds
    // the right token, as a unit that copied it out of another's environment would.
    let mut other = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    socket.unit_pid_slot().set(other.id()).unwrap();
    let stream = connect_mission_socket(&path, socket.token()).await.unwrap();
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).await.unwrap();
    assert!(
        reply.contains(
            "mission socket: refused: this connection does not come from the mission's own unit"
        ),
        "{reply}"
    );
    assert!(handler.names().is_empty(), "{:?}", handler.names());
    let _ = other.kill();
    let _ = other.wait();

    // With this process as the unit, the same token is admitted.
    let path = dir.path().join("m-9.sock");
    let socket = serve_mission_socket(&path, handler.clone()).await.unwrap();
    socket.unit_pid_slot().set(std::process::id()).unwrap();
    let c = client(&socket).await;
    assert_eq!(c.list_all_tools().await.unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_socket_a_live_host_serves_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m-7.sock");
    let live = serve_mission_socket(&path, RecordingHandler::new("x"))
        .await
        .unwrap();
    let err = serve_mission_socket(&path, RecordingHandler::new("y"))
        .await
        .err()
        .unwrap();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
    assert!(
        err.to_string().contains("is served by a live host"),
        "{err}"
    );
    let c = client(&live).await;
    assert_eq!(c.list_all_tools().await.unwrap().len(), 4);
}
