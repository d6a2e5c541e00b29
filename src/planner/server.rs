//! The ACP side of the native agent: its sessions and prompt turns, on the shared
//! agent-side scaffold ([`agent_side::serve`]).

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{NewSessionRequest, NewSessionResponse};
use tokio::sync::{OnceCell, watch};

use super::turn::{SessionState, Turn, model_error};
use super::{AGENT_NAME, AgentOptions};
use crate::acp_client::agent_side::{self, AgentSession, BuiltinAgent, PromptTurn, Sessions};
use crate::model::ModelClient;

struct Planner {
    options: AgentOptions,
    /// Connected on the first prompt and shared by every session (a scripted
    /// dialog has one cursor per process).
    model: OnceCell<Arc<ModelClient>>,
    sessions: Sessions<Session>,
}

struct Session {
    id: String,
    cwd: PathBuf,
    /// Bumped by `session/cancel`; the running turn watches it.
    cancel: watch::Sender<u64>,
    /// Held for the whole turn, so one session's turns never overlap.
    state: tokio::sync::Mutex<SessionState>,
}

impl AgentSession for Session {
    fn cancel_generation(&self) -> &watch::Sender<u64> {
        &self.cancel
    }
}

pub async fn serve(options: AgentOptions) -> Result<(), String> {
    let (transport, outlet, writer) = agent_side::stdio_transport(None);
    drop(outlet);
    let planner = Arc::new(Planner {
        options,
        model: OnceCell::new(),
        sessions: Sessions::new("agent-session"),
    });
    agent_side::serve(planner, transport, writer).await
}

impl BuiltinAgent for Planner {
    type Session = Session;

    fn name(&self) -> &'static str {
        AGENT_NAME
    }

    fn sessions(&self) -> &Sessions<Session> {
        &self.sessions
    }

    fn open_session(&self, request: NewSessionRequest) -> (Arc<Session>, NewSessionResponse) {
        let id = self.sessions.next_id();
        let mission_server = agent_side::stdio_servers(&request, AGENT_NAME)
            .into_iter()
            .find(|s| s.name == crate::mission_mcp::MISSION_SERVER_NAME);
        eprintln!(
            "{AGENT_NAME}: session/new {id} cwd={} mission={} mission-tools={}",
            request.cwd.display(),
            agent_side::mission_id(&request),
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
        (session, NewSessionResponse::new(id))
    }

    async fn run_prompt(self: Arc<Self>, turn: PromptTurn<Session>) {
        run_prompt(self, turn).await
    }
}

impl Planner {
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

async fn run_prompt(planner: Arc<Planner>, turn: PromptTurn<Session>) {
    let text = turn.text_blocks().join("\n\n");
    let PromptTurn {
        session,
        responder,
        cx,
        cancel,
        ..
    } = turn;
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
    if let Err(err) = sent {
        eprintln!("{AGENT_NAME}: could not answer the prompt: {err:?}");
    }
}
