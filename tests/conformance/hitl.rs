//! An operator case beside `cases`: a resume after a SIGKILLed host judged apart from
//! supervision (whatever of the dead host's tree outlived it is reaped first, so an
//! agent whose tree the host cannot yet tear down still shows whether its run resumes
//! exactly once).

use serde_json::json;

use crate::harness::*;

/// The answer the operator types; a case looks for it in the model's requests.
const ANSWER: &str = "paint it teal";

/// The host is SIGKILLed while its run is parked on a question; its survivors are
/// reaped; the answer, given later from another process, resumes the run there
/// exactly once and it lands.
pub fn killed_host_resumed_once_after_its_survivors_are_reaped(agent: &'static Conformer) {
    let world = World::new(
        agent,
        vec![
            call(
                &(agent.mission_tool)("mission_ask_attention"),
                json!({"summary": "Which colour should the fence be?"}),
            ),
            say("No answer yet; I end my turn and wait."),
            call(
                &(agent.mission_tool)("mission_report"),
                json!({"kind": "progress", "summary": "the colour is settled"}),
            ),
            call(
                &(agent.mission_tool)("mission_finish"),
                json!({"status": "landed", "reason": "painted"}),
            ),
            // Some agents ask once more before the host cancels a finished turn.
            say("Done."),
        ],
    );
    world.run(&["config", "set", "ask-park-window", "1s"]).ok();
    let mut fire = world.fire("paint the fence", "default");
    let host = fire.pid();
    let ask = fire.wait(STEP_SECS, "the parked question", || {
        pending_asks(&world.sb)
            .into_iter()
            .find(|a| a["parked"] == true)
            .and_then(|a| a["id"].as_str().map(str::to_string))
    });
    fire.wait(STEP_SECS, "the unit's turn after the park", || {
        (world.model.turns_taken() == 2).then_some(())
    });
    let tree = descendants(host);
    assert!(!tree.is_empty(), "the unit runs under the fire's process");
    fire.sigkill();
    for p in tree.iter().filter(|p| p.alive()) {
        // SAFETY: SIGKILL to a process this case started, named by pid and start time.
        unsafe { libc::kill(p.pid as i32, libc::SIGKILL) };
    }
    wait_all_gone(&tree, 30);
    let answered = world.run(&["approvals", "respond", &ask, "--answer", ANSWER]);
    assert!(
        answered
            .stdout
            .contains("and the suspended run was resumed in this process"),
        "{answered:#?}\nmodel requests: {:#}",
        json!(world.model.requests())
    );
    let show = world.show();
    assert_eq!(show["status"], "landed", "{show:#}");
    assert!(
        world.model.heard_after(2, ANSWER),
        "the answer never reached the model: {:#}",
        json!(world.model.turn_requests())
    );
    // The resumed conversation (its own session loaded again, or a fresh one briefed)
    // carries every resume turn the unit was given, each with the answer.
    let last = world.model.turn_requests().pop().unwrap()["body"].to_string();
    assert_eq!(
        last.matches(ANSWER).count(),
        1,
        "the run resumed exactly once"
    );
    assert!(!world.model.exhausted(), "the run resumed more than once");
    let again = world.run(&["approvals", "respond", &ask, "--answer", "again"]);
    assert_eq!(
        again.code, 1,
        "a second answer never runs it twice: {again:#?}"
    );
    assert!(again.stderr.contains("was already answered"), "{again:#?}");
}
