//! The fault and race suite: hosts killed mid-turn, mid-ask and mid-plan-write;
//! answers after a crash; racing answers, verdicts and sweeps; a database locked by
//! another process; malformed frames on both protocols. Real binary, real children,
//! a real store (SQLite, or PostgreSQL under `MISSIONBOARD_TEST_STORE=postgres`);
//! every wait is on a condition with a deadline.

#[path = "../common/mod.rs"]
mod harness;

mod crash;
mod frames;
mod locked;
mod races;

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};

use harness::Sandbox;
pub use harness::script;
use missionboard::store::Store;

/// A `mission fire` host started in the background, with the mission id it printed.
pub struct Host {
    pub child: Child,
    pub mission: String,
}

impl Host {
    /// Fire `agent` with `intent`; `env` is added to the host's (and so its unit's)
    /// environment.
    pub fn fire(sb: &Sandbox, agent: &str, intent: &str, env: &[(&str, &std::path::Path)]) -> Host {
        let mut cmd = sb.command(&[
            "mission", "fire", agent, intent, "--wait", "--policy", "default",
        ]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mission fire");
        // "Mission <id> (instance …, session …)." is the third line.
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mission = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| {
                l.strip_prefix("Mission ")
                    .and_then(|rest| rest.split_once(" (instance "))
                    .map(|(id, _)| id.to_string())
            })
            .expect("the host printed its mission id");
        // Keep draining stdout so the host never blocks writing its verdict.
        std::thread::spawn(move || lines.for_each(drop));
        Host { child, mission }
    }

    /// SIGKILL the host and reap it: no handler runs, no cleanup happens.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        harness::end_leftover(&mut self.child);
    }
}

/// The store's own integrity check (`PRAGMA integrity_check` on the file, read-only;
/// on PostgreSQL, a live connection).
pub fn integrity(sb: &Sandbox) -> String {
    match sb.location() {
        missionboard::store::Location::File(db) => Store::open_read_only(&db)
            .unwrap()
            .expect("the database exists")
            .integrity_check()
            .unwrap(),
        _ => sb.store().integrity_check().unwrap(),
    }
}

/// `mission show <id> --json`.
pub fn show(sb: &Sandbox, id: &str) -> serde_json::Value {
    let run = sb.run(&["mission", "show", id, "--json"]).ok();
    serde_json::from_str(&run.stdout).unwrap()
}
