//! The paired devices and the open pairing code: who may use the remote
//! listener. The database keeps the devices (the secret only as its SHA-256);
//! this keeps them in memory too, so that every remote request is checked
//! without a read, and a revoked device is refused at once: its entry goes and
//! its token ends the streams it holds open.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::devices::DeviceInfo;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::pairing::{self, PairRefusal, PairingBook};
use super::PairedDevice;
use crate::store::{DeviceRow, Store, StoreError};

/// A device's last request is written at most this often (and when its address changes).
const SEEN_WRITE_EVERY_MS: u64 = 60_000;
/// Longest device name kept, in characters.
pub const NAME_MAX_CHARS: usize = 60;

/// Where phones reach the hub, as the pairing code's page names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteListener {
    /// `https://host:port`
    pub origin: String,
    /// SHA-256 of its certificate, `AB:CD:…`.
    pub fingerprint: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("The hub has no remote listener: start it with --remote ADDR:PORT to pair a phone.")]
    NoRemote,
    #[error(transparent)]
    Refused(#[from] PairRefusal),
    #[error("No paired device has the id '{0}'.")]
    UnknownDevice(String),
    #[error("A device name must not contain control characters.")]
    BadName,
    #[error("no randomness for a code or secret: {0}")]
    Random(String),
    #[error("the revocation did not finish: {0}")]
    Unfinished(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A newly paired device and the cookie value that is now its key.
#[derive(Debug)]
pub struct Paired {
    pub device: PairedDevice,
    /// `id.secret`: shown to the device once, never kept.
    pub credential: String,
}

/// A code just opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCode {
    pub code: String,
    pub expires_at_ms: u64,
    pub url: String,
    pub fingerprint: String,
}

struct Known {
    row: DeviceRow,
    revoked: CancellationToken,
    seen_written_ms: u64,
}

#[derive(Default)]
struct Book {
    pairing: PairingBook,
    devices: HashMap<String, Known>,
}

/// Told of each new pairing: the device and the address it paired from.
type OnPaired = Box<dyn Fn(&PairedDevice, &str) + Send + Sync>;

pub struct Devices {
    store: Option<Arc<Store>>,
    remote: Option<RemoteListener>,
    book: Mutex<Book>,
    on_paired: std::sync::OnceLock<OnPaired>,
}

impl Devices {
    /// The devices the store knows; `remote` is where they reach the hub (none:
    /// they are listed and revoked, but no code is made).
    pub fn load(store: Option<Arc<Store>>, remote: Option<RemoteListener>) -> Result<Arc<Self>, StoreError> {
        let rows = match &store {
            Some(store) => store.devices()?,
            None => Vec::new(),
        };
        let devices = rows
            .into_iter()
            .map(|row| {
                let seen = row.last_seen_ms;
                (row.id.clone(), Known { row, revoked: CancellationToken::new(), seen_written_ms: seen })
            })
            .collect();
        let book = Mutex::new(Book { pairing: PairingBook::default(), devices });
        Ok(Arc::new(Self { store, remote, book, on_paired: std::sync::OnceLock::new() }))
    }

    /// Calls `tell` after each pairing (once set; a second call is ignored).
    pub fn on_paired(&self, tell: impl Fn(&PairedDevice, &str) + Send + Sync + 'static) {
        let _ = self.on_paired.set(Box::new(tell));
    }

    pub fn remote(&self) -> Option<&RemoteListener> {
        self.remote.as_ref()
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Makes a new code, ending the one before and its count of wrong guesses.
    pub fn open_code(&self, now_ms: u64) -> Result<OpenCode, DeviceError> {
        let remote = self.remote.as_ref().ok_or(DeviceError::NoRemote)?;
        let mut random = [0u8; 4];
        getrandom::fill(&mut random).map_err(|err| DeviceError::Random(err.to_string()))?;
        let code = pairing::code_from(random);
        let expires_at_ms = self.book().pairing.open(code.clone(), now_ms);
        Ok(OpenCode {
            url: format!("{}/pair#{code}", remote.origin),
            code,
            expires_at_ms,
            fingerprint: remote.fingerprint.clone(),
        })
    }

    /// Uses the open code for a new device called `name`.
    pub async fn pair(&self, code: &str, name: &str, address: &str, now_ms: u64) -> Result<Paired, DeviceError> {
        if self.remote.is_none() {
            return Err(DeviceError::NoRemote);
        }
        let name = device_name(name)?;
        let id = random_hex(8)?;
        let secret = random_hex(32)?;
        // The code is used up before the write: a second guess cannot race it.
        self.book().pairing.redeem(code, now_ms)?;
        let row = DeviceRow {
            id: id.clone(),
            name: name.clone(),
            secret_sha256: sha256_hex(&secret),
            paired_at_ms: now_ms,
            last_seen_ms: now_ms,
            last_address: address.to_string(),
        };
        if let Some(store) = &self.store {
            store.pair_device(row.clone()).await?;
        }
        self.book()
            .devices
            .insert(id.clone(), Known { row, revoked: CancellationToken::new(), seen_written_ms: now_ms });
        let device = PairedDevice { id: id.clone(), name };
        tracing::info!(device = %device.id, name = %device.name, address, "a device was paired");
        if let Some(tell) = self.on_paired.get() {
            tell(&device, address);
        }
        Ok(Paired { credential: format!("{id}.{secret}"), device })
    }

    /// The device a credential (`id.secret`) belongs to, with the token its
    /// revocation cancels; notes when and from where it was seen.
    pub fn authenticate(
        &self,
        credential: &str,
        address: &str,
        now_ms: u64,
    ) -> Option<(PairedDevice, CancellationToken)> {
        let (id, secret) = credential.split_once('.')?;
        let mut book = self.book();
        let known = book.devices.get_mut(id)?;
        if !pairing::constant_time_eq(sha256_hex(secret).as_bytes(), known.row.secret_sha256.as_bytes()) {
            return None;
        }
        let moved = known.row.last_address != address;
        known.row.last_seen_ms = known.row.last_seen_ms.max(now_ms);
        known.row.last_address = address.to_string();
        if moved || now_ms.saturating_sub(known.seen_written_ms) >= SEEN_WRITE_EVERY_MS {
            known.seen_written_ms = now_ms;
            if let Some(store) = &self.store {
                store.device_seen(id, now_ms, address);
            }
        }
        Some((PairedDevice { id: id.to_string(), name: known.row.name.clone() }, known.revoked.clone()))
    }

    /// Every paired device, first paired first.
    pub fn list(&self) -> Vec<DeviceInfo> {
        let mut rows: Vec<DeviceRow> = self.book().devices.values().map(|known| known.row.clone()).collect();
        rows.sort_by(|a, b| (a.paired_at_ms, &a.id).cmp(&(b.paired_at_ms, &b.id)));
        rows.into_iter()
            .map(|row| DeviceInfo {
                id: row.id,
                name: row.name,
                paired_at: row.paired_at_ms,
                last_seen: row.last_seen_ms,
                address: row.last_address,
            })
            .collect()
    }

    /// Forgets the device (and its push subscriptions) in the database, then
    /// refuses it and ends its open streams. A failed write changes nothing:
    /// a device refused now but paired again after a restart would be a lie.
    ///
    /// Runs to its end even if the caller goes away (a closed request): a
    /// device gone from the database but still let in would be half revoked.
    pub async fn revoke(self: &Arc<Self>, id: &str) -> Result<(), DeviceError> {
        if !self.book().devices.contains_key(id) {
            return Err(DeviceError::UnknownDevice(id.to_string()));
        }
        let (devices, id) = (self.clone(), id.to_string());
        let revoking = tokio::spawn(async move {
            if let Some(store) = &devices.store {
                store.revoke_device(&id).await?;
            }
            // Taken out after the write: a second revoke racing this one finds it gone.
            let known = devices.book().devices.remove(&id).ok_or(DeviceError::UnknownDevice(id.clone()))?;
            known.revoked.cancel();
            tracing::info!(device = %id, name = %known.row.name, "a device was revoked");
            Ok(())
        });
        revoking.await.unwrap_or_else(|err| Err(DeviceError::Unfinished(err.to_string())))
    }
}

/// A name as kept: trimmed, at most [`NAME_MAX_CHARS`], "Phone" when empty.
fn device_name(name: &str) -> Result<String, DeviceError> {
    let name = name.trim();
    if name.chars().any(char::is_control) {
        return Err(DeviceError::BadName);
    }
    let name: String = name.chars().take(NAME_MAX_CHARS).collect();
    Ok(if name.is_empty() { "Phone".to_string() } else { name })
}

fn random_hex(bytes: usize) -> Result<String, DeviceError> {
    let mut buffer = vec![0u8; bytes];
    getrandom::fill(&mut buffer).map_err(|err| DeviceError::Random(err.to_string()))?;
    Ok(hex(&buffer))
}

fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote() -> Option<RemoteListener> {
        Some(RemoteListener { origin: "https://phone.test:8443".into(), fingerprint: "AB:CD".into() })
    }

    #[tokio::test]
    async fn a_paired_device_is_known_by_its_credential_until_revoked() {
        let devices = Devices::load(None, remote()).unwrap();
        let code = devices.open_code(1_000).unwrap();
        assert_eq!(code.url, format!("https://phone.test:8443/pair#{}", code.code));
        let paired = devices.pair(&code.code, "  My phone ", "10.0.0.5:5000", 2_000).await.unwrap();
        assert_eq!(paired.device.name, "My phone");
        let (device, revoked) = devices.authenticate(&paired.credential, "10.0.0.6:1", 3_000).unwrap();
        assert_eq!(device, paired.device);
        assert_eq!(devices.list()[0].address, "10.0.0.6:1");
        let (id, secret) = paired.credential.split_once('.').unwrap();
        let mut wrong = secret.to_string();
        wrong.replace_range(0..1, if secret.starts_with('0') { "1" } else { "0" });
        assert!(devices.authenticate(&format!("{id}.{wrong}"), "x", 3_000).is_none());
        assert!(devices.authenticate(secret, "x", 3_000).is_none());
        devices.revoke(id).await.unwrap();
        assert!(revoked.is_cancelled());
        assert!(devices.authenticate(&paired.credential, "x", 4_000).is_none());
        assert!(devices.list().is_empty());
        assert!(matches!(devices.revoke(id).await, Err(DeviceError::UnknownDevice(_))));
    }

    #[tokio::test]
    async fn no_code_without_a_remote_listener_and_names_are_checked() {
        let devices = Devices::load(None, None).unwrap();
        assert_eq!(devices.open_code(0).unwrap_err(), DeviceError::NoRemote);
        let devices = Devices::load(None, remote()).unwrap();
        let code = devices.open_code(0).unwrap();
        assert!(matches!(devices.pair(&code.code, "a\u{7}b", "x", 1).await, Err(DeviceError::BadName)));
        // The refused name did not use the code up.
        let paired = devices.pair(&code.code, &"x".repeat(100), "x", 1).await.unwrap();
        assert_eq!(paired.device.name.chars().count(), NAME_MAX_CHARS);
    }
}
