//! The ACP side of the native agent: initialize, sessions, prompts, cancel.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, Implementation, InitializeRequest,
    InitializeResponse, NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error};
use serde_json::json;
use tokio::sync::{OnceCell, watch};

use super::AgentOptions;
use super::turn::{SessionState, Turn};
use crate::acp::agent_side::{self, CancelSignal};
use crate::model::ModelClient;

/// The name the agent gives in `initialize` and in its diagnostics.
pub const AGENT_NAME: &str = "missionboard-agent";

struct Planner {
    options: AgentOptions,
    /// Connected on the first prompt and shared by every session (a scripted
    /// dialog has one cursor per process).
    model: OnceCell<Arc<ModelClient>>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    next_session: AtomicU64,
}

struct Session {
    id: String,
    cwd: PathBuf,
    /// Bumped by `session/cancel`; the running turn watches it.
    cancel: watch::Sender<u64>,
    /// Held for the whole turn, so one session's turns never overlap.
    state: tokio::sync::Mutex<SessionState>,
}

pub async fn serve(options: AgentOptions) -> Result<(), String> {
    let (transport, outlet, writer) = agent_side::stdio_transport(None);
    drop(outlet);
    let planner = Arc::new(Planner {
        options,
        model: OnceCell::new(),
        sessions: Mutex::new(HashMap::new()),
        next_session: AtomicU64::new(1),
    });
    let on_new = planner.clone();
    let on_prompt = planner.clone();
    let on_cancel = planner.clone();
    let result = Agent
        .v1()
        .name(AGENT_NAME)
        .on_receive_request(
            async move |_request: InitializeRequest, responder, _cx| {
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(AgentCapabilities::new())
                        .agent_info(Implementation::new(AGENT_NAME, env!("CARGO_PKG_VERSION"))),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, _cx| {
                let session = on_new.open_session(&request);
                responder.respond(NewSessionResponse::new(session.id.clone()))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest,
                        responder: Responder<PromptResponse>,
                        cx: ConnectionTo<Client>| {
                let session_id = request.session_id.0.to_string();
                let Some(session) = on_prompt.session(&session_id) else {
                    return responder.respond_with_error(
                        Error::invalid_params()
                            .data(json!({"reason": format!("unknown session {session_id}")})),
                    );
                };
                let cancel = CancelSignal::new(&session.cancel);
                // The turn waits on the model, the client (permissions) and MCP
                // calls, so it must not run inside the dispatch loop.
                cx.spawn(run_prompt(
                    on_prompt.clone(),
                    session,
                    request,
                    responder,
                    cx.clone(),
                    cancel,
                ))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                if let Some(session) = on_cancel.session(&notification.session_id.0) {
                    eprintln!("{AGENT_NAME}: session/cancel for {}", session.id);
                    session.cancel.send_modify(|g| *g += 1);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    drop(planner);
    writer.drain(AGENT_NAME).await;
    result.map_err(|e| format!("ACP connection failed: {e:?}"))
}

impl Planner {
    fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    fn open_session(&self, request: &NewSessionRequest) -> Arc<Session> {
        let id = format!(
            "agent-session-{}",
            self.next_session.fetch_add(1, Ordering::Relaxed)
        );
        let mission_server = agent_side::stdio_servers(request, AGENT_NAME)
            .into_iter()
            .find(|s| s.name == crate::tools::MISSION_SERVER_NAME);
        eprintln!(
            "{AGENT_NAME}: session/new {id} cwd={} mission={} mission-tools={}",
            request.cwd.display(),
            agent_side::mission_id(request),
            if mission_server.is_some() {
                "yes"
            } else {
                "no"
            }
        );
        let session = Arc::new(Session {
            id: id.clone(),
            cwd: request.cwd.clone(),
            cancel: watch::channel(0).0,
            state: tokio::sync::Mutex::new(SessionState::new(mission_server)),
        });
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, session.clone());
        session
    }

    async fn model(&self) -> Result<Arc<ModelClient>, Error> {
        self.model
            .get_or_try_init(|| async {
                let settings = super::settings::resolve(&self.options.model, &self.options.db);
                let client = ModelClient::connect(&settings).map_err(model_error)?;
                eprintln!("{AGENT_NAME}: model {}", client.describe());
                Ok(Arc::new(client))
            })
            .await
            .cloned()
    }
}

/// A model failure as the turn's JSON-RPC error: the client's own text, which
/// names the endpoint and what to do.
pub(super) fn model_error(e: crate::model::ModelError) -> Error {
    Error::new(-32603, e.to_string())
}

async fn run_prompt(
    planner: Arc<Planner>,
    session: Arc<Session>,
    request: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: ConnectionTo<Client>,
    cancel: CancelSignal,
) -> Result<(), Error> {
    let text = request
        .prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut state = session.state.lock().await;
    let outcome = match planner.model().await {
        Ok(model) => {
            let turn = Turn {
                cx: &cx,
                session_id: &session.id,
                cwd: &session.cwd,
                model: &model,
                context_tokens: planner.options.context_tokens,
                max_steps: planner.options.max_steps,
                max_tokens: planner.options.max_tokens,
            };
            turn.run(&mut state, text, cancel).await
        }
        Err(e) => Err(e),
    };
    let sent = match outcome {
        Ok(response) => {
            eprintln!("{AGENT_NAME}: turn done ({:?})", response.stop_reason);
            responder.respond(response)
        }
        Err(err) => {
            eprintln!("{AGENT_NAME}: turn failed: {}", err.message);
            responder.respond_with_error(err)
        }
    };
    // A failure to answer is logged, never returned: a spawned task's error
    // would end the whole connection.
    if let Err(err) = sent {
        eprintln!("{AGENT_NAME}: could not answer the prompt: {err:?}");
    }
    Ok(())
}
