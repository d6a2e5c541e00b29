//! Running what a `missionboard host` claimed from the queue: the claimed row is
//! started like any fire, bound instead of created, and a start that fails ends it
//! derailed with the reason (the row exists, so a refusal cannot leave no record).

use std::path::PathBuf;
use std::sync::Arc;

use super::{Dispatched, Fleet, Record, blocking, search};
use crate::mission::Status;
use crate::mission::queue::Claimed;
use crate::paths::Paths;
use crate::store::Store;

impl Fleet {
    /// A fleet for `missionboard host`, which admits by the running missions it
    /// counts itself (a parked unit frees its slot): the fleet refuses nothing at a
    /// width of its own.
    pub fn for_host(paths: Paths, store: Store) -> anyhow::Result<Fleet> {
        let mut fleet = Fleet::new(paths, store)?;
        let inner = Arc::get_mut(&mut fleet.inner)
            .ok_or_else(|| anyhow::anyhow!("a new fleet is shared before it is configured"))?;
        inner.max_parallel = 0;
        Ok(fleet)
    }

    /// Start the unit of a mission this host claimed, in its recorded workspace.
    pub async fn dispatch_claimed(&self, claimed: Claimed) -> anyhow::Result<Dispatched> {
        let mission = claimed.mission;
        let id = mission.id.clone();
        let started = async {
            let envelope =
                search::load(&self.inner.paths, &mission.envelope_name).map_err(|e| {
                    anyhow::anyhow!(
                        "hitl policy {:?} could not be loaded on this host: {e}",
                        mission.envelope_name
                    )
                })?;
            let agent = self.resolve_agent(&mission.agent_name)?;
            let cwd = if mission.cwd.is_empty() {
                self.inner.paths.cwd.clone()
            } else {
                PathBuf::from(&mission.cwd)
            };
            let (missions, mission_id) = (self.inner.missions.clone(), id.clone());
            let revise = blocking(move || missions.pending_revise(&mission_id)).await?;
            let record = Record {
                intent: crate::mission::Intent::new(&mission.intent)?,
                envelope: crate::mission::EnvelopeName::new(&mission.envelope_name)?,
                parent_session_id: mission.parent_session_id.clone(),
                claimed: true,
                load_session: mission.session_id.clone(),
                // Recorded when it was queued.
                check: None,
                roots: None,
                revise,
            };
            self.admit(record, id.clone(), (agent, envelope), cwd, claimed.worktree)
                .await
        }
        .await;
        if let Err(e) = &started {
            // A hold taken when it was claimed, if its start never took it over.
            self.release_memory(&id);
            let (missions, why) = (
                self.inner.missions.clone(),
                format!("the host could not start it: {e}"),
            );
            let mission_id = id.clone();
            if let Err(finish) =
                blocking(move || missions.finish(&mission_id, Status::Derailed, &why)).await
            {
                tracing::warn!(mission = %id, "could not record the failed start: {finish}");
            }
        }
        started
    }

    /// The missions whose units this host holds while their run is parked on a
    /// question (the turn ended under it, nobody has claimed its resume): they hold
    /// no slot of a host's width. Blocking: store reads.
    pub fn parked_here(&self) -> Vec<String> {
        let parked: std::collections::HashSet<String> = self
            .inner
            .asks
            .parked_missions_of(&crate::host::HostId::current())
            .unwrap_or_default()
            .into_iter()
            .collect();
        self.hosted_missions()
            .into_iter()
            .filter(|id| parked.contains(id))
            .collect()
    }
}
