//! Git in the user's repository, for isolated sessions: the same clean
//! environment as the checkpoints' git (`crate::checkpoints::git`), and on
//! top of it every setting a hostile repository could use to run something
//! or change bytes, overridden on each command line:
//!
//! - no hooks (`core.hooksPath=/dev/null`), no fsmonitor, no pager, no
//!   external diff or textconv (`--no-ext-diff --no-textconv` where diffs are
//!   made), no signing, no submodule recursion, no auto gc, no fetch of a
//!   partial clone's missing objects (`GIT_NO_LAZY_FETCH`, `protocol.allow=never`);
//! - no attributes from the working tree (`--attr-source=<empty tree>`): a
//!   `.gitattributes` (the folder's, or one an agent wrote in its worktree)
//!   cannot name a filter, an end-of-line conversion or an encoding. Except
//!   for `git apply` into the folder, which git 2.47 crashes on with an
//!   attribute source (SIGSEGV, measured): there the folder's own
//!   `.gitattributes` end-of-line rules apply as in the user's own checkout,
//!   and no filter runs (next point);
//! - every filter driver the repository's config defines is emptied
//!   (`filter.<name>.process=`, `.smudge=`, `.clean=`), so one that
//!   `.git/info/attributes` names does not run either. The overrides go in
//!   through `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_<n>`/`GIT_CONFIG_VALUE_<n>`,
//!   never `-c key=value`: `-c` splits at the first `=`, so a filter named
//!   `a=b` would not be emptied (its clean command ran, measured).
//!
//! The bytes compared, copied and applied are the bytes on disk.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::checkpoints::git::{clean_command, describe, run_child};

use super::WorktreeError;

/// Settings given on every command line, above the repository's config.
const SETTINGS: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.quotepath=false",
    "core.pager=cat",
    "core.untrackedCache=false",
    "diff.external=",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "color.ui=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "submodule.recurse=false",
    "worktree.guessRemote=false",
    "apply.whitespace=nowarn",
    "apply.ignoreWhitespace=no",
    "core.attributesFile=/dev/null",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
    // A partial clone's missing objects are not fetched (a remote helper, ssh).
    "protocol.allow=never",
];

/// The empty tree's id in each object format: the attributes' source.
const EMPTY_TREE_SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
const EMPTY_TREE_SHA256: &str = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

/// One repository as git is run in it: a directory (`-C`), and for a
/// session's worktree its admin dir given explicitly (`GIT_DIR`), never the
/// `.git` file an agent could rewrite.
#[derive(Debug, Clone)]
pub struct Git {
    pub dir: PathBuf,
    pub git_dir: Option<PathBuf>,
    /// Where git's `HOME` points (the hub's worktrees directory).
    pub home: PathBuf,
    pub deadline: Duration,
    /// `filter.<name>.*` emptied, for each filter the repository defines.
    filters: Vec<(String, String)>,
    empty_tree: &'static str,
    /// Whether `--attr-source=<empty tree>` is given (not to `git apply`).
    attr_source: bool,
}

impl Git {
    /// Git in `dir` (and `git_dir`, when given); reads which filters the
    /// repository's config defines, to empty them.
    pub fn open(dir: &Path, git_dir: Option<&Path>, home: &Path, deadline: Duration) -> Result<Self, WorktreeError> {
        let mut git = Self {
            dir: dir.to_path_buf(),
            git_dir: git_dir.map(Path::to_path_buf),
            home: home.to_path_buf(),
            deadline,
            filters: Vec::new(),
            empty_tree: EMPTY_TREE_SHA1,
            attr_source: true,
        };
        let format = git.text(["rev-parse", "--show-object-format"])?;
        if format.trim() == "sha256" {
            git.empty_tree = EMPTY_TREE_SHA256;
        }
        // `config` exits 1 when nothing matches.
        let names =
            git.run_allowing(["config", "--name-only", "--get-regexp", r"^filter\..*\.(process|smudge|clean)$"]);
        let mut drivers: Vec<String> = names
            .unwrap_or_default()
            .lines()
            .filter_map(|key| key.strip_prefix("filter.")?.rsplit_once('.').map(|(name, _)| name.to_string()))
            .collect();
        drivers.sort();
        drivers.dedup();
        git.filters = drivers
            .iter()
            .flat_map(|name| {
                [("process", ""), ("smudge", ""), ("clean", ""), ("required", "false")]
                    .map(|(key, value)| (format!("filter.{name}.{key}"), value.to_string()))
            })
            .collect();
        Ok(git)
    }

    /// The same git without `--attr-source`: for `git apply`, which crashes
    /// with one (git 2.47).
    pub fn for_apply(&self) -> Self {
        Self { attr_source: false, ..self.clone() }
    }

    /// `git <args>` with the clean environment and every override.
    pub fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = clean_command(&self.home);
        command.current_dir(&self.dir).env("GIT_NO_LAZY_FETCH", "1").env("GIT_ALLOW_PROTOCOL", "");
        if let Some(git_dir) = &self.git_dir {
            command.env("GIT_DIR", git_dir).env("GIT_WORK_TREE", &self.dir);
        }
        command.arg("--no-pager");
        if self.attr_source {
            command.arg(format!("--attr-source={}", self.empty_tree));
        }
        // As the command line's config (above the repository's), but never split at a name's `=`.
        let settings = SETTINGS.iter().filter_map(|setting| setting.split_once('='));
        let all = settings.chain(self.filters.iter().map(|(key, value)| (key.as_str(), value.as_str())));
        let mut count = 0;
        for (index, (key, value)) in all.enumerate() {
            command.env(format!("GIT_CONFIG_KEY_{index}"), key).env(format!("GIT_CONFIG_VALUE_{index}"), value);
            count = index + 1;
        }
        command.env("GIT_CONFIG_COUNT", count.to_string());
        command.args(args);
        command
    }

    /// Runs `git <args>` with `input` on its stdin.
    pub fn run_with<I, S>(&self, args: I, input: Vec<u8>) -> Result<Vec<u8>, WorktreeError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let name = describe(args.clone());
        run_child(self.command(args), &name, self.deadline, Default::default(), input).map_err(WorktreeError::git)
    }

    pub fn run<I, S>(&self, args: I) -> Result<Vec<u8>, WorktreeError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        self.run_with(args, Vec::new())
    }

    /// [`Git::run`] with its environment changed by `env` (a temporary index).
    pub fn run_env<I, S>(&self, args: I, env: &[(&str, &Path)]) -> Result<Vec<u8>, WorktreeError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        let name = describe(args.clone());
        let mut command = self.command(args);
        for (key, value) in env {
            command.env(key, value);
        }
        run_child(command, &name, self.deadline, Default::default(), Vec::new()).map_err(WorktreeError::git)
    }

    /// Its output as text, trimmed.
    pub fn text<I, S>(&self, args: I) -> Result<String, WorktreeError>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        Ok(String::from_utf8_lossy(&self.run(args)?).trim().to_string())
    }

    /// Its output when it succeeded, `None` when it did not (a question
    /// whose "no" is an exit code).
    pub fn run_allowing<I, S>(&self, args: I) -> Option<String>
    where
        I: IntoIterator<Item = S> + Clone,
        S: AsRef<OsStr>,
    {
        self.run(args).ok().map(|out| String::from_utf8_lossy(&out).into_owned())
    }
}
