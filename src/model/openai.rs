//! The HTTP client for OpenAI-compatible chat completions.

use std::time::Duration;

use serde_json::Value;

use super::{ChatReply, ChatRequest, ModelError, ModelSettings, ToolCall, Usage};

/// Attempts per call for transient failures (HTTP 429 and 5xx, timeouts).
const ATTEMPTS: u32 = 3;
/// Backoff before the second attempt; doubled each time after.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest error body quoted back to the operator.
const BODY_QUOTE: usize = 300;

#[derive(Debug)]
pub struct OpenAiClient {
    http: reqwest::Client,
    url: String,
    base_url: String,
    model: String,
    api_key: Option<String>,
    timeout: Duration,
}

impl OpenAiClient {
    pub fn new(settings: &ModelSettings) -> Result<Self, ModelError> {
        let model = settings.model.clone().filter(|m| !m.trim().is_empty()).ok_or_else(|| {
            ModelError::Settings(
                "no model is configured: set one with `missionboard config set model-name <name>` (for Ollama, e.g. qwen3:8b)"
                    .to_string(),
            )
        })?;
        let api_key = match &settings.api_key_env {
            Some(var) => match std::env::var(var) {
                Ok(key) if !key.is_empty() => Some(key),
                _ => {
                    return Err(ModelError::Settings(format!(
                        "model-api-key-env names {var}, but {var} is not set in this environment; export it or `missionboard config unset model-api-key-env`"
                    )));
                }
            },
            None => None,
        };
        // reqwest is built without a default TLS provider (see Cargo.toml); install ring's.
        // A second install fails harmlessly: some earlier client already did it.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| ModelError::Settings(format!("cannot build the HTTP client: {e}")))?;
        let base_url = settings.base_url.trim_end_matches('/').to_string();
        Ok(OpenAiClient {
            http,
            url: format!("{base_url}/chat/completions"),
            base_url,
            model,
            api_key,
            timeout: settings.timeout,
        })
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// One completion; `on_retry` hears of each failed attempt that is tried again
    /// (the attempt's number, its error and the backoff before the next).
    pub async fn complete(
        &self,
        request: &ChatRequest,
        on_retry: &(dyn Fn(u32, &ModelError, Duration) + Sync),
    ) -> Result<ChatReply, ModelError> {
        let body = request.to_wire(&self.model);
        let mut backoff = FIRST_BACKOFF;
        let mut attempt = 1;
        loop {
            match self.attempt(&body).await {
                Err(e) if attempt < ATTEMPTS && is_transient(&e) => {
                    tracing::warn!(attempt, error = %e, "model call failed; retrying");
                    on_retry(attempt, &e, backoff);
                    tokio::time::sleep(backoff).await;
                    backoff *= 2;
                    attempt += 1;
                }
                outcome => return outcome,
            }
        }
    }

    async fn attempt(&self, body: &Value) -> Result<ChatReply, ModelError> {
        let mut post = self.http.post(&self.url).json(body);
        if let Some(key) = &self.api_key {
            post = post.bearer_auth(key);
        }
        let response = post.send().await.map_err(|e| self.transport_error(e))?;
        let status = response.status();
        let text = response.text().await.map_err(|e| self.transport_error(e))?;
        if !status.is_success() {
            return Err(ModelError::Status {
                url: self.url.clone(),
                status: status.as_u16(),
                body: quote(&text),
            });
        }
        let value: Value = serde_json::from_str(&text).map_err(|e| ModelError::BadReply {
            url: self.url.clone(),
            detail: format!("{e}: {}", quote(&text)),
        })?;
        parse_reply(&value).map_err(|detail| ModelError::BadReply {
            url: self.url.clone(),
            detail,
        })
    }

    /// `GET {url}` as JSON, within `timeout`, with the endpoint's key.
    async fn get_json(&self, url: &str, timeout: Duration) -> Result<Value, ModelError> {
        let mut get = self.http.get(url).timeout(timeout);
        if let Some(key) = &self.api_key {
            get = get.bearer_auth(key);
        }
        let response = get
            .send()
            .await
            .map_err(|e| self.transport_error_at(url, timeout, e))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| self.transport_error_at(url, timeout, e))?;
        if !status.is_success() {
            return Err(ModelError::Status {
                url: url.to_string(),
                status: status.as_u16(),
                body: quote(&text),
            });
        }
        serde_json::from_str(&text).map_err(|e| ModelError::BadReply {
            url: url.to_string(),
            detail: format!("{e}: {}", quote(&text)),
        })
    }

    /// The ids `GET {base}/models` lists.
    pub async fn served_models(&self, timeout: Duration) -> Result<Vec<String>, ModelError> {
        let url = format!("{}/models", self.base_url);
        let listing = self.get_json(&url, timeout).await?;
        let data = listing
            .get("data")
            .or_else(|| listing.get("models"))
            .and_then(Value::as_array)
            .ok_or_else(|| ModelError::BadReply {
                url: url.clone(),
                detail: "no data array in the model listing".into(),
            })?;
        Ok(data
            .iter()
            .filter_map(|m| {
                m.get("id")
                    .or_else(|| m.get("name"))
                    .or_else(|| m.get("model"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .collect())
    }

    /// The context window the server says it runs with, where it says one:
    /// llama.cpp's `GET /props` (beside `/v1`) reports `n_ctx`.
    pub async fn served_context(&self, timeout: Duration) -> Option<u64> {
        let root = self.base_url.strip_suffix("/v1").unwrap_or(&self.base_url);
        let props = self
            .get_json(&format!("{root}/props"), timeout)
            .await
            .ok()?;
        props["default_generation_settings"]["n_ctx"]
            .as_u64()
            .or_else(|| props["n_ctx"].as_u64())
            .filter(|n| *n > 0)
    }

    fn transport_error(&self, e: reqwest::Error) -> ModelError {
        self.transport_error_at(&self.url, self.timeout, e)
    }

    fn transport_error_at(&self, url: &str, after: Duration, e: reqwest::Error) -> ModelError {
        if e.is_timeout() {
            return ModelError::Timeout {
                url: url.to_string(),
                after,
            };
        }
        let mut detail = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            detail = s.to_string();
            source = s.source();
        }
        ModelError::Unreachable {
            url: url.to_string(),
            detail,
        }
    }
}

fn is_transient(e: &ModelError) -> bool {
    match e {
        ModelError::Status { status, .. } => *status == 429 || *status >= 500,
        ModelError::Timeout { .. } => true,
        _ => false,
    }
}

fn quote(text: &str) -> String {
    let trimmed = text.trim();
    match trimmed.char_indices().nth(BODY_QUOTE) {
        Some((cut, _)) => format!("{}…", &trimmed[..cut]),
        None => trimmed.to_string(),
    }
}

/// Read a chat completion, leniently: `arguments` may be a JSON string or an object, an id
/// may be missing, and some servers put `name`/`arguments` beside `function` instead of in it.
pub(super) fn parse_reply(value: &Value) -> Result<ChatReply, String> {
    let choice = value
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or("no choices in the reply")?;
    let message = choice
        .get("message")
        .ok_or("the first choice has no message")?;
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let tool_calls = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .enumerate()
                .filter_map(|(i, call)| parse_tool_call(i, call))
                .collect()
        })
        .unwrap_or_default();
    let usage = value
        .get("usage")
        .and_then(|u| serde_json::from_value::<Usage>(u.clone()).ok());
    Ok(ChatReply {
        content,
        tool_calls,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        usage,
    })
}

fn parse_tool_call(index: usize, call: &Value) -> Option<ToolCall> {
    let function = call.get("function").unwrap_or(call);
    let name = function.get("name")?.as_str()?.to_string();
    let arguments = match function.get("arguments") {
        Some(Value::String(s)) => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        Some(v) => v.clone(),
        None => Value::Object(Default::default()),
    };
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("call_{index}"));
    Some(ToolCall {
        id,
        name,
        arguments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_may_be_a_string_or_an_object_and_ids_may_be_missing() {
        let reply = parse_reply(&json!({
            "choices": [{"finish_reason": "tool_calls", "message": {"content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}},
                {"function": {"name": "g", "arguments": {"y": 2}}},
                {"name": "h", "arguments": "not json"}
            ]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        }))
        .unwrap();
        assert_eq!(reply.content, None);
        assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
        let calls: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("a", "f", json!({"x": 1})),
                ("call_1", "g", json!({"y": 2})),
                ("call_2", "h", json!("not json")),
            ]
        );
        assert_eq!(reply.usage.unwrap().total(), 15);
    }

    #[test]
    fn a_reply_without_choices_is_refused() {
        assert_eq!(
            parse_reply(&json!({"error": "x"})).unwrap_err(),
            "no choices in the reply"
        );
    }

    /// A one-connection-per-response HTTP server on loopback that answers with `replies`
    /// in order and hands back each request body it read.
    async fn serve(replies: Vec<(u16, String)>) -> (String, tokio::task::JoinHandle<Vec<String>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let handle = tokio::spawn(async move {
            let mut bodies = Vec::new();
            for (status, body) in replies {
                let (mut sock, _) = listener.accept().await.unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                // Read headers, then exactly Content-Length bytes of body.
                let body_in = loop {
                    let n = sock.read(&mut chunk).await.unwrap();
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len: usize = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse().unwrap())
                            })
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            break text[end + 4..end + 4 + len].to_string();
                        }
                    }
                };
                bodies.push(body_in);
                let response = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                sock.write_all(response.as_bytes()).await.unwrap();
            }
            bodies
        });
        (base, handle)
    }

    fn settings(base_url: String) -> ModelSettings {
        ModelSettings {
            base_url,
            model: Some("m1".into()),
            api_key_env: None,
            timeout: Duration::from_secs(10),
        }
    }

    #[tokio::test]
    async fn a_server_error_is_retried_and_the_reply_parsed() {
        let ok = json!({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]})
            .to_string();
        let (base, server) = serve(vec![(503, "busy".into()), (200, ok)]).await;
        let client = OpenAiClient::new(&settings(base)).unwrap();
        let reply = client
            .complete(
                &ChatRequest {
                    messages: vec![crate::model::ChatMessage::user("hello")],
                    ..Default::default()
                },
                &|_, _, _| {},
            )
            .await
            .unwrap();
        assert_eq!(reply.content.as_deref(), Some("hi"));
        let bodies = server.await.unwrap();
        assert_eq!(bodies.len(), 2);
        let sent: Value = serde_json::from_str(&bodies[1]).unwrap();
        assert_eq!(sent["model"], "m1");
        assert_eq!(sent["messages"][0]["content"], "hello");
    }

    #[tokio::test]
    async fn a_client_error_is_not_retried_and_quotes_the_body() {
        let (base, server) = serve(vec![(400, "{\"error\":\"bad model\"}".into())]).await;
        let client = OpenAiClient::new(&settings(base.clone())).unwrap();
        let err = client
            .complete(&ChatRequest::default(), &|_, _, _| {})
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "model endpoint {base}/chat/completions answered HTTP 400: {{\"error\":\"bad model\"}}"
            )
        );
        assert_eq!(server.await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_names_the_fix() {
        // Bind then drop: the port is free, so nothing answers there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let client = OpenAiClient::new(&settings(format!("http://127.0.0.1:{port}/v1"))).unwrap();
        let err = client
            .complete(&ChatRequest::default(), &|_, _, _| {})
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "model endpoint http://127.0.0.1:{port}/v1/chat/completions is unreachable ("
            )),
            "{err}"
        );
        assert!(
            err.ends_with(
                "start the model server or set `missionboard config set model-base-url <url>`"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_missing_model_name_or_key_variable_is_a_settings_error() {
        let mut s = settings("http://127.0.0.1:1/v1".into());
        s.model = None;
        assert!(
            OpenAiClient::new(&s)
                .unwrap_err()
                .to_string()
                .contains("missionboard config set model-name")
        );
        s.model = Some("m".into());
        s.api_key_env = Some("MISSIONBOARD_TEST_SURELY_UNSET_KEY".into());
        assert!(OpenAiClient::new(&s).unwrap_err().to_string().starts_with(
            "model-api-key-env names MISSIONBOARD_TEST_SURELY_UNSET_KEY, but MISSIONBOARD_TEST_SURELY_UNSET_KEY is not set"
        ));
    }
}
