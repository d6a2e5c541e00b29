//! Templates and schedules, the operator's verbs over them, and the ticking every
//! live `missionboard host` runs.
//!
//! A template fire becomes the same [`Fire`] a typed one does, so every check and
//! default of `ops::fire` applies to it. A schedule's tick becomes a queued mission:
//! every host sharing the store looks at the due schedules, and each tick is claimed
//! by one guarded write that queues its mission in the same transaction
//! (`sched::schedules`), so it fires exactly once however many hosts race for it.

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use crate::mission::check::CheckChoice;
use crate::mission::{EnvelopeName, Intent};
use crate::ops::fire::{self, Fire, TypedAt};
use crate::ops::host::Host;
use crate::paths::Paths;
use crate::sched::cron::{DEFAULT_ZONE, When};
use crate::sched::schedules::{Fires, Schedule, Schedules, TickAction};
use crate::sched::template;
use crate::store::blocking;

/// A template filled in, as a fire: the mission and the host label it must run on.
#[derive(Debug, Clone)]
pub struct TemplateFire {
    pub fire: Fire,
    pub on: Option<String>,
}

/// Fill template `name` (found on the host's search path) with `pairs` and make it
/// a fire. A missing or unknown parameter, a value that is not one line, a bad
/// envelope or agent is refused naming it.
pub fn template_fire(
    host: &Host,
    name: &str,
    pairs: &[(String, String)],
) -> anyhow::Result<TemplateFire> {
    fill_at(host, host.paths(), name, pairs)
}

/// What a template fired from the board or the web page came to.
#[derive(Debug, Clone)]
pub struct TemplateFired {
    pub mission_id: String,
    pub agent: String,
    pub envelope: String,
    /// The intent its parameters made.
    pub intent: String,
    /// Its place in the queue when queued (`None`: hosted by the firing process).
    pub queued: Option<usize>,
    /// The host label a queued mission waits for.
    pub on: Option<String>,
}

/// Fire template `name` with `pairs` as `mission fire --template` does, through
/// [`template_fire`] and so with its refusals: hosted by this process (`queue:
/// None`), or queued for a `missionboard host` (`Some(on)`, `on` as `--on`, else
/// the template's label). A refusal records nothing.
pub async fn fire_template(
    host: &Host,
    name: &str,
    pairs: Vec<(String, String)>,
    queue: Option<Option<String>>,
) -> anyhow::Result<TemplateFired> {
    let (h, n) = (host.clone(), name.to_string());
    let t = blocking(move || template_fire(&h, &n, &pairs)).await?;
    let (agent, envelope, intent) = (
        t.fire.agent.clone(),
        t.fire.envelope.as_str().to_string(),
        t.fire.intent.as_str().to_string(),
    );
    let Some(on) = queue else {
        let d = fire::dispatch(host, t.fire).await?;
        return Ok(TemplateFired {
            mission_id: d.mission_id,
            agent,
            envelope,
            intent,
            queued: None,
            on: None,
        });
    };
    let h = host.clone();
    blocking(move || {
        let on = on.or(t.on);
        let m = fire::enqueue(&h, t.fire, on.as_deref())?;
        let position = h
            .missions()
            .queue_positions()?
            .get(&m.id)
            .copied()
            .unwrap_or(1);
        Ok(TemplateFired {
            mission_id: m.id,
            agent,
            envelope,
            intent,
            queued: Some(position),
            on,
        })
    })
    .await
}

/// [`template_fire`] from the search path of `paths` (a schedule's or a trigger's
/// own workspace, not the process's); the default envelope is `host`'s.
pub(crate) fn fill_at(
    host: &Host,
    paths: &Paths,
    name: &str,
    pairs: &[(String, String)],
) -> anyhow::Result<TemplateFire> {
    let loaded = template::load(paths, name).map_err(anyhow::Error::msg)?;
    let filled = loaded
        .template
        .fill(pairs)
        .map_err(|e| anyhow::anyhow!("template {name:?}: {e}"))?;
    let (envelope, origin) = match &filled.envelope {
        Some(e) => (EnvelopeName::new(e)?, "the template's envelope"),
        None => fire::envelope_or_default(host, None)?,
    };
    let intent =
        Intent::new(&filled.intent).map_err(|e| anyhow::anyhow!("template {name:?}: {e}"))?;
    let mut fire = Fire::new(&filled.agent, envelope, intent);
    fire.worktree = filled.worktree;
    fire.typed_at = TypedAt {
        agent: Some("the template's agent"),
        envelope: Some(origin),
    };
    if let Some(check) = filled.check {
        fire.check = CheckChoice::Command(check);
    }
    Ok(TemplateFire {
        fire,
        on: filled.on,
    })
}

/// `--missed`: what a tick that came while no host ran does.
pub const MISSED: [&str; 2] = ["skip", "once"];
/// `--overlap`: what a tick does while the schedule's previous mission is open.
pub const OVERLAP: [&str; 2] = ["skip", "queue"];

/// A schedule as `schedule add` asks for it.
#[derive(Debug, Clone)]
pub struct NewSchedule {
    pub name: String,
    pub cron: String,
    pub tz: Option<String>,
    pub fires: Fires,
    pub missed: String,
    pub overlap: String,
}

/// Check and record a schedule: its name, its cron expression and zone, and the
/// fire it makes (built now as a tick would build it, so a typo is refused here).
pub fn add(host: &Host, new: NewSchedule) -> anyhow::Result<Schedule> {
    let (paths, store) = (host.paths(), host.store());
    crate::sched::check_name("schedule", &new.name).map_err(anyhow::Error::msg)?;
    let tz = new.tz.clone().unwrap_or_else(|| DEFAULT_ZONE.to_string());
    let when = When::parse(&new.cron, &tz).map_err(anyhow::Error::msg)?;
    if !MISSED.contains(&new.missed.as_str()) {
        anyhow::bail!(
            "--missed {:?}: give skip (missed ticks are not run) or once (one run for them all)",
            new.missed
        );
    }
    if !OVERLAP.contains(&new.overlap.as_str()) {
        anyhow::bail!(
            "--overlap {:?}: give skip (no new mission while the last is open) or queue",
            new.overlap
        );
    }
    let now = crate::clock::now_ms();
    let schedule = Schedule {
        name: new.name.clone(),
        cron: new.cron.trim().to_string(),
        tz,
        fires: new.fires,
        cwd: paths.cwd.display().to_string(),
        missed: new.missed,
        overlap: new.overlap,
        paused: false,
        next_tick: when
            .next_after(now)
            .ok_or_else(|| anyhow::anyhow!("--cron {:?} never comes", new.cron))?,
        last_tick: None,
        last_outcome: None,
        last_mission: None,
        created_at: now,
    };
    tick_fire(host, &schedule)
        .map_err(|e| anyhow::anyhow!("schedule {:?} refused: {e:#}", new.name))?;
    if !Schedules::new(store.clone()).add(&schedule)? {
        anyhow::bail!(
            "a schedule named {:?} exists — 'missionboard schedule remove {}' first, or choose another name",
            new.name,
            new.name
        );
    }
    Ok(schedule)
}

/// Schedule `name`, or a refusal naming how to list them.
pub fn get(host: &Host, name: &str) -> anyhow::Result<Schedule> {
    Schedules::new(host.store().clone())
        .get(name)?
        .ok_or_else(|| no_such(name))
}

fn no_such(name: &str) -> anyhow::Error {
    anyhow::anyhow!("no schedule is named {name:?} — 'missionboard schedule list' shows them")
}

/// Pause a schedule: its ticks pass unfired until it is resumed.
pub fn pause(host: &Host, name: &str) -> anyhow::Result<()> {
    if !Schedules::new(host.store().clone()).set_paused(name, true, 0)? {
        return Err(no_such(name));
    }
    Ok(())
}

/// Resume a schedule from its next tick after now (ticks while paused are not
/// owed); returns that tick.
pub fn resume(host: &Host, name: &str) -> anyhow::Result<i64> {
    let s = get(host, name)?;
    let when = When::parse(&s.cron, &s.tz).map_err(anyhow::Error::msg)?;
    let next = when
        .next_after(crate::clock::now_ms())
        .ok_or_else(|| anyhow::anyhow!("--cron {:?} never comes", s.cron))?;
    if !Schedules::new(host.store().clone()).set_paused(name, false, next)? {
        return Err(no_such(name));
    }
    Ok(next)
}

pub fn remove(host: &Host, name: &str) -> anyhow::Result<()> {
    if !Schedules::new(host.store().clone()).remove(name)? {
        return Err(no_such(name));
    }
    Ok(())
}

/// The queued mission a tick of `s` records, built from the workspace it was added
/// in (its templates and envelopes, and the unit's cwd).
fn tick_fire(host: &Host, s: &Schedule) -> anyhow::Result<crate::mission::queue::NewQueued> {
    let cwd = PathBuf::from(&s.cwd);
    let there = Paths::resolve(host.paths().home.clone(), cwd.clone());
    let (mut fire, on) = match &s.fires {
        Fires::Template { template, params } => {
            let t = fill_at(host, &there, template, params)?;
            (t.fire, t.on)
        }
        Fires::Plain {
            agent,
            intent,
            policy,
        } => {
            let mut f = Fire::new(agent, EnvelopeName::new(policy)?, Intent::new(intent)?);
            f.typed_at = TypedAt {
                agent: None,
                envelope: Some("--policy"),
            };
            (f, None)
        }
    };
    fire.cwd = Some(cwd);
    fire::queued_record(&there, fire, on.as_deref())
}

/// What a host did with one due tick.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticked {
    pub schedule: String,
    pub mission: Option<String>,
    pub outcome: String,
}

/// The longest a host sleeps between looks at the schedules when no commit wakes
/// it (a schedule added elsewhere commits, which wakes it at once).
const LONGEST_NAP: Duration = Duration::from_secs(60);
/// How long a host waits before looking again at a due tick it could not claim.
const STUCK_NAP: Duration = Duration::from_secs(1);
/// A tick a host comes to later than this (or half the gap to the next tick, if
/// shorter) counts as missed: no host was running when it came.
const LATE_AFTER_MS: i64 = 60_000;

/// One look: claim every due tick, then say when the soonest next one is.
pub fn tick_due(host: &Host) -> (Vec<Ticked>, Option<i64>) {
    let schedules = Schedules::new(host.store().clone());
    let now = crate::clock::now_ms();
    let mut out = Vec::new();
    match schedules.due(now) {
        Ok(due) => {
            for s in due {
                match tick(host, &schedules, &s, now) {
                    Ok(Some(t)) => out.push(t),
                    Ok(None) => {}
                    Err(e) => tracing::warn!(schedule = %s.name, "schedule tick failed: {e:#}"),
                }
            }
        }
        Err(e) => tracing::warn!("schedules: could not read the due ones: {e}"),
    }
    (out, schedules.soonest().ok().flatten())
}

/// Claim `s`'s due tick. `None`: another host claimed it first.
fn tick(
    host: &Host,
    schedules: &Schedules,
    s: &Schedule,
    now: i64,
) -> anyhow::Result<Option<Ticked>> {
    let when = match When::parse(&s.cron, &s.tz) {
        Ok(w) => w,
        Err(e) => {
            // Parsed at add; a crate or zone database that changed since refuses it.
            let action = TickAction::Skip {
                outcome: format!("paused: {e}"),
            };
            schedules.claim_tick(&s.name, s.next_tick, s.next_tick, s.next_tick + 1, &action)?;
            schedules.set_paused(&s.name, true, 0)?;
            return Ok(None);
        }
    };
    // The newest tick due by now, and how many came since the one recorded.
    let (mut latest, mut owed) = (s.next_tick, 1u64);
    while let Some(n) = when.next_after(latest) {
        if n > now || owed >= 100_000 {
            break;
        }
        latest = n;
        owed += 1;
    }
    let next = when.next_after(now.max(latest)).unwrap_or(i64::MAX);
    let late_after = LATE_AFTER_MS.min((next - latest) / 2);
    let on_time = now - latest <= late_after;
    let missed = if on_time { owed - 1 } else { owed };
    let missed_words = crate::text::counted(missed, "missed tick", "missed ticks");
    let previous_open = s.overlap == "skip"
        && match &s.last_mission {
            Some(id) => host
                .missions()
                .get(id)?
                .is_some_and(|m| !m.status.is_terminal()),
            None => false,
        };
    let action = if !on_time && s.missed == "skip" {
        TickAction::Skip {
            outcome: format!("skipped {missed_words} while no host ran (--missed skip)"),
        }
    } else if previous_open {
        TickAction::Skip {
            outcome: format!(
                "skipped: mission {} from an earlier tick is still open (--overlap skip)",
                s.last_mission.as_deref().unwrap_or_default()
            ),
        }
    } else {
        match tick_fire(host, s) {
            Ok(queued) => {
                let mission_id = uuid::Uuid::new_v4().to_string();
                let outcome = if missed > 0 {
                    format!("queued mission {mission_id}, once for {missed_words}")
                } else {
                    format!("queued mission {mission_id}")
                };
                TickAction::Fire {
                    mission_id,
                    queued: Box::new(queued),
                    outcome,
                }
            }
            Err(e) => TickAction::Skip {
                outcome: format!("failed: {e:#}"),
            },
        }
    };
    if !schedules.claim_tick(&s.name, s.next_tick, latest, next, &action)? {
        return Ok(None);
    }
    Ok(Some(match action {
        TickAction::Fire {
            mission_id,
            outcome,
            ..
        } => Ticked {
            schedule: s.name.clone(),
            mission: Some(mission_id),
            outcome,
        },
        TickAction::Skip { outcome } => Ticked {
            schedule: s.name.clone(),
            mission: None,
            outcome,
        },
    }))
}

/// Tick the schedules until `shutdown` resolves: claim what is due, then sleep
/// until the soonest next tick, woken early by any commit to the store (a schedule
/// added, resumed or removed anywhere). Each thing done is handed to `report`.
pub async fn run(
    host: Host,
    shutdown: impl Future<Output = ()>,
    report: impl Fn(Ticked) + Send + Sync + 'static,
) {
    let mut changes = host.store().changes().subscribe();
    tokio::pin!(shutdown);
    loop {
        let h = host.clone();
        let (ticked, soonest) = blocking(move || tick_due(&h)).await;
        let moved = !ticked.is_empty();
        for t in ticked {
            report(t);
        }
        let nap = match soonest {
            Some(at) => match at - crate::clock::now_ms() {
                // Still due after a look that claimed nothing: a tick that fails
                // to claim (its error logged) is tried again, not spun on.
                ..=0 if !moved => STUCK_NAP,
                ms => Duration::from_millis(ms.max(1) as u64).min(LONGEST_NAP),
            },
            None => LONGEST_NAP,
        };
        tokio::select! {
            _ = changes.next(nap) => {}
            _ = &mut shutdown => break,
        }
    }
}
