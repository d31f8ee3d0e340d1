//! What "Always in this folder" proposes to allow for a command, and which
//! prefixes are too broad to save: a prefix rule allows every command that
//! starts with it, so a bare program that runs code given in its arguments
//! (`python3`, `find`, `git`) would allow anything.

use super::runners::is_assignment;
use super::shell;

/// The first simple command's name, plus its first argument when that looks like a
/// subcommand (`git status --short` → `git status`, `cargo test -p x` → `cargo test`,
/// `ls -la` → `ls`, `./run.sh a` → `./run.sh`, `FOO=1 npm run build` → `npm run`).
/// Never a redirection or a second command: the prefix is matched against each
/// simple command, so it could never allow one anyway.
///
/// Never a bare program that can run code given in its arguments ([`too_broad`]):
/// for a shell, a wrapper, an interpreter or a runner (`bash`, `env`, `python3`,
/// `awk`, `xargs`, `npx`, `find`, `npm exec`…) the whole first simple command (a
/// script of several lines: the program and its next word, `bash -c`; the script
/// is judged by its own rules); for git with options before the subcommand
/// (`git -c alias.x=!sh x`) or a subcommand that runs commands (`git rebase -x`,
/// `git config`) the whole command as well.
pub fn default_prefix(command: &str) -> String {
    let words: Vec<String> = match shell::split(command) {
        Ok(parts) => parts.into_iter().next().map(|part| part.words).unwrap_or_default(),
        // Unparsed: the first plain words before any shell operator.
        Err(_) => command
            .split(['\n', ';', '|', '&', '>', '<', '(', ')', '`', '$'])
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip_while(|word| is_assignment(word))
            .map(str::to_string)
            .collect(),
    };
    let Some(program) = words.first() else { return String::new() };
    let sub = words.get(1).filter(|sub| !program.contains('/') && looks_like_subcommand(sub));
    let whole = match sub {
        _ if runs_its_arguments(program) => true,
        Some(sub) => runs_its_subcommands_arguments(program, sub),
        // `git -c core.pager=… log`, `git --exec-path=…`: the options are the risk.
        None => base_name(program) == "git" && words.len() > 1,
    };
    if whole {
        return whole_command(&words);
    }
    match sub {
        Some(sub) => format!("{program} {sub}"),
        None => program.clone(),
    }
}

/// Whether saving `prefix` as "Always in this folder" would allow running
/// anything: a bare shell, wrapper, interpreter or runner (`bash`, `env`,
/// `python3`, `node -e`, `xargs`, `find`), one followed by options alone
/// (`python3 -c`, `awk -F:`), `git` without a subcommand or with one that runs
/// commands (`git config`, `git rebase`), a package manager's runner (`npm exec`).
/// A shell with `-c` is not: the script it runs is judged by its own rules.
pub fn too_broad(prefix: &str) -> bool {
    let words: Vec<String> = match shell::split(prefix) {
        Ok(parts) if parts.len() == 1 => parts.into_iter().next().map(|part| part.words).unwrap_or_default(),
        _ => prefix.split_whitespace().map(str::to_string).collect(),
    };
    let Some(program) = words.first() else { return true };
    let name = base_name(program);
    let rest = &words[1..];
    // Not an option, nor (for env) a variable it sets.
    let plain = |word: &&String| !word.starts_with('-') && (name != "env" || !is_assignment(word));
    if WRAPPERS.contains(&name) {
        // Nothing to run named yet (`env FOO=1`, `timeout 10`, `sudo -n`).
        let needed = if name == "timeout" { 2 } else { 1 };
        return rest.iter().filter(plain).count() < needed;
    }
    if runs_its_arguments(program) {
        let shell_script = SHELLS.contains(&name) && rest.last().is_some_and(|word| is_c_flag(word));
        return !shell_script && !rest.iter().any(|word| plain(&word));
    }
    if name == "git" {
        return match git_subcommand(rest) {
            None => true,
            Some(at) => rest.len() == at + 1 && runs_its_subcommands_arguments(program, &rest[at]),
        };
    }
    match rest {
        [sub] => runs_its_subcommands_arguments(program, sub),
        _ => false,
    }
}

/// Git's options before the subcommand that take the next word as their value.
const GIT_VALUE_OPTIONS: [&str; 7] =
    ["-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env", "--exec-path"];

/// Where git's subcommand is among its arguments, past its options.
fn git_subcommand(args: &[String]) -> Option<usize> {
    let mut at = 0;
    while let Some(word) = args.get(at) {
        if !word.starts_with('-') {
            return Some(at);
        }
        at += if GIT_VALUE_OPTIONS.contains(&word.as_str()) { 2 } else { 1 };
    }
    None
}

/// The whole command, or (a script of several lines) the program and its next word.
fn whole_command(words: &[String]) -> String {
    let whole = words.join(" ");
    match whole.contains(char::is_control) {
        false => whole,
        true => {
            words.iter().take(2).filter(|word| !word.contains(char::is_control)).cloned().collect::<Vec<_>>().join(" ")
        }
    }
}

/// Shells: `bash -c '…'` runs a script, judged by its own rules.
const SHELLS: [&str; 11] = ["bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "fish", "tcsh", "csh", "pwsh"];

/// Wrappers that run the rest of their arguments as a command.
const WRAPPERS: [&str; 27] = [
    "env", "sudo", "doas", "eval", "exec", "command", "builtin", "nohup", "setsid", "time", "timeout", "nice", "xargs",
    "stdbuf", "ionice", "chrt", "taskset", "flock", "watch", "parallel", "chroot", "unshare", "nsenter", "script",
    "strace", "ltrace", "busybox",
];

/// Interpreters and runners of code or packages named in their arguments (`-c`,
/// `-e`, a program text, a package): `sed` runs commands with GNU's `e`, `vim`
/// with `-c`, `npx` any package.
const INTERPRETERS: [&str; 33] = [
    "python",
    "pypy",
    "node",
    "nodejs",
    "deno",
    "bun",
    "bunx",
    "npx",
    "pnpx",
    "uvx",
    "pipx",
    "perl",
    "ruby",
    "irb",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "expect",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "R",
    "Rscript",
    "julia",
    "osascript",
    "gdb",
    "vi",
    "vim",
    "nvim",
    "find",
];

/// Subcommands that run a command or package named in their arguments, or
/// options of commands to come (`git config alias.x '!sh'`, `git rebase -x`,
/// `git fetch --upload-pack`, `git grep -O`).
const RUNNING_SUBCOMMANDS: [(&str, &[&str]); 9] = [
    (
        "git",
        &[
            "config",
            "submodule",
            "rebase",
            "bisect",
            "filter-branch",
            "difftool",
            "mergetool",
            "fetch",
            "pull",
            "push",
            "clone",
            "ls-remote",
            "archive",
            "grep",
            "send-email",
            "daemon",
            "instaweb",
            "web--browse",
        ],
    ),
    ("npm", &["exec", "x", "explore"]),
    ("pnpm", &["exec", "dlx"]),
    ("yarn", &["exec", "dlx"]),
    ("uv", &["run", "tool"]),
    ("poetry", &["run"]),
    ("pipenv", &["run"]),
    ("bundle", &["exec"]),
    ("conda", &["run"]),
];

/// A shell, a wrapper or an interpreter, versioned or not (`python3.12`, `lua5.4`).
fn runs_its_arguments(program: &str) -> bool {
    let name = base_name(program);
    let unversioned = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    [name, unversioned]
        .iter()
        .any(|name| SHELLS.contains(name) || WRAPPERS.contains(name) || INTERPRETERS.contains(name))
}

fn runs_its_subcommands_arguments(program: &str, sub: &str) -> bool {
    let name = base_name(program);
    RUNNING_SUBCOMMANDS.iter().any(|(runner, subs)| *runner == name && subs.contains(&sub))
}

fn base_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// `-c`, or a cluster holding it (`-lc`, `-ec`).
fn is_c_flag(word: &str) -> bool {
    word.strip_prefix('-').is_some_and(|flags| !flags.starts_with('-') && flags.contains('c'))
}

/// `status`, `run`, `test`, `build:prod`: lowercase word characters, not a flag,
/// a path or a file name.
fn looks_like_subcommand(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | ':'))
}
