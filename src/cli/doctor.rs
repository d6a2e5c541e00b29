//! `missionboard doctor`: is this machine ready to run missions? The first line is the
//! verdict; each following line names one part and, when it is missing, the fix.

use std::path::PathBuf;
use std::time::Duration;

use super::Ctx;
use super::out::{self, outln};
use crate::agents::{Agent, Registry, SELF_COMMAND, catalogue};
use crate::config::{self, Config};
use crate::envelope::search;
use crate::ops::handshake;
use crate::{presets, text};

/// `--json` runs the same checks but no sweep: it reads, and changes nothing.
pub(super) fn run(ctx: &Ctx, json: bool) -> anyhow::Result<i32> {
    let mut lines = Vec::new();
    let mut fixes: Vec<String> = Vec::new();
    lines.push(format!("Home:      {}", ctx.paths.home.display()));
    if let Some(ws) = &ctx.paths.workspace {
        lines.push(format!("Workspace: {}", ws.display()));
    }

    let store = match ctx.existing_store() {
        Ok(None) => {
            lines.push(format!("Store:     {}", ctx.no_store()));
            fixes.push("run: missionboard init".into());
            None
        }
        Ok(Some(s)) => {
            let check = s.integrity_check().unwrap_or_else(|e| e.to_string());
            lines.push(format!(
                "Store:     {} (schema v{}, integrity {check})",
                s.location(),
                s.schema_version()?
            ));
            if check != "ok" {
                fixes.push(format!("repair or move aside {}", s.location()));
            }
            Some(s)
        }
        Err(e) => match damage(ctx, &e) {
            Some(found) => {
                let db = ctx.paths.db_path();
                lines.push(format!(
                    "Store:     {} is damaged (integrity {found})",
                    db.display()
                ));
                fixes.push(crate::store::recovery(&db));
                None
            }
            None => {
                lines.push(format!("Store:     {e}"));
                fixes.push("fix the store (see above)".into());
                None
            }
        },
    };

    let envelopes = search::list(&ctx.paths);
    let policies = presets::PRESETS
        .iter()
        .filter(|p| p.kind == presets::Kind::Envelope)
        .count();
    let found_presets = presets::PRESETS
        .iter()
        .filter(|p| p.kind == presets::Kind::Envelope)
        .filter(|p| envelopes.iter().any(|e| e.file_name == p.file_name))
        .count();
    lines.push(format!(
        "Envelopes: {} on the search path ({found_presets} of {policies} presets)",
        envelopes.len()
    ));
    if envelopes.is_empty() {
        fixes.push("run: missionboard init".into());
    }

    match Registry::load(&ctx.paths) {
        Ok(reg) if reg.files.is_empty() => {
            lines.push("Agents:    none declared".into());
            fixes.push("run: missionboard init".into());
        }
        Ok(reg) => {
            lines.push(format!("Agents:    {}", reg.names().join(", ")));
            let agents: Vec<Agent> = reg.all().cloned().collect();
            for check in check_agents(ctx, &agents) {
                lines.push(format!("Agent:     {}", check.line));
                fixes.extend(check.fix);
            }
        }
        Err(e) => {
            lines.push(format!("Agents:    {e}"));
            fixes.push("fix agents.toml (see above)".into());
        }
    }
    lines.extend(permission_warnings(&ctx.paths));

    if let Some(store) = &store {
        let cfg = Config::new(store.clone());
        let url = cfg.get(config::MODEL_BASE_URL)?.unwrap_or_default();
        let model = cfg.get(config::MODEL_NAME)?;
        lines.push(format!(
            "Model:     {url} — {}",
            match &model {
                Some(m) => format!("model {m}"),
                None => "no model-name set: agent-planner and the oracle need one (missionboard config set model-name <model>); the stub agents need none".into(),
            }
        ));
        let configured = model.is_some()
            || cfg.get_with_origin(config::MODEL_BASE_URL)?.1 == config::Origin::Set;
        if configured {
            match probe_model(&cfg) {
                Ok(line) => {
                    lines.push(format!("Endpoint:  {line}"));
                    served_model(&cfg, &mut lines, &mut fixes)?;
                }
                Err(e) => {
                    lines.push(format!("Endpoint:  {e}"));
                    fixes.push("start the model server, or set model-base-url (see above)".into());
                }
            }
        }
        let host = ctx.host(store)?;
        match (!json).then(|| crate::ops::sweep::reclaim(&host)) {
            None | Some(Ok(None)) => {}
            Some(Ok(Some(line))) => lines.push(line),
            Some(Err(e)) => lines.push(format!(
                "Missions: the abandoned-mission sweep did not run ({e}) — a mission whose host process is gone may still read as open."
            )),
        }
        lines.extend(hostless_missions(ctx, host.missions())?);
        lines.extend(clock_lines(store)?);
        let policy = cfg.get(config::DEFAULT_MISSION_POLICY)?;
        lines.push(format!(
            "Defaults:  envelope {}, fleet width {}",
            policy.as_deref().unwrap_or("(none — pass --policy, or missionboard config set default-mission-policy <envelope>)"),
            cfg.fleet_max_parallel()?
        ));
    }
    let abi = crate::confine::landlock_abi();
    lines.push(format!(
        "Sandbox:   Landlock ABI {abi} — {}",
        crate::envelope::sandbox::kernel_summary(abi)
    ));
    lines.push(format!(
        "Beta:      {}",
        if ctx.beta { "on" } else { "off" }
    ));

    fixes.dedup();
    let code = if fixes.is_empty() { 0 } else { 1 };
    if json {
        // Each line is `<Part>: <detail>`; the JSON names the two.
        let checks: Vec<_> = lines
            .iter()
            .map(|l| {
                let (part, detail) = l.split_once(':').unwrap_or(("", l));
                serde_json::json!({"part": part, "detail": detail.trim_start()})
            })
            .collect();
        out::json(&serde_json::json!({
            "ready": fixes.is_empty(),
            "fixes": fixes,
            "checks": checks,
        }))?;
        return Ok(code);
    }
    if fixes.is_empty() {
        outln!("Ready: yes — run: missionboard board")?;
    } else {
        outln!("Ready: no — {}", fixes.join("; "))?;
    }
    for l in lines {
        outln!("{l}")?;
    }
    Ok(code)
}

/// How long the endpoint probe waits for a connection.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Is the configured model endpoint there? A scripted dialog must load; an HTTP
/// endpoint must accept a TCP connection (no request is sent, nothing is spent).
/// When the store refused to open because its file is damaged: what SQLite's full
/// integrity check finds in it, read without writing anything.
fn damage(ctx: &Ctx, err: &anyhow::Error) -> Option<String> {
    let refused = err.downcast_ref::<crate::store::StoreError>()?;
    if !refused.is_damaged() {
        return None;
    }
    let found = crate::store::Store::open_read_only(&ctx.paths.db_path())
        .ok()
        .flatten()
        .map(|s| s.integrity_check().unwrap_or_else(|e| e.to_string()))
        .unwrap_or_else(|| refused.to_string());
    Some(text::excerpt(&found.replace('\n', "; "), 300))
}

fn probe_model(cfg: &Config) -> anyhow::Result<String> {
    use std::net::{TcpStream, ToSocketAddrs};
    let settings = crate::model::ModelSettings::from_config(cfg)?;
    if let Some(path) = settings.scripted_path() {
        crate::model::ModelClient::connect(&settings).map_err(|e| anyhow::anyhow!("{e}"))?;
        return Ok(format!("scripted dialog {} loads", path.display()));
    }
    let url = reqwest::Url::parse(&settings.base_url)
        .map_err(|e| anyhow::anyhow!("model-base-url {:?} is not a URL: {e}", settings.base_url))?;
    let (host, port) = match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => (h.to_string(), p),
        _ => anyhow::bail!("model-base-url {:?} names no host", settings.base_url),
    };
    let unreachable = |why: String| {
        anyhow::anyhow!(
            "{} is unreachable ({why}) — start the model server, or point model-base-url at one",
            settings.base_url
        )
    };
    let addrs: Vec<_> = (host.as_str(), port)
        .to_socket_addrs()
        .map_err(|e| unreachable(e.to_string()))?
        .collect();
    let mut last = String::from("no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, PROBE_TIMEOUT) {
            Ok(_) => return Ok(format!("{} accepts connections", settings.base_url)),
            Err(e) => last = e.to_string(),
        }
    }
    Err(unreachable(last))
}

/// Does the endpoint serve the configured model? `GET {base}/models` (see
/// [`crate::model::served_line`]).
fn served_model(
    cfg: &Config,
    lines: &mut Vec<String>,
    fixes: &mut Vec<String>,
) -> anyhow::Result<()> {
    let settings = crate::model::ModelSettings::from_config(cfg)?;
    if let Some((line, needs_fix)) = crate::model::served_line(&settings, PROBE_TIMEOUT) {
        lines.push(format!("Models:    {line}"));
        if needs_fix {
            fixes.push(
                "point model-base-url and model-name at a model the server serves (see above)"
                    .into(),
            );
        }
    }
    Ok(())
}

/// Skew past this between two clocks that judge each other's heartbeats is warned.
const SKEW_WARN_MS: i64 = 2_000;

/// On a shared store: this machine's clock against the database server's, and
/// each live host's as it last measured it. Heartbeats are stamped by the host's
/// clock and judged by the reader's, so a skewed clock makes a live host on another
/// machine look gone (or a dead one linger).
fn clock_lines(store: &crate::store::Store) -> anyhow::Result<Vec<String>> {
    let Some(here) = store.clock_skew_ms()? else {
        return Ok(Vec::new());
    };
    let me = crate::host::machine_name();
    let mut lines = vec![format!(
        "Clock:     this machine ({me}) is {} the database server's clock{}",
        skew_text(here),
        skew_fix(here, me)
    )];
    let hosts = crate::mission::hosts::Hosts::new(store.clone()).live()?;
    let shown: Vec<String> = hosts
        .iter()
        .map(|h| match h.skew_ms {
            Some(skew) => format!("{} (pid {}, {})", h.machine, h.pid, skew_text(skew)),
            None => format!("{} (pid {})", h.machine, h.pid),
        })
        .collect();
    lines.push(format!(
        "Hosts:     {} live{}{}",
        hosts.len(),
        if shown.is_empty() { "" } else { ": " },
        shown.join(", ")
    ));
    for h in hosts
        .iter()
        .filter(|h| h.skew_ms.is_some_and(|s| s.abs() > SKEW_WARN_MS))
    {
        let skew = h.skew_ms.unwrap_or_default();
        lines.push(format!(
            "Clock:     host pid {} on {} is {} the database server's clock{}",
            h.pid,
            h.machine,
            skew_text(skew),
            skew_fix(skew, &h.machine)
        ));
    }
    Ok(lines)
}

/// `in step with` (within 1 ms), else `N ms behind` / `N ms ahead of`.
fn skew_text(server_minus_local: i64) -> String {
    match server_minus_local {
        -1..=1 => "in step with".into(),
        s if s > 0 => format!("{s} ms behind"),
        s => format!("{} ms ahead of", -s),
    }
}

fn skew_fix(skew: i64, machine: &str) -> String {
    if skew.abs() > SKEW_WARN_MS {
        format!(
            " — more than {} s off: synchronise {machine}'s clock (NTP: chrony or systemd-timesyncd), or hosts on other machines may read as gone",
            SKEW_WARN_MS / 1000
        )
    } else {
        String::new()
    }
}

/// Open missions whose host is gone (the liveness rule of `mission::hosts`, which
/// judges a host on another machine by its heartbeat), so no unit is working them.
/// A record from before hosts were recorded is judged by its mission socket.
fn hostless_missions(
    ctx: &Ctx,
    missions: &crate::mission::Missions,
) -> anyhow::Result<Vec<String>> {
    let run_dir = ctx.paths.socket_dir();
    let mut probe = crate::mission::hosts::Probe::new(missions.store().clone());
    let mut lines = Vec::new();
    for m in missions.list_open(200)? {
        let alive = match &m.host {
            Some(h) => probe.lives(h),
            None => {
                let socket = crate::mission_mcp::socket_path_for(&run_dir, &m.id);
                std::os::unix::net::UnixStream::connect(&socket).is_ok()
            }
        };
        if alive {
            continue;
        }
        lines.push(format!(
            "Hostless:  mission {} ({}, fired {} ago) is open but its host process is gone, so no unit works it — an answer to a pending ask resumes it; 'missionboard mission stop {}' abandons it",
            m.id,
            m.agent_name,
            crate::duration::age(crate::clock::age_secs(m.created_at)),
            m.id
        ));
    }
    Ok(lines)
}

/// A warning for each private file or directory of the home that group or others
/// may read: the store, the logs and the sockets hold agent text and answers.
fn permission_warnings(paths: &crate::paths::Paths) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let db = paths.db_path();
    let mut private: Vec<(PathBuf, u32)> = vec![
        (paths.home.clone(), 0o700),
        (db.clone(), 0o600),
        (PathBuf::from(format!("{}-wal", db.display())), 0o600),
        (PathBuf::from(format!("{}-shm", db.display())), 0o600),
        (paths.log_dir(), 0o700),
    ];
    if let Ok(logs) = std::fs::read_dir(paths.log_dir()) {
        private.extend(logs.flatten().map(|e| (e.path(), 0o600)));
    }
    private
        .into_iter()
        .filter_map(|(path, want)| {
            let mode = std::fs::metadata(&path).ok()?.permissions().mode() & 0o777;
            (mode & 0o077 != 0).then(|| {
                format!(
                    "Warning:   {} is mode {mode:o}, readable beyond its owner — chmod {want:o} {}",
                    path.display(),
                    path.display()
                )
            })
        })
        .collect()
}

/// One agent's doctor line, and the fix it calls for (none: nothing to fix).
struct AgentCheck {
    line: String,
    fix: Option<String>,
}

/// Each declared agent: a catalogue agent that is not installed is said to be so
/// (installing it is a choice, not a fix); any other missing command is a fix; an
/// installed one gets a dry handshake (all at once, each under a timeout).
fn check_agents(ctx: &Ctx, agents: &[Agent]) -> Vec<AgentCheck> {
    let mut checks: Vec<Option<AgentCheck>> = Vec::new();
    let mut to_greet = Vec::new();
    for agent in agents {
        if agent.command == SELF_COMMAND {
            checks.push(None);
            continue;
        }
        if crate::paths::locate_program(&agent.program().to_string_lossy(), None).is_none() {
            checks.push(Some(if let Some(id) = &agent.about.registry
                && !agent.is_catalogue_entry()
            {
                // Declared from the ACP registry: its distribution says how.
                let install = agent
                    .about
                    .install
                    .clone()
                    .unwrap_or_else(|| format!("missionboard agent install {}", agent.name));
                AgentCheck {
                    line: format!(
                        "{}: not installed (ACP registry {id}) — {install}",
                        agent.name
                    ),
                    fix: Some(format!("{}: {install}", agent.name)),
                }
            } else if agent.is_catalogue_entry() {
                AgentCheck {
                    line: format!(
                        "{}: not installed — {}",
                        agent.name,
                        agent.about.install.as_deref().unwrap_or("install it")
                    ),
                    fix: None,
                }
            } else {
                AgentCheck {
                    line: format!(
                        "{}: command {:?} is not on PATH — install it, or fix its declaration in agents.toml",
                        agent.name, agent.command
                    ),
                    fix: Some("install the missing agent commands (see below)".into()),
                }
            }));
            continue;
        }
        to_greet.push((checks.len(), agent.clone()));
        checks.push(None);
    }
    if !to_greet.is_empty() {
        let greeted = greet_all(ctx, to_greet.iter().map(|(_, a)| a.clone()).collect());
        for ((slot, agent), result) in to_greet.iter().zip(greeted) {
            checks[*slot] = Some(match result {
                Ok(line) => AgentCheck {
                    line: format!("{}: {line}", agent.name),
                    fix: None,
                },
                Err(f) => AgentCheck {
                    line: format!("{}: {}", agent.name, f.said()),
                    fix: Some(format!("{}: {}", agent.name, f.fix)),
                },
            });
        }
    }
    checks.into_iter().flatten().collect()
}

/// The sandbox a dry handshake runs under: the default envelope's (config
/// default-mission-policy, else the shipped default preset), else the baseline.
fn default_sandbox(ctx: &Ctx) -> crate::envelope::sandbox::SandboxDecl {
    let configured = ctx.existing_store().ok().flatten().and_then(|s| {
        Config::new(s)
            .get(config::DEFAULT_MISSION_POLICY)
            .ok()
            .flatten()
    });
    let name = configured.unwrap_or_else(|| "default".to_string());
    search::load(&ctx.paths, &name)
        .map(|l| l.declared.sandbox_or_baseline())
        .unwrap_or_else(|_| crate::envelope::sandbox::SandboxDecl::baseline())
}

/// Dry handshakes with `agents`, concurrently: `ready — …` or the failure.
fn greet_all(ctx: &Ctx, agents: Vec<Agent>) -> Vec<Result<String, handshake::Failure>> {
    let decl = default_sandbox(ctx);
    let runtime = match crate::runtime::multi_thread() {
        Ok(r) => r,
        Err(e) => {
            return agents
                .iter()
                .map(|_| {
                    Err(handshake::Failure {
                        what: format!("no handshake: {e}"),
                        fix: "see above".into(),
                    })
                })
                .collect();
        }
    };
    let paths = ctx.paths.clone();
    runtime.block_on(async move {
        let runs = agents
            .iter()
            .map(|agent| handshake::greet(&paths, agent, &decl));
        futures::future::join_all(runs).await
    })
}

/// `doctor --agent <name>`: where the agent is, its handshake, and every grant its
/// unit gets under the default envelope in this directory.
pub(super) fn run_agent(ctx: &Ctx, name: &str, json: bool) -> anyhow::Result<i32> {
    let reg = Registry::load(&ctx.paths)?;
    let (agent, declared_in) = match reg.get(name) {
        Some(a) => (a.clone(), a.source.display().to_string()),
        None => match catalogue::get(name) {
            Some(a) => (
                a.clone(),
                "the built-in catalogue (not declared in agents.toml)".to_string(),
            ),
            None => anyhow::bail!(
                "doctor --agent: no agent {name:?} — declared: {}; in the catalogue: {}",
                reg.names().join(", "),
                catalogue::names().join(", ")
            ),
        },
    };
    let mut lines = vec![
        format!("Agent:     {} — {}", agent.name, agent.command_line()),
        format!("Declared:  {declared_in}"),
    ];
    let mut fixes = Vec::new();
    if agent.command != SELF_COMMAND {
        match catalogue::installed_version(&agent) {
            Some((path, version)) => lines.push(format!(
                "Installed: {}{}",
                path.display(),
                version
                    .map(|v| format!(" (version {v})"))
                    .unwrap_or_default()
            )),
            None => {
                let install =
                    agent.about.install.clone().unwrap_or_else(|| {
                        "install it, or fix its declaration in agents.toml".into()
                    });
                lines.push(format!("Installed: no — {install}"));
                fixes.push(install);
            }
        }
    }
    if fixes.is_empty() {
        match greet_all(ctx, vec![agent.clone()]).remove(0) {
            Ok(line) => lines.push(format!("Handshake: {line}")),
            Err(f) => {
                lines.push(format!("Handshake: {}", f.said()));
                fixes.push(f.fix);
            }
        }
    }
    let decl = default_sandbox(ctx);
    let model_url = ctx
        .existing_store()
        .ok()
        .flatten()
        .and_then(|s| Config::new(s).get(config::MODEL_BASE_URL).ok().flatten());
    let endpoints = agent.model_endpoints(&ctx.paths.cwd);
    for e in &endpoints {
        let port = e
            .port
            .map_or("not a URL".to_string(), |p| format!("port {p}"));
        lines.push(format!(
            "Endpoint:  {} ({port}) — from {}",
            crate::text::sanitize(&e.url),
            crate::text::sanitize(&e.found)
        ));
    }
    if endpoints.is_empty() && agent.command != SELF_COMMAND {
        lines.push(format!(
            "Endpoint:  none found — {{model}} is missionboard's model-base-url{}",
            model_url
                .as_deref()
                .map(|u| format!(" ({u})"))
                .unwrap_or_default()
        ));
    }
    match crate::ops::grants::dry_grants(
        &ctx.paths,
        &agent,
        &decl,
        &ctx.paths.cwd,
        model_url.as_deref(),
    ) {
        Ok(grants) => lines.extend(grants.into_iter().map(|g| format!("Grant:     {g}"))),
        Err(e) => {
            lines.push(format!("Grant:     refused — {e}"));
            fixes.push("fire from another directory (see above)".into());
        }
    }
    if let Some(limits) = &agent.about.limits {
        lines.push(format!("Limits:    {limits}"));
    }
    let code = if fixes.is_empty() { 0 } else { 1 };
    if json {
        out::json(&serde_json::json!({
            "ready": fixes.is_empty(),
            "fixes": fixes,
            "lines": lines,
        }))?;
        return Ok(code);
    }
    if fixes.is_empty() {
        outln!("Ready: yes — {} can be fired at", agent.name)?;
    } else {
        outln!("Ready: no — {}", fixes.join("; "))?;
    }
    for l in lines {
        outln!("{l}")?;
    }
    Ok(code)
}
