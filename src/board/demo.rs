//! `board --demo`: a scratch home with the presets and a `demo` stub agent, and a
//! handful of stub missions fired through the board's own fleet so a newcomer sees
//! every state within a minute — no model, no network.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use super::update::Msg;
use crate::agents::Registry;
use crate::config::{self, Config};
use crate::mission::{EnvelopeName, Intent};
use crate::ops::fire;
use crate::ops::host::Host;
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

/// Whether the demo runs in a scratch home of its own (removed on exit), rather than
/// in the `$MISSIONBOARD_HOME` the operator named (kept).
pub fn is_scratch() -> bool {
    std::env::var_os(HOME_ENV).is_none_or(|h| h.is_empty())
}

/// The scratch workspace units work in: `<home>-work`.
fn workspace_of(home: &Path) -> PathBuf {
    let mut work = home.as_os_str().to_owned();
    work.push("-work");
    PathBuf::from(work)
}

/// On exit: remove a scratch home and its workspace, or name the command that
/// inspects a kept one — with this binary's real path, since after `cargo run` no
/// `missionboard` need be on PATH. Returns the line to print.
pub fn leave(home: &Path, scratch: bool) -> String {
    let work = workspace_of(home);
    if scratch {
        let failed: Vec<String> = [home, work.as_path()]
            .into_iter()
            .filter_map(|dir| match std::fs::remove_dir_all(dir) {
                Ok(()) => None,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => Some(format!("{}: {e}", dir.display())),
            })
            .collect();
        if failed.is_empty() {
            return format!(
                "missionboard demo: removed its scratch home {} and workspace {} (set MISSIONBOARD_HOME=<dir> to keep them)",
                home.display(),
                work.display()
            );
        }
        return format!(
            "missionboard demo: could not remove {} — remove it by hand",
            failed.join("; ")
        );
    }
    let exe = std::env::current_exe()
        .map(|p| shell_word(&p.to_string_lossy()))
        .unwrap_or_else(|_| "missionboard".into());
    format!(
        "missionboard demo home: {} (inspect it with MISSIONBOARD_HOME={} {exe} mission list)",
        home.display(),
        shell_word(&home.to_string_lossy())
    )
}

/// `word` as one shell word: as it is when it is plain, else single-quoted.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%=".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// Seed the demo home and return the paths the board runs on. Units work in a
/// scratch directory beside it (`<home>-work`), so no workspace of the operator's is
/// found or touched, and the home stays out of the units' reach as always.
pub fn prepare() -> anyhow::Result<Paths> {
    let home = home();
    let work = workspace_of(&home);
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
        let description = crate::agents::catalogue::get(AGENT)
            .map(|a| a.description.as_str())
            .unwrap_or("the scripted offline stub for demos");
        text.push_str(&format!(
            "\n[agents.{AGENT}]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--demo\"]\ndescription = {}\n",
            toml::Value::String(description.into())
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
pub async fn fire_all(host: Host, tx: UnboundedSender<Msg>) {
    for intent in INTENTS {
        let envelope = if intent.starts_with("tokens") {
            BUDGET_ENVELOPE
        } else {
            ENVELOPE
        };
        let checked = Intent::new(intent)
            .and_then(|i| Ok(fire::Fire::new(AGENT, EnvelopeName::new(envelope)?, i)));
        let fired = match checked {
            Ok(f) => fire::dispatch(&host, f).await.map(drop),
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

    #[test]
    fn leaving_removes_a_scratch_home_and_workspace_and_keeps_a_named_one() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("missionboard-demo-1");
        let work = workspace_of(&home);
        for d in [&home, &work] {
            std::fs::create_dir_all(d.join("sub")).unwrap();
            std::fs::write(d.join("sub/file"), "x").unwrap();
        }
        let kept = leave(&home, false);
        let exe = std::env::current_exe().unwrap();
        assert_eq!(
            kept,
            format!(
                "missionboard demo home: {} (inspect it with MISSIONBOARD_HOME={} {} mission list)",
                home.display(),
                home.display(),
                exe.display()
            )
        );
        assert!(home.exists() && work.exists());
        let removed = leave(&home, true);
        assert_eq!(
            removed,
            format!(
                "missionboard demo: removed its scratch home {} and workspace {} (set MISSIONBOARD_HOME=<dir> to keep them)",
                home.display(),
                work.display()
            )
        );
        assert!(!home.exists() && !work.exists());
        assert_eq!(shell_word("/a b/it's"), "'/a b/it'\\''s'");
    }

    #[test]
    fn the_demo_agent_s_description_lists_every_scenario_it_plays() {
        let description = &crate::agents::catalogue::get(AGENT).unwrap().description;
        let (_, listed) = description.split_once('(').unwrap();
        let listed: Vec<&str> = listed.trim_end_matches(')').split(", ").collect();
        let played: Vec<&str> = INTENTS
            .iter()
            .map(|i| i.split(':').next().unwrap())
            .collect();
        assert_eq!(listed, played, "{description}");
    }
}
