//! The built-in agent: a tool loop over an OpenAI-compatible endpoint. Each
//! model turn's tool calls go through the approval state machine; the turn
//! pauses at the first call waiting for the user and resumes on a decision.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use protocol::api::AgentModes;
use protocol::events::{AgentEvent, ResultStatus, Role, ToolKind};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

pub(in crate::agents) mod batch;
mod calls;
pub mod model;
pub mod question;
mod sse;
mod state;

pub use state::{BuiltinState, PausedTurn, PlannedCall};

use crate::agents::live::LiveOutput;
use crate::agents::port::HubPort;
use crate::agents::trail;
use crate::agents::{gate, AgentError, AgentState, BatchItem, Grants, SessionRuntime, Start};
use crate::approval::{ApprovalBatch, BatchError, Decision, DecisionError, Initial, NewCall};
use crate::policy;
use crate::session::{Stop, TurnEnd};
use crate::store::StoreError;
use crate::tools::{self, Tool, ToolFailure, Workspace};
use batch::{AlreadyLogged, Judge, Settled};
use calls::{check, keep_within_review_budget, result_event, CallIds, Checked};
use model::{ModelClient, ToolCallRequest};
use question::Answer;

/// A turn that keeps calling tools is stopped after this many completions.
pub const MAX_COMPLETIONS_PER_TURN: usize = 50;

pub const NO_MODEL_MESSAGE: &str = "No model is configured for the built-in agent. Start the hub with \
     OPENAI_BASE_URL and HUB_MODEL (or --model-url and --model), e.g. an Ollama or llama.cpp server.";

/// The built-in agent of the catalog: the hub's own tool loop over a model
/// endpoint (`None`: no model is configured, so it takes no turn).
pub struct BuiltinAgent {
    model: Option<Arc<ModelClient>>,
}

impl BuiltinAgent {
    pub fn new(model: Option<Arc<ModelClient>>) -> Self {
        Self { model }
    }

    pub fn model(&self) -> Option<&Arc<ModelClient>> {
        self.model.as_ref()
    }
}

impl super::Agent for BuiltinAgent {
    fn begin(&self, hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>, start: Start) -> Result<u64, AgentError> {
        begin(hub, runtime, self.model.clone(), start)
    }

    fn decide_many(
        &self,
        hub: &Arc<dyn HubPort>,
        runtime: &Arc<SessionRuntime>,
        decisions: Vec<BatchItem>,
    ) -> (Vec<Result<(), AgentError>>, Option<u64>) {
        decide_many(hub, runtime, self.model.clone(), decisions)
    }

    fn cancel<'a>(
        &'a self,
        hub: &'a Arc<dyn HubPort>,
        runtime: &'a Arc<SessionRuntime>,
    ) -> BoxFuture<'a, Result<u64, AgentError>> {
        Box::pin(cancel(hub, runtime))
    }

    /// A waiting card is kept, to be decided after the restart. Checked and
    /// stopped under the session's lock, so a turn that pauses meanwhile keeps it.
    fn stop_running(&self, _hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>) {
        let state = runtime.state();
        if let (true, Some(stop)) = (state.machine.is_running(), &state.agent.builtin.stop) {
            runtime.stop_checkpoint();
            stop.cancel();
        }
    }

    fn set_mode<'a>(&'a self, _: &'a SessionRuntime, _: String) -> BoxFuture<'a, Result<AgentModes, AgentError>> {
        Box::pin(std::future::ready(Err(AgentError::Invalid(
            "The built-in agent has no modes: YOLO is its only switch.".into(),
        ))))
    }
}

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
        runtime.root.display()
    )})
}

/// Checks and records the start of a turn, then runs it in a task of its own.
/// Returns the last seq before the turn's first event (the reader starts after it).
pub fn begin(
    hub: &Arc<dyn HubPort>,
    runtime: &Arc<SessionRuntime>,
    model: Option<Arc<ModelClient>>,
    start: Start,
) -> Result<u64, AgentError> {
    let mut guard = runtime.state();
    let refused = |refusal| AgentError::refused(&runtime.id, refusal);
    guard.machine.admit().map_err(refused)?;
    if !matches!(start, Start::AgentOption { .. }) {
        guard.machine.check(start.starting()).map_err(refused)?;
    }
    let after = runtime.log.last_seq();
    {
        let state = &mut guard.agent;
        match start {
            Start::Decide { tool_id, decision } => {
                let judge = |call: &PlannedCall, grants: Grants| judge_now(&**hub, runtime, call, grants);
                apply_decision(&judge, runtime, state, &tool_id, decision)?
            }
            Start::Answer { request_id, response } => apply_answer(state, &request_id, &response)?,
            Start::TimeOut { after_secs, .. } => time_out(runtime, state, after_secs)?,
            Start::AgentOption { .. } => {
                return Err(AgentError::Invalid(
                    "decision agent_option answers an ACP agent's own option; the built-in agent has none: use \
                     approve, reject, approve_session, approve_always or edit."
                        .into(),
                ))
            }
            Start::Prompt(text) => match &state.builtin.paused {
                // Let through by the machine only as a decision word while a call waits.
                Some(paused) => {
                    let Some(decision) = decision_word(&text) else {
                        return Err(refused(crate::session::Refusal::WaitingDecision));
                    };
                    let first = paused.batch.pending().into_iter().next().unwrap_or_default();
                    let judge = |call: &PlannedCall, grants: Grants| judge_now(&**hub, runtime, call, grants);
                    apply_decision(&judge, runtime, state, &first, decision)?;
                    runtime.log.push(AgentEvent::Message { role: Role::User, content: text, delta: false });
                }
                None => {
                    // A new turn: no grant of an earlier one carries over.
                    state.turn_tools.clear();
                    if state.builtin.messages.is_empty() {
                        state.builtin.messages.push(system_prompt(runtime));
                    }
                    state.builtin.messages.push(json!({"role": "user", "content": text}));
                    let model_name = model.as_ref().map_or("none", |model| model.model()).to_string();
                    runtime.log.push(AgentEvent::Init { session_id: runtime.id.clone(), model: model_name });
                    runtime.log.push(AgentEvent::Message { role: Role::User, content: text, delta: false });
                }
            },
        }
    }
    run_turn(hub, runtime, model, guard);
    Ok(after)
}

/// Decides several waiting calls at once (the inbox's batch), each as its own
/// decision would be, under one lock; the turn resumes once. Returns each
/// decision's result, in order, and the last seq before the turn's first
/// event when one started.
pub fn decide_many(
    hub: &Arc<dyn HubPort>,
    runtime: &Arc<SessionRuntime>,
    model: Option<Arc<ModelClient>>,
    decisions: Vec<BatchItem>,
) -> (Vec<Result<(), AgentError>>, Option<u64>) {
    let mut guard = runtime.state();
    let after = runtime.log.last_seq();
    let judge = |call: &PlannedCall, grants: Grants| judge_now(&**hub, runtime, call, grants);
    let results: Vec<Result<(), AgentError>> = decisions
        .into_iter()
        .map(|item| {
            let starting = crate::session::Starting::Decide(&item.tool_id);
            guard.machine.check(starting).map_err(|refusal| AgentError::refused(&runtime.id, refusal))?;
            // It waited when the batch began (the machine says so): a grant or
            // rule an earlier decision of this batch gave may have let it go,
            // but the user decided it too, and that decision is the one taken.
            let held = guard.agent.builtin.paused.as_mut().is_some_and(|paused| paused.batch.wait_again(&item.tool_id));
            let decided = guard
                .agent
                .check_seen(&item)
                .and_then(|()| apply_decision(&judge, runtime, &mut guard.agent, &item.tool_id, item.decision));
            if let (Err(_), true, Some(paused)) = (&decided, held, guard.agent.builtin.paused.as_mut()) {
                // Refused: the call goes back to where the earlier grant had let it go.
                paused.batch.reopen(&item.tool_id);
            }
            decided
        })
        .collect();
    if !results.iter().any(Result::is_ok) {
        return (results, None);
    }
    run_turn(hub, runtime, model, guard);
    (results, Some(after))
}

/// Starts the turn the session's machine admitted (its start is recorded in
/// `guard`), in a task of its own.
fn run_turn(
    hub: &Arc<dyn HubPort>,
    runtime: &Arc<SessionRuntime>,
    model: Option<Arc<ModelClient>>,
    mut guard: std::sync::MutexGuard<'_, crate::agents::SessionState>,
) {
    let stop = CancellationToken::new();
    guard.agent.builtin.stop = Some(stop.clone());
    // Under the lock, so a turn that ends at once cannot be overtaken by this.
    let number = runtime.start_turn(&**hub, &mut guard);
    drop(guard);
    let turn = Turn {
        hub: hub.clone(),
        runtime: runtime.clone(),
        model,
        workspace: Workspace::new(runtime.root.clone(), hub.shell_timeout()),
        stop,
    };
    super::spawn_turn(hub, runtime, number, turn.run());
}

/// Nobody decided in time: every waiting call and the question asked are
/// answered "no decision" (recorded `timed_out` by the hub); the turn goes on.
fn time_out(runtime: &SessionRuntime, state: &mut AgentState, after_secs: u64) -> Result<(), AgentError> {
    let paused = state.builtin.paused.as_mut().ok_or_else(|| AgentError::NotPending("Nothing waits.".into()))?;
    let call_result = crate::approval::timed_out_result(after_secs, false);
    let question_result = crate::approval::timed_out_result(after_secs, true);
    let answered = paused.batch.time_out(&call_result, &question_result);
    if answered.is_empty() {
        return Err(AgentError::NotPending("Nothing waits.".into()));
    }
    for id in answered {
        let Some(call) = paused.calls.get(&id).filter(|call| call.name != question::TOOL_NAME) else { continue };
        runtime.audit_decision(
            &id,
            &call.name,
            &call.args,
            protocol::audit::AuditDecision::TimedOut,
            &trail::Authority::Hub,
        );
    }
    Ok(())
}

/// What the model sees for a call the user stopped before it ran.
pub const STOPPED_RESULT: &str = "The user stopped the turn; this call was not executed.";

/// Stops the running turn (its task ends it `cancelled`), or ends a turn that
/// waits for a decision or an answer as if every waiting call was turned down.
pub async fn cancel(hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>) -> Result<u64, AgentError> {
    {
        let mut state = runtime.state();
        let after = runtime.log.last_seq();
        match state.machine.stop().map_err(|refusal| AgentError::refused(&runtime.id, refusal))? {
            Stop::Running => {
                runtime.stop_checkpoint();
                if let Some(stop) = &state.agent.builtin.stop {
                    stop.cancel();
                }
                return Ok(after);
            }
            Stop::Waiting => runtime.reopen(&**hub, &mut state),
        };
    }
    let after = runtime.log.last_seq();
    stopped(runtime);
    runtime.end_turn(hub, TurnEnd::ended(ResultStatus::Cancelled)).await;
    Ok(after)
}

/// The turn is over: its calls that did not run are answered as stopped.
fn stopped(runtime: &SessionRuntime) {
    runtime.audit_stopped_cards();
    runtime.close_batch(STOPPED_RESULT);
}

/// The gate on one of the session's calls, with the hub's rules, YOLO and
/// protected paths as they are at this instant and the session's `grants`.
pub(crate) fn judge_now(
    hub: &dyn HubPort,
    runtime: &SessionRuntime,
    call: &PlannedCall,
    grants: Grants,
) -> gate::Ruling {
    let yolo = hub.yolo(&runtime.id);
    let rules = hub.policy_set(&runtime.folder);
    let verdict =
        rules.evaluate(&policy::ToolCall { name: &call.name, args: &call.args }, policy::Mode::from_yolo(yolo));
    gate::start(gate::Facts {
        refused: call.failure.is_some(),
        read_only: call.tool.is_some_and(|tool| tool.kind() == ToolKind::Read),
        granted: grants.session.contains(&call.name),
        turn_granted: grants.turn.contains(&call.name),
        protected: runtime.touches_settings(&call.name, &call.args),
        yolo,
        verdict: &verdict,
    })
}

/// The user's decision on one waiting call; `judge` is the gate as things
/// stand, asked of the other waiting calls after a grant or a saved rule.
pub(crate) fn apply_decision(
    judge: Judge,
    runtime: &SessionRuntime,
    state: &mut AgentState,
    tool_id: &str,
    decision: Decision,
) -> Result<(), AgentError> {
    let not_pending = || AgentError::call_not_pending(tool_id);
    let paused = state.builtin.paused.as_mut().ok_or_else(not_pending)?;
    if decision == Decision::ApproveUnsandboxed && paused.batch.pending().iter().any(|id| id == tool_id) {
        let command = paused.calls.get(tool_id).and_then(|call| call.args["command"].as_str().map(str::to_string));
        if !command.is_some_and(|command| refused_before(runtime, tool_id, &command)) {
            return Err(AgentError::Invalid(
                "approve_unsandboxed is for a command the sandbox refused before in this session; it did not \
                 refuse this one."
                    .into(),
            ));
        }
    }
    let waiting = paused.batch.pending();
    match paused.batch.decide(tool_id, decision.clone()) {
        Ok(allowed) => {
            let still = paused.batch.pending();
            for id in waiting.iter().filter(|id| !still.contains(id)) {
                let Some((verdict, by)) = trail::of_user_decision(&decision, id == tool_id) else { continue };
                if let Some(call) = paused.calls.get(id) {
                    runtime.audit_decision(id, &call.name, &call.args, verdict, &by);
                }
            }
            let loosens = allowed.is_some() || decision == Decision::ApproveAlways;
            if let Some(grant) = allowed {
                state.grant(grant);
            }
            if loosens {
                // The grant or the new rule may let other waiting calls run.
                let paused = state.builtin.paused.as_mut().ok_or_else(not_pending)?;
                let (calls, grants) =
                    (&paused.calls, Grants { session: &state.allowed_tools, turn: &state.turn_tools });
                gate::reopen_allowed(&mut paused.batch, |id| calls.get(id).map(|call| judge(call, grants)));
            }
            Ok(())
        }
        Err(DecisionError::NotPending(_)) => Err(not_pending()),
        Err(err) => Err(AgentError::Invalid(err.to_string())),
    }
}

/// Checks the answer against the question being asked; nothing changes unless it fits.
fn apply_answer(state: &mut AgentState, request_id: &str, response: &Value) -> Result<(), AgentError> {
    let not_pending = || AgentError::question_not_pending(request_id);
    let paused = state.builtin.paused.as_mut().ok_or_else(not_pending)?;
    if paused.batch.asked() != Some(request_id) {
        return Err(not_pending());
    }
    let asked = paused.calls.get(request_id).map(|call| question::parse(&call.args));
    let Some(Ok(Ok(question))) = asked else { return Err(not_pending()) };
    let answer = question.answer(response).map_err(AgentError::Invalid)?;
    let text = match answer {
        Answer::Given(text) => Some(text),
        Answer::Rejected => None,
    };
    paused.batch.answer(request_id, text, question::REJECTED_ANSWER).map_err(|_| not_pending())
}

/// The question a paused turn is asking, as `pendingInput` shows it.
pub fn pending_input(state: &AgentState) -> Option<Value> {
    let paused = state.builtin.paused.as_ref()?;
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
    hub: Arc<dyn HubPort>,
    runtime: Arc<SessionRuntime>,
    model: Option<Arc<ModelClient>>,
    workspace: Workspace,
    stop: CancellationToken,
}

/// Why a turn could not go on: a bug in how it drove its batch, reported to the
/// user as an `internal` error instead of a panic that would wedge the session.
#[derive(Debug, thiserror::Error)]
enum TurnError {
    #[error(transparent)]
    Batch(#[from] BatchError),
    #[error("tool call {0} was handed out to run but its plan is gone")]
    Lost(String),
    /// The call's running state could not be saved, so it did not run.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the model sees for a call that was not run because its running state
/// could not be saved (write-ahead).
pub const STORE_FAILED_RESULT: &str = "The hub could not save its state, so this call was not executed.";

impl Turn {
    async fn run(self) {
        let end = tokio::select! {
            // A turn stopped before it began (during its checkpoint) never asks the model.
            biased;
            () = self.stop.cancelled() => {
                // The model's stream or a running command was dropped (and killed) here.
                let has_batch = self.runtime.state().agent.builtin.paused.is_some();
                match self.hub.shutdown_token().is_cancelled() && has_batch {
                    // Shutting down: as after a crash, the running call is reported
                    // interrupted and the cards still waiting stay for the restart.
                    true => self.runtime.recover_batch().unwrap_or_else(TurnEnd::error),
                    false => {
                        stopped(&self.runtime);
                        TurnEnd::ended(ResultStatus::Cancelled)
                    }
                }
            }
            end = self.drive() => end.unwrap_or_else(|err| match err {
                TurnError::Store(err) => {
                    self.runtime.close_batch(STORE_FAILED_RESULT);
                    self.runtime.report_store_failed(&err);
                    TurnEnd::error()
                }
                err => self.fail("internal", format!("The turn stopped on an internal error: {err}.")),
            }),
        };
        self.runtime.state().agent.builtin.stop = None;
        self.runtime.end_turn(&self.hub, end).await;
    }

    fn emit(&self, event: AgentEvent) {
        self.runtime.log.push(event);
    }

    fn fail(&self, code: &str, message: String) -> TurnEnd {
        self.runtime.report_error(code, message);
        // Nothing of a failed turn is left to run or wait.
        self.runtime.close_batch(STOPPED_RESULT);
        TurnEnd::error()
    }

    /// Runs until the turn ends or pauses.
    async fn drive(&self) -> Result<TurnEnd, TurnError> {
        let Some(model) = self.model.clone() else {
            return Ok(self.fail("agent_unavailable", NO_MODEL_MESSAGE.to_string()));
        };
        let mut completions = 0;
        loop {
            match self.work_through().await? {
                Settled::Wait(pending) => return Ok(TurnEnd::waiting(pending)),
                Settled::Ask(request_id) => return Ok(TurnEnd::asking(request_id)),
                Settled::Cancelled => {
                    self.runtime.close_batch(STOPPED_RESULT);
                    return Ok(TurnEnd::ended(ResultStatus::Cancelled));
                }
                Settled::Run { tool_id, .. } => return Err(TurnError::Lost(tool_id)),
                Settled::Continue => {
                    // Saved: a finished batch left on disk would be taken, after a
                    // crash, for the turn the next reply's calls belong to.
                    let mut state = self.runtime.state();
                    if state.agent.builtin.paused.take().is_some() {
                        self.runtime.save(&state);
                    }
                }
            }
            if completions == MAX_COMPLETIONS_PER_TURN {
                return Ok(self
                    .fail("turn_limit", format!("Stopped after {MAX_COMPLETIONS_PER_TURN} model calls in one turn.")));
            }
            completions += 1;
            let (messages, number) = {
                let mut state = self.runtime.state();
                state.agent.builtin.completions += 1;
                (state.agent.builtin.messages.clone(), state.agent.builtin.completions)
            };
            let log = self.runtime.log.clone();
            let reply = model
                .complete(&messages, tool_definitions(), number, |text| {
                    log.push(AgentEvent::Message { role: Role::Assistant, content: text.to_string(), delta: true });
                })
                .await;
            let reply = match reply {
                Ok(reply) => reply,
                Err(err) => return Ok(self.fail(err.code(), err.to_string())),
            };
            // Checked before the session is locked: an edit's check reads its file.
            let checked = self.check_calls(&reply.tool_calls).await;
            let mut state = self.runtime.state();
            state.agent.builtin.messages.push(reply.to_message());
            if reply.tool_calls.is_empty() {
                // Saved at the end of the turn.
                return Ok(TurnEnd::ended(ResultStatus::Success));
            }
            let (planned, announced) = self.plan(&state.agent, reply.tool_calls, checked, number)?;
            // Announced, then saved (one queue, in order): a saved batch always has
            // its calls' `tool_use`, so a card restored after a crash can show them.
            for event in announced {
                self.emit(event);
            }
            state.agent.builtin.paused = Some(planned);
            self.runtime.save(&state);
        }
    }

    /// Checks each call, gives it the hub's id, and decides which need the user.
    /// Returns the batch and the events that announce its calls (`tool_use`).
    fn plan(
        &self,
        state: &AgentState,
        requests: Vec<ToolCallRequest>,
        checked: Vec<(Checked, policy::Verdict, bool)>,
        completion: usize,
    ) -> Result<(PausedTurn, Vec<AgentEvent>), TurnError> {
        // The reply itself is the conversation's last message.
        let earlier = &state.builtin.messages[..state.builtin.messages.len().saturating_sub(1)];
        let mut ids = CallIds::new(earlier, &self.runtime.log, completion);
        let mut calls = HashMap::new();
        let mut new_calls = Vec::new();
        let mut announced = Vec::new();
        let mut decided = Vec::new();
        for (request, (checked, verdict, yolo)) in requests.into_iter().zip(checked) {
            let protected = self.runtime.touches_settings(&request.name, &checked.args);
            let (tool_id, model_id) = ids.assign(&request.id);
            if request.name == question::TOOL_NAME {
                let (mut call, new_call, announce) = self.plan_question(request, tool_id.clone());
                call.model_id = model_id;
                announced.extend(announce);
                new_calls.push(new_call);
                calls.insert(tool_id, call);
                continue;
            }
            let Checked { tool, args, diff, failure } = checked;
            let kind = tool.map_or(ToolKind::Other, Tool::kind);
            let start = gate::start(gate::Facts {
                refused: failure.is_some(),
                read_only: kind == ToolKind::Read,
                granted: state.allowed_tools.contains(&request.name),
                turn_granted: state.turn_tools.contains(&request.name),
                protected,
                yolo,
                verdict: &verdict,
            });
            announced.push(AgentEvent::ToolUse {
                tool_name: request.name.clone(),
                tool_id: tool_id.clone(),
                parameters: args.clone(),
                kind,
                diff,
                policy: start.note,
            });
            // A call the gate lets run is judged (and recorded) again when it
            // starts; one it denies never starts, so it is recorded now.
            if let (Initial::Denied(_), Some((how, by))) = (&start.initial, start.decided) {
                decided.push((tool_id.clone(), request.name.clone(), args.clone(), how, by));
            }
            new_calls.push(NewCall {
                tool_id: tool_id.clone(),
                tool_name: request.name.clone(),
                editable: tool.is_some_and(Tool::editable),
                initial: start.initial,
            });
            calls.insert(tool_id, PlannedCall { model_id, tool, name: request.name, args, failure });
        }
        let batch = ApprovalBatch::new(new_calls)?;
        for (tool_id, name, args, how, by) in decided {
            self.runtime.audit_decision(&tool_id, &name, &args, how, &by);
        }
        Ok((PausedTurn { batch, calls }, announced))
    }

    /// Each call's arguments and paths checked (an edit's diff made) and judged
    /// by the folder's rules, off the async workers: a check may read a file of
    /// up to 8 MiB, and the rules may need their files read again. Each call
    /// comes with the mode it was judged in.
    async fn check_calls(&self, requests: &[ToolCallRequest]) -> Vec<(Checked, policy::Verdict, bool)> {
        let workspace = self.workspace.clone();
        let owned = requests.to_vec();
        let count = requests.len();
        let (hub, folder, session) = (self.hub.clone(), self.runtime.folder.clone(), self.runtime.id.clone());
        tokio::task::spawn_blocking(move || {
            let rules = hub.policy_set(&folder);
            let yolo = hub.yolo(&session);
            let mode = policy::Mode::from_yolo(yolo);
            let mut review_bytes = 0;
            owned
                .iter()
                .map(|request| {
                    let mut checked = check(&workspace, request);
                    keep_within_review_budget(&mut checked, &mut review_bytes);
                    let verdict = rules.evaluate(&policy::ToolCall { name: &request.name, args: &checked.args }, mode);
                    (checked, verdict, yolo)
                })
                .collect()
        })
        .await
        .unwrap_or_else(|err| {
            let failure = ToolFailure::new("internal", format!("The call could not be checked: {err}"));
            (0..count)
                .map(|_| {
                    let checked = Checked { tool: None, args: json!({}), diff: None, failure: Some(failure.clone()) };
                    (checked, policy::Verdict::default(), false)
                })
                .collect()
        })
    }

    /// A question is announced by its `input_request` when it is asked; only
    /// arguments that are no question at all show as a tool call (with their error).
    fn plan_question(&self, request: ToolCallRequest, tool_id: String) -> (PlannedCall, NewCall, Option<AgentEvent>) {
        let parsed = serde_json::from_str::<Value>(&request.arguments)
            .map_err(|err| ToolFailure::new("invalid_arguments", format!("The arguments are not valid JSON: {err}.")))
            .and_then(|args| question::parse(&args).map(|_| args));
        let (args, failure, announce) = match parsed {
            Ok(args) => (args, None, None),
            Err(failure) => {
                let announce = AgentEvent::ToolUse {
                    tool_name: request.name.clone(),
                    tool_id: tool_id.clone(),
                    parameters: serde_json::from_str(&request.arguments).unwrap_or_else(|_| json!({})),
                    kind: ToolKind::Other,
                    diff: None,
                    policy: None,
                };
                (json!({}), Some(failure), Some(announce))
            }
        };
        let new_call = NewCall {
            tool_id,
            tool_name: request.name.clone(),
            editable: false,
            initial: if failure.is_none() { Initial::Asking } else { Initial::Cleared },
        };
        (PlannedCall { model_id: None, tool: None, name: request.name, args, failure }, new_call, announce)
    }

    /// Runs the batch's calls in order until it pauses or ends. Each call is
    /// on disk as running before it runs (write-ahead), so a crash never runs it twice.
    async fn work_through(&self) -> Result<Settled, TurnError> {
        loop {
            // Off the async workers: the gate may read the rules' files and the store.
            let (hub, runtime) = (self.hub.clone(), self.runtime.clone());
            let settled = tokio::task::spawn_blocking(move || {
                let judge = |call: &PlannedCall, grants: Grants| judge_now(&hub, &runtime, call, grants);
                runtime.settle(&AlreadyLogged::default(), Some(&judge))
            })
            .await
            .map_err(|err| TurnError::Lost(format!("(the gate's task failed: {err})")))?;
            let (tool_id, modified_content, network, unsandboxed, unseen) = match settled? {
                Settled::Run { tool_id, modified_content, network, unsandboxed, unseen } => {
                    (tool_id, modified_content, network, unsandboxed, unseen)
                }
                other => return Ok(other),
            };
            // Write-ahead: the call runs only once it is on disk as running.
            if let Err(err) = self.runtime.flush().await {
                if let Some(paused) = self.runtime.state().agent.builtin.paused.as_mut() {
                    paused.batch.not_started(&tool_id)?;
                }
                return Err(err.into());
            }
            let call = {
                let state = self.runtime.state();
                state.agent.builtin.paused.as_ref().and_then(|paused| paused.calls.get(&tool_id).cloned())
            };
            let result = match call.map(|call| if unseen { calls::as_judged(call) } else { call }) {
                Some(PlannedCall { failure: Some(failure), .. }) => Err(failure),
                Some(PlannedCall { tool: Some(tool), args, .. }) => {
                    let mut terms = self.hub.sandbox_terms(&self.runtime.id);
                    // The user approved this one command with the network.
                    terms.network |= network;
                    if unsandboxed {
                        // The user's answer to the sandbox refusing this very command.
                        terms.sandbox = crate::sandbox::Sandbox::off();
                    }
                    let shown = Arc::new(LiveOutput::new(self.runtime.log.clone(), &tool_id));
                    let live: tools::shell::Live = Arc::new(move |stream, piece: &[u8]| shown.push(stream, piece));
                    self.workspace.run(tool, &args, modified_content, &terms, Some(live)).await
                }
                _ => return Err(TurnError::Lost(tool_id)),
            };
            let (event, text) = result_event(&tool_id, result);
            self.runtime.finish(&tool_id, event, text)?;
        }
    }
}

/// Whether the sandbox refused `command` in an earlier call of the session
/// (its result says so): the only command the user may run outside it. The
/// hub tells a refusal from the command's output (a command could print the
/// words itself), so the card says "looked like": the user decides. Only
/// what is still in memory is read (this runs under the session's lock).
fn refused_before(runtime: &SessionRuntime, tool_id: &str, command: &str) -> bool {
    let events = runtime.log.recent();
    let earlier: std::collections::HashSet<&str> = events
        .iter()
        .filter_map(|event| match &event.event {
            AgentEvent::ToolUse { tool_id: id, tool_name, parameters, .. }
                if id != tool_id
                    && tool_name == Tool::RunShellCommand.name()
                    && parameters["command"].as_str() == Some(command) =>
            {
                Some(id.as_str())
            }
            _ => None,
        })
        .collect();
    events.iter().any(|event| match &event.event {
        AgentEvent::ToolResult { tool_id: id, output: Some(output), .. } => {
            earlier.contains(id.as_str()) && crate::sandbox::refusal_said(output)
        }
        _ => false,
    })
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
