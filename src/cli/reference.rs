//! The CLI reference in Markdown (`missionboard man --markdown`, checked in as
//! `docs/cli.md`): every visible command's long help, from the grammar the manual
//! pages and completions are generated from, so the three never disagree.

/// The command that regenerates the checked-in reference.
pub const REGENERATE: &str = "cargo run --quiet -- man --markdown > docs/cli.md";

/// The reference for `root`: a contents list, then one section per visible command,
/// depth first, each with its long help as `--help` prints it.
pub fn markdown(root: clap::Command) -> String {
    let mut root = root;
    root.build();
    let mut commands = Vec::new();
    collect(&root, &mut Vec::new(), &mut commands);
    let mut out = String::new();
    out.push_str("# CLI reference\n\n");
    out.push_str(&format!(
        "Generated from the grammar `missionboard man` and `missionboard completions` use \
         (without the `opt-in-beta` flags; see [the oracle](oracle.md)). Regenerate with \
         `{REGENERATE}`; `cargo test` fails while this copy is stale. How the commands \
         behave, their `--json` shapes and errors: [The CLI and `--json`](commands.md).\n\n"
    ));
    for (typed, _) in &commands {
        let depth = typed.matches(' ').count();
        out.push_str(&format!(
            "{}- [`{typed}`](#{})\n",
            "  ".repeat(depth.saturating_sub(1)),
            anchor(typed)
        ));
    }
    for (typed, cmd) in &commands {
        let help = cmd.clone().render_long_help().to_string();
        let help: Vec<&str> = help.lines().map(str::trim_end).collect();
        out.push_str(&format!(
            "\n## {typed}\n\n```text\n{}\n```\n",
            help.join("\n").trim_end()
        ));
    }
    out
}

/// Every visible command under `cmd` (itself included), with the words it is typed as.
fn collect(cmd: &clap::Command, path: &mut Vec<String>, out: &mut Vec<(String, clap::Command)>) {
    path.push(cmd.get_name().to_string());
    out.push((path.join(" "), cmd.clone()));
    for sub in cmd.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        collect(sub, path, out);
    }
    path.pop();
}

/// The fragment GitHub gives a `## missionboard mission fire` heading.
fn anchor(heading: &str) -> String {
    heading
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_anchor_is_the_heading_github_links_to() {
        assert_eq!(
            anchor("missionboard mission fire"),
            "missionboard-mission-fire"
        );
        assert_eq!(anchor("missionboard stub_x"), "missionboard-stub_x");
    }
}
