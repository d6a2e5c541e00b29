//! A dry handshake with a declared agent, for `doctor`: the agent is started as a
//! unit would be (its env, its state paths, confined by an envelope's sandbox) in a
//! scratch directory, answers `initialize` and `session/new`, and is shut down. No
//! mission exists and no prompt is sent, so no model is ever called.

use std::path::Path;
use std::time::Duration;

use super::confinement::{self, MissionTmp, UnitSite, Workspace};
use crate::acp_client::{Unit, UnitError, UnitSpec};
use crate::agents::{AUTH_REQUIRED, Agent};
use crate::envelope::sandbox::SandboxDecl;
use crate::paths::Paths;

/// How long the whole handshake may take (npx-style cold starts are slow).
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(60);

/// What the agent said about itself.
#[derive(Debug, Clone)]
pub struct Greeting {
    pub name: Option<String>,
    pub version: Option<String>,
}

/// Why the handshake failed, and what fixes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub what: String,
    pub fix: String,
}

impl Failure {
    /// What failed and its fix, the fix said once.
    pub fn said(&self) -> String {
        if self.what.ends_with(&self.fix) {
            self.what.clone()
        } else {
            format!("{} — {}", self.what, self.fix)
        }
    }
}

/// Start `agent` in a scratch dir under `decl`, open a session, shut it down.
pub async fn dry_handshake(
    paths: &Paths,
    agent: &Agent,
    decl: &SandboxDecl,
    bridge_exe: &Path,
    timeout: Duration,
) -> Result<Greeting, Failure> {
    let scratch_id = uuid::Uuid::new_v4().to_string();
    let agent = &agent.for_unit().map_err(|e| Failure {
        what: format!("cannot pick a loopback port for {}: {e}", agent.name),
        fix: "free a loopback port, then run doctor again".to_string(),
    })?;
    let (paths, declared, decl, exe) = (
        paths.clone(),
        agent.clone(),
        decl.clone(),
        bridge_exe.to_path_buf(),
    );
    let setup = crate::store::blocking(move || {
        let tmp = MissionTmp::create(&scratch_id)?;
        let workspace = tmp.path().join("workspace");
        std::fs::create_dir(&workspace)?;
        let env = declared.unit_env(None, tmp.path())?;
        let site = UnitSite {
            paths: &paths,
            agent: &declared,
            workspace: Workspace {
                dir: &workspace,
                commit: Default::default(),
                extra_roots: &[],
            },
            bridge_exe: &exe,
            model_base_url: None,
        };
        let confined = confinement::confine_unit(site, &decl, &tmp)?;
        anyhow::Ok((tmp, workspace, env, confined))
    })
    .await;
    let (tmp, workspace, env, confined) = setup.map_err(|e| Failure {
        what: format!("{e:#}"),
        fix: "fix the agent's declaration in agents.toml (see above)".to_string(),
    })?;
    let spec = UnitSpec {
        program: agent.program(),
        args: agent.args.clone(),
        env,
        cwd: workspace,
        additional_dirs: Vec::new(),
        mcp_servers: Vec::new(),
        meta: agent.session_meta.clone(),
        pid_slot: None,
        // A dry handshake is a unit like any other: its whole tree ends with it.
        supervisor: None,
    };
    let outcome =
        tokio::time::timeout(timeout, Unit::start_confined(spec, None, confined.prepared)).await;
    let result = match outcome {
        Ok(Ok(unit)) => {
            let caps = unit.capabilities().clone();
            unit.shutdown().await;
            Ok(Greeting {
                name: caps.agent_name,
                version: caps.agent_version,
            })
        }
        Ok(Err(e)) => Err(failure(agent, &e)),
        Err(_) => Err(Failure {
            what: format!(
                "no session within {} (initialize, then session/new)",
                crate::duration::format(timeout)
            ),
            fix: format!(
                "run '{}' by hand: it must speak ACP on stdio; a first run may be waiting for a login or a prompt",
                agent.command_line()
            ),
        }),
    };
    drop(tmp);
    result
}

/// The failure of a start, with the fix it calls for.
pub fn failure(agent: &Agent, e: &UnitError) -> Failure {
    let text = e.to_string();
    let install = || {
        agent
            .about
            .install
            .clone()
            .or_else(|| {
                crate::agents::catalogue::get(&agent.name)
                    .filter(|c| c.command == agent.command)
                    .and_then(|c| c.about.install.clone())
            })
            .unwrap_or_else(|| "install it, or fix its declaration in agents.toml".to_string())
    };
    let lower = text.to_ascii_lowercase();
    match e {
        UnitError::Spawn { .. } => Failure {
            what: format!("not installed: {text}"),
            fix: install(),
        },
        UnitError::LoginRequired { terminal, .. } => {
            let what = agent.login_needed(&text, terminal.as_ref());
            let fix = what
                .rsplit_once(" — ")
                .map_or_else(|| what.clone(), |(_, step)| step.to_string());
            Failure { what, fix }
        }
        UnitError::Rpc { code, .. } if *code == AUTH_REQUIRED => {
            let what = agent.login_needed(&text, None);
            let fix = what
                .rsplit_once(" — ")
                .map_or_else(|| what.clone(), |(_, step)| step.to_string());
            Failure { what, fix }
        }
        _ if lower.contains("trust") => Failure {
            what: format!("the workspace is not trusted: {text}"),
            fix: format!(
                "let {} trust the mission's workspace (gemini: GEMINI_CLI_TRUST_WORKSPACE=true in its env, as the catalogue sets it)",
                agent.name
            ),
        },
        _ if [
            "api key",
            "api_key",
            "login",
            "log in",
            "unauthorized",
            "401",
        ]
        .iter()
        .any(|w| lower.contains(w)) =>
        {
            let what = agent.login_needed(&text, None);
            let fix = what
                .rsplit_once(" — ")
                .map_or_else(|| what.clone(), |(_, step)| step.to_string());
            Failure { what, fix }
        }
        _ => Failure {
            what: text,
            fix: format!(
                "run '{}' by hand to see why it does not open a session",
                agent.command_line()
            ),
        },
    }
}
