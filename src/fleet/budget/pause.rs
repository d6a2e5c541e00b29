//! Settling a `pause_ask` question: the operator's extension or stop.

use crate::envelope::bounds::{BudgetAnswer, ComputeField};
use crate::mission::compute::ComputeLedger;

/// Settle a mission's pause on `ask` (resolved): an extension raises `field`
/// above `limit` on the record; "stop" — or a question that closed unanswered —
/// finishes the mission stuck with the bound's `reason`. Returns the raised
/// limit, `None` when the mission stops.
pub(in crate::fleet) fn settle_pause(
    ledger: &ComputeLedger,
    missions: &crate::mission::Missions,
    ask: &crate::asks::Ask,
    field: ComputeField,
    limit: u64,
    reason: &str,
) -> anyhow::Result<Option<u64>> {
    let mission_id = ask.mission_id.as_deref().unwrap_or_default();
    let raised = ask
        .answer()
        .and_then(|a| BudgetAnswer::parse(a).ok())
        .and_then(|a| a.raise_field(field, limit))
        .filter(|l| *l > limit);
    ledger.end_pause(mission_id, &ask.id, raised.map(|l| (field, l)))?;
    if raised.is_none()
        && let Err(e) = missions.finish(mission_id, crate::mission::Status::Stuck, reason)
    {
        tracing::info!(mission = %mission_id, "compute bound lost to another verdict: {e}");
    }
    Ok(raised)
}
