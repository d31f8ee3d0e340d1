//! The writer thread: it takes the store's commands from a queue and commits
//! them in batches (see the module docs of [`super`]).

use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use rusqlite::{params, Connection};

use super::audit::{self, DecisionRecord, OutcomeRecord};
use super::folders::{self, RecentFolderRow};
use super::rules::RuleChange;
use super::{SessionRow, StoreError, Ticket};

/// While busy, the writer commits streamed events this often. What the wait
/// leaves to chance is the last deltas of a turn that a killed hub cuts anyway
/// (it is reported interrupted after a restart); a turn's start, tool results
/// and pauses come with the agent state, which is written at once.
pub(super) const TICK: Duration = Duration::from_millis(20);
/// After this long without commands the writer checkpoints and sleeps until
/// a command wakes it…
pub(super) const SLEEP_WHEN_QUIET: Duration = Duration::from_millis(500);
/// Checkpoints (the WAL copied into the database, with an fsync: tens of
/// milliseconds) run then, or after this much was written, once the flushes
/// waiting on it are answered; SQLite's own would run inside a commit,
/// stalling a turn's end.
const CHECKPOINT_AFTER_BYTES: usize = 4 << 20;

pub(super) enum Command {
    /// `line`: the event as streamed, JSON and a newline.
    Event {
        session: String,
        seq: u64,
        line: Bytes,
        /// Committed at once (a reader waits for it), not a tick later.
        urgent: bool,
    },
    Session(SessionRow),
    /// A session deleted: its row, events and agent state go (audit rows stay).
    DeleteSession(String),
    /// A session's agent state (`None`: kept as it is) and the status it
    /// gives the pages, in one write.
    Agent {
        session: String,
        state: Option<String>,
        status: super::StatusRow,
    },
    /// Answered once everything sent before it is committed, or with the
    /// failure of any write since the last flush was answered.
    Flush(Flush),
    /// A rule saved or deleted: written at once in a transaction of its own,
    /// and answered after its commit (or with its failure).
    Rule(RuleChange),
    /// Audit rows: written with the next batch, like streamed events.
    Decision(DecisionRecord),
    Outcome(OutcomeRecord),
    /// A folder was opened: written with the next batch.
    FolderOpened(RecentFolderRow),
}

/// A flush waiting for its answer: for one session (did any of its writes
/// fail since its last flush?) or for everything (did any write fail?).
pub(super) struct Flush {
    pub(super) session: Option<String>,
    pub(super) done: tokio::sync::oneshot::Sender<Result<(), StoreError>>,
}

/// The commands waiting for the writer.
#[derive(Default)]
pub(super) struct Queue {
    state: Mutex<QueueState>,
    pub(super) wake: Condvar,
    /// The ticket of the last command the writer dealt with: everything sent up
    /// to it is on disk, but for the writes of sessions in `diverged`.
    pub(super) dealt: std::sync::atomic::AtomicU64,
    /// The same, for readers waiting on a write.
    pub(super) written: tokio::sync::watch::Sender<Ticket>,
}

#[derive(Default)]
pub(super) struct QueueState {
    pub(super) commands: Vec<Command>,
    /// The writer sleeps until a command comes.
    pub(super) asleep: bool,
    /// A command waiting should be written at once (a flush, an agent state, a rule).
    pub(super) urgent: bool,
    /// The store is gone: the writer saves what is left and stops.
    pub(super) closed: bool,
    /// Why the writes kept for a retry failed (`None`: nothing is kept).
    fault: Option<String>,
    /// Sessions with writes kept for a retry: each flush of theirs fails until
    /// the retry succeeds.
    failed_sessions: std::collections::HashSet<String>,
    /// Sessions with writes not on disk (kept for a retry): what they hold in
    /// memory is not what the database holds, so they do not leave memory.
    pub(super) diverged: std::collections::HashSet<String>,
    /// The ticket of the last command sent.
    pub(super) sent: Ticket,
}

impl Queue {
    pub(super) fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The next commands to write together, or `None` once the store is gone
    /// and all is written. Asleep, it first waits for a command; then it
    /// gathers for a tick, less if an urgent command comes. An empty batch is a
    /// quiet tick.
    /// The commands sent since the last batch, and the ticket of the last of them.
    fn next_batch(&self, asleep: bool) -> Option<(Vec<Command>, Ticket)> {
        let mut state = self.lock();
        if asleep {
            state.asleep = true;
            state = self
                .wake
                .wait_while(state, |state| state.commands.is_empty() && !state.closed)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            state.asleep = false;
        }
        state = match self.wake.wait_timeout_while(state, TICK, |state| !state.urgent && !state.closed) {
            Ok((state, _)) => state,
            Err(poisoned) => poisoned.into_inner().0,
        };
        state.urgent = false;
        if state.closed && state.commands.is_empty() {
            return None;
        }
        Some((std::mem::take(&mut state.commands), state.sent))
    }
}

pub(super) fn write_loop(mut db: Connection, queue: &Queue, path: &Path) {
    let (mut unchecked, mut quiet) = (0, Duration::ZERO);
    // The writes of batches that failed, in order: written again, before the
    // next batch's, until they succeed. Dropped, they would leave a gap (an
    // event, a session's end) that a restart reads as the truth.
    let mut kept: Vec<Command> = Vec::new();
    while let Some((batch, last)) = queue.next_batch(quiet >= SLEEP_WHEN_QUIET) {
        if batch.is_empty() {
            quiet += TICK;
            if quiet >= SLEEP_WHEN_QUIET && unchecked > 0 {
                checkpoint(&db);
                unchecked = 0;
            }
            continue;
        }
        quiet = Duration::ZERO;
        unchecked += batch.iter().map(Command::size).sum::<usize>();
        let (writes, flushes, rules) = sort(batch);
        kept.extend(writes);
        write_kept(&mut db, queue, &mut kept);
        // Each in a transaction of its own, so that its answer is its own
        // commit; a failure is told to the one who asked, who says so.
        for change in rules {
            change.apply(&mut db, path);
        }
        // Recorded before it is announced: a reader woken by it sees it.
        queue.dealt.store(last, std::sync::atomic::Ordering::Release);
        queue.written.send_replace(last);
        if !flushes.is_empty() {
            let state = queue.lock();
            for Flush { session, done } in flushes {
                // Every flush is told while writes are kept, not only the first.
                let failed = match session {
                    Some(session) => state.failed_sessions.contains(&session),
                    None => state.fault.is_some(),
                };
                let outcome = match (failed, &state.fault) {
                    (true, Some(reason)) => Err(StoreError::Write { path: path.to_path_buf(), reason: reason.clone() }),
                    _ => Ok(()),
                };
                let _ = done.send(outcome);
            }
        }
        if unchecked >= CHECKPOINT_AFTER_BYTES {
            checkpoint(&db);
            unchecked = 0;
        }
    }
    if !kept.is_empty() {
        // The store is closing: a last try, else what is lost is said.
        write_kept(&mut db, queue, &mut kept);
        if !kept.is_empty() {
            tracing::error!(writes = kept.len(), "the store closed with writes that could not be saved");
        }
    }
    if unchecked > 0 {
        checkpoint(&db);
    }
}

/// Writes what is kept (earlier failed writes, then the new ones) in one
/// transaction. On failure it is all rolled back and kept for the next try:
/// the sessions it holds are told by each flush, and stay in memory. On
/// success the database holds everything again.
fn write_kept(db: &mut Connection, queue: &Queue, kept: &mut Vec<Command>) {
    if kept.is_empty() {
        return;
    }
    let retry = queue.lock().fault.is_some();
    match write_batch(db, kept) {
        Ok(()) => {
            kept.clear();
            if retry {
                tracing::info!("saving to the database works again; the writes kept since it failed are saved");
                let mut state = queue.lock();
                state.fault = None;
                state.failed_sessions.clear();
                state.diverged.clear();
            }
        }
        Err(err) => {
            tracing::error!(writes = kept.len(), "saving to the database failed (kept to try again): {err}");
            let mut state = queue.lock();
            state.fault = Some(err.to_string());
            for session in kept.iter().filter_map(Command::session) {
                state.failed_sessions.insert(session.clone());
                state.diverged.insert(session);
            }
        }
    }
}

/// Copies what the WAL holds into the database, as far as readers allow.
fn checkpoint(db: &Connection) {
    if let Err(err) = db.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::warn!("checkpointing the database failed: {err}");
    }
}

impl Command {
    /// Written at once, not a tick later: a flush, a rule (someone waits for
    /// them), an urgent event, and the agent's state, which changes where a
    /// turn starts, runs a tool or pauses.
    pub(super) fn urgent(&self) -> bool {
        matches!(
            self,
            Command::Flush(_)
                | Command::Agent { .. }
                | Command::Event { urgent: true, .. }
                | Command::Rule(_)
                | Command::DeleteSession(_)
        )
    }

    /// Roughly what it adds to the WAL, in bytes.
    fn size(&self) -> usize {
        match self {
            Command::Event { line, .. } => line.len() + 64,
            Command::Agent { state, .. } => state.as_ref().map_or(0, String::len) + 64,
            Command::Decision(record) => record.summary.len() + record.folder.len() + 128,
            Command::Session(_)
            | Command::DeleteSession(_)
            | Command::Rule(_)
            | Command::Outcome(_)
            | Command::FolderOpened(_) => 256,
            Command::Flush(_) => 0,
        }
    }

    /// The session a write belongs to: its next flush reports a failure. (A
    /// decision or outcome not recorded is a failure of the session's writes.)
    fn session(&self) -> Option<String> {
        match self {
            Command::Event { session, .. } | Command::Agent { session, .. } => Some(session.clone()),
            Command::Session(row) => Some(row.id.clone()),
            Command::DeleteSession(session) => Some(session.clone()),
            Command::Decision(DecisionRecord { session_id, .. })
            | Command::Outcome(OutcomeRecord { session_id, .. }) => Some(session_id.clone()),
            Command::Flush(_) | Command::Rule(_) | Command::FolderOpened(_) => None,
        }
    }
}

/// A batch's writes, its flushes (answered whether or not the writes succeed)
/// and its rule changes (each written on its own), in the order they came.
fn sort(batch: Vec<Command>) -> (Vec<Command>, Vec<Flush>, Vec<RuleChange>) {
    let (mut writes, mut flushes, mut rules) = (Vec::new(), Vec::new(), Vec::new());
    for command in batch {
        match command {
            Command::Flush(flush) => flushes.push(flush),
            Command::Rule(change) => rules.push(change),
            write => writes.push(write),
        }
    }
    (writes, flushes, rules)
}

fn write_batch(db: &mut Connection, batch: &[Command]) -> rusqlite::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    let tx = db.transaction()?;
    {
        let mut event =
            tx.prepare_cached("INSERT OR REPLACE INTO events (session_id, seq, body) VALUES (?1, ?2, ?3)")?;
        let mut session = tx.prepare_cached(
            "INSERT INTO sessions (id, folder, status, yolo_override, pending_count, created_at_ms, updated_at_ms, title, agent, worktree)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT(id) DO UPDATE SET yolo_override = excluded.yolo_override,
               updated_at_ms = MAX(updated_at_ms, excluded.updated_at_ms),
               title = excluded.title, agent = excluded.agent, worktree = excluded.worktree",
        )?;
        let mut agent = tx.prepare_cached(
            "INSERT INTO agent_state (session_id, state) VALUES (?1, ?2)
             ON CONFLICT(session_id) DO UPDATE SET state = excluded.state",
        )?;
        // The status is the session's own to write (a row saved for a rename or
        // a YOLO switch leaves it); a change of status is an update, unless
        // `?3` is null (a restart's, which is not).
        let mut status = tx.prepare_cached(
            "UPDATE sessions SET updated_at_ms = CASE WHEN ?3 IS NOT NULL AND (status IS NOT ?1 OR pending_count IS NOT ?2)
                 THEN MAX(updated_at_ms, ?3) ELSE updated_at_ms END,
               status = ?1, pending_count = ?2
             WHERE id = ?4",
        )?;
        for command in batch {
            match command {
                Command::Event { session, seq, line, .. } => match std::str::from_utf8(line.trim_ascii_end()) {
                    Ok(body) => {
                        event.execute(params![session, *seq as i64, body])?;
                    }
                    Err(err) => tracing::error!(session, seq, "event not saved, not UTF-8: {err}"),
                },
                Command::Session(row) => {
                    let status = serde_json::to_value(row.status).ok().and_then(|v| v.as_str().map(str::to_string));
                    session.execute(params![
                        row.id,
                        row.folder.display().to_string(),
                        status.unwrap_or_else(|| "error".into()),
                        row.yolo_override,
                        row.pending_count as i64,
                        row.created_at_ms as i64,
                        row.updated_at_ms as i64,
                        row.title,
                        row.agent,
                        row.worktree.as_ref().and_then(|worktree| serde_json::to_string(worktree).ok()),
                    ])?;
                }
                Command::DeleteSession(id) => {
                    tx.execute("DELETE FROM events WHERE session_id = ?1", [id])?;
                    tx.execute("DELETE FROM agent_state WHERE session_id = ?1", [id])?;
                    tx.execute("DELETE FROM sessions WHERE id = ?1", [id])?;
                }
                Command::Agent { session, state: saved, status: row } => {
                    if let Some(saved) = saved {
                        agent.execute(params![session, saved])?;
                    }
                    let word = serde_json::to_value(row.status).ok().and_then(|v| v.as_str().map(str::to_string));
                    status.execute(params![
                        word.unwrap_or_else(|| "error".into()),
                        row.pending_count as i64,
                        row.updated_at_ms.map(|at| at as i64),
                        session,
                    ])?;
                }
                Command::Decision(record) => audit::insert_decision(&tx, record)?,
                Command::Outcome(record) => audit::insert_outcome(&tx, record)?,
                Command::FolderOpened(row) => folders::insert_opened(&tx, row)?,
                Command::Flush(_) | Command::Rule(_) => {}
            }
        }
    }
    tx.commit()
}
