//! Where missionboard keeps things: the home directory, the workspace directory
//! found by walking up like git, and the search path built from both.

use std::path::{Path, PathBuf};

use sha2::Digest;

/// Name of the per-project directory, looked up from the current directory upwards.
pub const WORKSPACE_DIR: &str = ".missionboard";
/// Environment variable that overrides the home directory (tests use a scratch one).
pub const HOME_ENV: &str = "MISSIONBOARD_HOME";

/// The resolved places of one invocation.
#[derive(Debug, Clone)]
pub struct Paths {
    /// `~/.missionboard` or `$MISSIONBOARD_HOME`.
    pub home: PathBuf,
    /// The nearest `.missionboard/` at or above the current directory, if any
    /// (never the home directory itself).
    pub workspace: Option<PathBuf>,
    /// The directory the command was run from.
    pub cwd: PathBuf,
}

impl Paths {
    /// Resolve from the process environment.
    pub fn from_env() -> anyhow::Result<Paths> {
        let cwd = std::env::current_dir()
            .map_err(|e| anyhow::anyhow!("cannot read the current directory: {e}"))?;
        let home = home_dir()?;
        Ok(Paths::resolve(home, cwd))
    }

    /// Resolve for an explicit home and working directory.
    pub fn resolve(home: PathBuf, cwd: PathBuf) -> Paths {
        let workspace = find_workspace(&cwd).filter(|w| !same_dir(w, &home));
        Paths {
            home,
            workspace,
            cwd,
        }
    }

    /// `<home>/board.db`.
    pub fn db_path(&self) -> PathBuf {
        self.home.join("board.db")
    }

    /// `<home>/logs/`.
    pub fn log_dir(&self) -> PathBuf {
        self.home.join("logs")
    }

    /// Directory for runtime files of the home (the board's answer drafts).
    pub fn run_dir(&self) -> PathBuf {
        self.home.join("run")
    }

    /// Where this home's mission sockets live: `<runtime>/<home key>`, short whatever
    /// the home's length (a socket's path must fit `sun_path`, 108 bytes). `<runtime>`
    /// is `$XDG_RUNTIME_DIR/missionboard` when that is short, else
    /// `/tmp/missionboard-run-<uid>`; the key is a digest of the home's path, so homes
    /// never share one. Not created here: see [`Paths::prepare_socket_dir`].
    pub fn socket_dir(&self) -> PathBuf {
        let home = self
            .home
            .canonicalize()
            .unwrap_or_else(|_| self.home.clone());
        let digest = sha2::Sha256::digest(home.as_os_str().as_encoded_bytes());
        let key: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        runtime_base().join(key)
    }

    /// [`Paths::socket_dir`], created 0700 where missing and checked where present:
    /// each level is refused unless it is a real directory owned by this user that no
    /// one else may enter, since whoever controls it could swap a mission's socket.
    pub fn prepare_socket_dir(&self) -> anyhow::Result<PathBuf> {
        let dir = self.socket_dir();
        for level in [runtime_base(), dir.clone()] {
            ensure_private_dir(&level, SOCKET_DIR)?;
        }
        Ok(dir)
    }

    /// Where `init --local` seeds: the existing workspace, else `./.missionboard`.
    pub fn local_dir(&self) -> PathBuf {
        self.workspace
            .clone()
            .unwrap_or_else(|| self.cwd.join(WORKSPACE_DIR))
    }

    /// The search path, first match wins: the workspace, then home. Duplicates removed.
    pub fn search_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        if let Some(w) = &self.workspace {
            dirs.push(w.clone());
        }
        if !dirs.iter().any(|d| same_dir(d, &self.home)) {
            dirs.push(self.home.clone());
        }
        dirs
    }
}

/// Create `dir` (and missing parents) readable by its owner only: the home holds
/// the store, the sockets and the logs. An existing directory is left as it is
/// (`doctor` warns when it is wider).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Create `path` empty with mode 0600 unless it exists, so whoever writes it next
/// (SQLite, the log appender) writes into a private file. SQLite gives its `-wal`
/// and `-shm` files the database file's mode.
pub fn create_private_file(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// The longest `$XDG_RUNTIME_DIR` used for sockets; a longer one is passed over for
/// `/tmp`, so a socket path always fits.
const RUNTIME_DIR_MAX: usize = 48;

/// The per-user directory the homes' socket directories live in.
fn runtime_base() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() && dir.as_os_str().len() <= RUNTIME_DIR_MAX => {
            dir.join("missionboard")
        }
        // SAFETY: geteuid has no preconditions.
        _ => PathBuf::from(format!("/tmp/missionboard-run-{}", unsafe {
            libc::geteuid()
        })),
    }
}

/// What a private directory is for, in its refusal: what it is, what needs it, and
/// the variable that moves it.
pub struct PrivateDirUse {
    pub what: &'static str,
    pub needs: &'static str,
    pub moved_by: &'static str,
}

const SOCKET_DIR: PrivateDirUse = PrivateDirUse {
    what: "socket directory",
    needs: "mission sockets",
    moved_by: "XDG_RUNTIME_DIR",
};

/// Create `dir` (one level, mode 0700) unless it exists, then check it: a directory,
/// not a symlink, owned by this user, with no access for group or others. Under a
/// shared parent such as `/tmp`, another user could have made it first.
pub fn ensure_private_dir(dir: &Path, use_: PrivateDirUse) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let PrivateDirUse {
        what,
        needs,
        moved_by,
    } = use_;
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => anyhow::bail!("cannot create the {what} {}: {e}", dir.display()),
    }
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| anyhow::anyhow!("cannot read the {what} {}: {e}", dir.display()))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    let mode = meta.mode() & 0o7777;
    let problem = if !meta.file_type().is_dir() {
        Some("it is not a directory".to_string())
    } else if meta.uid() != me {
        Some(format!(
            "it is owned by uid {}, not by you (uid {me})",
            meta.uid()
        ))
    } else if mode & 0o077 != 0 {
        Some(format!("its mode is {mode:04o}, open to other users"))
    } else {
        None
    };
    match problem {
        Some(why) => anyhow::bail!(
            "refusing the {what} {}: {why} — {needs} need a directory only you can enter (mode 0700, owned by you); remove it, or set {moved_by} to a private directory",
            dir.display()
        ),
        None => Ok(()),
    }
}

pub(crate) fn home_dir() -> anyhow::Result<PathBuf> {
    let home = home_dir_os()?;
    // Paths under the home travel as text: agent arguments, socket paths, TOML.
    if home.to_str().is_none() {
        anyhow::bail!(
            "the missionboard home {} is not valid UTF-8 — set {HOME_ENV} to a directory whose path is UTF-8",
            home.display()
        );
    }
    Ok(home)
}

fn home_dir_os() -> anyhow::Result<PathBuf> {
    if let Some(h) = std::env::var_os(HOME_ENV).filter(|h| !h.is_empty()) {
        let h = PathBuf::from(h);
        return Ok(if h.is_absolute() {
            h
        } else {
            std::env::current_dir()?.join(h)
        });
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(h) => Ok(PathBuf::from(h).join(WORKSPACE_DIR)),
        None => anyhow::bail!(
            "cannot find a home directory: set HOME, or {HOME_ENV} to the directory missionboard should use"
        ),
    }
}

fn find_workspace(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|d| d.join(WORKSPACE_DIR))
        .find(|d| d.is_dir())
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// `program` as a spawn would find it: a path-shaped word names a file directly
/// (`cwd` anchors a relative one like `./go`); a bare name is looked up on `PATH`,
/// the way the shell would find it.
pub fn locate_program(program: &str, cwd: Option<&Path>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        let p = match cwd {
            Some(cwd) if p.is_relative() => cwd.join(p),
            _ => p.to_path_buf(),
        };
        return p.is_file().then_some(p);
    }
    let path_var = std::env::var_os("PATH")?;
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_is_found_walking_up_and_never_equals_home() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("proj").join(WORKSPACE_DIR);
        std::fs::create_dir_all(&ws).unwrap();
        let deep = tmp.path().join("proj/a/b");
        std::fs::create_dir_all(&deep).unwrap();
        let home = tmp.path().join("home");
        let p = Paths::resolve(home.clone(), deep);
        assert_eq!(p.workspace.as_deref(), Some(ws.as_path()));
        assert_eq!(p.search_dirs(), vec![ws.clone(), home]);

        // A home that is itself the nearest .missionboard is not a workspace.
        let p = Paths::resolve(ws.clone(), tmp.path().join("proj"));
        assert_eq!(p.workspace, None);
        assert_eq!(p.search_dirs(), vec![ws]);
    }
}
