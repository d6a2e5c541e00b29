//! The oracle chain, in code: chat → tool call → execute → back to chat, with the
//! budgets of the chain file. Its shape:
//!
//! - `oracle_loop` chats. A failure goes to recovery; past `tool_rounds` tool rounds
//!   the reply goes to recovery unread; a tool call is executed and the results go back
//!   to the loop; a chat reply past `text_corrections` corrections ends the chain;
//!   any other chat reply meets the `verdict_state` gate: settled ends the chain, open
//!   sends the correction (with the INPUT) back to the loop.
//! - `oracle_recovery` chats once more on the same conversation under its own prompt;
//!   a tool call is executed (at most `recovery_rounds` times), and its text ends it.
//!
//! A settled contract ends the run at once, in either stage: once an answer went out
//! (or WAIT was recorded) nothing the model says next can change it, so its closing
//! reply is never awaited. Ending with the contract open is WAIT-equivalent: nothing
//! executed, no error. Only a recovery chat that fails too is an error (the driver's
//! `chain error` line). Each step — a call sent, a retry, a failure, chat text, a
//! rejected verdict, the move to recovery — is one trace line through [`Chain::trace`].
//!
//! The prompts and budgets come from the chain file on the search path, so an operator
//! can edit them; the transitions are this code.

use std::path::PathBuf;

use serde_json::Value;

use super::contract::{
    AnswerError, Answerer, Binding, Outcome, SUBMIT_VERDICT, TOOLSET, WIRE_SUBMIT_VERDICT,
    resolve_tool_name, submit_verdict_spec,
};
use crate::envelope::{Action, ToolCall, evaluate, search, vet_chain};
use crate::model::{ChatMessage, ChatReply, ChatRequest, ModelClient, ModelError, ToolChoice};
use crate::paths::Paths;

/// The chain file `oracle-variant` selects.
pub fn file_for_variant(variant: &str) -> &'static str {
    match variant {
        "conservative" => "chain-oracle-conservative.json",
        _ => "chain-oracle-default.json",
    }
}

/// The reply cap of every oracle call: a verdict is one small tool call, and a
/// model that rambles past this has not produced one.
pub const MAX_TOKENS: u32 = 256;

/// How far each stage of the chain may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    pub tool_rounds: u32,
    pub text_corrections: u32,
    pub recovery_rounds: u32,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            tool_rounds: 3,
            text_corrections: 2,
            recovery_rounds: 2,
        }
    }
}

/// A loaded chain file: the two prompts and the budgets.
#[derive(Debug, Clone)]
pub struct ChainFile {
    pub file_name: String,
    pub path: PathBuf,
    pub loop_instruction: String,
    /// Holds `{{tool_rounds_used}}` and `{{recovery_rounds_used}}`, filled per call.
    pub recovery_instruction: String,
    pub budgets: Budgets,
    /// Worked reviews, as the conversation each would have been: put before the real
    /// one in every call, so a small model sees the contract met, not only described.
    pub examples: Vec<ChatMessage>,
}

impl ChainFile {
    /// Find `file_name` on the search path (workspace, then home) and load it.
    pub fn load(paths: &Paths, file_name: &str) -> anyhow::Result<ChainFile> {
        let dirs = paths.search_dirs();
        let found = search::find(&dirs, file_name).map_err(anyhow::Error::msg)?;
        let Some(path) = found else {
            let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            anyhow::bail!(
                "--oracle: {file_name} not found (run `missionboard init` to seed it): it is in none of {}",
                shown.join(", ")
            );
        };
        std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| Self::from_bytes(file_name, path.clone(), &bytes))
            .map_err(|e| anyhow::anyhow!("--oracle: load {}: {e}", path.display()))
    }

    /// The prompts of `oracle_loop` and `oracle_recovery`, and the budgets. The file
    /// must vet clean: a chain with a typo must not run with half its prompt.
    pub fn from_bytes(file_name: &str, path: PathBuf, bytes: &[u8]) -> Result<ChainFile, String> {
        let report = vet_chain(bytes);
        if !report.is_ok() {
            return Err(format!(
                "{} (see `missionboard vet`)",
                report.errors.join("; ")
            ));
        }
        let doc: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let instruction = |task: &str| {
            doc["tasks"]
                .as_array()
                .and_then(|ts| ts.iter().find(|t| t["id"] == task))
                .and_then(|t| t["system_instruction"].as_str())
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string)
                .ok_or_else(|| format!("task {task:?} needs a system_instruction"))
        };
        let defaults = Budgets::default();
        let budget = |key: &str, default: u32| {
            doc["budgets"][key]
                .as_u64()
                .map_or(default, |n| n.min(100) as u32)
        };
        let examples = doc["examples"]
            .as_array()
            .map(|all| worked_examples(all))
            .transpose()?
            .unwrap_or_default();
        Ok(ChainFile {
            examples,
            file_name: file_name.to_string(),
            path,
            loop_instruction: instruction("oracle_loop")?,
            recovery_instruction: instruction("oracle_recovery")?,
            budgets: Budgets {
                tool_rounds: budget("tool_rounds", defaults.tool_rounds),
                text_corrections: budget("text_corrections", defaults.text_corrections),
                recovery_rounds: budget("recovery_rounds", defaults.recovery_rounds),
            },
        })
    }
}

/// The chain file's examples as messages: each INPUT as the chain would send it, the
/// call, and the result the real contract gives that call. An example the contract
/// does not accept would teach the model a verdict the chain refuses, so it refuses the
/// file instead.
fn worked_examples(examples: &[Value]) -> Result<Vec<ChatMessage>, String> {
    struct Nowhere;
    impl Answerer for Nowhere {
        fn answer(&self, _: &str, _: &str) -> Result<(), AnswerError> {
            Ok(())
        }
    }
    let mut messages = Vec::new();
    for (i, example) in examples.iter().enumerate() {
        let input = super::review_input(&example["input"]);
        let id = format!("example-{}", i + 1);
        let mut binding = Binding::new(&id, &input, &Nowhere);
        let call = &example["call"];
        let result = binding.exec(TOOLSET, SUBMIT_VERDICT, call)?;
        if result["accepted"] != true {
            return Err(format!(
                "examples[{i}]: the verdict contract refuses its call: {}",
                result["message"].as_str().unwrap_or_default()
            ));
        }
        messages.push(ChatMessage::user(input));
        messages.push(ChatMessage::assistant(
            None,
            vec![crate::model::ToolCall {
                id: id.clone(),
                name: WIRE_SUBMIT_VERDICT.to_string(),
                arguments: call.clone(),
            }],
        ));
        messages.push(ChatMessage::tool_result(id, result.to_string()));
    }
    Ok(messages)
}

// ---- Token metering, for `oracle eval` ----
//
// The live driver has no use for token counts; `oracle eval` reports them per class. A
// run awaited inside [`metered`] sums the usage every model call of it reports; outside
// one, [`meter`] does nothing.

tokio::task_local! {
    static METER: std::sync::Arc<std::sync::Mutex<crate::model::Usage>>;
}

/// Await `run` (a [`Chain::run`]) and return its output with the token usage its model
/// calls reported, summed (zero where the server reports none).
pub async fn metered<F: std::future::Future>(run: F) -> (F::Output, crate::model::Usage) {
    use crate::sync::LockUnpoisoned;
    let meter = std::sync::Arc::default();
    let out = METER.scope(std::sync::Arc::clone(&meter), run).await;
    let usage = *meter.lock_unpoisoned();
    (out, usage)
}

/// [`metered`] into a meter the caller holds, so what the calls spent is known
/// even when the run is cut short (its review budget ran out).
pub async fn metered_into<F: std::future::Future>(
    meter: std::sync::Arc<std::sync::Mutex<crate::model::Usage>>,
    run: F,
) -> F::Output {
    METER.scope(meter, run).await
}

/// Add one reply's usage to the enclosing [`metered`] run, if any.
fn meter(reply: &ChatReply) {
    use crate::sync::LockUnpoisoned;
    if let Some(u) = reply.usage {
        let _ = METER.try_with(|m| {
            let mut sum = m.lock_unpoisoned();
            sum.prompt_tokens += u.prompt_tokens;
            sum.completion_tokens += u.completion_tokens;
            sum.total_tokens += u.total();
        });
    }
}

/// Everything one run of the chain needs besides the contract.
pub struct Chain<'a> {
    pub model: &'a Result<ModelClient, ModelError>,
    pub file: &'a ChainFile,
    /// The oracle's own envelope: every tool call the model makes is decided by it.
    pub envelope: &'a search::Loaded,
    /// The ask under review, as the trace names it.
    pub ask_id: &'a str,
    /// Writes one operator trace line (see [`super::trace`]).
    pub trace: &'a (dyn Fn(String) + Sync),
}

/// Which stage of the chain a model call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Review,
    Recovery,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Review => "review",
            Stage::Recovery => "recovery",
        }
    }
}

impl Chain<'_> {
    /// Run one review of `input`. `Err` only when recovery's own chat failed. The
    /// run ends as soon as the contract settles: once an answer went out (or WAIT was
    /// recorded) nothing the model says next can change it, so its closing reply is
    /// never awaited.
    pub async fn run(&self, input: &str, binding: &mut Binding<'_>) -> Result<(), String> {
        let budgets = self.file.budgets;
        let mut conversation = vec![ChatMessage::user(input)];
        let mut tool_rounds = 0;
        let mut corrections = 0;
        let mut calls = 0;
        loop {
            calls += 1;
            let reply = match self
                .chat(
                    Stage::Review,
                    calls,
                    &self.file.loop_instruction,
                    &conversation,
                )
                .await
            {
                Ok(r) => r,
                Err(e) => {
                    self.line(format!(
                        "model call {calls} ({}) failed: {e} — recovering",
                        Stage::Review.name()
                    ));
                    break;
                }
            };
            if tool_rounds >= budgets.tool_rounds {
                self.line(format!(
                    "the review spent its {} rounds without a verdict — recovering",
                    budgets.tool_rounds
                ));
                break;
            }
            if !reply.tool_calls.is_empty() {
                tool_rounds += 1;
                self.execute(reply, &mut conversation, binding);
                if binding.outcome() != &Outcome::Open {
                    return Ok(());
                }
                continue;
            }
            if corrections >= budgets.text_corrections {
                self.line(format!(
                    "model call {calls} replied with chat text, not a verdict; the {} text corrections are spent — the chain ends",
                    budgets.text_corrections
                ));
                return Ok(());
            }
            corrections += 1;
            conversation.push(ChatMessage::assistant(
                Some(reply.content.unwrap_or_default()),
                vec![],
            ));
            match binding.verdict_state()["text"].as_str() {
                Some(text) if !text.is_empty() => {
                    self.line(format!(
                        "model call {calls} replied with chat text, not a verdict — correction {corrections} of {} sent",
                        budgets.text_corrections
                    ));
                    conversation.push(ChatMessage::user(text))
                }
                _ => return Ok(()),
            }
        }
        let mut recovery_rounds = 0;
        loop {
            let instruction = self
                .file
                .recovery_instruction
                .replace("{{tool_rounds_used}}", &tool_rounds.to_string())
                .replace("{{recovery_rounds_used}}", &recovery_rounds.to_string());
            calls += 1;
            let reply = self
                .chat(Stage::Recovery, calls, &instruction, &conversation)
                .await?;
            if recovery_rounds >= budgets.recovery_rounds {
                self.line(format!(
                    "recovery spent its {} rounds without a verdict — the chain ends",
                    budgets.recovery_rounds
                ));
                return Ok(());
            }
            if reply.tool_calls.is_empty() {
                self.line(format!(
                    "model call {calls} (recovery) replied with chat text, not a verdict — the chain ends"
                ));
                return Ok(());
            }
            recovery_rounds += 1;
            self.execute(reply, &mut conversation, binding);
            if binding.outcome() != &Outcome::Open {
                return Ok(());
            }
        }
    }

    /// One trace line about the ask under review.
    fn line(&self, what: String) {
        (self.trace)(format!("oracle: ask {}: {what}", self.ask_id));
    }

    async fn chat(
        &self,
        stage: Stage,
        call: u32,
        system: &str,
        conversation: &[ChatMessage],
    ) -> Result<ChatReply, String> {
        let model = self.model.as_ref().map_err(ToString::to_string)?;
        self.line(format!(
            "model call {call} ({}) sent to {}",
            stage.name(),
            model.model_name()
        ));
        let mut messages = vec![ChatMessage::system(system)];
        messages.extend_from_slice(&self.file.examples);
        messages.extend_from_slice(conversation);
        let request = ChatRequest {
            messages,
            tools: vec![submit_verdict_spec()],
            tool_choice: ToolChoice::Auto,
            max_tokens: MAX_TOKENS,
            stop: Vec::new(),
        };
        let on_retry = |attempt: u32, e: &ModelError, backoff: std::time::Duration| {
            self.line(format!(
                "model call {call} attempt {attempt} failed: {e} — retrying in {}",
                crate::duration::format(backoff)
            ))
        };
        let reply = model
            .complete_observed(&request, &on_retry)
            .await
            .inspect(meter)
            .map_err(|e| e.to_string())?;
        Ok(self.verdict_written_as_text(reply, call, &request.tools))
    }

    /// A reply whose verdict was written as text (a ```json fence holding the
    /// arguments, `<tool_call>` tags, …), read as the call it is: small models served
    /// through chat templates often reply so, and a correction would only get the same
    /// text again. What cannot be read as a verdict call stays chat text.
    fn verdict_written_as_text(
        &self,
        mut reply: ChatReply,
        call: u32,
        tools: &[crate::model::ToolSpec],
    ) -> ChatReply {
        let Some(text) = reply
            .content
            .as_deref()
            .filter(|_| reply.tool_calls.is_empty())
        else {
            return reply;
        };
        let found = crate::model::text_calls::recover(text, tools);
        let runnable: Vec<crate::model::ToolCall> = found
            .into_iter()
            .enumerate()
            .filter_map(|(n, c)| {
                let arguments = c.arguments.ok()?;
                self.line(format!(
                    "model call {call} wrote its verdict as text ({}); read as the call",
                    c.shape.name()
                ));
                Some(crate::model::ToolCall {
                    id: format!("text-verdict-{call}-{n}"),
                    name: c.name,
                    arguments,
                })
            })
            .collect();
        if !runnable.is_empty() {
            reply.tool_calls = runnable;
        }
        reply
    }

    /// Append the reply and the result of each of its calls. A call the oracle's
    /// envelope does not allow is refused here and never reaches the contract.
    fn execute(
        &self,
        reply: ChatReply,
        conversation: &mut Vec<ChatMessage>,
        binding: &mut Binding<'_>,
    ) {
        let calls = reply.tool_calls.clone();
        let echoed = reply.tool_calls.iter().map(|c| c.echoed()).collect();
        conversation.push(ChatMessage::assistant(reply.content, echoed));
        for call in calls {
            let (tools, tool) = resolve_tool_name(&call.name);
            let verdict = evaluate(
                &self.envelope.name,
                &self.envelope.declared,
                &ToolCall::new(tools, tool, call.arguments.clone()),
            );
            let text = if verdict.action != Action::Allow {
                self.line(format!(
                    "the model called {tools}.{tool}, which the oracle envelope refuses; nothing was executed"
                ));
                format!(
                    "{tools}.{tool} refused by the oracle envelope {}: the oracle may only submit a verdict; nothing was executed.",
                    self.envelope.name
                )
            } else {
                match binding.exec(tools, tool, &call.arguments) {
                    Ok(result) => result.to_string(),
                    Err(e) => {
                        self.line(format!("{e} — the model may retry"));
                        e
                    }
                }
            };
            if let Some(why) = binding.take_rejection() {
                self.line(format!("verdict rejected: {why}"));
            }
            if let Some(notice) = binding.take_notice() {
                self.line(notice);
            }
            conversation.push(ChatMessage::tool_result(call.id, text));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use serde_json::json;

    use super::*;
    use crate::envelope::Envelope;
    use crate::oracle::contract::{AnswerError, Answerer, Outcome};
    use crate::presets;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    impl Answerer for Recorder {
        fn answer(&self, _ask: &str, text: &str) -> Result<(), AnswerError> {
            self.0.lock().unwrap().push(text.to_string());
            Ok(())
        }
    }

    const INPUT: &str = r#"{"missionId":"m1","askId":"a1","intent":"rename the setting and the env var too","summary":"Rename it?"}"#;

    fn verdict(args: Value) -> Value {
        json!({"tool_calls": [{"name": "oracle.submit_verdict", "arguments": args}]})
    }

    /// Run the shipped default chain over a scripted dialog; returns the outcome, the
    /// deliveries, the requests the model received and the trace lines.
    async fn review(
        turns: Value,
    ) -> (
        Outcome,
        Result<(), String>,
        Vec<String>,
        Vec<Value>,
        Vec<String>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("dialog.json");
        std::fs::write(&script, json!({"turns": turns}).to_string()).unwrap();
        let model = ModelClient::connect(&crate::model::ModelSettings {
            base_url: format!("scripted:{}", script.display()),
            model: None,
            api_key_env: None,
            timeout: std::time::Duration::from_secs(5),
        });
        let preset = |name: &str| presets::get(name).unwrap().bytes;
        let file = ChainFile::from_bytes(
            "chain-oracle-default.json",
            PathBuf::new(),
            preset("chain-oracle-default.json"),
        )
        .unwrap();
        let envelope = search::Loaded {
            name: crate::oracle::ENVELOPE.into(),
            path: PathBuf::new(),
            declared: Envelope::parse(crate::oracle::ENVELOPE, preset(crate::oracle::ENVELOPE))
                .unwrap(),
        };
        let rec = Recorder::default();
        let mut binding = Binding::new("a1", INPUT, &rec);
        let lines = Mutex::new(Vec::new());
        let trace = |line: String| lines.lock().unwrap().push(line);
        let chain = Chain {
            model: &model,
            file: &file,
            envelope: &envelope,
            ask_id: "a1",
            trace: &trace,
        };
        let ran = chain.run(INPUT, &mut binding).await;
        let requests = std::fs::read_to_string(crate::model::recorded_requests_path(&script))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let delivered = rec.0.lock().unwrap().clone();
        let outcome = binding.outcome().clone();
        (
            outcome,
            ran,
            delivered,
            requests,
            lines.into_inner().unwrap(),
        )
    }

    fn last_message(request: &Value) -> String {
        let messages = request["messages"].as_array().unwrap();
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    #[tokio::test]
    async fn the_happy_path_takes_one_chat_call_and_never_waits_for_a_closing_reply() {
        let (outcome, ran, delivered, requests, lines) = review(json!([verdict(
            json!({"verdict": "answer", "askId": "a1", "answer": "yes", "evidence": "rename the setting"})
        )]))
        .await;
        assert_eq!(
            (outcome, ran, delivered),
            (
                Outcome::Answered("yes".into()),
                Ok(()),
                vec!["yes".to_string()]
            )
        );
        assert_eq!(requests.len(), 1, "the review ends with the delivery");
        assert_eq!(
            lines,
            ["oracle: ask a1: model call 1 (review) sent to scripted-test"]
        );
        assert!(
            requests[0]["messages"][0]["content"]
                .as_str()
                .unwrap()
                .starts_with("You are a task processing engine talking to other machines.")
        );
        // The shipped examples come first, each as the conversation it would have
        // been — the INPUT, the verdict call, the contract's acceptance — then the INPUT.
        let messages = requests[0]["messages"].as_array().unwrap();
        let examples = &messages[1..messages.len() - 1];
        assert!(
            !examples.is_empty() && examples.len() % 3 == 0,
            "{examples:#?}"
        );
        for example in examples.chunks(3) {
            assert_eq!(example[0]["role"], "user");
            assert_eq!(
                example[1]["tool_calls"][0]["function"]["name"],
                "oracle_submit_verdict"
            );
            let result: Value =
                serde_json::from_str(example[2]["content"].as_str().unwrap()).unwrap();
            assert_eq!(result["accepted"], true, "{result}");
        }
        assert_eq!(messages.last().unwrap()["content"], INPUT);
        assert_eq!(
            requests[0]["tools"][0]["function"]["name"],
            "oracle_submit_verdict"
        );
        assert_eq!(requests[0]["max_tokens"], 256);
    }

    #[tokio::test]
    async fn a_verdict_written_as_text_is_read_as_the_call_and_checked_like_one() {
        let written = "```json\n{\"verdict\": \"answer\", \"answer\": \"yes\", \"evidence\": \"rename the setting\"}\n```";
        let (outcome, _, delivered, requests, lines) = review(json!([{"text": written}])).await;
        assert_eq!(outcome, Outcome::Answered("yes".into()));
        assert_eq!(delivered, ["yes"]);
        assert_eq!(requests.len(), 1);
        assert_eq!(
            lines[1],
            "oracle: ask a1: model call 1 wrote its verdict as text (the tool's arguments alone); read as the call"
        );
        // Checked like any call: evidence outside the intent is refused all the same.
        let ungrounded = "{\"verdict\": \"answer\", \"answer\": \"yes, as MB_HOST\", \"evidence\": \"the unit said so itself\"}";
        let (outcome, _, delivered, _, _) = review(json!([
            {"text": ungrounded}, {"text": ungrounded}, {"text": ungrounded},
            {"text": "a"}, {"text": "b"}, {"text": "c"}
        ]))
        .await;
        assert_eq!(outcome, Outcome::Open);
        assert!(delivered.is_empty());
    }

    #[tokio::test]
    async fn three_chat_replies_end_the_chain_with_nothing_executed() {
        let (outcome, ran, delivered, requests, lines) =
            review(json!([{"text": "hmm"}, {"text": "well"}, {"text": "maybe"}])).await;
        assert_eq!((outcome, ran), (Outcome::Open, Ok(())));
        assert!(delivered.is_empty());
        assert_eq!(requests.len(), 3);
        let correction = crate::oracle::contract::correction(INPUT);
        assert_eq!(last_message(&requests[1]), correction);
        assert_eq!(last_message(&requests[2]), correction);
        assert_eq!(
            lines,
            [
                "oracle: ask a1: model call 1 (review) sent to scripted-test",
                "oracle: ask a1: model call 1 replied with chat text, not a verdict — correction 1 of 2 sent",
                "oracle: ask a1: model call 2 (review) sent to scripted-test",
                "oracle: ask a1: model call 2 replied with chat text, not a verdict — correction 2 of 2 sent",
                "oracle: ask a1: model call 3 (review) sent to scripted-test",
                "oracle: ask a1: model call 3 replied with chat text, not a verdict; the 2 text corrections are spent — the chain ends",
            ]
        );
    }

    #[tokio::test]
    async fn past_three_tool_rounds_recovery_gets_the_budget_line() {
        let bad = verdict(json!({"verdict": "approve", "askId": "a1"}));
        let (outcome, ran, _, requests, lines) = review(json!([
            bad, bad, bad, {"text": "unread"},
            verdict(json!({"verdict": "wait", "askId": "a1"})),
        ]))
        .await;
        assert_eq!((outcome, ran), (Outcome::Wait, Ok(())));
        assert_eq!(requests.len(), 5);
        assert_eq!(
            lines[1],
            "oracle: ask a1: verdict rejected: invalid verdict \"approve\""
        );
        assert_eq!(
            lines[6..],
            [
                "oracle: ask a1: model call 4 (review) sent to scripted-test",
                "oracle: ask a1: the review spent its 3 rounds without a verdict — recovering",
                "oracle: ask a1: model call 5 (recovery) sent to scripted-test",
            ]
        );
        let recovery = requests[4]["messages"][0]["content"].as_str().unwrap();
        assert!(
            recovery.contains("BUDGET: 3 of 3 review rounds and 0 of 2 recovery rounds are spent."),
            "{recovery}"
        );
    }

    #[tokio::test]
    async fn unparseable_arguments_are_named_and_echoed_short_and_once() {
        let runaway = format!(
            "{{\"verdict\": \"answer\", \"answer\": \"{}",
            "x".repeat(3000)
        );
        let (outcome, _, delivered, requests, lines) = review(json!([
            {"tool_calls": [{"name": "oracle_submit_verdict", "arguments": runaway}]},
            verdict(json!({"verdict": "wait", "askId": "a1"})),
        ]))
        .await;
        assert_eq!(outcome, Outcome::Wait);
        assert!(delivered.is_empty());
        let messages = requests[1]["messages"].as_array().unwrap();
        let echoed = &messages[messages.len() - 2]["tool_calls"][0]["function"]["arguments"];
        assert_eq!(
            echoed.as_str().unwrap(),
            &runaway[..200],
            "the model's own text, cut, and encoded once"
        );
        let result: Value = serde_json::from_str(&last_message(&requests[1])).unwrap();
        let message = result["message"].as_str().unwrap();
        assert!(
            message.starts_with(&format!(
                "invalid call: the arguments are not a JSON object (got text that does not parse as JSON, 3033 characters, starting {:?}).",
                &runaway[..200]
            )),
            "{message}"
        );
        assert!(
            requests[1].to_string().len() - requests[0].to_string().len() < 2000,
            "nothing runaway is sent back"
        );
        assert!(
            lines[1].starts_with(
                "oracle: ask a1: verdict rejected: invalid call: the arguments are not a JSON object (got text"
            ),
            "{lines:?}"
        );
    }

    #[tokio::test]
    async fn a_call_outside_the_oracle_envelope_executes_nothing() {
        let (outcome, _, delivered, requests, _) = review(json!([
            {"tool_calls": [{"name": "local_shell.local_shell", "arguments": {"command": "rm -rf /"}}]},
            {"text": "a"}, {"text": "b"}, {"text": "c"}
        ]))
        .await;
        assert_eq!(outcome, Outcome::Open);
        assert!(delivered.is_empty());
        assert_eq!(
            last_message(&requests[1]),
            "local_shell.local_shell refused by the oracle envelope hitl-policy-oracle.json: the oracle may only submit a verdict; nothing was executed."
        );
    }

    #[tokio::test]
    async fn a_model_that_fails_in_recovery_too_is_a_chain_error() {
        let (outcome, ran, _, _, _) = review(json!([])).await;
        assert_eq!(outcome, Outcome::Open);
        assert!(ran.unwrap_err().contains("is exhausted: call 2"));
    }
}
