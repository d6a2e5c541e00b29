//! The conformance harness: the published agents installed from npm at pinned
//! versions into the build tree, the scripted model servers (`models/*.py`) they are
//! pointed at, a scratch missionboard home per case with the agent declared, the fire
//! and the operator's commands, and the `/proc` walk that proves a process tree gone.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{FileLock, installed_version, target_dir};
pub use crate::common::{Run, Sandbox, wait_for};

/// How long one step of a real agent may take (node start, a model round trip, a
/// tool call) before a wait gives up: generous, the machine is shared.
pub const STEP_SECS: u64 = 120;

// ---- The agents, pinned. ----

/// One published agent at a pinned version.
#[derive(Debug, Clone, Copy)]
pub struct Pin {
    /// The npm package.
    pub package: &'static str,
    pub version: &'static str,
    /// The executable it installs under `node_modules/.bin`.
    pub bin: &'static str,
}

/// Where the agents are installed: `<target>/conformance/npm` (an npm `--prefix`).
pub fn npm_prefix() -> PathBuf {
    target_dir().join("conformance").join("npm")
}

/// The path of `pin`'s executable, installing it (once, under a file lock) when the
/// build tree lacks it or holds another version.
pub fn install(pin: &Pin) -> PathBuf {
    static DONE: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let prefix = npm_prefix();
    let bin = prefix.join("node_modules").join(".bin").join(pin.bin);
    if DONE.lock().unwrap().contains(pin.package) {
        return bin;
    }
    std::fs::create_dir_all(&prefix).unwrap();
    let _lock = FileLock::take(&prefix.join(".install.lock"));
    if installed_version(&prefix, pin.package).as_deref() != Some(pin.version) || !bin.exists() {
        let spec = format!("{}@{}", pin.package, pin.version);
        let started = Instant::now();
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(&spec)
            .output()
            .unwrap_or_else(|e| {
                panic!("the conformance suite installs {spec} with npm, which did not start ({e}): install Node.js and npm")
            });
        assert!(
            out.status.success(),
            "npm install {spec} failed (the suite needs registry.npmjs.org):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!(
            "conformance: npm install {spec} took {:.1}s",
            started.elapsed().as_secs_f64()
        );
        assert_eq!(
            installed_version(&prefix, pin.package).as_deref(),
            Some(pin.version),
            "npm installed another version of {}",
            pin.package
        );
        assert!(bin.exists(), "{spec} installed no {}", bin.display());
    }
    DONE.lock().unwrap().insert(pin.package);
    bin
}

// ---- The scripted model servers. ----

/// The directory of the model servers and the frame tap.
fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("conformance")
}

/// One turn of a model script (see `models/scripted.py`).
pub fn say(text: &str) -> Value {
    json!({ "text": text })
}

/// A turn that calls the agent's tool `name` with `input`.
pub fn call(name: &str, input: Value) -> Value {
    json!({ "tool": name, "input": input })
}

/// A scripted model server (`models/<api>.py`) on a loopback port, stopped on drop.
pub struct Model {
    child: Child,
    /// `http://127.0.0.1:<port>`: the base URL, without any `/v1`.
    pub base: String,
    record: PathBuf,
    _dir: tempfile::TempDir,
}

impl Model {
    /// Start the server of `api` (`anthropic`, `openai_chat`, …) replaying `turns`.
    pub fn start(api: &str, turns: Vec<Value>) -> Model {
        Model::serving(api, json!({ "turns": turns }))
    }

    /// Start the server of `api` playing `turns` to every conversation at once: a
    /// request takes the turn its own conversation has reached (see `scripted.py`).
    pub fn per_conversation(api: &str, turns: Vec<Value>) -> Model {
        Model::serving(api, json!({ "turns": turns, "per_conversation": true }))
    }

    fn serving(api: &str, doc: Value) -> Model {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("script.json");
        let record = dir.path().join("requests.jsonl");
        std::fs::write(&script, doc.to_string()).unwrap();
        let program = suite_dir().join("models").join(format!("{api}.py"));
        let mut child = Command::new("python3")
            .arg(&program)
            .arg("--script")
            .arg(&script)
            .arg("--record")
            .arg(&record)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("the scripted model servers run on python3, which did not start ({e}): install python3")
            });
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{} did not start listening", program.display()));
        let base = line
            .trim()
            .strip_prefix("listening ")
            .unwrap_or_else(|| panic!("{}: unexpected first line {line:?}", program.display()))
            .to_string();
        Model {
            child,
            base,
            record,
            _dir: dir,
        }
    }

    /// A scratch directory that lives as long as this server (for the agent's own
    /// config files that point it here).
    pub fn dir(&self) -> &Path {
        self._dir.path()
    }

    /// Every request recorded so far: `{seq, path, turn, exhausted, body}`, in order.
    ///
    /// Every complete line must parse: a record the harness cannot read is a failure,
    /// never a request quietly left out. Only a last line still being written (no
    /// newline yet) waits for the next read.
    pub fn requests(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.record).unwrap_or_default();
        let complete = match text.rfind('\n') {
            Some(end) => &text[..end],
            None => "",
        };
        complete
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| {
                    panic!(
                        "the model server's record {} has a line that is not JSON ({e}): {l}",
                        self.record.display()
                    )
                })
            })
            .collect()
    }

    /// The requests that took a scripted turn, in turn order.
    pub fn turn_requests(&self) -> Vec<Value> {
        let mut turns: Vec<Value> = self
            .requests()
            .into_iter()
            .filter(|r| r["turn"].is_u64())
            .collect();
        turns.sort_by_key(|r| r["turn"].as_u64());
        turns
    }

    /// How many scripted turns have been taken.
    pub fn turns_taken(&self) -> usize {
        self.turn_requests().len()
    }

    /// Did the agent ask for more turns than the script had?
    pub fn exhausted(&self) -> bool {
        self.requests().iter().any(|r| r["exhausted"] == true)
    }

    /// Does any request that took a turn at or after `turn` carry `needle` in its body?
    pub fn heard_after(&self, turn: u64, needle: &str) -> bool {
        self.turn_requests()
            .iter()
            .filter(|r| r["turn"].as_u64() >= Some(turn))
            .any(|r| r["body"].to_string().contains(needle))
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        crate::common::end_leftover(&mut self.child);
    }
}

// ---- A case's world: a scratch home, the agent under its catalogue entry. ----

/// What the suite must know of one agent: its package, its model API, the host
/// variables that point it at a scripted model, and its own tool names.
pub struct Conformer {
    /// Its catalogue name.
    pub name: &'static str,
    pub pin: Pin,
    /// The model server it talks to (`models/<api>.py`).
    pub api: &'static str,
    /// Host variables for a fire at `model`'s base URL (the catalogue entry passes
    /// them through to the unit).
    pub provider_env: fn(&Model) -> Vec<(String, String)>,
    /// A mission tool (`mission_report`, …) as the agent names it to its model.
    pub mission_tool: fn(&str) -> String,
    /// A model turn that writes `content` to `path` (absolute: `{workspace}/…`) with the
    /// agent's own write tool.
    pub write_call: fn(&str, &str) -> Value,
    /// A model turn that runs `command` with the agent's own shell tool.
    pub shell_call: fn(&str) -> Value,
    /// What a user would have set up in the workspace before firing (a project
    /// config naming the provider), given the workspace and the model.
    pub workspace_setup: Option<fn(&Path, &Model)>,
}

/// One case: a scratch home whose `agents.toml` holds the agent's catalogue entry as
/// shipped (no hand edits, no granted paths), the agent's scripted model, and the
/// host environment every command of the case runs with.
pub struct World {
    pub sb: Sandbox,
    pub model: Model,
    pub agent: &'static Conformer,
    env: Vec<(String, String)>,
}

impl World {
    /// The agent asked the model for no more turns than the script holds.
    #[track_caller]
    pub fn assert_within_script(&self) {
        assert!(
            !self.model.exhausted(),
            "the agent asked the model past its script"
        );
    }

    /// `{workspace}` in a turn's text is the case's workspace (some agents' tools
    /// take absolute paths only).
    pub fn new(agent: &'static Conformer, turns: Vec<Value>) -> World {
        World::with_model(agent, turns, Model::start)
    }

    /// A world whose model plays `turns` to every conversation at once (many
    /// missions of the agent side by side).
    pub fn per_conversation(agent: &'static Conformer, turns: Vec<Value>) -> World {
        World::with_model(agent, turns, Model::per_conversation)
    }

    fn with_model(
        agent: &'static Conformer,
        turns: Vec<Value>,
        serve: fn(&str, Vec<Value>) -> Model,
    ) -> World {
        let bin = install(&agent.pin);
        let sb = Sandbox::new();
        let workspace = sb.cwd.display().to_string();
        let turns = turns
            .into_iter()
            .map(|turn| {
                serde_json::from_str(&turn.to_string().replace("{workspace}", &workspace)).unwrap()
            })
            .collect();
        let model = serve(agent.api, turns);
        let path =
            std::env::join_paths(std::iter::once(bin.parent().unwrap().to_path_buf()).chain(
                std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
            ))
            .unwrap();
        let mut env = vec![("PATH".to_string(), path.to_string_lossy().into_owned())];
        env.extend((agent.provider_env)(&model));
        if let Some(setup) = agent.workspace_setup {
            setup(&sb.cwd, &model);
        }
        World {
            sb,
            model,
            agent,
            env,
        }
    }

    /// Write the agent's catalogue section into the home's `agents.toml`. With
    /// `MISSIONBOARD_CONFORMANCE_RECORD=<dir>` set, the agent runs under
    /// `acp_tap.py`, which logs every ACP frame into the workspace; dropping the world
    /// copies the log to `<dir>`. Not under `strict` and `acpx`: they let a unit read
    /// only its own program's tree, and the tap would be that program.
    pub fn declare(&self, policy: &str) {
        let name = self.agent.name;
        let section = missionboard::agents::catalogue::section(name)
            .unwrap_or_else(|| panic!("the catalogue has no entry {name:?}"));
        let text = if recording_dir().is_some() && !["strict", "acpx"].contains(&policy) {
            let mut doc: toml::Table = toml::from_str(&section).unwrap();
            let entry = doc["agents"][name].as_table_mut().unwrap();
            let command = entry["command"].as_str().unwrap().to_string();
            let mut args = vec![
                toml::Value::from(suite_dir().join("acp_tap.py").display().to_string()),
                toml::Value::from(self.frames_log().display().to_string()),
                toml::Value::from(command),
            ];
            args.extend(entry["args"].as_array().cloned().unwrap_or_default());
            entry.insert("command".into(), python_executable().into());
            entry.insert("args".into(), toml::Value::Array(args));
            toml::to_string(&doc).unwrap()
        } else {
            section
        };
        self.sb.write(&self.sb.home.join("agents.toml"), &text);
    }

    fn frames_log(&self) -> PathBuf {
        self.sb.cwd.join(".acp-frames.jsonl")
    }

    /// A missionboard command with the case's host environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = self.sb.command(args);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.sb.run_with(self.command(args))
    }

    /// `mission fire <agent> <intent> --wait --policy <policy> --trace`, in the background.
    pub fn fire(&self, intent: &str, policy: &str) -> Firing {
        self.fire_with(intent, policy, "--trace")
    }

    /// `mission fire <agent> <intent> --queue --wait --policy <policy>`, in the
    /// background: recorded for a `missionboard host`, followed to its verdict.
    pub fn fire_queued(&self, intent: &str, policy: &str) -> Firing {
        self.fire_with(intent, policy, "--queue")
    }

    /// `mission fire <agent> <intent> --wait --policy <policy> --trace` with the agent
    /// declared as `section` (a hand-written agents.toml entry), in the background.
    pub fn fire_declared(&self, intent: &str, policy: &str, section: &str) -> Firing {
        self.sb.write(&self.sb.home.join("agents.toml"), section);
        self.spawn_fire(intent, policy, "--trace")
    }

    /// `mission fire <agent> <intent> --wait --policy <policy> <flag>`, in the background.
    fn fire_with(&self, intent: &str, policy: &str, flag: &str) -> Firing {
        self.declare(policy);
        self.spawn_fire(intent, policy, flag)
    }

    fn spawn_fire(&self, intent: &str, policy: &str, flag: &str) -> Firing {
        Firing::spawn(self.command(&[
            "mission",
            "fire",
            self.agent.name,
            intent,
            "--wait",
            "--policy",
            policy,
            flag,
        ]))
    }

    /// `mission fire <agent> <intent> --wait --policy <policy> <extra…>`, in the background.
    pub fn fire_with_args(&self, intent: &str, policy: &str, extra: &[&str]) -> Firing {
        self.declare(policy);
        let mut args = vec![
            "mission",
            "fire",
            self.agent.name,
            intent,
            "--wait",
            "--policy",
            policy,
        ];
        args.extend_from_slice(extra);
        Firing::spawn(self.command(&args))
    }

    /// Any missionboard command with the world's environment, in the background.
    pub fn spawn(&self, args: &[&str]) -> Firing {
        Firing::spawn(self.command(args))
    }

    /// `missionboard host --width 1` with the world's environment, in the background.
    pub fn host(&self) -> Firing {
        self.host_with(&["--width", "1"])
    }

    /// `missionboard host <args>` with the world's environment, in the background.
    pub fn host_with(&self, args: &[&str]) -> Firing {
        Firing::spawn(self.command(&[&["host"], args].concat()))
    }

    /// `mission show --json` of the newest mission.
    pub fn show(&self) -> Value {
        show(&self.sb)
    }
}

/// A `mission fire --wait` running in the background, its output captured.
pub struct Firing {
    child: Option<Child>,
}

impl Firing {
    fn spawn(mut command: Command) -> Firing {
        let child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn missionboard");
        Firing { child: Some(child) }
    }

    /// The host's process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    fn exited(&self) -> bool {
        process_state(self.pid()).is_none_or(|s| s == 'Z')
    }

    /// Kill the host (if still running) and collect what it printed.
    fn kill_and_collect(mut self) -> Run {
        let mut child = self.child.take().unwrap();
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Wait for the fire to exit. One still running after `secs` is killed and the
    /// case fails with its output: an agent that hangs fails its case, not the suite.
    #[track_caller]
    pub fn join_within(self, secs: u64) -> Run {
        let exited = missionboard::clock::poll_until_blocking(
            Duration::from_secs(secs),
            Duration::from_millis(50),
            || self.exited().then_some(()),
        );
        let hung = exited.is_none();
        let run = self.kill_and_collect();
        assert!(!hung, "the fire did not exit within {secs}s:\n{run:#?}");
        run
    }

    /// Poll `f` while the fire runs. If the fire exits first, or `secs` pass, the
    /// case fails naming `what`, with the fire's output.
    #[track_caller]
    pub fn wait<T>(&mut self, secs: u64, what: &str, f: impl FnMut() -> Option<T>) -> T {
        self.wait_every(secs, Duration::from_millis(50), what, f)
    }

    /// [`Firing::wait`], looking every `every`.
    #[track_caller]
    pub fn wait_every<T>(
        &mut self,
        secs: u64,
        every: Duration,
        what: &str,
        mut f: impl FnMut() -> Option<T>,
    ) -> T {
        let mut ended = false;
        let found =
            missionboard::clock::poll_until_blocking(Duration::from_secs(secs), every, || {
                if let Some(v) = f() {
                    return Some(Some(v));
                }
                ended = self.exited();
                ended.then_some(None)
            })
            .flatten();
        if let Some(v) = found {
            return v;
        }
        let run = Firing {
            child: self.child.take(),
        }
        .kill_and_collect();
        let why = if ended { "the fire ended" } else { "timed out" };
        panic!("{why} waiting for {what}:\n{run:#?}");
    }

    /// SIGTERM the process and collect what it printed once it exits (killed if it
    /// has not within `secs`).
    #[track_caller]
    pub fn terminate_within(self, secs: u64) -> Run {
        // SAFETY: a signal to a process this test started.
        unsafe { libc::kill(self.pid() as i32, libc::SIGTERM) };
        self.join_within(secs)
    }

    /// SIGKILL the host, and wait for it to be gone.
    pub fn sigkill(self) -> Run {
        self.kill_and_collect()
    }
}

impl Drop for Firing {
    /// A fire or host the case did not see to its end (it panicked first) is ended
    /// with everything it started: no agent outlives its case.
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            crate::common::end_leftover(c);
        }
    }
}

/// The newest mission's `mission show --json`.
pub fn show(sb: &Sandbox) -> Value {
    let id = sb.newest_mission().expect("a mission was recorded");
    let out = sb.run(&["mission", "show", &id, "--json"]).ok();
    serde_json::from_str(&out.stdout).unwrap()
}

/// The newest mission's pending asks (`pendingAsks` of `mission show --json`).
pub fn pending_asks(sb: &Sandbox) -> Vec<Value> {
    if sb.newest_mission().is_none() {
        return vec![];
    }
    show(sb)["pendingAsks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Wait, while `fire` runs, for a pending ask matching `pred`; its id.
#[track_caller]
pub fn wait_ask(
    sb: &Sandbox,
    fire: &mut Firing,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> String {
    fire.wait(STEP_SECS, what, || {
        pending_asks(sb)
            .into_iter()
            .find(|a| pred(a))
            .and_then(|a| a["id"].as_str().map(str::to_string))
    })
}

// ---- Processes. ----

/// The state letter of `pid` (`R`, `S`, `Z`, …), `None` when it is gone.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is parenthesised and may hold spaces: the state follows the last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// `(ppid, starttime)` of `pid` from `/proc/<pid>/stat`.
fn parent_and_start(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // After the name: state(0) ppid(1) … starttime(19).
    Some((fields.get(1)?.parse().ok()?, fields.get(19)?.parse().ok()?))
}

/// A process, named by pid and start time so a reused pid is not mistaken for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Proc {
    pub pid: u32,
    start: u64,
}

impl Proc {
    /// Is this very process still alive (not a zombie)?
    pub fn alive(&self) -> bool {
        parent_and_start(self.pid).is_some_and(|(_, start)| start == self.start)
            && process_state(self.pid).is_some_and(|s| s != 'Z')
    }

    /// Its command line, for messages.
    pub fn cmdline(&self) -> String {
        std::fs::read(format!("/proc/{}/cmdline", self.pid))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default()
    }
}

/// Every live descendant of `root` (not `root` itself), by walking `/proc`.
pub fn descendants(root: u32) -> Vec<Proc> {
    let table: Vec<(u32, u32, u64)> = crate::common::all_pids()
        .into_iter()
        .filter_map(|pid| parent_and_start(pid).map(|(ppid, start)| (pid, ppid, start)))
        .collect();
    let mut found: Vec<Proc> = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for &(pid, ppid, start) in &table {
            if ppid == parent && !found.iter().any(|p| p.pid == pid) {
                found.push(Proc { pid, start });
                frontier.push(pid);
            }
        }
    }
    found.retain(Proc::alive);
    found
}

/// Every live process working in `dir` or below it (a unit's processes work in its
/// workspace): found by walking `/proc`, so a process that left its parent's tree
/// (reparented, double-forked) is found too.
pub fn working_in(dir: &Path) -> Vec<Proc> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let mut found = Vec::new();
    for pid in crate::common::all_pids() {
        let in_dir =
            std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(&dir));
        if in_dir && let Some((_, start)) = parent_and_start(pid) {
            found.push(Proc { pid, start });
        }
    }
    found.retain(Proc::alive);
    found
}

/// Wait until every process of `procs` is gone, naming the survivors if not.
#[track_caller]
pub fn wait_all_gone(procs: &[Proc], secs: u64) {
    let gone = missionboard::clock::poll_until_blocking(
        Duration::from_secs(secs),
        Duration::from_millis(50),
        || procs.iter().all(|p| !p.alive()).then_some(()),
    );
    if gone.is_none() {
        let left: Vec<String> = procs
            .iter()
            .filter(|p| p.alive())
            .map(|p| format!("{} {}", p.pid, p.cmdline()))
            .collect();
        panic!("processes outlived the stop: {left:#?}");
    }
}

// ---- Recorded frames. ----

/// The interpreter `python3` runs, by its real path: a version manager's shim reads
/// its own tree, which a confined unit cannot.
fn python_executable() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs the frame tap");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `MISSIONBOARD_CONFORMANCE_RECORD`: where each case's ACP frames are kept.
pub fn recording_dir() -> Option<PathBuf> {
    std::env::var_os("MISSIONBOARD_CONFORMANCE_RECORD").map(PathBuf::from)
}

impl Drop for World {
    fn drop(&mut self) {
        let (Some(dir), Ok(frames)) = (recording_dir(), std::fs::read(self.frames_log())) else {
            return;
        };
        std::fs::create_dir_all(&dir).unwrap();
        let case = std::thread::current()
            .name()
            .unwrap_or("case")
            .replace("::", "-");
        let _ = std::fs::write(dir.join(format!("{case}.jsonl")), frames);
    }
}
