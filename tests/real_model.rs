//! The model-driven parts against a REAL llama.cpp server (`llama-server`, built by
//! the test itself inside the build tree, serving SmolLM2-135M-Instruct from a
//! registry package; see `real_model/llama.rs`), through a recording loopback
//! pass-through so the wire contract is asserted on what really crossed. These tests
//! assert the wire contract, the safety outcome and clean terminal states, never the
//! model's quality. They are ignored by a plain `cargo test` (the first run builds
//! llama.cpp); `.ci/run` runs them with `cargo test --test real_model -- --ignored`.

mod common;
#[path = "real_model/llama.rs"]
mod llama;
#[path = "real_model/proxy.rs"]
mod proxy;

use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;

use common::{Background, Sandbox, script, wait_for};
use llama::LlamaServer;
use missionboard::clock::poll_until_blocking;
use proxy::{Exchange, Proxy};
use serde_json::Value;

/// One model server at a time: two cores cannot serve two tests' models and keep
/// either's timings meaningful.
static ONE_SERVER: Mutex<()> = Mutex::new(());

/// How long a small CPU model may take over one mission's model calls.
const MODEL_DEADLINE_SECS: u64 = 600;

/// The name the tests configure; llama-server serves its one model under any name.
const MODEL_NAME: &str = "smollm2";

/// Poll `f` until it yields `Some`, for at most [`MODEL_DEADLINE_SECS`].
fn poll<T>(f: impl FnMut() -> Option<T>) -> Option<T> {
    poll_until_blocking(
        Duration::from_secs(MODEL_DEADLINE_SECS),
        Duration::from_millis(200),
        f,
    )
}

fn show(sb: &Sandbox, id: &str) -> Value {
    let out = sb.run(&["mission", "show", id, "--json"]).ok();
    serde_json::from_str(&out.stdout).unwrap()
}

fn trace(sb: &Sandbox, id: &str) -> Vec<String> {
    show(sb, id)["oracleTrace"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["line"].as_str().unwrap().to_string())
        .collect()
}

/// The id of the ask of mission `id` whose summary is `summary`, once it exists.
fn ask_id(sb: &Sandbox, id: &str, summary: &str) -> String {
    wait_for(MODEL_DEADLINE_SECS, summary, || {
        show(sb, id)["asks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["argsSummary"].as_str() == Some(summary))
            .map(|a| a["id"].as_str().unwrap().to_string())
    })
}

fn is_pending(sb: &Sandbox, id: &str, ask: &str) -> bool {
    show(sb, id)["pendingAsks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["id"] == ask)
}

fn ask_row(sb: &Sandbox, id: &str, ask: &str) -> Value {
    show(sb, id)["asks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == ask)
        .cloned()
        .unwrap()
}

/// The trace once the oracle's review of `ask` has ended (delivered, waited, gave
/// up or failed), or the ask was resolved by then.
fn review_outcome(sb: &Sandbox, id: &str, ask: &str, server: &LlamaServer) -> Vec<String> {
    const ENDS: [&str; 5] = [
        "answered ask",
        "WAIT for ask",
        "no verdict for ask",
        "chain error for ask",
        "abandoned the review of ask",
    ];
    let ended = |t: &[String]| {
        t.iter()
            .any(|l| l.contains(ask) && ENDS.iter().any(|e| l.contains(e)))
    };
    let outcome = poll(|| {
        let t = trace(sb, id);
        ended(&t).then_some(t)
    });
    outcome.unwrap_or_else(|| {
        panic!(
            "no end of the oracle's review of ask {ask} within {MODEL_DEADLINE_SECS}s; trace {:#?}\nllama-server:\n{}",
            trace(sb, id),
            server.log_tail()
        )
    })
}

/// The wire contract on every chat request that crossed: a JSON body with
/// `max_tokens` and messages whose `content` is a string, never null.
fn assert_requests_well_formed(exchanges: &[Exchange]) {
    for (i, x) in exchanges.iter().enumerate() {
        assert_eq!(
            (x.method.as_str(), x.path.as_str()),
            ("POST", "/v1/chat/completions"),
            "request {i}"
        );
        assert!(
            x.request["max_tokens"].is_u64(),
            "request {i}: {:#}",
            x.request
        );
        assert_eq!(x.request["model"], MODEL_NAME, "request {i}");
        let messages = x.request["messages"].as_array().unwrap();
        for (j, m) in messages.iter().enumerate() {
            assert!(
                m["content"].is_string(),
                "request {i} message {j} ({}) has content {}",
                m["role"],
                m["content"]
            );
        }
    }
}

/// A 200's body is a chat completion with one message.
fn assert_completion(x: &Exchange) {
    let body: Value = serde_json::from_str(&x.response)
        .unwrap_or_else(|e| panic!("a 200 that is not JSON ({e}): {}", x.response));
    assert!(body["choices"][0]["message"].is_object(), "{body:#}");
}

fn background(mut c: std::process::Command) -> Background {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    Background::spawn(c)
}

const ROUTINE: &str = "Rename the env var too?";
const RISKY: &str = "Delete the production database?";
const INTENT: &str =
    "Rename the setting MB_PORT to MB_LISTEN everywhere, and rename its env var too";

#[test]
#[ignore = "runs in CI (.ci/run): builds a llama.cpp server"]
fn the_oracle_on_a_real_server_answers_no_risky_question_and_the_mission_lands() {
    let _one = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let sb = Sandbox::new();
    let server = LlamaServer::start(4096, sb.home.parent().unwrap());
    let proxy = Proxy::start(server.origin.trim_start_matches("http://"));
    sb.run(&["init"]).ok();
    let steps = format!(
        r#"{{"ask":{{"summary":"{ROUTINE}","detail":"The config key MB_PORT is being renamed to MB_LISTEN.","then":{{"report":{{"kind":"finding","summary":"env var: {{{{answer}}}}"}}}}}}}},{{"ask":{{"summary":"{RISKY}","detail":"The old table prod.users looks unused.","then":{{"report":{{"kind":"finding","summary":"database: {{{{answer}}}}"}}}}}}}},{{"finish":"landed"}}"#
    );
    sb.declare_stubs(&[("stub", Some(&script(&steps)))]);
    for (key, value) in [
        ("opt-in-beta", "true"),
        ("model-base-url", proxy.url.as_str()),
        ("model-name", MODEL_NAME),
        // A question waits this long in the unit before the run parks; generous, so
        // a slow CPU model never races the park.
        ("ask-park-window", "10m"),
    ] {
        sb.run(&["config", "set", key, value]).ok();
    }
    let fire = background(sb.command(&[
        "mission", "fire", "stub", INTENT, "--wait", "--policy", "default", "--oracle",
    ]));
    let id = wait_for(60, "the mission", || sb.newest_mission());

    // The routine question: answered or left for a human, either is the model's call.
    let routine = ask_id(&sb, &id, ROUTINE);
    let routine_trace = review_outcome(&sb, &id, &routine, &server);
    if is_pending(&sb, &id, &routine) {
        sb.run(&["approvals", "respond", &routine, "--answer", "yes"])
            .ok();
    }

    // The risky one is never answered by the oracle, whatever the model says.
    let risky = ask_id(&sb, &id, RISKY);
    let risky_trace = review_outcome(&sb, &id, &risky, &server);
    assert!(
        is_pending(&sb, &id, &risky),
        "the risky question stays with a human: {:#}\ntrace {risky_trace:#?}",
        ask_row(&sb, &id, &risky)
    );
    assert!(
        !risky_trace
            .iter()
            .any(|l| l.contains(&format!("answered ask {risky}"))),
        "{risky_trace:#?}"
    );
    sb.run(&["approvals", "respond", &risky, "--answer", "no, keep it"])
        .ok();

    let run = fire.join();
    assert_eq!(run.code, 0, "{run:#?}");
    let record = show(&sb, &id);
    assert_eq!(record["status"], "landed", "{record:#}");
    assert!(
        run.stdout.contains("  [finding] database: no, keep it\n"),
        "the human's answer reached the unit: {run:#?}"
    );
    let last = ask_row(&sb, &id, &risky);
    assert_eq!(
        last["resolution"]["answer"], "no, keep it",
        "answered by the human, not the oracle: {last:#}"
    );
    assert!(last["resolution"].get("answeredBy").is_none(), "{last:#}");

    let full = trace(&sb, &id);
    assert!(
        full.iter().all(|l| !l.contains("chain error")),
        "every model call went through: {full:#?}\nrouting {routine_trace:#?}"
    );
    let exchanges = proxy.exchanges();
    assert!(
        !exchanges.is_empty(),
        "the oracle called the model: {full:#?}"
    );
    assert_requests_well_formed(&exchanges);
    for (i, x) in exchanges.iter().enumerate() {
        assert_eq!(x.status, 200, "exchange {i} refused: {}", x.response);
        assert_completion(x);
    }
    for x in &exchanges {
        assert_eq!(
            x.request["tools"][0]["function"]["name"],
            "oracle_submit_verdict"
        );
    }
}

/// Whether `text` reports a request past the model's context window, in llama.cpp's
/// words (`exceed_context_size_error`) or OpenAI's (`context_length_exceeded`).
fn is_context_overflow(text: &str) -> bool {
    let text = text.to_lowercase();
    [
        "exceed_context_size",
        "exceeds the available context",
        "context_length_exceeded",
        "maximum context length",
    ]
    .iter()
    .any(|w| text.contains(w))
}

/// The ways a planner mission may end that this test accepts: a terminal status; a
/// pending ask (a question or a permission) that carries a message; or a unit that
/// ended its turn with nothing pending, which leaves the mission open on a runtime
/// blocker and lets the waiting fire return.
enum Outcome {
    Terminal(Value),
    Asked(Value),
    Idle(Value),
}

fn outcome(sb: &Sandbox, id: &str, fire: &mut Background, server: &LlamaServer) -> Outcome {
    let found = poll(|| {
        let record = show(sb, id);
        if record["status"] != "open" {
            return Some(Outcome::Terminal(record));
        }
        let pending = record["pendingAsks"].as_array().unwrap();
        if let Some(ask) = pending.first() {
            return Some(Outcome::Asked(ask.clone()));
        }
        // Read the record again once the fire is gone: the blocker is filed first.
        fire.exited().then(|| Outcome::Idle(show(sb, id)))
    });
    found.unwrap_or_else(|| {
        panic!(
            "mission {id} neither ended nor asked within {MODEL_DEADLINE_SECS}s: {:#}\nllama-server:\n{}",
            show(sb, id),
            server.log_tail()
        )
    })
}

/// Fire `agent` at the server and check how its mission ends; returns the exchanges.
fn fire_planner(sb: &Sandbox, agent: &str, server: &LlamaServer, proxy: &Proxy) -> Vec<Exchange> {
    let before = proxy.exchanges().len();
    let mut fire = background(sb.command(&[
        "mission",
        "fire",
        agent,
        "Write the word hello into notes/hello.txt, report it as a result, then finish.",
        "--wait",
        "--policy",
        "default",
    ]));
    let id = wait_for(60, "the mission", || {
        sb.newest_mission()
            .filter(|m| show(sb, m)["agentName"] == agent)
    });
    let record = match outcome(sb, &id, &mut fire, server) {
        Outcome::Asked(ask) => {
            let message = ask["argsSummary"].as_str().unwrap_or_default();
            assert!(
                !message.trim().is_empty(),
                "an ask without a message: {ask:#}"
            );
            sb.run(&[
                "mission",
                "stop",
                &id,
                "--reason",
                "the test has seen it ask",
            ])
            .ok();
            wait_for(60, "the stopped mission", || {
                let r = show(sb, &id);
                (r["status"] != "open").then_some(r)
            })
        }
        Outcome::Terminal(record) => record,
        Outcome::Idle(record) => {
            let blockers: Vec<&Value> = record["reports"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| r["kind"] == "blocker")
                .collect();
            assert!(
                blockers.iter().any(|r| !r["summary"]
                    .as_str()
                    .unwrap_or_default()
                    .trim()
                    .is_empty()),
                "the fire returned on an open mission with no blocker saying why: {record:#}"
            );
            sb.run(&["mission", "stop", &id, "--reason", "the unit went idle"])
                .ok();
            wait_for(60, "the stopped mission", || {
                let r = show(sb, &id);
                (r["status"] != "open").then_some(r)
            })
        }
    };
    let run = fire.join();
    let status = record["status"].as_str().unwrap().to_string();
    if status == "landed" {
        assert_eq!(run.code, 0, "{run:#?}");
    } else {
        assert_eq!(run.code, 1, "{run:#?}");
        let reason = record["statusReason"].as_str().unwrap_or_default();
        assert!(
            !reason.trim().is_empty(),
            "{status} without a reason: {record:#}"
        );
        if is_context_overflow(reason) {
            assert!(
                reason.contains("--context-tokens"),
                "a context overflow names the setting: {reason}"
            );
        }
    }
    // agent-planner reads the server's context size once before its first request.
    let (exchanges, probes): (Vec<Exchange>, Vec<Exchange>) = proxy.exchanges()[before..]
        .iter()
        .cloned()
        .partition(|x| x.path != "/props");
    for probe in &probes {
        assert_eq!(
            (probe.method.as_str(), probe.status),
            ("GET", 200),
            "{probe:#?}"
        );
    }
    assert!(
        !exchanges.is_empty(),
        "the agent called the model: {record:#}"
    );
    assert_requests_well_formed(&exchanges);
    for (i, x) in exchanges.iter().enumerate() {
        match x.status {
            200 => assert_completion(x),
            // The one refusal a real server may give a well-formed request.
            400 if is_context_overflow(&x.response) => {
                let reason = record["statusReason"].as_str().unwrap_or_default();
                assert!(
                    status != "derailed" || reason.contains("--context-tokens"),
                    "derailed on the context without naming --context-tokens: {reason}"
                );
            }
            other => panic!("exchange {i} answered {other}: {}", x.response),
        }
    }
    exchanges
}

#[test]
#[ignore = "runs in CI (.ci/run): builds a llama.cpp server"]
fn agent_planner_on_a_small_context_server_ends_or_asks_and_never_hangs() {
    let _one = ONE_SERVER.lock().unwrap_or_else(|e| e.into_inner());
    let sb = Sandbox::new();
    let server = LlamaServer::start(4096, sb.home.parent().unwrap());
    let proxy = Proxy::start(server.origin.trim_start_matches("http://"));
    sb.run(&["init"]).ok();
    sb.run(&["config", "set", "model-base-url", &proxy.url])
        .ok();
    sb.run(&["config", "set", "model-name", MODEL_NAME]).ok();
    // Sized to the server, and the shipped defaults (a 32k window assumed).
    sb.write(
        &sb.cwd.join(".missionboard/agents.toml"),
        &format!(
            "[agents.planner-4k]\ncommand = \"missionboard\"\nargs = [\"agent\", \"--context-tokens\", \"{}\", \"--max-tokens\", \"256\", \"--max-steps\", \"4\"]\n",
            server.context
        ),
    );
    let sized = fire_planner(&sb, "planner-4k", &server, &proxy);
    for x in &sized {
        assert_eq!(x.request["max_tokens"], 256, "the configured reply cap");
    }
    fire_planner(&sb, "agent-planner", &server, &proxy);
}
