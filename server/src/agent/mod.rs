//! Agents and their turns. A session's runtime holds its event log and the
//! agent's state; a turn runs in a task of its own, so a closed connection
//! neither stops nor corrupts it.

pub mod acp;
pub(crate) mod audit;
mod batch;
pub mod builtin;
mod calls;
pub mod error;
pub(crate) mod gate;
mod interface;
pub mod log;
pub mod model;
pub mod port;
pub mod protected;
pub mod question;
mod sse;
mod unreadable;
pub use unreadable::STATE_UNREADABLE;

pub use error::AgentError;
pub use interface::Agent;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::api::SessionStatus;
use protocol::events::{AgentEvent, ResultStatus, Severity};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::port::HubPort;
use crate::approval::ApprovalBatch;
use crate::store::{Store, StoreError};
use crate::tools::{Tool, ToolFailure};
use log::EventLog;

/// The `error` code of a turn whose state could not be saved.
pub const STORE_FAILED: &str = "store_failed";

pub const INTERRUPTED_MESSAGE: &str = "The hub stopped while this turn was running. Nothing more of it \
     was done, and calls it had not finished were not run again. Send a new prompt to go on.";

/// A call of a paused model turn, as the runtime will run it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedCall {
    /// The model's id for the call where the hub gave it another (the model's
    /// was empty, repeated, or not fit to show); the conversation keeps the model's.
    #[serde(default)]
    pub model_id: Option<String>,
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
    /// Counts the built-in agent's turn tasks: a failed task acts only on its own turn.
    #[serde(skip)]
    pub turn: u64,
    /// The session was deleted: nothing starts in it and nothing of it is saved.
    #[serde(skip)]
    pub deleted: bool,
}

/// Why a session cannot be deleted without `force`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occupied {
    Running,
    WaitingApproval,
    WaitingInput,
}

impl Occupied {
    /// What the session is doing, if anything that deleting would cut short.
    pub fn of(state: &AgentState) -> Option<Self> {
        if state.running {
            return Some(Self::Running);
        }
        if state.acp.waiting.is_some() {
            return Some(Self::WaitingApproval);
        }
        let paused = state.paused.as_ref()?;
        Some(if paused.batch.asked().is_some() { Self::WaitingInput } else { Self::WaitingApproval })
    }

    pub fn describe(self) -> &'static str {
        match self {
            Self::Running => "a turn is running in it",
            Self::WaitingApproval => "a tool call is waiting for your decision",
            Self::WaitingInput => "the agent is waiting for your answer to its question",
        }
    }
}

/// How a turn begins: a new prompt, a decision on a paused one, or the answer
/// to the agent's question.
pub enum Start {
    Prompt(String),
    Decide {
        tool_id: String,
        decision: crate::approval::Decision,
    },
    /// One of an ACP agent's own options for its permission request, answered as it is.
    AgentOption {
        tool_id: String,
        option_id: String,
    },
    Answer {
        request_id: String,
        response: Value,
    },
}

/// Starts or resumes a turn with the session's agent. Returns the last seq before
/// the turn's first event (the reader starts after it).
pub fn begin(hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>, start: Start) -> Result<u64, AgentError> {
    if let Some(why) = &runtime.unreadable {
        return Err(AgentError::StateUnreadable(why.clone()));
    }
    hub.agent_of(&runtime.id)?.begin(hub, runtime, start)
}

/// Stops the running or waiting turn (the Stop button). Returns the last seq
/// before the turn's last events.
pub async fn cancel(hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>) -> Result<u64, AgentError> {
    hub.agent_of(&runtime.id)?.cancel(hub, runtime).await
}

/// Stops the session's turn only if one is running (shutdown): a built-in
/// agent's waiting card is kept, to be decided after the restart. Checked and
/// stopped under the session's lock, so a turn that pauses meanwhile keeps it.
pub fn stop_running(hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>) {
    if let Ok(agent) = hub.agent_of(&runtime.id) {
        agent.stop_running(hub, runtime);
    }
}

/// Runs a turn in a task of its own, watched: should the task fail (a panic, a
/// bug), the session gets an `error` event and is free again; it never stays
/// "running" with every prompt answered `session_busy`.
/// `number` is the turn's [`AgentState::turn`].
pub(crate) fn spawn_turn(
    hub: &Arc<dyn HubPort>,
    runtime: &Arc<SessionRuntime>,
    number: u64,
    turn: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let task = tokio::spawn(turn);
    let (hub, runtime) = (hub.clone(), runtime.clone());
    tokio::spawn(async move {
        let Err(err) = task.await else { return };
        {
            // A task that failed after its turn was over (and another may have begun) leaves the session be.
            let state = runtime.state();
            if state.turn != number || !state.running {
                tracing::error!(session = %runtime.id, "a finished turn's task failed: {err}");
                return;
            }
        }
        let why = match err.try_into_panic() {
            Ok(panic) => panic
                .downcast_ref::<&str>()
                .map(|text| text.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".to_string()),
            Err(_) => "the turn's task was cancelled".to_string(),
        };
        runtime.turn_failed(&hub, &why).await;
    });
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

    /// Paused on a question to the user.
    pub fn asking() -> Self {
        Self { result: ResultStatus::WaitingInput, pending: None, status: SessionStatus::WaitingInput }
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
    /// The store ticket of the last agent state queued for saving.
    saved: AtomicU64,
    /// When the hub last handed this runtime out (its clock of uses).
    pub(crate) last_used: AtomicU64,
    /// An ACP agent's session modes while its process runs. A lock of its own,
    /// taken alone: the page's config reads it under the registry's lock.
    agent_modes: Mutex<Option<protocol::api::AgentModes>>,
    /// Why the stored agent state could not be read: the session is in error,
    /// takes no turn, and its stored state is never written over.
    unreadable: Option<String>,
}

impl SessionRuntime {
    /// A session's runtime, picking up its events and agent state from the store.
    /// A database that cannot be read is an error, never an empty session: one
    /// taken for empty would start again at seq 1 over the stored history.
    pub fn load(id: String, folder: PathBuf, store: Option<Arc<Store>>) -> Result<Self, StoreError> {
        let Some(saved) = &store else { return Ok(Self::fresh(id, folder, None)) };
        let events = saved.events(&id)?;
        let (state, unreadable) = match saved.agent_state(&id)?.as_deref().map(unreadable::decode) {
            None => (AgentState::default(), None),
            Some(Ok(state)) => (state, None),
            // Not started afresh over it: see `unreadable`.
            Some(Err(why)) => {
                tracing::error!(session = %id, "{why}");
                (AgentState::default(), Some(why))
            }
        };
        let mut runtime = Self::with(id, folder, store, events, state);
        runtime.unreadable = unreadable;
        Ok(runtime)
    }

    /// The runtime of a session just created: the store has nothing of it yet.
    pub fn fresh(id: String, folder: PathBuf, store: Option<Arc<Store>>) -> Self {
        Self::with(id, folder, store, Vec::new(), AgentState::default())
    }

    fn with(
        id: String,
        folder: PathBuf,
        store: Option<Arc<Store>>,
        events: Vec<protocol::events::SeqEvent>,
        state: AgentState,
    ) -> Self {
        let sink = store.clone().map(|store| (store, id.clone()));
        Self {
            log: Arc::new(EventLog::restored(events, sink)),
            id,
            folder,
            state: Mutex::new(state),
            store,
            saved: AtomicU64::new(0),
            last_used: AtomicU64::new(0),
            agent_modes: Mutex::new(None),
            unreadable: None,
        }
    }

    pub fn agent_modes(&self) -> Option<protocol::api::AgentModes> {
        self.agent_modes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub fn set_agent_modes(&self, modes: Option<protocol::api::AgentModes>) {
        *self.agent_modes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = modes;
    }

    pub fn state(&self) -> MutexGuard<'_, AgentState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The session is being deleted (call with its state locked): nothing
    /// starts in it any more, and nothing more of it is saved, so no write can
    /// follow the store's delete. Its events stay in memory for whoever still
    /// reads them.
    pub(crate) fn detach(&self, state: &mut AgentState) {
        state.deleted = true;
        self.log.detach();
    }

    /// Queues the agent state for saving (call with the state locked, so saves keep their order).
    pub fn save(&self, state: &AgentState) {
        if let Some(store) = self.store.as_ref().filter(|_| !state.deleted && self.unreadable.is_none()) {
            match serde_json::to_string(state) {
                Ok(text) => self.saved.store(store.save_agent_state(&self.id, text), Ordering::Release),
                Err(err) => tracing::error!("agent state not saved: {err}"),
            }
        }
    }

    /// After a restart: the session's status, and how many calls wait. The
    /// built-in agent's saved batch says what was under way (see
    /// [`SessionRuntime::recover_batch`]); without one, the log's last `result`
    /// does. A turn the restart cut is closed with an error; nothing of it is
    /// resumed, and nothing that was running runs again.
    pub fn recover(&self) -> (SessionStatus, usize) {
        if let Some(why) = &self.unreadable {
            return unreadable::report(&self.log, why);
        }
        let seen = self.log.last_seq();
        let paused_already = matches!(self.log.last(), Some(AgentEvent::Result { .. }));
        if let Some(end) = self.recover_batch() {
            // A pause the log already ends with needs no second `result`.
            if self.log.last_seq() != seen || !paused_already {
                self.log.push(AgentEvent::Result { status: end.result, pending: end.pending.clone() });
            }
            return (end.status, end.pending.map_or(0, |pending| pending.len()));
        }
        match self.log.last() {
            None => return (SessionStatus::Idle, 0),
            Some(AgentEvent::Result { status, .. }) => match status {
                ResultStatus::Success | ResultStatus::Cancelled => return (SessionStatus::Idle, 0),
                ResultStatus::Error => return (SessionStatus::Error, 0),
                // A wait with nothing saved to wait on: an ACP agent's request died with its process.
                ResultStatus::WaitingApproval | ResultStatus::WaitingInput => {}
            },
            Some(_) => {}
        }
        let mut state = self.state();
        state.recover_interrupted();
        self.save(&state);
        self.close_unreported_calls();
        self.log.push(AgentEvent::Error {
            severity: Severity::Error,
            message: INTERRUPTED_MESSAGE.to_string(),
            code: Some("interrupted".into()),
        });
        self.log.push(AgentEvent::Result { status: ResultStatus::Error, pending: None });
        (SessionStatus::Error, 0)
    }

    /// The cut turn's calls (and questions) that were announced and got no
    /// result: each gets one, so no card is left that nothing can answer. They
    /// never run: the hub runs nothing whose running state was not saved, and
    /// an ACP agent's request died with its process.
    pub(crate) fn close_unreported_calls(&self) {
        let events = self.log.published();
        let ended = |event: &AgentEvent| {
            matches!(
                event,
                AgentEvent::Result {
                    status: ResultStatus::Success | ResultStatus::Cancelled | ResultStatus::Error,
                    ..
                }
            )
        };
        let start = events.iter().rposition(|logged| ended(&logged.event)).map_or(0, |index| index + 1);
        let mut open: Vec<String> = Vec::new();
        for logged in &events[start..] {
            match &logged.event {
                AgentEvent::ToolUse { tool_id, .. } | AgentEvent::InputRequest { request_id: tool_id, .. }
                    if !open.contains(tool_id) =>
                {
                    open.push(tool_id.clone());
                }
                AgentEvent::ToolResult { tool_id, .. } => open.retain(|id| id != tool_id),
                _ => {}
            }
        }
        for tool_id in open {
            self.log.push(AgentEvent::ToolResult {
                tool_id,
                status: protocol::events::ToolStatus::Error,
                output: None,
                error: Some(protocol::events::ToolError {
                    kind: "interrupted".into(),
                    message: crate::approval::CUT_SHORT_RESULT.into(),
                }),
                diff: None,
            });
        }
    }

    /// A turn's task failed (a panic: a bug): the session must not stay running.
    /// The user is told, what was under way is settled as after a crash (calls
    /// still waiting keep their cards), and the session takes a new prompt.
    pub async fn turn_failed(&self, hub: &dyn HubPort, why: &str) {
        tracing::error!(session = %self.id, "a turn failed: {why}");
        self.report_error(
            "internal",
            format!("The turn stopped on an internal error ({why}). Send a new prompt to go on."),
        );
        let end = self.recover_batch().unwrap_or_else(|| {
            let mut state = self.state();
            // A model reply whose calls got no results is dropped, as after a crash.
            state.recover_interrupted();
            self.save(&state);
            TurnEnd::error()
        });
        self.state().stop = None;
        self.end_turn(hub, end).await;
    }

    /// The session takes a turn: the runtime's state and the status the pages
    /// see change together, under the session's lock (held by `state`).
    pub(crate) fn mark_running(&self, hub: &dyn HubPort, state: &mut AgentState) {
        state.running = true;
        hub.set_status(&self.id, SessionStatus::Running, 0);
    }

    /// Closes or pauses the running turn with its `result`.
    pub async fn end_turn(&self, hub: &dyn HubPort, end: TurnEnd) {
        // The pause (or end) is on disk before anyone can see it and act on it…
        let mut ahead = self.record_end(hub, &end);
        if let Err(err) = self.flush().await {
            // …or, when it cannot be, the user is told so: never as if it were saved.
            self.log.withdraw_unpublished();
            self.report_store_failed(&err);
            let paused = matches!(end.result, ResultStatus::WaitingApproval | ResultStatus::WaitingInput);
            // A pause stays a pause (deciding needs the store again, and says so if it still fails).
            let end = if paused { end } else { TurnEnd::error() };
            ahead = self.record_end(hub, &end);
            // While the fault lasts these writes fail too; they are part of what
            // was just said, not news for the next turn.
            let _ = self.flush().await;
        }
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

    /// Saves the turn's state and status and appends its `result`, unpublished.
    fn record_end(&self, hub: &dyn HubPort, end: &TurnEnd) -> Option<crate::registry::Session> {
        let pending_count = end.pending.as_ref().map_or(0, Vec::len);
        let ahead = hub.save_status_ahead(&self.id, end.status, pending_count);
        self.save(&self.state());
        self.log.append_unpublished(AgentEvent::Result { status: end.result, pending: end.pending.clone() });
        ahead
    }

    /// A write to the database failed: the turn's error says so (once in a row).
    pub(crate) fn report_store_failed(&self, err: &StoreError) {
        let said = matches!(self.log.last(), Some(AgentEvent::Error { code: Some(code), .. }) if code == STORE_FAILED);
        if !said {
            self.report_error(
                STORE_FAILED,
                format!(
                    "The hub could not save this session ({err}). What happened since its last save may be \
                     missing after a restart; nothing was run unsaved."
                ),
            );
        }
    }

    /// Reports a call that did not run, and why (`tool_result` `skipped`).
    pub fn report_skipped(&self, tool_id: String, why: &str) {
        self.log.push(AgentEvent::ToolResult {
            tool_id,
            status: protocol::events::ToolStatus::Skipped,
            output: Some(why.to_string()),
            error: None,
            diff: None,
        });
    }

    /// The call waiting on a card under `tool_id`, as the folder's rules see it (name, arguments).
    pub fn waiting_call(&self, tool_id: &str) -> Option<(String, Value)> {
        let state = self.state();
        if let Some(waiting) = state.acp.waiting.as_ref().filter(|waiting| waiting.tool_id == tool_id) {
            return Some((waiting.call.name.clone(), waiting.call.args.clone()));
        }
        let paused = state.paused.as_ref()?;
        if !paused.batch.pending().iter().any(|id| id == tool_id) {
            return None;
        }
        paused.calls.get(tool_id).map(|call| (call.name.clone(), call.args.clone()))
    }

    /// Reports an error (with a machine-readable code) as the turn's event.
    pub fn report_error(&self, code: &str, message: String) {
        self.log.push(AgentEvent::Error { severity: Severity::Error, message, code: Some(code.to_string()) });
    }

    /// Whether the runtime may leave memory: no turn, nobody holding it but
    /// the caller's map (`holders`), and everything it saved is on disk, so
    /// loading it again from the store gives exactly this.
    pub(crate) fn can_leave_memory(self: &Arc<Self>, holders: usize) -> bool {
        let Some(store) = &self.store else { return false };
        if Arc::strong_count(self) > holders || Arc::strong_count(&self.log) > 1 {
            return false;
        }
        // Locked means in use: not idle.
        let idle = self.state.try_lock().is_ok_and(|state| !state.running && state.stop.is_none());
        let saved = self.saved.load(Ordering::Acquire).max(self.log.saved_ticket());
        idle && store.committed(&self.id, saved)
    }

    /// Waits until everything saved so far is on disk; an error says some of
    /// it could not be saved.
    pub async fn flush(&self) -> Result<(), StoreError> {
        match &self.store {
            Some(store) => store.flush_session(&self.id).await,
            None => Ok(()),
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

    #[tokio::test]
    async fn a_detached_runtime_saves_nothing_more() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let runtime = SessionRuntime::fresh("s".into(), dir.path().into(), Some(store.clone()));
        let ended = |status| AgentEvent::Result { status, pending: None };
        runtime.log.push(ended(ResultStatus::Success));
        runtime.save(&runtime.state());
        store.flush().await.unwrap();
        assert_eq!((store.events("s").unwrap().len(), store.agent_state("s").unwrap().is_some()), (1, true));

        runtime.detach(&mut runtime.state());
        store.delete_session("s");
        runtime.log.push(ended(ResultStatus::Cancelled));
        {
            let mut state = runtime.state();
            state.completions = 7;
            runtime.save(&state);
        }
        store.flush().await.unwrap();
        assert_eq!((store.events("s").unwrap(), store.agent_state("s").unwrap()), (vec![], None));
        assert_eq!(runtime.log.all().len(), 2, "kept in memory for whoever still reads it");
    }

    #[tokio::test]
    async fn a_turn_that_panics_ends_with_an_error_and_frees_the_session() {
        let hub = crate::hub::Hub::new(crate::hub::HubOptions::default());
        let dir = tempfile::tempdir().unwrap();
        let config = hub.open_session(dir.path().to_str().unwrap(), None).unwrap();
        let runtime = hub.runtime(&config.session_id).unwrap();
        let number = {
            let mut state = runtime.state();
            state.running = true;
            state.turn += 1;
            state.turn
        };
        hub.set_status(&runtime.id, SessionStatus::Running, 0);
        spawn_turn(&hub.port(), &runtime, number, async { panic!("a bug in the turn") });
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while runtime.state().running {
            assert!(std::time::Instant::now() < deadline, "the session stayed running");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(hub.session(&runtime.id).unwrap().status, SessionStatus::Error);
        let events: Vec<AgentEvent> = runtime.log.all().into_iter().map(|logged| logged.event).collect();
        assert!(
            matches!(&events[..], [AgentEvent::Error { code: Some(code), message, .. }, AgentEvent::Result { status: ResultStatus::Error, .. }]
                if code == "internal" && message.contains("a bug in the turn")),
            "{events:?}"
        );
    }
}
