//! The file tools: read_file, list_directory, glob, search_file_content,
//! write_file, replace. Blocking IO; the caller runs them off the async threads.

use std::fs::File;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use protocol::events::FileDiff;
use rustix::fs::{statat, AtFlags, Dir, FileType};
use rustix::io::Errno;
use serde::Deserialize;
use serde_json::Value;

use super::beneath::{Folder, WriteError};
use super::paths::{outside, relative_in_folder};
use super::walk::walk;
use super::{parse, Tool, ToolFailure, ToolResult, MAX_OUTPUT};

const MAX_LISTED: usize = 1000;
const MAX_MATCHES: usize = 500;
/// Files larger than this are not searched.
const MAX_SEARCHED_FILE: u64 = 1024 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileArgs {
    file_path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DirArgs {
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GlobArgs {
    pattern: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    file_path: String,
    content: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceArgs {
    file_path: String,
    old_string: String,
    new_string: String,
}

pub fn check_read(folder: &Folder, tool: Tool, args: &Value) -> Result<(), ToolFailure> {
    let check = |requested: &str| {
        let rel = relative_in_folder(folder.root(), requested)?;
        match folder.check(&rel) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(err) => Err(failure(requested, err)),
        }
    };
    match tool {
        Tool::ReadFile => check(&parse::<FileArgs>(args)?.file_path),
        Tool::ListDirectory => check(&parse::<DirArgs>(args)?.path),
        Tool::Glob => glob_pattern(&parse::<GlobArgs>(args)?.pattern).map(drop),
        Tool::SearchFileContent => {
            let search = parse::<SearchArgs>(args)?;
            compile(&search.pattern)?;
            check(search.path.as_deref().unwrap_or("."))
        }
        _ => Ok(()),
    }
}

pub fn run(folder: &Folder, tool: Tool, args: &Value) -> ToolResult {
    match tool {
        Tool::ReadFile => read_file(folder, &parse::<FileArgs>(args)?.file_path),
        Tool::ListDirectory => list_directory(folder, &parse::<DirArgs>(args)?.path),
        Tool::Glob => glob(folder, &parse::<GlobArgs>(args)?.pattern),
        Tool::SearchFileContent => search(folder, parse(args)?),
        Tool::WriteFile => apply(folder, write_diff(folder, &parse(args)?, None)?, false),
        Tool::Replace => apply(folder, replace_diff(folder, &parse(args)?)?, false),
        Tool::RunShellCommand => Err(ToolFailure::new("internal", "run_shell_command is not a file tool")),
    }
}

/// Writes the user's own content in place of an edit call's proposal (the whole
/// file); returns the message for the model and what was really written.
pub fn apply_user_content(
    folder: &Folder,
    tool: Tool,
    args: &Value,
    content: &str,
) -> Result<(String, FileDiff), ToolFailure> {
    let file_path = match tool {
        Tool::WriteFile => parse::<WriteArgs>(args)?.file_path,
        Tool::Replace => parse::<ReplaceArgs>(args)?.file_path,
        _ => return Err(ToolFailure::new("internal", format!("{} does not write files", tool.name()))),
    };
    let diff = write_diff(folder, &WriteArgs { file_path, content: content.to_string() }, None)?;
    let message = apply(folder, diff.clone(), true)?;
    Ok((message, diff))
}

fn io_failure(path: &str, err: std::io::Error) -> ToolFailure {
    let kind = if err.kind() == std::io::ErrorKind::NotFound { "file_not_found" } else { "io_error" };
    ToolFailure::new(kind, format!("{path}: {err}."))
}

/// A refused or failed open, said in the tools' words.
fn failure(shown: &str, err: Errno) -> ToolFailure {
    match err {
        // Only RESOLVE_BENEATH (or the fallback walk) answers EXDEV to an open.
        Errno::XDEV => outside(shown),
        Errno::ISDIR => ToolFailure::new("is_a_directory", format!("{shown} is a directory.")),
        other => io_failure(shown, other.into()),
    }
}

/// Opens a regular file to read (a directory, FIFO or device is refused).
fn open_regular(folder: &Folder, rel: &Path, shown: &str) -> Result<(File, u64), ToolFailure> {
    let file = folder.open_read(rel).map_err(|err| failure(shown, err))?;
    let meta = file.metadata().map_err(|err| io_failure(shown, err))?;
    if meta.is_dir() {
        return Err(ToolFailure::new("is_a_directory", format!("{shown} is a directory; use list_directory.")));
    }
    if !meta.is_file() {
        return Err(ToolFailure::new("io_error", format!("{shown} is not a regular file.")));
    }
    Ok((file, meta.len()))
}

/// At most `limit` bytes from the start of `reader`.
fn read_prefix(reader: impl Read, limit: usize) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit as u64).read_to_end(&mut bytes)?;
    Ok(bytes)
}

fn not_text(shown: &str) -> ToolFailure {
    ToolFailure::new("binary_file", format!("{shown} is not a text file."))
}

/// A whole file's text (what an edit diffs against).
/// Files larger than this are not edited through a card: their diff would be
/// unreadable, and holding it (old, new, the event, the store) costs memory.
pub const MAX_EDITED_FILE: u64 = 8 << 20;

/// A file to edit, whole (at most [`MAX_EDITED_FILE`]).
fn read_text(folder: &Folder, rel: &Path, shown: &str) -> Result<String, ToolFailure> {
    let (file, size) = open_regular(folder, rel, shown)?;
    let too_large = |size: u64| {
        ToolFailure::new(
            "file_too_large",
            format!(
                "{shown} is {:.1} MiB; files over {} MiB are not edited through the hub (the change could not \
                 be reviewed). Edit it with a command instead.",
                size as f64 / (1 << 20) as f64,
                MAX_EDITED_FILE >> 20
            ),
        )
    };
    if size > MAX_EDITED_FILE {
        return Err(too_large(size));
    }
    // Bounded even if the file grows after its size was read.
    let mut bytes = Vec::new();
    file.take(MAX_EDITED_FILE + 1).read_to_end(&mut bytes).map_err(|err| io_failure(shown, err))?;
    if bytes.len() as u64 > MAX_EDITED_FILE {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|_| not_text(shown))
}

fn read_file(folder: &Folder, requested: &str) -> ToolResult {
    let rel = relative_in_folder(folder.root(), requested)?;
    let (file, size) = open_regular(folder, &rel, requested)?;
    // Read no more than can be shown, plus a char's worth to see that there is more.
    let bytes = read_prefix(file, MAX_OUTPUT + READ_SLACK).map_err(|err| io_failure(requested, err))?;
    capped_text(bytes, size, requested)
}

/// A char's worth of bytes read beyond [`MAX_OUTPUT`].
const READ_SLACK: usize = 4;
/// Room kept for the truncation notice, so the capped text plus the notice
/// stays within [`MAX_OUTPUT`] and `cap_output` leaves it alone.
const NOTICE_ROOM: usize = 64;

/// The text of a file's first bytes; past [`MAX_OUTPUT`] it is cut (on a char
/// boundary) and `size`, the file's full length, is said.
fn capped_text(bytes: Vec<u8>, size: u64, shown: &str) -> ToolResult {
    let cut = bytes.len() > MAX_OUTPUT;
    let text = match std::str::from_utf8(&bytes) {
        Ok(text) => text,
        // A multi-byte char split by our own cut is not a sign of binary.
        Err(err) if cut && err.error_len().is_none() => {
            std::str::from_utf8(&bytes[..err.valid_up_to()]).map_err(|_| not_text(shown))?
        }
        Err(_) => return Err(not_text(shown)),
    };
    if !cut {
        return Ok(text.to_string());
    }
    let mut end = text.len().min(MAX_OUTPUT - NOTICE_ROOM);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let total = size.max(bytes.len() as u64);
    Ok(format!("{}\n[output truncated: showing {end} of {total} bytes]", &text[..end]))
}

fn list_directory(folder: &Folder, requested: &str) -> ToolResult {
    let rel = relative_in_folder(folder.root(), requested)?;
    let dir = folder.open_dir(&rel).map_err(|err| failure(requested, err))?;
    let entries = Dir::read_from(&dir).map_err(|err| failure(requested, err))?;
    let mut names: Vec<String> = entries
        .map_while(Result::ok)
        .filter(|entry| ![&b"."[..], b".."].contains(&entry.file_name().to_bytes()))
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            // Some file systems do not say the type while listing: ask, not following links.
            let kind = match entry.file_type() {
                FileType::Unknown => statat(&dir, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |stat| FileType::from_raw_mode(stat.st_mode)),
                known => known,
            };
            if kind == FileType::Directory {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    names.sort();
    let total = names.len();
    names.truncate(MAX_LISTED);
    let mut out = format!("Directory {}:\n{}", rel.display(), names.join("\n"));
    if total > MAX_LISTED {
        out.push_str(&format!("\n[{} more entries not shown]", total - MAX_LISTED));
    }
    Ok(out)
}

/// The pattern, matched against paths relative to the folder (so a folder
/// whose own name has `[` or `*` in it does not change what it means);
/// `./src/*.rs` and `src/` mean what a person means by them.
fn glob_pattern(pattern: &str) -> Result<glob::Pattern, ToolFailure> {
    let pattern = tidy_glob(pattern);
    if pattern.is_empty() || Path::new(pattern).is_absolute() || pattern.split('/').any(|part| part == "..") {
        return Err(ToolFailure::new(
            "invalid_arguments",
            "The glob pattern must be relative to the project, without '..'.",
        ));
    }
    glob::Pattern::new(pattern)
        .map_err(|err| ToolFailure::new("invalid_arguments", format!("Invalid glob pattern: {err}.")))
}

fn tidy_glob(pattern: &str) -> &str {
    let mut pattern = pattern.trim();
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest.trim_start_matches('/');
    }
    pattern.trim_end_matches('/')
}

/// A glob looks at no more entries than this: a huge tree ends the walk, said.
const MAX_GLOB_WALK: usize = 200_000;

/// Walks the folder without following links (a link loop such as `a -> .`
/// cannot make it endless, and nothing outside is listed), in name order,
/// from the pattern's literal directories (`src/**/*.ts` walks `src` only).
fn glob(folder: &Folder, pattern: &str) -> ToolResult {
    let matcher = glob_pattern(pattern)?;
    // `*` stays within a directory, `**/` spans any number of them.
    let options = glob::MatchOptions { require_literal_separator: true, ..glob::MatchOptions::new() };
    let parts: Vec<&str> = tidy_glob(pattern).split('/').collect();
    let literal = parts[..parts.len() - 1].iter().take_while(|part| !part.contains(['*', '?', '[', '{'])).count();
    let start = PathBuf::from(parts[..literal].join("/"));
    let mut found = Vec::new();
    let mut walked = 0;
    let mut cut = None;
    // A start that is missing, or led out of the folder by a link, is not walked.
    let _ = walk(
        folder,
        &start,
        |_| true,
        |relative, _| {
            walked += 1;
            if walked > MAX_GLOB_WALK {
                cut = Some(format!("[stopped after looking at {MAX_GLOB_WALK} entries]"));
                return ControlFlow::Break(());
            }
            if matcher.matches_path_with(relative, options) {
                if found.len() == MAX_LISTED {
                    cut = Some("[more matches not shown]".to_string());
                    return ControlFlow::Break(());
                }
                found.push(relative.display().to_string());
            }
            ControlFlow::Continue(())
        },
    );
    if found.is_empty() && cut.is_none() {
        return Ok(format!("No files match {pattern}."));
    }
    found.extend(cut);
    Ok(found.join("\n"))
}

fn compile(pattern: &str) -> Result<regex::Regex, ToolFailure> {
    regex::Regex::new(pattern)
        .map_err(|err| ToolFailure::new("invalid_arguments", format!("Invalid regular expression: {err}")))
}

fn search(folder: &Folder, args: SearchArgs) -> ToolResult {
    let regex = compile(&args.pattern)?;
    let requested = args.path.as_deref().unwrap_or(".");
    let rel_base = relative_in_folder(folder.root(), requested)?;
    let mut matches = Vec::new();
    let mut search_file = |rel: &Path, kind: FileType| {
        let is_file = kind == FileType::RegularFile && rel.file_name().is_some_and(|name| name != ".git");
        let Some(text) = searchable_text(folder, rel, is_file) else {
            return ControlFlow::Continue(());
        };
        for (number, line) in text.lines().enumerate() {
            if regex.is_match(line) {
                matches.push(format!("{}:{}: {}", rel.display(), number + 1, line.trim_end()));
                if matches.len() == MAX_MATCHES {
                    matches.push(format!("[stopped after {MAX_MATCHES} matches]"));
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    };
    // Names are listed through the folder's fd, and every file's content is
    // read through it too, so a link swapped in cannot lead out.
    match walk(folder, &rel_base, |name| name != ".git", &mut search_file) {
        Ok(()) => {}
        // A file: just it.
        Err(Errno::NOTDIR) => {
            let _ = search_file(&rel_base, FileType::RegularFile);
        }
        Err(err) => return Err(failure(requested, err)),
    }
    if matches.is_empty() {
        return Ok(format!("No matches for /{}/.", args.pattern));
    }
    Ok(matches.join("\n"))
}

/// The text of a small regular text file inside the folder, else `None`.
fn searchable_text(folder: &Folder, rel: &Path, is_file: bool) -> Option<String> {
    if !is_file {
        return None;
    }
    let (file, size) = open_regular(folder, rel, "").ok()?;
    if size > MAX_SEARCHED_FILE {
        return None;
    }
    String::from_utf8(read_prefix(file, MAX_SEARCHED_FILE as usize).ok()?).ok()
}

/// The change a write would make (old text empty for a new file). Checks the
/// path for real (symlinks included): a write that would leave the folder
/// fails here, before any card.
pub fn write_diff(folder: &Folder, write: &WriteArgs, modified: Option<&str>) -> Result<FileDiff, ToolFailure> {
    let rel = relative_in_folder(folder.root(), &write.file_path)?;
    let old_text = match read_text(folder, &rel, &write.file_path) {
        Ok(text) => text,
        Err(err) if err.kind == "file_not_found" => {
            folder.check(&rel).map_err(|err| failure(&write.file_path, err))?;
            String::new()
        }
        Err(err) if err.kind == "is_a_directory" => {
            return Err(ToolFailure::new("is_a_directory", format!("{} is a directory.", write.file_path)))
        }
        Err(err) => return Err(err),
    };
    let new_text = modified.unwrap_or(&write.content).to_string();
    Ok(FileDiff { path: rel.display().to_string(), old_text, new_text })
}

/// The change a replace would make; `old_string` must occur exactly once.
pub fn replace_diff(folder: &Folder, replace: &ReplaceArgs) -> Result<FileDiff, ToolFailure> {
    let rel = relative_in_folder(folder.root(), &replace.file_path)?;
    let old_text = read_text(folder, &rel, &replace.file_path)?;
    if replace.old_string.is_empty() {
        return Err(ToolFailure::new("invalid_arguments", "old_string is empty; use write_file to create a file."));
    }
    match old_text.matches(&replace.old_string).count() {
        0 => Err(ToolFailure::new("edit_no_match", format!("old_string was not found in {}.", replace.file_path))),
        1 => {
            let new_text = old_text.replacen(&replace.old_string, &replace.new_string, 1);
            Ok(FileDiff { path: rel.display().to_string(), old_text, new_text })
        }
        n => Err(ToolFailure::new(
            "edit_not_unique",
            format!("old_string occurs {n} times in {}; include more context to make it unique.", replace.file_path),
        )),
    }
}

/// Why a write to `path` failed, as the tool says it.
pub(super) fn write_failure(path: &str, err: WriteError) -> ToolFailure {
    match err {
        WriteError::Io(err) => failure(path, err),
        WriteError::NotRegular => ToolFailure::new("io_error", format!("{path} is not a regular file.")),
        WriteError::Kept(real) => ToolFailure::new(
            "path_read_only",
            format!("{path} would be written at {}, which the sandbox keeps read-only.", real.display()),
        ),
    }
}

/// Writes the diff's new text, whole or not at all (`Folder::replace`). The
/// path is resolved again, by the kernel, at the moment of the write: what was
/// checked for the card cannot be swapped.
fn apply(folder: &Folder, diff: FileDiff, user_modified: bool) -> ToolResult {
    let rel = relative_in_folder(folder.root(), &diff.path)?;
    folder.replace(&rel, diff.new_text.as_bytes()).map_err(|err| write_failure(&diff.path, err))?;
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
    use std::path::PathBuf;

    fn project() -> (tempfile::TempDir, PathBuf, Folder) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src/nested")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn one() {}\npub fn two() {}\n").unwrap();
        std::fs::write(root.join("src/nested/deep.rs"), "// TODO: two\n").unwrap();
        std::fs::write(root.join("README.md"), "hello\n").unwrap();
        let folder = Folder::open(&root).unwrap();
        (dir, root, folder)
    }

    #[test]
    fn reads_lists_globs_and_searches_inside() {
        let (_dir, _root, folder) = project();
        assert_eq!(run(&folder, Tool::ReadFile, &json!({"file_path": "README.md"})).unwrap(), "hello\n");
        let listing = run(&folder, Tool::ListDirectory, &json!({"path": "src"})).unwrap();
        assert!(listing.contains("lib.rs") && listing.contains("nested/"), "{listing}");
        let globbed = run(&folder, Tool::Glob, &json!({"pattern": "src/**/*.rs"})).unwrap();
        assert_eq!(globbed, "src/lib.rs\nsrc/nested/deep.rs");
        let found = run(&folder, Tool::SearchFileContent, &json!({"pattern": "two"})).unwrap();
        assert_eq!(found, "src/lib.rs:2: pub fn two() {}\nsrc/nested/deep.rs:1: // TODO: two");
    }

    #[test]
    fn reads_outside_or_malformed_are_tool_errors() {
        let (_dir, _root, folder) = project();
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
                check_read(&folder, tool, &args)
                    .err()
                    .map(|e| e.kind)
                    .unwrap_or_else(|| { run(&folder, tool, &args).unwrap_err().kind }),
                kind,
                "{tool:?} {args}"
            );
        }
    }

    #[test]
    fn write_creates_files_and_directories_with_a_diff() {
        let (_dir, root, folder) = project();
        let write = WriteArgs { file_path: "out/new.txt".into(), content: "fresh\n".into() };
        let diff = write_diff(&folder, &write, None).unwrap();
        assert_eq!(
            (diff.path.as_str(), diff.old_text.as_str(), diff.new_text.as_str()),
            ("out/new.txt", "", "fresh\n")
        );
        let message =
            run(&folder, Tool::WriteFile, &json!({"file_path": "out/new.txt", "content": "fresh\n"})).unwrap();
        assert!(message.contains("new file"));
        assert_eq!(std::fs::read_to_string(root.join("out/new.txt")).unwrap(), "fresh\n");
    }

    #[test]
    fn replace_needs_exactly_one_match() {
        let (_dir, root, folder) = project();
        let args =
            |old: &str| ReplaceArgs { file_path: "src/lib.rs".into(), old_string: old.into(), new_string: "X".into() };
        assert_eq!(replace_diff(&folder, &args("three")).unwrap_err().kind, "edit_no_match");
        assert_eq!(replace_diff(&folder, &args("pub fn")).unwrap_err().kind, "edit_not_unique");
        assert_eq!(replace_diff(&folder, &args("")).unwrap_err().kind, "invalid_arguments");
        let diff = replace_diff(&folder, &args("two")).unwrap();
        assert_eq!(diff.new_text, "pub fn one() {}\npub fn X() {}\n");
        let untouched = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
        assert_eq!(untouched, diff.old_text, "a diff writes nothing");
    }

    #[test]
    fn user_modified_content_is_written_and_said() {
        let (_dir, root, folder) = project();
        let args = json!({"file_path": "src/lib.rs", "old_string": "one", "new_string": "uno"});
        let before = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
        let (message, written) = apply_user_content(&folder, Tool::Replace, &args, "mine\n").unwrap();
        assert!(message.starts_with("Successfully applied user-modified edit to src/lib.rs. Note: the user modified"));
        assert_eq!(std::fs::read_to_string(root.join("src/lib.rs")).unwrap(), "mine\n");
        assert_eq!((written.old_text, written.new_text), (before, "mine\n".to_string()), "what was really written");
        let outside = json!({"file_path": "../x", "content": "c"});
        assert_eq!(
            apply_user_content(&folder, Tool::WriteFile, &outside, "c").unwrap_err().kind,
            "path_outside_folder"
        );
    }

    #[test]
    fn writes_through_symlinks_out_are_refused() {
        let (_dir, root, folder) = project();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let err = run(&folder, Tool::WriteFile, &json!({"file_path": "link/evil.txt", "content": "x"})).unwrap_err();
        assert_eq!(err.kind, "path_outside_folder");
        assert!(!outside.path().join("evil.txt").exists());
    }
}

#[cfg(test)]
#[path = "files_confinement_tests.rs"]
mod confinement_tests;

#[cfg(test)]
#[path = "files_write_tests.rs"]
mod write_tests;
