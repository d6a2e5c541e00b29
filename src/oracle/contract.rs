//! The verdict contract: the oracle's one model-facing tool, `oracle.submit_verdict`
//! (offered on the wire as `oracle_submit_verdict`, since OpenAI-compatible servers
//! refuse dotted function names), bound to the single ask under review, and the
//! deterministic `verdict_state` gate the chain reads after a chat reply.
//!
//! The contract is a fixed state machine. Checks run in order — settled, arguments
//! shape, verdict, answer text ([`check_answer`]), then the deterministic
//! grounds ([`super::grounds::settling_evidence`]: evidence in the intent, a bare
//! yes/no only for a yes/no question) — and an invalid call is a *result* (accepted
//! false) that never reaches the answerer; the binding keeps the operator's reason
//! for the trace ([`Binding::take_rejection`]). A refused answer keeps the contract open and repeats
//! identically; a settled contract never delivers twice.
//!
//! There is no global registry to leak it from: a [`Binding`] exists only for the
//! length of one review, so outside the driver's own run the tool does not exist.

use serde_json::{Map, Value, json};

use super::grounds;
use super::screen::Question;
use crate::model::{ToolSpec, describe_arguments};

/// The toolset the model sees; tools are qualified as `oracle.<tool>`.
pub const TOOLSET: &str = "oracle";
pub const SUBMIT_VERDICT: &str = "submit_verdict";
pub const VERDICT_STATE: &str = "verdict_state";
/// `oracle.submit_verdict` as the model is offered it: OpenAI-compatible servers
/// refuse function names outside `^[A-Za-z0-9_-]+$`.
pub const WIRE_SUBMIT_VERDICT: &str = "oracle_submit_verdict";

/// The longest answer delivered to a unit, in characters.
pub const MAX_ANSWER_CHARS: usize = 300;

/// The `(toolset, tool)` a model's call names: `oracle.submit_verdict`,
/// `oracle_submit_verdict` (the wire name) and a bare `submit_verdict` all name the
/// same tool; a dotted name of another toolset stays that toolset's.
pub fn resolve_tool_name(name: &str) -> (&str, &str) {
    if let Some(split) = name.split_once('.') {
        return split;
    }
    let prefix = format!("{TOOLSET}_");
    match name.strip_prefix(&prefix) {
        Some(tool) if [SUBMIT_VERDICT, VERDICT_STATE].contains(&tool) => (TOOLSET, tool),
        _ => (TOOLSET, name),
    }
}

/// The one schema line every invalid-call message ends with.
const SCHEMA_LINE: &str = "the schema is {\"verdict\":\"wait\"|\"answer\", \"answer\": string and \"evidence\": string (both required when verdict is \"answer\")}. Correct the call and submit the verdict via submit_verdict again.";

/// Where the review stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Open,
    Wait,
    /// Delivered, with the words the unit received.
    Answered(String),
}

/// Why an answer did not land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerError {
    /// The envelope, or the ask's state, holds: a human must answer. The reason has
    /// already gone to the operator; the model is told only that it was denied.
    Refused,
    /// Plumbing failed; the model may retry.
    Transient(String),
}

/// Delivers an answer to the bound ask.
pub trait Answerer: Sync {
    fn answer(&self, ask_id: &str, text: &str) -> Result<(), AnswerError>;
}

/// One review's contract: the ask it is bound to, the INPUT event the model saw,
/// and where the verdict stands.
pub struct Binding<'a> {
    ask_id: String,
    input: String,
    question: Question,
    outcome: Outcome,
    answerer: &'a dyn Answerer,
    /// Why the last call was not accepted, for the operator's trace.
    rejection: Option<String>,
    /// What else the operator should read about the last call: the span that settled
    /// an answer, when it is not the one the model cited.
    notice: Option<String>,
}

impl<'a> Binding<'a> {
    pub fn new(ask_id: &str, input: &str, answerer: &'a dyn Answerer) -> Self {
        Binding {
            ask_id: ask_id.to_string(),
            input: input.to_string(),
            question: Question::from_input(input),
            outcome: Outcome::Open,
            answerer,
            rejection: None,
            notice: None,
        }
    }

    /// Why the last `submit_verdict` call was not accepted (its check and reason),
    /// once: the chain writes it to the trace.
    pub fn take_rejection(&mut self) -> Option<String> {
        self.rejection.take()
    }

    /// What the operator should read about the last call beyond its outcome, once.
    pub fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// Run `tools.tool`. `Err` is a tool error: the chain hands its text back to the
    /// model as the call's result, and the contract stays open.
    pub fn exec(&mut self, tools: &str, tool: &str, args: &Value) -> Result<Value, String> {
        if tools != TOOLSET {
            return Err(format!("unknown tools: {tools}"));
        }
        match tool {
            SUBMIT_VERDICT => self.submit_verdict(args),
            VERDICT_STATE => Ok(self.verdict_state()),
            other => Err(format!(
                "oracletools: unknown tool {other:?} (want submit_verdict or verdict_state)"
            )),
        }
    }

    fn submit_verdict(&mut self, args: &Value) -> Result<Value, String> {
        let ask = self.ask_id.clone();
        if self.outcome != Outcome::Open {
            return Ok(self.reject(format!(
                "verdict already recorded for ask {ask}: the contract is settled. Do not call submit_verdict again."
            )));
        }
        let Some(args) = args.as_object() else {
            return Ok(self.reject(format!(
                "invalid call: the arguments are not a JSON object (got {}). {SCHEMA_LINE}",
                describe_arguments(args)
            )));
        };
        // A binding reviews one ask, so the model is never made to echo its id: an
        // `askId` it sends anyway is ignored, right or wrong.
        let verdict = arg(args, "verdict").to_lowercase();
        let answer = arg(args, "answer");
        let evidence = arg(args, "evidence");
        if verdict != "wait" && verdict != "answer" {
            return Ok(self.reject(format!("invalid verdict {verdict:?}: {SCHEMA_LINE}")));
        }
        if verdict == "wait" {
            self.outcome = Outcome::Wait;
            return Ok(result(
                true,
                "wait",
                format!(
                    "verdict recorded for ask {ask}: WAIT — nothing was executed; the question stays with a human. The contract is complete: do not call submit_verdict again."
                ),
            ));
        }
        if answer.is_empty() {
            return Ok(self.reject(format!(
                "invalid call: verdict \"answer\" requires a non-empty \"answer\" — the one short plain sentence the unit acts on. {SCHEMA_LINE}"
            )));
        }
        if let Err(why) = check_answer(&answer) {
            return Ok(self.reject(format!(
                "invalid answer: it {why}. An answer is one short plain sentence on one line, at most {MAX_ANSWER_CHARS} characters, with no code fences, markup, HTML entities or shell commands; nothing was delivered. Correct the call and submit the verdict via submit_verdict again, or submit wait."
            )));
        }
        match grounds::settling_evidence(&self.question, &answer, &evidence) {
            Ok(None) => {}
            Ok(Some(phrase)) => {
                self.notice = Some(format!(
                    "the evidence {:?} does not settle the answer; the intent's phrase {:?} does",
                    crate::text::one_line(&evidence),
                    crate::text::one_line(&phrase)
                ))
            }
            Err(refusal) => {
                return Ok(self.reject(format!(
                    "answer refused by the {refusal}; nothing was delivered. {}",
                    where_evidence_comes_from(&self.question.intent)
                )));
            }
        }
        match self.answerer.answer(&ask, &answer) {
            Ok(()) => {
                self.outcome = Outcome::Answered(answer);
                Ok(result(
                    true,
                    "answered",
                    format!(
                        "verdict recorded for ask {ask}: ANSWER delivered as agent \"oracle\"; the asking unit continues with it. The contract is complete: do not call submit_verdict again."
                    ),
                ))
            }
            // The answerer has already told the operator why.
            Err(AnswerError::Refused) => {
                Ok(rejected(format!("answer denied per policy for ask {ask}.")))
            }
            Err(AnswerError::Transient(e)) => {
                Err(format!("oracletools: deliver answer for ask {ask}: {e}"))
            }
        }
    }

    /// A call not accepted: the result the model gets, whose message the trace repeats.
    fn reject(&mut self, message: String) -> Value {
        // The operator reads what was wrong; how to correct it is the model's part.
        let reason = [
            "; nothing was delivered",
            ". An answer is",
            ". Correct the call",
            ": the schema is",
            ". the schema is",
        ]
        .iter()
        .filter_map(|cut| message.find(cut))
        .min()
        .map_or(message.as_str(), |at| &message[..at]);
        self.rejection = Some(reason.to_string());
        rejected(message)
    }

    /// The deterministic gate: settled, or open with the correction the model gets
    /// next (it carries the original INPUT verbatim, so a model that lost the thread
    /// can start over from it).
    pub fn verdict_state(&self) -> Value {
        if self.outcome == Outcome::Open {
            json!({"state": "open", "text": correction(&self.input)})
        } else {
            json!({"state": "settled", "text": ""})
        }
    }
}

/// Is `answer` (trimmed) fit to hand to a unit as its operator's reply? A unit acts on
/// these words unattended, so anything that is not one plain sentence — several
/// lines, an essay, a code block, markup, an entity a renderer would decode, or a
/// command line the unit might run — is refused, naming why.
pub fn check_answer(answer: &str) -> Result<(), String> {
    if answer.contains(['\n', '\r', '\u{2028}', '\u{2029}']) {
        return Err("spans several lines".into());
    }
    let chars = answer.chars().count();
    if chars > MAX_ANSWER_CHARS {
        return Err(format!("is {chars} characters long"));
    }
    if answer.contains("```") || answer.contains("~~~") {
        return Err("holds a code fence".into());
    }
    if answer.chars().any(|c| c.is_control()) {
        return Err("holds control characters".into());
    }
    if let Some(entity) = html_entity(answer) {
        return Err(format!("holds the HTML entity {entity}"));
    }
    if let Some(mark) = markup(answer) {
        return Err(format!("holds markup ({mark})"));
    }
    if let Some(shell) = shell_like(answer) {
        return Err(format!("looks like a shell command ({shell})"));
    }
    Ok(())
}

/// The first `&name;`, `&#123;` or `&#x1F;` in `text`.
fn html_entity(text: &str) -> Option<&str> {
    text.match_indices('&').find_map(|(at, _)| {
        let rest = &text[at + 1..];
        let end = rest.find(';')?;
        let body = rest[..end]
            .strip_prefix('#')
            .map_or(&rest[..end], |n| n.strip_prefix(['x', 'X']).unwrap_or(n));
        (!body.is_empty() && end <= 32 && body.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| &text[at..at + end + 2])
    })
}

/// HTML tags and Markdown that changes how the text reads.
fn markup(text: &str) -> Option<&'static str> {
    let tag = text.match_indices('<').any(|(at, _)| {
        text[at + 1..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '/' || c == '!')
    });
    if tag {
        return Some("an HTML tag");
    }
    if text.contains('`') {
        return Some("inline code");
    }
    if text.contains("**") || text.contains("__") {
        return Some("emphasis");
    }
    if text.contains("](") {
        return Some("a link");
    }
    let starts = |p: &str| text.starts_with(p);
    if starts("#") || starts("> ") || starts("- ") || starts("* ") || starts("+ ") {
        return Some("a heading, quote or list");
    }
    None
}

/// Commands a unit could take at its word.
const SHELL_WORDS: &[&str] = &[
    "sudo", "rm", "curl", "wget", "chmod", "chown", "dd", "mkfs", "bash", "sh", "zsh", "eval",
    "exec", "kill", "pkill", "git", "npm", "npx", "pip", "cargo", "make", "docker", "mv", "cp",
    "ls", "cat", "echo", "export", "cd",
];

/// Why `text` reads as a command line rather than a sentence, if it does.
fn shell_like(text: &str) -> Option<&'static str> {
    for (needle, why) in [
        ("$(", "command substitution"),
        ("&&", "a command chain"),
        ("||", "a command chain"),
        ("| sh", "a pipe into a shell"),
        ("|sh", "a pipe into a shell"),
        ("| bash", "a pipe into a shell"),
        ("|bash", "a pipe into a shell"),
        ("> /dev/", "a redirection"),
        (">/dev/", "a redirection"),
    ] {
        if text.contains(needle) {
            return Some(why);
        }
    }
    if text.starts_with("$ ") || text.starts_with("# ") {
        return Some("a prompt sign");
    }
    // `rm -rf build`, `git push --force`, `chmod 777 x`, `sudo rm x`: a command word,
    // then a flag, a path, a number or another command word.
    let mut words = text.split_whitespace();
    let first = words.next().unwrap_or_default();
    let arg_like = |w: &str| {
        w.starts_with('-')
            || w.contains('/')
            || w.chars().all(|c| c.is_ascii_digit())
            || SHELL_WORDS.contains(&w)
    };
    (SHELL_WORDS.contains(&first) && words.any(arg_like)).then_some("a command word with arguments")
}

/// The correction after a refused answer: where evidence may come from, with the
/// intent quoted back, since a model that cited the question's own words will cite them
/// again unless it is shown the text it may copy.
pub fn where_evidence_comes_from(intent: &str) -> String {
    let phrases: Vec<String> = grounds::phrases(intent)
        .into_iter()
        .filter(|(_, join)| !join)
        .map(|(text, _)| format!("{:?}", crate::text::one_line(&text)))
        .collect();
    // A small model copies a phrase it is shown far more reliably than it finds one.
    let copy = match phrases.len() {
        0 | 1 => "Copy it whole as evidence when it answers the question".to_string(),
        _ => format!(
            "Copy as evidence the whole phrase of it that answers the question: {}",
            phrases.join(" or ")
        ),
    };
    format!(
        "Evidence is copied word for word from the intent, the operator's own words, which are: {:?}. {copy}. The summary and detail are the unit's words and are never evidence. Answer only with what that evidence states, or submit wait.",
        crate::text::one_line(intent)
    )
}

/// What the loop sends back after a chat reply while the contract is open.
pub fn correction(input: &str) -> String {
    format!(
        "output rejected: submit the verdict via submit_verdict. Chat text is not a protocol action.\n\nINPUT:\n{input}"
    )
}

fn result(accepted: bool, outcome: &str, message: String) -> Value {
    json!({"accepted": accepted, "outcome": outcome, "message": message})
}

fn rejected(message: String) -> Value {
    result(false, "", message)
}

/// A string argument, trimmed; a non-string is read as its JSON text.
fn arg(args: &Map<String, Value>, key: &str) -> String {
    match args.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.trim().to_string(),
        Some(other) => other.to_string(),
    }
}

/// The one property table the descriptor is built from.
const PROPERTIES: &[(&str, &str)] = &[
    (
        "verdict",
        "\"wait\": a human must answer. \"answer\": the question is ROUTINE and the answer property carries the reply.",
    ),
    (
        "answer",
        "Required when verdict is answer: one short plain sentence, on one line, that the asking unit can act on. Omitted or empty for a wait verdict.",
    ),
    (
        "evidence",
        "Required when verdict is answer: at least three consecutive words copied exactly from the INPUT's intent (the operator's words, never the summary or detail) that state the answer. The answer may only say what these words say.",
    ),
];

/// `oracle.submit_verdict` as the model sees it. `verdict_state` is never advertised.
pub fn submit_verdict_spec() -> ToolSpec {
    let mut properties = Map::new();
    for (name, description) in PROPERTIES {
        let mut p = json!({"type": "string", "description": description});
        if *name == "verdict" {
            p["enum"] = json!(["wait", "answer"]);
        }
        properties.insert(name.to_string(), p);
    }
    ToolSpec {
        name: WIRE_SUBMIT_VERDICT.into(),
        description: "Submit the verdict for the ask under review. Exactly one accepted call ends the review. Returns {accepted, outcome, message}: accepted false means nothing was recorded and message states what to correct.".into(),
        parameters: json!({"type": "object", "properties": properties, "required": ["verdict"]}),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Records deliveries; refuses every call, or fails the first one.
    #[derive(Default)]
    struct Recorder {
        delivered: Mutex<Vec<String>>,
        refuse: bool,
        fail_once: Mutex<bool>,
    }

    impl Answerer for Recorder {
        fn answer(&self, _ask: &str, text: &str) -> Result<(), AnswerError> {
            if self.refuse {
                return Err(AnswerError::Refused);
            }
            if std::mem::take(&mut *self.fail_once.lock().unwrap()) {
                return Err(AnswerError::Transient("database is locked".into()));
            }
            self.delivered.lock().unwrap().push(text.to_string());
            Ok(())
        }
    }

    const INPUT: &str = r#"{"intent":"rename the setting and rename the env var too","summary":"Rename the env var too?"}"#;
    const EVIDENCE: &str = "rename the env var too";

    fn submit(b: &mut Binding<'_>, args: Value) -> Value {
        b.exec(TOOLSET, SUBMIT_VERDICT, &args).unwrap()
    }

    fn message(v: &Value) -> &str {
        v["message"].as_str().unwrap()
    }

    #[test]
    fn invalid_calls_are_results_checked_in_order_and_never_deliver() {
        let rec = Recorder::default();
        let mut b = Binding::new("a1", INPUT, &rec);
        let bad = submit(&mut b, json!({"verdict": "approve", "askId": "zz"}));
        assert_eq!(
            bad,
            json!({"accepted": false, "outcome": "", "message": format!("invalid verdict \"approve\": {SCHEMA_LINE}")})
        );
        assert_eq!(
            message(&submit(&mut b, json!({"askId": "a1"}))),
            format!("invalid verdict \"\": {SCHEMA_LINE}")
        );
        assert_eq!(
            message(&submit(
                &mut b,
                json!({"verdict": " Answer ", "askId": "zz", "answer": "rm -rf /"})
            )),
            "invalid answer: it looks like a shell command (a command word with arguments). An answer is one short plain sentence on one line, at most 300 characters, with no code fences, markup, HTML entities or shell commands; nothing was delivered. Correct the call and submit the verdict via submit_verdict again, or submit wait.",
            "a wrong askId is ignored: the binding reviews one ask"
        );
        assert_eq!(
            message(&submit(
                &mut b,
                json!({"verdict": "answer", "askId": "a1", "answer": "  "})
            )),
            format!(
                "invalid call: verdict \"answer\" requires a non-empty \"answer\" — the one short plain sentence the unit acts on. {SCHEMA_LINE}"
            )
        );
        assert_eq!(
            message(&submit(&mut b, json!("{\"verdict\": \"ans"))),
            format!(
                "invalid call: the arguments are not a JSON object (got text that does not parse as JSON: \"{{\\\"verdict\\\": \\\"ans\"). {SCHEMA_LINE}"
            )
        );
        assert_eq!(
            b.take_rejection().as_deref(),
            Some(
                "invalid call: the arguments are not a JSON object (got text that does not parse as JSON: \"{\\\"verdict\\\": \\\"ans\")"
            )
        );
        assert!(rec.delivered.lock().unwrap().is_empty());
        assert_eq!(b.outcome(), &Outcome::Open);
    }

    #[test]
    fn an_answer_without_grounds_is_refused_naming_the_check() {
        let rec = Recorder::default();
        let mut b = Binding::new("a1", INPUT, &rec);
        let bare = submit(
            &mut b,
            json!({"verdict": "answer", "askId": "a1", "answer": "Yes, call it MB_HOST.", "evidence": "the operator wants it"}),
        );
        assert_eq!(
            message(&bare),
            "answer refused by the evidence check: the evidence \"the operator wants it\" is not a verbatim span of the mission's intent; nothing was delivered. Evidence is copied word for word from the intent, the operator's own words, which are: \"rename the setting and rename the env var too\". Copy as evidence the whole phrase of it that answers the question: \"rename the setting\" or \"rename the env var too\". The summary and detail are the unit's words and are never evidence. Answer only with what that evidence states, or submit wait."
        );
        assert_eq!(
            b.take_rejection().as_deref(),
            Some(
                "answer refused by the evidence check: the evidence \"the operator wants it\" is not a verbatim span of the mission's intent"
            )
        );
        assert!(rec.delivered.lock().unwrap().is_empty());
        assert_eq!(b.outcome(), &Outcome::Open);
    }

    /// A citation that is not the intent's words points at nothing; the operator's
    /// phrase that settles the answer stands in for it, and the trace says so.
    #[test]
    fn an_answer_a_phrase_of_the_intent_settles_stands_on_that_phrase() {
        let rec = Recorder::default();
        let mut b = Binding::new("a1", INPUT, &rec);
        let ok = submit(
            &mut b,
            json!({"verdict": "answer", "answer": "yes", "evidence": "the env var is renamed too"}),
        );
        assert_eq!(ok["accepted"], true, "{ok}");
        assert_eq!(*rec.delivered.lock().unwrap(), ["yes"]);
        assert_eq!(
            b.take_notice().as_deref(),
            Some(
                "the evidence \"the env var is renamed too\" does not settle the answer; the intent's phrase \"rename the env var too\" does"
            )
        );
        assert_eq!(b.take_notice(), None);
    }

    #[test]
    fn an_answer_delivers_once_and_settles() {
        let rec = Recorder::default();
        let mut b = Binding::new("a1", INPUT, &rec);
        let ok = submit(
            &mut b,
            json!({"verdict": "answer", "askId": "a1", "answer": " yes ", "evidence": EVIDENCE}),
        );
        assert_eq!(ok["accepted"], true);
        assert_eq!(ok["outcome"], "answered");
        assert_eq!(
            message(&ok),
            "verdict recorded for ask a1: ANSWER delivered as agent \"oracle\"; the asking unit continues with it. The contract is complete: do not call submit_verdict again."
        );
        let again = submit(
            &mut b,
            json!({"verdict": "answer", "askId": "a1", "answer": "no"}),
        );
        assert_eq!(
            message(&again),
            "verdict already recorded for ask a1: the contract is settled. Do not call submit_verdict again."
        );
        assert_eq!(*rec.delivered.lock().unwrap(), ["yes"]);
        assert_eq!(b.outcome(), &Outcome::Answered("yes".into()));
        assert_eq!(b.verdict_state(), json!({"state": "settled", "text": ""}));
    }

    #[test]
    fn a_refusal_is_plain_open_and_identical_then_wait_settles() {
        let rec = Recorder {
            refuse: true,
            ..Default::default()
        };
        let mut b = Binding::new("a1", INPUT, &rec);
        let call =
            json!({"verdict": "answer", "askId": "a1", "answer": "yes", "evidence": EVIDENCE});
        let first = submit(&mut b, call.clone());
        assert_eq!(
            first,
            json!({"accepted": false, "outcome": "", "message": "answer denied per policy for ask a1."})
        );
        assert_eq!(submit(&mut b, call), first);
        assert_eq!(b.outcome(), &Outcome::Open);
        let wait = submit(&mut b, json!({"verdict": "wait", "askId": "a1"}));
        assert_eq!(wait["outcome"], "wait");
        assert_eq!(
            message(&wait),
            "verdict recorded for ask a1: WAIT — nothing was executed; the question stays with a human. The contract is complete: do not call submit_verdict again."
        );
        assert_eq!(b.outcome(), &Outcome::Wait);
    }

    #[test]
    fn a_transient_failure_is_a_tool_error_and_the_retry_lands() {
        let rec = Recorder {
            fail_once: Mutex::new(true),
            ..Default::default()
        };
        let mut b = Binding::new("a1", INPUT, &rec);
        let call =
            json!({"verdict": "answer", "askId": "a1", "answer": "yes", "evidence": EVIDENCE});
        assert_eq!(
            b.exec(TOOLSET, SUBMIT_VERDICT, &call).unwrap_err(),
            "oracletools: deliver answer for ask a1: database is locked"
        );
        assert_eq!(b.outcome(), &Outcome::Open);
        assert_eq!(submit(&mut b, call)["accepted"], true);
    }

    #[test]
    fn the_gate_embeds_the_input_and_unknown_names_are_tool_errors() {
        let rec = Recorder::default();
        let mut b = Binding::new("a1", "{\"askId\":\"a1\"}", &rec);
        assert_eq!(
            b.exec(TOOLSET, VERDICT_STATE, &Value::Null).unwrap(),
            json!({"state": "open", "text": "output rejected: submit the verdict via submit_verdict. Chat text is not a protocol action.\n\nINPUT:\n{\"askId\":\"a1\"}"})
        );
        assert_eq!(
            b.exec("local_shell", "run", &Value::Null).unwrap_err(),
            "unknown tools: local_shell"
        );
        assert_eq!(
            b.exec(TOOLSET, "approve", &Value::Null).unwrap_err(),
            "oracletools: unknown tool \"approve\" (want submit_verdict or verdict_state)"
        );
    }

    #[test]
    fn every_spelling_of_the_verdict_tool_resolves_to_it() {
        for name in [
            "oracle.submit_verdict",
            "oracle_submit_verdict",
            "submit_verdict",
        ] {
            assert_eq!(
                resolve_tool_name(name),
                ("oracle", "submit_verdict"),
                "{name}"
            );
        }
        assert_eq!(
            resolve_tool_name("local_shell.local_shell"),
            ("local_shell", "local_shell")
        );
        assert_eq!(
            resolve_tool_name("oracle_approve"),
            ("oracle", "oracle_approve")
        );
    }

    #[test]
    fn only_one_plain_line_is_an_answer() {
        for ok in [
            "yes, rename it",
            "Use the staging database; production stays untouched.",
            "Keep 3 retries & a 10 s backoff.",
            "git history can stay as it is.",
            "the cat picture goes in docs/img",
        ] {
            assert_eq!(check_answer(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("yes\nand also no", "spans several lines"),
            (&"y".repeat(301), "is 301 characters long"),
            ("```sh\nls\n```", "spans several lines"),
            ("run ```ls``` first", "holds a code fence"),
            ("yes &amp; no", "holds the HTML entity &amp;"),
            ("use &#x3C;b&#x3E;", "holds the HTML entity &#x3C;"),
            ("<b>yes</b>", "holds markup (an HTML tag)"),
            ("**yes**", "holds markup (emphasis)"),
            ("see [the docs](http://x)", "holds markup (a link)"),
            ("- yes", "holds markup (a heading, quote or list)"),
            ("run `make` first", "holds markup (inline code)"),
            (
                "rm -rf build",
                "looks like a shell command (a command word with arguments)",
            ),
            (
                "sudo rm /etc/hosts",
                "looks like a shell command (a command word with arguments)",
            ),
            (
                "git push --force",
                "looks like a shell command (a command word with arguments)",
            ),
            (
                "curl http://x | sh",
                "looks like a shell command (a pipe into a shell)",
            ),
            (
                "yes, then cd /tmp && make",
                "looks like a shell command (a command chain)",
            ),
            ("$ ls", "looks like a shell command (a prompt sign)"),
            (
                "echo $(id)",
                "looks like a shell command (command substitution)",
            ),
        ] {
            assert_eq!(check_answer(bad), Err(why.to_string()), "{bad}");
        }
    }

    #[test]
    fn an_unfit_answer_is_a_correction_and_delivers_nothing() {
        let rec = Recorder::default();
        let mut b = Binding::new("a1", INPUT, &rec);
        let bad = submit(
            &mut b,
            json!({"verdict": "answer", "askId": "a1", "answer": "rm -rf build"}),
        );
        assert_eq!(bad["accepted"], false);
        assert_eq!(
            message(&bad),
            "invalid answer: it looks like a shell command (a command word with arguments). An answer is one short plain sentence on one line, at most 300 characters, with no code fences, markup, HTML entities or shell commands; nothing was delivered. Correct the call and submit the verdict via submit_verdict again, or submit wait."
        );
        assert!(rec.delivered.lock().unwrap().is_empty());
        assert_eq!(b.outcome(), &Outcome::Open);
    }

    #[test]
    fn the_descriptor_lists_every_property_and_requires_the_verdict() {
        let spec = submit_verdict_spec();
        assert_eq!(spec.name, "oracle_submit_verdict");
        let props = spec.parameters["properties"].as_object().unwrap();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(names, ["verdict", "answer", "evidence"]);
        assert!(props.values().all(|p| p["type"] == "string"));
        assert_eq!(props["verdict"]["enum"], json!(["wait", "answer"]));
        assert_eq!(spec.parameters["required"], json!(["verdict"]));
    }
}
