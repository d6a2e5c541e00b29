//! A mission's cost (reported by its agent, else its tokens at the home's prices,
//! else "no price") on `mission show`, and the `spend` rollup over missions.

use serde_json::Value;

use crate::harness::{Background, Sandbox, wait_for};

/// The test's own price table, in the sandbox home: the figures below are computed
/// from these, never from the shipped table.
const INPUT_PER_M: f64 = 3.0;
const OUTPUT_PER_M: f64 = 15.0;
const PRICED: &str = "priced-model";

fn write_prices(sb: &Sandbox) {
    sb.write(
        &sb.home.join("prices.toml"),
        &format!(
            "as_of = \"2030-01-02\"\n[models.\"{PRICED}\"]\ninput = {INPUT_PER_M}\noutput = {OUTPUT_PER_M}\n"
        ),
    );
}

/// A stub on `model` whose first turn reports `input`/`output` tokens (and `cost`,
/// a JSON object, when given) at its end, and whose nudged second turn lands.
fn usage_script(model: &str, input: u64, output: u64, cost: Option<&str>) -> String {
    let cost = cost.map_or(String::new(), |c| format!(r#","cost":{c}"#));
    format!(
        r#"{{"name":"spend","models":["{model}"],"turns":[{{"steps":[{{"usage":{{"used":{},"size":32768,"input":{input},"output":{output}{cost}}}}}]}},{{"steps":[{{"finish":"landed"}}]}}]}}"#,
        input + output
    )
}

fn fire(sb: &Sandbox, agent: &str) -> String {
    sb.run(&[
        "mission",
        "fire",
        agent,
        "go",
        "--wait",
        "--policy",
        "open",
        "--timeout",
        "60s",
    ])
    .ok();
    sb.newest_mission().expect("a mission was recorded")
}

fn cost_of(sb: &Sandbox, id: &str) -> Value {
    let show = sb.run(&["mission", "show", id, "--json"]).ok();
    let v: Value = serde_json::from_str(&show.stdout).unwrap();
    v["cost"].clone()
}

fn expected_usd(input: u64, output: u64) -> f64 {
    (input as f64 * INPUT_PER_M + output as f64 * OUTPUT_PER_M) / 1_000_000.0
}

fn setup(sb: &Sandbox, agents: &[(&str, &str)]) {
    let agents: Vec<(&str, Option<&str>)> = agents.iter().map(|(n, s)| (*n, Some(*s))).collect();
    sb.declare_stubs(&agents);
    sb.write_compute_envelope("open", "{}");
    write_prices(sb);
}

#[test]
fn reported_tokens_on_a_priced_model_are_an_estimated_cost() {
    let sb = Sandbox::new();
    setup(&sb, &[("stub", &usage_script(PRICED, 1200, 300, None))]);
    let id = fire(&sb, "stub");
    let cost = cost_of(&sb, &id);
    assert_eq!(cost["source"], "estimated", "{cost}");
    let usd = cost["usd"].as_f64().unwrap();
    assert!((usd - expected_usd(1200, 300)).abs() < 1e-12, "{cost}");
    assert_eq!(
        cost["note"],
        format!(
            "estimated: 1,200 input (0 cached) + 300 output tokens at {PRICED}'s list prices of 2030-01-02"
        )
    );
    let show = sb.run(&["mission", "show", &id]).ok();
    show.assert_stdout_has(&format!(
        "Cost:      $0.0081 (estimated: 1,200 input (0 cached) + 300 output tokens at {PRICED}'s list prices of 2030-01-02)"
    ));
}

#[test]
fn a_model_with_no_price_says_so_and_is_never_a_zero() {
    let sb = Sandbox::new();
    setup(
        &sb,
        &[("stub", &usage_script("nobody-prices-this", 1200, 300, None))],
    );
    let id = fire(&sb, "stub");
    let cost = cost_of(&sb, &id);
    assert_eq!(cost["source"], "none", "{cost}");
    assert!(cost["usd"].is_null(), "{cost}");
    assert_eq!(cost["note"], "no price for nobody-prices-this");
    let show = sb.run(&["mission", "show", &id]).ok();
    show.assert_stdout_has("Cost:      no price for nobody-prices-this\n");
    let spend: Value = serde_json::from_str(&sb.run(&["spend", "--json"]).ok().stdout).unwrap();
    assert_eq!(spend["total"]["unpriced"], 1, "{spend}");
    assert_eq!(spend["total"]["unpricedModels"][0], "nobody-prices-this");
    assert_eq!(spend["total"]["costUsd"], 0.0);
    sb.run(&["spend"]).ok().assert_stdout_has(
        "1 mission(s) are not in COST: no price for nobody-prices-this — add the model to the home's prices.toml.\n",
    );
}

#[test]
fn a_price_table_that_cannot_be_read_is_said_not_zeroed() {
    let sb = Sandbox::new();
    setup(&sb, &[("stub", &usage_script(PRICED, 1200, 300, None))]);
    let id = fire(&sb, "stub");
    // An entry with no date, in the home's table.
    sb.write(
        &sb.home.join("prices.toml"),
        &format!("[models.\"{PRICED}\"]\ninput = 1.0\noutput = 1.0\n"),
    );
    let cost = cost_of(&sb, &id);
    assert_eq!(cost["source"], "none", "{cost}");
    assert!(cost["usd"].is_null(), "{cost}");
    let fix = format!(
        "model \"{PRICED}\" has no as_of date — give the file an as_of = \"YYYY-MM-DD\" line or the entry its own"
    );
    assert!(cost["note"].as_str().unwrap().contains(&fix), "{cost}");
    let spend = sb.run(&["spend"]);
    assert_eq!(spend.code, 1, "{spend:#?}");
    assert!(
        spend.stderr.contains("prices.toml: ") && spend.stderr.contains(&fix),
        "{spend:#?}"
    );
}

#[test]
fn a_cost_the_agent_reports_is_shown_as_reported() {
    let sb = Sandbox::new();
    let script = usage_script(
        PRICED,
        1200,
        300,
        Some(r#"{"amount":0.42,"currency":"USD"}"#),
    );
    setup(&sb, &[("stub", &script)]);
    let id = fire(&sb, "stub");
    let cost = cost_of(&sb, &id);
    assert_eq!(cost["source"], "reported", "{cost}");
    assert_eq!(cost["usd"], 0.42);
    assert_eq!(cost["note"], "reported by the agent");
    sb.run(&["mission", "show", &id])
        .ok()
        .assert_stdout_has("Cost:      $0.42 (reported by the agent)\n");
}

#[test]
fn spend_by_agent_sums_its_missions() {
    let sb = Sandbox::new();
    setup(
        &sb,
        &[
            ("stub", &usage_script(PRICED, 1200, 300, None)),
            (
                "other",
                &usage_script(PRICED, 100, 10, Some(r#"{"amount":0.5}"#)),
            ),
        ],
    );
    fire(&sb, "stub");
    fire(&sb, "stub");
    fire(&sb, "other");
    let spend: Value =
        serde_json::from_str(&sb.run(&["spend", "--by", "agent", "--json"]).ok().stdout).unwrap();
    let group = |key: &str| {
        spend["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["key"] == key)
            .unwrap_or_else(|| panic!("no {key} group: {spend}"))
            .clone()
    };
    let stub = group("stub");
    assert_eq!(stub["missions"], 2, "{stub}");
    assert_eq!(
        (stub["estimated"].clone(), stub["reported"].clone()),
        (2.into(), 0.into())
    );
    let usd = stub["costUsd"].as_f64().unwrap();
    assert!(
        (usd - 2.0 * expected_usd(1200, 300)).abs() < 1e-12,
        "{stub}"
    );
    assert_eq!(stub["tokens"], 3000);
    let other = group("other");
    assert_eq!(
        (other["missions"].clone(), other["reported"].clone()),
        (1.into(), 1.into())
    );
    assert_eq!(other["costUsd"], 0.5);
    let total = spend["total"]["costUsd"].as_f64().unwrap();
    assert!(
        (total - (0.5 + 2.0 * expected_usd(1200, 300))).abs() < 1e-12,
        "{spend}"
    );
    let by_day: Value =
        serde_json::from_str(&sb.run(&["spend", "--by", "day", "--json"]).ok().stdout).unwrap();
    let days = by_day["groups"].as_array().unwrap();
    assert_eq!(days.len(), 1, "{by_day}");
    let day = days[0]["key"].as_str().unwrap();
    assert!(
        day.len() == 10 && day.as_bytes()[4] == b'-' && day.as_bytes()[7] == b'-',
        "a UTC day: {by_day}"
    );
    assert_eq!(days[0]["missions"], 3);
    let text = sb.run(&["spend", "--by", "agent"]).ok();
    let stub_row = text
        .lines()
        .into_iter()
        .find(|l| l.starts_with("stub "))
        .unwrap()
        .to_string();
    assert!(stub_row.contains("$0.0162"), "{}", text.stdout);
}

#[test]
fn since_leaves_out_a_mission_fired_before_it() {
    let sb = Sandbox::new();
    setup(&sb, &[("stub", &usage_script(PRICED, 1200, 300, None))]);
    let old = fire(&sb, "stub");
    fire(&sb, "stub");
    // Fired eight days ago, as far as the record says.
    sb.store()
        .with(|c| {
            c.execute(
                "UPDATE missions SET created_at = created_at - 691200000 WHERE id = ?1",
                missionboard::store::sql::params![old],
            )
        })
        .unwrap();
    let within = |since: &str| -> Value {
        let run = sb.run(&["spend", "--since", since, "--json"]).ok();
        serde_json::from_str::<Value>(&run.stdout).unwrap()["total"].clone()
    };
    assert_eq!(within("7d")["missions"], 1);
    assert_eq!(within("9d")["missions"], 2);
    let bad = sb.run(&["spend", "--by", "colour"]);
    assert_eq!(bad.code, 1, "{bad:#?}");
    assert!(
        bad.stderr
            .contains("--by takes one of agent, envelope, label, host, day"),
        "{bad:#?}"
    );
}

#[test]
fn agent_planner_is_priced_at_the_model_it_was_declared_with() {
    let sb = Sandbox::new();
    sb.run(&["init"]).ok();
    write_prices(&sb);
    let dialog = sb.cwd.join("dialog.json");
    sb.write(
        &dialog,
        &serde_json::json!({"turns": [{
            "tool_calls": [{"name": "mission_finish",
                "arguments": {"status": "landed", "reason": "nothing to do"}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 40}
        }]})
        .to_string(),
    );
    let url = format!("scripted:{}", dialog.display());
    sb.run(&["config", "set", "model-base-url", &url]).ok();
    sb.run(&["config", "set", "model-name", PRICED]).ok();
    sb.fire("agent-planner", "finish at once", &[]).ok();
    let id = sb.newest_mission().unwrap();
    let cost = cost_of(&sb, &id);
    assert_eq!(cost["source"], "estimated", "{cost}");
    // The usage of the turn that landed it counts: it arrives after the verdict.
    assert_eq!(
        cost["note"],
        format!(
            "estimated: 900 input (0 cached) + 40 output tokens at {PRICED}'s list prices of 2030-01-02"
        )
    );
    assert!(
        (cost["usd"].as_f64().unwrap() - expected_usd(900, 40)).abs() < 1e-12,
        "{cost}"
    );
}

/// A stub on `model` whose first turn reports usage (`cost`, a JSON object, when
/// given: at once, as `usage_update` does; its tokens at the turn's end, as the
/// prompt's answer does), and whose next turn files a report and lands. Steps are
/// `delay_ms` apart, so a crossing on the reported cost lands first.
fn crossing_script(model: &str, input: u64, output: u64, cost: Option<&str>) -> String {
    let cost = cost.map_or(String::new(), |c| format!(r#","cost":{c}"#));
    format!(
        r#"{{"name":"money","delay_ms":50,"models":["{model}"],"turns":[{{"steps":[{{"report":{{"summary":"go"}}}},{{"usage":{{"used":{},"size":32768,"input":{input},"output":{output}{cost}}}}},{{"report":{{"summary":"past the bound"}}}}]}},{{"steps":[{{"report":{{"summary":"after the turn"}}}},{{"finish":"landed"}}]}}]}}"#,
        input + output
    )
}

#[test]
fn the_money_bound_holds_on_the_cost_the_agent_reports() {
    let sb = Sandbox::new();
    let script = crossing_script(PRICED, 10, 10, Some(r#"{"amount":0.75,"currency":"USD"}"#));
    setup(&sb, &[("stub", &script)]);
    sb.write_compute_envelope("money", r#"{"maxCostUsd":0.5}"#);
    let run = sb.fire_stub("money", "60s", None);
    assert_eq!(run.code, 1, "{run:#?}");
    run.assert_stdout_has("Compute bounds: maxCostUsd=$0.50 (best-effort);");
    let id = sb.newest_mission().unwrap();
    assert_eq!(
        sb.status_line(&id),
        "stuck — compute bound exhausted: maxCostUsd=$0.50 (reported cost $0.75 by the agent) — the mission spent its money budget."
    );
    assert_eq!(
        crate::harness::report_summaries(&sb, &id),
        ["[progress] go"],
        "nothing after the crossing was filed"
    );
}

#[test]
fn the_money_bound_holds_on_tokens_at_the_list_price_when_no_cost_is_reported() {
    let sb = Sandbox::new();
    // 1,200 input + 300 output at $3/$15 per million: $0.0081, past $0.005.
    setup(&sb, &[("stub", &crossing_script(PRICED, 1200, 300, None))]);
    sb.write_compute_envelope("money", r#"{"maxCostUsd":0.005}"#);
    let run = sb.fire_stub("money", "60s", None);
    assert_eq!(run.code, 1, "{run:#?}");
    let id = sb.newest_mission().unwrap();
    // Crossed at the end of the turn the tokens were reported for: no turn after.
    assert_eq!(
        crate::harness::report_summaries(&sb, &id),
        ["[progress] go", "[progress] past the bound"]
    );
    assert_eq!(
        sb.status_line(&id),
        format!(
            "stuck — compute bound exhausted: maxCostUsd=$0.0050 (estimated cost $0.0081: 1,200 input (0 cached) + 300 output tokens at {PRICED}'s list prices of 2030-01-02) — the mission spent its money budget."
        )
    );
}

#[test]
fn a_money_bound_the_envelope_cannot_mean_is_refused_naming_the_field() {
    let sb = Sandbox::new();
    for (compute, why) in [
        (
            r#"{"maxCostUsd":-1}"#,
            "compute: maxCostUsd must be an amount of US dollars, 0 or more (got -1)",
        ),
        (
            r#"{"maxCostUsd":"5"}"#,
            "json: cannot unmarshal string into field compute.maxCostUsd of type float64",
        ),
        (
            r#"{"maxCostUsd":2000000}"#,
            "compute: maxCostUsd is out of range (got 2000000, max 1000000)",
        ),
    ] {
        sb.write_compute_envelope("bad", compute);
        let vet = sb.run(&[
            "vet",
            &sb.home.join("hitl-policy-bad.json").display().to_string(),
        ]);
        assert_eq!(vet.code, 1, "{compute}: {vet:#?}");
        assert!(
            vet.stdout.contains(why) || vet.stderr.contains(why),
            "{compute}: {vet:#?}"
        );
    }
}

/// The fleet's daily budget: a mission that spent $0.75 of a $0.50 budget leaves
/// the next fire refused with the figures; `--queue` records it to wait.
#[test]
fn a_fire_past_the_daily_budget_is_refused_naming_the_spend_or_queued_with_queue() {
    let sb = Sandbox::new();
    let script = usage_script(PRICED, 10, 10, Some(r#"{"amount":0.75,"currency":"USD"}"#));
    setup(&sb, &[("stub", &script)]);
    sb.run(&["config", "set", "budget-daily", "$0.50"]).ok();
    assert_eq!(
        sb.run(&["config", "get", "budget-daily"])
            .ok()
            .stdout
            .trim(),
        "0.5"
    );
    let bad = sb.run(&["config", "set", "budget-monthly", "lots"]);
    assert_eq!(bad.code, 1, "{bad:#?}");
    assert!(
        bad.stderr
            .contains("budget-monthly: \"lots\" is not an amount of US dollars"),
        "{bad:#?}"
    );
    let first = fire(&sb, "stub");
    assert_eq!(sb.status_line(&first), "landed");
    let refused = sb.run(&[
        "mission", "fire", "stub", "again", "--wait", "--policy", "open",
    ]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains(
            "fleet budget refused: the fleet has spent $0.75 today (UTC) against budget-daily $0.50. Fire it with --queue to start when the next period begins ("
        ),
        "{refused:#?}"
    );
    assert_eq!(sb.mission_ids().len(), 1, "a refused fire leaves no record");
    let queued = sb
        .run(&[
            "mission", "fire", "stub", "later", "--queue", "--policy", "open",
        ])
        .ok();
    assert!(
        queued.stdout.contains(" queued at position 1"),
        "{queued:#?}"
    );
}

#[test]
fn a_fire_whose_money_bound_would_pass_the_budget_is_refused() {
    let sb = Sandbox::new();
    setup(&sb, &[("stub", &usage_script(PRICED, 10, 10, None))]);
    sb.write_compute_envelope("dear", r#"{"maxCostUsd":2}"#);
    sb.run(&["config", "set", "budget-daily", "1"]).ok();
    let refused = sb.run(&[
        "mission", "fire", "stub", "go", "--wait", "--policy", "dear",
    ]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains(
            "fleet budget refused: the fleet has spent $0.00 today (UTC) against budget-daily $1.00, and this mission's maxCostUsd $2.00 would take it past."
        ),
        "{refused:#?}"
    );
}

/// `budget-on-exceeded pause`: a running mission whose reported cost takes the fleet
/// past its daily budget pauses on the compute-bound question, open and not
/// finished, the question naming the spend and the budget; answered "stop", it
/// finishes stuck. (Under the default, `finish`, the first mission of
/// `a_fire_past_the_daily_budget_is_refused_naming_the_spend_or_queued_with_queue`
/// crosses the same budget and lands.)
#[test]
fn a_running_mission_that_crosses_the_fleet_budget_pauses_when_the_config_says_pause() {
    let sb = Sandbox::new();
    // The fleet's spend is read from the store after the crossing usage is recorded,
    // so the unit waits there to be cancelled by the pause: a turn the host never
    // cancels would hang past the fire's 60 s and fail the test.
    let script = crossing_script(PRICED, 10, 10, Some(r#"{"amount":0.75,"currency":"USD"}"#))
        .replace(r#"{"report":{"summary":"past the bound"}}"#, r#""hang""#);
    setup(&sb, &[("stub", &script)]);
    sb.run(&["config", "set", "budget-daily", "$0.50"]).ok();
    sb.run(&["config", "set", "budget-on-exceeded", "pause"])
        .ok();
    let host = Background::spawn(sb.fire_stub_command("open", "60s", None));
    let (id, ask) = wait_for(30, "the fleet budget's question", || {
        let id = sb.newest_mission()?;
        let show = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: Value = serde_json::from_str(&show.stdout).unwrap();
        let ask = v["pendingAsks"]
            .as_array()?
            .iter()
            .find(|a| a["toolName"] == "compute_bound" && a["parked"] == true)?
            .clone();
        Some((id, ask))
    });
    assert_eq!(sb.status_line(&id), "open", "paused, not finished");
    assert_eq!(
        ask["argsSummary"],
        format!("mission {id} hit its compute bound maxCostUsd=$0.75 — extend it or let it stop?")
    );
    let why = ask["diff"].as_str().unwrap_or_default();
    assert!(
        why.starts_with(
            "fleet budget exceeded: the fleet has spent $0.75 today (UTC) against budget-daily $0.50 — nothing new starts until "
        ),
        "{ask:#}"
    );
    let ask = ask["id"].as_str().unwrap();
    sb.run(&["approvals", "respond", ask, "--answer", "stop"])
        .ok();
    let run = host.join();
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        sb.status_line(&id).starts_with("stuck — "),
        "{}",
        sb.status_line(&id)
    );
}

/// A stub on `model` that reports its usage twice — `first` at the end of its first
/// turn, `second` at the end of its nudged second turn — so its compute record is
/// written and then updated (the mission is left open, two
/// turns without a report: what it cost is all that matters here).
fn two_reports_script(model: &str, first: (u64, u64), second: (u64, u64)) -> String {
    let usage = |(input, output): (u64, u64)| {
        format!(
            r#"{{"usage":{{"used":{},"size":32768,"input":{input},"output":{output}}}}}"#,
            input + output
        )
    };
    format!(
        r#"{{"name":"spend","models":["{model}"],"turns":[{{"steps":[{}]}},{{"steps":[{}]}}]}}"#,
        usage(first),
        usage(second)
    )
}

#[test]
fn spend_agrees_with_the_missions_records_after_their_usage_is_updated() {
    let sb = Sandbox::new();
    setup(
        &sb,
        &[
            (
                "twice",
                &two_reports_script(PRICED, (1000, 100), (2500, 400)),
            ),
            ("once", &usage_script(PRICED, 700, 70, None)),
        ],
    );
    let run = sb.run(&[
        "mission",
        "fire",
        "twice",
        "go",
        "--wait",
        "--policy",
        "open",
        "--timeout",
        "60s",
    ]);
    assert!(
        run.stdout
            .contains("unit ended two turns without reporting"),
        "{run:#?}"
    );
    let twice = sb.newest_mission().expect("a mission was recorded");
    let ids = [twice, fire(&sb, "once")];
    let show = |id: &str| -> Value {
        serde_json::from_str(&sb.run(&["mission", "show", id, "--json"]).ok().stdout).unwrap()
    };
    let records: Vec<Value> = ids.iter().map(|id| show(id)).collect();
    let usd: f64 = records
        .iter()
        .map(|r| r["cost"]["usd"].as_f64().unwrap())
        .sum();
    let cpu_ms: u64 = records
        .iter()
        .map(|r| r["resources"]["cpuMs"].as_u64().unwrap_or(0))
        .sum();
    // The twice-reporting mission's record holds both reports.
    assert!(
        (records[0]["cost"]["usd"].as_f64().unwrap() - expected_usd(3500, 500)).abs() < 1e-12,
        "{}",
        records[0]
    );
    for by in ["agent", "day", "host", "envelope"] {
        let spend: Value =
            serde_json::from_str(&sb.run(&["spend", "--by", by, "--json"]).ok().stdout).unwrap();
        let total = &spend["total"];
        assert_eq!(total["missions"], 2, "by {by}: {spend}");
        assert_eq!(total["tokens"], 4000 + 770, "by {by}: {spend}");
        assert_eq!(total["cpuMs"], cpu_ms, "by {by}: {spend}");
        let spent = total["costUsd"].as_f64().unwrap();
        assert!(
            (spent - usd).abs() < 1e-12,
            "by {by}: {spend}, records {usd}"
        );
    }

    // Moved to just inside a seven-day window (an hour the rollup does not hold
    // whole) and just outside it, the missions are counted as the window says.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let week_ms = 7 * 86_400_000;
    for (id, at) in [
        (&ids[0], now_ms - week_ms + 120_000),
        (&ids[1], now_ms - week_ms - 120_000),
    ] {
        sb.store()
            .with(|c| {
                c.execute(
                    "UPDATE missions SET created_at = ?2 WHERE id = ?1",
                    missionboard::store::sql::params![id, at],
                )
            })
            .unwrap();
    }
    let week: Value =
        serde_json::from_str(&sb.run(&["spend", "--since", "7d", "--json"]).ok().stdout).unwrap();
    assert_eq!(week["total"]["missions"], 1, "{week}");
    assert_eq!(week["total"]["tokens"], 4000, "{week}");
    let week_usd = week["total"]["costUsd"].as_f64().unwrap();
    assert!(
        (week_usd - records[0]["cost"]["usd"].as_f64().unwrap()).abs() < 1e-12,
        "{week}"
    );
    let all: Value =
        serde_json::from_str(&sb.run(&["spend", "--since", "8d", "--json"]).ok().stdout).unwrap();
    assert_eq!(all["total"]["tokens"], 4000 + 770, "{all}");
}
