//! A loopback OpenAI-compatible model server that validates every request the way
//! llama.cpp's server, vLLM and OpenAI do, and refuses a bad one with HTTP 400:
//! `max_tokens` present, function names matching `^[A-Za-z0-9_-]+$`, and no message
//! whose `content` is null (llama.cpp rejects an assistant tool-call message that
//! carries one). Valid requests get the next scripted reply. Every request is
//! recorded, valid or not, so a test can count them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// What the server answers to one valid request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A chat completion with this assistant message (`{{input.<field>}}` in its
    /// tool-call arguments is replaced by that field of the request's first user
    /// message, the oracle's INPUT: `{{input.askId}}`, `{{input.intent}}`).
    Message(Value),
    /// This status and body, whatever the request said.
    Status(u16, String),
    /// Read the request and never answer it.
    Hang,
    /// This assistant message for this request and every later one: a model that
    /// says the same whatever it is asked.
    Always(Value),
}

/// A reply that calls `name` with `arguments`.
pub fn tool_call(name: &str, arguments: Value) -> Reply {
    Reply::Message(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": format!("call-{name}"), "type": "function",
         "function": {"name": name, "arguments": arguments.to_string()}}]}))
}

/// A plain text reply.
pub fn text(content: &str) -> Reply {
    Reply::Message(json!({"role": "assistant", "content": content}))
}

pub struct ModelServer {
    /// The `/v1` base URL to configure.
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl ModelServer {
    /// Serve `replies` in order on a fresh loopback port. Past the last reply, a
    /// valid request gets a 500 naming the exhaustion.
    pub fn start(replies: Vec<Reply>) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(std::collections::VecDeque::from(replies)));
        let recorded = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (recorded, replies) = (recorded.clone(), replies.clone());
                std::thread::spawn(move || serve_connection(stream, &recorded, &replies));
            }
        });
        ModelServer { url, requests }
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// Requests on one (keep-alive) connection, until the client closes it.
fn serve_connection(
    stream: TcpStream,
    recorded: &Mutex<Vec<Value>>,
    replies: &Mutex<std::collections::VecDeque<Reply>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line.trim().is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        recorded.lock().unwrap().push(request.clone());
        let (status, answer) = match violation(&request) {
            Some(why) => (
                400,
                json!({"error": {"message": why, "type": "invalid_request_error"}}).to_string(),
            ),
            None => match next_reply(replies) {
                Some(Reply::Message(message) | Reply::Always(message)) => {
                    (200, completion(&request, message))
                }
                Some(Reply::Status(status, body)) => (status, body),
                Some(Reply::Hang) => loop {
                    std::thread::park();
                },
                None => (500, "{\"error\":\"the test's replies are used up\"}".into()),
            },
        };
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
            answer.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// The next scripted reply: an `Always` stays at the front.
fn next_reply(replies: &Mutex<std::collections::VecDeque<Reply>>) -> Option<Reply> {
    let mut replies = replies.lock().unwrap();
    match replies.front() {
        Some(Reply::Always(_)) => replies.front().cloned(),
        _ => replies.pop_front(),
    }
}

/// Why llama.cpp, vLLM or OpenAI would refuse `request`, if they would.
fn violation(request: &Value) -> Option<String> {
    if !request["max_tokens"].is_u64() {
        return Some("max_tokens is required by this server".into());
    }
    for tool in request["tools"].as_array().into_iter().flatten() {
        let name = tool["function"]["name"].as_str().unwrap_or_default();
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Some(format!(
                "Invalid 'tools[].function.name': string does not match pattern '^[a-zA-Z0-9_-]+$': {name:?}"
            ));
        }
    }
    let messages = request["messages"].as_array()?;
    for (i, m) in messages.iter().enumerate() {
        if !m["content"].is_string() {
            return Some(format!(
                "messages[{i}] ({}): content must be a string, got {}",
                m["role"], m["content"]
            ));
        }
    }
    None
}

fn completion(request: &Value, mut message: Value) -> String {
    let input = request["messages"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .and_then(|c| serde_json::from_str::<Value>(c).ok())
        .and_then(|input| input.as_object().cloned())
        .unwrap_or_default();
    if let Some(calls) = message["tool_calls"].as_array_mut() {
        for call in calls {
            if let Some(args) = call["function"]["arguments"].as_str() {
                let mut filled = args.to_string();
                for (field, value) in &input {
                    if let Some(text) = value.as_str() {
                        // Spliced into JSON text: the value goes in JSON-escaped.
                        let escaped = json!(text).to_string();
                        filled = filled.replace(
                            &format!("{{{{input.{field}}}}}"),
                            &escaped[1..escaped.len() - 1],
                        );
                    }
                }
                call["function"]["arguments"] = json!(filled);
            }
        }
    }
    let finish = if message["tool_calls"].is_array() {
        "tool_calls"
    } else {
        "stop"
    };
    json!({"id": "chatcmpl-test", "object": "chat.completion", "model": request["model"],
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    .to_string()
}
