//! `missionboard inbox list|show|ack`.

use super::mission_cmd::{missions, report_body};
use super::out::{self, out, outln};
use super::{Ctx, InboxCmd};
use crate::clock;
use crate::duration::age;
use crate::row;

pub(super) fn run(ctx: &Ctx, cmd: InboxCmd) -> anyhow::Result<i32> {
    match cmd {
        InboxCmd::List(list) => {
            let all = list.all;
            let (items, total) = match ctx.existing_store()? {
                Some(store) => {
                    let svc = crate::mission::Missions::new(store);
                    let items = svc.inbox(all, list.rows())?;
                    (items, svc.inbox_count(all)?)
                }
                None => (Vec::new(), 0),
            };
            if list.json {
                out::json(&serde_json::json!({"items": items, "total": total}))?;
                return Ok(0);
            }
            if items.is_empty() {
                if all {
                    outln!(
                        "Operator inbox is empty. A mission's report lands here only when it had no live session to reach — 'missionboard mission fire' without a supervising session, or a session that ended before the report arrived."
                    )?;
                } else {
                    outln!(
                        "No unacknowledged inbox items. 'missionboard inbox list --all' also shows what was already read."
                    )?;
                }
                return Ok(0);
            }
            let mut rows = vec![row![
                "ID", "REASON", "MISSION", "KIND", "SUMMARY", "AGE", "ACKED"
            ]];
            for i in &items {
                rows.push(row![
                    i.id,
                    i.reason_label(),
                    i.mission_id,
                    i.report.kind,
                    i.report.summary,
                    age(clock::age_secs(i.created_at)),
                    if i.acked { "yes" } else { "no" }
                ]);
            }
            out!("{}", crate::table::render(&rows))?;
            outln!(
                "\nFull detail: missionboard inbox show <id>. Mark read: missionboard inbox ack <id>."
            )?;
            if let Some(line) = super::more_line(items.len(), total) {
                outln!("{line}")?;
            }
        }
        InboxCmd::Show { id, json } => {
            let i = missions(ctx)?.inbox_item(&id)?;
            if json {
                out::json(&i)?;
                return Ok(0);
            }
            let mut out = format!("Inbox item: {}\nMission:    {}\n", i.id, i.mission_id);
            if !i.agent_name.is_empty() {
                out.push_str(&format!("Agent:      {}\n", i.agent_name));
            }
            if !i.intent.is_empty() {
                out.push_str(&format!("Intent:     {}\n", i.intent));
            }
            out.push_str(&format!("Reason:     {}\n", i.reason_label()));
            if let Some(p) = &i.parent_session_id {
                out.push_str(&format!(
                    "Session:    {p} (gone by the time this report landed)\n"
                ));
            }
            out.push_str(&format!(
                "Acked:      {}\n",
                if i.acked { "yes" } else { "no" }
            ));
            out.push_str(&format!(
                "Landed:     {} ({} ago)\n",
                clock::rfc3339(i.created_at),
                age(clock::age_secs(i.created_at))
            ));
            out.push_str(&format!("\n[{}] {}\n", i.report.kind, i.report.summary));
            out.push_str(&report_body(&i.report));
            out.push_str(&format!(
                "\nFull mission record: missionboard mission show {}\n",
                i.mission_id
            ));
            out!("{out}")?;
        }
        InboxCmd::Ack { id } => {
            let host = ctx.host(missions(ctx)?.store())?;
            let i = crate::ops::inbox::ack(&host, &id)?;
            outln!("Inbox item {} acknowledged.", i.id)?;
        }
    }
    Ok(0)
}
