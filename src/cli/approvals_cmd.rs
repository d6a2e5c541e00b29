//! `missionboard approvals list|respond`.

use super::out::{self, out, outln};
use super::{ApprovalsCmd, BetaFlags, Ctx, ListArgs};
use crate::asks::{Ask, AskKind, Asks, OperatorVerdict};
use crate::clock;
use crate::duration::age;
use crate::ops::answer::{self, Afterwards, Answerer};
use crate::row;

pub(super) fn run(ctx: &Ctx, cmd: ApprovalsCmd, flags: &BetaFlags) -> anyhow::Result<i32> {
    match cmd {
        ApprovalsCmd::List(list_args) => list(ctx, &list_args),
        ApprovalsCmd::Respond {
            id,
            approve,
            deny,
            answer,
            field,
        } => respond(
            ctx,
            &id,
            (approve, deny),
            answer,
            &field,
            flags.as_agent.as_deref(),
        ),
        ApprovalsCmd::History(list_args) => history(ctx, &list_args),
        ApprovalsCmd::Allowances(list_args) => allowances(ctx, &list_args),
        ApprovalsCmd::Revoke { id } => revoke(ctx, &id),
    }
}

/// `approvals allowances`: every operator's allow-always, newest first.
fn allowances(ctx: &Ctx, list: &ListArgs) -> anyhow::Result<i32> {
    let rows = match ctx.existing_store()? {
        Some(store) => crate::ops::allowances::list(&ctx.host(&store)?, None, list.rows())?,
        None => Vec::new(),
    };
    if list.json {
        out::json(&serde_json::json!({ "allowances": rows }))?;
        return Ok(0);
    }
    if rows.is_empty() {
        outln!(
            "No allowances. An operator gives one with \"Allow always (this mission)\" on the web page, where the agent offered it."
        )?;
        return Ok(0);
    }
    let mut table = vec![row![
        "ID",
        "STATE",
        "USES",
        "GRANTED BY",
        "GRANTED",
        "MISSION",
        "COVERS"
    ]];
    for a in &rows {
        table.push(row![
            a.id,
            a.state,
            a.uses,
            a.granted_by(),
            format!("{} ago", age(clock::age_secs(a.granted_at))),
            a.mission_id,
            a.scope
        ]);
    }
    out!("{}", crate::table::render(&table))?;
    Ok(0)
}

/// `approvals revoke <id>`: end an allowance at once.
fn revoke(ctx: &Ctx, id: &str) -> anyhow::Result<i32> {
    let store = ctx.store()?;
    let a = crate::ops::allowances::revoke(&ctx.host(&store)?, id, &crate::asks::Surface::Cli)?;
    outln!(
        "Allowance {} is revoked: the next call it covered ({}) is asked about again.",
        a.id,
        crate::text::sanitize(&a.scope)
    )?;
    Ok(0)
}

/// `approvals history`: resolved asks, the most recently resolved first, each with
/// its verdict, who gave it (surface and device) and how long it waited.
fn history(ctx: &Ctx, list: &ListArgs) -> anyhow::Result<i32> {
    let (rows, total) = match ctx.existing_store()? {
        Some(store) => {
            let asks = Asks::new(store);
            (asks.history(list.rows())?, asks.history_count()?)
        }
        None => (Vec::new(), 0),
    };
    if list.json {
        out::json(&serde_json::json!({"asks": rows, "total": total}))?;
        return Ok(0);
    }
    if rows.is_empty() {
        outln!(
            "No answered asks yet. Once an ask is answered, denied or expires, it is listed here with who answered it."
        )?;
        return Ok(0);
    }
    let mut table = vec![row![
        "ID", "KIND", "VERDICT", "BY", "WAITED", "RESOLVED", "MISSION", "SUMMARY"
    ]];
    for a in &rows {
        table.push(row![
            a.id,
            a.kind(),
            verdict_word(a),
            a.answered_via().unwrap_or_else(|| "-".into()),
            a.waited_ms
                .map_or("-".into(), |ms| age(ms.div_euclid(1000))),
            a.resolved_at.map_or(String::new(), |at| format!(
                "{} ago",
                age(clock::age_secs(at))
            )),
            a.mission_id.as_deref().unwrap_or(""),
            a.args_summary
        ]);
    }
    out!("{}", crate::table::render(&table))?;
    if let Some(line) = super::more_line(rows.len(), total) {
        outln!("{line}")?;
    }
    Ok(0)
}

/// What became of a resolved ask, in one word.
fn verdict_word(a: &Ask) -> &'static str {
    use crate::asks::AskState;
    match a.state {
        AskState::Pending => "pending",
        AskState::Approved if a.takes_words() => "answered",
        AskState::Approved if a.approved_always() => "approved always",
        AskState::Approved => "approved",
        AskState::Denied => "denied",
        AskState::Expired => "expired",
    }
}

/// "answered by web (phone) after 2m": a resolved ask's verdict, who gave it and how
/// long it waited (`mission show`).
pub(super) fn resolution_words(a: &Ask) -> String {
    let mut words = verdict_word(a).to_string();
    if let Some(by) = a.answered_via() {
        words.push_str(&format!(" by {by}"));
    }
    if let Some(ms) = a.waited_ms {
        words.push_str(&format!(" after {}", age(ms.div_euclid(1000))));
    }
    words
}

fn list(ctx: &Ctx, list: &ListArgs) -> anyhow::Result<i32> {
    let json = list.json;
    let (pending, total) = match ctx.existing_store()? {
        Some(store) => settle_then_list(ctx, store, list.rows(), json)?,
        None => (Vec::new(), 0),
    };
    if json {
        out::json(&serde_json::json!({"asks": pending, "total": total}))?;
        return Ok(0);
    }
    if pending.is_empty() {
        outln!(
            "No pending asks. Gated tool calls and mission questions land here when nobody is watching the session."
        )?;
        return Ok(0);
    }
    let now = clock::now_ms();
    let mut rows = vec![row![
        "ID",
        "KIND",
        "TOOL",
        "SUMMARY",
        "MISSION",
        "AGE",
        "EXPIRES-IN"
    ]];
    for a in &pending {
        rows.push(row![
            a.id,
            a.kind(),
            format!("{}.{}", a.tools_name, a.tool_name),
            a.args_summary,
            a.mission_id.as_deref().unwrap_or(""),
            age(clock::age_secs(a.created_at)),
            expires_in(a, now)
        ]);
    }
    out!("{}", crate::table::render(&rows))?;
    for a in pending.iter().filter(|a| a.diff.is_some()) {
        let heading = match a.kind() {
            AskKind::Form => "Fields of",
            AskKind::Url => "Page of",
            _ => "Diff for",
        };
        outln!("\n{heading} {}:\n{}", a.id, a.diff.as_deref().unwrap_or(""))?;
    }
    outln!(
        "\nAnswer with 'missionboard approvals respond <id> --approve|--deny' or '--answer \"...\"' for a question."
    )?;
    if pending.iter().any(|a| a.kind() == AskKind::Form) {
        outln!(
            "Fill a form with '--field key=value' (once per field), or decline it with --deny."
        )?;
    }
    if pending.iter().any(|a| a.kind() == AskKind::Url) {
        outln!(
            "A page ask is never opened by missionboard: visit it yourself, then --approve (done) or --deny (decline)."
        )?;
    }
    if let Some(line) = super::more_line(pending.len(), total) {
        outln!("{line}")?;
    }
    Ok(0)
}

/// Sweep expired asks and resume stranded runs (each said in a line when it did
/// anything: on stdout before the list, on stderr beside `--json`), then the newest
/// `limit` pending asks and how many are pending in all.
fn settle_then_list(
    ctx: &Ctx,
    store: crate::store::Store,
    limit: usize,
    json: bool,
) -> anyhow::Result<(Vec<Ask>, i64)> {
    let say = |line: String| -> anyhow::Result<()> {
        if json {
            out::notice(&line);
            Ok(())
        } else {
            outln!("{line}")
        }
    };
    let answer::Settled {
        expired,
        resumed,
        failed,
    } = crate::runtime::multi_thread()?.block_on(answer::settle_overdue(
        &ctx.host(&store)?,
        answer::Stranded::All,
    ))?;
    if expired > 0 {
        say(format!(
            "Swept {expired} expired ask(s) to their on-timeout verdict.\n"
        ))?;
    }
    if resumed > 0 {
        say(format!(
            "Resumed {resumed} stranded run(s) to completion in this process."
        ))?;
    }
    if failed > 0 {
        say(format!(
            "{failed} resume(s) failed; their checkpoints are retained with the failure and retried by the next 'missionboard approvals list'."
        ))?;
    }
    let asks = Asks::new(store);
    Ok((asks.pending(limit)?, asks.pending_count()?))
}

/// `never` for an ask with no deadline, else the time left.
pub(super) fn expires_in(a: &Ask, now_ms: i64) -> String {
    if a.expires_at == 0 {
        "never".into()
    } else {
        age((a.expires_at - now_ms).div_euclid(1000))
    }
}

fn respond(
    ctx: &Ctx,
    ids: &[String],
    (approve, deny): (bool, bool),
    answer: Option<String>,
    fields: &[String],
    as_agent: Option<&str>,
) -> anyhow::Result<i32> {
    if as_agent.is_some_and(|n| n.trim().is_empty()) {
        anyhow::bail!("--as-agent requires a non-empty agent name");
    }
    let id = match ids {
        [] => anyhow::bail!(
            "respond takes exactly one ask id — 'missionboard approvals list' shows what is pending"
        ),
        [id] => id.as_str(),
        more => anyhow::bail!("accepts at most 1 arg(s), received {}", more.len()),
    };
    let answer = answer.filter(|a| !a.trim().is_empty());
    if [approve, deny, answer.is_some(), !fields.is_empty()]
        .iter()
        .filter(|b| **b)
        .count()
        != 1
    {
        anyhow::bail!(
            "exactly one of --approve, --deny, --answer, or --field (a form's, repeated) is required"
        );
    }
    let pairs = fields
        .iter()
        .map(|f| crate::asks::form::parse_pair(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    // An agent fills a form with the same pairs, one a line.
    let answer = match (answer, as_agent) {
        (None, Some(_)) if !pairs.is_empty() => Some(
            pairs
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("\n"),
        ),
        (answer, _) => answer,
    };
    if as_agent.is_some() && answer.is_none() {
        anyhow::bail!("--as-agent attributes a question's answer; pair it with --answer \"...\"");
    }
    let store = ctx.required_store()?;
    let asks = Asks::new(store.clone());
    let row = asks.find(id)?;
    let id = row.id.as_str();
    let verdict = match answer {
        None if !pairs.is_empty() => OperatorVerdict::Fields(pairs),
        Some(text) => OperatorVerdict::Answer(text),
        None if approve => OperatorVerdict::Approve,
        None => OperatorVerdict::Deny,
    };
    if as_agent.is_some() && !row.takes_words() {
        anyhow::bail!(
            "ask {id} is a permission ask ({}.{}) — it takes --approve or --deny, not text",
            row.tools_name,
            row.tool_name
        );
    }
    let who = match (as_agent, &verdict) {
        (Some(name), OperatorVerdict::Answer(text)) => Answerer::Agent { name, text },
        _ => Answerer::Operator(&verdict),
    };
    let host = ctx.host(&store)?;
    let after = crate::runtime::multi_thread()?.block_on(answer::answer(
        &host,
        id,
        who,
        crate::asks::Surface::Cli,
    ))?;
    if let Some(agent) = as_agent {
        outln!(
            "Answered as agent {:?} — the durable record attributes this answer to it, and it counts against the mission's agent-answer bound.",
            agent.trim()
        )?;
    }
    match after {
        Afterwards::ResumedHere => outln!(
            "Verdict recorded for {id} and the suspended run was resumed in this process. If it paused on a further ask, 'missionboard approvals list' shows it."
        )?,
        Afterwards::HostResumes => outln!(
            "Verdict recorded for {id}. Its run is checkpointed under it in a host process that is still up, and that host resumes it with this answer. Should that host die first, a running board or 'missionboard approvals list' on a machine that can start its agent resumes it once the host is known gone."
        )?,
        Afterwards::SettledHere => outln!(
            "Verdict recorded for {id}. Its run had no live host and nothing was left to resume, so it was settled here: 'missionboard mission show {}' has the outcome.",
            row.mission_id.as_deref().unwrap_or("<mission>")
        )?,
        Afterwards::NothingParked => outln!("{}", recorded_line(id))?,
    }
    Ok(0)
}

fn recorded_line(id: &str) -> String {
    format!(
        "Verdict recorded for {id}. Nothing was checkpointed under it, so nothing resumed here — the run that raised it is watching this row in its own process and carries on there, if it is still up."
    )
}
