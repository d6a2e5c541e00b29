//! Shared harness: the library as the host, the built binary as the unit.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use missionboard::acp::{Unit, UnitEvent, UnitSpec, mission_meta};
use missionboard::tools::{
    MissionSocket, MissionToolHandler, bridge_server_entry, serve_mission_socket,
};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

pub const EXE: &str = env!("CARGO_BIN_EXE_missionboard");

/// Every test gets this long before it is declared hung.
pub const TEST_DEADLINE: Duration = Duration::from_secs(30);

/// Records every tool call; answers asks with a fixed text.
pub struct RecordingHandler {
    pub calls: Mutex<Vec<(String, Map<String, Value>)>>,
    pub answer: String,
    /// Replies to asks before `answer` is given (e.g. "no answer yet …").
    pub ask_replies: Mutex<std::collections::VecDeque<String>>,
}

impl RecordingHandler {
    pub fn new(answer: &str) -> Arc<Self> {
        Arc::new(RecordingHandler {
            calls: Mutex::new(Vec::new()),
            answer: answer.to_owned(),
            ask_replies: Mutex::new(Default::default()),
        })
    }

    pub fn calls(&self) -> Vec<(String, Map<String, Value>)> {
        self.calls.lock().unwrap().clone()
    }

    pub fn names(&self) -> Vec<String> {
        self.calls().into_iter().map(|(n, _)| n).collect()
    }
}

impl MissionToolHandler for RecordingHandler {
    fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<String, String>> {
        self.calls
            .lock()
            .unwrap()
            .push((tool.to_owned(), args.clone()));
        let reply = match tool {
            "mission_ask_attention" => Ok(self
                .ask_replies
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| self.answer.clone())),
            "mission_report" => Ok(format!(
                "recorded {} report \"r-1\"",
                args.get("kind").and_then(Value::as_str).unwrap_or("progress")
            )),
            "mission_plan" => Ok(serde_json::json!({"entries": args.get("entries"), "revision": 1}).to_string()),
            "mission_finish" => match args.get("status").and_then(Value::as_str) {
                Some(status) => Ok(format!("mission finished as {status}")),
                None => Err("missiontools: mission_finish requires a status (landed|derailed|stuck|abandoned)".into()),
            },
            _ => Err("unexpected".into()),
        };
        Box::pin(async move { reply })
    }
}

/// A started unit plus everything that must outlive it.
pub struct Harness {
    pub unit: Unit,
    pub events: mpsc::UnboundedReceiver<UnitEvent>,
    pub socket: Option<MissionSocket>,
    pub socket_path: PathBuf,
    pub handler: Arc<RecordingHandler>,
    pub dir: tempfile::TempDir,
}

pub struct Options {
    pub script: Option<Value>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub mission_server: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            script: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            mission_server: true,
        }
    }
}

pub async fn start(options: Options) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let handler = RecordingHandler::new("yes");
    let socket_path = dir.path().join("m-test.sock");
    let socket = serve_mission_socket(&socket_path, handler.clone())
        .await
        .unwrap();
    let mut args = vec!["stub-agent".to_owned()];
    if let Some(script) = &options.script {
        let path = dir.path().join("script.json");
        std::fs::write(&path, serde_json::to_vec_pretty(script).unwrap()).unwrap();
        args.push("--script".into());
        args.push(path.display().to_string());
    }
    args.extend(options.args);
    let spec = UnitSpec {
        program: PathBuf::from(EXE),
        args,
        env: options.env,
        cwd: dir.path().to_path_buf(),
        mcp_servers: if options.mission_server {
            vec![bridge_server_entry(Path::new(EXE), &socket)]
        } else {
            Vec::new()
        },
        meta: mission_meta("m-test"),
    };
    let mut unit = Unit::start(spec)
        .await
        .unwrap_or_else(|e| panic!("unit failed to start: {e}"));
    let events = unit.take_events().unwrap();
    Harness {
        unit,
        events,
        socket: Some(socket),
        socket_path,
        handler,
        dir,
    }
}

/// Everything on the event channel right now.
pub fn drain(events: &mut mpsc::UnboundedReceiver<UnitEvent>) -> Vec<UnitEvent> {
    missionboard::acp::drain_events(events)
}

/// Wait (bounded) for an event matching `pred`, returning the ones seen.
pub async fn wait_event(
    events: &mut mpsc::UnboundedReceiver<UnitEvent>,
    limit: Duration,
    mut pred: impl FnMut(&UnitEvent) -> bool,
) -> Vec<UnitEvent> {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(limit, async {
        while let Some(event) = events.recv().await {
            let hit = pred(&event);
            seen.push(event);
            if hit {
                return true;
            }
        }
        false
    })
    .await;
    assert!(
        matches!(found, Ok(true)),
        "expected event not seen; got {seen:?}"
    );
    seen
}

/// Poll `cond` until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// Pids of live processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        // Zombies keep no cmdline; they are not "alive" for our purposes.
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}
