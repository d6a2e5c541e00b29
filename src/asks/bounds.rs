//! Attention bounds: the one function through which any agent — the oracle, an
//! operator's `--as-agent` — answers a unit's question. The mission's own envelope
//! must grant agent answers, and the cap rides the write itself, so racing answerers
//! can never land more than the cap. Human answers never consume the budget.

use std::fmt;

use crate::store::sql::params;
use serde_json::json;

use super::{Ask, AskError, Asks};
use crate::clock;
use crate::envelope::search;
use crate::mission::{Mission, Missions};
use crate::paths::Paths;

/// Why an agent answer did not land.
#[derive(Debug)]
pub enum AgentAnswerError {
    /// The envelope holding: a human must answer (the text says why).
    Refused(String),
    Ask(AskError),
}

impl fmt::Display for AgentAnswerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentAnswerError::Refused(m) => f.write_str(m),
            AgentAnswerError::Ask(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AgentAnswerError {}

impl From<AskError> for AgentAnswerError {
    fn from(e: AskError) -> Self {
        AgentAnswerError::Ask(e)
    }
}

/// The counted prior answers: question and form rows of the mission whose resolution
/// names an agent. JSON escaping means a human's words can never forge the key.
const COUNT: &str = "SELECT COUNT(*) FROM asks prior
     WHERE prior.mission_id = ?1
       AND ((prior.tools_name = 'mission' AND prior.tool_name = 'mission_ask_attention')
            OR (prior.tools_name = 'elicitation' AND prior.tool_name = 'form'))
       AND prior.resolution LIKE '%\"answeredBy\":%'";

/// Answer question `ask_id` as agent `agent` (blank: `agent`), within the bounds of
/// the envelope recorded on the ask's mission.
pub fn answer_as_agent_within_bounds(
    paths: &Paths,
    asks: &Asks,
    missions: &Missions,
    ask_id: &str,
    agent: &str,
    text: &str,
    via: &super::Surface,
) -> Result<Ask, AgentAnswerError> {
    let refuse = |m: String| {
        Err(AgentAnswerError::Refused(format!(
            "agent answer refused: {m}"
        )))
    };
    let row = asks.require(ask_id)?;
    if row.is_budget() {
        return refuse(format!(
            "ask {ask_id} is a compute-bound question: only an operator may extend a mission's budget or stop it"
        ));
    }
    // A form is answered like a question, within the same bounds, but never by an
    // agent when a field asks for a secret: that one waits for a human.
    let form = match &row.form {
        Some(form) if row.is_form() => {
            if let Some(field) = form.secret_field() {
                return refuse(format!(
                    "form {ask_id} asks for a secret (field {}); a human must answer",
                    field.name
                ));
            }
            Some(form)
        }
        _ => None,
    };
    if !row.is_question() && form.is_none() {
        return Err(AskError::Invalid(format!(
            "ask {ask_id} is a {} ask, not a question",
            row.kind()
        ))
        .into());
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(AskError::Invalid("an answer needs words".into()).into());
    }
    let resolution = match form {
        Some(form) => {
            let values = super::form::parse_pairs(text)
                .and_then(|pairs| form.fill(&pairs))
                .map_err(|e| AskError::Invalid(format!("{e} — ask {ask_id} is a form")))?;
            json!({"action": "accept", "content": values, "answer": super::form::values_line(&values)})
        }
        None => json!({"answer": text}),
    };
    let Some(mission_id) = row.mission_id.clone() else {
        return refuse(format!(
            "ask {ask_id} belongs to no mission, so no envelope grants agent answers; a human must answer"
        ));
    };
    let mission = match missions.require(&mission_id) {
        Ok(m) => m,
        Err(e) => {
            return refuse(format!(
                "mission {mission_id} of ask {ask_id} cannot be read: {e}; a human must answer"
            ));
        }
    };
    let max = match agent_answer_cap(paths, &mission) {
        Ok(max) => max,
        Err(why) => return refuse(why),
    };
    let spent = |used: i64| {
        refuse(format!(
            "mission {mission_id} spent its agent-answer bound ({used} of {max}); this question waits for a human"
        ))
    };
    let used = match count(asks, &mission_id) {
        Ok(n) => n,
        Err(e) => {
            return refuse(format!(
                "prior agent answers for mission {mission_id} cannot be counted: {e}; a human must answer"
            ));
        }
    };
    if used >= max {
        return spent(used);
    }
    let actor = if agent.trim().is_empty() {
        "agent"
    } else {
        agent.trim()
    };
    let mut resolution = resolution;
    resolution["answeredBy"] = json!(actor);
    let resolution = resolution.to_string();
    let now = clock::now_ms();
    // The count is part of the guarded write: of racing answerers, only as many as
    // the cap allows can see a count below it. The write transaction matters on
    // PostgreSQL: there two UPDATEs of *different* asks would each count under their
    // own snapshot, so the answers are serialised by the store's write lock (each
    // statement after it counts every answer committed before it); on SQLite every
    // write is serialised anyway.
    let changed = asks.store.write(|c| {
        c.execute(
            &format!(
                "UPDATE asks SET state = 'approved', resolution = ?3, resolved_at = ?4,
                     answered_surface = ?6, answered_device = ?7
                 WHERE id = ?2 AND state = 'pending' AND (expires_at = 0 OR expires_at > ?4)
                   AND ({COUNT}) < ?5"
            ),
            params![
                mission_id,
                ask_id,
                resolution,
                now,
                max,
                via.as_str(),
                via.device()
            ],
        )
    });
    let changed = changed.map_err(AskError::Store)?;
    if changed == 1 {
        asks.wake(ask_id);
        return Ok(asks.require(ask_id)?);
    }
    let row = asks.require(ask_id)?;
    match row.state {
        super::AskState::Pending if row.expires_at == 0 || row.expires_at > now => {
            spent(count(asks, &mission_id).unwrap_or(max))
        }
        super::AskState::Pending | super::AskState::Expired => Err(AskError::Expired {
            id: ask_id.to_string(),
            on_timeout: row.on_timeout,
        }
        .into()),
        _ => Err(AskError::AlreadyResolved {
            by: row.answered_via(),
            id: ask_id.to_string(),
        }
        .into()),
    }
}

/// How many questions agents may answer for `mission`, by its envelope's attention
/// grant; the refusal (why a human must answer) when it grants none.
pub fn agent_answer_cap(paths: &Paths, mission: &Mission) -> Result<i64, String> {
    let (envelope, mission_id) = (&mission.envelope_name, &mission.id);
    let loaded = search::load(paths, envelope).map_err(|e| {
        format!(
            "envelope {envelope:?} of mission {mission_id} cannot be read: {e}; a human must answer"
        )
    })?;
    let grant = loaded.declared.attention.filter(|a| a.allow_agent_answers).ok_or_else(|| {
        format!(
            "envelope {envelope:?} of mission {mission_id} does not allow agent answers (no attention.allowAgentAnswers grant); a human must answer"
        )
    })?;
    Ok(i64::from(grant.effective_max_agent_answers()))
}

/// Whether an agent answer to a question of `mission` could land now (its envelope
/// grants agent answers and the cap is not spent): what an answerer checks before
/// spending a model call. The answer itself is still bounded by the guarded write.
pub fn agent_may_answer(paths: &Paths, asks: &Asks, mission: &Mission) -> bool {
    match (agent_answer_cap(paths, mission), count(asks, &mission.id)) {
        (Ok(max), Ok(used)) => used < max,
        _ => false,
    }
}

/// How many of a mission's questions agents have answered (durable: a restart never
/// refills the budget).
pub fn count(asks: &Asks, mission_id: &str) -> Result<i64, AskError> {
    Ok(asks
        .store
        .with(|c| c.query_row(COUNT, params![mission_id], |r| r.get(0)))?)
}
