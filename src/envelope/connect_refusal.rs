//! A unit's connection the sandbox refused, told apart from every other failure.
//!
//! Landlock refuses a `connect()` to a port outside the ruleset with EACCES, and
//! nothing else is told: the agent sees a failed request and says so in its own
//! words ("stream disconnected", "Cannot connect to API"). What the host knows for
//! sure is which ports it granted and where the agent's own config points it; what
//! the agent says names the address it tried. A failure is called a sandbox refusal
//! only when connects were limited and held by the kernel, the agent's words are
//! about a failed connection, and they name an address on a port the unit was not
//! granted — or name no address at all while the agent's own config points it at an
//! endpoint on a port not granted (opencode says only "Cannot connect to API"), or
//! carry the kernel's own refusal (EACCES, "Permission denied") with no address at
//! all. A failure at a granted address (a model server that is down) is never
//! called one.

use std::sync::LazyLock;

use crate::agents::endpoints::Endpoint;

/// What a unit's host granted for connections, and where the agent was pointed.
#[derive(Debug, Clone)]
pub struct ConnectSite {
    pub agent: String,
    /// The ports the unit may connect to; `None`: connects are not limited.
    pub granted: Option<Vec<u16>>,
    /// Is the connect limit held by the running kernel?
    pub enforced: bool,
    /// The agent's model endpoints as found (its config, its variables, defaults).
    pub endpoints: Vec<Endpoint>,
}

/// A refused connection, worded for a blocker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedConnect {
    /// One line: what was refused, under which envelope.
    pub summary: String,
    /// The endpoint as found, what was granted, and the fix.
    pub detail: String,
}

/// An address in an agent's words: a URL's, or a bare `host:port`.
static ADDRESS: LazyLock<regex::Regex> = LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b(?:(https?|wss?)://)?(\[[0-9a-f:]+\]|localhost|\d{1,3}(?:\.\d{1,3}){3}|[a-z0-9-]+(?:\.[a-z0-9-]+)+)(?::(\d{1,5}))?",
    )
    .expect("the address pattern compiles")
});

/// Words of a failed connection, in the agents' and their runtimes' phrasing.
const CONNECTION_WORDS: &[&str] = &[
    "connect",
    "connection",
    "fetch failed",
    "error sending request",
    "stream disconnected",
    "unable to reach",
    "network",
    "socket",
    "econn",
];

/// The kernel's refusal as a program reports it.
const REFUSAL_WORDS: &[&str] = &["eacces", "permission denied", "os error 13", "errno 13"];

/// `said` (the agent's failure: its error, its last words, its stderr) as a sandbox
/// refusal of a connection under envelope `envelope`, when it is one.
pub fn refused_connect(site: &ConnectSite, envelope: &str, said: &str) -> Option<RefusedConnect> {
    let granted = site.granted.as_ref()?;
    if !site.enforced {
        return None;
    }
    let lower = said.to_lowercase();
    if !CONNECTION_WORDS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let kernel_said = REFUSAL_WORDS.iter().any(|w| lower.contains(w));
    let addresses = addresses(said);
    let refused = addresses.iter().find(|(_, port)| !granted.contains(port));
    // Its words name no address: an endpoint its own config points it at, on a port
    // not granted, is the connection that failed (the agent tried nothing else).
    let configured = || {
        site.endpoints.iter().find_map(|e| {
            e.port
                .filter(|p| !granted.contains(p))
                .map(|p| (e.origin(), p))
        })
    };
    let target = match refused {
        Some((shown, port)) => Some((shown.clone(), *port)),
        // Every address it names was granted: something else failed.
        None if !addresses.is_empty() => return None,
        None => match configured() {
            Some(endpoint) => Some(endpoint),
            None if kernel_said => None,
            None => return None,
        },
    };
    let ports = if granted.is_empty() {
        "none".to_string()
    } else {
        granted
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let agent = &site.agent;
    let summary = match &target {
        Some((shown, port)) => format!(
            "the sandbox refused {agent}'s connection to {shown}: port {port} is not granted by envelope {envelope:?}'s network.connect (granted: {ports})"
        ),
        None => format!(
            "the sandbox refused a connection of {agent}'s (the kernel's EACCES) under envelope {envelope:?}'s network.connect (granted: {ports})"
        ),
    };
    let found: Vec<String> = if site.endpoints.is_empty() {
        vec!["- none: missionboard found no endpoint for it".to_string()]
    } else {
        site.endpoints
            .iter()
            .map(|e| {
                let held = match e.port {
                    Some(p) if granted.contains(&p) => format!("port {p} granted"),
                    Some(p) => format!("port {p} not granted"),
                    None => "not a URL".to_string(),
                };
                format!("- {} ({held})", e.describe())
            })
            .collect()
    };
    let (url, port) = match &target {
        Some((shown, port)) => (shown.clone(), port.to_string()),
        None => ("<its endpoint URL>".to_string(), "<its port>".to_string()),
    };
    let detail = format!(
        "{summary}.\n\nThe endpoint missionboard found for {agent}, and granted under {{model}}:\n{}\n\nFix one of:\n- point {agent}'s own config at the endpoint it should use, where missionboard reads it (doctor --agent {agent} shows the endpoint it finds and where);\n- add \"{url}\" under endpoints of [agents.{agent}] in agents.toml, so {{model}} opens its port;\n- or allow port {port} in the envelope's sandbox.network.connect.",
        found.join("\n")
    );
    Some(RefusedConnect { summary, detail })
}

/// Each `(address as said, port)` in `said` that names a port (a URL's default
/// included); without a scheme, only an IP or `localhost` with a port counts.
fn addresses(said: &str) -> Vec<(String, u16)> {
    let mut out: Vec<(String, u16)> = Vec::new();
    for cap in ADDRESS.captures_iter(said) {
        let scheme = cap.get(1).map(|m| m.as_str().to_lowercase());
        let host = cap.get(2).map_or("", |m| m.as_str());
        // Without a scheme only an IP or localhost: `main.rs:435` is a source line.
        let literal = host.starts_with('[')
            || host.eq_ignore_ascii_case("localhost")
            || host.parse::<std::net::Ipv4Addr>().is_ok();
        if scheme.is_none() && !literal {
            continue;
        }
        let port = match (cap.get(3), scheme.as_deref()) {
            (Some(p), _) => p.as_str().parse::<u16>().ok(),
            (None, Some("https" | "wss")) => Some(443),
            (None, Some("http" | "ws")) => Some(80),
            _ => None,
        };
        let Some(port) = port.filter(|p| *p > 0) else {
            continue;
        };
        let shown = crate::text::sanitize(cap.get(0).map_or("", |m| m.as_str()));
        if !out.iter().any(|(s, p)| *s == shown && *p == port) {
            out.push((shown, port));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(granted: &[u16]) -> ConnectSite {
        ConnectSite {
            agent: "codex".into(),
            granted: Some(granted.to_vec()),
            enforced: true,
            endpoints: vec![Endpoint {
                url: "https://api.openai.com/v1".into(),
                host: Some("api.openai.com".into()),
                port: Some(443),
                found: "codex's built-in openai provider".into(),
            }],
        }
    }

    #[test]
    fn an_ungranted_address_in_a_connection_failure_is_a_refusal() {
        let r = refused_connect(
            &site(&[443]),
            "strict",
            "stream disconnected before completion: error sending request for url (http://127.0.0.1:8080/v1/responses)",
        )
        .unwrap();
        assert_eq!(
            r.summary,
            "the sandbox refused codex's connection to http://127.0.0.1:8080: port 8080 is not granted by envelope \"strict\"'s network.connect (granted: 443)"
        );
        assert!(r.detail.contains("- https://api.openai.com/v1 (from codex's built-in openai provider) (port 443 granted)"), "{}", r.detail);
        assert!(
            r.detail
                .contains("add \"http://127.0.0.1:8080\" under endpoints of [agents.codex]"),
            "{}",
            r.detail
        );
        let r = refused_connect(
            &site(&[443]),
            "strict",
            "Cannot connect to API: connect EACCES 127.0.0.1:9999",
        )
        .unwrap();
        assert!(
            r.summary
                .contains("connection to 127.0.0.1:9999: port 9999"),
            "{}",
            r.summary
        );
    }

    #[test]
    fn a_granted_address_an_open_limit_or_no_connection_words_is_not() {
        let down = "error sending request for url (http://127.0.0.1:8080/v1/responses): connection refused";
        assert_eq!(refused_connect(&site(&[8080]), "strict", down), None);
        let mut open = site(&[]);
        open.granted = None;
        assert_eq!(refused_connect(&open, "strict", down), None);
        let mut unenforced = site(&[]);
        unenforced.enforced = false;
        assert_eq!(refused_connect(&unenforced, "strict", down), None);
        assert_eq!(
            refused_connect(
                &site(&[443]),
                "strict",
                "rate limited, see http://127.0.0.1:9/doc"
            ),
            None
        );
    }

    #[test]
    fn words_without_an_address_name_the_configured_endpoint_that_is_not_granted() {
        let mut s = site(&[443]);
        s.agent = "opencode".into();
        s.endpoints.push(Endpoint::new(
            "http://127.0.0.1:8080/v1",
            "the project's opencode.json".into(),
        ));
        let r = refused_connect(
            &s,
            "strict",
            "Internal error: Cannot connect to API: Was there a typo in the url or port?",
        )
        .unwrap();
        assert_eq!(
            r.summary,
            "the sandbox refused opencode's connection to http://127.0.0.1:8080: port 8080 is not granted by envelope \"strict\"'s network.connect (granted: 443)"
        );
        // Every endpoint it is known to use granted: a server that is down, not a refusal.
        let mut granted = s.clone();
        granted.granted = Some(vec![443, 8080]);
        assert_eq!(
            refused_connect(&granted, "strict", "Cannot connect to API"),
            None
        );
    }

    #[test]
    fn the_kernels_refusal_without_an_address_is_named_as_such() {
        let r = refused_connect(
            &site(&[443]),
            "strict",
            "connect: Permission denied (os error 13)",
        )
        .unwrap();
        assert!(
            r.summary
                .starts_with("the sandbox refused a connection of codex's"),
            "{}",
            r.summary
        );
        assert!(r.detail.contains("allow port <its port>"), "{}", r.detail);
    }
}
