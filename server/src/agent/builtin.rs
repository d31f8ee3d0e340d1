//! The built-in agent: a tool loop over an OpenAI-compatible endpoint. Each
//! model turn's tool calls go through the approval state machine; the turn
//! pauses at the first call waiting for the user and resumes on a decision.

use std::collections::HashMap;
use std::sync::Arc;

use app::events::{AgentEvent, FileDiff, ResultStatus, Role, Severity, ToolError, ToolKind, ToolStatus};
use app::types::SessionStatus;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::model::{ModelClient, ToolCallRequest};
use super::question::{self, Answer};
use super::{busy, not_pending, not_running, AgentState, PausedTurn, PlannedCall, SessionRuntime, Start, TurnEnd};
use crate::approval::{Decision, DecisionError, NewCall, SkipReason, Step};
use crate::error::ApiError;
use crate::hub::Hub;
use crate::tools::{self, Tool, ToolFailure, Workspace};

/// A turn that keeps calling tools is stopped after this many completions.
pub const MAX_COMPLETIONS_PER_TURN: usize = 50;

pub const NO_MODEL_MESSAGE: &str = "No model is configured for the built-in agent. Start the hub with \
     OPENAI_BASE_URL and HUB_MODEL (or --model-url and --model), e.g. an Ollama or llama.cpp server.";

/// Words that, as a whole prompt while a call waits, decide the first waiting call.
pub fn decision_word(text: &str) -> Option<Decision> {
    match text.trim().trim_end_matches(['.', '!']).to_ascii_lowercase().as_str() {
        "yes" | "y" | "approve" => Some(Decision::Approve),
        "no" | "n" | "reject" => Some(Decision::Reject),
        "approve all" => Some(Decision::ApproveSession),
        _ => None,
    }
}

fn system_prompt(runtime: &SessionRuntime) -> Value {
    json!({"role": "system", "content": format!(
        "You are a coding agent working in the project folder {}. Use the tools to read, search, \
         change files and run commands there; paths are relative to that folder. The user approves \
         each change or command, and may answer a tool call with feedback instead of running it: \
         follow that feedback.",
        runtime.folder.display()
    )})
}

/// Checks and records the start of a turn, then runs it in a task of its own.
/// Returns the last seq before the turn's first event (the reader starts after it).
pub fn begin(hub: &Arc<Hub>, runtime: &Arc<SessionRuntime>, start: Start) -> Result<u64, ApiError> {
    let model = hub.model();
    let (after, stop) = {
        let mut guard = runtime.state();
        let state = &mut *guard;
        if state.running {
            return Err(busy("A turn is already running in this session; wait for it to finish."));
        }
        let after = runtime.log.last_seq();
        match start {
            Start::Decide { tool_id, decision } => apply_decision(state, &tool_id, decision)?,
            Start::Answer { request_id, response } => apply_answer(state, &request_id, &response)?,
            Start::Prompt(text) => match &state.paused {
                Some(paused) if paused.batch.asked().is_some() => {
                    return Err(busy(
                        "The agent is waiting for your answer to its question (POST /api/sessions/{id}/input) \
                         before a new prompt.",
                    ));
                }
                Some(paused) => {
                    let Some(decision) = decision_word(&text) else {
                        return Err(busy(
                            "The agent is waiting for your decision on a tool call: approve or reject it \
                             (or answer yes, no or approve all) before sending a new prompt.",
                        ));
                    };
                    let first = paused.batch.pending().into_iter().next().unwrap_or_default();
                    apply_decision(state, &first, decision)?;
                    runtime.log.push(AgentEvent::Message { role: Role::User, content: text, delta: false });
                }
                None => {
                    if state.messages.is_empty() {
                        state.messages.push(system_prompt(runtime));
                    }
                    state.messages.push(json!({"role": "user", "content": text}));
                    let model_name = model.as_ref().map_or("none", |model| model.model()).to_string();
                    runtime.log.push(AgentEvent::Init { session_id: runtime.id.clone(), model: model_name });
                    runtime.log.push(AgentEvent::Message { role: Role::User, content: text, delta: false });
                }
            },
        }
        state.running = true;
        runtime.save(state);
        // Under the lock, so a turn that ends at once cannot be overtaken by this.
        hub.set_status(&runtime.id, SessionStatus::Running, 0);
        let stop = CancellationToken::new();
        state.stop = Some(stop.clone());
        (after, stop)
    };
    let turn = Turn {
        hub: hub.clone(),
        runtime: runtime.clone(),
        model,
        workspace: Workspace::new(runtime.folder.clone(), hub.shell_timeout()),
        stop,
    };
    tokio::spawn(turn.run());
    Ok(after)
}

/// What the model sees for a call the user stopped before it ran.
pub const STOPPED_RESULT: &str = "The user stopped the turn; this call was not executed.";

/// Stops the running turn (its task ends it `cancelled`), or ends a turn that
/// waits for a decision or an answer as if every waiting call was turned down.
pub async fn cancel(hub: &Arc<Hub>, runtime: &Arc<SessionRuntime>) -> Result<u64, ApiError> {
    {
        let mut state = runtime.state();
        let after = runtime.log.last_seq();
        if state.running {
            if let Some(stop) = &state.stop {
                stop.cancel();
            }
            return Ok(after);
        }
        if state.paused.is_none() {
            return Err(not_running());
        }
        state.running = true;
        hub.set_status(&runtime.id, SessionStatus::Running, 0);
    }
    let after = runtime.log.last_seq();
    stopped(runtime);
    runtime.end_turn(hub, TurnEnd::ended(ResultStatus::Cancelled)).await;
    Ok(after)
}

/// The turn is over: its calls that did not run are answered as stopped.
fn stopped(runtime: &SessionRuntime) {
    let closed = {
        let mut state = runtime.state();
        state.paused = None;
        let closed = state.close_unanswered(STOPPED_RESULT);
        runtime.save(&state);
        closed
    };
    for tool_id in closed {
        runtime.report_skipped(tool_id, STOPPED_RESULT);
    }
}

fn apply_decision(state: &mut AgentState, tool_id: &str, decision: Decision) -> Result<(), ApiError> {
    let not_pending = || not_pending(format!("Tool call '{tool_id}' is not waiting for a decision."));
    let paused = state.paused.as_mut().ok_or_else(not_pending)?;
    match paused.batch.decide(tool_id, decision) {
        Ok(Some(allowed)) => {
            state.allowed_tools.insert(allowed);
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(DecisionError::NotPending(_)) => Err(not_pending()),
        Err(err) => Err(ApiError::bad_request(err.to_string())),
    }
}

/// Checks the answer against the question being asked; nothing changes unless it fits.
fn apply_answer(state: &mut AgentState, request_id: &str, response: &Value) -> Result<(), ApiError> {
    let not_pending = || not_pending(format!("Question '{request_id}' is not waiting for an answer."));
    let paused = state.paused.as_mut().ok_or_else(not_pending)?;
    if paused.batch.asked() != Some(request_id) {
        return Err(not_pending());
    }
    let asked = paused.calls.get(request_id).map(|call| question::parse(&call.args));
    let Some(Ok(Ok(question))) = asked else { return Err(not_pending()) };
    let answer = question.answer(response).map_err(ApiError::bad_request)?;
    let text = match answer {
        Answer::Given(text) => Some(text),
        Answer::Rejected => None,
    };
    paused.batch.answer(request_id, text, question::REJECTED_ANSWER).map_err(|_| not_pending())
}

/// The question a paused turn is asking, as `pendingInput` shows it.
pub fn pending_input(state: &AgentState) -> Option<Value> {
    let paused = state.paused.as_ref()?;
    let id = paused.batch.asked()?;
    let question = question::parse(&paused.calls.get(id)?.args).ok()?.ok()?;
    Some(json!({
        "requestId": id,
        "inputType": question.input_type,
        "prompt": question.prompt,
        "choices": question.choices,
    }))
}

struct Turn {
    hub: Arc<Hub>,
    runtime: Arc<SessionRuntime>,
    model: Option<Arc<ModelClient>>,
    workspace: Workspace,
    stop: CancellationToken,
}

enum BatchEnd {
    Wait(Vec<String>),
    Ask,
    Cancelled,
    Continue,
}

impl Turn {
    async fn run(self) {
        let end = tokio::select! {
            end = self.drive() => end,
            () = self.stop.cancelled() => {
                // The model's stream or a running command was dropped (and killed) here.
                stopped(&self.runtime);
                TurnEnd::ended(ResultStatus::Cancelled)
            }
        };
        self.runtime.state().stop = None;
        self.runtime.end_turn(&self.hub, end).await;
    }

    fn emit(&self, event: AgentEvent) {
        self.runtime.log.push(event);
    }

    fn fail(&self, code: &str, message: String) -> TurnEnd {
        self.runtime.report_error(code, message);
        TurnEnd::error()
    }

    /// Runs until the turn ends or pauses.
    async fn drive(&self) -> TurnEnd {
        let Some(model) = self.model.clone() else {
            return self.fail("agent_unavailable", NO_MODEL_MESSAGE.to_string());
        };
        let mut completions = 0;
        loop {
            let paused = self.runtime.state().paused.take();
            if let Some(mut paused) = paused {
                match self.work_through(&mut paused).await {
                    BatchEnd::Wait(pending) => {
                        self.runtime.state().paused = Some(paused);
                        return TurnEnd::waiting(pending);
                    }
                    BatchEnd::Ask => {
                        self.runtime.state().paused = Some(paused);
                        return TurnEnd {
                            result: ResultStatus::WaitingInput,
                            pending: None,
                            status: SessionStatus::WaitingInput,
                        };
                    }
                    BatchEnd::Cancelled => return TurnEnd::ended(ResultStatus::Cancelled),
                    BatchEnd::Continue => {}
                }
            }
            if completions == MAX_COMPLETIONS_PER_TURN {
                return self
                    .fail("turn_limit", format!("Stopped after {MAX_COMPLETIONS_PER_TURN} model calls in one turn."));
            }
            completions += 1;
            let (messages, number) = {
                let mut state = self.runtime.state();
                state.completions += 1;
                (state.messages.clone(), state.completions)
            };
            let log = self.runtime.log.clone();
            let reply = model
                .complete(&messages, tool_definitions(), number, |text| {
                    log.push(AgentEvent::Message { role: Role::Assistant, content: text.to_string(), delta: true });
                })
                .await;
            let reply = match reply {
                Ok(reply) => reply,
                Err(message) => return self.fail("model_error", message),
            };
            // Saved with its first tool result, or at the end of the turn.
            self.runtime.state().messages.push(reply.to_message());
            if reply.tool_calls.is_empty() {
                return TurnEnd::ended(ResultStatus::Success);
            }
            let planned = self.plan(reply.tool_calls);
            self.runtime.state().paused = Some(planned);
        }
    }

    /// Checks each call, announces it (`tool_use`), and decides which need the user.
    fn plan(&self, requests: Vec<ToolCallRequest>) -> PausedTurn {
        let yolo = self.hub.session(&self.runtime.id).is_some_and(|session| session.yolo.enabled);
        let allowed = self.runtime.state().allowed_tools.clone();
        let mut calls = HashMap::new();
        let mut new_calls = Vec::new();
        for request in requests {
            if request.name == question::TOOL_NAME {
                let id = request.id.clone();
                let (call, new_call) = self.plan_question(request);
                new_calls.push(new_call);
                calls.insert(id, call);
                continue;
            }
            let tool = Tool::from_name(&request.name);
            let parsed: Result<Value, ToolFailure> = serde_json::from_str(&request.arguments).map_err(|err| {
                ToolFailure::new("invalid_arguments", format!("The arguments are not valid JSON: {err}."))
            });
            let (args, checked) = match (tool, parsed) {
                (None, _) => (
                    json!({}),
                    Err(ToolFailure::new("unknown_tool", format!("There is no tool named '{}'.", request.name))),
                ),
                (Some(_), Err(failure)) => (json!({}), Err(failure)),
                (Some(tool), Ok(args)) => {
                    let checked = self.workspace.precheck(tool, &args);
                    (args, checked)
                }
            };
            let kind = tool.map_or(ToolKind::Other, Tool::kind);
            let (diff, failure) = match checked {
                Ok(diff) => (diff, None),
                Err(failure) => (None, Some(failure)),
            };
            let needs_approval =
                failure.is_none() && kind != ToolKind::Read && !yolo && !allowed.contains(&request.name);
            self.emit(AgentEvent::ToolUse {
                tool_name: request.name.clone(),
                tool_id: request.id.clone(),
                parameters: args.clone(),
                kind,
                diff,
            });
            new_calls.push(NewCall {
                tool_id: request.id.clone(),
                tool_name: request.name.clone(),
                editable: tool.is_some_and(Tool::editable),
                needs_approval,
                asks_user: false,
            });
            calls.insert(request.id, PlannedCall { tool, name: request.name, args, failure });
        }
        PausedTurn { batch: crate::approval::ApprovalBatch::new(new_calls), calls }
    }

    /// A question is announced by its `input_request` when it is asked; only
    /// arguments that are no question at all show as a tool call (with their error).
    fn plan_question(&self, request: ToolCallRequest) -> (PlannedCall, NewCall) {
        let parsed = serde_json::from_str::<Value>(&request.arguments)
            .map_err(|err| ToolFailure::new("invalid_arguments", format!("The arguments are not valid JSON: {err}.")))
            .and_then(|args| question::parse(&args).map(|_| args));
        let (args, failure) = match parsed {
            Ok(args) => (args, None),
            Err(failure) => {
                self.emit(AgentEvent::ToolUse {
                    tool_name: request.name.clone(),
                    tool_id: request.id.clone(),
                    parameters: serde_json::from_str(&request.arguments).unwrap_or_else(|_| json!({})),
                    kind: ToolKind::Other,
                    diff: None,
                });
                (json!({}), Some(failure))
            }
        };
        let new_call = NewCall {
            tool_id: request.id.clone(),
            tool_name: request.name.clone(),
            editable: false,
            needs_approval: false,
            asks_user: failure.is_none(),
        };
        (PlannedCall { tool: None, name: request.name, args, failure }, new_call)
    }

    /// Asks the question (`input_request`), or answers as rejected, with an error
    /// saying why, one the user could not answer.
    fn ask(&self, paused: &mut PausedTurn, tool_id: &str) -> Option<BatchEnd> {
        let parsed = paused.calls.get(tool_id).map(|call| question::parse(&call.args));
        match parsed {
            Some(Ok(Ok(question))) => {
                self.emit(AgentEvent::InputRequest {
                    request_id: tool_id.to_string(),
                    input_type: question.input_type,
                    prompt: question.prompt,
                    choices: question.choices,
                });
                return Some(BatchEnd::Ask);
            }
            Some(Ok(Err(unanswerable))) => self.emit(AgentEvent::Error {
                severity: Severity::Error,
                message: format!(
                    "The agent asked \"{}\", but {}; the question was answered as rejected.",
                    unanswerable.prompt, unanswerable.reason
                ),
                code: Some("invalid_question".into()),
            }),
            _ => {}
        }
        // `step` handed out this question, so it is the one being asked; were it
        // not, answering would fail and the next step would ask it again forever.
        match paused.batch.answer(tool_id, None, question::REJECTED_ANSWER) {
            Ok(()) => None,
            Err(err) => {
                tracing::error!(session = %self.runtime.id, "{err}");
                Some(BatchEnd::Cancelled)
            }
        }
    }

    async fn work_through(&self, paused: &mut PausedTurn) -> BatchEnd {
        loop {
            match paused.batch.step() {
                Step::Run { tool_id, modified_content } => {
                    let call = paused.calls.get(&tool_id).cloned();
                    let result = match call {
                        Some(PlannedCall { failure: Some(failure), .. }) => Err(failure),
                        Some(PlannedCall { tool: Some(tool), args, .. }) => {
                            self.workspace.run(tool, &args, modified_content).await
                        }
                        _ => Err(ToolFailure::new("internal", "The call was lost.")),
                    };
                    self.report(&tool_id, result);
                    paused.batch.finished(&tool_id);
                }
                Step::Skip { tool_id, result, reason } => {
                    let status = if reason == SkipReason::Answered { ToolStatus::Success } else { ToolStatus::Skipped };
                    self.emit(AgentEvent::ToolResult {
                        tool_id: tool_id.clone(),
                        status,
                        output: Some(result.clone()),
                        error: None,
                        diff: None,
                    });
                    self.tool_message(&tool_id, result);
                }
                Step::Wait(pending) => return BatchEnd::Wait(pending),
                Step::Ask(tool_id) => {
                    if let Some(end) = self.ask(paused, &tool_id) {
                        return end;
                    }
                }
                Step::Cancelled => return BatchEnd::Cancelled,
                Step::Continue => return BatchEnd::Continue,
            }
        }
    }

    fn report(&self, tool_id: &str, result: Result<(String, Option<FileDiff>), ToolFailure>) {
        let (event, text) = match result {
            Ok((output, written)) => (
                AgentEvent::ToolResult {
                    tool_id: tool_id.to_string(),
                    status: ToolStatus::Success,
                    output: Some(output.clone()),
                    error: None,
                    diff: written,
                },
                output,
            ),
            Err(failure) => {
                let text = format!("Error ({}): {}", failure.kind, failure.message);
                (
                    AgentEvent::ToolResult {
                        tool_id: tool_id.to_string(),
                        status: ToolStatus::Error,
                        output: None,
                        error: Some(ToolError { kind: failure.kind, message: failure.message }),
                        diff: None,
                    },
                    text,
                )
            }
        };
        self.emit(event);
        self.tool_message(tool_id, text);
    }

    fn tool_message(&self, tool_id: &str, content: String) {
        let mut state = self.runtime.state();
        state.messages.push(json!({"role": "tool", "tool_call_id": tool_id, "content": content}));
        self.runtime.save(&state);
    }
}

/// The workspace tools and `ask_user`, as offered to the model.
/// What the model is told it may call, built once.
fn tool_definitions() -> &'static [Value] {
    static DEFINITIONS: std::sync::LazyLock<Vec<Value>> = std::sync::LazyLock::new(|| {
        let mut definitions = tools::definitions();
        definitions.push(question::definition());
        definitions
    });
    &DEFINITIONS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_words_map_to_decisions() {
        assert_eq!(decision_word("yes"), Some(Decision::Approve));
        assert_eq!(decision_word(" Approve. "), Some(Decision::Approve));
        assert_eq!(decision_word("NO"), Some(Decision::Reject));
        assert_eq!(decision_word("reject"), Some(Decision::Reject));
        assert_eq!(decision_word("approve all"), Some(Decision::ApproveSession));
        assert_eq!(decision_word("yes please delete it"), None);
        assert_eq!(decision_word("approve everything"), None);
    }
}
