//! Tool calls a model wrote as text. Small models served through chat templates often
//! put the call in their message instead of the structured `tool_calls` field: Hermes
//! `<tool_call>{…}</tool_call>` tags, `functions.NAME:` followed by a JSON object (as
//! llama-cpp-python's function-calling format leaks it), `NAME({…})`, a lone JSON
//! object with `name` and `arguments`, or — where one tool is offered — that tool's
//! arguments alone, often in a ```json fence. Read as prose, such a reply ends the turn with
//! the work undone; here it is read as the call it is — and validated against the
//! offered tools exactly like a structured one: an unknown tool or arguments that are
//! not the tool's object become a corrective message, never a guess.

use serde_json::Value;

use crate::model::ToolSpec;

/// Which shape a call was written in, for the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    HermesTags,
    FunctionsPrefix,
    CallSyntax,
    BareJson,
    /// The arguments of the one tool offered, alone.
    BareArguments,
}

impl Shape {
    pub fn name(self) -> &'static str {
        match self {
            Shape::HermesTags => "<tool_call> tags",
            Shape::FunctionsPrefix => "functions.NAME:",
            Shape::CallSyntax => "NAME(…)",
            Shape::BareJson => "a bare JSON object",
            Shape::BareArguments => "the tool's arguments alone",
        }
    }
}

/// A call found in a reply's text: the tool and its arguments, or why it cannot run.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    pub shape: Shape,
    pub name: String,
    pub arguments: Result<Value, String>,
}

/// The calls `text` writes out, in the first shape that holds any (empty when the text
/// is prose). Each is checked against `tools`.
pub fn recover(text: &str, tools: &[ToolSpec]) -> Vec<TextCall> {
    let found = hermes(text)
        .or_else(|| functions_prefix(text))
        .or_else(|| call_syntax(text, tools))
        .or_else(|| bare_json(text, tools))
        .unwrap_or_default();
    found
        .into_iter()
        .map(|(shape, name, arguments)| TextCall {
            shape,
            arguments: arguments.and_then(|a| validate(&name, a, tools)),
            name,
        })
        .collect()
}

type Found = (Shape, String, Result<Value, String>);

/// `<tool_call>{"name": …, "arguments": …}</tool_call>`, once or more.
fn hermes(text: &str) -> Option<Vec<Found>> {
    const OPEN: &str = "<tool_call>";
    let calls: Vec<Found> = text
        .match_indices(OPEN)
        .map(|(at, _)| {
            let body = &text[at + OPEN.len()..];
            let body = body.split("</tool_call>").next().unwrap_or(body);
            match first_json(body) {
                Some(Value::Object(o)) => named_object(Shape::HermesTags, &o),
                _ => (
                    Shape::HermesTags,
                    String::new(),
                    Err("the text between the tags is not a JSON object".into()),
                ),
            }
        })
        .collect();
    (!calls.is_empty()).then_some(calls)
}

/// `functions.NAME: {…}` or `functions.NAME({…})`.
fn functions_prefix(text: &str) -> Option<Vec<Found>> {
    const PREFIX: &str = "functions.";
    let calls: Vec<Found> = text
        .match_indices(PREFIX)
        .filter(|(at, _)| !text[..*at].ends_with(is_name_char))
        .filter_map(|(at, _)| {
            let rest = &text[at + PREFIX.len()..];
            let name: String = rest.chars().take_while(|c| is_name_char(*c)).collect();
            if name.is_empty() {
                return None;
            }
            let after = rest[name.len()..].trim_start();
            let after = after
                .strip_prefix(':')
                .or_else(|| after.strip_prefix('('))
                .unwrap_or(after)
                .trim_start();
            let arguments = match first_json(after) {
                Some(v @ Value::Object(_)) => Ok(v),
                _ => Err("no JSON object of arguments follows the name".into()),
            };
            Some((Shape::FunctionsPrefix, name, arguments))
        })
        .collect();
    (!calls.is_empty()).then_some(calls)
}

/// `NAME({…})` for an offered tool's name: only when a JSON object follows, since prose
/// may name a tool in passing.
fn call_syntax(text: &str, tools: &[ToolSpec]) -> Option<Vec<Found>> {
    let mut calls: Vec<(usize, Found)> = Vec::new();
    for tool in tools {
        let open = format!("{}(", tool.name);
        for (at, _) in text.match_indices(&open) {
            if text[..at].ends_with(is_name_char) {
                continue;
            }
            if let Some(v @ Value::Object(_)) = first_json(&text[at + open.len()..]) {
                calls.push((at, (Shape::CallSyntax, tool.name.clone(), Ok(v))));
            }
        }
    }
    calls.sort_by_key(|(at, _)| *at);
    (!calls.is_empty()).then(|| calls.into_iter().map(|(_, c)| c).collect())
}

/// The whole reply JSON objects and nothing else, each alone or in a ```json fence
/// (small models write one fenced call after another): each with `name` and
/// `arguments`, or — a single object, when only one tool is offered — that tool's own
/// arguments, every key one its schema names and every required one there. Any prose
/// beside them, or an object without a name among several, and the reply is prose.
fn bare_json(text: &str, tools: &[ToolSpec]) -> Option<Vec<Found>> {
    let mut objects = Vec::new();
    for block in unfenced(text) {
        for value in serde_json::Deserializer::from_str(block).into_iter::<Value>() {
            match value {
                Ok(Value::Object(o)) => objects.push(o),
                _ => return None,
            }
        }
    }
    if objects
        .iter()
        .all(|o| o.get("name").and_then(Value::as_str).is_some())
    {
        return (!objects.is_empty()).then(|| {
            objects
                .iter()
                .map(|o| named_object(Shape::BareJson, o))
                .collect()
        });
    }
    let ([o], [only]) = (objects.as_slice(), tools) else {
        return None;
    };
    let properties = only.parameters["properties"].as_object()?;
    let required = only.parameters["required"].as_array();
    let fits = !o.is_empty()
        && o.keys().all(|k| properties.contains_key(k))
        && required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .all(|k| o.contains_key(k));
    fits.then(|| {
        vec![(
            Shape::BareArguments,
            only.name.clone(),
            Ok(Value::Object(o.clone())),
        )]
    })
}

/// `text` split at its ``` fences (an opening one may name `json`) into the blocks
/// between them. A last fence left open runs to the end: a reply stopped at its
/// fence's close (the planner's stop sequence) ends without it.
fn unfenced(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    let mut open = false;
    while let Some(at) = rest.find("```") {
        blocks.push(&rest[..at]);
        rest = &rest[at + 3..];
        if !open {
            rest = rest.strip_prefix("json").unwrap_or(rest);
        }
        open = !open;
    }
    blocks.push(rest);
    blocks
}

/// `{"name": …, "arguments": …}` (or `parameters`), the arguments an object or a JSON
/// string holding one.
fn named_object(shape: Shape, o: &serde_json::Map<String, Value>) -> Found {
    let name = o
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let arguments = match o.get("arguments").or_else(|| o.get("parameters")) {
        Some(v @ Value::Object(_)) => Ok(v.clone()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(v @ Value::Object(_)) => Ok(v),
            _ => Err("its arguments are a string that is not a JSON object".into()),
        },
        None => Ok(Value::Object(Default::default())),
        Some(_) => Err("its arguments are not a JSON object".into()),
    };
    (shape, name, arguments)
}

/// The call checked like a structured one: an offered tool, with every argument its
/// schema requires.
fn validate(name: &str, arguments: Value, tools: &[ToolSpec]) -> Result<Value, String> {
    let Some(tool) = tools.iter().find(|t| t.name == name) else {
        return Err(format!("there is no tool {name:?}"));
    };
    let missing: Vec<&str> = tool.parameters["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|k| arguments.get(k).is_none())
        .collect();
    if missing.is_empty() {
        Ok(arguments)
    } else {
        Err(format!(
            "it lacks the required argument(s) {}",
            missing.join(", ")
        ))
    }
}

/// The first JSON value `text` starts with (after whitespace), if it starts with one.
fn first_json(text: &str) -> Option<Value> {
    let text = text.trim_start();
    if !text.starts_with(['{', '[']) {
        return None;
    }
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tools() -> Vec<ToolSpec> {
        ["mission_report", "write_file"]
            .iter()
            .map(|n| ToolSpec {
                name: n.to_string(),
                description: String::new(),
                parameters: json!({"type": "object", "required": if *n == "write_file" { json!(["path", "content"]) } else { json!(["kind", "summary"]) }}),
            })
            .collect()
    }

    fn one(text: &str) -> TextCall {
        let calls = recover(text, &tools());
        assert_eq!(calls.len(), 1, "{text}: {calls:?}");
        calls.into_iter().next().unwrap()
    }

    #[test]
    fn every_shape_real_servers_emit_is_read_as_its_call() {
        let report = json!({"kind": "progress", "summary": "done"});
        for (text, shape) in [
            (
                "<tool_call>\n{\"name\": \"mission_report\", \"arguments\": {\"kind\": \"progress\", \"summary\": \"done\"}}\n</tool_call>",
                Shape::HermesTags,
            ),
            (
                "functions.mission_report: {\"kind\": \"progress\", \"summary\": \"done\"}",
                Shape::FunctionsPrefix,
            ),
            (
                "I will report now.\nmission_report({\"kind\": \"progress\", \"summary\": \"done\"})",
                Shape::CallSyntax,
            ),
            (
                "```json\n{\"name\": \"mission_report\", \"arguments\": \"{\\\"kind\\\": \\\"progress\\\", \\\"summary\\\": \\\"done\\\"}\"}\n```",
                Shape::BareJson,
            ),
        ] {
            let call = one(text);
            assert_eq!(
                (call.shape, call.name.as_str(), call.arguments),
                (shape, "mission_report", Ok(report.clone())),
                "{text}"
            );
        }
    }

    #[test]
    fn fenced_calls_one_after_another_are_each_read() {
        let text = "```json\n{\"name\": \"mission_report\", \"arguments\": {\"kind\": \"result\", \"summary\": \"wrote it\"}}\n```\n```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\", \"content\": \"b\"}}\n```";
        let calls = recover(text, &tools());
        let names: Vec<(Shape, &str)> = calls.iter().map(|c| (c.shape, c.name.as_str())).collect();
        assert_eq!(
            names,
            [
                (Shape::BareJson, "mission_report"),
                (Shape::BareJson, "write_file")
            ]
        );
        assert!(calls.iter().all(|c| c.arguments.is_ok()), "{calls:?}");
        // Stopped at its fence's close (the planner's stop sequence), the same.
        let cut = "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\", \"content\": \"b\"}}\n";
        assert_eq!(one(cut).name, "write_file");
        assert!(one(cut).arguments.is_ok());
        // Unfenced, one after another, the same.
        assert_eq!(
            recover(
                "{\"name\": \"write_file\", \"arguments\": {\"path\": \"a\", \"content\": \"b\"}}\n{\"name\": \"mission_report\", \"arguments\": {}}",
                &tools()
            )
            .len(),
            2
        );
    }

    #[test]
    fn what_cannot_run_is_named_never_guessed() {
        let leaked = one("functions.mission_report:");
        assert_eq!(
            leaked.arguments,
            Err("no JSON object of arguments follows the name".into())
        );
        let unknown = one("<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>");
        assert_eq!(unknown.arguments, Err("there is no tool \"rm_rf\"".into()));
        let short = one("functions.write_file: {\"path\": \"a.txt\"}");
        assert_eq!(
            short.arguments,
            Err("it lacks the required argument(s) content".into())
        );
    }

    #[test]
    fn the_arguments_alone_are_the_call_only_where_one_tool_is_offered() {
        let verdict = ToolSpec {
            name: "oracle_submit_verdict".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {
                "verdict": {"type": "string"}, "answer": {"type": "string"}, "evidence": {"type": "string"}},
                "required": ["verdict"]}),
        };
        let text = "```json\n{\"verdict\":\"answer\",\"answer\":\"CHANGELOG.md\",\"evidence\":\"into\"}\n```";
        let calls = recover(text, std::slice::from_ref(&verdict));
        assert_eq!(
            calls,
            vec![TextCall {
                shape: Shape::BareArguments,
                name: "oracle_submit_verdict".into(),
                arguments: Ok(
                    json!({"verdict": "answer", "answer": "CHANGELOG.md", "evidence": "into"})
                ),
            }]
        );
        assert_eq!(
            recover(text, &tools()),
            vec![],
            "two tools: whose arguments?"
        );
        assert_eq!(
            recover("{\"answer\": \"yes\"}", std::slice::from_ref(&verdict)),
            vec![],
            "a required key missing"
        );
        assert_eq!(
            recover("{\"verdict\": \"wait\", \"shell\": \"rm\"}", &[verdict]),
            vec![],
            "a key the tool does not name"
        );
    }

    #[test]
    fn prose_is_prose() {
        for text in [
            "I created hello.txt containing hello.",
            "Next I will call mission_report to say so.",
            "{\"summary\": \"a JSON object without a name\"}",
            "The function mission_report(kind, summary) files a report.",
            "Here it is:\n```json\n{\"name\": \"write_file\", \"arguments\": {}}\n```",
            "```json\n{\"name\": \"write_file\", \"arguments\": {}}\n```\n```json\n{\"summary\": \"no name\"}\n```",
        ] {
            assert_eq!(recover(text, &tools()), vec![], "{text}");
        }
    }
}
