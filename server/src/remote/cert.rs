//! The remote listener's certificate: one the user gives (`--remote-cert`,
//! `--remote-key`: from `tailscale cert`, mkcert or a CA, which the phone
//! already trusts), else one the hub makes once and keeps in its data dir, so
//! that its fingerprint (which the user checks on the phone) stays the same
//! across restarts. A kept certificate is made anew only when the names it must
//! carry change.

use std::path::{Path, PathBuf};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use sha2::{Digest, Sha256};

/// A certificate chain and its key, ready for rustls.
pub struct RemoteCert {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    /// SHA-256 of the leaf certificate, `AB:CD:…`, as browsers show it.
    pub fingerprint: String,
}

#[derive(Debug, thiserror::Error)]
pub enum CertError {
    #[error("cannot read {path}: {reason}")]
    Read { path: PathBuf, reason: String },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
    #[error("{path} holds no certificate (PEM `CERTIFICATE`)")]
    NoCertificate { path: PathBuf },
    #[error("cannot make a certificate: {0}")]
    Make(String),
}

impl RemoteCert {
    /// The user's own certificate chain and key (PEM files).
    pub fn from_files(cert: &Path, key: &Path) -> Result<Self, CertError> {
        let read = |path: &Path, err: &dyn std::fmt::Display| CertError::Read {
            path: path.to_path_buf(),
            reason: err.to_string(),
        };
        let chain = CertificateDer::pem_file_iter(cert)
            .map_err(|err| read(cert, &err))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| read(cert, &err))?;
        if chain.is_empty() {
            return Err(CertError::NoCertificate { path: cert.to_path_buf() });
        }
        let key = PrivateKeyDer::from_pem_file(key).map_err(|err| read(key, &err))?;
        Ok(Self { fingerprint: fingerprint(&chain[0]), chain, key })
    }

    /// The hub's own certificate for `names` (host names and addresses), kept
    /// in `dir` (`cert.pem`, `key.pem` readable by the user only, `names`).
    pub fn kept_or_made(dir: &Path, names: &[String]) -> Result<Self, CertError> {
        let (cert, key, names_file) = (dir.join("cert.pem"), dir.join("key.pem"), dir.join("names"));
        let wanted = names.join("\n");
        let kept_names = std::fs::read_to_string(&names_file).ok();
        if kept_names.as_deref() == Some(wanted.as_str()) && cert.is_file() && key.is_file() {
            return Self::from_files(&cert, &key);
        }
        if kept_names.is_some() {
            tracing::warn!("the remote listener's names changed: it gets a new certificate (a new fingerprint)");
        }
        let made =
            rcgen::generate_simple_self_signed(names.to_vec()).map_err(|err| CertError::Make(err.to_string()))?;
        write_private(dir, &key, made.signing_key.serialize_pem().as_bytes())?;
        write_private(dir, &cert, made.cert.pem().as_bytes())?;
        write_private(dir, &names_file, wanted.as_bytes())?;
        Self::from_files(&cert, &key)
    }
}

/// Written whole or not at all (a rename), readable by the user only.
fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), CertError> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let failed = |err: std::io::Error| CertError::Write { path: path.to_path_buf(), reason: err.to_string() };
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(failed)?;
    let partial = path.with_extension("partial");
    let _ = std::fs::remove_file(&partial);
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&partial).map_err(failed)?;
    file.write_all(bytes).and_then(|()| file.sync_all()).map_err(failed)?;
    std::fs::rename(&partial, path).map_err(failed)
}

pub fn fingerprint(cert: &CertificateDer<'_>) -> String {
    Sha256::digest(cert.as_ref()).iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_is_kept_until_its_names_change() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["phone-hub.test".to_string(), "192.0.2.7".to_string()];
        let first = RemoteCert::kept_or_made(dir.path(), &names).unwrap();
        assert_eq!(first.fingerprint.len(), 32 * 3 - 1);
        let again = RemoteCert::kept_or_made(dir.path(), &names).unwrap();
        assert_eq!(again.fingerprint, first.fingerprint);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("key.pem")).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "the key is the user's only");
        let other = RemoteCert::kept_or_made(dir.path(), &names[..1]).unwrap();
        assert_ne!(other.fingerprint, first.fingerprint);
    }

    #[test]
    fn a_file_without_a_certificate_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "nothing here").unwrap();
        let err = RemoteCert::from_files(&empty, &empty).err().unwrap();
        assert!(err.to_string().contains("empty.pem"), "{err}");
        assert!(RemoteCert::from_files(&dir.path().join("missing.pem"), &empty).is_err());
    }
}
