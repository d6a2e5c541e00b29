//! `board --demo`: a scratch home with the presets and a `demo` stub agent, and a
//! handful of stub missions fired through the board's own fleet so a newcomer sees
//! every state within a minute — no model, no network.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::update::Msg;
use crate::agents::Registry;
use crate::config::{self, Config};
use crate::fleet::Fleet;
use crate::mission::{EnvelopeName, Intent};
use crate::ops::fire;
use crate::paths::{HOME_ENV, Paths};
use crate::presets;
use crate::store::Store;

pub const AGENT: &str = "demo";
pub const ENVELOPE: &str = "default";
/// A demo envelope with a small token budget, so one mission visibly hits a bound.
pub const BUDGET_ENVELOPE: &str = "demo-budget";
const BUDGET_ENVELOPE_FILE: &str = r#"{
  "//": "The board demo's budget envelope: a small token ceiling so a mission visibly hits a compute bound.",
  "default_action": "approve",
  "rules": [{"tools": "mission", "tool": "*", "action": "allow"}],
  "attention": {"allowAgentAnswers": false},
  "compute": {"maxTokens": 100000, "onExhausted": "finish_stuck"}
}
"#;

/// The intents fired, in order. The stub picks its scenario from the first
/// scenario name in the intent, so each names exactly one. The question comes
/// first so it is the oldest (top) pending ask. `tokens` runs under
/// [`BUDGET_ENVELOPE`] and crosses its token bound; `stuck` is the unit's own verdict.
pub const INTENTS: &[&str] = &[
    "ask-then-land: rename the config env var once the operator agrees",
    "land: write the release notes",
    "mute: audit the logging setup",
    "derail: migrate the schema",
    "tokens: summarise the whole repository",
    "stuck: deploy to staging",
    "perm-1: tidy the imports under approval",
];

/// Pause between fires: missions appear one by one, as they would in real use.
const SPACING: Duration = Duration::from_millis(700);

/// The demo's home: `$MISSIONBOARD_HOME` when the operator set it, else a fresh
/// scratch directory — never the operator's real ~/.missionboard.
pub fn home() -> PathBuf {
    match std::env::var_os(HOME_ENV).filter(|h| !h.is_empty()) {
        Some(h) => {
            let h = PathBuf::from(h);
            if h.is_absolute() {
                h
            } else {
                std::env::current_dir().unwrap_or_default().join(h)
            }
        }
        None => std::env::temp_dir().join(format!("missionboard-demo-{}", std::process::id())),
    }
}

/// Seed the demo home and return the paths the board runs on. Units work in a
/// scratch directory beside it (`<home>-work`), so no workspace of the operator's is
/// found or touched, and the home stays out of the units' reach as always.
pub fn prepare() -> anyhow::Result<Paths> {
    let home = home();
    let mut work = home.clone().into_os_string();
    work.push("-work");
    let work = PathBuf::from(work);
    for dir in [&home, &work] {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create the demo dir {}: {e}", dir.display()))?;
    }
    presets::seed(&home, presets::Mode::Upgrade)?;
    let budget = home.join(format!("hitl-policy-{BUDGET_ENVELOPE}.json"));
    if !budget.exists() {
        std::fs::write(&budget, BUDGET_ENVELOPE_FILE)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", budget.display()))?;
    }
    let paths = Paths::resolve(home.clone(), work);
    let registry = Registry::load(&paths)?;
    if registry.get(AGENT).is_none() {
        let file = home.join(crate::agents::FILE_NAME);
        let mut text = std::fs::read_to_string(&file).unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "\n[agents.{AGENT}]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--demo\"]\ndescription = \"the scripted stub agent (offline demo)\"\n"
        ));
        std::fs::write(&file, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
    }
    // `/mission <intent>` works out of the box in the demo.
    let config = Config::new(Store::open(&paths.db_path())?);
    for (key, value) in [
        (config::DEFAULT_MISSION_AGENT, AGENT),
        (config::DEFAULT_MISSION_POLICY, ENVELOPE),
    ] {
        if config.get(key)?.is_none() {
            config.set(key, value)?;
        }
    }
    Ok(paths)
}

/// Fire the demo missions one by one through the board's fleet.
pub async fn fire_all(fleet: Fleet, tx: UnboundedSender<Msg>) {
    for intent in INTENTS {
        let envelope = if intent.starts_with("tokens") {
            BUDGET_ENVELOPE
        } else {
            ENVELOPE
        };
        let checked = Intent::new(intent)
            .and_then(|i| Ok(fire::Fire::new(AGENT, EnvelopeName::new(envelope)?, i)));
        let fired = match checked {
            Ok(f) => fire::dispatch(&fleet, f).await.map(drop),
            Err(e) => Err(e.into()),
        };
        if let Err(e) = fired {
            tracing::warn!("demo: could not fire {intent:?}: {e:#}");
            let _ = tx.send(Msg::Toast {
                text: format!("demo: could not fire {intent:?}: {e:#}"),
                error: true,
            });
        }
        tokio::time::sleep(SPACING).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_intent_names_the_scenario_it_means() {
        for intent in INTENTS {
            let first = intent.split(':').next().unwrap();
            let words: Vec<&str> = intent
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter(|w| crate::stub::BUILTIN_NAMES.contains(w) || w.starts_with("perm-"))
                .collect();
            assert_eq!(words, vec![first], "{intent}");
        }
    }
}
