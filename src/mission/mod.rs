//! Missions: the durable record of one intent fired at one agent under one envelope,
//! with its reports, its living plan and the operator inbox.
//!
//! Every state change is a guarded write: the terminal transition is an
//! `UPDATE … WHERE status = 'open'`, so a finish racing a stop (or a sweep) ends in
//! exactly one outcome, and nothing — a heartbeat, a plan write, a bind — can move a
//! mission that is at rest. Writes are durable before their bus event is published.

pub mod check;
pub mod compute;
pub mod ddl;
pub mod hosts;
pub mod id_prefix;
pub mod inbox;
pub mod listing;
pub mod parent;
pub mod plan;
pub mod queue;
pub mod report;
pub mod revise;
pub mod roots;
pub(crate) mod spend_rollup;

use std::fmt;

use crate::store::sql::{OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::json;

use crate::bus::Bus;
use crate::clock;
use crate::host::HostId;
use crate::store::{Store, StoreError};

pub use listing::{Listing, Order};
pub use plan::{Plan, PlanEntry, PlanRevision};
pub use report::{Handover, Report, ReportInput, ReportTo};

/// Bus subjects for mission events (payloads are self-contained JSON).
pub mod subjects {
    pub const REPORT_ADDED: &str = "mission.report_added";
    pub const PLAN_REVISED: &str = "mission.plan_revised";
    pub const STATUS_CHANGED: &str = "mission.status_changed";
    pub const ATTENTION_ASKED: &str = "mission.attention_asked";
    /// A rested mission was sent back (`mission revise`). Not a status change: a
    /// host reaps units on those, and the revised run's unit must live.
    pub const REVISED: &str = "mission.revised";
}

/// A mission's state. `Queued` while it waits for a host to claim it, `Open` while
/// it runs; the other four are terminal: nothing moves them but a revise (`mission
/// revise`, one guarded write from landed, stuck or derailed back to open or queued,
/// as a new run on the same record), and `abandoned` is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Queued,
    Open,
    Landed,
    Derailed,
    Stuck,
    Abandoned,
}

impl Status {
    pub const ALL: [Status; 6] = [
        Status::Queued,
        Status::Open,
        Status::Landed,
        Status::Derailed,
        Status::Stuck,
        Status::Abandoned,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Queued => "queued",
            Status::Open => "open",
            Status::Landed => "landed",
            Status::Derailed => "derailed",
            Status::Stuck => "stuck",
            Status::Abandoned => "abandoned",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        !matches!(self, Status::Queued | Status::Open)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The durable mission record.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Mission {
    pub id: String,
    pub intent: String,
    pub agent_name: String,
    /// The envelope name exactly as given at fire time (`hitlPolicyName` on the
    /// wire and in `--json`, `policy_name` in the table).
    #[serde(rename = "hitlPolicyName")]
    pub envelope_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    pub status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// How many plan snapshots were stored (0 = no plan yet).
    pub plan_revision: i64,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "clock::ser_opt_rfc3339"
    )]
    pub last_heartbeat: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub created_at: i64,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub updated_at: i64,
    /// The process that created (or last resumed) it, and its machine; `None` for a
    /// record older than the column.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<HostId>,
}

/// What a dispatcher supplies to create a mission: its intent and envelope name
/// as checked when they were built, so the row is written without a second look.
#[derive(Debug, Clone)]
pub struct NewMission {
    /// Minted by the dispatcher before the unit exists (the unit is told it at
    /// session start); empty: minted by [`Missions::create`].
    pub id: String,
    pub intent: Intent,
    pub agent_name: String,
    pub envelope_name: EnvelopeName,
    pub cwd: String,
    pub parent_session_id: Option<String>,
    pub session_id: Option<String>,
    pub instance_id: Option<String>,
}

impl NewMission {
    /// A mission of `agent_name` fired at `intent` under `envelope_name`, its id
    /// minted at create, with no working directory, session or parent.
    pub fn new(agent_name: &str, intent: Intent, envelope_name: EnvelopeName) -> NewMission {
        NewMission {
            id: String::new(),
            intent,
            agent_name: agent_name.to_string(),
            envelope_name,
            cwd: String::new(),
            parent_session_id: None,
            session_id: None,
            instance_id: None,
        }
    }
}

/// Mission ids, as typed by an operator.
const MISSION_IDS: id_prefix::IdKind = id_prefix::IdKind {
    noun: "mission",
    table: "missions",
    list_command: "missionboard mission list",
};

/// Mission failures, worded for the operator.
#[derive(Debug)]
pub enum MissionError {
    NotFound(String),
    /// A guarded write lost: the record moved under us (exact text inside).
    Conflict(String),
    Invalid(String),
    Store(StoreError),
}

impl fmt::Display for MissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MissionError::NotFound(id) => write!(
                f,
                "mission {id:?} not found — see 'missionboard mission list' for recorded missions"
            ),
            MissionError::Conflict(m) => write!(f, "conflict: {m}"),
            MissionError::Invalid(m) => f.write_str(m),
            MissionError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for MissionError {}

impl From<StoreError> for MissionError {
    fn from(e: StoreError) -> Self {
        MissionError::Store(e)
    }
}

pub type Result<T> = std::result::Result<T, MissionError>;

/// What `finish` did.
#[derive(Debug, Clone)]
pub struct Finished {
    pub mission: Mission,
    /// False when the mission already rested in the requested status (a no-op).
    pub changed: bool,
}

/// The mission service: records, reports, plans and the inbox over one store.
#[derive(Clone)]
pub struct Missions {
    store: Store,
    bus: Bus,
}

const COLUMNS: &str = "id, intent, agent_name, policy_name, cwd, session_id, instance_id, parent_session_id, status, status_reason, plan_revision, last_heartbeat, last_error, created_at, updated_at, host_pid, host_start, host_id, host_machine";

/// How many missions hold `status`, from the counts the v11 triggers keep exact.
fn status_count(c: &crate::store::Conn<'_>, status: Status) -> crate::store::sql::Result<i64> {
    c.prepare_cached("SELECT COALESCE((SELECT n FROM mission_status_counts WHERE status = ?1), 0)")?
        .query_row(params![status.as_str()], |r| r.get(0))
}

fn from_row(r: &Row<'_>) -> crate::store::sql::Result<Mission> {
    let status: String = r.get(8)?;
    Ok(Mission {
        id: r.get(0)?,
        intent: r.get(1)?,
        agent_name: r.get(2)?,
        envelope_name: r.get(3)?,
        cwd: r.get(4)?,
        session_id: r.get(5)?,
        instance_id: r.get(6)?,
        parent_session_id: r.get(7)?,
        status: Status::parse(&status).unwrap_or(Status::Open),
        status_reason: r.get(9)?,
        plan_revision: r.get(10)?,
        last_heartbeat: r.get(11)?,
        last_error: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
        host: host_at(r, 15)?,
    })
}

/// The host recorded in the `host_pid, host_start, host_id, host_machine` columns
/// starting at `at`.
fn host_at(r: &Row<'_>, at: usize) -> crate::store::sql::Result<Option<HostId>> {
    Ok(
        match (r.get::<Option<u32>>(at)?, r.get::<Option<String>>(at + 1)?) {
            (Some(pid), Some(start)) => Some(HostId {
                id: r.get::<Option<String>>(at + 2)?.unwrap_or_default(),
                machine: r.get::<Option<String>>(at + 3)?.unwrap_or_default(),
                pid,
                start,
            }),
            _ => None,
        },
    )
}

/// What a mission is fired to do: one non-blank line, trimmed. Built once where a
/// surface takes the operator's (or a session's) words, so nothing downstream
/// re-checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intent(String);

impl Intent {
    /// Refuse a blank intent and one that spans lines (the board and every table
    /// show an intent whole, on one line).
    pub fn new(raw: &str) -> Result<Intent> {
        let intent = trimmed_required(raw, "missing parameter: intent: intent is required")?;
        single_line("intent", intent)?;
        Ok(Intent(intent.to_string()))
    }
}

/// The envelope a mission is fired under, by the name the operator gave it:
/// non-blank, trimmed. Whether a file answers to it is the envelope search's to
/// say when it is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvelopeName(String);

impl EnvelopeName {
    /// Refuse a blank name: a mission must name the envelope that bounds it.
    pub fn new(raw: &str) -> Result<EnvelopeName> {
        let name = trimmed_required(
            raw,
            "no mission envelope named: a mission must name the envelope that bounds it (`--policy <envelope>`, or set `default-mission-policy`)",
        )?;
        Ok(EnvelopeName(name.to_string()))
    }
}

/// `raw` trimmed; refused with `missing` when nothing is left.
fn trimmed_required<'a>(raw: &'a str, missing: &str) -> Result<&'a str> {
    let value = raw.trim();
    if value.is_empty() {
        return Err(MissionError::Invalid(missing.into()));
    }
    Ok(value)
}

/// A checked string reads as the words it holds: `as_str` and `Display`.
macro_rules! reads_as_its_words {
    ($($name:ident),*) => {$(
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    )*};
}
reads_as_its_words!(Intent, EnvelopeName);

/// Intents and summaries are one line: the board and every table show them whole.
pub(crate) fn single_line(field: &str, value: &str) -> Result<()> {
    if value.trim().is_empty() {
        return Err(MissionError::Invalid(format!("{field} is required")));
    }
    if value.contains(['\n', '\r']) {
        return Err(MissionError::Invalid(format!(
            "{field} must be a single line"
        )));
    }
    Ok(())
}

/// What a mission's move from `from` (open, or queued) to its (stored) terminal
/// status announces.
fn status_event(m: &Mission, from: Status) -> serde_json::Value {
    // A mission that never left the queue never had a unit instance.
    let instance_id = (from != Status::Queued).then_some(&m.instance_id);
    json!({
        "missionId": m.id,
        "agentName": m.agent_name,
        "intent": m.intent,
        "oldStatus": from.as_str(),
        "newStatus": m.status.as_str(),
        "reason": m.status_reason.clone().unwrap_or_default(),
        "instanceId": instance_id,
    })
}

/// The liveness stamp of mission `id`: a no-op on a mission at rest, so liveness
/// never revives one (a writer that stamps it inside its own transaction runs it).
pub(crate) fn heartbeat_statement(id: &str) -> (&'static str, Vec<crate::store::sql::Value>) {
    use crate::store::sql::Params;
    (
        "UPDATE missions SET last_heartbeat = ?2, last_error = NULL, updated_at = ?2
         WHERE id = ?1 AND status = 'open'",
        params![id, clock::now_ms()].values(),
    )
}

impl Missions {
    pub fn new(store: Store) -> Self {
        Missions {
            bus: Bus::new(store.clone()),
            store,
        }
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// Create a mission, always `open`.
    pub fn create(&self, m: NewMission) -> Result<Mission> {
        self.create_with(m, Vec::new())
    }

    /// [`Missions::create`], with statements of other records that are born with the
    /// mission (its unit's compute record) written in its transaction, ahead of it.
    pub fn create_with(
        &self,
        m: NewMission,
        also: Vec<(&'static str, Vec<crate::store::sql::Value>)>,
    ) -> Result<Mission> {
        let id = if m.id.is_empty() {
            uuid::Uuid::new_v4().to_string()
        } else {
            m.id
        };
        let now = clock::now_ms();
        // The creating process hosts the unit (every caller starts it in-process).
        let me = HostId::current();
        Ok(self.store.write(|c| {
            c.execute_at_commit(also.clone())?;
            c.query_map_and_commit(
                &format!("INSERT INTO missions (id, intent, agent_name, policy_name, cwd, session_id, instance_id, parent_session_id, status, created_at, updated_at, host_pid, host_start, host_id, host_machine)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'open', ?9, ?9, ?10, ?11, ?12, ?13) RETURNING {COLUMNS}"),
                params![id, m.intent.as_str(), m.agent_name, m.envelope_name.as_str(), m.cwd, m.session_id, m.instance_id, m.parent_session_id, now, me.pid, me.start, me.id, me.machine],
                from_row,
            )?
            .into_iter()
            .next()
            .ok_or(crate::store::sql::Error::NoRows)
        })?)
    }

    /// A mission by exact id.
    pub fn get(&self, id: &str) -> Result<Option<Mission>> {
        Ok(self.store.with(|c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM missions WHERE id = ?1"),
                params![id],
                from_row,
            )
            .optional()
        })?)
    }

    /// A mission by exact id, or not-found.
    pub fn require(&self, id: &str) -> Result<Mission> {
        self.get(id)?
            .ok_or_else(|| MissionError::NotFound(id.to_string()))
    }

    /// A mission by id or by an unambiguous prefix ([`id_prefix`]), so an operator
    /// can type what the board shows.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<Mission> {
        match id_prefix::resolve(&self.store, &MISSION_IDS, id_or_prefix)? {
            id_prefix::Resolved::Id(id) => self.require(&id),
            id_prefix::Resolved::NotFound => {
                Err(MissionError::NotFound(id_or_prefix.trim().to_string()))
            }
            id_prefix::Resolved::Refused(why) => Err(MissionError::Invalid(why)),
        }
    }

    /// Open missions silent since before `cutoff_ms` (no heartbeat, nor creation, after
    /// it), oldest activity first.
    pub fn silent_since(&self, cutoff_ms: i64, limit: usize) -> Result<Vec<Mission>> {
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM missions
                 WHERE status = 'open' AND MAX(created_at, COALESCE(last_heartbeat, 0)) < ?1
                 ORDER BY MAX(created_at, COALESCE(last_heartbeat, 0)) LIMIT ?2"
            ))?;
            s.query_map(params![cutoff_ms, limit as i64], from_row)?
                .collect()
        })?)
    }

    /// Abandon a mission whose host is gone — only if it is still open and nothing
    /// stamped it since `last_seen_ms` (a live write that lands first wins).
    pub fn reclaim(&self, id: &str, last_seen_ms: i64, reason: &str) -> Result<bool> {
        let changed = self.store.with(|c| {
            c.execute(
                "UPDATE missions SET status = 'abandoned', status_reason = ?2, updated_at = ?3
                 WHERE id = ?1 AND status = 'open' AND MAX(created_at, COALESCE(last_heartbeat, 0)) = ?4",
                params![id, reason, clock::now_ms(), last_seen_ms],
            )
        })?;
        if changed == 1 {
            // Its host is gone: a check it was running was cut short with it.
            self.check_interrupted(id)?;
        }
        if changed == 1 {
            self.publish_status(&self.require(id)?, Status::Open);
        }
        Ok(changed == 1)
    }

    fn query(&self, tail: &str, p: impl crate::store::sql::Params) -> Result<Vec<Mission>> {
        let values = p.values();
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(&format!("SELECT {COLUMNS} FROM missions {tail}"))?;
            s.query_map(values.as_slice(), from_row)?.collect()
        })?)
    }

    /// Open missions, oldest first (what sweeps and hosts scan).
    pub fn list_open(&self, limit: usize) -> Result<Vec<Mission>> {
        self.query(
            "WHERE status = 'open' ORDER BY created_at, id LIMIT ?1",
            params![limit as i64],
        )
    }

    /// The hosts of the open missions, oldest first: (id, host) of what
    /// [`list_open`](Self::list_open) lists, without reading the rest of each row
    /// (a dead-host scan needs nothing else).
    pub fn open_hosts(&self, limit: usize) -> Result<Vec<(String, Option<HostId>)>> {
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(
                "SELECT id, host_pid, host_start, host_id, host_machine FROM missions
                 WHERE status = 'open' ORDER BY created_at, id LIMIT ?1",
            )?;
            s.query_map(params![limit as i64], |r| Ok((r.get(0)?, host_at(r, 1)?)))?
                .collect()
        })?)
    }

    /// Record the unit's session and instance. Re-binding the same value is a no-op;
    /// binding a different value over a set one is a conflict.
    pub fn bind(&self, id: &str, session_id: &str, instance_id: &str) -> Result<Mission> {
        let changed = self.store.with(|c| {
            c.execute(
                "UPDATE missions SET session_id = ?2, instance_id = ?3, updated_at = ?4
                 WHERE id = ?1 AND (session_id IS NULL OR session_id = ?2)
                   AND (instance_id IS NULL OR instance_id = ?3)",
                params![id, session_id, instance_id, clock::now_ms()],
            )
        })?;
        let m = self.require(id)?;
        if changed == 0 {
            let (what, bound) = if m.session_id.as_deref() != Some(session_id) {
                ("session", m.session_id.clone().unwrap_or_default())
            } else {
                ("instance", m.instance_id.clone().unwrap_or_default())
            };
            return Err(MissionError::Conflict(format!(
                "mission {id:?} is already bound to {what} {bound:?}"
            )));
        }
        Ok(m)
    }

    /// Point an open mission at the unit that resumes it (a new session on a new
    /// instance, after its host died). Refused for a mission at rest.
    pub fn rebind(&self, id: &str, session_id: &str, instance_id: &str) -> Result<Mission> {
        // The resuming process hosts the new unit.
        let me = HostId::current();
        let changed = self.store.with(|c| {
            c.execute(
                "UPDATE missions SET session_id = ?2, instance_id = ?3, updated_at = ?4, host_pid = ?5, host_start = ?6,
                     host_id = ?7, host_machine = ?8
                 WHERE id = ?1 AND status = 'open'",
                params![id, session_id, instance_id, clock::now_ms(), me.pid, me.start, me.id, me.machine],
            )
        })?;
        let m = self.require(id)?;
        if changed == 0 {
            return Err(MissionError::Conflict(format!(
                "mission {id:?} is at rest as {:?}; it cannot be resumed",
                m.status.as_str()
            )));
        }
        Ok(m)
    }

    /// Stamp liveness. A no-op on a mission at rest, so liveness never revives one.
    /// Stamp an open mission's liveness. `false`: no open mission by that id was
    /// there to stamp — it is at rest, and terminal statuses are final.
    pub fn heartbeat(&self, id: &str) -> Result<bool> {
        let (sql, values) = heartbeat_statement(id);
        Ok(self.store.with(|c| c.execute(sql, values.as_slice()))? > 0)
    }

    /// The guarded terminal transition. First writer owns the outcome: the same
    /// status again is a silent no-op (reason kept, no event); a different one is a
    /// conflict.
    pub fn finish(&self, id: &str, status: Status, reason: &str) -> Result<Finished> {
        let m = self.require(id)?;
        self.finish_with(&m, status, reason, Vec::new())
    }

    /// [`Missions::finish`] of a mission whose row the caller holds (what its status
    /// event names never changes on an open mission, but for the instance a resume
    /// rebinds it to, whose host holds the rebound row), with statements of other
    /// records that belong with the verdict (a unit's compute spend) written in its
    /// transaction, won or not: what they record happened either way.
    pub fn finish_with(
        &self,
        known: &Mission,
        status: Status,
        reason: &str,
        also: Vec<(&'static str, Vec<crate::store::sql::Value>)>,
    ) -> Result<Finished> {
        let id = known.id.as_str();
        if !status.is_terminal() {
            return Err(MissionError::Invalid(format!(
                "cannot finish mission {id:?} as {:?}: a terminal status is required (landed|derailed|stuck|abandoned)",
                status.as_str()
            )));
        }
        let reason = reason.trim();
        let now = clock::now_ms();
        // The event goes ahead of the guarded write, made only while the mission is
        // still open, and the write's RETURNING row is the transaction's last: the
        // whole transaction travels at once, and only the winner announces.
        let announced = Mission {
            status,
            status_reason: (!reason.is_empty()).then(|| reason.to_string()),
            ..known.clone()
        };
        let (announce, announce_values) = crate::bus::append_when(
            subjects::STATUS_CHANGED,
            &status_event(&announced, Status::Open),
            "EXISTS (SELECT 1 FROM missions WHERE id = ?4 AND status = 'open')",
            vec![crate::store::sql::Value::Text(id.to_string())],
        );
        let settle_check = (
            check::SETTLE_INTERRUPTED,
            crate::store::sql::Params::values(params![id, now]),
        );
        let won = self.store.write(|tx| {
            let ahead = [
                (announce.as_str(), announce_values.clone()),
                (settle_check.0, settle_check.1.clone()),
            ];
            tx.execute_at_commit(ahead.into_iter().chain(also.iter().cloned()).collect())?;
            let rows = tx.query_map_and_commit(
                &format!(
                    "UPDATE missions SET status = ?2, status_reason = NULLIF(?3, ''), updated_at = ?4
                     WHERE id = ?1 AND status = 'open' RETURNING {COLUMNS}"
                ),
                params![id, status.as_str(), reason, now],
                from_row,
            )?;
            Ok(rows.into_iter().next())
        })?;
        if let Some(m) = won {
            return Ok(Finished {
                mission: m,
                changed: true,
            });
        }
        let m = self.require(id)?;
        if m.status == status {
            return Ok(Finished {
                mission: m,
                changed: false,
            });
        }
        Err(MissionError::Conflict(format!(
            "mission {id:?} already finished as {:?}; cannot re-finish as {:?}",
            m.status.as_str(),
            status.as_str()
        )))
    }

    /// Announce a mission's move from `from` (open, or queued) to its (stored)
    /// terminal status; every host follows these to reap the unit it holds.
    pub(super) fn publish_status(&self, m: &Mission, from: Status) {
        self.publish(subjects::STATUS_CHANGED, status_event(m, from));
    }

    /// Publish after a durable write. A failed publish never undoes the write; it is
    /// logged, and readers that poll the record still see the change.
    pub(crate) fn publish(&self, subject: &str, data: serde_json::Value) {
        if let Err(e) = self.bus.publish(subject, &data) {
            tracing::warn!("missions: publish {subject} failed; the record is stored: {e}");
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn service() -> (tempfile::TempDir, Missions) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("board.db")).unwrap();
        (dir, Missions::new(store))
    }

    pub(crate) fn fire(svc: &Missions) -> Mission {
        svc.create(crate::mission::NewMission::new(
            "demo",
            crate::mission::Intent::new("audit the config loader").unwrap(),
            crate::mission::EnvelopeName::new("default").unwrap(),
        ))
        .unwrap()
    }

    /// A report of `kind` (blank: the default kind) saying `summary`.
    pub(crate) fn report_input(kind: &str, summary: &str) -> ReportInput {
        ReportInput {
            kind: kind.into(),
            summary: summary.into(),
            ..Default::default()
        }
    }

    #[test]
    fn json_spells_the_envelope_hitl_policy_name() {
        let (_dir, svc) = service();
        let v = serde_json::to_value(fire(&svc)).unwrap();
        assert_eq!(v["hitlPolicyName"], "default", "{v:#}");
        assert!(v.get("envelopeName").is_none(), "{v:#}");
    }

    #[test]
    fn a_mission_records_its_host_and_a_resume_moves_it() {
        let (_dir, svc) = service();
        let m = fire(&svc);
        assert_eq!(m.host, Some(HostId::current()));
        assert_eq!(
            m.host.as_ref().unwrap().machine,
            crate::host::machine_name()
        );
        let hosts = hosts::Hosts::new(svc.store.clone());
        assert!(m.host.as_ref().is_some_and(|h| hosts.lives(h)));
        svc.store
            .with(|c| {
                c.execute(
                    "UPDATE missions SET host_start = 'a process long gone' WHERE id = ?1",
                    params![m.id],
                )
            })
            .unwrap();
        let gone = svc.require(&m.id).unwrap();
        assert!(!gone.host.as_ref().is_some_and(|h| hosts.lives(h)));
        let resumed = svc.rebind(&m.id, "s-2", "i-2").unwrap();
        assert_eq!(resumed.host, Some(HostId::current()));
    }

    #[test]
    fn create_validates_and_starts_open() {
        let (_d, svc) = service();
        let m = fire(&svc);
        assert_eq!(m.status, Status::Open);
        assert_eq!(m.plan_revision, 0);
        // What a row may not hold cannot be built: the checks are the types'.
        let err = Intent::new("two\nlines").unwrap_err();
        assert_eq!(err.to_string(), "intent must be a single line");
        let err = EnvelopeName::new("  ").unwrap_err();
        assert!(
            err.to_string().starts_with("no mission envelope named"),
            "{err}"
        );
    }

    #[test]
    fn finish_is_guarded_and_idempotent() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let head = svc.bus().head().unwrap();
        let f = svc.finish(&m.id, Status::Landed, " done ").unwrap();
        assert!(f.changed);
        assert_eq!(f.mission.status_reason.as_deref(), Some("done"));
        let again = svc.finish(&m.id, Status::Landed, "other").unwrap();
        assert!(!again.changed);
        assert_eq!(again.mission.status_reason.as_deref(), Some("done"));
        let err = svc.finish(&m.id, Status::Derailed, "x").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "conflict: mission {:?} already finished as \"landed\"; cannot re-finish as \"derailed\"",
                m.id
            )
        );
        // Exactly one status event for the one real transition.
        let events = svc.bus().since(head, 10).unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data["newStatus"], "landed");
        assert!(matches!(
            svc.finish(&m.id, Status::Open, "").unwrap_err(),
            MissionError::Invalid(_)
        ));
    }

    #[test]
    fn racing_finishes_end_in_exactly_one_outcome() {
        let (_d, svc) = service();
        let m = fire(&svc);
        let handles: Vec<_> = [
            Status::Landed,
            Status::Abandoned,
            Status::Stuck,
            Status::Derailed,
        ]
        .into_iter()
        .cycle()
        .take(16)
        .map(|st| {
            let svc = svc.clone();
            let id = m.id.clone();
            std::thread::spawn(move || svc.finish(&id, st, "race").map(|f| f.changed))
        })
        .collect();
        let results: Vec<Result<bool>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let winners = results.iter().filter(|r| matches!(r, Ok(true))).count();
        assert_eq!(winners, 1, "{results:?}");
        let m = svc.require(&m.id).unwrap();
        assert!(m.status.is_terminal());
        // Every loser either asked for the winning status (a no-op) or got the conflict.
        for r in &results {
            match r {
                Ok(_) => {}
                Err(MissionError::Conflict(msg)) => {
                    assert!(msg.contains(&format!("already finished as {:?}", m.status.as_str())))
                }
                Err(e) => panic!("unexpected {e}"),
            }
        }
    }

    #[test]
    fn heartbeat_never_revives_a_mission_at_rest() {
        let (_d, svc) = service();
        let m = fire(&svc);
        assert!(svc.heartbeat(&m.id).unwrap(), "an open mission is stamped");
        assert!(svc.require(&m.id).unwrap().last_heartbeat.is_some());
        svc.finish(&m.id, Status::Abandoned, "").unwrap();
        let before = svc.require(&m.id).unwrap();
        assert!(
            !svc.heartbeat(&m.id).unwrap(),
            "one at rest is not, and says so"
        );
        let after = svc.require(&m.id).unwrap();
        assert_eq!(before.updated_at, after.updated_at);
        assert_eq!(after.status, Status::Abandoned);
    }

    #[test]
    fn bind_conflicts_only_on_a_different_value() {
        let (_d, svc) = service();
        let m = fire(&svc);
        svc.bind(&m.id, "s1", "i1").unwrap();
        svc.bind(&m.id, "s1", "i1").unwrap();
        let err = svc.bind(&m.id, "s2", "i1").unwrap_err().to_string();
        assert!(err.contains("already bound to session \"s1\""), "{err}");
    }

    #[test]
    fn resolve_takes_an_unambiguous_prefix() {
        let (_d, svc) = service();
        let m = fire(&svc);
        assert_eq!(svc.resolve(&m.id[..8]).unwrap().id, m.id);
        assert!(matches!(
            svc.resolve("nope-nope").unwrap_err(),
            MissionError::NotFound(_)
        ));
        assert_eq!(
            svc.resolve(&m.id[..3]).unwrap_err().to_string(),
            format!(
                "mission id prefix {:?} is too short — type at least 4 characters of the id (see 'missionboard mission list')",
                &m.id[..3]
            )
        );
        // Typed text is never a pattern.
        assert!(matches!(
            svc.resolve("%%%%").unwrap_err(),
            MissionError::NotFound(_)
        ));
    }
}
