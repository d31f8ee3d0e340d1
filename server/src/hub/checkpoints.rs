//! A session's checkpoints as the API sees them: listing, a turn's diff, and
//! rewinding the folder (refused while a turn is under way, recorded in the
//! audit trail). The recording itself is `crate::checkpoints`.

use protocol::checkpoints::{Checkpoint, CheckpointDiff, RewindResponse};

use super::user_actions::UserAction;
use super::{Hub, HubError, HubResult};
use crate::agents::AgentError;
use crate::checkpoints::CheckpointError;

impl Hub {
    fn checkpoints_or_off(&self) -> HubResult<&std::sync::Arc<crate::checkpoints::Checkpoints>> {
        self.checkpoints
            .as_ref()
            .ok_or_else(|| HubError::NotFound("This hub keeps no checkpoints (it runs without a data dir).".into()))
    }

    fn root_of_session(&self, session_id: &str) -> HubResult<std::path::PathBuf> {
        self.registry()
            .get(session_id)
            .map(crate::registry::Session::root)
            .ok_or_else(|| AgentError::NoSession(session_id.to_string()).into())
    }

    /// The session's checkpoints, oldest first (blocking: git runs).
    pub fn checkpoints_of(&self, session_id: &str) -> HubResult<Vec<Checkpoint>> {
        let folder = self.root_of_session(session_id)?;
        let Some(checkpoints) = &self.checkpoints else { return Ok(Vec::new()) };
        Ok(checkpoints.list(&folder, session_id)?)
    }

    /// What checkpoint `n`'s turn changed (blocking).
    pub fn checkpoint_diff(&self, session_id: &str, n: u64) -> HubResult<CheckpointDiff> {
        let folder = self.root_of_session(session_id)?;
        Ok(self.checkpoints_or_off()?.diff(&folder, session_id, n)?)
    }

    /// Puts the session's folder back as it was before checkpoint `n`'s turn
    /// (blocking). Not while a turn is under way in the session.
    /// With `force`, `seen` (when given) names the conflicts the user saw:
    /// only those are overwritten.
    pub fn rewind(&self, session_id: &str, n: u64, force: bool, seen: Option<&[String]>) -> HubResult<RewindResponse> {
        let checkpoints = self.checkpoints_or_off()?.clone();
        let runtime = self
            .idle_session(session_id, "A turn is under way in this session: rewind once it has ended (or stop it).")?;
        // Nor while a turn of another session of the same folder (or one
        // inside it, or around it) runs. A turn that starts meanwhile records
        // the folder only once the rewind is done (the folder's lock), and
        // runs nothing before.
        self.no_other_turn_around(
            session_id,
            &runtime.root,
            "A turn of another session in this folder is under way: rewind once it has ended (or stop it).",
        )?;
        let forced = if force { ", forced" } else { "" };
        let action = UserAction {
            session_id,
            folder: &runtime.folder,
            tool_name: "rewind",
            summary: format!("to before checkpoint {n}{forced}"),
        };
        let result = self.audited_action(
            action,
            || checkpoints.rewind_over(&runtime.root, session_id, n, force.then_some(seen)),
            // Refused before anything changed.
            |err| matches!(err, CheckpointError::Conflict(_) | CheckpointError::NotFound(_)),
        );
        let done = result?;
        if !done.kept.is_empty() {
            tracing::info!(
                session = session_id,
                kept = ?done.kept,
                "rewind: paths left out of the checkpoint were kept as they are"
            );
        }
        let conversation = done.conversation.is_some_and(|length| forget_turns(&runtime, length));
        self.projects_changed();
        Ok(RewindResponse { checkpoint: done.checkpoint, conversation })
    }
}

/// The built-in agent forgets the rewound turns: its conversation goes back
/// to `length` messages, as it was before the turn rewound to. Not when a turn
/// began meanwhile, nor for an ACP agent (its conversation is its own: the
/// hub keeps none). Returns whether it was rewound.
fn forget_turns(runtime: &crate::agents::SessionRuntime, length: usize) -> bool {
    let mut state = runtime.state();
    let busy = state.machine.phase().under_way() || state.machine.is_deleted();
    if busy || state.agent.builtin.messages.len() <= length {
        return false;
    }
    state.agent.builtin.messages.truncate(length);
    runtime.save(&state);
    true
}
