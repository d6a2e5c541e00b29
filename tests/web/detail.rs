//! The mission page's worktree diff, and what the page weighs.

use serde_json::json;

use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};

use crate::harness::{Sandbox, git};
use crate::server::Web;

#[test]
fn a_worktree_mission_s_diff_is_on_its_page_as_inert_text() {
    let sb = Sandbox::new();
    git(&sb.cwd, &["init", "-q", "-b", "main"]);
    std::fs::write(sb.cwd.join("notes.txt"), "one\n").unwrap();
    let script = json!({"name": "w", "turns": [{"steps": [
        {"write": {"path": "notes.txt", "text": "two <script>alert(1)</script>\n"}},
        {"finish": "landed"}
    ]}]})
    .to_string();
    sb.declare_stubs(&[("writer", Some(&script))]);
    git(&sb.cwd, &["add", "-A"]);
    git(&sb.cwd, &["commit", "-q", "-m", "init"]);
    let mut fire = sb.command(&[
        "mission",
        "fire",
        "writer",
        "rewrite the notes",
        "--wait",
        "--policy",
        "default",
        "--worktree",
    ]);
    fire.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null");
    let fired = sb.run_with(fire);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();

    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let page = web
        .get(&format!("/missions/{id}"), Some(&credential))
        .text()
        .unwrap();
    let at = page
        .find("<h2>Changes</h2><pre class=\"diff\">")
        .unwrap_or_else(|| panic!("no diff on the page: {page}"));
    let diff = &page[at..];
    assert!(diff.contains("notes.txt"), "{diff}");
    assert!(diff.contains("\n-one\n"), "{diff}");
    assert!(
        diff.contains("\n+two &lt;script&gt;alert(1)&lt;/script&gt;</pre>"),
        "{diff}"
    );
    assert!(!page.contains("<script>alert"), "{page}");

    // A mission without a worktree has no such section.
    let other = sb.record_missions("no worktree", 1).remove(0);
    let plain = web
        .get(&format!("/missions/{other}"), Some(&credential))
        .text()
        .unwrap();
    assert!(!plain.contains("<h2>Changes</h2>"), "{plain}");
}

#[test]
fn the_page_with_its_script_and_style_weighs_under_100_kb() {
    let sb = Sandbox::new();
    let ids = sb.record_missions("weigh the page with a mission of a realistic length", 50);
    let asks = Asks::new(sb.store());
    for (i, id) in ids.iter().take(10).enumerate() {
        asks.raise(NewAsk {
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: format!("Question {i}: should the loader read the old variable too?"),
            mission_id: Some(id.clone()),
            ..Default::default()
        })
        .unwrap();
    }
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let weigh = |path: &str| {
        let r = web.get(path, Some(&credential));
        assert_eq!(r.status(), 200, "{path}");
        r.bytes().unwrap().len()
    };
    let html = weigh("/");
    let (script, style) = (weigh("/app.js"), weigh("/app.css"));
    let total = html + script + style;
    assert!(
        total <= 100 * 1024,
        "the page weighs {total} bytes (HTML {html}, JS {script}, CSS {style}), over 100 KB"
    );
    // Script and style alone stay small: the page's weight is its content.
    assert!(script + style <= 20 * 1024, "JS {script} + CSS {style}");
}

#[test]
fn a_mission_s_cost_is_on_its_page_and_in_the_list_with_today_s_spend() {
    let sb = Sandbox::new();
    let script = json!({"name": "c", "turns": [{"steps": [
        {"usage": {"used": 10, "size": 1000, "cost": {"amount": 0.42, "currency": "USD"}}},
        {"finish": "landed"}
    ]}]})
    .to_string();
    sb.declare_stubs(&[("costly", Some(&script))]);
    sb.run(&["config", "set", "budget-daily", "5"]).ok();
    let fired = sb.fire("costly", "spend a little", &[]);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let id = sb.newest_mission().unwrap();
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let page = web
        .get(&format!("/missions/{id}"), Some(&credential))
        .text()
        .unwrap();
    assert!(
        page.contains("<dt>Cost</dt><dd>$0.42 (reported by the agent)</dd>"),
        "{page}"
    );
    let index = web.get("/", Some(&credential)).text().unwrap();
    assert!(index.contains(" · $0.42 reported</span>"), "{index}");
    assert!(
        index.contains("Spent today (UTC): $0.42 of the $5.00 daily budget"),
        "{index}"
    );
}

/// Issue 43: a mission whose check failed shows it (state, last try, output tail) on
/// its page and in the list, and its page's Revise field sends it back, queued for
/// the `missionboard host` serving the page, which runs it through the check again.
#[test]
fn a_stuck_mission_s_check_is_on_its_page_and_its_revise_field_sends_it_back_to_land() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", None)]);
    let check = "test -f revised.txt || { echo '<b>revised.txt</b> is missing'; exit 1; }";
    let id = sb.stuck_on_check(check);

    let web = Web::start_command(&sb, &["host", "--web", "127.0.0.1:0"]);
    let credential = web.pair(&sb, "phone");
    let page = web
        .get(&format!("/missions/{id}"), Some(&credential))
        .text()
        .unwrap();
    assert!(
        page.contains(&format!(
            "<dt>Check</dt><dd>failed 1 of 1 — `{}`</dd><dt>Last try</dt><dd>exit 1</dd>",
            check
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('\'', "&#39;")
        )),
        "{page}"
    );
    assert!(
        page.contains(
            "<h2>Check output (tail)</h2><pre class=\"check-output\">&lt;b&gt;revised.txt&lt;/b&gt; is missing\n</pre>"
        ),
        "{page}"
    );
    assert!(page.contains("action=\"/api/revise\""), "{page}");
    let list = web.get("/", Some(&credential)).text().unwrap();
    assert!(
        list.contains("<span class=\"check\" title=\"failed 1 of 1\">check ✗1/1</span>"),
        "{list}"
    );

    let csrf = web.csrf(&credential);
    let forged = web.post(
        "/api/revise",
        Some(&credential),
        &[("mission", &id), ("feedback", "write revised.txt")],
    );
    assert_eq!(forged.status(), 403);
    let revised = web.post(
        "/api/revise",
        Some(&credential),
        &[
            ("csrf", &csrf),
            ("mission", &id),
            ("feedback", "write revised.txt"),
        ],
    );
    assert_eq!(revised.status(), 200);
    let body: serde_json::Value = revised.json().unwrap();
    assert_eq!(
        body["message"],
        format!(
            "Mission {id} sent back (run 2) and queued at position 1 for a `missionboard host`: the feedback is its next prompt."
        )
    );
    let landed = crate::harness::wait_for(60, "the revised run to land", || {
        let out = sb.run(&["mission", "show", &id, "--json"]).ok();
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        (v["status"] == "landed").then_some(v)
    });
    assert_eq!(
        (&landed["check"]["state"], &landed["check"]["tries"]),
        (&json!("passed"), &json!(1))
    );
    assert_eq!(landed["runs"][0]["revisedBy"], "web");
    assert_eq!(
        std::fs::read_to_string(sb.cwd.join("revised.txt")).unwrap(),
        "write revised.txt"
    );
    // Landed: nothing to revise now but again; a running one would be refused.
    let page = web
        .get(&format!("/missions/{id}"), Some(&credential))
        .text()
        .unwrap();
    assert!(
        page.contains(
            "<dt>Run 2</dt><dd>revised by web after it rested stuck: write revised.txt</dd>"
        ),
        "{page}"
    );
}
