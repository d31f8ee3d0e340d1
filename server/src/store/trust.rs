//! Folder trust, kept across restarts: which folders' own `.gemini` files may
//! loosen what the hub does. A change goes through the writer in a transaction
//! of its own and is answered after its commit, as a rule change is.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection};

use super::rules::RuleChange;
use super::{Command, Store, StoreError};

/// A trusted folder (canonical) and when the user trusted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedFolder {
    pub folder: PathBuf,
    pub trusted_at_ms: u64,
}

impl Store {
    /// Every trusted folder, oldest first.
    pub fn trusted_folders(&self) -> Result<Vec<TrustedFolder>, StoreError> {
        self.read(|db| {
            let mut statement =
                db.prepare_cached("SELECT folder, trusted_at_ms FROM trusted_folders ORDER BY trusted_at_ms, folder")?;
            let rows = statement.query_map([], |row| {
                Ok(TrustedFolder {
                    folder: PathBuf::from(row.get::<_, String>(0)?),
                    trusted_at_ms: row.get::<_, i64>(1)?.max(0) as u64,
                })
            })?;
            rows.collect()
        })
    }

    /// Trusts `folder` (canonical); answered once committed. Trusting again keeps the first time.
    pub async fn trust_folder(&self, folder: &Path, at_ms: u64) -> Result<TrustedFolder, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let row = TrustedFolder { folder: folder.to_path_buf(), trusted_at_ms: at_ms };
        self.send(Command::Rule(RuleChange::Trust(row, reply)));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }

    /// Withdraws trust; answered once committed, with whether the folder was trusted.
    pub async fn untrust_folder(&self, folder: &Path) -> Result<bool, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Untrust(folder.to_path_buf(), reply)));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }
}

pub(super) fn trust(db: &mut Connection, row: &TrustedFolder) -> rusqlite::Result<TrustedFolder> {
    let tx = db.transaction()?;
    let kept = tx.query_row(
        "INSERT INTO trusted_folders (folder, trusted_at_ms) VALUES (?1, ?2)
         ON CONFLICT(folder) DO UPDATE SET folder = excluded.folder RETURNING trusted_at_ms",
        params![row.folder.to_string_lossy(), super::sql_ms(row.trusted_at_ms)],
        |found| found.get::<_, i64>(0),
    )?;
    tx.commit()?;
    Ok(TrustedFolder { folder: row.folder.clone(), trusted_at_ms: kept.max(0) as u64 })
}

pub(super) fn untrust(db: &mut Connection, folder: &Path) -> rusqlite::Result<bool> {
    let tx = db.transaction()?;
    let removed = tx.execute("DELETE FROM trusted_folders WHERE folder = ?1", [folder.to_string_lossy()])?;
    tx.commit()?;
    Ok(removed > 0)
}
