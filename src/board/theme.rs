//! Styles by meaning, not by widget, and every glyph in one place. `mono` carries
//! state with text and modifiers only (what NO_COLOR selects); the ASCII symbol set
//! is one switch for terminals without UTF-8.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::border;

use crate::mission::Status;

/// Semantic roles. Views never name a colour; they ask for a role.
#[derive(Debug, Clone)]
pub struct Theme {
    pub state_open: Style,
    pub state_landed: Style,
    pub state_derailed: Style,
    pub state_stuck: Style,
    pub state_abandoned: Style,
    pub ask_pending: Style,
    pub warning: Style,
    pub danger: Style,
    pub muted: Style,
    pub border: Style,
    pub focus_border: Style,
    pub selection: Style,
    pub title: Style,
    pub key: Style,
    pub toast: Style,
    pub toast_error: Style,
    pub header: Style,
    /// A diff's added and removed lines.
    pub added: Style,
    pub removed: Style,
    /// The cell under a text field's cursor (patched over the field's own style).
    pub cursor: Style,
}

impl Theme {
    pub fn dark() -> Theme {
        let fg = |c| Style::new().fg(c);
        Theme {
            state_open: fg(Color::Cyan),
            state_landed: fg(Color::Green),
            state_derailed: fg(Color::Red).add_modifier(Modifier::BOLD),
            state_stuck: fg(Color::Yellow),
            state_abandoned: fg(Color::DarkGray),
            ask_pending: fg(Color::Magenta).add_modifier(Modifier::BOLD),
            warning: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            danger: fg(Color::Red).add_modifier(Modifier::BOLD),
            added: fg(Color::Green),
            removed: fg(Color::Red),
            muted: fg(Color::DarkGray),
            border: fg(Color::Gray),
            focus_border: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            selection: Style::new().bg(Color::Blue).fg(Color::White),
            title: Style::new().add_modifier(Modifier::BOLD),
            key: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            toast: Style::new().bg(Color::Blue).fg(Color::White),
            toast_error: Style::new().bg(Color::Red).fg(Color::White),
            header: Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            cursor: Style::new().add_modifier(Modifier::REVERSED),
        }
    }

    /// No colour at all: emphasis by modifiers, meaning by text.
    pub fn mono() -> Theme {
        let plain = Style::new();
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Theme {
            state_open: plain,
            state_landed: plain,
            state_derailed: bold,
            state_stuck: bold,
            state_abandoned: plain,
            ask_pending: bold,
            warning: bold,
            danger: bold,
            added: Style::new(),
            removed: Style::new().add_modifier(Modifier::DIM),
            muted: plain,
            border: plain,
            focus_border: bold,
            selection: Style::new().add_modifier(Modifier::REVERSED),
            title: bold,
            key: bold,
            toast: Style::new().add_modifier(Modifier::REVERSED),
            toast_error: Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            header: Style::new().add_modifier(Modifier::UNDERLINED),
            // Fields sit on reversed selections here, so the cursor is underlined.
            cursor: Style::new().add_modifier(Modifier::UNDERLINED | Modifier::BOLD),
        }
    }

    pub fn status(&self, s: Status) -> Style {
        match s {
            // Waiting its turn: quieter than a running mission.
            Status::Queued => self.state_abandoned,
            Status::Open => self.state_open,
            Status::Landed => self.state_landed,
            Status::Derailed => self.state_derailed,
            Status::Stuck => self.state_stuck,
            Status::Abandoned => self.state_abandoned,
        }
    }
}

/// Glyphs and borders, Unicode or ASCII.
#[derive(Debug, Clone, Copy)]
pub struct Symbols {
    pub ascii: bool,
    pub border: border::Set<'static>,
    pub ellipsis: &'static str,
    pub warn: &'static str,
    pub dot: &'static str,
    pub sep: &'static str,
    pub spinner: &'static [&'static str],
}

const ASCII_BORDER: border::Set<'static> = border::Set {
    top_left: "+",
    top_right: "+",
    bottom_left: "+",
    bottom_right: "+",
    vertical_left: "|",
    vertical_right: "|",
    horizontal_top: "-",
    horizontal_bottom: "-",
};

impl Symbols {
    pub fn unicode() -> Symbols {
        Symbols {
            ascii: false,
            border: border::ROUNDED,
            ellipsis: "…",
            warn: "⚠",
            dot: "●",
            sep: " · ",
            spinner: &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"],
        }
    }

    pub fn ascii() -> Symbols {
        Symbols {
            ascii: true,
            border: ASCII_BORDER,
            ellipsis: "~",
            warn: "!",
            dot: "*",
            sep: " - ",
            spinner: &["|", "/", "-", "\\"],
        }
    }

    /// The state badge of a mission: a glyph and the status word, so the state
    /// reads without colour (the ASCII glyphs keep the badge inside its column).
    pub fn status_badge(&self, s: Status) -> &'static str {
        match (self.ascii, s) {
            (false, Status::Queued) => "… queued",
            (false, Status::Open) => "● open",
            (false, Status::Landed) => "✓ landed",
            (false, Status::Derailed) => "✗ derailed",
            (false, Status::Stuck) => "▲ stuck",
            (false, Status::Abandoned) => "○ abandoned",
            (true, Status::Queued) => ". queued",
            (true, Status::Open) => "o open",
            (true, Status::Landed) => "+ landed",
            (true, Status::Derailed) => "x derailed",
            (true, Status::Stuck) => "! stuck",
            (true, Status::Abandoned) => "- abandoned",
        }
    }

    /// A plan entry's checkbox.
    pub fn plan_mark(&self, status: &str) -> &'static str {
        match (self.ascii, status) {
            (false, "completed") => "✓",
            (false, "in_progress") => "▸",
            (false, _) => "·",
            (true, "completed") => "[x]",
            (true, "in_progress") => "[>]",
            (true, _) => "[ ]",
        }
    }
}

/// How the board should look in this environment: NO_COLOR (non-empty) picks mono;
/// `MISSIONBOARD_ASCII=1` or a locale that is not UTF-8 picks ASCII.
pub fn from_env() -> (Theme, Symbols) {
    let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    let theme = if var("NO_COLOR").is_some() {
        Theme::mono()
    } else {
        Theme::dark()
    };
    let ascii = match var("MISSIONBOARD_ASCII").as_deref() {
        Some("1" | "true" | "yes") => true,
        Some(_) => false,
        None => !locale_is_utf8(
            var("LC_ALL")
                .or_else(|| var("LC_CTYPE"))
                .or_else(|| var("LANG")),
        ),
    };
    let symbols = if ascii {
        Symbols::ascii()
    } else {
        Symbols::unicode()
    };
    (theme, symbols)
}

/// POSIX: the first of LC_ALL, LC_CTYPE, LANG that is set decides; none is "C".
fn locale_is_utf8(locale: Option<String>) -> bool {
    locale.is_some_and(|l| {
        let l = l.to_ascii_lowercase();
        l.contains("utf-8") || l.contains("utf8")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locale_detection() {
        assert!(locale_is_utf8(Some("en_US.UTF-8".into())));
        assert!(locale_is_utf8(Some("C.utf8".into())));
        assert!(!locale_is_utf8(Some("C".into())));
        assert!(!locale_is_utf8(None));
    }
}
