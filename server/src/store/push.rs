//! Paired devices' Web Push subscriptions (`push_subscriptions`): where the
//! hub sends a device's notifications and the keys it encrypts them for. A
//! change goes through the writer in a transaction of its own and is answered
//! after its commit, as a rule change is.

use rusqlite::{params, Connection};

use super::rules::RuleChange;
use super::{Command, Store, StoreError};

/// A browser's PushSubscription, kept for the paired device that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSubscriptionRow {
    /// The push service's URL for this browser (the key: one device each).
    pub endpoint: String,
    pub device_id: String,
    /// The browser's P-256 public key, base64url as the browser gave it.
    pub p256dh: String,
    /// The browser's 16-byte auth secret, base64url.
    pub auth: String,
    pub created_at_ms: u64,
}

type Reply<T> = tokio::sync::oneshot::Sender<Result<T, StoreError>>;

/// A change to the subscriptions, waiting for the writer.
pub(super) enum PushChange {
    /// Saved, or moved to this device with these keys if the endpoint was known.
    Save(PushSubscriptionRow, Reply<bool>),
    /// Removed if it is this device's (`None`: whoever's); answers whether it was.
    Delete { endpoint: String, device_id: Option<String>, reply: Reply<bool> },
    /// Every subscription of a device; answers how many went.
    DropDevice(String, Reply<usize>),
}

impl Store {
    /// Every subscription, oldest first.
    pub fn push_subscriptions(&self) -> Result<Vec<PushSubscriptionRow>, StoreError> {
        self.read(|db| {
            let mut statement = db.prepare_cached(
                "SELECT endpoint, device_id, p256dh, auth, created_at_ms FROM push_subscriptions
                 WHERE device_id IN (SELECT id FROM devices) ORDER BY created_at_ms, endpoint",
            )?;
            let rows = statement.query_map([], |row| {
                Ok(PushSubscriptionRow {
                    endpoint: row.get(0)?,
                    device_id: row.get(1)?,
                    p256dh: row.get(2)?,
                    auth: row.get(3)?,
                    created_at_ms: row.get::<_, i64>(4)?.max(0) as u64,
                })
            })?;
            rows.collect()
        })
    }

    /// Saves a subscription; answered once committed. The same endpoint again
    /// replaces the old keys (a browser that subscribed anew). `false`: its
    /// device is not paired (any more), and nothing was kept.
    pub async fn save_push_subscription(&self, row: PushSubscriptionRow) -> Result<bool, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Push(PushChange::Save(row, reply))));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }

    /// Removes the subscription if it is `device_id`'s (`None`: whoever's, as
    /// when its push service says it is gone); answers whether it was there.
    pub async fn delete_push_subscription(&self, endpoint: &str, device_id: Option<&str>) -> Result<bool, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let change =
            PushChange::Delete { endpoint: endpoint.to_string(), device_id: device_id.map(str::to_string), reply };
        self.send(Command::Rule(RuleChange::Push(change)));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }

    /// Drops every subscription of the device (it was revoked); answers how
    /// many went, once committed.
    pub async fn drop_device_subscriptions(&self, device_id: &str) -> Result<usize, StoreError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Command::Rule(RuleChange::Push(PushChange::DropDevice(device_id.to_string(), reply))));
        answer.await.unwrap_or(Err(StoreError::Closed))
    }
}

impl PushChange {
    pub(super) fn apply(self, db: &mut Connection, failed: impl Fn(rusqlite::Error) -> StoreError) {
        match self {
            PushChange::Save(row, reply) => {
                let _ = reply.send(save(db, &row).map_err(failed));
            }
            PushChange::Delete { endpoint, device_id, reply } => {
                let deleted = match device_id {
                    Some(device) => db.execute(
                        "DELETE FROM push_subscriptions WHERE endpoint = ?1 AND device_id = ?2",
                        params![endpoint, device],
                    ),
                    None => db.execute("DELETE FROM push_subscriptions WHERE endpoint = ?1", params![endpoint]),
                };
                let _ = reply.send(deleted.map(|count| count > 0).map_err(failed));
            }
            PushChange::DropDevice(device_id, reply) => {
                let deleted = db.execute("DELETE FROM push_subscriptions WHERE device_id = ?1", params![device_id]);
                let _ = reply.send(deleted.map_err(failed));
            }
        }
    }
}

/// A device keeps its newest few subscriptions (a phone that subscribed anew
/// after clearing its data): no device can make every alert wait on many.
pub const SUBSCRIPTIONS_PER_DEVICE: usize = 5;

fn save(db: &mut Connection, row: &PushSubscriptionRow) -> rusqlite::Result<bool> {
    let tx = db.transaction()?;
    // Only for a device still paired (a subscription racing its device's
    // revocation is not kept). An endpoint already kept for another device
    // moves to this one: the endpoint is the push service's secret URL for one
    // browser, so whoever sends it is that browser (a phone paired anew).
    let kept = tx.execute(
        "INSERT INTO push_subscriptions (endpoint, device_id, p256dh, auth, created_at_ms)
         SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM devices WHERE id = ?2)
         ON CONFLICT(endpoint) DO UPDATE SET device_id = excluded.device_id, p256dh = excluded.p256dh,
           auth = excluded.auth, created_at_ms = excluded.created_at_ms",
        params![row.endpoint, row.device_id, row.p256dh, row.auth, super::sql_ms(row.created_at_ms)],
    )? > 0;
    tx.execute(
        "DELETE FROM push_subscriptions WHERE device_id = ?1 AND endpoint NOT IN
           (SELECT endpoint FROM push_subscriptions WHERE device_id = ?1
            ORDER BY created_at_ms DESC, endpoint DESC LIMIT ?2)",
        params![row.device_id, SUBSCRIPTIONS_PER_DEVICE as i64],
    )?;
    tx.commit()?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(endpoint: &str, device: &str) -> PushSubscriptionRow {
        PushSubscriptionRow {
            endpoint: endpoint.into(),
            device_id: device.into(),
            p256dh: "key".into(),
            auth: "auth".into(),
            created_at_ms: 1,
        }
    }

    async fn store_with_devices(dir: &tempfile::TempDir) -> std::sync::Arc<Store> {
        let store = Store::open(dir.path()).unwrap();
        for id in ["a", "b"] {
            let device = crate::store::DeviceRow {
                id: id.into(),
                name: id.into(),
                secret_sha256: "00".into(),
                paired_at_ms: 1,
                last_seen_ms: 1,
                last_address: String::new(),
            };
            store.pair_device(device).await.unwrap();
        }
        store
    }

    #[tokio::test]
    async fn a_device_that_is_not_paired_keeps_no_subscription() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_devices(&dir).await;
        assert!(!store.save_push_subscription(row("https://p/z", "gone")).await.unwrap());
        assert!(store.save_push_subscription(row("https://p/a", "a")).await.unwrap());
        assert!(store.revoke_device("a").await.unwrap());
        assert!(endpoints(&store).is_empty(), "revoking drops the device's subscriptions");
    }

    fn endpoints(store: &Store) -> Vec<String> {
        store.push_subscriptions().unwrap().into_iter().map(|row| row.endpoint).collect()
    }

    #[tokio::test]
    async fn a_device_removes_only_its_own_and_a_revoke_drops_all_of_its() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_devices(&dir).await;
        for (endpoint, device) in [("https://p/a1", "a"), ("https://p/a2", "a"), ("https://p/b1", "b")] {
            store.save_push_subscription(row(endpoint, device)).await.unwrap();
        }
        assert_eq!(endpoints(&store), ["https://p/a1", "https://p/a2", "https://p/b1"]);
        assert!(!store.delete_push_subscription("https://p/b1", Some("a")).await.unwrap(), "not a's to remove");
        assert!(store.delete_push_subscription("https://p/a2", Some("a")).await.unwrap());
        assert_eq!(endpoints(&store), ["https://p/a1", "https://p/b1"]);
        assert_eq!(store.drop_device_subscriptions("a").await.unwrap(), 1);
        assert_eq!(endpoints(&store), ["https://p/b1"]);
        assert!(store.delete_push_subscription("https://p/b1", None).await.unwrap(), "gone at its push service");
        assert!(endpoints(&store).is_empty());
    }

    #[tokio::test]
    async fn subscribing_again_replaces_the_keys_and_device_and_a_device_keeps_its_newest() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_with_devices(&dir).await;
        store.save_push_subscription(row("https://p/x", "a")).await.unwrap();
        let again = PushSubscriptionRow { p256dh: "new".into(), created_at_ms: 2, ..row("https://p/x", "a") };
        assert!(store.save_push_subscription(again.clone()).await.unwrap());
        assert_eq!(store.push_subscriptions().unwrap(), std::slice::from_ref(&again));
        let paired_anew = PushSubscriptionRow { device_id: "b".into(), p256dh: "b's".into(), ..again.clone() };
        assert!(store.save_push_subscription(paired_anew.clone()).await.unwrap(), "the same browser, paired anew");
        assert_eq!(store.push_subscriptions().unwrap(), std::slice::from_ref(&paired_anew));
        assert!(store.revoke_device("b").await.unwrap());
        assert!(store.push_subscriptions().unwrap().is_empty());
        for n in 0..SUBSCRIPTIONS_PER_DEVICE as u64 {
            let newer = PushSubscriptionRow { created_at_ms: 10 + n, ..row(&format!("https://p/y{n}"), "a") };
            store.save_push_subscription(newer).await.unwrap();
        }
        let kept = endpoints(&store);
        assert_eq!(kept.len(), SUBSCRIPTIONS_PER_DEVICE);
        assert!(!kept.contains(&"https://p/x".to_string()), "the oldest went");
    }
}
