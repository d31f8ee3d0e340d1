//! Checkpoints: the folder as it was before each turn of a session, and what
//! the turn changed, whichever tool changed it (file tools, shell commands, an
//! ACP agent's own writes). The content store is a git object database of the
//! hub's own: a bare repository per folder under the data dir
//! (`checkpoints/<sha256 of the folder>.git`), never the folder's `.git`.
//!
//! A checkpoint is two commits kept by refs of the hub's:
//! `refs/hub/<session>/<n>/before` (recorded before the turn's first change
//! can run; its message holds the checkpoint's facts as one JSON line) and
//! `refs/hub/<session>/<n>/after` (when the turn ends; its message lists the
//! files changed). The refs are all there is to read back after a restart.

pub(crate) mod git;
mod restore;
mod snapshot;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, PoisonError};

use protocol::checkpoints::{Checkpoint, CheckpointDiff, CheckpointFile, CheckpointKind, LeftOut};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use git::Repo;
use snapshot::Report;
pub use snapshot::MAX_FILE;

/// The patch a diff answers is cut here.
pub const MAX_PATCH: usize = 4 * 1024 * 1024;

/// A prompt is kept up to this many characters in its checkpoint.
const PROMPT_KEPT: usize = 2000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    #[error("The session has no checkpoint {0}.")]
    NotFound(u64),
    /// Files changed since the session's last checkpoint by someone else:
    /// nothing was changed.
    #[error("{} changed since this session's last turn; rewind with force to overwrite them.", describe_paths(.0))]
    Conflict(Vec<String>),
    #[error("The checkpoint store failed: {0}")]
    Git(String),
    #[error("The folder could not be restored: {0}")]
    Restore(String),
    /// The turn was stopped while its checkpoint was being recorded.
    #[error("the turn was stopped before its checkpoint was recorded")]
    Stopped,
}

impl CheckpointError {
    fn io(path: &Path, err: std::io::Error) -> Self {
        Self::Git(format!("{}: {err}", path.display()))
    }
}

fn describe_paths(paths: &[String]) -> String {
    match paths {
        [one] => format!("{one} was"),
        many => format!("{} files were", many.len()),
    }
}

/// What the hub knows of a turn when it starts.
#[derive(Debug, Clone, Default)]
pub struct TurnStart {
    pub prompt: Option<String>,
    /// The `seq` of the prompt's event.
    pub seq: Option<u64>,
    /// How long the built-in agent's conversation was before the turn (none
    /// for an ACP agent, whose conversation is its own).
    pub conversation: Option<usize>,
}

/// The result of a rewind.
#[derive(Debug, Clone)]
pub struct Rewound {
    /// The rewind's own checkpoint.
    pub checkpoint: Checkpoint,
    /// The turn rewound to (the turns from it on are undone).
    pub turn: u64,
    /// How long the built-in agent's conversation was before that turn.
    pub conversation: Option<usize>,
    /// Paths the rewind would have removed but left as they are: they were
    /// left out of the checkpoint (ignored, too large, a repository of their own).
    pub kept: Vec<String>,
}

/// The facts a "before" commit keeps (its message, one JSON line).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Before {
    kind: CheckpointKind,
    turn: u64,
    at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rewound_to: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    conversation: Option<usize>,
    #[serde(default)]
    left_out: Vec<LeftOut>,
    #[serde(default)]
    left_out_more: usize,
}

/// What an "after" commit keeps.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct After {
    at: u64,
    files: Vec<CheckpointFile>,
}

/// One checkpoint as its refs hold it.
#[derive(Debug, Clone)]
struct Stored {
    n: u64,
    before: Before,
    before_tree: String,
    after: Option<(After, String)>,
    /// The blob of its full left-out list.
    left_out_blob: Option<String>,
}

impl Stored {
    fn shown(&self) -> Checkpoint {
        Checkpoint {
            id: self.n,
            turn: self.before.turn,
            at: self.before.at,
            prompt: self.before.prompt.clone(),
            seq: self.before.seq,
            kind: self.before.kind,
            rewound_to: self.before.rewound_to,
            files: self.after.as_ref().map(|(after, _)| after.files.clone()).unwrap_or_default(),
            ended: self.after.is_some(),
            left_out: self.before.left_out.clone(),
            left_out_more: self.before.left_out_more,
        }
    }
}

/// Every folder's checkpoints, under one directory of the hub's.
pub struct Checkpoints {
    root: PathBuf,
    /// One lock per folder: its index and refs change under it (and whether
    /// no git `*.lock` can be left over there).
    locks: Mutex<HashMap<PathBuf, Arc<Mutex<bool>>>>,
    /// How long one git command may run (then it is killed, the checkpoint fails).
    deadline: std::time::Duration,
    /// The hub's data dir (the root's parent), canonical.
    data_dir: Option<PathBuf>,
}

impl Checkpoints {
    /// Checkpoints kept under `root` (made on first use).
    pub fn new(root: PathBuf) -> Self {
        let data_dir = root.parent().and_then(|data| data.canonicalize().ok());
        Self { root, locks: Mutex::new(HashMap::new()), deadline: git::DEADLINE, data_dir }
    }

    /// The same, with git commands stopped after `deadline`.
    pub fn with_deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The repository that records `folder` (canonical).
    pub fn repository_of(&self, folder: &Path) -> PathBuf {
        let digest = Sha256::digest(folder.as_os_str().as_encoded_bytes());
        let name: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        self.root.join(format!("{name}.git"))
    }

    fn repo(&self, folder: &Path) -> Repo {
        self.repo_until(folder, Arc::default())
    }

    /// The repository, its git commands killed once `stop` is set.
    fn repo_until(&self, folder: &Path, stop: Arc<AtomicBool>) -> Repo {
        let private = self
            .data_dir
            .as_deref()
            .and_then(|data| data.strip_prefix(folder).ok())
            .filter(|rel| !rel.as_os_str().is_empty())
            .map(|rel| rel.to_string_lossy().into_owned());
        Repo {
            git_dir: self.repository_of(folder),
            work_tree: folder.to_path_buf(),
            deadline: self.deadline,
            private,
            stop,
        }
    }

    /// Runs `work` on the folder's repository under the folder's lock. A
    /// git command killed (at its deadline, by a stop) or a hub killed mid-way
    /// can leave git's `*.lock` files behind, and git refuses to go on while
    /// they are there: they are cleared before the first work of this
    /// process and after any that failed (only this hub writes here, and
    /// under this lock).
    fn writing<T>(
        &self,
        folder: &Path,
        stop: Arc<AtomicBool>,
        work: impl FnOnce(&Repo) -> Result<T, CheckpointError>,
    ) -> Result<T, CheckpointError> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
            locks.entry(folder.to_path_buf()).or_default().clone()
        };
        let mut clean = lock.lock().unwrap_or_else(PoisonError::into_inner);
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            // Stopped while another checkpoint or a rewind of the folder ran.
            return Err(CheckpointError::Stopped);
        }
        let repo = self.repo_until(folder, stop);
        if !*clean {
            repo.clear_stale_locks();
        }
        // Left dirty should `work` panic.
        *clean = false;
        let result = work(&repo);
        *clean =
            !matches!(result, Err(CheckpointError::Git(_) | CheckpointError::Restore(_) | CheckpointError::Stopped));
        result
    }

    /// Records the folder before a turn of `session` (blocking: git runs).
    /// A checkpoint left without its "after" (the hub was killed during its
    /// turn) gets this state as its "after". Returns the new checkpoint's number.
    pub fn before_turn(&self, folder: &Path, session: &str, start: TurnStart) -> Result<u64, CheckpointError> {
        self.before_turn_until(folder, session, start, Arc::default())
    }

    /// [`Self::before_turn`], given up (its git command killed) once `stop`
    /// is set: the turn was stopped, it need not wait for its checkpoint.
    pub fn before_turn_until(
        &self,
        folder: &Path,
        session: &str,
        start: TurnStart,
        stop: Arc<AtomicBool>,
    ) -> Result<u64, CheckpointError> {
        self.writing(folder, stop, |repo| {
            // The refs are read while the folder is walked.
            repo.ensure()?;
            let reading = start_reading(repo, session)?;
            let snap = snapshot::take(repo, Report::LeftOut)?;
            let stored = parse_refs(&reading.output()?, session);
            if let Some(last) = stored.last().filter(|last| last.after.is_none()) {
                write_after(repo, session, last, &snap.tree)?;
            }
            let n = stored.last().map_or(1, |last| last.n + 1);
            let turn = stored.iter().filter(|cp| cp.before.kind == CheckpointKind::Turn).count() as u64 + 1;
            let before = Before {
                kind: CheckpointKind::Turn,
                turn,
                at: crate::clock::now_ms(),
                prompt: start.prompt.map(|prompt| prompt.chars().take(PROMPT_KEPT).collect()),
                seq: start.seq,
                rewound_to: None,
                conversation: start.conversation,
                left_out: snap.left_out,
                left_out_more: snap.left_out_more,
            };
            let last_left_out = stored.last().and_then(|last| last.left_out_blob.as_deref());
            write_before(repo, session, n, &snap.tree, &before, &snap.all_left_out, last_left_out)?;
            Ok(n)
        })
    }

    /// Records the folder after the turn of checkpoint `n` (blocking).
    pub fn after_turn(&self, folder: &Path, session: &str, n: u64) -> Result<Vec<CheckpointFile>, CheckpointError> {
        self.writing(folder, Arc::default(), |repo| {
            repo.ensure()?;
            let reading = start_reading(repo, session)?;
            let snap = snapshot::take(repo, Report::TreeOnly)?;
            let stored = parse_refs(&reading.output()?, session);
            let cp = stored.iter().find(|cp| cp.n == n).ok_or(CheckpointError::NotFound(n))?;
            write_after(repo, session, cp, &snap.tree)
        })
    }

    /// The session's checkpoints, oldest first.
    pub fn list(&self, folder: &Path, session: &str) -> Result<Vec<Checkpoint>, CheckpointError> {
        let repo = self.repo(folder);
        if !repo.git_dir.join("HEAD").is_file() {
            return Ok(Vec::new());
        }
        let stored = read_all(&repo, session)?;
        let mut shown: Vec<Checkpoint> = stored.iter().map(Stored::shown).collect();
        // One cut short (no "after"): what changed up to the next checkpoint.
        for (index, cp) in stored.iter().enumerate() {
            if let (None, Some(next)) = (&cp.after, stored.get(index + 1)) {
                shown[index].files = snapshot::changes(&repo, &cp.before_tree, &next.before_tree)?;
            }
        }
        Ok(shown)
    }

    /// What checkpoint `n`'s turn changed, as a unified diff.
    pub fn diff(&self, folder: &Path, session: &str, n: u64) -> Result<CheckpointDiff, CheckpointError> {
        let repo = self.repo(folder);
        let stored = if repo.git_dir.join("HEAD").is_file() { read_all(&repo, session)? } else { Vec::new() };
        let index = stored.iter().position(|cp| cp.n == n).ok_or(CheckpointError::NotFound(n))?;
        let cp = &stored[index];
        let end = match (&cp.after, stored.get(index + 1)) {
            (Some((_, tree)), _) => tree.clone(),
            (None, Some(next)) => next.before_tree.clone(),
            (None, None) => cp.before_tree.clone(),
        };
        let files = snapshot::changes(&repo, &cp.before_tree, &end)?;
        let mut patch = repo.run([
            "diff",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            cp.before_tree.as_str(),
            end.as_str(),
        ])?;
        let truncated = patch.len() > MAX_PATCH;
        patch.truncate(MAX_PATCH);
        // A rewind goes back over the later checkpoints too: their files, said.
        let mut later: BTreeMap<String, CheckpointFile> = BTreeMap::new();
        for (index, cp) in stored.iter().enumerate().skip(index + 1) {
            let changed = match (&cp.after, stored.get(index + 1)) {
                (Some((after, _)), _) => after.files.clone(),
                (None, Some(next)) => snapshot::changes(&repo, &cp.before_tree, &next.before_tree)?,
                (None, None) => Vec::new(),
            };
            for file in changed {
                if !files.iter().any(|own| own.path == file.path) {
                    later.entry(file.path.clone()).or_insert(file);
                }
            }
        }
        let later = later.into_values().collect();
        Ok(CheckpointDiff { id: n, files, patch: String::from_utf8_lossy(&patch).into_owned(), truncated, later })
    }

    /// Puts the files the session's turns changed from checkpoint `n` on back
    /// as they were before its turn (later turns included), blocking; files
    /// none of them changed are left as they are. A file whose content
    /// differs from what the session's last checkpoint recorded after its
    /// turn was changed by someone else: unless `force`, the rewind is
    /// refused with those paths and nothing changes. The rewind is a
    /// checkpoint of its own.
    pub fn rewind(&self, folder: &Path, session: &str, n: u64, force: bool) -> Result<Rewound, CheckpointError> {
        self.rewind_over(folder, session, n, force.then_some(None))
    }

    /// [`Self::rewind`], forced over only the conflicts in `force` when it
    /// names some (`Some(Some(paths))`: the paths the user saw), over every
    /// one with `Some(None)`, over none with `None`.
    pub fn rewind_over(
        &self,
        folder: &Path,
        session: &str,
        n: u64,
        force: Option<Option<&[String]>>,
    ) -> Result<Rewound, CheckpointError> {
        let seen: Option<HashSet<&str>> = match force {
            None => Some(HashSet::new()),
            Some(None) => None,
            Some(Some(paths)) => Some(paths.iter().map(String::as_str).collect()),
        };
        self.writing(folder, Arc::default(), |repo| {
            if !repo.git_dir.join("HEAD").is_file() {
                return Err(CheckpointError::NotFound(n));
            }
            let stored = read_all(repo, session)?;
            let from = stored.iter().position(|cp| cp.n == n).ok_or(CheckpointError::NotFound(n))?;
            let target = &stored[from];
            let now = snapshot::take(repo, Report::LeftOut)?;
            let last = stored.last().expect("the target is one");
            // What the session's turns from the target on changed: only those files go back.
            let mut theirs = HashSet::new();
            for (index, cp) in stored.iter().enumerate().skip(from) {
                let files = match (&cp.after, stored.get(index + 1)) {
                    (Some((after, _)), _) => after.files.clone(),
                    (None, Some(next)) => snapshot::changes(repo, &cp.before_tree, &next.before_tree)?,
                    (None, None) => snapshot::changes(repo, &cp.before_tree, &now.tree)?,
                };
                theirs.extend(files.into_iter().map(|file| file.path));
            }
            let mut touched: Vec<String> = snapshot::changes(repo, &now.tree, &target.before_tree)?
                .into_iter()
                .map(|file| file.path)
                .filter(|path| theirs.contains(path))
                .collect();
            // What the target's "before" left out is not in its tree: never removed.
            let left_then = read_left_out(repo, session, target)?;
            // Nor is the hub's own data dir, when it is inside the folder.
            let private: Vec<String> = repo.private.iter().map(|rel| format!("{rel}/")).collect();
            let keep = |path: &String| covered(&left_then, path) || covered(&private, path);
            let kept: Vec<String> = touched.iter().filter(|path| keep(path)).cloned().collect();
            touched.retain(|path| !keep(path));
            if let Some(seen) = &seen {
                // Someone else's change: between the session's turns from the
                // target on (a turn's "after" to the next one's "before"), and
                // since the session's last state. A last turn cut short (no
                // "after": the hub was killed) leaves nothing to compare with.
                let mut by_others: HashSet<String> = HashSet::new();
                for (index, cp) in stored.iter().enumerate().skip(from) {
                    if let (Some((_, after)), Some(next)) = (&cp.after, stored.get(index + 1)) {
                        by_others
                            .extend(snapshot::changes(repo, after, &next.before_tree)?.into_iter().map(|f| f.path));
                    }
                }
                let cut = last.after.is_none();
                if let Some((_, left)) = &last.after {
                    by_others.extend(snapshot::changes(repo, left, &now.tree)?.into_iter().map(|f| f.path));
                }
                // A file recorded then and left out now (grown past the limit,
                // ignored since) shows as removed since: a conflict too.
                let conflicts: Vec<String> = touched
                    .iter()
                    .filter(|path| cut || related(&by_others, path))
                    .filter(|path| !seen.contains(path.as_str()))
                    .cloned()
                    .collect();
                if !conflicts.is_empty() {
                    return Err(CheckpointError::Conflict(conflicts));
                }
            }
            let m = last.n + 1;
            let before = Before {
                kind: CheckpointKind::Rewind,
                turn: target.before.turn,
                at: crate::clock::now_ms(),
                prompt: None,
                seq: None,
                rewound_to: Some(n),
                conversation: None,
                left_out: now.left_out,
                left_out_more: now.left_out_more,
            };
            if last.after.is_none() {
                write_after(repo, session, last, &now.tree)?;
            }
            // The state before the rewind is kept first: a failure midway can be undone.
            let last_left_out = last.left_out_blob.as_deref();
            write_before(repo, session, m, &now.tree, &before, &now.all_left_out, last_left_out)?;
            restore::restore(repo, &now.tree, &target.before_tree, &touched.into_iter().collect())?;
            let after = snapshot::take(repo, Report::TreeOnly)?;
            let mut cp = Stored { n: m, before, before_tree: now.tree.clone(), after: None, left_out_blob: None };
            let files = write_after(repo, session, &cp, &after.tree)?;
            cp.after = Some((After { at: crate::clock::now_ms(), files }, after.tree));
            let conversation = target.before.conversation.filter(|_| target.before.kind == CheckpointKind::Turn);
            Ok(Rewound { checkpoint: cp.shown(), turn: target.before.turn, conversation, kept })
        })
    }

    /// Removes a session's checkpoints (its refs; git keeps what other refs need).
    pub fn forget(&self, folder: &Path, session: &str) -> Result<(), CheckpointError> {
        self.writing(folder, Arc::default(), |repo| {
            if !repo.git_dir.join("HEAD").is_file() {
                return Ok(());
            }
            let refs = repo.run(["for-each-ref", "--format=delete %(refname)", &session_refs(session)])?;
            if !refs.is_empty() {
                repo.run_with(["update-ref", "--stdin"], refs)?;
            }
            Ok(())
        })
    }
}

/// Whether `path`, a parent of it, or a path under it was changed (by someone else).
fn related(changed: &HashSet<String>, path: &str) -> bool {
    if changed.contains(path) {
        return true;
    }
    if Path::new(path).ancestors().skip(1).any(|dir| changed.contains(&*dir.to_string_lossy())) {
        return true;
    }
    let below = format!("{path}/");
    changed.iter().any(|other| other.starts_with(&below))
}

/// Whether `path` is one of `left_out` or under one of its directories (`dir/`).
fn covered(left_out: &[String], path: &str) -> bool {
    left_out.iter().any(|item| {
        let dir = item.trim_end_matches('/');
        item == path || dir == path || path.strip_prefix(dir).is_some_and(|rest| rest.starts_with('/'))
    })
}

/// Writes checkpoint `n`'s "before": a commit of `tree` with its facts, and
/// every path the snapshot left out (NUL-separated, a blob), both refs in
/// one transaction. The blob is written only when the list changed since
/// `last_left_out` (git's id of the last one; a turn seldom changes it).
fn write_before(
    repo: &Repo,
    session: &str,
    n: u64,
    tree: &str,
    before: &Before,
    left_out: &[String],
    last_left_out: Option<&str>,
) -> Result<(), CheckpointError> {
    let mut list = Vec::new();
    for path in left_out {
        list.extend_from_slice(path.as_bytes());
        list.push(0);
    }
    let blob = match last_left_out.filter(|last| *last == blob_id(&list)) {
        Some(same) => same.to_string(),
        None => {
            let out = repo.run_with(["hash-object", "-w", "--stdin"], list)?;
            String::from_utf8_lossy(&out).trim().to_string()
        }
    };
    let out = repo.run_with(["commit-tree", tree, "-F", "-"], json_line(before).into_bytes())?;
    let commit = String::from_utf8_lossy(&out).trim().to_string();
    let refs = format!(
        "update {} {blob}\nupdate {} {commit}\n",
        ref_name(session, n, "left-out"),
        ref_name(session, n, "before")
    );
    repo.run_with(["update-ref", "--stdin"], refs.into_bytes())?;
    Ok(())
}

/// Git's (SHA-1) id of a blob of `bytes`.
fn blob_id(bytes: &[u8]) -> String {
    use sha1::Digest as _;
    let mut hasher = sha1::Sha1::new();
    hasher.update(format!("blob {}\0", bytes.len()).as_bytes());
    hasher.update(bytes);
    hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

/// What checkpoint `cp`'s "before" left out: the full list, or the listed
/// part for a checkpoint recorded before the full list was kept.
fn read_left_out(repo: &Repo, session: &str, cp: &Stored) -> Result<Vec<String>, CheckpointError> {
    match repo.run(["cat-file", "blob", &ref_name(session, cp.n, "left-out")]) {
        Ok(out) => Ok(git::split_z(&out).map(snapshot::lossy).collect()),
        Err(_) => Ok(cp.before.left_out.iter().map(|item| item.path.clone()).collect()),
    }
}

fn ref_name(session: &str, n: u64, side: &str) -> String {
    format!("{}{n}/{side}", session_refs(session))
}

/// Where a session's refs are. A session id git would refuse in a ref name
/// (`.x`, `a..b`, `x.lock`), or one with a capital (`ABC` and `abc` are one
/// file on a case-insensitive disk), is written in hex after a `=`, which no
/// session id has: never two sessions under one name.
fn session_refs(session: &str) -> String {
    let refused = session.is_empty()
        || session.starts_with('.')
        || session.contains("..")
        || session.ends_with(".lock")
        || !session.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || b"._-".contains(&byte));
    if refused {
        let hex: String = session.bytes().map(|byte| format!("{byte:02x}")).collect();
        return format!("refs/hub/={hex}/");
    }
    format!("refs/hub/{session}/")
}

fn json_line<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// A commit of `tree` with `message`, kept by `refname`.
fn write_commit(repo: &Repo, refname: &str, tree: &str, message: &str) -> Result<String, CheckpointError> {
    let out = repo.run_with(["commit-tree", tree, "-F", "-"], message.as_bytes().to_vec())?;
    let commit = String::from_utf8_lossy(&out).trim().to_string();
    repo.run(["update-ref", refname, commit.as_str()])?;
    Ok(commit)
}

/// Records `tree` as what checkpoint `cp` left; returns what it changed.
fn write_after(repo: &Repo, session: &str, cp: &Stored, tree: &str) -> Result<Vec<CheckpointFile>, CheckpointError> {
    let files = snapshot::changes(repo, &cp.before_tree, tree)?;
    let after = After { at: crate::clock::now_ms(), files: files.clone() };
    write_commit(repo, &ref_name(session, cp.n, "after"), tree, &json_line(&after))?;
    Ok(files)
}

/// Every checkpoint of `session`, by number.
fn read_all(repo: &Repo, session: &str) -> Result<Vec<Stored>, CheckpointError> {
    Ok(parse_refs(&start_reading(repo, session)?.output()?, session))
}

/// Starts reading the session's refs (see [`parse_refs`]).
fn start_reading(repo: &Repo, session: &str) -> Result<git::Running, CheckpointError> {
    let format = "--format=%(refname)%00%(objectname)%00%(tree)%00%(contents:subject)%00";
    repo.start(["for-each-ref", format, &session_refs(session)])
}

/// The session's checkpoints from its refs, by number.
fn parse_refs(out: &[u8], session: &str) -> Vec<Stored> {
    let mut befores: BTreeMap<u64, (Before, String)> = BTreeMap::new();
    let mut afters: BTreeMap<u64, (After, String)> = BTreeMap::new();
    let mut left_outs: BTreeMap<u64, String> = BTreeMap::new();
    let text = String::from_utf8_lossy(out);
    let prefix = session_refs(session);
    let mut fields = text.split('\0').map(|field| field.trim_start_matches('\n'));
    while let (Some(name), Some(object), Some(tree), Some(subject)) =
        (fields.next(), fields.next(), fields.next(), fields.next())
    {
        let Some(rest) = name.strip_prefix(&prefix) else { continue };
        let Some((number, side)) = rest.split_once('/') else { continue };
        let Ok(n) = number.parse::<u64>() else { continue };
        match side {
            "before" => match serde_json::from_str(subject) {
                Ok(before) => {
                    befores.insert(n, (before, tree.to_string()));
                }
                Err(err) => tracing::warn!(%name, "a checkpoint that cannot be read: {err}"),
            },
            "after" => {
                if let Ok(after) = serde_json::from_str(subject) {
                    afters.insert(n, (after, tree.to_string()));
                }
            }
            "left-out" => {
                left_outs.insert(n, object.to_string());
            }
            _ => {}
        }
    }
    befores
        .into_iter()
        .map(|(n, (before, before_tree))| Stored {
            n,
            before,
            before_tree,
            after: afters.remove(&n),
            left_out_blob: left_outs.remove(&n),
        })
        .collect()
}

#[cfg(test)]
mod tests;
