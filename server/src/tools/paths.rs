//! The lexical half of keeping tool paths inside the project folder: a request
//! becomes a folder-relative path, or is refused (`..` above the folder, other
//! absolute paths, hard-to-see characters). The file system half, where
//! symlinks are resolved and races are closed, is `beneath.rs`.

use std::path::{Component, Path, PathBuf};

use super::ToolFailure;

/// `requested` (relative to `root`, or absolute inside it) as a path relative
/// to `root`, with `.` removed and `..` applied; empty means the root itself.
/// `root` must be canonical. Nothing is looked up here.
pub fn relative_in_folder(root: &Path, requested: &str) -> Result<PathBuf, ToolFailure> {
    if requested.trim().is_empty() {
        return Err(ToolFailure::new("invalid_path", "The path is empty."));
    }
    if let Some(hidden) = requested.chars().find(|&c| hard_to_see(c)) {
        return Err(ToolFailure::new(
            "path_outside_folder",
            format!(
                "'{}' contains U+{:04X}, a character that hides or imitates part of a path; such paths are refused.",
                requested.escape_debug(),
                u32::from(hidden)
            ),
        ));
    }
    let requested_path = Path::new(requested);
    let relative = if requested_path.is_absolute() {
        normalize(requested_path).and_then(|path| path.strip_prefix(root).ok().map(Path::to_path_buf))
    } else {
        normalize(requested_path)
    };
    relative.ok_or_else(|| outside(requested))
}

/// Removes `.` and applies `..` without touching the file system; `None` when
/// `..` climbs above the start.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Characters a reader cannot see or would read as something else: controls,
/// Unicode format characters (bidi overrides, zero-width) and look-alikes of
/// `/` and `.`. A path holding one shows one thing on the card and does another.
fn hard_to_see(c: char) -> bool {
    c.is_control() || is_format(c) || LOOKALIKES.contains(&c)
}

/// Look-alikes of `/` then of `.` (and of `..`, `...`).
const LOOKALIKES: &[char] = &[
    '\u{2044}', '\u{2215}', '\u{FF0F}', '\u{29F8}', '\u{2571}', '\u{27CB}', '\u{1735}', // slashes
    '\u{2024}', '\u{2025}', '\u{2026}', '\u{FE52}', '\u{FF0E}', '\u{FF61}', '\u{A4F8}', // dots
];

/// Unicode general category Cf (format), plus the line and paragraph
/// separators; the standard library has no category lookup.
fn is_format(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x2028..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

pub fn outside(requested: &str) -> ToolFailure {
    ToolFailure::new(
        "path_outside_folder",
        format!("'{}' is outside the project folder; tools only work inside it.", requested.escape_debug()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/home/me/project";

    fn rel(requested: &str) -> Result<String, String> {
        relative_in_folder(Path::new(ROOT), requested).map(|p| p.display().to_string()).map_err(|e| e.kind)
    }

    #[test]
    fn paths_inside_become_relative() {
        let rows = [
            ("src/main.rs", "src/main.rs"),
            ("./src/../src/main.rs", "src/main.rs"),
            ("src/./main.rs/", "src/main.rs"),
            (".", ""),
            ("/home/me/project/src/main.rs", "src/main.rs"),
            ("/home/me/project", ""),
            ("/home/me/project/../project/x", "x"),
            ("naïve café/日本.txt", "naïve café/日本.txt"),
        ];
        for (requested, expected) in rows {
            assert_eq!(rel(requested), Ok(expected.to_string()), "{requested}");
        }
    }

    #[test]
    fn escapes_and_hidden_characters_are_refused() {
        let outside = Err("path_outside_folder".to_string());
        let rows = [
            ("..", &outside),
            ("../x", &outside),
            ("src/../../x", &outside),
            ("/etc/passwd", &outside),
            ("/", &outside),
            ("/home/me/project-sibling/x", &outside),
            ("/home/me/project/../other/x", &outside),
            ("/..", &outside),
            ("src/\u{0}x", &outside),
            ("src/\nx", &outside),
            ("src/\u{1b}[2Jx", &outside),
            ("src/\u{202E}txt.exe", &outside),
            ("src/\u{2066}x", &outside),
            ("src/\u{200B}main.rs", &outside),
            ("src/\u{FEFF}main.rs", &outside),
            ("src/\u{00AD}main.rs", &outside),
            ("\u{2024}\u{2024}/x", &outside),
            ("\u{FF0E}\u{FF0E}\u{FF0F}x", &outside),
            ("src\u{2215}x", &outside),
            ("src\u{2044}x", &outside),
            ("\u{2025}/x", &outside),
            ("", &Err("invalid_path".to_string())),
            ("  ", &Err("invalid_path".to_string())),
        ];
        for (requested, expected) in rows {
            assert_eq!(&rel(requested), expected, "{}", requested.escape_debug());
        }
    }

    #[test]
    fn the_refusal_names_the_hidden_character() {
        let err = relative_in_folder(Path::new(ROOT), "a\u{202E}b").unwrap_err();
        assert!(err.message.contains("U+202E") && err.message.contains("a\\u{202e}b"), "{}", err.message);
    }
}
