//! The agent end of ACP, shared by missionboard's built-in agents (`stub-agent`
//! and the native `agent`): the scaffold that serves a [`BuiltinAgent`] on stdio
//! ([`serve`]: `initialize`, `session/new`, `session/load`, `session/resume`,
//! `session/set_config_option`, `session/prompt` on its own task,
//! `session/cancel`, `session/close`), the stdio line transport,
//! reading what a `session/new` hands the agent, and a turn's view of
//! `session/cancel`.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, CloseSessionRequest, CloseSessionResponse, ContentBlock,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpServer, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
    ResumeSessionRequest, ResumeSessionResponse, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Lines};
use futures::StreamExt;
use futures::channel::mpsc::{SendError, UnboundedSender};
use futures::sink::SinkMapErr;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;

use super::{MISSION_META_KEY, McpStdioServer};
use crate::store::blocking;

/// A session of a built-in agent, as the scaffold needs it.
pub trait AgentSession: Send + Sync + 'static {
    /// The counter `session/cancel` bumps; the running turn watches it.
    fn cancel_generation(&self) -> &watch::Sender<u64>;

    /// Does this session read `session/cancel` and do nothing (a test agent whose
    /// turn does not wind down)?
    fn ignores_session_cancel(&self) -> bool {
        false
    }
}

/// One prompt turn handed to the agent, on its own task.
pub struct PromptTurn<S> {
    pub session: Arc<S>,
    pub request: PromptRequest,
    pub responder: Responder<PromptResponse>,
    pub cx: ConnectionTo<Client>,
    /// Subscribed when the prompt arrived, so a cancel right behind it still counts.
    pub cancel: CancelSignal,
}

impl<S> PromptTurn<S> {
    /// The prompt's text blocks, in order (the built-in agents read nothing else).
    pub fn text_blocks(&self) -> Vec<String> {
        self.request
            .prompt
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.clone()),
                _ => None,
            })
            .collect()
    }
}

/// What a built-in agent supplies; [`serve`] does the rest. The session callbacks
/// (`open_session`, `load_session`, `close_session`, `set_config_option`) are
/// synchronous and [`serve`] runs them off the async workers (`store::blocking`):
/// one may read the store or a file directly.
pub trait BuiltinAgent: Send + Sync + Sized + 'static {
    type Session: AgentSession;

    /// The name in `initialize`'s `agentInfo`.
    fn name(&self) -> &'static str;

    /// The prefix of its diagnostics on stderr.
    fn tag(&self) -> &'static str {
        self.name()
    }

    /// How long to hold `initialize` before answering it: the stub's stand-in for an
    /// agent that is slow to start (`STUB_INITIALIZE_DELAY_MS`).
    fn initialize_delay(&self) -> Option<Duration> {
        None
    }

    /// What `initialize` advertises (nothing optional, by default).
    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities::new()
    }

    /// The auth methods `initialize` lists (none, by default).
    fn auth_methods(&self) -> Vec<agent_client_protocol::v1::schema::AuthMethod> {
        Vec::new()
    }

    /// An error `session/new` is answered with instead of a session (the stub's
    /// stand-in for an agent that needs a login first); none by default.
    fn refuse_new_session(&self) -> Option<Error> {
        None
    }

    fn sessions(&self) -> &Sessions<Self::Session>;

    /// Open a session for `session/new` (ids from [`Sessions::next_id`], or the
    /// agent's own); the scaffold files it under the response's session id.
    fn open_session(&self, request: NewSessionRequest) -> (Arc<Self::Session>, NewSessionResponse);

    /// Run before `session/new` or `session/load` is answered: where an agent connects
    /// its MCP servers, as real agents do before they report the session ready.
    fn connect_servers(&self, session: &Arc<Self::Session>) -> impl Future<Output = ()> + Send {
        let _ = session;
        async {}
    }

    /// `session/load`; the scaffold files the session under the requested id. An
    /// agent that does not advertise `loadSession` refuses it.
    fn load_session(
        &self,
        request: LoadSessionRequest,
    ) -> Result<(Arc<Self::Session>, LoadSessionResponse), Error> {
        let _ = request;
        Err(Error::method_not_found())
    }

    /// `session/resume`: the session carried on without a replay of its history; the
    /// scaffold files it under the requested id. An agent that does not advertise
    /// `sessionCapabilities.resume` refuses it.
    fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<(Arc<Self::Session>, ResumeSessionResponse), Error> {
        let _ = request;
        Err(Error::method_not_found())
    }

    /// Called once `session/new` has been answered, with the connection: an agent
    /// that talks to its client outside a prompt turn (commands, streamed news)
    /// starts here.
    fn session_opened(&self, session: &Arc<Self::Session>, id: &str, cx: &ConnectionTo<Client>) {
        let _ = (session, id, cx);
    }

    /// `session/close`; the scaffold forgets the session once it succeeds. An agent
    /// that does not advertise `sessionCapabilities.close` refuses it.
    fn close_session(&self, id: &str) -> Result<CloseSessionResponse, Error> {
        let _ = id;
        Err(Error::method_not_found())
    }

    /// `session/set_config_option`; an agent that advertises no options refuses it.
    fn set_config_option(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let _ = request;
        Err(Error::method_not_found())
    }

    /// Run one turn and answer its responder. It waits on the client (permissions)
    /// and on MCP calls, so the scaffold runs it off the dispatch loop.
    fn run_prompt(
        self: Arc<Self>,
        turn: PromptTurn<Self::Session>,
    ) -> impl Future<Output = ()> + Send;
}

/// A built-in agent's sessions, by id (`<prefix>-1`, `<prefix>-2`, …).
pub struct Sessions<S> {
    prefix: &'static str,
    by_id: Mutex<HashMap<String, Arc<S>>>,
    next: AtomicU64,
}

impl<S> Sessions<S> {
    pub fn new(prefix: &'static str) -> Sessions<S> {
        Sessions {
            prefix,
            by_id: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<S>> {
        self.lock().get(id).cloned()
    }

    /// The next id of this process's sequence: `<prefix>-<n>`.
    pub fn next_id(&self) -> String {
        format!(
            "{}-{}",
            self.prefix,
            self.next.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn insert(&self, id: String, session: Arc<S>) {
        self.lock().insert(id, session);
    }

    fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    /// Every open session, by id.
    pub fn all(&self) -> Vec<(String, Arc<S>)> {
        self.lock()
            .iter()
            .map(|(id, s)| (id.clone(), s.clone()))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<S>>> {
        self.by_id.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Serve `agent` over `transport` until the client hangs up, then let the last
/// answers reach stdout: the writer ends once every sender (the transport's and
/// any outlet the agent holds) is gone, so the agent is dropped first.
pub async fn serve<A: BuiltinAgent>(
    agent: Arc<A>,
    transport: StdioLines,
    writer: StdoutWriter,
) -> Result<(), String> {
    let tag = agent.tag();
    let (on_init, on_new, on_load, on_resume, on_config, on_prompt, on_cancel, on_close) = (
        agent.clone(),
        agent.clone(),
        agent.clone(),
        agent.clone(),
        agent.clone(),
        agent.clone(),
        agent.clone(),
        agent.clone(),
    );
    let result = Agent
        .v1()
        .name(agent.name())
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                eprintln!(
                    "{}: initialize (client asked for {:?})",
                    on_init.tag(),
                    request.protocol_version
                );
                if let Some(delay) = on_init.initialize_delay() {
                    tokio::time::sleep(delay).await;
                }
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(on_init.capabilities())
                        .auth_methods(on_init.auth_methods())
                        .agent_info(Implementation::new(
                            on_init.name(),
                            env!("CARGO_PKG_VERSION"),
                        )),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                if let Some(err) = on_new.refuse_new_session() {
                    return responder.respond_with_error(err);
                }
                let agent = on_new.clone();
                let (session, response) = blocking(move || agent.open_session(request)).await;
                on_new.connect_servers(&session).await;
                let id = response.session_id.0.to_string();
                on_new.sessions().insert(id.clone(), session.clone());
                responder.respond(response)?;
                on_new.session_opened(&session, &id, &cx);
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, _cx| {
                let id = request.session_id.0.to_string();
                let agent = on_load.clone();
                match blocking(move || agent.load_session(request)).await {
                    Ok((session, response)) => {
                        on_load.connect_servers(&session).await;
                        on_load.sessions().insert(id, session);
                        responder.respond(response)
                    }
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, _cx| {
                let id = request.session_id.0.to_string();
                let agent = on_resume.clone();
                match blocking(move || agent.resume_session(request)).await {
                    Ok((session, response)) => {
                        on_resume.connect_servers(&session).await;
                        on_resume.sessions().insert(id, session);
                        responder.respond(response)
                    }
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                let agent = on_config.clone();
                match blocking(move || agent.set_config_option(&request)).await {
                    Ok(response) => responder.respond(response),
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let session_id = request.session_id.0.to_string();
                let Some(session) = on_prompt.sessions().get(&session_id) else {
                    return responder.respond_with_error(unknown_session(&session_id));
                };
                let cancel = CancelSignal::new(session.cancel_generation());
                let turn = PromptTurn {
                    session,
                    request,
                    responder,
                    cx: cx.clone(),
                    cancel,
                };
                let agent = on_prompt.clone();
                cx.spawn(async move {
                    // A turn's failure is its own answer, never the connection's:
                    // an error from a spawned task would end the whole connection.
                    agent.run_prompt(turn).await;
                    Ok(())
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, _cx| {
                let id = request.session_id.0.to_string();
                if on_close.sessions().get(&id).is_none() {
                    return responder.respond_with_error(unknown_session(&id));
                }
                let (agent, closing) = (on_close.clone(), id.clone());
                match blocking(move || agent.close_session(&closing)).await {
                    Ok(response) => {
                        on_close.sessions().remove(&id);
                        responder.respond(response)
                    }
                    Err(err) => responder.respond_with_error(err),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                let id = &notification.session_id.0;
                if let Some(session) = on_cancel.sessions().get(id) {
                    if session.ignores_session_cancel() {
                        eprintln!("{}: session/cancel for {id} ignored", on_cancel.tag());
                        return Ok(());
                    }
                    eprintln!("{}: session/cancel for {id}", on_cancel.tag());
                    session.cancel_generation().send_modify(|g| *g += 1);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    drop(agent);
    writer.drain(tag).await;
    result.map_err(|e| format!("ACP connection failed: {e:?}"))
}

/// The error for a prompt naming a session this agent never opened.
pub fn unknown_session(id: &str) -> Error {
    Error::invalid_params().data(serde_json::json!({"reason": format!("unknown session {id}")}))
}

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

/// Session updates this process handed to its connection, and how many of them
/// are on stdout: a built-in agent writes what it said before it calls a tool on
/// another channel, as an agent writing its stdout synchronously does.
static UPDATES_SENT: AtomicU64 = AtomicU64::new(0);
static UPDATES_WRITTEN: std::sync::LazyLock<tokio::sync::watch::Sender<u64>> =
    std::sync::LazyLock::new(|| tokio::sync::watch::Sender::new(0));

/// Count a session update handed to the connection.
pub fn update_sent() {
    UPDATES_SENT.fetch_add(1, Ordering::SeqCst);
}

/// Wait (at most `within`) until every session update sent so far is on stdout.
pub async fn updates_written(within: Duration) {
    let sent = UPDATES_SENT.load(Ordering::SeqCst);
    let mut written = UPDATES_WRITTEN.subscribe();
    let _ = tokio::time::timeout(within, written.wait_for(|w| *w >= sent)).await;
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
            let update = line.contains("\"session/update\"");
            let mut bytes = line.into_bytes();
            bytes.push(b'\n');
            if stdout.write_all(&bytes).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
            if update {
                UPDATES_WRITTEN.send_modify(|w| *w += 1);
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
