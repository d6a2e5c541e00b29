//! The crate's shape, checked on its source text. Three rules, each failing with
//! the file, the line and what it names:
//! - modules depend one way: every path a file in `src/` names (`crate::…`, or
//!   `super::…` leaving its module) points to a lower layer, or to a sibling in a
//!   layer whose siblings may depend on each other without a cycle, or along an edge
//!   listed with its reason; a surface names no role (it calls a verb in `ops`)
//!   except along a listed edge, where it is that role's entry point;
//! - inside a module, its files import one another without a circle;
//! - only the listed modules name the crates that own a boundary (the ACP wire, the
//!   databases, the kernel's sandbox).
//!
//! Unit tests (`#[cfg(test)]` items) are exempt: they exercise a module inside the
//! assembled crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// How a layer treats edges between its own modules.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Siblings {
    /// Modules of the layer may use each other, as long as no cycle forms.
    Acyclic,
    /// Only the edges in [`LISTED_EDGES`].
    Listed,
}

/// (layer, rank, sibling rule): an edge may only point to a lower rank.
const LEAVES: (&str, u8, Siblings) = ("leaves", 0, Siblings::Acyclic);
const STORAGE: (&str, u8, Siblings) = ("storage", 1, Siblings::Acyclic);
const DOMAIN: (&str, u8, Siblings) = ("domain", 2, Siblings::Acyclic);
const PROTOCOL: (&str, u8, Siblings) = ("protocol adapters", 3, Siblings::Acyclic);
const ASSEMBLY: (&str, u8, Siblings) = ("assembly", 4, Siblings::Acyclic);
const ROLES: (&str, u8, Siblings) = ("roles", 5, Siblings::Listed);
const OPERATIONS: (&str, u8, Siblings) = ("operations", 6, Siblings::Acyclic);
const SURFACES: (&str, u8, Siblings) = ("surfaces", 7, Siblings::Listed);

/// The layers, lowest first.
const LAYERS: &[Layer] = &[
    LEAVES, STORAGE, DOMAIN, PROTOCOL, ASSEMBLY, ROLES, OPERATIONS, SURFACES,
];

/// Every top-level module of the crate, one line each.
const MODULES: &[(&str, (&str, u8, Siblings))] = &[
    // leaves: plain helpers that know nothing of missions
    ("clock", LEAVES),
    ("duration", LEAVES),
    ("size", LEAVES),
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
    ("devices", DOMAIN),
    ("sched", DOMAIN),
    // protocol adapters: ACP to units, the MCP mission tools, the model client
    ("acp_client", PROTOCOL),
    ("mission_mcp", PROTOCOL),
    ("model", PROTOCOL),
    ("notify", PROTOCOL),
    // assembly: the one place that names every table-owning module; every table is
    // owned below it (domain services, the notification outbox), none by a role
    ("schema", ASSEMBLY),
    // roles: the fleet that hosts units, and the agents and reviewers built on them
    ("fleet", ROLES),
    ("oracle", ROLES),
    ("planner", ROLES),
    ("stub", ROLES),
    // operations: the operator's verbs, one file each, that every surface calls
    ("ops", OPERATIONS),
    // `missionboard host`: the long-lived host that runs the queue over the fleet
    ("daemon", OPERATIONS),
    // surfaces: what an operator runs
    ("board", SURFACES),
    ("bench", SURFACES),
    ("cli", SURFACES),
    ("acp_server", SURFACES),
    ("web", SURFACES),
];

/// The only edges between siblings of a [`Siblings::Listed`] layer, and the only
/// ones from a surface to a role (where the surface is that role's entry point),
/// and why each is one way.
const LISTED_EDGES: &[(&str, &str, &str)] = &[
    (
        "oracle",
        "fleet",
        "the oracle reviews the questions a fleet hosts; the fleet never knows it",
    ),
    (
        "cli",
        "board",
        "`missionboard board` opens the board; the board never parses arguments",
    ),
    (
        "cli",
        "bench",
        "`missionboard bench` runs the benchmarks; they never parse arguments",
    ),
    (
        "cli",
        "acp_server",
        "`missionboard acp` serves an editor; the server never parses arguments",
    ),
    (
        "cli",
        "web",
        "`missionboard web` serves the page; the page never parses arguments",
    ),
    (
        "cli",
        "planner",
        "`missionboard agent` runs the native agent (and takes its defaults as flags); the \
         agent never parses the command line",
    ),
    (
        "cli",
        "oracle",
        "`missionboard oracle eval` is the oracle's own entry point: it runs the review over a \
         corpus; the oracle never parses the command line",
    ),
    (
        "cli",
        "stub",
        "`missionboard stub-agent` runs the scripted agent; the stub never parses the command \
         line",
    ),
    (
        "acp_server",
        "planner",
        "an editor's chat turns run on the native agent's model loop; the agent never knows \
         the editor",
    ),
    (
        "bench",
        "fleet",
        "the bench times the fleet itself (dispatch, the mission tools); the fleet never \
         measures itself",
    ),
    (
        "bench",
        "board",
        "the bench times the board's snapshot and drawing; the board never measures itself",
    ),
    (
        "bench",
        "web",
        "the bench times the page's event stream and its answer path; the page never \
         measures itself",
    ),
];

/// Crates that own a boundary, and the only modules that may name them.
const BOUNDARY_CRATES: &[(&str, &[&str], &str)] = &[
    (
        "agent_client_protocol",
        &["acp_client", "acp_server", "planner", "stub"],
        "the ACP wire: the host's client to units, the editor's server, and the two \
         agents that ship in the binary",
    ),
    (
        "rusqlite",
        &["store", "bench"],
        "SQLite: the store, and the bench's bare reader that the board is measured against",
    ),
    (
        "tokio_postgres",
        &["store", "bench"],
        "PostgreSQL: the store, and the bench's bare reader that the board is measured against",
    ),
    (
        "landlock",
        &["confine"],
        "the kernel sandbox, applied in one place",
    ),
];

/// Crate-root macros (`#[macro_export]`) and the module that defines them.
const MACROS: &[(&str, &str)] = &[("row", "table"), ("sql_params", "store")];

type Layer = (&'static str, u8, Siblings);

fn layer_of(module: &str) -> Option<Layer> {
    MODULES
        .iter()
        .find(|(name, _)| *name == module)
        .map(|(_, l)| *l)
}

struct Edge {
    from: String,
    to: String,
    file: PathBuf,
    line: usize,
    text: String,
}

fn crate_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn module_dependencies_point_one_way() {
    let problems = layering_problems(&crate_src());
    assert!(
        problems.is_empty(),
        "layering broken (see ARCHITECTURE.md):\n{}",
        problems.join("\n")
    );
}

/// `ops` stands between the surfaces and the roles: re-exporting a role's (or a
/// domain service's) item from it would let a surface name that item through `ops`,
/// a tunnel the layering rule, which reads paths, cannot see.
#[test]
fn ops_re_exports_no_item_of_another_module() {
    let problems = re_export_problems(&crate_src());
    assert!(
        problems.is_empty(),
        "re-exports from ops (a surface calls a verb, or imports the item from its own \
         module where the layering allows):\n{}",
        problems.join("\n")
    );
}

/// A listed edge is an exception someone needs: one no file takes any more goes.
#[test]
fn every_listed_edge_is_taken() {
    let src = crate_src();
    let mut taken = BTreeSet::new();
    for (rel, text) in live_files(&src) {
        let (Some(from), here) = (owning_module(&rel), module_path(&rel)) else {
            continue;
        };
        for named in named_paths(&text) {
            if let Some(to) = named.resolve(&here).into_iter().next() {
                taken.insert((from.clone(), to));
            }
        }
    }
    let unused: Vec<String> = LISTED_EDGES
        .iter()
        .filter(|(a, b, _)| !taken.contains(&(a.to_string(), b.to_string())))
        .map(|(a, b, _)| format!("{a} -> {b}"))
        .collect();
    assert!(
        unused.is_empty(),
        "listed edges no file takes (remove them from LISTED_EDGES):\n{}",
        unused.join("\n")
    );
}

#[test]
fn no_import_circle_inside_a_module() {
    let problems = circles_inside_modules(&crate_src());
    assert!(
        problems.is_empty(),
        "import circles inside a module (move the shared names to one side, see \
         ARCHITECTURE.md):\n{}",
        problems.join("\n")
    );
}

#[test]
fn boundary_crates_are_named_only_where_listed() {
    let problems = boundary_crate_problems(&crate_src());
    assert!(
        problems.is_empty(),
        "a boundary crate named outside its modules (see BOUNDARY_CRATES in \
         tests/layers.rs):\n{}",
        problems.join("\n")
    );
}

/// ARCHITECTURE.md's layers table has a row per layer, naming each of its modules.
#[test]
fn architecture_md_lists_every_layer_and_module() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    let mut missing = Vec::new();
    for layer in LAYERS {
        let Some(row) = doc
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", layer.0)))
        else {
            missing.push(format!("no row `| {} | …` in the layers table", layer.0));
            continue;
        };
        for (module, _) in MODULES.iter().filter(|(_, l)| l == layer) {
            if !row.contains(&format!("`{module}`")) {
                missing.push(format!("the {} row does not name `{module}`", layer.0));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md is behind tests/layers.rs:\n{}",
        missing.join("\n")
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
    for page in std::fs::read_dir(root.join("docs")).unwrap() {
        files.push(page.unwrap().path());
    }
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

/// A scratch `src/` holding the given files, for proving each rule fails.
fn synthetic_src(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a scratch directory under the system temp dir");
    for (rel, text) in files {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn an_upward_edge_fails_with_file_line_and_edge() {
    let src = synthetic_src(&[(
        "store/cache.rs",
        "use std::fmt;\n\npub fn f() -> crate::board::Model {\n    todo!()\n}\n",
    )]);
    assert_eq!(
        layering_problems(src.path()),
        [
            "src/store/cache.rs:3: store (storage) -> board (surfaces) points upward: \
          `pub fn f() -> crate::board::Model {`"
        ]
    );
}

#[test]
fn an_unlisted_surface_edge_fails_and_a_listed_one_passes() {
    let src = synthetic_src(&[
        (
            "cli/mod.rs",
            "pub fn run() {\n    crate::board::run();\n}\n",
        ),
        ("board/mod.rs", "\nuse crate::{cli::out, store};\n"),
    ]);
    assert_eq!(
        layering_problems(src.path()),
        [
            "src/board/mod.rs:2: board (surfaces) -> cli (surfaces) points sideways between \
          surfaces: `use crate::{cli::out, store};`"
        ]
    );
}

#[test]
fn a_surface_naming_a_role_fails_unless_listed() {
    let src = synthetic_src(&[
        (
            "cli/mod.rs",
            "pub fn agent() {\n    crate::planner::run_agent();\n}\n",
        ),
        (
            "board/effects.rs",
            "use crate::ops::host::Fleet;\nuse crate::fleet::sweep;\n\
             #[cfg(test)]\nmod tests {\n    use crate::stub::BUILTIN_NAMES;\n}\n",
        ),
    ]);
    assert_eq!(
        layering_problems(src.path()),
        [
            "src/board/effects.rs:2: board (surfaces) -> fleet (roles) names a role from a \
          surface (call a verb in ops, or list the edge): `use crate::fleet::sweep;`"
        ]
    );
}

#[test]
fn a_circle_between_the_files_of_a_module_fails_with_each_edge() {
    let src = synthetic_src(&[
        (
            "envelope/mod.rs",
            "mod decode;\nmod policy;\nmod sandbox;\n",
        ),
        ("envelope/decode.rs", "use super::sandbox::Decl;\n"),
        (
            "envelope/policy.rs",
            "// super::decode in a comment is no edge\nuse super::decode;\n",
        ),
        (
            "envelope/sandbox/mod.rs",
            "use crate::envelope::{\n    glob,\n    policy::{self, quote},\n};\n",
        ),
        // an edge to the module's root is no edge between its files
        ("envelope/glob.rs", "use super::Envelope;\n"),
    ]);
    assert_eq!(
        circles_inside_modules(src.path()),
        [
            "module `envelope`: decode -> sandbox (src/envelope/decode.rs:1: \
          `use super::sandbox::Decl;`) -> policy (src/envelope/sandbox/mod.rs:1: \
          `use crate::envelope::{ glob, policy::{self, quote}, };`) -> decode \
          (src/envelope/policy.rs:2: `use super::decode;`)"
        ]
    );
}

#[test]
fn a_boundary_crate_outside_its_modules_fails_with_file_line_and_crate() {
    let src = synthetic_src(&[
        ("store/mod.rs", "use rusqlite::Connection;\n"),
        (
            "board/snapshot.rs",
            "fn f() {}\n\nfn open() -> rusqlite::Connection {\n    todo!()\n}\n\
             #[cfg(test)]\nmod tests {\n    use tokio_postgres::Client;\n}\n",
        ),
    ]);
    assert_eq!(
        boundary_crate_problems(src.path()),
        [
            "src/board/snapshot.rs:3: board names `rusqlite`, which only store, bench may \
          name: `fn open() -> rusqlite::Connection {`"
        ]
    );
}

#[test]
fn a_re_export_of_a_role_item_from_ops_fails_with_file_line_and_item() {
    let src = synthetic_src(&[
        (
            "ops/host.rs",
            "use crate::fleet::Fleet;\n\n/// The fleet.\npub use crate::fleet::Fleet;\n\
             pub use super::answer::Afterwards;\n",
        ),
        (
            "ops/show.rs",
            "pub use crate::{\n    oracle::contract::Outcome,\n};\n",
        ),
        ("board/mod.rs", "pub use crate::fleet::Fleet;\n"),
    ]);
    assert_eq!(
        re_export_problems(src.path()),
        [
            "src/ops/host.rs:4: ops re-exports `crate::fleet::Fleet` of fleet (roles): \
             `pub use crate::fleet::Fleet;`",
            "src/ops/show.rs:1: ops re-exports `crate::oracle::contract::Outcome` of oracle \
             (roles): `pub use crate::{ oracle::contract::Outcome, };`",
        ]
    );
}

/// Every `pub use` in `src/ops` that names an item of another module, one line each
/// (re-exports between the files of `ops` itself are its own business).
fn re_export_problems(src: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for (rel, text) in live_files(src) {
        if owning_module(&rel).as_deref() != Some("ops") {
            continue;
        }
        let here = module_path(&rel);
        let exported: BTreeSet<usize> = live_lines(&text)
            .into_iter()
            .filter(|(_, code)| code.starts_with("pub use ") || code.starts_with("pub(crate) use "))
            .map(|(line, _)| line)
            .collect();
        for named in named_paths(&text) {
            if !exported.contains(&named.line) {
                continue;
            }
            let path = named.resolve(&here);
            let Some(to) = path.first().filter(|m| *m != "ops") else {
                continue;
            };
            let layer = layer_of(to).map_or("unlisted", |l| l.0);
            problems.push(format!(
                "src/{}:{}: ops re-exports `crate::{}` of {to} ({layer}): `{}`",
                rel.display(),
                named.line,
                path.join("::"),
                named.text
            ));
        }
    }
    problems
}

/// Every edge between top-level modules that breaks the layering, one line each.
fn layering_problems(src: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let mut siblings: BTreeMap<String, Vec<Edge>> = BTreeMap::new();
    for (rel, text) in live_files(src) {
        let Some(from) = owning_module(&rel) else {
            continue;
        };
        let Some(from_layer) = layer_of(&from) else {
            problems.push(format!(
                "src/{}: module `{from}` has no layer — add it to MODULES in tests/layers.rs",
                rel.display()
            ));
            continue;
        };
        let here = module_path(&rel);
        for named in named_paths(&text) {
            let Some(to) = named.resolve(&here).into_iter().next() else {
                continue;
            };
            let to = MACROS
                .iter()
                .find(|(m, _)| *m == to)
                .map_or(to.clone(), |(_, owner)| owner.to_string());
            if to == from {
                continue;
            }
            let Some(to_layer) = layer_of(&to) else {
                problems.push(format!(
                    "src/{}:{}: `crate::{to}` is not a module in MODULES of tests/layers.rs",
                    rel.display(),
                    named.line
                ));
                continue;
            };
            let listed = LISTED_EDGES.iter().any(|(a, b, _)| *a == from && *b == to);
            if from_layer == SURFACES && to_layer == ROLES && !listed {
                problems.push(format!(
                    "src/{}:{}: {from} (surfaces) -> {to} (roles) names a role from a surface \
                     (call a verb in ops, or list the edge): `{}`",
                    rel.display(),
                    named.line,
                    named.text
                ));
                continue;
            }
            if to_layer.1 < from_layer.1 {
                continue;
            }
            let edge = Edge {
                from: from.clone(),
                to: to.clone(),
                file: rel.clone(),
                line: named.line,
                text: named.text.clone(),
            };
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
                    format!("sideways between {}", from_layer.0)
                } else {
                    "upward".to_string()
                },
                edge.text
            ));
        }
    }
    if let Some(cycle) = find_cycle(&siblings) {
        problems.push(format!("a cycle between sibling modules: {cycle}"));
    }
    problems
}

/// One circle per module whose files import one another in a ring. A module's files
/// are the direct children of its root (`store/sql.rs`, or the whole of
/// `board/view/`); the root itself (`store.rs`, `mission/mod.rs`) declares and
/// gathers them, so edges to and from it are not part of the graph.
fn circles_inside_modules(src: &Path) -> Vec<String> {
    let files = live_files(src);
    let mut children: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, _) in &files {
        if let [top, child, ..] = module_path(rel).as_slice() {
            children
                .entry(top.clone())
                .or_default()
                .insert(child.clone());
        }
    }
    let mut edges: BTreeMap<String, BTreeMap<String, Vec<Edge>>> = BTreeMap::new();
    for (rel, text) in &files {
        let here = module_path(rel);
        let [top, from, ..] = here.as_slice() else {
            continue;
        };
        for named in named_paths(text) {
            let target = named.resolve(&here);
            let [to_top, to, ..] = target.as_slice() else {
                continue;
            };
            if to_top != top || to == from || !children[top].contains(to) {
                continue;
            }
            let graph = edges.entry(top.clone()).or_default();
            let out = graph.entry(from.clone()).or_default();
            if out.iter().any(|e| &e.to == to) {
                continue;
            }
            out.push(Edge {
                from: from.clone(),
                to: to.clone(),
                file: rel.clone(),
                line: named.line,
                text: named.text.clone(),
            });
        }
    }
    edges
        .iter()
        .filter_map(|(module, graph)| {
            find_cycle(graph).map(|cycle| format!("module `{module}`: {cycle}"))
        })
        .collect()
}

/// Every line outside tests that names a boundary crate from a module not listed
/// for it.
fn boundary_crate_problems(src: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for (rel, text) in live_files(src) {
        let Some(module) = owning_module(&rel) else {
            continue;
        };
        for (line, code) in live_lines(&text) {
            for (name, allowed, _) in BOUNDARY_CRATES {
                if allowed.contains(&module.as_str()) || !names_crate(&code, name) {
                    continue;
                }
                problems.push(format!(
                    "src/{}:{line}: {module} names `{name}`, which only {} may name: `{code}`",
                    rel.display(),
                    allowed.join(", ")
                ));
            }
        }
    }
    problems
}

/// Whether code uses `name` as a path (`name::x`, `use name;`), not merely a word
/// that contains it.
fn names_crate(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = &code[at + name.len()..];
        !before.is_some_and(|c| is_ident(c) || c == ':')
            && (after.starts_with("::")
                || (code[..at].trim_end().ends_with("use") && after.starts_with(';')))
    })
}

/// Every source file under `src` that is not a whole test module, with its text.
fn live_files(src: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let test_only = test_only_files(&files);
    files
        .into_iter()
        .filter(|f| !test_only.contains(f))
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            (f.strip_prefix(src).unwrap().to_path_buf(), text)
        })
        .collect()
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

/// The module path of a file under `src/`: `store/sql.rs` → `store::sql`,
/// `board/view/mod.rs` → `board::view`, `store.rs` → `store`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut path: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if path.last().is_some_and(|l| l == "mod") {
        path.pop();
    }
    path
}

/// A path a file names, as written (`super::sandbox::decode`), with its line.
struct NamedPath {
    line: usize,
    text: String,
    segments: Vec<String>,
}

impl NamedPath {
    /// The path from the crate root, seen from the file at module path `here`.
    fn resolve(&self, here: &[String]) -> Vec<String> {
        let mut base = here.to_vec();
        let mut rest = self.segments.iter().peekable();
        match rest.peek().map(|s| s.as_str()) {
            Some("crate") => {
                base.clear();
                rest.next();
            }
            Some("self") => {
                rest.next();
            }
            _ => {}
        }
        while rest.peek().is_some_and(|s| *s == "super") {
            base.pop();
            rest.next();
        }
        base.extend(rest.cloned());
        base
    }
}

/// Every `crate::`, `super::` and `self::` path a file names outside comments and
/// `#[cfg(test)]` items; `use crate::{a, b::{c, d}}` names `a`, `b::c` and `b::d`.
/// A call of `Store::open` names `schema`, which defines it (it applies the full
/// migration list).
fn named_paths(text: &str) -> Vec<NamedPath> {
    let mut out = Vec::new();
    for (line, code) in live_lines(text) {
        if code.contains("Store::open(") {
            out.push(NamedPath {
                line,
                text: code.clone(),
                segments: vec!["crate".into(), "schema".into()],
            });
        }
        let chars: Vec<char> = code.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let starts_path = ["crate::", "super::", "self::"]
                .iter()
                .any(|root| chars[i..].starts_with(&root.chars().collect::<Vec<_>>()));
            let joined = i > 0 && (is_ident(chars[i - 1]) || "$:".contains(chars[i - 1]));
            if !starts_path || joined {
                i += 1;
                continue;
            }
            let mut paths = Vec::new();
            path_tree(&chars, &mut i, &[], &mut paths);
            out.extend(paths.into_iter().map(|segments| NamedPath {
                line,
                text: code.clone(),
                segments,
            }));
        }
    }
    out
}

/// Reads one path or `{…}` group from `s[*i..]` under `prefix`, pushing every full
/// path it names.
fn path_tree(s: &[char], i: &mut usize, prefix: &[String], out: &mut Vec<Vec<String>>) {
    while s.get(*i).is_some_and(|c| c.is_whitespace()) {
        *i += 1;
    }
    if s.get(*i) == Some(&'{') {
        *i += 1;
        loop {
            while s.get(*i).is_some_and(|c| c.is_whitespace() || *c == ',') {
                *i += 1;
            }
            match s.get(*i) {
                None => return,
                Some('}') => {
                    *i += 1;
                    return;
                }
                _ => {
                    path_tree(s, i, prefix, out);
                    // Step over what may follow an entry (` as name`, `*`).
                    while s.get(*i).is_some_and(|c| *c != ',' && *c != '}') {
                        *i += 1;
                    }
                }
            }
        }
    }
    let ident: String = s[*i..].iter().take_while(|c| is_ident(**c)).collect();
    *i += ident.chars().count();
    if ident.is_empty() || (ident == "self" && !prefix.is_empty()) {
        out.push(prefix.to_vec());
        return;
    }
    let mut path = prefix.to_vec();
    path.push(ident);
    if s[*i..].starts_with(&[':', ':']) {
        *i += 2;
        path_tree(s, i, &path, out);
    } else {
        out.push(path);
    }
}

/// The code of a file outside comments and `#[cfg(test)]` items, trimmed, one entry
/// per line, except that a `…::{` group spread over lines is joined onto its first.
fn live_lines(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_test_item = false;
    let mut depth = 0isize;
    // An open `…::{` group: its first line, its text so far, and its open braces.
    let mut group: Option<(usize, String, isize)> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
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
        if let Some((start, mut joined, open)) = group.take() {
            joined.push(' ');
            joined.push_str(line);
            let open = open + brace_balance(line);
            if open > 0 {
                group = Some((start, joined, open));
            } else {
                out.push((start, joined));
            }
            continue;
        }
        let open = line.find("::{").map_or(0, |at| brace_balance(&line[at..]));
        if open > 0 {
            group = Some((i + 1, line.to_string(), open));
        } else {
            out.push((i + 1, line.to_string()));
        }
    }
    out.extend(group.map(|(start, joined, _)| (start, joined)));
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
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

/// A cycle in a graph of edges, each edge shown with its file, line and code.
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
                        " -> {} (src/{}:{}: `{}`)",
                        e.to,
                        e.file.display(),
                        e.line,
                        e.text
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
