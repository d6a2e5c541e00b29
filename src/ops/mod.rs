//! The operator's verbs, one file each, between the roles (the fleet that hosts
//! units, the oracle) and the surfaces (cli, board, the editor session, bench).
//! A surface parses its input, calls a verb, and formats the outcome; what a verb
//! does — which defaults apply, which checks refuse, which service call records it,
//! which host resumes a run, what becomes of a host's missions when it leaves — is
//! decided here once for every surface. Each surface holds one [`host::Host`] and
//! hands it to the verbs.

pub mod allowances;
pub mod answer;
pub mod devices;
pub mod fire;
pub mod grants;
pub mod handshake;
pub mod host;
pub mod inbox;
pub mod leave;
pub mod picker;
pub mod revise;
pub mod schedule;
pub mod show;
pub mod spend;
pub mod stop;
pub mod sweep;
pub mod trigger;
pub mod worktree;
