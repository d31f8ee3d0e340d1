//! Keeps every tool path inside the project folder: `..`, absolute paths
//! elsewhere, and symlinks that lead out are refused.

use std::path::{Component, Path, PathBuf};

use super::ToolFailure;

/// Resolves `requested` (relative to `root`, or absolute) to a path inside
/// `root`, which must be canonical. The path itself need not exist yet (a file
/// to write), but every existing part of it is resolved through symlinks.
pub fn resolve_in_folder(root: &Path, requested: &str) -> Result<PathBuf, ToolFailure> {
    if requested.trim().is_empty() {
        return Err(ToolFailure::new("invalid_path", "The path is empty."));
    }
    let joined = if Path::new(requested).is_absolute() { PathBuf::from(requested) } else { root.join(requested) };
    let lexical = normalize(&joined);
    if !lexical.starts_with(root) {
        return Err(outside(requested));
    }
    // The longest existing ancestor, with symlinks resolved, must stay inside too.
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    let real = loop {
        match existing.canonicalize() {
            Ok(real) => break real,
            Err(_) => {
                rest.push(existing.file_name().ok_or_else(|| outside(requested))?);
                existing = existing.parent().ok_or_else(|| outside(requested))?;
            }
        }
    };
    if !real.starts_with(root) {
        return Err(outside(requested));
    }
    Ok(rest.into_iter().rev().fold(real, |path, part| path.join(part)))
}

/// Removes `.` and resolves `..` without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn outside(requested: &str) -> ToolFailure {
    ToolFailure::new(
        "path_outside_folder",
        format!("'{requested}' is outside the project folder; tools only work inside it."),
    )
}

/// `path` relative to `root` for display (the model and the user see short paths).
pub fn display_relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        (dir, root)
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let (_dir, root) = root();
        assert_eq!(resolve_in_folder(&root, "src/main.rs").unwrap(), root.join("src/main.rs"));
        assert_eq!(resolve_in_folder(&root, "./src/../src/main.rs").unwrap(), root.join("src/main.rs"));
        let absolute = root.join("src/main.rs");
        assert_eq!(resolve_in_folder(&root, absolute.to_str().unwrap()).unwrap(), absolute);
        assert_eq!(resolve_in_folder(&root, ".").unwrap(), root);
    }

    #[test]
    fn new_files_in_new_directories_are_allowed() {
        let (_dir, root) = root();
        assert_eq!(resolve_in_folder(&root, "new/dir/file.txt").unwrap(), root.join("new/dir/file.txt"));
    }

    #[test]
    fn escapes_are_refused() {
        let (_dir, root) = root();
        for bad in ["..", "../x", "src/../../x", "/etc/passwd", "/", ""] {
            assert!(resolve_in_folder(&root, bad).is_err(), "{bad}");
        }
        let sibling = format!("{}-sibling/x", root.display());
        assert!(resolve_in_folder(&root, &sibling).is_err(), "a prefix is not a parent");
    }

    #[test]
    fn symlinks_leading_out_are_refused_and_inside_ones_allowed() {
        let (_dir, root) = root();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("escape")).unwrap();
        std::os::unix::fs::symlink(root.join("src"), root.join("alias")).unwrap();
        assert!(resolve_in_folder(&root, "escape").is_err());
        assert!(resolve_in_folder(&root, "escape/new-file.txt").is_err());
        assert_eq!(resolve_in_folder(&root, "alias/main.rs").unwrap(), root.join("src/main.rs"));
        let err = resolve_in_folder(&root, "escape/x").unwrap_err();
        assert_eq!(err.kind, "path_outside_folder");
    }
}
