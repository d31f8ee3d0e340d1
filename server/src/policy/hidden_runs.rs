//! What bash or a program runs beyond what a command's words say: builtins
//! that change what later text runs or evaluate their words as code, and
//! variables whose values are run or evaluated. A command with any of them
//! is not rendered (`render`), so it asks, in YOLO too.

/// Builtins that change how later text is read or what a name runs (`alias`
/// with `shopt -s expand_aliases`, `hash -p`, `enable -f`), run a file or a
/// string later (`source`, `trap`), or reach the history: what runs after
/// them is not what was judged.
const CHANGES_WHAT_RUNS: [&str; 14] = [
    "alias", "unalias", "shopt", "source", ".", "enable", "hash", "trap", "bind", "fc", "history", "complete",
    "compgen", "set",
];

/// Why bash would run other than what the words say, if so: a builtin that
/// changes what later text runs, or that evaluates its words as code
/// (`let 'a[$(cmd)]'`, `printf -v 'a[$(cmd)]'`, `mapfile -C cmd`), or a
/// word that sets what a program runs (`env GIT_CONFIG_COUNT=1 …`).
/// `command` and `builtin` (with their options) are looked through.
pub(super) fn refused(words: &[String]) -> Option<String> {
    let mut at = 0;
    while let Some("command" | "builtin") = words.get(at).map(String::as_str) {
        at += 1;
        while words.get(at).is_some_and(|word| word.starts_with('-')) {
            at += 1;
        }
    }
    let name = words.get(at)?.as_str();
    let args = &words[at + 1..];
    if let Some(word) = words.iter().find(|word| sets_what_runs(word)) {
        return Some(format!("`{word}` sets what bash or a program runs"));
    }
    let evaluates = match name {
        "let" | "mapfile" | "readarray" => true,
        "printf" => args.iter().any(|arg| arg.starts_with("-v")),
        // They set the variables they name: an element or a variable that runs.
        "read" | "getopts" | "wait" => args.iter().any(|arg| arg.contains('[') || runs_through(arg)),
        "test" | "[" => args.iter().any(|arg| arg == "-v"),
        // `jobs -x cmd` runs cmd.
        "jobs" => args.iter().any(|arg| arg.starts_with('-') && arg.contains('x')),
        _ => false,
    };
    if evaluates {
        return Some(format!("`{name}` may evaluate its words as code"));
    }
    (CHANGES_WHAT_RUNS.contains(&name) && !(name == "set" && harmless_set(args)))
        .then(|| format!("`{name}` changes what later commands run"))
}

/// Variables that set what bash or a program runs: bash's own hooks (its
/// prompt for traces, its command and alias tables, functions, startup file,
/// options) and the commands or libraries of common programs (git's
/// configuration, pager, editor, ssh; the loader; node, perl, ruby, python,
/// rustc). A list, not a proof: any other variable a program reads is bounded
/// by the sandbox.
const RUNS_VARIABLES: [&str; 27] = [
    "PS4",
    "PROMPT_COMMAND",
    "BASH_CMDS",
    "BASH_ALIASES",
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "POSIXLY_CORRECT",
    "BASH_COMPAT",
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
    "GIT_EXEC_PATH",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "SSH_ASKPASS",
    "NODE_OPTIONS",
    "PERL5OPT",
    "RUBYOPT",
    "PYTHONSTARTUP",
    "RUSTC_WRAPPER",
];
/// And every variable whose name starts so.
const RUNS_PREFIXES: [&str; 3] = ["GIT_CONFIG", "LD_", "BASH_FUNC_"];

/// `NAME=…` (or `NAME[…]=…`, `NAME+=…`) where NAME sets what runs, or is an array element.
pub(super) fn sets_what_runs(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else { return false };
    // `BASH_FUNC_ls%%=() { … }` is a function for bash, whatever else the name holds.
    if RUNS_PREFIXES.iter().any(|prefix| name.starts_with(prefix)) {
        return true;
    }
    let name = name.strip_suffix('+').unwrap_or(name);
    let (base, element) = match name.split_once('[') {
        Some((base, _)) => (base, true),
        None => (name, false),
    };
    let is_name = base.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    is_name && (element || runs_through(base))
}

/// A variable whose value bash or a program runs or evaluates: the lists
/// above, and bash's integer variables (a value assigned to `RANDOM` is
/// evaluated as arithmetic, where `a[$(cmd)]` runs cmd).
pub(super) fn runs_through(name: &str) -> bool {
    RUNS_VARIABLES.contains(&name)
        || INTEGER_VARIABLES.contains(&name)
        || RUNS_PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

const INTEGER_VARIABLES: [&str; 6] = ["RANDOM", "SRANDOM", "OPTIND", "HISTCMD", "SECONDS", "LINENO"];

/// `set` options that change no reading: exit on error, unset variables, trace, pipefail.
fn harmless_set(args: &[String]) -> bool {
    let mut options = args.iter();
    while let Some(arg) = options.next() {
        let flags = arg.strip_prefix('-').or_else(|| arg.strip_prefix('+'));
        match flags {
            Some(flags) if !flags.is_empty() && flags.chars().all(|c| matches!(c, 'e' | 'u' | 'x' | 'o')) => {
                if flags.contains('o') {
                    match options.next().map(String::as_str) {
                        Some("errexit" | "nounset" | "xtrace" | "pipefail") => {}
                        _ => return false,
                    }
                }
            }
            _ => return false,
        }
    }
    true
}
