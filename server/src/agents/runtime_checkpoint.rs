//! A turn's checkpoint as the runtime drives it: due when a new turn starts,
//! recorded before the agent can act ([`SessionRuntime::checkpoint_before`],
//! which both agent kinds await), and closed when the turn ends, before the
//! session is free (see `crate::checkpoints`). Git runs off the async workers.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard};

use protocol::events::{AgentEvent, Severity};

use super::{HubPort, SessionRuntime, SessionState, CHECKPOINT_FAILED};

/// Where the turn under way stands with its checkpoint.
#[derive(Debug, Default)]
pub(super) enum TurnCheckpoint {
    #[default]
    None,
    /// A new turn started: the folder is recorded before its first change.
    /// The flag is the turn's Stop: set, the checkpoint is given up (its git
    /// command under way killed), whenever the Stop comes.
    Due(crate::checkpoints::TurnStart, Arc<AtomicBool>),
    /// Being recorded.
    Recording(Arc<AtomicBool>),
    /// Recorded before the turn, as this checkpoint.
    Open(u64),
}

impl SessionRuntime {
    /// A new turn started (call with its state locked): the folder is to be
    /// recorded before its first change, with the prompt and the built-in
    /// agent's conversation as they were.
    pub(super) fn checkpoint_due(&self, state: &SessionState) {
        let (prompt, seq): (Option<String>, _) = match self.log.last() {
            Some(AgentEvent::Message { role: protocol::events::Role::User, content, .. }) => {
                (Some(content), Some(self.log.last_seq()))
            }
            _ => (None, None),
        };
        // The built-in agent's conversation before this turn: without the prompt just added.
        let messages = state.agent.builtin.messages.len();
        let conversation = messages.checked_sub(1).filter(|_| prompt.is_some());
        let start = crate::checkpoints::TurnStart { prompt, seq, conversation };
        *self.turn_checkpoint() = TurnCheckpoint::Due(start, Arc::default());
    }

    fn turn_checkpoint(&self) -> MutexGuard<'_, TurnCheckpoint> {
        self.checkpoint.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Records the folder before the turn's first change, when the turn is a
    /// new one (see [`SessionRuntime::start_turn`]): the agent awaits this
    /// before it acts. Off the async workers; a failure is said, and the
    /// turn goes on unrecorded. False when the turn was stopped meanwhile
    /// (its agent is not to act at all).
    pub(crate) async fn checkpoint_before(&self, hub: &dyn HubPort) -> bool {
        // The turn's start is recorded under the session's lock: once it is free, it is.
        drop(self.state());
        let taken = std::mem::take(&mut *self.turn_checkpoint());
        let (start, stop) = match taken {
            TurnCheckpoint::Due(start, stop) => (start, stop),
            other => {
                *self.turn_checkpoint() = other;
                return true;
            }
        };
        let Some(checkpoints) = hub.checkpoints() else { return !stop.load(Ordering::Relaxed) };
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        *self.turn_checkpoint() = TurnCheckpoint::Recording(stop.clone());
        let (folder, id, given) = (self.root.clone(), self.id.clone(), stop.clone());
        let made = tokio::task::spawn_blocking(move || checkpoints.before_turn_until(&folder, &id, start, given)).await;
        // Recorded, its "after" is written when the turn ends, stopped or not.
        *self.turn_checkpoint() = match &made {
            Ok(Ok(n)) => TurnCheckpoint::Open(*n),
            _ => TurnCheckpoint::None,
        };
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        match made {
            Ok(Ok(_)) | Ok(Err(crate::checkpoints::CheckpointError::Stopped)) => {}
            Ok(Err(err)) => self.report_checkpoint_failed(&err.to_string()),
            Err(err) => self.report_checkpoint_failed(&err.to_string()),
        }
        true
    }

    /// The turn under way is stopped (Stop, shutdown; call under the session's
    /// lock, once its machine took the stop): its checkpoint, due or being
    /// recorded, is given up, so the turn need not wait for git.
    pub(crate) fn stop_checkpoint(&self) {
        if let TurnCheckpoint::Due(_, stop) | TurnCheckpoint::Recording(stop) = &*self.turn_checkpoint() {
            stop.store(true, Ordering::Relaxed);
        }
    }

    /// Records what the turn changed, once it is over.
    pub(super) async fn checkpoint_after(&self, hub: &dyn HubPort) {
        let taken = std::mem::take(&mut *self.turn_checkpoint());
        let TurnCheckpoint::Open(n) = taken else { return };
        let Some(checkpoints) = hub.checkpoints() else { return };
        let (folder, id) = (self.root.clone(), self.id.clone());
        let made = tokio::task::spawn_blocking(move || checkpoints.after_turn(&folder, &id, n)).await;
        match made {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => self.report_checkpoint_failed(&err.to_string()),
            Err(err) => self.report_checkpoint_failed(&err.to_string()),
        }
    }

    fn report_checkpoint_failed(&self, why: &str) {
        tracing::warn!(session = %self.id, "checkpoint not recorded: {why}");
        self.log.push(AgentEvent::Error {
            severity: Severity::Warning,
            message: format!("The folder's checkpoint was not recorded ({why}); this turn cannot be rewound."),
            code: Some(CHECKPOINT_FAILED.to_string()),
        });
    }
}
