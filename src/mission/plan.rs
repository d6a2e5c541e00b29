//! The living plan: every write is a full snapshot. Ids are assigned once and echoed
//! back; completed work is immutable; the last 20 revisions are kept, written in the
//! same transaction as the snapshot they describe.

use std::collections::HashSet;

use crate::store::sql::{OptionalExtension, params};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::report::looks_corrupted;
use super::{MissionError, Missions, Result, subjects};
use crate::clock;

pub(crate) const SCHEMA_V2: &str = "
CREATE TABLE plan_revisions (
    mission_id  TEXT NOT NULL REFERENCES missions (id),
    revision    INTEGER NOT NULL,
    explanation TEXT,
    entries     TEXT NOT NULL,
    added       INTEGER NOT NULL,
    removed     INTEGER NOT NULL,
    pending     INTEGER NOT NULL,
    in_progress INTEGER NOT NULL,
    completed   INTEGER NOT NULL,
    source      TEXT NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (mission_id, revision)
);";

/// The PostgreSQL spelling of this module's tables as of schema v11 (see `crate::schema`).
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE plan_revisions (
    mission_id  TEXT NOT NULL REFERENCES missions (id),
    revision    BIGINT NOT NULL,
    explanation TEXT,
    entries     TEXT NOT NULL,
    added       BIGINT NOT NULL,
    removed     BIGINT NOT NULL,
    pending     BIGINT NOT NULL,
    in_progress BIGINT NOT NULL,
    completed   BIGINT NOT NULL,
    source      TEXT NOT NULL,
    at          BIGINT NOT NULL,
    PRIMARY KEY (mission_id, revision)
);";

const RING: i64 = 20;
const MAX_ENTRIES: usize = 100;
const MAX_CONTENT: usize = 12_000;
pub const STATUSES: [&str; 3] = ["pending", "in_progress", "completed"];
pub const PRIORITIES: [&str; 3] = ["high", "medium", "low"];

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanEntry {
    #[serde(default)]
    pub id: String,
    pub content: String,
    pub status: String,
    pub priority: String,
}

/// The current snapshot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub entries: Vec<PlanEntry>,
    pub revision: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub explanation: String,
}

/// One stored revision's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanRevision {
    pub revision: i64,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub explanation: String,
    pub added: i64,
    pub removed: i64,
    pub pending: i64,
    pub in_progress: i64,
    pub completed: i64,
    /// `tool` (mission_plan) or `acp` (the agent's native plan updates).
    pub source: String,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub at: i64,
}

/// `P pending, I in progress, C completed`: how every surface counts a plan.
pub fn counts_line(pending: i64, in_progress: i64, completed: i64) -> String {
    format!("{pending} pending, {in_progress} in progress, {completed} completed")
}

impl PlanRevision {
    fn counts_line(&self) -> String {
        counts_line(self.pending, self.in_progress, self.completed)
    }

    /// `rev 1: +3/-0 (1 pending, 1 in progress, 1 completed) — why`
    pub fn history_line(&self) -> String {
        let mut l = format!(
            "rev {}: +{}/-{} ({})",
            self.revision,
            self.added,
            self.removed,
            self.counts_line()
        );
        if !self.explanation.is_empty() {
            l.push_str(&format!(" — {}", self.explanation));
        }
        l
    }

    /// `revision N (P pending, I in progress, C completed)`
    pub fn show_line(&self) -> String {
        format!("revision {} ({})", self.revision, self.counts_line())
    }
}

fn validate(entries: &[PlanEntry]) -> Result<()> {
    let invalid = |m: String| Err(MissionError::Invalid(m));
    if entries.is_empty() {
        return invalid("a plan must have at least one entry".into());
    }
    if entries.len() > MAX_ENTRIES {
        return invalid(format!(
            "plan has too many entries ({}, max {MAX_ENTRIES})",
            entries.len()
        ));
    }
    for (i, e) in entries.iter().enumerate() {
        let n = i + 1;
        if e.content.is_empty() {
            return invalid(format!("plan entry {n} has empty content"));
        }
        if e.content.len() > MAX_CONTENT {
            return invalid(format!(
                "plan entry {n} exceeds max length ({} bytes, max {MAX_CONTENT})",
                e.content.len()
            ));
        }
        if looks_corrupted(&e.content) {
            return invalid(format!(
                "plan entry {n} looks corrupted (stream or log paste); revise the plan or shorten the step"
            ));
        }
        if !STATUSES.contains(&e.status.as_str()) {
            return invalid(format!(
                "plan entry {n}: invalid plan entry status {:?}: must be one of pending|in_progress|completed",
                e.status
            ));
        }
        if !PRIORITIES.contains(&e.priority.as_str()) {
            return invalid(format!(
                "plan entry {n}: invalid plan entry priority {:?}: must be one of high|medium|low",
                e.priority
            ));
        }
    }
    Ok(())
}

/// The id of an entry filed without one, drawn from its content: a plan sent again
/// without ids keeps the ids of the steps it repeats, and a unit reads the same ids
/// for the same plan (a random one made each run of a small model read differently).
/// A step already in the plan under that id gets `-2`, `-3`…
fn minted_id(content: &str, taken: &mut HashSet<String>) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(content.as_bytes());
    let stem: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let id = (1..)
        .map(|n| match n {
            1 => stem.clone(),
            n => format!("{stem}-{n}"),
        })
        .find(|id| !taken.contains(id))
        .expect("an unused id");
    taken.insert(id.clone());
    id
}

impl Missions {
    /// Replace the plan with a full snapshot. Returns the stored plan, ids included.
    pub fn set_plan(
        &self,
        mission_id: &str,
        entries: Vec<PlanEntry>,
        explanation: &str,
        source: &str,
    ) -> Result<Plan> {
        // Normalise once: ids minted here are the ones the unit sees, whatever happens next.
        let mut taken: HashSet<String> = entries.iter().map(|e| e.id.trim().to_string()).collect();
        let entries: Vec<PlanEntry> = entries
            .into_iter()
            .map(|mut e| {
                e.content = e.content.trim().to_string();
                e.status = e.status.trim().to_string();
                e.priority = e.priority.trim().to_string();
                e.id = match e.id.trim() {
                    "" => minted_id(&e.content, &mut taken),
                    id => id.to_string(),
                };
                e
            })
            .collect();
        validate(&entries)?;
        let explanation = explanation.trim().to_string();
        let mission = self.require(mission_id)?;
        let at = clock::now_ms();
        let outcome = self.store.write(|tx| {
            let current: i64 = tx.query_row(
                "SELECT plan_revision FROM missions WHERE id = ?1",
                params![mission_id],
                |r| r.get(0),
            )?;
            let previous = current_entries(tx, mission_id, current)?;
            if let Some(e) = entries.iter().find(|e| {
                previous
                    .iter()
                    .any(|p| p.id == e.id && p.status == "completed" && p.content != e.content)
            }) {
                return Ok(Err(e.id.clone()));
            }
            let count = |s: &str| entries.iter().filter(|e| e.status == s).count() as i64;
            let added = entries
                .iter()
                .filter(|e| !previous.iter().any(|p| p.id == e.id))
                .count() as i64;
            let removed = previous
                .iter()
                .filter(|p| !entries.iter().any(|e| e.id == p.id))
                .count() as i64;
            let rev = PlanRevision {
                revision: current + 1,
                explanation: explanation.clone(),
                added,
                removed,
                pending: count("pending"),
                in_progress: count("in_progress"),
                completed: count("completed"),
                source: source.to_string(),
                at,
            };
            tx.execute(
                "INSERT INTO plan_revisions (mission_id, revision, explanation, entries, added, removed, pending, in_progress, completed, source, at)
                 VALUES (?1, ?2, NULLIF(?3, ''), ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![mission_id, rev.revision, rev.explanation, serde_json::to_string(&entries).unwrap(), rev.added, rev.removed, rev.pending, rev.in_progress, rev.completed, rev.source, rev.at],
            )?;
            // Guarded on the revision read above; status is deliberately untouched.
            tx.execute(
                "UPDATE missions SET plan_revision = ?2, updated_at = ?3 WHERE id = ?1 AND plan_revision = ?4",
                params![mission_id, rev.revision, at, current],
            )?;
            tx.execute(
                "DELETE FROM plan_revisions WHERE mission_id = ?1 AND revision <= ?2",
                params![mission_id, rev.revision - RING],
            )?;
            Ok(Ok(rev))
        })?;
        let rev = outcome.map_err(|id| {
            MissionError::Invalid(format!(
                "plan entry {id:?} rewrites the content of already-completed work; append a correction as a new entry instead"
            ))
        })?;
        self.publish(
            subjects::PLAN_REVISED,
            json!({
                "missionId": mission.id,
                "agentName": mission.agent_name,
                "intent": mission.intent,
                "revision": rev.revision,
                "explanation": rev.explanation,
                "entryCount": entries.len(),
                "added": rev.added,
                "removed": rev.removed,
                "pending": rev.pending,
                "inProgress": rev.in_progress,
                "completed": rev.completed,
            }),
        );
        Ok(Plan {
            entries,
            revision: rev.revision,
            explanation,
        })
    }

    /// The current plan (revision 0 and no entries when none was filed).
    pub fn plan(&self, mission_id: &str) -> Result<Plan> {
        let m = self.require(mission_id)?;
        Ok(self.store.with(|c| {
            let row: Option<(String, Option<String>)> = c
                .query_row(
                    "SELECT entries, explanation FROM plan_revisions WHERE mission_id = ?1 AND revision = ?2",
                    params![mission_id, m.plan_revision],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            Ok(match row {
                Some((entries, explanation)) => Plan {
                    entries: serde_json::from_str(&entries).unwrap_or_default(),
                    revision: m.plan_revision,
                    explanation: explanation.unwrap_or_default(),
                },
                None => Plan {
                    entries: vec![],
                    revision: 0,
                    explanation: String::new(),
                },
            })
        })?)
    }

    /// The kept revisions, oldest first.
    pub fn plan_revisions(&self, mission_id: &str) -> Result<Vec<PlanRevision>> {
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(
                "SELECT revision, explanation, added, removed, pending, in_progress, completed, source, at
                 FROM plan_revisions WHERE mission_id = ?1 ORDER BY revision",
            )?;
            s.query_map(params![mission_id], |r| {
                Ok(PlanRevision {
                    revision: r.get(0)?,
                    explanation: r.get::<Option<String>>(1)?.unwrap_or_default(),
                    added: r.get(2)?,
                    removed: r.get(3)?,
                    pending: r.get(4)?,
                    in_progress: r.get(5)?,
                    completed: r.get(6)?,
                    source: r.get(7)?,
                    at: r.get(8)?,
                })
            })?
            .collect()
        })?)
    }
}

fn current_entries(
    tx: &crate::store::Conn<'_>,
    mission_id: &str,
    revision: i64,
) -> crate::store::sql::Result<Vec<PlanEntry>> {
    let json: Option<String> = tx
        .query_row(
            "SELECT entries FROM plan_revisions WHERE mission_id = ?1 AND revision = ?2",
            params![mission_id, revision],
            |r| r.get(0),
        )
        .optional()?;
    Ok(json
        .and_then(|j| serde_json::from_str(&j).ok())
        .unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mission::Status;
    use crate::mission::tests::{fire, service};

    fn entry(content: &str, status: &str) -> PlanEntry {
        PlanEntry {
            id: String::new(),
            content: content.into(),
            status: status.into(),
            priority: "high".into(),
        }
    }

    #[test]
    fn snapshots_assign_ids_once_and_count_the_delta() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let p1 = svc
            .set_plan(
                &m.id,
                vec![
                    entry("survey", "in_progress"),
                    entry("cut", "pending"),
                    entry("ship", "pending"),
                ],
                "first pass",
                "tool",
            )
            .unwrap();
        assert_eq!(p1.revision, 1);
        assert!(p1.entries.iter().all(|e| !e.id.is_empty()));
        let mut next = p1.entries.clone();
        next[0].status = "completed".into();
        next.remove(2);
        let p2 = svc.set_plan(&m.id, next, "", "tool").unwrap();
        assert_eq!(p2.entries[0].id, p1.entries[0].id);
        let revs = svc.plan_revisions(&m.id).unwrap();
        assert_eq!(
            revs[0].history_line(),
            "rev 1: +3/-0 (2 pending, 1 in progress, 0 completed) — first pass"
        );
        assert_eq!(
            revs[1].history_line(),
            "rev 2: +0/-1 (1 pending, 0 in progress, 1 completed)"
        );
        assert_eq!(svc.plan(&m.id).unwrap(), p2);
    }

    #[test]
    fn a_plan_sent_again_without_ids_keeps_the_ids_of_its_steps() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let steps = || {
            vec![
                entry("survey", "in_progress"),
                entry("cut", "pending"),
                entry("cut", "pending"),
            ]
        };
        let p1 = svc.set_plan(&m.id, steps(), "", "tool").unwrap();
        let ids: Vec<&str> = p1.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids[2], format!("{}-2", ids[1]));
        assert_ne!(ids[0], ids[1]);
        let mut again = steps();
        again[0].status = "completed".into();
        let p2 = svc.set_plan(&m.id, again, "", "tool").unwrap();
        let ids2: Vec<&str> = p2.entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids2, ids);
        assert_eq!(
            svc.plan_revisions(&m.id).unwrap()[1].history_line(),
            "rev 2: +0/-0 (2 pending, 0 in progress, 1 completed)"
        );
    }

    #[test]
    fn completed_work_is_immutable() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let p = svc
            .set_plan(&m.id, vec![entry("survey", "completed")], "", "tool")
            .unwrap();
        let mut rewrite = p.entries.clone();
        rewrite[0].content = "something else".into();
        let err = svc.set_plan(&m.id, rewrite, "", "tool").unwrap_err();
        assert!(
            err.to_string()
                .ends_with("rewrites the content of already-completed work; append a correction as a new entry instead"),
            "{err}"
        );
        // Dropping it or reopening it is allowed.
        svc.set_plan(&m.id, vec![entry("new", "pending")], "", "tool")
            .unwrap();
    }

    #[test]
    fn the_ring_keeps_twenty_and_a_plan_never_moves_status() {
        let (_d, svc) = service();
        let m = fire(&svc);
        svc.finish(&m.id, Status::Abandoned, "stop").unwrap();
        for i in 0..25 {
            svc.set_plan(
                &m.id,
                vec![entry(&format!("step {i}"), "pending")],
                "",
                "tool",
            )
            .unwrap();
        }
        let revs = svc.plan_revisions(&m.id).unwrap();
        assert_eq!(revs.len(), 20);
        assert_eq!(revs[0].revision, 6);
        assert_eq!(svc.require(&m.id).unwrap().status, Status::Abandoned);
    }

    #[test]
    fn shape_errors_are_exact() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let cases = [
            (vec![], "a plan must have at least one entry"),
            (
                vec![entry(" ", "pending")],
                "plan entry 1 has empty content",
            ),
            (
                vec![entry("x", "done")],
                "plan entry 1: invalid plan entry status \"done\": must be one of pending|in_progress|completed",
            ),
        ];
        for (entries, want) in cases {
            assert_eq!(
                svc.set_plan(&m.id, entries, "", "tool")
                    .unwrap_err()
                    .to_string(),
                want
            );
        }
    }
}
