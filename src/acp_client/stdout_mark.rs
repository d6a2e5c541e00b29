//! How far the host has read a unit's stdout. A unit talks to the host on two
//! channels — ACP updates on its stdout, mission tool calls on its MCP socket — and
//! nothing orders one against the other on arrival. A verdict that ends a mission
//! must be judged on everything the unit said before it: [`StdoutMark::caught_up`]
//! waits until every byte that was on the unit's stdout when it is called has been
//! read, framed and shown to the tap (the budget counts there, in order, before the
//! connection dispatches the line).

use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio::net::unix::pipe::Receiver as UnitStdout;
use tokio::sync::watch;

use super::UnitEvent;
use crate::sync::LockUnpoisoned;

/// What a tap does with each update the unit sends, as its line is read.
pub type Tap = Box<dyn Fn(&UnitEvent) + Send + Sync>;

/// Bytes of the unit's stdout the reader took from the pipe, and whether the pipe is
/// gone (its descriptor must not be asked about once closed).
#[derive(Default)]
struct Taken {
    bytes: u64,
    closed: bool,
}

pub struct StdoutMark {
    fd: RawFd,
    taken: Mutex<Taken>,
    /// Bytes framed and shown to the tap (`u64::MAX` once the pipe closed).
    handled: watch::Sender<u64>,
    tap: OnceLock<Tap>,
}

impl StdoutMark {
    pub(super) fn new(stdout: &UnitStdout) -> Arc<StdoutMark> {
        Arc::new(StdoutMark {
            fd: stdout.as_raw_fd(),
            taken: Mutex::default(),
            handled: watch::channel(0).0,
            tap: OnceLock::new(),
        })
    }

    /// Show every later update to `tap` as its line is read (set once; later calls
    /// are ignored).
    pub fn set_tap(&self, tap: Tap) {
        let _ = self.tap.set(tap);
    }

    /// Wait (at most `within`) until every byte on the unit's stdout now has been
    /// read and shown to the tap. False when the wait ran out.
    pub async fn caught_up(&self, within: Duration) -> bool {
        let target = {
            let taken = self.taken.lock_unpoisoned();
            if taken.closed {
                return true;
            }
            // Under the lock the reader cannot take bytes from the pipe: what it took
            // plus what still waits in the pipe is everything written so far.
            taken.bytes + pending_bytes(self.fd)
        };
        let mut handled = self.handled.subscribe();
        tokio::time::timeout(within, handled.wait_for(|h| *h >= target))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    /// Bytes taken from the pipe so far.
    pub(super) fn taken(&self) -> u64 {
        self.taken.lock_unpoisoned().bytes
    }

    /// A line the reader framed: the tap sees its update first.
    pub(super) fn line(&self, message: &str) {
        if let Some(tap) = self.tap.get()
            && let Some(event) = super::frame::decode_update(message)
        {
            tap(&event);
        }
    }

    /// Everything up to byte `offset` of the stream has been handled.
    pub(super) fn handled(&self, offset: u64) {
        self.handled.send_if_modified(|h| {
            let grew = offset > *h;
            *h = (*h).max(offset);
            grew
        });
    }

    /// The pipe is gone: nothing more will come, and nobody need wait.
    pub(super) fn close(&self) {
        self.taken.lock_unpoisoned().closed = true;
        self.handled(u64::MAX);
    }
}

/// Bytes waiting in the pipe behind `fd` (0 when it cannot be asked).
fn pending_bytes(fd: RawFd) -> u64 {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer; `fd` is open (the reader
    // that owns it marks the mark closed, under the same lock, before it drops it).
    let rc = unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n as *mut libc::c_int) };
    if rc == 0 { n.max(0) as u64 } else { 0 }
}

/// The unit's stdout, counting the bytes taken from it.
pub(super) struct CountedStdout {
    inner: UnitStdout,
    mark: Arc<StdoutMark>,
}

impl CountedStdout {
    pub fn new(inner: UnitStdout, mark: Arc<StdoutMark>) -> CountedStdout {
        CountedStdout { inner, mark }
    }
}

impl AsyncRead for CountedStdout {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        // The read and its count move together under the lock `caught_up` takes.
        let mut taken = this.mark.taken.lock_unpoisoned();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            taken.bytes += (buf.filled().len() - before) as u64;
        }
        polled
    }
}

impl Drop for CountedStdout {
    fn drop(&mut self) {
        self.mark.close();
    }
}
