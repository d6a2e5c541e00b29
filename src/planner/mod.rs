//! The native agent: missionboard's own ACP agent on an OpenAI-compatible model —
//! Ollama, llama.cpp's server, vLLM, OpenAI, or the scripted backend
//! (`model-base-url scripted:<file.json>`).
//!
//! Its names, each where a user meets it: `missionboard agent` is the command that
//! runs it on stdio; `agent-planner` is the agents.toml entry that declares that
//! command (the name a mission is fired at); `missionboard-agent` ([`AGENT_NAME`])
//! is how it introduces itself in ACP `initialize` and its diagnostics. In the code
//! it is this module, `planner`, named for the entry it runs as.
//!
//! It speaks ACP v1 on stdio like any third-party agent, and reaches its mission
//! only through the `mission` MCP server it is handed in `session/new` (it lists
//! that server's tools and offers them to the model). Each prompt runs a
//! tool-calling loop: the model's text streams out as `agent_message_chunk`, each
//! of its own tools ([`local_tools`]) is a `tool_call` card and a
//! `session/request_permission` the host's envelope decides, usage goes out as
//! `usage_update` after every model call and as the turn's `PromptResponse.usage`
//! (estimated at four bytes a token when the server reports none), and
//! `session/cancel` drops whatever is in flight — the model call, a permission
//! wait, a running command — and ends the turn `cancelled`. The dialog is kept
//! inside `--context-tokens` ([`context`]), or inside the server's own window where
//! the server states it (llama.cpp's `/props`, or a `context_length_exceeded`
//! refusal, after which the call is shrunk and retried once; a second refusal fails
//! the turn naming `--context-tokens`).
//!
//! A model call that fails (endpoint down, bad settings, a scripted dialog run
//! out) fails the turn with the model client's error text, so the host derails
//! the mission with it in the blocker. A call the envelope refuses is reported to
//! the operator (a blocker report naming the call) and the model is told not to
//! retry it. Model settings: see [`settings`].

mod context;
mod local_tools;
mod prompt;
mod server;
pub mod settings;
mod turn;

use std::path::PathBuf;

pub use settings::ModelFlags;
pub use turn::{SessionState, Turn, model_error};

/// The name the native agent gives in ACP `initialize` and in its diagnostics.
pub const AGENT_NAME: &str = "missionboard-agent";

/// Tools a host embedding the model loop offers beside the local ones (an editor
/// session's `mission_start` and `mission_answer`).
pub trait HostTools: Send + Sync {
    /// The tools, as the model is offered them.
    fn specs(&self) -> Vec<crate::model::ToolSpec>;

    /// Run one call: its text for the model, and whether it succeeded.
    fn call<'a>(
        &'a self,
        name: &'a str,
        arguments: serde_json::Value,
    ) -> futures::future::BoxFuture<'a, (String, bool)>;
}

/// What the native agent (`missionboard agent`) was started with.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    pub model: ModelFlags,
    /// The model's context window, in tokens.
    pub context_tokens: u64,
    /// Model calls one prompt turn may make before it ends `max_turn_requests`.
    pub max_steps: usize,
    /// The reply cap (`max_tokens`) of every model call, within a quarter of the window.
    pub max_tokens: u32,
    /// The home database, read (never written) for `model-*` config fallbacks.
    pub db: PathBuf,
}

/// The context window assumed when none is given: what Ollama and llama.cpp
/// serve most models with comfortably.
pub const DEFAULT_CONTEXT_TOKENS: u64 = 32_768;
/// Model calls per turn by default: room for a real task, a stop for a loop.
pub const DEFAULT_MAX_STEPS: usize = 50;
/// The longest reply asked of the model by default (a quarter of small windows).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Serve ACP on stdin/stdout until the client hangs up.
pub async fn run_agent(options: AgentOptions) -> Result<(), String> {
    server::serve(options).await
}
