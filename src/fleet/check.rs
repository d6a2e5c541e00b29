//! A mission's check, run by its host when the unit finishes `landed`: in the
//! mission's workspace, with the unit's own scrubbed environment and Landlock
//! ruleset, under a supervisor of its own (a check is as untrusted as the agent
//! that wrote what it checks). A pass lets the verdict through; a failure refuses it
//! with what the unit needs to fix the work, until `maxChecks` tries are spent and
//! the mission rests stuck on the last failure.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::acp_client::{SupervisedEnd, run_supervised};
use crate::mission::check::{CheckRecord, CheckTry};
use crate::mission::{Missions, Status};

/// How much of a check's output is kept: its tail, enough to show what failed.
pub const OUTPUT_TAIL_BYTES: usize = 4096;

/// How to run a unit's check the way the unit itself runs: fixed when the unit
/// starts, from what its own spawn was given.
pub struct CheckSite {
    /// The supervisor binary (this one).
    pub supervisor: PathBuf,
    /// The unit's environment, as scrubbed for it.
    pub env: BTreeMap<OsString, OsString>,
    /// The unit's workspace (its worktree, for a worktree mission).
    pub cwd: PathBuf,
    /// The unit's grants; the ruleset is built afresh from them for each try.
    pub confinement: crate::confine::Confinement,
    /// Whether the unit itself ran confined (a kernel without Landlock runs both
    /// unconfined, and says so on the fire).
    pub confined: bool,
}

/// What the verdict `landed` comes to once the check has run.
pub enum Gate {
    /// No check, or it passed: the verdict goes through.
    Pass,
    /// It failed with tries left: the verdict is refused with this text.
    Retry(String),
    /// It failed its last try: the mission rests stuck with this reason, and the
    /// unit is told so — unless the envelope says `pause_ask` and this call ran the
    /// try (`ran`), when the operator is asked for more tries instead.
    Exhausted {
        reason: String,
        told: String,
        ran: bool,
    },
}

impl CheckSite {
    /// Run `mission_id`'s check, if it has one, and record the try.
    pub async fn gate(&self, missions: &Missions, mission_id: &str) -> Result<Gate, String> {
        let fail = |e: crate::mission::MissionError| format!("missiontools: finish mission: {e}");
        let (svc, id) = (missions.clone(), mission_id.to_string());
        let Some(record) = crate::store::blocking(move || svc.check(&id))
            .await
            .map_err(fail)?
        else {
            return Ok(Gate::Pass);
        };
        if record.state == crate::mission::check::CheckState::Passed {
            return Ok(Gate::Pass);
        }
        // No tries left before this one (spent over earlier runs when the envelope
        // counts them in total, or the operator granted no more): it does not run.
        if record.remaining() == 0 {
            let reason = format!(
                "no check tries remain: {} of {} spent on `{}` (last try: {})",
                record.tries,
                record.max_checks,
                record.command,
                record.last_outcome.as_deref().unwrap_or("none")
            );
            let told = format!(
                "missiontools: finish mission: not landed — {reason}. The mission is finished {}. End your turn.",
                Status::Stuck
            );
            return Ok(Gate::Exhausted {
                reason,
                told,
                ran: false,
            });
        }
        let (svc, id) = (missions.clone(), mission_id.to_string());
        crate::store::blocking(move || svc.check_running(&id))
            .await
            .map_err(fail)?;
        // A call dropped mid-try (the unit went away, the mission was stopped) ends
        // the try's tree with it; the record must not say it still runs.
        let mut running = Running {
            missions: Some(missions.clone()),
            mission_id: mission_id.to_string(),
        };
        let ran = self.run(&record).await;
        running.missions = None;
        let (svc, id, t) = (missions.clone(), mission_id.to_string(), ran.clone());
        let after = crate::store::blocking(move || svc.record_check_try(&id, &t))
            .await
            .map_err(fail)?;
        if ran.passed {
            return Ok(Gate::Pass);
        }
        Ok(judge_failure(&after, &ran))
    }

    /// One try of `check`: its command under the unit's supervisor and ruleset.
    async fn run(&self, check: &CheckRecord) -> CheckTry {
        let started = Instant::now();
        let prepared = if self.confined {
            let grants = self.confinement.clone();
            match crate::store::blocking(move || crate::confine::prepare(&grants)).await {
                Ok(Some(p)) => Some(p),
                Ok(None) => None,
                Err(e) => {
                    return not_started(
                        format!("its sandbox could not be built: {e}"),
                        started.elapsed(),
                    );
                }
            }
        } else {
            None
        };
        let run = run_supervised(
            &self.supervisor,
            &check.command,
            &self.env,
            &self.cwd,
            prepared,
            check.timeout,
            OUTPUT_TAIL_BYTES,
        )
        .await;
        let duration = started.elapsed();
        let output = tail(&crate::text::sanitize(&run.output), OUTPUT_TAIL_BYTES);
        match run.end {
            SupervisedEnd::Exited(info) => CheckTry {
                passed: info.code == Some(0),
                exit: info.code,
                outcome: match (info.code, info.signal) {
                    (Some(code), _) => format!("exit {code}"),
                    (None, Some(sig)) => format!("killed by signal {sig}"),
                    (None, None) => "ended with an unknown status".to_string(),
                },
                output,
                duration,
            },
            SupervisedEnd::TimedOut => CheckTry {
                passed: false,
                exit: None,
                outcome: format!(
                    "timed out after {} (its processes were ended)",
                    crate::duration::format(check.timeout)
                ),
                output,
                duration,
            },
            SupervisedEnd::NotStarted(e) => not_started(e, duration),
        }
    }
}

/// A try in flight: dropped before its outcome is recorded, it puts the record back
/// to where it stood before the try (a try cut short is not counted).
struct Running {
    missions: Option<Missions>,
    mission_id: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(missions) = self.missions.take() else {
            return;
        };
        let id = std::mem::take(&mut self.mission_id);
        let settle = move || {
            if let Err(e) = missions.check_interrupted(&id) {
                tracing::warn!(mission = %id, "could not settle an interrupted check: {e}");
            }
        };
        // Never on a worker thread: the store may wait out another writer.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(settle)),
            Err(_) => settle(),
        }
    }
}

fn not_started(why: String, duration: Duration) -> CheckTry {
    CheckTry {
        passed: false,
        exit: None,
        outcome: format!("could not start: {}", crate::text::one_line(&why)),
        output: String::new(),
        duration,
    }
}

/// The last `max` bytes of `text`, cut at a character boundary.
fn tail(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}

/// A check paused on the operator (`onExhausted: pause_ask`) whose ask `ask` was
/// settled without more tries — denied, or expired (an ask's on-timeout verdict is
/// always a denial) — rests its mission stuck on the last failure, the failure its
/// blocker: whoever settles it, the answering process or the host that resumes the
/// run under it. Returns whether this call rested it (false: not a refused check
/// pause, or the mission is at rest already).
pub fn rest_on_refused_pause(
    missions: &Missions,
    ask: &crate::asks::Ask,
) -> Result<bool, crate::mission::MissionError> {
    if ask.tool_name != crate::asks::CHECK_TOOL || ask.approved() != Some(false) {
        return Ok(false);
    }
    let Some(mission_id) = ask.mission_id.as_deref() else {
        return Ok(false);
    };
    let (Some(check), false) = (
        missions.check(mission_id)?,
        missions.require(mission_id)?.status.is_terminal(),
    ) else {
        return Ok(false);
    };
    let why = if ask.state == crate::asks::AskState::Expired {
        "its ask expired before anyone granted more"
    } else {
        "the operator granted no more"
    };
    let reason = format!(
        "check failed {} of {} tries: `{}` — {}; {why}",
        check.tries,
        check.max_checks,
        check.command,
        check.last_outcome.as_deref().unwrap_or("failed")
    );
    missions.add_blocker(
        mission_id,
        crate::text::excerpt(&reason, 160),
        check.last_output.unwrap_or_default(),
    )?;
    match missions.finish(mission_id, Status::Stuck, &reason) {
        Ok(done) => Ok(done.changed),
        Err(e) => {
            tracing::info!(mission = %mission_id, "the check's pause lost to another verdict: {e}");
            Ok(false)
        }
    }
}

/// A failed try: the unit is told what failed and how many tries remain, or — at
/// the last — the mission rests stuck on it.
fn judge_failure(after: &CheckRecord, ran: &CheckTry) -> Gate {
    let output = if ran.output.trim().is_empty() {
        "(no output)".to_string()
    } else {
        ran.output.trim_end().to_string()
    };
    let head = format!(
        "the check failed (try {} of {}): `{}` — {}",
        after.tries, after.max_checks, after.command, ran.outcome
    );
    if after.remaining() == 0 {
        let reason = format!(
            "check failed {} of {} tries: `{}` — {}",
            after.tries, after.max_checks, after.command, ran.outcome
        );
        let told = format!(
            "missiontools: finish mission: not landed — {head}. No tries remain: the mission is finished {}. Output (tail):\n{output}\n\nEnd your turn.",
            Status::Stuck
        );
        return Gate::Exhausted {
            reason,
            told,
            ran: true,
        };
    }
    let remain = crate::text::counted(after.remaining(), "try remains", "tries remain");
    Gate::Retry(format!(
        "missiontools: finish mission: not landed — {head}. Output (tail):\n{output}\n\n{remain}: fix the work, then call mission_finish with status landed again (the check runs again)."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(command: &str, tries: u64, max_checks: u64) -> CheckRecord {
        CheckRecord {
            command: command.into(),
            timeout: Duration::from_secs(5),
            state: crate::mission::check::CheckState::Failed,
            tries,
            max_checks,
            last_exit: None,
            last_outcome: None,
            last_output: None,
            last_duration_ms: None,
        }
    }

    #[tokio::test]
    async fn a_check_that_cannot_start_is_a_failure_that_says_so() {
        let site = CheckSite {
            supervisor: PathBuf::from("/nonexistent/missionboard"),
            env: BTreeMap::new(),
            cwd: std::env::temp_dir(),
            confinement: Default::default(),
            confined: false,
        };
        let t = site.run(&record("true", 0, 3)).await;
        assert!(!t.passed);
        assert_eq!(t.exit, None);
        assert!(
            t.outcome
                .starts_with("could not start: the unit supervisor /nonexistent/missionboard: "),
            "{}",
            t.outcome
        );
    }

    #[test]
    fn the_last_failed_try_rests_the_mission_and_tells_the_unit_so() {
        let failed = CheckTry {
            passed: false,
            exit: Some(2),
            outcome: "exit 2".into(),
            output: String::new(),
            duration: Duration::from_millis(5),
        };
        let Gate::Exhausted { reason, told, .. } = judge_failure(&record("make", 3, 3), &failed)
        else {
            panic!("the third of three tries rests the mission");
        };
        assert_eq!(reason, "check failed 3 of 3 tries: `make` — exit 2");
        assert_eq!(
            told,
            "missiontools: finish mission: not landed — the check failed (try 3 of 3): `make` — exit 2. No tries remain: the mission is finished stuck. Output (tail):\n(no output)\n\nEnd your turn."
        );
        let Gate::Retry(refused) = judge_failure(&record("make", 2, 3), &failed) else {
            panic!("a try remains");
        };
        assert!(
            refused.ends_with("(no output)\n\n1 try remains: fix the work, then call mission_finish with status landed again (the check runs again)."),
            "{refused}"
        );
    }

    #[test]
    fn a_tail_is_cut_on_a_character_boundary() {
        assert_eq!(tail("abc", 5), "abc");
        assert_eq!(tail("abcdef", 3), "def");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("aéb", 2), "b");
    }
}
