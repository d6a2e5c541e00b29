//! The web page in a real browser: Debian's Chromium, headless, on a phone-sized
//! screen, driven over WebDriver against the real binary's `missionboard web`.
//! Ignored by default (it needs `chromium` and `chromium-driver`); `.ci/run` runs
//! it. Without them it fails, naming the install command: it never passes silently.
//!
//! `MISSIONBOARD_WRITE_ASSETS=1` also writes its screenshot to assets/web-phone.png
//! (the README's picture); it is always written to `<target>/web-phone.png`.

#[path = "common/mod.rs"]
mod harness;

#[path = "web/server.rs"]
#[allow(dead_code)]
mod server;

#[path = "browser/webdriver.rs"]
mod webdriver;

use missionboard::asks::{Asks, NewAsk};
use serde_json::{Value, json};

use harness::{Sandbox, script, wait_for};
use server::{Web, pairing_link};
use webdriver::{Browser, Element};

const ASK_THEN_LAND: &str = r#"{"ask":{"summary":"Rename the env var too?","detail":"The loader reads MB_HOME; the docs say MISSIONBOARD_HOME.","then":{"report":{"kind":"result","summary":"renamed: {{answer}}"}}}},{"finish":"landed"}"#;

/// Two shell calls of one program, each reporting how the agent was answered.
const GIT_TWICE: &str = r#"{"permission":{"title":"git push origin main","command":"git push origin main","kind":"execute","report":true}},{"permission":{"title":"git status","command":"git status","kind":"execute","report":true}},{"finish":"landed"}"#;

/// Agent text that would act if it were ever taken for markup or a link.
const HOSTILE: &str = "<script>alert(1)</script> <img src=x onerror=alert(2)> <a href=\"javascript:alert(3)\">tap here</a> \u{202e}txt.exe\u{202c}";

/// The page's own scripts, elements and links, as the browser built them: what a
/// payload would have to change to act.
const INERT: &str = r#"
const scripts = Array.from(document.scripts).map(s => s.getAttribute("src"));
const foreign = document.querySelectorAll("img, iframe, object, embed, svg, video, audio, base, form:not([action^='/api/'])").length;
let handlers = 0;
document.querySelectorAll("*").forEach(el => {
  for (const a of el.attributes) if (a.name.startsWith("on")) handlers++;
});
const links = Array.from(document.links)
  .filter(a => a.protocol !== location.protocol || a.host !== location.host)
  .map(a => a.getAttribute("href"));
return { scripts, foreign, handlers, links, mark: window.mbMark || null, path: location.pathname };
"#;

/// Which missions heading (`landed 1`, `open 2`…) mission `id`'s line sits under.
const SECTION_OF: &str = r#"
const a = document.querySelector('#missions a[href="/missions/' + arguments[0] + '"]');
if (!a) return null;
let h = a.closest("ul").previousElementSibling;
return h ? h.firstChild.textContent.trim() : null;
"#;

fn card(ask: &str) -> String {
    format!("li[data-ask=\"{ask}\"]")
}

/// The id of the newest ask card, and its mission's id, once one other than
/// `seen` is shown.
fn new_card(browser: &Browser, seen: &[String]) -> (String, String) {
    wait_for(30, "a new ask card on the open page", || {
        let v = browser.eval(
            r#"return Array.from(document.querySelectorAll("li[data-ask]")).map(li => {
                 const m = li.querySelector('a[href^="/missions/"]');
                 return [li.getAttribute("data-ask"), m ? m.getAttribute("href").slice(10) : ""];
               });"#,
            vec![],
        );
        v.as_array()?
            .iter()
            .map(|pair| {
                (
                    pair[0].as_str().unwrap_or_default().to_string(),
                    pair[1].as_str().unwrap_or_default().to_string(),
                )
            })
            .find(|(ask, _)| !seen.contains(ask))
    })
}

fn wait_gone(browser: &Browser, ask: &str, what: &str) {
    wait_for(30, what, || {
        browser.find(&card(ask)).is_none().then_some(())
    });
}

fn wait_section(browser: &Browser, mission: &str, section: &str) {
    wait_for(
        30,
        &format!("mission {mission} listed as {section}"),
        || {
            let v = browser.eval(SECTION_OF, vec![json!(mission)]);
            (v.as_str() == Some(section)).then_some(())
        },
    );
}

/// Nothing a payload could do happened: no dialog, no script but ours, no element
/// or handler of its making, no link off the page, no navigation, no reload.
fn assert_inert(browser: &Browser, path: &str) {
    assert_eq!(browser.alert(), None, "a payload opened a dialog");
    let v: Value = browser.eval(INERT, vec![]);
    assert_eq!(v["scripts"], json!(["/app.js"]), "{v}");
    assert_eq!(v["foreign"], 0, "elements a payload made: {v}");
    assert_eq!(v["handlers"], 0, "event handler attributes: {v}");
    assert_eq!(v["links"], json!([]), "links off the page: {v}");
    assert_eq!(v["mark"], "kept", "the page was reloaded or left: {v}");
    assert_eq!(v["path"], path, "{v}");
}

fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
#[ignore = "needs Debian's chromium and chromium-driver; .ci/run runs it"]
fn a_phone_pairs_sees_asks_live_answers_them_and_hostile_text_stays_inert() {
    let sb = Sandbox::new();
    let hostile_script = script(&format!(
        "{},{{\"finish\":\"landed\"}}",
        json!({"ask": {"summary": HOSTILE, "detail": "[tap](javascript:alert(4)) <svg onload=alert(5)>"}})
    ));
    sb.declare_stubs(&[
        ("stub", Some(&script(ASK_THEN_LAND))),
        ("hostile", Some(&hostile_script)),
        ("gated", Some(&script(GIT_TWICE))),
    ]);
    sb.write(
        &sb.home.join("hitl-policy-gate.json"),
        r#"{"default_action":"allow","rules":[{"tools":"local_shell","tool":"local_shell","action":"approve"}]}"#,
    );
    let web = Web::start(&sb, &[]);
    let browser = Browser::phone(360, 640);

    // Pairing: the link `web pair` prints, opened once; the code leaves the address.
    let pair = sb.run(&["web", "pair", "--name", "phone"]).ok();
    browser.go(&pairing_link(&pair.stdout));
    browser.wait_for(30, "the paired main page", "main#live");
    assert_eq!(browser.url(), web.url("/"));
    let devices: Value =
        serde_json::from_str(&sb.run(&["web", "devices", "--json"]).ok().stdout).unwrap();
    assert_eq!(devices["devices"][0]["name"], "phone", "{devices}");
    // From here on the page is never reloaded: whatever changes arrives on its stream.
    browser.eval("window.mbMark = 'kept'; return null;", vec![]);

    // A question appears without a reload.
    let fired = sb.fire_in_background("stub", "rename the env var", &[]);
    let (question, mission) = new_card(&browser, &[]);
    assert_eq!(sb.pending_ask_ids(), vec![question.clone()]);
    let shown = browser.text(&browser.find(&card(&question)).unwrap());
    assert!(shown.contains("Rename the env var too?"), "{shown}");

    // A gated call beside it, for the picture: its tool, command and rule.
    let other = sb.record_missions("tidy the release notes", 1);
    Asks::new(sb.store())
        .raise(NewAsk {
            tools_name: "shell".into(),
            tool_name: "run".into(),
            args_summary: "git push origin release/1.4".into(),
            envelope_name: "default".into(),
            matched_rule: Some(3),
            agent_name: "stub".into(),
            mission_id: Some(other[0].clone()),
            ..Default::default()
        })
        .unwrap();
    let (gated, _) = new_card(&browser, std::slice::from_ref(&question));
    let png = browser.screenshot();
    assert_eq!(png_size(&png), (720, 1280), "a 360x640 screen at 2x");
    std::fs::write(harness::target_dir().join("web-phone.png"), &png).unwrap();
    if std::env::var_os("MISSIONBOARD_WRITE_ASSETS").is_some() {
        let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
        std::fs::write(assets.join("web-phone.png"), &png).unwrap();
    }

    // Answered on the page: the card goes, the mission lands, once.
    let answer_box: Element = browser
        .find(&format!("{} textarea", card(&question)))
        .expect("the question's answer box");
    browser.type_into(&answer_box, "yes, from the phone");
    browser.click(
        &browser
            .find(&format!("{} button[value=answer]", card(&question)))
            .unwrap(),
    );
    wait_gone(&browser, &question, "the answered card to go");
    wait_section(&browser, &mission, "landed");
    let run = fired.join();
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout
            .contains("  [result] renamed: yes, from the phone\n"),
        "{run:#?}"
    );
    let show: Value =
        serde_json::from_str(&sb.run(&["mission", "show", &mission, "--json"]).ok().stdout)
            .unwrap();
    assert_eq!(show["asks"][0]["answeredSurface"], "web");
    assert_eq!(show["asks"][0]["answeredDevice"], "phone");

    // Answered first in the CLI: the card goes from the open page.
    let fired = sb.fire_in_background("stub", "answered elsewhere", &[]);
    let (elsewhere, mission) = new_card(&browser, &[question.clone(), gated.clone()]);
    sb.run(&[
        "approvals",
        "respond",
        &elsewhere,
        "--answer",
        "from the cli",
    ])
    .ok();
    wait_gone(&browser, &elsewhere, "the card answered in the CLI to go");
    wait_section(&browser, &mission, "landed");
    assert_eq!(fired.join().code, 0);

    // Allow always (this mission), behind its second step: the first tap opens
    // what it would allow, the second confirms it. The agent's later call of the
    // same kind runs without a card; the agent is answered allow-once each time.
    let fired = harness::Background::spawn(sb.command(&[
        "mission",
        "fire",
        "gated",
        "push the release",
        "--wait",
        "--policy",
        "gate",
    ]));
    let (always, mission) = new_card(
        &browser,
        &[question.clone(), gated.clone(), elsewhere.clone()],
    );
    let confirm = format!("{} button[value=always]", card(&always));
    let shown = |css: &str| {
        browser.eval(
            "return document.querySelector(arguments[0]).checkVisibility();",
            vec![json!(css)],
        )
    };
    assert_eq!(
        shown(&confirm),
        json!(false),
        "the confirmation waits behind its step"
    );
    browser.click(
        &browser
            .find(&format!("{} details.always summary", card(&always)))
            .expect("the allow-always step"),
    );
    assert_eq!(shown(&confirm), json!(true), "the step opened");
    let said = browser.text(
        &browser
            .find(&format!("{} details.always", card(&always)))
            .unwrap(),
    );
    assert!(
        said.contains("running git, asked by rule 0 of envelope \"gate\""),
        "{said}"
    );
    browser.click(&browser.find(&confirm).unwrap());
    wait_gone(&browser, &always, "the card allowed always to go");
    wait_section(&browser, &mission, "landed");
    let run = fired.join();
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout
            .contains("  [progress] permission 1/1 for git status: allowed\n"),
        "{run:#?}"
    );
    let show: Value =
        serde_json::from_str(&sb.run(&["mission", "show", &mission, "--json"]).ok().stdout)
            .unwrap();
    assert_eq!(
        show["asks"].as_array().unwrap().len(),
        1,
        "asked once: {show:#}"
    );
    assert_eq!(show["allowances"][0]["uses"], 1, "{show:#}");
    assert_eq!(show["allowances"][0]["grantedDevice"], "phone");
    assert_eq!(
        show["allowances"][0]["state"], "ended",
        "it ended with the mission"
    );
    assert_inert(&browser, "/");

    // Hostile agent text, in an intent and in a question: shown as text, inert.
    let fired = sb.fire_in_background("hostile", HOSTILE, &[]);
    let (hostile, mission) = new_card(&browser, &[question, gated.clone(), elsewhere, always]);
    let shown = browser.text(&browser.find(&card(&hostile)).unwrap());
    assert!(
        shown.contains("<script>alert(1)</script> <img src=x onerror=alert(2)>"),
        "{shown}"
    );
    assert!(shown.contains("[tap](javascript:alert(4))"), "{shown}");
    assert!(
        !shown.contains('\u{202e}'),
        "a bidi override reached the page"
    );
    let listed = browser.text(&browser.find("#missions").unwrap());
    assert!(
        listed.contains("<a href=\"javascript:alert(3)\">tap here</a>"),
        "{listed}"
    );
    assert_inert(&browser, "/");
    // Tapping the text a link was written in goes nowhere.
    browser.click(
        &browser
            .find(&format!("{} .question", card(&hostile)))
            .unwrap(),
    );
    assert_inert(&browser, "/");

    // The mission's own page shows the same text, as inert.
    browser.go(&web.url(&format!("/missions/{mission}")));
    browser.wait_for(30, "the mission page", "main h1");
    browser.eval("window.mbMark = 'kept'; return null;", vec![]);
    let detail = browser.text(&browser.find("main").unwrap());
    assert!(detail.contains("<script>alert(1)</script>"), "{detail}");
    assert_inert(&browser, &format!("/missions/{mission}"));

    sb.run(&["approvals", "respond", &hostile, "--answer", "no"])
        .ok();
    assert_eq!(fired.join().code, 0);
    sb.run(&["approvals", "respond", &gated, "--deny"]).ok();
}
