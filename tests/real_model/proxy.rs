//! A recording pass-through on loopback between missionboard and the real model
//! server: every request is forwarded unchanged (on its own upstream connection) and
//! the server's answer returned unchanged in status and body, and both are recorded
//! so a test can assert the wire contract on what really crossed.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// One request and the server's answer to it.
#[derive(Debug, Clone)]
pub struct Exchange {
    pub method: String,
    pub path: String,
    /// The request body as JSON (`Null` when it was not JSON).
    pub request: Value,
    pub status: u16,
    /// The response body, de-chunked.
    pub response: String,
}

pub struct Proxy {
    /// `http://127.0.0.1:<port>/v1`, to configure as the model base URL.
    pub url: String,
    exchanges: Arc<Mutex<Vec<Exchange>>>,
}

impl Proxy {
    /// Listen on a fresh loopback port and forward to `upstream` (`host:port`).
    pub fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let exchanges = Arc::new(Mutex::new(Vec::new()));
        let recorded = exchanges.clone();
        let upstream = upstream.to_string();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (recorded, upstream) = (recorded.clone(), upstream.clone());
                std::thread::spawn(move || serve(client, &upstream, &recorded));
            }
        });
        Proxy { url, exchanges }
    }

    /// Every exchange so far, in the order the answers came back.
    pub fn exchanges(&self) -> Vec<Exchange> {
        self.exchanges.lock().unwrap().clone()
    }
}

struct Message {
    head: Vec<String>,
    body: Vec<u8>,
}

/// Read one HTTP/1.1 message (start line, headers, body by content-length or
/// chunked, else to EOF when `to_eof`). `None` on a closed connection.
fn read_message(reader: &mut impl BufRead, to_eof: bool) -> Option<Message> {
    let mut head = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end_matches(['\r', '\n']).to_string();
        if line.is_empty() {
            break;
        }
        head.push(line);
    }
    let header = |name: &str| {
        head[1..].iter().find_map(|h| {
            let (k, v) = h.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_ascii_lowercase())
        })
    };
    let mut body = Vec::new();
    if let Some(n) = header("content-length") {
        body.resize(n.parse().ok()?, 0);
        reader.read_exact(&mut body).ok()?;
    } else if header("transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).ok()?;
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if to_eof {
        reader.read_to_end(&mut body).ok()?;
    }
    Some(Message { head, body })
}

/// The client's requests on one keep-alive connection, each forwarded in turn.
fn serve(client: TcpStream, upstream: &str, recorded: &Mutex<Vec<Exchange>>) {
    let mut reader = BufReader::new(client.try_clone().unwrap());
    let mut writer = client;
    while let Some(request) = read_message(&mut reader, false) {
        let Some(response) = forward(upstream, &request) else {
            return;
        };
        let start: Vec<&str> = request.head[0].split(' ').collect();
        let status = response.head[0]
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        recorded.lock().unwrap().push(Exchange {
            method: start.first().copied().unwrap_or_default().to_string(),
            path: start.get(1).copied().unwrap_or_default().to_string(),
            request: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
            status,
            response: String::from_utf8_lossy(&response.body).into_owned(),
        });
        let mut out = format!("{}\r\n", response.head[0]);
        for h in &response.head[1..] {
            let name = h.split(':').next().unwrap_or_default().trim();
            let hop = [
                "content-length",
                "transfer-encoding",
                "connection",
                "keep-alive",
            ];
            if !hop.iter().any(|x| name.eq_ignore_ascii_case(x)) {
                out.push_str(h);
                out.push_str("\r\n");
            }
        }
        out.push_str(&format!("content-length: {}\r\n\r\n", response.body.len()));
        let sent = writer
            .write_all(out.as_bytes())
            .and_then(|()| writer.write_all(&response.body));
        if sent.is_err() {
            return;
        }
    }
}

/// Send `request` upstream on a fresh connection closed after the answer.
fn forward(upstream: &str, request: &Message) -> Option<Message> {
    let mut server = TcpStream::connect(upstream).ok()?;
    let mut out = format!("{}\r\n", request.head[0]);
    for h in &request.head[1..] {
        let name = h.split(':').next().unwrap_or_default().trim();
        if !["connection", "keep-alive"]
            .iter()
            .any(|x| name.eq_ignore_ascii_case(x))
        {
            out.push_str(h);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    server.write_all(out.as_bytes()).ok()?;
    server.write_all(&request.body).ok()?;
    read_message(&mut BufReader::new(server), true)
}
