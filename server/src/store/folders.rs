//! The folders opened last, kept across restarts for the folder browser. An
//! opening is written with the next batch, like an audit row; the table keeps
//! the newest [`RECENT_FOLDERS_KEPT`].

use std::path::{Path, PathBuf};

use rusqlite::{params, Transaction};

use super::{sql_ms, Command, Store, StoreError};

/// How many folders the store remembers.
pub const RECENT_FOLDERS_KEPT: usize = 20;

/// A folder as remembered: its canonical path and when it was last opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecentFolderRow {
    pub folder: PathBuf,
    pub opened_at_ms: u64,
}

impl Store {
    /// Remembers that `folder` (canonical) was opened at `at_ms`.
    pub fn record_folder_opened(&self, folder: &Path, at_ms: u64) {
        self.send(Command::FolderOpened(RecentFolderRow { folder: folder.to_path_buf(), opened_at_ms: at_ms }));
    }

    /// The folders remembered, newest first (whether or not they still exist).
    pub fn recent_folders(&self) -> Result<Vec<RecentFolderRow>, StoreError> {
        self.read(|db| {
            let mut statement =
                db.prepare_cached("SELECT folder, opened_at_ms FROM recent_folders ORDER BY seq DESC LIMIT ?1")?;
            let rows = statement.query_map([RECENT_FOLDERS_KEPT as i64], |row| {
                Ok(RecentFolderRow {
                    folder: PathBuf::from(row.get::<_, String>(0)?),
                    opened_at_ms: row.get::<_, i64>(1)?.max(0) as u64,
                })
            })?;
            rows.collect()
        })
    }
}

/// Writes an opening (newest in the order the writer gets them) and forgets
/// the folders past the newest few.
pub(super) fn insert_opened(tx: &Transaction<'_>, row: &RecentFolderRow) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO recent_folders (folder, opened_at_ms, seq)
           VALUES (?1, ?2, (SELECT COALESCE(MAX(seq), 0) + 1 FROM recent_folders))
         ON CONFLICT(folder) DO UPDATE SET opened_at_ms = MAX(opened_at_ms, excluded.opened_at_ms), seq = excluded.seq",
    )?
    .execute(params![row.folder.to_string_lossy(), sql_ms(row.opened_at_ms)])?;
    tx.prepare_cached(
        "DELETE FROM recent_folders WHERE folder NOT IN
           (SELECT folder FROM recent_folders ORDER BY seq DESC LIMIT ?1)",
    )?
    .execute([RECENT_FOLDERS_KEPT as i64])?;
    Ok(())
}
