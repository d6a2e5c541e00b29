//! What an operator's "allow always (this mission)" covers, as the envelope
//! classifies a call: its kind (`tools.tool`), the rule that asked about it (or the
//! default action), and its target — for a shell call, the program it runs. A later
//! call of the same mission with the same scope, which the envelope would again
//! *ask* about, is allowed without asking; one the envelope denies stays denied,
//! and one it allows needed no allowance.
//!
//! A shell call's target is its program only when the line is one plain command
//! (no compound line, substitution, redirection, subshell or shell mode) running a
//! program that is not itself a runner of other programs (`sh`, `env`, `sudo`, …):
//! anything else is scoped to its exact command line, so "always `git`" never
//! covers `git status; rm -rf ~` or `bash -c …`.

use serde_json::Value;

use super::eval::{ToolCall, Verdict};
use super::shell;

/// Programs whose arguments are other programs or scripts: allowing one "always"
/// would allow anything, so a call of theirs is scoped to its exact line.
const RUNNERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "env", "sudo", "doas", "su",
    "xargs", "nohup", "time", "nice", "ionice", "timeout", "exec", "eval", "command", "builtin",
    "busybox", "chroot", "setsid", "stdbuf", "watch", "parallel", "ssh", "find", "script",
    "python", "python3", "perl", "ruby", "node", "deno", "bun", "npx", "uvx",
];

/// The scope of an allowance for `call`, asked about by `verdict`: one line, the
/// same for every call it covers (the key the record and the lookup share). A shell
/// call that names no command (only its title says what it runs) is scoped to
/// exactly `shown`, the line the operator was shown.
pub fn always_scope(call: &ToolCall, verdict: &Verdict, shown: &str) -> String {
    let rule = match verdict.matched_rule {
        Some(i) => format!("rule {i}"),
        None => "the default action".to_string(),
    };
    let kind = format!("{}.{}", call.tools, call.tool);
    let target = if call.tools == "local_shell" {
        Some(shell_target(call).unwrap_or_else(|| format!("running exactly {:?}", shown.trim())))
    } else {
        None
    };
    match target {
        Some(t) => format!(
            "{kind} {t}, asked by {rule} of envelope {:?}",
            verdict.envelope_name
        ),
        None => format!(
            "{kind}, asked by {rule} of envelope {:?}",
            verdict.envelope_name
        ),
    }
}

/// `running git` for a plain command of a plain program, else `running exactly
/// "<line>"`; `None` when the call names no command at all.
fn shell_target(call: &ToolCall) -> Option<String> {
    let line = shell::structural_line(&call.args).or_else(|| {
        // An argv array: its words, as the program would receive them.
        match call.args.get("args") {
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|v| v.as_str().unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        }
    })?;
    let full = match call.args.get("args") {
        Some(Value::Array(items)) if call.args.contains_key("command") => {
            let mut l = line.clone();
            for w in items {
                l.push(' ');
                l.push_str(w.as_str().unwrap_or_default());
            }
            l
        }
        _ => line.clone(),
    };
    let plain = !shell::args_have_substitution(&call.args)
        && !shell::shell_mode_requested(&call.args)
        && shell::read_line(&line).is_ok_and(|l| {
            l.commands.len() == 1
                && !l.has_redirection
                && !l.has_substitution
                && !l.has_grouping
                && l.commands[0].assignments.is_empty()
        });
    let program = shell::command_basename(&call.args).filter(|p| !p.is_empty());
    match program {
        Some(p) if plain && !RUNNERS.contains(&p.as_str()) => Some(format!("running {p}")),
        _ => Some(format!("running exactly {:?}", full.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::eval::Reason;
    use crate::envelope::format::Action;
    use serde_json::json;

    fn verdict(rule: Option<usize>) -> Verdict {
        Verdict {
            action: Action::Approve,
            matched_rule: rule,
            reason: Reason::MatchedRule,
            timeout_s: 0,
            on_timeout: Action::Deny,
            envelope_name: "gate".into(),
            detail: String::new(),
        }
    }

    fn shell(command: &str) -> String {
        always_scope(
            &ToolCall::new("local_shell", "local_shell", json!({ "command": command })),
            &verdict(Some(0)),
            command,
        )
    }

    #[test]
    fn a_plain_command_is_scoped_to_its_program_under_the_rule_that_asked() {
        assert_eq!(
            shell("git push origin main"),
            "local_shell.local_shell running git, asked by rule 0 of envelope \"gate\""
        );
        assert_eq!(shell("git status"), shell("/usr/bin/git push"));
        let write = ToolCall::new("local_fs", "write_file", json!({ "path": "a.txt" }));
        assert_eq!(
            always_scope(&write, &verdict(None), "a.txt"),
            "local_fs.write_file, asked by the default action of envelope \"gate\""
        );
    }

    #[test]
    fn compound_lines_and_runners_are_scoped_to_the_exact_line() {
        for line in [
            "git status; rm -rf ~",
            "git log && curl x | sh",
            "git $(rm -rf ~)",
            "bash -c 'git status'",
            "env rm -rf ~",
            "FOO=1 git status",
            "git status > /etc/passwd",
        ] {
            let scope = shell(line);
            assert!(scope.contains("running exactly"), "{line}: {scope}");
            assert_ne!(scope, shell("git status"), "{line}");
        }
        // Only the title says what it runs: that exact line.
        let untold = ToolCall::new("local_shell", "local_shell", json!({ "stub": true }));
        assert_eq!(
            always_scope(&untold, &verdict(Some(0)), "git status"),
            "local_shell.local_shell running exactly \"git status\", asked by rule 0 of envelope \"gate\""
        );
    }
}
