//! What the `/mission` picker says on every surface that offers it (the board, an
//! editor session): its header, its envelope lines and the notice of a fired
//! mission. The grammar and its resolution are the fire verb's ([`super::fire`]).

use crate::envelope::search;
use crate::ops::fire::{EnvelopeEntry, LABEL_SEP, PickerData, Resolved};
#[cfg(test)]
use crate::ops::fire::{MissionLine, ParamEntry, TemplateEntry, USAGE, parse, resolve};

/// A mission id as a notice shows it: its first eight characters.
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
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
        short(mission_id),
        r.agent,
        r.envelope.as_str(),
        r.origin
    );
    if !labels.is_empty() {
        out.push_str(&format!(": {}", labels.join(LABEL_SEP)));
    }
    out
}

/// The notice once a picked mission is queued for a `missionboard host`: its place
/// in the queue, where it may run, and whether a host that can take it is running.
pub fn queued_confirmation(
    r: &Resolved,
    mission_id: &str,
    position: usize,
    on: Option<&str>,
    host_up: bool,
) -> String {
    let place = on
        .map(|l| format!(" for a host labelled {l:?}"))
        .unwrap_or_default();
    let mut out = format!(
        "Mission {} queued at position {position}{place}: agent {:?} under envelope {:?}",
        short(mission_id),
        r.agent,
        r.envelope.as_str(),
    );
    if !host_up {
        out.push_str(&format!(
            " — no `missionboard host` that can take it is running: start one with 'missionboard host{}'",
            on.map(|l| format!(" --label {l}")).unwrap_or_default()
        ));
    }
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
        r.agent,
        r.envelope.as_str(),
        r.origin
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

/// The notice once a template's mission was accepted: fired here, or queued (with
/// its place) for a `missionboard host`, and the intent the parameters made.
pub fn template_confirmation(name: &str, fired: &crate::ops::schedule::TemplateFired) -> String {
    let id = short(&fired.mission_id);
    let intent = crate::text::excerpt(&crate::text::sanitize(&fired.intent), 120);
    match fired.queued {
        None => format!(
            "Mission {id} fired from template {name:?} at agent {:?} under envelope {:?}: {intent}",
            fired.agent, fired.envelope
        ),
        Some(position) => format!(
            "Mission {id} queued from template {name:?} at position {position}{}: {intent}",
            fired
                .on
                .as_deref()
                .map(|l| format!(" for a host labelled {l:?}"))
                .unwrap_or_default()
        ),
    }
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
    let mut lines = vec![
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
    ];
    if !data.templates.is_empty() {
        lines.push(String::new());
        lines.push(match from {
            FiredFrom::Board => {
                "Templates (t picks one and asks for its parameters, or `:mission --template <name> key=value…`):"
            }
            FiredFrom::Session => {
                "Templates (fire one with `missionboard mission fire --template <name> key=value…`):"
            }
        }
        .into());
        for t in &data.templates {
            lines.push(
                format!("  {} {}", t.name, t.params_line())
                    .trim_end()
                    .to_string(),
            );
        }
    }
    lines
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

/// Said when the picker's `t` finds no template to offer.
pub const NO_TEMPLATES: &str = "no templates on the search path — write one as .missionboard/templates/<name>.toml (see docs/schedules.md)";

#[cfg(test)]
mod tests {
    use super::*;

    fn agents(w: &str) -> bool {
        ["demo", "claude"].contains(&w)
    }

    #[test]
    fn the_header_lists_the_templates_with_their_parameters() {
        let mut d = data();
        assert!(
            !header_lines(&d, FiredFrom::Board)
                .iter()
                .any(|l| l.starts_with("Templates"))
        );
        let param = |name: &str| ParamEntry {
            name: name.into(),
            ..ParamEntry::default()
        };
        d.templates = vec![
            TemplateEntry {
                name: "triage".into(),
                params: vec![param("label"), param("repo")],
                error: None,
            },
            TemplateEntry {
                name: "broken".into(),
                params: vec![],
                error: Some("unknown field `x`".into()),
            },
        ];
        let lines = header_lines(&d, FiredFrom::Board);
        assert_eq!(
            &lines[lines.len() - 3..],
            [
                "Templates (t picks one and asks for its parameters, or `:mission --template <name> key=value…`):".to_string(),
                "  triage label=… repo=…".to_string(),
                "  broken (does not load: unknown field `x`)".to_string()
            ]
        );
        let lines = header_lines(&d, FiredFrom::Session);
        assert_eq!(
            lines[lines.len() - 3],
            "Templates (fire one with `missionboard mission fire --template <name> key=value…`):"
        );
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
                    check: None,
                },
                EnvelopeEntry {
                    file_name: "hitl-policy-strict.json".into(),
                    short_name: "strict".into(),
                    summary: String::new(),
                    compute: None,
                    sandbox: vec![],
                    check: None,
                },
            ],
            agents: vec![],
            default_agent: Some("demo".into()),
            default_envelope: Some("default".into()),
            templates: vec![],
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
