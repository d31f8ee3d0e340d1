//! Devices paired with the remote listener. Only the secret's SHA-256 is kept.
//! Pairing and revoking are answered after their commit; a device's last
//! request (when, from where) is written in the background.

use rusqlite::{params, Connection};

use super::rules::RuleChange;
use super::{Command, Store, StoreError};

/// One paired device as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceRow {
    pub id: String,
    pub name: String,
    /// Lowercase hex.
    pub secret_sha256: String,
    pub paired_at_ms: u64,
    pub last_seen_ms: u64,
    pub last_address: String,
}

/// A change to the paired devices, waiting for the writer.
pub(super) enum DeviceChange {
    Pair(DeviceRow, super::rules::Reply<()>),
    Revoke(String, super::rules::Reply<bool>),
    Seen { id: String, at_ms: u64, address: String },
}

impl Store {
    pub fn devices(&self) -> Result<Vec<DeviceRow>, StoreError> {
        self.read(|db| {
            let mut statement = db.prepare_cached(
                "SELECT id, name, secret_sha256, paired_at_ms, last_seen_ms, last_address FROM devices
                 ORDER BY paired_at_ms, id",
            )?;
            let rows = statement.query_map([], |row| {
                Ok(DeviceRow {
                    id: row.get(0)?,
                    name: row.get(1)?,
                    secret_sha256: row.get(2)?,
                    paired_at_ms: row.get::<_, i64>(3)?.max(0) as u64,
                    last_seen_ms: row.get::<_, i64>(4)?.max(0) as u64,
                    last_address: row.get(5)?,
                })
            })?;
            rows.collect()
        })
    }

    /// Keeps a newly paired device; answered once committed.
    pub async fn pair_device(&self, device: DeviceRow) -> Result<(), StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Device(DeviceChange::Pair(device, reply))));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }

    /// Forgets a device and its push subscriptions in one transaction; `false`:
    /// there was no such device.
    pub async fn revoke_device(&self, id: &str) -> Result<bool, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Device(DeviceChange::Revoke(id.to_string(), reply))));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }

    /// When and from where a device was last seen; not waited for.
    pub fn device_seen(&self, id: &str, at_ms: u64, address: &str) {
        self.send(Command::Rule(RuleChange::Device(DeviceChange::Seen {
            id: id.to_string(),
            at_ms,
            address: address.to_string(),
        })));
    }
}

impl DeviceChange {
    pub(super) fn apply(self, db: &mut Connection, failed: impl Fn(rusqlite::Error) -> StoreError) {
        match self {
            DeviceChange::Pair(device, reply) => {
                let _ = reply.send(pair(db, &device).map_err(failed));
            }
            DeviceChange::Revoke(id, reply) => {
                let _ = reply.send(revoke(db, &id).map_err(failed));
            }
            DeviceChange::Seen { id, at_ms, address } => {
                let seen = db.execute(
                    "UPDATE devices SET last_seen_ms = MAX(last_seen_ms, ?2), last_address = ?3 WHERE id = ?1",
                    params![id, super::sql_ms(at_ms), address],
                );
                if let Err(err) = seen {
                    failed(err);
                }
            }
        }
    }
}

fn pair(db: &mut Connection, device: &DeviceRow) -> rusqlite::Result<()> {
    db.execute(
        "INSERT INTO devices (id, name, secret_sha256, paired_at_ms, last_seen_ms, last_address)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            device.id,
            device.name,
            device.secret_sha256,
            super::sql_ms(device.paired_at_ms),
            super::sql_ms(device.last_seen_ms),
            device.last_address
        ],
    )?;
    Ok(())
}

fn revoke(db: &mut Connection, id: &str) -> rusqlite::Result<bool> {
    let tx = db.transaction()?;
    tx.execute("DELETE FROM push_subscriptions WHERE device_id = ?1", [id])?;
    let gone = tx.execute("DELETE FROM devices WHERE id = ?1", [id])? > 0;
    tx.commit()?;
    Ok(gone)
}
