//! The documentation a newcomer reads: the README is a short front door, every page
//! under docs/ is reachable from it, every relative link lands on a file and heading
//! that exist, and the CLI reference is the one the binary generates today.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::harness::Sandbox;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn docs_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages
}

/// Relative link targets of `text`'s `[label](target)` links (none of http, mailto).
fn relative_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            if !target.contains("://") && !target.starts_with("mailto:") {
                links.push(target.to_string());
            }
            rest = &after[end..];
        }
    }
    links
}

/// The fragments GitHub gives `text`'s headings.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#').trim();
        out.insert(
            heading
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => {
                        Some(c.to_lowercase().next().unwrap())
                    }
                    _ => None,
                })
                .collect(),
        );
    }
    out
}

#[test]
fn the_readme_is_a_front_door_that_reaches_every_docs_page() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move detail to docs/"
    );
    for must in [
        "cargo run --release -- board --demo",
        "cargo test",
        "Prerequisites: the Rust toolchain (1.89 or newer), python3 and node.",
        "missionboard agent add claude",
    ] {
        assert!(
            readme.contains(must) || readme.contains(&must.replace("missionboard ", "mb ")),
            "README.md lacks {must:?}"
        );
    }
    for term in [
        "Mission",
        "Unit",
        "Host",
        "Fleet",
        "Envelope",
        "Ask",
        "Park",
        "Checkpoint",
        "Oracle",
        "Session",
    ] {
        assert!(
            readme.contains(&format!("- **{term}** — ")),
            "the glossary lacks {term}"
        );
    }
    let linked: BTreeSet<String> = relative_links(&readme)
        .into_iter()
        .map(|l| l.split('#').next().unwrap().to_string())
        .collect();
    let unreached: Vec<String> = docs_pages()
        .iter()
        .map(|p| format!("docs/{}", p.file_name().unwrap().to_string_lossy()))
        .filter(|p| !linked.contains(p))
        .collect();
    assert!(
        unreached.is_empty(),
        "pages README.md does not link: {unreached:?}"
    );
}

#[test]
fn every_relative_link_in_the_readme_and_docs_lands_on_a_file_and_heading() {
    let mut files = vec![root().join("README.md")];
    files.extend(docs_pages());
    let mut broken = Vec::new();
    for file in &files {
        let text = read(file);
        let dir = file.parent().unwrap();
        for link in relative_links(&text) {
            let (path, fragment) = match link.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (link.as_str(), None),
            };
            let target = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            let shown = format!("{}: {link}", file.strip_prefix(root()).unwrap().display());
            if !target.exists() {
                broken.push(format!("{shown} (no such file)"));
            } else if let Some(fragment) = fragment
                && !anchors(&read(&target)).contains(fragment)
            {
                broken.push(format!("{shown} (no such heading)"));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_checked_in_cli_reference_is_the_one_the_binary_generates() {
    let sb = Sandbox::new();
    let generated = sb.run(&["man", "--markdown"]).ok().stdout;
    assert!(
        generated.contains("\n## missionboard mission fire\n")
            && generated.contains("Usage: missionboard mission fire [OPTIONS] <AGENT> <INTENT>..."),
        "{generated}"
    );
    assert!(
        !generated.contains("stub-agent") && !generated.contains("mcp-bridge"),
        "hidden commands stay out of the reference"
    );
    let checked_in = read(&root().join("docs/cli.md"));
    assert!(
        checked_in == generated,
        "docs/cli.md is stale: regenerate it with `cargo run --quiet -- man --markdown > docs/cli.md`"
    );
    assert!(!sb.home.exists(), "man --markdown touches no home");
}

/// The agents page's catalogue table is the one `agent catalogue` prints from the
/// shipped catalogue, so the docs cannot tell another story than the binary runs.
#[test]
fn the_catalogue_table_in_the_agents_page_is_the_one_the_binary_prints() {
    let sb = Sandbox::new();
    let printed = sb.run(&["agent", "catalogue"]).ok().stdout;
    assert!(
        printed
            .starts_with("| agent | command | install | what missionboard sets | known limits |\n")
            && printed.lines().filter(|l| l.starts_with("| `")).count() >= 6,
        "{printed}"
    );
    assert!(
        printed.contains("| `codex` | `codex-acp -c approval_policy=\"untrusted\" -c sandbox_mode=\"danger-full-access\"` |"),
        "{printed}"
    );
    let page = read(&root().join("docs/agents.md"));
    let begin = "<!-- generated: `missionboard agent catalogue` prints this table; tests/cli/docs.rs holds it current -->\n";
    let table = page
        .split_once(begin)
        .and_then(|(_, rest)| rest.split_once("<!-- end of generated table -->"))
        .map(|(table, _)| table)
        .expect("docs/agents.md marks its generated catalogue table");
    assert!(
        table == printed,
        "docs/agents.md's catalogue table is stale: replace it with the output of `cargo run --quiet -- agent catalogue`"
    );
    assert!(!sb.home.exists(), "agent catalogue touches no home");
}
