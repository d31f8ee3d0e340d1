//! What a sandboxed process gets, as bwrap's arguments: no IO here (the facts
//! come from `host`), so every rule of the boundary is tested on its own.
//!
//! Later mounts cover earlier ones, so the order is the policy: the host
//! read-only, private `/tmp` and `/run`, masks that hold the root, the root
//! writable, what else may be written, what inside it stays read-only, and last
//! the masks (they win over everything, the root included).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::Request;

/// Who the process is: a command (one call of the built-in agent) or an agent
/// (its whole life, with whatever it starts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    Command,
    Agent,
}

/// Inside the working root, the paths through which a write becomes code that
/// runs later outside the sandbox (an agent's settings and hooks, MCP servers,
/// git's hooks and config, direnv, editor tasks, commit hooks): read-only, and
/// one that does not exist cannot be made.
pub const PROTECTED_IN_ROOT: &[(&str, Kind)] = &[
    (".gemini", Kind::Dir),
    (".claude", Kind::Dir),
    (".qwen", Kind::Dir),
    (".codex", Kind::Dir),
    (".mcp.json", Kind::File),
    (".envrc", Kind::File),
    (".vscode", Kind::Dir),
    (".idea", Kind::Dir),
    (".husky", Kind::Dir),
    (".pre-commit-config.yaml", Kind::File),
    (".mise.toml", Kind::File),
    ("mise.toml", Kind::File),
    (".tool-versions", Kind::File),
];

/// Inside a git dir (the root's, or the repository's a worktree or a subfolder
/// belongs to): hooks and config run or name programs; read-only. Only where
/// the git dir exists (a folder without one may be made a repository).
pub const PROTECTED_IN_GIT_DIR: &[&str] = &["hooks", "config", "config.worktree", "info/attributes"];

/// Credential stores under the home, and what holds a socket or a session
/// that would reach past the sandbox (a container engine is root on the
/// host; a browser profile holds the hub's own token): masked (an empty
/// directory, an empty file) for commands and agents alike.
pub const CREDENTIAL_STORES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/op",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".docker/config.json",
    ".kube",
    ".pypirc",
    ".npmrc",
    ".yarnrc.yml",
    ".gem/credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".terraform.d/credentials.tfrc.json",
    ".password-store",
    ".local/share/keyrings",
    ".vault-token",
    ".docker",
    ".colima",
    ".rd",
    ".lima",
    ".1password",
    ".Xauthority",
    ".mozilla",
    "snap/firefox",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
];

/// The agents' logins: masked for commands (an agent reads its own).
pub const AGENT_CREDENTIALS: &[&str] =
    &[".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json", ".qwen/oauth_creds.json"];

/// Package caches a build writes (so `cargo build`, `npm ci`, `pip install`
/// work offline from what is cached): writable. Nothing here runs at login.
pub const CACHES: &[&str] = &[
    ".cargo/registry",
    ".cargo/git",
    ".npm",
    ".cache/pip",
    ".cache/uv",
    ".cache/go-build",
    "go/pkg/mod",
    ".m2/repository",
    ".gradle/caches",
    ".cache/yarn",
    ".yarn/berry/cache",
    ".local/share/pnpm/store",
    ".cache/pnpm",
    ".bun/install/cache",
];

/// An agent's own state (sessions, logins), under its `HOME`, by the agent
/// it belongs to: writable for that agent only, never for a command. An agent
/// the hub does not know gets none of them.
pub const AGENT_STATES: &[(&str, &[&str])] = &[
    ("claude", &[".claude", ".claude.json", ".config/claude"]),
    ("gemini", &[".gemini"]),
    ("codex", &[".codex"]),
    ("qwen", &[".qwen"]),
];

/// Caches every agent writes (an `npx`-started agent, Claude Code's own);
/// not all of `~/.cache` or `~/.local/state` (shell prompts and tools' trust
/// lists live there).
pub const AGENT_CACHES: &[&str] = &[".npm", ".cache/claude-cli-nodejs"];

/// Within an agent's state, what runs code or decides what runs without a
/// card elsewhere: read-only (`~/.gemini/policies` holds the hub's own user
/// rules; the settings files hold hooks the agent runs outside the hub too).
pub const AGENT_STATE_READ_ONLY: &[(&str, Kind)] = &[
    (".gemini/policies", Kind::Dir),
    (".gemini/settings.json", Kind::File),
    (".claude/settings.json", Kind::File),
    (".claude/settings.local.json", Kind::File),
];

/// Variables that move an agent's state dir elsewhere, and whose they are
/// (`None`: every agent's cache).
pub const AGENT_STATE_VARIABLES: &[(&str, Option<&str>)] = &[
    ("CLAUDE_CONFIG_DIR", Some("claude")),
    ("CODEX_HOME", Some("codex")),
    ("QWEN_HOME", Some("qwen")),
    ("XDG_CACHE_HOME", None),
    ("XDG_STATE_HOME", None),
    ("NODE_COMPILE_CACHE", None),
];

/// Gemini CLI's stand-in for `HOME` (its state is `.gemini` below it).
pub const GEMINI_HOME_VARIABLE: &str = "GEMINI_CLI_HOME";

/// Which known agent a command line starts, if any: by the name of its
/// program, or of the script its first argument names (`node …/qwen`), each
/// beginning with the agent's name (`claude-code-acp`, `codex-acp`).
pub fn agent_of(words: &[String]) -> Option<&'static str> {
    let names: Vec<&str> = words
        .iter()
        .take(2)
        .filter_map(|word| std::path::Path::new(word).file_name().and_then(|name| name.to_str()))
        .collect();
    AGENT_STATES.iter().map(|(agent, _)| *agent).find(|agent| names.iter().any(|name| name.starts_with(agent)))
}

/// The login files of agents other than `agent`: masked for it (each agent
/// reads its own).
pub fn others_logins(agent: Option<&str>) -> impl Iterator<Item = &'static str> + '_ {
    AGENT_CREDENTIALS
        .iter()
        .copied()
        .filter(move |file| agent.is_none_or(|agent| !file.starts_with(&format!(".{agent}"))))
}

/// The agents' own config in a folder (hooks, MCP servers, commands they
/// run): hidden from an agent until the folder is trusted.
pub const AGENT_CONFIG_IN_ROOT: &[(&str, Kind)] = &[
    (".claude", Kind::Dir),
    (".mcp.json", Kind::File),
    (".qwen", Kind::Dir),
    (".gemini", Kind::Dir),
    (".codex", Kind::Dir),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
}

/// What is the same for every sandboxed process of this hub.
#[derive(Debug, Clone)]
pub struct Layout {
    pub home: Option<PathBuf>,
    /// The hub's own dirs (data, config): masked.
    pub hub_dirs: Vec<PathBuf>,
}

impl Layout {
    pub fn new(home: Option<PathBuf>, hub_dirs: impl IntoIterator<Item = Option<PathBuf>>) -> Self {
        let hub_dirs = hub_dirs.into_iter().flatten().map(|dir| dir.canonicalize().unwrap_or(dir)).collect();
        Self { home: home.map(|home| home.canonicalize().unwrap_or(home)), hub_dirs }
    }

    /// Every path that is masked, whether it exists or not.
    pub fn masks(&self) -> Vec<PathBuf> {
        let mut masks = self.hub_dirs.clone();
        if let Some(home) = &self.home {
            masks.extend(CREDENTIAL_STORES.iter().map(|store| home.join(store)));
        }
        masks
    }
}

/// What exists on the host, for one request (gathered by `host`).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The root's protected paths that exist.
    pub protected: Vec<(PathBuf, Kind)>,
    /// The root's protected paths that do not: bound over an empty stand-in so
    /// they cannot be made (the stand-in is removed afterwards).
    pub missing_protected: Vec<(PathBuf, Kind)>,
    /// Masks that exist.
    pub masks: Vec<(PathBuf, Kind)>,
    /// Writable besides the root: caches, the git dirs the root works in
    /// (outside it), an agent's state.
    pub writable: Vec<PathBuf>,
    /// Read-only within those: git hooks and config.
    pub read_only: Vec<PathBuf>,
    /// The agents' config in the root that an untrusted folder hides.
    pub agent_config: Vec<(PathBuf, Kind)>,
    /// `/run/systemd/resolve` and the like: kept so names resolve with network on.
    pub resolver: Vec<PathBuf>,
    /// Bound writable onto themselves, so they cannot be renamed away (the
    /// root's `.git`, whose hooks and config are read-only within).
    pub pinned: Vec<PathBuf>,
    /// Why the sandbox cannot keep its promise for this root (a protected
    /// path that is a link): the process does not start.
    pub refused: Option<String>,
    /// The writable paths held open, by descriptor number (`Sandbox::command`).
    pub held: Vec<(i32, PathBuf)>,
    /// Top-level entries of `/tmp` or `/var/tmp` that the command line names
    /// (its program, a script it runs): read-only through the private ones.
    pub temporary_shown: Vec<PathBuf>,
}

fn push(args: &mut Vec<OsString>, words: &[&str]) {
    args.extend(words.iter().map(OsString::from));
}

fn push_path(args: &mut Vec<OsString>, flag: &str, paths: &[&Path]) {
    args.push(flag.into());
    args.extend(paths.iter().map(|path| path.as_os_str().to_os_string()));
}

/// An empty, read-only stand-in at `path`: an empty directory or `/dev/null`.
fn cover(args: &mut Vec<OsString>, path: &Path, kind: Kind) {
    match kind {
        Kind::Dir => {
            push_path(args, "--tmpfs", &[path]);
            push_path(args, "--remount-ro", &[path]);
        }
        Kind::File => push_path(args, "--ro-bind", &[Path::new("/dev/null"), path]),
    }
}

/// bwrap's arguments (before `--` and the program). `stock` holds an empty
/// JSON file that stands in for a hidden agent config file.
pub fn arguments(facts: &Facts, request: &Request<'_>, stock: Option<&Path>) -> Vec<OsString> {
    let mut args = Vec::new();
    // No `--new-session`: bwrap itself starts a session with no terminal (see
    // `Sandbox::command`), so what runs inside stays in the group the hub ends.
    push(&mut args, &["--unshare-pid", "--unshare-ipc", "--unshare-uts"]);
    if request.reach == Reach::Command {
        // A command's sandbox ends with its bash, all of it (`setsid`, daemons).
        // An agent's outlives its main process for the grace the hub gives the
        // group (a wrapper's end must not kill the agent before it saves).
        push(&mut args, &["--die-with-parent"]);
    }
    push(&mut args, &["--unshare-cgroup-try", "--cap-drop", "ALL"]);
    if !request.network {
        push(&mut args, &["--unshare-net"]);
    }
    push(&mut args, &["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]);
    // Private temporary dirs; /run holds sockets (the session bus, docker,
    // agents' sockets) that a read-only mount does not stop a connect to.
    push(&mut args, &["--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/run"]);
    // What the process's own command line names under a temporary dir (an
    // agent installed there, its script) stays readable through the private one.
    for shown in &facts.temporary_shown {
        push_path(&mut args, "--ro-bind", &[shown, shown]);
    }
    // The resolver's dir holds sockets (resolved's varlink) that would resolve
    // names, and so carry data, past a network namespace: only with the network.
    if request.network {
        for resolver in &facts.resolver {
            push_path(&mut args, "--ro-bind", &[resolver, resolver]);
        }
    }
    let root = request.root;
    let (around_root, other_masks): (Vec<_>, Vec<_>) = facts.masks.iter().partition(|(mask, _)| root.starts_with(mask));
    // Writable until the root's mount point is made in it; read-only below.
    for (mask, _) in &around_root {
        push_path(&mut args, "--tmpfs", &[mask]);
    }
    match request.root_fd {
        Some(fd) => {
            args.push("--bind-fd".into());
            args.push(fd.to_string().into());
            args.push(root.as_os_str().to_os_string());
        }
        None => push_path(&mut args, "--bind", &[root, root]),
    }
    // Each held open and bound by its descriptor: a link another sandbox
    // swapped in on the way binds nothing else (see `host::hold`). Where
    // there is no descriptor (the plan's own tests), by path.
    let mut unused: Vec<&(i32, PathBuf)> = facts.held.iter().collect();
    for path in facts.writable.iter().chain(&facts.pinned) {
        // Each descriptor once: bwrap closes it after binding it.
        let found = unused.iter().position(|(_, held)| held == path).map(|at| unused.remove(at));
        match found {
            Some((fd, _)) => {
                args.push("--bind-fd".into());
                args.push(fd.to_string().into());
                args.push(path.as_os_str().to_os_string());
            }
            None => push_path(&mut args, "--bind", &[path, path]),
        }
    }
    for (path, _) in &facts.protected {
        push_path(&mut args, "--ro-bind", &[path, path]);
    }
    for path in &facts.read_only {
        push_path(&mut args, "--ro-bind", &[path, path]);
    }
    for (path, kind) in &facts.missing_protected {
        cover(&mut args, path, *kind);
    }
    if request.reach == Reach::Agent && request.hide_agent_config {
        for (path, kind) in &facts.agent_config {
            match (kind, stock) {
                (Kind::File, Some(stock)) => push_path(&mut args, "--ro-bind", &[&stock.join("empty.json"), path]),
                _ => cover(&mut args, path, *kind),
            }
        }
    }
    for (mask, _) in &around_root {
        push_path(&mut args, "--remount-ro", &[mask]);
    }
    for (mask, kind) in &other_masks {
        cover(&mut args, mask, *kind);
    }
    push(&mut args, &["--setenv", "TMPDIR", "/tmp"]);
    push_path(&mut args, "--chdir", &[root]);
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(root: &Path, reach: Reach, network: bool, hide: bool) -> Request<'_> {
        Request { root, root_fd: None, reach, network, hide_agent_config: hide, env: &[], agent: None, masks: &[] }
    }

    fn words(args: &[OsString]) -> Vec<String> {
        args.iter().map(|arg| arg.to_string_lossy().into_owned()).collect()
    }

    /// Where `flag a b` stands in the arguments.
    fn position(args: &[String], flag: &str, operands: &[&str]) -> Option<usize> {
        args.windows(1 + operands.len())
            .position(|window| window[0] == flag && window[1..].iter().zip(operands).all(|(a, b)| a == b))
    }

    fn facts(root: &str) -> Facts {
        Facts {
            protected: vec![(PathBuf::from(format!("{root}/.gemini")), Kind::Dir)],
            missing_protected: vec![(PathBuf::from(format!("{root}/.mcp.json")), Kind::File)],
            masks: vec![
                (PathBuf::from("/home/u/.ssh"), Kind::Dir),
                (PathBuf::from("/home/u/.netrc"), Kind::File),
                (PathBuf::from("/data/hub"), Kind::Dir),
            ],
            writable: vec![PathBuf::from("/home/u/.cargo/registry")],
            read_only: vec![PathBuf::from("/repo/.git/hooks")],
            agent_config: vec![(PathBuf::from(format!("{root}/.claude")), Kind::Dir)],
            resolver: vec![PathBuf::from("/run/systemd/resolve")],
            pinned: vec![PathBuf::from(format!("{root}/.git"))],
            refused: None,
            held: vec![(9, PathBuf::from("/home/u/.cargo/registry"))],
            temporary_shown: vec![PathBuf::from("/tmp/agents")],
        }
    }

    #[test]
    fn no_network_unless_asked_and_every_process_gets_its_own_pids_and_no_privileges() {
        let root = Path::new("/work/p");
        let off = words(&arguments(&facts("/work/p"), &request(root, Reach::Command, false, false), None));
        let on = words(&arguments(&facts("/work/p"), &request(root, Reach::Command, true, false), None));
        assert!(off.contains(&"--unshare-net".to_string()));
        assert!(!on.contains(&"--unshare-net".to_string()));
        for args in [&off, &on] {
            for flag in ["--unshare-pid", "--die-with-parent"] {
                assert!(args.contains(&flag.to_string()), "{flag} in {args:?}");
            }
            assert!(position(args, "--cap-drop", &["ALL"]).is_some());
        }
        let agent = words(&arguments(&facts("/work/p"), &request(root, Reach::Agent, true, false), None));
        assert!(!agent.contains(&"--die-with-parent".to_string()), "an agent keeps its grace when its wrapper ends");
        assert!(agent.contains(&"--unshare-pid".to_string()) && !agent.contains(&"--unshare-net".to_string()));
    }

    #[test]
    fn the_root_is_writable_its_protected_paths_are_not_and_masks_come_last() {
        let args =
            words(&arguments(&facts("/work/p"), &request(Path::new("/work/p"), Reach::Command, false, false), None));
        let host = position(&args, "--ro-bind", &["/", "/"]).unwrap();
        let root = position(&args, "--bind", &["/work/p", "/work/p"]).unwrap();
        let protected = position(&args, "--ro-bind", &["/work/p/.gemini", "/work/p/.gemini"]).unwrap();
        let missing = position(&args, "--ro-bind", &["/dev/null", "/work/p/.mcp.json"]).unwrap();
        let ssh = position(&args, "--tmpfs", &["/home/u/.ssh"]).unwrap();
        let netrc = position(&args, "--ro-bind", &["/dev/null", "/home/u/.netrc"]).unwrap();
        // Held open: bound by its descriptor, never by a path a link could have taken.
        let cache = position(&args, "--bind-fd", &["9", "/home/u/.cargo/registry"]).unwrap();
        assert!(position(&args, "--bind", &["/home/u/.cargo/registry", "/home/u/.cargo/registry"]).is_none());
        let hooks = position(&args, "--ro-bind", &["/repo/.git/hooks", "/repo/.git/hooks"]).unwrap();
        assert!(host < root && root < protected && root < missing && root < cache && cache < hooks);
        assert!(protected < ssh && missing < ssh && hooks < netrc, "masks come after every writable bind");
        assert!(position(&args, "--remount-ro", &["/home/u/.ssh"]).unwrap() > ssh);
        // A command never sees the agents' config hidden: it cannot write it anyway.
        assert!(position(&args, "--tmpfs", &["/work/p/.claude"]).is_none());
    }

    #[test]
    fn what_the_command_line_names_under_tmp_stays_readable_through_the_private_one() {
        let args =
            words(&arguments(&facts("/work/p"), &request(Path::new("/work/p"), Reach::Agent, true, false), None));
        let private = position(&args, "--tmpfs", &["/tmp"]).unwrap();
        let shown = position(&args, "--ro-bind", &["/tmp/agents", "/tmp/agents"]).unwrap();
        assert!(private < shown && shown < position(&args, "--bind", &["/work/p", "/work/p"]).unwrap());
    }

    #[test]
    fn the_resolver_only_with_the_network_and_the_roots_git_pinned() {
        let root = Path::new("/work/p");
        let off = words(&arguments(&facts("/work/p"), &request(root, Reach::Command, false, false), None));
        let on = words(&arguments(&facts("/work/p"), &request(root, Reach::Command, true, false), None));
        let resolver = ["/run/systemd/resolve", "/run/systemd/resolve"];
        assert!(position(&off, "--ro-bind", &resolver).is_none(), "its sockets would resolve names without a network");
        assert!(position(&on, "--ro-bind", &resolver).is_some());
        let pinned = position(&off, "--bind", &["/work/p/.git", "/work/p/.git"]).unwrap();
        let root_bound = position(&off, "--bind", &["/work/p", "/work/p"]).unwrap();
        let hooks = position(&off, "--ro-bind", &["/repo/.git/hooks", "/repo/.git/hooks"]).unwrap();
        assert!(root_bound < pinned && pinned < hooks, "bound onto itself (no rename), its hooks read-only after");
    }

    #[test]
    fn a_mask_that_holds_the_root_goes_before_it_so_the_root_stays_visible() {
        // An isolated session's worktree lives in the hub's data dir, which is masked.
        let root = Path::new("/data/hub/worktrees/x");
        let args =
            words(&arguments(&facts("/data/hub/worktrees/x"), &request(root, Reach::Command, false, false), None));
        let data = position(&args, "--tmpfs", &["/data/hub"]).unwrap();
        let bound = position(&args, "--bind", &["/data/hub/worktrees/x", "/data/hub/worktrees/x"]).unwrap();
        let sealed = position(&args, "--remount-ro", &["/data/hub"]).unwrap();
        assert!(data < bound && bound < sealed, "the mount point is made before the mask is sealed");
        assert!(position(&args, "--tmpfs", &["/home/u/.ssh"]).unwrap() > bound);
    }

    #[test]
    fn an_untrusted_folders_agent_config_is_hidden_from_its_agent_only() {
        let root = Path::new("/work/p");
        let stock = Path::new("/data/hub/sandbox");
        let mut facts = facts("/work/p");
        facts.agent_config.push((PathBuf::from("/work/p/.mcp.json"), Kind::File));
        let hidden = words(&arguments(&facts, &request(root, Reach::Agent, true, true), Some(stock)));
        assert!(position(&hidden, "--tmpfs", &["/work/p/.claude"]).is_some());
        assert!(position(&hidden, "--ro-bind", &["/data/hub/sandbox/empty.json", "/work/p/.mcp.json"]).is_some());
        let trusted = words(&arguments(&facts, &request(root, Reach::Agent, true, false), Some(stock)));
        assert!(position(&trusted, "--tmpfs", &["/work/p/.claude"]).is_none());
        assert!(position(&trusted, "--ro-bind", &["/data/hub/sandbox/empty.json", "/work/p/.mcp.json"]).is_none());
    }

    #[test]
    fn a_held_root_is_bound_by_its_descriptor() {
        let root = Path::new("/work/p");
        let mut request = request(root, Reach::Command, false, false);
        request.root_fd = Some(7);
        let args = words(&arguments(&facts("/work/p"), &request, None));
        assert!(position(&args, "--bind-fd", &["7", "/work/p"]).is_some());
        assert!(position(&args, "--bind", &["/work/p", "/work/p"]).is_none());
    }

    #[test]
    fn the_masks_name_the_hub_dirs_and_every_credential_store() {
        let layout = Layout::new(Some(PathBuf::from("/nonexistent-home")), [Some(PathBuf::from("/nonexistent-data"))]);
        let masks = layout.masks();
        assert!(masks.contains(&PathBuf::from("/nonexistent-data")));
        for store in [".ssh", ".aws", ".netrc", ".config/gh", ".docker/config.json"] {
            assert!(masks.contains(&Path::new("/nonexistent-home").join(store)), "{store}");
        }
    }
}
