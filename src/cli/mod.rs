//! The command line: a thin surface over the services. Each subcommand parses its
//! arguments here and calls one handler; handlers print and return an exit code.

mod agent_cmd;
mod approvals_cmd;
mod config_cmd;
mod doctor;
mod fire;
mod host_cmd;
mod inbox_cmd;
mod init;
mod mission_cmd;
mod oracle_cmd;
mod out;
mod queued_fire;
mod reference;
mod revise_cmd;
mod schedule_cmd;
mod spend_cmd;
mod vet;
mod web_cmd;
mod worktree_cmd;

use std::io::IsTerminal;

use clap::{Arg, ArgAction, ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::paths::Paths;
use crate::store::Store;

#[derive(Parser, Debug)]
#[command(
    name = "missionboard",
    version,
    about = "Fire one-line intents at ACP agents inside HITL envelopes, and watch them on a live board.",
    long_about = None,
    after_help = "With no command on a terminal, missionboard opens the board."
)]
struct Cli {
    /// Mirror the activity trace to stderr (it always goes to <home>/logs/).
    #[arg(long, global = true)]
    trace: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Open the live mission board.
    Board {
        /// Seed a scratch workspace and fire offline stub missions that show every state.
        #[arg(long)]
        demo: bool,
    },
    /// Fire, inspect and stop missions.
    #[command(subcommand)]
    Mission(MissionCmd),
    /// Pending asks: gated tool calls and mission questions.
    #[command(subcommand)]
    Approvals(ApprovalsCmd),
    /// The operator inbox: reports that reached no live session.
    #[command(subcommand)]
    Inbox(InboxCmd),
    /// Read and change configuration.
    #[command(subcommand)]
    Config(ConfigCmd),
    /// Check envelopes and chain files for mistakes before a mission meets them.
    Vet(VetArgs),
    /// Seed the presets (envelopes, oracle chains, agents.toml) into ~/.missionboard.
    Init(InitArgs),
    /// The attention oracle: `oracle eval` scores its review on a corpus of questions.
    #[command(subcommand)]
    Oracle(oracle_cmd::OracleCmd),
    /// Declared agents; with no subcommand, run the built-in native agent over ACP on stdio.
    Agent(AgentArgs),
    /// Serve an editor over ACP on stdio: chat, `/mission`, and the host of every mission it fires.
    Acp,
    /// Run queued missions in the foreground: claim them under a width, host their units.
    Host {
        /// Missions running at once (else fleet-max-parallel; 0 = unlimited). A
        /// mission parked on a question holds no slot.
        #[arg(long, value_name = "N")]
        width: Option<u64>,
        /// A label `mission fire --queue --on <label>` may name (repeatable).
        #[arg(long = "label", value_name = "LABEL")]
        labels: Vec<String>,
        /// On TERM or Ctrl-C, stop the missions it runs instead of parking them.
        #[arg(long)]
        stop_on_exit: bool,
        /// Also serve the web page (as `missionboard web` does) on this loopback address.
        #[arg(long, value_name = "ADDR")]
        web: Option<String>,
    },
    /// Serve the web page: answer asks and follow missions from a paired phone or browser.
    Web(WebArgs),
    /// Mission templates: templates/<name>.toml on the envelope search path.
    #[command(subcommand)]
    Template(schedule_cmd::TemplateCmd),
    /// Missions fired on a cron schedule by every live `missionboard host`, each tick once.
    #[command(subcommand)]
    Schedule(schedule_cmd::ScheduleCmd),
    /// Signed webhooks (POST /hooks/<name> on the web server) that fire a template.
    #[command(subcommand)]
    Trigger(schedule_cmd::TriggerCmd),
    /// What missions cost (reported by their agents, else estimated from the price
    /// table), their tokens and tool calls, grouped.
    Spend {
        /// Group by agent, envelope, label, host or day.
        #[arg(long, value_name = "GROUP", default_value = "agent")]
        by: String,
        /// Only missions fired within this long: 7d, 12h, 30m.
        #[arg(long, value_name = "AGE", default_value = "7d")]
        since: String,
        /// The rollup as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check that this machine is ready to run missions.
    Doctor {
        /// The verdict, the fixes and each check as JSON (no sweep runs).
        #[arg(long)]
        json: bool,
        /// Check one agent only: its install, a dry handshake, and every grant its
        /// unit gets under the default envelope.
        #[arg(long, value_name = "NAME")]
        agent: Option<String>,
    },
    /// Print a shell completion script: `missionboard completions bash > …`.
    Completions {
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Print a manual page (roff): `missionboard man mission fire | man -l -`.
    Man {
        /// The subcommand whose page to print (none: the top-level page).
        command: Vec<String>,
        /// Print the whole CLI reference as Markdown instead (docs/cli.md).
        #[arg(long, conflicts_with = "command")]
        markdown: bool,
    },
    /// Measure the figures operators rely on, each beside its floor (scratch home, real stub units).
    Bench(BenchArgs),
    /// The scripted stub ACP agent (offline demos and tests).
    #[command(name = "stub-agent", hide = true)]
    StubAgent(StubArgs),
    /// Byte pipe between an agent's stdio MCP entry and a mission's socket.
    #[command(name = "mcp-bridge", hide = true)]
    McpBridge {
        socket: std::path::PathBuf,
        /// The one-use token file the host wrote (read and unlinked on start).
        #[arg(long)]
        token_file: Option<std::path::PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
enum MissionCmd {
    /// Fire a mission at a declared agent and wait for its verdict.
    #[command(
        override_usage = "missionboard mission fire [OPTIONS] <AGENT> <INTENT>...\n       missionboard mission fire [OPTIONS] --template <NAME> [KEY=VALUE]..."
    )]
    Fire {
        /// The declared agent (see `missionboard agent list`); with --template, the
        /// first key=value parameter.
        #[arg(required_unless_present = "template")]
        agent: Option<String>,
        /// The one-line intent; with --template, the key=value parameters.
        #[arg(required_unless_present = "template", num_args = 0..)]
        intent: Vec<String>,
        /// Fire this template (templates/<name>.toml), its parameters given as key=value.
        #[arg(long, value_name = "NAME")]
        template: Option<String>,
        /// The envelope that bounds this mission (else `default-mission-policy`).
        #[arg(long)]
        policy: Option<String>,
        /// Block until the mission finishes (required: the unit is a child of this process).
        #[arg(long)]
        wait: bool,
        /// How long to wait for a terminal status.
        #[arg(long, default_value = "30m")]
        timeout: String,
        /// Work in a git worktree of its own, on a new branch mission/<id8> from HEAD.
        #[arg(long)]
        worktree: bool,
        /// Queue it for a `missionboard host` and return at once with its id (with
        /// --wait: follow it to its verdict without hosting it).
        #[arg(long)]
        queue: bool,
        /// Run it only on a host started with this --label (queued fires only).
        #[arg(long, value_name = "LABEL", requires = "queue")]
        on: Option<String>,
        /// The command that must pass, in the mission's workspace, before it lands
        /// (replaces the envelope's check).
        #[arg(long, value_name = "COMMAND", conflicts_with = "no_check")]
        check: Option<String>,
        /// Fire without the envelope's check (only where the envelope marks it optional).
        #[arg(long)]
        no_check: bool,
        /// A directory beyond the workspace the unit may work in, granted as the
        /// workspace is (repeatable; not with --queue).
        #[arg(long, value_name = "PATH", conflicts_with = "queue")]
        add_dir: Vec<std::path::PathBuf>,
    },
    /// List missions, newest first.
    List(ListArgs),
    /// Show one mission.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// A mission's reports, oldest first, in full.
    Reports {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// A mission's living plan and its revisions.
    Plan {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Pending questions of one mission, or of every open mission, newest first.
    Asks {
        id: Option<String>,
        #[command(flatten)]
        list: ListArgs,
    },
    /// Send a rested mission (landed, stuck or derailed) back to its agent with
    /// feedback: a new run on the same record, in its own session where the agent
    /// can load it; its check runs again before it lands.
    Revise {
        id: String,
        /// What the agent should change (its next prompt).
        #[arg(required = true, num_args = 1..)]
        feedback: Vec<String>,
        /// Host the revised run here until it rests (required unless --queue).
        #[arg(long)]
        wait: bool,
        /// Hand it to a `missionboard host` and return at once (with --wait: follow
        /// it to its verdict without hosting it).
        #[arg(long)]
        queue: bool,
        /// How long to wait for a terminal status.
        #[arg(long, default_value = "30m")]
        timeout: String,
    },
    /// Stop a mission: abandon it, close its asks, reap its unit.
    Stop {
        id: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// A worktree mission's committed and uncommitted changes against its base.
    Diff {
        id: String,
        /// Only the file summary.
        #[arg(long)]
        stat: bool,
    },
    /// Merge a worktree mission into your current branch (leftovers committed first).
    Merge {
        id: String,
        /// Merge although the mission's check did not pass (recorded on the mission).
        #[arg(long)]
        force: bool,
    },
    /// Remove a worktree mission's worktree and branch, work and all.
    Discard { id: String },
}

#[derive(Subcommand, Debug)]
enum ApprovalsCmd {
    /// List pending asks, newest first.
    List(ListArgs),
    /// Answer one ask.
    Respond {
        id: Vec<String>,
        #[arg(long)]
        approve: bool,
        #[arg(long)]
        deny: bool,
        #[arg(long)]
        answer: Option<String>,
        /// A form ask's field: its value, checked against the form (repeat for each
        /// field; left-out fields take their defaults).
        #[arg(long = "field", value_name = "KEY=VALUE")]
        field: Vec<String>,
    },
    /// Answered asks, most recently resolved first: the verdict, who gave it (surface
    /// and device) and how long the ask waited.
    History(ListArgs),
    /// Allowances, newest first: each "allow always (this mission)" an operator gave
    /// on the web page, what it covers, who granted it, its uses, and whether it
    /// still holds (active, revoked, or ended with its mission).
    Allowances(ListArgs),
    /// End an allowance at once: the next call it covered is asked about again.
    Revoke {
        /// The allowance's id, or a unique prefix of it.
        id: String,
    },
}

#[derive(Subcommand, Debug)]
enum InboxCmd {
    /// Unacknowledged items, newest first; --all is every item, acknowledged or not.
    List(ListArgs),
    /// One item in full.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Mark an item read.
    Ack { id: String },
}

#[derive(Subcommand, Debug)]
enum ConfigCmd {
    /// Store a value.
    ///
    /// `config set store-url -` reads the URL from standard input, so its password
    /// stays out of `ps` and the shell's history (or leave the password out of the
    /// URL: PGPASSWORD and ~/.pgpass are read as libpq reads them).
    Set { key: String, value: String },
    /// Print the effective value.
    Get { key: String },
    /// Every key with its value and where it came from.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a stored value so the default applies.
    Unset { key: String },
}

#[derive(Args, Debug)]
struct VetArgs {
    /// Vet the workspace and ~/.missionboard.
    #[arg(long)]
    all: bool,
    /// A file, or a directory vetted recursively (default: the workspace .missionboard/).
    path: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
struct InitArgs {
    /// Seed the workspace .missionboard/ of the current directory instead of home.
    #[arg(long)]
    local: bool,
    /// Overwrite every preset, edited or not.
    #[arg(long)]
    force: bool,
    /// Rewrite only the envelope presets, in home and in any shadowing workspace copy.
    #[arg(long, conflicts_with = "force")]
    refresh_policies: bool,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct AgentArgs {
    #[command(subcommand)]
    command: Option<AgentCmd>,
    /// The OpenAI-compatible endpoint (else env MISSIONBOARD_MODEL_BASE_URL, else config model-base-url).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The model to ask for (else env MISSIONBOARD_MODEL_NAME, else config model-name).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The variable holding the endpoint's API key (else env MISSIONBOARD_MODEL_API_KEY_ENV, else config model-api-key-env).
    #[arg(long, value_name = "VAR")]
    api_key_env: Option<String>,
    /// The model's context window in tokens; the dialog is kept inside it.
    #[arg(long, value_name = "N", default_value_t = crate::planner::DEFAULT_CONTEXT_TOKENS)]
    context_tokens: u64,
    /// Model calls one prompt turn may make.
    #[arg(long, value_name = "N", default_value_t = crate::planner::DEFAULT_MAX_STEPS)]
    max_steps: usize,
    /// The longest reply asked of the model per call (`max_tokens`), in tokens.
    #[arg(long, value_name = "N", default_value_t = crate::planner::DEFAULT_MAX_TOKENS)]
    max_tokens: u32,
}

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
struct WebArgs {
    #[command(subcommand)]
    command: Option<WebCmd>,
    /// The address to listen on. Loopback by default; any other address needs
    /// --tls-cert/--tls-key, or --behind-proxy with --allowed-host.
    #[arg(long, value_name = "ADDR", default_value = crate::web::DEFAULT_LISTEN)]
    listen: String,
    /// Serve over TLS with this certificate chain (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// The TLS certificate's private key (PEM).
    #[arg(long, value_name = "PEM", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// A TLS-terminating proxy (Tailscale Serve, a reverse proxy) fronts this server.
    #[arg(long, requires = "allowed_hosts")]
    behind_proxy: bool,
    /// A host name the page is reached by (repeatable); every other Host is refused.
    #[arg(long = "allowed-host", value_name = "NAME")]
    allowed_hosts: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum WebCmd {
    /// Print a one-time link (and its QR code) that pairs a device, valid 10 minutes.
    Pair {
        /// The device's name, as `web devices` lists it and answers record it.
        #[arg(long, value_name = "NAME")]
        name: Option<String>,
        /// The page's base address as the device reaches it (else the address a
        /// running `missionboard web` recorded, else http://127.0.0.1:7878).
        #[arg(long, value_name = "URL")]
        url: Option<String>,
    },
    /// The paired devices: name, paired, last seen, expiry.
    Devices {
        #[arg(long)]
        json: bool,
    },
    /// End a device's pairing at once: its next request is refused.
    Revoke { name: String },
}

#[derive(Subcommand, Debug)]
enum AgentCmd {
    /// The declared agents: NAME, COMMAND, INSTALLED, DESCRIPTION; then the catalogue's
    /// agents not declared here. With --available: every agent of the ACP registry's
    /// index (ID, VERSION, DISTRIBUTION, CATALOGUE, DECLARED).
    List {
        #[arg(long)]
        json: bool,
        /// List the ACP registry's agents instead (the shipped snapshot, or the copy
        /// 'agent registry refresh' wrote).
        #[arg(long)]
        available: bool,
    },
    /// The catalogue's external agents, as the Markdown table docs/agents.md carries:
    /// command, install line, what missionboard sets for their units, known limits.
    Catalogue,
    /// Declare a catalogue agent (claude, codex, gemini, qwen, opencode, goose, …), or
    /// any agent of the ACP registry by its id (agent list --available), in agents.toml.
    Add {
        /// The catalogue entry to copy, or the ACP registry id to declare.
        name: String,
        /// Into the workspace's .missionboard/agents.toml instead of home's.
        #[arg(long)]
        local: bool,
        /// Replace a declaration of that name that differs from the catalogue's.
        #[arg(long)]
        force: bool,
    },
    /// Install a declared agent from its distribution: npm install -g (npx), uv tool
    /// install (uvx), or its platform archive downloaded, checked against its sha256
    /// and unpacked (binary). Nothing is ever downloaded when a mission fires.
    Install {
        /// The declared agent.
        name: String,
    },
    /// The ACP registry's index.
    #[command(subcommand)]
    Registry(RegistryCmd),
}

#[derive(Subcommand, Debug)]
enum RegistryCmd {
    /// Fetch the registry's index into the missionboard home, where it is read before
    /// the shipped snapshot (only where the registry is reachable).
    Refresh {
        /// A URL or a file holding a registry.json (default: the registry's published index).
        #[arg(long, value_name = "URL|FILE")]
        from: Option<String>,
    },
}

/// The shells `missionboard completions` writes a script for.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

impl CompletionShell {
    fn generator(self) -> clap_complete::Shell {
        match self {
            CompletionShell::Bash => clap_complete::Shell::Bash,
            CompletionShell::Zsh => clap_complete::Shell::Zsh,
            CompletionShell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// The flags every list takes. A list shows its newest rows and, when it shows
/// fewer than there are, says so ([`more_line`]).
#[derive(Args, Debug)]
struct ListArgs {
    /// Show at most this many rows.
    #[arg(long, default_value_t = 50, conflicts_with = "all")]
    limit: usize,
    /// Show every row.
    #[arg(long)]
    all: bool,
    /// Print the rows and their total as JSON.
    #[arg(long)]
    json: bool,
}

impl ListArgs {
    /// The row count to ask the store for: `--all` is every row.
    fn rows(&self) -> usize {
        if self.all {
            i64::MAX as usize
        } else {
            self.limit
        }
    }
}

/// The last line of a list that shows fewer rows than there are: the count is
/// honest, and says how to see the rest.
fn more_line(shown: usize, total: i64) -> Option<String> {
    (i64::try_from(shown).unwrap_or(i64::MAX) < total).then(|| {
        format!(
            "{} of {}, --limit/--all for more",
            crate::text::count(shown as u64),
            crate::text::count(total.max(0) as u64)
        )
    })
}

#[derive(Args, Debug)]
struct BenchArgs {
    /// A small, fast run (a CI smoke test; the figures are not the real scale).
    #[arg(long)]
    quick: bool,
    /// Run only these figure groups (answer, fire, queue, queue-fleet, board, fleet, fleet-rss, web, spend).
    #[arg(long, value_delimiter = ',')]
    group: Vec<String>,
    /// Each figure at 10k/100k/1M missions and 16/64/256 concurrent units (slow; not for CI).
    #[arg(long, conflicts_with = "quick")]
    scale: bool,
    /// Also run the store-bound groups (answer, fire, queue, queue-fleet, board, fleet, web) on this PostgreSQL
    /// server, beside SQLite's: an admin URL allowed to CREATE DATABASE; each group makes
    /// a throwaway database there and drops it afterwards.
    #[arg(long, value_name = "URL")]
    postgres: Option<String>,
    /// Run one group in this process and print its rows as JSON lines (internal).
    #[arg(long, hide = true)]
    only: Option<String>,
    /// The scale `--only` runs at, as the parent bench passes it (internal).
    #[arg(long, hide = true, requires = "only")]
    at: Option<String>,
}

#[derive(Args, Debug)]
struct StubArgs {
    /// A JSON script (else env STUB_SCRIPT, else directives in the intent).
    #[arg(long)]
    script: Option<std::path::PathBuf>,
    /// Pause between steps so a human can watch.
    #[arg(long)]
    demo: bool,
}

impl Command {
    /// Commands that write the home (its store, presets or logs) even where it does
    /// not exist yet. The others — reads, and answers to rows that must already be
    /// there — leave a missing home missing, logs included.
    fn may_create_home(&self) -> bool {
        matches!(
            self,
            Command::Board { .. }
                | Command::Mission(MissionCmd::Fire { .. })
                | Command::Host { .. }
                | Command::Web(WebArgs {
                    command: None | Some(WebCmd::Pair { .. }),
                    ..
                })
                | Command::Init(_)
                | Command::Schedule(schedule_cmd::ScheduleCmd::Add { .. })
                | Command::Trigger(schedule_cmd::TriggerCmd::Add { .. })
                | Command::Agent(AgentArgs {
                    command: Some(AgentCmd::Add { .. } | AgentCmd::Registry(_)),
                    ..
                })
                | Command::Config(ConfigCmd::Set { .. } | ConfigCmd::Unset { .. })
                | Command::Agent(AgentArgs { command: None, .. })
                | Command::Acp
                | Command::Bench(_)
                | Command::StubAgent(_)
                | Command::McpBridge { .. }
        )
    }

    /// Commands that host units (or are one): they must tear down before they
    /// exit, so a closed stdout reaches them as an error from the output layer.
    fn hosts_units(&self) -> bool {
        matches!(
            self,
            Command::Board { .. }
                | Command::Mission(MissionCmd::Fire { .. })
                | Command::Host { .. }
                | Command::Web(WebArgs { command: None, .. })
                | Command::Agent(AgentArgs { command: None, .. })
                | Command::Acp
                | Command::Bench(_)
                | Command::StubAgent(_)
                | Command::McpBridge { .. }
        )
    }
}

/// The command `path` names under `root`, titled as its manual page is
/// (`missionboard-mission-fire`, the name the parent page's SUBCOMMANDS refer to)
/// and synopsised as it is typed (`missionboard mission fire`).
fn man_page_of(root: clap::Command, path: &[String]) -> anyhow::Result<clap::Command> {
    let mut cmd = root;
    let mut typed = cmd.get_name().to_string();
    for word in path {
        let Some(sub) = cmd.find_subcommand(word).filter(|s| !s.is_hide_set()) else {
            anyhow::bail!(
                "{typed} has no subcommand {word:?} — '{typed} --help' lists those it has"
            );
        };
        typed = format!("{typed} {}", sub.get_name());
        cmd = sub.clone();
    }
    Ok(cmd.display_name(typed.replace(' ', "-")).bin_name(typed))
}

/// A one-shot command whose reader went away (`| head`) ends the way git does: by
/// SIGPIPE, quietly, at the first write nobody reads — whoever's code wrote it.
fn die_quietly_on_closed_stdout() {
    // SAFETY: restoring the default disposition of one signal, before any thread or
    // child exists that could observe the change.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Flags that exist only under `opt-in-beta`: absent, not hidden, without it.
#[derive(Debug, Default)]
struct BetaFlags {
    oracle: bool,
    as_agent: Option<String>,
}

fn build_command(beta: bool) -> clap::Command {
    let cmd = Cli::command();
    if !beta {
        return cmd;
    }
    cmd.mut_subcommand("mission", |m| {
        m.mut_subcommand("fire", |f| {
            f.arg(
                Arg::new("oracle")
                    .long("oracle")
                    .action(ArgAction::SetTrue)
                    .help("Mount the oracle attention driver: routine questions the mission's intent already answers are answered in-process as agent \"oracle\", within the envelope's attention bounds; everything else waits for a human"),
            )
        })
    })
    .mut_subcommand("approvals", |a| {
        a.mut_subcommand("respond", |r| {
            r.arg(
                Arg::new("as-agent")
                    .long("as-agent")
                    .value_name("NAME")
                    .help("Attribute a question's answer to an agent; it counts against the mission's agent-answer bound"),
            )
        })
    })
}

/// A beta flag used without the beta is unknown to the parser; the error says how
/// to turn it on.
fn with_beta_tip(mut e: clap::Error, beta: bool) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if beta || e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let flag = match e.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(arg)) => arg.split('=').next().unwrap_or_default().to_string(),
        _ => return e,
    };
    if !["--oracle", "--as-agent"].contains(&flag.as_str()) {
        return e;
    }
    let mut tips = match e.get(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(tips)) => tips.clone(),
        _ => Vec::new(),
    };
    tips.insert(
        0,
        format!("{flag} requires opt-in-beta (missionboard config set opt-in-beta true)").into(),
    );
    e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    e
}

fn beta_flags(m: &ArgMatches) -> BetaFlags {
    let mut flags = BetaFlags::default();
    if let Some(("mission", m)) = m.subcommand()
        && let Some(("fire", f)) = m.subcommand()
    {
        flags.oracle = f.try_get_one::<bool>("oracle").ok().flatten() == Some(&true);
    }
    if let Some(("approvals", a)) = m.subcommand()
        && let Some(("respond", r)) = a.subcommand()
    {
        flags.as_agent = r.try_get_one::<String>("as-agent").ok().flatten().cloned();
    }
    flags
}

/// What every handler gets: where things are, and the store opened on demand.
pub(crate) struct Ctx {
    pub paths: Paths,
    pub beta: bool,
}

impl Ctx {
    /// Open (creating and migrating if needed) the database.
    pub fn store(&self) -> anyhow::Result<Store> {
        crate::config::open_store(&self.paths.db_path())
    }

    /// This command's host over `store`: no fleet until a run must resume here.
    pub fn host(&self, store: &Store) -> anyhow::Result<crate::ops::host::Host> {
        crate::ops::host::Host::open(&self.paths, store, crate::ops::host::Hosting::OnNeed)
    }

    /// This home's own file, whatever `store-url` names (where `store-url` is kept).
    pub fn home_file_store(&self) -> anyhow::Result<Store> {
        Ok(Store::open(&self.paths.db_path())?)
    }

    /// The database if one exists (migrated if needed); `None` creates nothing.
    pub fn existing_store(&self) -> anyhow::Result<Option<Store>> {
        crate::config::existing_store(&self.paths.db_path())
    }

    /// The database, or an error that says none exists yet (for commands about a
    /// row that would have to be in it).
    pub fn required_store(&self) -> anyhow::Result<Store> {
        self.existing_store()?
            .ok_or_else(|| anyhow::anyhow!("{}", self.no_store()))
    }

    /// What a read against a home without a database says.
    pub fn no_store(&self) -> String {
        format!(
            "no missionboard store at {} yet — fire a mission or run `missionboard init` first",
            self.paths.db_path().display()
        )
    }
}

/// How long a process that hosts units (or a board) waits out a shared store that
/// went away before its store calls fail.
const HOSTING_OUTAGE_GRACE: std::time::Duration = std::time::Duration::from_secs(300);

/// Whether this command line never needs the shared store, not even for the beta
/// gate: `--version` and every `config` subcommand (so a wrong `store-url` can always
/// be seen and fixed). Help, `completions` and `man` do read the gate (the beta's
/// flags are in their grammar), which a store that cannot be reached answers "off"
/// within its connect timeout.
fn needs_no_store() -> bool {
    use clap::error::ErrorKind;
    match build_command(true).try_get_matches() {
        Ok(m) => m.subcommand_name() == Some("config"),
        Err(e) => e.kind() == ErrorKind::DisplayVersion,
    }
}

/// Entry point: returns the process exit code.
pub fn main() -> i32 {
    let paths = match Paths::from_env() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    // Resolved before parsing, because the beta flags are registered or not. A
    // command that needs no store never waits on a shared one to learn it.
    let beta = if needs_no_store() {
        crate::config::beta_enabled_offline(&paths.db_path())
    } else {
        crate::config::beta_enabled(&paths.db_path())
    };
    let matches = match build_command(beta).try_get_matches() {
        Ok(m) => m,
        Err(e) => with_beta_tip(e, beta).exit(),
    };
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    let flags = beta_flags(&matches);
    if cli.command.as_ref().is_some_and(Command::hosts_units) {
        // A database restart or a short outage must end no mission this process hosts.
        crate::store::pg_outage::ride_out_outages(HOSTING_OUTAGE_GRACE);
    } else {
        die_quietly_on_closed_stdout();
    }
    let log_dir = paths.log_dir();
    let logs = paths.home.exists() || cli.command.as_ref().is_none_or(Command::may_create_home);
    let _log_guard = logs.then(|| crate::logging::init(&log_dir, cli.trace));
    let ctx = Ctx { paths, beta };
    match run(&ctx, cli.command, flags) {
        Ok(code) => code,
        Err(e) => fail(&e),
    }
}

fn fail(e: &anyhow::Error) -> i32 {
    if e.chain().any(|cause| cause.is::<out::StdoutClosed>()) {
        return out::STDOUT_CLOSED_EXIT;
    }
    tracing::error!("{e:#}");
    out::error(&format!("{e:#}"));
    1
}

fn run(ctx: &Ctx, command: Option<Command>, flags: BetaFlags) -> anyhow::Result<i32> {
    match command {
        None => {
            if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
                crate::board::run(ctx.paths.clone(), false)
            } else {
                build_command(ctx.beta).print_help()?;
                Ok(0)
            }
        }
        Some(Command::Board { demo }) => crate::board::run(ctx.paths.clone(), demo),
        Some(Command::Mission(m)) => match m {
            MissionCmd::List(list) => mission_cmd::list(ctx, &list),
            MissionCmd::Show { id, json } => mission_cmd::show(ctx, &id, json),
            MissionCmd::Reports { id, json } => mission_cmd::reports(ctx, &id, json),
            MissionCmd::Plan { id, json } => mission_cmd::plan(ctx, &id, json),
            MissionCmd::Fire {
                agent,
                intent,
                template,
                policy,
                wait,
                timeout,
                worktree,
                queue,
                on,
                check,
                no_check,
                add_dir,
            } => {
                let check = match (check, no_check) {
                    (Some(command), _) => crate::mission::check::CheckChoice::Command(command),
                    (None, true) => crate::mission::check::CheckChoice::Skip,
                    (None, false) => crate::mission::check::CheckChoice::FromEnvelope,
                };
                // With --template, every word after the flags is a key=value parameter.
                let (template, agent, intent) = match template {
                    Some(t) => (
                        Some((t, agent.into_iter().chain(intent).collect())),
                        String::new(),
                        Vec::new(),
                    ),
                    None => (None, agent.unwrap_or_default(), intent),
                };
                let args = fire::FireArgs {
                    template,
                    agent,
                    intent,
                    policy,
                    wait,
                    timeout,
                    oracle: flags.oracle,
                    worktree,
                    queue,
                    on,
                    check,
                    add_dirs: add_dir,
                };
                // A queued fire is recorded for a host, never hosted here.
                if args.queue {
                    queued_fire::run(ctx, args)
                } else {
                    fire::run(ctx, args)
                }
            }
            MissionCmd::Revise {
                id,
                feedback,
                wait,
                queue,
                timeout,
            } => revise_cmd::run(
                ctx,
                revise_cmd::ReviseArgs {
                    id,
                    feedback,
                    wait,
                    queue,
                    timeout,
                },
            ),
            MissionCmd::Stop { id, reason } => mission_cmd::stop(ctx, &id, reason.as_deref()),
            MissionCmd::Asks { id, list } => mission_cmd::asks(ctx, id.as_deref(), &list),
            MissionCmd::Diff { id, stat } => worktree_cmd::diff(ctx, &id, stat),
            MissionCmd::Merge { id, force } => worktree_cmd::merge(ctx, &id, force),
            MissionCmd::Discard { id } => worktree_cmd::discard(ctx, &id),
        },
        Some(Command::Approvals(c)) => approvals_cmd::run(ctx, c, &flags),
        Some(Command::Inbox(c)) => inbox_cmd::run(ctx, c),
        Some(Command::Config(c)) => config_cmd::run(ctx, c),
        Some(Command::Vet(a)) => vet::run(ctx, a),
        Some(Command::Init(a)) => init::run(ctx, a),
        Some(Command::Oracle(c)) => oracle_cmd::run(ctx, c),
        Some(Command::Agent(a)) => match a.command {
            Some(AgentCmd::List {
                json,
                available: false,
            }) => agent_cmd::list(ctx, json),
            Some(AgentCmd::List {
                json,
                available: true,
            }) => agent_cmd::available(ctx, json),
            Some(AgentCmd::Install { name }) => agent_cmd::install(ctx, &name),
            Some(AgentCmd::Registry(RegistryCmd::Refresh { from })) => {
                agent_cmd::refresh(ctx, from.as_deref())
            }
            Some(AgentCmd::Catalogue) => {
                out::out!("{}", crate::agents::catalogue::markdown_table())?;
                Ok(0)
            }
            Some(AgentCmd::Add { name, local, force }) => agent_cmd::add(ctx, &name, local, force),
            None => {
                let options = crate::planner::AgentOptions {
                    model: crate::planner::ModelFlags {
                        base_url: a.base_url,
                        model: a.model,
                        api_key_env: a.api_key_env,
                    },
                    context_tokens: a.context_tokens.max(1024),
                    max_steps: a.max_steps.max(1),
                    max_tokens: a.max_tokens.max(1),
                    db: ctx.paths.db_path(),
                };
                Ok(run_role(async move {
                    crate::planner::run_agent(options)
                        .await
                        .map_err(|e| format!("missionboard agent: {e}"))
                }))
            }
        },
        Some(Command::Acp) => {
            let options = crate::acp_server::AcpOptions {
                context_tokens: crate::planner::DEFAULT_CONTEXT_TOKENS,
                max_steps: crate::planner::DEFAULT_MAX_STEPS,
                max_tokens: crate::planner::DEFAULT_MAX_TOKENS,
            };
            let paths = ctx.paths.clone();
            Ok(run_role(async move {
                crate::acp_server::run(paths, options)
                    .await
                    .map_err(|e| format!("missionboard acp: {e}"))
            }))
        }
        Some(Command::Host {
            width,
            labels,
            stop_on_exit,
            web,
        }) => host_cmd::run(
            ctx,
            host_cmd::HostArgs {
                width,
                labels,
                stop_on_exit,
                web,
            },
        ),
        Some(Command::Web(a)) => web_cmd::run(ctx, a),
        Some(Command::Template(c)) => schedule_cmd::template(ctx, c),
        Some(Command::Schedule(c)) => schedule_cmd::schedule(ctx, c),
        Some(Command::Trigger(c)) => schedule_cmd::trigger(ctx, c),
        Some(Command::Spend { by, since, json }) => spend_cmd::run(ctx, &by, &since, json),
        Some(Command::Doctor { json, agent: None }) => doctor::run(ctx, json),
        Some(Command::Doctor {
            json,
            agent: Some(name),
        }) => doctor::run_agent(ctx, &name, json),
        Some(Command::Completions { shell }) => {
            let mut script = Vec::new();
            clap_complete::generate(
                shell.generator(),
                &mut build_command(ctx.beta),
                "missionboard",
                &mut script,
            );
            out::generated(&script)?;
            Ok(0)
        }
        Some(Command::Man { markdown: true, .. }) => {
            out::generated(reference::markdown(build_command(false)).as_bytes())?;
            Ok(0)
        }
        Some(Command::Man { command, .. }) => {
            let mut page = Vec::new();
            clap_mangen::Man::new(man_page_of(build_command(ctx.beta), &command)?)
                .source(format!("missionboard {}", env!("CARGO_PKG_VERSION")))
                .render(&mut page)?;
            out::generated(&page)?;
            Ok(0)
        }
        Some(Command::Bench(a)) => match a.only {
            Some(group) => crate::bench::run_group(
                &group,
                crate::bench::parse_scale(a.quick, a.at.as_deref())?,
            ),
            None => crate::bench::run_all(a.quick, a.scale, &a.group, a.postgres.as_deref()),
        },
        Some(Command::StubAgent(a)) => Ok(run_role(async move {
            crate::stub::run_stub_agent(crate::stub::StubOptions {
                script: a.script,
                demo: a.demo,
            })
            .await
            .map_err(|e| format!("stub: {e}"))
        })),
        Some(Command::McpBridge { socket, token_file }) => Ok(run_role(async move {
            crate::mission_mcp::run_mcp_bridge(&socket, token_file.as_deref())
                .await
                .map_err(|e| format!("missionboard mcp-bridge: {e}"))
        })),
    }
}

/// Run a stdio role (the native agent, the stub agent, the MCP bridge) on a fresh
/// runtime; its errors go to stderr, because stdout belongs to the protocol.
fn run_role(role: impl std::future::Future<Output = Result<(), String>>) -> i32 {
    let runtime = match crate::runtime::multi_thread() {
        Ok(rt) => rt,
        Err(err) => {
            out::notice(&format!(
                "missionboard: cannot start the async runtime: {err}"
            ));
            return 1;
        }
    };
    let result = runtime.block_on(role);
    // tokio's stdin reader sits in a blocking thread that never returns on its own;
    // waiting for it would hang the exit.
    runtime.shutdown_background();
    match result {
        Ok(()) => 0,
        Err(message) => {
            out::notice(&message);
            1
        }
    }
}
