//! Recording the folder as it is now: a tree in the hub's repository. Git's
//! own index is the stat cache: `ls-files --modified --others --deleted`
//! names only what changed since the last snapshot (by stat), and only those
//! files are hashed again (`update-index`); `write-tree` reuses the index's
//! cached trees for every directory that did not change.

use std::collections::HashSet;

use protocol::checkpoints::{CheckpointFile, FileChange, LeftOut, LeftOutWhy, LEFT_OUT_LISTED};

use super::git::{path_of, split_z, Repo};
use super::CheckpointError;

/// Files over this size are left out (and said).
pub const MAX_FILE: u64 = 10 * 1024 * 1024;

/// The folder as one snapshot recorded it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub tree: String,
    pub left_out: Vec<LeftOut>,
    pub left_out_more: usize,
}

/// Records the folder now (call with the folder's lock held).
pub fn take(repo: &Repo) -> Result<Snapshot, CheckpointError> {
    repo.ensure()?;
    repo.copy_excludes();
    let listed = repo.run(["ls-files", "-z", "--others", "--modified", "--deleted", "--exclude-standard"])?;
    let (mut update, mut remove, mut left_out) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = HashSet::new();
    for name in split_z(&listed) {
        if !seen.insert(name) {
            continue;
        }
        if name.ends_with(b"/") {
            // A repository of its own (git lists it as a directory).
            left_out.push(LeftOut { path: lossy(name), why: LeftOutWhy::Repository });
            continue;
        }
        if beyond_link(&repo.work_tree, path_of(name)) {
            // A directory replaced by a link: what was under it is gone from the folder.
            remove.push(name);
            continue;
        }
        match std::fs::symlink_metadata(repo.work_tree.join(path_of(name))) {
            // Gone: removed from the index.
            Err(_) => remove.push(name),
            Ok(meta) if meta.is_file() && meta.len() > MAX_FILE => {
                remove.push(name);
                left_out.push(LeftOut { path: lossy(name), why: LeftOutWhy::TooLarge });
            }
            Ok(meta) if meta.is_file() || meta.file_type().is_symlink() => update.push(name),
            // A file that became a directory (its files are listed apart), a FIFO, a socket.
            Ok(_) => remove.push(name),
        }
    }
    if !remove.is_empty() {
        repo.run_with(["update-index", "-z", "--force-remove", "--stdin"], joined(&remove))?;
    }
    if !update.is_empty() {
        repo.run_with(["update-index", "-z", "--add", "--remove", "--replace", "--stdin"], joined(&update))?;
    }
    let tree = repo.oid(["write-tree"])?;
    let ignored =
        repo.run(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--no-empty-directory"])?;
    left_out.extend(split_z(&ignored).map(|name| LeftOut { path: lossy(name), why: LeftOutWhy::Ignored }));
    let left_out_more = left_out.len().saturating_sub(LEFT_OUT_LISTED);
    left_out.truncate(LEFT_OUT_LISTED);
    Ok(Snapshot { tree, left_out, left_out_more })
}

/// What changed from tree `from` to tree `to`.
pub fn changes(repo: &Repo, from: &str, to: &str) -> Result<Vec<CheckpointFile>, CheckpointError> {
    if from == to {
        return Ok(Vec::new());
    }
    let out = repo.run(["diff-tree", "-r", "-z", "--no-renames", "--name-status", from, to])?;
    let mut parts = split_z(&out);
    let mut files = Vec::new();
    while let (Some(status), Some(name)) = (parts.next(), parts.next()) {
        let change = match status.first() {
            Some(b'A') => FileChange::Added,
            Some(b'D') => FileChange::Deleted,
            _ => FileChange::Modified,
        };
        files.push(CheckpointFile { path: lossy(name), change });
    }
    Ok(files)
}

/// Whether a directory above `rel` is a symlink (git records nothing beyond one).
fn beyond_link(root: &std::path::Path, rel: &std::path::Path) -> bool {
    rel.ancestors()
        .skip(1)
        .filter(|dir| !dir.as_os_str().is_empty())
        .any(|dir| std::fs::symlink_metadata(root.join(dir)).is_ok_and(|meta| meta.file_type().is_symlink()))
}

fn joined(names: &[&[u8]]) -> Vec<u8> {
    let mut input = Vec::with_capacity(names.iter().map(|name| name.len() + 1).sum());
    for name in names {
        input.extend_from_slice(name);
        input.push(0);
    }
    input
}

pub fn lossy(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}
