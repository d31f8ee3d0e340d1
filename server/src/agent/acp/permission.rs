//! A permission request judged before any card, as the built-in agent's calls
//! are: the folder's rules first (a deny or an ask holds in YOLO too), then the
//! session's grants and YOLO. What the hub answers by itself is recorded in the
//! audit trail and shown on the call's line.

use agent_client_protocol::v1::schema::{RequestPermissionRequest, RequestPermissionResponse};
use app::events::{AgentEvent, ToolError, ToolStatus};

use super::mapping;
use super::rule_call::{rule_call, RuleCall};
use crate::agent::audit::Outcome;
use crate::agent::gate::{self, Facts};
use crate::agent::protected::touches_settings;
use crate::agent::SessionRuntime;
use crate::approval::{Decision, Initial};
use crate::hub::Hub;
use crate::policy::{Mode, ToolCall};

/// What the hub makes of a request.
pub(super) enum Judged {
    /// A rule, a grant or YOLO allowed it: the answer lets it run.
    Allowed(RequestPermissionResponse),
    /// A rule denied it: the answer rejects it, and `result` reports it so.
    Denied { answer: RequestPermissionResponse, result: Box<AgentEvent> },
    /// It goes on the card.
    Ask(RuleCall),
}

/// Judges the request; the events that announce it (from the mapper) get the
/// rule that decided it. A request answered here is recorded in the audit trail.
pub(super) fn judge(
    hub: &Hub,
    runtime: &SessionRuntime,
    request: &RequestPermissionRequest,
    announce: &mut [AgentEvent],
) -> Judged {
    let call = rule_call(&request.tool_call.fields);
    let yolo = hub.yolo(&runtime.id);
    let verdict = hub
        .policy_set(&runtime.folder)
        .evaluate(&ToolCall { name: &call.name, args: &call.args }, Mode::from_yolo(yolo));
    let granted = runtime.state().allowed_tools.contains(&call.name);
    let protected = touches_settings(&runtime.folder, &call.name, &call.args);
    let start = gate::start(Facts { refused: false, read_only: false, granted, protected, yolo, verdict: &verdict });
    let tool_id = request.tool_call.tool_call_id.0.to_string();
    for event in announce.iter_mut() {
        if let AgentEvent::ToolUse { tool_id: id, policy, .. } = event {
            if *id == tool_id {
                policy.clone_from(&start.note);
            }
        }
    }
    if let Some((how, by)) = &start.decided {
        runtime.audit_decision(&tool_id, &call.name, &call.args, *how, by);
    }
    match start.initial {
        Initial::Pending | Initial::Asking => Judged::Ask(call),
        Initial::Cleared => Judged::Allowed(mapping::allow_once(&request.options)),
        Initial::Denied(message) => {
            runtime.audit_outcome(&tool_id, Outcome::Denied);
            let result = Box::new(AgentEvent::ToolResult {
                tool_id,
                status: ToolStatus::Error,
                output: None,
                error: Some(ToolError { kind: "denied_by_policy".into(), message }),
                diff: None,
            });
            // A reject the agent offers, else cancelled: either way it does not run.
            let answer = mapping::answer(&Decision::Reject, &request.options).unwrap_or_else(|_| mapping::cancelled());
            Judged::Denied { answer, result }
        }
    }
}
