//! The hub's SQLite database: sessions, every event with its seq, and the
//! built-in agent's state (conversation, pending approvals). WAL mode.
//!
//! Writes go to one writer thread that gathers what comes within a few
//! milliseconds into a single transaction, so streaming thousands of deltas
//! costs few commits.
//! [`Store::flush`] waits until everything sent before it is on disk: the agent
//! calls it before a pause or the end of a turn is announced.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use app::events::{AgentEvent, SeqEvent};
use app::types::SessionStatus;
use rusqlite::{params, Connection, OptionalExtension};

/// Migrations in order; `PRAGMA user_version` says how many ran.
const MIGRATIONS: &[&str] = &[include_str!("../migrations/001_init.sql")];
/// The most commands one transaction takes before it commits.
const MAX_BATCH: usize = 5_000;
/// How long the writer waits for more commands once one came, before it
/// commits them together. A flush commits at once; what it leaves to chance is
/// only an event or two more lost with a killed hub, for one commit instead of dozens.
const GATHER: std::time::Duration = std::time::Duration::from_millis(5);
/// Checkpoints (the WAL copied into the database, with an fsync: tens of
/// milliseconds) run when the writer has been idle this long…
const CHECKPOINT_WHEN_IDLE: std::time::Duration = std::time::Duration::from_millis(500);
/// …or after this much was written, once the flushes waiting on it are
/// answered; SQLite's own would run inside a commit, stalling a turn's end.
const CHECKPOINT_AFTER_BYTES: usize = 4 << 20;

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
    Event { session: String, seq: u64, body: String },
    Session(SessionRow),
    Agent { session: String, state: String },
    Flush(tokio::sync::oneshot::Sender<()>),
}

pub struct Store {
    path: PathBuf,
    writer: Mutex<mpsc::Sender<Command>>,
    reader: Mutex<Connection>,
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
    pub fn open(dir: &Path) -> Result<Arc<Self>, String> {
        std::fs::create_dir_all(dir).map_err(|err| format!("cannot create the data dir {}: {err}", dir.display()))?;
        let path = dir.join("agent-hub.db");
        let fail = |err: rusqlite::Error| format!("cannot open the database {}: {err}", path.display());
        let mut writer = open_connection(&path).map_err(fail)?;
        migrate(&mut writer).map_err(fail)?;
        writer.pragma_update(None, "wal_autocheckpoint", 0).map_err(fail)?;
        let reader = open_connection(&path).map_err(fail)?;
        let (sender, receiver) = mpsc::channel();
        std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || write_loop(writer, receiver))
            .map_err(|err| format!("cannot start the database writer: {err}"))?;
        Ok(Arc::new(Self { path, writer: Mutex::new(sender), reader: Mutex::new(reader) }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn send(&self, command: Command) {
        let writer = self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if writer.send(command).is_err() {
            tracing::error!("the database writer has stopped; changes are no longer saved");
        }
    }

    pub fn append_event(&self, session: &str, event: &SeqEvent) {
        match serde_json::to_string(&event.event) {
            Ok(body) => self.send(Command::Event { session: session.to_string(), seq: event.seq, body }),
            Err(err) => tracing::error!("event not saved: {err}"),
        }
    }

    pub fn save_session(&self, row: SessionRow) {
        self.send(Command::Session(row));
    }

    pub fn save_agent_state(&self, session: &str, state: String) {
        self.send(Command::Agent { session: session.to_string(), state });
    }

    /// Resolves once everything sent before it is committed.
    pub async fn flush(&self) {
        let (done, wait) = tokio::sync::oneshot::channel();
        self.send(Command::Flush(done));
        let _ = wait.await;
    }

    fn read<T>(&self, query: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T, String> {
        let reader = self.reader.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        query(&reader).map_err(|err| format!("cannot read {}: {err}", self.path.display()))
    }

    pub fn sessions(&self) -> Result<Vec<SessionRow>, String> {
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
    /// skipped with a warning rather than losing the whole session.
    pub fn events(&self, session: &str) -> Result<Vec<SeqEvent>, String> {
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

    pub fn agent_state(&self, session: &str) -> Result<Option<String>, String> {
        self.read(|db| {
            db.query_row("SELECT state FROM agent_state WHERE session_id = ?1", [session], |row| row.get(0)).optional()
        })
    }
}

fn write_loop(mut db: Connection, commands: mpsc::Receiver<Command>) {
    let mut unchecked = 0;
    loop {
        let first = match commands.recv_timeout(CHECKPOINT_WHEN_IDLE) {
            Ok(command) => command,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if unchecked > 0 {
                    checkpoint(&db);
                    unchecked = 0;
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let deadline = std::time::Instant::now() + GATHER;
        let mut flushing = matches!(first, Command::Flush(_));
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            let next = if flushing {
                commands.try_recv().ok()
            } else {
                commands.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())).ok()
            };
            let Some(command) = next else { break };
            flushing |= matches!(command, Command::Flush(_));
            batch.push(command);
        }
        unchecked += batch.iter().map(Command::size).sum::<usize>();
        let mut flushes = Vec::new();
        if let Err(err) = write_batch(&mut db, batch, &mut flushes) {
            tracing::error!("saving to the database failed: {err}");
        }
        for done in flushes {
            let _ = done.send(());
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
            Command::Event { body, .. } => body.len() + 64,
            Command::Agent { state, .. } => state.len() + 64,
            Command::Session(_) => 256,
            Command::Flush(_) => 0,
        }
    }
}

fn write_batch(
    db: &mut Connection,
    batch: Vec<Command>,
    flushes: &mut Vec<tokio::sync::oneshot::Sender<()>>,
) -> rusqlite::Result<()> {
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
                Command::Event { session, seq, body } => {
                    event.execute(params![session, seq as i64, body])?;
                }
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
                Command::Flush(done) => flushes.push(done),
            }
        }
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::events::Role;

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

    #[tokio::test]
    async fn what_is_flushed_is_there_after_reopening() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store.save_session(row("s1", SessionStatus::Running));
            store.save_session(row("s1", SessionStatus::WaitingApproval));
            for seq in 1..=3 {
                store.append_event("s1", &message(&format!("m{seq}"), seq));
            }
            store.append_event("other", &message("x", 1));
            store.save_agent_state("s1", "{\"messages\":[]}".into());
            store.flush().await;
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
    async fn the_wal_is_copied_into_the_database_once_the_writer_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let database_size = || std::fs::metadata(store.path()).unwrap().len();
        for seq in 1..=100 {
            store.append_event("s", &message(&"x".repeat(10_000), seq));
        }
        store.flush().await;
        assert!(database_size() < 100_000, "a megabyte committed stays in the WAL at first");
        tokio::time::sleep(CHECKPOINT_WHEN_IDLE * 3).await;
        assert!(database_size() > 1_000_000, "then it is copied into the database");
        assert_eq!(store.events("s").unwrap().len(), 100);
    }

    #[tokio::test]
    async fn unreadable_events_are_skipped_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store.append_event("s", &message("ok", 1));
        store.flush().await;
        store
            .read(|db| db.execute("INSERT INTO events VALUES ('s', 2, '{\"type\":\"from_the_future\"}')", []))
            .unwrap();
        store.append_event("s", &message("ok", 3));
        store.flush().await;
        let seqs: Vec<u64> = store.events("s").unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 3]);
    }

    #[test]
    fn a_data_dir_that_cannot_be_made_is_a_clear_error() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let err = Store::open(&file.path().join("sub")).unwrap_err();
        assert!(err.contains("cannot create the data dir"), "{err}");
    }
}
