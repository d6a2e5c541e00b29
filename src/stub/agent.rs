//! The stub's ACP agent side: sessions, the turn cursor, and the step runner.

use std::collections::{HashMap, VecDeque};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, Cost, Implementation,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, SessionConfigOption,
    SessionConfigOptionCategory, SessionConfigOptionValue, SessionConfigSelectOption,
    SessionConfigValueId, SessionNotification, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, StopReason, TextContent, ToolCall, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind, Usage, UsageUpdate,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error};
use serde_json::{Map, Value, json};
use tokio::sync::watch;

use crate::acp::McpStdioServer;
use crate::acp::agent_side::CancelSignal;
use crate::tools::client::MissionClient;

use super::script::{self, OnDeny, RawStep, Script, Step, StopName, Vars, Via};

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
    /// Wait this long before answering `initialize` (`STUB_INITIALIZE_DELAY_MS`).
    pub initialize_delay: Option<std::time::Duration>,
}

struct StubAgent {
    config: AgentConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    next_session: AtomicU64,
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
    let (transport, outlet, writer) =
        crate::acp::agent_side::stdio_transport(Some(deaf.subscribe()));
    let agent = Arc::new(StubAgent {
        config,
        sessions: Mutex::new(HashMap::new()),
        next_session: AtomicU64::new(1),
        outlet,
        deaf,
    });
    let on_new = agent.clone();
    let on_config = agent.clone();
    let on_prompt = agent.clone();
    let on_cancel = agent.clone();
    let initialize_delay = agent.config.initialize_delay;

    let result = Agent
        .v1()
        .name("missionboard-stub")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                eprintln!(
                    "stub: initialize (client asked for {:?})",
                    request.protocol_version
                );
                if let Some(delay) = initialize_delay {
                    tokio::time::sleep(delay).await;
                }
                responder.respond(
                    InitializeResponse::new(ProtocolVersion::V1)
                        .agent_capabilities(AgentCapabilities::new())
                        .agent_info(Implementation::new(
                            "missionboard-stub",
                            env!("CARGO_PKG_VERSION"),
                        )),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, _cx| {
                let session = on_new.open_session(request);
                let mut response = NewSessionResponse::new(session.id.clone());
                if let Some(option) = on_new.model_option(&session) {
                    response = response.config_options(vec![option]);
                }
                responder.respond(response)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| match on_config
                .set_model(&request)
            {
                Ok(option) => responder.respond(SetSessionConfigOptionResponse::new(vec![option])),
                Err(reason) => {
                    eprintln!("stub: session/set_config_option refused: {reason}");
                    responder.respond_with_error(
                        Error::invalid_params().data(json!({ "reason": reason })),
                    )
                }
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
                // Subscribe now, not in the task: a cancel that follows the
                // prompt closely must still reach this turn.
                let cancel = CancelSignal::new(&session.cancel);
                let agent = on_prompt.clone();
                // The turn blocks on the client (permissions) and on MCP
                // calls, so it must not run inside the dispatch loop.
                cx.spawn(run_prompt(
                    agent,
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
                    eprintln!("stub: session/cancel for {}", session.id);
                    session.cancel.send_modify(|g| *g += 1);
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    // Let the last answers reach stdout: the writer ends once every sender
    // (the transport's and the agent's outlet) is gone.
    drop(agent);
    writer.drain("stub").await;
    result.map_err(|e| format!("ACP connection failed: {e:?}"))
}

impl StubAgent {
    fn session(&self, id: &str) -> Option<Arc<Session>> {
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
    }

    fn open_session(&self, request: NewSessionRequest) -> Arc<Session> {
        let id = format!(
            "stub-session-{}",
            self.next_session.fetch_add(1, Ordering::Relaxed)
        );
        let servers = crate::acp::agent_side::stdio_servers(&request, "stub");
        let mission_id = crate::acp::agent_side::mission_id(&request);
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
                .find(|s| s.name == crate::tools::MISSION_SERVER_NAME),
            script: self.config.preloaded.clone(),
            ..SessionState::default()
        };
        let model = self
            .config
            .preloaded
            .as_ref()
            .and_then(|s| s.models.first().cloned())
            .unwrap_or_default();
        let session = Arc::new(Session {
            id: id.clone(),
            model: Mutex::new(model),
            cancel: watch::channel(0).0,
            state: tokio::sync::Mutex::new(state),
        });
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, session.clone());
        session
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
            .session(&request.session_id.0)
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

async fn run_prompt(
    agent: Arc<StubAgent>,
    session: Arc<Session>,
    request: PromptRequest,
    responder: Responder<PromptResponse>,
    cx: ConnectionTo<Client>,
    cancel: CancelSignal,
) -> Result<(), Error> {
    let mut state = session.state.lock().await;
    state.cursor += 1;
    let turn = state.cursor;
    let blocks: Vec<String> = request
        .prompt
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        })
        .collect();
    agent.record_transcript(turn, &blocks.join(" "));

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
    let flow = runner.run_steps(&turn_def.steps).await;
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
    if let Err(err) = outcome {
        eprintln!("stub: could not answer the prompt: {err:?}");
    }
    Ok(())
}

/// Answer with an error; a failure to send is logged, never fatal to the
/// connection (a spawned task's error would end it).
fn respond_error(responder: Responder<PromptResponse>, error: Error) -> Result<(), Error> {
    if let Err(err) = responder.respond_with_error(error) {
        eprintln!("stub: could not answer the prompt: {err:?}");
    }
    Ok(())
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

/// The question and answer a resume prompt carries (its `Your question:` and
/// `The operator's answer:` lines).
fn resume_answer(blocks: &[String]) -> Option<(String, String)> {
    let text = blocks.join("\n");
    let line = |marker: &str| {
        let at = text.find(marker)? + marker.len();
        Some(text[at..].lines().next().unwrap_or("").trim().to_string())
    };
    Some((
        line(crate::tools::QUESTION_LINE)?,
        line(crate::tools::ANSWER_LINE)?,
    ))
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

    async fn exec(&mut self, step: Step, label: &str, kind: &str) -> Flow {
        match self.exec_inner(step, label, kind).await {
            Ok(flow) => flow,
            Err(flow) => flow,
        }
    }

    async fn exec_inner(&mut self, step: Step, label: &str, kind: &str) -> Result<Flow, Flow> {
        match step {
            Step::Say { text, chunks } | Step::Think { text, chunks } => {
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
                    self.tool_logged(label, kind, crate::tools::MISSION_PLAN, args)
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
                self.tool_logged(label, kind, crate::tools::MISSION_REPORT, args)
                    .await?;
            }
            Step::Finish { args } => {
                self.tool_logged(label, kind, crate::tools::MISSION_FINISH, args)
                    .await?;
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
                            crate::tools::MISSION_ASK_ATTENTION,
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
                        self.tool_logged(label, "report", crate::tools::MISSION_REPORT, args)
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
                            self.tool_logged(label, "report", crate::tools::MISSION_REPORT, args)
                                .await?;
                            return Ok(Flow::EndTurn);
                        }
                        OnDeny::FinishStuck => {
                            let mut args = Map::new();
                            args.insert("status".into(), json!("stuck"));
                            args.insert("reason".into(), json!(reason));
                            self.tool_logged(label, "finish", crate::tools::MISSION_FINISH, args)
                                .await?;
                            return Ok(Flow::EndTurn);
                        }
                        OnDeny::Error => return Err(fail(format!("stub: {reason}"))),
                    }
                }
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
            Step::Sleep { ms } => {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.log(label, "sleep ok");
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
