//! Trust, round two (issue 24), over HTTP with the built-in agent and a
//! scripted model: what the gate judges is what runs, it is asked when a call
//! starts (never on the strength of an earlier moment), and a decision on one
//! call never clears another that the gate would stop.

mod common;

use std::path::Path;

use agent_hub::hub::HubOptions;
use agent_hub::store::Store;
use axum::http::StatusCode;
use common::fake_model::{call, calls, text, FakeModel};
use common::*;
use serde_json::{json, Value};

fn policy(folder: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(folder.join(".gemini/policies")).unwrap();
    std::fs::write(folder.join(".gemini/policies").join(name), text).unwrap();
}

fn hub_with_store(model: &FakeModel, data: &tempfile::TempDir) -> TestHub {
    let store = Store::open(data.path()).unwrap();
    TestHub::with_options(HubOptions { store: Some(store), ..model_options(model) })
}

fn session_of(events: &[Value]) -> String {
    events[0]["session_id"].as_str().unwrap().to_string()
}

fn last(events: &[Value]) -> &Value {
    events.last().expect("events")
}

fn result_of<'e>(events: &'e [Value], tool_id: &str) -> Option<&'e Value> {
    events.iter().find(|event| event["type"] == "tool_result" && event["tool_id"] == tool_id)
}

impl TestHub {
    async fn audit_rows(&self, folder: &Path) -> Vec<Value> {
        let reply = self.get(&format!("/api/audit?folderPath={}", urlencoding(folder))).await;
        assert_eq!(reply.status, StatusCode::OK);
        reply.lines()
    }
}

const ALLOW_GIT_STATUS: &str =
    "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"git status\"\ndecision = \"allow\"\npriority = 100\n";

/// Item 1: an allow rule matched the serialized arguments, all keys, so an extra
/// key lent its text to the command. Now the tool's typed arguments refuse it.
#[tokio::test]
async fn an_allow_rule_is_not_borrowed_by_an_extra_argument() {
    let smuggle = json!({"command": "touch smuggled.txt", "x": {"command": "git status"}});
    let model = FakeModel::start(vec![call("s1", "run_shell_command", smuggle), text(&["ok"])]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    policy(&folder, "team.toml", ALLOW_GIT_STATUS);
    hub.trust(&folder).await;

    let events = hub.prompt(&folder, "status please").await.lines();
    let result = result_of(&events, "s1").unwrap_or_else(|| panic!("a result: {events:?}"));
    assert_eq!(result["status"], "error", "{result}");
    assert_eq!(result["error"]["type"], "invalid_arguments", "{result}");
    assert!(result["error"]["message"].as_str().unwrap().contains("unknown field"), "{result}");
    assert!(!folder.join("smuggled.txt").exists(), "nothing ran");
}

/// Item 2: "Yes, for this session" on card 1 cleared card 2 past the gate, so a
/// write into `.gemini/policies` ran without a card, and the audit said the
/// user decided it.
#[tokio::test]
async fn for_this_session_leaves_a_sibling_the_gate_stops_on_its_card() {
    let evil = "mkdir -p .gemini/policies && echo 'x' > .gemini/policies/evil.toml";
    let model = FakeModel::start(vec![
        calls(&[
            ("c1", "run_shell_command", json!({"command": "echo a > a.txt"})),
            ("c2", "run_shell_command", json!({"command": evil})),
        ]),
        text(&["done"]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);

    let waiting = hub.prompt(&folder, "two things").await.lines();
    assert_eq!(last(&waiting)["pending"], json!(["c1", "c2"]), "{waiting:?}");
    let session = session_of(&waiting);
    let decided = hub.decide(&session, json!({"toolId": "c1", "decision": "approve_session"})).await.lines();
    assert_eq!(last(&decided)["status"], "waiting_approval", "{decided:?}");
    assert_eq!(last(&decided)["pending"], json!(["c2"]), "c2 still asks: {decided:?}");
    assert_eq!(std::fs::read_to_string(folder.join("a.txt")).unwrap(), "a\n");
    assert!(!folder.join(".gemini/policies/evil.toml").exists());

    // The same in words typed into the prompt box.
    let audit = hub.audit_rows(&folder).await;
    assert_eq!(audit.len(), 1, "c2 has no decision yet: {audit:?}");
    assert_eq!((audit[0]["toolId"].as_str(), audit[0]["decidedBy"].as_str()), (Some("c1"), Some("user")));
}

/// A sibling the grant does let run is judged at its start, and the audit says
/// the grant decided it, not the user.
#[tokio::test]
async fn a_sibling_run_on_a_grant_is_recorded_as_the_grants() {
    let model = FakeModel::start(vec![
        calls(&[
            ("g1", "run_shell_command", json!({"command": "echo one > one.txt"})),
            ("g2", "run_shell_command", json!({"command": "echo two > two.txt"})),
        ]),
        text(&["done"]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let waiting = hub.prompt(&folder, "two").await.lines();
    let session = session_of(&waiting);
    let decided = hub.decide(&session, json!({"toolId": "g1", "decision": "approve_session"})).await.lines();
    assert_eq!(last(&decided)["status"], "success", "{decided:?}");
    assert!(folder.join("two.txt").exists());
    let audit = hub.audit_rows(&folder).await;
    let by: Vec<(&str, &str)> =
        audit.iter().map(|row| (row["toolId"].as_str().unwrap(), row["decidedBy"].as_str().unwrap())).collect();
    assert!(by.contains(&("g1", "user")) && by.contains(&("g2", "session_grant")), "{audit:?}");
}

/// Item 5: a call cleared when the reply was planned (YOLO on) ran later, after
/// the user had switched YOLO off. Now it is judged when it starts.
#[tokio::test]
async fn a_call_planned_under_yolo_asks_when_yolo_is_off_by_the_time_it_starts() {
    let model = FakeModel::start(vec![
        calls(&[
            ("y1", "write_file", json!({"file_path": ".gemini/settings.json", "content": "{}"})),
            ("y2", "run_shell_command", json!({"command": "touch stale.txt"})),
        ]),
        text(&["done"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);
    let waiting = hub.prompt(&folder, "go").await.lines();
    assert_eq!(last(&waiting)["pending"], json!(["y1"]), "only the protected write asks: {waiting:?}");
    let session = session_of(&waiting);

    assert_eq!(hub.set_yolo(&folder, false).await.status, StatusCode::OK);
    let decided = hub.decide(&session, json!({"toolId": "y1", "decision": "approve"})).await.lines();
    assert_eq!(last(&decided)["pending"], json!(["y2"]), "touch asks now: {decided:?}");
    assert!(!folder.join("stale.txt").exists(), "it did not run on YOLO's word of the past");
}
