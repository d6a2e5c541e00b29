//! One prompt turn of the native agent: the tool-calling loop over the model.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, PermissionOption, PermissionOptionKind, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    StopReason, TextContent, ToolCall as AcpToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, Usage, UsageUpdate,
};
use agent_client_protocol::{Client, Error};
use serde_json::{Map, Value, json};

use super::context::{self, truncate_output};
use super::local_tools::{self, LocalCall, LocalTool};
use super::{AGENT_NAME, HostTools};
use crate::acp_client::McpStdioServer;
use crate::acp_client::agent_side::CancelSignal;
use crate::mission_mcp::PARKED_PREFIX;
use crate::mission_mcp::client::MissionClient;
use crate::mission_mcp::repeats::{self, Repeat, Repeats};
use crate::model::text_calls;
use crate::model::{ChatMessage, ChatRequest, ModelClient, Role, ToolChoice, ToolSpec};

/// How much of a tool's output its `tool_call_update` card carries.
const CARD_OUTPUT: usize = 2000;
const ALLOW_ONCE: &str = "allow-once";
const REJECT_ONCE: &str = "reject-once";

/// The scale assumed before the server has counted a prompt: real tokenizers count
/// code, JSON and tool schemas at nearer three bytes a token than the estimate's four.
const UNCOUNTED_SCALE: f64 = 4.0 / 3.0;
/// The smallest reply cap asked for, however full the window.
const MIN_REPLY_TOKENS: u64 = 64;

/// What a session keeps between turns.
pub struct SessionState {
    mission_server: Option<McpStdioServer>,
    mission: Option<MissionClient>,
    /// Tool names served by the mission server.
    mission_tools: HashSet<String>,
    tools: Vec<ToolSpec>,
    /// The dialog so far; empty until the first prompt.
    messages: Vec<ChatMessage>,
    /// Refusals already reported to the operator (by call title).
    refusals: HashSet<String>,
    calls: u64,
    /// The tools of the host embedding this loop, and the system message it wants.
    host: Option<(Arc<dyn HostTools>, String)>,
    /// What the host told the conversation between turns, for the next one to read.
    notes: Vec<String>,
    /// The context window learned from the server (its `/props`, or the window its
    /// refusal named), when smaller than `--context-tokens`.
    window: Option<u64>,
    /// The server's prompt count over the estimate, from the last count it reported
    /// (a reply's usage, or a refusal's numbers): the estimate is scaled by it so the
    /// dialog fits the server's own tokenizer.
    scale: f64,
    /// Whether the server was asked for its context window yet.
    probed: bool,
    /// The calls the agent ran, counted for a loop (the rule every agent is held to).
    repeats: Repeats,
    /// The model's replies so far this session.
    replies: u64,
    /// Whether a plan was filed, and the reply whose result or landing, claimed after
    /// it before any work, was sent back: one reply's claims are, and no later ones
    /// (the verdict stays the model's).
    planned: bool,
    questioned_claims_of: Option<u64>,
    /// The mission's intent (the first prompt's last paragraph), restated to the model
    /// after the steps where small models lose it.
    intent: Option<String>,
    /// Whether a result report was filed (and not downgraded): a verdict is all that
    /// is left to ask for.
    result_filed: bool,
}

impl SessionState {
    pub fn new(mission_server: Option<McpStdioServer>) -> SessionState {
        SessionState {
            mission_server,
            mission: None,
            mission_tools: HashSet::new(),
            tools: Vec::new(),
            messages: Vec::new(),
            refusals: HashSet::new(),
            calls: 0,
            host: None,
            notes: Vec::new(),
            window: None,
            scale: UNCOUNTED_SCALE,
            probed: false,
            repeats: Repeats::default(),
            replies: 0,
            planned: false,
            questioned_claims_of: None,
            intent: None,
            result_filed: false,
        }
    }

    /// Something the host showed the user outside a turn (a mission's report): the
    /// model reads it, as one message, before the next prompt.
    pub fn note(&mut self, text: String) {
        self.notes.push(text);
    }

    /// A conversation a host other than the native agent's own server runs on this loop: no
    /// mission of its own, the host's tools beside the local ones, its system message.
    pub fn hosted(tools: Arc<dyn HostTools>, system: String) -> SessionState {
        SessionState {
            host: Some((tools, system)),
            ..SessionState::new(None)
        }
    }
}

/// Everything a turn borrows from its session and agent.
pub struct Turn<'a> {
    pub cx: &'a ConnectionTo<Client>,
    pub session_id: &'a str,
    pub cwd: &'a Path,
    pub model: &'a ModelClient,
    pub context_tokens: u64,
    pub max_steps: usize,
    /// The reply cap of each model call.
    pub max_tokens: u32,
}

/// Token totals over a turn's model calls.
#[derive(Default)]
struct Spent {
    input: u64,
    output: u64,
}

/// The two calls that land a mission, in order, as a small model follows them: one
/// message naming both as numbered steps (two choices in a sentence, it took neither).
const LANDING_STEPS: &str = "1. call mission_report with kind result, a one-line summary and the files in refs; 2. call mission_finish with status landed.";

/// What a turn that did work and ended in prose is told, once: the four verdicts by
/// name, with the result report the landing one needs unless one is filed. Short:
/// Qwen2.5-Coder-1.5B answered a paragraph-long ask with nothing.
pub const FINISH_ASK: &str =
    "What is your verdict? Call mission_finish with it: landed, stuck, derailed or abandoned.";
/// [`FINISH_ASK`] before a result is filed.
fn finish_ask_unreported() -> String {
    format!(
        "What is your verdict? If the intent is done: {LANDING_STEPS} If not, call mission_finish with status stuck, derailed or abandoned, and the reason."
    )
}

/// What a turn that was asked for its verdict and answered in prose again is told,
/// once more: the call itself, by name. The verdict stays the model's to give.
pub const FINISH_NOW: &str = "Prose finishes nothing: no one reads it. Call mission_finish now, with status landed, stuck, derailed or abandoned.";

/// What a model that files a result or lands after filing its plan, before it has
/// used a single tool of its own, is told instead, once: small models read a filed
/// plan as the work done.
pub const NOT_YET_WORKED: &str = "refused: not filed, for you have not used your own tools on the workspace yet (read_file, list_dir, write_file, edit_file, shell…), so the intent's work is not done. Do it now, step by step; report the result and finish only once it is done. If the intent truly needs no work in the workspace, make this call again.";

/// Where a mission unit's reply stops: where a second call written as text would
/// begin (after a ``` fence's close, or on a new line opening another call object or
/// `<tool_call>` tag). Small models that write their calls as text (Qwen2.5-Coder-1.5B's
/// ```json blocks and JSON lines) go on to write the calls they expect next, blind to
/// the first one's result, until the reply cap — one such reply took five minutes of
/// a two-core machine. Inside a call's JSON a newline is escaped, so these match only
/// between calls; the call before the stop is read as written (`text_calls` takes a
/// fence left open at the end). Prose reaches nobody in a mission, so nothing is lost
/// by stopping it there; a session without mission tools is never stopped.
const MISSION_STOPS: [&str; 3] = ["\n```\n", "\n{\"name\"", "\n<tool_call>"];
/// How the host answers a result report it filed as one, and one whose claimed
/// artifacts do not exist (filed as progress): its words, which are what the agent
/// reads of the call.
const RESULT_FILED: &str = "recorded result report";
const DOWNGRADED: &str = "(downgraded from result:";
/// Told with the result of the one call that ran, when a reply wrote out several.
const ONE_WRITTEN_CALL: &str = "Only this first of the calls your reply wrote out ran: the others were written before you saw its result. Make one call at a time.";
/// What a plan filed before any work is followed by: its steps are done with the
/// agent's own tools.
const PLAN_FILED_NOW_WORK: &str = "Your plan is filed; nothing is done yet. Now do its first step with your own tools (read_file, list_dir, write_file, edit_file, shell).";

/// Whether `call` says the work is done: a result report or a landing.
fn claims_done(name: &str, args: &Map<String, Value>) -> bool {
    let field = |key: &str| args.get(key).and_then(Value::as_str);
    (name == crate::mission_mcp::MISSION_REPORT && field("kind") == Some("result"))
        || (name == crate::mission_mcp::MISSION_FINISH && field("status") == Some("landed"))
}

/// The agent's own tools that change the workspace.
const CHANGES: [LocalTool; 3] = [LocalTool::WriteFile, LocalTool::EditFile, LocalTool::Shell];

/// Whether `tool` is one of [`CHANGES`].
fn changes(tool: &str) -> bool {
    CHANGES.iter().any(|t| t.name() == tool)
}

/// Whether a call's result says it failed or was refused.
fn failed(text: &str) -> bool {
    text.starts_with("error:") || text.starts_with("refused:")
}

/// Whether a call that returned `text` did work a verdict should follow: a change to
/// the workspace, or a report to the operator.
fn is_work(tool: &str, text: &str) -> bool {
    !failed(text) && (changes(tool) || tool == crate::mission_mcp::MISSION_REPORT)
}

/// The intent in a mission's first prompt: its last paragraph (the host's preamble
/// comes before it), cut to a line a reminder can carry.
fn intent_of(prompt: &str) -> Option<String> {
    let last = prompt.trim().rsplit("\n\n").next()?.trim();
    (!last.is_empty()).then(|| crate::text::excerpt(last, 200))
}

/// What the model is told after `call` returned `text`, as the step's last message.
/// After a change that went through, or a report short of the result, the landing
/// steps, if the intent is done: left alone, Qwen2.5-Coder-1.5B runs a command that
/// succeeded again, or files a result whose refs echo the host's words. The intent is
/// not restated there: restated, it primed the model to do it again (an `mv` that had
/// worked). After a failed change, or a result naming files that are not there, the
/// intent is restated: the same model otherwise wrote a file's old content back, or
/// filed a result for work it had not done. One next step (two choices in one
/// message, it took neither); after a result, or a refusal, nothing (it goes on by
/// itself there). What to call, and the verdict, stay the model's.
fn next_step(call: &crate::model::ToolCall, text: &str, intent: &str) -> Option<String> {
    let not_done = || format!("Not done yet: {intent}. Do it with your tools.");
    if call.name == crate::mission_mcp::MISSION_REPORT {
        return match text {
            t if t.contains(DOWNGRADED) => Some(not_done()),
            t if failed(t) || t.starts_with(RESULT_FILED) => None,
            _ => Some(format!("Filed. If the intent is done: {LANDING_STEPS}")),
        };
    }
    if !changes(&call.name) || text.starts_with("refused:") {
        return None;
    }
    let shell_failed = call.name == LocalTool::Shell.name() && !text.starts_with("exit code 0");
    Some(match failed(text) || shell_failed {
        true => not_done(),
        false => format!("That worked. If the intent is done: {LANDING_STEPS}"),
    })
}

/// What a reply's text holds besides prose.
enum WrittenCalls {
    None,
    /// Calls written as text that check out: run them as if they were structured.
    Runnable(Vec<crate::model::ToolCall>),
    /// Calls written as text that cannot run: the model is told why and what to do.
    Broken(String),
}

/// The tool calls `text` writes out instead of making them (see [`text_calls`]), each
/// recorded on the agent's stderr with the shape it came in. `reply` numbers the
/// model's reply, so each recovered call's id is its own.
fn written_calls(text: &str, tools: &[ToolSpec], reply: u64) -> WrittenCalls {
    let found = text_calls::recover(text, tools);
    if found.is_empty() {
        return WrittenCalls::None;
    }
    let mut runnable = Vec::new();
    let mut broken = Vec::new();
    let mut unknown_tool = false;
    for (n, call) in found.into_iter().enumerate() {
        unknown_tool |= !call.name.is_empty() && !tools.iter().any(|t| t.name == call.name);
        match call.arguments {
            Ok(arguments) => {
                eprintln!(
                    "{AGENT_NAME}: a tool call written as text ({}) was recovered: {}",
                    call.shape.name(),
                    call.name
                );
                runnable.push(crate::model::ToolCall {
                    id: format!("text-call-{reply}-{n}"),
                    name: call.name,
                    arguments,
                });
            }
            Err(why) => {
                eprintln!(
                    "{AGENT_NAME}: a tool call written as text ({}) cannot run: {why}",
                    call.shape.name()
                );
                let name = if call.name.is_empty() {
                    "a tool".to_string()
                } else {
                    format!("{:?}", call.name)
                };
                broken.push(format!("{name} ({}): {why}", call.shape.name()));
            }
        }
    }
    if broken.is_empty() {
        WrittenCalls::Runnable(runnable)
    } else {
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        // Small models read a name in the intent ("add a function add(a,b)") as a
        // tool to call; the intent is work to do with the tools there are.
        let unknown = if unknown_tool {
            " A name in the intent is not a tool: do the intent's work with the tools there are, starting with mission_plan if you have not filed your plan. What no tool does itself (renaming, moving or deleting a file, running a program) is a command line for shell, e.g. shell with command \"mv old.txt new.txt\"."
        } else {
            ""
        };
        // A call to a tool there is, with arguments amiss, is told only what is amiss:
        // the longer lesson lost Qwen2.5-Coder-1.5B, which then replied nothing.
        let how = match unknown_tool {
            true => format!(
                "Make the call itself, through the tool-calling interface, with a JSON object of its arguments. The tools are: {}.{unknown}",
                names.join(", ")
            ),
            false => "Make the call again, with a JSON object of its arguments.".to_string(),
        };
        WrittenCalls::Broken(format!(
            "Your reply wrote a tool call as text instead of making it, and nothing was run: {}. {how}",
            broken.join("; "),
        ))
    }
}

/// What a tool call did to the turn.
#[derive(PartialEq)]
enum Effect {
    Continue,
    /// `mission_finish` succeeded: nothing is left to do.
    Finished,
    /// The question was parked: the answer comes as a later prompt.
    Parked,
    /// The same call was made past the bound: the turn ends (and the mission, if any,
    /// rests stuck).
    Repeating,
}

/// How the envelope answered a permission request.
enum Permission {
    Allowed,
    Refused,
}

impl Turn<'_> {
    /// Run one prompt: the loop until the model stops calling tools, the mission
    /// finishes, a question parks, the step bound is reached, or the turn is
    /// cancelled. A model failure is the turn's error.
    pub async fn run(
        &self,
        state: &mut SessionState,
        prompt: String,
        cancel: CancelSignal,
    ) -> Result<PromptResponse, Error> {
        let mut spent = Spent::default();
        let outcome = tokio::select! {
            outcome = self.steps(state, prompt, &mut spent) => outcome,
            _ = cancel.clone().wait() => Ok(StopReason::Cancelled),
        };
        // A cancel that raced the last step still wins: ACP wants `cancelled`.
        let stop = match outcome? {
            _ if cancel.is_set() => StopReason::Cancelled,
            stop => stop,
        };
        if stop == StopReason::Cancelled {
            answer_dangling_calls(&mut state.messages);
        }
        Ok(PromptResponse::new(stop).usage(Usage::new(
            spent.input + spent.output,
            spent.input,
            spent.output,
        )))
    }

    async fn steps(
        &self,
        state: &mut SessionState,
        prompt: String,
        spent: &mut Spent,
    ) -> Result<StopReason, Error> {
        if state.messages.is_empty() {
            self.open(state).await?;
            if state.mission.is_some() {
                state.intent = intent_of(&prompt);
            }
        }
        if !state.notes.is_empty() {
            let notes = std::mem::take(&mut state.notes).join("\n\n");
            state.messages.push(ChatMessage::user(notes));
        }
        state.messages.push(ChatMessage::user(prompt));
        if !state.probed {
            state.probed = true;
            if let Some(served) = self.model.served_context().await
                && served < self.context_tokens
            {
                eprintln!(
                    "{}: the model server runs a {served}-token context window; the dialog is kept inside it (--context-tokens {})",
                    AGENT_NAME, self.context_tokens
                );
                state.window = Some(served);
            }
        }
        // One shrink-and-retry per model call when the server refuses the request as
        // too long for its window.
        let mut shrunk = false;
        // Whether this turn changed something or filed a report, and whether the model
        // was already asked for its verdict.
        let mut worked = false;
        let mut finish_asks = 0;
        for _ in 0..self.max_steps {
            let window = state.window.unwrap_or(self.context_tokens);
            let cap = u64::from(self.max_tokens).min(window / 4);
            let budget = window.saturating_sub(cap);
            context::fit(
                &mut state.messages,
                &state.tools,
                (budget as f64 / state.scale) as u64,
            );
            // What fitting could not shrink (the system message, the mission, the
            // newest exchange) leaves the reply what remains, less a small margin:
            // servers count the reply cap against the window too.
            let prompt = (context::request_tokens(&state.messages, &state.tools) as f64
                * state.scale)
                .ceil() as u64;
            let reply_tokens = cap
                .min(window.saturating_sub(prompt + window / 64))
                .max(MIN_REPLY_TOKENS);
            let request = ChatRequest {
                messages: state.messages.clone(),
                tools: state.tools.clone(),
                tool_choice: ToolChoice::Auto,
                max_tokens: reply_tokens as u32,
                stop: match state.mission {
                    Some(_) => MISSION_STOPS.map(String::from).to_vec(),
                    None => Vec::new(),
                },
            };
            let estimate = context::request_tokens(&request.messages, &request.tools);
            let reply = match self.model.complete(&request).await {
                Ok(reply) => reply,
                Err(e) => match e.context_exceeded() {
                    Some(refusal) if !shrunk => {
                        shrunk = true;
                        if let Some(counted) = refusal.prompt
                            && estimate > 0
                        {
                            state.scale = (counted as f64 / estimate as f64).clamp(0.5, 8.0);
                        }
                        let smaller = refusal
                            .window
                            .filter(|n| *n < window)
                            .unwrap_or(window * 3 / 4);
                        eprintln!(
                            "{}: the model server refused a {window}-token dialog as too long; shrinking to {smaller} tokens and retrying once",
                            AGENT_NAME
                        );
                        state.window = Some(smaller);
                        continue;
                    }
                    Some(_) => return Err(context_error(&e, window)),
                    None => return Err(model_error(e)),
                },
            };
            shrunk = false;
            state.replies += 1;
            if let Some(u) = reply.usage
                && u.prompt_tokens > 0
                && estimate > 0
            {
                state.scale = (u.prompt_tokens as f64 / estimate as f64).clamp(0.5, 8.0);
            }
            let (input, output) = match reply.usage {
                Some(u) if u.total() > 0 => (u.prompt_tokens, u.completion_tokens),
                _ => {
                    let calls: String = reply
                        .tool_calls
                        .iter()
                        .map(|c| format!("{}{}", c.name, c.arguments))
                        .collect();
                    let text = reply.content.as_deref().unwrap_or("");
                    (estimate, context::tokens(text) + context::tokens(&calls))
                }
            };
            spent.input += input;
            spent.output += output;
            self.notify(SessionUpdate::UsageUpdate(UsageUpdate::new(
                input + output,
                window,
            )))?;
            let content = reply.content.filter(|c| !c.trim().is_empty());
            if let Some(text) = &content {
                self.notify(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                    ContentBlock::Text(TextContent::new(text.clone())),
                )))?;
            }
            let mut tool_calls = reply.tool_calls;
            let mut written_beyond_first = false;
            let mut recovered = false;
            if tool_calls.is_empty()
                && let Some(text) = &content
            {
                match written_calls(text, &state.tools, state.replies) {
                    WrittenCalls::None => {}
                    WrittenCalls::Runnable(mut calls) => {
                        // Only the first: the rest were guesses at its result.
                        written_beyond_first = calls.len() > 1;
                        calls.truncate(1);
                        tool_calls = calls;
                        recovered = true;
                    }
                    WrittenCalls::Broken(correction) => {
                        // A model that writes the same broken call again and again is
                        // repeating itself like one that makes the same call: the same
                        // counter and the same bound hold it.
                        let key = format!("\0text\0{text}");
                        let correction = match state.repeats.count(key) {
                            Repeat::Fresh => correction,
                            Repeat::Refused(n) => format!(
                                "{correction} This is the same reply as your last {}: write something different.",
                                n - 1
                            ),
                            Repeat::Bound(n) => {
                                let reason = repeats::reason(
                                    "wrote the same broken tool call as text",
                                    n,
                                    text,
                                );
                                self.rest_repeating(state, &reason).await?;
                                return Ok(StopReason::EndTurn);
                            }
                        };
                        state.messages.push(ChatMessage::assistant(content, vec![]));
                        state.messages.push(ChatMessage::user(correction));
                        continue;
                    }
                }
            }
            let echoed = tool_calls.iter().map(|c| c.echoed()).collect();
            // A recovered call goes back as the structured call it was read as, not
            // the text it was written in: a model shown its own calls as text keeps
            // writing them so.
            let said = if recovered { None } else { content };
            state.messages.push(ChatMessage::assistant(said, echoed));
            if tool_calls.is_empty() {
                // Work done and a turn ending in prose: the verdict is still the
                // model's to give, so it is asked for it by name; a model that
                // answers that in prose too is asked once more for the call itself.
                if worked && finish_asks < 2 && state.mission.is_some() {
                    let ask = match (finish_asks, state.result_filed) {
                        (0, true) => FINISH_ASK.to_string(),
                        (0, false) => finish_ask_unreported(),
                        _ => FINISH_NOW.to_string(),
                    };
                    finish_asks += 1;
                    state.messages.push(ChatMessage::user(ask));
                    continue;
                }
                return Ok(match reply.finish_reason.as_deref() {
                    Some("length") => StopReason::MaxTokens,
                    _ => StopReason::EndTurn,
                });
            }
            let mut effect = Effect::Continue;
            let mut hint = None;
            for call in &tool_calls {
                let text = if effect == Effect::Finished {
                    "skipped: the mission is already finished".to_string()
                } else if effect == Effect::Repeating {
                    "skipped: the turn ended on a call made over and over".to_string()
                } else {
                    let (text, this) = self.call_counted(state, call).await?;
                    if effect == Effect::Continue {
                        effect = this;
                    }
                    worked |= is_work(&call.name, &text);
                    state.result_filed |= call.name == crate::mission_mcp::MISSION_REPORT
                        && text.starts_with(RESULT_FILED);
                    if let Some(intent) = &state.intent {
                        hint = next_step(call, &text, intent);
                    }
                    match written_beyond_first {
                        true => format!("{text}\n{ONE_WRITTEN_CALL}"),
                        false => text,
                    }
                };
                state
                    .messages
                    .push(ChatMessage::tool_result(&call.id, truncate_output(text)));
            }
            if effect != Effect::Continue {
                return Ok(StopReason::EndTurn);
            }
            if let Some(hint) = hint {
                state.messages.push(ChatMessage::user(hint));
            }
        }
        Ok(StopReason::MaxTurnRequests)
    }

    /// The first prompt of a session: connect the mission tools and write the
    /// system message.
    async fn open(&self, state: &mut SessionState) -> Result<(), Error> {
        let mut tools = Vec::new();
        if let Some(entry) = &state.mission_server {
            let client = MissionClient::connect(entry)
                .await
                .map_err(|e| fail(format!("mission tools unavailable: {e}")))?;
            for tool in client.list_tools().await.map_err(fail)? {
                state.mission_tools.insert(tool.name.clone());
                tools.push(ToolSpec {
                    name: tool.name,
                    description: tool.description,
                    parameters: Value::Object(tool.input_schema),
                });
            }
            state.mission = Some(client);
        }
        tools.extend(LocalTool::ALL.iter().map(|t| t.spec()));
        let system = match &state.host {
            Some((host, system)) => {
                tools.extend(host.specs());
                system.clone()
            }
            None => super::prompt::system_prompt(state.mission.is_some()),
        };
        state.tools = tools;
        state.messages.push(ChatMessage::system(system));
        Ok(())
    }

    fn notify(&self, update: SessionUpdate) -> Result<(), Error> {
        self.cx
            .send_notification(SessionNotification::new(self.session_id.to_owned(), update))
    }

    /// Run one call the model made, held to the rule on repeats: the same call word
    /// for word is refused from the third time in a row, and at the bound the turn
    /// ends and the mission rests stuck (`mission_finish`, stuck, on the rule's
    /// reason). Mission tools are counted (another call breaks a run) but held to
    /// the rule by the host that serves them.
    async fn call_counted(
        &self,
        state: &mut SessionState,
        call: &crate::model::ToolCall,
    ) -> Result<(String, Effect), Error> {
        let key = format!("{}\0{}", call.name, call.arguments);
        let repeat = state.repeats.count(key);
        if state.mission_tools.contains(&call.name) {
            return self.call_tool(state, call).await;
        }
        match repeat {
            Repeat::Fresh => self.call_tool(state, call).await,
            Repeat::Refused(n) => Ok((
                format!("refused: {}", repeats::correction("run", "calls", n)),
                Effect::Continue,
            )),
            Repeat::Bound(n) => {
                let name = match LocalTool::from_name(&call.name) {
                    Some(tool) => {
                        let (tools, tool) = tool.envelope_name();
                        format!("{tools}.{tool}")
                    }
                    None => call.name.clone(),
                };
                let shown = format!("{name}: {}", call.arguments);
                let reason = repeats::reason("made the same call", n, &shown);
                let then = if self.rest_repeating(state, &reason).await? {
                    "The mission is finished stuck."
                } else {
                    "The turn ends here."
                };
                Ok((
                    format!("refused: not run — {reason}. {then}"),
                    Effect::Repeating,
                ))
            }
        }
    }

    /// A unit at the repeat bound: the mission (if any) rests stuck on `reason`,
    /// through its own `mission_finish`. Whether there was a mission to rest.
    async fn rest_repeating(&self, state: &SessionState, reason: &str) -> Result<bool, Error> {
        eprintln!("{AGENT_NAME}: {reason}");
        let Some(mission) = &state.mission else {
            return Ok(false);
        };
        let mut args = Map::new();
        args.insert("status".into(), json!("stuck"));
        args.insert("reason".into(), json!(reason));
        let finished = mission
            .call(crate::mission_mcp::MISSION_FINISH, args)
            .await
            .map_err(fail)?;
        if let Err(e) = &finished {
            eprintln!("{AGENT_NAME}: resting the mission stuck failed: {e}");
        }
        Ok(true)
    }

    /// Run one call the model made; the text is its result for the model.
    async fn call_tool(
        &self,
        state: &mut SessionState,
        call: &crate::model::ToolCall,
    ) -> Result<(String, Effect), Error> {
        if state.mission_tools.contains(&call.name) {
            return self.call_mission_tool(state, call).await;
        }
        if let Some((host, _)) = &state.host
            && host.specs().iter().any(|t| t.name == call.name)
        {
            let host = host.clone();
            return Ok((
                self.call_host_tool(state, &*host, call).await?,
                Effect::Continue,
            ));
        }
        let Some(tool) = LocalTool::from_name(&call.name) else {
            let known: Vec<&str> = state.tools.iter().map(|t| t.name.as_str()).collect();
            return Ok((
                format!(
                    "error: there is no tool {:?}; the tools are {}",
                    call.name,
                    known.join(", ")
                ),
                Effect::Continue,
            ));
        };
        // Off the async thread: reading a path may look at the disk.
        let (arguments, cwd) = (call.arguments.clone(), self.cwd.to_path_buf());
        let prepared =
            tokio::task::spawn_blocking(move || local_tools::prepare(tool, &arguments, &cwd))
                .await
                .map_err(|e| fail(format!("the tool task failed: {e}")))?;
        let local = match prepared {
            Ok(local) => local,
            Err(e) => return Ok((format!("error: {e}"), Effect::Continue)),
        };
        state.calls += 1;
        let id = format!("{}-{}", tool.name(), state.calls);
        let location: Vec<ToolCallLocation> =
            local.location.iter().map(ToolCallLocation::new).collect();
        self.notify(SessionUpdate::ToolCall(
            AcpToolCall::new(id.clone(), local.title.clone())
                .kind(tool.kind())
                .status(ToolCallStatus::Pending)
                .raw_input(local.raw_input.clone())
                .locations(location.clone()),
        ))?;
        if let Permission::Refused = self.ask_permission(&id, &local, location).await? {
            self.update_card(&id, ToolCallStatus::Failed, "refused by the envelope")?;
            let reported = self.report_refusal(state, &local).await?;
            return Ok((
                format!(
                    "refused: the mission's envelope did not allow {}.{} Do not retry it in another form; carry on within what is allowed, or report what stays blocked.",
                    local.title,
                    if reported {
                        " The operator has been told."
                    } else {
                        ""
                    }
                ),
                Effect::Continue,
            ));
        }
        self.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.clone(),
            ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
        )))?;
        Ok(match local_tools::run(&local, self.cwd).await {
            Ok(output) => {
                self.update_card(&id, ToolCallStatus::Completed, &output)?;
                (output, Effect::Continue)
            }
            Err(e) => {
                self.update_card(&id, ToolCallStatus::Failed, &e)?;
                (format!("error: {e}"), Effect::Continue)
            }
        })
    }

    /// A host tool's call, shown as a card; it asks no permission (the host's own
    /// tools keep their own rules).
    async fn call_host_tool(
        &self,
        state: &mut SessionState,
        host: &dyn HostTools,
        call: &crate::model::ToolCall,
    ) -> Result<String, Error> {
        state.calls += 1;
        let id = format!("{}-{}", call.name, state.calls);
        self.notify(SessionUpdate::ToolCall(
            AcpToolCall::new(id.clone(), call.name.clone())
                .status(ToolCallStatus::InProgress)
                .raw_input(call.arguments.clone()),
        ))?;
        let (text, ok) = host.call(&call.name, call.arguments.clone()).await;
        let status = if ok {
            ToolCallStatus::Completed
        } else {
            ToolCallStatus::Failed
        };
        self.update_card(&id, status, &text)?;
        Ok(if ok { text } else { format!("error: {text}") })
    }

    fn update_card(&self, id: &str, status: ToolCallStatus, text: &str) -> Result<(), Error> {
        let shown: String = text.chars().take(CARD_OUTPUT).collect();
        self.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_owned(),
            ToolCallUpdateFields::new()
                .status(status)
                .content(vec![ToolCallContent::from(ContentBlock::Text(
                    TextContent::new(shown),
                ))]),
        )))
    }

    /// Put the call to the host. It names the tool the way envelope rules do
    /// (`_meta` toolsName/toolName) and offers only one-time options: every call
    /// is decided afresh.
    async fn ask_permission(
        &self,
        id: &str,
        local: &LocalCall,
        locations: Vec<ToolCallLocation>,
    ) -> Result<Permission, Error> {
        let (toolset, tool) = local.tool.envelope_name();
        let mut meta = Map::new();
        meta.insert("toolsName".into(), json!(toolset));
        meta.insert("toolName".into(), json!(tool));
        let fields = ToolCallUpdateFields::new()
            .title(local.title.clone())
            .kind(local.tool.kind())
            .raw_input(local.raw_input.clone())
            .locations(locations);
        let request = RequestPermissionRequest::new(
            self.session_id.to_owned(),
            ToolCallUpdate::new(id.to_owned(), fields).meta(meta),
            vec![
                PermissionOption::new(ALLOW_ONCE, "Allow once", PermissionOptionKind::AllowOnce),
                PermissionOption::new(REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
            ],
        );
        let response = self.cx.send_request(request).block_task().await?;
        Ok(match response.outcome {
            RequestPermissionOutcome::Selected(s) if &*s.option_id.0 == ALLOW_ONCE => {
                Permission::Allowed
            }
            // A rejection, or `cancelled` outside a cancelled turn (the host had
            // no answer): either way the call does not run.
            _ => Permission::Refused,
        })
    }

    /// Tell the operator about a refused call, once per call title. Returns
    /// whether a report was filed.
    async fn report_refusal(
        &self,
        state: &mut SessionState,
        local: &LocalCall,
    ) -> Result<bool, Error> {
        let Some(mission) = &state.mission else {
            return Ok(false);
        };
        if !state.refusals.insert(local.title.clone()) {
            return Ok(false);
        }
        let summary = crate::asks::one_line_summary(&format!("refused: {}", local.title));
        let mut args = Map::new();
        args.insert("kind".into(), json!("blocker"));
        args.insert("summary".into(), json!(summary));
        args.insert(
            "detail".into(),
            json!(format!(
                "The mission's envelope (or the operator answering its ask) did not allow this call:\n{}\n\nThe agent carries on without it. If the mission needs it, widen the envelope or fire again under one that allows it.",
                local.title
            )),
        );
        let result = mission
            .call(crate::mission_mcp::MISSION_REPORT, args)
            .await
            .map_err(fail)?;
        if let Err(e) = &result {
            eprintln!("{}: the refusal report failed: {e}", AGENT_NAME);
        }
        Ok(result.is_ok())
    }

    async fn call_mission_tool(
        &self,
        state: &mut SessionState,
        call: &crate::model::ToolCall,
    ) -> Result<(String, Effect), Error> {
        let Value::Object(args) = &call.arguments else {
            return Ok((
                format!(
                    "error: {} takes a JSON object of arguments, got {}",
                    call.name,
                    crate::model::describe_arguments(&call.arguments)
                ),
                Effect::Continue,
            ));
        };
        // `calls` counts the agent's own calls: a plan and none yet, and a claim of
        // done is premature.
        let unworked = state.calls == 0;
        if unworked
            && state.planned
            && state
                .questioned_claims_of
                .is_none_or(|r| r == state.replies)
            && claims_done(&call.name, args)
        {
            state.questioned_claims_of = Some(state.replies);
            return Ok((NOT_YET_WORKED.to_string(), Effect::Continue));
        }
        let mission = state.mission.as_ref().expect("mission tools came from it");
        let result = mission.call(&call.name, args.clone()).await.map_err(fail)?;
        Ok(match result {
            Ok(text) if unworked && call.name == crate::mission_mcp::MISSION_PLAN => {
                state.planned = true;
                (format!("{text}\n{PLAN_FILED_NOW_WORK}"), Effect::Continue)
            }
            Ok(text) => {
                let effect = if call.name == crate::mission_mcp::MISSION_FINISH {
                    Effect::Finished
                } else if call.name == crate::mission_mcp::MISSION_ASK_ATTENTION
                    && text.starts_with(PARKED_PREFIX)
                {
                    Effect::Parked
                } else {
                    Effect::Continue
                };
                (text, effect)
            }
            Err(text) => (format!("error: {text}"), Effect::Continue),
        })
    }
}

/// A dialog the server still refuses as too long after one shrink: the turn's error
/// names the server's refusal and the setting that fixes it.
fn context_error(e: &crate::model::ModelError, window: u64) -> Error {
    fail(format!(
        "the model server's context window is too small for this dialog even at {window} tokens — set the agent's `--context-tokens` to the server's context size (in the agent declaration's args, e.g. `args = [\"agent\", \"--context-tokens\", \"4096\"]`), or start the server with a larger window: {e}"
    ))
}

fn fail(message: String) -> Error {
    Error::new(-32603, message)
}

/// After a cancel, give every call of the last assistant message a result, so
/// the next request is a well-formed dialog.
fn answer_dangling_calls(messages: &mut Vec<ChatMessage>) {
    let Some(at) = messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return;
    };
    let answered: HashSet<String> = messages[at + 1..]
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    let missing: Vec<String> = messages[at]
        .tool_calls
        .iter()
        .map(|c| c.id.clone())
        .filter(|id| !answered.contains(id))
        .collect();
    for id in missing {
        messages.push(ChatMessage::tool_result(
            id,
            "cancelled: the operator cancelled the turn before this call finished",
        ));
    }
}

/// A model failure as the turn's JSON-RPC error: the client's own text, which
/// names the endpoint and what to do.
pub fn model_error(e: crate::model::ModelError) -> Error {
    Error::new(-32603, e.to_string())
}
