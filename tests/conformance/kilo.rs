//! Kilo (`kilo acp`, the Kilo Code CLI, built on opencode), on the scripted OpenAI
//! Chat Completions API through an OpenAI-compatible provider named in the project's
//! `kilo.json`.

use std::path::Path;

use crate::cases;
use crate::harness::{Conformer, Model, Pin};
use crate::opencode;

pub static KILO: Conformer = Conformer {
    name: "kilo",
    pin: Pin {
        package: "@kilocode/cli",
        version: "7.7.7",
        bin: "kilo",
    },
    api: "openai_chat",
    provider_env,
    mission_tool: opencode::mission_tool,
    write_call: opencode::write_call,
    shell_call: opencode::shell_call,
    workspace_setup: Some(workspace_setup),
};

/// opencode's offline variables under Kilo's names, and what Kilo adds that no case
/// needs, each slow on a loaded machine: its codebase index, session upload,
/// presence, default plugins, external skills, Claude Code's.
fn provider_env(_model: &Model) -> Vec<(String, String)> {
    opencode::offline_env(
        "KILO",
        &[
            "CODEBASE_INDEXING",
            "SESSION_INGEST",
            "PRESENCE",
            "DEFAULT_PLUGINS",
            "EXTERNAL_SKILLS",
            "CLAUDE_CODE",
        ],
    )
}

/// The project config a user writes to point Kilo at an OpenAI-compatible server:
/// opencode's, in `kilo.json`.
fn workspace_setup(workspace: &Path, model: &Model) {
    opencode::write_project_config(&workspace.join("kilo.json"), model);
}

// Kilo is opencode's code under another name, with a runtime twice its size: a
// unit's handshake alone costs it about 8 s of CPU and 700 MB (opencode: 4.5 s and
// 500 MB), most of it loading its 170 MB binary and starting services no case
// uses, none of which a variable turns off. Its every case in `cargo test` would add
// minutes of a newcomer's two cores to prove again what opencode's cases prove of the
// same code, so `cargo test` runs a sample: one case of each operator path (land on
// its own config's endpoint, a gated write, a question, a strict deny, a stop, a
// killed host answered later), each a path where Kilo's own parts (kilo.json, its
// state dirs, its sandbox-policy dir, its permission frames) are what is exercised.
// `every_case` holds them all (14 cases, about 3 minutes on two cores); `.ci/run`
// runs them: `cargo test --test conformance -- --ignored kilo::every_case::`.

/// A custom endpoint under `strict`: the scripted server on loopback named only in
/// the project's kilo.json (no `OPENAI_BASE_URL`, no hand grant) — its port is
/// the one `{model}` opens, and the mission lands.
#[test]
fn lands_under_strict_on_the_endpoint_its_kilo_json_names() {
    cases::lands(&KILO, "strict");
}

#[test]
fn gated_write_approved_under_strict() {
    cases::gated_write_approved(&KILO, "strict");
}

#[test]
fn question_answered_under_default() {
    cases::question_answered(&KILO, "default");
}

#[test]
fn denied_call_under_strict() {
    cases::denied_call(&KILO, "strict");
}

#[test]
fn stopped_under_strict() {
    cases::stopped(&KILO, "strict");
}

#[test]
fn killed_host_resumed_under_default() {
    cases::killed_host_resumed(&KILO, "default");
}

/// Every operator case, as for the other agents (the sample above included).
mod every_case {
    use super::KILO;

    crate::cases::agent_cases!(
        #[ignore = "cargo test runs kilo's sample; .ci/run runs every case (--ignored kilo::every_case::)"]
        KILO,
        killed_host,
        hitl
    );
}
