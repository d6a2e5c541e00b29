//! The PostgreSQL backend against a live server (`tests/common/pg.rs` provides one):
//! its schema matches SQLite's column for column, a schema from a newer missionboard
//! is refused and left as it was, the house dialect's translations run on the
//! server and agree with SQLite, and a commit from another process wakes a waiter.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::{Sandbox, pg};
use missionboard::store::sql::{Params, Value, params};
use missionboard::store::{Location, Store};

/// Rows of `sql` on the database at `url`, every column as text (NULL as `None`),
/// read over a connection of the test's own, so nothing of the store is involved.
fn raw_rows(url: &str, sql: &str) -> Vec<Vec<Option<String>>> {
    let (url, sql) = (url.to_string(), sql.to_string());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(connection);
            client
                .simple_query(&sql)
                .await
                .unwrap()
                .into_iter()
                .filter_map(|m| match m {
                    tokio_postgres::SimpleQueryMessage::Row(r) => {
                        Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
                    }
                    _ => None,
                })
                .collect()
        })
    })
    .join()
    .unwrap()
}

/// Wait until this process LISTENs on the store's database (a new listening
/// connection announces itself with one tick), so no commit after this is missed.
fn listening(store: &Store) {
    let changes = store.changes();
    assert!(
        changes.pushed(),
        "PostgreSQL pushes commits (LISTEN/NOTIFY)"
    );
    common::wait_for(30, "the store's listening connection", || {
        (changes.heard() >= 1).then_some(())
    });
}

fn postgres_store() -> (Store, String) {
    let url = pg::fresh_database();
    let store = Store::open_at(&Location::Postgres(url.clone())).expect("open PostgreSQL");
    (store, url)
}

fn sqlite_store(dir: &tempfile::TempDir) -> Store {
    Store::open_at(&Location::File(dir.path().join("board.db"))).expect("open the file")
}

/// A column as the parity check compares it.
#[derive(Debug)]
struct Column {
    ty: String,
    not_null: bool,
    primary_key: bool,
}

type Tables = BTreeMap<String, BTreeMap<String, Column>>;

fn sqlite_tables(store: &Store) -> Tables {
    store
        .with(|c| {
            let names: Vec<String> = c.query_map(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
                [],
                |r| r.get(0),
            )?;
            let mut tables = Tables::new();
            for name in names {
                let columns = c.query_map(
                    "SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1)",
                    params![name],
                    |r| {
                        Ok((
                            r.get::<String>(0)?,
                            Column {
                                ty: r.get::<String>(1)?.to_ascii_uppercase(),
                                not_null: r.get::<i64>(2)? != 0,
                                primary_key: r.get::<i64>(3)? != 0,
                            },
                        ))
                    },
                )?;
                tables.insert(name, columns.into_iter().collect());
            }
            Ok(tables)
        })
        .unwrap()
}

fn postgres_tables(url: &str) -> Tables {
    let mut tables = Tables::new();
    for row in raw_rows(
        url,
        "SELECT c.table_name, c.column_name, c.data_type, c.is_nullable,
                EXISTS (SELECT 1 FROM information_schema.table_constraints t
                        JOIN information_schema.key_column_usage k
                          ON k.constraint_name = t.constraint_name AND k.table_name = t.table_name
                        WHERE t.constraint_type = 'PRIMARY KEY' AND t.table_name = c.table_name
                          AND k.column_name = c.column_name)
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_name = c.table_name AND t.table_schema = c.table_schema
         WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'",
    ) {
        let text = |i: usize| row[i].clone().unwrap_or_default();
        tables.entry(text(0)).or_default().insert(
            text(1),
            Column {
                ty: text(2).to_ascii_uppercase(),
                not_null: text(3) == "NO",
                primary_key: text(4) == "t",
            },
        );
    }
    tables
}

/// The PostgreSQL types a SQLite declared type may be spelled as (the values the
/// modules bind and read back are the same either way).
fn compatible(sqlite: &str, postgres: &str) -> bool {
    let allowed: &[&str] = match sqlite {
        "INTEGER" => &["BIGINT", "INTEGER", "SMALLINT", "BOOLEAN"],
        "TEXT" => &["TEXT", "CHARACTER VARYING", "JSONB", "JSON"],
        "REAL" => &["DOUBLE PRECISION", "REAL"],
        "BLOB" => &["BYTEA"],
        // No declared type: SQLite stores whatever it is given.
        "" => return true,
        _ => return false,
    };
    allowed.contains(&postgres)
}

#[test]
fn every_table_and_column_of_the_sqlite_schema_exists_in_postgres_with_a_compatible_type() {
    let dir = tempfile::tempdir().unwrap();
    let file = sqlite_store(&dir);
    let (shared, url) = postgres_store();
    assert_eq!(
        file.schema_version().unwrap(),
        shared.schema_version().unwrap(),
        "a version means one schema on both"
    );
    let lite = sqlite_tables(&file);
    let mut pg = postgres_tables(&url);
    // PostgreSQL keeps its version in a table (SQLite: `user_version`).
    assert!(pg.remove("missionboard_schema").is_some());
    assert_eq!(
        lite.keys().collect::<Vec<_>>(),
        pg.keys().collect::<Vec<_>>(),
        "the same tables"
    );
    // Every table the modules create, not an empty list compared with another.
    for table in [
        "missions",
        "reports",
        "asks",
        "checkpoints",
        "config",
        "inbox",
    ] {
        assert!(lite.contains_key(table), "{table} is in the SQLite schema");
    }
    let mut problems = Vec::new();
    for (table, columns) in &lite {
        let theirs = &pg[table];
        for (name, col) in columns {
            let Some(other) = theirs.get(name) else {
                problems.push(format!("{table}.{name}: missing on PostgreSQL"));
                continue;
            };
            if !compatible(&col.ty, &other.ty) {
                problems.push(format!(
                    "{table}.{name}: {} on SQLite, {} on PostgreSQL",
                    col.ty, other.ty
                ));
            }
            // A NOT NULL column is NOT NULL on both; PostgreSQL's primary keys are
            // NOT NULL whether or not SQLite's declaration says so.
            if col.not_null != other.not_null && !(other.primary_key && other.not_null) {
                problems.push(format!(
                    "{table}.{name}: NOT NULL {} on SQLite, {} on PostgreSQL",
                    col.not_null, other.not_null
                ));
            }
            if col.primary_key != other.primary_key {
                problems.push(format!("{table}.{name}: primary key on one backend only"));
            }
        }
        // SQLite's implicit insertion order is PostgreSQL's one extra column.
        for name in theirs.keys().filter(|n| !columns.contains_key(*n)) {
            if name != "rowid" {
                problems.push(format!("{table}.{name}: only on PostgreSQL"));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "schema drift:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_schema_from_a_newer_missionboard_is_refused_and_left_untouched() {
    let sb = Sandbox::on_postgres();
    sb.run(&["config", "set", "fleet-max-parallel", "3"]).ok();
    let url = sb.store_url.clone().unwrap();
    raw_rows(&url, "UPDATE missionboard_schema SET version = 99");
    let tables = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1";
    let before = raw_rows(&url, tables);

    let run = sb.run(&["config", "get", "fleet-max-parallel"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("schema version 99"), "{run:#?}");
    assert!(run.stderr.contains("upgrade missionboard"), "{run:#?}");
    assert!(run.stderr.contains("left untouched"), "{run:#?}");
    let err = Store::open_at(&Location::Postgres(url.clone()))
        .err()
        .expect("refused in the library too")
        .to_string();
    assert!(err.contains("schema version 99"), "{err}");

    assert_eq!(
        raw_rows(&url, "SELECT version FROM missionboard_schema"),
        [[Some("99".to_string())]]
    );
    assert_eq!(
        raw_rows(&url, tables),
        before,
        "no table created or dropped"
    );
    assert_eq!(
        raw_rows(
            &url,
            "SELECT value FROM config WHERE key = 'fleet-max-parallel'"
        ),
        [[Some("3".to_string())]]
    );
}

#[test]
fn a_database_holding_only_a_newer_version_gets_no_tables() {
    let url = pg::fresh_database();
    raw_rows(
        &url,
        "CREATE TABLE missionboard_schema (version BIGINT NOT NULL); INSERT INTO missionboard_schema VALUES (42)",
    );
    let err = Store::open_at(&Location::Postgres(url.clone()))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("schema version 42"), "{err}");
    assert_eq!(
        raw_rows(
            &url,
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ),
        [[Some("missionboard_schema".to_string())]]
    );
}

/// Statements in the house dialect, each with its parameters and how many columns it
/// returns: run on both backends, they give the same rows.
fn dialect_cases() -> Vec<(&'static str, Vec<Value>, usize)> {
    let text = |s: &str| Value::Text(s.to_string());
    vec![
        // Numbered and bare placeholders (a bare one follows the highest so far).
        (
            "SELECT value FROM config WHERE key = ?2 OR key = ?1 OR key = ? ORDER BY key",
            vec![text("a"), text("c"), text("d")],
            1,
        ),
        // Two-argument MAX/MIN are GREATEST/LEAST; one-argument ones stay aggregates.
        (
            "SELECT MAX(updated_at, ?1), MIN(updated_at, ?1) FROM config WHERE key = 'b'",
            vec![Value::Int(15)],
            2,
        ),
        (
            "SELECT MAX(updated_at), MIN(updated_at), COUNT(*) FROM config",
            vec![],
            3,
        ),
        // Nested: the inner call is translated inside the outer one.
        (
            "SELECT MAX(MIN(updated_at, ?1), ?2) FROM config WHERE key = 'd'",
            vec![Value::Int(35), Value::Int(38)],
            1,
        ),
        // json_each over a bound JSON array, as an IN list and as rows.
        (
            "SELECT key FROM config WHERE key IN (SELECT value FROM json_each(?1)) ORDER BY key",
            vec![text(r#"["d","a","zz"]"#)],
            1,
        ),
        (
            "SELECT value FROM json_each(?1) ORDER BY value",
            vec![text(r#"["b","a"]"#)],
            1,
        ),
        // Literals and quoted names pass through: no placeholder, no MAX inside them.
        (
            "SELECT 'MAX(a, b) ?1 it''s', ?1 AS \"?2\"",
            vec![text("bound")],
            2,
        ),
    ]
}

fn run_cases(store: &Store) -> Vec<Vec<Vec<Value>>> {
    store
        .write(|c| {
            for (key, at) in [("a", 10), ("b", 20), ("c", 30), ("d", 40)] {
                c.execute(
                    "INSERT INTO config (key, value, updated_at) VALUES (?1, ?2, ?3)",
                    params![key, format!("value {key}"), at],
                )?;
            }
            Ok(())
        })
        .unwrap();
    dialect_cases()
        .into_iter()
        .map(|(sql, args, width)| {
            store
                .with(|c| {
                    c.query_map(
                        sql,
                        missionboard::store::sql::params_from_iter(args.clone()),
                        |r| (0..width).map(|i| r.get::<Value>(i)).collect(),
                    )
                })
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        })
        .collect()
}

#[test]
fn the_house_dialect_runs_on_postgres_and_gives_what_sqlite_gives() {
    let dir = tempfile::tempdir().unwrap();
    let lite = run_cases(&sqlite_store(&dir));
    let (shared, _) = postgres_store();
    let pg = run_cases(&shared);
    let text = |s: &str| Value::Text(s.to_string());
    // What SQLite says is what each statement means; PostgreSQL must agree.
    assert_eq!(
        lite[0],
        [[text("value a")], [text("value c")], [text("value d")]]
    );
    assert_eq!(lite[1], [[Value::Int(20), Value::Int(15)]]);
    assert_eq!(lite[2], [[Value::Int(40), Value::Int(10), Value::Int(4)]]);
    assert_eq!(lite[3], [[Value::Int(38)]]);
    assert_eq!(lite[4], [[text("a")], [text("d")]]);
    assert_eq!(lite[5], [[text("a")], [text("b")]]);
    assert_eq!(lite[6], [[text("MAX(a, b) ?1 it's"), text("bound")]]);
    for (i, (l, p)) in lite.iter().zip(&pg).enumerate() {
        assert_eq!(l, p, "case {i}: {}", dialect_cases()[i].0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_by_another_process_wakes_a_waiter_at_once() {
    let sb = Sandbox::on_postgres();
    let store = sb.store();
    listening(&store);
    let heard = store.data_version().unwrap();
    let mut waiter = store.changes().subscribe();
    let set = sb.command(&["config", "set", "ask-park-window", "45s"]);
    let set = tokio::task::spawn_blocking(move || {
        let mut set = set;
        set.output().unwrap()
    });
    // Woken by the announcement: the fallback is far longer than the test's limit.
    tokio::time::timeout(
        Duration::from_secs(30),
        waiter.next(Duration::from_secs(3600)),
    )
    .await
    .expect("the other process's commit was announced");
    assert!(set.await.unwrap().status.success());
    assert!(store.data_version().unwrap() > heard);
    let value: String = store
        .with(|c| {
            c.query_row(
                "SELECT value FROM config WHERE key = 'ask-park-window'",
                [],
                |r| r.get(0),
            )
        })
        .unwrap();
    assert_eq!(value, "45s");
}

#[test]
fn a_read_announces_nothing_and_a_rolled_back_write_announces_nothing() {
    let (store, url) = postgres_store();
    let listener = Store::open_at(&Location::Postgres(url)).unwrap();
    listening(&listener);
    let changes = listener.changes();
    // A committed write is heard: the feed is live before the checks below.
    let before = changes.heard();
    store
        .with(|c| {
            c.execute(
                "INSERT INTO config (key, value, updated_at) VALUES ('k', 'v', 1)",
                [],
            )
        })
        .unwrap();
    common::wait_for(30, "the write's announcement", || {
        (changes.heard() > before).then_some(())
    });
    let after_write = changes.heard();
    store
        .with(|c| c.query_row("SELECT COUNT(*) FROM config", [], |r| r.get::<i64>(0)))
        .unwrap();
    let failed = store.write(|c| {
        c.execute(
            "INSERT INTO config (key, value, updated_at) VALUES ('k2', 'v', 1)",
            [],
        )?;
        // A duplicate key: the transaction rolls back, its insert with it.
        c.execute(
            "INSERT INTO config (key, value, updated_at) VALUES ('k', 'v', 1)",
            [],
        )
    });
    assert!(failed.is_err());
    // Another committed write, so the check below waits on a condition, not a time.
    store
        .with(|c| {
            c.execute(
                "INSERT INTO config (key, value, updated_at) VALUES ('k3', 'v', 1)",
                [],
            )
        })
        .unwrap();
    common::wait_for(30, "the last write's announcement", || {
        (changes.heard() > after_write).then_some(())
    });
    assert_eq!(
        changes.heard(),
        after_write + 1,
        "only the last write was announced"
    );
    let keys: BTreeSet<String> = store
        .with(|c| c.query_map("SELECT key FROM config", [], |r| r.get(0)))
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(keys, ["k", "k3"].map(String::from).into());
}

#[test]
fn a_lone_write_waits_its_turn_behind_another_hosts_write_transaction() {
    let (store, url) = postgres_store();
    let other = Store::open_at(&Location::Postgres(url.clone())).unwrap();
    let value = |s: &Store| -> i64 {
        s.with(|c| {
            c.query_row("SELECT value FROM config WHERE key = 'tally'", [], |r| {
                r.get::<String>(0)
            })
        })
        .unwrap()
        .parse()
        .unwrap()
    };
    store
        .with(|c| {
            c.execute(
                "INSERT INTO config (key, value, updated_at) VALUES ('tally', '1', 1)",
                [],
            )
        })
        .unwrap();
    // A read-then-write transaction, held open between its read and its write.
    let (read_tx, read_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        store.write(|c| {
            let n: String =
                c.query_row("SELECT value FROM config WHERE key = 'tally'", [], |r| {
                    r.get(0)
                })?;
            read_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            let n: i64 = n.parse().unwrap();
            c.execute(
                "UPDATE config SET value = ?1 WHERE key = 'tally'",
                params![(n + 1).to_string()],
            )
        })
    });
    read_rx.recv().unwrap();
    // Another host's lone statement: it must not land between that read and write.
    let lone = std::thread::spawn(move || {
        other
            .with(|c| {
                c.execute(
                    "UPDATE config SET value = CAST(CAST(value AS BIGINT) + 10 AS TEXT) WHERE key = 'tally'",
                    [],
                )
            })
            .map(|_| other)
    });
    common::wait_for(30, "the lone write to wait for the write lock", || {
        let waiting = raw_rows(
            &url,
            "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
        );
        (waiting[0][0].as_deref() == Some("1")).then_some(())
    });
    go_tx.send(()).unwrap();
    writer.join().unwrap().unwrap();
    let other = lone.join().unwrap().unwrap();
    assert_eq!(value(&other), 12, "both writes count, neither is lost");
}

/// A held statement for the tests of held statements: config `key` set to `v`.
fn insert_config(key: &str) -> (&'static str, Vec<Value>) {
    (
        "INSERT INTO config (key, value, updated_at) VALUES (?1, 'v', 1)",
        params![key.to_string()].values(),
    )
}

#[test]
fn statements_held_for_the_commit_land_with_it_in_order_or_not_at_all_on_both_backends() {
    let dir = tempfile::tempdir().unwrap();
    let (postgres, _url) = postgres_store();
    for store in [sqlite_store(&dir), postgres] {
        let keys = || -> Vec<String> {
            store
                .with(|c| c.query_map("SELECT key FROM config ORDER BY key", [], |r| r.get(0)))
                .unwrap()
        };
        // All a transaction has: sent with its commit.
        store
            .write(|c| c.execute_at_commit(vec![insert_config("a"), insert_config("b")]))
            .unwrap();
        assert_eq!(keys(), ["a", "b"]);
        // A statement after held ones: they go first, so it sees them.
        let seen = store
            .write(|c| {
                c.execute_at_commit(vec![insert_config("c")])?;
                c.query_row("SELECT COUNT(*) FROM config", [], |r| r.get::<i64>(0))
            })
            .unwrap();
        assert_eq!(seen, 3);
        // A failing one (a duplicate key) fails the whole transaction: the read and
        // write before it, and the held statement beside it, leave nothing.
        let failed = store.write(|c| {
            c.execute(
                "INSERT INTO config (key, value, updated_at) VALUES ('d', 'v', 1)",
                [],
            )?;
            c.execute_at_commit(vec![insert_config("e"), insert_config("a")])
        });
        assert!(failed.is_err(), "{failed:?}");
        assert_eq!(keys(), ["a", "b", "c"], "nothing of it was committed");
        // The session carries on: the next transaction commits.
        store
            .write(|c| c.execute_at_commit(vec![insert_config("f")]))
            .unwrap();
        assert_eq!(keys(), ["a", "b", "c", "f"]);
    }
}

#[test]
fn a_transactions_last_statement_sees_what_was_held_returns_its_rows_and_ends_it_on_both_backends()
{
    let dir = tempfile::tempdir().unwrap();
    let (postgres, _url) = postgres_store();
    for store in [sqlite_store(&dir), postgres] {
        let rows = |c: &missionboard::store::sql::Conn<'_>, mark: &str| {
            c.query_map_and_commit(
                "UPDATE config SET value = ?1 WHERE key IN ('a', 'b') RETURNING key, value",
                params![mark.to_string()],
                |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
            )
        };
        let mut changed = store
            .write(|c| {
                c.execute_at_commit(vec![insert_config("a"), insert_config("b")])?;
                rows(c, "w")
            })
            .unwrap();
        changed.sort();
        assert_eq!(
            changed,
            [("a".into(), "w".into()), ("b".into(), "w".into())],
            "the held statements ran first, and the last one's rows come back"
        );
        // A failing held statement (a duplicate key) fails it all: nothing lands.
        let failed = store.write(|c| {
            c.execute_at_commit(vec![insert_config("c"), insert_config("a")])?;
            rows(c, "x")
        });
        assert!(failed.is_err(), "{failed:?}");
        let values = store
            .with(|c| {
                c.query_map("SELECT key, value FROM config ORDER BY key", [], |r| {
                    Ok((r.get::<String>(0)?, r.get::<String>(1)?))
                })
            })
            .unwrap();
        assert_eq!(values, [("a".into(), "w".into()), ("b".into(), "w".into())]);
    }
    // On PostgreSQL the transaction is over once its last statement ran: one more
    // would run outside it, so it is refused, and the session carries on.
    let (postgres, _url) = postgres_store();
    let after = postgres.write(|c| {
        c.query_map_and_commit("SELECT 1", [], |r| r.get::<i64>(0))?;
        c.execute(
            "INSERT INTO config (key, value, updated_at) VALUES ('late', 'v', 1)",
            [],
        )
    });
    assert!(
        format!("{after:?}").contains("after its transaction's last one"),
        "{after:?}"
    );
    postgres
        .with(|c| {
            c.query_row("SELECT COUNT(*) FROM config WHERE key = 'late'", [], |r| {
                r.get::<i64>(0)
            })
        })
        .map(|n| assert_eq!(n, 0))
        .unwrap();
}

#[test]
fn racing_finishes_of_one_mission_end_in_one_outcome_and_one_status_event_on_both_backends() {
    use missionboard::mission::{EnvelopeName, Intent, Missions, NewMission, Status};
    let dir = tempfile::tempdir().unwrap();
    let (postgres, _url) = postgres_store();
    for store in [sqlite_store(&dir), postgres] {
        let missions = Missions::new(store);
        for round in 0..5 {
            let m = missions
                .create(NewMission::new(
                    "stub",
                    Intent::new(&format!("race {round}")).unwrap(),
                    EnvelopeName::new("default").unwrap(),
                ))
                .unwrap();
            let head = missions.bus().head().unwrap();
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let racers: Vec<_> = [Status::Landed, Status::Stuck]
                .into_iter()
                .cycle()
                .take(8)
                .map(|status| {
                    let (missions, m, start) = (missions.clone(), m.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        missions.finish_with(&m, status, "race", Vec::new())
                    })
                })
                .collect();
            let won: Vec<bool> = racers
                .into_iter()
                .filter_map(|r| r.join().unwrap().ok().map(|f| f.changed))
                .collect();
            assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
            let rested = missions.require(&m.id).unwrap();
            let events = missions.bus().since(head, 50).unwrap();
            assert_eq!(events.len(), 1, "only the winner announces: {events:?}");
            assert_eq!(events[0].data["newStatus"], rested.status.as_str());
            assert_eq!(events[0].data["missionId"], m.id.as_str());
        }
    }
}

#[test]
fn eight_first_starts_on_an_empty_database_at_once_all_open_it_and_make_the_schema_once() {
    for _ in 0..5 {
        let url = pg::fresh_database();
        let start = std::sync::Arc::new(std::sync::Barrier::new(8));
        let opens: Vec<_> = (0..8)
            .map(|_| {
                let (url, start) = (url.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    Store::open_at(&Location::Postgres(url)).map(|s| s.schema_version())
                })
            })
            .collect();
        for open in opens {
            let version = open
                .join()
                .unwrap()
                .expect("every start opens the database");
            assert_eq!(
                version.unwrap() as usize,
                missionboard::schema::PG_MIGRATIONS.len()
            );
        }
        assert_eq!(
            raw_rows(&url, "SELECT COUNT(*) FROM missionboard_schema"),
            [[Some("1".to_string())]],
            "one version row"
        );
    }
}
