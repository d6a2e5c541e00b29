//! Where the native agent's model settings come from.
//!
//! The host resolves them when it starts a native-agent unit — the declaration's
//! `model`, `base_url` and `api_key_env`, each falling back to its `model-*` config
//! key, and `model-timeout` — and hands them to the child explicitly in the `MISSIONBOARD_MODEL_*`
//! variables ([`crate::agents::Agent::unit_env`]), together with the API key variable itself (the unit
//! environment is otherwise scrubbed of secret-looking names). The agent reads, in
//! order: its own flags, those variables, then the config keys from the home
//! database opened read-only (for an editor that runs `missionboard agent`
//! directly), then the defaults.

use crate::agents::{ENV_API_KEY_ENV, ENV_BASE_URL, ENV_MODEL, ENV_MODEL_TIMEOUT};
use crate::config::{Config, MODEL_API_KEY_ENV, MODEL_BASE_URL, MODEL_NAME, MODEL_TIMEOUT};
use crate::model::ModelSettings;

/// The model flags of `missionboard agent`; each overrides everything else.
#[derive(Debug, Clone, Default)]
pub struct ModelFlags {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
}

/// The agent's settings: flags, then the host's variables, then the config read
/// from `db` (read-only; never created), then the defaults.
pub fn resolve(flags: &ModelFlags, db: &std::path::Path) -> ModelSettings {
    let from_env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let config = match crate::config::store_location(db) {
        Ok(crate::store::Location::File(p)) => {
            crate::store::Store::open_read_only(&p).ok().flatten()
        }
        Ok(shared) => crate::store::Store::open_at(&shared).ok(),
        Err(_) => None,
    }
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
        timeout: from_env(ENV_MODEL_TIMEOUT)
            .or_else(|| from_config(MODEL_TIMEOUT))
            .map_or(ModelSettings::DEFAULT_TIMEOUT, |v| {
                crate::config::model_call_timeout(&v)
            }),
    }
}
