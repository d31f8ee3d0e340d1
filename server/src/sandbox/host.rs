//! The sandbox's IO: what exists on the host for one request, the stand-ins
//! that keep a missing protected path from being made, and the probe.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::plan::{
    Facts, Kind, Layout, Reach, AGENT_CACHES, AGENT_CONFIG_IN_ROOT, AGENT_CREDENTIALS, AGENT_STATES,
    AGENT_STATE_READ_ONLY, AGENT_STATE_VARIABLES, CACHES, GEMINI_HOME_VARIABLE, PROTECTED_IN_GIT_DIR,
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
        facts.git(root, layout.home.as_deref(), &standing);
        drop(standing);
        let home = layout.home.as_deref();
        let mut masks = layout.masks();
        masks.extend(request.masks.iter().cloned());
        let logins: Vec<&str> = match request.reach {
            Reach::Command => AGENT_CREDENTIALS.to_vec(),
            Reach::Agent => super::plan::others_logins(request.agent).collect(),
        };
        masks.extend(home.into_iter().flat_map(|home| logins.iter().map(move |file| home.join(file))));
        facts.masks = masks.iter().filter_map(|mask| existing(mask)).collect();
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
            facts.agent_state(request, home, &env_value);
        }
        // Nothing the agent may write is a mask or the hub's own: a state dir
        // named into the data dir stays masked.
        let masks: Vec<PathBuf> = facts.masks.iter().map(|(mask, _)| mask.clone()).collect();
        facts.writable.retain(|path| !masks.iter().any(|mask| path.starts_with(mask) || mask.starts_with(path)));
        // Once each (a cache is also an agent's): bwrap uses a bound descriptor once.
        let mut seen = std::collections::HashSet::new();
        facts.writable.retain(|path| seen.insert(path.clone()));
        facts.resolver = resolver();
        facts
    }

    /// The git dirs the root works in. The root's own `.git` is pinned (bound
    /// onto itself: it cannot be renamed for a fresh one with hooks); a git
    /// dir outside the root (a subfolder's repository, a worktree's) is
    /// writable where git writes a commit, its hooks and config read-only. A
    /// repository at or above the home (a dotfiles repository) is never made
    /// writable: a later checkout there writes the home.
    fn git(&mut self, root: &Path, home: Option<&Path>, standing: &HashMap<PathBuf, Vec<u32>>) {
        let dot_git = root.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => self.pinned.push(dot_git),
            // A worktree's `.git` file names its git dir: read-only.
            Ok(meta) if meta.is_file() => self.protected.push((dot_git, Kind::File)),
            Ok(_) => return self.refuse_link(&dot_git),
            Err(_) => {}
        }
        let Some(git) = GitDirs::of(root) else { return };
        let top = git.common.parent().unwrap_or(&git.common);
        let homes_repository = home.is_some_and(|home| home.starts_with(top));
        let mut writable_dirs = Vec::new();
        if git.dir != git.common {
            // A worktree: its own admin dir, and of the repository only what a
            // commit writes (other branches' refs are writable too: refs is one dir).
            for dir in [git.dir.clone(), git.common.join("objects"), git.common.join("refs"), git.common.join("logs")] {
                if dir.is_dir() && !dir.starts_with(root) && !homes_repository {
                    writable_dirs.push(dir);
                }
            }
            for file in ["commondir", "gitdir", "config.worktree"] {
                let path = git.dir.join(file);
                self.git_file(&path, root, &writable_dirs, standing);
            }
        } else if !git.dir.starts_with(root) && !homes_repository {
            writable_dirs.push(git.dir.clone());
        }
        for name in PROTECTED_IN_GIT_DIR {
            let path = git.common.join(name);
            if *name == "hooks" {
                self.git_dir_entry(&path, Kind::Dir, root, &writable_dirs, standing);
            } else {
                self.git_file(&path, root, &writable_dirs, standing);
            }
        }
        if git.dir == git.common {
            // Read once `extensions.worktreeConfig` is set (`git sparse-checkout` sets it).
            self.git_file(&git.dir.join("config.worktree"), root, &writable_dirs, standing);
        }
        self.writable.extend(writable_dirs);
    }

    fn git_file(&mut self, path: &Path, root: &Path, writable: &[PathBuf], standing: &HashMap<PathBuf, Vec<u32>>) {
        self.git_dir_entry(path, Kind::File, root, writable, standing);
    }

    /// A protected entry of a git dir: read-only where it exists, a stand-in
    /// where it does not and could be made (its parent writable), refused
    /// where it is a link (the link itself could be replaced).
    fn git_dir_entry(
        &mut self,
        path: &Path,
        kind: Kind,
        root: &Path,
        writable: &[PathBuf],
        standing: &HashMap<PathBuf, Vec<u32>>,
    ) {
        let makeable = path.starts_with(root) || writable.iter().any(|dir| path.starts_with(dir));
        if path.starts_with(root) || std::fs::symlink_metadata(path).is_err() {
            if makeable {
                self.protect(path, kind, standing);
            }
            return;
        }
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() && makeable => self.refuse_link(path),
            Ok(_) => self.read_only.push(path.to_path_buf()),
            Err(_) => {}
        }
    }

    /// The agent's own state (writable, its hook-bearing settings read-only)
    /// and the caches every agent writes.
    fn agent_state(
        &mut self,
        request: &Request<'_>,
        home: Option<&Path>,
        env_value: &dyn Fn(&str) -> Option<OsString>,
    ) {
        let agent_home = env_value("HOME").map(PathBuf::from).or_else(|| home.map(Path::to_path_buf));
        let gemini_home = env_value(GEMINI_HOME_VARIABLE).map(PathBuf::from).filter(|dir| dir.is_absolute());
        let homes: Vec<PathBuf> = agent_home.iter().chain(gemini_home.iter()).cloned().collect();
        // A state dir is a dir of its own: never the home or one above it
        // (`.bashrc` and the rest of the home stay read-only).
        let above_home =
            |dir: &Path| [home, agent_home.as_deref()].into_iter().flatten().any(|home| home.starts_with(dir));
        let own: &[&str] =
            AGENT_STATES.iter().find(|(agent, _)| Some(*agent) == request.agent).map_or(&[], |(_, states)| *states);
        for home in &homes {
            for state in own.iter().chain(AGENT_CACHES) {
                let path = home.join(state);
                if state.ends_with(".json") {
                    // A file (`~/.claude.json`): bound where it is.
                    if let Some((path, Kind::File)) = existing(&path) {
                        self.writable.push(path);
                    }
                } else {
                    self.write_made(&path);
                }
            }
        }
        for (name, owner) in AGENT_STATE_VARIABLES {
            let dir = env_value(name).map(PathBuf::from).filter(|dir| dir.is_absolute() && !above_home(dir));
            if let Some(dir) = dir.filter(|_| owner.is_none() || *owner == request.agent) {
                self.write_made(&dir);
            }
        }
        // Claude Code's settings under `CLAUDE_CONFIG_DIR` are its `~/.claude`'s.
        let claude_dir = env_value("CLAUDE_CONFIG_DIR").map(PathBuf::from).filter(|dir| dir.is_absolute());
        let read_only = homes
            .iter()
            .flat_map(|home| AGENT_STATE_READ_ONLY.iter().map(move |(state, kind)| (home.join(state), *kind)))
            .chain(claude_dir.iter().flat_map(|dir| {
                AGENT_STATE_READ_ONLY
                    .iter()
                    .filter_map(|(state, kind)| Some((dir.join(state.strip_prefix(".claude/")?), *kind)))
            }));
        let standing = placeholders();
        for (path, kind) in read_only {
            let in_writable = path.parent().is_some_and(|dir| self.writable.iter().any(|w| dir.starts_with(w)));
            match std::fs::symlink_metadata(&path) {
                // A link in a writable dir could be replaced (the bind would hold its target only).
                Ok(meta) if meta.file_type().is_symlink() && in_writable => self.protect(&path, kind, &standing),
                Ok(_) => self.read_only.push(path),
                // A missing policies dir could take an allow-all rule; a
                // missing settings file stays missing (an empty one breaks Gemini CLI).
                Err(_) if kind == Kind::Dir && in_writable => self.protect(&path, kind, &standing),
                Err(_) => {}
            }
        }
        for (name, _) in AGENT_CONFIG_IN_ROOT {
            if let Some(kind) = kind_of(&request.root.join(name)) {
                self.agent_config.push((request.root.join(name), kind));
            }
        }
    }

    /// A protected path: bound read-only where it exists, else covered by a
    /// stand-in (which another sandbox's stand-in also is). A link is refused:
    /// what it points to could be protected, but the link itself could be
    /// replaced by a directory of the agent's.
    fn protect(&mut self, path: &Path, kind: Kind, standing: &HashMap<PathBuf, Vec<u32>>) {
        if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) {
            return self.refuse_link(path);
        }
        match existing(path) {
            Some(found) if !standing.contains_key(path) => self.protected.push(found),
            _ if path.parent().is_some_and(Path::is_dir) => self.missing_protected.push((path.to_path_buf(), kind)),
            _ => {}
        }
    }

    /// A protected path that is a link: what it points to could be bound
    /// read-only, but the link itself could be replaced; the process does not start.
    fn refuse_link(&mut self, path: &Path) {
        self.refused.get_or_insert_with(|| {
            format!(
                "{} is a symbolic link, which the sandbox cannot keep read-only; replace it with what it points to",
                path.display()
            )
        });
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

/// The plain git dirs (not a worktree's admin dir) a root works in: its own
/// `.git`, and the first `.git` directory above it (a subfolder's repository).
pub fn plain_git_dirs(root: &Path) -> Vec<PathBuf> {
    let is_dir = |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_dir());
    let own = Some(root.join(".git")).filter(|git| is_dir(git));
    let above = root.ancestors().skip(1).map(|dir| dir.join(".git")).find(|git| git.exists()).filter(|git| is_dir(git));
    own.into_iter().chain(above).collect()
}

/// Removes `name` from `dir` if it is there, following no link (`dir` is
/// opened without following one; a link named `name` is removed itself).
pub fn remove_planted(dir: &Path, name: &str) -> Option<PathBuf> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let fd =
        rustix::fs::open(dir, OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
            .ok()?;
    rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    match rustix::fs::unlinkat(&fd, name, AtFlags::empty()) {
        Ok(()) => Some(dir.join(name)),
        Err(err) => {
            tracing::warn!(path = %dir.join(name).display(), "a planted file could not be removed: {err}");
            None
        }
    }
}

/// A small file the repository holds (`.git`, `commondir`): at most 4 KiB,
/// never a FIFO that would hold the read.
fn read_small(path: &Path) -> Option<String> {
    crate::folder::read_planted(path, 4096).ok()
}

/// Stand-ins bwrap made for missing protected paths, with the process group
/// of each running sandbox that covers it (0 until it has started): removed
/// when the last of them is gone (if still empty), so one sandbox's end never
/// uncovers another's. Removing a stand-in while its sandbox still runs would
/// detach the mount in there, and let the path be made.
fn placeholders() -> MutexGuard<'static, HashMap<PathBuf, Vec<u32>>> {
    static STANDING: std::sync::LazyLock<Mutex<HashMap<PathBuf, Vec<u32>>>> = std::sync::LazyLock::new(Mutex::default);
    STANDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// This sandbox's claim on its stand-ins, let go of only once its process
/// group is gone ([`Placeholders::release_when_gone`]). The stand-ins are
/// listed with their groups in a journal (`<data>/sandbox/stand-ins`) before
/// bwrap makes them, so a hub killed with them in place removes them when it
/// starts again, unless their sandbox still runs ([`clear_journal`]).
#[derive(Debug, Default)]
pub struct Placeholders {
    paths: Vec<PathBuf>,
    journal: Option<PathBuf>,
    group: u32,
}

impl Placeholders {
    pub(super) fn claim(missing: &[(PathBuf, Kind)], stock: Option<&Path>) -> Self {
        let mut standing = placeholders();
        for (path, _) in missing {
            standing.entry(path.clone()).or_default().push(0);
        }
        let journal = stock.map(|stock| stock.join("stand-ins"));
        if !missing.is_empty() {
            write_journal(journal.as_deref(), &standing);
        }
        Self { paths: missing.iter().map(|(path, _)| path.clone()).collect(), journal, group: 0 }
    }

    /// The sandbox started in process group `pgid`.
    pub fn started(&mut self, pgid: u32) {
        if self.paths.is_empty() {
            return;
        }
        let mut standing = placeholders();
        for path in &self.paths {
            if let Some(slot) = standing.get_mut(path).and_then(|groups| groups.iter_mut().find(|group| **group == 0)) {
                *slot = pgid;
            }
        }
        self.group = pgid;
        write_journal(self.journal.as_deref(), &standing);
    }

    /// Lets go of the stand-ins once nothing of the group runs any more (a
    /// thread waits for it; a group that never ends keeps them).
    pub fn release_when_gone(self, pgid: u32) {
        if self.paths.is_empty() {
            return;
        }
        if pgid == 0 || !group_runs(pgid) {
            return drop(self);
        }
        let waiting = std::thread::Builder::new().name("sandbox-stand-ins".into()).spawn(move || {
            while group_runs(pgid) {
                std::thread::sleep(Duration::from_millis(20));
            }
            drop(self);
        });
        if let Err(err) = waiting {
            // Kept (and in the journal): cleared at the next start.
            tracing::warn!("the sandbox's stand-ins stay until the next start: {err}");
        }
    }
}

/// Whether any process of the group still runs (a zombie waiting to be
/// reaped runs nothing, and holds no mount: it does not count).
pub fn group_runs(pgid: u32) -> bool {
    group_members(pgid).iter().any(|member| !member.zombie)
}

/// A process of a group, as `/proc` shows it.
pub struct Member {
    pub pid: u32,
    /// Ended, waiting to be reaped.
    pub zombie: bool,
}

/// Every process of the group `pgid`, from `/proc/<pid>/stat`.
pub fn group_members(pgid: u32) -> Vec<Member> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
            let state = fields.next()?;
            let pgrp = fields.nth(1)?.parse::<u32>().ok()?;
            (pgrp == pgid).then_some(Member { pid, zombie: state == "Z" })
        })
        .collect()
}

fn write_journal(journal: Option<&Path>, standing: &HashMap<PathBuf, Vec<u32>>) {
    let Some(journal) = journal else { return };
    let mut text = Vec::new();
    for (path, groups) in standing {
        for group in groups {
            text.extend_from_slice(format!("{group} ").as_bytes());
            text.extend_from_slice(path.as_os_str().as_encoded_bytes());
            text.push(b'\0');
        }
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

/// At the hub's start: the stand-ins a killed hub left go (still empty),
/// except those whose sandbox still runs (an agent outlives a killed hub).
pub fn clear_journal(stock: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let journal = stock.join("stand-ins");
    let Ok(text) = std::fs::read(&journal) else { return };
    let mut kept: HashMap<PathBuf, Vec<u32>> = HashMap::new();
    let mut gone = Vec::new();
    for entry in text.split(|byte| *byte == 0).filter(|entry| !entry.is_empty()) {
        let Some(space) = entry.iter().position(|byte| *byte == b' ') else { continue };
        let group = std::str::from_utf8(&entry[..space]).ok().and_then(|group| group.parse::<u32>().ok());
        let path = Path::new(OsStr::from_bytes(&entry[space + 1..])).to_path_buf();
        if !path.is_absolute() {
            continue;
        }
        let alive = group.filter(|group| *group != 0).is_some_and(group_runs);
        if alive {
            kept.entry(path).or_default().push(group.unwrap_or(0));
        } else {
            gone.push(path);
        }
    }
    for path in gone.iter().filter(|path| !kept.contains_key(*path)) {
        remove_stand_in(path);
    }
    let mut watched = Vec::new();
    {
        let mut standing = placeholders();
        for (path, groups) in kept {
            let slot = standing.entry(path.clone()).or_default();
            for group in groups {
                if slot.contains(&group) {
                    continue;
                }
                slot.push(group);
                watched.push(Placeholders { paths: vec![path.clone()], journal: Some(journal.clone()), group });
            }
        }
        write_journal(Some(&journal), &standing);
    }
    // Each goes once its old sandbox does.
    for placeholders in watched {
        let group = placeholders.group;
        placeholders.release_when_gone(group);
    }
}

impl Drop for Placeholders {
    fn drop(&mut self) {
        if self.paths.is_empty() {
            return;
        }
        let mut standing = placeholders();
        for path in self.paths.drain(..) {
            let Some(groups) = standing.get_mut(&path) else { continue };
            if let Some(at) = groups.iter().position(|group| *group == self.group) {
                groups.swap_remove(at);
            }
            if !groups.is_empty() {
                continue;
            }
            standing.remove(&path);
            // Only an empty stand-in goes: whatever holds content is someone's.
            remove_stand_in(&path);
        }
        write_journal(self.journal.as_deref(), &standing);
    }
}

/// Holds every writable path open (no link followed in its last part, and
/// where its path says: no link on the way either), for `--bind-fd`. One that
/// cannot be held so is not bound at all (its writes fail, closed).
pub fn hold_all(facts: &mut Facts) -> Vec<std::os::fd::OwnedFd> {
    use std::os::fd::AsRawFd;
    let mut held = Vec::new();
    let mut kept = |paths: &mut Vec<PathBuf>, held_paths: &mut Vec<(i32, PathBuf)>| {
        paths.retain(|path| match hold(path) {
            Some(fd) => {
                held_paths.push((fd.as_raw_fd(), path.clone()));
                held.push(fd);
                true
            }
            None => {
                tracing::warn!(path = %path.display(), "not bound writable: it is, or leads through, a link");
                false
            }
        });
    };
    let mut held_paths = Vec::new();
    kept(&mut facts.writable, &mut held_paths);
    kept(&mut facts.pinned, &mut held_paths);
    facts.held = held_paths;
    held
}

fn hold(path: &Path) -> Option<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(path, OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let here = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd))).ok()?;
    (here == path).then_some(fd)
}

/// The top-level entries of `/tmp` and `/var/tmp` that these words name as
/// existing paths (links resolved), once each.
pub fn temporary_entries<'a>(words: impl Iterator<Item = &'a OsStr>) -> Vec<PathBuf> {
    let mut shown = Vec::new();
    for word in words {
        let path = Path::new(word);
        if !path.is_absolute() {
            continue;
        }
        let Ok(real) = path.canonicalize() else { continue };
        for temporary in [Path::new("/tmp"), Path::new("/var/tmp")] {
            let Ok(below) = real.strip_prefix(temporary) else { continue };
            if let Some(first) = below.components().next() {
                let entry = temporary.join(first);
                if !shown.contains(&entry) {
                    shown.push(entry);
                }
            }
        }
    }
    shown
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
    // A held directory bound by its descriptor, as commands' roots are (older
    // bwraps lack `--bind-fd`: every command would then fail).
    let held = std::fs::File::open("/").map_err(|err| format!("the probe could not open /: {err}"))?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&held);
    let mut command = std::process::Command::new(&bwrap);
    command
        .args(["--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc"])
        .args(["--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"])
        .args(["--bind-fd", &fd.to_string(), "/tmp/held", "--remount-ro", "/tmp/held"])
        .args(["--", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    // SAFETY: fcntl is async-signal-safe; it clears close-on-exec on the child's own copy.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut command, move || {
            rustix::io::fcntl_setfd(std::os::fd::BorrowedFd::borrow_raw(fd), rustix::io::FdFlags::empty())?;
            Ok(())
        });
    }
    let mut child =
        command.spawn().map_err(|err| format!("bwrap ({}) could not be started: {err}", bwrap.display()))?;
    drop(held);
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
    use std::os::unix::process::CommandExt;

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
    fn only_the_temporary_entries_a_command_line_names_are_shown() {
        let shown = tempfile::tempdir_in("/tmp").unwrap();
        let program = shown.path().join("bin/agent");
        std::fs::create_dir_all(program.parent().unwrap()).unwrap();
        std::fs::write(&program, "").unwrap();
        let words =
            [program.as_os_str(), OsStr::new("relative/tmp"), OsStr::new("/usr/bin/env"), OsStr::new("/tmp/not-there")];
        let top = shown.path().canonicalize().unwrap();
        assert_eq!(temporary_entries(words.into_iter()), [top]);
    }

    /// A stand-in removed while its sandbox still runs would detach the mount
    /// inside it: it stays while any process of the group runs, is journaled
    /// with the group (kept at a restart while the group runs), and goes after.
    #[test]
    fn a_stand_in_stays_while_its_group_runs_and_goes_after() {
        let (dir, stock) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let stand_in = dir.path().canonicalize().unwrap().join(".mcp.json");
        std::fs::write(&stand_in, "").unwrap();
        let mut sleeper = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let pgid = sleeper.id();
        let mut claimed = Placeholders::claim(&[(stand_in.clone(), Kind::File)], Some(stock.path()));
        claimed.started(pgid);
        claimed.release_when_gone(pgid);
        std::thread::sleep(Duration::from_millis(150));
        assert!(stand_in.exists(), "kept while the group runs");
        // A restart now keeps it too: its group still runs.
        clear_journal(stock.path());
        assert!(stand_in.exists());
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(3);
        while stand_in.exists() {
            assert!(std::time::Instant::now() < deadline, "the stand-in outlived its group");
            std::thread::sleep(Duration::from_millis(20));
        }
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
