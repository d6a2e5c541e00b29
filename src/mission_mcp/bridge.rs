//! `missionboard mcp-bridge <socket> --token-file <file>`: the stdio MCP server an
//! agent spawns.
//! It is a plain byte pipe to the host's mission socket; no MCP code runs
//! here, so there is only one protocol implementation to keep right.

use std::io;
use std::path::Path;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;

use super::socket::present_token;

/// After our stdin ends, how long responses already in flight may still
/// drain to stdout before we exit.
const DRAIN_AFTER_STDIN_EOF: Duration = Duration::from_secs(2);

/// How long a bridge waits for its token file: a bridge started just after another
/// took the file finds the next one once that other has connected.
const TOKEN_FILE_WAIT: Duration = Duration::from_secs(5);

/// Read the one-use token the host left in `path` and unlink the file, so the
/// secret is at rest only until a bridge starts; the host writes the next token
/// there once this one is spent. A file not there yet is waited for (bounded).
async fn take_token(path: &Path) -> io::Result<String> {
    let mut last = None;
    let taken = crate::clock::poll_until(TOKEN_FILE_WAIT, Duration::from_millis(25), || {
        match read_and_unlink(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                last = Some(e);
                None
            }
            other => Some(other),
        }
    })
    .await;
    match taken {
        Some(result) => result,
        None => Err(last.unwrap_or_else(|| io::ErrorKind::NotFound.into())),
    }
}

fn read_and_unlink(path: &Path) -> io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let missing = |err: io::Error| {
        io::Error::new(
            err.kind(),
            format!(
                "cannot read the mission token at {}: {err} (the host writes one there for each bridge of the mission's unit, which takes it on start)",
                path.display()
            ),
        )
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(missing)?;
    std::fs::remove_file(path).map_err(missing)?;
    let mut token = String::new();
    file.take(256).read_to_string(&mut token).map_err(missing)?;
    Ok(token.trim().to_string())
}

/// Pipe stdin → socket and socket → stdout until either side ends.
///
/// Returns an error naming the socket when it cannot be reached; the CLI
/// prints it to stderr and exits non-zero, which agents surface as "MCP
/// server failed to start".
pub async fn run_mcp_bridge(socket: &Path, token_file: Option<&Path>) -> io::Result<()> {
    // Taken before anything else, so the file is gone as early as it can be.
    let token = match token_file {
        Some(path) => take_token(path).await?,
        None => {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "no mission token: the host names its file with {} in the mission server entry it hands the agent",
                    super::TOKEN_FILE_FLAG
                ),
            ));
        }
    };
    let mut stream = UnixStream::connect(socket).await.map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("cannot reach mission socket {}: {err}", socket.display()),
        )
    })?;
    present_token(&mut stream, &token).await?;
    let (mut from_host, mut to_host) = stream.into_split();
    let mut stdin = tokio::io::stdin();
    let mut stdout = tokio::io::stdout();

    let upstream = async {
        let copied = tokio::io::copy(&mut stdin, &mut to_host).await;
        // Tell the host we are done so it closes its side too.
        let _ = to_host.shutdown().await;
        copied
    };
    let downstream = async {
        let copied = tokio::io::copy(&mut from_host, &mut stdout).await;
        let _ = stdout.flush().await;
        copied
    };
    tokio::pin!(upstream, downstream);

    tokio::select! {
        // The host hung up (mission at rest): nothing more will come.
        result = &mut downstream => result.map(drop),
        result = &mut upstream => {
            // The agent closed our stdin; let replies already on their way
            // reach it, but do not linger.
            let _ = tokio::time::timeout(DRAIN_AFTER_STDIN_EOF, &mut downstream).await;
            result.map(drop)
        }
    }
}
