//! Pairing, device credentials, revocation, the pairing lockout.

use crate::harness::Sandbox;
use crate::server::{Web, cookie_value, pairing_code, pairing_link};

#[test]
fn a_pairing_link_carries_its_code_in_the_fragment_and_pairs_one_device_once() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let out = sb.run(&["web", "pair", "--name", "phone"]).ok();
    let link = pairing_link(&out.stdout);
    // The link names the running server's page, the code after '#' only.
    let (page, code) = link.split_once('#').unwrap();
    assert_eq!(page, web.url("/pair"));
    assert_eq!(code.len(), 64, "256 bits, hex");
    assert!(
        out.stdout.contains('▀') || out.stdout.contains('▄'),
        "a QR code is drawn:\n{}",
        out.stdout
    );

    // The page itself holds no code: its script reads the fragment.
    let pair_page = web.get("/pair", None);
    assert_eq!(pair_page.status(), 200);
    assert!(!pair_page.text().unwrap().contains(code));

    let paired = web.post("/api/pair", None, &[("code", code)]);
    assert_eq!(paired.status(), 200);
    let set = paired.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set.ends_with("; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000"),
        "{set}"
    );
    let credential = cookie_value(&paired).unwrap();
    assert_eq!(credential.len(), 64);
    assert!(
        !paired.text().unwrap().contains(&credential),
        "only the cookie carries it"
    );

    // The credential opens the API; the code is spent.
    assert_eq!(web.get("/api/state", Some(&credential)).status(), 200);
    let replay = web.post("/api/pair", None, &[("code", code)]);
    assert_eq!(replay.status(), 403);
    assert!(cookie_value(&replay).is_none());

    // Listed, without any secret; the store keeps only a hash.
    let devices = sb.run(&["web", "devices", "--json"]).ok();
    let v: serde_json::Value = serde_json::from_str(&devices.stdout).unwrap();
    assert_eq!(v["devices"][0]["name"], "phone");
    assert!(!devices.stdout.contains(&credential) && !devices.stdout.contains(code));
    let listed = sb.run(&["web", "devices"]).ok();
    assert!(listed.stdout.starts_with("NAME"), "{}", listed.stdout);
    assert!(!sb.log_text().contains(&credential) && !sb.log_text().contains(code));
}

#[test]
fn nothing_but_the_pairing_page_without_a_live_credential() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    let index = web.get("/", None);
    assert_eq!(index.status(), 401);
    assert!(index.text().unwrap().contains("missionboard web pair"));
    for path in ["/api/state", "/missions/x"] {
        assert_eq!(web.get(path, None).status(), 401, "{path}");
        assert_eq!(
            web.get(path, Some("0".repeat(64).as_str())).status(),
            401,
            "{path}"
        );
    }
    let events = web
        .client
        .get(web.url("/events"))
        .header("Origin", web.origin())
        .send()
        .unwrap();
    assert_eq!(events.status(), 401);

    let credential = web.pair(&sb, "phone");
    // Never from a query string.
    assert_eq!(
        web.get(&format!("/api/state?mb_device={credential}"), None)
            .status(),
        401
    );
    assert_eq!(web.get("/api/state", Some(&credential)).status(), 200);
    let revoked = sb.run(&["web", "revoke", "phone"]).ok();
    assert_eq!(
        revoked.stdout,
        "Device \"phone\" is revoked: its next request is refused. Pair it again with 'missionboard web pair --name phone'.\n"
    );
    assert_eq!(web.get("/api/state", Some(&credential)).status(), 401);
    assert_eq!(web.get("/", Some(&credential)).status(), 401);
    let again = sb.run(&["web", "revoke", "phone"]);
    assert_eq!(again.code, 1);
    assert_eq!(
        again.stderr,
        "Error: no paired device is named \"phone\" — 'missionboard web devices' lists them\n"
    );
}

#[test]
fn five_bad_codes_lock_the_peer_out_of_pairing() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    for _ in 0..5 {
        let bad = web.post("/api/pair", None, &[("code", &"ab".repeat(32))]);
        assert_eq!(bad.status(), 403);
    }
    // Even a good code is refused now.
    let good = pairing_code(&sb, "phone");
    let locked = web.post("/api/pair", None, &[("code", &good)]);
    assert_eq!(locked.status(), 429);
    let v: serde_json::Value = locked.json().unwrap();
    assert_eq!(
        v["error"],
        "too many bad pairing codes from this address: pairing is locked for 15 minutes"
    );
}

#[test]
fn a_name_already_paired_is_refused_and_the_pairing_needs_a_good_name() {
    let sb = Sandbox::new();
    let web = Web::start(&sb, &[]);
    web.pair(&sb, "phone");
    let again = sb.run(&["web", "pair", "--name", "phone"]);
    assert_eq!(again.code, 1);
    assert!(
        again
            .stderr
            .starts_with("Error: a device named \"phone\" is already paired"),
        "{}",
        again.stderr
    );
    let bad = sb.run(&["web", "pair", "--name", "my phone"]);
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr.contains("1 to 40 letters, digits"),
        "{}",
        bad.stderr
    );
}
