//! Mapping between ACP schema types and the adapter's plain types.

use agent_client_protocol::v1::schema::{
    self as acp, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionUpdate,
};
use serde::Serialize;
use serde_json::Value;

use super::{
    PermissionAsk, PermissionReply, PlanItem, SessionModels, StopReason, TurnUsage, UnitEvent,
};

/// The wire name of a snake_case schema enum (`ToolKind::Execute` → "execute").
/// Going through serde keeps us honest when the schema adds variants.
fn wire_name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        _ => "other".to_owned(),
    }
}

fn text_of(block: &acp::ContentBlock) -> Option<String> {
    match block {
        acp::ContentBlock::Text(text) => Some(text.text.clone()),
        _ => None,
    }
}

pub(super) fn session_update(update: SessionUpdate) -> Option<UnitEvent> {
    Some(match update {
        SessionUpdate::AgentMessageChunk(chunk) => UnitEvent::AgentText {
            text: text_of(&chunk.content)?,
            message: chunk.message_id.map(|id| id.0.to_string()),
        },
        SessionUpdate::AgentThoughtChunk(chunk) => UnitEvent::Thought(text_of(&chunk.content)?),
        SessionUpdate::ToolCall(call) => UnitEvent::ToolCall {
            id: call.tool_call_id.0.to_string(),
            title: call.title,
            kind: wire_name(&call.kind),
            status: wire_name(&call.status),
            raw_input: call.raw_input,
            meta: call.meta.unwrap_or_default(),
        },
        SessionUpdate::ToolCallUpdate(update) => UnitEvent::ToolCallUpdate {
            id: update.tool_call_id.0.to_string(),
            status: update.fields.status.as_ref().map(wire_name),
            title: update.fields.title,
        },
        SessionUpdate::Plan(plan) => UnitEvent::Plan(
            plan.entries
                .into_iter()
                .map(|entry| PlanItem {
                    content: entry.content,
                    priority: wire_name(&entry.priority),
                    status: wire_name(&entry.status),
                })
                .collect(),
        ),
        SessionUpdate::UsageUpdate(usage) => UnitEvent::Usage {
            used: usage.used,
            size: usage.size,
            cost: usage.cost.map(|c| (c.amount, c.currency)),
        },
        other => {
            tracing::trace!(?other, "session update not surfaced");
            return None;
        }
    })
}

pub(super) fn turn_usage(usage: &acp::Usage) -> TurnUsage {
    TurnUsage {
        total_tokens: usage.total_tokens,
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        thought_tokens: usage.thought_tokens,
        cached_read_tokens: usage.cached_read_tokens,
        cached_write_tokens: usage.cached_write_tokens,
    }
}

pub(super) fn stop_reason(reason: &acp::StopReason) -> StopReason {
    match reason {
        acp::StopReason::EndTurn => StopReason::EndTurn,
        acp::StopReason::MaxTokens => StopReason::MaxTokens,
        acp::StopReason::MaxTurnRequests => StopReason::MaxTurnRequests,
        acp::StopReason::Refusal => StopReason::Refusal,
        acp::StopReason::Cancelled => StopReason::Cancelled,
        // The enum is non-exhaustive; an unknown reason still ended the turn.
        _ => StopReason::EndTurn,
    }
}

/// The ask to hand to the host, and the options offered (kept to pick an id
/// from once the host has decided).
pub(super) fn permission_ask(
    request: RequestPermissionRequest,
    reply: tokio::sync::oneshot::Sender<PermissionReply>,
) -> (PermissionAsk, Vec<acp::PermissionOption>) {
    let fields = request.tool_call.fields;
    let mut meta = request.meta.unwrap_or_default();
    if let Some(tool_meta) = request.tool_call.meta {
        for (k, v) in tool_meta {
            meta.entry(k).or_insert(v);
        }
    }
    let ask = PermissionAsk {
        tool_call_id: request.tool_call.tool_call_id.0.to_string(),
        title: fields.title.unwrap_or_default(),
        kind: fields
            .kind
            .as_ref()
            .map_or_else(|| "other".to_owned(), wire_name),
        raw_input: fields.raw_input,
        locations: fields
            .locations
            .unwrap_or_default()
            .into_iter()
            .map(|l| l.path)
            .collect(),
        options: request
            .options
            .iter()
            .map(|o| (o.option_id.0.to_string(), wire_name(&o.kind)))
            .collect(),
        meta,
        reply,
    };
    (ask, request.options)
}

/// Pick the offered option of the decision's "once" kind (`allow_once`,
/// `reject_once`), by kind, whatever the agent calls it; `cancelled` when none was
/// offered. Never a persistent option (`allow_always`, `reject_always`, an agent's
/// "save" or "for this session"): each call is the envelope's to decide, every
/// time. Never invent an option id.
pub(super) fn permission_response(
    reply: PermissionReply,
    offered: &[acp::PermissionOption],
) -> RequestPermissionResponse {
    let once = match reply {
        PermissionReply::Allow => Some(PermissionOptionKind::AllowOnce),
        PermissionReply::Reject => Some(PermissionOptionKind::RejectOnce),
        PermissionReply::Cancelled => None,
    };
    let chosen = once.and_then(|kind| offered.iter().find(|o| o.kind == kind));
    RequestPermissionResponse::new(match chosen {
        Some(option) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
            option.option_id.clone(),
        )),
        None => RequestPermissionOutcome::Cancelled,
    })
}

/// The session's models, from the raw `session/new` response: a config
/// option of category `model` (current ACP) or the older `models` object.
pub(super) fn session_models(raw: &Value) -> Option<SessionModels> {
    if let Some(options) = raw.get("configOptions").and_then(Value::as_array) {
        for option in options {
            if option.get("category").and_then(Value::as_str) != Some("model") {
                continue;
            }
            let Some(current) = option.get("currentValue").and_then(Value::as_str) else {
                continue;
            };
            let mut available = Vec::new();
            for entry in option
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(value) = entry.get("value").and_then(Value::as_str) {
                    available.push(value.to_owned());
                }
                // Grouped options nest one level deeper.
                for nested in entry
                    .get("options")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(value) = nested.get("value").and_then(Value::as_str) {
                        available.push(value.to_owned());
                    }
                }
            }
            return Some(SessionModels {
                available,
                current: current.to_owned(),
                config_id: option.get("id").and_then(Value::as_str).map(str::to_owned),
            });
        }
    }
    let legacy = raw.get("models")?.as_object()?;
    let current = legacy.get("currentModelId")?.as_str()?.to_owned();
    let available = legacy
        .get("availableModels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("modelId").and_then(Value::as_str).map(str::to_owned))
        .collect();
    Some(SessionModels {
        available,
        current,
        config_id: None,
    })
}

/// A unit's `elicitation/create`, as the host reads it.
pub(super) fn elicitation_ask(
    request: acp::CreateElicitationRequest,
    reply: tokio::sync::oneshot::Sender<super::ElicitationReply>,
) -> super::ElicitationAsk {
    use super::Elicitation;
    let tool_call_id = match request.scope() {
        acp::ElicitationScope::Session(s) => s.tool_call_id.as_ref().map(|id| id.0.to_string()),
        _ => None,
    };
    let wanted = match &request.mode {
        acp::ElicitationMode::Form(form) => match serde_json::to_value(&form.requested_schema)
            .map_err(|e| e.to_string())
            .and_then(|schema| form_of(&schema))
        {
            Ok(form) => Elicitation::Form(form),
            Err(why) => Elicitation::Unsupported(why),
        },
        acp::ElicitationMode::Url(url) => Elicitation::Url {
            url: url.url.clone(),
            elicitation_id: url.elicitation_id.0.to_string(),
        },
        other => Elicitation::Unsupported(format!(
            "elicitation mode {} is not one missionboard fills",
            wire_name(
                &serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v.get("mode").cloned())
            )
        )),
    };
    super::ElicitationAsk {
        message: request.message,
        tool_call_id,
        wanted,
        reply,
    }
}

/// The flat form an elicitation's `requestedSchema` describes: each property a
/// string (free text, `enum` or `oneOf` choices), number, integer or boolean. Any
/// other property (a multi-select, an unknown type) makes the form one missionboard
/// cannot fill.
pub(crate) fn form_of(schema: &Value) -> Result<crate::asks::form::Form, String> {
    use crate::asks::form::{Field, FieldKind, Form};
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(Form { fields: Vec::new() });
    };
    let text = |p: &Value, k: &str| p.get(k).and_then(Value::as_str).map(str::to_string);
    let mut fields = Vec::new();
    for (name, p) in properties {
        let kind = match p.get("type").and_then(Value::as_str) {
            Some("string") => {
                let listed: Option<Vec<String>> = p
                    .get("enum")
                    .and_then(Value::as_array)
                    .map(|v| {
                        v.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .or_else(|| {
                        p.get("oneOf").and_then(Value::as_array).map(|v| {
                            v.iter()
                                .filter_map(|o| o.get("const").and_then(Value::as_str))
                                .map(str::to_string)
                                .collect()
                        })
                    });
                match listed {
                    Some(values) => FieldKind::Choice { values },
                    None => FieldKind::Text {
                        min_length: p.get("minLength").and_then(Value::as_u64).map(|n| n as u32),
                        max_length: p.get("maxLength").and_then(Value::as_u64).map(|n| n as u32),
                    },
                }
            }
            Some("number") => FieldKind::Number {
                minimum: p.get("minimum").and_then(Value::as_f64),
                maximum: p.get("maximum").and_then(Value::as_f64),
            },
            Some("integer") => FieldKind::Integer {
                minimum: p.get("minimum").and_then(Value::as_i64),
                maximum: p.get("maximum").and_then(Value::as_i64),
            },
            Some("boolean") => FieldKind::Boolean,
            other => {
                return Err(format!(
                    "field {name:?} is of type {}, which missionboard does not fill (only text, number, integer, boolean and one-of fields)",
                    other.unwrap_or("(none)")
                ));
            }
        };
        fields.push(Field {
            name: name.clone(),
            title: text(p, "title"),
            description: text(p, "description"),
            kind,
            required: required.contains(&name.as_str()),
            default: p.get("default").filter(|d| !d.is_null()).cloned(),
        });
    }
    Ok(Form { fields })
}

/// The answer to an `elicitation/create`.
pub(super) fn elicitation_response(
    reply: super::ElicitationReply,
) -> acp::CreateElicitationResponse {
    let wire = match reply {
        super::ElicitationReply::Accept(content) if content.is_empty() => {
            serde_json::json!({"action": "accept"})
        }
        super::ElicitationReply::Accept(content) => {
            serde_json::json!({"action": "accept", "content": content})
        }
        super::ElicitationReply::Decline => serde_json::json!({"action": "decline"}),
        super::ElicitationReply::Cancel => serde_json::json!({"action": "cancel"}),
    };
    serde_json::from_value(wire).unwrap_or_else(|_| {
        serde_json::from_value(serde_json::json!({"action": "cancel"}))
            .expect("the cancel action is in the schema")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::PermissionOption;
    use serde_json::json;

    fn option(id: &str, kind: PermissionOptionKind) -> PermissionOption {
        PermissionOption::new(id.to_owned(), id.to_owned(), kind)
    }

    fn selected(response: &RequestPermissionResponse) -> Option<String> {
        match &response.outcome {
            RequestPermissionOutcome::Selected(s) => Some(s.option_id.0.to_string()),
            _ => None,
        }
    }

    #[test]
    fn options_are_chosen_by_kind_once_only_never_invented() {
        let all = vec![
            option("aa", PermissionOptionKind::AllowAlways),
            option("ao", PermissionOptionKind::AllowOnce),
            option("ra", PermissionOptionKind::RejectAlways),
            option("ro", PermissionOptionKind::RejectOnce),
        ];
        assert_eq!(
            selected(&permission_response(PermissionReply::Allow, &all)).as_deref(),
            Some("ao")
        );
        assert_eq!(
            selected(&permission_response(PermissionReply::Reject, &all)).as_deref(),
            Some("ro")
        );
        assert_eq!(
            selected(&permission_response(PermissionReply::Cancelled, &all)),
            None
        );

        let always_only = vec![
            option("aa", PermissionOptionKind::AllowAlways),
            option("ra", PermissionOptionKind::RejectAlways),
        ];
        assert_eq!(
            selected(&permission_response(PermissionReply::Allow, &always_only)),
            None,
            "a persistent allow is never chosen"
        );
        assert_eq!(
            selected(&permission_response(PermissionReply::Reject, &always_only)),
            None
        );
    }

    #[test]
    fn models_from_config_option_or_legacy_field() {
        let current = json!({"sessionId": "s", "configOptions": [
            {"id": "model", "name": "Model", "category": "model", "type": "select",
             "currentValue": "b", "options": [{"value": "a", "name": "A"}, {"value": "b", "name": "B"}]}
        ]});
        assert_eq!(
            session_models(&current),
            Some(SessionModels {
                available: vec!["a".into(), "b".into()],
                current: "b".into(),
                config_id: Some("model".into()),
            })
        );
        let legacy = json!({"sessionId": "s", "models": {"currentModelId": "x",
            "availableModels": [{"modelId": "x", "name": "X"}]}});
        assert_eq!(
            session_models(&legacy),
            Some(SessionModels {
                available: vec!["x".into()],
                current: "x".into(),
                config_id: None,
            })
        );
        assert_eq!(session_models(&json!({"sessionId": "s"})), None);
    }
}
