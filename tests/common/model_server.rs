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
    /// tool-call arguments is replaced by that field of the request's newest JSON user
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
    gets: Arc<Mutex<Vec<String>>>,
}

/// How the server describes itself and how much it holds.
#[derive(Debug, Clone)]
pub struct Serves {
    /// What `GET /v1/models` lists.
    pub models: Vec<String>,
    /// A context window the server enforces, counting a token per three bytes of
    /// the request (more than a client's four-byte estimate, as real tokenizers
    /// often do), and reports as `usage.prompt_tokens`.
    pub context: Option<u64>,
    /// Whether `GET /props` reports that window (llama.cpp's server does, and its
    /// refusal names `n_ctx`); otherwise `/props` is a 404 and the refusal is
    /// OpenAI's `context_length_exceeded` wording.
    pub props: bool,
}

impl Default for Serves {
    fn default() -> Self {
        Serves {
            models: vec!["test-model".into()],
            context: None,
            props: false,
        }
    }
}

impl ModelServer {
    /// Serve `replies` in order on a fresh loopback port. Past the last reply, a
    /// valid request gets a 500 naming the exhaustion.
    pub fn start(replies: Vec<Reply>) -> ModelServer {
        Self::serving(replies, Serves::default())
    }

    /// [`ModelServer::start`], describing itself and holding what `serves` says.
    pub fn serving(replies: Vec<Reply>, serves: Serves) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let gets = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(std::collections::VecDeque::from(replies)));
        let shared = Arc::new(Shared {
            recorded: requests.clone(),
            gets: gets.clone(),
            replies,
            serves,
        });
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = shared.clone();
                std::thread::spawn(move || serve_connection(stream, &shared));
            }
        });
        ModelServer {
            url,
            requests,
            gets,
        }
    }

    /// Every completion request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

    /// The paths of every GET received so far, in order.
    pub fn gets(&self) -> Vec<String> {
        self.gets.lock().unwrap().clone()
    }
}

struct Shared {
    recorded: Arc<Mutex<Vec<Value>>>,
    gets: Arc<Mutex<Vec<String>>>,
    replies: Arc<Mutex<std::collections::VecDeque<Reply>>>,
    serves: Serves,
}

/// The server's token count for `request`: a token per three bytes of its message
/// texts, the calls they carry and its tool schemas, and a few per message.
pub fn served_tokens(request: &Value) -> u64 {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let text: usize = messages
        .iter()
        .map(|m| {
            m["content"].as_str().unwrap_or_default().len() + m["tool_calls"].to_string().len()
        })
        .sum();
    let tools: usize = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"].to_string().len())
        .sum();
    ((text + tools) / 3 + 4 * messages.len()) as u64
}

/// Requests on one (keep-alive) connection, until the client closes it.
fn serve_connection(stream: TcpStream, shared: &Shared) {
    let (recorded, replies, serves) = (&shared.recorded, &shared.replies, &shared.serves);
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut words = line.split_whitespace();
        let (method, path) = (
            words.next().unwrap_or_default().to_string(),
            words.next().unwrap_or_default().to_string(),
        );
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
        if method == "GET" {
            shared.gets.lock().unwrap().push(path.clone());
            let (status, answer) = describe(&path, serves);
            if respond(&mut writer, status, &answer).is_err() {
                return;
            }
            continue;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        recorded.lock().unwrap().push(request.clone());
        let refusal = violation(&request).map(|why| {
            (
                400,
                json!({"error": {"message": why, "type": "invalid_request_error"}}).to_string(),
            )
        });
        let (status, answer) = match refusal.or_else(|| too_long(&request, serves)) {
            Some(refused) => refused,
            None => match next_reply(replies) {
                Some(Reply::Message(message) | Reply::Always(message)) => {
                    (200, completion(&request, message, serves))
                }
                Some(Reply::Status(status, body)) => (status, body),
                Some(Reply::Hang) => loop {
                    std::thread::park();
                },
                None => (500, "{\"error\":\"the test's replies are used up\"}".into()),
            },
        };
        if respond(&mut writer, status, &answer).is_err() {
            return;
        }
    }
}

fn respond(writer: &mut TcpStream, status: u16, answer: &str) -> std::io::Result<()> {
    let response = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{answer}",
        answer.len()
    );
    writer.write_all(response.as_bytes())
}

/// `GET /v1/models` and llama.cpp's `GET /props`; anything else is a 404.
fn describe(path: &str, serves: &Serves) -> (u16, String) {
    if path == "/v1/models" {
        let data: Vec<Value> = serves
            .models
            .iter()
            .map(|m| json!({"id": m, "object": "model", "owned_by": "test"}))
            .collect();
        return (200, json!({"object": "list", "data": data}).to_string());
    }
    match (path, serves.context) {
        ("/props", Some(n_ctx)) if serves.props => (
            200,
            json!({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}).to_string(),
        ),
        _ => (
            404,
            json!({"error": {"code": 404, "message": "File Not Found"}}).to_string(),
        ),
    }
}

/// The refusal of a request that does not fit the context window, worded as
/// llama.cpp's server or as OpenAI (and llama-cpp-python) word it.
fn too_long(request: &Value, serves: &Serves) -> Option<(u16, String)> {
    let n_ctx = serves.context?;
    let prompt = served_tokens(request);
    let reply = request["max_tokens"].as_u64().unwrap_or(0);
    if prompt + reply <= n_ctx {
        return None;
    }
    let body = if serves.props {
        json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                         "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": n_ctx}})
    } else {
        json!({"error": {"message": format!(
            "This model's maximum context length is {n_ctx} tokens. However, you requested {} tokens ({prompt} in the messages, {reply} in the completion). Please reduce the length of the messages or completion.",
            prompt + reply),
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
    };
    Some((400, body.to_string()))
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

fn completion(request: &Value, mut message: Value, serves: &Serves) -> String {
    // The newest user message that is a JSON object: a chain's worked examples come
    // before the INPUT under review, corrections (plain text) after it.
    let input = request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .find_map(|c| match serde_json::from_str::<Value>(c) {
            Ok(Value::Object(o)) => Some(o),
            _ => None,
        })
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
    let prompt = if serves.context.is_some() {
        served_tokens(request)
    } else {
        10
    };
    json!({"id": "chatcmpl-test", "object": "chat.completion", "model": request["model"],
           "choices": [{"index": 0, "message": message, "finish_reason": finish}],
           "usage": {"prompt_tokens": prompt, "completion_tokens": 5, "total_tokens": prompt + 5}})
    .to_string()
}
