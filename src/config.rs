//! Operator configuration: a small set of known keys, durable in the `config` table.
//!
//! Every key is validated on `set` against its kind, so a typo never lands silently;
//! `get` returns the stored value or the key's default.

use std::path::Path;
use std::time::Duration;

use crate::store::sql::{OptionalExtension, params};

use crate::store::{Location, Store, StoreError};

pub(crate) const SCHEMA_V1: &str = "
CREATE TABLE config (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);";

/// The PostgreSQL spelling of this module's tables as of schema v11 (see `crate::schema`).
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE config (
    key        TEXT PRIMARY KEY NOT NULL,
    value      TEXT NOT NULL,
    updated_at BIGINT NOT NULL
);";

/// Environment override for `opt-in-beta`, read before arguments are parsed.
pub const BETA_ENV: &str = "MISSIONBOARD_OPT_IN_BETA";

/// What values a key takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free text on one line.
    Text,
    /// A whole number, 0 or more.
    Count,
    /// A duration in Go notation (`30s`, `5m`).
    Duration,
    /// A duration, or `never`/`forever`/`indefinite` for no deadline.
    DurationOrNever,
    /// `true` or `false`.
    Bool,
    /// An amount of memory (`8G`, `400M`, `512K`, bytes), or `off` for no bound.
    SizeOrOff,
    /// One of a fixed list.
    OneOf(&'static [&'static str]),
    /// `off`, or a comma-separated set drawn from a fixed list (stored in its order).
    SetOf(&'static [&'static str]),
    /// A model endpoint: an `http://` or `https://` URL, or `scripted:<dialog.json>`.
    ModelUrl,
    /// Where the durable record lives: `sqlite:` or a `postgres://` URL.
    StoreUrl,
    /// An `http://` or `https://` URL (a page's base).
    WebUrl,
    /// Notification receivers, one [`NotifyEntry`] a line: each `set` adds one.
    NotifyTargets,
}

/// A known configuration key.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    pub kind: Kind,
    pub default: Option<&'static str>,
    pub help: &'static str,
}

impl Key {
    /// The effective value given what is stored (if anything), and where it came from.
    pub fn effective(&self, stored: Option<String>) -> (Option<String>, Origin) {
        match (stored, self.default) {
            (Some(v), _) => (Some(v), Origin::Set),
            (None, Some(d)) => (Some(d.to_string()), Origin::Default),
            (None, None) => (None, Origin::Unset),
        }
    }
}

pub const DEFAULT_MISSION_POLICY: &str = "default-mission-policy";
pub const DEFAULT_MISSION_AGENT: &str = "default-mission-agent";
pub const FLEET_MAX_PARALLEL: &str = "fleet-max-parallel";
pub const FLEET_MAX_MEMORY: &str = "fleet-max-memory";
pub const APPROVAL_CEILING: &str = "approval-ceiling";
pub const ASK_PARK_WINDOW: &str = "ask-park-window";
pub const OPT_IN_BETA: &str = "opt-in-beta";
pub const MODEL_BASE_URL: &str = "model-base-url";
pub const MODEL_NAME: &str = "model-name";
pub const MODEL_API_KEY_ENV: &str = "model-api-key-env";
pub const MODEL_TIMEOUT: &str = "model-timeout";
pub const ORACLE_VARIANT: &str = "oracle-variant";
pub const ORACLE_CALL_TIMEOUT: &str = "oracle-call-timeout";
pub const NOTIFY: &str = "notify";
pub const STORE_URL: &str = "store-url";
pub const NOTIFY_URL: &str = "notify-url";
pub const NOTIFY_TEXT: &str = "notify-text";
pub const WEB_URL: &str = "web-url";
/// The formats a `notify-url` entry may name (`slack` also speaks to Discord).
pub const NOTIFY_FORMATS: &[&str] = &["ntfy", "json", "slack"];
/// The events a `notify-url` entry may name.
pub const NOTIFY_EVENTS: &[&str] = &[
    "question",
    "gated",
    "bound",
    "landed",
    "derailed",
    "stuck",
    "host-lost",
];
/// Names for several events at once.
const NOTIFY_EVENT_GROUPS: &[(&str, &[&str])] = &[
    ("asks", &["question", "gated", "bound"]),
    ("rested", &["landed", "derailed", "stuck"]),
];
/// Environment override for `store-url` (every process of a fleet sets the same).
pub const STORE_URL_ENV: &str = "MISSIONBOARD_STORE_URL";
/// What `notify` may name: the terminal bell, OSC 9, OSC 777, `notify-send`.
pub const NOTIFY_CHANNELS: &[&str] = &["bell", "osc", "osc777", "desktop"];

/// Every key missionboard knows, in the order `config list` prints them.
pub const KEYS: &[Key] = &[
    Key {
        name: DEFAULT_MISSION_POLICY,
        kind: Kind::Text,
        default: None,
        help: "the envelope used when `mission fire --policy` names none",
    },
    Key {
        name: DEFAULT_MISSION_AGENT,
        kind: Kind::Text,
        default: None,
        help: "the agent the board's :mission (and an editor's /mission) uses when the line names none",
    },
    Key {
        name: FLEET_MAX_PARALLEL,
        kind: Kind::Count,
        default: Some("8"),
        help: "how many units may be open at once in one host (0 = unlimited)",
    },
    Key {
        name: FLEET_MAX_MEMORY,
        kind: Kind::SizeOrOff,
        default: Some("off"),
        help: "the memory one host's units may use at once (e.g. 8G): a unit starts only while the units' measured RSS plus its agent's expected peak (the p90 of its recorded peaks, else its declared expected_rss) fits; a queued mission waits, a direct fire is refused (off = no bound)",
    },
    Key {
        name: APPROVAL_CEILING,
        kind: Kind::DurationOrNever,
        default: Some("168h"),
        help: "how long an ask waits when its rule states no timeout (`never` = no deadline)",
    },
    Key {
        name: ASK_PARK_WINDOW,
        kind: Kind::Duration,
        default: Some("30s"),
        help: "how long a unit's question holds its turn before the run parks on a checkpoint",
    },
    Key {
        name: OPT_IN_BETA,
        kind: Kind::Bool,
        default: Some("false"),
        help: "beta features: `mission fire --oracle`, `approvals respond --as-agent` (env MISSIONBOARD_OPT_IN_BETA overrides)",
    },
    Key {
        name: MODEL_BASE_URL,
        kind: Kind::ModelUrl,
        default: Some("http://127.0.0.1:11434/v1"),
        help: "OpenAI-compatible endpoint for the oracle and agent-planner (`scripted:<file.json>` replays a dialog)",
    },
    Key {
        name: MODEL_NAME,
        kind: Kind::Text,
        default: None,
        help: "model the oracle and agent-planner ask for",
    },
    Key {
        name: MODEL_API_KEY_ENV,
        kind: Kind::Text,
        default: None,
        help: "name of the environment variable holding the model endpoint's API key",
    },
    Key {
        name: MODEL_TIMEOUT,
        kind: Kind::Duration,
        default: Some("120s"),
        help: "how long one agent-planner model call may take before it is retried or given up (a model on a busy CPU may need longer; the oracle has oracle-call-timeout)",
    },
    Key {
        name: ORACLE_VARIANT,
        kind: Kind::OneOf(&["default", "conservative"]),
        default: Some("default"),
        help: "which oracle chain answers: default, or conservative (the strictest WAIT bias)",
    },
    Key {
        name: ORACLE_CALL_TIMEOUT,
        kind: Kind::Duration,
        default: Some("120s"),
        help: "how long one oracle model call may take before it is retried or given up (sized for a model on a CPU; independent of ask-park-window)",
    },
    Key {
        name: NOTIFY,
        kind: Kind::SetOf(NOTIFY_CHANNELS),
        default: Some("off"),
        help: "how the board announces a new question or gated call: off, or any of bell, osc (OSC 9), osc777 (OSC 777), desktop (notify-send, where present), comma-separated",
    },
    Key {
        name: STORE_URL,
        kind: Kind::StoreUrl,
        default: Some("sqlite:"),
        help: "where the durable record lives: sqlite: (this home's board.db) or postgres://user@host/database, shared by several hosts; kept in this home's board.db whatever it names (env MISSIONBOARD_STORE_URL overrides)",
    },
    Key {
        name: NOTIFY_URL,
        kind: Kind::NotifyTargets,
        default: None,
        help: "where notifications go, one receiver each `set` (repeatable; `unset` clears them all): URL [format=ntfy|json|slack] [events=question,gated,bound,landed,derailed,stuck,host-lost|asks|rested]; sent by `missionboard host` and `missionboard web`",
    },
    Key {
        name: NOTIFY_TEXT,
        kind: Kind::OneOf(&["summary", "none"]),
        default: Some("summary"),
        help: "what a notification says of the agent's words: summary (one sanitized line), or none (only the kind, the mission's short id and the link)",
    },
    Key {
        name: WEB_URL,
        kind: Kind::WebUrl,
        default: None,
        help: "the web page's address as a phone reaches it (e.g. https://laptop.tailnet.ts.net): the base of a notification's link",
    },
];

/// One `notify-url` entry: `URL [format=ntfy|json|slack] [events=KIND,…]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyEntry {
    pub url: String,
    /// One of [`NOTIFY_FORMATS`]; `None`: guessed from the URL.
    pub format: Option<&'static str>,
    /// Drawn from [`NOTIFY_EVENTS`], in its order; `None`: every event.
    pub events: Option<Vec<&'static str>>,
}

impl NotifyEntry {
    pub fn parse(spec: &str) -> Result<NotifyEntry, String> {
        let mut words = spec.split_whitespace();
        let url = words
            .next()
            .ok_or("notify-url needs a URL (e.g. https://ntfy.sh/my-topic format=ntfy)")?;
        check_web_url(NOTIFY_URL, url)?;
        let mut entry = NotifyEntry {
            url: url.to_string(),
            format: None,
            events: None,
        };
        for word in words {
            match word.split_once('=') {
                Some(("format", f)) => {
                    let f = if f == "discord" { "slack" } else { f };
                    entry.format = Some(NOTIFY_FORMATS.iter().find(|k| **k == f).ok_or_else(
                        || format!("notify-url: format={f:?} is not one of ntfy, json, slack (slack also speaks to Discord)"),
                    )?);
                }
                Some(("events", list)) => {
                    let mut named: Vec<&str> = Vec::new();
                    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                        if let Some(k) = NOTIFY_EVENTS.iter().find(|k| **k == name) {
                            named.push(k);
                        } else if let Some((_, ks)) =
                            NOTIFY_EVENT_GROUPS.iter().find(|(g, _)| *g == name)
                        {
                            named.extend(ks.iter());
                        } else {
                            return Err(format!(
                                "notify-url: events names {name:?}, which is none of {}, asks, rested",
                                NOTIFY_EVENTS.join(", ")
                            ));
                        }
                    }
                    if named.is_empty() {
                        return Err("notify-url: events= names no event".into());
                    }
                    entry.events = Some(
                        NOTIFY_EVENTS
                            .iter()
                            .copied()
                            .filter(|k| named.contains(k))
                            .collect(),
                    );
                }
                _ => {
                    return Err(format!(
                        "notify-url: {word:?} is not format=… or events=… (write the entry as URL [format=ntfy|json|slack] [events=question,gated,…])"
                    ));
                }
            }
        }
        Ok(entry)
    }

    /// The entry as stored.
    pub fn spec(&self) -> String {
        let mut s = self.url.clone();
        if let Some(f) = self.format {
            s.push_str(&format!(" format={f}"));
        }
        if let Some(events) = &self.events {
            s.push_str(&format!(" events={}", events.join(",")));
        }
        s
    }
}

/// An `http://` or `https://` URL with a host, on one line.
fn check_web_url(name: &str, v: &str) -> Result<(), String> {
    let rest = v
        .strip_prefix("https://")
        .or_else(|| v.strip_prefix("http://"));
    match rest {
        Some(r)
            if !r.is_empty()
                && !r.starts_with('/')
                && !v.chars().any(|c| c.is_control() || c.is_whitespace()) =>
        {
            Ok(())
        }
        _ => Err(format!(
            "{name} must be an http:// or https:// URL with a host (got {v:?})"
        )),
    }
}

/// Look up a key by name, refusing unknown names with the list of known ones.
pub fn key(name: &str) -> Result<&'static Key, String> {
    KEYS.iter().find(|k| k.name == name).ok_or_else(|| {
        let known: Vec<&str> = KEYS.iter().map(|k| k.name).collect();
        format!(
            "unknown config key {name:?} — known keys: {}",
            known.join(", ")
        )
    })
}

/// Check and normalise a value for `key`.
pub fn normalize(key: &Key, value: &str) -> Result<String, String> {
    let v = value.trim();
    let name = key.name;
    match key.kind {
        Kind::Text => {
            if v.contains(['\n', '\r']) {
                Err(format!("{name} must be a single line"))
            } else if v.is_empty() {
                Err(format!(
                    "{name} needs a value — `missionboard config unset {name}` clears it"
                ))
            } else {
                Ok(v.to_string())
            }
        }
        Kind::Count => v
            .parse::<u64>()
            .map(|n| n.to_string())
            .map_err(|_| format!("{name} must be a whole number, 0 or more (got {value:?})")),
        Kind::Duration => crate::duration::parse(v)
            .map(|_| v.to_string())
            .map_err(|e| format!("{name}: {e}")),
        Kind::DurationOrNever => match v {
            "never" | "forever" | "indefinite" => Ok("never".into()),
            _ => crate::duration::parse(v)
                .map(|_| v.to_string())
                .map_err(|e| format!("{name}: {e}, or never")),
        },
        Kind::Bool => match v.to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => Ok("true".into()),
            "false" | "0" | "no" | "off" => Ok("false".into()),
            _ => Err(format!("{name} must be true or false (got {value:?})")),
        },
        Kind::SizeOrOff => match v {
            "off" | "0" => Ok("off".into()),
            _ => crate::size::parse(v)
                .map(|_| v.to_string())
                .map_err(|e| format!("{name}: {e}, or off")),
        },
        Kind::ModelUrl => {
            let rest = ["http://", "https://", "scripted:"]
                .iter()
                .find_map(|scheme| v.strip_prefix(scheme));
            match rest {
                Some(rest) if !rest.trim().is_empty() && !v.chars().any(char::is_control) => {
                    Ok(v.to_string())
                }
                _ => Err(format!(
                    "{name} must be an http:// or https:// URL, or scripted:<dialog.json> (got {value:?})"
                )),
            }
        }
        Kind::WebUrl => check_web_url(name, v).map(|()| v.trim_end_matches('/').to_string()),
        Kind::NotifyTargets => NotifyEntry::parse(v).map(|e| e.spec()),
        Kind::StoreUrl => match Location::parse(v, Path::new("board.db")) {
            Ok(_) if !v.chars().any(char::is_control) => Ok(v.to_string()),
            Ok(_) => Err(format!("{name} must be a single-line URL")),
            Err(e) => Err(e),
        },
        Kind::OneOf(options) => {
            if options.contains(&v) {
                Ok(v.to_string())
            } else {
                Err(format!(
                    "{name} must be one of {} (got {value:?})",
                    options.join(", ")
                ))
            }
        }
        Kind::SetOf(options) => {
            let bad = || {
                format!(
                    "{name} must be off or a comma-separated list of {} (got {value:?})",
                    options.join(", ")
                )
            };
            if v == "off" {
                return Ok("off".into());
            }
            let named: Vec<&str> = v.split(',').map(str::trim).collect();
            if named.iter().any(|n| !options.contains(n)) {
                return Err(bad());
            }
            Ok(options
                .iter()
                .filter(|o| named.contains(o))
                .copied()
                .collect::<Vec<_>>()
                .join(","))
        }
    }
}

/// Where a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Set,
    Default,
    Unset,
    /// From the environment (`MISSIONBOARD_STORE_URL`), over whatever is stored.
    Env,
}

/// Configuration reads and writes over the store.
#[derive(Clone)]
pub struct Config {
    store: Store,
}

impl Config {
    pub fn new(store: Store) -> Self {
        Config { store }
    }

    /// Store a value after validating it; returns the normalised value.
    pub fn set(&self, name: &str, value: &str) -> anyhow::Result<String> {
        let key = key(name).map_err(anyhow::Error::msg)?;
        let mut value = normalize(key, value).map_err(anyhow::Error::msg)?;
        if key.kind == Kind::NotifyTargets {
            // Repeatable: each entry is added to those set before (once).
            let mut entries: Vec<String> = self
                .stored(key.name)?
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect();
            if !entries.contains(&value) {
                entries.push(value);
            }
            value = entries.join("\n");
        }
        self.store.with(|c| {
            c.execute(
                "INSERT INTO config (key, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                params![key.name, value, crate::clock::now_ms()],
            )
        })?;
        Ok(value)
    }

    /// Remove a stored value so the default applies again.
    pub fn unset(&self, name: &str) -> anyhow::Result<()> {
        let key = key(name).map_err(anyhow::Error::msg)?;
        self.store
            .with(|c| c.execute("DELETE FROM config WHERE key = ?1", params![key.name]))?;
        Ok(())
    }

    /// The effective value and where it came from.
    pub fn get_with_origin(&self, name: &str) -> anyhow::Result<(Option<String>, Origin)> {
        let key = key(name).map_err(anyhow::Error::msg)?;
        Ok(key.effective(self.stored(key.name)?))
    }

    /// The effective value (stored, else default).
    pub fn get(&self, name: &str) -> anyhow::Result<Option<String>> {
        Ok(self.get_with_origin(name)?.0)
    }

    /// Every key with its effective value and origin.
    pub fn list(&self) -> anyhow::Result<Vec<(&'static Key, Option<String>, Origin)>> {
        KEYS.iter()
            .map(|k| {
                let (v, o) = self.get_with_origin(k.name)?;
                Ok((k, v, o))
            })
            .collect()
    }

    /// `fleet-max-parallel`: 0 means unlimited.
    pub fn fleet_max_parallel(&self) -> anyhow::Result<u64> {
        Ok(self
            .get(FLEET_MAX_PARALLEL)?
            .and_then(|v| v.parse().ok())
            .unwrap_or(8))
    }

    /// `fleet-max-memory` in bytes; `None`: no bound (`off`).
    pub fn fleet_max_memory(&self) -> anyhow::Result<Option<u64>> {
        Ok(self
            .get(FLEET_MAX_MEMORY)?
            .and_then(|v| crate::size::parse(&v).ok())
            .filter(|b| *b > 0))
    }

    /// `ask-park-window`.
    pub fn ask_park_window(&self) -> anyhow::Result<Duration> {
        let v = self.get(ASK_PARK_WINDOW)?.unwrap_or_default();
        Ok(crate::duration::parse(&v).unwrap_or(Duration::from_secs(30)))
    }

    /// `oracle-call-timeout`: at least a second, whatever was stored.
    pub fn oracle_call_timeout(&self) -> anyhow::Result<Duration> {
        self.call_timeout(ORACLE_CALL_TIMEOUT)
    }

    /// `model-timeout`: at least a second, whatever was stored.
    pub fn model_timeout(&self) -> anyhow::Result<Duration> {
        self.call_timeout(MODEL_TIMEOUT)
    }

    fn call_timeout(&self, key: &str) -> anyhow::Result<Duration> {
        let v = self.get(key)?.unwrap_or_default();
        Ok(model_call_timeout(&v))
    }

    /// `approval-ceiling`: `None` means asks without a rule timeout never expire.
    pub fn approval_ceiling(&self) -> anyhow::Result<Option<Duration>> {
        let v = self.get(APPROVAL_CEILING)?.unwrap_or_default();
        if v == "never" {
            return Ok(None);
        }
        Ok(Some(
            crate::duration::parse(&v).unwrap_or(Duration::from_secs(168 * 3600)),
        ))
    }

    /// When `name` was last set, if it is set (ms since the epoch).
    pub fn set_at(&self, name: &str) -> Result<Option<i64>, StoreError> {
        self.store.with(|c| {
            c.query_row(
                "SELECT updated_at FROM config WHERE key = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()
        })
    }

    fn stored(&self, name: &str) -> Result<Option<String>, StoreError> {
        self.store.with(|c| {
            c.query_row(
                "SELECT value FROM config WHERE key = ?1",
                params![name],
                |r| r.get(0),
            )
            .optional()
        })
    }
}

/// `MISSIONBOARD_STORE_URL`, when it is set (and not empty): it overrides `store-url`.
/// A model call's timeout as stored or handed to a unit: at least a second, 120 s
/// when it does not parse.
pub fn model_call_timeout(value: &str) -> Duration {
    crate::duration::parse(value)
        .unwrap_or(Duration::from_secs(120))
        .max(Duration::from_secs(1))
}

pub fn store_url_from_env() -> Option<std::ffi::OsString> {
    std::env::var_os(STORE_URL_ENV).filter(|v| !v.is_empty())
}

/// Where this home's durable record lives: `MISSIONBOARD_STORE_URL` when set, else
/// the `store-url` kept in the home's own `board.db` (read without creating it), else
/// that file itself. A malformed URL is an error naming both places to fix it.
pub fn store_location(db_path: &Path) -> Result<Location, String> {
    if let Some(v) = store_url_from_env() {
        let v = v.into_string().map_err(|_| {
            format!("{STORE_URL_ENV} is not valid UTF-8 — set it to sqlite: or a postgres:// URL")
        })?;
        return Location::parse(&v, db_path).map_err(|e| format!("{STORE_URL_ENV}: {e}"));
    }
    let stored = match Store::open_read_only(db_path) {
        Ok(Some(store)) => Config::new(store).stored(STORE_URL).ok().flatten(),
        _ => None,
    };
    match stored {
        Some(url) => Location::parse(&url, db_path).map_err(|e| {
            format!(
                "{e} (set in {}: fix it with `missionboard config set store-url <url>`)",
                db_path.display()
            )
        }),
        None => Ok(Location::File(db_path.to_path_buf())),
    }
}

/// Open (creating or migrating as needed) this home's store, wherever it lives.
pub fn open_store(db_path: &Path) -> anyhow::Result<Store> {
    let location = store_location(db_path).map_err(anyhow::Error::msg)?;
    Ok(Store::open_at(&location)?)
}

/// This home's store if one exists: a shared database always does; the embedded
/// file only once something created it. `None` creates nothing.
pub fn existing_store(db_path: &Path) -> anyhow::Result<Option<Store>> {
    let location = store_location(db_path).map_err(anyhow::Error::msg)?;
    match &location {
        Location::File(p) if !p.exists() => Ok(None),
        _ => Ok(Some(Store::open_at(&location)?)),
    }
}

/// The beta opt-in as far as it can be known without a shared store: the env
/// override, else the embedded file's key; a shared store's key reads as off.
pub fn beta_enabled_offline(db_path: &Path) -> bool {
    match store_location(db_path) {
        Ok(Location::File(_)) => beta_enabled(db_path),
        _ => std::env::var_os(BETA_ENV).is_some_and(|v| {
            let v = v.to_string_lossy().to_ascii_lowercase();
            v == "1" || v == "true"
        }),
    }
}

/// Is the beta opt-in on? The env override wins (`1`/`true` on, any other non-empty value
/// off); else the stored key in an existing database. Never creates the database, and
/// any failure to read it means off.
pub fn beta_enabled(db_path: &std::path::Path) -> bool {
    if let Some(v) = std::env::var_os(BETA_ENV).filter(|v| !v.is_empty()) {
        let v = v.to_string_lossy().to_ascii_lowercase();
        return v == "1" || v == "true";
    }
    let store = match store_location(db_path) {
        Ok(Location::File(p)) => Store::open_read_only(&p).ok().flatten(),
        Ok(location) => Store::open_at(&location).ok(),
        Err(_) => None,
    };
    let Some(store) = store else {
        return false;
    };
    Config::new(store)
        .get(OPT_IN_BETA)
        .ok()
        .flatten()
        .is_some_and(|v| v == "true")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("board.db")).unwrap();
        (dir, Config::new(store))
    }

    #[test]
    fn set_get_round_trips_and_defaults_apply() {
        let (_d, c) = config();
        assert_eq!(c.get(FLEET_MAX_PARALLEL).unwrap().as_deref(), Some("8"));
        assert_eq!(c.set(FLEET_MAX_PARALLEL, " 4 ").unwrap(), "4");
        assert_eq!(
            c.get_with_origin(FLEET_MAX_PARALLEL).unwrap(),
            (Some("4".into()), Origin::Set)
        );
        c.unset(FLEET_MAX_PARALLEL).unwrap();
        assert_eq!(c.fleet_max_parallel().unwrap(), 8);
        assert_eq!(c.get(DEFAULT_MISSION_POLICY).unwrap(), None);
    }

    #[test]
    fn values_are_validated_per_kind() {
        let (_d, c) = config();
        assert!(c.set(FLEET_MAX_PARALLEL, "-1").is_err());
        assert!(c.set(ASK_PARK_WINDOW, "soon").is_err());
        assert_eq!(c.fleet_max_memory().unwrap(), None, "off by default");
        assert_eq!(c.set(FLEET_MAX_MEMORY, " 8G ").unwrap(), "8G");
        assert_eq!(c.fleet_max_memory().unwrap(), Some(8 << 30));
        assert_eq!(
            c.set(FLEET_MAX_MEMORY, "8 gigs").unwrap_err().to_string(),
            "fleet-max-memory: invalid size \"8 gigs\": write a number with a unit, e.g. 8G, 400M, 512K, or off"
        );
        assert_eq!(c.set(FLEET_MAX_MEMORY, "0").unwrap(), "off");
        assert_eq!(c.fleet_max_memory().unwrap(), None);
        assert_eq!(c.set(APPROVAL_CEILING, "forever").unwrap(), "never");
        assert_eq!(c.approval_ceiling().unwrap(), None);
        assert!(c.set(ORACLE_VARIANT, "wild").is_err());
        assert_eq!(c.set(OPT_IN_BETA, "TRUE").unwrap(), "true");
        assert_eq!(c.get(NOTIFY).unwrap().as_deref(), Some("off"));
        assert_eq!(
            c.set(NOTIFY, " desktop, bell,bell ").unwrap(),
            "bell,desktop"
        );
        assert_eq!(c.set(NOTIFY, "off").unwrap(), "off");
        assert_eq!(
            c.set(NOTIFY, "bell,off").unwrap_err().to_string(),
            "notify must be off or a comma-separated list of bell, osc, osc777, desktop (got \"bell,off\")"
        );
        assert!(c.set(NOTIFY, "").is_err());
        let err = c.set("fleet-max", "3").unwrap_err().to_string();
        assert!(err.contains("known keys: default-mission-policy"), "{err}");
    }
}
