//! Nothing is lost: the real binary is killed with SIGKILL and started again on
//! the same data dir, against a scripted model.

use crate::common;

use std::time::Duration;

use common::fake_model::{call, text, FakeModel, Reply};
use common::process::HubProcess;
use common::{assistant_text, project, shape, types};
use serde_json::{json, Value};

fn model_args(model: &FakeModel) -> Vec<String> {
    vec!["--model-url".into(), model.base_url.clone(), "--model".into(), "fake-model".into()]
}

fn start(data: &tempfile::TempDir, model: &FakeModel) -> HubProcess {
    let args = model_args(model);
    HubProcess::start(data.path(), &args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|event| event["seq"].as_u64().unwrap()).collect()
}

#[tokio::test]
async fn a_pending_approval_survives_kill_9_and_the_tool_runs_exactly_once() {
    let model = FakeModel::start(vec![
        call("k1", "run_shell_command", json!({"command": "echo ran >> count.txt && echo counted"})),
        text(&["Counted ", "after the restart."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);

    let hub = start(&data, &model);
    let first = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "count"}))).await;
    assert_eq!(types(&first), ["init", "message", "tool_use", "result"]);
    assert_eq!(first[3]["status"], "waiting_approval");
    let session = first[0]["session_id"].as_str().unwrap().to_string();
    let updated_at = hub.get("/api/projects").await["projects"][0]["sessions"][0]["updatedAt"].clone();
    hub.kill_9();

    let hub = start(&data, &model);
    let detail = hub.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(detail["status"], "waiting_approval");
    assert_eq!(detail["pendingApproval"]["toolId"], "k1");
    assert_eq!(detail["pendingApproval"]["parameters"]["command"], "echo ran >> count.txt && echo counted");
    assert_eq!(detail["events"].as_array().unwrap(), &first, "the log is as it was streamed");
    let projects = hub.get("/api/projects").await;
    assert_eq!(projects["projects"][0]["folderPath"], folder.display().to_string());
    assert_eq!(projects["projects"][0]["sessions"][0]["pendingCount"], 1);
    assert_eq!(projects["projects"][0]["sessions"][0]["updatedAt"], updated_at, "a restart is not an update");
    assert!(!folder.join("count.txt").exists(), "nothing ran while waiting");

    let path = format!("/api/sessions/{session}/approve");
    let more = hub.lines("POST", &path, Some(json!({"toolId": "k1", "decision": "approve"}))).await;
    assert_eq!(shape(&more), ["tool_output", "tool_result", "text", "result"]);
    assert_eq!(seqs(&more), (5..5 + more.len() as u64).collect::<Vec<_>>(), "seq goes on where it stopped");
    assert!(more[1]["output"].as_str().unwrap().contains("counted"));
    assert_eq!(assistant_text(&more), "Counted after the restart.");
    assert_eq!(more.last().unwrap()["status"], "success");
    assert_eq!(std::fs::read_to_string(folder.join("count.txt")).unwrap(), "ran\n");

    // The new process went on with the stored conversation.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let roles: Vec<&str> =
        requests[1]["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);

    // Decided is decided, across another restart too.
    hub.kill_9();
    let hub = start(&data, &model);
    let detail = hub.get(&format!("/api/sessions/{session}")).await;
    assert_eq!((detail["status"].as_str(), detail["pendingApproval"].is_null()), (Some("idle"), true));
    assert_eq!(detail["events"].as_array().unwrap().len(), 4 + more.len());
    assert_eq!(std::fs::read_to_string(folder.join("count.txt")).unwrap(), "ran\n", "exactly once");
}

#[tokio::test]
async fn a_question_survives_kill_9_and_is_answered_after_the_restart() {
    let model = FakeModel::start(vec![
        call("q", "ask_user", json!({"prompt": "Which port?", "input_type": "choice", "choices": ["8080", "9090"]})),
        text(&["Port 9090 it is."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = start(&data, &model);
    let first = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "serve"}))).await;
    assert_eq!(types(&first), ["init", "message", "input_request", "result"]);
    let session = first[0]["session_id"].as_str().unwrap().to_string();
    hub.kill_9();

    let hub = start(&data, &model);
    let detail = hub.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(detail["status"], "waiting_input");
    assert_eq!(detail["pendingInput"]["prompt"], "Which port?");
    let path = format!("/api/sessions/{session}/input");
    let answer = json!({"requestId": "q", "response": {"index": 1, "value": "9090"}});
    let more = hub.lines("POST", &path, Some(answer)).await;
    assert_eq!(shape(&more), ["tool_result", "text", "result"]);
    assert_eq!(more[0]["seq"], 5);
    assert_eq!(assistant_text(&more), "Port 9090 it is.");
}

#[tokio::test]
async fn a_turn_cut_by_kill_9_is_closed_as_an_error_and_can_be_prompted_again() {
    let model = FakeModel::start(vec![
        Reply::Slow(Duration::from_secs(30), Box::new(text(&["never arrives"]))),
        text(&["Fresh start."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = start(&data, &model);
    let prompt = {
        let base = hub.base.clone();
        let body = json!({"folderPath": folder, "message": "slow"}).to_string();
        tokio::spawn(async move {
            let _ = reqwest::Client::new()
                .post(format!("{base}/api/chat/prompt"))
                .bearer_auth(common::process::PROCESS_TOKEN)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await;
        })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while model.requests().is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "the model was never asked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let session = hub.get("/api/projects").await["projects"][0]["sessions"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await["status"], "running");
    hub.kill_9();
    prompt.abort();

    let hub = start(&data, &model);
    let detail = hub.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(detail["status"], "error");
    let events = detail["events"].as_array().unwrap();
    assert_eq!(types(events), ["init", "message", "error", "result"]);
    assert_eq!(events[2]["code"], "interrupted");
    assert_eq!(events[3]["status"], "error");

    let again = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "again"}))).await;
    assert_eq!(types(&again), ["init", "message", "message", "result"]);
    assert_eq!(again[0]["seq"], 5);
    assert_eq!(again[3]["status"], "success");
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await["status"], "idle");
}

#[tokio::test]
async fn replay_gives_stored_events_after_n_without_duplicates() {
    let model =
        FakeModel::start(vec![call("r1", "run_shell_command", json!({"command": "true"})), text(&["a", "b", "c"])])
            .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = start(&data, &model);
    let first = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "go"}))).await;
    let session = first[0]["session_id"].as_str().unwrap().to_string();
    let path = format!("/api/sessions/{session}/approve");
    let rest = hub.lines("POST", &path, Some(json!({"toolId": "r1", "decision": "approve"}))).await;
    let all: Vec<Value> = first.iter().chain(&rest).cloned().collect();
    assert_eq!(seqs(&all), (1..=all.len() as u64).collect::<Vec<_>>());

    let replay = hub.lines("GET", &format!("/api/sessions/{session}/events?after=0"), None).await;
    assert_eq!(replay, all, "after=0 is the whole log");
    let after3 = hub.lines("GET", &format!("/api/sessions/{session}/events?after=3"), None).await;
    assert_eq!(after3, all[3..].to_vec());
    let end = all.len();
    assert!(hub.lines("GET", &format!("/api/sessions/{session}/events?after={end}"), None).await.is_empty());

    hub.kill_9();
    let hub = start(&data, &model);
    let replay = hub.lines("GET", &format!("/api/sessions/{session}/events?after=2"), None).await;
    assert_eq!(replay, all[2..].to_vec(), "the same after a restart");
}

/// Sends a POST in the background; the hub may die before it answers.
fn post_in_background(hub: &HubProcess, path: &str, body: Value) -> tokio::task::JoinHandle<()> {
    let url = format!("{}{path}", hub.base);
    tokio::spawn(async move {
        let _ = reqwest::Client::new()
            .post(url)
            .bearer_auth(common::process::PROCESS_TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map(|response| response.bytes());
    })
}

async fn wait_for_file(path: &std::path::Path) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !path.exists() {
        assert!(tokio::time::Instant::now() < deadline, "{} never appeared", path.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// Issue 14, defect 1: two calls wait, the first is approved, the hub is killed
// while it runs. It used to be offered again (or run again on the next decision).
#[tokio::test]
async fn an_approved_call_cut_by_kill_9_is_reported_interrupted_and_never_runs_again() {
    let slow = "echo a >> started.txt; sleep 2; echo a >> finished.txt";
    let model = FakeModel::start(vec![
        common::fake_model::calls(&[
            ("a", "run_shell_command", json!({"command": slow})),
            ("b", "run_shell_command", json!({"command": "echo b >> started.txt"})),
        ]),
        text(&["Done."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = start(&data, &model);
    let first = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "go"}))).await;
    assert_eq!(first.last().unwrap()["pending"], json!(["a", "b"]));
    let session = first[0]["session_id"].as_str().unwrap().to_string();
    let approving = post_in_background(
        &hub,
        &format!("/api/sessions/{session}/approve"),
        json!({"toolId": "a", "decision": "approve"}),
    );
    wait_for_file(&folder.join("started.txt")).await;
    // Write-ahead: while the command runs, the database already says so.
    let saved: String = rusqlite::Connection::open(data.path().join("agent-hub.db"))
        .unwrap()
        .query_row("SELECT state FROM agent_state WHERE session_id = ?1", [&session], |row| row.get(0))
        .unwrap();
    let saved: Value = serde_json::from_str(&saved).unwrap();
    let states: Vec<(&str, &Value)> = saved["paused"]["batch"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| (call["tool_id"].as_str().unwrap(), &call["state"]))
        .collect();
    assert_eq!(states, [("a", &json!("Running")), ("b", &json!("Pending"))], "on disk before it ran");
    hub.kill_9();
    approving.abort();

    let hub = start(&data, &model);
    let detail = hub.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(detail["status"], "waiting_approval", "{detail}");
    assert_eq!(detail["pendingApproval"]["toolId"], "b", "b keeps its card; a is never offered again");
    assert_eq!(detail["pendingApproval"]["pending"], json!(["b"]));
    let events = detail["events"].as_array().unwrap();
    let results: Vec<&Value> = events.iter().filter(|e| e["type"] == "tool_result" && e["tool_id"] == "a").collect();
    assert_eq!(results.len(), 1, "a is reported once: {events:?}");
    assert_eq!(
        (results[0]["status"].as_str(), results[0]["error"]["type"].as_str()),
        (Some("error"), Some("interrupted"))
    );
    assert_eq!(events.last().unwrap()["status"], "waiting_approval");
    let seqs = seqs(events);
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>(), "contiguous");

    let stale = reqwest::Client::new()
        .post(format!("{}/api/sessions/{session}/approve", hub.base))
        .bearer_auth(common::process::PROCESS_TOKEN)
        .header("content-type", "application/json")
        .body(json!({"toolId": "a", "decision": "approve"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 409, "a decided call is not pending");
    let rest = hub
        .lines("POST", &format!("/api/sessions/{session}/approve"), Some(json!({"toolId": "b", "decision": "approve"})))
        .await;
    assert_eq!(shape(&rest), ["tool_result", "text", "result"]);
    assert_eq!(rest.last().unwrap()["status"], "success");
    // The killed hub's command may finish on its own; it never starts again.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(std::fs::read_to_string(folder.join("started.txt")).unwrap(), "a\nb\n", "each call started once");
    let messages = model.last_messages();
    let tool_results: Vec<(&str, &str)> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| (m["tool_call_id"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(tool_results.len(), 2, "{messages:?}");
    assert_eq!(tool_results[0], ("a", agent_hub::approval::INTERRUPTED_RESULT), "the model is told");
    assert_eq!(tool_results[1].0, "b");
}
