//! The stub's ACP agent side: sessions, the turn cursor, and the step runner.

use std::collections::VecDeque;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    AgentCapabilities, CloseSessionResponse, ContentBlock, ContentChunk, Cost,
    CreateElicitationRequest, LoadSessionRequest, LoadSessionResponse, MessageId,
    NewSessionRequest, NewSessionResponse, PermissionOption, PermissionOptionKind, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, PromptResponse, RequestPermissionOutcome,
    RequestPermissionRequest, ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities,
    SessionCloseCapabilities, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigOptionValue, SessionConfigSelectOption, SessionConfigValueId, SessionNotification,
    SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, StopReason, TextContent, ToolCall, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, Usage, UsageUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::acp_client::McpStdioServer;
use crate::acp_client::agent_side::{
    self, AgentSession, BuiltinAgent, CancelSignal, PromptTurn, Sessions,
};
use crate::mission_mcp::client::MissionClient;

use super::saved::{self, Saved};
use super::script::{self, OnDeny, OnReject, RawStep, Script, Step, StopName, Vars, Via};

/// The id of the config option through which a script's models are offered.
const MODEL_OPTION: &str = "model";

/// Settings from the command line and environment.
pub struct AgentConfig {
    /// A script loaded from `--script` / `STUB_SCRIPT`; wins over directives.
    pub preloaded: Option<Arc<Script>>,
    /// The delay between steps when the script does not set one.
    pub default_delay_ms: Option<u64>,
    /// Append one line per prompt here (`STUB_TRANSCRIPT`).
    pub transcript: Option<PathBuf>,
    /// Append each prompt's blocks, whole, here as a JSON line (`STUB_PROMPTS`).
    pub prompts: Option<PathBuf>,
    /// Wait this long before answering `initialize` (`STUB_INITIALIZE_DELAY_MS`).
    pub initialize_delay: Option<std::time::Duration>,
    /// Append one line per session lifecycle request here (`STUB_SESSIONS`):
    /// `session/new <id>`, `session/load <id>`, `session/resume <id>`, `session/close <id>`.
    pub sessions_log: Option<PathBuf>,
    /// `STUB_AUTH_REQUIRED`'s words: the auth method's kind (`terminal`, `agent`)
    /// and a terminal method's args; every `session/new` is refused as auth-required.
    pub auth_required: Option<Vec<String>>,
    /// `STUB_IGNORE_SESSION_CANCEL`: `session/cancel` is read and ignored (an agent
    /// whose turn does not wind down); only `$/cancel_request` ends it.
    pub ignore_session_cancel: bool,
}

struct StubAgent {
    config: AgentConfig,
    sessions: Sessions<Session>,
    /// Raw lines for stdout, shared with the JSON-RPC writer so a garbage
    /// line lands between whole messages.
    outlet: futures::channel::mpsc::UnboundedSender<String>,
    /// Set by the `deaf` step: stdin is never read again.
    deaf: watch::Sender<bool>,
}

struct Session {
    id: String,
    /// The session model (the first advertised one until the client picks),
    /// empty when the script advertises none.
    model: Mutex<String>,
    /// Bumped by `session/cancel`; the running turn watches it.
    cancel: watch::Sender<u64>,
    /// `STUB_IGNORE_SESSION_CANCEL`: `session/cancel` is read and ignored.
    ignores_cancel: bool,
    /// Held for the whole turn, so one session's turns never overlap.
    state: tokio::sync::Mutex<SessionState>,
}

#[derive(Default)]
struct SessionState {
    mission_entry: Option<McpStdioServer>,
    mission: Option<MissionClient>,
    script: Option<Arc<Script>>,
    cursor: usize,
    vars: Vars,
    ids: u64,
    /// Steps waiting on a parked question's answer (the rest of the turn it parked in).
    parked: Option<Vec<RawStep>>,
}

enum Flow {
    Continue,
    /// Run these steps next (an ask's `then`), outside the cancel race of
    /// the step that produced them.
    Then(Vec<RawStep>),
    /// Stop running steps; the turn ends normally with its `stop`.
    EndTurn,
    /// The ask was parked by the host: end the turn, and run these steps (the
    /// ask's `then`) first when the answer arrives.
    Park(Vec<RawStep>),
    Cancelled,
    Fail(Error),
}

fn fail(message: impl Into<String>) -> Flow {
    Flow::Fail(Error::new(-32603, message.into()))
}

/// Run the stub agent on stdin/stdout until the client hangs up.
pub async fn serve(config: AgentConfig) -> Result<(), String> {
    let deaf = watch::channel(false).0;
    let (transport, outlet, writer) = agent_side::stdio_transport(Some(deaf.subscribe()));
    let agent = Arc::new(StubAgent {
        config,
        sessions: Sessions::new("stub-session"),
        outlet,
        deaf,
    });
    agent_side::serve(agent, transport, writer).await
}

impl AgentSession for Session {
    fn cancel_generation(&self) -> &watch::Sender<u64> {
        &self.cancel
    }

    fn ignores_session_cancel(&self) -> bool {
        self.ignores_cancel
    }
}

impl BuiltinAgent for StubAgent {
    type Session = Session;

    fn name(&self) -> &'static str {
        "missionboard-stub"
    }

    fn tag(&self) -> &'static str {
        "stub"
    }

    fn initialize_delay(&self) -> Option<Duration> {
        self.config.initialize_delay
    }

    fn capabilities(&self) -> AgentCapabilities {
        let script = self.config.preloaded.as_deref();
        let mut sessions = SessionCapabilities::new();
        if script.is_some_and(|s| s.resume_session) {
            sessions = sessions.resume(SessionResumeCapabilities::new());
        }
        if script.is_some_and(|s| s.close_session) {
            sessions = sessions.close(SessionCloseCapabilities::new());
        }
        sessions = sessions.additional_directories(
            agent_client_protocol::v1::schema::SessionAdditionalDirectoriesCapabilities::new(),
        );
        AgentCapabilities::new()
            .load_session(script.is_some_and(|s| s.load_session))
            .session_capabilities(sessions)
    }

    fn auth_methods(&self) -> Vec<agent_client_protocol::v1::schema::AuthMethod> {
        use agent_client_protocol::v1::schema::{AuthMethod, AuthMethodAgent, AuthMethodTerminal};
        match self.config.auth_required.as_deref() {
            Some([kind, args @ ..]) if kind == "terminal" => vec![AuthMethod::Terminal(
                AuthMethodTerminal::new("stub-login", "Log in to the stub").args(args.to_vec()),
            )],
            Some(_) => vec![AuthMethod::Agent(AuthMethodAgent::new(
                "stub-key",
                "The stub's API key",
            ))],
            None => Vec::new(),
        }
    }

    fn refuse_new_session(&self) -> Option<Error> {
        self.config.auth_required.as_ref()?;
        eprintln!("stub: session/new refused: authentication required");
        // -32000: ACP's auth-required.
        Some(Error::new(-32000, "Authentication required".to_string()))
    }

    fn sessions(&self) -> &Sessions<Session> {
        &self.sessions
    }

    fn open_session(&self, request: NewSessionRequest) -> (Arc<Session>, NewSessionResponse) {
        // Loadable sessions outlive this process, so their ids must be unique
        // across processes too.
        let id = if self.loads_sessions() {
            format!("stub-session-{}", uuid::Uuid::new_v4())
        } else {
            self.sessions.next_id()
        };
        let dirs: Vec<String> = request
            .additional_directories
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        let session = self.open_session_as(id.clone(), request, Saved::default());
        if dirs.is_empty() {
            self.record_session("session/new", &id);
        } else {
            self.record_session("session/new", &format!("{id} dirs={}", dirs.join(":")));
        }
        let mut response = NewSessionResponse::new(id);
        if let Some(option) = self.model_option(&session) {
            response = response.config_options(vec![option]);
        }
        (session, response)
    }

    /// `session/load`: the session as its last turn left it, from its saved state.
    fn load_session(
        &self,
        request: LoadSessionRequest,
    ) -> Result<(Arc<Session>, LoadSessionResponse), Error> {
        let refuse = |reason: String| {
            eprintln!("stub: session/load refused: {reason}");
            Error::invalid_params().data(json!({ "reason": reason }))
        };
        let id = request.session_id.0.to_string();
        self.record_session("session/load", &id);
        if !self
            .config
            .preloaded
            .as_ref()
            .is_some_and(|s| s.load_session)
        {
            return Err(refuse("this stub does not advertise loadSession".into()));
        }
        let place = saved::load(&id).map_err(refuse)?;
        let mut as_new =
            NewSessionRequest::new(request.cwd.clone()).mcp_servers(request.mcp_servers);
        if let Some(meta) = request.meta {
            as_new = as_new.meta(meta);
        }
        eprintln!("stub: session/load {id} at turn {}", place.cursor);
        let session = self.open_session_as(id, as_new, place);
        let mut response = LoadSessionResponse::new();
        if let Some(option) = self.model_option(&session) {
            response = response.config_options(vec![option]);
        }
        Ok((session, response))
    }

    /// `session/resume`: the session carries on from its saved place, as a load does,
    /// with nothing replayed.
    fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<(Arc<Session>, ResumeSessionResponse), Error> {
        let refuse = |reason: String| {
            eprintln!("stub: session/resume refused: {reason}");
            Error::invalid_params().data(json!({ "reason": reason }))
        };
        let id = request.session_id.0.to_string();
        self.record_session("session/resume", &id);
        if !self
            .config
            .preloaded
            .as_ref()
            .is_some_and(|s| s.resume_session)
        {
            return Err(refuse(
                "this stub does not advertise sessionCapabilities.resume".into(),
            ));
        }
        let place = saved::load(&id).map_err(refuse)?;
        let mut as_new =
            NewSessionRequest::new(request.cwd.clone()).mcp_servers(request.mcp_servers);
        if let Some(meta) = request.meta {
            as_new = as_new.meta(meta);
        }
        eprintln!("stub: session/resume {id} at turn {}", place.cursor);
        let session = self.open_session_as(id, as_new, place);
        let mut response = ResumeSessionResponse::new();
        if let Some(option) = self.model_option(&session) {
            response = response.config_options(vec![option]);
        }
        Ok((session, response))
    }

    fn close_session(&self, id: &str) -> Result<CloseSessionResponse, Error> {
        self.record_session("session/close", id);
        if !self
            .config
            .preloaded
            .as_ref()
            .is_some_and(|s| s.close_session)
        {
            return Err(Error::method_not_found());
        }
        eprintln!("stub: session/close {id}");
        Ok(CloseSessionResponse::new())
    }

    fn set_config_option(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        match self.set_model(request) {
            Ok(option) => Ok(SetSessionConfigOptionResponse::new(vec![option])),
            Err(reason) => {
                eprintln!("stub: session/set_config_option refused: {reason}");
                Err(Error::invalid_params().data(json!({ "reason": reason })))
            }
        }
    }

    /// Connect the `mission` server now, as real agents connect theirs before the
    /// session is ready. A failure is logged here and named again by the first step
    /// that needs the tools (which retries the connection).
    async fn connect_servers(&self, session: &Arc<Session>) {
        let mut state = session.state.lock().await;
        if let (None, Some(entry)) = (&state.mission, state.mission_entry.clone()) {
            match MissionClient::connect(&entry).await {
                Ok(client) => state.mission = Some(client),
                Err(e) => eprintln!("stub: session/new: mission tools unavailable: {e}"),
            }
        }
    }

    async fn run_prompt(self: Arc<Self>, turn: PromptTurn<Session>) {
        run_prompt(self, turn).await
    }
}

impl StubAgent {
    /// Do the preloaded script's sessions outlive this process (`session/load`,
    /// `session/resume`)?
    fn loads_sessions(&self) -> bool {
        self.config.preloaded.as_ref().is_some_and(|s| s.persists())
    }

    /// One line for a session lifecycle request (`STUB_SESSIONS`): what a test reads
    /// to tell which method reopened a session.
    fn record_session(&self, method: &str, id: &str) {
        let Some(path) = &self.config.sessions_log else {
            return;
        };
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "{method} {id}"));
        if let Err(err) = written {
            eprintln!("stub: cannot append to {}: {err}", path.display());
        }
    }

    fn open_session_as(
        &self,
        id: String,
        request: NewSessionRequest,
        place: Saved,
    ) -> Arc<Session> {
        let servers = agent_side::stdio_servers(&request, "stub");
        let mission_id = agent_side::mission_id(&request);
        eprintln!(
            "stub: session/new {id} cwd={} mission={mission_id} mcp=[{}]",
            request.cwd.display(),
            servers
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        let state = SessionState {
            mission_entry: servers
                .into_iter()
                .find(|s| s.name == crate::mission_mcp::MISSION_SERVER_NAME),
            script: self.config.preloaded.clone(),
            cursor: place.cursor,
            parked: place.parked,
            ids: place.ids,
            vars: Vars {
                answer: place.answer,
                perms: place.perms,
                ..Vars::default()
            },
            ..SessionState::default()
        };
        let model = self
            .config
            .preloaded
            .as_ref()
            .and_then(|s| s.models.first().cloned())
            .unwrap_or_default();
        Arc::new(Session {
            id,
            model: Mutex::new(model),
            cancel: watch::channel(0).0,
            ignores_cancel: self.config.ignore_session_cancel,
            state: tokio::sync::Mutex::new(state),
        })
    }

    /// The models a preloaded script advertises.
    fn models(&self) -> &[String] {
        self.config
            .preloaded
            .as_ref()
            .map_or(&[], |s| s.models.as_slice())
    }

    /// The `model` config option of a session, when the script advertises models.
    fn model_option(&self, session: &Session) -> Option<SessionConfigOption> {
        let models = self.models();
        if models.is_empty() {
            return None;
        }
        let current = session
            .model
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let choices: Vec<SessionConfigSelectOption> = models
            .iter()
            .map(|m| {
                SessionConfigSelectOption::new(SessionConfigValueId::new(m.as_str()), m.clone())
            })
            .collect();
        Some(
            SessionConfigOption::select(
                MODEL_OPTION,
                "Model",
                SessionConfigValueId::new(current),
                choices,
            )
            .category(SessionConfigOptionCategory::Model),
        )
    }

    /// `session/set_config_option` for the model: only an advertised model.
    fn set_model(
        &self,
        request: &SetSessionConfigOptionRequest,
    ) -> Result<SessionConfigOption, String> {
        let session = self
            .sessions
            .get(&request.session_id.0)
            .ok_or_else(|| format!("unknown session {}", request.session_id.0))?;
        if &*request.config_id.0 != MODEL_OPTION || self.models().is_empty() {
            return Err(format!("unknown config option '{}'", request.config_id.0));
        }
        let SessionConfigOptionValue::ValueId { value } = &request.value else {
            return Err("the model option takes a model id".into());
        };
        if !self.models().iter().any(|m| m.as_str() == &*value.0) {
            return Err(format!(
                "model '{}' is not offered (offered: {})",
                value.0,
                self.models().join(", ")
            ));
        }
        eprintln!("stub: session {} now runs on model {}", session.id, value.0);
        *session.model.lock().unwrap_or_else(|e| e.into_inner()) = value.0.to_string();
        self.model_option(&session)
            .ok_or_else(|| "no models advertised".to_string())
    }

    fn record_prompt(&self, turn: usize, blocks: &[String]) {
        let Some(path) = &self.config.prompts else {
            return;
        };
        let line = serde_json::json!({"turn": turn, "blocks": blocks});
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "{line}"));
        if let Err(err) = written {
            eprintln!("stub: cannot append to {}: {err}", path.display());
        }
    }

    fn record_transcript(&self, turn: usize, text: &str) {
        let Some(path) = &self.config.transcript else {
            return;
        };
        let head: String = text
            .chars()
            .take(80)
            .map(|c| if c == '\n' { ' ' } else { c })
            .collect();
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut f| writeln!(f, "turn={turn} {head}"));
        if let Err(err) = written {
            eprintln!(
                "stub: cannot append to transcript {}: {err}",
                path.display()
            );
        }
    }
}

async fn run_prompt(agent: Arc<StubAgent>, turn: PromptTurn<Session>) {
    let blocks = turn.text_blocks();
    let PromptTurn {
        session,
        responder,
        cx,
        cancel,
        ..
    } = turn;
    let mut state = session.state.lock().await;
    state.cursor += 1;
    let turn = state.cursor;
    agent.record_transcript(turn, &blocks.join(" "));
    agent.record_prompt(turn, &blocks);

    // The first prompt decides the script; later ones (the nudge) only move
    // the cursor.
    if state.script.is_none() {
        match script::script_from_prompt(&blocks, agent.config.default_delay_ms) {
            Ok(s) => {
                eprintln!("stub: script '{}' ({} turns)", s.name, s.turns.len());
                state.script = Some(Arc::new(s));
            }
            Err(err) => {
                eprintln!("stub: turn={turn} {err}");
                return respond_error(responder, Error::new(-32602, format!("stub: {err}")));
            }
        }
    }
    let script = state.script.clone().expect("set above");
    // A resume carries the operator's answer to a question this script parked on:
    // the steps that waited for it run now, as this turn.
    let resumed = resume_answer(&blocks).and_then(|(question, answer)| {
        let steps = match state.parked.take() {
            Some(steps) => {
                state.cursor -= 1;
                steps
            }
            None => {
                let (turn_index, steps) = script::steps_after_ask(&script, &question)?;
                state.cursor = turn_index + 1;
                steps
            }
        };
        state.vars.answer = answer;
        Some(script::Turn {
            steps,
            stop: script::StopName::EndTurn,
        })
    });
    // A form answered after the host that held its request was gone: the steps
    // after the `elicit` step run now, its answer bound as the request's would be.
    let resumed = resumed.or_else(|| {
        let (message, answer) = resume_form(&blocks)?;
        let (turn_index, steps) = script::steps_after_elicit(&script, &message)?;
        state.cursor = turn_index + 1;
        state.vars.answer = answer;
        Some(script::Turn {
            steps,
            stop: script::StopName::EndTurn,
        })
    });
    // An operator's revise: the script's `on_revise` turn, with the feedback bound.
    let resumed = resumed.or_else(|| {
        let feedback = revise_feedback(&blocks)?;
        let turn = script.on_revise.clone()?;
        state.vars.feedback = feedback;
        Some(turn)
    });
    // A fresh session resuming after a gated call was decided: carry on from it.
    let resumed = resumed.or_else(|| {
        let (title, approved) = resume_verdict(&blocks)?;
        let (turn_index, steps) = script::steps_after_permission(&script, &title, approved)?;
        state.cursor = turn_index + 1;
        state.vars.perm = if approved { "allowed" } else { "denied" }.to_owned();
        Some(script::Turn {
            steps,
            stop: script::StopName::EndTurn,
        })
    });
    let turn = state.cursor.max(1);
    let Some(turn_def) = resumed.as_ref().or_else(|| script.turns.get(turn - 1)) else {
        let message = format!(
            "stub script '{}' exhausted: prompt asked for turn {turn}, script holds {}",
            script.name,
            script.turns.len()
        );
        eprintln!("stub: {message}");
        return respond_error(responder, Error::new(-32603, message));
    };

    let delay = Duration::from_millis(
        script
            .delay_ms
            .or(agent.config.default_delay_ms)
            .unwrap_or(0),
    );
    state.vars.turn = turn;
    state.vars.prompt = blocks
        .iter()
        .flat_map(|b| b.split_whitespace())
        .collect::<Vec<_>>()
        .join(" ");
    state.vars.model = session
        .model
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let mut runner = TurnRunner {
        agent: &agent,
        cx: &cx,
        session_id: &session.id,
        turn,
        state: &mut state,
        cancel: cancel.clone(),
        delay,
        input_tokens: 0,
        output_tokens: 0,
        usage_seen: false,
    };
    // The prompt cancelled as a request (`$/cancel_request`): the turn ends there,
    // answered `cancelled` as a v1 prompt may be, and the cancel is logged.
    let by_request = responder.cancellation();
    let flow = tokio::select! {
        flow = runner.run_steps(&turn_def.steps) => flow,
        () = by_request.cancelled() => {
            eprintln!("stub: turn={turn} cancelled by $/cancel_request");
            agent.record_session("$/cancel_request session/prompt", &session.id);
            Flow::Cancelled
        }
    };
    let usage = runner.usage_seen.then(|| {
        Usage::new(
            runner.input_tokens + runner.output_tokens,
            runner.input_tokens,
            runner.output_tokens,
        )
    });
    drop(runner);
    // A cancel that raced the last step still wins: ACP wants `cancelled`.
    let flow = match flow {
        Flow::Continue | Flow::EndTurn if cancel.is_set() => Flow::Cancelled,
        other => other,
    };
    let outcome = match flow {
        Flow::Continue | Flow::EndTurn | Flow::Then(_) | Flow::Park(_) => {
            let stop = match turn_def.stop {
                StopName::EndTurn => StopReason::EndTurn,
                StopName::Refusal => StopReason::Refusal,
                StopName::MaxTokens => StopReason::MaxTokens,
                StopName::MaxTurnRequests => StopReason::MaxTurnRequests,
            };
            eprintln!("stub: turn={turn} done ({stop:?})");
            responder.respond(PromptResponse::new(stop).usage(usage))
        }
        Flow::Cancelled => {
            eprintln!("stub: turn={turn} cancelled");
            responder.respond(PromptResponse::new(StopReason::Cancelled))
        }
        Flow::Fail(err) => {
            eprintln!("stub: turn={turn} failed: {}", err.message);
            responder.respond_with_error(err)
        }
    };
    save_place(&session.id, &state, state.parked.clone());
    if let Err(err) = outcome {
        eprintln!("stub: could not answer the prompt: {err:?}");
    }
}

/// Answer with an error; a failure to send is logged, never fatal to the
/// connection (a spawned task's error would end it).
fn respond_error(responder: Responder<PromptResponse>, error: Error) {
    if let Err(err) = responder.respond_with_error(error) {
        eprintln!("stub: could not answer the prompt: {err:?}");
    }
}

struct TurnRunner<'a> {
    agent: &'a StubAgent,
    cx: &'a ConnectionTo<Client>,
    session_id: &'a str,
    turn: usize,
    state: &'a mut SessionState,
    cancel: CancelSignal,
    delay: Duration,
    input_tokens: u64,
    output_tokens: u64,
    usage_seen: bool,
}

/// Parse a snake_case wire name into a schema enum, with a fallback.
fn wire<T: serde::de::DeserializeOwned>(name: &str, fallback: T) -> T {
    serde_json::from_value(Value::String(name.to_owned())).unwrap_or(fallback)
}

fn split_chunks(text: &str, chunks: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chunks <= 1 || chars.len() <= 1 {
        return vec![text.to_owned()];
    }
    let size = chars.len().div_ceil(chunks);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// A step's payload with placeholders filled in. An ask's `then` is left
/// alone: it may quote `{{answer}}`, which the ask has yet to produce.
fn fill_step(raw: &RawStep, vars: &Vars) -> Value {
    match (&raw.payload, raw.kind.as_str()) {
        (Value::Object(map), "ask") => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if k == "then" {
                        v.clone()
                    } else {
                        script::substitute(v, vars)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        (payload, _) => script::substitute(payload, vars),
    }
}

/// Save a loadable session's place in its script, with `parked` as the steps that
/// wait on an answer (a no-op unless the script says `load_session` or
/// `resume_session`).
fn save_place(session_id: &str, state: &SessionState, parked: Option<Vec<RawStep>>) {
    if !state.script.as_ref().is_some_and(|s| s.persists()) {
        return;
    }
    let place = Saved {
        cursor: state.cursor,
        parked,
        answer: state.vars.answer.clone(),
        perms: state.vars.perms.clone(),
        ids: state.ids,
    };
    if let Err(err) = saved::save(session_id, &place) {
        eprintln!("stub: cannot save session {session_id}: {err}");
    }
}

/// The question and answer a resume prompt carries (its `Your question:` and
/// `The operator's answer:` lines).
fn resume_answer(blocks: &[String]) -> Option<(String, String)> {
    let text = blocks.join("\n");
    let line = |marker: &str| {
        let at = text.find(marker)? + marker.len();
        Some(text[at..].lines().next().unwrap_or("").trim().to_string())
    };
    Some((
        line(crate::mission_mcp::QUESTION_LINE)?,
        line(crate::mission_mcp::ANSWER_LINE)?,
    ))
}

/// The form a resume turn names and the answer it carries (its `Your form:` and
/// `The operator's answer:` lines).
fn resume_form(blocks: &[String]) -> Option<(String, String)> {
    let text = blocks.join("\n");
    let line = |marker: &str| {
        let at = text.find(marker)? + marker.len();
        Some(text[at..].lines().next().unwrap_or("").trim().to_string())
    };
    Some((
        line(crate::mission_mcp::FORM_LINE)?,
        line(crate::mission_mcp::ANSWER_LINE)?,
    ))
}

/// The operator's feedback a revise prompt carries (between its marker lines).
fn revise_feedback(blocks: &[String]) -> Option<String> {
    let text = blocks.join("\n");
    let at =
        text.find(crate::mission_mcp::FEEDBACK_LINE)? + crate::mission_mcp::FEEDBACK_LINE.len();
    let rest = &text[at..];
    let end = rest
        .find(crate::mission_mcp::FEEDBACK_END)
        .unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

/// The gated call a resume brief names and whether it was approved (its
/// `Your gated tool call:` and `The operator's verdict:` lines).
fn resume_verdict(blocks: &[String]) -> Option<(String, bool)> {
    let text = blocks.join("\n");
    let line = |marker: &str| {
        let at = text.find(marker)? + marker.len();
        Some(text[at..].lines().next().unwrap_or("").trim().to_string())
    };
    let call = line(crate::mission_mcp::GATED_CALL_LINE)?;
    // "<title> (<toolset>.<tool>)"
    let title = call.rsplit_once(" (").map_or(call.as_str(), |(t, _)| t);
    let verdict = line(crate::mission_mcp::VERDICT_LINE)?;
    Some((title.to_string(), verdict.starts_with("approved")))
}

/// "no answer yet (ask_id=abc); …" → `abc`.
fn pending_ask_id(text: &str) -> Option<String> {
    if !text.to_ascii_lowercase().contains("no answer yet") {
        return None;
    }
    let rest = &text[text.find("ask_id=")? + "ask_id=".len()..];
    let id: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!id.is_empty()).then_some(id)
}

impl TurnRunner<'_> {
    /// Run `steps` in order. An ask's `then` steps are spliced in right
    /// after it (labelled `3.1`, `3.2`, …) instead of recursing.
    async fn run_steps(&mut self, steps: &[RawStep]) -> Flow {
        let mut queue: VecDeque<(String, RawStep)> = steps
            .iter()
            .enumerate()
            .map(|(i, raw)| ((i + 1).to_string(), raw.clone()))
            .collect();
        let mut first = true;
        while let Some((label, raw)) = queue.pop_front() {
            if self.cancel.is_set() {
                return Flow::Cancelled;
            }
            if !first && !self.delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(self.delay) => {}
                    _ = self.cancel.clone().wait() => return Flow::Cancelled,
                }
            }
            first = false;
            if raw.kind == "ask" {
                // Saved before the question exists: whenever this process dies
                // while it is outstanding, a loaded session carries on from its
                // answer.
                let waiting = script::ask_then(&raw)
                    .into_iter()
                    .chain(queue.iter().map(|(_, s)| s.clone()));
                save_place(self.session_id, self.state, Some(waiting.collect()));
            }
            let filled = RawStep {
                kind: raw.kind.clone(),
                payload: fill_step(&raw, &self.state.vars),
            };
            let step = match script::decode(&filled) {
                Ok(step) => step,
                Err(err) => return fail(format!("stub: turn={} step={label}: {err}", self.turn)),
            };
            // Every step races session/cancel: sleep and hang end there, and
            // a pending permission or MCP call is abandoned.
            let cancel = self.cancel.clone();
            let flow = tokio::select! {
                flow = self.exec(step, &label, &raw.kind) => flow,
                _ = cancel.wait() => Flow::Cancelled,
            };
            match flow {
                Flow::Continue => {}
                Flow::Then(then) => {
                    for (j, step) in then.into_iter().enumerate().rev() {
                        queue.push_front((format!("{label}.{}", j + 1), step));
                    }
                }
                Flow::Park(then) => {
                    let rest = then.into_iter().chain(queue.into_iter().map(|(_, s)| s));
                    self.state.parked = Some(rest.collect());
                    return Flow::EndTurn;
                }
                other => return other,
            }
        }
        Flow::Continue
    }

    fn log(&self, label: &str, what: &str) {
        eprintln!("stub: turn={} step={label} {what}", self.turn);
    }

    fn notify(&self, update: SessionUpdate) -> Result<(), Flow> {
        crate::acp_client::agent_side::update_sent();
        self.cx
            .send_notification(SessionNotification::new(self.session_id.to_owned(), update))
            .map_err(|e| fail(format!("stub: cannot send a session update: {}", e.message)))
    }

    fn next_id(&mut self, what: &str) -> String {
        self.state.ids += 1;
        format!("{what}-{}-{}", self.turn, self.state.ids)
    }

    async fn mission(&mut self, label: &str, kind: &str) -> Result<&MissionClient, Flow> {
        if self.state.mission.is_none() {
            let Some(entry) = self.state.mission_entry.clone() else {
                return Err(fail(format!(
                    "stub: turn={} step={label} ({kind}) needs the 'mission' MCP server, but session/new provided none",
                    self.turn
                )));
            };
            let client = MissionClient::connect(&entry).await.map_err(|e| {
                fail(format!(
                    "stub: turn={} step={label} ({kind}): mission tools unavailable: {e}",
                    self.turn
                ))
            })?;
            self.state.mission = Some(client);
        }
        Ok(self.state.mission.as_ref().expect("connected above"))
    }

    /// Call a mission tool. A tool error is logged and returned as `Err`
    /// text (a real agent would read it and carry on); a transport failure
    /// fails the turn.
    async fn tool(
        &mut self,
        label: &str,
        kind: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Result<String, String>, Flow> {
        let turn = self.turn;
        let client = self.mission(label, kind).await?;
        // What the stub said before this call is on its stdout before the call goes
        // out (the host judges a verdict with every earlier update counted).
        crate::acp_client::agent_side::updates_written(Duration::from_secs(5)).await;
        let result = client
            .call(tool, args)
            .await
            .map_err(|e| fail(format!("stub: turn={turn} step={label} ({kind}): {e}")))?;
        match &result {
            Ok(_) => self.log(label, &format!("{kind} ok")),
            Err(text) => self.log(label, &format!("{kind} error: {text}")),
        }
        Ok(result)
    }

    /// [`Self::tool`] for steps that only need the call made: the outcome
    /// is already in the diagnostics.
    async fn tool_logged(
        &mut self,
        label: &str,
        kind: &str,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<(), Flow> {
        self.tool(label, kind, tool, args).await.map(drop)
    }

    /// Replay an agent's own permission frames (its `tool_call` update, then its
    /// request), and act on the answer the way that agent does.
    async fn agent_permission(
        &mut self,
        label: &str,
        update: Option<Value>,
        mut request: Value,
        on_reject: OnReject,
        report: bool,
    ) -> Result<Flow, Flow> {
        if let Some(update) = update {
            let update: SessionUpdate = serde_json::from_value(update)
                .map_err(|e| fail(format!("stub: agent_permission update: {e}")))?;
            self.notify(update)?;
        }
        request["sessionId"] = json!(self.session_id);
        let request: RequestPermissionRequest = serde_json::from_value(request)
            .map_err(|e| fail(format!("stub: agent_permission request: {e}")))?;
        let title = request.tool_call.fields.title.clone().unwrap_or_default();
        let offered = request.options.clone();
        let response = self
            .cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|e| fail(format!("stub: permission request failed: {}", e.message)))?;
        let outcome = match &response.outcome {
            RequestPermissionOutcome::Selected(s) => {
                match offered
                    .iter()
                    .find(|o| o.option_id == s.option_id)
                    .map(|o| o.kind)
                {
                    Some(PermissionOptionKind::AllowOnce) => "allowed",
                    Some(PermissionOptionKind::AllowAlways) => "allowed always",
                    Some(_) => "denied",
                    None => "answered with an option never offered",
                }
            }
            _ => "cancelled",
        };
        if outcome == "cancelled" && self.cancel.is_set() {
            self.log(label, "agent_permission cancelled with the turn");
            return Ok(Flow::Cancelled);
        }
        self.state.vars.perm = outcome.to_owned();
        self.state.vars.perms.push(outcome.to_owned());
        self.log(label, &format!("agent_permission {outcome}"));
        if report {
            let mut args = Map::new();
            args.insert("kind".into(), json!("progress"));
            args.insert(
                "summary".into(),
                json!(format!("agent permission for {title}: {outcome}")),
            );
            self.tool_logged(label, "report", crate::mission_mcp::MISSION_REPORT, args)
                .await?;
        }
        if outcome.starts_with("allowed") {
            return Ok(Flow::Continue);
        }
        Ok(match on_reject {
            OnReject::Continue => Flow::Continue,
            OnReject::EndTurn => Flow::EndTurn,
            OnReject::Cancel => Flow::Cancelled,
        })
    }

    async fn exec(&mut self, step: Step, label: &str, kind: &str) -> Flow {
        match self.exec_inner(step, label, kind).await {
            Ok(flow) => flow,
            Err(flow) => flow,
        }
    }

    async fn exec_inner(&mut self, step: Step, label: &str, kind: &str) -> Result<Flow, Flow> {
        match step {
            Step::Say {
                text,
                chunks,
                message,
            } => {
                for piece in split_chunks(&text, chunks) {
                    let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(piece)))
                        .message_id(message.clone().map(MessageId::new));
                    self.notify(SessionUpdate::AgentMessageChunk(chunk))?;
                }
                self.log(label, &format!("{kind} ok"));
            }
            Step::Think { text, chunks } => {
                let thought = kind == "think";
                for piece in split_chunks(&text, chunks) {
                    let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(piece)));
                    self.notify(if thought {
                        SessionUpdate::AgentThoughtChunk(chunk)
                    } else {
                        SessionUpdate::AgentMessageChunk(chunk)
                    })?;
                }
                self.log(label, &format!("{kind} ok"));
            }
            Step::Mute { text } => {
                let chunk = ContentChunk::new(ContentBlock::Text(TextContent::new(text)));
                self.notify(SessionUpdate::AgentMessageChunk(chunk))?;
                self.log(label, "mute ok");
            }
            Step::Plan {
                entries,
                via,
                explanation,
            } => {
                if via != Via::Acp {
                    let mut args = Map::new();
                    args.insert("entries".into(), Value::Array(entries.clone()));
                    if let Some(e) = explanation {
                        args.insert("explanation".into(), Value::String(e));
                    }
                    self.tool_logged(label, kind, crate::mission_mcp::MISSION_PLAN, args)
                        .await?;
                }
                if via != Via::Mcp {
                    let plan = entries
                        .iter()
                        .map(|e| {
                            let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
                            PlanEntry::new(
                                field("content"),
                                wire(field("priority"), PlanEntryPriority::Medium),
                                wire(field("status"), PlanEntryStatus::Pending),
                            )
                        })
                        .collect();
                    self.notify(SessionUpdate::Plan(Plan::new(plan)))?;
                    self.log(label, "plan (acp) ok");
                }
            }
            Step::Report { args } => {
                self.tool_logged(label, kind, crate::mission_mcp::MISSION_REPORT, args)
                    .await?;
            }
            Step::Finish { args } => {
                let result = self
                    .tool(label, kind, crate::mission_mcp::MISSION_FINISH, args)
                    .await?;
                // A refused verdict (a failed check) is what the unit works on next.
                self.state.vars.finish = match result {
                    Ok(text) | Err(text) => text,
                };
            }
            Step::Ask {
                summary,
                detail,
                retries,
                then,
            } => {
                let mut args = Map::new();
                args.insert("summary".into(), Value::String(summary));
                if let Some(d) = detail {
                    args.insert("detail".into(), Value::String(d));
                }
                let mut attempts = 0;
                let answer = loop {
                    match self
                        .tool(
                            label,
                            kind,
                            crate::mission_mcp::MISSION_ASK_ATTENTION,
                            args.clone(),
                        )
                        .await?
                    {
                        Ok(text) => match pending_ask_id(&text) {
                            Some(id) if attempts < retries => {
                                attempts += 1;
                                self.log(label, &format!("ask pending (ask_id={id}); asking again ({attempts}/{retries})"));
                                args.insert("ask_id".into(), Value::String(id));
                            }
                            Some(id) => {
                                self.log(
                                    label,
                                    &format!("ask parked (ask_id={id}); ending the turn"),
                                );
                                return Ok(Flow::Park(then));
                            }
                            None => break text,
                        },
                        Err(_) => break String::new(),
                    }
                };
                self.state.vars.answer = answer;
                if !then.is_empty() {
                    return Ok(Flow::Then(then));
                }
            }
            Step::Permission {
                title,
                kind: tool_kind,
                path,
                command,
                times,
                on_deny,
                options,
                report,
            } => {
                let offered: Vec<PermissionOption> = options
                    .iter()
                    .map(|o| {
                        let id = o.id.clone().unwrap_or_else(|| o.kind.replace('_', "-"));
                        let name = o.name.clone().unwrap_or_else(|| o.kind.replace('_', " "));
                        PermissionOption::new(
                            id,
                            name,
                            wire(&o.kind, PermissionOptionKind::RejectOnce),
                        )
                    })
                    .collect();
                for i in 1..=times {
                    let call_id = self.next_id("perm");
                    let mut input = json!({"stub": true, "attempt": i});
                    if let Some(path) = &path {
                        input["path"] = json!(path);
                    }
                    if let Some(command) = &command {
                        input["command"] = json!(command);
                    }
                    let fields = ToolCallUpdateFields::new()
                        .title(title.clone())
                        .kind(wire(&tool_kind, ToolKind::Other))
                        .raw_input(input);
                    let request = RequestPermissionRequest::new(
                        self.session_id.to_owned(),
                        ToolCallUpdate::new(call_id, fields),
                        offered.clone(),
                    );
                    let response =
                        self.cx
                            .send_request(request)
                            .block_task()
                            .await
                            .map_err(|e| {
                                fail(format!("stub: permission request failed: {}", e.message))
                            })?;
                    let outcome = match &response.outcome {
                        RequestPermissionOutcome::Selected(s) => {
                            let kind = offered
                                .iter()
                                .find(|o| o.option_id == s.option_id)
                                .map(|o| o.kind);
                            match kind {
                                Some(
                                    PermissionOptionKind::AllowOnce
                                    | PermissionOptionKind::AllowAlways,
                                ) => "allowed",
                                _ => "denied",
                            }
                        }
                        _ => "cancelled",
                    };
                    if outcome == "cancelled" && self.cancel.is_set() {
                        self.log(
                            label,
                            &format!("permission {i}/{times} cancelled with the turn"),
                        );
                        return Ok(Flow::Cancelled);
                    }
                    self.state.vars.perm = outcome.to_owned();
                    self.state.vars.perms.push(outcome.to_owned());
                    self.log(label, &format!("permission {i}/{times} {outcome}"));
                    if report {
                        let mut args = Map::new();
                        args.insert("kind".into(), json!("progress"));
                        args.insert(
                            "summary".into(),
                            json!(format!("permission {i}/{times} for {title}: {outcome}")),
                        );
                        self.tool_logged(label, "report", crate::mission_mcp::MISSION_REPORT, args)
                            .await?;
                    }
                    if outcome == "allowed" {
                        continue;
                    }
                    let reason = format!("permission denied: {title}");
                    match on_deny {
                        OnDeny::Continue => {}
                        OnDeny::ReportBlocker => {
                            let mut args = Map::new();
                            args.insert("kind".into(), json!("blocker"));
                            args.insert("summary".into(), json!(reason));
                            self.tool_logged(
                                label,
                                "report",
                                crate::mission_mcp::MISSION_REPORT,
                                args,
                            )
                            .await?;
                            return Ok(Flow::EndTurn);
                        }
                        OnDeny::FinishStuck => {
                            let mut args = Map::new();
                            args.insert("status".into(), json!("stuck"));
                            args.insert("reason".into(), json!(reason));
                            self.tool_logged(
                                label,
                                "finish",
                                crate::mission_mcp::MISSION_FINISH,
                                args,
                            )
                            .await?;
                            return Ok(Flow::EndTurn);
                        }
                        OnDeny::Error => return Err(fail(format!("stub: {reason}"))),
                    }
                }
            }
            Step::AgentPermission {
                update,
                request,
                on_reject,
                report,
            } => {
                return self
                    .agent_permission(label, update, request, on_reject, report)
                    .await;
            }
            Step::ToolCall {
                id,
                title,
                kind: tool_kind,
                status,
            } => {
                let id = id.unwrap_or_else(|| self.next_id("call"));
                self.notify(SessionUpdate::ToolCall(
                    ToolCall::new(id.clone(), title)
                        .kind(wire(&tool_kind, ToolKind::Other))
                        .status(ToolCallStatus::InProgress),
                ))?;
                self.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    id,
                    ToolCallUpdateFields::new().status(wire(&status, ToolCallStatus::Completed)),
                )))?;
                self.log(label, "tool_call ok");
            }
            Step::Usage {
                used,
                size,
                input,
                output,
                cost,
            } => {
                let mut update = UsageUpdate::new(used, size);
                if let Some((amount, currency)) = cost {
                    update = update.cost(Cost::new(amount, currency));
                }
                self.notify(SessionUpdate::UsageUpdate(update))?;
                self.input_tokens += input;
                self.output_tokens += output;
                self.usage_seen |= input > 0 || output > 0;
                self.log(label, "usage ok");
            }
            Step::Elicit {
                message,
                schema,
                url,
            } => {
                let mode = match (schema, url) {
                    (Some(schema), _) => {
                        json!({"mode": "form", "sessionId": self.session_id, "requestedSchema": schema})
                    }
                    (None, url) => {
                        let id = self.next_id("elicit");
                        json!({"mode": "url", "sessionId": self.session_id, "elicitationId": id, "url": url})
                    }
                };
                let mut wire = mode;
                wire["message"] = json!(message);
                let request: CreateElicitationRequest =
                    serde_json::from_value(wire).map_err(|e| fail(format!("stub: elicit: {e}")))?;
                let response = self
                    .cx
                    .send_request(request)
                    .block_task()
                    .await
                    .map_err(|e| fail(format!("stub: elicitation failed: {}", e.message)))?;
                let outcome = match serde_json::to_value(&response.action) {
                    Ok(Value::Object(action)) => {
                        let name = action
                            .get("action")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_string();
                        match action.get("content").and_then(Value::as_object) {
                            Some(content) => {
                                let values: Vec<String> = content
                                    .iter()
                                    .map(|(k, v)| match v {
                                        Value::String(s) => format!("{k}={s}"),
                                        other => format!("{k}={other}"),
                                    })
                                    .collect();
                                format!("{name} {}", values.join("; "))
                            }
                            None => name,
                        }
                    }
                    _ => "?".to_string(),
                };
                self.log(label, &format!("elicit {outcome}"));
                self.state.vars.answer = outcome;
            }
            Step::Sleep { ms } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.log(label, "sleep ok");
            }
            Step::HoldMemory { mib } => {
                held_memory(mib);
                self.log(label, &format!("hold_memory: {mib} MiB resident"));
            }
            Step::Hang => {
                self.log(label, "hang: waiting for session/cancel");
                std::future::pending::<()>().await;
            }
            Step::Error { code, message } => {
                self.log(label, "error: failing the turn");
                return Err(Flow::Fail(Error::new(code, message)));
            }
            Step::Crash { code } => {
                self.log(label, &format!("crash: exiting with code {code}"));
                std::process::exit(code);
            }
            Step::StdoutGarbage { line } => {
                let _ = self.agent.outlet.unbounded_send(line);
                self.log(label, "stdout_garbage ok");
            }
            Step::Flood { bytes, line_bytes } => {
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(line_bytes);
                    let _ = self.agent.outlet.unbounded_send("x".repeat(n as usize));
                    left -= n;
                }
                self.log(
                    label,
                    &format!("flood: wrote {bytes} bytes of non-JSON to stdout"),
                );
            }
            Step::Write { path, text } => {
                let outcome = match std::fs::write(&path, text) {
                    Ok(()) => "ok".to_string(),
                    Err(e) => errno_text(&e),
                };
                let args = probe_report(format!("write {path}: {outcome}"), None);
                self.tool_logged(label, kind, crate::mission_mcp::MISSION_REPORT, args)
                    .await?;
            }
            Step::Run { argv } => {
                let ran = tokio::process::Command::new(&argv[0])
                    .args(&argv[1..])
                    .stdin(std::process::Stdio::null())
                    .output()
                    .await;
                let (outcome, output) = match ran {
                    Ok(out) => (
                        match out.status.code() {
                            Some(code) => format!("exit {code}"),
                            None => "killed by a signal".to_string(),
                        },
                        format!(
                            "{}{}",
                            String::from_utf8_lossy(&out.stdout),
                            String::from_utf8_lossy(&out.stderr)
                        ),
                    ),
                    Err(e) => (format!("not started: {}", errno_text(&e)), String::new()),
                };
                let args = probe_report(format!("run {}: {outcome}", argv[0]), Some(output));
                self.tool_logged(label, kind, crate::mission_mcp::MISSION_REPORT, args)
                    .await?;
            }
            Step::MissionServer { stdin, stdout } => {
                let Some(entry) = self.state.mission_entry.clone() else {
                    return Err(fail(format!(
                        "stub: turn={} step={label} ({kind}) needs the 'mission' MCP server, but session/new provided none",
                        self.turn
                    )));
                };
                let open = |path: &str| {
                    std::fs::OpenOptions::new()
                        .read(true)
                        .write(true)
                        .open(path)
                        .map_err(|e| {
                            fail(format!(
                                "stub: turn={} step={label} ({kind}): cannot open {path}: {e}",
                                self.turn
                            ))
                        })
                };
                let (input, output) = (open(&stdin)?, open(&stdout)?);
                // Not reaped here: it ends when the host closes the mission socket.
                tokio::process::Command::new(&entry.command)
                    .args(&entry.args)
                    .envs(&entry.env)
                    .stdin(input)
                    .stdout(output)
                    .spawn()
                    .map_err(|e| {
                        fail(format!(
                            "stub: turn={} step={label} ({kind}): cannot start {}: {e}",
                            self.turn,
                            entry.command.display()
                        ))
                    })?;
                self.log(
                    label,
                    &format!("mission_server: started on {stdin} and {stdout}"),
                );
            }
            Step::MissionEntry => {
                let summary = match &self.state.mission_entry {
                    Some(entry) => format!(
                        "mission entry: {} {}",
                        entry.command.display(),
                        entry.args.join(" ")
                    ),
                    None => "mission entry: none".to_string(),
                };
                let env = self
                    .state
                    .mission_entry
                    .iter()
                    .flat_map(|e| e.env.iter())
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join("\n");
                let args = probe_report(summary, Some(format!("env: [{env}]")));
                self.tool_logged(label, kind, crate::mission_mcp::MISSION_REPORT, args)
                    .await?;
            }
            Step::Deaf { requests } => {
                self.agent.deaf.send_replace(true);
                for i in 0..requests {
                    let request = json!({"jsonrpc": "2.0", "id": format!("deaf-{i}"), "method": "_stub/echo", "params": {"i": i}});
                    let _ = self.agent.outlet.unbounded_send(request.to_string());
                }
                self.log(
                    label,
                    &format!("deaf: stopped reading stdin, sent {requests} requests"),
                );
            }
        }
        Ok(Flow::Continue)
    }
}

/// A confinement probe's finding: one line, and the command's output (bounded).
fn probe_report(summary: String, detail: Option<String>) -> Map<String, Value> {
    let mut args = Map::new();
    args.insert("kind".into(), Value::String("finding".into()));
    args.insert("summary".into(), Value::String(summary));
    if let Some(detail) = detail.filter(|d| !d.trim().is_empty()) {
        let bounded: String = detail.chars().take(4000).collect();
        args.insert("detail".into(), Value::String(bounded));
    }
    args
}

/// `EACCES (os error 13)`: the errno by name where it is one a sandbox produces.
fn errno_text(e: &std::io::Error) -> String {
    let name = match e.raw_os_error() {
        Some(libc::EACCES) => "EACCES",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EROFS) => "EROFS",
        Some(libc::ENOENT) => "ENOENT",
        Some(_) | None => return e.to_string(),
    };
    format!("{name} (os error {})", e.raw_os_error().unwrap_or_default())
}

/// Allocate `mib` MiB, write every page (so it is resident, not merely reserved) and
/// keep it until the process exits.
fn held_memory(mib: u64) {
    static HELD: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let mut block = vec![0u8; (mib as usize) << 20];
    for page in block.chunks_mut(4096) {
        page[0] = 1;
    }
    HELD.lock().unwrap_or_else(|e| e.into_inner()).push(block);
}
