//! The agent side of the mission tools: an MCP client for the `mission` server a
//! unit is handed in `session/new`. It starts the server's command exactly as any
//! agent would (for missionboard that is `missionboard mcp-bridge <socket>`), so the
//! built-in agents exercise the same path as a third-party one.

use std::process::Stdio;

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tokio::process::{Child, Command};

use crate::acp_client::McpStdioServer;

/// A tool the server lists: its name, description and JSON Schema.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    pub description: String,
    pub input_schema: Map<String, Value>,
}

pub struct MissionClient {
    service: RunningService<RoleClient, ()>,
    // Held so the server process lives exactly as long as the client.
    _child: Child,
}

impl MissionClient {
    pub async fn connect(entry: &McpStdioServer) -> Result<MissionClient, String> {
        let mut child = Command::new(&entry.command)
            .args(&entry.args)
            .envs(&entry.env)
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

    /// Every tool the server offers.
    pub async fn list_tools(&self) -> Result<Vec<ListedTool>, String> {
        let tools = self
            .service
            .list_all_tools()
            .await
            .map_err(|e| format!("listing the mission tools failed: {e}"))?;
        Ok(tools
            .into_iter()
            .map(|t| ListedTool {
                name: t.name.into_owned(),
                description: t.description.map(|d| d.into_owned()).unwrap_or_default(),
                input_schema: (*t.input_schema).clone(),
            })
            .collect())
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
