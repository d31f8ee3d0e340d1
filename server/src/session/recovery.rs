//! What a restart makes of a session: a pure function of what is on disk.
//!
//! The hub may have been killed at any instant. What survived is a prefix of
//! its writes, in order: the log's events and the saved phase (written with
//! the agent's state). Nothing that was running runs again, and no card is
//! left that nothing can answer.

use protocol::events::ResultStatus;

use super::Phase;

/// How the event log ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// No event yet.
    Empty,
    /// The last event is a turn's `result`.
    Result(ResultStatus),
    /// Events after the last `result` (or none at all): something was under way.
    Unsettled,
}

/// What a restart does with a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recovery {
    /// Nothing was under way: the session is as its last turn left it.
    AsItWas(Phase),
    /// The built-in agent saved the calls of its turn: they say what was under
    /// way (cards that still wait, calls that were running are reported).
    Batch,
    /// A turn the restart cut: it is closed with an error and nothing of it
    /// runs again.
    Interrupted,
}

/// `saved`: the phase saved with the agent's state (idle in a database of a
/// version that did not save it). `batch`: the built-in agent saved a turn's calls.
pub fn recover(saved: &Phase, tail: Tail, batch: bool) -> Recovery {
    if batch {
        return Recovery::Batch;
    }
    // A wait with nothing saved to wait on: an ACP agent's request died with its process.
    if saved.under_way() {
        return Recovery::Interrupted;
    }
    // A turn's start is logged before its phase is saved, its end saved before
    // it is logged: either may be a step ahead, so a turn is over only when the
    // log says so too.
    match tail {
        Tail::Empty => Recovery::AsItWas(Phase::Idle),
        Tail::Result(ResultStatus::Success | ResultStatus::Cancelled) => Recovery::AsItWas(Phase::Idle),
        Tail::Result(ResultStatus::Error) => Recovery::AsItWas(Phase::Error),
        Tail::Result(ResultStatus::WaitingApproval | ResultStatus::WaitingInput) | Tail::Unsettled => {
            Recovery::Interrupted
        }
    }
}
