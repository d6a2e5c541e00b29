//! `missionboard host [--width N] [--label L]… [--stop-on-exit]`: run the durable
//! queue in the foreground (systemd, launchd or tmux keep it running), printing one
//! line per thing it does.

use super::Ctx;
use super::out::outln;
use crate::daemon::{Event, Options};
use crate::presets;
use crate::signals::Signals;

pub(super) struct HostArgs {
    pub width: Option<u64>,
    pub labels: Vec<String>,
    pub stop_on_exit: bool,
    /// Serve the web page from this process too, on this address.
    pub web: Option<String>,
}

pub(super) fn run(ctx: &Ctx, args: HostArgs) -> anyhow::Result<i32> {
    let mut labels = Vec::new();
    for label in args.labels {
        let label = label.trim().to_string();
        if label.is_empty() || label.contains(char::is_whitespace) {
            anyhow::bail!("--label {label:?}: a host label is one word (e.g. gpu, laptop)");
        }
        if !labels.contains(&label) {
            labels.push(label);
        }
    }
    let store = ctx.store()?;
    if let Err(e) = presets::seed_policies_quietly(&ctx.paths.home) {
        tracing::warn!("could not refresh the preset envelopes: {e}");
    }
    // The page binds before the host starts, so a refused address leaves nothing
    // running; TLS and a proxy are `missionboard web`'s to configure.
    let web = match args.web {
        Some(listen) => {
            let server = crate::web::Server::bind(
                ctx.paths.clone(),
                store.clone(),
                crate::web::WebOptions {
                    listen,
                    ..Default::default()
                },
            )
            .map_err(|e| {
                anyhow::anyhow!(
                    "{e:#}\n(`host --web` serves loopback only: for TLS or a proxy, run `missionboard web` beside the host)"
                )
            })?;
            for line in server.banner() {
                outln!("{line}")?;
            }
            Some(server)
        }
        None => None,
    };
    let runtime = crate::runtime::multi_thread()?;
    let paths = ctx.paths.clone();
    runtime.block_on(async move {
        let (p, s) = (paths.clone(), store.clone());
        let host = crate::store::blocking(move || crate::daemon::open_host(&p, &s)).await?;
        let page = web.as_ref().map(|s| s.base_url.clone());
        let notifier = crate::notify::spawn(store.clone(), page);
        if let Some(server) = web {
            let mut server = server.on(host.clone());
            // This host delivers the notifications; its page need not as well.
            server.deliver_notifications = false;
            tokio::spawn(async move {
                if let Err(e) = server.run().await {
                    tracing::warn!("host: the web page stopped: {e:#}");
                }
            });
        }
        let mut signals = Signals::termination_or_interrupt()?;
        let options = Options {
            width: args.width,
            labels,
            stop_on_exit: args.stop_on_exit,
        };
        let shutdown = async move {
            signals.next().await;
        };
        crate::daemon::run(host, options, shutdown, |event| {
            // Output is best-effort: a host keeps running with nobody reading it.
            let _ = say(&event);
        })
        .await?;
        notifier.abort();
        anyhow::Ok(0)
    })
}

fn say(event: &Event) -> anyhow::Result<()> {
    match event {
        Event::Started {
            host,
            width,
            labels,
        } => {
            let width = match width {
                0 => "unlimited".to_string(),
                w => w.to_string(),
            };
            let labels = if labels.is_empty() {
                String::new()
            } else {
                format!(", labels {}", labels.join(", "))
            };
            outln!(
                "Host {} on {} (pid {}) is taking queued missions: width {width}{labels}. TERM or Ctrl-C leaves cleanly: a run parked on a question stays parked, a running mission goes back to the queue.",
                host.id,
                host.machine_label(),
                host.pid
            )?;
        }
        Event::Claimed {
            mission,
            agent,
            intent,
        } => outln!("Claimed mission {mission} for agent {agent:?}: {intent}")?,
        Event::StartFailed { mission, error } => {
            outln!("Mission {mission} could not start here and is derailed: {error}")?
        }
        Event::Resumed { mission } => {
            outln!("Resumed mission {mission}: its question was answered.")?
        }
        Event::Restarted {
            mission,
            session,
            reopened: Some(method),
        } => outln!(
            "Mission {mission} carries on in its earlier session {session}: its agent {} it ({method}).",
            if *method == "session/resume" {
                "resumed"
            } else {
                "loaded"
            }
        )?,
        Event::Restarted {
            mission,
            session,
            reopened: None,
        } => outln!(
            "Mission {mission} starts afresh in session {session}: its agent could not reopen its earlier session (it advertises neither sessionCapabilities.resume nor loadSession, or refused it), so it begins from its intent again."
        )?,
        Event::Reclaimed { mission, machine } => outln!(
            "Collected mission {mission} as abandoned: its host on {machine} is gone and nothing can resume it."
        )?,
        Event::Scheduled {
            schedule, outcome, ..
        } => outln!("Schedule {schedule}: {outcome}.")?,
        Event::WaitsForMemory { mission, figures } => outln!(
            "Mission {mission} waits in the queue for memory: {figures}. It starts when units end and free the room."
        )?,
        Event::Leaving {
            requeued,
            parked,
            stopped,
        } => outln!(
            "Host leaving: {requeued} mission(s) back in the queue, {parked} parked on a question, {stopped} stopped."
        )?,
    }
    Ok(())
}
