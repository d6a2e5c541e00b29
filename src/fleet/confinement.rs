//! A unit's confinement: its per-mission temp dir and the envelope's sandbox expanded
//! for this mission, built into a ruleset before the unit is spawned.

use std::path::{Path, PathBuf};

use crate::agents::Agent;
use crate::confine;
use crate::envelope::sandbox::{self, Places, Resolved, SandboxDecl};
use crate::paths::Paths;

/// `{tmp}` dirs are `<temp dir>/missionboard-<mission id>`.
const TMP_PREFIX: &str = "missionboard-";

/// `{tmp}`: a directory of the mission's own, created when its unit starts and
/// removed when the unit is gone (dropped with the unit's drive task).
#[derive(Debug)]
pub struct MissionTmp {
    path: PathBuf,
}

impl MissionTmp {
    pub fn create(mission_id: &str) -> anyhow::Result<MissionTmp> {
        use std::os::unix::fs::DirBuilderExt;
        let path = std::env::temp_dir().join(format!("{TMP_PREFIX}{mission_id}"));
        // A leftover from a host that died is this mission's own: start it afresh.
        let _ = std::fs::remove_dir_all(&path);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot create the mission's temp dir {}: {e}",
                    path.display()
                )
            })?;
        Ok(MissionTmp { path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for MissionTmp {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(dir = %self.path.display(), "could not remove the mission's temp dir: {e}");
        }
    }
}

/// Remove the `{tmp}` dirs of this store's missions that are at rest: a host killed
/// outright (SIGKILL, a crash) never got to remove its units' dirs. Dirs of missions
/// this store does not know (another home's) are left alone.
pub fn sweep_leftover_tmp(missions: &crate::mission::Missions) {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(id) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TMP_PREFIX))
            .filter(|id| uuid::Uuid::parse_str(id).is_ok())
        else {
            continue;
        };
        if let Ok(Some(m)) = missions.get(id)
            && m.status.is_terminal()
        {
            drop(MissionTmp { path: entry.path() });
        }
    }
}

/// What a unit is started inside.
pub struct UnitConfinement {
    pub resolved: Resolved,
    pub prepared: Option<confine::Prepared>,
}

/// Where a unit works: its directory (`{workspace}`), and in a worktree, what
/// committing on the mission's own branch needs.
pub struct Workspace<'a> {
    pub dir: &'a Path,
    pub commit: crate::worktree::CommitAccess,
}

/// Expand `decl` for a unit of `agent` working in `workspace`, and build its ruleset.
/// Refused (before anything is spawned) when an entry lies inside a protected place.
pub fn confine_unit(
    paths: &Paths,
    agent: &Agent,
    decl: &SandboxDecl,
    workspace: Workspace<'_>,
    tmp: &MissionTmp,
    bridge_exe: &Path,
    model_base_url: Option<&str>,
) -> anyhow::Result<UnitConfinement> {
    let places = Places {
        workspace: workspace.dir.to_path_buf(),
        tmp: tmp.path().to_path_buf(),
        user_home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
        protected: vec![paths.home.clone()],
        state_dirs: agent.state_dirs.clone(),
        executables: [agent.program(), bridge_exe.to_path_buf()]
            .into_iter()
            .map(|p| crate::paths::locate_program(&p.to_string_lossy(), None).unwrap_or(p))
            // An interpreter's script is part of the program it runs.
            .chain(
                agent
                    .args
                    .iter()
                    .map(PathBuf::from)
                    .filter(|a| a.is_absolute() && a.is_file()),
            )
            .collect(),
        model_port: model_base_url.and_then(url_port),
        commit_writes: workspace.commit.write,
        commit_reads: workspace.commit.read,
    };
    let resolved = sandbox::resolve(decl, &places)
        .map_err(|e| anyhow::anyhow!("agent {:?} cannot be confined: {e}", agent.name))?;
    let prepared = confine::prepare(&resolved.confinement)
        .map_err(|e| anyhow::anyhow!("cannot build the unit's sandbox: {e}"))?;
    Ok(UnitConfinement { resolved, prepared })
}

/// The TCP port an endpoint URL reaches (its scheme's default when it names none).
fn url_port(url: &str) -> Option<u16> {
    reqwest::Url::parse(url).ok()?.port_or_known_default()
}
