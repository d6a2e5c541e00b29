//! The preset files shipped inside the binary — envelopes, the oracle chains and
//! `agents.toml` — and `missionboard init`'s seeding of them.
//!
//! Upgrade rules (recorded per directory in `.preset-state.json` as `{name: sha256}`):
//! a missing file is written; a file byte-identical to this build's copy is adopted;
//! a file whose hash equals the recorded one was never edited, so it is refreshed;
//! anything else was edited by someone and is left alone. `--force` writes everything.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// What a preset file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Envelope,
    Chain,
    Agents,
}

/// One embedded preset.
#[derive(Debug)]
pub struct Preset {
    pub file_name: &'static str,
    pub bytes: &'static [u8],
    pub kind: Kind,
}

macro_rules! preset {
    ($name:literal, $kind:ident) => {
        Preset {
            file_name: $name,
            bytes: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/", $name)),
            kind: Kind::$kind,
        }
    };
}

/// Every file `init` seeds.
pub const PRESETS: &[Preset] = &[
    preset!("hitl-policy-default.json", Envelope),
    preset!("hitl-policy-strict.json", Envelope),
    preset!("hitl-policy-acp.json", Envelope),
    preset!("hitl-policy-acpx.json", Envelope),
    preset!("hitl-policy-dev.json", Envelope),
    preset!("hitl-policy-oracle.json", Envelope),
    preset!("chain-oracle-default.json", Chain),
    preset!("chain-oracle-conservative.json", Chain),
    Preset {
        file_name: "agents.toml",
        // The seeded file's own notes, then the catalogue's entries as they ship.
        bytes: concat!(
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/agents.toml")),
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/presets/catalogue.toml"
            ))
        )
        .as_bytes(),
        kind: Kind::Agents,
    },
];

/// The corpus `missionboard oracle eval` runs when no `--corpus` is named: routine,
/// risky and injected questions with the intents they are asked under. Not seeded by
/// `init`: it is the oracle's test, not a setting.
pub const ORACLE_CORPUS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/presets/oracle-corpus.toml"
));

/// The shipped price table: dated list prices of a few common models, which a
/// home's own `prices.toml` overrides. Not seeded by `init`: the home's file holds
/// only what it changes.
pub const PRICES: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/presets/prices.toml"));

/// The embedded copy of a preset, by file name.
pub fn get(file_name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.file_name == file_name)
}

const STATE_FILE: &str = ".preset-state.json";

/// How `seed` treats files that already exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The upgrade rules above.
    Upgrade,
    /// `--force`: overwrite every preset.
    Force,
    /// `--refresh-policies`: overwrite the policy presets only; with `existing_only`,
    /// only those already present (a workspace that shadows some of home's copies).
    RefreshPolicies { existing_only: bool },
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Created,
    Overwrote(&'static str),
    Updated,
    Skipped,
    UpToDate,
}

/// One file's outcome, printed as an `init` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seeded {
    pub path: PathBuf,
    pub outcome: Outcome,
}

impl fmt::Display for Seeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.path.display();
        match self.outcome {
            Outcome::Created => write!(f, "  Created {p}"),
            Outcome::Overwrote(flag) => write!(f, "  Overwrote {p} ({flag})"),
            Outcome::Updated => write!(f, "  Updated {p}"),
            Outcome::Skipped => write!(f, "  Skipped {p} (has been modified)"),
            Outcome::UpToDate => write!(f, "  Up to date {p}"),
        }
    }
}

/// Seed the presets into `dir` (created if needed) under `mode`.
pub fn seed(dir: &Path, mode: Mode) -> anyhow::Result<Vec<Seeded>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let mut state = read_state(dir);
    let mut out = Vec::new();
    for preset in PRESETS {
        if matches!(mode, Mode::RefreshPolicies { .. }) && preset.kind != Kind::Envelope {
            continue;
        }
        let path = dir.join(preset.file_name);
        let new_hash = sha256(preset.bytes);
        let existing = match std::fs::read(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
        };
        let outcome = match (&existing, mode) {
            (
                None,
                Mode::RefreshPolicies {
                    existing_only: true,
                },
            ) => continue,
            (None, _) => Outcome::Created,
            (Some(b), _) if b.as_slice() == preset.bytes => Outcome::UpToDate,
            (Some(_), Mode::Force) => Outcome::Overwrote("--force"),
            (Some(_), Mode::RefreshPolicies { .. }) => Outcome::Overwrote("--refresh-policies"),
            (Some(b), Mode::Upgrade) => {
                if state.get(preset.file_name) == Some(&sha256(b)) {
                    Outcome::Updated
                } else {
                    Outcome::Skipped
                }
            }
        };
        if matches!(
            outcome,
            Outcome::Created | Outcome::Overwrote(_) | Outcome::Updated
        ) {
            write_atomically(&path, preset.bytes)?;
        }
        if outcome != Outcome::Skipped {
            state.insert(preset.file_name.to_string(), new_hash);
        }
        out.push(Seeded { path, outcome });
    }
    write_atomically(
        &dir.join(STATE_FILE),
        (serde_json::to_string_pretty(&state)? + "\n").as_bytes(),
    )?;
    Ok(out)
}

/// Put back any missing envelope preset in `dir` without touching existing files
/// (`mission fire` does this so the shipped envelopes can always be named).
pub fn seed_policies_quietly(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    for p in PRESETS.iter().filter(|p| p.kind == Kind::Envelope) {
        let path = dir.join(p.file_name);
        if !path.exists() {
            write_atomically(&path, p.bytes)?;
        }
    }
    Ok(())
}

/// Hex SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn read_state(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read(dir.join(STATE_FILE))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Write through a temporary file and rename, so a crash never leaves half a preset.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            anyhow::anyhow!("cannot write {}: {e}", path.display())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(v: &[Seeded]) -> Vec<(&str, Outcome)> {
        v.iter()
            .map(|s| {
                (
                    s.path.file_name().unwrap().to_str().unwrap(),
                    s.outcome.clone(),
                )
            })
            .collect()
    }

    use crate::envelope::{Action, Envelope, ToolCall, evaluate, vet_chain, vet_envelope};
    use serde_json::json;

    fn policy(name: &str) -> Envelope {
        Envelope::parse(name, get(name).unwrap().bytes).unwrap()
    }

    fn decide(name: &str, tools: &str, tool: &str, args: serde_json::Value) -> Action {
        let call = ToolCall {
            tools: tools.into(),
            tool: tool.into(),
            args: args.as_object().unwrap().clone(),
        };
        evaluate(name, &policy(name), &call).action
    }

    #[test]
    fn every_shipped_preset_loads_and_vets_clean() {
        for p in PRESETS {
            match p.kind {
                Kind::Envelope => {
                    Envelope::parse(p.file_name, p.bytes).unwrap();
                    let r = vet_envelope(p.bytes);
                    assert!(
                        r.errors.is_empty() && r.warnings.is_empty(),
                        "{}: {r:?}",
                        p.file_name
                    );
                }
                Kind::Chain => {
                    let r = vet_chain(p.bytes);
                    assert!(r.errors.is_empty(), "{}: {r:?}", p.file_name);
                }
                Kind::Agents => {
                    crate::agents::parse(
                        Path::new(p.file_name),
                        std::str::from_utf8(p.bytes).unwrap(),
                    )
                    .unwrap();
                }
            }
        }
    }

    #[test]
    fn the_default_shell_tiers_decide_the_worked_examples() {
        let d = "hitl-policy-default.json";
        let shell = |args: serde_json::Value| decide(d, "local_shell", "local_shell", args);
        assert_eq!(
            shell(json!({"command": "mkfs", "args": ["/dev/sda"]})),
            Action::Deny
        );
        assert_eq!(
            shell(json!({"command": "echo", "args": ["$(whoami)"]})),
            Action::Approve
        );
        assert_eq!(
            shell(json!({"command": "go", "args": ["test", "./..."]})),
            Action::Allow
        );
        assert_eq!(
            shell(json!({"command": "git", "args": ["status"]})),
            Action::Approve
        );
        assert_eq!(shell(json!({"command": "cat a > b"})), Action::Approve);
        assert_eq!(
            shell(json!({"command": "rm", "args": ["-rf", "x"]})),
            Action::Approve
        );
        // Reads run, writes ask, secrets are denied, the unknown asks.
        assert_eq!(
            decide(d, "local_fs", "read_file", json!({"path": "src/main.rs"})),
            Action::Allow
        );
        assert_eq!(
            decide(d, "local_fs", "write_file", json!({"path": "src/main.rs"})),
            Action::Approve
        );
        assert_eq!(
            decide(
                d,
                "local_fs",
                "read_file",
                json!({"path": "/home/u/.ssh/id_rsa"})
            ),
            Action::Deny
        );
        assert_eq!(
            decide(d, "local_fs", "read_file", json!({"path": "app/.env"})),
            Action::Approve
        );
        assert_eq!(decide(d, "mystery", "tool", json!({})), Action::Approve);
        assert_eq!(
            decide(d, "mission", "mission_report", json!({})),
            Action::Allow
        );
    }

    #[test]
    fn each_preset_takes_its_stance() {
        let attention = |n: &str| {
            policy(n)
                .attention
                .map(|a| (a.allow_agent_answers, a.effective_max_agent_answers()))
        };
        assert_eq!(attention("hitl-policy-default.json"), Some((true, 3)));
        assert_eq!(attention("hitl-policy-acp.json"), Some((true, 3)));
        assert_eq!(attention("hitl-policy-dev.json"), Some((true, 5)));
        for human_only in [
            "hitl-policy-strict.json",
            "hitl-policy-acpx.json",
            "hitl-policy-oracle.json",
        ] {
            assert_eq!(
                attention(human_only).map(|a| a.0),
                Some(false),
                "{human_only}"
            );
        }
        let strict = "hitl-policy-strict.json";
        assert_eq!(
            decide(
                strict,
                "local_shell",
                "local_shell",
                json!({"command": "ls"})
            ),
            Action::Approve
        );
        assert_eq!(decide(strict, "git", "git_status", json!({})), Action::Deny);
        let acpx = "hitl-policy-acpx.json";
        assert_eq!(
            decide(acpx, "local_fs", "write_file", json!({"path": "a"})),
            Action::Deny
        );
        assert_eq!(
            decide(
                acpx,
                "webtools",
                "web_get",
                json!({"url": "http://169.254.169.254/x"})
            ),
            Action::Deny
        );
        let dev = "hitl-policy-dev.json";
        assert_eq!(
            decide(dev, "local_fs", "write_file", json!({"path": "a"})),
            Action::Allow
        );
    }

    #[test]
    fn the_oracle_envelope_allows_exactly_its_two_tools() {
        let o = "hitl-policy-oracle.json";
        assert_eq!(
            decide(o, "oracle", "submit_verdict", json!({})),
            Action::Allow
        );
        assert_eq!(
            decide(o, "oracle", "verdict_state", json!({})),
            Action::Allow
        );
        for (tools, tool) in [
            ("local_shell", "local_shell"),
            ("local_fs", "read_file"),
            ("local_fs", "write_file"),
            ("webtools", "web_get"),
            ("git", "git_commit"),
            ("oracle", "imagined_tool"),
        ] {
            assert_eq!(
                decide(o, tools, tool, json!({})),
                Action::Deny,
                "{tools}.{tool}"
            );
        }
        let text = std::str::from_utf8(get(o).unwrap().bytes).unwrap();
        assert!(!text.contains("command_prefix_allowlist") && !text.contains("local_shell"));
    }

    #[test]
    fn the_oracle_chains_differ_only_in_their_decision() {
        // Drop what names the variant and every DECISION paragraph; what is left must match.
        fn strip(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    for k in ["id", "variant", "description"] {
                        if m.get(k).is_some_and(serde_json::Value::is_string) {
                            m.remove(k);
                        }
                    }
                    m.values_mut().for_each(strip);
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
                serde_json::Value::String(s) => {
                    *s = s
                        .split("\n\n")
                        .filter(|p| !p.starts_with("DECISION"))
                        .collect::<Vec<_>>()
                        .join("\n\n");
                }
                _ => {}
            }
        }
        let load = |name: &str| -> serde_json::Value {
            serde_json::from_slice(get(name).unwrap().bytes).unwrap()
        };
        let (mut a, mut b) = (
            load("chain-oracle-default.json"),
            load("chain-oracle-conservative.json"),
        );
        assert_ne!(a, b);
        strip(&mut a);
        strip(&mut b);
        assert_eq!(a, b);
        let first = a["tasks"][0]["system_instruction"].as_str().unwrap();
        assert!(first.starts_with("You are a task processing engine talking to other machines."));
    }

    #[test]
    fn upgrade_rules_never_overwrite_an_edited_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let first = seed(d, Mode::Upgrade).unwrap();
        assert!(first.iter().all(|s| s.outcome == Outcome::Created));

        // Unchanged: adopted, nothing written.
        let again = seed(d, Mode::Upgrade).unwrap();
        assert!(again.iter().all(|s| s.outcome == Outcome::UpToDate));

        // An operator edit survives a plain init, and --force replaces it.
        let strict = d.join("hitl-policy-strict.json");
        std::fs::write(&strict, "{\"default_action\":\"deny\"}").unwrap();
        let o = seed(d, Mode::Upgrade).unwrap();
        assert!(outcomes(&o).contains(&("hitl-policy-strict.json", Outcome::Skipped)));
        assert_eq!(
            std::fs::read_to_string(&strict).unwrap(),
            "{\"default_action\":\"deny\"}"
        );
        let o = seed(d, Mode::Force).unwrap();
        assert!(outcomes(&o).contains(&("hitl-policy-strict.json", Outcome::Overwrote("--force"))));
        assert_eq!(
            std::fs::read(&strict).unwrap(),
            get("hitl-policy-strict.json").unwrap().bytes
        );
    }

    #[test]
    fn an_unedited_older_preset_is_refreshed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Pretend an older build seeded this file and recorded its hash.
        let old = b"{\"default_action\":\"approve\"}";
        std::fs::write(d.join("hitl-policy-dev.json"), old).unwrap();
        let state = BTreeMap::from([("hitl-policy-dev.json".to_string(), sha256(old))]);
        std::fs::write(d.join(STATE_FILE), serde_json::to_string(&state).unwrap()).unwrap();
        let o = seed(d, Mode::Upgrade).unwrap();
        assert!(outcomes(&o).contains(&("hitl-policy-dev.json", Outcome::Updated)));
        assert_eq!(
            std::fs::read(d.join("hitl-policy-dev.json")).unwrap(),
            get("hitl-policy-dev.json").unwrap().bytes
        );
    }

    #[test]
    fn refresh_policies_touches_policies_only() {
        let dir = tempfile::tempdir().unwrap();
        let o = seed(
            dir.path(),
            Mode::RefreshPolicies {
                existing_only: false,
            },
        )
        .unwrap();
        assert!(!o.is_empty());
        assert!(o.iter().all(|s| {
            s.path
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("hitl-policy-")
        }));
    }
}
