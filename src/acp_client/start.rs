//! Starting a unit: spawn the child, wire the bounded line transport and the ACP
//! client connection to it, and run the handshake (`initialize`, then
//! `session/new` with the mission's MCP servers and `_meta`).

use std::sync::Arc;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateElicitationRequest, ElicitationCapabilities,
    ElicitationFormCapabilities, ElicitationUrlCapabilities, EnvVariable, Implementation,
    InitializeRequest, LoadSessionRequest, McpServer, McpServerStdio, NewSessionRequest,
    NewSessionResponse, RequestPermissionRequest, ResumeSessionRequest, SessionNotification,
};
use agent_client_protocol::{Client, Lines, UntypedMessage};
use futures::StreamExt;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot, watch};

use super::frame::{self, Frame};
use super::stdout_mark::{CountedStdout, StdoutMark};
use super::{
    Abandon, AgentCaps, ElicitationReply, INITIALIZE_TIMEOUT, KILL_GRACE, PermissionReply,
    SessionOpened, Shared, Unit, UnitError, UnitEvent, UnitSpec, convert, process,
    unit_environment,
};

impl Unit {
    /// Spawn the unit, `initialize` it and open its session.
    pub async fn start(spec: UnitSpec) -> Result<Unit, UnitError> {
        Unit::start_confined(spec, None, None).await
    }

    /// [`Unit::start`] inside `confinement` (applied to the child before it runs);
    /// with `load`, the agent's earlier session is reopened instead of a new one:
    /// carried on without a replay (`session/resume`) when the agent advertises
    /// `sessionCapabilities.resume`, else loaded (`session/load`) when it advertises
    /// `loadSession`; a resume the agent refuses falls back to a load where it can.
    /// [`Unit::opened`] says which.
    pub async fn start_confined(
        spec: UnitSpec,
        load: Option<&str>,
        confinement: Option<crate::confine::Prepared>,
    ) -> Result<Unit, UnitError> {
        let env = unit_environment(std::env::vars_os(), &spec.env);
        let spawn_error = |e: std::io::Error| UnitError::Spawn {
            program: spec.program.display().to_string(),
            error: e.to_string(),
        };
        let supervisor = match &spec.supervisor {
            Some(exe) => exe.clone(),
            None => std::env::current_exe().map_err(spawn_error)?,
        };
        let (process, pipes) = process::spawn(
            &supervisor,
            &spec.program,
            &spec.args,
            &env,
            &spec.cwd,
            confinement,
        )
        .map_err(spawn_error)?;
        if let Some(slot) = &spec.pid_slot {
            let _ = slot.set(process.pid);
        }

        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (perm_tx, perm_rx) = mpsc::unbounded_channel();
        let (elicit_tx, elicit_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            events: events_tx,
            permissions: perm_tx,
            elicitations: elicit_tx,
            cancel_generation: watch::channel(0).0,
            deafness: Arc::default(),
        });

        let (cx_tx, cx_rx) = oneshot::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let stdout_mark = StdoutMark::new(&pipes.stdout);
        let transport = line_transport(
            pipes,
            stdout_mark.clone(),
            shared.events.clone(),
            shared.deafness.clone(),
        );
        let task_shared = shared.clone();
        let pid = process.pid;
        let connection_task = tokio::spawn(async move {
            let result = run_connection(transport, task_shared, cx_tx, stop_rx).await;
            if let Err(err) = result {
                tracing::debug!(pid, ?err, "unit connection ended with an error");
            }
        });

        let Ok(cx) = cx_rx.await else {
            // The connection died before it started: report why, and make
            // sure the child does not outlive the failure.
            let status = process.wait_exit_for_report(KILL_GRACE).await;
            if status.is_none() {
                process.tear_down();
            }
            let stderr_tail = process.stderr.text();
            return Err(match status {
                Some(status) => UnitError::Exited {
                    during: "startup",
                    status,
                    stderr_tail,
                },
                None => UnitError::ConnectionClosed {
                    during: "startup",
                    detail: "the connection ended before it started".into(),
                    stderr_tail,
                },
            });
        };

        let mut unit = Unit {
            session_id: String::new(),
            caps: AgentCaps::default(),
            cx,
            shared,
            process,
            events_rx: Some(events_rx),
            permissions_rx: Some(perm_rx),
            elicitations_rx: Some(elicit_rx),
            stop_connection: Some(stop_tx),
            connection_task: Some(connection_task),
            stdout_mark,
            reaped: false,
            opened: SessionOpened::New,
        };
        // A failed handshake reaps the child before returning (Drop would
        // too, but without the grace period).
        match unit.handshake(&spec, load).await {
            Ok(()) => Ok(unit),
            Err(err) => {
                unit.shutdown().await;
                Err(err)
            }
        }
    }

    async fn handshake(&mut self, spec: &UnitSpec, load: Option<&str>) -> Result<(), UnitError> {
        let init = InitializeRequest::new(ProtocolVersion::V1)
            // Elicitation in both modes: a form becomes an ask the operator fills
            // on any surface, a page one the operator visits (never fetched here).
            .client_capabilities(
                ClientCapabilities::new().elicitation(
                    ElicitationCapabilities::new()
                        .form(ElicitationFormCapabilities::new())
                        .url(ElicitationUrlCapabilities::new()),
                ),
            )
            .client_info(Implementation::new(
                "missionboard",
                env!("CARGO_PKG_VERSION"),
            ));
        let during = "initialize";
        let sent = self.cx.send_request(init);
        let abandon = Abandon::new(sent.cancellation_handle(), during);
        let answer = sent.block_task();
        tokio::pin!(answer);
        let response = match tokio::time::timeout(INITIALIZE_TIMEOUT, &mut answer).await {
            Err(_) => {
                abandon.now(&mut answer).await;
                return Err(UnitError::Timeout {
                    during,
                    after: INITIALIZE_TIMEOUT,
                });
            }
            Ok(answer) => {
                abandon.answered();
                match answer {
                    Err(err) => return Err(self.classify(err, during).await),
                    Ok(response) => response,
                }
            }
        };
        if response.protocol_version != ProtocolVersion::V1 {
            return Err(UnitError::Protocol {
                during,
                detail: format!(
                    "agent negotiated protocol version {:?}; missionboard speaks only v1",
                    response.protocol_version
                ),
            });
        }
        let agent_caps = &response.agent_capabilities;
        self.caps.load_session = agent_caps.load_session;
        self.caps.resume_session = agent_caps.session_capabilities.resume.is_some();
        self.caps.close_session = agent_caps.session_capabilities.close.is_some();
        // Extra roots go only to an agent that says it takes them; one that does not
        // still has them granted, and is told nothing it could misread.
        let roots = if agent_caps
            .session_capabilities
            .additional_directories
            .is_some()
        {
            spec.additional_dirs.clone()
        } else {
            if !spec.additional_dirs.is_empty() {
                tracing::warn!(
                    "the agent does not advertise sessionCapabilities.additionalDirectories: its extra roots are granted, not sent"
                );
            }
            Vec::new()
        };
        if let Some(info) = &response.agent_info {
            self.caps.agent_name = Some(info.name.clone());
            self.caps.agent_version = Some(info.version.clone());
        }
        self.caps.auth_methods = response
            .auth_methods
            .iter()
            .map(|m| m.id().to_string())
            .collect();
        self.caps.terminal_login = response.auth_methods.iter().find_map(|m| match m {
            agent_client_protocol::v1::schema::AuthMethod::Terminal(t) => {
                Some(crate::agents::TerminalLogin {
                    name: t.name.clone(),
                    args: t.args.clone(),
                    env: t.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                })
            }
            _ => None,
        });

        let servers: Vec<McpServer> = spec
            .mcp_servers
            .iter()
            .map(|s| {
                McpServer::Stdio(
                    McpServerStdio::new(s.name.clone(), s.command.clone())
                        .args(s.args.clone())
                        .env(
                            s.env
                                .iter()
                                .map(|(k, v)| EnvVariable::new(k.clone(), v.clone()))
                                .collect(),
                        ),
                )
            })
            .collect();
        if let Some(id) = load {
            if self.caps.resume_session {
                let mut request = ResumeSessionRequest::new(id.to_string(), spec.cwd.clone())
                    .additional_directories(roots.clone())
                    .mcp_servers(servers.clone());
                if !spec.meta.is_empty() {
                    request = request.meta(spec.meta.clone());
                }
                match self.reopen("session/resume", &request).await {
                    Ok(raw) => {
                        self.reopened(id, &raw, SessionOpened::Resumed);
                        return Ok(());
                    }
                    // The agent answered, refusing: a load may still carry it on.
                    Err(UnitError::Rpc { message, .. }) if self.caps.load_session => {
                        tracing::warn!(
                            session = id,
                            "session/resume refused ({message}); loading the session instead"
                        );
                    }
                    Err(e) => return Err(e),
                }
            }
            if self.caps.load_session {
                let mut request = LoadSessionRequest::new(id.to_string(), spec.cwd.clone())
                    .additional_directories(roots.clone())
                    .mcp_servers(servers);
                if !spec.meta.is_empty() {
                    request = request.meta(spec.meta.clone());
                }
                let raw = self.reopen("session/load", &request).await?;
                self.reopened(id, &raw, SessionOpened::Loaded);
                return Ok(());
            }
        }
        let mut request = NewSessionRequest::new(spec.cwd.clone())
            .additional_directories(roots)
            .mcp_servers(servers);
        if !spec.meta.is_empty() {
            request = request.meta(spec.meta.clone());
        }
        // Sent untyped so fields this schema version drops (the older
        // `models` object) are still readable.
        let during = "session/new";
        let untyped =
            UntypedMessage::new("session/new", &request).map_err(|e| UnitError::Protocol {
                during,
                detail: e.message,
            })?;
        let raw = self
            .request_untyped(untyped, during)
            .await
            .map_err(|e| self.login_required(e))?;
        let parsed: NewSessionResponse =
            serde_json::from_value(raw.clone()).map_err(|e| UnitError::Protocol {
                during,
                detail: e.to_string(),
            })?;
        self.session_id = parsed.session_id.0.to_string();
        self.caps.models = convert::session_models(&raw);
        Ok(())
    }
}

impl Unit {
    /// Send a request that reopens an earlier session (`session/resume`,
    /// `session/load`), untyped so fields this schema version drops stay readable.
    async fn reopen<T: serde::Serialize>(
        &self,
        during: &'static str,
        request: &T,
    ) -> Result<serde_json::Value, UnitError> {
        let untyped = UntypedMessage::new(during, request).map_err(|e| UnitError::Protocol {
            during,
            detail: e.message,
        })?;
        self.request_untyped(untyped, during)
            .await
            .map_err(|e| self.login_required(e))
    }

    /// An auth-required answer to a session request, as the login it calls for
    /// (with the terminal login the agent advertised); any other error as it is.
    fn login_required(&self, e: UnitError) -> UnitError {
        match e {
            UnitError::Rpc {
                during,
                code,
                message,
                ..
            } if code == crate::agents::AUTH_REQUIRED => UnitError::LoginRequired {
                during,
                message,
                terminal: self.caps.terminal_login.clone(),
            },
            e => e,
        }
    }

    /// Adopt the reopened session `id`.
    fn reopened(&mut self, id: &str, raw: &serde_json::Value, how: SessionOpened) {
        self.session_id = id.to_string();
        self.caps.models = convert::session_models(raw);
        self.opened = how;
    }
}

type LineSink = std::pin::Pin<Box<dyn futures::Sink<String, Error = std::io::Error> + Send>>;
type LineStream = std::pin::Pin<Box<dyn futures::Stream<Item = std::io::Result<String>> + Send>>;

/// Garbage lines reported as events per unit; the first one already fails the turn,
/// so the rest of a flood is only counted in the log.
const GARBAGE_EVENTS: usize = 8;

/// Newline-delimited JSON over the child's pipes, bounded by [`frame`]. Incoming
/// lines that are not JSON are dropped and reported as [`UnitEvent::StdoutGarbage`]:
/// answering them (the SDK's default) would only confuse a chatty agent further. A
/// write the agent does not take within the stdin deadline ends the connection.
fn line_transport(
    pipes: process::SpawnedPipes,
    mark: Arc<StdoutMark>,
    events: mpsc::UnboundedSender<UnitEvent>,
    deafness: Arc<std::sync::Mutex<Option<String>>>,
) -> Lines<LineSink, LineStream> {
    let deadline = frame::stdin_deadline();
    let sink = futures::sink::unfold(pipes.stdin, move |mut stdin, line: String| {
        let deafness = deafness.clone();
        async move {
            let write = async {
                stdin.write_all(line.as_bytes()).await?;
                stdin.write_all(b"\n").await?;
                stdin.flush().await
            };
            match tokio::time::timeout(deadline, write).await {
                Ok(result) => result.map(|()| stdin),
                Err(_) => {
                    let why = format!(
                        "the agent stopped reading its stdin: a {}-byte message waited {} to be written",
                        line.len() + 1,
                        crate::duration::format(deadline)
                    );
                    *deafness.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.clone());
                    Err(std::io::Error::new(std::io::ErrorKind::TimedOut, why))
                }
            }
        }
    });
    let stream = line_stream(pipes.stdout, mark, events);
    Lines::new(Box::pin(sink) as LineSink, stream)
}

/// The unit's stdout as JSON lines, each shown to `mark`'s tap as it is read.
fn line_stream(
    stdout: tokio::net::unix::pipe::Receiver,
    mark: Arc<StdoutMark>,
    events: mpsc::UnboundedSender<UnitEvent>,
) -> LineStream {
    let reader = BufReader::new(CountedStdout::new(stdout, mark.clone()));
    let mut garbage = 0usize;
    let stream = futures::stream::unfold(Some(reader), move |reader| {
        let mark = mark.clone();
        async move {
            let mut reader = reader?;
            match frame::read_frame(&mut reader).await {
                Ok(None) => None,
                Ok(Some(f)) => {
                    // The tap counts the line before the connection dispatches it,
                    // and only then is it handled (see `StdoutMark::caught_up`).
                    if let Frame::Message(text) = &f {
                        mark.line(text);
                    }
                    mark.handled(mark.taken() - reader.buffer().len() as u64);
                    Some((Ok(f), Some(reader)))
                }
                Err(err) => Some((Err(err), None)),
            }
        }
    })
    .filter_map(move |item| {
        let line = match item {
            Ok(Frame::Message(text)) => Some(Ok(text)),
            Ok(Frame::Blank) => None,
            Ok(Frame::Garbage(shown)) => {
                garbage += 1;
                tracing::warn!(line = %shown, count = garbage, "unit wrote a non-JSON line to stdout");
                if garbage <= GARBAGE_EVENTS {
                    let _ = events.send(UnitEvent::StdoutGarbage(shown));
                }
                None
            }
            Err(err) => Some(Err(err)),
        };
        futures::future::ready(line)
    });
    Box::pin(stream)
}

/// Drive the ACP client connection until the unit handle stops it or the
/// agent's stdout closes.
async fn run_connection(
    transport: Lines<LineSink, LineStream>,
    shared: Arc<Shared>,
    cx_tx: oneshot::Sender<ConnectionTo<agent_client_protocol::Agent>>,
    stop_rx: oneshot::Receiver<()>,
) -> Result<(), agent_client_protocol::Error> {
    let notify_shared = shared.clone();
    let elicit_shared = shared.clone();
    Client
        .v1()
        .name("missionboard")
        .on_receive_notification(
            // Runs inside the dispatch loop: only a non-blocking send.
            async move |notification: SessionNotification, _cx| {
                if let Some(event) = convert::session_update(notification.update) {
                    let _ = notify_shared.events.send(event);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                // Never wait for the decision here: that would stall every
                // other message of this unit (and deadlock the turn).
                let (reply_tx, reply_rx) = oneshot::channel();
                let (ask, offered) = convert::permission_ask(request, reply_tx);
                let mut cancelled = shared.cancel_generation.subscribe();
                let queued = shared.permissions.send(ask);
                tokio::spawn(async move {
                    let reply = if queued.is_err() {
                        PermissionReply::Cancelled
                    } else {
                        tokio::select! {
                            reply = reply_rx => reply.unwrap_or(PermissionReply::Cancelled),
                            _ = cancelled.changed() => PermissionReply::Cancelled,
                        }
                    };
                    let response = convert::permission_response(reply, &offered);
                    if let Err(err) = responder.respond(response) {
                        tracing::debug!(?err, "permission answer could not be sent");
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CreateElicitationRequest, responder, _cx| {
                // As with permissions: never wait for the answer on the dispatch loop.
                let (reply_tx, reply_rx) = oneshot::channel();
                let ask = convert::elicitation_ask(request, reply_tx);
                let mut cancelled = elicit_shared.cancel_generation.subscribe();
                let queued = elicit_shared.elicitations.send(ask);
                tokio::spawn(async move {
                    let reply = if queued.is_err() {
                        ElicitationReply::Cancel
                    } else {
                        tokio::select! {
                            reply = reply_rx => reply.unwrap_or(ElicitationReply::Cancel),
                            _ = cancelled.changed() => ElicitationReply::Cancel,
                        }
                    };
                    if let Err(err) = responder.respond(convert::elicitation_response(reply)) {
                        tracing::debug!(?err, "elicitation answer could not be sent");
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx| {
            let _ = cx_tx.send(cx.clone());
            tokio::select! {
                _ = stop_rx => {}
                _ = cx.incoming_closed() => {}
            }
            Ok(())
        })
        .await
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use futures::StreamExt;
    use tokio::io::AsyncBufReadExt;

    use super::*;

    /// A verdict arriving while the unit's updates still wait in the pipe, unread:
    /// `caught_up` returns only once every one of them has been shown to the tap.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn caught_up_waits_for_every_update_already_in_the_pipe() {
        const LINES: usize = 400;
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":"t"}}}"#;
        let script = format!(
            "i=0; while [ $i -lt {LINES} ]; do echo '{line}'; i=$((i+1)); done; echo written >&2; exec sleep 30"
        );
        let mut child = tokio::process::Command::new("sh")
            .args(["-c", &script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("sh runs");
        let stdout = child.stdout.take().unwrap().into_owned_fd().unwrap();
        let stdout = tokio::net::unix::pipe::Receiver::from_owned_fd(stdout).unwrap();
        let mark = StdoutMark::new(&stdout);
        let seen = std::sync::Arc::new(AtomicUsize::new(0));
        let counted = seen.clone();
        mark.set_tap(Box::new(move |ev| {
            if matches!(ev, UnitEvent::ToolCall { .. }) {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        }));
        let (events, _rx) = mpsc::unbounded_channel();
        let mut lines = line_stream(stdout, mark.clone(), events);
        // Every line is in the pipe (a pipe holds 64 KiB; these are ~56 KiB) and
        // nothing has read any of it yet.
        let mut stderr = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        assert_eq!(
            stderr.next_line().await.unwrap().as_deref(),
            Some("written")
        );
        assert_eq!(seen.load(Ordering::SeqCst), 0);
        let reader = tokio::spawn(async move {
            while let Some(item) = lines.next().await {
                item.unwrap();
                tokio::task::yield_now().await;
            }
        });
        assert!(mark.caught_up(Duration::from_secs(20)).await);
        assert_eq!(seen.load(Ordering::SeqCst), LINES);
        reader.abort();
    }
}
