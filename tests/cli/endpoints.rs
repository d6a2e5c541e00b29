//! Endpoints read where each agent reads them: `doctor --agent` names the endpoint and
//! where it was found, and `{model}` under a limited connect opens exactly its port.

use crate::harness::{Run, Sandbox};

/// `doctor --agent <name>` under `strict`, with the agent's own config variables only.
fn doctor(sb: &Sandbox, name: &str, env: &[(&str, &str)]) -> Run {
    let mut cmd = sb.command(&["doctor", "--agent", name]);
    cmd.env("PATH", "/usr/bin:/bin");
    for var in [
        "CODEX_HOME",
        "OPENAI_BASE_URL",
        "XDG_CONFIG_HOME",
        "OPENCODE_CONFIG",
        "OPENCODE_CONFIG_CONTENT",
        "ANTHROPIC_BASE_URL",
        "CLAUDE_CONFIG_DIR",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    sb.run_with(cmd)
}

fn lines_starting<'a>(run: &'a Run, prefix: &str) -> Vec<&'a str> {
    run.lines()
        .into_iter()
        .filter(|l| l.starts_with(prefix))
        .collect()
}

fn strict_home() -> Sandbox {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    sb.run(&["config", "set", "default-mission-policy", "strict"])
        .ok();
    sb
}

#[test]
fn codex_s_endpoint_comes_from_the_provider_its_config_toml_selects() {
    let sb = strict_home();
    let codex_home = sb.home.parent().unwrap().join("codex-home");
    let config = codex_home.join("config.toml");
    sb.write(
        &config,
        "model_provider = \"local\"\n\n[model_providers.local]\nname = \"local\"\nbase_url = \"http://127.0.0.1:8123/v1\"\n\n[model_providers.unused]\nbase_url = \"http://127.0.0.1:9999/v1\"\n",
    );
    // OPENAI_BASE_URL is not where codex looks: it changes nothing.
    let run = doctor(
        &sb,
        "codex",
        &[
            ("CODEX_HOME", &codex_home.display().to_string()),
            ("OPENAI_BASE_URL", "http://127.0.0.1:7777/v1"),
        ],
    );
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8123/v1 (port 8123) — from {}: model_providers.local.base_url (model_provider = \"local\")",
            config.display()
        )],
        "{run:#?}"
    );
    assert_eq!(
        lines_starting(&run, "Grant:     connect"),
        [format!(
            "Grant:     connect port 8123: {{model}}, codex's endpoint http://127.0.0.1:8123/v1 (from {}: model_providers.local.base_url (model_provider = \"local\"))",
            config.display()
        )],
        "{run:#?}"
    );
    // No config at all: codex's built-in openai provider, and only its port.
    let run = doctor(&sb, "codex", &[]);
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  https://api.openai.com/v1 (port 443) — from codex's built-in openai provider ({} sets no openai_base_url)",
            sb.home
                .parent()
                .unwrap()
                .join(".codex/config.toml")
                .display()
        )],
        "{run:#?}"
    );
}

#[test]
fn opencode_s_endpoint_comes_from_its_model_s_provider_in_the_project_config() {
    let sb = strict_home();
    let project = sb.cwd.join("opencode.json");
    sb.write(
        &project,
        r#"{
  // a user's project config, as opencode reads it
  "provider": {"local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "http://127.0.0.1:8124/v1"}}},
  "model": "local/qwen3",
}"#,
    );
    let run = doctor(&sb, "opencode", &[]);
    let found = format!(
        "{}: provider.local.options.baseURL (model \"local/qwen3\" in {})",
        project.display(),
        project.display()
    );
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8124/v1 (port 8124) — from {found}"
        )],
        "{run:#?}"
    );
    let connects = lines_starting(&run, "Grant:     connect");
    assert_eq!(
        connects[0],
        format!(
            "Grant:     connect port 8124: {{model}}, opencode's endpoint http://127.0.0.1:8124/v1 (from {found})"
        ),
        "{run:#?}"
    );
    assert!(
        !connects.iter().any(|l| l.contains("port 443")),
        "exactly its endpoint's port: {connects:#?}"
    );
}

#[test]
fn claude_s_endpoint_comes_from_its_settings_env_before_the_variable() {
    let sb = strict_home();
    let settings = sb.cwd.join(".claude/settings.json");
    sb.write(
        &settings,
        r#"{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:8125"}}"#,
    );
    let run = doctor(
        &sb,
        "claude",
        &[("ANTHROPIC_BASE_URL", "http://127.0.0.1:7777")],
    );
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8125 (port 8125) — from {}: env.ANTHROPIC_BASE_URL",
            settings.display()
        )],
        "{run:#?}"
    );
}
