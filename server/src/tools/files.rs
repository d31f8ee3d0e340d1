//! The file tools: read_file, list_directory, glob, search_file_content,
//! write_file, replace. Blocking IO; the caller runs them off the async threads.

use std::path::{Path, PathBuf};

use app::events::FileDiff;
use serde::Deserialize;
use serde_json::Value;

use super::paths::{display_relative, resolve_in_folder};
use super::{parse, Tool, ToolFailure, ToolResult};

const MAX_LISTED: usize = 1000;
const MAX_MATCHES: usize = 500;
/// Files larger than this are not searched.
const MAX_SEARCHED_FILE: u64 = 1024 * 1024;

#[derive(Deserialize)]
struct FileArgs {
    file_path: String,
}

#[derive(Deserialize)]
struct DirArgs {
    path: String,
}

#[derive(Deserialize)]
struct GlobArgs {
    pattern: String,
}

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
pub struct WriteArgs {
    file_path: String,
    content: String,
}

#[derive(Deserialize)]
pub struct ReplaceArgs {
    file_path: String,
    old_string: String,
    new_string: String,
}

pub fn check_read(root: &Path, tool: Tool, args: &Value) -> Result<(), ToolFailure> {
    match tool {
        Tool::ReadFile => resolve_in_folder(root, &parse::<FileArgs>(args)?.file_path).map(drop),
        Tool::ListDirectory => resolve_in_folder(root, &parse::<DirArgs>(args)?.path).map(drop),
        Tool::Glob => glob_pattern(root, &parse::<GlobArgs>(args)?.pattern).map(drop),
        Tool::SearchFileContent => {
            let search = parse::<SearchArgs>(args)?;
            compile(&search.pattern)?;
            resolve_in_folder(root, search.path.as_deref().unwrap_or(".")).map(drop)
        }
        _ => Ok(()),
    }
}

pub fn run(root: &Path, tool: Tool, args: &Value) -> ToolResult {
    match tool {
        Tool::ReadFile => read_file(root, &parse::<FileArgs>(args)?.file_path),
        Tool::ListDirectory => list_directory(root, &parse::<DirArgs>(args)?.path),
        Tool::Glob => glob(root, &parse::<GlobArgs>(args)?.pattern),
        Tool::SearchFileContent => search(root, parse(args)?),
        Tool::WriteFile => apply(root, write_diff(root, &parse(args)?, None)?, false),
        Tool::Replace => apply(root, replace_diff(root, &parse(args)?)?, false),
        Tool::RunShellCommand => Err(ToolFailure::new("internal", "run_shell_command is not a file tool")),
    }
}

/// Writes the user's own content in place of an edit call's proposal (the whole
/// file); returns the message for the model and what was really written.
pub fn apply_user_content(
    root: &Path,
    tool: Tool,
    args: &Value,
    content: &str,
) -> Result<(String, FileDiff), ToolFailure> {
    let file_path = match tool {
        Tool::WriteFile => parse::<WriteArgs>(args)?.file_path,
        Tool::Replace => parse::<ReplaceArgs>(args)?.file_path,
        _ => return Err(ToolFailure::new("internal", format!("{} does not write files", tool.name()))),
    };
    let diff = write_diff(root, &WriteArgs { file_path, content: content.to_string() }, None)?;
    let message = apply(root, diff.clone(), true)?;
    Ok((message, diff))
}

fn io_failure(path: &str, err: std::io::Error) -> ToolFailure {
    let kind = if err.kind() == std::io::ErrorKind::NotFound { "file_not_found" } else { "io_error" };
    ToolFailure::new(kind, format!("{path}: {err}."))
}

fn read_text(path: &Path, shown: &str) -> Result<String, ToolFailure> {
    let bytes = std::fs::read(path).map_err(|err| io_failure(shown, err))?;
    String::from_utf8(bytes).map_err(|_| ToolFailure::new("binary_file", format!("{shown} is not a text file.")))
}

fn read_file(root: &Path, requested: &str) -> ToolResult {
    let path = resolve_in_folder(root, requested)?;
    if path.is_dir() {
        return Err(ToolFailure::new("is_a_directory", format!("{requested} is a directory; use list_directory.")));
    }
    read_text(&path, requested)
}

fn list_directory(root: &Path, requested: &str) -> ToolResult {
    let path = resolve_in_folder(root, requested)?;
    let entries = std::fs::read_dir(&path).map_err(|err| io_failure(requested, err))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(MAX_LISTED);
    let mut out = format!("Directory {}:\n{}", display_relative(root, &path), names.join("\n"));
    if total > MAX_LISTED {
        out.push_str(&format!("\n[{} more entries not shown]", total - MAX_LISTED));
    }
    Ok(out)
}

fn glob_pattern(root: &Path, pattern: &str) -> Result<String, ToolFailure> {
    if pattern.trim().is_empty() || Path::new(pattern).is_absolute() || pattern.split('/').any(|part| part == "..") {
        return Err(ToolFailure::new(
            "invalid_arguments",
            "The glob pattern must be relative to the project, without '..'.",
        ));
    }
    let full = root.join(pattern).to_string_lossy().into_owned();
    glob::Pattern::new(&full)
        .map_err(|err| ToolFailure::new("invalid_arguments", format!("Invalid glob pattern: {err}.")))?;
    Ok(full)
}

fn glob(root: &Path, pattern: &str) -> ToolResult {
    let full = glob_pattern(root, pattern)?;
    let paths = glob::glob(&full).map_err(|err| ToolFailure::new("invalid_arguments", err.to_string()))?;
    let mut found: Vec<String> = paths
        .filter_map(Result::ok)
        .filter(|path| path.canonicalize().is_ok_and(|real| real.starts_with(root)))
        .map(|path| display_relative(root, &path))
        .take(MAX_LISTED + 1)
        .collect();
    if found.is_empty() {
        return Ok(format!("No files match {pattern}."));
    }
    let more = found.len() > MAX_LISTED;
    found.truncate(MAX_LISTED);
    Ok(found.join("\n") + if more { "\n[more matches not shown]" } else { "" })
}

fn compile(pattern: &str) -> Result<regex::Regex, ToolFailure> {
    regex::Regex::new(pattern)
        .map_err(|err| ToolFailure::new("invalid_arguments", format!("Invalid regular expression: {err}")))
}

fn search(root: &Path, args: SearchArgs) -> ToolResult {
    let regex = compile(&args.pattern)?;
    let base = resolve_in_folder(root, args.path.as_deref().unwrap_or("."))?;
    let mut matches = Vec::new();
    let walker =
        walkdir::WalkDir::new(&base).sort_by_file_name().into_iter().filter_entry(|entry| entry.file_name() != ".git");
    'files: for entry in walker.filter_map(Result::ok) {
        let too_big = entry.metadata().map_or(true, |meta| meta.len() > MAX_SEARCHED_FILE);
        if !entry.file_type().is_file() || too_big {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path()) else { continue };
        for (number, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                matches.push(format!("{}:{}: {}", display_relative(root, entry.path()), number + 1, line.trim_end()));
                if matches.len() == MAX_MATCHES {
                    matches.push(format!("[stopped after {MAX_MATCHES} matches]"));
                    break 'files;
                }
            }
        }
    }
    if matches.is_empty() {
        return Ok(format!("No matches for /{}/.", args.pattern));
    }
    Ok(matches.join("\n"))
}

/// The change a write would make (old text empty for a new file).
pub fn write_diff(root: &Path, write: &WriteArgs, modified: Option<&str>) -> Result<FileDiff, ToolFailure> {
    let path = resolve_in_folder(root, &write.file_path)?;
    if path.is_dir() {
        return Err(ToolFailure::new("is_a_directory", format!("{} is a directory.", write.file_path)));
    }
    let old_text = if path.exists() { read_text(&path, &write.file_path)? } else { String::new() };
    let new_text = modified.unwrap_or(&write.content).to_string();
    Ok(FileDiff { path: display_relative(root, &path), old_text, new_text })
}

/// The change a replace would make; `old_string` must occur exactly once.
pub fn replace_diff(root: &Path, replace: &ReplaceArgs) -> Result<FileDiff, ToolFailure> {
    let path = resolve_in_folder(root, &replace.file_path)?;
    let old_text = read_text(&path, &replace.file_path)?;
    if replace.old_string.is_empty() {
        return Err(ToolFailure::new("invalid_arguments", "old_string is empty; use write_file to create a file."));
    }
    match old_text.matches(&replace.old_string).count() {
        0 => Err(ToolFailure::new("edit_no_match", format!("old_string was not found in {}.", replace.file_path))),
        1 => {
            let new_text = old_text.replacen(&replace.old_string, &replace.new_string, 1);
            Ok(FileDiff { path: display_relative(root, &path), old_text, new_text })
        }
        n => Err(ToolFailure::new(
            "edit_not_unique",
            format!("old_string occurs {n} times in {}; include more context to make it unique.", replace.file_path),
        )),
    }
}

fn apply(root: &Path, diff: FileDiff, user_modified: bool) -> ToolResult {
    let path: PathBuf = resolve_in_folder(root, &diff.path)?;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|err| io_failure(&diff.path, err))?;
    }
    std::fs::write(&path, &diff.new_text).map_err(|err| io_failure(&diff.path, err))?;
    Ok(if user_modified {
        format!(
            "Successfully applied user-modified edit to {}. Note: the user modified your suggested changes before accepting. Do not attempt to revert to your original suggestion.",
            diff.path
        )
    } else if diff.old_text.is_empty() {
        format!("Successfully created and wrote to new file: {}.", diff.path)
    } else {
        format!("Successfully modified file: {}.", diff.path)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src/nested")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn one() {}\npub fn two() {}\n").unwrap();
        std::fs::write(root.join("src/nested/deep.rs"), "// TODO: two\n").unwrap();
        std::fs::write(root.join("README.md"), "hello\n").unwrap();
        (dir, root)
    }

    #[test]
    fn reads_lists_globs_and_searches_inside() {
        let (_dir, root) = project();
        assert_eq!(run(&root, Tool::ReadFile, &json!({"file_path": "README.md"})).unwrap(), "hello\n");
        let listing = run(&root, Tool::ListDirectory, &json!({"path": "src"})).unwrap();
        assert!(listing.contains("lib.rs") && listing.contains("nested/"), "{listing}");
        let globbed = run(&root, Tool::Glob, &json!({"pattern": "src/**/*.rs"})).unwrap();
        assert_eq!(globbed, "src/lib.rs\nsrc/nested/deep.rs");
        let found = run(&root, Tool::SearchFileContent, &json!({"pattern": "two"})).unwrap();
        assert_eq!(found, "src/lib.rs:2: pub fn two() {}\nsrc/nested/deep.rs:1: // TODO: two");
    }

    #[test]
    fn reads_outside_or_malformed_are_tool_errors() {
        let (_dir, root) = project();
        let cases = [
            (Tool::ReadFile, json!({"file_path": "../x"}), "path_outside_folder"),
            (Tool::ReadFile, json!({"file_path": "missing.txt"}), "file_not_found"),
            (Tool::ReadFile, json!({"path": "README.md"}), "invalid_arguments"),
            (Tool::ListDirectory, json!({"path": "/etc"}), "path_outside_folder"),
            (Tool::Glob, json!({"pattern": "../*"}), "invalid_arguments"),
            (Tool::Glob, json!({"pattern": "/etc/*"}), "invalid_arguments"),
            (Tool::SearchFileContent, json!({"pattern": "("}), "invalid_arguments"),
            (Tool::SearchFileContent, json!({"pattern": "x", "path": "/"}), "path_outside_folder"),
        ];
        for (tool, args, kind) in cases {
            assert_eq!(
                check_read(&root, tool, &args)
                    .err()
                    .map(|e| e.kind)
                    .unwrap_or_else(|| { run(&root, tool, &args).unwrap_err().kind }),
                kind,
                "{tool:?} {args}"
            );
        }
    }

    #[test]
    fn write_creates_files_and_directories_with_a_diff() {
        let (_dir, root) = project();
        let write = WriteArgs { file_path: "out/new.txt".into(), content: "fresh\n".into() };
        let diff = write_diff(&root, &write, None).unwrap();
        assert_eq!(
            (diff.path.as_str(), diff.old_text.as_str(), diff.new_text.as_str()),
            ("out/new.txt", "", "fresh\n")
        );
        let message = run(&root, Tool::WriteFile, &json!({"file_path": "out/new.txt", "content": "fresh\n"})).unwrap();
        assert!(message.contains("new file"));
        assert_eq!(std::fs::read_to_string(root.join("out/new.txt")).unwrap(), "fresh\n");
    }

    #[test]
    fn replace_needs_exactly_one_match() {
        let (_dir, root) = project();
        let args =
            |old: &str| ReplaceArgs { file_path: "src/lib.rs".into(), old_string: old.into(), new_string: "X".into() };
        assert_eq!(replace_diff(&root, &args("three")).unwrap_err().kind, "edit_no_match");
        assert_eq!(replace_diff(&root, &args("pub fn")).unwrap_err().kind, "edit_not_unique");
        assert_eq!(replace_diff(&root, &args("")).unwrap_err().kind, "invalid_arguments");
        let diff = replace_diff(&root, &args("two")).unwrap();
        assert_eq!(diff.new_text, "pub fn one() {}\npub fn X() {}\n");
        let untouched = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
        assert_eq!(untouched, diff.old_text, "a diff writes nothing");
    }

    #[test]
    fn user_modified_content_is_written_and_said() {
        let (_dir, root) = project();
        let args = json!({"file_path": "src/lib.rs", "old_string": "one", "new_string": "uno"});
        let before = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
        let (message, written) = apply_user_content(&root, Tool::Replace, &args, "mine\n").unwrap();
        assert!(message.starts_with("Successfully applied user-modified edit to src/lib.rs. Note: the user modified"));
        assert_eq!(std::fs::read_to_string(root.join("src/lib.rs")).unwrap(), "mine\n");
        assert_eq!((written.old_text, written.new_text), (before, "mine\n".to_string()), "what was really written");
        let outside = json!({"file_path": "../x", "content": "c"});
        assert_eq!(apply_user_content(&root, Tool::WriteFile, &outside, "c").unwrap_err().kind, "path_outside_folder");
    }

    #[test]
    fn writes_through_symlinks_out_are_refused() {
        let (_dir, root) = project();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let err = run(&root, Tool::WriteFile, &json!({"file_path": "link/evil.txt", "content": "x"})).unwrap_err();
        assert_eq!(err.kind, "path_outside_folder");
        assert!(!outside.path().join("evil.txt").exists());
    }
}
