//! A session's runtime: its event log and state (its machine's phase and
//! what its agent keeps), and the IO that applies the machine's answers
//! (saves, the status the pages see). A turn runs in a task of its own, so a
//! closed connection neither stops nor corrupts it.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::events::{AgentEvent, ResultStatus, Severity};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::log::EventLog;
use super::port::HubPort;
use super::{acp, builtin, unreadable, AgentError};
use crate::session::{Machine, Phase, Recovery, Status, Tail, TurnEnd};
use crate::store::{StatusRow, Store, StoreError};

/// The `error` code (a warning) of a turn whose folder could not be recorded.
pub const CHECKPOINT_FAILED: &str = "checkpoint_failed";

/// The `error` code of a turn whose state could not be saved.
pub const STORE_FAILED: &str = "store_failed";

pub const INTERRUPTED_MESSAGE: &str = "The hub stopped while this turn was running. Nothing more of it \
     was done, and calls it had not finished were not run again. Send a new prompt to go on.";

/// What the session's agent keeps, saved whole to the store (with the
/// session's phase, see [`SessionState`]): each agent kind's own side, and
/// the grants both kinds give. (Stored flat: states saved before the split read.)
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AgentState {
    /// Tools approved "for this session".
    pub allowed_tools: HashSet<String>,
    /// Tools approved "for this turn": emptied when the turn ends.
    #[serde(default)]
    pub turn_tools: HashSet<String>,
    /// The built-in agent's side of the session.
    #[serde(flatten)]
    pub builtin: builtin::BuiltinState,
    /// An ACP agent's side of the session.
    #[serde(default)]
    pub acp: acp::AcpState,
}

/// The grants a session's calls are judged with (the gate still asks first:
/// rules, guard rails and protected paths hold over both).
#[derive(Debug, Clone, Copy)]
pub struct Grants<'a> {
    /// "Yes, for this session".
    pub session: &'a HashSet<String>,
    /// "Yes, for this turn".
    pub turn: &'a HashSet<String>,
}

impl AgentState {
    pub fn grants(&self) -> Grants<'_> {
        Grants { session: &self.allowed_tools, turn: &self.turn_tools }
    }

    /// Gives the grant a decision carries.
    pub fn grant(&mut self, grant: crate::approval::Grant) {
        match grant {
            crate::approval::Grant::Session(tool) => self.allowed_tools.insert(tool),
            crate::approval::Grant::Turn(tool) => self.turn_tools.insert(tool),
        };
    }
}

/// A session's state under its lock: where its turns stand (the machine, the
/// one truth of its status) and what its agent keeps.
#[derive(Debug, Default)]
pub struct SessionState {
    pub machine: Machine,
    pub agent: AgentState,
}

/// A session's state as the store keeps it.
pub(crate) fn encode(state: &SessionState) -> serde_json::Result<String> {
    serde_json::to_string(&Saving {
        agent: &state.agent,
        session: state.machine.saved_phase(),
        waiting_since: state.machine.saved_since(),
    })
}

/// A session's state read back from the store, or why it cannot be.
pub(crate) fn decode(text: &str) -> Result<SessionState, String> {
    let Saved { agent, session, waiting_since } = unreadable::decode(text)?;
    Ok(SessionState { machine: Machine::restored_since(session, waiting_since), agent })
}

/// The stored form: the agent's state with the phase beside it.
#[derive(Serialize)]
struct Saving<'a> {
    #[serde(flatten)]
    agent: &'a AgentState,
    session: &'a Phase,
    #[serde(rename = "waitingSince", skip_serializing_if = "Option::is_none")]
    waiting_since: Option<u64>,
}

#[derive(Deserialize)]
struct Saved {
    #[serde(flatten)]
    agent: AgentState,
    /// Absent in states saved before the phase was.
    #[serde(default)]
    session: Phase,
    /// Absent in states saved before the pause's start was.
    #[serde(default, rename = "waitingSince")]
    waiting_since: Option<u64>,
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
    /// Nobody decided within the folder's timeout (`after_secs`): the hub
    /// answers every waiting call and question "no decision", and the turn
    /// goes on. Refused unless the pause is that old at `now_ms`.
    TimeOut {
        after_secs: u64,
        /// When the timeout was set: a wait counts from then if it began before.
        counted_from_ms: u64,
        now_ms: u64,
    },
}

impl Start {
    /// What the session's machine is asked to start.
    pub fn starting(&self) -> crate::session::Starting<'_> {
        use crate::session::Starting;
        match self {
            Self::Prompt(text) if builtin::decision_word(text).is_some() => Starting::DecidingPrompt,
            Self::Prompt(_) => Starting::Prompt,
            Self::Decide { tool_id, .. } | Self::AgentOption { tool_id, .. } => Starting::Decide(tool_id),
            Self::Answer { request_id, .. } => Starting::Answer(request_id),
            Self::TimeOut { after_secs, counted_from_ms, now_ms } => Starting::TimeOut {
                now_ms: *now_ms,
                after_ms: after_secs.saturating_mul(1000),
                from_ms: *counted_from_ms,
            },
        }
    }
}

/// Starts or resumes a turn with the session's agent. Returns the last seq before
/// the turn's first event (the reader starts after it).
pub fn begin(hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>, start: Start) -> Result<u64, AgentError> {
    if let Some(why) = &runtime.unreadable {
        return Err(AgentError::StateUnreadable(why.clone()));
    }
    hub.agent_of(&runtime.id)?.begin(hub, runtime, start)
}

/// One decision of a batch: the call, the decision, and what the user saw of
/// the call ([`fingerprint`]; `None`: decided by its id alone, as a card is).
#[derive(Debug, Clone)]
pub struct BatchItem {
    pub tool_id: String,
    pub decision: crate::approval::Decision,
    pub seen: Option<String>,
}

/// What identifies a call as the user saw it: its tool and arguments, hashed
/// (SHA-256, the first 128 bits: an agent that re-describes its call cannot
/// find another with the same fingerprint).
pub fn fingerprint(tool_name: &str, args: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(tool_name.as_bytes());
    hasher.update([0]);
    hasher.update(args.to_string().as_bytes());
    hasher.finalize()[..16].iter().map(|byte| format!("{byte:02x}")).collect()
}

impl AgentState {
    /// Whether the call waiting under `tool_id` is still the one the user saw
    /// (`seen`); refused, the item decides nothing.
    pub fn check_seen(&self, item: &BatchItem) -> Result<(), AgentError> {
        let Some(seen) = &item.seen else { return Ok(()) };
        match self.waiting_call(&item.tool_id) {
            Some((name, args)) if fingerprint(&name, &args) == *seen => Ok(()),
            Some(_) => Err(AgentError::NotPending(format!(
                "Tool call '{}' changed since it was listed: open its card to decide it.",
                item.tool_id
            ))),
            None => Err(AgentError::call_not_pending(&item.tool_id)),
        }
    }
}

/// Decides several waiting calls of the session at once (the inbox's batch).
/// Returns each decision's result, in order, and the last seq before the
/// turn's first event when one started.
pub fn decide_many(
    hub: &Arc<dyn HubPort>,
    runtime: &Arc<SessionRuntime>,
    decisions: Vec<BatchItem>,
) -> (Vec<Result<(), AgentError>>, Option<u64>) {
    let refused = |err: AgentError| (decisions.iter().map(|_| Err(err.clone())).collect(), None);
    if let Some(why) = &runtime.unreadable {
        return refused(AgentError::StateUnreadable(why.clone()));
    }
    match hub.agent_of(&runtime.id) {
        Ok(agent) => agent.decide_many(hub, runtime, decisions),
        Err(err) => refused(err),
    }
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
/// `number` is the turn's, from [`SessionRuntime::start_turn`].
pub(crate) fn spawn_turn(
    hub: &Arc<dyn HubPort>,
    runtime: &Arc<SessionRuntime>,
    number: u64,
    turn: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let (port, recorded) = (hub.clone(), runtime.clone());
    let task = tokio::spawn(async move {
        // The folder is recorded before the turn can change it.
        // Stopped meanwhile: the turn sees its stop at once and ends.
        recorded.checkpoint_before(&*port).await;
        turn.await
    });
    let (hub, runtime) = (hub.clone(), runtime.clone());
    tokio::spawn(async move {
        let Err(err) = task.await else { return };
        {
            // A task that failed after its turn was over (and another may have begun) leaves the session be.
            if !runtime.state().machine.holds(number) {
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
pub fn pending_calls(state: &SessionState) -> Vec<String> {
    state.agent.pending_calls()
}

/// What the runtime asks of either agent kind's side.
impl AgentState {
    /// The cards, as the agent holds them, first shown first (calls queued
    /// behind the built-in agent's question among them, which the status
    /// does not count).
    pub fn pending_calls(&self) -> Vec<String> {
        match (&self.builtin.paused, &self.acp.waiting) {
            (Some(paused), _) => paused.batch.pending(),
            (None, Some(waiting)) => vec![waiting.tool_id.clone()],
            (None, None) => Vec::new(),
        }
    }

    /// The call on a card under `tool_id`, as the folder's rules see it (name, arguments).
    pub fn waiting_call(&self, tool_id: &str) -> Option<(String, Value)> {
        if let Some(waiting) = self.acp.waiting.as_ref().filter(|waiting| waiting.tool_id == tool_id) {
            return Some((waiting.call.name.clone(), waiting.call.args.clone()));
        }
        let paused = self.builtin.paused.as_ref()?;
        if !paused.batch.pending().iter().any(|id| id == tool_id) {
            return None;
        }
        paused.calls.get(tool_id).map(|call| (call.name.clone(), call.args.clone()))
    }

    /// Whether a turn's calls are saved to go on from after a restart (the
    /// built-in agent's; an ACP agent's request dies with its process).
    pub fn has_saved_turn(&self) -> bool {
        self.builtin.paused.is_some()
    }
}

pub struct SessionRuntime {
    pub id: String,
    /// The folder: its rules, trust and YOLO apply to the session.
    pub folder: PathBuf,
    /// Where the session works (see `crate::registry::Session::root`): the
    /// folder, or an isolated session's worktree.
    pub root: PathBuf,
    pub log: Arc<EventLog>,
    state: Mutex<SessionState>,
    pub(super) store: Option<Arc<Store>>,
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
    /// The checkpoint of the turn under way: due (its "before" not yet
    /// recorded) or open (its "after" recorded when the turn ends).
    checkpoint: Mutex<checkpoint::TurnCheckpoint>,
}

impl SessionRuntime {
    /// A session's runtime, picking up its events and agent state from the store.
    /// A database that cannot be read is an error, never an empty session: one
    /// taken for empty would start again at seq 1 over the stored history.
    pub fn load(id: String, folder: PathBuf, store: Option<Arc<Store>>) -> Result<Self, StoreError> {
        let Some(saved) = &store else { return Ok(Self::fresh(id, folder, None)) };
        let events = saved.events(&id)?;
        let (state, unreadable) = match saved.agent_state(&id)?.as_deref().map(decode) {
            None => (SessionState::default(), None),
            Some(Ok(state)) => (state, None),
            // Not started afresh over it: see `unreadable`.
            Some(Err(why)) => {
                tracing::error!(session = %id, "{why}");
                (SessionState::default(), Some(why))
            }
        };
        let mut runtime = Self::with(id, folder, store, events, state);
        runtime.unreadable = unreadable;
        Ok(runtime)
    }

    /// The runtime of a session just created: the store has nothing of it yet.
    pub fn fresh(id: String, folder: PathBuf, store: Option<Arc<Store>>) -> Self {
        Self::with(id, folder, store, Vec::new(), SessionState::default())
    }

    pub(in crate::agents) fn with(
        id: String,
        folder: PathBuf,
        store: Option<Arc<Store>>,
        events: Vec<protocol::events::SeqEvent>,
        state: SessionState,
    ) -> Self {
        let sink = store.clone().map(|store| (store, id.clone()));
        Self {
            log: Arc::new(EventLog::restored(events, sink)),
            id,
            root: folder.clone(),
            folder,
            state: Mutex::new(state),
            store,
            saved: AtomicU64::new(0),
            last_used: AtomicU64::new(0),
            agent_modes: Mutex::new(None),
            unreadable: None,
            checkpoint: Mutex::new(checkpoint::TurnCheckpoint::None),
        }
    }

    /// The runtime working in `root` (an isolated session's worktree).
    pub fn rooted(mut self, root: PathBuf) -> Self {
        self.root = root;
        self
    }

    /// Whether a call may change the folder's or the working root's
    /// `.gemini` (and the other protected paths): see `super::protected`.
    pub fn touches_settings(&self, name: &str, args: &serde_json::Value) -> bool {
        use super::protected::{touches_settings, touches_settings_within};
        if self.root == self.folder {
            return touches_settings(&self.folder, name, args);
        }
        // An isolated session's worktree is under the hub's data dir, which is
        // protected: its own worktree is not; the folder's settings are.
        let worktree = Some(self.root.as_path());
        touches_settings_within(&self.root, worktree, name, args)
            || touches_settings_within(&self.folder, worktree, name, args)
    }

    pub fn agent_modes(&self) -> Option<protocol::api::AgentModes> {
        self.agent_modes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub fn set_agent_modes(&self, modes: Option<protocol::api::AgentModes>) {
        *self.agent_modes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = modes;
    }

    pub fn state(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The session is being deleted (call with its state locked): nothing
    /// starts in it any more, and nothing more of it is saved, so no write can
    /// follow the store's delete. Its events stay in memory for whoever still
    /// reads them. Returns whether a turn was running; refused (`force`
    /// unset and a turn under way), nothing changes.
    pub(crate) fn detach(&self, state: &mut SessionState, force: bool) -> Result<bool, crate::session::Occupied> {
        let running = state.machine.delete(force)?;
        self.log.detach();
        Ok(running)
    }

    /// Queues the session's state for saving, its status with it, as an
    /// update (call with the state locked, so saves keep their order).
    /// Returns the save's time: a status it changed changed then.
    pub fn save(&self, state: &SessionState) -> u64 {
        let at_ms = crate::clock::now_ms();
        self.write(state, Some(at_ms));
        at_ms
    }

    /// [`SessionRuntime::save`] at a time the caller took (a pause's start).
    fn save_at(&self, state: &SessionState, at_ms: u64) {
        self.write(state, Some(at_ms));
    }

    /// `at_ms`: when the status changed (`None`: a restart's, which is no update).
    fn write(&self, state: &SessionState, at_ms: Option<u64>) {
        let Some(store) = self.store.as_ref().filter(|_| !state.machine.is_deleted()) else { return };
        let status = state.machine.saved_status();
        let row = StatusRow { status: status.status, pending_count: status.pending_count, updated_at_ms: at_ms };
        // An unreadable state is kept as it was: only the status is written.
        let text = match self.unreadable {
            Some(_) => None,
            None => match encode(state) {
                Ok(text) => Some(text),
                Err(err) => {
                    tracing::error!("agent state not saved: {err}");
                    return;
                }
            },
        };
        self.saved.store(store.save_session_state(&self.id, text, row), Ordering::Release);
    }

    /// A phase only a killed hub leaves on disk: a turn running, or a wait
    /// with nothing saved to wait on (an ACP agent's request dies with its
    /// process). [`SessionRuntime::recover`] settles it.
    pub(crate) fn needs_recovery(&self) -> bool {
        let state = self.state();
        match state.machine.phase() {
            Phase::Running => true,
            Phase::Waiting { .. } | Phase::Asking { .. } => !state.agent.has_saved_turn(),
            Phase::Idle | Phase::Error => false,
        }
    }

    /// After a restart: the session's status, settled by [`crate::session::recover`]
    /// from its saved phase, the log's last event and the built-in agent's
    /// saved calls, then saved. A turn the restart cut is closed with an error;
    /// nothing of it is resumed, and nothing that was running runs again.
    pub fn recover(&self) -> Status {
        if let Some(why) = &self.unreadable {
            unreadable::report(&self.log, why);
            let mut state = self.state();
            state.machine = Machine::restored(Phase::Error);
            self.write(&state, None);
            return state.machine.status();
        }
        let tail = match self.log.last() {
            None => Tail::Empty,
            Some(AgentEvent::Result { status, .. }) => Tail::Result(status),
            Some(_) => Tail::Unsettled,
        };
        let (saved, batch, since) = {
            let state = self.state();
            (state.machine.phase().clone(), state.agent.has_saved_turn(), state.machine.waiting_since())
        };
        let phase = match crate::session::recover(&saved, tail, batch) {
            Recovery::AsItWas(phase) => phase,
            Recovery::Batch => {
                let seen = self.log.last_seq();
                let paused_already = matches!(self.log.last(), Some(AgentEvent::Result { .. }));
                let end = self.recover_batch().unwrap_or_else(TurnEnd::error);
                // A pause the log already ends with needs no second `result`.
                if self.log.last_seq() != seen || !paused_already {
                    self.log.push(AgentEvent::Result { status: end.result, pending: end.pending() });
                }
                end.phase
            }
            Recovery::Interrupted => {
                {
                    // Saved before it is said: a kill in between says it once, next time.
                    let mut state = self.state();
                    state.agent.builtin.recover_interrupted();
                    state.agent.turn_tools.clear();
                    state.machine = Machine::restored(Phase::Error);
                    self.write(&state, None);
                }
                self.close_unreported_calls();
                self.log.push(AgentEvent::Error {
                    severity: Severity::Error,
                    message: INTERRUPTED_MESSAGE.to_string(),
                    code: Some("interrupted".into()),
                });
                self.log.push(AgentEvent::Result { status: ResultStatus::Error, pending: None });
                Phase::Error
            }
        };
        let mut state = self.state();
        if !phase.under_way() {
            // The restart ended the turn: "for this turn" ends with it.
            state.agent.turn_tools.clear();
        }
        // A wait goes on across the restart: the time to decide counts from its
        // start (from now, for a state saved before the start was).
        state.machine = Machine::restored_since(phase, since.or_else(|| Some(crate::clock::now_ms())));
        self.write(&state, None);
        state.machine.status()
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
            state.agent.builtin.recover_interrupted();
            self.save(&state);
            TurnEnd::error()
        });
        self.state().agent.builtin.stop = None;
        self.end_turn(hub, end).await;
    }

    /// A turn starts (its machine said it may): the session is held, and the
    /// status the pages see is saved with the state and shown, together under
    /// the session's lock. Returns the turn's number.
    pub(crate) fn start_turn(&self, hub: &dyn HubPort, state: &mut SessionState) -> u64 {
        if !state.machine.phase().under_way() {
            // A new turn (not one taken up again after a pause): its checkpoint is due.
            self.checkpoint_due(state);
        }
        let (turn, status) = state.machine.start();
        let at_ms = self.save(state);
        hub.show_status(&self.id, status, at_ms);
        turn
    }

    /// A turn paused on the user is taken up again to be closed (Stop, or its
    /// agent's process ended). Returns whether a turn was under way.
    pub(crate) fn reopen(&self, hub: &dyn HubPort, state: &mut SessionState) -> bool {
        let (under_way, changed) = state.machine.reopen();
        if let Some(status) = changed {
            let at_ms = self.save(state);
            hub.show_status(&self.id, status, at_ms);
        }
        under_way
    }

    /// Closes or pauses the running turn with its `result`.
    pub async fn end_turn(&self, hub: &dyn HubPort, end: TurnEnd) {
        // What an agent's sandbox could not stop it planting for later (see `sandbox::tidy_git`).
        if let Some(removed) = crate::sandbox::tidy_git(&self.root) {
            self.log.push(AgentEvent::Error {
                severity: Severity::Warning,
                message: removed,
                code: Some("sandbox".into()),
            });
        }
        if !end.phase.under_way() {
            // Before the session is free: no rewind can run between the turn and its record.
            self.checkpoint_after(hub).await;
        }
        // The pause (or end) is on disk, status and all, before anyone can see it and act on it…
        let mut at_ms = self.record_end(&end);
        if let Err(err) = self.flush().await {
            // …or, when it cannot be, the user is told so: never as if it were saved.
            self.log.withdraw_unpublished();
            self.report_store_failed(&err);
            let paused = matches!(end.phase, Phase::Waiting { .. } | Phase::Asking { .. });
            // A pause stays a pause (deciding needs the store again, and says so if it still fails).
            let end = if paused { end } else { TurnEnd::error() };
            let again = self.record_end(&end);
            if !paused {
                at_ms = again;
            }
            // While the fault lasts these writes fail too; they are part of what
            // was just said, not news for the next turn.
            let _ = self.flush().await;
        }
        // …and the session is free, its status shown, the moment the result
        // shows: a client that reads it and prompts or asks at once sees it done.
        let mut state = self.state();
        let shown = state.machine.show_end();
        self.log.publish();
        match shown {
            Some(status) => hub.show_status(&self.id, status, at_ms),
            None => hub.projects_changed(),
        }
    }

    /// Saves the turn's end (the state, the phase and status it leaves) and
    /// appends its `result`, unpublished; the session stays held.
    /// Returns the save's time.
    fn record_end(&self, end: &TurnEnd) -> u64 {
        let mut state = self.state();
        let at_ms = crate::clock::now_ms();
        state.machine.end(end, at_ms);
        if !end.phase.under_way() {
            // "For this turn" ends with it.
            state.agent.turn_tools.clear();
        }
        self.save_at(&state, at_ms);
        self.log.append_unpublished(AgentEvent::Result { status: end.result, pending: end.pending() });
        at_ms
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

    /// Reports a call nobody decided in time: not run, an error the model reads.
    pub fn report_timed_out(&self, tool_id: String, message: String) {
        self.log.push(AgentEvent::ToolResult {
            tool_id,
            status: protocol::events::ToolStatus::Error,
            output: None,
            error: Some(protocol::events::ToolError { kind: "timed_out".into(), message }),
            diff: None,
        });
    }

    /// The call waiting on a card under `tool_id`, as the folder's rules see it (name, arguments).
    pub fn waiting_call(&self, tool_id: &str) -> Option<(String, Value)> {
        self.state().agent.waiting_call(tool_id)
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
        let idle =
            self.state.try_lock().is_ok_and(|state| !state.machine.is_running() && state.agent.builtin.stop.is_none());
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

#[path = "runtime_checkpoint.rs"]
mod checkpoint;

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod tests;
