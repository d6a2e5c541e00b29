//! `missionboard web`: a page to answer asks and watch missions from a phone or
//! another machine. A surface like the board and the CLI: it reads through the
//! read-only services and writes only through the `ops` verbs, so an answer here is
//! the same guarded write an answer anywhere else is, and the first one wins.
//!
//! axum routes the requests; hyper speaks HTTP/1.1 on connections this module
//! accepts itself (plain, or TLS by rustls), so each request knows its peer (the
//! pairing lockout counts per peer). Every store call from a handler crosses to the
//! blocking pool (`store::blocking`). See docs/web.md for the threat model.

mod api;
mod events;
mod guard;
mod hooks;
mod render;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use axum::Router;
use axum::routing::{get, post};
use hyper_util::rt::TokioIo;
use tokio_rustls::TlsAcceptor;

use crate::ops::host::{Host, Hosting};
use crate::paths::Paths;
use crate::store::Store;

/// The address `missionboard web` listens on unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// How `missionboard web` is exposed.
#[derive(Debug, Clone, Default)]
pub struct WebOptions {
    pub listen: String,
    /// PEM files: the certificate chain and its private key.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// A TLS-terminating proxy (Tailscale Serve, a reverse proxy) fronts the server.
    pub behind_proxy: bool,
    /// Host names the page may be reached by, beyond loopback and the bound address.
    pub allowed_hosts: Vec<String>,
}

/// The shared state of every request.
#[derive(Clone)]
pub(crate) struct Web {
    /// This server's host: its paths and store, and the fleet a run whose host is
    /// gone is resumed on (started on first need, each run's unit reaped at the end
    /// of its turn, as `approvals respond` does).
    pub host: Host,
    /// Host names (lowercase, no port) a request may name in its `Host` header.
    pub allowed_hosts: Arc<Vec<String>>,
    /// Cookies are marked `Secure` (served over TLS here or by the proxy).
    pub secure: bool,
    pub lockout: Arc<Mutex<guard::Lockout>>,
    /// Under `--behind-proxy`, the `--allowed-host` names: their `https://` origins
    /// are ours even when the proxy rewrote `Host`.
    pub proxied_origins: Arc<Vec<String>>,
}

/// A bound server, not yet serving: what it will say, and where.
pub struct Server {
    web: Web,
    listener: std::net::TcpListener,
    tls: Option<TlsAcceptor>,
    /// The address a browser uses (what `web pair` links to).
    pub base_url: String,
    pub local_addr: SocketAddr,
    /// Deliver the store's notifications from this server (`missionboard web`; a
    /// host serving the page delivers them itself).
    pub deliver_notifications: bool,
}

impl Server {
    /// Check the exposure, load TLS, bind. Refuses a non-loopback address that is
    /// neither served over TLS nor behind a proxy with a named host.
    pub fn bind(paths: Paths, store: Store, options: WebOptions) -> anyhow::Result<Server> {
        // The shipped envelopes are always there for a template the page fires to
        // name, whatever was deleted (as for the board and `mission fire`).
        if let Err(e) = crate::presets::seed_policies_quietly(&paths.home) {
            tracing::warn!("web: could not refresh the preset envelopes: {e}");
        }
        let addr: SocketAddr = options.listen.trim().parse().map_err(|_| {
            anyhow::anyhow!(
                "--listen {:?} is not an address: give IP:PORT, e.g. 127.0.0.1:7878 (loopback) or 0.0.0.0:7878 with TLS",
                options.listen
            )
        })?;
        let allowed: Vec<String> = options
            .allowed_hosts
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        if let Some(bad) = allowed.iter().find(|h| !guard::is_host_name(h)) {
            anyhow::bail!(
                "--allowed-host {bad:?} is not a host name: give the name alone, without a scheme, port or path (e.g. laptop.tailnet.ts.net)"
            );
        }
        if options.behind_proxy && allowed.is_empty() {
            anyhow::bail!(
                "--behind-proxy needs --allowed-host NAME: the name the proxy serves the page under (every other Host is refused)"
            );
        }
        if !addr.ip().is_loopback() && options.tls.is_none() && !options.behind_proxy {
            anyhow::bail!(
                "refusing to serve on {addr}, which is not a loopback address, without TLS: anyone on that network could read the traffic. Give --tls-cert and --tls-key (PEM), or put a TLS proxy in front and say so with --behind-proxy --allowed-host NAME (docs/web.md), or listen on 127.0.0.1"
            );
        }
        let tls = match &options.tls {
            Some((cert, key)) => Some(load_tls(cert, key)?),
            None => None,
        };
        let listener = std::net::TcpListener::bind(addr)
            .with_context(|| format!("cannot listen on {addr}"))?;
        listener.set_nonblocking(true)?;
        let local_addr = listener.local_addr()?;

        let mut hosts = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "[::1]".to_string(),
        ];
        if !addr.ip().is_unspecified() {
            hosts.push(host_of(addr.ip()));
        }
        hosts.extend(allowed.iter().cloned());
        let mut seen = std::collections::HashSet::new();
        hosts.retain(|h| seen.insert(h.clone()));

        let scheme = if tls.is_some() || options.behind_proxy {
            "https"
        } else {
            "http"
        };
        let base_url = match allowed.first() {
            Some(name) if options.behind_proxy => format!("https://{name}"),
            Some(name) => format!("{scheme}://{name}:{}", local_addr.port()),
            None if addr.ip().is_unspecified() => {
                format!("{scheme}://127.0.0.1:{}", local_addr.port())
            }
            None => format!("{scheme}://{local_addr}"),
        };
        // Where `web pair` finds the page by default, from the moment it is bound.
        let _ = std::fs::create_dir_all(paths.run_dir());
        let _ = std::fs::write(url_file(&paths), &base_url);
        Ok(Server {
            web: Web {
                host: Host::open(&paths, &store, Hosting::OnNeed)?,
                allowed_hosts: Arc::new(hosts),
                secure: scheme == "https",
                lockout: Arc::default(),
                proxied_origins: Arc::new(if options.behind_proxy {
                    allowed.clone()
                } else {
                    Vec::new()
                }),
            },
            listener,
            tls,
            base_url,
            local_addr,
            deliver_notifications: true,
        })
    }

    /// What startup says: what is served where, and to whom.
    pub fn banner(&self) -> Vec<String> {
        let exposure = if self.tls.is_some() {
            "over TLS"
        } else if self.local_addr.ip().is_loopback() {
            "loopback only: this machine, or a proxy on it"
        } else {
            "plain HTTP, for the TLS proxy in front of it"
        };
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        vec![
            format!(
                "missionboard web: listening on {scheme}://{} ({exposure})",
                self.local_addr
            ),
            format!("Page: {}/", self.base_url),
            format!(
                "Accepted Host names: {}",
                self.web.allowed_hosts.join(", ")
            ),
            "Only paired devices see asks and missions; pair one with 'missionboard web pair --name phone'.".to_string(),
        ]
    }

    /// Serve until the process is told to stop (Ctrl-C, TERM).
    /// Serve through `host` instead of a host of the page's own: `missionboard host
    /// --web`, whose page answers, stops and fires through the queue host it is
    /// served beside, so the process holds one host.
    pub fn on(mut self, host: Host) -> Server {
        self.web.host = host;
        self
    }

    pub async fn run(self) -> anyhow::Result<()> {
        let settler = spawn_settler(&self.web);
        // Notifications are delivered by whoever runs: this page, a host, or both.
        let notifier = self.deliver_notifications.then(|| {
            crate::notify::spawn(self.web.host.store().clone(), Some(self.base_url.clone()))
        });
        let app = router(self.web.clone());
        let listener = tokio::net::TcpListener::from_std(self.listener)?;
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!("web: accept failed: {e}");
                        continue;
                    }
                },
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
            };
            let (app, tls) = (app.clone(), self.tls.clone());
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |mut req: hyper::Request<hyper::body::Incoming>| {
                        req.extensions_mut().insert(guard::Peer(peer.ip()));
                        tower::ServiceExt::oneshot(app.clone(), req)
                    },
                );
                let http = hyper::server::conn::http1::Builder::new();
                let served = match tls {
                    Some(acceptor) => match acceptor.accept(tcp).await {
                        Ok(stream) => http.serve_connection(TokioIo::new(stream), service).await,
                        Err(e) => {
                            tracing::debug!(%peer, "web: TLS handshake failed: {e}");
                            return;
                        }
                    },
                    None => http.serve_connection(TokioIo::new(tcp), service).await,
                };
                if let Err(e) = served {
                    tracing::debug!(%peer, "web: connection ended: {e}");
                }
            });
        }
        settler.abort();
        if let Some(n) = notifier {
            n.abort();
        }
        let _ = std::fs::remove_file(url_file(self.web.host.paths()));
        Ok(())
    }
}

/// How often the server reconciles overdue asks on its own.
const SETTLE_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// While the page is served, missions whose host died are reclaimed (as `mission
/// list` does), asks past their deadline take their on-timeout verdict (so the page
/// never offers an ask that can no longer be answered) and answered
/// runs whose host is gone are resumed here, as a running board does: on this
/// server's host, a run it resumes driven to the end of its turn and its unit
/// reaped, as `approvals respond` does.
fn spawn_settler(web: &Web) -> tokio::task::JoinHandle<()> {
    use crate::ops::answer::{self, Stranded};
    let host = web.host.clone();
    tokio::spawn(async move {
        loop {
            // The read views' reclaim: an open mission whose host died is shown
            // abandoned, not open, unless a pending ask explains the silence.
            let here = host.clone();
            match crate::store::blocking(move || crate::ops::sweep::reclaim(&here)).await {
                Ok(Some(line)) => tracing::info!("web: {line}"),
                Ok(None) => {}
                Err(e) => tracing::warn!("web: the reclaim sweep failed: {e}"),
            }
            match answer::settle_overdue(&host, Stranded::Resumable).await {
                Ok(s) if s.resumed > 0 || s.failed > 0 => tracing::info!(
                    resumed = s.resumed,
                    failed = s.failed,
                    "web: stranded runs whose host was gone"
                ),
                Ok(_) => {}
                Err(e) => tracing::warn!("web: overdue-ask sweep failed: {e:#}"),
            }
            tokio::time::sleep(SETTLE_EVERY).await;
        }
    })
}

/// The base address a running `missionboard web` of this home recorded.
pub fn recorded_url(paths: &Paths) -> Option<String> {
    std::fs::read_to_string(url_file(paths))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn url_file(paths: &Paths) -> PathBuf {
    paths.run_dir().join("web-url")
}

fn host_of(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

fn router(web: Web) -> Router {
    Router::new()
        .route("/", get(api::index))
        .route("/pair", get(api::pair_page))
        .route("/missions/{id}", get(api::mission_page))
        .route("/app.js", get(api::script))
        .route("/app.css", get(api::style))
        .route("/api/pair", post(api::pair))
        .route("/api/state", get(api::state))
        .route("/api/answer", post(api::answer))
        .route("/api/stop", post(api::stop))
        .route("/api/revoke-allowance", post(api::revoke_allowance))
        .route("/api/revise", post(api::revise))
        .route("/api/fire-template", post(api::fire_template))
        .route("/events", get(events::stream))
        .merge(hooks::routes(web.clone()))
        .fallback(api::not_found)
        .layer(axum::middleware::from_fn_with_state(
            web.clone(),
            guard::check,
        ))
        .with_state(web)
}

/// A rustls server configuration from PEM files, on the ring provider the rest of
/// the binary uses.
fn load_tls(cert: &std::path::Path, key: &std::path::Path) -> anyhow::Result<TlsAcceptor> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            anyhow::anyhow!(
                "--tls-cert {}: not a PEM certificate chain: {e}",
                cert.display()
            )
        })?;
    if certs.is_empty() {
        anyhow::bail!("--tls-cert {}: no certificate in it", cert.display());
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| anyhow::anyhow!("--tls-key {}: not a PEM private key: {e}", key.display()))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| anyhow::anyhow!("--tls-cert/--tls-key do not make a usable pair: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// `text` as a QR code drawn with Unicode half blocks (two modules a character
/// cell), dark on light with its quiet zone, so a phone's camera reads it from a
/// terminal of either colour scheme.
pub fn qr_text(text: &str) -> anyhow::Result<String> {
    use qrcode::render::unicode::Dense1x2;
    let code = qrcode::QrCode::new(text.as_bytes())
        .map_err(|e| anyhow::anyhow!("the link does not fit a QR code: {e}"))?;
    Ok(code
        .render::<Dense1x2>()
        .dark_color(Dense1x2::Light)
        .light_color(Dense1x2::Dark)
        .quiet_zone(true)
        .build())
}
