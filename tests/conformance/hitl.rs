//! The operator-in-the-loop cases, the same for every agent: a gated write the
//! operator approves, a question the operator answers, a call the envelope denies, a
//! stop, and a host SIGKILLed while its run is parked. Each fires through the real
//! binary at the agent under its catalogue entry and asserts what the operator sees,
//! what reached the model, and (by walking `/proc`) which processes are left.

use serde_json::json;

use crate::harness::*;

/// The answer the operator types; a case looks for it in the model's requests.
const ANSWER: &str = "paint it teal";

/// The id of the newest mission.
fn mission_id(world: &World) -> String {
    world.sb.newest_mission().expect("a mission was recorded")
}

/// `approvals respond <ask> <verdict…>` with the case's environment (a resume may
/// start the agent again in the answering process).
fn respond(world: &World, ask: &str, verdict: &[&str]) -> Run {
    let mut args = vec!["approvals", "respond", ask];
    args.extend_from_slice(verdict);
    world.run(&args)
}

/// A permission ask for `tools_name` (`local_fs`, `local_shell`…), pending on the
/// newest mission.
fn wait_permission(world: &World, tools_name: &str) -> String {
    wait_ask(&world.sb, &format!("a {tools_name} permission ask"), |a| {
        a["toolsName"] == tools_name
    })
}

/// The operator approves a gated write: the ask names the file, the approved write
/// lands in the workspace, the mission lands.
pub fn gated_write_approved(agent: &'static Conformer, policy: &str) {
    let world = World::new(
        agent,
        vec![
            (agent.write_call)("approved.txt", "approved by the operator\n"),
            call(
                &world_tool(agent, "mission_finish"),
                json!({"status": "landed", "reason": "wrote approved.txt"}),
            ),
            say("Done."),
        ],
    );
    let fire = world.fire("write approved.txt", policy);
    let ask = wait_permission(&world, "local_fs");
    let pending = pending_asks(&world.sb);
    let row = pending.iter().find(|a| a["id"] == ask.as_str()).unwrap();
    assert_eq!(row["toolName"], "write_file", "{row:#}");
    assert!(
        row["argsSummary"]
            .as_str()
            .unwrap()
            .contains("approved.txt"),
        "the ask names the file: {row:#}"
    );
    assert!(
        !world.sb.cwd.join("approved.txt").exists(),
        "nothing is written before the operator approves"
    );
    let answered = respond(&world, &ask, &["--approve"]).ok();
    assert!(
        answered.stdout.starts_with("Verdict recorded for"),
        "{answered:#?}"
    );
    let run = join_within(fire, STEP_SECS * 2);
    assert_eq!(
        run.code,
        0,
        "{run:#?}\nmodel requests: {:#?}",
        world.model.requests()
    );
    assert_eq!(
        std::fs::read_to_string(world.sb.cwd.join("approved.txt")).unwrap(),
        "approved by the operator\n"
    );
    assert_eq!(world.show()["status"], "landed");
    assert!(
        !world.model.exhausted(),
        "the agent asked the model past its script"
    );
}

/// The operator answers the unit's question: the answer is the tool's result, so it
/// reaches the model's next request, and the mission lands.
pub fn question_answered(agent: &'static Conformer, policy: &str) {
    let world = World::new(
        agent,
        vec![
            call(
                &world_tool(agent, "mission_ask_attention"),
                json!({"summary": "Which colour should the fence be?"}),
            ),
            call(
                &world_tool(agent, "mission_report"),
                json!({"kind": "progress", "summary": "the colour is settled"}),
            ),
            call(
                &world_tool(agent, "mission_finish"),
                json!({"status": "landed", "reason": "painted"}),
            ),
            say("Done."),
        ],
    );
    let fire = world.fire("paint the fence", policy);
    let ask = wait_ask(&world.sb, "the unit's question", |a| {
        a["toolName"] == "mission_ask_attention"
    });
    let answered = respond(&world, &ask, &["--answer", ANSWER]).ok();
    assert!(
        answered.stdout.starts_with("Verdict recorded for"),
        "{answered:#?}"
    );
    let run = join_within(fire, STEP_SECS * 2);
    assert_eq!(
        run.code,
        0,
        "{run:#?}\nmodel requests: {:#?}",
        world.model.requests()
    );
    assert!(
        run.stdout.contains("[progress] the colour is settled"),
        "{run:#?}"
    );
    assert!(
        world.model.heard_after(1, ANSWER),
        "the operator's answer never reached the model: {:#?}",
        world.model.requests()
    );
    assert_eq!(world.show()["status"], "landed");
    assert!(
        !world.model.exhausted(),
        "the agent asked the model past its script"
    );
}

/// Under `strict` the envelope denies `shred` outright: nobody is asked, the file
/// survives, the model is asked again after the refusal and the mission rests with
/// the verdict the unit gives (no hang, never left open).
pub fn denied_under_strict(agent: &'static Conformer) {
    let world = World::new(
        agent,
        vec![
            (agent.shell_call)("shred -u victim.txt"),
            call(
                &world_tool(agent, "mission_finish"),
                json!({"status": "stuck", "reason": "shred was refused"}),
            ),
            say("Done."),
        ],
    );
    world
        .sb
        .write(&world.sb.cwd.join("victim.txt"), "keep me\n");
    let run = join_within(world.fire("shred victim.txt", "strict"), STEP_SECS * 2);
    assert!(
        run.stdout.contains("finished: stuck — shred was refused"),
        "{run:#?}\nmodel requests: {:#?}",
        world.model.requests()
    );
    assert_eq!(
        std::fs::read_to_string(world.sb.cwd.join("victim.txt")).unwrap(),
        "keep me\n",
        "the denied command ran"
    );
    let show = world.show();
    assert_eq!(show["status"], "stuck", "{show:#}");
    assert!(
        show["asks"].as_array().unwrap().is_empty(),
        "a deny rule asks nobody: {show:#}"
    );
    assert!(world.model.turns_taken() >= 2, "the model never heard back");
    assert!(
        !world.model.exhausted(),
        "the agent asked the model past its script"
    );
}

/// The refusal reaches the unit in words: the model's next request names the refused
/// command and says it was refused by the envelope.
pub fn refusal_named_to_the_model(agent: &'static Conformer) {
    let world = World::new(
        agent,
        vec![
            (agent.shell_call)("shred -u victim.txt"),
            call(
                &world_tool(agent, "mission_finish"),
                json!({"status": "stuck", "reason": "shred was refused"}),
            ),
            say("Done."),
        ],
    );
    world
        .sb
        .write(&world.sb.cwd.join("victim.txt"), "keep me\n");
    let run = join_within(world.fire("shred victim.txt", "strict"), STEP_SECS * 2);
    assert_eq!(world.show()["status"], "stuck", "{run:#?}");
    let after = world.model.turn_requests();
    let next = after.get(1).expect("the model was asked again");
    let heard = conversation(&next["body"]);
    assert!(
        heard.contains("shred -u victim.txt") && heard.contains("refused"),
        "the refusal is not named to the model: {heard}"
    );
}

/// The conversation a model request carries, whatever its API (`input` of the
/// Responses API, `contents` of Gemini's, `messages` of Chat Completions and
/// Anthropic's), without the tool declarations and instructions around it.
fn conversation(body: &serde_json::Value) -> String {
    ["input", "contents", "messages"]
        .iter()
        .find_map(|key| body.get(*key))
        .unwrap_or(body)
        .to_string()
}

/// `mission stop` while the model is mid-turn: the mission is abandoned, the fire
/// exits, and every process of the unit's tree is gone.
pub fn stopped(agent: &'static Conformer, policy: &str) {
    let world = World::new(agent, vec![hang()]);
    let fire = world.fire("wait forever", policy);
    let host = fire.pid();
    wait_for(STEP_SECS, "the model's first request", || {
        (world.model.turns_taken() == 1).then_some(())
    });
    let tree = descendants(host);
    assert!(!tree.is_empty(), "the unit runs under the fire's process");
    let id = mission_id(&world);
    let stop = world.run(&["mission", "stop", &id]).ok();
    assert!(
        stop.stdout.starts_with(&format!("Mission {id} abandoned.")),
        "{stop:#?}"
    );
    let run = join_within(fire, STEP_SECS);
    assert!(
        run.stdout.contains(&format!(
            "Mission {id} finished: abandoned — stopped by operator"
        )),
        "{run:#?}"
    );
    assert_eq!(world.show()["status"], "abandoned");
    wait_all_gone(&tree, 30);
}

/// The host is SIGKILLed while its run is parked on a question; the answer, given
/// later from another process, resumes the run there exactly once and it lands.
/// Whatever of the dead host's tree outlived it is killed first (see
/// [`no_process_outlives_a_killed_host`]), so the resume starts on a clean slate.
pub fn killed_while_parked_resumes_once(agent: &'static Conformer) {
    let (world, ask, tree) = park_and_kill(agent);
    for p in tree.iter().filter(|p| p.alive()) {
        // SAFETY: SIGKILL to a process this case started, named by pid and start time.
        unsafe { libc::kill(p.pid as i32, libc::SIGKILL) };
    }
    let answered = respond(&world, &ask, &["--answer", ANSWER]).ok();
    assert!(
        answered
            .stdout
            .contains("and the suspended run was resumed in this process"),
        "{answered:#?}\nmodel requests: {:#?}",
        world.model.requests()
    );
    let show = world.show();
    assert_eq!(show["status"], "landed", "{show:#}");
    assert!(
        world.model.heard_after(2, ANSWER),
        "the answer never reached the model: {:#?}",
        world.model.requests()
    );
    // The resumed conversation (its own session reloaded, or a fresh one briefed)
    // carries every resume turn the unit was given, each with the answer.
    let last = world.model.turn_requests().pop().unwrap()["body"].to_string();
    assert_eq!(
        last.matches(ANSWER).count(),
        1,
        "the run resumed exactly once"
    );
    assert!(!world.model.exhausted(), "the run resumed more than once");
    let again = respond(&world, &ask, &["--answer", "again"]);
    assert_eq!(
        again.code, 1,
        "a second answer never runs it twice: {again:#?}"
    );
    assert!(again.stderr.contains("was already answered"), "{again:#?}");
}

/// A host SIGKILLed while its run is parked leaves no process of its unit behind.
pub fn no_process_outlives_a_killed_host(agent: &'static Conformer) {
    let (_world, _ask, tree) = park_and_kill(agent);
    let outlived: Vec<String> = tree
        .iter()
        .filter(|p| p.alive())
        .map(|p| format!("{} {}", p.pid, p.cmdline()))
        .collect();
    for p in tree.iter().filter(|p| p.alive()) {
        // SAFETY: SIGKILL to a process this case started, named by pid and start time.
        unsafe { libc::kill(p.pid as i32, libc::SIGKILL) };
    }
    wait_all_gone(&tree, 30);
    assert!(
        outlived.is_empty(),
        "processes outlived their SIGKILLed host: {outlived:#?}"
    );
}

/// Fire a question under a one-second park window, let the run park (the unit ends
/// its turn), then SIGKILL the host. The world, the parked ask, and the host's tree
/// as it was just before the kill, given a few seconds to die with it.
fn park_and_kill(agent: &'static Conformer) -> (World, String, Vec<Proc>) {
    let world = World::new(
        agent,
        vec![
            call(
                &world_tool(agent, "mission_ask_attention"),
                json!({"summary": "Which colour should the fence be?"}),
            ),
            say("No answer yet; I end my turn and wait."),
            call(
                &world_tool(agent, "mission_report"),
                json!({"kind": "progress", "summary": "the colour is settled"}),
            ),
            call(
                &world_tool(agent, "mission_finish"),
                json!({"status": "landed", "reason": "painted"}),
            ),
            // Some agents ask once more before the host cancels a finished turn.
            say("Done."),
        ],
    );
    world.run(&["config", "set", "ask-park-window", "1s"]).ok();
    let fire = world.fire("paint the fence", "default");
    let ask = wait_ask(&world.sb, "the parked question", |a| a["parked"] == true);
    wait_for(STEP_SECS, "the unit's turn after the park", || {
        (world.model.turns_taken() == 2).then_some(())
    });
    let tree = descendants(fire.pid());
    assert!(!tree.is_empty(), "the unit runs under the fire's process");
    // SAFETY: SIGKILL to the fire this case started; dropping it reaps it.
    unsafe { libc::kill(fire.pid() as i32, libc::SIGKILL) };
    drop(fire);
    // The unit's tree is torn down with its host; a lingering one is judged by the
    // caller, after this grace.
    let _ = missionboard::clock::poll_until_blocking(
        std::time::Duration::from_secs(10),
        std::time::Duration::from_millis(50),
        || tree.iter().all(|p| !p.alive()).then_some(()),
    );
    (world, ask, tree)
}

/// A mission tool as `agent` names it.
fn world_tool(agent: &'static Conformer, name: &str) -> String {
    (agent.mission_tool)(name)
}
