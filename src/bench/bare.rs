//! The bare MCP server the floors call through the same bridge: it serves the four
//! mission tools over a mission socket and answers every call at once, with no
//! envelope, no mission record and no waiting — optionally after one commit.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::config::Config;
use crate::mission_mcp::MissionToolHandler;

/// Answers each call at once: a question with `answer-<n>` (its n-th), anything else
/// with `ok`. A held server instead keeps each question until its holder releases
/// it, then commits one row (a `config set`, the same one write an operator's answer
/// is) and answers: the answer round trip minus the waiting, waking and re-reading.
pub struct Bare {
    held: Option<Held>,
    asked: std::sync::atomic::AtomicUsize,
}

struct Held {
    config: Config,
    /// Each question's release, handed to the holder as the question arrives.
    releases: mpsc::UnboundedSender<oneshot::Sender<()>>,
}

impl Bare {
    /// A server that answers everything at once, writing nothing.
    pub fn at_once() -> Arc<Bare> {
        Arc::new(Bare {
            held: None,
            asked: Default::default(),
        })
    }

    /// A server that holds each question until the holder sends on the release it
    /// received for it (on the returned channel), then commits one row on
    /// `config`'s store and answers.
    pub fn held(config: Config) -> (Arc<Bare>, mpsc::UnboundedReceiver<oneshot::Sender<()>>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let bare = Arc::new(Bare {
            held: Some(Held {
                config,
                releases: tx,
            }),
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
        let n = self
            .asked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let held = self.held.as_ref().map(|h| {
            let (release, released) = oneshot::channel();
            let _ = h.releases.send(release);
            (h.config.clone(), released)
        });
        Box::pin(async move {
            if let Some((config, released)) = held {
                released
                    .await
                    .map_err(|_| "bench: the holder went away".to_string())?;
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
