//! The rmcp server that lists the mission tools and forwards calls to the
//! mission service's handler.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::acp_client::frame::{Frame, read_frame};

use super::{MISSION_TOOL_NAMES, MissionToolHandler, mission_tool_specs, unknown_tool_error};

/// How often a pending call tells the client it is still alive, when the
/// client asked for progress. Some MCP clients reset their per-call timeout
/// on progress, which keeps a blocking ask from being killed.
const PROGRESS_EVERY: Duration = Duration::from_secs(10);

#[derive(Clone)]
pub(super) struct MissionTools {
    handler: Arc<dyn MissionToolHandler>,
}

impl MissionTools {
    pub(super) fn new(handler: Arc<dyn MissionToolHandler>) -> Self {
        MissionTools { handler }
    }
}

fn listed_tools() -> Vec<Tool> {
    mission_tool_specs()
        .into_iter()
        .map(|spec| {
            Tool::new(spec.name, spec.description, Arc::new(spec.input_schema))
                .with_title(spec.title)
        })
        .collect()
}

impl ServerHandler for MissionTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "missionboard-mission",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Mission tools: reach the operator only through mission_plan, mission_report, \
                 mission_ask_attention and mission_finish.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(listed_tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        if !MISSION_TOOL_NAMES.contains(&name) {
            return Ok(
                CallToolResult::error(vec![ContentBlock::text(unknown_tool_error(name))]).into(),
            );
        }
        let args = request.arguments.unwrap_or_default();
        let call = self.handler.call(name, args);
        tokio::pin!(call);

        let progress_token = context.meta.get_progress_token();
        let mut ticks = tokio::time::interval(PROGRESS_EVERY);
        ticks.tick().await; // the first tick is immediate
        let mut beats = 0u32;
        let outcome = loop {
            tokio::select! {
                outcome = &mut call => break outcome,
                // The client went away or cancelled: drop the handler's future
                // so the mission service sees the call abandoned.
                _ = context.ct.cancelled() => {
                    return Err(McpError::internal_error("the tool call was cancelled", None));
                }
                _ = ticks.tick(), if progress_token.is_some() => {
                    beats += 1;
                    let token = progress_token.clone().expect("guarded by the select condition");
                    let param = ProgressNotificationParam::new(token, f64::from(beats))
                        .with_message("still waiting");
                    if let Err(err) = context.peer.notify_progress(param).await {
                        tracing::debug!(?err, "progress notification failed");
                    }
                }
            }
        };
        let result = match outcome {
            Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
            Err(text) => CallToolResult::error(vec![ContentBlock::text(text)]),
        };
        Ok(result.into())
    }
}

/// Serve the mission tools over one byte stream until the client hangs up.
/// The socket server runs this per connection; tests can run it over a
/// `tokio::io::duplex` pair.
///
/// Frames reach rmcp through the same bounded reader as a unit's stdout (see
/// [`crate::acp_client::frame`]): a line that is not JSON, or is over the frame limit, is
/// answered with a JSON-RPC parse error naming what was wrong, and never buffered
/// whole; rmcp sees only JSON lines.
pub async fn serve_mission_stream<S>(
    stream: S,
    handler: Arc<dyn MissionToolHandler>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (client_in, client_out) = tokio::io::split(stream);
    let client_out = Arc::new(tokio::sync::Mutex::new(client_out));
    let (rmcp_end, our_end) = tokio::io::duplex(64 * 1024);
    let (from_rmcp, mut to_rmcp) = tokio::io::split(our_end);

    let inbound = {
        let client_out = client_out.clone();
        async move {
            let mut reader = BufReader::new(client_in);
            while let Some(frame) = read_frame(&mut reader).await? {
                match frame {
                    Frame::Message(line) => {
                        to_rmcp.write_all(line.as_bytes()).await?;
                        to_rmcp.write_all(b"\n").await?;
                    }
                    Frame::Blank => {}
                    Frame::Garbage(shown) => {
                        tracing::warn!(line = %shown, "mission tools: a frame that is not JSON");
                        let reply = parse_error(&shown);
                        client_out.lock().await.write_all(reply.as_bytes()).await?;
                    }
                }
            }
            // The client hung up: so does rmcp's input.
            to_rmcp.shutdown().await
        }
    };
    let outbound = async move {
        let mut reader = BufReader::new(from_rmcp);
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line).await? == 0 {
                return client_out.lock().await.shutdown().await;
            }
            client_out.lock().await.write_all(&line).await?;
        }
    };
    let service = async move {
        let running = MissionTools::new(handler)
            .serve(rmcp_end)
            .await
            .map_err(|e| std::io::Error::other(format!("mcp handshake failed: {e}")))?;
        running
            .waiting()
            .await
            .map_err(|e| std::io::Error::other(format!("mcp service task failed: {e}")))?;
        Ok::<_, std::io::Error>(())
    };
    // When the service ends, stop reading the client; when the client hangs up,
    // let the service finish what it has in flight.
    let pumps = async { tokio::join!(service, outbound) };
    tokio::pin!(pumps, inbound);
    let (served, outbound) = tokio::select! {
        done = &mut pumps => done,
        read = &mut inbound => {
            if let Err(e) = read {
                tracing::debug!(%e, "mission tools connection: reading the client ended");
            }
            pumps.await
        }
    };
    if let Err(e) = outbound {
        // A client that vanished mid-write is not this side's failure.
        tracing::debug!(%e, "mission tools connection: writing to the client ended");
    }
    served
}

/// The JSON-RPC answer to a line that is not a JSON-RPC message at all.
fn parse_error(shown: &str) -> String {
    let shown: String = shown.chars().take(120).collect();
    let mut reply = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": -32700,
            "message": format!("Parse error: the mission tools read a line that is not JSON (one JSON-RPC message per line is expected): {shown}"),
        }
    })
    .to_string();
    reply.push('\n');
    reply
}
