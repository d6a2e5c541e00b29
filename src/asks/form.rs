//! A form a unit asks the operator to fill (an ACP elicitation in form mode): a flat
//! list of named fields — text, number, whole number, yes/no, one of a list — kept
//! with its ask, and the operator's `key=value` pairs checked against it before the
//! one guarded write records them. Every surface fills a form the same way: the CLI's
//! `--field key=value`, and the text answer of the board, the web page and an editor,
//! read as `key=value` pairs, one a line (or `;`-separated).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The fields of a form, in the order the agent listed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Form {
    pub fields: Vec<Field>,
}

/// One field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub kind: FieldKind,
    #[serde(default)]
    pub required: bool,
    /// What the agent suggests; used when the operator leaves the field out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
}

/// What a field holds, with the agent's limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    Text {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        min_length: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_length: Option<u32>,
    },
    Number {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minimum: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maximum: Option<f64>,
    },
    Integer {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        minimum: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        maximum: Option<i64>,
    },
    Boolean,
    /// One of these values.
    Choice {
        values: Vec<String>,
    },
}

impl FieldKind {
    /// The kind in a word, as the operator is shown it.
    pub fn word(&self) -> String {
        match self {
            FieldKind::Text { .. } => "text".into(),
            FieldKind::Number { .. } => "number".into(),
            FieldKind::Integer { .. } => "whole number".into(),
            FieldKind::Boolean => "true/false".into(),
            FieldKind::Choice { values } => format!("one of {}", values.join(", ")),
        }
    }
}

/// Words in a field that mark it as asking for a secret: no agent answers such a
/// form, whatever the envelope allows (a human must, or nobody).
const SECRET_WORDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "token",
    "secret",
    "key",
    "apikey",
    "credential",
    "credentials",
    "pin",
    "otp",
    "totp",
    "cvv",
    "ssn",
];

/// `apiKey`, `api_key`, `API key`, `api-key` → `["api", "key"]`.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

impl Field {
    /// The field as one line: `name (text, required) — Title: description`.
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} ({}{})",
            self.name,
            self.kind.word(),
            if self.required { ", required" } else { "" }
        );
        let about: Vec<&str> = [self.title.as_deref(), self.description.as_deref()]
            .into_iter()
            .flatten()
            .filter(|t| !t.trim().is_empty())
            .collect();
        if !about.is_empty() {
            line.push_str(" — ");
            line.push_str(&about.join(": "));
        }
        if let Some(d) = &self.default {
            line.push_str(&format!(" [default {}]", shown(d)));
        }
        crate::text::sanitize(&line)
    }

    /// Does the field ask for a secret (its name, title or description names one)?
    pub fn asks_for_secret(&self) -> bool {
        [
            Some(self.name.as_str()),
            self.title.as_deref(),
            self.description.as_deref(),
        ]
        .into_iter()
        .flatten()
        .flat_map(words)
        .any(|w| SECRET_WORDS.contains(&w.as_str()))
    }

    /// `raw` read as this field's value, or why not.
    fn value_of(&self, raw: &str) -> Result<Value, String> {
        let name = &self.name;
        match &self.kind {
            FieldKind::Text {
                min_length,
                max_length,
            } => {
                let n = raw.chars().count() as u32;
                if let Some(min) = min_length.filter(|m| n < *m) {
                    return Err(format!("field {name} takes at least {min} characters"));
                }
                if let Some(max) = max_length.filter(|m| n > *m) {
                    return Err(format!("field {name} takes at most {max} characters"));
                }
                Ok(Value::String(raw.to_string()))
            }
            FieldKind::Number { minimum, maximum } => {
                let v: f64 = raw
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite())
                    .ok_or_else(|| format!("field {name} takes a number, not {raw:?}"))?;
                bounded(name, v, *minimum, *maximum)?;
                Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
            }
            FieldKind::Integer { minimum, maximum } => {
                let v: i64 = raw
                    .parse()
                    .map_err(|_| format!("field {name} takes a whole number, not {raw:?}"))?;
                bounded(name, v, *minimum, *maximum)?;
                Ok(Value::from(v))
            }
            FieldKind::Boolean => match raw.to_ascii_lowercase().as_str() {
                "true" | "yes" | "y" | "on" | "1" => Ok(Value::Bool(true)),
                "false" | "no" | "n" | "off" | "0" => Ok(Value::Bool(false)),
                _ => Err(format!("field {name} takes true or false, not {raw:?}")),
            },
            FieldKind::Choice { values } => {
                if values.iter().any(|v| v == raw) {
                    Ok(Value::String(raw.to_string()))
                } else {
                    Err(format!(
                        "field {name} takes one of {}, not {raw:?}",
                        values.join(", ")
                    ))
                }
            }
        }
    }
}

fn bounded<T: PartialOrd + std::fmt::Display + Copy>(
    name: &str,
    v: T,
    min: Option<T>,
    max: Option<T>,
) -> Result<(), String> {
    if let Some(min) = min.filter(|m| v < *m) {
        return Err(format!("field {name} takes {min} or more, not {v}"));
    }
    if let Some(max) = max.filter(|m| v > *m) {
        return Err(format!("field {name} takes {max} or less, not {v}"));
    }
    Ok(())
}

/// A value as the operator typed it back: `yes`, `3`, `main`.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `key=value` pairs from an answer's text: one a line, or separated by `;`.
pub fn parse_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    for part in text.split(['\n', ';']) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        pairs.push(parse_pair(part)?);
    }
    Ok(pairs)
}

/// One `key=value`.
pub fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "{:?} is not a field value: write key=value (one field each)",
            crate::text::excerpt(text, 60)
        )),
    }
}

impl Form {
    /// The form as its ask stores it.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored form.
    pub fn from_json(text: &str) -> Option<Form> {
        serde_json::from_str(text).ok()
    }

    /// The fields one a line, as every surface shows them.
    pub fn lines(&self) -> Vec<String> {
        self.fields.iter().map(Field::line).collect()
    }

    /// The field asking for a secret, if one does (no agent may answer the form).
    pub fn secret_field(&self) -> Option<&Field> {
        self.fields.iter().find(|f| f.asks_for_secret())
    }

    /// Fill the form from `pairs`: each a field of the form, once, its value of the
    /// field's kind; left-out fields take their default; every required field
    /// filled. The values as the agent receives them, or what is wrong.
    pub fn fill(&self, pairs: &[(String, String)]) -> Result<Map<String, Value>, String> {
        let names = || {
            self.fields
                .iter()
                .map(|f| f.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut values = Map::new();
        for (key, raw) in pairs {
            let Some(field) = self.fields.iter().find(|f| &f.name == key) else {
                return Err(format!(
                    "the form has no field {key:?} (its fields: {})",
                    names()
                ));
            };
            if values.contains_key(key) {
                return Err(format!("field {key} is given twice"));
            }
            values.insert(key.clone(), field.value_of(raw)?);
        }
        for field in &self.fields {
            if values.contains_key(&field.name) {
                continue;
            }
            if let Some(d) = &field.default {
                values.insert(field.name.clone(), d.clone());
            } else if field.required {
                return Err(format!(
                    "field {} is required: add --field {}=<{}>",
                    field.name,
                    field.name,
                    field.kind.word()
                ));
            }
        }
        Ok(values)
    }
}

/// The filled values as one line: `branch=main; force=false`.
pub fn values_line(values: &Map<String, Value>) -> String {
    values
        .iter()
        .map(|(k, v)| format!("{k}={}", shown(v)))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Form {
        Form {
            fields: vec![
                Field {
                    name: "branch".into(),
                    title: Some("Branch".into()),
                    description: None,
                    kind: FieldKind::Text {
                        min_length: Some(1),
                        max_length: None,
                    },
                    required: true,
                    default: None,
                },
                Field {
                    name: "retries".into(),
                    title: None,
                    description: None,
                    kind: FieldKind::Integer {
                        minimum: Some(0),
                        maximum: Some(5),
                    },
                    required: false,
                    default: Some(json!(1)),
                },
                Field {
                    name: "force".into(),
                    title: None,
                    description: None,
                    kind: FieldKind::Boolean,
                    required: false,
                    default: None,
                },
                Field {
                    name: "env".into(),
                    title: None,
                    description: None,
                    kind: FieldKind::Choice {
                        values: vec!["staging".into(), "prod".into()],
                    },
                    required: true,
                    default: None,
                },
            ],
        }
    }

    fn pairs(text: &str) -> Vec<(String, String)> {
        parse_pairs(text).unwrap()
    }

    #[test]
    fn a_filled_form_has_typed_values_and_defaults() {
        let v = form()
            .fill(&pairs("branch=main; force=yes\nenv=prod"))
            .unwrap();
        assert_eq!(
            Value::Object(v.clone()),
            json!({"branch": "main", "force": true, "env": "prod", "retries": 1})
        );
        assert_eq!(
            values_line(&v),
            "branch=main; force=true; env=prod; retries=1"
        );
    }

    #[test]
    fn each_mistake_is_named() {
        let f = form();
        let err = |t: &str| f.fill(&pairs(t)).unwrap_err();
        assert_eq!(
            err("env=prod"),
            "field branch is required: add --field branch=<text>"
        );
        assert_eq!(
            err("branch=x; env=dev"),
            "field env takes one of staging, prod, not \"dev\""
        );
        assert_eq!(
            err("branch=x; env=prod; retries=9"),
            "field retries takes 5 or less, not 9"
        );
        assert_eq!(
            err("branch=x; env=prod; retries=two"),
            "field retries takes a whole number, not \"two\""
        );
        assert_eq!(
            err("branch=x; env=prod; force=maybe"),
            "field force takes true or false, not \"maybe\""
        );
        assert_eq!(
            err("branch=x; env=prod; colour=red"),
            "the form has no field \"colour\" (its fields: branch, retries, force, env)"
        );
        assert_eq!(
            err("branch=; env=prod"),
            "field branch takes at least 1 characters"
        );
        assert!(parse_pairs("just words").is_err());
    }

    #[test]
    fn secret_fields_are_told_by_their_words() {
        let field = |name: &str, description: Option<&str>| Field {
            name: name.into(),
            title: None,
            description: description.map(str::to_string),
            kind: FieldKind::Text {
                min_length: None,
                max_length: None,
            },
            required: true,
            default: None,
        };
        for secret in [
            "password",
            "apiKey",
            "api_key",
            "GITHUB_TOKEN",
            "client-secret",
        ] {
            assert!(field(secret, None).asks_for_secret(), "{secret}");
        }
        assert!(field("value", Some("Your npm access token")).asks_for_secret());
        for plain in ["branch", "keyboard", "monkey", "tokenizer_model", "spin"] {
            assert!(!field(plain, None).asks_for_secret(), "{plain}");
        }
    }
}
