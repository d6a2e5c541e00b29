//! A scratch world for one bench group: its own home and store, an envelope that
//! approves everything, and stub agents declared with scripts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::sql::params;
use serde_json::Value;

use crate::acp_client::{UnitSpec, mission_meta};
use crate::config::Config;
use crate::ops::host::{Host, Hosting};
use crate::paths::Paths;
use crate::store::{Location, Store};

/// The envelope every bench mission runs under.
pub const POLICY: &str = "bench";

/// The env var a parent bench hands a child group its PostgreSQL admin URL in (not
/// the child's arguments, which every user's `ps` shows).
pub const POSTGRES_ENV: &str = "MISSIONBOARD_BENCH_POSTGRES";

pub struct Scratch {
    dir: PathBuf,
    pub paths: Paths,
    pub store: Store,
    /// On PostgreSQL: the admin URL and the throwaway database made through it.
    database: Option<(String, String)>,
}

impl Scratch {
    /// A scratch home whose store is its own `board.db`, or (`scale.postgres`) a
    /// throwaway database on the server [`POSTGRES_ENV`] names, dropped with it.
    pub fn new(scale: &super::Scale) -> anyhow::Result<Scratch> {
        let dir = std::env::temp_dir().join(format!(
            "mb-bench-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        ));
        let home = dir.join("home");
        let cwd = dir.join("work");
        std::fs::create_dir_all(&home)?;
        std::fs::create_dir_all(&cwd)?;
        std::fs::write(
            home.join(format!("hitl-policy-{POLICY}.json")),
            r#"{"default_action":"approve","rules":[]}"#,
        )?;
        let paths = Paths::resolve(home, cwd);
        let home_file = Store::open(&paths.db_path())?;
        let (store, database) = if scale.postgres {
            let admin = std::env::var(POSTGRES_ENV).map_err(|_| {
                anyhow::anyhow!(
                    "bench: a PostgreSQL group needs the server's admin URL in {POSTGRES_ENV} (bench --postgres sets it)"
                )
            })?;
            let name = format!("mb_bench_{}", uuid::Uuid::new_v4().simple());
            admin_sql(&admin, &format!("CREATE DATABASE {name}"))?;
            let url = crate::store::pg_connect::with_database(&admin, &name);
            // The home names its store, as `config set store-url` leaves it.
            Config::new(home_file).set(crate::config::STORE_URL, &url)?;
            let store = Store::open_at(&Location::Postgres(url))?;
            (store, Some((admin, name)))
        } else {
            (home_file, None)
        };
        // The fleet figures hold every unit at once.
        Config::new(store.clone()).set(crate::config::FLEET_MAX_PARALLEL, "0")?;
        Ok(Scratch {
            dir,
            paths,
            store,
            database,
        })
    }

    pub fn home(&self) -> &Path {
        &self.paths.home
    }

    /// A host over the scratch home, as a surface that hosts units opens it (its
    /// fleet reaps units whose mission rests; close it when done).
    pub fn host(&self) -> anyhow::Result<Host> {
        Host::open(&self.paths, &self.store, Hosting::Units)
    }

    /// Write `script` as `<name>.json` in the scratch home.
    pub fn write_script(&self, name: &str, script: &Value) -> anyhow::Result<PathBuf> {
        let path = self.home().join(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(script)?)?;
        Ok(path)
    }

    /// A bare unit: this binary's stub running `script` in the scratch working
    /// directory, with no env and no mission tools (callers add what they measure).
    pub fn stub_unit(&self, script: &Path, mission_id: &str) -> anyhow::Result<UnitSpec> {
        Ok(UnitSpec {
            program: std::env::current_exe()?,
            args: vec![
                "stub-agent".into(),
                "--script".into(),
                script.display().to_string(),
            ],
            env: Default::default(),
            cwd: self.paths.cwd.clone(),
            additional_dirs: Vec::new(),
            mcp_servers: Vec::new(),
            meta: mission_meta(mission_id),
            pid_slot: None,
            supervisor: None,
        })
    }

    /// Declare agent `stub`, which files a result and lands; the path it writes its
    /// prompts to is returned (in the cwd: units never write the home, the sandbox
    /// holds it).
    pub fn declare_landing_stub(&self) -> anyhow::Result<PathBuf> {
        let transcript = self.paths.cwd.join("transcript.log");
        self.declare_stub(
            "stub",
            &report_and_land(),
            &[("STUB_TRANSCRIPT", &transcript)],
        )?;
        Ok(transcript)
    }

    /// Write `script` and declare agent `name` running the stub on it, with `env`.
    pub fn declare_stub(
        &self,
        name: &str,
        script: &Value,
        env: &[(&str, &Path)],
    ) -> anyhow::Result<PathBuf> {
        let script_path = self.write_script(&format!("script-{name}"), script)?;
        let mut toml = std::fs::read_to_string(self.home().join("agents.toml")).unwrap_or_default();
        let env: Vec<String> = env
            .iter()
            .map(|(k, v)| format!("{k} = {:?}", v.display().to_string()))
            .collect();
        toml.push_str(&format!(
            "[agents.{name}]\ncommand = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\nenv = {{ {} }}\n\n",
            script_path.display().to_string(),
            env.join(", ")
        ));
        std::fs::write(self.home().join("agents.toml"), toml)?;
        Ok(script_path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some((admin, name)) = &self.database {
            // FORCE: units winding down may still hold connections to it.
            if let Err(e) = admin_sql(
                admin,
                &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
            ) {
                eprintln!("bench: could not drop the scratch database {name}: {e}");
            }
        }
    }
}

/// Run `sql` on the server's admin database.
fn admin_sql(admin: &str, sql: &str) -> anyhow::Result<()> {
    let fail = |e: crate::store::sql::Error| {
        anyhow::anyhow!(
            "bench: {sql} on {}: {e}",
            crate::store::pg_connect::redact(admin)
        )
    };
    crate::store::postgres::PgSession::connect(admin)
        .and_then(|mut s| s.batch(sql))
        .map_err(fail)
}

/// Seed `missions` missions (every `missions / asks`-th one open with a pending
/// question) in one transaction of prepared inserts.
pub fn seed(scratch: &Scratch, missions: usize, asks: usize) -> anyhow::Result<()> {
    let now = crate::clock::now_ms();
    let every = (missions / asks.max(1)).max(1);
    // Past the spend rollup's per-row triggers on PostgreSQL, which would take the
    // load many minutes; the rollup is rebuilt once after it.
    scratch.store.write(|tx| crate::mission::spend_rollup::bulk_load(tx, |tx| {
        let mut m = tx.prepare(
            "INSERT INTO missions (id, intent, agent_name, policy_name, status, status_reason, created_at, updated_at)
             VALUES (?1, ?2, 'stub', 'bench', ?3, ?4, ?5, ?5)",
        )?;
        let mut a = tx.prepare(
            "INSERT INTO asks (id, tools_name, tool_name, args_summary, policy_name, agent_name, mission_id, created_at, expires_at)
             VALUES (?1, 'mission', 'mission_ask_attention', ?2, 'bench', 'stub', ?3, ?4, 0)",
        )?;
        let mut raised = 0;
        for i in 0..missions {
            let id = format!("{i:08x}-bench-mission");
            let asking = i % every == 0 && raised < asks;
            let (status, reason) = match i % 5 {
                _ if asking => ("open", None),
                0 => ("landed", None),
                1 => ("stuck", Some("compute bound exhausted")),
                2 => ("derailed", Some("unit turn failed")),
                3 => ("abandoned", Some("stopped by the operator")),
                _ => ("open", None),
            };
            let created = now - (missions - i) as i64 * 1000;
            m.execute(params![id, format!("mission {i}: tidy module {}", i % 97), status, reason, created])?;
            if asking {
                a.execute(params![format!("{i:08x}-bench-ask"), format!("question {i}: proceed?"), id, created])?;
                raised += 1;
            }
        }
        Ok(())
    }))?;
    if scratch.store.is_postgres() {
        // A bulk load leaves PostgreSQL without planner statistics and the count
        // rows' dead versions, which autovacuum clears within a minute of a real
        // load: measure the settled database, as SQLite's file is.
        scratch.store.with(|c| c.execute_batch("VACUUM ANALYZE"))?;
    }
    Ok(())
}

/// A one-turn stub script of these steps.
pub fn one_turn(steps: Value) -> Value {
    serde_json::json!({"name": "bench", "turns": [{"steps": steps}]})
}

/// The stub's script that files a result and lands, in one turn.
pub fn report_and_land() -> Value {
    one_turn(
        serde_json::json!([{"report": {"kind": "result", "summary": "done"}}, {"finish": "landed"}]),
    )
}

/// Wait for `cond` (checked every `every`), or fail naming `what` after `limit`.
pub async fn until(
    what: &str,
    limit: Duration,
    every: Duration,
    mut cond: impl FnMut() -> bool,
) -> anyhow::Result<()> {
    crate::clock::poll_until(limit, every, || cond().then_some(()))
        .await
        .ok_or_else(|| anyhow::anyhow!("bench: timed out after {limit:?} waiting for {what}"))
}

/// Wait until `fleet` holds no unit: every one it hosted has been reaped.
pub async fn until_reaped(host: &Host, what: &str, limit: Duration) -> anyhow::Result<()> {
    tokio::time::timeout(limit, host.wait_all_units())
        .await
        .map_err(|_| anyhow::anyhow!("bench: timed out after {limit:?} waiting for {what}"))
}

/// How many child processes this process has (every thread's, from
/// `/proc/self/task/*/children`): zero once every unit it started has exited.
pub fn child_processes() -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .map(|t| {
            std::fs::read_to_string(t.path().join("children"))
                .map_or(0, |c| c.split_whitespace().count())
        })
        .sum()
}

/// This process's resident set, in bytes (`VmRSS` of /proc/self/status).
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
