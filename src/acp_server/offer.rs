//! Offering a parented question to the session's own agent: after the question is
//! shown in the session, a visible turn asks the agent to answer it with
//! `mission_answer`, once the session is free of the turn it is in — unless the
//! envelope grants no agent answers, the cap is spent, or the question was answered
//! meanwhile. Declining is silent: the question stays pending for the operator, who
//! can always answer it.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{ChatSession, Server};
use crate::acp_client::agent_side::CancelSignal;
use crate::asks::Asks;
use crate::asks::bounds::agent_may_answer;
use crate::mission::Mission;
use crate::store::blocking;

pub async fn offer(
    host: &Arc<Server>,
    session: &Arc<ChatSession>,
    mission: &Mission,
    event: &Value,
) {
    let field = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or_default();
    let ask_id = field("askId").to_string();
    if !still_answerable(host, mission, &ask_id).await {
        return;
    }
    let prompt = json!({
        "offer": format!(
            "unit {} of a mission you fired is waiting on you. If the intent you fired settles the question, answer it with mission_answer (this askId); if it is the operator's to decide, say so and leave it to them.",
            mission.agent_name
        ),
        "missionId": mission.id,
        "askId": ask_id,
        "agentName": mission.agent_name,
        "intent": mission.intent,
        "summary": field("summary"),
        "detail": field("detail"),
    })
    .to_string();
    let (host, session, mission) = (host.clone(), session.clone(), mission.clone());
    tokio::spawn(async move {
        // After the turn the session is in (an earlier offer, the operator's own),
        // if the question still waits and the bound still allows it.
        let state = session.chat.clone().lock_owned().await;
        if host.sessions.get(&session.id).is_none()
            || !still_answerable(&host, &mission, &ask_id).await
        {
            return;
        }
        let cancel = CancelSignal::new(&session.cancel);
        if let Err(e) = host.run_turn(&session, state, prompt, cancel).await {
            tracing::warn!(ask = %ask_id, "the session's answer turn failed: {}", e.message);
        }
    });
}

/// Is `ask_id` still pending, and could an agent answer to it land?
async fn still_answerable(host: &Server, mission: &Mission, ask_id: &str) -> bool {
    let (svc, m, id) = (host.svc.clone(), mission.clone(), ask_id.to_string());
    let may = blocking(move || {
        let asks = Asks::new(svc.host.store().clone());
        let pending = asks.get(&id).ok().flatten().is_some_and(|a| a.is_pending());
        pending && agent_may_answer(svc.host.paths(), &asks, &m)
    })
    .await;
    if !may {
        tracing::debug!(ask = %ask_id, "session offer declined: answered, or left to a human by the envelope");
    }
    may
}
