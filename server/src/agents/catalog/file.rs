//! The user's agents file, `agents.json` in the hub's config dir (or
//! `--agents-file`): ACP agents under `agent_servers` as Zed's setting of that
//! name has them (a name, a command, its args, env), the built-in agent's
//! endpoint and model under `builtin`, and the default for new sessions.
//!
//! ```json
//! {
//!   "default": "qwen",
//!   "agent_servers": {
//!     "qwen": { "name": "Qwen Code", "command": "qwen", "args": ["--acp"], "env": {} },
//!     "gemini": { "command": "/opt/gemini/bin/gemini", "args": ["--acp"] }
//!   },
//!   "builtin": { "base_url": "http://127.0.0.1:11434/v1", "model": "qwen3-coder" }
//! }
//! ```
//! An entry whose id is a ready one's (`gemini`, `claude-code`, `codex`) takes
//! its place. A file that cannot be read or understood stops the hub with the
//! reason: a half-read file would silently start the wrong agent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The longest agent id or name.
const MAX_ID_CHARS: usize = 64;

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsFile {
    /// The agent a new session gets unless the folder or the request chooses.
    #[serde(default)]
    pub default: Option<String>,
    #[serde(default)]
    pub agent_servers: BTreeMap<String, AgentServer>,
    #[serde(default)]
    pub builtin: Option<BuiltinEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentServer {
    /// Shown in the UI; the entry's id when absent.
    #[serde(default)]
    pub name: Option<String>,
    /// Zed's entry kind: only `custom` (a command) is an agent the hub can start.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// Zed's settings for its own UI, read and left alone so that an entry
    /// copied from Zed's settings works as it is.
    #[serde(default)]
    pub default_mode: Option<serde_json::Value>,
    #[serde(default)]
    pub default_model: Option<serde_json::Value>,
    /// The program: a name looked up on `PATH`, or a path.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables set for the agent, on top of what every ACP agent gets of the
    /// hub's environment (PATH, HOME, the locale…, and what `--acp-env` names).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuiltinEntry {
    /// The OpenAI-compatible endpoint, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    pub model: String,
    /// The variable of the hub's environment holding the API key (default `OPENAI_API_KEY`).
    #[serde(default)]
    pub api_key_env: Option<String>,
}

/// The agents file could not be used; the message names the file and what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the agents file {path}: {reason}")]
pub struct AgentsFileError {
    pub path: PathBuf,
    pub reason: String,
}

impl AgentsFile {
    /// Reads `path`. A missing file is no file (`Ok(None)`) unless `required`
    /// (the user named it with `--agents-file`).
    pub fn read(path: &Path, required: bool) -> Result<Option<Self>, AgentsFileError> {
        let error = |reason: String| AgentsFileError { path: path.to_path_buf(), reason };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
            Err(err) => return Err(error(format!("cannot be read: {err}"))),
        };
        let file: Self = serde_json::from_str(&text).map_err(|err| error(format!("is not valid: {err}")))?;
        file.check().map_err(error)?;
        Ok(Some(file))
    }

    /// Refuses what would start a wrong or nameless agent.
    fn check(&self) -> Result<(), String> {
        for (id, server) in &self.agent_servers {
            check_id(id)?;
            if id == super::BUILTIN_ID {
                return Err(format!(
                    "\"{id}\" in agent_servers: that id is the built-in agent's; set its endpoint and model under \"builtin\"."
                ));
            }
            if let Some(kind) = server.kind.as_deref().filter(|kind| *kind != "custom") {
                return Err(format!(
                    "agent_servers.\"{id}\".type is \"{kind}\": only \"custom\" entries (a command) can be started by the hub."
                ));
            }
            if server.command.trim().is_empty() {
                return Err(format!(
                    "agent_servers.\"{id}\".command is empty: name the program that starts the agent."
                ));
            }
            // A relative path would be looked up in each session's folder: a
            // program from the project's checkout rather than the one meant.
            if server.command.contains('/') && !std::path::Path::new(&server.command).is_absolute() {
                return Err(format!(
                    "agent_servers.\"{id}\".command \"{}\" is a relative path: give an absolute path, or a program name found on PATH.",
                    server.command
                ));
            }
            if let Some(name) = &server.name {
                if name.trim().is_empty() || name.chars().count() > MAX_ID_CHARS || name.chars().any(char::is_control) {
                    return Err(format!("agent_servers.\"{id}\".name must be 1 to {MAX_ID_CHARS} characters without control characters."));
                }
            }
            if let Some(bad) = server.env.keys().find(|name| name.is_empty() || name.contains(['=', '\0'])) {
                return Err(format!("agent_servers.\"{id}\".env has a variable named {bad:?}, which cannot be set."));
            }
        }
        if let Some(default) = &self.default {
            let listed = default == super::BUILTIN_ID
                || super::READY.iter().any(|ready| ready.id == default)
                || self.agent_servers.contains_key(default);
            if !listed {
                return Err(format!(
                    "default \"{default}\" names no agent: use \"builtin\", a ready agent's id or one of agent_servers."
                ));
            }
        }
        if let Some(builtin) = &self.builtin {
            if builtin.base_url.trim().is_empty() || builtin.model.trim().is_empty() {
                return Err("builtin needs both base_url and model.".into());
            }
            if let Some(name) = &builtin.api_key_env {
                if name.is_empty() || name.contains(['=', '\0']) || name.starts_with("HUB_") {
                    return Err(format!(
                        "builtin.api_key_env {name:?} cannot name the API key's variable (HUB_* are the hub's own)."
                    ));
                }
            }
        }
        Ok(())
    }
}

pub(super) fn check_id(id: &str) -> Result<(), String> {
    if id.trim().is_empty() || id.trim() != id || id.chars().count() > MAX_ID_CHARS || id.chars().any(char::is_control)
    {
        return Err(format!(
            "agent id {id:?} must be 1 to {MAX_ID_CHARS} characters, without control characters or leading or trailing spaces."
        ));
    }
    Ok(())
}

/// The agents file's standard place: `$XDG_CONFIG_HOME/agent-hub/agents.json`,
/// else `~/.config/agent-hub/agents.json` (on macOS `~/Library/Application
/// Support/agent-hub/agents.json`).
pub fn standard_path() -> Option<PathBuf> {
    Some(crate::user_dir("XDG_CONFIG_HOME", ".config")?.join("agents.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Option<AgentsFile>, AgentsFileError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.json");
        std::fs::write(&path, text).unwrap();
        AgentsFile::read(&path, true)
    }

    #[test]
    fn a_zed_style_file_is_read() {
        let file = parse(
            r#"{"default": "qwen",
                "agent_servers": {"qwen": {"name": "Qwen Code", "command": "qwen", "args": ["--acp"], "env": {"A": "1"}}},
                "builtin": {"base_url": "http://127.0.0.1:11434/v1", "model": "m"}}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(file.default.as_deref(), Some("qwen"));
        let qwen = &file.agent_servers["qwen"];
        assert_eq!(
            (qwen.name.as_deref(), qwen.command.as_str(), &qwen.args[..]),
            (Some("Qwen Code"), "qwen", &["--acp".to_string()][..])
        );
        assert_eq!(qwen.env["A"], "1");
        assert_eq!(file.builtin.unwrap().model, "m");
    }

    #[test]
    fn an_entry_copied_from_zeds_settings_is_read_as_it_is() {
        let file = parse(
            r#"{"agent_servers": {"My Agent": {"type": "custom", "command": "/opt/agent", "args": [],
                "env": {}, "default_mode": "plan", "default_model": "x"}}}"#,
        )
        .unwrap()
        .unwrap();
        assert_eq!(file.agent_servers["My Agent"].command, "/opt/agent");
    }

    #[test]
    fn a_missing_file_is_no_file_unless_it_was_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agents.json");
        assert_eq!(AgentsFile::read(&path, false), Ok(None));
        let err = AgentsFile::read(&path, true).unwrap_err();
        assert!(err.to_string().contains("cannot be read"), "{err}");
    }

    #[test]
    fn what_cannot_be_used_is_refused_with_the_reason() {
        for (text, expected) in [
            ("{", "is not valid"),
            (r#"{"agent_servers": {"x": {"command": "a", "argz": []}}}"#, "unknown field `argz`"),
            (r#"{"agent_servers": {"x": {"command": "  "}}}"#, "command is empty"),
            (r#"{"agent_servers": {" x": {"command": "a"}}}"#, "or leading or trailing spaces"),
            (r#"{"agent_servers": {"builtin": {"command": "a"}}}"#, "the built-in agent's"),
            (r#"{"agent_servers": {"x": {"command": "a", "env": {"A=B": "1"}}}}"#, "cannot be set"),
            (r#"{"agent_servers": {"x": {"command": "a", "name": ""}}}"#, "name must be"),
            (r#"{"builtin": {"base_url": "", "model": "m"}}"#, "both base_url and model"),
            (r#"{"agents": {}}"#, "unknown field `agents`"),
            (r#"{"default": "nope"}"#, "default \"nope\" names no agent"),
            (r#"{"agent_servers": {"x": {"command": "bin/agent"}}}"#, "is a relative path"),
            (r#"{"agent_servers": {"x": {"command": "a", "type": "extension"}}}"#, "only \"custom\" entries"),
            (r#"{"agent_servers": {"a\nb": {"command": "a"}}}"#, "without control characters"),
            (r#"{"builtin": {"base_url": "u", "model": "m", "api_key_env": "HUB_TOKEN"}}"#, "HUB_* are the hub's own"),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.contains("agents.json"), "the file is named: {err}");
        }
    }
}
