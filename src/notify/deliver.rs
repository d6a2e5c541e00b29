//! The delivery task: fan each target out, claim what is due, send each claimed
//! delivery on a task of its own under timeouts, record how it went. It shares
//! nothing with a mission's run but the store, so a receiver that is down or slow
//! holds up only its own deliveries.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::target::{Message, Target};
use super::{Claimed, Outbox};
use crate::config::{Config, NOTIFY_TEXT, NOTIFY_URL, WEB_URL};
use crate::store::{Store, blocking};

/// How long one send may take, connecting included.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a claim holds: past any send's timeout, so a claim only lapses when its
/// holder died.
const LEASE_MS: i64 = 60_000;
/// How many deliveries one round claims.
const BATCH: usize = 16;
/// When nothing is pushed, how often the task looks anyway (retries fall due).
const LOOK_EVERY: Duration = Duration::from_secs(1);
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// What a round reads from the configuration.
struct Settings {
    targets: Vec<Target>,
    /// When `notify-url` was last set: where a new target's deliveries start.
    configured_at: i64,
    with_text: bool,
    web_url: Option<String>,
}

/// The delivery task's state.
#[derive(Clone)]
pub struct Deliverer {
    outbox: Outbox,
    config: Config,
    /// Who claims: this process's host id.
    me: String,
    http: reqwest::Client,
    /// The page's base when `web-url` is not set: the page this process serves.
    fallback_link: Option<String>,
}

/// Start delivering notifications from this process, until the runtime ends.
/// `fallback_link`: the base of the page this process serves, if any.
pub fn spawn(store: Store, fallback_link: Option<String>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let deliverer = match Deliverer::new(store.clone(), fallback_link) {
            Ok(d) => d,
            Err(e) => return tracing::warn!("notify: cannot deliver notifications: {e}"),
        };
        let mut changes = store.changes().subscribe();
        let mut pruned: Option<Instant> = None;
        loop {
            let prune = pruned.is_none_or(|at| at.elapsed() >= PRUNE_EVERY);
            if prune {
                pruned = Some(Instant::now());
            }
            deliverer.round(prune).await;
            changes.next(LOOK_EVERY).await;
        }
    })
}

impl Deliverer {
    pub fn new(store: Store, fallback_link: Option<String>) -> anyhow::Result<Deliverer> {
        // reqwest is built without a default TLS provider (see Cargo.toml); install ring's.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Deliverer {
            outbox: Outbox::new(store.clone()),
            config: Config::new(store),
            me: crate::host::HostId::current().id,
            http,
            fallback_link,
        })
    }

    /// What a round reads, or `None` when no receiver is configured: then one read,
    /// for the round runs on every commit to the store.
    fn settings(&self) -> anyhow::Result<Option<Settings>> {
        let targets = Target::all(self.config.get(NOTIFY_URL)?.as_deref());
        if targets.is_empty() {
            return Ok(None);
        }
        let configured_at = self
            .config
            .set_at(NOTIFY_URL)?
            .unwrap_or_else(crate::clock::now_ms);
        let with_text = self.config.get(NOTIFY_TEXT)?.as_deref() != Some("none");
        let web_url = self
            .config
            .get(WEB_URL)?
            .or_else(|| self.fallback_link.clone());
        Ok(Some(Settings {
            targets,
            configured_at,
            with_text,
            web_url,
        }))
    }

    /// One round: fan out, claim, and start sending what was claimed.
    async fn round(&self, prune: bool) {
        let me = self.clone();
        let claimed = blocking(
            move || -> anyhow::Result<Option<(Settings, Vec<Claimed>)>> {
                let Some(settings) = me.settings()? else {
                    return Ok(None);
                };
                for t in &settings.targets {
                    me.outbox.fan_out(t, settings.configured_at)?;
                }
                if prune {
                    me.outbox.prune(&settings.targets)?;
                }
                let claimed = me.outbox.claim_due(&me.me, LEASE_MS, BATCH)?;
                Ok(Some((settings, claimed)))
            },
        )
        .await;
        let (settings, claimed) = match claimed {
            Ok(Some(c)) => c,
            Ok(None) => return,
            Err(e) => return tracing::warn!("notify: the outbox could not be read: {e:#}"),
        };
        let settings = Arc::new(settings);
        for c in claimed {
            let (me, settings) = (self.clone(), settings.clone());
            tokio::spawn(async move { me.send(c, &settings).await });
        }
    }

    /// Send one claimed delivery and record how it went.
    async fn send(&self, claimed: Claimed, settings: &Settings) {
        let Some(target) = settings
            .targets
            .iter()
            .find(|t| t.key() == claimed.target)
            .cloned()
        else {
            return self
                .record(claimed, Err("no longer configured".into()), true)
                .await;
        };
        if let (true, Some(ask)) = (claimed.event.kind.is_ask(), claimed.event.ask_id.clone()) {
            let outbox = self.outbox.clone();
            if let Ok(false) = blocking(move || outbox.ask_waits(&ask)).await {
                return self
                    .record(claimed, Err("answered before it was sent".into()), true)
                    .await;
            }
        }
        // What a message may say is read as it is sent: a `notify-text none` set
        // before the event was written holds for it, whatever this round read.
        let me = self.clone();
        let (with_text, web_url) = match blocking(move || me.settings()).await {
            Ok(Some(now)) => (now.with_text, now.web_url),
            // Unreadable, or no receiver configured any more: no text.
            Ok(None) | Err(_) => (false, settings.web_url.clone()),
        };
        let message = Message::of(&claimed.event, with_text, web_url.as_deref());
        let (body, headers) = message.request(target.format);
        let mut request = self
            .http
            .post(&target.url)
            .header("X-Missionboard-Event", claimed.event.id.to_string())
            .body(body);
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let outcome = match request.send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            Ok(r) => Err(format!("the receiver answered {}", r.status())),
            Err(e) if e.is_timeout() => Err("the receiver did not answer in time".to_string()),
            Err(e) if e.is_connect() => Err("the receiver could not be reached".to_string()),
            // The URL may hold the receiver's secret (a Slack or Discord webhook).
            Err(e) => Err(format!("sending failed: {}", e.without_url())),
        };
        self.record(claimed, outcome, false).await;
    }

    /// Record a send: sent, skipped (`skip`), or a failed try to retry.
    async fn record(&self, claimed: Claimed, outcome: Result<(), String>, skip: bool) {
        let (outbox, me) = (self.outbox.clone(), self.me.clone());
        let recorded = blocking(move || match (&outcome, skip) {
            (Ok(()), _) => outbox
                .finish(claimed.event.id, &claimed.target, &me, "sent", None)
                .map(|_| ()),
            (Err(why), true) => outbox
                .finish(claimed.event.id, &claimed.target, &me, "skipped", Some(why))
                .map(|_| ()),
            (Err(why), false) => {
                tracing::info!(
                    event = claimed.event.id,
                    receiver = %receiver_of(&claimed.target),
                    attempt = claimed.attempts + 1,
                    "notify: a delivery failed, to be tried again: {why}"
                );
                outbox.failed(&claimed, &me, why)
            }
        })
        .await;
        if let Err(e) = recorded {
            tracing::warn!("notify: a delivery's outcome could not be recorded: {e}");
        }
    }
}

/// A receiver as the log names it: its scheme and host, never the path (a webhook's
/// path is its secret).
fn receiver_of(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
            let host = host.rsplit('@').next().unwrap_or_default();
            format!("{scheme}://{host}")
        }
        None => "?".into(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_log_names_a_receiver_without_its_secret_path() {
        assert_eq!(
            super::receiver_of("https://user:pw@hooks.slack.com/services/T0/B0/XXXX?x=1"),
            "https://hooks.slack.com"
        );
    }
}
