//! `missionboard mission fire <agent> <intent…> --wait [--timeout 30m] [--policy X] [--oracle]`.
//! The unit is a child of this process: the command blocks until the mission rests,
//! and tears the unit down on every way out. With `--oracle` (beta) the oracle driver
//! lives exactly as long as the command.

use std::time::{Duration, Instant};

use super::Ctx;
use super::mission_cmd::{report_lines, status_line};
use super::out::{out, outln};
use crate::agents::AgentCaps;
use crate::envelope::bounds::{ComputeField, bound_status, describe_all};
use crate::envelope::format::{ComputeBounds, OnExhausted};
use crate::mission::Intent;
use crate::mission::Status;
use crate::ops::fire::{self, Fire};
use crate::ops::host::{self, Host, Hosting};
use crate::presets;
use crate::signals::Signals;
use crate::store::Store;

/// How often the wait re-reads the mission record when no commit wakes it sooner.
const POLL: Duration = Duration::from_millis(250);

pub(super) struct FireArgs {
    /// `--template <name>` and its `key=value` words: the template gives the agent,
    /// envelope, intent, worktree, check and label (flags given beside it win).
    pub template: Option<(String, Vec<String>)>,
    pub agent: String,
    pub intent: Vec<String>,
    pub policy: Option<String>,
    pub wait: bool,
    pub timeout: String,
    /// Mount the oracle attention driver (only parsed under opt-in-beta).
    pub oracle: bool,
    /// Work in a git worktree of its own.
    pub worktree: bool,
    /// Record it queued for a `missionboard host` instead of hosting it here.
    pub queue: bool,
    /// The host label it must run under (queued fires only).
    pub on: Option<String>,
    /// `--check` / `--no-check`.
    pub check: crate::mission::check::CheckChoice,
    /// `--add-dir`: extra roots, as typed.
    pub add_dirs: Vec<std::path::PathBuf>,
}

impl FireArgs {
    /// What a hosted and a queued fire share: the `--timeout`, the store, and the
    /// request (the agent, the envelope or the default one, the intent checked once).
    pub(super) fn request(&self, ctx: &Ctx) -> anyhow::Result<(Duration, Store, Fire)> {
        let timeout =
            crate::duration::parse(&self.timeout).map_err(|e| anyhow::anyhow!("--timeout: {e}"))?;
        let store = ctx.store()?;
        // The shipped envelopes are always there to be named, whatever was deleted.
        if let Err(e) = presets::seed_policies_quietly(&ctx.paths.home) {
            tracing::warn!("could not refresh the preset envelopes: {e}");
        }
        let host = ctx.host(&store)?;
        if let Some((name, words)) = &self.template {
            return self.templated(&host, timeout, store, name, words);
        }
        let (envelope, origin) = fire::envelope_or_default(&host, self.policy.as_deref())?;
        let mut request = Fire::new(&self.agent, envelope, Intent::new(&self.intent.join(" "))?);
        request.worktree = self.worktree;
        // The agent is the command's own argument: its name says it all.
        request.typed_at = fire::TypedAt {
            agent: None,
            envelope: Some(origin),
        };
        request.check = self.check.clone();
        request.add_dirs = self.add_dirs.clone();
        Ok((timeout, store, request))
    }

    /// The template's fire, with the flags given beside `--template` applied over it.
    fn templated(
        &self,
        host: &Host,
        timeout: Duration,
        store: Store,
        name: &str,
        words: &[String],
    ) -> anyhow::Result<(Duration, Store, Fire)> {
        let pairs = crate::sched::template::parse_pairs(words).map_err(anyhow::Error::msg)?;
        let t = crate::ops::schedule::template_fire(host, name, &pairs)?;
        let mut request = t.fire;
        if let Some(p) = &self.policy {
            request.envelope = crate::mission::EnvelopeName::new(p)?;
            request.typed_at.envelope = Some("--policy");
        }
        request.worktree |= self.worktree;
        if self.check != crate::mission::check::CheckChoice::FromEnvelope {
            request.check = self.check.clone();
        }
        request.add_dirs = self.add_dirs.clone();
        Ok((timeout, store, request))
    }

    /// The host label a queued fire must run on: `--on`, else the template's.
    pub(super) fn run_on(&self, ctx: &Ctx) -> anyhow::Result<Option<String>> {
        if self.on.is_some() {
            return Ok(self.on.clone());
        }
        match &self.template {
            Some((name, _)) => Ok(crate::sched::template::load(&ctx.paths, name)
                .map_err(anyhow::Error::msg)?
                .template
                .on),
            None => Ok(None),
        }
    }
}

pub(super) fn run(ctx: &Ctx, args: FireArgs) -> anyhow::Result<i32> {
    if !args.wait {
        anyhow::bail!(
            "mission fire requires --wait: the dispatched unit is a child subprocess of this command and dies when it exits, so a detached fire from a one-shot CLI would tear its own mission down. Pass --wait to block until the mission finishes, or fire from a long-lived host (the board's :mission, or an editor session's /mission)"
        );
    }
    let (timeout, store, request) = args.request(ctx)?;
    let runtime = crate::runtime::multi_thread()?;
    // Mounted before anything is fired: a chain or envelope that cannot load refuses
    // the fire whole.
    let oracle = if args.oracle {
        Some(host::mount_oracle(&ctx.paths, &store)?)
    } else {
        None
    };
    runtime.block_on(async move {
        // SIGINT, SIGTERM and SIGHUP are ours before the first unit is spawned: one
        // arriving mid-handshake ends the command through the teardown below, never
        // by the default disposition.
        let mut signals = Signals::termination_or_interrupt()?;
        let host = Host::open(&ctx.paths, &store, Hosting::Units)?;
        if let Some(o) = oracle {
            outln!("{}", o.mount_line())?;
            crate::ops::answer::start_oracle(&host, o)?;
        }
        let mut ended = String::from("the fire ended");
        let code = fire_and_wait(&host, &mut signals, request, timeout, &mut ended).await;
        host.close(&ended).await;
        code
    })
}

/// `ended` is set to how the wait ended, which a review of the oracle this fire
/// mounted, cut short by the ending, names in its trace.
async fn fire_and_wait(
    host: &Host,
    signals: &mut Signals,
    request: Fire,
    timeout: Duration,
    ended: &mut String,
) -> anyhow::Result<i32> {
    let (agent, policy) = (request.agent.clone(), request.envelope.clone());
    let intent = request.intent.clone();
    let dispatch = fire::dispatch(host, request);
    let d = tokio::select! {
        d = dispatch => d?,
        _ = signals.next() => {
            // Dropping the dispatch drops the unit it was starting, whose supervisor
            // then ends its tree.
            outln!("mission fire interrupted while the unit was starting: it is torn down with this process.")?;
            *ended = "the fire was interrupted".into();
            return Ok(1);
        }
    };
    let id = d.mission_id.clone();
    outln!(
        "Mission fired at agent {agent:?} under envelope {:?}.",
        policy.as_str()
    )?;
    outln!("Intent: {intent}")?;
    outln!(
        "Mission {id} (instance {}, session {}).",
        d.instance_id,
        d.session_id
    )?;
    for line in compute_narration(&agent, &d.compute, &d.caps) {
        outln!("{line}")?;
    }
    for line in sandbox_narration(&d.sandbox) {
        outln!("{line}")?;
    }
    if let Some(c) = host.missions().check(&id)? {
        outln!(
            "Check: `{}` must pass in its workspace before it lands (run under the unit's own sandbox; up to {}, {} each).",
            crate::text::one_line(&c.command),
            crate::text::counted(c.max_checks, "try", "tries"),
            crate::duration::format(c.timeout)
        )?;
    }
    if let Some(wt) = &d.worktree {
        outln!(
            "Worktree: {} on branch {} from {} — see it with `missionboard mission diff {id}`, land it with `mission merge {id}` or drop it with `mission discard {id}`.",
            wt.path.display(),
            wt.branch,
            crate::worktree::short_id(&wt.base)
        )?;
    }
    outln!(
        "Waiting for a terminal status (timeout {}; the unit is a child of this process and is torn down when it exits)…",
        crate::duration::format(timeout)
    )?;
    wait_for_rest(host, signals, &id, timeout, ended).await
}

/// Follow mission `id`, whose unit this process hosts, until it rests, its unit
/// goes idle, `timeout` passes or a signal comes; then print its reports. Exit code
/// 0 when it landed.
pub(super) async fn wait_for_rest(
    host: &Host,
    signals: &mut Signals,
    id: &str,
    timeout: Duration,
    ended: &mut String,
) -> anyhow::Result<i32> {
    let id = id.to_string();
    let mut deadline = Instant::now() + timeout;
    // Set once the wait outlasts --timeout for a review in flight: the review's own
    // budget, not the fire's, then decides when it ends.
    let mut waited_for_review = false;
    let mut changes = host.missions().store().changes().subscribe();
    let mission = loop {
        let m = host
            .missions()
            .require(&id)
            .map_err(|e| anyhow::anyhow!("waiting on mission {id}: {e}"))?;
        if m.status != Status::Open {
            outln!("Mission {id} finished: {}", status_line(&m))?;
            *ended = format!("the mission came to rest ({})", m.status);
            break m;
        }
        // Nothing will move it: the unit's turns are over and nothing is pending.
        if let Some(why) = host.idle_reason(&id) {
            // The reason may quote the unit's own closing sentence.
            let stop = if why.ends_with(['.', '!', '?', '…']) {
                ""
            } else {
                "."
            };
            outln!(
                "Mission {id} is still {} with no verdict and nothing pending: {why}{stop} It is torn down with this process; its record and reports survive — see 'missionboard mission show {id}'.",
                m.status
            )?;
            *ended = "the unit stopped with nothing pending".into();
            break m;
        }
        let review = host.review_in_flight();
        if Instant::now() >= deadline
            && !waited_for_review
            && let Some((ask, review_ends)) = &review
            && *review_ends > deadline
        {
            outln!(
                "Mission {id} reached its --timeout {} while the oracle reviews ask {ask}: waiting for that review, at most {} more (its budget).",
                crate::duration::format(timeout),
                crate::duration::format(round_up_to_s(
                    review_ends.saturating_duration_since(Instant::now())
                ))
            )?;
            deadline = *review_ends;
            waited_for_review = true;
        }
        if Instant::now() >= deadline || (waited_for_review && review.is_none()) {
            *ended = format!(
                "the fire's --timeout {} ran out",
                crate::duration::format(timeout)
            );
            outln!(
                "mission {id} did not finish within {}: it is torn down with this process (the unit is a child subprocess). Its record and any reports so far survive — see 'missionboard mission show {id}'. Re-run with a larger --timeout, or fire from a long-lived host (the board's :mission, or an editor session's /mission).",
                crate::duration::format(timeout)
            )?;
            out!("{}", pending_lines(host, &id)?)?;
            return Ok(1);
        }
        tokio::select! {
            _ = changes.next(POLL.min(deadline.saturating_duration_since(Instant::now()))) => {}
            _ = signals.next() => {
                outln!(
                    "mission {id} wait interrupted: the unit is torn down with this process. Its record and any reports so far survive — see 'missionboard mission show {id}'."
                )?;
                *ended = "the fire was interrupted".into();
                return Ok(1);
            }
        }
    };
    let reports = host.missions().reports(&id, 200)?;
    if !reports.is_empty() {
        outln!("Reports:")?;
        out!("{}", report_lines(&reports))?;
    }
    outln!("Full detail: missionboard mission reports {id}")?;
    Ok(if mission.status == Status::Landed {
        0
    } else {
        1
    })
}

fn round_up_to_s(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// What a timed-out mission is waiting on: each pending ask and how to answer it
/// (the answer resumes the run even after this process is gone).
fn pending_lines(host: &Host, mission_id: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    for a in host.asks().for_mission(mission_id, 200)? {
        if !a.is_pending() {
            continue;
        }
        let how = if a.takes_words() {
            "--answer \"...\""
        } else {
            "--approve|--deny"
        };
        out.push_str(&format!(
            "It is waiting on {} ask {}: {}\nAnswer it with 'missionboard approvals respond {} {how}'.\n",
            a.kind(),
            a.id,
            a.args_summary,
            a.id
        ));
    }
    Ok(out)
}

/// What the mission's compute bounds amount to for this agent, each field with
/// its truthful label; nothing when the envelope sets none.
fn compute_narration(agent: &str, bounds: &ComputeBounds, caps: &AgentCaps) -> Vec<String> {
    let mut lines = Vec::new();
    let described = describe_all(bounds, Some(caps));
    if described.is_empty() {
        return lines;
    }
    let crossing = match bounds.on_exhausted {
        OnExhausted::FinishStuck => "a crossed bound finishes the mission stuck",
        OnExhausted::PauseAsk => {
            "a crossed bound pauses the mission and asks the operator to extend it or stop"
        }
    };
    lines.push(format!("Compute bounds: {described}; {crossing}."));
    if !bounds.model_allowlist.is_empty() {
        lines.push(match caps.offered_models() {
            Some(m) => format!(
                "Model: {:?}, of the models agent {agent:?} offers ({}), as modelAllowlist permits.",
                m.current,
                m.available.join(", ")
            ),
            None => format!(
                "modelAllowlist is {} for agent {agent:?}: it advertises no session models, so the host can neither see nor choose the model it runs on.",
                bound_status(ComputeField::ModelAllowlist, bounds, Some(caps)).label()
            ),
        });
    }
    lines
}

/// The unit's sandbox, each limit with its truthful label (on a kernel without
/// Landlock, one sentence saying none of it is enforced), and any tree granted
/// around the home.
fn sandbox_narration(sandbox: &crate::envelope::sandbox::Resolved) -> Vec<String> {
    let abi = crate::confine::landlock_abi();
    let mut lines = vec![format!(
        "Sandbox: {}.",
        crate::envelope::sandbox::narration(&sandbox.decl, abi)
    )];
    lines.extend(sandbox.carved.iter().map(|c| format!("Sandbox: {c}.")));
    lines
}
