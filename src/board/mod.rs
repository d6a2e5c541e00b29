//! The board: the product's face. A long-lived host that embeds the fleet (missions
//! fired here live as long as it) and shows every mission in the database, from
//! any process, live.
//!
//! Shape (the Elm architecture): one UI task owns the [`model::Model`];
//! terminal events, effect results and store snapshots become [`update::Msg`]s;
//! the pure [`update::update`] returns [`update::Effect`]s that [`effects`] runs on
//! spawned tasks; a [`snapshot`] thread with its own SQLite connection publishes
//! what the visible window needs; [`view`] draws on change, at most ~30 fps.

pub mod demo;
pub mod effects;
pub mod keymap;
pub mod layout;
pub mod line;
pub mod model;
pub mod notify;
pub mod picker;
pub mod snapshot;
pub mod theme;
pub mod update;
pub mod view;

#[cfg(test)]
mod tests;

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    EventStream,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use tokio::sync::{mpsc, watch};
use tokio::time::MissedTickBehavior;

use crate::ops::host::{Host, Hosting};
use crate::paths::Paths;
use crate::signals::{Arrived, Signals};
use crate::store::Store;
use effects::Services;
use model::{Model, Query, Snapshot, TerminalRequest};
use update::{Msg, update};

/// The shortest gap between two frames drawn for snapshots (at most 125 fps): a
/// snapshot's change is drawn at once when the last frame is at least this old, else
/// on the next frame tick. A key or other terminal event is drawn at once, unpaced:
/// what the operator pressed shows without waiting on a frame tick or a store read;
/// so is the snapshot that answers it ([`answers_input`]).
pub(crate) const FRAME: Duration = Duration::from_millis(8);
/// Whether a snapshot's frame is drawn at once, as a key's is: the first snapshot
/// read for a query the operator's input changed (say, the detail of the row a key
/// selected) answers that input. Later snapshots for the same query (other
/// processes' commits) are paced by [`FRAME`], so a burst of commits cannot flood
/// the terminal. `answered` is the query of the last snapshot seen.
pub(crate) fn answers_input(answered: &mut Option<Query>, snap: &Snapshot) -> bool {
    if answered.as_ref() == Some(&snap.query) {
        return false;
    }
    *answered = Some(snap.query.clone());
    true
}

/// Ages and toast expiry move once a second.
const CLOCK: Duration = Duration::from_secs(1);

/// `missionboard board [--demo]`. Returns the exit code.
pub fn run(paths: Paths, demo: bool) -> anyhow::Result<i32> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "the board needs a terminal: run `missionboard board` in an interactive terminal (for scripts, use `missionboard mission list` and `missionboard approvals list`)"
        );
    }
    if std::env::var("TERM").is_ok_and(|t| t == "dumb") {
        anyhow::bail!(
            "the board cannot draw on TERM=dumb: run it in a terminal emulator (set TERM, e.g. xterm-256color), or use `missionboard mission list`"
        );
    }
    let paths = if demo { demo::prepare()? } else { paths };
    // The shipped envelopes are always there to be picked, whatever was deleted.
    if let Err(e) = crate::presets::seed_policies_quietly(&paths.home) {
        tracing::warn!("board: could not refresh the preset envelopes: {e}");
    }
    let runtime = crate::runtime::multi_thread()?;
    let home = paths.home.clone();
    // The store and the fleet's boot sweeps are blocking work: done here, before
    // the runtime's workers run anything.
    let opened = {
        // Entered, so the host's fleet starts reaping resting units at once.
        let _entered = runtime.enter();
        Opened::open(&paths, demo)?
    };
    let code = runtime.block_on(host(paths, demo, opened));
    // From here on a task still running is being torn down with the runtime: one
    // that was inside a store call when the board quit may wake to a timer that is
    // already shut down and panic. That must not turn a clean quit into exit 101.
    QUITTING.store(true, Ordering::SeqCst);
    // Units that ignore their cancel must not hold the exit hostage.
    runtime.shutdown_timeout(Duration::from_secs(2));
    if demo {
        let said = demo::leave(&home, demo::is_scratch());
        if !TERMINAL_LOST.load(Ordering::SeqCst) {
            println!("{said}");
        }
    }
    code
}

/// What the board hosts with, opened before its runtime starts.
struct Opened {
    notify: notify::Notify,
    host: Host,
    beta: bool,
}

impl Opened {
    fn open(paths: &Paths, demo: bool) -> anyhow::Result<Opened> {
        let db = paths.db_path();
        // The demo's scratch home is always its own file; anything else follows store-url.
        let location = if demo {
            crate::store::Location::File(db.clone())
        } else {
            crate::config::store_location(&db).map_err(anyhow::Error::msg)?
        };
        let store = Store::open_at(&location)?;
        let notify = notify::Notify::from_config(
            &crate::config::Config::new(store.clone())
                .get(crate::config::NOTIFY)
                .ok()
                .flatten()
                .unwrap_or_default(),
        );
        let host = Host::open(paths, &store, Hosting::Units)?;
        Ok(Opened {
            notify,
            host,
            beta: crate::config::beta_enabled(&db),
        })
    }
}

async fn host(paths: Paths, demo: bool, opened: Opened) -> anyhow::Result<i32> {
    let Opened { notify, host, beta } = opened;
    // SIGTERM and SIGHUP are the board's before it starts anything (the settler may
    // resume a run, the demo fires): one arriving at any moment ends it through the
    // loop's clean exit, never by the default disposition. Ctrl-C arrives as a key.
    let signals = Signals::termination()?;
    let (query_tx, query_rx) = watch::channel(Query::default());
    let (snap_tx, snap_rx) = watch::channel(Arc::new(Snapshot::default()));
    let probe_host = host.clone();
    let store_thread = snapshot::spawn(
        host.clone(),
        Box::new(move || (probe_host.open_units(), probe_host.units_memory())),
        beta,
        query_rx,
        snap_tx,
    )?;
    let (theme, symbols) = theme::from_env();
    let (tx, rx) = mpsc::unbounded_channel::<Msg>();
    let svc = Services::new(host.clone());
    let settler = effects::spawn_settler(&svc, tx.clone());
    // A board hosts units, so it ticks the schedules as every live
    // `missionboard host` does: each tick claimed once across all of them.
    let ticking = {
        let tx = tx.clone();
        tokio::spawn(crate::ops::schedule::run(
            host.clone(),
            std::future::pending(),
            move |t| {
                let _ = tx.send(Msg::Toast {
                    text: crate::text::one_line(&format!("schedule {}: {}", t.schedule, t.outcome)),
                    error: false,
                });
            },
        ))
    };

    let mut term = TerminalGuard::enter()?;
    let size = term.terminal.size()?;
    let mut model = Model::new(theme, symbols, Rect::new(0, 0, size.width, size.height));
    model.host.log_dir = Some(paths.log_dir());
    model.host.notify = notify;
    if demo {
        model.host.demo_home = Some(paths.home.clone());
        tokio::spawn(demo::fire_all(host.clone(), tx.clone()));
    }
    let snapshots = SnapshotLink { query_tx, snap_rx };
    let ending = event_loop(&mut term, &mut model, &svc, (tx, rx), snapshots, signals).await;
    settler.abort();
    ticking.abort();
    if let Ok(Ending::TerminalLost(why)) = &ending {
        lose_terminal();
        tracing::error!(
            "board: the terminal went away ({why}); leaving as quitting would: this board's units stop, their missions stay open for a later board or host, and the terminal was not touched"
        );
        // Its drop would write a cursor restore to the dead terminal.
        std::mem::forget(term);
    } else {
        term.leave();
    }
    // The store thread ends once the query sender is gone (dropped by the loop).
    let _ = tokio::task::spawn_blocking(move || store_thread.join()).await;
    host.close("the board quit").await;
    ending.map(|e| match e {
        Ending::Quit => 0,
        Ending::TerminalLost(_) => 1,
    })
}

/// How the event loop ended.
enum Ending {
    /// The operator quit, or a SIGTERM asked the board to.
    Quit,
    /// The terminal went away (a hangup, a read or write that failed): why.
    TerminalLost(String),
}

/// Set once the board's terminal went away: nothing is written to it again.
static TERMINAL_LOST: AtomicBool = AtomicBool::new(false);

/// The terminal is gone: never restore it (there is nothing to restore), and point
/// its descriptors at /dev/null, so a library's last words (a failed `eprintln!`
/// panics) cannot turn a clean leave into a crash.
fn lose_terminal() {
    use std::os::fd::AsRawFd;
    TERMINAL_LOST.store(true, Ordering::SeqCst);
    TERMINAL_ACTIVE.store(false, Ordering::SeqCst);
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    for fd in 0..=2 {
        // SAFETY: fstat into a zeroed stat we own, then dup2 of a descriptor we hold
        // over one of the standard three; no memory is shared.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFCHR {
                libc::dup2(null.as_raw_fd(), fd);
            }
        }
    }
}

/// Does this terminal error mean the terminal itself is gone?
fn terminal_gone(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::ENXIO | libc::EBADF | libc::ENOTTY)
    ) || matches!(
        e.kind(),
        std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::BrokenPipe
    )
}

/// The board's side of the snapshot thread: what it should read, what it read.
struct SnapshotLink {
    query_tx: watch::Sender<Query>,
    snap_rx: watch::Receiver<Arc<Snapshot>>,
}

/// One frame of the whole board.
fn draw(term: &mut TerminalGuard, model: &Model) -> anyhow::Result<()> {
    let now = model.now_ms;
    term.terminal.draw(|f| view::draw(f, model, now))?;
    Ok(())
}

async fn event_loop(
    term: &mut TerminalGuard,
    model: &mut Model,
    svc: &Services,
    (tx, mut rx): (mpsc::UnboundedSender<Msg>, mpsc::UnboundedReceiver<Msg>),
    SnapshotLink {
        query_tx,
        mut snap_rx,
    }: SnapshotLink,
    mut signals: Signals,
) -> anyhow::Result<Ending> {
    let mut events = EventStream::new();
    let mut frame = tokio::time::interval(FRAME);
    frame.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut clock = tokio::time::interval(CLOCK);
    clock.set_missed_tick_behavior(MissedTickBehavior::Skip);
    let mut dirty = true;
    // The operator's own input waits for no frame tick.
    let mut pressed = false;
    let mut last_draw: Option<std::time::Instant> = None;
    let mut answered: Option<Query> = None;
    query_tx.send_replace(model.query());
    loop {
        if dirty && (pressed || last_draw.is_none_or(|t| t.elapsed() >= FRAME)) {
            if let Err(e) = draw(term, model) {
                return Ok(Ending::TerminalLost(format!("drawing on it failed: {e}")));
            }
            last_draw = Some(std::time::Instant::now());
            dirty = false;
            pressed = false;
        }
        let msg = tokio::select! {
            _ = frame.tick() => {
                if model.redraw {
                    if let Err(e) = term.repaint() {
                        return Ok(Ending::TerminalLost(format!("repainting it failed: {e}")));
                    }
                    model.redraw = false;
                    dirty = true;
                }
                continue;
            }
            _ = clock.tick() => {
                // Read without the store: its calls wait while it is away.
                model.store_outage_since = crate::store::pg_outage::outage_since();
                Msg::Tick(crate::clock::now_ms())
            }
            ev = events.next() => match ev {
                Some(Ok(ev)) => Msg::Term(ev),
                Some(Err(e)) if terminal_gone(&e) => {
                    return Ok(Ending::TerminalLost(format!("reading from it failed: {e}")));
                }
                Some(Err(e)) => {
                    tracing::warn!("board: terminal event error: {e}");
                    continue;
                }
                None => return Ok(Ending::TerminalLost("its input ended".into())),
            },
            Ok(()) = snap_rx.changed() => Msg::Snapshot(snap_rx.borrow_and_update().clone()),
            Some(msg) = rx.recv() => msg,
            arrived = signals.next() => {
                if arrived == Arrived::Hangup {
                    return Ok(Ending::TerminalLost("SIGHUP: it hung up".into()));
                }
                tracing::info!("board: signal received, leaving");
                break;
            }
        };
        pressed = match &msg {
            Msg::Term(_) => true,
            Msg::Snapshot(snap) => answers_input(&mut answered, snap),
            _ => false,
        };
        for effect in update(model, msg) {
            effects::spawn(effect, svc, tx.clone());
        }
        dirty = true;
        for alert in model.alerts.drain(..) {
            notify::deliver(&model.host.notify, &alert, term.terminal.backend_mut());
        }
        if let Some(request) = model.terminal_request.take() {
            // crossterm's reader thread would steal the editor's (or the shell's)
            // keystrokes: stop it for the hand-over, start a fresh one after.
            drop(events);
            match request {
                TerminalRequest::Suspend => term.hand_over(|| {
                    // Stop our whole process group, as the terminal's own ^Z would (raw
                    // mode turned that off), so a wrapper script stops with us and the
                    // shell's `fg` continues both. Units run in their own groups.
                    // SAFETY: kill(2) on our own group; no memory is involved.
                    unsafe { libc::kill(0, libc::SIGTSTP) };
                })?,
                TerminalRequest::Edit { ask_id, text } => {
                    let dir = svc.host.paths().run_dir();
                    let result = term.hand_over(|| edit_in_editor(&dir, &ask_id, &text))?;
                    let _ = tx.send(Msg::Edited { ask_id, result });
                }
            }
            events = EventStream::new();
            model.redraw = true;
        }
        let q = model.query();
        query_tx.send_if_modified(|cur| {
            if *cur != q {
                *cur = q;
                true
            } else {
                false
            }
        });
        if model.quit {
            break;
        }
    }
    Ok(Ending::Quit)
}

/// Whether this process holds the terminal in board mode (so restore runs once).
static TERMINAL_ACTIVE: AtomicBool = AtomicBool::new(false);

/// Undo everything `enter` did. Safe to call twice and from the panic hook:
/// ratatui's own restore leaves mouse capture and bracketed paste on.
fn restore_terminal() {
    if !TERMINAL_ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    let _ = crossterm::execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<std::io::Stdout>>,
}

/// Put the terminal in board mode; on failure, leave it as it was.
fn take_terminal() -> std::io::Result<()> {
    enable_raw_mode()?;
    TERMINAL_ACTIVE.store(true, Ordering::SeqCst);
    let entered = crossterm::execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        EnableMouseCapture,
        EnableBracketedPaste
    );
    if entered.is_err() {
        restore_terminal();
    }
    entered
}

impl TerminalGuard {
    fn enter() -> anyhow::Result<TerminalGuard> {
        install_panic_hook();
        take_terminal()?;
        let terminal = match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
            Ok(t) => t,
            Err(e) => {
                restore_terminal();
                return Err(e.into());
            }
        };
        Ok(TerminalGuard { terminal })
    }

    fn leave(&mut self) {
        restore_terminal();
    }

    /// Clear the screen and draw everything afresh on the next frame. Not
    /// `Terminal::clear`: it queries the cursor position, whose answer the live
    /// `EventStream` swallows, so it stalls two seconds and fails.
    fn repaint(&mut self) -> anyhow::Result<()> {
        let size = self.terminal.size()?;
        self.terminal
            .resize(Rect::new(0, 0, size.width, size.height))?;
        Ok(())
    }

    /// Give the terminal back to the shell while `f` runs (an editor, a suspend),
    /// then take it again; the caller asks for a repaint.
    fn hand_over<T>(&mut self, f: impl FnOnce() -> T) -> anyhow::Result<T> {
        restore_terminal();
        let out = tokio::task::block_in_place(f);
        take_terminal()?;
        Ok(out)
    }
}

/// Edit `text` in `$VISUAL`, else `$EDITOR`, else `vi`, through a file in the run
/// directory; the new text, or why the draft stays as it was.
fn edit_in_editor(run_dir: &std::path::Path, ask_id: &str, text: &str) -> Result<String, String> {
    let editor = ["VISUAL", "EDITOR"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|e| !e.trim().is_empty()))
        .unwrap_or_else(|| "vi".to_string());
    let file = run_dir.join(format!("answer-{ask_id}.md"));
    let unchanged = |why: String| format!("{why}; the draft is unchanged");
    std::fs::create_dir_all(run_dir)
        .and_then(|()| std::fs::write(&file, text))
        .map_err(|e| unchanged(format!("cannot write {}: {e}", file.display())))?;
    // Through the shell, so an editor given with arguments (`code -w`) works.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(&file)
        .status();
    let result = match status {
        Ok(s) if s.success() => std::fs::read_to_string(&file)
            .map_err(|e| unchanged(format!("cannot read {}: {e}", file.display()))),
        Ok(s) => Err(unchanged(format!("the editor `{editor}` exited with {s}"))),
        Err(e) => Err(unchanged(format!("cannot run the editor `{editor}`: {e}"))),
    };
    let _ = std::fs::remove_file(&file);
    result
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Set once the board has quit and its runtime is shutting down.
static QUITTING: AtomicBool = AtomicBool::new(false);

/// A panic anywhere — including a spawned task, which tokio would otherwise
/// survive headless on a cooked terminal — restores the terminal, reports, and
/// ends the process; once the board has quit, a task's panic in the teardown is only
/// logged.
fn install_panic_hook() {
    static INSTALLED: AtomicBool = AtomicBool::new(false);
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if QUITTING.load(Ordering::SeqCst) {
            tracing::debug!(panic = %info, "board: a task panicked while the runtime shut down");
            return;
        }
        restore_terminal();
        tracing::error!(panic = %info, "board: panic; exiting");
        previous(info);
        std::process::exit(101);
    }));
}
