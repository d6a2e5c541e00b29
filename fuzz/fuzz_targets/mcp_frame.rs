//! A mission socket: arbitrary bytes after a valid MCP handshake, into the real
//! mission tools server (rmcp behind our bounded frame reader). The handler
//! answers every tool call; what matters is that nothing panics or hangs.
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use libfuzzer_sys::fuzz_target;
use missionboard::mission_mcp::{MissionToolHandler, serve_mission_stream};
use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

struct Echo;

impl MissionToolHandler for Echo {
    fn call(&self, tool: &str, _args: Map<String, Value>) -> BoxFuture<'static, Result<String, String>> {
        let reply = format!("called {tool}");
        Box::pin(async move { Ok(reply) })
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    })
}

const HANDSHAKE: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
"#;

fuzz_target!(|data: &[u8]| {
    runtime().block_on(async {
        let (client, server) = tokio::io::duplex(1 << 16);
        let served = tokio::spawn(serve_mission_stream(server, Arc::new(Echo)));
        let (mut from_server, mut to_server) = tokio::io::split(client);
        let talk = async {
            to_server.write_all(HANDSHAKE).await?;
            to_server.write_all(data).await?;
            to_server.write_all(b"\n").await?;
            to_server.shutdown().await
        };
        let mut replies = Vec::new();
        let (wrote, read) = tokio::join!(talk, from_server.read_to_end(&mut replies));
        let _ = (wrote, read);
        // The server ends once its client has hung up and its calls are answered.
        tokio::time::timeout(Duration::from_secs(5), served)
            .await
            .expect("the mission tools server hung after its client left")
            .expect("the mission tools server panicked")
            .ok();
    });
});
