//! How a `store-url` becomes a PostgreSQL connection: its TLS mode and the
//! certificates it names, how long a connect may take, and where a password missing
//! from the URL comes from. The URL keeps libpq's spelling so an operator's existing
//! URL works as it is:
//!
//! | parameter | meaning |
//! |---|---|
//! | `sslmode` | `disable`; `prefer` (the default: TLS when the server offers it); `require` (TLS, any certificate); `verify-ca` (a certificate the roots vouch for); `verify-full` (and naming the host) |
//! | `sslrootcert` | a PEM file of the CA(s) to trust; the system roots when absent |
//! | `sslcert`, `sslkey` | a client certificate and its key (PEM), for servers that ask for one |
//! | `connect_timeout` | seconds a connect (TCP, TLS and start-up) may take; 10 when absent |
//! | `host` | a host name, or a directory holding the server's Unix-domain socket (`host=/var/run/postgresql`); also accepted percent-encoded in the URL's host part (`postgresql://%2Fvar%2Frun%2Fpostgresql/db`) |
//!
//! A URL that names no host takes it from `PGHOST` (a host name or a socket
//! directory), as libpq does. The port (`:5433` or `port=5433`) picks the socket file
//! `.s.PGSQL.<port>` in a socket directory. PostgreSQL never offers TLS on a
//! Unix-domain socket, so there `prefer` (the default) and `allow` connect in
//! plaintext, and a mode that demands TLS is refused, naming the fix.
//!
//! A password absent from the URL comes from `PGPASSWORD`, else the passfile
//! (`PGPASSFILE`, else `~/.pgpass`, honoured only when no one else may read it), as
//! libpq does; so `store-url` need not carry a secret at all.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// How long a connect may take when the URL does not say (`connect_timeout`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS a connection asks for (libpq's `sslmode`, minus `allow`, read as `prefer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// The mode as store-url spells it.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn parse(v: &str) -> Result<SslMode, String> {
        Ok(match v {
            "disable" => SslMode::Disable,
            "allow" | "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other:?} is not one of disable, prefer, require, verify-ca, verify-full"
                ));
            }
        })
    }
}

/// A `store-url` taken apart: what tokio-postgres is handed, and what this module
/// does itself.
pub struct Target {
    /// The URL without the parameters handled here.
    driver_url: String,
    /// Whether the URL names where the server is (a host part, or `host=` /
    /// `hostaddr=`); when not, `PGHOST` does.
    names_host: bool,
    pub sslmode: SslMode,
    /// Whether the URL named its sslmode (a named `prefer` that falls back says so).
    sslmode_named: bool,
    sslrootcert: Option<PathBuf>,
    client_cert: Option<(PathBuf, PathBuf)>,
    pub connect_timeout: Duration,
}

impl Target {
    /// Parse `url`, refusing parameters this module cannot honour (never silently
    /// weaker than what the operator wrote).
    pub fn parse(url: &str) -> Result<Target, String> {
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, q),
            None => (url, ""),
        };
        let mut kept = Vec::new();
        // `postgresql://:5433/db` names a port and no host; the driver would read an
        // empty host name, so the port moves to the query and the host is left to
        // PGHOST.
        let at = host_part_at(base);
        let host_part = &base[at.clone()];
        let base = match host_part.strip_prefix(':') {
            Some(port) => {
                kept.push(format!("port={port}"));
                format!("{}{}", &base[..at.start], &base[at.end..])
            }
            None => base.to_string(),
        };
        let mut sslmode = None;
        let (mut rootcert, mut cert, mut key, mut timeout) = (None, None, None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let value = || percent_decode(v);
            match k {
                "sslmode" => sslmode = Some(SslMode::parse(&value()?)?),
                "sslrootcert" => rootcert = Some(PathBuf::from(value()?)),
                "sslcert" => cert = Some(PathBuf::from(value()?)),
                "sslkey" => key = Some(PathBuf::from(value()?)),
                "connect_timeout" => {
                    let secs: u64 = value()?.trim().parse().map_err(|_| {
                        format!("connect_timeout={v:?} is not a whole number of seconds")
                    })?;
                    // libpq reads 0 as "wait forever"; a store never should.
                    timeout = Some(Duration::from_secs(secs.max(1)));
                }
                _ => kept.push(pair.to_string()),
            }
        }
        let names_host = !host_part.is_empty() && !host_part.starts_with(':')
            || kept.iter().any(|p| {
                let key = p.split_once('=').map_or(p.as_str(), |(k, _)| k);
                key == "host" || key == "hostaddr"
            });
        let client_cert = match (cert, key) {
            (Some(c), Some(k)) => Some((c, k)),
            (None, None) => None,
            _ => return Err("sslcert and sslkey go together: name both, or neither".into()),
        };
        let mut driver_url = base;
        if !kept.is_empty() {
            driver_url.push('?');
            driver_url.push_str(&kept.join("&"));
        }
        Ok(Target {
            driver_url,
            names_host,
            sslmode_named: sslmode.is_some(),
            sslmode: sslmode.unwrap_or(SslMode::Prefer),
            sslrootcert: rootcert,
            client_cert,
            connect_timeout: timeout.unwrap_or(DEFAULT_CONNECT_TIMEOUT),
        })
    }

    /// The driver's settings for this target, its password filled in from the
    /// environment or the passfile when the URL has none.
    pub fn driver_config(&self, tls: bool) -> Result<tokio_postgres::Config, String> {
        let mut config = self.server_at(std::env::var("PGHOST").ok())?;
        config.ssl_mode(if tls {
            tokio_postgres::config::SslMode::Require
        } else {
            tokio_postgres::config::SslMode::Disable
        });
        config.connect_timeout(self.connect_timeout);
        if config.get_password().is_none()
            && let Some(password) = password_for(&config)
        {
            config.password(password);
        }
        Ok(config)
    }

    /// The driver's settings for where the server is: the URL's host, else
    /// `pghost` (`PGHOST`'s value).
    fn server_at(&self, pghost: Option<String>) -> Result<tokio_postgres::Config, String> {
        let mut config: tokio_postgres::Config = self
            .driver_url
            .parse()
            .map_err(|e| format!("store-url: {e}"))?;
        if !self.names_host {
            let pghost = pghost.filter(|h| !h.trim().is_empty()).ok_or(
                "store-url names no host and PGHOST is not set — name the server in store-url (postgresql://user@host/db), or its socket directory (postgresql:///db?host=/var/run/postgresql), or set PGHOST",
            )?;
            // Like libpq, a comma-separated list is tried in order; an item starting
            // with `/` is a socket directory (the driver reads it so).
            for host in pghost.split(',') {
                config.host(host.trim());
            }
        }
        Ok(config)
    }

    /// The TLS mode this connection really asks for. A server reached on its
    /// Unix-domain socket never offers TLS (the kernel already tells it who the peer
    /// is), so, as libpq does, `prefer` there is plaintext from the start and a mode
    /// that demands TLS is refused with the fix, instead of a TLS handshake that
    /// cannot name a directory.
    pub fn effective_sslmode(&self) -> Result<SslMode, String> {
        use tokio_postgres::config::Host;
        let config = self.server_at(std::env::var("PGHOST").ok())?;
        let sockets: Vec<_> = config
            .get_hosts()
            .iter()
            .filter_map(|h| match h {
                Host::Unix(dir) => Some(dir.display().to_string()),
                Host::Tcp(_) => None,
            })
            .collect();
        if sockets.is_empty() || self.sslmode == SslMode::Disable {
            return Ok(self.sslmode);
        }
        if sockets.len() < config.get_hosts().len() {
            return Err(format!(
                "store-url lists both socket directories ({}) and network hosts under sslmode={}: TLS is asked of every host and a socket never offers it — list one kind, or set sslmode=disable",
                sockets.join(", "),
                self.sslmode.name()
            ));
        }
        match self.sslmode {
            SslMode::Prefer => Ok(SslMode::Disable),
            mode => Err(format!(
                "sslmode={} asks for TLS, which PostgreSQL never offers on a Unix-domain socket ({}) — set sslmode=prefer or disable in store-url to use the socket, or reach the server over TCP (host=<name>) to have TLS",
                mode.name(),
                sockets.join(", ")
            )),
        }
    }

    /// Whether a `prefer` that found no TLS deserves a word: the operator named the
    /// mode, or the server is not on this machine (plaintext then crosses a network).
    pub fn plaintext_fallback_is_news(&self, config: &tokio_postgres::Config) -> bool {
        use tokio_postgres::config::Host;
        self.sslmode_named
            || config.get_hosts().iter().any(|h| match h {
                Host::Tcp(name) => !is_loopback(name),
                Host::Unix(_) => false,
            })
    }

    /// The rustls side of a TLS connection.
    pub fn tls(&self) -> Result<RustlsConnector, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        // libpq's `require` encrypts without vouching for the server, except that a
        // named root certificate makes it verify the chain; the verify modes always do.
        let verifies = matches!(self.sslmode, SslMode::VerifyCa | SslMode::VerifyFull)
            || self.sslrootcert.is_some();
        let webpki = if verifies {
            Some(
                rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(self.roots()?),
                    provider.clone(),
                )
                .build()
                .map_err(|e| format!("the TLS roots cannot verify anything: {e}"))?,
            )
        } else {
            None
        };
        let verifier = Arc::new(ServerCheck {
            webpki,
            check_name: self.sslmode == SslMode::VerifyFull,
            provider: provider.clone(),
        });
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &self.client_cert {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = read_certs(cert, "sslcert")?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                    format!(
                        "sslkey {}: {e} — name a PEM private key file readable by this user",
                        key.display()
                    )
                })?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    format!("sslcert/sslkey: {e} — the key must belong to the certificate")
                })?
            }
        };
        Ok(RustlsConnector(Arc::new(config)))
    }

    fn roots(&self) -> Result<RootCertStore, String> {
        let mut roots = RootCertStore::empty();
        match &self.sslrootcert {
            Some(path) => {
                for cert in read_certs(path, "sslrootcert")? {
                    roots
                        .add(cert)
                        .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                for cert in found.certs {
                    let _ = roots.add(cert);
                }
                if roots.is_empty()
                    && matches!(self.sslmode, SslMode::VerifyCa | SslMode::VerifyFull)
                {
                    return Err(
                        "no system CA certificates were found to verify the database server — name the server's CA with sslrootcert=<file.pem> in store-url".into(),
                    );
                }
            }
        }
        Ok(roots)
    }
}

fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            format!(
                "{what} {}: {e} — name a PEM certificate file readable by this user",
                path.display()
            )
        })?;
    if certs.is_empty() {
        return Err(format!(
            "{what} {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            path.display()
        ));
    }
    Ok(certs)
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_matches(|c| c == '[' || c == ']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Where the host part (`host`, `host:port`, a list of them, or nothing) sits in a
/// URL without its query.
fn host_part_at(base: &str) -> std::ops::Range<usize> {
    let Some(scheme_end) = base.find("://").map(|i| i + 3) else {
        return base.len()..base.len();
    };
    let authority_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let start = base[scheme_end..authority_end]
        .rfind('@')
        .map_or(scheme_end, |i| scheme_end + i + 1);
    start..authority_end
}

/// `%XX` escapes decoded (a URL's parameter values may carry them).
fn percent_decode(v: &str) -> Result<String, String> {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = v
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("store-url: a bad %-escape in {v:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("store-url: {v:?} is not UTF-8 once decoded"))
}

/// The password for `config` from `PGPASSWORD`, else the passfile.
fn password_for(config: &tokio_postgres::Config) -> Option<String> {
    if let Some(p) = std::env::var_os("PGPASSWORD").and_then(|p| p.into_string().ok())
        && !p.is_empty()
    {
        return Some(p);
    }
    let file = match std::env::var_os("PGPASSFILE") {
        Some(f) if !f.is_empty() => PathBuf::from(f),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".pgpass"),
    };
    let text = read_private(&file)?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        Some(tokio_postgres::config::Host::Unix(_)) | None => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let user = config.get_user().unwrap_or_default();
    let db = config.get_dbname().unwrap_or(user);
    passfile_lookup(&text, [&host, &port, db, user])
}

/// The passfile's text, if only its owner may read it (libpq ignores it otherwise).
fn read_private(file: &Path) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if meta.permissions().mode() & 0o077 != 0 {
        tracing::warn!(
            "store: ignoring the passfile {}: others may read it (chmod 600 it)",
            file.display()
        );
        return None;
    }
    std::fs::read_to_string(file).ok()
}

/// The first `host:port:database:user:password` line matching `wanted` (`*` matches
/// anything; `\:` and `\\` are escapes).
fn passfile_lookup(text: &str, wanted: [&str; 4]) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => field.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
                _ => field.push(c),
            }
        }
        fields.push(field);
        if fields.len() == 5
            && fields[..4]
                .iter()
                .zip(wanted)
                .all(|(have, want)| have == "*" || have == want)
        {
            return fields.pop();
        }
    }
    None
}

/// What a connection checks of the server's certificate. The handshake's signatures
/// are always checked (so the session really is encrypted with whoever holds the
/// key); with `webpki`, the chain must also lead to a trusted root (`verify-ca`, or
/// `require` with a named root), and under `check_name` name the host (`verify-full`).
#[derive(Debug)]
struct ServerCheck {
    webpki: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    check_name: bool,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for ServerCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::NotValidForName))
            | Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// tokio-postgres's TLS hook, on rustls.
#[derive(Clone)]
pub struct RustlsConnector(Arc<ClientConfig>);

impl<S> MakeTlsConnect<S> for RustlsConnector
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnect> {
        let name = ServerName::try_from(domain.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(RustlsConnect {
            config: self.0.clone(),
            name,
        })
    }
}

pub struct RustlsConnect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let tls = tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await?;
            Ok(RustlsStream(tls))
        })
    }
}

pub struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for RustlsStream<S> {
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

/// `url` with its database replaced by `name` (the host, credentials and query kept):
/// a database made beside the one an admin URL names.
pub fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(i) => &base[..after_scheme + i],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

/// `url` with any password replaced, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, host) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, rest),
    };
    let mut out = format!("{scheme}://");
    if let Some(a) = auth {
        match a.split_once(':') {
            Some((user, _)) => out.push_str(&format!("{user}:***@")),
            None => out.push_str(&format!("{a}@")),
        }
    }
    // A password can also ride in the query string.
    match host.split_once('?') {
        Some((h, q)) => {
            out.push_str(h);
            out.push('?');
            let kept: Vec<String> = q
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            out.push_str(&kept.join("&"));
        }
        None => out.push_str(host),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handled_parameters_leave_the_driver_url() {
        let t = Target::parse(
            "postgres://u@db.example:5433/mb?sslmode=verify-full&sslrootcert=/etc/ca%20x.pem&connect_timeout=3&application_name=x",
        )
        .unwrap();
        assert_eq!(
            t.driver_url,
            "postgres://u@db.example:5433/mb?application_name=x"
        );
        assert_eq!(t.sslmode, SslMode::VerifyFull);
        assert_eq!(t.sslrootcert.as_deref(), Some(Path::new("/etc/ca x.pem")));
        assert_eq!(t.connect_timeout, Duration::from_secs(3));
        let plain = Target::parse("postgres://u@h/mb").unwrap();
        assert_eq!(
            (plain.sslmode, plain.sslmode_named),
            (SslMode::Prefer, false)
        );
        assert_eq!(plain.connect_timeout, DEFAULT_CONNECT_TIMEOUT);
    }

    #[test]
    fn unknown_modes_and_half_client_certs_refuse() {
        assert!(
            Target::parse("postgres://u@h/mb?sslmode=verify")
                .err()
                .unwrap()
                .contains("verify-full")
        );
        assert!(
            Target::parse("postgres://u@h/mb?sslcert=/c.pem")
                .err()
                .unwrap()
                .contains("go together")
        );
        assert!(Target::parse("postgres://u@h/mb?connect_timeout=soon").is_err());
    }

    #[test]
    fn passfile_lines_match_with_wildcards_and_escapes() {
        let text = "# comment\nother:5432:*:u:nope\n*:5432:mb:u:pa\\:ss\n";
        assert_eq!(
            passfile_lookup(text, ["db", "5432", "mb", "u"]).as_deref(),
            Some("pa:ss")
        );
        assert_eq!(passfile_lookup(text, ["db", "5433", "mb", "u"]), None);
    }

    #[test]
    fn a_socket_directory_is_read_from_the_query_the_host_part_or_pghost() {
        use tokio_postgres::config::Host;
        let socket = |url: &str, pghost: Option<&str>| {
            let t = Target::parse(url).unwrap();
            let c = t.server_at(pghost.map(String::from)).unwrap();
            (c.get_hosts().to_vec(), c.get_ports().to_vec())
        };
        let dir = Host::Unix("/var/run/postgresql".into());
        assert_eq!(
            socket("postgresql:///db?host=/var/run/postgresql&port=5433", None),
            (vec![dir.clone()], vec![5433])
        );
        assert_eq!(
            socket("postgresql://%2Fvar%2Frun%2Fpostgresql:5433/db", None),
            (vec![dir.clone()], vec![5433])
        );
        // No host in the URL: PGHOST's, with the URL's port, in either spelling.
        for url in ["postgresql:///db?port=5433", "postgresql://u@:5433/db"] {
            assert_eq!(
                socket(url, Some("/var/run/postgresql")),
                (vec![dir.clone()], vec![5433]),
                "{url}"
            );
        }
        // A URL's own host wins over PGHOST.
        assert_eq!(
            socket("postgresql://db.example/db", Some("/var/run/postgresql")).0,
            vec![Host::Tcp("db.example".into())]
        );
        // Neither: the error names all three ways.
        let none = Target::parse("postgresql:///db").unwrap();
        let err = none.server_at(None).unwrap_err();
        assert!(err.contains("host=/var/run/postgresql") && err.contains("PGHOST"));
    }

    #[test]
    fn a_socket_is_plaintext_under_prefer_and_refused_under_require() {
        let mode = |url: &str| Target::parse(url).unwrap().effective_sslmode();
        assert_eq!(mode("postgresql:///db?host=/run/pg"), Ok(SslMode::Disable));
        assert_eq!(
            mode("postgresql:///db?host=/run/pg&sslmode=allow"),
            Ok(SslMode::Disable)
        );
        assert_eq!(mode("postgresql://h/db"), Ok(SslMode::Prefer));
        for strict in ["require", "verify-ca", "verify-full"] {
            let err = mode(&format!("postgresql://%2Frun%2Fpg/db?sslmode={strict}")).unwrap_err();
            assert!(
                err.contains(&format!("sslmode={strict} asks for TLS"))
                    && err.contains("/run/pg")
                    && err.contains("sslmode=prefer or disable"),
                "{err}"
            );
        }
        assert!(
            mode("postgresql:///db?host=/run/pg&host=db.example")
                .unwrap_err()
                .contains("list one kind")
        );
        assert_eq!(
            mode("postgresql:///db?host=/run/pg&host=db.example&sslmode=disable"),
            Ok(SslMode::Disable)
        );
    }

    #[test]
    fn only_a_remote_host_or_a_named_prefer_makes_a_fallback_news() {
        let quiet = Target::parse("postgres://u@127.0.0.1/mb").unwrap();
        let cfg = quiet.driver_config(false).unwrap();
        assert!(!quiet.plaintext_fallback_is_news(&cfg));
        let named = Target::parse("postgres://u@127.0.0.1/mb?sslmode=prefer").unwrap();
        assert!(named.plaintext_fallback_is_news(&named.driver_config(false).unwrap()));
        let remote = Target::parse("postgres://u@db.example/mb").unwrap();
        assert!(remote.plaintext_fallback_is_news(&remote.driver_config(false).unwrap()));
    }

    #[test]
    fn a_database_beside_the_admin_one_keeps_host_credentials_and_options() {
        assert_eq!(
            with_database("postgres://mb:pw@db:5432/postgres?sslmode=disable", "mb_x"),
            "postgres://mb:pw@db:5432/mb_x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://db", "mb_x"), "postgres://db/mb_x");
    }

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(
            redact("postgres://mb:s3cret@db.local:5432/board"),
            "postgres://mb:***@db.local:5432/board"
        );
        assert_eq!(
            redact("postgresql://db/board?user=mb&password=s3cret"),
            "postgresql://db/board?user=mb&password=***"
        );
        assert_eq!(redact("postgres://db/board"), "postgres://db/board");
    }
}
