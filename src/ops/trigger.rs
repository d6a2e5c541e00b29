//! Webhook triggers: the operator's verbs (`trigger add|list|remove|rotate`) and
//! what the web server does with a delivery — check the signature, take the
//! parameters out of the JSON body, and queue the template's mission once per
//! delivery id. The web surface only maps each outcome to its HTTP status.

use std::path::PathBuf;

use crate::ops::host::Host;
use crate::ops::schedule::fill_at;
use crate::paths::Paths;
use crate::sched::template;
use crate::sched::triggers::{self, Delivered, Trigger, Triggers};

/// Check and record a trigger firing `template` with `params` (`key=$.path`);
/// returns it and its secret, which is shown this once.
pub fn add(
    host: &Host,
    name: &str,
    template_name: &str,
    params: &[(String, String)],
) -> anyhow::Result<(Trigger, String)> {
    let (paths, store) = (host.paths(), host.store());
    triggers::check_name(name).map_err(anyhow::Error::msg)?;
    let loaded = template::load(paths, template_name).map_err(anyhow::Error::msg)?;
    let declared = &loaded.template.params;
    for (key, path) in params {
        if !declared.contains_key(key) {
            let known: Vec<&str> = declared.keys().map(String::as_str).collect();
            anyhow::bail!(
                "unknown template parameter {key:?} for template {template_name:?}: it takes {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        }
        triggers::check_path(path).map_err(|e| anyhow::anyhow!("{key}: {e}"))?;
    }
    for (key, p) in declared {
        if p.default.is_none() && !params.iter().any(|(k, _)| k == key) {
            anyhow::bail!(
                "template {template_name:?} needs parameter {key:?}, which has no default: map it to the body, e.g. {key}=$.{key}"
            );
        }
    }
    let t = Trigger {
        name: name.to_string(),
        template: template_name.to_string(),
        params: params.to_vec(),
        cwd: paths.cwd.display().to_string(),
        secret_sha: String::new(),
        created_at: crate::clock::now_ms(),
        last_at: None,
        last_outcome: None,
        last_mission: None,
    };
    let secret = crate::devices::mint_secret();
    if !Triggers::new(store.clone()).add(&paths.home, &t, &secret)? {
        anyhow::bail!(
            "a trigger named {name:?} exists — 'missionboard trigger rotate {name}' for a new secret, or 'trigger remove {name}' first"
        );
    }
    Ok((t, secret))
}

/// A new secret for trigger `name` (shown this once); the old one stops working.
pub fn rotate(host: &Host, name: &str) -> anyhow::Result<String> {
    let secret = crate::devices::mint_secret();
    if !Triggers::new(host.store().clone()).rotate(&host.paths().home, name, &secret)? {
        return Err(no_such(name));
    }
    Ok(secret)
}

pub fn remove(host: &Host, name: &str) -> anyhow::Result<()> {
    if !Triggers::new(host.store().clone()).remove(&host.paths().home, name)? {
        return Err(no_such(name));
    }
    Ok(())
}

fn no_such(name: &str) -> anyhow::Error {
    anyhow::anyhow!("no trigger is named {name:?} — 'missionboard trigger list' shows them")
}

/// Why a delivery fired nothing, each with the status the web answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// No trigger of that name (404).
    Unknown,
    /// No signature, or not the body's under the trigger's secret (401).
    BadSignature,
    /// This home holds no secret for the trigger, or another one than the store's
    /// fingerprint (503: the server, not the sender, must be fixed).
    NoSecretHere,
    /// The delivery id was seen before (409).
    Replayed,
    /// The body is not a JSON object, or lacks a parameter's path (400).
    BadBody(String),
    /// The template no longer fills or fires (422).
    FireRefused(String),
    /// The store could not be reached (503).
    Store(String),
}

impl Refused {
    pub fn status(&self) -> u16 {
        match self {
            Refused::Unknown => 404,
            Refused::BadSignature => 401,
            Refused::NoSecretHere | Refused::Store(_) => 503,
            Refused::Replayed => 409,
            Refused::BadBody(_) => 400,
            Refused::FireRefused(_) => 422,
        }
    }

    /// The words the sender is told (never the secret, never the template's text).
    pub fn message(&self) -> String {
        match self {
            Refused::Unknown => "no such trigger".into(),
            Refused::BadSignature => "bad or missing X-Hub-Signature-256".into(),
            Refused::NoSecretHere => "this server holds no secret for the trigger: run the web server with the home where the trigger was added".into(),
            Refused::Replayed => "this delivery was received before; nothing fired".into(),
            Refused::BadBody(why) | Refused::FireRefused(why) => why.clone(),
            Refused::Store(_) => "the store is unavailable".into(),
        }
    }
}

/// The trigger `name`, if `signature` signs `body` with its secret. Checked before
/// anything else is read from the body.
pub fn verify(
    host: &Host,
    name: &str,
    signature: Option<&str>,
    body: &[u8],
) -> Result<Trigger, Refused> {
    let (paths, store) = (host.paths(), host.store());
    if triggers::check_name(name).is_err() {
        return Err(Refused::Unknown);
    }
    let t = Triggers::new(store.clone())
        .get(name)
        .map_err(|e| Refused::Store(e.to_string()))?
        .ok_or(Refused::Unknown)?;
    let secret = triggers::read_secret(&paths.home, name)
        .filter(|s| triggers::fingerprint(s) == t.secret_sha)
        .ok_or(Refused::NoSecretHere)?;
    match signature {
        Some(sig) if triggers::signature_valid(&secret, body, sig) => Ok(t),
        _ => Err(Refused::BadSignature),
    }
}

/// Fire verified trigger `t` for one delivery: its parameters from `body`, queued
/// once per `delivery` id (a delivery without one is keyed by its body's digest, so
/// the same signed body cannot be replayed either). Returns the mission's id.
pub fn deliver(
    host: &Host,
    t: &Trigger,
    delivery: Option<&str>,
    body: &[u8],
) -> Result<String, Refused> {
    let (paths, store) = (host.paths(), host.store());
    let json: serde_json::Value = serde_json::from_slice(body)
        .ok()
        .filter(serde_json::Value::is_object)
        .ok_or_else(|| Refused::BadBody("the body must be a JSON object".into()))?;
    let mut pairs = Vec::new();
    for (key, path) in &t.params {
        match triggers::extract(&json, path) {
            Some(v) => pairs.push((key.clone(), v)),
            None => {
                return Err(Refused::BadBody(format!(
                    "the body has no text, number or boolean at {path} for parameter {key}"
                )));
            }
        }
    }
    let key = match delivery.map(str::trim).filter(|d| !d.is_empty()) {
        Some(d) if d.len() <= 200 && !d.chars().any(char::is_control) => d.to_string(),
        Some(_) => {
            return Err(Refused::BadBody(
                "X-GitHub-Delivery is not a delivery id".into(),
            ));
        }
        None => format!(
            "sha256:{}",
            triggers::fingerprint(&String::from_utf8_lossy(body))
        ),
    };
    let there = Paths::resolve(paths.home.clone(), PathBuf::from(&t.cwd));
    let queued = fill_at(host, &there, &t.template, &pairs)
        .and_then(|tf| {
            let mut fire = tf.fire;
            fire.cwd = Some(PathBuf::from(&t.cwd));
            crate::ops::fire::queued_record(&there, fire, tf.on.as_deref())
        })
        .map_err(|e| {
            let why = format!("{e:#}");
            let _ = Triggers::new(store.clone()).note(&t.name, &format!("refused: {why}"));
            Refused::FireRefused(why)
        })?;
    let mission_id = uuid::Uuid::new_v4().to_string();
    match Triggers::new(store.clone()).deliver(&t.name, &key, &mission_id, &queued) {
        Ok(Delivered::Fired) => Ok(mission_id),
        Ok(Delivered::Replayed) => Err(Refused::Replayed),
        Err(e) => Err(Refused::Store(e.to_string())),
    }
}
