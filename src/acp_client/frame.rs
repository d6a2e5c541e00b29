//! Framing of a unit's stdio: newline-delimited JSON, bounded both ways. A line
//! longer than [`MAX_FRAME_BYTES`] is dropped as it streams in (never buffered
//! whole), and a write the unit does not take within the stdin deadline fails, so
//! neither a flooding nor a deaf agent can grow the host's memory or wedge its turn.

use std::io;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The longest line accepted from a unit's stdout.
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;
/// How much of a garbage line is kept to show the operator.
const SHOWN_BYTES: usize = 400;
/// How long a message may wait to be written to a unit's stdin before the unit is
/// declared deaf.
pub const STDIN_DEADLINE: Duration = Duration::from_secs(30);
/// Shortens [`STDIN_DEADLINE`] in debug builds only.
pub const STDIN_DEADLINE_ENV: &str = "MISSIONBOARD_UNIT_STDIN_DEADLINE_MS";

/// The stdin deadline in force.
pub fn stdin_deadline() -> Duration {
    // A test hook: a test of a unit that stops reading its stdin must see it
    // declared deaf in seconds, not after the full deadline. A release build never
    // reads the variable, so nothing in an operator's environment can change it.
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var(STDIN_DEADLINE_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Duration::from_millis(ms);
    }
    STDIN_DEADLINE
}

/// One line from a unit's stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Nothing but whitespace: skipped.
    Blank,
    /// A JSON value, for the JSON-RPC layer to make sense of.
    Message(String),
    /// Not JSON (or over the frame limit): what to show of it.
    Garbage(String),
}

/// Classify one complete line (its newline may still be on it).
pub fn decode(line: Vec<u8>) -> Frame {
    let text = match String::from_utf8(line) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    let mut text = text;
    text.truncate(text.trim_end().len());
    if text.trim_start().is_empty() {
        return Frame::Blank;
    }
    if serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok() {
        return Frame::Message(text);
    }
    Frame::Garbage(shown(text.as_bytes()))
}

fn shown(bytes: &[u8]) -> String {
    let mut end = bytes.len().min(SHOWN_BYTES);
    // Cut on a character boundary when the text is UTF-8.
    while end > 0 && end < bytes.len() && (bytes[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// What a `session/update` frame from a unit becomes on the host, if anything: the
/// message layer's view of one line (the fuzz target drives this).
pub fn decode_update(message: &str) -> Option<super::UnitEvent> {
    // Most frames of a busy unit are not updates (responses, requests, a session's
    // whole history): those are passed over without a parse. (JSON may escape the
    // slash.)
    if !message.contains("session/update") && !message.contains("session\\/update") {
        return None;
    }
    let mut value: serde_json::Value = serde_json::from_str(message).ok()?;
    if value.get("method")? != "session/update" {
        return None;
    }
    let params = value.get_mut("params")?.take();
    let notification: agent_client_protocol::v1::schema::SessionNotification =
        serde_json::from_value(params).ok()?;
    super::convert::session_update(notification.update)
}

/// Read the next line, holding at most [`MAX_FRAME_BYTES`] of it. `None` at EOF.
pub async fn read_frame<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<Frame>> {
    let mut line = Vec::new();
    let mut dropped = 0usize;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            if line.is_empty() && dropped == 0 {
                return Ok(None);
            }
            break;
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let n = chunk.len();
        if dropped == 0 && line.len() + n <= MAX_FRAME_BYTES {
            line.extend_from_slice(chunk);
        } else {
            // Over the limit: keep the head to show, count (and drop) the rest.
            if dropped == 0 {
                dropped = line.len();
                line.truncate(SHOWN_BYTES);
            }
            dropped += n;
        }
        reader.consume(n);
        if done {
            break;
        }
    }
    if dropped > 0 {
        return Ok(Some(Frame::Garbage(format!(
            "(a line of {} MiB or more, over the {} MiB frame limit, dropped) {}",
            dropped / (1024 * 1024),
            MAX_FRAME_BYTES / (1024 * 1024),
            shown(&line)
        ))));
    }
    Ok(Some(decode(line)))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = tokio::io::BufReader::with_capacity(1024, input);
        let mut out = Vec::new();
        while let Some(f) = read_frame(&mut reader).await.unwrap() {
            out.push(f);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_messages_blanks_or_garbage() {
        let got = frames(b"{\"a\":1}\r\n  \nnot json\n[1,2]").await;
        assert_eq!(
            got,
            vec![
                Frame::Message("{\"a\":1}".into()),
                Frame::Blank,
                Frame::Garbage("not json".into()),
                Frame::Message("[1,2]".into()),
            ]
        );
    }

    #[tokio::test]
    async fn an_oversized_line_is_dropped_and_the_next_one_still_reads() {
        let mut input = vec![b'x'; MAX_FRAME_BYTES + 10];
        input.extend_from_slice(b"\n{\"ok\":true}\n");
        let got = frames(&input).await;
        assert_eq!(got.len(), 2);
        match &got[0] {
            Frame::Garbage(text) => {
                assert!(
                    text.starts_with(
                        "(a line of 8 MiB or more, over the 8 MiB frame limit, dropped) xxx"
                    ),
                    "{text}"
                );
                assert!(text.len() < 500);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(got[1], Frame::Message("{\"ok\":true}".into()));
    }

    #[test]
    fn a_session_update_frame_becomes_a_unit_event() {
        let line = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#;
        assert_eq!(
            decode_update(line),
            Some(super::super::UnitEvent::AgentText {
                text: "hi".into(),
                message: None
            })
        );
        assert_eq!(
            decode_update(&line.replace("session/update", r"session\/update")),
            decode_update(line),
            "JSON may escape the method's slash"
        );
        assert_eq!(
            decode_update(r#"{"method":"session/update","params":7}"#),
            None
        );
        assert_eq!(
            decode_update(r#"{"jsonrpc":"2.0","id":1,"result":{"update":"session"}}"#),
            None
        );
    }

    #[test]
    fn invalid_utf8_is_shown_lossily() {
        assert_eq!(
            decode(b"\xff\xfe oops\n".to_vec()),
            Frame::Garbage("\u{fffd}\u{fffd} oops".into())
        );
    }
}
