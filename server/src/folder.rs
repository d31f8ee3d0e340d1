//! Validation of the `folderPath` every session is keyed by.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

/// Why a `folderPath` cannot key a session; nothing was opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FolderError {
    #[error("folderPath is required.")]
    Missing,
    #[error("folderPath must be an absolute path; got '{0}'.")]
    NotAbsolute(String),
    /// It does not exist or cannot be reached; the message says which.
    #[error("{0}")]
    NotFound(String),
    #[error("'{0}' is a file, not a folder.")]
    NotADirectory(String),
}

/// Checks that `raw` names an existing directory by an absolute path and returns its
/// canonical form (symlinks and `..` resolved), the form sessions are keyed by.
pub fn canonical_folder(raw: &str) -> Result<PathBuf, FolderError> {
    if raw.trim().is_empty() {
        return Err(FolderError::Missing);
    }
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(FolderError::NotAbsolute(raw.to_string()));
    }
    let canonical = path.canonicalize().map_err(|err| {
        FolderError::NotFound(match err.kind() {
            ErrorKind::NotFound => format!("Folder '{raw}' does not exist."),
            ErrorKind::PermissionDenied => format!("Folder '{raw}' cannot be accessed: permission denied."),
            _ => format!("Folder '{raw}' cannot be opened: {err}."),
        })
    })?;
    if !canonical.is_dir() {
        return Err(FolderError::NotADirectory(raw.to_string()));
    }
    Ok(canonical)
}

/// A file a repository may have planted (its settings, its agents' config),
/// read link-safe and bounded: only a regular file (a link to `/dev/zero`, a
/// FIFO or a directory is refused, and the open never blocks on a FIFO), at
/// most `max` bytes (more is refused, never read whole).
pub fn read_planted(path: &Path, max: u64) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Looked at before it is opened: opening a device can act (a tty's lines).
    if !std::fs::metadata(path)?.is_file() {
        return Err(std::io::Error::new(ErrorKind::InvalidInput, "it is not a regular file"));
    }
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    // And again once open: it may have been swapped in between.
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(ErrorKind::InvalidInput, "it is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(ErrorKind::InvalidData, format!("it is larger than {max} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| std::io::Error::new(ErrorKind::InvalidData, "it is not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[test]
    fn accepts_an_existing_directory_and_canonicalizes_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let dotted = dir.path().join("sub").join("..").join("sub");
        let got = canonical_folder(dotted.to_str().unwrap()).unwrap();
        assert_eq!(got, dir.path().canonicalize().unwrap().join("sub"));
    }

    #[test]
    fn resolves_symlinks_to_the_same_key() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(
            canonical_folder(link.to_str().unwrap()).unwrap(),
            canonical_folder(real.to_str().unwrap()).unwrap()
        );
    }

    #[test]
    fn rejects_relative_empty_missing_and_file_paths() {
        let answer = |raw: &str| {
            let err = crate::http::error::ApiError::from(canonical_folder(raw).unwrap_err());
            (err.status, err.code)
        };
        assert_eq!(answer(""), (StatusCode::BAD_REQUEST, "bad_request"));
        assert_eq!(answer("relative/dir"), (StatusCode::BAD_REQUEST, "bad_request"));
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert_eq!(answer(missing.to_str().unwrap()), (StatusCode::BAD_REQUEST, "folder_not_found"));
        let file = dir.path().join("file.txt");
        std::fs::write(&file, "x").unwrap();
        assert_eq!(answer(file.to_str().unwrap()), (StatusCode::BAD_REQUEST, "not_a_directory"));
        assert_eq!(
            canonical_folder(file.to_str().unwrap()).unwrap_err().to_string(),
            format!("'{}' is a file, not a folder.", file.display())
        );
    }
}
