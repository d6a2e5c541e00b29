//! The `/mission` grammar (hitl-oracle §7): parsing is pure, and so is resolving a
//! parsed line against what was read from disk and config, so every refusal string
//! is tested without a terminal.

use super::model::{EnvelopeEntry, PickerData};
use crate::agents::AgentCaps;
use crate::envelope::bounds::{self, ComputeField};
use crate::envelope::search;

pub const USAGE: &str = "usage: /mission [--policy <envelope>] [agent-name] <intent> — /mission with no arguments lists the envelopes";

/// A refusal of the grammar as the board says it: its fire line is `:mission` (`/` is
/// the board's filter), an editor session's `/mission`.
pub fn on_board(refusal: String) -> String {
    refusal.replace("/mission", ":mission")
}

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
    pub envelope: String,
    /// `--policy` or `default-mission-policy` (or `picker`).
    pub origin: &'static str,
    pub intent: String,
}

/// Apply the defaults and look the envelope up among those listed.
pub fn resolve(
    policy: Option<String>,
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
        Some(p) => (p, "--policy"),
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
        envelope,
        origin,
        intent,
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
            let hint = if envelopes.is_empty() {
                " and none were found (run `missionboard init` to seed the presets)".to_string()
            } else {
                let names: Vec<&str> = envelopes.iter().map(|e| e.file_name.as_str()).collect();
                format!(". Available: {}", names.join(", "))
            };
            format!("unknown mission envelope {name:?} ({origin}): no such policy file on the search path{hint}")
        })
}

/// The notice once the fleet accepted the mission: one line, with the envelope's
/// bounds labelled for the agent that runs it.
pub fn confirmation(r: &Resolved, labels: &[String], mission_id: &str) -> String {
    let who = if r.agent_named {
        "named agent"
    } else {
        "default mission agent"
    };
    let mut out = format!(
        "Mission {} fired at {who} {:?} under envelope {:?} ({})",
        super::update::short(mission_id),
        r.agent,
        r.envelope,
        r.origin
    );
    if !labels.is_empty() {
        out.push_str(&format!(": {}", labels.join(LABEL_SEP)));
    }
    out
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
    out
}

/// The confirmation a firing session is given once the fleet accepted its mission:
/// who runs it under which envelope, the envelope's bounds labelled for that agent,
/// the intent, the mission's ids and where its reports arrive.
pub fn session_confirmation(
    r: &Resolved,
    labels: &[String],
    mission_id: &str,
    instance: &str,
    session: &str,
    reports: &str,
) -> String {
    let who = if r.agent_named {
        "named agent"
    } else {
        "default mission agent"
    };
    let mut out = format!(
        "Mission fired at {who} {:?} under envelope {:?} ({}).\n",
        r.agent, r.envelope, r.origin
    );
    if !labels.is_empty() {
        out.push_str(&format!("Envelope: {}\n", labels.join(LABEL_SEP)));
    }
    out.push_str(&format!("Intent: {}\n", r.intent));
    out.push_str(&format!(
        "Mission {mission_id} (instance {instance}, session {session}). {reports}"
    ));
    out
}

/// The header the picker shows above its lists.
pub fn header_lines(data: &PickerData, from: FiredFrom) -> Vec<String> {
    let default = |v: &Option<String>, key: &str, what: &str| match v {
        Some(v) if !v.is_empty() => v.clone(),
        _ => format!("(none — set `missionboard config set {key} <{what}>`)"),
    };
    let (intro, c) = match from {
        FiredFrom::Board => (
            "Fire a mission from this board (or type it on the command line):",
            ':',
        ),
        FiredFrom::Session => ("Fire a mission from this session:", '/'),
    };
    vec![
        intro.into(),
        format!(
            "  {c}mission <intent>                              the default agent, the default envelope"
        ),
        format!("  {c}mission <agent-name> <intent>                 a named declared agent"),
        format!(
            "  {c}mission --policy <envelope> [agent] <intent>  bound this one mission differently"
        ),
        String::new(),
        format!(
            "Default agent:    {}",
            default(&data.default_agent, "default-mission-agent", "name")
        ),
        format!(
            "Default envelope: {}",
            default(&data.default_envelope, "default-mission-policy", "envelope")
        ),
    ]
}

/// Where a mission is fired from, which names the command the header shows: the
/// board's command line takes `:mission`, an editor session `/mission`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FiredFrom {
    Board,
    Session,
}

/// One envelope line of the listing: the `* ` marker for the default, the file
/// name, and the character line two spaces after it.
pub fn envelope_line(e: &EnvelopeEntry, default: Option<&str>) -> String {
    let is_default = default
        .is_some_and(|d| search::file_name(d).is_ok_and(|f| f == e.file_name) || d == e.file_name);
    let marker = if is_default { "* " } else { "  " };
    if e.summary.is_empty() {
        format!("{marker}{}", e.file_name)
    } else {
        format!("{marker}{}  {}", e.file_name, e.summary)
    }
}

/// Shown under the envelope lines when none exist.
pub const NO_ENVELOPES: &str =
    "No envelopes found on the policy search path — run `missionboard init` to seed the presets.";

#[cfg(test)]
mod tests {
    #[test]
    fn the_board_s_refusals_point_at_its_own_fire_line() {
        let data = super::PickerData::default();
        let refusals = [
            super::parse("--wait go", |_| false).unwrap_err(),
            super::parse("--policy", |_| false).unwrap_err(),
            super::resolve(None, None, "go".into(), &data).unwrap_err(),
        ];
        for refusal in refusals {
            assert!(refusal.contains("/mission"), "{refusal}");
            let said = super::on_board(refusal);
            assert!(
                said.contains(":mission") && !said.contains("/mission"),
                "{said}"
            );
        }
    }
    use super::*;

    fn agents(w: &str) -> bool {
        ["demo", "claude"].contains(&w)
    }

    fn data() -> PickerData {
        PickerData {
            envelopes: vec![
                EnvelopeEntry {
                    file_name: "hitl-policy-default.json".into(),
                    short_name: "default".into(),
                    summary: "unruled calls stop for approval".into(),
                    compute: None,
                    sandbox: vec![],
                },
                EnvelopeEntry {
                    file_name: "hitl-policy-strict.json".into(),
                    short_name: "strict".into(),
                    summary: String::new(),
                    compute: None,
                    sandbox: vec![],
                },
            ],
            agents: vec![],
            default_agent: Some("demo".into()),
            default_envelope: Some("default".into()),
        }
    }

    #[test]
    fn grammar_forms() {
        assert_eq!(parse("  ", agents), Ok(MissionLine::List));
        assert_eq!(
            parse("fix the flaky test", agents),
            Ok(MissionLine::Fire {
                policy: None,
                agent: None,
                intent: "fix the flaky test".into()
            })
        );
        assert_eq!(
            parse("claude fix it", agents),
            Ok(MissionLine::Fire {
                policy: None,
                agent: Some("claude".into()),
                intent: "fix it".into()
            })
        );
        assert_eq!(
            parse("--policy=strict demo land: go", agents),
            Ok(MissionLine::Fire {
                policy: Some("strict".into()),
                agent: Some("demo".into()),
                intent: "land: go".into()
            })
        );
        assert_eq!(
            parse("--policy strict go now", agents),
            Ok(MissionLine::Fire {
                policy: Some("strict".into()),
                agent: None,
                intent: "go now".into()
            })
        );
    }

    #[test]
    fn refusals_are_verbatim() {
        assert_eq!(
            parse("--policy", agents).unwrap_err(),
            "--policy needs an envelope name: usage: /mission [--policy <envelope>] [agent-name] <intent> — /mission with no arguments lists the envelopes"
        );
        assert_eq!(
            parse("--wait go", agents).unwrap_err(),
            "unknown /mission flag \"--wait\": the only flag is --policy <envelope>, and flags must come before the agent and intent (usage: /mission [--policy <envelope>] [agent-name] <intent> — /mission with no arguments lists the envelopes)"
        );
        assert_eq!(parse("--policy strict", agents).unwrap_err(), USAGE);

        let mut d = data();
        d.default_agent = None;
        assert!(resolve(None, None, "x".into(), &d).unwrap_err().starts_with(
            "no mission agent: name one as `/mission <agent-name> <intent>`, or set a default with `missionboard config set default-mission-agent <name>`"
        ));
        let mut d = data();
        d.default_envelope = None;
        assert!(
            resolve(None, None, "x".into(), &d)
                .unwrap_err()
                .starts_with(
                    "no mission envelope: name one as `/mission --policy <envelope> <intent>`"
                )
        );
        assert_eq!(
            resolve(Some("nope".into()), None, "x".into(), &data()).unwrap_err(),
            "unknown mission envelope \"nope\" (--policy): no such policy file on the search path. Available: hitl-policy-default.json, hitl-policy-strict.json"
        );
        let mut d = data();
        d.envelopes.clear();
        assert_eq!(
            resolve(None, None, "x".into(), &d).unwrap_err(),
            "unknown mission envelope \"default\" (default-mission-policy): no such policy file on the search path and none were found (run `missionboard init` to seed the presets)"
        );
        assert!(resolve(Some("../etc".into()), None, "x".into(), &data()).is_err());
    }

    #[test]
    fn resolves_defaults_and_marks_the_default_envelope() {
        let r = resolve(None, None, "go".into(), &data()).unwrap();
        assert_eq!(r.agent, "demo");
        assert!(!r.agent_named);
        assert_eq!(r.origin, "default-mission-policy");
        let d = data();
        assert_eq!(
            envelope_line(&d.envelopes[0], Some("default")),
            "* hitl-policy-default.json  unruled calls stop for approval"
        );
        assert_eq!(
            envelope_line(&d.envelopes[1], Some("default")),
            "  hitl-policy-strict.json"
        );
        assert_eq!(
            confirmation(&r, &[], "a1b2c3d4-5555"),
            "Mission a1b2c3d4 fired at default mission agent \"demo\" under envelope \"default\" (default-mission-policy)"
        );
        let labels = [
            "maxTokens 2,000,000 · best-effort".to_string(),
            "onExhausted finish_stuck".to_string(),
        ];
        assert_eq!(
            confirmation(&r, &labels, "m1"),
            "Mission m1 fired at default mission agent \"demo\" under envelope \"default\" (default-mission-policy): maxTokens 2,000,000 · best-effort; onExhausted finish_stuck"
        );
        let text = session_confirmation(&r, &labels, "m1", "i1", "s1", "Reports arrive here.");
        assert_eq!(
            text,
            "Mission fired at default mission agent \"demo\" under envelope \"default\" (default-mission-policy).\nEnvelope: maxTokens 2,000,000 · best-effort; onExhausted finish_stuck\nIntent: go\nMission m1 (instance i1, session s1). Reports arrive here."
        );
    }
}
