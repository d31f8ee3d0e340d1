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
    let options = options_of("env")?;
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let word = literal(*arg, source, false)?;
        if word == "-" {
            i += 1;
            continue;
        }
        if word == "--" || !word.starts_with('-') {
            return None;
        }
        i += option_width(&options, "env", &word)?;
        if !splits(&word) {
            continue;
        }
        // The value: after `=`, the rest of a cluster after `S`, or the next word.
        let value = match word.strip_prefix("--") {
            Some(long) => long.split_once('=').map(|(_, value)| value.to_string()),
            None => word.find('S').map(|at| word[at + 1..].to_string()).filter(|rest| !rest.is_empty()),
        };
        let value = value.or_else(|| args.get(i - 1).and_then(|next| literal(*next, source, false)));
        // GNU env reads escapes (`\_` is a blank) and `${VAR}` in it, and puts its words
        // back among env's own arguments, before the words after it (`-S '-u X rm'`,
        // `-S timeout 5 rm x`): unless it is all there is, and plain, it is known only
        // when it runs.
        let alone = i >= args.len();
        return Some(match value {
            Some(value) if alone && !value.contains(['\\', '$']) && !value.trim_start().starts_with('-') => {
                Inner::Script(value)
            }
            _ => Inner::Dynamic,
        });
    }
    None
}

/// Whether an option word of env is its split string (`-S`, `-vS…`, `--split-string`,
/// or an abbreviation), and not the value of `-u`, `-C` or `-a` before it.
fn splits(word: &str) -> bool {
    match word.strip_prefix("--") {
        Some(long) => {
            let name = long.split_once('=').map_or(long, |(name, _)| name);
            !name.is_empty() && "split-string".starts_with(name)
        }
        None => word.find('S').is_some_and(|at| !word[1..at].contains(['u', 'C', 'a'])),
    }
}

/// `-c` for a shell, also in a cluster (`-lc`, `-ec`).
fn dashed_c(word: &str) -> bool {
    word.len() > 1 && word.starts_with('-') && !word.starts_with("--") && word[1..].contains('c')
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
        "sh" | "dash" | "zsh" | "ksh" | "ash" | "mksh" if args.iter().flatten().any(|arg| dashed_c(arg)) => {
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

/// A wrapper's options, read as getopt reads them: short ones that take a
/// value (`-u NAME`, `-uNAME`, `-vu NAME`), short flags, long ones that take a
/// value (`--unset NAME`, `--unset=NAME`, or a unique prefix of them), long
/// flags, and how many operands come before the command (timeout's duration).
struct Options {
    short_values: &'static str,
    short_flags: &'static str,
    long_values: &'static [&'static str],
    long_flags: &'static [&'static str],
    operands: usize,
}

const NONE: Options = Options { short_values: "", short_flags: "", long_values: &[], long_flags: &[], operands: 0 };

/// The wrappers that run the rest of their words as a command.
fn options_of(wrapper: &str) -> Option<Options> {
    Some(match wrapper {
        "env" => Options {
            short_values: "uCSa",
            short_flags: "i0v",
            long_values: &["unset", "chdir", "split-string", "argv0"],
            long_flags: &[
                "ignore-environment",
                "null",
                "debug",
                "block-signal",
                "default-signal",
                "ignore-signal",
                "list-signal-handling",
            ],
            operands: 0,
        },
        "sudo" => Options {
            short_values: "ughpCDrtURT",
            short_flags: "AbEeHiKklnPSsVvB",
            long_values: &["user", "group", "host", "prompt", "close-from", "chdir", "role", "type", "other-user"],
            long_flags: &["askpass", "background", "preserve-env", "login", "non-interactive", "stdin", "shell"],
            operands: 0,
        },
        "doas" => Options { short_values: "uC", short_flags: "ns", ..NONE },
        "nice" => Options { short_values: "n", long_values: &["adjustment"], ..NONE },
        "exec" => Options { short_values: "a", short_flags: "cl", ..NONE },
        "xargs" => Options {
            short_values: "IinPLldEesa",
            short_flags: "0prtxo",
            long_values: &[
                "replace",
                "max-args",
                "max-procs",
                "max-lines",
                "delimiter",
                "eof",
                "max-chars",
                "arg-file",
            ],
            long_flags: &["null", "interactive", "no-run-if-empty", "verbose", "exit", "open-tty"],
            operands: 0,
        },
        "timeout" => Options {
            short_values: "sk",
            short_flags: "fpv",
            long_values: &["signal", "kill-after"],
            long_flags: &["foreground", "preserve-status", "verbose"],
            operands: 1,
        },
        "ionice" => Options {
            short_values: "cn",
            short_flags: "t",
            long_values: &["class", "classdata"],
            long_flags: &["ignore"],
            operands: 0,
        },
        "stdbuf" => Options { short_values: "ioe", long_values: &["input", "output", "error"], ..NONE },
        "setsid" => Options { short_flags: "cfw", long_flags: &["ctty", "fork", "wait"], ..NONE },
        "command" => Options { short_flags: "pvV", ..NONE },
        "time" => Options { short_flags: "p", ..NONE },
        "nohup" | "builtin" => NONE,
        _ => return None,
    })
}

/// Where the command starts at each level of wrappers that run the rest of
/// their words as a command (0 first): `sudo -u bob env -i rm -rf /` is also
/// `env -i rm -rf /` and `rm -rf /`. An option a wrapper's table does not
/// know ends the reading (returned): where its command starts is not known.
pub(super) fn wrapper_levels(words: &[Node], source: &str) -> (Vec<usize>, Option<String>) {
    let mut levels = vec![0];
    let mut i = 0;
    for _ in 0..8 {
        let Some(name) = words.get(i).and_then(|word| literal(*word, source, false)) else { break };
        let wrapper = basename(&name).to_string();
        let Some(options) = options_of(&wrapper) else { break };
        i += 1;
        while let Some(word) = words.get(i).and_then(|word| literal(*word, source, false)) {
            if word == "--" {
                i += 1;
                break;
            }
            // env and sudo take any word with `=` as a variable, not only a valid name;
            // env takes a lone `-` as `-i`.
            let variable = word.contains('=') && !word.starts_with(['-', '=']);
            if matches!(wrapper.as_str(), "env" | "sudo") && variable || wrapper == "env" && word == "-" {
                i += 1;
                continue;
            }
            if !word.starts_with('-') || word == "-" {
                break;
            }
            // `env -S '…' more words`: env splits the string back among its own
            // arguments; what it runs is judged as `split_string` reads it.
            if wrapper == "env" && splits(&word) {
                return (levels, None);
            }
            match option_width(&options, &wrapper, &word) {
                Some(width) => i += width,
                None => return (levels, Some(format!("`{wrapper} {word}`"))),
            }
        }
        i += options.operands;
        levels.push(i);
    }
    (levels, None)
}

/// How many words an option takes up (1, or 2 with its value), or None when
/// the wrapper does not know it.
fn option_width(options: &Options, wrapper: &str, word: &str) -> Option<usize> {
    if let Some(long) = word.strip_prefix("--") {
        let (name, value) = long.split_once('=').map_or((long, None), |(name, value)| (name, Some(value)));
        let exact = |list: &[&str]| list.contains(&name);
        let prefixed = |list: &[&str]| list.iter().filter(|option| option.starts_with(name)).count();
        let takes_value = if exact(options.long_values) {
            true
        } else if exact(options.long_flags) {
            false
        } else {
            match (prefixed(options.long_values), prefixed(options.long_flags)) {
                (1, 0) => true,
                (0, 1) => false,
                _ => return None,
            }
        };
        return Some(if takes_value && value.is_none() { 2 } else { 1 });
    }
    let cluster = &word[1..];
    // `nice -10 cmd`: the old form of `-n 10`.
    if wrapper == "nice" && cluster.chars().all(|c| c.is_ascii_digit()) {
        return Some(1);
    }
    for (at, c) in cluster.char_indices() {
        if options.short_values.contains(c) {
            // The value is the rest of the word, or the next word.
            return Some(if at + c.len_utf8() < cluster.len() { 1 } else { 2 });
        }
        if !options.short_flags.contains(c) {
            return None;
        }
    }
    Some(1)
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
