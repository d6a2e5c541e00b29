//! The process context every surface holds and every verb takes: this process's
//! paths and store, the fleet that holds its units (started when the process opens
//! it, or for a one-shot command on first need), and the oracle when one is
//! mounted on that fleet. A surface opens one ([`Host::open`]), hands it to the
//! verbs, and closes it ([`Host::close`]) on its way out; it never builds a fleet or
//! reaches into one itself.
//!
//! Three things are called "host" and keep distinct names: `missionboard host` (the
//! queue's long-lived process, module `daemon`), this context (`ops::Host`), and a
//! process's record in the store (`mission::hosts`, keyed by `host::HostId`).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use crate::asks::Asks;
use crate::fleet::Fleet;
use crate::mission::Missions;
use crate::oracle::{Mounted, Oracle};
use crate::paths::Paths;
use crate::store::Store;
use crate::sync::LockUnpoisoned;

/// How a process hosts units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hosting {
    /// A one-shot command: no fleet (no boot sweeps, no heartbeat) until a run
    /// must resume here, and that fleet lives only for the runs it resumes: each is
    /// driven to the end of its turn and its unit reaped before the verb returns.
    OnNeed,
    /// A process that hosts units (`mission fire`, the board, the editor server,
    /// the bench): its fleet starts at once and reaps units whose mission rests.
    Units,
    /// `missionboard host`: a fleet that claims queued missions and resumes the
    /// answered runs of hosts that are gone.
    Queue,
}

/// This process's one host: cheap to clone, every clone the same.
#[derive(Clone)]
pub struct Host(Arc<Inner>);

struct Inner {
    paths: Paths,
    store: Store,
    missions: Missions,
    hosting: Hosting,
    fleet: OnceLock<Fleet>,
    /// The fleet's reaper of resting missions' units (hosting processes).
    teardown: Mutex<Option<tokio::task::JoinHandle<()>>>,
    oracle: Mutex<Option<Mounted>>,
}

impl Host {
    /// Open this process's host. For [`Hosting::Units`] and [`Hosting::Queue`] the
    /// fleet starts now (its boot sweeps are store work: call this off the async
    /// workers) and, inside a runtime (entered, or on its blocking pool), its
    /// teardown is spawned: it reaps the units whose mission rests anywhere.
    pub fn open(paths: &Paths, store: &Store, hosting: Hosting) -> anyhow::Result<Host> {
        let fleet = OnceLock::new();
        let teardown = Mutex::new(None);
        let started = match hosting {
            Hosting::OnNeed => None,
            Hosting::Units => Some(Fleet::new(paths.clone(), store.clone())?),
            Hosting::Queue => Some(Fleet::for_host(paths.clone(), store.clone())?),
        };
        if let Some(f) = started {
            if tokio::runtime::Handle::try_current().is_ok() {
                *teardown.lock_unpoisoned() = Some(f.spawn_teardown());
            }
            let _ = fleet.set(f);
        }
        Ok(Host(Arc::new(Inner {
            paths: paths.clone(),
            store: store.clone(),
            missions: Missions::new(store.clone()),
            hosting,
            fleet,
            teardown,
            oracle: Mutex::default(),
        })))
    }

    /// A [`Hosting::Units`] host over `fleet`, built apart (one whose units run
    /// another executable, as the black-box tests build it). Its teardown is the
    /// caller's.
    pub fn over(paths: &Paths, fleet: Fleet) -> Host {
        let store = fleet.missions().store().clone();
        Host(Arc::new(Inner {
            paths: paths.clone(),
            missions: Missions::new(store.clone()),
            store,
            hosting: Hosting::Units,
            fleet: OnceLock::from(fleet),
            teardown: Mutex::default(),
            oracle: Mutex::default(),
        }))
    }

    /// A host of its own over a new connection to the same store, with the same
    /// paths and no fleet: what a thread that only reads holds (the board's
    /// snapshot thread), so its reads never queue behind this host's writes.
    pub fn reader(&self) -> anyhow::Result<Host> {
        let store = Store::open_at(self.0.store.location())?;
        Host::open(&self.0.paths, &store, Hosting::OnNeed)
    }

    pub fn paths(&self) -> &Paths {
        &self.0.paths
    }

    pub fn store(&self) -> &Store {
        &self.0.store
    }

    /// The mission service: the fleet's once there is one, so a stop here reaches
    /// this process's units through the same bus handle.
    pub fn missions(&self) -> &Missions {
        match self.0.fleet.get() {
            Some(f) => f.missions(),
            None => &self.0.missions,
        }
    }

    /// The ask service answers go through: the fleet's, once there is one, so a
    /// unit waiting on the ask in this process is woken at once.
    pub fn asks(&self) -> Asks {
        match self.0.fleet.get() {
            Some(f) => f.asks().clone(),
            None => Asks::new(self.0.store.clone()),
        }
    }

    pub fn hosting(&self) -> Hosting {
        self.0.hosting
    }

    /// The fleet, started on first need (its boot sweeps are store work: call this
    /// off the async workers).
    pub(crate) fn fleet(&self) -> anyhow::Result<Fleet> {
        if let Some(f) = self.0.fleet.get() {
            return Ok(f.clone());
        }
        let started = Fleet::new(self.0.paths.clone(), self.0.store.clone())?;
        Ok(self.0.fleet.get_or_init(|| started).clone())
    }

    /// The fleet if it has started (a hosting process's always has).
    pub(crate) fn started_fleet(&self) -> Option<&Fleet> {
        self.0.fleet.get()
    }

    /// Units running in this process (none before its fleet starts).
    pub fn open_units(&self) -> usize {
        self.started_fleet().map_or(0, Fleet::open_units)
    }

    /// The resident memory this process's units use now (sampled; none before its
    /// fleet starts).
    pub fn units_memory(&self) -> u64 {
        self.started_fleet().map_or(0, |f| f.memory_load().in_use)
    }

    /// The missions whose unit this process holds.
    pub fn hosted_missions(&self) -> Vec<String> {
        self.started_fleet()
            .map(Fleet::hosted_missions)
            .unwrap_or_default()
    }

    /// Whether this process holds the unit of `mission_id`.
    pub fn holds(&self, mission_id: &str) -> bool {
        self.started_fleet().is_some_and(|f| f.holds(mission_id))
    }

    /// Why nothing will move mission `mission_id` held here, if nothing will.
    pub fn idle_reason(&self, mission_id: &str) -> Option<String> {
        self.started_fleet()?.idle_reason(mission_id)
    }

    /// Wait until this process's unit of `mission_id` ends its turn (or is gone).
    pub async fn wait_unit(&self, mission_id: &str) {
        if let Some(f) = self.started_fleet() {
            f.wait_unit(mission_id).await;
        }
    }

    /// Wait until every unit this process holds is gone.
    pub async fn wait_all_units(&self) {
        if let Some(f) = self.started_fleet() {
            f.wait_all_units().await;
        }
    }

    /// Hold `mounted`, the oracle now reviewing this host's questions
    /// ([`crate::ops::answer::start_oracle`]); one mounted before is unmounted.
    pub(crate) fn hold_oracle(&self, mounted: Mounted) {
        if let Some(before) = self.0.oracle.lock_unpoisoned().replace(mounted) {
            before.unmount("another oracle was mounted");
        }
    }

    /// Whether an oracle is mounted here.
    pub fn oracle_mounted(&self) -> bool {
        self.0.oracle.lock_unpoisoned().is_some()
    }

    /// The ask the mounted oracle is reviewing and when the review's budget ends: a
    /// fire that would end sooner waits for it rather than cut it short.
    pub fn review_in_flight(&self) -> Option<(String, Instant)> {
        self.0
            .oracle
            .lock_unpoisoned()
            .as_ref()
            .and_then(Mounted::review_in_flight)
    }

    /// Unmount the oracle, if one is mounted; a review it cuts short says `why` in
    /// its trace.
    pub fn unmount_oracle(&self, why: &str) {
        if let Some(m) = self.0.oracle.lock_unpoisoned().take() {
            m.unmount(why);
        }
    }

    /// Close the host: the oracle is unmounted (saying `why` in a review it cuts
    /// short), every unit it holds is reaped and waited for, and its teardown ends.
    pub async fn close(&self, why: &str) {
        self.unmount_oracle(why);
        if let Some(f) = self.started_fleet() {
            f.shutdown().await;
        }
        if let Some(t) = self.0.teardown.lock_unpoisoned().take() {
            t.abort();
        }
    }
}

/// The oracle, loaded and ready to be started on a host
/// ([`crate::ops::answer::start_oracle`]).
/// Mounted before anything is fired: a chain or envelope that cannot load refuses
/// the mount whole.
pub fn mount_oracle(paths: &Paths, store: &Store) -> anyhow::Result<Oracle> {
    Oracle::mount(paths, store)
}
