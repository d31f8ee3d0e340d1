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

/// Whether the call (under Gemini CLI's tool names) may change `folder/.gemini`
/// or an agent's own settings. A command is taken to when it names one of
/// those directories (or `CODEX_HOME`) at all: what a shell line writes cannot
/// be known before it runs.
pub fn touches_settings(folder: &Path, name: &str, args: &Value) -> bool {
    match name {
        "run_shell_command" => args.get("command").and_then(Value::as_str).is_some_and(|command| {
            AGENT_DIRS.iter().any(|dir| command.contains(dir)) || command.contains("CODEX_HOME")
        }),
        "write_file" | "replace" => ["file_path", "path", "absolute_path"]
            .iter()
            .filter_map(|key| args.get(*key).and_then(Value::as_str))
            .any(|path| under_settings(folder, path) || under_home_settings(path)),
        _ => false,
    }
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
    // `..` taken lexically, then links resolved as far as the path exists.
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
    let path = lexical.as_path();
    let resolved = {
        let mut existing = path.to_path_buf();
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
    };
    roots.iter().any(|root| {
        let root = root.canonicalize().unwrap_or_else(|_| root.clone());
        path.starts_with(&root) || resolved.starts_with(&root)
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
}
