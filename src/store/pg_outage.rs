//! Waiting out a shared database that went away (a restart, a failover, a network
//! blip) around one store call: off unless the process asks for it (a process that
//! hosts units or a board does, one-shot commands fail at once), reconnecting with
//! backoff within a grace, and never running again a call whose commit may have
//! landed.

use std::time::Duration;

use super::postgres::PgSession;
use super::value::{Error, Result};

/// How long (ms) this process waits out a database that went away; 0: not at all.
static OUTAGE_GRACE_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Let every store call of this process wait out a database outage (a restart, a
/// failover, a network blip) of up to `grace`, reconnecting with backoff, instead of
/// failing: what a process that hosts units or a board wants, so an outage ends no
/// mission. One-shot commands keep failing at once, naming the store.
pub fn ride_out_outages(grace: Duration) {
    OUTAGE_GRACE_MS.store(
        grace.as_millis().min(u64::MAX as u128) as u64,
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// When (ms since the epoch) a call of this process began waiting for the database
/// to come back; 0 while none waits.
static OUTAGE_SINCE_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// Since when this process has been waiting out an outage, if it is (the board's
/// status line reads it without touching the store, whose calls are waiting).
pub fn outage_since() -> Option<i64> {
    Some(OUTAGE_SINCE_MS.load(std::sync::atomic::Ordering::Relaxed)).filter(|&ms| ms > 0)
}

/// Run `call` on the session, again after a reconnect whenever it failed because
/// the server went away (the connection closed, or the server is starting or
/// stopping), until the outage grace runs out. A call whose COMMIT went out before
/// the connection broke is never run again: whether it landed is unknown, and the
/// error says so rather than risk writing twice. Everything else is safe to run
/// again: a transaction cut off before its commit was rolled back by the server.
pub(super) fn riding_out<T>(
    session: &mut PgSession,
    mut call: impl FnMut(&mut PgSession) -> Result<T>,
) -> Result<T> {
    let grace = Duration::from_millis(OUTAGE_GRACE_MS.load(std::sync::atomic::Ordering::Relaxed));
    let started = std::time::Instant::now();
    let mut pause = Duration::from_millis(50);
    let mut said = false;
    loop {
        session.clear_doubt();
        let out = call(session);
        let gone = match &out {
            Err(Error::CannotOpen(_)) => session.is_closed() || went_away(&out),
            _ => false,
        };
        if !gone || session.in_doubt() || started.elapsed() + pause > grace {
            if said {
                OUTAGE_SINCE_MS.store(0, std::sync::atomic::Ordering::Relaxed);
            }
            if session.in_doubt()
                && let Err(Error::CannotOpen(m)) = out
            {
                return Err(Error::CannotOpen(format!(
                    "{m} — the connection broke while a commit was on its way, so whether it landed is unknown; check the record before repeating"
                )));
            }
            return out;
        }
        if !said {
            said = true;
            tracing::warn!("store: the database went away; reconnecting for up to {grace:?}");
            let _ = OUTAGE_SINCE_MS.compare_exchange(
                0,
                crate::clock::now_ms(),
                std::sync::atomic::Ordering::Relaxed,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// A connect that failed because the server is not there (refused, reset, timed
/// out, starting up or shutting down), as opposed to a refusal that waiting
/// cannot cure (a wrong password, a missing database).
fn went_away<T>(out: &Result<T>) -> bool {
    matches!(out, Err(Error::CannotOpen(m)) if TRANSIENT.iter().any(|t| m.contains(t)))
}

/// What a server that is away says, as tokio-postgres words it.
const TRANSIENT: &[&str] = &[
    "Connection refused",
    "Connection reset",
    "error connecting to server",
    "connection closed",
    "did not answer within",
    "(57P01)",
    "(57P02)",
    "(57P03)",
    "(08006)",
    "(08001)",
    "(08003)",
    "(08004)",
];
