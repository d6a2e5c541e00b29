//! Command line. Only the unit plumbing roles are wired here so far
//! (`stub-agent`, `mcp-bridge`); the rest of the grammar lands with the CLI
//! proper, which absorbs these two subcommands as they are.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "missionboard",
    version,
    about = "A mission runtime with a live terminal board"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the deterministic, script-driven ACP stub agent on stdio.
    StubAgent {
        /// A JSON script to follow (else env STUB_SCRIPT, else directives in the prompt).
        #[arg(long)]
        script: Option<PathBuf>,
        /// Pause 600 ms between steps unless the script sets its own delay.
        #[arg(long)]
        demo: bool,
    },
    /// Pipe stdio to a mission socket (the MCP server entry handed to units).
    McpBridge {
        /// The mission's Unix socket.
        socket: PathBuf,
    },
}

pub fn main() -> i32 {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::StubAgent { script, demo }) => run(async move {
            crate::stub::run_stub_agent(crate::stub::StubOptions { script, demo })
                .await
                .map_err(|e| format!("stub: {e}"))
        }),
        Some(Command::McpBridge { socket }) => run(async move {
            crate::tools::run_mcp_bridge(&socket)
                .await
                .map_err(|e| format!("missionboard mcp-bridge: {e}"))
        }),
        None => {
            eprintln!("missionboard: no command given (try --help)");
            2
        }
    }
}

/// Run a role on a fresh runtime and turn its result into an exit code.
fn run(role: impl std::future::Future<Output = Result<(), String>>) -> i32 {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("missionboard: cannot start the async runtime: {err}");
            return 1;
        }
    };
    let result = runtime.block_on(role);
    // tokio's stdin reader sits in a blocking thread that never returns on
    // its own; waiting for it would hang the exit.
    runtime.shutdown_background();
    match result {
        Ok(()) => 0,
        Err(message) => {
            eprintln!("{message}");
            1
        }
    }
}
