//! The envelope's model allowlist, held on a started unit.

use crate::envelope::format::ComputeBounds;

/// Hold `modelAllowlist` on a started unit: keep its session model when the
/// envelope allows it, else switch to the first allowed model it offers (in the
/// envelope's order; names compare exactly, ignoring case). An agent that
/// advertises no models cannot be held to the list (its label says so). `Err`
/// refuses the fire, before anything is prompted.
pub(in crate::fleet) async fn select_allowed_model(
    unit: &mut crate::acp_client::Unit,
    bounds: &ComputeBounds,
    agent: &str,
) -> anyhow::Result<()> {
    let allow = &bounds.model_allowlist;
    let Some(models) = unit.capabilities().offered_models().cloned() else {
        return Ok(());
    };
    if allow.is_empty() {
        return Ok(());
    }
    let allowed = |m: &str| allow.iter().any(|a| a.trim().eq_ignore_ascii_case(m));
    if allowed(&models.current) {
        return Ok(());
    }
    let quoted = |list: &[String]| {
        list.iter()
            .map(|m| format!("{:?}", m.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let pick = allow.iter().find_map(|a| {
        models
            .available
            .iter()
            .find(|m| m.eq_ignore_ascii_case(a.trim()))
    });
    let Some(pick) = pick.cloned() else {
        anyhow::bail!(
            "compute bound refused: modelAllowlist — this mission's envelope permits only {}; agent {agent:?} offers {}. Nothing was sent and no mission was recorded: fire under an envelope whose modelAllowlist names one of the agent's models, or at an agent that offers an allowed one",
            quoted(allow),
            quoted(&models.available)
        );
    };
    unit.select_model(&pick).await.map_err(|e| {
        anyhow::anyhow!(
            "compute bound refused: modelAllowlist — agent {agent:?} did not switch to the allowed model {pick:?}: {e}. Nothing was sent and no mission was recorded"
        )
    })
}
