//! Where notifications go (`notify-url`), what each carries, and how each kind of
//! receiver is spoken to. A target is written `URL [format=ntfy|json|slack]
//! [events=KIND,…]`; the format is guessed from well-known hosts when not given.

use serde_json::json;

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// A unit's question waits on the operator.
    Question,
    /// A gated tool call waits on the operator's verdict.
    Gated,
    /// A compute bound was crossed: the runtime asks whether to extend or stop.
    Bound,
    Landed,
    Derailed,
    Stuck,
    /// The host of an open mission is gone (the mission was reclaimed).
    HostLost,
}

impl EventKind {
    pub const ALL: [EventKind; 7] = [
        EventKind::Question,
        EventKind::Gated,
        EventKind::Bound,
        EventKind::Landed,
        EventKind::Derailed,
        EventKind::Stuck,
        EventKind::HostLost,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Question => "question",
            EventKind::Gated => "gated",
            EventKind::Bound => "bound",
            EventKind::Landed => "landed",
            EventKind::Derailed => "derailed",
            EventKind::Stuck => "stuck",
            EventKind::HostLost => "host-lost",
        }
    }

    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// What a notification's title says.
    pub fn headline(self) -> &'static str {
        match self {
            EventKind::Question => "a question waits",
            EventKind::Gated => "a gated call waits",
            EventKind::Bound => "a compute bound was crossed",
            EventKind::Landed => "a mission landed",
            EventKind::Derailed => "a mission derailed",
            EventKind::Stuck => "a mission is stuck",
            EventKind::HostLost => "a mission's host was lost",
        }
    }

    /// The kind is about an ask (its link goes to the ask's card).
    pub fn is_ask(self) -> bool {
        matches!(
            self,
            EventKind::Question | EventKind::Gated | EventKind::Bound
        )
    }
}

/// How a receiver is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An ntfy topic: the text as the body, title and link in headers.
    Ntfy,
    /// A generic webhook: one JSON object.
    Json,
    /// A Slack or Discord incoming webhook: `text` (Slack) and `content` (Discord).
    Slack,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Ntfy => "ntfy",
            Format::Json => "json",
            Format::Slack => "slack",
        }
    }
}

/// One configured receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub format: Format,
    /// `None`: every kind.
    pub events: Option<Vec<EventKind>>,
}

impl Target {
    /// Parse one `notify-url` entry (the grammar is the configuration's own,
    /// [`crate::config::NotifyEntry`]).
    pub fn parse(spec: &str) -> Result<Target, String> {
        let entry = crate::config::NotifyEntry::parse(spec)?;
        let format = match entry.format {
            Some("ntfy") => Format::Ntfy,
            Some("json") => Format::Json,
            Some(_) => Format::Slack,
            None => guess_format(&entry.url),
        };
        let events = entry.events.map(|names| {
            EventKind::ALL
                .into_iter()
                .filter(|k| names.contains(&k.as_str()))
                .collect()
        });
        Ok(Target {
            url: entry.url,
            format,
            events,
        })
    }

    /// The entry as stored: URL, format, and the events when not all.
    pub fn spec(&self) -> String {
        let mut s = format!("{} format={}", self.url, self.format.as_str());
        if let Some(events) = &self.events {
            s.push_str(" events=");
            s.push_str(
                &events
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        s
    }

    /// What deliveries are keyed by: the receiver's URL.
    pub fn key(&self) -> String {
        self.url.clone()
    }

    pub fn wants(&self, kind: EventKind) -> bool {
        self.events.as_ref().is_none_or(|ks| ks.contains(&kind))
    }

    /// Every target of a stored `notify-url` value (one entry a line), the bad ones
    /// skipped (they were refused when set).
    pub fn all(stored: Option<&str>) -> Vec<Target> {
        stored
            .unwrap_or_default()
            .lines()
            .filter_map(|l| Target::parse(l).ok())
            .collect()
    }
}

fn guess_format(url: &str) -> Format {
    let host = url
        .split_once("://")
        .map(|(_, r)| r.split(['/', '?']).next().unwrap_or_default())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if host == "hooks.slack.com"
        || host.ends_with("discord.com")
        || host.ends_with("discordapp.com")
    {
        Format::Slack
    } else if host == "ntfy.sh" || host.starts_with("ntfy.") {
        Format::Ntfy
    } else {
        Format::Json
    }
}

/// What one notification says, before it is put in a receiver's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub kind: EventKind,
    /// The mission's short id (8 characters), when there is a mission.
    pub mission: Option<String>,
    /// One sanitized line; `None` under `notify-text none`.
    pub summary: Option<String>,
    /// Where on the page the ask or the mission is; `None` with no `web-url`.
    pub link: Option<String>,
}

/// The longest summary a notification carries.
const SUMMARY_CHARS: usize = 200;

impl Message {
    /// The message for `event`: its agent text made one safe line (or left out),
    /// its link made from the page's base and ids the store minted.
    pub fn of(event: &super::Event, with_text: bool, web_url: Option<&str>) -> Message {
        let mission = event.mission_id.as_deref().map(|m| {
            m.chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .take(8)
                .collect()
        });
        let summary = with_text
            .then(|| crate::text::excerpt(&crate::text::one_line(&event.summary), SUMMARY_CHARS))
            .filter(|s| !s.is_empty());
        let id_safe = |id: &str| -> String {
            id.chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect()
        };
        let link = web_url.map(|base| base.trim_end_matches('/')).map(|base| {
            match (&event.ask_id, &event.mission_id) {
                (Some(ask), _) if event.kind.is_ask() => format!("{base}/#ask-{}", id_safe(ask)),
                (_, Some(m)) => format!("{base}/missions/{}", id_safe(m)),
                _ => format!("{base}/"),
            }
        });
        Message {
            kind: event.kind,
            mission,
            summary,
            link,
        }
    }

    /// `missionboard: a question waits (mission 1a2b3c4d)`.
    pub fn title(&self) -> String {
        match &self.mission {
            Some(m) => format!("missionboard: {} (mission {m})", self.kind.headline()),
            None => format!("missionboard: {}", self.kind.headline()),
        }
    }

    /// The request body and its extra headers, for `format`.
    pub fn request(&self, format: Format) -> (Vec<u8>, Vec<(&'static str, String)>) {
        match format {
            Format::Ntfy => {
                let mut headers = vec![("Title", self.title())];
                if let Some(link) = &self.link {
                    headers.push(("Click", link.clone()));
                }
                headers.push(("Tags", self.kind.as_str().to_string()));
                let body = self.summary.clone().unwrap_or_else(|| self.title());
                (body.into_bytes(), headers)
            }
            Format::Json => {
                let mut v = json!({
                    "source": "missionboard",
                    "kind": self.kind.as_str(),
                    "mission": self.mission,
                    "title": self.title(),
                    "link": self.link,
                });
                if let Some(s) = &self.summary {
                    v["summary"] = json!(s);
                }
                (
                    v.to_string().into_bytes(),
                    vec![("Content-Type", "application/json".into())],
                )
            }
            Format::Slack => {
                // Slack reads `<…>` and `&` as markup, Discord reads markdown links
                // and mentions: the agent's words are escaped for each.
                let slack_text = |s: &str| {
                    s.replace('&', "&amp;")
                        .replace('<', "&lt;")
                        .replace('>', "&gt;")
                };
                let discord_text = |s: &str| {
                    let mut out = String::with_capacity(s.len());
                    for c in s.chars() {
                        if "\\*_~`|[]()<>@#:".contains(c) {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out
                };
                let mut text = self.title();
                let mut content = self.title();
                if let Some(s) = &self.summary {
                    text.push_str(&format!(": {}", slack_text(s)));
                    content.push_str(&format!(": {}", discord_text(s)));
                }
                if let Some(link) = &self.link {
                    text.push_str(&format!(" <{link}|open>"));
                    content.push_str(&format!(" <{link}>"));
                }
                let v = json!({
                    "text": text,
                    "content": content,
                    "allowed_mentions": {"parse": []},
                });
                (
                    v.to_string().into_bytes(),
                    vec![("Content-Type", "application/json".into())],
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_names_every_event_kind() {
        let kinds: Vec<&str> = EventKind::ALL.map(EventKind::as_str).to_vec();
        assert_eq!(crate::config::NOTIFY_EVENTS, kinds.as_slice());
    }

    #[test]
    fn an_entry_parses_with_its_format_and_events() {
        let t = Target::parse("https://ntfy.sh/mb-topic events=asks,landed").unwrap();
        assert_eq!(t.format, Format::Ntfy);
        assert_eq!(
            t.spec(),
            "https://ntfy.sh/mb-topic format=ntfy events=question,gated,bound,landed"
        );
        assert!(t.wants(EventKind::Gated) && !t.wants(EventKind::Stuck));
        let slack = Target::parse("https://hooks.slack.com/services/x").unwrap();
        assert_eq!(slack.format, Format::Slack);
        assert_eq!(
            Target::parse("http://127.0.0.1:9/hook format=json")
                .unwrap()
                .spec(),
            "http://127.0.0.1:9/hook format=json"
        );
        assert!(
            Target::parse("ftp://x")
                .unwrap_err()
                .contains("must be an http:// or https:// URL")
        );
        assert!(
            Target::parse("https://x events=nope")
                .unwrap_err()
                .contains("\"nope\"")
        );
        assert!(
            Target::parse("https://x colour=red")
                .unwrap_err()
                .contains("format=…")
        );
    }

    fn event(summary: &str) -> crate::notify::Event {
        crate::notify::Event {
            id: 1,
            kind: EventKind::Question,
            mission_id: Some("0123456789abcdef".into()),
            ask_id: Some("ask-1\"><x".into()),
            summary: summary.into(),
            created_at: 0,
        }
    }

    #[test]
    fn a_summary_is_one_sanitized_line_or_nothing() {
        let e = event("Rename\u{202e} it?\n\x1b[31mred\x1b[0m");
        let m = Message::of(&e, true, Some("https://laptop.example/"));
        assert_eq!(m.summary.as_deref(), Some("Rename it? red"));
        assert_eq!(m.mission.as_deref(), Some("01234567"));
        assert_eq!(
            m.link.as_deref(),
            Some("https://laptop.example/#ask-ask-1x")
        );
        let quiet = Message::of(&e, false, None);
        assert_eq!(quiet.summary, None);
        assert_eq!(quiet.link, None);
        let (body, _) = quiet.request(Format::Json);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert!(v.get("summary").is_none(), "{v}");
        assert!(!String::from_utf8(body).unwrap().contains("Rename"));
    }

    #[test]
    fn slack_and_discord_text_cannot_make_links_or_mentions() {
        let m = Message::of(
            &event("<https://evil|x> [y](https://evil) @everyone"),
            true,
            None,
        );
        let (body, _) = m.request(Format::Slack);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        let text = v["text"].as_str().unwrap();
        assert!(
            text.ends_with(": &lt;https://evil|x&gt; [y](https://evil) @everyone"),
            "{text}"
        );
        let content = v["content"].as_str().unwrap();
        assert!(
            content.contains("\\[y\\]\\(https\\://evil\\) \\@everyone"),
            "{content}"
        );
        assert_eq!(v["allowed_mentions"]["parse"], serde_json::json!([]));
    }
}
