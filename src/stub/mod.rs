//! `missionboard stub-agent`: a deterministic, script-driven ACP agent.
//!
//! The stub speaks real ACP v1 over stdio and reaches the mission only
//! through the `mission` MCP server it is handed in `session/new` (it starts
//! that server's command, `missionboard mcp-bridge <socket>`, exactly as a
//! third-party agent would). With no model behind it, it can plan, report,
//! ask, finish, stay mute, fail a turn, request permissions, stream tool-call
//! cards, report token usage, run slow, hang, crash, or write garbage.
//!
//! # Which script runs
//!
//! In precedence order:
//!
//! 1. `--script <file>` or env `STUB_SCRIPT=<file>`: a JSON script (below).
//!    A file that does not parse stops the stub before it answers anything.
//! 2. In the first prompt's text: a fenced block tagged `stub` holding a
//!    JSON script, or a line `@stub scenario=<name> delay_ms=<n>` (both
//!    settings optional).
//! 3. A built-in scenario named in the intent (the prompt's last text
//!    block; the preamble is not searched, since it talks about "stuck" and
//!    "landed" missions in passing).
//! 4. Otherwise `default`, which is `land`.
//!
//! The first prompt decides the script; later prompts (the nudge) consume
//! the next scripted turn and never re-parse.
//!
//! # Script format
//!
//! ```json
//! {
//!   "name": "ask-then-land",
//!   "delay_ms": 150,
//!   "turns": [
//!     { "steps": [
//!         {"plan": [{"content": "read config", "status": "in_progress", "priority": "high"},
//!                   {"content": "write summary", "status": "pending", "priority": "medium"}]},
//!         {"say": "Reading the config loader."},
//!         {"tool_call": {"title": "read src/config.rs", "kind": "read", "status": "completed"}},
//!         {"usage": {"used": 1200, "size": 32768, "input": 900, "output": 300}},
//!         {"permission": {"title": "edit src/config.rs", "kind": "edit", "times": 2,
//!                         "on_deny": "report_blocker"}},
//!         {"ask": {"summary": "Rename the env var too?",
//!                  "then": {"report": {"kind": "finding", "summary": "answer was: {{answer}}"}}}},
//!         {"report": {"kind": "result", "summary": "config loader audited", "refs": ["src/config.rs"]}},
//!         {"finish": {"status": "landed"}}
//!       ],
//!       "stop": "end_turn" }
//!   ]
//! }
//! ```
//!
//! - `name` (optional) names the script in diagnostics and errors.
//! - `delay_ms` (optional) is slept between steps. Without it the delay is
//!   600 ms under `--demo` (watchable on the board) and 0 otherwise; an
//!   `@stub … delay_ms=` setting overrides a built-in's own.
//! - `models` (optional, a list of model ids) are advertised in `session/new`
//!   as a `model` config option (current: the first), and the client may pick
//!   another with `session/set_config_option`; `{{model}}` names the one in
//!   use. Only a script given at start (`--script` / `STUB_SCRIPT`) can set
//!   them: models are offered before the first prompt is read.
//! - `load_session` (optional, default false) advertises `loadSession` and
//!   honours `session/load`: each session's place in the script (turn, parked
//!   steps, answer) is saved after every turn to `$STUB_STATE_DIR/<session>.json`
//!   (default directory: `missionboard-stub` under the system temp directory), and
//!   a restarted stub that loads the session carries on from there. Only a script
//!   given at start can set it.
//! - `resume_session` (optional, default false) advertises
//!   `sessionCapabilities.resume` and honours `session/resume` from the same saved
//!   place (nothing is replayed on either). Only a script given at start can set it.
//! - `close_session` (optional, default false) advertises `sessionCapabilities.close`
//!   and honours `session/close`.
//! - `on_revise` (optional, a turn object): run whenever a prompt carries an
//!   operator's revise feedback (`mission revise`), instead of the next scripted
//!   turn; `{{feedback}}` names the feedback.
//! - `turns` are consumed one per `session/prompt`, in order (turn 2 is the
//!   nudge). A bare `{"steps": [...], "stop": …}` is a one-turn script.
//! - `stop` (per turn, default `end_turn`): `end_turn`, `refusal`,
//!   `max_tokens` or `max_turn_requests`.
//! - Each step is an object naming exactly one step kind; steps without a
//!   payload may be written as a bare string (`"hang"`).
//!
//! # Steps
//!
//! | Step | Payload | Effect |
//! |---|---|---|
//! | `say` / `think` | `"text"` or `{text, chunks?}` (`say` also `message?`) | `agent_message_chunk` / `agent_thought_chunk`, split into `chunks` pieces; a `say`'s `message` is the `messageId` every chunk carries |
//! | `mute` | `"text"` or none | one message chunk of prose and nothing else (a turn of only this is "silent") |
//! | `plan` | `[entries]` or `{entries, via?, explanation?}`; `via` may also sit beside `plan` | `mcp` (default): the `mission_plan` tool; `acp`: a native `plan` update; `both` |
//! | `report` | `{kind?, summary, detail?, refs?, handover?}` | the `mission_report` tool, with these arguments |
//! | `ask` | `"summary"` or `{summary, detail?, retries?, expect?, then?}` | the `mission_ask_attention` tool; the result binds `{{answer}}`. A result saying "no answer yet (ask_id=X)" is re-asked with `ask_id` up to `retries` (default 3) times. `then` (a step or a list) runs after the answer |
//! | `finish` | `"status"` or `{status, reason?}` | the `mission_finish` tool; its result (or refusal) binds `{{finish}}` |
//! | `permission` | `{title, kind?, path?, command?, times?, on_deny?, options?, report?}` | `times` (default 1) `session/request_permission` calls, each with a fresh tool-call id (and `path` / `command`, when given, as its `rawInput.path` / `rawInput.command`, which envelope conditions test). Options default to allow_once, allow_always, reject_once, reject_always; `options` overrides them (kinds, or `{id?, name?, kind}`). Each outcome (`allowed`, `denied`, `cancelled`) binds `{{perm}}` and is appended to `{{perms}}`; `report: true` files a progress report per outcome. On a denial `on_deny` decides: `continue` (default), `report_blocker` (blocker report, turn ends), `finish_stuck` (finish stuck, turn ends), `error` (the turn fails) |
//! | `tool_call` | `"title"` or `{title, kind?, status?, id?}` | a `tool_call` card (in progress) and a `tool_call_update` to `status` (default `completed`); nothing real runs |
//! | `agent_permission` | `{update?, request, on_reject?, report?}` | an agent's own frames replayed: `update` (a `tool_call` session update, sent first) and `request` (the params of its `session/request_permission`, session id filled in). The outcome (`allowed`, `denied`, `cancelled`) binds `{{perm}}` like `permission`; on a denial `on_reject` is `continue` (default), `end_turn` (as qwen and opencode do) or `cancel` (the turn ends `cancelled`, as codex's reject does) |
//! | `elicit` | `{message, schema}` or `{message, url}` | `elicitation/create` in form mode (`schema`: the requested schema) or URL mode; the outcome binds `{{answer}}`: `accept key=value; …`, `accept`, `decline` or `cancel` |
//! | `usage` | `{used, size, input?, output?, cost?: {amount, currency?}}` | `usage_update{used, size, cost?}`; `input`/`output` are summed into the turn's `PromptResponse.usage` |
//! | `sleep` | `ms` or `{ms}` | waits; `session/cancel` ends the turn `cancelled` |
//! | `hang` | none | waits for `session/cancel`, then the turn ends `cancelled` |
//! | `error` | `"message"` or `{code?, message}` | the turn answers with that JSON-RPC error (code default -32603) |
//! | `crash` | `code` or `{code}` (default 1) | the process exits mid-turn |
//! | `stdout_garbage` | `"line"` or none | writes a non-JSON line to stdout (it may overtake updates still queued in the SDK) |
//! | `flood` | `{bytes, line_bytes?}` | writes `bytes` of non-JSON output to stdout, in lines of `line_bytes` (default: one line of all of it) |
//! | `write` | `{path, text?}` | writes `text` to `path` and reports the outcome (`ok`, or the errno) as a finding: a confinement probe |
//! | `run` | `{argv}` | runs `argv` in the cwd and reports its exit code, with its output as the detail: a confinement probe |
//! | `mission_server` | `{stdin, stdout}` | starts another copy of the mission MCP server entry it was handed (its token included), stdin and stdout opened read-write on these files (fifos a test drives), and leaves it running |
//! | `deaf` | none or `{requests}` | stops reading stdin for good, then sends `requests` JSON-RPC requests the client must answer (an unknown method); follow it with `hang` |
//!
//! Every string in a step may use `{{answer}}` (the latest ask's answer),
//! `{{turn}}`, `{{perm}}`, `{{perms}}`, `{{prompt}}` (the turn's prompt on one
//! line), `{{finish}}` (what the latest `mission_finish` call returned, its
//! refusal included: a failed check's exit code and output), `{{model}}` (the session model, empty
//! when none is advertised), `{{feedback}}` (the latest revise's feedback) and `{{env:NAME}}` (an environment
//! variable of the stub, empty when unset). Unknown placeholders stay as
//! written.
//!
//! Mission steps (plan via mcp, report, ask, finish, and permission with
//! `report` or a reporting `on_deny`) fail the turn with a clear JSON-RPC
//! error when `session/new` provided no `mission` server. A tool's own
//! error result is logged and the turn carries on, as a real agent would.
//!
//! # Built-in scenarios
//!
//! `land` (plan, say, two progress reports, a result, finish landed) ·
//! `ask-then-land` (plan, ask, a finding quoting the answer, land) · `mute`
//! (prose only, two turns) · `nudged` (mute, then land on turn 2) · `derail`
//! (turn 1 errors) · `stuck` (blocker, finish stuck with a reason) · `perm-N`
//! (N permission requests, each outcome reported, then land) · `perm-flood`
//! (100 permission requests) · `tokens` (usage climbing to 400k) · `slow`
//! (`land` with 1.5 s between steps) · `hang` (blocks until cancel) ·
//! `crash` (exits with code 3 mid-turn) · `tools-N` (N tool-call cards, then
//! land) · `check-fix` (finish landed before the work passes a `test -f fixed`
//! check, quote the refusal, write `fixed`, finish again) · `revise-land` (`land`;
//! sent back, write the feedback to `revised.txt`, report it and land again).
//!
//! # Contract
//!
//! - More prompts than turns: the JSON-RPC error `stub script '<name>'
//!   exhausted: prompt asked for turn N, script holds M`. Never a silent ack.
//! - stdout carries only JSON-RPC (and `stdout_garbage` lines); diagnostics
//!   go to stderr as `stub: turn=1 step=3 report ok`.
//! - Env `STUB_TRANSCRIPT=<file>`: one line appended per prompt received,
//!   `turn=N <first 80 characters of the prompt>`.
//! - Env `STUB_PROMPTS=<file>`: one JSON line appended per prompt received,
//!   `{"turn": N, "blocks": [<each text block, whole>]}`: what crossed to the unit,
//!   for a test to measure rather than restate.
//! - Env `STUB_SESSIONS=<file>`: one line appended per session lifecycle request,
//!   `<method> <session id>` (`session/new`, `session/load`, `session/resume`,
//!   `session/close`), refused ones included.
//! - Env `STUB_INITIALIZE_DELAY_MS=<n>`: wait `n` ms before answering
//!   `initialize` (a unit slow to start).
//! - Env `STUB_AUTH_REQUIRED=terminal <args…>` or `=agent`: list one auth method of
//!   that kind in `initialize` (a terminal one runs the stub's command with `args`)
//!   and answer every `session/new` with auth-required (-32000): an agent that
//!   needs a login first.
//! - Env `STUB_IGNORE_SESSION_CANCEL=1`: `session/cancel` is ignored, so a turn
//!   (a `hang` above all) ends only when its prompt is cancelled as a request: on
//!   `$/cancel_request` the turn ends `cancelled` and `STUB_SESSIONS` gets the line
//!   `$/cancel_request session/prompt <session id>` (logged with or without this).
//! - `session/new` advertises `sessionCapabilities.additionalDirectories`; the
//!   `STUB_SESSIONS` line of a session given extra roots ends ` dirs=<a>:<b>`.

mod agent;
mod saved;
pub mod script;

use std::path::PathBuf;
use std::sync::Arc;

pub use script::{BUILTIN_NAMES, Script, parse_script};

/// What `missionboard stub-agent` was started with.
#[derive(Debug, Clone, Default)]
pub struct StubOptions {
    /// `--script`; falls back to env `STUB_SCRIPT`.
    pub script: Option<PathBuf>,
    /// `--demo`: 600 ms between steps unless the script says otherwise.
    pub demo: bool,
}

/// The delay `--demo` puts between steps.
pub const DEMO_DELAY_MS: u64 = 600;

/// Load a script file (JSON).
pub fn load_script(path: &std::path::Path) -> Result<Script, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read script {}: {e}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("script {} is not valid JSON: {e}", path.display()))?;
    let fallback = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("script");
    parse_script(&value, fallback).map_err(|e| format!("script {}: {e}", path.display()))
}

/// Run the stub agent on stdin/stdout until the client closes stdin.
pub async fn run_stub_agent(options: StubOptions) -> Result<(), String> {
    let script_path = options.script.or_else(|| {
        std::env::var_os("STUB_SCRIPT")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let preloaded = match script_path {
        Some(path) => {
            let script = load_script(&path)?;
            eprintln!(
                "stub: script '{}' from {} ({} turns)",
                script.name,
                path.display(),
                script.turns.len()
            );
            Some(Arc::new(script))
        }
        None => None,
    };
    let config = agent::AgentConfig {
        preloaded,
        default_delay_ms: options.demo.then_some(DEMO_DELAY_MS),
        transcript: std::env::var_os("STUB_TRANSCRIPT")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        prompts: std::env::var_os("STUB_PROMPTS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        sessions_log: std::env::var_os("STUB_SESSIONS")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
        auth_required: std::env::var("STUB_AUTH_REQUIRED")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .map(|v| v.split_whitespace().map(str::to_string).collect()),
        ignore_session_cancel: std::env::var_os("STUB_IGNORE_SESSION_CANCEL")
            .is_some_and(|v| !v.is_empty()),
        initialize_delay: match std::env::var("STUB_INITIALIZE_DELAY_MS") {
            Ok(ms) => Some(std::time::Duration::from_millis(
                ms.trim().parse().map_err(|_| {
                    format!("STUB_INITIALIZE_DELAY_MS must be a number of milliseconds, got {ms:?}")
                })?,
            )),
            Err(_) => None,
        },
    };
    agent::serve(config).await
}
