//! The envelope file format: parsing, the load model and validation.
//!
//! The load model deliberately mirrors the Go runtime the format comes from,
//! because envelopes written for it must load (or fail) the same way here:
//!
//! * the top level, rules, conditions and `attention` are lenient: unknown keys are
//!   ignored, which is what makes `//` comment keys work;
//! * key matching is case-insensitive (Go `encoding/json` folding) and the last
//!   duplicate wins;
//! * a value of the wrong JSON type is a parse error, so the policy fails to load;
//! * `compute` and `trusted_binaries` are strict: an unknown key fails the whole
//!   policy, because a typo there would otherwise silently drop a ceiling;
//! * then validation runs. Vet calls the same function, so vet can never pass a
//!   file the loader refuses.
//!
//! Rule and condition indices in messages are 0-based, as in the Go loop index the
//! message formats come from. The loader reports the first validation message;
//! [`PolicyError::validation_messages`] (and vet) give all of them.
//!
//! Where this port departs from the seed-era loader on purpose:
//!
//! * `compute.maxTurns` takes any value up to [`MAX_TURNS_CAP`] (vet warns from 2
//!   on, since only 1 changes anything), and `onExhausted: "pause_ask"` is
//!   accepted, because this runtime implements it;
//! * `version` is understood (absent, 0 or 1 load);
//! * `//` comment keys are allowed inside the strict sections too;
//! * a negative `timeout_s` is refused: this era has no "wait forever" value;
//! * `trusted_binaries` entries must be absolute paths and well-formed digests,
//!   and a malformed `[...]` glob class fails the load like a malformed brace —
//!   each would otherwise make a rule silently inert.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::glob;

/// The largest `maxTurns` accepted. Only 0 and 1 change anything today; the cap
/// only keeps an absurd value from looking intentional.
pub const MAX_TURNS_CAP: i64 = 1000;
pub const MAX_TOOL_CALLS_CAP: i64 = 10_000_000;
pub const MAX_TOKENS_CAP: i64 = 100_000_000_000;
pub const MAX_ALLOWLIST_ENTRIES: usize = 256;
pub const MAX_ALLOWLIST_ENTRY_BYTES: usize = 512;
/// `maxAgentAnswers` of 0 (or omitted) means this, never "unlimited".
pub const DEFAULT_MAX_AGENT_ANSWERS: u32 = 3;
pub const MAX_AGENT_ANSWERS_CEILING: i64 = 1000;
/// The only policy format version this binary understands.
pub const POLICY_VERSION: i64 = 1;

/// What a rule (or the default) decides for a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Allow,
    Approve,
    Deny,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Approve => "approve",
            Action::Deny => "deny",
        }
    }

    /// Exact, case-sensitive: an action is a value, not a key.
    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "allow" => Some(Action::Allow),
            "approve" => Some(Action::Approve),
            "deny" => Some(Action::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A condition operator (§1.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Eq,
    Glob,
    Host,
    CommandBlacklist,
    CommandAskAlways,
    NoCommandSubstitution,
    CommandPrefixAllowlist,
}

impl Op {
    pub const ALL: [Op; 7] = [
        Op::Eq,
        Op::Glob,
        Op::Host,
        Op::CommandBlacklist,
        Op::CommandAskAlways,
        Op::NoCommandSubstitution,
        Op::CommandPrefixAllowlist,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Eq => "eq",
            Op::Glob => "glob",
            Op::Host => "host",
            Op::CommandBlacklist => "command_blacklist",
            Op::CommandAskAlways => "command_ask_always",
            Op::NoCommandSubstitution => "no_command_substitution",
            Op::CommandPrefixAllowlist => "command_prefix_allowlist",
        }
    }

    pub fn parse(s: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.as_str() == s)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub key: String,
    pub op: Op,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    /// Toolset name; `""` or `"*"` matches any.
    pub tools: String,
    /// Tool name inside the toolset; `""` or `"*"` matches any.
    pub tool: String,
    pub when: Vec<Condition>,
    pub action: Action,
    /// `> 0` waits that long; `0` leaves the ask on the approval ceiling.
    pub timeout_s: i64,
    /// What an expired ask resolves to; stored as `deny` when the file leaves it empty.
    pub on_timeout: Action,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnExhausted {
    #[default]
    FinishStuck,
    PauseAsk,
}

impl OnExhausted {
    pub fn as_str(self) -> &'static str {
        match self {
            OnExhausted::FinishStuck => "finish_stuck",
            OnExhausted::PauseAsk => "pause_ask",
        }
    }
}

/// Compute ceilings. Zero (or an empty list) means unbounded, so the default is
/// unbounded; bounds only ever restrict.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ComputeBounds {
    pub max_turns: u64,
    pub max_tool_calls: u64,
    pub max_tokens: u64,
    pub model_allowlist: Vec<String>,
    pub backend_allowlist: Vec<String>,
    pub on_exhausted: OnExhausted,
}

impl ComputeBounds {
    pub fn is_unbounded(&self) -> bool {
        self.max_turns == 0
            && self.max_tool_calls == 0
            && self.max_tokens == 0
            && self.model_allowlist.is_empty()
            && self.backend_allowlist.is_empty()
    }
}

/// Who may answer the unit's questions. Absent means a human only.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AttentionBounds {
    pub allow_agent_answers: bool,
    pub max_agent_answers: i64,
}

impl AttentionBounds {
    /// `0` or omitted means the default cap, not unlimited and not zero.
    pub fn effective_max_agent_answers(&self) -> u32 {
        if self.max_agent_answers <= 0 {
            DEFAULT_MAX_AGENT_ANSWERS
        } else {
            u32::try_from(self.max_agent_answers).unwrap_or(u32::MAX)
        }
    }
}

/// Gates the allows that `command_prefix_allowlist` grants.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrustedBinaries {
    /// Absolute directories a program must resolve into.
    pub dirs: Vec<String>,
    /// realpath → lowercase sha256 hex.
    pub hashes: BTreeMap<String, String>,
}

impl TrustedBinaries {
    /// An empty block declares nothing, so it gates nothing.
    pub fn is_enforced(&self) -> bool {
        !self.dirs.is_empty() || !self.hashes.is_empty()
    }

    /// Checks that `program` (a program word as the call wrote it) resolves to a
    /// file under one of `dirs` and, when `hashes` pins its real path, that the
    /// file's sha256 matches. `cwd` anchors relative paths like `./go`. Returns the
    /// real path, or why the binary is not trusted.
    pub fn verify(&self, program: &str, cwd: Option<&Path>) -> Result<PathBuf, String> {
        let located = locate_program(program, cwd)
            .ok_or_else(|| format!("{} does not resolve to an executable", quote(program)))?;
        let real = std::fs::canonicalize(&located).map_err(|e| {
            format!(
                "{}: cannot resolve {}: {e}",
                quote(program),
                located.display()
            )
        })?;
        if !self.dirs.iter().any(|d| under_dir(&real, d)) {
            return Err(format!(
                "{} resolves to {}, outside every trusted_binaries.dirs entry",
                quote(program),
                real.display()
            ));
        }
        if let Some(want) = self.hashes.get(real.to_string_lossy().as_ref()) {
            let got = sha256_file(&real)
                .map_err(|e| format!("{}: cannot hash {}: {e}", quote(program), real.display()))?;
            if !got.eq_ignore_ascii_case(want) {
                return Err(format!(
                    "{} does not match its declared hash (on disk {got})",
                    real.display()
                ));
            }
        }
        Ok(real)
    }

    /// Whether a declared hash key lies under a trusted dir, i.e. can ever be read.
    pub fn covers(&self, path: &str) -> bool {
        self.dirs.iter().any(|d| under_dir(Path::new(path), d))
    }
}

/// A trusted dir may itself be a symlink (`/bin` → `/usr/bin`), so it is compared
/// both as written and resolved.
fn under_dir(real: &Path, dir: &str) -> bool {
    let dir = Path::new(dir);
    real.starts_with(dir) || std::fs::canonicalize(dir).is_ok_and(|d| real.starts_with(d))
}

/// A path-shaped word names a file directly; a bare name is looked up on `PATH`,
/// the way the shell would find it.
fn locate_program(program: &str, cwd: Option<&Path>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = Path::new(program);
        let p = match cwd {
            Some(cwd) if p.is_relative() => cwd.join(p),
            _ => p.to_path_buf(),
        };
        return p.is_file().then_some(p);
    }
    let path_var = std::env::var_os("PATH")?;
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Lowercase sha256 hex of a file's contents.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub default_action: Action,
    pub rules: Vec<Rule>,
    pub compute: ComputeBounds,
    pub attention: Option<AttentionBounds>,
    pub trusted_binaries: Option<TrustedBinaries>,
    /// The `sandbox` block; `None`: the baseline ([`super::sandbox::SandboxDecl::baseline`]).
    pub sandbox: Option<super::sandbox::SandboxDecl>,
    /// `workspace`: where the unit works unless the fire says otherwise.
    pub workspace: super::sandbox::WorkspaceMode,
}

impl Policy {
    /// The sandbox the unit runs under: the declared block, else the baseline.
    pub fn sandbox_or_baseline(&self) -> super::sandbox::SandboxDecl {
        self.sandbox
            .clone()
            .unwrap_or_else(super::sandbox::SandboxDecl::baseline)
    }

    /// Loads a policy file's bytes with the full load model (see the module docs).
    /// `name` only labels errors.
    pub fn parse(name: &str, bytes: &[u8]) -> Result<Policy, PolicyError> {
        let doc: Json = serde_json::from_slice(bytes)
            .map_err(|e| PolicyError::new(name, ErrorKind::Parse(e.to_string())))?;
        let raw = decode_policy(&doc).map_err(|e| PolicyError::new(name, ErrorKind::Parse(e)))?;
        if let Err(msg) = check_strict_sections(&doc) {
            return Err(PolicyError::new(name, ErrorKind::Invalid(vec![msg])));
        }
        let messages = validate(&raw);
        if !messages.is_empty() {
            return Err(PolicyError::new(name, ErrorKind::Invalid(messages)));
        }
        Ok(raw.into_policy())
    }

    /// What a policy that failed to load evaluates as: every call asks, including
    /// reads, and there are no bounds and no attention grant. Never allow.
    pub fn builtin_default() -> Policy {
        Policy {
            default_action: Action::Approve,
            rules: Vec::new(),
            compute: ComputeBounds::default(),
            attention: None,
            trusted_binaries: None,
            sandbox: None,
            workspace: Default::default(),
        }
    }
}

/// Why a policy did not load. `Display` is the full user-facing message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyError {
    name: String,
    kind: ErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum ErrorKind {
    NotFound(String),
    Read(String),
    Parse(String),
    /// Validation messages in the order found; the display shows the first, vet
    /// shows them all.
    Invalid(Vec<String>),
}

impl PolicyError {
    fn new(name: &str, kind: ErrorKind) -> PolicyError {
        PolicyError {
            name: name.to_string(),
            kind,
        }
    }

    /// For policy sources: the file is on no search-path directory.
    pub fn not_found(name: &str, cause: impl fmt::Display) -> PolicyError {
        PolicyError::new(name, ErrorKind::NotFound(cause.to_string()))
    }

    /// For policy sources: the file exists but could not be read.
    pub fn read(name: &str, cause: impl fmt::Display) -> PolicyError {
        PolicyError::new(name, ErrorKind::Read(cause.to_string()))
    }

    pub fn policy_name(&self) -> &str {
        &self.name
    }

    /// The bare validation messages (no `invalid hitl policy` wrapper); empty when
    /// the policy failed earlier than validation.
    pub fn validation_messages(&self) -> &[String] {
        match &self.kind {
            ErrorKind::Invalid(messages) => messages,
            _ => &[],
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self.kind, ErrorKind::NotFound(_))
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = quote(&self.name);
        match &self.kind {
            ErrorKind::NotFound(cause) => write!(f, "hitl policy {name} not found: {cause}"),
            ErrorKind::Read(cause) => write!(f, "read hitl policy {name}: {cause}"),
            ErrorKind::Parse(cause) => write!(f, "parse hitl policy {name}: {cause}"),
            ErrorKind::Invalid(messages) => write!(
                f,
                "invalid hitl policy {name}: {}",
                messages.first().map(String::as_str).unwrap_or("")
            ),
        }
    }
}

impl std::error::Error for PolicyError {}

// ---------------------------------------------------------------------------
// The raw document: a JSON tree that keeps duplicate keys and their order, so
// the Go rules (case folding, last duplicate wins) can be applied on top of it.

/// A JSON value that keeps every object entry, duplicates included, in order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Num(Num),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    /// Above `i64::MAX`: valid JSON, but no Go `int` holds it.
    BigUint(u64),
    Float(f64),
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Int(i) => write!(f, "{i}"),
            Num::BigUint(u) => write!(f, "{u}"),
            Num::Float(x) => write!(f, "{x}"),
        }
    }
}

impl Json {
    /// The JSON type name, as error messages spell it.
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "bool",
            Json::Num(_) => "number",
            Json::Str(_) => "string",
            Json::Arr(_) => "array",
            Json::Obj(_) => "object",
        }
    }

    pub(crate) fn as_obj(&self) -> Option<&[(String, Json)]> {
        match self {
            Json::Obj(entries) => Some(entries),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Num(Num::Int(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Num(match i64::try_from(v) {
            Ok(i) => Num::Int(i),
            Err(_) => Num::BigUint(v),
        }))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        Ok(Json::Num(Num::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Arr(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            entries.push((k, v));
        }
        Ok(Json::Obj(entries))
    }
}

/// Go `encoding/json` key folding: ASCII case plus the two non-ASCII runes whose
/// fold set contains an ASCII letter (the long s and the Kelvin sign).
fn fold_key_eq(a: &str, b: &str) -> bool {
    fn fold(c: char) -> char {
        match c {
            '\u{017F}' => 's',
            '\u{212A}' => 'k',
            c => c.to_ascii_lowercase(),
        }
    }
    a.chars().map(fold).eq(b.chars().map(fold))
}

/// The value a Go struct field named `name` ends up with: the last entry whose key
/// folds to it. A JSON `null` leaves a scalar untouched in Go, so for scalars the
/// last non-null entry wins; for arrays and objects a `null` resets to absent.
fn field<'a>(obj: &'a [(String, Json)], name: &str, scalar: bool) -> Option<&'a Json> {
    let mut found = None;
    for (k, v) in obj {
        if fold_key_eq(k, name) {
            if scalar && matches!(v, Json::Null) {
                continue;
            }
            found = Some(v);
        }
    }
    match found {
        Some(Json::Null) => None,
        other => other,
    }
}

fn type_error(value: &Json, path: &str, want: &str) -> String {
    match value {
        Json::Num(n) => {
            format!("json: cannot unmarshal number {n} into field {path} of type {want}")
        }
        other => format!(
            "json: cannot unmarshal {} into field {path} of type {want}",
            other.type_name()
        ),
    }
}

fn decode_string(obj: &[(String, Json)], name: &str, path: &str) -> Result<String, String> {
    match field(obj, name, true) {
        None => Ok(String::new()),
        Some(Json::Str(s)) => Ok(s.clone()),
        Some(other) => Err(type_error(other, path, "string")),
    }
}

fn decode_int(obj: &[(String, Json)], name: &str, path: &str) -> Result<i64, String> {
    match field(obj, name, true) {
        None => Ok(0),
        Some(Json::Num(Num::Int(i))) => Ok(*i),
        Some(other) => Err(type_error(other, path, "int")),
    }
}

fn decode_bool(obj: &[(String, Json)], name: &str, path: &str) -> Result<bool, String> {
    match field(obj, name, true) {
        None => Ok(false),
        Some(Json::Bool(b)) => Ok(*b),
        Some(other) => Err(type_error(other, path, "bool")),
    }
}

fn decode_object<'a>(
    obj: &'a [(String, Json)],
    name: &str,
    path: &str,
) -> Result<Option<&'a [(String, Json)]>, String> {
    match field(obj, name, false) {
        None => Ok(None),
        Some(Json::Obj(entries)) => Ok(Some(entries)),
        Some(other) => Err(type_error(other, path, "object")),
    }
}

fn decode_array<'a>(
    obj: &'a [(String, Json)],
    name: &str,
    path: &str,
) -> Result<&'a [Json], String> {
    match field(obj, name, false) {
        None => Ok(&[]),
        Some(Json::Arr(items)) => Ok(items),
        Some(other) => Err(type_error(other, path, "array")),
    }
}

fn decode_string_list(
    obj: &[(String, Json)],
    name: &str,
    path: &str,
) -> Result<Vec<String>, String> {
    decode_array(obj, name, path)?
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Json::Str(s) => Ok(s.clone()),
            // Go leaves a null slice element at its zero value.
            Json::Null => Ok(String::new()),
            other => Err(type_error(other, &format!("{path}[{i}]"), "string")),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The decoded, not yet validated policy. Actions stay strings here so that
// validation can name the exact text the file carries.

#[derive(Debug, Clone, Default)]
pub(crate) struct RawPolicy {
    pub(crate) version: i64,
    pub(crate) default_action: String,
    pub(crate) rules: Vec<RawRule>,
    pub(crate) compute: Option<RawCompute>,
    pub(crate) attention: Option<AttentionBounds>,
    pub(crate) trusted_binaries: Option<TrustedBinaries>,
    pub(crate) sandbox: Option<super::sandbox::SandboxDecl>,
    pub(crate) workspace: super::sandbox::WorkspaceMode,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RawRule {
    pub(crate) tools: String,
    pub(crate) tool: String,
    pub(crate) when: Vec<RawCondition>,
    pub(crate) action: String,
    pub(crate) timeout_s: i64,
    pub(crate) on_timeout: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RawCondition {
    pub(crate) key: String,
    pub(crate) op: String,
    pub(crate) value: String,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct RawCompute {
    pub(crate) max_turns: i64,
    pub(crate) max_tool_calls: i64,
    pub(crate) max_tokens: i64,
    pub(crate) model_allowlist: Vec<String>,
    pub(crate) backend_allowlist: Vec<String>,
    pub(crate) on_exhausted: String,
}

pub(crate) const COMPUTE_FIELDS: [&str; 6] = [
    "maxTurns",
    "maxToolCalls",
    "maxTokens",
    "modelAllowlist",
    "backendAllowlist",
    "onExhausted",
];
pub(crate) const TRUSTED_BINARIES_FIELDS: [&str; 2] = ["dirs", "hashes"];

/// The lenient decode (load step 2): wrong types fail, unknown keys do not.
pub(crate) fn decode_policy(doc: &Json) -> Result<RawPolicy, String> {
    let top = match doc {
        Json::Obj(entries) => entries.as_slice(),
        // Go decodes a bare `null` document to the zero policy without complaint.
        Json::Null => &[],
        other => return Err(type_error(other, "policy", "object")),
    };
    let mut raw = RawPolicy {
        version: decode_int(top, "version", "version")?,
        default_action: decode_string(top, "default_action", "default_action")?,
        ..RawPolicy::default()
    };
    for (i, item) in decode_array(top, "rules", "rules")?.iter().enumerate() {
        raw.rules.push(decode_rule(item, i)?);
    }
    if let Some(c) = decode_object(top, "compute", "compute")? {
        raw.compute = Some(RawCompute {
            max_turns: decode_int(c, "maxTurns", "compute.maxTurns")?,
            max_tool_calls: decode_int(c, "maxToolCalls", "compute.maxToolCalls")?,
            max_tokens: decode_int(c, "maxTokens", "compute.maxTokens")?,
            model_allowlist: decode_string_list(c, "modelAllowlist", "compute.modelAllowlist")?,
            backend_allowlist: decode_string_list(
                c,
                "backendAllowlist",
                "compute.backendAllowlist",
            )?,
            on_exhausted: decode_string(c, "onExhausted", "compute.onExhausted")?,
        });
    }
    if let Some(a) = decode_object(top, "attention", "attention")? {
        raw.attention = Some(AttentionBounds {
            allow_agent_answers: decode_bool(
                a,
                "allowAgentAnswers",
                "attention.allowAgentAnswers",
            )?,
            max_agent_answers: decode_int(a, "maxAgentAnswers", "attention.maxAgentAnswers")?,
        });
    }
    if let Some(t) = decode_object(top, "trusted_binaries", "trusted_binaries")? {
        let mut trusted = TrustedBinaries {
            dirs: decode_string_list(t, "dirs", "trusted_binaries.dirs")?,
            hashes: BTreeMap::new(),
        };
        if let Some(h) = decode_object(t, "hashes", "trusted_binaries.hashes")? {
            for (path, hash) in h {
                match hash {
                    Json::Str(s) => {
                        trusted.hashes.insert(path.clone(), s.clone());
                    }
                    Json::Null => {
                        trusted.hashes.insert(path.clone(), String::new());
                    }
                    other => {
                        return Err(type_error(
                            other,
                            &format!("trusted_binaries.hashes[{}]", quote(path)),
                            "string",
                        ));
                    }
                }
            }
        }
        raw.trusted_binaries = Some(trusted);
    }
    if let Some(s) = field(top, "sandbox", false) {
        raw.sandbox = Some(super::sandbox::decode(s)?);
    }
    if let Some(w) = field(top, "workspace", true) {
        raw.workspace = super::sandbox::decode_workspace(w)?;
    }
    Ok(raw)
}

fn decode_rule(item: &Json, i: usize) -> Result<RawRule, String> {
    let path = format!("rules[{i}]");
    let Some(r) = item.as_obj() else {
        // Go decodes a null element to the zero rule, which then fails validation.
        if matches!(item, Json::Null) {
            return Ok(RawRule::default());
        }
        return Err(type_error(item, &path, "rule object"));
    };
    let mut rule = RawRule {
        tools: decode_string(r, "tools", &format!("{path}.tools"))?,
        tool: decode_string(r, "tool", &format!("{path}.tool"))?,
        action: decode_string(r, "action", &format!("{path}.action"))?,
        timeout_s: decode_int(r, "timeout_s", &format!("{path}.timeout_s"))?,
        on_timeout: decode_string(r, "on_timeout", &format!("{path}.on_timeout"))?,
        when: Vec::new(),
    };
    let when_path = format!("{path}.when");
    for (j, c) in decode_array(r, "when", &when_path)?.iter().enumerate() {
        let cpath = format!("{when_path}[{j}]");
        let cond = match c {
            Json::Null => RawCondition::default(),
            Json::Obj(entries) => RawCondition {
                key: decode_string(entries, "key", &format!("{cpath}.key"))?,
                op: decode_string(entries, "op", &format!("{cpath}.op"))?,
                value: decode_string(entries, "value", &format!("{cpath}.value"))?,
            },
            other => return Err(type_error(other, &cpath, "condition object")),
        };
        rule.when.push(cond);
    }
    Ok(rule)
}

/// The comment convention: `//…` keys (and `$schema`) carry notes, never data.
pub(crate) fn is_annotation_key(key: &str) -> bool {
    key.starts_with("//") || key == "$schema"
}

/// Load step 3: the sections where a typo must fail the whole policy. Comment
/// keys are exempt (Go's strict decode refuses them): they cannot be a misspelt
/// field, and vet allows them everywhere, so refusing them here would let vet
/// pass a file the loader refuses.
fn check_strict_sections(doc: &Json) -> Result<(), String> {
    let Some(top) = doc.as_obj() else {
        return Ok(());
    };
    let sections: [(&str, &[&str]); 2] = [
        ("compute", &COMPUTE_FIELDS),
        ("trusted_binaries", &TRUSTED_BINARIES_FIELDS),
    ];
    for (section, known) in sections {
        if let Some(Json::Obj(entries)) = field(top, section, false) {
            for (k, _) in entries {
                if !is_annotation_key(k) && !known.iter().any(|f| fold_key_eq(k, f)) {
                    return Err(format!("{section}: json: unknown field {}", quote(k)));
                }
            }
        }
    }
    Ok(())
}

/// Every validation message for a decoded policy, in file order. The loader and
/// vet share this one function.
pub(crate) fn validate(raw: &RawPolicy) -> Vec<String> {
    let mut errs = Vec::new();
    if raw.version != 0 && raw.version != POLICY_VERSION {
        errs.push(format!(
            "policy declares version {} but this binary knows only {POLICY_VERSION} — update missionboard to load it",
            raw.version
        ));
    }
    if !raw.default_action.is_empty() && Action::parse(&raw.default_action).is_none() {
        errs.push(format!(
            "unknown default_action {}",
            quote(&raw.default_action)
        ));
    }
    for (i, rule) in raw.rules.iter().enumerate() {
        validate_rule(i, rule, &mut errs);
    }
    if let Some(c) = &raw.compute {
        validate_compute(c, &mut errs);
    }
    if let Some(a) = &raw.attention {
        if a.max_agent_answers < 0 {
            errs.push("attention.maxAgentAnswers must not be negative".to_string());
        } else if a.max_agent_answers > MAX_AGENT_ANSWERS_CEILING {
            errs.push(format!(
                "attention.maxAgentAnswers {} exceeds the sanity ceiling {MAX_AGENT_ANSWERS_CEILING}",
                a.max_agent_answers
            ));
        }
    }
    if let Some(t) = &raw.trusted_binaries {
        validate_trusted_binaries(t, &mut errs);
    }
    errs
}

fn validate_rule(i: usize, rule: &RawRule, errs: &mut Vec<String>) {
    if Action::parse(&rule.action).is_none() {
        errs.push(format!("rule {i}: unknown action {}", quote(&rule.action)));
    }
    match rule.on_timeout.as_str() {
        "" | "deny" | "approve" => {}
        "allow" => errs.push(format!(
            "rule {i}: on_timeout={} is not permitted (would silently bypass approval)",
            quote(&rule.on_timeout)
        )),
        other => errs.push(format!("rule {i}: unknown on_timeout {}", quote(other))),
    }
    if rule.timeout_s < 0 {
        // This era has no "wait forever" value, so a negative is always a mistake.
        errs.push(format!(
            "rule {i}: timeout_s {} is not a wait; write a positive number of seconds, or zero to leave the ask on the operator's approval ceiling",
            rule.timeout_s
        ));
    }
    for (j, cond) in rule.when.iter().enumerate() {
        match Op::parse(&cond.op) {
            None => errs.push(format!(
                "rule {i}, condition {j}: unknown op {}",
                quote(&cond.op)
            )),
            Some(Op::Glob) => {
                if let Err(e) = glob::validate(&cond.value) {
                    errs.push(format!("rule {i}, condition {j}: {e}"));
                }
            }
            Some(_) => {}
        }
    }
}

fn validate_compute(c: &RawCompute, errs: &mut Vec<String>) {
    let counters = [
        ("maxTurns", c.max_turns, MAX_TURNS_CAP),
        ("maxToolCalls", c.max_tool_calls, MAX_TOOL_CALLS_CAP),
        ("maxTokens", c.max_tokens, MAX_TOKENS_CAP),
    ];
    for (name, value, cap) in counters {
        if value < 0 {
            errs.push(format!(
                "compute: {name} must not be negative (got {value})"
            ));
        } else if value > cap {
            errs.push(format!(
                "compute: {name} is out of range (got {value}, max {cap})"
            ));
        }
    }
    match c.on_exhausted.as_str() {
        "" | "finish_stuck" | "pause_ask" => {}
        other => errs.push(format!(
            "compute: unknown onExhausted {} (must be finish_stuck or pause_ask)",
            quote(other)
        )),
    }
    for (name, list) in [
        ("modelAllowlist", &c.model_allowlist),
        ("backendAllowlist", &c.backend_allowlist),
    ] {
        if list.len() > MAX_ALLOWLIST_ENTRIES {
            errs.push(format!(
                "compute: {name} has too many entries ({}, max {MAX_ALLOWLIST_ENTRIES})",
                list.len()
            ));
            continue;
        }
        for (k, entry) in list.iter().enumerate() {
            if entry.trim().is_empty() {
                errs.push(format!("compute: {name} entry {k} is empty"));
            } else if entry.len() > MAX_ALLOWLIST_ENTRY_BYTES {
                errs.push(format!(
                    "compute: {name} entry {k} exceeds max length ({} bytes, max {MAX_ALLOWLIST_ENTRY_BYTES})",
                    entry.len()
                ));
            }
        }
    }
}

/// Relative trust anchors would depend on the process's cwd, and a malformed hash
/// can never match, so both are refused rather than left to fail silently.
fn validate_trusted_binaries(t: &TrustedBinaries, errs: &mut Vec<String>) {
    for (k, dir) in t.dirs.iter().enumerate() {
        if !dir.starts_with('/') {
            errs.push(format!(
                "trusted_binaries: dirs entry {k} ({}) is not an absolute path — write the full directory path",
                quote(dir)
            ));
        }
    }
    for (path, hash) in &t.hashes {
        if !path.starts_with('/') {
            errs.push(format!(
                "trusted_binaries: hashes key {} is not an absolute path — key each hash by the binary's real path",
                quote(path)
            ));
        }
        if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            errs.push(format!(
                "trusted_binaries: hash for {} is not a sha256 hex digest (64 hex digits)",
                quote(path)
            ));
        }
    }
}

impl RawPolicy {
    /// Only called after [`validate`] passed, so unknown actions cannot occur; the
    /// fallbacks are the fail-closed choice all the same.
    fn into_policy(self) -> Policy {
        let default_action = Action::parse(&self.default_action).unwrap_or(Action::Approve);
        let rules = self
            .rules
            .into_iter()
            .map(|r| Rule {
                when: r
                    .when
                    .into_iter()
                    .map(|c| Condition {
                        op: Op::parse(&c.op).unwrap_or(Op::Eq),
                        key: c.key,
                        value: c.value,
                    })
                    .collect(),
                action: Action::parse(&r.action).unwrap_or(Action::Approve),
                timeout_s: r.timeout_s,
                on_timeout: Action::parse(&r.on_timeout).unwrap_or(Action::Deny),
                tools: r.tools,
                tool: r.tool,
            })
            .collect();
        let compute = self
            .compute
            .map(|c| ComputeBounds {
                max_turns: c.max_turns.max(0) as u64,
                max_tool_calls: c.max_tool_calls.max(0) as u64,
                max_tokens: c.max_tokens.max(0) as u64,
                model_allowlist: c.model_allowlist,
                backend_allowlist: c.backend_allowlist,
                on_exhausted: if c.on_exhausted == "pause_ask" {
                    OnExhausted::PauseAsk
                } else {
                    OnExhausted::FinishStuck
                },
            })
            .unwrap_or_default();
        Policy {
            default_action,
            rules,
            compute,
            attention: self.attention,
            trusted_binaries: self.trusted_binaries,
            sandbox: self.sandbox,
            workspace: self.workspace,
        }
    }
}

/// Go `%q`: double-quoted, with Go's escapes, so messages read the same as the
/// format they were specified in.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{07}' => out.push_str("\\a"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0C}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{0B}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7F}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> Result<Policy, PolicyError> {
        Policy::parse("x.json", v.to_string().as_bytes())
    }

    fn parse_str(s: &str) -> Result<Policy, PolicyError> {
        Policy::parse("x.json", s.as_bytes())
    }

    fn err(v: serde_json::Value) -> String {
        parse(v).expect_err("policy must not load").to_string()
    }

    #[test]
    fn builtin_default_asks_for_everything() {
        let p = Policy::builtin_default();
        assert_eq!(p.default_action, Action::Approve);
        assert!(p.rules.is_empty());
        assert_eq!(p.compute, ComputeBounds::default());
        assert!(p.attention.is_none() && p.trusted_binaries.is_none());
    }

    #[test]
    fn full_policy_round_trips() {
        let p = parse(json!({
            "//": "comment",
            "$schema": "https://example.invalid/schema.json",
            "version": 1,
            "default_action": "deny",
            "rules": [
                {"//": "why", "tools": "local_fs", "tool": "*", "action": "deny",
                 "when": [{"key": "path", "op": "glob", "value": "**/{.ssh,.aws}/**", "//": "x"}]},
                {"tools": "local_shell", "tool": "local_shell", "action": "approve",
                 "timeout_s": 1800, "on_timeout": "deny"}
            ],
            "compute": {"maxTurns": 1, "maxToolCalls": 300, "maxTokens": 2000000,
                        "modelAllowlist": ["m1"], "backendAllowlist": ["b1", "b2"],
                        "onExhausted": "pause_ask"},
            "attention": {"allowAgentAnswers": true, "maxAgentAnswers": 5},
            "trusted_binaries": {"dirs": ["/usr/bin"], "hashes": {"/usr/bin/go": "ab".repeat(32)}}
        }))
        .unwrap();
        assert_eq!(p.default_action, Action::Deny);
        assert_eq!(
            p.rules[0],
            Rule {
                tools: "local_fs".into(),
                tool: "*".into(),
                when: vec![Condition {
                    key: "path".into(),
                    op: Op::Glob,
                    value: "**/{.ssh,.aws}/**".into()
                }],
                action: Action::Deny,
                timeout_s: 0,
                on_timeout: Action::Deny,
            }
        );
        assert_eq!(
            (p.rules[1].timeout_s, p.rules[1].on_timeout),
            (1800, Action::Deny)
        );
        assert_eq!(
            p.compute,
            ComputeBounds {
                max_turns: 1,
                max_tool_calls: 300,
                max_tokens: 2_000_000,
                model_allowlist: vec!["m1".into()],
                backend_allowlist: vec!["b1".into(), "b2".into()],
                on_exhausted: OnExhausted::PauseAsk,
            }
        );
        assert_eq!(
            p.attention.as_ref().unwrap().effective_max_agent_answers(),
            5
        );
        let t = p.trusted_binaries.unwrap();
        assert!(t.is_enforced());
        assert!(t.covers("/usr/bin/go") && !t.covers("/usr/local/bin/go"));
    }

    #[test]
    fn absent_compute_is_unbounded_and_attention_defaults() {
        let p = parse(json!({"rules": []})).unwrap();
        assert!(p.compute.is_unbounded());
        assert_eq!(p.compute.on_exhausted, OnExhausted::FinishStuck);
        let a = AttentionBounds::default();
        assert_eq!(a.effective_max_agent_answers(), 3);
        let a = AttentionBounds {
            allow_agent_answers: true,
            max_agent_answers: 0,
        };
        assert_eq!(a.effective_max_agent_answers(), 3);
        assert!(!TrustedBinaries::default().is_enforced());
        // A bare `null` document decodes to the zero policy, as in Go.
        assert_eq!(parse_str("null").unwrap(), Policy::builtin_default());
    }

    #[test]
    fn keys_match_case_insensitively_and_the_last_duplicate_wins() {
        let p = parse_str(
            r#"{"Default_Action":"deny","RULES":[{"TOOLS":"a","Action":"allow","When":[{"KEY":"k","OP":"eq","Value":"v"}]}],
                "compute":{"MAXTOKENS":7},"Attention":{"allowagentanswers":true}}"#,
        )
        .unwrap();
        assert_eq!(p.default_action, Action::Deny);
        assert_eq!(p.rules[0].tools, "a");
        assert_eq!(p.rules[0].action, Action::Allow);
        assert_eq!(p.rules[0].when[0].value, "v");
        assert_eq!(p.compute.max_tokens, 7);
        assert!(p.attention.unwrap().allow_agent_answers);

        let p = parse_str(r#"{"default_action":"allow","Default_Action":"deny"}"#).unwrap();
        assert_eq!(p.default_action, Action::Deny);
        let p = parse_str(r#"{"default_action":"deny","default_action":"allow"}"#).unwrap();
        assert_eq!(p.default_action, Action::Allow);
        // A null leaves a scalar as it was, like Go; for an object it clears it.
        let p = parse_str(r#"{"default_action":"deny","default_action":null}"#).unwrap();
        assert_eq!(p.default_action, Action::Deny);
        let p = parse_str(r#"{"attention":{"allowAgentAnswers":true},"attention":null}"#).unwrap();
        assert!(p.attention.is_none());
        // Go folds the long s and the Kelvin sign onto ASCII letters.
        assert!(fold_key_eq("tool\u{017F}", "tools"));
        assert!(fold_key_eq("\u{212A}ey", "key"));
        assert!(!fold_key_eq("tool", "tools"));
    }

    #[test]
    fn lenient_sections_ignore_unknown_keys() {
        let p = parse(json!({
            "future": 1,
            "rules": [{"action": "allow", "extra": [1, 2], "when": [{"key": "k", "op": "eq", "note": "x"}]}],
            "attention": {"maxAgentAnswer": 5, "allowAgentAnswers": true}
        }))
        .unwrap();
        assert_eq!(p.attention.unwrap().effective_max_agent_answers(), 3);
    }

    #[test]
    fn wrong_json_types_are_parse_errors() {
        for doc in [
            json!({"attention": {"maxAgentAnswers": "3"}}),
            json!({"attention": {"maxAgentAnswers": 3.5}}),
            json!({"attention": {"allowAgentAnswers": "true"}}),
            json!({"rules": {}}),
            json!({"rules": ["allow"]}),
            json!({"rules": [{"action": 1}]}),
            json!({"rules": [{"action": "approve", "timeout_s": "30"}]}),
            json!({"rules": [{"action": "allow", "when": {"key": "k"}}]}),
            json!({"rules": [{"action": "allow", "when": [{"key": "k", "op": "eq", "value": 3}]}]}),
            json!({"compute": []}),
            json!({"compute": {"maxTokens": 1e3}}),
            json!({"compute": {"modelAllowlist": "m"}}),
            json!({"compute": {"modelAllowlist": [1]}}),
            json!({"default_action": true}),
            json!({"version": "1"}),
            json!({"trusted_binaries": {"hashes": {"/x": 1}}}),
            json!([1]),
        ] {
            let e = err(doc.clone());
            assert!(
                e.starts_with("parse hitl policy \"x.json\": json: cannot unmarshal"),
                "{doc}: {e}"
            );
        }
        assert_eq!(
            err(json!({"attention": {"maxAgentAnswers": 3.5}})),
            "parse hitl policy \"x.json\": json: cannot unmarshal number 3.5 into field attention.maxAgentAnswers of type int"
        );
        assert!(
            parse_str("{not json")
                .unwrap_err()
                .to_string()
                .starts_with("parse hitl policy \"x.json\": ")
        );
        assert!(parse_str(r#"{"compute":{"maxTokens":99999999999999999999}}"#).is_err());
    }

    #[test]
    fn strict_sections_fail_the_whole_policy_on_a_typo() {
        assert_eq!(
            err(json!({"compute": {"maxTurn": 1}})),
            r#"invalid hitl policy "x.json": compute: json: unknown field "maxTurn""#
        );
        assert_eq!(
            err(json!({"compute": {"maxTokens": 5, "onExhaust": "finish_stuck"}})),
            r#"invalid hitl policy "x.json": compute: json: unknown field "onExhaust""#
        );
        assert_eq!(
            err(json!({"trusted_binaries": {"dir": ["/usr/bin"]}})),
            r#"invalid hitl policy "x.json": trusted_binaries: json: unknown field "dir""#
        );
        // Comment keys are not typos, so even a strict section takes them.
        assert!(parse(json!({"compute": {"//": "note", "$schema": "x"}})).is_ok());
    }

    #[test]
    fn validation_messages_are_verbatim() {
        let cases = [
            (
                json!({"default_action": "maybe"}),
                r#"unknown default_action "maybe""#,
            ),
            (
                json!({"rules": [{"action": "permit"}]}),
                r#"rule 0: unknown action "permit""#,
            ),
            (
                json!({"rules": [{"tool": "x"}]}),
                r#"rule 0: unknown action """#,
            ),
            (
                json!({"rules": [{"action": "allow"}, {"action": "approve", "on_timeout": "allow"}]}),
                r#"rule 1: on_timeout="allow" is not permitted (would silently bypass approval)"#,
            ),
            (
                json!({"rules": [{"action": "approve", "on_timeout": "later"}]}),
                r#"rule 0: unknown on_timeout "later""#,
            ),
            (
                json!({"rules": [{"action": "allow", "when": [{"key": "k", "op": "eq"}, {"key": "k", "op": "like"}]}]}),
                r#"rule 0, condition 1: unknown op "like""#,
            ),
            (
                json!({"rules": [{"action": "approve", "timeout_s": -1}]}),
                "rule 0: timeout_s -1 is not a wait; write a positive number of seconds, or zero to leave the ask on the operator's approval ceiling",
            ),
            (
                json!({"version": 2}),
                "policy declares version 2 but this binary knows only 1 — update missionboard to load it",
            ),
            (
                json!({"version": -1}),
                "policy declares version -1 but this binary knows only 1 — update missionboard to load it",
            ),
            (
                json!({"attention": {"maxAgentAnswers": -1}}),
                "attention.maxAgentAnswers must not be negative",
            ),
            (
                json!({"attention": {"maxAgentAnswers": 1001}}),
                "attention.maxAgentAnswers 1001 exceeds the sanity ceiling 1000",
            ),
            (
                json!({"trusted_binaries": {"dirs": ["bin"]}}),
                r#"trusted_binaries: dirs entry 0 ("bin") is not an absolute path — write the full directory path"#,
            ),
            (
                json!({"trusted_binaries": {"dirs": ["/bin"], "hashes": {"/bin/ls": "xyz"}}}),
                r#"trusted_binaries: hash for "/bin/ls" is not a sha256 hex digest (64 hex digits)"#,
            ),
        ];
        for (doc, want) in cases {
            let e = parse(doc.clone()).expect_err("must not load");
            assert_eq!(e.validation_messages(), [want.to_string()], "{doc}");
            assert_eq!(
                e.to_string(),
                format!("invalid hitl policy \"x.json\": {want}")
            );
        }
        for v in [0, 1] {
            assert!(parse(json!({"version": v})).is_ok());
        }
    }

    #[test]
    fn compute_validation_matrix() {
        let bad = |compute: serde_json::Value| -> Vec<String> {
            parse(json!({"compute": compute}))
                .expect_err("must not load")
                .validation_messages()
                .to_vec()
        };
        let one = |compute: serde_json::Value, want: &str| {
            assert_eq!(bad(compute.clone()), [want.to_string()], "{compute}");
        };
        one(
            json!({"maxTurns": -1}),
            "compute: maxTurns must not be negative (got -1)",
        );
        one(
            json!({"maxTurns": 1001}),
            "compute: maxTurns is out of range (got 1001, max 1000)",
        );
        one(
            json!({"maxTurns": 1000000}),
            "compute: maxTurns is out of range (got 1000000, max 1000)",
        );
        one(
            json!({"maxToolCalls": -5}),
            "compute: maxToolCalls must not be negative (got -5)",
        );
        one(
            json!({"maxToolCalls": 10_000_001}),
            "compute: maxToolCalls is out of range (got 10000001, max 10000000)",
        );
        one(
            json!({"maxTokens": -1}),
            "compute: maxTokens must not be negative (got -1)",
        );
        one(
            json!({"maxTokens": 100_000_000_001_i64}),
            "compute: maxTokens is out of range (got 100000000001, max 100000000000)",
        );
        one(
            json!({"onExhausted": "stop"}),
            r#"compute: unknown onExhausted "stop" (must be finish_stuck or pause_ask)"#,
        );
        one(
            json!({"modelAllowlist": vec!["m"; 257]}),
            "compute: modelAllowlist has too many entries (257, max 256)",
        );
        one(
            json!({"backendAllowlist": ["ok", "  "]}),
            "compute: backendAllowlist entry 1 is empty",
        );
        one(
            json!({"modelAllowlist": ["x".repeat(513)]}),
            "compute: modelAllowlist entry 0 exceeds max length (513 bytes, max 512)",
        );
        // Several problems are all reported, in order.
        assert_eq!(
            bad(json!({"maxTurns": -1, "maxTokens": -2, "onExhausted": "x"})),
            [
                "compute: maxTurns must not be negative (got -1)",
                "compute: maxTokens must not be negative (got -2)",
                r#"compute: unknown onExhausted "x" (must be finish_stuck or pause_ask)"#,
            ]
        );

        for good in [
            json!({}),
            json!({"maxTurns": 0}),
            json!({"maxTurns": 1}),
            json!({"maxTurns": 2}),
            json!({"maxTurns": 1000}),
            json!({"maxToolCalls": 10_000_000}),
            json!({"maxTokens": 100_000_000_000_i64}),
            json!({"onExhausted": ""}),
            json!({"onExhausted": "finish_stuck"}),
            json!({"onExhausted": "pause_ask"}),
            json!({"modelAllowlist": vec!["m"; 256]}),
            json!({"backendAllowlist": ["y".repeat(512)]}),
        ] {
            assert!(parse(json!({"compute": good.clone()})).is_ok(), "{good}");
        }
    }

    #[test]
    fn glob_values_are_validated_at_load() {
        let e = parse(json!({"rules": [{"action": "deny", "when": [
            {"key": "path", "op": "eq", "value": "{"},
            {"key": "path", "op": "glob", "value": "a}"}
        ]}]}))
        .unwrap_err();
        assert_eq!(
            e.validation_messages(),
            [r#"rule 0, condition 1: unbalanced '}' in glob "a}""#]
        );
    }

    #[test]
    fn quote_is_go_percent_q() {
        assert_eq!(quote("plain"), r#""plain""#);
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("l1\nl2\t\u{1}\u{7f}"), r#""l1\nl2\t\x01\x7f""#);
        assert_eq!(quote("naïve — ok"), "\"naïve — ok\"");
    }

    #[test]
    fn source_errors_read_like_the_loader() {
        assert_eq!(
            PolicyError::not_found("hitl-policy-x.json", "no such file").to_string(),
            r#"hitl policy "hitl-policy-x.json" not found: no such file"#
        );
        assert_eq!(
            PolicyError::read("p", "denied").to_string(),
            r#"read hitl policy "p": denied"#
        );
        assert!(PolicyError::not_found("p", "x").is_not_found());
        assert!(PolicyError::read("p", "x").validation_messages().is_empty());
    }
}
