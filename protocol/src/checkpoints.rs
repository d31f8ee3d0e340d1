//! Checkpoints and rewind (`/api/sessions/{id}/checkpoints`, `/rewind`): the
//! folder as it was before each turn, what each turn changed, and going back.

use serde::{Deserialize, Serialize};

/// `GET /api/sessions/{id}/checkpoints`: oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointsResponse {
    pub checkpoints: Vec<Checkpoint>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointKind {
    /// The folder before a turn of the session's, and what the turn changed.
    Turn,
    /// A rewind: the folder before it, and what it changed (so it can be undone).
    Rewind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    Added,
    Modified,
    Deleted,
}

impl FileChange {
    pub fn label(self) -> &'static str {
        match self {
            Self::Added => "added",
            Self::Modified => "modified",
            Self::Deleted => "deleted",
        }
    }
}

/// One file a turn (or a rewind) changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointFile {
    /// Relative to the folder.
    pub path: String,
    pub change: FileChange,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftOutWhy {
    /// Ignored by the folder's `.gitignore` (or its `.git/info/exclude`).
    Ignored,
    /// Over 10 MiB.
    TooLarge,
    /// A repository of its own inside the folder (its files are not recorded).
    Repository,
}

/// A path a checkpoint did not record (a directory ends with `/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOut {
    pub path: String,
    pub why: LeftOutWhy,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// The checkpoint's number in its session (1, 2, …).
    pub id: u64,
    /// The session's turn (counted from its first checkpoint); for a rewind,
    /// the turn it went back to before.
    pub turn: u64,
    /// When the "before" state was recorded (ms since the epoch).
    pub at: u64,
    /// The turn's prompt (none for a rewind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The `seq` of the prompt's `message` event in the session's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    pub kind: CheckpointKind,
    /// For a rewind: the checkpoint it went back to before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rewound_to: Option<u64>,
    /// What the turn changed (added, modified, deleted), whichever tool did it.
    pub files: Vec<CheckpointFile>,
    /// Whether the state after the turn was recorded (a hub killed during the
    /// turn records it when the session's next checkpoint is made).
    pub ended: bool,
    /// What the "before" state did not record, at most [`LEFT_OUT_LISTED`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOut>,
    /// How many more were left out than are listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub left_out_more: usize,
}

/// The most left-out paths a checkpoint lists.
pub const LEFT_OUT_LISTED: usize = 200;

fn is_zero(count: &usize) -> bool {
    *count == 0
}

/// `GET /api/sessions/{id}/checkpoints/{cp}/diff`: what the checkpoint's turn
/// changed, as a unified diff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointDiff {
    pub id: u64,
    pub files: Vec<CheckpointFile>,
    /// `git diff` of the folder before and after the turn (binary files are
    /// named, not shown).
    pub patch: String,
    /// The patch was cut at 4 MiB.
    #[serde(default)]
    pub truncated: bool,
    /// What the session's later checkpoints changed besides `files`: a rewind
    /// to this checkpoint puts those back too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub later: Vec<CheckpointFile>,
}

/// `POST /api/sessions/{id}/rewind`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindRequest {
    /// The checkpoint to go back to before.
    pub checkpoint: u64,
    /// Overwrite files changed since by someone else.
    #[serde(default)]
    pub force: bool,
    /// With `force`: the conflicts the user saw. Only these are overwritten;
    /// any other conflict refuses the rewind again (409). None: every one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RewindResponse {
    /// The rewind's own checkpoint (kind `rewind`): rewinding to it undoes it.
    pub checkpoint: Checkpoint,
    /// Whether the agent's conversation was rewound too (the built-in agent's
    /// only; an ACP agent keeps its own).
    pub conversation: bool,
}

/// The body of a refused rewind: a `rewind_conflict` names the files changed
/// since by someone else (`conflicts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindRefusal {
    pub error: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts: Vec<String>,
}
