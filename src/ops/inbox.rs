//! The inbox verb: acknowledge what landed while nobody was watching.

use crate::mission::inbox::InboxItem;
use crate::ops::host::Host;

/// Acknowledge inbox item `id` (acknowledging it again is no change).
pub fn ack(host: &Host, id: &str) -> crate::mission::Result<InboxItem> {
    host.missions().ack(id)
}

/// Acknowledge each of `ids`; one that fails (acked elsewhere meanwhile, say) does
/// not stop the rest. The number acknowledged, and `(id, why)` for each failure.
pub fn ack_many(host: &Host, ids: &[String]) -> (usize, Vec<(String, String)>) {
    let failed: Vec<(String, String)> = ids
        .iter()
        .filter_map(|id| ack(host, id).err().map(|e| (id.clone(), e.to_string())))
        .collect();
    (ids.len() - failed.len(), failed)
}
