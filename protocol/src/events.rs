//! The one event type that flows from an agent to the browser: the NDJSON lines
//! of `POST /api/chat/prompt` (Gemini CLI's stream-json schema, snake_case).
//! Both agent kinds produce it, the store keeps it, the UI renders it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// What a tool does, which decides whether it needs a card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Execute,
    Other,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Success,
    Error,
    Skipped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultStatus {
    Success,
    Error,
    WaitingApproval,
    WaitingInput,
    Cancelled,
}

/// Which stream of a command a piece of live output came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Warning,
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputType {
    Approval,
    Choice,
    Text,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDiff {
    pub path: String,
    pub old_text: String,
    pub new_text: String,
}

/// Which rule decided a call, shown on its line in the transcript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyNote {
    pub decision: crate::api::PolicyDecision,
    /// The rule's source: a policy file and rule number, "saved in the hub", or a guard rail.
    pub source: String,
    /// A deny rule's message, or why the call asks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One of the answers an ACP agent offers for a permission request, in its own
/// words; the card's choices are built from them (an addition).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentChoice {
    /// The agent's `optionId`: `decision: "agent_option"` with `optionId` answers it as it is.
    pub id: String,
    /// The agent's label, e.g. "Allow", "Always Allow", "Yes, and don't ask again for this command".
    pub name: String,
    pub kind: ChoiceKind,
}

/// ACP's `PermissionOptionKind`: what the agent does with the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChoiceKind {
    AllowOnce,
    /// The agent remembers it by itself, beyond the hub's view (e.g. codex saves a global rule).
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

impl ChoiceKind {
    pub fn allows(self) -> bool {
        matches!(self, Self::AllowOnce | Self::AllowAlways)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolError {
    #[serde(rename = "type")]
    pub kind: String,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    Init {
        session_id: String,
        model: String,
    },
    Message {
        role: Role,
        content: String,
        delta: bool,
    },
    /// The agent's reasoning, shown collapsed (an addition; ACP's `agent_thought_chunk`).
    Thought {
        content: String,
    },
    ToolUse {
        tool_name: String,
        tool_id: String,
        parameters: Value,
        kind: ToolKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<FileDiff>,
        /// The rule that decided the call without the user, or made it ask (an addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        policy: Option<PolicyNote>,
    },
    /// An announced call as it now stands (an addition): the agent told more
    /// (its command, path or diff came after the first sighting) or asks for
    /// permission. Replaces the call's name, parameters, kind and diff; `choices`
    /// are the agent's answers when it asks.
    ToolUpdate {
        tool_id: String,
        tool_name: String,
        parameters: Value,
        kind: ToolKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<FileDiff>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        choices: Option<Vec<AgentChoice>>,
        /// As on `tool_use`; a later update without it keeps the note shown.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        policy: Option<PolicyNote>,
    },
    ToolResult {
        tool_id: String,
        status: ToolStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<ToolError>,
        /// What an edit really wrote, when the user changed the proposal (an addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<FileDiff>,
    },
    /// A running call's output as it comes, before its `tool_result` (an
    /// addition): a command's stdout or stderr, in order, for the page to show
    /// live. The result still carries the output the model gets.
    ToolOutput {
        tool_id: String,
        stream: OutputStream,
        text: String,
    },
    InputRequest {
        request_id: String,
        input_type: InputType,
        prompt: String,
        choices: Vec<String>,
    },
    Error {
        severity: Severity,
        message: String,
        /// A machine-readable reason, e.g. `agent_unavailable` (an addition).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    Result {
        status: ResultStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pending: Option<Vec<String>>,
    },
}

impl AgentEvent {
    /// Whether this event ends what one HTTP response streams (a turn ended or paused).
    pub fn ends_stream(&self) -> bool {
        matches!(self, Self::Result { .. })
    }
}

/// An event with its per-session sequence number, as streamed and stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeqEvent {
    #[serde(flatten)]
    pub event: AgentEvent,
    pub seq: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_serialize_to_the_stream_json_schema() {
        let tool_use = SeqEvent {
            event: AgentEvent::ToolUse {
                tool_name: "run_shell_command".into(),
                tool_id: "call_1".into(),
                parameters: json!({"command": "ls"}),
                kind: ToolKind::Execute,
                diff: None,
                policy: None,
            },
            seq: 3,
        };
        assert_eq!(
            serde_json::to_value(&tool_use).unwrap(),
            json!({"type": "tool_use", "tool_name": "run_shell_command", "tool_id": "call_1",
                   "parameters": {"command": "ls"}, "kind": "execute", "seq": 3})
        );
        let result = AgentEvent::Result { status: ResultStatus::WaitingApproval, pending: Some(vec!["a".into()]) };
        assert_eq!(
            serde_json::to_value(&result).unwrap(),
            json!({"type": "result", "status": "waiting_approval", "pending": ["a"]})
        );
        let error = AgentEvent::ToolResult {
            tool_id: "t".into(),
            status: ToolStatus::Error,
            output: None,
            error: Some(ToolError { kind: "path_outside_folder".into(), message: "no".into() }),
            diff: None,
        };
        assert_eq!(serde_json::to_value(&error).unwrap()["error"]["type"], "path_outside_folder");
    }

    #[test]
    fn seq_events_round_trip() {
        let event = SeqEvent {
            event: AgentEvent::Message { role: Role::Assistant, content: "hi".into(), delta: true },
            seq: 9,
        };
        let text = serde_json::to_string(&event).unwrap();
        assert_eq!(serde_json::from_str::<SeqEvent>(&text).unwrap(), event);
        assert!(!event.event.ends_stream());
    }
}
