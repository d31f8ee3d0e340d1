//! What the hub keeps per folder beside its rules and trust: the approval
//! timeout, and whether its commands may reach the network. A change goes through the writer in a transaction of its own and
//! is answered after its commit, as a rule change is.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

use super::rules::RuleChange;
use super::{Command, Store, StoreError};

impl Store {
    /// Every folder's approval timeout: canonical folder, seconds, when it was set.
    pub fn approval_timeouts(&self) -> Result<Vec<(PathBuf, u64, u64)>, StoreError> {
        self.read(|db| {
            let mut statement = db.prepare_cached(
                "SELECT folder, approval_timeout_secs, approval_timeout_set_at_ms FROM folder_settings
                 WHERE approval_timeout_secs IS NOT NULL",
            )?;
            let rows = statement.query_map([], |row| {
                let secs = row.get::<_, i64>(1)?.max(1) as u64;
                Ok((PathBuf::from(row.get::<_, String>(0)?), secs, row.get::<_, i64>(2)?.max(0) as u64))
            })?;
            rows.collect()
        })
    }

    /// Sets (or with `None` clears) a folder's approval timeout, set at
    /// `at_ms`; answered once committed.
    pub async fn set_approval_timeout(&self, folder: &Path, secs: Option<u64>, at_ms: u64) -> Result<(), StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::ApprovalTimeout(folder.to_path_buf(), secs, at_ms, reply)));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }
}

impl Store {
    /// The folders whose commands may reach the network (canonical folders).
    pub fn network_folders(&self) -> Result<Vec<PathBuf>, StoreError> {
        self.read(|db| {
            let mut statement = db.prepare_cached("SELECT folder FROM folder_settings WHERE network != 0")?;
            let rows = statement.query_map([], |row| Ok(PathBuf::from(row.get::<_, String>(0)?)))?;
            rows.collect()
        })
    }

    /// Turns the folder's network for commands on or off; answered once committed.
    pub async fn set_network(&self, folder: &Path, enabled: bool) -> Result<(), StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Network(folder.to_path_buf(), enabled, reply)));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }
}

/// The folders with masks of their own, and those masks.
pub type FolderMasks = Vec<(PathBuf, Vec<PathBuf>)>;

impl Store {
    /// The paths each folder's sandbox masks besides the default list.
    pub fn folder_masks(&self) -> Result<FolderMasks, StoreError> {
        self.read(|db| {
            let mut statement = db.prepare_cached("SELECT folder, masks FROM folder_settings WHERE masks != '[]'")?;
            let rows = statement.query_map([], |row| {
                let (folder, masks): (String, String) = (row.get(0)?, row.get(1)?);
                // A list this hub did not write reads as none (the default list still holds), said loudly.
                let masks: Vec<PathBuf> = serde_json::from_str(&masks).unwrap_or_else(|err| {
                    tracing::error!(folder, "the folder's own sandbox masks could not be read ({err}): set them again");
                    Vec::new()
                });
                Ok((PathBuf::from(folder), masks))
            })?;
            rows.collect()
        })
    }

    /// Sets the paths the folder's sandbox masks besides the default list;
    /// answered once committed.
    pub async fn set_masks(&self, folder: &Path, masks: &[PathBuf]) -> Result<(), StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Masks(folder.to_path_buf(), masks.to_vec(), reply)));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }
}

pub(super) fn set_masks(db: &mut Connection, folder: &Path, masks: &[PathBuf]) -> rusqlite::Result<()> {
    let list = serde_json::to_string(masks).unwrap_or_else(|_| "[]".into());
    db.execute(
        "INSERT INTO folder_settings (folder, masks) VALUES (?1, ?2)
         ON CONFLICT(folder) DO UPDATE SET masks = excluded.masks",
        params![folder.to_string_lossy(), list],
    )?;
    Ok(())
}

pub(super) fn set_network(db: &mut Connection, folder: &Path, enabled: bool) -> rusqlite::Result<()> {
    db.execute(
        "INSERT INTO folder_settings (folder, network) VALUES (?1, ?2)
         ON CONFLICT(folder) DO UPDATE SET network = excluded.network",
        params![folder.to_string_lossy(), enabled as i64],
    )?;
    Ok(())
}

pub(super) fn set_approval_timeout(
    db: &mut Connection,
    folder: &Path,
    secs: Option<u64>,
    at_ms: u64,
) -> rusqlite::Result<()> {
    let tx = db.transaction()?;
    tx.execute(
        "INSERT INTO folder_settings (folder, approval_timeout_secs, approval_timeout_set_at_ms) VALUES (?1, ?2, ?3)
         ON CONFLICT(folder) DO UPDATE SET approval_timeout_secs = excluded.approval_timeout_secs,
           approval_timeout_set_at_ms = excluded.approval_timeout_set_at_ms",
        params![folder.to_string_lossy(), secs.map(|secs| secs as i64), super::sql_ms(at_ms)],
    )?;
    tx.commit()
}
