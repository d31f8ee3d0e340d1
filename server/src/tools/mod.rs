//! The agent's tools, named and shaped as Gemini CLI's. Every path stays inside
//! the project folder; outputs are capped so no event carries megabytes.

mod beneath;
pub mod confined;
mod files;
pub mod paths;
pub(crate) mod process;
mod walk;
pub use process::kill_remaining_groups;
pub use process::{keep_secret, pass_to_commands, SecretForCommands};
pub(crate) mod shell;
pub mod terminal;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use protocol::events::{FileDiff, ToolKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use beneath::Folder;

/// Largest tool output handed to the model and the stream.
pub const MAX_OUTPUT: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFailure {
    pub kind: String,
    pub message: String,
}

impl ToolFailure {
    pub fn new(kind: &str, message: impl Into<String>) -> Self {
        Self { kind: kind.to_string(), message: message.into() }
    }
}

pub type ToolResult = Result<String, ToolFailure>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tool {
    ReadFile,
    ListDirectory,
    Glob,
    SearchFileContent,
    WriteFile,
    Replace,
    RunShellCommand,
}

impl Tool {
    pub const ALL: [Tool; 7] = [
        Tool::ReadFile,
        Tool::ListDirectory,
        Tool::Glob,
        Tool::SearchFileContent,
        Tool::WriteFile,
        Tool::Replace,
        Tool::RunShellCommand,
    ];

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::ReadFile => "read_file",
            Self::ListDirectory => "list_directory",
            Self::Glob => "glob",
            Self::SearchFileContent => "search_file_content",
            Self::WriteFile => "write_file",
            Self::Replace => "replace",
            Self::RunShellCommand => "run_shell_command",
        }
    }

    pub fn kind(self) -> ToolKind {
        match self {
            Self::ReadFile | Self::ListDirectory | Self::Glob | Self::SearchFileContent => ToolKind::Read,
            Self::WriteFile | Self::Replace => ToolKind::Edit,
            Self::RunShellCommand => ToolKind::Execute,
        }
    }

    /// Whether the user may replace the proposed content (`modifiedContent`).
    pub fn editable(self) -> bool {
        self.kind() == ToolKind::Edit
    }

    /// The function definition offered to the model (OpenAI `tools` entry).
    pub fn definition(self) -> Value {
        let (description, properties, required): (&str, Value, &[&str]) = match self {
            Self::ReadFile => (
                "Reads a text file of the project.",
                json!({"file_path": {"type": "string", "description": "Path relative to the project folder."}}),
                &["file_path"],
            ),
            Self::ListDirectory => (
                "Lists the entries of a directory of the project.",
                json!({"path": {"type": "string", "description": "Directory relative to the project folder."}}),
                &["path"],
            ),
            Self::Glob => (
                "Finds files whose paths match a glob pattern such as src/**/*.rs.",
                json!({"pattern": {"type": "string"}}),
                &["pattern"],
            ),
            Self::SearchFileContent => (
                "Searches file contents for a regular expression; returns matching lines.",
                json!({"pattern": {"type": "string"}, "path": {"type": "string", "description": "Directory to search (default: the project)."}}),
                &["pattern"],
            ),
            Self::WriteFile => (
                "Writes a whole file, creating it (and its directories) if needed.",
                json!({"file_path": {"type": "string"}, "content": {"type": "string"}}),
                &["file_path", "content"],
            ),
            Self::Replace => (
                "Replaces one exact, unique occurrence of old_string in a file with new_string.",
                json!({"file_path": {"type": "string"}, "old_string": {"type": "string"}, "new_string": {"type": "string"}}),
                &["file_path", "old_string", "new_string"],
            ),
            Self::RunShellCommand => (
                "Runs a shell command (bash) in the project folder and returns its output and exit code.",
                json!({"command": {"type": "string"}, "description": {"type": "string", "description": "Why, in a few words."}}),
                &["command"],
            ),
        };
        json!({
            "type": "function",
            "function": {
                "name": self.name(),
                "description": description,
                "parameters": {"type": "object", "properties": properties, "required": required},
            }
        })
    }
}

pub fn definitions() -> Vec<Value> {
    Tool::ALL.into_iter().map(Tool::definition).collect()
}

/// The project folder the tools work in, held open: every tool (commands
/// too) works in the directory that was at `root` when it was first opened,
/// even if it is renamed and something else put at its path.
#[derive(Debug, Clone)]
pub struct Workspace {
    folder: Result<Arc<Folder>, ToolFailure>,
    shell_timeout: Duration,
}

impl Workspace {
    /// `root` must be canonical (sessions are keyed by canonical folders). A
    /// folder that cannot be opened makes each tool fail, saying why.
    pub fn new(root: PathBuf, shell_timeout: Duration) -> Self {
        let folder = Folder::held(&root).map_err(|err| {
            ToolFailure::new("io_error", format!("The project folder {} could not be opened: {err}.", root.display()))
        });
        Self { folder, shell_timeout }
    }

    fn folder(&self) -> Result<&Arc<Folder>, ToolFailure> {
        self.folder.as_ref().map_err(Clone::clone)
    }

    /// Checks a call before anyone is asked about it: arguments, paths, and for
    /// edits the diff to show. A failure here is the tool's result; no card.
    pub fn precheck(&self, tool: Tool, args: &Value) -> Result<Option<FileDiff>, ToolFailure> {
        match tool {
            Tool::ReadFile | Tool::ListDirectory | Tool::Glob | Tool::SearchFileContent => {
                files::check_read(self.folder()?, tool, args).map(|()| None)
            }
            Tool::WriteFile => files::write_diff(self.folder()?, &parse(args)?, None).map(Some),
            Tool::Replace => files::replace_diff(self.folder()?, &parse(args)?).map(Some),
            Tool::RunShellCommand => {
                let command = args.get("command").and_then(Value::as_str).unwrap_or_default();
                refuse_reordering(command)?;
                parse::<shell::ShellArgs>(args).map(|_| None)
            }
        }
    }

    /// Runs a call. `modified_content` (an edit tool only) is written in place
    /// of the proposal, and what was written comes back with the output.
    /// A command runs in the sandbox on the `terms` asked when it starts;
    /// `live` gets its output as it comes.
    pub async fn run(
        &self,
        tool: Tool,
        args: &Value,
        modified_content: Option<String>,
        terms: &crate::sandbox::Terms,
        live: Option<shell::Live>,
    ) -> Result<(String, Option<FileDiff>), ToolFailure> {
        if tool == Tool::RunShellCommand {
            let output = shell::run(self.folder()?, parse(args)?, self.shell_timeout, terms, live).await?;
            return Ok((cap_output(output), None));
        }
        let folder = self.folder()?.clone();
        let args = args.clone();
        let (output, written) = tokio::task::spawn_blocking(move || match modified_content {
            Some(content) => {
                files::apply_user_content(&folder, tool, &args, &content).map(|(text, diff)| (text, Some(diff)))
            }
            None => files::run(&folder, tool, &args).map(|text| (text, None)),
        })
        .await
        .map_err(|err| ToolFailure::new("internal", format!("The tool failed: {err}")))??;
        Ok((cap_output(output), written))
    }
}

/// Writes a whole file of the folder as `write_file` does (confined to it,
/// link-safe, replaced atomically), refused where `kept` says so of the path
/// it really lands at: an ACP agent's `fs/write_text_file`.
pub fn write_whole_file(
    folder: &Folder,
    path: &str,
    content: &str,
    kept: impl Fn(&std::path::Path) -> bool,
) -> Result<(), ToolFailure> {
    let rel = paths::relative_in_folder(folder.root(), path)?;
    folder.replace_unless(&rel, content.as_bytes(), kept).map_err(|err| files::write_failure(path, err))
}

/// Characters that reorder how text is shown ("Trojan Source"): a card could
/// show one command while another runs. Refused before any card.
fn refuse_reordering(command: &str) -> Result<(), ToolFailure> {
    let reorders = |c: &char| matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    match command.chars().find(reorders) {
        Some(c) => Err(ToolFailure::new(
            "invalid_arguments",
            format!(
                "The command contains U+{:04X}, a character that changes how text is shown, so the command \
                 on the card would not read as it runs. Write it without such characters.",
                c as u32
            ),
        )),
        None => Ok(()),
    }
}

pub fn parse<T: DeserializeOwned>(args: &Value) -> Result<T, ToolFailure> {
    serde_json::from_value(args.clone())
        .map_err(|err| ToolFailure::new("invalid_arguments", format!("Invalid arguments: {err}.")))
}

/// Cuts `text` to [`MAX_OUTPUT`] bytes (on a char boundary), saying how much there was.
pub fn cap_output(text: String) -> String {
    if text.len() <= MAX_OUTPUT {
        return text;
    }
    let mut end = MAX_OUTPUT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[output truncated: showing {end} of {} bytes]", &text[..end], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_kinds_and_definitions_agree() {
        for tool in Tool::ALL {
            assert_eq!(Tool::from_name(tool.name()), Some(tool));
            assert_eq!(tool.definition()["function"]["name"], tool.name());
        }
        assert_eq!(Tool::from_name("rm_rf"), None);
        assert_eq!(Tool::RunShellCommand.kind(), ToolKind::Execute);
        assert!(Tool::Replace.editable() && !Tool::ReadFile.editable());
    }

    #[test]
    fn commands_that_would_read_differently_on_the_card_are_refused() {
        let workspace = Workspace::new(PathBuf::from("/"), Duration::from_secs(1));
        let check = |command: &str| workspace.precheck(Tool::RunShellCommand, &json!({"command": command}));
        assert!(check("ls -la").is_ok());
        assert!(check("echo 'héllo wörld ✓'").is_ok(), "ordinary Unicode is fine");
        for hidden in ["echo safe\u{202E}fr- mr", "ls \u{2066}x\u{2069}", "a\u{200F}b"] {
            let failure = check(hidden).unwrap_err();
            assert_eq!(failure.kind, "invalid_arguments", "{hidden:?}");
            assert!(failure.message.contains("U+"), "{}", failure.message);
        }
    }

    /// Failed on the code that opened the folder by its path at each call:
    /// after the swap, the tools read, wrote and ran in the symlink's target.
    fn terms() -> crate::sandbox::Terms {
        crate::sandbox::Terms::on_this_machine()
    }

    #[tokio::test]
    async fn a_folder_renamed_and_replaced_by_a_link_keeps_the_tools_in_it() {
        let parent = tempfile::tempdir().unwrap();
        let parent = parent.path().canonicalize().map(|path| (parent, path)).unwrap();
        let (root, moved) = (parent.1.join("project"), parent.1.join("project.moved"));
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("notes.txt"), "inside\n").unwrap();
        std::fs::write(home.path().join("notes.txt"), "home\n").unwrap();
        let workspace = Workspace::new(root.clone(), Duration::from_secs(10));
        std::fs::rename(&root, &moved).unwrap();
        std::os::unix::fs::symlink(home.path(), &root).unwrap();
        // A later turn's workspace too.
        let mut notes = "inside\n";
        for workspace in [workspace, Workspace::new(root.clone(), Duration::from_secs(10))] {
            let read = workspace.run(Tool::ReadFile, &json!({"file_path": "notes.txt"}), None, &terms(), None).await;
            assert_eq!(read.unwrap().0, notes);
            notes = "written\n";
            let write = json!({"file_path": "notes.txt", "content": "written\n"});
            workspace.precheck(Tool::WriteFile, &write).unwrap();
            workspace.run(Tool::WriteFile, &write, None, &terms(), None).await.unwrap();
            let absolute = json!({"file_path": root.join("new.txt"), "content": "new\n"});
            workspace.run(Tool::WriteFile, &absolute, None, &terms(), None).await.unwrap();
            let listed = workspace.run(Tool::Glob, &json!({"pattern": "*.txt"}), None, &terms(), None).await.unwrap().0;
            assert_eq!(listed, "new.txt\nnotes.txt");
            let found = workspace
                .run(Tool::SearchFileContent, &json!({"pattern": "new"}), None, &terms(), None)
                .await
                .unwrap()
                .0;
            assert_eq!(found, "new.txt:1: new");
            let shell = json!({"command": "echo ran > ran.out; pwd -P"});
            let ran = workspace.run(Tool::RunShellCommand, &shell, None, &terms(), None).await.unwrap().0;
            assert!(ran.starts_with(&format!("{}\n", moved.display())), "{ran}");
        }
        assert_eq!(std::fs::read_to_string(moved.join("notes.txt")).unwrap(), "written\n");
        assert_eq!(std::fs::read_to_string(moved.join("ran.out")).unwrap(), "ran\n");
        let mut at_home: Vec<_> = std::fs::read_dir(home.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        at_home.sort();
        assert_eq!(at_home, ["notes.txt"], "nothing was made in the link's target");
        assert_eq!(std::fs::read_to_string(home.path().join("notes.txt")).unwrap(), "home\n");
    }

    #[test]
    fn an_agents_write_never_lands_where_the_sandbox_keeps_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".gemini")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::os::unix::fs::symlink(".gemini", root.join("settings")).unwrap();
        std::os::unix::fs::symlink("../.gemini/settings.json", root.join("src/config.json")).unwrap();
        let folder = Folder::open(&root).unwrap();
        let write = |path: &str| {
            write_whole_file(&folder, &root.join(path).display().to_string(), "x", crate::sandbox::kept_read_only)
        };
        write("notes.md").unwrap();
        write("src/deep/new.rs").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("src/deep/new.rs")).unwrap(), "x");
        for kept in [
            ".gemini/settings.json",
            "settings/settings.json",
            "settings/new/dir.json",
            "src/config.json",
            ".git/hooks/pre-commit",
            ".mcp.json",
        ] {
            let failure = write(kept).unwrap_err();
            assert_eq!(failure.kind, "path_read_only", "{kept}: {failure:?}");
        }
        let in_gemini: Vec<_> = std::fs::read_dir(root.join(".gemini")).unwrap().collect();
        assert!(in_gemini.is_empty(), "nothing was made in .gemini, not even a directory: {in_gemini:?}");
        assert!(!root.join(".git").exists() && !root.join(".mcp.json").exists());
    }

    #[test]
    fn output_is_capped_with_the_full_size_said() {
        let capped = cap_output("é".repeat(MAX_OUTPUT));
        assert!(capped.len() < MAX_OUTPUT + 100);
        assert!(capped.ends_with(&format!("of {} bytes]", 2 * MAX_OUTPUT)));
        assert_eq!(cap_output("short".into()), "short");
    }
}
