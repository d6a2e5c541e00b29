//! A unit and its host: nothing outlives the host, no secret shows on any command
//! line or environment, and a home of any length hosts missions.
//!
//! Nothing outlives its host: a unit whose tree double-forks a daemon, keeps a
//! grandchild that ignores SIGTERM and starts the agent as the child of a launcher (as
//! npm's agent launchers do; here a python one) leaves no process behind when its `mission fire` host is
//! SIGKILLed at start, mid-handshake, mid-turn or while parked, nor when the host is
//! sent SIGTERM mid-handshake. Every process of the unit's tree carries a marker
//! variable unique to the test; `/proc` is walked for it.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// The variable every process of a test's unit tree inherits.
const MARK: &str = "SUPERVISION_MARK";

/// How long a torn-down tree may take to be gone: the supervisor's grace for
/// SIGTERM, then SIGKILL, with room for a loaded machine.
const GONE_WITHIN: u64 = 20;

/// Live (non-zombie) processes whose environment holds `MARK=<mark>`, as
/// `(pid, command line)`.
fn marked(mark: &str) -> Vec<(u32, String)> {
    let needle = format!("{MARK}={mark}");
    let mut found = Vec::new();
    for pid in all_pids() {
        let dir = std::path::PathBuf::from(format!("/proc/{pid}"));
        let Ok(environ) = std::fs::read(dir.join("environ")) else {
            continue;
        };
        if !environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
        {
            continue;
        }
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if zombie {
            continue;
        }
        let cmdline = std::fs::read(dir.join("cmdline"))
            .unwrap_or_default()
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        found.push((pid, cmdline));
    }
    found
}

/// Kills whatever a failed test left behind, so one failure does not leak.
struct Sweep(String);

impl Drop for Sweep {
    fn drop(&mut self) {
        for (pid, _) in marked(&self.0) {
            // SAFETY: kill(2) on a pid we found; a gone one is ESRCH.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

/// A sandbox whose agent `tree` is the launcher script: a daemon that double-forks
/// and calls setsid, a grandchild that ignores SIGTERM, then python running the stub
/// as its child (the way npm's launchers run an agent's platform binary). `steps` is the stub's one turn; `init_delay_ms` holds its `initialize`.
fn tree_sandbox(steps: &str, init_delay_ms: u64) -> (Sandbox, String, Sweep) {
    assert!(
        which("python3"),
        "these tests start the agent through a python launcher: install python3 (on PATH)"
    );
    let sb = Sandbox::new();
    let mark = uuid::Uuid::new_v4().simple().to_string();
    let script_path = sb.cwd.join("script.json");
    sb.write(&script_path, &script(steps));
    let launcher = sb.cwd.join("launcher.sh");
    sb.write(
        &launcher,
        &format!(
            r#"#!/bin/sh
( setsid sh -c 'exec sleep 600' </dev/null >/dev/null 2>&1 & )
sh -c 'trap "" TERM; while :; do sleep 1; done' </dev/null >/dev/null 2>&1 &
exec python3 -c 'import subprocess, sys; sys.exit(subprocess.call(sys.argv[1:]))' {bin:?} stub-agent --script {script:?}
"#,
            bin = BIN,
            script = script_path.display().to_string(),
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).unwrap();
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.tree]\ncommand = {:?}\nargs = []\ndescription = \"a unit that is a process tree\"\nenv = {{ {MARK} = {mark:?}, STUB_INITIALIZE_DELAY_MS = \"{init_delay_ms}\" }}\n",
            launcher.display().to_string()
        ),
    );
    let sweep = Sweep(mark.clone());
    (sb, mark, sweep)
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

fn fire(sb: &Sandbox) -> Background {
    Background::spawn(sb.command(&[
        "mission", "fire", "tree", "work", "--wait", "--policy", "default",
    ]))
}

/// The tree's marked processes, once `want` of its members are up.
#[track_caller]
fn wait_for_tree(mark: &str, want: &[&str]) -> Vec<(u32, String)> {
    wait_for(30, &format!("the unit's processes {want:?}"), || {
        let now = marked(mark);
        want.iter()
            .all(|w| now.iter().any(|(_, cmd)| cmd.contains(w)))
            .then_some(now)
    })
}

#[track_caller]
fn assert_all_gone(mark: &str, phase: &str) {
    let left = poll_until_blocking_secs(GONE_WITHIN, || {
        let now = marked(mark);
        now.is_empty().then_some(())
    });
    assert!(
        left.is_some(),
        "{phase}: the unit's processes outlived their host: {:?}",
        marked(mark)
    );
}

fn poll_until_blocking_secs(secs: u64, f: impl FnMut() -> Option<()>) -> Option<()> {
    missionboard::clock::poll_until_blocking(
        Duration::from_secs(secs),
        Duration::from_millis(50),
        f,
    )
}

fn kill(host: &mut Background, signal: libc::c_int) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(host.pid() as libc::pid_t, signal);
    }
}

const DAEMON: &str = "sleep 600";
const STUBBORN: &str = "trap";
const LAUNCHER: &str = "import subprocess";
const AGENT: &str = "stub-agent";

#[test]
fn a_host_killed_at_start_leaves_no_process_of_its_unit() {
    let (sb, mark, _sweep) = tree_sandbox(r#"{"finish":"landed"}"#, 60_000);
    let mut host = fire(&sb);
    // The first of the tree is up: the host is still starting the unit.
    wait_for_tree(&mark, &[DAEMON]);
    kill(&mut host, libc::SIGKILL);
    host.child().wait().unwrap();
    assert_all_gone(&mark, "killed at start");
}

#[test]
fn a_host_killed_mid_handshake_leaves_no_process_of_its_unit() {
    let (sb, mark, _sweep) = tree_sandbox(r#"{"finish":"landed"}"#, 60_000);
    let mut host = fire(&sb);
    // The agent is up behind its launcher and holding `initialize`.
    let tree = wait_for_tree(&mark, &[DAEMON, STUBBORN, LAUNCHER, AGENT]);
    assert!(
        sb.newest_mission().is_none(),
        "still in the handshake: {tree:?}"
    );
    kill(&mut host, libc::SIGKILL);
    host.child().wait().unwrap();
    assert_all_gone(&mark, "killed mid-handshake");
}

#[test]
fn a_host_killed_mid_turn_leaves_no_process_of_its_unit() {
    // The turn starts a daemon of its own, then works on.
    let (sb, mark, _sweep) = tree_sandbox(
        r#"{"run":{"argv":["sh","-c","( setsid sh -c 'exec sleep 601' </dev/null >/dev/null 2>&1 & )"]}},"hang""#,
        0,
    );
    let mut host = fire(&sb);
    wait_for_tree(&mark, &[DAEMON, STUBBORN, LAUNCHER, AGENT, "sleep 601"]);
    let id = sb.newest_mission().expect("the mission is recorded");
    kill(&mut host, libc::SIGKILL);
    host.child().wait().unwrap();
    assert_all_gone(&mark, "killed mid-turn");
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "open", "the record survives its host");
}

#[test]
fn a_host_killed_while_its_run_is_parked_leaves_no_process_of_its_unit() {
    let (sb, mark, _sweep) = tree_sandbox(
        r#"{"ask":{"summary":"Proceed?","then":{"report":{"kind":"result","summary":"went: {{answer}}"}}}},{"finish":"landed"}"#,
        0,
    );
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let mut host = fire(&sb);
    let id = wait_for(30, "the mission", || sb.newest_mission());
    wait_for(30, "the parked question", || {
        let show = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: Value = serde_json::from_str(&show.stdout).unwrap();
        (v["pendingAsks"][0]["parked"] == true).then_some(())
    });
    wait_for_tree(&mark, &[DAEMON, STUBBORN, LAUNCHER, AGENT]);
    kill(&mut host, libc::SIGKILL);
    host.child().wait().unwrap();
    assert_all_gone(&mark, "killed while parked");
}

#[test]
fn a_sigterm_mid_handshake_tears_the_tree_down_and_says_so() {
    let (sb, mark, _sweep) = tree_sandbox(r#"{"finish":"landed"}"#, 60_000);
    let mut host = fire(&sb);
    wait_for_tree(&mark, &[DAEMON, STUBBORN, LAUNCHER, AGENT]);
    kill(&mut host, libc::SIGTERM);
    let out = host.output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "mission fire interrupted while the unit was starting: it is torn down with this process."
        ),
        "{stdout}"
    );
    assert_all_gone(&mark, "SIGTERM mid-handshake");
    assert!(
        sb.newest_mission().is_none(),
        "a refused start records nothing"
    );
}

#[test]
fn a_stopped_mission_leaves_no_process_of_its_unit() {
    let (sb, mark, _sweep) = tree_sandbox(r#"{"say":"working"},"hang""#, 0);
    let host = fire(&sb);
    let id = wait_for(30, "the mission", || sb.newest_mission());
    wait_for_tree(&mark, &[DAEMON, STUBBORN, LAUNCHER, AGENT]);
    sb.run(&["mission", "stop", &id, "--reason", "enough"]).ok();
    assert_all_gone(&mark, "stopped");
    let out = host.output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "abandoned", "{v:#}");
}

#[test]
fn an_agent_that_dies_takes_its_daemons_with_it() {
    let (sb, mark, _sweep) = tree_sandbox(r#"{"crash":3}"#, 0);
    let host = fire(&sb);
    let id = wait_for(30, "the mission", || sb.newest_mission());
    let out = host.output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_all_gone(&mark, "the agent crashed");
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "derailed", "{v:#}");
}

// ---- No secret in any argv or environment. ----

/// Whether `bytes` hold a run of 64 hexadecimal digits: the shape of a mission token.
fn has_token_shape(bytes: &[u8]) -> bool {
    bytes
        .split(|b| !b.is_ascii_hexdigit())
        .any(|run| run.len() >= 64)
}

/// `(pid, cmdline, environ)` of every process this user can read.
fn every_process() -> Vec<(u32, Vec<u8>, Vec<u8>)> {
    all_pids()
        .into_iter()
        .map(|pid| {
            let read =
                |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).unwrap_or_default();
            (pid, read("cmdline"), read("environ"))
        })
        .collect()
}

#[test]
fn no_process_shows_a_mission_token_in_its_command_line_or_environment() {
    let sb = Sandbox::new();
    let mark = uuid::Uuid::new_v4().simple().to_string();
    let _sweep = Sweep(mark.clone());
    let script_path = sb.cwd.join("script.json");
    sb.write(
        &script_path,
        &script(
            r#""mission_entry",{"ask":{"summary":"Scanned?","then":{"report":{"kind":"result","summary":"scanned: {{answer}}"}}}},{"finish":"landed"}"#,
        ),
    );
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.probe]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\ndescription = \"test stub\"\nenv = {{ {MARK} = {mark:?} }}\n",
            script_path.display().to_string()
        ),
    );
    sb.run(&["config", "set", "ask-park-window", "60s"]).ok();
    let host = sb.fire_in_background("probe", "scan", &[]);
    let id = wait_for(30, "the mission", || sb.newest_mission());
    let ask = wait_for(30, "the question", || sb.pending_ask_ids().first().cloned());

    // The entry as the agent was handed it: the socket and a file, no environment.
    let socket = missionboard::paths::Paths::resolve(sb.home.clone(), sb.cwd.clone())
        .socket_dir()
        .join(format!("m-{id}.sock"));
    let token_file =
        missionboard::fleet::confinement::MissionTmp::path_for(&id).join(format!("m-{id}.token"));
    let reports = sb.report_texts(&id);
    assert_eq!(
        reports[0],
        (
            format!(
                "mission entry: {BIN} mcp-bridge {} --token-file {}",
                socket.display(),
                token_file.display()
            ),
            "env: []".to_string()
        ),
        "{reports:?}"
    );
    // The bridge took its token; the next one, for a bridge started again, waits
    // in a file only this user may read.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);

    // Every process of the unit's tree (its bridge among them) and its host.
    let all = every_process();
    let tree: Vec<u32> = marked(&mark).into_iter().map(|(pid, _)| pid).collect();
    let bridge = all
        .iter()
        .find(|(pid, cmdline, _)| {
            tree.contains(pid) && String::from_utf8_lossy(cmdline).contains("mcp-bridge")
        })
        .map(|(pid, _, _)| *pid);
    assert!(bridge.is_some(), "the unit's bridge is running: {tree:?}");
    // Other programs of the machine (other hosts' units) are not this run's to judge.
    let ours = all
        .iter()
        .filter(|(pid, _, _)| tree.contains(pid) || *pid == host.pid());
    for (pid, cmdline, environ) in ours {
        for (what, bytes) in [("cmdline", cmdline), ("environ", environ)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !text.contains("MISSIONBOARD_MISSION_TOKEN") && !has_token_shape(bytes),
                "process {pid}'s {what} holds a mission token: {text}"
            );
        }
    }

    sb.run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    let fired = host.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("  [result] scanned: yes\n"),
        "{fired:#?}"
    );
}

// ---- Socket paths of any home. ----

/// A sandbox whose `MISSIONBOARD_HOME` is exactly 200 bytes long.
fn long_home_sandbox() -> Sandbox {
    let mut sb = Sandbox::new();
    let parent = sb.home.parent().unwrap().to_path_buf();
    let used = parent.as_os_str().len() + 1;
    assert!(
        used < 200,
        "the scratch dir leaves room: {}",
        parent.display()
    );
    sb.home = parent.join("h".repeat(200 - used));
    assert_eq!(sb.home.as_os_str().len(), 200);
    sb
}

#[test]
fn a_200_byte_home_fires_and_lands() {
    let sb = long_home_sandbox();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}"#,
        )),
    )]);
    let fired = sb.fire("stub", "land", &[]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    assert!(
        fired
            .stdout
            .contains(&format!("\nMission {id} finished: landed\nReports:\n")),
        "{fired:#?}"
    );
}

#[test]
fn a_200_byte_home_resumes_a_parked_run_after_its_host_is_killed() {
    let sb = long_home_sandbox();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"ask":{"summary":"Proceed?","then":{"report":{"kind":"result","summary":"went: {{answer}}"}}}},{"finish":"landed"}"#,
        )),
    )]);
    sb.run(&["config", "set", "ask-park-window", "200ms"]).ok();
    let mut host = Background::own(
        sb.command(&[
            "mission", "fire", "stub", "go", "--wait", "--policy", "default",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let id = wait_for(30, "the mission", || sb.newest_mission());
    let ask = wait_for(30, "the parked question", || {
        let show = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: Value = serde_json::from_str(&show.stdout).unwrap();
        let a = &v["pendingAsks"][0];
        (a["parked"] == true).then(|| a["id"].as_str().unwrap().to_string())
    });
    kill(&mut host, libc::SIGKILL);
    host.child().wait().unwrap();
    let answered = sb
        .run(&["approvals", "respond", &ask, "--answer", "yes"])
        .ok();
    assert!(
        answered
            .stdout
            .contains("and the suspended run was resumed in this process"),
        "{answered:#?}"
    );
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let v: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "landed", "{v:#}");
    assert_eq!(sb.report_texts(&id).last().unwrap().0, "went: yes", "{v:#}");
}

#[test]
fn a_socket_directory_open_to_others_is_refused_with_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(r#"{"finish":"landed"}"#)))]);
    // A runtime dir of our own, so the machine's is never touched.
    let runtime = sb.home.parent().unwrap().join("rt");
    std::fs::create_dir_all(runtime.join("missionboard")).unwrap();
    std::fs::set_permissions(
        runtime.join("missionboard"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let mut cmd = sb.command(&[
        "mission", "fire", "stub", "land", "--wait", "--policy", "default",
    ]);
    cmd.env("XDG_RUNTIME_DIR", &runtime);
    let fired = sb.run_with(cmd);
    assert_eq!(fired.code, 1, "{fired:#?}");
    assert!(
        fired.stderr.contains(&format!(
            "refusing the socket directory {}: its mode is 0755, open to other users — mission sockets need a directory only you can enter (mode 0700, owned by you); remove it, or set XDG_RUNTIME_DIR to a private directory",
            runtime.join("missionboard").display()
        )),
        "{fired:#?}"
    );
    assert_eq!(sb.newest_mission(), None);
    // Made private, the same fire lands.
    std::fs::set_permissions(
        runtime.join("missionboard"),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    let mut cmd = sb.command(&[
        "mission", "fire", "stub", "land", "--wait", "--policy", "default",
    ]);
    cmd.env("XDG_RUNTIME_DIR", &runtime);
    let fired = sb.run_with(cmd);
    assert_eq!(fired.code, 0, "{fired:#?}");
}
