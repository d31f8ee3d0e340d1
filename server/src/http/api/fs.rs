//! `GET /api/fs/dirs?path=P`: the names of a directory's sub-directories, for
//! completing a folder's path as the user types it. Only names of directories
//! ever leave here: no files, no sizes, no times, no owners.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use axum::http::StatusCode;
use axum::Json;
use protocol::api::{DirListing, DirsQuery};

use crate::http::error::{ApiError, ApiQuery, ApiResult};

/// At most this many names in one answer (the first in sorted order): enough to
/// complete from, small enough for a directory of a million entries.
pub const MAX_DIRS: usize = 1000;

/// Why a directory cannot be listed, said so that the user can act on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    #[error("path is required.")]
    Empty,
    #[error("path must not contain a NUL byte.")]
    Nul,
    #[error("'{0}' is not an absolute path: start it with '/', '~' or '~/'.")]
    Relative(String),
    #[error("'~' cannot be expanded: the hub has no home directory (HOME is not set).")]
    NoHome,
    #[error("Folder '{0}' does not exist.")]
    Missing(String),
    #[error("'{0}' is a file, not a folder.")]
    NotADirectory(String),
    #[error("Folder '{0}' cannot be read: permission denied.")]
    Forbidden(String),
    #[error("Folder '{0}' cannot be read: {1}.")]
    Unreadable(String, String),
}

impl From<ListError> for ApiError {
    fn from(err: ListError) -> Self {
        let (status, code) = match &err {
            ListError::Empty | ListError::Nul | ListError::Relative(_) | ListError::NoHome => {
                (StatusCode::BAD_REQUEST, "bad_request")
            }
            ListError::Missing(_) | ListError::Unreadable(..) => (StatusCode::BAD_REQUEST, "folder_not_found"),
            ListError::NotADirectory(_) => (StatusCode::BAD_REQUEST, "not_a_directory"),
            ListError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
        };
        ApiError::new(status, code, err.to_string())
    }
}

/// How long a listing may take (a hung network mount never answers).
const LIST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

pub async fn dirs(ApiQuery(query): ApiQuery<DirsQuery>) -> ApiResult<Json<DirListing>> {
    let dir = expand_home(&query.path, home_dir().as_deref())?;
    // A slow disk or a huge directory must not hold up the runtime's threads; a
    // hung mount answers within LIST_TIMEOUT (its blocking thread is left to finish).
    let listing = tokio::time::timeout(LIST_TIMEOUT, tokio::task::spawn_blocking(move || list_dirs(&dir, MAX_DIRS)))
        .await
        .map_err(|_| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "folder_slow",
                format!("The folder did not answer within {} s.", LIST_TIMEOUT.as_secs()),
            )
        })?
        .map_err(|err| ApiError::internal(format!("Listing the folder failed: {err}.")))??;
    Ok(Json(listing))
}

/// The hub user's home directory, as the shell finds it.
fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME").filter(|home| !home.is_empty()).map(PathBuf::from)
}

/// `raw` as an absolute path: `~` and `~/…` start at `home`; anything else must
/// already be absolute (`~user` is not expanded).
pub fn expand_home(raw: &str, home: Option<&Path>) -> Result<PathBuf, ListError> {
    if raw.is_empty() {
        return Err(ListError::Empty);
    }
    if raw.contains('\0') {
        return Err(ListError::Nul);
    }
    let path = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => {
            let home = home.filter(|home| home.is_absolute()).ok_or(ListError::NoHome)?;
            match rest {
                "" => home.to_path_buf(),
                // `~/` keeps its slash, as typed.
                _ => home.join(rest.trim_start_matches('/')),
            }
        }
        _ => PathBuf::from(raw),
    };
    if !path.is_absolute() {
        return Err(ListError::Relative(raw.to_string()));
    }
    Ok(path)
}

/// The sorted names of `dir`'s sub-directories, at most `limit` of them.
/// Symlinks to directories count; names that are not UTF-8 are left out (the
/// client could not send them back), as are entries that vanish while read.
pub fn list_dirs(dir: &Path, limit: usize) -> Result<DirListing, ListError> {
    let shown = dir.display().to_string();
    let metadata = std::fs::metadata(dir).map_err(|err| io_error(&shown, &err))?;
    if !metadata.is_dir() {
        return Err(ListError::NotADirectory(shown));
    }
    let entries = std::fs::read_dir(dir).map_err(|err| io_error(&shown, &err))?;
    let mut names = Vec::new();
    let mut truncated = false;
    for entry in entries.flatten() {
        if !is_directory(&entry) {
            continue;
        }
        let Ok(name) = entry.file_name().into_string() else { continue };
        names.push(name);
        // Memory stays bounded: keep the first `limit` whenever twice as many piled up.
        if names.len() >= limit.saturating_mul(2).max(1) {
            keep_first(&mut names, limit, &mut truncated);
        }
    }
    keep_first(&mut names, limit, &mut truncated);
    Ok(DirListing { path: shown, dirs: names, truncated })
}

fn keep_first(names: &mut Vec<String>, limit: usize, truncated: &mut bool) {
    names.sort_unstable();
    if names.len() > limit {
        names.truncate(limit);
        *truncated = true;
    }
}

/// A directory, or a symlink that leads to one (a dangling link does not).
fn is_directory(entry: &std::fs::DirEntry) -> bool {
    match entry.file_type() {
        Ok(kind) if kind.is_dir() => true,
        Ok(kind) if kind.is_symlink() => std::fs::metadata(entry.path()).is_ok_and(|target| target.is_dir()),
        _ => false,
    }
}

fn io_error(shown: &str, err: &std::io::Error) -> ListError {
    match err.kind() {
        // A file where a folder is expected on the way ("/etc/passwd/x"): that folder does not exist.
        ErrorKind::NotFound | ErrorKind::NotADirectory => ListError::Missing(shown.to_string()),
        ErrorKind::PermissionDenied => ListError::Forbidden(shown.to_string()),
        _ => ListError::Unreadable(shown.to_string(), err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tilde_expands_to_home_and_nothing_else_does() {
        let home = Path::new("/home/me");
        assert_eq!(expand_home("~", Some(home)).unwrap(), PathBuf::from("/home/me"));
        assert_eq!(expand_home("~/", Some(home)).unwrap(), PathBuf::from("/home/me"));
        assert_eq!(expand_home("~/code/x", Some(home)).unwrap(), PathBuf::from("/home/me/code/x"));
        assert_eq!(expand_home("/srv/~/x", Some(home)).unwrap(), PathBuf::from("/srv/~/x"));
        assert_eq!(expand_home("~other/x", Some(home)), Err(ListError::Relative("~other/x".into())));
        assert_eq!(expand_home("code/x", Some(home)), Err(ListError::Relative("code/x".into())));
        assert_eq!(expand_home("~", None), Err(ListError::NoHome));
        assert_eq!(expand_home("~/x", Some(Path::new("relative-home"))), Err(ListError::NoHome));
        assert_eq!(expand_home("", Some(home)), Err(ListError::Empty));
        assert_eq!(expand_home("/a\0b", Some(home)), Err(ListError::Nul));
    }

    #[test]
    fn the_first_names_in_order_are_kept_and_the_rest_said() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["d", "b", "e", "a", "c"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let all = list_dirs(dir.path(), 5).unwrap();
        assert_eq!(
            (all.dirs, all.truncated),
            (vec!["a", "b", "c", "d", "e"].into_iter().map(String::from).collect(), false)
        );
        // A limit of 2 prunes while reading (at 4 names) and again at the end.
        let two = list_dirs(dir.path(), 2).unwrap();
        assert_eq!((two.dirs, two.truncated), (vec!["a".to_string(), "b".to_string()], true));
    }

    #[test]
    fn names_that_are_not_utf8_are_left_out() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let odd = std::ffi::OsStr::from_bytes(b"caf\xe9");
        if std::fs::create_dir(dir.path().join(odd)).is_err() {
            return; // A file system that refuses such names has nothing to leave out.
        }
        std::fs::create_dir(dir.path().join("plain")).unwrap();
        assert_eq!(list_dirs(dir.path(), MAX_DIRS).unwrap().dirs, ["plain"]);
    }
}
