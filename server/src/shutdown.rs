//! How the hub ends. The first Ctrl-C (SIGINT) or SIGTERM begins a graceful
//! shutdown: live streams end, running turns stop, the server lets its
//! connections close, and the store is flushed. A second signal exits at once,
//! and so does a watchdog when the graceful part has not finished in time;
//! either says which step it cut short.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::time::Instant;

use crate::hub::Hub;

/// The graceful part's bound: past it the hub exits anyway.
pub const GRACE: Duration = Duration::from_secs(5);
/// How long stopped turns get to write their end down before the store's flush.
pub const TURNS_SETTLE: Duration = Duration::from_secs(1);
/// The exit code when the watchdog cuts the shutdown short.
pub const EXIT_CUT_SHORT: i32 = 1;

/// SIGINT and SIGTERM. Listened to from before the launch line on: once
/// listened to, neither ends the process by itself any more.
pub struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

impl Signals {
    pub fn listen() -> std::io::Result<Self> {
        Ok(Self { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    /// The next signal's name and the exit code that goes with it (128 + its number).
    async fn next(&mut self) -> (&'static str, i32) {
        tokio::select! {
            Some(()) = self.interrupt.recv() => ("SIGINT", 130),
            Some(()) = self.terminate.recv() => ("SIGTERM", 143),
            // Only when the runtime is going away: nothing more will come.
            else => std::future::pending().await,
        }
    }
}

/// A step of the graceful part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownStep {
    Running,
    /// Streams were told to end; the server waits for its connections.
    Connections,
    /// Stopped turns are writing their `result` down.
    Turns,
    Store,
    Done,
}

impl fmt::Display for ShutdownStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShutdownStep::Running => "nothing (the shutdown had not begun)",
            ShutdownStep::Connections => "waiting for open connections to close (a request still in progress)",
            ShutdownStep::Turns => {
                "waiting for stopped turns to write their end (they show as interrupted after a restart)"
            }
            ShutdownStep::Store => "flushing the store (the last events may not be on disk)",
            ShutdownStep::Done => "nothing (the shutdown had finished)",
        })
    }
}

/// Where the graceful part is, shared with the task that may cut it short.
#[derive(Clone)]
pub struct Progress(Arc<Mutex<ShutdownStep>>);

impl Default for Progress {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(ShutdownStep::Running)))
    }
}

impl Progress {
    pub fn set(&self, step: ShutdownStep) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = step;
    }

    pub fn step(&self) -> ShutdownStep {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// In a task of its own: waits for the first signal and begins the hub's
/// shutdown (which also ends `axum::serve`, waiting on the hub's token). From
/// then on a second signal, or `grace` passing, exits the process at once.
pub fn on_signals(hub: Arc<Hub>, mut signals: Signals, progress: Progress, grace: Duration) {
    tokio::spawn(async move {
        let (name, _) = signals.next().await;
        tracing::info!("{name}: shutting down (Ctrl-C again exits at once)");
        progress.set(ShutdownStep::Connections);
        hub.begin_shutdown();
        // The hub is gone with this task once the graceful part is done.
        drop(hub);
        tokio::select! {
            (name, code) = signals.next() => {
                tracing::warn!("{name} again: exiting at once; cut short: {}", progress.step());
                exit_now(code);
            }
            () = tokio::time::sleep(grace) => {
                tracing::error!("the shutdown did not finish within {grace:?}: exiting; cut short: {}", progress.step());
                exit_now(EXIT_CUT_SHORT);
            }
        }
    });
}

/// Exits at once, with nothing the hub started left behind: no task is dropped
/// on this path, so every agent's whole group (wrappers and all; PDEATHSIG
/// reaches only the direct child) and every command's group still in its
/// grace gets SIGKILL first.
fn exit_now(code: i32) -> ! {
    crate::agents::acp::groups::end_all(Duration::ZERO);
    crate::tools::kill_remaining_groups();
    std::process::exit(code);
}

/// Waits, at most `within`, until no turn runs: a stopped turn writes its
/// `result` down before it lets go of its session.
pub async fn settle_turns(hub: &Hub, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let running = hub.running_turns();
        if running == 0 {
            return;
        }
        if Instant::now() >= deadline {
            tracing::warn!(running, "turns still running at exit: they show as interrupted after a restart");
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
