//! Issue I (7, 8): envelopes never widen by mistake. The loader behind `mission fire`
//! (the board and the fleet load through the same one) refuses exactly what vet
//! fails, and a glob decides in time linear in the path, however many `**` it has.

use std::time::{Duration, Instant};

use crate::harness::{Background, Run, Sandbox, processes_mentioning, wait_for};

const COMMENTS: &str = "(keys starting with // are comments; $schema is allowed)";

/// A rule that allows writes under `/tmp` only — unless its `when` is misspelt,
/// which the Go-era loader read as an unconditional allow.
const WEHN: &str = r#"{"default_action":"deny","rules":[{"tools":"local_fs","tool":"write_file","action":"allow","wehn":[{"key":"path","op":"glob","value":"/tmp/**"}]}]}"#;

/// `mission fire stub <intent> --wait --policy <policy>`.
fn fire(sb: &Sandbox, policy: &str, intent: &str) -> Run {
    sb.run(&[
        "mission", "fire", "stub", intent, "--wait", "--policy", policy,
    ])
}

fn script(steps: &str) -> String {
    format!(r#"{{"name":"t","turns":[{{"steps":[{steps}]}}]}}"#)
}

#[test]
fn a_misspelt_when_refuses_the_fire_with_vets_words_and_records_nothing() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[(
        "stub",
        Some(&script(
            r#"{"permission":{"title":"write /etc/hosts","path":"/etc/hosts","report":true}},{"finish":"landed"}"#,
        )),
    )]);
    let file = sb.home.join("hitl-policy-typo.json");
    sb.write(&file, WEHN);
    let problem = format!(
        r#"rule 0: unknown field "wehn" at rules[0].wehn — known fields: tools, tool, when, action, timeout_s, on_timeout {COMMENTS}"#
    );

    let run = fire(&sb, "typo", "edit the hosts file");
    assert_eq!(run.code, 1, "{run:#?}");
    let refusal = format!("invalid hitl policy \"{}\": {problem}", file.display());
    assert_eq!(
        run.stderr.trim_end(),
        format!(
            "Error: mission envelope \"typo\" (--policy) does not load: {refusal} — fix the file, or name another (`missionboard vet --all` checks every envelope)"
        ),
        "{run:#?}"
    );
    assert!(
        sb.newest_mission().is_none(),
        "a refused fire records nothing"
    );

    let vet = sb.run(&["vet", file.to_str().unwrap()]);
    assert_eq!(vet.code, 1);
    assert_eq!(
        vet.lines()[..2],
        [
            format!("FAIL {}", file.display()),
            format!("     hitl policy failed validation: {problem}"),
        ]
    );
}

#[test]
fn an_unknown_or_repeated_field_at_any_level_refuses_the_fire() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let cases = [
        (
            r#"{"default_action":"deny","rules":[],"defualt":"x"}"#,
            "policy: unknown field \"defualt\" at defualt",
        ),
        (
            r#"{"Default_Action":"allow","rules":[]}"#,
            "policy: unknown field \"Default_Action\" at Default_Action",
        ),
        (
            r#"{"default_action":"deny","rules":[{"action":"deny","when":[{"key":"path","op":"glob","vlaue":"**"}]}]}"#,
            "rule 0, condition 0: unknown field \"vlaue\" at rules[0].when[0].vlaue",
        ),
        (
            r#"{"default_action":"allow","rules":[],"compute":{"maxToolCall":3}}"#,
            "compute: unknown field \"maxToolCall\" at compute.maxToolCall",
        ),
        (
            r#"{"default_action":"approve","rules":[],"attention":{"allowAgentAnswers":true,"maxAgentAnswer":50}}"#,
            "attention: unknown field \"maxAgentAnswer\" at attention.maxAgentAnswer",
        ),
        (
            r#"{"default_action":"allow","rules":[],"trusted_binaries":{"dir":["/usr/bin"]}}"#,
            "trusted_binaries: unknown field \"dir\" at trusted_binaries.dir",
        ),
        (
            r#"{"default_action":"deny","rules":[],"default_action":"allow"}"#,
            "policy: duplicate field \"default_action\" at default_action — only one copy would count; write it once",
        ),
    ];
    for (i, (body, problem)) in cases.into_iter().enumerate() {
        let file = sb.home.join(format!("hitl-policy-case{i}.json"));
        sb.write(&file, body);
        let run = fire(&sb, &format!("case{i}"), "land");
        assert_eq!(run.code, 1, "{body}: {run:#?}");
        let refusal = format!("invalid hitl policy \"{}\": {problem}", file.display());
        assert!(run.stderr.contains(&refusal), "{body}: {run:#?}");
        let vet = sb.run(&["vet", file.to_str().unwrap()]);
        assert_eq!(vet.code, 1, "{body}: {vet:#?}");
        assert!(
            vet.stdout
                .contains(&format!("     hitl policy failed validation: {problem}")),
            "{body}: {vet:#?}"
        );
    }
    assert!(
        sb.newest_mission().is_none(),
        "no refused fire recorded anything"
    );
}

/// Deny writes whose path runs through fourteen `a` directories to a `b`; returns
/// the envelope file and the pattern.
fn fourteen_double_stars(sb: &Sandbox) -> (std::path::PathBuf, String) {
    let pattern = format!("{}b", "**/a/".repeat(14));
    let file = sb.home.join("hitl-policy-stars.json");
    sb.write(
        &file,
        &format!(
            r#"{{"default_action":"allow","rules":[{{"tools":"local_fs","tool":"write_file","action":"deny","when":[{{"key":"path","op":"glob","value":"{pattern}"}}]}}]}}"#
        ),
    );
    (file, pattern)
}

/// Two gated writes of 24-segment paths: the miss (the case the backtracking
/// matcher never finished) and the hit; then `last`.
fn deep_writes(last: &str) -> String {
    let miss = format!("/{}c", "a/".repeat(23));
    let hit = format!("/{}b", "a/".repeat(23));
    script(&format!(
        r#"{{"permission":{{"title":"write the miss","path":"{miss}","report":true}}}},{{"permission":{{"title":"write the hit","path":"{hit}","report":true}}}},{last}"#
    ))
}

#[test]
fn a_glob_with_fourteen_double_stars_decides_at_once_and_vet_warns_about_it() {
    let sb = Sandbox::new();
    let (file, pattern) = fourteen_double_stars(&sb);
    sb.declare_stubs(&[("stub", Some(&deep_writes(r#"{"finish":"landed"}"#)))]);

    let started = Instant::now();
    let run = fire(&sb, "stars", "write deep files");
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout
            .contains("permission 1/1 for write the miss: allowed"),
        "{run:#?}"
    );
    assert!(
        run.stdout
            .contains("permission 1/1 for write the hit: denied"),
        "{run:#?}"
    );
    // The whole fire, agent start-up included; the old matcher took minutes.
    assert!(took < Duration::from_secs(20), "the fire took {took:?}");

    let vet = sb.run(&["vet", file.to_str().unwrap()]).ok();
    assert_eq!(
        vet.lines(),
        [
            format!("WARN {}", file.display()),
            format!(
                "     rules[0].when[0].value: glob \"{pattern}\" has 14 \"**\" segments (more than 4): each lets any run of directories match, so a pattern this loose rarely says what was meant — name the directories, or collapse the \"**\"s"
            ),
        ]
    );
}

#[test]
fn after_deciding_a_fourteen_double_star_glob_the_host_still_honours_sigterm() {
    let sb = Sandbox::new();
    fourteen_double_stars(&sb);
    sb.declare_stubs(&[("stub", Some(&deep_writes(r#""hang""#)))]);
    let host = Background::spawn(sb.command(&[
        "mission",
        "fire",
        "stub",
        "write deep files",
        "--wait",
        "--policy",
        "stars",
    ]));
    let id = wait_for(30, "the mission record", || sb.newest_mission());
    wait_for(30, "both decisions reported", || {
        let reports = sb.run(&["mission", "reports", &id]).stdout;
        (reports.contains("write the miss: allowed") && reports.contains("write the hit: denied"))
            .then_some(())
    });

    let pid = host.pid() as i32;
    // SAFETY: signalling a child this test spawned and has not yet reaped.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(host.join()));
    let run = rx
        .recv_timeout(Duration::from_secs(15))
        .unwrap_or_else(|_| {
            // SAFETY: as above; nothing is left running when the assertion fails.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("the host ignored SIGTERM for 15 s");
        });
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stdout.contains(&format!(
            "mission {id} wait interrupted: the unit is torn down with this process."
        )),
        "{run:#?}"
    );
    let script = sb.home.join("script-stub.json");
    wait_for(15, "the unit torn down with its host", || {
        processes_mentioning(script.to_str().unwrap())
            .is_empty()
            .then_some(())
    });
}
