//! The agent catalogue and grants that fit real installs: `agent add`, `agent list`,
//! `doctor --agent`, an `authRequired` start, and agents installed the ways people
//! install them (an npm `--prefix` tree whose launcher spawns a sibling package, a
//! Python venv, a symlinked bin) firing under default, strict and acpx with nothing
//! hand-granted.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::harness::{BIN, Run, Sandbox};

fn executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn symlink(target: &str, link: &Path) {
    std::fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, link).unwrap();
}

/// PATH with `dir` first.
fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn run_with_path(sb: &Sandbox, args: &[&str], path: &str, extra: &[(&str, &str)]) -> Run {
    let mut cmd = sb.command(args);
    cmd.env("PATH", path);
    for (k, v) in extra {
        cmd.env(k, v);
    }
    sb.run_with(cmd)
}

/// A landing stub script in the workspace (readable under every preset).
fn landing_script(sb: &Sandbox) -> PathBuf {
    let script = sb.cwd.join("land.json");
    sb.write(
        &script,
        &json!({"name": "land", "turns": [{"steps": [{"finish": "landed"}]}]}).to_string(),
    );
    script
}

/// Where the sandbox's agents live: beside the home, outside the workspace, so
/// nothing of them is readable under limited reads unless granted.
fn installs(sb: &Sandbox) -> PathBuf {
    let dir = sb.home.parent().unwrap().join("installs");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// An npm `--prefix` install of a launcher package, laid out as npm lays it out:
/// `<prefix>/node_modules/.bin/fake-acp` → the package's `bin/launch.js` (node),
/// which reads a hoisted dependency, its state file and its temp variable, then
/// spawns the platform binary of a sibling package, which execs the stub agent.
/// Returns the prefix.
fn npm_prefix_install(sb: &Sandbox) -> PathBuf {
    let prefix = installs(sb).join("npm-prefix");
    package_tree(sb, &prefix.join("node_modules"));
    prefix
}

/// The launcher package, its hoisted dependency and its sibling platform package in
/// the `node_modules` tree `nm`, with the `.bin` link npm makes.
fn package_tree(sb: &Sandbox, nm: &Path) {
    sb.write(
        &nm.join("fake-acp/package.json"),
        r#"{"name": "fake-acp", "version": "1.2.3", "bin": {"fake-acp": "bin/launch.js"}}"#,
    );
    sb.write(
        &nm.join("fake-dep/package.json"),
        r#"{"name": "fake-dep", "version": "0.0.1", "main": "index.js"}"#,
    );
    sb.write(
        &nm.join("fake-dep/index.js"),
        "module.exports = 'dep-loaded';\n",
    );
    executable(
        &nm.join("fake-acp/bin/launch.js"),
        r#"#!/usr/bin/env node
const fs = require('fs');
const path = require('path');
const dep = require('fake-dep');
const home = process.env.HOME;
const state = fs.readFileSync(path.join(home, '.fake-acp.json'), 'utf8').trim();
fs.writeFileSync(path.join(process.env.FAKE_TMPDIR, 'probe'), 'x');
const facts = [
  dep,
  'state=' + state,
  'tmp=' + (process.env.FAKE_TMPDIR === process.env.TMPDIR),
  'key=' + (process.env.FAKE_API_KEY || '-'),
  'other=' + (process.env.OTHER_API_KEY || '-'),
  'node=' + (process.env.FAKE_NODE || 'system'),
];
fs.appendFileSync(path.join(home, '.fake-acp', 'launches'), facts.join(' ') + '\n');
const sibling = path.join(__dirname, '..', '..', 'fake-acp-linux-x64', 'bin', 'fake-acp');
const child = require('child_process').spawn(sibling, process.argv.slice(2), { stdio: 'inherit' });
child.on('exit', (code) => process.exit(code === null ? 1 : code));
"#,
    );
    executable(
        &nm.join("fake-acp-linux-x64/bin/fake-acp"),
        &format!("#!/bin/sh\nexec {BIN} stub-agent \"$@\"\n"),
    );
    symlink("../fake-acp/bin/launch.js", &nm.join(".bin/fake-acp"));
}

/// The agent entry both layouts run under: `{tmp}` in a variable, a passed-through
/// key, a state dir and a state file.
fn fake_entry(command: &str, script: &Path) -> String {
    format!(
        r#"[agents.fake]
command = {command:?}
args = ["--script", {script:?}]
env = {{ FAKE_TMPDIR = "{{tmp}}" }}
passthrough = ["FAKE_API_KEY"]
state_dirs = ["~/.fake-acp"]
state_files = {{ "~/.fake-acp.json" = "{{\"first\": true}}\n" }}
"#,
        script = script.display().to_string()
    )
}

/// Fire `fake` under default, strict and acpx with `path`; each lands.
fn lands_under_every_preset(sb: &Sandbox, path: &str) {
    for policy in ["default", "strict", "acpx"] {
        let fired = run_with_path(
            sb,
            &[
                "mission",
                "fire",
                "fake",
                "land",
                "--wait",
                "--policy",
                policy,
                "--timeout",
                "60s",
            ],
            path,
            &[("FAKE_API_KEY", "k-123"), ("OTHER_API_KEY", "o-456")],
        );
        assert_eq!(fired.code, 0, "{policy}: {fired:#?}");
        let id = sb.newest_mission().unwrap();
        assert!(
            fired
                .stdout
                .lines()
                .any(|l| l == format!("Mission {id} finished: landed")),
            "{policy}: {fired:#?}"
        );
    }
}

#[test]
fn a_pnpm_global_agent_run_by_an_nvm_node_lands_under_every_preset_with_no_hand_grants() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    // pnpm's global layout: a shell shim in PNPM_HOME running `node` on the package.
    let pnpm_home = installs(&sb).join("pnpm");
    package_tree(&sb, &pnpm_home.join("global/5/node_modules"));
    executable(
        &pnpm_home.join("fake-acp"),
        "#!/bin/sh\nbasedir=$(dirname \"$0\")\nexec node \"$basedir/global/5/node_modules/fake-acp/bin/launch.js\" \"$@\"\n",
    );
    // An nvm-style node outside the system dirs (a stand-in that runs the real one).
    let nvm_bin = installs(&sb).join("nvm/versions/node/v22.0.0/bin");
    let node = std::process::Command::new("sh")
        .args(["-c", "command -v node"])
        .output()
        .expect("sh");
    let node = String::from_utf8(node.stdout).unwrap();
    assert!(!node.trim().is_empty(), "this test needs node on PATH");
    executable(
        &nvm_bin.join("node"),
        // A shell whose exec of it is refused tries the next node on PATH, so the
        // stand-in marks its runs.
        &format!("#!/bin/sh\nFAKE_NODE=nvm exec {} \"$@\"\n", node.trim()),
    );
    let script = landing_script(&sb);
    declare(&sb, &fake_entry("fake-acp", &script));
    let path = format!("{}:{}", nvm_bin.display(), path_with(&pnpm_home));
    lands_under_every_preset(&sb, &path);
    let home = sb.home.parent().unwrap();
    assert_eq!(
        std::fs::read_to_string(home.join(".fake-acp/launches")).unwrap(),
        "dep-loaded state={\"first\": true} tmp=true key=k-123 other=- node=nvm\n".repeat(3)
    );
}

fn declare(sb: &Sandbox, toml: &str) {
    sb.write(&sb.home.join("agents.toml"), toml);
}

#[test]
fn an_npm_prefix_agent_behind_a_symlinked_bin_lands_under_every_preset_with_no_hand_grants() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let prefix = npm_prefix_install(&sb);
    // A user's own bin dir holding a symlink to the npm shim.
    let user_bin = installs(&sb).join("bin");
    symlink(
        &prefix
            .join("node_modules/.bin/fake-acp")
            .display()
            .to_string(),
        &user_bin.join("fake-acp"),
    );
    let script = landing_script(&sb);
    declare(&sb, &fake_entry("fake-acp", &script));
    let home = sb.home.parent().unwrap();
    assert!(!home.join(".fake-acp").exists() && !home.join(".fake-acp.json").exists());
    lands_under_every_preset(&sb, &path_with(&user_bin));
    // The first run created the state paths, private, before the ruleset: the
    // launcher read the file and wrote in the directory under every preset.
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&home.join(".fake-acp")), 0o700);
    assert_eq!(mode(&home.join(".fake-acp.json")), 0o600);
    assert_eq!(
        std::fs::read_to_string(home.join(".fake-acp/launches")).unwrap(),
        "dep-loaded state={\"first\": true} tmp=true key=k-123 other=- node=system\n".repeat(3)
    );
}

#[test]
fn a_python_venv_agent_lands_under_every_preset_with_no_hand_grants() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let venv = installs(&sb).join("venv");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .output()
        .expect("this test needs python3 (with its venv module) on PATH");
    assert!(made.status.success(), "python3 -m venv: {made:?}");
    // The agent's own module lives in the venv's site-packages: importing it needs
    // the venv's pyvenv.cfg read, not only the base interpreter it links to.
    let site = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages");
    sb.write(
        &site.join("fakeagent.py"),
        &format!(
            "import os, sys\ndef main():\n    os.execv({BIN:?}, [{BIN:?}, 'stub-agent'] + sys.argv[1:])\n"
        ),
    );
    // Declared the way the SDK agent is run: the venv's python, the script beside it.
    let agent_script = installs(&sb).join("agent/fake_agent.py");
    sb.write(&agent_script, "import fakeagent\nfakeagent.main()\n");
    let script = landing_script(&sb);
    declare(
        &sb,
        &format!(
            "[agents.pyfake]\ncommand = {:?}\nargs = [{:?}, \"--script\", {:?}]\n",
            venv.join("bin/python").display().to_string(),
            agent_script.display().to_string(),
            script.display().to_string()
        ),
    );
    for policy in ["default", "strict", "acpx"] {
        let fired = sb.run(&[
            "mission",
            "fire",
            "pyfake",
            "land",
            "--wait",
            "--policy",
            policy,
            "--timeout",
            "60s",
        ]);
        assert_eq!(fired.code, 0, "{policy}: {fired:#?}");
    }
    // The grant is the venv as named, beside the base interpreter's installation.
    let id = sb.newest_mission().unwrap();
    let show = sb.run(&["mission", "show", &id]).ok();
    let venv_line = format!(
        "Grant:     read {}: the Python venv of {}",
        venv.canonicalize().unwrap().display(),
        venv.join("bin/python").display()
    );
    assert!(
        show.lines().contains(&venv_line.as_str()),
        "{venv_line}\n{}",
        show.stdout
    );
}

#[test]
fn agent_add_copies_the_catalogue_entry_and_agent_list_says_what_is_installed() {
    let sb = Sandbox::new();
    let file = sb.home.join("agents.toml");
    // claude installed as `npm --prefix` installs it; nothing else of the catalogue.
    let prefix = installs(&sb).join("claude-prefix");
    let pkg = prefix.join("node_modules/@zed-industries/claude-agent-acp");
    sb.write(
        &pkg.join("package.json"),
        r#"{"name": "@zed-industries/claude-agent-acp", "version": "0.23.1"}"#,
    );
    executable(&pkg.join("dist/index.js"), "#!/usr/bin/env node\n");
    symlink(
        "../@zed-industries/claude-agent-acp/dist/index.js",
        &prefix.join("node_modules/.bin/claude-agent-acp"),
    );
    let bin = prefix.join("node_modules/.bin");
    // Only our stand-ins and the system dirs: no real agent of this machine leaks in.
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let shim = bin.join("claude-agent-acp");

    let added = run_with_path(&sb, &["agent", "add", "claude"], &path, &[]);
    assert_eq!(added.code, 0, "{added:#?}");
    assert_eq!(
        added.stdout,
        format!(
            "Added claude to {}: claude-agent-acp (installed: 0.23.1 ({})).\n",
            file.display(),
            shim.display()
        )
    );
    let added = run_with_path(&sb, &["agent", "add", "goose"], &path, &[]);
    assert_eq!(
        added.stdout,
        format!(
            "Added goose to {}: goose acp (not installed: see https://block.github.io/goose/docs/getting-started/installation (not on npm)).\n",
            file.display()
        )
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("[agents.claude]\ncommand = \"claude-agent-acp\"\n"),
        "{text}"
    );
    assert!(
        text.contains("\n[agents.goose]\ncommand = \"goose\"\nargs = [\"acp\"]\n"),
        "{text}"
    );

    // Declared as the catalogue has it: said so, nothing written, success.
    let again = run_with_path(&sb, &["agent", "add", "claude"], &path, &[]);
    assert_eq!(again.code, 0, "{again:#?}");
    assert_eq!(
        again.stdout,
        format!(
            "claude is already declared in {} as the catalogue has it: claude-agent-acp (installed: 0.23.1 ({})).\n",
            file.display(),
            shim.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    // Declared differently: the difference is shown, and only --force replaces it.
    let edited = text.replace(
        "description = \"Claude Code over ACP (claude-agent-acp)\"",
        "description = \"my claude\"",
    );
    std::fs::write(&file, &edited).unwrap();
    let changed = run_with_path(&sb, &["agent", "add", "claude"], &path, &[]);
    assert_eq!(changed.code, 1, "{changed:#?}");
    let diff: Vec<&str> = changed
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .collect();
    assert_eq!(
        diff,
        [
            format!("--- {}", file.display()).as_str(),
            "+++ the catalogue",
            "-description = \"my claude\"",
            "+description = \"Claude Code over ACP (claude-agent-acp)\"",
        ]
    );
    assert_eq!(
        changed.stderr,
        format!(
            "Error: agent add: {} declares \"claude\" differently from the catalogue (above: - yours, + the catalogue's) — keep yours, or run 'missionboard agent add claude --force' to replace it with the catalogue's entry\n",
            file.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    let forced = run_with_path(&sb, &["agent", "add", "claude", "--force"], &path, &[]);
    assert_eq!(forced.code, 0, "{forced:#?}");
    assert!(
        forced.stdout.ends_with(&format!(
            "Replaced claude in {}: claude-agent-acp (installed: 0.23.1 ({})).\n",
            file.display(),
            shim.display()
        )),
        "{forced:#?}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
    let unknown = run_with_path(&sb, &["agent", "add", "nope"], &path, &[]);
    assert_eq!(unknown.code, 1);
    assert_eq!(
        unknown.stderr,
        "Error: agent add: \"nope\" is neither in the catalogue (agent-planner, claude, cline, codex, demo, gemini, goose, kilo, opencode, qwen, stub) nor in the ACP registry's index (the shipped snapshot presets/acp-registry.json (commit 3de1678346d1b37b6c3f07de503043ebcbb9cbdb, 2026-02-07); 'missionboard agent list --available' lists its agents) — declare any other ACP agent under [agents.<name>] in agents.toml\n"
    );

    let list = run_with_path(&sb, &["agent", "list"], &path, &[]);
    assert_eq!(list.code, 0, "{list:#?}");
    let lines = list.lines();
    assert_eq!(lines.len(), 4, "{}", list.stdout);
    let cells = |l: &str| {
        l.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        cells(lines[0]),
        ["NAME", "COMMAND", "INSTALLED", "DESCRIPTION"]
    );
    assert_eq!(
        cells(lines[1]),
        [
            "claude".to_string(),
            "claude-agent-acp".into(),
            format!("0.23.1 ({})", shim.display()),
            "Claude Code over ACP (claude-agent-acp)".into()
        ]
    );
    assert_eq!(
        cells(lines[2]),
        ["goose", "goose acp", "no", "goose in ACP mode"]
    );
    assert_eq!(
        lines[3],
        "In the catalogue, not declared here: agent-planner (installed), cline (not installed), codex (not installed), demo (installed), gemini (not installed), kilo (not installed), opencode (not installed), qwen (not installed), stub (installed) — 'missionboard agent add <name>' declares one."
    );
    let json: serde_json::Value = serde_json::from_str(
        &run_with_path(&sb, &["agent", "list", "--json"], &path, &[])
            .ok()
            .stdout,
    )
    .unwrap();
    assert_eq!(json[0]["name"], "claude");
    assert_eq!(json[0]["installed"], true);
    assert_eq!(json[0]["version"], "0.23.1");
    assert_eq!(json[0]["catalogue"], true);
    assert_eq!(
        json[0]["install"],
        "npm install -g @zed-industries/claude-agent-acp@0.23.1"
    );
    assert_eq!(json[1]["installed"], false);
}

#[test]
fn doctor_names_the_install_line_of_a_missing_catalogue_agent_and_the_grants_of_one() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let path = "/usr/bin:/bin";
    let doctor = run_with_path(&sb, &["doctor", "--agent", "codex"], path, &[]);
    assert_eq!(doctor.code, 1, "{doctor:#?}");
    let lines = doctor.lines();
    assert_eq!(
        lines[..4],
        [
            "Ready: no — npm install -g @zed-industries/codex-acp@0.16.0",
            "Agent:     codex — codex-acp -c approval_policy=\"untrusted\" -c sandbox_mode=\"danger-full-access\"",
            &format!("Declared:  {}", sb.home.join("agents.toml").display()),
            "Installed: no — npm install -g @zed-industries/codex-acp@0.16.0",
        ]
    );
    // In the whole doctor, a catalogue agent that is not installed is a fact, not a fix.
    let all = run_with_path(&sb, &["doctor"], path, &[]);
    assert!(
        all.lines().contains(
            &"Agent:     codex: not installed — npm install -g @zed-industries/codex-acp@0.16.0"
        ),
        "{all:#?}"
    );
    assert!(!all.lines()[0].contains("codex"), "{all:#?}");
}

#[test]
fn doctor_agent_handshakes_and_prints_every_grant_under_the_default_envelope() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let agent = installs(&sb).join("bin/probe-agent");
    executable(
        &agent,
        &format!("#!/bin/sh\nexec {BIN} stub-agent \"$@\"\n"),
    );
    declare(
        &sb,
        &format!(
            "[agents.probe]\ncommand = {:?}\nstate_dirs = [\"~/.probe\"]\nendpoints = [\"${{PROBE_BASE_URL:-https://api.example.test}}\"]\nports = [4096]\n",
            agent.display().to_string()
        ),
    );
    let doctor = run_with_path(
        &sb,
        &["doctor", "--agent", "probe"],
        "/usr/bin:/bin",
        &[("PROBE_BASE_URL", "http://127.0.0.1:8931/v1")],
    );
    assert_eq!(doctor.code, 0, "{doctor:#?}");
    let home = sb.home.parent().unwrap();
    let tmp = missionboard::fleet::confinement::MissionTmp::path_for("<mission id>");
    assert_eq!(
        doctor.lines(),
        [
            "Ready: yes — probe can be fired at".to_string(),
            format!("Agent:     probe — {}", agent.display()),
            format!("Declared:  {}", sb.home.join("agents.toml").display()),
            format!("Installed: {}", agent.display()),
            "Handshake: ready — missionboard-stub 0.1.0 answered initialize and session/new".into(),
            "Endpoint:  http://127.0.0.1:8931/v1 (port 8931) — from PROBE_BASE_URL".into(),
            format!("Grant:     write {{workspace}} = {}: the envelope", sb.cwd.canonicalize().unwrap().display()),
            format!("Grant:     write {{tmp}} = {}: the mission's temp dir", tmp.display()),
            // Nothing made ~/.cache in this scratch home: the envelope names it, the
            // kernel can grant nothing there.
            format!("Grant:     write ~/.cache = {}: not granted: does not exist (the envelope)", home.join(".cache").display()),
            format!("Grant:     write ~/.probe = {}: probe's state dir", home.join(".probe").display()),
            "Grant:     write /dev/null, /dev/zero, /dev/full, /dev/tty, /dev/ptmx, /dev/pts, /dev/shm: the terminal devices".into(),
            "Grant:     read everything: the envelope does not limit reads".into(),
            "Grant:     connect anywhere: the envelope does not limit connects".into(),
        ]
    );
}

#[test]
fn strict_grants_the_agent_s_endpoint_ports_and_its_own_server() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    sb.run(&["config", "set", "default-mission-policy", "strict"])
        .ok();
    let agent = installs(&sb).join("bin/probe-agent");
    executable(
        &agent,
        &format!("#!/bin/sh\nexec {BIN} stub-agent \"$@\"\n"),
    );
    declare(
        &sb,
        &format!(
            "[agents.probe]\ncommand = {:?}\nendpoints = [\"${{PROBE_BASE_URL:-https://api.example.test}}\"]\nports = [4096]\n",
            agent.display().to_string()
        ),
    );
    let doctor = run_with_path(&sb, &["doctor", "--agent", "probe"], "/usr/bin:/bin", &[]);
    assert_eq!(doctor.code, 0, "{doctor:#?}");
    let grants: Vec<&str> = doctor
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("Grant:     connect"))
        .collect();
    assert_eq!(
        grants,
        [
            "Grant:     connect port 443: {model}, probe's endpoint https://api.example.test (from the declared default; PROBE_BASE_URL is not set)",
            "Grant:     connect port 4096: probe's own server on loopback",
        ]
    );
    let reads: Vec<&str> = doctor
        .lines()
        .into_iter()
        .filter(|l| l.starts_with("Grant:     read "))
        .collect();
    let installed = agent
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .canonicalize()
        .unwrap();
    assert!(
        reads.contains(
            &format!(
                "Grant:     read {}: the installation {} runs from",
                installed.display(),
                agent.display()
            )
            .as_str()
        ),
        "{reads:#?}"
    );
}

#[test]
fn an_agent_that_needs_a_login_names_its_login_step_on_fire_and_in_doctor() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    // Answers initialize, then refuses session/new with ACP's authRequired.
    let agent = installs(&sb).join("bin/needs-login");
    executable(
        &agent,
        r#"#!/bin/sh
id_of() { printf '%s' "$1" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p'; }
read -r line
printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[{"id":"login","name":"Log in"}]}}\n' "$(id_of "$line")"
read -r line
printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"Authentication required"}}\n' "$(id_of "$line")"
read -r line
"#,
    );
    declare(
        &sb,
        &format!(
            "[agents.locked]\ncommand = {:?}\nlogin = \"run 'needs-login --login' once\"\n",
            agent.display().to_string()
        ),
    );
    let fired = sb.run(&[
        "mission",
        "fire",
        "locked",
        "anything",
        "--wait",
        "--policy",
        "default",
        "--timeout",
        "60s",
    ]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    let said = "agent \"locked\" needs a login before it can open a session (agent returned error -32000 to session/new: Authentication required) — run 'needs-login --login' once";
    assert!(fired.stderr.contains(said), "{fired:#?}");
    let doctor = sb.run(&["doctor", "--agent", "locked"]);
    assert_eq!(doctor.code, 1, "{doctor:#?}");
    assert_eq!(
        doctor.lines()[0],
        "Ready: no — run 'needs-login --login' once"
    );
    assert!(
        doctor
            .lines()
            .contains(&format!("Handshake: {said}").as_str()),
        "{doctor:#?}"
    );
}

#[test]
fn a_declared_mode_is_set_once_the_session_opens_and_a_refusal_refuses_the_fire() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let log = sb.cwd.join("frames.log");
    // Opens its session in a mode that asks for nothing, as a settings file can make
    // an agent do; logs the next frame and refuses it.
    let agent = installs(&sb).join("bin/bypassing");
    executable(
        &agent,
        &format!(
            r#"#!/bin/sh
id_of() {{ printf '%s' "$1" | sed -n 's/.*"id":\("[^"]*"\|[0-9]*\).*/\1/p'; }}
read -r line
printf '{{"jsonrpc":"2.0","id":%s,"result":{{"protocolVersion":1,"agentCapabilities":{{}}}}}}\n' "$(id_of "$line")"
read -r line
printf '{{"jsonrpc":"2.0","id":%s,"result":{{"sessionId":"s1","modes":{{"currentModeId":"bypassPermissions","availableModes":[{{"id":"default","name":"Default"}},{{"id":"bypassPermissions","name":"Bypass"}}]}}}}}}\n' "$(id_of "$line")"
read -r line
printf '%s\n' "$line" > {log}
printf '{{"jsonrpc":"2.0","id":%s,"error":{{"code":-32602,"message":"no such mode"}}}}\n' "$(id_of "$line")"
read -r line
"#,
            log = log.display()
        ),
    );
    declare(
        &sb,
        &format!(
            "[agents.bypassing]\ncommand = {:?}\nmode = \"default\"\n",
            agent.display().to_string()
        ),
    );
    let fired = sb.run(&[
        "mission",
        "fire",
        "bypassing",
        "anything",
        "--wait",
        "--policy",
        "default",
        "--timeout",
        "60s",
    ]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    assert!(
        fired.stderr.contains(
            "agent \"bypassing\" could not be put in its \"default\" mode: agent returned error -32602 to session/set_mode: no such mode"
        ),
        "{fired:#?}"
    );
    let frame: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).unwrap()).unwrap();
    assert_eq!(frame["method"], "session/set_mode");
    assert_eq!(
        frame["params"],
        json!({"sessionId": "s1", "modeId": "default"})
    );
}
