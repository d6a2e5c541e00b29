//! What a newcomer meets in the first hour, as they meet it: messages that point at
//! the board's fire line name `:mission`, `mission list` says what each mission is
//! for, and a silent unit's blocker quotes what it said last — its last turn only.

use crate::harness::{Sandbox, script};

const FIRE_LINE: &str = "the board's :mission, or an editor session's /mission";

#[test]
fn every_message_that_points_at_the_fire_line_says_colon_mission() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(r#""hang""#)))]);

    let refused = sb.run(&["mission", "fire", "stub", "go", "--policy", "default"]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.ends_with(&format!(
            "Pass --wait to block until the mission finishes, or fire from a long-lived host ({FIRE_LINE})\n"
        )),
        "{refused:#?}"
    );

    let empty = sb.run(&["mission", "list"]).ok();
    assert_eq!(
        empty.stdout,
        "No missions recorded. Fire one with 'missionboard mission fire <agent> \"<intent>\" --wait', or :mission on the board.\n"
    );

    let config = sb.run(&["config", "list", "--json"]).ok();
    let config: serde_json::Value = serde_json::from_str(&config.stdout).unwrap();
    let meaning = config
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["key"] == "default-mission-agent")
        .map(|k| k["meaning"].as_str().unwrap().to_string());
    assert_eq!(
        meaning.as_deref(),
        Some(
            "the agent the board's :mission (and an editor's /mission) uses when the line names none"
        )
    );

    let timed_out = sb.fire("stub", "wait forever", &["--timeout", "1s"]);
    assert_eq!(timed_out.code, 1, "{timed_out:#?}");
    assert!(
        timed_out.stdout.contains(&format!(
            "Re-run with a larger --timeout, or fire from a long-lived host ({FIRE_LINE}).\n"
        )),
        "{timed_out:#?}"
    );
    for run in [&refused, &timed_out] {
        let text = format!("{}{}", run.stdout, run.stderr);
        assert!(
            !text.contains("'s /mission)") || text.contains(FIRE_LINE),
            "{text}"
        );
    }
}

#[test]
fn mission_list_shows_each_mission_s_intent() {
    let sb = Sandbox::new();
    sb.record_missions("tidy the imports under src/", 1);
    let long = "x".repeat(100);
    sb.record_missions(&long, 1);
    let list = sb.run(&["mission", "list"]).ok();
    let lines = list.lines();
    assert_eq!(lines.len(), 3, "{list:#?}");
    assert!(
        lines[0].trim_end().ends_with(" AGE  COST  INTENT"),
        "{list:#?}"
    );
    // Newest first: the long one, cut with an ellipsis, then the short one whole.
    assert!(
        lines[1]
            .trim_end()
            .ends_with(&format!(" {}…", "x".repeat(60))),
        "{list:#?}"
    );
    assert!(
        lines[2]
            .trim_end()
            .ends_with(" tidy the imports under src/ 0"),
        "{list:#?}"
    );
}

/// Two messages in one turn, told apart by their ACP message ids, are quoted as two
/// (a blank line between them in the detail, a space on the summary's one line), not
/// run together as one.
#[test]
fn a_silent_unit_s_two_messages_are_quoted_apart_by_their_message_ids() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(
            r#"{"name":"two-messages","turns":[
                {"steps":[{"mute":"Nothing yet."}]},
                {"steps":[
                    {"say":{"text":"I read the logs.","chunks":2,"message":"m-1"}},
                    {"say":{"text":"Nothing stands out.","chunks":3,"message":"m-2"}}
                ]}
            ]}"#,
        ),
    )]);
    let run = sb.fire("stub", "say nothing", &["--timeout", "60s"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let reports = sb.run(&["mission", "reports", &id, "--json"]).ok();
    let reports: serde_json::Value = serde_json::from_str(&reports.stdout).unwrap();
    let blocker = &reports.as_array().unwrap()[0];
    assert_eq!(
        blocker["summary"],
        "unit ended two turns without reporting — last said: I read the logs. Nothing stands out."
    );
    assert!(
        blocker["detail"]
            .as_str()
            .unwrap()
            .starts_with("The unit's last words:\n\nI read the logs.\n\nNothing stands out.\n\n"),
        "{blocker}"
    );
}

#[test]
fn a_silent_unit_s_blocker_quotes_its_last_turn_only() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(
            r#"{"name":"two-turns","turns":[
                {"steps":[{"mute":"I looked around but have nothing to say to anyone."}]},
                {"steps":[{"mute":"Still nothing worth reporting."}]}
            ]}"#,
        ),
    )]);
    let run = sb.fire("stub", "say nothing", &["--timeout", "60s"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    let reports = sb.run(&["mission", "reports", &id, "--json"]).ok();
    let reports: serde_json::Value = serde_json::from_str(&reports.stdout).unwrap();
    let blocker = &reports.as_array().unwrap()[0];
    assert_eq!(blocker["kind"], "blocker");
    assert_eq!(
        blocker["summary"],
        "unit ended two turns without reporting — last said: Still nothing worth reporting."
    );
    assert!(
        blocker["detail"]
            .as_str()
            .unwrap()
            .starts_with("The unit's last words:\n\nStill nothing worth reporting.\n\n"),
        "{blocker}"
    );
    assert!(
        run.stdout.contains(
            "is still open with no verdict and nothing pending: unit ended two turns without reporting — last said: Still nothing worth reporting. It is torn down with this process"
        ),
        "{run:#?}"
    );
}
