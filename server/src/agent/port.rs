//! What an agent needs of the hub, and no more: a narrow port the hub
//! implements, so that `agent/` never imports `hub` (the hub owns the agents,
//! not the other way round) and an agent's reach is written down in one place.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use protocol::api::SessionStatus;
use tokio_util::sync::CancellationToken;

use crate::policy::PolicySet;
use crate::registry::Session;

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
    /// The status the pages see, and how many calls wait.
    fn set_status(&self, session_id: &str, status: SessionStatus, pending_count: usize);
    /// The status saved before the turn's end is announced ([`HubPort::take_status`] then applies it).
    fn save_status_ahead(&self, session_id: &str, status: SessionStatus, pending_count: usize) -> Option<Session>;
    fn take_status(&self, ahead: &Session);
    /// Open pages refetch the folders and sessions.
    fn projects_changed(&self);
    /// Open pages get the session's config anew (its agent's modes changed).
    fn config_changed(&self, session_id: &str);
}

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

    fn set_status(&self, session_id: &str, status: SessionStatus, pending_count: usize) {
        (**self).set_status(session_id, status, pending_count)
    }

    fn save_status_ahead(&self, session_id: &str, status: SessionStatus, pending_count: usize) -> Option<Session> {
        (**self).save_status_ahead(session_id, status, pending_count)
    }

    fn take_status(&self, ahead: &Session) {
        (**self).take_status(ahead)
    }

    fn projects_changed(&self) {
        (**self).projects_changed()
    }

    fn config_changed(&self, session_id: &str) {
        (**self).config_changed(session_id)
    }
}
