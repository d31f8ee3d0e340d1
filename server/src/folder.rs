//! Validation of the `folderPath` every session is keyed by.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use axum::http::StatusCode;

use crate::error::ApiError;

/// Checks that `raw` names an existing directory by an absolute path and returns its
/// canonical form (symlinks and `..` resolved), the form sessions are keyed by.
pub fn canonical_folder(raw: &str) -> Result<PathBuf, ApiError> {
    if raw.trim().is_empty() {
        return Err(ApiError::bad_request("folderPath is required."));
    }
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(ApiError::bad_request(format!("folderPath must be an absolute path; got '{raw}'.")));
    }
    let canonical = path.canonicalize().map_err(|err| match err.kind() {
        ErrorKind::NotFound => folder_error("folder_not_found", format!("Folder '{raw}' does not exist.")),
        ErrorKind::PermissionDenied => {
            folder_error("folder_not_found", format!("Folder '{raw}' cannot be accessed: permission denied."))
        }
        _ => folder_error("folder_not_found", format!("Folder '{raw}' cannot be opened: {err}.")),
    })?;
    if !canonical.is_dir() {
        return Err(folder_error("not_a_directory", format!("'{raw}' is a file, not a folder.")));
    }
    Ok(canonical)
}

fn folder_error(code: &'static str, message: String) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(canonical_folder("").unwrap_err().code, "bad_request");
        assert_eq!(canonical_folder("relative/dir").unwrap_err().code, "bad_request");
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        assert_eq!(canonical_folder(missing.to_str().unwrap()).unwrap_err().code, "folder_not_found");
        let file = dir.path().join("file.txt");
        std::fs::write(&file, "x").unwrap();
        let err = canonical_folder(file.to_str().unwrap()).unwrap_err();
        assert_eq!((err.code, err.status), ("not_a_directory", StatusCode::BAD_REQUEST));
    }
}
