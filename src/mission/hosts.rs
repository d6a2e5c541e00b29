//! Hosts: the processes that host units, on whichever machine shares the store, and
//! the one rule that says whether a host still lives.
//!
//! A host's row is written when its fleet starts and beaten every [`BEAT`] by a
//! thread of its own (never an async worker), and marked gone when the last fleet
//! of the process drops. A host on this machine is judged by its process (pid and
//! start time, exact and immediate — a dead pid is dead whatever its row says); a
//! host on another machine, whose process cannot be probed from here, lives while
//! its heartbeat is fresh. Every "is that host gone?" — the board's ⚠ host gone,
//! a checkpoint claim's takeover, resume after host death, a firing session's
//! liveness — asks [`lives`].

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use serde::Serialize;

use crate::clock;
use crate::host::HostId;
use crate::store::sql::{OptionalExtension, params};
use crate::store::{Store, StoreError};
use crate::sync::LockUnpoisoned;

/// v12: every host process, its machine and its heartbeat.
pub(crate) const SCHEMA_V12: &str = "
CREATE TABLE hosts (
    id            TEXT PRIMARY KEY NOT NULL,
    machine       TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    process_start TEXT NOT NULL,
    started_at    INTEGER NOT NULL,
    heartbeat_at  INTEGER NOT NULL,
    skew_ms       INTEGER,
    gone_at       INTEGER
);";

/// The PostgreSQL spelling of [`SCHEMA_V12`].
pub(crate) const PG_SCHEMA_V12: &str = "
CREATE TABLE hosts (
    id            TEXT PRIMARY KEY NOT NULL,
    machine       TEXT NOT NULL,
    pid           BIGINT NOT NULL,
    process_start TEXT NOT NULL,
    started_at    BIGINT NOT NULL,
    heartbeat_at  BIGINT NOT NULL,
    skew_ms       BIGINT,
    gone_at       BIGINT
);";

/// How often a running host beats.
pub const BEAT: Duration = Duration::from_secs(2);
/// A heartbeat older than this is stale: three missed beats, and slack for a slow
/// store write or a small clock skew between the machines (`doctor` warns past 2 s).
pub const FRESH_FOR: Duration = Duration::from_secs(3 * 2 + 3);

/// What a host's row says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Beat {
    /// Its last heartbeat, by its own clock.
    pub heartbeat_at: i64,
    /// It exited cleanly.
    pub gone_at: Option<i64>,
}

/// The liveness rule. A host on this machine lives while its process does (the
/// /proc probe is exact, and the last word on "dead"); one on another machine
/// while its row's heartbeat is fresh and it has not left (`beat` reads the row,
/// only when it is needed; `None`: no row, so nothing shows it alive).
pub fn lives(host: &HostId, beat: impl FnOnce() -> Option<Beat>, now_ms: i64) -> bool {
    if host.is_on_this_machine() {
        return host.process_alive();
    }
    beat().is_some_and(|b| {
        b.gone_at.is_none() && now_ms - b.heartbeat_at <= FRESH_FOR.as_millis() as i64
    })
}

/// A host's row, as `doctor` lists the live ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostRow {
    pub id: String,
    pub machine: String,
    pub pid: u32,
    pub started_at: i64,
    pub heartbeat_at: i64,
    /// The database server's clock minus the host's, as it last measured it
    /// (`None`: the embedded file, or not measured yet).
    pub skew_ms: Option<i64>,
    /// A `missionboard host`'s width (0 = unlimited); `None` for a host that only
    /// runs what it fires (a board, a `mission fire`, an editor session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<i64>,
    /// The running missions a `missionboard host` counts against its width.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<i64>,
    /// The labels a `missionboard host` takes `--on` missions for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

/// The workspace half of a queue claim: a mission runs on a machine only where its
/// working directory exists.
pub fn workspace_exists_here(cwd: &str) -> bool {
    std::path::Path::new(cwd).is_dir()
}

impl HostRow {
    /// Would this host claim a queued mission placed `run_on` (`None`: anywhere) in
    /// workspace `cwd`? It must be a `missionboard host`, carry the label, and see the
    /// workspace on its machine — which can be looked at from here only for a host on
    /// this machine, so a host elsewhere is never counted on to.
    pub fn would_claim(&self, run_on: Option<&str>, cwd: &str) -> bool {
        self.width.is_some()
            && run_on.is_none_or(|l| self.labels.iter().any(|have| have == l))
            && self.machine == crate::host::machine_name()
            && workspace_exists_here(cwd)
    }
}

/// The hosts service over one store.
#[derive(Clone)]
pub struct Hosts {
    store: Store,
}

impl Hosts {
    pub fn new(store: Store) -> Hosts {
        Hosts { store }
    }

    /// Does `host` still live ([`lives`])? A row that cannot be read shows no host
    /// gone: nothing is taken over, or flagged, on a failed read.
    pub fn lives(&self, host: &HostId) -> bool {
        let mut unreadable = false;
        let alive = lives(
            host,
            || match self.beat_of(&host.id) {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(host = %host.id, "host liveness unreadable: {e}");
                    unreadable = true;
                    None
                }
            },
            clock::now_ms(),
        );
        alive || unreadable
    }

    /// The row of host `id` (`None`: never recorded).
    pub fn beat_of(&self, id: &str) -> Result<Option<Beat>, StoreError> {
        self.store.with(|c| {
            c.prepare_cached("SELECT heartbeat_at, gone_at FROM hosts WHERE id = ?1")?
                .query_row(params![id], |r| {
                    Ok(Beat {
                        heartbeat_at: r.get(0)?,
                        gone_at: r.get(1)?,
                    })
                })
                .optional()
        })
    }

    /// The hosts whose heartbeat is fresh, by machine.
    pub fn live(&self) -> Result<Vec<HostRow>, StoreError> {
        let since = clock::now_ms() - FRESH_FOR.as_millis() as i64;
        self.store.with(|c| {
            let mut s = c.prepare_cached(
                "SELECT id, machine, pid, started_at, heartbeat_at, skew_ms, width, load, labels FROM hosts
                 WHERE gone_at IS NULL AND heartbeat_at >= ?1 ORDER BY machine, started_at",
            )?;
            s.query_map(params![since], |r| {
                Ok(HostRow {
                    id: r.get(0)?,
                    machine: r.get(1)?,
                    pid: r.get(2)?,
                    started_at: r.get(3)?,
                    heartbeat_at: r.get(4)?,
                    skew_ms: r.get(5)?,
                    width: r.get(6)?,
                    load: r.get(7)?,
                    labels: r
                        .get::<Option<String>>(8)?
                        .and_then(|l| serde_json::from_str(&l).ok())
                        .unwrap_or_default(),
                })
            })?
            .collect()
        })
    }

    /// Is a `missionboard host` alive on this store that takes missions labelled
    /// `label` (`None`: any)? Such a host resumes the answered runs of dead hosts.
    pub fn queue_host_lives(&self, label: Option<&str>) -> Result<bool, StoreError> {
        Ok(self.live()?.iter().any(|h| {
            h.width.is_some() && label.is_none_or(|l| h.labels.iter().any(|have| have == l))
        }))
    }

    /// The first live `missionboard host` that [would claim](HostRow::would_claim) a
    /// queued mission placed `run_on` in workspace `cwd`.
    pub fn claimer_for(
        &self,
        run_on: Option<&str>,
        cwd: &str,
    ) -> Result<Option<HostRow>, StoreError> {
        Ok(self
            .live()?
            .into_iter()
            .find(|h| h.would_claim(run_on, cwd)))
    }

    /// Write (or rewrite) `host`'s row, beating now.
    pub fn announce(&self, host: &HostId) -> Result<(), StoreError> {
        let now = clock::now_ms();
        self.store.with(|c| {
            c.execute(
                "INSERT INTO hosts (id, machine, pid, process_start, started_at, heartbeat_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5)
                 ON CONFLICT (id) DO UPDATE SET heartbeat_at = ?5, gone_at = NULL",
                params![host.id, host.machine, host.pid, host.start, now],
            )
        })?;
        Ok(())
    }

    /// One heartbeat of host `id`, with the skew it measured.
    pub fn beat(&self, id: &str, skew_ms: Option<i64>) -> Result<(), StoreError> {
        self.store.with(|c| {
            c.execute(
                "UPDATE hosts SET heartbeat_at = ?2, skew_ms = ?3, gone_at = NULL WHERE id = ?1",
                params![id, clock::now_ms(), skew_ms],
            )
        })?;
        Ok(())
    }

    /// A `missionboard host` says what it takes: its width (0 = unlimited), how many
    /// running missions it counts against it, and its labels.
    pub fn advertise(
        &self,
        id: &str,
        width: u64,
        load: usize,
        labels: &[String],
    ) -> Result<(), StoreError> {
        let labels = serde_json::to_string(labels).unwrap_or_else(|_| "[]".into());
        self.store.with(|c| {
            c.execute(
                "UPDATE hosts SET width = ?2, load = ?3, labels = ?4 WHERE id = ?1",
                params![id, width as i64, load as i64, labels],
            )
        })?;
        Ok(())
    }

    /// Host `id` exited cleanly: it is gone at once, not once its beat goes stale.
    pub fn leave(&self, id: &str) -> Result<(), StoreError> {
        self.store.with(|c| {
            c.execute(
                "UPDATE hosts SET gone_at = ?2 WHERE id = ?1 AND gone_at IS NULL",
                params![id, clock::now_ms()],
            )
        })?;
        Ok(())
    }
}

/// The liveness of many hosts, each judged once (a board refresh, a listing).
pub struct Probe {
    hosts: Hosts,
    seen: HashMap<HostId, bool>,
}

impl Probe {
    pub fn new(store: Store) -> Probe {
        Probe {
            hosts: Hosts::new(store),
            seen: HashMap::new(),
        }
    }

    pub fn lives(&mut self, host: &HostId) -> bool {
        if let Some(&alive) = self.seen.get(host) {
            return alive;
        }
        let alive = self.hosts.lives(host);
        self.seen.insert(host.clone(), alive);
        alive
    }
}

/// This process beating as a host on one store, for as long as something that
/// hosts units there holds it. The last holder's drop stops the beat and marks the
/// host gone.
pub struct Heartbeat {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// One heartbeat per store per process, however many fleets share it.
fn beating() -> &'static Mutex<HashMap<String, Weak<Heartbeat>>> {
    static BEATING: OnceLock<Mutex<HashMap<String, Weak<Heartbeat>>>> = OnceLock::new();
    BEATING.get_or_init(Mutex::default)
}

impl Heartbeat {
    /// This process hosts units on `store`: announce it, and keep beating while the
    /// handle lives. A failed announcement is logged, not fatal — a host on this
    /// machine is judged by its process anyway.
    pub fn start(store: &Store) -> Arc<Heartbeat> {
        let key = format!("{:?}", store.location());
        let mut all = beating().lock_unpoisoned();
        if let Some(held) = all.get(&key).and_then(Weak::upgrade) {
            return held;
        }
        let me = HostId::current();
        let hosts = Hosts::new(store.clone());
        if let Err(e) = hosts.announce(&me) {
            tracing::warn!("host announcement failed: {e}");
        }
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("host-heartbeat".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(BEAT) {
                    let skew = hosts.store.clock_skew_ms().unwrap_or(None);
                    if let Err(e) = hosts.beat(&me.id, skew) {
                        tracing::warn!("host heartbeat failed: {e}");
                    }
                }
                if let Err(e) = hosts.leave(&me.id) {
                    tracing::warn!("host leave failed: {e}");
                }
            })
            .ok();
        let held = Arc::new(Heartbeat {
            stop: Some(stop),
            thread,
        });
        all.retain(|_, w| w.strong_count() > 0);
        all.insert(key, Arc::downgrade(&held));
        held
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            // The thread's last act is the leave write: wait for it, so a clean exit
            // reads as gone at once (off the async workers when dropped on one).
            crate::store::blocking_in_place(|| {
                let _ = t.join();
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elsewhere(id: &str) -> HostId {
        HostId {
            id: id.into(),
            machine: "elsewhere-not-this-machine".into(),
            pid: std::process::id(),
            start: "1".into(),
        }
    }

    const NOW: i64 = 1_000_000_000;

    #[test]
    fn a_host_on_another_machine_lives_while_its_heartbeat_is_fresh() {
        let host = elsewhere("h");
        let beat = |ago: Duration, gone_at| {
            move || {
                Some(Beat {
                    heartbeat_at: NOW - ago.as_millis() as i64,
                    gone_at,
                })
            }
        };
        assert!(lives(&host, beat(BEAT, None), NOW), "fresh");
        assert!(lives(&host, beat(FRESH_FOR, None), NOW), "at the edge");
        assert!(
            !lives(&host, beat(FRESH_FOR + Duration::from_millis(1), None), NOW),
            "stale"
        );
        assert!(!lives(&host, beat(BEAT, Some(NOW)), NOW), "left cleanly");
        assert!(!lives(&host, || None, NOW), "never recorded");
    }

    #[test]
    fn a_host_on_this_machine_is_judged_by_its_process_whatever_its_row_says() {
        let me = HostId::current();
        let stale = || {
            Some(Beat {
                heartbeat_at: 0,
                gone_at: Some(0),
            })
        };
        assert!(lives(&me, stale, NOW), "its process runs: alive");
        let dead = HostId {
            start: "not-its-start".into(),
            ..me.clone()
        };
        let fresh = || {
            Some(Beat {
                heartbeat_at: NOW,
                gone_at: None,
            })
        };
        assert!(
            !lives(&dead, fresh, NOW),
            "its pid is not that process: dead"
        );
        let legacy = HostId::local(me.pid, me.start.clone());
        assert!(
            lives(&legacy, || None, NOW),
            "an old record is this machine's"
        );
    }

    #[test]
    fn a_heartbeat_keeps_a_host_fresh_and_its_drop_marks_it_gone() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("b.db")).unwrap();
        let hosts = Hosts::new(store.clone());
        let me = HostId::current();
        let beat = Heartbeat::start(&store);
        let again = Heartbeat::start(&store);
        assert!(Arc::ptr_eq(&beat, &again), "one heartbeat per store");
        let live = hosts.live().unwrap();
        assert_eq!(live.len(), 1, "{live:?}");
        assert_eq!(
            (live[0].id.as_str(), live[0].machine.as_str()),
            (me.id.as_str(), me.machine.as_str())
        );
        drop((beat, again));
        assert!(hosts.beat_of(&me.id).unwrap().unwrap().gone_at.is_some());
        assert!(hosts.live().unwrap().is_empty());
    }

    #[test]
    fn a_queue_host_would_claim_only_what_its_labels_and_its_machine_allow() {
        let dir = tempfile::tempdir().unwrap();
        let here = dir.path().display().to_string();
        let host = |width: Option<i64>, machine: &str, labels: &[&str]| HostRow {
            id: "h".into(),
            machine: machine.into(),
            pid: 1,
            started_at: 0,
            heartbeat_at: 0,
            skew_ms: None,
            width,
            load: Some(0),
            labels: labels.iter().map(|l| l.to_string()).collect(),
        };
        let this = crate::host::machine_name();
        assert!(host(Some(2), this, &[]).would_claim(None, &here));
        assert!(host(Some(0), this, &["gpu"]).would_claim(Some("gpu"), &here));
        assert!(
            !host(Some(2), this, &["cpu"]).would_claim(Some("gpu"), &here),
            "its labels do not fit"
        );
        assert!(
            !host(None, this, &[]).would_claim(None, &here),
            "a board or an editor session claims nothing"
        );
        assert!(
            !host(Some(2), "elsewhere-not-this-machine", &[]).would_claim(None, &here),
            "a workspace on another machine cannot be seen from here"
        );
        let gone = dir.path().join("gone").display().to_string();
        assert!(
            !host(Some(2), this, &[]).would_claim(None, &gone),
            "no such workspace"
        );
    }

    #[test]
    fn a_stale_host_elsewhere_reads_gone_through_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("b.db")).unwrap();
        let hosts = Hosts::new(store.clone());
        let (fresh, stale) = (elsewhere("fresh"), elsewhere("stale"));
        hosts.announce(&fresh).unwrap();
        hosts.announce(&stale).unwrap();
        store
            .with(|c| c.execute("UPDATE hosts SET heartbeat_at = 0 WHERE id = 'stale'", []))
            .unwrap();
        assert!(hosts.lives(&fresh));
        assert!(!hosts.lives(&stale));
        assert!(!hosts.lives(&elsewhere("never-recorded")));
        let mut probe = Probe::new(store);
        assert!(probe.lives(&fresh) && !probe.lives(&stale));
    }
}
