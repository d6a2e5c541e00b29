//! Agent text is hostile: a stub carries terminal escape sequences (CSI 2J, OSC 0/8/52,
//! DCS), 8-bit C1 controls and a bidi override through every field a unit controls —
//! the intent echo, plan entries and rationale, report summary/detail/refs/handover,
//! a question, the verdict, an errored turn — and no command's output, text or
//! `--json`, carries one raw control character.

use serde_json::{Value, json};

use crate::harness::{Run, Sandbox, wait_for};

/// Every kind of hostile sequence, around a visible marker.
const PAYLOAD: &str = "X\x1b[2J\x1b]0;pwned\x07\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\x1b]52;c;aGVsbG8=\x07\x1bPq#0;2\x1b\\\u{9b}31m\u{85}\u{9d}0;t\u{9c}\u{202e}Y";
/// What survives of [`PAYLOAD`] once sanitized (a one-line summary may fold the
/// NEL between the two halves into a space).
const VISIBLE: &str = "XlinkY";
const VISIBLE_START: &str = "Xlink";

/// A character a terminal acts on: C0 but newline, DEL, C1, the bidi controls.
fn is_raw_control(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

#[track_caller]
fn assert_inert(what: &str, run: &Run) {
    for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if let Some(c) = text.chars().find(|c| is_raw_control(*c)) {
            panic!("{what}: raw control {c:?} on {stream}:\n{text}");
        }
    }
}

/// `--json` output: inert on the wire, the agent's exact text once parsed.
#[track_caller]
fn assert_json_inert(what: &str, run: &Run) -> Value {
    assert_eq!(run.code, 0, "{what}: {run:#?}");
    assert_inert(what, run);
    let v: Value = serde_json::from_str(&run.stdout).expect("valid JSON");
    assert!(
        v.to_string().contains(&json!(PAYLOAD).to_string()[1..20]),
        "{what}: the payload should survive in the value:\n{}",
        run.stdout
    );
    v
}

fn p(prefix: &str) -> String {
    format!("{prefix} {PAYLOAD}")
}

fn landing_script() -> String {
    json!({"name": "hostile", "turns": [{"steps": [
        {"plan": {"entries": [{"content": p("step"), "status": "in_progress", "priority": "high"}],
                  "explanation": p("why")}},
        {"say": p("said")},
        {"report": {"kind": "progress", "summary": p("progress"), "detail": p("detail"),
                    "refs": [p("ref")]}},
        {"report": {"kind": "result", "summary": p("result"), "detail": p("result detail"),
                    "refs": [p("artifact")],
                    "handover": {"outcome": p("outcome"), "artifacts": [p("artifact")],
                                 "handoverForNext": p("next"), "caveats": p("caveats")}}},
        {"finish": {"status": "landed", "reason": p("verdict")}}
    ]}]})
    .to_string()
}

fn asking_script() -> String {
    json!({"name": "hostile-ask", "turns": [{"steps": [
        {"ask": {"summary": p("question"), "detail": p("question detail"),
                 "then": {"finish": {"status": "landed", "reason": p("answered")}}}}
    ]}]})
    .to_string()
}

fn erroring_script() -> String {
    json!({"name": "hostile-error", "turns": [{"steps": [
        {"error": {"message": p("crashed")}}
    ]}]})
    .to_string()
}

#[test]
fn no_raw_control_byte_from_an_agent_reaches_any_command_output() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[
        ("lands", Some(&landing_script())),
        ("asks", Some(&asking_script())),
        ("errs", Some(&erroring_script())),
    ]);

    let fired = sb.fire("lands", &p("intent"), &[]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert_inert("mission fire", &fired);
    assert!(
        fired
            .stdout
            .contains(&format!("Intent: intent {VISIBLE}\n")),
        "{fired:#?}"
    );
    assert!(
        fired
            .stdout
            .contains(&format!("finished: landed — verdict {VISIBLE}\n")),
        "{fired:#?}"
    );
    let landed = sb.newest_mission().unwrap();

    let errored = sb.fire("errs", "fail loudly", &[]);
    assert_eq!(errored.code, 1, "{errored:#?}");
    assert_inert("mission fire (errored turn)", &errored);
    assert!(
        errored.stdout.contains(&format!("crashed {VISIBLE_START}")),
        "{errored:#?}"
    );

    let bg = sb.fire_in_background("asks", &p("ask intent"), &[]);
    let ask = wait_for(20, "the question", || sb.pending_ask_ids().first().cloned());
    let asking = sb.newest_mission().unwrap();

    assert_inert("mission list", &sb.run(&["mission", "list"]).ok());
    for (what, args) in [
        ("mission show", vec!["mission", "show", &landed]),
        ("mission show (asking)", vec!["mission", "show", &asking]),
        ("mission reports", vec!["mission", "reports", &landed]),
        ("mission plan", vec!["mission", "plan", &landed]),
        ("mission asks", vec!["mission", "asks"]),
        ("mission asks <id>", vec!["mission", "asks", &asking]),
        ("approvals list", vec!["approvals", "list"]),
        ("inbox list", vec!["inbox", "list"]),
        ("inbox list --all", vec!["inbox", "list", "--all"]),
    ] {
        let run = sb.run(&args).ok();
        assert_inert(what, &run);
        assert!(
            run.stdout.contains(VISIBLE),
            "{what} lost the text:\n{run:#?}"
        );
    }
    let reports = sb.run(&["mission", "reports", &landed]).ok();
    for field in [
        "Summary: result",
        "Detail:",
        "Refs: ref",
        "  Outcome:  outcome",
        "  Artifacts: artifact",
        "  For next: next",
        "  Caveats:  caveats",
    ] {
        assert!(
            reports.stdout.contains(field),
            "{field}:\n{}",
            reports.stdout
        );
    }
    let plan = sb.run(&["mission", "plan", &landed]).ok();
    assert!(
        plan.stdout.contains(&format!("Rationale: why {VISIBLE}\n")),
        "{plan:#?}"
    );
    assert!(
        plan.stdout
            .contains(&format!("in_progress  high      step {VISIBLE}\n")),
        "{plan:#?}"
    );

    for (what, args) in [
        ("mission list --json", vec!["mission", "list", "--json"]),
        (
            "mission show --json",
            vec!["mission", "show", &landed, "--json"],
        ),
        (
            "mission show --json (asking)",
            vec!["mission", "show", &asking, "--json"],
        ),
        (
            "mission reports --json",
            vec!["mission", "reports", &landed, "--json"],
        ),
        (
            "mission plan --json",
            vec!["mission", "plan", &landed, "--json"],
        ),
        ("mission asks --json", vec!["mission", "asks", "--json"]),
        ("approvals list --json", vec!["approvals", "list", "--json"]),
        (
            "inbox list --json",
            vec!["inbox", "list", "--all", "--json"],
        ),
    ] {
        let v = assert_json_inert(what, &sb.run(&args));
        if what == "mission plan --json" {
            assert_eq!(v["plan"]["entries"][0]["content"], p("step"));
        }
    }

    let inbox = sb.run(&["inbox", "list", "--all"]).ok();
    let item = inbox.lines()[1]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let shown = sb.run(&["inbox", "show", &item]).ok();
    assert_inert("inbox show", &shown);
    assert!(shown.stdout.contains(VISIBLE), "{shown:#?}");
    assert_json_inert(
        "inbox show --json",
        &sb.run(&["inbox", "show", &item, "--json"]),
    );

    // Errors quote what they were given, inertly.
    let bad = sb.run(&["mission", "show", &p("no-such-mission")]);
    assert_eq!(bad.code, 1);
    assert_inert("mission show <hostile id>", &bad);
    assert!(
        bad.stderr.starts_with("Error: mission \"no-such-mission X"),
        "{bad:#?}"
    );

    let answered = sb.run(&["approvals", "respond", &ask, "--answer", &p("answer")]);
    assert_inert("approvals respond", &answered);
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert_inert("mission fire (asked)", &fired);
}

/// The output layer is the one place command text is written: a `println!` added
/// anywhere else in `src/cli/` would bypass the sanitizer (and the closed-stdout
/// handling), so it fails here, naming the file and line.
#[test]
fn every_command_writes_through_the_output_layer() {
    let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cli");
    let mut raw = Vec::new();
    for entry in std::fs::read_dir(&cli).unwrap().flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "out.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            // Also matches eprint! and eprintln!.
            if code.contains("print!") || code.contains("println!") {
                raw.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        raw.is_empty(),
        "write through cli::out (outln!, out!, out::json, out::notice) instead:\n{}",
        raw.join("\n")
    );
}
