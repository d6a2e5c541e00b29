//! Admission: a dispatch is validated (its agent and envelope resolved) and takes a
//! slot of fleet width under a short lock, or is refused at the cap. Nothing waits.

use super::*;

impl Fleet {
    /// Units this host holds right now, starting ones included (each holds fleet
    /// width until it is reaped, or its start fails).
    pub fn open_units(&self) -> usize {
        self.inner.units.lock_unpoisoned().open()
    }

    /// Reserve a slot of fleet width and the memory a unit of `agent` is expected to
    /// reach, or refuse the fire at the cap or past `fleet-max-memory`
    /// ([`resources::Gauge::hold`], the one memory rule). Nothing waits.
    pub(super) fn reserve(
        &self,
        mission_id: &str,
        agent: &str,
        expected: resources::Expected,
    ) -> anyhow::Result<Reservation> {
        let max = self.inner.max_parallel;
        let mut units = self.inner.units.lock_unpoisoned();
        let open = units.open() as u64;
        if max > 0 && open >= max {
            anyhow::bail!(
                "conflict: fleet admission refused: {open} units are already open, at the fleet-width cap (fleet-max-parallel={max}). Wait for a unit to conclude or stop one, or raise the cap: `missionboard config set fleet-max-parallel <N>` (0 = unlimited)."
            );
        }
        self.inner.gauge.hold(mission_id, agent, expected)?;
        units.starting += 1;
        Ok(Reservation {
            inner: self.inner.clone(),
            held: true,
            mission_id: mission_id.to_string(),
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

    pub(super) async fn dispatch_parented(
        &self,
        req: DispatchRequest,
        parent_session_id: Option<String>,
    ) -> anyhow::Result<Dispatched> {
        let inner = &self.inner;
        let agent_name = req.agent_name.trim().to_string();
        if agent_name.is_empty() {
            return Err(NameRefused::NoAgent.into());
        }
        let envelope_name = req.envelope.as_str();
        let envelope =
            search::load(&inner.paths, envelope_name).map_err(|why| NameRefused::Envelope {
                name: envelope_name.to_string(),
                why,
                on_path: search::list(&inner.paths)
                    .into_iter()
                    .map(|l| l.file_name)
                    .collect(),
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
        let check = crate::mission::check::NewCheck::resolve(
            &req.check,
            envelope.declared.check.as_ref(),
            envelope.declared.compute.effective_max_checks(),
            envelope_name,
        )
        .map_err(anyhow::Error::msg)?;
        let agent = self.resolve_agent(&agent_name)?;
        let record = Record {
            intent: req.intent,
            envelope: req.envelope,
            parent_session_id,
            claimed: false,
            load_session: None,
            check,
            roots: Some(req.add_dirs),
            revise: None,
        };
        let mission_id = uuid::Uuid::new_v4().to_string();
        self.admit(record, mission_id, (agent, envelope), cwd, req.worktree)
            .await
    }

    /// Take a slot of width, make the mission's worktree when it wants one, and
    /// start it; a refusal gives the slot back and removes the worktree.
    pub(super) async fn admit(
        &self,
        record: Record,
        mission_id: String,
        (agent, envelope): (crate::agents::Agent, search::Loaded),
        cwd: PathBuf,
        wants_worktree: bool,
    ) -> anyhow::Result<Dispatched> {
        let inner = &self.inner;
        // Only a bound needs the expectation (a store read).
        let expected = match inner.gauge.budget {
            Some(_) => {
                let (store, a) = (inner.missions.store().clone(), agent.clone());
                blocking(move || resources::expected_rss(&store, &a)).await
            }
            None => resources::Expected {
                bytes: 0,
                from: resources::ExpectedFrom::Default,
            },
        };
        let slot = self.reserve(&mission_id, &agent.name, expected)?;
        // A claimed mission was admitted against the budgets by its claim.
        let held = if record.claimed {
            false
        } else {
            self.admit_spend(&mission_id, &envelope).await?
        };
        // A revised mission works where it worked before (its own worktree, if any).
        let worktree = if record.revise.is_none()
            && (wants_worktree
                || envelope.declared.workspace == crate::envelope::sandbox::WorkspaceMode::Worktree)
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
                mission_id.clone(),
                (agent, envelope),
                cwd,
                worktree.clone(),
                slot,
            )
            .await;
        if dispatched.is_err() && held {
            self.withdraw_spend(&mission_id).await;
        }
        if dispatched.is_err()
            && let Some(wt) = worktree
        {
            let worktrees = crate::worktree::Worktrees::new(inner.missions.store().clone());
            blocking(move || worktrees.abandon(&wt)).await;
        }
        dispatched
    }

    pub(super) fn resolve_agent(&self, name: &str) -> anyhow::Result<crate::agents::Agent> {
        let registry = Registry::load(&self.inner.paths)?;
        // A catalogue agent needs no declaration: agents.toml only overrides it.
        if let Some(agent) = registry
            .get(name)
            .or_else(|| crate::agents::catalogue::get(name))
        {
            return Ok(agent.clone());
        }
        Err(NameRefused::UnknownAgent {
            name: name.to_string(),
            declared: registry.names().into_iter().map(String::from).collect(),
        }
        .into())
    }
}
