//! Recording an answer to an ask whose run may be parked. The answer is recorded
//! exactly once, and never spent on a process that cannot resume the run it
//! unblocks. Resuming it is the operator's answer verb's, above the roles; the resume
//! itself is [`Fleet::resume_parked`].

use crate::asks::bounds::answer_as_agent_within_bounds;
use crate::asks::checkpoint::Checkpoint;
use crate::asks::{Asks, OperatorVerdict, Surface};
use crate::fleet::{Fleet, Startable};
use crate::mission::Missions;
use crate::paths::Paths;

/// Who answers.
pub enum Answerer<'a> {
    Operator(&'a OperatorVerdict),
    /// An agent's words, within the mission envelope's attention bounds.
    Agent {
        name: &'a str,
        text: &'a str,
    },
}

/// An answer on the record, and the run it unblocks if this process must resume it.
pub struct Recorded {
    /// The run's checkpoint as it stood before the answer (`None`: nothing waits).
    pub parked: Option<Checkpoint>,
    /// The fleet that resumes it here (its host is gone), and what it starts.
    pub resumer: Option<(Fleet, Startable)>,
}

/// Record `who`'s answer to `ask_id`. `asks` is the caller's ask service, so a
/// waiter in this process is woken at once; `via` is the surface the answer came
/// from, recorded with it; `host` is this process's one fleet,
/// asked for only when the run is parked and its host gone (the fleet that would
/// resume it here must be able to start it). Refusals keep their type
/// ([`crate::asks::bounds::AgentAnswerError`], [`crate::asks::AskError`]) inside the error.
pub fn record(
    paths: &Paths,
    asks: &Asks,
    ask_id: &str,
    who: Answerer<'_>,
    via: &Surface,
    host: impl FnOnce() -> anyhow::Result<Fleet>,
) -> anyhow::Result<Recorded> {
    let store = &asks.store;
    let missions = Missions::new(store.clone());
    let parked = asks.checkpoint(ask_id)?;
    // A one-shot verdict is never spent on a process that cannot resume the run it
    // unblocks: check the capability first, record second.
    let resumer = match &parked {
        Some(cp) if !asks.host_lives(cp) && !missions.queue_host_takes(&cp.mission_id) => {
            let fleet = host()?;
            let startable = fleet.can_resume(&cp.mission_id).map_err(|e| {
                anyhow::anyhow!(
                    "ask {ask_id} has a suspended run checkpointed under it, and this process (on {here}) cannot resume it: {e}\nThe verdict was NOT recorded — the ask is still pending. Fix the configuration here (declare the mission's agent in agents.toml, install its command, restore its envelope), or answer from a terminal that can start it (it was parked on machine {there})",
                    here = crate::host::machine_name(),
                    there = cp.host.machine_label(),
                )
            })?;
            Some((fleet, startable))
        }
        _ => None,
    };
    match who {
        Answerer::Operator(v) => {
            asks.operator_verdict(ask_id, v, via)?;
        }
        Answerer::Agent { name, text } => {
            answer_as_agent_within_bounds(paths, asks, &missions, ask_id, name, text, via)?;
        }
    }
    Ok(Recorded { parked, resumer })
}
