//! Walking the folder for glob and search, through its held fd (never by
//! path): depth first in name order, symlinks listed but never entered, so a
//! link loop cannot make it endless and nothing outside is listed.

use std::ffi::OsStr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use rustix::fs::{statat, AtFlags, Dir, FileType};
use rustix::io::Errno;

use super::beneath::Folder;

/// Hands `visit` each entry below the directory `start` (relative to the
/// root; not `start` itself) with its type, until it breaks. A directory is
/// entered when `enter` says so of its name; one that cannot be listed is
/// skipped. Fails only if `start` cannot be listed.
pub fn walk(
    folder: &Folder,
    start: &Path,
    enter: impl Fn(&OsStr) -> bool,
    mut visit: impl FnMut(&Path, FileType) -> ControlFlow<()>,
) -> Result<(), Errno> {
    // Pending entries, the next one last.
    let mut pending = listed(folder, start)?;
    while let Some((rel, kind)) = pending.pop() {
        if visit(&rel, kind).is_break() {
            break;
        }
        if kind == FileType::Directory && rel.file_name().is_some_and(&enter) {
            pending.extend(listed(folder, &rel).unwrap_or_default());
        }
    }
    Ok(())
}

/// The entries of the directory `rel`, in reverse name order. The type comes
/// from the listing, or where the file system does not say it, from a stat
/// that does not follow links.
fn listed(folder: &Folder, rel: &Path) -> Result<Vec<(PathBuf, FileType)>, Errno> {
    let dir = folder.open_dir(rel)?;
    let mut entries: Vec<(PathBuf, FileType)> = Dir::read_from(&dir)?
        .map_while(Result::ok)
        .filter(|entry| ![&b"."[..], b".."].contains(&entry.file_name().to_bytes()))
        .map(|entry| {
            let kind = match entry.file_type() {
                FileType::Unknown => statat(&dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |stat| FileType::from_raw_mode(stat.st_mode)),
                known => known,
            };
            let name: &OsStr = std::os::unix::ffi::OsStrExt::from_bytes(entry.file_name().to_bytes());
            (rel.join(name), kind)
        })
        .collect();
    entries.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(entries)
}
