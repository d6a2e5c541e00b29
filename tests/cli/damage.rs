//! A damaged store is noticed where it matters: with a page of `board.db` overwritten
//! (garbage written with plain file I/O, on a page no listing or fire reads),
//! every command stops naming `doctor` and the recovery, a fire starts no unit, the
//! file is left exactly as it was, and `doctor` shows the damage.

use std::io::{Seek, SeekFrom, Write};

use crate::harness::Sandbox;

/// Overwrite with garbage the root page of `table` — one no listing or fire reads,
/// so SQLite alone would not notice. Fails, naming why, when the file is not a
/// plain checkpointed SQLite file.
fn damage_table(db: &std::path::Path, table: &str) {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let wal = std::path::PathBuf::from(wal);
    assert!(
        std::fs::metadata(&wal).map_or(true, |m| m.len() == 0),
        "{} still has a write-ahead log: the last command did not close the database cleanly, so its pages are not all in the file",
        db.display()
    );
    let (page, root): (i64, i64) = {
        let c =
            rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let page = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let root = c
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap_or_else(|e| panic!("table {table} has no root page in {}: {e}", db.display()));
        (page, root)
    };
    assert!(root > 1, "{table} is rooted on the header page");
    let mut f = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    f.seek(SeekFrom::Start(((root - 1) * page) as u64)).unwrap();
    let garbage: Vec<u8> = (0..page).map(|i| (i * 31 % 251) as u8).collect();
    f.write_all(&garbage).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn a_store_with_damaged_pages_stops_every_command_and_a_fire_starts_no_unit() {
    // The damage is to the embedded file's pages, whatever store the run uses.
    let sb = Sandbox::on_file();
    sb.declare_stubs(&[("stub", None)]);
    sb.record_missions("seeded", 5);
    sb.run(&["mission", "list"]).ok();
    let db = sb.db();
    damage_table(&db, "oracle_trace");
    let before = std::fs::read(&db).unwrap();
    let recovery = missionboard::store::recovery(&db);
    let refusal = |run: &crate::harness::Run, what: &str| {
        assert_eq!(run.code, 1, "{what}: {run:#?}");
        let prefix = format!(
            "Error: the missionboard database {} is damaged (",
            db.display()
        );
        assert!(run.stderr.starts_with(&prefix), "{what}: {}", run.stderr);
        assert!(
            run.stderr.ends_with(&format!(
                ") — nothing was run on it; 'missionboard doctor' shows the damage. {recovery}\n"
            )),
            "{what}: {}",
            run.stderr
        );
        assert_eq!(run.stderr.lines().count(), 1, "{what}: {}", run.stderr);
    };

    refusal(&sb.run(&["mission", "list"]), "mission list");
    let transcript = sb.cwd.join("transcript.log");
    let mut fire = sb.command(&[
        "mission", "fire", "stub", "go", "--wait", "--policy", "default",
    ]);
    fire.env("STUB_TRANSCRIPT", &transcript);
    refusal(&sb.run_with(fire), "mission fire");
    assert!(
        !transcript.exists(),
        "a unit was started and prompted on a damaged store"
    );

    let doctor = sb.run(&["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor:#?}");
    assert!(
        doctor
            .stdout
            .starts_with(&format!("Ready: no — {recovery};")),
        "{}",
        doctor.stdout
    );
    let store_line = doctor
        .stdout
        .lines()
        .find(|l| l.starts_with("Store:"))
        .unwrap();
    assert!(
        store_line.starts_with(&format!(
            "Store:     {} is damaged (integrity ",
            db.display()
        )) && !store_line.contains("integrity ok"),
        "{store_line}"
    );
    assert!(
        std::fs::read(&db).unwrap() == before,
        "the damaged file was changed; recovery needs it as it was"
    );
}
