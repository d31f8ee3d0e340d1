//! The permission requests a driver holds: judged by the folder's rules, on the
//! card, queued behind it, answered by the user's decision or withdrawn.

use agent_client_protocol::v1::schema::{RequestPermissionRequest, RequestPermissionResponse};
use agent_client_protocol::v1::Responder;
use protocol::events::{AgentEvent, PolicyNote, Severity};

use super::super::mapping;
use super::super::permission::{self, Judged};
use super::super::rule_call::RuleCall;
use super::super::{Then, Waiting};
use super::{Driver, REJECT_GRACE};
use crate::session::TurnEnd;

impl Driver {
    /// A permission request: shown (with the agent's choices), judged on all
    /// the agent said about the call, then answered or put on the card. One
    /// that comes while no prompt runs is a turn of its own, said as such.
    pub(super) async fn permission(
        &mut self,
        request: RequestPermissionRequest,
        responder: Responder<RequestPermissionResponse>,
        idle: bool,
    ) -> Result<(), agent_client_protocol::Error> {
        let mut shown = self.mapper.permission(&request);
        let mut ids = std::collections::HashSet::new();
        if !request.options.iter().all(|option| ids.insert(&option.option_id)) {
            // Two options under one id: a "reject" could be read as the allow.
            self.push_all(shown);
            self.runtime.log.push(AgentEvent::Error {
                severity: Severity::Warning,
                message: "The agent asked with two choices under one id, so no answer could mean one thing: the \
                          hub answered it cancelled."
                    .into(),
                code: Some("ambiguous_request".into()),
            });
            responder.respond(mapping::cancelled())?;
            return Ok(());
        }
        if self.stopping {
            self.push_all(shown);
            responder.respond(mapping::cancelled())?;
            return Ok(());
        }
        // A prompt the user just sent may not have reached the agent yet: that is its turn.
        let unprompted = idle && !self.runtime.state().machine.is_running();
        let tool_id = request.tool_call.tool_call_id.0.to_string();
        let fields = self.mapper.fields(&tool_id);
        // Outside a prompt the agent acts on its own: the user decides even in YOLO (a deny still holds).
        let (judged, mut note) =
            permission::judge_off_thread(&self.hub, &self.runtime, &tool_id, fields, &request.options, unprompted)
                .await;
        if unprompted && matches!(judged, Judged::Ask(_)) {
            self.runtime.log.push(AgentEvent::Error {
                severity: Severity::Warning,
                message: "The agent asked for permission on its own, outside a prompt. Nothing runs unless you \
                          approve it."
                    .into(),
                code: Some("unprompted_request".into()),
            });
        }
        if !matches!(judged, Judged::Ask(_)) {
            // The rule that decided goes on the line that shows the call, when this sighting made one.
            let line = shown.iter_mut().find_map(|event| match event {
                AgentEvent::ToolUse { tool_id: id, policy, .. }
                | AgentEvent::ToolUpdate { tool_id: id, policy, .. }
                    if *id == tool_id =>
                {
                    Some(policy)
                }
                _ => None,
            });
            if let Some(policy) = line {
                *policy = note.take();
            }
        }
        self.push_all(shown);
        match judged {
            // Judged again when its turn comes: a grant or a rule saved meanwhile may allow it.
            Judged::Ask(_) if self.asking.is_some() => self.queued.push_back((request, responder)),
            judged => self.act(request, responder, judged, note).await?,
        }
        Ok(())
    }

    /// The call on the card reads otherwise now (the agent described it again
    /// after asking): the card's call is judged anew, so what the user decides
    /// on, the audit, a grant or a saved rule name what it now says. A deny
    /// leaves only rejecting it; nothing is allowed without the user.
    pub(super) fn rejudge_asking(&mut self) {
        let Some((tool_id, _)) = &self.asking else { return };
        let tool_id = tool_id.clone();
        let fields = self.mapper.fields(&tool_id);
        let Some(options) = self.runtime.state().agent.acp.waiting.as_ref().map(|waiting| waiting.options.clone())
        else {
            return;
        };
        let call = super::super::rule_call::rule_call(&fields);
        let verdict = permission::rules_verdict(&self.hub, &self.runtime, &call, self.hub.yolo(&self.runtime.id));
        let denied = (verdict.decision == Some(protocol::api::PolicyDecision::Deny))
            .then(|| verdict.message.clone().unwrap_or_else(|| "denied by a rule".to_string()));
        if let Some(waiting) =
            self.runtime.state().agent.acp.waiting.as_mut().filter(|waiting| waiting.tool_id == tool_id)
        {
            waiting.call = call;
            waiting.denied = denied.clone();
        }
        if let Some(message) = denied {
            let note = PolicyNote {
                decision: protocol::api::PolicyDecision::Deny,
                source: "the folder's rules".into(),
                message: Some(message),
            };
            self.runtime.log.push(self.mapper.current(&tool_id, Some(&options), Some(note)));
        }
    }

    /// Answers a judged request, or puts it on the card.
    pub(super) async fn act(
        &mut self,
        request: RequestPermissionRequest,
        responder: Responder<RequestPermissionResponse>,
        judged: Judged,
        note: Option<PolicyNote>,
    ) -> Result<(), agent_client_protocol::Error> {
        let tool_id = request.tool_call.tool_call_id.0.to_string();
        if note.is_some() && !matches!(judged, Judged::Ask(_)) {
            // The rule that decided shows on the call's line (already shown before this request).
            self.runtime.log.push(self.mapper.current(&tool_id, None, note.clone()));
        }
        match judged {
            Judged::Allowed(answer) => {
                self.let_run(&tool_id);
                responder.respond(answer)?;
            }
            Judged::Denied { answer, result } => {
                // The agent's own report of the rejected call would say it twice.
                self.mapper.close(&tool_id);
                self.runtime.log.push(*result);
                responder.respond(answer)?;
            }
            Judged::Ask(call) => self.ask(request, responder, call, note).await,
        }
        Ok(())
    }

    /// After a decision: the requests that waited behind the card, judged again
    /// in order, until one goes on the card.
    pub(super) async fn next_queued(&mut self) -> Result<(), agent_client_protocol::Error> {
        while self.asking.is_none() {
            let Some((request, responder)) = self.queued.pop_front() else { break };
            let tool_id = request.tool_call.tool_call_id.0.to_string();
            let fields = self.mapper.fields(&tool_id);
            let (judged, note) =
                permission::judge_off_thread(&self.hub, &self.runtime, &tool_id, fields, &request.options, false).await;
            self.act(request, responder, judged, note).await?;
        }
        Ok(())
    }

    /// Puts the request on the card: the turn pauses, `waiting_approval`.
    pub(super) async fn ask(
        &mut self,
        request: RequestPermissionRequest,
        responder: Responder<RequestPermissionResponse>,
        call: RuleCall,
        note: Option<PolicyNote>,
    ) {
        let tool_id = request.tool_call.tool_call_id.0.to_string();
        // The card: the call as it now stands, with the agent's choices.
        self.runtime.log.push(self.mapper.current(&tool_id, Some(&request.options), note));
        self.runtime.state().agent.acp.waiting = Some(Waiting::new(tool_id.clone(), request.options, call));
        self.asking = Some((tool_id.clone(), responder));
        self.runtime.end_turn(&self.hub, TurnEnd::waiting(vec![tool_id])).await;
    }

    /// Answers the request on the card. After a reject or an instruction the
    /// agent is let end its turn by itself (requests queued behind the card are
    /// withdrawn); `session/cancel` follows only after `REJECT_GRACE`.
    pub(super) fn decided(
        &mut self,
        tool_id: &str,
        answer: RequestPermissionResponse,
        then: Then,
    ) -> Result<(), agent_client_protocol::Error> {
        match self.asking.take() {
            Some((id, responder)) if id == tool_id => responder.respond(answer)?,
            other => {
                tracing::error!(session = %self.runtime.id, "a decision for {tool_id} found no such request");
                self.asking = other;
            }
        }
        let feedback = match then {
            Then::GoOn | Then::Skip => return Ok(()),
            Then::EndTurn => None,
            Then::Prompt(feedback) => Some(feedback),
        };
        self.stopping = true;
        self.next_prompt = feedback;
        self.cancel_at = Some(tokio::time::Instant::now() + REJECT_GRACE);
        self.withdraw_requests()
    }

    /// Answers the request on the card and those queued behind it `cancelled`;
    /// every one is answered, the first failure is returned.
    pub(super) fn withdraw_requests(&mut self) -> Result<(), agent_client_protocol::Error> {
        let asking = self.asking.take().map(|(_, responder)| responder);
        let queued = self.queued.drain(..).map(|(_, responder)| responder);
        asking
            .into_iter()
            .chain(queued)
            .map(|responder| responder.respond(mapping::cancelled()))
            .fold(Ok(()), Result::and)
    }
}
