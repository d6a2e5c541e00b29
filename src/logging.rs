//! Logs go to `<home>/logs/missionboard.log.<date>` (daily rotation), never to the
//! terminal — a unit's chatter or a host's trace must not corrupt the board or a
//! command's output. `--trace` additionally mirrors them to stderr.

use std::path::Path;

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::{EnvFilter, fmt, layer::SubscriberExt, util::SubscriberInitExt};

/// Install the global subscriber. Keep the returned guard alive until exit so buffered
/// lines are flushed. Logging is best effort: an unwritable log directory disables the
/// file log rather than failing the command.
pub fn init(log_dir: &Path, trace_to_stderr: bool) -> Option<WorkerGuard> {
    let filter = EnvFilter::try_from_env("MISSIONBOARD_LOG")
        .unwrap_or_else(|_| EnvFilter::new("missionboard=debug,info"));
    let (file_layer, guard) = match std::fs::create_dir_all(log_dir).ok().and_then(|_| {
        tracing_appender::rolling::Builder::new()
            .rotation(tracing_appender::rolling::Rotation::DAILY)
            .filename_prefix("missionboard.log")
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
    let stderr_layer = trace_to_stderr.then(|| fmt::layer().with_writer(std::io::stderr));
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(file_layer)
        .with(stderr_layer)
        .try_init();
    guard
}
