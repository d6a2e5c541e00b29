//! A unit's elicitations (ACP `elicitation/create`): a form to fill or a page to
//! visit becomes a durable ask on its mission, governed like a question — it waits
//! for an answer up to the ask ceiling, an agent (the oracle, an editor's session)
//! may fill a form only within the envelope's attention bounds and never one that
//! asks for a secret — and its answer goes back to the unit as the protocol's
//! action: `accept` (with the values), `decline` (the operator said no) or `cancel`
//! (nobody chose: the deadline passed, the mission ended). A page is shown with its
//! full host and never fetched by missionboard.
//!
//! An elicitation survives the loss of its host as a gated call does: its ask is
//! written with a checkpoint, and the answer reaches the waiting request only under
//! the checkpoint's claim. When the host is gone, the request went with it (an ACP
//! request lives on one connection); an answer given later resumes the run through
//! the checkpoint like any parked run, and the unit's first turn tells it the
//! operator's answer to the form it sent, in words (`fleet::prompts::resume_turn`).

use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use crate::acp_client::{Elicitation, ElicitationAsk, ElicitationReply};
use crate::asks::{AskState, Asks, ELICITATION_TOOLS, FORM_TOOL, NewAsk, URL_TOOL};
use crate::mission::{Missions, subjects};

/// What the answerer needs of the unit it serves.
pub(super) struct Desk {
    pub mission_id: String,
    pub missions: Missions,
    pub asks: Asks,
    pub agent_name: String,
    pub session_id: String,
    pub instance_id: String,
    pub envelope_name: String,
    pub ask_ceiling: Option<Duration>,
    /// The unit's working directory, for the checkpoint a resume starts it in.
    pub cwd: String,
}

/// Answer each elicitation on its own task: one waiting for a human must not hold
/// up the next.
pub(super) fn spawn_answerer(mut rx: mpsc::UnboundedReceiver<ElicitationAsk>, desk: Desk) {
    let desk = std::sync::Arc::new(desk);
    tokio::spawn(async move {
        while let Some(ask) = rx.recv().await {
            let desk = desk.clone();
            tokio::spawn(async move {
                let ElicitationAsk {
                    message,
                    tool_call_id,
                    wanted,
                    reply,
                } = ask;
                let answer = desk.answer(&message, tool_call_id, wanted).await;
                let _ = reply.send(answer);
            });
        }
    });
}

/// `https://example.com:8443` of a URL, sanitized: what the operator is shown as
/// the page's host (the full host, never shortened).
pub fn url_host(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    // Credentials before an `@` are no part of the host (and never shown).
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() || scheme.is_empty() {
        return None;
    }
    Some(crate::text::sanitize(&format!(
        "{}://{}",
        scheme.to_ascii_lowercase(),
        host.to_ascii_lowercase()
    )))
}

impl Desk {
    async fn answer(
        &self,
        message: &str,
        tool_call_id: Option<String>,
        wanted: Elicitation,
    ) -> ElicitationReply {
        let said = crate::text::sanitize(message.trim());
        let (tool, summary, detail, form) = match wanted {
            Elicitation::Unsupported(why) => {
                tracing::warn!(mission = %self.mission_id, "an elicitation missionboard cannot fill was declined: {why}");
                self.note(format!(
                    "The unit asked for input missionboard cannot put to an operator, and was told no: {why}"
                ))
                .await;
                return ElicitationReply::Decline;
            }
            Elicitation::Form(form) => {
                let detail = form.lines().join("\n");
                (FORM_TOOL, said.clone(), detail, Some(form))
            }
            Elicitation::Url { url, .. } => {
                let Some(host) = url_host(&url) else {
                    self.note(format!(
                        "The unit asked the operator to visit a page whose address does not parse ({}), and was told no.",
                        crate::text::excerpt(&crate::text::sanitize(&url), 200)
                    ))
                    .await;
                    return ElicitationReply::Decline;
                };
                let summary = format!("{} — visit {host}", crate::text::excerpt(&said, 120));
                let detail = format!(
                    "{said}\n\nPage: {}\nHost: {host}\n\nmissionboard never opens it. Visit it yourself if you trust {host}, then approve (done) or deny (decline).",
                    crate::text::sanitize(&url)
                );
                (URL_TOOL, summary, detail, None)
            }
        };
        let new = NewAsk {
            id: String::new(),
            tools_name: ELICITATION_TOOLS.into(),
            tool_name: tool.into(),
            args_summary: crate::asks::one_line_summary(&summary),
            diff: Some(detail.clone()),
            envelope_name: self.envelope_name.clone(),
            // Nobody answering is a cancel, not a choice.
            on_timeout: "deny".into(),
            instance_id: self.instance_id.clone(),
            session_id: self.session_id.clone(),
            agent_name: self.agent_name.clone(),
            mission_id: Some(self.mission_id.clone()),
            wait: self.ask_ceiling,
            form,
            checkpoint_cwd: Some(self.cwd.clone()),
            ..Default::default()
        };
        let (asks, missions, mission_id) = (
            self.asks.clone(),
            self.missions.clone(),
            self.mission_id.clone(),
        );
        let raised = crate::store::blocking(move || {
            let row = asks.raise(new)?;
            missions.publish(
                subjects::ATTENTION_ASKED,
                json!({
                    "missionId": mission_id,
                    "askId": row.id,
                    "kind": row.kind().as_str(),
                    "toolCallId": tool_call_id,
                    "summary": row.args_summary,
                    "detail": row.diff,
                }),
            );
            anyhow::Ok(row)
        })
        .await;
        let row = match raised {
            Ok(row) => row,
            Err(e) => {
                tracing::error!(mission = %self.mission_id, "could not file an elicitation; cancelling it: {e}");
                return ElicitationReply::Cancel;
            }
        };
        let deadline = self.ask_ceiling.map(|w| Instant::now() + w);
        let settled = match self.asks.wait(&row.id, deadline).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(mission = %self.mission_id, "elicitation {} unreadable; cancelling it: {e}", row.id);
                return ElicitationReply::Cancel;
            }
        };
        // The answer reaches this request only under the checkpoint's claim: a
        // process that resumed the run elsewhere (this host presumed gone) and this
        // request never both act on it.
        let (asks, id) = (self.asks.clone(), settled.id.clone());
        if !crate::store::blocking(move || asks.claim_for_delivery(&id))
            .await
            .unwrap_or(false)
        {
            tracing::warn!(mission = %self.mission_id, ask = %settled.id, "the elicitation's answer is held by another process resuming this mission; cancelling it here");
            return ElicitationReply::Cancel;
        }
        reply_of(
            settled.state,
            settled.resolution.as_ref(),
            settled.answered_surface.is_some(),
        )
    }

    /// A note on the mission's record (a progress report of the runtime's).
    async fn note(&self, text: String) {
        let (missions, id) = (self.missions.clone(), self.mission_id.clone());
        crate::store::blocking(move || {
            if let Err(e) = missions.add_blocker(&id, crate::text::excerpt(&text, 240), text) {
                tracing::error!(mission = %id, "could not record a declined elicitation: {e}");
            }
        })
        .await
    }
}

/// The protocol's action for an ask as it settled: a filled form or a page visited
/// is `accept`, an operator's no is `decline`, anything else (pending at the
/// deadline, expired, closed with the mission: no surface answered) is `cancel`.
fn reply_of(state: AskState, resolution: Option<&Value>, answered: bool) -> ElicitationReply {
    let action = resolution
        .and_then(|r| r.get("action"))
        .and_then(Value::as_str);
    let approved = resolution
        .and_then(|r| r.get("approved"))
        .and_then(Value::as_bool);
    match (state, action, approved) {
        (AskState::Approved, Some("accept"), _) => ElicitationReply::Accept(
            resolution
                .and_then(|r| r.get("content"))
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        ),
        (AskState::Approved, None, Some(true)) => ElicitationReply::Accept(Map::new()),
        (AskState::Denied, _, _) if answered => ElicitationReply::Decline,
        _ => ElicitationReply::Cancel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_is_shown_by_its_full_host_without_credentials() {
        assert_eq!(
            url_host("HTTPS://Login.Example.com:8443/device?code=x").as_deref(),
            Some("https://login.example.com:8443")
        );
        assert_eq!(
            url_host("https://user:pw@evil.example.net/a").as_deref(),
            Some("https://evil.example.net")
        );
        assert_eq!(url_host("not a url"), None);
    }

    #[test]
    fn settled_asks_become_the_protocols_actions() {
        let accepted = json!({"action": "accept", "content": {"branch": "main"}});
        assert_eq!(
            reply_of(AskState::Approved, Some(&accepted), true),
            ElicitationReply::Accept(accepted["content"].as_object().unwrap().clone())
        );
        assert_eq!(
            reply_of(AskState::Approved, Some(&json!({"approved": true})), true),
            ElicitationReply::Accept(Map::new())
        );
        assert_eq!(
            reply_of(AskState::Denied, Some(&json!({"action": "decline"})), true),
            ElicitationReply::Decline
        );
        assert_eq!(
            reply_of(AskState::Denied, Some(&json!({"approved": false})), true),
            ElicitationReply::Decline
        );
        // Closed by a stop: nobody chose.
        assert_eq!(
            reply_of(AskState::Denied, Some(&json!({"approved": false})), false),
            ElicitationReply::Cancel
        );
        assert_eq!(
            reply_of(AskState::Expired, None, false),
            ElicitationReply::Cancel
        );
        assert_eq!(
            reply_of(AskState::Pending, None, false),
            ElicitationReply::Cancel
        );
    }
}
