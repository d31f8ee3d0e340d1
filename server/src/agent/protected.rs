//! A folder's `.gemini/` (its settings and policy files) is never changed
//! without the user: a call that writes there always gets a card, whatever the
//! rules, grants or YOLO say. Else the agent could write itself a policy file
//! that allows everything, and the guard rails with it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::settings::SETTINGS_DIR;
use crate::tools::paths::relative_in_folder;

/// What the card says of such a call.
pub const PROTECTED_SOURCE: &str = "the hub: the folder's .gemini settings";
pub const PROTECTED_MESSAGE: &str =
    "Changes to .gemini (the folder's settings and policy files) always ask, whatever the rules or YOLO say.";

/// Whether the call (under Gemini CLI's tool names) may change `folder/.gemini`.
/// A command is taken to when it names `.gemini` at all: what a shell line
/// writes cannot be known before it runs.
pub fn touches_settings(folder: &Path, name: &str, args: &Value) -> bool {
    match name {
        "run_shell_command" => args.get("command").and_then(Value::as_str).is_some_and(|c| c.contains(SETTINGS_DIR)),
        "write_file" | "replace" => ["file_path", "path", "absolute_path"]
            .iter()
            .filter_map(|key| args.get(*key).and_then(Value::as_str))
            .any(|path| under_settings(folder, path)),
        _ => false,
    }
}

fn under_settings(folder: &Path, requested: &str) -> bool {
    let Ok(relative) = relative_in_folder(folder, requested) else { return false };
    let settings = folder.join(SETTINGS_DIR);
    if relative.starts_with(SETTINGS_DIR) {
        return true;
    }
    // A link inside the folder may lead there: resolve what exists of the path.
    let mut existing: PathBuf = folder.join(&relative);
    while !existing.exists() {
        if !existing.pop() {
            return false;
        }
    }
    existing.canonicalize().is_ok_and(|real| real.starts_with(&settings))
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
        for path in ["src/main.rs", ".geminirc", "gemini/x", "../elsewhere/.gemini/x"] {
            assert!(!write(path), "{path}");
        }
        assert!(touches_settings(&folder, "replace", &json!({"file_path": ".gemini/settings.json"})));
        assert!(touches_settings(&folder, "run_shell_command", &json!({"command": "cp x .gemini/policies/"})));
        assert!(!touches_settings(&folder, "run_shell_command", &json!({"command": "ls"})));
        assert!(!touches_settings(&folder, "read_file", &json!({"file_path": ".gemini/settings.json"})));
    }
}
