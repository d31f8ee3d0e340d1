//! The hub's SQLite database: sessions, every event with its seq, the
//! built-in agent's state (conversation, pending approvals), the rules saved
//! in the hub ([`SavedRule`]) and the append-only audit trail of decisions
//! ([`DecisionRecord`], [`OutcomeRecord`]), the folders opened last
//! ([`RecentFolderRow`]) and the folders the user trusts ([`TrustedFolder`]). WAL mode.
//!
//! Writes go to one writer thread. While the hub is busy the writer commits
//! streamed events and audit rows every few milliseconds, so thousands of
//! deltas cost few commits; a flush, an agent state or a rule change is
//! committed at once (a rule change in a transaction of its own, answered after
//! its commit: see [`Store::save_rule`]). Senders wake the writer only for
//! those or after a quiet spell put it to sleep: a thread's wake-up costs tens
//! of microseconds on a VM, and a turn sends several commands at its start.
//! [`Store::flush`] waits until everything sent before it is on disk: the agent
//! calls it before a pause or the end of a turn is announced.

mod audit;
mod devices;
mod folder_settings;
mod folders;
mod push;
mod rules;
mod trust;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use protocol::api::SessionStatus;
use protocol::events::{AgentEvent, SeqEvent};
use rusqlite::{Connection, OptionalExtension};

pub use audit::{AuditFilter, DecisionRecord, OutcomeRecord, AUDIT_LIMIT};
pub use devices::DeviceRow;
pub use folders::{RecentFolderRow, RECENT_FOLDERS_KEPT};
pub use push::PushSubscriptionRow;
pub use rules::{NewSavedRule, SavedRule};
pub use trust::TrustedFolder;
use writer::{write_loop, Command, Flush, Queue};

/// Migrations in order; `PRAGMA user_version` says how many ran.
const MIGRATIONS: &[&str] = &[
    include_str!("../../migrations/001_init.sql"),
    include_str!("../../migrations/002_rules_audit.sql"),
    include_str!("../../migrations/003_session_titles.sql"),
    include_str!("../../migrations/004_recent_folders.sql"),
    include_str!("../../migrations/005_session_agents.sql"),
    include_str!("../../migrations/006_folder_trust.sql"),
    include_str!("../../migrations/007_folder_settings.sql"),
    include_str!("../../migrations/008_devices.sql"),
    include_str!("../../migrations/009_session_worktrees.sql"),
    include_str!("../../migrations/010_folder_network.sql"),
    include_str!("../../migrations/011_folder_masks.sql"),
    include_str!("../../migrations/012_audit_device.sql"),
];

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
    pub title: Option<String>,
    /// The agent's id; `None` in rows from before sessions had one.
    pub agent: Option<String>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
    /// An isolated session's worktree (issue 29).
    pub worktree: Option<crate::worktrees::Worktree>,
}

/// The status a session's state gives the pages, saved with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusRow {
    pub status: SessionStatus,
    pub pending_count: usize,
    /// When it changed; `None`: a restart's, which is no update.
    pub updated_at_ms: Option<u64>,
}

pub struct Store {
    path: PathBuf,
    queue: Arc<Queue>,
    writer: Option<std::thread::JoinHandle<()>>,
    reader: Mutex<Connection>,
}

/// A command's place in the writer's queue: [`Store::settled`] says whether the writer dealt with it.
pub type Ticket = u64;

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// A time in ms since the epoch as SQLite keeps it (an i64; later times are capped).
fn sql_ms(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn open_connection(path: &Path) -> rusqlite::Result<Connection> {
    let connection = Connection::open(path)?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    // With WAL, NORMAL still survives a killed process; only power loss may lose the last commits.
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    // A deleted session's conversation (pasted secrets and all) is overwritten
    // where that costs no extra I/O, rather than left readable in free pages.
    connection.pragma_update(None, "secure_delete", "FAST")?;
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
        private(dir, &path);
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
        let urgent = command.urgent();
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

    /// Removes the session, its events and its agent state (not its audit
    /// rows: the trail is append-only). Ordered after everything sent before
    /// it; [`Store::flush_session`] says whether it is on disk.
    pub fn delete_session(&self, session: &str) -> Ticket {
        self.send(Command::DeleteSession(session.to_string()))
    }

    /// Saves a session's agent state (`None`: kept as it is) and its status
    /// in one write: a restart never finds one without the other.
    pub fn save_session_state(&self, session: &str, state: Option<String>, status: StatusRow) -> Ticket {
        self.send(Command::Agent { session: session.to_string(), state, status })
    }

    /// Whether the command with this ticket has been dealt with: on disk, or
    /// its write failed (kept for a retry, and its session is told).
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
    /// write failed and is not saved yet: it is kept and tried again with the
    /// next batch, and every flush says so until that succeeds.
    pub async fn flush(&self) -> Result<(), StoreError> {
        self.flush_for(None).await
    }

    /// [`Store::flush`], answering for one session's writes: an error says one
    /// of them failed and is not saved yet (kept for the next try).
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
                "SELECT id, folder, status, yolo_override, pending_count, created_at_ms, updated_at_ms, title, agent, worktree
                 FROM sessions ORDER BY created_at_ms, rowid",
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
                    title: row.get(7)?,
                    agent: row.get(8)?,
                    // Fails closed: an unreadable record is a worktree that is not there.
                    worktree: row.get::<_, Option<String>>(9)?.map(|json| {
                        serde_json::from_str(&json).unwrap_or_else(|err| {
                            tracing::error!(record = %json, "a session's worktree is not readable: {err}");
                            crate::worktrees::Worktree::unreadable(&json)
                        })
                    }),
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
        self.events_between(session, 0, u64::MAX, usize::MAX)
    }

    /// [`Store::events`] with `after < seq <= through`, the first `limit`:
    /// what a session's log no longer keeps in memory.
    pub fn events_between(
        &self,
        session: &str,
        after: u64,
        through: u64,
        limit: usize,
    ) -> Result<Vec<SeqEvent>, StoreError> {
        let rows: Vec<(u64, String)> = self.read(|db| {
            let mut statement = db.prepare_cached(
                "SELECT seq, body FROM events WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq LIMIT ?4",
            )?;
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            let rows = statement
                .query_map(rusqlite::params![session, sql_ms(after), sql_ms(through), limit], |row| {
                    Ok((row.get::<_, i64>(0)? as u64, row.get(1)?))
                })?;
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

/// The data dir holds device and push secrets, the database every
/// conversation: the user's alone (0700, the database files 0600, as they
/// are made and, for those made by an older hub, at start). SQLite gives the
/// journal files it makes later the database file's mode.
fn private(dir: &Path, database: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let set = |path: &Path, mode: u32| {
        if let Err(err) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
            if err.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(path = %path.display(), "could not make it private: {err}");
            }
        }
    };
    set(dir, 0o700);
    for suffix in ["", "-wal", "-shm"] {
        let mut file = database.as_os_str().to_owned();
        file.push(suffix);
        set(Path::new(&file), 0o600);
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_habits;
