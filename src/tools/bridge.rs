//! `missionboard mcp-bridge <socket>`: the stdio MCP server an agent spawns.
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

/// Overwrite the token's bytes in this process's original environment block, which
/// is what `/proc/<pid>/environ` shows: once read, it is not left there for another
/// process of the same user to copy. (The socket also checks that a connection
/// comes from the mission's own unit, so a copy taken before this ran is no use.)
fn scrub_token_from_environ() {
    let name = std::ffi::CString::new(super::TOKEN_ENV).expect("the name has no NUL");
    // SAFETY: getenv returns null or a pointer to the value's NUL-terminated bytes in
    // the environment block, memory of this process; overwriting them with NULs
    // (keeping the terminator) leaves a valid, empty value. Nothing else in the
    // bridge reads or changes the environment.
    unsafe {
        let value = libc::getenv(name.as_ptr());
        if !value.is_null() {
            std::ptr::write_bytes(value, 0, libc::strlen(value));
        }
    }
}

/// Pipe stdin → socket and socket → stdout until either side ends.
///
/// Returns an error naming the socket when it cannot be reached; the CLI
/// prints it to stderr and exits non-zero, which agents surface as "MCP
/// server failed to start".
pub async fn run_mcp_bridge(socket: &Path) -> io::Result<()> {
    let mut stream = UnixStream::connect(socket).await.map_err(|err| {
        io::Error::new(
            err.kind(),
            format!("cannot reach mission socket {}: {err}", socket.display()),
        )
    })?;
    // The host hands the token to this entry's environment only; without it the
    // socket refuses us, so say what is missing instead.
    let token = std::env::var(super::TOKEN_ENV).map_err(|_| {
        io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "no mission token in {}: the host passes it in the mission server entry it hands the agent",
                super::TOKEN_ENV
            ),
        )
    })?;
    scrub_token_from_environ();
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
