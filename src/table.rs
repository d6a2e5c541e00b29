//! Plain-text tables aligned like Go's tabwriter with a padding of 2: every column
//! but the last is padded to its widest cell (width in characters, not bytes).
//! Cells are made inert single lines first ([`crate::text::one_line`]): agent text
//! lands in cells, and the widths must be those of what is printed.

/// Render rows (the first is usually the header) as aligned lines, each ending in `\n`.
pub fn render<R: AsRef<[String]>>(rows: &[R]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            row.as_ref()
                .iter()
                .map(|c| crate::text::one_line(c))
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = Vec::new();
    for row in &rows {
        for (i, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            let w = cell.chars().count();
            if widths.len() <= i {
                widths.resize(i + 1, 0);
            }
            widths[i] = widths[i].max(w);
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(cell);
            if i + 1 < row.len() {
                let pad = widths[i] - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Build a row from anything printable.
#[macro_export]
macro_rules! row {
    ($($cell:expr),* $(,)?) => { vec![$($cell.to_string()),*] };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_with_two_spaces_and_leaves_the_last_column_ragged() {
        let rows = vec![
            row!["ID", "AGENT", "STATUS"],
            row!["a1", "vaultfiler", "landed"],
            row!["b22", "é", "open"],
        ];
        assert_eq!(
            render(&rows),
            "ID   AGENT       STATUS\na1   vaultfiler  landed\nb22  é           open\n"
        );
        // Escapes and line breaks in a cell neither show nor count.
        let rows = vec![row!["\x1b[31mred\x1b[0m", "x"], row!["two\nlines", "y"]];
        assert_eq!(render(&rows), "red        x\ntwo lines  y\n");
    }
}
