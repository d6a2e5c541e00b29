//! The query layer: the one surface every table-owning module writes its SQL through,
//! served by either backend (the embedded SQLite file or a shared PostgreSQL).
//!
//! Statements are written once, in the house dialect — SQLite's spelling of portable
//! SQL: `?N` (or bare `?`) placeholders, `ON CONFLICT … DO …`, `RETURNING`, two-argument
//! `MAX(a, b)`/`MIN(a, b)` for the greater/lesser of two values and
//! `IN (SELECT value FROM json_each(?N))` for a JSON list parameter. The PostgreSQL
//! backend translates exactly those constructs (`store::pg_dialect::translate`) and
//! nothing else, so a statement that uses any other SQLite-only feature fails on
//! PostgreSQL's parser rather than meaning something else there. Both backends run
//! the black-box suite.
//!
//! Values cross as [`Value`]: every integer column is a 64-bit integer on both (no
//! booleans: a flag is 0 or 1), text is UTF-8, blobs are bytes. Rows are read through
//! [`Row::get`] into any [`FromColumn`] type.

use super::postgres::PgSession;
pub use super::value::{Error, Result, Value, ValueRef};

/// `query_row(…).optional()`: no row is `Ok(None)`, not an error.
pub trait OptionalExtension<T> {
    fn optional(self) -> Result<Option<T>>;
}

impl<T> OptionalExtension<T> for Result<T> {
    fn optional(self) -> Result<Option<T>> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(Error::NoRows) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Anything bindable to a parameter.
pub trait ToParam {
    fn to_param(&self) -> Value;
}

macro_rules! int_params {
    ($($t:ty),*) => {$(
        impl ToParam for $t {
            fn to_param(&self) -> Value {
                Value::Int(*self as i64)
            }
        }
    )*};
}
int_params!(i64, i32, i16, u32, u16, u8);

impl ToParam for u64 {
    fn to_param(&self) -> Value {
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl ToParam for usize {
    fn to_param(&self) -> Value {
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl ToParam for bool {
    fn to_param(&self) -> Value {
        Value::Int(*self as i64)
    }
}

impl ToParam for f64 {
    fn to_param(&self) -> Value {
        Value::Real(*self)
    }
}

impl ToParam for str {
    fn to_param(&self) -> Value {
        Value::Text(self.to_string())
    }
}

impl ToParam for String {
    fn to_param(&self) -> Value {
        Value::Text(self.clone())
    }
}

impl ToParam for [u8] {
    fn to_param(&self) -> Value {
        Value::Blob(self.to_vec())
    }
}

impl ToParam for Vec<u8> {
    fn to_param(&self) -> Value {
        Value::Blob(self.clone())
    }
}

impl ToParam for Value {
    fn to_param(&self) -> Value {
        self.clone()
    }
}

impl<T: ToParam + ?Sized> ToParam for &T {
    fn to_param(&self) -> Value {
        (**self).to_param()
    }
}

impl<T: ToParam> ToParam for Option<T> {
    fn to_param(&self) -> Value {
        self.as_ref().map_or(Value::Null, ToParam::to_param)
    }
}

/// A statement's parameters: `params![…]`, `[]` for none, or [`params_from_iter`].
pub trait Params {
    fn values(self) -> Vec<Value>;
}

impl Params for &[&dyn ToParam] {
    fn values(self) -> Vec<Value> {
        self.iter().map(|p| p.to_param()).collect()
    }
}

impl<const N: usize> Params for [&dyn ToParam; N] {
    fn values(self) -> Vec<Value> {
        self.iter().map(|p| p.to_param()).collect()
    }
}

impl<const N: usize> Params for &[&dyn ToParam; N] {
    fn values(self) -> Vec<Value> {
        self.iter().map(|p| p.to_param()).collect()
    }
}

/// Values already taken (a call that may run again reuses them).
impl Params for &[Value] {
    fn values(self) -> Vec<Value> {
        self.to_vec()
    }
}

/// The parameters of a list built at run time.
pub struct ParamsFromIter(Vec<Value>);

pub fn params_from_iter<I>(iter: I) -> ParamsFromIter
where
    I: IntoIterator,
    I::Item: ToParam,
{
    ParamsFromIter(iter.into_iter().map(|p| p.to_param()).collect())
}

impl Params for ParamsFromIter {
    fn values(self) -> Vec<Value> {
        self.0
    }
}

/// `params![a, b, …]`: a statement's parameters, in placeholder order.
#[macro_export]
macro_rules! sql_params {
    () => {
        &[] as &[&dyn $crate::store::sql::ToParam]
    };
    ($($p:expr),+ $(,)?) => {
        &[$(&$p as &dyn $crate::store::sql::ToParam),+] as &[&dyn $crate::store::sql::ToParam]
    };
}
pub use crate::sql_params as params;

/// One statement and its parameters, for a batch run at a write's commit
/// ([`Conn::execute_at_commit`]).
pub type AtCommit = (&'static str, Vec<Value>);

/// A type a column can be read into.
pub trait FromColumn: Sized {
    fn from_column(v: ValueRef<'_>) -> Result<Self>;
}

fn mismatch(want: &str, got: ValueRef<'_>) -> Error {
    let got = match got {
        ValueRef::Null => "NULL",
        ValueRef::Int(_) => "an integer",
        ValueRef::Real(_) => "a real",
        ValueRef::Text(_) => "text",
        ValueRef::Blob(_) => "a blob",
    };
    Error::Conversion(format!("a column holds {got} where {want} was expected"))
}

impl FromColumn for i64 {
    fn from_column(v: ValueRef<'_>) -> Result<Self> {
        match v {
            ValueRef::Int(n) => Ok(n),
            other => Err(mismatch("an integer", other)),
        }
    }
}

macro_rules! narrow_ints {
    ($($t:ty),*) => {$(
        impl FromColumn for $t {
            fn from_column(v: ValueRef<'_>) -> Result<Self> {
                let n = i64::from_column(v)?;
                <$t>::try_from(n).map_err(|_| {
                    Error::Conversion(format!("{n} is out of range for {}", stringify!($t)))
                })
            }
        }
    )*};
}
narrow_ints!(i32, u32, u64, usize, u16, u8);

impl FromColumn for bool {
    fn from_column(v: ValueRef<'_>) -> Result<Self> {
        Ok(i64::from_column(v)? != 0)
    }
}

impl FromColumn for f64 {
    fn from_column(v: ValueRef<'_>) -> Result<Self> {
        match v {
            ValueRef::Real(x) => Ok(x),
            ValueRef::Int(n) => Ok(n as f64),
            other => Err(mismatch("a number", other)),
        }
    }
}

impl FromColumn for String {
    fn from_column(v: ValueRef<'_>) -> Result<Self> {
        match v {
            ValueRef::Text(s) => Ok(s.to_string()),
            other => Err(mismatch("text", other)),
        }
    }
}

impl FromColumn for Vec<u8> {
    fn from_column(v: ValueRef<'_>) -> Result<Self> {
        match v {
            ValueRef::Blob(b) => Ok(b.to_vec()),
            ValueRef::Text(s) => Ok(s.as_bytes().to_vec()),
            other => Err(mismatch("a blob", other)),
        }
    }
}

impl FromColumn for Value {
    fn from_column(v: ValueRef<'_>) -> Result<Self> {
        Ok(match v {
            ValueRef::Null => Value::Null,
            ValueRef::Int(n) => Value::Int(n),
            ValueRef::Real(x) => Value::Real(x),
            ValueRef::Text(s) => Value::Text(s.to_string()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        })
    }
}

impl<T: FromColumn> FromColumn for Option<T> {
    fn from_column(v: ValueRef<'_>) -> Result<Self> {
        match v {
            ValueRef::Null => Ok(None),
            v => T::from_column(v).map(Some),
        }
    }
}

/// One result row.
pub struct Row<'a> {
    inner: RowInner<'a>,
}

enum RowInner<'a> {
    Sqlite(&'a rusqlite::Row<'a>),
    Postgres(&'a [Value]),
}

impl Row<'_> {
    /// Column `idx` (0-based) read as `T`.
    pub fn get<T: FromColumn>(&self, idx: usize) -> Result<T> {
        let v = match &self.inner {
            RowInner::Sqlite(r) => sqlite_ref(r.get_ref(idx).map_err(from_sqlite)?)?,
            RowInner::Postgres(values) => values
                .get(idx)
                .ok_or_else(|| Error::Other(format!("no column {idx} in the row")))?
                .as_ref(),
        };
        T::from_column(v).map_err(|e| match e {
            Error::Conversion(m) => Error::Conversion(format!("column {idx}: {m}")),
            e => e,
        })
    }
}

fn sqlite_ref(v: rusqlite::types::ValueRef<'_>) -> Result<ValueRef<'_>> {
    use rusqlite::types::ValueRef as S;
    Ok(match v {
        S::Null => ValueRef::Null,
        S::Integer(n) => ValueRef::Int(n),
        S::Real(x) => ValueRef::Real(x),
        S::Text(t) => ValueRef::Text(
            std::str::from_utf8(t).map_err(|e| Error::Conversion(format!("text: {e}")))?,
        ),
        S::Blob(b) => ValueRef::Blob(b),
    })
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef as S};
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => S::Null,
            Value::Int(n) => S::Integer(*n),
            Value::Real(x) => S::Real(*x),
            Value::Text(s) => S::Text(s.as_bytes()),
            Value::Blob(b) => S::Blob(b),
        }))
    }
}

/// A SQLite error in this layer's terms.
pub(crate) fn from_sqlite(e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode as C;
    let text = e.to_string();
    match &e {
        rusqlite::Error::QueryReturnedNoRows => Error::NoRows,
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::Utf8Error(..) => Error::Conversion(text),
        _ => match e.sqlite_error_code() {
            Some(C::DatabaseBusy | C::DatabaseLocked) => Error::Busy(text),
            Some(C::ConstraintViolation) => Error::Constraint(text),
            Some(C::NotADatabase) => Error::NotADatabase(text),
            Some(C::DatabaseCorrupt) => Error::Corrupt(text),
            Some(C::CannotOpen | C::PermissionDenied | C::ReadOnly) => Error::CannotOpen(text),
            _ => Error::Other(text),
        },
    }
}

/// A connection as the modules see it: inside [`Store::with`](super::Store::with) it
/// runs each statement on its own; inside [`Store::write`](super::Store::write) every
/// statement belongs to one transaction that no other writer interleaves with.
pub struct Conn<'a> {
    inner: ConnInner<'a>,
}

enum ConnInner<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(std::cell::RefCell<&'a mut PgSession>),
}

impl<'a> Conn<'a> {
    pub(crate) fn sqlite(c: &'a rusqlite::Connection) -> Conn<'a> {
        Conn {
            inner: ConnInner::Sqlite(c),
        }
    }

    pub(crate) fn postgres(s: &'a mut PgSession) -> Conn<'a> {
        Conn {
            inner: ConnInner::Postgres(std::cell::RefCell::new(s)),
        }
    }

    /// True on the PostgreSQL backend (for the rare statement each spells its own way).
    pub fn is_postgres(&self) -> bool {
        matches!(self.inner, ConnInner::Postgres(_))
    }

    /// Run one statement; the number of rows it changed.
    pub fn execute(&self, sql: &str, params: impl Params) -> Result<usize> {
        let values = params.values();
        match &self.inner {
            ConnInner::Sqlite(c) => c
                .prepare_cached(sql)
                .and_then(|mut s| s.execute(rusqlite::params_from_iter(values.iter())))
                .map_err(from_sqlite),
            ConnInner::Postgres(s) => s.borrow_mut().execute(sql, &values),
        }
    }

    /// Run statements that need nothing from each other's results, in order; the
    /// rows each changed. Inside [`Store::write`](super::Store::write) on PostgreSQL
    /// they are pipelined — one round trip for all of them — and a failure fails the
    /// whole transaction, as it would one by one.
    pub fn execute_all(&self, batch: Vec<(&str, Vec<Value>)>) -> Result<Vec<usize>> {
        match &self.inner {
            ConnInner::Sqlite(_) => batch
                .into_iter()
                .map(|(sql, values)| self.execute(sql, values.as_slice()))
                .collect(),
            ConnInner::Postgres(s) => s.borrow_mut().execute_all(&batch),
        }
    }

    /// Statements that end a [`Store::write`](super::Store::write) transaction and
    /// whose results nobody reads: on PostgreSQL they travel with its COMMIT (one
    /// round trip for them, the commit and — when they are all it has — its BEGIN).
    /// A failure among them fails the transaction, as it would one by one.
    pub fn execute_at_commit(&self, batch: Vec<(&str, Vec<Value>)>) -> Result<()> {
        match &self.inner {
            ConnInner::Sqlite(_) => self.execute_all(batch).map(drop),
            ConnInner::Postgres(s) => s.borrow_mut().execute_at_commit(&batch),
        }
    }

    /// The last statement of a [`Store::write`](super::Store::write) transaction,
    /// every row it returns read by `f`: on PostgreSQL it travels with the
    /// statements held for the commit (run before it, in order) and with the COMMIT
    /// itself, so a transaction that needs only its last statement's rows costs one
    /// round trip. Nothing may run in the transaction after it.
    pub fn query_map_and_commit<T>(
        &self,
        sql: &str,
        params: impl Params,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        match &self.inner {
            ConnInner::Sqlite(_) => self.query_map(sql, params, f),
            ConnInner::Postgres(s) => {
                let rows = s.borrow_mut().query_and_commit(sql, &params.values())?;
                rows.iter()
                    .map(|r| {
                        f(&Row {
                            inner: RowInner::Postgres(r),
                        })
                    })
                    .collect()
            }
        }
    }

    /// Run several statements (no parameters), as migrations do.
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        match &self.inner {
            ConnInner::Sqlite(c) => c.execute_batch(sql).map_err(from_sqlite),
            ConnInner::Postgres(s) => s.borrow_mut().batch(sql),
        }
    }

    /// The first row `sql` returns, read by `f`; [`Error::NoRows`] when there is none.
    pub fn query_row<T>(
        &self,
        sql: &str,
        params: impl Params,
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut f = Some(f);
        let mut out = None;
        self.each(sql, params.values(), Some(1), &mut |row| {
            if let Some(f) = f.take() {
                out = Some(f(row)?);
            }
            Ok(())
        })?;
        out.ok_or(Error::NoRows)
    }

    /// Every row `sql` returns, each read by `f`.
    pub fn query_map<T>(
        &self,
        sql: &str,
        params: impl Params,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.each(sql, params.values(), None, &mut |row| {
            out.push(f(row)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// [`prepare_cached`](Self::prepare_cached): every statement is cached.
    pub fn prepare<'c>(&'c self, sql: &str) -> Result<Statement<'c, 'a>> {
        self.prepare_cached(sql)
    }

    /// A statement to run several times (prepared once per connection and cached).
    pub fn prepare_cached<'c>(&'c self, sql: &str) -> Result<Statement<'c, 'a>> {
        Ok(Statement {
            conn: self,
            sql: sql.to_string(),
        })
    }

    fn each(
        &self,
        sql: &str,
        values: Vec<Value>,
        limit: Option<usize>,
        f: &mut dyn FnMut(&Row<'_>) -> Result<()>,
    ) -> Result<()> {
        match &self.inner {
            ConnInner::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql).map_err(from_sqlite)?;
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(values.iter()))
                    .map_err(from_sqlite)?;
                let mut n = 0;
                while let Some(r) = rows.next().map_err(from_sqlite)? {
                    f(&Row {
                        inner: RowInner::Sqlite(r),
                    })?;
                    n += 1;
                    if limit.is_some_and(|l| n >= l) {
                        break;
                    }
                }
                Ok(())
            }
            ConnInner::Postgres(s) => {
                let rows = s.borrow_mut().query(sql, &values)?;
                for r in rows.iter().take(limit.unwrap_or(usize::MAX)) {
                    f(&Row {
                        inner: RowInner::Postgres(r),
                    })?;
                }
                Ok(())
            }
        }
    }
}

/// A prepared statement: [`Conn::prepare_cached`].
pub struct Statement<'c, 'a> {
    conn: &'c Conn<'a>,
    sql: String,
}

impl Statement<'_, '_> {
    pub fn execute(&mut self, params: impl Params) -> Result<usize> {
        self.conn.execute(&self.sql, params)
    }

    pub fn query_row<T>(
        &mut self,
        params: impl Params,
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.conn.query_row(&self.sql, params, f)
    }

    /// Every row, each read by `f` (collect the iterator into a `Result<Vec<_>>`).
    pub fn query_map<T>(
        &mut self,
        params: impl Params,
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<std::vec::IntoIter<Result<T>>> {
        let mut out = Vec::new();
        self.conn
            .each(&self.sql, params.values(), None, &mut |row| {
                out.push(f(row));
                Ok(())
            })?;
        Ok(out.into_iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_through_sqlite() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        let conn = Conn::sqlite(&c);
        conn.execute_batch("CREATE TABLE t (a INTEGER, b TEXT, c REAL, d BLOB)")
            .unwrap();
        let none: Option<i64> = None;
        conn.execute(
            "INSERT INTO t VALUES (?1, ?2, ?3, ?4)",
            params![7u32, "seven", 7.5, vec![7u8]],
        )
        .unwrap();
        // A TEXT column keeps what it is given as text (SQLite affinity).
        conn.execute(
            "INSERT INTO t VALUES (?, ?, ?, ?)",
            params![none, true, 1, "x"],
        )
        .unwrap();
        let rows = conn
            .query_map("SELECT a, b, c, d FROM t ORDER BY rowid", [], |r| {
                Ok((
                    r.get::<Option<i64>>(0)?,
                    r.get::<Value>(1)?,
                    r.get::<f64>(2)?,
                    r.get::<Vec<u8>>(3)?,
                ))
            })
            .unwrap();
        assert_eq!(
            rows,
            vec![
                (Some(7), Value::Text("seven".into()), 7.5, vec![7]),
                (None, Value::Text("1".into()), 1.0, b"x".to_vec()),
            ]
        );
        let missing = conn
            .query_row("SELECT a FROM t WHERE a = 99", [], |r| r.get::<i64>(0))
            .optional()
            .unwrap();
        assert_eq!(missing, None);
        let err = conn
            .query_row("SELECT b FROM t WHERE a = 7", [], |r| r.get::<i64>(0))
            .unwrap_err();
        assert_eq!(
            err,
            Error::Conversion("column 0: a column holds text where an integer was expected".into())
        );
    }
}
