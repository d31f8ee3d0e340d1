//! Rules instead of clicks, over HTTP with the built-in agent and a scripted
//! model: the folder's Gemini CLI policy files allow, deny and ask (also in
//! YOLO), commands are judged part by part, built-in guard rails hold in YOLO,
//! "Always in this folder" is saved in the hub (surviving a restart) and
//! deleted again, and every decision reads back from the audit trail.

use crate::common;

use std::path::Path;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::fake_model::{call, text, FakeModel};
use common::process::HubProcess;
use common::*;
use serde_json::{json, Value};

fn tool_use(events: &[Value]) -> &Value {
    events.iter().find(|event| event["type"] == "tool_use").expect("a tool_use")
}

fn tool_result(events: &[Value]) -> &Value {
    events.iter().find(|event| event["type"] == "tool_result").expect("a tool_result")
}

impl TestHub {
    async fn delete(&self, path: &str) -> Reply {
        self.send(authorized(Request::delete(path)).body(Body::empty()).unwrap()).await
    }

    async fn audit(&self, folder: &Path) -> Vec<Value> {
        let reply = self.get(&format!("/api/audit?folderPath={}", urlencoding(folder))).await;
        assert_eq!(reply.status, StatusCode::OK);
        reply.lines()
    }

    async fn rules(&self, folder: &Path) -> Value {
        let reply = self.get(&format!("/api/rules?folderPath={}", urlencoding(folder))).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        reply.json()
    }
}

#[tokio::test]
async fn an_allow_rule_skips_the_card_and_a_chained_command_with_an_unallowed_part_asks() {
    let model = FakeModel::start(vec![
        shell("a1", "echo allowed > a.txt"),
        text(&["Done."]),
        shell("a2", "echo allowed; touch sneaky.txt"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    policy(
        &folder,
        "team.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"echo allowed\"\ndecision = \"allow\"\n\
         priority = 100\nallowRedirection = true\n",
    );
    hub.trust(&folder).await;

    let first = hub.prompt(&folder, "allowed").await.lines();
    assert_eq!(shape(&first), ["init", "message", "tool_use", "tool_result", "text", "result"], "no card");
    let note = &tool_use(&first)["policy"];
    assert_eq!(note["decision"], "allow");
    assert!(note["source"].as_str().unwrap().contains("team.toml"), "{note}");
    assert_eq!(std::fs::read_to_string(folder.join("a.txt")).unwrap(), "allowed\n");

    let second = hub.prompt(&folder, "chained").await.lines();
    assert_eq!(second.last().unwrap()["status"], "waiting_approval", "`touch` is allowed by no rule");
    assert!(!folder.join("sneaky.txt").exists());

    let audit = hub.audit(&folder).await;
    assert_eq!(audit.len(), 1, "the waiting call has no decision yet: {audit:?}");
    assert_eq!(
        (audit[0]["toolId"].as_str(), audit[0]["decision"].as_str(), audit[0]["decidedBy"].as_str()),
        (Some("a1"), Some("allowed"), Some("rule"))
    );
    assert_eq!(audit[0]["outcome"], "ran");
    assert_eq!(audit[0]["summary"], "echo allowed > a.txt");
    assert!(audit[0]["rule"].as_str().unwrap().contains("team.toml"));
}

#[tokio::test]
async fn a_deny_rule_blocks_in_yolo_with_its_message_and_ask_user_still_asks() {
    let model = FakeModel::start(vec![
        shell("d1", "touch denied.txt"),
        text(&["Understood."]),
        shell("q1", "echo careful > c.txt"),
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
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);

    let denied = hub.prompt(&folder, "touch it").await.lines();
    let result = tool_result(&denied);
    assert_eq!(
        (result["status"].as_str(), result["error"]["type"].as_str()),
        (Some("error"), Some("denied_by_policy"))
    );
    assert!(result["error"]["message"].as_str().unwrap().contains("No touching here."));
    assert_eq!(tool_use(&denied)["policy"]["decision"], "deny");
    assert_eq!(denied.last().unwrap()["status"], "success", "a denial does not end the turn");
    assert!(!folder.join("denied.txt").exists());
    let told = model.last_messages().into_iter().find(|m| m["role"] == "tool").unwrap();
    assert!(told["content"].as_str().unwrap().contains("No touching here."), "the model gets the message: {told}");

    let asks = hub.prompt(&folder, "careful").await.lines();
    assert_eq!(asks.last().unwrap()["status"], "waiting_approval", "ask_user asks even in YOLO");
    assert_eq!(tool_use(&asks)["policy"]["decision"], "ask_user");
    assert!(!folder.join("c.txt").exists());

    let audit = hub.audit(&folder).await;
    let row = audit.iter().find(|row| row["toolId"] == "d1").unwrap();
    assert_eq!((row["decision"].as_str(), row["outcome"].as_str()), (Some("denied"), Some("denied")));
}

#[tokio::test]
async fn guard_rails_keep_dangerous_commands_asking_in_yolo() {
    let model = FakeModel::start(vec![shell("g1", "sudo rm -rf /tmp/x"), shell("g2", "echo fine > ok.txt")]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);

    let rail = hub.prompt(&folder, "be root").await.lines();
    assert_eq!(rail.last().unwrap()["status"], "waiting_approval");
    let note = &tool_use(&rail)["policy"];
    assert_eq!(note["decision"], "ask_user");
    assert!(note["source"].as_str().unwrap().contains("guard rail"), "{note}");
    let session = session_of(&rail);
    let rejected = hub.decide(&session, json!({"toolId": "g1", "decision": "reject"})).await.lines();
    assert_eq!(rejected.last().unwrap()["status"], "cancelled");

    let plain = hub.prompt(&folder, "fine").await;
    assert!(folder.join("ok.txt").exists(), "YOLO still runs what no rule holds: {:?}", plain.body);
    let rules = hub.rules(&folder).await;
    assert_eq!((rules["mode"].as_str(), rules["guardRails"].as_bool()), (Some("yolo"), Some(true)));
}

#[tokio::test]
async fn a_policy_file_edit_applies_to_the_next_call_and_a_broken_rule_is_reported_not_fatal() {
    let model =
        FakeModel::start(vec![shell("e1", "echo one > one.txt"), text(&["ok"]), shell("e2", "echo two > two.txt")])
            .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    policy(&folder, "a.toml", "[[rule]]\ncommandPrefix = \"echo one\"\ndecision = \"deny\"\npriority = 5\n");

    let first = hub.prompt(&folder, "one").await.lines();
    assert_eq!(tool_result(&first)["error"]["type"], "denied_by_policy", "a deny applies untrusted");
    hub.trust(&folder).await;

    // No restart: the edited file (now with a broken rule beside a good one) applies at once.
    policy(
        &folder,
        "a.toml",
        "[[rule]]\ncommandPrefix = \"echo two\"\ndecision = \"allow\"\npriority = 5\nallowRedirection = true\n\n\
         [[rule]]\ntoolName = \"write_file\"\ndecision = \"maybe\"\npriority = 5\n",
    );
    policy(&folder, "broken.toml", "[[rule]\ntoolName = ");
    let second = hub.prompt(&folder, "two").await.lines();
    assert_eq!(tool_use(&second)["policy"]["decision"], "allow", "{second:?}");
    assert!(folder.join("two.txt").exists());

    let rules = hub.rules(&folder).await;
    let problems = rules["problems"].as_array().unwrap();
    assert!(problems.iter().any(|p| p["file"].as_str().unwrap().ends_with("broken.toml") && p["rule"].is_null()));
    assert!(problems.iter().any(|p| p["file"].as_str().unwrap().ends_with("a.toml")
        && p["rule"] == 2
        && p["message"].as_str().unwrap().contains("maybe")));
    assert!(rules["rules"].as_array().unwrap().iter().any(|r| r["commandPrefixes"] == json!(["echo two"])));
}

/// Issue 24, item 11: the card's prefix is the user's to edit, but not into one
/// that allows anything; the proposal (the whole command here) is saved.
#[tokio::test]
async fn a_prefix_that_would_allow_anything_is_not_saved() {
    let model = FakeModel::start(vec![shell("t1", "env FOO=1 echo hi"), text(&["done"])]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let waiting = hub.prompt(&folder, "t").await.lines();
    let session = session_of(&waiting);
    let suggested = hub.get("/api/rules/suggest?command=env%20FOO%3D1%20echo%20hi").await.json();
    assert_eq!(suggested["prefix"], "env FOO=1 echo hi", "{suggested}");

    for prefix in ["env", "env FOO=1"] {
        let refused =
            hub.decide(&session, json!({"toolId": "t1", "decision": "approve_always", "commandPrefix": prefix})).await;
        assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::BAD_REQUEST, "prefix_too_broad"));
        let message = refused.json()["message"].as_str().unwrap().to_string();
        assert!(message.contains(&format!("\"{prefix}\" would allow running anything")), "{message}");
    }
    assert!(!hub.rules(&folder).await["rules"].as_array().unwrap().iter().any(|r| r["origin"] == "hub"));
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await.json()["status"], "waiting_approval");

    let saved = hub.decide(&session, json!({"toolId": "t1", "decision": "approve_always"})).await;
    assert_eq!(saved.status, StatusCode::OK, "{:?}", saved.body);
    let rules = hub.rules(&folder).await;
    let ours = rules["rules"].as_array().unwrap().iter().find(|r| r["origin"] == "hub").unwrap().clone();
    assert_eq!(ours["commandPrefixes"], json!(["env FOO=1 echo hi"]));
}

#[tokio::test]
async fn bad_rule_requests_get_clear_errors_and_change_nothing() {
    let model = FakeModel::start(vec![shell("b1", "echo hi > b.txt")]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let waiting = hub.prompt(&folder, "b").await.lines();
    let session = session_of(&waiting);

    let wrong_prefix =
        hub.decide(&session, json!({"toolId": "b1", "decision": "approve_always", "commandPrefix": "rm"})).await;
    assert_eq!((wrong_prefix.status, wrong_prefix.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    let stale = hub.decide(&session, json!({"toolId": "nope", "decision": "approve_always"})).await;
    assert_eq!((stale.status, stale.error_code().as_str()), (StatusCode::CONFLICT, "not_pending"));
    let rules = hub.rules(&folder).await;
    assert!(!rules["rules"].as_array().unwrap().iter().any(|r| r["origin"] == "hub"), "nothing was saved");
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await.json()["status"], "waiting_approval");

    let builtin = rules["rules"].as_array().unwrap().iter().find(|r| r["origin"] == "built_in").unwrap();
    let not_ours = hub.delete(&format!("/api/rules/{}", builtin["id"].as_str().unwrap())).await;
    assert_eq!((not_ours.status, not_ours.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    assert_eq!(hub.delete("/api/rules/hub-999").await.status, StatusCode::NOT_FOUND);
    assert_eq!(hub.delete(&format!("/api/sessions/{session}/grants/write_file")).await.status, StatusCode::NOT_FOUND);
    let format = hub.get(&format!("/api/audit?folderPath={}&format=xml", urlencoding(&folder))).await;
    assert_eq!(format.status, StatusCode::BAD_REQUEST);
    let missing = hub.get("/api/rules?folderPath=%2Fno%2Fsuch%2Ffolder").await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    let (_other_dir, other) = project(None);
    hub.rules(&other).await;
    let folders = hub.get("/api/projects").await.json();
    assert_eq!(folders["projects"].as_array().unwrap().len(), 1, "reading rules opens no session: {folders}");
}

#[tokio::test]
async fn a_session_grant_is_listed_and_withdrawn() {
    let model = FakeModel::start(vec![
        call("w1", "write_file", json!({"file_path": "a.md", "content": "a\n"})),
        text(&["ok"]),
        call("w2", "write_file", json!({"file_path": "b.md", "content": "b\n"})),
        text(&["ok"]),
        call("w3", "write_file", json!({"file_path": "c.md", "content": "c\n"})),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let first = hub.prompt(&folder, "a").await.lines();
    let session = session_of(&first);
    hub.decide(&session, json!({"toolId": "w1", "decision": "approve_session"})).await.lines();
    let granted = hub.prompt(&folder, "b").await.lines();
    assert_eq!(granted.last().unwrap()["status"], "success", "the grant holds");
    let rules = hub.rules(&folder).await;
    assert_eq!(rules["grants"], json!([{"sessionId": session, "toolName": "write_file"}]));

    let withdrawn = hub.delete(&format!("/api/sessions/{session}/grants/write_file")).await;
    assert_eq!(withdrawn.status, StatusCode::OK);
    let asks = hub.prompt(&folder, "c").await.lines();
    assert_eq!(asks.last().unwrap()["status"], "waiting_approval", "withdrawn: it asks again");
    assert_eq!(hub.rules(&folder).await["grants"], json!([]));

    let audit = hub.audit(&folder).await;
    let by: Vec<(&str, &str)> =
        audit.iter().map(|r| (r["decision"].as_str().unwrap(), r["decidedBy"].as_str().unwrap())).collect();
    assert_eq!(by, [("approved_session", "user"), ("allowed", "session_grant")]);
}

fn model_args(model: &FakeModel) -> Vec<String> {
    vec!["--model-url".into(), model.base_url.clone(), "--model".into(), "fake-model".into()]
}

fn start(data: &tempfile::TempDir, model: &FakeModel, user_policies: &Path) -> HubProcess {
    let mut args = model_args(model);
    args.extend(["--user-policies".into(), user_policies.display().to_string()]);
    HubProcess::start(data.path(), &args.iter().map(String::as_str).collect::<Vec<_>>())
}

#[tokio::test]
async fn always_in_this_folder_survives_a_restart_is_exported_and_revoked_by_delete() {
    let model = FakeModel::start(vec![
        shell("s1", "echo saved one > one.txt"),
        text(&["Saved."]),
        shell("s2", "echo saved two"),
        text(&["Again."]),
        shell("s3", "echo saved three"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let user = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);

    let hub = start(&data, &model, user.path());
    let first = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "one"}))).await;
    assert_eq!(first.last().unwrap()["status"], "waiting_approval");
    let session = session_of(&first);
    let suggested = hub.get("/api/rules/suggest?command=echo%20saved%20one%20%3E%20one.txt").await;
    assert_eq!(suggested["prefix"], "echo saved", "{suggested}");
    let approved = hub
        .lines(
            "POST",
            &format!("/api/sessions/{session}/approve"),
            Some(json!({"toolId": "s1", "decision": "approve_always", "commandPrefix": "echo saved"})),
        )
        .await;
    assert_eq!(approved.last().unwrap()["status"], "success");
    assert!(folder.join("one.txt").exists());
    hub.kill_9();

    let hub = start(&data, &model, user.path());
    let second = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "two"}))).await;
    assert_eq!(second.last().unwrap()["status"], "success", "the saved rule survived the restart: {second:?}");
    assert_eq!(tool_use(&second)["policy"]["decision"], "allow");
    let rules = hub.get(&format!("/api/rules?folderPath={}", urlencoding(&folder))).await;
    let saved: Vec<&Value> = rules["rules"].as_array().unwrap().iter().filter(|r| r["origin"] == "hub").collect();
    assert_eq!(saved.len(), 1, "{rules}");
    assert_eq!(
        (saved[0]["commandPrefixes"].clone(), saved[0]["decision"].clone()),
        (json!(["echo saved"]), json!("allow"))
    );
    let id = saved[0]["id"].as_str().unwrap().to_string();

    let export = hub.text(&format!("/api/rules/export?folderPath={}", urlencoding(&folder))).await;
    assert!(export.contains("commandPrefix = \"echo saved\"") && export.contains("decision = \"allow\""), "{export}");

    let deleted = hub.request("DELETE", &format!("/api/rules/{id}"), None).await;
    assert_eq!(deleted.0, 200, "{}", deleted.1);
    let third = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "three"}))).await;
    assert_eq!(third.last().unwrap()["status"], "waiting_approval", "deleted: it asks again");

    let csv = hub.text(&format!("/api/audit?folderPath={}&format=csv", urlencoding(&folder))).await;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "id,at,folderPath,sessionId,toolId,toolName,summary,decision,decidedBy,rule,outcome,outcomeAt"
    );
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[1].contains(",s1,run_shell_command,echo saved one > one.txt,approved_always,user,,ran,"), "{csv}");
    assert!(lines[2].contains(",s2,") && lines[2].contains(",allowed,rule,") && lines[2].contains(",ran,"), "{csv}");
}

#[tokio::test]
async fn reading_a_folders_policy_files_leaves_its_yolo_toggle_alone() {
    let model = FakeModel::start(vec![shell("y1", "echo hi")]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(Some(r#"{"security":{}}"#));
    policy(&folder, "a.toml", "[[rule]]\ncommandPrefix = \"ls\"\ndecision = \"allow\"\npriority = 1\n");
    assert_eq!(hub.set_yolo(&folder, true).await.json()["yoloMode"], true);
    for _ in 0..3 {
        hub.rules(&folder).await;
        hub.prompt(&folder, "hi").await;
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    }
    let config = hub.config(&folder).await.json();
    assert_eq!((config["yoloMode"].as_bool(), config["source"].as_str()), (Some(true), Some("user")), "{config}");
}

#[tokio::test]
async fn the_agent_cannot_write_itself_a_rule_even_in_yolo_with_an_allow_for_writes() {
    let allow_all = "[[rule]]\ntoolName = \"*\"\ndecision = \"allow\"\npriority = 999\n";
    let model = FakeModel::start(vec![call(
        "p1",
        "write_file",
        json!({"file_path": ".gemini/policies/mine.toml", "content": allow_all}),
    )])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    policy(&folder, "writes.toml", "[[rule]]\ntoolName = \"write_file\"\ndecision = \"allow\"\npriority = 900\n");
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);
    let events = hub.prompt(&folder, "loosen up").await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval", "{events:?}");
    assert!(tool_use(&events)["policy"]["source"].as_str().unwrap().contains(".gemini settings"));
    assert!(!folder.join(".gemini/policies/mine.toml").exists());
}

#[tokio::test]
async fn stop_on_a_waiting_card_is_in_the_audit_trail() {
    let model = FakeModel::start(vec![shell("x1", "echo never > never.txt")]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let waiting = hub.prompt(&folder, "x").await.lines();
    let session = session_of(&waiting);
    let stopped = hub.post(&format!("/api/sessions/{session}/cancel"), "").await;
    assert_eq!(stopped.status, StatusCode::OK);
    let audit = hub.audit(&folder).await;
    assert_eq!(audit.len(), 1, "{audit:?}");
    let row = &audit[0];
    assert_eq!(
        (row["toolId"].as_str(), row["decision"].as_str(), row["decidedBy"].as_str(), row["outcome"].as_str()),
        (Some("x1"), Some("stopped"), Some("user"), Some("stopped"))
    );
    assert!(!folder.join("never.txt").exists());
}
