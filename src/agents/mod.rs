//! Agent declarations: `agents.toml` in the workspace, then in home.
//!
//! ```toml
//! [agents.claude]
//! command = "claude-agent-acp"
//! args = []
//! env = { ANTHROPIC_API_KEY = "…" }
//! description = "Claude over ACP"
//!
//! [agents.planner-local]
//! command = "missionboard"
//! args = ["agent"]
//! model = "qwen3:8b"                      # the native agent's model keys; each
//! base_url = "http://127.0.0.1:8080/v1"  # falls back to the model-* config key
//! api_key_env = "OPENAI_API_KEY"
//! ```
//!
//! A command of exactly `missionboard` means this running binary, so the built-in
//! agents work the same from `cargo run` and from an installed copy.

pub mod acp_registry;
pub mod catalogue;
pub mod endpoints;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::{Config, MODEL_API_KEY_ENV, MODEL_BASE_URL, MODEL_NAME, MODEL_TIMEOUT};
use crate::paths::Paths;

/// The file name looked up in each search directory.
pub const FILE_NAME: &str = "agents.toml";
/// The command name that stands for this binary.
pub const SELF_COMMAND: &str = "missionboard";

// How the host hands the native agent its resolved model settings (the agent reads
// them back in `planner::settings`).
/// The endpoint, as the host passes it to a native-agent unit.
pub const ENV_BASE_URL: &str = "MISSIONBOARD_MODEL_BASE_URL";
/// The model name.
pub const ENV_MODEL: &str = "MISSIONBOARD_MODEL_NAME";
/// The native agent's per-call model timeout (`model-timeout`), handed down like the
/// rest of its model settings.
pub const ENV_MODEL_TIMEOUT: &str = "MISSIONBOARD_MODEL_TIMEOUT";
/// The name of the variable that holds the endpoint's API key.
pub const ENV_API_KEY_ENV: &str = "MISSIONBOARD_MODEL_API_KEY_ENV";

/// The parts of a running agent's self-description the runtime cares about (what
/// it says when a unit starts). It lives here, beside the declarations, so the
/// envelope can judge model bounds without knowing the protocol that carried it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentCaps {
    pub agent_name: Option<String>,
    pub agent_version: Option<String>,
    pub load_session: bool,
    /// `sessionCapabilities.resume`: the agent carries a session on without replaying it.
    pub resume_session: bool,
    /// `sessionCapabilities.close`: the agent frees a session on `session/close`.
    pub close_session: bool,
    pub models: Option<SessionModels>,
    /// Ids of the agent's advertised auth methods (a hint for "needs login").
    pub auth_methods: Vec<String>,
    /// The first terminal auth method it advertised: how its own command logs in.
    pub terminal_login: Option<TerminalLogin>,
}

/// An agent's terminal login (ACP `authMethods` of type `terminal`): its own
/// command run interactively with these args and env added.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TerminalLogin {
    pub name: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
}

impl AgentCaps {
    /// The session models the agent offers, if it advertised any at all.
    pub fn offered_models(&self) -> Option<&SessionModels> {
        self.models.as_ref().filter(|m| !m.available.is_empty())
    }
}

/// Models the agent advertised for the session (from a `model` config
/// option, or the older `models` field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionModels {
    pub available: Vec<String>,
    pub current: String,
    /// The config option that selects the model (`session/set_config_option`);
    /// `None` when the agent used the older `models` field (`session/set_model`).
    pub config_id: Option<String>,
}

/// One declared agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub description: String,
    /// Model settings for the native agent (`missionboard agent`); unset keys fall
    /// back to the `model-*` config keys. Other agents pick their own model.
    pub model: ModelKeys,
    /// Directories the agent keeps its own state in (`~/.claude`, `~/.cache`, …): a
    /// unit's sandbox lets it write them whatever the envelope's write list says.
    /// Templates: `~`, `{workspace}` and `${VAR:-default}` (see [`expand_vars`]).
    pub state_dirs: Vec<String>,
    /// Files the agent keeps its own state in, with the content a missing one is
    /// created with (`~/.claude.json` → `{}`).
    pub state_files: BTreeMap<String, String>,
    /// Host variables handed to the unit even when their names look like secrets.
    pub passthrough: Vec<String>,
    /// The agent's model endpoints as URL templates: their ports are `{model}` when
    /// its own config names none ([`endpoints::resolve`]).
    pub endpoints: Vec<String>,
    /// Whose config file names its endpoint (`codex`, `opencode`, `claude`: see
    /// [`endpoints::READERS`]); read before the declared `endpoints`.
    pub endpoint_config: Option<String>,
    /// Loopback ports of the agent's own servers: always connectable.
    pub ports: Vec<u16>,
    /// Merged into `session/new`'s `_meta`.
    pub session_meta: serde_json::Map<String, serde_json::Value>,
    /// The session mode the unit is put in once its session opens (`session/set_mode`),
    /// whatever mode the agent's own settings start it in.
    pub mode: Option<String>,
    /// The peak resident memory a unit of it is expected to reach (its process tree,
    /// in bytes) until missions of it have recorded their own peaks: what
    /// `fleet-max-memory` admits it by at first.
    pub expected_rss: Option<u64>,
    /// How to install it, how to log in, how to ask its version, what we cannot hold.
    pub about: About,
    /// The `agents.toml` that declared it ([`catalogue::SOURCE`] for a catalogue entry).
    pub source: PathBuf,
}

/// What an operator reads about an agent: none of it changes how a unit runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct About {
    /// The line that installs it.
    pub install: Option<String>,
    /// Its npm package pinned to the version the catalogue was checked against.
    pub npm: Option<String>,
    /// What to do when it says authentication is required.
    pub login: Option<String>,
    /// Arguments that make the program print its version (when no package.json says).
    pub version_args: Vec<String>,
    /// What missionboard cannot hold for it.
    pub limits: Option<String>,
    /// Its id in the ACP registry's index ([`acp_registry`]).
    pub registry: Option<String>,
}

/// A declaration's model keys: `model`, `base_url`, `api_key_env`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelKeys {
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
}

impl Agent {
    /// The program to spawn: `missionboard` resolves to the running executable.
    pub fn program(&self) -> PathBuf {
        if self.command == SELF_COMMAND
            && let Ok(exe) = std::env::current_exe()
        {
            return exe;
        }
        PathBuf::from(&self.command)
    }

    /// Does this declaration run missionboard's native agent (`missionboard agent`)?
    pub fn is_native_agent(&self) -> bool {
        self.command == SELF_COMMAND && self.args.first().is_some_and(|a| a == "agent")
    }

    /// This declaration as one unit runs it: each `{own_port}` in its args becomes a
    /// loopback port free right now, listed among its own ports (so confinement lets
    /// the unit connect to it). An agent that serves itself on a port it is told gets
    /// one of its own per unit: two at once never fight over a fixed port, and a
    /// fallback port the sandbox would refuse is never needed.
    pub fn for_unit(&self) -> std::io::Result<Agent> {
        let mut unit = self.clone();
        if unit.args.iter().any(|a| a.contains(OWN_PORT_PLACEHOLDER)) {
            let port = std::net::TcpListener::bind(("127.0.0.1", 0))?
                .local_addr()?
                .port();
            for arg in &mut unit.args {
                *arg = arg.replace(OWN_PORT_PLACEHOLDER, &port.to_string());
            }
            unit.ports.push(port);
        }
        Ok(unit)
    }

    /// `command args…` as the operator would type it.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The environment for a unit of this agent working with temp dir `tmp`: its
    /// declared env (`{tmp}` expanded), `TMPDIR`, the passed-through host variables
    /// that are set, plus — for the native agent — the resolved model settings and the
    /// API key they name.
    /// Without a config (a dry handshake) the native agent gets only its declared keys.
    pub fn unit_env(
        &self,
        config: Option<&Config>,
        tmp: &Path,
    ) -> anyhow::Result<BTreeMap<String, String>> {
        let tmp_text = tmp.display().to_string();
        let mut env: BTreeMap<String, String> = self
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.replace(TMP_PLACEHOLDER, &tmp_text)))
            .collect();
        env.insert("TMPDIR".to_string(), tmp_text);
        for name in &self.passthrough {
            if !env.contains_key(name)
                && let Ok(value) = std::env::var(name)
            {
                env.insert(name.clone(), value);
            }
        }
        if !self.is_native_agent() {
            return Ok(env);
        }
        let keys = &self.model;
        let pick = |declared: &Option<String>, key: &str| -> anyhow::Result<Option<String>> {
            match declared.as_deref().map(str::trim).filter(|v| !v.is_empty()) {
                Some(v) => Ok(Some(v.to_string())),
                None => match config {
                    Some(config) => config.get(key),
                    None => Ok(None),
                },
            }
        };
        let settings = [
            (ENV_BASE_URL, pick(&keys.base_url, MODEL_BASE_URL)?),
            (ENV_MODEL, pick(&keys.model, MODEL_NAME)?),
            (ENV_API_KEY_ENV, pick(&keys.api_key_env, MODEL_API_KEY_ENV)?),
            (ENV_MODEL_TIMEOUT, pick(&None, MODEL_TIMEOUT)?),
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
}

/// The JSON-RPC error code an ACP agent answers with when it needs a login first.
pub const AUTH_REQUIRED: i32 = -32000;

/// In an env value: the mission's temp dir.
pub const TMP_PLACEHOLDER: &str = "{tmp}";

/// In an arg: a free loopback port picked for each unit (see [`Agent::for_unit`]).
pub const OWN_PORT_PLACEHOLDER: &str = "{own_port}";

/// Expand `${VAR}` and `${VAR:-default}` with `lookup` (unset, empty or non-UTF-8
/// variables take the default, or nothing). Text without `${` is returned as is.
pub fn expand_vars(template: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, d),
            None => (inner, ""),
        };
        match lookup(name).filter(|v| !v.is_empty()) {
            Some(v) => out.push_str(&v),
            None => out.push_str(default),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The host's value of a variable, for [`expand_vars`].
pub fn host_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The TCP port an endpoint URL reaches (its scheme's default when it names none).
pub fn url_port(url: &str) -> Option<u16> {
    reqwest::Url::parse(url).ok()?.port_or_known_default()
}

impl Agent {
    /// The state directories with host variables expanded (`~` stays for the sandbox).
    pub fn state_dir_paths(&self) -> Vec<String> {
        self.state_dirs
            .iter()
            .map(|d| expand_vars(d, host_var))
            .collect()
    }

    /// The state files with host variables expanded, and their initial content.
    pub fn state_file_paths(&self) -> Vec<(String, String)> {
        self.state_files
            .iter()
            .map(|(f, init)| (expand_vars(f, host_var), init.clone()))
            .collect()
    }

    /// Each model endpoint a unit of this agent working in `workspace` would reach,
    /// read where the agent reads it, with where it was found.
    pub fn model_endpoints(&self, workspace: &Path) -> Vec<endpoints::Endpoint> {
        let var = endpoints::unit_var(self);
        endpoints::resolve(
            self,
            &endpoints::UnitView {
                var: &var,
                workspace,
            },
        )
    }

    /// Where this agent's own config points it, for judging a failure: read by the
    /// declaration's `endpoint_config`, or — a declaration that names no reader —
    /// by the reader of the catalogue entry with the same command (its config is
    /// where the agent reads its endpoint whatever its declaration says), besides
    /// the endpoints declared.
    pub fn configured_endpoints(&self, workspace: &Path) -> Vec<endpoints::Endpoint> {
        let mut found = self.model_endpoints(workspace);
        if self.endpoint_config.is_some() {
            return found;
        }
        let reader = catalogue::all()
            .iter()
            .find(|c| c.command == self.command && c.endpoint_config.is_some());
        if let Some(known) = reader {
            let mut probe = self.clone();
            probe.endpoint_config = known.endpoint_config.clone();
            for e in probe.model_endpoints(workspace) {
                if !found.iter().any(|f| f.url == e.url) {
                    found.push(e);
                }
            }
        }
        found
    }

    /// The error for an agent that answered `authRequired`: what it said, and its
    /// login step.
    pub fn login_needed(&self, said: &str, terminal: Option<&TerminalLogin>) -> String {
        // The agent's own word first: the login it advertises, run in a terminal.
        let advertised = terminal.map(|t| {
            let mut words: Vec<String> = t.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
            words.push(self.command_line());
            words.extend(t.args.iter().cloned());
            crate::text::sanitize(&format!(
                "run '{}' in a terminal and log in ({})",
                words.join(" "),
                t.name
            ))
        });
        let step = advertised.or_else(|| self.about.login.clone()).or_else(|| {
            catalogue::get(&self.name)
                .filter(|c| c.command == self.command)
                .and_then(|c| c.about.login.clone())
        });
        format!(
            "agent {:?} needs a login before it can open a session ({}) — {}",
            self.name,
            crate::text::one_line(said),
            step.unwrap_or_else(|| format!(
                "log in with {} the way its documentation says, or export its API key",
                self.command
            ))
        )
    }

    /// Does this agent come from the built-in catalogue, unedited in its essentials?
    pub fn is_catalogue_entry(&self) -> bool {
        catalogue::get(&self.name).is_some_and(|c| c.command == self.command)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    agents: BTreeMap<String, Decl>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Decl {
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    api_key_env: Option<String>,
    #[serde(default)]
    state_dirs: Vec<String>,
    #[serde(default)]
    state_files: BTreeMap<String, String>,
    #[serde(default)]
    passthrough: Vec<String>,
    #[serde(default)]
    endpoints: Vec<String>,
    #[serde(default)]
    endpoint_config: Option<String>,
    #[serde(default)]
    ports: Vec<u16>,
    #[serde(default)]
    session_meta: Option<toml::Table>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    install: Option<String>,
    #[serde(default)]
    npm: Option<String>,
    #[serde(default)]
    login: Option<String>,
    #[serde(default)]
    version_args: Vec<String>,
    #[serde(default)]
    limits: Option<String>,
    #[serde(default)]
    registry: Option<String>,
    #[serde(default)]
    expected_rss: Option<String>,
}

/// Every declared agent, workspace declarations shadowing home ones of the same name.
#[derive(Debug, Default)]
pub struct Registry {
    agents: BTreeMap<String, Agent>,
    /// The files that were read, in search order.
    pub files: Vec<PathBuf>,
}

impl Registry {
    /// Read `agents.toml` from each search directory. A malformed file is an error that
    /// names the file and the line.
    pub fn load(paths: &Paths) -> anyhow::Result<Registry> {
        let mut reg = Registry::default();
        for dir in paths.search_dirs() {
            let path = dir.join(FILE_NAME);
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => anyhow::bail!("cannot read agents file {}: {e}", path.display()),
            };
            for agent in parse(&path, &text)? {
                reg.agents.entry(agent.name.clone()).or_insert(agent);
            }
            reg.files.push(path);
        }
        Ok(reg)
    }

    /// A declared agent by name.
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.agents.get(name)
    }

    /// All agents, sorted by name.
    pub fn all(&self) -> impl Iterator<Item = &Agent> {
        self.agents.values()
    }

    /// Names, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.agents.keys().map(String::as_str).collect()
    }
}

/// Parse one `agents.toml`.
pub fn parse(path: &Path, text: &str) -> anyhow::Result<Vec<Agent>> {
    let file: File = toml::from_str(text).map_err(|e| {
        let location = e
            .span()
            .map(|s| {
                let (line, col) = line_col(text, s.start);
                format!(":{line}:{col}")
            })
            .unwrap_or_default();
        anyhow::anyhow!(
            "agents file {}{location}: {} — fix the file (format: [agents.<name>] with command, args, env, description, passthrough, state_dirs, state_files, endpoints, endpoint_config, ports, session_meta, mode, install, npm, login, version_args, limits, registry, expected_rss; the native agent also takes model, base_url, api_key_env)",
            path.display(),
            e.message().trim()
        )
    })?;
    file.agents
        .into_iter()
        .map(|(name, d)| {
            if d.command.trim().is_empty() {
                anyhow::bail!(
                    "agents file {}: agent {name:?} has an empty command — name the program that speaks ACP on stdio",
                    path.display()
                );
            }
            let model = ModelKeys {
                model: d.model,
                base_url: d.base_url,
                api_key_env: d.api_key_env,
            };
            let session_meta = match d.session_meta {
                None => serde_json::Map::new(),
                Some(table) => match serde_json::to_value(table) {
                    Ok(serde_json::Value::Object(map)) => map,
                    _ => anyhow::bail!(
                        "agents file {}: agent {name:?}'s session_meta is not a table of JSON values",
                        path.display()
                    ),
                },
            };
            if let Some(reader) = d
                .endpoint_config
                .as_deref()
                .filter(|r| !endpoints::READERS.contains(r))
            {
                anyhow::bail!(
                    "agents file {}: agent {name:?} names endpoint_config {reader:?}, which missionboard cannot read — use one of {} or list its endpoints under endpoints",
                    path.display(),
                    endpoints::READERS.join(", ")
                );
            }
            if let Some(port) = d.ports.iter().find(|p| **p == 0) {
                anyhow::bail!(
                    "agents file {}: agent {name:?} lists port {port}: ports are TCP ports (1-65535)",
                    path.display()
                );
            }
            let expected_rss = match d.expected_rss.as_deref().map(crate::size::parse) {
                None => None,
                Some(Ok(bytes)) => Some(bytes),
                Some(Err(e)) => anyhow::bail!(
                    "agents file {}: agent {name:?}'s expected_rss: {e}",
                    path.display()
                ),
            };
            let agent = Agent {
                name,
                command: d.command,
                args: d.args,
                env: d.env,
                description: d.description,
                model,
                state_dirs: d.state_dirs,
                state_files: d.state_files,
                passthrough: d.passthrough,
                endpoints: d.endpoints,
                endpoint_config: d.endpoint_config,
                ports: d.ports,
                session_meta,
                mode: d.mode,
                expected_rss,
                about: About {
                    install: d.install,
                    npm: d.npm,
                    login: d.login,
                    version_args: d.version_args,
                    limits: d.limits,
                    registry: d.registry,
                },
                source: path.to_path_buf(),
            };
            if agent.model != ModelKeys::default() && !agent.is_native_agent() {
                anyhow::bail!(
                    "agents file {}: agent {:?} sets model, base_url or api_key_env, but only the native agent (command \"missionboard\", args [\"agent\", …]) reads them — configure this agent's model its own way and remove those keys",
                    path.display(),
                    agent.name
                );
            }
            Ok(agent)
        })
        .collect()
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_declarations_and_names_the_line_of_a_mistake() {
        let p = Path::new("/x/agents.toml");
        let ok = "[agents.a]\ncommand = \"missionboard\"\nargs = [\"stub-agent\"]\ndescription = \"d\"\n";
        let agents = parse(p, ok).unwrap();
        assert_eq!(agents[0].command_line(), "missionboard stub-agent");

        let bad = "[agents.a]\ncommand = \"x\"\ncomand = \"y\"\n";
        let err = parse(p, bad).unwrap_err().to_string();
        assert!(err.starts_with("agents file /x/agents.toml:3:1: "), "{err}");
        assert!(err.contains("comand"), "{err}");

        let err = parse(p, "[agents.a\n").unwrap_err().to_string();
        assert!(err.contains("/x/agents.toml:1:"), "{err}");

        let native =
            "[agents.p]\ncommand = \"missionboard\"\nargs = [\"agent\"]\nmodel = \"qwen3:8b\"\n";
        let agents = parse(p, native).unwrap();
        assert_eq!(agents[0].model.model.as_deref(), Some("qwen3:8b"));
        assert!(agents[0].is_native_agent());
        let err = parse(
            p,
            "[agents.c]\ncommand = \"claude-agent-acp\"\nmodel = \"opus\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(
                "agent \"c\" sets model, base_url or api_key_env, but only the native agent"
            ),
            "{err}"
        );
    }

    fn agent(args: &[&str], model: ModelKeys) -> Agent {
        Agent {
            name: "p".into(),
            command: "missionboard".into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            description: String::new(),
            model,
            state_dirs: Vec::new(),
            state_files: BTreeMap::new(),
            passthrough: Vec::new(),
            endpoints: Vec::new(),
            endpoint_config: None,
            ports: Vec::new(),
            session_meta: serde_json::Map::new(),
            mode: None,
            expected_rss: None,
            about: About::default(),
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
        let env = a.unit_env(Some(&config), Path::new("/t")).unwrap();
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
        let env = agent(&["stub-agent"], ModelKeys::default())
            .unit_env(Some(&config), Path::new("/t"))
            .unwrap();
        assert_eq!(env.keys().collect::<Vec<_>>(), ["TMPDIR"]);
    }
}
