//! The Stop button (`POST /api/sessions/{id}/cancel`) with the built-in agent:
//! a running command is killed, a waiting card is withdrawn, the turn ends
//! `cancelled`, and the model later learns which calls never ran.

use crate::common;

use std::time::Duration;

use axum::http::StatusCode;
use common::fake_model::{call, text, FakeModel};
use common::*;
use serde_json::{json, Value};

impl TestHub {
    async fn cancel(&self, session: &str) -> Reply {
        self.post(&format!("/api/sessions/{session}/cancel"), "").await
    }

    async fn status(&self, session: &str) -> String {
        self.get(&format!("/api/sessions/{session}")).await.json()["status"].as_str().unwrap().to_string()
    }

    async fn session_id(&self, folder: &std::path::Path) -> String {
        self.config(folder).await.json()["sessionId"].as_str().unwrap().to_string()
    }
}

fn tool_messages(messages: &[Value]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap().to_string(), m["content"].as_str().unwrap().to_string()))
        .collect()
}

#[tokio::test]
async fn stop_kills_a_running_command_and_ends_the_turn_cancelled() {
    let model = FakeModel::start(vec![
        call("s", "run_shell_command", json!({"command": "echo $$ > pid; exec sleep 30.71"})),
        text(&["next"]),
    ])
    .await;
    let hub = std::sync::Arc::new(TestHub::with_model(&model));
    let (_dir, folder) = project(None);
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);
    let session = hub.session_id(&folder).await;

    let running = tokio::spawn({
        let (hub, folder) = (hub.clone(), folder.clone());
        async move { hub.prompt(&folder, "slow").await.lines() }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let pid = loop {
        assert!(tokio::time::Instant::now() < deadline, "the command never started");
        if let Some(pid) = folder.join("pid").exists().then(|| common::sleeping("30.71")).flatten() {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(process_alive(&pid.to_string()));
    let stopped = hub.cancel(&session).await;
    assert_eq!(stopped.status, StatusCode::OK);
    assert_eq!(stopped.lines().last().unwrap()["status"], "cancelled");

    let events = tokio::time::timeout(Duration::from_secs(5), running).await.expect("the prompt stream ends").unwrap();
    let results: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_result").collect();
    assert_eq!(results.len(), 1, "{events:?}");
    // It ran part way: reported as ended, never as "not executed".
    assert_eq!(
        (results[0]["tool_id"].as_str(), results[0]["status"].as_str(), results[0]["error"]["type"].as_str()),
        (Some("s"), Some("error"), Some("stopped"))
    );
    assert_eq!(events.last().unwrap()["status"], "cancelled");
    assert_eq!(hub.status(&session).await, "idle");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while process_alive(&pid.to_string()) {
        assert!(tokio::time::Instant::now() < deadline, "the command was killed, not left running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let next = hub.prompt(&folder, "go on").await.lines();
    assert_eq!(next.last().unwrap()["status"], "success");
    let told = tool_messages(&model.last_messages());
    assert_eq!(told, [("s".to_string(), agent_hub::approval::STOPPED_RUNNING_RESULT.to_string())]);
}

#[tokio::test]
async fn stop_withdraws_a_waiting_card_and_nothing_is_left_to_decide() {
    let model = FakeModel::start(vec![call("w", "write_file", json!({"file_path": "a.txt", "content": "a"}))]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let session = hub.session_id(&folder).await;

    let idle = hub.cancel(&session).await;
    assert_eq!((idle.status, idle.error_code()), (StatusCode::CONFLICT, "not_running".to_string()));

    let first = hub.prompt(&folder, "write").await.lines();
    assert_eq!(first.last().unwrap()["status"], "waiting_approval");
    let stopped = hub.cancel(&session).await.lines();
    assert_eq!(types(&stopped), ["tool_result", "result"]);
    assert_eq!(stopped[0]["status"], "skipped");
    assert_eq!(stopped[1]["status"], "cancelled");
    assert_eq!(hub.status(&session).await, "idle");
    assert!(hub.get(&format!("/api/sessions/{session}")).await.json()["pendingApproval"].is_null());

    let late = hub.decide(&session, json!({"toolId": "w", "decision": "approve"})).await;
    assert_eq!((late.status, late.error_code()), (StatusCode::CONFLICT, "not_pending".to_string()));
    assert!(!folder.join("a.txt").exists());
    assert_eq!(hub.cancel(&session).await.status, StatusCode::CONFLICT, "nothing runs any more");
}
