//! The per-mission Unix socket the bridge connects to.

use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::net::UnixListener;
use tokio::task::{JoinHandle, JoinSet};

use super::MissionToolHandler;
use super::server::serve_mission_stream;

/// `<runtime_dir>/m-<first 8 id chars>.sock`. Short on purpose: `sun_path`
/// holds about 108 bytes on Linux and 104 on macOS, so the runtime dir must
/// be short too (`$XDG_RUNTIME_DIR/missionboard`, not a deep workspace).
pub fn socket_path_for(runtime_dir: &Path, mission_id: &str) -> PathBuf {
    let short: String = mission_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(8)
        .collect();
    runtime_dir.join(format!("m-{short}.sock"))
}

/// A listening mission socket. Dropping it (or [`MissionSocket::close`])
/// stops accepting, ends the live connections and deletes the socket file.
pub struct MissionSocket {
    path: PathBuf,
    accept_task: Option<JoinHandle<()>>,
    accepted: Arc<AtomicUsize>,
}

/// Bind `path` and serve the mission tools on every connection to it.
///
/// A stale socket file (a previous host that died) is removed first; any
/// other kind of file at `path` is an error, never deleted. The socket is
/// made 0600 before the first connection is accepted.
pub async fn serve_mission_socket(
    path: &Path,
    handler: Arc<dyn MissionToolHandler>,
) -> io::Result<MissionSocket> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{} exists and is not a socket", path.display()),
            ));
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let listener = UnixListener::bind(path)?;
    if let Err(err) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        let _ = std::fs::remove_file(path);
        return Err(err);
    }

    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    let shown = path.display().to_string();
    let accept_task = tokio::spawn(async move {
        // Owning the connections here means aborting this task ends them.
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        counter.fetch_add(1, Ordering::Relaxed);
                        let handler = handler.clone();
                        connections.spawn(async move {
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
    })
}

impl MissionSocket {
    pub fn path(&self) -> &Path {
        &self.path
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
    fn socket_paths_are_short() {
        let path = socket_path_for(
            Path::new("/run/user/1000/missionboard"),
            "3f2a9c1e-77aa-4bbb-8ccc-0123456789ab",
        );
        assert_eq!(
            path,
            Path::new("/run/user/1000/missionboard/m-3f2a9c1e.sock")
        );
        assert!(path.as_os_str().len() < 104);
    }
}
