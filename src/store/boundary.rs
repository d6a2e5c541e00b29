//! The blocking boundary: the one place async code crosses into the store.
//!
//! The store and the domain services over it (missions, asks, checkpoints, the
//! compute ledger, config, the bus, the oracle trace) are synchronous: each call
//! takes the shared connection's mutex and may then wait on SQLite's busy timeout
//! (15 s) while another process holds the write lock. A tokio worker thread that
//! waited like that would stall every task scheduled on it — another mission's ACP
//! traffic, its mission-tool server, the board's effects — for as long as the
//! foreign lock lasts.
//!
//! So async code never calls the store directly. It hands the synchronous work to
//! [`blocking`], which runs it on tokio's blocking pool and awaits the result; the
//! worker threads stay free to drive everything else. Synchronous code (the CLI's
//! one-shot commands, the board's store thread, the effects the board already runs
//! on the blocking pool) calls the services directly, as before.
//!
//! Code that cannot await at all (a trait method called mid-chain, a `Drop`) uses
//! [`blocking_in_place`] instead, saying at the call why: the worker hands its other
//! tasks to a fresh worker before it blocks. A synchronous callback that its caller
//! can run elsewhere is run through [`blocking`] by that caller instead.

/// Run store-bound work `f` off the async worker threads and await its result.
/// A panic inside `f` resumes on the caller, as if `f` had run inline.
pub async fn blocking<T, F>(f: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(out) => out,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // Only a runtime shutting down cancels blocking work before it starts; the
        // task awaiting it is being torn down with the runtime, so it waits for
        // that drop quietly (a panic here would print over a command's last words —
        // a PostgreSQL round trip leaves queued work unstarted more often than a
        // file does).
        Err(_) => std::future::pending().await,
    }
}

/// Run store-bound work `f` from synchronous code that may be running on an async
/// worker thread. On a multi-threaded runtime's worker, the worker first hands its
/// queued tasks to another thread; anywhere else `f` simply runs.
pub fn blocking_in_place<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(f),
        _ => f(),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use futures::future::BoxFuture;

    use super::*;

    type Work = Box<dyn FnOnce() -> bool + Send>;

    /// Runs `start(work)` on the only worker, where `work` waits for a task spawned
    /// once it has begun: that task can only run if the work left the worker.
    /// Bounded, so a regression fails rather than hangs.
    async fn the_next_task_runs_while_it_waits(
        start: impl FnOnce(Work) -> BoxFuture<'static, bool> + Send + 'static,
    ) {
        let (tx, rx) = mpsc::channel::<()>();
        let work: Work = Box::new(move || rx.recv_timeout(Duration::from_secs(10)).is_ok());
        let (began, begun) = tokio::sync::oneshot::channel();
        let work = tokio::spawn(async move {
            let _ = began.send(());
            start(work).await
        });
        begun.await.unwrap();
        let next = tokio::spawn(async move { tx.send(()).is_ok() });
        assert!(
            work.await.unwrap(),
            "the next task ran while the work waited"
        );
        assert!(next.await.unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn blocking_work_leaves_the_worker_free() {
        the_next_task_runs_while_it_waits(|work| Box::pin(blocking(work))).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn in_place_work_leaves_the_other_tasks_free() {
        the_next_task_runs_while_it_waits(|work| Box::pin(async move { blocking_in_place(work) }))
            .await;
    }

    #[tokio::test]
    #[should_panic(expected = "boom")]
    async fn a_panic_in_blocking_work_reaches_the_caller() {
        blocking(|| panic!("boom")).await
    }
}
