//! Exposure, Host, Origin, CSRF, the security headers, hostile agent text.

use missionboard::asks::{Asks, NewAsk, QUESTION_TOOL, QUESTION_TOOLS};

use crate::harness::Sandbox;
use crate::server::Web;

#[test]
fn a_non_loopback_bind_is_refused_without_tls_or_a_proxy() {
    let sb = Sandbox::new();
    let open = sb.run(&["web", "--listen", "0.0.0.0:0"]);
    assert_eq!(open.code, 1);
    assert!(
        open.stderr.starts_with(
            "Error: refusing to serve on 0.0.0.0:0, which is not a loopback address, without TLS"
        ),
        "{}",
        open.stderr
    );
    let proxy = sb.run(&["web", "--listen", "0.0.0.0:0", "--behind-proxy"]);
    assert_eq!(proxy.code, 2, "{}", proxy.stderr);
    assert!(proxy.stderr.contains("--allowed-host"), "{}", proxy.stderr);
    let half = sb.run(&["web", "--tls-cert", "x.pem"]);
    assert_eq!(half.code, 2, "{}", half.stderr);
}

#[test]
fn a_rebinding_host_a_foreign_origin_and_a_missing_csrf_token_are_refused() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let cookie = format!("mb_device={credential}");

    // DNS rebinding: the page of another name, resolved to us.
    let rebound = web
        .client
        .get(web.url("/"))
        .header("Host", "evil.example")
        .header("Cookie", &cookie)
        .send()
        .unwrap();
    assert_eq!(rebound.status(), 421);
    let localhost = web
        .client
        .get(web.url("/"))
        .header(
            "Host",
            format!("localhost:{}", web.addr.rsplit(':').next().unwrap()),
        )
        .header("Cookie", &cookie)
        .send()
        .unwrap();
    assert_eq!(localhost.status(), 200);

    let csrf = web.csrf(&credential);
    let form = [("csrf", csrf.as_str()), ("ask", "x"), ("verdict", "deny")];
    let post = |origin: Option<&str>, site: Option<&str>| {
        let mut req = web
            .client
            .post(web.url("/api/answer"))
            .header("Cookie", &cookie)
            .form(&form);
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        if let Some(s) = site {
            req = req.header("Sec-Fetch-Site", s);
        }
        req.send().unwrap().status()
    };
    assert_eq!(post(None, None), 403, "no origin at all");
    assert_eq!(post(Some("http://evil.example"), None), 403);
    assert_eq!(post(Some(&web.origin()), Some("cross-site")), 403);
    // Our origin passes the guard (and the ask does not exist).
    assert_eq!(post(Some(&web.origin()), None), 404);
    assert_eq!(post(None, Some("same-origin")), 404);

    let no_token = web.post(
        "/api/answer",
        Some(&credential),
        &[("ask", "x"), ("verdict", "deny")],
    );
    assert_eq!(no_token.status(), 403);
    let wrong = web.post(
        "/api/answer",
        Some(&credential),
        &[("csrf", &"0".repeat(32)), ("ask", "x"), ("verdict", "deny")],
    );
    assert_eq!(wrong.status(), 403);

    // The event stream too wants our origin.
    let events = web
        .client
        .get(web.url("/events"))
        .header("Cookie", &cookie)
        .send()
        .unwrap();
    assert_eq!(events.status(), 403);
}

#[test]
fn every_response_carries_the_security_headers() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    for (path, cred) in [
        ("/", Some(credential.as_str())),
        ("/", None),
        ("/app.js", None),
        ("/api/state", None),
    ] {
        let r = web.get(path, cred);
        let h = r.headers();
        assert_eq!(
            h["content-security-policy"],
            "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
            "{path}"
        );
        assert_eq!(h["x-frame-options"], "DENY");
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h["referrer-policy"], "no-referrer");
        assert_eq!(h["cache-control"], "no-store");
    }
    // No inline script or style anywhere in the page; its weight stays small.
    let page = web.get("/", Some(&credential)).text().unwrap();
    assert!(!page.contains("<script>") && !page.contains("<style") && !page.contains(" style="));
    let js = web.get("/app.js", None).bytes().unwrap().len();
    let css = web.get("/app.css", None).bytes().unwrap().len();
    assert!(
        page.len() + js + css <= 100_000,
        "{} bytes",
        page.len() + js + css
    );
}

const HOSTILE: &str = "<script>alert(1)</script> <img src=x onerror=alert(2)> <a href=\"javascript:alert(3)\">go</a> \u{202e}evil\u{202c} \u{1b}[2J";

#[test]
fn hostile_agent_text_is_inert_on_the_page() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let credential = web.pair(&sb, "phone");
    let ids = sb.record_missions(HOSTILE, 1);
    let asks = Asks::new(sb.store());
    let question = asks
        .raise(NewAsk {
            id: "<b>id\"onerror=x".into(),
            tools_name: QUESTION_TOOLS.into(),
            tool_name: QUESTION_TOOL.into(),
            args_summary: HOSTILE.into(),
            diff: Some(HOSTILE.into()),
            agent_name: "<i>agent".into(),
            mission_id: Some(ids[0].clone()),
            ..Default::default()
        })
        .unwrap();
    // What the oracle said about it is agent text too.
    missionboard::asks::trace::Trace::new(sb.store(), false).emit(&ids[0], &question.id, HOSTILE);
    asks.raise(NewAsk {
        tools_name: "shell".into(),
        tool_name: "<x>run".into(),
        args_summary: HOSTILE.into(),
        diff: Some(HOSTILE.into()),
        mission_id: Some(ids[0].clone()),
        ..Default::default()
    })
    .unwrap();
    for path in ["/".to_string(), format!("/missions/{}", ids[0])] {
        let page = web.get(&path, Some(&credential)).text().unwrap();
        for raw in [
            "<script>alert",
            "<img",
            "<a href=\"javascript",
            "<b>",
            "<i>",
            "<x>",
            "\"onerror",
            "\u{202e}",
            "\u{1b}",
        ] {
            assert!(
                !page.contains(raw),
                "{path}: {raw:?} reached the page:\n{page}"
            );
        }
        assert!(
            page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{path}"
        );
        assert!(!page.contains("href=\"javascript"), "{path}");
        assert!(
            page.contains(
                "<details class=\"trace\"><summary>Oracle trace</summary><ol><li>&lt;script&gt;"
            ),
            "{path}: the oracle's trace is shown, inert:\n{page}"
        );
    }
}

/// A CA and a certificate for `localhost` it signed, as PEM files in `dir`: the
/// CA's, the server's and its key's paths.
fn certificates(dir: &std::path::Path) -> (String, String, String) {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "missionboard web test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    (
        write("ca.pem", &ca.pem()),
        write("cert.pem", &cert.pem()),
        write("key.pem", &key.serialize_pem()),
    )
}

#[test]
fn under_tls_the_page_is_served_encrypted_and_the_cookie_is_secure() {
    let sb = Sandbox::new();
    let (ca, cert, key) = certificates(&sb.cwd);
    let mut web = Web::start(&sb, &["--tls-cert", &cert, "--tls-key", &key]);
    assert_eq!(web.scheme, "https");
    // Plain HTTP to the TLS port gets nothing.
    assert!(
        crate::server::client()
            .get(format!("http://{}/", web.addr))
            .send()
            .is_err()
    );
    let port = web.addr.rsplit(':').next().unwrap().to_string();
    web.client = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tls_certs_only([reqwest::Certificate::from_pem(&std::fs::read(&ca).unwrap()).unwrap()])
        .resolve("localhost", web.addr.parse().unwrap())
        .build()
        .unwrap();
    web.addr = format!("localhost:{port}");

    let code = crate::server::pairing_code(&sb, "phone");
    let paired = web.post("/api/pair", None, &[("code", &code)]);
    assert_eq!(paired.status(), 200);
    let set = paired.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set.ends_with("; Max-Age=2592000; Secure"), "{set}");
    let credential = crate::server::cookie_value(&paired).unwrap();
    assert_eq!(web.get("/", Some(&credential)).status(), 200);
    assert_eq!(web.get("/", None).status(), 401);
}

#[test]
fn behind_a_proxy_the_named_host_is_served_and_the_pairing_link_names_it() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &["--behind-proxy", "--allowed-host", "board.example"]);
    let get = |host: &str| {
        web.client
            .get(web.url("/"))
            .header("Host", host)
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(get("board.example"), 401, "served (to an unpaired visitor)");
    assert_eq!(get("evil.example"), 421);

    let out = sb.run(&["web", "pair", "--name", "phone"]).ok();
    let link = crate::server::pairing_link(&out.stdout);
    assert!(link.starts_with("https://board.example/pair#"), "{link}");
    // The proxy may hand the request on with its own Host: the page's origin is
    // still the name it serves.
    let code = link.split_once('#').unwrap().1;
    let paired = web
        .client
        .post(web.url("/api/pair"))
        .header("Origin", "https://board.example")
        .form(&[("code", code)])
        .send()
        .unwrap();
    assert_eq!(paired.status(), 200);
    let set = paired.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set.ends_with("; Secure"), "{set}");
    let foreign = web
        .client
        .post(web.url("/api/pair"))
        .header("Origin", "https://evil.example")
        .form(&[("code", code)])
        .send()
        .unwrap();
    assert_eq!(foreign.status(), 403);
}
