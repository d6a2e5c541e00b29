//! Keeping the conversation inside the model's context window.
//!
//! Tokens are estimated at four bytes each (the usual figure for English prose);
//! the turn scales the estimate by the server's own count once it has one, and by
//! four thirds before (code, JSON and tool schemas run nearer three bytes a token). Every tool output is cut to [`TOOL_OUTPUT_LIMIT`] before it
//! joins the dialog, and before each model call the oldest tool outputs are
//! elided, then the oldest exchanges dropped, until the request fits.

use crate::model::{ChatMessage, Role, ToolSpec};

/// Bytes per token in the estimate.
const BYTES_PER_TOKEN: usize = 4;
/// The per-message overhead servers add (role markers, separators).
const MESSAGE_OVERHEAD: usize = 4;
/// The longest tool output kept in the dialog, in bytes (about 3k tokens).
pub const TOOL_OUTPUT_LIMIT: usize = 12_000;
/// What replaces an output elided to make room.
pub const ELIDED: &str = "[output elided to keep the conversation inside the context window; run the tool again if you still need it]";

/// Estimated tokens for `text`.
pub fn tokens(text: &str) -> u64 {
    text.len().div_ceil(BYTES_PER_TOKEN) as u64
}

/// Estimated tokens for one message.
fn message_tokens(m: &ChatMessage) -> u64 {
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| c.name.len() + c.arguments.to_string().len())
        .sum();
    tokens(m.content.as_deref().unwrap_or("")) + (calls / BYTES_PER_TOKEN + MESSAGE_OVERHEAD) as u64
}

/// Estimated tokens for a whole request: the messages plus the tool schemas.
pub fn request_tokens(messages: &[ChatMessage], tools: &[ToolSpec]) -> u64 {
    // Each tool as it goes on the wire, keys and quotes too: servers render the whole
    // object into the prompt, and a dozen tools' worth of JSON is a hundred tokens.
    let schemas: usize = tools
        .iter()
        .map(|t| {
            serde_json::json!({"name": t.name, "description": t.description, "parameters": t.parameters})
                .to_string()
                .len()
        })
        .sum();
    messages.iter().map(message_tokens).sum::<u64>() + (schemas / BYTES_PER_TOKEN) as u64
}

/// Cut `text` to [`TOOL_OUTPUT_LIMIT`] bytes (on a character boundary), saying how
/// much was left out.
pub fn truncate_output(text: String) -> String {
    if text.len() <= TOOL_OUTPUT_LIMIT {
        return text;
    }
    let mut cut = TOOL_OUTPUT_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}\n[output truncated: {} more bytes not shown; narrow the request to see them]",
        &text[..cut],
        text.len() - cut
    )
}

/// Shrink `messages` until the request fits in `budget` tokens. The system
/// message, the first user message (the mission) and the newest exchange are
/// never touched. Returns how many messages were elided or dropped.
pub fn fit(messages: &mut Vec<ChatMessage>, tools: &[ToolSpec], budget: u64) -> usize {
    let mut changed = 0;
    // The newest assistant message and what follows it stay whole.
    let protected_from = |messages: &[ChatMessage]| {
        messages
            .iter()
            .rposition(|m| m.role == Role::Assistant)
            .unwrap_or(messages.len())
    };
    // First pass: elide old tool outputs, oldest first.
    while request_tokens(messages, tools) > budget {
        let limit = protected_from(messages);
        let Some(old) = messages[..limit]
            .iter_mut()
            .find(|m| m.role == Role::Tool && m.content.as_deref() != Some(ELIDED))
        else {
            break;
        };
        old.content = Some(ELIDED.to_string());
        changed += 1;
    }
    // Second pass: drop whole old exchanges (an assistant message and the tool
    // results answering it), oldest first, after the first user message.
    let first_user = messages.iter().position(|m| m.role == Role::User);
    while request_tokens(messages, tools) > budget {
        let limit = protected_from(messages);
        let start = first_user.map_or(1, |i| i + 1);
        let Some(at) = (start..limit).find(|&i| messages[i].role == Role::Assistant) else {
            break;
        };
        let end = (at + 1..messages.len())
            .find(|&i| messages[i].role != Role::Tool)
            .unwrap_or(messages.len());
        if end > limit {
            break;
        }
        changed += end - at;
        messages.drain(at..end);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;
    use serde_json::json;

    fn exchange(id: &str, output: &str) -> Vec<ChatMessage> {
        vec![
            ChatMessage::assistant(
                None,
                vec![ToolCall {
                    id: id.into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "a"}),
                }],
            ),
            ChatMessage::tool_result(id, output),
        ]
    }

    #[test]
    fn old_outputs_go_first_then_old_exchanges_and_the_newest_stays() {
        let big = "x".repeat(4000);
        let mut messages = vec![ChatMessage::system("sys"), ChatMessage::user("the mission")];
        for id in ["a", "b", "c"] {
            messages.extend(exchange(id, &big));
        }
        let before = request_tokens(&messages, &[]);
        assert!(before > 3000);
        fit(&mut messages, &[], 1500);
        assert_eq!(messages.len(), 8, "eliding was enough");
        assert_eq!(messages[3].content.as_deref(), Some(ELIDED));
        assert_eq!(messages[5].content.as_deref(), Some(ELIDED));
        assert_eq!(messages[7].content.as_deref(), Some(big.as_str()));

        fit(&mut messages, &[], 1030);
        assert_eq!(messages.len(), 4, "old exchanges dropped whole");
        assert_eq!(messages[1].content.as_deref(), Some("the mission"));
        assert_eq!(messages[3].content.as_deref(), Some(big.as_str()));
    }

    #[test]
    fn long_outputs_are_cut_on_a_character_boundary() {
        let text = "é".repeat(TOOL_OUTPUT_LIMIT);
        let cut = truncate_output(text);
        assert!(
            cut.contains("[output truncated: "),
            "{}",
            &cut[cut.len() - 80..]
        );
        assert!(cut.len() < TOOL_OUTPUT_LIMIT + 200);
    }
}
