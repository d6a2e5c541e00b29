//! `missionboard host`: a long-lived process that runs the durable queue. It claims
//! queued missions in order while fewer than its width are running (a unit parked on
//! a question holds no slot), hosts their units, resumes the parked runs whose
//! answers arrive when their own host is gone, lets expired asks take their verdict,
//! collects the missions of hosts that died, and heartbeats like every host, saying
//! its width, load and labels.
//!
//! On a clean exit it leaves nothing half-run: a unit parked on a question stays
//! parked on its checkpoint (whoever answers, a host resumes it), and a mission it
//! claimed and was running goes back to the queue in its old place — or, asked to
//! stop its missions, each is stopped as `mission stop` does.

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::asks::Asks;
use crate::config::Config;
use crate::fleet::Fleet;
use crate::host::HostId;
use crate::mission::Missions;
use crate::mission::hosts::{Hosts, Probe};
use crate::mission::queue::Admission;
use crate::ops::answer::{self, Stranded};
use crate::ops::host::{Host, Hosting};
use crate::ops::leave;
use crate::paths::Paths;
use crate::store::{Store, blocking};
use crate::sync::LockUnpoisoned;

/// How a host runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Running missions at once (`None`: `fleet-max-parallel`; 0 = unlimited).
    pub width: Option<u64>,
    /// The labels `--on` missions may name to run here.
    pub labels: Vec<String>,
    /// On exit, stop the missions it runs instead of parking or requeueing them.
    pub stop_on_exit: bool,
}

/// What a host did, as it happens (the surface words it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    Started {
        host: HostId,
        width: u64,
        labels: Vec<String>,
    },
    Claimed {
        mission: String,
        agent: String,
        intent: String,
    },
    StartFailed {
        mission: String,
        error: String,
    },
    Resumed {
        mission: String,
    },
    /// A mission given back to the queue by a host that left started again here:
    /// in its earlier session (`reopened`: the ACP method the agent reopened it
    /// with, `session/resume` or `session/load`), or in a fresh one (the agent
    /// reopens no sessions, or could not reopen that one; a fresh session may carry
    /// the same id, which is why the unit says which).
    Restarted {
        mission: String,
        session: String,
        reopened: Option<&'static str>,
    },
    /// A mission whose host died with nothing to resume it was collected.
    Reclaimed {
        mission: String,
        machine: String,
    },
    /// A schedule's tick was claimed here: what it fired, or why nothing.
    Scheduled {
        schedule: String,
        mission: Option<String>,
        outcome: String,
    },
    /// The next queued mission does not fit `fleet-max-memory` now: it waits in the
    /// queue (said once per mission) until units end and free the room.
    WaitsForMemory {
        mission: String,
        /// The figures: in use, expected, the bound.
        figures: String,
    },
    Leaving {
        requeued: usize,
        parked: usize,
        stopped: usize,
    },
}

/// How often the host looks at the queue when no commit wakes it sooner.
const POLL: Duration = Duration::from_millis(250);
/// How often it settles expired asks, resumes stranded runs and looks for dead hosts.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(1);
/// Claims per look at an unlimited width, so one look never drains a huge queue
/// before the host beats and reports again.
const UNLIMITED_BURST: usize = 64;

/// How long a host on another machine must have been silent before its missions
/// are collected (a store outage silences every host's heartbeat for as long).
const ELSEWHERE_SILENT_FOR: Duration = Duration::from_secs(60);

/// The work a host has under way, shared with its dispatch and resume tasks.
#[derive(Default)]
struct Underway {
    /// Claimed missions whose unit is still starting.
    starting: AtomicUsize,
    /// Their ids (given back to the queue if the host leaves before they start).
    starting_ids: Mutex<HashSet<String>>,
    /// Asks whose parked run this host is resuming.
    resuming: Mutex<HashSet<String>>,
    /// The start and resume tasks, ended if the host leaves while they run.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Underway {
    fn track(&self, task: tokio::task::JoinHandle<()>) {
        let mut tasks = self.tasks.lock_unpoisoned();
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }
}

/// Open this process's host for the queue ([`Hosting::Queue`]): its fleet starts
/// now, so call it off the async workers.
pub fn open_host(paths: &Paths, store: &Store) -> anyhow::Result<Host> {
    Host::open(paths, store, Hosting::Queue)
}

/// Run `host` (opened by [`open_host`]; a page served beside it answers through
/// it too) until `shutdown` resolves, then leave cleanly.
pub async fn run(
    host: Host,
    options: Options,
    shutdown: impl Future<Output = ()>,
    report: impl Fn(Event) + Send + Sync + 'static,
) -> anyhow::Result<()> {
    let report = Arc::new(report);
    let me = HostId::current();
    let store = host.store().clone();
    let fleet = host.fleet()?;
    let width = match options.width {
        Some(w) => w,
        None => {
            let config = Config::new(store.clone());
            blocking(move || config.fleet_max_parallel()).await?
        }
    };
    report(Event::Started {
        host: me.clone(),
        width,
        labels: options.labels.clone(),
    });
    let underway = Arc::new(Underway::default());
    // Schedules tick on a task of their own, which sleeps until the soonest tick.
    let ticking = {
        let report = report.clone();
        tokio::spawn(crate::ops::schedule::run(
            host.clone(),
            std::future::pending(),
            move |t| {
                report(Event::Scheduled {
                    schedule: t.schedule,
                    mission: t.mission,
                    outcome: t.outcome,
                })
            },
        ))
    };
    let mut changes = store.changes().subscribe();
    let mut maintained: Option<Instant> = None;
    // The load last written: an unchanged one is written again only with the
    // maintenance (so a row the write missed heals), since every write is a commit
    // that wakes this loop (and every other waiter) once more.
    let mut advertised: Option<usize> = None;
    // The queued missions said to wait for memory, so each is said once.
    let mut told_waiting: HashSet<String> = HashSet::new();
    tokio::pin!(shutdown);
    loop {
        let running = running(&fleet, &underway).await;
        if advertised != Some(running)
            && advertise(&store, &me, width, running, &options.labels).await
        {
            advertised = Some(running);
        }
        let free = if width == 0 {
            UNLIMITED_BURST
        } else {
            (width as usize).saturating_sub(running)
        };
        if free > 0 {
            match claim(&fleet, &me, &options.labels, free).await {
                Ok((claimed, waits)) => {
                    for c in claimed {
                        told_waiting.remove(&c.mission.id);
                        start(&fleet, &underway, &report, c);
                    }
                    if let Some((mission, refused)) = waits
                        && told_waiting.insert(mission.clone())
                    {
                        report(Event::WaitsForMemory {
                            mission,
                            figures: refused.figures(),
                        });
                    }
                }
                Err(e) => tracing::warn!("host: claim failed: {e}"),
            }
        }
        if maintained.is_none_or(|at| at.elapsed() >= MAINTENANCE_EVERY) {
            maintained = Some(Instant::now());
            maintain(&host, &me, &underway, &report).await;
            advertised = None;
        }
        tokio::select! {
            _ = changes.next(POLL) => {}
            _ = &mut shutdown => break,
        }
    }
    ticking.abort();
    let left = leave(&host, &underway, options.stop_on_exit).await;
    report(left);
    Ok(())
}

/// The missions this host counts against its width: its hosted units that are not
/// parked on a question, and the claimed ones still starting.
async fn running(fleet: &Fleet, underway: &Underway) -> usize {
    let probe = fleet.clone();
    let parked: HashSet<String> = blocking(move || probe.parked_here().into_iter().collect()).await;
    let hosted = fleet
        .hosted_missions()
        .into_iter()
        .filter(|id| !parked.contains(id))
        .count();
    // A unit just hosted may still be counted as starting too: over, never under.
    hosted + underway.starting.load(Ordering::SeqCst)
}

/// Write this host's width, load and labels; whether it was written.
async fn advertise(store: &Store, me: &HostId, width: u64, load: usize, labels: &[String]) -> bool {
    let (hosts, id, labels) = (Hosts::new(store.clone()), me.id.clone(), labels.to_vec());
    match blocking(move || hosts.advertise(&id, width, load, &labels)).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!("host: could not advertise its load: {e}");
            false
        }
    }
}

/// A queued mission held back by `fleet-max-memory`, with the figures.
type WaitsForMemory = Option<(String, crate::fleet::resources::MemoryRefused)>;

/// Claim the next `free` queued missions this host may run: each one's label
/// fits, its workspace exists on this machine, and — under `fleet-max-memory` — its
/// agent's expected peak fits beside what the host's units hold (the fleet's one
/// memory rule, which holds the memory for it until its unit starts). The first
/// that does not fit waits, and every mission behind it. Each is also admitted
/// against the fleet's money budgets in the claim's transaction; one they cannot
/// take stays queued while later ones may still be claimed.
async fn claim(
    fleet: &Fleet,
    me: &HostId,
    labels: &[String],
    free: usize,
) -> anyhow::Result<(Vec<crate::mission::queue::Claimed>, WaitsForMemory)> {
    let (missions, me, labels) = (fleet.missions().clone(), me.clone(), labels.to_vec());
    let fleet = fleet.clone();
    blocking(move || -> anyhow::Result<_> {
        // Woken by every commit of every unit: with nothing queued, a look is one
        // indexed read, not the claim's write lock and the budgets' config reads.
        if !missions.any_waiting()? {
            return Ok((Vec::new(), None));
        }
        // The fleet's money budgets, read once per claim round; each candidate is
        // admitted against them inside the claim's transaction, so a host never
        // starts a queued mission past them.
        let gate = fleet.queue_gate()?;
        // What each waiting agent is expected to reach, read before the claim's
        // transaction (which holds the store).
        let expected: std::collections::HashMap<String, _> = match fleet.memory_budget() {
            Some(_) => missions
                .waiting_agents()?
                .into_iter()
                .map(|agent| {
                    let e = fleet.expected_rss_of(&agent);
                    (agent, e)
                })
                .collect(),
            None => Default::default(),
        };
        let budgeted = fleet.memory_budget().is_some();
        let (mut held, mut waits) = (Vec::new(), None);
        let claimed = {
            let mut admit = |c: &crate::store::Conn<'_>,
                             m: &crate::mission::queue::Candidate<'_>|
             -> crate::store::sql::Result<Admission> {
                // Memory first: a mission that does not fit waits, and every one
                // behind it (the queue keeps its order).
                if budgeted {
                    // Queued after the agents were read: claimed on the next look,
                    // once its agent's expectation is known.
                    let Some(&e) = expected.get(m.agent) else {
                        return Ok(Admission::Wait);
                    };
                    match fleet.hold_memory(m.id, m.agent, e) {
                        Ok(()) => held.push(m.id.to_string()),
                        Err(refused) => {
                            waits = Some((m.id.to_string(), refused));
                            return Ok(Admission::Wait);
                        }
                    }
                }
                // Then money: a mission the budgets cannot take is passed over
                // until the next period; its memory hold goes back at once.
                if gate.admit(c, m.id, m.envelope)? {
                    Ok(Admission::Claim)
                } else {
                    if budgeted {
                        fleet.release_memory(m.id);
                        held.retain(|h| h != m.id);
                    }
                    Ok(Admission::Skip)
                }
            };
            missions.claim_queued_admitting(
                &me,
                &labels,
                &crate::mission::hosts::workspace_exists_here,
                &mut admit,
                free,
            )
        };
        // A hold for a candidate another host claimed first (or a claim that failed)
        // goes back.
        let ours: HashSet<&str> = match &claimed {
            Ok(c) => c.iter().map(|c| c.mission.id.as_str()).collect(),
            Err(_) => HashSet::new(),
        };
        for id in held.iter().filter(|id| !ours.contains(id.as_str())) {
            fleet.release_memory(id);
        }
        Ok((claimed?, waits))
    })
    .await
}

/// Start a claimed mission's unit on a task of its own.
fn start(
    fleet: &Fleet,
    underway: &Arc<Underway>,
    report: &Arc<impl Fn(Event) + Send + Sync + 'static>,
    claimed: crate::mission::queue::Claimed,
) {
    let id = claimed.mission.id.clone();
    // Set only for a mission a leaving host gave back after its unit had started.
    let earlier = claimed.mission.session_id.clone();
    underway.starting.fetch_add(1, Ordering::SeqCst);
    underway.starting_ids.lock_unpoisoned().insert(id.clone());
    report(Event::Claimed {
        mission: id.clone(),
        agent: claimed.mission.agent_name.clone(),
        intent: claimed.mission.intent.clone(),
    });
    let (fleet, tracker, report) = (fleet.clone(), underway.clone(), report.clone());
    let underway = tracker.clone();
    tracker.track(tokio::spawn(async move {
        let started = fleet.dispatch_claimed(claimed).await;
        underway.starting_ids.lock_unpoisoned().remove(&id);
        underway.starting.fetch_sub(1, Ordering::SeqCst);
        match started {
            Ok(d) => {
                if earlier.is_some() {
                    let reopened = d.session_reopened;
                    tracing::info!(mission = %id, session = %d.session_id, ?reopened, "host: a requeued mission started again");
                    report(Event::Restarted {
                        mission: id,
                        session: d.session_id,
                        reopened,
                    });
                }
            }
            Err(e) => report(Event::StartFailed {
                mission: id,
                error: format!("{e:#}"),
            }),
        }
    }));
}

/// Expired asks take their verdict; answered runs whose host is gone are resumed
/// here (the one stranded-run operation of the answer path, each on a task of its
/// own; the checkpoint claim keeps each exactly once across hosts); missions of
/// dead hosts that nothing can resume are collected.
async fn maintain(
    host: &Host,
    me: &HostId,
    underway: &Arc<Underway>,
    report: &Arc<impl Fn(Event) + Send + Sync + 'static>,
) {
    let (probe, mine) = (host.clone(), me.clone());
    let found = blocking(move || -> anyhow::Result<_> {
        let asks = probe.asks();
        asks.sweep_expired()?;
        let resumable = answer::stranded_runs(&probe, Stranded::AsQueueHost)?;
        let reclaimed = reclaim_dead(probe.missions(), &asks, &mine)?;
        Ok((resumable, reclaimed))
    })
    .await;
    let (resumable, reclaimed) = match found {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!("host: maintenance failed: {e:#}");
            return;
        }
    };
    for (mission, machine) in reclaimed {
        report(Event::Reclaimed { mission, machine });
    }
    for run in resumable {
        let ask_id = run.ask_id.clone();
        if !underway.resuming.lock_unpoisoned().insert(ask_id.clone()) {
            continue;
        }
        let mission = run.mission_id.clone();
        let (host, tracker, report) = (host.clone(), underway.clone(), report.clone());
        let underway = tracker.clone();
        tracker.track(tokio::spawn(async move {
            match answer::resume_stranded_run(&host, run).await {
                Ok(true) => report(Event::Resumed { mission }),
                Ok(false) => {}
                Err(e) => tracing::warn!(ask = %ask_id, "host: resume failed: {e:#}"),
            }
            underway.resuming.lock_unpoisoned().remove(&ask_id);
        }));
    }
}

/// Collect the open missions whose host is gone and that nothing can resume: no
/// checkpoint to resume from, no ask pending that an answer could still act on.
/// Each by one guarded write on the dead host, so of every live host looking,
/// exactly one collects it. Returns (mission, the dead host's machine).
fn reclaim_dead(
    missions: &Missions,
    asks: &Asks,
    me: &HostId,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut probe = Probe::new(missions.store().clone());
    let hosts = Hosts::new(missions.store().clone());
    let mut out = Vec::new();
    for (id, host) in missions.open_hosts(500)? {
        let Some(host) = host else { continue };
        if host.id == me.id || probe.lives(&host) {
            continue;
        }
        // A host elsewhere is judged by its heartbeat, which a store outage also
        // stops: it is collected only once it has been silent far longer than that.
        if !host.is_on_this_machine()
            && hosts.beat_of(&host.id)?.is_some_and(|b| {
                crate::clock::now_ms() - b.heartbeat_at < ELSEWHERE_SILENT_FOR.as_millis() as i64
            })
        {
            continue;
        }
        if !asks.checkpoints_for(&id)?.is_empty()
            || asks.for_mission(&id, 200)?.iter().any(|a| a.is_pending())
        {
            continue;
        }
        if missions.reclaim_from_dead_host(&id, &host)? {
            out.push((id, host.machine.clone()));
        }
    }
    Ok(out)
}

/// Leave cleanly: every unit is reaped; then, by the one leaving policy
/// ([`leave::leave`]), units parked on a question stay parked and the running
/// missions this host claimed go back to the queue — or, asked to stop, every
/// mission it ran is stopped.
async fn leave(host: &Host, underway: &Underway, stop: bool) -> Event {
    // Starts and resumes under way end here (a dropped start drops its unit).
    let tasks: Vec<_> = underway.tasks.lock_unpoisoned().drain(..).collect();
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    let mut ours: Vec<String> = host.hosted_missions();
    ours.extend(underway.starting_ids.lock_unpoisoned().iter().cloned());
    // Units first, so none writes after its mission was given back.
    host.close("its host left").await;
    let how = if stop {
        leave::Departure::Stop {
            reason: "stopped by its host leaving (missionboard host --stop-on-exit)".into(),
        }
    } else {
        leave::Departure::Requeue
    };
    let h = host.clone();
    let left = blocking(move || leave::leave(&h, &ours, &how, |_, _| Ok(()))).await;
    Event::Leaving {
        requeued: left.requeued,
        parked: left.parked,
        stopped: left.stopped,
    }
}
