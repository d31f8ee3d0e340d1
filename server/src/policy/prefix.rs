//! What "Always in this folder" proposes to allow for a command.

use super::shell;

/// The first simple command's name, plus its first argument when that looks like a
/// subcommand (`git status --short` → `git status`, `cargo test -p x` → `cargo test`,
/// `ls -la` → `ls`, `./run.sh a` → `./run.sh`, `FOO=1 npm run build` → `npm run`).
/// Never a redirection or a second command: the prefix is matched against each
/// simple command, so it could never allow one anyway. For a shell or a wrapper
/// (`bash`, `env`, `sudo`, `eval`…) the whole first simple command (a script of
/// several lines: the wrapper and its next word, `bash -c`; the script is judged
/// by its own rules).
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
    // A shell or a wrapper runs whatever follows: never propose it alone.
    if words.first().is_some_and(|program| RUNS_ANYTHING.contains(&program.rsplit('/').next().unwrap_or(program))) {
        // The whole command, or (a script of several lines) the wrapper and its next word.
        let whole = words.join(" ");
        return match whole.contains(char::is_control) {
            false => whole,
            true => words
                .iter()
                .take(2)
                .filter(|word| !word.contains(char::is_control))
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
        };
    }
    let mut words = words.into_iter();
    let Some(program) = words.next() else { return String::new() };
    match words.next() {
        Some(sub) if !program.contains('/') && looks_like_subcommand(&sub) => format!("{program} {sub}"),
        _ => program,
    }
}

const RUNS_ANYTHING: [&str; 21] = [
    "bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "env", "sudo", "doas", "eval", "exec", "command", "builtin",
    "nohup", "setsid", "time", "timeout", "nice", "xargs", "stdbuf",
];

/// `status`, `run`, `test`, `build:prod`: lowercase word characters, not a flag,
/// a path or a file name.
fn looks_like_subcommand(word: &str) -> bool {
    word.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | ':'))
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}
