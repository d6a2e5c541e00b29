//! The scripted backend: replays a JSON dialog, one turn per completion, and records every
//! request it was sent, so a demo or a test can show exactly what the model saw.
//!
//! File shape: `{"turns": [turn, …]}` (or the bare array), where a turn is
//! `{match?, text?, tool_calls?: [{id?, name, arguments}], finish_reason?, usage?, repeat?}`
//! and must carry text or tool calls. A turn with `match` is consumed first by the earliest
//! request whose messages contain that substring (an ask id, a mission id, a summary), so
//! concurrent oracles do not race one cursor; other turns are consumed in order. A turn
//! with `repeat: true` is never used up: it answers every request that reaches it for as
//! long as the process runs (a model that always says the same thing, over a whole
//! `oracle eval` corpus), so the ordered turns after it are never reached. A string in
//! a turn's tool-call arguments may quote `{{input.<field>}}`: a field of the JSON object
//! the request's newest JSON user message carries (the oracle's INPUT event, a session's
//! offer of a question), so a dialog can echo ids it cannot know when it is written. One cursor
//! per script per process. Running past the end fails with the path and the turn index:
//! there is never a fallback reply.
//!
//! A turn with `wait_for_file` (a path, relative to the script's directory unless
//! absolute) is consumed as any other but replied only once that file exists, so a test
//! can hold a model's reply until it has observed, through the product's own commands,
//! whatever must happen first (a run parking under its question, say). The wait is
//! async, so the runtime the caller shares with its units keeps running; a file that
//! never appears fails the call after [`GATE_LIMIT`], naming the file.
//!
//! Each request is appended, as one JSON line in the OpenAI wire shape, to
//! `<script>.requests.jsonl` beside the script (see [`recorded_requests_path`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::{ChatReply, ChatRequest, ModelError, SCRIPTED_MODEL, ToolCall, Usage};

/// One scripted reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedTurn {
    #[serde(default, rename = "match")]
    pub matches: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub usage: Option<Usage>,
    #[serde(default)]
    pub wait_for_file: Option<PathBuf>,
    /// Never consumed: the turn replies to every request that reaches it.
    #[serde(default)]
    pub repeat: bool,
}

/// How long a turn's reply waits for its `wait_for_file`: generous, since the file is a
/// test's signal and a loaded machine may take long to give it; bounded, so a signal
/// that never comes fails the call rather than hanging it.
pub const GATE_LIMIT: Duration = Duration::from_secs(120);
/// How often a held reply looks for its file.
const GATE_POLL: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Dialog {
        #[serde(default)]
        #[allow(dead_code)]
        // accepted for compatibility; the identity is always scripted-test
        model: Option<String>,
        turns: Vec<ScriptedTurn>,
    },
    Turns(Vec<ScriptedTurn>),
}

#[derive(Debug)]
struct Cursor {
    consumed: Vec<bool>,
    calls: usize,
}

#[derive(Debug)]
pub struct ScriptedBackend {
    path: PathBuf,
    turns: Vec<ScriptedTurn>,
    cursor: Mutex<Cursor>,
    gate_limit: Duration,
}

/// Where the scripted backend records the requests it was sent for `script`.
pub fn recorded_requests_path(script: &Path) -> PathBuf {
    let mut name = script.as_os_str().to_owned();
    name.push(".requests.jsonl");
    PathBuf::from(name)
}

impl ScriptedBackend {
    /// Load and validate a dialog.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let fail = |detail: String| ModelError::Script {
            path: path.to_path_buf(),
            detail,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
        let turns = match serde_json::from_str::<ScriptFile>(&text) {
            Ok(ScriptFile::Dialog { turns, .. }) | Ok(ScriptFile::Turns(turns)) => turns,
            Err(e) => {
                return Err(fail(format!(
                    "not a dialog ({e}); expected {{\"turns\": [{{\"text\": …}} | {{\"tool_calls\": [{{\"name\": …, \"arguments\": {{…}}}}]}}]}}"
                )));
            }
        };
        if let Some(i) = turns
            .iter()
            .position(|t| t.text.is_none() && t.tool_calls.is_empty())
        {
            return Err(fail(format!(
                "turn {} is empty: give it text or tool_calls",
                i + 1
            )));
        }
        Ok(ScriptedBackend {
            path: path.to_path_buf(),
            cursor: Mutex::new(Cursor {
                consumed: vec![false; turns.len()],
                calls: 0,
            }),
            turns,
            gate_limit: GATE_LIMIT,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next turn's reply, once its `wait_for_file` (if any) exists.
    pub async fn complete(&self, request: &ChatRequest) -> Result<ChatReply, ModelError> {
        let (index, reply) = self.take(request)?;
        if let Some(file) = &self.turns[index].wait_for_file {
            self.wait_for(index, file).await?;
        }
        Ok(reply)
    }

    /// Hold turn `index`'s reply until `file` exists. The cursor is not held meanwhile:
    /// other requests (another oracle's, matched by their own turns) go on.
    async fn wait_for(&self, index: usize, file: &Path) -> Result<(), ModelError> {
        let file = match self.path.parent() {
            Some(dir) => dir.join(file),
            None => file.to_path_buf(),
        };
        crate::clock::poll_until(self.gate_limit, GATE_POLL, || file.exists().then_some(()))
            .await
            .ok_or_else(|| ModelError::Script {
                path: self.path.clone(),
                detail: format!(
                    "turn {} waited {} for {}, which never appeared",
                    index + 1,
                    crate::duration::format(self.gate_limit),
                    file.display()
                ),
            })
    }

    /// Record the request and consume the turn that answers it: its index and reply.
    fn take(&self, request: &ChatRequest) -> Result<(usize, ChatReply), ModelError> {
        self.record(request);
        let mut cursor = self.cursor.lock().unwrap_or_else(|p| p.into_inner());
        cursor.calls += 1;
        let call = cursor.calls;
        let mentions = |needle: &str| {
            request
                .messages
                .iter()
                .any(|m| m.content.as_deref().is_some_and(|c| c.contains(needle)))
        };
        let pick = (0..self.turns.len())
            .filter(|&i| !cursor.consumed[i])
            .find(|&i| self.turns[i].matches.as_deref().is_some_and(mentions))
            .or_else(|| {
                (0..self.turns.len())
                    .find(|&i| !cursor.consumed[i] && self.turns[i].matches.is_none())
            });
        let Some(index) = pick else {
            return Err(ModelError::Exhausted {
                path: self.path.clone(),
                call,
                held: self.turns.len(),
            });
        };
        let turn = &self.turns[index];
        cursor.consumed[index] = !turn.repeat;
        let reply = ChatReply {
            content: turn.text.clone(),
            tool_calls: turn
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    id: c
                        .id
                        .clone()
                        .unwrap_or_else(|| format!("call_{}_{}", index + 1, i + 1)),
                    name: c.name.clone(),
                    arguments: fill_from_input(&c.arguments, request),
                })
                .collect(),
            finish_reason: turn.finish_reason.clone().or_else(|| {
                Some(
                    if turn.tool_calls.is_empty() {
                        "stop"
                    } else {
                        "tool_calls"
                    }
                    .to_string(),
                )
            }),
            usage: turn.usage,
        };
        Ok((index, reply))
    }

    /// Append the request to the record. A record that cannot be written is logged, not
    /// fatal: the replay itself does not depend on it.
    fn record(&self, request: &ChatRequest) {
        let path = recorded_requests_path(&self.path);
        let line = format!("{}\n", request.to_wire(SCRIPTED_MODEL));
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = written {
            tracing::warn!(path = %path.display(), error = %e, "cannot record a scripted request");
        }
    }
}

/// `{{input.<field>}}` in any string of `value`, replaced by that field of the JSON object
/// in the request's newest user message that is one; an unknown field is left as written.
fn fill_from_input(value: &Value, request: &ChatRequest) -> Value {
    let input = request
        .messages
        .iter()
        .rev()
        .filter(|m| m.role == super::Role::User)
        .filter_map(|m| m.content.as_deref())
        .find_map(|c| match serde_json::from_str(c) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        });
    let Some(input) = input else {
        return value.clone();
    };
    fn fill(v: &Value, input: &serde_json::Map<String, Value>) -> Value {
        match v {
            Value::String(s) if s.contains("{{input.") => {
                let mut out = s.clone();
                for (k, field) in input {
                    if let Some(text) = field.as_str() {
                        out = out.replace(&format!("{{{{input.{k}}}}}"), text);
                    }
                }
                Value::String(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(|x| fill(x, input)).collect()),
            Value::Object(o) => {
                Value::Object(o.iter().map(|(k, x)| (k.clone(), fill(x, input))).collect())
            }
            other => other.clone(),
        }
    }
    fill(value, &input)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ChatMessage;
    use serde_json::json;

    fn script(dir: &Path, dialog: Value) -> PathBuf {
        let path = dir.join("dialog.json");
        std::fs::write(&path, dialog.to_string()).unwrap();
        path
    }

    fn ask(text: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::user(text)],
            ..Default::default()
        }
    }

    /// The text of `backend`'s reply to `text`.
    async fn reply_text(backend: &ScriptedBackend, text: &str) -> Option<String> {
        backend.complete(&ask(text)).await.unwrap().content
    }

    #[tokio::test]
    async fn turns_replay_in_order_then_the_script_is_exhausted() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(
            dir.path(),
            json!({"turns": [
                {"text": "one"},
                {"tool_calls": [{"name": "f", "arguments": {"a": 1}}], "usage": {"total_tokens": 7}}
            ]}),
        );
        let backend = ScriptedBackend::load(&path).unwrap();
        assert_eq!(reply_text(&backend, "x").await.as_deref(), Some("one"));
        let second = backend.complete(&ask("y")).await.unwrap();
        assert_eq!(second.tool_calls[0].id, "call_2_1");
        assert_eq!(second.tool_calls[0].arguments, json!({"a": 1}));
        assert_eq!(second.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(second.usage.unwrap().total(), 7);
        let err = backend.complete(&ask("z")).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "scripted backend {} is exhausted: call 3 asked for turn 3 but the script holds 2 turn(s)",
                path.display()
            )
        );
        let recorded = std::fs::read_to_string(recorded_requests_path(&path)).unwrap();
        let lines: Vec<Value> = recorded
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1]["messages"][0]["content"], "y");
        assert_eq!(lines[1]["model"], SCRIPTED_MODEL);
    }

    #[tokio::test]
    async fn a_matching_turn_is_consumed_before_the_ordered_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(
            dir.path(),
            json!([{"text": "plain"}, {"match": "ask-42", "text": "for 42"}]),
        );
        let backend = ScriptedBackend::load(&path).unwrap();
        assert_eq!(
            reply_text(&backend, "about ask-42").await.as_deref(),
            Some("for 42")
        );
        assert_eq!(
            reply_text(&backend, "about ask-42").await.as_deref(),
            Some("plain")
        );
    }

    #[tokio::test]
    async fn a_repeating_turn_answers_every_request_that_reaches_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(
            dir.path(),
            json!([{"match": "special", "text": "once"}, {"text": "always", "repeat": true}, {"text": "never"}]),
        );
        let backend = ScriptedBackend::load(&path).unwrap();
        for _ in 0..3 {
            assert_eq!(reply_text(&backend, "x").await.as_deref(), Some("always"));
        }
        assert_eq!(
            reply_text(&backend, "special").await.as_deref(),
            Some("once")
        );
        assert_eq!(
            reply_text(&backend, "special").await.as_deref(),
            Some("always")
        );
    }

    #[tokio::test]
    async fn tool_call_arguments_can_echo_a_field_of_the_json_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(
            dir.path(),
            json!([{"tool_calls": [{"name": "f", "arguments": {"id": "{{input.askId}}", "n": 1, "x": "{{input.nope}}"}}]}]),
        );
        let backend = ScriptedBackend::load(&path).unwrap();
        let reply = backend.complete(&ask(r#"{"askId":"a-7"}"#)).await.unwrap();
        assert_eq!(
            reply.tool_calls[0].arguments,
            json!({"id": "a-7", "n": 1, "x": "{{input.nope}}"})
        );
    }

    #[tokio::test]
    async fn a_gated_reply_waits_for_its_file_and_names_it_when_it_never_comes() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(
            dir.path(),
            json!([{"text": "after the signal", "wait_for_file": "go"}, {"text": "next"}]),
        );
        let backend = ScriptedBackend::load(&path).unwrap();
        let request = ask("x");
        let held = backend.complete(&request);
        tokio::pin!(held);
        assert!(
            futures::poll!(&mut held).is_pending(),
            "no reply before the file exists"
        );
        let recorded = std::fs::read_to_string(recorded_requests_path(&path)).unwrap();
        assert_eq!(
            recorded.lines().count(),
            1,
            "the request is recorded at once"
        );
        std::fs::write(dir.path().join("go"), "").unwrap();
        assert_eq!(
            held.await.unwrap().content.as_deref(),
            Some("after the signal")
        );

        let mut backend = ScriptedBackend::load(&path).unwrap();
        backend.gate_limit = Duration::from_millis(50);
        std::fs::remove_file(dir.path().join("go")).unwrap();
        let err = backend.complete(&ask("y")).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "scripted backend {}: turn 1 waited 50ms for {}, which never appeared",
                path.display(),
                dir.path().join("go").display()
            )
        );
    }

    #[test]
    fn an_empty_turn_or_a_malformed_file_is_refused_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(
            dir.path(),
            json!({"turns": [{"text": "ok"}, {"usage": {}}]}),
        );
        let err = ScriptedBackend::load(&path).unwrap_err().to_string();
        assert!(
            err.ends_with("turn 2 is empty: give it text or tool_calls"),
            "{err}"
        );
        let path = script(dir.path(), json!({"turns": [{"txt": "typo"}]}));
        let err = ScriptedBackend::load(&path).unwrap_err().to_string();
        assert!(err.contains("not a dialog"), "{err}");
    }
}
