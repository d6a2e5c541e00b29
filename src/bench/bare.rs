//! The bare MCP server the floors call through the same bridge: it serves the four
//! mission tools over a mission socket and answers every call at once, with no
//! envelope, no mission record and no waiting.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};

use crate::mission_mcp::MissionToolHandler;

/// Answers each call at once: a question with `answer-<n>` (its n-th), anything else
/// with `ok`.
pub struct Bare {
    asked: std::sync::atomic::AtomicUsize,
}

impl Bare {
    /// A server that answers everything at once, writing nothing.
    pub fn at_once() -> Arc<Bare> {
        Arc::new(Bare {
            asked: Default::default(),
        })
    }
}

impl MissionToolHandler for Bare {
    fn call(
        &self,
        tool: &str,
        _args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<String, String>> {
        if tool != crate::mission_mcp::MISSION_ASK_ATTENTION {
            return Box::pin(async { Ok("ok".to_string()) });
        }
        let n = self
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Box::pin(async move { Ok(format!("answer-{n}")) })
    }
}
