//! Why an agent cannot take a request now. Plain domain words: the HTTP layer
//! (`crate::http::error`) gives each its status and code.

/// A request the session's agent refused, and nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    /// The session cannot take this now (a turn runs, a call or question waits).
    #[error("{0}")]
    Busy(String),
    #[error("No session with id '{0}'.")]
    NoSession(String),
    /// The session was deleted while this request held it.
    #[error("No session with id '{0}': it was deleted.")]
    Deleted(String),
    /// Stop, with nothing to stop.
    #[error("No turn is running in this session.")]
    NotRunning,
    /// Nothing with that id waits for the user.
    #[error("{0}")]
    NotPending(String),
    /// The request does not fit what waits (a blank instruction, an option the agent does not offer…).
    #[error("{0}")]
    Invalid(String),
    /// The session's saved state could not be read; it takes no new turn.
    #[error("{0} It is kept as it was; this session takes no new turn. Start a new session to go on.")]
    StateUnreadable(String),
    /// The session's agent is no longer among the hub's agents.
    #[error("This session's agent '{0}' is no longer in the hub's agents (GET /api/agents): start a new session.")]
    AgentGone(String),
    /// An ACP agent's process has not started, or has not said its modes.
    #[error("The agent has not said its modes yet: send a prompt to start it, then pick a mode.")]
    NotStarted,
    #[error("The agent did not answer session/set_mode within 15 s.")]
    ModeTimeout,
}

impl AgentError {
    pub(crate) fn busy(message: &str) -> Self {
        Self::Busy(message.to_string())
    }

    pub(crate) fn call_not_pending(tool_id: &str) -> Self {
        Self::NotPending(format!("Tool call '{tool_id}' is not waiting for a decision."))
    }

    pub(crate) fn question_not_pending(request_id: &str) -> Self {
        Self::NotPending(format!("Question '{request_id}' is not waiting for an answer."))
    }
}

impl AgentError {
    /// Why the session's machine would not start a turn (or stop one), in the words the user reads.
    pub(crate) fn refused(session_id: &str, refusal: crate::session::Refusal) -> Self {
        use crate::session::Refusal;
        match refusal {
            Refusal::Deleted => Self::Deleted(session_id.to_string()),
            Refusal::Busy => Self::busy("A turn is already running in this session; wait for it to finish or stop it."),
            Refusal::WaitingDecision => Self::busy(
                "The agent is waiting for your decision on a tool call: approve or reject it (or answer yes, no or \
                 approve all) before sending a new prompt.",
            ),
            Refusal::WaitingAnswer => Self::busy(
                "The agent is waiting for your answer to its question (POST /api/sessions/{id}/input) before a new \
                 prompt.",
            ),
            Refusal::CallNotPending(tool_id) => Self::call_not_pending(&tool_id),
            Refusal::QuestionNotPending(request_id) => Self::question_not_pending(&request_id),
            Refusal::NotRunning => Self::NotRunning,
            Refusal::NotDue => Self::NotPending("Nothing in this session has waited past the folder's timeout.".into()),
        }
    }
}
