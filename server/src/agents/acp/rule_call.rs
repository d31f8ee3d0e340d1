//! An ACP permission request as the tool call the folder's rules judge, under
//! Gemini CLI's tool names and arguments: a command is `run_shell_command` with
//! its `command`, an edit is `write_file` (or `replace`) with its `file_path`.
//! So a rule means the same for every agent, and the same as in Gemini CLI.

use agent_client_protocol::v1::schema::{ToolCallContent, ToolCallUpdateFields, ToolKind as AcpKind};
use serde_json::{json, Map, Value};

/// The call as rules see it.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleCall {
    pub name: String,
    pub args: Value,
}

impl RuleCall {
    /// The call once per path it names (an edit may name several: each is
    /// judged as an edit of its own); else the call itself. Only an edit's
    /// `paths` count (the hub sets them; another tool's input is the agent's),
    /// and a list without paths leaves the call as it is.
    pub fn each_path(&self) -> Vec<RuleCall> {
        let edit = self.name == "write_file" || self.name == "replace";
        let paths: Vec<&str> = match self.args.get("paths").and_then(Value::as_array) {
            Some(paths) if edit => paths.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if paths.is_empty() {
            return vec![self.clone()];
        }
        paths
            .into_iter()
            .map(|path| {
                let mut args = self.args.clone();
                args["file_path"] = json!(path);
                if let Some(args) = args.as_object_mut() {
                    args.remove("paths");
                }
                RuleCall { name: self.name.clone(), args }
            })
            .collect()
    }
}

pub fn rule_call(fields: &ToolCallUpdateFields) -> RuleCall {
    let raw: Map<String, Value> = match &fields.raw_input {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let text = |key: &str| raw.get(key).and_then(Value::as_str).map(str::to_string);
    let title = fields.title.clone().unwrap_or_default();
    match fields.kind {
        Some(AcpKind::Execute) => {
            // Gemini CLI titles a shell request with the command itself; other
            // agents send it as words (codex-acp), joined here as a shell would read them.
            let words = raw.get("command").and_then(Value::as_array).map(|words| {
                let words: Vec<&str> = words.iter().map(|word| word.as_str().unwrap_or_default()).collect();
                command_line(&words)
            });
            let command = text("command").or(words).unwrap_or(title);
            let mut args = json!({ "command": command });
            if let Some(dir) = text("dir_path").or_else(|| text("cwd")) {
                args["dir_path"] = json!(dir);
            }
            RuleCall { name: "run_shell_command".into(), args }
        }
        Some(AcpKind::Edit | AcpKind::Delete | AcpKind::Move) => {
            // Every path the agent names for the edit, its own argument first: each is judged.
            let diff_paths = fields.content.iter().flatten().filter_map(|item| match item {
                ToolCallContent::Diff(diff) => Some(diff.path.display().to_string()),
                _ => None,
            });
            let locations = fields.locations.iter().flatten().map(|location| location.path.display().to_string());
            let mut paths: Vec<String> = Vec::new();
            for path in text("file_path").into_iter().chain(text("path")).chain(diff_paths).chain(locations) {
                if !path.is_empty() && !paths.contains(&path) {
                    paths.push(path);
                }
            }
            let path = paths.first().cloned().unwrap_or_default();
            let replaces = raw.contains_key("old_string") || raw.contains_key("new_string");
            // Only what an edit is: a key of the agent's own cannot lend its text
            // to a rule (a nested `"command":"git status"` matched an allow).
            let mut args: Map<String, Value> = ["content", "old_string", "new_string"]
                .into_iter()
                .filter_map(|key| raw.get(key).map(|value| (key.to_string(), value.clone())))
                .collect();
            args.insert("file_path".into(), json!(path));
            if paths.len() > 1 {
                args.insert("paths".into(), json!(paths));
            }
            RuleCall { name: if replaces { "replace" } else { "write_file" }.into(), args: Value::Object(args) }
        }
        _ => {
            let name = fields.name.clone().filter(|name| !name.is_empty()).unwrap_or(title);
            RuleCall { name, args: Value::Object(raw) }
        }
    }
}

/// A command sent as words, as the shell line it runs: `[bash, -lc, script]`
/// is its script (as the card shows it and a rule's commandPrefix is written),
/// other words are joined as a shell reads them.
pub fn command_line(words: &[&str]) -> String {
    match words {
        [shell, "-c" | "-lc", script] if is_shell(shell) => script.to_string(),
        _ => shell_words::join(words),
    }
}

fn is_shell(program: &str) -> bool {
    matches!(program.rsplit('/').next(), Some("bash" | "sh" | "zsh" | "dash"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{Diff, ToolCallLocation};

    #[test]
    fn a_command_is_judged_by_its_text() {
        let titled = ToolCallUpdateFields::new().kind(AcpKind::Execute).title("git push --force".to_string());
        assert_eq!(
            rule_call(&titled),
            RuleCall { name: "run_shell_command".into(), args: json!({"command": "git push --force"}) }
        );
        let raw = ToolCallUpdateFields::new()
            .kind(AcpKind::Execute)
            .title("`ls`".to_string())
            .raw_input(json!({"command": "ls -la", "cwd": "/p"}));
        assert_eq!(rule_call(&raw).args, json!({"command": "ls -la", "dir_path": "/p"}), "the raw command wins");
        let words = ToolCallUpdateFields::new()
            .kind(AcpKind::Execute)
            .title("Run".to_string())
            .raw_input(json!({"command": ["bash", "-lc", "git push --force"]}));
        assert_eq!(rule_call(&words).args["command"], "git push --force", "a shell's script, not the title");
        let argv = ToolCallUpdateFields::new()
            .kind(AcpKind::Execute)
            .raw_input(json!({"command": ["git", "commit", "-m", "two words"]}));
        assert_eq!(rule_call(&argv).args["command"], "git commit -m 'two words'", "words joined as a shell reads them");
    }

    #[test]
    fn an_edit_is_judged_by_its_path() {
        let diff = ToolCallUpdateFields::new()
            .kind(AcpKind::Edit)
            .title("Writing to a.md".to_string())
            .content(vec![ToolCallContent::Diff(Diff::new("/p/a.md", "# A\n"))]);
        assert_eq!(rule_call(&diff), RuleCall { name: "write_file".into(), args: json!({"file_path": "/p/a.md"}) });
        let located = ToolCallUpdateFields::new()
            .kind(AcpKind::Edit)
            .locations(vec![ToolCallLocation::new("/p/b.rs")])
            .raw_input(json!({"old_string": "a", "new_string": "b"}));
        let call = rule_call(&located);
        assert_eq!(call.name, "replace");
        assert_eq!(call.args["file_path"], "/p/b.rs");
        assert_eq!(call.args["old_string"], "a", "argsPattern sees the other arguments");
    }

    #[test]
    fn an_edit_naming_several_paths_is_judged_by_each() {
        let two = ToolCallUpdateFields::new()
            .kind(AcpKind::Edit)
            .locations(vec![ToolCallLocation::new("/p/notes.md"), ToolCallLocation::new("/p/.gemini/settings.json")]);
        let call = rule_call(&two);
        assert_eq!(call.args["file_path"], "/p/notes.md");
        assert_eq!(call.args["paths"], json!(["/p/notes.md", "/p/.gemini/settings.json"]));
        let each: Vec<Value> = call.each_path().into_iter().map(|call| call.args["file_path"].clone()).collect();
        assert_eq!(each, [json!("/p/notes.md"), json!("/p/.gemini/settings.json")]);
        assert!(call.each_path().iter().all(|call| call.args.get("paths").is_none()));
        let one = ToolCallUpdateFields::new().kind(AcpKind::Edit).locations(vec![ToolCallLocation::new("/p/a.md")]);
        assert!(rule_call(&one).args.get("paths").is_none(), "one path: as before");
        assert_eq!(rule_call(&one).each_path(), [rule_call(&one)]);
        // Another tool's `paths` is the agent's own input: the call is judged whole.
        for paths in [json!([]), json!([1]), json!(["/p/a"])] {
            let fetch = RuleCall { name: "web_fetch".into(), args: json!({"url": "https://x", "paths": paths}) };
            assert_eq!(fetch.each_path(), std::slice::from_ref(&fetch), "{paths}");
        }
        let empty = RuleCall { name: "write_file".into(), args: json!({"file_path": "/p/a", "paths": []}) };
        assert_eq!(empty.each_path(), std::slice::from_ref(&empty), "no paths: the call itself");
    }

    #[test]
    fn other_kinds_keep_their_name_and_input() {
        let fetch = ToolCallUpdateFields::new()
            .kind(AcpKind::Fetch)
            .title("Fetch".to_string())
            .name("web_fetch".to_string())
            .raw_input(json!({"url": "https://x"}));
        assert_eq!(rule_call(&fetch), RuleCall { name: "web_fetch".into(), args: json!({"url": "https://x"}) });
    }
}
