//! What the read views (`mission show`, the board's detail and oracle panes)
//! gather from the roles' own records: the compute a mission spent under its
//! bounds, and what the oracle did about its questions.

use crate::fleet::budget::{ComputeLedger, ComputeRecord};
use crate::oracle::trace::Trace;
use crate::store::{Store, StoreError};

/// One line of what the oracle did about a question, with its ask and time.
pub use crate::oracle::trace::TraceLine;

/// The compute record of a mission: its bounds as raised, what it spent, the model
/// it runs on. `None` for a mission that never started a unit.
pub fn compute_record(
    store: &Store,
    mission_id: &str,
) -> Result<Option<ComputeRecord>, StoreError> {
    ComputeLedger::new(store.clone()).get(mission_id)
}

/// What the oracle did about one mission's questions, its newest `limit` lines.
pub fn oracle_trace(
    store: &Store,
    mission_id: &str,
    limit: usize,
) -> Result<Vec<TraceLine>, StoreError> {
    Trace::new(store.clone(), false).for_mission(mission_id, limit)
}

/// The oracle's newest `limit` lines across every mission, oldest first.
pub fn recent_oracle_trace(store: &Store, limit: usize) -> Result<Vec<String>, StoreError> {
    Trace::new(store.clone(), false).recent(limit)
}
