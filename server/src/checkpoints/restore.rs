//! Putting the folder back as a tree recorded it. Only the paths that differ
//! are touched; every write, link and removal goes through the folder's
//! `openat2(RESOLVE_BENEATH)` handle, and a link or file standing where the
//! tree has a directory is removed first (never followed), so nothing planted
//! in the folder can lead a restore outside it.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rustix::fs::FileType;

use super::git::{path_of, split_z, Repo};
use super::snapshot::lossy;
use super::CheckpointError;
use crate::tools::Folder;

/// One path to change: its mode and object in the tree restored to.
struct Entry {
    path: PathBuf,
    mode: String,
    oid: String,
    status: u8,
}

/// Makes the folder's files match tree `to`, from what tree `from` recorded
/// of them now; returns the paths changed.
/// Only the paths in `only` are touched.
pub fn restore(
    repo: &Repo,
    from: &str,
    to: &str,
    only: &std::collections::HashSet<String>,
) -> Result<Vec<String>, CheckpointError> {
    let out = repo.run(["diff-tree", "-r", "-z", "--no-renames", from, to])?;
    let mut entries = parse_raw(&out)?;
    entries.retain(|entry| only.contains(&*entry.path.to_string_lossy()));
    let folder = Folder::open(&repo.work_tree).map_err(|err| CheckpointError::io(&repo.work_tree, err))?;
    let failed = |path: &Path, err: rustix::io::Errno| {
        CheckpointError::Restore(format!("{}: {}", path.display(), std::io::Error::from(err)))
    };
    // Before anything changes: a file or link standing where a directory is
    // restored goes only when it is one of the paths restored; anything else
    // (a user's file) stops the restore.
    for entry in entries.iter().filter(|entry| entry.status != b'D' && entry.mode != "160000") {
        blocking(&folder, &entry.path, only)?;
    }
    // Removals first: a file removed may leave room for a directory written.
    let mut emptied = BTreeSet::new();
    for entry in entries.iter().filter(|entry| entry.status == b'D' || entry.status == b'T') {
        folder.remove(&entry.path).map_err(|err| failed(&entry.path, err))?;
        emptied.extend(entry.path.ancestors().skip(1).filter(|dir| !dir.as_os_str().is_empty()).map(Path::to_path_buf));
    }
    // Deepest first: a directory the turn made, and emptied, goes too.
    for dir in emptied.iter().rev() {
        let _ = folder.remove_empty_dir(dir);
    }
    let writes: Vec<&Entry> = entries.iter().filter(|entry| entry.status != b'D' && entry.mode != "160000").collect();
    let blobs = read_blobs(repo, writes.iter().map(|entry| entry.oid.as_str()))?;
    for (entry, bytes) in writes.iter().zip(blobs) {
        blocking(&folder, &entry.path, only)?;
        straighten(&folder, &entry.path).map_err(|err| failed(&entry.path, err))?;
        if matches!(folder.kind_at(&entry.path), Ok(Some(kind)) if kind != FileType::RegularFile) {
            folder.remove(&entry.path).map_err(|err| failed(&entry.path, err))?;
        }
        match entry.mode.as_str() {
            "120000" => {
                use std::os::unix::ffi::OsStrExt;
                let _ = folder.remove(&entry.path);
                folder
                    .symlink(&entry.path, std::ffi::OsStr::from_bytes(&bytes))
                    .map_err(|err| failed(&entry.path, err))?;
            }
            mode => {
                folder
                    .replace_with(&entry.path, &bytes, false)
                    .map_err(|err| CheckpointError::Restore(format!("{}: {err}", entry.path.display())))?;
                folder.set_executable(&entry.path, mode == "100755").map_err(|err| failed(&entry.path, err))?;
            }
        }
    }
    Ok(entries.iter().map(|entry| entry.path.to_string_lossy().into_owned()).collect())
}

/// Refuses when a directory above `rel` is something else that the restore
/// does not put back itself (it would be removed).
fn blocking(folder: &Folder, rel: &Path, only: &std::collections::HashSet<String>) -> Result<(), CheckpointError> {
    let mut so_far = PathBuf::new();
    let parents: Vec<_> = rel.parent().map(|parent| parent.components().collect()).unwrap_or_default();
    for part in parents {
        so_far.push(part);
        match folder.kind_at(&so_far) {
            Ok(None) => return Ok(()),
            Ok(Some(FileType::Directory)) => {}
            Ok(Some(_)) if only.contains(&*so_far.to_string_lossy()) => return Ok(()),
            Ok(Some(_)) => {
                return Err(CheckpointError::Restore(format!(
                    "{} stands where a directory is restored and is not the rewind's to remove",
                    so_far.display()
                )))
            }
            Err(err) => {
                return Err(CheckpointError::Restore(format!("{}: {}", so_far.display(), std::io::Error::from(err))))
            }
        }
    }
    Ok(())
}

/// Each directory above `rel` is a directory: a link or a file standing in
/// for one is removed (a link is never followed), so the write lands at the
/// path itself.
fn straighten(folder: &Folder, rel: &Path) -> Result<(), rustix::io::Errno> {
    let mut so_far = PathBuf::new();
    let parents: Vec<_> = rel.parent().map(|parent| parent.components().collect()).unwrap_or_default();
    for part in parents {
        so_far.push(part);
        match folder.kind_at(&so_far)? {
            None => return Ok(()),
            Some(FileType::Directory) => {}
            Some(_) => {
                folder.remove(&so_far)?;
                return Ok(());
            }
        }
    }
    Ok(())
}

/// `git diff-tree -r -z` (raw): `:<mode> <mode> <oid> <oid> <status>\0<path>\0`.
fn parse_raw(out: &[u8]) -> Result<Vec<Entry>, CheckpointError> {
    let mut parts = split_z(out);
    let mut entries = Vec::new();
    while let Some(head) = parts.next() {
        let head = String::from_utf8_lossy(head);
        let fields: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
        let (Some(name), [_, mode, _, oid, status, ..]) = (parts.next(), fields.as_slice()) else {
            return Err(CheckpointError::Git(format!("git diff-tree answered {head:?}")));
        };
        let name_text = lossy(name);
        if name_text.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
            return Err(CheckpointError::Git(format!("a tree names {name_text:?}")));
        }
        entries.push(Entry {
            path: path_of(name).to_path_buf(),
            mode: mode.to_string(),
            oid: oid.to_string(),
            status: status.bytes().next().unwrap_or(b'M'),
        });
    }
    Ok(entries)
}

/// The objects' contents, in order, through one `git cat-file --batch`.
fn read_blobs<'a>(repo: &Repo, oids: impl Iterator<Item = &'a str>) -> Result<Vec<Vec<u8>>, CheckpointError> {
    let input: String = oids.map(|oid| format!("{oid}\n")).collect();
    if input.is_empty() {
        return Ok(Vec::new());
    }
    let count = input.lines().count();
    let mut child = repo
        .command(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|err| CheckpointError::Git(format!("git could not be run: {err}")))?;
    let watchdog = super::git::Watchdog::start(&child, repo.deadline, repo.stop.clone());
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let mut out = BufReader::new(child.stdout.take().expect("piped"));
    let bad = |what: String| CheckpointError::Git(format!("git cat-file: {what}"));
    let read = (|| {
        let mut blobs = Vec::with_capacity(count);
        for _ in 0..count {
            let mut header = String::new();
            out.read_line(&mut header).map_err(|err| bad(err.to_string()))?;
            let size: usize = header
                .split_whitespace()
                .nth(2)
                .and_then(|size| size.parse().ok())
                .ok_or_else(|| bad(format!("answered {:?}", header.trim())))?;
            let mut bytes = vec![0; size + 1];
            out.read_exact(&mut bytes).map_err(|err| bad(err.to_string()))?;
            bytes.pop();
            blobs.push(bytes);
        }
        Ok(blobs)
    })();
    drop(out);
    // Whatever was read, git is waited for (never left a zombie).
    let fired = watchdog.disarm();
    if read.is_err() {
        let _ = child.kill();
    }
    let _ = writer.join();
    let status = child.wait();
    if fired && !status.is_ok_and(|status| status.success()) {
        return Err(repo.interrupted("cat-file --batch"));
    }
    let blobs = read?;
    Ok(blobs)
}
