//! `GET /api/sessions/{id}/changes`: what a session's agent changed on disk,
//! and, in a git repository, the working tree against `HEAD`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChangesResponse {
    /// Every file the session's calls wrote, newest change first.
    pub files: Vec<SessionFileChange>,
    /// `null` when the folder is not in a git repository, git is not
    /// installed, or git failed (then `note` says why).
    pub git: Option<GitChanges>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    Created,
    Modified,
    Deleted,
}

impl ChangeKind {
    pub fn label(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Modified => "modified",
            Self::Deleted => "deleted",
        }
    }
}

/// Why a file is listed without its texts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Omitted {
    /// Not UTF-8 text, or it holds NUL bytes.
    Binary,
    /// Over 1 MiB.
    TooLarge,
    /// The answer already carries as much text as it may.
    Budget,
    /// The file could not be read inside the folder (a symlink out of it, gone, unreadable).
    Unreadable,
}

impl Omitted {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Binary => "binary file: no diff shown",
            Self::TooLarge => "over 1 MiB: no diff shown",
            Self::Budget => "too many changes to show every diff",
            Self::Unreadable => "could not be read inside the folder",
        }
    }
}

/// One file as a session's calls left it: several writes collapse into one
/// entry, from the text before the first to the text after the last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFileChange {
    /// Relative to the folder (absolute only when the agent wrote outside it).
    pub path: String,
    pub change: ChangeKind,
    pub old_text: String,
    pub new_text: String,
    /// The last call that wrote the file.
    pub tool_id: String,
    /// The `seq` of that call's `tool_result` (events carry no clock time).
    pub seq: u64,
    /// How many calls wrote it.
    pub writes: usize,
    /// Lines added and removed from `oldText` to `newText`.
    pub added: usize,
    pub removed: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitChanges {
    /// The checked-out branch; `None` on a detached `HEAD`.
    pub branch: Option<String>,
    pub files: Vec<GitFileChange>,
    /// More files changed than are listed.
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GitStatus {
    Modified,
    Added,
    Deleted,
    Renamed,
    Copied,
    TypeChanged,
    Untracked,
    Conflicted,
}

impl GitStatus {
    pub fn label(self) -> &'static str {
        match self {
            Self::Modified => "modified",
            Self::Added => "added",
            Self::Deleted => "deleted",
            Self::Renamed => "renamed",
            Self::Copied => "copied",
            Self::TypeChanged => "type changed",
            Self::Untracked => "untracked",
            Self::Conflicted => "conflicted",
        }
    }
}

/// A working tree file that differs from `HEAD`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GitFileChange {
    /// Relative to the folder.
    pub path: String,
    pub status: GitStatus,
    /// `git status --porcelain` XY code, e.g. ` M`, `A `, `??`.
    pub code: String,
    /// A rename's or copy's source, relative to the folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    /// The file at `HEAD` (empty when it is not there).
    pub old_text: String,
    /// The file on disk (empty when it is gone).
    pub new_text: String,
    pub added: usize,
    pub removed: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
}
