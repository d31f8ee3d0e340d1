//! The hub's own git repository for one folder, driven through the `git` CLI
//! with a clean environment: its own `GIT_DIR` (a bare repository under the
//! hub's data dir), its own index (`GIT_INDEX_FILE`, git's stat cache of the
//! folder) and `GIT_WORK_TREE=<folder>`. Nothing of the folder's own `.git`
//! is read or written, and no user or system config, hook or attribute
//! changes what is stored: the bytes recorded are the bytes on disk.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::CheckpointError;

/// One folder's repository: where it is, and the folder it records.
#[derive(Debug, Clone)]
pub struct Repo {
    pub git_dir: PathBuf,
    pub work_tree: PathBuf,
    /// A git command still running after this long is killed (a FIFO where
    /// `.gitignore` is, a hung filesystem): the checkpoint fails, the turn goes on.
    pub deadline: std::time::Duration,
    /// The hub's own data dir when it is inside the folder (relative to
    /// it): never recorded, never restored.
    pub private: Option<String>,
    /// Set when the turn is stopped: the git command under way is killed.
    pub stop: Arc<AtomicBool>,
}

/// How long one git command may run by default.
pub const DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// Kills a child still running at its deadline. The kill happens under the
/// same lock `disarm` takes before the child is waited for, so it never hits
/// a reaped (reused) pid.
pub struct Watchdog {
    state: std::sync::Arc<(std::sync::Mutex<(bool, bool)>, std::sync::Condvar)>,
}

impl Watchdog {
    pub fn start(child: &std::process::Child, deadline: std::time::Duration, stop: Arc<AtomicBool>) -> Self {
        let state = std::sync::Arc::new((std::sync::Mutex::new((false, false)), std::sync::Condvar::new()));
        let pid = child.id() as libc::pid_t;
        let shared = state.clone();
        std::thread::spawn(move || {
            let (lock, wake) = &*shared;
            let ends = std::time::Instant::now() + deadline;
            let mut guard = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Woken by `disarm`; a stop is looked at every 50 ms.
            while !guard.0 && !stop.load(Ordering::Relaxed) {
                let left = ends.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                let slice = left.min(std::time::Duration::from_millis(50));
                guard = wake.wait_timeout(guard, slice).unwrap_or_else(std::sync::PoisonError::into_inner).0;
            }
            if !guard.0 {
                // SAFETY: kill(2) on a child not yet waited for (see `disarm`).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                guard.1 = true;
            }
        });
        Self { state }
    }

    /// Stops the watchdog (call before waiting for the child); whether it fired.
    pub fn disarm(&self) -> bool {
        let (lock, wake) = &*self.state;
        let mut guard = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        guard.0 = true;
        wake.notify_all();
        guard.1
    }
}

/// Reads a regular file of at most `limit` bytes without following a link at
/// its last component and without blocking on a FIFO or device: `None` for
/// anything else (missing, not regular, too large).
pub fn read_regular(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > limit {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= limit).then_some(bytes)
}

/// Who the commits are by (no config names anyone).
const IDENTITY: &str = "Agent Hub";
const EMAIL: &str = "agent-hub@localhost";

/// Every setting that could change what is stored or run something: given on
/// each command line, above any config file (none is read anyway).
const SETTINGS: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.filemode=true",
    "core.quotepath=false",
    "core.bigFileThreshold=512m",
    "core.untrackedCache=false",
    // A turn changes a few of many files: the index is written as a small
    // delta over a shared part (measured on 50,000 files: update-index and
    // write-tree 111 ms whole, 37 ms split).
    "core.splitIndex=true",
    "gc.auto=0",
    "maintenance.auto=false",
    "index.threads=true",
    "core.preloadIndex=true",
];

/// What `$GIT_DIR/info/attributes` says (it comes before the folder's own
/// `.gitattributes`): no end-of-line conversion, no filter, no encoding.
const ATTRIBUTES: &str = "* -text -filter -ident -working-tree-encoding\n";

impl Repo {
    /// The index: git's stat cache of the folder, kept beside the repository.
    pub fn index(&self) -> PathBuf {
        self.git_dir.join("hub-index")
    }

    /// Makes the repository when it is not there yet.
    pub fn ensure(&self) -> Result<(), CheckpointError> {
        if self.git_dir.join("HEAD").is_file() && self.git_dir.join("info/attributes").is_file() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.git_dir).map_err(|err| CheckpointError::io(&self.git_dir, err))?;
        // Copies of the folder's files (0600 ones too): for the user only.
        use std::os::unix::fs::PermissionsExt;
        for dir in [self.git_dir.parent(), Some(self.git_dir.as_path())].into_iter().flatten() {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|err| CheckpointError::io(dir, err))?;
        }
        let mut init = self.command(["init", "--bare", "--quiet", "--template="]);
        init.env_remove("GIT_DIR").env_remove("GIT_WORK_TREE").env_remove("GIT_INDEX_FILE");
        init.arg(&self.git_dir);
        finish("init", init.output())?;
        let info = self.git_dir.join("info");
        std::fs::create_dir_all(&info).map_err(|err| CheckpointError::io(&info, err))?;
        std::fs::write(info.join("attributes"), ATTRIBUTES).map_err(|err| CheckpointError::io(&info, err))?;
        Ok(())
    }

    /// Removes the `*.lock` files a killed git command left (call with the
    /// folder's lock held: no git command of the hub's is writing here).
    pub fn clear_stale_locks(&self) {
        let mut dirs = vec![self.git_dir.join("refs")];
        for name in ["hub-index.lock", "packed-refs.lock", "HEAD.lock", "config.lock", "shallow.lock"] {
            let _ = std::fs::remove_file(self.git_dir.join(name));
        }
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let Ok(kind) = entry.file_type() else { continue };
                if kind.is_dir() {
                    dirs.push(entry.path());
                } else if entry.file_name().as_encoded_bytes().ends_with(b".lock") {
                    tracing::info!(path = %entry.path().display(), "checkpoint: a stale git lock removed");
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }

    /// Keeps the folder's own `.git/info/exclude` as this repository's
    /// (read, never written): what the user's git ignores is ignored here too.
    pub fn copy_excludes(&self) {
        let mut theirs = read_regular(&self.work_tree.join(".git/info/exclude"), 1 << 20).unwrap_or_default();
        if let Some(private) = &self.private {
            theirs.extend_from_slice(format!("\n/{private}/\n").as_bytes());
        }
        let ours = self.git_dir.join("info/exclude");
        if read_regular(&ours, 1 << 20).unwrap_or_default() != theirs {
            let _ = std::fs::write(ours, theirs);
        }
    }

    /// `git <args>` in a clean environment for this repository.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = clean_command(&self.git_dir);
        command
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_INDEX_FILE", self.index())
            .env("GIT_WORK_TREE", &self.work_tree)
            .current_dir(&self.work_tree);
        for setting in SETTINGS {
            command.arg("-c").arg(setting);
        }
        command.args(args);
        command
    }

    /// Starts `git <args>` with its output piped, to be read by [`Running::output`]:
    /// walks of the folder that only read run side by side.
    pub fn start<I, S>(&self, args: I) -> Result<Running, CheckpointError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let name = describe(args.clone());
        let child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| CheckpointError::Git(format!("git could not be run: {err}")))?;
        Ok(Running::new(name, child, self))
    }

    /// Runs `git <args>`; its output, or why it failed.
    pub fn run<I, S>(&self, args: I) -> Result<Vec<u8>, CheckpointError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        self.start(args)?.output()
    }

    /// Runs `git <args>` with `input` on its stdin (written from a thread of
    /// its own: git may answer before it has read all of it).
    pub fn run_with<I, S>(&self, args: I, input: Vec<u8>) -> Result<Vec<u8>, CheckpointError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let name = describe(args.clone());
        run_child(self.command(args), &name, self.deadline, self.stop.clone(), input)
    }

    /// Why a command of this repository killed by its watchdog failed.
    pub fn interrupted(&self, name: &str) -> CheckpointError {
        interrupted(name, self.deadline, &self.stop)
    }

    /// An object's id from `git <args>`'s first line.
    pub fn oid<I, S>(&self, args: I) -> Result<String, CheckpointError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let out = self.run(args)?;
        let text = String::from_utf8_lossy(&out);
        let oid = text.trim();
        if oid.len() < 40 || !oid.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(CheckpointError::Git(format!("git answered {oid:?} for an object id")));
        }
        Ok(oid.to_string())
    }
}

/// `git` with nothing of the hub's environment, no system or user config, no
/// terminal prompt and one identity: what every git the hub runs starts from
/// (`crate::worktrees` adds its own settings for the user's repository).
pub fn clean_command(home: &Path) -> Command {
    let mut command = Command::new("git");
    command.env_clear();
    if let Some(path) = std::env::var_os("PATH") {
        command.env("PATH", path);
    }
    command
        .env("HOME", home)
        .env("LC_ALL", "C")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_AUTHOR_NAME", IDENTITY)
        .env("GIT_AUTHOR_EMAIL", EMAIL)
        .env("GIT_COMMITTER_NAME", IDENTITY)
        .env("GIT_COMMITTER_EMAIL", EMAIL)
        .stdin(Stdio::null());
    command
}

/// Runs `command` (named `name` in errors) with `input` on its stdin (written
/// from a thread of its own: git may answer before it has read all of it),
/// killed at its deadline; its output, or why it failed.
pub fn run_child(
    mut command: Command,
    name: &str,
    deadline: std::time::Duration,
    stop: Arc<AtomicBool>,
    input: Vec<u8>,
) -> Result<Vec<u8>, CheckpointError> {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| CheckpointError::Git(format!("git could not be run: {err}")))?;
    let watchdog = Watchdog::start(&child, deadline, stop.clone());
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let mut stderr = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = stderr.read_to_end(&mut text);
        text
    });
    let mut out = Vec::new();
    let read = child.stdout.take().expect("piped").read_to_end(&mut out);
    let stderr = reader.join().unwrap_or_default();
    let fired = watchdog.disarm();
    let status = child.wait().map_err(|err| CheckpointError::Git(err.to_string()))?;
    let _ = writer.join();
    // Killed (it had not ended by itself): its deadline, or a stop.
    if fired && !status.success() {
        return Err(interrupted(name, deadline, &stop));
    }
    read.map_err(|err| CheckpointError::Git(err.to_string()))?;
    if !status.success() {
        return Err(failed(name, &stderr));
    }
    Ok(out)
}

pub fn describe<I, S>(args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    args.into_iter().take(2).map(|arg| arg.as_ref().to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ")
}

fn finish(name: &str, output: std::io::Result<std::process::Output>) -> Result<Vec<u8>, CheckpointError> {
    let output = output.map_err(|err| CheckpointError::Git(format!("git could not be run: {err}")))?;
    if !output.status.success() {
        return Err(failed(name, &output.stderr));
    }
    Ok(output.stdout)
}

/// Why a command killed by its watchdog failed: the turn was stopped, or it ran too long.
pub fn interrupted(name: &str, deadline: std::time::Duration, stop: &AtomicBool) -> CheckpointError {
    if stop.load(Ordering::Relaxed) {
        return CheckpointError::Stopped;
    }
    timed_out(name, deadline)
}

fn timed_out(name: &str, deadline: std::time::Duration) -> CheckpointError {
    CheckpointError::Git(format!("`git {name}` did not end within {} s and was stopped", deadline.as_secs()))
}

pub fn failed(name: &str, stderr: &[u8]) -> CheckpointError {
    let text = String::from_utf8_lossy(stderr);
    let text: String = text.trim().chars().take(600).collect();
    CheckpointError::Git(format!("`git {name}` failed: {text}"))
}

/// The NUL-separated names of `-z` output.
pub fn split_z(out: &[u8]) -> impl Iterator<Item = &[u8]> {
    out.split(|byte| *byte == 0).filter(|name| !name.is_empty())
}

/// The path a name stands for (git's names are bytes).
pub fn path_of(name: &[u8]) -> &Path {
    use std::os::unix::ffi::OsStrExt;
    Path::new(OsStr::from_bytes(name))
}

/// A git command started by [`Repo::start`]: its output is read from threads
/// of its own from the start (a full pipe never holds git up), and a command
/// dropped unread is killed and waited for.
pub struct Running {
    name: String,
    child: Option<std::process::Child>,
    watchdog: Watchdog,
    deadline: std::time::Duration,
    stop: Arc<AtomicBool>,
    stdout: Option<std::thread::JoinHandle<std::io::Result<Vec<u8>>>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

impl Running {
    fn new(name: String, mut child: std::process::Child, repo: &Repo) -> Self {
        let watchdog = Watchdog::start(&child, repo.deadline, repo.stop.clone());
        let stdout = child.stdout.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut out = Vec::new();
                pipe.read_to_end(&mut out).map(|_| out)
            })
        });
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                let _ = pipe.read_to_end(&mut text);
                text
            })
        });
        Self { name, child: Some(child), watchdog, deadline: repo.deadline, stop: repo.stop.clone(), stdout, stderr }
    }

    /// Its output once it has ended, or why it failed (or was stopped at its deadline).
    pub fn output(mut self) -> Result<Vec<u8>, CheckpointError> {
        let read = match self.stdout.take().map(std::thread::JoinHandle::join) {
            Some(Ok(read)) => read,
            _ => Err(std::io::Error::other("git's output could not be read")),
        };
        let stderr = self.stderr.take().and_then(|reader| reader.join().ok()).unwrap_or_default();
        let fired = self.watchdog.disarm();
        let mut child = self.child.take().expect("waited for once");
        let status = child.wait().map_err(|err| CheckpointError::Git(err.to_string()))?;
        // Killed (it had not ended by itself): its deadline, or a stop.
        if fired && !status.success() {
            return Err(interrupted(&self.name, self.deadline, &self.stop));
        }
        let out = read.map_err(|err| CheckpointError::Git(err.to_string()))?;
        if !status.success() {
            return Err(failed(&self.name, &stderr));
        }
        Ok(out)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Not waited for yet: the pid is still this child's.
            self.watchdog.disarm();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
