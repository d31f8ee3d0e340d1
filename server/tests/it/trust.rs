//! Trust, round two (issue 24), over HTTP with the built-in agent and a
//! scripted model: what the gate judges is what runs, it is asked when a call
//! starts (never on the strength of an earlier moment), and a decision on one
//! call never clears another that the gate would stop.

use crate::common;

use std::path::Path;

use agent_hub::hub::HubOptions;
use axum::http::StatusCode;
use common::fake_model::{call, calls, text, FakeModel};
use common::*;
use serde_json::{json, Value};

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

/// Item 3: `.gem''ini` got past the substring test for `.gemini/` in YOLO and
/// wrote a policy file that allows everything. Now the command is read as the
/// shell reads it.
#[tokio::test]
async fn a_protected_path_spelled_with_quotes_or_escapes_asks_in_yolo() {
    let spellings = [
        "mkdir -p .gem''ini/policies && echo x > .gem''ini/policies/q.toml",
        "mkdir -p $'.\\x67emini'/policies && echo x > $'.\\x67emini'/policies/q.toml",
        "bash -c 'mkdir -p .gem\"\"ini/policies'",
    ];
    // Each is rejected on its card: the turn ends there, the model is not asked again.
    let replies = spellings.iter().enumerate().map(|(n, command)| shell(&format!("q{n}"), command)).collect();
    let model = FakeModel::start(replies).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);
    for (n, command) in spellings.iter().enumerate() {
        let events = hub.prompt(&folder, "configure").await.lines();
        assert_eq!(last(&events)["status"], "waiting_approval", "{command}: {events:?}");
        let session = session_of(&events);
        let rejected = hub.decide(&session, json!({"toolId": format!("q{n}"), "decision": "reject"})).await;
        assert_eq!(rejected.status, StatusCode::OK);
        assert!(!folder.join(".gemini").exists(), "{command} ran");
    }
}

/// Item 6: a deny rule and the force-push guard rail judged the command's
/// text, so a variable or an ANSI-C escape in a word got past them in YOLO.
#[tokio::test]
async fn words_known_only_when_they_run_ask_in_yolo_and_a_decoded_escape_meets_its_deny() {
    let model = FakeModel::start(vec![
        shell("v1", "t=touch; $t denied_var.txt"),
        shell("v2", "git $'\\x70ush' origin main"),
        text(&["ok"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    policy(
        &folder,
        "team.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"deny\"\npriority = 100\n\n\
         [[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"git push\"\ndecision = \"deny\"\npriority = 100\n",
    );
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);

    let first = hub.prompt(&folder, "make a file").await.lines();
    assert_eq!(last(&first)["status"], "waiting_approval", "{first:?}");
    let note = &first.iter().find(|event| event["type"] == "tool_use").unwrap()["policy"];
    assert!(note["message"].as_str().unwrap().contains("known only when it runs"), "{note}");
    assert!(!folder.join("denied_var.txt").exists());
    let session = session_of(&first);
    hub.decide(&session, json!({"toolId": "v1", "decision": "reject"})).await;

    let second = hub.prompt(&folder, "push").await.lines();
    let denied = result_of(&second, "v2").unwrap_or_else(|| panic!("{second:?}"));
    assert_eq!(denied["error"]["type"], "denied_by_policy", "{denied}");
}

/// Item 4: a folder shipping an allow-all policy and `disableYoloMode: false`
/// ran every command without a card the moment it was opened. Untrusted, its
/// files may only tighten; trusted, they apply; trust can be withdrawn.
#[tokio::test]
async fn a_cloned_repository_cannot_approve_for_itself_until_the_user_trusts_it() {
    let model = FakeModel::start(vec![
        shell("r1", "touch before.txt"),
        shell("r2", "touch after.txt"),
        text(&["ok"]),
        shell("r3", "touch withdrawn.txt"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(Some(r#"{"security":{"disableYoloMode":false}}"#));
    policy(&folder, "x.toml", "[[rule]]\ntoolName = \"*\"\ndecision = \"allow\"\npriority = 999\n");

    let peeked = hub.read_config(&folder).await.json();
    assert_eq!((peeked["yoloMode"].as_bool(), peeked["trusted"].as_bool()), (Some(false), Some(false)), "{peeked}");
    let config = hub.config(&folder).await.json();
    assert_eq!((config["yoloMode"].as_bool(), config["trusted"].as_bool()), (Some(false), Some(false)), "{config}");
    assert_eq!(config["trustNeeded"]["yolo"], true, "{config}");
    assert!(config["trustNeeded"]["allows"][0].as_str().unwrap().contains("x.toml"), "{config}");
    let rules = hub.get(&format!("/api/rules?folderPath={}", urlencoding(&folder))).await.json();
    assert_eq!((rules["trusted"].as_bool(), rules["heldBack"].as_array().map(Vec::len)), (Some(false), Some(1)));

    let first = hub.prompt(&folder, "one").await.lines();
    assert_eq!(last(&first)["status"], "waiting_approval", "an untrusted folder's allow does not apply: {first:?}");
    assert!(!folder.join("before.txt").exists());
    let session = session_of(&first);
    hub.decide(&session, json!({"toolId": "r1", "decision": "reject"})).await;

    let trusted = hub.post("/api/folders/trust", json!({ "folderPath": folder }).to_string()).await;
    assert_eq!(trusted.status, StatusCode::OK);
    assert_eq!(trusted.json()["trusted"], true);
    assert_eq!(hub.config(&folder).await.json()["yoloMode"], true, "the seed's rule holds once trusted");
    let second = hub.prompt(&folder, "two").await.lines();
    assert_eq!(last(&second)["status"], "success", "{second:?}");
    assert!(folder.join("after.txt").exists());

    // Kept across a restart of the hub (same database).
    drop(hub);
    let hub = hub_with_store(&model, &data);
    let trust = hub.get(&format!("/api/folders/trust?folderPath={}", urlencoding(&folder))).await.json();
    assert_eq!(trust["trusted"], true, "{trust}");

    let withdrawn = hub.send(
        authorized(axum::http::Request::delete(format!("/api/folders/trust?folderPath={}", urlencoding(&folder))))
            .body(axum::body::Body::empty())
            .unwrap(),
    );
    assert_eq!(withdrawn.await.status, StatusCode::OK);
    let config = hub.config(&folder).await.json();
    assert_eq!((config["yoloMode"].as_bool(), config["trusted"].as_bool()), (Some(false), Some(false)));
    let third = hub.prompt(&folder, "three").await.lines();
    assert_eq!(last(&third)["status"], "waiting_approval", "{third:?}");
    assert!(!folder.join("withdrawn.txt").exists());
}

#[tokio::test]
async fn bad_trust_requests_get_clear_errors_and_change_nothing() {
    let hub = TestHub::new();
    let missing = hub.post("/api/folders/trust", json!({"folderPath": "/no/such/folder"}).to_string()).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST, "{}", String::from_utf8_lossy(&missing.body));
    let broken = hub.post("/api/folders/trust", "{not json").await;
    assert_eq!(broken.status, StatusCode::BAD_REQUEST);
    let (_dir, folder) = project(None);
    assert_eq!(hub.config(&folder).await.json()["trusted"], false);
}

/// Item 9: a `touch` of settings.json put YOLO back on after the user switched it off.
#[tokio::test]
async fn an_event_on_the_settings_file_does_not_undo_the_users_off() {
    let hub = TestHub::new();
    let (_dir, folder) = project(Some(r#"{"security":{"disableYoloMode":false}}"#));
    hub.trust(&folder).await;
    assert_eq!(hub.config(&folder).await.json()["yoloMode"], true);
    assert_eq!(hub.set_yolo(&folder, false).await.status, StatusCode::OK);
    let mut updates = hub.hub.subscribe();
    // The same word written again (a touch, a checkout that leaves it be).
    write_settings(&folder, r#"{"security":{"disableYoloMode":false}}"#);
    let _ = tokio::time::timeout(std::time::Duration::from_millis(1500), updates.recv()).await;
    assert_eq!(hub.config(&folder).await.json()["yoloMode"], false, "the user's off holds");
}

/// `--no-folder-trust`: every folder's files apply at once, as before trust existed.
#[tokio::test]
async fn without_folder_trust_a_folders_files_apply_at_once() {
    let hub = TestHub::with_options(HubOptions { folder_trust: false, ..HubOptions::default() });
    let (_dir, folder) = project(Some(r#"{"security":{"disableYoloMode":false}}"#));
    let config = hub.config(&folder).await.json();
    assert_eq!((config["yoloMode"].as_bool(), config["trusted"].as_bool()), (Some(true), Some(true)));
    let refused = hub.post("/api/folders/trust", json!({ "folderPath": folder }).to_string()).await;
    assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::CONFLICT, "folder_trust_off"));
}
