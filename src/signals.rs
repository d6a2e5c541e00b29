//! The signals that end a long-lived command cleanly: SIGTERM and SIGHUP always,
//! SIGINT where Ctrl-C is a signal (a raw-mode terminal delivers it as a key).
//! A leaf: the board and `mission fire --wait` both wait on it.

use tokio::signal::unix::{Signal, SignalKind, signal};

pub struct Signals {
    term: Signal,
    hup: Signal,
    int: Option<Signal>,
}

impl Signals {
    /// SIGTERM and SIGHUP (the board: Ctrl-C arrives as a key in raw mode).
    pub fn termination() -> std::io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: None,
        })
    }

    /// SIGINT too (a command on a cooked terminal, where Ctrl-C is a signal).
    pub fn termination_or_interrupt() -> std::io::Result<Signals> {
        let mut s = Signals::termination()?;
        s.int = Some(signal(SignalKind::interrupt())?);
        Ok(s)
    }

    /// Resolves when one of the signals arrives: which one.
    pub async fn next(&mut self) -> Arrived {
        let int = async {
            match &mut self.int {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = self.term.recv() => Arrived::Terminate,
            _ = self.hup.recv() => Arrived::Hangup,
            _ = int => Arrived::Interrupt,
        }
    }
}

/// Which signal arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrived {
    Terminate,
    /// SIGHUP: for the board, its terminal went away.
    Hangup,
    Interrupt,
}
