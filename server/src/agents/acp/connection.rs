//! One agent process and its ACP connection: started in the session's folder,
//! in a process group of its own that dies with the session or the hub. The
//! driver turns the agent's updates into events and pauses the turn at each
//! permission request until the user decides.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, CreateTerminalRequest, KillTerminalRequest, PromptRequest, PromptResponse,
    ReadTextFileRequest, ReleaseTerminalRequest, RequestPermissionRequest, RequestPermissionResponse, SessionId,
    SessionNotification, SessionUpdate, TerminalOutputRequest, TextContent, WaitForTerminalExitRequest,
    WriteTextFileRequest,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client};
use protocol::events::{AgentEvent, ResultStatus};
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use super::mapping::{self, Mapper};
use super::process::{keep_last_words, spawn, Launch, ProcessGroup};
use super::{Command, Then};
use crate::agents::port::HubPort;
use crate::agents::SessionRuntime;
use crate::session::TurnEnd;
use protocol::audit::Outcome;

/// How long an agent may take to start and answer `initialize` and `session/new`.
const START_TIMEOUT: Duration = Duration::from_secs(90);
/// How long a dead process's last messages may take to be read.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(300);
/// A loaded session's replay is over after this much silence, or this long at most.
const REPLAY_SILENCE: Duration = Duration::from_millis(250);
const REPLAY_LIMIT: Duration = Duration::from_secs(10);
/// After a reject the agent ends its turn by itself (as it does for Zed);
/// `session/cancel` follows only if it has not within this grace. Cancelling at
/// once made Claude Code record two results and call its model again on its own.
const REJECT_GRACE: Duration = Duration::from_secs(3);
/// How long a finished prompt waits for the results of calls it let run.
const LATE_RESULTS: Duration = Duration::from_millis(300);

mod client;
mod requests;
mod session;

use client::Service;

/// The agent's last stderr lines, to say why it failed.
type LastWords = Arc<Mutex<VecDeque<String>>>;

/// " Its last output: a / b" (empty when it said nothing).
fn last_output(words: &LastWords) -> String {
    let words: Vec<String> = words.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned().collect();
    if words.is_empty() {
        String::new()
    } else {
        format!(" Its last output: {}", words.join(" / "))
    }
}

/// Why the process could not work: the `error` event's code and message.
/// Why the agent's process can no longer serve its session; the turn it was
/// working on ends with an `error` event of this code and message.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// It could not start, or did not open a session.
    #[error("{0}")]
    Unavailable(String),
    /// Its process died or stopped answering.
    #[error("{0}")]
    Crashed(String),
    /// It did not stop when asked twice: the hub ended it.
    #[error("{0}")]
    Killed(String),
    /// The hub's side failed (a bug).
    #[error("{0}")]
    Internal(String),
}

impl Failure {
    fn code(&self) -> &'static str {
        match self {
            Self::Unavailable(_) => "agent_unavailable",
            Self::Crashed(_) => "agent_crashed",
            Self::Killed(_) => "agent_killed",
            Self::Internal(_) => "internal",
        }
    }
}

type PromptFuture = Pin<Box<dyn Future<Output = Result<PromptResponse, agent_client_protocol::Error>> + Send>>;

/// What the agent sends that the driver acts on, in the order it was sent.
enum Inbound {
    Update(SessionNotification),
    Permission(RequestPermissionRequest, Responder<RequestPermissionResponse>),
    /// A request for the hub's `fs` or `terminal`.
    Serve(Service),
}

/// Starts the agent process for a session; its first command must be a prompt.
pub(super) fn start(
    hub: Arc<dyn HubPort>,
    runtime: Arc<SessionRuntime>,
    launch: Launch,
) -> mpsc::UnboundedSender<Command> {
    let (link, commands) = mpsc::unbounded_channel();
    let own = link.clone();
    tokio::spawn(async move {
        // Its own task, so a panic (a bug) still ends the turn: never a session stuck running.
        let process = tokio::spawn({
            let (hub, runtime) = (hub.clone(), runtime.clone());
            async move { run(&hub, &runtime, &launch, commands).await }
        });
        let failure = process.await.unwrap_or_else(|err| {
            tracing::error!(session = %runtime.id, "the agent's connection failed: {err}");
            Some(Failure::Internal(format!(
                "The connection to the agent failed on an internal error ({err}). Send a prompt to start it again."
            )))
        });
        ended(&hub, &runtime, &own, failure).await;
    });
    link
}

/// Runs the process until it exits or the hub lets go of it. `Some((code,
/// message))` when it could not start or died.
async fn run(
    hub: &Arc<dyn HubPort>,
    runtime: &Arc<SessionRuntime>,
    launch: &Launch,
    commands: mpsc::UnboundedReceiver<Command>,
) -> Option<Failure> {
    let line = shell_words::join(&launch.command);
    let (mut child, placeholders) = match spawn(launch, &runtime.root, &hub.sandbox_terms(&runtime.id)) {
        Ok(started) => started,
        Err(err) => {
            return Some(Failure::Unavailable(format!(
                "Could not start the agent `{line}`: {err}. Install it, or change its command in the agents file or --acp-command."
            )))
        }
    };
    let _group = child.id().map(|pgid| ProcessGroup(pgid, Some(placeholders)));
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Some(Failure::Unavailable("The agent's stdio could not be connected.".into()));
    };
    let last_words: LastWords = Arc::new(Mutex::new(VecDeque::new()));
    let stderr_read =
        child.stderr.take().map(|stderr| tokio::spawn(keep_last_words(stderr, last_words.clone(), runtime.id.clone())));

    let (inbound, inbound_rx) = mpsc::unbounded_channel();
    let updates = inbound.clone();
    let served = inbound.clone();
    let driver = Driver {
        hub: hub.clone(),
        runtime: runtime.clone(),
        mapper: Mapper::new(runtime.root.clone()),
        asking: None,
        queued: VecDeque::new(),
        cleared: HashSet::new(),
        awaited: HashSet::new(),
        next_prompt: None,
        stopping: false,
        stop_asked: false,
        stale_cancels: false,
        cancel_at: None,
        last_words: last_words.clone(),
        modes: None,
        mode_picked: None,
        terminals: super::terminals::Terminals::new(runtime.log.clone()),
        runnable: Vec::new(),
        writable: Vec::new(),
    };
    let connection = Client
        .v1()
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let _ = updates.send(Inbound::Update(notification));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: RequestPermissionRequest, responder, _cx| {
                // Answered later, by the user's decision; the dispatch loop goes on.
                let _ = inbound.send(Inbound::Permission(request, responder));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        );
    // The hub's fs and terminals: every request goes to the driver in order.
    macro_rules! serve {
        ($connection:expr, $request:ty, $variant:ident) => {{
            let served = served.clone();
            $connection.on_receive_request(
                async move |request: $request, responder, _cx| {
                    let _ = served.send(Inbound::Serve(Service::$variant(request, responder)));
                    Ok(())
                },
                agent_client_protocol::on_receive_request!(),
            )
        }};
    }
    let connection = serve!(connection, ReadTextFileRequest, Read);
    let connection = serve!(connection, WriteTextFileRequest, Write);
    let connection = serve!(connection, CreateTerminalRequest, Create);
    let connection = serve!(connection, TerminalOutputRequest, Output);
    let connection = serve!(connection, WaitForTerminalExitRequest, Wait);
    let connection = serve!(connection, KillTerminalRequest, Kill);
    let connection = serve!(connection, ReleaseTerminalRequest, Release);
    let connection = connection
        .connect_with(ByteStreams::new(stdin.compat_write(), stdout.compat()), async |cx: ConnectionTo<Agent>| {
            driver.drive(cx, commands, inbound_rx).await
        });
    let mut connection = std::pin::pin!(connection);
    // The connection alone notices a dead process only when it next writes to it.
    let mut exit = None;
    let connected = tokio::select! {
        result = &mut connection => result,
        status = child.wait() => {
            exit = status.ok();
            // Take in what the process wrote before it died.
            tokio::time::timeout(DRAIN_AFTER_EXIT, &mut connection)
                .await
                .unwrap_or_else(|_| Err(agent_client_protocol::Error::internal_error()))
        }
    };
    match connected {
        Ok(Ok(())) => None,
        Ok(Err(failure)) => Some(failure),
        Err(err) => {
            // The connection broke: say how the process ended, in its own words.
            let status = match exit {
                Some(status) => Some(status),
                None => tokio::time::timeout(Duration::from_secs(2), child.wait()).await.ok().and_then(Result::ok),
            };
            let how = match status {
                Some(status) => format!("exited ({status})"),
                None => format!("stopped answering ({})", describe(&err)),
            };
            if let Some(reading) = stderr_read {
                // Its last words are still in the pipe until the reader reaches the end.
                let _ = tokio::time::timeout(Duration::from_millis(500), reading).await;
            }
            let tail = last_output(&last_words);
            Some(Failure::Crashed(format!("The agent process `{line}` {how}.{tail} Send a prompt to start it again.")))
        }
    }
}

/// The process has ended (or never started): a turn it was working on ends with
/// the error, and the next prompt starts a fresh process.
async fn ended(
    hub: &dyn HubPort,
    runtime: &SessionRuntime,
    own: &mpsc::UnboundedSender<Command>,
    failure: Option<Failure>,
) {
    // What the agent's background processes could plant between turns (see `sandbox::tidy_git`).
    if let Some(removed) = crate::sandbox::tidy_git(&runtime.root) {
        tracing::warn!(session = %runtime.id, "{removed}");
    }
    let active = {
        let mut state = runtime.state();
        if !state.agent.acp.link.as_ref().is_some_and(|link| link.same_channel(own)) {
            return;
        }
        state.agent.acp.link = None;
        // The modes were the dead process's: the next one says its own.
        runtime.set_agent_modes(None);
        state.agent.acp.waiting = None;
        // A turn paused on its request is taken up again, to be closed below.
        runtime.reopen(hub, &mut state)
    };
    hub.config_changed(&runtime.id);
    match failure {
        Some(failure) if active => {
            runtime.report_error(failure.code(), failure.to_string());
            runtime.end_turn(hub, TurnEnd::error()).await;
        }
        Some(failure) => tracing::warn!(session = %runtime.id, "{failure}"),
        None if active => runtime.end_turn(hub, TurnEnd::ended(ResultStatus::Cancelled)).await,
        None => {}
    }
}

/// The session's side of the connection.
struct Driver {
    hub: Arc<dyn HubPort>,
    runtime: Arc<SessionRuntime>,
    mapper: Mapper,
    /// The request on the card, answered by the user's decision.
    asking: Option<(String, Responder<RequestPermissionResponse>)>,
    /// Requests that came while another was on the card.
    queued: VecDeque<(RequestPermissionRequest, Responder<RequestPermissionResponse>)>,
    /// Calls let run (by the user, a rule, a grant or YOLO) whose outcome the audit trail waits for.
    cleared: HashSet<String>,
    /// Those of them let run during this prompt: its end waits a moment for their results.
    awaited: HashSet<String>,
    /// The user's feedback, sent as the next prompt once this one has stopped.
    next_prompt: Option<String>,
    /// The user rejected or stopped: this prompt's end is `cancelled`.
    stopping: bool,
    /// The user pressed Stop during this prompt (a second Stop ends the process;
    /// the `session/cancel` sent after a reject's grace is not the user's).
    stop_asked: bool,
    /// The turn was stopped during its checkpoint and ended: the Cancels
    /// its stop queued come after, and are dropped.
    stale_cancels: bool,
    /// After a reject: when `session/cancel` follows if the turn has not ended.
    cancel_at: Option<tokio::time::Instant>,
    last_words: LastWords,
    /// The agent's session modes, as it last said them.
    modes: Option<agent_client_protocol::v1::schema::SessionModeState>,
    /// The user answered a card with an option named after a mode (Claude
    /// Code's "Yes, and auto-accept edits" on leaving plan mode is `acceptEdits`):
    /// the agent's switch to that mode is the user's choice.
    mode_picked: Option<String>,
    /// The terminals the agent has open (their commands end with the driver).
    terminals: super::terminals::Terminals,
    /// Commands of calls the hub let run, not yet started in a terminal:
    /// `(tool id, command)`.
    runnable: Vec<(String, String)>,
    /// Paths that edits the hub let run may write through the hub, until
    /// their results: `(tool id, absolute path)`.
    writable: Vec<(String, std::path::PathBuf)>,
}

impl Driver {
    async fn drive(
        mut self,
        cx: ConnectionTo<Agent>,
        mut commands: mpsc::UnboundedReceiver<Command>,
        mut inbound: mpsc::UnboundedReceiver<Inbound>,
    ) -> Result<Result<(), Failure>, agent_client_protocol::Error> {
        let session = match tokio::time::timeout(START_TIMEOUT, self.open_session(&cx, &mut inbound)).await {
            Ok(Ok(session)) => session,
            Ok(Err(err)) if agent_client_protocol::is_incoming_transport_closed(&err) => return Err(err),
            Ok(Err(err)) => {
                let said = last_output(&self.last_words);
                tracing::warn!(session = %self.runtime.id, "the agent did not start a session: {}.{said}", describe(&err));
                return Ok(Err(Failure::Unavailable(format!(
                    "The agent did not start a session: {}.{said}",
                    describe(&err)
                ))));
            }
            Err(_) => {
                return Ok(Err(Failure::Unavailable(format!(
                    "The agent did not answer initialize and session/new within {} s.{}",
                    START_TIMEOUT.as_secs(),
                    last_output(&self.last_words)
                ))))
            }
        };
        self.apply_mode(&cx, &session).await;
        let mut prompt: Option<PromptFuture> = None;
        loop {
            tokio::select! {
                // Updates first: all of a prompt's updates are in before its response.
                biased;
                Some(message) = inbound.recv() => self.inbound(&cx, &session, message, prompt.is_none()).await?,
                command = commands.recv() => match command {
                    None | Some(Command::End) => return Ok(Ok(())),
                    Some(Command::Prompt(text)) => {
                        // The folder is recorded before the agent can change it.
                        self.stale_cancels = false;
                        if !self.runtime.checkpoint_before(&self.hub).await {
                            // Stopped before it began: the prompt is never sent. The
                            // Cancels that stop queued (one a click) are this turn's.
                            self.stale_cancels = true;
                            self.finish(ResultStatus::Cancelled).await;
                            continue;
                        }
                        self.stopping = false;
                        self.stop_asked = false;
                        prompt = Some(self.prompt(&cx, &session, text));
                    }
                    Some(Command::Decided { tool_id, answer, then, agent_option }) => {
                        let approved = matches!(then, Then::GoOn);
                        // A time-out's call did not run, but the turn goes on.
                        let goes_on = approved || matches!(then, Then::Skip);
                        if approved {
                            self.let_run(&tool_id);
                        } else {
                            // The hub reported it skipped: the agent's own "failed" would say it twice.
                            self.mapper.close(&tool_id);
                        }
                        if agent_option {
                            self.note_mode_pick(&answer);
                        }
                        self.decided(&tool_id, answer, then)?;
                        if prompt.is_some() {
                            self.next_queued().await?;
                        } else if let Some(feedback) = self.next_prompt.take() {
                            // The agent asked outside a prompt; the user's instruction is the next one.
                            self.stopping = false;
                            self.cancel_at = None;
                            prompt = Some(self.prompt(&cx, &session, feedback));
                        } else {
                            // The agent asked outside a prompt: that card was the whole turn.
                            self.finish(if goes_on { ResultStatus::Success } else { ResultStatus::Cancelled }).await;
                        }
                    }
                    Some(Command::SetMode { mode_id, done }) => {
                        let _ = done.send(self.set_mode(&cx, &session, &mode_id).await);
                    }
                    // A turn already ended by its stop: nothing is left to stop.
                    Some(Command::Cancel) if self.stale_cancels && prompt.is_none() => {}
                    Some(Command::Cancel) if self.stop_asked && prompt.is_some() => {
                        // Asked to stop twice and still going: the process ends here.
                        return Ok(Err(Failure::Killed(
                            "The agent did not stop when asked, so the hub ended its process. Send a prompt to \
                             start it again."
                                .into(),
                        )));
                    }
                    Some(Command::Cancel) => {
                        self.stop_asked = true;
                        // Stop ends every command the agent runs through the hub, and
                        // what the turn's approved calls might still have started.
                        self.terminals.kill_all();
                        self.runnable.clear();
                        self.writable.clear();
                        // Stop wins over an instruction that waited for the turn's end.
                        self.next_prompt = None;
                        if let Some((id, _)) = &self.asking {
                            self.mapper.close(id);
                        }
                        self.cancel(&cx, &session)?;
                        if prompt.is_none() {
                            self.finish(ResultStatus::Cancelled).await;
                        }
                    }
                },
                () = sleep_until(self.cancel_at) => {
                    // The rejected call's turn did not end by itself.
                    self.cancel_at = None;
                    if prompt.is_some() {
                        self.cancel(&cx, &session)?;
                    }
                }
                response = wait(&mut prompt) => {
                    // Updates the agent sent just before its answer may still be on their way in.
                    tokio::task::yield_now().await;
                    while let Ok(message) = inbound.try_recv() {
                        self.inbound(&cx, &session, message, false).await?;
                    }
                    // An agent may answer a prompt a moment before the result of a call it ran
                    // (codex-acp did in 1 of 5 runs): the turn waits a little for it.
                    let deadline = tokio::time::Instant::now() + LATE_RESULTS;
                    while !self.awaited.is_empty() {
                        match tokio::time::timeout_at(deadline, inbound.recv()).await {
                            Ok(Some(message)) => self.inbound(&cx, &session, message, false).await?,
                            _ => break,
                        }
                    }
                    prompt = None;
                    self.cancel_at = None;
                    match (response, self.next_prompt.take()) {
                        (Ok(_), Some(feedback)) => {
                            self.stopping = false;
                            self.stop_asked = false;
                            prompt = Some(self.prompt(&cx, &session, feedback));
                        }
                        (Ok(response), None) => {
                            let (result, error) = mapping::stop_reason(response.stop_reason);
                            if let Some(error) = error {
                                self.runtime.report_error("agent_stopped", error.to_string());
                            }
                            let result = if self.stopping { ResultStatus::Cancelled } else { result };
                            self.finish(result).await;
                        }
                        (Err(err), _) if agent_client_protocol::is_incoming_transport_closed(&err) => return Err(err),
                        (Err(err), _) => {
                            self.runtime.report_error("agent_error", format!("The agent failed: {}", describe(&err)));
                            self.finish(ResultStatus::Error).await;
                        }
                    }
                }
            }
        }
    }

    fn prompt(&self, cx: &ConnectionTo<Agent>, session: &SessionId, text: String) -> PromptFuture {
        let request = PromptRequest::new(session.clone(), vec![ContentBlock::Text(TextContent::new(text))]);
        Box::pin(cx.send_request(request).block_task())
    }

    async fn inbound(
        &mut self,
        cx: &ConnectionTo<Agent>,
        session: &SessionId,
        message: Inbound,
        idle: bool,
    ) -> Result<(), agent_client_protocol::Error> {
        match message {
            Inbound::Update(notification) => {
                if notification.session_id != *session {
                    return Ok(());
                }
                if let SessionUpdate::CurrentModeUpdate(update) = &notification.update {
                    self.mode_changed(cx, session, &update.current_mode_id.0).await;
                }
                // Linked once the call is shown: its live output has a line to go under.
                let links = client::terminals_shown(&notification.update);
                let mut events = self.mapper.update(notification.update);
                for event in &mut events {
                    // A call that ran in the hub's terminal: its result is what the hub ran.
                    if let AgentEvent::ToolResult { tool_id, output: output @ Some(_), .. } = event {
                        if let Some(result) = self.terminal_result(tool_id) {
                            *output = Some(result);
                        }
                    }
                }
                let asking = self.asking.as_ref().map(|(id, _)| id.clone());
                let card_changed = events.iter().any(
                    |event| matches!(event, AgentEvent::ToolUpdate { tool_id, .. } if Some(tool_id) == asking.as_ref()),
                );
                // Between turns (a command the agent let run in the background ended) open pages refetch.
                let between_turns = idle && !events.is_empty() && !self.runtime.state().machine.is_running();
                for event in events {
                    if let AgentEvent::ToolResult { tool_id, status, .. } = &event {
                        self.awaited.remove(tool_id);
                        // What a call let run may do through the hub ends with it.
                        self.writable.retain(|(id, _)| id != tool_id);
                        self.runnable.retain(|(id, _)| id != tool_id);
                        if self.cleared.remove(tool_id) {
                            let ran = *status == protocol::events::ToolStatus::Success;
                            self.runtime.audit_outcome(tool_id, if ran { Outcome::Ran } else { Outcome::Failed });
                        }
                    }
                    self.runtime.log.push(event);
                }
                for (terminal_id, tool_id) in links {
                    self.terminals.link(&terminal_id, &tool_id);
                }
                if between_turns {
                    self.hub.projects_changed();
                }
                if card_changed {
                    self.rejudge_asking();
                }
            }
            // Another session's request (this process serves one) is never answered as this one's.
            Inbound::Permission(request, responder) if request.session_id != *session => {
                responder.respond(mapping::cancelled())?;
            }
            Inbound::Permission(request, responder) => {
                // A card outside a prompt opens a turn of its own, which a Stop ends.
                self.stale_cancels = false;
                self.permission(request, responder, idle).await?
            }
            Inbound::Serve(service) => self.serve(service, session).await?,
        }
        Ok(())
    }

    /// A call the hub let run (the user, a rule, a grant or YOLO): its outcome
    /// goes to the audit trail, the prompt's end waits for its result, and a
    /// command it says may start in a terminal, once.
    fn let_run(&mut self, tool_id: &str) {
        self.cleared.insert(tool_id.to_string());
        self.awaited.insert(tool_id.to_string());
        let call = super::rule_call::rule_call(&self.mapper.fields(tool_id));
        if let Some(command) = call.args["command"].as_str().filter(|_| call.name == "run_shell_command") {
            self.runnable.push((tool_id.to_string(), command.to_string()));
        }
        let edit = call.name == "write_file" || call.name == "replace";
        for each in call.each_path().iter().filter(|_| edit) {
            if let Some(path) = each.args["file_path"].as_str().filter(|path| !path.is_empty()) {
                self.writable.push((tool_id.to_string(), client::absolute(&self.runtime.root, path)));
            }
        }
    }

    fn push_all(&self, events: Vec<AgentEvent>) {
        for event in events {
            self.runtime.log.push(event);
        }
    }

    /// `session/cancel`; every request still waiting is answered `cancelled`, as ACP requires.
    /// (An instruction waiting for the turn's end is kept: it is sent once the cancelled turn ends.)
    fn cancel(&mut self, cx: &ConnectionTo<Agent>, session: &SessionId) -> Result<(), agent_client_protocol::Error> {
        self.stopping = true;
        self.cancel_at = None;
        self.withdraw_requests()?;
        cx.send_notification(CancelNotification::new(session.clone()))
    }

    /// The prompt is over: a request it left unanswered is answered `cancelled`.
    async fn finish(&mut self, result: ResultStatus) {
        self.stopping = false;
        self.stop_asked = false;
        self.cancel_at = None;
        // `cleared` stays: a result that comes later (between turns) still gets its audit outcome.
        self.awaited.clear();
        self.mode_picked = None;
        // The connection's failure, if any, shows at its end.
        let _ = self.withdraw_requests();
        self.runtime.state().agent.acp.waiting = None;
        self.runtime.end_turn(&self.hub, TurnEnd::ended(result)).await;
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// A loaded session's history comes back as updates, partly after the load's
/// response (Gemini CLI streams it without waiting); it is in the log already.
/// Everything up to a short silence is that replay.
async fn skip_replay(inbound: &mut mpsc::UnboundedReceiver<Inbound>) {
    let deadline = tokio::time::Instant::now() + REPLAY_LIMIT;
    while let Ok(Some(message)) =
        tokio::time::timeout_at(deadline.min(tokio::time::Instant::now() + REPLAY_SILENCE), inbound.recv()).await
    {
        match message {
            Inbound::Permission(_, responder) => {
                let _ = responder.respond(mapping::cancelled());
            }
            Inbound::Serve(service) => {
                let _ = service.refuse("The hub does not serve requests while the session is being loaded.");
            }
            Inbound::Update(_) => {}
        }
    }
}

async fn wait(prompt: &mut Option<PromptFuture>) -> Result<PromptResponse, agent_client_protocol::Error> {
    match prompt {
        Some(prompt) => prompt.await,
        None => std::future::pending().await,
    }
}

fn describe(err: &agent_client_protocol::Error) -> String {
    let mut text = err.message.clone();
    if let Some(data) = err.data.as_ref().filter(|data| !data.is_null()) {
        text.push_str(&format!(" ({})", data.as_str().map_or_else(|| data.to_string(), str::to_string)));
    }
    text
}
