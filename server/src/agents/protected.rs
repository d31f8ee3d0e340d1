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

/// The hub's own directories, canonical: its data (the database with saved
/// rules and trust) and its config (the agents file, which names commands to
/// run). Worked out once: every word of every command is checked against them.
fn hub_dirs() -> &'static [PathBuf] {
    static DIRS: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    DIRS.get_or_init(|| {
        [crate::user_dir("XDG_DATA_HOME", ".local/share"), crate::user_dir("XDG_CONFIG_HOME", ".config")]
            .into_iter()
            .flatten()
            .chain(HUB_DATA_DIR.get().cloned())
            .map(|dir| dir.canonicalize().unwrap_or(dir))
            .collect()
    })
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
    touches_settings_within(folder, None, name, args)
}

/// [`touches_settings`] for a session that works in `worktree` (an isolated
/// session's, under the hub's data dir): its own worktree is not the hub's
/// directories (its `.gemini`, `.git` and the agents' settings in it still are
/// protected, and so is everything else of the data dir).
pub fn touches_settings_within(folder: &Path, worktree: Option<&Path>, name: &str, args: &Value) -> bool {
    let hub = |path: &Path| under_hub_dirs(path, worktree);
    match name {
        "run_shell_command" => args
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|command| command_touches(folder, worktree, command, 0)),
        "write_file" | "replace" => ["file_path", "path", "absolute_path"]
            .iter()
            .filter_map(|key| args.get(*key).and_then(Value::as_str))
            // Every path an edit names (an ACP agent's may name several).
            .chain(args.get("paths").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str))
            .any(|path| under_settings(folder, path) || under_home_settings(path) || hub(&folder.join(path))),
        _ => false,
    }
}

/// `bash -c "bash -c '…'"` is followed this deep; deeper, the command asks.
const MAX_NESTING: usize = 4;

fn command_touches(folder: &Path, worktree: Option<&Path>, command: &str, depth: usize) -> bool {
    if depth > MAX_NESTING {
        return true;
    }
    let Ok(parts) = crate::policy::command_parts(command) else { return true };
    parts.iter().any(|part| {
        part.values.iter().any(|value| value_touches(folder, worktree, value))
            || matches!(&part.inner, Some(crate::policy::InnerScript::Script(script)) if command_touches(folder, worktree, script, depth + 1))
    })
}

/// A word's value that names a protected directory as a path component
/// (`.gemini/x`, `--dir=a/.claude`, `~/.codex`), `CODEX_HOME`, or a path that
/// resolves into one of them or into the hub's own directories.
fn value_touches(folder: &Path, worktree: Option<&Path>, value: &str) -> bool {
    // By name, wherever it stands: whatever `cd`, `pushd`, `env -C` or a link
    // made in the same command did to the base, a protected directory is named.
    let named = value.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-'))).any(|component| {
        AGENT_DIRS.contains(&component)
            || component == "CODEX_HOME"
            || hub_dirs().iter().any(|dir| dir.file_name().is_some_and(|name| name == component))
    });
    if named {
        return true;
    }
    // The word itself, and what follows each `=` or `:` (`of=~/x`, `PATH=a:~/b`).
    let pieces = std::iter::once(value).chain(value.match_indices(['=', ':']).map(|(at, _)| &value[at + 1..]));
    pieces.filter(|piece| !piece.is_empty()).any(|piece| {
        let expanded = expand_tilde(piece);
        let path = folder.join(&expanded);
        under_settings(folder, &expanded)
            || under_home_settings(&path.to_string_lossy())
            || under_hub_dirs(&path, worktree)
    })
}

/// `~`, `~/x` and `~user/x` (taken as a home like the user's: which user's is
/// not known here, and the protected names are the same in every home).
fn expand_tilde(word: &str) -> String {
    let Some(rest) = word.strip_prefix('~') else { return word.to_string() };
    let Some(home) = std::env::var_os("HOME") else { return word.to_string() };
    let after_user = rest.find('/').map_or("", |slash| &rest[slash..]);
    format!("{}{after_user}", home.to_string_lossy())
}

/// Whether `path` leads into the hub's own directories, the session's own
/// `worktree` (when it has one) aside.
fn under_hub_dirs(path: &Path, worktree: Option<&Path>) -> bool {
    under_dirs(path, worktree, hub_dirs())
}

/// [`under_hub_dirs`] with the hub's directories (canonical) given.
fn under_dirs(path: &Path, worktree: Option<&Path>, dirs: &[PathBuf]) -> bool {
    let resolved = resolve(path);
    // Compared as resolved too: a data dir reached through a link (a linked
    // home) would otherwise never match, and every write there would ask.
    let worktree = worktree.map(|worktree| worktree.canonicalize().unwrap_or_else(|_| worktree.to_path_buf()));
    if worktree.is_some_and(|worktree| resolved.starts_with(worktree)) {
        return false;
    }
    dirs.iter().any(|dir| resolved.starts_with(dir))
}

/// Where a path leads: `..` and links resolved component by component as the
/// kernel would, a link whose target does not exist yet included (a write
/// through it creates the target). Gives up following after 40 links.
fn resolve(path: &Path) -> PathBuf {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    use std::path::Component;
    let owned = |path: &Path| -> Vec<Option<OsString>> {
        // `None`: go up a level; root and `.` vanish (the walk starts at the root).
        path.components()
            .filter_map(|part| match part {
                Component::ParentDir => Some(None),
                Component::Normal(name) => Some(Some(name.to_os_string())),
                _ => None,
            })
            .collect()
    };
    let mut pending: VecDeque<Option<OsString>> = owned(path).into();
    let mut out = PathBuf::from("/");
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        let Some(name) = part else {
            out.pop();
            continue;
        };
        let next = out.join(&name);
        match std::fs::read_link(&next) {
            Ok(target) if links < 40 => {
                links += 1;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                for part in owned(&target).into_iter().rev() {
                    pending.push_front(part);
                }
            }
            _ => out = next,
        }
    }
    out
}

fn under_settings(folder: &Path, requested: &str) -> bool {
    let Ok(relative) = relative_in_folder(folder, requested) else { return false };
    let protected = || AGENT_DIRS.iter().chain([&REPOSITORY_DIR]);
    if protected().any(|dir| relative.starts_with(dir)) {
        return true;
    }
    // A link inside the folder may lead there, dangling or not.
    let real = resolve(&folder.join(&relative));
    protected().any(|dir| real.starts_with(folder.join(dir)))
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
    fn an_isolated_sessions_own_worktree_is_not_the_hubs_data_but_the_rest_of_it_is() {
        // A worktree under the hub's data dir (the default: XDG_DATA_HOME itself).
        let data = hub_dirs()[0].clone();
        let worktree = data.join("worktrees/0123abcd/fix-01234567");
        let within = |path: &str| {
            touches_settings_within(
                &worktree,
                Some(&worktree),
                "write_file",
                &json!({"file_path": path, "content": ""}),
            )
        };
        let shell = |command: &str| {
            touches_settings_within(&worktree, Some(&worktree), "run_shell_command", &json!({"command": command}))
        };
        assert!(
            touches_settings(&worktree, "write_file", &json!({"file_path": "notes.txt"})),
            "without its worktree named, the data dir asks"
        );
        assert!(!within("notes.txt") && !within("src/lib.rs"));
        assert!(!shell("sed -i s/a/b/ notes.txt && echo x > out/y.txt"));
        assert!(within(".gemini/settings.json") && within(".git/config") && within(".claude/settings.json"));
        assert!(within("../other-session/notes.txt"), "another session's worktree");
        assert!(within(data.join("agent-hub.db").to_str().unwrap()), "the database");
        assert!(shell(&format!("rm {}", data.join("agent-hub.db").display())));
    }

    #[test]
    fn a_worktree_named_through_a_link_to_the_data_dir_is_still_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().canonicalize().unwrap().join("data");
        let worktree_there = data.join("worktrees/0123abcd/fix-01234567");
        std::fs::create_dir_all(&worktree_there).unwrap();
        // A linked home: the hub knows its data dir by the link's name.
        let linked = dir.path().join("linked-data");
        std::os::unix::fs::symlink(&data, &linked).unwrap();
        let worktree = linked.join("worktrees/0123abcd/fix-01234567");
        let dirs = [data.clone()];
        assert!(!under_dirs(&worktree.join("notes.txt"), Some(&worktree), &dirs), "its own worktree");
        assert!(under_dirs(&data.join("agent-hub.db"), Some(&worktree), &dirs), "the rest of the data dir");
        assert!(under_dirs(&linked.join("worktrees/other/x.txt"), Some(&worktree), &dirs), "another worktree");
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
        std::os::unix::fs::symlink(".gemini/policies/allow.toml", folder.join("notes.toml")).unwrap();
        std::os::unix::fs::symlink(".git/hooks/post-checkout", folder.join("hook.sh")).unwrap();
        assert!(command("echo x > notes.toml"), "a dangling link into .gemini");
        assert!(touches_settings(&folder, "write_file", &json!({"file_path": "notes.toml"})));
        assert!(touches_settings(&folder, "write_file", &json!({"file_path": "hook.sh"})), "into .git, dangling");
        for reaching_the_hub in [
            "cd ~/.config && echo '{}' > agent-hub/agents.json",
            "cd ~/.local/share && rm -rf agent-hub",
            "pushd ~/.config; echo x > agent-hub/agents.json",
            "env -C ~/.config sh -c 'echo x > agent-hub/agents.json'",
            "ln -s ~/.config c && echo x > c/agent-hub/agents.json",
            "echo x | dd of=~/.gemini/policies/x.toml",
            "echo x > ~root/.gemini/policies/x.toml",
        ] {
            assert!(command(reaching_the_hub), "{reaching_the_hub}");
        }
        let data = crate::user_dir("XDG_DATA_HOME", ".local/share").unwrap();
        assert!(command(&format!("sqlite3 {}/hub.db 'DELETE FROM trusted_folders'", data.display())));
        for harmless in ["cargo test", "echo gemini > notes.txt", "ls src/.geminirc", "git status"] {
            assert!(!command(harmless), "{harmless}");
        }
    }
}
