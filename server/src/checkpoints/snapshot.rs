//! Recording the folder as it is now: a tree in the hub's repository. Git's
//! own index is the stat cache: `ls-files --modified --others`
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
    /// Every path left out (a directory as `dir/`), not only the ones listed.
    pub all_left_out: Vec<String>,
}

/// From this many files to hash at once (a folder's first checkpoint), their
/// contents go into one pack (`git fast-import`) first: `update-index` then
/// finds every object there, and writes none loose. Measured on 50,000 files:
/// 5.1 s loose (sys time, a file per object), about 1 s this way.
const BULK: usize = 512;

/// The ignored files, a directory wholly ignored named once (`dir/`).
const IGNORED: [&str; 7] =
    ["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--no-empty-directory"];

/// What a snapshot says besides the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Report {
    /// The files left out, ignored ones included (a walk of its own).
    LeftOut,
    /// Only the tree (the state after a turn).
    TreeOnly,
}

/// Records the folder now (call with the folder's lock held).
pub fn take(repo: &Repo, report: Report) -> Result<Snapshot, CheckpointError> {
    repo.ensure()?;
    repo.copy_excludes();
    // Three walks that only read, side by side: the files not in the index
    // yet, those whose stat changed (deleted ones too: `--deleted` beside
    // `--modified` would stat every file again), and the ignored paths.
    let ignored = match report {
        Report::LeftOut => Some(repo.start(IGNORED)?),
        Report::TreeOnly => None,
    };
    let others = repo.start(["ls-files", "-z", "--others", "--exclude-standard"])?;
    let modified = repo.run(["ls-files", "-z", "--modified"])?;
    let others = others.output()?;
    let listed = [modified, others].join(&0u8);
    // The hub's own data dir inside the folder: out of the index, whatever it held.
    let private_listed = match &repo.private {
        Some(private) => repo.run(["ls-files", "-z", "--", &format!(":(literal){private}/")])?,
        None => Vec::new(),
    };
    let is_private = |name: &[u8]| {
        repo.private.as_ref().is_some_and(|private| {
            name.strip_prefix(private.as_bytes()).is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
        })
    };
    let (mut update, mut remove, mut left_out) = (Vec::new(), Vec::new(), Vec::new());
    let mut seen = HashSet::new();
    for name in split_z(&private_listed) {
        if seen.insert(name) {
            remove.push(name);
        }
    }
    for name in split_z(&listed) {
        if !seen.insert(name) || is_private(name) {
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
    if update.len() >= BULK {
        pack(repo, &update)?;
    }
    if !update.is_empty() {
        repo.run_with(["update-index", "-z", "--add", "--remove", "--replace", "--stdin"], joined(&update))?;
    }
    let tree = repo.oid(["write-tree"])?;
    let Some(ignored) = ignored else {
        return Ok(Snapshot { tree, left_out: Vec::new(), left_out_more: 0, all_left_out: Vec::new() });
    };
    let ignored = ignored.output()?;
    left_out.extend(split_z(&ignored).map(|name| LeftOut { path: lossy(name), why: LeftOutWhy::Ignored }));
    let all_left_out = left_out.iter().map(|item| item.path.clone()).collect();
    let left_out_more = left_out.len().saturating_sub(LEFT_OUT_LISTED);
    left_out.truncate(LEFT_OUT_LISTED);
    Ok(Snapshot { tree, left_out, left_out_more, all_left_out })
}

/// Writes the regular files among `names` into one pack, streamed from a
/// thread of its own into `git fast-import`. What cannot be read is left to
/// `update-index`, which says so.
fn pack(repo: &Repo, names: &[&[u8]]) -> Result<(), CheckpointError> {
    use std::io::Write;
    let files: Vec<std::path::PathBuf> = names.iter().map(|name| repo.work_tree.join(path_of(name))).collect();
    let mut child = repo
        .command(["fast-import", "--quiet"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|err| CheckpointError::Git(format!("git could not be run: {err}")))?;
    let watchdog = super::git::Watchdog::start(&child, repo.deadline, repo.stop.clone());
    let mut stdin = std::io::BufWriter::with_capacity(1 << 20, child.stdin.take().expect("piped"));
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        for file in files {
            // Never a FIFO or device, never past a link, never more than the limit.
            let Some(bytes) = super::git::read_regular(&file, MAX_FILE) else { continue };
            write!(stdin, "blob\ndata {}\n", bytes.len())?;
            stdin.write_all(&bytes)?;
            stdin.write_all(b"\n")?;
        }
        stdin.flush()
    });
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        use std::io::Read;
        let _ = pipe.read_to_string(&mut stderr);
    }
    let written = writer.join().map_err(|_| CheckpointError::Git("the pack's writer failed".into()))?;
    let fired = watchdog.disarm();
    let status = child.wait().map_err(|err| CheckpointError::Git(err.to_string()))?;
    if fired && !status.success() {
        return Err(repo.interrupted("fast-import"));
    }
    if let Err(err) = written.map_err(|err| err.to_string()).and(if status.success() { Ok(()) } else { Err(stderr) }) {
        // The loose way still works: update-index hashes what is missing.
        tracing::warn!("checkpoint: the bulk pack failed ({err}); objects are written one by one");
    }
    Ok(())
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
