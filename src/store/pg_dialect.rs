//! The house dialect (`store::sql`: SQLite's spelling of portable SQL) as
//! PostgreSQL reads it, translated once per statement when it is prepared.

/// Translate the house dialect (see `store::sql`) to PostgreSQL: `?N`/`?` become
/// `$N`, two-argument `MAX`/`MIN` become `GREATEST`/`LEAST`, and `json_each(x)`
/// becomes `json_array_elements_text(CAST(CAST(x AS TEXT) AS JSON))` (whose column
/// is also named `value`). String literals and quoted names pass through untouched.
pub fn translate(sql: &str) -> String {
    let chars: Vec<char> = sql.chars().collect();
    let mut next_bare = 0usize;
    let mut out = String::with_capacity(sql.len() + 16);
    translate_span(&chars, &mut next_bare, &mut out);
    out
}

fn translate_span(chars: &[char], next_bare: &mut usize, out: &mut String) {
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' => {
                let end = quoted_end(chars, i);
                out.extend(&chars[i..end]);
                i = end;
            }
            '?' => {
                let start = i + 1;
                let mut j = start;
                while j < chars.len() && chars[j].is_ascii_digit() {
                    j += 1;
                }
                let n = if j > start {
                    let n: usize = chars[start..j]
                        .iter()
                        .collect::<String>()
                        .parse()
                        .unwrap_or(0);
                    *next_bare = (*next_bare).max(n);
                    n
                } else {
                    *next_bare += 1;
                    *next_bare
                };
                out.push('$');
                out.push_str(&n.to_string());
                i = j;
            }
            c if is_ident(c) && (i == 0 || !is_ident(chars[i - 1])) => {
                let mut j = i;
                while j < chars.len() && is_ident(chars[j]) {
                    j += 1;
                }
                let word: String = chars[i..j].iter().collect();
                let open = j < chars.len() && chars[j] == '(';
                let close = if open { matching_close(chars, j) } else { None };
                match (word.to_ascii_lowercase().as_str(), close) {
                    (name @ ("max" | "min"), Some(close))
                        if has_top_level_comma(&chars[j + 1..close]) =>
                    {
                        out.push_str(if name == "max" { "GREATEST(" } else { "LEAST(" });
                        translate_span(&chars[j + 1..close], next_bare, out);
                        out.push(')');
                        i = close + 1;
                    }
                    ("json_each", Some(close)) => {
                        out.push_str("json_array_elements_text(CAST(CAST(");
                        translate_span(&chars[j + 1..close], next_bare, out);
                        out.push_str(" AS TEXT) AS JSON))");
                        i = close + 1;
                    }
                    _ => {
                        out.push_str(&word);
                        i = j;
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The index just past the quoted run starting at `start` (doubled quotes escape).
fn quoted_end(chars: &[char], start: usize) -> usize {
    let q = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        if chars[i] == q {
            if chars.get(i + 1) == Some(&q) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    chars.len()
}

/// The index of the `)` that closes the `(` at `open`.
fn matching_close(chars: &[char], open: usize) -> Option<usize> {
    scan_parens(chars, open, |c, depth| c == ')' && depth == 0)
}

fn has_top_level_comma(chars: &[char]) -> bool {
    scan_parens(chars, 0, |c, depth| c == ',' && depth == 0).is_some()
}

/// Walks `chars` from `from`, stepping over quoted strings, and stops at the first
/// character `stop` accepts given the parenthesis depth after it.
fn scan_parens(chars: &[char], from: usize, stop: impl Fn(char, usize) -> bool) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\'' | '"' => {
                i = quoted_end(chars, i);
                continue;
            }
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if stop(chars[i], depth) {
            return Some(i);
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_house_dialect_translates_and_literals_pass_through() {
        assert_eq!(
            translate("SELECT a FROM t WHERE b = ?1 AND c IN (?, ?) AND d = '?1 it''s'"),
            "SELECT a FROM t WHERE b = $1 AND c IN ($2, $3) AND d = '?1 it''s'"
        );
        assert_eq!(
            translate("ORDER BY MAX(created_at, COALESCE(hb, 0)) DESC, MAX(id)"),
            "ORDER BY GREATEST(created_at, COALESCE(hb, 0)) DESC, MAX(id)"
        );
        assert_eq!(
            translate("SET n = min(n, ?2), m = MAX(m, ?3)"),
            "SET n = LEAST(n, $2), m = GREATEST(m, $3)"
        );
        assert_eq!(
            translate("id IN (SELECT value FROM json_each(?1))"),
            "id IN (SELECT value FROM json_array_elements_text(CAST(CAST($1 AS TEXT) AS JSON)))"
        );
        assert_eq!(translate("SELECT x_max(a, b)"), "SELECT x_max(a, b)");
    }
}
