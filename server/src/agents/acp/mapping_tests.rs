//! The mapping on messages recorded from Gemini CLI 0.61.0 over ACP (folder
//! `/tmp/rec-eab8D8`; only the session ids were shortened).

use agent_client_protocol::v1::schema::{RequestPermissionRequest, SessionNotification};
use serde_json::{json, Value};

use super::*;
use protocol::events::{AgentChoice, ChoiceKind};

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
    let id = "run_shell_command__run_shell_command_1795395042033_0";
    let parameters = json!({"details": "[current working directory /tmp/rec-eab8D8] (write)"});
    assert_eq!(
        events,
        vec![AgentEvent::ToolUse {
            tool_name: "echo hi > out.txt".into(),
            tool_id: id.into(),
            parameters: parameters.clone(),
            kind: ToolKind::Execute,
            diff: None,
            policy: None,
        }]
    );
    assert!(mapper.permission(&shell_permission()).is_empty(), "announced once");
    let options = shell_permission().options;
    match mapper.current(id, Some(&options), None) {
        AgentEvent::ToolUpdate { tool_name, parameters: shown, choices: Some(choices), .. } => {
            assert_eq!((tool_name.as_str(), &shown), ("echo hi > out.txt", &parameters));
            assert_eq!(
                choices[0],
                AgentChoice {
                    id: "proceed_always".into(),
                    name: "Allow for this session".into(),
                    kind: ChoiceKind::AllowAlways
                }
            );
            assert_eq!(
                choices.iter().map(|choice| choice.kind).collect::<Vec<_>>(),
                [ChoiceKind::AllowAlways, ChoiceKind::AllowOnce, ChoiceKind::RejectOnce]
            );
        }
        other => panic!("expected the card's update with the agent's choices: {other:?}"),
    }
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
    assert_eq!(pick(Decision::ApproveAlways), chose("proceed_once"), "the hub holds the rule");
    assert_eq!(pick(Decision::Reject), chose("cancel"));
    let edit = Decision::Edit { instruction: Some("use printf".into()), modified_content: None };
    assert_eq!(pick(edit), chose("cancel"));
    assert_eq!(response(&allow_once(&options).unwrap()), chose("proceed_once"));
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
    let reject_always: Vec<PermissionOption> = serde_json::from_value(json!([
        {"optionId": "once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "never", "name": "Never", "kind": "reject_always"}
    ]))
    .unwrap();
    assert_eq!(
        response(&answer(&Decision::Reject, &reject_always).unwrap()),
        json!({"outcome": {"outcome": "cancelled"}}),
        "never a rejection the agent would keep for good"
    );
    assert!(allow_once(&only_always).is_none(), "YOLO never answers an 'always' the agent would keep");
    assert!(allow_once(&[]).is_none());
}

#[test]
fn stop_reasons_map_to_results() {
    assert_eq!(stop_reason(StopReason::EndTurn), (ResultStatus::Success, None));
    assert_eq!(stop_reason(StopReason::Cancelled), (ResultStatus::Cancelled, None));
    assert_eq!(stop_reason(StopReason::MaxTokens).0, ResultStatus::Error);
    assert!(stop_reason(StopReason::Refusal).1.is_some());
}

// --- Calls told in pieces (Claude Code, Qwen Code, codex), merged ---

#[test]
fn a_bare_title_is_held_back_until_the_call_says_what_it_does() {
    let mut mapper = Mapper::new("/p".into());
    let bare = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t1",
        "_meta": {"claudeCode": {"toolName": "Bash"}}, "rawInput": {}, "status": "pending", "title": "Terminal",
        "kind": "execute", "content": []}}));
    assert!(mapper.update(bare).is_empty(), "'Terminal {{}}' is not shown");
    let full = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t1",
        "_meta": {"claudeCode": {"toolName": "Bash"}}, "rawInput": {"command": "echo hi > f.txt", "description": "d"},
        "status": "pending", "title": "`echo hi > f.txt`", "kind": "execute", "content": []}}));
    match &mapper.update(full)[..] {
        [AgentEvent::ToolUse { tool_name, parameters, .. }] => {
            assert_eq!(tool_name, "Bash", "the agent's own tool name from _meta");
            assert_eq!(parameters["command"], "echo hi > f.txt");
        }
        other => panic!("expected the call shown once it has its command: {other:?}"),
    }
    // The permission request's own toolCall says less: nothing it lacks is erased.
    let asked = permission(json!({"sessionId": "s", "options": gemini_options(),
        "toolCall": {"toolCallId": "t1", "title": "`echo hi > f.txt`", "rawInput": {}}}));
    assert!(mapper.permission(&asked).is_empty(), "nothing new to show");
    match mapper.current("t1", Some(&asked.options), None) {
        AgentEvent::ToolUpdate { parameters, choices: Some(choices), .. } => {
            assert_eq!(parameters["command"], "echo hi > f.txt");
            assert_eq!(choices.len(), 3);
        }
        other => panic!("expected the call with its choices: {other:?}"),
    }
    assert_eq!(rule_call_of(&mapper, "t1")["command"], "echo hi > f.txt", "rules judge the merged call");
}

fn rule_call_of(mapper: &Mapper, id: &str) -> Value {
    crate::agents::acp::rule_call::rule_call(&mapper.fields(id)).args
}

#[test]
fn a_call_whose_details_come_only_with_the_permission_request_is_shown_with_them() {
    let mut mapper = Mapper::new("/p".into());
    let preparing = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "w",
        "status": "pending", "title": "WriteFile", "content": [], "locations": [], "kind": "edit", "rawInput": {},
        "_meta": {"toolName": "write_file", "phase": "preparing"}}}));
    assert!(mapper.update(preparing).is_empty());
    let asked = permission(json!({"sessionId": "s", "options": gemini_options(), "toolCall": {"toolCallId": "w",
        "status": "pending", "title": "Writing to notes.txt",
        "content": [{"type": "diff", "path": "/p/notes.txt", "oldText": "", "newText": "hello\n"}],
        "locations": [{"path": "/p/notes.txt"}], "kind": "edit",
        "rawInput": {"file_path": "/p/notes.txt", "content": "hello\n"}, "_meta": {"toolName": "write_file"}}}));
    match &mapper.permission(&asked)[..] {
        [AgentEvent::ToolUse { tool_name, diff: Some(diff), .. }] => {
            assert_eq!(tool_name, "write_file");
            assert_eq!((diff.path.as_str(), diff.new_text.as_str()), ("notes.txt", "hello\n"));
        }
        other => panic!("expected the write shown with its diff: {other:?}"),
    }
}

#[test]
fn a_command_in_words_reads_as_its_shell_line_and_a_raw_output_as_text() {
    let mut mapper = Mapper::new("/p".into());
    let started = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "c",
        "title": "echo hi", "kind": "execute", "status": "in_progress",
        "rawInput": {"command": ["/bin/bash", "-lc", "echo hi"], "cwd": "/p", "turn_id": "x"}}}));
    match &mapper.update(started)[..] {
        [AgentEvent::ToolUse { parameters, .. }] => {
            assert_eq!(parameters["command"], "echo hi");
            assert_eq!(parameters["argv"], json!(["/bin/bash", "-lc", "echo hi"]));
            assert_eq!(parameters["cwd"], "/p");
        }
        other => panic!("{other:?}"),
    }
    let done = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "c",
        "status": "completed", "rawOutput": {"stdout": "hi\n", "stderr": "", "exit_code": 0,
        "formatted_output": "hi\n", "aggregated_output": "hi\n"}}}));
    match &mapper.update(done)[..] {
        [AgentEvent::ToolResult { output: Some(output), .. }] => assert_eq!(output, "hi\n"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_new_call_under_an_ended_calls_id_starts_from_nothing() {
    let mut mapper = Mapper::new("/p".into());
    let write = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "call_0",
        "kind": "edit", "status": "completed", "title": "Write a.txt",
        "content": [{"type": "diff", "path": "/p/a.txt", "oldText": "", "newText": "a"}]}}));
    assert_eq!(mapper.update(write).len(), 2, "shown and ended");
    let again = permission(json!({"sessionId": "s", "options": gemini_options(), "toolCall": {"toolCallId": "call_0",
        "kind": "execute", "title": "rm -rf build", "rawInput": {"command": "rm -rf build"}}}));
    match &mapper.permission(&again)[..] {
        [AgentEvent::ToolUse { kind: ToolKind::Execute, diff: None, parameters, .. }] => {
            assert_eq!(parameters, &json!({"command": "rm -rf build"}));
        }
        other => panic!("expected the new call shown as itself, without the old diff: {other:?}"),
    }
    let done = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "call_0",
        "status": "completed", "rawOutput": "gone"}}));
    assert!(matches!(&mapper.update(done)[..], [AgentEvent::ToolResult { .. }]), "the new call gets its result");
}

#[test]
fn a_closed_call_gets_no_second_result_and_no_late_update() {
    let mut mapper = Mapper::new("/p".into());
    let asked = permission(json!({"sessionId": "s", "options": gemini_options(), "toolCall": {"toolCallId": "r",
        "kind": "execute", "title": "rm x", "rawInput": {"command": "rm x"}}}));
    assert_eq!(mapper.permission(&asked).len(), 1);
    mapper.close("r");
    let failed = update(json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "r",
        "status": "failed", "rawInput": {"command": "rm -rf x"}, "rawOutput": "User refused"}}));
    assert!(mapper.update(failed).is_empty(), "the hub reported it skipped; the agent's 'failed' is not shown");
}

// --- Replays of real sessions (fixtures/<agent>/*.jsonl, end2end/record-acp.mjs) ---

/// Feeds a recorded session to a mapper; returns every event and, per
/// permission request, the call as shown at that moment.
struct Replay {
    events: Vec<AgentEvent>,
    /// Per permission request: the call's id and how it was shown at that moment.
    asked: Vec<(String, Option<Shown>)>,
    /// Per permission request: the text it carried (the agent's question).
    questions: Vec<String>,
    /// Per permission request: the call's arguments as the folder's rules judge them.
    judged: Vec<Value>,
}

fn replay(path: &std::path::Path) -> Replay {
    let text = std::fs::read_to_string(path).unwrap();
    let messages: Vec<Value> = text.lines().map(|line| serde_json::from_str::<Value>(line).unwrap()).collect();
    let folder = messages
        .iter()
        .find_map(|line| (line["msg"]["method"] == "session/new").then(|| line["msg"]["params"]["cwd"].clone()))
        .and_then(|cwd| cwd.as_str().map(str::to_string))
        .unwrap_or_default();
    let mut mapper = Mapper::new(folder.into());
    let (mut events, mut asked, mut questions, mut judged) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // A loaded session's replay is skipped by the hub (it has those events), up to the next prompt.
    let mut replaying = false;
    for line in &messages {
        let msg = &line["msg"];
        if line["dir"] == "out" {
            match msg["method"].as_str() {
                Some("session/load") => replaying = true,
                Some("session/prompt") => replaying = false,
                _ => {}
            }
            continue;
        }
        if line["dir"] != "in" || replaying {
            continue;
        }
        match msg["method"].as_str() {
            Some("session/update") => events.extend(mapper.update(update(msg["params"].clone()))),
            Some("session/request_permission") => {
                let request = permission(msg["params"].clone());
                let id = request.tool_call.tool_call_id.0.to_string();
                questions.push(texts(request.tool_call.fields.content.as_deref().unwrap_or_default()));
                events.extend(mapper.permission(&request));
                asked.push((id.clone(), mapper.calls.get(&id).and_then(|call| call.shown.clone())));
                judged.push(rule_call_of(&mapper, &id));
            }
            _ => {}
        }
    }
    Replay { events, asked, questions, judged }
}

#[test]
fn in_every_recorded_session_a_card_shows_the_command_or_the_diff_and_each_call_ends_once() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/agents/acp/fixtures");
    let mut cards = 0;
    for agent in ["claude", "codex", "qwen"] {
        let mut files: Vec<_> =
            std::fs::read_dir(dir.join(agent)).unwrap().map(|entry| entry.unwrap().path()).collect();
        files.sort();
        for file in files {
            let Replay { events, asked, questions, judged } = replay(&file);
            let name = file.display();
            for ((id, shown), judged) in asked.into_iter().zip(judged) {
                cards += 1;
                let shown = shown.unwrap_or_else(|| panic!("{name}: call {id} asked without being shown"));
                match shown.kind {
                    ToolKind::Execute => {
                        let command = shown.parameters["command"].as_str().unwrap_or_default();
                        assert!(!command.is_empty(), "{name}: command of {id} missing: {shown:?}");
                        assert_eq!(judged["command"], command, "{name}: the rules judge the command the card shows");
                    }
                    ToolKind::Edit => {
                        let diff = shown.diff.as_ref().unwrap_or_else(|| panic!("{name}: no diff for {id}: {shown:?}"));
                        assert!(!diff.path.starts_with('/'), "{name}: path inside the folder reads relative: {diff:?}");
                    }
                    _ => {}
                }
                assert_ne!(shown.tool_name, "", "{name}: {id} has a name");
            }
            let mut results = std::collections::HashMap::new();
            for event in &events {
                if let AgentEvent::ToolResult { tool_id, .. } = event {
                    *results.entry(tool_id.clone()).or_insert(0) += 1;
                }
            }
            assert!(results.values().all(|&count| count == 1), "{name}: a call reported twice: {results:?}");
            for event in &events {
                if let AgentEvent::ToolResult { output: Some(output), .. } = event {
                    let echoed =
                        questions.iter().find(|question| !question.is_empty() && output.contains(question.as_str()));
                    assert!(echoed.is_none(), "{name}: a result reads as the permission's question: {output:?}");
                }
            }
        }
    }
    assert!(cards >= 12, "the recordings hold permission requests of every agent ({cards})");
}
