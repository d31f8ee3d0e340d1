//! The kernel's boundary around everything the hub starts: the built-in agent's
//! commands and every ACP agent (with what they start in turn) run inside
//! bubblewrap. The rules decide when to ask; this decides what a process can
//! reach, whatever its text says.
//!
//! - [`plan`]: what a process gets (mounts, namespaces), as bwrap's arguments:
//!   plain Rust with no IO, from facts gathered by [`host`].
//! - [`host`]: the facts (which paths exist, the git dirs of the root), the
//!   placeholders that keep a missing protected path from being created, the
//!   probe that says whether bwrap works here.

pub mod agent_config;
mod host;
pub mod plan;

use std::ffi::OsString;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

pub use host::{group_members, group_runs, Member, Placeholders};
pub use plan::{agent_of, Reach, CREDENTIAL_STORES, PROTECTED_IN_ROOT};

/// Whether and why processes run sandboxed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Every process runs in bwrap (this one).
    Enforced { bwrap: PathBuf },
    /// The sandbox cannot work here: processes run without it, and YOLO stays off.
    Unavailable { reason: String },
    /// `--no-sandbox`: the user chose to run without it.
    Disabled,
}

impl Mode {
    /// What the probe of bwrap on `path` says.
    fn probed(path: Option<&std::ffi::OsStr>) -> Self {
        match host::probe(path) {
            Ok(bwrap) => Mode::Enforced { bwrap },
            Err(reason) => Mode::Unavailable { reason },
        }
    }
}

/// What the hub is started with for the sandbox.
#[derive(Debug, Clone, Default)]
pub struct SandboxConfig {
    /// `--no-sandbox`.
    pub disabled: bool,
    /// The hub's data dir (masked: the database, keys, checkpoints, other
    /// sessions' worktrees).
    pub data_dir: Option<PathBuf>,
    /// The hub's config dir (masked: the agents file names commands to run).
    pub config_dir: Option<PathBuf>,
    /// The user's home (credential stores and caches are found there).
    pub home: Option<PathBuf>,
    /// Where `bwrap` is looked for (`PATH` when `None`).
    pub path: Option<OsString>,
}

impl SandboxConfig {
    /// The hub's own dirs and the home of this process's environment.
    pub fn for_hub(disabled: bool, data_dir: Option<PathBuf>) -> Self {
        Self {
            disabled,
            data_dir,
            config_dir: crate::user_dir("XDG_CONFIG_HOME", ".config"),
            home: std::env::var_os("HOME").filter(|home| !home.is_empty()).map(PathBuf::from),
            path: std::env::var_os("PATH"),
        }
    }
}

#[derive(Debug)]
pub struct Sandbox {
    mode: Mode,
    /// What every sandboxed process loses or keeps, host-wide.
    layout: plan::Layout,
    /// Where the hub keeps what it binds in (an empty JSON file).
    stock: Option<PathBuf>,
}

/// The sandbox a session's process starts in, and on what terms (asked of
/// the hub when the process starts).
#[derive(Debug, Clone)]
pub struct Terms {
    pub sandbox: Arc<Sandbox>,
    /// The folder's network for commands (agents always have theirs).
    pub network: bool,
    /// The folder is not trusted: its agents' own config is hidden from them.
    pub hide_agent_config: bool,
    /// What the folder masks besides the default list (absolute paths).
    pub masks: Vec<PathBuf>,
}

#[cfg(test)]
impl Terms {
    /// The sandbox as this machine has it, network off, nothing hidden or masked more.
    pub fn on_this_machine() -> Self {
        Self { sandbox: Sandbox::detected(None), network: false, hide_agent_config: false, masks: Vec::new() }
    }
}

/// One process to start in the sandbox.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The session's working root (the folder, or its worktree), canonical.
    pub root: &'a Path,
    /// The root held open (bound by this fd, so a path swapped for a link
    /// after the check binds nothing else); `None` binds `root` by path.
    pub root_fd: Option<RawFd>,
    pub reach: Reach,
    pub network: bool,
    /// An untrusted folder: its agents' own config is hidden from the agent.
    pub hide_agent_config: bool,
    /// The environment the process gets (an agent's `HOME` and state dirs are
    /// found from it).
    pub env: &'a [(OsString, OsString)],
    /// Which known agent it is (`plan::agent_of`): only its own state is writable.
    pub agent: Option<&'static str>,
    /// What the folder masks besides the default list (absolute paths).
    pub masks: &'a [PathBuf],
}

/// A command ready to spawn, and what must live as long as it runs.
pub struct Prepared {
    pub command: tokio::process::Command,
    /// Removed once the process has ended (dropped after it is reaped).
    pub placeholders: Placeholders,
    /// Whether it runs sandboxed.
    pub sandboxed: bool,
    /// The writable paths bound by descriptor: open until the spawn returned.
    pub held: Vec<std::os::fd::OwnedFd>,
}

impl Sandbox {
    /// Probes bwrap once (a real sandbox with every namespace this plan uses),
    /// unless disabled.
    pub fn new(config: SandboxConfig) -> Self {
        let mode = if config.disabled { Mode::Disabled } else { Mode::probed(config.path.as_deref()) };
        Self::with_mode(mode, config)
    }

    /// The probe's answer, once per process, for the hub's own dirs (tests
    /// and embedders that give no sandbox get this one).
    pub fn detected(data_dir: Option<PathBuf>) -> Arc<Self> {
        static PROBED: OnceLock<Mode> = OnceLock::new();
        let mode = PROBED.get_or_init(|| Mode::probed(std::env::var_os("PATH").as_deref())).clone();
        Arc::new(Self::with_mode(mode, SandboxConfig::for_hub(false, data_dir)))
    }

    /// Whether `path` (as it really is, links resolved) is masked in every
    /// sandbox: the hub's own dirs, the credential stores, the agents' logins.
    /// What the hub reads or writes for an agent never is.
    pub fn masks_path(&self, path: &Path) -> bool {
        let home = self.layout.home.as_deref();
        let logins = plan::AGENT_CREDENTIALS.iter().filter_map(|login| home.map(|home| home.join(login)));
        self.layout.masks().into_iter().chain(logins).any(|mask| path.starts_with(mask))
    }

    /// A folder's own masks as they are on disk (links resolved where they
    /// exist), so a path reached through a link is masked too.
    pub fn resolved(masks: &[PathBuf]) -> Vec<PathBuf> {
        masks.iter().flat_map(|mask| [mask.clone(), mask.canonicalize().unwrap_or_else(|_| mask.clone())]).collect()
    }

    /// No sandbox at all: a command the user approved to run outside it.
    pub fn off() -> Arc<Self> {
        Arc::new(Self::with_mode(Mode::Disabled, SandboxConfig::for_hub(true, None)))
    }

    /// Stand-ins a killed hub left in folders are removed here, at its start.
    fn with_mode(mode: Mode, config: SandboxConfig) -> Self {
        let layout = plan::Layout::new(config.home.clone(), [config.data_dir.clone(), config.config_dir.clone()]);
        let stock = config.data_dir.as_deref().and_then(|dir| host::stock(dir).ok());
        if let Some(stock) = &stock {
            host::clear_journal(stock);
        }
        Self { mode, layout, stock }
    }

    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    pub fn enforced(&self) -> bool {
        matches!(self.mode, Mode::Enforced { .. })
    }

    /// What the header says: on, off by choice, or unavailable and why.
    pub fn status(&self) -> protocol::api::SandboxStatus {
        use protocol::api::{SandboxState, SandboxStatus};
        match &self.mode {
            Mode::Enforced { .. } => SandboxStatus { state: SandboxState::On, reason: None },
            Mode::Disabled => SandboxStatus {
                state: SandboxState::Disabled,
                reason: Some(
                    "The hub was started with --no-sandbox: commands and agents reach whatever the user can.".into(),
                ),
            },
            Mode::Unavailable { reason } => {
                SandboxStatus { state: SandboxState::Unavailable, reason: Some(reason.clone()) }
            }
        }
    }

    /// `program args…`, inside the sandbox when it is enforced, in a process
    /// group of its own (its pid is the group's id). The caller sets the
    /// environment and stdio. A program that cannot be found is said here
    /// (inside the sandbox it would be bwrap's failure, not the program's).
    pub fn command(&self, request: &Request<'_>, program: &OsString, args: &[OsString]) -> std::io::Result<Prepared> {
        let Mode::Enforced { bwrap } = &self.mode else {
            let mut command = tokio::process::Command::new(program);
            command.args(args).current_dir(request.root).process_group(0);
            return Ok(Prepared { command, placeholders: Placeholders::default(), sandboxed: false, held: Vec::new() });
        };
        let found = host::find_program(program, request.env)?;
        let mut facts = plan::Facts::gather(request, &self.layout);
        // An agent's command line is the user's (the agents file, the flags);
        // a command's words are the model's: only its program counts.
        // A wrapper's script (`sh -c '… node /tmp/x/agent.mjs'`) counts word by word.
        let named: Vec<OsString> = args
            .iter()
            .filter(|_| request.reach == Reach::Agent)
            .flat_map(|arg| {
                arg.to_string_lossy().split([' ', '\t', '\n', '\'', '"']).map(OsString::from).collect::<Vec<_>>()
            })
            .collect();
        let words = std::iter::once(found.as_os_str()).chain(named.iter().map(|word| word.as_os_str()));
        facts.temporary_shown = host::temporary_entries(words);
        if let Some(refused) = &facts.refused {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!("the sandbox refused: {refused}"),
            ));
        }
        // Held open now, bound by descriptor: what is checked is what is bound.
        let held = host::hold_all(&mut facts);
        let placeholders = Placeholders::claim(&facts.missing_protected, self.stock.as_deref());
        let arguments = plan::arguments(&facts, request, self.stock.as_deref());
        let mut command = tokio::process::Command::new(bwrap);
        command.args(arguments).arg("--").arg(program).args(args).current_dir(request.root);
        let fds: Vec<i32> = request.root_fd.into_iter().chain(facts.held.iter().map(|(fd, _)| *fd)).collect();
        // SAFETY: setsid and fcntl are async-signal-safe. A session of its own,
        // with no terminal: nothing inside can push keystrokes into the hub's
        // (TIOCSTI), and bwrap leads the group the hub ends. Clearing
        // close-on-exec on the child's own copy of the held root (fd flags are
        // per process) lets bwrap bind it (`--bind-fd`); bwrap closes it
        // before the program runs.
        unsafe {
            command.pre_exec(move || {
                rustix::process::setsid()?;
                for fd in &fds {
                    rustix::io::fcntl_setfd(std::os::fd::BorrowedFd::borrow_raw(*fd), rustix::io::FdFlags::empty())?;
                }
                Ok(())
            });
        }
        Ok(Prepared { command, placeholders, sandboxed: true, held })
    }
}

/// Whether the sandbox keeps `rel` (a path relative to the working root, as
/// it really is: links resolved) read-only: one of [`PROTECTED_IN_ROOT`] or
/// anything in the root's `.git`. What the hub writes for an agent (ACP's
/// `fs`) obeys the same list, though the hub itself runs unsandboxed.
pub fn kept_read_only(rel: &Path) -> bool {
    let first = rel.components().next().map(|part| part.as_os_str());
    first.is_some_and(|first| first == ".git" || PROTECTED_IN_ROOT.iter().any(|(name, _)| first == *name))
}

/// Whether `rel` is a folder's agent config, hidden from its agents until the
/// folder is trusted.
pub fn hidden_until_trust(rel: &Path) -> bool {
    let first = rel.components().next().map(|part| part.as_os_str());
    first.is_some_and(|first| plan::AGENT_CONFIG_IN_ROOT.iter().any(|(name, _)| first == *name))
}

/// A `commondir` the agent planted in a git dir the root works in (its own
/// `.git`, and the repository above it for a subfolder) would lead the
/// user's next `git` to another config (its hooks, `core.fsmonitor`): git
/// never writes one there (only in a worktree's admin dir, read-only to the
/// sandbox). Removed after each command, each agent's turn and an agent's
/// end, without following a link; what was removed is said.
pub fn tidy_git(root: &Path) -> Option<String> {
    let removed: Vec<String> = host::plain_git_dirs(root)
        .into_iter()
        .filter_map(|dir| host::remove_planted(&dir, "commondir"))
        .map(|path| path.display().to_string())
        .collect();
    (!removed.is_empty()).then(|| {
        format!("[sandbox: removed {}, which would have led git to another repository's config]", removed.join(", "))
    })
}

/// How a result says the sandbox refused something (see [`refusal_in`]).
pub(crate) const REFUSED_NOTE: &str = "[sandbox: the kernel refused";

/// Whether a command's result says the sandbox refused something.
pub fn refusal_said(output: &str) -> bool {
    output.contains(REFUSED_NOTE)
}

/// Words a sandboxed call's output carries when the kernel refused it, so the
/// card (and the model) can say what happened.
pub fn refusal_in(output: &str) -> Option<&'static str> {
    const SIGNS: [(&str, &str); 4] = [
        ("Read-only file system", "a write outside what the sandbox lets it write"),
        ("Network is unreachable", "a network connection (the folder's network is off)"),
        ("Temporary failure in name resolution", "a network connection (the folder's network is off)"),
        ("Could not resolve host", "a network connection (the folder's network is off)"),
    ];
    SIGNS.iter().find(|(sign, _)| output.contains(sign)).map(|(_, what)| *what)
}
