//! Helpers for the agent end of ACP, shared by missionboard's built-in agents
//! (`stub-agent` and the native `agent`): the stdio line transport, reading
//! what a `session/new` hands the agent, and a turn's view of `session/cancel`.

use std::time::Duration;

use agent_client_protocol::Lines;
use agent_client_protocol::v1::schema::{McpServer, NewSessionRequest};
use futures::StreamExt;
use futures::channel::mpsc::{SendError, UnboundedSender};
use futures::sink::SinkMapErr;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;

use super::{MISSION_META_KEY, McpStdioServer};

type Outgoing = SinkMapErr<UnboundedSender<String>, fn(SendError) -> std::io::Error>;

/// The JSON-RPC transport over this process's stdin and stdout.
pub type StdioLines = Lines<Outgoing, BoxStream<'static, std::io::Result<String>>>;

/// The task that owns stdout. Lines reach it through one channel, so a raw line
/// sent on the outlet lands between whole messages, never inside one.
pub struct StdoutWriter {
    task: tokio::task::JoinHandle<()>,
}

impl StdoutWriter {
    /// Wait (bounded) until every queued line is on stdout. The writer ends once
    /// every sender — the transport's and each outlet clone — is dropped.
    pub async fn drain(self, who: &str) {
        if tokio::time::timeout(Duration::from_secs(1), self.task)
            .await
            .is_err()
        {
            eprintln!("{who}: stdout did not drain within a second");
        }
    }
}

fn to_io(e: SendError) -> std::io::Error {
    std::io::Error::other(e)
}

/// Open the stdio transport: the transport to connect with, an outlet for raw
/// lines, and the writer to drain before the process exits. Once `deaf` turns
/// true, stdin is never read again (the stub's `deaf` step, which shows what a host
/// does with a unit that stops reading).
pub fn stdio_transport(
    deaf: Option<watch::Receiver<bool>>,
) -> (StdioLines, UnboundedSender<String>, StdoutWriter) {
    let (out_tx, mut out_rx) = futures::channel::mpsc::unbounded::<String>();
    let task = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.next().await {
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if stdout.write_all(&bytes).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let sink = futures::sink::SinkExt::sink_map_err(
        out_tx.clone(),
        to_io as fn(SendError) -> std::io::Error,
    );
    let reader = BufReader::new(tokio::io::stdin());
    let incoming = futures::stream::unfold(Some(reader), move |reader| {
        let deaf = deaf.clone();
        async move {
            let mut reader = reader?;
            let mut buf = Vec::new();
            let read = tokio::select! {
                read = reader.read_until(b'\n', &mut buf) => read,
                () = gone_deaf(deaf) => std::future::pending().await,
            };
            match read {
                Ok(0) => None,
                Ok(_) => Some((
                    Ok(String::from_utf8_lossy(&buf).trim_end().to_owned()),
                    Some(reader),
                )),
                Err(err) => Some((Err(err), None)),
            }
        }
    })
    .boxed();
    (Lines::new(sink, incoming), out_tx, StdoutWriter { task })
}

/// Resolves once `deaf` turns true; never, without one (or once its sender is gone).
async fn gone_deaf(deaf: Option<watch::Receiver<bool>>) {
    if let Some(mut rx) = deaf
        && rx.wait_for(|d| *d).await.is_ok()
    {
        return;
    }
    std::future::pending().await
}

/// The stdio MCP servers a session was handed (others are skipped with a note
/// on stderr: the built-in agents speak only stdio MCP).
pub fn stdio_servers(request: &NewSessionRequest, who: &str) -> Vec<McpStdioServer> {
    let mut servers = Vec::new();
    for server in &request.mcp_servers {
        match server {
            McpServer::Stdio(s) => servers.push(McpStdioServer {
                name: s.name.clone(),
                command: s.command.clone(),
                args: s.args.clone(),
                env: s
                    .env
                    .iter()
                    .map(|e| (e.name.clone(), e.value.clone()))
                    .collect(),
            }),
            _ => eprintln!("{who}: ignoring a non-stdio MCP server"),
        }
    }
    servers
}

/// The mission id in `session/new._meta`, or `-` when the session is not a mission's.
pub fn mission_id(request: &NewSessionRequest) -> String {
    request
        .meta
        .as_ref()
        .and_then(|m| m.get(MISSION_META_KEY))
        .and_then(|m| m.get("missionId"))
        .and_then(Value::as_str)
        .unwrap_or("-")
        .to_owned()
}

/// A turn's view of `session/cancel`: set once the session's cancel generation
/// (a counter the cancel handler bumps) moves past the one the turn started
/// with. Cheap to clone, so every step can race its own copy.
#[derive(Clone)]
pub struct CancelSignal {
    rx: watch::Receiver<u64>,
    start: u64,
}

impl CancelSignal {
    /// Subscribe when the prompt arrives, not when its task starts: a cancel
    /// that follows the prompt closely must still reach the turn.
    pub fn new(generation: &watch::Sender<u64>) -> CancelSignal {
        CancelSignal {
            rx: generation.subscribe(),
            start: *generation.borrow(),
        }
    }

    pub fn is_set(&self) -> bool {
        *self.rx.borrow() > self.start
    }

    /// Resolves when the turn is cancelled.
    pub async fn wait(mut self) {
        let start = self.start;
        if self.rx.wait_for(|g| *g > start).await.is_err() {
            // The session is gone; nothing will ever cancel this turn.
            std::future::pending::<()>().await;
        }
    }
}
