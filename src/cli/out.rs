//! The one place command output is written. Most of what the CLI prints carries
//! agent text (intents, reports, plan entries, questions, verdicts), so every line
//! passes through the sanitizer on its way out, and `--json` through the escaper:
//! no control byte an agent wrote reaches the operator's terminal raw.
//!
//! A closed stdout (`missionboard mission fire … | head`) is not an error to report:
//! the write fails with [`StdoutClosed`], the command unwinds through its normal
//! teardown (a fire reaps its unit) and the process exits quietly with the status a
//! shell shows for git there. One-shot commands do not even get that far: they run
//! with SIGPIPE's default action (see `cli::main`), and end at the failed write.

use std::io::Write;

use crate::text::{escape_json, sanitize};

/// The exit status of a command whose reader went away: 128 + SIGPIPE, what a shell
/// reports for git in the same spot.
pub(super) const STDOUT_CLOSED_EXIT: i32 = 128 + libc::SIGPIPE;

/// Stdout's reader is gone: nothing more can be said, and nothing is wrong.
#[derive(Debug)]
pub(super) struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout was closed")
    }
}

impl std::error::Error for StdoutClosed {}

/// Write `text` to stdout, stripped of escape sequences and controls.
pub(super) fn text(text: &str) -> anyhow::Result<()> {
    write_stdout(sanitize(text).as_bytes())
}

/// Write `value` as pretty JSON with C0, C1, DEL and bidi controls as `\uXXXX`.
pub(super) fn json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut serialized = escape_json(&serde_json::to_string_pretty(value)?);
    serialized.push('\n');
    write_stdout(serialized.as_bytes())
}

/// Write what this binary generated from its own grammar (a completion script, the
/// manual page) byte for byte: no agent wrote any of it, and a tab in a shell
/// script must stay a tab.
pub(super) fn generated(bytes: &[u8]) -> anyhow::Result<()> {
    write_stdout(bytes)
}

/// `Error: …` on stderr, sanitized: errors quote agent text too.
pub(super) fn error(message: &str) {
    // Nothing sensible is left to do when stderr is gone as well.
    let _ = writeln!(std::io::stderr(), "Error: {}", sanitize(message));
}

/// A notice on stderr (not the command's output), sanitized.
pub(super) fn notice(message: &str) {
    let _ = writeln!(std::io::stderr(), "{}", sanitize(message));
}

fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(StdoutClosed.into()),
        Err(e) => Err(anyhow::anyhow!("cannot write to stdout: {e}")),
    }
}

/// `println!` through [`text`]: `outln!("…", args)?`.
macro_rules! outln {
    () => {
        $crate::cli::out::text("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::out::text(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` through [`text`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::out::text(&format!($($arg)*))
    };
}

pub(super) use {out, outln};
