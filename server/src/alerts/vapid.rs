//! The hub's VAPID key (RFC 8292): a P-256 key pair made once and kept in the
//! data dir (mode 0600), and the ES256 JWT that tells a push service which
//! application server sends.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use web_push_native::p256;
use web_push_native::p256::ecdsa::signature::Signer as _;
use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint as _;

/// The file in the data dir: the private scalar, base64url, one line.
pub const KEY_FILE: &str = "push-vapid.key";

/// How long a JWT is good for (push services take at most 24 hours).
pub const JWT_LIFETIME_SECS: u64 = 12 * 60 * 60;

#[derive(Debug, thiserror::Error)]
pub enum VapidError {
    #[error("cannot read or write the Web Push key {path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("the Web Push key {path} is not a P-256 private key; remove it and the hub makes a new one (subscribed devices then subscribe again)")]
    Invalid { path: PathBuf },
}

pub struct Vapid {
    signing: p256::ecdsa::SigningKey,
    /// The public key, uncompressed, base64url: the browsers' `applicationServerKey`.
    public: String,
}

impl std::fmt::Debug for Vapid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vapid").field("public", &self.public).finish_non_exhaustive()
    }
}

impl Vapid {
    /// The key kept in `dir`, made (and kept, readable by the user only) on first use.
    pub fn load_or_make(dir: &Path) -> Result<Self, VapidError> {
        let path = dir.join(KEY_FILE);
        let file_error = |err: std::io::Error| VapidError::File { path: path.clone(), reason: err.to_string() };
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                restrict(&path).map_err(file_error)?;
                let bytes =
                    URL_SAFE_NO_PAD.decode(text.trim()).map_err(|_| VapidError::Invalid { path: path.clone() })?;
                let secret =
                    p256::SecretKey::from_slice(&bytes).map_err(|_| VapidError::Invalid { path: path.clone() })?;
                Ok(Self::from_secret(&secret))
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(file_error)?;
                let secret = random_secret().map_err(file_error)?;
                let encoded = URL_SAFE_NO_PAD.encode(secret.to_bytes());
                // create_new: two hubs starting at once never overwrite each other's key.
                let mut file = open_private(&path).map_err(file_error)?;
                file.write_all(format!("{encoded}\n").as_bytes()).and_then(|()| file.sync_all()).map_err(file_error)?;
                tracing::info!(path = %path.display(), "made the hub's Web Push (VAPID) key");
                Ok(Self::from_secret(&secret))
            }
            Err(err) => Err(file_error(err)),
        }
    }

    fn from_secret(secret: &p256::SecretKey) -> Self {
        let public = secret.public_key().as_affine().to_encoded_point(false);
        Self { signing: p256::ecdsa::SigningKey::from(secret), public: URL_SAFE_NO_PAD.encode(public.as_bytes()) }
    }

    /// The public key, an uncompressed P-256 point in base64url without padding.
    pub fn public_key(&self) -> &str {
        &self.public
    }

    /// The `Authorization` header for a push to `audience` (the endpoint's
    /// origin, `https://host[:port]`): `vapid t=<JWT>, k=<public key>`.
    pub fn authorization(&self, audience: &str, contact: &str, now_secs: u64) -> String {
        format!("vapid t={}, k={}", self.jwt(audience, contact, now_secs), self.public)
    }

    /// An ES256 JWT: `aud` the push service's origin, `exp` in 12 hours, `sub` the contact.
    pub fn jwt(&self, audience: &str, contact: &str, now_secs: u64) -> String {
        let header = URL_SAFE_NO_PAD.encode(br#"{"typ":"JWT","alg":"ES256"}"#);
        let claims = serde_json::json!({ "aud": audience, "exp": now_secs + JWT_LIFETIME_SECS, "sub": contact });
        let claims = URL_SAFE_NO_PAD.encode(claims.to_string());
        let signed = format!("{header}.{claims}");
        // RFC 6979: deterministic, no randomness needed; r and s, 32 bytes each (JWS's form).
        let signature: p256::ecdsa::Signature = self.signing.sign(signed.as_bytes());
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
    }
}

/// A random private key from the OS's generator (a 32-byte string that is not
/// a valid scalar, about 2^-32 likely, is drawn again).
fn random_secret() -> std::io::Result<p256::SecretKey> {
    loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
        if let Ok(secret) = p256::SecretKey::from_slice(&bytes) {
            return Ok(secret);
        }
    }
}

#[cfg(unix)]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create_new(true).open(path)
}

/// A key file others could read is made the user's alone again.
#[cfg(unix)]
fn restrict(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path)?.permissions().mode();
    if mode & 0o077 != 0 {
        tracing::warn!(path = %path.display(), "the Web Push key was readable by others: now the user's only");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn restrict(_path: &Path) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_kept_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let made = Vapid::load_or_make(dir.path()).unwrap();
        let public = URL_SAFE_NO_PAD.decode(made.public_key()).unwrap();
        assert_eq!((public.len(), public[0]), (65, 4), "an uncompressed P-256 point");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE)).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = Vapid::load_or_make(dir.path()).unwrap();
        assert_eq!(again.public_key(), made.public_key());
        assert_eq!(
            again.jwt("https://push.example", "mailto:a@b.c", 1),
            made.jwt("https://push.example", "mailto:a@b.c", 1)
        );
    }

    #[test]
    fn a_damaged_key_file_is_an_error_not_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(KEY_FILE), "not a key\n").unwrap();
        assert!(matches!(Vapid::load_or_make(dir.path()), Err(VapidError::Invalid { .. })));
        assert_eq!(std::fs::read_to_string(dir.path().join(KEY_FILE)).unwrap(), "not a key\n", "left as it was");
    }

    #[test]
    fn the_jwt_names_the_audience_expiry_and_contact() {
        let dir = tempfile::tempdir().unwrap();
        let vapid = Vapid::load_or_make(dir.path()).unwrap();
        let jwt = vapid.jwt("https://fcm.googleapis.com", "mailto:me@example.com", 1_000);
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(
            claims,
            serde_json::json!({"aud": "https://fcm.googleapis.com", "exp": 1_000 + JWT_LIFETIME_SECS, "sub": "mailto:me@example.com"})
        );
        assert_eq!(URL_SAFE_NO_PAD.decode(parts[2]).unwrap().len(), 64, "r and s");
    }
}
