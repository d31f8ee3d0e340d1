//! What an agent needs of the hub, and no more: a narrow port the hub
//! implements, so that `agents/` never imports `hub` (the hub owns the agents,
//! not the other way round) and an agent's reach is written down in one place.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::policy::PolicySet;
use crate::session::Status;

pub trait HubPort: Send + Sync + 'static {
    /// Whether the session's YOLO is on now.
    fn yolo(&self, session_id: &str) -> bool;
    /// The rules that apply in the folder now (under its trust).
    fn policy_set(&self, folder: &Path) -> PolicySet;
    /// The agent the session works with.
    /// The session's agent, whichever kind it is.
    fn agent_of(&self, session_id: &str) -> Result<Arc<dyn super::Agent>, super::AgentError>;
    /// How long a command may run.
    fn shell_timeout(&self) -> Duration;
    /// Cancelled when the hub shuts down.
    fn shutdown_token(&self) -> CancellationToken;
    /// The pages see the session's new status (its machine's, already saved
    /// at `at_ms`, which a change of status takes as its time); open pages refetch.
    fn show_status(&self, session_id: &str, status: Status, at_ms: u64);
    /// Open pages refetch the folders and sessions.
    fn projects_changed(&self);
    /// Open pages get the session's config anew (its agent's modes changed).
    fn config_changed(&self, session_id: &str);
    /// Where the folders' checkpoints are kept (none: turns are not recorded).
    fn checkpoints(&self) -> Option<Arc<crate::checkpoints::Checkpoints>> {
        None
    }
    /// What the session's next process starts under (asked when it starts).
    fn sandbox_terms(&self, session_id: &str) -> SandboxTerms;
}

pub use crate::sandbox::Terms as SandboxTerms;

/// A shared port is a port: `&Arc<dyn HubPort>` serves where `&dyn HubPort` is asked.
impl<T: HubPort + ?Sized> HubPort for Arc<T> {
    fn yolo(&self, session_id: &str) -> bool {
        (**self).yolo(session_id)
    }

    fn policy_set(&self, folder: &Path) -> PolicySet {
        (**self).policy_set(folder)
    }

    fn agent_of(&self, session_id: &str) -> Result<Arc<dyn super::Agent>, super::AgentError> {
        (**self).agent_of(session_id)
    }

    fn shell_timeout(&self) -> Duration {
        (**self).shell_timeout()
    }

    fn shutdown_token(&self) -> CancellationToken {
        (**self).shutdown_token()
    }

    fn show_status(&self, session_id: &str, status: Status, at_ms: u64) {
        (**self).show_status(session_id, status, at_ms)
    }

    fn projects_changed(&self) {
        (**self).projects_changed()
    }

    fn config_changed(&self, session_id: &str) {
        (**self).config_changed(session_id)
    }

    fn checkpoints(&self) -> Option<Arc<crate::checkpoints::Checkpoints>> {
        (**self).checkpoints()
    }

    fn sandbox_terms(&self, session_id: &str) -> SandboxTerms {
        (**self).sandbox_terms(session_id)
    }
}
