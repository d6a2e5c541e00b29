//! Where the native agent's model settings come from.
//!
//! The host resolves them when it starts a native-agent unit — the declaration's
//! `model`, `base_url` and `api_key_env`, each falling back to its `model-*` config
//! key — and hands them to the child explicitly in the `MISSIONBOARD_MODEL_*`
//! variables below, together with the API key variable itself (the unit
//! environment is otherwise scrubbed of secret-looking names). The agent reads, in
//! order: its own flags, those variables, then the config keys from the home
//! database opened read-only (for an editor that runs `missionboard agent`
//! directly), then the defaults.

use std::collections::BTreeMap;

use crate::agents::Agent;
use crate::config::{Config, MODEL_API_KEY_ENV, MODEL_BASE_URL, MODEL_NAME};
use crate::model::ModelSettings;

/// The endpoint, as the host passes it to a native-agent unit.
pub const ENV_BASE_URL: &str = "MISSIONBOARD_MODEL_BASE_URL";
/// The model name.
pub const ENV_MODEL: &str = "MISSIONBOARD_MODEL_NAME";
/// The name of the variable that holds the endpoint's API key.
pub const ENV_API_KEY_ENV: &str = "MISSIONBOARD_MODEL_API_KEY_ENV";

/// The model flags of `missionboard agent`; each overrides everything else.
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
}

/// The environment for a unit of `agent`: its declared env, plus — for the native
/// agent — the resolved model settings and the API key they name.
pub fn unit_env(agent: &Agent, config: &Config) -> anyhow::Result<BTreeMap<String, String>> {
    let mut env = agent.env.clone();
    if !agent.is_native_agent() {
        return Ok(env);
    }
    let keys = &agent.model;
    let pick = |declared: &Option<String>, key: &str| -> anyhow::Result<Option<String>> {
        match declared.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
            Some(v) => Ok(Some(v.to_string())),
            None => config.get(key),
        }
    };
    let settings = [
        (ENV_BASE_URL, pick(&keys.base_url, MODEL_BASE_URL)?),
        (ENV_MODEL, pick(&keys.model, MODEL_NAME)?),
        (ENV_API_KEY_ENV, pick(&keys.api_key_env, MODEL_API_KEY_ENV)?),
    ];
    for (name, value) in settings {
        if let Some(value) = value {
            if name == ENV_API_KEY_ENV
                && !env.contains_key(&value)
                && let Ok(key) = std::env::var(&value)
            {
                env.insert(value.clone(), key);
            }
            env.insert(name.to_string(), value);
        }
    }
    Ok(env)
}

/// The agent's settings: flags, then the host's variables, then the config read
/// from `db` (read-only; never created), then the defaults.
pub fn resolve(flags: &ModelFlags, db: &std::path::Path) -> ModelSettings {
    let from_env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let config = crate::store::Store::open_read_only(db)
        .ok()
        .flatten()
        .map(Config::new);
    let from_config = |key: &str| config.as_ref().and_then(|c| c.get(key).ok().flatten());
    let pick = |flag: &Option<String>, env: &str, key: &str| {
        flag.clone()
            .or_else(|| from_env(env))
            .or_else(|| from_config(key))
    };
    ModelSettings {
        base_url: pick(&flags.base_url, ENV_BASE_URL, MODEL_BASE_URL)
            .unwrap_or_else(|| "http://127.0.0.1:11434/v1".to_string()),
        model: pick(&flags.model, ENV_MODEL, MODEL_NAME),
        api_key_env: pick(&flags.api_key_env, ENV_API_KEY_ENV, MODEL_API_KEY_ENV),
        timeout: ModelSettings::DEFAULT_TIMEOUT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::ModelKeys;

    fn agent(args: &[&str], model: ModelKeys) -> Agent {
        Agent {
            name: "p".into(),
            command: "missionboard".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            description: String::new(),
            model,
            state_dirs: Vec::new(),
            source: "/x/agents.toml".into(),
        }
    }

    fn config() -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("board.db")).unwrap();
        (dir, Config::new(store))
    }

    #[test]
    fn the_declaration_wins_and_config_fills_the_rest() {
        let (_dir, config) = config();
        config.set(MODEL_NAME, "from-config").unwrap();
        config
            .set(MODEL_API_KEY_ENV, "MB_TEST_UNSET_KEY_VAR")
            .unwrap();
        let a = agent(
            &["agent"],
            ModelKeys {
                base_url: Some("http://127.0.0.1:8080/v1".into()),
                ..Default::default()
            },
        );
        let env = unit_env(&a, &config).unwrap();
        assert_eq!(env[ENV_BASE_URL], "http://127.0.0.1:8080/v1");
        assert_eq!(env[ENV_MODEL], "from-config");
        assert_eq!(env[ENV_API_KEY_ENV], "MB_TEST_UNSET_KEY_VAR");
        assert!(
            !env.contains_key("MB_TEST_UNSET_KEY_VAR"),
            "unset in the host, so not invented"
        );
    }

    #[test]
    fn other_agents_get_only_their_declared_env() {
        let (_dir, config) = config();
        let env = unit_env(&agent(&["stub-agent"], ModelKeys::default()), &config).unwrap();
        assert!(env.is_empty());
    }
}
