//! Environment scrubbing, seen from inside the child. This is its own test
//! binary because it sets variables in the host process's environment.

mod common;

use std::collections::BTreeMap;

use common::*;
use missionboard::acp_client::{StopReason, UnitEvent};
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn h_secret_looking_host_variables_reach_the_child_only_when_declared() {
    // SAFETY: this is the only test in this binary and it runs before any
    // thread of ours reads the environment.
    unsafe {
        std::env::set_var("FOO_TOKEN", "host-foo-secret");
        std::env::set_var("BAR_API_KEY", "host-bar-secret");
        std::env::set_var("MB_PLAIN_SETTING", "plain");
    }
    let script = json!({"steps": [
        {"say": "foo=[{{env:FOO_TOKEN}}] bar=[{{env:BAR_API_KEY}}] plain=[{{env:MB_PLAIN_SETTING}}] extra=[{{env:MB_DECLARED}}]"}
    ]});
    let mut env = BTreeMap::new();
    env.insert("BAR_API_KEY".to_owned(), "declared-bar".to_owned());
    env.insert("MB_DECLARED".to_owned(), "yes".to_owned());
    let mut h = tokio::time::timeout(
        TEST_DEADLINE,
        start(Options {
            script: Some(script),
            env,
            ..Default::default()
        }),
    )
    .await
    .unwrap();
    let outcome = h.unit.prompt(vec!["show env".into()]).await.unwrap();
    assert_eq!(outcome.stop_reason, StopReason::EndTurn);
    let events = drain(&mut h.events);
    assert!(
        events.contains(&UnitEvent::AgentText {
            text: "foo=[] bar=[declared-bar] plain=[plain] extra=[yes]".into(),
            message: None
        }),
        "{events:?}"
    );
    h.unit.shutdown().await;
}
