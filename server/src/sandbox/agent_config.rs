//! What a folder's own agent config would run once the folder is trusted:
//! hooks, MCP servers, discovery and helper commands, read from the files an
//! agent loads (Claude Code's, Qwen Code's, Gemini CLI's, Codex's), for the
//! trust banner. Until trust those files are hidden from the agents
//! (`plan::AGENT_CONFIG_IN_ROOT`).

use std::path::Path;

use serde_json::Value;

/// The files read, relative to the folder.
const FILES: &[&str] = &[
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".mcp.json",
    ".qwen/settings.json",
    ".gemini/settings.json",
    ".codex/config.toml",
];

/// Keys whose string value is a program an agent runs (or a server it reaches).
const RUNS: &[&str] = &[
    "command",
    "discoveryCommand",
    "callCommand",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "url",
    "httpUrl",
];

/// A repository's file is read up to this much (a planted `/dev/zero` or a
/// huge file is not read whole).
const MAX_BYTES: u64 = 1024 * 1024;
/// The banner lists at most this many lines.
const MAX_LINES: usize = 24;
const MAX_LINE_CHARS: usize = 240;

/// A line for each program the folder's agent config would run, as
/// `file: where: `what``.
pub fn what_would_run(folder: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for name in FILES {
        let Ok(text) = crate::folder::read_planted(&folder.join(name), MAX_BYTES) else { continue };
        // Empty: nothing to run (and what a running sandbox's stand-in for a missing file is).
        if text.trim().is_empty() {
            continue;
        }
        let value = if name.ends_with(".toml") {
            toml::from_str::<toml::Value>(&text).ok().and_then(|value| serde_json::to_value(value).ok())
        } else {
            serde_json::from_str::<Value>(&text).ok()
        };
        match value {
            Some(value) => collect(name, "", &value, &mut lines),
            // Unreadable config is named: the agent might read it another way.
            None => lines.push(format!("{name}: could not be read as settings (hidden from agents until trusted)")),
        }
    }
    lines.truncate(MAX_LINES);
    lines
}

fn collect(file: &str, at: &str, value: &Value, lines: &mut Vec<String>) {
    if lines.len() >= MAX_LINES {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let here = if at.is_empty() { key.clone() } else { format!("{at}.{key}") };
                match inner {
                    Value::String(text) if RUNS.contains(&key.as_str()) => {
                        let args = map
                            .get("args")
                            .and_then(Value::as_array)
                            .map(|args| args.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "));
                        let what = match args.filter(|args| !args.is_empty()) {
                            Some(args) => format!("{text} {args}"),
                            None => text.clone(),
                        };
                        lines.push(cut(format!("{file}: {here}: `{what}`")));
                    }
                    _ => collect(file, &here, inner, lines),
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                collect(file, &format!("{at}[{index}]"), item, lines);
            }
        }
        _ => {}
    }
}

fn cut(line: String) -> String {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_servers_and_discovery_commands_are_named_with_their_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::create_dir_all(root.join(".gemini")).unwrap();
        std::fs::create_dir_all(root.join(".codex")).unwrap();
        std::fs::write(
            root.join(".claude/settings.json"),
            r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(root.join(".mcp.json"), r#"{"mcpServers":{"evil":{"command":"node","args":["srv.js"]}}}"#)
            .unwrap();
        std::fs::write(root.join(".gemini/settings.json"), r#"{"tools":{"discoveryCommand":"./discover.sh"}}"#)
            .unwrap();
        std::fs::write(root.join(".codex/config.toml"), "[mcp_servers.x]\ncommand = \"x-server\"\n").unwrap();
        let lines = what_would_run(root);
        assert!(
            lines.contains(&".claude/settings.json: hooks.SessionStart[0].hooks[0].command: `touch /tmp/pwned`".into()),
            "{lines:?}"
        );
        assert!(lines.contains(&".mcp.json: mcpServers.evil.command: `node srv.js`".into()), "{lines:?}");
        assert!(lines.contains(&".gemini/settings.json: tools.discoveryCommand: `./discover.sh`".into()), "{lines:?}");
        assert!(lines.contains(&".codex/config.toml: mcp_servers.x.command: `x-server`".into()), "{lines:?}");
        assert_eq!(lines.len(), 4);
    }

    #[test]
    fn an_empty_file_runs_nothing_and_broken_settings_are_named() {
        let dir = tempfile::tempdir().unwrap();
        // As a running sandbox's stand-in for a missing `.mcp.json` is.
        std::fs::write(dir.path().join(".mcp.json"), "").unwrap();
        assert!(what_would_run(dir.path()).is_empty());
        std::fs::write(dir.path().join(".mcp.json"), "{not json").unwrap();
        assert_eq!(
            what_would_run(dir.path()),
            [".mcp.json: could not be read as settings (hidden from agents until trusted)"]
        );
    }

    #[test]
    fn a_planted_device_or_fifo_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".gemini")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join(".gemini/settings.json")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join(".mcp.json"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Returns (a read of either would never end), naming nothing.
        assert!(what_would_run(dir.path()).is_empty());
    }
}
