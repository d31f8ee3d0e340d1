//! Policy files on disk: the admin, user and workspace directories, read again
//! only when they changed, so an edited file applies to the very next call without
//! a restart and without a watcher that could miss or race an edit.

use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use protocol::api::{PolicyDecision, PolicyProblem, RuleTier};
use sha2::{Digest, Sha256};

use super::evaluate::PolicySet;
use super::guard_rails::guard_rails;
use super::rule::Rule;
use super::toml_file::parse_policy_file;

/// A file modified this close to when it was last read may change again within the
/// same mtime tick with the same length; its content is compared, not its stamp.
const RACY_WINDOW: Duration = Duration::from_secs(2);

/// A policy file larger than this is not read (a problem says so): a few rules take
/// a few KiB, and every file is parsed on the call path.
const MAX_FILE: u64 = 1024 * 1024;

/// Where the user and admin tiers are read.
#[derive(Debug, Clone)]
pub struct PolicyDirs {
    pub user: Option<PathBuf>,
    pub admin: Option<PathBuf>,
    /// Gemini CLI reads the admin directory only when it is owned by root and not
    /// writable by group or others. Tests that cannot own a directory as root turn it off.
    pub admin_checked: bool,
}

impl PolicyDirs {
    /// `$HOME/.gemini/policies` and `/etc/gemini-cli/policies`, checked.
    pub fn standard() -> Self {
        PolicyDirs {
            user: std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".gemini").join("policies")),
            admin: Some(PathBuf::from("/etc/gemini-cli/policies")),
            admin_checked: true,
        }
    }
}

impl Default for PolicyDirs {
    fn default() -> Self {
        Self::standard()
    }
}

/// The rules of every folder, from a cache of parsed files. Thread-safe.
#[derive(Debug)]
pub struct PolicyFiles {
    dirs: PolicyDirs,
    cache: Mutex<HashMap<PathBuf, Cached>>,
    parses: AtomicUsize,
    /// Set when a file was read with the cache locked (for a test: it never is).
    #[cfg(test)]
    pub(super) io_under_lock: std::sync::atomic::AtomicBool,
}

#[derive(Debug)]
struct Cached {
    stamp: Stamp,
    read_at: SystemTime,
    digest: [u8; 32],
    rules: Vec<Rule>,
    problems: Vec<PolicyProblem>,
}

/// What tells an unchanged file: its length, mtime and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime: (i64, i64),
    inode: (u64, u64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp { len: meta.len(), mtime: (meta.mtime(), meta.mtime_nsec()), inode: (meta.dev(), meta.ino()) }
    }

    fn modified(&self) -> SystemTime {
        let (secs, nanos) = self.mtime;
        let since_epoch = Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32);
        SystemTime::UNIX_EPOCH + since_epoch
    }
}

impl PolicyFiles {
    pub fn new(dirs: PolicyDirs) -> Self {
        PolicyFiles {
            dirs,
            cache: Mutex::new(HashMap::new()),
            parses: AtomicUsize::new(0),
            #[cfg(test)]
            io_under_lock: Default::default(),
        }
    }

    /// Guard rails + admin + user + the folder's `.gemini/policies/*.toml` (+ `extra`:
    /// rules saved in the hub, given by the caller). A directory is listed and each of
    /// its files stat'ed on every call; a file is re-read only when its (len, mtime,
    /// inode) changed (or it changed recently, see `RACY_WINDOW`), and re-parsed only
    /// when its content did.
    /// The rules that apply in `folder`: guard rails, the admin's, the user's,
    /// the folder's own and `extra` (saved in the hub). In a folder the user has
    /// not `trusted`, the folder's own files may only tighten: their allow
    /// rules are held back (listed, never applied), as Gemini CLI's folder trust does.
    pub fn for_folder(&self, folder: &Path, extra: Vec<Rule>, trusted: bool) -> PolicySet {
        let mut rules = guard_rails();
        let mut problems = Vec::new();
        let mut seen = Vec::new();
        if let Some(admin) = &self.dirs.admin {
            match self.dirs.admin_checked.then(|| admin_dir_problem(admin)).flatten() {
                Some(problem) => problems.push(problem),
                None => self.load_dir(admin, RuleTier::Admin, &mut rules, &mut problems, &mut seen),
            }
        }
        if let Some(user) = &self.dirs.user {
            self.load_dir(user, RuleTier::User, &mut rules, &mut problems, &mut seen);
        }
        // A folder that is the home directory has the user's directory as its own:
        // Gemini CLI ranks it as the user tier, and it is read once.
        let workspace = folder.join(".gemini").join("policies");
        self.load_dir(&workspace, RuleTier::Workspace, &mut rules, &mut problems, &mut seen);
        let held_back = match trusted {
            true => Vec::new(),
            false => {
                let loosens = |rule: &Rule| rule.tier == RuleTier::Workspace && rule.decision == PolicyDecision::Allow;
                let (held, kept) = rules.into_iter().partition(loosens);
                rules = kept;
                held
            }
        };
        rules.extend(extra);
        PolicySet::new(rules, problems).holding_back(held_back)
    }

    /// How many times a policy file was parsed (for tests of the cache).
    pub fn parse_count(&self) -> usize {
        self.parses.load(Ordering::Relaxed)
    }

    /// The cache, locked only to look up or store: never across reading a directory
    /// or a file, or parsing (a slow disk must not stall every other folder's calls).
    fn cache(&self) -> MutexGuard<'_, HashMap<PathBuf, Cached>> {
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn load_dir(
        &self,
        dir: &Path,
        tier: RuleTier,
        rules: &mut Vec<Rule>,
        problems: &mut Vec<PolicyProblem>,
        seen: &mut Vec<PathBuf>,
    ) {
        let canonical = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if seen.contains(&canonical) {
            return;
        }
        seen.push(canonical);
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                self.cache().retain(|path, _| path.parent() != Some(dir));
                return;
            }
            Err(err) => {
                problems.push(problem(dir, None, format!("the directory cannot be read: {err}")));
                return;
            }
        };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.ends_with(".toml"))
            .collect();
        names.sort();
        self.cache().retain(|path, _| {
            path.parent() != Some(dir)
                || path.file_name().and_then(|n| n.to_str()).is_some_and(|n| names.iter().any(|m| m == n))
        });
        for name in names {
            let path = dir.join(&name);
            let meta = match fs::symlink_metadata(&path) {
                Ok(meta) => meta,
                Err(err) => {
                    problems.push(problem(&path, None, format!("the file cannot be read: {err}")));
                    continue;
                }
            };
            if meta.file_type().is_symlink() {
                let message = "a symbolic link; Gemini CLI 0.61 reads only regular files here, so it is ignored";
                problems.push(problem(&path, None, message.to_string()));
                continue;
            }
            if !meta.is_file() {
                continue;
            }
            if meta.len() > MAX_FILE {
                self.cache().remove(&path);
                problems.push(problem(&path, None, too_large(meta.len())));
                continue;
            }
            match self.load_file(&path, Stamp::of(&meta), tier) {
                Ok((file_rules, file_problems)) => {
                    rules.extend(file_rules);
                    problems.extend(file_problems);
                }
                Err(err) => problems.push(problem(&path, None, format!("the file cannot be read: {err}"))),
            }
        }
    }

    /// The rules and problems of one file, from the cache when it is unchanged.
    fn load_file(&self, path: &Path, stamp: Stamp, tier: RuleTier) -> std::io::Result<(Vec<Rule>, Vec<PolicyProblem>)> {
        let of = |cached: &Cached| (cached.rules.clone(), cached.problems.clone());
        {
            let cache = self.cache();
            let trusted = cache.get(path).filter(|cached| {
                cached.stamp == stamp
                    && cached.read_at.duration_since(stamp.modified()).is_ok_and(|age| age > RACY_WINDOW)
            });
            if let Some(cached) = trusted {
                return Ok(of(cached));
            }
        }
        #[cfg(test)]
        self.io_under_lock.fetch_or(self.cache.try_lock().is_err(), Ordering::Relaxed);
        let read_at = SystemTime::now();
        // At most MAX_FILE, should it have grown since it was stat'ed.
        let mut bytes = Vec::new();
        fs::File::open(path)?.take(MAX_FILE + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_FILE {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, too_large(bytes.len() as u64)));
        }
        let digest: [u8; 32] = Sha256::new()
            .chain_update(path.as_os_str().as_encoded_bytes())
            .chain_update([0])
            .chain_update(&bytes)
            .finalize()
            .into();
        if let Some(cached) = self.cache().get_mut(path).filter(|cached| cached.digest == digest) {
            cached.stamp = stamp;
            cached.read_at = read_at;
            return Ok(of(cached));
        }
        let shown = path.display().to_string();
        let (rules, problems) = match String::from_utf8(bytes) {
            Ok(text) => {
                self.parses.fetch_add(1, Ordering::Relaxed);
                let id_prefix = format!("file-{}", hex(&digest[..6]));
                parse_policy_file(&text, &shown, tier, &id_prefix)
            }
            Err(_) => (Vec::new(), vec![problem(path, None, "not UTF-8 text, the file is ignored".to_string())]),
        };
        let cached = Cached { stamp, read_at, digest, rules, problems };
        let found = of(&cached);
        self.cache().insert(path.to_path_buf(), cached);
        Ok(found)
    }
}

/// Gemini CLI's `isDirectorySecure` for the system policy directory: owned by root
/// (also a symlink to it), not writable by group or others. Missing is fine.
fn admin_dir_problem(dir: &Path) -> Option<PolicyProblem> {
    let meta = match fs::metadata(dir) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => return Some(problem(dir, None, format!("the admin policy directory cannot be checked: {err}"))),
    };
    let why = if !meta.is_dir() {
        Some("it is not a directory".to_string())
    } else if fs::symlink_metadata(dir).is_ok_and(|link| link.file_type().is_symlink() && link.uid() != 0) {
        Some("it is a symbolic link not owned by root".to_string())
    } else if meta.uid() != 0 {
        Some(format!("it is owned by uid {}, not root", meta.uid()))
    } else if meta.permissions().mode() & 0o022 != 0 {
        Some(format!("it is writable by group or others (mode {:o})", meta.permissions().mode() & 0o7777))
    } else {
        None
    };
    why.map(|why| {
        problem(
            dir,
            None,
            format!("admin policies ignored: the directory must be owned by root and not writable by group or others; {why}"),
        )
    })
}

fn too_large(len: u64) -> String {
    format!("too large ({len} bytes, over {MAX_FILE}), the file is not read")
}

fn problem(path: &Path, rule: Option<usize>, message: String) -> PolicyProblem {
    PolicyProblem { file: path.display().to_string(), rule, message }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
