//! The words the drive loop sends a unit. They name each tool the way every agent
//! can find it — "the mission_report tool of the mission MCP server" — because
//! agents spell MCP tool names differently (`mcp__mission__mission_report`,
//! `mission.mission_report`, …).

use crate::asks::{Ask, AskKind, AskState};
use crate::mission_mcp::{
    ANSWER_LINE, FEEDBACK_END, FEEDBACK_LINE, FORM_LINE, GATED_CALL_LINE, QUESTION_LINE,
    VERDICT_LINE,
};

/// Sent as the first content block of the first turn; never stored on the mission.
pub const PREAMBLE: &str = "You are running as an UNATTENDED mission unit. No human is reading this conversation — replying in prose reaches no one. You reach outside this session ONLY through your mission tools:
- the mission_plan tool of the mission MCP server: file your plan before any other tool call, and keep it true — exactly one entry in_progress, mark an entry completed as soon as it is done, revise the plan when the work changes. It is the operator's only live view of what you are doing.
- the mission_report tool of the mission MCP server: record real progress, a finding, a blocker, or the result (name the files or URLs it refers to in refs).
- the mission_ask_attention tool of the mission MCP server: ask for a decision you may not make alone, then WAIT — the reply comes back as the tool's result on the same turn. If no reply comes, the question is filed as a blocker and you carry on with what you can.
- the mission_finish tool of the mission MCP server: end the mission with a verdict (landed, derailed, stuck) once it is truly done.
Do the work with your other tools. Decide what the intent below already settles; ask only for what it does not. Chat text alone will not be seen.";

/// The one runtime nudge after a turn that reached nobody.
pub const NUDGE: &str = "Your last turn ended without reaching outside this session, and no human is reading this chat. Use the mission_report tool of the mission MCP server to record progress, a finding, a blocker, or a result; the mission_ask_attention tool of the mission MCP server if you are blocked on a decision (then wait for the reply); or the mission_finish tool of the mission MCP server to end the mission with its verdict: landed (once a result report names what you produced in its refs), stuck, derailed or abandoned. If you are not done, keep working. Do not answer in prose alone — it will not be seen.";

const NO_ANSWER: &str = "(none — the question closed without an answer)";

/// An elicitation's answer as the protocol's action would have carried it:
/// `accept` (a form's values after it), `decline`, or `cancel` (nobody chose).
fn elicitation_action(ask: &Ask) -> String {
    let action = ask
        .resolution
        .as_ref()
        .and_then(|r| r.get("action"))
        .and_then(serde_json::Value::as_str);
    match (ask.state, action) {
        (AskState::Approved, Some("accept")) => match ask.answer() {
            Some(values) if !values.is_empty() => format!("accept {values}"),
            _ => "accept".to_string(),
        },
        (AskState::Approved, _) => "accept".to_string(),
        (AskState::Denied, _) if ask.answered_surface.is_some() => "decline".to_string(),
        _ => "cancel".to_string(),
    }
}

/// What became of the ask a run waited on, in marker lines.
fn outcome_lines(ask: &Ask) -> String {
    if matches!(ask.kind(), AskKind::Form | AskKind::Url) {
        return format!(
            "{FORM_LINE}{}\n{ANSWER_LINE}{}",
            ask.args_summary,
            elicitation_action(ask)
        );
    }
    if ask.takes_words() {
        return format!(
            "{QUESTION_LINE}{}\n{ANSWER_LINE}{}",
            ask.args_summary,
            ask.answer().unwrap_or(NO_ANSWER)
        );
    }
    let verdict = match (ask.approved(), ask.state) {
        (Some(true), _) => "approved — make the call again now and it is allowed".to_string(),
        (_, AskState::Expired) => format!(
            "denied — nobody decided before its deadline, so its on-timeout verdict ({}) applied; do not make the call",
            ask.on_timeout
        ),
        _ => "denied — do not make the call; carry on without it".to_string(),
    };
    format!(
        "{GATED_CALL_LINE}{} ({}.{})\n{VERDICT_LINE}{verdict}",
        ask.args_summary, ask.tools_name, ask.tool_name
    )
}

/// The turn a live host sends when the question a unit parked on is resolved (and
/// the first turn of a session an agent loaded to resume its run).
pub fn resume_turn(ask: &Ask) -> String {
    let (lead, tail) = match ask.answer() {
        _ if matches!(ask.kind(), AskKind::Form | AskKind::Url) => (
            "The form you sent the operator (elicitation/create) was answered after your host process ended. Its request ended with that process and cannot be answered any more, so here is the answer it would have carried (accept with the values, decline, or cancel when nobody chose).",
            "Use the answer as the form's own, do not send the same form again, and carry on with the mission, reaching the operator only through your mission tools.",
        ),
        _ if !ask.takes_words() => (
            "The gated tool call your turn was waiting on was decided while your host was away.",
            "Carry on with the mission, and keep reaching the operator only through your mission tools.",
        ),
        Some(_) => (
            "The operator answered the question you parked on.",
            "Carry on with the mission, and keep reaching the operator only through your mission tools.",
        ),
        None => (
            "Nobody answered the question you parked on, and it has closed.",
            "Carry on with what you can decide yourself, and report what stays blocked with the mission_report tool of the mission MCP server.",
        ),
    };
    format!("{lead}\n{}\n\n{tail}", outcome_lines(ask))
}

/// The turn after one during which the envelope refused the unit's calls: each
/// refused call (`tools.tool: input — why`), and what the unit may still do.
pub fn refusal_turn(refused: &[String]) -> String {
    let mut out = String::from(if refused.len() == 1 {
        "The envelope refused a tool call of yours:\n"
    } else {
        "The envelope refused tool calls of yours:\n"
    });
    for line in refused {
        out.push_str(&format!("- {line}\n"));
    }
    out.push_str("\nDo not make a refused call again: it will be refused again. Carry on another way if there is one; otherwise record what stays blocked with the mission_report tool of the mission MCP server, or end the mission with the mission_finish tool of the mission MCP server. If you end your turn with neither, the mission finishes stuck on this refusal.");
    out
}

/// The turn that follows an operator's extension of a compute bound that
/// cancelled the unit's previous turn.
pub fn extended_turn(bound: &str, was: &str, now: &str) -> String {
    format!(
        "Your previous turn was cancelled when the mission reached its compute bound {bound}={was}. The operator extended it: {bound} is now {now}. Carry on with the mission from where you stopped, and keep reaching the operator only through your mission tools."
    )
}

/// The first block of a fresh session that resumes a parked mission whose host died.
pub fn resume_brief(reports: &[crate::mission::Report], ask: &Ask) -> String {
    let mut out = String::from(
        "You are resuming a parked mission. The session that worked on it is gone (its host process ended), so this is a fresh session; here is what it had done.\n",
    );
    if reports.is_empty() {
        out.push_str("Reports so far: none.\n");
    } else {
        out.push_str("Reports so far (oldest first):\n");
        for r in reports {
            out.push_str(&format!("- [{}] {}\n", r.kind, r.summary));
        }
    }
    out.push_str(&outcome_lines(ask));
    if matches!(ask.kind(), AskKind::Form | AskKind::Url) {
        out.push_str("\nThe form's request ended with that session, so this is the answer it would have carried (accept with the values, decline, or cancel when nobody chose): use it as the form's own, and do not send the same form again.");
    }
    out.push_str("\n\nCarry on from there. Your standing instructions and the intent follow.");
    out
}

/// The operator's feedback on a revised run, between its marker lines, and what the
/// unit is to do with it.
fn feedback_lines(run: &crate::mission::revise::Run, check: Option<&str>) -> String {
    let rested = match &run.from_reason {
        Some(r) if !r.trim().is_empty() => format!("{} ({})", run.from_status, r.trim()),
        _ => run.from_status.clone(),
    };
    let check = match check {
        Some(command) => format!(
            " Its check (`{command}`) runs again when you call the mission_finish tool with status landed: the mission lands only if it passes."
        ),
        None => String::new(),
    };
    format!(
        "The operator sent this mission back to you (run {}): it had rested {rested}.\n{FEEDBACK_LINE}\n{}\n{FEEDBACK_END}\n\nAct on the feedback in the same workspace, keep reaching the operator only through your mission tools, and end with the mission_finish tool of the mission MCP server when the work is done.{check}",
        run.run, run.feedback
    )
}

/// The first turn of a revised run on the session that worked on it before.
pub fn revise_turn(run: &crate::mission::revise::Run, check: Option<&str>) -> String {
    feedback_lines(run, check)
}

/// The first block of a revised run on a fresh session (the agent could not load
/// its earlier one): what was done, then the feedback. The standing instructions
/// and the intent follow it.
pub fn revise_brief(
    reports: &[crate::mission::Report],
    run: &crate::mission::revise::Run,
    check: Option<&str>,
) -> String {
    let mut out = String::from(
        "You are continuing a mission that was sent back for revision. The session that worked on it before cannot be loaded, so this is a fresh session; here is what was done.\n",
    );
    if reports.is_empty() {
        out.push_str("Reports so far: none.\n");
    } else {
        out.push_str("Reports so far (oldest first):\n");
        for r in reports {
            out.push_str(&format!("- [{}] {}\n", r.kind, r.summary));
        }
    }
    out.push('\n');
    out.push_str(&feedback_lines(run, check));
    out.push_str("\n\nYour standing instructions and the intent follow.");
    out
}

/// The ATTACH paragraph of the runtime's blocker for a mute unit.
pub fn attach(session_id: &str) -> String {
    format!(
        "The unit produced no mission report across two turns (its first turn and one runtime nudge). Attach to session {session_id} to read its transcript and continue it."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_name_every_tool_in_the_server_qualified_form() {
        for tool in [
            "mission_plan",
            "mission_report",
            "mission_ask_attention",
            "mission_finish",
        ] {
            assert!(
                PREAMBLE.contains(&format!("the {tool} tool of the mission MCP server")),
                "{tool}"
            );
        }
        for tool in ["mission_report", "mission_ask_attention", "mission_finish"] {
            assert!(NUDGE.contains(&format!("the {tool} tool of the mission MCP server")));
        }
        assert!(NUDGE.starts_with(
            "Your last turn ended without reaching outside this session, and no human is reading this chat."
        ));
    }
}
