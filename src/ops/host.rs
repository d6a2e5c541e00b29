//! The process's one host, as every surface that hosts units builds it: the fleet
//! that holds this process's units, and the oracle mounted on it when the operator
//! asks for one. A surface builds its host here, holds it, and hands it to the
//! verbs; it never reaches into the fleet or the oracle itself.

use std::time::Instant;

use crate::oracle::{Mounted, Oracle};
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

/// The oracle running on a host's fleet, as the surface holding it sees it: the
/// review in flight, and the unmounting.
pub struct OracleDriver(Mounted);

impl OracleDriver {
    /// Start `oracle` on `fleet`: from now on it reviews that fleet's questions.
    pub fn start(oracle: Oracle, fleet: Fleet) -> anyhow::Result<OracleDriver> {
        oracle.spawn(fleet).map(OracleDriver)
    }

    /// The ask under review and when the review's budget ends: a fire that would end
    /// sooner waits for it rather than cut it short.
    pub fn review_in_flight(&self) -> Option<(String, Instant)> {
        self.0.review_in_flight()
    }

    /// Unmount it; a review it cuts short says `why` in its trace.
    pub fn unmount(self, why: &str) {
        self.0.unmount(why)
    }
}
