//! Bounded memory: idle sessions leave memory past a bound and come back from
//! the store exactly as they were, waiting cards included.

use crate::common;

use agent_hub::hub::HubOptions;
use agent_hub::store::Store;
use common::fake_model::{call, text, FakeModel};
use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn idle_sessions_leave_memory_and_come_back_whole() {
    let model = FakeModel::start(Vec::new()).await;
    let data = tempfile::tempdir().unwrap();
    let store = Store::open(data.path()).unwrap();
    let hub =
        TestHub::with_options(HubOptions { max_resident: 2, store: Some(store.clone()), ..model_options(&model) });
    let folders: Vec<_> = (0..5).map(|_| project(None)).collect();
    let mut sessions = Vec::new();
    for (index, (_dir, folder)) in folders.iter().enumerate() {
        if index == 0 {
            model.push(call("w0", "run_shell_command", json!({"command": "echo decided >> out.txt"})));
        } else {
            model.push(text(&["Reply ", &index.to_string()]));
        }
        let events = hub.prompt(folder, &format!("prompt {index}")).await.lines();
        sessions.push((events[0]["session_id"].as_str().unwrap().to_string(), events));
    }
    store.flush().await.unwrap();
    // Each use looks at the bound; what is idle and saved goes.
    for (session, _) in &sessions {
        hub.get(&format!("/api/sessions/{session}")).await;
    }
    let resident = hub.hub.resident_sessions();
    assert!(resident <= 3, "{resident} sessions still in memory (bound 2, plus the one in use)");

    for (session, streamed) in &sessions {
        let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
        assert_eq!(detail["events"].as_array().unwrap(), streamed, "session {session} came back whole");
    }
    // The waiting card came back with its session and is decided once.
    let (first, streamed) = &sessions[0];
    assert_eq!(streamed.last().unwrap()["status"], "waiting_approval");
    model.push(text(&["Done."]));
    let rest = hub.decide(first, json!({"toolId": "w0", "decision": "approve"})).await.lines();
    assert_eq!(rest.last().unwrap()["status"], "success", "{rest:?}");
    assert_eq!(rest[0]["seq"].as_u64(), Some(streamed.len() as u64 + 1), "seq goes on");
    assert_eq!(std::fs::read_to_string(folders[0].1.join("out.txt")).unwrap(), "decided\n");
    let again = hub.decide(first, json!({"toolId": "w0", "decision": "approve"})).await;
    assert_eq!(again.status, 409, "decided once");
    let replay: Vec<Value> =
        hub.get(&format!("/api/sessions/{first}")).await.json()["events"].as_array().unwrap().clone();
    assert_eq!(replay.len(), streamed.len() + rest.len());
}
