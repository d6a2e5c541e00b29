//! The native agent (`missionboard agent`) driven directly over ACP: the library is
//! the host, the built binary the unit, its mission tools on a recording handler
//! behind the real MCP bridge, and its model a loopback endpoint this test holds.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::model_server::{ModelServer, Reply};
use common::*;
use missionboard::acp_client::{StopReason, Unit, UnitEvent, UnitSpec, mission_meta};
use missionboard::mission_mcp::{bridge_server_entry, serve_mission_socket};

#[tokio::test(flavor = "multi_thread")]
async fn session_cancel_mid_model_call_ends_the_turn_cancelled() {
    tokio::time::timeout(TEST_DEADLINE, async {
        let dir = tempfile::tempdir().unwrap();
        let handler = RecordingHandler::new("yes");
        let socket_path = dir.path().join("m-test.sock");
        let socket = serve_mission_socket(&socket_path, handler.clone())
            .await
            .unwrap();
        let server = ModelServer::start(vec![Reply::Hang]);
        let url = server.url.clone();
        let spec = UnitSpec {
            program: PathBuf::from(EXE),
            args: ["agent", "--base-url", &url, "--model", "m"]
                .map(String::from)
                .to_vec(),
            // A home of its own, so no config of the machine's leaks in.
            env: [(
                "MISSIONBOARD_HOME".to_string(),
                dir.path().display().to_string(),
            )]
            .into(),
            cwd: dir.path().to_path_buf(),
            additional_dirs: Vec::new(),
            mcp_servers: vec![bridge_server_entry(Path::new(EXE), &socket, dir.path()).unwrap()],
            meta: mission_meta("m-test"),
            pid_slot: Some(socket.unit_pid_slot()),
            supervisor: Some(PathBuf::from(EXE)),
        };
        let mut unit = Unit::start(spec).await.expect("the agent starts");
        assert_eq!(
            unit.capabilities().agent_name.as_deref(),
            Some("missionboard-agent")
        );
        let mut events = unit.take_events().unwrap();
        let unit = Arc::new(unit);
        let turn = tokio::spawn({
            let unit = unit.clone();
            async move {
                unit.prompt(vec!["preamble".into(), "do the work".into()])
                    .await
            }
        });
        // The model call is in flight once the endpoint has the request.
        assert!(
            eventually(Duration::from_secs(20), || !server.requests().is_empty()).await,
            "the agent called the model"
        );
        unit.cancel();
        // A deadline against a hang, not a latency figure: the model never answers,
        // so only the cancel can end the turn.
        let outcome = tokio::time::timeout(Duration::from_secs(30), turn)
            .await
            .expect("the cancel ended the turn")
            .unwrap()
            .unwrap();
        assert_eq!(outcome.stop_reason, StopReason::Cancelled);
        assert!(
            handler.names().is_empty(),
            "the model never answered, so no mission tool ran"
        );
        let seen = drain(&mut events);
        assert!(
            !seen
                .iter()
                .any(|e| matches!(e, UnitEvent::AgentText { .. })),
            "{seen:?}"
        );
        Arc::into_inner(unit).unwrap().shutdown().await;
        socket.close().await;
    })
    .await
    .expect("test exceeded its deadline");
}
