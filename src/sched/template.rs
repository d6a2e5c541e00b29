//! Mission templates: `templates/<name>.toml` on the envelope search path (the
//! workspace `.missionboard/`, then home; the first directory holding the file
//! wins), each a mission to fire with `{{param}}` placeholders in its intent.
//!
//! A template is data. Its parameters are filled into the intent only, as plain
//! text, in one pass over the template's own text: a value is never interpreted,
//! never reaches a shell (the check command takes no parameters), and a value that
//! holds `{{` is not expanded again. Unknown fields refuse, as envelopes do.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::paths::Paths;

/// The directory under each search directory that holds templates.
pub const DIR: &str = "templates";

/// One parameter a template declares.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Param {
    /// What the value is, for `template show` and a refusal naming it.
    #[serde(default)]
    pub description: String,
    /// The value when the fire gives none (`None`: the fire must give one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// A template file, as written.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// The declared agent it fires at.
    pub agent: String,
    /// The envelope that bounds it (else `default-mission-policy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope: Option<String>,
    /// The intent, with `{{param}}` placeholders.
    pub intent: String,
    /// Work in a git worktree of its own.
    #[serde(default)]
    pub worktree: bool,
    /// The command that must pass before it lands (replaces the envelope's check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// The host label it must run under (a queued fire's `--on`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// Its parameters, by name.
    #[serde(default)]
    pub params: BTreeMap<String, Param>,
}

/// A template found on the search path and parsed.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub name: String,
    pub path: PathBuf,
    pub template: Template,
}

/// What a template comes to with its parameters filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filled {
    pub agent: String,
    pub envelope: Option<String>,
    pub intent: String,
    pub worktree: bool,
    pub check: Option<String>,
    pub on: Option<String>,
}

/// Refuse a name that is not a bare word: templates are looked up on the search
/// path, never anywhere on disk.
pub fn check_name(name: &str) -> Result<(), String> {
    if is_word(name) {
        Ok(())
    } else {
        Err(format!(
            "template name {name:?} must be a bare name of letters, digits, '-' and '_' (the file templates/<name>.toml in .missionboard/ or ~/.missionboard/)"
        ))
    }
}

fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The placeholders of `intent` in order of appearance: the names between `{{`
/// and `}}`. A `{{` left open, or holding anything but a parameter name, is an
/// error naming it.
pub fn placeholders(intent: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut rest = intent;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(
                "intent: a `{{` is never closed: write a parameter as {{name}}".to_string(),
            );
        };
        let name = after[..end].trim();
        if !is_word(name) {
            return Err(format!(
                "intent: `{{{{{}}}}}` is not a parameter: a placeholder is {{{{name}}}} with a name of letters, digits, '-' and '_'",
                &after[..end]
            ));
        }
        out.push(name.to_string());
        rest = &after[end + 2..];
    }
    Ok(out)
}

impl Template {
    /// Parse and check a template file: unknown fields refuse, every placeholder is
    /// declared and every declared parameter is used, defaults are single-line.
    pub fn parse(text: &str) -> Result<Template, String> {
        let t: Template = toml::from_str(text).map_err(|e| e.message().trim().to_string())?;
        t.validate()?;
        Ok(t)
    }

    fn validate(&self) -> Result<(), String> {
        if self.agent.trim().is_empty() {
            return Err("agent: name the declared agent it fires at".into());
        }
        if self.intent.trim().is_empty() || self.intent.contains(['\n', '\r']) {
            return Err("intent: one non-blank line, with {{param}} placeholders".into());
        }
        if let Some(e) = &self.envelope
            && e.trim().is_empty()
        {
            return Err(
                "envelope: name an envelope, or leave the field out for default-mission-policy"
                    .into(),
            );
        }
        if let Some(on) = &self.on
            && (on.trim().is_empty() || on.contains(char::is_whitespace))
        {
            return Err("on: a host label is one word (e.g. gpu, laptop)".into());
        }
        if let Some(c) = &self.check
            && (c.trim().is_empty() || c.contains(['\n', '\r']))
        {
            return Err("check: one non-blank command line".into());
        }
        let used = placeholders(&self.intent)?;
        for name in &used {
            if !self.params.contains_key(name) {
                return Err(format!(
                    "intent: {{{{{name}}}}} is not declared: add [params.{name}] with a description (and a default if it may be left out)"
                ));
            }
        }
        for (name, p) in &self.params {
            if !is_word(name) {
                return Err(format!(
                    "params.{name}: a parameter name is letters, digits, '-' and '_'"
                ));
            }
            if !used.contains(name) {
                return Err(format!(
                    "params.{name}: declared but the intent never uses {{{{{name}}}}}"
                ));
            }
            if let Some(d) = &p.default {
                check_value(name, d)?;
            }
        }
        Ok(())
    }

    /// Fill the parameters in: `given` are `key=value` pairs as typed. A missing or
    /// unknown parameter, a repeated one and a value that is not a single line are
    /// refused, each naming it.
    pub fn fill(&self, given: &[(String, String)]) -> Result<Filled, String> {
        let mut values: BTreeMap<&str, &str> = BTreeMap::new();
        for (k, v) in given {
            if !self.params.contains_key(k) {
                let known: Vec<&str> = self.params.keys().map(String::as_str).collect();
                return Err(format!(
                    "unknown template parameter {k:?}: {}",
                    if known.is_empty() {
                        "this template takes none".to_string()
                    } else {
                        format!("it takes {}", known.join(", "))
                    }
                ));
            }
            check_value(k, v)?;
            if values.insert(k, v).is_some() {
                return Err(format!("template parameter {k:?} is given twice"));
            }
        }
        let mut missing = Vec::new();
        for (name, p) in &self.params {
            if !values.contains_key(name.as_str()) {
                match &p.default {
                    Some(d) => {
                        values.insert(name, d);
                    }
                    None => missing.push(name.as_str()),
                }
            }
        }
        if !missing.is_empty() {
            let described: Vec<String> = missing
                .iter()
                .map(|m| {
                    let d = &self.params[*m].description;
                    if d.is_empty() {
                        format!("{m}=…")
                    } else {
                        format!("{m}=… ({d})")
                    }
                })
                .collect();
            return Err(format!(
                "missing template parameter{}: give {}",
                if missing.len() == 1 { "" } else { "s" },
                described.join(", ")
            ));
        }
        // One pass over the template's text: a value is copied, never read again.
        let mut intent = String::new();
        let mut rest = self.intent.as_str();
        while let Some(start) = rest.find("{{") {
            intent.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after.find("}}").expect("checked when parsed");
            intent.push_str(values[after[..end].trim()]);
            rest = &after[end + 2..];
        }
        intent.push_str(rest);
        Ok(Filled {
            agent: self.agent.trim().to_string(),
            envelope: self.envelope.clone(),
            intent,
            worktree: self.worktree,
            check: self.check.clone(),
            on: self.on.clone(),
        })
    }
}

/// The longest parameter value, in characters: a value lands in the intent, which
/// every surface shows on one line.
pub const MAX_VALUE_CHARS: usize = 2000;

/// A parameter value is one line of text without control characters, of at most
/// [`MAX_VALUE_CHARS`].
fn check_value(name: &str, value: &str) -> Result<(), String> {
    if value.chars().count() > MAX_VALUE_CHARS {
        return Err(format!(
            "template parameter {name:?} is longer than {MAX_VALUE_CHARS} characters"
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(format!(
            "template parameter {name:?} must be a single line of text (no line breaks or control characters)"
        ));
    }
    Ok(())
}

/// Split `key=value` words as typed; a word without `=` is refused naming it.
pub fn parse_pairs(words: &[String]) -> Result<Vec<(String, String)>, String> {
    words
        .iter()
        .map(|w| match w.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.to_string())),
            _ => Err(format!(
                "template parameter {w:?} must be written key=value"
            )),
        })
        .collect()
}

/// Find `name` on the search path and parse it. The error says which went wrong:
/// the name, the lookup, or the file.
pub fn load(paths: &Paths, name: &str) -> Result<Loaded, String> {
    check_name(name)?;
    let dirs: Vec<PathBuf> = paths.search_dirs().iter().map(|d| d.join(DIR)).collect();
    let file = format!("{name}.toml");
    let path = crate::envelope::search::find(&dirs, &file)?.ok_or_else(|| {
        let listed: Vec<String> = list(paths).into_iter().map(|l| l.name).collect();
        let shown: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        format!(
            "unknown template {name:?}: no {file} in {}{}",
            shown.join(" or "),
            if listed.is_empty() {
                String::new()
            } else {
                format!(". Available: {}", listed.join(", "))
            }
        )
    })?;
    let template =
        read(&path).map_err(|e| format!("template {name:?} ({}): {e}", path.display()))?;
    Ok(Loaded {
        name: name.to_string(),
        path,
        template,
    })
}

/// Read and parse one template file.
pub fn read(path: &Path) -> Result<Template, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))?;
    Template::parse(&text)
}

/// A template file seen on the search path, parsed or not.
#[derive(Debug, Clone)]
pub struct Listed {
    pub name: String,
    pub path: PathBuf,
    pub template: Result<Template, String>,
}

/// Every `templates/*.toml` on the search path, sorted within each directory and
/// deduplicated by name (first wins). Read afresh on every call.
pub fn list(paths: &Paths) -> Vec<Listed> {
    let mut out: Vec<Listed> = Vec::new();
    for dir in paths.search_dirs() {
        let dir = dir.join(DIR);
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter_map(|n| n.strip_suffix(".toml").map(str::to_string))
            .filter(|n| is_word(n))
            .collect();
        names.sort();
        for name in names {
            if !out.iter().any(|l| l.name == name) {
                let path = dir.join(format!("{name}.toml"));
                out.push(Listed {
                    template: read(&path),
                    name,
                    path,
                });
            }
        }
    }
    out
}

/// Is `path` a template file by place and name (`…/templates/<name>.toml`)?
pub fn is_template_file(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "toml")
        && path
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|d| d == DIR)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRIAGE: &str = r#"
agent = "stub"
envelope = "default"
intent = "Triage {{label}} issues in {{repo}}"
[params.label]
description = "the issue label"
default = "bug"
[params.repo]
description = "owner/name"
"#;

    #[test]
    fn fills_parameters_once_as_plain_text() {
        let t = Template::parse(TRIAGE).unwrap();
        let f = t.fill(&[("repo".into(), "a/b".into())]).unwrap();
        assert_eq!(f.intent, "Triage bug issues in a/b");
        let f = t
            .fill(&[("repo".into(), "{{label}} $(rm -rf /)".into())])
            .unwrap();
        assert_eq!(f.intent, "Triage bug issues in {{label}} $(rm -rf /)");
    }

    #[test]
    fn missing_unknown_repeated_and_multiline_values_are_refused_by_name() {
        let t = Template::parse(TRIAGE).unwrap();
        assert_eq!(
            t.fill(&[]).unwrap_err(),
            "missing template parameter: give repo=… (owner/name)"
        );
        assert_eq!(
            t.fill(&[("repo".into(), "x".into()), ("team".into(), "y".into())])
                .unwrap_err(),
            "unknown template parameter \"team\": it takes label, repo"
        );
        assert!(
            t.fill(&[("repo".into(), "a\nb".into())])
                .unwrap_err()
                .contains("\"repo\" must be a single line")
        );
        assert!(
            t.fill(&[("repo".into(), "a".into()), ("repo".into(), "b".into())])
                .unwrap_err()
                .contains("given twice")
        );
    }

    #[test]
    fn the_file_is_checked_when_parsed() {
        let unknown = format!("{TRIAGE}\nschedule = \"daily\"\n");
        assert!(
            Template::parse(&unknown)
                .unwrap_err()
                .contains("unknown field `schedule`")
        );
        let undeclared = "agent = \"a\"\nintent = \"do {{x}}\"\n";
        assert!(
            Template::parse(undeclared)
                .unwrap_err()
                .contains("{{x}} is not declared")
        );
        let unused = "agent = \"a\"\nintent = \"do it\"\n[params.x]\n";
        assert!(
            Template::parse(unused)
                .unwrap_err()
                .contains("never uses {{x}}")
        );
        let open = "agent = \"a\"\nintent = \"do {{x\"\n";
        assert!(Template::parse(open).unwrap_err().contains("never closed"));
        for bad in ["", "../x", "a/b", "a b"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
