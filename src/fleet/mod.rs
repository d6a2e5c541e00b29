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

pub mod budget;
pub mod confinement;
mod drive;
pub mod handshake;
pub mod mission_tools;
mod normalise;
mod permissions;
pub mod prompts;
mod queued;
pub mod resume;
pub mod sweep;

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
use crate::envelope::policy::ComputeBounds;
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
}

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
}

/// What a dispatch records beside the agent and envelope it resolved.
struct Record {
    intent: Intent,
    /// The firing session, for a mission fired from one.
    parent_session_id: Option<String>,
    /// The mission row exists already (claimed from the queue): the started unit
    /// is bound to it instead of a row being created.
    claimed: bool,
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
            self.inner.units.lock_unpoisoned().starting -= 1;
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

    /// Does this host hold the unit of `mission_id` (it dispatched or resumed it)?
    pub fn holds(&self, mission_id: &str) -> bool {
        self.inner
            .units
            .lock_unpoisoned()
            .hosted
            .contains_key(mission_id)
    }

    /// The missions whose units this host holds (dispatched or resumed here).
    pub fn hosted_missions(&self) -> Vec<String> {
        let units = self.inner.units.lock_unpoisoned();
        units.hosted.keys().cloned().collect()
    }

    /// Units this host holds right now, starting ones included (each holds fleet
    /// width until it is reaped, or its start fails).
    pub fn open_units(&self) -> usize {
        self.inner.units.lock_unpoisoned().open()
    }

    /// Reserve a slot of fleet width, or refuse the fire at the cap. Nothing waits.
    fn reserve(&self) -> anyhow::Result<Reservation> {
        let max = self.inner.max_parallel;
        let mut units = self.inner.units.lock_unpoisoned();
        let open = units.open() as u64;
        if max > 0 && open >= max {
            anyhow::bail!(
                "conflict: fleet admission refused: {open} units are already open, at the fleet-width cap (fleet-max-parallel={max}). Wait for a unit to conclude or stop one, or raise the cap: `missionboard config set fleet-max-parallel <N>` (0 = unlimited)."
            );
        }
        units.starting += 1;
        Ok(Reservation {
            inner: self.inner.clone(),
            held: true,
        })
    }

    /// Dispatch a mission: validate, admit, start the unit, record the mission, and
    /// start driving it. A refusal leaves no record and no process.
    pub async fn dispatch(&self, req: DispatchRequest) -> anyhow::Result<Dispatched> {
        self.dispatch_parented(req, None).await
    }

    /// [`Fleet::dispatch`] from a firing session: the mission records `parent` as its
    /// parent session, so its reports stream there while that session lives.
    pub async fn dispatch_for_session(
        &self,
        req: DispatchRequest,
        parent: &str,
    ) -> anyhow::Result<Dispatched> {
        self.dispatch_parented(req, Some(parent.to_string())).await
    }

    async fn dispatch_parented(
        &self,
        req: DispatchRequest,
        parent_session_id: Option<String>,
    ) -> anyhow::Result<Dispatched> {
        let inner = &self.inner;
        let agent_name = req.agent_name.trim().to_string();
        if agent_name.is_empty() {
            anyhow::bail!("missing parameter: agentName: agentName is required");
        }
        let policy_name = req.envelope.as_str();
        let envelope = search::load(&inner.paths, policy_name).map_err(|e| {
            anyhow::anyhow!(
                "invalid parameter value: hitlPolicyName: hitl policy {policy_name:?} could not be loaded: it must name an existing policy (see `missionboard vet --all` / the .missionboard policy files) — {e}"
            )
        })?;
        let cwd = match req.cwd {
            Some(c) if !c.is_absolute() => {
                anyhow::bail!(
                    "cwd must be an absolute path, got {:?}",
                    c.display().to_string()
                )
            }
            Some(c) => c,
            None => inner.paths.cwd.clone(),
        };
        let agent = self.resolve_agent(&agent_name)?;
        let record = Record {
            intent: req.intent,
            parent_session_id,
            claimed: false,
        };
        let mission_id = uuid::Uuid::new_v4().to_string();
        self.admit(record, mission_id, (agent, envelope), cwd, req.worktree)
            .await
    }

    /// Take a slot of width, make the mission's worktree when it wants one, and
    /// start it; a refusal gives the slot back and removes the worktree.
    async fn admit(
        &self,
        record: Record,
        mission_id: String,
        (agent, envelope): (crate::agents::Agent, search::Loaded),
        cwd: PathBuf,
        wants_worktree: bool,
    ) -> anyhow::Result<Dispatched> {
        let inner = &self.inner;
        let slot = self.reserve()?;
        let worktree = if wants_worktree
            || envelope.policy.workspace == crate::envelope::sandbox::WorkspaceMode::Worktree
        {
            let worktrees = crate::worktree::Worktrees::new(inner.missions.store().clone());
            let (repo, id) = (cwd.clone(), mission_id.clone());
            Some(blocking(move || worktrees.create(&repo, &id)).await?)
        } else {
            None
        };
        let cwd = worktree.as_ref().map_or(cwd, |w| w.path.clone());
        let dispatched = self
            .dispatch_admitted(
                record,
                mission_id,
                (agent, envelope),
                cwd,
                worktree.clone(),
                slot,
            )
            .await;
        if dispatched.is_err()
            && let Some(wt) = worktree
        {
            let worktrees = crate::worktree::Worktrees::new(inner.missions.store().clone());
            blocking(move || worktrees.abandon(&wt)).await;
        }
        dispatched
    }

    /// Start, check and record an admitted mission in `cwd`. A refusal here leaves no
    /// record and no process (the caller removes a worktree made for it).
    async fn dispatch_admitted(
        &self,
        record: Record,
        mission_id: String,
        (agent, envelope): (crate::agents::Agent, search::Loaded),
        cwd: PathBuf,
        worktree: Option<crate::worktree::Worktree>,
        slot: Reservation,
    ) -> anyhow::Result<Dispatched> {
        let inner = &self.inner;
        let (agent_name, policy_name) = (agent.name.clone(), envelope.name.clone());
        let mut started = self
            .start_unit(&mission_id, &agent, &cwd, &envelope.policy, None)
            .await?;
        // The model allowlist is held on the started unit, before the mission row
        // exists: only a running agent says which models it offers, and a refused
        // fire must leave no record (the unit is reaped, the socket removed).
        let compute = envelope.policy.compute.clone();
        if let Err(e) = budget::select_allowed_model(&mut started.unit, &compute, &agent_name).await
        {
            started.unit.shutdown().await;
            return Err(e);
        }
        let new = NewMission {
            id: mission_id.clone(),
            intent: record.intent.as_str().to_string(),
            agent_name: agent_name.clone(),
            policy_name: policy_name.clone(),
            cwd: cwd.display().to_string(),
            session_id: Some(started.session_id.clone()),
            instance_id: Some(started.instance_id.clone()),
            parent_session_id: record.parent_session_id,
        };
        let missions = inner.missions.clone();
        let claimed = record.claimed;
        let mission = match blocking(move || {
            if claimed {
                missions.bind_claimed(&new)
            } else {
                missions.create(new)
            }
        })
        .await
        {
            Ok(m) => m,
            Err(e) => {
                started.unit.shutdown().await;
                return Err(e.into());
            }
        };
        let (session_id, instance_id) = (started.session_id.clone(), started.instance_id.clone());
        let caps = started.unit.capabilities().clone();
        let sandbox = started.sandbox.clone();
        self.host(
            started,
            mission,
            envelope,
            drive::Opening::Fresh,
            Some(slot),
        )
        .await;
        Ok(Dispatched {
            mission_id,
            instance_id,
            session_id,
            caps,
            compute,
            sandbox,
            worktree,
        })
    }

    /// Resume a run parked on `ask_id` whose host is gone: claim the checkpoint
    /// (exactly one resumer wins), start the mission's agent afresh with a brief of
    /// what happened and the operator's answer, and drive it until its turn ends or
    /// the mission rests (await it with [`Fleet::wait_unit`]). `Ok(false)` when there
    /// is nothing to resume, or another process holds the claim.
    pub async fn resume_parked(&self, ask_id: &str) -> anyhow::Result<bool> {
        let (asks, id) = (self.inner.asks.clone(), ask_id.to_string());
        let claimed = blocking(move || -> anyhow::Result<_> {
            let Some(cp) = asks.checkpoint(&id)? else {
                return Ok(None);
            };
            Ok(asks.claim_checkpoint(&id)?.then_some(cp))
        })
        .await?;
        let Some(cp) = claimed else {
            return Ok(false);
        };
        let attempt = async {
            let (fleet, id, parked) = (self.clone(), ask_id.to_string(), cp.clone());
            let Some(resume) = blocking(move || fleet.prepare_resume(&id, &parked)).await? else {
                return Ok(false);
            };
            let cwd = if cp.cwd.is_empty() {
                self.inner.paths.cwd.clone()
            } else {
                PathBuf::from(&cp.cwd)
            };
            let Resume {
                mission,
                envelope,
                agent,
                brief,
                answer_turn,
            } = resume;
            // The agent's own session when it can load it: the unit carries on as
            // a live host's would, told only the answer. Else a fresh session,
            // briefed on what happened.
            let mut started = match self
                .start_unit(
                    &mission.id,
                    &agent,
                    &cwd,
                    &envelope.policy,
                    Some(&cp.session_id),
                )
                .await
            {
                Ok(started) => started,
                Err(e) => {
                    tracing::warn!(mission = %mission.id, "could not load session {}; starting a fresh one: {e}", cp.session_id);
                    self.start_unit(&mission.id, &agent, &cwd, &envelope.policy, None)
                        .await?
                }
            };
            let blocks = if started.unit.loaded() {
                vec![answer_turn]
            } else {
                brief
            };
            if let Err(e) = budget::select_allowed_model(
                &mut started.unit,
                &envelope.policy.compute,
                &mission.agent_name,
            )
            .await
            {
                started.unit.shutdown().await;
                return Err(e);
            }
            let (missions, session, instance) = (
                self.inner.missions.clone(),
                started.session_id.clone(),
                started.instance_id.clone(),
            );
            let mission =
                blocking(move || missions.rebind(&mission.id, &session, &instance)).await?;
            let opening = drive::Opening::Resumed {
                blocks,
                ask_id: ask_id.to_string(),
            };
            self.host(started, mission, envelope, opening, None).await;
            Ok::<_, anyhow::Error>(true)
        };
        match attempt.await {
            Ok(resumed) => Ok(resumed),
            Err(e) => {
                let (asks, id, failure) =
                    (self.inner.asks.clone(), ask_id.to_string(), e.to_string());
                let _ = blocking(move || asks.fail_checkpoint(&id, &failure)).await;
                Err(e)
            }
        }
    }

    /// The store-bound half of a resume, once its checkpoint is claimed: what the
    /// fresh unit is started with, or `None` when the mission needs no unit (it is
    /// at rest, or its compute-bound question settled it).
    fn prepare_resume(&self, ask_id: &str, cp: &Checkpoint) -> anyhow::Result<Option<Resume>> {
        let inner = &self.inner;
        let mission = inner.missions.require(&cp.mission_id)?;
        if mission.status.is_terminal() {
            inner.asks.drop_checkpoint(ask_id)?;
            return Ok(None);
        }
        let envelope =
            search::load(&inner.paths, &mission.hitl_policy_name).map_err(anyhow::Error::msg)?;
        let agent = self.resolve_agent(&mission.agent_name)?;
        let ask = inner.asks.require(ask_id)?;
        if ask.is_budget()
            && !self.settle_budget_question(&mission.id, &ask, &envelope.policy.compute)?
        {
            inner.asks.drop_checkpoint(ask_id)?;
            return Ok(None);
        }
        if ask.is_question() && ask.answer().is_none() {
            inner.missions.add_blocker(&mission.id, crate::asks::one_line_summary(&ask.args_summary), format!(
                        "(the unit asked for an operator and got no answer: the question was {} before anyone answered it)",
                        ask.state.as_str()
                    ))?;
        }
        let reports = inner.missions.reports(&mission.id, 50)?;
        let brief = vec![
            prompts::resume_brief(&reports, &ask),
            prompts::PREAMBLE.to_string(),
            mission.intent.clone(),
        ];
        Ok(Some(Resume {
            mission,
            envelope,
            agent,
            brief,
            answer_turn: prompts::resume_turn(&ask),
        }))
    }

    /// Settle the compute-bound question `ask` of a mission whose host is gone: an
    /// extension is recorded on the mission (the resumed unit runs under it), a
    /// "stop" — or a question that closed unanswered — finishes it stuck with the
    /// reason the bound gave. Returns whether the mission goes on.
    fn settle_budget_question(
        &self,
        mission_id: &str,
        ask: &crate::asks::Ask,
        envelope: &ComputeBounds,
    ) -> anyhow::Result<bool> {
        let ledger = budget::ComputeLedger::new(self.inner.missions.store().clone());
        let Some(record) = ledger.get(mission_id)? else {
            return Ok(false);
        };
        let Some(pause) = record.pause.clone() else {
            // Settled already (the checkpoint claim makes that unlikely; be safe).
            return Ok(false);
        };
        let limit = pause.field.limit(&record.apply(envelope));
        let raised = budget::settle_pause(
            &ledger,
            &self.inner.missions,
            ask,
            pause.field,
            limit,
            &pause.reason,
        )?;
        Ok(raised.is_some())
    }

    /// Could this process start the unit of `mission_id` again (its agent declared
    /// here and its command found, its envelope loadable)?
    pub fn can_resume(&self, mission_id: &str) -> anyhow::Result<()> {
        let m = self.inner.missions.require(mission_id)?;
        let agent = self.resolve_agent(&m.agent_name)?;
        // A declaration copied from another machine may name a command this one
        // lacks: refuse before an answer is spent on a start that must fail.
        let program = agent.program();
        if crate::paths::locate_program(
            &program.to_string_lossy(),
            Some(std::path::Path::new(&m.cwd)),
        )
        .is_none()
        {
            anyhow::bail!(
                "agent {:?}: its command {:?} is not found on this machine (not on PATH)",
                agent.name,
                agent.command
            );
        }
        search::load(&self.inner.paths, &m.hitl_policy_name).map_err(anyhow::Error::msg)?;
        Ok(())
    }

    /// Wait until this host no longer holds a unit for `mission_id`.
    pub async fn wait_unit(&self, mission_id: &str) {
        while self.holds(mission_id) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn resolve_agent(&self, name: &str) -> anyhow::Result<crate::agents::Agent> {
        let registry = Registry::load(&self.inner.paths)?;
        // A catalogue agent needs no declaration: agents.toml only overrides it.
        if let Some(agent) = registry
            .get(name)
            .or_else(|| crate::agents::catalogue::get(name))
        {
            return Ok(agent.clone());
        }
        let known = registry.names();
        let hint = if known.is_empty() {
            " — no agents are declared; run 'missionboard init' to seed agents.toml".to_string()
        } else {
            format!(
                " — declared agents: {} (see 'missionboard agent list')",
                known.join(", ")
            )
        };
        anyhow::bail!("resolve agent {name:?}: not found{hint}")
    }

    /// Serve the mission's socket and start its agent with a session pointed at it:
    /// session `load` when given and the agent can load sessions, else a new one.
    async fn start_unit(
        &self,
        mission_id: &str,
        agent: &crate::agents::Agent,
        cwd: &std::path::Path,
        policy: &crate::envelope::Policy,
        load: Option<&str>,
    ) -> anyhow::Result<Started> {
        let inner = &self.inner;
        let agent = &agent.for_unit()?;
        let (declared, config) = (agent.clone(), Config::new(inner.missions.store().clone()));
        let worktrees = crate::worktree::Worktrees::new(inner.missions.store().clone());
        let (paths, exe, decl, dir) = (
            inner.paths.clone(),
            inner.self_exe.clone(),
            policy.sandbox_or_baseline(),
            cwd.to_path_buf(),
        );
        let id = mission_id.to_string();
        // Store reads, the temp dir and the ruleset's path fds: all blocking work.
        let (env, tmp, confined) = blocking(move || {
            let tmp = confinement::MissionTmp::create(&id)?;
            let env = declared.unit_env(Some(&config), tmp.path())?;
            let model_url = match env.get(crate::agents::ENV_BASE_URL) {
                Some(url) => Some(url.clone()),
                None => config.get(crate::config::MODEL_BASE_URL)?,
            };
            // A worktree mission's unit may commit on its own branch.
            let commit = match worktrees.get(&id)? {
                Some(wt) => crate::worktree::commit_access(&wt)?,
                None => Default::default(),
            };
            let confined = confinement::confine_unit(
                &paths,
                &declared,
                &decl,
                confinement::Workspace { dir: &dir, commit },
                &tmp,
                &exe,
                model_url.as_deref(),
            )?;
            anyhow::Ok((env, tmp, confined))
        })
        .await?;
        // The socket must listen before session/new: agents connect to their MCP
        // servers while the session opens.
        let socket_dir = inner.paths.prepare_socket_dir()?;
        let socket_path = socket_path_for(&socket_dir, mission_id);
        let calls = MissionToolCalls {
            mission_id: mission_id.to_string(),
            missions: inner.missions.clone(),
            asks: inner.asks.clone(),
            workdir: cwd.display().to_string(),
            agent_name: agent.name.clone(),
            session_id: String::new(),
            ask_ceiling: inner.ask_ceiling,
            park_window: inner.park_window,
        };
        let handler = Arc::new(ToolHandler(Arc::new(Mutex::new(calls))));
        let socket = serve_mission_socket(&socket_path, handler.clone())
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot serve the mission socket {}: {e}",
                    socket_path.display()
                )
            })?;
        let spec = UnitSpec {
            program: agent.program(),
            args: agent.args.clone(),
            env,
            cwd: cwd.to_path_buf(),
            // The bridge's one-use token waits in the unit's own temp dir.
            mcp_servers: vec![
                bridge_server_entry(&inner.self_exe, &socket, tmp.path()).map_err(|e| {
                    anyhow::anyhow!("cannot hand the mission token to the unit: {e}")
                })?,
            ],
            meta: {
                // The catalogue's session settings first: the mission's own key wins.
                let mut meta = agent.session_meta.clone();
                meta.extend(mission_meta(mission_id));
                meta
            },
            pid_slot: Some(socket.unit_pid_slot()),
            supervisor: Some(inner.self_exe.clone()),
        };
        let unit = Unit::start_confined(spec, load, confined.prepared)
            .await
            .map_err(|e| match &e {
                crate::acp_client::UnitError::Rpc { code, .. }
                    if *code == crate::agents::AUTH_REQUIRED =>
                {
                    anyhow::anyhow!("{}", agent.login_needed(&e.to_string()))
                }
                _ => anyhow::anyhow!("agent {:?} could not start a session: {e}", agent.name),
            })?;
        if let Some(mode) = &agent.mode {
            unit.set_mode(mode).await.map_err(|e| {
                anyhow::anyhow!(
                    "agent {:?} could not be put in its {mode:?} mode: {e}",
                    agent.name
                )
            })?;
        }
        let session_id = unit.session_id().to_string();
        handler.0.lock_unpoisoned().session_id = session_id.clone();
        Ok(Started {
            unit,
            socket,
            session_id,
            instance_id: uuid::Uuid::new_v4().to_string(),
            cwd: cwd.display().to_string(),
            tmp,
            sandbox: confined.resolved,
        })
    }

    /// Hold a started unit: answer its permission requests and drive it. A dispatch's
    /// `slot` becomes the hosted unit's width.
    async fn host(
        &self,
        mut started: Started,
        mission: crate::mission::Mission,
        envelope: search::Loaded,
        opening: drive::Opening,
        slot: Option<Reservation>,
    ) {
        let inner = &self.inner;
        let mission_id = mission.id.clone();
        let (stop_tx, stop_rx) = watch::channel(false);
        let (idle_tx, idle_rx) = watch::channel(None);
        let ledger = budget::ComputeLedger::new(inner.missions.store().clone());
        let offered = started.unit.capabilities().offered_models().cloned();
        let (recorder, id, declared) = (
            ledger.clone(),
            mission_id.clone(),
            envelope.policy.compute.clone(),
        );
        let (compute, spent) = blocking(move || {
            if let Err(e) = recorder.record_unit(
                &id,
                offered.as_ref().map(|m| m.available.as_slice()),
                offered.as_ref().map(|m| m.current.as_str()),
            ) {
                tracing::warn!(mission = %id, "could not record the unit's session model: {e}");
            }
            // The envelope's bounds, as an operator raised them on an earlier
            // pause, and what earlier sessions of the mission spent against them.
            match recorder.get(&id) {
                Ok(Some(record)) => (record.apply(&declared), record.spent),
                _ => (declared, budget::Spend::default()),
            }
        })
        .await;
        let (budget, crossings) = budget::Budget::new(compute);
        let budget = Arc::new(budget.continuing(ledger.clone(), &mission_id, spent));
        let events = started
            .unit
            .take_events()
            .expect("fresh unit has its event channel");
        let perms = started
            .unit
            .take_permissions()
            .expect("fresh unit has its permission channel");
        // A resume after an approved gated call: that approval stands once more.
        let resumed_approval = match &opening {
            drive::Opening::Resumed { ask_id, .. } => {
                let (asks, id) = (inner.asks.clone(), ask_id.clone());
                blocking(move || asks.get(&id))
                    .await
                    .ok()
                    .flatten()
                    .filter(|a| !a.takes_words() && a.approved() == Some(true))
            }
            drive::Opening::Fresh => None,
        };
        let refusals = permissions::spawn_answerer(
            perms,
            permissions::Gate {
                mission_id: mission_id.clone(),
                missions: inner.missions.clone(),
                agent_name: mission.agent_name.clone(),
                session_id: started.session_id.clone(),
                instance_id: started.instance_id.clone(),
                cwd: started.cwd.clone(),
                envelope: envelope.clone(),
                asks: inner.asks.clone(),
                ask_ceiling: inner.ask_ceiling,
                budget: budget.clone(),
                resumed_approval: Mutex::new(resumed_approval),
            },
        );
        let drive = drive::Drive {
            missions: inner.missions.clone(),
            asks: inner.asks.clone(),
            mission,
            unit: started.unit,
            events,
            stop: stop_rx,
            socket: started.socket,
            resumer: matches!(opening, drive::Opening::Resumed { .. }),
            opening,
            budget,
            crossings,
            refusals,
            ledger,
            ask_ceiling: inner.ask_ceiling,
            park_window: inner.park_window,
            idle: idle_tx,
        };
        let fleet = self.clone();
        let key = mission_id.clone();
        // Registered under the lock before the task can finish and deregister itself.
        let mut units = inner.units.lock_unpoisoned();
        let tmp = started.tmp;
        let done = tokio::spawn(async move {
            drive.run().await;
            // `{tmp}` goes with the unit (removing it is blocking work).
            blocking(move || drop(tmp)).await;
            fleet.inner.units.lock_unpoisoned().hosted.remove(&key);
        });
        units.hosted.insert(
            mission_id,
            Hosted {
                stop: stop_tx,
                idle: idle_rx,
                done,
            },
        );
        if let Some(slot) = slot {
            slot.fulfil(&mut units);
        }
    }

    /// When this host's unit of `mission_id` ended its turns and the mission is still
    /// open with nothing pending, the runtime blocker's summary saying so.
    pub fn idle_reason(&self, mission_id: &str) -> Option<String> {
        let units = self.inner.units.lock_unpoisoned();
        units.hosted.get(mission_id)?.idle.borrow().clone()
    }

    /// Ask the unit of `mission_id` to wind down, if this host holds it. Returns at
    /// once; the unit is cancelled, given a grace period, and reaped.
    pub fn release(&self, mission_id: &str) -> bool {
        match self.inner.units.lock_unpoisoned().hosted.get(mission_id) {
            Some(h) => {
                let _ = h.stop.send(true);
                true
            }
            None => false,
        }
    }

    /// Reap every unit this host holds and wait for them (host shutdown).
    pub async fn shutdown(&self) {
        let hosted: Vec<(String, Hosted)> =
            self.inner.units.lock_unpoisoned().hosted.drain().collect();
        for (_, h) in &hosted {
            let _ = h.stop.send(true);
        }
        for (id, h) in hosted {
            if let Err(e) = h.done.await {
                tracing::warn!(mission = %id, "unit task ended abnormally: {e}");
            }
        }
    }

    /// Follow the bus and reap units whose mission came to rest anywhere — this
    /// host's unit finishing, an operator's stop from another terminal, a sweep.
    /// Runs until the fleet is dropped.
    pub fn spawn_teardown(&self) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            let Some(missions) = weak.upgrade().map(|i| i.missions.clone()) else {
                return;
            };
            let mut changes = missions.store().changes().subscribe();
            let mut after = blocking(move || missions.bus().head()).await.unwrap_or(0);
            let mut safety_net = Instant::now();
            loop {
                changes.next(TEARDOWN_POLL).await;
                let Some(inner) = weak.upgrade() else { return };
                let fleet = Fleet { inner };
                let missions = fleet.inner.missions.clone();
                match blocking(move || missions.bus().since(after, 500)).await {
                    Ok(events) => {
                        for ev in events {
                            after = ev.id;
                            if ev.subject == subjects::STATUS_CHANGED
                                && let Some(id) = ev.data.get("missionId").and_then(Value::as_str)
                            {
                                fleet.release(id);
                            }
                        }
                    }
                    Err(e) => tracing::warn!("teardown: bus poll failed: {e}"),
                }
                // A safety net for events pruned before we read them: every few
                // seconds, check the records of the units we hold.
                if safety_net.elapsed() >= TEARDOWN_SAFETY_NET {
                    safety_net = Instant::now();
                    fleet.release_resting().await;
                }
            }
        })
    }

    async fn release_resting(&self) {
        let ids: Vec<String> = self
            .inner
            .units
            .lock_unpoisoned()
            .hosted
            .keys()
            .cloned()
            .collect();
        let missions = self.inner.missions.clone();
        let resting = blocking(move || {
            ids.into_iter()
                .filter(|id| matches!(missions.get(id), Ok(Some(m)) if m.status.is_terminal()))
                .collect::<Vec<_>>()
        })
        .await;
        for id in resting {
            self.release(&id);
        }
    }
}

/// How often a host looks at the bus for missions that came to rest when no commit
/// wakes it (commits are pushed: `store::changes`).
const TEARDOWN_POLL: Duration = Duration::from_millis(100);
/// How often it checks the records of the units it holds anyway.
const TEARDOWN_SAFETY_NET: Duration = Duration::from_secs(2);

/// Adapts the mission tool calls to the MCP server's handler trait. The session id
/// is filled in once the session exists (tools are only called after that).
struct ToolHandler(Arc<Mutex<MissionToolCalls>>);

impl MissionToolHandler for ToolHandler {
    fn call(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> BoxFuture<'static, Result<String, String>> {
        let calls = self.0.lock_unpoisoned().clone();
        let tool = tool.to_string();
        Box::pin(async move { calls.call(&tool, args).await })
    }
}
