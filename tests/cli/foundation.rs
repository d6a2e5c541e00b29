//! Issue A: init, vet, config, agents, the beta gate and the store's refusals.

use crate::harness::Sandbox;

const POLICIES: [&str; 6] = ["default", "strict", "acp", "acpx", "dev", "oracle"];

#[test]
fn init_seeds_every_preset_and_vet_all_passes_them() {
    let sb = Sandbox::new();
    let init = sb.run(&["init"]).ok();
    for p in POLICIES {
        let line = format!(
            "  Created {}",
            sb.home.join(format!("hitl-policy-{p}.json")).display()
        );
        assert!(
            init.lines().contains(&line.as_str()),
            "{line} missing:\n{}",
            init.stdout
        );
    }
    for f in [
        "chain-oracle-default.json",
        "chain-oracle-conservative.json",
        "agents.toml",
    ] {
        let line = format!("  Created {}", sb.home.join(f).display());
        assert!(
            init.lines().contains(&line.as_str()),
            "{line} missing:\n{}",
            init.stdout
        );
    }

    let vet = sb.run(&["vet", "--all"]).ok();
    let lines = vet.lines();
    assert_eq!(lines.len(), 9, "{}", vet.stdout);
    for l in &lines {
        assert!(l.starts_with("ok   "), "not ok: {l}\n{}", vet.stdout);
    }
}

#[test]
fn vet_fails_each_broken_file_and_counts_them() {
    let sb = Sandbox::new();
    let ws = sb.workspace();
    sb.write(
        &ws.join("hitl-policy-typo.json"),
        r#"{"default_action":"approve","rules":[],"compute":{"maxTurn":1}}"#,
    );
    sb.write(
        &ws.join("hitl-policy-allow.json"),
        r#"{"rules":[{"tools":"local_shell","tool":"local_shell","action":"approve","timeout_s":30,"on_timeout":"allow"}]}"#,
    );
    sb.write(&ws.join("hitl-policy-broken.json"), "{\"rules\": [");
    sb.write(
        &ws.join("hitl-policy-fine.json"),
        r#"{"//":"fine","default_action":"deny","rules":[{"tools":"webtools","tool":"call","action":"allow"}]}"#,
    );
    sb.write(&ws.join("notes/readme.json"), r#"{"hello":"world"}"#);

    let vet = sb.run(&["vet"]);
    assert_eq!(vet.code, 1, "{vet:#?}");
    let out = &vet.stdout;
    let block = |name: &str| {
        let head = format!("FAIL {}", ws.join(name).display());
        let start = out
            .find(&head)
            .unwrap_or_else(|| panic!("{head} missing:\n{out}"));
        out[start..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("     "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        block("hitl-policy-typo.json").contains(r#"unknown field "maxTurn""#),
        "{out}"
    );
    assert!(
        block("hitl-policy-allow.json")
            .contains(r#"on_timeout="allow" is not permitted (would silently bypass approval)"#),
        "{out}"
    );
    assert!(
        block("hitl-policy-broken.json").contains("not a JSON object"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "ok   {}",
            ws.join("hitl-policy-fine.json").display()
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "skip {} (not a chain or hitl-policy file)",
            ws.join("notes/readme.json").display()
        )),
        "{out}"
    );
    assert_eq!(
        vet.stdout.lines().last(),
        Some("vet: 3 of 4 file(s) failed"),
        "{out}"
    );
    assert!(
        out.contains("\n\nvet: 3 of 4"),
        "the count line follows a blank line:\n{out}"
    );
}

#[test]
fn vet_warns_but_passes_a_turn_bound_that_has_no_effect() {
    let sb = Sandbox::new();
    let ws = sb.workspace();
    sb.write(
        &ws.join("hitl-policy-turns.json"),
        r#"{"rules":[],"compute":{"maxTurns":5}}"#,
    );
    let vet = sb.run(&["vet"]).ok();
    assert!(
        vet.stdout.starts_with(&format!(
            "WARN {}",
            ws.join("hitl-policy-turns.json").display()
        )),
        "{vet:#?}"
    );
    assert!(
        vet.stdout.contains("     compute.maxTurns: maxTurns is 5"),
        "{vet:#?}"
    );
}

#[test]
fn vet_with_nothing_to_vet_says_how_to_get_something() {
    let sb = Sandbox::new();
    let vet = sb.run(&["vet"]).ok();
    assert_eq!(
        vet.stdout,
        "Nothing to vet: no .json files found. Run 'missionboard init' to scaffold .missionboard/, or pass a path.\n"
    );
}

#[test]
fn config_survives_the_process_and_refuses_unknown_keys() {
    let sb = Sandbox::new();
    sb.run(&["config", "set", "fleet-max-parallel", "4"]).ok();
    assert_eq!(
        sb.run(&["config", "get", "fleet-max-parallel"]).ok().stdout,
        "4\n"
    );
    assert_eq!(
        sb.run(&["config", "get", "ask-park-window"]).ok().stdout,
        "30s\n"
    );

    let bad = sb.run(&["config", "set", "fleet-max", "4"]);
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.starts_with(
            "Error: unknown config key \"fleet-max\" — known keys: default-mission-policy,"
        ),
        "{bad:#?}"
    );
    let bad = sb.run(&["config", "set", "fleet-max-parallel", "lots"]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        sb.run(&["config", "get", "fleet-max-parallel"]).ok().stdout,
        "4\n"
    );
}

#[test]
fn an_unknown_key_creates_no_database() {
    let sb = Sandbox::new();
    assert_eq!(sb.run(&["config", "get", "nope"]).code, 1);
    assert!(!sb.db().exists());
}

#[test]
fn agent_list_shows_the_preset_agents_after_init() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let list = sb.run(&["agent", "list"]).ok();
    let lines = list.lines();
    assert!(
        lines[0].starts_with("NAME")
            && lines[0].contains("COMMAND")
            && lines[0].contains("DESCRIPTION"),
        "{}",
        list.stdout
    );
    for name in ["agent-planner", "demo", "stub"] {
        assert!(
            lines.iter().any(|l| l.starts_with(&format!("{name} "))),
            "{name} missing:\n{}",
            list.stdout
        );
    }
}

#[test]
fn a_malformed_agents_file_names_the_file_and_line() {
    let sb = Sandbox::new();
    let file = sb.workspace().join("agents.toml");
    sb.write(
        &file,
        "[agents.x]\ncommand = \"x\"\nargs = \"not a list\"\n",
    );
    let run = sb.run(&["agent", "list"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with(&format!("Error: agents file {}:3:", file.display())),
        "{run:#?}"
    );
}

#[test]
fn init_keeps_an_edited_preset_unless_forced() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    let strict = sb.home.join("hitl-policy-strict.json");
    sb.write(&strict, "{\"default_action\":\"deny\",\"rules\":[]}\n");
    let again = sb.run(&["init"]).ok();
    assert!(
        again.stdout.contains(&format!(
            "  Skipped {} (has been modified)",
            strict.display()
        )),
        "{again:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(&strict).unwrap(),
        "{\"default_action\":\"deny\",\"rules\":[]}\n"
    );
    let forced = sb.run(&["init", "--force"]).ok();
    assert!(
        forced
            .stdout
            .contains(&format!("  Overwrote {} (--force)", strict.display())),
        "{forced:#?}"
    );
    assert_ne!(
        std::fs::read_to_string(&strict).unwrap(),
        "{\"default_action\":\"deny\",\"rules\":[]}\n"
    );
}

#[test]
fn init_local_seeds_the_workspace() {
    let sb = Sandbox::new();
    sb.run(&["init", "--local"]).ok();
    assert!(
        sb.cwd
            .join(".missionboard/hitl-policy-default.json")
            .is_file()
    );
    let vet = sb.run(&["vet"]).ok();
    assert!(
        vet.lines().iter().all(|l| l.starts_with("ok   ")),
        "{vet:#?}"
    );
}

#[test]
fn unknown_subcommands_and_flags_fail_with_clap_and_exit_2() {
    let sb = Sandbox::new();
    let run = sb.run(&["frobnicate"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("unrecognized subcommand 'frobnicate'"),
        "{run:#?}"
    );
    let run = sb.run(&["vet", "--everything"]);
    assert_eq!(run.code, 2);
}

#[test]
fn beta_flags_are_absent_without_the_opt_in_and_the_gate_creates_no_database() {
    let sb = Sandbox::new();
    let help = sb.run(&["mission", "fire", "--help"]).ok();
    assert!(!help.stdout.contains("--oracle"), "{}", help.stdout);
    let run = sb.run(&["mission", "fire", "demo", "hi", "--wait", "--oracle"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("unexpected argument '--oracle'"),
        "{run:#?}"
    );
    assert!(
        !sb.db().exists(),
        "resolving the beta gate must not create the database"
    );

    let mut on = sb.command(&["mission", "fire", "--help"]);
    on.env("MISSIONBOARD_OPT_IN_BETA", "true");
    assert!(sb.run_with(on).ok().stdout.contains("--oracle"));

    sb.run(&["config", "set", "opt-in-beta", "true"]).ok();
    let help = sb.run(&["approvals", "respond", "--help"]).ok();
    assert!(help.stdout.contains("--as-agent"), "{}", help.stdout);
    // The env override turns it off again for one invocation.
    let mut off = sb.command(&["approvals", "respond", "--help"]);
    off.env("MISSIONBOARD_OPT_IN_BETA", "0");
    assert!(!sb.run_with(off).ok().stdout.contains("--as-agent"));
}

#[test]
fn a_file_that_is_not_a_database_is_named_with_the_fix() {
    let sb = Sandbox::on_file();
    sb.write(&sb.db(), &"definitely not sqlite ".repeat(20));
    let run = sb.run(&["config", "get", "fleet-max-parallel"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(&format!(
            "{} is not a missionboard database",
            sb.db().display()
        )),
        "{run:#?}"
    );
}

#[test]
fn a_database_from_a_newer_missionboard_is_refused_untouched() {
    // The file's version; tests/store_pg.rs refuses a newer PostgreSQL schema.
    let sb = Sandbox::on_file();
    sb.run(&["config", "set", "fleet-max-parallel", "3"]).ok();
    {
        let c = rusqlite::Connection::open(sb.db()).unwrap();
        c.pragma_update(None, "user_version", 42).unwrap();
    }
    let run = sb.run(&["config", "get", "fleet-max-parallel"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("schema version 42"), "{run:#?}");
    let c = rusqlite::Connection::open(sb.db()).unwrap();
    let v: i64 = c
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(v, 42);
}

#[test]
fn logs_go_to_the_log_directory_not_the_terminal() {
    let sb = Sandbox::new();
    let run = sb.run(&["config", "set", "nope", "1"]);
    assert_eq!(
        run.stderr.lines().count(),
        1,
        "only the error line reaches stderr: {run:#?}"
    );
    assert!(
        !run.stderr.contains("ERROR missionboard"),
        "no log record on the terminal: {run:#?}"
    );
    // The error is recorded in the log directory, as a log record.
    let logged: String = std::fs::read_dir(sb.home.join("logs"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default())
        .collect();
    assert!(
        logged
            .lines()
            .any(|l| l.contains(" ERROR missionboard::cli: unknown config key \"nope\"")),
        "{logged}"
    );
}
