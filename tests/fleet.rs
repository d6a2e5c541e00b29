//! One host, several missions: the in-process fleet (as the board runs it) over the
//! real stub agent binary and a real store in a scratch home.

mod common;

use std::path::Path;

use common::{BIN, FleetHost, wait_for_async};
use missionboard::fleet::DispatchRequest;
use missionboard::mission::{EnvelopeName, Intent, Status};
use missionboard::ops::host::{Host, Hosting};
use missionboard::ops::stop::stop_mission;
use missionboard::paths::Paths;

/// Declare one more agent in the host's `agents.toml` (read afresh on each fire).
fn declare(h: &FleetHost, declaration: &str) {
    let path = h.home.join("agents.toml");
    let mut toml = std::fs::read_to_string(&path).unwrap();
    toml.push_str(declaration);
    write(&path, &toml);
}

/// Declare `slow`: the `land` stub, taking 10 s to answer `initialize`.
fn declare_slow(h: &FleetHost) {
    declare(
        h,
        &format!(
            "[agents.slow]\ncommand = {BIN:?}\nargs = [\"stub-agent\", \"--script\", {:?}]\nenv = {{ STUB_INITIALIZE_DELAY_MS = \"10000\" }}\n",
            h.home.join("land.json").display().to_string()
        ),
    );
}

fn request(agent: &str) -> DispatchRequest {
    DispatchRequest {
        agent_name: agent.into(),
        intent: Intent::new(&format!("{agent} something")).unwrap(),
        envelope: EnvelopeName::new("default").unwrap(),
        cwd: None,
        worktree: false,
        check: Default::default(),
        add_dirs: Vec::new(),
    }
}

const MUTE: &str = r#"{"name":"mute","turns":[{"steps":["mute"]},{"steps":["mute"]}]}"#;
const LAND: &str = r#"{"name":"land","turns":[{"steps":[{"report":{"kind":"result","summary":"ok"}},{"finish":"landed"}]}]}"#;
const CRASH: &str = r#"{"name":"crash","turns":[{"steps":[{"crash":9}]}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dispatch_past_the_fleet_width_cap_is_refused_and_leaves_no_record() {
    let h = FleetHost::new("1", &[("mute", MUTE), ("land", LAND)]);
    let _teardown = h.fleet.spawn_teardown();
    let first = h.fleet.dispatch(request("mute")).await.unwrap();
    let missions = h.fleet.missions().clone();
    // The mute unit gets its nudge, the runtime files its blocker, and it stays open.
    wait_for_async(20, "the runtime blocker", || {
        (missions.report_count(&first.mission_id).unwrap() == 1).then_some(())
    })
    .await;
    assert_eq!(
        missions.require(&first.mission_id).unwrap().status,
        Status::Open
    );
    assert_eq!(h.fleet.open_units(), 1);

    let refused = h.fleet.dispatch(request("land")).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "conflict: fleet admission refused: 1 units are already open, at the fleet-width cap (fleet-max-parallel=1). Wait for a unit to conclude or stop one, or raise the cap: `missionboard config set fleet-max-parallel <N>` (0 = unlimited)."
    );
    assert_eq!(
        missions.list(10).unwrap().len(),
        1,
        "a refusal leaves no record"
    );

    // Stopping the mute mission gives its width back once the host reaps the unit.
    let paths = Paths::resolve(h.home.clone(), h.home.clone());
    let operator = Host::open(&paths, missions.store(), Hosting::OnNeed).unwrap();
    stop_mission(&operator, &first.mission_id, None).unwrap();
    wait_for_async(20, "the unit to be reaped", || {
        (h.fleet.open_units() == 0).then_some(())
    })
    .await;
    let second = h.fleet.dispatch(request("land")).await.unwrap();
    wait_for_async(20, "the second mission to land", || {
        (missions.require(&second.mission_id).unwrap().status == Status::Landed).then_some(())
    })
    .await;
    h.fleet.shutdown().await;
}

/// Admission reserves a slot and lets go of the lock before the unit is spawned:
/// a unit whose `initialize` takes 10 s delays no other fire, and its reserved slot
/// still counts against the cap while it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_unit_slow_to_initialize_delays_no_other_fire_and_holds_its_width_meanwhile() {
    let h = FleetHost::new("2", &[("mute", MUTE), ("land", LAND)]);
    declare_slow(&h);
    let _teardown = h.fleet.spawn_teardown();
    let missions = h.fleet.missions().clone();
    let fleet = h.fleet.clone();
    let slow = tokio::spawn(async move { fleet.dispatch(request("slow")).await });
    wait_for_async(20, "the slow unit's reserved slot", || {
        (h.fleet.open_units() == 1).then_some(())
    })
    .await;

    let mute = h.fleet.dispatch(request("mute")).await.unwrap();
    assert!(
        !slow.is_finished(),
        "the second fire was dispatched while the first unit was still initializing"
    );
    let refused = h.fleet.dispatch(request("land")).await.unwrap_err();
    assert_eq!(
        refused.to_string(),
        "conflict: fleet admission refused: 2 units are already open, at the fleet-width cap (fleet-max-parallel=2). Wait for a unit to conclude or stop one, or raise the cap: `missionboard config set fleet-max-parallel <N>` (0 = unlimited)."
    );
    assert!(
        !slow.is_finished(),
        "the cap refused the third fire while the slow unit held only a reservation"
    );

    let slow = slow
        .await
        .unwrap()
        .expect("the slow unit starts in the end");
    wait_for_async(30, "the slow mission to land", || {
        (missions.require(&slow.mission_id).unwrap().status == Status::Landed).then_some(())
    })
    .await;
    let recorded: Vec<String> = missions
        .list(10)
        .unwrap()
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(
        recorded.len(),
        2,
        "the refusal left no record: {recorded:?}"
    );
    assert!(recorded.contains(&mute.mission_id) && recorded.contains(&slow.mission_id));
    h.fleet.shutdown().await;
}

/// A unit that cannot start, and a fire abandoned while its unit starts, give their
/// reserved slot back: at a cap of one, the next fire is admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_or_abandoned_start_gives_its_width_back() {
    let h = FleetHost::new("1", &[("land", LAND)]);
    declare_slow(&h);
    let fleet = h.fleet.clone();
    let abandoned = tokio::spawn(async move { fleet.dispatch(request("slow")).await });
    wait_for_async(20, "the slow unit's reserved slot", || {
        (h.fleet.open_units() == 1).then_some(())
    })
    .await;
    abandoned.abort();
    wait_for_async(20, "the abandoned fire's slot back", || {
        (h.fleet.open_units() == 0).then_some(())
    })
    .await;

    declare(&h, "[agents.missing]\ncommand = \"/nonexistent/agent\"\n");
    let err = h.fleet.dispatch(request("missing")).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("agent \"missing\" could not start a session: "),
        "{err}"
    );
    assert_eq!(h.fleet.open_units(), 0);
    let missions = h.fleet.missions().clone();
    let landed = h.fleet.dispatch(request("land")).await.unwrap();
    wait_for_async(20, "the next mission to land", || {
        (missions.require(&landed.mission_id).unwrap().status == Status::Landed).then_some(())
    })
    .await;
    h.fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_unit_derails_its_mission_and_the_host_carries_on() {
    let h = FleetHost::new("8", &[("crash", CRASH), ("land", LAND)]);
    let _teardown = h.fleet.spawn_teardown();
    let missions = h.fleet.missions().clone();
    let crashed = h.fleet.dispatch(request("crash")).await.unwrap();
    let m = wait_for_async(20, "the derail", || {
        let m = missions.require(&crashed.mission_id).unwrap();
        m.status.is_terminal().then_some(m)
    })
    .await;
    assert_eq!(m.status, Status::Derailed);
    assert!(
        m.status_reason
            .unwrap()
            .starts_with("unit turn failed: unit process exited (exit code 9)")
    );
    wait_for_async(20, "the crashed unit's width back", || {
        (h.fleet.open_units() == 0).then_some(())
    })
    .await;

    let landed = h.fleet.dispatch(request("land")).await.unwrap();
    wait_for_async(20, "the next mission to land", || {
        (missions.require(&landed.mission_id).unwrap().status == Status::Landed).then_some(())
    })
    .await;
    h.fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_bound_of_one_drops_the_nudge_and_finishes_stuck() {
    let h = FleetHost::new("8", &[("mute", MUTE)]);
    write(
        &h.home.join("hitl-policy-oneturn.json"),
        r#"{"default_action":"approve","rules":[],"compute":{"maxTurns":1}}"#,
    );
    let missions = h.fleet.missions().clone();
    let mut req = request("mute");
    req.envelope = EnvelopeName::new("oneturn").unwrap();
    let d = h.fleet.dispatch(req).await.unwrap();
    let m = wait_for_async(20, "the turn bound", || {
        let m = missions.require(&d.mission_id).unwrap();
        m.status.is_terminal().then_some(m)
    })
    .await;
    assert_eq!(m.status, Status::Stuck);
    assert_eq!(
        m.status_reason.as_deref(),
        Some(
            "compute bound exhausted: maxTurns=1 — the mission spent its turn budget without reaching its operator."
        )
    );
    assert_eq!(
        missions.report_count(&d.mission_id).unwrap(),
        0,
        "no silent blocker"
    );
    h.fleet.shutdown().await;
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
}

fn bounded(h: &FleetHost, name: &str, compute: &str) -> String {
    write(
        &h.home.join(format!("hitl-policy-{name}.json")),
        &format!(r#"{{"default_action":"allow","rules":[],"compute":{compute}}}"#),
    );
    name.to_string()
}

async fn run_to_rest(h: &FleetHost, agent: &str, policy: &str) -> missionboard::mission::Mission {
    let missions = h.fleet.missions().clone();
    let mut req = request(agent);
    req.envelope = EnvelopeName::new(policy).unwrap();
    let d = h.fleet.dispatch(req).await.unwrap();
    wait_for_async(20, "the mission to rest", || {
        let m = missions.require(&d.mission_id).unwrap();
        m.status.is_terminal().then_some(m)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_call_counts_against_max_tool_calls() {
    let five = r#"{"name":"five","delay_ms":50,"turns":[{"steps":[{"report":{"summary":"starting"}},{"tool_call":"one"},{"tool_call":"two"},{"tool_call":"three"},{"tool_call":"four"},{"tool_call":"five"},{"finish":"landed"}]}]}"#;
    let h = FleetHost::new("8", &[("five", five)]);
    let _teardown = h.fleet.spawn_teardown();
    let policy = bounded(&h, "three", r#"{"maxToolCalls":3}"#);
    let m = run_to_rest(&h, "five", &policy).await;
    assert_eq!(m.status, Status::Stuck, "{m:?}");
    assert_eq!(
        m.status_reason.as_deref(),
        Some(
            "compute bound exhausted: maxToolCalls=3 — the mission reached its envelope-gated action budget; this call and any after it are refused."
        )
    );
    h.fleet.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_bound_holds_on_reported_usage_and_on_the_meter_without_it() {
    let reported = r#"{"name":"r","delay_ms":50,"turns":[{"steps":[{"report":{"summary":"go"}},{"usage":{"used":500,"size":32768}},{"finish":"landed"}]}]}"#;
    let chatty = format!(
        r#"{{"name":"c","turns":[{{"steps":[{{"report":{{"summary":"go"}}}},{{"say":"{}"}},{{"sleep":500}},{{"finish":"landed"}}]}}]}}"#,
        "words ".repeat(400)
    );
    let h = FleetHost::new("8", &[("reported", reported), ("chatty", &chatty)]);
    let _teardown = h.fleet.spawn_teardown();
    let policy = bounded(&h, "small", r#"{"maxTokens":100}"#);
    let m = run_to_rest(&h, "reported", &policy).await;
    assert_eq!(m.status, Status::Stuck);
    assert_eq!(
        m.status_reason.as_deref(),
        Some(
            "compute bound exhausted: maxTokens=100 (reported usage 500) — the mission spent its token budget."
        )
    );
    let m = run_to_rest(&h, "chatty", &policy).await;
    assert_eq!(m.status, Status::Stuck);
    let reason = m.status_reason.unwrap();
    assert!(
        reason.starts_with("compute bound exhausted: maxTokens=100 (metered usage "),
        "{reason}"
    );
    h.fleet.shutdown().await;
}
