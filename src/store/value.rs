//! The values and errors both backends speak: what a parameter binds, what a column
//! reads, and what a failed statement reports before the store names its database.

use std::fmt;

/// One SQL value, as bound to a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// One SQL value, as read from a column (borrowed from the row where it can be).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'a str),
    Blob(&'a [u8]),
}

impl Value {
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Int(n) => ValueRef::Int(*n),
            Value::Real(x) => ValueRef::Real(*x),
            Value::Text(s) => ValueRef::Text(s),
            Value::Blob(b) => ValueRef::Blob(b),
        }
    }
}

/// A failure inside a statement, before the store names its database.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// `query_row` found nothing (see [`OptionalExtension::optional`]).
    NoRows,
    /// Another writer held the lock past the busy timeout.
    Busy(String),
    /// A constraint refused the write (unique key, foreign key, NOT NULL, CHECK).
    Constraint(String),
    /// The file is not a database.
    NotADatabase(String),
    /// The database file is damaged.
    Corrupt(String),
    /// The database cannot be opened, read or written (permissions, a read-only file).
    CannotOpen(String),
    /// A column held a value the reader cannot take.
    Conversion(String),
    /// Anything else the engine reported.
    Other(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoRows => f.write_str("query returned no rows"),
            Error::Busy(m)
            | Error::Constraint(m)
            | Error::NotADatabase(m)
            | Error::Corrupt(m)
            | Error::CannotOpen(m)
            | Error::Conversion(m)
            | Error::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}
