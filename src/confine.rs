//! Kernel confinement for units: a Landlock ruleset built in the host before the
//! unit's spawn, applied by its supervisor in the agent's pre-exec, so the unit and everything it starts (its
//! MCP bridge included) inherit it and cannot leave it.
//!
//! This module knows paths and ports only; which paths a mission gets is decided by
//! the envelope's sandbox block ([`crate::envelope::sandbox`]).

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use landlock::{
    ABI, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

/// Debug builds only: cap the detected Landlock ABI (`0` simulates a kernel without
/// Landlock), so the "declared, not enforced" path can be exercised on any machine.
/// Release builds ignore it: an environment variable must not switch a sandbox off.
pub const FORCE_ABI_ENV: &str = "MISSIONBOARD_LANDLOCK_ABI";

/// The newest ABI whose semantics this build applies. ABI 9 also restricts connecting
/// to pathname Unix sockets, which would cut the bridge off its mission socket unless
/// granted; until that grant exists the ruleset asks for nothing newer than this.
const NEWEST_APPLIED_ABI: u32 = 8;

/// The Landlock ABI the running kernel offers (0: none, or not Linux), detected once,
/// capped by [`FORCE_ABI_ENV`] in debug builds and by [`NEWEST_APPLIED_ABI`].
pub fn landlock_abi() -> u32 {
    static ABI_FOUND: OnceLock<u32> = OnceLock::new();
    *ABI_FOUND.get_or_init(|| {
        let kernel = kernel_abi().min(NEWEST_APPLIED_ABI);
        let forced = cfg!(debug_assertions)
            .then(|| std::env::var(FORCE_ABI_ENV).ok())
            .flatten()
            .and_then(|v| v.trim().parse::<u32>().ok());
        match forced {
            Some(cap) => kernel.min(cap),
            None => kernel,
        }
    })
}

#[cfg(target_os = "linux")]
fn kernel_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 and the VERSION flag, the syscall
    // only returns the ABI number (or an error); it touches no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).unwrap_or(0)
}

#[cfg(not(target_os = "linux"))]
fn kernel_abi() -> u32 {
    0
}

/// The smallest ABI at which each limit is held by the kernel.
pub const ABI_FOR_READ: u32 = 1;
/// Truncation is only controlled from ABI 3; before that a "read-only" file could
/// still be emptied, so writes are not called enforced below it.
pub const ABI_FOR_WRITE: u32 = 3;
pub const ABI_FOR_CONNECT: u32 = 4;

/// What a unit may touch, as concrete paths and ports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Confinement {
    /// Trees (or files) the unit may write.
    pub write: Vec<PathBuf>,
    /// Trees (or files) the unit may read and execute; `None`: everything.
    pub read: Option<Vec<PathBuf>>,
    /// TCP ports the unit may connect to; `None`: any.
    pub connect: Option<Vec<u16>>,
}

/// A ruleset ready to apply in a child: the path fds were opened by the host.
#[derive(Debug)]
pub struct Prepared(RulesetCreated);

/// How long a ruleset built for some grants is handed again to the next unit with
/// the same grants. Each entry costs a stat, an open and a syscall, and a tree
/// granted around the home is granted entry by entry (hundreds where the home sits
/// under a busy temp dir or user home): a fleet starting units of one agent in one
/// place would build the same ruleset for each. A rule holds the inode its path named
/// when the ruleset was built — as it does for as long as a unit runs — and reuse
/// stretches that by at most this window (the listing is read again for every unit,
/// so an entry added or removed since is a different set of grants, built afresh;
/// and a path that names another inode now — a mission's `{tmp}` removed with its
/// last unit and made again for the next — is too).
const REUSE_WINDOW: Duration = Duration::from_secs(3);

/// A ruleset built within [`REUSE_WINDOW`]: the grants it holds, when it was built,
/// and the inode each granted path named then ([`inodes`]).
struct Recent {
    grants: Confinement,
    built: Instant,
    inodes: Vec<Option<(u64, u64)>>,
    ruleset: RulesetCreated,
}

/// The rulesets built within [`REUSE_WINDOW`], by the grants they hold.
static RECENT: Mutex<Vec<Recent>> = Mutex::new(Vec::new());

/// Most distinct grant sets kept at once (one per agent and place starting now).
const RECENT_MAX: usize = 8;

/// Build the ruleset for `c` under the detected ABI; `None` when the kernel offers
/// no Landlock (the caller says so: the limits are then declared, not enforced).
/// Paths that do not exist are skipped (there is nothing there to grant).
pub fn prepare(c: &Confinement) -> io::Result<Option<Prepared>> {
    let abi_num = landlock_abi();
    if abi_num == 0 {
        return Ok(None);
    }
    let grants = without_covered(c);
    reuse_or_build(grants, |g| build(g, abi_num)).map(|r| Some(Prepared(r)))
}

/// The ruleset built for `grants` within [`REUSE_WINDOW`] (its descriptor
/// duplicated: the ruleset is not changed once built, and a child applying it does
/// not consume it), else a fresh one from `build`, kept for the next unit.
fn reuse_or_build(
    grants: Confinement,
    build: impl FnOnce(&Confinement) -> io::Result<RulesetCreated>,
) -> io::Result<RulesetCreated> {
    let now = Instant::now();
    // Read before the build: a path replaced while it runs is not taken for the
    // inode the ruleset holds.
    let inodes = inodes(&grants);
    {
        let mut recent = RECENT.lock().unwrap_or_else(|p| p.into_inner());
        recent.retain(|r| now.duration_since(r.built) < REUSE_WINDOW);
        if let Some(r) = recent
            .iter()
            .find(|r| r.grants == grants && r.inodes == inodes)
        {
            return r.ruleset.try_clone();
        }
    }
    // Built outside the lock: two units racing here each build theirs.
    let ruleset = build(&grants)?;
    let kept = ruleset.try_clone()?;
    let mut recent = RECENT.lock().unwrap_or_else(|p| p.into_inner());
    if recent.len() >= RECENT_MAX {
        recent.remove(0);
    }
    recent.push(Recent {
        grants,
        built: now,
        inodes,
        ruleset: kept,
    });
    Ok(ruleset)
}

/// The (device, inode) each granted path names now, in the grants' order (`None`
/// where nothing is there): what a rule built from the path would hold.
fn inodes(c: &Confinement) -> Vec<Option<(u64, u64)>> {
    use std::os::unix::fs::MetadataExt;
    c.write
        .iter()
        .chain(c.read.iter().flatten())
        .map(|p| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino())))
        .collect()
}

/// `c` without the entries another entry already grants as much as: a unit's own
/// `{tmp}` inside a tree granted whole, a state dir under a granted home. Units that
/// differ only there then hold the same grants (and share one ruleset). An entry
/// stays unless its real path is itself (no symlink on the way, which would lead a
/// rule elsewhere) and lies under a granted entry.
fn without_covered(c: &Confinement) -> Confinement {
    let write: HashSet<&Path> = c.write.iter().map(PathBuf::as_path).collect();
    let read: HashSet<&Path> = c.read.iter().flatten().map(PathBuf::as_path).collect();
    let under = |p: &Path, set: &HashSet<&Path>| {
        p.ancestors().skip(1).any(|a| set.contains(a))
            && std::fs::canonicalize(p).is_ok_and(|real| real == p)
    };
    // Under limited reads a write entry is granted reading too.
    let reads_from_writes = c.read.is_some();
    Confinement {
        write: c
            .write
            .iter()
            .filter(|p| !under(p, &write))
            .cloned()
            .collect(),
        read: c.read.as_ref().map(|paths| {
            paths
                .iter()
                .filter(|p| !(under(p, &read) || reads_from_writes && under(p, &write)))
                .cloned()
                .collect()
        }),
        connect: c.connect.clone(),
    }
}

/// A ruleset holding `c`'s grants under ABI `abi_num`.
fn build(c: &Confinement, abi_num: u32) -> io::Result<RulesetCreated> {
    let abi = ABI::from(abi_num as i32);
    let read = AccessFs::from_read(abi);
    let write = AccessFs::from_write(abi);
    let handled = if c.read.is_some() {
        read | write
    } else {
        write
    };
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(handled)
        .map_err(io::Error::other)?;
    if c.connect.is_some() && abi_num >= ABI_FOR_CONNECT {
        ruleset = ruleset
            .handle_access(AccessNet::ConnectTcp)
            .map_err(io::Error::other)?;
    }
    if abi_num >= 6 {
        // A unit may not signal processes outside its own tree (the host, other units).
        ruleset = ruleset.scope(Scope::Signal).map_err(io::Error::other)?;
    }
    let mut created = ruleset.create().map_err(io::Error::other)?;
    let mut grants: Vec<(&PathBuf, BitFlags<AccessFs>)> = Vec::new();
    for p in &c.write {
        grants.push((
            p,
            if c.read.is_some() {
                read | write
            } else {
                write
            },
        ));
    }
    for p in c.read.iter().flatten() {
        grants.push((p, read));
    }
    for (path, access) in grants {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let access = if meta.is_dir() {
            access
        } else {
            access & AccessFs::from_file(abi)
        };
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            Err(e) => {
                tracing::debug!(path = %path.display(), %e, "sandbox: path not granted");
                continue;
            }
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(io::Error::other)?;
    }
    if abi_num >= ABI_FOR_CONNECT {
        for port in c.connect.iter().flatten() {
            created = created
                .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
                .map_err(io::Error::other)?;
        }
    }
    Ok(created)
}

impl Prepared {
    /// Confine the calling process. Runs in the forked child before exec: no
    /// allocation on the way, and a failure is the raw errno.
    pub fn apply(self) -> io::Result<()> {
        match self.0.restrict_self() {
            Ok(status) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
            Ok(_) => Err(io::Error::from_raw_os_error(libc::ENOSYS)),
            Err(_) => Err(io::Error::last_os_error()),
        }
    }
}

impl Prepared {
    /// The ruleset's descriptor, for a unit supervisor that applies it to the agent
    /// it starts ([`apply_fd`]) while itself staying outside. `None` when the kernel
    /// would not enforce it.
    pub fn into_fd(self) -> Option<std::os::fd::OwnedFd> {
        self.0.into()
    }
}

/// Confine the calling process with the ruleset behind `fd` (from
/// [`Prepared::into_fd`]), as [`Prepared::apply`] does: no new privileges, then the
/// ruleset. Runs in a forked child before exec: no allocation, the raw errno.
#[cfg(target_os = "linux")]
pub fn apply_fd(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: prctl and landlock_restrict_self take plain integers and touch only
    // this process's own credentials.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
pub fn apply_fd(_fd: std::os::fd::RawFd) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_inside_a_granted_tree_is_dropped_unless_a_symlink_leads_it_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let (tree, inside, elsewhere) = (root.join("tree"), root.join("tree/tmp"), root.join("x"));
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir(&elsewhere).unwrap();
        let link = tree.join("link");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        let missing = tree.join("not-there");
        let c = Confinement {
            write: vec![tree.clone(), inside.clone(), link.clone(), missing.clone()],
            read: Some(vec![inside.clone(), elsewhere.clone()]),
            connect: Some(vec![443]),
        };
        assert_eq!(
            without_covered(&c),
            Confinement {
                // The symlink grants what it leads to; what is not there is kept
                // (the build skips it).
                write: vec![tree.clone(), link, missing],
                // Reading comes with writing under limited reads.
                read: Some(vec![elsewhere.clone()]),
                connect: Some(vec![443]),
            }
        );
        // Reads open to all: a write grant says nothing of reading.
        let all_reads = Confinement {
            write: vec![tree.clone(), inside.clone()],
            read: None,
            connect: None,
        };
        assert_eq!(without_covered(&all_reads).write, vec![tree]);
    }

    #[test]
    fn the_same_grants_within_the_window_reuse_one_ruleset_and_other_grants_build_their_own() {
        let grants = |port| Confinement {
            write: vec![],
            read: None,
            connect: Some(vec![port]),
        };
        let builds = std::cell::Cell::new(0);
        // Best effort: an empty ruleset is built even where the kernel has none.
        let build = |_: &Confinement| {
            builds.set(builds.get() + 1);
            Ruleset::default()
                .handle_access(AccessFs::from_write(ABI::V1))
                .and_then(|r| r.create())
                .map_err(io::Error::other)
        };
        // Ports no other test asks for: the kept rulesets are process-wide.
        reuse_or_build(grants(40101), build).unwrap();
        reuse_or_build(grants(40101), build).unwrap();
        assert_eq!(builds.get(), 1, "the second unit reuses the first's");
        reuse_or_build(grants(40102), build).unwrap();
        assert_eq!(builds.get(), 2, "other grants, another ruleset");
    }

    #[test]
    fn a_granted_directory_made_again_at_its_path_gets_a_ruleset_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("mission-tmp");
        std::fs::create_dir(&tmp).unwrap();
        let grants = Confinement {
            write: vec![tmp.clone()],
            read: None,
            // A port no other test asks for: the kept rulesets are process-wide.
            connect: Some(vec![40103]),
        };
        let builds = std::cell::Cell::new(0);
        let build = |_: &Confinement| {
            builds.set(builds.get() + 1);
            Ruleset::default()
                .handle_access(AccessFs::from_write(ABI::V1))
                .and_then(|r| r.create())
                .map_err(io::Error::other)
        };
        reuse_or_build(grants.clone(), build).unwrap();
        reuse_or_build(grants.clone(), build).unwrap();
        assert_eq!(builds.get(), 1, "the same directory: reused");
        // Removed with its unit and made again for the next: another inode, which a
        // rule built for the first would not grant. (Held open, as a rule holds
        // it, the old inode keeps its number: the new directory cannot take it.)
        let _held = std::fs::File::open(&tmp).unwrap();
        std::fs::remove_dir(&tmp).unwrap();
        std::fs::create_dir(&tmp).unwrap();
        reuse_or_build(grants, build).unwrap();
        assert_eq!(builds.get(), 2, "a directory made again: built afresh");
    }
}
