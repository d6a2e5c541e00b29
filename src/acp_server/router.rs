//! Routing the news of parented missions: every mission event on the bus whose
//! mission this process's live session fired is delivered into that session as an
//! agent message chunk (its own `messageId`, attribution in `_meta`). A question is
//! then offered to the session's agent, within the envelope's agent-answer bound. A
//! report whose session has ended waits in the operator inbox as `parent_gone`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, MessageId, SessionUpdate, TextContent,
};
use serde_json::{Map, Value, json};

use super::{Server, Services};
use crate::mission::{Mission, subjects};
use crate::store::blocking;
use crate::sync::LockUnpoisoned;
use crate::text::sanitize;

/// How often the router looks at the bus.
const POLL: Duration = Duration::from_millis(100);

/// Follow the bus from event `after` until the host is gone.
pub fn spawn(host: Weak<Server>, svc: Services, mut after: i64) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(POLL).await;
            let missions = svc.host.missions().clone();
            let events = match blocking(move || missions.bus().since(after, 200)).await {
                Ok(e) => e,
                Err(e) => {
                    tracing::warn!("session router: bus poll failed: {e}");
                    continue;
                }
            };
            let Some(host) = host.upgrade() else { return };
            for ev in events {
                after = ev.id;
                route(&host, &svc, &ev.subject, &ev.data).await;
            }
        }
    })
}

/// One event: delivered, filed in the inbox, or (not a parented mission's, or
/// another process's session) left alone. Malformed events are skipped.
async fn route(host: &Arc<Server>, svc: &Services, subject: &str, data: &Value) {
    if ![
        subjects::REPORT_ADDED,
        subjects::ATTENTION_ASKED,
        subjects::STATUS_CHANGED,
        subjects::PLAN_REVISED,
    ]
    .contains(&subject)
    {
        return;
    }
    let Some(mission_id) = data.get("missionId").and_then(Value::as_str) else {
        return;
    };
    let (missions, id) = (svc.host.missions().clone(), mission_id.to_string());
    let Some(mission) = blocking(move || missions.get(&id).ok().flatten()).await else {
        return;
    };
    let Some(parent) = mission.parent_session_id.clone() else {
        return;
    };
    let Some(session) = host.sessions.get(&parent) else {
        if subject == subjects::REPORT_ADDED {
            file_undelivered(svc, mission, data, false).await;
        }
        return;
    };
    let Some(chunk) = chunk_for(subject, &mission, data) else {
        tracing::warn!(subject, mission = %mission.id, "session router: malformed event skipped");
        return;
    };
    let text = match &chunk.content {
        ContentBlock::Text(t) => t.text.clone(),
        _ => String::new(),
    };
    if let Err(e) = host.notify(&parent, SessionUpdate::AgentMessageChunk(chunk)) {
        tracing::warn!(session = %parent, "session router: delivery failed: {e:?}");
        // A report the session never got still reaches the operator.
        if subject == subjects::REPORT_ADDED {
            file_undelivered(svc, mission, data, true).await;
        }
        return;
    }
    session.news.lock_unpoisoned().push(text);
    if subject == subjects::ATTENTION_ASKED {
        super::offer::offer(host, &session, &mission, data).await;
    }
}

/// A report its parent did not take: into the inbox as `parent_gone` — when the
/// delivery `failed`, or the parent is not live here and lives nowhere else (another
/// process delivers to its own sessions). The write is idempotent, so a report
/// already filed when it was written is never filed twice.
async fn file_undelivered(svc: &Services, mission: Mission, data: &Value, failed: bool) {
    let Some(report) = data
        .get("report")
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return;
    };
    let missions = svc.host.missions().clone();
    let filed = blocking(move || {
        let parent = mission.parent_session_id.as_deref().unwrap_or_default();
        if !failed && missions.parent_session_live(parent)? {
            return Ok(());
        }
        missions.inbox_parent_gone(&mission, &report)
    })
    .await;
    if let Err(e) = filed {
        tracing::warn!("session router: inbox write failed: {e}");
    }
}

/// The chunk an event becomes in the parent session.
fn chunk_for(subject: &str, mission: &Mission, data: &Value) -> Option<ContentChunk> {
    let field = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let agent = if mission.agent_name.trim().is_empty() {
        "a mission unit".to_string()
    } else {
        mission.agent_name.clone()
    };
    let (text, message_id, key, meta) = match subject {
        s if s == subjects::REPORT_ADDED => {
            let report = data.get("report")?;
            let (id, kind, summary) = (
                field(report, "id"),
                field(report, "kind"),
                field(report, "summary"),
            );
            let mut text = format!("unit {agent} reported ({kind}): {summary}");
            let detail = field(report, "detail");
            if !detail.is_empty() {
                text.push_str(&format!("\n{detail}"));
            }
            let refs: Vec<&str> = report
                .get("refs")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !refs.is_empty() {
                text.push_str(&format!("\nrefs: {}", refs.join(", ")));
            }
            (
                text,
                format!("mission-report-{id}"),
                "missionReport",
                json!({"missionId": mission.id, "reportId": id, "kind": kind, "agentName": agent}),
            )
        }
        s if s == subjects::ATTENTION_ASKED => {
            let (ask, summary, detail) = (
                field(data, "askId"),
                field(data, "summary"),
                field(data, "detail"),
            );
            if ask.is_empty() {
                return None;
            }
            let mut text = format!("unit {agent} is waiting on you: {summary}");
            if !detail.is_empty() {
                text.push_str(&format!("\n\n{detail}"));
            }
            text.push_str(&format!(
                "\n\n(ask {ask}: answer it here with /answer {ask} <your answer>, or with 'missionboard approvals respond {ask} --answer \"...\"')"
            ));
            (
                text,
                format!("mission-ask-{ask}"),
                "missionAsk",
                json!({"missionId": mission.id, "askId": ask, "agentName": agent,
                       "intent": mission.intent, "summary": summary, "detail": detail}),
            )
        }
        s if s == subjects::STATUS_CHANGED => {
            let (old, new, reason) = (
                field(data, "oldStatus"),
                field(data, "newStatus"),
                field(data, "reason"),
            );
            let mut text = format!("unit {agent} {new}");
            if !reason.is_empty() {
                text.push_str(&format!(": {reason}"));
            }
            (
                text,
                format!("mission-status-{}-{old}-{new}", mission.id),
                "missionStatus",
                json!({"missionId": mission.id, "agentName": agent, "intent": mission.intent,
                       "oldStatus": old, "newStatus": new, "reason": reason}),
            )
        }
        _ => {
            let n = |k: &str| data.get(k).and_then(Value::as_i64).unwrap_or(0);
            let revision = n("revision");
            let explanation = field(data, "explanation");
            let mut text = format!("unit {agent} revised its plan (rev {revision})");
            if !explanation.is_empty() {
                text.push_str(&format!(": {explanation}"));
            }
            text.push_str(&format!(
                "\n{} entries: {} pending, {} in progress, {} completed",
                n("entryCount"),
                n("pending"),
                n("inProgress"),
                n("completed")
            ));
            (
                text,
                format!("mission-plan-{}-{revision}", mission.id),
                "missionPlan",
                json!({"missionId": mission.id, "agentName": agent, "revision": revision,
                       "explanation": explanation, "entryCount": n("entryCount"),
                       "pending": n("pending"), "inProgress": n("inProgress"),
                       "completed": n("completed")}),
            )
        }
    };
    let mut attribution = Map::new();
    attribution.insert(format!("missionboard.{key}"), meta);
    Some(
        ContentChunk::new(ContentBlock::Text(TextContent::new(sanitize(&text))))
            .message_id(MessageId::new(message_id))
            .meta(attribution),
    )
}
