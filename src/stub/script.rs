//! The stub's script: parsing, validation, directive detection in prompt
//! text, placeholder substitution and the built-in scenarios.

use serde::Deserialize;
use serde_json::{Map, Value, json};

/// A parsed script. Steps are kept raw (validated once at load) because
/// their strings are templates, filled in just before each step runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    pub name: String,
    pub delay_ms: Option<u64>,
    /// Session models to advertise (`models`); only a script given at start
    /// (`--script`) can set them, since they are offered before the first prompt.
    pub models: Vec<String>,
    /// `load_session`: advertise `loadSession` and honour `session/load`, each
    /// session's place in the script kept in a state file (only a script given at
    /// start can set it: capabilities are sent before the first prompt).
    pub load_session: bool,
    /// `resume_session`: advertise `sessionCapabilities.resume` and honour
    /// `session/resume` (the same saved place as `load_session`, nothing replayed).
    pub resume_session: bool,
    /// `close_session`: advertise `sessionCapabilities.close` and honour `session/close`.
    pub close_session: bool,
    pub turns: Vec<Turn>,
    /// `on_revise`: the turn run whenever a prompt carries an operator's revise
    /// feedback (`mission revise`), which binds `{{feedback}}`; without it such a
    /// prompt takes the next scripted turn like any other.
    pub on_revise: Option<Turn>,
}

impl Script {
    /// Does a session's place in the script outlive this process (a later stub
    /// loads or resumes it)?
    pub fn persists(&self) -> bool {
        self.load_session || self.resume_session
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub steps: Vec<RawStep>,
    pub stop: StopName,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopName {
    EndTurn,
    Refusal,
    MaxTokens,
    MaxTurnRequests,
}

/// One step as written: its kind and payload (plus plan's sibling `via`).
#[derive(Debug, Clone, PartialEq)]
pub struct RawStep {
    pub kind: String,
    pub payload: Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    #[default]
    Mcp,
    Acp,
    Both,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnDeny {
    #[default]
    Continue,
    ReportBlocker,
    FinishStuck,
    Error,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionOptionSpec {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// `allow_once` | `allow_always` | `reject_once` | `reject_always`
    pub kind: String,
}

/// A step ready to run (placeholders already substituted).
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Say {
        text: String,
        chunks: usize,
        /// The message id every chunk carries (`messageId`), when the script names one.
        message: Option<String>,
    },
    Think {
        text: String,
        chunks: usize,
    },
    Plan {
        entries: Vec<Value>,
        via: Via,
        explanation: Option<String>,
    },
    Report {
        args: Map<String, Value>,
    },
    /// `elicitation/create`: a form (`schema`, the requested schema) or a page
    /// (`url`) for the operator; the outcome binds `{{answer}}`.
    Elicit {
        message: String,
        schema: Option<Value>,
        url: Option<String>,
    },
    Ask {
        summary: String,
        detail: Option<String>,
        retries: u32,
        then: Vec<RawStep>,
    },
    Finish {
        args: Map<String, Value>,
    },
    Permission {
        title: String,
        kind: String,
        /// The file the gated call names (its `rawInput.path`), when given.
        path: Option<String>,
        /// The command line it would run (its `rawInput.command`), when given.
        command: Option<String>,
        times: u32,
        on_deny: OnDeny,
        options: Vec<PermissionOptionSpec>,
        report: bool,
    },
    ToolCall {
        id: Option<String>,
        title: String,
        kind: String,
        status: String,
    },
    Usage {
        used: u64,
        size: u64,
        input: u64,
        output: u64,
        cost: Option<(f64, String)>,
    },
    Sleep {
        ms: u64,
    },
    Hang,
    /// Allocate this many MiB, touch every page and keep them for the life of the
    /// process: a unit with a resident set of a known size.
    HoldMemory {
        mib: u64,
    },
    Error {
        code: i32,
        message: String,
    },
    Crash {
        code: i32,
    },
    StdoutGarbage {
        line: String,
    },
    Flood {
        bytes: u64,
        line_bytes: u64,
    },
    Deaf {
        requests: u32,
    },
    Mute {
        text: String,
    },
    // Confinement probes: what the unit's sandbox lets it do, reported as it saw it.
    /// Write `text` to `path` and report the outcome (the errno on failure).
    Write {
        path: String,
        text: String,
    },
    /// Run `argv` (in the unit's cwd) and report its exit code and output.
    Run {
        argv: Vec<String>,
    },
    /// Start another copy of the mission MCP server entry the session was handed,
    /// its stdin and stdout opened (read-write, so a fifo never blocks) on these
    /// files, and leave it running: a second connection of the unit's own, for a
    /// test to drive from outside.
    MissionServer {
        stdin: String,
        stdout: String,
    },
    /// Report the `mission` MCP entry the session was handed, as the agent saw it:
    /// its arguments, and its environment (names and values).
    MissionEntry,
    // Agent-shaped permission requests: the frames a real agent sends, replayed.
    /// Send `update` (a `tool_call` session update, as the agent would announce the
    /// call), then the `session/request_permission` whose params are `request` (the
    /// session id filled in), and act on the answer as the agent does.
    AgentPermission {
        update: Option<Value>,
        request: Value,
        on_reject: OnReject,
        report: bool,
    },
}

/// What an agent does when its permission request is rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum OnReject {
    /// Carry on with the turn's next steps.
    #[default]
    Continue,
    /// End the turn (`end_turn`), as qwen and opencode do.
    EndTurn,
    /// Abort the turn (`stopReason: cancelled`), as codex's reject option does.
    Cancel,
}

impl Step {
    /// Steps that go through the `mission` MCP server.
    pub fn needs_mission(&self) -> bool {
        match self {
            Step::Plan { via, .. } => *via != Via::Acp,
            Step::Report { .. }
            | Step::Ask { .. }
            | Step::Finish { .. }
            | Step::Write { .. }
            | Step::Run { .. }
            | Step::MissionServer { .. }
            | Step::MissionEntry => true,
            Step::Permission {
                report, on_deny, ..
            } => *report || matches!(on_deny, OnDeny::ReportBlocker | OnDeny::FinishStuck),
            Step::AgentPermission { report, .. } => *report,
            _ => false,
        }
    }
}

const STEP_KINDS: &[&str] = &[
    "say",
    "think",
    "plan",
    "report",
    "ask",
    "finish",
    "permission",
    "tool_call",
    "usage",
    "sleep",
    "hang",
    "hold_memory",
    "error",
    "crash",
    "stdout_garbage",
    "flood",
    "deaf",
    "mute",
    "write",
    "run",
    "mission_server",
    "mission_entry",
    "agent_permission",
    "elicit",
];

fn de<T: for<'de> Deserialize<'de>>(kind: &str, payload: &Value) -> Result<T, String> {
    T::deserialize(payload).map_err(|e| format!("{kind}: {e}"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextArgs {
    text: String,
    #[serde(default)]
    chunks: Option<usize>,
    #[serde(default)]
    message: Option<String>,
}

fn text_args(kind: &str, payload: &Value) -> Result<(String, usize), String> {
    let (text, chunks, _) = message_args(kind, payload)?;
    Ok((text, chunks))
}

/// A `say` step's text, its chunk count and the message id its chunks carry.
fn message_args(kind: &str, payload: &Value) -> Result<(String, usize, Option<String>), String> {
    match payload {
        Value::String(s) => Ok((s.clone(), 1, None)),
        _ => {
            let a: TextArgs = de(kind, payload)?;
            Ok((a.text, a.chunks.unwrap_or(1).max(1), a.message))
        }
    }
}

fn object_args(kind: &str, payload: &Value, required: &str) -> Result<Map<String, Value>, String> {
    let Value::Object(map) = payload else {
        return Err(format!("{kind}: expected an object"));
    };
    if !map.get(required).is_some_and(Value::is_string) {
        return Err(format!("{kind}: '{required}' (a string) is required"));
    }
    Ok(map.clone())
}

/// Decode one step. Used at load time (to validate) and at run time (after
/// placeholders have been filled in).
pub fn decode(raw: &RawStep) -> Result<Step, String> {
    let kind = raw.kind.as_str();
    let p = &raw.payload;
    Ok(match kind {
        "say" => {
            let (text, chunks, message) = message_args(kind, p)?;
            Step::Say {
                text,
                chunks,
                message,
            }
        }
        "think" => {
            let (text, chunks) = text_args(kind, p)?;
            Step::Think { text, chunks }
        }
        "mute" => match p {
            Value::Null => Step::Mute {
                text: "Thinking about it; nothing to report yet.".into(),
            },
            _ => Step::Mute {
                text: text_args(kind, p)?.0,
            },
        },
        "plan" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct PlanArgs {
                entries: Vec<Value>,
                #[serde(default)]
                via: Via,
                #[serde(default)]
                explanation: Option<String>,
            }
            let args: PlanArgs = match p {
                Value::Array(entries) => PlanArgs {
                    entries: entries.clone(),
                    via: Via::Mcp,
                    explanation: None,
                },
                _ => de(kind, p)?,
            };
            for (i, entry) in args.entries.iter().enumerate() {
                if !entry.get("content").is_some_and(Value::is_string) {
                    return Err(format!("plan: entry {} needs a 'content' string", i + 1));
                }
            }
            Step::Plan {
                entries: args.entries,
                via: args.via,
                explanation: args.explanation,
            }
        }
        "report" => Step::Report {
            args: object_args(kind, p, "summary")?,
        },
        "finish" => Step::Finish {
            args: match p {
                Value::String(status) => {
                    let mut m = Map::new();
                    m.insert("status".into(), Value::String(status.clone()));
                    m
                }
                _ => object_args(kind, p, "status")?,
            },
        },
        "ask" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct AskArgs {
                summary: String,
                #[serde(default)]
                detail: Option<String>,
                #[serde(default)]
                expect: Option<String>,
                #[serde(default)]
                retries: Option<u32>,
                #[serde(default)]
                then: Option<Value>,
            }
            let args: AskArgs = match p {
                Value::String(s) => AskArgs {
                    summary: s.clone(),
                    detail: None,
                    expect: None,
                    retries: None,
                    then: None,
                },
                _ => de(kind, p)?,
            };
            let _ = args.expect; // documented as informative only
            let then = match args.then {
                None => Vec::new(),
                Some(Value::Array(steps)) => {
                    steps.iter().map(raw_step).collect::<Result<_, _>>()?
                }
                Some(step) => vec![raw_step(&step)?],
            };
            for step in &then {
                decode(step)?;
            }
            Step::Ask {
                summary: args.summary,
                detail: args.detail,
                retries: args.retries.unwrap_or(0),
                then,
            }
        }
        "permission" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct PermArgs {
                title: String,
                #[serde(default)]
                kind: Option<String>,
                #[serde(default)]
                path: Option<String>,
                #[serde(default)]
                command: Option<String>,
                #[serde(default)]
                times: Option<u32>,
                #[serde(default)]
                on_deny: OnDeny,
                #[serde(default)]
                options: Option<Vec<Value>>,
                #[serde(default)]
                report: bool,
            }
            let args: PermArgs = de(kind, p)?;
            let options = match args.options {
                None => ["allow_once", "allow_always", "reject_once", "reject_always"]
                    .iter()
                    .map(|k| PermissionOptionSpec {
                        id: None,
                        name: None,
                        kind: (*k).to_owned(),
                    })
                    .collect(),
                Some(list) => list
                    .iter()
                    .map(|o| match o {
                        Value::String(k) => Ok(PermissionOptionSpec {
                            id: None,
                            name: None,
                            kind: k.clone(),
                        }),
                        _ => de::<PermissionOptionSpec>("permission option", o),
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            };
            for o in &options {
                if !["allow_once", "allow_always", "reject_once", "reject_always"]
                    .contains(&o.kind.as_str())
                {
                    return Err(format!("permission: unknown option kind '{}'", o.kind));
                }
            }
            Step::Permission {
                title: args.title,
                kind: args.kind.unwrap_or_else(|| "edit".into()),
                path: args.path,
                command: args.command,
                times: args.times.unwrap_or(1),
                on_deny: args.on_deny,
                options,
                report: args.report,
            }
        }
        "tool_call" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct CallArgs {
                title: String,
                #[serde(default)]
                id: Option<String>,
                #[serde(default)]
                kind: Option<String>,
                #[serde(default)]
                status: Option<String>,
            }
            let a: CallArgs = match p {
                Value::String(title) => CallArgs {
                    title: title.clone(),
                    id: None,
                    kind: None,
                    status: None,
                },
                _ => de(kind, p)?,
            };
            Step::ToolCall {
                id: a.id,
                title: a.title,
                kind: a.kind.unwrap_or_else(|| "other".into()),
                status: a.status.unwrap_or_else(|| "completed".into()),
            }
        }
        "elicit" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct ElicitArgs {
                message: String,
                #[serde(default)]
                schema: Option<Value>,
                #[serde(default)]
                url: Option<String>,
            }
            let args: ElicitArgs = de(kind, p)?;
            if args.schema.is_some() == args.url.is_some() {
                return Err(
                    "elicit: give exactly one of 'schema' (a form) or 'url' (a page)".into(),
                );
            }
            Step::Elicit {
                message: args.message,
                schema: args.schema,
                url: args.url,
            }
        }
        "usage" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct CostArgs {
                amount: f64,
                #[serde(default)]
                currency: Option<String>,
            }
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct UsageArgs {
                used: u64,
                size: u64,
                #[serde(default)]
                input: u64,
                #[serde(default)]
                output: u64,
                #[serde(default)]
                cost: Option<CostArgs>,
            }
            let a: UsageArgs = de(kind, p)?;
            Step::Usage {
                used: a.used,
                size: a.size,
                input: a.input,
                output: a.output,
                cost: a
                    .cost
                    .map(|c| (c.amount, c.currency.unwrap_or_else(|| "USD".into()))),
            }
        }
        "sleep" => Step::Sleep {
            ms: match p {
                Value::Number(n) => n.as_u64().ok_or("sleep: ms must be a whole number")?,
                _ => {
                    #[derive(Deserialize)]
                    #[serde(deny_unknown_fields)]
                    struct SleepArgs {
                        ms: u64,
                    }
                    de::<SleepArgs>(kind, p)?.ms
                }
            },
        },
        "hang" => Step::Hang,
        "hold_memory" => Step::HoldMemory {
            mib: match p {
                Value::Number(n) => n
                    .as_u64()
                    .filter(|m| *m <= 4096)
                    .ok_or("hold_memory: MiB must be a whole number up to 4096")?,
                _ => {
                    return Err(
                        "hold_memory takes a number of MiB, e.g. {\"hold_memory\": 64}".into(),
                    );
                }
            },
        },
        "mission_entry" => Step::MissionEntry,
        "error" => match p {
            Value::String(message) => Step::Error {
                code: -32603,
                message: message.clone(),
            },
            _ => {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct ErrorArgs {
                    #[serde(default)]
                    code: Option<i32>,
                    message: String,
                }
                let a: ErrorArgs = de(kind, p)?;
                Step::Error {
                    code: a.code.unwrap_or(-32603),
                    message: a.message,
                }
            }
        },
        "crash" => Step::Crash {
            code: match p {
                Value::Null => 1,
                Value::Number(n) => n
                    .as_i64()
                    .and_then(|c| i32::try_from(c).ok())
                    .ok_or("crash: bad exit code")?,
                _ => {
                    #[derive(Deserialize)]
                    #[serde(deny_unknown_fields)]
                    struct CrashArgs {
                        code: i32,
                    }
                    de::<CrashArgs>(kind, p)?.code
                }
            },
        },
        "stdout_garbage" => Step::StdoutGarbage {
            line: match p {
                Value::Null => "this line is not JSON-RPC".into(),
                Value::String(s) => s.clone(),
                _ => {
                    #[derive(Deserialize)]
                    #[serde(deny_unknown_fields)]
                    struct GarbageArgs {
                        line: String,
                    }
                    de::<GarbageArgs>(kind, p)?.line
                }
            },
        },
        "flood" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct FloodArgs {
                bytes: u64,
                #[serde(default)]
                line_bytes: Option<u64>,
            }
            let a: FloodArgs = de(kind, p)?;
            Step::Flood {
                bytes: a.bytes,
                line_bytes: a.line_bytes.unwrap_or(a.bytes).max(1),
            }
        }
        "deaf" => Step::Deaf {
            requests: match p {
                Value::Null => 0,
                _ => {
                    #[derive(Deserialize)]
                    #[serde(deny_unknown_fields)]
                    struct DeafArgs {
                        requests: u32,
                    }
                    de::<DeafArgs>(kind, p)?.requests
                }
            },
        },
        "agent_permission" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct AgentPermissionArgs {
                #[serde(default)]
                update: Option<Value>,
                request: Value,
                #[serde(default)]
                on_reject: OnReject,
                #[serde(default)]
                report: bool,
            }
            let a: AgentPermissionArgs = de(kind, p)?;
            if !a.request.get("toolCall").is_some_and(Value::is_object) {
                return Err("agent_permission: 'request' needs a 'toolCall' object".into());
            }
            if let Some(update) = &a.update
                && update.get("sessionUpdate").and_then(Value::as_str) != Some("tool_call")
            {
                return Err("agent_permission: 'update' must be a tool_call session update".into());
            }
            Step::AgentPermission {
                update: a.update,
                request: a.request,
                on_reject: a.on_reject,
                report: a.report,
            }
        }
        // Confinement probes.
        "write" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct WriteArgs {
                path: String,
                #[serde(default)]
                text: String,
            }
            let a: WriteArgs = de(kind, p)?;
            Step::Write {
                path: a.path,
                text: a.text,
            }
        }
        "run" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct RunArgs {
                argv: Vec<String>,
            }
            let a: RunArgs = de(kind, p)?;
            if a.argv.is_empty() {
                return Err("run: argv needs at least the program".into());
            }
            Step::Run { argv: a.argv }
        }
        "mission_server" => {
            #[derive(Deserialize)]
            #[serde(deny_unknown_fields)]
            struct MissionServerArgs {
                stdin: String,
                stdout: String,
            }
            let a: MissionServerArgs = de(kind, p)?;
            Step::MissionServer {
                stdin: a.stdin,
                stdout: a.stdout,
            }
        }
        other => {
            return Err(format!(
                "unknown step '{other}' (want one of {})",
                STEP_KINDS.join(", ")
            ));
        }
    })
}

/// Split a written step (`{"say": "hi"}`, `"hang"`, `{"plan": [...], "via": "acp"}`)
/// into kind and payload.
fn raw_step(value: &Value) -> Result<RawStep, String> {
    match value {
        Value::String(kind) => Ok(RawStep {
            kind: kind.clone(),
            payload: Value::Null,
        }),
        Value::Object(map) => {
            let kinds: Vec<&String> = map
                .keys()
                .filter(|k| STEP_KINDS.contains(&k.as_str()))
                .collect();
            let [kind] = kinds.as_slice() else {
                return Err(format!(
                    "a step must name exactly one of {} (got keys {:?})",
                    STEP_KINDS.join(", "),
                    map.keys().collect::<Vec<_>>()
                ));
            };
            let extras: Vec<&String> = map.keys().filter(|k| k != kind).collect();
            let mut payload = map[kind.as_str()].clone();
            if !extras.is_empty() {
                // Only plan takes a sibling option: {"plan": [...], "via": "acp"}.
                if kind.as_str() != "plan" || extras.iter().any(|k| k.as_str() != "via") {
                    return Err(format!("step '{kind}': unexpected keys {extras:?}"));
                }
                payload = json!({"entries": payload, "via": map["via"]});
            }
            Ok(RawStep {
                kind: (*kind).clone(),
                payload,
            })
        }
        other => Err(format!(
            "a step must be an object or a step name, got {other}"
        )),
    }
}

/// Parse and validate a script from JSON. A bare `{"steps": [...]}` is a
/// one-turn script.
pub fn parse_script(value: &Value, fallback_name: &str) -> Result<Script, String> {
    let Value::Object(map) = value else {
        return Err("a script must be a JSON object".into());
    };
    for key in map.keys() {
        if ![
            "name",
            "delay_ms",
            "models",
            "load_session",
            "on_revise",
            "resume_session",
            "close_session",
            "turns",
            "steps",
            "stop",
        ]
        .contains(&key.as_str())
        {
            return Err(format!("unknown script key '{key}'"));
        }
    }
    let name = match map.get("name") {
        None => fallback_name.to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("'name' must be a string".into()),
    };
    let delay_ms = match map.get("delay_ms") {
        None => None,
        Some(v) => Some(v.as_u64().ok_or("'delay_ms' must be a whole number")?),
    };
    let models = match map.get("models") {
        None => Vec::new(),
        Some(v) => Vec::<String>::deserialize(v)
            .ok()
            .filter(|m| m.iter().all(|s| !s.trim().is_empty()))
            .ok_or("'models' must be an array of non-empty strings")?,
    };
    let flag = |key: &str| match map.get(key) {
        None => Ok(false),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| format!("'{key}' must be true or false")),
    };
    let load_session = flag("load_session")?;
    let resume_session = flag("resume_session")?;
    let close_session = flag("close_session")?;
    let turn_values: Vec<Value> = match (map.get("turns"), map.get("steps")) {
        (Some(Value::Array(turns)), None) => turns.clone(),
        (None, Some(steps)) => {
            let mut turn = Map::new();
            turn.insert("steps".into(), steps.clone());
            if let Some(stop) = map.get("stop") {
                turn.insert("stop".into(), stop.clone());
            }
            vec![Value::Object(turn)]
        }
        _ => return Err("a script needs either 'turns' (an array) or 'steps'".into()),
    };
    let mut turns = Vec::new();
    for (t, turn) in turn_values.iter().enumerate() {
        turns.push(parse_turn(turn, &format!("turn {}", t + 1))?);
    }
    let on_revise = match map.get("on_revise") {
        None => None,
        Some(turn) => Some(parse_turn(turn, "on_revise")?),
    };
    Ok(Script {
        name,
        delay_ms,
        models,
        load_session,
        resume_session,
        close_session,
        turns,
        on_revise,
    })
}

/// One turn object (`{steps, stop?}`), `t` naming it in errors.
fn parse_turn(turn: &Value, t: &str) -> Result<Turn, String> {
    {
        let Value::Object(turn) = turn else {
            return Err(format!("{t}: expected an object with 'steps'"));
        };
        let steps = match turn.get("steps") {
            Some(Value::Array(steps)) => steps,
            _ => return Err(format!("{t}: 'steps' (an array) is required")),
        };
        let stop = match turn.get("stop") {
            None => StopName::EndTurn,
            Some(v) => StopName::deserialize(v).map_err(|e| format!("{t}: bad stop: {e}"))?,
        };
        let mut raw_steps = Vec::new();
        for (s, step) in steps.iter().enumerate() {
            let raw = raw_step(step).map_err(|e| format!("{t} step {}: {e}", s + 1))?;
            decode(&raw).map_err(|e| format!("{t} step {}: {e}", s + 1))?;
            raw_steps.push(raw);
        }
        Ok(Turn {
            steps: raw_steps,
            stop,
        })
    }
}

/// Values the templates can refer to.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    pub turn: usize,
    pub answer: String,
    pub perm: String,
    pub perms: Vec<String>,
    /// The session model the client selected (the advertised default until then).
    pub model: String,
    /// The text of the prompt that opened this turn, on one line.
    pub prompt: String,
    /// What the latest `mission_finish` call returned (its error text, when it
    /// was refused — a failed check says so there).
    pub finish: String,
    /// The operator's feedback the latest revise prompt carried.
    pub feedback: String,
}

/// Fill `{{answer}}`, `{{turn}}`, `{{perm}}`, `{{perms}}`, `{{model}}`, `{{prompt}}`,
/// `{{finish}}` and `{{env:NAME}}`
/// in every string of `value`. Unknown placeholders stay as written.
pub fn substitute(value: &Value, vars: &Vars) -> Value {
    match value {
        Value::String(s) => Value::String(fill(s, vars)),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, vars)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn fill(template: &str, vars: &Vars) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let key = after[..end].trim();
        let replacement = match key {
            "answer" => Some(vars.answer.clone()),
            "turn" => Some(vars.turn.to_string()),
            "perm" => Some(vars.perm.clone()),
            "perms" => Some(vars.perms.join(",")),
            "model" => Some(vars.model.clone()),
            "prompt" => Some(vars.prompt.clone()),
            "finish" => Some(vars.finish.clone()),
            "feedback" => Some(vars.feedback.clone()),
            _ => key
                .strip_prefix("env:")
                .map(|name| std::env::var(name.trim()).unwrap_or_default()),
        };
        match replacement {
            Some(text) => out.push_str(&text),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Where the script for a session comes from, decided from the first
/// prompt's text blocks (the preamble, then the intent).
pub fn script_from_prompt(
    blocks: &[String],
    default_delay_ms: Option<u64>,
) -> Result<Script, String> {
    let all = blocks.join("\n\n");
    if let Some(body) = fenced_stub_block(&all) {
        let value: Value = serde_json::from_str(body)
            .map_err(|e| format!("the ```stub block is not valid JSON: {e}"))?;
        return parse_script(&value, "inline").map_err(|e| format!("the ```stub block: {e}"));
    }
    if let Some((scenario, delay)) = at_stub_line(&all)? {
        let mut script =
            builtin(&scenario).ok_or_else(|| format!("@stub: unknown scenario '{scenario}'"))?;
        if delay.is_some() {
            script.delay_ms = delay;
        }
        return Ok(script);
    }
    // Only the intent names a scenario: the preamble talks about "stuck" and
    // "landed" missions without meaning them as directives.
    let intent = blocks.last().map(String::as_str).unwrap_or("");
    let name = mentioned_scenario(intent).unwrap_or_else(|| "default".to_owned());
    let mut script = builtin(&name).expect("mentioned scenarios exist");
    if script.delay_ms.is_none() {
        script.delay_ms = default_delay_ms;
    }
    Ok(script)
}

fn fenced_stub_block(text: &str) -> Option<&str> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        offset += line.len();
        if line.trim() == "```stub" {
            let body = &text[offset..];
            let mut inner = 0;
            for l in body.split_inclusive('\n') {
                if l.trim() == "```" {
                    return Some(&body[..inner]);
                }
                inner += l.len();
            }
            return Some(body);
        }
    }
    None
}

fn at_stub_line(text: &str) -> Result<Option<(String, Option<u64>)>, String> {
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("@stub") else {
            continue;
        };
        if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
            continue;
        }
        let mut scenario = "default".to_owned();
        let mut delay = None;
        for word in rest.split_whitespace() {
            match word.split_once('=') {
                Some(("scenario", v)) => scenario = v.to_owned(),
                Some(("delay_ms", v)) => {
                    delay = Some(
                        v.parse()
                            .map_err(|_| format!("@stub: bad delay_ms '{v}'"))?,
                    );
                }
                _ => {
                    return Err(format!(
                        "@stub: unknown setting '{word}' (want scenario=<name> delay_ms=<n>)"
                    ));
                }
            }
        }
        return Ok(Some((scenario, delay)));
    }
    Ok(None)
}

/// The names of the built-in scenarios (`perm-N` and `tools-N` take a count).
pub const BUILTIN_NAMES: &[&str] = &[
    "land",
    "ask-then-land",
    "mute",
    "nudged",
    "derail",
    "stuck",
    "perm-N",
    "perm-flood",
    "tokens",
    "slow",
    "hang",
    "crash",
    "tools-N",
    "check-fix",
    "revise-land",
    "default",
];

fn counted(token: &str, prefix: &str) -> Option<u32> {
    token.strip_prefix(prefix)?.parse().ok()
}

fn mentioned_scenario(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .map(|t| t.trim_matches('-').to_ascii_lowercase())
        .find(|t| builtin(t).is_some() && t != "default")
}

fn land_steps() -> Vec<Value> {
    vec![
        json!({"plan": [
            {"content": "survey the task", "status": "in_progress", "priority": "high"},
            {"content": "do the work", "status": "pending", "priority": "medium"},
            {"content": "report the result", "status": "pending", "priority": "medium"}
        ]}),
        json!({"say": "Starting on the mission."}),
        json!({"report": {"kind": "progress", "summary": "surveyed the task"}}),
        json!({"report": {"kind": "progress", "summary": "did the work"}}),
        json!({"report": {"kind": "result", "summary": "the stub finished its scripted work"}}),
        json!({"finish": {"status": "landed"}}),
    ]
}

fn turns(name: &str, turns: Vec<Vec<Value>>) -> Value {
    json!({
        "name": name,
        "turns": turns.into_iter().map(|steps| json!({"steps": steps})).collect::<Vec<_>>()
    })
}

/// A built-in scenario by name (`default` is `land`).
pub fn builtin(name: &str) -> Option<Script> {
    let mute_turn = || vec![json!({"mute": "I looked around but have nothing to say to anyone."})];
    let value = match name {
        "default" | "land" => turns(name, vec![land_steps()]),
        "ask-then-land" => {
            let mut steps = vec![
                land_steps()[0].clone(),
                json!({"ask": {"summary": "Should I proceed with the change?"}}),
                json!({"report": {"kind": "finding", "summary": "answer was: {{answer}}"}}),
            ];
            steps.extend(land_steps().into_iter().skip(4));
            turns(name, vec![steps])
        }
        "mute" => turns(name, vec![mute_turn(), mute_turn()]),
        // Finish before the work passes the check (`test -f fixed` is the check it
        // is made for), quote the refusal, write `fixed`, finish again.
        "check-fix" => turns(
            name,
            vec![vec![
                json!({"report": {"kind": "progress", "summary": "did the work, not yet checked"}}),
                json!({"finish": {"status": "landed"}}),
                json!({"report": {"kind": "finding", "summary": "the check refused the finish", "detail": "{{finish}}"}}),
                json!({"write": {"path": "fixed", "text": "ok"}}),
                json!({"finish": {"status": "landed"}}),
            ]],
        ),
        // Land; sent back, act on the feedback: write it to `revised.txt`, report
        // it, land again.
        "revise-land" => {
            let mut v = turns(name, vec![land_steps()]);
            v["on_revise"] = json!({"steps": [
                json!({"write": {"path": "revised.txt", "text": "{{feedback}}"}}),
                json!({"report": {"kind": "result", "summary": "acted on the feedback", "detail": "{{feedback}}", "refs": ["revised.txt"]}}),
                json!({"finish": {"status": "landed"}}),
            ]});
            v
        }
        "nudged" => turns(name, vec![mute_turn(), land_steps()]),
        "derail" => turns(
            name,
            vec![vec![
                json!({"say": "Trying the task."}),
                json!({"error": {"message": "stub derail: the scripted turn failed"}}),
            ]],
        ),
        "stuck" => turns(
            name,
            vec![vec![
                json!({"report": {"kind": "blocker", "summary": "cannot proceed without access"}}),
                json!({"finish": {"status": "stuck", "reason": "the stub is scripted to get stuck"}}),
            ]],
        ),
        "perm-flood" => turns(
            name,
            vec![vec![
                json!({"permission": {"title": "run make", "kind": "execute", "times": 100}}),
                json!({"finish": {"status": "landed"}}),
            ]],
        ),
        "tokens" => turns(
            name,
            vec![vec![
                json!({"usage": {"used": 40000, "size": 200000, "input": 30000, "output": 10000}}),
                json!({"usage": {"used": 150000, "size": 200000, "input": 100000, "output": 20000}}),
                json!({"usage": {"used": 400000, "size": 500000, "input": 300000, "output": 50000}}),
                json!({"report": {"kind": "progress", "summary": "burned a lot of tokens"}}),
                json!({"finish": {"status": "landed"}}),
            ]],
        ),
        "slow" => {
            let mut v = turns(name, vec![land_steps()]);
            v["delay_ms"] = json!(1500);
            v
        }
        "hang" => turns(
            name,
            vec![vec![json!({"say": "Working on it…"}), json!("hang")]],
        ),
        "crash" => turns(
            name,
            vec![vec![
                json!({"say": "About to crash."}),
                json!({"crash": {"code": 3}}),
            ]],
        ),
        _ => {
            if let Some(n) = counted(name, "perm-") {
                let mut steps = vec![json!({"permission": {
                    "title": "edit the workspace", "kind": "edit", "times": n, "report": true
                }})];
                steps.extend(land_steps().into_iter().skip(4));
                turns(name, vec![steps])
            } else if let Some(n) = counted(name, "tools-") {
                let mut steps: Vec<Value> = (1..=n)
                    .map(|i| json!({"tool_call": {"title": format!("scripted tool call {i}"), "kind": "read"}}))
                    .collect();
                steps.extend(land_steps().into_iter().skip(4));
                turns(name, vec![steps])
            } else {
                return None;
            }
        }
    };
    Some(parse_script(&value, name).expect("built-in scenarios are valid"))
}

/// An ask step's `then`: the steps that run once it is answered.
pub fn ask_then(raw: &RawStep) -> Vec<RawStep> {
    match raw.payload.get("then") {
        Some(Value::Array(items)) => items.iter().filter_map(|v| raw_step(v).ok()).collect(),
        Some(v) => raw_step(v).into_iter().collect(),
        None => vec![],
    }
}

/// For a fresh session resuming a parked run: the turn (0-based) holding the ask
/// whose summary is `question`, and the steps that come after it there (its `then`
/// first).
pub fn steps_after_ask(script: &Script, question: &str) -> Option<(usize, Vec<RawStep>)> {
    for (t, turn) in script.turns.iter().enumerate() {
        for (i, raw) in turn.steps.iter().enumerate() {
            if raw.kind != "ask" {
                continue;
            }
            let summary = match &raw.payload {
                Value::String(s) => s.as_str(),
                Value::Object(m) => m.get("summary").and_then(Value::as_str).unwrap_or(""),
                _ => "",
            };
            if summary.trim() != question.trim() {
                continue;
            }
            let rest = turn.steps[i + 1..].iter().cloned();
            return Some((t, ask_then(raw).into_iter().chain(rest).collect()));
        }
    }
    None
}

/// For a session resuming a run whose elicitation `message` was answered after its
/// host was gone: the turn (0-based) holding that `elicit` step, and the steps after
/// it (the answer is bound to `{{answer}}` by the caller, as the request's would be).
pub fn steps_after_elicit(script: &Script, message: &str) -> Option<(usize, Vec<RawStep>)> {
    for (t, turn) in script.turns.iter().enumerate() {
        for (i, raw) in turn.steps.iter().enumerate() {
            let said = raw.payload.get("message").and_then(Value::as_str);
            if raw.kind == "elicit" && said.map(str::trim) == Some(message.trim()) {
                return Some((t, turn.steps[i + 1..].to_vec()));
            }
        }
    }
    None
}

/// For a fresh session resuming a run whose gated call `title` was decided while
/// its host was gone: the turn (0-based) holding that permission step, and the
/// steps that carry on from the verdict. Approved, the call is made once more (the
/// host allows it on the strength of that verdict); denied, the step's `on_deny`
/// applies, as if the request had been refused just now.
pub fn steps_after_permission(
    script: &Script,
    title: &str,
    approved: bool,
) -> Option<(usize, Vec<RawStep>)> {
    for (t, turn) in script.turns.iter().enumerate() {
        for (i, raw) in turn.steps.iter().enumerate() {
            if raw.kind != "permission"
                || raw
                    .payload
                    .get("title")
                    .and_then(Value::as_str)
                    .map(str::trim)
                    != Some(title.trim())
            {
                continue;
            }
            let rest = turn.steps[i + 1..].iter().cloned();
            let reason = format!("permission denied: {}", title.trim());
            let on_deny = raw.payload.get("on_deny").and_then(Value::as_str);
            let first: Vec<Value> = match (approved, on_deny) {
                (true, _) => {
                    let mut once = raw.payload.clone();
                    once["times"] = json!(1);
                    vec![json!({ "permission": once })]
                }
                (false, Some("report_blocker")) => {
                    vec![json!({"report": {"kind": "blocker", "summary": reason}})]
                }
                (false, Some("finish_stuck")) => {
                    vec![json!({"finish": {"status": "stuck", "reason": reason}})]
                }
                (false, Some("error")) => vec![json!({ "error": reason })],
                (false, _) => vec![],
            };
            let ends_turn =
                !approved && matches!(on_deny, Some("report_blocker" | "finish_stuck" | "error"));
            let first = first.iter().filter_map(|v| raw_step(v).ok());
            let steps = if ends_turn {
                first.collect()
            } else {
                first.chain(rest).collect()
            };
            return Some((t, steps));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_parses() {
        for name in BUILTIN_NAMES {
            let name = name.replace("-N", "-3");
            assert!(builtin(&name).is_some(), "{name}");
        }
        assert_eq!(
            builtin("perm-2").unwrap().turns[0].steps[0].kind,
            "permission"
        );
        assert!(builtin("perm-x").is_none());
    }

    #[test]
    fn directives_in_precedence_order() {
        let fenced = vec![
            "preamble mentions stuck".to_owned(),
            "do it\n```stub\n{\"steps\": [{\"say\": \"hi\"}]}\n```\n@stub scenario=mute".to_owned(),
        ];
        let s = script_from_prompt(&fenced, None).unwrap();
        assert_eq!(s.name, "inline");
        assert_eq!(s.turns[0].steps[0].kind, "say");

        let at = vec![
            "x".to_owned(),
            "@stub scenario=ask-then-land delay_ms=400".to_owned(),
        ];
        let s = script_from_prompt(&at, Some(600)).unwrap();
        assert_eq!((s.name.as_str(), s.delay_ms), ("ask-then-land", Some(400)));

        let named = vec![
            "finish stuck if you must".to_owned(),
            "please run perm-2 now".to_owned(),
        ];
        let s = script_from_prompt(&named, Some(600)).unwrap();
        assert_eq!((s.name.as_str(), s.delay_ms), ("perm-2", Some(600)));

        let none = vec![
            "finish stuck if you must".to_owned(),
            "audit the config".to_owned(),
        ];
        assert_eq!(script_from_prompt(&none, None).unwrap().name, "default");
    }

    #[test]
    fn bad_scripts_are_rejected_with_a_location() {
        let err = parse_script(
            &json!({"turns": [{"steps": [{"say": "a"}, {"jump": 1}]}]}),
            "x",
        )
        .unwrap_err();
        assert!(err.starts_with("turn 1 step 2:"), "{err}");
        let err =
            parse_script(&json!({"steps": [{"report": {"kind": "result"}}]}), "x").unwrap_err();
        assert!(err.contains("'summary'"), "{err}");
        let ok = parse_script(
            &json!({"steps": [{"plan": [{"content": "a"}], "via": "acp"}]}),
            "x",
        )
        .unwrap();
        assert!(matches!(
            decode(&ok.turns[0].steps[0]).unwrap(),
            Step::Plan { via: Via::Acp, .. }
        ));
    }

    #[test]
    fn placeholders_fill_in() {
        let vars = Vars {
            turn: 2,
            answer: "yes".into(),
            perm: "denied".into(),
            perms: vec!["allowed".into(), "denied".into()],
            model: "b".into(),
            ..Vars::default()
        };
        let v = substitute(
            &json!({"a": "answer={{answer}} t={{ turn }} p={{perm}} ps={{perms}} m={{model}} {{nope}} {{env:MB_STUB_SURELY_UNSET}}."}),
            &vars,
        );
        assert_eq!(
            v["a"],
            "answer=yes t=2 p=denied ps=allowed,denied m=b {{nope}} ."
        );
    }
}
