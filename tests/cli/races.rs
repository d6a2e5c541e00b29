//! Compute bounds a race cannot cross: a unit's tool-call and usage updates travel on
//! its stdout, its verdict on the mission socket, and under full CPU load the verdict
//! must still be judged with every update the unit sent before it counted.
//!
//! `MISSIONBOARD_RACE_RUNS` sets how many missions each case fires (default 20; set
//! it to 200 for a soak by hand).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::harness::{Run, Sandbox};

const TOOLS_REASON: &str = "compute bound exhausted: maxToolCalls=3 — the mission reached its envelope-gated action budget; this call and any after it are refused.";
const TOKENS_REASON: &str = "compute bound exhausted: maxTokens=100 (reported usage 500) — the mission spent its token budget.";

/// A busy loop on every core, for as long as it is held.
struct FullLoad {
    stop: Arc<AtomicBool>,
    spinners: Vec<std::thread::JoinHandle<()>>,
}

impl FullLoad {
    fn start() -> FullLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let spinners = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        FullLoad { stop, spinners }
    }
}

impl Drop for FullLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for s in self.spinners.drain(..) {
            let _ = s.join();
        }
    }
}

fn runs(default: usize) -> usize {
    match std::env::var("MISSIONBOARD_RACE_RUNS") {
        Ok(n) => n
            .parse()
            .unwrap_or_else(|_| panic!("MISSIONBOARD_RACE_RUNS={n:?} is not a count")),
        Err(_) => default,
    }
}

/// Fire `runs` missions of agent `stub` under `envelope` with every core busy; every
/// run must be `held` (else the failure names how many `strayed`, and shows the first).
fn every_run_under_load(
    sb: &Sandbox,
    envelope: &str,
    runs: usize,
    strayed: &str,
    held: impl Fn(&Run) -> bool,
) {
    let _load = FullLoad::start();
    let mut missed = Vec::new();
    for n in 0..runs {
        let run = sb.fire_stub(envelope, "120s", None);
        if !held(&run) {
            missed.push(format!(
                "run {n}: exit {}\n{}{}",
                run.code, run.stdout, run.stderr
            ));
        }
    }
    assert!(
        missed.is_empty(),
        "{} of {runs} missions {strayed}; the first:\n{}",
        missed.len(),
        missed[0]
    );
}

/// Fire `runs` missions of the one-turn `steps` under envelope compute `compute`
/// with every core busy; every one must finish stuck on `reason` (the first that
/// did not is shown).
fn fire_under_load(steps: &str, compute: &str, reason: &str, runs: usize) {
    let sb = Sandbox::new();
    let script = format!(r#"{{"name":"race","turns":[{{"steps":[{steps}]}}]}}"#);
    sb.declare_stubs(&[("stub", Some(&script))]);
    sb.write_compute_envelope("bounded", compute);
    let stuck_line = format!(" finished: stuck — {reason}");
    every_run_under_load(&sb, "bounded", runs, "were not held by the bound", |run| {
        run.code == 1
            && run
                .stdout
                .lines()
                .any(|l| l.starts_with("Mission ") && l.ends_with(&stuck_line))
    });
}

fn ten_calls_then_land() -> String {
    let mut steps: Vec<String> = (1..=10)
        .map(|n| format!(r#"{{"tool_call":"call {n}"}}"#))
        .collect();
    steps.push(r#"{"finish":"landed"}"#.into());
    steps.join(",")
}

const USAGE_THEN_LAND: &str = r#"{"usage":{"used":500,"size":32768}},{"finish":"landed"}"#;

#[test]
fn ten_tool_calls_then_a_landing_under_a_bound_of_three_never_land_under_load() {
    fire_under_load(
        &ten_calls_then_land(),
        r#"{"maxToolCalls":3,"onExhausted":"finish_stuck"}"#,
        TOOLS_REASON,
        runs(20),
    );
}

#[test]
fn usage_past_the_token_bound_then_a_landing_never_lands_under_load() {
    fire_under_load(
        USAGE_THEN_LAND,
        r#"{"maxTokens":100,"onExhausted":"finish_stuck"}"#,
        TOKENS_REASON,
        runs(20),
    );
}

/// Under load, a unit offering models runs on the allowlisted one in every run: its
/// result says the model it ran on.
fn allowlisted_model_under_load(runs: usize) {
    let sb = Sandbox::new();
    let script = r#"{"name":"models","models":["a","b"],"turns":[{"steps":[{"report":{"kind":"result","summary":"running on {{model}}"}},{"finish":"landed"}]}]}"#;
    sb.declare_stubs(&[("stub", Some(script))]);
    sb.write_compute_envelope("onlyb", r#"{"modelAllowlist":["b"]}"#);
    every_run_under_load(
        &sb,
        "onlyb",
        runs,
        "did not run on the allowlisted model",
        |run| {
            run.code == 0
                && run.stdout.contains("\nModel: \"b\", of the models agent \"stub\" offers (a, b), as modelAllowlist permits.\n")
                && run.stdout.contains("  [result] running on b\n")
        },
    );
}

#[test]
fn the_allowlisted_model_holds_in_every_run_under_load() {
    allowlisted_model_under_load(runs(20));
}
