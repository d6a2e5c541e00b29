//! `GET /events`: the page's live feed. Fed by the store's own change feed (inotify
//! on the SQLite file's log, LISTEN/NOTIFY on PostgreSQL): on every change the live
//! part is read and rendered again, and sent when it differs from the last one sent.
//! Each event's id is the digest of what it carries, so a page that reconnects
//! (`Last-Event-ID`) is sent the current state at once unless it already has it:
//! whatever it missed while asleep, it catches up in one event.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::Web;
use super::guard::{self, Authed};
use super::render;
use crate::store::blocking;

/// When nothing is pushed (no inotify), how often the feed looks anyway; also how
/// often a revoked device's stream is noticed and ended when nothing changes.
const FALLBACK: Duration = Duration::from_secs(2);

struct Feed {
    web: Web,
    credential: String,
    csrf: String,
    waiter: crate::store::changes::Waiter,
    /// The id of the last state this page has.
    last: Option<String>,
    first: bool,
}

pub async fn stream(State(web): State<Web>, authed: Authed, headers: HeaderMap) -> Response {
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    // Subscribed before the first read: no commit between them is missed.
    let waiter = web.host.store().changes().subscribe();
    let feed = Feed {
        web,
        credential: authed.credential,
        csrf: authed.csrf,
        waiter,
        last,
        first: true,
    };
    let events = futures::stream::unfold(feed, |mut feed| async move {
        loop {
            if !feed.first {
                feed.waiter.next(FALLBACK).await;
            }
            feed.first = false;
            // A device revoked meanwhile is cut off at its next event.
            let mut headers = HeaderMap::new();
            if let Ok(v) = format!("{}={}", guard::COOKIE, feed.credential).parse() {
                headers.insert(axum::http::header::COOKIE, v);
            }
            guard::authenticate(&feed.web, &headers).await?;
            let host = feed.web.host.clone();
            let view = match blocking(move || super::api::read_view(&host)).await {
                Ok(v) => v,
                Err(e) => {
                    tracing::warn!("web: the event stream could not read the store: {e}");
                    continue;
                }
            };
            let html = render::live(&view, &feed.csrf);
            let id = digest(&html);
            if feed.last.as_deref() == Some(id.as_str()) {
                continue;
            }
            feed.last = Some(id.clone());
            let event = Event::default().event("state").id(id).data(html);
            return Some((Ok::<Event, Infallible>(event), feed));
        }
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    // A reverse proxy that honours it (nginx) passes each event on at once.
    response.headers_mut().insert(
        "x-accel-buffering",
        axum::http::HeaderValue::from_static("no"),
    );
    response
}

fn digest(html: &str) -> String {
    Sha256::digest(html.as_bytes())
        .iter()
        .take(12)
        .map(|b| format!("{b:02x}"))
        .collect()
}
