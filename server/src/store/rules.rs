//! Rules saved in the hub from a card ("Always in this folder"). A save or a
//! delete goes through the writer like every write, in a transaction of its
//! own, and is answered after its commit: a rule the caller is told is saved
//! is on disk, and a failed write is an error, never a rule that seems saved.

use std::path::Path;

use protocol::api::PolicyDecision;
use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{Command, Store, StoreError};

/// A rule to save: an allow for `tool_name` in `folder`, for a shell command
/// only when it starts with `command_prefix`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSavedRule {
    /// The canonical folder, as sessions are keyed.
    pub folder: String,
    pub tool_name: String,
    pub command_prefix: Option<String>,
    pub created_at_ms: u64,
    /// The call whose card saved it.
    pub session_id: String,
    pub tool_id: String,
}

/// A rule as saved. Rules saved from a card allow; `decision` is read back so
/// that a rule saved otherwise some day is never taken for an allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedRule {
    pub id: i64,
    pub folder: String,
    pub tool_name: String,
    pub command_prefix: Option<String>,
    pub decision: PolicyDecision,
    pub created_at_ms: u64,
    pub session_id: String,
    pub tool_id: String,
}

pub(super) type Reply<T> = tokio::sync::oneshot::Sender<Result<T, StoreError>>;

/// A change to what a folder's rules may do (its saved rules, its trust, its
/// approval timeout), waiting for the writer.
pub(super) enum RuleChange {
    Save(NewSavedRule, Reply<SavedRule>),
    Delete(i64, Reply<Option<SavedRule>>),
    Trust(super::TrustedFolder, Reply<super::TrustedFolder>),
    Untrust(std::path::PathBuf, Reply<bool>),
    ApprovalTimeout(std::path::PathBuf, Option<u64>, u64, Reply<()>),
    Network(std::path::PathBuf, bool, Reply<()>),
    Masks(std::path::PathBuf, Vec<std::path::PathBuf>, Reply<()>),
    Device(super::devices::DeviceChange),
    /// A paired device's Web Push subscription (`push.rs`).
    Push(super::push::PushChange),
}

const COLUMNS: &str = "id, folder, tool_name, command_prefix, decision, created_at_ms, session_id, tool_id";

impl Store {
    /// Saves a rule; answered once it is committed, with its id.
    pub async fn save_rule(&self, rule: NewSavedRule) -> Result<SavedRule, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Save(rule, reply)));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }

    /// Deletes a rule; answered once that is committed, with the rule deleted
    /// (`None`: there was no such rule).
    pub async fn delete_rule(&self, id: i64) -> Result<Option<SavedRule>, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Delete(id, reply)));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }

    /// The rules saved for `folder` (canonical), oldest first.
    pub fn saved_rules(&self, folder: &Path) -> Result<Vec<SavedRule>, StoreError> {
        let folder = folder.to_string_lossy();
        self.read(|db| {
            let mut statement =
                db.prepare_cached(&format!("SELECT {COLUMNS} FROM saved_rules WHERE folder = ?1 ORDER BY id"))?;
            let rows = statement.query_map([folder.as_ref()], saved_rule)?;
            rows.collect()
        })
    }

    pub fn saved_rule(&self, id: i64) -> Result<Option<SavedRule>, StoreError> {
        self.read(|db| {
            db.query_row(&format!("SELECT {COLUMNS} FROM saved_rules WHERE id = ?1"), [id], saved_rule).optional()
        })
    }
}

impl RuleChange {
    /// Writes the change in its own transaction and answers once it is
    /// committed, or with why it is not.
    pub(super) fn apply(self, db: &mut Connection, path: &Path) {
        let failed = |err: rusqlite::Error| {
            tracing::error!("saving a rule to the database failed: {err}");
            StoreError::Write { path: path.to_path_buf(), reason: err.to_string() }
        };
        match self {
            RuleChange::Save(rule, reply) => {
                let _ = reply.send(save(db, &rule).map_err(failed));
            }
            RuleChange::Delete(id, reply) => {
                let _ = reply.send(delete(db, id).map_err(failed));
            }
            RuleChange::Trust(row, reply) => {
                let _ = reply.send(super::trust::trust(db, &row).map_err(failed));
            }
            RuleChange::Untrust(folder, reply) => {
                let _ = reply.send(super::trust::untrust(db, &folder).map_err(failed));
            }
            RuleChange::ApprovalTimeout(folder, secs, at_ms, reply) => {
                let stored = super::folder_settings::set_approval_timeout(db, &folder, secs, at_ms);
                let _ = reply.send(stored.map_err(failed));
            }
            RuleChange::Network(folder, enabled, reply) => {
                let stored = super::folder_settings::set_network(db, &folder, enabled);
                let _ = reply.send(stored.map_err(failed));
            }
            RuleChange::Masks(folder, masks, reply) => {
                let stored = super::folder_settings::set_masks(db, &folder, &masks);
                let _ = reply.send(stored.map_err(failed));
            }
            RuleChange::Device(change) => change.apply(db, failed),
            RuleChange::Push(change) => change.apply(db, failed),
        }
    }
}

fn save(db: &mut Connection, rule: &NewSavedRule) -> rusqlite::Result<SavedRule> {
    let tx = db.transaction()?;
    let saved = tx.query_row(
        &format!(
            "INSERT INTO saved_rules (folder, tool_name, command_prefix, created_at_ms, session_id, tool_id)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING {COLUMNS}"
        ),
        params![
            rule.folder,
            rule.tool_name,
            rule.command_prefix,
            super::sql_ms(rule.created_at_ms),
            rule.session_id,
            rule.tool_id
        ],
        saved_rule,
    )?;
    tx.commit()?;
    Ok(saved)
}

fn delete(db: &mut Connection, id: i64) -> rusqlite::Result<Option<SavedRule>> {
    let tx = db.transaction()?;
    let deleted = tx
        .query_row(&format!("DELETE FROM saved_rules WHERE id = ?1 RETURNING {COLUMNS}"), [id], saved_rule)
        .optional()?;
    tx.commit()?;
    Ok(deleted)
}

/// A row of `saved_rules` read in [`COLUMNS`] order. An unknown decision is
/// an error, not a guess: a deny read as an allow would let calls through.
fn saved_rule(row: &Row<'_>) -> rusqlite::Result<SavedRule> {
    let decision: String = row.get(4)?;
    let decision = serde_json::from_value(serde_json::Value::String(decision.clone())).map_err(|_| {
        rusqlite::Error::FromSqlConversionFailure(
            4,
            rusqlite::types::Type::Text,
            format!("saved rule {}: unknown decision {decision:?}", row.get::<_, i64>(0).unwrap_or_default()).into(),
        )
    })?;
    Ok(SavedRule {
        id: row.get(0)?,
        folder: row.get(1)?,
        tool_name: row.get(2)?,
        command_prefix: row.get(3)?,
        decision,
        created_at_ms: row.get::<_, Option<i64>>(5)?.unwrap_or_default().max(0) as u64,
        session_id: row.get::<_, Option<String>>(6)?.unwrap_or_default(),
        tool_id: row.get::<_, Option<String>>(7)?.unwrap_or_default(),
    })
}
