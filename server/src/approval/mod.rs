//! The approval state machine of one model turn's tool calls. Plain data, no IO:
//! the runtime asks [`ApprovalBatch::step`] what to do next and reports back.
//!
//! Calls are handled in the model's order. The first call still waiting for the
//! user pauses the turn (`Wait`), so card "1/3" is always the earliest one; calls
//! decided out of order run when their turn comes. A question to the user
//! (`ask_user`) waits in the same order: it is asked when its turn comes.
//!
//! Only the user's decision on exactly one call is kept: a call nobody decided
//! is `Open`, and when its turn comes the batch asks the runtime to judge it
//! (`Step::Judge`) with the gate as things stand at that instant. So a YOLO
//! switched off, a rule deleted or a grant given meanwhile counts, and "for this
//! session" or "Always" never clears a sibling the gate would stop.
//!
//! A call handed out to run is `Running` until the runtime reports it; the
//! runtime persists the batch in that state before it runs the call, so after a
//! crash [`ApprovalBatch::interrupt`] finds it and it is reported, never run again.

use serde::{Deserialize, Serialize};

/// What the model sees as the result of a call the user redirected.
pub const FEEDBACK_PREFIX: &str = "[USER FEEDBACK - Tool was not executed]: ";
/// What the model sees as the result of a rejected call.
pub const REJECTED_RESULT: &str = "The user rejected this tool call; it was not executed.";
/// What the model and the user see for a call that was running when the hub
/// stopped: it may have done part of its work, and it is not run again.
pub const INTERRUPTED_RESULT: &str = "The hub stopped while this call was running. It was not run again; it may \
     have done part of its work. Check its effects before repeating it.";
/// A call announced in a turn the hub's stop cut before its state was saved.
pub const CUT_SHORT_RESULT: &str = "The hub stopped before this call had a result; it will not run again.";
/// A call cleared to run that had not started when the hub stopped.
pub const NOT_STARTED_RESULT: &str = "The hub stopped before this call ran; it was not executed.";
/// A call that was running when the user stopped the turn: it was ended.
pub const STOPPED_RUNNING_RESULT: &str = "The user stopped the turn while this call was running; it was ended and \
     may have done part of its work. Check its effects before repeating it.";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    Approve,
    Reject,
    /// Approve, and let every later call of the same tool in this session run without a card.
    ApproveSession,
    /// Approve, and let the same tool's later calls in this turn run without a
    /// card (through the gate); the grant ends with the turn.
    ApproveTurn,
    /// Approve; a rule saved in the hub allows it from now on in this folder
    /// (the other waiting calls are judged again by the runtime, with the rule).
    ApproveAlways,
    /// Approve this one command with the network, though the folder's is off
    /// (its sandbox shares the host's network for this call only).
    ApproveNetwork,
    /// Approve this one command to run outside the sandbox: the user's answer
    /// to the sandbox refusing it (the hub offers it only then).
    ApproveUnsandboxed,
    /// Skip the call and tell the model why; or, with `modified_content` on an
    /// edit tool, write the user's content instead of the proposal.
    Edit {
        instruction: Option<String>,
        modified_content: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// Unknown id, or already decided.
    #[error("Tool call '{0}' is not waiting for a decision.")]
    NotPending(String),
    #[error("An edit needs a non-empty editInstruction (or modifiedContent).")]
    BlankInstruction,
    #[error("modifiedContent applies to file edits only, not to {0}.")]
    ContentNotEditable(String),
    #[error("approve_network applies to commands (run_shell_command) only, not to {0}.")]
    NetworkForCommandsOnly(String),
    #[error("approve_unsandboxed applies to commands (run_shell_command) only, not to {0}.")]
    UnsandboxedForCommandsOnly(String),
}

/// A runtime that drives the batch out of order: a bug, reported as an error
/// that ends the turn, never a panic that would leave the session running.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    #[error("tool call {0} is still running; its result must be reported before the next step")]
    StillRunning(String),
    #[error("tool call {0} is not running, so it cannot have finished")]
    NotRunning(String),
    #[error("two calls of one model turn have the id {0}")]
    DuplicateId(String),
    #[error("tool call {0} was not handed out to be judged")]
    NotJudged(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SkipReason {
    Rejected,
    Feedback,
    /// A question the user answered: the result is the answer.
    Answered,
    /// It was running, or cleared to run, when the hub stopped.
    Interrupted,
    /// The user stopped the turn before it ran.
    Stopped,
    /// The user stopped the turn while it ran: it was ended part way.
    StoppedRunning,
    /// A policy rule denies it: it never runs, and the model gets the rule's message.
    Denied,
    /// Nobody decided within the folder's approval timeout: the hub answered "no decision".
    TimedOut,
}

/// What the model sees for a call (or question) nobody decided in time.
pub fn timed_out_result(after_secs: u64, question: bool) -> String {
    let after = match after_secs {
        secs if secs % 60 == 0 && secs >= 60 => match secs / 60 {
            1 => "1 minute".to_string(),
            minutes => format!("{minutes} minutes"),
        },
        1 => "1 second".to_string(),
        secs => format!("{secs} seconds"),
    };
    match question {
        false => format!("No decision within {after}; the call was not run."),
        true => format!("No answer within {after}; the question went unanswered. Go on without it."),
    }
}

/// A grant a decision gives beside approving its call: the tool may run
/// without a card for the rest of the session, or of the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    Session(String),
    Turn(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallState {
    /// Waiting for the user.
    Pending,
    /// A question for the user, asked when its turn comes.
    Asking,
    /// Nobody decided it: the gate judges it when its turn comes (`Step::Judge`).
    Open,
    /// The user approved exactly this call (with their content, for an edit;
    /// with the network, for a command approved so).
    Approved {
        modified_content: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        network: bool,
        /// Approved to run outside the sandbox (a command it refused before).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        unsandboxed: bool,
    },
    /// Written by earlier versions for both of the above: read as `Approved`
    /// when it carries the user's content, else as `Open` (judged again).
    #[serde(rename = "Cleared")]
    LegacyCleared { modified_content: Option<String> },
    /// Handed to the runtime to run.
    Running,
    /// Not to run; the model gets `result` as the tool's output.
    Skipped { result: String, reason: SkipReason },
    /// Result reported.
    Done,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchCall {
    pub tool_id: String,
    pub tool_name: String,
    /// Whether `modifiedContent` may replace the proposal (write_file, replace).
    pub editable: bool,
    pub state: CallState,
}

/// What the runtime does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Run the call (with the user's content, if given; with the network, if
    /// approved so), then [`ApprovalBatch::finished`].
    Run { tool_id: String, modified_content: Option<String>, network: bool, unsandboxed: bool },
    /// Nobody decided this call: judge it now with the gate and report the
    /// judgement ([`ApprovalBatch::judged`]) before the next step.
    Judge(String),
    /// Report the call as not run, with this result for the model.
    Skip { tool_id: String, result: String, reason: SkipReason },
    /// Pause the turn until the user decides these calls (in order).
    Wait(Vec<String>),
    /// Pause the turn until the user answers this question.
    Ask(String),
    /// The user rejected a call: the turn ends.
    Cancelled,
    /// Every call has its result: give them to the model.
    Continue,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalBatch {
    calls: Vec<BatchCall>,
    rejected: bool,
}

/// What the gate says of an open call at the instant it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    Run,
    Ask,
    /// A rule denies it: the model gets this message as its result.
    Deny(String),
}

impl BatchCall {
    /// Whether nobody decided it (the gate judges it when it starts).
    fn is_open(&self) -> bool {
        matches!(self.state, CallState::Open | CallState::LegacyCleared { modified_content: None })
    }
}

/// A call of the model turn, and where it starts.
pub struct NewCall {
    pub tool_id: String,
    pub tool_name: String,
    pub editable: bool,
    pub initial: Initial,
}

/// Where a call starts, as the hub's rules, grants and mode decide it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Initial {
    /// The gate lets it run as things stand: it is judged again when it starts.
    Cleared,
    /// It waits for the user's decision (a card).
    Pending,
    /// A question (`ask_user`): answered, never approved.
    Asking,
    /// A rule denies it: the model gets this message as its result.
    Denied(String),
}

impl ApprovalBatch {
    /// The calls of one model turn. Their ids must be unique (the hub gives each
    /// call its own id; a model's ids may repeat or be empty).
    pub fn new(calls: impl IntoIterator<Item = NewCall>) -> Result<Self, BatchError> {
        let calls: Vec<BatchCall> = calls
            .into_iter()
            .map(|call| BatchCall {
                tool_id: call.tool_id,
                tool_name: call.tool_name,
                editable: call.editable,
                state: match call.initial {
                    Initial::Cleared => CallState::Open,
                    Initial::Pending => CallState::Pending,
                    Initial::Asking => CallState::Asking,
                    Initial::Denied(result) => CallState::Skipped { result, reason: SkipReason::Denied },
                },
            })
            .collect();
        let mut seen = std::collections::HashSet::new();
        if let Some(twice) = calls.iter().find(|call| !seen.insert(call.tool_id.as_str())) {
            return Err(BatchError::DuplicateId(twice.tool_id.clone()));
        }
        Ok(Self { calls, rejected: false })
    }

    pub fn calls(&self) -> &[BatchCall] {
        &self.calls
    }

    /// Ids of the calls waiting for the user, in order.
    pub fn pending(&self) -> Vec<String> {
        self.calls.iter().filter(|call| call.state == CallState::Pending).map(|call| call.tool_id.clone()).collect()
    }

    /// Applies the user's decision to this call alone (a rejection or feedback
    /// also answers the other waiting calls). Returns the grant that
    /// `ApproveSession` or `ApproveTurn` gives: the runtime judges the other
    /// waiting calls again with it ([`ApprovalBatch::reopen`]). On error
    /// nothing changes.
    pub fn decide(&mut self, tool_id: &str, decision: Decision) -> Result<Option<Grant>, DecisionError> {
        let index = self
            .calls
            .iter()
            .position(|call| call.tool_id == tool_id && call.state == CallState::Pending)
            .ok_or_else(|| DecisionError::NotPending(tool_id.to_string()))?;
        let name = self.calls[index].tool_name.clone();
        match decision {
            Decision::Approve | Decision::ApproveAlways => {
                self.calls[index].state =
                    CallState::Approved { modified_content: None, network: false, unsandboxed: false }
            }
            Decision::ApproveNetwork => {
                if name != "run_shell_command" {
                    return Err(DecisionError::NetworkForCommandsOnly(name));
                }
                self.calls[index].state =
                    CallState::Approved { modified_content: None, network: true, unsandboxed: false }
            }
            Decision::ApproveUnsandboxed => {
                if name != "run_shell_command" {
                    return Err(DecisionError::UnsandboxedForCommandsOnly(name));
                }
                self.calls[index].state =
                    CallState::Approved { modified_content: None, network: false, unsandboxed: true }
            }
            Decision::ApproveSession => {
                self.calls[index].state =
                    CallState::Approved { modified_content: None, network: false, unsandboxed: false };
                return Ok(Some(Grant::Session(name)));
            }
            Decision::ApproveTurn => {
                self.calls[index].state =
                    CallState::Approved { modified_content: None, network: false, unsandboxed: false };
                return Ok(Some(Grant::Turn(name)));
            }
            Decision::Reject => self.reject_all(),
            Decision::Edit { modified_content: Some(content), .. } => {
                if !self.calls[index].editable {
                    return Err(DecisionError::ContentNotEditable(name));
                }
                self.calls[index].state =
                    CallState::Approved { modified_content: Some(content), network: false, unsandboxed: false };
            }
            Decision::Edit { instruction, modified_content: None } => {
                let instruction = instruction.as_deref().map(str::trim).unwrap_or_default();
                if instruction.is_empty() {
                    return Err(DecisionError::BlankInstruction);
                }
                // The feedback answers every call still waiting: the model regenerates them.
                let result = format!("{FEEDBACK_PREFIX}{instruction}");
                for call in self.calls.iter_mut().filter(|call| call.state == CallState::Pending) {
                    call.state = CallState::Skipped { result: result.clone(), reason: SkipReason::Feedback };
                }
            }
        }
        Ok(None)
    }

    /// The question the turn is paused on: the first unfinished call, if it asks.
    pub fn asked(&self) -> Option<&str> {
        let call = self.calls.iter().find(|call| call.state != CallState::Done)?;
        (call.state == CallState::Asking).then_some(call.tool_id.as_str())
    }

    /// The user's answer to the question being asked; `None` turns it down,
    /// which ends the turn like a rejected call. On error nothing changes.
    pub fn answer(&mut self, tool_id: &str, answer: Option<String>, rejected: &str) -> Result<(), DecisionError> {
        if self.asked() != Some(tool_id) {
            return Err(DecisionError::NotPending(tool_id.to_string()));
        }
        let (result, reason) = match answer {
            Some(text) => (text, SkipReason::Answered),
            None => {
                self.reject_all();
                (rejected.to_string(), SkipReason::Rejected)
            }
        };
        if let Some(call) = self.calls.iter_mut().find(|call| call.tool_id == tool_id) {
            call.state = CallState::Skipped { result, reason };
        }
        Ok(())
    }

    /// Nobody decided in time: every call waiting for the user, and the
    /// question being asked, is answered with `result` (a call's) or
    /// `question` (a question's) and not run; the turn goes on. Returns the
    /// ids it answered, in order.
    pub fn time_out(&mut self, result: &str, question: &str) -> Vec<String> {
        let asked = self.asked().map(str::to_string);
        let mut answered = Vec::new();
        for call in &mut self.calls {
            let text = match &call.state {
                CallState::Pending => result,
                CallState::Asking if asked.as_deref() == Some(call.tool_id.as_str()) => question,
                _ => continue,
            };
            call.state = CallState::Skipped { result: text.to_string(), reason: SkipReason::TimedOut };
            answered.push(call.tool_id.clone());
        }
        answered
    }

    /// Nothing runs or is asked after a rejection, not even calls cleared earlier.
    fn reject_all(&mut self) {
        self.rejected = true;
        for call in &mut self.calls {
            if matches!(
                call.state,
                CallState::Pending
                    | CallState::Asking
                    | CallState::Open
                    | CallState::Approved { .. }
                    | CallState::LegacyCleared { .. }
            ) {
                call.state = CallState::Skipped { result: REJECTED_RESULT.to_string(), reason: SkipReason::Rejected };
            }
        }
    }

    /// A waiting call the gate would now let run (a grant or a rule given since
    /// it was planned) stops waiting: it is judged again when it starts, so it
    /// never runs on the strength of this moment. Anything else: no change.
    pub fn reopen(&mut self, tool_id: &str) -> bool {
        match self.calls.iter_mut().find(|call| call.tool_id == tool_id && call.state == CallState::Pending) {
            Some(call) => {
                call.state = CallState::Open;
                true
            }
            None => false,
        }
    }

    /// A call [`ApprovalBatch::reopen`] let go waits for the user again (a
    /// batch of decisions: the user's own decision on it, taken with the one
    /// whose grant reopened it, is applied as on its card). Anything else: no change.
    pub fn wait_again(&mut self, tool_id: &str) -> bool {
        match self.calls.iter_mut().find(|call| call.tool_id == tool_id && call.state == CallState::Open) {
            Some(call) => {
                call.state = CallState::Pending;
                true
            }
            None => false,
        }
    }

    /// The runtime's judgement of the call [`Step::Judge`] handed out: it runs
    /// now (and is `Running` until [`ApprovalBatch::finished`]), waits for the
    /// user, or is denied with this result for the model.
    pub fn judged(&mut self, tool_id: &str, judgement: Judgement) -> Result<(), BatchError> {
        let first = self.calls.iter_mut().find(|call| call.state != CallState::Done);
        let call = first
            .filter(|call| call.tool_id == tool_id && call.is_open())
            .ok_or_else(|| BatchError::NotJudged(tool_id.to_string()))?;
        call.state = match judgement {
            Judgement::Run => CallState::Running,
            Judgement::Ask => CallState::Pending,
            Judgement::Deny(result) => CallState::Skipped { result, reason: SkipReason::Denied },
        };
        Ok(())
    }

    /// The call handed out to run and not yet reported, if any.
    pub fn running(&self) -> Option<&str> {
        self.calls.iter().find(|call| call.state == CallState::Running).map(|call| call.tool_id.as_str())
    }

    /// The hub stopped (crashed, or shut down) while this batch was being worked
    /// through. The call that was running is never run again: the model gets
    /// [`INTERRUPTED_RESULT`]. Calls cleared to run before the first waiting one
    /// cannot run now (a restart resumes no turn): [`NOT_STARTED_RESULT`]. From
    /// the first waiting call on, nothing changes: the cards stay, and calls
    /// approved behind them run in order once the user decides. Returns the ids
    /// of the calls it closed.
    pub fn interrupt(&mut self) -> Vec<String> {
        let waiting = |state: &CallState| matches!(state, CallState::Pending | CallState::Asking);
        let first_waiting = self.calls.iter().position(|call| waiting(&call.state)).unwrap_or(self.calls.len());
        let mut closed = Vec::new();
        for call in &mut self.calls[..first_waiting] {
            let result = match call.state {
                CallState::Running => INTERRUPTED_RESULT,
                CallState::Open | CallState::Approved { .. } | CallState::LegacyCleared { .. } => NOT_STARTED_RESULT,
                _ => continue,
            };
            call.state = CallState::Skipped { result: result.to_string(), reason: SkipReason::Interrupted };
            closed.push(call.tool_id.clone());
        }
        closed
    }

    /// The user stopped the turn: nothing of it runs or waits any more. The
    /// model gets `not_run` for every call without a result, and
    /// [`STOPPED_RUNNING_RESULT`] for the one that was running (it was ended).
    pub fn stop(&mut self, not_run: &str) -> Vec<String> {
        let mut closed = Vec::new();
        for call in &mut self.calls {
            let (result, reason) = match call.state {
                CallState::Done | CallState::Skipped { .. } => continue,
                CallState::Running => (STOPPED_RUNNING_RESULT, SkipReason::StoppedRunning),
                _ => (not_run, SkipReason::Stopped),
            };
            call.state = CallState::Skipped { result: result.to_string(), reason };
            closed.push(call.tool_id.clone());
        }
        closed
    }

    /// What to do next; marks the call it hands out as running or done.
    pub fn step(&mut self) -> Result<Step, BatchError> {
        for call in &mut self.calls {
            match &call.state {
                CallState::Done => continue,
                CallState::Running => return Err(BatchError::StillRunning(call.tool_id.clone())),
                CallState::Pending => return Ok(Step::Wait(self.pending())),
                CallState::Asking => return Ok(Step::Ask(call.tool_id.clone())),
                CallState::Approved { modified_content, network, unsandboxed } => {
                    let (modified_content, network, unsandboxed) = (modified_content.clone(), *network, *unsandboxed);
                    let step = Step::Run { tool_id: call.tool_id.clone(), modified_content, network, unsandboxed };
                    call.state = CallState::Running;
                    return Ok(step);
                }
                CallState::LegacyCleared { modified_content: modified_content @ Some(_) } => {
                    let step = Step::Run {
                        tool_id: call.tool_id.clone(),
                        modified_content: modified_content.clone(),
                        network: false,
                        unsandboxed: false,
                    };
                    call.state = CallState::Running;
                    return Ok(step);
                }
                CallState::Open | CallState::LegacyCleared { modified_content: None } => {
                    return Ok(Step::Judge(call.tool_id.clone()))
                }
                CallState::Skipped { result, reason } => {
                    let step = Step::Skip { tool_id: call.tool_id.clone(), result: result.clone(), reason: *reason };
                    call.state = CallState::Done;
                    return Ok(step);
                }
            }
        }
        Ok(if self.rejected { Step::Cancelled } else { Step::Continue })
    }

    /// The runtime could not start the call it was handed (its running state
    /// could not be saved): it is not running, and is judged again if ever reached.
    pub fn not_started(&mut self, tool_id: &str) -> Result<(), BatchError> {
        let call = self
            .calls
            .iter_mut()
            .find(|call| call.tool_id == tool_id && call.state == CallState::Running)
            .ok_or_else(|| BatchError::NotRunning(tool_id.to_string()))?;
        call.state = CallState::Open;
        Ok(())
    }

    /// The runtime reported the result of the call it was told to run.
    pub fn finished(&mut self, tool_id: &str) -> Result<(), BatchError> {
        let call = self
            .calls
            .iter_mut()
            .find(|call| call.tool_id == tool_id && call.state == CallState::Running)
            .ok_or_else(|| BatchError::NotRunning(tool_id.to_string()))?;
        call.state = CallState::Done;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
