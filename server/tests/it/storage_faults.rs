//! Storage faults are said, never hidden: a write that fails (here the database
//! is held locked by another process past the busy timeout, as a full or
//! read-only disk would fail it) ends the turn with `store_failed`; the hub goes
//! on serving what it has, and nothing runs that is not saved as running first.

use crate::common;

use agent_hub::hub::HubOptions;
use agent_hub::store::Store;
use common::fake_model::{call, text, FakeModel};
use common::*;
use serde_json::json;

fn hub_with_store(model: &FakeModel, data: &tempfile::TempDir) -> TestHub {
    TestHub::with_options(HubOptions { store: Some(Store::open(data.path()).unwrap()), ..model_options(model) })
}

fn lock(data: &tempfile::TempDir) -> rusqlite::Connection {
    let blocker = rusqlite::Connection::open(data.path().join("agent-hub.db")).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    blocker
}

#[tokio::test]
async fn a_turn_whose_end_cannot_be_saved_ends_with_store_failed_and_the_hub_goes_on() {
    let model = FakeModel::start(vec![text(&["Saved."]), text(&["Not saved."]), text(&["Saved again."])]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let first = hub.prompt(&folder, "one").await.lines();
    assert_eq!(first.last().unwrap()["status"], "success");
    let session = first[0]["session_id"].as_str().unwrap().to_string();

    let blocker = lock(&data);
    let failed = hub.prompt(&folder, "two").await.lines();
    let shape = shape(&failed);
    assert_eq!(&shape[shape.len() - 2..], ["error", "result"], "{failed:?}");
    let error = &failed[failed.len() - 2];
    assert_eq!(error["code"], "store_failed");
    assert!(error["message"].as_str().unwrap().contains("could not save"), "{error}");
    assert_eq!(failed.last().unwrap()["status"], "error", "never a success that is not on disk");
    let seqs: Vec<u64> = failed.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");

    // The hub serves what it has, and the session takes the next prompt.
    let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
    assert_eq!(detail["status"], "error");
    assert!(detail["events"].as_array().unwrap().iter().any(|e| e["code"] == "store_failed"));
    drop(blocker);
    let again = hub.prompt(&folder, "three").await.lines();
    assert_eq!(again.last().unwrap()["status"], "success", "{again:?}");
}

#[tokio::test]
async fn an_approved_call_whose_running_state_cannot_be_saved_does_not_run() {
    let model = FakeModel::start(vec![
        call("c1", "run_shell_command", json!({"command": "echo ran >> ran.txt"})),
        text(&["Never asked."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let first = hub.prompt(&folder, "go").await.lines();
    assert_eq!(first.last().unwrap()["status"], "waiting_approval");
    let session = first[0]["session_id"].as_str().unwrap().to_string();

    let blocker = lock(&data);
    let rest = hub.decide(&session, json!({"toolId": "c1", "decision": "approve"})).await.lines();
    assert!(!folder.join("ran.txt").exists(), "a call runs only once it is saved as running");
    let result = rest.iter().find(|e| e["type"] == "tool_result").expect("the call is answered");
    assert_eq!((result["tool_id"].as_str(), result["status"].as_str()), (Some("c1"), Some("skipped")));
    assert!(rest.iter().any(|e| e["code"] == "store_failed"), "{rest:?}");
    assert_eq!(rest.last().unwrap()["status"], "error");
    assert_eq!(model.requests().len(), 1, "the model is not called after the failure");
    drop(blocker);
    let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
    assert!(detail["pendingApproval"].is_null(), "nothing is left waiting: {detail}");
}

/// Issue 24, item 13b: a stored agent state that cannot be read was started
/// afresh without a word, and written over at the next save.
#[tokio::test]
async fn an_agent_state_that_cannot_be_read_is_reported_and_kept_not_reset() {
    let model = FakeModel::start(vec![text(&["Hello."])]).await;
    let data = tempfile::tempdir().unwrap();
    let store = Store::open(data.path()).unwrap();
    let options = || HubOptions { store: Some(store.clone()), ..model_options(&model) };
    let (_dir, folder) = project(None);
    let first = TestHub::with_options(options());
    let events = first.prompt(&folder, "one").await.lines();
    let session = events[0]["session_id"].as_str().unwrap().to_string();
    store.flush().await.unwrap();
    drop(first);
    let db = rusqlite::Connection::open(data.path().join("agent-hub.db")).unwrap();
    let damaged = r#"{"messages": 5}"#;
    db.execute("UPDATE agent_state SET state = ?1 WHERE session_id = ?2", rusqlite::params![damaged, session]).unwrap();

    let hub = TestHub::with_options(options());
    // As the binary does before it serves: what the restore wrote is on disk (shown).
    store.flush().await.unwrap();
    let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
    assert_eq!(detail["status"], "error", "{detail}");
    let events = detail["events"].as_array().unwrap();
    let error = &events[events.len() - 2];
    assert_eq!(error["code"], "state_unreadable", "{events:?}");
    assert!(error["message"].as_str().unwrap().contains("could not be read"), "{error}");
    let refused = hub.prompt(&folder, "two").await;
    assert_eq!((refused.status.as_u16(), refused.error_code().as_str()), (409, "state_unreadable"));
    store.flush().await.unwrap();
    let kept: String =
        db.query_row("SELECT state FROM agent_state WHERE session_id = ?1", [&session], |row| row.get(0)).unwrap();
    assert_eq!(kept, damaged, "the stored state is kept as it was");
}
