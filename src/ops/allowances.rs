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

/// Approve gated call `ask_id` and allow its scope always in its mission, the
/// allowance put on the mission's record — what it covers, who granted it, how to end
/// it — in the same transaction, so the record never shows the call it let through
/// before the grant.
pub(crate) fn grant(host: &Host, ask_id: &str, via: &Surface) -> anyhow::Result<Allowance> {
    let asks = host.asks();
    let ask = asks.require(ask_id)?;
    let to = match &ask.mission_id {
        Some(mission) => Some(host.missions().report_to_mission(mission)?),
        None => None,
    };
    let scope = ask.always_scope.clone().unwrap_or_default();
    let by = answered_by_label(via.as_str(), via.device());
    let record = |allowance: &str| {
        let Some(to) = &to else { return Vec::new() };
        let input = ReportInput {
            kind: "progress".into(),
            summary: crate::text::excerpt(
                &format!("always allowed in this mission by {by}: {scope}"),
                240,
            ),
            detail: format!(
                "Allowance {allowance}, granted on approval {ask_id}. Later calls of this scope that the envelope would ask about are allowed without asking (the agent is answered allow-once each time); a call the envelope denies stays denied. It ends with this mission, or at once with 'missionboard approvals revoke {short}' (the board: ':revoke allowance {short}'; the web page: the mission's Revoke button).",
                short = allowance.get(..8).unwrap_or(allowance),
            ),
            ..Default::default()
        };
        match to.statements(input, false) {
            Ok((_, statements)) => statements,
            Err(e) => {
                tracing::warn!(ask = %ask_id, "could not report an allowance: {e}");
                Vec::new()
            }
        }
    };
    let (_, allowance) = asks.approve_always(ask_id, via, &record)?;
    Ok(allowance)
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
