//! A dry handshake with a declared agent (`doctor`, `doctor --agent`): spawned
//! confined as a unit would be, greeted over ACP, and ended, with no mission.

use crate::agents::{Agent, SELF_COMMAND};
use crate::envelope::sandbox::SandboxDecl;
use crate::fleet::handshake::{self, HANDSHAKE_TIMEOUT};
use crate::paths::Paths;
use crate::text;

/// Why the handshake failed, and what fixes it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub what: String,
    pub fix: String,
}

impl Failure {
    /// What failed and its fix, the fix said once.
    pub fn said(&self) -> String {
        handshake::Failure {
            what: self.what.clone(),
            fix: self.fix.clone(),
        }
        .said()
    }
}

impl From<handshake::Failure> for Failure {
    fn from(f: handshake::Failure) -> Failure {
        Failure {
            what: f.what,
            fix: f.fix,
        }
    }
}

/// `ready — <who> answered initialize and session/new`, or the failure.
///
/// Unlike every other verb this takes the paths, not an `ops::Host`: a host holds
/// a store, and `doctor` must greet the agents before any store exists (a fresh
/// home) and while a shared one is unreachable — the handshake starts no mission
/// and reads no record, so the paths (the home's agents and envelopes, the cwd the
/// unit is confined to) are all it needs.
pub async fn greet(paths: &Paths, agent: &Agent, decl: &SandboxDecl) -> Result<String, Failure> {
    let exe = std::env::current_exe().unwrap_or_else(|_| SELF_COMMAND.into());
    let g = handshake::dry_handshake(paths, agent, decl, &exe, HANDSHAKE_TIMEOUT).await?;
    let who = match (g.name, g.version) {
        (Some(n), Some(v)) => format!("{} {}", text::one_line(&n), text::one_line(&v)),
        (Some(n), None) => text::one_line(&n),
        _ => "the agent".to_string(),
    };
    Ok(format!("ready — {who} answered initialize and session/new"))
}
