//! The permission requests a driver holds: judged by the folder's rules, on the
//! card, queued behind it, answered by the user's decision or withdrawn.

use agent_client_protocol::v1::schema::{RequestPermissionRequest, RequestPermissionResponse, SessionId};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::Agent;

use super::super::mapping;
use super::super::permission::{self, Judged};
use super::super::rule_call::RuleCall;
use super::super::{Then, Waiting};
use super::Driver;
use crate::agent::TurnEnd;

impl Driver {
    /// Answers a judged request, or puts it on the card.
    pub(super) async fn act(
        &mut self,
        request: RequestPermissionRequest,
        responder: Responder<RequestPermissionResponse>,
        judged: Judged,
    ) -> Result<(), agent_client_protocol::Error> {
        let tool_id = request.tool_call.tool_call_id.0.to_string();
        match judged {
            Judged::Allowed(answer) => {
                self.cleared.insert(tool_id);
                responder.respond(answer)?;
            }
            Judged::Denied { answer, result } => {
                // The agent's own report of the rejected call would say it twice.
                self.mapper.close(&tool_id);
                self.runtime.log.push(*result);
                responder.respond(answer)?;
            }
            Judged::Ask(call) => self.ask(request, responder, call).await,
        }
        Ok(())
    }

    /// After a decision: the requests that waited behind the card, judged again
    /// in order, until one goes on the card.
    pub(super) async fn next_queued(&mut self) -> Result<(), agent_client_protocol::Error> {
        while self.asking.is_none() {
            let Some((request, responder)) = self.queued.pop_front() else { break };
            let judged = permission::judge(&self.hub, &self.runtime, &request, &mut []);
            self.act(request, responder, judged).await?;
        }
        Ok(())
    }

    /// Puts the request on the card: the turn pauses, `waiting_approval`.
    pub(super) async fn ask(
        &mut self,
        request: RequestPermissionRequest,
        responder: Responder<RequestPermissionResponse>,
        call: RuleCall,
    ) {
        let tool_id = request.tool_call.tool_call_id.0.to_string();
        self.runtime.state().acp.waiting = Some(Waiting::new(tool_id.clone(), request.options, call));
        self.asking = Some((tool_id.clone(), responder));
        self.runtime.end_turn(&self.hub, TurnEnd::waiting(vec![tool_id])).await;
    }

    pub(super) fn decided(
        &mut self,
        cx: &ConnectionTo<Agent>,
        session: &SessionId,
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
        match then {
            Then::GoOn => {}
            Then::EndTurn => self.cancel(cx, session)?,
            Then::Prompt(feedback) => {
                // Stopped first, so the agent does nothing more before it reads the feedback.
                self.cancel(cx, session)?;
                self.next_prompt = Some(feedback);
            }
        }
        Ok(())
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
