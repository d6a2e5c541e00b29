//! The model client shared by the oracle and the native agent (`missionboard agent`).
//!
//! One thin client over OpenAI-compatible `POST {base}/chat/completions` with function
//! tools, and a scripted backend (`model-base-url scripted:<file.json>`) that replays a
//! JSON dialog turn by turn, so demos and tests never reach a real model. Both sit behind
//! [`ModelClient`]; callers build a [`ChatRequest`] and get a [`ChatReply`].
//!
//! Servers differ (Ollama, llama.cpp, vLLM, OpenAI): the reply parser is lenient about the
//! shape of tool-call arguments and missing ids, but the request is always the plain
//! OpenAI shape.

mod openai;
mod scripted;
pub mod text_calls;

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use openai::OpenAiClient;
pub use scripted::{ScriptedBackend, ScriptedTurn, recorded_requests_path};

/// The model name the scripted backend advertises everywhere, so nobody mistakes a replay
/// for a real model.
pub const SCRIPTED_MODEL: &str = "scripted-test";

/// Prefix of `model-base-url` that selects the scripted backend.
pub const SCRIPTED_PREFIX: &str = "scripted:";

/// Who wrote a message in the dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of a chat dialog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tool calls the assistant made in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message: which call this is the result of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    pub fn assistant(content: Option<String>, tool_calls: Vec<ToolCall>) -> Self {
        ChatMessage {
            role: Role::Assistant,
            content,
            tool_calls,
            tool_call_id: None,
        }
    }

    /// The result of tool call `call_id`.
    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Tool,
            content: Some(text.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }

    fn text(role: Role, text: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: Some(text.into()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool the model may call: a name, what it is for, and a JSON Schema for its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// Whether, and which, tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The server's default (`auto` when tools are offered).
    #[default]
    Auto,
    /// Some tool must be called.
    Required,
    /// This tool must be called. Local servers may ignore it; callers tolerate that.
    Named(String),
}

/// A call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The server's id for the call; generated when the server sends none.
    pub id: String,
    pub name: String,
    /// Arguments as a JSON value (servers that send a JSON string are decoded; a string
    /// that is not JSON is kept as a JSON string so the caller can say what was wrong).
    pub arguments: Value,
}

/// The most of a call's malformed arguments quoted back into a dialog, in
/// characters: a runaway argument must not push the next request past the window.
pub const ECHO_LIMIT: usize = 200;

impl ToolCall {
    /// The call as it goes back into the dialog: an arguments object as it came;
    /// anything else (text a model sent that is not JSON) cut to [`ECHO_LIMIT`]
    /// characters of that text.
    pub fn echoed(&self) -> ToolCall {
        let arguments = match &self.arguments {
            Value::Object(_) => self.arguments.clone(),
            Value::String(s) => Value::String(s.chars().take(ECHO_LIMIT).collect()),
            other => Value::String(other.to_string().chars().take(ECHO_LIMIT).collect()),
        };
        ToolCall {
            arguments,
            ..self.clone()
        }
    }
}

/// What a model sent in place of an arguments object, quoted at most
/// [`ECHO_LIMIT`] characters, for the correction that names the problem.
pub fn describe_arguments(args: &Value) -> String {
    let (kind, text) = match args {
        Value::String(s) => ("text that does not parse as JSON", s.clone()),
        Value::Array(_) => ("a JSON array", args.to_string()),
        Value::Null => ("null", String::new()),
        Value::Bool(_) | Value::Number(_) => ("a bare JSON value", args.to_string()),
        Value::Object(_) => ("an object", args.to_string()),
    };
    if text.is_empty() {
        return kind.to_string();
    }
    let total = text.chars().count();
    let quoted: String = text.chars().take(ECHO_LIMIT).collect();
    if total > ECHO_LIMIT {
        format!("{kind}, {total} characters, starting {quoted:?}")
    } else {
        format!("{kind}: {quoted:?}")
    }
}

/// Token usage the server reported for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

impl Usage {
    /// The total, computed from the parts when the server left it out.
    pub fn total(&self) -> u64 {
        if self.total_tokens > 0 {
            self.total_tokens
        } else {
            self.prompt_tokens + self.completion_tokens
        }
    }
}

/// One completion request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub tool_choice: ToolChoice,
    /// Cap on the reply's length. Always sent: servers that default to "until the
    /// context is full" (llama.cpp) otherwise let one runaway reply eat the call.
    pub max_tokens: u32,
    /// Where the server stops the reply (OpenAI's `stop`; at most four). Empty: none.
    pub stop: Vec<String>,
}

/// The reply cap of a request that states none.
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

impl Default for ChatRequest {
    fn default() -> Self {
        ChatRequest {
            messages: Vec::new(),
            tools: Vec::new(),
            tool_choice: ToolChoice::default(),
            max_tokens: DEFAULT_MAX_TOKENS,
            stop: Vec::new(),
        }
    }
}

impl ChatRequest {
    /// The request body in the OpenAI wire shape, for `model`.
    pub fn to_wire(&self, model: &str) -> Value {
        let mut body = json!({
            "model": model,
            "messages": self.messages.iter().map(wire_message).collect::<Vec<_>>(),
            "temperature": 0,
            "stream": false,
        });
        if !self.tools.is_empty() {
            body["tools"] = self
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
            body["tool_choice"] = match &self.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Named(name) => json!({"type": "function", "function": {"name": name}}),
            };
        }
        body["max_tokens"] = json!(self.max_tokens);
        if !self.stop.is_empty() {
            body["stop"] = json!(self.stop);
        }
        body
    }
}

fn wire_message(m: &ChatMessage) -> Value {
    // Never null: llama.cpp and vLLM refuse an assistant tool-call message whose
    // content is null, and an empty string means the same to every server.
    let mut v = json!({"role": m.role, "content": m.content.as_deref().unwrap_or_default()});
    if !m.tool_calls.is_empty() {
        v["tool_calls"] = m
            .tool_calls
            .iter()
            .map(|c| {
                // Text the model sent that was not JSON goes back as that text, not as
                // a JSON string of it (which would encode it twice).
                let arguments = match &c.arguments {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                json!({"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": arguments}})
            })
            .collect();
    }
    if let Some(id) = &m.tool_call_id {
        v["tool_call_id"] = json!(id);
    }
    v
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatReply {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

/// Why a completion failed. Each message names what to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelError {
    /// Nothing answered at the endpoint.
    Unreachable { url: String, detail: String },
    /// The endpoint answered with an error status (after retries, for transient ones).
    Status {
        url: String,
        status: u16,
        body: String,
    },
    /// No reply within the per-call timeout (after retries).
    Timeout { url: String, after: Duration },
    /// The endpoint answered something that is not a chat completion.
    BadReply { url: String, detail: String },
    /// The scripted dialog has no turn left for this call.
    Exhausted {
        path: PathBuf,
        call: usize,
        held: usize,
    },
    /// The scripted dialog could not be loaded.
    Script { path: PathBuf, detail: String },
    /// The settings are unusable (no model name, a missing API key variable, ...).
    Settings(String),
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelError::Unreachable { url, detail } => write!(
                f,
                "model endpoint {url} is unreachable ({detail}); start the model server or set `missionboard config set model-base-url <url>`"
            ),
            ModelError::Status { url, status, body } => {
                write!(f, "model endpoint {url} answered HTTP {status}")?;
                if !body.is_empty() {
                    write!(f, ": {body}")?;
                }
                Ok(())
            }
            ModelError::Timeout { url, after } => write!(
                f,
                "model endpoint {url} did not answer within {}s",
                after.as_secs()
            ),
            ModelError::BadReply { url, detail } => {
                write!(
                    f,
                    "model endpoint {url} sent a reply that is not a chat completion: {detail}"
                )
            }
            ModelError::Exhausted { path, call, held } => write!(
                f,
                "scripted backend {} is exhausted: call {call} asked for turn {call} but the script holds {held} turn(s)",
                path.display()
            ),
            ModelError::Script { path, detail } => {
                write!(f, "scripted backend {}: {detail}", path.display())
            }
            ModelError::Settings(detail) => f.write_str(detail),
        }
    }
}

impl std::error::Error for ModelError {}

/// A request the server refused for not fitting its context window, with what the
/// refusal said in numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextRefusal {
    /// The window the server runs with.
    pub window: Option<u64>,
    /// The prompt's length as the server counted it.
    pub prompt: Option<u64>,
}

impl ModelError {
    /// Whether the server refused the request for not fitting its context window,
    /// and the numbers it gave. Servers say it differently: OpenAI and
    /// llama-cpp-python send `context_length_exceeded` ("maximum context length is N
    /// tokens. However, you requested T tokens (P in the messages, …"), llama.cpp's
    /// server `exceed_context_size_error` with `n_ctx` and `n_prompt_tokens`.
    pub fn context_exceeded(&self) -> Option<ContextRefusal> {
        let ModelError::Status { status, body, .. } = self else {
            return None;
        };
        let lower = body.to_lowercase();
        let said = [
            "context_length_exceeded",
            "exceed_context_size",
            "maximum context length",
            "exceeds the available context size",
            "exceed context window",
        ]
        .iter()
        .any(|s| lower.contains(s));
        if !(400..500).contains(status) || !said {
            return None;
        }
        let number_after = |marker: &str| {
            let at = lower.find(marker)? + marker.len();
            let digits: String = lower[at..]
                .trim_start_matches(|c: char| !c.is_ascii_digit())
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse::<u64>().ok().filter(|n| *n > 0)
        };
        Some(ContextRefusal {
            window: number_after("maximum context length is")
                .or_else(|| number_after("\"n_ctx\""))
                .or_else(|| number_after("context window of")),
            prompt: number_after("tokens (").or_else(|| number_after("\"n_prompt_tokens\"")),
        })
    }
}

/// Where the model lives and which one to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSettings {
    /// `http(s)://…/v1`, or `scripted:<file.json>`.
    pub base_url: String,
    /// The model to ask for; required for an HTTP endpoint.
    pub model: Option<String>,
    /// Name of the environment variable that holds the bearer key, if the endpoint needs one.
    pub api_key_env: Option<String>,
    /// Per-call timeout.
    pub timeout: Duration,
}

impl ModelSettings {
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

    /// Settings from the `model-*` config keys.
    pub fn from_config(config: &crate::config::Config) -> anyhow::Result<Self> {
        use crate::config::{MODEL_API_KEY_ENV, MODEL_BASE_URL, MODEL_NAME};
        Ok(ModelSettings {
            base_url: config
                .get(MODEL_BASE_URL)?
                .unwrap_or_else(|| "http://127.0.0.1:11434/v1".to_string()),
            model: config.get(MODEL_NAME)?,
            api_key_env: config.get(MODEL_API_KEY_ENV)?,
            timeout: config.model_timeout()?,
        })
    }

    /// The scripted file, when these settings select the scripted backend.
    pub fn scripted_path(&self) -> Option<PathBuf> {
        self.base_url
            .strip_prefix(SCRIPTED_PREFIX)
            .map(|p| PathBuf::from(p.trim()))
    }
}

/// How long a look at the server's own description (`/props`, `/models`) may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What `GET {base}/models` says about the configured model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServedCheck {
    /// The server lists it.
    Served,
    /// The server answered with this list, without it.
    NotServed(Vec<String>),
}

/// Ask the endpoint of `settings` whether it serves the configured model: `GET
/// {base}/models`. A base URL without its `/v1`, or with a wrong path, fails here
/// (HTTP 404) instead of at the first completion.
pub async fn check_served(
    settings: &ModelSettings,
    timeout: Duration,
) -> Result<ServedCheck, ModelError> {
    let client = OpenAiClient::new(settings)?;
    let served = client.served_models(timeout).await?;
    Ok(if served.iter().any(|m| m == client.model()) {
        ServedCheck::Served
    } else {
        ServedCheck::NotServed(served)
    })
}

/// `doctor`'s line about [`check_served`], and whether it needs a fix: a listing
/// that answers without the model, or an error status (a base URL without `/v1`
/// answers 404), is one; an endpoint that answers nothing is left to the connection
/// probe's own line. No line for a scripted dialog or when no model is named.
pub fn served_line(settings: &ModelSettings, timeout: Duration) -> Option<(String, bool)> {
    // Without a model name there is nothing to look for (doctor says to set one).
    let model = settings.model.clone().filter(|m| !m.trim().is_empty())?;
    if settings.scripted_path().is_some() {
        return None;
    }
    let url = format!("{}/models", settings.base_url.trim_end_matches('/'));
    let checked = crate::runtime::multi_thread()
        .map_err(|e| ModelError::Settings(e.to_string()))
        .and_then(|rt| rt.block_on(check_served(settings, timeout)));
    Some(match checked {
        Ok(ServedCheck::Served) => (format!("{url} serves {model}"), false),
        Ok(ServedCheck::NotServed(served)) => (
            format!(
                "{url} does not serve {model} (it lists {}) — set model-name to one it serves, or load {model} on the server",
                if served.is_empty() {
                    "no model".to_string()
                } else {
                    served.join(", ")
                }
            ),
            true,
        ),
        Err(ModelError::Settings(why)) => (why, true),
        Err(e @ (ModelError::Status { .. } | ModelError::BadReply { .. })) => (
            format!(
                "GET {url}: {e} — model-base-url must be the OpenAI-compatible base, ending in /v1 for most servers"
            ),
            true,
        ),
        Err(e) => (format!("GET {url}: {e}"), false),
    })
}

/// A connected model: the HTTP client or the scripted replay.
#[derive(Debug)]
pub enum ModelClient {
    OpenAi(OpenAiClient),
    Scripted(ScriptedBackend),
}

impl ModelClient {
    /// Build the client the settings select. A scripted dialog is loaded and validated
    /// now, so a broken script fails before any work starts.
    pub fn connect(settings: &ModelSettings) -> Result<Self, ModelError> {
        match settings.scripted_path() {
            Some(path) => Ok(ModelClient::Scripted(ScriptedBackend::load(&path)?)),
            None => Ok(ModelClient::OpenAi(OpenAiClient::new(settings)?)),
        }
    }

    /// One completion.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ModelError> {
        self.complete_observed(request, &|_, _, _| {}).await
    }

    /// One completion; `on_retry` hears of each failed attempt that is tried again
    /// (its number, its error, the backoff before the next).
    pub async fn complete_observed(
        &self,
        request: &ChatRequest,
        on_retry: &(dyn Fn(u32, &ModelError, Duration) + Sync),
    ) -> Result<ChatReply, ModelError> {
        match self {
            ModelClient::OpenAi(c) => c.complete(request, on_retry).await,
            ModelClient::Scripted(s) => s.complete(request).await,
        }
    }

    /// The context window the server reports running with, where it reports one
    /// (llama.cpp's `/props`); `None` for the scripted backend and silent servers.
    pub async fn served_context(&self) -> Option<u64> {
        match self {
            ModelClient::OpenAi(c) => c.served_context(PROBE_TIMEOUT).await,
            ModelClient::Scripted(_) => None,
        }
    }

    /// The model's name as every surface shows it.
    pub fn model_name(&self) -> &str {
        match self {
            ModelClient::OpenAi(c) => c.model(),
            ModelClient::Scripted(_) => SCRIPTED_MODEL,
        }
    }

    /// A one-line description for narration: `qwen3 at http://…` or `scripted (path)`.
    pub fn describe(&self) -> String {
        match self {
            ModelClient::OpenAi(c) => format!("{} at {}", c.model(), c.base_url()),
            ModelClient::Scripted(s) => format!("scripted ({})", s.path().display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_request_is_the_openai_shape() {
        let request = ChatRequest {
            messages: vec![
                ChatMessage::system("be brief"),
                ChatMessage::assistant(
                    None,
                    vec![ToolCall {
                        id: "c1".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "a"}),
                    }],
                ),
                ChatMessage::tool_result("c1", "contents"),
            ],
            tools: vec![ToolSpec {
                name: "read_file".into(),
                description: "read".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: ToolChoice::Named("read_file".into()),
            max_tokens: 64,
            stop: vec!["\n```\n".into()],
        };
        let wire = request.to_wire("m");
        assert_eq!(wire["model"], "m");
        assert_eq!(
            wire["messages"][0],
            json!({"role": "system", "content": "be brief"})
        );
        assert_eq!(
            wire["messages"][1]["tool_calls"][0]["function"]["arguments"],
            json!("{\"path\":\"a\"}")
        );
        assert_eq!(
            wire["messages"][1]["content"], "",
            "an assistant tool-call message carries empty content, never null"
        );
        assert_eq!(wire["messages"][2]["tool_call_id"], "c1");
        assert_eq!(wire["tools"][0]["function"]["name"], "read_file");
        assert_eq!(
            wire["tool_choice"],
            json!({"type": "function", "function": {"name": "read_file"}})
        );
        assert_eq!(wire["max_tokens"], 64);
        assert_eq!(wire["stop"], json!(["\n```\n"]));
        assert!(
            ChatRequest::default().to_wire("m").get("stop").is_none(),
            "no stop is sent where none is asked for"
        );
    }

    #[test]
    fn malformed_arguments_go_back_short_once_encoded_and_named() {
        let runaway = format!("{{\"path\": \"{}", "x".repeat(5000));
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: Value::String(runaway.clone()),
        };
        let echoed = call.echoed();
        assert_eq!(
            echoed.arguments,
            Value::String(runaway[..ECHO_LIMIT].into())
        );
        let wire = wire_message(&ChatMessage::assistant(None, vec![echoed]));
        assert_eq!(
            wire["tool_calls"][0]["function"]["arguments"],
            json!(&runaway[..ECHO_LIMIT]),
            "the model's own text, not a JSON string of it"
        );
        let object = ToolCall {
            arguments: json!({"path": "a"}),
            ..call.clone()
        };
        assert_eq!(object.echoed(), object);
        assert_eq!(
            describe_arguments(&json!("{\"a\": 1")),
            "text that does not parse as JSON: \"{\\\"a\\\": 1\""
        );
        assert!(describe_arguments(&call.arguments).starts_with(
            "text that does not parse as JSON, 5010 characters, starting \"{\\\"path\\\": \\\"xxx"
        ));
        assert_eq!(describe_arguments(&json!([1])), "a JSON array: \"[1]\"");
    }

    #[test]
    fn a_context_refusal_is_recognised_in_each_server_s_words() {
        let status = |body: &str| ModelError::Status {
            url: "u".into(),
            status: 400,
            body: body.into(),
        };
        assert_eq!(
            status(r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 4500 tokens (3988 in the messages, 512 in the completion).","code":"context_length_exceeded"}}"#)
                .context_exceeded(),
            Some(ContextRefusal {
                window: Some(4096),
                prompt: Some(3988)
            })
        );
        assert_eq!(
            status(r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx": 2048}}"#)
                .context_exceeded(),
            Some(ContextRefusal {
                window: Some(2048),
                prompt: Some(5000)
            })
        );
        assert_eq!(
            status(r#"{"error":"context_length_exceeded"}"#).context_exceeded(),
            Some(ContextRefusal {
                window: None,
                prompt: None
            })
        );
        assert_eq!(status("model not found").context_exceeded(), None);
        assert_eq!(
            ModelError::Settings("maximum context length".into()).context_exceeded(),
            None
        );
    }

    #[test]
    fn settings_select_the_scripted_backend_by_prefix() {
        let mut s = ModelSettings {
            base_url: "scripted:/tmp/d.json".into(),
            model: None,
            api_key_env: None,
            timeout: ModelSettings::DEFAULT_TIMEOUT,
        };
        assert_eq!(s.scripted_path(), Some(PathBuf::from("/tmp/d.json")));
        s.base_url = "http://127.0.0.1:11434/v1".into();
        assert_eq!(s.scripted_path(), None);
    }
}
