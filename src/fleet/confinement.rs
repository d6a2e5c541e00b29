//! A unit's confinement: its per-mission temp dir and the envelope's sandbox expanded
//! for this mission, built into a ruleset before the unit is spawned.

use std::path::{Path, PathBuf};

use crate::agents::Agent;
use crate::confine;
use crate::envelope::sandbox::{self, Places, Resolved, SandboxDecl};
use crate::paths::Paths;

/// `{tmp}` dirs are `<temp dir>/missionboard-<uid>/<mission id>`: one private
/// directory of this user's holds them all. Under a sandbox that writes everywhere
/// but the home, the ruleset is built entry by entry around the home, one rule per
/// entry of each directory on the way there (often the temp dir itself): one entry
/// for every unit's dir keeps that listing, and each unit's start, the same size
/// however many units run or died without removing theirs.
fn tmp_root() -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    std::env::temp_dir().join(format!("missionboard-{}", unsafe { libc::geteuid() }))
}

/// Where dirs were kept before [`tmp_root`]: `<temp dir>/missionboard-<mission id>`.
const LEGACY_TMP_PREFIX: &str = "missionboard-";

const TMP_ROOT: crate::paths::PrivateDirUse = crate::paths::PrivateDirUse {
    what: "temp directory",
    needs: "missions' temp dirs",
    moved_by: "TMPDIR",
};

/// `{tmp}`: a directory of the mission's own, created when its unit starts and
/// removed when the unit is gone (dropped with the unit's drive task).
#[derive(Debug)]
pub struct MissionTmp {
    path: PathBuf,
}

impl MissionTmp {
    /// Where a mission's temp dir is (whether or not it exists now).
    pub fn path_for(mission_id: &str) -> PathBuf {
        tmp_root().join(mission_id)
    }

    pub fn create(mission_id: &str) -> anyhow::Result<MissionTmp> {
        use std::os::unix::fs::DirBuilderExt;
        // Checked on every start: it sits in a directory every user may write.
        crate::paths::ensure_private_dir(&tmp_root(), TMP_ROOT)?;
        let path = MissionTmp::path_for(mission_id);
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
    // Dirs of the layout before [`tmp_root`] are swept too, where they still lie.
    let roots = [(tmp_root(), ""), (std::env::temp_dir(), LEGACY_TMP_PREFIX)];
    for (root, prefix) in roots {
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(id) = name
                .to_str()
                .and_then(|n| n.strip_prefix(prefix))
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
    /// The mission's extra roots (`--add-dir`), granted as the workspace is.
    pub extra_roots: &'a [PathBuf],
}

/// Who a unit is and where it runs: what its placeholders stand for, but `{tmp}`.
pub struct UnitSite<'a> {
    pub paths: &'a Paths,
    pub agent: &'a Agent,
    pub workspace: Workspace<'a>,
    /// The MCP bridge the unit runs for its mission tools.
    pub bridge_exe: &'a Path,
    /// `{model}` for an agent that declares no endpoints of its own.
    pub model_base_url: Option<&'a str>,
}

/// Expand `decl` for a unit at `site` with its temp dir `tmp`, create the agent's
/// state paths, and build its ruleset. Refused (before anything is spawned) when an
/// entry lies inside a protected place.
pub fn confine_unit(
    site: UnitSite<'_>,
    decl: &SandboxDecl,
    tmp: &MissionTmp,
) -> anyhow::Result<UnitConfinement> {
    let agent = site.agent;
    let places = unit_places(site, tmp.path());
    create_state_paths(&places, &agent.state_file_paths())?;
    let resolved = sandbox::resolve(decl, &places)
        .map_err(|e| anyhow::anyhow!("agent {:?} cannot be confined: {e}", agent.name))?;
    let prepared = confine::prepare(&resolved.confinement)
        .map_err(|e| anyhow::anyhow!("cannot build the unit's sandbox: {e}"))?;
    Ok(UnitConfinement { resolved, prepared })
}

/// What a unit of `agent` working in `dir` may connect to, and where the agent was
/// pointed (its endpoints as found; missionboard's own model endpoint for an agent
/// that declares none): what a failure is judged against
/// ([`crate::envelope::connect_refusal`]).
pub fn connect_site(
    agent: &Agent,
    dir: &Path,
    model_base_url: Option<&str>,
    confined: &UnitConfinement,
) -> crate::envelope::connect_refusal::ConnectSite {
    let mut endpoints = agent.configured_endpoints(dir);
    if agent.endpoints.is_empty()
        && agent.endpoint_config.is_none()
        && let Some(url) = model_base_url
    {
        endpoints.push(crate::agents::endpoints::Endpoint::new(
            url,
            "missionboard's model endpoint (config model-base-url)".to_string(),
        ));
    }
    crate::envelope::connect_refusal::ConnectSite {
        agent: agent.name.clone(),
        granted: confined.resolved.confinement.connect.clone(),
        enforced: confined.prepared.is_some()
            && confine::landlock_abi() >= confine::ABI_FOR_CONNECT,
        endpoints,
    }
}

/// What a unit at `site` would be granted, one line per decision, without creating
/// anything (`tmp` need not exist): for `mission show` and `doctor --agent`.
pub fn grant_lines(
    site: UnitSite<'_>,
    decl: &SandboxDecl,
    tmp: &Path,
) -> Result<Vec<String>, String> {
    let resolved = sandbox::resolve(decl, &unit_places(site, tmp))?;
    let mut lines = resolved.grants;
    lines.extend(resolved.carved);
    Ok(lines)
}

/// The places a unit's placeholders stand for, and what it runs.
fn unit_places(site: UnitSite<'_>, tmp: &Path) -> Places {
    let UnitSite {
        paths,
        agent,
        workspace,
        bridge_exe,
        model_base_url,
    } = site;
    let programs: Vec<PathBuf> = [agent.program(), bridge_exe.to_path_buf()]
        .into_iter()
        .map(|p| crate::paths::locate_program(&p.to_string_lossy(), None).unwrap_or(p))
        .collect();
    let interpreters: Vec<PathBuf> = programs.iter().flat_map(|p| interpreters(p)).collect();
    // {model}: the endpoints the agent declares; else missionboard's own model
    // endpoint (the native agent, the stubs, an agent declared without endpoints).
    let mut model_ports: Vec<(u16, String)> = agent
        .model_endpoints(workspace.dir)
        .into_iter()
        .filter_map(|e| {
            Some((
                e.port?,
                format!("{}'s endpoint {}", agent.name, e.describe()),
            ))
        })
        .collect();
    if agent.endpoints.is_empty()
        && let Some(url) = model_base_url
        && let Some(port) = crate::agents::url_port(url)
    {
        model_ports.push((port, format!("missionboard's model endpoint {url}")));
    }
    Places {
        workspace: workspace.dir.to_path_buf(),
        tmp: tmp.to_path_buf(),
        user_home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
        protected: vec![paths.home.clone()],
        agent: agent.name.clone(),
        state_dirs: agent.state_dir_paths(),
        state_files: agent
            .state_file_paths()
            .into_iter()
            .map(|(path, _)| path)
            .collect(),
        executables: programs
            .into_iter()
            .chain(interpreters)
            // An interpreter's script is part of the program it runs.
            .chain(
                agent
                    .args
                    .iter()
                    .map(PathBuf::from)
                    .filter(|a| a.is_absolute() && a.is_file()),
            )
            .collect(),
        model_ports,
        own_ports: agent.ports.clone(),
        // A running unit's args hold its picked port; a declaration's, the placeholder.
        own_port_per_unit: agent
            .args
            .iter()
            .any(|a| a.contains(crate::agents::OWN_PORT_PLACEHOLDER)),
        commit_writes: workspace.commit.write,
        commit_reads: workspace.commit.read,
        extra_roots: workspace.extra_roots.to_vec(),
    }
}

/// The interpreters a script runs on: the one its `#!` line names
/// (`#!/usr/bin/env node` → the `node` on PATH), and the `node` on PATH for a shell
/// shim into a `node_modules` tree (pnpm's and npm's command shims run `node <path>`),
/// so their installations are readable too.
fn interpreters(program: &Path) -> Vec<PathBuf> {
    use std::io::Read;
    let mut head = vec![0u8; 4096];
    let Ok(n) = std::fs::File::open(program).and_then(|mut f| f.read(&mut head)) else {
        return Vec::new();
    };
    let head = &head[..n];
    let Some(rest) = head.strip_prefix(b"#!") else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let line = rest.split(|b| *b == b'\n').next().unwrap_or_default();
    let mut words = std::str::from_utf8(line)
        .unwrap_or_default()
        .split_whitespace();
    if let Some(first) = words.next() {
        if Path::new(first).file_name().is_some_and(|n| n == "env") {
            found.extend(
                words
                    .find(|w| !w.starts_with('-') && !w.contains('='))
                    .and_then(|name| crate::paths::locate_program(name, None)),
            );
        } else {
            found.push(PathBuf::from(first));
        }
    }
    let shim_into_node_modules = head.windows(12).any(|w| w == b"node_modules");
    if shim_into_node_modules
        && let Some(node) = crate::paths::locate_program("node", None)
        && !found.contains(&node)
    {
        found.push(node);
    }
    found
}

/// Create the agent's state paths that do not exist yet, before the ruleset is built
/// (a path that does not exist cannot be granted): directories 0700, files 0600 with
/// their declared initial content. None inside a protected place (the resolve that
/// follows refuses those).
fn create_state_paths(places: &Places, files: &[(String, String)]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let agent = &places.agent;
    let dir_builder = || {
        let mut b = std::fs::DirBuilder::new();
        b.recursive(true).mode(0o700);
        b
    };
    for entry in &places.state_dirs {
        let Some(path) = sandbox::expand_path(entry, places) else {
            continue;
        };
        if path.exists() || sandbox::is_protected(&path, places) {
            continue;
        }
        dir_builder().create(&path).map_err(|e| {
            anyhow::anyhow!("cannot create {agent}'s state dir {}: {e}", path.display())
        })?;
    }
    for (entry, content) in files {
        let Some(path) = sandbox::expand_path(entry, places) else {
            continue;
        };
        if path.exists() || sandbox::is_protected(&path, places) {
            continue;
        }
        let fail = |e: std::io::Error| {
            anyhow::anyhow!("cannot create {agent}'s state file {}: {e}", path.display())
        };
        if let Some(parent) = path.parent() {
            dir_builder().create(parent).map_err(fail)?;
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => f.write_all(content.as_bytes()).map_err(fail)?,
            // Another unit of the same agent created it first.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(fail(e)),
        }
    }
    Ok(())
}
