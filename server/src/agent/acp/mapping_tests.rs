//! The mapping on messages recorded from Gemini CLI 0.61.0 over ACP (folder
//! `/tmp/rec-eab8D8`; only the session ids were shortened).

use agent_client_protocol::v1::schema::{RequestPermissionRequest, SessionNotification};
use serde_json::{json, Value};

use super::*;

const FOLDER: &str = "/tmp/rec-eab8D8";

fn update(params: Value) -> SessionUpdate {
    serde_json::from_value::<SessionNotification>(params).expect("a recorded session/update").update
}

fn permission(params: Value) -> RequestPermissionRequest {
    serde_json::from_value(params).expect("a recorded session/request_permission")
}

fn gemini_options() -> Value {
    json!([
        {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
        {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "cancel", "name": "Reject", "kind": "reject_once"}
    ])
}

fn shell_permission() -> RequestPermissionRequest {
    permission(json!({"sessionId": "bc78", "options": gemini_options(), "toolCall": {
        "toolCallId": "run_shell_command__run_shell_command_1795395042033_0", "status": "pending",
        "title": "echo hi > out.txt",
        "content": [{"type": "content", "content": {"type": "text", "text": "[current working directory /tmp/rec-eab8D8] (write)"}}],
        "locations": [], "kind": "execute"}}))
}

fn write_permission() -> RequestPermissionRequest {
    permission(json!({"sessionId": "bc78", "options": gemini_options(), "toolCall": {
        "toolCallId": "write_file__write_file_1795395042246_0", "status": "pending", "title": "Writing to new.txt",
        "content": [{"type": "diff", "path": "/tmp/rec-eab8D8/new.txt", "oldText": "", "newText": "hello\n", "_meta": {"kind": "add"}}],
        "locations": [{"path": "/tmp/rec-eab8D8/new.txt"}], "kind": "edit"}}))
}

fn response(value: &RequestPermissionResponse) -> Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn message_and_thought_chunks_become_deltas_and_mode_updates_are_dropped() {
    let mut mapper = Mapper::new(FOLDER.into());
    let thought = update(json!({"sessionId": "00c3", "update": {"sessionUpdate": "agent_thought_chunk",
        "content": {"type": "text", "text": "****\nI should run it"}}}));
    assert_eq!(mapper.update(thought), vec![AgentEvent::Thought { content: "****\nI should run it".into() }]);
    let message = update(json!({"sessionId": "00c3", "update": {"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "Running it."}}}));
    assert_eq!(
        mapper.update(message),
        vec![AgentEvent::Message { role: Role::Assistant, content: "Running it.".into(), delta: true }]
    );
    let mode = update(json!({"sessionId": "00c3", "update": {"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "[MODE_UPDATE] yolo"}}}));
    assert!(mapper.update(mode).is_empty());
    let commands = update(json!({"sessionId": "00c3", "update": {"sessionUpdate": "available_commands_update",
        "availableCommands": [{"name": "memory", "description": "Manage memory."}]}}));
    assert!(mapper.update(commands).is_empty());
}

#[test]
fn a_shell_permission_announces_the_call_with_its_command_and_details() {
    let mut mapper = Mapper::new(FOLDER.into());
    let events = mapper.permission(&shell_permission());
    assert_eq!(
        events,
        vec![AgentEvent::ToolUse {
            tool_name: "echo hi > out.txt".into(),
            tool_id: "run_shell_command__run_shell_command_1795395042033_0".into(),
            parameters: json!({"details": "[current working directory /tmp/rec-eab8D8] (write)"}),
            kind: ToolKind::Execute,
            diff: None,
            policy: None,
        }]
    );
    assert!(mapper.permission(&shell_permission()).is_empty(), "announced once");
}

#[test]
fn an_edit_carries_its_diff_with_the_path_inside_the_folder_and_completes_once() {
    let mut mapper = Mapper::new(FOLDER.into());
    let diff = FileDiff { path: "new.txt".into(), old_text: String::new(), new_text: "hello\n".into() };
    match &mapper.permission(&write_permission())[..] {
        [AgentEvent::ToolUse { kind: ToolKind::Edit, diff: Some(got), parameters, tool_name, .. }] => {
            assert_eq!(got, &diff);
            assert_eq!(tool_name, "Writing to new.txt");
            assert_eq!(parameters, &json!({"paths": ["new.txt"]}));
        }
        other => panic!("expected one edit tool_use, got {other:?}"),
    }
    let completed = json!({"sessionId": "00c3", "update": {"sessionUpdate": "tool_call_update",
        "toolCallId": "write_file__write_file_1795395042246_0", "status": "completed", "title": "Writing to new.txt",
        "content": [{"type": "diff", "path": "/tmp/rec-eab8D8/new.txt", "oldText": "", "newText": "hello\n", "_meta": {"kind": "add"}}],
        "locations": [{"path": "/tmp/rec-eab8D8/new.txt"}], "kind": "edit"}});
    assert_eq!(
        mapper.update(update(completed.clone())),
        vec![AgentEvent::ToolResult {
            tool_id: "write_file__write_file_1795395042246_0".into(),
            status: ToolStatus::Success,
            output: Some(String::new()),
            error: None,
            diff: Some(diff),
        }]
    );
    assert!(mapper.update(update(completed)).is_empty(), "a result is reported once");
}

#[test]
fn a_tool_call_without_permission_is_announced_then_fails_with_its_text() {
    let mut mapper = Mapper::new(FOLDER.into());
    let started = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "read-1",
        "title": "ReadFile", "kind": "read", "status": "in_progress", "rawInput": {"file_path": "a.txt"}}}));
    assert_eq!(
        mapper.update(started),
        vec![AgentEvent::ToolUse {
            tool_name: "ReadFile".into(),
            tool_id: "read-1".into(),
            parameters: json!({"file_path": "a.txt"}),
            kind: ToolKind::Read,
            diff: None,
            policy: None,
        }]
    );
    let failed = update(
        json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "read-1",
        "status": "failed", "content": [{"type": "content", "content": {"type": "text", "text": "File not found."}}]}}),
    );
    match &mapper.update(failed)[..] {
        [AgentEvent::ToolResult { status: ToolStatus::Error, error: Some(error), output: None, .. }] => {
            assert_eq!(error.message, "File not found.");
        }
        other => panic!("expected a failed result, got {other:?}"),
    }
}

#[test]
fn an_update_for_an_unseen_call_announces_it_first() {
    let mut mapper = Mapper::new(FOLDER.into());
    let done = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "x",
        "title": "ls", "kind": "execute", "status": "completed", "rawOutput": "a\nb"}}));
    match &mapper.update(done)[..] {
        [AgentEvent::ToolUse { tool_id, kind: ToolKind::Execute, .. }, AgentEvent::ToolResult { output, .. }] => {
            assert_eq!(tool_id, "x");
            assert_eq!(output.as_deref(), Some("a\nb"));
        }
        other => panic!("expected tool_use then tool_result, got {other:?}"),
    }
}

#[test]
fn decisions_pick_the_option_of_matching_kind() {
    let options = write_permission().options;
    let pick = |decision: Decision| response(&answer(&decision, &options).unwrap());
    let chose = |id: &str| json!({"outcome": {"outcome": "selected", "optionId": id}});
    assert_eq!(pick(Decision::Approve), chose("proceed_once"));
    assert_eq!(pick(Decision::ApproveSession), chose("proceed_once"), "the hub holds the session grant");
    assert_eq!(pick(Decision::ApproveAlways { also: vec![] }), chose("proceed_once"), "the hub holds the rule");
    assert_eq!(pick(Decision::Reject), chose("cancel"));
    let edit = Decision::Edit { instruction: Some("use printf".into()), modified_content: None };
    assert_eq!(pick(edit), chose("cancel"));
    assert_eq!(response(&allow_once(&options)), chose("proceed_once"));
}

#[test]
fn a_missing_allow_is_an_error_and_a_missing_reject_cancels() {
    let only_always: Vec<PermissionOption> = serde_json::from_value(json!([
        {"optionId": "always", "name": "Always", "kind": "allow_always"}
    ]))
    .unwrap();
    assert!(answer(&Decision::Approve, &only_always).is_err(), "never widen 'once' to 'always'");
    assert_eq!(
        response(&answer(&Decision::Reject, &only_always).unwrap()),
        json!({"outcome": {"outcome": "cancelled"}})
    );
    assert_eq!(response(&allow_once(&only_always)), json!({"outcome": {"outcome": "selected", "optionId": "always"}}));
    assert_eq!(response(&allow_once(&[])), json!({"outcome": {"outcome": "cancelled"}}));
}

#[test]
fn stop_reasons_map_to_results() {
    assert_eq!(stop_reason(StopReason::EndTurn), (ResultStatus::Success, None));
    assert_eq!(stop_reason(StopReason::Cancelled), (ResultStatus::Cancelled, None));
    assert_eq!(stop_reason(StopReason::MaxTokens).0, ResultStatus::Error);
    assert!(stop_reason(StopReason::Refusal).1.is_some());
}
