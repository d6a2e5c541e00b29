//! Every grant decision a unit's host makes (what the unit may write, read and
//! connect to, and why), worked out without starting it: for a mission that ran
//! (`mission show`, on the process's host) and for an agent not fired yet (`doctor
//! --agent`, which needs no store, so it is worked out from the paths alone).

use std::path::{Path, PathBuf};

use crate::agents::{Agent, Registry, SELF_COMMAND, catalogue};
use crate::config::{self, Config};
use crate::envelope::sandbox::SandboxDecl;
use crate::fleet::confinement::{self, MissionTmp, Workspace};
use crate::mission::Mission;
use crate::ops::host::Host;
use crate::paths::Paths;
use crate::worktree::{CommitAccess, Worktrees};

/// The grants of mission `m`'s unit, as its host made them, each `Grant:` line
/// worded for `mission show`. Nothing when its agent is no longer known.
pub fn mission_grants(host: &Host, m: &Mission, decl: &SandboxDecl) -> Vec<String> {
    let (paths, store) = (host.paths(), host.store());
    let Ok(registry) = Registry::load(paths) else {
        return Vec::new();
    };
    let Some(agent) = registry
        .get(&m.agent_name)
        .or_else(|| catalogue::get(&m.agent_name))
    else {
        return Vec::new();
    };
    let worktree = Worktrees::new(store.clone()).get(&m.id).ok().flatten();
    let commit = worktree
        .as_ref()
        .and_then(|wt| crate::worktree::commit_access(wt).ok())
        .unwrap_or_default();
    let dir = worktree.map_or_else(|| PathBuf::from(&m.cwd), |wt| wt.path);
    let config = Config::new(store.clone());
    let model_url = match agent.model.base_url.clone() {
        Some(url) if agent.is_native_agent() => Some(url),
        _ => config.get(config::MODEL_BASE_URL).ok().flatten(),
    };
    let tmp = MissionTmp::path_for(&m.id);
    let roots = crate::mission::Missions::new(store.clone())
        .roots(&m.id)
        .unwrap_or_default();
    let workspace = Workspace {
        dir: &dir,
        commit,
        extra_roots: &roots,
    };
    match grants(paths, agent, decl, workspace, &tmp, model_url.as_deref()) {
        Ok(grants) => grants
            .into_iter()
            .map(|g| format!("Grant:     {g}"))
            .collect(),
        Err(e) => vec![format!("Grant:     refused — {e}")],
    }
}

/// The grants a unit of `agent` would get under `decl`, fired from `dir` (no
/// worktree), or why the fire would be refused. The mission's own scratch
/// directory is named by a placeholder: no mission exists yet.
///
/// It takes the paths, not an `ops::Host` as [`mission_grants`] does: a host holds a
/// store, and `doctor --agent` answers before a store exists and while a shared one
/// is unreachable; no record is read (no worktree, no extra roots, the model URL
/// handed in), so the paths are the whole of what it needs.
pub fn dry_grants(
    paths: &Paths,
    agent: &Agent,
    decl: &SandboxDecl,
    dir: &Path,
    model_url: Option<&str>,
) -> Result<Vec<String>, String> {
    let tmp = MissionTmp::path_for("<mission id>");
    let workspace = Workspace {
        dir,
        commit: CommitAccess::default(),
        extra_roots: &[],
    };
    grants(paths, agent, decl, workspace, &tmp, model_url)
}

fn grants(
    paths: &Paths,
    agent: &Agent,
    decl: &SandboxDecl,
    workspace: Workspace<'_>,
    tmp: &Path,
    model_url: Option<&str>,
) -> Result<Vec<String>, String> {
    let exe = std::env::current_exe().unwrap_or_else(|_| SELF_COMMAND.into());
    let site = confinement::UnitSite {
        paths,
        agent,
        workspace,
        bridge_exe: &exe,
        model_base_url: model_url,
    };
    confinement::grant_lines(site, decl, tmp)
}
