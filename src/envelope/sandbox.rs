//! The envelope's `sandbox` block: what a unit's process tree may write, read and
//! connect to, held by the kernel (Landlock) where it can be.
//!
//! ```json
//! "sandbox": {
//!   "filesystem": {"write": ["{workspace}", "~/.cache"], "read": "all"},
//!   "network": {"connect": [443, "{model}"]}
//! }
//! ```
//!
//! Placeholders: `{workspace}` (the mission's working directory or worktree), `{tmp}`
//! (a per-mission temp dir the host creates, removes and exports as `TMPDIR`), `~`
//! (the user's home) and, as a port, `{model}` (the model endpoint's port). `{tmp}`,
//! the agent's declared state dirs and the terminal devices are always writable; under
//! limited reads the system dirs and the programs the unit runs are always readable.
//!
//! One rule is not the envelope's to change: the missionboard home (store, sockets,
//! logs, envelopes) is never writable by a unit. Landlock can only grant, never
//! subtract, so a granted tree that contains the home is granted entry by entry
//! around it (new files directly in the directories on the way are refused); an
//! entry inside it refuses the fire. An envelope without a block gets
//! [`SandboxDecl::baseline`]: writes anywhere but the home.
//!
//! A workspace's own `.missionboard/` is not carved out the same way: it sits at the
//! root of the tree a unit works in, and carving around it would refuse every new
//! file there. A mission fired with a worktree keeps it out of reach instead.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::json::{Json, Num, is_annotation_key};
use crate::confine::{ABI_FOR_CONNECT, ABI_FOR_READ, ABI_FOR_WRITE, Confinement};

/// A limit that is either absent (`"all"`) or a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limit<T> {
    All,
    Only(Vec<T>),
}

/// A port a unit may connect to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Port {
    Number(u16),
    /// The port of the model endpoint the agent is pointed at.
    Model,
}

/// Where a mission's unit works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkspaceMode {
    /// The directory the mission was fired from.
    #[default]
    Cwd,
    /// A git worktree of its own on a `mission/<id8>` branch.
    Worktree,
}

/// The declared sandbox, placeholders unexpanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxDecl {
    pub write: Vec<String>,
    pub read: Limit<String>,
    pub connect: Limit<Port>,
}

impl SandboxDecl {
    /// Does a connect limit name `{model}` (so the model endpoint must be known)?
    pub fn names_model_port(&self) -> bool {
        matches!(&self.connect, Limit::Only(ports) if ports.contains(&Port::Model))
    }

    /// What an envelope without a `sandbox` block runs under: writes anywhere but the
    /// protected places, reads and connects open.
    pub fn baseline() -> SandboxDecl {
        SandboxDecl {
            write: vec!["/".to_string()],
            read: Limit::All,
            connect: Limit::All,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSandbox {
    #[serde(default)]
    filesystem: Option<RawFilesystem>,
    #[serde(default)]
    network: Option<RawNetwork>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFilesystem {
    #[serde(default)]
    write: Option<Vec<String>>,
    #[serde(default)]
    read: Option<Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNetwork {
    #[serde(default)]
    connect: Option<Value>,
}

/// Decode and check the block. Errors name the field and the fix.
pub(crate) fn decode(doc: &Json) -> Result<SandboxDecl, String> {
    let raw: RawSandbox = serde_json::from_value(to_value(doc))
        .map_err(|e| format!("sandbox: {e} (the block is {{\"filesystem\": {{\"write\": [...], \"read\": \"all\" | [...]}}, \"network\": {{\"connect\": \"all\" | [ports]}}}})"))?;
    let fs = raw.filesystem.unwrap_or(RawFilesystem {
        write: None,
        read: None,
    });
    let write = fs.write.unwrap_or_else(|| vec!["{workspace}".to_string()]);
    for entry in &write {
        check_path_template("filesystem.write", entry)?;
    }
    let read = match fs.read {
        None => Limit::All,
        Some(Value::String(s)) if s == "all" => Limit::All,
        Some(Value::Array(items)) => {
            let mut paths = Vec::new();
            for item in items {
                let Value::String(s) = item else {
                    return Err(format!(
                        "sandbox: filesystem.read entries must be path strings, got {item}"
                    ));
                };
                check_path_template("filesystem.read", &s)?;
                paths.push(s);
            }
            Limit::Only(paths)
        }
        Some(other) => {
            return Err(format!(
                "sandbox: filesystem.read must be \"all\" or a list of paths, got {other}"
            ));
        }
    };
    let net = raw.network.and_then(|n| n.connect);
    let connect = match net {
        None => Limit::All,
        Some(Value::String(s)) if s == "all" => Limit::All,
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::Number(n) => n
                    .as_u64()
                    .and_then(|p| u16::try_from(p).ok())
                    .filter(|p| *p > 0)
                    .map(Port::Number)
                    .ok_or_else(|| format!("sandbox: network.connect port {n} is not a TCP port (1-65535)")),
                Value::String(s) if s == "{model}" => Ok(Port::Model),
                other => Err(format!(
                    "sandbox: network.connect entries are TCP ports (1-65535) or \"{{model}}\", got {other}"
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Limit::Only)?,
        Some(other) => {
            return Err(format!(
                "sandbox: network.connect must be \"all\" or a list of TCP ports, got {other}"
            ));
        }
    };
    Ok(SandboxDecl {
        write,
        read,
        connect,
    })
}

/// `"workspace": "cwd" | "worktree"`.
pub(crate) fn decode_workspace(doc: &Json) -> Result<WorkspaceMode, String> {
    match doc {
        Json::Str(s) if s == "cwd" => Ok(WorkspaceMode::Cwd),
        Json::Str(s) if s == "worktree" => Ok(WorkspaceMode::Worktree),
        other => Err(format!(
            "workspace must be \"cwd\" or \"worktree\", got {}",
            to_value(other)
        )),
    }
}

fn check_path_template(field: &str, entry: &str) -> Result<(), String> {
    let ok = entry.starts_with('/')
        || entry == "~"
        || entry.starts_with("~/")
        || ["{workspace}", "{tmp}"]
            .iter()
            .any(|p| entry == *p || entry.strip_prefix(p).is_some_and(|r| r.starts_with('/')));
    if !ok {
        return Err(format!(
            "sandbox: {field} entry {entry:?} is not a path: write an absolute path, or start it with {{workspace}}, {{tmp}} or ~"
        ));
    }
    if Path::new(entry)
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(format!(
            "sandbox: {field} entry {entry:?} climbs with \"..\": name the directory itself"
        ));
    }
    Ok(())
}

/// The document as plain JSON, comment keys dropped (last duplicate wins, as for
/// every other field).
fn to_value(doc: &Json) -> Value {
    match doc {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Num(Num::Int(i)) => Value::from(*i),
        Json::Num(Num::BigUint(u)) => Value::from(*u),
        Json::Num(Num::Float(x)) => Value::from(*x),
        Json::Str(s) => Value::String(s.clone()),
        Json::Arr(items) => Value::Array(items.iter().map(to_value).collect()),
        Json::Obj(entries) => Value::Object(
            entries
                .iter()
                .filter(|(k, _)| !is_annotation_key(k))
                .map(|(k, v)| (k.clone(), to_value(v)))
                .collect(),
        ),
    }
}

// ---------------------------------------------------------------------------
// Expansion into concrete paths.

/// The places a mission's placeholders stand for.
#[derive(Debug, Clone)]
pub struct Places {
    pub workspace: PathBuf,
    pub tmp: PathBuf,
    /// `~`; entries starting with it are skipped when there is none.
    pub user_home: Option<PathBuf>,
    /// Never writable (and never readable under limited reads): the missionboard home.
    pub protected: Vec<PathBuf>,
    /// Whose state paths and ports these are (the agent's name), for the grant lines.
    pub agent: String,
    /// The agent declaration's `state_dirs` (templates, like write entries).
    pub state_dirs: Vec<String>,
    /// ... and its `state_files`.
    pub state_files: Vec<String>,
    /// The programs the unit runs (the agent, its interpreter, the bridge): under
    /// limited reads each is readable with the tree it is installed in.
    pub executables: Vec<PathBuf>,
    /// A worktree mission's: what committing on its own branch writes in the
    /// repository (the worktree decides which paths); always writable.
    pub commit_writes: Vec<PathBuf>,
    /// ... and what git reads there: readable under limited reads.
    pub commit_reads: Vec<PathBuf>,
    /// The mission's extra roots (`mission fire --add-dir`), canonical: each granted
    /// as the workspace is — written where the envelope writes `{workspace}`, read
    /// where it reads it.
    pub extra_roots: Vec<PathBuf>,
    /// What `{model}` stands for: each port with the endpoint it reaches.
    pub model_ports: Vec<(u16, String)>,
    /// Loopback ports of the agent's own servers: always connectable.
    pub own_ports: Vec<u16>,
    /// The agent serves itself on a port picked for each unit (`{own_port}` in its
    /// args, not yet picked): said in the grants, connectable once picked.
    pub own_port_per_unit: bool,
}

/// Devices every process expects to open for writing.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// Readable under limited reads: what a dynamically linked program needs to run.
const SYSTEM_READ: &[&str] = &[
    "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/opt", "/dev",
    "/proc", "/sys", "/run", "/nix", "/snap",
];

/// The sandbox as concrete paths, with what the host had to do to keep the
/// protected places out of it.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub decl: SandboxDecl,
    pub confinement: Confinement,
    /// One line per granted tree that contains a protected place.
    pub carved: Vec<String>,
    /// One line per grant decision: what may be written, read and connected to, and why.
    pub grants: Vec<String>,
}

/// Expand a path template (`{workspace}`, `{tmp}`, `~`) for one mission; `None` when
/// it starts with `~` and there is no home.
pub fn expand_path(entry: &str, places: &Places) -> Option<PathBuf> {
    expand(entry, places)
}

/// Does `path` (real or not yet existing) lie inside a protected place?
pub fn is_protected(path: &Path, places: &Places) -> bool {
    let path = real(path);
    places.protected.iter().any(|p| path.starts_with(real(p)))
}

/// Expand `decl` for one mission. Refuses an entry that lies inside a protected place.
pub fn resolve(decl: &SandboxDecl, places: &Places) -> Result<Resolved, String> {
    let protected: Vec<PathBuf> = places.protected.iter().map(|p| real(p)).collect();
    let mut carved = Vec::new();
    let mut grants = Vec::new();
    let agent = &places.agent;
    // Each write entry, why it is there, and whether it is there whenever a unit
    // starts (its workspace, which is its cwd, and what the host makes first: the temp
    // dir, the agent's state paths). Anything else the envelope names is granted only
    // if it exists.
    let temp_dir = || {
        (
            "{tmp}".to_string(),
            "the mission's temp dir".to_string(),
            true,
        )
    };
    let mut write_entries: Vec<(String, String, bool)> = decl
        .write
        .iter()
        .map(|w| match w.as_str() {
            "{tmp}" => temp_dir(),
            _ => (w.clone(), "the envelope".to_string(), w == "{workspace}"),
        })
        .collect();
    if !decl.write.iter().any(|w| w == "{tmp}") {
        write_entries.push(temp_dir());
    }
    write_entries.extend(
        places
            .state_dirs
            .iter()
            .map(|d| (d.clone(), format!("{agent}'s state dir"), true)),
    );
    write_entries.extend(
        places
            .state_files
            .iter()
            .map(|f| (f.clone(), format!("{agent}'s state file"), true)),
    );
    let mut write = Vec::new();
    for (entry, why, made_first) in &write_entries {
        check_path_template("state_dirs", entry)?;
        match expand(entry, places) {
            Some(path) => {
                let granted = carve(entry, &path, &protected, "filesystem.write", &mut carved)?;
                grants.push(match missing(&path, *made_first) {
                    Some(gone) => absent_line("write", entry, &gone, why),
                    None => grant_line("write", entry, &granted, why),
                });
                write.extend(granted);
            }
            None => grants.push(format!(
                "write {entry}: not granted, there is no home (~) ({why})"
            )),
        }
    }
    for path in &places.commit_writes {
        let entry = path.display().to_string();
        let granted = carve(&entry, path, &protected, "filesystem.write", &mut carved)?;
        grants.push(grant_line(
            "write",
            &entry,
            &granted,
            "committing on the mission's branch",
        ));
        write.extend(granted);
    }
    let workspace_written = decl.write.iter().any(|w| w == "{workspace}");
    for path in places.extra_roots.iter().filter(|_| workspace_written) {
        let entry = path.display().to_string();
        let granted = carve(&entry, path, &protected, "filesystem.write", &mut carved)?;
        match missing(path, false) {
            Some(gone) => grants.push(absent_line(
                "write",
                &entry,
                &gone,
                "the mission's --add-dir",
            )),
            None => {
                grants.push(grant_line(
                    "write",
                    &entry,
                    &granted,
                    "the mission's --add-dir",
                ));
                write.extend(granted);
            }
        }
    }
    let mut devices: Vec<PathBuf> = DEVICES.iter().map(PathBuf::from).collect();
    grants.push(format!(
        "write {}: the terminal devices",
        DEVICES.join(", ")
    ));
    let read = match &decl.read {
        Limit::All => {
            grants.push("read everything: the envelope does not limit reads".to_string());
            None
        }
        Limit::Only(entries) => {
            let mut read = Vec::new();
            for entry in entries {
                if let Some(path) = expand(entry, places) {
                    let granted = carve(entry, &path, &protected, "filesystem.read", &mut carved)?;
                    grants.push(match missing(&path, false) {
                        Some(gone) => absent_line("read", entry, &gone, "the envelope"),
                        None => grant_line("read", entry, &granted, "the envelope"),
                    });
                    read.extend(granted);
                }
            }
            let workspace_read = entries.iter().any(|e| e == "{workspace}");
            for path in places.extra_roots.iter().filter(|_| workspace_read) {
                let entry = path.display().to_string();
                let granted = carve(&entry, path, &protected, "filesystem.read", &mut carved)?;
                match missing(path, false) {
                    Some(gone) => grants.push(absent_line(
                        "read",
                        &entry,
                        &gone,
                        "the mission's --add-dir",
                    )),
                    None => {
                        grants.push(grant_line(
                            "read",
                            &entry,
                            &granted,
                            "the mission's --add-dir",
                        ));
                        read.extend(granted);
                    }
                }
            }
            for path in &places.commit_reads {
                let entry = path.display().to_string();
                let granted = carve(&entry, path, &protected, "filesystem.read", &mut carved)?;
                grants.push(grant_line(
                    "read",
                    &entry,
                    &granted,
                    "git's reads for the mission's branch",
                ));
                read.extend(granted);
            }
            read.extend(SYSTEM_READ.iter().map(PathBuf::from));
            grants.push(format!(
                "read {}: the system dirs a program needs to run",
                SYSTEM_READ.join(", ")
            ));
            for exe in &places.executables {
                for (tree, why) in program_trees(exe, places, &protected) {
                    if !read.contains(&tree) {
                        grants.push(format!("read {}: {why}", tree.display()));
                        read.push(tree);
                    }
                }
            }
            Some(read)
        }
    };
    write.append(&mut devices);
    let connect = match &decl.connect {
        Limit::All => {
            grants.push("connect anywhere: the envelope does not limit connects".to_string());
            None
        }
        Limit::Only(ports) => {
            let mut out: Vec<u16> = Vec::new();
            for p in ports {
                match p {
                    Port::Number(n) => {
                        grants.push(format!("connect port {n}: the envelope"));
                        out.push(*n);
                    }
                    Port::Model if places.model_ports.is_empty() => grants.push(
                        "connect {model}: no port, no model endpoint is known for this agent"
                            .to_string(),
                    ),
                    Port::Model => {
                        for (port, endpoint) in &places.model_ports {
                            grants.push(format!("connect port {port}: {{model}}, {endpoint}"));
                            out.push(*port);
                        }
                    }
                }
            }
            for port in &places.own_ports {
                grants.push(format!(
                    "connect port {port}: {agent}'s own server on loopback"
                ));
                out.push(*port);
            }
            if places.own_port_per_unit {
                grants.push(format!(
                    "connect port {{own_port}}: {agent}'s own server on loopback, on a port picked for each unit"
                ));
            }
            out.dedup();
            Some(out)
        }
    };
    Ok(Resolved {
        decl: decl.clone(),
        confinement: Confinement {
            write,
            read,
            connect,
        },
        carved,
        grants,
    })
}

/// `path`, when nothing is there and nothing will be made there before the unit
/// starts (`made_first`): the kernel ruleset can only grant what exists, so such an
/// entry grants nothing and must not read as a grant.
fn missing(path: &Path, made_first: bool) -> Option<PathBuf> {
    (!made_first && std::fs::metadata(path).is_err()).then(|| path.to_path_buf())
}

/// `<access> <entry>: not granted: does not exist (<why>)`, with the path the entry
/// stands for when it differs.
fn absent_line(access: &str, entry: &str, path: &Path, why: &str) -> String {
    let shown = path.display().to_string();
    if shown == entry {
        format!("{access} {entry}: not granted: does not exist ({why})")
    } else {
        format!("{access} {entry} = {shown}: not granted: does not exist ({why})")
    }
}

/// `<access> <entry>: <paths> (<why>)`, the paths only when they differ from the entry.
fn grant_line(access: &str, entry: &str, granted: &[PathBuf], why: &str) -> String {
    let shown: Vec<String> = granted.iter().map(|p| p.display().to_string()).collect();
    if shown.len() == 1 && shown[0] == entry {
        format!("{access} {entry}: {why}")
    } else if shown.len() > 4 {
        format!(
            "{access} {entry}: {why} ({} entries around the missionboard home)",
            shown.len()
        )
    } else {
        format!("{access} {entry} = {}: {why}", shown.join(", "))
    }
}

fn expand(entry: &str, places: &Places) -> Option<PathBuf> {
    let (base, rest) = if let Some(rest) = entry.strip_prefix("{workspace}") {
        (places.workspace.clone(), rest)
    } else if let Some(rest) = entry.strip_prefix("{tmp}") {
        (places.tmp.clone(), rest)
    } else if let Some(rest) = entry.strip_prefix('~') {
        (places.user_home.clone()?, rest)
    } else {
        return Some(PathBuf::from(entry));
    };
    let rest = rest.trim_start_matches('/');
    Some(if rest.is_empty() {
        base
    } else {
        base.join(rest)
    })
}

/// What a program needs readable to run, with why: itself (as named and as its real
/// path), the installation it runs from (`<prefix>` of `<prefix>/bin/<exe>`), the
/// whole npm package tree it lies in (the outermost `node_modules`, which holds its
/// dependencies and the sibling packages it spawns), the Python venv it is named in
/// (its `pyvenv.cfg` beside its `bin`, never followed through the symlink to the base
/// interpreter) and the pyenv root of a pyenv shim. Never the user's home itself, `/`,
/// or a tree holding a protected place.
fn program_trees(exe: &Path, places: &Places, protected: &[PathBuf]) -> Vec<(PathBuf, String)> {
    let shown = exe.display();
    let real_exe = real(exe);
    let mut out = vec![(exe.to_path_buf(), format!("the program {shown}"))];
    if real_exe != exe {
        out.push((real_exe.clone(), format!("the real path of {shown}")));
    }
    let too_wide = |root: &Path| {
        root.parent().is_none()
            || places.user_home.as_deref().is_some_and(|h| real(h) == root)
            || protected.iter().any(|p| p.starts_with(root))
    };
    let mut push = |root: PathBuf, why: String| {
        let root = real(&root);
        if !too_wide(&root) && !out.iter().any(|(p, _)| *p == root) {
            out.push((root, why));
        }
    };
    if let Some(dir) = exe.parent() {
        if let Some(venv) = dir.parent().filter(|v| v.join("pyvenv.cfg").is_file()) {
            // The venv as named: its python is a symlink out of it, and the venv's own
            // pyvenv.cfg and site-packages are what make it this venv.
            push(venv.to_path_buf(), format!("the Python venv of {shown}"));
        }
        if dir.file_name().is_some_and(|n| n == "shims")
            && let Some(root) = dir.parent()
        {
            push(
                root.to_path_buf(),
                format!("the pyenv root of the shim {shown}"),
            );
        }
    }
    for path in [exe, real_exe.as_path()] {
        if let Some(tree) = path
            .ancestors()
            .filter(|a| a.file_name().is_some_and(|n| n == "node_modules"))
            .last()
        {
            push(
                tree.to_path_buf(),
                format!("the npm package tree of {shown}"),
            );
        }
    }
    if let Some(root) = install_root(&real_exe) {
        push(root, format!("the installation {shown} runs from"));
    }
    out
}

/// `<prefix>` of `<prefix>/bin/<exe>` (e.g. `~/.pyenv/versions/3.11.7` for its python,
/// whose standard library and packages live there), else the executable's directory.
fn install_root(exe: &Path) -> Option<PathBuf> {
    let dir = exe.parent()?;
    let root = match dir.file_name() {
        Some(name) if name == "bin" => dir.parent()?,
        _ => dir,
    };
    Some(root.to_path_buf())
}

/// The path with symlinks resolved when it exists (Landlock grants the inode a path
/// reaches, so containment must be judged on real paths).
fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Grant `path` minus every protected place: refused when it lies inside one, split
/// entry by entry around one it contains.
fn carve(
    entry: &str,
    path: &Path,
    protected: &[PathBuf],
    field: &str,
    notes: &mut Vec<String>,
) -> Result<Vec<PathBuf>, String> {
    let path = real(path);
    if let Some(p) = protected.iter().find(|p| path.starts_with(p)) {
        return Err(format!(
            "sandbox: {field} entry {entry:?} ({}) lies inside {}, which a unit may never {}: remove the entry, or fire from another directory",
            path.display(),
            p.display(),
            if field == "filesystem.read" {
                "read under limited reads"
            } else {
                "write"
            }
        ));
    }
    let mut roots = vec![path.clone()];
    for p in protected {
        let mut next = Vec::new();
        for root in roots {
            if p.starts_with(&root) {
                notes.push(format!(
                    "{field} entry {entry:?} ({}) contains {}: it is granted entry by entry around it, so new files directly in the directories on the way are refused",
                    root.display(),
                    p.display()
                ));
                next.extend(around(&root, p));
            } else {
                next.push(root);
            }
        }
        roots = next;
    }
    Ok(roots)
}

/// Every entry under `root` except the way down to `inner` (itself excluded).
fn around(root: &Path, inner: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dir = root.to_path_buf();
    let Ok(rel) = inner.strip_prefix(root) else {
        return out;
    };
    for step in rel.components() {
        let next = dir.join(step);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            out.extend(
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| *p != next),
            );
        }
        dir = next;
    }
    out
}

// ---------------------------------------------------------------------------
// The truth about each limit, for every surface.

/// A limit of the sandbox block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxField {
    Write,
    Read,
    Connect,
}

impl SandboxField {
    pub const ALL: [SandboxField; 3] = [
        SandboxField::Write,
        SandboxField::Read,
        SandboxField::Connect,
    ];

    pub fn key(self) -> &'static str {
        match self {
            SandboxField::Write => "filesystem.write",
            SandboxField::Read => "filesystem.read",
            SandboxField::Connect => "network.connect",
        }
    }

    fn needs_abi(self) -> u32 {
        match self {
            SandboxField::Write => ABI_FOR_WRITE,
            SandboxField::Read => ABI_FOR_READ,
            SandboxField::Connect => ABI_FOR_CONNECT,
        }
    }
}

/// How far a sandbox limit is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxStatus {
    /// The running kernel refuses what the limit excludes.
    EnforcedKernel,
    /// Parsed, but this kernel (or OS) cannot hold it: the unit is not confined by it.
    DeclaredNotEnforced,
    /// The envelope leaves it open (`"all"`).
    NotLimited,
}

impl SandboxStatus {
    pub fn label(self) -> &'static str {
        match self {
            SandboxStatus::EnforcedKernel => "enforced (kernel)",
            SandboxStatus::DeclaredNotEnforced => "declared, not enforced",
            SandboxStatus::NotLimited => "not limited",
        }
    }
}

/// The status of `field` in `decl` on a kernel offering Landlock ABI `abi`. Writes
/// are always limited: the protected places are never writable.
pub fn sandbox_status(field: SandboxField, decl: &SandboxDecl, abi: u32) -> SandboxStatus {
    let limited = match field {
        SandboxField::Write => true,
        SandboxField::Read => decl.read != Limit::All,
        SandboxField::Connect => decl.connect != Limit::All,
    };
    if !limited {
        SandboxStatus::NotLimited
    } else if abi >= field.needs_abi() {
        SandboxStatus::EnforcedKernel
    } else {
        SandboxStatus::DeclaredNotEnforced
    }
}

/// What `field` of `decl` allows, as ` [entries]` (empty when not limited).
fn allowed(field: SandboxField, decl: &SandboxDecl) -> String {
    match field {
        SandboxField::Write => format!(" [{}]", decl.write.join(", ")),
        SandboxField::Read => match &decl.read {
            Limit::All => String::new(),
            Limit::Only(p) => format!(" [{}]", p.join(", ")),
        },
        SandboxField::Connect => match &decl.connect {
            Limit::All => String::new(),
            Limit::Only(p) => format!(
                " [{}]",
                p.iter()
                    .map(|p| match p {
                        Port::Number(n) => n.to_string(),
                        Port::Model => "{model}".to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
}

/// One line: every field with its label and what it allows.
pub fn describe(decl: &SandboxDecl, abi: u32) -> String {
    let fields: Vec<String> = SandboxField::ALL
        .into_iter()
        .map(|f| {
            let status = sandbox_status(f, decl, abi);
            format!("{} {}{}", f.key(), status.label(), allowed(f, decl))
        })
        .collect();
    format!("{} (Landlock ABI {abi})", fields.join("; "))
}

/// The fire's one line about the sandbox: [`describe`], or, on a kernel that holds
/// none of it, [`unenforced_note`] with what was declared, so "declared, not
/// enforced" is said once.
pub fn narration(decl: &SandboxDecl, abi: u32) -> String {
    let Some(note) = unenforced_note(abi) else {
        return describe(decl, abi);
    };
    let fields: Vec<String> = SandboxField::ALL
        .into_iter()
        .map(|f| match sandbox_status(f, decl, abi) {
            SandboxStatus::NotLimited => {
                format!("{} {}", f.key(), SandboxStatus::NotLimited.label())
            }
            _ => format!("{}{}", f.key(), allowed(f, decl)),
        })
        .collect();
    format!("{note} (declared: {})", fields.join("; "))
}

/// What this kernel holds, for `doctor`: which limits, and which are declared only.
pub fn kernel_summary(abi: u32) -> String {
    if let Some(note) = unenforced_note(abi) {
        return note;
    }
    let (held, declared): (Vec<SandboxField>, Vec<SandboxField>) = SandboxField::ALL
        .into_iter()
        .partition(|f| abi >= f.needs_abi());
    let keys = |fields: &[SandboxField]| {
        fields
            .iter()
            .map(|f| f.key())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut text = format!("the kernel holds {}", keys(&held));
    if !declared.is_empty() {
        text.push_str(&format!(
            "; {} declared, not enforced (needs a newer kernel)",
            keys(&declared)
        ));
    }
    text
}

/// The one sentence a surface adds when the kernel holds nothing.
pub fn unenforced_note(abi: u32) -> Option<String> {
    (abi < ABI_FOR_READ).then(|| {
        "this kernel offers no Landlock (ABI 0): the sandbox is declared, not enforced — the unit runs with your user's privileges; the mission socket still refuses callers without the mission's token".to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decl(v: serde_json::Value) -> Result<SandboxDecl, String> {
        let json: Json = serde_json::from_value(v).unwrap();
        decode(&json)
    }

    #[test]
    fn decodes_the_block_and_names_the_fix_for_mistakes() {
        let d = decl(serde_json::json!({
            "//": "note",
            "filesystem": {"write": ["{workspace}", "~/.cache"], "read": ["{workspace}", "/data"]},
            "network": {"connect": [443, "{model}"]}
        }))
        .unwrap();
        assert_eq!(d.write, ["{workspace}", "~/.cache"]);
        assert_eq!(
            d.read,
            Limit::Only(vec!["{workspace}".into(), "/data".into()])
        );
        assert_eq!(d.connect, Limit::Only(vec![Port::Number(443), Port::Model]));

        let d = decl(serde_json::json!({"network": {"connect": "all"}})).unwrap();
        assert_eq!(d.write, ["{workspace}"]);
        assert_eq!(d.read, Limit::All);

        let err = decl(serde_json::json!({"filesystem": {"writes": []}})).unwrap_err();
        assert!(err.starts_with("sandbox: unknown field `writes`"), "{err}");
        let err = decl(serde_json::json!({"filesystem": {"write": ["src"]}})).unwrap_err();
        assert!(err.contains("\"src\" is not a path"), "{err}");
        let err =
            decl(serde_json::json!({"filesystem": {"write": ["{workspace}/../x"]}})).unwrap_err();
        assert!(err.contains("climbs"), "{err}");
        let err = decl(serde_json::json!({"network": {"connect": [70000]}})).unwrap_err();
        assert!(err.contains("70000 is not a TCP port"), "{err}");
        let err = decl(serde_json::json!({"filesystem": {"read": "some"}})).unwrap_err();
        assert!(err.contains("\"all\" or a list of paths"), "{err}");
    }

    fn places(root: &Path) -> Places {
        Places {
            workspace: root.join("work"),
            tmp: root.join("tmp"),
            user_home: Some(root.to_path_buf()),
            protected: vec![root.join("mbhome")],
            agent: "a".into(),
            state_dirs: vec!["~/.cache".into()],
            state_files: vec![],
            executables: vec![],
            commit_writes: vec![],
            commit_reads: vec![],
            extra_roots: vec![],
            model_ports: vec![(11434, "http://127.0.0.1:11434".into())],
            own_ports: vec![],
            own_port_per_unit: false,
        }
    }

    #[test]
    fn an_own_port_picked_per_unit_is_said_as_such_and_a_picked_one_is_granted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let decl = SandboxDecl {
            write: vec![],
            read: Limit::All,
            connect: Limit::Only(vec![Port::Number(443)]),
        };
        let declared = Places {
            own_port_per_unit: true,
            ..places(&root)
        };
        let r = resolve(&decl, &declared).unwrap();
        assert!(
            r.grants.iter().any(|g| g
                == "connect port {own_port}: a's own server on loopback, on a port picked for each unit"),
            "{:?}",
            r.grants
        );
        assert_eq!(r.confinement.connect, Some(vec![443]), "nothing picked yet");
        let unit = Places {
            own_ports: vec![41234],
            ..places(&root)
        };
        let r = resolve(&decl, &unit).unwrap();
        assert_eq!(r.confinement.connect, Some(vec![443, 41234]));
        assert!(!r.grants.iter().any(|g| g.contains("{own_port}")));
    }

    #[test]
    fn an_envelope_path_that_does_not_exist_is_listed_as_not_granted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("there")).unwrap();
        let decl = SandboxDecl {
            write: vec!["{workspace}".into(), "~/.nope".into(), "~/there".into()],
            read: Limit::Only(vec!["/nonexistent-mb-test".into()]),
            connect: Limit::All,
        };
        // Neither the workspace nor the state dir exists yet: both are there by the
        // time a unit starts, so both are grants.
        let grants = resolve(&decl, &places(&root)).unwrap().grants;
        let nope = root.join(".nope");
        let there = root.join("there");
        let cache = root.join(".cache");
        for line in [
            format!(
                "write {{workspace}} = {}: the envelope",
                root.join("work").display()
            ),
            format!(
                "write ~/.nope = {}: not granted: does not exist (the envelope)",
                nope.display()
            ),
            format!("write ~/there = {}: the envelope", there.display()),
            format!("write ~/.cache = {}: a's state dir", cache.display()),
            "read /nonexistent-mb-test: not granted: does not exist (the envelope)".to_string(),
        ] {
            assert!(grants.contains(&line), "{line} in {grants:#?}");
        }
    }

    #[test]
    fn a_tree_holding_the_home_is_granted_around_it_and_one_inside_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["work", "tmp", "mbhome/run", "other"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let r = resolve(
            &SandboxDecl {
                write: vec!["~".into()],
                read: Limit::All,
                connect: Limit::Only(vec![Port::Model, Port::Number(443)]),
            },
            &places(&root),
        )
        .unwrap();
        let w = &r.confinement.write;
        assert!(w.contains(&root.join("work")) && w.contains(&root.join("other")));
        assert!(
            !w.iter()
                .any(|p| p.starts_with(root.join("mbhome")) || *p == root)
        );
        assert_eq!(r.carved.len(), 1, "{:?}", r.carved);
        assert_eq!(r.confinement.connect, Some(vec![11434, 443]));

        let err = resolve(
            &SandboxDecl {
                write: vec!["~/mbhome/run".into()],
                read: Limit::All,
                connect: Limit::All,
            },
            &places(&root),
        )
        .unwrap_err();
        assert!(err.contains("lies inside"), "{err}");
    }

    #[test]
    fn under_limited_reads_an_interpreter_s_installation_is_readable_but_never_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in ["work", "tmp", "mbhome", ".pyenv/3.11/bin", "bin"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let (python, own) = (root.join(".pyenv/3.11/bin/python"), root.join("bin/agent"));
        std::fs::write(&python, "").unwrap();
        std::fs::write(&own, "").unwrap();
        let mut places = places(&root);
        places.executables = vec![python.clone(), own.clone()];
        let decl = SandboxDecl {
            write: vec!["{workspace}".into()],
            read: Limit::Only(vec!["{workspace}".into()]),
            connect: Limit::All,
        };
        let read = resolve(&decl, &places).unwrap().confinement.read.unwrap();
        assert!(read.contains(&root.join(".pyenv/3.11")), "{read:?}");
        assert!(read.contains(&own), "{read:?}");
        assert!(
            !read.contains(&root),
            "the home itself is never granted: {read:?}"
        );
    }

    #[test]
    fn a_program_s_package_tree_venv_and_pyenv_root_are_readable_as_installed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for d in [
            "work",
            "tmp",
            "mbhome",
            "prefix/node_modules/pkg/bin",
            "prefix/node_modules/.bin",
            "base/bin",
            "venv/bin",
            "pyenv/shims",
        ] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("prefix/node_modules/pkg/bin/x.js"), "").unwrap();
        std::os::unix::fs::symlink("../pkg/bin/x.js", root.join("prefix/node_modules/.bin/x"))
            .unwrap();
        std::fs::write(root.join("base/bin/python3"), "").unwrap();
        std::os::unix::fs::symlink(root.join("base/bin/python3"), root.join("venv/bin/python"))
            .unwrap();
        std::fs::write(root.join("venv/pyvenv.cfg"), "").unwrap();
        std::fs::write(root.join("pyenv/shims/python"), "").unwrap();
        let mut places = places(&root);
        places.executables = vec![
            root.join("prefix/node_modules/.bin/x"),
            root.join("venv/bin/python"),
            root.join("pyenv/shims/python"),
        ];
        let decl = SandboxDecl {
            write: vec!["{workspace}".into()],
            read: Limit::Only(vec!["{workspace}".into()]),
            connect: Limit::All,
        };
        let resolved = resolve(&decl, &places).unwrap();
        let read = resolved.confinement.read.unwrap();
        for granted in ["prefix/node_modules", "venv", "base", "pyenv"] {
            assert!(read.contains(&root.join(granted)), "{granted}: {read:?}");
        }
        assert!(
            resolved.grants.contains(&format!(
                "read {}: the Python venv of {}",
                root.join("venv").display(),
                root.join("venv/bin/python").display()
            )),
            "{:#?}",
            resolved.grants
        );
    }

    #[test]
    fn labels_follow_the_kernel_abi() {
        let d = SandboxDecl {
            write: vec!["{workspace}".into()],
            read: Limit::All,
            connect: Limit::Only(vec![Port::Number(443)]),
        };
        assert_eq!(
            describe(&d, 7),
            "filesystem.write enforced (kernel) [{workspace}]; filesystem.read not limited; network.connect enforced (kernel) [443] (Landlock ABI 7)"
        );
        assert_eq!(
            sandbox_status(SandboxField::Connect, &d, 3),
            SandboxStatus::DeclaredNotEnforced
        );
        assert_eq!(
            sandbox_status(SandboxField::Write, &d, 0),
            SandboxStatus::DeclaredNotEnforced
        );
        assert!(unenforced_note(0).is_some() && unenforced_note(1).is_none());
        assert_eq!(narration(&d, 7), describe(&d, 7));
        assert_eq!(
            narration(&d, 0).matches("declared, not enforced").count(),
            1,
            "{}",
            narration(&d, 0)
        );
        assert!(
            narration(&d, 0).ends_with(
                "(declared: filesystem.write [{workspace}]; filesystem.read not limited; network.connect [443])"
            ),
            "{}",
            narration(&d, 0)
        );
        assert_eq!(
            kernel_summary(2),
            "the kernel holds filesystem.read; filesystem.write, network.connect declared, not enforced (needs a newer kernel)"
        );
        assert_eq!(
            kernel_summary(7),
            "the kernel holds filesystem.write, filesystem.read, network.connect"
        );
    }
}
