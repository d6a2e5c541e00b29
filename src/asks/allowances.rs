//! Allowances: an operator's "allow always (this mission)" on a gated call whose
//! agent offered an allow-always. missionboard keeps it, not the agent: the agent is
//! answered allow-once each time, so it never holds a grant outside us. An
//! allowance covers one scope (the call's kind, the rule that asked, its target, as
//! `envelope::always` words it) in one mission; the envelope is consulted first on
//! every later call, and an allowance only turns its *ask* into an allow. It is
//! written in the same transaction as the approval that grants it, names who
//! granted it (surface and device), counts its uses, is revocable from every
//! surface, and ends with its mission (a mission at rest uses none).

use serde::Serialize;
use serde_json::json;

use crate::clock;
use crate::mission::id_prefix::{IdKind, Resolved, resolve};
use crate::store::sql::{OptionalExtension, Row, params};

use super::{Ask, AskError, AskState, Asks, COLUMNS, Surface, from_row};

/// v20: which gated calls could have been allowed always (the scope, on the ask),
/// and the allowances operators gave.
pub(crate) const SCHEMA_V20: &str = "
ALTER TABLE asks ADD COLUMN always_scope TEXT;
CREATE TABLE ask_allowances (
    id              TEXT PRIMARY KEY NOT NULL,
    mission_id      TEXT NOT NULL,
    scope           TEXT NOT NULL,
    ask_id          TEXT NOT NULL,
    granted_surface TEXT NOT NULL,
    granted_device  TEXT,
    granted_at      INTEGER NOT NULL,
    uses            INTEGER NOT NULL DEFAULT 0,
    last_used_at    INTEGER,
    revoked_at      INTEGER,
    revoked_surface TEXT,
    revoked_device  TEXT
);
CREATE INDEX ask_allowances_by_mission ON ask_allowances (mission_id, scope);";

pub(crate) const PG_SCHEMA_V20: &str = "
ALTER TABLE asks ADD COLUMN always_scope TEXT;
CREATE TABLE ask_allowances (
    id              TEXT PRIMARY KEY NOT NULL,
    mission_id      TEXT NOT NULL,
    scope           TEXT NOT NULL,
    ask_id          TEXT NOT NULL,
    granted_surface TEXT NOT NULL,
    granted_device  TEXT,
    granted_at      BIGINT NOT NULL,
    uses            BIGINT NOT NULL DEFAULT 0,
    last_used_at    BIGINT,
    revoked_at      BIGINT,
    revoked_surface TEXT,
    revoked_device  TEXT
);
CREATE INDEX ask_allowances_by_mission ON ask_allowances (mission_id, scope);";

const ALLOWANCE_COLUMNS: &str = "a.id, a.mission_id, a.scope, a.ask_id, a.granted_surface, a.granted_device, a.granted_at, a.uses, a.last_used_at, a.revoked_at, a.revoked_surface, a.revoked_device, m.status";

const ALLOWANCE_IDS: IdKind = IdKind {
    noun: "allowance",
    table: "ask_allowances",
    list_command: "missionboard approvals allowances",
};

/// One allowance, as the record shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Allowance {
    pub id: String,
    pub mission_id: String,
    /// What it covers (`local_shell.local_shell running git, asked by rule 3 of …`).
    pub scope: String,
    /// The approval that granted it.
    pub ask_id: String,
    pub granted_surface: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub granted_device: Option<String>,
    #[serde(serialize_with = "clock::ser_rfc3339")]
    pub granted_at: i64,
    /// Calls it allowed without asking.
    pub uses: i64,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "clock::ser_opt_rfc3339"
    )]
    pub last_used_at: Option<i64>,
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "clock::ser_opt_rfc3339"
    )]
    pub revoked_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_surface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_device: Option<String>,
    /// `active`, `revoked`, or `ended` (its mission is at rest).
    pub state: &'static str,
}

impl Allowance {
    pub fn is_active(&self) -> bool {
        self.state == "active"
    }

    /// "web (phone)": who granted it.
    pub fn granted_by(&self) -> String {
        super::answered_by_label(&self.granted_surface, self.granted_device.as_deref())
    }

    /// Who revoked it, when someone did.
    pub fn revoked_by(&self) -> Option<String> {
        let surface = self.revoked_surface.as_deref()?;
        Some(super::answered_by_label(
            surface,
            self.revoked_device.as_deref(),
        ))
    }

    /// One line for `mission show` and the board: what it covers, who granted it,
    /// how often it was used, and whether it still holds.
    pub fn line(&self) -> String {
        let short = self.id.get(..8).unwrap_or(&self.id);
        let state = match (self.state, self.revoked_by()) {
            ("revoked", Some(by)) => format!("revoked by {by}"),
            ("ended", _) => "ended with the mission".to_string(),
            (s, _) => s.to_string(),
        };
        format!(
            "[{short}] always allowed: {} — granted by {} on approval {}, used {} time(s), {state}",
            self.scope,
            self.granted_by(),
            self.ask_id,
            self.uses
        )
    }
}

fn allowance_from_row(r: &Row<'_>) -> crate::store::sql::Result<Allowance> {
    let revoked_at: Option<i64> = r.get(9)?;
    let mission_status: Option<String> = r.get(12)?;
    let state = if revoked_at.is_some() {
        "revoked"
    } else if mission_status.as_deref() == Some("open") {
        "active"
    } else {
        "ended"
    };
    Ok(Allowance {
        id: r.get(0)?,
        mission_id: r.get(1)?,
        scope: r.get(2)?,
        ask_id: r.get(3)?,
        granted_surface: r.get(4)?,
        granted_device: r.get(5)?,
        granted_at: r.get(6)?,
        uses: r.get(7)?,
        last_used_at: r.get(8)?,
        revoked_at,
        revoked_surface: r.get(10)?,
        revoked_device: r.get(11)?,
        state,
    })
}

/// Why an allowance was not revoked.
#[derive(Debug)]
pub enum RevokeError {
    NotFound(String),
    Refused(String),
    Store(crate::store::StoreError),
}

impl std::fmt::Display for RevokeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RevokeError::NotFound(id) => write!(
                f,
                "no allowance {id:?} exists — 'missionboard approvals allowances' lists them"
            ),
            RevokeError::Refused(why) => f.write_str(why),
            RevokeError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RevokeError {}

impl From<crate::store::StoreError> for RevokeError {
    fn from(e: crate::store::StoreError) -> Self {
        RevokeError::Store(e)
    }
}

impl Asks {
    /// Approve gated call `id` and allow calls of its scope always in its mission:
    /// the approval and the allowance in one transaction, so neither lands alone.
    /// Refused (nothing recorded) when the agent offered no allow-always for the
    /// call, or the ask is not a pending permission of a mission. `record` gives the
    /// statements that put a new allowance (its id given) on the mission's record, run
    /// in the same transaction: the unit, woken by the commit, can only report what it
    /// did with the approval after it.
    pub fn approve_always(
        &self,
        id: &str,
        via: &Surface,
        record: &dyn Fn(&str) -> Vec<crate::store::sql::AtCommit>,
    ) -> Result<(Ask, Allowance), AskError> {
        let ask = self.require(id)?;
        let (Some(scope), Some(mission)) = (ask.always_scope.clone(), ask.mission_id.clone())
        else {
            return Err(AskError::Invalid(format!(
                "ask {id}'s agent offered no \"allow always\" for this call ({}.{}) — approve or deny it once",
                ask.tools_name, ask.tool_name
            )));
        };
        let now = clock::now_ms();
        let allowance_id = uuid::Uuid::new_v4().to_string();
        let resolution = json!({ "approved": true, "always": true }).to_string();
        let landed = self.store.write(|tx| {
            let resolved = tx
                .query_row(
                    &format!(
                        "UPDATE asks SET state = ?2, resolution = ?3, resolved_at = ?4,
                             answered_surface = ?5, answered_device = ?6
                         WHERE id = ?1 AND state = 'pending' AND (expires_at = 0 OR expires_at > ?4)
                         RETURNING {COLUMNS}"
                    ),
                    params![
                        id,
                        AskState::Approved.as_str(),
                        resolution,
                        now,
                        via.as_str(),
                        via.device()
                    ],
                    from_row,
                )
                .optional()?;
            let Some(resolved) = resolved else {
                return Ok(None);
            };
            // Two asks of one scope approved always at once: the first allowance
            // stands, the second approval is an approval.
            let existing: Option<String> = tx
                .query_row(
                    "SELECT id FROM ask_allowances WHERE mission_id = ?1 AND scope = ?2 AND revoked_at IS NULL",
                    params![mission, scope],
                    |r| r.get(0),
                )
                .optional()?;
            let allowance = match existing {
                Some(existing) => existing,
                None => {
                    tx.execute(
                        "INSERT INTO ask_allowances (id, mission_id, scope, ask_id, granted_surface, granted_device, granted_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        params![allowance_id, mission, scope, id, via.as_str(), via.device(), now],
                    )?;
                    tx.execute_at_commit(record(&allowance_id))?;
                    allowance_id.clone()
                }
            };
            Ok(Some((resolved, allowance)))
        })?;
        let Some((resolved, allowance)) = landed else {
            return Err(self.missed(id)?);
        };
        self.wake(id);
        let allowance = self
            .allowance(&allowance)?
            .ok_or_else(|| AskError::NotFound(allowance.clone()))?;
        Ok((resolved, allowance))
    }

    /// Spend one use of the active allowance covering `scope` in `mission_id`, if
    /// there is one: the check and the count in one guarded write, so a revoke or
    /// the mission's rest that lands first wins.
    pub fn use_allowance(
        &self,
        mission_id: &str,
        scope: &str,
    ) -> Result<Option<Allowance>, AskError> {
        let now = clock::now_ms();
        let used: Option<String> = self.store.with(|c| {
            c.query_row(
                "UPDATE ask_allowances SET uses = uses + 1, last_used_at = ?3
                 WHERE id = (SELECT id FROM ask_allowances
                             WHERE mission_id = ?1 AND scope = ?2 AND revoked_at IS NULL
                             ORDER BY granted_at LIMIT 1)
                   AND revoked_at IS NULL
                   AND mission_id IN (SELECT id FROM missions WHERE status = 'open')
                 RETURNING id",
                params![mission_id, scope, now],
                |r| r.get(0),
            )
            .optional()
        })?;
        match used {
            Some(id) => self.allowance(&id),
            None => Ok(None),
        }
    }

    /// One allowance by its whole id.
    pub fn allowance(&self, id: &str) -> Result<Option<Allowance>, AskError> {
        Ok(self.store.with(|c| {
            c.query_row(
                &format!(
                    "SELECT {ALLOWANCE_COLUMNS} FROM ask_allowances a LEFT JOIN missions m ON m.id = a.mission_id WHERE a.id = ?1"
                ),
                params![id],
                allowance_from_row,
            )
            .optional()
        })?)
    }

    /// Allowances, newest first: one mission's, or every mission's.
    pub fn allowances(
        &self,
        mission_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Allowance>, AskError> {
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(&format!(
                "SELECT {ALLOWANCE_COLUMNS} FROM ask_allowances a LEFT JOIN missions m ON m.id = a.mission_id
                 WHERE (CAST(?1 AS TEXT) IS NULL OR a.mission_id = ?1) ORDER BY a.granted_at DESC, a.id DESC LIMIT ?2"
            ))?;
            s.query_map(params![mission_id, limit as i64], allowance_from_row)?
                .collect()
        })?)
    }

    /// Revoke an allowance (by id or a unique prefix) at once: the next call it
    /// covers is asked about again. `via` is recorded as who revoked it.
    pub fn revoke_allowance(&self, typed: &str, via: &Surface) -> Result<Allowance, RevokeError> {
        let id = match resolve(&self.store, &ALLOWANCE_IDS, typed)? {
            Resolved::Id(id) => id,
            Resolved::NotFound => return Err(RevokeError::NotFound(typed.trim().to_string())),
            Resolved::Refused(why) => return Err(RevokeError::Refused(why)),
        };
        let now = clock::now_ms();
        let changed = self.store.with(|c| {
            c.execute(
                "UPDATE ask_allowances SET revoked_at = ?2, revoked_surface = ?3, revoked_device = ?4
                 WHERE id = ?1 AND revoked_at IS NULL",
                params![id, now, via.as_str(), via.device()],
            )
        })?;
        let found = self
            .allowance(&id)
            .map_err(|e| RevokeError::Refused(e.to_string()))?
            .ok_or_else(|| RevokeError::NotFound(id.clone()))?;
        if changed == 0 {
            return Err(RevokeError::Refused(format!(
                "allowance {} was already revoked by {} — nothing changed",
                found.id,
                found.revoked_by().unwrap_or_else(|| "someone".into())
            )));
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asks::NewAsk;
    use crate::mission::{EnvelopeName, Intent, Missions, NewMission, Status};

    fn setup() -> (tempfile::TempDir, Asks, Missions, String) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::Store::open(&dir.path().join("board.db")).unwrap();
        let missions = Missions::new(store.clone());
        let m = missions
            .create(NewMission::new(
                "stub",
                Intent::new("tidy").unwrap(),
                EnvelopeName::new("gate").unwrap(),
            ))
            .unwrap();
        (dir, Asks::new(store), missions, m.id)
    }

    fn gated(asks: &Asks, mission: &str, scope: Option<&str>) -> Ask {
        asks.raise(NewAsk {
            tools_name: "local_shell".into(),
            tool_name: "local_shell".into(),
            args_summary: "git push".into(),
            mission_id: Some(mission.into()),
            always_scope: scope.map(str::to_string),
            ..Default::default()
        })
        .unwrap()
    }

    #[test]
    fn an_allowance_is_granted_with_its_approval_used_revoked_and_ends_with_its_mission() {
        let (_d, asks, missions, m) = setup();
        let scope = "local_shell.local_shell running git, asked by rule 0 of envelope \"gate\"";
        let none = gated(&asks, &m, None);
        let refused = asks
            .approve_always(&none.id, &Surface::Cli, &|_| Vec::new())
            .unwrap_err();
        assert!(
            refused.to_string().contains("offered no \"allow always\""),
            "{refused}"
        );
        assert!(
            asks.require(&none.id).unwrap().is_pending(),
            "nothing recorded"
        );

        let ask = gated(&asks, &m, Some(scope));
        let (resolved, allowance) = asks
            .approve_always(&ask.id, &Surface::Web("phone".into()), &|_| Vec::new())
            .unwrap();
        assert_eq!(resolved.approved(), Some(true));
        assert_eq!(allowance.granted_by(), "web (phone)");
        assert!(allowance.is_active());
        assert!(asks.use_allowance(&m, "another scope").unwrap().is_none());
        let used = asks.use_allowance(&m, scope).unwrap().unwrap();
        assert_eq!(used.uses, 1);

        let revoked = asks
            .revoke_allowance(&allowance.id[..8], &Surface::Board)
            .unwrap();
        assert_eq!(revoked.state, "revoked");
        assert_eq!(revoked.revoked_by().as_deref(), Some("board"));
        assert!(asks.use_allowance(&m, scope).unwrap().is_none());
        let again = asks
            .revoke_allowance(&allowance.id, &Surface::Cli)
            .unwrap_err();
        assert!(
            again.to_string().contains("already revoked by board"),
            "{again}"
        );

        // A fresh one ends when its mission rests.
        let ask = gated(&asks, &m, Some(scope));
        asks.approve_always(&ask.id, &Surface::Cli, &|_| Vec::new())
            .unwrap();
        assert!(asks.use_allowance(&m, scope).unwrap().is_some());
        missions.finish(&m, Status::Landed, "done").unwrap();
        assert!(asks.use_allowance(&m, scope).unwrap().is_none());
        let listed = asks.allowances(Some(&m), 10).unwrap();
        assert_eq!(
            listed.iter().map(|a| a.state).collect::<Vec<_>>(),
            ["ended", "revoked"]
        );
    }
}
