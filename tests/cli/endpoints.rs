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
        "GOOGLE_GEMINI_BASE_URL",
        "GEMINI_CLI_HOME",
        "QWEN_HOME",
        "OPENAI_MODEL",
        "QWEN_MODEL",
        "GOOSE_PROVIDER",
        "GOOSE_PATH_ROOT",
        "OPENAI_HOST",
        "ANTHROPIC_HOST",
        "OLLAMA_HOST",
        "CLINE_PROVIDER",
        "CLINE_DATA_DIR",
        "CLINE_DIR",
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

/// The one `connect` grant line `doctor --agent` prints for `{model}` at `url`.
fn model_grant(agent: &str, url: &str, port: u16, found: &str) -> String {
    format!("Grant:     connect port {port}: {{model}}, {agent}'s endpoint {url} (from {found})")
}

#[test]
fn gemini_s_endpoint_comes_from_the_env_file_it_loads_unless_its_variable_is_set() {
    let sb = strict_home();
    let dotenv = sb.cwd.join(".gemini/.env");
    sb.write(
        &dotenv,
        "# the project's gemini settings\nGEMINI_API_KEY=not-a-real-key\nGOOGLE_GEMINI_BASE_URL=\"http://127.0.0.1:8126\"\n",
    );
    let run = doctor(&sb, "gemini", &[]);
    let found = format!("{}: GOOGLE_GEMINI_BASE_URL", dotenv.display());
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8126 (port 8126) — from {found}"
        )],
        "{run:#?}"
    );
    assert_eq!(
        lines_starting(&run, "Grant:     connect"),
        [model_grant("gemini", "http://127.0.0.1:8126", 8126, &found)],
        "exactly its endpoint's port: {run:#?}"
    );
    // Gemini CLI never overrides a variable its environment already holds.
    let run = doctor(
        &sb,
        "gemini",
        &[("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:7777")],
    );
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        ["Endpoint:  http://127.0.0.1:7777 (port 7777) — from GOOGLE_GEMINI_BASE_URL"],
        "{run:#?}"
    );
    // No project file: the one in the home directory's .gemini.
    std::fs::remove_file(&dotenv).unwrap();
    let home_env = sb.home.parent().unwrap().join(".gemini/.env");
    sb.write(&home_env, "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8127\n");
    let run = doctor(&sb, "gemini", &[]);
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8127 (port 8127) — from {}: GOOGLE_GEMINI_BASE_URL",
            home_env.display()
        )],
        "{run:#?}"
    );
}

#[test]
fn qwen_s_endpoint_comes_from_its_model_provider_then_its_env_files_then_its_settings() {
    let sb = strict_home();
    let settings = sb.home.parent().unwrap().join(".qwen/settings.json");
    sb.write(
        &settings,
        r#"{
  // the user's Qwen Code settings
  "security": {"auth": {"selectedType": "openai", "baseUrl": "http://127.0.0.1:8130/v1"}},
  "model": {"name": "local-coder"},
  "modelProviders": {"openai": [
    {"id": "other", "baseUrl": "http://127.0.0.1:9999/v1"},
    {"id": "local-coder", "envKey": "LOCAL_KEY", "baseUrl": "http://127.0.0.1:8128/v1"},
  ]},
}"#,
    );
    // The model's provider entry outranks the variable, as Qwen Code ranks them.
    let run = doctor(
        &sb,
        "qwen",
        &[("OPENAI_BASE_URL", "http://127.0.0.1:7777/v1")],
    );
    let found = format!(
        "{}: modelProviders.openai[id = \"local-coder\"].baseUrl",
        settings.display()
    );
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8128/v1 (port 8128) — from {found}"
        )],
        "{run:#?}"
    );
    assert_eq!(
        lines_starting(&run, "Grant:     connect"),
        [model_grant(
            "qwen",
            "http://127.0.0.1:8128/v1",
            8128,
            &found
        )],
        "exactly its endpoint's port: {run:#?}"
    );
    // A model with no provider entry: the project's .env names the base URL.
    sb.write(
        &settings,
        r#"{"security": {"auth": {"selectedType": "openai", "baseUrl": "http://127.0.0.1:8130/v1"}}}"#,
    );
    let dotenv = sb.cwd.join(".qwen/.env");
    sb.write(&dotenv, "OPENAI_BASE_URL=http://127.0.0.1:8129/v1\n");
    let run = doctor(&sb, "qwen", &[]);
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8129/v1 (port 8129) — from {}: OPENAI_BASE_URL",
            dotenv.display()
        )],
        "{run:#?}"
    );
    // Neither: the base URL its settings keep for its auth.
    std::fs::remove_file(&dotenv).unwrap();
    let run = doctor(&sb, "qwen", &[]);
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8130/v1 (port 8130) — from {}: security.auth.baseUrl",
            settings.display()
        )],
        "{run:#?}"
    );
}

#[test]
fn goose_s_endpoint_comes_from_its_provider_in_config_yaml_under_its_environment() {
    let sb = strict_home();
    let config = sb.home.parent().unwrap().join(".config/goose/config.yaml");
    sb.write(
        &config,
        "GOOSE_PROVIDER: ollama\nGOOSE_MODEL: qwen3\nOLLAMA_HOST: 127.0.0.1:8131\nextensions:\n  developer:\n    enabled: true\n",
    );
    let run = doctor(&sb, "goose", &[]);
    let found = format!(
        "{c}: OLLAMA_HOST (GOOSE_PROVIDER = \"ollama\" from {c}: GOOSE_PROVIDER)",
        c = config.display()
    );
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8131 (port 8131) — from {found}"
        )],
        "{run:#?}"
    );
    assert_eq!(
        lines_starting(&run, "Grant:     connect"),
        [model_grant("goose", "http://127.0.0.1:8131", 8131, &found)],
        "exactly its endpoint's port: {run:#?}"
    );
    // goose reads each setting from its environment before the file.
    let run = doctor(
        &sb,
        "goose",
        &[
            ("GOOSE_PROVIDER", "openai"),
            ("OPENAI_HOST", "http://127.0.0.1:8132"),
        ],
    );
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [
            "Endpoint:  http://127.0.0.1:8132 (port 8132) — from OPENAI_HOST (GOOSE_PROVIDER = \"openai\" from GOOSE_PROVIDER)"
        ],
        "{run:#?}"
    );
}

#[test]
fn cline_s_endpoint_comes_from_the_providers_json_of_the_provider_it_runs() {
    let sb = strict_home();
    let providers = sb
        .home
        .parent()
        .unwrap()
        .join(".cline/data/settings/providers.json");
    // As `cline auth -p openai -k … -m … -b http://127.0.0.1:8133/v1` writes it.
    sb.write(
        &providers,
        r#"{"version": 1, "lastUsedProvider": "openai-compatible", "providers": {"openai-compatible": {"settings": {"provider": "openai-compatible", "model": "m", "baseUrl": "http://127.0.0.1:8133/v1"}, "tokenSource": "manual"}}}"#,
    );
    let run = doctor(&sb, "cline", &[("CLINE_PROVIDER", "openai-compatible")]);
    let found = format!(
        "{}: providers.openai-compatible.settings.baseUrl (provider \"openai-compatible\": CLINE_PROVIDER)",
        providers.display()
    );
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        [format!(
            "Endpoint:  http://127.0.0.1:8133/v1 (port 8133) — from {found}"
        )],
        "{run:#?}"
    );
    assert_eq!(
        lines_starting(&run, "Grant:     connect"),
        [model_grant(
            "cline",
            "http://127.0.0.1:8133/v1",
            8133,
            &found
        )],
        "exactly its endpoint's port: {run:#?}"
    );
    // Without CLINE_PROVIDER its ACP mode runs its own account's provider.
    let run = doctor(&sb, "cline", &[]);
    assert_eq!(
        lines_starting(&run, "Endpoint:"),
        ["Endpoint:  https://api.cline.bot (port 443) — from its declaration"],
        "{run:#?}"
    );
}
