//! The agent catalogue: the agents missionboard knows how to run, shipped in the
//! binary as one data file (`presets/catalogue.toml`, an agents.toml of its own).
//! `init` seeds it into agents.toml; `agent add <name>` copies one section.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::Agent;

/// The catalogue's text, as shipped.
pub const TEXT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/presets/catalogue.toml"
));

/// What a catalogue entry names as its source.
pub const SOURCE: &str = "<built-in catalogue>";

/// Every catalogue entry, sorted by name.
pub fn all() -> &'static [Agent] {
    static PARSED: OnceLock<Vec<Agent>> = OnceLock::new();
    PARSED.get_or_init(|| {
        // The shipped file is checked by this module's tests; a broken build of it
        // is a programming error, not an operator's.
        super::parse(Path::new(SOURCE), TEXT).expect("presets/catalogue.toml parses")
    })
}

/// One entry by name.
pub fn get(name: &str) -> Option<&'static Agent> {
    all().iter().find(|a| a.name == name)
}

/// The names, sorted.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|a| a.name.as_str()).collect()
}

/// The catalogue as the Markdown table docs/agents.md carries (a test holds the two
/// equal): each external agent's command line, install line, what missionboard sets for
/// its unit — every fact read from its entry, none retold — and its known limits.
pub fn markdown_table() -> String {
    let code = |s: &str| format!("`{}`", s.replace('|', "\\|"));
    let codes = |items: &mut dyn Iterator<Item = String>| {
        items.map(|s| code(&s)).collect::<Vec<_>>().join(", ")
    };
    let mut out = String::from(
        "| agent | command | install | what missionboard sets | known limits |\n|---|---|---|---|---|\n",
    );
    for a in all().iter().filter(|a| a.command != super::SELF_COMMAND) {
        let mut sets = Vec::new();
        if !a.env.is_empty() {
            sets.push(format!(
                "env {}",
                codes(&mut a.env.iter().map(|(k, v)| format!("{k}={v}")))
            ));
        }
        if !a.session_meta.is_empty() {
            let mut paths = Vec::new();
            meta_paths("", &a.session_meta, &mut paths);
            sets.push(format!(
                "`session/new` `_meta` {}",
                codes(&mut paths.into_iter())
            ));
        }
        if let Some(mode) = &a.mode {
            sets.push(format!("session mode {}", code(mode)));
        }
        let state: Vec<String> = a
            .state_dirs
            .iter()
            .chain(a.state_files.keys())
            .cloned()
            .collect();
        if !state.is_empty() {
            sets.push(format!("state {}", codes(&mut state.into_iter())));
        }
        if !a.passthrough.is_empty() {
            sets.push(format!(
                "passed through {}",
                codes(&mut a.passthrough.iter().cloned())
            ));
        }
        if let Some(reader) = &a.endpoint_config {
            sets.push(format!(
                "endpoint read from its own config ({})",
                code(reader)
            ));
        }
        if !a.endpoints.is_empty() {
            sets.push(format!(
                "endpoints {}",
                codes(&mut a.endpoints.iter().cloned())
            ));
        }
        if !a.ports.is_empty() {
            sets.push(format!(
                "own ports {}",
                codes(&mut a.ports.iter().map(u16::to_string))
            ));
        }
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            a.name,
            code(&a.command_line()),
            a.about.install.as_deref().map_or("—".to_string(), code),
            sets.join("; "),
            a.about.limits.as_deref().unwrap_or("—").replace('|', "\\|"),
        ));
    }
    out
}

/// The dotted paths of `meta`'s leaves.
fn meta_paths(
    prefix: &str,
    meta: &serde_json::Map<String, serde_json::Value>,
    out: &mut Vec<String>,
) {
    for (k, v) in meta {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        match v {
            serde_json::Value::Object(inner) => meta_paths(&path, inner, out),
            _ => out.push(path),
        }
    }
}

/// The text of one entry as it stands in the catalogue: its `[agents.<name>]` table
/// and every sub-table of it, comments included, ready to append to an agents.toml.
pub fn section(name: &str) -> Option<String> {
    get(name)?;
    Some(declaration_text(TEXT, name))
}

/// The lines of an agents.toml `text` that declare agent `name`: its `[agents.<name>]`
/// table and every sub-table, each with the comment lines just above its header, as
/// runs of line numbers (a file may split one agent's tables apart). Blank lines
/// inside a run are kept; blank lines around it are not.
pub fn declaration_lines(text: &str, name: &str) -> Vec<std::ops::Range<usize>> {
    let head = format!("[agents.{name}]");
    let sub = format!("[agents.{name}.");
    let is_header = |l: &str| l.trim_start().starts_with('[');
    let ours = |l: &str| {
        let t = l.trim_start();
        t.starts_with(&head) || t.starts_with(&sub)
    };
    let lines: Vec<&str> = text.lines().collect();
    // Whose each line is: this agent's (true), another table's (false), or nobody's
    // (a blank line).
    let mut in_ours = false;
    let owner: Vec<Option<bool>> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let t = line.trim_start();
            if t.is_empty() {
                None
            } else if is_header(t) {
                in_ours = ours(t);
                Some(in_ours)
            } else if t.starts_with('#') {
                // A comment block directly above a header belongs to that header.
                match lines[i..].iter().find(|l| !l.trim_start().starts_with('#')) {
                    Some(next) if is_header(next) => Some(ours(next)),
                    _ => Some(in_ours),
                }
            } else {
                Some(in_ours)
            }
        })
        .collect();
    let mut runs = Vec::new();
    let mut run: Option<(usize, usize)> = None;
    for (i, o) in owner.iter().enumerate() {
        match o {
            Some(true) => run = Some((run.map_or(i, |(start, _)| start), i)),
            Some(false) => {
                if let Some((start, last)) = run.take() {
                    runs.push(start..last + 1);
                }
            }
            None => {}
        }
    }
    if let Some((start, last)) = run {
        runs.push(start..last + 1);
    }
    runs
}

/// The text of [`declaration_lines`], runs joined, ending in one newline (empty when
/// `text` does not declare `name` as tables).
pub fn declaration_text(text: &str, name: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let runs = declaration_lines(text, name);
    if runs.is_empty() {
        return String::new();
    }
    let kept: Vec<&str> = runs
        .into_iter()
        .flat_map(|r| lines[r].iter().copied())
        .collect();
    kept.join("\n") + "\n"
}

/// Where an installed program lives and which version it is: the `version` of the
/// package.json above its real path (npm, pnpm, nvm installs), else the first line of
/// `<program> <version_args>` within a few seconds.
pub fn installed_version(agent: &Agent) -> Option<(PathBuf, Option<String>)> {
    let program = crate::paths::locate_program(&agent.program().to_string_lossy(), None)?;
    let real = std::fs::canonicalize(&program).unwrap_or_else(|_| program.clone());
    let version =
        package_version(&real).or_else(|| ask_version(&program, &agent.about.version_args));
    Some((program, version))
}

/// The `version` of the nearest package.json above `path` that has a name.
fn package_version(path: &Path) -> Option<String> {
    for dir in path.ancestors().skip(1) {
        let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
            continue;
        };
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
            return None;
        };
        if json.get("name").is_some() {
            return json
                .get("version")
                .and_then(|v| v.as_str())
                .map(crate::text::one_line);
        }
    }
    None
}

/// How long a program gets to print its version.
const VERSION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

fn ask_version(program: &Path, args: &[String]) -> Option<String> {
    use std::io::Read;
    if args.is_empty() {
        return None;
    }
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let status = crate::clock::poll_until_blocking(
        VERSION_TIMEOUT,
        std::time::Duration::from_millis(20),
        || child.try_wait().ok().flatten(),
    );
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    let mut out = String::new();
    child.stdout.take()?.read_to_string(&mut out).ok()?;
    out.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(crate::text::one_line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_catalogue_parses_and_holds_every_agent() {
        assert_eq!(
            names(),
            [
                "agent-planner",
                "claude",
                "cline",
                "codex",
                "demo",
                "gemini",
                "goose",
                "kilo",
                "opencode",
                "qwen",
                "stub"
            ]
        );
        let claude = get("claude").unwrap();
        assert_eq!(claude.env["CLAUDE_CODE_TMPDIR"], "{tmp}");
        assert!(claude.session_meta.contains_key("claudeCode"));
        let opencode = get("opencode").unwrap();
        assert_eq!(opencode.args, ["acp", "--port", "{own_port}"]);
        let unit = opencode.for_unit().unwrap();
        let port = unit.ports[0];
        assert_eq!(unit.args, ["acp", "--port", &port.to_string()]);
        assert_eq!(unit.ports, [port], "the picked port is the unit's own");
    }

    #[test]
    fn a_section_is_a_whole_entry_that_parses_alone() {
        for name in names() {
            let text = section(name).unwrap();
            let parsed = super::super::parse(Path::new("x"), &text).unwrap();
            assert_eq!(parsed.len(), 1, "{name}: {text}");
            let mut want = get(name).unwrap().clone();
            want.source = PathBuf::from("x");
            assert_eq!(parsed[0], want, "{name}: {text}");
        }
        assert!(section("nope").is_none());
    }

    #[test]
    fn a_declaration_is_found_whole_among_other_agents_with_its_comments() {
        let text = "# file notes\n\n# about a\n[agents.a]\ncommand = \"x\"\n# inside a\nargs = []\n\n# about b\n[agents.b]\ncommand = \"y\"\n\n[agents.ab]\ncommand = \"z\"\n\n# a's env\n[agents.a.env]\nK = \"v\"\n";
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(declaration_lines(text, "a"), [2..7, 15..18]);
        assert_eq!(declaration_lines(text, "b").len(), 1);
        assert_eq!(declaration_lines(text, "ab").len(), 1);
        assert_eq!(
            declaration_text(text, "a"),
            "# about a\n[agents.a]\ncommand = \"x\"\n# inside a\nargs = []\n# a's env\n[agents.a.env]\nK = \"v\"\n"
        );
        assert_eq!(declaration_lines(text, "b").first(), Some(&(8..11)));
        assert_eq!(lines[12], "[agents.ab]");
        assert_eq!(declaration_lines(text, "ab").first(), Some(&(12..14)));
        assert!(declaration_lines(text, "c").is_empty());
        assert_eq!(declaration_text(text, "c"), "");
    }

    #[test]
    fn variables_expand_with_their_defaults() {
        let env = |n: &str| (n == "SET").then(|| "/custom".to_string());
        assert_eq!(
            super::super::expand_vars("${SET:-~/.x}/y", env),
            "/custom/y"
        );
        assert_eq!(super::super::expand_vars("${UNSET:-~/.x}", env), "~/.x");
        assert_eq!(super::super::expand_vars("${UNSET}z", env), "z");
        assert_eq!(super::super::expand_vars("plain", env), "plain");
        assert_eq!(super::super::expand_vars("${open", env), "${open");
    }
}
