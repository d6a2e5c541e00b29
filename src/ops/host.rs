//! The process's one host, as every surface that hosts units builds it: the fleet
//! that holds this process's units, and the oracle mounted on it when the operator
//! asks for one. A surface builds its host here, holds it, and hands it to the
//! verbs; it never reaches into the fleet or the oracle itself.

use crate::oracle::Oracle;
use crate::paths::Paths;
use crate::store::Store;

/// The units this process hosts, under its width: one per process that hosts any
/// (`mission fire --wait`, the board, the editor server), handed to every verb.
pub use crate::fleet::Fleet;

/// The oracle, loaded and ready to be spawned on a host's fleet (`spawn`), which
/// then reviews the questions that fleet's units ask. Mounted before anything is
/// fired: a chain or envelope that cannot load refuses the mount whole.
pub fn mount_oracle(paths: &Paths, store: &Store) -> anyhow::Result<Oracle> {
    Oracle::mount(paths, store)
}
