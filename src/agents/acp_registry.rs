//! The public ACP registry's index: every agent the ecosystem lists, with how it is
//! distributed (an npm package run by npx, a PyPI package run by uvx, or a platform
//! binary archive with its sha256). A pinned snapshot ships in the binary
//! (`presets/acp-registry.json`); `agent registry refresh` writes a newer copy into
//! the missionboard home, read before it.
//!
//! `agent add <registry id>` turns an entry into an agents.toml declaration. Our
//! catalogue's knowledge of an agent (the flags that make it ask, its state dirs,
//! its env) overlays the entry where we have it: an entry the catalogue knows is
//! declared as the catalogue has it. Nothing is downloaded when a declaration is
//! written or a unit is fired: the entry's install line is a step of its own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Agent, catalogue};

/// The shipped snapshot.
pub const SHIPPED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/presets/acp-registry.json"
));

/// The refreshed copy's file name in the missionboard home.
pub const FILE_NAME: &str = "acp-registry.json";

/// Where the registry publishes its index (`agent registry refresh` without `--from`).
pub const DEFAULT_URL: &str =
    "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

#[derive(Debug, Clone, Deserialize)]
struct IndexFile {
    #[serde(default)]
    snapshot: Option<serde_json::Value>,
    agents: Vec<Entry>,
}

/// One agent of the index.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Entry {
    pub id: String,
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    pub distribution: Distribution,
}

/// How an agent is distributed: any of the three.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Distribution {
    #[serde(default)]
    pub npx: Option<Package>,
    #[serde(default)]
    pub uvx: Option<Package>,
    /// By platform (`linux-x86_64`, `darwin-aarch64`, …).
    #[serde(default)]
    pub binary: Option<BTreeMap<String, Binary>>,
}

/// An npm or PyPI package, pinned (`name@1.2.3`, `name==1.2.3`), and how it is run.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Package {
    pub package: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A platform's archive and the command inside it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct Binary {
    pub archive: String,
    pub cmd: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub sha256: Option<String>,
}

/// The index as read, and where from.
#[derive(Debug, Clone)]
pub struct Index {
    pub entries: Vec<Entry>,
    /// `the shipped snapshot (commit …, …)`, or the refreshed file's path.
    pub source: String,
}

impl Index {
    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }

    pub fn ids(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.id.as_str()).collect()
    }
}

/// Parse an index (the registry's `registry.json` format). `source` names it in errors.
pub fn parse(text: &str, source: &str) -> anyhow::Result<Index> {
    let file: IndexFile = serde_json::from_str(text).map_err(|e| {
        anyhow::anyhow!(
            "ACP registry index {source}: {e} — expected the registry's registry.json format ({{\"version\": …, \"agents\": [{{\"id\", \"name\", \"version\", \"distribution\": {{\"npx\" | \"uvx\" | \"binary\"}}}}]}})"
        )
    })?;
    for e in &file.agents {
        let d = &e.distribution;
        if d.npx.is_none() && d.uvx.is_none() && d.binary.is_none() {
            anyhow::bail!(
                "ACP registry index {source}: agent {:?} has no distribution (npx, uvx or binary)",
                e.id
            );
        }
        if e.id.is_empty()
            || !e
                .id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            anyhow::bail!(
                "ACP registry index {source}: agent id {:?} is not a plain name (letters, digits, - _ .)",
                e.id
            );
        }
    }
    let source = match file.snapshot.as_ref() {
        Some(s) => format!(
            "{source} (commit {}, {})",
            s.get("commit").and_then(|c| c.as_str()).unwrap_or("?"),
            s.get("date").and_then(|c| c.as_str()).unwrap_or("?")
        ),
        None => source.to_string(),
    };
    Ok(Index {
        entries: file.agents,
        source,
    })
}

/// The refreshed copy in `home`, else the shipped snapshot.
pub fn load(home: &Path) -> anyhow::Result<Index> {
    let path = home.join(FILE_NAME);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse(&text, &path.display().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            parse(SHIPPED, "the shipped snapshot presets/acp-registry.json")
        }
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    }
}

/// This machine as the registry names platforms (`linux-x86_64`, …).
pub fn platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("{os}-{}", std::env::consts::ARCH)
}

/// Which distribution a declaration uses, and what it installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Install {
    /// `npm install -g <package>`; the program is the package's bin (as the catalogue
    /// knows it, else its unscoped name until [`Entry::declaration`] reads the bin).
    Npm { package: String, bin: String },
    /// `uv tool install <package>`; the program is its entry point (uvx's rule: the
    /// one named as the package).
    Uv { package: String, program: String },
    /// The archive fetched by `agent install`, checked against its sha256, unpacked
    /// into `dir`; the program is `dir/<cmd>`.
    Archive {
        url: String,
        sha256: Option<String>,
        dir: PathBuf,
        program: PathBuf,
    },
}

impl Install {
    /// The kind, as `agent list --available` and `doctor` say it.
    pub fn kind(&self) -> &'static str {
        match self {
            Install::Npm { .. } => "npx",
            Install::Uv { .. } => "uvx",
            Install::Archive { .. } => "binary",
        }
    }

    /// The line that installs it.
    pub fn line(&self, id: &str) -> String {
        match self {
            Install::Npm { package, .. } => format!("npm install -g {package}"),
            Install::Uv { package, .. } => format!("uv tool install {package}"),
            Install::Archive { .. } => format!("missionboard agent install {id}"),
        }
    }
}

/// `name@1.2.3` / `@scope/name@1.2.3` → (`@scope/name`, unscoped `name`).
fn npm_name(spec: &str) -> (String, String) {
    let (scope, rest) = match spec.strip_prefix('@') {
        Some(r) => match r.split_once('/') {
            Some((s, n)) => (format!("@{s}/"), n),
            None => (String::new(), spec),
        },
        None => (String::new(), spec),
    };
    let bare = rest.split('@').next().unwrap_or(rest).to_string();
    (format!("{scope}{bare}"), bare)
}

/// The program npx runs for an installed package (its package.json's `bin`: the one
/// entry, or the one named as the package), read from the global npm tree.
fn installed_npm_bin(package: &str, unscoped: &str) -> Option<String> {
    let root = std::process::Command::new("npm")
        .args(["root", "-g"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let root = PathBuf::from(String::from_utf8_lossy(&root.stdout).trim());
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join(package).join("package.json")).ok()?)
            .ok()?;
    npx_bin(manifest.get("bin")?, unscoped)
}

/// The program npx runs from a package's `bin`: a string is the package's own name;
/// of a map, the only entry, the one named as the package, or — when every entry runs
/// the same file (aliases) — the first.
fn npx_bin(bin: &serde_json::Value, unscoped: &str) -> Option<String> {
    match bin {
        serde_json::Value::String(_) => Some(unscoped.to_string()),
        serde_json::Value::Object(bins) if bins.contains_key(unscoped) => {
            Some(unscoped.to_string())
        }
        serde_json::Value::Object(bins) => {
            let mut targets = bins.values();
            let first = targets.next()?;
            targets
                .all(|t| t == first)
                .then(|| bins.keys().next().cloned())
                .flatten()
        }
        _ => None,
    }
}

/// The bin of a package not installed here, as its registry says (`npm view`): a
/// look-up for the one package being declared, never at fire time.
fn published_npm_bin(spec: &str, unscoped: &str) -> Option<String> {
    let out = std::process::Command::new("npm")
        .args(["view", spec, "bin", "--json"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    npx_bin(&serde_json::from_slice(&out.stdout).ok()?, unscoped)
}

/// Where `agent install` unpacks binary agents: outside the missionboard home (which
/// a unit may never read under limited reads), in the user's data dir.
pub fn binaries_dir() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("share"))
        })?;
    Some(data.join("missionboard").join("agents"))
}

impl Entry {
    /// How this entry is installed here: npx first, then uvx (both from registries a
    /// machine reaches by name), then this platform's archive.
    pub fn install(&self) -> Option<Install> {
        let d = &self.distribution;
        if let Some(p) = &d.npx {
            let (package, unscoped) = npm_name(&p.package);
            let known = catalogue::all()
                .iter()
                .find(|c| {
                    c.about
                        .npm
                        .as_deref()
                        .is_some_and(|n| npm_name(n).0 == package)
                })
                .map(|c| c.command.clone());
            let bin = known.unwrap_or(unscoped);
            return Some(Install::Npm {
                package: p.package.clone(),
                bin,
            });
        }
        if let Some(p) = &d.uvx {
            let program = p
                .package
                .split(['=', '<', '>', '~', '!', '[', ' '])
                .next()
                .unwrap_or(&p.package)
                .to_string();
            return Some(Install::Uv {
                package: p.package.clone(),
                program,
            });
        }
        let b = d.binary.as_ref()?.get(&platform())?;
        let dir = binaries_dir()?.join(&self.id).join(&self.version);
        let program = dir.join(b.cmd.trim_start_matches("./"));
        Some(Install::Archive {
            url: b.archive.clone(),
            sha256: b.sha256.clone(),
            dir,
            program,
        })
    }

    /// The args and env its distribution runs it with.
    fn run_with(&self) -> (Vec<String>, BTreeMap<String, String>) {
        let d = &self.distribution;
        if let Some(p) = d.npx.as_ref().or(d.uvx.as_ref()) {
            return (p.args.clone(), p.env.clone());
        }
        d.binary
            .as_ref()
            .and_then(|b| b.get(&platform()))
            .map(|b| (b.args.clone(), b.env.clone()))
            .unwrap_or_default()
    }

    /// The catalogue entry that knows this agent (its registry id), if any.
    pub fn catalogue_entry(&self) -> Option<&'static Agent> {
        catalogue::all()
            .iter()
            .find(|c| c.about.registry.as_deref() == Some(self.id.as_str()))
    }

    /// The agents.toml section declaring this entry as `name`: the catalogue's own
    /// section where the catalogue knows the agent, else one made from its
    /// distribution. `None`: no distribution runs here (no archive for this platform).
    pub fn declaration(&self, name: &str) -> Option<String> {
        if let Some(known) = self.catalogue_entry() {
            return catalogue::section(&known.name);
        }
        let mut install = self.install()?;
        if let Install::Npm { package, bin } = &mut install
            && self.catalogue_entry().is_none()
        {
            // The program npx would run: from the installed package, else as published.
            let (name, unscoped) = npm_name(package);
            if let Some(found) = installed_npm_bin(&name, &unscoped)
                .or_else(|| published_npm_bin(package, &unscoped))
            {
                *bin = found;
            }
        }
        let (args, env) = self.run_with();
        let command = match &install {
            Install::Npm { bin, .. } => bin.clone(),
            Install::Uv { program, .. } => program.clone(),
            Install::Archive { program, .. } => program.display().to_string(),
        };
        let mut table = toml::Table::new();
        table.insert("command".into(), command.into());
        table.insert("args".into(), args.into());
        table.insert(
            "description".into(),
            crate::text::one_line(&format!(
                "{} (ACP registry: {})",
                self.name, self.description
            ))
            .into(),
        );
        table.insert("install".into(), install.line(&self.id).into());
        if let Install::Npm { package, .. } = &install {
            table.insert("npm".into(), package.clone().into());
        }
        table.insert("registry".into(), self.id.clone().into());
        table.insert(
            "limits".into(),
            format!(
                "declared from the ACP registry ({} {}): missionboard knows no flags that make it ask before each tool call, so only what it sends to session/request_permission is gated; its state dirs and endpoints are not declared",
                install.kind(),
                self.version
            )
            .into(),
        );
        if !env.is_empty() {
            table.insert(
                "env".into(),
                toml::Value::Table(env.into_iter().map(|(k, v)| (k, v.into())).collect()),
            );
        }
        let mut doc = toml::Table::new();
        let mut agents = toml::Table::new();
        agents.insert(name.to_string(), toml::Value::Table(table));
        doc.insert("agents".into(), toml::Value::Table(agents));
        let text = toml::to_string(&doc).ok()?;
        Some(format!(
            "# From the ACP registry: {} {} ({}).\n{text}",
            self.id,
            self.version,
            install.kind()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_snapshot_parses_and_holds_the_three_reachable_agents() {
        let index = parse(SHIPPED, "shipped").unwrap();
        assert!(
            index
                .source
                .contains("commit 3de1678346d1b37b6c3f07de503043ebcbb9cbdb, 2026-02-07"),
            "{}",
            index.source
        );
        for id in ["cline", "kilo", "fast-agent", "codex-acp", "opencode"] {
            assert!(index.get(id).is_some(), "{id}: {:?}", index.ids());
        }
        let fast = index.get("fast-agent").unwrap().install().unwrap();
        assert_eq!(
            fast,
            Install::Uv {
                package: "fast-agent-acp==0.10.1".into(),
                program: "fast-agent-acp".into()
            }
        );
        assert_eq!(
            fast.line("fast-agent"),
            "uv tool install fast-agent-acp==0.10.1"
        );
    }

    #[test]
    fn npm_names_lose_their_versions_and_keep_their_scopes() {
        assert_eq!(npm_name("cline@3.0.4"), ("cline".into(), "cline".into()));
        assert_eq!(
            npm_name("@kilocode/cli@7.5.5"),
            ("@kilocode/cli".into(), "cli".into())
        );
        assert_eq!(npm_name("plain"), ("plain".into(), "plain".into()));
    }

    #[test]
    fn the_bin_npx_runs_is_the_only_one_the_named_one_or_an_alias() {
        let v = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
        assert_eq!(npx_bin(&v(r#""./bin/x""#), "cline"), Some("cline".into()));
        assert_eq!(
            npx_bin(&v(r#"{"cline": "./bin/cline"}"#), "cline"),
            Some("cline".into())
        );
        assert_eq!(
            npx_bin(
                &v(r#"{"kilo": "./bin/kilo", "kilocode": "./bin/kilo"}"#),
                "cli"
            ),
            Some("kilo".into())
        );
        assert_eq!(npx_bin(&v(r#"{"a": "./a", "b": "./b"}"#), "cli"), None);
    }

    #[test]
    fn an_entry_declares_a_whole_agent_that_parses() {
        let index = parse(SHIPPED, "shipped").unwrap();
        let text = index
            .get("fast-agent")
            .unwrap()
            .declaration("fast-agent")
            .unwrap();
        let agents = super::super::parse(Path::new("x"), &text).unwrap();
        assert_eq!(agents[0].command, "fast-agent-acp");
        assert_eq!(agents[0].args, ["-x"]);
        assert_eq!(agents[0].env["FAST_AGENT_MODEL"], "codexplan");
        assert_eq!(agents[0].about.registry.as_deref(), Some("fast-agent"));
        // The catalogue knows codex-acp: its own section, asking flags and all.
        let codex = index
            .get("codex-acp")
            .unwrap()
            .declaration("codex-acp")
            .unwrap();
        assert_eq!(codex, catalogue::section("codex").unwrap());
    }
}
