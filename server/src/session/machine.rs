//! The lifecycle of one session's turns. Plain data, no IO: the runtime asks
//! it whether a turn may start, tells it how a turn ended, and applies what it
//! answers (the status to save and show); both agent kinds go through it.

use protocol::api::SessionStatus;
use protocol::events::ResultStatus;
use serde::{Deserialize, Serialize};

/// Where a session's turns stand. Saved with the agent's state, in the same
/// write as the status it gives the pages.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// No turn: a prompt may start one.
    #[default]
    Idle,
    /// A turn holds the session: the agent works, a call runs, or a turn's end
    /// is being saved.
    Running,
    /// The turn waits for the user's decision on these calls, first shown first.
    Waiting { pending: Vec<String> },
    /// The turn waits for the user's answer to the agent's question.
    Asking { request_id: String },
    /// The last turn ended in an error; a prompt may start another.
    Error,
}

/// What the pages see of a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub status: SessionStatus,
    /// Tool calls waiting for the user.
    pub pending_count: usize,
    /// While it waits on the user: since when (ms since the epoch). The
    /// folder's approval timeout counts from here.
    pub waiting_since: Option<u64>,
}

impl Phase {
    pub fn status(&self) -> Status {
        let (status, pending_count) = match self {
            Self::Idle => (SessionStatus::Idle, 0),
            Self::Running => (SessionStatus::Running, 0),
            Self::Waiting { pending } => (SessionStatus::WaitingApproval, pending.len()),
            Self::Asking { .. } => (SessionStatus::WaitingInput, 0),
            Self::Error => (SessionStatus::Error, 0),
        };
        Status { status, pending_count, waiting_since: None }
    }

    /// Whether a turn is under way in it: running, or paused on the user.
    pub fn under_way(&self) -> bool {
        matches!(self, Self::Running | Self::Waiting { .. } | Self::Asking { .. })
    }
}

/// How a turn ends or pauses: its `result` event, and the phase it leaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEnd {
    pub result: ResultStatus,
    pub phase: Phase,
}

impl TurnEnd {
    pub fn error() -> Self {
        Self { result: ResultStatus::Error, phase: Phase::Error }
    }

    pub fn waiting(pending: Vec<String>) -> Self {
        Self { result: ResultStatus::WaitingApproval, phase: Phase::Waiting { pending } }
    }

    /// Paused on the agent's question `request_id` to the user.
    pub fn asking(request_id: String) -> Self {
        Self { result: ResultStatus::WaitingInput, phase: Phase::Asking { request_id } }
    }

    /// A turn that ended by itself: success and cancelled leave the session idle.
    pub fn ended(result: ResultStatus) -> Self {
        match result {
            ResultStatus::Success | ResultStatus::Cancelled => Self { result, phase: Phase::Idle },
            ResultStatus::Error => Self::error(),
            // A pause names what waits (`waiting`, `asking`); one that names
            // nothing would leave a card nothing can answer.
            ResultStatus::WaitingApproval | ResultStatus::WaitingInput => {
                debug_assert!(false, "a turn ended with {result:?}: use TurnEnd::waiting or TurnEnd::asking");
                Self::error()
            }
        }
    }

    /// The calls the `result` event names as waiting.
    pub fn pending(&self) -> Option<Vec<String>> {
        match &self.phase {
            Phase::Waiting { pending } => Some(pending.clone()),
            _ => None,
        }
    }
}

/// What the user asks to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Starting<'a> {
    /// A new prompt.
    Prompt,
    /// A prompt that is a decision word ("yes", "no", "approve all"): while a
    /// call waits, it decides the first one.
    DecidingPrompt,
    /// A decision on the waiting call with this id.
    Decide(&'a str),
    /// The answer to the question with this id.
    Answer(&'a str),
    /// The hub answers what waits "no decision": `after_ms` (the folder's
    /// timeout) have passed by `now_ms` since the pause began, or since
    /// `from_ms` (when the timeout was set) if that came later.
    TimeOut { now_ms: u64, after_ms: u64, from_ms: u64 },
}

/// Why a turn cannot start, or Stop has nothing to do; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Deleted,
    /// A turn already holds the session.
    Busy,
    /// A prompt while a call waits for the user's decision.
    WaitingDecision,
    /// A prompt while the agent's question waits for an answer.
    WaitingAnswer,
    CallNotPending(String),
    QuestionNotPending(String),
    /// Stop, with no turn under way.
    NotRunning,
    /// A time-out, but nothing waits, or not for that long.
    NotDue,
}

/// What Stop does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Ask the running turn to stop: it ends itself, `cancelled`.
    Running,
    /// No task runs: the turn is taken up again to be closed here, its waiting
    /// calls answered as stopped.
    Waiting,
}

/// Why a session cannot be deleted without `force`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occupied {
    Running,
    WaitingApproval,
    WaitingInput,
}

impl Occupied {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Running => "a turn is running in it",
            Self::WaitingApproval => "a tool call is waiting for your decision",
            Self::WaitingInput => "the agent is waiting for your answer to its question",
        }
    }
}

/// One session's turns. The phase the pages see changes only when a turn
/// starts or its end is shown; a turn's end is saved before it is shown
/// (`ending`), and the session stays held until then.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Machine {
    phase: Phase,
    /// The phase a turn's end has saved and not yet shown.
    ending: Option<Phase>,
    /// Counts the turns started: a turn's task acts only on its own.
    turn: u64,
    /// The session was deleted: nothing starts in it, nothing of it is saved.
    deleted: bool,
    /// When the pause saved or shown began (ms since the epoch): the user's
    /// time to decide counts from here, across restarts.
    since: Option<u64>,
}

impl Machine {
    /// A machine in the phase a restart settled on.
    pub fn restored(phase: Phase) -> Self {
        Self { phase, ..Self::default() }
    }

    /// A machine in the phase a restart settled on, paused since `since`
    /// (kept only if the phase is a pause).
    pub fn restored_since(phase: Phase, since: Option<u64>) -> Self {
        let since = since.filter(|_| matches!(phase, Phase::Waiting { .. } | Phase::Asking { .. }));
        Self { phase, since, ..Self::default() }
    }

    /// Since when the session waits on the user, while it does (as shown).
    pub fn waiting_since(&self) -> Option<u64> {
        self.since.filter(|_| matches!(self.phase, Phase::Waiting { .. } | Phase::Asking { .. }))
    }

    /// The pause's start as saved (a pause being saved counts from its save).
    pub fn saved_since(&self) -> Option<u64> {
        self.since.filter(|_| matches!(self.saved_phase(), Phase::Waiting { .. } | Phase::Asking { .. }))
    }

    /// The status to save: the saved phase's, with its pause's start.
    pub fn saved_status(&self) -> Status {
        Status { waiting_since: self.saved_since(), ..self.saved_phase().status() }
    }

    /// The phase the pages see.
    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The phase to save: a turn's end ahead of its showing.
    pub fn saved_phase(&self) -> &Phase {
        self.ending.as_ref().unwrap_or(&self.phase)
    }

    pub fn status(&self) -> Status {
        Status { waiting_since: self.waiting_since(), ..self.phase.status() }
    }

    /// A turn holds the session (its end may be saved and not yet shown).
    pub fn is_running(&self) -> bool {
        self.phase == Phase::Running
    }

    pub fn is_deleted(&self) -> bool {
        self.deleted
    }

    /// Whether `turn` is the turn holding the session now.
    pub fn holds(&self, turn: u64) -> bool {
        self.turn == turn && self.is_running()
    }

    /// Whether the session takes any request to start a turn now: not
    /// deleted, not held by a turn.
    pub fn admit(&self) -> Result<(), Refusal> {
        match (self.deleted, &self.phase) {
            (true, _) => Err(Refusal::Deleted),
            (false, Phase::Running) => Err(Refusal::Busy),
            (false, _) => Ok(()),
        }
    }

    /// Whether `starting` may start a turn now.
    pub fn check(&self, starting: Starting<'_>) -> Result<(), Refusal> {
        self.admit()?;
        match (&self.phase, starting) {
            (Phase::Running, _) => Err(Refusal::Busy),
            (Phase::Waiting { pending }, Starting::Decide(id)) if pending.iter().any(|p| p == id) => Ok(()),
            (Phase::Waiting { pending }, Starting::DecidingPrompt) if !pending.is_empty() => Ok(()),
            (Phase::Asking { request_id }, Starting::Answer(id)) if request_id == id => Ok(()),
            (Phase::Waiting { .. } | Phase::Asking { .. }, Starting::TimeOut { now_ms, after_ms, from_ms })
                if self.since.is_some_and(|since| since.max(from_ms).saturating_add(after_ms) <= now_ms) =>
            {
                Ok(())
            }
            (_, Starting::TimeOut { .. }) => Err(Refusal::NotDue),
            (_, Starting::Decide(id)) => Err(Refusal::CallNotPending(id.to_string())),
            (_, Starting::Answer(id)) => Err(Refusal::QuestionNotPending(id.to_string())),
            (Phase::Waiting { .. }, Starting::Prompt | Starting::DecidingPrompt) => Err(Refusal::WaitingDecision),
            (Phase::Asking { .. }, Starting::Prompt | Starting::DecidingPrompt) => Err(Refusal::WaitingAnswer),
            (Phase::Idle | Phase::Error, Starting::Prompt | Starting::DecidingPrompt) => Ok(()),
        }
    }

    /// Starts a turn ([`Machine::check`] said it may): the session is held.
    /// Returns the turn's number and the status to save and show.
    pub fn start(&mut self) -> (u64, Status) {
        debug_assert!(!self.deleted && !self.is_running(), "a turn started over {:?}", self.phase);
        self.turn += 1;
        self.phase = Phase::Running;
        self.ending = None;
        self.since = None;
        (self.turn, self.status())
    }

    /// What Stop does now.
    pub fn stop(&self) -> Result<Stop, Refusal> {
        match self.phase {
            Phase::Running => Ok(Stop::Running),
            Phase::Waiting { .. } | Phase::Asking { .. } => Ok(Stop::Waiting),
            Phase::Idle | Phase::Error => Err(Refusal::NotRunning),
        }
    }

    /// A turn paused on the user is taken up again to be closed (Stop, or its
    /// agent's process ended); a running one stays so. Returns whether a turn
    /// was under way, and the status to show when it changed.
    pub fn reopen(&mut self) -> (bool, Option<Status>) {
        match self.phase {
            Phase::Running => {
                // A pause being saved is not shown: what it waited on is being closed.
                if self.ending.as_ref().is_some_and(Phase::under_way) {
                    self.ending = None;
                }
                (true, None)
            }
            Phase::Waiting { .. } | Phase::Asking { .. } => {
                self.phase = Phase::Running;
                self.since = None;
                (true, Some(self.status()))
            }
            Phase::Idle | Phase::Error => (false, None),
        }
    }

    /// The turn ends or pauses: its end is saved first, and the session is
    /// held until it is shown. (An agent may pause outside a prompt of the
    /// user's, which holds it too: an ACP agent asks on its own.) `at_ms`:
    /// when, the start of a pause. Returns the status to save.
    pub fn end(&mut self, end: &TurnEnd, at_ms: u64) -> Status {
        if self.deleted {
            return end.phase.status();
        }
        self.phase = Phase::Running;
        self.ending = Some(end.phase.clone());
        self.since = end.phase.under_way().then_some(at_ms);
        self.saved_status()
    }

    /// The saved end is shown: the session is free (or waits). Returns the
    /// status to show; `None` when no end was saved.
    pub fn show_end(&mut self) -> Option<Status> {
        self.phase = self.ending.take()?;
        Some(self.status())
    }

    /// Whether deleting would cut something short, and what.
    pub fn occupied(&self) -> Option<Occupied> {
        match self.phase {
            Phase::Running => Some(Occupied::Running),
            Phase::Waiting { .. } => Some(Occupied::WaitingApproval),
            Phase::Asking { .. } => Some(Occupied::WaitingInput),
            Phase::Idle | Phase::Error => None,
        }
    }

    /// The session is deleted (`force`: even with a turn under way). Returns
    /// whether a turn was running; refused, nothing changes.
    pub fn delete(&mut self, force: bool) -> Result<bool, Occupied> {
        if let (false, Some(why)) = (force, self.occupied()) {
            return Err(why);
        }
        self.deleted = true;
        let running = self.is_running();
        self.phase = Phase::Idle;
        self.ending = None;
        self.since = None;
        Ok(running)
    }
}
