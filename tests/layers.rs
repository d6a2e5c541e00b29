//! The crate's modules depend one way: every `crate::<module>` path in `src/`
//! points to a lower layer, or to a sibling in a layer whose siblings may depend on
//! each other without a cycle. A new upward edge fails here, naming the file, the
//! line and the edge. Unit tests (`#[cfg(test)]` items) are exempt: they exercise a
//! module inside the assembled crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// How a layer treats edges between its own modules.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Siblings {
    /// Modules of the layer may use each other, as long as no cycle forms.
    Acyclic,
    /// Only the edges in [`ALLOWED_SIBLING_EDGES`].
    Listed,
}

/// (layer, rank, sibling rule): an edge may only point to a lower rank.
const LEAVES: (&str, u8, Siblings) = ("leaves", 0, Siblings::Acyclic);
const STORAGE: (&str, u8, Siblings) = ("storage", 1, Siblings::Acyclic);
const DOMAIN: (&str, u8, Siblings) = ("domain", 2, Siblings::Acyclic);
const PROTOCOL: (&str, u8, Siblings) = ("protocol adapters", 3, Siblings::Acyclic);
const ROLES: (&str, u8, Siblings) = ("roles", 4, Siblings::Listed);
const OPERATIONS: (&str, u8, Siblings) = ("operations", 5, Siblings::Acyclic);
const ASSEMBLY: (&str, u8, Siblings) = ("assembly", 6, Siblings::Acyclic);
const SURFACES: (&str, u8, Siblings) = ("surfaces", 7, Siblings::Acyclic);

/// Every top-level module of the crate, one line each.
const MODULES: &[(&str, (&str, u8, Siblings))] = &[
    // leaves: plain helpers that know nothing of missions
    ("clock", LEAVES),
    ("duration", LEAVES),
    ("paths", LEAVES),
    ("table", LEAVES),
    ("logging", LEAVES),
    ("runtime", LEAVES),
    ("sync", LEAVES),
    ("text", LEAVES),
    ("signals", LEAVES),
    ("supervise", LEAVES),
    ("confine", LEAVES),
    ("host", LEAVES),
    // the shipped preset files (envelopes, chains, agents.toml) and their seeding
    ("presets", LEAVES),
    // storage: the connection and the migration runner, no tables of its own
    ("store", STORAGE),
    // domain: the services that own tables and rules
    ("config", DOMAIN),
    ("bus", DOMAIN),
    ("agents", DOMAIN),
    ("mission", DOMAIN),
    ("asks", DOMAIN),
    ("envelope", DOMAIN),
    ("worktree", DOMAIN),
    // protocol adapters: ACP to units, the MCP mission tools, the model client
    ("acp_client", PROTOCOL),
    ("mission_mcp", PROTOCOL),
    ("model", PROTOCOL),
    // roles: the fleet that hosts units, and the agents and reviewers built on them
    ("fleet", ROLES),
    ("oracle", ROLES),
    ("planner", ROLES),
    ("stub", ROLES),
    // operations: the operator's verbs, one file each, that every surface calls
    ("ops", OPERATIONS),
    // `missionboard host`: the long-lived host that runs the queue over the fleet
    ("daemon", OPERATIONS),
    // assembly: the one place that names every table-owning module
    ("schema", ASSEMBLY),
    // surfaces: what an operator runs
    ("board", SURFACES),
    ("bench", SURFACES),
    ("cli", SURFACES),
    ("acp_server", SURFACES),
];

/// The only edges between roles, and why each is one way.
const ALLOWED_SIBLING_EDGES: &[(&str, &str, &str)] = &[(
    "oracle",
    "fleet",
    "the oracle reviews the questions a fleet hosts; the fleet never knows it",
)];

/// Crate-root macros (`#[macro_export]`) and the module that defines them.
const MACROS: &[(&str, &str)] = &[("row", "table"), ("sql_params", "store")];

struct Edge {
    from: String,
    to: String,
    file: PathBuf,
    line: usize,
    text: String,
}

#[test]
fn module_dependencies_point_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let test_only = test_only_files(&files);

    let layer = |m: &str| MODULES.iter().find(|(name, _)| *name == m).map(|(_, l)| *l);
    let mut problems = Vec::new();
    let mut siblings: BTreeMap<String, Vec<Edge>> = BTreeMap::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap();
        let Some(from) = owning_module(rel) else {
            continue;
        };
        if test_only.contains(file) {
            continue;
        }
        let Some(from_layer) = layer(&from) else {
            problems.push(format!(
                "src/{}: module `{from}` has no layer — add it to MODULES in tests/layers.rs",
                rel.display()
            ));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (line, to, code) in crate_paths(&text) {
            let to = MACROS
                .iter()
                .find(|(m, _)| *m == to)
                .map_or(to.clone(), |(_, owner)| owner.to_string());
            if to == from {
                continue;
            }
            let Some(to_layer) = layer(&to) else {
                problems.push(format!(
                    "src/{}:{line}: `crate::{to}` is not a module in MODULES of tests/layers.rs",
                    rel.display()
                ));
                continue;
            };
            let edge = Edge {
                from: from.clone(),
                to: to.clone(),
                file: rel.to_path_buf(),
                line,
                text: code,
            };
            if to_layer.1 < from_layer.1 {
                continue;
            }
            let listed = ALLOWED_SIBLING_EDGES
                .iter()
                .any(|(a, b, _)| *a == from && *b == to);
            if to_layer.1 == from_layer.1 && (from_layer.2 == Siblings::Acyclic || listed) {
                siblings.entry(from.clone()).or_default().push(edge);
                continue;
            }
            problems.push(format!(
                "src/{}:{}: {} ({}) -> {} ({}) points {}: `{}`",
                edge.file.display(),
                edge.line,
                from,
                from_layer.0,
                to,
                to_layer.0,
                if to_layer.1 == from_layer.1 {
                    "sideways between roles"
                } else {
                    "upward"
                },
                edge.text.trim()
            ));
        }
    }
    if let Some(cycle) = find_cycle(&siblings) {
        problems.push(format!("a cycle between sibling modules: {cycle}"));
    }
    assert!(
        problems.is_empty(),
        "layering broken (see ARCHITECTURE.md):\n{}",
        problems.join("\n")
    );
}

#[test]
fn every_module_in_lib_rs_has_a_layer() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for line in lib.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(i) = words.iter().position(|w| *w == "mod") {
            let name = words[i + 1].trim_end_matches(';');
            assert!(
                MODULES.iter().any(|(m, _)| *m == name),
                "src/lib.rs declares `{name}`, which has no line in MODULES of tests/layers.rs"
            );
        }
    }
}

/// The repository stands alone: no source, manifest or doc points at design files
/// that live outside it.
#[test]
fn nothing_refers_to_files_outside_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests"), &mut files);
    files.extend(["Cargo.toml", "README.md", "ARCHITECTURE.md"].map(|f| root.join(f)));
    // Spelled in pieces so this file does not match itself.
    let outside = [["spec", "/"].concat(), ["shared", "/"].concat()];
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let mut words = line.split(|c: char| c.is_whitespace() || "`'\"()[]".contains(c));
            if words.any(|w| outside.iter().any(|o| w.starts_with(o.as_str()))) {
                let rel = file.strip_prefix(root).unwrap();
                found.push(format!("{}:{}: {line}", rel.display(), i + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "references outside the repository:\n{}",
        found.join("\n")
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file under `src/` belongs to; `None` for the crate roots.
fn owning_module(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" | "main.rs" => None,
        f => Some(f.trim_end_matches(".rs").to_string()),
    }
}

/// Files that are whole test modules: declared as `#[cfg(test)] mod x;`.
fn test_only_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for pair in lines.windows(2) {
            let item = pair[1].trim();
            if pair[0].trim() == "#[cfg(test)]" && item.ends_with(';') {
                let Some(name) = item
                    .trim_end_matches(';')
                    .split_whitespace()
                    .last()
                    .filter(|_| item.contains("mod "))
                else {
                    continue;
                };
                let dir = if file.file_name().is_some_and(|n| n == "mod.rs") {
                    file.parent().unwrap().to_path_buf()
                } else {
                    file.with_extension("")
                };
                out.insert(dir.join(format!("{name}.rs")));
                out.insert(dir.join(name).join("mod.rs"));
            }
        }
    }
    out
}

/// Every `crate::<module>` a file names outside comments and `#[cfg(test)]` items:
/// (line number, module, the line's text). `use crate::{a, b::c}` names `a` and `b`;
/// a call of `Store::open` names `schema`.
fn crate_paths(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut in_test_item = false;
    let mut depth = 0isize;
    // An open `use crate::{ …` group: its first line, and its text so far.
    let mut group: Option<(usize, String)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        if in_test_item {
            if depth == 0 && !line.starts_with("#[") && line.ends_with(';') && !line.contains('{') {
                in_test_item = false;
                continue;
            }
            depth += brace_balance(line);
            in_test_item = !(depth <= 0 && line.contains('}'));
            continue;
        }
        if line.starts_with("#[cfg(test)]") {
            in_test_item = true;
            depth = 0;
            continue;
        }
        if line.starts_with("//") {
            continue;
        }
        if let Some((start, mut inner)) = group.take() {
            inner.push_str(raw);
            match group_entries(&inner) {
                Some(names) => out.extend(names.into_iter().map(|n| (start, n, inner.clone()))),
                None => group = Some((start, inner)),
            }
            continue;
        }
        // `Store::open` is defined in `schema` (it applies the full migration list),
        // so calling it depends on `schema` even without naming the module.
        if raw.contains("Store::open(") {
            out.push((i + 1, "schema".to_string(), raw.to_string()));
        }
        let mut rest = raw;
        while let Some(at) = rest.find("crate::") {
            let before = &rest[..at];
            rest = &rest[at + "crate::".len()..];
            if before.ends_with(|c: char| c == '$' || c.is_alphanumeric() || c == '_') {
                continue;
            }
            if let Some(inner) = rest.strip_prefix('{') {
                match group_entries(inner) {
                    Some(names) => out.extend(names.into_iter().map(|n| (i + 1, n, raw.into()))),
                    None => group = Some((i + 1, inner.to_string())),
                }
                break;
            }
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                out.push((i + 1, name, raw.to_string()));
            }
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The first path segment of each entry of a group's text after its `{`
/// (`a, b::c, d::{e, f}}` → a, b, d); `None` while the group is not closed yet.
fn group_entries(inner: &str) -> Option<Vec<String>> {
    let mut entries = vec![String::new()];
    let mut level = 0;
    for c in inner.chars() {
        match c {
            '{' => level += 1,
            '}' if level == 0 => {
                let names = entries
                    .iter()
                    .map(|e| e.trim().chars().take_while(|c| is_ident(*c)).collect())
                    .filter(|n: &String| !n.is_empty() && n != "self")
                    .collect();
                return Some(names);
            }
            '}' => level -= 1,
            ',' if level == 0 => entries.push(String::new()),
            c if level == 0 => entries.last_mut().unwrap().push(c),
            _ => {}
        }
    }
    None
}

/// `{` minus `}` on a line, ignoring those inside string and char literals.
fn brace_balance(line: &str) -> isize {
    let mut n = 0;
    let mut in_str = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_str => {
                chars.next();
            }
            '"' => in_str = !in_str,
            '\'' if !in_str => {
                // Step over a char literal ('{', '\''); a lifetime has no closing quote.
                let ahead: Vec<char> = chars.clone().take(4).collect();
                let len = match ahead.first() {
                    Some('\\') => ahead[1..].iter().position(|c| *c == '\'').map(|p| p + 2),
                    Some(_) if ahead.get(1) == Some(&'\'') => Some(2),
                    _ => None,
                };
                for _ in 0..len.unwrap_or(0) {
                    chars.next();
                }
            }
            '/' if !in_str && chars.peek() == Some(&'/') => break,
            '{' if !in_str => n += 1,
            '}' if !in_str => n -= 1,
            _ => {}
        }
    }
    n
}

/// A cycle among the sibling edges, as `a -> b (file:line) -> a (file:line)`.
fn find_cycle(edges: &BTreeMap<String, Vec<Edge>>) -> Option<String> {
    fn visit<'a>(
        node: &'a str,
        edges: &'a BTreeMap<String, Vec<Edge>>,
        path: &mut Vec<&'a Edge>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<String> {
        for edge in edges.get(node).into_iter().flatten() {
            if let Some(start) = path.iter().position(|e| e.from == edge.to) {
                let mut out = path[start].from.clone();
                for e in path[start..].iter().chain([&edge]) {
                    out.push_str(&format!(
                        " -> {} (src/{}:{})",
                        e.to,
                        e.file.display(),
                        e.line
                    ));
                }
                return Some(out);
            }
            if edge.to == node || done.contains(edge.to.as_str()) {
                continue;
            }
            path.push(edge);
            if let Some(found) = visit(&edge.to, edges, path, done) {
                return Some(found);
            }
            path.pop();
        }
        done.insert(node);
        None
    }
    let mut done = BTreeSet::new();
    for node in edges.keys() {
        if let Some(found) = visit(node, edges, &mut Vec::new(), &mut done) {
            return Some(found);
        }
    }
    None
}
