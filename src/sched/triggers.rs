//! Webhook triggers: a name the web server answers `POST /hooks/<name>` for, the
//! template it fires and where each parameter comes from in the request's JSON body
//! (`ref=$.ref`).
//!
//! Its secret signs the request (HMAC-SHA256 of the body), so the verifier needs
//! the secret itself, not a hash of it: it lives in a file of the home
//! (`triggers/<name>.secret`, mode 0600 in a 0700 directory, beside the store's own
//! file and the logs), written once at `trigger add` or `rotate` and shown once.
//! The store keeps only its SHA-256 fingerprint, which tells a web server whose
//! home holds no secret, or another one, from a bad signature. Neither is logged.

use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::clock;
use crate::mission::queue::NewQueued;
use crate::store::sql::{OptionalExtension, Row, params};
use crate::store::{Store, StoreError};

pub(crate) const SCHEMA_V18: &str = "
CREATE TABLE triggers (
    name         TEXT PRIMARY KEY NOT NULL,
    template     TEXT NOT NULL,
    params       TEXT NOT NULL,
    cwd          TEXT NOT NULL,
    secret_sha   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_at      INTEGER,
    last_outcome TEXT,
    last_mission TEXT
);";

/// The PostgreSQL spelling of [`SCHEMA_V18`].
pub(crate) const PG_SCHEMA_V18: &str = "
CREATE TABLE triggers (
    name         TEXT PRIMARY KEY NOT NULL,
    template     TEXT NOT NULL,
    params       TEXT NOT NULL,
    cwd          TEXT NOT NULL,
    secret_sha   TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    last_at      BIGINT,
    last_outcome TEXT,
    last_mission TEXT
);";

/// A trigger as stored (never its secret).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trigger {
    pub name: String,
    pub template: String,
    /// `(parameter, JSON path)`, e.g. `("ref", "$.ref")`.
    pub params: Vec<(String, String)>,
    pub cwd: String,
    #[serde(skip)]
    pub secret_sha: String,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub created_at: i64,
    #[serde(serialize_with = "clock::ser_opt_rfc3339")]
    pub last_at: Option<i64>,
    pub last_outcome: Option<String>,
    pub last_mission: Option<String>,
}

const COLUMNS: &str =
    "name, template, params, cwd, secret_sha, created_at, last_at, last_outcome, last_mission";

fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Trigger> {
    let params: String = r.get(2)?;
    Ok(Trigger {
        name: r.get(0)?,
        template: r.get(1)?,
        params: serde_json::from_str(&params).unwrap_or_default(),
        cwd: r.get(3)?,
        secret_sha: r.get(4)?,
        created_at: r.get(5)?,
        last_at: r.get(6)?,
        last_outcome: r.get(7)?,
        last_mission: r.get(8)?,
    })
}

/// A trigger name: a bare word, as it appears in the hook's URL path.
pub fn check_name(name: &str) -> Result<(), String> {
    super::check_name("trigger", name)
        .map_err(|e| format!("{e} (it is the hook's path: /hooks/<name>)"))
}

/// A parameter's JSON path: `$` then `.key` steps (a key of letters, digits, `-`
/// and `_`) or `[index]` steps. The refusal shows the form.
pub fn check_path(path: &str) -> Result<Vec<Step>, String> {
    let bad = || {
        format!(
            "JSON path {path:?} is not a simple path: write $.field, $.nested.field or $.list[0]"
        )
    };
    let mut rest = path.strip_prefix('$').ok_or_else(bad)?;
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            if key.is_empty()
                || !key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(bad());
            }
            steps.push(Step::Key(key.to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']').ok_or_else(bad)?;
            steps.push(Step::Index(r[..end].parse().map_err(|_| bad())?));
            rest = &r[end + 1..];
        } else {
            return Err(bad());
        }
    }
    if steps.is_empty() {
        return Err(bad());
    }
    Ok(steps)
}

/// One step of a JSON path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(usize),
}

/// The value at `path` in `body` as a parameter's text: a string as it is, a
/// number or a boolean as written; `None` when the path leads nowhere or to an
/// object, an array or null.
pub fn extract(body: &serde_json::Value, path: &str) -> Option<String> {
    let mut at = body;
    for step in check_path(path).ok()? {
        at = match step {
            Step::Key(k) => at.get(&k)?,
            Step::Index(i) => at.get(i)?,
        };
    }
    match at {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Where trigger secrets live under the home.
pub fn secret_dir(home: &Path) -> PathBuf {
    home.join("triggers")
}

fn secret_file(home: &Path, name: &str) -> PathBuf {
    secret_dir(home).join(format!("{name}.secret"))
}

/// Write `secret` as trigger `name`'s, readable by its owner only.
pub fn write_secret(home: &Path, name: &str, secret: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    crate::paths::create_private_dir(&secret_dir(home))?;
    let path = secret_file(home, name);
    let tmp = path.with_extension("secret.new");
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(secret.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path)
}

/// Trigger `name`'s secret from this home, if it holds one.
pub fn read_secret(home: &Path, name: &str) -> Option<String> {
    std::fs::read_to_string(secret_file(home, name))
        .ok()
        .map(|s| s.trim().to_string())
}

fn remove_secret(home: &Path, name: &str) {
    let _ = std::fs::remove_file(secret_file(home, name));
}

/// The SHA-256 fingerprint the store keeps of a secret.
pub fn fingerprint(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `header` (`sha256=<hex>`, as GitHub sends `X-Hub-Signature-256`) is the
/// HMAC-SHA256 of `body` under `secret`. The comparison is constant-time (the MAC
/// crate's own verify).
pub fn signature_valid(secret: &str, body: &[u8], header: &str) -> bool {
    let Some(hex_sig) = header.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Some(sig) = unhex(hex_sig) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
        return false;
    };
    mac.update(body);
    mac.verify_slice(&sig).is_ok()
}

/// `sha256=<hex>` for `body` under `secret` (what a sender puts in the header).
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body);
    format!("sha256={}", hex(&mac.finalize().into_bytes()))
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// What a delivery came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivered {
    Fired,
    /// Its delivery id was seen before: nothing fired.
    Replayed,
}

/// The triggers service.
#[derive(Clone)]
pub struct Triggers {
    store: Store,
}

impl Triggers {
    pub fn new(store: Store) -> Triggers {
        Triggers { store }
    }

    /// Record trigger `t` and write its secret into `home`; `false` if one of that
    /// name exists (nothing written).
    pub fn add(&self, home: &Path, t: &Trigger, secret: &str) -> anyhow::Result<bool> {
        let params = serde_json::to_string(&t.params)?;
        let added = self.store.write(|c| {
            Ok(c.execute(
                "INSERT INTO triggers (name, template, params, cwd, secret_sha, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (name) DO NOTHING",
                params![
                    t.name,
                    t.template,
                    params,
                    t.cwd,
                    fingerprint(secret),
                    t.created_at
                ],
            )? == 1)
        })?;
        if added && let Err(e) = write_secret(home, &t.name, secret) {
            self.store
                .write(|c| c.execute("DELETE FROM triggers WHERE name = ?1", params![t.name]))?;
            anyhow::bail!(
                "could not write the trigger's secret under {}: {e}",
                secret_dir(home).display()
            );
        }
        Ok(added)
    }

    pub fn get(&self, name: &str) -> Result<Option<Trigger>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM triggers WHERE name = ?1");
        self.store
            .with(|c| c.query_row(&sql, params![name], from_row).optional())
    }

    pub fn list(&self) -> Result<Vec<Trigger>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM triggers ORDER BY name");
        self.store.with(|c| c.query_map(&sql, [], from_row))
    }

    /// Replace trigger `name`'s secret; `false`: no such trigger.
    pub fn rotate(&self, home: &Path, name: &str, secret: &str) -> anyhow::Result<bool> {
        if self.get(name)?.is_none() {
            return Ok(false);
        }
        write_secret(home, name, secret)?;
        Ok(self.store.write(|c| {
            Ok(c.execute(
                "UPDATE triggers SET secret_sha = ?2 WHERE name = ?1",
                params![name, fingerprint(secret)],
            )? == 1)
        })?)
    }

    /// Remove trigger `name` and its secret; `false`: no such trigger.
    pub fn remove(&self, home: &Path, name: &str) -> Result<bool, StoreError> {
        let removed = self.store.write(|c| {
            Ok(c.execute("DELETE FROM triggers WHERE name = ?1", params![name])? == 1)
        })?;
        if removed {
            remove_secret(home, name);
        }
        Ok(removed)
    }

    /// Record delivery `delivery` of trigger `name` and queue `queued` (as mission
    /// `mission_id`) in one transaction, unless that delivery id was recorded
    /// before.
    pub fn deliver(
        &self,
        name: &str,
        delivery: &str,
        mission_id: &str,
        queued: &NewQueued,
    ) -> Result<Delivered, StoreError> {
        let now = clock::now_ms();
        let outcome = format!("fired mission {mission_id} (delivery {delivery})");
        self.store.write(|c| {
            if !super::schedules::record_fire(c, "trigger", name, delivery, Some(mission_id), &outcome, now)? {
                return Ok(Delivered::Replayed);
            }
            crate::mission::queue::insert_queued(c, mission_id, queued, now)?;
            c.execute(
                "UPDATE triggers SET last_at = ?2, last_outcome = ?3, last_mission = ?4 WHERE name = ?1",
                params![name, now, outcome, mission_id],
            )?;
            Ok(Delivered::Fired)
        })
    }

    /// Note a delivery that fired nothing (a template that no longer fills, …).
    pub fn note(&self, name: &str, outcome: &str) -> Result<(), StoreError> {
        let now = clock::now_ms();
        self.store.write(|c| {
            c.execute(
                "UPDATE triggers SET last_at = ?2, last_outcome = ?3 WHERE name = ?1",
                params![name, now, outcome],
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_verify_only_with_the_secret_and_the_body() {
        let body = br#"{"ref":"refs/tags/v1"}"#;
        let header = sign("s3cret", body);
        assert!(signature_valid("s3cret", body, &header));
        assert!(!signature_valid("other", body, &header));
        assert!(!signature_valid("s3cret", b"{}", &header));
        assert!(!signature_valid("s3cret", body, "sha256=zz"));
        assert!(!signature_valid(
            "s3cret",
            body,
            &header.replace("sha256=", "sha1=")
        ));
    }

    #[test]
    fn simple_paths_extract_scalars() {
        let v: serde_json::Value =
            serde_json::from_str(r#"{"ref":"v1","repo":{"name":"x","n":3},"l":[{"a":true}]}"#)
                .unwrap();
        assert_eq!(extract(&v, "$.ref").as_deref(), Some("v1"));
        assert_eq!(extract(&v, "$.repo.name").as_deref(), Some("x"));
        assert_eq!(extract(&v, "$.repo.n").as_deref(), Some("3"));
        assert_eq!(extract(&v, "$.l[0].a").as_deref(), Some("true"));
        assert_eq!(extract(&v, "$.repo"), None);
        assert_eq!(extract(&v, "$.nope"), None);
        for bad in ["ref", "$", "$.", "$..a", "$.a[x]", "$.a b"] {
            assert!(check_path(bad).is_err(), "{bad:?}");
        }
    }
}
