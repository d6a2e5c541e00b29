//! Logs go to `<home>/logs/missionboard.log.<date>` (daily rotation), never to the
//! terminal — a unit's chatter or a host's trace must not corrupt the board or a
//! command's output. `--trace` additionally mirrors them to stderr.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{EnvFilter, fmt, layer::SubscriberExt, util::SubscriberInitExt};

/// The log directory, private (0700), with today's file created 0600 before the
/// appender opens it and older files narrowed to 0600 — the logs quote agent
/// text and the store's paths. (A file the appender rotates to later in a
/// long-lived process gets the umask's mode, inside the private directory.)
fn private_log_dir(log_dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    crate::paths::create_private_dir(log_dir)?;
    let today = crate::clock::rfc3339(crate::clock::now_ms());
    let today = today.get(..10).unwrap_or_default();
    crate::paths::create_private_file(&log_dir.join(format!("{FILE_PREFIX}.{today}")))?;
    for entry in std::fs::read_dir(log_dir)?.flatten() {
        let _ = std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(0o600));
    }
    Ok(())
}

/// The log file name before its `.<date>` suffix.
const FILE_PREFIX: &str = "missionboard.log";

/// Stderr, with every escape sequence and control an event carries stripped.
struct SanitizedStderr;

impl std::io::Write for SanitizedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = crate::text::sanitize(&String::from_utf8_lossy(buf));
        std::io::stderr().write_all(text.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// Install the global subscriber. Keep the returned guard alive until exit so buffered
/// lines are flushed. Logging is best effort: an unwritable log directory disables the
/// file log rather than failing the command.
pub fn init(log_dir: &Path, trace_to_stderr: bool) -> Option<WorkerGuard> {
    let filter = EnvFilter::try_from_env("MISSIONBOARD_LOG")
        .unwrap_or_else(|_| EnvFilter::new("missionboard=debug,info"));
    let (file_layer, guard) = match private_log_dir(log_dir).ok().and_then(|_| {
        tracing_appender::rolling::Builder::new()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix(FILE_PREFIX)
            .build(log_dir)
            .ok()
    }) {
        Some(appender) => {
            let (writer, guard) = tracing_appender::non_blocking(appender);
            (
                Some(fmt::layer().with_ansi(false).with_writer(writer)),
                Some(guard),
            )
        }
        None => (None, None),
    };
    // The mirror carries agent text too: written inert, like every CLI line.
    let stderr_layer = trace_to_stderr.then(|| {
        fmt::layer()
            .with_ansi(false)
            .with_writer(|| SanitizedStderr)
    });
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    guard
}
