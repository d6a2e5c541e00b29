//! The board's single-line text fields — the filter, the command line, the stop
//! reason, the picker's intent and the help filter — are one-line
//! `ratatui_textarea::TextArea`s, so each has the answer box's cursor, word motions
//! (M-f/M-b, C-←/C-→), kill and yank (C-w, C-k, C-y) and undo (C-u).
//!
//! Enter, Esc and Tab belong to the mode (submit, cancel, next); a field never holds
//! a line break: typed line breaks do nothing, and a pasted multi-line text arrives
//! as one line, its breaks folded into spaces (the same rule as every one-line cell).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::TextArea;

use crate::text::one_line;

#[derive(Clone)]
pub struct LineField {
    area: TextArea<'static>,
}

impl LineField {
    pub fn new() -> LineField {
        let mut area = TextArea::default();
        // Tab is never text here: it moves between a mode's parts, or does nothing.
        area.set_tab_length(0);
        LineField { area }
    }

    /// A field holding `text` (one line of it), the cursor at its end.
    pub fn with_text(text: &str) -> LineField {
        let mut f = LineField::new();
        f.area.insert_str(one_line(text));
        f
    }

    pub fn as_str(&self) -> &str {
        self.area.lines().first().map_or("", String::as_str)
    }

    pub fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }

    pub fn clear(&mut self) {
        *self = LineField::new();
    }

    /// The text, leaving the field empty.
    pub fn take(&mut self) -> String {
        let text = self.as_str().to_string();
        self.clear();
        text
    }

    /// An editing key; whether the text changed. Line breaks are refused.
    pub fn input(&mut self, key: KeyEvent) -> bool {
        // The keys a text area turns into a newline (C-j deletes to the line's start).
        let line_break = match key.code {
            KeyCode::Enter | KeyCode::Char('\n' | '\r') => true,
            KeyCode::Char('m') => key.modifiers.contains(KeyModifiers::CONTROL),
            _ => false,
        };
        if line_break {
            return false;
        }
        self.area.input(key)
    }

    /// Pasted text, folded to one line; whether the text changed.
    pub fn paste(&mut self, text: &str) -> bool {
        self.area.insert_str(one_line(&line_breaks(text)))
    }

    /// The text before and after the cursor.
    pub fn split_at_cursor(&self) -> (&str, &str) {
        let text = self.as_str();
        let col = self.area.cursor().1;
        let at = text.char_indices().nth(col).map_or(text.len(), |(i, _)| i);
        text.split_at(at)
    }
}

/// Pasted text with every line break as `\n`: a terminal's paste may carry `\r\n`
/// or a bare `\r` (what Enter sends), and each is a break the operator sees.
pub fn line_breaks(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

impl Default for LineField {
    fn default() -> Self {
        LineField::new()
    }
}

impl From<&str> for LineField {
    fn from(text: &str) -> Self {
        LineField::with_text(text)
    }
}

impl From<String> for LineField {
    fn from(text: String) -> Self {
        LineField::from(text.as_str())
    }
}

/// Two fields are equal when they hold the same text with the cursor at the same
/// place (the undo history is not part of what the operator sees).
impl PartialEq for LineField {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() && self.area.cursor() == other.area.cursor()
    }
}

impl Eq for LineField {}

impl PartialEq<&str> for LineField {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Debug for LineField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (before, after) = self.split_at_cursor();
        write!(f, "{before:?}|{after:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(f: &mut LineField, code: KeyCode, mods: KeyModifiers) -> bool {
        f.input(KeyEvent::new(code, mods))
    }

    #[test]
    fn a_field_edits_at_its_cursor_with_word_motions() {
        let mut f = LineField::from("land the notes");
        assert_eq!(f.split_at_cursor(), ("land the notes", ""));
        key(&mut f, KeyCode::Char('b'), KeyModifiers::ALT);
        key(&mut f, KeyCode::Char('w'), KeyModifiers::CONTROL);
        assert_eq!(f, "land notes");
        key(&mut f, KeyCode::Home, KeyModifiers::NONE);
        key(&mut f, KeyCode::Char('>'), KeyModifiers::NONE);
        assert_eq!(f.split_at_cursor(), (">", "land notes"));
        key(&mut f, KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(f, "land notes");
        key(&mut f, KeyCode::Char('f'), KeyModifiers::ALT);
        key(&mut f, KeyCode::Char('j'), KeyModifiers::CONTROL);
        assert_eq!(f.split_at_cursor(), ("", "notes"));
    }

    #[test]
    fn a_field_never_takes_a_line_break() {
        let mut f = LineField::from("one");
        for (code, mods) in [
            (KeyCode::Enter, KeyModifiers::NONE),
            (KeyCode::Char('m'), KeyModifiers::CONTROL),
            (KeyCode::Char('\n'), KeyModifiers::NONE),
            (KeyCode::Tab, KeyModifiers::NONE),
        ] {
            assert!(!key(&mut f, code, mods), "{code:?} {mods:?}");
        }
        f.clear();
        assert!(f.paste("one\r\ntwo\rthree\n"));
        assert_eq!(f, "one two three");
        assert_eq!(f.take(), "one two three");
        assert!(f.is_empty());
    }
}
