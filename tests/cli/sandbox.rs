//! Issue J: confinement — the envelope's sandbox held by the kernel (Landlock) on the
//! unit's whole process tree, the missionboard home out of every unit's reach, and
//! mission sockets that refuse callers without their mission's token.

use std::path::Path;

use serde_json::{Value, json};

use crate::harness::{BIN, Run, Sandbox, wait_for};

fn script(steps: Vec<Value>) -> String {
    json!({"name": "probe", "turns": [{"steps": steps}]}).to_string()
}

fn write_step(path: &Path) -> Value {
    json!({"write": {"path": path.display().to_string(), "text": "x"}})
}

fn run_step(argv: &[&str]) -> Value {
    json!({"run": {"argv": argv}})
}

fn sh(line: &str) -> Value {
    run_step(&["sh", "-c", line])
}

fn fire(sb: &Sandbox, policy: &str, extra_env: &[(&str, &str)]) -> Run {
    let mut cmd = sb.command(&[
        "mission",
        "fire",
        "probe",
        "probe",
        "--wait",
        "--policy",
        policy,
        "--timeout",
        "60s",
    ]);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    sb.run_with(cmd)
}

/// The summaries and details of the newest mission's reports, oldest first.
fn reports(sb: &Sandbox) -> Vec<(String, String)> {
    sb.report_texts(&sb.newest_mission().expect("a mission"))
}

fn summaries(sb: &Sandbox) -> Vec<String> {
    reports(sb).into_iter().map(|(s, _)| s).collect()
}

#[test]
fn a_write_outside_the_workspace_is_refused_by_the_kernel_under_default_and_allowed_under_dev() {
    let sb = Sandbox::new();
    sb.require_landlock();
    let elsewhere = sb.home.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let outside = elsewhere.join("outside.txt");
    let inside = sb.cwd.join("inside.txt");
    sb.declare_stubs(&[(
        "probe",
        Some(&script(vec![
            write_step(&inside),
            write_step(&outside),
            json!({"finish": "landed"}),
        ])),
    )]);

    let fired = fire(&sb, "default", &[]).ok();
    assert!(
        fired.stdout.contains(
            "Sandbox: filesystem.write enforced (kernel) [{workspace}, {tmp}, ~/.cache]; filesystem.read not limited; network.connect not limited (Landlock ABI "
        ),
        "{fired:#?}"
    );
    assert_eq!(
        summaries(&sb),
        [
            format!("write {}: ok", inside.display()),
            format!("write {}: EACCES (os error 13)", outside.display()),
        ]
    );
    assert!(inside.exists());
    assert!(!outside.exists(), "the kernel refused the write");

    fire(&sb, "dev", &[]).ok();
    assert_eq!(
        summaries(&sb),
        [
            format!("write {}: ok", inside.display()),
            format!("write {}: ok", outside.display()),
        ]
    );
    assert!(outside.exists());
}

/// The `Grant:` lines of `mission show <newest>` that name `entry`.
fn grant_lines_of(sb: &Sandbox, entry: &str) -> Vec<String> {
    let id = sb.newest_mission().expect("a mission");
    let shown = sb.run(&["mission", "show", &id]).ok().stdout;
    shown
        .lines()
        .filter(|l| l.starts_with(&format!("Grant:     write {entry} ")))
        .map(String::from)
        .collect()
}

#[test]
fn a_write_entry_that_does_not_exist_is_shown_as_not_granted_and_the_kernel_agrees() {
    let sb = Sandbox::new();
    sb.require_landlock();
    let cache = sb.home.parent().unwrap().join(".cache");
    assert!(!cache.exists());
    // default names ~/.cache; with none there, nothing is granted: the unit cannot
    // make it, and every surface says so.
    sb.declare_stubs(&[(
        "probe",
        Some(&script(vec![
            write_step(&cache),
            json!({"finish": "landed"}),
        ])),
    )]);
    fire(&sb, "default", &[]).ok();
    assert_eq!(
        summaries(&sb),
        [format!("write {}: EACCES (os error 13)", cache.display())]
    );
    assert!(!cache.exists(), "the kernel refused it");
    let absent = format!(
        "Grant:     write ~/.cache = {}: not granted: does not exist (the envelope)",
        cache.display()
    );
    assert_eq!(
        grant_lines_of(&sb, "~/.cache"),
        std::slice::from_ref(&absent)
    );
    let doctor = sb.run(&["doctor", "--agent", "probe"]).ok();
    assert!(doctor.lines().contains(&absent.as_str()), "{doctor:#?}");

    // Once it exists it is granted, and the line says so.
    std::fs::create_dir_all(&cache).unwrap();
    let inside = cache.join("probe.txt");
    sb.declare_stubs(&[(
        "probe",
        Some(&script(vec![
            write_step(&inside),
            json!({"finish": "landed"}),
        ])),
    )]);
    fire(&sb, "default", &[]).ok();
    assert_eq!(summaries(&sb), [format!("write {}: ok", inside.display())]);
    assert_eq!(
        grant_lines_of(&sb, "~/.cache"),
        [format!(
            "Grant:     write ~/.cache = {}: the envelope",
            cache.display()
        )]
    );
}

#[test]
fn the_store_and_the_home_are_out_of_reach_under_every_preset() {
    let sb = Sandbox::new();
    sb.require_landlock();
    let db = sb.db();
    // In a directory that exists, so the only way the write can fail is the refusal.
    let marker = sb.home.join("run").join("planted");
    std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
    sb.declare_stubs(&[(
        "probe",
        Some(&script(vec![
            write_step(&db),
            write_step(&marker),
            run_step(&[BIN, "config", "set", "default-mission-agent", "pwned"]),
            sh(&format!(
                "{BIN} mission stop $({BIN} mission list | awk 'NR==2{{print $1}}') --reason pwned"
            )),
            json!({"finish": "landed"}),
        ])),
    )]);
    for policy in ["default", "acp", "strict", "acpx", "dev"] {
        let fired = fire(&sb, policy, &[]);
        assert_eq!(fired.code, 0, "{policy}: {fired:#?}");
        let got = reports(&sb);
        assert_eq!(got.len(), 4, "{policy}: {got:?}");
        assert_eq!(
            got[0].0,
            format!("write {}: EACCES (os error 13)", db.display()),
            "{policy}"
        );
        assert_eq!(
            got[1].0,
            format!("write {}: EACCES (os error 13)", marker.display()),
            "{policy}: {got:?}"
        );
        assert_eq!(got[2].0, format!("run {BIN}: exit 1"), "{policy}: {got:?}");
        // Under strict and acpx even `mission list` fails (the store is unreadable), so
        // the stop is left without an id; either way it fails.
        assert!(
            got[3].0.starts_with("run sh: exit ") && got[3].0 != "run sh: exit 0",
            "{policy}: {got:?}"
        );
        assert!(!marker.exists(), "{policy}");
        let agent = sb.run(&["config", "get", "default-mission-agent"]);
        assert!(!agent.stdout.contains("pwned"), "{policy}: {agent:#?}");
        let list = sb.run(&["mission", "list"]).ok();
        assert!(
            !list.stdout.contains("abandoned"),
            "{policy}: no unit stopped its mission: {list:#?}"
        );
    }
}

#[test]
fn a_unit_that_answers_its_own_question_is_refused_and_the_question_waits_for_a_human() {
    let sb = Sandbox::new();
    sb.require_landlock();
    sb.run(&["config", "set", "ask-park-window", "60s"]).ok();
    let out = sb.cwd.join("self-answer.out");
    let id_file = sb.cwd.join("ask-id");
    // In the background, inside the unit's sandbox: once the unit's own question is
    // filed and its id known (the test hands it over through the workspace, so the
    // attempt cannot miss it), answer it as the operator would.
    let attempt = format!(
        "( until [ -s {ids} ]; do sleep 0.05; done; \
         {BIN} approvals respond \"$(cat {ids})\" --answer self > {out} 2>&1; echo \"exit=$?\" >> {out} ) </dev/null >/dev/null 2>&1 &",
        ids = id_file.display(),
        out = out.display()
    );
    sb.declare_stubs(&[(
        "probe",
        Some(&script(vec![
            sh(&attempt),
            json!({"ask": {"summary": "Ship it?", "then": {"report": {"kind": "result", "summary": "answer was: {{answer}}"}}}}),
            json!({"finish": "landed"}),
        ])),
    )]);
    let bg = sb.fire_in_background("probe", "probe", &[]);
    let ask = wait_for(30, "the unit's question", || {
        sb.pending_ask_ids().first().cloned()
    });
    std::fs::write(&id_file, &ask).unwrap();
    let attempted = wait_for(30, "the unit's self-answer attempt", || {
        std::fs::read_to_string(&out)
            .ok()
            .filter(|t| t.contains("exit="))
    });
    assert!(
        !attempted.contains("exit=0"),
        "the unit's respond failed: {attempted}"
    );
    assert_eq!(
        sb.pending_ask_ids(),
        std::slice::from_ref(&ask),
        "the question still waits: {attempted}"
    );
    let show = sb.run(&["approvals", "list"]).ok();
    assert!(show.stdout.contains("Ship it?"), "{show:#?}");

    sb.run(&["approvals", "respond", &ask, "--answer", "human"])
        .ok();
    let fired = bg.join();
    assert_eq!(fired.code, 0, "{fired:#?}");
    assert!(
        fired.stdout.contains("  [result] answer was: human\n"),
        "{fired:#?}"
    );
}

#[test]
fn a_unit_connecting_to_another_missions_socket_is_refused_and_nothing_is_written_there() {
    let sb = Sandbox::new();
    sb.run(&["config", "set", "ask-park-window", "60s"]).ok();
    sb.declare_stubs(&[
        (
            "victim",
            Some(&script(vec![
                json!({"ask": {"summary": "Proceed?", "then": {"report": {"kind": "result", "summary": "answer was: {{answer}}"}}}}),
                json!({"finish": "landed"}),
            ])),
        ),
        ("probe", None),
    ]);
    let victim = sb.fire_in_background("victim", "victim", &[]);
    let ask = wait_for(30, "the victim's question", || {
        sb.pending_ask_ids().first().cloned()
    });
    let victim_id = sb.newest_mission().unwrap();
    let socket = socket_of(&sb, &victim_id);
    assert!(socket.exists(), "{}", socket.display());

    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let finish = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mission_finish","arguments":{"status":"derailed"}}}"#;
    let attack = format!(
        "printf guessed > \"$TMPDIR/guessed.token\" && printf '%s\\n' '{init}' '{finish}' | {BIN} mcp-bridge {} --token-file \"$TMPDIR/guessed.token\"",
        socket.display()
    );
    let probe = script(vec![sh(&attack), json!({"finish": "landed"})]);
    let script_path = sb.cwd.join("probe.json");
    std::fs::write(&script_path, probe).unwrap();
    let mut cmd = sb.command(&[
        "mission", "fire", "probe", "probe", "--wait", "--policy", "default",
    ]);
    cmd.env("STUB_SCRIPT", &script_path);
    let fired = sb.run_with(cmd);
    assert_eq!(fired.code, 0, "{fired:#?}");
    let got = reports(&sb);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].1.contains(
            "mission socket: refused: this connection did not present the mission's token"
        ),
        "{got:?}"
    );

    // The victim is untouched: still open on its question, with nothing recorded.
    let show = sb.run(&["mission", "show", &victim_id, "--json"]).ok();
    let v: Value = serde_json::from_str(&show.stdout).unwrap();
    assert_eq!(v["status"], "open", "{v:#}");
    let victim_reports = sb.run(&["mission", "reports", &victim_id, "--json"]).ok();
    assert_eq!(victim_reports.stdout.trim(), "[]");
    assert_eq!(sb.pending_ask_ids(), std::slice::from_ref(&ask));

    sb.run(&["approvals", "respond", &ask, "--answer", "go"])
        .ok();
    let landed = victim.join();
    assert_eq!(landed.code, 0, "{landed:#?}");
}

#[test]
fn a_write_entry_inside_the_home_refuses_the_fire_and_records_nothing() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("probe", Some(&script(vec![json!({"finish": "landed"})])))]);
    sb.write(
        &sb.home.join("hitl-policy-leaky.json"),
        &json!({
            "default_action": "allow",
            "sandbox": {"filesystem": {"write": ["{workspace}", "~/mbhome/run"]}}
        })
        .to_string(),
    );
    let fired = fire(&sb, "leaky", &[]);
    assert_eq!(fired.code, 1, "{fired:#?}");
    assert!(
        fired.stderr.contains(&format!(
            "sandbox: filesystem.write entry \"~/mbhome/run\" ({}) lies inside {}, which a unit may never write",
            sb.home.join("run").display(),
            sb.home.display()
        )),
        "{fired:#?}"
    );
    assert_eq!(sb.newest_mission(), None);
}

#[test]
fn without_landlock_every_surface_says_declared_not_enforced() {
    let sb = Sandbox::new();
    let elsewhere = sb.home.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let outside = elsewhere.join("outside.txt");
    sb.declare_stubs(&[(
        "probe",
        Some(&script(vec![
            write_step(&outside),
            json!({"finish": "landed"}),
        ])),
    )]);
    let no_landlock = [("MISSIONBOARD_LANDLOCK_ABI", "0")];
    let fired = fire(&sb, "strict", &no_landlock).ok();
    let sandbox_lines: Vec<&str> = fired
        .stdout
        .lines()
        .filter(|l| l.starts_with("Sandbox: "))
        .collect();
    assert_eq!(
        sandbox_lines,
        // One line, saying it once.
        [
            "Sandbox: this kernel offers no Landlock (ABI 0): the sandbox is declared, not enforced — the unit runs with your user's privileges; the mission socket still refuses callers without the mission's token (declared: filesystem.write [{workspace}, {tmp}]; filesystem.read [{workspace}, {tmp}]; network.connect [{model}]).",
        ]
    );
    // Truthfully not enforced: the write went through.
    assert_eq!(summaries(&sb), [format!("write {}: ok", outside.display())]);

    let id = sb.newest_mission().unwrap();
    let mut show = sb.command(&["mission", "show", &id]);
    show.env("MISSIONBOARD_LANDLOCK_ABI", "0");
    let show = sb.run_with(show).ok();
    assert!(
        show.stdout.contains("Sandbox:   filesystem.write declared, not enforced [{workspace}, {tmp}]; filesystem.read declared, not enforced"),
        "{show:#?}"
    );
    let mut doctor = sb.command(&["doctor"]);
    doctor.env("MISSIONBOARD_LANDLOCK_ABI", "0");
    let doctor = sb.run_with(doctor);
    assert!(
        doctor
            .stdout
            .contains("Sandbox:   Landlock ABI 0 — this kernel offers no Landlock (ABI 0)"),
        "{doctor:#?}"
    );
    let mut vet = sb.command(&["vet", "--all"]);
    vet.env("MISSIONBOARD_LANDLOCK_ABI", "0");
    let vet = sb.run_with(vet).ok();
    assert!(
        vet.stdout.contains("     sandbox.network.connect: network.connect is declared, not enforced: this kernel offers Landlock ABI 0"),
        "{vet:#?}"
    );
}

#[test]
fn under_strict_a_unit_reaches_only_the_model_endpoint_port() {
    let sb = Sandbox::new();
    sb.require_landlock();
    let model = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let (model_port, other_port) = (
        model.local_addr().unwrap().port(),
        other.local_addr().unwrap().port(),
    );
    sb.run(&[
        "config",
        "set",
        "model-base-url",
        &format!("http://127.0.0.1:{model_port}/v1"),
    ])
    .ok();
    let connect = |port: u16| {
        run_step(&[
            "bash",
            "-c",
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        ])
    };
    sb.declare_stubs(&[(
        "probe",
        Some(&script(vec![
            connect(model_port),
            connect(other_port),
            json!({"finish": "landed"}),
        ])),
    )]);
    fire(&sb, "strict", &[]).ok();
    let got = reports(&sb);
    assert_eq!(
        got[0],
        ("run bash: exit 0".to_string(), "connected".to_string())
    );
    assert_eq!(got[1].0, "run bash: exit 1", "{got:?}");
    assert!(got[1].1.contains("Permission denied"), "{got:?}");
    // Under default the network is open.
    fire(&sb, "default", &[]).ok();
    assert_eq!(reports(&sb)[1].0, "run bash: exit 0");
}

#[test]
fn a_mission_s_temp_dir_is_exported_as_tmpdir_and_gone_when_it_rests() {
    let sb = Sandbox::new();
    let seen = sb.cwd.join("tmpdir.txt");
    sb.declare_stubs(&[(
        "probe",
        Some(&script(vec![
            sh(&format!("echo \"$TMPDIR\" > {}", seen.display())),
            json!({"finish": "landed"}),
        ])),
    )]);
    fire(&sb, "default", &[]).ok();
    let id = sb.newest_mission().unwrap();
    let tmp = missionboard::fleet::confinement::MissionTmp::path_for(&id);
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap().trim(),
        tmp.display().to_string()
    );
    assert!(!tmp.exists(), "removed with the unit");

    // A host killed outright leaves its units' dirs behind: the next host's boot
    // removes those of missions at rest, and only this store's.
    // The layout before one temp root per user kept them in the temp dir itself.
    std::fs::create_dir(&tmp).unwrap();
    let legacy = std::env::temp_dir().join(format!("missionboard-{id}"));
    std::fs::create_dir(&legacy).unwrap();
    let stranger = missionboard::fleet::confinement::MissionTmp::path_for(&uuid_like());
    std::fs::create_dir(&stranger).unwrap();
    fire(&sb, "default", &[]).ok();
    assert!(!tmp.exists(), "the leftover of a resting mission is swept");
    assert!(!legacy.exists(), "and one left in the old layout");
    assert!(stranger.exists(), "another home's dir is left alone");
    std::fs::remove_dir(&stranger).unwrap();
}

#[test]
fn a_temp_root_another_user_could_reach_refuses_the_fire_and_names_the_fix() {
    let sb = Sandbox::new();
    sb.declare_stubs(&[("probe", Some(&script(vec![json!({"finish": "landed"})])))]);
    let tmpdir = sb.cwd.join("shared-tmp");
    std::fs::create_dir(&tmpdir).unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = tmpdir.join(format!("missionboard-{}", unsafe { libc::geteuid() }));
    std::os::unix::fs::symlink(&sb.cwd, &root).unwrap();
    let tmpdir_env = tmpdir.display().to_string();
    let refused = fire(&sb, "default", &[("TMPDIR", &tmpdir_env)]);
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains(&format!(
            "refusing the temp directory {}: it is not a directory — missions' temp dirs need a directory only you can enter (mode 0700, owned by you); remove it, or set TMPDIR to a private directory",
            root.display()
        )),
        "{refused:#?}"
    );
    assert_eq!(
        sb.newest_mission(),
        None,
        "a refused start leaves no mission"
    );

    // Its own, but open to others: refused the same way; removed, the fire lands.
    std::fs::remove_file(&root).unwrap();
    std::fs::create_dir(&root).unwrap();
    std::fs::set_permissions(&root, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let refused = fire(&sb, "default", &[("TMPDIR", &tmpdir_env)]);
    assert!(
        refused
            .stderr
            .contains("its mode is 0755, open to other users"),
        "{refused:#?}"
    );
    std::fs::remove_dir(&root).unwrap();
    let landed = fire(&sb, "default", &[("TMPDIR", &tmpdir_env)]);
    assert_eq!(landed.code, 0, "{landed:#?}");
    assert!(root.is_dir(), "made afresh, private");
}

/// Where the host of `sb` serves mission `id`'s socket.
fn socket_of(sb: &Sandbox, id: &str) -> std::path::PathBuf {
    missionboard::paths::Paths::resolve(sb.home.clone(), sb.cwd.clone())
        .socket_dir()
        .join(format!("m-{id}.sock"))
}

/// A mission id no store of these tests knows.
fn uuid_like() -> String {
    format!(
        "00000000-0000-4000-8000-{:012x}",
        std::process::id() as u64 * 7919 + 1
    )
}

/// The value of `var` in process `pid`'s environment as `/proc/<pid>/environ` shows
/// it: `None` when the variable is not there at all.
fn environ_value(environ: &str, var: &str) -> Option<String> {
    environ
        .split('\0')
        .find_map(|entry| entry.strip_prefix(&format!("{var}=")).map(str::to_string))
}

/// The parent of process `pid`.
fn parent_pid(pid: u32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("PPid:"))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no PPid for {pid}: {status}"))
}

#[test]
fn a_unit_cannot_take_another_missions_token_or_drive_its_bridge_through_proc_under_any_preset() {
    let sb = Sandbox::new();
    sb.require_landlock();
    sb.run(&["config", "set", "ask-park-window", "60s"]).ok();
    sb.declare_stubs(&[
        (
            "victim",
            Some(&script(vec![
                json!({"ask": {"summary": "Proceed?", "then": {"report": {"kind": "result", "summary": "answer was: {{answer}}"}}}}),
                json!({"finish": "landed"}),
            ])),
        ),
        ("probe", None),
    ]);
    let victim = sb.fire_in_background("victim", "victim", &[]);
    let ask = wait_for(30, "the victim's question", || {
        sb.pending_ask_ids().first().cloned()
    });
    let victim_id = sb.newest_mission().unwrap();
    let socket = socket_of(&sb, &victim_id);
    let bridge = wait_for(30, "the victim's bridge", || {
        crate::harness::processes_mentioning(&socket.display().to_string())
            .first()
            .copied()
    });
    let agent = parent_pid(bridge);
    // Read from outside every sandbox: the bridge's environment carries no token; it
    // read its one-use token from a file in the unit's temp dir.
    let own_view =
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{bridge}/environ")).unwrap())
            .into_owned();
    assert_eq!(
        environ_value(&own_view, "MISSIONBOARD_MISSION_TOKEN"),
        None,
        "no token in the bridge's environment"
    );
    let token_file = missionboard::fleet::confinement::MissionTmp::path_for(&victim_id)
        .join(format!("m-{victim_id}.token"));

    let inject = r#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"mission_report","arguments":{"kind":"finding","summary":"injected"}}}"#;
    let script_path = sb.cwd.join("probe.json");
    std::fs::write(
        &script_path,
        script(vec![
            sh(&format!("cat /proc/{bridge}/environ")),
            sh(&format!("cat /proc/{agent}/environ")),
            sh(&format!("head -c 16 /proc/{bridge}/mem")),
            sh(&format!("head -c 16 /proc/{agent}/mem")),
            sh(&format!("tr '\\0' ' ' < /proc/{bridge}/cmdline")),
            // The bridge's stdin, reopened through /proc: a way into its session.
            sh(&format!("printf '%s\\n' '{inject}' > /proc/{bridge}/fd/0")),
            json!({"finish": "landed"}),
        ]),
    )
    .unwrap();
    let probe = |policy: &str, extra_env: &[(&str, &str)]| {
        let mut cmd = sb.command(&[
            "mission", "fire", "probe", "probe", "--wait", "--policy", policy,
        ]);
        cmd.env("STUB_SCRIPT", &script_path);
        for (k, v) in extra_env {
            cmd.env(k, v);
        }
        let fired = sb.run_with(cmd);
        assert_eq!(fired.code, 0, "{policy}: {fired:#?}");
        reports(&sb)
    };
    for policy in ["default", "acp", "strict", "acpx", "dev"] {
        let got = probe(policy, &[]);
        assert_eq!(got.len(), 6, "{policy}: {got:?}");
        // Landlock scopes ptrace to the unit's own domain, so the memory and the
        // pipes of another mission's processes are refused. Their environment too,
        // except to a unit with CAP_PERFMON or CAP_SYS_ADMIN (run as root), which the
        // kernel lets read any process's; either way no token is there to take.
        for (summary, detail) in &got[..2] {
            if summary == "run sh: exit 0" {
                assert_eq!(
                    environ_value(detail, "MISSIONBOARD_MISSION_TOKEN").unwrap_or_default(),
                    "",
                    "{policy}: {got:?}"
                );
            } else {
                assert!(detail.contains("Permission denied"), "{policy}: {got:?}");
            }
        }
        for (summary, detail) in &got[2..4] {
            assert_ne!(summary, "run sh: exit 0", "{policy}: {got:?}");
            assert!(
                detail.contains("Permission denied"),
                "{policy}: the kernel refuses: {got:?}"
            );
        }
        // The command line is anyone's to read, and carries no secret (the report
        // drops the trailing separator).
        assert_eq!(
            got[4],
            (
                "run sh: exit 0".to_string(),
                format!(
                    "{BIN} mcp-bridge {} --token-file {}",
                    socket.display(),
                    token_file.display()
                )
            ),
            "{policy}"
        );
        assert_ne!(got[5].0, "run sh: exit 0", "{policy}: {got:?}");
        assert!(got[5].1.contains("Permission denied"), "{policy}: {got:?}");
    }
    // The victim never noticed.
    let victim_reports = sb.run(&["mission", "reports", &victim_id, "--json"]).ok();
    assert_eq!(victim_reports.stdout.trim(), "[]");

    // The refusals are the kernel's: without Landlock the same unit opens another
    // mission's memory (reading its first page fails, the open does not) ...
    let got = probe("dev", &[("MISSIONBOARD_LANDLOCK_ABI", "0")]);
    for (summary, detail) in &got[2..4] {
        assert!(!detail.contains("Permission denied"), "{summary}: {got:?}");
        assert!(detail.contains("Input/output error"), "{summary}: {got:?}");
    }
    // ... and writes into its bridge's session.
    assert_eq!(got[5].0, "run sh: exit 0", "{got:?}");
    let victim_reports = wait_for(30, "the injected report", || {
        let out = sb.run(&["mission", "reports", &victim_id]).ok();
        out.stdout.contains("injected").then_some(out)
    });
    assert!(victim_reports.stdout.contains("injected"));
    sb.run(&["approvals", "respond", &ask, "--answer", "go"])
        .ok();
    let landed = victim.join();
    assert_eq!(landed.code, 0, "{landed:#?}");
}

#[test]
fn a_shell_script_agent_is_confined_from_its_first_line() {
    let sb = Sandbox::new();
    sb.require_landlock();
    let elsewhere = sb.home.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let outside = elsewhere.join("from-the-script.txt");
    let log = sb.cwd.join("agent.log");
    let stub_script = sb.cwd.join("script-after.json");
    sb.write(&stub_script, &script(vec![json!({"finish": "landed"})]));
    // Not our binary: a shell script that tries a write of its own before it hands
    // over to the stub, so the sandbox is seen to hold any program, from the start.
    let agent = sb.cwd.join("agent.sh");
    sb.write(
        &agent,
        &format!(
            "#!/bin/sh\nif printf x > {outside} 2>/dev/null; then echo outside=written; else echo outside=refused; fi >> {log}\nprintf x > {ws}/inside.txt && echo inside=written >> {log}\nexec {BIN} stub-agent --script {stub}\n",
            outside = outside.display(),
            log = log.display(),
            ws = sb.cwd.display(),
            stub = stub_script.display()
        ),
    );
    std::fs::set_permissions(&agent, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    sb.write(
        &sb.home.join("agents.toml"),
        &format!(
            "[agents.probe]\ncommand = {:?}\nargs = []\ndescription = \"a shell script\"\n",
            agent.display().to_string()
        ),
    );
    for (policy, expected) in [
        ("default", "outside=refused"),
        ("strict", "outside=refused"),
        ("dev", "outside=written"),
    ] {
        let _ = std::fs::remove_file(&log);
        let fired = fire(&sb, policy, &[]);
        assert_eq!(fired.code, 0, "{policy}: {fired:#?}");
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            format!("{expected}\ninside=written\n"),
            "{policy}"
        );
        assert_eq!(outside.exists(), policy == "dev", "{policy}");
    }
}
