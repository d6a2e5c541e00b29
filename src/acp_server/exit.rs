//! The end of `missionboard acp`: every open mission whose unit this process hosted
//! is settled truthfully before it exits, since its unit goes with the process. Its
//! reports so far are filed in the operator inbox (the session that took them live
//! is gone, and a one-shot client never read them); a run checkpointed under an ask
//! stays parked on it, to resume when the ask is answered, like any parked run;
//! any other run is ended `abandoned` with a reason naming the session's end. Each
//! says so in a blocker report, which reaches the inbox too.

use crate::host::HostId;
use crate::mission::{Mission, Missions, Status};
use crate::ops::host::Host;
use crate::ops::leave::{self, Departure, Fate};
use crate::store::blocking;

/// Why the sessions ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The editor closed the connection (stdin reached its end).
    HungUp,
    /// A termination signal or an interrupt.
    Signalled,
}

impl Ending {
    fn words(self) -> &'static str {
        match self {
            Ending::HungUp => "the editor hung up",
            Ending::Signalled => "missionboard acp was told to stop by a signal",
        }
    }
}

/// What the settling did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    pub parked: usize,
    pub ended: usize,
}

/// Settle the open missions this process hosts: `held`, the units its fleet held
/// before it reaped them, and any other open mission recorded as hosted here (one
/// whose unit was still starting). Call once its sessions are recorded as ended and
/// its units are reaped, so nothing writes behind it.
pub async fn settle(host: &Host, held: Vec<String>, ending: Ending) -> Settled {
    let host = host.clone();
    blocking(move || settle_blocking(&host, held, ending)).await
}

fn settle_blocking(host: &Host, mut ids: Vec<String>, ending: Ending) -> Settled {
    let missions = host.missions();
    let me = HostId::current();
    match missions.open_hosts(500) {
        Ok(open) => ids.extend(
            open.into_iter()
                .filter(|(_, h)| {
                    h.as_ref()
                        .is_some_and(|h| !h.id.is_empty() && h.id == me.id)
                })
                .map(|(id, _)| id),
        ),
        Err(e) => tracing::warn!("session exit: could not list the open missions: {e}"),
    }
    ids.sort();
    ids.dedup();
    // Only what still waits on this host: one that came to rest needs nothing.
    ids.retain(|id| {
        missions.get(id).ok().flatten().is_some_and(|m| {
            m.status == Status::Open && m.host.as_ref().is_some_and(|h| h.id == me.id)
        })
    });
    let why = ending.words();
    let how = Departure::Abandon {
        why: format!(
            "its editor session ended ({why}) before it finished, and nothing could resume it"
        ),
    };
    let left = leave::leave(host, &ids, &how, |id, fate| tell(host, id, fate, ending));
    for (id, e) in &left.failed {
        tracing::warn!(mission = %id, "session exit: could not settle it: {e}");
    }
    Settled {
        parked: left.parked,
        ended: left.abandoned,
    }
}

/// What the session's end says of mission `id` before its fate is written: its
/// reports so far into the inbox, then a blocker report naming what became of it.
fn tell(host: &Host, id: &str, fate: Fate, ending: Ending) -> anyhow::Result<()> {
    let (missions, asks) = (host.missions(), host.asks());
    let m = missions.require(id)?;
    file_reports(missions, &m)?;
    let why = ending.words();
    if fate == Fate::Parked {
        // Its unit is gone: from now on each answer comes to the run as a resume.
        let mut waiting = Vec::new();
        for cp in &asks.checkpoints_for(id)? {
            asks.mark_parked(&cp.ask_id)?;
            let summary = asks
                .get(&cp.ask_id)?
                .map(|a| crate::asks::one_line_summary(&a.args_summary))
                .unwrap_or_default();
            waiting.push(format!("- ask {}: {summary}", cp.ask_id));
        }
        missions.add_blocker(
            id,
            "Mission parked: the session that fired it ended.".into(),
            format!(
                "Its editor session ended ({why}) and its unit went with missionboard acp, while the run waited on:\n{}\nThe run is checkpointed: answer it ('missionboard approvals respond <ask> --answer \"...\"', or the board) and it resumes — on a running `missionboard host` that can run it, else in the answering process. Its reports so far are kept.",
                waiting.join("\n")
            ),
        )?;
        return Ok(());
    }
    // The blocker first, so a reader that sees the mission at rest finds it there.
    missions.add_blocker(
        id,
        "Mission ended: the session that fired it ended.".into(),
        format!(
            "Its editor session ended ({why}) while its unit was working, and the unit went with missionboard acp. No run was checkpointed under a question, so nothing could resume it: it was ended abandoned. Its reports so far are kept; fire it again to redo it (with a `missionboard host` running, /mission queues it there, where it outlives the session)."
        ),
    )?;
    Ok(())
}

/// Every report of a session's mission so far, into the inbox as `parent_gone`:
/// its session, which took them live, has ended (once each; a mission fired
/// without a session had its reports filed when they were written).
fn file_reports(missions: &Missions, m: &Mission) -> anyhow::Result<()> {
    if m.parent_session_id.is_none() {
        return Ok(());
    }
    for r in missions.reports(&m.id, 1000)? {
        missions.inbox_parent_gone(m, &r.id)?;
    }
    Ok(())
}
