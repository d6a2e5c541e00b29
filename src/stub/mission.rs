//! The stub's MCP client for the `mission` server it was handed in
//! `session/new`. It starts the server's command exactly as any agent would
//! (for missionboard that is `missionboard mcp-bridge <socket>`).

use std::process::Stdio;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::process::{Child, Command};

/// A stdio MCP server entry, copied out of `session/new`.
#[derive(Debug, Clone)]
pub struct ServerEntry {
    pub name: String,
    pub command: std::path::PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

pub struct MissionClient {
    service: RunningService<RoleClient, ()>,
    // Held so the server process lives exactly as long as the client.
    _child: Child,
}

impl MissionClient {
    pub async fn connect(entry: &ServerEntry) -> Result<MissionClient, String> {
        let mut child = Command::new(&entry.command)
            .args(&entry.args)
            .envs(entry.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // The server's complaints belong in our stderr, which the host
            // captures; never on our stdout, which is JSON-RPC only.
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start MCP server '{}' ({}): {e}",
                    entry.name,
                    entry.command.display()
                )
            })?;
        let stdin = child.stdin.take().expect("stdin was piped");
        let stdout = child.stdout.take().expect("stdout was piped");
        let service = ()
            .serve((stdout, stdin))
            .await
            .map_err(|e| format!("MCP server '{}' did not initialize: {e}", entry.name))?;
        Ok(MissionClient {
            service,
            _child: child,
        })
    }

    /// Call a tool. The outer error is a transport failure; the inner one is
    /// the tool's own error result (its text).
    pub async fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Result<String, String>, String> {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(args);
        let result = self
            .service
            .call_tool(params)
            .await
            .map_err(|e| format!("calling {tool} failed: {e}"))?;
        let text = result
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n");
        Ok(if result.is_error == Some(true) {
            Err(text)
        } else {
            Ok(text)
        })
    }
}
