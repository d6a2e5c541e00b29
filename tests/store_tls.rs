//! The shared store over TLS and without a reachable server, through the real binary:
//! a throwaway cluster that only takes TLS (a CA, server and client certificates this
//! test makes), each `sslmode` against it and against a plaintext server, client
//! certificates, passwords from the environment and the passfile, a server that
//! listens on its Unix-domain socket only (reached by each of libpq's spellings, never
//! over TLS), and the commands that need no store still working while the store
//! cannot be reached.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::pg::{self, OwnCluster};
use common::{Run, Sandbox};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

/// A CA, a server certificate for `localhost` signed by it, and a client certificate
/// for the user `certuser`, as PEM files in `dir`.
struct Pki {
    ca: PathBuf,
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn make_pki(dir: &Path, server_dir: &Path) -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "missionboard test CA");
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

    let server_key = KeyPair::generate().unwrap();
    let mut server = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    server
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let server = server.signed_by(&server_key, &ca).unwrap();

    let client_key = KeyPair::generate().unwrap();
    let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
    client
        .distinguished_name
        .push(DnType::CommonName, "certuser");
    let client = client.signed_by(&client_key, &ca).unwrap();

    let write = |path: PathBuf, text: &str, mode: u32| {
        std::fs::write(&path, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    };
    write(server_dir.join("server.crt"), &server.pem(), 0o644);
    write(
        server_dir.join("server.key"),
        &server_key.serialize_pem(),
        0o600,
    );
    write(server_dir.join("root.crt"), &ca.pem(), 0o644);
    Pki {
        ca: write(dir.join("ca.pem"), &ca.pem(), 0o644),
        client_cert: write(dir.join("client.pem"), &client.pem(), 0o644),
        client_key: write(dir.join("client.key"), &client_key.serialize_pem(), 0o600),
    }
}

/// A cluster that accepts TLS connections only: `postgres` by trust, `certuser` by
/// its client certificate, `pwuser` by password.
fn tls_cluster(certs: &Path) -> (OwnCluster, Pki) {
    let mut pki = None;
    let cluster = OwnCluster::new_started(|data| {
        pki = Some(make_pki(certs, data));
        let mut conf = std::fs::OpenOptions::new()
            .append(true)
            .open(data.join("postgresql.conf"))
            .unwrap();
        writeln!(
            conf,
            "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\nssl_ca_file = 'root.crt'\npassword_encryption = 'scram-sha-256'"
        )
        .unwrap();
        std::fs::write(
            data.join("pg_hba.conf"),
            "local all all trust\n\
             hostssl all certuser 127.0.0.1/32 cert\n\
             hostssl all pwuser 127.0.0.1/32 scram-sha-256\n\
             hostssl all postgres 127.0.0.1/32 trust\n",
        )
        .unwrap();
    });
    (cluster, pki.expect("the certificates were made"))
}

/// A home whose every command uses `url` as its store.
fn home_on(url: &str) -> Sandbox {
    let mut sb = Sandbox::on_file();
    sb.store_url = Some(url.to_string());
    sb
}

fn run_env(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = sb.command(args);
    c.env_remove("PGPASSWORD").env_remove("PGPASSFILE");
    for (k, v) in env {
        c.env(k, v);
    }
    sb.run_with(c)
}

#[test]
fn each_sslmode_against_a_server_that_takes_tls_only() {
    let certs = tempfile::tempdir().unwrap();
    let (cluster, pki) = tls_cluster(certs.path());
    let at = |host: &str, user: &str, query: &str| {
        format!("postgres://{user}@{host}:{}/postgres?{query}", cluster.port)
    };
    let ca = pki.ca.display().to_string();

    // TLS is taken by default (prefer) and by require: the server refuses anything else.
    for query in ["", "sslmode=prefer", "sslmode=require"] {
        let sb = home_on(&at("127.0.0.1", "postgres", query));
        let run = sb.run(&["mission", "list"]);
        assert_eq!(run.code, 0, "{query}: {run:#?}");
        assert!(!run.stderr.contains("plaintext"), "{query}: {run:#?}");
    }
    // disable really is plaintext: the server says no, and the error names the store.
    let run = home_on(&at("127.0.0.1", "postgres", "sslmode=disable")).run(&["mission", "list"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("no encryption"), "{run:#?}");
    assert!(
        run.stderr
            .contains("cannot reach the missionboard database")
    );

    // verify-full: the CA named, the name matching.
    let full = format!("sslmode=verify-full&sslrootcert={ca}");
    home_on(&at("localhost", "postgres", &full))
        .run(&["mission", "list"])
        .ok();
    // The certificate names localhost, not 127.0.0.1: verify-full refuses, verify-ca
    // (which does not check the name) takes it.
    let run = home_on(&at("127.0.0.1", "postgres", &full)).run(&["mission", "list"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("certificate"), "{run:#?}");
    home_on(&at(
        "127.0.0.1",
        "postgres",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    ))
    .run(&["mission", "list"])
    .ok();
    // No CA named: the system roots do not vouch for this one, and the error says
    // how to name it.
    let run =
        home_on(&at("localhost", "postgres", "sslmode=verify-full")).run(&["mission", "list"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(run.stderr.contains("sslrootcert"), "{run:#?}");

    // A client certificate logs certuser in; without one the server refuses it.
    pg_admin(&cluster, "CREATE ROLE certuser LOGIN SUPERUSER");
    let with_cert = format!(
        "sslmode=verify-full&sslrootcert={ca}&sslcert={}&sslkey={}",
        pki.client_cert.display(),
        pki.client_key.display()
    );
    home_on(&at("localhost", "certuser", &with_cert))
        .run(&["mission", "list"])
        .ok();
    let run = home_on(&at("localhost", "certuser", &full)).run(&["mission", "list"]);
    assert_eq!(run.code, 1, "{run:#?}");
    // Half a client certificate is refused before any connect.
    let run = home_on(&at(
        "localhost",
        "certuser",
        &format!("sslcert={}", pki.client_cert.display()),
    ))
    .run(&["mission", "list"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr.contains("sslcert and sslkey go together"),
        "{run:#?}"
    );
}

#[test]
fn a_password_comes_from_the_environment_or_a_private_passfile() {
    let certs = tempfile::tempdir().unwrap();
    let (cluster, _pki) = tls_cluster(certs.path());
    pg_admin(
        &cluster,
        "CREATE ROLE pwuser LOGIN SUPERUSER PASSWORD 's3cret:pw'",
    );
    let url = format!(
        "postgres://pwuser@127.0.0.1:{}/postgres?sslmode=require",
        cluster.port
    );
    let sb = home_on(&url);
    // No password anywhere: the server asks for one and the command fails.
    let run = run_env(&sb, &["mission", "list"], &[]);
    assert_eq!(run.code, 1, "{run:#?}");
    run_env(&sb, &["mission", "list"], &[("PGPASSWORD", "s3cret:pw")]).ok();

    let passfile = certs.path().join("pgpass");
    std::fs::write(
        &passfile,
        format!("127.0.0.1:{}:postgres:pwuser:s3cret\\:pw\n", cluster.port),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    let file = passfile.to_str().unwrap();
    // Readable by others: ignored, as libpq ignores it.
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(
        run_env(&sb, &["mission", "list"], &[("PGPASSFILE", file)]).code,
        1
    );
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    run_env(&sb, &["mission", "list"], &[("PGPASSFILE", file)]).ok();
}

#[test]
fn require_against_a_plaintext_server_names_the_fix_and_prefer_says_it_fell_back() {
    let db = pg::fresh_database();
    let with = |query: &str| format!("{db}?{query}");
    let run = home_on(&with("sslmode=require")).run(&["mission", "list"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr.contains("the server does not offer TLS")
            && run.stderr.contains("sslmode=disable"),
        "{run:#?}"
    );
    // A named prefer connects, and says once that it is in plaintext.
    let run = home_on(&with("sslmode=prefer"))
        .run(&["mission", "list"])
        .ok();
    assert_eq!(
        run.stderr
            .matches("this connection is in plaintext")
            .count(),
        1,
        "{run:#?}"
    );
    // The default on this machine's loopback is quiet about it.
    let run = home_on(&db).run(&["mission", "list"]).ok();
    assert!(!run.stderr.contains("plaintext"), "{run:#?}");
    pg::drop_database(&db);
}

const LAND: &str = r#"{"name":"land","turns":[{"steps":[{"report":{"kind":"result","summary":"over the socket"}},{"finish":"landed"}]}]}"#;

#[test]
fn a_server_on_its_unix_socket_only_is_reached_by_each_spelling_without_tls() {
    let cluster = OwnCluster::socket_only();
    let port = cluster.port;
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the server must not listen on TCP, or this test proves nothing"
    );
    let dir = cluster.dir.display().to_string();
    let mut sb = Sandbox::on_file();
    sb.declare_stubs(&[("stub", Some(LAND))]);
    // Each command with PGHOST as given (unset unless the spelling relies on it).
    let run = |sb: &Sandbox, args: &[&str], pghost: Option<&str>| {
        let mut c = sb.command(args);
        match pghost {
            Some(h) => c.env("PGHOST", h),
            None => c.env_remove("PGHOST"),
        };
        sb.run_with(c)
    };
    // Fire a mission on the store and read it back; no word of TLS or plaintext
    // (plaintext is the only way a socket talks).
    let fire_and_show = |sb: &Sandbox, pghost: Option<&str>, spelling: &str| {
        let fire = run(
            sb,
            &[
                "mission", "fire", "stub", spelling, "--wait", "--policy", "default",
            ],
            pghost,
        );
        assert_eq!(fire.code, 0, "{spelling}: {fire:#?}");
        assert!(
            !fire.stderr.contains("TLS") && !fire.stderr.contains("plaintext"),
            "{spelling}: {fire:#?}"
        );
        let listed = run(sb, &["mission", "list", "--json"], pghost);
        let v: serde_json::Value = serde_json::from_str(&listed.ok().stdout).unwrap();
        let id = v["missions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["intent"] == spelling)
            .unwrap_or_else(|| panic!("{spelling}: the mission is listed: {v}"))["id"]
            .as_str()
            .unwrap()
            .to_string();
        let shown = run(sb, &["mission", "show", &id], pghost).ok().stdout;
        assert!(
            shown.contains("\nStatus:    landed\n"),
            "{spelling}: {shown}"
        );
        assert!(shown.contains("over the socket"), "{spelling}: {shown}");
    };

    // The socket directory in the host= parameter, set with `config set`.
    let by_param = format!("postgresql://postgres@/postgres?host={dir}&port={port}");
    let set = run(&sb, &["config", "set", "store-url", &by_param], None).ok();
    assert_eq!(set.stdout, format!("store-url = {by_param}\n"));
    fire_and_show(&sb, None, "host parameter");

    // Percent-encoded as the URL's host, through MISSIONBOARD_STORE_URL.
    sb.store_url = Some(format!(
        "postgresql://postgres@{}:{port}/postgres",
        dir.replace('/', "%2F")
    ));
    fire_and_show(&sb, None, "encoded host");

    // No host in the URL: PGHOST names the directory; the port still picks the socket.
    sb.store_url = Some(format!("postgresql:///postgres?user=postgres&port={port}"));
    fire_and_show(&sb, Some(&dir), "PGHOST");
    // All three reached the same database.
    let listed = run(&sb, &["mission", "list"], Some(&dir)).ok().stdout;
    for spelling in ["host parameter", "encoded host", "PGHOST"] {
        assert!(listed.contains(spelling), "{listed}");
    }
    // Without PGHOST that URL names no server: the error says how to name one.
    let run_none = run(&sb, &["mission", "list"], None);
    assert_eq!(run_none.code, 1, "{run_none:#?}");
    assert!(
        run_none.stderr.contains("names no host") && run_none.stderr.contains("PGHOST"),
        "{run_none:#?}"
    );

    // A mode that demands TLS is refused on a socket, naming the fix.
    for strict in ["require", "verify-full"] {
        sb.store_url = Some(format!("{by_param}&sslmode={strict}"));
        let refused = run(&sb, &["mission", "list"], None);
        assert_eq!(refused.code, 1, "{refused:#?}");
        assert!(
            refused.stderr.contains(&format!(
                "sslmode={strict} asks for TLS, which PostgreSQL never offers on a Unix-domain socket ({dir})"
            )) && refused.stderr.contains("set sslmode=prefer or disable in store-url"),
            "{refused:#?}"
        );
    }
}

/// A server that accepts connections and never says a word.
struct Silent {
    port: u16,
    _held: std::sync::mpsc::Sender<()>,
}

fn silent_server() -> Silent {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (held, stop) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming() {
            open.push(stream);
            if let Err(std::sync::mpsc::TryRecvError::Disconnected) = stop.try_recv() {
                return;
            }
        }
    });
    Silent { port, _held: held }
}

/// Run with a deadline: a command that hangs fails the test instead of the suite.
fn run_within(sb: &Sandbox, args: &[&str], limit: Duration) -> Run {
    let started = Instant::now();
    let child = common::Background::spawn(sb.command(args));
    let pid = child.pid();
    let watchdog = std::thread::spawn(move || {
        while started.elapsed() < limit {
            if !common::pid_alive(pid) {
                return false;
            }
            std::thread::park_timeout(Duration::from_millis(50));
        }
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        true
    });
    let run = child.join();
    let killed = watchdog.join().unwrap();
    assert!(!killed, "`{}` hung past {limit:?}", args.join(" "));
    run
}

#[test]
fn commands_that_need_no_store_work_while_it_cannot_be_reached() {
    let silent = silent_server();
    let url = format!(
        "postgres://mb:hunter2@127.0.0.1:{}/mb?connect_timeout=2",
        silent.port
    );
    let sb = home_on(&url);
    let limit = Duration::from_secs(20);
    let version = run_within(&sb, &["--version"], limit).ok();
    assert!(version.stdout.starts_with("missionboard "), "{version:#?}");
    run_within(&sb, &["help"], limit).ok();
    run_within(&sb, &["completions", "bash"], limit).ok();
    run_within(&sb, &["man"], limit).ok();
    // The setting that is wrong can be seen (password masked) and fixed.
    let get = run_within(&sb, &["config", "get", "store-url"], limit).ok();
    assert_eq!(
        get.stdout.trim(),
        format!(
            "postgres://mb:***@127.0.0.1:{}/mb?connect_timeout=2",
            silent.port
        )
    );
    let list = run_within(&sb, &["config", "list"], limit).ok();
    assert!(list.stdout.contains("mb:***@"), "{list:#?}");
    assert!(
        list.stderr.contains("the shared store is unreachable"),
        "{list:#?}"
    );
    // A command that needs the store gives up within the connect timeout, naming it.
    let run = run_within(&sb, &["mission", "list"], limit);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr.contains("did not answer within 2s") && run.stderr.contains("connect_timeout"),
        "{run:#?}"
    );
}

#[test]
fn store_url_can_be_set_from_stdin_so_no_password_reaches_argv() {
    let sb = Sandbox::on_file();
    let mut c = sb.command(&["config", "set", "store-url", "-"]);
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"postgres://mb:hunter2@db.example/mb\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "store-url = postgres://mb:***@db.example/mb"
    );
}

/// Run `sql` on `cluster`'s postgres database as its superuser, through the Unix
/// socket (which its pg_hba trusts without TLS).
fn pg_admin(cluster: &OwnCluster, sql: &str) {
    let url = format!(
        "postgres://postgres@%2F{}:{}/postgres",
        cluster
            .dir
            .display()
            .to_string()
            .trim_start_matches('/')
            .replace('/', "%2F"),
        cluster.port
    );
    let sql = sql.to_string();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap_or_else(|e| panic!("the test cluster at {url}: {e}"));
            tokio::spawn(connection);
            client.batch_execute(&sql).await.unwrap();
        })
    })
    .join()
    .unwrap();
}
