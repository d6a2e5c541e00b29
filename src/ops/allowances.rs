//! Allowances: an operator's "allow always (this mission)" on a gated call whose
//! agent offered one, kept by missionboard (`asks::allowances`), never by the
//! agent. Granting one is an answer ([`crate::ops::answer`], verdict
//! `ApproveAlways`); this is where every surface lists and revokes them, and where
//! both land on the mission's record as a report naming who did it.

use crate::asks::allowances::{Allowance, RevokeError};
use crate::asks::{Surface, answered_by_label};
use crate::mission::ReportInput;
use crate::ops::host::Host;

/// Allowances, newest first: one mission's, or every mission's.
pub fn list(host: &Host, mission_id: Option<&str>, limit: usize) -> anyhow::Result<Vec<Allowance>> {
    Ok(host.asks().allowances(mission_id, limit)?)
}

/// End allowance `typed` (an id or a unique prefix) at once: the next call it
/// covers is asked about again. The mission's record says who revoked it.
pub fn revoke(host: &Host, typed: &str, via: &Surface) -> Result<Allowance, RevokeError> {
    let a = host.asks().revoke_allowance(typed, via)?;
    let by = answered_by_label(via.as_str(), via.device());
    file(
        host,
        &a,
        format!("allowance revoked by {by}: {}", a.scope),
        format!(
            "Allowance {} no longer applies: the next call it covered is asked about again.",
            a.id
        ),
    );
    Ok(a)
}

/// Put a granted allowance on its mission's record: what it covers, who granted
/// it, and how to end it.
pub(crate) fn record_granted(host: &Host, a: &Allowance) {
    file(
        host,
        a,
        format!(
            "always allowed in this mission by {}: {}",
            a.granted_by(),
            a.scope
        ),
        format!(
            "Allowance {id}, granted on approval {ask}. Later calls of this scope that the envelope would ask about are allowed without asking (the agent is answered allow-once each time); a call the envelope denies stays denied. It ends with this mission, or at once with 'missionboard approvals revoke {short}' (the board: ':revoke allowance {short}'; the web page: the mission's Revoke button).",
            id = a.id,
            ask = a.ask_id,
            short = a.id.get(..8).unwrap_or(&a.id),
        ),
    );
}

/// A progress report on the allowance's mission; a failure is logged (the
/// allowance itself is already on the record).
fn file(host: &Host, a: &Allowance, summary: String, detail: String) {
    let input = ReportInput {
        kind: "progress".into(),
        summary: crate::text::excerpt(&summary, 240),
        detail,
        ..Default::default()
    };
    if let Err(e) = host.missions().add_report(&a.mission_id, input) {
        tracing::warn!(mission = %a.mission_id, allowance = %a.id, "could not report an allowance: {e}");
    }
}
