//! Starting a unit: a fresh mission's (checked, then recorded), or a parked run's
//! resumed from its checkpoint (claimed exactly once).

use super::*;

impl Fleet {
    /// Start, check and record an admitted mission in `cwd`. A refusal here leaves no
    /// record and no process (the caller removes a worktree made for it).
    pub(super) async fn dispatch_admitted(
        &self,
        record: Record,
        mission_id: String,
        (agent, envelope): (crate::agents::Agent, search::Loaded),
        cwd: PathBuf,
        worktree: Option<crate::worktree::Worktree>,
        slot: Reservation,
    ) -> anyhow::Result<Dispatched> {
        let inner = &self.inner;
        let agent_name = agent.name.clone();
        // A requeued mission's earlier session when the agent can reopen it
        // (`session/resume`, else `session/load`: the unit then reads its intent again
        // with that session's context), else a new one.
        let load = record.load_session.as_deref();
        // A fresh fire's worktree is the one made for it; a claimed mission's may be
        // an earlier host's.
        let lookup = if record.claimed {
            WorktreeLookup::Read
        } else {
            WorktreeLookup::Known(worktree.clone())
        };
        let site = (agent.clone(), cwd.as_path(), lookup);
        let roots = record.roots.as_deref();
        let mut started = match self
            .start_unit(&mission_id, site.clone(), &envelope.declared, load, roots)
            .await
        {
            Ok(started) => started,
            Err(e) if load.is_some() => {
                tracing::warn!(mission = %mission_id, "could not reopen its earlier session; starting a fresh one: {e}");
                self.start_unit(&mission_id, site, &envelope.declared, None, roots)
                    .await?
            }
            Err(e) => return Err(e),
        };
        // The model allowlist is held on the started unit, before the mission row
        // exists: only a running agent says which models it offers, and a refused
        // fire must leave no record (the unit is reaped, the socket removed).
        let compute = envelope.declared.compute.clone();
        if let Err(e) = budget::select_allowed_model(&mut started.unit, &compute, &agent_name).await
        {
            started.unit.shutdown().await;
            return Err(e);
        }
        let new = NewMission {
            id: mission_id.clone(),
            cwd: cwd.display().to_string(),
            session_id: Some(started.session_id.clone()),
            instance_id: Some(started.instance_id.clone()),
            parent_session_id: record.parent_session_id,
            ..NewMission::new(&agent_name, record.intent, record.envelope)
        };
        let missions = inner.missions.clone();
        let claimed = record.claimed;
        // A fresh mission's compute record is born with it, in its create
        // transaction: what its unit offers, nothing raised or spent yet. A claimed
        // one may carry an earlier host's, which its hosting reads and continues.
        let (models, model) = started.models();
        let fresh_record = (!claimed).then(|| {
            crate::mission::compute::ComputeRecord::of_fresh_unit(
                models.as_deref(),
                model.as_deref(),
            )
        });
        let mut born_with = vec![crate::mission::compute::unit_statement(
            &mission_id,
            models.as_deref(),
            model.as_deref(),
        )];
        // Its check is born with it: a `landed` verdict can never come before it.
        born_with.extend(
            record
                .check
                .as_ref()
                .map(|c| crate::mission::check::insert_statement(&mission_id, c)),
        );
        // ... and so are its extra roots, which every later start of its unit grants.
        born_with.extend(
            record
                .roots
                .as_ref()
                .filter(|r| !r.is_empty())
                .map(|r| crate::mission::roots::insert_statement(&mission_id, r)),
        );
        let mission = match blocking(move || {
            if claimed {
                missions.bind_claimed(&new)
            } else {
                missions.create_with(new, born_with)
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
        let session_reopened = started
            .unit
            .loaded()
            .then(|| started.unit.opened().method());
        let opening = match record.revise {
            Some(run) => {
                self.revise_opening(&mission, &run, session_reopened.is_some())
                    .await?
            }
            None => drive::Opening::Fresh,
        };
        self.host(
            started,
            mission,
            envelope,
            opening,
            Some(slot),
            fresh_record,
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
            session_reopened,
        })
    }

    /// The opening of a revised run, once its unit is bound: the feedback on the
    /// session it worked in before (`loaded`), else a brief of what was done and the
    /// feedback, then the standing instructions and the intent. The run is marked
    /// taken up.
    async fn revise_opening(
        &self,
        mission: &crate::mission::Mission,
        run: &crate::mission::revise::Run,
        loaded: bool,
    ) -> anyhow::Result<drive::Opening> {
        let (missions, id, n) = (self.inner.missions.clone(), mission.id.clone(), run.run);
        let (reports, check) = blocking(move || -> anyhow::Result<_> {
            missions.revise_started(&id, n)?;
            Ok((missions.reports(&id, 50)?, missions.check(&id)?))
        })
        .await?;
        let check = check.map(|c| crate::text::one_line(&c.command));
        let blocks = if loaded {
            vec![prompts::revise_turn(run, check.as_deref())]
        } else {
            vec![
                prompts::revise_brief(&reports, run, check.as_deref()),
                prompts::PREAMBLE.to_string(),
                mission.intent.clone(),
            ]
        };
        Ok(drive::Opening::Revised {
            blocks,
            since: run.revised_at,
        })
    }

    /// Resume a run parked on `ask_id` whose host is gone: claim the checkpoint
    /// (exactly one resumer wins), start the mission's agent afresh with a brief of
    /// what happened and the operator's answer, and drive it until its turn ends or
    /// the mission rests (await it with [`Fleet::wait_unit`]). `Ok(false)` when there
    /// is nothing to resume, or another process holds the claim.
    pub async fn resume_parked(
        &self,
        ask_id: &str,
        startable: Option<Startable>,
    ) -> anyhow::Result<bool> {
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
            let prepared = blocking(move || fleet.prepare_resume(&id, &parked, startable)).await?;
            let Some(resume) = prepared else {
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
            // The agent's own session when it can reopen it (`session/resume`, else
            // `session/load`): the unit carries on as a live host's would, told only
            // the answer. Else a fresh session, briefed on what happened.
            let site = (agent.clone(), cwd.as_path(), WorktreeLookup::Read);
            let mut started = match self
                .start_unit(
                    &mission.id,
                    site.clone(),
                    &envelope.declared,
                    Some(&cp.session_id),
                    None,
                )
                .await
            {
                Ok(started) => started,
                Err(e) => {
                    tracing::warn!(mission = %mission.id, "could not reopen session {}; starting a fresh one: {e}", cp.session_id);
                    self.start_unit(&mission.id, site, &envelope.declared, None, None)
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
                &envelope.declared.compute,
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
            self.host(started, mission, envelope, opening, None, None)
                .await;
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
    /// fresh unit is started with (`startable`: its agent and envelope, when the
    /// resumer already loaded them), or `None` when the mission needs no unit (it
    /// is at rest, or its compute-bound question settled it).
    pub(super) fn prepare_resume(
        &self,
        ask_id: &str,
        cp: &Checkpoint,
        startable: Option<Startable>,
    ) -> anyhow::Result<Option<Resume>> {
        let inner = &self.inner;
        let mission = inner.missions.require(&cp.mission_id)?;
        if mission.status.is_terminal() {
            inner.asks.drop_checkpoint(ask_id)?;
            return Ok(None);
        }
        let Startable { agent, envelope } = match startable {
            Some(s) => s,
            None => self.startable(&mission)?,
        };
        let ask = inner.asks.require(ask_id)?;
        // A check pause refused while its host was away: it rests, nothing resumes.
        if ask.tool_name == crate::asks::CHECK_TOOL && ask.approved() != Some(true) {
            super::check::rest_on_refused_pause(&inner.missions, &ask)?;
            inner.asks.drop_checkpoint(ask_id)?;
            return Ok(None);
        }
        if ask.is_budget()
            && !self.settle_budget_question(&mission.id, &ask, &envelope.declared.compute)?
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
    pub(super) fn settle_budget_question(
        &self,
        mission_id: &str,
        ask: &crate::asks::Ask,
        envelope: &ComputeBounds,
    ) -> anyhow::Result<bool> {
        let ledger =
            crate::mission::compute::ComputeLedger::new(self.inner.missions.store().clone());
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
    /// here and its command found, its envelope loadable)? What it would start it
    /// with, for [`Fleet::resume_parked`].
    pub fn can_resume(&self, mission_id: &str) -> anyhow::Result<Startable> {
        let m = self.inner.missions.require(mission_id)?;
        let startable = self.startable(&m)?;
        let agent = &startable.agent;
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
        Ok(startable)
    }

    /// The mission's agent, as declared here, and its envelope, loaded.
    fn startable(&self, m: &crate::mission::Mission) -> anyhow::Result<Startable> {
        let envelope =
            search::load(&self.inner.paths, &m.envelope_name).map_err(anyhow::Error::msg)?;
        let agent = self.resolve_agent(&m.agent_name)?;
        Ok(Startable { agent, envelope })
    }

    /// Serve the mission's socket and start its agent with a session pointed at it:
    /// session `load` when given and the agent can load sessions, else a new one.
    pub(super) async fn start_unit(
        &self,
        mission_id: &str,
        (agent, cwd, worktree): (crate::agents::Agent, &std::path::Path, WorktreeLookup),
        policy: &crate::envelope::Envelope,
        load: Option<&str>,
        roots: Option<&[PathBuf]>,
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
        let missions = inner.missions.clone();
        let known_roots = roots.map(<[PathBuf]>::to_vec);
        // Store reads, the temp dir and the ruleset's path fds: all blocking work.
        let (env, tmp, confined, roots, connect) = blocking(move || {
            let tmp = confinement::MissionTmp::create(&id)?;
            let env = declared.unit_env(Some(&config), tmp.path())?;
            let model_url = match env.get(crate::agents::ENV_BASE_URL) {
                Some(url) => Some(url.clone()),
                // Only a sandbox whose connect limit names `{model}` needs it.
                None if decl.names_model_port() => config.get(crate::config::MODEL_BASE_URL)?,
                None => None,
            };
            // A worktree mission's unit may commit on its own branch.
            let worktree = match worktree {
                WorktreeLookup::Known(wt) => wt,
                WorktreeLookup::Read => worktrees.get(&id)?,
            };
            let commit = match worktree {
                Some(wt) => crate::worktree::commit_access(&wt)?,
                None => Default::default(),
            };
            // Its extra roots, as every start of its unit grants them.
            let roots = match known_roots {
                Some(roots) => roots,
                None => missions.roots(&id)?,
            };
            let site = confinement::UnitSite {
                paths: &paths,
                agent: &declared,
                workspace: confinement::Workspace {
                    dir: &dir,
                    commit,
                    extra_roots: &roots,
                },
                bridge_exe: &exe,
                model_base_url: model_url.as_deref(),
            };
            let confined = confinement::confine_unit(site, &decl, &tmp)?;
            let connect =
                confinement::connect_site(&declared, &dir, model_url.as_deref(), &confined);
            anyhow::Ok((env, tmp, confined, roots, connect))
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
            link: Arc::default(),
        };
        let link = calls.link.clone();
        // The check runs as the unit does: its environment, workspace and grants.
        let _ = link.check.set(super::check::CheckSite {
            supervisor: inner.self_exe.clone(),
            // Scrubbed the way the unit's own is (`Unit::start_confined`).
            env: crate::acp_client::unit_environment(std::env::vars_os(), &env),
            cwd: cwd.to_path_buf(),
            confinement: confined.resolved.confinement.clone(),
            confined: confined.prepared.is_some(),
        });
        let _ = link.connect.set(connect);
        let handler = Arc::new(ToolHandler(Arc::new(Mutex::new(calls))));
        let socket = serve_mission_socket(&socket_path, handler.clone())
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot serve the mission socket {}: {e}",
                    socket_path.display()
                )
            })?;
        let declared_model = agent
            .is_native_agent()
            .then(|| env.get(crate::agents::ENV_MODEL).cloned())
            .flatten();
        let spec = UnitSpec {
            program: agent.program(),
            args: agent.args.clone(),
            env,
            cwd: cwd.to_path_buf(),
            additional_dirs: roots,
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
                crate::acp_client::UnitError::LoginRequired { terminal, .. } => {
                    anyhow::anyhow!("{}", agent.login_needed(&e.to_string(), terminal.as_ref()))
                }
                crate::acp_client::UnitError::Rpc { code, .. }
                    if *code == crate::agents::AUTH_REQUIRED =>
                {
                    anyhow::anyhow!("{}", agent.login_needed(&e.to_string(), None))
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
            link,
            declared_model,
        })
    }
}

/// Where a unit's worktree comes from: the caller knows it (the one a fresh fire
/// made, or none), or its record is read.
#[derive(Clone)]
pub(super) enum WorktreeLookup {
    Known(Option<crate::worktree::Worktree>),
    Read,
}

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
