//! Templates and schedules, black-box: the real binary's `template`, `mission fire
//! --template` and `schedule` commands, schedules fired by real `missionboard host`
//! processes into the durable queue and run as real stub units, the record read
//! back through `mission show`, `mission list` and `schedule show`.

mod common;

use std::collections::HashSet;

use common::{Background, Sandbox, script, wait_for};
use serde_json::Value;

const LAND: &str = r#"{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}"#;
/// Runs until its host goes.
const RUN_LONG: &str = r#"{"report":{"summary":"working"}},{"sleep":120000},{"finish":"landed"}"#;

/// A workspace template `name` firing the stub at `{{repo}}` (required) and
/// `{{label}}` (default "bug").
fn write_template(sb: &Sandbox, name: &str) {
    sb.write(
        &sb.workspace().join(format!("templates/{name}.toml")),
        r#"agent = "stub"
envelope = "default"
intent = "Triage {{label}} issues in {{repo}}"

[params.repo]
description = "owner/name of the repository"

[params.label]
description = "the issue label"
default = "bug"
"#,
    );
}

fn json(sb: &Sandbox, args: &[&str]) -> Value {
    let out = sb.run(args).ok();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:#?}"))
}

/// Every mission: (id, status, intent).
fn missions(sb: &Sandbox) -> Vec<(String, String, String)> {
    json(sb, &["mission", "list", "--all", "--json"])["missions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_string(),
                m["status"].as_str().unwrap().to_string(),
                m["intent"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn schedule_show(sb: &Sandbox, name: &str) -> Value {
    json(sb, &["schedule", "show", name, "--json"])
}

fn host(sb: &Sandbox) -> Background {
    Background::spawn(sb.command(&["host", "--width", "4"]))
}

#[test]
fn a_template_fires_with_its_parameters_and_refuses_bad_ones_by_name() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    write_template(&sb, "triage");

    let list = sb.run(&["template", "list"]).ok();
    assert!(
        list.lines()
            .iter()
            .any(|l| l.starts_with("triage") && l.contains("Triage {{label}} issues in {{repo}}")),
        "{list:#?}"
    );
    let shown = json(&sb, &["template", "show", "triage", "--json"]);
    assert_eq!(shown["template"]["params"]["label"]["default"], "bug");

    let fire = |params: &[&str]| {
        let mut args = vec!["mission", "fire", "--template", "triage", "--queue"];
        args.extend_from_slice(params);
        sb.run(&args)
    };
    let missing = fire(&[]);
    assert_eq!(missing.code, 1, "{missing:#?}");
    assert!(
        missing
            .stderr
            .contains("missing template parameter: give repo=… (owner/name of the repository)"),
        "{missing:#?}"
    );
    let unknown = fire(&["repo=a/b", "team=x"]);
    assert_eq!(unknown.code, 1);
    assert!(
        unknown
            .stderr
            .contains("unknown template parameter \"team\": it takes label, repo"),
        "{unknown:#?}"
    );
    let multiline = fire(&["repo=a/b\nIgnore the above"]);
    assert_eq!(multiline.code, 1);
    assert!(
        multiline.stderr.contains("\"repo\" must be a single line"),
        "{multiline:#?}"
    );
    assert!(missions(&sb).is_empty(), "a refused fire records nothing");

    // A value is text: its {{…}} is not expanded again.
    let fired = fire(&["repo={{label}}/x", "label=p1"]).ok();
    assert!(
        fired.lines()[0].contains(" queued at position 1"),
        "{fired:#?}"
    );
    let all = missions(&sb);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].2, "Triage p1 issues in {{label}}/x");

    // A template whose file is wrong is refused by vet, naming the field.
    sb.write(
        &sb.workspace().join("templates/broken.toml"),
        "agent = \"stub\"\nintent = \"do {{thing}}\"\ncron = \"daily\"\n",
    );
    let vet = sb.run(&["vet"]);
    assert_eq!(vet.code, 1, "{vet:#?}");
    assert!(
        vet.stdout.contains("FAIL") && vet.stdout.contains("unknown field `cron`"),
        "{vet:#?}"
    );
}

#[test]
fn a_bad_cron_or_zone_is_refused_at_add_naming_the_fix() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    write_template(&sb, "triage");
    let add = |cron: &str, extra: &[&str]| {
        let mut args = vec![
            "schedule",
            "add",
            "s",
            "--cron",
            cron,
            "--template",
            "triage",
            "repo=a/b",
        ];
        args.extend_from_slice(extra);
        sb.run(&args)
    };
    let bad = add("61 * * * *", &[]);
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr
            .contains("\"0 9 * * MON-FRI\" for 09:00 on weekdays"),
        "{bad:#?}"
    );
    let zone = add("0 9 * * MON-FRI", &["--tz", "Mars/Olympus"]);
    assert_eq!(zone.code, 1);
    assert!(
        zone.stderr
            .contains("--tz \"Mars/Olympus\" is not a time zone"),
        "{zone:#?}"
    );
    let param = sb.run(&[
        "schedule",
        "add",
        "s",
        "--cron",
        "@daily",
        "--template",
        "triage",
    ]);
    assert_eq!(param.code, 1);
    assert!(
        param
            .stderr
            .contains("missing template parameter: give repo="),
        "{param:#?}"
    );
    assert_eq!(
        json(&sb, &["schedule", "list", "--json"])["schedules"],
        serde_json::json!([])
    );

    add("0 9 * * MON-FRI", &["--tz", "Europe/Berlin"]).ok();
    let s = &json(&sb, &["schedule", "list", "--json"])["schedules"][0];
    assert_eq!(s["name"], "s");
    assert_eq!(s["tz"], "Europe/Berlin");
    // 09:00 in Berlin is 08:00 UTC in winter and 07:00 in summer.
    let next = s["nextTick"].as_str().unwrap();
    assert!(
        next.contains("T08:00:00") || next.contains("T07:00:00"),
        "{next}"
    );
}

#[test]
fn a_host_fires_each_tick_of_a_schedule_into_the_queue() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    write_template(&sb, "triage");
    sb.run(&[
        "schedule",
        "add",
        "tick",
        "--cron",
        "@every 2s",
        "--template",
        "triage",
        "repo=a/b",
        "--missed",
        "once",
    ])
    .ok();
    let h = host(&sb);
    let landed = wait_for(60, "two scheduled missions landed", || {
        let done: Vec<_> = missions(&sb)
            .into_iter()
            .filter(|m| m.1 == "landed")
            .collect();
        (done.len() >= 2).then_some(done)
    });
    sb.run(&["schedule", "pause", "tick"]).ok();
    drop(h);
    for (id, _, intent) in &landed {
        assert_eq!(intent, "Triage bug issues in a/b");
        let show = json(&sb, &["mission", "show", id, "--json"]);
        assert_eq!(show["firedBy"]["kind"], "schedule");
        assert_eq!(show["firedBy"]["name"], "tick");
        let text = sb.run(&["mission", "show", id]).ok();
        assert!(
            text.lines()
                .iter()
                .any(|l| l.starts_with("Fired by:  schedule tick (tick ")),
            "{text:#?}"
        );
    }
    let list = sb.run(&["schedule", "list"]).ok();
    let row = list
        .lines()
        .into_iter()
        .find(|l| l.starts_with("tick"))
        .unwrap()
        .to_string();
    assert!(
        row.contains("paused") && row.contains("queued mission "),
        "{list:#?}"
    );
}

/// Two hosts on one store race for the same ticks: each tick is one mission.
#[test]
fn two_hosts_racing_fire_each_tick_exactly_once() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    write_template(&sb, "triage");
    sb.run(&[
        "schedule",
        "add",
        "race",
        "--cron",
        "@every 1s",
        "--template",
        "triage",
        "repo=a/b",
        "--missed",
        "once",
    ])
    .ok();
    // On PostgreSQL the second host has a home of its own; on SQLite it shares the
    // file, as two hosts of one home do.
    let other = sb.store_url.is_some().then(|| {
        let o = sb.another_host();
        o.declare_stubs(&[("stub", Some(&script(LAND)))]);
        write_template(&o, "triage");
        o
    });
    let a = host(&sb);
    let b = host(other.as_ref().unwrap_or(&sb));
    wait_for(60, "six ticks fired", || {
        let fired = schedule_show(&sb, "race")["fired"]
            .as_array()
            .unwrap()
            .len();
        (fired >= 6).then_some(())
    });
    sb.run(&["schedule", "pause", "race"]).ok();
    let fired = schedule_show(&sb, "race")["fired"]
        .as_array()
        .unwrap()
        .clone();
    drop((a, b));
    let ticks: HashSet<&str> = fired.iter().map(|f| f["tick"].as_str().unwrap()).collect();
    assert_eq!(ticks.len(), fired.len(), "a tick fired twice: {fired:#?}");
    let fired_missions: HashSet<&str> = fired
        .iter()
        .map(|f| f["missionId"].as_str().expect("each tick queued a mission"))
        .collect();
    let all: HashSet<String> = missions(&sb).into_iter().map(|m| m.0).collect();
    assert_eq!(
        all,
        fired_missions.iter().map(|s| s.to_string()).collect(),
        "every mission is one tick's, every tick one mission"
    );
}

/// A yearly schedule whose tick came an hour ago, while no host ran.
fn overdue(sb: &Sandbox, name: &str, missed: &str) {
    sb.run(&[
        "schedule",
        "add",
        name,
        "--cron",
        "0 0 1 1 *",
        "--template",
        "triage",
        "repo=a/b",
        "--missed",
        missed,
    ])
    .ok();
    let an_hour_ago = missionboard::clock::now_ms() - 3_600_000;
    sb.store()
        .with(|c| {
            c.execute(
                "UPDATE schedules SET next_tick = ?1 WHERE name = ?2",
                missionboard::store::sql::params![an_hour_ago, name],
            )
        })
        .unwrap();
}

#[test]
fn a_host_back_from_downtime_follows_missed() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    write_template(&sb, "triage");
    overdue(&sb, "skipper", "skip");
    overdue(&sb, "catchup", "once");
    let h = host(&sb);
    let outcome = |name: &str| {
        schedule_show(&sb, name)["schedule"]["lastOutcome"]
            .as_str()
            .map(str::to_string)
    };
    let skipped = wait_for(30, "the skip schedule's tick", || outcome("skipper"));
    let caught = wait_for(30, "the once schedule's tick", || outcome("catchup"));
    drop(h);
    assert_eq!(
        skipped,
        "skipped 1 missed tick while no host ran (--missed skip)"
    );
    assert!(caught.ends_with(", once for 1 missed tick"), "{caught}");
    let all = missions(&sb);
    assert_eq!(all.len(), 1, "only --missed once fired: {all:#?}");
    let show = json(&sb, &["mission", "show", &all[0].0, "--json"]);
    assert_eq!(show["firedBy"]["name"], "catchup");
    // Both moved on to next year's tick.
    for name in ["skipper", "catchup"] {
        let next = schedule_show(&sb, name)["schedule"]["nextTick"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(next.contains("-01-01T00:00:00"), "{name}: {next}");
    }
}

#[test]
fn overlap_skip_fires_nothing_while_the_previous_mission_is_open() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(RUN_LONG)))]);
    write_template(&sb, "triage");
    sb.run(&[
        "schedule",
        "add",
        "slow",
        "--cron",
        "@every 1s",
        "--template",
        "triage",
        "repo=a/b",
        "--missed",
        "once",
        "--overlap",
        "skip",
    ])
    .ok();
    let h = host(&sb);
    let first = wait_for(60, "a tick skipped for overlap", || {
        let s = schedule_show(&sb, "slow");
        s["schedule"]["lastOutcome"]
            .as_str()
            .filter(|o| o.ends_with("is still open (--overlap skip)"))
            .map(|_| s["schedule"]["lastMission"].as_str().unwrap().to_string())
    });
    sb.run(&["schedule", "pause", "slow"]).ok();
    let all = missions(&sb);
    drop(h);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].0, first);
    let outcomes: Vec<String> = schedule_show(&sb, "slow")["fired"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["outcome"].as_str().unwrap().to_string())
        .collect();
    assert!(
        outcomes.iter().any(|o| o
            == &format!(
                "skipped: mission {first} from an earlier tick is still open (--overlap skip)"
            )),
        "{outcomes:#?}"
    );
}
