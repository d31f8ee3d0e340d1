//! The one gate, for both agent kinds: whether a call may run, from what will
//! run (its typed arguments, the command as the shell reads it), the policy
//! rules (a deny or an ask holds even in YOLO and over a session grant), the
//! hub's protected paths, then the session's grants, YOLO, and the built-in
//! agent's read-only default. Pure: the caller gathers the facts at the instant
//! the call starts (an ACP agent's permission request; the built-in agent's
//! `Step::Judge`), and nothing of the answer is kept for later.

use protocol::api::PolicyDecision;
use protocol::events::PolicyNote;

use super::protected;
use super::trail::Authority;
use crate::approval::{ApprovalBatch, Initial, Judgement};
use crate::policy;
use protocol::audit::AuditDecision;

/// What the hub knows of a call before deciding where it starts.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The hub's own checks refused it (bad arguments, a path outside the folder):
    /// it is reported, never run, so nobody needs to decide.
    pub refused: bool,
    /// Runs without asking when nothing else speaks (the built-in agent's read-only tools).
    pub read_only: bool,
    /// "Yes, for this session" was given for this tool.
    pub granted: bool,
    /// "Yes, for this turn" was given for this tool, in the turn under way.
    pub turn_granted: bool,
    /// It may change the folder's `.gemini` (settings, policy files): it asks, unless a rule denies it.
    pub protected: bool,
    pub yolo: bool,
    pub verdict: &'a policy::Verdict,
}

/// Where a call starts, who decided that (for the audit trail; `None` while it
/// waits for the user), and the rule to show on its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ruling {
    pub initial: Initial,
    pub decided: Option<(AuditDecision, Authority)>,
    pub note: Option<PolicyNote>,
}

impl Ruling {
    /// The gate's answer as the approval batch takes it at a call's start.
    pub fn judgement(&self) -> Judgement {
        match &self.initial {
            Initial::Cleared => Judgement::Run,
            Initial::Denied(result) => Judgement::Deny(result.clone()),
            Initial::Pending | Initial::Asking => Judgement::Ask,
        }
    }

    /// Nobody could judge the call (its plan is gone, or the hub is recovering):
    /// the user decides.
    pub fn user_decides() -> Ruling {
        Ruling { initial: Initial::Pending, decided: None, note: None }
    }
}

/// After a decision that may loosen things (a grant, a saved rule), the
/// waiting calls the gate would now let run stop waiting; they are judged
/// again when they start. One the gate still stops keeps its card.
pub fn reopen_allowed(batch: &mut ApprovalBatch, mut judge: impl FnMut(&str) -> Option<Ruling>) {
    for id in batch.pending() {
        if judge(&id).is_some_and(|start| start.judgement() == Judgement::Run) {
            batch.reopen(&id);
        }
    }
}

/// What the model gets for a call a rule denies.
pub fn deny_result(message: Option<&str>, source: &str) -> String {
    let why = message.map(str::trim).filter(|message| !message.is_empty());
    match why {
        Some(why) => format!("Denied by policy ({source}): {why}"),
        None => format!("Denied by policy ({source}). This call was not executed."),
    }
}

pub fn start(facts: Facts) -> Ruling {
    let source = facts.verdict.source.clone().unwrap_or_else(|| "a policy rule".to_string());
    let note = |decision| PolicyNote { decision, source: source.clone(), message: facts.verdict.message.clone() };
    if facts.refused {
        return Ruling {
            initial: Initial::Cleared,
            decided: Some((AuditDecision::Refused, Authority::Hub)),
            note: None,
        };
    }
    if facts.protected && facts.verdict.decision != Some(PolicyDecision::Deny) {
        let note = PolicyNote {
            decision: PolicyDecision::AskUser,
            source: protected::PROTECTED_SOURCE.into(),
            message: Some(protected::PROTECTED_MESSAGE.into()),
        };
        return Ruling { initial: Initial::Pending, decided: None, note: Some(note) };
    }
    match facts.verdict.decision {
        Some(PolicyDecision::Deny) => Ruling {
            initial: Initial::Denied(deny_result(facts.verdict.message.as_deref(), &source)),
            decided: Some((AuditDecision::Denied, Authority::Rule(source.clone()))),
            note: Some(note(PolicyDecision::Deny)),
        },
        Some(PolicyDecision::AskUser) => {
            Ruling { initial: Initial::Pending, decided: None, note: Some(note(PolicyDecision::AskUser)) }
        }
        Some(PolicyDecision::Allow) => Ruling {
            initial: Initial::Cleared,
            decided: Some((AuditDecision::Allowed, Authority::Rule(source.clone()))),
            note: Some(note(PolicyDecision::Allow)),
        },
        None => {
            let by = if facts.granted {
                Authority::SessionGrant
            } else if facts.turn_granted {
                Authority::TurnGrant
            } else if facts.yolo {
                Authority::Yolo
            } else if facts.read_only {
                Authority::ReadOnlyDefault
            } else {
                return Ruling { initial: Initial::Pending, decided: None, note: None };
            };
            Ruling { initial: Initial::Cleared, decided: Some((AuditDecision::Allowed, by)), note: None }
        }
    }
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(decision: Option<PolicyDecision>) -> policy::Verdict {
        policy::Verdict {
            decision,
            rule_id: decision.map(|_| "file-1".into()),
            source: decision.map(|_| "team.toml, rule 1".into()),
            message: Some("Not here.".into()),
        }
    }

    fn facts(verdict: &policy::Verdict) -> Facts<'_> {
        Facts {
            refused: false,
            read_only: false,
            granted: false,
            turn_granted: false,
            protected: false,
            yolo: false,
            verdict,
        }
    }

    #[test]
    fn a_deny_or_an_ask_holds_in_yolo_and_over_a_grant() {
        for decision in [PolicyDecision::Deny, PolicyDecision::AskUser] {
            let verdict = verdict(Some(decision));
            let start =
                start(Facts { yolo: true, granted: true, turn_granted: true, read_only: true, ..facts(&verdict) });
            assert_ne!(start.initial, Initial::Cleared, "{decision:?}");
            assert_eq!(start.note.unwrap().decision, decision);
        }
        let denied = start(facts(&verdict(Some(PolicyDecision::Deny))));
        assert_eq!(denied.initial, Initial::Denied("Denied by policy (team.toml, rule 1): Not here.".into()));
        assert_eq!(denied.decided, Some((AuditDecision::Denied, Authority::Rule("team.toml, rule 1".into()))));
    }

    #[test]
    fn an_allow_runs_without_a_card_and_names_its_rule() {
        let start = start(facts(&verdict(Some(PolicyDecision::Allow))));
        assert_eq!(start.initial, Initial::Cleared);
        assert_eq!(start.decided, Some((AuditDecision::Allowed, Authority::Rule("team.toml, rule 1".into()))));
    }

    #[test]
    fn without_a_rule_grants_then_yolo_then_read_only_then_the_user() {
        let none = verdict(None);
        let by = |facts: Facts| start(facts).decided.map(|(_, by)| by);
        assert_eq!(by(Facts { granted: true, yolo: true, ..facts(&none) }), Some(Authority::SessionGrant));
        assert_eq!(by(Facts { turn_granted: true, yolo: true, ..facts(&none) }), Some(Authority::TurnGrant));
        assert_eq!(by(Facts { yolo: true, read_only: true, ..facts(&none) }), Some(Authority::Yolo));
        assert_eq!(by(Facts { read_only: true, ..facts(&none) }), Some(Authority::ReadOnlyDefault));
        let asks = start(facts(&none));
        assert_eq!((asks.initial, asks.decided, asks.note), (Initial::Pending, None, None));
    }

    #[test]
    fn a_refused_call_is_reported_whatever_the_rules_say() {
        let start = start(Facts { refused: true, ..facts(&verdict(Some(PolicyDecision::Deny))) });
        assert_eq!(start.decided, Some((AuditDecision::Refused, Authority::Hub)));
        assert_eq!(start.initial, Initial::Cleared, "it 'runs' to report its failure");
    }

    #[test]
    fn a_write_to_the_folders_settings_asks_over_allows_grants_and_yolo_but_a_deny_holds() {
        let allow = verdict(Some(PolicyDecision::Allow));
        let asks = start(Facts { protected: true, yolo: true, granted: true, turn_granted: true, ..facts(&allow) });
        assert_eq!((asks.initial, asks.decided), (Initial::Pending, None));
        assert_eq!(asks.note.unwrap().source, protected::PROTECTED_SOURCE);
        let deny = verdict(Some(PolicyDecision::Deny));
        assert!(matches!(start(Facts { protected: true, ..facts(&deny) }).initial, Initial::Denied(_)));
    }

    #[test]
    fn a_deny_without_a_message_still_says_it_was_not_run() {
        assert!(deny_result(Some("  "), "x").contains("not executed"));
    }
}
