//! `missionboard acp`: an ACP agent for editors (Zed, JetBrains, Neovim's ACP
//! clients) that fires missions from the chat and is the long-lived host of every
//! mission it fires.
//!
//! Chat turns run on the native agent's model loop ([`crate::planner`], with
//! agent-planner's model settings) with two tools of the session's own
//! ([`session_tools`]): `mission_start` and `mission_answer`. `/mission` ([`command`]) is
//! advertised through `available_commands_update` and speaks the board's grammar;
//! the envelope is also a session config option. Missions fired here record the
//! session as their parent: while it lives their reports, questions, plans and
//! verdicts stream into it ([`router`]), and a question is offered to the session's
//! agent within the envelope's agent-answer bound ([`offer`]). Once the session is
//! closed, or this process ends, their reports wait in the operator inbox as
//! `parent_gone`. With a live `missionboard host` that would claim it, `/mission`
//! queues the mission for that host instead, so it outlives the session. On exit the
//! fleet tears its units down like any host's and each mission it hosted is settled
//! ([`exit`]): a run checkpointed under an ask stays parked, any other is ended.

mod answer;
mod command;
mod exit;
mod offer;
mod router;
mod session_tools;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommandsUpdate, CloseSessionResponse, ContentBlock, ContentChunk,
    NewSessionRequest, NewSessionResponse, PromptResponse, SessionCapabilities,
    SessionCloseCapabilities, SessionConfigOption, SessionConfigOptionValue,
    SessionConfigSelectOption, SessionConfigValueId, SessionNotification, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, StopReason, TextContent,
};
use agent_client_protocol::{Client, Error};
use serde_json::json;
use tokio::sync::{OnceCell, watch};

use crate::acp_client::agent_side::{
    self, AgentSession, BuiltinAgent, CancelSignal, PromptTurn, Sessions,
};
use crate::agents::Registry;
use crate::model::ModelClient;
use crate::ops::host::{Host, Hosting};
use crate::paths::Paths;
use crate::planner::{HostTools, ModelFlags, SessionState, Turn};
use crate::store::blocking;
use crate::sync::LockUnpoisoned;

/// The name the agent gives in `initialize` and in its diagnostics.
pub const AGENT_NAME: &str = "missionboard-acp";
/// The declared agent whose model settings the session's chat runs on.
pub const CHAT_AGENT: &str = "agent-planner";
/// The session config option that picks the envelope.
const ENVELOPE_OPTION: &str = "envelope";
/// The envelope option's value for "whatever `default-mission-policy` says".
const DEFAULT_PICK: &str = "(default)";

/// How the session's chat runs (the native agent's bounds).
#[derive(Debug, Clone)]
pub struct AcpOptions {
    pub context_tokens: u64,
    pub max_steps: usize,
    pub max_tokens: u32,
}

/// What every part of a session host shares. Cheap to clone.
#[derive(Clone)]
pub struct Services {
    /// This process's host: its paths, its store, the fleet holding the units of
    /// the missions its sessions fire.
    pub host: Host,
}

/// The ACP agent: its sessions, the model their chat runs on, and the fleet that
/// hosts their missions.
pub struct Server {
    svc: Services,
    options: AcpOptions,
    sessions: Sessions<ChatSession>,
    /// Connected on the first chat turn, shared by every session.
    model: OnceCell<Arc<ModelClient>>,
    /// The editor's connection, once a session is open.
    client: OnceLock<ConnectionTo<Client>>,
}

/// One editor session.
pub struct ChatSession {
    id: String,
    cwd: PathBuf,
    cancel: watch::Sender<u64>,
    /// Held for the whole of a turn, so a session's turns never overlap.
    chat: Arc<tokio::sync::Mutex<SessionState>>,
    /// The envelope option, when the editor picked one (else the default).
    pick: Arc<Mutex<Option<String>>>,
    /// What the router delivered since the chat's last turn, for its model to read.
    news: Mutex<Vec<String>>,
}

impl AgentSession for ChatSession {
    fn cancel_generation(&self) -> &watch::Sender<u64> {
        &self.cancel
    }
}

/// Serve ACP on stdin/stdout until the editor hangs up (or a termination signal),
/// then end this process's sessions and tear its units down.
pub async fn run(paths: Paths, options: AcpOptions) -> Result<(), String> {
    let store = crate::config::open_store(&paths.db_path()).map_err(|e| e.to_string())?;
    // The shipped envelopes are always there to be named, whatever was deleted.
    if let Err(e) = crate::presets::seed_policies_quietly(&paths.home) {
        tracing::warn!("could not refresh the preset envelopes: {e}");
    }
    let host = blocking(move || Host::open(&paths, &store, Hosting::Units))
        .await
        .map_err(|e| format!("{e:#}"))?;
    let svc = Services { host: host.clone() };
    let missions = host.missions().clone();
    let head = blocking(move || missions.bus().head())
        .await
        .map_err(|e| e.to_string())?;
    let server = Arc::new(Server {
        svc: svc.clone(),
        options,
        sessions: Sessions::new("session"),
        model: OnceCell::new(),
        client: OnceLock::new(),
    });
    let router = router::spawn(Arc::downgrade(&server), svc.clone(), head);
    let mut signals = crate::signals::Signals::termination_or_interrupt()
        .map_err(|e| format!("cannot watch for termination signals: {e}"))?;
    let (transport, outlet, writer) = agent_side::stdio_transport(None);
    drop(outlet);
    let (served, ending) = tokio::select! {
        served = agent_side::serve(server, transport, writer) => (served, exit::Ending::HungUp),
        _ = signals.next() => (Ok(()), exit::Ending::Signalled),
    };
    router.abort();
    // Ended first, so whatever the teardown reports waits in the inbox.
    let missions = host.missions().clone();
    if let Err(e) = blocking(move || missions.close_parent_sessions_of_this_host()).await {
        tracing::warn!("could not record this host's sessions as ended: {e}");
    }
    let held = host.hosted_missions();
    host.close("missionboard acp exited").await;
    let settled = exit::settle(&host, held, ending).await;
    tracing::info!(
        parked = settled.parked,
        ended = settled.ended,
        "sessions ended: their open missions settled"
    );
    served
}

impl Server {
    /// Send `update` into session `id`.
    fn notify(&self, id: &str, update: SessionUpdate) -> Result<(), Error> {
        let cx = self
            .client
            .get()
            .ok_or_else(|| Error::new(-32603, "no editor connection yet"))?;
        cx.send_notification(SessionNotification::new(id.to_owned(), update))
    }

    /// Say `text` in session `id`, as the agent.
    fn say(&self, id: &str, text: &str) -> Result<(), Error> {
        self.notify(
            id,
            SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::Text(
                TextContent::new(text),
            ))),
        )
    }

    async fn model(&self) -> Result<Arc<ModelClient>, Error> {
        self.model
            .get_or_try_init(|| async {
                let paths = self.svc.host.paths().clone();
                let settings = blocking(move || {
                    let keys = Registry::load(&paths)
                        .ok()
                        .and_then(|r| r.get(CHAT_AGENT).map(|a| a.model.clone()))
                        .unwrap_or_default();
                    let flags = ModelFlags {
                        base_url: keys.base_url,
                        model: keys.model,
                        api_key_env: keys.api_key_env,
                    };
                    crate::planner::settings::resolve(&flags, &paths.db_path())
                })
                .await;
                let client =
                    ModelClient::connect(&settings).map_err(crate::planner::model_error)?;
                tracing::info!("{AGENT_NAME}: model {}", client.describe());
                Ok(Arc::new(client))
            })
            .await
            .cloned()
    }

    /// One chat turn of `session` on the model loop (the caller holds its dialog).
    async fn run_turn(
        &self,
        session: &ChatSession,
        mut state: tokio::sync::OwnedMutexGuard<SessionState>,
        prompt: String,
        cancel: CancelSignal,
    ) -> Result<PromptResponse, Error> {
        let news = std::mem::take(&mut *session.news.lock_unpoisoned());
        if !news.is_empty() {
            state.note(format!(
                "Shown to the operator from the missions you fired, since your last turn:\n\n{}",
                news.join("\n\n")
            ));
        }
        let model = self.model().await?;
        let cx = self
            .client
            .get()
            .ok_or_else(|| Error::new(-32603, "no editor connection yet"))?;
        let turn = Turn {
            cx,
            session_id: &session.id,
            cwd: &session.cwd,
            model: &model,
            context_tokens: self.options.context_tokens,
            max_steps: self.options.max_steps,
            max_tokens: self.options.max_tokens,
        };
        turn.run(&mut state, prompt, cancel).await
    }

    /// The envelope option as the editor shows it: the default, then every envelope
    /// on the search path with its character line.
    fn envelope_option(&self, pick: Option<&str>) -> SessionConfigOption {
        let data = command::picker_data(&self.svc).unwrap_or_default();
        let default = data.default_envelope.as_deref().unwrap_or("none set");
        let mut choices = vec![SessionConfigSelectOption::new(
            SessionConfigValueId::new(DEFAULT_PICK),
            format!("default-mission-policy ({default})"),
        )];
        choices.extend(data.envelopes.iter().map(|e| {
            SessionConfigSelectOption::new(
                SessionConfigValueId::new(e.short_name.as_str()),
                e.file_name.clone(),
            )
            .description((!e.summary.is_empty()).then(|| e.summary.clone()))
        }));
        SessionConfigOption::select(
            ENVELOPE_OPTION,
            "Envelope",
            SessionConfigValueId::new(pick.unwrap_or(DEFAULT_PICK)),
            choices,
        )
        .description(
            "The HITL policy that bounds the missions /mission and mission_start fire".to_string(),
        )
    }
}

/// The chat's system message: an operator's assistant that fires missions.
fn system_prompt(cwd: &std::path::Path) -> String {
    format!(
        "You are missionboard's session agent, in the operator's editor. Talk with the operator directly: your replies are shown to them.

You can fire missions: mission_start runs a one-line intent unattended by a declared agent inside an envelope (a HITL policy that bounds what it may do). The operator can also type /mission [--policy <envelope>] [agent-name] <intent>; /mission alone lists the envelopes. Reports, questions, plans and verdicts of the missions you fire arrive in this conversation as they happen.

When a mission's unit is waiting on you (a message carrying an askId), answer it with mission_answer only if the intent you fired already settles it and it is routine; if it is the operator's to decide (a destructive change, a real trade-off), leave it and tell the operator. The envelope bounds how many questions you may answer; a refusal means a human answers.

Your own tools: read_file, list_dir, grep, find_files, write_file and shell, each put to the operator for permission. The working directory is {}. Keep replies short.",
        cwd.display()
    )
}

impl BuiltinAgent for Server {
    type Session = ChatSession;

    fn name(&self) -> &'static str {
        AGENT_NAME
    }

    fn capabilities(&self) -> AgentCapabilities {
        AgentCapabilities::new()
            .session_capabilities(SessionCapabilities::new().close(SessionCloseCapabilities::new()))
    }

    fn sessions(&self) -> &Sessions<ChatSession> {
        &self.sessions
    }

    fn open_session(&self, request: NewSessionRequest) -> (Arc<ChatSession>, NewSessionResponse) {
        // Unique across processes: missions record it as their parent.
        let id = format!("mb-session-{}", uuid::Uuid::new_v4());
        let missions = self.svc.host.missions();
        if let Err(e) = missions.open_parent_session(&id) {
            tracing::warn!(session = %id, "could not record the session as live: {e}");
        }
        let pick = Arc::new(Mutex::new(None));
        let tools: Arc<dyn HostTools> = Arc::new(session_tools::SessionTools {
            svc: self.svc.clone(),
            session: id.clone(),
            pick: pick.clone(),
        });
        let session = Arc::new(ChatSession {
            id: id.clone(),
            cwd: request.cwd.clone(),
            cancel: watch::channel(0).0,
            chat: Arc::new(tokio::sync::Mutex::new(SessionState::hosted(
                tools,
                system_prompt(&request.cwd),
            ))),
            pick,
            news: Mutex::new(Vec::new()),
        });
        tracing::info!(session = %id, cwd = %request.cwd.display(), "session/new");
        let response = NewSessionResponse::new(id).config_options(vec![self.envelope_option(None)]);
        (session, response)
    }

    fn session_opened(&self, _session: &Arc<ChatSession>, id: &str, cx: &ConnectionTo<Client>) {
        let _ = self.client.set(cx.clone());
        let commands = SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
            command::available()
                .into_iter()
                .chain(answer::available())
                .collect(),
        ));
        if let Err(e) = self.notify(id, commands) {
            tracing::warn!(session = %id, "could not advertise /mission: {e:?}");
        }
    }

    fn close_session(&self, id: &str) -> Result<CloseSessionResponse, Error> {
        if let Some(session) = self.sessions.get(id) {
            session.cancel.send_modify(|g| *g += 1);
        }
        let missions = self.svc.host.missions();
        missions
            .close_parent_session(id)
            .map_err(|e| Error::new(-32603, e.to_string()))?;
        tracing::info!(session = %id, "session/close");
        Ok(CloseSessionResponse::new())
    }

    fn set_config_option(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let refuse = |reason: String| Error::invalid_params().data(json!({ "reason": reason }));
        let session = self
            .sessions
            .get(&request.session_id.0)
            .ok_or_else(|| agent_side::unknown_session(&request.session_id.0))?;
        if &*request.config_id.0 != ENVELOPE_OPTION {
            return Err(refuse(format!(
                "unknown config option '{}': the only one is '{ENVELOPE_OPTION}'",
                request.config_id.0
            )));
        }
        let SessionConfigOptionValue::ValueId { value } = &request.value else {
            return Err(refuse("the envelope option takes an envelope name".into()));
        };
        let picked = match &*value.0 {
            DEFAULT_PICK => None,
            name => {
                let data = command::picker_data(&self.svc).map_err(refuse)?;
                crate::ops::fire::lookup_envelope(name, command::OPTION_ORIGIN, &data.envelopes)
                    .map_err(refuse)?;
                Some(name.to_string())
            }
        };
        *session.pick.lock_unpoisoned() = picked.clone();
        Ok(SetSessionConfigOptionResponse::new(vec![
            self.envelope_option(picked.as_deref()),
        ]))
    }

    async fn run_prompt(self: Arc<Self>, turn: PromptTurn<ChatSession>) {
        let text = turn.text_blocks().join("\n\n");
        let PromptTurn {
            session,
            responder,
            cancel,
            ..
        } = turn;
        let outcome = match command::mission_args(&text) {
            None if let Some(args) = command::revise_args(&text) => {
                let (Ok(reply) | Err(reply)) = command::revise(&self.svc, args).await;
                self.say(&session.id, &reply)
                    .map(|()| PromptResponse::new(StopReason::EndTurn))
            }
            // The person at the editor settling an ask: an operator's verdict.
            None if let Some(settle) = answer::parse(&text) => {
                let reply = match settle {
                    Ok(settle) => answer::run(&self.svc, &session.id, settle).await,
                    Err(usage) => Err(usage),
                };
                let (Ok(text) | Err(text)) = reply;
                self.say(&session.id, &text)
                    .map(|()| PromptResponse::new(StopReason::EndTurn))
            }
            Some(args) => {
                let pick = session.pick.lock_unpoisoned().clone();
                let reply = match command::run(&self.svc, &session.id, pick, args).await {
                    Ok(text) | Err(text) => text,
                };
                self.say(&session.id, &reply)
                    .map(|()| PromptResponse::new(StopReason::EndTurn))
            }
            None => {
                let state = session.chat.clone().lock_owned().await;
                self.run_turn(&session, state, text, cancel).await
            }
        };
        let sent = match outcome {
            Ok(response) => responder.respond(response),
            Err(err) => {
                tracing::warn!(session = %session.id, "turn failed: {}", err.message);
                responder.respond_with_error(err)
            }
        };
        if let Err(err) = sent {
            tracing::warn!(session = %session.id, "could not answer the prompt: {err:?}");
        }
    }
}
