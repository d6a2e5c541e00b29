//! The per-mission Unix socket the bridge connects to.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};
use tokio::task::{JoinHandle, JoinSet};

use super::MissionToolHandler;
use super::server::serve_mission_stream;

/// The bytes `sun_path` holds, its terminating NUL included (Linux; macOS has 104).
const SUN_PATH_BYTES: usize = 108;

/// A socket path too long to bind, said with the fix.
fn too_long(path: &Path) -> Option<io::Error> {
    let len = path.as_os_str().len();
    (len >= SUN_PATH_BYTES).then(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the socket path is {len} bytes, over the {} a Unix socket allows — set XDG_RUNTIME_DIR to a shorter directory",
                SUN_PATH_BYTES - 1
            ),
        )
    })
}

/// `<socket_dir>/m-<mission id>.sock`: the full id, so two missions can never
/// share a name. `sun_path` holds about 108 bytes on Linux and 104 on macOS, so
/// the directory must stay short (`paths::Paths::socket_dir` is, whatever the
/// home's length; binding a longer path fails, naming it).
pub fn socket_path_for(runtime_dir: &Path, mission_id: &str) -> PathBuf {
    let id: String = mission_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    runtime_dir.join(format!("m-{id}.sock"))
}

/// The first line a client sends: `missionboard-token <token>`. The socket file is
/// 0600, but every unit runs as the operator's user, so the file mode alone would
/// let one mission's unit drive another's tools; the token is what tells them apart.
const TOKEN_PREAMBLE: &str = "missionboard-token ";

/// How long a new connection may take to present its token.
const TOKEN_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A fresh secret for one mission's socket (244 random bits).
fn mint_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Connect to a mission socket and present `token`, as the bridge does.
pub async fn connect_mission_socket(path: &Path, token: &str) -> io::Result<UnixStream> {
    let mut stream = UnixStream::connect(path).await?;
    present_token(&mut stream, token).await?;
    Ok(stream)
}

/// Send the token line on a fresh connection.
pub async fn present_token(stream: &mut UnixStream, token: &str) -> io::Result<()> {
    stream
        .write_all(format!("{TOKEN_PREAMBLE}{token}\n").as_bytes())
        .await
}

/// Read the token line and compare it (in constant time) with `token`, then, once
/// the unit is known, check that the connecting process is of its tree. A connection
/// that fails gets one JSON-RPC error line and is closed; nothing it sent reaches
/// the tools.
async fn admit(stream: &mut UnixStream, tokens: &Tokens, unit: &OnceLock<u32>) -> bool {
    let token = &tokens.host;
    let mut line = Vec::with_capacity(TOKEN_PREAMBLE.len() + token.len() + 1);
    let read = tokio::time::timeout(TOKEN_WAIT, async {
        let mut byte = [0u8; 1];
        // Byte by byte, so nothing after the token line is consumed here.
        while line.len() <= TOKEN_PREAMBLE.len() + token.len() {
            if stream.read(&mut byte).await? == 0 {
                break;
            }
            if byte[0] == b'\n' {
                return Ok::<bool, io::Error>(true);
            }
            line.push(byte[0]);
        }
        Ok(false)
    })
    .await;
    let presented = matches!(read, Ok(Ok(true)));
    let message = if !(presented && tokens.accept(&line)) {
        tracing::warn!("mission socket: refused a connection without the mission's token");
        "mission socket: refused: this connection did not present the mission's token (a unit reaches its own mission only through the mcp-bridge entry it was given)"
    } else if !from_unit(stream, unit) {
        tracing::warn!("mission socket: refused a connection from outside the mission's unit");
        "mission socket: refused: this connection does not come from the mission's own unit (its mcp-bridge must be started by the unit's agent, inside its process tree)"
    } else {
        return true;
    };
    let refusal = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32001, "message": message}
    });
    let _ = stream.write_all(format!("{refusal}\n").as_bytes()).await;
    let _ = stream.shutdown().await;
    false
}

/// Whether the peer of `stream` is the unit in `unit` or one of its descendants; any
/// process before the unit is known. The token alone does not tell units apart where
/// one can read another's environment (the same user without Landlock, or a unit
/// with CAP_PERFMON or CAP_SYS_ADMIN, which reads any process's `/proc/<pid>/environ`
/// past Landlock); the parent links of the connecting process do, since no process
/// can move itself into another's tree.
fn from_unit(stream: &UnixStream, unit: &OnceLock<u32>) -> bool {
    let Some(&root) = unit.get() else {
        return true;
    };
    let Some(peer) = stream
        .peer_cred()
        .ok()
        .and_then(|c| c.pid())
        .and_then(|p| u32::try_from(p).ok())
    else {
        return false;
    };
    descends_from(peer, root)
}

/// `pid` is `root` or below it, following `PPid` in `/proc` (Linux; elsewhere the
/// token alone admits).
#[cfg(target_os = "linux")]
fn descends_from(pid: u32, root: u32) -> bool {
    let parent = |pid: u32| -> Option<u32> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))?
            .trim()
            .parse()
            .ok()
    };
    let mut at = pid;
    // Bounded: a parent chain is never longer than the pid space, but a read racing
    // with exits must not loop.
    for _ in 0..4096 {
        if at == root {
            return true;
        }
        match parent(at) {
            Some(p) if p > 1 && p != at => at = p,
            _ => return false,
        }
    }
    false
}

#[cfg(not(target_os = "linux"))]
fn descends_from(_pid: u32, _root: u32) -> bool {
    true
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The secrets a connection may present: the host's own (for clients in this
/// process; it never leaves it), and the bridge's, waiting in a file of the unit's.
struct Tokens {
    host: String,
    bridge: std::sync::Mutex<Option<BridgeToken>>,
}

/// A bridge token and the file it waits in.
struct BridgeToken {
    token: String,
    file: PathBuf,
}

impl Tokens {
    /// Whether `line` is the token line of either secret. A bridge token admits one
    /// connection: its match writes the next one to the same file (the bridge that
    /// read it has unlinked it), for a bridge the agent starts again.
    fn accept(&self, line: &[u8]) -> bool {
        let host = format!("{TOKEN_PREAMBLE}{}", self.host);
        let mut bridge = self.bridge.lock().unwrap_or_else(|e| e.into_inner());
        let bridge_line = bridge
            .as_ref()
            .map(|b| format!("{TOKEN_PREAMBLE}{}", b.token));
        let by_bridge = bridge_line.is_some_and(|b| constant_time_eq(line, b.as_bytes()));
        if by_bridge && let Some(spent) = bridge.take() {
            let next = mint_token();
            match write_token_file(&spent.file, &next) {
                Ok(()) => {
                    *bridge = Some(BridgeToken {
                        token: next,
                        file: spent.file,
                    })
                }
                Err(err) => tracing::warn!(
                    file = %spent.file.display(),
                    %err,
                    "mission socket: could not write the next bridge token; a restarted bridge will be refused"
                ),
            }
        }
        // Both compared, whichever matched, so the time taken says nothing.
        constant_time_eq(line, host.as_bytes()) | by_bridge
    }
}

/// Write `token` to a new 0600 file at `path`, replacing an unspent one (never
/// following a symlink planted there).
fn write_token_file(path: &Path, token: &str) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    file.write_all(token.as_bytes())
}

/// A listening mission socket. Dropping it (or [`MissionSocket::close`])
/// stops accepting, ends the live connections and deletes the socket file.
pub struct MissionSocket {
    path: PathBuf,
    accept_task: Option<JoinHandle<()>>,
    accepted: Arc<AtomicUsize>,
    tokens: Arc<Tokens>,
    unit: Arc<OnceLock<u32>>,
}

/// Bind `path` and serve the mission tools on every connection to it.
///
/// An existing socket file is probed first: one a live host still serves is an
/// error, a stale one (its host died) is removed; any other kind of file at
/// `path` is an error, never deleted. The socket is made 0600 before the first
/// connection is accepted, and every connection must present the socket's
/// [`MissionSocket::token`] before anything it sends reaches `handler`.
pub async fn serve_mission_socket(
    path: &Path,
    handler: Arc<dyn MissionToolHandler>,
) -> io::Result<MissionSocket> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if std::os::unix::net::UnixStream::connect(path).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "{} is served by a live host; refusing to replace it",
                        path.display()
                    ),
                ));
            }
            std::fs::remove_file(path)?
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let listener = UnixListener::bind(path).map_err(|e| too_long(path).unwrap_or(e))?;
    if let Err(err) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        let _ = std::fs::remove_file(path);
        return Err(err);
    }

    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let tokens = Arc::new(Tokens {
        host: mint_token(),
        bridge: std::sync::Mutex::new(None),
    });
    let expected = tokens.clone();
    let unit = Arc::new(OnceLock::new());
    let unit_pid = unit.clone();
    let shown = path.display().to_string();
    let accept_task = tokio::spawn(async move {
        // Owning the connections here means aborting this task ends them.
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((mut stream, _)) => {
                        counter.fetch_add(1, Ordering::Relaxed);
                        let handler = handler.clone();
                        let (expected, unit) = (expected.clone(), unit_pid.clone());
                        connections.spawn(async move {
                            if !admit(&mut stream, &expected, &unit).await {
                                return;
                            }
                            if let Err(err) = serve_mission_stream(stream, handler).await {
                                tracing::debug!(%err, "mission tools connection ended");
                            }
                        });
                    }
                    Err(err) => {
                        tracing::warn!(socket = %shown, %err, "mission socket accept failed");
                        // Transient (EMFILE and the like): back off, keep serving.
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                },
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    });

    Ok(MissionSocket {
        path: path.to_path_buf(),
        accept_task: Some(accept_task),
        accepted,
        tokens,
        unit,
    })
}

impl MissionSocket {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The host's secret, for a client in this process (see
    /// [`connect_mission_socket`]); it is never handed to a unit.
    pub fn token(&self) -> &str {
        &self.tokens.host
    }

    /// Mint the bridge's secret and write it to a new 0600 file in `dir` (the unit's
    /// private temp dir), for the bridge to read and unlink: no token travels in the
    /// MCP entry's arguments or environment, which agents copy onto command lines.
    /// Each token admits one connection; the next waits in the same file. Returns the
    /// file's path (`<dir>/<socket's stem>.token`).
    pub fn issue_bridge_token(&self, dir: &Path) -> io::Result<PathBuf> {
        let stem = self
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = dir.join(format!("{stem}.token"));
        let token = mint_token();
        write_token_file(&file, &token)?;
        *self.tokens.bridge.lock().unwrap_or_else(|e| e.into_inner()) = Some(BridgeToken {
            token,
            file: file.clone(),
        });
        Ok(file)
    }

    /// Where the unit's pid goes once it is spawned ([`crate::acp_client::UnitSpec::pid_slot`]):
    /// from then on only the unit and its descendants are admitted, so a token read
    /// out of another process is not enough to drive this mission.
    pub fn unit_pid_slot(&self) -> Arc<OnceLock<u32>> {
        self.unit.clone()
    }

    /// How many connections have been accepted so far.
    pub fn connections_accepted(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Stop serving and delete the socket file.
    pub async fn close(mut self) {
        if let Some(task) = self.accept_task.take() {
            task.abort();
            let _ = task.await;
        }
        self.remove_file();
    }

    fn remove_file(&self) {
        // An unspent bridge token goes with the socket it opened.
        let bridge = self
            .tokens
            .bridge
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(b) = bridge {
            let _ = std::fs::remove_file(&b.file);
        }
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => {
                tracing::warn!(socket = %self.path.display(), %err, "could not remove mission socket")
            }
        }
    }
}

impl Drop for MissionSocket {
    fn drop(&mut self) {
        if let Some(task) = self.accept_task.take() {
            task.abort();
            // The file goes now even though the listener is freed a moment
            // later by the aborted task: new connects fail either way.
            self.remove_file();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_paths_name_the_whole_mission_id() {
        let path = socket_path_for(
            Path::new("/run/user/1000/missionboard"),
            "3f2a9c1e-77aa-4bbb-8ccc-0123456789ab",
        );
        assert_eq!(
            path,
            Path::new("/run/user/1000/missionboard/m-3f2a9c1e-77aa-4bbb-8ccc-0123456789ab.sock")
        );
        assert!(path.as_os_str().len() < 104);
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert_ne!(mint_token(), mint_token());
    }

    #[test]
    fn a_socket_path_too_long_to_bind_names_the_fix() {
        let short = socket_path_for(
            Path::new("/tmp/run"),
            "303eec7c-d2f1-4814-a277-17de1ba39683",
        );
        assert!(too_long(&short).is_none());
        let long = socket_path_for(
            &Path::new("/tmp").join("x".repeat(80)),
            "303eec7c-d2f1-4814-a277-17de1ba39683",
        );
        let err = too_long(&long).expect("over sun_path").to_string();
        assert!(
            err.contains("set XDG_RUNTIME_DIR to a shorter directory"),
            "{err}"
        );
    }
}
