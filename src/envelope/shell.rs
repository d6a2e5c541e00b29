//! Shell-aware helpers behind the command operators.
//!
//! Two views of a call exist side by side. The *tokenwise* view is the one the
//! operators are specified in: the command's basename, the argv tokens, a raw scan
//! for substitution patterns. The *structural* view ([`read_line`]) reads a command
//! line the way a POSIX shell would split it into simple commands, so that
//! `cd x && rm -rf y` is seen to run `rm`, and `go test ./... && go vet ./...` can
//! be allowlisted as a whole. The structural reader is deliberately small: it only
//! has to be right about where commands start, and it fails (rather than guesses)
//! on anything it cannot read.

use serde_json::{Map, Value};

use super::quote::quote;

/// The characters that make a token more than a plain argv word.
const CONTROL_CHARS: [char; 8] = [';', '|', '&', '>', '<', '`', '\n', '\r'];

/// Text that runs (or expands into) another command. `$HOME` and `${VAR}` are
/// deliberately absent: plain expansions are data, not code.
const SUBSTITUTION_PATTERNS: [&str; 7] = ["$(", "`", "<(", ">(", "$[", "${}", "$(("];

/// Shell words that are syntax, not programs.
const RESERVED_WORDS: [&str; 12] = [
    "!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until",
];

/// Go's `path.Base`.
pub fn path_base(p: &str) -> &str {
    if p.is_empty() {
        return ".";
    }
    let trimmed = p.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/";
    }
    match trimmed.rfind('/') {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}

/// Comma-separated list entries, trimmed, empties skipped.
pub fn list_entries(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|e| !e.is_empty())
}

/// The program a call names: `args.command` if it is a string, else the first
/// field of a string `args.args`, else the first element of an `args.args` array.
/// Returned as its basename. The first field is taken before the basename so that
/// `rm -rf /tmp/x` names `rm`, not `x`.
pub fn command_basename(args: &Map<String, Value>) -> Option<String> {
    let raw = match (args.get("command"), args.get("args")) {
        (Some(Value::String(c)), _) => c.clone(),
        (_, Some(Value::String(a))) => a.split_whitespace().next().unwrap_or("").to_string(),
        (_, Some(Value::Array(items))) => match items.first() {
            Some(Value::String(s)) => s.clone(),
            _ => return None,
        },
        _ => return None,
    };
    let first = raw.split_whitespace().next().unwrap_or("");
    Some(path_base(first).to_string())
}

/// The text a shell would read if the call were run as a line: the command string
/// and a string `args`. An `args` array is argv, not shell text, so it is left out.
pub fn structural_line(args: &Map<String, Value>) -> Option<String> {
    let command = match args.get("command") {
        Some(Value::String(c)) => Some(c.as_str()),
        _ => None,
    };
    let rest = match args.get("args") {
        Some(Value::String(a)) => Some(a.as_str()),
        _ => None,
    };
    match (command, rest) {
        (Some(c), Some(a)) => Some(format!("{c} {a}")),
        (Some(c), None) => Some(c.to_string()),
        (None, Some(a)) => Some(a.to_string()),
        (None, None) => None,
    }
}

/// Whether `s` contains one of the substitution patterns.
pub fn has_substitution(s: &str) -> bool {
    SUBSTITUTION_PATTERNS.iter().any(|p| s.contains(p))
}

/// Scans every string anywhere in the call's args, not only one key, because a
/// substitution smuggled into any argument runs all the same. The raw scan is a
/// superset of what the structural reader flags (it also fires inside single
/// quotes), so the reader adds nothing here.
pub fn args_have_substitution(args: &Map<String, Value>) -> bool {
    fn walk(v: &Value) -> bool {
        match v {
            Value::String(s) => has_substitution(s),
            Value::Array(items) => items.iter().any(walk),
            Value::Object(map) => map.values().any(walk),
            _ => false,
        }
    }
    args.values().any(walk)
}

/// `args.shell` asks for the line to be run by a shell, which makes argv checks
/// meaningless. Any truthy spelling counts; refusing too much only costs an ask.
pub fn shell_mode_requested(args: &Map<String, Value>) -> bool {
    match args.get("shell") {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "true" | "1" | "yes" | "y" | "on"
        ),
        Some(Value::Number(n)) => n.as_f64().is_some_and(|x| x != 0.0),
        _ => false,
    }
}

/// The `command_blacklist` / `command_ask_always` match: the name that matched,
/// if the call's basename, or the program of any command in a readable compound
/// line, is on the list. A `sh -c <script>` (as argv or inside the line) has its
/// script read too, since a blacklist that `bash -c` walks around protects nothing.
pub fn blacklist_match(args: &Map<String, Value>, list: &str) -> Option<String> {
    let on_list = |name: &str| list_entries(list).any(|e| e == name);
    if let Some(base) = command_basename(args)
        && on_list(&base)
    {
        return Some(base);
    }
    let mut commands = Vec::new();
    if let Some(line) = structural_line(args)
        && let Ok(parsed) = read_line(&line)
    {
        commands.extend(parsed.commands);
    }
    if matches!(args.get("args"), Some(Value::Array(_))) {
        commands.push(SimpleCommand {
            assignments: Vec::new(),
            words: call_tokens(args),
        });
    }
    find_listed(&commands, &on_list, 0)
}

/// How deep `sh -c 'sh -c …'` nesting is followed; past it the call just does
/// not match here and falls to the rules below (which end on an ask).
const MAX_SCRIPT_DEPTH: usize = 4;
const SHELLS: [&str; 6] = ["sh", "bash", "dash", "zsh", "ksh", "ash"];

fn find_listed(
    commands: &[SimpleCommand],
    on_list: &dyn Fn(&str) -> bool,
    depth: usize,
) -> Option<String> {
    for cmd in commands {
        let Some(program) = cmd.program() else {
            continue;
        };
        let base = path_base(program);
        if on_list(base) {
            return Some(base.to_string());
        }
        if depth < MAX_SCRIPT_DEPTH
            && SHELLS.contains(&base)
            && let Some(script) = shell_script(&cmd.words)
            && let Ok(parsed) = read_line(script)
            && let Some(hit) = find_listed(&parsed.commands, on_list, depth + 1)
        {
            return Some(hit);
        }
    }
    None
}

/// The script of a `<shell> … -c <script>` command line.
fn shell_script(words: &[String]) -> Option<&str> {
    let at = words.iter().position(|w| {
        w.len() > 1 && w.starts_with('-') && !w.starts_with("--") && w[1..].contains('c')
    })?;
    words.get(at + 1).map(String::as_str)
}

/// The argv view of a call: `fields(command)` followed by the `args` tokens.
pub fn call_tokens(args: &Map<String, Value>) -> Vec<String> {
    let mut tokens: Vec<String> = match args.get("command") {
        Some(Value::String(c)) => c.split_whitespace().map(str::to_string).collect(),
        _ => Vec::new(),
    };
    match args.get("args") {
        Some(Value::String(a)) => tokens.extend(a.split_whitespace().map(str::to_string)),
        Some(Value::Array(items)) => tokens.extend(items.iter().map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })),
        _ => {}
    }
    tokens
}

/// An absolute program path is compared by its basename; a relative one with a
/// separator (`./go`) names a different binary than the bare name, so it stays.
fn normalize_program(word: &str) -> &str {
    if word.starts_with('/') {
        path_base(word)
    } else {
        word
    }
}

fn allowlisted<S: AsRef<str>>(words: &[S], list: &str) -> bool {
    list_entries(list).any(|entry| {
        let want: Vec<&str> = entry.split_whitespace().collect();
        !want.is_empty()
            && words.len() >= want.len()
            && want.iter().enumerate().all(|(i, w)| {
                let got = words[i].as_ref();
                let got = if i == 0 { normalize_program(got) } else { got };
                got == *w
            })
    })
}

/// Result of the `command_prefix_allowlist` check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowlist {
    /// Every command is allowlisted. `programs` are the program words as written,
    /// for trusted-binary verification.
    Allowed { programs: Vec<String> },
    /// Why the call is not allowlisted, for the verdict's detail.
    Refused(String),
}

/// The `command_prefix_allowlist` check (see the module docs for the two views).
pub fn prefix_allowlist(args: &Map<String, Value>, list: &str) -> Allowlist {
    if shell_mode_requested(args) {
        return Allowlist::Refused("shell mode requested (args.shell)".to_string());
    }
    let tokens = call_tokens(args);
    if tokens.is_empty() {
        return Allowlist::Refused("no command to check".to_string());
    }
    let tokenwise_problem = tokens.iter().find_map(|t| {
        if t.contains(CONTROL_CHARS) {
            Some(format!(
                "token {} contains a shell control character",
                quote(t)
            ))
        } else if has_substitution(t) {
            Some(format!(
                "token {} contains a command substitution",
                quote(t)
            ))
        } else {
            None
        }
    });
    let line = structural_line(args);
    match tokenwise_problem {
        None => {
            if !allowlisted(&tokens, list) {
                return Allowlist::Refused(format!(
                    "{} is not on the allowlist",
                    quote(&tokens.join(" "))
                ));
            }
            // The tokens look plain, but a shell may still read them differently
            // (an open quote, a subshell): then the tokens are not what would run.
            if let Some(line) = line {
                match read_line(&line) {
                    Err(e) => {
                        return Allowlist::Refused(format!("the line does not read cleanly: {e}"));
                    }
                    Ok(l) if l.has_grouping || l.commands.len() > 1 => {
                        return Allowlist::Refused(
                            "the line groups commands in a way argv checks cannot follow"
                                .to_string(),
                        );
                    }
                    Ok(_) => {}
                }
            }
            Allowlist::Allowed {
                programs: vec![tokens[0].clone()],
            }
        }
        Some(problem) => {
            // A compound line can still be allowlisted, but only as shell text:
            // argv elements are never shell syntax.
            let argv_array = matches!(args.get("args"), Some(Value::Array(a)) if !a.is_empty());
            match line {
                Some(line) if !argv_array => compound_allowlist(&line, list, problem),
                _ => Allowlist::Refused(problem),
            }
        }
    }
}

fn compound_allowlist(line: &str, list: &str, tokenwise_problem: String) -> Allowlist {
    let parsed = match read_line(line) {
        Ok(p) => p,
        Err(e) => {
            return Allowlist::Refused(format!(
                "{tokenwise_problem}; the line does not read cleanly: {e}"
            ));
        }
    };
    if parsed.has_substitution || has_substitution(line) {
        return Allowlist::Refused("the line contains a command substitution".to_string());
    }
    if parsed.has_redirection {
        return Allowlist::Refused("the line redirects input or output".to_string());
    }
    if parsed.has_grouping {
        return Allowlist::Refused("the line groups commands in a subshell".to_string());
    }
    let mut programs = Vec::new();
    for cmd in &parsed.commands {
        if !cmd.assignments.is_empty() {
            // LD_PRELOAD=… or GOFLAGS=… change what an allowlisted program does.
            return Allowlist::Refused(format!(
                "command {} sets environment variables",
                quote(&cmd.words.join(" "))
            ));
        }
        let Some(first) = cmd.words.first() else {
            continue;
        };
        if RESERVED_WORDS.contains(&first.as_str()) {
            return Allowlist::Refused(format!("the line uses the shell keyword {}", quote(first)));
        }
        if !allowlisted(&cmd.words, list) {
            return Allowlist::Refused(format!(
                "command {} in the line is not on the allowlist",
                quote(&cmd.words.join(" "))
            ));
        }
        programs.push(first.clone());
    }
    if programs.is_empty() {
        return Allowlist::Refused("no command to check".to_string());
    }
    Allowlist::Allowed { programs }
}

// ---------------------------------------------------------------------------
// The structural reader.

/// One simple command: leading `VAR=value` assignments, then its words (quotes
/// removed, expansions left as written, redirection targets dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    pub assignments: Vec<String>,
    pub words: Vec<String>,
}

impl SimpleCommand {
    /// The program this command runs, skipping shell keywords such as `then` or
    /// `do` that can precede it inside compound statements.
    pub fn program(&self) -> Option<&str> {
        self.words
            .iter()
            .map(String::as_str)
            .find(|w| !RESERVED_WORDS.contains(w))
    }
}

/// A command line split into simple commands. Commands inside substitutions and
/// subshells are included, since they run too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShellLine {
    pub commands: Vec<SimpleCommand>,
    pub has_redirection: bool,
    pub has_substitution: bool,
    /// `( … )` subshells.
    pub has_grouping: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellParseError {
    UnterminatedQuote(char),
    Unterminated(&'static str),
    TrailingBackslash,
    UnexpectedClose(char),
}

impl std::fmt::Display for ShellParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShellParseError::UnterminatedQuote(q) => write!(f, "unterminated {q} quote"),
            ShellParseError::Unterminated(what) => write!(f, "unterminated {what}"),
            ShellParseError::TrailingBackslash => f.write_str("trailing backslash"),
            ShellParseError::UnexpectedClose(c) => write!(f, "unexpected '{c}'"),
        }
    }
}

impl std::error::Error for ShellParseError {}

/// Splits a command line into simple commands on `;`, `&&`, `||`, `|`, `&` and
/// newlines, honouring quotes and backslash escapes.
pub fn read_line(line: &str) -> Result<ShellLine, ShellParseError> {
    let mut reader = Reader {
        chars: line.chars().collect(),
        pos: 0,
        out: ShellLine::default(),
    };
    reader.list(None)?;
    Ok(reader.out)
}

struct Reader {
    chars: Vec<char>,
    pos: usize,
    out: ShellLine,
}

/// Per-list parsing state: the command and word being built.
#[derive(Default)]
struct Pending {
    cmd: SimpleCommand,
    word: String,
    in_word: bool,
    /// The word can still be an assignment: it started with a name character and
    /// no quote or expansion has appeared before its `=`.
    assignable: bool,
    saw_eq: bool,
    /// The next word is a redirection target, not an argument.
    redirect_target: bool,
}

impl Pending {
    fn push(&mut self, c: char) {
        if !self.in_word {
            self.in_word = true;
            self.assignable = c.is_ascii_alphabetic() || c == '_';
        } else if !self.saw_eq && c != '=' && !(c.is_ascii_alphanumeric() || c == '_') {
            self.assignable = false;
        }
        if c == '=' && !self.saw_eq {
            self.saw_eq = true;
        }
        self.word.push(c);
    }

    /// Quoted or expanded text: part of a word, but never an assignment name.
    fn push_opaque(&mut self, s: &str) {
        if !self.in_word {
            self.in_word = true;
            self.assignable = false;
        } else if !self.saw_eq {
            self.assignable = false;
        }
        self.word.push_str(s);
    }

    fn end_word(&mut self) {
        if !self.in_word {
            return;
        }
        let word = std::mem::take(&mut self.word);
        if self.redirect_target {
            self.redirect_target = false;
        } else if self.cmd.words.is_empty() && self.assignable && self.saw_eq {
            self.cmd.assignments.push(word);
        } else {
            self.cmd.words.push(word);
        }
        self.in_word = false;
        self.assignable = false;
        self.saw_eq = false;
    }

    fn end_command(&mut self, out: &mut ShellLine) {
        self.end_word();
        let cmd = std::mem::take(&mut self.cmd);
        if !cmd.words.is_empty() || !cmd.assignments.is_empty() {
            out.commands.push(cmd);
        }
    }
}

impl Reader {
    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    /// Reads commands until `close` (or the end of input when `None`).
    fn list(&mut self, close: Option<char>) -> Result<(), ShellParseError> {
        let mut p = Pending::default();
        loop {
            let Some(c) = self.peek_at(0) else {
                if close.is_some() {
                    return Err(ShellParseError::Unterminated("substitution or subshell"));
                }
                p.end_command(&mut self.out);
                return Ok(());
            };
            if Some(c) == close {
                self.pos += 1;
                p.end_command(&mut self.out);
                return Ok(());
            }
            match c {
                ' ' | '\t' => {
                    p.end_word();
                    self.pos += 1;
                }
                '\n' | ';' => {
                    p.end_command(&mut self.out);
                    self.pos += 1;
                }
                '&' if self.peek_at(1) == Some('>') => {
                    p.end_word();
                    self.redirection(&mut p);
                }
                '&' | '|' => {
                    p.end_command(&mut self.out);
                    self.pos += 1;
                    if matches!(self.peek_at(0), Some('&' | '|')) {
                        self.pos += 1;
                    }
                }
                '<' | '>' if self.peek_at(1) == Some('(') => {
                    self.out.has_substitution = true;
                    self.pos += 2;
                    p.push_opaque("<(…)");
                    self.list(Some(')'))?;
                }
                '<' | '>' => {
                    // `2>` : a word of digits right before the operator is its fd.
                    if p.in_word && p.word.chars().all(|d| d.is_ascii_digit()) {
                        p.word.clear();
                        p.in_word = false;
                    }
                    p.end_word();
                    self.redirection(&mut p);
                }
                '(' => {
                    self.out.has_grouping = true;
                    p.end_command(&mut self.out);
                    self.pos += 1;
                    self.list(Some(')'))?;
                }
                ')' => return Err(ShellParseError::UnexpectedClose(c)),
                '\'' => {
                    self.pos += 1;
                    let start = self.pos;
                    while self.peek_at(0).is_some_and(|q| q != '\'') {
                        self.pos += 1;
                    }
                    if self.peek_at(0).is_none() {
                        return Err(ShellParseError::UnterminatedQuote('\''));
                    }
                    let text: String = self.chars[start..self.pos].iter().collect();
                    self.pos += 1;
                    p.push_opaque(&text);
                }
                '"' => {
                    self.pos += 1;
                    self.double_quoted(&mut p)?;
                }
                '\\' => match self.peek_at(1) {
                    None => return Err(ShellParseError::TrailingBackslash),
                    Some('\n') => self.pos += 2,
                    Some(e) => {
                        self.pos += 2;
                        p.push_opaque(&e.to_string());
                    }
                },
                '`' => {
                    self.out.has_substitution = true;
                    self.pos += 1;
                    p.push_opaque("`…`");
                    self.list(Some('`'))?;
                }
                '$' => self.dollar(&mut p)?,
                c => {
                    self.pos += 1;
                    p.push(c);
                }
            }
        }
    }

    /// At a `<`/`>` (or `&>`): marks the line and makes the next word a target.
    fn redirection(&mut self, p: &mut Pending) {
        self.out.has_redirection = true;
        self.pos += 1;
        while matches!(self.peek_at(0), Some('<' | '>' | '&' | '|')) {
            self.pos += 1;
        }
        p.redirect_target = true;
    }

    fn double_quoted(&mut self, p: &mut Pending) -> Result<(), ShellParseError> {
        p.push_opaque("");
        loop {
            match self.peek_at(0) {
                None => return Err(ShellParseError::UnterminatedQuote('"')),
                Some('"') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some('\\') => match self.peek_at(1) {
                    Some('\n') => self.pos += 2,
                    Some(e @ ('$' | '`' | '"' | '\\')) => {
                        self.pos += 2;
                        p.push_opaque(&e.to_string());
                    }
                    _ => {
                        self.pos += 1;
                        p.push_opaque("\\");
                    }
                },
                Some('`') => {
                    self.out.has_substitution = true;
                    self.pos += 1;
                    p.push_opaque("`…`");
                    self.list(Some('`'))?;
                }
                Some('$') => self.dollar(p)?,
                Some(c) => {
                    self.pos += 1;
                    p.push_opaque(&c.to_string());
                }
            }
        }
    }

    /// At a `$`: command substitution is read as commands (they run), arithmetic
    /// and parameter expansions are skipped as opaque text.
    fn dollar(&mut self, p: &mut Pending) -> Result<(), ShellParseError> {
        match (self.peek_at(1), self.peek_at(2)) {
            (Some('('), Some('(')) => {
                self.out.has_substitution = true;
                self.pos += 1;
                let text = self.skip_balanced('(', ')', "arithmetic expansion")?;
                p.push_opaque(&format!("${text}"));
            }
            (Some('('), _) => {
                self.out.has_substitution = true;
                self.pos += 2;
                p.push_opaque("$(…)");
                self.list(Some(')'))?;
            }
            (Some('['), _) => {
                self.out.has_substitution = true;
                self.pos += 1;
                let text = self.skip_balanced('[', ']', "arithmetic expansion")?;
                p.push_opaque(&format!("${text}"));
            }
            (Some('{'), _) => {
                self.pos += 1;
                let text = self.skip_balanced('{', '}', "parameter expansion")?;
                if text == "{}" || has_substitution(&text) {
                    self.out.has_substitution = true;
                }
                p.push_opaque(&format!("${text}"));
            }
            _ => {
                self.pos += 1;
                p.push_opaque("$");
            }
        }
        Ok(())
    }

    /// From an `open` char to its matching `close`, returning the text read.
    fn skip_balanced(
        &mut self,
        open: char,
        close: char,
        what: &'static str,
    ) -> Result<String, ShellParseError> {
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(c) = self.peek_at(0) {
            self.pos += 1;
            if c == '\\' {
                self.pos += 1;
            } else if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(self.chars[start..self.pos].iter().collect());
                }
            }
        }
        Err(ShellParseError::Unterminated(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn programs(line: &str) -> Vec<String> {
        read_line(line)
            .unwrap()
            .commands
            .iter()
            .filter_map(|c| c.program().map(str::to_string))
            .collect()
    }

    #[test]
    fn path_base_is_go_path_base() {
        for (input, want) in [
            ("", "."),
            ("/", "/"),
            ("///", "/"),
            ("/usr/bin/git", "git"),
            ("git", "git"),
            ("a/b/", "b"),
            ("./go", "go"),
        ] {
            assert_eq!(path_base(input), want, "{input:?}");
        }
    }

    #[test]
    fn command_basename_sources_in_order() {
        assert_eq!(
            command_basename(&args(json!({"command": "/bin/rm", "args": ["-rf", "x"]}))),
            Some("rm".into())
        );
        assert_eq!(
            command_basename(&args(json!({"command": "rm -rf /tmp/x"}))),
            Some("rm".into())
        );
        assert_eq!(
            command_basename(&args(json!({"args": "/sbin/mkfs.ext4 /dev/sda"}))),
            Some("mkfs.ext4".into())
        );
        assert_eq!(
            command_basename(&args(json!({"args": ["/usr/bin/sudo", "ls"]}))),
            Some("sudo".into())
        );
        assert_eq!(command_basename(&args(json!({"args": [3]}))), None);
        assert_eq!(command_basename(&args(json!({"path": "x"}))), None);
    }

    #[test]
    fn blacklist_table() {
        let list = "rm,sudo, dd ,rm -rf";
        let cases = [
            (json!({"command": "rm", "args": ["-rf", "x"]}), Some("rm")),
            (json!({"command": "/bin/rm -rf x"}), Some("rm")),
            (json!({"command": "dd if=/dev/zero"}), Some("dd")),
            (json!({"command": "rmdir x"}), None),
            (json!({"command": "ls"}), None),
            // compound lines: any command in them counts
            (json!({"command": "cd /tmp && rm -rf x"}), Some("rm")),
            (json!({"command": "ls | sudo tee /etc/x"}), Some("sudo")),
            (json!({"command": "FOO=1 rm x"}), Some("rm")),
            (json!({"command": "echo $(rm -rf x)"}), Some("rm")),
            (json!({"command": "if true; then rm x; fi"}), Some("rm")),
            (json!({"command": "echo 'a; rm x'"}), None),
            (json!({"command": "echo a\\; rm x"}), None),
            (
                json!({"command": "ls", "args": "-la; sudo reboot"}),
                Some("sudo"),
            ),
        ];
        for (a, want) in cases {
            assert_eq!(
                blacklist_match(&args(a.clone()), list).as_deref(),
                want,
                "{a}"
            );
        }
        // A multi-word entry never matches; an empty list never matches.
        assert_eq!(
            blacklist_match(&args(json!({"command": "rm -rf x"})), "rm -rf"),
            None
        );
        assert_eq!(blacklist_match(&args(json!({"command": "rm"})), ""), None);
        assert_eq!(
            blacklist_match(&args(json!({"command": "rm"})), " , "),
            None
        );
    }

    #[test]
    fn substitution_patterns() {
        for s in [
            "$(whoami)",
            "`id`",
            "<(ls)",
            ">(cat)",
            "$[1+1]",
            "${}",
            "$((1+1))",
        ] {
            assert!(has_substitution(s), "{s}");
        }
        for s in ["$HOME", "${MY_VAR}", "plain", "a$", "cost: $5"] {
            assert!(!has_substitution(s), "{s}");
        }
        assert!(args_have_substitution(&args(
            json!({"command": "echo", "args": ["ok", "$(whoami)"]})
        )));
        assert!(args_have_substitution(&args(
            json!({"command": "echo", "env": {"X": ["`id`"]}})
        )));
        assert!(!args_have_substitution(&args(
            json!({"command": "echo", "args": ["$HOME", "${MY_VAR}"], "n": 3})
        )));
    }

    #[test]
    fn shell_mode_spellings() {
        for v in [
            json!(true),
            json!("true"),
            json!("1"),
            json!("yes"),
            json!("Y"),
            json!("on"),
            json!(1),
        ] {
            assert!(shell_mode_requested(&args(json!({"shell": v}))), "{v}");
        }
        for v in [
            json!(false),
            json!("false"),
            json!("0"),
            json!(""),
            json!(null),
            json!(0),
        ] {
            assert!(!shell_mode_requested(&args(json!({"shell": v}))), "{v}");
        }
    }

    const LIST: &str = "go build,go test,git log,ls,cat,echo,./go run";

    fn allowed(a: Value) -> bool {
        matches!(prefix_allowlist(&args(a), LIST), Allowlist::Allowed { .. })
    }

    #[test]
    fn prefix_allowlist_table() {
        let cases = [
            (json!({"command": "go", "args": ["test", "./..."]}), true),
            (json!({"command": "go test ./..."}), true),
            (
                json!({"command": "/usr/local/go/bin/go", "args": ["build"]}),
                true,
            ),
            (json!({"command": "git log --oneline"}), true),
            (json!({"command": "git clean -fd"}), false),
            (json!({"command": "gitk"}), false),
            (json!({"command": "git"}), false),
            (json!({"command": "./go", "args": ["run", "x"]}), true),
            (json!({"command": "./go", "args": ["build"]}), false),
            (json!({"command": "bin/ls"}), false),
            (json!({"command": "ls", "shell": true}), false),
            (json!({"command": "ls", "shell": "yes"}), false),
            (json!({"command": ""}), false),
            (json!({}), false),
            (json!({"command": "cat a > b"}), false),
            (json!({"command": "cat", "args": ["a", ">", "b"]}), false),
            (json!({"command": "echo", "args": ["$(whoami)"]}), false),
            (json!({"command": "echo $HOME"}), true),
            (json!({"command": "echo 'unterminated"}), false),
            (json!({"command": "echo (x)"}), false),
            // compound lines: every command must be allowlisted
            (json!({"command": "go test ./... && go vet ./..."}), false),
            (json!({"command": "go build ./... && go test ./..."}), true),
            (json!({"command": "ls; cat x | echo"}), true),
            (json!({"command": "ls && rm -rf x"}), false),
            (json!({"command": "ls && cat a > b"}), false),
            (json!({"command": "ls && echo `id`"}), false),
            (json!({"command": "ls && LD_PRELOAD=x ls"}), false),
            (json!({"command": "(ls; cat x)"}), false),
            (json!({"command": "ls; then"}), false),
            (json!({"command": "ls", "args": ["a;b"]}), false),
        ];
        for (a, want) in cases {
            assert_eq!(allowed(a.clone()), want, "{a}");
        }
    }

    #[test]
    fn refusals_say_why() {
        let refusal = |a: Value| match prefix_allowlist(&args(a), LIST) {
            Allowlist::Refused(r) => r,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert!(refusal(json!({"command": "ls", "shell": true})).contains("shell mode"));
        assert!(refusal(json!({"command": "cat a > b"})).contains("redirect"));
        assert!(refusal(json!({"command": "ls && rm x"})).contains("\"rm x\""));
        assert!(refusal(json!({"command": "rm -rf x"})).contains("not on the allowlist"));
    }

    #[test]
    fn allowed_reports_program_words_as_written() {
        assert_eq!(
            prefix_allowlist(&args(json!({"command": "/usr/bin/ls -la"})), LIST),
            Allowlist::Allowed {
                programs: vec!["/usr/bin/ls".into()]
            }
        );
        assert_eq!(
            prefix_allowlist(&args(json!({"command": "ls && /bin/cat x"})), LIST),
            Allowlist::Allowed {
                programs: vec!["ls".into(), "/bin/cat".into()]
            }
        );
    }

    #[test]
    fn reader_splits_on_every_separator() {
        assert_eq!(
            programs("a; b && c || d | e & f\ng |& h"),
            ["a", "b", "c", "d", "e", "f", "g", "h"]
        );
        assert_eq!(programs("a ;; b"), ["a", "b"]);
    }

    #[test]
    fn reader_honours_quotes_and_escapes() {
        let line = read_line(r#"echo "a; b" 'c && d' e\;f "x\"y" \"z"#).unwrap();
        assert_eq!(line.commands.len(), 1);
        assert_eq!(
            line.commands[0].words,
            ["echo", "a; b", "c && d", "e;f", "x\"y", "\"z"]
        );
        assert_eq!(programs("ls \\\n-la"), ["ls"]);
        assert_eq!(
            read_line("echo 'x").unwrap_err(),
            ShellParseError::UnterminatedQuote('\'')
        );
        assert_eq!(
            read_line("echo \"x").unwrap_err(),
            ShellParseError::UnterminatedQuote('"')
        );
        assert_eq!(
            read_line("echo x\\").unwrap_err(),
            ShellParseError::TrailingBackslash
        );
        assert!(read_line("echo )").is_err());
        assert!(read_line("echo $(ls").is_err());
    }

    #[test]
    fn reader_skips_assignments_and_redirect_targets() {
        let line = read_line("A=1 B='x y' make all 2>/dev/null > out.txt").unwrap();
        assert_eq!(line.commands[0].assignments, ["A=1", "B=x y"]);
        assert_eq!(line.commands[0].words, ["make", "all"]);
        assert!(line.has_redirection);
        // Only leading assignments are assignments; a quoted name is a word.
        let line = read_line("make A=1 && 'X'=1 ls").unwrap();
        assert_eq!(line.commands[0].words, ["make", "A=1"]);
        assert_eq!(line.commands[1].words, ["X=1", "ls"]);
        assert_eq!(programs("> out rm x"), ["rm"]);
        assert_eq!(programs("ls &> log; cat"), ["ls", "cat"]);
    }

    #[test]
    fn reader_flags_substitutions_and_reads_inside_them() {
        let line = read_line("echo \"$(id -u)\" `whoami` <(ls) $((1+2))").unwrap();
        assert!(line.has_substitution);
        let progs: Vec<_> = line
            .commands
            .iter()
            .filter_map(SimpleCommand::program)
            .collect();
        assert_eq!(progs, ["id", "whoami", "ls", "echo"]);
        assert!(
            !read_line("echo $HOME ${MY_VAR} \"${X:-y}\"")
                .unwrap()
                .has_substitution
        );
        assert!(read_line("echo ${}").unwrap().has_substitution);
        assert!(read_line("echo ${X:-$(id)}").unwrap().has_substitution);
        assert!(read_line("(cd x; ls)").unwrap().has_grouping);
    }
}
