//! Hygiene: hostile environments, private files, the secret scrub, result refs,
//! config validation, the beta gate's words, and what doctor checks.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use crate::harness::{Sandbox, script, wait_for};

const LAND: &str = r#"{"report":{"kind":"result","summary":"work done"}},{"finish":"landed"}"#;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn a_non_utf8_environment_is_no_panic_and_a_non_utf8_home_is_a_clear_error() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    let latin1 = OsStr::from_bytes(b"\xe9t\xe9");
    let mut fire = sb.command(&[
        "mission", "fire", "stub", "land", "--wait", "--policy", "default",
    ]);
    fire.env("MB_LATIN1", latin1);
    let fired = sb.run_with(fire);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let mut list = sb.command(&["mission", "list"]);
    list.env("MB_LATIN1", latin1);
    sb.run_with(list).ok();

    let mut bad_home = sb.command(&["mission", "list"]);
    bad_home.env("MISSIONBOARD_HOME", OsStr::from_bytes(b"/tmp/mb-\xff-home"));
    let run = sb.run_with(bad_home);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        run.stderr,
        "Error: the missionboard home /tmp/mb-\u{fffd}-home is not valid UTF-8 — set MISSIONBOARD_HOME to a directory whose path is UTF-8\n"
    );
    assert!(!std::path::Path::new(OsStr::from_bytes(b"/tmp/mb-\xff-home")).exists());
}

#[test]
fn the_home_its_store_and_its_logs_are_private_and_doctor_warns_when_they_are_not() {
    // The file store's modes (a shared database's privacy is its server's).
    let sb = Sandbox::on_file();
    // Declared in the workspace, so the home is missionboard's own to create.
    let ws = sb.workspace();
    let script_path = ws.join("ask.json");
    sb.write(
        &script_path,
        &script(r#"{"ask":{"summary":"Which region?","then":{"finish":"landed"}}}"#),
    );
    sb.write(
        &ws.join("agents.toml"),
        &format!(
            "[agents.stub]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\n",
            script_path.display().to_string()
        ),
    );
    assert!(!sb.home.exists());
    // A host holds the store open meanwhile, so its -wal and -shm files exist.
    let bg = sb.fire_in_background("stub", "ask", &[]);
    let ask = wait_for(20, "the question", || sb.pending_ask_ids().first().cloned());
    let db = sb.db();
    let logs = sb.home.join("logs");
    assert_eq!(mode(&sb.home), 0o700);
    assert_eq!(mode(&db), 0o600);
    for suffix in ["-wal", "-shm"] {
        assert_eq!(
            mode(&sb.home.join(format!("board.db{suffix}"))),
            0o600,
            "{suffix}"
        );
    }
    assert_eq!(mode(&logs), 0o700);
    let log_files: Vec<_> = std::fs::read_dir(&logs).unwrap().flatten().collect();
    assert!(!log_files.is_empty());
    for f in &log_files {
        assert_eq!(mode(&f.path()), 0o600, "{}", f.path().display());
    }
    sb.run(&["approvals", "respond", &ask, "--answer", "eu"])
        .ok();
    assert_eq!(bg.join().code, 0);

    let doctor = sb.run(&["doctor"]);
    assert!(!doctor.stdout.contains("Warning:"), "{doctor:#?}");
    std::fs::set_permissions(&sb.home, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let doctor = sb.run(&["doctor"]);
    let home = sb.home.display();
    let db = db.display();
    assert!(
        doctor.stdout.contains(&format!(
            "\nWarning:   {home} is mode 755, readable beyond its owner — chmod 700 {home}\nWarning:   {db} is mode 644, readable beyond its owner — chmod 600 {db}\n"
        )),
        "{doctor:#?}"
    );
}

#[test]
fn secret_looking_variables_are_scrubbed_unless_the_declaration_names_them() {
    let sb = Sandbox::new();
    let said = "pass=[{{env:PGPASSFILE}}] passwd=[{{env:MYSQL_PASSWD}}] apikey=[{{env:STRIPE_APIKEY}}] auth=[{{env:X_AUTH}}] cred=[{{env:AWS_CREDENTIAL_FILE}}] url=[{{env:MB_DB_URL}}] ssh=[{{env:SSH_AUTH_SOCK}}] gpg=[{{env:GPG_AGENT_INFO}}] declared=[{{env:MY_PASSWORD}}] plain=[{{env:MB_PLAIN}}] web=[{{env:MB_DOCS_URL}}]";
    let script_path = sb.home.join("script.json");
    sb.write(
        &script_path,
        &script(&format!(
            r#"{{"report":{{"kind":"finding","summary":"{said}"}}}},{{"finish":"landed"}}"#
        )),
    );
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.stub]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\nenv = {{ MY_PASSWORD = \"declared\" }}\n",
            script_path.display().to_string()
        ),
    );
    let mut fire = sb.command(&[
        "mission", "fire", "stub", "env", "--wait", "--policy", "default",
    ]);
    for (name, value) in [
        ("PGPASSFILE", "/home/me/.pgpass"),
        ("MYSQL_PASSWD", "hunter2"),
        ("STRIPE_APIKEY", "sk_live"),
        ("X_AUTH", "basic"),
        ("AWS_CREDENTIAL_FILE", "/home/me/.aws"),
        ("MB_DB_URL", "postgres://me:hunter2@db.example/app"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-agent"),
        ("GPG_AGENT_INFO", "/run/gpg"),
        ("MY_PASSWORD", "host value"),
        ("MB_PLAIN", "plain"),
        ("MB_DOCS_URL", "https://docs.example/a@b"),
    ] {
        fire.env(name, value);
    }
    let fired = sb.run_with(fire);
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains(
            "  [finding] pass=[] passwd=[] apikey=[] auth=[] cred=[] url=[] ssh=[] gpg=[] declared=[declared] plain=[plain] web=[https://docs.example/a@b]\n"
        ),
        "{fired:#?}"
    );
}

#[test]
fn result_refs_must_be_files_inside_the_working_directory() {
    let sb = Sandbox::new();
    std::fs::write(sb.cwd.join("inside.md"), "x").unwrap();
    let outside = sb.cwd.parent().unwrap().join("outside.md");
    std::fs::write(&outside, "x").unwrap();
    std::os::unix::fs::symlink(&outside, sb.cwd.join("link.md")).unwrap();
    sb.declare_stubs(&[
        (
            "good",
            Some(&script(
                r#"{"report":{"kind":"result","summary":"done","refs":["inside.md","https://example.com/pr/1"]}},{"finish":"landed"}"#,
            )),
        ),
        (
            "bad",
            Some(&script(
                r#"{"report":{"kind":"result","summary":"done","refs":["inside.md","../outside.md","link.md","/etc/hostname","inside.md\u0000.txt"]}},{"finish":"landed"}"#,
            )),
        ),
    ]);
    let good = sb.fire("good", "land", &[]).ok();
    assert!(
        good.stdout
            .contains("  [result] done\n        refs: inside.md, https://example.com/pr/1\n"),
        "{good:#?}"
    );
    let id = sb.newest_mission().unwrap();
    let reports = sb.run(&["mission", "reports", &id]).ok();
    assert!(
        reports.stdout.contains(
            "Detail:\nunverified: \"https://example.com/pr/1\" — a URL is not checked; only files inside the mission's working directory are.\n"
        ),
        "{reports:#?}"
    );

    let bad = sb.fire("bad", "land", &[]).ok();
    assert!(
        bad.stdout.contains(
            "  [progress] done\n        refs: inside.md, ../outside.md, link.md, /etc/hostname, inside.md.txt\n        ⚠ claimed artifacts not found: \"../outside.md\", \"link.md\", \"/etc/hostname\", \"inside.md\\0.txt\""
        ),
        "{bad:#?}"
    );
}

#[test]
fn model_base_url_takes_only_http_https_or_scripted() {
    let sb = Sandbox::new();
    for bad in [
        "ftp://models.example/v1",
        "file:///etc/passwd",
        "http://",
        "localhost:11434",
        "scripted:",
    ] {
        let run = sb.run(&["config", "set", "model-base-url", bad]);
        assert_eq!(run.code, 1, "{bad}: {run:#?}");
        assert_eq!(
            run.stderr,
            format!(
                "Error: model-base-url must be an http:// or https:// URL, or scripted:<dialog.json> (got {bad:?})\n"
            )
        );
    }
    for good in [
        "http://127.0.0.1:8080/v1",
        "https://api.openai.com/v1",
        "scripted:/tmp/dialog.json",
    ] {
        let run = sb.run(&["config", "set", "model-base-url", good]).ok();
        assert_eq!(run.stdout, format!("model-base-url = {good}\n"));
    }
}

#[test]
fn beta_flags_without_the_beta_say_how_to_opt_in() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("stub", Some(&script(LAND)))]);
    let fired = sb.fire("stub", "land", &["--oracle"]);
    assert_eq!(fired.code, 2, "{fired:#?}");
    assert!(
        fired.stderr.contains(
            "\n  tip: --oracle requires opt-in-beta (missionboard config set opt-in-beta true)\n"
        ),
        "{fired:#?}"
    );
    let respond = sb.run(&[
        "approvals",
        "respond",
        "abcd",
        "--answer",
        "x",
        "--as-agent",
        "bot",
    ]);
    assert_eq!(respond.code, 2, "{respond:#?}");
    assert!(
        respond.stderr.contains(
            "\n  tip: --as-agent requires opt-in-beta (missionboard config set opt-in-beta true)\n"
        ),
        "{respond:#?}"
    );
    assert_eq!(sb.newest_mission(), None, "nothing was fired");
}

#[test]
fn doctor_resolves_agent_commands_probes_the_model_and_lists_hostless_missions() {
    let sb = Sandbox::new();
    let script_path = sb.home.join("mute.json");
    sb.write(
        &script_path,
        r#"{"name":"mute","turns":[{"steps":["mute"]},{"steps":["mute"]}]}"#,
    );
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.stub]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\n\n[agents.ghost]\ncommand = \"no-such-agent-binary\"\n\n[agents.via-env]\ncommand = \"env\"\nargs = [{:?}, \"stub-agent\"]\n",
            script_path.display().to_string(),
            crate::harness::BIN
        ),
    );
    // A mute unit's fire returns, and its host is gone with it; the mission stays open.
    assert_eq!(sb.fire("stub", "say nothing", &[]).code, 1);
    let id = sb.newest_mission().unwrap();

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1");
    sb.run(&["config", "set", "model-base-url", &url]).ok();
    let doctor = sb.run(&["doctor"]);
    assert_eq!(doctor.code, 1, "{doctor:#?}");
    assert_eq!(
        doctor.lines()[0],
        "Ready: no — install the missing agent commands (see below)"
    );
    let lines = doctor.lines();
    assert!(
        lines.contains(&"Agent:     ghost: command \"no-such-agent-binary\" is not on PATH — install it, or fix its declaration in agents.toml"),
        "{doctor:#?}"
    );
    // A command found on PATH gets a dry handshake; missionboard's own need none.
    assert!(
        lines.contains(&"Agent:     via-env: ready — missionboard-stub 0.1.0 answered initialize and session/new"),
        "{doctor:#?}"
    );
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("Agent: ")).count(),
        2,
        "{doctor:#?}"
    );
    assert!(
        lines.contains(&format!("Endpoint:  {url} accepts connections").as_str()),
        "{doctor:#?}"
    );
    let hostless = lines
        .iter()
        .find(|l| l.starts_with("Hostless:"))
        .unwrap_or_else(|| panic!("{doctor:#?}"));
    assert!(
        hostless.starts_with(&format!("Hostless:  mission {id} (stub, fired ")),
        "{hostless}"
    );
    assert!(
        hostless.ends_with(&format!(
            "is open but its host process is gone, so no unit works it — an answer to a pending ask resumes it; 'missionboard mission stop {id}' abandons it"
        )),
        "{hostless}"
    );

    drop(listener);
    let doctor = sb.run(&["doctor"]);
    assert!(
        doctor
            .stdout
            .contains(&format!("Endpoint:  {url} is unreachable (")),
        "{doctor:#?}"
    );
    assert!(
        doctor.lines()[0].ends_with("start the model server, or set model-base-url (see above)"),
        "{doctor:#?}"
    );
}
