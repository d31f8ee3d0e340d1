//! ACP messages → the hub's events, and the user's decisions → ACP permission
//! options. Plain functions over the protocol types: no IO, tested on messages
//! recorded from Gemini CLI, Claude Code, Codex and Qwen Code.
//!
//! Agents tell about a call in pieces: Claude Code announces "Terminal" with an
//! empty `rawInput` and sends the command in a second `tool_call`; Qwen Code
//! puts the command and the diff only in the permission request. So every
//! sighting is merged into the call, a call is shown once there is something
//! to show, and a `tool_update` follows whenever what it shows changed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, Meta, PermissionOption, PermissionOptionId, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SelectedPermissionOutcome, SessionUpdate, StopReason,
    ToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdateFields, ToolKind as AcpKind,
};
use protocol::events::{
    AgentChoice, AgentEvent, ChoiceKind, FileDiff, PolicyNote, ResultStatus, Role, ToolError, ToolKind, ToolStatus,
};
use serde_json::{json, Map, Value};

use crate::approval::Decision;

mod output;
pub use output::output_text;

/// Gemini CLI reports a mode change as a message chunk starting with this.
const MODE_UPDATE: &str = "[MODE_UPDATE]";

/// Turns one session's ACP updates into events: each call announced once it
/// says what it does, updated when it says more, its result reported once.
#[derive(Debug)]
pub struct Mapper {
    folder: PathBuf,
    calls: HashMap<String, Call>,
}

/// Everything the agent said about one call so far.
#[derive(Debug, Default)]
struct Call {
    fields: ToolCallUpdateFields,
    meta: Meta,
    /// What the last `tool_use`/`tool_update` showed; `None` while held back.
    shown: Option<Shown>,
    /// Content and raw output said while it ran or as it ended: its result.
    /// (A permission request's content is the question, never the output.)
    output: ToolCallUpdateFields,
    finished: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Shown {
    tool_name: String,
    parameters: Value,
    kind: ToolKind,
    diff: Option<FileDiff>,
}

impl Mapper {
    pub fn new(folder: PathBuf) -> Self {
        Self { folder, calls: HashMap::new() }
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
            SessionUpdate::ToolCall(call) => {
                let (id, fields, meta) = tool_call_fields(call);
                self.forget_if_finished(&id);
                self.sighted(id, fields, meta, false)
            }
            SessionUpdate::ToolCallUpdate(update) => {
                self.sighted(update.tool_call_id.0.to_string(), update.fields, update.meta, false)
            }
            // The user's own chunks are echoed by the hub; modes are the driver's;
            // plans, commands and usage have no event (yet).
            _ => Vec::new(),
        }
    }

    /// The events for a permission request's sighting of its call: its
    /// `tool_use` if it was not shown yet, a `tool_update` if it now reads otherwise.
    pub fn permission(&mut self, request: &RequestPermissionRequest) -> Vec<AgentEvent> {
        let id = request.tool_call.tool_call_id.0.to_string();
        self.forget_if_finished(&id);
        self.sighted(id, request.tool_call.fields.clone(), request.tool_call.meta.clone(), true)
    }

    /// A new call under the id of one that ended (some models repeat ids): it
    /// starts from nothing, never with the old call's input, content or diff.
    /// (An update for an ended call is a late echo and changes nothing.)
    fn forget_if_finished(&mut self, id: &str) {
        if self.calls.get(id).is_some_and(|call| call.finished) {
            self.calls.remove(id);
        }
    }

    /// The call as it now stands, as a `tool_update`: with the agent's choices
    /// when it goes on the card, with the rule that decided or asked.
    pub fn current(&self, id: &str, options: Option<&[PermissionOption]>, policy: Option<PolicyNote>) -> AgentEvent {
        let shown = self.calls.get(id).and_then(|call| call.shown.clone()).unwrap_or_else(|| self.show(id));
        AgentEvent::ToolUpdate {
            tool_id: id.to_string(),
            tool_name: shown.tool_name,
            parameters: shown.parameters,
            kind: shown.kind,
            diff: shown.diff,
            choices: options.map(|options| options.iter().map(choice).collect()),
            policy,
        }
    }

    /// Everything said about a call so far, as the folder's rules judge it.
    pub fn fields(&self, id: &str) -> ToolCallUpdateFields {
        self.calls.get(id).map(|call| call.fields.clone()).unwrap_or_default()
    }

    /// The hub reported this call's end itself (a rule denied it, the user
    /// rejected or stopped it): the agent's own report is not shown again.
    pub fn close(&mut self, id: &str) {
        self.calls.entry(id.to_string()).or_default().finished = true;
    }

    /// Merges a sighting (`asked`: from a permission request, which is shown at
    /// once); the events it makes: a `tool_use` the first time the call has
    /// something to show, a `tool_update` when what it shows changed, and its result once.
    fn sighted(
        &mut self,
        id: String,
        fields: ToolCallUpdateFields,
        meta: Option<Meta>,
        asked: bool,
    ) -> Vec<AgentEvent> {
        let status = fields.status;
        let call = self.calls.entry(id.clone()).or_default();
        let running =
            matches!(status, Some(ToolCallStatus::InProgress | ToolCallStatus::Completed | ToolCallStatus::Failed));
        if running && !asked {
            let output =
                ToolCallUpdateFields::new().content(fields.content.clone()).raw_output(fields.raw_output.clone());
            merge(&mut call.output, output);
        }
        merge(&mut call.fields, fields);
        if let Some(meta) = meta {
            call.meta.extend(meta);
        }
        let ends = matches!(status, Some(ToolCallStatus::Completed | ToolCallStatus::Failed));
        let must_show = asked || ends || matches!(status, Some(ToolCallStatus::InProgress));
        let mut events = Vec::new();
        if call.shown.is_some() || must_show || has_substance(&call.fields) {
            let shown = self.show(&id);
            let call = self.calls.get_mut(&id).expect("merged above");
            match &call.shown {
                None => events.push(AgentEvent::ToolUse {
                    tool_name: shown.tool_name.clone(),
                    tool_id: id.clone(),
                    parameters: shown.parameters.clone(),
                    kind: shown.kind,
                    diff: shown.diff.clone(),
                    policy: None,
                }),
                // A finished call keeps what it showed: a late echo changes nothing.
                Some(before) if *before != shown && !call.finished => events.push(AgentEvent::ToolUpdate {
                    tool_id: id.clone(),
                    tool_name: shown.tool_name.clone(),
                    parameters: shown.parameters.clone(),
                    kind: shown.kind,
                    diff: shown.diff.clone(),
                    choices: None,
                    policy: None,
                }),
                Some(_) => {}
            }
            call.shown = Some(shown);
        }
        if ends {
            events.extend(self.result(&id, status == Some(ToolCallStatus::Failed)));
        }
        events
    }

    /// The call's result, the first time it ends.
    fn result(&mut self, id: &str, failed: bool) -> Option<AgentEvent> {
        let call = self.calls.get(id).filter(|call| !call.finished)?;
        let content = call.output.content.as_deref().unwrap_or_default();
        let mut text = texts(content);
        if text.is_empty() {
            text = call.output.raw_output.as_ref().map(output_text).unwrap_or_default();
        }
        let (status, output, error) = if failed {
            let message = if text.is_empty() { "The tool failed.".to_string() } else { text };
            (ToolStatus::Error, None, Some(ToolError { kind: "tool_failed".into(), message }))
        } else {
            (ToolStatus::Success, Some(text), None)
        };
        let diff = content.iter().find_map(|item| self.diff(item));
        self.close(id);
        Some(AgentEvent::ToolResult { tool_id: id.to_string(), status, output, error, diff })
    }

    /// How the call reads now: its real tool name, its arguments (or, when the
    /// agent sent none, its title, details and paths), kind and diff.
    fn show(&self, id: &str) -> Shown {
        let empty = Call::default();
        let call = self.calls.get(id).unwrap_or(&empty);
        let fields = &call.fields;
        let content = fields.content.as_deref().unwrap_or_default();
        let title = fields.title.clone().unwrap_or_default();
        let tool_name = fields
            .name
            .clone()
            .or_else(|| meta_tool_name(&call.meta))
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| title.clone());
        let mut parameters = match &fields.raw_input {
            Some(Value::Object(map)) => map.clone(),
            Some(value) if !value.is_null() => Map::from_iter([("input".to_string(), value.clone())]),
            _ => Map::new(),
        };
        readable_command(&mut parameters);
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
        Shown {
            tool_name,
            parameters: Value::Object(parameters),
            kind: fields.kind.map_or(ToolKind::Other, kind),
            diff: content.iter().find_map(|item| self.diff(item)),
        }
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

fn tool_call_fields(call: ToolCall) -> (String, ToolCallUpdateFields, Option<Meta>) {
    let fields = ToolCallUpdateFields::new()
        .kind(call.kind)
        .status(call.status)
        .title(call.title)
        .content(call.content)
        .locations(call.locations)
        .raw_input(call.raw_input)
        .raw_output(call.raw_output)
        .name(call.name);
    (call.tool_call_id.0.to_string(), fields, call.meta)
}

/// Later sightings win, except where they say less: an empty title, `{}` or
/// `null` input, or empty content/locations never erase what an earlier one said.
fn merge(into: &mut ToolCallUpdateFields, from: ToolCallUpdateFields) {
    fn keep<T>(into: &mut Option<T>, from: Option<T>, says_something: impl Fn(&T) -> bool) {
        if let Some(value) = from {
            if says_something(&value) || into.is_none() {
                *into = Some(value);
            }
        }
    }
    keep(&mut into.kind, from.kind, |_| true);
    keep(&mut into.status, from.status, |_| true);
    keep(&mut into.title, from.title, |title| !title.is_empty());
    keep(&mut into.name, from.name, |name| !name.is_empty());
    keep(&mut into.content, from.content, |content| !content.is_empty());
    keep(&mut into.locations, from.locations, |locations| !locations.is_empty());
    keep(&mut into.raw_input, from.raw_input, says_something);
    keep(&mut into.raw_output, from.raw_output, says_something);
}

fn says_something(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        _ => true,
    }
}

/// Whether a call says what it does: its input, content or paths. A bare
/// title ("Terminal", "Shell") does not; such a call is held back until it does.
fn has_substance(fields: &ToolCallUpdateFields) -> bool {
    fields.raw_input.as_ref().is_some_and(says_something)
        || fields.content.as_ref().is_some_and(|content| !content.is_empty())
        || fields.locations.as_ref().is_some_and(|locations| !locations.is_empty())
}

/// The agent's own name for the tool: `_meta.toolName` (Qwen Code), or a
/// `toolName` one level down (`_meta.claudeCode.toolName`).
/// Claude Code's tools that run through the hub's `fs` and `terminal`
/// (`mcp__acp__Bash`) go by the names of its own (`Bash`).
fn meta_tool_name(meta: &Meta) -> Option<String> {
    let direct = meta.get("toolName").and_then(Value::as_str);
    let nested = || meta.values().find_map(|value| value.get("toolName").and_then(Value::as_str));
    direct.or_else(nested).map(|name| name.strip_prefix("mcp__acp__").unwrap_or(name).to_string())
}

/// A command sent as words (codex: `["bash", "-lc", "echo hi"]`) reads as the
/// shell line it runs; the words stay under `argv`.
fn readable_command(parameters: &mut Map<String, Value>) {
    let Some(Value::Array(words)) = parameters.get("command") else { return };
    let Some(words) = words.iter().map(Value::as_str).collect::<Option<Vec<&str>>>() else { return };
    let argv = parameters.insert("command".into(), json!(super::rule_call::command_line(&words)));
    parameters.insert("argv".into(), argv.unwrap_or_default());
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

/// A permission option as the card offers it.
pub fn choice(option: &PermissionOption) -> AgentChoice {
    let kind = match option.kind {
        PermissionOptionKind::AllowOnce => ChoiceKind::AllowOnce,
        PermissionOptionKind::AllowAlways => ChoiceKind::AllowAlways,
        PermissionOptionKind::RejectAlways => ChoiceKind::RejectAlways,
        // RejectOnce, and kinds newer than this build: read as the narrowest no.
        _ => ChoiceKind::RejectOnce,
    };
    AgentChoice { id: option.option_id.0.to_string(), name: option.name.clone(), kind }
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
/// `allow_once`; approve_session, approve_turn and approve_always → `allow_once` too, since
/// the hub holds the grant or the rule itself (so the user can see and withdraw
/// it, and the folder's rules still judge each later call); reject and edit →
/// `reject_once`, else cancelled (never run; never a `reject_always` the agent
/// would keep). An allow the agent does not offer is an error, never a wider allow.
pub fn answer(decision: &Decision, options: &[PermissionOption]) -> Result<RequestPermissionResponse, String> {
    let find = |kind: PermissionOptionKind| -> Option<PermissionOptionId> {
        options.iter().find(|option| option.kind == kind).map(|option| option.option_id.clone())
    };
    let chosen = match decision {
        Decision::Approve
        | Decision::ApproveSession
        | Decision::ApproveTurn
        | Decision::ApproveAlways
        | Decision::ApproveNetwork
        | Decision::ApproveUnsandboxed => {
            Some(find(PermissionOptionKind::AllowOnce).ok_or("This agent offers no 'allow once' here.")?)
        }
        Decision::Reject | Decision::Edit { .. } => find(PermissionOptionKind::RejectOnce),
    };
    Ok(match chosen {
        Some(id) => selected(id),
        None => cancelled(),
    })
}

/// YOLO, a grant or a rule: `allow_once`. Never an "always" the agent would
/// keep by itself (codex saves it as a global rule): without `allow_once` the
/// user decides.
pub fn allow_once(options: &[PermissionOption]) -> Option<RequestPermissionResponse> {
    options
        .iter()
        .find(|option| option.kind == PermissionOptionKind::AllowOnce)
        .map(|option| selected(option.option_id.clone()))
}

pub fn cancelled() -> RequestPermissionResponse {
    RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)
}

pub fn selected(id: PermissionOptionId) -> RequestPermissionResponse {
    RequestPermissionResponse::new(RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(id)))
}

#[cfg(test)]
#[path = "mapping_tests.rs"]
mod tests;
