//! The fleet: dispatching missions to units, driving them, answering their
//! permission requests, and tearing them down when their mission comes to rest.
//!
//! A fleet lives in one host process (`mission fire`, the board). Its units are
//! children of that process; when a mission rests — finished by its unit, stopped
//! from another terminal, reclaimed — the host that holds the unit reaps it, told by
//! the `status_changed` event on the shared bus.
//!
//! Admission is a reservation, not a lock: a dispatch takes a slot of fleet width
//! under a short lock (hosted units plus reserved slots stay within the cap), then
//! spawns its unit and runs the ACP handshake without holding anything, so a unit
//! slow to start delays no other fire. Hosting the unit converts the slot; any
//! failure gives it back. Every store call from the fleet's async code crosses
//! the blocking boundary ([`crate::store::boundary`]).
//!
//! One file per job: `admission` (validate, reserve width), `start` (start a unit
//! for a fresh mission or a resumed run), `hosting` (hold and drive it) and
//! `teardown` (reap it when its mission rests).

mod admission;
pub mod budget;
pub mod check;
pub mod confinement;
mod drive;
pub mod elicitations;
pub mod handshake;
mod hosting;
pub mod mission_tools;
mod normalise;
mod permissions;
pub mod prompts;
mod queued;
pub mod resources;
mod spend_admission;
mod start;
pub mod sweep;
mod teardown;

pub use spend_admission::QueueGate;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::acp_client::{Unit, UnitSpec, mission_meta};
use crate::agents::{AgentCaps, Registry};
use crate::asks::Asks;
use crate::asks::checkpoint::Checkpoint;
use crate::config::Config;
use crate::envelope::format::ComputeBounds;
use crate::envelope::search;
use crate::mission::{EnvelopeName, Intent, Missions, NewMission, subjects};
use crate::mission_mcp::{
    MissionToolHandler, bridge_server_entry, serve_mission_socket, socket_path_for,
};
use crate::paths::Paths;
use crate::store::{Store, blocking};
use crate::sync::LockUnpoisoned;
use mission_tools::MissionToolCalls;

/// What a surface asks the fleet to do.
#[derive(Debug, Clone)]
pub struct DispatchRequest {
    pub agent_name: String,
    pub intent: Intent,
    /// The envelope as named; the fleet never picks one itself.
    pub envelope: EnvelopeName,
    /// Absolute working directory for the unit; empty means the host's.
    pub cwd: Option<PathBuf>,
    /// Work in a git worktree of its own (else the envelope's `workspace` decides).
    pub worktree: bool,
    /// The check it must pass to land: the envelope's, the fire's own, or none.
    pub check: crate::mission::check::CheckChoice,
    /// Extra roots (`--add-dir`): existing directories, canonical, outside the
    /// missionboard home (the operations layer checks them).
    pub add_dirs: Vec<PathBuf>,
}

/// A dispatch refused for a name it carries: the facts, which the operations layer
/// words for the surface that fired (naming the flag or field the operator typed
/// it in). `Display` is the fleet's own wording, for a caller that fires directly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameRefused {
    /// The agent name is blank.
    NoAgent,
    /// No declaration and no catalogue entry answers to the agent's name.
    UnknownAgent {
        name: String,
        /// The agents declared in agents.toml, sorted.
        declared: Vec<String>,
    },
    /// The envelope did not load.
    Envelope {
        name: String,
        why: String,
        /// The envelope files on the search path, as listed.
        on_path: Vec<String>,
    },
}

impl std::fmt::Display for NameRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameRefused::NoAgent => {
                write!(
                    f,
                    "no mission agent named: a mission needs the agent it runs"
                )
            }
            NameRefused::UnknownAgent { name, declared } => {
                write!(f, "resolve agent {name:?}: not found")?;
                if declared.is_empty() {
                    write!(
                        f,
                        " — no agents are declared; run 'missionboard init' to seed agents.toml"
                    )
                } else {
                    write!(
                        f,
                        " — declared agents: {} (see 'missionboard agent list')",
                        declared.join(", ")
                    )
                }
            }
            NameRefused::Envelope { name, why, .. } => write!(
                f,
                "mission envelope {name:?} could not be loaded: {why} — name an envelope on the search path (`--policy <envelope>`; `missionboard vet --all` checks every envelope)"
            ),
        }
    }
}

impl std::error::Error for NameRefused {}

/// A dispatched mission.
#[derive(Debug, Clone)]
pub struct Dispatched {
    pub mission_id: String,
    pub instance_id: String,
    pub session_id: String,
    /// What the agent said about itself (its session models, as selected).
    pub caps: AgentCaps,
    /// The envelope's compute bounds the mission runs under.
    pub compute: ComputeBounds,
    /// The sandbox its unit runs in.
    pub sandbox: crate::envelope::sandbox::Resolved,
    /// The git worktree it works in, when it was fired with one.
    pub worktree: Option<crate::worktree::Worktree>,
    /// How its unit reopened the session a requeued mission ran in before (the ACP
    /// method: `session/resume` or `session/load`); `None`: it opened a new one.
    pub session_reopened: Option<&'static str>,
}

/// What a dispatch records beside the agent and envelope it resolved.
struct Record {
    intent: Intent,
    /// The envelope's name as it was fired (what the mission row records).
    envelope: EnvelopeName,
    /// The firing session, for a mission fired from one.
    parent_session_id: Option<String>,
    /// The mission row exists already (claimed from the queue): the started unit
    /// is bound to it instead of a row being created.
    claimed: bool,
    /// The session a requeued mission ran in before, loaded when the agent can
    /// load sessions (else a fresh one opens).
    load_session: Option<String>,
    /// The check a fresh mission is recorded with (a claimed one's was recorded
    /// when it was queued).
    check: Option<crate::mission::check::NewCheck>,
    /// A fresh mission's extra roots (`--add-dir`), recorded with it; `None`: a
    /// claimed one's, read from its record.
    roots: Option<Vec<PathBuf>>,
    /// A revise the unit takes up (`mission revise`): its feedback opens the run,
    /// in the workspace the mission already has.
    revise: Option<crate::mission::revise::Run>,
}

/// A unit whose session is open, not yet driven.
struct Started {
    unit: Unit,
    socket: crate::mission_mcp::MissionSocket,
    session_id: String,
    instance_id: String,
    cwd: String,
    /// `{tmp}`: lives as long as the unit's drive task.
    tmp: confinement::MissionTmp,
    sandbox: crate::envelope::sandbox::Resolved,
    /// Where the host hands the unit's mission tools its budget and mission row.
    link: Arc<mission_tools::HostLink>,
    /// The model the native agent was declared with (it advertises no session
    /// models): what its spend is priced at.
    declared_model: Option<String>,
}

impl Started {
    /// The models the unit offers and the one it runs on, for its compute record:
    /// what the agent advertised, else the native agent's declared model.
    fn models(&self) -> (Option<Vec<String>>, Option<String>) {
        match self.unit.capabilities().offered_models() {
            Some(m) => (Some(m.available.clone()), Some(m.current.clone())),
            None => (None, self.declared_model.clone()),
        }
    }
}

/// What a parked run's unit would be started with here: its agent as declared on
/// this machine and its envelope, loaded once by the check that it can start.
#[derive(Debug, Clone)]
pub struct Startable {
    agent: crate::agents::Agent,
    envelope: search::Loaded,
}

impl Startable {
    /// The envelope it would start under, as loaded.
    pub fn envelope(&self) -> &search::Loaded {
        &self.envelope
    }
}

/// What a resumed run's fresh unit starts with.
struct Resume {
    mission: crate::mission::Mission,
    envelope: search::Loaded,
    agent: crate::agents::Agent,
    /// The first turn of a fresh session: the brief, the preamble, the intent.
    brief: Vec<String>,
    /// The first turn of the agent's own session, loaded: the answer alone.
    answer_turn: String,
}

/// A unit this host holds.
struct Hosted {
    stop: watch::Sender<bool>,
    /// Why the drive loop has nothing more to do while the mission is open.
    idle: watch::Receiver<Option<String>>,
    done: tokio::task::JoinHandle<()>,
}

/// The fleet width this host uses: the units it holds, and the slots reserved by
/// dispatches whose unit is still starting.
#[derive(Default)]
struct Units {
    hosted: HashMap<String, Hosted>,
    starting: usize,
}

impl Units {
    fn open(&self) -> usize {
        self.hosted.len() + self.starting
    }
}

/// A slot of fleet width held by a dispatch while its unit starts. Dropped — the
/// start failed, the fire was refused, the dispatch was abandoned — it gives the
/// slot back; [`Reservation::fulfil`] converts it into the hosted unit's width.
struct Reservation {
    inner: Arc<Inner>,
    held: bool,
    /// The mission whose memory hold goes back with the slot if its unit never starts.
    mission_id: String,
}

impl Reservation {
    /// The unit is hosted: its entry now holds the width (under the same lock).
    fn fulfil(mut self, units: &mut Units) {
        units.starting -= 1;
        self.held = false;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.held {
            self.inner.gauge.release_unstarted(&self.mission_id);
            self.inner.units.lock_unpoisoned().starting -= 1;
            self.inner.units_left.notify_waiters();
        }
    }
}

struct Inner {
    paths: Paths,
    missions: Missions,
    asks: Asks,
    max_parallel: u64,
    ask_ceiling: Option<Duration>,
    park_window: Duration,
    self_exe: PathBuf,
    units: Mutex<Units>,
    /// What the units use, sampled, and `fleet-max-memory` admission.
    gauge: resources::Gauge,
    /// Told whenever a unit or a starting slot leaves `units`, so a wait for the
    /// fleet (or one unit) to be gone is woken by the change, not a poll.
    units_left: tokio::sync::Notify,
    /// This process beats as a host while any fleet of it lives, so a host or
    /// board on another machine can tell it runs.
    _heartbeat: Arc<crate::mission::hosts::Heartbeat>,
}

/// One host's fleet. Cheap to clone.
#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

impl Fleet {
    /// Build a fleet over the store. The width cap is read once, here.
    pub fn new(paths: Paths, store: Store) -> anyhow::Result<Fleet> {
        let exe = std::env::current_exe()
            .map_err(|e| anyhow::anyhow!("cannot locate the missionboard binary: {e}"))?;
        Fleet::with_executable(paths, store, exe)
    }

    /// A fleet whose units reach their mission tools through `exe mcp-bridge` — the
    /// missionboard binary, when the host embedding the fleet is another program.
    pub fn with_executable(paths: Paths, store: Store, exe: PathBuf) -> anyhow::Result<Fleet> {
        let config = Config::new(store.clone());
        let fleet = Fleet {
            inner: Arc::new(Inner {
                max_parallel: config.fleet_max_parallel()?,
                ask_ceiling: config.approval_ceiling()?,
                park_window: config.ask_park_window()?,
                missions: Missions::new(store.clone()),
                _heartbeat: crate::mission::hosts::Heartbeat::start(&store),
                asks: Asks::new(store),
                self_exe: exe,
                paths,
                units: Mutex::default(),
                gauge: resources::Gauge::new(config.fleet_max_memory()?),
                units_left: tokio::sync::Notify::new(),
            }),
        };
        // Host boot reconciles: expired asks take their on-timeout verdict, and
        // missions whose hosts died are collected. Neither ever fails the host.
        if let Err(e) = fleet.inner.asks.sweep_expired() {
            tracing::warn!("boot ask sweep failed: {e}");
        }
        match sweep::reclaim(&fleet.inner.missions, &fleet.inner.asks) {
            Ok(n) if n > 0 => tracing::info!("boot sweep reclaimed {n} mission(s)"),
            Ok(_) => {}
            Err(e) => tracing::warn!("boot sweep failed: {e}"),
        }
        confinement::sweep_leftover_tmp(&fleet.inner.missions);
        Ok(fleet)
    }

    pub fn missions(&self) -> &Missions {
        &self.inner.missions
    }

    pub fn asks(&self) -> &Asks {
        &self.inner.asks
    }
}
