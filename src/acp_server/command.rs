//! `/mission` in an editor session: the board's grammar, defaults and refusals, and
//! the one fire call, with this session recorded as the mission's parent.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, UnstructuredCommandInput,
};

use super::Services;
use crate::ops::fire::{self, PickerData};
use crate::ops::picker::{self, NO_ENVELOPES};

/// What the picker's envelope pick is called when it came from the session's
/// config option.
pub const OPTION_ORIGIN: &str = "the session's envelope option";

/// What becomes of a mission this session hosts: where its reports go, and what
/// the session's end does to it.
const SESSION_REPORTS: &str = "Reports arrive live in this session as the mission runs. This session hosts its unit: if the session ends first (the editor hangs up, or missionboard acp exits), a run waiting on a question stays parked and resumes when the question is answered, any other run ends abandoned, and its reports wait in the operator inbox. With a `missionboard host` running, /mission queues to it instead.";

/// The session's slash commands, for `available_commands_update`.
pub fn available() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new(
            "mission",
            "Fire a mission from this session (no arguments: list the envelopes)",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(
                "[--policy <envelope>] [agent-name] <intent> | --template <name> [key=value…]",
            ),
        )),
        AvailableCommand::new(
            "revise",
            "Send a landed, stuck or derailed mission back to its agent with feedback",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("<mission-id> <feedback>"),
        )),
    ]
}

/// The prompt's arguments after `/revise`, if the prompt is that command.
pub fn revise_args(prompt: &str) -> Option<&str> {
    let rest = prompt.trim().strip_prefix("/revise")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
}

/// Run `/revise <mission-id> <feedback>`: the mission goes back to its agent (queued
/// for a live `missionboard host` that would claim it, else hosted here), through
/// the one revise every surface calls. A refusal is the error text.
pub async fn revise(svc: &Services, args: &str) -> Result<String, String> {
    let args = args.trim();
    let Some((id, feedback)) = args
        .split_once(char::is_whitespace)
        .map(|(id, f)| (id, f.trim()))
        .filter(|(_, f)| !f.is_empty())
    else {
        return Err("usage: /revise <mission-id> <feedback> — the mission's id (or a unique prefix of it) and what its agent should change".into());
    };
    let revised = crate::ops::revise::revise_or_queue(&svc.host, id, feedback, "editor").await?;
    let id = &revised.mission().id;
    Ok(format!(
        "{}\n'missionboard mission show {id}' follows it.",
        revised.line()
    ))
}

/// The prompt's arguments after `/mission`, if the prompt is that command.
pub fn mission_args(prompt: &str) -> Option<&str> {
    let rest = prompt.trim().strip_prefix("/mission")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
}

/// Everything the picker lists, read afresh.
pub fn picker_data(svc: &Services) -> Result<PickerData, String> {
    fire::load_picker(&svc.host)
}

/// Run `/mission <args>` for session `session` (`pick`: its envelope option): the
/// listing, or the confirmation of a fired mission — queued for a live
/// `missionboard host` that would claim it, so it outlives this session, else
/// hosted here. A refusal is the error text.
pub async fn run(
    svc: &Services,
    session: &str,
    pick: Option<String>,
    args: &str,
) -> Result<String, String> {
    if let Some(rest) = fire::template_args(args) {
        return run_template(svc, session, &rest).await;
    }
    let from = fire::LineFrom {
        envelope_pick: pick.clone().map(|p| (p, OPTION_ORIGIN)),
        parent_session: Some(session),
    };
    let (resolved, labels, fire) = match fire::read_line(&svc.host, args, from).await? {
        fire::Line::List(data) => return Ok(listing(&data, pick.as_deref())),
        fire::Line::Fire {
            resolved,
            labels,
            fire,
        } => (resolved, labels, fire),
    };
    if let Some(q) = fire::queue_if_a_host_takes(&svc.host, (*fire).clone()).await? {
        tracing::info!(mission = %q.mission.id, session, host = %q.host.id, agent = %resolved.agent, "session queued a mission");
        return Ok(queued_confirmation(&resolved, &labels, &q));
    }
    let d = fire::dispatch(&svc.host, *fire)
        .await
        .map_err(|e| format!("{e:#}"))?;
    tracing::info!(mission = %d.mission_id, session, agent = %resolved.agent, "session fired a mission");
    Ok(picker::session_confirmation(
        &resolved,
        &labels,
        &d.mission_id,
        &d.instance_id,
        &d.session_id,
        SESSION_REPORTS,
    ))
}

/// `/mission --template <name> [key=value…]`: the template filled in as `mission
/// fire --template` fills it (its refusals are the verb's), fired as a typed
/// `/mission` is — this session its parent, queued for a live `missionboard host`
/// that would claim it, else hosted here.
async fn run_template(svc: &Services, session: &str, rest: &str) -> Result<String, String> {
    let words: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    let Some((name, params)) = words.split_first() else {
        return Err(
            "`/mission --template <name> key=value…` fires a template ('missionboard template list' lists them)"
                .into(),
        );
    };
    let pairs = crate::sched::template::parse_pairs(params)?;
    let (host, template) = (svc.host.clone(), name.clone());
    let filled = crate::store::blocking(move || {
        crate::ops::schedule::template_fire(&host, &template, &pairs)
    })
    .await
    .map_err(|e| format!("{e:#}"))?;
    let mut f = filled.fire;
    f.parent_session = Some(session.to_string());
    let fired = |mission_id: String, queued: Option<usize>| crate::ops::schedule::TemplateFired {
        mission_id,
        agent: f.agent.clone(),
        envelope: f.envelope.as_str().to_string(),
        intent: f.intent.as_str().to_string(),
        queued,
        on: None,
    };
    if let Some(q) = fire::queue_if_a_host_takes(&svc.host, f.clone()).await? {
        tracing::info!(mission = %q.mission.id, session, template = %name, "session queued a template's mission");
        let done = fired(q.mission.id.clone(), Some(q.position));
        return Ok(format!(
            "{}
It runs on the missionboard host on {} whether or not this session lives; its reports wait in the operator inbox.",
            picker::template_confirmation(name, &done),
            crate::text::sanitize(&q.host.machine)
        ));
    }
    let done_shape = fired(String::new(), None);
    let d = fire::dispatch(&svc.host, f)
        .await
        .map_err(|e| format!("{e:#}"))?;
    tracing::info!(mission = %d.mission_id, session, template = %name, "session fired a template's mission");
    let done = crate::ops::schedule::TemplateFired {
        mission_id: d.mission_id,
        ..done_shape
    };
    Ok(format!(
        "{}
{SESSION_REPORTS}",
        picker::template_confirmation(name, &done)
    ))
}

/// The confirmation of a mission queued for a `missionboard host`: where it waits,
/// and that it no longer depends on this session.
fn queued_confirmation(r: &fire::Resolved, labels: &[String], q: &fire::Queued) -> String {
    let who = if r.agent_named {
        "named agent"
    } else {
        "default mission agent"
    };
    let id = &q.mission.id;
    let mut out = format!(
        "Mission queued for the missionboard host on {} (position {}): {who} {:?} under envelope {:?} ({}).\n",
        crate::text::sanitize(&q.host.machine),
        q.position,
        r.agent,
        r.envelope.as_str(),
        r.origin
    );
    if !labels.is_empty() {
        out.push_str(&format!("Envelope: {}\n", labels.join(fire::LABEL_SEP)));
    }
    out.push_str(&format!("Intent: {}\n", r.intent));
    out.push_str(&format!(
        "Mission {id} runs on that host whether or not this session lives; its reports wait in the operator inbox ('missionboard inbox list'), and 'missionboard mission show {id}' follows it."
    ));
    out
}

/// `/mission` with no arguments: how to fire, the defaults, and every envelope with
/// the picker's character line and truthful labels. `pick` (the session's envelope
/// option) is marked as the default it stands for.
pub fn listing(data: &PickerData, pick: Option<&str>) -> String {
    let mut lines = picker::header_lines(data, picker::FiredFrom::Session);
    if let Some(p) = pick {
        lines.push(format!("This session's envelope option: {p}"));
    }
    lines.push(String::new());
    if data.envelopes.is_empty() {
        lines.push(NO_ENVELOPES.to_string());
        return lines.join("\n");
    }
    // Bounds are labelled for the default agent, as the board's picker does.
    let agent = data.default_agent.as_deref().unwrap_or_default();
    lines.push("Envelopes (--policy <name>):".to_string());
    let default = pick.or(data.default_envelope.as_deref());
    let caps = data.caps_of(agent);
    for e in &data.envelopes {
        lines.push(picker::envelope_line(e, default));
        let labels = crate::ops::fire::bound_labels(e, caps);
        if !labels.is_empty() {
            lines.push(format!("    {}", labels.join(fire::LABEL_SEP)));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_command_itself_is_the_command() {
        assert_eq!(mission_args("/mission"), Some(""));
        assert_eq!(mission_args("  /mission fix it "), Some(" fix it"));
        assert_eq!(mission_args("/missionary work"), None);
        assert_eq!(mission_args("please /mission"), None);
    }
}
