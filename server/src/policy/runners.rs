//! Programs that run programs: what `bash -c`, `eval`, `find -exec` and
//! `env -S` run (judged as commands of their own), the wrappers that run the
//! rest of their words (`sudo`, `env`, `timeout`, `xargs`…), and what cannot be
//! read from the words at all (`xargs`'s input, `git -c`, git aliases).

use tree_sitter::Node;

use super::shell::{literal, Inner};

/// What `find … -exec CMD ARGS… ;` (and `-execdir`, `-ok`, `-okdir`) runs:
/// each such command as a line of a script (`{}` stands for a found path), so
/// deny and ask rules, guard rails and protected paths judge it as a command.
/// Words known only when it runs make it dynamic.
pub(super) fn find_commands(args: &[Node], source: &str) -> Option<Inner> {
    let mut lines = Vec::new();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        let Some(word) = literal(*arg, source, false) else { continue };
        if !matches!(word.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            continue;
        }
        let mut command = Vec::new();
        while let Some(arg) = args.get(i) {
            i += 1;
            let Some(word) = literal(*arg, source, false) else { return Some(Inner::Dynamic) };
            if word == ";" || word == "+" {
                break;
            }
            command.push(word);
        }
        if !command.is_empty() {
            lines.push(command.iter().map(|word| found_path(word)).collect::<Vec<_>>().join(" "));
        }
    }
    (!lines.is_empty()).then(|| Inner::Script(lines.join("\n")))
}

/// What `env -S 'CMD …'` runs (`--split-string`, any abbreviation of it, or
/// `S` in a cluster of short options: `-vS'…'`). GNU env reads escapes
/// (`\_` is a blank) and `${VAR}` in the string: such a string is known only
/// when it runs.
fn split_string(args: &[Node], source: &str) -> Option<Inner> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        i += 1;
        let word = literal(*arg, source, false)?;
        if word == "--" || !word.starts_with('-') {
            return None;
        }
        let value = if let Some(long) = word.strip_prefix("--") {
            let (name, value) = long.split_once('=').map_or((long, None), |(name, value)| (name, Some(value)));
            if name.is_empty() || !"split-string".starts_with(name) {
                continue;
            }
            value.map(str::to_string)
        } else {
            let Some(at) = word.find('S') else { continue };
            Some(word[at + 1..].to_string()).filter(|rest| !rest.is_empty())
        };
        let value = match value {
            Some(value) => Some(value),
            None => args.get(i).and_then(|next| literal(*next, source, false)),
        };
        return Some(match value {
            Some(value) if !value.contains(['\\', '$']) => Inner::Script(value),
            _ => Inner::Dynamic,
        });
    }
    None
}

/// A word of `find -exec`'s command, quoted, with each `{}` standing for the
/// path found (`"$found"`): known only when it runs, so the command asks,
/// and a deny of its program still holds.
fn found_path(word: &str) -> String {
    word.split("{}")
        .map(|piece| if piece.is_empty() { String::new() } else { shell_words::quote(piece).into_owned() })
        .collect::<Vec<_>>()
        .join("\"$found\"")
}

/// Why what `program` runs cannot be read from its words (`args`, their
/// values where known), if so: `xargs` adds arguments read from its input;
/// `git -c`/`--config-env` set, for one run, what git runs (an alias, a
/// pager, a push refspec); a git subcommand that is not git's own may be an
/// alias from the user's or the repository's config.
pub(super) fn unreadable(program: &str, args: &[Option<String>]) -> Option<String> {
    match program {
        "xargs" => Some("xargs adds arguments it reads from its input".into()),
        // Scripts are read as bash reads them; these shells read some otherwise
        // (dash has no `$'…'`, zsh expands `=rm` to a path).
        "sh" | "dash" | "zsh" | "ksh" | "ash" | "mksh"
            if args
                .iter()
                .flatten()
                .any(|arg| arg.len() > 1 && arg.starts_with('-') && !arg.starts_with("--") && arg.contains('c')) =>
        {
            Some(format!("the hub reads a script as bash does, and {program} may read it otherwise"))
        }
        "git" => {
            let mut i = 0;
            while let Some(word) = args.get(i) {
                let word = word.as_deref()?;
                match word {
                    "-c" | "--config-env" => {
                        return Some(format!(
                            "`git {word}` sets what git runs (an alias, a pager, a refspec) for this run"
                        ))
                    }
                    _ if word.starts_with("--config-env=") => {
                        return Some("`git --config-env` sets what git runs for this run".into())
                    }
                    _ if word.starts_with("--exec-path=") => {
                        return Some("`git --exec-path=…` sets where git finds its commands".into())
                    }
                    "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" | "--attr-source"
                    | "--shallow-file" | "--list-cmds" => i += 2,
                    _ if word.starts_with('-') => i += 1,
                    _ if GIT_COMMANDS.contains(&word) => return None,
                    _ => return Some(format!("`git {word}` is not one of git's own commands: it may be an alias")),
                }
            }
            None
        }
        _ => None,
    }
}

/// Git's own commands (`git help -a`, porcelain and plumbing in common use).
const GIT_COMMANDS: [&str; 92] = [
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fetch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "help",
    "init",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mergetool",
    "mktree",
    "mv",
    "name-rev",
    "notes",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "request-pull",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Where the command starts at each level of wrappers that run the rest of their
/// arguments as a command (0 first), skipping the options that take a value (so
/// `sudo -u bob rm -rf /` is also seen as `rm -rf /`).
pub(super) fn wrapper_levels(words: &[Node], source: &str) -> Vec<usize> {
    let mut levels = vec![0];
    let mut i = 0;
    for _ in 0..8 {
        let Some(name) = words.get(i).and_then(|word| literal(*word, source, false)) else { break };
        let takes_value: &[&str] = match basename(&name) {
            "env" => &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"],
            "sudo" => &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-R", "-T"],
            "doas" => &["-u", "-C"],
            "nice" => &["-n", "--adjustment"],
            "exec" => &["-a"],
            "xargs" => &["-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a"],
            "timeout" => &["-s", "-k", "--signal", "--kill-after"],
            "ionice" => &["-c", "-n", "-p"],
            "stdbuf" => &["-i", "-o", "-e"],
            "nohup" | "setsid" | "builtin" | "command" | "time" => &[],
            _ => break,
        };
        let wrapper = basename(&name).to_string();
        i += 1;
        while let Some(word) = words.get(i).and_then(|word| literal(*word, source, false)) {
            let assignment = wrapper == "env" && is_assignment(&word);
            if !(word.starts_with('-') || assignment) {
                break;
            }
            i += if takes_value.contains(&word.as_str()) { 2 } else { 1 };
        }
        if wrapper == "timeout" {
            i += 1; // the duration
        }
        levels.push(i);
    }
    levels
}

pub(super) fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `sh`/`bash`/… with `-c` (also in a cluster like `-lc`) and then the script,
/// or reading its script from its input (`Dynamic`); or `eval` with its words
/// joined. (`bash build.sh` runs a file: judged by its text only.) Gemini CLI's `stripShellWrapper` knows `sh -c` forms.
pub(super) fn inner_script(program: &str, args: &[Node], source: &str) -> Option<Inner> {
    let script = |node: Node| match node.kind() {
        "simple_expansion" | "expansion" | "command_substitution" => Inner::Dynamic,
        _ => literal(node, source, true).map(Inner::Script).unwrap_or(Inner::Dynamic),
    };
    if program == "find" {
        return find_commands(args, source);
    }
    if program == "env" {
        return split_string(args, source);
    }
    if program == "eval" {
        if args.is_empty() {
            return None;
        }
        let words: Option<Vec<String>> = args.iter().map(|arg| literal(*arg, source, true)).collect();
        return Some(words.map(|words| Inner::Script(words.join(" "))).unwrap_or(Inner::Dynamic));
    }
    if !matches!(program, "sh" | "bash" | "zsh" | "dash" | "ksh" | "ash" | "mksh") {
        return None;
    }
    // `-c` anywhere (`bash --rcfile x -c '…'`, `bash script -c …`): when no script is
    // found after it, what runs is not known.
    let dashed_c =
        |word: &str| word.len() > 1 && word.starts_with('-') && !word.starts_with("--") && word[1..].contains('c');
    let c_anywhere = args.iter().any(|arg| literal(*arg, source, false).is_some_and(|word| dashed_c(&word)));
    let mut seen_c = false;
    let mut script_file = false;
    let mut i = 0;
    let found = loop {
        let Some(arg) = args.get(i) else { break None };
        let Some(word) = literal(*arg, source, false) else {
            script_file = !seen_c;
            break seen_c.then(|| script(*arg));
        };
        if word.starts_with('-') || word.starts_with('+') {
            if matches!(word.as_str(), "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
                i += 1;
            } else if dashed_c(&word) {
                seen_c = true;
            }
            i += 1;
            continue;
        }
        script_file = !seen_c;
        break seen_c.then(|| script(*arg));
    };
    // No `-c` and no script file: the shell runs what it reads on its input (a
    // pipe, a here-document, a here-string), which is not judged here.
    found.or_else(|| (c_anywhere || !script_file).then_some(Inner::Dynamic))
}

pub(super) fn basename(name: &str) -> &str {
    name.rsplit('/').next().filter(|base| !base.is_empty()).unwrap_or(name)
}
