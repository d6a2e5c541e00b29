//! The README's first mission, run as written: the commands of its fenced "A first
//! mission with a real agent" block, read from README.md and run one by one against
//! the real binary in a scratch home, so the front door cannot drift from what the
//! binary does. A line this test cannot give a meaning to fails it, naming the line.

use std::path::{Path, PathBuf};

use crate::harness::{Sandbox, script};

const SECTION: &str = "## A first mission with a real agent";

/// The first ```sh block under [`SECTION`]: (line number in README.md, line).
fn first_mission_block() -> Vec<(usize, String)> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let mut lines = readme.lines().enumerate().map(|(i, l)| (i + 1, l));
    lines
        .by_ref()
        .find(|(_, l)| l.trim() == SECTION)
        .unwrap_or_else(|| panic!("README.md has no {SECTION:?} section"));
    lines
        .by_ref()
        .find(|(_, l)| l.trim() == "```sh")
        .unwrap_or_else(|| panic!("README.md's {SECTION:?} has no ```sh block"));
    lines
        .take_while(|(_, l)| l.trim() != "```")
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| (n, l.to_string()))
        .collect()
}

/// A shell line's words as sh would split them: whitespace apart, quotes kept
/// together and removed, a `#` starting a word ends the line.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.get_or_insert_with(String::new).push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (None, '#') if word.is_none() => break,
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(quote.is_none(), "an unclosed quote in {line:?}");
    words.extend(word);
    words
}

/// A git repository with one commit, where `cd` goes.
fn scratch_repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("README"), "a repository to fire at\n").unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "README"],
        &["commit", "-q", "-m", "init"],
    ] {
        crate::harness::git(dir, args);
    }
}

/// Whether an `mb` command starts the agent it names (and so would need its login).
fn runs_the_agent(args: &[String]) -> bool {
    args.starts_with(&["mission".to_string(), "fire".to_string()])
        || args.iter().any(|a| a == "--agent")
}

/// Declare `claude` in the home's agents.toml as the stub agent, under the same name,
/// every other declaration as it was.
fn claude_is_the_stub(sb: &Sandbox, script_file: &Path) {
    let file = sb.home.join("agents.toml");
    let mut doc: toml::Table = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let stub: toml::Table = toml::from_str(&format!(
        "command = \"missionboard\"\nargs = [\"stub-agent\", \"--script\", {:?}]\ndescription = \"the stub agent standing in for claude\"\n",
        script_file.display().to_string()
    ))
    .unwrap();
    doc["agents"]
        .as_table_mut()
        .expect("agents.toml has [agents]")
        .insert("claude".into(), stub.into());
    std::fs::write(&file, toml::to_string(&doc).unwrap()).unwrap();
}

#[test]
fn the_readmes_first_mission_runs_as_written() {
    let block = first_mission_block();
    assert!(!block.is_empty(), "the first-mission block is empty");
    let mut sb = Sandbox::new();
    // `~` in the README is the sandbox's HOME.
    let home_dir: PathBuf = sb.home.parent().unwrap().to_path_buf();
    let script_file = home_dir.join("claude-stand-in.json");
    std::fs::write(
        &script_file,
        script(r#"{"report":{"kind":"result","summary":"added --version"}},{"finish":"landed"}"#),
    )
    .unwrap();
    let mut alias: Option<String> = None;
    let mut stand_in = false;
    let mut fired = false;
    for (n, line) in &block {
        let words = shell_words(line);
        let at = format!("README.md:{n}: `{line}`");
        match words.first().map(String::as_str) {
            // The binary under test is the one cargo built for this run.
            Some("cargo") => assert_eq!(words, ["cargo", "build", "--release"], "{at}"),
            Some("alias") => {
                let (name, target) = words[1].split_once('=').expect("alias name=target");
                assert!(
                    target.ends_with("/missionboard"),
                    "{at}: the alias is not the missionboard binary"
                );
                alias = Some(name.to_string());
            }
            // Installs the real agent; here the stub stands in for it. Its pin must
            // be the catalogue's, or the README installs what the catalogue was not
            // checked against.
            Some("npm") => {
                let claude = missionboard::agents::catalogue::get("claude").unwrap();
                let pin = claude.about.npm.as_deref().unwrap();
                assert_eq!(words, ["npm", "install", "-g", pin], "{at}");
            }
            // A login for the real agent; the stub needs none.
            Some("export") => {}
            Some("cd") => {
                let to = words[1]
                    .strip_prefix("~/")
                    .map(|rest| home_dir.join(rest))
                    .unwrap_or_else(|| PathBuf::from(&words[1]));
                scratch_repo(&to);
                sb.cwd = to;
            }
            Some(word) if Some(word) == alias.as_deref() => {
                let args = &words[1..];
                if runs_the_agent(args) && !stand_in {
                    claude_is_the_stub(&sb, &script_file);
                    stand_in = true;
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let mut c = sb.command(&args);
                c.env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("GIT_CONFIG_GLOBAL", "/dev/null");
                let run = sb.run_with(c);
                assert_eq!(run.code, 0, "{at} failed:\n{run:#?}");
                if args.starts_with(&["mission", "fire"]) {
                    fired = true;
                    assert!(run.stdout.contains("added --version"), "{at}: {run:#?}");
                    let id = sb.newest_mission().expect("the fired mission");
                    let shown = sb.run(&["mission", "show", &id]).ok().stdout;
                    assert!(shown.contains("\nStatus:    landed\n"), "{at}: {shown}");
                }
            }
            _ => panic!("{at}: this test does not know what the line means — teach it"),
        }
    }
    assert!(
        stand_in && fired,
        "the first-mission block no longer fires a mission at an agent"
    );
}

#[test]
fn shell_words_split_as_sh_splits_them() {
    assert_eq!(
        shell_words(r#"mb mission fire claude "add a --version flag" --wait   # a note"#),
        [
            "mb",
            "mission",
            "fire",
            "claude",
            "add a --version flag",
            "--wait"
        ]
    );
    assert_eq!(
        shell_words("export KEY=…  # or log in"),
        ["export", "KEY=…"]
    );
    assert_eq!(shell_words("a 'b # c' d#e"), ["a", "b # c", "d#e"]);
}
