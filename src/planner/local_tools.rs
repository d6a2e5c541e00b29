//! The native agent's own small toolset: read_file, list_dir, grep, find_files,
//! write_file, edit_file and shell. Each call is first put to the host as a
//! `session/request_permission` (by the caller, [`super::turn`]), named the way the
//! envelope presets name these tools (`_meta` toolsName/toolName: `local_fs` /
//! `read_file`, …, `local_shell` / `local_shell`) with the arguments rules look at
//! in `rawInput` (`path`, `command`), so the mission's envelope decides: the
//! default preset runs reads, asks for writes and most commands.
//!
//! Paths are taken relative to the session's working directory; writes must stay
//! inside it. Walks skip `.git`, `target` and `node_modules`, and every listing is
//! capped so one call cannot flood the context.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::v1::schema::ToolKind;
use serde_json::{Value, json};

use crate::envelope::glob;
use crate::model::ToolSpec;

/// Directories no walk descends into: version-control internals and build output.
const SKIPPED_DIRS: [&str; 3] = [".git", "target", "node_modules"];
/// How many directory entries one walk visits at most.
const WALK_LIMIT: usize = 20_000;
/// How many entries list_dir returns at most.
const LIST_LIMIT: usize = 1000;
/// How many hits grep and find_files return at most.
const HIT_LIMIT: usize = 200;
/// Lines read_file returns when the call names no limit.
const READ_LINES: usize = 400;
/// Files larger than this are not searched.
const GREP_FILE_LIMIT: u64 = 2 * 1024 * 1024;
/// The shell tool's default and longest run time.
const SHELL_TIMEOUT: Duration = Duration::from_secs(120);
const SHELL_TIMEOUT_MAX: Duration = Duration::from_secs(600);

/// One of the agent's own tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalTool {
    ReadFile,
    ListDir,
    Grep,
    FindFiles,
    WriteFile,
    EditFile,
    Shell,
}

impl LocalTool {
    pub const ALL: [LocalTool; 7] = [
        LocalTool::ReadFile,
        LocalTool::ListDir,
        LocalTool::Grep,
        LocalTool::FindFiles,
        LocalTool::WriteFile,
        LocalTool::EditFile,
        LocalTool::Shell,
    ];

    pub fn from_name(name: &str) -> Option<LocalTool> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The name the model calls it by.
    pub fn name(self) -> &'static str {
        match self {
            LocalTool::ReadFile => "read_file",
            LocalTool::ListDir => "list_dir",
            LocalTool::Grep => "grep",
            LocalTool::FindFiles => "find_files",
            LocalTool::WriteFile => "write_file",
            LocalTool::EditFile => crate::envelope::EDIT_FILE,
            LocalTool::Shell => "shell",
        }
    }

    /// The (toolset, tool) envelope rules name it by.
    pub fn envelope_name(self) -> (&'static str, &'static str) {
        match self {
            LocalTool::Shell => ("local_shell", "local_shell"),
            other => ("local_fs", other.name()),
        }
    }

    /// The ACP tool kind, for clients that look at kinds rather than names.
    pub fn kind(self) -> ToolKind {
        match self {
            LocalTool::ReadFile | LocalTool::ListDir => ToolKind::Read,
            LocalTool::Grep | LocalTool::FindFiles => ToolKind::Search,
            LocalTool::WriteFile | LocalTool::EditFile => ToolKind::Edit,
            LocalTool::Shell => ToolKind::Execute,
        }
    }

    /// What the model is told about it.
    pub fn spec(self) -> ToolSpec {
        let (description, parameters) = match self {
            LocalTool::ReadFile => (
                "Read a text file. Returns up to `limit` lines (default 400) from line `offset` (1-based, default 1); the reply says when there is more.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "File path, relative to the working directory or absolute."},
                    "offset": {"type": "integer", "minimum": 1},
                    "limit": {"type": "integer", "minimum": 1}
                }, "required": ["path"]}),
            ),
            LocalTool::ListDir => (
                "List a directory's entries (directories end with /), then how many files and directories it holds.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string", "description": "Directory, relative to the working directory; default the working directory itself."}
                }}),
            ),
            LocalTool::Grep => (
                "Search files for a literal text (not a regular expression). Returns `path:line: text` for up to 200 matching lines.",
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string", "description": "The text to find."},
                    "path": {"type": "string", "description": "File or directory to search; default the working directory."},
                    "glob": {"type": "string", "description": "Only files whose path matches this glob, e.g. **/*.rs."},
                    "ignore_case": {"type": "boolean"}
                }, "required": ["pattern"]}),
            ),
            LocalTool::FindFiles => (
                "Find files whose path matches a glob (e.g. **/*.toml, src/**/mod.rs). Returns up to 200 paths.",
                json!({"type": "object", "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string", "description": "Directory to search; default the working directory."}
                }, "required": ["pattern"]}),
            ),
            LocalTool::WriteFile => (
                "Create or overwrite a text file inside the working directory (parent directories are created), or with append true add to its end. The mission's envelope usually asks the operator first.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "content": {"type": "string", "description": "The whole new content of the file, or with append the text to add at its end."},
                    "append": {"type": "boolean", "description": "Add content at the end of the file (created if missing) instead of replacing it; default false."}
                }, "required": ["path", "content"]}),
            ),
            LocalTool::EditFile => (
                "Replace old_text, which must occur exactly once in the file, with new_text; the rest of the file stays. Prefer it to write_file for a file that exists.",
                json!({"type": "object", "properties": {
                    "path": {"type": "string"},
                    "old_text": {"type": "string"},
                    "new_text": {"type": "string"}
                }, "required": ["path", "old_text", "new_text"]}),
            ),
            LocalTool::Shell => (
                "Run a command line with sh in the working directory. Returns the exit code and output. The mission's envelope decides which commands run, ask the operator, or are refused.",
                json!({"type": "object", "properties": {
                    "command": {"type": "string", "description": "The command line."},
                    "timeout_s": {"type": "integer", "minimum": 1, "maximum": 600, "description": "Give up after this many seconds (default 120)."}
                }, "required": ["command"]}),
            ),
        };
        ToolSpec {
            name: self.name().to_string(),
            description: description.to_string(),
            parameters,
        }
    }
}

/// A validated call, ready to be put to the envelope and then run.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalCall {
    pub tool: LocalTool,
    /// One line for the tool-call card and the approvals list.
    pub title: String,
    /// What the envelope's rules look at: `path` (absolute), `command`, ….
    pub raw_input: Value,
    /// The file or directory it touches, if any.
    pub location: Option<PathBuf>,
    args: Args,
}

#[derive(Debug, Clone, PartialEq)]
enum Args {
    Read {
        path: PathBuf,
        offset: usize,
        limit: usize,
    },
    List {
        path: PathBuf,
    },
    Grep {
        pattern: String,
        root: PathBuf,
        glob: Option<String>,
        ignore_case: bool,
    },
    Find {
        pattern: String,
        root: PathBuf,
    },
    Write {
        path: PathBuf,
        content: String,
        /// Added at the end instead of replacing the file.
        append: bool,
    },
    Edit {
        path: PathBuf,
        old_text: String,
        new_text: String,
    },
    Shell {
        command: String,
        timeout: Duration,
    },
}

/// Check a call's arguments. The error is the tool result the model reads.
pub fn prepare(tool: LocalTool, arguments: &Value, cwd: &Path) -> Result<LocalCall, String> {
    let text = |key: &str| arguments.get(key).and_then(Value::as_str).map(str::trim);
    let required = |key: &str| {
        text(key)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| format!("{} needs a non-empty \"{key}\" argument", tool.name()))
    };
    let number = |key: &str| arguments.get(key).and_then(Value::as_u64);
    let shown_path = |key: &str| text(key).filter(|v| !v.is_empty()).unwrap_or(".");
    let (title, args, location) = match tool {
        LocalTool::ReadFile => {
            let path = resolve(cwd, required("path")?);
            let args = Args::Read {
                path: path.clone(),
                offset: number("offset").unwrap_or(1).max(1) as usize,
                limit: number("limit").map_or(READ_LINES, |n| n.max(1) as usize),
            };
            (
                format!("read_file {}", shown_path("path")),
                args,
                Some(path),
            )
        }
        LocalTool::ListDir => {
            let path = resolve(cwd, shown_path("path"));
            let title = format!("list_dir {}", shown_path("path"));
            (title, Args::List { path: path.clone() }, Some(path))
        }
        LocalTool::Grep => {
            let pattern = arguments
                .get("pattern")
                .and_then(Value::as_str)
                .filter(|p| !p.is_empty())
                .ok_or_else(|| "grep needs a non-empty \"pattern\" argument".to_string())?
                .to_string();
            let root = resolve(cwd, shown_path("path"));
            let glob = text("glob").filter(|g| !g.is_empty()).map(str::to_string);
            if let Some(g) = &glob {
                glob::validate(g).map_err(|e| format!("grep: {e}"))?;
            }
            let title = format!("grep {pattern:?} in {}", shown_path("path"));
            let args = Args::Grep {
                pattern,
                root: root.clone(),
                glob,
                ignore_case: arguments.get("ignore_case").and_then(Value::as_bool) == Some(true),
            };
            (title, args, Some(root))
        }
        LocalTool::FindFiles => {
            let pattern = required("pattern")?.to_string();
            glob::validate(&pattern).map_err(|e| format!("find_files: {e}"))?;
            let root = resolve(cwd, shown_path("path"));
            let title = format!("find_files {pattern} in {}", shown_path("path"));
            (
                title,
                Args::Find {
                    pattern,
                    root: root.clone(),
                },
                Some(root),
            )
        }
        LocalTool::EditFile => {
            let shown = required("path")?;
            let path = inside(cwd, shown, tool)?;
            let string = |key: &str| {
                arguments
                    .get(key)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| format!("edit_file needs a \"{key}\" argument (a string)"))
            };
            let (old_text, new_text) = (string("old_text")?, string("new_text")?);
            // Checked before the operator is asked, so nobody approves an edit that
            // cannot apply; checked again when it runs.
            let current = std::fs::read_to_string(&path)
                .map_err(|e| format!("edit_file: cannot read {shown}: {e}"))?;
            replace_once(&current, &old_text, &new_text, shown)?;
            let title = format!("edit_file {shown}");
            (
                title,
                Args::Edit {
                    path: path.clone(),
                    old_text,
                    new_text,
                },
                Some(path),
            )
        }
        LocalTool::WriteFile => {
            let shown = required("path")?;
            let path = inside(cwd, shown, tool)?;
            let content = arguments
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| "write_file needs a \"content\" argument (a string)".to_string())?
                .to_string();
            let append = arguments.get("append").and_then(Value::as_bool) == Some(true);
            let title = match append {
                true => format!("write_file {shown} (append)"),
                false => format!("write_file {shown}"),
            };
            (
                title,
                Args::Write {
                    path: path.clone(),
                    content,
                    append,
                },
                Some(path),
            )
        }
        LocalTool::Shell => {
            let command = required("command")?.to_string();
            let timeout = number("timeout_s")
                .map_or(SHELL_TIMEOUT, Duration::from_secs)
                .clamp(Duration::from_secs(1), SHELL_TIMEOUT_MAX);
            let title = format!("shell: {command}");
            (title, Args::Shell { command, timeout }, None)
        }
    };
    Ok(LocalCall {
        tool,
        title,
        raw_input: raw_input(&args, cwd),
        location,
        args,
    })
}

/// The arguments as envelope rules read them. A shell line keeps `command` whole
/// (the envelope reads compound lines itself) and carries an empty `args`, so the
/// substitution check scans the line.
fn raw_input(args: &Args, cwd: &Path) -> Value {
    // Absolute: the envelope's rules match on where a call acts, not on how the
    // model is shown it.
    let absolute = |p: &Path| p.display().to_string();
    match args {
        Args::Read {
            path,
            offset,
            limit,
        } => json!({"path": absolute(path), "offset": offset, "limit": limit}),
        Args::List { path } => json!({"path": absolute(path)}),
        Args::Grep {
            pattern,
            root,
            glob,
            ..
        } => json!({"path": absolute(root), "pattern": pattern, "glob": glob}),
        Args::Find { pattern, root } => json!({"path": absolute(root), "pattern": pattern}),
        Args::Write {
            path,
            content,
            append,
        } => json!({"path": absolute(path), "content": content, "append": append}),
        Args::Edit {
            path,
            old_text,
            new_text,
        } => json!({"path": absolute(path), "old_text": old_text, "new_text": new_text}),
        Args::Shell { command, timeout } => json!({
            "command": command, "args": [], "cwd": absolute(cwd), "timeout_s": timeout.as_secs()
        }),
    }
}

/// `raw` against `cwd`, refused unless inside it: the tools that write stay in the
/// working directory.
fn inside(cwd: &Path, raw: &str, tool: LocalTool) -> Result<PathBuf, String> {
    let path = resolve(cwd, raw);
    if !path.starts_with(resolve(cwd, ".")) {
        return Err(format!(
            "{} refused: {} is outside the working directory; write inside it, with a path relative to it",
            tool.name(),
            path.display()
        ));
    }
    Ok(path)
}

/// `current` with its one occurrence of `old` replaced by `new`; an absent or repeated
/// `old` is refused, naming how to fix the call.
fn replace_once(current: &str, old: &str, new: &str, shown: &str) -> Result<String, String> {
    if old.is_empty() {
        return Err(
            "edit_file needs a non-empty \"old_text\"; to create a file use write_file".into(),
        );
    }
    if old == new {
        return Err(format!(
            "edit_file: new_text is old_text, so nothing would change in {shown}; put the changed text in new_text"
        ));
    }
    match current.matches(old).count() {
        0 => Err(format!(
            "edit_file: old_text does not occur in {shown}; read the file and copy the text to replace exactly"
        )),
        1 => Ok(current.replacen(old, new, 1)),
        n => Err(format!(
            "edit_file: old_text occurs {n} times in {shown}; include more surrounding lines so it occurs once"
        )),
    }
}

/// `raw` against `cwd`, cleaned lexically (`..` resolved, no symlinks followed).
/// A relative path that spells the working directory itself, as small models do —
/// its absolute path without the leading `/` (`tmp/x/work/a.txt`), or its last
/// components (`x/work`) where no such entry exists — is read as that directory:
/// it lands inside the working directory either way, never outside it.
fn resolve(cwd: &Path, raw: &str) -> PathBuf {
    let clean = |p: &Path| PathBuf::from(glob::clean(&p.to_string_lossy()));
    if Path::new(raw).is_absolute() {
        return clean(Path::new(raw));
    }
    let here = clean(cwd);
    let joined = clean(&cwd.join(raw));
    let rooted = clean(&Path::new("/").join(raw));
    if rooted.starts_with(&here) && !joined.exists() {
        return rooted;
    }
    let parts: Vec<_> = Path::new(raw).components().collect();
    let first_absent = parts
        .first()
        .is_some_and(|first| !here.join(first).exists());
    if first_absent {
        let tail: Vec<_> = here.components().collect();
        // The longest run of the working directory's last components `raw` starts
        // with, two at least (one alone, like `work`, may be a directory to make).
        for n in (2..=tail.len().min(parts.len())).rev() {
            if parts[..n] == tail[tail.len() - n..] {
                return parts[n..].iter().fold(here.clone(), |p, c| p.join(c));
            }
        }
    }
    joined
}

/// Run an approved call. The error is the tool result the model reads.
pub async fn run(call: &LocalCall, cwd: &Path) -> Result<String, String> {
    let args = call.args.clone();
    let cwd = cwd.to_path_buf();
    if let Args::Shell { command, timeout } = args {
        return run_shell(&command, &cwd, timeout).await;
    }
    tokio::task::spawn_blocking(move || run_blocking(args, &cwd))
        .await
        .map_err(|e| format!("the tool task failed: {e}"))?
}

fn run_blocking(args: Args, cwd: &Path) -> Result<String, String> {
    match args {
        Args::Read {
            path,
            offset,
            limit,
        } => read_file(&path, &shown(&path, cwd), offset, limit),
        Args::List { path } => list_dir(&path, &shown(&path, cwd)),
        Args::Grep {
            pattern,
            root,
            glob,
            ignore_case,
        } => grep(&pattern, &root, glob.as_deref(), ignore_case, cwd),
        Args::Find { pattern, root } => find_files(&pattern, &root, cwd),
        Args::Write {
            path,
            content,
            append,
        } => {
            let shown = shown(&path, cwd);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create the directory of {shown}: {e}"))?;
            }
            let held = std::fs::read(&path).ok();
            // A rewrite with what the file already holds changes nothing: small models
            // copy a file they were asked to add to, then report the addition done.
            if !append && held.as_deref() == Some(content.as_bytes()) {
                return Err(format!(
                    "write_file: {shown} already holds exactly this content, so nothing changed; to add to it, call write_file with append true and only the new text"
                ));
            }
            let held = String::from_utf8_lossy(held.as_deref().unwrap_or_default());
            // Appending a block whose every line the file already holds (a copied
            // function, re-indented or not) repeats it: the same models, told to
            // append, append what they read.
            if append && repeats_held_lines(&held, &content) {
                return Err(format!(
                    "write_file: {shown} already holds every line of this text, so appending it would repeat it; append only the new text"
                ));
            }
            // An appended block starts on a line of its own: glued to a last line
            // with no newline, a new function would land inside the old one's body.
            let glued =
                append && !held.is_empty() && !held.ends_with('\n') && !content.starts_with('\n');
            let content = if glued {
                format!("\n{content}")
            } else {
                content
            };
            let written = match append {
                true => std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .and_then(|mut f| std::io::Write::write_all(&mut f, content.as_bytes())),
                false => std::fs::write(&path, &content),
            };
            written.map_err(|e| format!("cannot write {shown}: {e}"))?;
            let verb = if append { "appended to" } else { "wrote" };
            Ok(format!("{verb} {shown} ({} bytes)", content.len()))
        }
        Args::Edit {
            path,
            old_text,
            new_text,
        } => {
            let shown = shown(&path, cwd);
            let current =
                std::fs::read_to_string(&path).map_err(|e| format!("cannot read {shown}: {e}"))?;
            let edited = replace_once(&current, &old_text, &new_text, &shown)?;
            std::fs::write(&path, &edited).map_err(|e| format!("cannot write {shown}: {e}"))?;
            Ok(format!(
                "edited {shown}: replaced {} line(s) with {}",
                old_text.lines().count().max(1),
                new_text.lines().count()
            ))
        }
        Args::Shell { .. } => unreachable!("the shell runs async"),
    }
}

fn read_file(path: &Path, shown: &str, offset: usize, limit: usize) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(format!("{shown} looks like a binary file"));
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = (offset - 1).min(lines.len());
    let end = start.saturating_add(limit).min(lines.len());
    let mut out = lines[start..end].join("\n");
    if start > 0 || end < lines.len() {
        out.push_str(&format!(
            "\n[showing lines {}-{end} of {}; pass offset to read on]",
            start + 1,
            lines.len()
        ));
    }
    Ok(out)
}

/// Whether `block` has more than one non-blank line and `held` already holds every
/// one of them, whitespace around each aside.
fn repeats_held_lines(held: &str, block: &str) -> bool {
    let held: std::collections::HashSet<&str> = held.lines().map(str::trim).collect();
    let lines: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines.len() > 1 && lines.iter().all(|l| held.contains(l))
}

/// A directory's entries, sorted, directories marked with `/`, then a line counting
/// them: a model asked how many files there are reads the figure rather than
/// counting lines. The repository's own `.git` is left out (not the work) and said
/// to be, so the count is of what the operator sees as the project.
fn list_dir(path: &Path, shown: &str) -> Result<String, String> {
    let entries = std::fs::read_dir(path).map_err(|e| format!("cannot list {shown}: {e}"))?;
    let (mut dirs, mut files, mut hid_git) = (0, 0, false);
    let mut names: Vec<String> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            if name == ".git" {
                hid_git = true;
                continue;
            }
            dirs += 1;
            names.push(format!("{name}/"));
        } else {
            files += 1;
            names.push(name);
        }
    }
    names.sort();
    let total = names.len();
    names.truncate(LIST_LIMIT);
    let mut out = names.join("\n");
    if total > names.len() {
        out.push_str(&format!("\n[{} more entries]", total - names.len()));
    }
    let count = format!(
        "[{}, {}{}]",
        crate::text::counted(files, "file", "files"),
        crate::text::counted(dirs, "directory", "directories"),
        if hid_git { "; .git not shown" } else { "" }
    );
    Ok(if total == 0 {
        format!("{shown} is empty {count}")
    } else {
        format!("{out}\n{count}")
    })
}

/// Every file under `root` (or `root` itself, when it is a file), skipping the
/// usual heavy directories; stops after [`WALK_LIMIT`] entries.
fn walk_files(root: &Path, cwd: &Path) -> Result<Vec<PathBuf>, String> {
    let meta =
        std::fs::metadata(root).map_err(|e| format!("cannot search {}: {e}", shown(root, cwd)))?;
    if meta.is_file() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    let mut visited = 0;
    'walk: while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries.into_iter().rev() {
            visited += 1;
            if visited > WALK_LIMIT {
                break 'walk;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if kind.is_dir() {
                if !SKIPPED_DIRS.iter().any(|s| name == *s) {
                    pending.push(entry.path());
                }
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    Ok(files)
}

/// `path` as the model should see it: relative to `cwd` when inside it (`.` for
/// `cwd` itself). The working directory's own name is never shown: a small model
/// reads it as a path to go into, and a random one makes each run read differently.
fn shown(path: &Path, cwd: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
        Ok(rel) => rel.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

fn grep(
    pattern: &str,
    root: &Path,
    glob_filter: Option<&str>,
    ignore_case: bool,
    cwd: &Path,
) -> Result<String, String> {
    let needle = if ignore_case {
        pattern.to_lowercase()
    } else {
        pattern.to_string()
    };
    let mut hits = Vec::new();
    let mut more = false;
    'files: for file in walk_files(root, cwd)? {
        let rel = shown(&file, cwd);
        if glob_filter.is_some_and(|g| !glob::matches(g, &rel)) {
            continue;
        }
        if std::fs::metadata(&file).map_or(true, |m| m.len() > GREP_FILE_LIMIT) {
            continue;
        }
        let mut bytes = Vec::new();
        if std::fs::File::open(&file)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .is_err()
            || bytes.iter().take(8192).any(|b| *b == 0)
        {
            continue;
        }
        for (n, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
            let found = if ignore_case {
                line.to_lowercase().contains(&needle)
            } else {
                line.contains(&needle)
            };
            if found {
                if hits.len() == HIT_LIMIT {
                    more = true;
                    break 'files;
                }
                let line: String = line.trim_end().chars().take(300).collect();
                hits.push(format!("{rel}:{}: {line}", n + 1));
            }
        }
    }
    if hits.is_empty() {
        return Ok(format!("no matches for {pattern:?}"));
    }
    let mut out = hits.join("\n");
    if more {
        out.push_str(&format!(
            "\n[stopped at {HIT_LIMIT} matches; narrow the path or glob]"
        ));
    }
    Ok(out)
}

fn find_files(pattern: &str, root: &Path, cwd: &Path) -> Result<String, String> {
    let matched: Vec<String> = walk_files(root, cwd)?
        .iter()
        .map(|f| shown(f, cwd))
        .filter(|rel| glob::matches(pattern, rel))
        .collect();
    if matched.is_empty() {
        return Ok(format!("no files match {pattern}"));
    }
    let mut out = matched
        .iter()
        .take(HIT_LIMIT)
        .cloned()
        .collect::<Vec<_>>()
        .join("\n");
    if matched.len() > HIT_LIMIT {
        out.push_str(&format!(
            "\n[{} more; narrow the pattern]",
            matched.len() - HIT_LIMIT
        ));
    }
    Ok(out)
}

/// Kills the command's whole process group when dropped (a cancelled turn drops
/// the running command), so grandchildren do not outlive it.
struct GroupGuard(Option<u32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            // SAFETY: killpg has no memory-safety preconditions; a stale group id
            // fails with ESRCH, which is fine.
            unsafe {
                libc::killpg(pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }
}

async fn run_shell(command: &str, cwd: &Path, timeout: Duration) -> Result<String, String> {
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start sh: {e}"))?;
    let mut guard = GroupGuard(child.id());
    let output = match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(result) => result.map_err(|e| format!("the command failed to run: {e}"))?,
        Err(_) => {
            return Err(format!(
                "the command did not finish within {}s and was killed",
                timeout.as_secs()
            ));
        }
    };
    // The leader has been reaped: its group id may be reused, so only signal a
    // group that a timeout left running.
    guard.0 = None;
    let code = match output.status.code() {
        Some(c) => format!("exit code {c}"),
        None => "killed by a signal".to_string(),
    };
    let mut out = code;
    // A command that succeeds in silence (mv, mkdir) says so in words: given a bare
    // "exit code 0", a small model ran the same mv again, on a file already moved.
    if output.status.success() && output.stdout.is_empty() && output.stderr.is_empty() {
        out.push_str(" — it succeeded and printed nothing; do not run it again");
    }
    for (name, bytes) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if !bytes.is_empty() {
            out.push_str(&format!(
                "\n--- {name} ---\n{}",
                String::from_utf8_lossy(bytes).trim_end()
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_carry_what_envelope_rules_match_on() {
        let cwd = Path::new("/w");
        let read = prepare(LocalTool::ReadFile, &json!({"path": "src/../a.rs"}), cwd).unwrap();
        assert_eq!(read.raw_input["path"], "/w/a.rs");
        assert_eq!(read.title, "read_file src/../a.rs");
        assert_eq!(
            LocalTool::ReadFile.envelope_name(),
            ("local_fs", "read_file")
        );

        let sh = prepare(LocalTool::Shell, &json!({"command": "ls -la"}), cwd).unwrap();
        assert_eq!(sh.raw_input["command"], "ls -la");
        assert_eq!(sh.raw_input["args"], json!([]));
        assert_eq!(
            LocalTool::Shell.envelope_name(),
            ("local_shell", "local_shell")
        );

        let err = prepare(
            LocalTool::WriteFile,
            &json!({"path": "../x", "content": ""}),
            cwd,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "write_file refused: /x is outside the working directory; write inside it, with a path relative to it"
        );
        let err = prepare(LocalTool::Grep, &json!({}), cwd).unwrap_err();
        assert_eq!(err, "grep needs a non-empty \"pattern\" argument");
    }

    /// As Qwen2.5-Coder-1.5B named its working directory `/tmp/.tmpWhUqE4/work`:
    /// `.tmpWhUqE4/work`, and `tmp/.tmpWhUqE4/work/hello.txt`.
    #[test]
    fn the_working_directory_spelt_relative_to_itself_is_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().join("work");
        std::fs::create_dir(&cwd).unwrap();
        let name = dir.path().file_name().unwrap().to_str().unwrap();
        let rootless = cwd.to_str().unwrap().trim_start_matches('/').to_string();
        for (raw, meant) in [
            (format!("{name}/work"), cwd.clone()),
            (format!("{name}/work/a.txt"), cwd.join("a.txt")),
            (format!("{rootless}/a.txt"), cwd.join("a.txt")),
            ("work/a.txt".to_string(), cwd.join("work/a.txt")),
            ("src/a.txt".to_string(), cwd.join("src/a.txt")),
        ] {
            assert_eq!(resolve(&cwd, &raw), meant, "{raw}");
        }
        // Where the workspace holds such an entry, the path is that entry.
        std::fs::create_dir_all(cwd.join(name).join("work")).unwrap();
        assert_eq!(
            resolve(&cwd, &format!("{name}/work")),
            cwd.join(name).join("work")
        );
    }

    #[tokio::test]
    async fn the_tools_do_what_they_say() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        let call = |tool, args: Value| prepare(tool, &args, cwd).unwrap();
        let wrote = run(
            &call(
                LocalTool::WriteFile,
                json!({"path": "notes/a.md", "content": "one\nTwo\nthree"}),
            ),
            cwd,
        )
        .await
        .unwrap();
        // Paths are shown relative to the working directory, never its own name.
        assert_eq!(wrote, "wrote notes/a.md (13 bytes)");
        // The same content again changes nothing, and says so rather than "wrote".
        let same = json!({"path": "notes/a.md", "content": "one\nTwo\nthree"});
        let unchanged = run(&call(LocalTool::WriteFile, same), cwd)
            .await
            .unwrap_err();
        assert_eq!(
            unchanged,
            "write_file: notes/a.md already holds exactly this content, so nothing changed; to add to it, call write_file with append true and only the new text"
        );
        // Appended, the file keeps what it held, and the new text starts a line.
        let more = json!({"path": "notes/a.md", "content": "four", "append": true});
        let appended = call(LocalTool::WriteFile, more);
        assert_eq!(appended.title, "write_file notes/a.md (append)");
        assert_eq!(appended.raw_input["append"], true);
        let wrote = run(&appended, cwd).await.unwrap();
        assert_eq!(wrote, "appended to notes/a.md (5 bytes)");
        assert_eq!(
            std::fs::read_to_string(cwd.join("notes/a.md")).unwrap(),
            "one\nTwo\nthree\nfour"
        );
        // Appending a block the file already holds is refused, not repeated.
        let again = json!({"path": "notes/a.md", "content": "  Two\n\n  three\n", "append": true});
        let repeated = run(&call(LocalTool::WriteFile, again), cwd)
            .await
            .unwrap_err();
        assert!(
            repeated.ends_with("notes/a.md already holds every line of this text, so appending it would repeat it; append only the new text"),
            "{repeated}"
        );
        std::fs::write(cwd.join("notes/a.md"), "one\nTwo\nthree").unwrap();
        let read = run(
            &call(
                LocalTool::ReadFile,
                json!({"path": "notes/a.md", "offset": 2, "limit": 1}),
            ),
            cwd,
        )
        .await
        .unwrap();
        assert_eq!(
            read,
            "Two\n[showing lines 2-2 of 3; pass offset to read on]"
        );
        let found = run(
            &call(
                LocalTool::Grep,
                json!({"pattern": "two", "ignore_case": true}),
            ),
            cwd,
        )
        .await
        .unwrap();
        assert_eq!(found, "notes/a.md:2: Two");
        let listed = run(&call(LocalTool::ListDir, json!({})), cwd)
            .await
            .unwrap();
        assert_eq!(listed, "notes/\n[0 files, 1 directory]");
        std::fs::create_dir(cwd.join(".git")).unwrap();
        std::fs::write(cwd.join("lib.py"), "").unwrap();
        let listed = run(&call(LocalTool::ListDir, json!({})), cwd)
            .await
            .unwrap();
        assert_eq!(
            listed,
            "lib.py\nnotes/\n[1 file, 1 directory; .git not shown]"
        );
        let files = run(
            &call(LocalTool::FindFiles, json!({"pattern": "**/*.md"})),
            cwd,
        )
        .await
        .unwrap();
        assert_eq!(files, "notes/a.md");
        let sh = run(
            &call(
                LocalTool::Shell,
                json!({"command": "echo hi; echo oops >&2; exit 3"}),
            ),
            cwd,
        )
        .await
        .unwrap();
        assert_eq!(sh, "exit code 3\n--- stdout ---\nhi\n--- stderr ---\noops");
        let silent = call(LocalTool::Shell, json!({"command": "mv notes moved"}));
        assert_eq!(
            run(&silent, cwd).await.unwrap(),
            "exit code 0 — it succeeded and printed nothing; do not run it again"
        );
    }
}
