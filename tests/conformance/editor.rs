//! A published one-shot ACP client against `missionboard acp`: `acpx exec` sends
//! one prompt and hangs up as soon as it is answered. A mission it fires must not
//! be stranded open with its host gone: the session's end settles it, and its
//! reports wait in the operator inbox.

use std::process::Command;

use serde_json::{Value, json};

use crate::common::script;
use crate::harness::{Pin, Sandbox, install, wait_for};

/// The headless ACP client, pinned.
const ACPX: Pin = Pin {
    package: "acpx",
    version: "0.19.1",
    bin: "acpx",
};

/// Reports, then works for longer than the test runs.
const WORKS_LONG: &str = r#"{"report":{"summary":"working"}},{"sleep":120000},{"finish":"landed"}"#;

/// `acpx exec <prompt>` against `missionboard acp` in the sandbox's home and
/// workspace: its exit code and what it printed.
fn acpx_exec(sb: &Sandbox, prompt: &str) -> (i32, String) {
    let acpx = install(&ACPX);
    // The sandbox's own environment for the client, and so for the agent it starts.
    let base = sb.command(&["acp"]);
    let agent = format!("{} acp", std::path::Path::new(base.get_program()).display());
    let mut c = Command::new(&acpx);
    for (k, v) in base.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.current_dir(&sb.cwd)
        .args(["--agent", &agent, "--cwd"])
        .arg(&sb.cwd)
        .args(["--format", "text", "--timeout", "120", "exec", prompt]);
    let out = sb.run_with(c);
    (out.code, format!("{}{}", out.stdout, out.stderr))
}

fn show(sb: &Sandbox, id: &str) -> Value {
    serde_json::from_str(&sb.run(&["mission", "show", id, "--json"]).ok().stdout).unwrap()
}

#[test]
fn acpx_exec_slash_mission_without_a_host_ends_the_mission_with_the_session_and_files_its_reports()
{
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    sb.declare_stubs(&[("worker", Some(&script(WORKS_LONG)))]);
    sb.run(&["config", "set", "default-mission-policy", "default"])
        .ok();

    let (code, said) = acpx_exec(&sb, "/mission worker tidy the docs");
    assert_eq!(code, 0, "{said}");
    assert!(
        said.contains("Mission fired at named agent \"worker\" under envelope \"default\" (default-mission-policy).\n"),
        "{said}"
    );
    assert!(
        said.contains("if the session ends first (the editor hangs up, or missionboard acp exits), a run waiting on a question stays parked and resumes when the question is answered, any other run ends abandoned, and its reports wait in the operator inbox."),
        "the confirmation says what the session's end does: {said}"
    );
    let id = said
        .lines()
        .find(|l| l.starts_with("Mission ") && l.contains(" (instance "))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or_else(|| panic!("a mission line: {said}"))
        .to_string();

    // The client has hung up; once missionboard acp has gone, the mission rests.
    let record = wait_for(60, "the mission to be settled", || {
        let v = show(&sb, &id);
        (v["status"] != json!("open")).then_some(v)
    });
    assert_eq!(record["status"], json!("abandoned"), "{record:#}");
    assert_eq!(
        record["statusReason"],
        json!(
            "its editor session ended (the editor hung up) before it finished, and nothing could resume it"
        ),
        "{record:#}"
    );
    let inbox: Value =
        serde_json::from_str(&sb.run(&["inbox", "list", "--json"]).ok().stdout).unwrap();
    let items: Vec<&Value> = inbox["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["missionId"] == json!(id))
        .collect();
    let reports = record["reports"].as_array().unwrap();
    assert!(
        reports
            .iter()
            .any(|r| r["summary"] == json!("Mission ended: the session that fired it ended.")),
        "{record:#}"
    );
    for r in reports {
        let item = items
            .iter()
            .find(|i| i["report"]["id"] == r["id"])
            .unwrap_or_else(|| panic!("report {r} is not in the inbox: {items:#?}"));
        assert_eq!(item["reason"], json!("parent_gone"), "{item:#}");
    }
}
