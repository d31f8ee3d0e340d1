//! What a rewind and a worktree's Apply, Commit and Discard share: the user
//! acts on a session's files, so no turn may be writing there meanwhile, and
//! the act is in the audit trail (decided by the user before it acts, its
//! outcome after), as a tool call would be.

use std::path::Path;
use std::sync::Arc;

use protocol::audit::{AuditDecision, Decider, Outcome};

use super::{Hub, HubError, HubResult};
use crate::agents::{AgentError, SessionRuntime};
use crate::store::{DecisionRecord, OutcomeRecord};

/// One act of the user's on a session's files, as the audit trail names it.
pub(super) struct UserAction<'a> {
    pub session_id: &'a str,
    /// The folder the session belongs to.
    pub folder: &'a Path,
    /// `rewind`, `worktree_apply`…
    pub tool_name: &'a str,
    pub summary: String,
}

impl Hub {
    /// The session's runtime, refused (409 `session_busy`, with `busy`) while
    /// a turn of it is under way, or gone when it was deleted.
    pub(super) fn idle_session(&self, session_id: &str, busy: &str) -> HubResult<Arc<SessionRuntime>> {
        let runtime = self
            .try_runtime(session_id)
            .map_err(|err| HubError::StoreFailed(err.to_string()))?
            .ok_or_else(|| AgentError::NoSession(session_id.to_string()))?;
        {
            let state = runtime.state();
            if state.machine.is_deleted() {
                return Err(AgentError::Deleted(session_id.to_string()).into());
            }
            if state.machine.phase().under_way() {
                return Err(AgentError::busy(busy).into());
            }
        }
        Ok(runtime)
    }

    /// Refused (409 `session_busy`, with `busy`) while a turn of another
    /// session working in `root`, inside it or around it is under way: its
    /// tools would write meanwhile. Runtimes not resident are idle.
    pub(super) fn no_other_turn_around(&self, session_id: &str, root: &Path, busy: &str) -> HubResult<()> {
        let others: Vec<_> = self.runtimes().values().filter(|other| other.id != session_id).cloned().collect();
        for other in others {
            let nested = other.root.starts_with(root) || root.starts_with(&other.root);
            if nested && other.state().machine.phase().under_way() {
                return Err(AgentError::busy(busy).into());
            }
        }
        Ok(())
    }

    /// Runs `act` with its decision recorded before and its outcome after:
    /// `ran`, `skipped` when `refused` says it changed nothing, else `failed`.
    pub(super) fn audited_action<T, E>(
        &self,
        action: UserAction<'_>,
        act: impl FnOnce() -> Result<T, E>,
        refused: impl FnOnce(&E) -> bool,
    ) -> Result<T, E> {
        let tool_id = format!("{}-{}-{}", action.tool_name, action.session_id, crate::clock::now_ms());
        if let Some(store) = &self.store {
            store.record_decision(DecisionRecord {
                at_ms: crate::clock::now_ms(),
                folder: action.folder.display().to_string(),
                session_id: action.session_id.to_string(),
                tool_id: tool_id.clone(),
                tool_name: action.tool_name.to_string(),
                summary: action.summary,
                decision: AuditDecision::Approved,
                decided_by: Decider::User,
                rule: None,
                device: crate::agents::trail::deciding_device(),
            });
        }
        let result = act();
        if let Some(store) = &self.store {
            let outcome = match &result {
                Ok(_) => Outcome::Ran,
                Err(err) if refused(err) => Outcome::Skipped,
                Err(_) => Outcome::Failed,
            };
            store.record_outcome(OutcomeRecord {
                at_ms: crate::clock::now_ms(),
                session_id: action.session_id.to_string(),
                tool_id,
                outcome,
            });
        }
        result
    }
}
