//! The bare MCP server the floors call through the same bridge: it serves the four
//! mission tools over a mission socket and answers every call at once, with no
//! envelope, no mission record and no waiting — optionally after one commit.

use std::sync::Arc;
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::config::Config;
use crate::mission_mcp::MissionToolHandler;

/// Answers each call at once: a question with `answer-<n>` (its n-th), anything else
/// with `ok`. With `commit`, a question first commits one row (a `config set`), the
/// same one write an operator's answer is.
pub struct Bare {
    commit: Option<Config>,
    /// When each question arrived, for a clock that starts there.
    arrivals: Option<mpsc::UnboundedSender<Instant>>,
    asked: std::sync::atomic::AtomicUsize,
}

impl Bare {
    /// A server that answers everything at once, writing nothing.
    pub fn at_once() -> Arc<Bare> {
        Arc::new(Bare {
            commit: None,
            arrivals: None,
            asked: Default::default(),
        })
    }

    /// A server whose answers each cost one commit on `config`'s store; every
    /// question's arrival time is sent on the returned channel.
    pub fn committing(config: Config) -> (Arc<Bare>, mpsc::UnboundedReceiver<Instant>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let bare = Arc::new(Bare {
            commit: Some(config),
            arrivals: Some(tx),
            asked: Default::default(),
        });
        (bare, rx)
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
        let arrived = Instant::now();
        if let Some(tx) = &self.arrivals {
            let _ = tx.send(arrived);
        }
        let n = self
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let commit = self.commit.clone();
        Box::pin(async move {
            if let Some(config) = commit {
                crate::store::blocking(move || {
                    config.set(crate::config::ASK_PARK_WINDOW, &format!("{}s", 60 + n % 2))
                })
                .await
                .map_err(|e| e.to_string())?;
            }
            Ok(format!("answer-{n}"))
        })
    }
}
