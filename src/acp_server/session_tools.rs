//! The session model's two mission tools: `mission_start` fires a mission with this
//! session as its parent (the same fire call and refusals as `/mission`), and
//! `mission_answer` answers a question of one of this session's missions through the
//! one bounded agent-answer path.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::Services;
use crate::asks::bounds::AgentAnswerError;
use crate::asks::{AskError, Asks};
use crate::config::{self, Config};
use crate::mission::{EnvelopeName, Intent};
use crate::model::ToolSpec;
use crate::ops::answer::{self, Answerer};
use crate::ops::fire;
use crate::planner::HostTools;
use crate::sync::LockUnpoisoned;

pub const MISSION_START: &str = "mission_start";
pub const MISSION_ANSWER: &str = "mission_answer";

/// The tools of one session.
pub struct SessionTools {
    pub svc: Services,
    pub session: String,
    /// The session's envelope option, when the editor picked one.
    pub pick: Arc<Mutex<Option<String>>>,
}

/// Who an answer from session `id` is recorded as.
pub fn answering_agent(session: &str) -> String {
    format!("session-agent:{session}")
}

impl HostTools for SessionTools {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec {
                name: MISSION_START.into(),
                description: "Fire a mission: a one-line intent run unattended by a declared agent inside an envelope. Its reports, questions and verdict arrive in this conversation. Leave agent or policy out to use the defaults.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "intent": {"type": "string", "description": "what the mission is to do, one line"},
                        "agent": {"type": "string", "description": "a declared agent (see `missionboard agent list`)"},
                        "policy": {"type": "string", "description": "the envelope that bounds it, e.g. default"}
                    },
                    "required": ["intent"]
                }),
            },
            ToolSpec {
                name: MISSION_ANSWER.into(),
                description: "Answer a question one of your missions is waiting on (its askId is in the question). Only routine questions the envelope lets an agent answer; anything that is the operator's to decide, leave for them.".into(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "askId": {"type": "string"},
                        "answer": {"type": "string"}
                    },
                    "required": ["askId", "answer"]
                }),
            },
        ]
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> BoxFuture<'a, (String, bool)> {
        Box::pin(async move {
            let text = |k: &str| {
                arguments
                    .get(k)
                    .and_then(Value::as_str)
                    .map(str::trim)
                    .unwrap_or_default()
                    .to_string()
            };
            let outcome = match name {
                MISSION_START => {
                    self.start(text("intent"), text("agent"), text("policy"))
                        .await
                }
                _ => self.answer(text("askId"), text("answer")).await,
            };
            match outcome {
                Ok(t) => (t, true),
                Err(t) => (t, false),
            }
        })
    }
}

impl SessionTools {
    async fn start(&self, intent: String, agent: String, policy: String) -> Result<String, String> {
        let intent = intent.split_whitespace().collect::<Vec<_>>().join(" ");
        if intent.is_empty() {
            return Err("missiontools: mission_start needs an intent".into());
        }
        let pick = self.pick.lock_unpoisoned().clone();
        let store = self.svc.host.store().clone();
        let defaults = crate::store::blocking(move || {
            let c = Config::new(store);
            let get = |k| {
                c.get(k)
                    .ok()
                    .flatten()
                    .filter(|v: &String| !v.trim().is_empty())
            };
            (
                get(config::DEFAULT_MISSION_AGENT),
                get(config::DEFAULT_MISSION_POLICY),
            )
        })
        .await;
        // Each with where it was named, which a refusal of it names.
        let (agent, agent_at) = match (agent, defaults.0) {
            (a, _) if !a.is_empty() => (a, "mission_start's agent"),
            (_, Some(a)) => (a, "default-mission-agent"),
            _ => return Err("missiontools: mission_start needs an agent: name one, or set a default with `missionboard config set default-mission-agent <name>`".into()),
        };
        let picked = pick.map(|p| (p, super::command::OPTION_ORIGIN));
        let defaulted = defaults.1.map(|p| (p, "default-mission-policy"));
        let (policy, policy_at) = match (policy, picked.or(defaulted)) {
            (p, _) if !p.is_empty() => (p, "mission_start's policy"),
            (_, Some(given)) => given,
            _ => return Err("missiontools: mission_start needs an envelope: name one, or set a default with `missionboard config set default-mission-policy <name>`".into()),
        };
        let checked = Intent::new(&intent)
            .and_then(|i| Ok((i, EnvelopeName::new(&policy)?)))
            .map_err(|e| e.to_string())?;
        let mut fire = fire::Fire::new(&agent, checked.1, checked.0);
        fire.parent_session = Some(self.session.clone());
        fire.typed_at = fire::TypedAt {
            agent: Some(agent_at),
            envelope: Some(policy_at),
        };
        let d = fire::dispatch(&self.svc.host, fire)
            .await
            .map_err(|e| format!("{e:#}"))?;
        Ok(json!({
            "missionId": d.mission_id,
            "agent": agent,
            "policy": policy,
            "intent": intent,
            "status": "open",
            "note": "it runs on its own now: its reports, questions and verdict arrive in this conversation as they happen",
        })
        .to_string())
    }

    async fn answer(&self, ask_id: String, answer: String) -> Result<String, String> {
        if ask_id.is_empty() || answer.is_empty() {
            return Err("missiontools: mission_answer needs an askId and an answer".into());
        }
        let not_yours = || {
            format!(
                "missiontools: {ask_id:?} is not a question your subagents are currently waiting on (already answered, expired, or not yours)"
            )
        };
        let (svc, id, session) = (self.svc.clone(), ask_id.clone(), self.session.clone());
        let agent_name = crate::store::blocking(move || {
            let ask = Asks::new(svc.host.store().clone())
                .get(&id)
                .ok()
                .flatten()?;
            // A form is filled like a question (`key=value` lines), within the same
            // bounds, and never when it asks for a secret.
            if !(ask.is_pending() && (ask.is_question() || ask.is_form())) {
                return None;
            }
            let mission = svc.host.missions().get(ask.mission_id.as_deref()?).ok()??;
            (mission.parent_session_id.as_deref() == Some(session.as_str()))
                .then_some(mission.agent_name)
        })
        .await
        .ok_or_else(not_yours)?;
        let actor = answering_agent(&self.session);
        let host = self.svc.host.clone();
        let answered = answer::answer(
            &host,
            &ask_id,
            Answerer::Agent {
                name: &actor,
                text: &answer,
            },
            crate::asks::Surface::Editor,
        )
        .await;
        match answered {
            Ok(_) => Ok(format!(
                "answered {ask_id} — subagent {agent_name:?} has your reply and continues"
            )),
            Err(e) => match e.downcast_ref::<AgentAnswerError>() {
                // The envelope holding is an answer for the model, not a failure.
                Some(AgentAnswerError::Refused(why)) => {
                    Ok(format!("answer denied per policy for ask {ask_id}.\n{why}"))
                }
                Some(AgentAnswerError::Ask(
                    AskError::AlreadyResolved { .. } | AskError::Expired { .. },
                )) => Err(not_yours()),
                _ => Err(format!("{e:#}")),
            },
        }
    }
}
