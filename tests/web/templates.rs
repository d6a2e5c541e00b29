//! Firing a template from the page: a paired device sees each template with its
//! parameters and fires one through `POST /api/fire-template`, which refuses as
//! `mission fire --template` does; the fire is read back through `mission show`.

use crate::harness::{Sandbox, script};
use crate::server::Web;

const LAND: &str = r#"{"report":{"kind":"result","summary":"done"}},{"finish":"landed"}"#;

fn with_template(sb: &Sandbox) {
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    sb.write(
        &sb.workspace().join("templates/triage.toml"),
        r#"agent = "stub"
envelope = "default"
intent = "Triage the {{label}} issues of {{repo}}"
[params.repo]
description = "owner/name of the repository"
[params.label]
description = "the issue label"
default = "bug"
"#,
    );
}

#[test]
fn a_paired_device_fires_a_template_with_its_parameters_and_is_refused_as_the_cli_is() {
    let sb = Sandbox::new();
    with_template(&sb);
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");

    // The page lists the template, each parameter named with what it is and its
    // default.
    let page = web.get("/", Some(&credential)).text().unwrap();
    assert!(page.contains("<h2>Fire a template</h2>"), "{page}");
    assert!(page.contains("<input type=\"hidden\" name=\"template\" value=\"triage\">"));
    assert!(
        page.contains("<label>label <input name=\"p.label\" placeholder=\"bug\"></label><p class=\"meta\">the issue label (default: bug)</p>"),
        "{page}"
    );
    assert!(
        page.contains("<label>repo <input name=\"p.repo\"></label><p class=\"meta\">owner/name of the repository (required)</p>"),
        "{page}"
    );

    let csrf = web.csrf(&credential);
    let fire = |fields: &[(&str, &str)]| {
        let mut form = vec![("csrf", csrf.as_str()), ("template", "triage")];
        form.extend_from_slice(fields);
        web.post("/api/fire-template", Some(&credential), &form)
    };
    let refused = |fields: &[(&str, &str)]| {
        let r = fire(fields);
        let status = r.status().as_u16();
        let v: serde_json::Value = r.json().unwrap();
        (status, v["error"].as_str().unwrap_or_default().to_string())
    };
    // An empty field gives nothing: the required one is missing.
    assert_eq!(
        refused(&[("p.repo", ""), ("p.label", "")]),
        (
            422,
            "template \"triage\": missing template parameter: give repo=… (owner/name of the repository)".into()
        )
    );
    assert_eq!(
        refused(&[("p.repo", "acme/api"), ("p.team", "x")]),
        (
            422,
            "template \"triage\": unknown template parameter \"team\": it takes label, repo".into()
        )
    );
    assert_eq!(
        refused(&[("p.repo", "acme/api\nrm -rf /")]),
        (
            422,
            "template \"triage\": template parameter \"repo\" must be a single line of text (no line breaks or control characters)".into()
        )
    );
    assert_eq!(
        refused(&[("p.repo", "a"), ("p.repo", "b")]),
        (
            422,
            "template \"triage\": template parameter \"repo\" is given twice".into()
        )
    );
    let (status, unknown) = {
        let form = [
            ("csrf", csrf.as_str()),
            ("template", "nosuch"),
            ("p.repo", "a"),
        ];
        let r = web.post("/api/fire-template", Some(&credential), &form);
        let status = r.status().as_u16();
        let v: serde_json::Value = r.json().unwrap();
        (status, v["error"].as_str().unwrap().to_string())
    };
    assert_eq!(status, 422);
    assert!(
        unknown.starts_with("unknown template \"nosuch\": no nosuch.toml in ")
            && unknown.ends_with(". Available: triage"),
        "{unknown}"
    );
    assert!(sb.mission_ids().is_empty(), "nothing refused fired");

    // A good fire is queued for a `missionboard host`, its intent made of the
    // parameters (the default where the field was left empty).
    let good = fire(&[("p.repo", "acme/api"), ("p.label", "")]);
    let status = good.status();
    let v: serde_json::Value = good.json().unwrap();
    assert_eq!(status, 200, "{v}");
    let id = v["mission"].as_str().unwrap().to_string();
    assert_eq!(
        v["message"],
        format!(
            "Mission {} queued at position 1: Triage the bug issues of acme/api",
            &id[..8]
        )
    );
    assert_eq!(sb.mission_ids(), vec![id.clone()]);
    let show = sb.run(&["mission", "show", &id, "--json"]).ok();
    let m: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(m["status"], "queued", "{m:#}");
    assert_eq!(m["intent"], "Triage the bug issues of acme/api", "{m:#}");
    assert_eq!(m["agentName"], "stub", "{m:#}");
}

#[test]
fn an_unpaired_device_a_missing_csrf_token_and_a_foreign_origin_fire_nothing() {
    let sb = Sandbox::new();
    with_template(&sb);
    let web = Web::start(&sb, &[]);
    let form = [("template", "triage"), ("p.repo", "acme/api")];

    // Unpaired: not even the form is shown.
    let page = web.get("/", None);
    assert_eq!(page.status(), 401);
    assert!(!page.text().unwrap().contains("Fire a template"));
    assert_eq!(web.post("/api/fire-template", None, &form).status(), 401);
    let forged = web.post("/api/fire-template", Some(&"0".repeat(43)), &form);
    assert_eq!(forged.status(), 401);

    let credential = web.pair(&sb, "phone");
    let no_token = web.post("/api/fire-template", Some(&credential), &form);
    assert_eq!(no_token.status(), 403);
    let v: serde_json::Value = no_token.json().unwrap();
    assert_eq!(
        v["error"],
        "the form's CSRF token is missing or stale: reload the page"
    );
    let csrf = web.csrf(&credential);
    let mut with_token = vec![("csrf", csrf.as_str())];
    with_token.extend_from_slice(&form);
    let foreign = web
        .client
        .post(web.url("/api/fire-template"))
        .header("Origin", "http://evil.example")
        .header("Cookie", format!("mb_device={credential}"))
        .form(&with_token)
        .send()
        .unwrap();
    assert_eq!(foreign.status(), 403);
    assert!(sb.mission_ids().is_empty(), "nothing refused fired");

    // A device revoked is refused at once.
    sb.run(&["web", "revoke", "phone"]).ok();
    let revoked = web.post("/api/fire-template", Some(&credential), &with_token);
    assert_eq!(revoked.status(), 401);
    assert!(sb.mission_ids().is_empty());
}
