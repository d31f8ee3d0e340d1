//! Agents and their turns. A session's runtime holds its event log and the
//! agent's state; a turn runs in a task of its own, so a closed connection
//! neither stops nor corrupts it.

pub mod acp;
pub mod builtin;
pub mod log;
pub mod model;
pub mod question;
mod sse;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use app::events::{AgentEvent, ResultStatus, Severity};
use app::types::SessionStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ApprovalBatch;
use crate::error::ApiError;
use crate::hub::Hub;
use crate::store::Store;
use crate::tools::{Tool, ToolFailure};
use log::EventLog;

pub const INTERRUPTED_MESSAGE: &str = "The hub stopped while this turn was running. Nothing more of it \
     was done, and calls it had not finished were not run again. Send a new prompt to go on.";

/// A call of a paused model turn, as the runtime will run it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedCall {
    pub tool: Option<Tool>,
    pub name: String,
    pub args: Value,
    /// Found before any card (bad arguments, path outside, no match): reported instead of running.
    pub failure: Option<ToolFailure>,
}

/// A model turn waiting for the user's decisions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PausedTurn {
    pub batch: ApprovalBatch,
    pub calls: HashMap<String, PlannedCall>,
}

/// What the built-in agent needs to go on, saved whole to the store.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AgentState {
    /// A turn task owns the session (never saved: no task survives a restart).
    #[serde(skip)]
    pub running: bool,
    /// The conversation in Chat Completions form.
    pub messages: Vec<Value>,
    pub paused: Option<PausedTurn>,
    /// Tools approved "for this session".
    pub allowed_tools: HashSet<String>,
    /// Completions requested so far (names made-up call ids).
    pub completions: usize,
    /// An ACP agent's side of the session.
    #[serde(default)]
    pub acp: acp::AcpState,
    /// Stops the built-in agent's running turn (the Stop button).
    #[serde(skip)]
    pub stop: Option<tokio_util::sync::CancellationToken>,
}

/// How a turn begins: a new prompt, a decision on a paused one, or the answer
/// to the agent's question.
pub enum Start {
    Prompt(String),
    Decide { tool_id: String, decision: crate::approval::Decision },
    Answer { request_id: String, response: Value },
}

/// Starts or resumes a turn with the hub's agent. Returns the last seq before
/// the turn's first event (the reader starts after it).
pub fn begin(hub: &Arc<Hub>, runtime: &Arc<SessionRuntime>, start: Start) -> Result<u64, ApiError> {
    match hub.acp() {
        Some(agent) => agent.begin(hub, runtime, start),
        None => builtin::begin(hub, runtime, start),
    }
}

/// Stops the running or waiting turn (the Stop button). Returns the last seq
/// before the turn's last events.
pub async fn cancel(hub: &Arc<Hub>, runtime: &Arc<SessionRuntime>) -> Result<u64, ApiError> {
    match hub.acp() {
        Some(agent) => agent.cancel(hub, runtime),
        None => builtin::cancel(hub, runtime).await,
    }
}

/// 409 `session_busy`: the session cannot take this now.
pub(crate) fn busy(message: &str) -> ApiError {
    ApiError::new(axum::http::StatusCode::CONFLICT, "session_busy", message)
}

/// 409 `not_running`: Stop, with nothing to stop.
pub(crate) fn not_running() -> ApiError {
    ApiError::new(axum::http::StatusCode::CONFLICT, "not_running", "No turn is running in this session.")
}

/// 409 `not_pending`: nothing with that id waits for the user.
pub(crate) fn not_pending(message: String) -> ApiError {
    ApiError::new(axum::http::StatusCode::CONFLICT, "not_pending", message)
}

/// The ids of the calls waiting for the user's decision, first shown first.
pub fn pending_calls(state: &AgentState) -> Vec<String> {
    match (&state.paused, &state.acp.waiting) {
        (Some(paused), _) => paused.batch.pending(),
        (None, Some(waiting)) => vec![waiting.tool_id.clone()],
        (None, None) => Vec::new(),
    }
}

/// How a turn ended or paused: its `result` event and the session's new status.
pub struct TurnEnd {
    pub result: ResultStatus,
    pub pending: Option<Vec<String>>,
    pub status: SessionStatus,
}

impl TurnEnd {
    pub fn error() -> Self {
        Self { result: ResultStatus::Error, pending: None, status: SessionStatus::Error }
    }

    pub fn waiting(pending: Vec<String>) -> Self {
        Self { result: ResultStatus::WaitingApproval, pending: Some(pending), status: SessionStatus::WaitingApproval }
    }

    /// A turn that ended by itself: success and cancelled leave the session idle.
    pub fn ended(result: ResultStatus) -> Self {
        let status = if result == ResultStatus::Error { SessionStatus::Error } else { SessionStatus::Idle };
        Self { result, pending: None, status }
    }
}

impl AgentState {
    /// The latest model reply that called tools: its place in the conversation,
    /// and the ids of its calls that have no result yet.
    fn unanswered_calls(&self) -> Option<(usize, Vec<String>)> {
        let index = self.messages.iter().rposition(|m| m["role"] == "assistant" && m.get("tool_calls").is_some())?;
        let answered: HashSet<&str> = self.messages[index + 1..]
            .iter()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| m["tool_call_id"].as_str())
            .collect();
        let open = self.messages[index]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|call| call["id"].as_str())
            .filter(|id| !answered.contains(id))
            .map(str::to_string)
            .collect();
        Some((index, open))
    }

    /// Answers every call of the latest model reply that has no result yet with
    /// `text`, so the conversation stays one the model accepts; returns their ids.
    pub fn close_unanswered(&mut self, text: &str) -> Vec<String> {
        let open = self.unanswered_calls().map(|(_, open)| open).unwrap_or_default();
        for id in &open {
            self.messages.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": text}));
        }
        open
    }

    /// After a restart cut a running turn: forget the turn's unfinished calls, and
    /// drop a model reply whose tool calls did not all get results, so the
    /// conversation is one the model accepts and nothing half-done is resumed.
    pub fn recover_interrupted(&mut self) {
        self.paused = None;
        if let Some((index, open)) = self.unanswered_calls() {
            if !open.is_empty() {
                self.messages.truncate(index);
            }
        }
    }
}

pub struct SessionRuntime {
    pub id: String,
    pub folder: PathBuf,
    pub log: Arc<EventLog>,
    state: Mutex<AgentState>,
    store: Option<Arc<Store>>,
}

impl SessionRuntime {
    /// A session's runtime, picking up its events and agent state from the store.
    pub fn load(id: String, folder: PathBuf, store: Option<Arc<Store>>) -> Self {
        let Some(saved) = &store else { return Self::fresh(id, folder, None) };
        let events = saved.events(&id).unwrap_or_else(|err| {
            tracing::error!("{err}");
            Vec::new()
        });
        let state = saved
            .agent_state(&id)
            .and_then(|text| text.map(|text| serde_json::from_str(&text).map_err(|e| e.to_string())).transpose())
            .unwrap_or_else(|err| {
                tracing::error!(session = %id, "the agent state could not be read, starting afresh: {err}");
                None
            })
            .unwrap_or_default();
        Self::with(id, folder, store, events, state)
    }

    /// The runtime of a session just created: the store has nothing of it yet.
    pub fn fresh(id: String, folder: PathBuf, store: Option<Arc<Store>>) -> Self {
        Self::with(id, folder, store, Vec::new(), AgentState::default())
    }

    fn with(
        id: String,
        folder: PathBuf,
        store: Option<Arc<Store>>,
        events: Vec<app::events::SeqEvent>,
        state: AgentState,
    ) -> Self {
        let sink = store.clone().map(|store| (store, id.clone()));
        Self { log: Arc::new(EventLog::restored(events, sink)), id, folder, state: Mutex::new(state), store }
    }

    pub fn state(&self) -> MutexGuard<'_, AgentState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Queues the agent state for saving (call with the state locked, so saves keep their order).
    pub fn save(&self, state: &AgentState) {
        if let Some(store) = &self.store {
            match serde_json::to_string(state) {
                Ok(text) => store.save_agent_state(&self.id, text),
                Err(err) => tracing::error!("agent state not saved: {err}"),
            }
        }
    }

    /// After a restart: the session's status as its log left it, and how many
    /// calls wait. A turn the restart cut (no closing `result`, or a wait whose
    /// calls were not saved) is closed with an error; nothing of it is resumed.
    pub fn recover(&self) -> (SessionStatus, usize) {
        let mut state = self.state();
        let waiting = state.paused.as_ref().map_or(0, |paused| paused.batch.pending().len());
        match self.log.last() {
            None => return (SessionStatus::Idle, 0),
            Some(AgentEvent::Result { status, .. }) => match status {
                ResultStatus::Success | ResultStatus::Cancelled => return (SessionStatus::Idle, 0),
                ResultStatus::Error => return (SessionStatus::Error, 0),
                ResultStatus::WaitingApproval if waiting > 0 => return (SessionStatus::WaitingApproval, waiting),
                ResultStatus::WaitingInput => return (SessionStatus::WaitingInput, 0),
                ResultStatus::WaitingApproval => {}
            },
            Some(_) => {}
        }
        state.recover_interrupted();
        self.save(&state);
        self.log.push(AgentEvent::Error {
            severity: Severity::Error,
            message: INTERRUPTED_MESSAGE.to_string(),
            code: Some("interrupted".into()),
        });
        self.log.push(AgentEvent::Result { status: ResultStatus::Error, pending: None });
        (SessionStatus::Error, 0)
    }

    /// Closes or pauses the running turn with its `result`.
    pub async fn end_turn(&self, hub: &Hub, end: TurnEnd) {
        let pending_count = end.pending.as_ref().map_or(0, Vec::len);
        // The pause (or end) is on disk before anyone can see it and act on it…
        let ahead = hub.save_status_ahead(&self.id, end.status, pending_count);
        self.save(&self.state());
        self.log.append_unpublished(AgentEvent::Result { status: end.result, pending: end.pending });
        self.flush().await;
        // …and the session is free, its status recorded, the moment the result
        // shows: a client that reads it and prompts or asks at once sees it done.
        {
            let mut state = self.state();
            state.running = false;
            if let Some(ahead) = &ahead {
                hub.take_status(ahead);
            }
            self.log.publish();
        }
        hub.projects_changed();
    }

    /// Reports a call that did not run, and why (`tool_result` `skipped`).
    pub fn report_skipped(&self, tool_id: String, why: &str) {
        self.log.push(AgentEvent::ToolResult {
            tool_id,
            status: app::events::ToolStatus::Skipped,
            output: Some(why.to_string()),
            error: None,
            diff: None,
        });
    }

    /// Reports an error (with a machine-readable code) as the turn's event.
    pub fn report_error(&self, code: &str, message: String) {
        self.log.push(AgentEvent::Error { severity: Severity::Error, message, code: Some(code.to_string()) });
    }

    /// Waits until everything saved so far is on disk.
    pub async fn flush(&self) {
        if let Some(store) = &self.store {
            store.flush().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_interrupted_turn_drops_calls_without_results() {
        let user = json!({"role": "user", "content": "go"});
        let calls = json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a"}, {"id": "b"}]});
        let result = json!({"role": "tool", "tool_call_id": "a", "content": "ok"});
        let mut state =
            AgentState { messages: vec![user.clone(), calls.clone(), result.clone()], ..Default::default() };
        state.recover_interrupted();
        assert_eq!(state.messages, vec![user.clone()], "b never got a result");

        let done = json!({"role": "tool", "tool_call_id": "b", "content": "ok"});
        let complete = vec![user, calls, result, done];
        let mut state = AgentState { messages: complete.clone(), ..Default::default() };
        state.recover_interrupted();
        assert_eq!(state.messages, complete, "a finished exchange is kept");
    }

    #[test]
    fn closing_unanswered_calls_answers_only_those_without_a_result() {
        let calls = json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a"}, {"id": "b"}, {"id": "c"}]});
        let result = json!({"role": "tool", "tool_call_id": "b", "content": "ok"});
        let mut state = AgentState { messages: vec![calls, result], ..Default::default() };
        assert_eq!(state.close_unanswered("stopped"), ["a", "c"]);
        let contents: Vec<(&str, &str)> = state.messages[2..]
            .iter()
            .map(|m| (m["tool_call_id"].as_str().unwrap(), m["content"].as_str().unwrap()))
            .collect();
        assert_eq!(contents, [("a", "stopped"), ("c", "stopped")]);
        assert!(state.close_unanswered("again").is_empty(), "nothing is answered twice");
    }

    #[test]
    fn the_running_flag_is_never_saved() {
        let state = AgentState { running: true, completions: 3, ..Default::default() };
        let text = serde_json::to_string(&state).unwrap();
        let back: AgentState = serde_json::from_str(&text).unwrap();
        assert!(!back.running);
        assert_eq!(back.completions, 3);
    }
}
