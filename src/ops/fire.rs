//! Fire: the operator's verb that starts a mission. The `/mission` grammar (parsing
//! is pure, and so is resolving a parsed line against what was read from disk and
//! config, so every refusal string is tested without a terminal), the agent and
//! envelope defaults, the envelope's truthful labels, and the one dispatch every
//! surface fires through. The intent and the envelope name are checked once, when
//! their values are built ([`Intent`], [`EnvelopeName`]).

use std::path::PathBuf;

use crate::agents::{AgentCaps, Registry};
use crate::config::{self, Config};
use crate::envelope::bounds::{self, ComputeField, envelope_summary};
use crate::envelope::format::Envelope;
use crate::envelope::search;
use crate::fleet::{DispatchRequest, Dispatched, NameRefused};
use crate::mission::check::{CheckChoice, NewCheck};
use crate::mission::compute::ComputeLedger;
use crate::mission::{EnvelopeName, Intent, Mission};
use crate::ops::host::Host;
use crate::paths::Paths;

pub const USAGE: &str = "usage: /mission [--policy <envelope>] [agent-name] <intent> — /mission with no arguments lists the envelopes";

/// A parsed `/mission` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MissionLine {
    /// No arguments: list the envelopes (fires nothing).
    List,
    Fire {
        policy: Option<String>,
        agent: Option<String>,
        intent: String,
    },
}

/// Parse the arguments after `/mission`. Flags come first and parsing stops at the
/// first non-flag; the first word is an agent only if `is_agent` knows it.
pub fn parse(args: &str, is_agent: impl Fn(&str) -> bool) -> Result<MissionLine, String> {
    let mut words = args.split_whitespace().peekable();
    if words.peek().is_none() {
        return Ok(MissionLine::List);
    }
    let mut policy = None;
    while let Some(w) = words.peek().copied() {
        if !w.starts_with("--") {
            break;
        }
        words.next();
        if w == "--policy" {
            match words.next() {
                Some(v) => policy = Some(v.to_string()),
                None => return Err(format!("--policy needs an envelope name: {USAGE}")),
            }
        } else if let Some(v) = w.strip_prefix("--policy=") {
            if v.is_empty() {
                return Err(format!("--policy needs an envelope name: {USAGE}"));
            }
            policy = Some(v.to_string());
        } else {
            return Err(format!(
                "unknown /mission flag {w:?}: the only flag is --policy <envelope>, and flags must come before the agent and intent ({USAGE})"
            ));
        }
    }
    let rest: Vec<&str> = words.collect();
    let Some(first) = rest.first() else {
        return Err(USAGE.to_string());
    };
    let (agent, intent) = if is_agent(first) && rest.len() > 1 {
        (Some(first.to_string()), rest[1..].join(" "))
    } else {
        (None, rest.join(" "))
    };
    Ok(MissionLine::Fire {
        policy,
        agent,
        intent,
    })
}

/// A line resolved to what the fleet is asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub agent: String,
    /// True when the line named the agent (else the default mission agent).
    pub agent_named: bool,
    pub envelope: EnvelopeName,
    /// Where the envelope was named: `--policy` or `default-mission-policy` (or
    /// `picked`, or an editor session's envelope option).
    pub origin: &'static str,
    /// Where the agent was named: `/mission` (the line) or `default-mission-agent`
    /// (or `picked`).
    pub agent_origin: &'static str,
    pub intent: Intent,
}

/// Apply the defaults and look the envelope up among those listed; a `policy` given
/// was typed as `--policy`.
pub fn resolve(
    policy: Option<String>,
    agent: Option<String>,
    intent: String,
    data: &PickerData,
) -> Result<Resolved, String> {
    resolve_typed(policy.map(|p| (p, "--policy")), agent, intent, data)
}

/// [`resolve`], with where the envelope given was named (`--policy`, or an editor
/// session's envelope option), so a refusal of it names that.
pub fn resolve_typed(
    policy: Option<(String, &'static str)>,
    agent: Option<String>,
    intent: String,
    data: &PickerData,
) -> Result<Resolved, String> {
    let (agent, agent_named) = match agent {
        Some(a) => (a, true),
        None => match data.default_agent.clone().filter(|a| !a.trim().is_empty()) {
            Some(a) => (a, false),
            None => {
                return Err("no mission agent: name one as `/mission <agent-name> <intent>`, or set a default with `missionboard config set default-mission-agent <name>`".into());
            }
        },
    };
    let (envelope, origin) = match policy {
        Some(given) => given,
        None => match data
            .default_envelope
            .clone()
            .filter(|p| !p.trim().is_empty())
        {
            Some(p) => (p, "default-mission-policy"),
            None => {
                return Err("no mission envelope: name one as `/mission --policy <envelope> <intent>`, or set a default with `missionboard config set default-mission-policy <envelope>` — a mission must name the HITL policy that bounds it. /mission with no arguments lists the envelopes".into());
            }
        },
    };
    lookup_envelope(&envelope, origin, &data.envelopes)?;
    Ok(Resolved {
        agent,
        agent_named,
        envelope: EnvelopeName::new(&envelope).map_err(|e| e.to_string())?,
        origin,
        agent_origin: if agent_named {
            "/mission"
        } else {
            "default-mission-agent"
        },
        intent: Intent::new(&intent).map_err(|e| e.to_string())?,
    })
}

/// Refuse a blank or path-like name, and a name no listed file answers to.
pub fn lookup_envelope<'a>(
    name: &str,
    origin: &str,
    envelopes: &'a [EnvelopeEntry],
) -> Result<&'a EnvelopeEntry, String> {
    let file = search::file_name(name)?;
    envelopes
        .iter()
        .find(|e| e.file_name == file)
        .ok_or_else(|| {
            let listed: Vec<String> = envelopes.iter().map(|e| e.file_name.clone()).collect();
            envelope_refusal(name, Some(origin), "", &listed)
        })
}

/// Where the operator typed what a fire names, so a refusal of it names that place
/// (`--policy`, `default-mission-policy`, `picked`, an editor session's envelope
/// option, `mission_start`'s fields); `None`: the name itself is all there is to say
/// (a command line's positional agent, a mission's own record).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TypedAt {
    pub agent: Option<&'static str>,
    pub envelope: Option<&'static str>,
}

/// The one wording of an envelope a fire cannot run under, on every surface: the
/// name as typed and where (`origin`), then what is wrong with it. `why` is the
/// loader's reason for a file that is there but does not load (empty: not looked
/// at); `on_path` are the envelope files the search path holds.
pub fn envelope_refusal(name: &str, origin: Option<&str>, why: &str, on_path: &[String]) -> String {
    let at = origin.map(|o| format!(" ({o})")).unwrap_or_default();
    let file = match search::file_name(name) {
        Ok(file) => file,
        Err(e) => return format!("mission envelope {name:?}{at}: {e}"),
    };
    if on_path.contains(&file) {
        return format!(
            "mission envelope {name:?}{at} does not load: {why} — fix the file, or name another (`missionboard vet --all` checks every envelope)"
        );
    }
    let hint = if on_path.is_empty() {
        " and none were found (run `missionboard init` to seed the presets)".to_string()
    } else {
        format!(". Available: {}", on_path.join(", "))
    };
    format!("unknown mission envelope {name:?}{at}: no such policy file on the search path{hint}")
}

/// The one wording of an agent a fire cannot start, on every surface: the name as
/// typed and where (`origin`), then which agents there are.
pub fn agent_refusal(name: &str, origin: Option<&str>, declared: &[String]) -> String {
    let at = origin.map(|o| format!(" ({o})")).unwrap_or_default();
    if name.trim().is_empty() {
        return format!("no mission agent{at}: name one — see 'missionboard agent list'");
    }
    let hint = if declared.is_empty() {
        "no agents are declared; run 'missionboard init' to seed agents.toml".to_string()
    } else {
        format!(
            "declared agents: {} (see 'missionboard agent list')",
            declared.join(", ")
        )
    };
    format!("unknown mission agent {name:?}{at}: not in agents.toml nor the catalogue — {hint}")
}

/// A dispatch refusal worded for whoever fired: a refused agent or envelope is named
/// as typed, and where ([`TypedAt`]); every other error passes as it is.
fn for_operator(e: anyhow::Error, typed: TypedAt) -> anyhow::Error {
    match e.downcast_ref::<NameRefused>() {
        Some(NameRefused::NoAgent) => anyhow::anyhow!(agent_refusal("", typed.agent, &[])),
        Some(NameRefused::UnknownAgent { name, declared }) => {
            anyhow::anyhow!(agent_refusal(name, typed.agent, declared))
        }
        Some(NameRefused::Envelope { name, why, on_path }) => {
            anyhow::anyhow!(envelope_refusal(name, typed.envelope, why, on_path))
        }
        None => e,
    }
}

/// Between two labels (a label has a ` · ` of its own).
pub const LABEL_SEP: &str = "; ";

/// Each bound `e` sets, labelled for an agent that offered `caps` when it last
/// started (`None`: not known yet) — the same `bound_status` `mission show` uses —
/// then what a crossed bound does, then each sandbox limit with its kernel label.
pub fn bound_labels(e: &EnvelopeEntry, caps: Option<&AgentCaps>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(b) = &e.compute {
        out.extend(
            ComputeField::ALL
                .into_iter()
                .filter(|f| f.is_set(b))
                .map(|f| bounds::label(f, b, caps)),
        );
        if !out.is_empty() {
            out.push(format!("onExhausted {}", b.on_exhausted.as_str()));
        }
    }
    out.extend(e.sandbox.iter().map(|(limit, l)| format!("{limit} · {l}")));
    out.extend(e.check.clone());
    out
}

/// `check `cargo test -q` · timeout 10m0s · maxChecks 3 · enforced`: an envelope's
/// check as the picker and the fire notice label it (the host runs it on every
/// `landed` verdict, so it is always enforced; `optional` says a fire may skip it).
pub fn check_label(check: &crate::envelope::format::CheckDecl, max_checks: u64) -> String {
    format!(
        "check `{}` · timeout {} · maxChecks {max_checks} · enforced{}",
        crate::text::one_line(&check.command),
        crate::duration::format(check.timeout),
        if check.optional {
            " · optional (--no-check skips it)"
        } else {
            ""
        }
    )
}

/// One envelope as the picker lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeEntry {
    pub file_name: String,
    pub short_name: String,
    /// The §7 character line (empty for an unparseable file).
    pub summary: String,
    /// Its compute bounds (`None`: the file does not load, so it bounds nothing).
    pub compute: Option<crate::envelope::format::ComputeBounds>,
    /// `(limit, label)` for each sandbox limit it sets, on this kernel.
    pub sandbox: Vec<(&'static str, &'static str)>,
    /// Its check, labelled (`None`: it names none).
    pub check: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentEntry {
    pub name: String,
    pub description: String,
    /// What it offered when it last started a unit here (`None`: it never did).
    pub caps: Option<crate::agents::AgentCaps>,
}

/// What the picker needs from disk and config, read by an effect.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PickerData {
    pub envelopes: Vec<EnvelopeEntry>,
    pub agents: Vec<AgentEntry>,
    pub default_agent: Option<String>,
    pub default_envelope: Option<String>,
    /// The templates on the search path, each with its parameters (a template that
    /// does not load is listed with its error).
    pub templates: Vec<TemplateEntry>,
}

/// One template as the picker and the web page list it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateEntry {
    pub name: String,
    /// Its parameters by name, sorted (empty when it does not load).
    pub params: Vec<ParamEntry>,
    /// Why it does not load, on one line (`None`: it loads).
    pub error: Option<String>,
}

/// One parameter of a template: its name, what it is, and its default (`None`: a
/// fire must give it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParamEntry {
    pub name: String,
    pub description: String,
    pub default: Option<String>,
}

impl TemplateEntry {
    /// `label=… repo=…`: its parameters as a fire line takes them, or why it does
    /// not load.
    pub fn params_line(&self) -> String {
        match &self.error {
            Some(e) => format!("(does not load: {e})"),
            None => self
                .params
                .iter()
                .map(|p| format!("{}=…", p.name))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// The templates on the host's search path, read afresh, as the picker and the web
/// page list them (every text sanitized: a template file is the operator's, but
/// a workspace's may come from anyone's repository).
pub fn template_entries(host: &Host) -> Vec<TemplateEntry> {
    let clean = |s: &str| crate::text::one_line(&crate::text::sanitize(s));
    crate::sched::template::list(host.paths())
        .into_iter()
        .map(|l| match &l.template {
            Ok(t) => TemplateEntry {
                name: l.name,
                params: t
                    .params
                    .iter()
                    .map(|(name, p)| ParamEntry {
                        name: clean(name),
                        description: clean(&p.description),
                        default: p.default.as_deref().map(clean),
                    })
                    .collect(),
                error: None,
            },
            Err(e) => TemplateEntry {
                name: l.name,
                params: Vec::new(),
                error: Some(clean(e)),
            },
        })
        .collect()
}

/// A mission ready to dispatch: every value already checked.
#[derive(Debug, Clone)]
pub struct Fire {
    pub agent: String,
    pub envelope: EnvelopeName,
    pub intent: Intent,
    /// Absolute working directory for the unit; `None`: the host's.
    pub cwd: Option<PathBuf>,
    /// Work in a git worktree of its own (else the envelope's `workspace` decides).
    pub worktree: bool,
    /// The firing editor session, recorded as the mission's parent so its reports
    /// stream there while that session lives.
    pub parent_session: Option<String>,
    /// Where the agent and the envelope were typed, for a refusal's words.
    pub typed_at: TypedAt,
    /// `--check` / `--no-check` (else the envelope's check).
    pub check: CheckChoice,
    /// `--add-dir`: extra roots as typed (checked by [`dispatch`]).
    pub add_dirs: Vec<PathBuf>,
}

/// `--add-dir` paths as the unit is granted them: each an existing directory,
/// canonical (symlinks resolved), outside the missionboard home, once.
pub fn checked_add_dirs(
    paths: &crate::paths::Paths,
    dirs: &[PathBuf],
) -> anyhow::Result<Vec<PathBuf>> {
    let home = paths
        .home
        .canonicalize()
        .unwrap_or_else(|_| paths.home.clone());
    let mut out: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        let shown = dir.display();
        let real = dir.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                anyhow::anyhow!("--add-dir {shown}: does not exist — name an existing directory")
            }
            _ => anyhow::anyhow!("--add-dir {shown}: cannot be read: {e}"),
        })?;
        if !real.is_dir() {
            anyhow::bail!("--add-dir {shown}: is not a directory — name a directory");
        }
        if real.starts_with(&home) || home.starts_with(&real) {
            anyhow::bail!(
                "--add-dir {shown}: {} holds the missionboard home ({}), which no unit may be granted — name a directory outside it",
                real.display(),
                home.display()
            );
        }
        if !out.contains(&real) {
            out.push(real);
        }
    }
    Ok(out)
}

impl Fire {
    pub fn new(agent: &str, envelope: EnvelopeName, intent: Intent) -> Fire {
        Fire {
            agent: agent.trim().to_string(),
            envelope,
            intent,
            cwd: None,
            worktree: false,
            parent_session: None,
            typed_at: TypedAt::default(),
            check: CheckChoice::FromEnvelope,
            add_dirs: Vec::new(),
        }
    }

    /// What a resolved `/mission` line (or a picker's choice) fires.
    pub fn resolved(r: &Resolved) -> Fire {
        let mut fire = Fire::new(&r.agent, r.envelope.clone(), r.intent.clone());
        fire.typed_at = TypedAt {
            agent: Some(r.agent_origin),
            envelope: Some(r.origin),
        };
        fire
    }
}

/// Dispatch on `fleet`, the process's one host: validate, admit, start the unit,
/// record the mission. A refusal leaves no record and no process.
pub async fn dispatch(host: &Host, fire: Fire) -> anyhow::Result<Dispatched> {
    let fleet = match host.started_fleet() {
        Some(f) => f.clone(),
        None => {
            let h = host.clone();
            crate::store::blocking(move || h.fleet()).await?
        }
    };
    let typed = fire.typed_at;
    let add_dirs = checked_add_dirs(host.paths(), &fire.add_dirs)?;
    let req = DispatchRequest {
        agent_name: fire.agent,
        intent: fire.intent,
        envelope: fire.envelope,
        cwd: fire.cwd,
        worktree: fire.worktree,
        check: fire.check,
        add_dirs,
    };
    match fire.parent_session {
        Some(parent) => fleet.dispatch_for_session(req, &parent).await,
        None => fleet.dispatch(req).await,
    }
    .map_err(|e| for_operator(e, typed))
}

/// What a `/mission` line came to.
pub enum LineOutcome {
    /// No arguments: what the picker lists (nothing fired).
    List(PickerData),
    /// The fleet accepted the mission.
    Fired {
        resolved: Resolved,
        /// The envelope's bounds labelled for the agent that runs it.
        labels: Vec<String>,
        dispatched: Box<Dispatched>,
    },
}

/// Where a `/mission` line is fired from, and what stands in for `--policy` when
/// the line names none.
pub struct LineFrom<'a> {
    /// An envelope picked beside the line (an editor session's option), and the
    /// origin the notice gives it; `None`: the configured default.
    pub envelope_pick: Option<(String, &'static str)>,
    /// The firing editor session, if any.
    pub parent_session: Option<&'a str>,
}

/// A `/mission` line read and resolved, not yet fired.
pub enum Line {
    /// No arguments: what the picker lists.
    List(PickerData),
    Fire {
        resolved: Resolved,
        /// The envelope's bounds labelled for the agent that runs it.
        labels: Vec<String>,
        fire: Box<Fire>,
    },
}

/// Read what the picker lists, parse a `/mission` line, resolve the defaults and
/// label the envelope for the agent. A refusal is its text.
pub async fn read_line(host: &Host, args: &str, from: LineFrom<'_>) -> Result<Line, String> {
    let data = {
        let host = host.clone();
        crate::store::blocking(move || load_picker(&host)).await?
    };
    let MissionLine::Fire {
        policy,
        agent,
        intent,
    } = parse(args, |w| data.agents.iter().any(|a| a.name == w))?
    else {
        return Ok(Line::List(data));
    };
    let (pick, pick_origin) = match from.envelope_pick {
        Some((p, origin)) if policy.is_none() => (Some(p), Some(origin)),
        _ => (None, None),
    };
    let policy = match (policy, pick, pick_origin) {
        (Some(p), ..) => Some((p, "--policy")),
        (None, Some(p), Some(origin)) => Some((p, origin)),
        _ => None,
    };
    let resolved = resolve_typed(policy, agent, intent, &data)?;
    let labels = labels_for(&data, &resolved);
    let mut fire = Fire::resolved(&resolved);
    fire.parent_session = from.parent_session.map(str::to_string);
    Ok(Line::Fire {
        resolved,
        labels,
        fire: Box::new(fire),
    })
}

/// Run a `/mission` line on `fleet`: [`read_line`], then dispatch. A refusal is its
/// text.
pub async fn mission_line(
    host: &Host,
    args: &str,
    from: LineFrom<'_>,
) -> Result<LineOutcome, String> {
    let (resolved, labels, fire) = match read_line(host, args, from).await? {
        Line::List(data) => return Ok(LineOutcome::List(data)),
        Line::Fire {
            resolved,
            labels,
            fire,
        } => (resolved, labels, fire),
    };
    let dispatched = dispatch(host, *fire).await.map_err(|e| format!("{e:#}"))?;
    Ok(LineOutcome::Fired {
        resolved,
        labels,
        dispatched: Box::new(dispatched),
    })
}

/// The resolved envelope's bounds, labelled for the resolved agent.
fn labels_for(data: &PickerData, r: &Resolved) -> Vec<String> {
    lookup_envelope(r.envelope.as_str(), r.origin, &data.envelopes)
        .map(|e| bound_labels(e, data.caps_of(&r.agent)))
        .unwrap_or_default()
}

impl PickerData {
    /// What `agent` offered when it last started here, for its bounds' labels.
    pub fn caps_of(&self, agent: &str) -> Option<&AgentCaps> {
        self.agents
            .iter()
            .find(|a| a.name == agent)
            .and_then(|a| a.caps.as_ref())
    }
}

/// A new mission like `mission_id`: its agent, envelope and intent, in the
/// checkout it worked in (a fresh worktree of it, when it had one). The old
/// mission and the new one's dispatch.
pub async fn refire(host: &Host, mission_id: &str) -> Result<(Mission, Dispatched), String> {
    let store = host.store().clone();
    let old = mission_id.to_string();
    let (m, worktree) = crate::store::blocking(move || {
        let m = crate::mission::Missions::new(store.clone())
            .require(&old)
            .map_err(|e| e.to_string())?;
        let wt = crate::worktree::Worktrees::new(store)
            .get(&old)
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((m, wt))
    })
    .await?;
    let refused = |e: String| format!("re-fire refused: {e}");
    let mut fire = Fire::new(
        &m.agent_name,
        EnvelopeName::new(&m.envelope_name).map_err(|e| refused(e.to_string()))?,
        Intent::new(&m.intent).map_err(|e| refused(e.to_string()))?,
    );
    fire.cwd = match &worktree {
        Some(wt) => Some(wt.repo.clone()),
        None => Some(PathBuf::from(&m.cwd)).filter(|p| p.is_absolute()),
    };
    fire.worktree = worktree.is_some();
    let d = dispatch(host, fire)
        .await
        .map_err(|e| refused(format!("{e:#}")))?;
    Ok((m, d))
}

/// Queue `fire` for a `missionboard host` (to run only on one labelled `on`, when
/// given): its envelope must load and its agent resolve here and now, so a typo is
/// refused at the fire, not found by a host later. Nothing starts.
pub fn enqueue(host: &Host, fire: Fire, on: Option<&str>) -> anyhow::Result<Mission> {
    Ok(host
        .missions()
        .enqueue(queued_record(host.paths(), fire, on)?)?)
}

/// What [`enqueue`] records for `fire`, checked as it checks it, not yet written
/// (a schedule's tick or a webhook delivery writes it beside its own record).
pub fn queued_record(
    paths: &Paths,
    fire: Fire,
    on: Option<&str>,
) -> anyhow::Result<crate::mission::queue::NewQueued> {
    let loaded = search::load(paths, fire.envelope.as_str()).map_err(|why| {
        let on_path: Vec<String> = search::list(paths)
            .into_iter()
            .map(|l| l.file_name)
            .collect();
        anyhow::anyhow!(envelope_refusal(
            fire.envelope.as_str(),
            fire.typed_at.envelope,
            &why,
            &on_path
        ))
    })?;
    let check = NewCheck::resolve(
        &fire.check,
        loaded.declared.check.as_ref(),
        loaded.declared.compute.effective_max_checks(),
        fire.envelope.as_str(),
    )
    .map_err(anyhow::Error::msg)?;
    let registry = Registry::load(paths)?;
    if registry.get(&fire.agent).is_none() && crate::agents::catalogue::get(&fire.agent).is_none() {
        let declared: Vec<String> = registry.names().into_iter().map(String::from).collect();
        anyhow::bail!(agent_refusal(&fire.agent, fire.typed_at.agent, &declared));
    }
    let on = on.map(str::trim);
    if on.is_some_and(|l| l.is_empty() || l.contains(char::is_whitespace)) {
        anyhow::bail!("--on: a host label is one word (e.g. gpu, laptop)");
    }
    let cwd = fire.cwd.unwrap_or_else(|| paths.cwd.clone());
    Ok(crate::mission::queue::NewQueued {
        intent: fire.intent,
        agent_name: fire.agent,
        envelope: fire.envelope,
        cwd: cwd.display().to_string(),
        worktree: fire.worktree,
        run_on: on.map(str::to_string),
        check,
    })
}

/// A fire handed to a `missionboard host` instead of hosted by the process that
/// fired it.
#[derive(Debug, Clone)]
pub struct Queued {
    pub mission: Mission,
    /// Its place in the queue (1 = next).
    pub position: usize,
    /// The live host that would claim it.
    pub host: crate::mission::hosts::HostRow,
}

/// The words after `--template` (or `--template=`) when a `/mission` line (the
/// board's `:mission`, an editor's `/mission`) starts with it: a template fire, as
/// `mission fire --template <name> key=value…`.
pub fn template_args(args: &str) -> Option<String> {
    let args = args.trim_start();
    let rest = args.strip_prefix("--template=").or_else(|| {
        args.strip_prefix("--template")
            .filter(|r| r.is_empty() || r.starts_with(char::is_whitespace))
    })?;
    Some(rest.to_string())
}

/// Queue `fire` when a live `missionboard host` would claim it (by the claim's own
/// rule, [`HostRow::would_claim`](crate::mission::hosts::HostRow::would_claim)), so
/// the mission outlives the process that fired it; `None`: no such host, nothing
/// recorded. A queued mission has no parent session: like every queued mission, its
/// reports wait in the operator inbox.
pub async fn queue_if_a_host_takes(host: &Host, mut fire: Fire) -> Result<Option<Queued>, String> {
    let here = host.clone();
    crate::store::blocking(move || {
        let cwd = fire.cwd.clone().unwrap_or_else(|| here.paths().cwd.clone());
        let hosts = crate::mission::hosts::Hosts::new(here.store().clone());
        let Some(host) = hosts
            .claimer_for(None, &cwd.display().to_string())
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        fire.cwd = Some(cwd);
        fire.parent_session = None;
        let mission = enqueue(&here, fire, None).map_err(|e| format!("{e:#}"))?;
        let position = here
            .missions()
            .queue_positions()
            .map_err(|e| e.to_string())?
            .get(&mission.id)
            .copied()
            .unwrap_or(1);
        Ok(Some(Queued {
            mission,
            position,
            host,
        }))
    })
    .await
}

/// The envelope a command-line fire runs under: the one named (`--policy`), else the
/// configured default (`default-mission-policy`, in the host's store), with which of
/// the two it is; neither is a refusal that says how to name one.
pub fn envelope_or_default(
    host: &Host,
    named: Option<&str>,
) -> anyhow::Result<(EnvelopeName, &'static str)> {
    let (name, origin) = match named.filter(|p| !p.trim().is_empty()) {
        Some(p) => (p.to_string(), "--policy"),
        None => (
            Config::new(host.store().clone())
                .get(config::DEFAULT_MISSION_POLICY)?
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "no mission envelope: pass --policy <policy>, or set a default with `missionboard config set default-mission-policy <policy>` — a mission must name the HITL policy that bounds it"
                    )
                })?,
            "default-mission-policy",
        ),
    };
    Ok((EnvelopeName::new(&name)?, origin))
}

/// Everything the picker lists, read afresh (the search path is never cached).
pub fn load_picker(host: &Host) -> Result<PickerData, String> {
    let (paths, store) = (host.paths(), host.store());
    let config = Config::new(store.clone());
    let envelopes = search::list(paths)
        .into_iter()
        .filter_map(|l| {
            let bytes = std::fs::read(&l.path).ok()?;
            Some(envelope_entry(&l.file_name, &bytes))
        })
        .collect();
    let registry = Registry::load(paths).map_err(|e| format!("{e:#}"))?;
    let missions = crate::mission::Missions::new(store.clone());
    let ledger = ComputeLedger::new(store.clone());
    let agents = registry
        .all()
        .map(|a| AgentEntry {
            name: a.name.clone(),
            description: a.description.clone(),
            caps: ledger.last_seen_caps(&missions, &a.name),
        })
        .collect();
    let get = |k| {
        config
            .get(k)
            .ok()
            .flatten()
            .filter(|v: &String| !v.trim().is_empty())
    };
    Ok(PickerData {
        envelopes,
        agents,
        default_agent: get(config::DEFAULT_MISSION_AGENT),
        default_envelope: get(config::DEFAULT_MISSION_POLICY),
        templates: template_entries(host),
    })
}

/// One envelope as the picker lists it: its character line, its compute bounds (each
/// labelled for the chosen agent when drawn) and the truthful label of each sandbox
/// limit it sets on this kernel.
pub fn envelope_entry(file_name: &str, bytes: &[u8]) -> EnvelopeEntry {
    use crate::envelope::sandbox::{SandboxField, SandboxStatus, sandbox_status};
    let abi = crate::confine::landlock_abi();
    let policy = Envelope::parse(file_name, bytes).ok();
    let sandbox = policy
        .as_ref()
        .map(|p| {
            let sandbox = p.sandbox_or_baseline();
            SandboxField::ALL
                .into_iter()
                .filter_map(|f| {
                    let status = sandbox_status(f, &sandbox, abi);
                    (status != SandboxStatus::NotLimited).then(|| (f.key(), status.label()))
                })
                .collect()
        })
        .unwrap_or_default();
    EnvelopeEntry {
        file_name: file_name.to_string(),
        short_name: search::short_name(file_name).to_string(),
        summary: envelope_summary(bytes),
        check: policy.as_ref().and_then(|p| {
            p.check
                .as_ref()
                .map(|c| check_label(c, p.compute.effective_max_checks()))
        }),
        compute: policy.map(|p| p.compute),
        sandbox,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_name_is_worded_with_where_it_was_typed_and_other_errors_pass() {
        let typed = TypedAt {
            agent: Some("mission_start's agent"),
            envelope: Some("mission_start's policy"),
        };
        let worded = |refused: NameRefused| for_operator(refused.into(), typed).to_string();
        assert_eq!(
            worded(NameRefused::Envelope {
                name: "nosuch".into(),
                why: "not found".into(),
                on_path: vec!["hitl-policy-default.json".into()],
            }),
            "unknown mission envelope \"nosuch\" (mission_start's policy): no such policy file on the search path. Available: hitl-policy-default.json"
        );
        assert_eq!(
            worded(NameRefused::Envelope {
                name: "default".into(),
                why: "line 1: expected value".into(),
                on_path: vec!["hitl-policy-default.json".into()],
            }),
            "mission envelope \"default\" (mission_start's policy) does not load: line 1: expected value — fix the file, or name another (`missionboard vet --all` checks every envelope)"
        );
        assert_eq!(
            worded(NameRefused::UnknownAgent {
                name: "ghost".into(),
                declared: vec![],
            }),
            "unknown mission agent \"ghost\" (mission_start's agent): not in agents.toml nor the catalogue — no agents are declared; run 'missionboard init' to seed agents.toml"
        );
        assert_eq!(
            worded(NameRefused::NoAgent),
            "no mission agent (mission_start's agent): name one — see 'missionboard agent list'"
        );
        // The fleet's own words never reach an operator who typed a flag.
        for refused in [
            NameRefused::NoAgent,
            NameRefused::Envelope {
                name: "x".into(),
                why: "y".into(),
                on_path: vec![],
            },
        ] {
            assert!(!worded(refused).contains("Name"));
        }
        let other = for_operator(anyhow::anyhow!("conflict: fleet admission refused"), typed);
        assert_eq!(other.to_string(), "conflict: fleet admission refused");
    }

    #[test]
    fn an_envelope_picked_beside_the_line_is_refused_as_picked_there() {
        let data = PickerData {
            default_agent: Some("stub".into()),
            ..PickerData::default()
        };
        let refused = resolve_typed(
            Some(("gone".into(), "the session's envelope option")),
            None,
            "go".into(),
            &data,
        )
        .unwrap_err();
        assert!(
            refused
                .starts_with("unknown mission envelope \"gone\" (the session's envelope option): "),
            "{refused}"
        );
        let r = resolve(Some("x".into()), None, "go".into(), &data).unwrap_err();
        assert!(r.contains("(--policy)"), "{r}");
    }

    #[test]
    fn the_picker_labels_an_envelopes_check() {
        let required = envelope_entry(
            "hitl-policy-gated.json",
            br#"{"default_action":"allow","check":{"command":"cargo test -q","timeout":"5m"},"compute":{"maxChecks":2}}"#,
        );
        assert_eq!(
            required.check.as_deref(),
            Some("check `cargo test -q` · timeout 5m0s · maxChecks 2 · enforced")
        );
        assert!(
            bound_labels(&required, None)
                .contains(&"check `cargo test -q` · timeout 5m0s · maxChecks 2 · enforced".into())
        );
        let optional = envelope_entry(
            "hitl-policy-loose.json",
            br#"{"default_action":"allow","check":{"command":"make","optional":true}}"#,
        );
        assert_eq!(
            optional.check.as_deref(),
            Some(
                "check `make` · timeout 10m0s · maxChecks 3 · enforced · optional (--no-check skips it)"
            )
        );
        let none = envelope_entry("hitl-policy-open.json", br#"{"default_action":"allow"}"#);
        assert_eq!(none.check, None);
    }
}
