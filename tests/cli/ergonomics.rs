//! Issue L (CLI half): honest list counts, `--json` on every read command, shell
//! completions and the manual page, and reads that leave a missing home missing.

use serde_json::Value;

use crate::harness::{Run, Sandbox};

/// `n` open missions of agent `stub`; the newest gets `n` pending questions and `n`
/// reports (each an inbox item: nobody supervises these missions). Returns the
/// mission ids, newest last.
fn seed(sb: &Sandbox, n: usize) -> Vec<String> {
    use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};
    use missionboard::mission::{Missions, ReportInput};
    let ids = sb.record_missions("mission", n);
    let store = sb.store();
    let missions = Missions::new(store.clone());
    let newest = ids.last().unwrap();
    let asks = Asks::new(store);
    for i in 0..n {
        asks.raise(NewAsk {
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: format!("question {i}"),
            mission_id: Some(newest.clone()),
            ..Default::default()
        })
        .unwrap();
        missions
            .add_report(
                newest,
                ReportInput {
                    kind: "progress".into(),
                    summary: format!("report {i}"),
                    ..Default::default()
                },
            )
            .unwrap();
    }
    ids
}

fn json(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:#?}");
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:#?}"))
}

/// How many of the `needles` the output names.
fn named(run: &Run, needles: &[String]) -> usize {
    needles
        .iter()
        .filter(|n| run.stdout.contains(n.as_str()))
        .count()
}

#[test]
fn a_truncated_list_ends_with_its_honest_count_and_all_shows_every_row() {
    let sb = Sandbox::new();
    let missions = seed(&sb, 3);
    let questions: Vec<String> = (0..3).map(|i| format!("question {i}")).collect();
    let reports: Vec<String> = (0..3).map(|i| format!("report {i}")).collect();
    let lists: [(&[&str], &Vec<String>, &str); 4] = [
        (&["mission", "list"], &missions, "missions"),
        (&["mission", "asks"], &questions, "asks"),
        (&["approvals", "list"], &questions, "asks"),
        (&["inbox", "list"], &reports, "items"),
    ];
    for (args, rows, key) in lists {
        let with = |extra: &[&str]| sb.run(&[args, extra].concat());

        let limited = with(&["--limit", "2"]).ok();
        assert_eq!(named(&limited, rows), 2, "{args:?}: {limited:#?}");
        assert_eq!(
            limited.stdout.lines().last(),
            Some("2 of 3, --limit/--all for more"),
            "{args:?}: {limited:#?}"
        );

        for everything in [&[][..], &["--all"]] {
            let full = with(everything).ok();
            assert_eq!(named(&full, rows), 3, "{args:?} {everything:?}: {full:#?}");
            assert!(
                !full.stdout.contains(" of 3, --limit/--all for more"),
                "{args:?} {everything:?}: {full:#?}"
            );
        }

        let limited = json(&with(&["--limit", "2", "--json"]));
        assert_eq!(limited["total"], 3, "{args:?}: {limited:#}");
        assert_eq!(limited[key].as_array().unwrap().len(), 2, "{args:?}");
        let full = json(&with(&["--all", "--json"]));
        assert_eq!(full["total"], 3, "{args:?}: {full:#}");
        assert_eq!(full[key].as_array().unwrap().len(), 3, "{args:?}");

        let both = with(&["--all", "--limit", "2"]);
        assert_eq!(both.code, 2, "--all and --limit contradict: {both:#?}");
    }
}

#[test]
fn mission_asks_counts_one_missions_questions_and_names_its_agent() {
    let sb = Sandbox::new();
    let missions = seed(&sb, 3);
    let newest = missions.last().unwrap();
    let asks = sb.run(&["mission", "asks", newest, "--limit", "1"]).ok();
    let row = asks.lines()[1];
    assert!(row.contains("  question "), "{asks:#?}");
    assert!(row.contains(&format!("{newest}  stub  ")), "{asks:#?}");
    assert_eq!(
        asks.stdout.lines().last(),
        Some("1 of 3, --limit/--all for more")
    );
    let v = json(&sb.run(&["mission", "asks", &missions[0], "--json"]));
    assert_eq!(v, serde_json::json!({"asks": [], "total": 0}));
}

#[test]
fn every_read_command_answers_in_json() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let missions = seed(&sb, 1);

    let approvals = json(&sb.run(&["approvals", "list", "--json"]));
    assert_eq!(approvals["asks"][0]["argsSummary"], "question 0");
    assert_eq!(approvals["asks"][0]["missionId"], missions[0].as_str());
    let asks = json(&sb.run(&["mission", "asks", "--json"]));
    assert_eq!(asks["asks"][0]["agentName"], "stub");
    assert_eq!(asks["asks"][0]["id"], approvals["asks"][0]["id"]);

    let inbox = json(&sb.run(&["inbox", "list", "--json"]));
    let item = &inbox["items"][0];
    assert_eq!(item["missionId"], missions[0].as_str());
    assert_eq!(item["report"]["summary"], "report 0");
    let shown = json(&sb.run(&["inbox", "show", item["id"].as_str().unwrap(), "--json"]));
    assert_eq!(&shown, item);

    let agents = json(&sb.run(&["agent", "list", "--json"]));
    assert_eq!(agents[0]["name"], "stub");
    assert_eq!(agents[0]["command"], "missionboard");
    assert_eq!(agents[0]["args"], serde_json::json!(["stub-agent"]));
    assert_eq!(agents[0]["description"], "test stub");

    sb.run(&["config", "set", "fleet-max-parallel", "3"]).ok();
    let config = json(&sb.run(&["config", "list", "--json"]));
    let key = |name: &str| {
        config
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["key"] == name)
            .cloned()
            .unwrap()
    };
    assert_eq!(key("fleet-max-parallel")["value"], "3");
    assert_eq!(key("fleet-max-parallel")["origin"], "set");
    assert_eq!(key("ask-park-window")["origin"], "default");
    assert_eq!(key("model-name")["value"], Value::Null);
    assert_eq!(key("model-name")["origin"], "unset");

    let doctor = sb.run(&["doctor", "--json"]);
    let v: Value = serde_json::from_str(&doctor.stdout).unwrap();
    assert_eq!(doctor.code, if v["ready"] == true { 0 } else { 1 });
    assert_eq!(v["checks"][0]["part"], "Home");
    assert_eq!(v["checks"][0]["detail"], sb.home.display().to_string());
    let store = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["part"] == "Store")
        .unwrap();
    assert!(
        store["detail"].as_str().unwrap().ends_with("integrity ok)"),
        "{v:#}"
    );
    assert!(
        v["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "run: missionboard init"),
        "no envelopes yet: {v:#}"
    );
}

#[test]
fn completions_for_each_shell_name_the_subcommands() {
    let sb = Sandbox::new();
    for shell in ["bash", "zsh", "fish"] {
        let script = sb.run(&["completions", shell]).ok();
        for subcommand in ["mission", "approvals", "inbox", "doctor"] {
            assert!(
                script.stdout.contains(subcommand),
                "{shell} completions should offer {subcommand}:\n{}",
                script.stdout
            );
        }
    }
    let bad = sb.run(&["completions", "tcsh"]);
    assert_eq!(bad.code, 2, "{bad:#?}");
    assert!(!sb.home.exists(), "completions touch no home");
}

#[test]
fn man_prints_a_roff_page_of_the_whole_grammar() {
    let sb = Sandbox::new();
    let page = sb.run(&["man"]).ok();
    // roff: past the preamble that defines the apostrophe string, the title line.
    let title = page.stdout.lines().find(|l| !l.contains(".ds Aq"));
    assert_eq!(
        title.map(|l| l.split_whitespace().take(3).collect::<Vec<_>>()),
        Some(vec![".TH", "missionboard", "1"]),
        "{}",
        page.stdout
    );
    assert!(
        page.stdout.contains("\n.SH SUBCOMMANDS\n"),
        "{}",
        page.stdout
    );
    for subcommand in ["mission", "approvals", "inbox", "completions"] {
        assert!(
            page.stdout
                .contains(&format!("missionboard\\-{subcommand}(1)")),
            "{subcommand}:\n{}",
            page.stdout
        );
    }

    // Every page a SUBCOMMANDS section names exists, titled as it is referred to.
    let fire = sb.run(&["man", "mission", "fire"]).ok();
    assert!(
        fire.stdout
            .contains("\n.TH missionboard-mission-fire 1  \"missionboard "),
        "{}",
        fire.stdout
    );
    assert!(
        fire.stdout
            .contains("\n.SH SYNOPSIS\n\\fBmissionboard mission fire\\fR"),
        "{}",
        fire.stdout
    );
    assert!(fire.stdout.contains("\\-\\-policy"), "{}", fire.stdout);
    let unknown = sb.run(&["man", "mission", "nope"]);
    assert_eq!(unknown.code, 1);
    assert_eq!(
        unknown.stderr,
        "Error: missionboard mission has no subcommand \"nope\" — 'missionboard mission --help' lists those it has\n"
    );
    assert!(!sb.home.exists(), "man touches no home");
}

#[test]
fn reads_against_a_missing_home_create_nothing() {
    // About the embedded file (a shared database exists before any home does).
    let sb = Sandbox::on_file();
    let no_store = format!(
        "Error: no missionboard store at {} yet — fire a mission or run `missionboard init` first\n",
        sb.db().display()
    );
    let about_one_row: [&[&str]; 9] = [
        &["mission", "show", "abcd1234"],
        &["mission", "stop", "abcd1234"],
        &["mission", "show", "abcd1234", "--json"],
        &["mission", "reports", "abcd1234"],
        &["mission", "plan", "abcd1234"],
        &["mission", "asks", "abcd1234"],
        &["inbox", "show", "abcd1234", "--json"],
        &["inbox", "ack", "abcd1234"],
        &["approvals", "respond", "abcd1234", "--approve"],
    ];
    for args in about_one_row {
        let run = sb.run(args);
        assert_eq!(run.code, 1, "{args:?}: {run:#?}");
        assert_eq!(run.stderr, no_store, "{args:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(!sb.home.exists(), "{args:?} created the home");
    }
    let lists: [(&[&str], &str); 4] = [
        (&["mission", "list"], "No missions recorded."),
        (&["mission", "asks"], "No pending attention asks."),
        (&["approvals", "list"], "No pending asks."),
        (&["inbox", "list"], "No unacknowledged inbox items."),
    ];
    for (args, empty) in lists {
        let run = sb.run(args).ok();
        assert!(run.stdout.starts_with(empty), "{args:?}: {run:#?}");
        let key = match args {
            ["mission", "list"] => "missions",
            ["inbox", "list"] => "items",
            _ => "asks",
        };
        let v = json(&sb.run(&[args, &["--json"]].concat()));
        assert_eq!(v, serde_json::json!({key: [], "total": 0}), "{args:?}");
        assert!(!sb.home.exists(), "{args:?} created the home");
    }
    let config = sb.run(&["config", "get", "fleet-max-parallel"]).ok();
    assert_eq!(config.stdout, "8\n", "the default, read without a store");
    let listed = json(&sb.run(&["config", "list", "--json"]));
    assert_eq!(listed[2]["key"], "fleet-max-parallel");
    assert_eq!(listed[2]["origin"], "default");
    assert_eq!(
        json(&sb.run(&["agent", "list", "--json"])),
        serde_json::json!([])
    );

    let doctor = sb.run(&["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor:#?}");
    assert_eq!(doctor.lines()[0], "Ready: no — run: missionboard init");
    assert!(
        doctor
            .lines()
            .contains(&format!("Store:     {}", &no_store[7..no_store.len() - 1]).as_str()),
        "{doctor:#?}"
    );
    let v: Value = serde_json::from_str(&sb.run(&["doctor", "--json"]).stdout).unwrap();
    assert_eq!(v["ready"], false);
    assert!(
        !sb.home.exists(),
        "config, agent list and doctor created the home"
    );

    // A command that writes still creates what it needs.
    sb.run(&["config", "set", "fleet-max-parallel", "2"]).ok();
    assert!(sb.db().exists());
}

#[test]
fn mission_show_says_when_it_prints_only_the_newest_reports() {
    use missionboard::mission::{Missions, ReportInput};
    let sb = Sandbox::new();
    let id = sb.record_missions("chatty", 1).remove(0);
    let missions = Missions::new(sb.store());
    for i in 0..201 {
        missions
            .add_report(
                &id,
                ReportInput {
                    summary: format!("step {i}"),
                    ..Default::default()
                },
            )
            .unwrap();
    }
    let show = sb.run(&["mission", "show", &id]).ok();
    assert!(
        show.stdout.contains(&format!(
            "\nReports (the newest 200 of 201, oldest first — full detail: missionboard mission reports {id}):\n"
        )),
        "{}",
        show.stdout
    );
    let v = json(&sb.run(&["mission", "show", &id, "--json"]));
    assert_eq!(v["reports"].as_array().unwrap().len(), 200);
    assert_eq!(v["reportsTotal"], 201);
    let all = json(&sb.run(&["mission", "reports", &id, "--json"]));
    assert_eq!(all.as_array().unwrap().len(), 201);
    assert_eq!(all[0]["summary"], "step 0");
}
