//! The built-in agent over HTTP against a scripted model server: the prompt
//! stream, approval cards, decisions, YOLO, and bad decisions.

use crate::common;

use std::time::Duration;

use axum::http::StatusCode;
use common::fake_model::{call, calls, text, FakeModel, Reply as ModelReply};
use common::*;
use serde_json::{json, Value};

fn session_of(events: &[Value]) -> String {
    events[0]["session_id"].as_str().expect("init carries the session id").to_string()
}

fn assert_seq_increases(events: &[Value]) {
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
}

#[tokio::test]
async fn a_shell_call_waits_for_approval_then_runs_once() {
    let model = FakeModel::start(vec![
        call("c1", "run_shell_command", json!({"command": "echo hi > made.txt && echo created"})),
        text(&["Created ", "the file."]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);

    let events = hub.prompt(&folder, "make a file").await.lines();
    assert_eq!(types(&events), ["init", "message", "tool_use", "result"]);
    assert_eq!((events[1]["role"].as_str(), events[1]["content"].as_str()), (Some("user"), Some("make a file")));
    assert_eq!(events[2]["kind"], "execute");
    assert_eq!(events[2]["parameters"]["command"], "echo hi > made.txt && echo created");
    assert_eq!(events[3], json!({"type": "result", "status": "waiting_approval", "pending": ["c1"], "seq": 4}));
    assert!(!folder.join("made.txt").exists(), "nothing runs before approval");

    let session = session_of(&events);
    let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
    assert_eq!(
        (detail["status"].as_str(), detail["pendingApproval"]["toolId"].as_str()),
        (Some("waiting_approval"), Some("c1"))
    );
    assert_eq!(hub.get("/api/projects").await.json()["projects"][0]["sessions"][0]["pendingCount"], 1);

    let more = hub.decide(&session, json!({"toolId": "c1", "decision": "approve"})).await.lines();
    assert_eq!(shape(&more), ["tool_output", "tool_result", "text", "result"]);
    // What it printed, as it came, then the result the model gets.
    assert_eq!((more[0]["tool_id"].as_str(), more[0]["stream"].as_str()), (Some("c1"), Some("stdout")));
    assert_eq!(more[0]["text"], "created\n");
    assert_eq!(more[1]["status"], "success");
    assert!(more[1]["output"].as_str().unwrap().contains("created\nExit code: 0"));
    assert_eq!((assistant_text(&more), more[2]["delta"].as_bool()), ("Created the file.".into(), Some(true)));
    assert_eq!(more.last().unwrap()["status"], "success");
    assert_eq!(more[0]["seq"], 5, "seq continues across the pause");
    assert_eq!(std::fs::read_to_string(folder.join("made.txt")).unwrap(), "hi\n");

    // The model saw the tool's output as the call's result.
    let tool_message = model.last_messages().into_iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_message["tool_call_id"], "c1");
    assert!(tool_message["content"].as_str().unwrap().contains("created"));

    let again = hub.decide(&session, json!({"toolId": "c1", "decision": "approve"})).await;
    assert_eq!((again.status, again.error_code().as_str()), (StatusCode::CONFLICT, "not_pending"));
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await.json()["status"], "idle");
    let all = hub.get(&format!("/api/sessions/{session}")).await.json()["events"].as_array().unwrap().clone();
    assert_eq!(all.len(), 4 + more.len(), "the log is exactly what was streamed");
    assert_seq_increases(&all);
}

#[tokio::test]
async fn three_calls_are_three_cards_decided_in_turn() {
    let model = FakeModel::start(vec![
        calls(&[
            ("a", "write_file", json!({"file_path": "a.txt", "content": "A"})),
            ("b", "write_file", json!({"file_path": "b.txt", "content": "B"})),
            ("c", "run_shell_command", json!({"command": "ls"})),
        ]),
        text(&["ok"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "three things").await.lines();
    assert_eq!(types(&events), ["init", "message", "tool_use", "tool_use", "tool_use", "result"]);
    assert_eq!(events[5]["pending"], json!(["a", "b", "c"]));
    assert_eq!(events[2]["diff"], json!({"path": "a.txt", "old_text": "", "new_text": "A"}));
    let session = session_of(&events);

    let first = hub.decide(&session, json!({"toolId": "a", "decision": "approve"})).await.lines();
    assert_eq!(types(&first), ["tool_result", "result"]);
    assert_eq!(first[1]["pending"], json!(["b", "c"]));
    let second = hub.decide(&session, json!({"toolId": "b", "decision": "approve"})).await.lines();
    assert_eq!(second[1]["pending"], json!(["c"]));
    let last = hub.decide(&session, json!({"toolId": "c", "decision": "approve"})).await.lines();
    assert_eq!(types(&last), ["tool_output", "tool_result", "message", "result"]);
    assert_eq!(
        (
            std::fs::read_to_string(folder.join("a.txt")).unwrap(),
            std::fs::read_to_string(folder.join("b.txt")).unwrap()
        ),
        ("A".into(), "B".into())
    );
}

#[tokio::test]
async fn reject_ends_the_turn_keeps_history_and_runs_nothing() {
    let model = FakeModel::start(vec![
        call("x", "run_shell_command", json!({"command": "touch nope.txt"})),
        text(&["Understood."]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let session = session_of(&hub.prompt(&folder, "do it").await.lines());
    let ended = hub.decide(&session, json!({"toolId": "x", "decision": "reject"})).await.lines();
    assert_eq!(types(&ended), ["tool_result", "result"]);
    assert_eq!((ended[0]["status"].as_str(), ended[1]["status"].as_str()), (Some("skipped"), Some("cancelled")));
    assert!(!folder.join("nope.txt").exists());
    assert_eq!(model.requests().len(), 1, "the model is not called after a rejection");

    let next = hub.prompt(&folder, "never mind").await.lines();
    assert_eq!(next.last().unwrap()["status"], "success");
    let roles: Vec<String> = model.last_messages().iter().map(|m| m["role"].as_str().unwrap().to_string()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"], "history kept");
}

#[tokio::test]
async fn edit_skips_the_tool_and_the_model_regenerates() {
    let model = FakeModel::start(vec![
        call("d1", "run_shell_command", json!({"command": "rm -rf cache"})),
        call("d2", "run_shell_command", json!({"command": "rm -f cache/*.log"})),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    std::fs::create_dir(folder.join("cache")).unwrap();
    let session = session_of(&hub.prompt(&folder, "clean the cache").await.lines());

    for blank in [
        json!({"toolId": "d1", "decision": "edit", "editInstruction": "   "}),
        json!({"toolId": "d1", "decision": "edit"}),
    ] {
        let refused = hub.decide(&session, blank).await;
        assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    }
    let edit = json!({"toolId": "d1", "decision": "edit", "editInstruction": "only delete .log files"});
    let events = hub.decide(&session, edit).await.lines();
    assert_eq!(types(&events), ["tool_result", "tool_use", "result"]);
    assert_eq!(events[0]["status"], "skipped");
    assert_eq!(events[1]["tool_id"], "d2");
    assert_eq!(events[2]["pending"], json!(["d2"]));
    assert!(folder.join("cache").exists(), "the edited call never ran");
    let feedback = model.last_messages().into_iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(feedback["content"], "[USER FEEDBACK - Tool was not executed]: only delete .log files");
}

#[tokio::test]
async fn approve_session_lets_later_calls_of_that_tool_run_without_a_card() {
    let model = FakeModel::start(vec![
        call("s1", "run_shell_command", json!({"command": "echo one"})),
        call("s2", "run_shell_command", json!({"command": "echo two"})),
        call("w1", "write_file", json!({"file_path": "w.txt", "content": "w"})),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let session = session_of(&hub.prompt(&folder, "go").await.lines());
    let events = hub.decide(&session, json!({"toolId": "s1", "decision": "approve_session"})).await.lines();
    assert_eq!(
        types(&events),
        ["tool_output", "tool_result", "tool_use", "tool_output", "tool_result", "tool_use", "result"]
    );
    assert_eq!(events[2]["tool_id"], "s2");
    assert_eq!(events[3]["text"], "two\n");
    assert_eq!(events[6]["pending"], json!(["w1"]), "other tools still ask");
}

#[tokio::test]
async fn yolo_runs_without_cards_and_read_only_tools_never_ask() {
    let model = FakeModel::start(vec![
        call("r1", "read_file", json!({"file_path": "notes.txt"})),
        call("r2", "read_file", json!({"file_path": "../outside.txt"})),
        call("w1", "write_file", json!({"file_path": "out.txt", "content": "yolo"})),
        text(&["done"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(Some(r#"{"security":{"disableYoloMode":false}}"#));
    hub.trust(&folder).await;
    std::fs::write(folder.join("notes.txt"), "secret notes").unwrap();
    let events = hub.prompt(&folder, "go").await.lines();
    assert_eq!(
        types(&events),
        [
            "init",
            "message",
            "tool_use",
            "tool_result",
            "tool_use",
            "tool_result",
            "tool_use",
            "tool_result",
            "message",
            "result"
        ]
    );
    assert_eq!(events[3]["output"], "secret notes");
    assert_eq!(
        (events[5]["status"].as_str(), events[5]["error"]["type"].as_str()),
        (Some("error"), Some("path_outside_folder"))
    );
    assert_eq!(std::fs::read_to_string(folder.join("out.txt")).unwrap(), "yolo");
    assert_eq!(events.last().unwrap()["status"], "success");
}

#[tokio::test]
async fn non_streaming_prompts_answer_409_with_the_pending_calls() {
    let model =
        FakeModel::start(vec![call("n1", "run_shell_command", json!({"command": "true"})), text(&["fin"])]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let body = json!({"folderPath": folder, "message": "hi", "stream": false}).to_string();
    let paused = hub.post("/api/chat/prompt", body).await;
    assert_eq!((paused.status, paused.error_code().as_str()), (StatusCode::CONFLICT, "tool_approval_required"));
    assert_eq!(
        paused.json()["pending"],
        json!([{"tool_id": "n1", "tool_name": "run_shell_command", "parameters": {"command": "true"}}])
    );
    let session =
        hub.get("/api/projects").await.json()["projects"][0]["sessions"][0]["id"].as_str().unwrap().to_string();
    let done = hub.decide(&session, json!({"toolId": "n1", "decision": "approve", "stream": false})).await.json();
    assert_eq!(types(done["events"].as_array().unwrap()), ["tool_result", "message", "result"]);
}

#[tokio::test]
async fn decision_words_while_waiting_and_busy_sessions() {
    let model = FakeModel::start(vec![
        call("y1", "run_shell_command", json!({"command": "echo yes-word"})),
        ModelReply::Slow(Duration::from_millis(600), Box::new(text(&["slow answer"]))),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    hub.prompt(&folder, "go").await.lines();
    let refused = hub.prompt(&folder, "what are you doing?").await;
    assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::CONFLICT, "session_busy"));

    // "yes" approves the first waiting call; while the slow reply streams, the session is busy.
    let hub = std::sync::Arc::new(hub);
    let (first, second) = tokio::join!(
        {
            let hub = hub.clone();
            let folder = folder.clone();
            async move { hub.prompt(&folder, "yes").await }
        },
        {
            let hub = hub.clone();
            let folder = folder.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                hub.prompt(&folder, "another").await
            }
        }
    );
    let events = first.lines();
    assert_eq!(types(&events), ["message", "tool_output", "tool_result", "message", "result"]);
    assert!(events[2]["output"].as_str().unwrap().contains("yes-word"));
    assert_eq!((second.status, second.error_code().as_str()), (StatusCode::CONFLICT, "session_busy"));
}

#[tokio::test]
async fn closing_the_connection_does_not_stop_the_turn() {
    let model = FakeModel::start(vec![ModelReply::Slow(
        Duration::from_millis(300),
        Box::new(call("k1", "run_shell_command", json!({"command": "true"}))),
    )])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let request = axum::http::Request::post("/api/chat/prompt")
        .header("host", HOST)
        .header("authorization", format!("Bearer {TOKEN}"))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(json!({"folderPath": folder, "message": "go"}).to_string()))
        .unwrap();
    let response = tower::ServiceExt::oneshot(hub.router(), request).await.unwrap();
    drop(response); // the tab closed
    let session =
        hub.get("/api/projects").await.json()["projects"][0]["sessions"][0]["id"].as_str().unwrap().to_string();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
        if detail["status"] == "waiting_approval" {
            assert_eq!(detail["pendingApproval"]["toolId"], "k1");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the turn did not reach its card: {detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn without_a_model_the_stream_says_so_and_ends() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "hello").await.lines();
    assert_eq!(types(&events), ["init", "message", "error", "result"]);
    assert_eq!(events[2]["code"], "agent_unavailable");
    assert!(events[2]["message"].as_str().unwrap().contains("OPENAI_BASE_URL"));
    assert_eq!(events[3]["status"], "error");
}

#[tokio::test]
async fn model_errors_and_bad_requests_are_clear() {
    let model = FakeModel::start(vec![ModelReply::Fail(400, "model 'x' not found".into())]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "hi").await.lines();
    assert_eq!(types(&events), ["init", "message", "error", "result"]);
    assert!(events[2]["message"].as_str().unwrap().contains("not found"), "{}", events[2]);

    // Failures in the middle of a stream are said too, with what came before kept.
    let partial = r#"{"choices":[{"index":0,"delta":{"content":"Hal"}}]}"#;
    model.push(ModelReply::Events(vec![partial.into(), r#"{"error":{"message":"the server is overloaded"}}"#.into()]));
    let events = hub.prompt(&folder, "again").await.lines();
    assert_eq!(types(&events), ["init", "message", "message", "error", "result"]);
    assert!(events[3]["message"].as_str().unwrap().contains("overloaded"), "{}", events[3]);
    model.push(ModelReply::Events(vec!["{not json".into()]));
    let events = hub.prompt(&folder, "once more").await.lines();
    assert!(events[2]["message"].as_str().unwrap().contains("not valid JSON"), "{}", events[2]);
    // An event that never ends is cut off, not buffered for ever.
    let endless = format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{}", "x".repeat(17 << 20));
    model.push(ModelReply::Rendered(endless.into()));
    let events = hub.prompt(&folder, "and again").await.lines();
    assert_eq!(types(&events), ["init", "message", "error", "result"]);
    assert!(events[2]["message"].as_str().unwrap().contains("more than 16 MiB"), "{}", events[2]);
    // Nor does a reply of many complete events: tool arguments past the cap end the turn.
    let piece = format!(
        r#"{{"choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"function":{{"arguments":"{}"}}}}]}}}}]}}"#,
        "y".repeat(1 << 20)
    );
    let start = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"big","function":{"name":"write_file","arguments":""}}]}}]}"#;
    let endless: Vec<String> = std::iter::once(start.to_string()).chain(std::iter::repeat_n(piece, 40)).collect();
    model.push(ModelReply::Events(endless));
    let events = hub.prompt(&folder, "write it all").await.lines();
    assert_eq!(types(&events), ["init", "message", "error", "result"], "no call is planned or shown");
    assert!(events[2]["message"].as_str().unwrap().contains("grew past 32 MiB"), "{}", events[2]);

    let empty = hub.prompt(&folder, "   ").await;
    assert_eq!((empty.status, empty.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    let unknown = hub.decide("no-such-session", json!({"toolId": "x", "decision": "approve"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let session =
        hub.get("/api/projects").await.json()["projects"][0]["sessions"][0]["id"].as_str().unwrap().to_string();
    let bad = hub.decide(&session, json!({"toolId": "x", "decision": "maybe"})).await;
    assert_eq!((bad.status, bad.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    let stale = hub.decide(&session, json!({"toolId": "x", "decision": "approve"})).await;
    assert_eq!((stale.status, stale.error_code().as_str()), (StatusCode::CONFLICT, "not_pending"));
}

// Issue 14, defect 2: a model that sends two calls with one id (and one with
// none) used to run the second call's arguments for both, panic inside the turn
// and leave the session "running" forever (every prompt 409, Stop never ending).
#[tokio::test]
async fn repeated_and_empty_model_ids_get_ids_of_their_own_and_each_call_runs_as_sent() {
    let model = FakeModel::start(vec![
        calls(&[
            ("dup", "run_shell_command", json!({"command": "echo first >> out.txt"})),
            ("dup", "run_shell_command", json!({"command": "echo second >> out.txt"})),
            ("", "run_shell_command", json!({"command": "echo third >> out.txt"})),
        ]),
        // The next reply reuses an id of the reply before.
        call("dup", "run_shell_command", json!({"command": "echo fourth >> out.txt"})),
        text(&["All four."]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);

    let events = hub.prompt(&folder, "four lines").await.lines();
    let uses: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_use").collect();
    let ids: Vec<&str> = uses.iter().map(|e| e["tool_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 4);
    assert_eq!(ids.iter().collect::<std::collections::HashSet<_>>().len(), 4, "every call its own id: {ids:?}");
    assert_eq!(ids[0], "dup", "a model's id is kept where it can serve");
    let commands: Vec<&str> = uses.iter().map(|e| e["parameters"]["command"].as_str().unwrap()).collect();
    assert_eq!(
        commands,
        ["echo first >> out.txt", "echo second >> out.txt", "echo third >> out.txt", "echo fourth >> out.txt"]
    );
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    assert_eq!(std::fs::read_to_string(folder.join("out.txt")).unwrap(), "first\nsecond\nthird\nfourth\n");
    let results: Vec<&str> =
        events.iter().filter(|e| e["type"] == "tool_result").map(|e| e["tool_id"].as_str().unwrap()).collect();
    assert_eq!(results, ids, "one result per call, in order");

    // The model gets its own ids back, in its order (an empty one was named by
    // the model client, in the reply it keeps too).
    let answered: Vec<String> = model
        .last_messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        (answered.len(), &answered[..2], answered[3].as_str()),
        (4, &["dup".to_string(), "dup".into()][..], "dup")
    );
    assert!(!answered[2].is_empty() && answered[2] != "dup", "{answered:?}");

    // The session is free.
    let session = session_of(&events);
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await.json()["status"], "idle");
    model.push(text(&["Still here."]));
    let again = hub.prompt(&folder, "again").await.lines();
    assert_eq!(again.last().unwrap()["status"], "success");
}

#[tokio::test]
async fn repeated_model_ids_waiting_for_approval_are_decided_one_by_one() {
    let model = FakeModel::start(vec![
        calls(&[
            ("x", "run_shell_command", json!({"command": "echo one >> out.txt"})),
            ("x", "run_shell_command", json!({"command": "echo two >> out.txt"})),
        ]),
        text(&["Both."]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "two").await.lines();
    let pending: Vec<String> =
        serde_json::from_value(events.last().unwrap()["pending"].clone()).expect("a list of ids");
    assert_eq!(pending.len(), 2);
    assert_ne!(pending[0], pending[1]);
    let session = session_of(&events);
    let first = hub.decide(&session, json!({"toolId": pending[0], "decision": "approve"})).await.lines();
    assert_eq!(first.last().unwrap()["pending"], json!([pending[1]]));
    assert_eq!(std::fs::read_to_string(folder.join("out.txt")).unwrap(), "one\n", "only the approved one ran");
    let second = hub.decide(&session, json!({"toolId": pending[1], "decision": "approve"})).await.lines();
    assert_eq!(second.last().unwrap()["status"], "success");
    assert_eq!(std::fs::read_to_string(folder.join("out.txt")).unwrap(), "one\ntwo\n");
}

/// Issue 24, item 7a: a model that sends hundreds of calls in one reply does
/// not get any of them checked, shown or run; the turn ends saying why.
#[tokio::test]
async fn a_reply_with_too_many_calls_ends_the_turn_and_nothing_is_shown_or_run() {
    let flood: Vec<(String, Value)> =
        (0..65).map(|n| (format!("c{n}"), json!({"file_path": format!("f{n}.txt"), "content": "x"}))).collect();
    let list: Vec<(&str, &str, Value)> =
        flood.iter().map(|(id, args)| (id.as_str(), "write_file", args.clone())).collect();
    let model = FakeModel::start(vec![calls(&list), text(&["fine"])]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(Some(r#"{"security":{"disableYoloMode":false}}"#));
    hub.set_yolo(&folder, true).await;

    let events = hub.prompt(&folder, "flood").await.lines();
    assert_eq!(types(&events), ["init", "message", "error", "result"], "{events:?}");
    assert_eq!(events[2]["code"], "too_many_calls");
    assert!(events[2]["message"].as_str().unwrap().contains("more than 64 tool calls"), "{}", events[2]);
    assert_eq!(events[3]["status"], "error");
    assert!(!folder.join("f0.txt").exists(), "nothing of the reply ran, even in YOLO");

    // The session goes on: the next prompt is answered.
    let next = hub.prompt(&folder, "again").await.lines();
    assert_eq!(next.last().unwrap()["status"], "success", "{next:?}");
}
