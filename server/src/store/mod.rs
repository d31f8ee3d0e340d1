//! The hub's SQLite database: sessions, every event with its seq, and the
//! built-in agent's state (conversation, pending approvals). WAL mode.
//!
//! Writes go to one writer thread. While the hub is busy the writer commits
//! streamed events every few milliseconds, so thousands of deltas cost few
//! commits; a flush or an agent state is committed at once. Senders wake the
//! writer only for those or after a quiet spell put it to sleep: a thread's
//! wake-up costs tens of microseconds on a VM, and a turn sends several
//! commands at its start.
//! [`Store::flush`] waits until everything sent before it is on disk: the agent
//! calls it before a pause or the end of a turn is announced.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use app::events::{AgentEvent, SeqEvent};
use app::types::SessionStatus;
use axum::body::Bytes;
use rusqlite::{params, Connection, OptionalExtension};

/// Migrations in order; `PRAGMA user_version` says how many ran.
const MIGRATIONS: &[&str] = &[include_str!("../migrations/001_init.sql")];
/// While busy, the writer commits streamed events this often. What the wait
/// leaves to chance is the last deltas of a turn that a killed hub cuts anyway
/// (it is reported interrupted after a restart); a turn's start, tool results
/// and pauses come with the agent state, which is written at once.
const TICK: Duration = Duration::from_millis(20);
/// After this long without commands the writer checkpoints and sleeps until
/// a command wakes it…
const SLEEP_WHEN_QUIET: Duration = Duration::from_millis(500);
/// Checkpoints (the WAL copied into the database, with an fsync: tens of
/// milliseconds) run then, or after this much was written, once the flushes
/// waiting on it are answered; SQLite's own would run inside a commit,
/// stalling a turn's end.
const CHECKPOINT_AFTER_BYTES: usize = 4 << 20;

/// What went wrong with the database, said so that the user can act on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the data dir {path}: {reason}")]
    DataDir { path: PathBuf, reason: String },
    #[error("cannot open the database {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    /// A write failed (disk full, read-only, locked): what it held is not on disk.
    #[error("saving to {path} failed: {reason}")]
    Write { path: PathBuf, reason: String },
    #[error("the database writer has stopped")]
    Closed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRow {
    pub id: String,
    pub folder: PathBuf,
    pub status: SessionStatus,
    pub yolo_override: Option<bool>,
    pub pending_count: usize,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
}

enum Command {
    /// `line`: the event as streamed, JSON and a newline.
    Event {
        session: String,
        seq: u64,
        line: Bytes,
        /// Committed at once (a reader waits for it), not a tick later.
        urgent: bool,
    },
    Session(SessionRow),
    Agent {
        session: String,
        state: String,
    },
    /// Answered once everything sent before it is committed, or with the
    /// failure of any write since the last flush was answered.
    Flush(Flush),
}

/// A flush waiting for its answer: for one session (did any of its writes
/// fail since its last flush?) or for everything (did any write fail?).
struct Flush {
    session: Option<String>,
    done: tokio::sync::oneshot::Sender<Result<(), StoreError>>,
}

pub struct Store {
    path: PathBuf,
    queue: Arc<Queue>,
    writer: Option<std::thread::JoinHandle<()>>,
    reader: Mutex<Connection>,
}

/// The commands waiting for the writer.
#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    wake: Condvar,
    /// The ticket of the last command the writer dealt with: everything sent up
    /// to it is on disk, but for the writes of sessions in `diverged`.
    dealt: std::sync::atomic::AtomicU64,
    /// The same, for readers waiting on a write.
    written: tokio::sync::watch::Sender<Ticket>,
}

/// A command's place in the writer's queue: [`Store::settled`] says whether the writer dealt with it.
pub type Ticket = u64;

#[derive(Default)]
struct QueueState {
    commands: Vec<Command>,
    /// The writer sleeps until a command comes.
    asleep: bool,
    /// A command waiting should be written at once (a flush, an agent state).
    urgent: bool,
    /// The store is gone: the writer saves what is left and stops.
    closed: bool,
    /// A write failed and no flush for everything has reported it yet.
    fault: Option<String>,
    /// Sessions with a write that failed that no flush of theirs has reported yet.
    failed_sessions: std::collections::HashMap<String, String>,
    /// Sessions a write of which ever failed: what they hold in memory is not
    /// what the database holds, so they never leave memory.
    diverged: std::collections::HashSet<String>,
    /// The ticket of the last command sent.
    sent: Ticket,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let connection = Connection::open(path)?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    // With WAL, NORMAL still survives a killed process; only power loss may lose the last commits.
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    connection.busy_timeout(std::time::Duration::from_secs(5))?;
    Ok(connection)
}

fn migrate(connection: &mut Connection) -> rusqlite::Result<()> {
    let done: i64 = connection.pragma_query_value(None, "user_version", |row| row.get(0))?;
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(done as usize) {
        let tx = connection.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", index as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

impl Store {
    /// Opens (creating) `dir/agent-hub.db` and starts its writer thread.
    pub fn open(dir: &Path) -> Result<Arc<Self>, StoreError> {
        std::fs::create_dir_all(dir)
            .map_err(|err| StoreError::DataDir { path: dir.to_path_buf(), reason: err.to_string() })?;
        let path = dir.join("agent-hub.db");
        let fail = |err: rusqlite::Error| StoreError::Open { path: path.clone(), reason: err.to_string() };
        let mut writer = open_connection(&path).map_err(fail)?;
        migrate(&mut writer).map_err(fail)?;
        writer.pragma_update(None, "wal_autocheckpoint", 0).map_err(fail)?;
        let reader = open_connection(&path).map_err(fail)?;
        let queue = Arc::new(Queue::default());
        let commands = queue.clone();
        let writer = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn({
                let path = path.clone();
                move || write_loop(writer, &commands, &path)
            })
            .map_err(|err| StoreError::Open { path: path.clone(), reason: format!("no writer thread: {err}") })?;
        Ok(Arc::new(Self { path, queue, writer: Some(writer), reader: Mutex::new(reader) }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn send(&self, command: Command) -> Ticket {
        // The agent's state changes where a turn starts, runs a tool or pauses:
        // those are written at once, not a tick later.
        let urgent = matches!(command, Command::Flush(_) | Command::Agent { .. } | Command::Event { urgent: true, .. });
        let mut queue = self.queue.lock();
        queue.commands.push(command);
        queue.sent += 1;
        let ticket = queue.sent;
        queue.urgent |= urgent;
        let wake = queue.asleep || urgent;
        drop(queue);
        if wake {
            self.queue.wake.notify_one();
        }
        ticket
    }

    /// Saves an event as the log serialized it (its stream line); `urgent`
    /// commits it at once rather than with the next tick's batch.
    pub fn append_event(&self, session: &str, seq: u64, line: Bytes, urgent: bool) -> Ticket {
        self.send(Command::Event { session: session.to_string(), seq, line, urgent })
    }

    pub fn save_session(&self, row: SessionRow) {
        self.send(Command::Session(row));
    }

    pub fn save_agent_state(&self, session: &str, state: String) -> Ticket {
        self.send(Command::Agent { session: session.to_string(), state })
    }

    /// Whether the command with this ticket has been dealt with: on disk, or
    /// known never to be (its write failed, and its session is told).
    pub fn settled(&self, ticket: Ticket) -> bool {
        self.queue.dealt.load(std::sync::atomic::Ordering::Acquire) >= ticket
    }

    /// Changes each time the writer has dealt with a batch (see [`Store::settled`]).
    pub fn watch_writes(&self) -> tokio::sync::watch::Receiver<Ticket> {
        self.queue.written.subscribe()
    }

    /// Whether everything `session` sent up to this ticket is on disk: dealt
    /// with, and none of the session's writes ever failed.
    pub fn committed(&self, session: &str, ticket: Ticket) -> bool {
        self.settled(ticket) && !self.queue.lock().diverged.contains(session)
    }

    /// Waits until everything sent before is on disk. An error says that some
    /// write since the last flush failed (reported once): that data is not saved.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.flush_for(None).await
    }

    /// [`Store::flush`], answering for one session's writes: an error says one
    /// of them failed since this session's last flush (reported once).
    pub async fn flush_session(&self, session: &str) -> Result<(), StoreError> {
        self.flush_for(Some(session.to_string())).await
    }

    async fn flush_for(&self, session: Option<String>) -> Result<(), StoreError> {
        let (done, wait) = tokio::sync::oneshot::channel();
        self.send(Command::Flush(Flush { session, done }));
        wait.await.unwrap_or(Err(StoreError::Closed))
    }

    fn read<T>(&self, query: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, StoreError> {
        let reader = self.reader.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        query(&reader).map_err(|err| StoreError::Read { path: self.path.clone(), reason: err.to_string() })
    }

    pub fn sessions(&self) -> Result<Vec<SessionRow>, StoreError> {
        self.read(|db| {
            let mut statement = db.prepare(
                "SELECT id, folder, status, yolo_override, pending_count, created_at_ms, updated_at_ms FROM sessions",
            )?;
            let rows = statement.query_map([], |row| {
                let status: String = row.get(2)?;
                Ok(SessionRow {
                    id: row.get(0)?,
                    folder: PathBuf::from(row.get::<_, String>(1)?),
                    status: serde_json::from_value(serde_json::Value::String(status)).unwrap_or(SessionStatus::Error),
                    yolo_override: row.get(3)?,
                    pending_count: row.get::<_, i64>(4)? as usize,
                    created_at_ms: row.get::<_, i64>(5)? as u64,
                    updated_at_ms: row.get::<_, i64>(6)? as u64,
                })
            })?;
            rows.collect()
        })
    }

    /// A session's events in seq order. An event the code no longer reads is
    /// skipped with a warning rather than losing the whole session. (A body is
    /// the event's stream line; rows saved before that lack its `seq`, so the
    /// column gives it.)
    pub fn events(&self, session: &str) -> Result<Vec<SeqEvent>, StoreError> {
        let rows: Vec<(u64, String)> = self.read(|db| {
            let mut statement = db.prepare("SELECT seq, body FROM events WHERE session_id = ?1 ORDER BY seq")?;
            let rows = statement.query_map([session], |row| Ok((row.get::<_, i64>(0)? as u64, row.get(1)?)))?;
            rows.collect()
        })?;
        Ok(rows
            .into_iter()
            .filter_map(|(seq, body)| match serde_json::from_str::<AgentEvent>(&body) {
                Ok(event) => Some(SeqEvent { event, seq }),
                Err(err) => {
                    tracing::warn!(session, seq, "stored event not readable: {err}");
                    None
                }
            })
            .collect())
    }

    pub fn agent_state(&self, session: &str) -> Result<Option<String>, StoreError> {
        self.read(|db| {
            db.query_row("SELECT state FROM agent_state WHERE session_id = ?1", [session], |row| row.get(0)).optional()
        })
    }
}

/// What was sent is written before the store is gone.
impl Drop for Store {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.wake.notify_one();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, QueueState> {
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

fn write_loop(mut db: Connection, queue: &Queue, path: &Path) {
    let (mut unchecked, mut quiet) = (0, Duration::ZERO);
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
        let touched: std::collections::HashSet<String> = batch.iter().filter_map(Command::session).collect();
        let mut flushes = Vec::new();
        match write_batch(&mut db, batch, &mut flushes) {
            Ok(()) => {}
            Err(err) => {
                // The whole batch is rolled back: the sessions it touched are
                // told by their next flush, and never leave memory.
                tracing::error!("saving to the database failed: {err}");
                let mut state = queue.lock();
                state.fault = Some(err.to_string());
                for session in touched {
                    state.failed_sessions.insert(session.clone(), err.to_string());
                    state.diverged.insert(session);
                }
            }
        }
        // Recorded before it is announced: a reader woken by it sees it.
        queue.dealt.store(last, std::sync::atomic::Ordering::Release);
        queue.written.send_replace(last);
        if !flushes.is_empty() {
            let mut state = queue.lock();
            for Flush { session, done } in flushes {
                let failed = match session {
                    Some(session) => state.failed_sessions.remove(&session),
                    None => state.fault.take(),
                };
                let outcome = match failed {
                    Some(reason) => Err(StoreError::Write { path: path.to_path_buf(), reason }),
                    None => Ok(()),
                };
                let _ = done.send(outcome);
            }
        }
        if unchecked >= CHECKPOINT_AFTER_BYTES {
            checkpoint(&db);
            unchecked = 0;
        }
    }
    if unchecked > 0 {
        checkpoint(&db);
    }
}

/// Copies what the WAL holds into the database, as far as readers allow.
fn checkpoint(db: &Connection) {
    if let Err(err) = db.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        tracing::warn!("checkpointing the database failed: {err}");
    }
}

impl Command {
    /// Roughly what it adds to the WAL, in bytes.
    fn size(&self) -> usize {
        match self {
            Command::Event { line, .. } => line.len() + 64,
            Command::Agent { state, .. } => state.len() + 64,
            Command::Session(_) => 256,
            Command::Flush(_) => 0,
        }
    }

    /// The session a write belongs to.
    fn session(&self) -> Option<String> {
        match self {
            Command::Event { session, .. } | Command::Agent { session, .. } => Some(session.clone()),
            Command::Session(row) => Some(row.id.clone()),
            Command::Flush(_) => None,
        }
    }
}

fn write_batch(db: &mut Connection, batch: Vec<Command>, flushes: &mut Vec<Flush>) -> rusqlite::Result<()> {
    // Taken out first: a flush is answered whether or not the writes succeed.
    let (waiting, batch): (Vec<Command>, Vec<Command>) =
        batch.into_iter().partition(|command| matches!(command, Command::Flush(_)));
    flushes.extend(waiting.into_iter().filter_map(|command| match command {
        Command::Flush(flush) => Some(flush),
        _ => None,
    }));
    let tx = db.transaction()?;
    {
        let mut event =
            tx.prepare_cached("INSERT OR REPLACE INTO events (session_id, seq, body) VALUES (?1, ?2, ?3)")?;
        let mut session = tx.prepare_cached(
            "INSERT INTO sessions (id, folder, status, yolo_override, pending_count, created_at_ms, updated_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT(id) DO UPDATE SET status = excluded.status, yolo_override = excluded.yolo_override,
               pending_count = excluded.pending_count, updated_at_ms = excluded.updated_at_ms",
        )?;
        let mut agent = tx.prepare_cached(
            "INSERT INTO agent_state (session_id, state) VALUES (?1, ?2)
             ON CONFLICT(session_id) DO UPDATE SET state = excluded.state",
        )?;
        for command in batch {
            match command {
                Command::Event { session, seq, line, .. } => match std::str::from_utf8(line.trim_ascii_end()) {
                    Ok(body) => {
                        event.execute(params![session, seq as i64, body])?;
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
                    ])?;
                }
                Command::Agent { session, state } => {
                    agent.execute(params![session, state])?;
                }
                Command::Flush(_) => {}
            }
        }
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::events::Role;

    /// Saves `event` as the event log does: its stream line.
    fn append(store: &Store, session: &str, event: SeqEvent) {
        let mut line = serde_json::to_vec(&event).unwrap();
        line.push(b'\n');
        store.append_event(session, event.seq, line.into(), false);
    }

    fn message(text: &str, seq: u64) -> SeqEvent {
        SeqEvent { event: AgentEvent::Message { role: Role::Assistant, content: text.into(), delta: true }, seq }
    }

    fn row(id: &str, status: SessionStatus) -> SessionRow {
        SessionRow {
            id: id.into(),
            folder: "/tmp/project".into(),
            status,
            yolo_override: Some(true),
            pending_count: 2,
            created_at_ms: 1,
            updated_at_ms: 5,
        }
    }

    /// Another process holding the database's write lock past the busy timeout
    /// makes a write fail as a full or read-only disk would.
    #[tokio::test]
    async fn a_failed_write_is_reported_to_its_session_once_and_never_counts_as_committed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.flush().await.unwrap();
        let blocker = Connection::open(store.path()).unwrap();
        blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let lost = {
            let mut line = serde_json::to_vec(&message("lost", 1)).unwrap();
            line.push(b'\n');
            store.append_event("s1", 1, line.into(), false)
        };
        // Another session's flush in the same failing batch: its own writes were not in it.
        assert_eq!(store.flush_session("s2").await, Ok(()));
        blocker.execute_batch("COMMIT").unwrap();
        let err = store.flush_session("s1").await.unwrap_err();
        assert!(matches!(&err, StoreError::Write { reason, .. } if reason.contains("locked")), "{err}");
        append(&store, "s1", message("kept", 2));
        store.flush_session("s1").await.expect("reported once; this write succeeded");
        assert!(store.flush().await.is_err(), "a flush for everything hears of it too, once");
        store.flush().await.unwrap();
        assert_eq!(store.events("s1").unwrap(), vec![message("kept", 2)], "the failed write is not on disk");
        assert!(store.settled(lost), "dealt with: a reader waiting on it goes on");
        assert!(!store.committed("s1", lost), "what failed never counts as saved, even after later commits");
        assert!(!store.settled(lost + 1_000), "a failure does not wave later writes through unwritten");
        let later = {
            let mut line = serde_json::to_vec(&message("later", 1)).unwrap();
            line.push(b'\n');
            store.append_event("s2", 1, line.into(), false)
        };
        store.flush().await.unwrap();
        assert!(store.settled(later) && store.committed("s2", later), "another session is not held in memory");
    }

    #[tokio::test]
    async fn what_is_flushed_is_there_after_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.save_session(row("s1", SessionStatus::Running));
            store.save_session(row("s1", SessionStatus::WaitingApproval));
            for seq in 1..=3 {
                append(&store, "s1", message(&format!("m{seq}"), seq));
            }
            append(&store, "other", message("x", 1));
            store.save_agent_state("s1", "{\"messages\":[]}".into());
            store.flush().await.unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.sessions().unwrap(), vec![row("s1", SessionStatus::WaitingApproval)]);
        let events = store.events("s1").unwrap();
        assert_eq!(events, vec![message("m1", 1), message("m2", 2), message("m3", 3)]);
        assert_eq!(store.agent_state("s1").unwrap().as_deref(), Some("{\"messages\":[]}"));
        assert_eq!(store.agent_state("nobody").unwrap(), None);
        let mode: String = store.read(|db| db.pragma_query_value(None, "journal_mode", |r| r.get(0))).unwrap();
        assert_eq!(mode, "wal");
    }

    #[tokio::test]
    async fn rows_saved_before_bodies_carried_their_seq_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let old_body = r#"{"type":"message","role":"assistant","content":"old","delta":true}"#;
        store.read(|db| db.execute("INSERT INTO events VALUES ('s', 1, ?1)", [old_body])).unwrap();
        append(&store, "s", message("new", 2));
        store.flush().await.unwrap();
        assert_eq!(store.events("s").unwrap(), vec![message("old", 1), message("new", 2)]);
        let body: String =
            store.read(|db| db.query_row("SELECT body FROM events WHERE seq = 2", [], |row| row.get(0))).unwrap();
        assert!(body.ends_with(r#""seq":2}"#), "saved as its stream line, without the newline: {body}");
    }

    #[test]
    fn what_was_sent_is_written_when_the_store_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        for seq in 1..=3 {
            append(&store, "s", message("m", seq));
        }
        drop(store);
        let seqs: Vec<u64> = Store::open(dir.path()).unwrap().events("s").unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 2, 3]);
    }

    #[tokio::test]
    async fn the_wal_is_copied_into_the_database_once_the_writer_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let database_size = || std::fs::metadata(store.path()).unwrap().len();
        for seq in 1..=100 {
            append(&store, "s", message(&"x".repeat(10_000), seq));
        }
        store.flush().await.unwrap();
        assert!(database_size() < 100_000, "a megabyte committed stays in the WAL at first");
        tokio::time::sleep(SLEEP_WHEN_QUIET * 3).await;
        assert!(database_size() > 1_000_000, "then it is copied into the database");
        assert_eq!(store.events("s").unwrap().len(), 100);
    }

    #[tokio::test]
    async fn unreadable_events_are_skipped_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        append(&store, "s", message("ok", 1));
        store.flush().await.unwrap();
        store
            .read(|db| db.execute("INSERT INTO events VALUES ('s', 2, '{\"type\":\"from_the_future\"}')", []))
            .unwrap();
        append(&store, "s", message("ok", 3));
        store.flush().await.unwrap();
        let seqs: Vec<u64> = store.events("s").unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 3]);
    }

    #[test]
    fn a_data_dir_that_cannot_be_made_is_a_clear_error() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let err = Store::open(&file.path().join("sub")).unwrap_err();
        assert!(err.to_string().contains("cannot create the data dir"), "{err}");
    }
}
