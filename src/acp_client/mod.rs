//! Host-side ACP adapter: runs one unit (an agent child process speaking ACP
//! v1 over stdio) and exposes it through plain Rust types.
//!
//! This is the only module of the host that names `agent-client-protocol`
//! types; the crate churns, so the rest of missionboard talks to
//! [`UnitSpec`], [`Unit`], [`UnitEvent`] and [`PermissionAsk`] instead.
//!
//! Lifecycle: [`Unit::start`] (in `start`) spawns the child under its supervisor
//! (`crate::supervise`: own process group, scrubbed environment, stderr into a bounded
//! ring), sends `initialize` and
//! `session/new`, and hands back a [`Unit`]. [`Unit::prompt`] runs one turn;
//! every `session/update` of that turn is on the event channel before it
//! returns. [`Unit::shutdown`] (or dropping the unit) has the supervisor end the
//! unit's whole tree.
//!
//! [`agent_side`] is the other end: the scaffold the built-in agents
//! (`stub-agent`, the native `agent`) serve ACP on over their own stdio.

pub mod agent_side;
mod convert;
pub mod frame;
mod process;
mod spawn;
mod start;
pub mod stdout_mark;

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_client_protocol::UntypedMessage;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, CloseSessionRequest, ContentBlock, PromptRequest,
    SetSessionConfigOptionRequest, TextContent,
};
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot, watch};

use crate::agents::{AgentCaps, SessionModels};

pub use process::{
    ExitInfo, STDERR_TAIL_BYTES, SupervisedEnd, SupervisedRun, is_secret_name, run_supervised,
    unit_environment,
};

/// How long `initialize` may take: npx cold starts take tens of seconds.
pub const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long `session/new` may take: agents connect their MCP servers here.
pub const NEW_SESSION_TIMEOUT: Duration = Duration::from_secs(120);
/// Grace between teardown steps (stdin closed → SIGTERM → SIGKILL).
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// How long a timed-out or cancelled turn gets to wind down on its own.
pub const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// The `_meta` key under which the mission id travels on `session/new`.
pub const MISSION_META_KEY: &str = "missionboard.mission";

/// The `session/new._meta` map for a mission: `{"missionboard.mission": {"missionId": …}}`.
pub fn mission_meta(mission_id: &str) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(
        MISSION_META_KEY.to_owned(),
        serde_json::json!({ "missionId": mission_id }),
    );
    meta
}

/// A stdio MCP server handed to the agent in `session/new`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpStdioServer {
    pub name: String,
    pub command: PathBuf,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

/// Everything needed to start one unit.
#[derive(Debug, Clone, Default)]
pub struct UnitSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The declaration's env: merged over the scrubbed host env, and the only
    /// way a secret-looking variable reaches the child.
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// Roots beyond `cwd` (`--add-dir`), sent as `additionalDirectories` on
    /// `session/new`, `session/resume` and `session/load` when the agent advertises
    /// `sessionCapabilities.additionalDirectories`.
    pub additional_dirs: Vec<PathBuf>,
    pub mcp_servers: Vec<McpStdioServer>,
    /// `session/new._meta`; see [`mission_meta`].
    pub meta: Map<String, Value>,
    /// Filled with the child's pid the moment it is spawned (before `session/new`
    /// names its MCP servers), for a mission socket that admits only the unit's own
    /// process tree.
    pub pid_slot: Option<Arc<OnceLock<u32>>>,
    /// The missionboard binary whose `supervise` the unit runs under; `None`: this
    /// process's own executable (a host that is not the missionboard binary, a test
    /// harness, names it).
    pub supervisor: Option<PathBuf>,
}

/// One plan entry as the agent sent it (a native ACP `plan` update).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanItem {
    pub content: String,
    /// `high` | `medium` | `low`
    pub priority: String,
    /// `pending` | `in_progress` | `completed`
    pub status: String,
}

/// Token accounting the agent reported at the end of a turn
/// (`PromptResponse.usage`, an unstable ACP field few agents send).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnUsage {
    pub total_tokens: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub thought_tokens: Option<u64>,
    pub cached_read_tokens: Option<u64>,
    pub cached_write_tokens: Option<u64>,
}

/// What the unit streamed during a turn, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub enum UnitEvent {
    /// A chunk of the agent's message; `message` is the message id it belongs to,
    /// when the agent names one (a change of id starts a new message).
    AgentText {
        text: String,
        message: Option<String>,
    },
    Thought(String),
    ToolCall {
        id: String,
        title: String,
        /// ACP tool kind: `read`, `edit`, `execute`, … or `other`.
        kind: String,
        /// `pending` | `in_progress` | `completed` | `failed`
        status: String,
        /// The call's arguments as the agent sent them, when it did.
        raw_input: Option<Value>,
        /// The update's `_meta` (`toolName` and friends, when the agent names the
        /// tool there).
        meta: Map<String, Value>,
    },
    ToolCallUpdate {
        id: String,
        status: Option<String>,
        title: Option<String>,
    },
    /// A full snapshot of the agent's native plan.
    Plan(Vec<PlanItem>),
    /// `usage_update`: tokens currently in context (not cumulative spend).
    Usage {
        used: u64,
        size: u64,
        /// Cumulative cost, when the agent reports it: (amount, currency).
        cost: Option<(f64, String)>,
    },
    /// End-of-turn usage from `PromptResponse.usage`; sent just before
    /// [`Unit::prompt`] returns.
    TurnUsage(TurnUsage),
    /// A non-JSON line on the agent's stdout. It is dropped (never answered),
    /// and reported here so the board can show a chatty agent.
    StdoutGarbage(String),
}

/// What a unit's `elicitation/create` asks of the operator.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicitation {
    /// Fill in a flat form.
    Form(crate::asks::form::Form),
    /// Visit a page (never fetched by missionboard: the operator opens it).
    Url { url: String, elicitation_id: String },
    /// A request missionboard cannot put to the operator (why); it is declined.
    Unsupported(String),
}

/// An `elicitation/create` waiting for the host's answer. Answer it through
/// `reply`; dropping it unanswered answers `cancel`.
#[derive(Debug)]
pub struct ElicitationAsk {
    /// What the agent says it needs (agent text: sanitize before showing it).
    pub message: String,
    /// The tool call it belongs to, when the agent scoped it to one.
    pub tool_call_id: Option<String>,
    pub wanted: Elicitation,
    pub reply: oneshot::Sender<ElicitationReply>,
}

/// The host's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationReply {
    /// Done: a form's values (empty for a page visited).
    Accept(Map<String, Value>),
    /// The operator said no.
    Decline,
    /// Nobody chose (the deadline passed, the turn or the mission ended).
    Cancel,
}

/// The host's decision on a permission request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionReply {
    Allow,
    Reject,
    Cancelled,
}

/// A `session/request_permission` waiting for the host's decision. Answer it
/// through `reply`; dropping it unanswered answers `cancelled`.
#[derive(Debug)]
pub struct PermissionAsk {
    pub tool_call_id: String,
    pub title: String,
    pub kind: String,
    pub raw_input: Option<Value>,
    pub locations: Vec<PathBuf>,
    /// The options offered, as (option id, kind). The adapter picks the id by
    /// kind, so callers only need this for display or policy.
    pub options: Vec<(String, String)>,
    /// The request's `_meta` merged with the tool call's (`toolName` and
    /// friends live here when the agent sends them).
    pub meta: Map<String, Value>,
    pub reply: oneshot::Sender<PermissionReply>,
}

/// A `session/request_permission`'s params read the way the host reads them off
/// the wire (recorded frames, tests); the reply end goes nowhere.
pub fn permission_ask_from_params(params: Value) -> Result<PermissionAsk, String> {
    let request: agent_client_protocol::v1::schema::RequestPermissionRequest =
        serde_json::from_value(params).map_err(|e| e.to_string())?;
    Ok(convert::permission_ask(request, oneshot::channel().0).0)
}

/// The option id the host answers a `session/request_permission`'s params with for
/// `reply` (recorded frames, tests); `None` when it answers `cancelled`.
pub fn option_chosen_from_params(
    params: Value,
    reply: PermissionReply,
) -> Result<Option<String>, String> {
    let request: agent_client_protocol::v1::schema::RequestPermissionRequest =
        serde_json::from_value(params).map_err(|e| e.to_string())?;
    let response = convert::permission_response(reply, &request.options);
    Ok(match response.outcome {
        agent_client_protocol::v1::schema::RequestPermissionOutcome::Selected(chosen) => {
            Some(chosen.option_id.0.to_string())
        }
        _ => None,
    })
}

/// A `session/update` notification's params read the way the host reads them off
/// the wire; `None` for an update the host does not surface.
pub fn unit_event_from_params(params: Value) -> Result<Option<UnitEvent>, String> {
    let note: agent_client_protocol::v1::schema::SessionNotification =
        serde_json::from_value(params).map_err(|e| e.to_string())?;
    Ok(convert::session_update(note.update))
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    MaxTokens,
    MaxTurnRequests,
    Refusal,
    Cancelled,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::MaxTurnRequests => "max_turn_requests",
            StopReason::Refusal => "refusal",
            StopReason::Cancelled => "cancelled",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptOutcome {
    pub stop_reason: StopReason,
    pub usage: Option<TurnUsage>,
}

/// A failure talking to a unit. Every variant names what happened; none of
/// them is a host panic.
#[derive(Debug, Clone, PartialEq)]
pub enum UnitError {
    /// The program could not be started at all.
    Spawn { program: String, error: String },
    /// The agent answered a session request with auth-required: it needs a login
    /// first (`terminal`: the terminal login it advertised, if any).
    LoginRequired {
        during: &'static str,
        message: String,
        terminal: Option<crate::agents::TerminalLogin>,
    },
    /// The child exited while we were waiting on it.
    Exited {
        during: &'static str,
        status: ExitInfo,
        stderr_tail: String,
    },
    /// The connection ended (stdout closed, transport error) but the
    /// process has not (yet) exited.
    ConnectionClosed {
        during: &'static str,
        detail: String,
        stderr_tail: String,
    },
    /// The agent answered with a JSON-RPC error.
    Rpc {
        during: &'static str,
        code: i32,
        message: String,
        data: Option<Value>,
    },
    Timeout {
        during: &'static str,
        after: Duration,
    },
    /// The agent answered, but not with something we can use.
    Protocol {
        during: &'static str,
        detail: String,
    },
}

impl UnitError {
    /// The captured stderr tail, when the error carries one.
    pub fn stderr_tail(&self) -> Option<&str> {
        match self {
            UnitError::Exited { stderr_tail, .. }
            | UnitError::ConnectionClosed { stderr_tail, .. } => Some(stderr_tail),
            _ => None,
        }
    }
}

/// The last few lines of a stderr tail, for one-line error messages.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

/// Longest slice of a JSON-RPC error's `data` quoted in an error line.
const ERROR_DATA_QUOTE: usize = 500;

/// What an agent put in a JSON-RPC error's `data`, on one bounded line: SDKs wrap
/// the real cause there (the Python SDK answers "Internal error" with
/// `{"details": "<the exception>"}`), so without it a blocker says nothing useful.
/// A lone `details`/`message`/`reason` string is quoted bare, anything else as JSON.
fn error_data_text(data: &Value) -> Option<String> {
    let bare = match data {
        Value::Null => return None,
        Value::String(s) => Some(s.clone()),
        Value::Object(m) if m.len() == 1 => ["details", "message", "reason"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str).map(str::to_owned)),
        _ => None,
    };
    let text = bare.unwrap_or_else(|| data.to_string());
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return None;
    }
    Some(match flat.char_indices().nth(ERROR_DATA_QUOTE) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    })
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnitError::Spawn { program, error } => {
                write!(f, "cannot start unit program {program}: {error}")
            }
            UnitError::Exited {
                during,
                status,
                stderr_tail,
            } => {
                write!(f, "unit process exited ({status}) during {during}")?;
                let tail = last_lines(stderr_tail, 5);
                if !tail.is_empty() {
                    write!(f, "; stderr: {tail}")?;
                }
                Ok(())
            }
            UnitError::ConnectionClosed {
                during,
                detail,
                stderr_tail,
            } => {
                write!(f, "unit connection closed during {during}: {detail}")?;
                let tail = last_lines(stderr_tail, 5);
                if !tail.is_empty() {
                    write!(f, "; stderr: {tail}")?;
                }
                Ok(())
            }
            UnitError::LoginRequired {
                during, message, ..
            } => write!(
                f,
                "agent returned error {} to {during}: {message}",
                crate::agents::AUTH_REQUIRED
            ),
            UnitError::Rpc {
                during,
                code,
                message,
                data,
            } => {
                write!(f, "agent returned error {code} to {during}: {message}")?;
                match data.as_ref().and_then(error_data_text) {
                    Some(text) => write!(f, " ({text})"),
                    None => Ok(()),
                }
            }
            UnitError::Timeout { during, after } => {
                write!(f, "unit did not answer {during} within {after:?}")
            }
            UnitError::Protocol { during, detail } => {
                write!(f, "unexpected answer to {during}: {detail}")
            }
        }
    }
}

impl std::error::Error for UnitError {}

/// A request of ours still waiting on the agent. Given up on — its wait timed out,
/// or the future awaiting it was dropped (a stop, a host leaving) — it is cancelled
/// with the protocol's `$/cancel_request` naming its id, so an agent that supports
/// it stops the work rather than finishing it for nobody. An answer disarms it.
pub(crate) struct Abandon {
    handle: Option<agent_client_protocol::RequestCancellationHandle>,
    during: &'static str,
}

impl Abandon {
    pub(crate) fn new(
        handle: agent_client_protocol::RequestCancellationHandle,
        during: &'static str,
    ) -> Abandon {
        Abandon {
            handle: Some(handle),
            during,
        }
    }

    /// The agent answered: nothing to cancel.
    pub(crate) fn answered(mut self) {
        self.handle = None;
    }

    /// Give up on the request now: `$/cancel_request`, then up to [`KILL_GRACE`] for
    /// the agent's answer (its result or `-32800`), which nobody reads — waiting lets
    /// an agent that honours the cancel wind the request down before its teardown.
    pub(crate) async fn now<F: std::future::Future + Unpin>(mut self, answer: &mut F) {
        self.cancel();
        let _ = tokio::time::timeout(KILL_GRACE, answer).await;
    }

    fn cancel(&mut self) {
        let Some(handle) = self.handle.take() else {
            return;
        };
        match handle.cancel() {
            Ok(()) => tracing::debug!(during = self.during, "abandoned: $/cancel_request sent"),
            Err(err) => {
                tracing::debug!(
                    during = self.during,
                    ?err,
                    "$/cancel_request could not be sent"
                )
            }
        }
    }
}

impl Drop for Abandon {
    fn drop(&mut self) {
        self.cancel();
    }
}

/// State shared between the unit handle and the connection's handlers.
struct Shared {
    events: mpsc::UnboundedSender<UnitEvent>,
    permissions: mpsc::UnboundedSender<PermissionAsk>,
    elicitations: mpsc::UnboundedSender<ElicitationAsk>,
    /// Bumped by [`Unit::cancel`]; every pending permission task watches it.
    cancel_generation: watch::Sender<u64>,
    /// Why the transport gave up writing to the unit, when it did (it went deaf).
    deafness: Arc<std::sync::Mutex<Option<String>>>,
}

/// A running unit with one ACP session.
pub struct Unit {
    session_id: String,
    caps: AgentCaps,
    cx: ConnectionTo<agent_client_protocol::Agent>,
    shared: Arc<Shared>,
    process: process::UnitProcess,
    events_rx: Option<mpsc::UnboundedReceiver<UnitEvent>>,
    permissions_rx: Option<mpsc::UnboundedReceiver<PermissionAsk>>,
    elicitations_rx: Option<mpsc::UnboundedReceiver<ElicitationAsk>>,
    /// Dropping this ends the connection task, which drops (closes) stdin.
    stop_connection: Option<oneshot::Sender<()>>,
    connection_task: Option<tokio::task::JoinHandle<()>>,
    /// How far the unit's stdout has been read (orders its verdicts after its updates).
    stdout_mark: Arc<stdout_mark::StdoutMark>,
    reaped: bool,
    /// How the session was opened: afresh, or the agent's own reopened.
    opened: SessionOpened,
}

/// How a unit's session came to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionOpened {
    /// `session/new`.
    #[default]
    New,
    /// `session/resume`: the agent's own session carried on, nothing replayed.
    Resumed,
    /// `session/load`: the agent's own session, its history replayed to us.
    Loaded,
}

impl SessionOpened {
    /// The ACP method that opened it.
    pub fn method(self) -> &'static str {
        match self {
            SessionOpened::New => "session/new",
            SessionOpened::Resumed => "session/resume",
            SessionOpened::Loaded => "session/load",
        }
    }
}

impl Unit {
    /// Send a session-setup request untyped (so fields this schema version does not
    /// know are still readable), bounded by the setup timeout.
    async fn request_untyped(
        &self,
        untyped: UntypedMessage,
        during: &'static str,
    ) -> Result<serde_json::Value, UnitError> {
        let sent = self.cx.send_request(untyped);
        let abandon = Abandon::new(sent.cancellation_handle(), during);
        let answer = sent.block_task();
        tokio::pin!(answer);
        match tokio::time::timeout(NEW_SESSION_TIMEOUT, &mut answer).await {
            Err(_) => {
                abandon.now(&mut answer).await;
                Err(UnitError::Timeout {
                    during,
                    after: NEW_SESSION_TIMEOUT,
                })
            }
            Ok(answer) => {
                abandon.answered();
                match answer {
                    Err(err) => Err(self.classify(err, during).await),
                    Ok(raw) => Ok(raw),
                }
            }
        }
    }

    /// Turn an SDK error into a [`UnitError`], looking at the process to tell
    /// "it died" from "it hung up".
    async fn classify(&self, err: agent_client_protocol::Error, during: &'static str) -> UnitError {
        let closed = agent_client_protocol::is_incoming_transport_closed(&err)
            || agent_client_protocol::is_connection_terminated(&err);
        let deaf = self
            .shared
            .deafness
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(detail) = deaf {
            return UnitError::ConnectionClosed {
                during,
                detail,
                stderr_tail: self.process.stderr.text(),
            };
        }
        if !closed {
            return UnitError::Rpc {
                during,
                code: err.code.value(),
                message: err.message,
                data: err.data,
            };
        }
        match self.process.wait_exit_for_report(KILL_GRACE).await {
            Some(status) => UnitError::Exited {
                during,
                status,
                stderr_tail: self.process.stderr.text(),
            },
            None => UnitError::ConnectionClosed {
                during,
                detail: err.message,
                stderr_tail: self.process.stderr.text(),
            },
        }
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    pub fn capabilities(&self) -> &AgentCaps {
        &self.caps
    }

    /// Is the session the agent's own earlier one (`session/resume` or
    /// `session/load`) rather than one opened afresh?
    pub fn loaded(&self) -> bool {
        self.opened != SessionOpened::New
    }

    /// How the session was opened.
    pub fn opened(&self) -> SessionOpened {
        self.opened
    }

    /// Switch the session to `model`, one of the models it advertised: through
    /// the model config option (`session/set_config_option`), or, for an agent
    /// on the older `models` field, `session/set_model`.
    pub async fn select_model(&mut self, model: &str) -> Result<(), UnitError> {
        let Some(models) = self.caps.models.as_ref() else {
            return Err(UnitError::Protocol {
                during: "model selection",
                detail: "the agent advertised no session models".into(),
            });
        };
        // Both sent untyped: `session/set_model` is not in this schema version
        // any more, and one path keeps the two alike.
        let (during, params) = match &models.config_id {
            Some(config_id) => (
                "session/set_config_option",
                serde_json::to_value(SetSessionConfigOptionRequest::new(
                    self.session_id.clone(),
                    config_id.clone(),
                    model,
                )),
            ),
            None => (
                "session/set_model",
                Ok(serde_json::json!({"sessionId": self.session_id, "modelId": model})),
            ),
        };
        let protocol = |detail: String| UnitError::Protocol { during, detail };
        let params = params.map_err(|e| protocol(e.to_string()))?;
        let untyped = UntypedMessage::new(during, &params).map_err(|e| protocol(e.message))?;
        self.request_untyped(untyped, during).await?;
        if let Some(models) = self.caps.models.as_mut() {
            models.current = model.to_owned();
        }
        Ok(())
    }

    /// Put the session in the agent's mode `mode` (`session/set_mode`): an agent whose
    /// settings files may start it in a mode that asks for nothing is held in the one
    /// its catalogue entry names.
    pub async fn set_mode(&self, mode: &str) -> Result<(), UnitError> {
        let during = "session/set_mode";
        let params = serde_json::json!({"sessionId": self.session_id, "modeId": mode});
        let untyped = UntypedMessage::new(during, &params).map_err(|e| UnitError::Protocol {
            during,
            detail: e.message,
        })?;
        self.request_untyped(untyped, during).await?;
        Ok(())
    }

    /// The child's pid (also its process group id).
    pub fn pid(&self) -> u32 {
        self.process.pid
    }

    /// The retained tail of the child's stderr (at most 64 KiB).
    pub fn stderr_tail(&self) -> String {
        self.process.stderr.text()
    }

    /// The exit status, if the child has already been reaped.
    pub fn exit_status(&self) -> Option<ExitInfo> {
        self.process.exited()
    }

    /// How far this unit's stdout has been read; a tap on it sees every update in
    /// stream order, before the connection dispatches it.
    pub fn stdout_mark(&self) -> Arc<stdout_mark::StdoutMark> {
        self.stdout_mark.clone()
    }

    /// The stream of session updates. Can be taken once.
    pub fn take_events(&mut self) -> Option<mpsc::UnboundedReceiver<UnitEvent>> {
        self.events_rx.take()
    }

    /// The stream of permission requests. Can be taken once. Until it is
    /// taken, asks queue up unanswered (and block the agent's turn).
    pub fn take_permissions(&mut self) -> Option<mpsc::UnboundedReceiver<PermissionAsk>> {
        self.permissions_rx.take()
    }

    /// The stream of elicitation requests. Can be taken once. Until it is taken,
    /// they queue up unanswered (and hold the agent's request open).
    pub fn take_elicitations(&mut self) -> Option<mpsc::UnboundedReceiver<ElicitationAsk>> {
        self.elicitations_rx.take()
    }

    /// Run one prompt turn; each string becomes its own text block.
    pub async fn prompt(&self, blocks: Vec<String>) -> Result<PromptOutcome, UnitError> {
        let during = "session/prompt";
        let content = blocks
            .into_iter()
            .map(|text| ContentBlock::Text(TextContent::new(text)))
            .collect();
        let request = PromptRequest::new(self.session_id.clone(), content);
        let sent = self.cx.send_request(request);
        // A turn given up on (its wind-down after `session/cancel` overran, the
        // host is leaving) is cancelled as a request too, in its own words.
        let abandon = Abandon::new(sent.cancellation_handle(), during);
        let answered = sent.block_task().await;
        abandon.answered();
        let response = match answered {
            Ok(response) => response,
            Err(err) => return Err(self.classify(err, during).await),
        };
        let usage = response.usage.as_ref().map(convert::turn_usage);
        if let Some(usage) = usage {
            let _ = self.shared.events.send(UnitEvent::TurnUsage(usage));
        }
        Ok(PromptOutcome {
            stop_reason: convert::stop_reason(&response.stop_reason),
            usage,
        })
    }

    /// [`Unit::prompt`] bounded by `limit`: on timeout the turn is cancelled
    /// and gets [`CANCEL_GRACE`] to wind down before we report the timeout.
    pub async fn prompt_within(
        &self,
        blocks: Vec<String>,
        limit: Duration,
    ) -> Result<PromptOutcome, UnitError> {
        let turn = self.prompt(blocks);
        tokio::pin!(turn);
        if let Ok(result) = tokio::time::timeout(limit, &mut turn).await {
            return result;
        }
        self.cancel();
        // Whatever the agent answers now, the turn overran its budget.
        let _ = tokio::time::timeout(CANCEL_GRACE, &mut turn).await;
        Err(UnitError::Timeout {
            during: "session/prompt",
            after: limit,
        })
    }

    /// Ask the agent to stop the current turn (`session/cancel`), and answer
    /// every pending permission request `cancelled` as ACP requires.
    pub fn cancel(&self) {
        // Notification first: it shares the outgoing queue with the
        // permission answers, so the agent learns the turn is cancelled
        // before it sees a `cancelled` outcome (and does not mistake it for
        // a plain denial).
        if let Err(err) = self
            .cx
            .send_notification(CancelNotification::new(self.session_id.clone()))
        {
            tracing::debug!(?err, "session/cancel could not be sent");
        }
        self.shared.cancel_generation.send_modify(|g| *g += 1);
    }

    /// Close the session (`session/close`, when the agent advertises it), close
    /// stdin, give the agent [`KILL_GRACE`] to exit, then SIGTERM and finally
    /// SIGKILL its process group, and reap it.
    pub async fn shutdown(mut self) -> Option<ExitInfo> {
        self.close_session().await;
        self.close_connection().await;
        let status = self.process.terminate(KILL_GRACE).await;
        self.reaped = status.is_some();
        status
    }

    /// Let an agent that advertises `sessionCapabilities.close` free its session
    /// before its process is ended (bounded by [`KILL_GRACE`]; a refusal or no
    /// answer only costs the wait: the teardown goes on).
    async fn close_session(&self) {
        if !self.caps.close_session || self.session_id.is_empty() || self.exit_status().is_some() {
            return;
        }
        let request = CloseSessionRequest::new(self.session_id.clone());
        let sent = self.cx.send_request(request);
        // Unanswered in time, it is cancelled as the process is ended anyway.
        let abandon = Abandon::new(sent.cancellation_handle(), "session/close");
        match tokio::time::timeout(KILL_GRACE, sent.block_task()).await {
            Ok(answer) => {
                abandon.answered();
                match answer {
                    Ok(_) => tracing::debug!(session = %self.session_id, "session closed"),
                    Err(err) => {
                        tracing::debug!(session = %self.session_id, ?err, "session/close refused")
                    }
                }
            }
            Err(_) => {
                tracing::debug!(session = %self.session_id, "session/close unanswered");
                drop(abandon);
            }
        }
    }

    async fn close_connection(&mut self) {
        self.shared.cancel_generation.send_modify(|g| *g += 1);
        drop(self.stop_connection.take());
        if let Some(task) = self.connection_task.take() {
            // The task only has to drop the transport; bound it anyway.
            let _ = tokio::time::timeout(Duration::from_secs(1), task).await;
        }
    }
}

impl Drop for Unit {
    fn drop(&mut self) {
        if self.reaped || self.process.exited().is_some() {
            return;
        }
        // No time to wait here: the supervisor ends the tree on its own (the
        // lifeline closing with the process handle says the same); the reaper task
        // (or tokio's orphan reaping, if the runtime is gone) collects it.
        drop(self.stop_connection.take());
        self.process.tear_down();
    }
}

/// Drain `events` into a vector without waiting (handy after a turn).
pub fn drain_events(events: &mut mpsc::UnboundedReceiver<UnitEvent>) -> Vec<UnitEvent> {
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(event);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_scrubbed_unless_declared() {
        use std::ffi::{OsStr, OsString};
        use std::os::unix::ffi::OsStringExt;
        let mut host: Vec<(OsString, OsString)> = [
            ("PATH", "/bin"),
            ("FOO_TOKEN", "t"),
            ("OPENAI_API_KEY", "k"),
            ("AWS_SECRET", "s"),
            ("DB_PASSWORD_FILE", "p"),
            ("MYSQL_PASSWD", "p"),
            ("PGPASSFILE", "p"),
            ("STRIPE_APIKEY_LIVE", "k"),
            ("X_AUTH_HEADER", "a"),
            ("GOOGLE_APPLICATION_CREDENTIALS", "c"),
            ("SSH_AUTH_SOCK", "/tmp/agent"),
            ("GPG_AGENT_INFO", "/run/gpg"),
            ("DATABASE_URL", "postgres://me:hunter2@db/app"),
            ("KEYBOARD", "us"),
            ("DOCS_URL", "https://example.com/a@b"),
            ("BAR_TOKEN", "host"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        // Not UTF-8: carried through, never a panic.
        host.push(("LATIN1".into(), OsString::from_vec(vec![0xe9, 0x74, 0xe9])));
        let declared = BTreeMap::from([
            ("BAR_TOKEN".to_owned(), "declared".to_owned()),
            ("EXTRA".to_owned(), "x".to_owned()),
        ]);
        let env = unit_environment(host, &declared);
        let get = |k: &str| {
            env.get(OsStr::new(k))
                .map(|v| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("PATH").as_deref(), Some("/bin"));
        assert_eq!(get("KEYBOARD").as_deref(), Some("us"));
        assert_eq!(get("DOCS_URL").as_deref(), Some("https://example.com/a@b"));
        assert_eq!(get("BAR_TOKEN").as_deref(), Some("declared"));
        assert_eq!(get("EXTRA").as_deref(), Some("x"));
        assert!(env.contains_key(OsStr::new("LATIN1")));
        for gone in [
            "FOO_TOKEN",
            "OPENAI_API_KEY",
            "AWS_SECRET",
            "DB_PASSWORD_FILE",
            "MYSQL_PASSWD",
            "PGPASSFILE",
            "STRIPE_APIKEY_LIVE",
            "X_AUTH_HEADER",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SSH_AUTH_SOCK",
            "GPG_AGENT_INFO",
            "DATABASE_URL",
        ] {
            assert!(!env.contains_key(OsStr::new(gone)), "{gone} leaked");
        }
    }

    #[test]
    fn mission_meta_shape() {
        let meta = mission_meta("m-123");
        assert_eq!(
            Value::Object(meta),
            serde_json::json!({"missionboard.mission": {"missionId": "m-123"}})
        );
    }

    #[test]
    fn an_rpc_error_quotes_its_data() {
        let rpc = |data: Option<Value>| UnitError::Rpc {
            during: "session/prompt",
            code: -32603,
            message: "Internal error".into(),
            data,
        };
        assert_eq!(
            rpc(Some(serde_json::json!({"details": "model\nfell over"}))).to_string(),
            "agent returned error -32603 to session/prompt: Internal error (model fell over)"
        );
        assert_eq!(
            rpc(Some(serde_json::json!({"errors": [1], "hint": "x"}))).to_string(),
            "agent returned error -32603 to session/prompt: Internal error ({\"errors\":[1],\"hint\":\"x\"})"
        );
        assert_eq!(
            rpc(None).to_string(),
            "agent returned error -32603 to session/prompt: Internal error"
        );
        let long = rpc(Some(Value::String("y".repeat(600)))).to_string();
        assert!(long.ends_with("…)"), "{long}");
    }

    #[test]
    fn error_messages_name_the_failure() {
        let err = UnitError::Exited {
            during: "session/prompt",
            status: ExitInfo {
                code: Some(3),
                signal: None,
            },
            stderr_tail: "a\n\nboom\n".into(),
        };
        assert_eq!(
            err.to_string(),
            "unit process exited (exit code 3) during session/prompt; stderr: a | boom"
        );
    }
}
