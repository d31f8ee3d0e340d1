//! The approval state machine of one model turn's tool calls. Plain data, no IO:
//! the runtime asks [`ApprovalBatch::step`] what to do next and reports back.
//!
//! Calls are handled in the model's order. The first call still waiting for the
//! user pauses the turn (`Wait`), so card "1/3" is always the earliest one; calls
//! decided out of order run when their turn comes. A question to the user
//! (`ask_user`) waits in the same order: it is asked when its turn comes.

use serde::{Deserialize, Serialize};

/// What the model sees as the result of a call the user redirected.
pub const FEEDBACK_PREFIX: &str = "[USER FEEDBACK - Tool was not executed]: ";
/// What the model sees as the result of a rejected call.
pub const REJECTED_RESULT: &str = "The user rejected this tool call; it was not executed.";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Decision {
    Approve,
    Reject,
    /// Approve, and let every later call of the same tool in this session run without a card.
    ApproveSession,
    /// Skip the call and tell the model why; or, with `modified_content` on an
    /// edit tool, write the user's content instead of the proposal.
    Edit {
        instruction: Option<String>,
        modified_content: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecisionError {
    /// Unknown id, or already decided.
    NotPending(String),
    BlankInstruction,
    ContentNotEditable(String),
}

impl std::fmt::Display for DecisionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotPending(id) => write!(f, "Tool call '{id}' is not waiting for a decision."),
            Self::BlankInstruction => write!(f, "An edit needs a non-empty editInstruction (or modifiedContent)."),
            Self::ContentNotEditable(name) => {
                write!(f, "modifiedContent applies to file edits only, not to {name}.")
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SkipReason {
    Rejected,
    Feedback,
    /// A question the user answered: the result is the answer.
    Answered,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallState {
    /// Waiting for the user.
    Pending,
    /// A question for the user, asked when its turn comes.
    Asking,
    /// May run (approved, allowed for the session, YOLO, or read-only).
    Cleared { modified_content: Option<String> },
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
    /// Run the call (with the user's content, if given), then [`ApprovalBatch::finished`].
    Run { tool_id: String, modified_content: Option<String> },
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

/// A call of the model turn, and whether it needs the user.
pub struct NewCall {
    pub tool_id: String,
    pub tool_name: String,
    pub editable: bool,
    pub needs_approval: bool,
    /// A question (`ask_user`): answered, never approved.
    pub asks_user: bool,
}

impl ApprovalBatch {
    pub fn new(calls: impl IntoIterator<Item = NewCall>) -> Self {
        let calls = calls
            .into_iter()
            .map(|call| BatchCall {
                tool_id: call.tool_id,
                tool_name: call.tool_name,
                editable: call.editable,
                state: if call.asks_user {
                    CallState::Asking
                } else if call.needs_approval {
                    CallState::Pending
                } else {
                    CallState::Cleared { modified_content: None }
                },
            })
            .collect();
        Self { calls, rejected: false }
    }

    pub fn calls(&self) -> &[BatchCall] {
        &self.calls
    }

    /// Ids of the calls waiting for the user, in order.
    pub fn pending(&self) -> Vec<String> {
        self.calls.iter().filter(|call| call.state == CallState::Pending).map(|call| call.tool_id.clone()).collect()
    }

    /// Applies the user's decision. Returns the tool name to allow for the rest of
    /// the session on `ApproveSession`. On error nothing changes.
    pub fn decide(&mut self, tool_id: &str, decision: Decision) -> Result<Option<String>, DecisionError> {
        let index = self
            .calls
            .iter()
            .position(|call| call.tool_id == tool_id && call.state == CallState::Pending)
            .ok_or_else(|| DecisionError::NotPending(tool_id.to_string()))?;
        let name = self.calls[index].tool_name.clone();
        match decision {
            Decision::Approve => self.calls[index].state = CallState::Cleared { modified_content: None },
            Decision::ApproveSession => {
                for call in self.calls.iter_mut().filter(|c| c.tool_name == name && c.state == CallState::Pending) {
                    call.state = CallState::Cleared { modified_content: None };
                }
                return Ok(Some(name));
            }
            Decision::Reject => self.reject_all(),
            Decision::Edit { modified_content: Some(content), .. } => {
                if !self.calls[index].editable {
                    return Err(DecisionError::ContentNotEditable(name));
                }
                self.calls[index].state = CallState::Cleared { modified_content: Some(content) };
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

    /// Nothing runs or is asked after a rejection, not even calls cleared earlier.
    fn reject_all(&mut self) {
        self.rejected = true;
        for call in &mut self.calls {
            if matches!(call.state, CallState::Pending | CallState::Asking | CallState::Cleared { .. }) {
                call.state = CallState::Skipped { result: REJECTED_RESULT.to_string(), reason: SkipReason::Rejected };
            }
        }
    }

    /// Clears every waiting call of `tool_name` (allowed for the session elsewhere).
    pub fn allow_tool(&mut self, tool_name: &str) {
        for call in self.calls.iter_mut().filter(|c| c.tool_name == tool_name && c.state == CallState::Pending) {
            call.state = CallState::Cleared { modified_content: None };
        }
    }

    /// What to do next; marks the call it hands out as running or done.
    pub fn step(&mut self) -> Step {
        for call in &mut self.calls {
            match &call.state {
                CallState::Done => continue,
                CallState::Running => still_running(&call.tool_id),
                CallState::Pending => return Step::Wait(self.pending()),
                CallState::Asking => return Step::Ask(call.tool_id.clone()),
                CallState::Cleared { modified_content } => {
                    let step = Step::Run { tool_id: call.tool_id.clone(), modified_content: modified_content.clone() };
                    call.state = CallState::Running;
                    return step;
                }
                CallState::Skipped { result, reason } => {
                    let step = Step::Skip { tool_id: call.tool_id.clone(), result: result.clone(), reason: *reason };
                    call.state = CallState::Done;
                    return step;
                }
            }
        }
        if self.rejected {
            Step::Cancelled
        } else {
            Step::Continue
        }
    }

    /// The runtime reported the result of a call it was told to run.
    pub fn finished(&mut self, tool_id: &str) {
        if let Some(call) = self.calls.iter_mut().find(|call| call.tool_id == tool_id) {
            call.state = CallState::Done;
        }
    }
}

/// A call handed out to run must be reported before the next step; a runtime that
/// did not is a bug, but the safe reading is "not done": ask for it again.
fn still_running(tool_id: &str) -> ! {
    panic!("step() called while tool call {tool_id} is still running; call finished() first")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str, needs_approval: bool) -> NewCall {
        NewCall {
            tool_id: id.into(),
            tool_name: name.into(),
            editable: name == "write_file",
            needs_approval,
            asks_user: false,
        }
    }

    fn three_shell_calls() -> ApprovalBatch {
        ApprovalBatch::new([
            call("a", "run_shell_command", true),
            call("b", "run_shell_command", true),
            call("c", "write_file", true),
        ])
    }

    fn run(batch: &mut ApprovalBatch, id: &str) {
        assert_eq!(batch.step(), Step::Run { tool_id: id.into(), modified_content: None });
        batch.finished(id);
    }

    #[test]
    fn three_calls_wait_together_in_order() {
        let mut batch = three_shell_calls();
        assert_eq!(batch.step(), Step::Wait(vec!["a".into(), "b".into(), "c".into()]));
    }

    #[test]
    fn approve_runs_each_call_once_then_continues() {
        let mut batch = three_shell_calls();
        batch.decide("a", Decision::Approve).unwrap();
        run(&mut batch, "a");
        assert_eq!(batch.step(), Step::Wait(vec!["b".into(), "c".into()]));
        assert_eq!(batch.decide("a", Decision::Approve), Err(DecisionError::NotPending("a".into())), "never twice");
        batch.decide("b", Decision::Approve).unwrap();
        batch.decide("c", Decision::Approve).unwrap();
        run(&mut batch, "b");
        run(&mut batch, "c");
        assert_eq!(batch.step(), Step::Continue);
    }

    #[test]
    fn out_of_order_decisions_wait_for_earlier_calls() {
        let mut batch = three_shell_calls();
        batch.decide("b", Decision::Approve).unwrap();
        assert_eq!(batch.step(), Step::Wait(vec!["a".into(), "c".into()]));
    }

    #[test]
    fn unknown_and_decided_ids_are_not_pending() {
        let mut batch = three_shell_calls();
        assert_eq!(batch.decide("zzz", Decision::Approve), Err(DecisionError::NotPending("zzz".into())));
        batch.decide("a", Decision::Reject).unwrap();
        assert!(matches!(batch.decide("b", Decision::Approve), Err(DecisionError::NotPending(_))));
    }

    #[test]
    fn reject_skips_everything_left_and_cancels() {
        let mut batch = ApprovalBatch::new([
            call("r", "read_file", false),
            call("a", "run_shell_command", true),
            call("w", "write_file", true),
        ]);
        run(&mut batch, "r");
        batch.decide("w", Decision::Approve).unwrap();
        batch.decide("a", Decision::Reject).unwrap();
        for id in ["a", "w"] {
            assert_eq!(
                batch.step(),
                Step::Skip { tool_id: id.into(), result: REJECTED_RESULT.into(), reason: SkipReason::Rejected }
            );
        }
        assert_eq!(batch.step(), Step::Cancelled);
    }

    #[test]
    fn approve_session_clears_same_tool_calls_and_names_the_tool() {
        let mut batch = three_shell_calls();
        assert_eq!(batch.decide("a", Decision::ApproveSession), Ok(Some("run_shell_command".into())));
        run(&mut batch, "a");
        run(&mut batch, "b");
        assert_eq!(batch.step(), Step::Wait(vec!["c".into()]), "other tools still ask");
        let mut later = ApprovalBatch::new([call("d", "write_file", true)]);
        later.allow_tool("write_file");
        run(&mut later, "d");
    }

    #[test]
    fn edit_feeds_the_instruction_back_to_every_waiting_call() {
        let mut batch = three_shell_calls();
        batch.decide("a", Decision::Approve).unwrap();
        run(&mut batch, "a");
        let edit = Decision::Edit { instruction: Some("  only delete .log files ".into()), modified_content: None };
        batch.decide("b", edit).unwrap();
        let expected = "[USER FEEDBACK - Tool was not executed]: only delete .log files".to_string();
        for id in ["b", "c"] {
            assert_eq!(
                batch.step(),
                Step::Skip { tool_id: id.into(), result: expected.clone(), reason: SkipReason::Feedback }
            );
        }
        assert_eq!(batch.step(), Step::Continue, "the model goes on and regenerates");
    }

    #[test]
    fn blank_edit_is_refused_and_changes_nothing() {
        let mut batch = three_shell_calls();
        let before = batch.clone();
        for instruction in [None, Some(String::new()), Some(" \n\t".into())] {
            let edit = Decision::Edit { instruction, modified_content: None };
            assert_eq!(batch.decide("a", edit), Err(DecisionError::BlankInstruction));
        }
        assert_eq!(batch, before);
    }

    #[test]
    fn modified_content_only_for_edit_tools() {
        let mut batch = three_shell_calls();
        let content = Decision::Edit { instruction: None, modified_content: Some("mine".into()) };
        assert!(matches!(batch.decide("a", content.clone()), Err(DecisionError::ContentNotEditable(_))));
        batch.decide("a", Decision::Approve).unwrap();
        batch.decide("b", Decision::Approve).unwrap();
        batch.decide("c", content).unwrap();
        run(&mut batch, "a");
        run(&mut batch, "b");
        assert_eq!(batch.step(), Step::Run { tool_id: "c".into(), modified_content: Some("mine".into()) });
    }

    #[test]
    fn calls_that_need_no_approval_run_straight_away() {
        let mut batch = ApprovalBatch::new([call("r", "read_file", false), call("s", "run_shell_command", false)]);
        run(&mut batch, "r");
        run(&mut batch, "s");
        assert_eq!(batch.step(), Step::Continue);
        assert!(batch.pending().is_empty());
    }

    fn question(id: &str) -> NewCall {
        NewCall {
            tool_id: id.into(),
            tool_name: "ask_user".into(),
            editable: false,
            needs_approval: false,
            asks_user: true,
        }
    }

    #[test]
    fn a_question_is_asked_when_its_turn_comes_and_answered_once() {
        let mut batch = ApprovalBatch::new([
            call("a", "run_shell_command", true),
            question("q"),
            call("b", "run_shell_command", true),
        ]);
        assert_eq!(batch.step(), Step::Wait(vec!["a".into(), "b".into()]), "questions are not approvals");
        assert_eq!(batch.asked(), None, "not yet its turn");
        assert_eq!(batch.answer("q", Some("x".into()), "no"), Err(DecisionError::NotPending("q".into())));
        batch.decide("a", Decision::Approve).unwrap();
        run(&mut batch, "a");
        assert_eq!(batch.step(), Step::Ask("q".into()));
        assert_eq!(batch.asked(), Some("q"));
        assert!(matches!(batch.decide("q", Decision::Approve), Err(DecisionError::NotPending(_))));
        batch.answer("q", Some("blue".into()), "no").unwrap();
        assert_eq!(batch.answer("q", Some("red".into()), "no"), Err(DecisionError::NotPending("q".into())), "once");
        assert_eq!(
            batch.step(),
            Step::Skip { tool_id: "q".into(), result: "blue".into(), reason: SkipReason::Answered }
        );
        assert_eq!(batch.step(), Step::Wait(vec!["b".into()]));
    }

    #[test]
    fn turning_a_question_down_ends_the_turn() {
        let mut batch = ApprovalBatch::new([question("q"), question("r"), call("s", "run_shell_command", false)]);
        assert_eq!(batch.step(), Step::Ask("q".into()));
        batch.answer("q", None, "turned down").unwrap();
        let skipped: Vec<Step> = (0..3).map(|_| batch.step()).collect();
        assert_eq!(
            skipped[0],
            Step::Skip { tool_id: "q".into(), result: "turned down".into(), reason: SkipReason::Rejected }
        );
        assert!(matches!(&skipped[1], Step::Skip { tool_id, reason: SkipReason::Rejected, .. } if tool_id == "r"));
        assert!(matches!(&skipped[2], Step::Skip { tool_id, reason: SkipReason::Rejected, .. } if tool_id == "s"));
        assert_eq!(batch.step(), Step::Cancelled);
    }

    #[test]
    fn a_rejected_call_means_later_questions_are_never_asked() {
        let mut batch = ApprovalBatch::new([call("a", "write_file", true), question("q")]);
        batch.decide("a", Decision::Reject).unwrap();
        assert!(matches!(batch.step(), Step::Skip { .. }));
        assert!(matches!(batch.step(), Step::Skip { reason: SkipReason::Rejected, .. }));
        assert_eq!(batch.step(), Step::Cancelled);
    }
}
