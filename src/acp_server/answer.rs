//! `/answer`, `/approve` and `/deny` in an editor session: the person at the editor
//! settles what a mission this session fired is waiting on, as its operator. The
//! words go through the one answer path as an operator's verdict: never attributed
//! to the session's agent, never counted against the envelope's agent-answer bound.
//! (The session's model answers through `mission_answer`, the bounded agent answer.)

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, UnstructuredCommandInput,
};

use super::Services;
use crate::asks::{Ask, Asks, OperatorVerdict};
use crate::ops::answer::{self, Answerer};

/// A slash command that settles an ask.
#[derive(Debug, PartialEq, Eq)]
pub enum Settle {
    /// `/answer <ask> <words>`.
    Answer { ask: String, words: String },
    /// `/approve [ask]` (true) or `/deny [ask]` (false).
    Verdict { ask: Option<String>, approve: bool },
}

/// The commands, for `available_commands_update`.
pub fn available() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new(
            "answer",
            "Answer a question a mission fired here is waiting on, as its operator",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("<ask-id> <your answer>"),
        )),
        AvailableCommand::new(
            "approve",
            "Approve a call a mission fired here is waiting on, as its operator",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("[ask-id]"),
        )),
        AvailableCommand::new(
            "deny",
            "Deny a call a mission fired here is waiting on, as its operator",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("[ask-id]"),
        )),
    ]
}

/// The prompt as one of these commands, if it is one. `Err`: the command, misused.
pub fn parse(prompt: &str) -> Option<Result<Settle, String>> {
    let prompt = prompt.trim();
    let (name, rest) = match prompt.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (prompt, ""),
    };
    Some(match name {
        "/answer" => match rest.split_once(char::is_whitespace) {
            Some((ask, words)) if !words.trim().is_empty() => Ok(Settle::Answer {
                ask: ask.to_string(),
                words: words.trim().to_string(),
            }),
            _ => {
                Err("usage: /answer <ask-id> <your answer> — the ask id is in the question".into())
            }
        },
        "/approve" | "/deny" => {
            let mut words = rest.split_whitespace();
            let ask = words.next().map(str::to_string);
            if words.next().is_some() {
                return Some(Err(format!(
                    "usage: {name} [ask-id] — it takes one ask id (or none, when one ask is waiting)"
                )));
            }
            Ok(Settle::Verdict {
                ask,
                approve: name == "/approve",
            })
        }
        _ => return None,
    })
}

/// Settle the ask as the operator of session `session`. The reply to show, or the
/// refusal.
pub async fn run(svc: &Services, session: &str, settle: Settle) -> Result<String, String> {
    let (named, verdict) = match settle {
        Settle::Answer { ask, words } => (Some(ask), OperatorVerdict::Answer(words)),
        Settle::Verdict { ask, approve } => (
            ask,
            if approve {
                OperatorVerdict::Approve
            } else {
                OperatorVerdict::Deny
            },
        ),
    };
    let (lookup, session_id) = (svc.clone(), session.to_string());
    let ask =
        crate::store::blocking(move || waiting_ask(&lookup, &session_id, named.as_deref())).await?;
    let host = svc.host.clone();
    let answered = answer::answer(
        &host,
        &ask.id,
        Answerer::Operator(&verdict),
        crate::asks::Surface::Editor,
    )
    .await
    .map_err(|e| format!("{e:#}"))?;
    tracing::info!(session, ask = %ask.id, ?answered, "the session's operator settled an ask");
    let what = match &verdict {
        OperatorVerdict::Answer(_) | OperatorVerdict::Fields(_) => "answered",
        OperatorVerdict::Approve => "approved",
        OperatorVerdict::ApproveAlways => "approved always",
        OperatorVerdict::Deny => "denied",
    };
    Ok(format!(
        "You {what} ask {} as the operator ({}): the unit has your verdict.",
        ask.id,
        crate::text::sanitize(&crate::asks::one_line_summary(&ask.args_summary))
    ))
}

/// The pending ask `named` (an id or a prefix) of a mission this session fired; with
/// none named, the only one waiting.
fn waiting_ask(svc: &Services, session: &str, named: Option<&str>) -> Result<Ask, String> {
    let asks = Asks::new(svc.host.store().clone());
    let missions = svc.host.missions();
    let fired_here = |ask: &Ask| {
        ask.mission_id
            .as_deref()
            .and_then(|m| missions.get(m).ok().flatten())
            .is_some_and(|m| m.parent_session_id.as_deref() == Some(session))
    };
    let not_here = |id: &str| {
        format!(
            "{id:?} is not an ask a mission fired from this session is waiting on (already settled, expired, or not this session's)"
        )
    };
    match named {
        Some(id) => {
            let ask = asks.find(id).map_err(|e| e.to_string())?;
            if !(ask.is_pending() && fired_here(&ask)) {
                return Err(not_here(id));
            }
            Ok(ask)
        }
        None => {
            let mut waiting: Vec<Ask> = asks
                .pending(200)
                .map_err(|e| e.to_string())?
                .into_iter()
                .filter(|a| fired_here(a))
                .collect();
            match waiting.len() {
                0 => Err("nothing a mission fired from this session is waiting on".into()),
                1 => Ok(waiting.remove(0)),
                n => Err(format!(
                    "{n} asks are waiting; name one: {}",
                    waiting
                        .iter()
                        .map(|a| a.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_commands_and_their_misuse() {
        assert_eq!(
            parse(" /answer 1a2b yes, and rename it too "),
            Some(Ok(Settle::Answer {
                ask: "1a2b".into(),
                words: "yes, and rename it too".into()
            }))
        );
        assert!(matches!(parse("/answer 1a2b"), Some(Err(_))));
        assert_eq!(
            parse("/approve"),
            Some(Ok(Settle::Verdict {
                ask: None,
                approve: true
            }))
        );
        assert_eq!(
            parse("/deny 1a2b"),
            Some(Ok(Settle::Verdict {
                ask: Some("1a2b".into()),
                approve: false
            }))
        );
        assert!(matches!(parse("/deny a b"), Some(Err(_))));
        assert_eq!(parse("/answers x y"), None);
        assert_eq!(parse("please /approve"), None);
    }
}
