//! A real PostgreSQL for the tests that run against the shared store.
//!
//! `MISSIONBOARD_TEST_PG_URL` names a server to use (`.ci/run` starts a throwaway
//! cluster and sets it); without it, the first test that needs one starts a cluster
//! of its own (initdb into a temp dir, the server on a free local port, stopped when
//! the test binary exits). Either way each test gets a database of its own, so tests
//! run in parallel without seeing each other's rows. No server binaries and no URL is
//! a failure that says what to install, never a silent pass.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, Once, OnceLock};

/// The env var naming an existing server (an admin URL: it must be allowed to
/// CREATE DATABASE), e.g. `postgres://postgres@127.0.0.1:5432/postgres`.
pub const URL_ENV: &str = "MISSIONBOARD_TEST_PG_URL";
/// Set to `postgres` to run the store-sensitive black-box suites against PostgreSQL.
pub const STORE_ENV: &str = "MISSIONBOARD_TEST_STORE";

/// True when this run's store-sensitive suites are to use PostgreSQL.
pub fn suites_on_postgres() -> bool {
    std::env::var(STORE_ENV).is_ok_and(|v| v == "postgres")
}

/// The databases this test binary made and has not dropped yet.
static MADE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A fresh, empty database on the test server; its URL. It is dropped by its
/// sandbox when the test is done ([`drop_database`]), else when the binary exits, so
/// a test's leftovers never pile up on a server it was pointed at.
pub fn fresh_database() -> String {
    static AT_EXIT: Once = Once::new();
    let admin = admin_url();
    let name = format!("mb_{}", uuid::Uuid::new_v4().simple());
    admin_sql(&format!("CREATE DATABASE {name}"));
    // SAFETY: registering a plain extern "C" fn to run at process exit (after the
    // cluster's own stop was registered, so it runs first).
    AT_EXIT.call_once(|| unsafe {
        libc::atexit(drop_leftovers);
    });
    MADE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(name.clone());
    missionboard::store::pg_connect::with_database(admin, &name)
}

/// Drop the database of `url` (made by [`fresh_database`]), whoever is still
/// connected to it.
pub fn drop_database(url: &str) {
    let name = url
        .split('?')
        .next()
        .and_then(|base| base.rsplit('/').next())
        .unwrap_or_default();
    let mut made = MADE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = made.iter().position(|n| n == name) {
        let name = made.swap_remove(i);
        drop(made);
        drop_named(&name);
    }
}

fn drop_named(name: &str) {
    if let Err(e) = try_admin_sql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")) {
        // Dropped while a failing test unwinds: say so, never panic again.
        eprintln!("could not drop the test database {name}: {e}");
    }
}

extern "C" fn drop_leftovers() {
    let made = std::mem::take(&mut *MADE.lock().unwrap_or_else(|e| e.into_inner()));
    for name in made {
        drop_named(&name);
    }
}

/// Run `sql` on the test server's admin database (on a thread and runtime of its
/// own, so any test, async or not, may call it).
pub fn admin_sql(sql: &str) {
    if let Err(e) = try_admin_sql(sql) {
        panic!("{e}");
    }
}

fn try_admin_sql(sql: &str) -> Result<(), String> {
    let (admin, sql) = (admin_url().to_string(), sql.to_string());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
                .await
                .map_err(|e| format!("cannot reach the test PostgreSQL at {admin}: {e}"))?;
            tokio::spawn(connection);
            client
                .batch_execute(&sql)
                .await
                .map_err(|e| format!("{sql} on {admin}: {e}"))
        })
    })
    .join()
    .map_err(|_| "the admin statement's thread panicked".to_string())?
}

fn admin_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| match std::env::var(URL_ENV) {
        Ok(url) if !url.trim().is_empty() => url,
        _ => Cluster::start(),
    })
}

struct Cluster;

impl Cluster {
    /// Start a throwaway cluster for this test binary; its admin URL.
    fn start() -> String {
        let dir = std::env::temp_dir().join(format!("mb-pg-{}", std::process::id()));
        let (port, pg_ctl, data, as_root) = start_cluster(&dir, Listen::SocketAndLoopback, |_| {});
        STOP.set((pg_ctl, data, as_root)).ok();
        // SAFETY: registering a plain extern "C" fn to run at process exit.
        unsafe { libc::atexit(stop_cluster) };
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    }
}

/// A cluster of a test's own, set up by `configure` (given the data directory, after
/// initdb, before the server starts; files it writes there are handed to the server's
/// user), stopped and removed when dropped.
#[allow(dead_code)]
pub struct OwnCluster {
    pub port: u16,
    pub dir: PathBuf,
    pg_ctl: PathBuf,
    data: PathBuf,
    as_root: bool,
    listen: Listen,
}

/// Where a test cluster takes connections: its Unix-domain socket (in its `dir`)
/// always, and TCP on 127.0.0.1 unless it is socket-only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    SocketAndLoopback,
    SocketOnly,
}

#[allow(dead_code)]
impl OwnCluster {
    /// Its admin URL (the `postgres` superuser over TCP).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// `pg_ctl restart -m fast`: every connection is cut, the server is back at once.
    pub fn restart(&self) {
        self.pg_ctl(&["-m", "fast", "-w", "restart"]);
    }

    /// `pg_ctl stop -m fast`: the server is gone until [`OwnCluster::start_again`].
    pub fn stop(&self) {
        self.pg_ctl(&["-m", "fast", "-w", "stop"]);
    }

    pub fn start_again(&self) {
        self.pg_ctl(&["-w", "start"]);
    }

    fn pg_ctl(&self, args: &[&str]) {
        let mut c = if self.as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&self.pg_ctl);
            c
        } else {
            Command::new(&self.pg_ctl)
        };
        let options = server_options(self.port, &self.dir, self.listen);
        let log = self.dir.join("server.log");
        let out = c
            .args(["-D", self.data.to_str().unwrap(), "-o", &options, "-l"])
            .arg(&log)
            .args(args)
            .output()
            .expect("run pg_ctl");
        assert!(
            out.status.success(),
            "pg_ctl {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn server_options(port: u16, dir: &Path, listen: Listen) -> String {
    let addresses = match listen {
        Listen::SocketAndLoopback => "127.0.0.1",
        Listen::SocketOnly => "''",
    };
    format!(
        "-p {port} -k {} -c listen_addresses={addresses} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=400",
        dir.display()
    )
}

#[allow(dead_code)]
impl OwnCluster {
    pub fn new_started(configure: impl FnOnce(&Path)) -> OwnCluster {
        OwnCluster::listening(Listen::SocketAndLoopback, configure)
    }

    /// A cluster that takes connections on its Unix-domain socket only (no TCP at
    /// all), trusting every local user: its socket is `dir/.s.PGSQL.<port>`.
    pub fn socket_only() -> OwnCluster {
        OwnCluster::listening(Listen::SocketOnly, |_| {})
    }

    fn listening(listen: Listen, configure: impl FnOnce(&Path)) -> OwnCluster {
        let dir = std::env::temp_dir().join(format!(
            "mb-pg-own-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let (port, pg_ctl, data, as_root) = start_cluster(&dir, listen, configure);
        OwnCluster {
            port,
            dir,
            pg_ctl,
            data,
            as_root,
            listen,
        }
    }
}

impl Drop for OwnCluster {
    fn drop(&mut self) {
        stop_at(&self.pg_ctl, &self.data, self.as_root);
    }
}

/// initdb into `dir/data`, let `configure` adjust it, start the server on a free local
/// port: (port, pg_ctl, data directory, whether it runs as the `postgres` user).
fn start_cluster(
    dir: &Path,
    listen: Listen,
    configure: impl FnOnce(&Path),
) -> (u16, PathBuf, PathBuf, bool) {
    let bin = server_bin().unwrap_or_else(|| {
        panic!(
            "the shared-store tests need PostgreSQL: install it (Debian: apt-get install postgresql) so initdb and pg_ctl are on PATH or under /usr/lib/postgresql/<version>/bin, or set {URL_ENV} to a server's admin URL"
        )
    });
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let data = dir.join("data");
    // The server refuses to run as root: run it as the `postgres` user then.
    let as_root = unsafe { libc::geteuid() } == 0;
    if as_root {
        chown_postgres(dir);
    }
    let port = free_port();
    let run = |program: &Path, args: &[&str]| {
        let mut c = if as_root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        let out = c.args(args).output().expect("run a PostgreSQL tool");
        assert!(
            out.status.success(),
            "{} {args:?} failed: {}{}",
            program.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let data_s = data.to_str().unwrap();
    run(
        &bin.join("initdb"),
        &[
            "-D",
            data_s,
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        ],
    );
    configure(&data);
    if as_root {
        chown_postgres(dir);
    }
    let options = server_options(port, dir, listen);
    let log = dir.join("server.log");
    run(
        &bin.join("pg_ctl"),
        &[
            "-D",
            data_s,
            "-o",
            &options,
            "-l",
            log.to_str().unwrap(),
            "-w",
            "start",
        ],
    );
    (port, bin.join("pg_ctl"), data, as_root)
}

fn stop_at(pg_ctl: &Path, data: &Path, as_root: bool) {
    let mut c = if as_root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(pg_ctl);
        c
    } else {
        Command::new(pg_ctl)
    };
    let _ = c
        .args([
            "-D",
            data.to_str().unwrap_or_default(),
            "-m",
            "immediate",
            "stop",
        ])
        .output();
    if let Some(dir) = data.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

static STOP: OnceLock<(PathBuf, PathBuf, bool)> = OnceLock::new();

extern "C" fn stop_cluster() {
    if let Some((pg_ctl, data, as_root)) = STOP.get() {
        stop_at(pg_ctl, data, *as_root);
    }
}

/// The directory holding initdb and pg_ctl: PATH first, then Debian's layout.
fn server_bin() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            if dir.join("initdb").is_file() && dir.join("pg_ctl").is_file() {
                return Some(dir);
            }
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn chown_postgres(dir: &Path) {
    let out = Command::new("chown")
        .args(["-R", "postgres"])
        .arg(dir)
        .output()
        .expect("chown");
    assert!(
        out.status.success(),
        "running the test PostgreSQL as root needs a `postgres` user to run it as: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free local port")
}
