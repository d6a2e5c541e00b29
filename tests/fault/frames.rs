//! Malformed frames on both protocols get a clear error and never a panic: JSON
//! that is not JSON-RPC from a unit is answered with JSON-RPC errors while its
//! mission carries on; lines on a mission socket that are not JSON (or are over the
//! frame limit) are answered with parse errors, and the host keeps serving.

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{Sandbox, wait_for};
use crate::{Host, integrity, script, show};

/// Frames that are JSON but not valid JSON-RPC (or not valid ACP).
const BAD_ACP: &[&str] = &[
    r#"{"foo":1}"#,
    r#"[1,2,3]"#,
    r#""just a string""#,
    r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
    r#"{"jsonrpc":"2.0","id":77,"result":{}}"#,
    r#"{"jsonrpc":"2.0","method":"session/update","params":"nope"}"#,
    r#"{"jsonrpc":"2.0","id":{"a":1},"method":"session/update"}"#,
    r#"{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"x":1}}"#,
];

#[test]
fn malformed_json_rpc_from_a_unit_is_answered_with_errors_and_the_mission_carries_on() {
    let sb = Sandbox::new();
    let mut steps: Vec<String> = BAD_ACP
        .iter()
        .map(|f| json!({"stdout_garbage": f}).to_string())
        .collect();
    steps.push(r#"{"report":{"kind":"result","summary":"still talking"}}"#.into());
    steps.push(r#"{"finish":"landed"}"#.into());
    sb.declare_stubs(&[("stub", Some(&script(&steps.join(","))))]);
    let run = sb.fire("stub", "malformed frames", &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stderr.contains("panicked"), "{run:#?}");
    assert!(
        run.stdout.contains("  [result] still talking\n"),
        "{run:#?}"
    );
    // The host answered each bad request with a JSON-RPC error and logged it.
    let log = std::fs::read_dir(sb.home.join("logs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(log.contains("Invalid request"), "the log names the error");
    assert!(log.contains("Invalid params"), "the log names the error");
    assert!(!log.contains("panicked"));
    assert_eq!(integrity(&sb), "ok");
}

/// A client of a mission socket, through a second copy of the unit's own bridge
/// (the socket admits only the mission's unit and its descendants): one line out
/// through one fifo, one line back through the other (bounded wait).
struct McpClient {
    out: std::fs::File,
    lines: std::sync::mpsc::Receiver<String>,
}

impl McpClient {
    /// Open the fifos the unit's `mission_server` step holds open.
    fn open(to_bridge: &std::path::Path, from_bridge: &std::path::Path) -> McpClient {
        let out = std::fs::OpenOptions::new()
            .write(true)
            .open(to_bridge)
            .unwrap();
        let input = std::fs::File::open(from_bridge).unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(input).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        McpClient { out, lines }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.out.write_all(bytes).unwrap();
        self.out.write_all(b"\n").unwrap();
    }

    fn reply(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(20))
            .expect("a reply within 20 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn initialize(&mut self) {
        self.send(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fault","version":"1"}}}).to_string().as_bytes());
        assert_eq!(
            self.reply()["result"]["serverInfo"]["name"],
            "missionboard-mission"
        );
        self.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    }
}

#[test]
fn malformed_mcp_frames_get_parse_errors_and_the_mission_socket_keeps_serving() {
    let sb = Sandbox::new();
    let (to_bridge, from_bridge) = (sb.cwd.join("to-bridge"), sb.cwd.join("from-bridge"));
    for fifo in [&to_bridge, &from_bridge] {
        let made = std::process::Command::new("mkfifo")
            .arg(fifo)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo {}", fifo.display());
    }
    let relay = json!({"mission_server": {"stdin": to_bridge.display().to_string(), "stdout": from_bridge.display().to_string()}});
    sb.declare_stubs(&[(
        "stub",
        Some(&script(&format!(
            r#"{relay},{{"ask":"Go on?"}},{{"report":{{"kind":"result","summary":"went on: {{{{answer}}}}"}}}},{{"finish":"landed"}}"#
        ))),
    )]);
    sb.run(&["config", "set", "ask-park-window", "60s"]).ok();
    let host = Host::fire(&sb, "stub", "socket frames", &[]);
    let id = host.mission.clone();
    let ask = wait_for(20, "the question", || {
        show(&sb, &id)["pendingAsks"][0]["id"]
            .as_str()
            .map(str::to_string)
    });

    let mut c = McpClient::open(&to_bridge, &from_bridge);
    c.send(b"not json at all");
    let r = c.reply();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("not JSON"),
        "{r}"
    );
    c.send(br#"{"foo":1}"#);
    assert_eq!(c.reply()["error"]["code"], -32600);
    // Over the frame limit: dropped as it streams, answered with a parse error.
    c.send(&vec![b'{'; 9 * 1024 * 1024]);
    let r = c.reply();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("frame limit"),
        "{r}"
    );
    // The same connection still speaks MCP after all that.
    c.initialize();
    c.send(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    assert_eq!(c.reply()["result"]["tools"].as_array().unwrap().len(), 4);
    c.send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#);
    let r = c.reply();
    assert_eq!(r["result"]["isError"], true, "{r}");
    drop(c);

    // And the host is unharmed: the real unit's question is answered and it lands.
    sb.run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    wait_for(20, "the mission to land", || {
        (show(&sb, &id)["status"] == "landed").then_some(())
    });
    drop(host);
    assert_eq!(integrity(&sb), "ok");
}
