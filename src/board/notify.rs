//! Telling an operator who is in another window that something waits on them: the
//! terminal bell, an OSC 9 or OSC 777 desktop notification, and `notify-send`, as the
//! `notify` config key says. What goes into an escape sequence is agent text, so it
//! is made inert first: nothing in it can end the sequence or start another.

use std::io::Write;

use crate::config::NOTIFY_CHANNELS;

/// The channels `notify` turned on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Notify {
    pub bell: bool,
    /// OSC 9 (iTerm2, Windows Terminal, kitty, WezTerm, Ghostty, ConEmu).
    pub osc9: bool,
    /// OSC 777 (rxvt-unicode, foot, WezTerm, Ghostty, VTE terminals).
    pub osc777: bool,
    /// `notify-send`, where it is installed.
    pub desktop: bool,
}

impl Notify {
    /// From the key's stored value (`off`, or channels joined by commas); a name
    /// the key does not know turns nothing on.
    pub fn from_config(value: &str) -> Notify {
        let on = |name: &str| {
            NOTIFY_CHANNELS.contains(&name) && value.split(',').any(|v| v.trim() == name)
        };
        Notify {
            bell: on("bell"),
            osc9: on("osc"),
            osc777: on("osc777"),
            desktop: on("desktop"),
        }
    }

    pub fn is_off(&self) -> bool {
        *self == Notify::default()
    }
}

/// One announcement: a new question or gated call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    pub title: String,
    pub body: String,
}

/// How much of an agent's text a notification carries.
const BODY_CHARS: usize = 200;

/// `text` fit for the inside of an OSC string: one line, every control gone (BEL,
/// ESC, the C1 string terminator ST and its kin), and no `;`, which separates the
/// fields of OSC 777 and which some terminals split OSC 9 on.
pub fn osc_text(text: &str) -> String {
    crate::text::excerpt(text, BODY_CHARS).replace(';', ",")
}

/// The bytes the terminal is sent for `alert` under `notify` (empty: none).
pub fn terminal_bytes(notify: &Notify, alert: &Alert) -> String {
    let (title, body) = (osc_text(&alert.title), osc_text(&alert.body));
    let mut out = String::new();
    if notify.bell {
        out.push('\x07');
    }
    if notify.osc9 {
        out.push_str(&format!("\x1b]9;{title}: {body}\x07"));
    }
    if notify.osc777 {
        out.push_str(&format!("\x1b]777;notify;{title};{body}\x07"));
    }
    out
}

/// Deliver `alert`: its bytes to the terminal `out`, and `notify-send` when asked
/// for and present. Neither may fail the board: a broken write or a missing program
/// is only logged.
pub fn deliver(notify: &Notify, alert: &Alert, out: &mut impl Write) {
    let bytes = terminal_bytes(notify, alert);
    if !bytes.is_empty()
        && let Err(e) = out.write_all(bytes.as_bytes()).and_then(|()| out.flush())
    {
        tracing::warn!("board: could not write a notification to the terminal: {e}");
    }
    if notify.desktop {
        desktop(alert);
    }
}

/// `notify-send <title> <body>` off the UI thread, if it is on PATH.
fn desktop(alert: &Alert) {
    let Some(program) = crate::paths::locate_program("notify-send", None) else {
        tracing::debug!("board: notify = desktop, but notify-send is not on PATH");
        return;
    };
    let (title, body) = (
        crate::text::one_line(&alert.title),
        crate::text::excerpt(&alert.body, BODY_CHARS),
    );
    let spawned = std::thread::Builder::new()
        .name("notify-send".into())
        .spawn(move || {
            let status = std::process::Command::new(&program)
                .arg("--app-name=missionboard")
                .arg("--")
                .arg(&title)
                .arg(&body)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
            if let Err(e) = status {
                tracing::warn!("board: notify-send failed: {e}");
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("board: could not start notify-send: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Notify {
        Notify::from_config("bell,osc,osc777,desktop")
    }

    #[test]
    fn the_config_value_names_the_channels() {
        assert!(Notify::from_config("off").is_off());
        assert!(Notify::from_config("").is_off());
        let n = Notify::from_config("bell,osc777");
        assert!(n.bell && n.osc777 && !n.osc9 && !n.desktop);
        let a = all();
        assert!(a.bell && a.osc9 && a.osc777 && a.desktop);
    }

    #[test]
    fn each_channel_writes_its_sequence() {
        let alert = Alert {
            title: "missionboard".into(),
            body: "question from stub (mission a1b2c3d4): Rename it?".into(),
        };
        assert_eq!(
            terminal_bytes(&all(), &alert),
            "\x07\x1b]9;missionboard: question from stub (mission a1b2c3d4): Rename it?\x07\x1b]777;notify;missionboard;question from stub (mission a1b2c3d4): Rename it?\x07"
        );
        assert_eq!(terminal_bytes(&Notify::from_config("off"), &alert), "");
    }

    #[test]
    fn agent_text_cannot_end_or_start_a_sequence() {
        let alert = Alert {
            title: "t;itle\x07".into(),
            body: "a\x07b\x1b]9;pwned\x1b\\c\u{9c}d\u{9d}0;x\x07e;f\nnext\rline\x1b[31mred".into(),
        };
        let bytes = terminal_bytes(&Notify::from_config("osc,osc777"), &alert);
        assert_eq!(
            bytes,
            "\x1b]9;t,itle: abcde,f nextlinered\x07\x1b]777;notify;t,itle;abcde,f nextlinered\x07"
        );
        let inside: Vec<&str> = bytes.split('\x07').collect();
        // Two sequences, each one ESC ] … BEL with no control inside.
        assert_eq!(inside.len(), 3, "{bytes:?}");
        for seq in &inside[..2] {
            let body = seq.strip_prefix("\x1b]").expect("starts an OSC");
            assert!(!body.chars().any(char::is_control), "{body:?}");
        }
    }
}
