//! `missionboard template list|show`, `schedule add|list|show|pause|resume|remove`
//! and `trigger add|list|remove|rotate`: thin over `ops::schedule` and
//! `ops::trigger`, which check and record; this only parses and prints.

use clap::Subcommand;

use super::Ctx;
use super::out::{self, outln};
use crate::ops::{schedule, trigger};
use crate::row;
use crate::sched::schedules::{Fires, Schedule, Schedules};
use crate::sched::template;
use crate::sched::triggers::Triggers;

#[derive(Subcommand, Debug)]
pub(super) enum TemplateCmd {
    /// The templates on the search path (templates/<name>.toml in .missionboard/, then home).
    List {
        #[arg(long)]
        json: bool,
    },
    /// One template: its agent, envelope, intent and parameters.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
pub(super) enum ScheduleCmd {
    /// Fire a template (or an agent and intent) on a cron schedule, into the queue
    /// every `missionboard host` runs.
    Add {
        /// The schedule's name.
        name: String,
        /// The cron expression: minute hour day-of-month month day-of-week (a sixth
        /// field in front counts seconds), or @hourly, @daily, @weekly.
        #[arg(long, value_name = "EXPR")]
        cron: String,
        /// The IANA time zone the expression is read in (default UTC).
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// The template to fire; the words after the name are its key=value parameters.
        #[arg(long, value_name = "NAME")]
        template: Option<String>,
        /// With --template: key=value parameters; without: the agent, then the intent.
        words: Vec<String>,
        /// The envelope of a plain (non-template) schedule.
        #[arg(long, conflicts_with = "template")]
        policy: Option<String>,
        /// Ticks that came while no host ran: skip them, or run once for them all.
        #[arg(long, value_name = "skip|once", default_value = "skip")]
        missed: String,
        /// While the previous mission it fired is open: skip the tick, or queue anyway.
        #[arg(long, value_name = "skip|queue", default_value = "queue")]
        overlap: String,
    },
    /// Every schedule: its next run and its last outcome.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One schedule and what it fired.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Stop firing it until resumed.
    Pause { name: String },
    /// Fire it again from its next tick (ticks while paused are not owed).
    Resume { name: String },
    /// Remove it (the missions it fired keep their record).
    Remove { name: String },
}

#[derive(Subcommand, Debug)]
pub(super) enum TriggerCmd {
    /// A signed webhook, POST /hooks/<name> on the web server, that fires a template.
    Add {
        /// The trigger's name (its path: /hooks/<name>).
        name: String,
        /// The template it fires.
        #[arg(long, value_name = "NAME")]
        template: String,
        /// Parameters from the JSON body: key=$.path (e.g. ref=$.ref).
        params: Vec<String>,
    },
    /// Every trigger: its template, parameters and last delivery.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Remove a trigger and its secret.
    Remove { name: String },
    /// Mint a new secret (shown once); the old one stops working at once.
    Rotate { name: String },
}

pub(super) fn template(ctx: &Ctx, cmd: TemplateCmd) -> anyhow::Result<i32> {
    match cmd {
        TemplateCmd::List { json } => {
            let listed = template::list(&ctx.paths);
            if json {
                let rows: Vec<_> = listed
                    .iter()
                    .map(|l| match &l.template {
                        Ok(t) => serde_json::json!({"name": l.name, "path": l.path, "template": t}),
                        Err(e) => serde_json::json!({"name": l.name, "path": l.path, "error": e}),
                    })
                    .collect();
                out::json(&serde_json::json!({ "templates": rows }))?;
                return Ok(0);
            }
            if listed.is_empty() {
                outln!(
                    "No templates. Write one as .missionboard/templates/<name>.toml (or in ~/.missionboard/templates/); see docs/schedules.md."
                )?;
                return Ok(0);
            }
            let mut rows = vec![row!["NAME", "AGENT", "PARAMS", "INTENT"]];
            for l in &listed {
                match &l.template {
                    Ok(t) => rows.push(row![
                        l.name,
                        t.agent,
                        t.params.keys().cloned().collect::<Vec<_>>().join(","),
                        t.intent
                    ]),
                    Err(e) => rows.push(row![l.name, "-", "-", format!("does not load: {e}")]),
                }
            }
            out::text(&crate::table::render(&rows))?;
            Ok(0)
        }
        TemplateCmd::Show { name, json } => {
            let l = template::load(&ctx.paths, &name).map_err(anyhow::Error::msg)?;
            if json {
                out::json(
                    &serde_json::json!({"name": l.name, "path": l.path, "template": l.template}),
                )?;
                return Ok(0);
            }
            let t = &l.template;
            outln!("Template {} ({})", l.name, l.path.display())?;
            outln!("Agent:    {}", t.agent)?;
            outln!(
                "Envelope: {}",
                t.envelope.as_deref().unwrap_or("(default-mission-policy)")
            )?;
            outln!("Intent:   {}", t.intent)?;
            if t.worktree {
                outln!("Worktree: yes")?;
            }
            if let Some(c) = &t.check {
                outln!("Check:    {c}")?;
            }
            if let Some(on) = &t.on {
                outln!("On:       hosts labelled {on}")?;
            }
            for (k, p) in &t.params {
                let default = match &p.default {
                    Some(d) => format!(" (default {d:?})"),
                    None => " (required)".into(),
                };
                outln!("Param {k}{default}: {}", p.description)?;
            }
            Ok(0)
        }
    }
}

pub(super) fn schedule(ctx: &Ctx, cmd: ScheduleCmd) -> anyhow::Result<i32> {
    match cmd {
        ScheduleCmd::Add {
            name,
            cron,
            tz,
            template,
            words,
            policy,
            missed,
            overlap,
        } => {
            let host = ctx.host(&ctx.store()?)?;
            seed_envelopes(ctx);
            let fires = match template {
                Some(template) => Fires::Template {
                    template,
                    params: template::parse_pairs(&words).map_err(anyhow::Error::msg)?,
                },
                None => {
                    let Some((agent, intent)) = words.split_first().filter(|(_, i)| !i.is_empty())
                    else {
                        anyhow::bail!(
                            "schedule add needs --template <name> [key=value…], or an agent and an intent: schedule add {name} --cron \"…\" <agent> \"<intent>\" --policy <envelope>"
                        );
                    };
                    let (envelope, _) =
                        crate::ops::fire::envelope_or_default(&host, policy.as_deref())?;
                    Fires::Plain {
                        agent: agent.clone(),
                        intent: intent.join(" "),
                        policy: envelope.as_str().to_string(),
                    }
                }
            };
            let s = schedule::add(
                &host,
                schedule::NewSchedule {
                    name,
                    cron,
                    tz,
                    fires,
                    missed,
                    overlap,
                },
            )?;
            outln!(
                "Schedule {} added: {} ({}), next run {}.",
                s.name,
                s.cron,
                s.tz,
                crate::clock::rfc3339(s.next_tick)
            )?;
            outln!(
                "Every live 'missionboard host' on this store fires it into the queue, each tick once."
            )?;
            Ok(0)
        }
        ScheduleCmd::List { json } => {
            let list = match ctx.existing_store()? {
                Some(store) => Schedules::new(store).list()?,
                None => Vec::new(),
            };
            if json {
                out::json(&serde_json::json!({ "schedules": list }))?;
                return Ok(0);
            }
            if list.is_empty() {
                outln!(
                    "No schedules. Add one with 'missionboard schedule add <name> --cron \"0 9 * * MON-FRI\" --template <t>'."
                )?;
                return Ok(0);
            }
            let mut rows = vec![row!["NAME", "CRON", "FIRES", "NEXT RUN", "LAST OUTCOME"]];
            for s in &list {
                rows.push(row![
                    s.name,
                    format!("{} ({})", s.cron, s.tz),
                    fires_label(&s.fires),
                    next_label(s),
                    s.last_outcome.as_deref().unwrap_or("-")
                ]);
            }
            out::text(&crate::table::render(&rows))?;
            Ok(0)
        }
        ScheduleCmd::Show { name, json } => {
            let store = ctx.required_store()?;
            let s = schedule::get(&ctx.host(&store)?, &name)?;
            let fired = Schedules::new(store).fired("schedule", &name, 20)?;
            if json {
                let fired: Vec<_> = fired
                    .iter()
                    .map(|(f, m, o)| serde_json::json!({"tick": f.key.parse::<i64>().map(crate::clock::rfc3339).unwrap_or_default(), "missionId": m, "outcome": o}))
                    .collect();
                out::json(&serde_json::json!({"schedule": s, "fired": fired}))?;
                return Ok(0);
            }
            outln!("Schedule {}: {} ({})", s.name, s.cron, s.tz)?;
            outln!("Fires:    {}", fires_label(&s.fires))?;
            outln!("Missed:   {}   Overlap: {}", s.missed, s.overlap)?;
            outln!("Next run: {}", next_label(&s))?;
            outln!(
                "Last:     {}",
                s.last_outcome.as_deref().unwrap_or("nothing yet")
            )?;
            for (f, _, outcome) in &fired {
                let tick = f
                    .key
                    .parse::<i64>()
                    .map(crate::clock::rfc3339)
                    .unwrap_or_default();
                outln!("  tick {tick}: {outcome}")?;
            }
            Ok(0)
        }
        ScheduleCmd::Pause { name } => {
            schedule::pause(&ctx.host(&ctx.required_store()?)?, &name)?;
            outln!(
                "Schedule {name} paused: its ticks pass unfired until 'missionboard schedule resume {name}'."
            )?;
            Ok(0)
        }
        ScheduleCmd::Resume { name } => {
            let next = schedule::resume(&ctx.host(&ctx.required_store()?)?, &name)?;
            outln!(
                "Schedule {name} resumed: next run {}.",
                crate::clock::rfc3339(next)
            )?;
            Ok(0)
        }
        ScheduleCmd::Remove { name } => {
            schedule::remove(&ctx.host(&ctx.required_store()?)?, &name)?;
            outln!("Schedule {name} removed; the missions it fired keep their record.")?;
            Ok(0)
        }
    }
}

fn fires_label(f: &Fires) -> String {
    match f {
        Fires::Template { template, params } => {
            let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
            if p.is_empty() {
                format!("template {template}")
            } else {
                format!("template {template} {}", p.join(" "))
            }
        }
        Fires::Plain {
            agent,
            intent,
            policy,
        } => format!("{agent} under {policy}: {intent}"),
    }
}

fn next_label(s: &Schedule) -> String {
    if s.paused {
        "paused".into()
    } else {
        crate::clock::rfc3339(s.next_tick)
    }
}

pub(super) fn trigger(ctx: &Ctx, cmd: TriggerCmd) -> anyhow::Result<i32> {
    match cmd {
        TriggerCmd::Add {
            name,
            template,
            params,
        } => {
            let store = ctx.store()?;
            seed_envelopes(ctx);
            let pairs = template::parse_pairs(&params).map_err(anyhow::Error::msg)?;
            let (t, secret) = trigger::add(&ctx.host(&store)?, &name, &template, &pairs)?;
            outln!(
                "Trigger {} added: POST /hooks/{} on the web server fires template {}.",
                t.name,
                t.name,
                t.template
            )?;
            outln!(
                "Secret (shown this once; set it as the webhook's secret, content type application/json):"
            )?;
            outln!("{secret}")?;
            outln!(
                "Requests must carry X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>; the web server verifying them must run with this home ({}).",
                ctx.paths.home.display()
            )?;
            Ok(0)
        }
        TriggerCmd::List { json } => {
            let list = match ctx.existing_store()? {
                Some(store) => Triggers::new(store).list()?,
                None => Vec::new(),
            };
            if json {
                out::json(&serde_json::json!({ "triggers": list }))?;
                return Ok(0);
            }
            if list.is_empty() {
                outln!(
                    "No triggers. Add one with 'missionboard trigger add <name> --template <t> key=$.path'."
                )?;
                return Ok(0);
            }
            let mut rows = vec![row!["NAME", "TEMPLATE", "PARAMS", "LAST DELIVERY"]];
            for t in &list {
                let p: Vec<String> = t.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let last = match (t.last_at, &t.last_outcome) {
                    (Some(at), Some(o)) => format!("{}: {o}", crate::clock::rfc3339(at)),
                    _ => "-".into(),
                };
                rows.push(row![t.name, t.template, p.join(" "), last]);
            }
            out::text(&crate::table::render(&rows))?;
            Ok(0)
        }
        TriggerCmd::Remove { name } => {
            trigger::remove(&ctx.host(&ctx.required_store()?)?, &name)?;
            outln!("Trigger {name} removed with its secret: /hooks/{name} now answers 404.")?;
            Ok(0)
        }
        TriggerCmd::Rotate { name } => {
            let secret = trigger::rotate(&ctx.host(&ctx.required_store()?)?, &name)?;
            outln!(
                "Trigger {name} has a new secret (shown this once; the old one no longer verifies):"
            )?;
            outln!("{secret}")?;
            Ok(0)
        }
    }
}

/// The shipped envelopes are always there to be named, as a fire finds them.
fn seed_envelopes(ctx: &Ctx) {
    if let Err(e) = crate::presets::seed_policies_quietly(&ctx.paths.home) {
        tracing::warn!("could not refresh the preset envelopes: {e}");
    }
}
