//! The one test harness every test target shares: the built binary, a scratch
//! world per test (its own home and working directory), the waits, an in-process
//! fleet host, and a started unit with its mission tools on a recording handler.
//! Black-box tests (`tests/cli`, `tests/fault`) load it as `harness`, the rest as
//! `common`.

#![allow(dead_code)]

pub mod model_server;
#[allow(dead_code)]
pub mod pg;
pub mod python;
pub mod terminal;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use missionboard::acp_client::{Unit, UnitEvent, UnitSpec, mission_meta};
use missionboard::clock::{poll_until, poll_until_blocking};
use missionboard::config::Config;
use missionboard::fleet::Fleet;
use missionboard::mission_mcp::{
    MissionSocket, MissionToolHandler, bridge_server_entry, serve_mission_socket,
};
use missionboard::paths::Paths;
use missionboard::presets;
use missionboard::store::Store;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// The built binary.
pub const BIN: &str = env!("CARGO_BIN_EXE_missionboard");
/// The same, under the name the unit tests use.
pub const EXE: &str = BIN;

/// The build tree's target directory (the binary under test lives in
/// `<target>/<profile>/`): what the tests set up for themselves is kept under it.
pub fn target_dir() -> PathBuf {
    Path::new(BIN)
        .parent()
        .and_then(Path::parent)
        .expect("the binary lives in <target>/<profile>/")
        .to_path_buf()
}

/// The version of npm package `package` installed under `prefix`, if any.
pub fn installed_version(prefix: &std::path::Path, package: &str) -> Option<String> {
    let manifest = prefix
        .join("node_modules")
        .join(package)
        .join("package.json");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(manifest).ok()?).ok()?;
    doc["version"].as_str().map(str::to_string)
}

/// An exclusive `flock` on a file, held until dropped: one installer at a time across
/// test threads and test processes.
pub struct FileLock(std::fs::File);

impl FileLock {
    pub fn take(path: &Path) -> FileLock {
        use std::os::fd::AsRawFd;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("open the install lock {}: {e}", path.display()));
        // SAFETY: flock on a descriptor this value owns; it blocks until granted.
        let taken = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        assert_eq!(taken, 0, "flock {}", path.display());
        FileLock(file)
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking our own descriptor.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Every test gets this long before it is declared hung.
pub const TEST_DEADLINE: Duration = Duration::from_secs(30);

/// How often a wait looks again.
const POLL_EVERY: Duration = Duration::from_millis(20);

/// A one-turn stub script of these steps (JSON text, comma-separated).
pub fn script(steps: &str) -> String {
    format!(r#"{{"name":"t","turns":[{{"steps":[{steps}]}}]}}"#)
}

// ---- Waits: every one is on a condition with a deadline. ----

/// Poll `f` until it yields `Some`, or panic after `secs` seconds naming `what`.
#[track_caller]
pub fn wait_for<T>(secs: u64, what: &str, f: impl FnMut() -> Option<T>) -> T {
    match poll_until_blocking(Duration::from_secs(secs), POLL_EVERY, f) {
        Some(v) => v,
        None => panic!("timed out waiting for {what}"),
    }
}

/// [`wait_for`] on the async runtime.
pub async fn wait_for_async<T>(secs: u64, what: &str, f: impl FnMut() -> Option<T>) -> T {
    poll_until(Duration::from_secs(secs), POLL_EVERY, f)
        .await
        .unwrap_or_else(|| panic!("timed out waiting for {what}"))
}

/// Poll `cond` until it holds or `limit` passes.
pub async fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    poll_until(limit, POLL_EVERY, || cond().then_some(()))
        .await
        .is_some()
}

// ---- The black-box world: the real binary against a scratch home. ----

pub struct Sandbox {
    _dir: tempfile::TempDir,
    /// `MISSIONBOARD_HOME`.
    pub home: PathBuf,
    /// The directory commands run in.
    pub cwd: PathBuf,
    /// The shared store every command of this sandbox uses (`MISSIONBOARD_STORE_URL`),
    /// when the suite runs on PostgreSQL; `None`: the home's own `board.db`.
    pub store_url: Option<String>,
    /// This sandbox made that database, and drops it when done (another host's
    /// sandbox shares it and leaves it be).
    owns_database: bool,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let (true, Some(url)) = (self.owns_database, &self.store_url) {
            pg::drop_database(url);
        }
    }
}

/// What a run left behind.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    #[track_caller]
    pub fn ok(self) -> Run {
        assert_eq!(self.code, 0, "expected success:\n{self:#?}");
        self
    }

    /// Fail, showing stdout, unless stdout holds `text`.
    #[track_caller]
    pub fn assert_stdout_has(&self, text: &str) {
        assert!(self.stdout.contains(text), "{}", self.stdout);
    }

    pub fn lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }
}

impl Sandbox {
    /// A scratch home on this run's store: its own `board.db`, or a fresh
    /// PostgreSQL database when `MISSIONBOARD_TEST_STORE=postgres`.
    pub fn new() -> Sandbox {
        Sandbox::with_store(pg::suites_on_postgres().then(pg::fresh_database))
    }

    /// A scratch home on its own `board.db`, whatever the run's store: for what only
    /// the embedded file has (its modes, its bytes, its `user_version`).
    #[allow(dead_code)]
    pub fn on_file() -> Sandbox {
        Sandbox::with_store(None)
    }

    /// A scratch home on a fresh PostgreSQL database, whatever the run's store.
    #[allow(dead_code)]
    pub fn on_postgres() -> Sandbox {
        Sandbox::with_store(Some(pg::fresh_database()))
    }

    /// A second home (another host: its own home, sockets and logs) on the same
    /// shared store as this one.
    #[allow(dead_code)]
    pub fn another_host(&self) -> Sandbox {
        Sandbox::sharing(self.store_url.clone(), false)
    }

    fn with_store(store_url: Option<String>) -> Sandbox {
        let owns = store_url.is_some();
        Sandbox::sharing(store_url, owns)
    }

    fn sharing(store_url: Option<String>, owns_database: bool) -> Sandbox {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("mbhome");
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        Sandbox {
            home,
            cwd,
            owns_database,
            store_url,
            _dir: dir,
        }
    }

    /// A command with a clean, deterministic environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(&self.cwd)
            .env("MISSIONBOARD_HOME", &self.home)
            .env("HOME", self.home.parent().unwrap())
            .env_remove("MISSIONBOARD_OPT_IN_BETA")
            .env_remove("MISSIONBOARD_LOG")
            .env("NO_COLOR", "1");
        match &self.store_url {
            Some(url) => c.env("MISSIONBOARD_STORE_URL", url),
            None => c.env_remove("MISSIONBOARD_STORE_URL"),
        };
        c
    }

    /// Everything this home's processes logged, one log file after another (empty
    /// when nothing was logged yet).
    #[allow(dead_code)]
    pub fn log_text(&self) -> String {
        let entries = std::fs::read_dir(self.home.join("logs"))
            .into_iter()
            .flatten();
        entries
            .flatten()
            .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
            .collect()
    }

    /// This sandbox's store, opened in the test process (to read the record back or
    /// to write what a test sets up).
    #[allow(dead_code)]
    pub fn store(&self) -> Store {
        Store::open_at(&self.location()).expect("open the sandbox's store")
    }

    /// Where this sandbox's store is (to open it again, e.g. once per thread).
    #[allow(dead_code)]
    pub fn location(&self) -> missionboard::store::Location {
        match &self.store_url {
            Some(url) => missionboard::store::Location::Postgres(url.clone()),
            None => missionboard::store::Location::File(self.db()),
        }
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_with(self.command(args))
    }

    pub fn run_with(&self, mut c: Command) -> Run {
        let Output {
            status,
            stdout,
            stderr,
        } = c.output().expect("spawn missionboard");
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// The workspace `.missionboard/` of `cwd`, created.
    pub fn workspace(&self) -> PathBuf {
        let ws = self.cwd.join(".missionboard");
        std::fs::create_dir_all(&ws).unwrap();
        ws
    }

    pub fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub fn db(&self) -> PathBuf {
        self.home.join("board.db")
    }
}

impl Sandbox {
    /// Declare stub agents in home `agents.toml`: `(name, script)`; a `None` script
    /// leaves the stub to read directives from the intent.
    pub fn declare_stubs(&self, agents: &[(&str, Option<&str>)]) {
        let mut toml = String::new();
        for (name, script) in agents {
            let args = match script {
                Some(json) => {
                    // In the workspace: under strict and acpx a unit cannot read the home.
                    let path = self.cwd.join(format!("script-{name}.json"));
                    self.write(&path, json);
                    format!(
                        "[\"stub-agent\", \"--script\", {:?}]",
                        path.display().to_string()
                    )
                }
                None => "[\"stub-agent\"]".to_string(),
            };
            toml.push_str(&format!(
                "[agents.{name}]\ncommand = \"missionboard\"\nargs = {args}\ndescription = \"test stub\"\n\n"
            ));
        }
        self.write(&self.home.join("agents.toml"), &toml);
    }

    /// Fail unless `doctor` reports a Landlock ABI that holds writes (3 or newer): a
    /// confinement test on a kernel without it would prove nothing.
    pub fn require_landlock(&self) {
        let doctor = self.run(&["doctor"]);
        let abi: u32 = doctor
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("Sandbox:   Landlock ABI "))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("doctor names the Landlock ABI: {doctor:#?}"));
        assert!(
            abi >= 3,
            "this test needs a kernel with Landlock ABI 3 or newer (this one offers {abi})"
        );
    }

    /// `mission fire <agent> <intent> --wait --policy default` plus `extra`.
    pub fn fire(&self, agent: &str, intent: &str, extra: &[&str]) -> Run {
        let mut args = vec![
            "mission", "fire", agent, intent, "--wait", "--policy", "default",
        ];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// `mission fire stub go --wait --policy <envelope> --timeout <timeout>`, the
    /// stub's prompts written to `transcript` when one is named.
    pub fn fire_stub(&self, envelope: &str, timeout: &str, transcript: Option<&Path>) -> Run {
        self.run_with(self.fire_stub_command(envelope, timeout, transcript))
    }

    /// The command [`fire_stub`](Self::fire_stub) runs, to run another way.
    pub fn fire_stub_command(
        &self,
        envelope: &str,
        timeout: &str,
        transcript: Option<&Path>,
    ) -> Command {
        let mut cmd = self.command(&[
            "mission",
            "fire",
            "stub",
            "go",
            "--wait",
            "--policy",
            envelope,
            "--timeout",
            timeout,
        ]);
        if let Some(t) = transcript {
            cmd.env("STUB_TRANSCRIPT", t);
        }
        cmd
    }

    /// Write envelope `name` to the home: every call allowed, under compute block
    /// `compute` (a JSON object).
    pub fn write_compute_envelope(&self, name: &str, compute: &str) {
        self.write(
            &self.home.join(format!("hitl-policy-{name}.json")),
            &format!(r#"{{"default_action":"allow","rules":[],"compute":{compute}}}"#),
        );
    }

    /// Mission `id`'s status as `mission show` words it (its `Status:` line).
    pub fn status_line(&self, id: &str) -> String {
        let show = self.run(&["mission", "show", id]).ok();
        show.stdout
            .lines()
            .find_map(|l| l.strip_prefix("Status:    "))
            .unwrap_or_else(|| panic!("mission show {id} has no Status line:\n{}", show.stdout))
            .to_string()
    }

    /// Start a fire in the background (stdout/stderr captured when it is joined).
    pub fn fire_in_background(&self, agent: &str, intent: &str, extra: &[&str]) -> Background {
        let mut args = vec![
            "mission", "fire", agent, intent, "--wait", "--policy", "default",
        ];
        args.extend_from_slice(extra);
        Background::spawn(self.command(&args))
    }

    /// Record `n` open missions of agent `stub` under envelope `default`, intents
    /// `<intent> <i>`, straight into the store: rows no unit works. Their ids, oldest
    /// first.
    pub fn record_missions(&self, intent: &str, n: usize) -> Vec<String> {
        let missions = missionboard::mission::Missions::new(self.store());
        (0..n)
            .map(|i| {
                missions
                    .create(missionboard::mission::NewMission::new(
                        "stub",
                        missionboard::mission::Intent::new(&format!("{intent} {i}")).unwrap(),
                        missionboard::mission::EnvelopeName::new("default").unwrap(),
                    ))
                    .unwrap()
                    .id
            })
            .collect()
    }

    /// The ids of every mission, rested ones included, newest first.
    pub fn mission_ids(&self) -> Vec<String> {
        let out = self.run(&["mission", "list", "--all", "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        v["missions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// The id of the newest mission.
    pub fn newest_mission(&self) -> Option<String> {
        let out = self.run(&["mission", "list", "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        v["missions"]
            .as_array()?
            .first()?
            .get("id")?
            .as_str()
            .map(str::to_string)
    }

    /// `(summary, detail)` of each of mission `id`'s reports, oldest first, as
    /// `mission reports --json` reads them back.
    pub fn report_texts(&self, id: &str) -> Vec<(String, String)> {
        let out = self.run(&["mission", "reports", id, "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["summary"].as_str().unwrap_or_default().to_string(),
                    r["detail"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// Fire stub `stub`'s revise-land scenario under envelope `once` (one check try,
    /// writes in the workspace) with [`REVISE_CHECK`]: it lands without
    /// `revised.txt`, so its check fails and it rests stuck; sent back with
    /// feedback, it writes the feedback to `revised.txt` and lands again. The
    /// caller declares `stub` (no script). The mission's id.
    pub fn stuck_on_revise_check(&self) -> String {
        self.stuck_on_check(REVISE_CHECK)
    }

    /// [`Sandbox::stuck_on_revise_check`] with `check` for its check (one that
    /// fails until `revised.txt` exists).
    pub fn stuck_on_check(&self, check: &str) -> String {
        self.write(
            &self.home.join("hitl-policy-once.json"),
            &serde_json::json!({
                "default_action": "allow",
                "rules": [],
                "compute": {"maxChecks": 1},
                "sandbox": {"filesystem": {"write": ["{workspace}", "{tmp}"]}}
            })
            .to_string(),
        );
        let fired = self.run(&[
            "mission",
            "fire",
            "stub",
            "the revise-land scenario",
            "--wait",
            "--policy",
            "once",
            "--timeout",
            "60s",
            "--check",
            check,
        ]);
        assert_eq!(fired.code, 1, "{fired:#?}");
        let id = self.newest_mission().unwrap();
        assert_eq!(
            self.status_line(&id),
            format!("stuck — check failed 1 of 1 tries: `{check}` — exit 1")
        );
        id
    }

    /// Pending asks as JSON rows (`approvals list` is for humans; the ids come from
    /// its first column).
    pub fn pending_ask_ids(&self) -> Vec<String> {
        let out = self.run(&["approvals", "list"]).ok();
        out.stdout
            .lines()
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|id| id.len() == 36)
            .collect()
    }
}

/// The check of [`Sandbox::stuck_on_revise_check`]: passes once `revised.txt` exists.
pub const REVISE_CHECK: &str = "test -f revised.txt || { echo 'revised.txt is missing'; exit 1; }";

/// A background `missionboard` command (a `mission fire --wait`, a `host`…), its
/// output captured. Dropped unfinished — the test panicked before joining it — it
/// is ended with what it started ([`end_leftover`]): no fire or host outlives its
/// test, running on against a home or a database that is gone.
pub struct Background {
    child: Option<std::process::Child>,
}

impl Background {
    /// Start `command` with its output captured.
    pub fn spawn(mut command: Command) -> Background {
        let child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn missionboard");
        Background { child: Some(child) }
    }

    /// Own `child`, a process the test started with stdio of its own choosing, so a
    /// panic before the test sees it end still ends it and what it started.
    pub fn own(child: std::process::Child) -> Background {
        Background { child: Some(child) }
    }

    /// The process itself, to take its pipes or wait on it in place.
    pub fn child(&mut self) -> &mut std::process::Child {
        self.child.as_mut().unwrap()
    }

    /// The process id, to signal it.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Whether the process has exited (its output stays readable through `join`).
    pub fn exited(&mut self) -> bool {
        matches!(self.child.as_mut().unwrap().try_wait(), Ok(Some(_)))
    }

    /// SIGKILL the process and reap it (its output is dropped). Only the process:
    /// what it started is left to the product's own teardown, which a test of a
    /// killed host is there to see.
    pub fn kill(mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Wait for the process to end and take its output.
    pub fn output(mut self) -> std::process::Output {
        self.child.take().unwrap().wait_with_output().unwrap()
    }

    pub fn join(self) -> Run {
        let out = self.output();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            end_leftover(child);
        }
    }
}

/// How long what a killed child started has to go on its own (a unit's supervisor
/// sees its lifeline close and tears the unit's tree down: a grace, then a sweep)
/// before what remains is killed.
const LEFTOVER_GRACE: Duration = Duration::from_secs(10);

/// End `child`, a process a test started and did not see to the end, with every
/// process it started: its descendants as they are now, and its process group if
/// it leads one. The child is SIGKILLed and reaped first, so what it started sees
/// it gone and ends as the product ends it (a unit's supervisor tears its tree
/// down when its host's lifeline closes); its group, which may hold processes no
/// longer its descendants, is sent SIGTERM; whatever is still there after
/// [`LEFTOVER_GRACE`] is SIGKILLed. Never fails (it runs on a panic's unwinding).
pub fn end_leftover(child: &mut std::process::Child) {
    let pid = child.id();
    let leads_group = proc_stat(pid).is_some_and(|s| s.pgrp == pid);
    let descendants = descendants_of(pid);
    let _ = child.kill();
    let _ = child.wait();
    if leads_group {
        // SAFETY: a signal to the process group this test's child led.
        unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGTERM) };
    }
    let remaining = || -> Vec<(u32, u64)> {
        let mut left: Vec<(u32, u64)> = descendants
            .iter()
            .copied()
            .filter(|&(p, started)| {
                proc_stat(p).is_some_and(|s| s.started == started && s.state != 'Z')
            })
            .collect();
        if leads_group {
            for p in all_pids() {
                if let Some(s) = proc_stat(p).filter(|s| s.pgrp == pid && s.state != 'Z')
                    && !left.iter().any(|&(q, _)| q == p)
                {
                    left.push((p, s.started));
                }
            }
        }
        left
    };
    let gone = poll_until_blocking(LEFTOVER_GRACE, POLL_EVERY, || {
        remaining().is_empty().then_some(())
    });
    if gone.is_none() {
        for (p, _) in remaining() {
            // SAFETY: a signal to a process this test's child started, checked by
            // its start time to be that same process and not a reused pid.
            unsafe { libc::kill(p as libc::pid_t, libc::SIGKILL) };
        }
    }
}

/// What `/proc/<pid>/stat` says of a process that [`end_leftover`] needs.
struct ProcStat {
    state: char,
    ppid: u32,
    pgrp: u32,
    /// Its start time (clock ticks since boot): a pid with another start time is
    /// another process.
    started: u64,
}

fn proc_stat(pid: u32) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (which may hold spaces and parentheses): state, ppid,
    // pgrp, session, tty, tpgid, flags, minflt, cminflt, majflt, cmajflt, utime,
    // stime, cutime, cstime, priority, nice, num_threads, itrealvalue, starttime.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

/// Every live descendant of `pid` now, with its start time.
fn descendants_of(pid: u32) -> Vec<(u32, u64)> {
    let table: Vec<(u32, ProcStat)> = all_pids()
        .into_iter()
        .filter_map(|p| proc_stat(p).map(|s| (p, s)))
        .collect();
    let mut found: Vec<(u32, u64)> = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for (p, s) in &table {
            if s.ppid == parent && !found.iter().any(|&(q, _)| q == *p) {
                found.push((*p, s.started));
                frontier.push(*p);
            }
        }
    }
    found
}

// ---- Another holder of the database's write lock. ----

/// Another holder of the store's write lock, on a connection of its own on a thread
/// of its own: on the SQLite file, a transaction in `BEGIN EXCLUSIVE`; on PostgreSQL,
/// the write lock every writer takes and an EXCLUSIVE lock on every table (reads go
/// on, writes wait).
pub struct ForeignLock {
    holder: Option<Holder>,
}

struct Holder {
    thread: std::thread::JoinHandle<Result<(), String>>,
    release: std::sync::mpsc::Sender<()>,
    released: Arc<std::sync::atomic::AtomicBool>,
}

impl ForeignLock {
    /// Take the write lock on the file `db` and return once it is held. It is held for
    /// `secs` seconds, or until [`ForeignLock::release`].
    pub fn hold(db: &Path, secs: u64) -> ForeignLock {
        let db = db.to_path_buf();
        ForeignLock::hold_with(secs, move || {
            let conn = rusqlite::Connection::open(&db).map_err(|e| e.to_string())?;
            conn.execute_batch("BEGIN EXCLUSIVE; UPDATE config SET value = value WHERE 0;")
                .map_err(|e| e.to_string())?;
            Ok(move || conn.execute_batch("COMMIT").map_err(|e| e.to_string()))
        })
    }

    /// On a thread of its own: `take` the lock, hold it until released or `secs`
    /// pass, set the released flag, then commit. Returns once the lock is held.
    fn hold_with<C>(
        secs: u64,
        take: impl FnOnce() -> Result<C, String> + Send + 'static,
    ) -> ForeignLock
    where
        C: FnOnce() -> Result<(), String>,
    {
        use std::sync::atomic::{AtomicBool, Ordering};
        let (held_tx, held_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let (release, release_rx) = std::sync::mpsc::channel::<()>();
        let released = Arc::new(AtomicBool::new(false));
        let flag = released.clone();
        let thread = std::thread::spawn(move || -> Result<(), String> {
            let commit = match take() {
                Ok(commit) => {
                    let _ = held_tx.send(Ok(()));
                    commit
                }
                Err(e) => {
                    let _ = held_tx.send(Err(e.clone()));
                    return Err(e);
                }
            };
            // Held until released or `secs` pass; the flag is set before COMMIT.
            let _ = release_rx.recv_timeout(Duration::from_secs(secs));
            flag.store(true, Ordering::SeqCst);
            commit()
        });
        held_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the other connection to hold the lock")
            .expect("the other connection took the lock");
        ForeignLock {
            holder: Some(Holder {
                thread,
                release,
                released,
            }),
        }
    }

    /// Take the write lock on the store at `location` (see [`ForeignLock::hold`]).
    pub fn hold_store(location: &missionboard::store::Location, secs: u64) -> ForeignLock {
        match location {
            missionboard::store::Location::File(db) => ForeignLock::hold(db, secs),
            missionboard::store::Location::Postgres(url) => ForeignLock::hold_postgres(url, secs),
        }
    }

    fn hold_postgres(url: &str, secs: u64) -> ForeignLock {
        let url = url.to_string();
        ForeignLock::hold_with(secs, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            let client = rt.block_on(async {
                let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                    .await
                    .map_err(|e| e.to_string())?;
                tokio::spawn(connection);
                let tables: String = client
                    .query_one(
                        "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables WHERE schemaname = current_schema()",
                        &[],
                    )
                    .await
                    .and_then(|r| r.try_get(0))
                    .map_err(|e| e.to_string())?;
                client
                    .batch_execute(&format!(
                        "BEGIN; SELECT pg_advisory_xact_lock({}); LOCK TABLE {tables} IN EXCLUSIVE MODE",
                        missionboard::store::postgres::WRITE_LOCK
                    ))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok::<_, String>(client)
            })?;
            Ok(move || {
                rt.block_on(client.batch_execute("COMMIT"))
                    .map_err(|e| e.to_string())
            })
        })
    }

    /// Is the lock still held (the holder has not begun to commit)?
    pub fn is_held(&self) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|h| !h.released.load(std::sync::atomic::Ordering::SeqCst))
    }

    /// Let the holder commit now (if it has not already), and wait for it.
    #[track_caller]
    pub fn release(mut self) {
        if let Some(holder) = &self.holder {
            let _ = holder.release.send(());
        }
        self.wait();
    }

    /// Wait for the holder to commit on its own, asserting it did.
    #[track_caller]
    pub fn wait(&mut self) {
        if let Some(holder) = self.holder.take() {
            let done = holder.thread.join().expect("the lock holder's thread");
            assert!(done.is_ok(), "the lock holder failed: {done:?}");
        }
    }
}

impl Drop for ForeignLock {
    fn drop(&mut self) {
        if let Some(holder) = self.holder.take() {
            let _ = holder.release.send(());
            let _ = holder.thread.join();
        }
    }
}

// ---- An in-process fleet host (as the board runs it) over the stub binary. ----

/// A fleet in a scratch home whose agents are stubs running the given scripts.
pub struct FleetHost {
    pub fleet: Fleet,
    pub home: PathBuf,
    _dir: tempfile::TempDir,
}

impl FleetHost {
    /// `scripts` are `(agent name, script JSON)`; the preset envelopes are seeded and
    /// `fleet-max-parallel` is set to `max_parallel`.
    pub fn new(max_parallel: &str, scripts: &[(&str, &str)]) -> FleetHost {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        presets::seed_policies_quietly(&home).unwrap();
        let mut toml = String::new();
        for (name, script) in scripts {
            let path = home.join(format!("{name}.json"));
            std::fs::write(&path, script).unwrap();
            toml.push_str(&format!(
                "[agents.{name}]\ncommand = {BIN:?}\nargs = [\"stub-agent\", \"--script\", {:?}]\n\n",
                path.display().to_string()
            ));
        }
        std::fs::write(home.join("agents.toml"), toml).unwrap();
        // On the run's store, as `Sandbox::new` is.
        let location = match pg::suites_on_postgres().then(pg::fresh_database) {
            Some(url) => missionboard::store::Location::Postgres(url),
            None => missionboard::store::Location::File(home.join("board.db")),
        };
        let store = Store::open_at(&location).unwrap();
        Config::new(store.clone())
            .set("fleet-max-parallel", max_parallel)
            .unwrap();
        let fleet =
            Fleet::with_executable(Paths::resolve(home.clone(), cwd), store, BIN.into()).unwrap();
        FleetHost {
            fleet,
            home,
            _dir: dir,
        }
    }
}

// ---- A started unit: the library as the host, the built binary as the unit. ----

/// Records every tool call; answers asks with a fixed text.
pub struct RecordingHandler {
    pub calls: Mutex<Vec<(String, Map<String, Value>)>>,
    pub answer: String,
    /// Replies to asks before `answer` is given (e.g. "no answer yet …").
    pub ask_replies: Mutex<std::collections::VecDeque<String>>,
}

impl RecordingHandler {
    pub fn new(answer: &str) -> Arc<Self> {
        Arc::new(RecordingHandler {
            calls: Mutex::new(Vec::new()),
            answer: answer.to_owned(),
            ask_replies: Mutex::new(Default::default()),
        })
    }

    pub fn calls(&self) -> Vec<(String, Map<String, Value>)> {
        self.calls.lock().unwrap().clone()
    }

    pub fn names(&self) -> Vec<String> {
        self.calls().into_iter().map(|(n, _)| n).collect()
    }
}

impl MissionToolHandler for RecordingHandler {
    fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<String, String>> {
        self.calls
            .lock()
            .unwrap()
            .push((tool.to_owned(), args.clone()));
        let reply = match tool {
            "mission_ask_attention" => Ok(self
                .ask_replies
                .lock()
                .unwrap()
                .pop_front()
                .unwrap_or_else(|| self.answer.clone())),
            "mission_report" => Ok(format!(
                "recorded {} report",
                args.get("kind").and_then(Value::as_str).unwrap_or("progress")
            )),
            "mission_plan" => Ok(serde_json::json!({"entries": args.get("entries"), "revision": 1}).to_string()),
            "mission_finish" => match args.get("status").and_then(Value::as_str) {
                Some(status) => Ok(format!("mission finished as {status}")),
                None => Err("missiontools: mission_finish requires a status (landed|derailed|stuck|abandoned)".into()),
            },
            _ => Err("unexpected".into()),
        };
        Box::pin(async move { reply })
    }
}

/// A started unit plus everything that must outlive it.
pub struct Harness {
    pub unit: Unit,
    pub events: mpsc::UnboundedReceiver<UnitEvent>,
    pub socket: Option<MissionSocket>,
    pub socket_path: PathBuf,
    pub handler: Arc<RecordingHandler>,
    pub dir: tempfile::TempDir,
}

pub struct Options {
    pub script: Option<Value>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub mission_server: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            script: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            mission_server: true,
        }
    }
}

pub async fn start(options: Options) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let handler = RecordingHandler::new("yes");
    let socket_path = dir.path().join("m-test.sock");
    let socket = serve_mission_socket(&socket_path, handler.clone())
        .await
        .unwrap();
    let mut args = vec!["stub-agent".to_owned()];
    if let Some(script) = &options.script {
        let path = dir.path().join("script.json");
        std::fs::write(&path, serde_json::to_vec_pretty(script).unwrap()).unwrap();
        args.push("--script".into());
        args.push(path.display().to_string());
    }
    args.extend(options.args);
    let spec = UnitSpec {
        program: PathBuf::from(BIN),
        args,
        env: options.env,
        cwd: dir.path().to_path_buf(),
        additional_dirs: Vec::new(),
        mcp_servers: if options.mission_server {
            vec![bridge_server_entry(Path::new(BIN), &socket, dir.path()).unwrap()]
        } else {
            Vec::new()
        },
        meta: mission_meta("m-test"),
        // The harness's units are admitted as the fleet's are: their own tree only.
        pid_slot: Some(socket.unit_pid_slot()),
        supervisor: Some(PathBuf::from(BIN)),
    };
    let mut unit = Unit::start(spec)
        .await
        .unwrap_or_else(|e| panic!("unit failed to start: {e}"));
    let events = unit.take_events().unwrap();
    Harness {
        unit,
        events,
        socket: Some(socket),
        socket_path,
        handler,
        dir,
    }
}

/// `(kind, summary)` of every report in a `mission show --json` document, oldest first.
pub fn report_kinds(show: &Value) -> Vec<(String, String)> {
    show["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["summary"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Everything on the event channel right now.
pub fn drain(events: &mut mpsc::UnboundedReceiver<UnitEvent>) -> Vec<UnitEvent> {
    missionboard::acp_client::drain_events(events)
}

/// Wait (bounded) for an event matching `pred`, returning the ones seen.
pub async fn wait_event(
    events: &mut mpsc::UnboundedReceiver<UnitEvent>,
    limit: Duration,
    mut pred: impl FnMut(&UnitEvent) -> bool,
) -> Vec<UnitEvent> {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(limit, async {
        while let Some(event) = events.recv().await {
            let hit = pred(&event);
            seen.push(event);
            if hit {
                return true;
            }
        }
        false
    })
    .await;
    assert!(
        matches!(found, Ok(true)),
        "expected event not seen; got {seen:?}"
    );
    seen
}

pub fn pid_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// The pid of every process now in `/proc`.
pub fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .expect("these tests read processes from /proc: run them on Linux with /proc mounted")
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse().ok())
        .collect()
}

/// Pids of live processes whose command line mentions `needle`.
pub fn processes_mentioning(needle: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            // Zombies keep no cmdline; they are not "alive" for our purposes.
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(needle))
        })
        .collect()
}

/// Mission `id`'s reports as `mission show --json` lists them, each `[kind] summary`.
pub fn report_summaries(sb: &Sandbox, id: &str) -> Vec<String> {
    let shown: serde_json::Value =
        serde_json::from_str(&sb.run(&["mission", "show", id, "--json"]).ok().stdout).unwrap();
    shown["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "[{}] {}",
                r["kind"].as_str().unwrap(),
                r["summary"].as_str().unwrap()
            )
        })
        .collect()
}

/// `git` in `dir` with only the configuration the test sets: no system or user
/// config, a fixed identity for the test's own commits. Its stdout, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}
