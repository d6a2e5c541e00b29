//! The operator's cases, the same for every agent: each fires a mission through the
//! real binary at the agent under its catalogue entry, plays the operator with the
//! real commands, and asserts what the operator sees, what the record says and what
//! reached the model.

use serde_json::{Value, json};

use crate::harness::*;

/// How long a whole fire may take before the case fails as hung.
const FIRE_SECS: u64 = 180;

/// The question the unit asks the operator.
fn is_question(ask: &Value) -> bool {
    ask["toolName"] == "mission_ask_attention"
}

/// A gated tool call (anything but the question).
fn is_gated_call(ask: &Value) -> bool {
    !is_question(ask)
}

/// `(kind, summary)` of the newest mission's reports.
fn reports(world: &World) -> Vec<(String, String)> {
    world.show()["reports"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap_or_default().to_string(),
                r["summary"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// The turns that report a result and land.
pub fn report_and_land(world_tool: impl Fn(&str) -> String, summary: &str) -> Vec<Value> {
    vec![
        call(
            &world_tool("mission_report"),
            json!({"kind": "result", "summary": summary}),
        ),
        call(
            &world_tool("mission_finish"),
            json!({"status": "landed", "reason": "done"}),
        ),
        say("Done."),
    ]
}

/// Assert the fire exited 0 and the mission landed with a result report `summary`.
#[track_caller]
fn assert_landed(world: &World, run: &Run, summary: &str) {
    assert_eq!(
        run.code,
        0,
        "{run:#?}\nmodel requests: {:#}",
        json!(world.model.requests())
    );
    assert!(
        run.stdout.contains(&format!("[result] {summary}")),
        "{run:#?}"
    );
    let show = world.show();
    assert_eq!(show["status"], "landed", "{show:#}");
    world.assert_within_script();
}

/// Land: a result report, then `mission_finish landed`.
pub fn lands(agent: &'static Conformer, policy: &str) {
    let world = World::new(
        agent,
        report_and_land(agent.mission_tool, "the greeting is written"),
    );
    let run = world
        .fire("write a greeting", policy)
        .join_within(FIRE_SECS);
    assert_landed(&world, &run, "the greeting is written");
}

/// Land through the queue: `mission fire --queue --wait` records the mission for a
/// `missionboard host`, which claims it, runs the agent and lands it; the queued
/// fire follows it to the verdict without hosting it.
pub fn lands_through_the_queue(agent: &'static Conformer, policy: &str) {
    let world = World::new(
        agent,
        report_and_land(agent.mission_tool, "the greeting is written"),
    );
    let fire = world.fire_queued("write a greeting", policy);
    let host = world.host();
    let run = fire.join_within(FIRE_SECS);
    // SAFETY: a signal to the host process this case started.
    unsafe { libc::kill(host.pid() as i32, libc::SIGTERM) };
    let host = host.join_within(FIRE_SECS);
    assert_eq!(
        run.code,
        0,
        "{run:#?}\n{host:#?}\nmodel requests: {:#}",
        json!(world.model.requests())
    );
    let first = run.stdout.lines().next().unwrap_or_default();
    assert!(first.contains(" queued at position 1"), "{run:#?}");
    assert!(
        run.stdout.contains(" was claimed by a host on "),
        "{run:#?}"
    );
    let show = world.show();
    assert_eq!(show["status"], "landed", "{show:#}");
    assert_eq!(
        reports(&world),
        [("result".to_string(), "the greeting is written".to_string())]
    );
    assert!(
        host.stdout.contains("Claimed mission "),
        "the host ran it: {host:#?}"
    );
    assert!(
        !world.model.exhausted(),
        "the agent asked the model past its script"
    );
}

/// A gated write: the agent's own write tool asks, the operator approves it with
/// `approvals respond --approve`, the file is written and the mission lands.
pub fn gated_write_approved(agent: &'static Conformer, policy: &str) {
    let text = format!("hello from {}\n", agent.name);
    let mut turns = vec![(agent.write_call)("{workspace}/hello.txt", &text)];
    turns.extend(report_and_land(agent.mission_tool, "hello.txt is written"));
    let world = World::new(agent, turns);
    let mut fire = world.fire("write hello.txt", policy);
    let ask = wait_ask(&world.sb, &mut fire, "the gated write", is_gated_call);
    assert!(
        !world.sb.cwd.join("hello.txt").exists(),
        "the write waits for the operator"
    );
    world.run(&["approvals", "respond", &ask, "--approve"]).ok();
    let run = fire.join_within(FIRE_SECS);
    assert_landed(&world, &run, "hello.txt is written");
    assert_eq!(
        std::fs::read_to_string(world.sb.cwd.join("hello.txt")).ok(),
        Some(text)
    );
}

/// A question answered: `mission_ask_attention`, the operator's answer through
/// `approvals respond --answer`, and the answer in the model's next request.
pub fn question_answered(agent: &'static Conformer, policy: &str) {
    let answer = "say bonjour, not hello";
    let mut turns = vec![call(
        &(agent.mission_tool)("mission_ask_attention"),
        json!({"summary": "Which greeting should I write?"}),
    )];
    turns.extend(report_and_land(
        agent.mission_tool,
        "the greeting is chosen",
    ));
    let world = World::new(agent, turns);
    world
        .run(&["config", "set", "ask-park-window", "300s"])
        .ok();
    let mut fire = world.fire("write a greeting", policy);
    let ask = wait_ask(&world.sb, &mut fire, "the question", is_question);
    world
        .run(&["approvals", "respond", &ask, "--answer", answer])
        .ok();
    let run = fire.join_within(FIRE_SECS);
    assert_landed(&world, &run, "the greeting is chosen");
    assert!(
        world.model.heard_after(1, answer),
        "the answer never reached the model: {:#}",
        json!(world.model.turn_requests())
    );
}

/// The conversation a model request carries, whatever its API (`input` of the
/// Responses API, `contents` of Gemini's, `messages` of Chat Completions and
/// Anthropic's), without the tool declarations and instructions around it.
fn conversation(body: &Value) -> String {
    ["input", "contents", "messages"]
        .iter()
        .find_map(|key| body.get(*key))
        .unwrap_or(body)
        .to_string()
}

/// A call the envelope denies (`shred`): no ask is filed, the file survives, the
/// refusal is a report naming the command and the rule, a later model request carries
/// the envelope's own words about it (the agents' permission replies say only that
/// the user cancelled), and the mission rests exactly `stuck`.
pub fn denied_call(agent: &'static Conformer, policy: &str) {
    let world = World::new(
        agent,
        vec![
            (agent.shell_call)("shred -u victim.txt"),
            say("The command did not run; I end my turn."),
            call(
                &(agent.mission_tool)("mission_finish"),
                json!({"status": "stuck", "reason": "it did not run"}),
            ),
            say("Stopped."),
        ],
    );
    world
        .sb
        .write(&world.sb.cwd.join("victim.txt"), "keep me\n");
    let run = world.fire("wipe victim.txt", policy).join_within(FIRE_SECS);
    assert!(
        world.sb.cwd.join("victim.txt").exists(),
        "the denied shred ran: {run:#?}"
    );
    let show = world.show();
    assert_eq!(show["status"], "stuck", "{show:#}\n{run:#?}");
    assert_eq!(
        show["asks"].as_array().map(Vec::len),
        Some(0),
        "a denied call files no ask: {show:#}"
    );
    let refusal = reports(&world).into_iter().find(|(kind, summary)| {
        kind == "blocker"
            && summary.starts_with("refused ")
            && summary.contains("shred -u victim.txt")
            && summary.contains(" denied by ")
    });
    assert!(refusal.is_some(), "no refusal report: {show:#}");
    let told = world
        .model
        .turn_requests()
        .iter()
        .skip(1)
        .map(|r| conversation(&r["body"]))
        .any(|c| {
            c.contains("The envelope refused a tool call of yours")
                && c.contains("shred -u victim.txt")
                && c.contains("denied by")
        });
    assert!(
        told,
        "the envelope's refusal never reached the model in its words: {:#}",
        json!(world.model.turn_requests())
    );
    world.assert_within_script();
}

/// A fire whose agent runs a long `sleep` in its shell (a gated call, so it waits on
/// the operator's verdict), then says so.
fn fire_long_sleep(agent: &'static Conformer, policy: &str) -> (World, Firing) {
    // The comment tells agents that refuse a bare long sleep (qwen) it is meant.
    let world = World::new(
        agent,
        vec![
            (agent.shell_call)("sleep 587 # intentional-sleep: the operator stops this"),
            say("Slept."),
        ],
    );
    let fire = world.fire("sleep a while", policy);
    (world, fire)
}

/// Approve [`fire_long_sleep`]'s gated sleep and wait until it runs in the unit's
/// tree: that tree.
fn approve_the_sleep(world: &World, fire: &mut Firing) -> Vec<Proc> {
    let host = fire.pid();
    let ask = wait_ask(&world.sb, fire, "the gated sleep", is_gated_call);
    world.run(&["approvals", "respond", &ask, "--approve"]).ok();
    fire.wait(STEP_SECS, "the sleep to run in the unit's tree", || {
        let tree = descendants(host);
        tree.iter()
            .any(|p| p.cmdline().starts_with("sleep 587"))
            .then_some(tree)
    })
}

/// A stop: the agent runs an approved `sleep` in its shell; `mission stop` ends the
/// mission, the fire exits, and every process of the unit's tree is gone.
pub fn stopped(agent: &'static Conformer, policy: &str) {
    let (world, mut fire) = fire_long_sleep(agent, policy);
    let tree = approve_the_sleep(&world, &mut fire);
    let id = world.sb.newest_mission().unwrap();
    let reason = "the operator has seen enough";
    world
        .run(&["mission", "stop", &id, "--reason", reason])
        .ok();
    let run = fire.join_within(FIRE_SECS);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stdout
            .contains(&format!("Mission {id} finished: abandoned — {reason}\n")),
        "{run:#?}"
    );
    wait_all_gone(&tree, 30);
    let show = world.show();
    assert_eq!(
        (show["status"].as_str(), show["statusReason"].as_str()),
        (Some("abandoned"), Some(reason)),
        "{show:#}"
    );
    let workspace = std::fs::canonicalize(&world.sb.cwd).unwrap();
    let left: Vec<String> = crate::common::all_pids()
        .into_iter()
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/cwd"))
                .is_ok_and(|cwd| cwd.starts_with(&workspace))
        })
        .map(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
                .unwrap_or_default()
        })
        .collect();
    assert!(left.is_empty(), "processes left in the workspace: {left:?}");
}

/// The host SIGKILLed while the question is parked; the answer given later from
/// another process resumes the run, which lands exactly once; nothing of the killed
/// host's unit is left behind.
pub fn killed_host_resumed(agent: &'static Conformer, policy: &str) {
    let answer = "yes, carry on";
    let mut turns = vec![
        call(
            &(agent.mission_tool)("mission_ask_attention"),
            json!({"summary": "May I carry on?"}),
        ),
        say("Waiting for the operator."),
    ];
    turns.extend(report_and_land(agent.mission_tool, "carried on"));
    let world = World::new(agent, turns);
    world.run(&["config", "set", "ask-park-window", "2s"]).ok();
    let mut fire = world.fire("carry on when allowed", policy);
    let host = fire.pid();
    let ask = fire.wait(STEP_SECS, "the parked question", || {
        pending_asks(&world.sb)
            .into_iter()
            .find(|a| is_question(a) && a["parked"] == true)
            .and_then(|a| a["id"].as_str().map(str::to_string))
    });
    // The parked turn ends with the model's "waiting" turn: kill the host after it,
    // so the resumed run starts from a unit at rest.
    fire.wait(STEP_SECS, "the parked turn to end", || {
        (world.model.turns_taken() >= 2).then_some(())
    });
    let tree = descendants(host);
    let killed = fire.sigkill();
    assert_eq!(killed.code, -1, "killed by the signal: {killed:#?}");
    wait_all_gone(&tree, 30);
    let resumed = world.run(&["approvals", "respond", &ask, "--answer", answer]);
    assert_eq!(resumed.code, 0, "{resumed:#?}");
    let show = wait_for(FIRE_SECS, "the resumed run to land", || {
        let show = world.show();
        (show["status"] != "open").then_some(show)
    });
    assert_eq!(show["status"], "landed", "{show:#}\n{resumed:#?}");
    let results: Vec<_> = reports(&world)
        .into_iter()
        .filter(|(kind, _)| kind == "result")
        .collect();
    assert_eq!(
        results,
        vec![("result".to_string(), "carried on".to_string())],
        "exactly one resumed run"
    );
    assert!(
        world.model.heard_after(2, answer),
        "the answer never reached the model: {:#}",
        json!(world.model.turn_requests())
    );
    world.assert_within_script();
}

/// When the host is SIGKILLed in [`killed_host_leaves_nothing`].
pub enum Kill {
    /// As soon as the agent's own process is up: its launcher starting, its
    /// `initialize` and `session/new` not yet answered.
    MidHandshake,
    /// While the agent's shell runs an approved `sleep`.
    MidTurn,
}

/// The host SIGKILLed at `when`: no process of the unit's tree outlives it — the
/// agent's launcher, the binary it starts, the shell line it runs — whether still
/// in the host's tree or reparented away from it.
pub fn killed_host_leaves_nothing(agent: &'static Conformer, policy: &str, when: Kill) {
    let (world, mut fire) = fire_long_sleep(agent, policy);
    let host = fire.pid();
    let tree = match when {
        Kill::MidHandshake => {
            fire.wait(STEP_SECS, "the agent's own process", || {
                // The supervisor's child: the agent itself (or its launcher).
                descendants(host)
                    .iter()
                    .any(|p| !p.cmdline().contains(" supervise "))
                    .then_some(())
            });
            // Frozen where it stands (a launcher's child started meanwhile included),
            // the agent cannot finish its handshake before the kill; that none had
            // finished is read from the record and the model.
            let mut frozen = Vec::new();
            let tree = wait_for(STEP_SECS, "the agent's tree to hold still", || {
                let tree = descendants(host);
                let fresh: Vec<_> = tree
                    .iter()
                    .filter(|p| !p.cmdline().contains(" supervise ") && !frozen.contains(*p))
                    .copied()
                    .collect();
                for p in &fresh {
                    unsafe { libc::kill(p.pid as libc::pid_t, libc::SIGSTOP) };
                }
                frozen.extend(fresh.iter().copied());
                fresh.is_empty().then_some(tree)
            });
            // A mission is recorded once its unit's session is open.
            let recorded = world.sb.newest_mission().map(|_| world.show());
            assert!(
                recorded
                    .as_ref()
                    .is_none_or(|show| show["sessionId"].is_null()),
                "the agent had a session before the kill, so it did not come mid-handshake: {recorded:#?}"
            );
            assert_eq!(world.model.turns_taken(), 0, "no prompt reached the model");
            tree
        }
        Kill::MidTurn => approve_the_sleep(&world, &mut fire),
    };
    let killed = fire.sigkill();
    assert_eq!(killed.code, -1, "killed by the signal: {killed:#?}");
    wait_all_gone(&tree, 30);
    wait_all_gone(&working_in(&world.sb.cwd), 30);
}

/// The operator's cases as `#[test]`s of the calling agent's module, named the same
/// for every agent, so a new agent is one line: `agent_cases!(CODEX)`. Add
/// `killed_host` for the host killed mid-handshake and mid-turn, and `hitl` for the
/// resume that happens once (the refusal named to the model is `denied_call`'s, for
/// every agent). Attributes before the agent (`#[ignore = "…"]`) go on every case.
macro_rules! agent_cases {
    (@killed_host [$($a:tt)*] $agent:ident) => {
        #[test]
        $($a)*
        fn killed_mid_handshake_leaves_nothing() {
            $crate::cases::killed_host_leaves_nothing(
                &$agent,
                "default",
                $crate::cases::Kill::MidHandshake,
            );
        }

        #[test]
        $($a)*
        fn killed_mid_turn_leaves_nothing() {
            $crate::cases::killed_host_leaves_nothing(
                &$agent,
                "default",
                $crate::cases::Kill::MidTurn,
            );
        }
    };
    (@check [$($a:tt)*] $agent:ident) => {
        #[test]
        $($a)*
        fn check_fails_then_the_fix_lands_under_default() {
            $crate::cases::check_fails_then_the_fix_lands(&$agent, "default");
        }

        #[test]
        $($a)*
        fn revised_with_feedback_the_model_acts_on_under_default() {
            $crate::cases::revised_with_feedback_the_model_acts_on(&$agent, "default");
        }
    };
    (@hitl [$($a:tt)*] $agent:ident) => {
        #[test]
        $($a)*
        fn killed_host_resumed_once_after_its_survivors_are_reaped() {
            $crate::hitl::killed_host_resumed_once_after_its_survivors_are_reaped(&$agent);
        }
    };
    (@extras [$($a:tt)*] $agent:ident;) => {};
    (@extras [$($a:tt)*] $agent:ident; $first:ident $(, $rest:ident)*) => {
        $crate::cases::agent_cases!(@$first [$($a)*] $agent);
        $crate::cases::agent_cases!(@extras [$($a)*] $agent; $($rest),*);
    };
($(#[$attr:meta])* $agent:ident $(, $extra:ident)* $(,)?) => {
        #[test]
        $(#[$attr])*
        fn lands_under_default() {
            $crate::cases::lands(&$agent, "default");
        }

        #[test]
        $(#[$attr])*
        fn gated_write_approved_under_default() {
            $crate::cases::gated_write_approved(&$agent, "default");
        }

        #[test]
        $(#[$attr])*
        fn gated_write_approved_under_strict() {
            $crate::cases::gated_write_approved(&$agent, "strict");
        }

        #[test]
        $(#[$attr])*
        fn question_answered_under_default() {
            $crate::cases::question_answered(&$agent, "default");
        }

        #[test]
        $(#[$attr])*
        fn denied_call_under_default() {
            $crate::cases::denied_call(&$agent, "default");
        }

        #[test]
        $(#[$attr])*
        fn denied_call_under_strict() {
            $crate::cases::denied_call(&$agent, "strict");
        }

        #[test]
        $(#[$attr])*
        fn stopped_under_default() {
            $crate::cases::stopped(&$agent, "default");
        }

        #[test]
        $(#[$attr])*
        fn stopped_under_strict() {
            $crate::cases::stopped(&$agent, "strict");
        }

        #[test]
        $(#[$attr])*
        fn killed_host_resumed_under_default() {
            $crate::cases::killed_host_resumed(&$agent, "default");
        }

        // acpx: a driver nobody vetted; everything but the mission tools is refused.
        #[test]
        $(#[$attr])*
        fn lands_under_acpx() {
            $crate::cases::lands(&$agent, "acpx");
        }

        #[test]
        $(#[$attr])*
        fn denied_call_under_acpx() {
            $crate::cases::denied_call(&$agent, "acpx");
        }

        $crate::cases::agent_cases!(@extras [$(#[$attr])*] $agent; $($extra),*);
    };
}
pub(crate) use agent_cases;

/// The check (issue 43): the model's first `mission_finish landed` follows a change
/// that fails the mission's check; the agent gets the failure as that call's result
/// (the model hears it), makes the fixing change and lands with the check passed.
pub fn check_fails_then_the_fix_lands(agent: &'static Conformer, policy: &str) {
    let check = "grep -q fixed notes.txt || { echo 'notes.txt is not fixed yet'; exit 1; }";
    let mut turns = vec![
        (agent.write_call)("{workspace}/notes.txt", "draft\n"),
        call(
            &(agent.mission_tool)("mission_finish"),
            json!({"status": "landed", "reason": "done"}),
        ),
        (agent.write_call)("{workspace}/notes.txt", "fixed\n"),
    ];
    turns.extend(report_and_land(agent.mission_tool, "notes.txt is fixed"));
    let world = World::new(agent, turns);
    let mut fire = world.fire_with_args("write the notes", policy, &["--check", check]);
    // Each write is the agent's own gated tool: the operator approves both.
    for _ in 0..2 {
        let ask = wait_ask(&world.sb, &mut fire, "a gated write", is_gated_call);
        world.run(&["approvals", "respond", &ask, "--approve"]).ok();
    }
    let run = fire.join_within(FIRE_SECS);
    assert_landed(&world, &run, "notes.txt is fixed");
    assert!(
        world.model.heard_after(1, "notes.txt is not fixed yet"),
        "the check's failure never reached the model: {:#}",
        json!(world.model.turn_requests())
    );
    let show = world.show();
    assert_eq!(
        (&show["check"]["state"], &show["check"]["tries"]),
        (&json!("passed"), &json!(2)),
        "{show:#}"
    );
    let checks: Vec<String> = reports(&world)
        .into_iter()
        .filter(|(k, _)| k == "check")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(
        checks,
        [
            format!("check failed (try 1 of 3): {check} — exit 1"),
            format!("check passed (try 2 of 3): {check} — exit 0"),
        ]
    );
}

/// A revise (issue 43): the mission lands, the operator sends it back with
/// feedback, the model hears the feedback and acts on it (writes what it asks),
/// and the revised run lands again through the check.
pub fn revised_with_feedback_the_model_acts_on(agent: &'static Conformer, policy: &str) {
    let feedback = "also write thanks.txt saying merci";
    let check = "test -f notes.txt";
    let mut turns = vec![(agent.write_call)("{workspace}/notes.txt", "notes\n")];
    turns.extend(report_and_land(agent.mission_tool, "notes.txt is written"));
    turns.push((agent.write_call)("{workspace}/thanks.txt", "merci\n"));
    turns.extend(report_and_land(agent.mission_tool, "thanks.txt is written"));
    let world = World::new(agent, turns);
    let mut fire = world.fire_with_args("write the notes", policy, &["--check", check]);
    let ask = wait_ask(&world.sb, &mut fire, "the first gated write", is_gated_call);
    world.run(&["approvals", "respond", &ask, "--approve"]).ok();
    let run = fire.join_within(FIRE_SECS);
    assert_landed(&world, &run, "notes.txt is written");
    let id = world.show()["id"].as_str().unwrap().to_string();
    let turns_before = world.model.turns_taken() as u64;
    let mut revise = world.spawn(&[
        "mission",
        "revise",
        &id,
        feedback,
        "--wait",
        "--timeout",
        "180s",
    ]);
    let ask = wait_ask(
        &world.sb,
        &mut revise,
        "the revised run's gated write",
        is_gated_call,
    );
    world.run(&["approvals", "respond", &ask, "--approve"]).ok();
    let run = revise.join_within(FIRE_SECS);
    assert_eq!(
        run.code,
        0,
        "{run:#?}\nmodel requests: {:#}",
        json!(world.model.requests())
    );
    assert!(
        world.model.heard_after(turns_before, feedback),
        "the feedback never reached the model: {:#}",
        json!(world.model.turn_requests())
    );
    assert_eq!(
        std::fs::read_to_string(world.sb.cwd.join("thanks.txt")).ok(),
        Some("merci\n".to_string())
    );
    let show = world.show();
    assert_eq!(show["status"], "landed", "{show:#}");
    assert_eq!(show["runs"][0]["feedback"], feedback, "{show:#}");
    assert_eq!(
        (&show["check"]["state"], &show["check"]["tries"]),
        (&json!("passed"), &json!(1)),
        "the check ran again for the revised run: {show:#}"
    );
    world.assert_within_script();
}

/// The agent declared by hand without the catalogue's endpoint reader (its
/// `endpoint_config` line left out), under `strict`: `{model}` opens only the ports of
/// the catalogue's default endpoints, the sandbox refuses the agent's connection to the
/// scripted server its own config names, and the mission's blocker says so — the
/// refused address, the envelope, what was granted and the fix — in `mission show`
/// and its `--json`, with no word of the model reached.
pub fn refused_connection_named(agent: &'static Conformer) {
    let name = agent.name;
    let world = World::new(agent, vec![say("never reached")]);
    let section = missionboard::agents::catalogue::section(name)
        .unwrap_or_else(|| panic!("the catalogue has no entry {name:?}"));
    let without: String = section
        .lines()
        .filter(|l| !l.trim_start().starts_with("endpoint_config"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(
        without,
        format!("{section}\n"),
        "{name} has no endpoint_config to leave out"
    );
    let run = world
        .fire_declared("write a greeting", "strict", &without)
        .join_within(FIRE_SECS);
    let port = world.model.base.rsplit(':').next().unwrap().to_string();
    assert_ne!(run.code, 0, "{run:#?}");
    assert_eq!(
        world.model.turns_taken(),
        0,
        "the sandbox let {name} reach the model"
    );
    let show = world.show();
    let blocker = show["reports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "blocker")
        .unwrap_or_else(|| panic!("no blocker: {show:#}\n{run:#?}"))
        .clone();
    let summary = blocker["summary"].as_str().unwrap();
    let refused = format!("the sandbox refused {name}'s connection to ");
    assert!(summary.starts_with(&refused), "{show:#}\n{run:#?}");
    assert!(
        summary.contains(&format!(
            "127.0.0.1:{port}: port {port} is not granted by envelope \"strict\"'s network.connect (granted: 443"
        )),
        "{show:#}"
    );
    let id = world.sb.newest_mission().unwrap();
    let text = world.run(&["mission", "show", &id]).ok().stdout;
    assert!(text.contains(&refused), "{text}");
    let detail = blocker["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains(&format!(
            "127.0.0.1:{port}\" under endpoints of [agents.{name}] in agents.toml"
        )),
        "{show:#}"
    );
}
