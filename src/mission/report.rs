//! Reports: what a unit (or the runtime on its behalf) tells the operator. A report
//! blocks nothing and is permanent; it carries references, never content.

use std::path::Path;

use crate::store::sql::{AtCommit, Params, params};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Mission, MissionError, Missions, Result, single_line, subjects};
use crate::clock;

pub(crate) const SCHEMA_V2: &str = "
CREATE TABLE reports (
    id          TEXT PRIMARY KEY NOT NULL,
    mission_id  TEXT NOT NULL REFERENCES missions (id),
    kind        TEXT NOT NULL,
    summary     TEXT NOT NULL,
    detail      TEXT,
    refs        TEXT,
    handover    TEXT,
    created_at  INTEGER NOT NULL
);
CREATE INDEX reports_by_mission ON reports (mission_id, created_at, id);";

/// The PostgreSQL spelling of this module's tables as of schema v11 (see
/// `crate::schema`); `rowid` is the insertion order SQLite keeps implicitly.
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE reports (
    id          TEXT PRIMARY KEY NOT NULL,
    rowid       BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    mission_id  TEXT NOT NULL REFERENCES missions (id),
    kind        TEXT NOT NULL,
    summary     TEXT NOT NULL,
    detail      TEXT,
    refs        TEXT,
    handover    TEXT,
    created_at  BIGINT NOT NULL
);
CREATE INDEX reports_by_mission ON reports (mission_id, created_at, id);";

/// Why a report is copied to the operator inbox: its mission was fired by the
/// operator, or the session that fired it has ended.
pub const OPERATOR_FIRED: &str = "operator_fired";
pub const PARENT_GONE: &str = "parent_gone";

pub const KINDS: [&str; 4] = ["progress", "finding", "blocker", "result"];

/// The kind of the report the host files for each try of a mission's check; only
/// the runtime files it (a unit's own report of this kind is refused).
pub const CHECK_KIND: &str = "check";

/// The kind of the report that records a revise (`mission revise`) in the mission's
/// history; only the runtime files it.
pub const REVISE_KIND: &str = "revise";

const HANDOVER_FIELD_MAX: usize = 8000;
const HANDOVER_ARTIFACTS_MAX: usize = 50;
const HANDOVER_ARTIFACT_MAX: usize = 2000;

/// A structured hand-off: what was achieved, where it is, what the next one needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Handover {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub handover_for_next: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub caveats: String,
}

impl Handover {
    fn normalized(mut self) -> Option<Handover> {
        self.outcome = self.outcome.trim().to_string();
        self.handover_for_next = self.handover_for_next.trim().to_string();
        self.caveats = self.caveats.trim().to_string();
        self.artifacts = self
            .artifacts
            .into_iter()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        let empty = self.outcome.is_empty()
            && self.handover_for_next.is_empty()
            && self.caveats.is_empty()
            && self.artifacts.is_empty();
        (!empty).then_some(self)
    }

    fn validate(&self) -> Result<()> {
        for (name, v) in [
            ("outcome", &self.outcome),
            ("handoverForNext", &self.handover_for_next),
            ("caveats", &self.caveats),
        ] {
            if v.len() > HANDOVER_FIELD_MAX {
                return Err(MissionError::Invalid(format!(
                    "handover {name} exceeds max length ({} bytes, max {HANDOVER_FIELD_MAX})",
                    v.len()
                )));
            }
            if looks_corrupted(v) {
                return Err(MissionError::Invalid(format!(
                    "handover {name} looks corrupted (stream or log paste); shorten it or move it to an artifact reference"
                )));
            }
        }
        if self.artifacts.len() > HANDOVER_ARTIFACTS_MAX {
            return Err(MissionError::Invalid(format!(
                "handover has too many artifacts ({}, max {HANDOVER_ARTIFACTS_MAX})",
                self.artifacts.len()
            )));
        }
        for (i, a) in self.artifacts.iter().enumerate() {
            if a.len() > HANDOVER_ARTIFACT_MAX {
                return Err(MissionError::Invalid(format!(
                    "handover artifact {} exceeds max length ({} bytes, max {HANDOVER_ARTIFACT_MAX})",
                    i + 1,
                    a.len()
                )));
            }
        }
        Ok(())
    }
}

/// A stream dump or log paste, not a sentence: framework stream markers, or a long
/// text that is mostly escapes.
pub(crate) fn looks_corrupted(s: &str) -> bool {
    s.to_lowercase().contains("__next_f")
        || (s.len() >= 400 && s.matches('\\').count() * 3 > s.len())
}

/// A stored report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub id: String,
    pub mission_id: String,
    pub kind: String,
    pub summary: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refs: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handover: Option<Handover>,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub created_at: i64,
}

impl Report {
    /// The verification-gate warning line, if this report was downgraded.
    pub fn downgrade_warning(&self) -> Option<&str> {
        self.detail
            .lines()
            .find(|l| l.starts_with("claimed artifacts not found"))
    }
}

/// What a caller files.
#[derive(Debug, Clone, Default)]
pub struct ReportInput {
    /// Blank means `progress`.
    pub kind: String,
    pub summary: String,
    pub detail: String,
    pub refs: Vec<String>,
    pub handover: Option<Handover>,
}

impl Missions {
    /// File a report on a mission (any status: the reclaim blocker lands on an
    /// abandoned one). Operator-fired missions also get an inbox item, written in the
    /// same transaction so the operator's copy can never be lost.
    pub fn add_report(&self, mission_id: &str, input: ReportInput) -> Result<Report> {
        self.file_report(&self.require(mission_id)?, input, false)
    }

    /// A report the unit itself filed through its mission tools: its mission's
    /// liveness is stamped in the same transaction.
    pub fn add_unit_report(&self, mission_id: &str, input: ReportInput) -> Result<Report> {
        self.file_report(&self.require(mission_id)?, input, true)
    }

    /// [`Missions::add_unit_report`] on the mission as its host holds it: the inbox
    /// copy needs only what never changes on the row, so it is not read again.
    pub fn add_unit_report_on(&self, mission: &Mission, input: ReportInput) -> Result<Report> {
        self.file_report(mission, input, true)
    }

    /// The report, its inbox copy, its announcement and (`live`) the liveness stamp,
    /// in one transaction whose statements need nothing from each other: pipelined
    /// where the backend can (one round trip on PostgreSQL).
    fn file_report(&self, mission: &Mission, input: ReportInput, live: bool) -> Result<Report> {
        let (report, mut batch) = self.report_to(mission)?.statements(input, live)?;
        if live {
            batch.push(super::heartbeat_statement(&mission.id));
        }
        self.store.write(|tx| tx.execute_at_commit(batch.clone()))?;
        Ok(report)
    }

    /// What filing a report on `mission_id` needs to know from the store, read now, so
    /// the report can be written in another module's transaction (an allowance and
    /// the report that names it commit together).
    pub fn report_to_mission(&self, mission_id: &str) -> Result<ReportTo> {
        self.report_to(&self.require(mission_id)?)
    }

    fn report_to(&self, mission: &Mission) -> Result<ReportTo> {
        // A report that reaches no live session waits in the inbox: every report of
        // an operator-fired mission, and a parented one's once its parent has ended
        // (a parent that ends after this look is covered by its deliverer).
        let inbox_reason = match &mission.parent_session_id {
            None => Some(OPERATOR_FIRED),
            Some(parent) if !self.parent_session_live(parent)? => Some(PARENT_GONE),
            Some(_) => None,
        };
        Ok(ReportTo {
            mission: mission.clone(),
            inbox_reason,
        })
    }
}

/// A mission a report is about to be filed on, with what its filing needs from the
/// store already read ([`Missions::report_to_mission`]).
pub struct ReportTo {
    mission: Mission,
    inbox_reason: Option<&'static str>,
}

impl ReportTo {
    /// The report and the statements that file it (the report, its inbox copy, its
    /// announcement), checked but not yet run; `live` allows only what a unit may file.
    pub fn statements(&self, input: ReportInput, live: bool) -> Result<(Report, Vec<AtCommit>)> {
        let mission = &self.mission;
        let kind = match input.kind.trim() {
            "" => "progress".to_string(),
            k if KINDS.contains(&k) => k.to_string(),
            CHECK_KIND if !live => CHECK_KIND.to_string(),
            REVISE_KIND if !live => REVISE_KIND.to_string(),
            k => {
                return Err(MissionError::Invalid(format!(
                    "invalid report kind {k:?}: must be one of progress|finding|blocker|result"
                )));
            }
        };
        single_line("summary", &input.summary)?;
        let handover = input.handover.and_then(Handover::normalized);
        if let Some(h) = &handover {
            h.validate()?;
        }
        let report = Report {
            id: uuid::Uuid::new_v4().to_string(),
            mission_id: mission.id.clone(),
            kind,
            summary: input.summary.trim().to_string(),
            detail: input.detail.trim_end().to_string(),
            refs: input
                .refs
                .into_iter()
                .map(|r| r.trim().to_string())
                .filter(|r| !r.is_empty())
                .collect(),
            handover,
            created_at: clock::now_ms(),
        };
        let refs = (!report.refs.is_empty()).then(|| serde_json::to_string(&report.refs).unwrap());
        let handover = report
            .handover
            .as_ref()
            .map(|h| serde_json::to_string(h).unwrap());
        let event = json!({
            "missionId": mission.id,
            "parentSessionId": mission.parent_session_id,
            "agentName": mission.agent_name,
            "intent": mission.intent,
            "report": report,
        });
        let mut batch = vec![(
            "INSERT INTO reports (id, mission_id, kind, summary, detail, refs, handover, created_at)
             VALUES (?1, ?2, ?3, ?4, NULLIF(?5, ''), ?6, ?7, ?8)",
            params![report.id, report.mission_id, report.kind, report.summary, report.detail, refs, handover, report.created_at].values(),
        )];
        if let Some(reason) = self.inbox_reason {
            batch.push(inbox_copy(mission, &report, reason));
        }
        batch.push(crate::bus::append(subjects::REPORT_ADDED, &event));
        Ok((report, batch))
    }
}

impl Missions {
    /// File a blocker report (the runtime's way of saying what stopped a mission).
    pub fn add_blocker(&self, mission_id: &str, summary: String, detail: String) -> Result<Report> {
        self.add_report(
            mission_id,
            ReportInput {
                kind: "blocker".into(),
                summary,
                detail,
                ..Default::default()
            },
        )
    }

    /// A mission's reports, oldest first, at most `limit` (the newest `limit`).
    pub fn reports(&self, mission_id: &str, limit: usize) -> Result<Vec<Report>> {
        let mut out: Vec<Report> = self.store.with(|c| {
            let mut s = c.prepare_cached(
                "SELECT id, mission_id, kind, summary, detail, refs, handover, created_at
                 FROM reports WHERE mission_id = ?1 ORDER BY created_at DESC, rowid DESC LIMIT ?2",
            )?;
            s.query_map(params![mission_id, limit as i64], report_from_row)?
                .collect()
        })?;
        out.reverse();
        Ok(out)
    }

    /// How many reports a mission has.
    /// How many reports were filed on `mission_id` at or after `since_ms`, the
    /// `revise` report that opened a run aside.
    pub fn report_count_since(&self, mission_id: &str, since_ms: i64) -> Result<i64> {
        Ok(self.store.with(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM reports WHERE mission_id = ?1 AND created_at >= ?2
                   AND kind <> 'revise'",
                params![mission_id, since_ms],
                |r| r.get(0),
            )
        })?)
    }

    pub fn report_count(&self, mission_id: &str) -> Result<i64> {
        Ok(self.store.with(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM reports WHERE mission_id = ?1",
                params![mission_id],
                |r| r.get(0),
            )
        })?)
    }
}

/// The inbox's copy of a report that reached no live session, written inside the
/// transaction that files the report (or, for [`PARENT_GONE`], the one that ends its
/// parent).
pub(crate) fn copy_to_inbox(
    tx: &crate::store::Conn<'_>,
    mission: &Mission,
    report: &Report,
    reason: &str,
) -> crate::store::sql::Result<()> {
    let (sql, values) = inbox_copy(mission, report, reason);
    tx.execute(sql, values.as_slice())?;
    Ok(())
}

/// The statement that copies `report` into the inbox (once: a second copy of the
/// same report is a no-op).
fn inbox_copy(
    mission: &Mission,
    report: &Report,
    reason: &str,
) -> (&'static str, Vec<crate::store::sql::Value>) {
    (
        "INSERT INTO inbox (id, mission_id, report_id, reason, agent_name, intent, parent_session_id, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
        params![
            uuid::Uuid::new_v4().to_string(),
            mission.id,
            report.id,
            reason,
            mission.agent_name,
            mission.intent,
            mission.parent_session_id,
            report.created_at
        ]
        .values(),
    )
}

fn report_from_row(r: &crate::store::sql::Row<'_>) -> crate::store::sql::Result<Report> {
    report_at(r, 0)
}

/// Read a report whose eight columns start at `at` (joined queries put it after their own).
pub(crate) fn report_at(
    r: &crate::store::sql::Row<'_>,
    at: usize,
) -> crate::store::sql::Result<Report> {
    let refs: Option<String> = r.get(at + 5)?;
    let handover: Option<String> = r.get(at + 6)?;
    Ok(Report {
        id: r.get(at)?,
        mission_id: r.get(at + 1)?,
        kind: r.get(at + 2)?,
        summary: r.get(at + 3)?,
        detail: r.get::<Option<String>>(at + 4)?.unwrap_or_default(),
        refs: refs
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default(),
        handover: handover.and_then(|s| serde_json::from_str(&s).ok()),
        created_at: r.get(at + 7)?,
    })
}

/// The verification gate for `result` reports: the claims (refs and handover
/// artifacts) that are not files inside the mission's working directory. A claim
/// is resolved against `workdir` with every symlink followed, so `..` traversal, an
/// absolute path elsewhere or a link that escapes fails closed, as do a NUL or
/// another control character, and any path claim when there is no workdir to
/// anchor it. URLs are not files: they are left to [`unverified_claims`].
pub fn missing_claims(refs: &[String], handover: Option<&Handover>, workdir: &str) -> Vec<String> {
    let root = Path::new(workdir)
        .canonicalize()
        .ok()
        .filter(|_| !workdir.is_empty());
    claims(refs, handover)
        .into_iter()
        .filter(|c| !is_url(c))
        .filter(|c| match &root {
            Some(root) if !c.chars().any(char::is_control) => !root
                .join(c)
                .canonicalize()
                .is_ok_and(|full| full.starts_with(root)),
            // Nothing to anchor it, or not a name a file can have: unverifiable.
            _ => true,
        })
        .map(str::to_string)
        .collect()
}

/// The claims the gate cannot check: URLs. They are labelled unverified.
pub fn unverified_claims(refs: &[String], handover: Option<&Handover>) -> Vec<String> {
    claims(refs, handover)
        .into_iter()
        .filter(|c| is_url(c))
        .map(str::to_string)
        .collect()
}

/// The paragraph appended to a result's detail when it names URLs.
pub fn unverified_paragraph(urls: &[String]) -> String {
    format!(
        "unverified: {} — a URL is not checked; only files inside the mission's working directory are.",
        quoted_list(urls)
    )
}

/// Refs and handover artifacts, trimmed, blanks and repeats dropped.
fn claims<'a>(refs: &'a [String], handover: Option<&'a Handover>) -> Vec<&'a str> {
    let mut claims: Vec<&str> = Vec::new();
    for c in refs
        .iter()
        .chain(handover.into_iter().flat_map(|h| h.artifacts.iter()))
    {
        let c = c.trim();
        if !c.is_empty() && !claims.contains(&c) {
            claims.push(c);
        }
    }
    claims
}

fn is_url(claim: &str) -> bool {
    claim.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// `"a", "b"` — the quoted list the gate's messages use.
pub fn quoted_list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The paragraph appended to a downgraded result's detail.
pub fn downgrade_paragraph(missing: &[String]) -> String {
    format!(
        "claimed artifacts not found: {} — the unit's result named artifacts that do not exist at their claimed paths. This report was downgraded from result to progress; nothing else was changed and every claimed ref is preserved above. If the work is genuinely done, file a new result naming the artifacts' real locations.",
        quoted_list(missing)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mission::tests::{fire, report_input, service};

    #[test]
    fn reports_validate_default_and_list_oldest_first() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let r = svc.add_report(&m.id, report_input("", "started")).unwrap();
        assert_eq!(r.kind, "progress");
        let err = svc
            .add_report(&m.id, report_input("note", "x"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid report kind \"note\": must be one of progress|finding|blocker|result"
        );
        assert_eq!(
            svc.add_report(&m.id, ReportInput::default())
                .unwrap_err()
                .to_string(),
            "summary is required"
        );
        svc.add_report(
            &m.id,
            ReportInput {
                kind: "result".into(),
                summary: "done".into(),
                handover: Some(Handover {
                    outcome: "  ".into(),
                    artifacts: vec![" ".into()],
                    ..Default::default()
                }),
                ..Default::default()
            },
        )
        .unwrap();
        let all = svc.reports(&m.id, 100).unwrap();
        assert_eq!(
            all.iter().map(|r| r.summary.as_str()).collect::<Vec<_>>(),
            ["started", "done"]
        );
        assert_eq!(
            all[1].handover, None,
            "an all-blank handover is stored as absent"
        );
    }

    #[test]
    fn handover_limits_hold() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let big = ReportInput {
            summary: "x".into(),
            handover: Some(Handover {
                caveats: "a".repeat(8001),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            svc.add_report(&m.id, big).unwrap_err().to_string(),
            "handover caveats exceeds max length (8001 bytes, max 8000)"
        );
        let many = ReportInput {
            summary: "x".into(),
            handover: Some(Handover {
                artifacts: (0..51).map(|i| format!("a{i}")).collect(),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            svc.add_report(&m.id, many).unwrap_err().to_string(),
            "handover has too many artifacts (51, max 50)"
        );
    }

    #[test]
    fn the_gate_passes_only_files_inside_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let wd = dir.path().join("wd");
        std::fs::create_dir_all(wd.join("notes")).unwrap();
        std::fs::write(wd.join("real.md"), "x").unwrap();
        std::fs::write(wd.join("notes/n.md"), "x").unwrap();
        std::fs::write(dir.path().join("outside.md"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.md"), wd.join("escape.md")).unwrap();
        std::os::unix::fs::symlink(wd.join("real.md"), wd.join("inside-link.md")).unwrap();
        let outside = dir.path().join("outside.md").display().to_string();
        let inside_abs = wd.join("real.md").display().to_string();
        let refs: Vec<String> = [
            "real.md",
            "notes/n.md",
            "./notes/../real.md",
            inside_abs.as_str(),
            "inside-link.md",
            "https://example.com/x",
            "notes/missing.md",
            "../outside.md",
            outside.as_str(),
            "escape.md",
            "real.md\0.txt",
            "some prose here",
        ]
        .map(String::from)
        .to_vec();
        let wd = wd.to_str().unwrap();
        assert_eq!(
            missing_claims(&refs, None, wd),
            [
                "notes/missing.md",
                "../outside.md",
                outside.as_str(),
                "escape.md",
                "real.md\0.txt",
                "some prose here"
            ]
        );
        assert_eq!(unverified_claims(&refs, None), ["https://example.com/x"]);
        // No working directory to anchor a claim: every path fails closed.
        assert_eq!(missing_claims(&refs, None, "").len(), refs.len() - 1);
    }
}
