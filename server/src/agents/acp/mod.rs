//! Agents that speak the Agent Client Protocol (Gemini CLI, claude-code-acp,
//! codex-acp, …) over their stdio, behind the same stream, cards and YOLO
//! switch as the built-in agent. One agent process per session, started on its
//! first prompt in the folder; a decision here answers the agent's
//! `session/request_permission`.

mod connection;
mod files;
pub mod groups;
pub mod mapping;
pub mod modes;
mod permission;
mod process;
pub mod rule_call;
mod terminals;

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{PermissionOption, PermissionOptionId};
use futures::future::BoxFuture;
use protocol::api::AgentModes;
use protocol::events::{AgentChoice, AgentEvent, ChoiceKind, Role};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::builtin::decision_word;
use super::builtin::STOPPED_RESULT;
use super::trail::Authority;
use super::{AgentError, AgentState, SessionRuntime, Start};
use crate::agents::port::HubPort;
use crate::agents::BatchItem;
use crate::approval::{ApprovalBatch, Decision, DecisionError, Initial, NewCall, SkipReason, Step};
use process::Launch;
use protocol::audit::{AuditDecision, Outcome};
use rule_call::RuleCall;

/// What the hub keeps of an ACP agent's session.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AcpState {
    /// The agent's own session id, for `session/load` after a restart or crash.
    pub session_id: Option<String>,
    /// The agent's name and version, as it said at `initialize`.
    pub agent_name: Option<String>,
    /// The session mode the user picked (else the hub picks one that asks).
    #[serde(default)]
    pub chosen_mode: Option<String>,
    /// The permission request shown on the card (gone with the process).
    #[serde(skip)]
    pub waiting: Option<Waiting>,
    /// The running agent process's command channel.
    #[serde(skip)]
    link: Option<mpsc::UnboundedSender<Command>>,
}

/// A permission request waiting for the user. Its decision goes through the
/// same approval state machine as the built-in agent's (a batch of one call),
/// so both agents check decisions alike.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub tool_id: String,
    pub options: Vec<PermissionOption>,
    /// The request as the folder's rules judge it (and a grant or a saved rule names it).
    pub call: RuleCall,
    /// A rule denies the call as the agent described it after it asked: it may
    /// only be rejected (the message says why).
    pub denied: Option<String>,
    batch: ApprovalBatch,
}

impl Waiting {
    pub fn new(tool_id: String, options: Vec<PermissionOption>, call: RuleCall) -> Self {
        let new_call = NewCall {
            tool_id: tool_id.clone(),
            tool_name: tool_id.clone(),
            // The agent applies its own edits: the user's version cannot be written.
            editable: false,
            initial: Initial::Pending,
        };
        // One call: its id cannot repeat.
        let batch = ApprovalBatch::new([new_call]).unwrap_or_default();
        Self { tool_id, options, call, denied: None, batch }
    }
}

/// What the hub asks of a session's agent process.
#[derive(Debug)]
enum Command {
    Prompt(String),
    /// The user decided on the waiting permission request.
    Decided {
        tool_id: String,
        answer: agent_client_protocol::v1::schema::RequestPermissionResponse,
        then: Then,
        /// The user picked one of the agent's own options (`agent_option`).
        agent_option: bool,
    },
    Cancel,
    /// The session was deleted: the process ends (its whole group), reporting nothing.
    End,
    /// The user picked one of the agent's session modes.
    SetMode {
        mode_id: String,
        done: tokio::sync::oneshot::Sender<Result<AgentModes, String>>,
    },
}

/// What follows a decision.
#[derive(Debug)]
enum Then {
    GoOn,
    /// Nobody decided in time: the hub reported the call not run (the agent's
    /// own report of it is not shown again, nor audited), and the agent goes on.
    Skip,
    /// Rejected: the agent ends its turn (`session/cancel` after a grace).
    EndTurn,
    /// Edit: the turn ends and the instruction is the next prompt.
    Prompt(String),
}

/// An ACP agent the hub can run, as `--acp-command` or the agents file names it.
#[derive(Debug)]
pub struct AcpAgent {
    launch: Launch,
    command_line: String,
}

impl AcpAgent {
    /// Splits the command line as a POSIX shell would (quotes, escapes), without running a shell.
    pub fn new(command_line: &str) -> Result<Self, String> {
        let command = shell_words::split(command_line)
            .map_err(|err| format!("--acp-command '{command_line}' cannot be split into words: {err}."))?;
        if command.is_empty() {
            return Err("--acp-command is empty: name the program that starts the agent, e.g. \"gemini --acp\".".into());
        }
        let mut command = command;
        // A relative path means the hub's directory, not each session's folder
        // (where the agent runs): a program of the project's own checkout.
        if command[0].contains('/') && Path::new(&command[0]).is_relative() {
            command[0] = std::path::absolute(&command[0])
                .map_err(|err| format!("--acp-command's program {} cannot be found: {err}.", command[0]))?
                .display()
                .to_string();
        }
        Ok(Self::from_words(command))
    }

    /// The program and its arguments as given (the agents file's `command` and `args`).
    pub fn from_words(command: Vec<String>) -> Self {
        let command_line = shell_words::join(&command);
        Self { launch: Launch { command, passed_env: Vec::new(), env: Vec::new() }, command_line }
    }

    /// Gives the agent these variables of the hub's environment (`--acp-env`).
    pub fn with_env(mut self, names: &[String]) -> Self {
        self.launch.passed_env =
            names.iter().map(|name| name.trim().to_string()).filter(|name| !name.is_empty()).collect();
        self
    }

    /// Sets these variables for the agent (the agents file's `env`).
    pub fn with_vars(mut self, vars: impl IntoIterator<Item = (String, String)>) -> Self {
        self.launch.env = vars.into_iter().collect();
        self
    }

    pub fn command_line(&self) -> &str {
        &self.command_line
    }

    /// The variables of the hub's environment passed on (`--acp-env`).
    pub fn passed_env(&self) -> &[String] {
        &self.launch.passed_env
    }

    /// A variable the agents file sets for the agent.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.launch.env.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
    }

    /// The program that starts the agent.
    pub fn program(&self) -> &str {
        self.launch.command.first().map_or("", String::as_str)
    }

    /// Checks and records the start of a turn and hands it to the session's
    /// agent process (started here when none runs). Everything happens under
    /// the session's lock, so a process that dies meanwhile is seen either by
    /// this (a new one starts) or by its own end (which reports the turn).
    pub fn begin(
        &self,
        hub: &Arc<dyn HubPort>,
        runtime: &Arc<SessionRuntime>,
        start: Start,
    ) -> Result<u64, AgentError> {
        let mut guard = runtime.state();
        guard.machine.check(start.starting()).map_err(|refusal| AgentError::refused(&runtime.id, refusal))?;
        let after = runtime.log.last_seq();
        let state = &mut guard.agent;
        let command = match start {
            Start::Answer { request_id, .. } => return Err(AgentError::question_not_pending(&request_id)),
            Start::TimeOut { after_secs, .. } => time_out(runtime, state, after_secs)?,
            Start::Decide { tool_id, decision } => decide(runtime, state, &tool_id, decision, None)?,
            Start::AgentOption { tool_id, option_id } => {
                let waiting = state.acp.waiting.as_ref().filter(|waiting| waiting.tool_id == tool_id);
                let Some(option) =
                    waiting.and_then(|waiting| waiting.options.iter().find(|o| *o.option_id.0 == *option_id))
                else {
                    return Err(match waiting {
                        Some(_) => AgentError::Invalid(format!(
                            "The agent offers no option '{option_id}' for tool call '{tool_id}'."
                        )),
                        None => AgentError::call_not_pending(&tool_id),
                    });
                };
                let chosen = mapping::choice(option);
                let decision = if chosen.kind.allows() { Decision::Approve } else { Decision::Reject };
                decide(runtime, state, &tool_id, decision, Some(chosen))?
            }
            Start::Prompt(text) => match state.acp.waiting.clone() {
                // Let through by the machine only as a decision word while the call waits.
                Some(waiting) => {
                    let Some(decision) = decision_word(&text) else {
                        return Err(AgentError::refused(&runtime.id, crate::session::Refusal::WaitingDecision));
                    };
                    let command = decide(runtime, state, &waiting.tool_id, decision, None)?;
                    runtime.log.push(AgentEvent::Message { role: Role::User, content: text, delta: false });
                    command
                }
                None => {
                    // A new turn: no grant of an earlier one carries over.
                    state.turn_tools.clear();
                    let model = state.acp.agent_name.clone().unwrap_or_else(|| self.command_line.clone());
                    runtime.log.push(AgentEvent::Init { session_id: runtime.id.clone(), model });
                    runtime.log.push(AgentEvent::Message { role: Role::User, content: text.clone(), delta: false });
                    Command::Prompt(text)
                }
            },
        };
        self.send(hub, runtime, &mut guard, command);
        Ok(after)
    }

    /// Decides several waiting calls at once (the inbox's batch): the one on
    /// the card is decided as alone; an ACP agent asks one at a time, so any
    /// other is not waiting. Returns each decision's result, in order, and the
    /// last seq before the turn's first event when one started.
    pub fn decide_many(
        &self,
        hub: &Arc<dyn HubPort>,
        runtime: &Arc<SessionRuntime>,
        decisions: Vec<BatchItem>,
    ) -> (Vec<Result<(), AgentError>>, Option<u64>) {
        let mut guard = runtime.state();
        let after = runtime.log.last_seq();
        let mut decided = None;
        let results = decisions
            .into_iter()
            .map(|item| {
                let starting = crate::session::Starting::Decide(&item.tool_id);
                guard.machine.check(starting).map_err(|refusal| AgentError::refused(&runtime.id, refusal))?;
                guard.agent.check_seen(&item)?;
                decided = Some(decide(runtime, &mut guard.agent, &item.tool_id, item.decision, None)?);
                Ok(())
            })
            .collect();
        let Some(command) = decided else { return (results, None) };
        self.send(hub, runtime, &mut guard, command);
        (results, Some(after))
    }

    /// Hands the turn's start to the session's agent process (started here
    /// when none runs) and records it; call with the state locked.
    fn send(
        &self,
        hub: &Arc<dyn HubPort>,
        runtime: &Arc<SessionRuntime>,
        guard: &mut crate::agents::SessionState,
        command: Command,
    ) {
        let link = match guard.agent.acp.link.clone().filter(|link| !link.is_closed()) {
            Some(link) => link,
            None => {
                let link = connection::start(hub.clone(), runtime.clone(), self.launch.clone());
                guard.agent.acp.link = Some(link.clone());
                link
            }
        };
        // The receiver lives until the process's end is recorded, under this lock.
        let _ = link.send(command);
        runtime.start_turn(&**hub, guard);
    }

    /// Stops the running turn (`session/cancel`); a waiting permission request is answered `cancelled`.
    pub fn cancel(&self, hub: &dyn HubPort, runtime: &SessionRuntime) -> Result<u64, AgentError> {
        let mut state = runtime.state();
        let link = state.agent.acp.link.clone().filter(|link| !link.is_closed());
        let (Ok(_), Some(link)) = (state.machine.stop(), link) else {
            return Err(AgentError::NotRunning);
        };
        let after = runtime.log.last_seq();
        runtime.stop_checkpoint();
        if let Some(waiting) = state.agent.acp.waiting.take() {
            let call = &waiting.call;
            runtime.audit_decision(&waiting.tool_id, &call.name, &call.args, AuditDecision::Stopped, &Authority::User);
            runtime.audit_outcome(&waiting.tool_id, Outcome::Stopped);
            runtime.report_skipped(waiting.tool_id, STOPPED_RESULT);
        }
        let _ = link.send(Command::Cancel);
        runtime.reopen(hub, &mut state);
        Ok(after)
    }
}

impl AcpAgent {
    /// Puts the session's agent in the user's mode; answers the modes as they now are.
    pub async fn set_mode(&self, runtime: &SessionRuntime, mode_id: String) -> Result<AgentModes, AgentError> {
        if mode_id.trim().is_empty() {
            return Err(AgentError::Invalid("modeId must name one of the agent's modes.".into()));
        }
        let link = runtime.state().agent.acp.link.clone().filter(|link| !link.is_closed());
        let (Some(link), Some(_)) = (link, runtime.agent_modes()) else { return Err(AgentError::NotStarted) };
        let (done, answer) = tokio::sync::oneshot::channel();
        link.send(Command::SetMode { mode_id, done }).map_err(|_| AgentError::NotStarted)?;
        match tokio::time::timeout(std::time::Duration::from_secs(15), answer).await {
            Ok(Ok(Ok(modes))) => Ok(modes),
            Ok(Ok(Err(message))) => Err(AgentError::Invalid(message)),
            Ok(Err(_)) => Err(AgentError::NotStarted),
            Err(_) => Err(AgentError::ModeTimeout),
        }
    }
}

impl crate::agents::Agent for AcpAgent {
    fn begin(&self, hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>, start: Start) -> Result<u64, AgentError> {
        AcpAgent::begin(self, hub, runtime, start)
    }

    fn decide_many(
        &self,
        hub: &Arc<dyn HubPort>,
        runtime: &Arc<SessionRuntime>,
        decisions: Vec<BatchItem>,
    ) -> (Vec<Result<(), AgentError>>, Option<u64>) {
        AcpAgent::decide_many(self, hub, runtime, decisions)
    }

    fn cancel<'a>(
        &'a self,
        hub: &'a Arc<dyn HubPort>,
        runtime: &'a Arc<SessionRuntime>,
    ) -> BoxFuture<'a, Result<u64, AgentError>> {
        Box::pin(std::future::ready(AcpAgent::cancel(self, &**hub, runtime)))
    }

    /// A waiting permission request dies with the agent's process anyway.
    fn stop_running(&self, hub: &Arc<dyn HubPort>, runtime: &Arc<SessionRuntime>) {
        if let Err(err) = AcpAgent::cancel(self, &**hub, runtime) {
            tracing::debug!(session = %runtime.id, "not stopped: {err}");
        }
    }

    fn set_mode<'a>(
        &'a self,
        runtime: &'a SessionRuntime,
        mode_id: String,
    ) -> BoxFuture<'a, Result<AgentModes, AgentError>> {
        Box::pin(AcpAgent::set_mode(self, runtime, mode_id))
    }
}

/// The session is being deleted: its agent process, if one runs, ends with
/// its whole group (as when a session lets go of it), and its end reports
/// nothing. Call with the state locked.
pub fn end_process(state: &mut AgentState) {
    state.acp.waiting = None;
    if let Some(link) = state.acp.link.take() {
        let _ = link.send(Command::End);
    }
}

/// Nobody decided in time: the waiting request is rejected once (else
/// cancelled), recorded `timed_out` by the hub, and the agent goes on.
fn time_out(runtime: &SessionRuntime, state: &mut AgentState, after_secs: u64) -> Result<Command, AgentError> {
    if state.acp.link.as_ref().is_none_or(|link| link.is_closed()) {
        return Err(AgentError::NotPending("The agent's process has ended; nothing waits.".into()));
    }
    let waiting = state.acp.waiting.take().ok_or_else(|| AgentError::NotPending("Nothing waits.".into()))?;
    let answer = mapping::answer(&Decision::Reject, &waiting.options).unwrap_or_else(|_| mapping::cancelled());
    let call = &waiting.call;
    runtime.audit_decision(&waiting.tool_id, &call.name, &call.args, AuditDecision::TimedOut, &Authority::Hub);
    runtime.audit_outcome(&waiting.tool_id, Outcome::Skipped);
    runtime.report_timed_out(waiting.tool_id.clone(), crate::approval::timed_out_result(after_secs, false));
    Ok(Command::Decided { tool_id: waiting.tool_id, answer, then: Then::Skip, agent_option: false })
}

/// The command for the user's decision on the waiting request (`option`: one
/// of the agent's own options, answered as it is); nothing changes on error.
fn decide(
    runtime: &SessionRuntime,
    state: &mut AgentState,
    tool_id: &str,
    decision: Decision,
    option: Option<AgentChoice>,
) -> Result<Command, AgentError> {
    if matches!(decision, Decision::ApproveNetwork | Decision::ApproveUnsandboxed) {
        return Err(AgentError::Invalid(
            "approve_network and approve_unsandboxed are for the built-in agent's commands: an ACP agent's commands \
             run in the terminals the hub opens for it, as the card's call was judged."
                .into(),
        ));
    }
    if state.acp.link.as_ref().is_none_or(|link| link.is_closed()) {
        // Its end is being recorded; the request died with the process.
        return Err(AgentError::NotPending(format!(
            "Tool call '{tool_id}' is gone: the agent's process has ended. Send a new prompt."
        )));
    }
    let not_waiting = || AgentError::call_not_pending(tool_id);
    let waiting = state.acp.waiting.as_ref().filter(|waiting| waiting.tool_id == tool_id).ok_or_else(not_waiting)?;
    let allows = match (&decision, &option) {
        (_, Some(option)) => option.kind.allows(),
        (
            Decision::Approve
            | Decision::ApproveSession
            | Decision::ApproveTurn
            | Decision::ApproveAlways
            | Decision::ApproveNetwork
            | Decision::ApproveUnsandboxed,
            None,
        ) => true,
        (Decision::Reject | Decision::Edit { .. }, None) => false,
    };
    if let (true, Some(message)) = (allows, &waiting.denied) {
        return Err(AgentError::Invalid(format!(
            "The agent changed this call after asking, and a rule denies it as it now reads ({message}): reject it."
        )));
    }
    // On a copy: nothing changes unless the decision is taken whole.
    let mut batch = waiting.batch.clone();
    batch.decide(tool_id, decision.clone()).map_err(|err| match err {
        DecisionError::NotPending(_) => not_waiting(),
        DecisionError::ContentNotEditable(_) => AgentError::Invalid(
            "This agent applies its own edits, so a changed version cannot be applied; reject it, or say \
             what to do instead (decision edit with editInstruction)."
                .into(),
        ),
        DecisionError::BlankInstruction
        | DecisionError::NetworkForCommandsOnly(_)
        | DecisionError::UnsandboxedForCommandsOnly(_) => AgentError::Invalid(err.to_string()),
    })?;
    let answer = match &option {
        Some(option) => mapping::selected(PermissionOptionId::new(option.id.clone())),
        None => mapping::answer(&decision, &waiting.options).map_err(AgentError::Invalid)?,
    };
    let then = match batch.step() {
        Ok(Step::Run { .. }) => Then::GoOn,
        // The agent reports nothing for a call it did not run; the hub says why.
        Ok(Step::Skip { result, reason: SkipReason::Feedback, .. }) => {
            runtime.report_skipped(tool_id.to_string(), &result);
            Then::Prompt(result)
        }
        Ok(Step::Skip { result, .. }) => {
            runtime.report_skipped(tool_id.to_string(), &result);
            Then::EndTurn
        }
        other => {
            tracing::error!(session = %runtime.id, "an ACP decision left the call at {other:?}");
            return Err(not_waiting());
        }
    };
    let call = waiting.call.clone();
    let agent_option = option.is_some();
    let (verdict, outcome) = match (&decision, option.map(|option| option.kind)) {
        (_, Some(ChoiceKind::AllowAlways)) => (AuditDecision::ApprovedAgentAlways, None),
        (_, Some(ChoiceKind::RejectAlways)) => (AuditDecision::RejectedAgentAlways, Some(Outcome::Rejected)),
        (Decision::Approve | Decision::ApproveNetwork | Decision::ApproveUnsandboxed, _) => {
            (AuditDecision::Approved, None)
        }
        (Decision::ApproveSession, _) => {
            state.allowed_tools.insert(call.name.clone());
            (AuditDecision::ApprovedSession, None)
        }
        (Decision::ApproveTurn, _) => {
            state.turn_tools.insert(call.name.clone());
            (AuditDecision::ApprovedTurn, None)
        }
        (Decision::ApproveAlways, _) => (AuditDecision::ApprovedAlways, None),
        (Decision::Reject, _) => (AuditDecision::Rejected, Some(Outcome::Rejected)),
        (Decision::Edit { .. }, _) => (AuditDecision::Feedback, Some(Outcome::Skipped)),
    };
    runtime.audit_decision(tool_id, &call.name, &call.args, verdict, &Authority::User);
    if let Some(outcome) = outcome {
        runtime.audit_outcome(tool_id, outcome);
    }
    state.acp.waiting = None;
    Ok(Command::Decided { tool_id: tool_id.to_string(), answer, then, agent_option })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_splits_like_a_shell_and_empty_is_refused() {
        let agent = AcpAgent::new("gemini --acp -m 'gemini 2.5'").unwrap();
        assert_eq!(agent.launch.command, ["gemini", "--acp", "-m", "gemini 2.5"]);
        assert_eq!(agent.command_line(), "gemini --acp -m 'gemini 2.5'");
        assert!(AcpAgent::new("  ").is_err());
        assert!(AcpAgent::new("gemini 'unclosed").is_err());
    }
}
