//! The ACP registry's index: the shipped snapshot listed by `agent list --available`,
//! any of its agents declared by `agent add <id>` from its distribution, `agent
//! registry refresh` from a local file, and `agent install` checking an archive's
//! sha256 before anything is unpacked.

use std::path::Path;

use serde_json::json;

use crate::harness::{Run, Sandbox};

fn run_env(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = sb.command(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    sb.run_with(cmd)
}

#[test]
fn the_shipped_index_lists_the_ecosystem_and_declares_from_each_distribution() {
    let sb = Sandbox::new();
    let list = sb.run(&["agent", "list", "--available"]).ok();
    let row = |id: &str| {
        list.lines()
            .into_iter()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("no row {id}: {list:#?}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(
        row("cline").starts_with("cline 3.0.4 npx cline@3.0.4 cline no"),
        "{}",
        row("cline")
    );
    assert!(
        row("fast-agent").starts_with("fast-agent 0.10.1 uvx fast-agent-acp==0.10.1 — no"),
        "{}",
        row("fast-agent")
    );
    assert!(
        row("codex-acp").starts_with("codex-acp 0.9.2 binary"),
        "{}",
        row("codex-acp")
    );
    assert!(
        row("codex-acp").contains(" codex no "),
        "{}",
        row("codex-acp")
    );
    assert!(
        list.stdout
            .contains("(commit 3de1678346d1b37b6c3f07de503043ebcbb9cbdb, 2026-02-07)"),
        "{list:#?}"
    );

    // uvx: the package's entry point, its args and env, its install line.
    let add = sb.run(&["agent", "add", "fast-agent"]).ok();
    assert_eq!(
        add.lines().last().copied(),
        Some(
            format!(
                "Added fast-agent to {}: fast-agent-acp -x (not installed: uv tool install fast-agent-acp==0.10.1).",
                sb.home.join("agents.toml").display()
            )
            .as_str()
        ),
        "{add:#?}"
    );
    let agents: serde_json::Value =
        serde_json::from_str(&sb.run(&["agent", "list", "--json"]).ok().stdout).unwrap();
    let fast = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "fast-agent")
        .unwrap();
    assert_eq!(fast["command"], "fast-agent-acp");
    assert_eq!(fast["args"], json!(["-x"]));
    assert_eq!(fast["install"], "uv tool install fast-agent-acp==0.10.1");
    // Declared twice: said so, nothing changed.
    let again = sb.run(&["agent", "add", "fast-agent"]).ok();
    assert!(
        again.stdout.contains("fast-agent is already declared in"),
        "{again:#?}"
    );
    // doctor checks the uvx install.
    let mut doctor = sb.command(&["doctor"]);
    doctor.env("PATH", "/usr/bin:/bin");
    let doctor = sb.run_with(doctor);
    assert!(
        doctor.lines().iter().any(|l| l.ends_with(
            "fast-agent: not installed (ACP registry fast-agent) — uv tool install fast-agent-acp==0.10.1"
        )),
        "{doctor:#?}"
    );

    // An id the catalogue knows is declared as the catalogue has it.
    let codex = sb.run(&["agent", "add", "codex-acp"]).ok();
    assert!(
        codex
            .stdout
            .starts_with("codex-acp is the catalogue's codex: declared as the catalogue has it"),
        "{codex:#?}"
    );
    assert!(codex.stdout.contains("Added codex to "), "{codex:#?}");

    let unknown = sb.run(&["agent", "add", "no-such-agent"]);
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.stderr.contains("is neither in the catalogue")
            && unknown.stderr.contains("agent list --available"),
        "{unknown:#?}"
    );
}

/// A `.tar.gz` holding `kit/agent`, and its sha256.
fn archive(dir: &Path) -> (std::path::PathBuf, String) {
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("kit")).unwrap();
    std::fs::write(src.join("kit/agent"), "#!/bin/sh\nexit 0\n").unwrap();
    let out = dir.join("agent.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&out)
        .arg("-C")
        .arg(&src)
        .arg("kit")
        .status()
        .unwrap();
    assert!(status.success());
    let sha = missionboard::presets::sha256(&std::fs::read(&out).unwrap());
    (out, sha)
}

#[test]
fn a_refreshed_index_from_a_file_declares_a_binary_agent_installed_only_with_its_sha256() {
    let sb = Sandbox::new();
    let dir = sb.home.parent().unwrap().join("registry");
    std::fs::create_dir_all(&dir).unwrap();
    let (tarball, sha) = archive(&dir);
    let platform = format!(
        "{}-{}",
        if std::env::consts::OS == "macos" {
            "darwin"
        } else {
            std::env::consts::OS
        },
        std::env::consts::ARCH
    );
    let index = |sha: &str| {
        json!({"version": "1.0.0", "agents": [{
            "id": "kit", "name": "Kit", "version": "1.0.0", "description": "a test agent",
            "distribution": {"binary": {platform.clone(): {
                "archive": format!("file://{}", tarball.display()),
                "cmd": "./kit/agent", "args": ["acp"], "sha256": sha
            }}}
        }]})
        .to_string()
    };
    let file = dir.join("registry.json");
    std::fs::write(&file, index(&"0".repeat(64))).unwrap();
    let refreshed = sb
        .run(&[
            "agent",
            "registry",
            "refresh",
            "--from",
            &file.display().to_string(),
        ])
        .ok();
    assert_eq!(
        refreshed.stdout,
        format!(
            "Refreshed the ACP registry's index from {}: 1 agents, in {} (read before the shipped snapshot).\n",
            file.display(),
            sb.home.join("acp-registry.json").display()
        )
    );
    let data = sb.home.parent().unwrap().join("data");
    let env = [("XDG_DATA_HOME", data.to_str().unwrap())];
    run_env(&sb, &["agent", "add", "kit"], &env).ok();
    let program = data.join("missionboard/agents/kit/1.0.0/kit/agent");
    // A wrong sha256: nothing is unpacked.
    let bad = run_env(&sb, &["agent", "install", "kit"], &env);
    assert_eq!(bad.code, 1, "{bad:#?}");
    assert!(
        bad.stderr.contains(&format!(
            "has sha256 {sha}, but the registry says {}",
            "0".repeat(64)
        )),
        "{bad:#?}"
    );
    assert!(!program.exists());
    let doctor = run_env(&sb, &["doctor", "--agent", "kit"], &env);
    assert!(
        doctor
            .lines()
            .contains(&"Installed: no — missionboard agent install kit"),
        "{doctor:#?}"
    );
    // The right one: installed, and the declaration runs it.
    std::fs::write(&file, index(&sha)).unwrap();
    sb.run(&[
        "agent",
        "registry",
        "refresh",
        "--from",
        &file.display().to_string(),
    ])
    .ok();
    let good = run_env(&sb, &["agent", "install", "kit"], &env).ok();
    assert!(
        good.stdout
            .contains(&format!("sha256 {sha}: as the registry says.")),
        "{good:#?}"
    );
    assert!(program.is_file());
    let list: serde_json::Value =
        serde_json::from_str(&run_env(&sb, &["agent", "list", "--json"], &env).ok().stdout)
            .unwrap();
    let kit = list
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "kit")
        .unwrap();
    assert_eq!(kit["command"], program.display().to_string());
    assert_eq!(kit["installed"], true);

    // A file that is not an index is refused, and the refreshed one stays.
    std::fs::write(&file, "{\"agents\": 3}").unwrap();
    let broken = sb.run(&[
        "agent",
        "registry",
        "refresh",
        "--from",
        &file.display().to_string(),
    ]);
    assert_eq!(broken.code, 1);
    assert!(
        broken
            .stderr
            .contains("expected the registry's registry.json format"),
        "{broken:#?}"
    );
}
