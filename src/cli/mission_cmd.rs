//! `missionboard mission list|show|reports|plan`: read views over the mission record.

use std::fmt::Write as _;
use std::time::Duration;

use super::out::{self, out, outln};
use super::{Ctx, ListArgs};
use crate::asks::trace::Trace;
use crate::clock;
use crate::duration::age;
use crate::envelope::bounds::{ComputeField, describe};
use crate::mission::compute::ComputeLedger;
use crate::mission::{Mission, Missions, Report};
use crate::ops::host::Host;
use crate::row;

/// The missions of an existing store; a missing one is an error that says so.
pub(super) fn missions(ctx: &Ctx) -> anyhow::Result<Missions> {
    Ok(Missions::new(ctx.required_store()?))
}

/// This command's host over an existing store; a missing one is an error that
/// says so.
fn existing_host(ctx: &Ctx) -> anyhow::Result<Host> {
    ctx.host(&ctx.required_store()?)
}

/// The lazy reclaim sweep of list and show: the count line when it collected
/// anything; its errors never fail the read.
fn sweep(host: &Host, json: bool) -> anyhow::Result<()> {
    match crate::ops::sweep::reclaim(host) {
        Ok(Some(line)) if !json => outln!("{line}\n")?,
        Ok(_) => {}
        Err(e) => tracing::warn!("reclaim sweep failed: {e}"),
    }
    Ok(())
}

/// How much of each intent `mission list` shows: enough to tell missions apart on a
/// line; `mission show` has it whole.
const LIST_INTENT_CHARS: usize = 60;
/// How many of the oracle's newest lines about a mission `mission show` gives.
const ORACLE_TRACE_SHOWN: usize = 200;

pub(super) fn list(ctx: &Ctx, list: &ListArgs) -> anyhow::Result<i32> {
    let json = list.json;
    let (all, total, worktrees, gone, queue, checks) = match ctx.existing_store()? {
        Some(store) => {
            let host = ctx.host(&store)?;
            let svc = host.missions();
            sweep(&host, json)?;
            let all = svc
                .list(list.rows())
                .map_err(|e| anyhow::anyhow!("failed to list missions: {e}"))?;
            let worktrees = crate::worktree::Worktrees::new(svc.store().clone()).states()?;
            let mut probe = crate::mission::hosts::Probe::new(svc.store().clone());
            let gone: Vec<bool> = all.iter().map(|m| host_gone(m, &mut probe)).collect();
            let queue = svc.queue_positions()?;
            let ids: Vec<String> = all.iter().map(|m| m.id.clone()).collect();
            let checks = svc.checks_of(&ids)?;
            let costs = crate::ops::show::mission_costs(&host, &ids)?;
            (
                all,
                svc.counts()?.0,
                worktrees,
                gone,
                queue,
                (checks, costs),
            )
        }
        None => (
            Vec::new(),
            0,
            Default::default(),
            Vec::new(),
            Default::default(),
            Default::default(),
        ),
    };
    let (checks, costs) = checks;
    if json {
        let mut rows = Vec::with_capacity(all.len());
        for (m, gone) in all.iter().zip(&gone) {
            let mut v = serde_json::to_value(m)?;
            if *gone {
                v["hostGone"] = true.into();
            }
            if let Some(at) = queue.get(&m.id) {
                v["queuePosition"] = (*at).into();
            }
            if let Some(c) = checks.get(&m.id) {
                v["check"] = serde_json::to_value(c)?;
            }
            if let Some(c) = costs.get(&m.id) {
                v["cost"] = serde_json::to_value(c)?;
            }
            rows.push(v);
        }
        out::json(&serde_json::json!({"missions": rows, "total": total}))?;
        return Ok(0);
    }
    if all.is_empty() {
        outln!(
            "No missions recorded. Fire one with 'missionboard mission fire <agent> \"<intent>\" --wait', or :mission on the board."
        )?;
        return Ok(0);
    }
    let mut rows = vec![row![
        "ID",
        "AGENT",
        "ENVELOPE",
        "STATUS",
        "WORKSPACE",
        "HOST",
        "AGE",
        "COST",
        "INTENT"
    ]];
    for (m, gone) in all.iter().zip(&gone) {
        rows.push(row![
            m.id,
            m.agent_name,
            m.envelope_name,
            {
                let status = match queue.get(&m.id) {
                    Some(at) => format!("{} #{at}", m.status),
                    None => m.status.to_string(),
                };
                // A mission fired with a check carries its mark: ✓ passed, ✗k/n failed.
                match checks.get(&m.id) {
                    Some(c) => format!("{status} · check {}", c.marker()),
                    None => status,
                }
            },
            crate::worktree::workspace_label(worktrees.get(&m.id).copied()),
            host_cell(m, *gone),
            age(clock::age_secs(m.created_at)),
            costs
                .get(&m.id)
                .map_or_else(|| "-".to_string(), |c| c.short()),
            crate::text::excerpt(&m.intent, LIST_INTENT_CHARS)
        ]);
    }
    out!("{}", crate::table::render(&rows))?;
    if let Some(line) = super::more_line(all.len(), total) {
        outln!("\n{line}")?;
    }
    Ok(0)
}

pub(super) fn show(ctx: &Ctx, id: &str, json: bool) -> anyhow::Result<i32> {
    let host = existing_host(ctx)?;
    let svc = host.missions();
    sweep(&host, json)?;
    let m = svc.resolve(id)?;
    let reports = svc
        .reports(&m.id, SHOWN_REPORTS)
        .map_err(|e| anyhow::anyhow!("failed to read reports for mission {:?}: {e}", m.id))?;
    let report_count = svc.report_count(&m.id)?;
    let queued_at = svc.queue_positions()?.get(&m.id).copied();
    let record = ComputeLedger::new(host.store().clone()).get(&m.id)?;
    let cost = crate::ops::show::mission_cost(&host, record.as_ref());
    let resources = crate::ops::show::resources(&host, &m.id)?;
    let fired_by = crate::sched::schedules::Schedules::new(svc.store().clone()).fired_by(&m.id)?;
    if json {
        let mut v = serde_json::to_value(&m)?;
        v["firedBy"] = serde_json::to_value(&fired_by)?;
        if let Some(at) = queued_at {
            v["queuePosition"] = at.into();
        }
        v["plan"] = serde_json::to_value(svc.plan(&m.id)?)?;
        v["planRevisions"] = serde_json::to_value(svc.plan_revisions(&m.id)?)?;
        v["reports"] = serde_json::to_value(&reports)?;
        v["reportsTotal"] = report_count.into();
        let asks = crate::asks::Asks::new(svc.store().clone());
        let all = asks.for_mission(&m.id, 200)?;
        let mut pending = Vec::new();
        for a in all.iter().filter(|a| a.is_pending()) {
            let mut row = serde_json::to_value(a)?;
            row["parked"] = serde_json::Value::Bool(asks.is_parked(&a.id)?);
            pending.push(row);
        }
        v["pendingAsks"] = serde_json::Value::Array(pending);
        // Every ask with its resolution, newest first: who answered shows there.
        v["asks"] = serde_json::to_value(&all)?;
        v["allowances"] =
            serde_json::to_value(crate::ops::allowances::list(&host, Some(&m.id), 50)?)?;
        v["oracleTrace"] = serde_json::to_value(
            Trace::reader(host.store().clone()).for_mission(&m.id, ORACLE_TRACE_SHOWN)?,
        )?;
        v["check"] = match svc.check(&m.id)? {
            Some(c) => serde_json::to_value(&c)?,
            None => serde_json::json!({
                "command": null, "state": "none", "tries": 0, "maxChecks": 0, "lastExit": null
            }),
        };
        v["cost"] = serde_json::to_value(&cost)?;
        v["runs"] = serde_json::to_value(svc.runs(&m.id)?)?;
        v["resources"] = serde_json::to_value(resources)?;
        out::json(&v)?;
        return Ok(0);
    }
    let mut out = String::new();
    let ago = |ms: i64| format!("{} ago", age(clock::age_secs(ms)));
    writeln!(out, "Mission:   {}", m.id)?;
    writeln!(out, "Intent:    {}", m.intent)?;
    writeln!(out, "Agent:     {}", m.agent_name)?;
    writeln!(out, "Envelope:  {}", m.envelope_name)?;
    writeln!(out, "Status:    {}", status_line(&m))?;
    if let Some(f) = &fired_by {
        writeln!(out, "Fired by:  {}", f.describe())?;
    }
    if let Some(at) = queued_at {
        let on = match svc.run_on(&m.id)? {
            Some(label) => format!(" labelled {label:?}"),
            None => String::new(),
        };
        writeln!(
            out,
            "Queue:     position {at}, waiting for a `missionboard host`{on} to claim it"
        )?;
    }
    if let Some(s) = &m.session_id {
        writeln!(out, "Session:   {s}")?;
    }
    if let Some(i) = &m.instance_id {
        writeln!(out, "Instance:  {i}")?;
    }
    if let Some(p) = &m.parent_session_id {
        writeln!(out, "Fired by:  session {p}")?;
    }
    if let Some(h) = &m.host {
        let mut probe = crate::mission::hosts::Probe::new(svc.store().clone());
        let state = if host_gone(&m, &mut probe) {
            let asks = crate::asks::Asks::new(svc.store().clone());
            let pending = asks
                .for_mission(&m.id, 50)?
                .iter()
                .any(|a| a.state == crate::asks::AskState::Pending);
            let stranded = !pending && !asks.checkpoints_for(&m.id)?.is_empty();
            if pending {
                " — gone, so nothing runs it: an answer to its pending ask resumes it, 'missionboard mission stop' abandons it"
            } else if stranded {
                " — gone; its answered run is resumed by a running board or 'missionboard approvals list' on a machine that can start its agent, 'missionboard mission stop' abandons it"
            } else {
                " — gone, so nothing runs it and nothing can resume it: 'missionboard mission stop' abandons it"
            }
        } else {
            ""
        };
        writeln!(
            out,
            "Host:      {} (pid {}){state}",
            h.machine_label(),
            h.pid
        )?;
    }
    if let Some(h) = m.last_heartbeat {
        writeln!(out, "Heartbeat: {}", ago(h))?;
    }
    if let Some(e) = &m.last_error {
        writeln!(out, "LastError: {e}")?;
    }
    for line in compute_lines(&host, &m) {
        writeln!(out, "{line}")?;
    }
    if record.is_some() {
        writeln!(out, "Cost:      {}", cost.line())?;
    }
    if let Some(r) = &resources {
        writeln!(out, "Resources: {}", r.line())?;
    }
    if let Some(c) = svc.check(&m.id)? {
        for line in check_lines(&c) {
            writeln!(out, "{line}")?;
        }
    }
    // Each revise: the run it started, who sent it back, from what, and the feedback.
    for r in svc.runs(&m.id)? {
        writeln!(
            out,
            "Runs:      {} — revised by {} after it rested {}: {:?}",
            r.run,
            r.revised_by,
            r.from_status,
            crate::text::excerpt(
                &crate::text::one_line(&crate::text::sanitize(&r.feedback)),
                120
            )
        )?;
    }
    if let Some(wt) = crate::worktree::Worktrees::new(svc.store().clone()).get(&m.id)? {
        writeln!(
            out,
            "Worktree:  {} on {} from {} ({})",
            wt.path.display(),
            wt.branch,
            crate::worktree::short_id(&wt.base),
            crate::worktree::workspace_label(Some(wt.state))
        )?;
    }
    if m.plan_revision > 0
        && let Some(rev) = svc
            .plan_revisions(&m.id)?
            .into_iter()
            .find(|r| r.revision == m.plan_revision)
    {
        writeln!(out, "Plan:      {}", rev.show_line())?;
    }
    writeln!(
        out,
        "Created:   {} ({})",
        clock::rfc3339(m.created_at),
        ago(m.created_at)
    )?;
    writeln!(
        out,
        "Updated:   {} ({})",
        clock::rfc3339(m.updated_at),
        ago(m.updated_at)
    )?;
    let asks = crate::asks::Asks::new(svc.store().clone());
    let pending: Vec<_> = asks
        .for_mission(&m.id, 200)?
        .into_iter()
        .filter(|a| a.is_pending())
        .collect();
    if !pending.is_empty() {
        writeln!(
            out,
            "Asks:      {} pending — answer with 'missionboard approvals respond <id> --answer \"...\"' (missionboard mission asks {}):",
            pending.len(),
            m.id
        )?;
        for a in &pending {
            writeln!(out, "             [{}] {}", a.id, a.args_summary)?;
        }
    }
    let answered: Vec<_> = asks
        .for_mission(&m.id, 200)?
        .into_iter()
        .filter(|a| !a.is_pending())
        .collect();
    if !answered.is_empty() {
        writeln!(
            out,
            "Answers:   {} resolved, newest asked first:",
            answered.len()
        )?;
        for a in &answered {
            writeln!(
                out,
                "             [{}] {} — {}",
                a.id,
                super::approvals_cmd::resolution_words(a),
                a.args_summary
            )?;
        }
    }
    // The operator's allow-always grants in this mission, kept by us.
    let allowances = crate::ops::allowances::list(&host, Some(&m.id), 50)?;
    if !allowances.is_empty() {
        writeln!(
            out,
            "Allowed:   {} allowance(s), newest first — revoke with 'missionboard approvals revoke <id>':",
            allowances.len()
        )?;
        for a in &allowances {
            writeln!(out, "             {}", a.line())?;
        }
    }
    // What the oracle did about this mission's questions (its newest lines).
    let trace = Trace::reader(host.store().clone()).for_mission(&m.id, ORACLE_TRACE_SHOWN)?;
    if !trace.is_empty() {
        writeln!(
            out,
            "Oracle:    {} trace line(s), oldest first:",
            trace.len()
        )?;
        for t in &trace {
            writeln!(out, "             {}", t.line)?;
        }
    }
    if reports.is_empty() {
        write!(out, "\nNo reports filed yet.\n")?;
    } else {
        let shown = if (reports.len() as i64) < report_count {
            format!(
                "the newest {} of {}",
                crate::text::count(reports.len() as u64),
                crate::text::count(report_count.max(0) as u64)
            )
        } else {
            reports.len().to_string()
        };
        writeln!(
            out,
            "\nReports ({shown}, oldest first — full detail: missionboard mission reports {}):",
            m.id
        )?;
        out.push_str(&report_lines(&reports));
    }
    out!("{out}")?;
    Ok(0)
}

/// How many of its newest reports `mission show` prints (`mission reports` has all).
const SHOWN_REPORTS: usize = 200;

/// The mission's compute bounds (as an operator raised them), each with its
/// truthful label for the agent as it started, and the model it runs on. Nothing
/// when the envelope sets no bound or can no longer be read.
fn compute_lines(host: &Host, m: &Mission) -> Vec<String> {
    let Ok(envelope) = crate::envelope::search::load(host.paths(), &m.envelope_name) else {
        return Vec::new();
    };
    let record = ComputeLedger::new(host.store().clone())
        .get(&m.id)
        .ok()
        .flatten();
    let declared = &envelope.declared.compute;
    let bounds = record
        .as_ref()
        .map_or_else(|| declared.clone(), |r| r.apply(declared));
    let caps = record.as_ref().map(|r| r.agent_caps());
    let parts: Vec<String> = ComputeField::ALL
        .into_iter()
        .filter(|f| f.is_set(&bounds))
        .map(|f| {
            let line = describe(f, &bounds, caps.as_ref());
            if f.limit(&bounds) != f.limit(declared) {
                format!("{line}, raised from {} by the operator", f.limit(declared))
            } else {
                line
            }
        })
        .collect();
    let mut lines = Vec::new();
    if !parts.is_empty() {
        lines.push(format!(
            "Compute:   {} (onExhausted {})",
            parts.join(" · "),
            bounds.on_exhausted.as_str()
        ));
    }
    if let Some(model) = record.as_ref().and_then(|r| r.model.clone()) {
        lines.push(format!("Model:     {model}"));
    }
    if let Some(context) = record.as_ref().and_then(|r| r.context) {
        lines.push(format!("Context:   {}", context.describe()));
    }
    lines.push(format!(
        "Sandbox:   {}",
        crate::envelope::sandbox::describe(
            &envelope.declared.sandbox_or_baseline(),
            crate::confine::landlock_abi()
        )
    ));
    lines.extend(crate::ops::grants::mission_grants(
        host,
        m,
        &envelope.declared.sandbox_or_baseline(),
    ));
    lines
}

/// `<status>[ — <reason>]`
/// An open mission whose host is gone (by the one liveness rule): no unit works it.
fn host_gone(m: &Mission, probe: &mut crate::mission::hosts::Probe) -> bool {
    m.status == crate::mission::Status::Open && m.host.as_ref().is_some_and(|h| !probe.lives(h))
}

/// The HOST cell: the host's machine, and whether the host is gone.
fn host_cell(m: &Mission, gone: bool) -> String {
    let machine = m.host.as_ref().map_or("-", |h| h.machine_label());
    if gone {
        format!("{machine} (gone)")
    } else {
        machine.to_string()
    }
}

pub(super) fn status_line(m: &Mission) -> String {
    match &m.status_reason {
        Some(r) => format!("{} — {r}", m.status),
        None => m.status.to_string(),
    }
}

/// The short per-report lines `mission show` and `mission fire` print.
pub(super) fn report_lines(reports: &[Report]) -> String {
    let mut out = String::new();
    for r in reports {
        out.push_str(&format!("  [{}] {}\n", r.kind, r.summary));
        if !r.refs.is_empty() {
            out.push_str(&format!("        refs: {}\n", r.refs.join(", ")));
        }
        if let Some(w) = r.downgrade_warning() {
            out.push_str(&format!("        ⚠ {w}\n"));
        }
    }
    out
}

pub(super) fn reports(ctx: &Ctx, id: &str, json: bool) -> anyhow::Result<i32> {
    let svc = missions(ctx)?;
    let m = svc.resolve(id)?;
    let reports = svc.reports(&m.id, i64::MAX as usize)?;
    if json {
        out::json(&reports)?;
        return Ok(0);
    }
    let mut out = format!("Mission {} ({}): {}\n", m.id, m.status, m.intent);
    if reports.is_empty() {
        out.push_str("\nNo reports filed yet.\n");
    }
    for r in &reports {
        out.push_str(&full_report(r));
    }
    out!("{out}")?;
    Ok(0)
}

/// One report in full, preceded by a blank line (`mission reports`, `inbox show`).
pub(super) fn full_report(r: &Report) -> String {
    let mut out = format!("\n[{}] {}\n", r.kind, clock::rfc3339(r.created_at));
    out.push_str(&format!("Summary: {}\n", r.summary));
    out.push_str(&report_body(r));
    out
}

/// Detail, refs and handover of a report.
pub(super) fn report_body(r: &Report) -> String {
    let mut out = String::new();
    if !r.detail.trim().is_empty() {
        out.push_str(&format!("Detail:\n{}\n", r.detail));
    }
    if !r.refs.is_empty() {
        out.push_str(&format!("Refs: {}\n", r.refs.join(", ")));
    }
    if let Some(h) = &r.handover {
        out.push_str("Handover:\n");
        if !h.outcome.is_empty() {
            out.push_str(&format!("  Outcome:  {}\n", h.outcome));
        }
        if !h.artifacts.is_empty() {
            out.push_str(&format!("  Artifacts: {}\n", h.artifacts.join(", ")));
        }
        if !h.handover_for_next.is_empty() {
            out.push_str(&format!("  For next: {}\n", h.handover_for_next));
        }
        if !h.caveats.is_empty() {
            out.push_str(&format!("  Caveats:  {}\n", h.caveats));
        }
    }
    out
}

pub(super) fn plan(ctx: &Ctx, id: &str, json: bool) -> anyhow::Result<i32> {
    let svc = missions(ctx)?;
    let m = svc.resolve(id)?;
    let plan = svc.plan(&m.id)?;
    let revisions = svc.plan_revisions(&m.id)?;
    if json {
        out::json(&serde_json::json!({"plan": plan, "revisions": revisions}))?;
        return Ok(0);
    }
    if plan.revision == 0 {
        outln!(
            "Mission {} has no plan yet (revision 0) — no resident planner has run for this mission.",
            m.id
        )?;
        return Ok(0);
    }
    let mut out = format!("Mission {} — plan revision {}\n", m.id, plan.revision);
    if !plan.explanation.is_empty() {
        out.push_str(&format!("Rationale: {}\n", plan.explanation));
    }
    out.push('\n');
    let mut rows = vec![row!["STATUS", "PRIORITY", "ENTRY"]];
    for e in &plan.entries {
        rows.push(row![e.status, e.priority, e.content]);
    }
    out.push_str(&crate::table::render(&rows));
    if !revisions.is_empty() {
        out.push_str("\nRevision history (oldest first):\n");
        for r in &revisions {
            out.push_str(&format!("  {}\n", r.history_line()));
        }
    }
    out!("{out}")?;
    Ok(0)
}

pub(super) fn stop(ctx: &Ctx, id: &str, reason: Option<&str>) -> anyhow::Result<i32> {
    let host = existing_host(ctx)?;
    let m = host.missions().resolve(id)?;
    let stopped = crate::ops::stop::stop_mission(&host, &m.id, reason)?;
    if m.status == crate::mission::Status::Queued && stopped.session_id.is_none() {
        outln!(
            "Mission {} abandoned before it started: it leaves the queue and no unit ever runs it.",
            m.id
        )?;
        return Ok(0);
    }
    outln!(
        "Mission {} abandoned. Pending asks are closed; any live unit is being reaped by its host process.",
        m.id
    )?;
    Ok(0)
}

pub(super) fn asks(ctx: &Ctx, id: Option<&str>, list: &ListArgs) -> anyhow::Result<i32> {
    let (questions, total) = match ctx.existing_store()? {
        Some(store) => pending_questions(Missions::new(store), id, list.rows())?,
        None if id.is_none() => (Vec::new(), 0),
        None => anyhow::bail!("{}", ctx.no_store()),
    };
    if list.json {
        out::json(&serde_json::json!({"asks": questions, "total": total}))?;
        return Ok(0);
    }
    if questions.is_empty() {
        outln!(
            "No pending attention asks. A mission's unit raises one when it needs a human's own words, not a yes/no — answer with 'missionboard approvals respond <id> --answer \"...\"'."
        )?;
        return Ok(0);
    }
    let mut rows = vec![row![
        "ID",
        "MISSION",
        "AGENT",
        "SUMMARY",
        "AGE",
        "EXPIRES-IN"
    ]];
    let mut details = String::new();
    let now = clock::now_ms();
    for a in &questions {
        rows.push(row![
            a.id,
            a.mission_id.as_deref().unwrap_or_default(),
            a.agent_name,
            a.args_summary,
            age(clock::age_secs(a.created_at)),
            super::approvals_cmd::expires_in(a, now)
        ]);
        if let Some(d) = a.diff.as_deref().filter(|d| !d.trim().is_empty()) {
            details.push_str(&format!("\nDetail for {}:\n{d}\n", a.id));
        }
    }
    out!("{}", crate::table::render(&rows))?;
    out!("{details}")?;
    outln!("\nAnswer with 'missionboard approvals respond <id> --answer \"...\"'.")?;
    if let Some(line) = super::more_line(questions.len(), total) {
        outln!("{line}")?;
    }
    Ok(0)
}

/// The newest `limit` pending questions of one mission (`id`) or of every open one,
/// each naming its mission's agent when it names none itself, and how many there
/// are in all.
fn pending_questions(
    svc: Missions,
    id: Option<&str>,
    limit: usize,
) -> anyhow::Result<(Vec<crate::asks::Ask>, i64)> {
    let asks = crate::asks::Asks::new(svc.store().clone());
    asks.sweep_expired()?;
    let scope = id.map(|id| svc.resolve(id)).transpose()?;
    let scope = scope.as_ref().map(|m| m.id.as_str());
    let mut questions = asks.pending_questions(scope, limit)?;
    for a in questions.iter_mut().filter(|a| a.agent_name.is_empty()) {
        if let Some(m) = svc.get(a.mission_id.as_deref().unwrap_or_default())? {
            a.agent_name = m.agent_name;
        }
    }
    Ok((questions, asks.pending_questions_count(scope)?))
}

/// How many lines of the last check output `mission show` prints (the record keeps
/// the whole tail: `--json`, `mission reports`).
const SHOWN_CHECK_LINES: usize = 12;

/// `Check:` and, after a try, its outcome and the tail of its output.
fn check_lines(c: &crate::mission::check::CheckRecord) -> Vec<String> {
    let mut lines = vec![format!(
        "Check:     {} — `{}` (timeout {})",
        c.state_words(),
        crate::text::one_line(&c.command),
        crate::duration::format(c.timeout)
    )];
    if let Some(outcome) = &c.last_outcome {
        let took = c
            .last_duration_ms
            .map(|ms| {
                format!(
                    " after {}",
                    crate::duration::format(Duration::from_millis(ms.max(0) as u64))
                )
            })
            .unwrap_or_default();
        lines.push(format!("           last try: {outcome}{took}"));
    }
    if let Some(output) = c.last_output.as_deref().filter(|o| !o.trim().is_empty()) {
        let all: Vec<&str> = output.trim_end().lines().collect();
        let shown = &all[all.len().saturating_sub(SHOWN_CHECK_LINES)..];
        if shown.len() < all.len() {
            lines.push(format!(
                "           … {} earlier lines (mission reports shows the whole tail)",
                all.len() - shown.len()
            ));
        }
        lines.extend(shown.iter().map(|l| format!("           | {l}")));
    }
    lines
}
