//! The connection under a PostgreSQL session (`store::postgres`): the runtime every
//! connection of this process runs on and the blocking wait on its replies (so the
//! store stays synchronous, usable from any thread), one connect with the TLS the
//! `store-url` asks for (and `prefer`'s plaintext fallback), the task that drives a
//! connection and hands its notifications to a listener, and the driver's errors
//! worded in the query layer's terms.

use std::error::Error as StdError;
use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use tokio_postgres::{AsyncMessage, Client, NoTls};

use super::pg_connect::{SslMode, Target};
use super::value::Error;
use super::value::Result;

/// How long a statement waits for a lock another host holds before it gives up.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(15);

/// Called for each announcement a listening connection hears; false stops it.
pub(super) type Heard = Box<dyn FnMut() -> bool + Send>;

/// The runtime every PostgreSQL connection of this process runs on. Callers never
/// enter it: a call hands its request to the connection and blocks on the reply
/// (`wait`), so the store is usable from any thread, async worker or not, exactly
/// like the SQLite backend.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("store-pg")
            .enable_all()
            .build()
            .expect("start the store's PostgreSQL runtime")
    })
}

/// Block this thread on a request to a connection the store's runtime drives.
///
/// Parks the thread until the reply's waker unparks it. Not `futures`' `block_on`:
/// that refuses to run inside another executor, and callers may already be inside
/// one (a `block_on` poll loop that reads the store), where SQLite works.
pub(super) fn wait<F: Future>(f: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return out;
        }
        // A spurious wake-up only polls once more.
        std::thread::park();
    }
}

/// A connected client, its session settings made; `heard` (for the listening
/// connection) is called on each announcement.
pub(super) fn connect_client(url: &str, heard: Option<Heard>) -> Result<Client> {
    let target = Target::parse(url).map_err(Error::CannotOpen)?;
    let sslmode = target.effective_sslmode().map_err(Error::CannotOpen)?;
    let client = match sslmode {
        SslMode::Disable => open(&target, false, heard).map_err(|(e, _)| e)?,
        SslMode::Prefer => match open(&target, true, heard) {
            Ok(client) => client,
            Err((e, heard)) if no_tls_offered(&e) => {
                say_plaintext_once(&target);
                open(&target, false, heard).map_err(|(e, _)| e)?
            }
            Err((e, _)) => return Err(e),
        },
        _ => open(&target, true, heard).map_err(|(e, _)| match e {
            e if no_tls_offered(&e) => Error::CannotOpen(format!(
                "the server does not offer TLS, which sslmode={} requires — turn TLS on in its postgresql.conf (ssl = on, with ssl_cert_file and ssl_key_file), or set sslmode=disable in store-url to connect in plaintext",
                sslmode.name()
            )),
            e => e,
        })?,
    };
    wait(client.batch_execute(&format!(
        "SET lock_timeout = '{}s'; SET client_min_messages = warning",
        LOCK_TIMEOUT.as_secs()
    )))
    .map_err(from_pg)?;
    Ok(client)
}

/// The error tokio-postgres gives when a server answers a TLS request with "no".
fn no_tls_offered(e: &Error) -> bool {
    e.to_string().contains("server does not support TLS")
}

/// A `prefer` that fell back to plaintext says so, once per process, where the
/// fallback is news (the operator named the mode, or the server is across a network).
fn say_plaintext_once(target: &Target) {
    static SAID: std::sync::Once = std::sync::Once::new();
    let news = target
        .driver_config(false)
        .is_ok_and(|c| target.plaintext_fallback_is_news(&c));
    tracing::info!("store: the database offers no TLS; connected in plaintext (sslmode=prefer)");
    if news {
        SAID.call_once(|| {
            tracing::warn!("store: connected to the database in plaintext: it offers no TLS");
            eprintln!(
                "missionboard: the database server offers no TLS, so this connection is in plaintext (sslmode=prefer) — set sslmode=require in store-url to refuse plaintext"
            );
        });
    }
}

/// One connect attempt, with or without TLS, bounded by the target's connect timeout;
/// a failure hands `heard` back for the next attempt.
fn open(
    target: &Target,
    tls: bool,
    heard: Option<Heard>,
) -> std::result::Result<Client, (Error, Option<Heard>)> {
    let config = match target.driver_config(tls) {
        Ok(c) => c,
        Err(e) => return Err((Error::CannotOpen(e), heard)),
    };
    let connector = match tls.then(|| target.tls()).transpose() {
        Ok(c) => c,
        Err(e) => return Err((Error::CannotOpen(e), heard)),
    };
    let limit = target.connect_timeout;
    let (reply, answer) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let mut heard = heard;
        let attempt = async {
            match connector {
                Some(tls) => {
                    let (client, connection) = config.connect(tls).await?;
                    tokio::spawn(drive(connection, heard.take()));
                    Ok(client)
                }
                None => {
                    let (client, connection) = config.connect(NoTls).await?;
                    tokio::spawn(drive(connection, heard.take()));
                    Ok(client)
                }
            }
        };
        let outcome = match tokio::time::timeout(limit, attempt).await {
            Ok(Ok(client)) => Ok(client),
            Ok(Err(e)) => Err((from_connect(e), heard)),
            Err(_) => Err((
                Error::CannotOpen(format!(
                    "the server did not answer within {}s (raise connect_timeout=<seconds> in store-url for a slow network)",
                    limit.as_secs()
                )),
                heard,
            )),
        };
        let _ = reply.send(outcome);
    });
    answer.recv().unwrap_or_else(|_| {
        Err((
            Error::CannotOpen("the connection task ended before it connected".into()),
            None,
        ))
    })
}

/// Drive a connection until it ends, handing each notification to the listener.
async fn drive<S, T>(mut connection: tokio_postgres::Connection<S, T>, mut heard: Option<Heard>)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures::StreamExt;
    let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
    while let Some(message) = messages.next().await {
        match message {
            Ok(AsyncMessage::Notification(_)) => {
                if let Some(h) = heard.as_mut()
                    && !h()
                {
                    return;
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!("store: PostgreSQL connection ended: {e}");
                return;
            }
        }
    }
}

/// A failed connect, worded with its fix where the cause is known.
fn from_connect(e: tokio_postgres::Error) -> Error {
    let text = {
        let mut t = e.to_string();
        if let Some(src) = e.source() {
            t = format!("{t}: {src}");
        }
        t
    };
    if text.contains("certificate") || text.contains("UnknownIssuer") {
        return Error::CannotOpen(format!(
            "{text} — the server's certificate was not accepted: name its CA with sslrootcert=<file.pem> in store-url, or use sslmode=require to encrypt without verifying who the server is"
        ));
    }
    match from_pg(e) {
        Error::Other(t) => Error::CannotOpen(t),
        other => other,
    }
}

/// A PostgreSQL error in the query layer's terms (SQLSTATE classes).
pub(super) fn from_pg(e: tokio_postgres::Error) -> Error {
    let text = match e.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => {
            let mut t = e.to_string();
            if let Some(src) = e.source() {
                t = format!("{t}: {src}");
            }
            t
        }
    };
    let Some(code) = e.code() else {
        return if e.is_closed() || e.source().is_some_and(|s| s.is::<std::io::Error>()) {
            Error::CannotOpen(text)
        } else {
            Error::Other(text)
        };
    };
    match code.code() {
        // Out of connections: the role's own limit, or the server's.
        "53300" if text.contains("for role") => Error::CannotOpen(format!(
            "{text} — the role may hold no more connections: raise its limit (ALTER ROLE <role> CONNECTION LIMIT <n>; a missionboard process holds at most two), or run fewer missionboard processes with it"
        )),
        "53300" => Error::CannotOpen(format!(
            "{text} — the server has no free connection: raise max_connections in its postgresql.conf, or run fewer missionboard processes against it"
        )),
        c if c.starts_with("23") => Error::Constraint(text),
        "40001" | "40P01" | "55P03" | "57014" => Error::Busy(text),
        // The server is shutting down, crashed, or is starting up: gone for now.
        "57P01" | "57P02" | "57P03" => Error::CannotOpen(text),
        c if c.starts_with("28") || c.starts_with("08") || c == "3D000" => Error::CannotOpen(text),
        "22P02" | "22003" => Error::Conversion(text),
        _ => Error::Other(text),
    }
}
