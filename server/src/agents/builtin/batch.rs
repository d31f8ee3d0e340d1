//! The built-in agent's paused model turn, worked through with the approval
//! state machine: everything that needs no tool (a skipped call reported, a
//! question asked, a crash or a Stop settled) happens here, under the session's
//! lock; running a call is the turn's job (`builtin/mod.rs`).
//!
//! Write-ahead: a call handed out to run is saved as running (with the decision
//! that released it, in one agent-state write) and the caller flushes the store
//! before it runs. After a crash, [`SessionRuntime::recover_batch`] finds it
//! running and reports it interrupted: it never runs twice.

use std::collections::{HashMap, HashSet};

use protocol::events::{AgentEvent, ResultStatus, Severity, ToolError, ToolKind, ToolStatus};
use serde_json::json;

use super::question;
use super::{PausedTurn, PlannedCall};
use crate::agents::trail::outcome_of_skip;
use crate::agents::{gate, AgentState, Grants, SessionRuntime, INTERRUPTED_MESSAGE};
use crate::approval::{BatchError, Initial, SkipReason, Step};
use crate::session::TurnEnd;
use crate::tools::Tool;
use protocol::audit::Outcome;

/// The gate, asked about a call at the instant it starts, with the session's
/// grants as they are then. Nothing of its answer is kept.
pub(crate) type Judge<'a> = &'a (dyn Fn(&PlannedCall, Grants) -> gate::Ruling + Sync);

/// Where working through a batch stopped: a call to run, or a pause or end.
#[derive(Debug, PartialEq, Eq)]
pub enum Settled {
    /// Run this call: it is saved as running; flush, then run it, then [`finish`].
    /// `unseen`: the gate let it run without a card, so a command runs as the
    /// hub's rendering of what was judged (`policy::render`), not as its text.
    Run { tool_id: String, modified_content: Option<String>, network: bool, unsandboxed: bool, unseen: bool },
    /// Waiting for the user's decisions on these calls.
    Wait(Vec<String>),
    /// Waiting for the answer to this question (its `input_request` is out).
    Ask(String),
    /// A call was rejected: the turn ends `cancelled`.
    Cancelled,
    /// Every call has its result: the model goes on.
    Continue,
}

/// What the log already says of a batch (after a crash): it is not said twice.
#[derive(Debug, Default)]
pub(crate) struct AlreadyLogged {
    /// Calls with a `tool_result`, and the text the model gets for each.
    results: HashMap<String, String>,
    /// Questions whose `input_request` is out.
    asked: HashSet<String>,
}

impl AlreadyLogged {
    fn of(runtime: &SessionRuntime, ids: &[String]) -> Self {
        let mut logged = Self::default();
        for event in runtime.log.published().into_iter().map(|logged| logged.event) {
            match event {
                AgentEvent::ToolResult { tool_id, output, error, .. } if ids.contains(&tool_id) => {
                    let text = match error {
                        Some(error) => format!("Error ({}): {}", error.kind, error.message),
                        None => output.unwrap_or_default(),
                    };
                    logged.results.insert(tool_id, text);
                }
                AgentEvent::InputRequest { request_id, .. } if ids.contains(&request_id) => {
                    logged.asked.insert(request_id);
                }
                _ => {}
            }
        }
        logged
    }
}

impl PausedTurn {
    /// The id the model gave a call (the hub's own id where the model's could not serve).
    pub fn model_id(&self, tool_id: &str) -> String {
        self.calls.get(tool_id).and_then(|call| call.model_id.clone()).unwrap_or_else(|| tool_id.to_string())
    }
}

/// A call's result for the model, in the conversation (under the model's id).
fn tool_message(state: &mut AgentState, tool_id: &str, content: String) {
    let model_id = state.builtin.paused.as_ref().map_or_else(|| tool_id.to_string(), |paused| paused.model_id(tool_id));
    state.builtin.messages.push(json!({"role": "tool", "tool_call_id": model_id, "content": content}));
}

/// The event of a call that did not run (or a question answered).
fn skip_event(tool_id: String, result: String, reason: SkipReason) -> AgentEvent {
    match reason {
        SkipReason::Answered => AgentEvent::ToolResult {
            tool_id,
            status: ToolStatus::Success,
            output: Some(result),
            error: None,
            diff: None,
        },
        // It may have done part of its work: an error, not a skip.
        SkipReason::Interrupted | SkipReason::StoppedRunning => AgentEvent::ToolResult {
            tool_id,
            status: ToolStatus::Error,
            output: None,
            error: Some(ToolError {
                kind: if reason == SkipReason::Interrupted { "interrupted" } else { "stopped" }.into(),
                message: result,
            }),
            diff: None,
        },
        SkipReason::Denied | SkipReason::TimedOut => AgentEvent::ToolResult {
            tool_id,
            status: ToolStatus::Error,
            output: None,
            error: Some(ToolError {
                kind: if reason == SkipReason::Denied { "denied_by_policy" } else { "timed_out" }.into(),
                message: result,
            }),
            diff: None,
        },
        SkipReason::Rejected | SkipReason::Feedback | SkipReason::Stopped => AgentEvent::ToolResult {
            tool_id,
            status: ToolStatus::Skipped,
            output: Some(result),
            error: None,
            diff: None,
        },
    }
}

impl SessionRuntime {
    /// Works through the paused turn's calls up to the next one to run, or the
    /// next pause or end. A call nobody decided is judged by `judge` when its
    /// turn comes; without a judge (recovery, a closed batch) it waits for the user.
    pub(crate) fn settle(&self, logged: &AlreadyLogged, judge: Option<Judge>) -> Result<Settled, BatchError> {
        let mut guard = self.state();
        loop {
            let state = &mut *guard;
            let Some(paused) = state.agent.builtin.paused.as_mut() else { return Ok(Settled::Continue) };
            match paused.batch.step()? {
                Step::Judge(tool_id) => {
                    let call = paused.calls.get(&tool_id);
                    let start = match (judge, call) {
                        (Some(judge), Some(call)) => {
                            judge(call, Grants { session: &state.agent.allowed_tools, turn: &state.agent.turn_tools })
                        }
                        _ => gate::Ruling::user_decides(),
                    };
                    paused.batch.judged(&tool_id, start.judgement())?;
                    if let (Some((how, by)), Some(call)) = (&start.decided, call) {
                        self.audit_decision(&tool_id, &call.name, &call.args, how.clone(), by);
                    }
                    match start.initial {
                        Initial::Cleared => {
                            // Running is on disk before the call runs (the caller flushes).
                            self.save(state);
                            return Ok(Settled::Run {
                                tool_id,
                                modified_content: None,
                                network: false,
                                unsandboxed: false,
                                unseen: true,
                            });
                        }
                        Initial::Pending | Initial::Asking => {
                            // It gets its card now; the card says why when a rule or the hub asks.
                            if let (Some(note), Some(call)) = (start.note, call) {
                                self.log.push(AgentEvent::ToolUpdate {
                                    tool_id,
                                    tool_name: call.name.clone(),
                                    parameters: call.args.clone(),
                                    kind: call.tool.map_or(ToolKind::Other, Tool::kind),
                                    diff: None,
                                    choices: None,
                                    policy: Some(note),
                                });
                            }
                            self.save(state);
                        }
                        Initial::Denied(_) => {
                            self.save(state);
                        }
                    }
                }
                Step::Run { tool_id, modified_content, network, unsandboxed } => {
                    // Running is on disk before the call runs (the caller flushes).
                    self.save(state);
                    return Ok(Settled::Run { tool_id, modified_content, network, unsandboxed, unseen: false });
                }
                Step::Skip { tool_id, result, reason } => {
                    if let Some(outcome) = outcome_of_skip(reason) {
                        self.audit_outcome(&tool_id, outcome);
                    }
                    let text = match logged.results.get(&tool_id) {
                        Some(text) => text.clone(),
                        None => {
                            self.log.push(skip_event(tool_id.clone(), result.clone(), reason));
                            result
                        }
                    };
                    tool_message(&mut state.agent, &tool_id, text);
                    self.save(state);
                }
                Step::Wait(pending) => return Ok(Settled::Wait(pending)),
                Step::Ask(tool_id) => {
                    if logged.asked.contains(&tool_id) || self.ask(paused, &tool_id)? {
                        return Ok(Settled::Ask(tool_id));
                    }
                }
                Step::Cancelled => return Ok(Settled::Cancelled),
                Step::Continue => return Ok(Settled::Continue),
            }
        }
    }

    /// Asks the question (`input_request`); one the user could not answer is
    /// answered as rejected, with an error saying why. Returns whether it waits.
    fn ask(&self, paused: &mut PausedTurn, tool_id: &str) -> Result<bool, BatchError> {
        match paused.calls.get(tool_id).map(|call| question::parse(&call.args)) {
            Some(Ok(Ok(question))) => {
                self.log.push(AgentEvent::InputRequest {
                    request_id: tool_id.to_string(),
                    input_type: question.input_type,
                    prompt: question.prompt,
                    choices: question.choices,
                });
                return Ok(true);
            }
            Some(Ok(Err(unanswerable))) => {
                self.log.push(AgentEvent::Error {
                    severity: Severity::Error,
                    message: format!(
                        "The agent asked \"{}\", but {}; the question was answered as rejected.",
                        unanswerable.prompt, unanswerable.reason
                    ),
                    code: Some("invalid_question".into()),
                });
            }
            _ => {}
        }
        // `step` handed out this question, so it is the one being asked.
        paused
            .batch
            .answer(tool_id, None, question::REJECTED_ANSWER)
            .map_err(|_| BatchError::NotRunning(tool_id.to_string()))?;
        Ok(false)
    }

    /// Reports the result of the call that ran: its event, then the batch and
    /// the conversation saved together.
    pub(crate) fn finish(&self, tool_id: &str, event: AgentEvent, text: String) -> Result<(), BatchError> {
        let ran = matches!(event, AgentEvent::ToolResult { status: ToolStatus::Success, .. });
        self.audit_outcome(tool_id, if ran { Outcome::Ran } else { Outcome::Failed });
        let mut state = self.state();
        self.log.push(event);
        if let Some(paused) = state.agent.builtin.paused.as_mut() {
            paused.batch.finished(tool_id)?;
        }
        tool_message(&mut state.agent, tool_id, text);
        self.save(&state);
        Ok(())
    }

    /// Stop: every call without a result is answered `result` (a running one
    /// was killed), and the paused turn is gone.
    pub(crate) fn close_batch(&self, result: &str) {
        if let Some(paused) = self.state().agent.builtin.paused.as_mut() {
            paused.batch.stop(result);
        }
        self.settle_closed();
    }

    /// Reports what a closed batch holds, then forgets it. Nothing in it runs:
    /// every call was closed, so a `Run` here is a bug, logged and dropped.
    fn settle_closed(&self) {
        if let Err(err) = self.settle(&AlreadyLogged::default(), None) {
            tracing::error!(session = %self.id, "a closed batch did not settle: {err}");
        }
        let mut state = self.state();
        state.agent.builtin.paused = None;
        self.save(&state);
    }

    /// After a crash or a failed turn task: calls that were running (or cleared
    /// to run) are reported interrupted, to the user and to the model, and never
    /// run; calls still waiting keep their cards. Returns how the turn pauses or
    /// ends (the caller writes its `result`), or `None` when there was no batch.
    pub(crate) fn recover_batch(&self) -> Option<TurnEnd> {
        let ids: Vec<String> = {
            let mut state = self.state();
            let paused = state.agent.builtin.paused.as_mut()?;
            let interrupted = paused.batch.interrupt();
            if !interrupted.is_empty() {
                tracing::warn!(session = %self.id, calls = ?interrupted, "calls cut short are reported interrupted");
            }
            paused.calls.keys().cloned().collect()
        };
        // What reached the log before the crash is not said twice.
        let logged = AlreadyLogged::of(self, &ids);
        Some(match self.settle(&logged, None) {
            Ok(Settled::Wait(pending)) => TurnEnd::waiting(pending),
            Ok(Settled::Ask(request_id)) => TurnEnd::asking(request_id),
            Ok(Settled::Cancelled) => {
                self.forget_batch();
                TurnEnd::ended(ResultStatus::Cancelled)
            }
            other => {
                // Continue (the model would be called next: not after a crash), or
                // a batch that would not settle.
                if let Err(err) = &other {
                    tracing::error!(session = %self.id, "recovery: {err}");
                }
                self.forget_batch();
                // Calls of a later reply than the saved batch may be announced.
                self.close_unreported_calls();
                self.report_error("interrupted", INTERRUPTED_MESSAGE.to_string());
                TurnEnd::error()
            }
        })
    }

    fn forget_batch(&self) {
        let mut state = self.state();
        state.agent.builtin.paused = None;
        self.save(&state);
    }
}
