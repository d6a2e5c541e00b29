//! `POST /hooks/<name>`: webhook triggers. Not behind device pairing — a sender
//! such as GitHub has no cookie — but signed instead: the body's HMAC-SHA256 under
//! the trigger's secret (`X-Hub-Signature-256: sha256=<hex>`), checked before the
//! body is read for anything else. The Host allowlist and the security headers of
//! every route still apply; the same-origin rule for state changes does not (a
//! webhook has no origin), which `guard::check` exempts by its path (`guard::HOOKS_PREFIX`).
//!
//! A body over [`MAX_BODY`] is refused unread (413); an unknown trigger is 404, a
//! bad signature 401, a delivery id seen before 409, a sender over its trigger's
//! rate 429; none of them fires anything. What a delivery fires is
//! `ops::trigger`'s to decide.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;

use super::Web;
use super::guard::refuse;
use crate::ops::trigger::{self, Refused};
use crate::store::blocking;
use crate::sync::LockUnpoisoned;

/// The largest body a hook reads (GitHub caps its payloads at 25 MB; the events a
/// template needs are far smaller).
pub const MAX_BODY: usize = 1024 * 1024;
/// Deliveries a trigger fires in a burst, and how many per minute after it.
const BURST: f64 = 20.0;
const PER_MINUTE: f64 = 30.0;

/// Each trigger's token bucket: (tokens, last refill).
#[derive(Default)]
struct Rates(HashMap<String, (f64, Instant)>);

impl Rates {
    fn take(&mut self, name: &str) -> bool {
        let now = Instant::now();
        let (tokens, at) = self.0.entry(name.to_string()).or_insert((BURST, now));
        *tokens = (*tokens + now.duration_since(*at).as_secs_f64() * PER_MINUTE / 60.0).min(BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[derive(Clone)]
struct Hooks {
    web: Web,
    rates: Arc<Mutex<Rates>>,
}

/// The hook routes, with their own body limit and rate state.
pub(super) fn routes(web: Web) -> Router<Web> {
    Router::new()
        .route("/hooks/{name}", post(deliver))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(Hooks {
            web,
            rates: Arc::default(),
        })
}

async fn deliver(
    State(hooks): State<Hooks>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let (signature, delivery, event) = (
        header("x-hub-signature-256"),
        header("x-github-delivery"),
        header("x-github-event"),
    );
    let (host, n, b) = (hooks.web.host.clone(), name.clone(), body.clone());
    let verified = blocking(move || trigger::verify(&host, &n, signature.as_deref(), &b)).await;
    let t = match verified {
        Ok(t) => t,
        Err(r) => return refused(&r),
    };
    // GitHub's hello when a webhook is created: signed, answered, fires nothing.
    if event.as_deref() == Some("ping") {
        return (
            StatusCode::OK,
            axum::Json(serde_json::json!({"pong": true})),
        )
            .into_response();
    }
    if !hooks.rates.lock_unpoisoned().take(&name) {
        return refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "this trigger fires at most 30 deliveries a minute; nothing fired",
        );
    }
    let host = hooks.web.host.clone();
    match blocking(move || trigger::deliver(&host, &t, delivery.as_deref(), &body)).await {
        Ok(mission) => (
            StatusCode::ACCEPTED,
            axum::Json(serde_json::json!({ "mission": mission, "queued": true })),
        )
            .into_response(),
        Err(r) => refused(&r),
    }
}

fn refused(r: &Refused) -> Response {
    if let Refused::Store(e) = r {
        tracing::warn!("hooks: the store failed a delivery: {e}");
    }
    refuse(
        StatusCode::from_u16(r.status()).unwrap_or(StatusCode::BAD_REQUEST),
        &r.message(),
    )
}
