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
//!
//! This file is the session: its statements, transactions and announcements. The
//! connection under it (the runtime it runs on, connecting, the driver's errors) is
//! `store::pg_client`; waiting out an outage around a call is `store::pg_outage`; a
//! `store-url`'s parameters are `store::pg_connect`.

use std::collections::HashMap;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Statement};

use super::pg_client::{connect_client, from_pg, wait};
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

/// One connection and its prepared statements.
pub struct PgSession {
    url: String,
    client: Client,
    statements: HashMap<String, Statement>,
    tx: Tx,
    /// A statement changed something since the last announcement.
    dirty: bool,
    /// The connection broke while a COMMIT was in flight (see `pg_outage::riding_out`).
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
    pub(super) fn in_doubt(&self) -> bool {
        self.commit_in_doubt
    }

    /// A call begins: no commit of it is in doubt yet.
    pub(super) fn clear_doubt(&mut self) {
        self.commit_in_doubt = false;
    }

    /// Whether the server dropped this session's connection.
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
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

/// True for a statement that may change rows (anything not a plain read).
fn writes(sql: &str) -> bool {
    let head = sql.trim_start();
    !(head.len() >= 6 && head[..6].eq_ignore_ascii_case("select"))
}
