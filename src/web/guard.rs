//! What every request passes before a handler sees it: its `Host` is one of ours
//! (a DNS-rebinding page names its own), a state change or the event stream comes
//! from our own origin, and the answer carries the security headers. Then, per
//! handler, the device credential ([`Authed`]) and the form's CSRF token.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use axum::extract::{FromRequestParts, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header, request::Parts};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use super::Web;
use crate::devices::Device;
use crate::ops::devices;
use crate::store::blocking;

/// The name of the cookie that carries a device credential.
pub const COOKIE: &str = "mb_device";

/// The peer a request came from (the TCP connection's, set by the accept loop).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub IpAddr);

/// Bad pairing codes per peer: five lock the peer out of pairing for 15 minutes.
#[derive(Default)]
pub struct Lockout {
    peers: HashMap<IpAddr, Strikes>,
}

struct Strikes {
    count: u32,
    /// When the count started; strikes older than the lock period are forgotten.
    since: Instant,
    locked_until: Option<Instant>,
}

pub const STRIKES: u32 = 5;
pub const LOCKED_FOR: Duration = Duration::from_secs(15 * 60);

impl Lockout {
    /// Is `peer` locked out now?
    pub fn locked(&mut self, peer: IpAddr) -> bool {
        let now = Instant::now();
        match self.peers.get(&peer) {
            Some(Strikes {
                locked_until: Some(until),
                ..
            }) if *until > now => true,
            Some(Strikes {
                locked_until: Some(_),
                ..
            }) => {
                self.peers.remove(&peer);
                false
            }
            _ => false,
        }
    }

    /// Count a bad code from `peer`; true when this one locks it out.
    pub fn strike(&mut self, peer: IpAddr) -> bool {
        let now = Instant::now();
        // Bounded: a flood of peers cannot grow the table without end.
        if self.peers.len() > 10_000 {
            self.peers
                .retain(|_, s| s.locked_until.is_some_and(|u| u > now));
        }
        let s = self.peers.entry(peer).or_insert(Strikes {
            count: 0,
            since: now,
            locked_until: None,
        });
        if now.duration_since(s.since) > LOCKED_FOR {
            s.count = 0;
            s.since = now;
        }
        s.count += 1;
        if s.count >= STRIKES {
            s.locked_until = Some(now + LOCKED_FOR);
            return true;
        }
        false
    }

    pub fn clear(&mut self, peer: IpAddr) {
        self.peers.remove(&peer);
    }
}

/// A host name as `--allowed-host` takes it: letters, digits, `-` and `.`.
pub fn is_host_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}

/// The host part of a `Host` header or an origin's authority, lowercase, without
/// its port.
fn host_part(authority: &str) -> String {
    let a = authority.trim().to_ascii_lowercase();
    if a.starts_with('[') {
        // [v6]:port
        return match a.find(']') {
            Some(end) => a[..=end].to_string(),
            None => a,
        };
    }
    match a.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host.to_string(),
        _ => a,
    }
}

/// Where the webhook triggers live (`hooks`): a webhook carries no origin and needs
/// none, being signed instead; the Host allowlist still applies to it.
pub(super) const HOOKS_PREFIX: &str = "/hooks/";

/// The middleware: Host allowlist, same-origin state changes, security headers.
pub async fn check(State(web): State<Web>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(host_part);
    let mut response = match host {
        Some(h) if web.allowed_hosts.contains(&h) => {
            // A webhook has no origin; it is signed instead (`hooks`).
            let needs_origin = (!matches!(*req.method(), Method::GET | Method::HEAD)
                && !req.uri().path().starts_with(HOOKS_PREFIX))
                || req.uri().path() == "/events";
            if needs_origin && !same_origin(req.headers(), &web.proxied_origins) {
                refuse(
                    StatusCode::FORBIDDEN,
                    "cross-origin request refused: state changes and the event stream are taken only from this page's own origin",
                )
            } else {
                next.run(req).await
            }
        }
        _ => refuse(
            StatusCode::MISDIRECTED_REQUEST,
            "this Host is not one this server answers to (start it with --allowed-host NAME to add one)",
        ),
    };
    secure_headers(response.headers_mut());
    response
}

/// The request comes from our own page: the browser says so (`Sec-Fetch-Site:
/// same-origin`), or its `Origin` names the very host it asked — or, behind a
/// proxy that rewrites `Host`, the `https://` origin of a name the proxy serves
/// (`proxied`: the `--allowed-host` names under `--behind-proxy`).
fn same_origin(headers: &HeaderMap, proxied: &[String]) -> bool {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = get("sec-fetch-site") {
        return site == "same-origin";
    }
    let (Some(origin), Some(host)) = (get("origin"), get("host")) else {
        return false;
    };
    if let Some(name) = origin.strip_prefix("https://")
        && proxied.iter().any(|p| p.eq_ignore_ascii_case(name))
    {
        return true;
    }
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host.trim()))
}

fn secure_headers(h: &mut HeaderMap) {
    let set = |h: &mut HeaderMap, name: &'static str, value: &'static str| {
        h.insert(name, HeaderValue::from_static(value));
    };
    set(
        h,
        "content-security-policy",
        "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
    );
    set(h, "x-frame-options", "DENY");
    set(h, "x-content-type-options", "nosniff");
    set(h, "referrer-policy", "no-referrer");
    set(h, "cache-control", "no-store");
}

/// A refusal as JSON `{"error": …}`.
pub fn refuse(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": why }))).into_response()
}

/// The device credential in the request's cookie (never a query string, never a
/// header of our own).
pub fn credential(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (name, value) = pair.trim().split_once('=')?;
            (name == COOKIE && !value.is_empty()).then(|| value.to_string())
        })
}

/// The CSRF token of a device session: derived from its credential (so it dies with
/// it), useless to learn the credential from.
pub fn csrf_token(credential: &str) -> String {
    let d = Sha256::digest(format!("missionboard web csrf\0{credential}").as_bytes());
    d.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// A token compared without an early exit.
pub fn tokens_match(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// A request from a paired, live device.
pub struct Authed {
    pub device: Device,
    pub csrf: String,
    pub credential: String,
}

impl Authed {
    /// The form's token is this session's.
    pub fn csrf_ok(&self, presented: &str) -> bool {
        tokens_match(&self.csrf, presented.trim())
    }
}

/// Who the request's credential belongs to, if anyone.
pub async fn authenticate(web: &Web, headers: &HeaderMap) -> Option<Authed> {
    let credential = credential(headers)?;
    let (host, presented) = (web.host.clone(), credential.clone());
    let device = blocking(move || devices::authenticate(&host, &presented))
        .await
        .map_err(|e| tracing::warn!("web: a device check failed: {e}"))
        .ok()??;
    Some(Authed {
        device,
        csrf: csrf_token(&credential),
        credential,
    })
}

impl FromRequestParts<Web> for Authed {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, web: &Web) -> Result<Self, Self::Rejection> {
        authenticate(web, &parts.headers).await.ok_or_else(|| {
            refuse(
                StatusCode::UNAUTHORIZED,
                "this device is not paired (or was revoked): run 'missionboard web pair' on the machine and open its link here",
            )
        })
    }
}

/// The cookie that carries a fresh credential.
pub fn set_cookie(credential: &str, secure: bool) -> String {
    let max_age = crate::devices::SLIDING.as_secs();
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={credential}; HttpOnly; SameSite=Strict; Path=/; Max-Age={max_age}{secure}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_lose_their_port_and_case() {
        assert_eq!(host_part("LocalHost:7878"), "localhost");
        assert_eq!(host_part("[::1]:80"), "[::1]");
        assert_eq!(host_part("example.com"), "example.com");
    }

    #[test]
    fn five_bad_codes_lock_a_peer_out() {
        let mut l = Lockout::default();
        let peer: IpAddr = "10.1.2.3".parse().unwrap();
        for _ in 0..4 {
            assert!(!l.strike(peer));
        }
        assert!(!l.locked(peer));
        assert!(l.strike(peer));
        assert!(l.locked(peer));
        assert!(!l.locked("10.1.2.4".parse().unwrap()));
    }

    #[test]
    fn the_origin_must_name_the_host_asked() {
        let mut h = HeaderMap::new();
        h.insert("host", HeaderValue::from_static("127.0.0.1:7878"));
        assert!(!same_origin(&h, &[]));
        h.insert("origin", HeaderValue::from_static("http://127.0.0.1:7878"));
        assert!(same_origin(&h, &[]));
        h.insert("origin", HeaderValue::from_static("http://evil.example"));
        assert!(!same_origin(&h, &[]));
        // Behind a proxy that rewrote Host: the https origin of a name it serves.
        let proxied = ["laptop.ts.net".to_string()];
        h.insert("origin", HeaderValue::from_static("https://laptop.ts.net"));
        assert!(same_origin(&h, &proxied) && !same_origin(&h, &[]));
        h.insert("origin", HeaderValue::from_static("http://laptop.ts.net"));
        assert!(!same_origin(&h, &proxied));
        h.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        assert!(same_origin(&h, &[]));
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!same_origin(&h, &[]));
    }
}
