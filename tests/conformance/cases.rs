//! The operator's cases, the same for every agent: each fires a mission through the
//! real binary at the agent under its catalogue entry and asserts what the operator
//! sees and what reached the model.

use serde_json::json;

use crate::harness::*;

/// The mission lands: a result report, then `mission_finish landed`.
pub fn lands(agent: &'static Conformer, policy: &str) {
    let report = (agent.mission_tool)("mission_report");
    let finish = (agent.mission_tool)("mission_finish");
    let world = World::new(
        agent,
        vec![
            call(&report, json!({"kind": "result", "summary": "the greeting is written"})),
            call(&finish, json!({"status": "landed", "reason": "done"})),
            say("Done."),
        ],
    );
    let run = join_within(world.fire("write a greeting", policy), STEP_SECS * 2);
    assert_eq!(run.code, 0, "{run:#?}\nmodel requests: {:#?}", world.model.requests());
    assert!(
        run.stdout.contains("[result] the greeting is written"),
        "{run:#?}"
    );
    let show = world.show();
    assert_eq!(show["status"], "landed", "{show:#}");
    assert!(!world.model.exhausted(), "the agent asked the model past its script");
}
