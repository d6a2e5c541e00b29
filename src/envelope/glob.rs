//! Path globs for the `glob` condition operator.
//!
//! Semantics: both sides are cleaned like Go's `path.Clean`; braces expand first
//! (the first balanced top-level `{a,b}`, repeatedly, up to
//! [`MAX_ALTERNATIVES`]); an alternative without `*?[` is an equality test; without
//! `**`, `*` and `?` never cross `/` and `[...]` classes work (negated with `!` or
//! `^`); with `**`, the part before it must match the leading path segments and
//! the part after it is tried against the rest and against every suffix of the
//! rest that starts after a `/`.
//!
//! A pattern compiles once, into a [`Glob`], when its envelope loads; a malformed
//! one is refused then, so the policy fails closed. Matching never backtracks:
//! its work grows with the pattern times the path, whatever the number of `**`.

use std::fmt;

use super::quote::quote;

/// Brace expansion stops here so a hostile pattern cannot explode memory.
pub const MAX_ALTERNATIVES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GlobError {
    UnbalancedClose(String),
    UnbalancedOpen(String),
    TooManyAlternatives(String),
    /// An unterminated or empty `[...]`, a bad range, or a trailing `\`. Go's
    /// loader lets these through and they never match; here they fail the load,
    /// because a deny rule that silently never matches is a hole.
    Malformed(String),
}

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GlobError::UnbalancedClose(p) => write!(f, "unbalanced '}}' in glob {}", quote(p)),
            GlobError::UnbalancedOpen(p) => write!(f, "unbalanced '{{' in glob {}", quote(p)),
            GlobError::TooManyAlternatives(p) => write!(
                f,
                "glob {} expands past the {MAX_ALTERNATIVES}-pattern limit",
                quote(p)
            ),
            GlobError::Malformed(p) => write!(
                f,
                "malformed glob {} (check its [...] classes and trailing backslash)",
                quote(p)
            ),
        }
    }
}

impl std::error::Error for GlobError {}

/// A glob compiled once, when its envelope loads: the brace alternatives, each
/// cut at its `**`s into `**`-free pieces. Matching is a table over the path's
/// segment starts, one row per `**`, so it takes time proportional to the pattern
/// times the path, never exponential in the number of `**`.
#[derive(Debug, Clone)]
pub struct Glob {
    source: String,
    alternatives: Vec<Alternative>,
}

/// Two globs are the same when they were written the same.
impl PartialEq for Glob {
    fn eq(&self, other: &Glob) -> bool {
        self.source == other.source
    }
}

impl Eq for Glob {}

/// One brace alternative: `head₀ ** head₁ ** … ** tail`.
#[derive(Debug, Clone)]
struct Alternative {
    /// The piece before each `**` and how many path segments it spans; `None`
    /// when the `**` starts the (rest of the) pattern.
    heads: Vec<Option<(Piece, usize)>>,
    /// What follows the last `**` (the whole alternative when there is none);
    /// `None` when nothing follows, which matches any rest.
    tail: Option<Piece>,
}

/// A `**`-free piece: an equality test, or `path.Match` tokens.
#[derive(Debug, Clone)]
enum Piece {
    Exact(String),
    Wild(Vec<Tok>),
}

impl Piece {
    /// Without `*?[` a piece is an equality test, escapes and all; it must still
    /// be well-formed (no trailing backslash).
    fn compile(pat: &str) -> Result<Piece, ()> {
        let toks = compile(pat)?;
        Ok(if pat.contains(['*', '?', '[']) {
            Piece::Wild(toks)
        } else {
            Piece::Exact(pat.to_string())
        })
    }

    fn matches(&self, name: &str) -> bool {
        match self {
            Piece::Exact(s) => s == name,
            Piece::Wild(toks) => wild_match(toks, name),
        }
    }
}

impl Glob {
    /// Expands and compiles `pattern`; the errors are the load-time refusals.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let alternatives = expand_braces(pattern)?
            .iter()
            .map(|alt| Alternative::compile(&clean(alt)))
            .collect::<Result<_, ()>>()
            .map_err(|()| GlobError::Malformed(pattern.to_string()))?;
        Ok(Glob {
            source: pattern.to_string(),
            alternatives,
        })
    }

    /// Whether `path` (cleaned first) matches.
    pub fn matches(&self, path: &str) -> bool {
        self.matches_counting(path, &mut 0)
    }

    /// [`Glob::matches`], counting the piece tests it makes in `steps`.
    fn matches_counting(&self, path: &str, steps: &mut usize) -> bool {
        let path = clean(path);
        self.alternatives.iter().any(|a| a.matches(&path, steps))
    }
}

impl Alternative {
    /// Splits a cleaned alternative at each `**`, the way the reference matcher
    /// recursed: the part before a `**` (minus one trailing `/`) must match that
    /// many leading segments; the part after it (minus leading `/`s) is tried
    /// against the rest and against every suffix that starts after a `/`.
    fn compile(mut rest: &str) -> Result<Alternative, ()> {
        let mut heads = Vec::new();
        while let Some(idx) = rest.find("**") {
            let head = &rest[..idx];
            heads.push(if head.is_empty() {
                None
            } else {
                let head = head.strip_suffix('/').unwrap_or(head);
                Some((Piece::compile(head)?, head.split('/').count()))
            });
            rest = rest[idx + 2..].trim_start_matches('/');
        }
        let tail = if rest.is_empty() && !heads.is_empty() {
            None
        } else {
            Some(Piece::compile(rest)?)
        };
        Ok(Alternative { heads, tail })
    }

    fn matches(&self, path: &str, steps: &mut usize) -> bool {
        let len = path.len();
        let slashes: Vec<usize> = path.match_indices('/').map(|(i, _)| i).collect();
        // Where a rest of the path can begin: after each `/`, plus the whole path
        // and the empty rest.
        let segment_starts: Vec<usize> = slashes.iter().map(|s| s + 1).collect();
        let starts: Vec<usize> = std::iter::once(0)
            .chain(segment_starts.iter().copied())
            .chain(std::iter::once(len))
            .collect();
        // holds[p]: the pattern from the current `**` on matches `path[p..]`.
        let mut holds = vec![false; len + 1];
        for &p in &starts {
            *steps += 1;
            holds[p] = self.tail.as_ref().is_none_or(|t| t.matches(&path[p..]));
        }
        for head in self.heads.iter().rev() {
            // later[j]: `holds` at some segment start from `segment_starts[j]` on.
            let mut later = vec![false; segment_starts.len() + 1];
            for j in (0..segment_starts.len()).rev() {
                later[j] = later[j + 1] || holds[segment_starts[j]];
            }
            // A `**` lets the rest begin at `r` or at any segment start after it.
            let from = |r: usize| holds[r] || later[segment_starts.partition_point(|&s| s <= r)];
            let mut next = vec![false; len + 1];
            for &p in &starts {
                *steps += 1;
                next[p] = match head {
                    None => from(p),
                    Some((piece, segments)) => {
                        let first = slashes.partition_point(|&s| s < p);
                        let available = slashes.len() - first + 1;
                        let (end, rest) = if available == *segments {
                            (len, len)
                        } else if available > *segments {
                            let q = slashes[first + segments - 1];
                            (q, q + 1)
                        } else {
                            next[p] = false;
                            continue;
                        };
                        piece.matches(&path[p..end]) && from(rest)
                    }
                };
            }
            holds = next;
        }
        holds[0]
    }
}

/// Load-time check: braces balance, expansion stays under the limit, and every
/// alternative compiles.
pub fn validate(pattern: &str) -> Result<(), GlobError> {
    Glob::new(pattern).map(drop)
}

/// Whether `path` matches `pattern`, compiling it for this one test. A pattern
/// that fails [`validate`] matches nothing.
pub fn matches(pattern: &str, path: &str) -> bool {
    Glob::new(pattern).is_ok_and(|g| g.matches(path))
}

/// Expands braces: the first balanced top-level group, repeatedly, in order.
pub fn expand_braces(pattern: &str) -> Result<Vec<String>, GlobError> {
    check_balance(pattern)?;
    let mut done = Vec::new();
    // A stack, with alternatives pushed in reverse, so the output keeps their order.
    let mut work = vec![pattern.to_string()];
    while let Some(p) = work.pop() {
        match first_group(&p) {
            None => done.push(p),
            Some((start, end, alts)) => {
                for alt in alts.iter().rev() {
                    work.push(format!("{}{}{}", &p[..start], alt, &p[end + 1..]));
                }
            }
        }
        if done.len() + work.len() > MAX_ALTERNATIVES {
            return Err(GlobError::TooManyAlternatives(pattern.to_string()));
        }
    }
    Ok(done)
}

fn check_balance(pattern: &str) -> Result<(), GlobError> {
    let mut depth = 0usize;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '{' => depth += 1,
            '}' if depth == 0 => return Err(GlobError::UnbalancedClose(pattern.to_string())),
            '}' => depth -= 1,
            _ => {}
        }
    }
    if depth > 0 {
        return Err(GlobError::UnbalancedOpen(pattern.to_string()));
    }
    Ok(())
}

/// Byte offsets of the first top-level `{` and its matching `}`, with the
/// comma-separated alternatives between them. Assumes balance was checked.
fn first_group(p: &str) -> Option<(usize, usize, Vec<&str>)> {
    let bytes = p.as_bytes();
    let mut i = 0;
    let mut start = None;
    let mut depth = 0usize;
    let mut alt_start = 0;
    let mut alts = Vec::new();
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 1,
            b'{' => {
                depth += 1;
                if depth == 1 {
                    start = Some(i);
                    alt_start = i + 1;
                }
            }
            b',' if depth == 1 => {
                alts.push(&p[alt_start..i]);
                alt_start = i + 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    alts.push(&p[alt_start..i]);
                    return Some((start?, i, alts));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Go's `path.Clean`: collapse slashes, drop `.`, resolve `..` lexically.
pub fn clean(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                // `..` above the root is the root.
                _ if rooted => {}
                _ => parts.push(".."),
            },
            seg => parts.push(seg),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

#[derive(Debug, Clone)]
enum Tok {
    Lit(char),
    AnyChar,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Compiles a `**`-free pattern; `Err` is Go's `ErrBadPattern`.
fn compile(pat: &str) -> Result<Vec<Tok>, ()> {
    let mut toks = Vec::new();
    let mut chars = pat.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => toks.push(Tok::Star),
            '?' => toks.push(Tok::AnyChar),
            '\\' => toks.push(Tok::Lit(chars.next().ok_or(())?)),
            '[' => {
                let negated = matches!(chars.peek(), Some('!' | '^'));
                if negated {
                    chars.next();
                }
                let mut ranges = Vec::new();
                loop {
                    let lo = match chars.next().ok_or(())? {
                        ']' if !ranges.is_empty() => break,
                        ']' | '-' => return Err(()),
                        '\\' => chars.next().ok_or(())?,
                        c => c,
                    };
                    let hi = if chars.peek() == Some(&'-') {
                        chars.next();
                        match chars.next().ok_or(())? {
                            ']' | '-' => return Err(()),
                            '\\' => chars.next().ok_or(())?,
                            c => c,
                        }
                    } else {
                        lo
                    };
                    if hi < lo {
                        return Err(());
                    }
                    ranges.push((lo, hi));
                }
                toks.push(Tok::Class { negated, ranges });
            }
            c => toks.push(Tok::Lit(c)),
        }
    }
    Ok(toks)
}

/// `path.Match` without `**`: a DP over tokens × chars, so many stars stay linear
/// per row instead of backtracking exponentially.
fn wild_match(toks: &[Tok], name: &str) -> bool {
    let name: Vec<char> = name.chars().collect();
    // prev[j]: the tokens so far match name[..j].
    let mut prev = vec![false; name.len() + 1];
    prev[0] = true;
    for tok in toks {
        let mut cur = vec![false; name.len() + 1];
        if matches!(tok, Tok::Star) {
            cur[0] = prev[0];
        }
        for j in 1..=name.len() {
            let c = name[j - 1];
            cur[j] = match tok {
                Tok::Star => prev[j] || (cur[j - 1] && c != '/'),
                Tok::AnyChar => prev[j - 1] && c != '/',
                Tok::Lit(l) => prev[j - 1] && c == *l,
                Tok::Class { negated, ranges } => {
                    prev[j - 1] && (ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated)
                }
            };
        }
        prev = cur;
    }
    prev[name.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_matches_go_path_clean() {
        let cases = [
            ("", "."),
            (".", "."),
            ("./src/main.go", "src/main.go"),
            ("./src/**", "src/**"),
            ("a//b/./c/", "a/b/c"),
            ("a/../../b", "../b"),
            ("/../etc/passwd", "/etc/passwd"),
            ("/", "/"),
            ("//x", "/x"),
            ("a/b/..", "a"),
            ("..", ".."),
        ];
        for (input, want) in cases {
            assert_eq!(clean(input), want, "clean({input:?})");
        }
    }

    #[test]
    fn brace_expansion_keeps_order_and_nests() {
        assert_eq!(expand_braces("a{b,c}d").unwrap(), ["abd", "acd"]);
        assert_eq!(
            expand_braces("{x,y}/{1,2}").unwrap(),
            ["x/1", "x/2", "y/1", "y/2"]
        );
        assert_eq!(expand_braces("{a,{b,c}}").unwrap(), ["a", "b", "c"]);
        assert_eq!(expand_braces("{a}").unwrap(), ["a"]);
        assert_eq!(expand_braces("no-braces").unwrap(), ["no-braces"]);
        assert_eq!(expand_braces(r"\{a,b\}").unwrap(), [r"\{a,b\}"]);
    }

    #[test]
    fn load_time_errors_have_the_spec_wording() {
        assert_eq!(
            validate("**/{.ssh/**").unwrap_err().to_string(),
            r#"unbalanced '{' in glob "**/{.ssh/**""#
        );
        assert_eq!(
            validate("a}b").unwrap_err().to_string(),
            r#"unbalanced '}' in glob "a}b""#
        );
        let bomb = "{a,b}".repeat(13);
        assert_eq!(
            validate(&bomb).unwrap_err().to_string(),
            format!("glob \"{bomb}\" expands past the 4096-pattern limit")
        );
        // 2^12 = 4096 alternatives is exactly the limit and still loads.
        assert!(validate(&"{a,b}".repeat(12)).is_ok());
        for bad in ["[abc", "a[]", "x\\", "[z-a]", "[a-]"] {
            assert!(
                matches!(validate(bad), Err(GlobError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn matching_table() {
        let cases: &[(&str, &str, bool)] = &[
            // equality after cleaning
            ("./src/main.go", "src/main.go", true),
            ("src/main.go", "./src//main.go", true),
            ("src/main.go", "src/main.rs", false),
            // `*` and `?` stay inside one segment
            ("src/*.go", "src/main.go", true),
            ("src/*.go", "src/a/main.go", false),
            ("src/?.go", "src/a.go", true),
            ("src/?.go", "src/ab.go", false),
            ("*", "a/b", false),
            // classes, with both negation spellings and ranges
            ("file[0-9].txt", "file7.txt", true),
            ("file[0-9].txt", "fileX.txt", false),
            ("file[!0-9].txt", "fileX.txt", true),
            ("file[^0-9].txt", "file1.txt", false),
            ("[abc]", "b", true),
            ("\\*", "*", true),
            ("\\*", "x", false),
            // `**`
            ("./src/**", "./src/main.go", true),
            ("./src/**", "src/a/b/c.go", true),
            ("./src/**", "src", true),
            ("./src/**", "./etc/passwd", false),
            ("./src/**", "srcx/a", false),
            ("**/.ssh/**", "/home/u/.ssh/id_rsa", true),
            ("**/.ssh/**", ".ssh/config", true),
            ("**/.ssh/**", "/home/u/ssh/id_rsa", false),
            ("**/*.go", "a/b/c.go", true),
            ("**/*.go", "c.go", true),
            ("**/*.go", "a/b/c.rs", false),
            ("**", "/anything/at/all", true),
            ("/{etc,usr}/**", "/etc/passwd", true),
            ("/{etc,usr}/**", "/usr/bin/env", true),
            ("/{etc,usr}/**", "etc/passwd", false),
            ("/{etc,usr}/**", "/home/etc/x", false),
            ("src/*/**/*.go", "src/a/b/c/d.go", true),
            ("src/*/**/*.go", "src/d.go", false),
            // braces
            ("**/{.ssh,.aws}/**", "/root/.aws/credentials", true),
            ("**/{.ssh,.aws}/**", "/root/.azure/x", false),
            ("**/{wallet.dat,*.kdbx}", "/home/u/db.kdbx", true),
            ("**/{wallet.dat,*.kdbx}", "wallet.dat", true),
            (
                "**/{id_rsa,id_ed25519}*",
                "/home/u/.ssh/id_ed25519.pub",
                true,
            ),
            (
                "**/{*.pem,*.key,.env,.env.*}",
                "./deploy/.env.production",
                true,
            ),
            ("**/{*.pem,*.key,.env,.env.*}", "./deploy/env", false),
            ("{**/.git/**,.git/**}", ".git/config", true),
            ("{**/.git/**,.git/**}", "vendor/x/.git/HEAD", true),
            (
                "**/Library/Application Support/{Google/Chrome,Firefox}/**",
                "/Users/u/Library/Application Support/Google/Chrome/Default/Cookies",
                true,
            ),
            // malformed patterns never match
            ("**/{.ssh/**", "/home/u/.ssh/x", false),
            ("[abc", "a", false),
        ];
        for &(pattern, path, want) in cases {
            assert_eq!(matches(pattern, path), want, "glob {pattern:?} vs {path:?}");
        }
    }

    #[test]
    fn many_double_stars_match_in_work_linear_in_the_path() {
        // Fourteen `**` against 24 segments: the reference recursion tried every
        // placement of every `**` (minutes, for a path that does not match).
        let glob = Glob::new(&format!("{}b", "**/a/".repeat(14))).unwrap();
        let path = |segments: usize, last: &str| format!("{}{last}", "a/".repeat(segments - 1));
        let steps = |p: &str| {
            let mut steps = 0;
            let matched = glob.matches_counting(p, &mut steps);
            (matched, steps)
        };
        let (hit, _) = steps(&path(24, "b"));
        let (miss, at_24) = steps(&path(24, "c"));
        let (_, at_48) = steps(&path(48, "c"));
        assert!(hit && !miss);
        // One test per segment start per `**` (plus the tail's row): 15 rows of 25
        // (the whole path, 23 segment starts, the empty rest).
        assert_eq!(at_24, 15 * 25);
        // Twice the path is twice the work, not its square or worse.
        assert_eq!(at_48, 15 * 49);
        assert!(
            !glob.matches(&path(13, "b")),
            "fewer segments than the pattern names"
        );
    }

    #[test]
    fn many_stars_do_not_backtrack_exponentially() {
        // Run on a thread of its own with a deadline: a regression to backtracking
        // fails here instead of hanging the suite.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let pattern = "*a*a*a*a*a*a*a*a*a*a*a*a*b";
            let name = "a".repeat(200);
            let _ = tx.send(matches(pattern, &name));
        });
        let matched = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("twelve stars over 200 characters ended");
        assert!(!matched);
    }
}

/// The table matcher against the recursion it replaced (exponential in the number
/// of `**`, so only small cases), over generated patterns and paths.
#[cfg(test)]
mod reference_equivalence {
    use super::*;

    fn reference_simple(pat: &str, name: &str) -> bool {
        let Ok(toks) = compile(pat) else { return false };
        wild_match(&toks, name)
    }
    fn reference_alternative(pat: &str, path: &str) -> bool {
        if !pat.contains(['*', '?', '[']) {
            return pat == path;
        }
        let Some(idx) = pat.find("**") else {
            return reference_simple(pat, path);
        };
        let (pre, post) = (&pat[..idx], &pat[idx + 2..]);
        let remaining = if pre.is_empty() {
            path.to_string()
        } else {
            let pre = pre.strip_suffix('/').unwrap_or(pre);
            let pre_segs = pre.split('/').count();
            let segs: Vec<&str> = path.split('/').collect();
            if segs.len() < pre_segs || !reference_alternative(pre, &segs[..pre_segs].join("/")) {
                return false;
            }
            segs[pre_segs..].join("/")
        };
        let post = post.trim_start_matches('/');
        if post.is_empty() {
            return true;
        }
        if reference_alternative(post, &remaining) {
            return true;
        }
        remaining
            .match_indices('/')
            .any(|(i, _)| reference_alternative(post, &remaining[i + 1..]))
    }
    fn reference_matches(pattern: &str, path: &str) -> bool {
        let Ok(alts) = expand_braces(pattern) else {
            return false;
        };
        let path = clean(path);
        alts.iter()
            .any(|alt| reference_alternative(&clean(alt), &path))
    }
    #[test]
    fn the_table_matcher_agrees_with_the_reference_recursion() {
        let mut seed: u64 = 0x1234_5678;
        let mut rnd = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let pat_atoms = [
            "**", "*", "a", "b", "/", "?", "[ab]", "{a,b}", ".", "..", "x*", "*b", "a/**", "**/b",
        ];
        let path_atoms = ["a", "b", "/", "x", "ab", ".", "..", "ba", "xb"];
        let mut checked = 0;
        for _ in 0..30_000 {
            let pl = 1 + rnd(6);
            let pat: String = (0..pl).map(|_| pat_atoms[rnd(pat_atoms.len())]).collect();
            let ql = rnd(8);
            let path: String = (0..ql).map(|_| path_atoms[rnd(path_atoms.len())]).collect();
            let Ok(g) = Glob::new(&pat) else { continue };
            checked += 1;
            assert_eq!(
                g.matches(&path),
                reference_matches(&pat, &path),
                "{pat:?} vs {path:?}"
            );
        }
        assert!(checked > 3000, "only {checked} patterns compiled");
    }
}
