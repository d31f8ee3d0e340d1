//! Isolated sessions: a git worktree of the folder's repository per session,
//! outside the folder (`<data dir>/worktrees/<folder hash>/<slug>`), on a
//! branch of its own (`agent-hub/<slug>`) from the folder's `HEAD`. The agent
//! works there; **Apply** brings the session's change against its base into
//! the folder's working tree (never its index or `HEAD`), all or nothing;
//! **Commit** commits in the worktree; **Discard** drops what is not
//! committed. Deleting the session removes the worktree, and its branch
//! unless the branch has commits.
//!
//! Git runs through the CLI in a clean environment with every hook, filter
//! and external program of the repository switched off (see [`git`]).

pub mod git;
mod slug;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use protocol::api::{WorktreeFile, WorktreeInfo};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use slug::{branch_name, slug_of};

use git::Git;

/// How long one git command may run.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// A session's worktree as the hub keeps it (in the session's row).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Worktree {
    /// The worktree's directory (its top).
    pub path: PathBuf,
    pub branch: String,
    /// The commit it started from.
    pub base: String,
    /// The folder's place in its repository (`""` at the top, else `a/b`):
    /// the session works in `path/prefix`.
    #[serde(default)]
    pub prefix: String,
    /// The repository's top (the folder, or a directory above it).
    pub top: PathBuf,
    /// The worktree's admin dir in the repository (`.git/worktrees/<name>`):
    /// git is pointed there, never through the worktree's `.git` file.
    pub git_dir: PathBuf,
}

impl Worktree {
    /// What a session's worktree record that cannot be read stands as: a
    /// worktree that is not there (prompts and actions refused,
    /// `worktree_missing`), never none (the session working in the folder).
    pub fn unreadable(raw: &str) -> Self {
        let gone = PathBuf::from("/nonexistent/agent-hub/unreadable-worktree");
        let record = serde_json::from_str::<serde_json::Value>(raw).unwrap_or_default();
        let text = |key: &str| record.get(key).and_then(serde_json::Value::as_str).map(str::to_string);
        let path = text("path").map(PathBuf::from).filter(|path| path.is_absolute()).unwrap_or_else(|| gone.clone());
        let branch = text("branch").unwrap_or_default();
        Self { path, branch, base: String::new(), prefix: String::new(), top: gone.clone(), git_dir: gone }
    }

    /// Where the session works: the folder's place in the worktree.
    pub fn root(&self) -> PathBuf {
        if self.prefix.is_empty() {
            self.path.clone()
        } else {
            self.path.join(&self.prefix)
        }
    }

    /// Whether its directory is still there (deleted by hand, or not).
    pub fn exists(&self) -> bool {
        self.path.is_dir() && self.git_dir.is_dir()
    }

    pub fn info(&self) -> WorktreeInfo {
        WorktreeInfo {
            path: self.path.display().to_string(),
            branch: self.branch.clone(),
            base: self.base.clone(),
            missing: !self.exists(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorktreeError {
    #[error("The folder is not in a git repository: an isolated session needs one (git init, and a first commit).")]
    NotARepository,
    #[error(
        "The folder's git repository has no commit yet: an isolated session starts from HEAD (make a first commit)."
    )]
    NoCommit,
    #[error("This hub keeps no worktrees (it runs without a data dir).")]
    Off,
    #[error("Session '{0}' is not isolated: it has no worktree.")]
    NotIsolated(String),
    #[error("The session's worktree is gone ({0}): it was deleted outside the hub.")]
    Missing(PathBuf),
    /// Apply would change files the folder changed too: nothing was applied.
    #[error("Not applied, the folder changed these files too: {}. Nothing was changed.", describe(.0))]
    Conflict(Vec<String>),
    #[error("{0}")]
    Invalid(String),
    #[error("git failed: {0}")]
    Git(String),
}

impl WorktreeError {
    fn git(err: crate::checkpoints::CheckpointError) -> Self {
        match err {
            crate::checkpoints::CheckpointError::Git(text) => Self::Git(text),
            other => Self::Git(other.to_string()),
        }
    }

    fn io(path: &Path, err: std::io::Error) -> Self {
        Self::Git(format!("{}: {err}", path.display()))
    }
}

/// The paths named in a sentence: all of them up to 10, else the first 10 and how many more.
fn describe(paths: &[String]) -> String {
    const NAMED: usize = 10;
    let named = paths.iter().take(NAMED).cloned().collect::<Vec<_>>().join(", ");
    match paths.len() {
        0..=NAMED => named,
        n => format!("{named} and {} more", n - NAMED),
    }
}

/// The folder's repository as an isolated session would start from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub top: PathBuf,
    pub prefix: String,
    pub head: String,
}

/// What deleting a session's worktree did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Removed {
    /// The branch, kept because it has commits.
    pub branch_kept: Option<String>,
    /// The worktree was already gone.
    pub was_missing: bool,
}

/// Every session's worktree, under one directory of the hub's.
#[derive(Debug, Clone)]
pub struct Worktrees {
    root: PathBuf,
    deadline: Duration,
    /// One Apply at a time into a repository: two at once could both pass
    /// `git apply`'s check and the last write win (no 409 for the other).
    applying: Arc<std::sync::Mutex<std::collections::HashMap<PathBuf, Arc<std::sync::Mutex<()>>>>>,
}

impl Worktrees {
    pub fn new(root: PathBuf) -> Self {
        // Absolute: git resolves a relative path against the repository's top
        // (a worktree made inside the user's repository), the hub against its cwd.
        let root = std::path::absolute(&root).unwrap_or(root);
        Self { root, deadline: DEADLINE, applying: Default::default() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn git(&self, dir: &Path, git_dir: Option<&Path>) -> Result<Git, WorktreeError> {
        std::fs::create_dir_all(&self.root).map_err(|err| WorktreeError::io(&self.root, err))?;
        Git::open(dir, git_dir, &self.root, self.deadline)
    }

    fn in_worktree(&self, worktree: &Worktree) -> Result<Git, WorktreeError> {
        if !worktree.exists() {
            return Err(WorktreeError::Missing(worktree.path.clone()));
        }
        self.git(&worktree.path, Some(&worktree.git_dir))
    }

    /// The folder's repository and its `HEAD` commit; why not, said (blocking).
    pub fn origin(&self, folder: &Path) -> Result<Origin, WorktreeError> {
        let git = match self.git(folder, None) {
            Ok(git) => git,
            Err(WorktreeError::Git(_)) => return Err(WorktreeError::NotARepository),
            Err(other) => return Err(other),
        };
        let Some(top) = git.run_allowing(["rev-parse", "--show-toplevel"]) else {
            return Err(WorktreeError::NotARepository);
        };
        let top = PathBuf::from(top.trim());
        if top.as_os_str().is_empty() {
            // A bare repository, or the folder is inside `.git`.
            return Err(WorktreeError::NotARepository);
        }
        let Some(head) = git.run_allowing(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]) else {
            return Err(WorktreeError::NoCommit);
        };
        let top = top.canonicalize().map_err(|err| WorktreeError::io(&top, err))?;
        let prefix = folder
            .strip_prefix(&top)
            .map_err(|_| WorktreeError::Invalid(format!("{} is not inside {}", folder.display(), top.display())))?;
        let prefix = prefix.to_str().ok_or_else(|| WorktreeError::Invalid("the folder's path is not UTF-8".into()))?;
        // A worktree is checked out from `HEAD`: a folder not in it (untracked,
        // ignored, a folder under a dotfiles repository) would not be there.
        if !prefix.is_empty() && git.run_allowing(["cat-file", "-e", &format!("HEAD:{prefix}")]).is_none() {
            return Err(WorktreeError::Invalid(format!(
                "{} is not in the last commit of its repository ({}): an isolated session's worktree would not have it",
                folder.display(),
                top.display()
            )));
        }
        Ok(Origin { top, prefix: prefix.to_string(), head: head.trim().to_string() })
    }

    /// Whether a new session in `folder` may be isolated (blocking).
    pub fn can_isolate(&self, folder: &Path) -> bool {
        self.origin(folder).is_ok()
    }

    /// A worktree for session `id` of `folder`, on a new branch from `HEAD`
    /// (blocking). On failure nothing is left: no directory, no branch.
    pub fn create(&self, folder: &Path, id: &str, title: Option<&str>) -> Result<Worktree, WorktreeError> {
        let origin = self.origin(folder)?;
        let name = slug_of(title, id);
        let branch = branch_name(&name)?;
        let git = self.git(&origin.top, None)?;
        git.run(["check-ref-format", "--branch", &branch])
            .map_err(|_| WorktreeError::Invalid(format!("'{branch}' is not a valid branch name")))?;
        if git.run_allowing(["rev-parse", "--verify", "--quiet", &format!("refs/heads/{branch}")]).is_some() {
            return Err(WorktreeError::Invalid(format!("the branch {branch} exists already")));
        }
        let parent = self.root.join(folder_key(&origin.top));
        make_private(&self.root)?;
        make_private(&parent)?;
        let path = parent.join(&name);
        if path.exists() {
            return Err(WorktreeError::Invalid(format!("{} exists already", path.display())));
        }
        if !path.is_absolute() {
            return Err(WorktreeError::Invalid(format!("{} is not an absolute path", path.display())));
        }
        let added = git
            .run(
                ["worktree", "add", "--quiet", "-b", &branch]
                    .into_iter()
                    .map(std::ffi::OsString::from)
                    .chain([path.clone().into_os_string(), origin.head.clone().into()]),
            )
            .and_then(|_| self.git(&path, None)?.text(["rev-parse", "--absolute-git-dir"]));
        let git_dir = match added {
            Ok(git_dir) => PathBuf::from(git_dir),
            Err(err) => {
                // Whatever of it was made goes: its admin entry (only this one), the directory, the branch.
                let _ = git.run([
                    "worktree".into(),
                    "remove".into(),
                    "--force".into(),
                    "--force".into(),
                    path.clone().into_os_string(),
                ]);
                self.remove_dir(&path);
                let _ = git.run(["update-ref", "-d", &format!("refs/heads/{branch}"), &origin.head]);
                return Err(err);
            }
        };
        Ok(Worktree { path, branch, base: origin.head, prefix: origin.prefix, top: origin.top, git_dir })
    }

    /// The worktree's state as a tree (committed and not, untracked files
    /// too, ignored ones not), written into the repository's objects through
    /// a temporary index of the hub's (a copy of the worktree's own, as a stat
    /// cache): the worktree's own index is untouched.
    fn state_tree(&self, git: &Git, worktree: &Worktree) -> Result<String, WorktreeError> {
        // One of its own per read: two reads of a session (the panel's list, an
        // Apply) may run at once.
        static READS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let read = READS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = worktree.path.file_name().and_then(|name| name.to_str()).unwrap_or("worktree");
        let index =
            self.root.join(folder_key(&worktree.top)).join(format!("{name}.{}.{read}.index", std::process::id()));
        let _ = std::fs::remove_file(&index);
        let env = [("GIT_INDEX_FILE", index.as_path())];
        // Started from a copy of the worktree's own index, git's stat cache: only
        // files changed since are hashed again. Without one (nor a part of
        // one), from `HEAD`.
        let started = match copy_index(&worktree.git_dir.join("index"), &index) {
            Ok(()) => Ok(Vec::new()),
            Err(_) => {
                let _ = std::fs::remove_file(&index);
                git.run_env(["read-tree", "HEAD"], &env)
            }
        };
        let made = started
            .and_then(|_| git.run_env(["add", "-A", "--", "."], &env))
            .and_then(|_| git.run_env(["write-tree"], &env));
        let _ = std::fs::remove_file(&index);
        Ok(String::from_utf8_lossy(&made?).trim().to_string())
    }

    /// The pathspec of the folder's part of the repository.
    fn pathspec(worktree: &Worktree) -> String {
        if worktree.prefix.is_empty() {
            ":(top)".to_string()
        } else {
            format!(":(top,literal){}", worktree.prefix)
        }
    }

    /// The session's change against its base, file by file (blocking).
    pub fn files(&self, worktree: &Worktree) -> Result<Vec<WorktreeFile>, WorktreeError> {
        let git = self.in_worktree(worktree)?;
        let tree = self.state_tree(&git, worktree)?;
        let out = git.run([
            "diff",
            "--name-status",
            "-z",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            &worktree.base,
            &tree,
            "--",
            &Self::pathspec(worktree),
        ])?;
        let mut parts = out.split(|byte| *byte == 0).filter(|part| !part.is_empty());
        let mut files = Vec::new();
        while let (Some(status), Some(path)) = (parts.next(), parts.next()) {
            let status = match status.first() {
                Some(b'A') => "added",
                Some(b'D') => "deleted",
                _ => "modified",
            };
            files.push(WorktreeFile { path: String::from_utf8_lossy(path).into_owned(), status: status.into() });
        }
        Ok(files)
    }

    /// The session's change as a binary patch against its base.
    fn patch(&self, git: &Git, worktree: &Worktree) -> Result<(Vec<u8>, Vec<String>), WorktreeError> {
        let tree = self.state_tree(git, worktree)?;
        let range = [worktree.base.as_str(), tree.as_str()];
        let spec = Self::pathspec(worktree);
        let flags = ["--no-renames", "--no-ext-diff", "--no-textconv", "--no-color"];
        let names = git.run(
            ["diff", "--name-only", "-z"].iter().chain(&flags).chain(&range).chain(&["--", spec.as_str()]).copied(),
        )?;
        let names = names
            .split(|byte| *byte == 0)
            .filter(|name| !name.is_empty())
            .map(|name| String::from_utf8_lossy(name).into_owned())
            .collect();
        let patch = git.run(
            ["diff", "--binary", "--full-index"]
                .iter()
                .chain(&flags)
                .chain(&range)
                .chain(&["--", spec.as_str()])
                .copied(),
        )?;
        Ok((patch, names))
    }

    /// Brings the session's change into the folder's working tree (not its
    /// index, not `HEAD`), all or nothing (blocking). A file the folder
    /// changed too where the change goes: [`WorktreeError::Conflict`] naming
    /// each, and the folder is left as it was. Answers the files applied.
    pub fn apply(&self, worktree: &Worktree) -> Result<Vec<String>, WorktreeError> {
        let lock = {
            let mut locks = self.applying.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            locks.entry(worktree.top.clone()).or_default().clone()
        };
        let _one_at_a_time = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let inside = self.in_worktree(worktree)?;
        let (patch, names) = self.patch(&inside, worktree)?;
        if names.is_empty() {
            return Ok(names);
        }
        let folder = self.git(&worktree.top, None)?.for_apply();
        // `git apply` checks every hunk before it writes any: all or nothing.
        match folder.run_with(["apply", "--whitespace=nowarn"], patch.clone()) {
            Ok(_) => Ok(names),
            Err(WorktreeError::Git(why)) => {
                let conflicts = self.conflicts(&folder, &patch, &names);
                if conflicts.is_empty() {
                    return Err(WorktreeError::Git(why));
                }
                Err(WorktreeError::Conflict(conflicts))
            }
            Err(other) => Err(other),
        }
    }

    /// Which files of the patch do not apply to the folder, each checked alone.
    fn conflicts(&self, folder: &Git, patch: &[u8], names: &[String]) -> Vec<String> {
        let failing: Vec<String> = names
            .iter()
            .filter(|name| {
                let include = format!("--include={}", escape_glob(name));
                folder.run_with(["apply", "--check", "--whitespace=nowarn", &include], patch.to_vec()).is_err()
            })
            .cloned()
            .collect();
        failing
    }

    /// Commits everything in the worktree on the session's branch (blocking);
    /// the new commit's id.
    pub fn commit(&self, worktree: &Worktree, message: &str) -> Result<String, WorktreeError> {
        let message = message.trim();
        if message.is_empty() {
            return Err(WorktreeError::Invalid("a commit needs a message".into()));
        }
        let git = self.in_worktree(worktree)?;
        git.run(["add", "-A", "--", "."])?;
        if git.run(["diff", "--cached", "--quiet", "--no-ext-diff"]).is_ok() {
            return Err(WorktreeError::Invalid("there is nothing to commit in the session's worktree".into()));
        }
        git.run(["commit", "--quiet", "--no-verify", "--no-edit", "-m", message])?;
        git.text(["rev-parse", "--verify", "HEAD"])
    }

    /// Drops what is not committed in the worktree: files back as the
    /// branch has them, untracked ones removed (ignored ones kept) (blocking).
    pub fn discard(&self, worktree: &Worktree) -> Result<(), WorktreeError> {
        let git = self.in_worktree(worktree)?;
        git.run(["reset", "--quiet", "--hard", "HEAD"])?;
        git.run(["clean", "--quiet", "-f", "-d"])?;
        Ok(())
    }

    /// Removes the worktree, and its branch unless it has commits (blocking).
    /// A worktree deleted by hand is pruned from the repository.
    pub fn remove(&self, worktree: &Worktree) -> Result<Removed, WorktreeError> {
        let mut removed = Removed { was_missing: !worktree.exists(), ..Removed::default() };
        if !worktree.top.is_dir() {
            // The repository itself is gone: only the hub's directory to clean.
            self.remove_dir(&worktree.path);
            return Ok(removed);
        }
        let git = self.git(&worktree.top, None)?;
        // This worktree only (`prune` would drop every stale entry of the
        // repository, the user's own too); a worktree locked (`git worktree
        // lock`, which an agent can run) or deleted by hand goes as well.
        let path = worktree.path.clone().into_os_string();
        git.run(["worktree".into(), "remove".into(), "--force".into(), "--force".into(), path])?;
        self.remove_dir(&worktree.path);
        let head = format!("refs/heads/{}", worktree.branch);
        let Some(tip) = git.run_allowing(["rev-parse", "--verify", "--quiet", &head]) else { return Ok(removed) };
        let tip = tip.trim().to_string();
        let ahead = git.text(["rev-list", "--count", &format!("{}..{tip}", worktree.base)])?;
        if ahead != "0" {
            removed.branch_kept = Some(worktree.branch.clone());
        } else {
            git.run(["update-ref", "-d", &head, &tip])?;
        }
        Ok(removed)
    }

    /// A directory of the hub's, removed if git left it (never outside the root).
    fn remove_dir(&self, path: &Path) {
        let plain = path
            .components()
            .all(|part| matches!(part, std::path::Component::Normal(_) | std::path::Component::RootDir));
        if plain && path.starts_with(&self.root) && path != self.root {
            let _ = std::fs::remove_dir_all(path);
        }
    }
}

/// The folder's repository's directory name under the root.
fn folder_key(top: &Path) -> String {
    let digest = Sha256::digest(top.as_os_str().as_encoded_bytes());
    digest.iter().take(8).map(|byte| format!("{byte:02x}")).collect()
}

/// A copy of an index that git reads as the index itself: with its mtime.
/// Git trusts an entry's cached stat only for a file older than the index
/// file; one as new is "racily clean" and hashed again. A copy with a later
/// mtime makes those look older, and a same-size edit within the clock tick
/// of the original's write is missed. The mtime is read from the open file
/// the bytes come from: git replaces an index by renaming a new one over it,
/// so a write meanwhile cannot pair these bytes with another index's mtime.
/// (A filesystem with coarser timestamps rounds it down: more is hashed.)
fn copy_index(from: &Path, to: &Path) -> std::io::Result<()> {
    let mut original = std::fs::File::open(from)?;
    let written = original.metadata()?.modified()?;
    let mut copy = std::fs::File::create(to)?;
    std::io::copy(&mut original, &mut copy)?;
    copy.set_modified(written)
}

fn make_private(dir: &Path) -> Result<(), WorktreeError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).map_err(|err| WorktreeError::io(dir, err))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(|err| WorktreeError::io(dir, err))
}

/// A path as a literal `--include` pattern (wildmatch's escapes).
fn escape_glob(path: &str) -> String {
    let mut escaped = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

#[cfg(test)]
mod tests;
