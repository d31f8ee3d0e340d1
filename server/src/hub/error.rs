//! Why the hub refused a request about a folder, a session, a rule or a
//! folder's trust; nothing changed. Domain words only: `crate::http::error` gives
//! each its HTTP status and code.

use crate::agents::catalog::ChoiceError;
use crate::agents::AgentError;
use crate::folder::FolderError;
use crate::policy::SavedRuleError;
use crate::registry::{RegistryError, TitleError};

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error(transparent)]
    Folder(#[from] FolderError),
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error(transparent)]
    AgentChoice(#[from] ChoiceError),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Title(#[from] TitleError),
    /// A rule "Always in this folder" would save is refused (too broad, malformed).
    #[error(transparent)]
    SavedRule(#[from] SavedRuleError),
    /// The request does not fit (a prefix that does not begin the command, another session's agent…).
    #[error("{0}")]
    Invalid(String),
    /// No such session, rule or grant.
    #[error("{0}")]
    NotFound(String),
    /// Deleting would cut short what the session does ("a turn is running"…).
    #[error("The session was not deleted: {0}.")]
    Occupied(String),
    #[error("YOLO mode is locked off for this folder by security.disableYoloMode in .gemini/settings.json.")]
    YoloLocked,
    #[error("Folder trust is off (--no-folder-trust): every folder's own files apply.")]
    FolderTrustOff,
    /// YOLO is refused while commands would run without the sandbox.
    #[error("YOLO stays off: commands and agents cannot be sandboxed here ({0}). Install bubblewrap, or start the hub with --no-sandbox to run without it.")]
    SandboxUnavailable(String),
    /// The hub's database did not take the change (or the hub runs without one).
    #[error("{0}")]
    StoreFailed(String),
    /// A checkpoint that is not there, a rewind that would overwrite others' changes.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoints::CheckpointError),
    /// An isolated session's worktree: not a git folder, a conflict on Apply…
    #[error(transparent)]
    Worktree(#[from] crate::worktrees::WorktreeError),
    #[error("{0}")]
    Internal(String),
}

pub type HubResult<T> = Result<T, HubError>;
