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
use tokio::io::{AsyncRead, AsyncWrite};

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
pub async fn serve_mission_stream<S>(
    stream: S,
    handler: Arc<dyn MissionToolHandler>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let running = MissionTools::new(handler)
        .serve(stream)
        .await
        .map_err(|e| std::io::Error::other(format!("mcp handshake failed: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| std::io::Error::other(format!("mcp service task failed: {e}")))?;
    Ok(())
}
