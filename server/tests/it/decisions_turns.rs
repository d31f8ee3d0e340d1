//! `approve_turn` with the built-in agent and a scripted model: the same
//! tool's later calls in the turn run without a card (audited `turn_grant`),
//! the grant ends with the turn, it outlives a pause and a kill -9 while the
//! turn is paused, and a deny rule, an ask rule or a protected path still stop
//! a call it would cover.

use crate::common;

use axum::http::StatusCode;
use common::fake_model::{calls, text, FakeModel};
use common::*;
use serde_json::{json, Value};

use super::decisions::{result_of, row, start_binary};

fn statuses(events: &[Value]) -> Vec<String> {
    events.iter().filter(|e| e["type"] == "result").map(|e| e["status"].as_str().unwrap().to_string()).collect()
}

fn log(folder: &std::path::Path) -> String {
    std::fs::read_to_string(folder.join("log.txt")).unwrap_or_default()
}

async fn audit(hub: &TestHub, folder: &std::path::Path) -> Vec<Value> {
    hub.get(&format!("/api/audit?folderPath={}", urlencoding(folder))).await.lines()
}

#[tokio::test]
async fn approve_turn_runs_the_same_tools_later_calls_in_the_turn_and_the_next_turn_asks_again() {
    let model = FakeModel::start(vec![
        calls(&[
            ("t1", "run_shell_command", json!({"command": "echo one >> log.txt"})),
            ("t2", "run_shell_command", json!({"command": "echo two >> log.txt"})),
        ]),
        shell("t3", "echo three >> log.txt"),
        text(&["All ran."]),
        shell("t4", "echo four >> log.txt"),
        text(&["Four ran."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let paused = hub.prompt(&folder, "one, two, three").await.lines();
    assert_eq!(paused.last().unwrap()["pending"], json!(["t1", "t2"]));
    let session = session_of(&paused);

    // t2 waited beside t1, t3 comes in the model's next reply: neither gets a card.
    let reply = hub.decide(&session, json!({"toolId": "t1", "decision": "approve_turn"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let rest = reply.lines();
    assert_eq!(shape(&rest), ["tool_result", "tool_result", "tool_use", "tool_result", "text", "result"], "{rest:?}");
    assert_eq!(statuses(&rest), ["success"]);
    assert_eq!(log(&folder), "one\ntwo\nthree\n");
    let rows = audit(&hub, &folder).await;
    assert_eq!(row(&rows, "t1"), ("approved_turn", "user", Some("ran")));
    assert_eq!(row(&rows, "t2"), ("allowed", "turn_grant", Some("ran")));
    assert_eq!(row(&rows, "t3"), ("allowed", "turn_grant", Some("ran")));

    // The grant ended with the turn: the next prompt's call asks.
    let next = hub.prompt(&folder, "four").await.lines();
    assert_eq!(next.last().unwrap()["status"], "waiting_approval", "{next:?}");
    assert_eq!(next.last().unwrap()["pending"], json!(["t4"]));
    assert_eq!(log(&folder), "one\ntwo\nthree\n", "t4 waits for its card");
    let done = hub.decide(&session, json!({"toolId": "t4", "decision": "approve"})).await.lines();
    assert_eq!(statuses(&done), ["success"]);
    assert_eq!(row(&audit(&hub, &folder).await, "t4"), ("approved", "user", Some("ran")));
}

#[tokio::test]
async fn a_deny_rule_an_ask_rule_and_a_protected_path_still_stop_calls_in_a_turn_grant() {
    let model = FakeModel::start(vec![
        shell("t1", "echo start >> log.txt"),
        calls(&[
            ("t2", "run_shell_command", json!({"command": "touch denied.txt"})),
            ("t3", "run_shell_command", json!({"command": "echo careful > careful.txt"})),
            ("t4", "run_shell_command", json!({"command": "echo hi > .gemini/notes.txt"})),
            ("t5", "run_shell_command", json!({"command": "echo five >> log.txt"})),
        ]),
        text(&["Done."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    policy(
        &folder,
        "rules.toml",
        "[[rule]]\ncommandPrefix = \"touch\"\ndecision = \"deny\"\npriority = 10\ndenyMessage = \"No touching here.\"\n\n\
         [[rule]]\ncommandPrefix = \"echo careful\"\ndecision = \"ask_user\"\npriority = 10\n",
    );
    let paused = hub.prompt(&folder, "go").await.lines();
    let session = session_of(&paused);
    let rest = hub.decide(&session, json!({"toolId": "t1", "decision": "approve_turn"})).await.lines();

    assert_eq!(rest.last().unwrap()["status"], "waiting_approval", "{rest:?}");
    assert_eq!(rest.last().unwrap()["pending"], json!(["t3", "t4"]), "the ask rule and the protected path ask");
    let (status, kind, message) = result_of(&rest, "t2");
    assert_eq!((status.as_str(), kind.as_deref()), ("error", Some("denied_by_policy")));
    assert!(message.unwrap().contains("No touching here."));
    assert!(!folder.join("denied.txt").exists() && !folder.join("careful.txt").exists());
    assert!(!folder.join(".gemini/notes.txt").exists());
    assert_eq!(log(&folder), "start\n", "t5 waits behind the cards");

    let decided = hub
        .batch(json!([
            {"sessionId": session, "toolId": "t3", "decision": "approve"},
            {"sessionId": session, "toolId": "t4", "decision": "approve"},
        ]))
        .await;
    let oks: Vec<&Value> = decided["results"].as_array().unwrap().iter().map(|r| &r["ok"]).collect();
    assert_eq!(oks, [&json!(true), &json!(true)], "{decided}");
    let detail = hub.wait_status(&session, "idle").await;
    let events = detail["events"].as_array().unwrap();
    assert_eq!(statuses(events), ["waiting_approval", "waiting_approval", "success"], "no card after t3 and t4");
    assert_eq!(log(&folder), "start\nfive\n");
    let rows = audit(&hub, &folder).await;
    assert_eq!(row(&rows, "t1"), ("approved_turn", "user", Some("ran")));
    assert_eq!(row(&rows, "t2"), ("denied", "rule", Some("denied")));
    assert_eq!(row(&rows, "t3"), ("approved", "user", Some("ran")));
    assert_eq!(row(&rows, "t4"), ("approved", "user", Some("ran")));
    assert_eq!(row(&rows, "t5"), ("allowed", "turn_grant", Some("ran")));
}

#[tokio::test]
async fn a_turn_grant_outlives_a_pause_and_a_kill_9_and_ends_with_its_turn() {
    let model = FakeModel::start(vec![
        shell("t1", "echo one >> log.txt"),
        calls(&[
            ("t2", "run_shell_command", json!({"command": "echo two >> log.txt"})),
            ("w1", "write_file", json!({"file_path": "notes.txt", "content": "hi\n"})),
        ]),
        shell("t3", "echo three >> log.txt"),
        text(&["All ran."]),
        shell("t4", "echo four >> log.txt"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = start_binary(&data, &model);
    let first = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "go"}))).await;
    let session = first[0]["session_id"].as_str().unwrap().to_string();
    let approve = format!("/api/sessions/{session}/approve");
    let paused = hub.lines("POST", &approve, Some(json!({"toolId": "t1", "decision": "approve_turn"}))).await;
    assert_eq!(paused.last().unwrap()["pending"], json!(["w1"]), "another tool asks: {paused:?}");
    assert_eq!(log(&folder), "one\ntwo\n", "t2 ran on the grant");
    hub.kill_9();

    let hub = start_binary(&data, &model);
    let rest = hub.lines("POST", &approve, Some(json!({"toolId": "w1", "decision": "approve"}))).await;
    assert_eq!(statuses(&rest), ["success"], "t3 ran on the grant kept across the restart: {rest:?}");
    assert_eq!(log(&folder), "one\ntwo\nthree\n");
    let rows = hub.lines("GET", &format!("/api/audit?folderPath={}", urlencoding(&folder)), None).await;
    assert_eq!(row(&rows, "t2"), ("allowed", "turn_grant", Some("ran")));
    assert_eq!(row(&rows, "t3"), ("allowed", "turn_grant", Some("ran")));

    let next = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "four"}))).await;
    assert_eq!(next.last().unwrap()["pending"], json!(["t4"]), "a new turn asks again: {next:?}");
    assert_eq!(log(&folder), "one\ntwo\nthree\n");
}

#[tokio::test]
async fn a_turn_grant_ends_with_a_stopped_turn() {
    let model = FakeModel::start(vec![
        calls(&[
            ("t1", "run_shell_command", json!({"command": "echo one >> log.txt"})),
            ("w1", "write_file", json!({"file_path": "notes.txt", "content": "hi\n"})),
        ]),
        shell("t2", "echo two >> log.txt"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let paused = hub.prompt(&folder, "go").await.lines();
    let session = session_of(&paused);
    let rest = hub.decide(&session, json!({"toolId": "t1", "decision": "approve_turn"})).await.lines();
    assert_eq!(rest.last().unwrap()["pending"], json!(["w1"]), "{rest:?}");
    let stopped = hub.post(&format!("/api/sessions/{session}/cancel"), "").await.lines();
    assert_eq!(stopped.last().unwrap()["status"], "cancelled", "{stopped:?}");

    let next = hub.prompt(&folder, "two").await.lines();
    assert_eq!(next.last().unwrap()["pending"], json!(["t2"]), "the stopped turn's grant is gone: {next:?}");
    assert_eq!(log(&folder), "one\n");
}
