//! The agents' own settings are never changed without the user: a call that
//! writes a folder's `.gemini/` (its settings and policy files), `.claude/`,
//! `.qwen/` or `.codex/`, or the same in the user's home (or `$CODEX_HOME`),
//! always gets a card, whatever the rules, grants or YOLO say. Else the agent
//! could write itself a policy file that allows everything (Gemini CLI), or an
//! allow rule of its own that skips the permission request (Claude Code's
//! `permissions.allow`, codex's `rules/default.rules`), and the hub with it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::settings::SETTINGS_DIR;
use crate::tools::paths::relative_in_folder;

/// What the card says of such a call.
pub const PROTECTED_SOURCE: &str = "the hub: the folder's .gemini settings, .git and the agents' own settings";
pub const PROTECTED_MESSAGE: &str =
    "Changes to .gemini (the folder's settings and policy files), to .git (the repository's \
     config and hooks, which name commands git runs) and to the agents' own settings \
     (.claude, .qwen, .codex) always ask, whatever the rules or YOLO say.";

/// Where agents keep settings that could let them act without asking.
const AGENT_DIRS: [&str; 4] = [SETTINGS_DIR, ".claude", ".qwen", ".codex"];
/// The repository's own directory: its config names commands that git runs
/// (filters, hooks, fsmonitor), for the user and for the hub's Changes view. A
/// file tool writing there asks; a command already runs what it likes once allowed.
const REPOSITORY_DIR: &str = ".git";

/// The hub's own data directory when it is not the default (`--data-dir`):
/// its database holds the rules saved from cards and folder trust.
static HUB_DATA_DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Protects the hub's data directory given at launch, beside the default ones.
pub fn protect_data_dir(dir: &Path) {
    let _ = HUB_DATA_DIR.set(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()));
}

/// The hub's own directories: its data (the database with saved rules and
/// trust) and its config (the agents file, which names commands to run).
fn hub_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> =
        [crate::user_dir("XDG_DATA_HOME", ".local/share"), crate::user_dir("XDG_CONFIG_HOME", ".config")]
            .into_iter()
            .flatten()
            .collect();
    dirs.extend(HUB_DATA_DIR.get().cloned());
    dirs
}

/// Whether the call (under Gemini CLI's tool names) may change `folder/.gemini`,
/// an agent's own settings or the hub's own directories. A command is judged
/// by what the shell will see: each word's value with quotes and escapes
/// resolved (`.gem''ini` is `.gemini`), scripts run by `bash -c` or `eval`
/// included; it touches them when a value names one as a path component, or
/// resolves into one (links followed). A command that cannot be read asks. A
/// word known only when it runs (`$VAR`, a glob) makes the command ask by the
/// rules already (see `policy::CommandPart::opaque`).
pub fn touches_settings(folder: &Path, name: &str, args: &Value) -> bool {
    match name {
        "run_shell_command" => {
            args.get("command").and_then(Value::as_str).is_some_and(|command| command_touches(folder, command, 0))
        }
        "write_file" | "replace" => {
            ["file_path", "path", "absolute_path"].iter().filter_map(|key| args.get(*key).and_then(Value::as_str)).any(
                |path| under_settings(folder, path) || under_home_settings(path) || under_hub_dirs(&folder.join(path)),
            )
        }
        _ => false,
    }
}

/// `bash -c "bash -c '…'"` is followed this deep; deeper, the command asks.
const MAX_NESTING: usize = 4;

fn command_touches(folder: &Path, command: &str, depth: usize) -> bool {
    if depth > MAX_NESTING {
        return true;
    }
    let Ok(parts) = crate::policy::command_parts(command) else { return true };
    parts.iter().any(|part| {
        part.values.iter().any(|value| value_touches(folder, value))
            || matches!(&part.inner, Some(crate::policy::InnerScript::Script(script)) if command_touches(folder, script, depth + 1))
    })
}

/// A word's value that names a protected directory as a path component
/// (`.gemini/x`, `--dir=a/.claude`, `~/.codex`), `CODEX_HOME`, or a path that
/// resolves into one of them or into the hub's own directories.
fn value_touches(folder: &Path, value: &str) -> bool {
    let named = value
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-')))
        .any(|component| AGENT_DIRS.contains(&component) || component == "CODEX_HOME");
    if named {
        return true;
    }
    let expanded = match value.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match std::env::var_os("HOME") {
            Some(home) => format!("{}{rest}", home.to_string_lossy()),
            None => value.to_string(),
        },
        _ => value.to_string(),
    };
    let path = folder.join(&expanded);
    under_settings(folder, &expanded) || under_home_settings(&path.to_string_lossy()) || under_hub_dirs(&path)
}

fn under_hub_dirs(path: &Path) -> bool {
    let resolved = resolve(path);
    hub_dirs().iter().any(|dir| {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        resolved.starts_with(&dir)
    })
}

/// `..` taken lexically, then links resolved as far as the path exists.
fn resolve(path: &Path) -> PathBuf {
    let mut lexical = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                lexical.pop();
            }
            std::path::Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.file_name().map(|name| name.to_os_string()), existing.pop()) {
            (Some(name), true) => rest.push(name),
            _ => break,
        }
    }
    let mut real = existing.canonicalize().unwrap_or(existing);
    real.extend(rest.iter().rev());
    real
}

fn under_settings(folder: &Path, requested: &str) -> bool {
    let Ok(relative) = relative_in_folder(folder, requested) else { return false };
    let protected = || AGENT_DIRS.iter().chain([&REPOSITORY_DIR]);
    if protected().any(|dir| relative.starts_with(dir)) {
        return true;
    }
    // A link inside the folder may lead there: resolve what exists of the path.
    let mut existing: PathBuf = folder.join(&relative);
    while !existing.exists() {
        if !existing.pop() {
            return false;
        }
    }
    existing.canonicalize().is_ok_and(|real| protected().any(|dir| real.starts_with(folder.join(dir))))
}

/// A path outside the folder (ACP agents write where they like) into the
/// user's agent settings: `~/.gemini`, `~/.claude`, `~/.qwen`, `~/.codex`, `$CODEX_HOME`.
fn under_home_settings(requested: &str) -> bool {
    let path = Path::new(requested);
    if !path.is_absolute() {
        return false;
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        roots.extend(AGENT_DIRS.iter().map(|dir| Path::new(&home).join(dir)));
    }
    roots.extend(std::env::var_os("CODEX_HOME").map(PathBuf::from));
    let resolved = resolve(path);
    roots.iter().any(|root| {
        let root = root.canonicalize().unwrap_or_else(|_| root.clone());
        resolved.starts_with(&root)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_into_gemini_settings_are_protected_however_named() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(folder.join(".gemini/policies")).unwrap();
        std::os::unix::fs::symlink(folder.join(".gemini"), folder.join("cfg")).unwrap();
        let write = |path: &str| touches_settings(&folder, "write_file", &json!({"file_path": path, "content": ""}));
        for path in [".gemini/policies/x.toml", "./.gemini/settings.json", "a/../.gemini/x", "cfg/policies/x.toml"] {
            assert!(write(path), "{path}");
        }
        let absolute = folder.join(".gemini/policies/new.toml");
        assert!(write(absolute.to_str().unwrap()));
        for path in [".git/config", ".git/hooks/pre-commit", "./.git/info/attributes"] {
            assert!(touches_settings(&folder, "write_file", &json!({"file_path": path})), "{path}");
        }
        for path in ["src/main.rs", ".geminirc", "gemini/x", "../elsewhere/.gemini/x", ".gitignore", ".github/ci.yml"] {
            assert!(!write(path), "{path}");
        }
        assert!(touches_settings(&folder, "replace", &json!({"file_path": ".gemini/settings.json"})));
        assert!(touches_settings(&folder, "run_shell_command", &json!({"command": "cp x .gemini/policies/"})));
        assert!(!touches_settings(&folder, "run_shell_command", &json!({"command": "ls"})));
        assert!(!touches_settings(&folder, "read_file", &json!({"file_path": ".gemini/settings.json"})));
    }

    #[test]
    fn the_agents_own_settings_are_protected_in_the_folder_and_at_home() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().canonicalize().unwrap();
        let write = |path: &str| touches_settings(&folder, "write_file", &json!({"file_path": path, "content": ""}));
        for path in [".claude/settings.json", ".qwen/settings.json", ".codex/rules/default.rules"] {
            assert!(write(path), "{path}");
            assert!(write(folder.join(path).to_str().unwrap()), "{path} (absolute)");
        }
        let home = std::env::var("HOME").unwrap();
        for path in [
            format!("{home}/.claude/settings.json"),
            format!("{home}/.codex/rules/x.rules"),
            format!("{home}/x/../.qwen/settings.json"),
        ] {
            assert!(write(&path), "{path}");
        }
        assert!(!write(&format!("{home}/notes/claude.txt")));
        assert!(!write("src/.claudefile.rs") && !write(".claudex/x"), "a name that merely starts alike");
        let command = |command: &str| touches_settings(&folder, "run_shell_command", &json!({"command": command}));
        assert!(command("echo '{}' > ~/.claude/settings.json"));
        assert!(command("cat x >> $CODEX_HOME/rules/default.rules"));
        assert!(!command("cargo test"));
    }

    #[test]
    fn a_command_is_judged_by_what_the_shell_sees_not_by_its_text() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(folder.join(".gemini/policies")).unwrap();
        std::os::unix::fs::symlink(folder.join(".gemini"), folder.join("cfg")).unwrap();
        let command = |command: &str| touches_settings(&folder, "run_shell_command", &json!({"command": command}));
        for hidden in [
            "mkdir -p .gem''ini/policies && echo x > .gem''ini/policies/q.toml",
            r#"echo x > ".gem"ini/policies/q.toml"#,
            r"echo x > .gem\ini/policies/q.toml",
            "echo x > $'.\x67emini'/policies/q.toml",
            "cp evil.toml cfg/policies/",
            "bash -c 'echo x > .gem\"\"ini/policies/q.toml'",
            "eval 'cp a ~/.cla''ude/settings.json'",
            "tee --output=.qwen/settings.json < x",
            "echo 'oops",
        ] {
            assert!(command(hidden), "{hidden}");
        }
        let data = crate::user_dir("XDG_DATA_HOME", ".local/share").unwrap();
        assert!(command(&format!("sqlite3 {}/hub.db 'DELETE FROM trusted_folders'", data.display())));
        for harmless in ["cargo test", "echo gemini > notes.txt", "ls src/.geminirc", "git status"] {
            assert!(!command(harmless), "{harmless}");
        }
    }
}
