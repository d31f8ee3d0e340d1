//! The sandbox's IO: what exists on the host for one request, the stand-ins
//! that keep a missing protected path from being made, and the probe.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::plan::{
    Facts, Kind, Layout, Reach, AGENT_CONFIG_IN_ROOT, AGENT_STATE, AGENT_STATE_VARIABLES, CACHES, PROTECTED_IN_GIT_DIR,
    PROTECTED_IN_ROOT,
};
use super::Request;

fn kind_of(path: &Path) -> Option<Kind> {
    let meta = std::fs::metadata(path).ok()?;
    Some(if meta.is_dir() { Kind::Dir } else { Kind::File })
}

/// A path as it exists, links resolved (a link to a credential store masks
/// the store).
fn existing(path: &Path) -> Option<(PathBuf, Kind)> {
    let kind = kind_of(path)?;
    Some((path.canonicalize().ok()?, kind))
}

impl Facts {
    pub(super) fn gather(request: &Request<'_>, layout: &Layout) -> Self {
        let root = request.root;
        let mut facts = Facts::default();
        let standing = placeholders();
        for (name, kind) in PROTECTED_IN_ROOT {
            facts.protect(&root.join(name), *kind, &standing);
        }
        if let Some(git) = GitDirs::of(root) {
            for dir in [&git.dir, &git.common] {
                if !dir.starts_with(root) && !facts.writable.contains(dir) {
                    facts.writable.push(dir.clone());
                }
            }
            for name in PROTECTED_IN_GIT_DIR {
                let path = git.common.join(name);
                match kind_of(&path) {
                    Some(_) if path.starts_with(root) => facts.protect(&path, Kind::File, &standing),
                    Some(_) => facts.read_only.push(path),
                    // A missing hooks dir would take a hook; config and attributes files too.
                    None if *name == "hooks" => facts.protect(&path, Kind::Dir, &standing),
                    None => {}
                }
            }
            let own = git.dir.join("config.worktree");
            if git.dir != git.common && own.exists() {
                facts.read_only.push(own);
            }
        }
        drop(standing);
        facts.masks = layout.masks().iter().filter_map(|mask| existing(mask)).collect();
        let home = layout.home.as_deref();
        let env_value = |name: &str| -> Option<OsString> {
            request
                .env
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
                .or_else(|| std::env::var_os(name))
                .filter(|value| !value.is_empty())
        };
        let cargo_home = env_value("CARGO_HOME").map(PathBuf::from);
        let caches = home
            .into_iter()
            .flat_map(|home| CACHES.iter().map(move |cache| home.join(cache)))
            .chain(cargo_home.iter().flat_map(|cargo| [cargo.join("registry"), cargo.join("git")]));
        for cache in caches {
            facts.write_where_made(&cache);
        }
        if request.reach == Reach::Agent {
            let agent_home = env_value("HOME").map(PathBuf::from).or_else(|| home.map(Path::to_path_buf));
            for state in agent_home.iter().flat_map(|home| AGENT_STATE.iter().map(move |state| home.join(state))) {
                match state.extension() {
                    // A file (`~/.claude.json`): bound where it is.
                    Some(ext) if ext == OsStr::new("json") => {
                        if let Some((path, Kind::File)) = existing(&state) {
                            facts.writable.push(path);
                        }
                    }
                    _ => facts.write_made(&state),
                }
            }
            for name in AGENT_STATE_VARIABLES {
                let dir = env_value(name).map(PathBuf::from).filter(|dir| dir.is_absolute());
                // A state dir is a dir of its own: never the home or one above it
                // (`.bashrc` and the rest of the home stay read-only).
                let above_home = |dir: &PathBuf| {
                    [home, agent_home.as_deref()].into_iter().flatten().any(|home| home.starts_with(dir))
                };
                if let Some(dir) = dir.filter(|dir| !above_home(dir)) {
                    facts.write_made(&dir);
                }
            }
            for (name, _) in AGENT_CONFIG_IN_ROOT {
                if let Some(kind) = kind_of(&root.join(name)) {
                    facts.agent_config.push((root.join(name), kind));
                }
            }
        }
        // Nothing the agent may write is a mask or the hub's own: a state dir
        // named into the data dir stays masked.
        let masks: Vec<PathBuf> = facts.masks.iter().map(|(mask, _)| mask.clone()).collect();
        facts.writable.retain(|path| !masks.iter().any(|mask| path.starts_with(mask) || mask.starts_with(path)));
        facts.resolver = resolver();
        facts
    }

    /// A protected path: bound read-only where it exists, else covered by a
    /// stand-in (which another sandbox's stand-in also is).
    fn protect(&mut self, path: &Path, kind: Kind, standing: &HashMap<PathBuf, usize>) {
        let link = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
        match existing(path) {
            Some(found) if !standing.contains_key(path) && !link => self.protected.push(found),
            // A link: what it points to is protected (a dangling one fails the
            // sandbox's start, closed, where its target cannot be made).
            Some(found) if link => self.protected.push(found),
            _ if path.parent().is_some_and(Path::is_dir) => self.missing_protected.push((path.to_path_buf(), kind)),
            _ => {}
        }
    }

    /// Writable where it exists, made first where its parent does (a cache a
    /// tool would make on first use).
    fn write_where_made(&mut self, dir: &Path) {
        if !dir.exists() && dir.parent().is_some_and(Path::is_dir) {
            let _ = std::fs::create_dir(dir);
        }
        if let Some((path, Kind::Dir)) = existing(dir) {
            self.writable.push(path);
        }
    }

    /// Writable, made (with its parents) where missing: an agent's own state.
    fn write_made(&mut self, dir: &Path) {
        let _ = std::fs::create_dir_all(dir);
        if let Some((path, Kind::Dir)) = existing(dir) {
            self.writable.push(path);
        }
    }
}

/// The resolver's files under `/run` (where `/etc/resolv.conf` often points),
/// kept through the private `/run` so names resolve when the network is on.
fn resolver() -> Vec<PathBuf> {
    let mut kept = Vec::new();
    if let Ok(target) = std::fs::canonicalize("/etc/resolv.conf") {
        if let Some(dir) = target.parent().filter(|dir| dir.starts_with("/run") && *dir != Path::new("/run")) {
            kept.push(dir.to_path_buf());
        }
    }
    let systemd = PathBuf::from("/run/systemd/resolve");
    if systemd.is_dir() && !kept.contains(&systemd) {
        kept.push(systemd);
    }
    kept
}

/// The git dirs a root works in: its own `.git`, or the repository a worktree
/// (a `.git` file) or a subfolder belongs to.
struct GitDirs {
    dir: PathBuf,
    common: PathBuf,
}

impl GitDirs {
    /// The root's files are the agent's to write: a `.git` file or a
    /// `commondir` it planted could name any directory, which would then be
    /// bound writable. So a git dir outside the root is taken only where git's
    /// own back-pointer confirms it (a worktree's admin dir names this very
    /// `.git` file in its `gitdir`), and a `commondir` only from such a dir.
    fn of(root: &Path) -> Option<Self> {
        let (top, dot_git) = root.ancestors().map(|dir| (dir, dir.join(".git"))).find(|(_, git)| git.exists())?;
        let meta = std::fs::symlink_metadata(&dot_git).ok()?;
        if meta.is_dir() {
            // A repository's own git dir: its common dir is itself.
            let dir = dot_git.canonicalize().ok()?;
            return Some(Self { common: dir.clone(), dir });
        }
        if !meta.is_file() {
            return None;
        }
        let text = read_small(&dot_git)?;
        let dir = top.join(text.strip_prefix("gitdir:")?.trim()).canonicalize().ok()?;
        let points_back = read_small(&dir.join("gitdir"))
            .and_then(|named| Path::new(named.trim()).canonicalize().ok())
            .is_some_and(|named| Some(named) == dot_git.canonicalize().ok());
        if dir.starts_with(root) || !points_back {
            return None;
        }
        let common = dir.join(read_small(&dir.join("commondir"))?.trim()).canonicalize().ok()?;
        // A worktree's admin dir is `<common>/worktrees/<name>`.
        (dir.parent()?.parent()? == common && common.join("HEAD").is_file()).then_some(Self { dir, common })
    }
}

/// A small file the repository holds (`.git`, `commondir`): at most 4 KiB,
/// never a FIFO that would hold the read.
fn read_small(path: &Path) -> Option<String> {
    super::agent_config::read_bounded(path, 4096)
}

/// Stand-ins bwrap made for missing protected paths, by how many running
/// sandboxes cover each: removed when the last one ends (if still empty), so
/// one sandbox's end never uncovers another's.
fn placeholders() -> MutexGuard<'static, HashMap<PathBuf, usize>> {
    static STANDING: std::sync::LazyLock<Mutex<HashMap<PathBuf, usize>>> = std::sync::LazyLock::new(Mutex::default);
    STANDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// This sandbox's claim on its stand-ins; dropped once its process has ended.
/// The stand-ins standing are listed in a journal (`<data>/sandbox/stand-ins`)
/// before bwrap makes them, so a hub killed with them in place removes them
/// when it starts again ([`clear_journal`]).
#[derive(Debug, Default)]
pub struct Placeholders {
    paths: Vec<PathBuf>,
    journal: Option<PathBuf>,
}

impl Placeholders {
    pub(super) fn claim(missing: &[(PathBuf, Kind)], stock: Option<&Path>) -> Self {
        let mut standing = placeholders();
        for (path, _) in missing {
            *standing.entry(path.clone()).or_default() += 1;
        }
        let journal = stock.map(|stock| stock.join("stand-ins"));
        if !missing.is_empty() {
            write_journal(journal.as_deref(), &standing);
        }
        Self { paths: missing.iter().map(|(path, _)| path.clone()).collect(), journal }
    }
}

fn write_journal(journal: Option<&Path>, standing: &HashMap<PathBuf, usize>) {
    let Some(journal) = journal else { return };
    let mut text = Vec::new();
    for path in standing.keys() {
        text.extend_from_slice(path.as_os_str().as_encoded_bytes());
        text.push(b'\n');
    }
    if let Err(err) = std::fs::write(journal, text) {
        tracing::warn!("the sandbox's stand-ins could not be listed in {}: {err}", journal.display());
    }
}

/// Removes a stand-in if it is still one: an empty directory or file.
fn remove_stand_in(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            let _ = std::fs::remove_dir(path);
        }
        Ok(meta) if meta.is_file() && meta.len() == 0 => {
            let _ = std::fs::remove_file(path);
        }
        _ => {}
    }
}

/// At the hub's start: the stand-ins a killed hub left (still empty) go.
pub fn clear_journal(stock: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let journal = stock.join("stand-ins");
    let Ok(text) = std::fs::read(&journal) else { return };
    for line in text.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()) {
        let path = Path::new(OsStr::from_bytes(line));
        if path.is_absolute() {
            remove_stand_in(path);
        }
    }
    let _ = std::fs::remove_file(&journal);
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        if self.paths.is_empty() {
            return;
        }
        let mut standing = placeholders();
        for path in self.paths.drain(..) {
            let Some(count) = standing.get_mut(&path) else { continue };
            *count -= 1;
            if *count > 0 {
                continue;
            }
            standing.remove(&path);
            // Only an empty stand-in goes: whatever holds content is someone's.
            remove_stand_in(&path);
        }
        write_journal(self.journal.as_deref(), &standing);
    }
}

/// The program's path as the sandbox will find it (the same `PATH`: the
/// host is visible read-only), or `NotFound`.
pub fn find_program(program: &OsString, env: &[(OsString, OsString)]) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |path: &Path| {
        std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    };
    let program_path = Path::new(program);
    if program_path.components().count() > 1 {
        return if runnable(program_path) {
            Ok(program_path.to_path_buf())
        } else {
            Err(std::io::Error::new(std::io::ErrorKind::NotFound, format!("{} not found", program_path.display())))
        };
    }
    let path = env
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.clone())
        .or_else(|| std::env::var_os("PATH"));
    path.iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|candidate| runnable(candidate))
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::NotFound, format!("{} not found on PATH", program_path.display()))
        })
}

/// `<data>/sandbox`, holding `empty.json` (`{}`), which stands in for a
/// hidden agent config file.
pub fn stock(data_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = data_dir.join("sandbox");
    std::fs::create_dir_all(&dir)?;
    let empty = dir.join("empty.json");
    if std::fs::read(&empty).ok().as_deref() != Some(b"{}") {
        std::fs::write(&empty, b"{}")?;
    }
    dir.canonicalize()
}

/// Finds bwrap and starts a sandbox with every namespace the plan uses: the
/// path to bwrap, or why the sandbox cannot work here.
pub fn probe(path: Option<&OsStr>) -> Result<PathBuf, String> {
    if !cfg!(target_os = "linux") {
        return Err(format!("the sandbox needs Linux (bubblewrap); this is {}", std::env::consts::OS));
    }
    let bwrap = path
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| "bubblewrap (bwrap) is not installed".to_string())?;
    let mut child = std::process::Command::new(&bwrap)
        .args(["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc"])
        .args(["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"])
        .args(["--", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|err| format!("bwrap ({}) could not be started: {err}", bwrap.display()))?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("bwrap did not start a sandbox within 10 s".into());
            }
        }
    };
    if status.success() {
        return Ok(bwrap);
    }
    let mut said = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = (&mut stderr).take(2048).read_to_string(&mut said);
    }
    let said = said.trim();
    Err(if said.contains("uid map") || said.contains("namespace") || said.contains("Operation not permitted") {
        format!("bwrap cannot create namespaces here (user namespaces off, or a container that forbids them): {said}")
    } else {
        format!("bwrap failed its probe ({status}): {said}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn a_planted_git_file_or_commondir_never_makes_another_directory_writable() {
        let (root, elsewhere) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = root.path().canonicalize().unwrap();
        // A `.git` file naming any directory, and that directory dressed as an admin dir.
        std::fs::write(root.join(".git"), format!("gitdir: {}\n", elsewhere.path().display())).unwrap();
        std::fs::write(elsewhere.path().join("commondir"), "/\n").unwrap();
        assert!(GitDirs::of(&root).is_none());
        // Even pointing back at the planted file: its commondir names no repository.
        std::fs::write(elsewhere.path().join("gitdir"), format!("{}\n", root.join(".git").display())).unwrap();
        assert!(GitDirs::of(&root).is_none());
        // A `.git` directory in the root: its own, with no commondir followed.
        std::fs::remove_file(root.join(".git")).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".git/commondir"), format!("{}\n", elsewhere.path().display())).unwrap();
        let found = GitDirs::of(&root).unwrap();
        assert_eq!((found.dir, found.common), (root.join(".git"), root.join(".git")));
    }

    #[test]
    fn a_real_worktree_and_a_subfolder_find_their_repository() {
        let repo = tempfile::tempdir().unwrap();
        let repo = repo.path().canonicalize().unwrap();
        git(&repo, &["init", "-q"]);
        std::fs::create_dir(repo.join("sub")).unwrap();
        std::fs::write(repo.join("sub/a.txt"), "a").unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", "one"]);
        let below = GitDirs::of(&repo.join("sub")).unwrap();
        assert_eq!((below.dir.clone(), below.common), (repo.join(".git"), repo.join(".git")));
        let parent = tempfile::tempdir().unwrap();
        let worktree = parent.path().canonicalize().unwrap().join("wt");
        git(&repo, &["worktree", "add", "-q", worktree.to_str().unwrap()]);
        let found = GitDirs::of(&worktree).unwrap();
        assert_eq!(found.common, repo.join(".git"));
        assert_eq!(found.dir, repo.join(".git/worktrees/wt"));
    }
}
