//! ACP messages → the hub's events, and the user's decisions → ACP permission
//! options. Plain functions over the protocol types: no IO, tested on messages
//! recorded from Gemini CLI.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionId, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome, SessionUpdate, StopReason,
    ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdateFields, ToolKind as AcpKind,
};
use app::events::{AgentEvent, FileDiff, ResultStatus, Role, ToolError, ToolKind, ToolStatus};
use serde_json::{json, Map, Value};

use crate::approval::Decision;

/// Gemini CLI reports a mode change as a message chunk starting with this.
const MODE_UPDATE: &str = "[MODE_UPDATE]";

/// Turns one session's ACP updates into events, announcing each tool call once
/// and reporting its result once.
#[derive(Debug)]
pub struct Mapper {
    folder: PathBuf,
    announced: HashSet<String>,
    finished: HashSet<String>,
}

impl Mapper {
    pub fn new(folder: PathBuf) -> Self {
        Self { folder, announced: HashSet::new(), finished: HashSet::new() }
    }

    pub fn update(&mut self, update: SessionUpdate) -> Vec<AgentEvent> {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => match text_of(&chunk.content) {
                Some(text) if !text.is_empty() && !text.starts_with(MODE_UPDATE) => {
                    vec![AgentEvent::Message { role: Role::Assistant, content: text.to_string(), delta: true }]
                }
                _ => Vec::new(),
            },
            SessionUpdate::AgentThoughtChunk(chunk) => match text_of(&chunk.content) {
                Some(text) if !text.is_empty() => vec![AgentEvent::Thought { content: text.to_string() }],
                _ => Vec::new(),
            },
            SessionUpdate::ToolCall(call) => self.tool_call(call),
            SessionUpdate::ToolCallUpdate(update) => {
                self.tool_call_update(update.tool_call_id.0.to_string(), update.fields)
            }
            // The user's own chunks are echoed by the hub; plans, commands, modes
            // and usage have no event (yet).
            _ => Vec::new(),
        }
    }

    /// The events for a permission request: its call announced, if it was not yet.
    pub fn permission(&mut self, request: &RequestPermissionRequest) -> Vec<AgentEvent> {
        let id = request.tool_call.tool_call_id.0.to_string();
        self.announce(&id, &request.tool_call.fields).into_iter().collect()
    }

    /// The hub reported this call's end itself (a rule denied it): the agent's own report is not shown again.
    pub fn close(&mut self, id: &str) {
        self.finished.insert(id.to_string());
    }

    fn tool_call(&mut self, call: ToolCall) -> Vec<AgentEvent> {
        let fields = ToolCallUpdateFields::new()
            .kind(call.kind)
            .status(call.status)
            .title(call.title)
            .content(call.content)
            .locations(call.locations)
            .raw_input(call.raw_input)
            .raw_output(call.raw_output)
            .name(call.name);
        self.tool_call_update(call.tool_call_id.0.to_string(), fields)
    }

    fn tool_call_update(&mut self, id: String, fields: ToolCallUpdateFields) -> Vec<AgentEvent> {
        let mut events: Vec<AgentEvent> = self.announce(&id, &fields).into_iter().collect();
        let status = match fields.status {
            Some(ToolCallStatus::Completed) => ToolStatus::Success,
            Some(ToolCallStatus::Failed) => ToolStatus::Error,
            _ => return events,
        };
        if !self.finished.insert(id.clone()) {
            return events;
        }
        let content = fields.content.unwrap_or_default();
        let mut text = texts(&content);
        if text.is_empty() {
            if let Some(output) = fields.raw_output.as_ref().filter(|output| !output.is_null()) {
                text = output.as_str().map_or_else(|| output.to_string(), str::to_string);
            }
        }
        let (output, error) = match status {
            ToolStatus::Error => {
                let message = if text.is_empty() { "The tool failed.".to_string() } else { text };
                (None, Some(ToolError { kind: "tool_failed".into(), message }))
            }
            _ => (Some(text), None),
        };
        let diff = content.iter().find_map(|item| self.diff(item));
        events.push(AgentEvent::ToolResult { tool_id: id, status, output, error, diff });
        events
    }

    /// A `tool_use` for a call seen for the first time.
    fn announce(&mut self, id: &str, fields: &ToolCallUpdateFields) -> Option<AgentEvent> {
        if !self.announced.insert(id.to_string()) {
            return None;
        }
        let content = fields.content.as_deref().unwrap_or_default();
        let title = fields.title.clone().unwrap_or_default();
        let tool_name = fields.name.clone().filter(|name| !name.is_empty()).unwrap_or_else(|| title.clone());
        let mut parameters = match &fields.raw_input {
            Some(Value::Object(map)) => map.clone(),
            Some(value) if !value.is_null() => Map::from_iter([("input".to_string(), value.clone())]),
            _ => Map::new(),
        };
        if parameters.is_empty() {
            if tool_name != title && !title.is_empty() {
                parameters.insert("title".into(), json!(title));
            }
            let details = texts(content);
            if !details.is_empty() {
                parameters.insert("details".into(), json!(details));
            }
            let paths: Vec<String> =
                fields.locations.iter().flatten().map(|location| self.relative(&location.path)).collect();
            if !paths.is_empty() {
                parameters.insert("paths".into(), json!(paths));
            }
        }
        Some(AgentEvent::ToolUse {
            tool_name,
            tool_id: id.to_string(),
            parameters: Value::Object(parameters),
            kind: fields.kind.map_or(ToolKind::Other, kind),
            diff: content.iter().find_map(|item| self.diff(item)),
            policy: None,
        })
    }

    fn diff(&self, content: &ToolCallContent) -> Option<FileDiff> {
        match content {
            ToolCallContent::Diff(diff) => Some(FileDiff {
                path: self.relative(&diff.path),
                old_text: diff.old_text.clone().unwrap_or_default(),
                new_text: diff.new_text.clone(),
            }),
            _ => None,
        }
    }

    /// A path as the user reads it: relative to the folder when inside it.
    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.folder).unwrap_or(path).display().to_string()
    }
}

fn text_of(block: &ContentBlock) -> Option<&str> {
    match block {
        ContentBlock::Text(text) => Some(&text.text),
        _ => None,
    }
}

fn texts(content: &[ToolCallContent]) -> String {
    let pieces: Vec<&str> = content
        .iter()
        .filter_map(|item| match item {
            ToolCallContent::Content(content) => text_of(&content.content),
            _ => None,
        })
        .collect();
    pieces.join("\n")
}

/// How the hub shows an ACP tool kind (which also picks the card's look).
pub fn kind(kind: AcpKind) -> ToolKind {
    match kind {
        AcpKind::Read | AcpKind::Search | AcpKind::Fetch | AcpKind::Think => ToolKind::Read,
        AcpKind::Edit | AcpKind::Delete | AcpKind::Move => ToolKind::Edit,
        AcpKind::Execute => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// How a prompt's end shows: the `result` status, and an error to report first.
pub fn stop_reason(reason: StopReason) -> (ResultStatus, Option<&'static str>) {
    match reason {
        StopReason::EndTurn => (ResultStatus::Success, None),
        StopReason::Cancelled => (ResultStatus::Cancelled, None),
        StopReason::MaxTokens => (ResultStatus::Error, Some("The agent stopped: the model reached its token limit.")),
        StopReason::MaxTurnRequests => {
            (ResultStatus::Error, Some("The agent stopped: it reached its limit of model requests for one turn."))
        }
        StopReason::Refusal => (ResultStatus::Error, Some("The agent refused to go on with this prompt.")),
        _ => (ResultStatus::Success, None),
    }
}

/// The answer to a permission request for the user's decision: approve →
/// `allow_once`; approve_session and approve_always → `allow_once` too, since
/// the hub holds the grant or the rule itself (so the user can see and withdraw
/// it, and the folder's rules still judge each later call); reject and edit →
/// `reject_once` (else `reject_always`, else cancelled: never run). An allow
/// the agent does not offer is an error, never a wider allow.
pub fn answer(decision: &Decision, options: &[PermissionOption]) -> Result<RequestPermissionResponse, String> {
    let find = |kind: PermissionOptionKind| -> Option<PermissionOptionId> {
        options.iter().find(|option| option.kind == kind).map(|option| option.option_id.clone())
    };
    let chosen = match decision {
        Decision::Approve | Decision::ApproveSession | Decision::ApproveAlways { .. } => {
            Some(find(PermissionOptionKind::AllowOnce).ok_or("This agent offers no 'allow once' here.")?)
        }
        Decision::Reject | Decision::Edit { .. } => {
            find(PermissionOptionKind::RejectOnce).or_else(|| find(PermissionOptionKind::RejectAlways))
        }
    };
    Ok(match chosen {
        Some(id) => selected(id),
        None => cancelled(),
    })
}

/// YOLO: the narrowest allow the agent offers.
pub fn allow_once(options: &[PermissionOption]) -> RequestPermissionResponse {
    [PermissionOptionKind::AllowOnce, PermissionOptionKind::AllowAlways]
        .into_iter()
        .find_map(|kind| options.iter().find(|option| option.kind == kind))
        .map_or_else(cancelled, |option| selected(option.option_id.clone()))
}

pub fn cancelled() -> RequestPermissionResponse {
    RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)
}

fn selected(id: PermissionOptionId) -> RequestPermissionResponse {
    RequestPermissionResponse::new(RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)))
}

#[cfg(test)]
#[path = "mapping_tests.rs"]
mod tests;
