//! Abbreviated ids: the one rule for typing less than a whole id (mission ids and ask
//! ids alike), so an operator can type what a table or the board shows.

use crate::store::sql::params;

use crate::store::{Store, StoreError};

/// The shortest prefix that is looked up; a shorter one is refused as too short.
pub const MIN_PREFIX: usize = 4;

/// A kind of record whose ids may be abbreviated.
pub struct IdKind {
    /// What the record is called in messages (`mission`, `ask`).
    pub noun: &'static str,
    /// Its table, keyed by a TEXT `id` column.
    pub table: &'static str,
    /// The command that lists the ids.
    pub list_command: &'static str,
}

/// What a typed id resolved to.
#[derive(Debug, PartialEq, Eq)]
pub enum Resolved {
    /// The whole id of the one record it names.
    Id(String),
    /// No record has that id or starts with it.
    NotFound,
    /// Refused, with the operator-facing reason (too short, ambiguous).
    Refused(String),
}

/// An exact id, else a unique prefix of at least [`MIN_PREFIX`] characters.
pub fn resolve(store: &Store, kind: &IdKind, typed: &str) -> Result<Resolved, StoreError> {
    let key = typed.trim();
    let table = kind.table;
    let exact: Option<String> = store.with(|c| {
        use crate::store::sql::OptionalExtension;
        c.query_row(
            &format!("SELECT id FROM {table} WHERE id = ?1"),
            params![key],
            |r| r.get(0),
        )
        .optional()
    })?;
    if let Some(id) = exact {
        return Ok(Resolved::Id(id));
    }
    let (noun, list) = (kind.noun, kind.list_command);
    if key.chars().count() < MIN_PREFIX {
        return Ok(Resolved::Refused(format!(
            "{noun} id prefix {key:?} is too short — type at least {MIN_PREFIX} characters of the id (see '{list}')"
        )));
    }
    // A range over the primary key rather than LIKE: typed text has no wildcards.
    let upper = format!("{key}\u{10ffff}");
    let found: Vec<String> = store.with(|c| {
        let mut s = c.prepare(&format!(
            "SELECT id FROM {table} WHERE id >= ?1 AND id < ?2 ORDER BY id LIMIT 2"
        ))?;
        s.query_map(params![key, upper], |r| r.get(0))?.collect()
    })?;
    Ok(match <[String; 1]>::try_from(found) {
        Ok([id]) => Resolved::Id(id),
        Err(found) if found.is_empty() => Resolved::NotFound,
        Err(_) => Resolved::Refused(format!(
            "{noun} id prefix {key:?} matches more than one {noun} — type more of the id (see '{list}')"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const THINGS: IdKind = IdKind {
        noun: "thing",
        table: "things",
        list_command: "missionboard thing list",
    };

    #[test]
    fn exact_unique_short_ambiguous_and_missing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("board.db")).unwrap();
        store
            .with(|c| {
                c.execute_batch(
                    "CREATE TABLE things (id TEXT PRIMARY KEY);
                     INSERT INTO things VALUES ('abcd-1111'), ('abcd-2222'), ('abc'), ('wxyz-9');",
                )
            })
            .unwrap();
        let r = |typed| resolve(&store, &THINGS, typed).unwrap();
        assert_eq!(r(" abcd-1111 "), Resolved::Id("abcd-1111".into()));
        assert_eq!(
            r("abc"),
            Resolved::Id("abc".into()),
            "an exact id of any length"
        );
        assert_eq!(r("wxyz"), Resolved::Id("wxyz-9".into()));
        assert_eq!(
            r("abcd"),
            Resolved::Refused(
                "thing id prefix \"abcd\" matches more than one thing — type more of the id (see 'missionboard thing list')".into()
            )
        );
        assert_eq!(
            r("wx"),
            Resolved::Refused(
                "thing id prefix \"wx\" is too short — type at least 4 characters of the id (see 'missionboard thing list')".into()
            )
        );
        assert_eq!(r("zzzz"), Resolved::NotFound);
        assert_eq!(r("ab%_"), Resolved::NotFound);
    }
}
