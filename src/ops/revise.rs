//! Revise: send a rested mission (landed, stuck or derailed) back to its agent with
//! the operator's feedback — the same agent, envelope and workspace, its own session
//! where the agent can load it, the feedback as the next prompt — as a new run on the
//! same record. Here (the process's fleet hosts the unit, like a fire) or, with
//! `queue`, handed to a `missionboard host` like any queued fire. Every surface (the
//! CLI, the board, the editor's `/revise`, the web page) calls [`revise`].

use crate::envelope::format::CountBounds;
use crate::fleet::Dispatched;
use crate::mission::queue::Claimed;
use crate::mission::revise::{Feedback, NewRevise, REVISABLE, Run, refusal};
use crate::mission::{Mission, MissionError};
use crate::ops::host::Host;

/// What a revise came to.
pub enum Revised {
    /// Its unit runs here (this process's fleet holds it).
    Running {
        mission: Mission,
        run: Run,
        dispatched: Box<Dispatched>,
    },
    /// Queued for a `missionboard host`, at this place in the queue (1 = next).
    Queued {
        mission: Mission,
        run: Run,
        position: usize,
    },
}

impl Revised {
    pub fn mission(&self) -> &Mission {
        match self {
            Revised::Running { mission, .. } | Revised::Queued { mission, .. } => mission,
        }
    }

    pub fn run(&self) -> &Run {
        match self {
            Revised::Running { run, .. } | Revised::Queued { run, .. } => run,
        }
    }

    /// One line saying what happened, for every surface.
    pub fn line(&self) -> String {
        let (m, run) = (self.mission(), self.run());
        match self {
            Revised::Running { dispatched, .. } => format!(
                "Mission {} sent back to agent {:?} (run {}){}: the feedback is its next prompt.",
                m.id,
                m.agent_name,
                run.run,
                if dispatched.session_reopened.is_some() {
                    " in its own session"
                } else {
                    " in a fresh session, briefed on what was done"
                }
            ),
            Revised::Queued { position, .. } => format!(
                "Mission {} sent back (run {}) and queued at position {position} for a `missionboard host`: the feedback is its next prompt.",
                m.id, run.run
            ),
        }
    }
}

/// [`revise`] from a surface whose units end with it (an editor session): queued
/// when a live `missionboard host` would claim it, so the revised run outlives the
/// session, else hosted here.
pub async fn revise_or_queue(
    host: &Host,
    id_or_prefix: &str,
    feedback: &str,
    by: &str,
) -> Result<Revised, String> {
    let (h, id) = (host.clone(), id_or_prefix.to_string());
    let queue = crate::store::blocking(move || -> Result<bool, String> {
        let m = h.missions().resolve(&id).map_err(|e| e.to_string())?;
        let hosts = crate::mission::hosts::Hosts::new(h.store().clone());
        Ok(hosts
            .claimer_for(None, &m.cwd)
            .map_err(|e| e.to_string())?
            .is_some())
    })
    .await?;
    revise(host, id_or_prefix, feedback, by, queue).await
}

/// Send mission `id_or_prefix` back with `feedback`, from surface `by` (`cli`,
/// `board`, `web`, `editor`). Refused, naming why, for a mission that is open,
/// queued or abandoned, or whose agent or envelope cannot start here; of two
/// revises (or a revise and a stop) racing, exactly one moves the record.
pub async fn revise(
    host: &Host,
    id_or_prefix: &str,
    feedback: &str,
    by: &str,
    queue: bool,
) -> Result<Revised, String> {
    let feedback = Feedback::new(feedback).map_err(|e| e.to_string())?;
    let fleet = match host.started_fleet() {
        Some(f) => f.clone(),
        None => {
            let h = host.clone();
            crate::store::blocking(move || h.fleet())
                .await
                .map_err(|e| format!("revise refused: {e:#}"))?
        }
    };
    let (h, id, by_s, fleet2) = (
        host.clone(),
        id_or_prefix.to_string(),
        by.to_string(),
        fleet.clone(),
    );
    // Everything checked before the record moves: a refusal leaves it as it was.
    let (mission, revise) = crate::store::blocking(move || -> Result<_, String> {
        let m = h.missions().resolve(&id).map_err(|e| e.to_string())?;
        if !REVISABLE.contains(&m.status) {
            return Err(refusal(&m));
        }
        let envelope = if queue {
            crate::envelope::search::load(h.paths(), &m.envelope_name).map_err(|why| {
                format!(
                    "revise refused: mission {}'s envelope {:?} does not load: {why}",
                    m.id, m.envelope_name
                )
            })?
        } else {
            fleet2
                .can_resume(&m.id)
                .map_err(|e| format!("revise refused: mission {} cannot start here: {e:#}", m.id))?
                .envelope()
                .clone()
        };
        let spent = crate::mission::compute::ComputeLedger::new(h.store().clone())
            .get(&m.id)
            .map_err(|e| e.to_string())?
            .map(|r| r.spent)
            .unwrap_or_default();
        let revise = NewRevise {
            feedback,
            by: by_s,
            queue,
            base: (spent.tool_calls, spent.tokens),
            checks_afresh: envelope.declared.compute.count_bounds == CountBounds::PerRun,
        };
        Ok((m, revise))
    })
    .await?;
    // A unit of its last run this process still holds goes first: the revised run's
    // unit takes its place.
    if fleet.release(&mission.id) {
        fleet.wait_unit(&mission.id).await;
    }
    let (h, id) = (host.clone(), mission.id.clone());
    let (mission, run) = crate::store::blocking(move || h.missions().reopen(&id, &revise))
        .await
        .map_err(|e| match e {
            MissionError::Conflict(why) => why,
            e => e.to_string(),
        })?;
    if queue {
        let (h, id) = (host.clone(), mission.id.clone());
        let position = crate::store::blocking(move || h.missions().queue_positions())
            .await
            .map_err(|e| e.to_string())?
            .get(&id)
            .copied()
            .unwrap_or(1);
        return Ok(Revised::Queued {
            mission,
            run,
            position,
        });
    }
    let dispatched = fleet
        .dispatch_claimed(Claimed {
            mission: mission.clone(),
            worktree: false,
        })
        .await
        .map_err(|e| {
            format!(
                "mission {} was sent back, but its unit could not start: {e:#} — it rests derailed, saying so",
                mission.id
            )
        })?;
    Ok(Revised::Running {
        mission,
        run,
        dispatched: Box::new(dispatched),
    })
}
