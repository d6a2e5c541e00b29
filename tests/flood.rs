//! A unit that floods its stdout, or stops reading its stdin, is derailed while the
//! host's memory stays bounded and the host carries on. The host is this process
//! (an in-process fleet, as the board runs it), so its peak resident set is read
//! from /proc/self/status; this binary holds one test so nothing else moves it.

mod common;

use common::{FleetHost, script, wait_for_async};
use missionboard::fleet::{DispatchRequest, Fleet};
use missionboard::mission::{EnvelopeName, Intent, Mission, Status};

const MB: u64 = 1024 * 1024;
/// Four times what the host needs here (~25 MB), and less than holding a 50 MB
/// line twice — which reading it whole and copying it once takes.
const PEAK_CEILING: u64 = 100 * MB;

/// `VmHWM` (peak resident set) of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmHWM in /proc/self/status");
    kb * 1024
}

/// Restart the peak-RSS counter (Linux ≥ 4.0), so each scenario is measured alone.
fn reset_peak_rss() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
}

async fn until_status(fleet: &Fleet, id: &str, secs: u64) -> Mission {
    wait_for_async(secs, &format!("mission {id} to come to rest"), || {
        let m = fleet.missions().require(id).unwrap();
        m.status.is_terminal().then_some(m)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flooding_or_deaf_unit_is_derailed_with_bounded_host_memory_and_the_host_carries_on() {
    // The deaf unit is caught by the stdin write deadline; shortened for the test.
    // SAFETY: set before any thread of ours reads the environment.
    unsafe { std::env::set_var("MISSIONBOARD_UNIT_STDIN_DEADLINE_MS", "2000") };
    let agents = [
        // 50 MB in one line: no newline to stop at.
        ("one_line", script(r#"{"flood":{"bytes":52428800}},"hang""#)),
        // 50 MB in 64 KiB lines: many frames, each one garbage.
        (
            "many_lines",
            script(r#"{"flood":{"bytes":52428800,"line_bytes":65536}},"hang""#),
        ),
        // Stops reading, then asks the host 5000 questions it must answer.
        ("deaf", script(r#"{"deaf":{"requests":5000}},"hang""#)),
        (
            "land",
            script(r#"{"report":{"kind":"result","summary":"still here"}},{"finish":"landed"}"#),
        ),
    ];
    let scripts: Vec<(&str, &str)> = agents.iter().map(|(n, s)| (*n, s.as_str())).collect();
    let host = FleetHost::new("0", &scripts);
    std::fs::write(
        host.home.join("hitl-policy-open.json"),
        r#"{"default_action":"approve","rules":[]}"#,
    )
    .unwrap();
    let fleet = host.fleet.clone();
    let _teardown = fleet.spawn_teardown();
    let fire = |agent: &str| {
        let fleet = fleet.clone();
        let agent = agent.to_string();
        async move {
            fleet
                .dispatch(DispatchRequest {
                    agent_name: agent.clone(),
                    intent: Intent::new(&format!("{agent} mission")).unwrap(),
                    envelope: EnvelopeName::new("open").unwrap(),
                    cwd: None,
                    worktree: false,
                    check: Default::default(),
                    add_dirs: Vec::new(),
                })
                .await
                .unwrap()
                .mission_id
        }
    };

    for (agent, reason) in [
        ("one_line", "frame limit"),
        ("many_lines", "not JSON-RPC"),
        ("deaf", "stopped reading its stdin"),
    ] {
        reset_peak_rss();
        let id = fire(agent).await;
        let m = until_status(&fleet, &id, 60).await;
        assert_eq!(m.status, Status::Derailed, "{agent}: {m:?}");
        let peak = peak_rss();
        assert!(
            peak < PEAK_CEILING,
            "{agent}: host peak RSS {} MB (ceiling {} MB)",
            peak / MB,
            PEAK_CEILING / MB
        );
        let why = m.status_reason.clone().unwrap_or_default();
        assert!(
            why.contains(reason),
            "{agent}: the reason names the cause: {why}"
        );
        wait_for_async(30, &format!("{agent}: the unit to be reaped"), || {
            (fleet.open_units() == 0).then_some(())
        })
        .await;
    }
    // The host is alive and still hosts missions.
    let id = fire("land").await;
    assert_eq!(until_status(&fleet, &id, 30).await.status, Status::Landed);
    fleet.shutdown().await;
}
