//! A permission request judged before any card, as the built-in agent's calls
//! are: the folder's rules first (a deny or an ask holds in YOLO too), then the
//! session's grants and YOLO. What the hub answers by itself is recorded in the
//! audit trail and shown on the call's line.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{PermissionOption, RequestPermissionResponse, ToolCallUpdateFields};
use protocol::events::{AgentEvent, PolicyNote, ToolError, ToolStatus};

use super::mapping;
use super::rule_call::{rule_call, RuleCall};
use crate::agents::gate::{self, Facts};
use crate::agents::port::HubPort;
use crate::agents::trail::Authority;
use crate::agents::SessionRuntime;
use crate::approval::{Decision, Initial};
use crate::policy::{Mode, ToolCall, Verdict};
use protocol::audit::{AuditDecision, Outcome};

/// What the hub makes of a request.
pub(super) enum Judged {
    /// A rule, a grant or YOLO allowed it: the answer lets it run.
    Allowed(RequestPermissionResponse),
    /// A rule denied it: the answer rejects it, and `result` reports it so.
    Denied { answer: RequestPermissionResponse, result: Box<AgentEvent> },
    /// It goes on the card.
    Ask(RuleCall),
}

/// What the folder's rules (guard rails included) say of the call in this
/// mode. An edit naming several paths is judged by each: a deny of any denies
/// it, an ask of any asks, and it is allowed by rules only if every path is.
pub(super) fn rules_verdict(hub: &dyn HubPort, runtime: &SessionRuntime, call: &RuleCall, yolo: bool) -> Verdict {
    let rules = hub.policy_set(&runtime.folder);
    let verdicts: Vec<Verdict> = call
        .each_path()
        .iter()
        .map(|call| rules.evaluate(&ToolCall { name: &call.name, args: &call.args }, Mode::from_yolo(yolo)))
        .collect();
    strictest(verdicts)
}

/// The verdict of a call judged path by path (see [`rules_verdict`]).
fn strictest(verdicts: Vec<Verdict>) -> Verdict {
    use protocol::api::PolicyDecision;
    let first = |decision: PolicyDecision| verdicts.iter().find(|verdict| verdict.decision == Some(decision)).cloned();
    if let Some(deny) = first(PolicyDecision::Deny) {
        return deny;
    }
    if let Some(ask) = first(PolicyDecision::AskUser) {
        return ask;
    }
    match verdicts.iter().position(|verdict| verdict.decision.is_none()) {
        // A path no rule spoke for: the call takes the hub's default (grants, YOLO, a card).
        Some(unspoken) => verdicts[unspoken].clone(),
        None => verdicts.into_iter().next().unwrap_or_default(),
    }
}

/// [`judge`], off the async workers: the folder's rules are read from their
/// files and the database.
pub(super) async fn judge_off_thread(
    hub: &Arc<dyn HubPort>,
    runtime: &std::sync::Arc<SessionRuntime>,
    tool_id: &str,
    fields: ToolCallUpdateFields,
    options: &[PermissionOption],
    user_decides: bool,
) -> (Judged, Option<PolicyNote>) {
    let (hub, runtime, id, options) = (hub.clone(), runtime.clone(), tool_id.to_string(), options.to_vec());
    let judging = tokio::task::spawn_blocking(move || judge(&hub, &runtime, &id, &fields, &options, user_decides));
    match judging.await {
        Ok(judged) => judged,
        // A panic while judging: the user decides, as for any call no rule cleared.
        Err(err) => {
            tracing::error!("judging a permission request failed: {err}");
            (Judged::Ask(rule_call(&ToolCallUpdateFields::default())), None)
        }
    }
}

/// Where the gate starts the call now: the folder's rules, the session's
/// grants, the protected paths and YOLO.
fn gate_start(hub: &dyn HubPort, runtime: &SessionRuntime, call: &RuleCall) -> gate::Ruling {
    let yolo = hub.yolo(&runtime.id);
    let verdict = rules_verdict(hub, runtime, call, yolo);
    let (granted, turn_granted) = {
        let state = runtime.state();
        (state.agent.allowed_tools.contains(&call.name), state.agent.turn_tools.contains(&call.name))
    };
    gate::start(Facts {
        refused: false,
        read_only: false,
        granted,
        turn_granted,
        protected: runtime.touches_settings(&call.name, &call.args),
        yolo,
        verdict: &verdict,
    })
}

/// Judges the call `tool_id` as the agent has described it so far (`fields`,
/// every sighting merged), with the rule that decided it or made it ask, for
/// the call's line. A request answered here is recorded in the audit trail.
/// `user_decides`: nothing but a deny answers it without the user (a request
/// the agent made on its own, outside a prompt).
pub(super) fn judge(
    hub: &dyn HubPort,
    runtime: &SessionRuntime,
    tool_id: &str,
    fields: &ToolCallUpdateFields,
    options: &[PermissionOption],
    user_decides: bool,
) -> (Judged, Option<PolicyNote>) {
    let call = rule_call(fields);
    let start = gate_start(hub, runtime, &call);
    let note = start.note;
    let allowed = match start.initial {
        Initial::Pending | Initial::Asking => return (Judged::Ask(call), note),
        // Without an "allow once" the only allow would be one the agent keeps by itself: the user decides.
        Initial::Cleared if user_decides => return (Judged::Ask(call), note),
        Initial::Cleared => match mapping::allow_once(options) {
            Some(answer) => Some(answer),
            None => return (Judged::Ask(call), note),
        },
        Initial::Denied(_) => None,
    };
    if let Some((how, by)) = &start.decided {
        runtime.audit_decision(tool_id, &call.name, &call.args, how.clone(), by);
    }
    match (start.initial, allowed) {
        (Initial::Denied(message), _) => {
            runtime.audit_outcome(tool_id, Outcome::Denied);
            let result = Box::new(AgentEvent::ToolResult {
                tool_id: tool_id.to_string(),
                status: ToolStatus::Error,
                output: None,
                error: Some(ToolError { kind: "denied_by_policy".into(), message }),
                diff: None,
            });
            // A reject the agent offers, else cancelled: either way it does not run.
            let answer = mapping::answer(&Decision::Reject, options).unwrap_or_else(|_| mapping::cancelled());
            (Judged::Denied { answer, result }, note)
        }
        (_, Some(answer)) => (Judged::Allowed(answer), note),
        (_, None) => (Judged::Ask(call), note),
    }
}

/// A command the agent runs through the hub without having asked (its own
/// mode let it): judged as a call of its own by the folder's rules, the
/// session's grants and YOLO, audited under `audit_id`. `picked_mode`: the
/// mode the user put the agent in, when it lets such a call run without
/// asking; it counts only where no rule, guard rail or protection asks. A
/// deny holds in every case; what would need the user is refused (there is
/// no request to put on a card), with the reason the agent reads.
pub(super) fn judge_unasked(
    hub: &dyn HubPort,
    runtime: &SessionRuntime,
    audit_id: &str,
    call: &RuleCall,
    picked_mode: Option<&str>,
) -> Result<(), String> {
    let start = gate_start(hub, runtime, call);
    // Nothing spoke (no rule, guard rail or protection made it ask): only then
    // does the mode the user picked count.
    let nothing_spoke = start.note.is_none();
    let decided = match (start.initial, picked_mode) {
        (Initial::Cleared, _) => start.decided,
        (Initial::Denied(message), _) => {
            return Err(format!("The folder's rules deny this command: {message}"));
        }
        (Initial::Pending, Some(mode)) if nothing_spoke => {
            Some((AuditDecision::Allowed, Authority::Rule(format!("the agent's mode '{mode}', picked by the user"))))
        }
        (Initial::Pending | Initial::Asking, _) => {
            return Err(
                "Nothing runs through the hub without approval, and this was not asked about: ask permission for \
                 it first."
                    .to_string(),
            )
        }
    };
    if let Some((how, by)) = decided {
        runtime.audit_decision(audit_id, &call.name, &call.args, how, &by);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::api::PolicyDecision;

    fn verdict(decision: Option<PolicyDecision>, rule: &str) -> Verdict {
        Verdict { decision, rule_id: Some(rule.into()), ..Verdict::default() }
    }

    #[test]
    fn a_call_judged_path_by_path_takes_the_strictest_verdict() {
        let (allow, ask, deny, none) = (
            verdict(Some(PolicyDecision::Allow), "allow"),
            verdict(Some(PolicyDecision::AskUser), "ask"),
            verdict(Some(PolicyDecision::Deny), "deny"),
            verdict(None, "none"),
        );
        let strictest_of = |list: &[&Verdict]| strictest(list.iter().map(|v| (*v).clone()).collect()).rule_id;
        assert_eq!(strictest_of(&[&allow, &deny]), Some("deny".into()), "a deny of any path denies");
        assert_eq!(strictest_of(&[&allow, &ask, &deny]), Some("deny".into()));
        assert_eq!(strictest_of(&[&allow, &ask]), Some("ask".into()), "an ask of any path asks");
        assert_eq!(strictest_of(&[&allow, &none]), Some("none".into()), "allowed only if every path is");
        assert_eq!(strictest_of(&[&allow, &allow]), Some("allow".into()));
        assert_eq!(strictest_of(&[&none]), Some("none".into()));
    }
}
