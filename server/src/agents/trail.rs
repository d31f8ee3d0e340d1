//! What the audit trail records of each call, for both agent kinds: who
//! decided it and how, when it is decided; what came of it, when that is
//! known. Rows are appended through the store's writer and never changed.

use protocol::audit::{AuditDecision, Decider, Outcome};
use serde_json::Value;

use super::SessionRuntime;
use crate::approval::{Decision, SkipReason};
use crate::clock::now_ms;
use crate::store::{DecisionRecord, OutcomeRecord};

tokio::task_local! {
    /// The paired device a request of the remote listener came from, while the
    /// hub acts on that request: the audit names it on the user's decisions.
    pub static DECIDING_DEVICE: Option<protocol::audit::DecidingDevice>;
}

/// The device deciding now, if the user decides from a paired device.
pub(crate) fn deciding_device() -> Option<protocol::audit::DecidingDevice> {
    DECIDING_DEVICE.try_with(Clone::clone).ok().flatten()
}

/// Runs `work` as the device deciding now would (the task-local does not
/// follow work sent to a blocking thread).
pub(crate) fn as_deciding<T>(device: Option<protocol::audit::DecidingDevice>, work: impl FnOnce() -> T) -> T {
    DECIDING_DEVICE.sync_scope(device, work)
}

/// Who let a call run, or kept it from running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authority {
    User,
    /// A policy rule; its source (file and rule number, saved in the hub, guard rail).
    Rule(String),
    Yolo,
    SessionGrant,
    /// "Yes, for this turn", in the turn under way.
    TurnGrant,
    /// The built-in agent runs read-only tools without asking.
    ReadOnlyDefault,
    /// The hub's own checks refused it before any card (a path outside the folder…).
    Hub,
}

impl Authority {
    fn decider(&self) -> Decider {
        match self {
            Self::User => Decider::User,
            Self::Rule(_) => Decider::Rule,
            Self::Yolo => Decider::Yolo,
            Self::SessionGrant => Decider::SessionGrant,
            Self::TurnGrant => Decider::TurnGrant,
            Self::ReadOnlyDefault => Decider::ReadOnlyDefault,
            Self::Hub => Decider::Hub,
        }
    }

    fn rule(&self) -> Option<String> {
        match self {
            Self::Rule(source) => Some(source.clone()),
            _ => None,
        }
    }
}

/// A call that did not run, by why it did not. `None` for a question's answer
/// (questions are not tool calls anyone allows).
pub fn outcome_of_skip(reason: SkipReason) -> Option<Outcome> {
    Some(match reason {
        SkipReason::Rejected => Outcome::Rejected,
        SkipReason::Feedback => Outcome::Skipped,
        SkipReason::Answered => return None,
        SkipReason::Interrupted => Outcome::Interrupted,
        SkipReason::Stopped | SkipReason::StoppedRunning => Outcome::Stopped,
        SkipReason::Denied => Outcome::Denied,
        SkipReason::TimedOut => Outcome::Skipped,
    })
}

/// How the user's decision on one waiting call decided it (`decided`), or
/// another call it settled with it: a rejection or an instruction answers every
/// call still waiting. A grant or a saved rule settles no other call: the gate
/// judges those when they start, and the audit names it then.
pub fn of_user_decision(decision: &Decision, decided: bool) -> Option<(AuditDecision, Authority)> {
    let verdict = match (decision, decided) {
        (Decision::Approve, true) => AuditDecision::Approved,
        (Decision::ApproveNetwork, true) => AuditDecision::ApprovedNetwork,
        (Decision::ApproveUnsandboxed, true) => AuditDecision::ApprovedUnsandboxed,
        (Decision::ApproveSession, true) => AuditDecision::ApprovedSession,
        (Decision::ApproveTurn, true) => AuditDecision::ApprovedTurn,
        (Decision::ApproveAlways, true) => AuditDecision::ApprovedAlways,
        (Decision::Edit { modified_content: Some(_), .. }, true) => AuditDecision::ApprovedEdited,
        (Decision::Reject, _) => AuditDecision::Rejected,
        (Decision::Edit { modified_content: None, .. }, _) => AuditDecision::Feedback,
        _ => return None,
    };
    Some((verdict, Authority::User))
}

impl SessionRuntime {
    /// Appends a decision on a call to the audit trail.
    pub(crate) fn audit_decision(
        &self,
        tool_id: &str,
        tool_name: &str,
        args: &Value,
        decision: AuditDecision,
        by: &Authority,
    ) {
        let Some(store) = &self.store else { return };
        store.record_decision(DecisionRecord {
            at_ms: now_ms(),
            folder: self.folder.display().to_string(),
            session_id: self.id.clone(),
            tool_id: tool_id.to_string(),
            tool_name: tool_name.to_string(),
            summary: crate::audit::summarize(tool_name, args),
            decision,
            decided_by: by.decider(),
            rule: by.rule(),
            // Only the user's own decisions come from a device.
            device: (*by == Authority::User).then(deciding_device).flatten(),
        });
    }

    /// Stop withdrew the cards of the built-in agent's paused turn: each waiting
    /// call was decided "stopped" by the user (its outcome follows as it is closed).
    pub(crate) fn audit_stopped_cards(&self) {
        let state = self.state();
        let Some(paused) = &state.agent.builtin.paused else { return };
        for id in paused.batch.pending() {
            if let Some(call) = paused.calls.get(&id) {
                self.audit_decision(&id, &call.name, &call.args, AuditDecision::Stopped, &Authority::User);
            }
        }
    }

    /// Appends what came of a call to the audit trail.
    pub(crate) fn audit_outcome(&self, tool_id: &str, outcome: Outcome) {
        let Some(store) = &self.store else { return };
        store.record_outcome(OutcomeRecord {
            at_ms: now_ms(),
            session_id: self.id.clone(),
            tool_id: tool_id.to_string(),
            outcome,
        });
    }
}
