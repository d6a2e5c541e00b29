//! The PostgreSQL backend of the query layer (`store-url = postgres://…`): one
//! synchronous client per store handle, the house dialect translated at prepare time,
//! every write transaction serialised the way SQLite's `BEGIN IMMEDIATE` serialises
//! them, and each commit announced with `NOTIFY` so every other host and board wakes
//! within milliseconds (`store::changes`).
//!
//! Guarded transitions stay single statements (`UPDATE … WHERE state = 'pending'`,
//! the answer cap as a subquery inside the UPDATE); READ COMMITTED re-evaluates such a
//! statement's WHERE against the row it waited for, so exactly one writer wins. Every
//! write — a [`Store::write`](super::Store::write) transaction or a lone statement —
//! holds the one advisory lock, so the read-then-write transactions no single
//! statement can express see no other writer between their read and their write.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::time::Duration;

use std::future::Future;
use std::sync::OnceLock;

use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client, NoTls, Statement};

use super::pg_connect::{SslMode, Target};
use super::pg_dialect::translate;
use super::value::{Error, Result, Value};

/// The channel every commit is announced on (per database, as NOTIFY is).
pub const CHANGES_CHANNEL: &str = "missionboard_changes";
/// The advisory lock every write transaction holds (`Store::write`, and the one a
/// lone write statement runs in).
pub const WRITE_LOCK: i64 = 0x6d62_7772; // "mbwr"
/// A write transaction's commit, its announcement riding along.
static COMMIT_ANNOUNCED: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("NOTIFY {CHANGES_CHANNEL}; COMMIT"));
/// A write transaction begun and its turn taken, in one round trip.
static BEGIN_WRITE: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK})"));
/// The schema version of a PostgreSQL database (SQLite keeps it in `user_version`).
pub const SCHEMA_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS missionboard_schema (version BIGINT NOT NULL)";
/// How long a statement waits for a lock another host holds before it gives up.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(15);

/// One connection and its prepared statements.
pub struct PgSession {
    url: String,
    client: Client,
    statements: HashMap<String, Statement>,
    tx: Tx,
    /// A statement changed something since the last announcement.
    dirty: bool,
    /// The connection broke while a COMMIT was in flight (see [`riding_out`]).
    commit_in_doubt: bool,
    /// The statements the open transaction ends with, sent with its COMMIT
    /// ([`PgSession::execute_at_commit`]).
    at_commit: Vec<(String, Vec<Value>)>,
}

impl PgSession {
    pub fn connect(url: &str) -> Result<PgSession> {
        let client = connect_client(url, None)?;
        Ok(PgSession {
            url: url.to_string(),
            client,
            statements: HashMap::new(),
            tx: Tx::None,
            dirty: false,
            commit_in_doubt: false,
            at_commit: Vec::new(),
        })
    }

    /// Reconnect when the server dropped us (a restart, an idle timeout): the next
    /// call works again instead of every call failing until the process restarts.
    pub fn revive(&mut self) -> Result<()> {
        if self.client.is_closed() {
            self.client = connect_client(&self.url, None)?;
            self.statements.clear();
            self.tx = Tx::None;
            self.at_commit.clear();
        }
        Ok(())
    }

    /// Whether the last failure left writes that may have committed: the
    /// connection broke after a COMMIT was sent and before its reply came back.
    fn in_doubt(&self) -> bool {
        self.commit_in_doubt
    }

    fn statement(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let translated = translate(sql);
        let s = wait(self.client.prepare(&translated)).map_err(from_pg)?;
        self.statements.insert(sql.to_string(), s.clone());
        Ok(s)
    }

    /// Each of `sqls` prepared (from the cache where it was before).
    fn statements<'b>(
        &mut self,
        sqls: impl IntoIterator<Item = &'b str>,
    ) -> Result<Vec<Statement>> {
        sqls.into_iter().map(|sql| self.statement(sql)).collect()
    }

    pub fn execute(&mut self, sql: &str, params: &[Value]) -> Result<usize> {
        self.send_at_commit_now()?;
        let stmt = self.statement(sql)?;
        let n = run_statement(
            &self.client,
            (true, &mut self.tx),
            (&mut self.dirty, &mut self.commit_in_doubt),
            self.client.execute(&stmt, &param_refs(params)),
        )?;
        Ok(n as usize)
    }

    pub fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        self.send_at_commit_now()?;
        let stmt = self.statement(sql)?;
        let rows = run_statement(
            &self.client,
            (writes(sql), &mut self.tx),
            (&mut self.dirty, &mut self.commit_in_doubt),
            self.client.query(&stmt, &param_refs(params)),
        )?;
        rows.iter().map(row_values).collect()
    }

    /// Statements written for PostgreSQL (migrations, a database made or dropped):
    /// run as they are. Inside a write transaction they hold the write lock like any
    /// statement (a fresh database's version table is made so: two hosts starting on
    /// it at once must not both create it); outside one they run alone, since
    /// `CREATE DATABASE` cannot run in a transaction.
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        self.send_at_commit_now()?;
        if matches!(self.tx, Tx::None) {
            wait(self.client.batch_execute(sql)).map_err(from_pg)?;
            self.dirty = true;
            return Ok(());
        }
        run_statement(
            &self.client,
            (true, &mut self.tx),
            (&mut self.dirty, &mut self.commit_in_doubt),
            self.client.batch_execute(sql),
        )
    }

    /// Begin a write transaction that no other writer, on any host, interleaves with.
    /// Nothing is sent yet: its BEGIN and lock ride with the transaction's first
    /// statement, so they cost no round trip of their own.
    pub fn begin_write(&mut self) -> Result<()> {
        self.tx = Tx::Pending;
        Ok(())
    }

    /// Run statements that need nothing from each other's results, in order, inside
    /// the open write transaction, pipelined: one round trip for all of them (and the
    /// transaction's BEGIN, when they are its first). The first failure is returned
    /// (the server skips nothing, but a failed statement aborts the transaction, so
    /// the ones after it fail too and the caller rolls back).
    pub fn execute_all(&mut self, batch: &[(&str, Vec<Value>)]) -> Result<Vec<usize>> {
        self.send_at_commit_now()?;
        if matches!(self.tx, Tx::None) {
            return batch
                .iter()
                .map(|(sql, params)| self.execute(sql, params))
                .collect();
        }
        let statements = self.statements(batch.iter().map(|(sql, _)| *sql))?;
        let params: Vec<&[Value]> = batch.iter().map(|(_, p)| p.as_slice()).collect();
        let counts = run_statement(
            &self.client,
            (true, &mut self.tx),
            (&mut self.dirty, &mut self.commit_in_doubt),
            execute_pipelined(&self.client, &statements, &params),
        )?;
        Ok(counts.into_iter().map(|n| n as usize).collect())
    }

    /// Statements that end the open write transaction and whose results nobody
    /// reads: held, and sent with its COMMIT (and its BEGIN, when they are all it
    /// has) in one round trip. A failure among them fails the commit, so the whole
    /// transaction. A statement run after them sends them first. Outside a
    /// transaction they run at once.
    pub fn execute_at_commit(&mut self, batch: &[(&str, Vec<Value>)]) -> Result<()> {
        if matches!(self.tx, Tx::None) {
            return self.execute_all(batch).map(drop);
        }
        self.at_commit.extend(
            batch
                .iter()
                .map(|(sql, params)| (sql.to_string(), params.clone())),
        );
        Ok(())
    }

    /// A statement is about to run inside the transaction: what was held for the
    /// commit goes first, in order.
    fn send_at_commit_now(&mut self) -> Result<()> {
        if self.at_commit.is_empty() {
            return Ok(());
        }
        let held = std::mem::take(&mut self.at_commit);
        let batch: Vec<(&str, Vec<Value>)> = held
            .iter()
            .map(|(sql, params)| (sql.as_str(), params.clone()))
            .collect();
        self.execute_all(&batch).map(drop)
    }

    /// The open write transaction's last statement, whose rows are read: sent after
    /// what was held for the commit, with the transaction's BEGIN when nothing of it
    /// was sent yet, and with its COMMIT — one round trip. The transaction is over
    /// when it returns; a statement after it in the same transaction is refused.
    /// Outside a transaction it is a lone statement (a write there is one round trip
    /// already).
    pub fn query_and_commit(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Vec<Value>>> {
        if matches!(self.tx, Tx::None) {
            return self.query(sql, params);
        }
        let held = std::mem::take(&mut self.at_commit);
        let rows = self.commit_with(&held, Some((sql, params)))?;
        self.tx = Tx::Ended;
        rows.iter().map(row_values).collect()
    }

    pub fn commit(&mut self) -> Result<()> {
        let held = std::mem::take(&mut self.at_commit);
        if !held.is_empty() {
            return self.commit_with(&held, None).map(drop);
        }
        // A transaction that ran no statement never began, and one its last
        // statement committed is over: nothing to end.
        if !matches!(std::mem::replace(&mut self.tx, Tx::None), Tx::Open) {
            return Ok(());
        }
        // NOTIFY inside the transaction is delivered at its commit: one round trip.
        let commit = if std::mem::take(&mut self.dirty) {
            COMMIT_ANNOUNCED.as_str()
        } else {
            "COMMIT"
        };
        let out = wait(self.client.batch_execute(commit));
        if out.is_err() {
            // A failed COMMIT may leave the transaction aborted but open: the
            // rollback that follows must end it.
            self.tx = Tx::Open;
        }
        self.commit_in_doubt = out.is_err() && self.client.is_closed();
        out.map_err(from_pg)
    }

    /// Commit with `held` in the same pipeline: the transaction's BEGIN (when
    /// nothing of it was sent yet), the statements, the `last` query whose rows are
    /// returned, the announced COMMIT.
    fn commit_with(
        &mut self,
        held: &[(String, Vec<Value>)],
        last: Option<(&str, &[Value])>,
    ) -> Result<Vec<tokio_postgres::Row>> {
        if matches!(self.tx, Tx::Ended) {
            return Err(ended());
        }
        let statements = self.statements(held.iter().map(|(sql, _)| sql.as_str()))?;
        let params: Vec<&[Value]> = held.iter().map(|(_, p)| p.as_slice()).collect();
        let last = match last {
            Some((sql, values)) => Some((self.statement(sql)?, values)),
            None => None,
        };
        let begin = matches!(self.tx, Tx::Pending);
        // From here the server may hold a transaction: a failure is ended by the
        // caller's rollback.
        self.tx = Tx::Open;
        let client = &self.client;
        let (began, ran, read, committed) = wait(async {
            futures::join!(
                async {
                    match begin {
                        true => client.batch_execute(&BEGIN_WRITE).await,
                        false => Ok(()),
                    }
                },
                execute_pipelined(client, &statements, &params),
                async {
                    match &last {
                        Some((stmt, values)) => client.query(stmt, &param_refs(values)).await,
                        None => Ok(Vec::new()),
                    }
                },
                client.batch_execute(&COMMIT_ANNOUNCED)
            )
        });
        match (began, ran, read, committed) {
            (Ok(()), Ok(_), Ok(rows), Ok(())) => {
                self.tx = Tx::None;
                self.dirty = false;
                Ok(rows)
            }
            (began, ran, read, committed) => {
                let closed = self.client.is_closed();
                self.commit_in_doubt = began.is_ok() && ran.is_ok() && read.is_ok() && closed;
                Err(from_pg(
                    began
                        .err()
                        .or(ran.err())
                        .or(read.err())
                        .or(committed.err())
                        .expect("one step failed"),
                ))
            }
        }
    }

    pub fn rollback(&mut self) {
        self.dirty = false;
        self.at_commit.clear();
        if !matches!(std::mem::replace(&mut self.tx, Tx::None), Tx::Open) {
            return;
        }
        // A failed rollback leaves a broken connection, which `revive` replaces.
        let _ = wait(self.client.batch_execute("ROLLBACK"));
    }

    /// Outside a transaction: tell the other hosts something changed, if it did.
    pub fn finish(&mut self) -> Result<()> {
        if matches!(self.tx, Tx::None) {
            self.announce()?;
        }
        Ok(())
    }

    /// Outside a transaction, NOTIFY is delivered at once.
    fn announce(&mut self) -> Result<()> {
        if std::mem::take(&mut self.dirty) {
            wait(
                self.client
                    .batch_execute(&format!("NOTIFY {CHANGES_CHANNEL}")),
            )
            .map_err(from_pg)?;
        }
        Ok(())
    }

    /// The server's clock, in milliseconds since the epoch (doctor's skew check).
    pub fn server_now_ms(&mut self) -> Result<i64> {
        let row = wait(self.client.query_one(
            "SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
            &[],
        ))
        .map_err(from_pg)?;
        row.try_get(0).map_err(from_pg)
    }

    /// A connection of its own that LISTENs for commit announcements, calling
    /// `heard` for each; it lives until `heard` returns false or the server drops
    /// it (`Ok` returns once it is listening; the returned client keeps it open).
    pub fn listen(url: &str, heard: impl FnMut() -> bool + Send + 'static) -> Result<Client> {
        let client = connect_client(url, Some(Box::new(heard)))?;
        wait(client.batch_execute(&format!("LISTEN {CHANGES_CHANNEL}"))).map_err(from_pg)?;
        Ok(client)
    }
}

/// Where a session is in a [`PgSession::begin_write`] transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tx {
    /// None open: each statement stands alone.
    None,
    /// Begun by the caller, but nothing sent yet: the BEGIN rides with the first
    /// statement.
    Pending,
    /// BEGIN sent (and the write lock taken, or being waited for).
    Open,
    /// Committed by its last statement ([`PgSession::query_and_commit`]): nothing
    /// more may run in it.
    Ended,
}

/// What a statement sent after its transaction's last one meets.
fn ended() -> Error {
    Error::Other(
        "a statement ran after its transaction's last one (query_and_commit): it would have run outside the transaction".into(),
    )
}

/// Run one statement (`run`, a request not yet sent), given whether it may write and
/// where the session's write transaction is. A write outside
/// [`PgSession::begin_write`]'s transaction runs in one of its own under the same
/// advisory lock, announced at its commit: so the database has one writer at a time,
/// on any host, as the embedded file does, and a lone guarded UPDATE never lands
/// between another writer's read and its write. Its begin, statement and commit are
/// pipelined: one round trip. The first statement of a write transaction carries
/// the transaction's BEGIN with it, pipelined the same way.
fn run_statement<T>(
    client: &Client,
    (write, tx): (bool, &mut Tx),
    (dirty, in_doubt): (&mut bool, &mut bool),
    run: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
) -> Result<T> {
    match *tx {
        Tx::Ended => return Err(ended()),
        Tx::Open => {
            *dirty |= write;
            return wait(run).map_err(from_pg);
        }
        Tx::Pending => {
            // From here on the server may hold a transaction: a failure below is
            // ended by the caller's rollback.
            *tx = Tx::Open;
            let (began, ran) =
                wait(async { futures::join!(client.batch_execute(&BEGIN_WRITE), run) });
            began.map_err(from_pg)?;
            *dirty |= write;
            return ran.map_err(from_pg);
        }
        Tx::None if !write => return wait(run).map_err(from_pg),
        Tx::None => {}
    }
    let (began, ran, committed) = wait(async {
        futures::join!(
            client.batch_execute(&BEGIN_WRITE),
            run,
            client.batch_execute(&COMMIT_ANNOUNCED)
        )
    });
    match (began, ran, committed) {
        (Ok(()), Ok(out), Ok(())) => Ok(out),
        (Ok(()), Ok(_), Err(e)) if client.is_closed() => {
            *in_doubt = true;
            Err(from_pg(e))
        }
        (began, ran, committed) => {
            // A failed step leaves the transaction aborted (the commit's batch stops
            // at its first error), so end it; a failed rollback leaves a broken
            // connection, which `revive` replaces.
            let _ = wait(client.batch_execute("ROLLBACK"));
            let first = began.err().or(ran.err()).or(committed.err());
            Err(from_pg(first.expect("one step failed")))
        }
    }
}

/// `statements` with their `params`, sent as one pipeline (requests go out in order
/// when first polled); the rows each changed, or the first failure.
async fn execute_pipelined(
    client: &Client,
    statements: &[Statement],
    params: &[&[Value]],
) -> std::result::Result<Vec<u64>, tokio_postgres::Error> {
    let refs: Vec<Vec<&(dyn ToSql + Sync)>> = params.iter().map(|ps| param_refs(ps)).collect();
    let runs = statements
        .iter()
        .zip(&refs)
        .map(|(stmt, refs)| client.execute(stmt, refs));
    futures::future::join_all(runs).await.into_iter().collect()
}

fn param_refs(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

/// A row's columns as values.
fn row_values(row: &tokio_postgres::Row) -> Result<Vec<Value>> {
    (0..row.len())
        .map(|i| row.try_get::<_, Value>(i).map_err(from_pg))
        .collect()
}

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
        session.commit_in_doubt = false;
        let out = call(session);
        let gone = match &out {
            Err(Error::CannotOpen(_)) => session.client.is_closed() || went_away(&out),
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

/// Called for each announcement a listening connection hears; false stops it.
type Heard = Box<dyn FnMut() -> bool + Send>;

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
fn wait<F: Future>(f: F) -> F::Output {
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

fn connect_client(url: &str, heard: Option<Heard>) -> Result<Client> {
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

/// True for a statement that may change rows (anything not a plain read).
fn writes(sql: &str) -> bool {
    let head = sql.trim_start();
    !(head.len() >= 6 && head[..6].eq_ignore_ascii_case("select"))
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

/// A PostgreSQL error in the query layer's terms (SQLSTATE classes).
fn from_pg(e: tokio_postgres::Error) -> Error {
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

#[cfg(test)]
mod tests {
    use super::*;

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
