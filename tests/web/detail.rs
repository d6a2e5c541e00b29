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
