//! Checkpoints: a run waiting on an ask. The row is written with the ask row itself
//! (questions, permission asks and compute-bound questions alike) and names the
//! mission, the session, the agent and the host process that holds the unit, so an
//! answer from any moment on resumes the run exactly once — by that host if it is
//! still alive, else by whichever process records the answer. "Parked" means the
//! unit's turn ended under the ask (its park window passed); until then the host
//! delivers an answer on the same turn. Either way the run is resumed only through
//! the guarded claim, so of every claimant exactly one delivers the answer.

use crate::store::sql::{OptionalExtension, params};

use super::{AskError, Asks};
use crate::clock;
pub use crate::host::HostId;

pub(crate) const SCHEMA_V4: &str = "
CREATE TABLE checkpoints (
    ask_id      TEXT PRIMARY KEY NOT NULL REFERENCES asks (id),
    mission_id  TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    agent_name  TEXT NOT NULL,
    cwd         TEXT NOT NULL,
    host_pid    INTEGER NOT NULL,
    host_start  TEXT NOT NULL,
    claimed_at  INTEGER,
    claimed_by  TEXT,
    failure     TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX checkpoints_by_mission ON checkpoints (mission_id);";

/// v7: when the unit's turn ended under the ask. Rows from before were only ever
/// written at the park, so they are parked.
pub(crate) const SCHEMA_V7: &str = "
ALTER TABLE checkpoints ADD COLUMN parked_at INTEGER;
UPDATE checkpoints SET parked_at = created_at;";

/// v12: the host's id and machine beside its pid, so a run parked on another
/// machine is judged by that host's heartbeat (`crate::mission::hosts`).
pub(crate) const SCHEMA_V12: &str = "
ALTER TABLE checkpoints ADD COLUMN host_id TEXT;
ALTER TABLE checkpoints ADD COLUMN host_machine TEXT;";

/// The PostgreSQL spelling of [`SCHEMA_V12`].
pub(crate) const PG_SCHEMA_V12: &str = SCHEMA_V12;

/// The PostgreSQL spelling of this module's tables as of schema v11 (see `crate::schema`).
pub(crate) const PG_SCHEMA_V11: &str = "
CREATE TABLE checkpoints (
    ask_id      TEXT PRIMARY KEY NOT NULL REFERENCES asks (id),
    mission_id  TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    agent_name  TEXT NOT NULL,
    cwd         TEXT NOT NULL,
    host_pid    BIGINT NOT NULL,
    host_start  TEXT NOT NULL,
    claimed_at  BIGINT,
    claimed_by  TEXT,
    failure     TEXT,
    created_at  BIGINT NOT NULL,
    updated_at  BIGINT NOT NULL,
    parked_at   BIGINT
);
CREATE INDEX checkpoints_by_mission ON checkpoints (mission_id);";

/// One parked run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub ask_id: String,
    pub mission_id: String,
    pub session_id: String,
    pub agent_name: String,
    pub cwd: String,
    pub host: HostId,
    pub claimed_at: Option<i64>,
    /// When the unit's turn ended under the ask (`None`: the host still holds the
    /// turn inside its park window, or the ask is a permission the turn waits on).
    pub parked_at: Option<i64>,
    pub failure: Option<String>,
}

const COLUMNS: &str = "ask_id, mission_id, session_id, agent_name, cwd, host_pid, host_start, claimed_at, failure, parked_at, host_id, host_machine";

fn from_row(r: &crate::store::sql::Row<'_>) -> crate::store::sql::Result<Checkpoint> {
    Ok(Checkpoint {
        ask_id: r.get(0)?,
        mission_id: r.get(1)?,
        session_id: r.get(2)?,
        agent_name: r.get(3)?,
        cwd: r.get(4)?,
        host: HostId {
            id: r.get::<Option<String>>(10)?.unwrap_or_default(),
            machine: r.get::<Option<String>>(11)?.unwrap_or_default(),
            pid: r.get(5)?,
            start: r.get(6)?,
        },
        claimed_at: r.get(7)?,
        failure: r.get(8)?,
        parked_at: r.get(9)?,
    })
}

/// The checkpoint row, written inside the transaction that writes its ask.
pub(super) fn insert(
    tx: &crate::store::Conn<'_>,
    cp: &Checkpoint,
    now: i64,
) -> crate::store::sql::Result<usize> {
    tx.execute(
        "INSERT INTO checkpoints (ask_id, mission_id, session_id, agent_name, cwd, host_pid, host_start, created_at, updated_at, host_id, host_machine)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10)",
        params![cp.ask_id, cp.mission_id, cp.session_id, cp.agent_name, cp.cwd, cp.host.pid, cp.host.start, now, cp.host.id, cp.host.machine],
    )
}

impl Asks {
    /// The unit's turn ended under the ask (its park window passed unanswered):
    /// from now on the answer comes to it as a resume turn. Guarded on an unclaimed
    /// row; `false` when the row is gone or already claimed.
    pub fn mark_parked(&self, ask_id: &str) -> Result<bool, AskError> {
        let now = clock::now_ms();
        let changed = self.store.with(|c| {
            c.execute(
                "UPDATE checkpoints SET parked_at = COALESCE(parked_at, ?2), updated_at = ?2
                 WHERE ask_id = ?1 AND claimed_at IS NULL",
                params![ask_id, now],
            )
        })?;
        Ok(changed == 1)
    }

    /// Is a run parked under the ask (its turn ended waiting on it)?
    pub fn is_parked(&self, ask_id: &str) -> Result<bool, AskError> {
        Ok(self
            .checkpoint(ask_id)?
            .is_some_and(|c| c.parked_at.is_some()))
    }

    /// The host that holds the turn waiting on a resolved ask delivers the answer
    /// itself — if it wins the claim. `true`: deliver it (the checkpoint is spent, or
    /// there never was one); `false`: another process holds the resume.
    pub fn claim_for_delivery(&self, ask_id: &str) -> Result<bool, AskError> {
        // The common case in one statement (one round trip to a server, on the
        // answer's path): an unclaimed checkpoint, spent by the host holding the turn.
        // Guarded like the claim, so a resumer's claim made first still wins.
        let spent = self.store.with(|c| {
            c.execute(
                "DELETE FROM checkpoints WHERE ask_id = ?1 AND claimed_at IS NULL",
                params![ask_id],
            )
        })?;
        if spent == 1 {
            return Ok(true);
        }
        if self.claim_checkpoint(ask_id)? {
            self.drop_checkpoint(ask_id)?;
            return Ok(true);
        }
        Ok(self.checkpoint(ask_id)?.is_none())
    }

    pub fn checkpoint(&self, ask_id: &str) -> Result<Option<Checkpoint>, AskError> {
        Ok(self.store.with(|c| {
            c.query_row(
                &format!("SELECT {COLUMNS} FROM checkpoints WHERE ask_id = ?1"),
                params![ask_id],
                from_row,
            )
            .optional()
        })?)
    }

    /// A mission's parked runs.
    pub fn checkpoints_for(&self, mission_id: &str) -> Result<Vec<Checkpoint>, AskError> {
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM checkpoints WHERE mission_id = ?1 ORDER BY created_at"
            ))?;
            s.query_map(params![mission_id], from_row)?.collect()
        })?)
    }

    /// The missions with a run parked by `host` and not yet being resumed: one
    /// read however many units the host holds (its claim loop counts them on every
    /// commit it wakes for).
    pub fn parked_missions_of(&self, host: &HostId) -> Result<Vec<String>, AskError> {
        let rows: Vec<Checkpoint> = self.store.with(|c| {
            let mut s = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM checkpoints WHERE parked_at IS NOT NULL AND claimed_at IS NULL AND host_pid = ?1"
            ))?;
            s.query_map(params![i64::from(host.pid)], from_row)?.collect()
        })?;
        Ok(rows
            .into_iter()
            .filter(|c| &c.host == host)
            .map(|c| c.mission_id)
            .collect())
    }

    /// Runs whose ask is already resolved (answered, decided or expired) and
    /// nobody is resuming: unclaimed, or claimed by a resumer that is gone (the
    /// stranded ones `approvals list` reconciles).
    pub fn stranded_checkpoints(&self) -> Result<Vec<Checkpoint>, AskError> {
        let rows: Vec<(Checkpoint, Option<String>)> = self.store.with(|c| {
            let mut s = c.prepare_cached(&format!(
                "SELECT {}, k.claimed_by FROM checkpoints k JOIN asks a ON a.id = k.ask_id
                 WHERE a.state != 'pending'
                 ORDER BY k.created_at LIMIT 200",
                COLUMNS
                    .split(", ")
                    .map(|c| format!("k.{c}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))?;
            s.query_map([], |r| Ok((from_row(r)?, r.get(12)?)))?
                .collect()
        })?;
        Ok(rows
            .into_iter()
            .filter(|(cp, by)| cp.claimed_at.is_none() || !self.claimer_lives(by.as_deref()))
            .map(|(cp, _)| cp)
            .collect())
    }

    /// Runs a resumer has claimed (and may never have finished), oldest first.
    pub fn claimed_checkpoints(&self, limit: usize) -> Result<Vec<Checkpoint>, AskError> {
        Ok(self.store.with(|c| {
            let mut s = c.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM checkpoints WHERE claimed_at IS NOT NULL ORDER BY claimed_at LIMIT ?1"
            ))?;
            s.query_map(params![limit as i64], from_row)?.collect()
        })?)
    }

    /// Claim the right to resume a parked run. Exactly one claimer wins. A claim
    /// stands for as long as its claimer lives, however slow its resume: only the
    /// claim of a resumer that is gone (by `crate::mission::hosts::lives`: its
    /// process ended on this machine, or its heartbeat went stale on another) is
    /// taken over, guarded on that very claim still being the one held,
    /// so a dead claim is taken over exactly once too.
    pub fn claim_checkpoint(&self, ask_id: &str) -> Result<bool, AskError> {
        let now = clock::now_ms();
        let by = HostId::current().label();
        let held_by: Option<Option<String>> = self.store.with(|c| {
            c.query_row(
                "SELECT claimed_by FROM checkpoints WHERE ask_id = ?1 AND claimed_at IS NOT NULL",
                params![ask_id],
                |r| r.get(0),
            )
            .optional()
        })?;
        // `None`: unclaimed when read; the guard below still refuses a claim made since.
        let dead_claim = match held_by {
            Some(by) if self.claimer_lives(by.as_deref()) => return Ok(false),
            Some(by) => Some(by.unwrap_or_default()),
            None => None,
        };
        let changed = self.store.with(|c| {
            c.execute(
                "UPDATE checkpoints SET claimed_at = ?2, claimed_by = ?3, updated_at = ?2
                 WHERE ask_id = ?1 AND (claimed_at IS NULL OR COALESCE(claimed_by, '') = ?4)",
                params![ask_id, now, by, dead_claim],
            )
        })?;
        Ok(changed == 1)
    }

    /// A mission came to rest: none of its runs can be resumed any more, whether
    /// they wait, are parked or were claimed by a resumer that never finished.
    pub fn drop_mission_checkpoints(&self, mission_id: &str) -> Result<usize, AskError> {
        Ok(self.store.with(|c| {
            c.execute(
                "DELETE FROM checkpoints WHERE mission_id = ?1",
                params![mission_id],
            )
        })?)
    }

    /// A resume finished: the run is no longer parked.
    pub fn drop_checkpoint(&self, ask_id: &str) -> Result<(), AskError> {
        self.store
            .with(|c| c.execute("DELETE FROM checkpoints WHERE ask_id = ?1", params![ask_id]))?;
        Ok(())
    }

    /// A resume failed: keep the row, record why, and release the claim so a later
    /// answer-side read can retry once the cause is fixed.
    pub fn fail_checkpoint(&self, ask_id: &str, failure: &str) -> Result<(), AskError> {
        self.store.with(|c| {
            c.execute(
                "UPDATE checkpoints SET failure = ?2, claimed_at = NULL, claimed_by = NULL, updated_at = ?3 WHERE ask_id = ?1",
                params![ask_id, failure, clock::now_ms()],
            )
        })?;
        Ok(())
    }
}

impl Asks {
    /// Does the process that claimed a run still live? (A claim without a
    /// readable claimer's label is nobody's.)
    fn claimer_lives(&self, claimed_by: Option<&str>) -> bool {
        claimed_by
            .and_then(HostId::from_label)
            .is_some_and(|h| crate::mission::hosts::Hosts::new(self.store.clone()).lives(&h))
    }

    /// Does the host that parked the run still live?
    pub fn host_lives(&self, cp: &Checkpoint) -> bool {
        crate::mission::hosts::Hosts::new(self.store.clone()).lives(&cp.host)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::asks::{NewAsk, QUESTION_TOOL, QUESTION_TOOLS};
    use crate::store::Store;

    /// A fresh store holding one question of mission `m`, its checkpoint written
    /// with it.
    fn question() -> (tempfile::TempDir, Asks, crate::asks::Ask) {
        let dir = tempfile::tempdir().unwrap();
        let asks = Asks::new(Store::open(&dir.path().join("b.db")).unwrap());
        let ask = asks
            .raise(NewAsk {
                tools_name: QUESTION_TOOLS.into(),
                tool_name: QUESTION_TOOL.into(),
                args_summary: "q".into(),
                mission_id: Some("m".into()),
                checkpoint_cwd: Some("/".into()),
                ..Default::default()
            })
            .unwrap();
        (dir, asks, ask)
    }

    #[test]
    fn a_claim_is_won_exactly_once() {
        let (_dir, asks, ask) = question();
        let cp = asks
            .checkpoint(&ask.id)
            .unwrap()
            .expect("written with the ask");
        assert_eq!((cp.host, cp.parked_at), (HostId::current(), None));
        let wins: usize = (0..8)
            .map(|_| {
                let a = asks.clone();
                let id = ask.id.clone();
                std::thread::spawn(move || a.claim_checkpoint(&id).unwrap())
            })
            .map(|h| h.join().unwrap() as usize)
            .sum();
        assert_eq!(wins, 1);
        asks.drop_checkpoint(&ask.id).unwrap();
        assert!(asks.checkpoint(&ask.id).unwrap().is_none());
    }

    /// A parked question whose checkpoint is claimed by `claimed_by`, `claimed_at`.
    fn claimed_by(claimer: &str, claimed_at: i64) -> (tempfile::TempDir, Asks, String) {
        let (dir, asks, ask) = question();
        asks.store
            .with(|c| {
                c.execute(
                    "UPDATE checkpoints SET claimed_at = ?2, claimed_by = ?3 WHERE ask_id = ?1",
                    params![ask.id, claimed_at, claimer],
                )
            })
            .unwrap();
        (dir, asks, ask.id)
    }

    #[test]
    fn the_host_holding_the_turn_spends_an_unclaimed_checkpoint_and_no_resumer_gets_it() {
        let (_dir, asks, ask) = question();
        assert!(asks.claim_for_delivery(&ask.id).unwrap(), "delivered");
        assert!(asks.checkpoint(&ask.id).unwrap().is_none(), "spent");
        assert!(
            !asks.claim_checkpoint(&ask.id).unwrap(),
            "nothing to resume"
        );
    }

    #[test]
    fn a_live_claimers_claim_stands_however_old_it_is() {
        // Claimed a day ago by a process that still runs (this one): a slow resume,
        // not an abandoned one.
        let day_ago = clock::now_ms() - 24 * 3600 * 1000;
        let (_dir, asks, id) = claimed_by(&HostId::current().label(), day_ago);
        assert!(!asks.claim_checkpoint(&id).unwrap());
        assert!(!asks.claim_for_delivery(&id).unwrap());
        assert!(asks.checkpoint(&id).unwrap().is_some(), "still held");
        asks.respond(&id, false, &crate::asks::Surface::Cli)
            .unwrap();
        assert!(
            asks.stranded_checkpoints().unwrap().is_empty(),
            "not stranded"
        );
    }

    #[test]
    fn a_dead_claimers_fresh_claim_is_taken_over_exactly_once() {
        let gone = HostId {
            start: "0".into(),
            ..HostId::current()
        };
        let (_dir, asks, id) = claimed_by(&gone.label(), clock::now_ms());
        asks.respond(&id, false, &crate::asks::Surface::Cli)
            .unwrap();
        let stranded = asks.stranded_checkpoints().unwrap();
        assert_eq!(stranded.len(), 1, "its resumer is gone: stranded");
        let wins: usize = (0..8)
            .map(|_| {
                let (a, id) = (asks.clone(), id.clone());
                std::thread::spawn(move || a.claim_checkpoint(&id).unwrap())
            })
            .map(|h| h.join().unwrap() as usize)
            .sum();
        assert_eq!(wins, 1);
        // The winner lives: its claim stands in turn.
        assert!(!asks.claim_checkpoint(&id).unwrap());
        assert!(asks.stranded_checkpoints().unwrap().is_empty());
    }

    #[test]
    fn a_claim_from_another_machine_stands_while_its_host_beats() {
        let far = HostId {
            id: "far-host".into(),
            machine: "another-machine".into(),
            // A pid that runs here proves nothing about a process elsewhere.
            pid: std::process::id(),
            start: "0".into(),
        };
        let (_dir, asks, id) = claimed_by(&far.label(), clock::now_ms());
        let hosts = crate::mission::hosts::Hosts::new(asks.store.clone());
        hosts.announce(&far).unwrap();
        asks.respond(&id, false, &crate::asks::Surface::Cli)
            .unwrap();
        assert!(!asks.claim_checkpoint(&id).unwrap(), "its host beats");
        assert!(asks.stranded_checkpoints().unwrap().is_empty());
        asks.store
            .with(|c| c.execute("UPDATE hosts SET heartbeat_at = 0", []))
            .unwrap();
        assert_eq!(
            asks.stranded_checkpoints().unwrap().len(),
            1,
            "stale: stranded"
        );
        assert!(asks.claim_checkpoint(&id).unwrap(), "stale: taken over");
    }
}
