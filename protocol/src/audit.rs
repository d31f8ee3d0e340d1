//! The audit trail (`GET /api/audit`): who decided each call, how, and what came of it.

use serde::{Deserialize, Serialize};

words! {
    /// What was decided on a call (an audit row's `decision`).
    pub enum AuditDecision {
        /// A rule, YOLO, a session grant or the read-only default let it run.
        Allowed = "allowed",
        Approved = "approved",
        /// Approved with the user's own version of the edit.
        ApprovedEdited = "approved_edited",
        ApprovedSession = "approved_session",
        ApprovedAlways = "approved_always",
        Rejected = "rejected",
        /// The user told the agent what to do instead; the call was skipped.
        Feedback = "feedback",
        /// A deny rule refused it.
        Denied = "denied",
        /// It failed the hub's own checks before any card (a path outside the folder…).
        Refused = "refused",
        /// Stop withdrew its card.
        Stopped = "stopped",
        /// The user picked an ACP agent's own "always" option: the agent keeps it, not the hub.
        ApprovedAgentAlways = "approved_agent_always",
        RejectedAgentAlways = "rejected_agent_always",
        /// Approved, and the same tool's later calls in this turn run without a card.
        ApprovedTurn = "approved_turn",
        /// Nobody decided within the folder's approval timeout: not run.
        TimedOut = "timed_out",
        /// Approved to run once with the network, the folder's being off.
        ApprovedNetwork = "approved_network",
        /// Approved to run once outside the sandbox, which had refused the same command.
        ApprovedUnsandboxed = "approved_unsandboxed",
    }
}

words! {
    /// Who made a call's decision (an audit row's `decidedBy`).
    pub enum Decider {
        User = "user",
        /// A policy rule; the row's `rule` names it.
        Rule = "rule",
        Yolo = "yolo",
        SessionGrant = "session_grant",
        /// "Yes, for this turn" given for the tool.
        TurnGrant = "turn_grant",
        /// The built-in agent runs read-only tools without asking.
        ReadOnlyDefault = "read_only_default",
        /// The hub's own checks.
        Hub = "hub",
    }
}

words! {
    /// What came of a call (an audit row's `outcome`).
    pub enum Outcome {
        Ran = "ran",
        Failed = "failed",
        Denied = "denied",
        Rejected = "rejected",
        Skipped = "skipped",
        /// The hub stopped (a crash, kill -9) while it ran.
        Interrupted = "interrupted",
        Stopped = "stopped",
    }
}

/// One call's decision and outcome in the audit trail (`GET /api/audit`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub id: u64,
    /// When the decision was made, milliseconds since the Unix epoch.
    pub at: u64,
    pub folder_path: String,
    pub session_id: String,
    pub tool_id: String,
    pub tool_name: String,
    /// The call's arguments, readable and short (a command, a path).
    pub summary: String,
    pub decision: AuditDecision,
    pub decided_by: Decider,
    /// The rule that decided, when one did: its source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The paired device the user decided from, over the remote listener (an addition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DecidingDevice>,
    /// None yet while it waits or runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome_at: Option<u64>,
}

/// A paired device, as an audit row names the one a decision came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidingDevice {
    pub id: String,
    pub name: String,
}

/// Filters of `GET /api/audit`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditQuery {
    #[serde(default)]
    pub folder_path: Option<String>,
    #[serde(default)]
    pub session_id: Option<String>,
    /// Only decisions made after this time (milliseconds since the Unix epoch).
    #[serde(default)]
    pub after: Option<u64>,
    /// `ndjson` (default) or `csv`.
    #[serde(default)]
    pub format: Option<String>,
    /// At most this many entries, newest last (default and maximum 10 000).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_word_is_its_serde_name_and_reads_back() {
        fn check<T>(all: &[T])
        where
            T: Serialize + for<'de> Deserialize<'de> + std::fmt::Display + std::fmt::Debug + PartialEq,
        {
            for variant in all {
                let word = variant.to_string();
                assert_eq!(serde_json::to_value(variant).unwrap(), word.as_str(), "{variant:?}");
                assert_eq!(&serde_json::from_value::<T>(word.clone().into()).unwrap(), variant);
            }
        }
        check(AuditDecision::ALL);
        check(Decider::ALL);
        check(Outcome::ALL);
        assert_eq!(AuditDecision::from_word("approved_turn "), AuditDecision::Other("approved_turn ".into()));
        assert_eq!(AuditDecision::ALL.len(), 16);
    }

    #[test]
    fn an_entry_reads_and_writes_the_contracts_words() {
        let text = r#"{"id":1,"at":2,"folderPath":"/p","sessionId":"s","toolId":"t","toolName":"run_shell_command",
            "summary":"ls","decision":"approved_agent_always","decidedBy":"session_grant","outcome":"interrupted"}"#;
        let entry: AuditEntry = serde_json::from_str(text).unwrap();
        assert_eq!(
            (entry.decision.clone(), entry.decided_by.clone(), entry.outcome.clone()),
            (AuditDecision::ApprovedAgentAlways, Decider::SessionGrant, Some(Outcome::Interrupted))
        );
        let back = serde_json::to_value(&entry).unwrap();
        assert_eq!(
            (back["decision"].as_str(), back["decidedBy"].as_str()),
            (Some("approved_agent_always"), Some("session_grant"))
        );
        // A newer hub's word is kept as it is, not an error that hides the row.
        let newer: AuditEntry = serde_json::from_str(&text.replace("interrupted", "exploded")).unwrap();
        assert_eq!(newer.outcome, Some(Outcome::Other("exploded".into())));
    }
}
