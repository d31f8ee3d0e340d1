//! Agents and their turns. A session's runtime holds its event log and the
//! agent's state; a turn runs in a task of its own, so a closed connection
//! neither stops nor corrupts it.

pub mod builtin;
pub mod log;
pub mod model;
pub mod question;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use app::events::{AgentEvent, ResultStatus, Severity};
use app::types::SessionStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ApprovalBatch;
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
}

impl AgentState {
    /// After a restart cut a running turn: forget the turn's unfinished calls, and
    /// drop a model reply whose tool calls did not all get results, so the
    /// conversation is one the model accepts and nothing half-done is resumed.
    pub fn recover_interrupted(&mut self) {
        self.paused = None;
        let Some(index) = self.messages.iter().rposition(|m| m["role"] == "assistant" && m.get("tool_calls").is_some())
        else {
            return;
        };
        let answered = self.messages[index + 1..].iter().filter(|m| m["role"] == "tool").count();
        let asked = self.messages[index]["tool_calls"].as_array().map_or(0, Vec::len);
        if answered < asked {
            self.messages.truncate(index);
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
        let (events, state) = match &store {
            None => (Vec::new(), AgentState::default()),
            Some(store) => {
                let events = store.events(&id).unwrap_or_else(|err| {
                    tracing::error!("{err}");
                    Vec::new()
                });
                let state = store
                    .agent_state(&id)
                    .and_then(|text| {
                        text.map(|text| serde_json::from_str(&text).map_err(|e| e.to_string())).transpose()
                    })
                    .unwrap_or_else(|err| {
                        tracing::error!(session = %id, "the agent state could not be read, starting afresh: {err}");
                        None
                    })
                    .unwrap_or_default();
                (events, state)
            }
        };
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
    fn the_running_flag_is_never_saved() {
        let state = AgentState { running: true, completions: 3, ..Default::default() };
        let text = serde_json::to_string(&state).unwrap();
        let back: AgentState = serde_json::from_str(&text).unwrap();
        assert!(!back.running);
        assert_eq!(back.completions, 3);
    }
}
