//! Decisions of issue 27 with the built-in agent and a scripted model: a
//! folder's approval timeout (a card or a question left too long is answered
//! "no decision", across a kill -9 too; null waits forever; bad values change
//! nothing; the value and the wait's start survive a restart), and the
//! helpers the other `decisions_*` files share. `POST /api/approvals` is in
//! `decisions_batch.rs`, `approve_turn` in `decisions_turns.rs`, the ACP side
//! in `decisions_acp.rs`.

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::fake_model::{call, calls, text, FakeModel, Reply as ModelReply};
use common::process::HubProcess;
use common::*;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::time::Instant;
use tower::ServiceExt;

/// Long enough for any machine; only a failure waits this long.
const PATIENCE: Duration = Duration::from_secs(20);

impl TestHub {
    pub(crate) async fn set_timeout(&self, folder: &Path, secs: Value) -> Reply {
        self.post("/api/chat/config", json!({"folderPath": folder, "approvalTimeoutSecs": secs}).to_string()).await
    }

    pub(crate) async fn session_detail(&self, session: &str) -> Value {
        let reply = self.get(&format!("/api/sessions/{session}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        reply.json()
    }

    /// Polls the session until its status is `status`.
    pub(crate) async fn wait_status(&self, session: &str, status: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let detail = self.session_detail(session).await;
            if detail["status"] == status {
                return detail;
            }
            assert!(Instant::now() < deadline, "the session never became {status}: {detail}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn audit_of(&self, folder: &Path) -> Vec<Value> {
        let reply = self.get(&format!("/api/audit?folderPath={}", urlencoding(folder))).await;
        assert_eq!(reply.status, StatusCode::OK);
        reply.lines()
    }

    /// Polls the audit until every listed call has an outcome; returns the rows.
    pub(crate) async fn settled_audit(&self, folder: &Path, tool_ids: &[&str]) -> Vec<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let rows = self.audit_of(folder).await;
            let settled = |id: &str| rows.iter().any(|row| row["toolId"] == id && row["outcome"].is_string());
            if tool_ids.iter().all(|id| settled(id)) {
                return rows;
            }
            assert!(Instant::now() < deadline, "no outcome for all of {tool_ids:?}: {rows:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub(crate) async fn batch(&self, decisions: Value) -> Value {
        let reply = self.post("/api/approvals", json!({ "decisions": decisions }).to_string()).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        reply.json()
    }

    /// Collects what `GET /api/updates` pushes from now on.
    pub(crate) async fn updates(&self) -> Arc<Mutex<Vec<Value>>> {
        let request = authorized(Request::get("/api/updates")).body(Body::empty()).unwrap();
        let response = self.router().oneshot(request).await.unwrap();
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (mut body, sink) = (response.into_body(), seen.clone());
        tokio::spawn(async move {
            while let Some(Ok(frame)) = body.frame().await {
                let Some(data) = frame.data_ref() else { continue };
                let text = String::from_utf8_lossy(data).to_string();
                let parsed = text.lines().filter_map(|line| line.strip_prefix("data: "));
                sink.lock().unwrap().extend(parsed.filter_map(|json| serde_json::from_str::<Value>(json).ok()));
            }
        });
        seen
    }
}

pub(crate) fn row<'a>(audit: &'a [Value], tool_id: &str) -> (&'a str, &'a str, Option<&'a str>) {
    let row = audit.iter().find(|row| row["toolId"] == tool_id).unwrap_or_else(|| panic!("no {tool_id}: {audit:?}"));
    (row["decision"].as_str().unwrap(), row["decidedBy"].as_str().unwrap(), row["outcome"].as_str())
}

pub(crate) fn results_of<'a>(events: &'a [Value], tool_id: &str) -> Vec<&'a Value> {
    events.iter().filter(|event| event["type"] == "tool_result" && event["tool_id"] == tool_id).collect()
}

/// The one `tool_result` of `tool_id`: (status, error type, error message).
pub(crate) fn result_of(events: &[Value], tool_id: &str) -> (String, Option<String>, Option<String>) {
    let results = results_of(events, tool_id);
    assert_eq!(results.len(), 1, "one result for {tool_id}: {events:?}");
    let error = &results[0]["error"];
    (
        results[0]["status"].as_str().unwrap().to_string(),
        error["type"].as_str().map(str::to_string),
        error["message"].as_str().map(str::to_string),
    )
}

/// What the model was told as `tool_id`'s result, in its latest request that has it.
fn told(model: &FakeModel, tool_id: &str) -> String {
    let requests = model.requests();
    let message = requests
        .iter()
        .rev()
        .flat_map(|request| request["messages"].as_array().unwrap().iter())
        .find(|message| message["role"] == "tool" && message["tool_call_id"] == tool_id);
    message.unwrap_or_else(|| panic!("the model was never told of {tool_id}"))["content"].as_str().unwrap().into()
}

/// The last message of a model request: who spoke and what.
pub(crate) fn last_message(request: &Value) -> (String, String) {
    let last = request["messages"].as_array().unwrap().last().unwrap();
    (last["role"].as_str().unwrap().into(), last["content"].as_str().unwrap_or_default().into())
}

/// A model for several sessions at once: a user's message `touch X` is
/// answered with one shell call `X` (`echo X >> X.txt`), `touch X Y` with
/// two, and a tool result with text.
pub(crate) async fn touching_model() -> FakeModel {
    FakeModel::with_responder(|request| match last_message(request) {
        (role, content) if role == "user" => {
            let names: Vec<&str> = content.strip_prefix("touch ").unwrap_or("x").split(' ').collect();
            let list: Vec<(String, String, Value)> = names
                .iter()
                .map(|name| {
                    (
                        name.to_string(),
                        "run_shell_command".into(),
                        json!({"command": format!("echo {name} >> {name}.txt")}),
                    )
                })
                .collect();
            ModelReply::Calls(list)
        }
        _ => text(&["Done."]),
    })
    .await
}

#[tokio::test]
async fn cards_left_past_the_folders_timeout_are_answered_no_decision_and_the_turn_goes_on() {
    let model = FakeModel::start(vec![
        calls(&[
            ("t1", "run_shell_command", json!({"command": "touch one.txt"})),
            ("t2", "run_shell_command", json!({"command": "touch two.txt"})),
        ]),
        text(&["Went on without them."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let updates = hub.updates().await;
    // Set through another path to the folder: it is the folder's, whatever the path.
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("link");
    std::os::unix::fs::symlink(&folder, &link).unwrap();
    let set = hub.set_timeout(&link, json!(1)).await;
    assert_eq!((set.status, set.json()["approvalTimeoutSecs"].as_u64()), (StatusCode::OK, Some(1)), "{:?}", set.body);
    assert_eq!(hub.read_config(&folder).await.json()["approvalTimeoutSecs"], 1);

    let paused = hub.prompt(&folder, "touch both").await.lines();
    assert_eq!(paused.last().unwrap()["pending"], json!(["t1", "t2"]));
    let session = session_of(&paused);
    let detail = hub.wait_status(&session, "idle").await;

    let events = detail["events"].as_array().unwrap();
    let said = "No decision within 1 second; the call was not run.";
    for id in ["t1", "t2"] {
        let expected = ("error".to_string(), Some("timed_out".to_string()), Some(said.to_string()));
        assert_eq!(result_of(events, id), expected, "{events:?}");
        assert_eq!(told(&model, id), said, "the model reads why {id} did not run");
    }
    assert_eq!(events.last().unwrap()["status"], "success", "the turn went on: {events:?}");
    assert_eq!(assistant_text(events), "Went on without them.");
    assert_eq!(model.requests().len(), 2);
    assert!(!folder.join("one.txt").exists() && !folder.join("two.txt").exists(), "nothing ran");

    let audit = hub.settled_audit(&folder, &["t1", "t2"]).await;
    assert_eq!(row(&audit, "t1"), ("timed_out", "hub", Some("skipped")));
    assert_eq!(row(&audit, "t2"), ("timed_out", "hub", Some("skipped")));
    let told_pages: Vec<Value> = updates.lock().unwrap().iter().filter(|u| u["type"] == "timed_out").cloned().collect();
    assert_eq!(
        told_pages,
        [json!({"type": "timed_out", "folderPath": folder, "sessionId": session, "summary": "touch one.txt"})]
    );
    let late = hub.decide(&session, json!({"toolId": "t1", "decision": "approve"})).await;
    assert_eq!((late.status, late.error_code().as_str()), (StatusCode::CONFLICT, "not_pending"));
    assert_eq!(hub.get("/api/approvals").await.json(), json!({"waiting": []}));
    let summary = &hub.get("/api/projects").await.json()["projects"][0]["sessions"][0];
    assert!(summary.get("waitingSince").is_none(), "it waits no more: {summary}");
    assert!(!folder.join("one.txt").exists());
}

#[tokio::test]
async fn a_question_left_past_the_timeout_goes_unanswered_and_the_turn_goes_on() {
    let model = FakeModel::start(vec![
        call("q", "ask_user", json!({"prompt": "Which port?", "input_type": "choice", "choices": ["8080", "9090"]})),
        text(&["Picked 8080 myself."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let updates = hub.updates().await;
    let asked = hub.prompt(&folder, "serve").await.lines();
    assert_eq!(types(&asked), ["init", "message", "input_request", "result"]);
    let session = session_of(&asked);
    // Listed in the inbox as a question; no deadline while the folder has no timeout.
    let waiting = hub.get("/api/approvals").await.json()["waiting"].clone();
    assert_eq!(
        waiting,
        json!([{"folderPath": folder, "sessionId": session, "sessionTitle": "serve", "toolId": "q",
                "toolName": "ask_user", "summary": "Which port?", "question": true, "batchable": false,
                "fingerprint": ""}])
    );
    assert!(hub.session_detail(&session).await["pendingInput"].get("deadlineAt").is_none());

    // A timeout set while it waits applies to it too.
    assert_eq!(hub.set_timeout(&folder, json!(1)).await.status, StatusCode::OK);
    let detail = hub.wait_status(&session, "idle").await;
    assert!(detail["pendingInput"].is_null(), "{detail}");
    let events = detail["events"].as_array().unwrap();
    let said = "No answer within 1 second; the question went unanswered. Go on without it.";
    let expected = ("error".to_string(), Some("timed_out".to_string()), Some(said.to_string()));
    assert_eq!(result_of(events, "q"), expected, "{events:?}");
    assert_eq!(told(&model, "q"), said);
    assert_eq!(assistant_text(events), "Picked 8080 myself.");
    assert_eq!(events.last().unwrap()["status"], "success");
    let answer = json!({"requestId": "q", "response": {"index": 1, "value": "9090"}});
    let late = hub.post(&format!("/api/sessions/{session}/input"), answer.to_string()).await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{:?}", late.body);
    let told_pages: Vec<Value> = updates.lock().unwrap().iter().filter(|u| u["type"] == "timed_out").cloned().collect();
    assert_eq!(told_pages.len(), 1, "{told_pages:?}");
    assert_eq!(told_pages[0]["sessionId"], session.as_str());
}

#[tokio::test]
async fn a_timeout_set_back_to_null_never_fires_while_another_folders_does() {
    let model = touching_model().await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_a_dir, a) = project(None);
    let (_b_dir, b) = project(None);
    assert_eq!(hub.set_timeout(&a, json!(1)).await.status, StatusCode::OK);
    let cleared = hub.set_timeout(&a, Value::Null).await;
    assert_eq!((cleared.status, cleared.json()["approvalTimeoutSecs"].clone()), (StatusCode::OK, Value::Null));
    assert_eq!(hub.set_timeout(&b, json!(1)).await.status, StatusCode::OK);

    // A's card waits from before B's: a sweep that finds B due would find A due too.
    let a_session = session_of(&hub.prompt(&a, "touch a").await.lines());
    let b_session = session_of(&hub.prompt(&b, "touch b").await.lines());
    let since = |projects: &Value, session: &str| {
        let sessions = projects["projects"].as_array().unwrap().iter().flat_map(|p| p["sessions"].as_array().unwrap());
        sessions.clone().find(|s| s["id"] == session).unwrap()["waitingSince"].as_u64().unwrap()
    };
    let projects = hub.get("/api/projects").await.json();
    assert!(since(&projects, &a_session) <= since(&projects, &b_session), "{projects}");
    hub.wait_status(&b_session, "idle").await;
    // Two more sweeps, for one that found both and timed B out first.
    tokio::time::sleep(Duration::from_millis(1200)).await;

    let detail = hub.session_detail(&a_session).await;
    assert_eq!(detail["status"], "waiting_approval", "{detail}");
    assert_eq!(detail["pendingApproval"]["toolId"], "a");
    assert!(detail["pendingApproval"].get("deadlineAt").is_none(), "no deadline without a timeout: {detail}");
    assert_eq!(hub.read_config(&a).await.json()["approvalTimeoutSecs"], Value::Null);
    assert!(hub.audit_of(&a).await.is_empty(), "nothing was decided in A");
    let waiting = hub.get("/api/approvals").await.json()["waiting"].clone();
    assert_eq!(
        waiting,
        json!([{"folderPath": a, "sessionId": a_session, "sessionTitle": "touch a", "toolId": "a",
                "toolName": "run_shell_command", "summary": "echo a >> a.txt", "question": false,
                "batchable": true, "fingerprint": waiting[0]["fingerprint"]}])
    );
}

#[tokio::test]
async fn a_bad_timeout_is_refused_and_the_stored_value_is_unchanged() {
    let model = FakeModel::start(vec![]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    assert_eq!(hub.set_timeout(&folder, json!(90)).await.json()["approvalTimeoutSecs"], 90);
    let stored = || -> Option<i64> {
        rusqlite::Connection::open(data.path().join("agent-hub.db"))
            .unwrap()
            .query_row("SELECT approval_timeout_secs FROM folder_settings WHERE folder = ?1", [folder.to_str()], |r| {
                r.get(0)
            })
            .unwrap()
    };
    assert_eq!(stored(), Some(90));
    let path = folder.display().to_string();
    // Out of range: 400; not a whole number of seconds at all: 422, as any
    // field of the wrong JSON type is (docs/API.md). Both are `bad_request`.
    let (range, shape) = (StatusCode::BAD_REQUEST, StatusCode::UNPROCESSABLE_ENTITY);
    for (body, status, why) in [
        (json!({"folderPath": path, "approvalTimeoutSecs": 0}), range, "zero"),
        (json!({"folderPath": path, "approvalTimeoutSecs": 86401}), range, "over a day"),
        (json!({"folderPath": path, "approvalTimeoutSecs": "90"}), shape, "a string"),
        (json!({"folderPath": path, "approvalTimeoutSecs": -1}), shape, "negative"),
        (json!({"folderPath": path, "approvalTimeoutSecs": 1.5}), shape, "a fraction"),
        (json!({"folderPath": path}), shape, "neither yoloMode nor approvalTimeoutSecs"),
        (json!({"folderPath": path, "yoloMode": true, "approvalTimeoutSecs": 0}), range, "with a good yoloMode"),
    ] {
        let reply = hub.post("/api/chat/config", body.to_string()).await;
        assert_eq!((reply.status, reply.error_code().as_str()), (status, "bad_request"), "{why}: {:?}", reply.body);
        let config = hub.read_config(&folder).await.json();
        assert_eq!(
            (config["approvalTimeoutSecs"].as_u64(), config["yoloMode"].as_bool()),
            (Some(90), Some(false)),
            "{why}"
        );
        assert_eq!(stored(), Some(90), "{why}");
    }
    // A YOLO switch the folder locks is refused with the timeout beside it: neither changes.
    let (_locked_dir, locked) = project(Some(r#"{"security":{"disableYoloMode":true}}"#));
    assert_eq!(hub.set_timeout(&locked, json!(90)).await.status, StatusCode::OK);
    let both = json!({"folderPath": locked, "yoloMode": true, "approvalTimeoutSecs": 5});
    let refused = hub.post("/api/chat/config", both.to_string()).await;
    assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::FORBIDDEN, "yolo_locked"));
    let config = hub.read_config(&locked).await.json();
    assert_eq!((config["approvalTimeoutSecs"].as_u64(), config["yoloMode"].as_bool()), (Some(90), Some(false)));

    for (secs, expected) in [(json!(1), json!(1)), (json!(86400), json!(86400)), (Value::Null, Value::Null)] {
        let reply = hub.set_timeout(&folder, secs.clone()).await;
        assert_eq!((reply.status, reply.json()["approvalTimeoutSecs"].clone()), (StatusCode::OK, expected.clone()));
        assert_eq!(hub.read_config(&folder).await.json()["approvalTimeoutSecs"], expected, "{secs}");
    }
    assert_eq!(stored(), None);
}

fn model_args(model: &FakeModel) -> Vec<String> {
    vec!["--model-url".into(), model.base_url.clone(), "--model".into(), "fake-model".into()]
}

pub(crate) fn start_binary(data: &tempfile::TempDir, model: &FakeModel) -> HubProcess {
    let args = model_args(model);
    HubProcess::start(data.path(), &args.iter().map(String::as_str).collect::<Vec<_>>())
}

async fn set_timeout_of(hub: &HubProcess, folder: &Path, secs: Value) -> Value {
    let body = json!({"folderPath": folder, "approvalTimeoutSecs": secs});
    let (status, text) = hub.request("POST", "/api/chat/config", Some(body)).await;
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// The session's status and `waitingSince` as the database has them.
fn saved_wait(data: &tempfile::TempDir, session: &str) -> (String, Option<u64>) {
    let db = rusqlite::Connection::open(data.path().join("agent-hub.db")).unwrap();
    let status: String = db.query_row("SELECT status FROM sessions WHERE id = ?1", [session], |r| r.get(0)).unwrap();
    let state: String =
        db.query_row("SELECT state FROM agent_state WHERE session_id = ?1", [session], |r| r.get(0)).unwrap();
    let state: Value = serde_json::from_str(&state).unwrap();
    (status, state["waitingSince"].as_u64())
}

#[tokio::test]
async fn a_card_whose_deadline_passes_while_the_hub_is_down_is_timed_out_after_the_restart_and_never_runs() {
    let model = FakeModel::start(vec![
        call("k1", "run_shell_command", json!({"command": "touch ran.txt"})),
        text(&["Went on after the restart."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = start_binary(&data, &model);
    assert_eq!(set_timeout_of(&hub, &folder, json!(4)).await["approvalTimeoutSecs"], 4);
    let first = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "touch"}))).await;
    assert_eq!(first.last().unwrap()["status"], "waiting_approval");
    let session = first[0]["session_id"].as_str().unwrap().to_string();
    hub.kill_9();

    // Killed before the deadline: on disk it still waits, since a time kept there.
    let (status, since) = saved_wait(&data, &session);
    assert_eq!(status, "waiting_approval", "the hub timed the card out before it was killed");
    let since = since.expect("the wait's start is saved");
    while agent_hub::clock::now_ms() < since + 4_000 + 500 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let hub = start_binary(&data, &model);
    let deadline = Instant::now() + PATIENCE;
    let detail = loop {
        let detail = hub.get(&format!("/api/sessions/{session}")).await;
        if detail["status"] == "idle" {
            break detail;
        }
        assert!(Instant::now() < deadline, "never timed out after the restart: {detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let events = detail["events"].as_array().unwrap();
    let said = "No decision within 4 seconds; the call was not run.";
    let expected = ("error".to_string(), Some("timed_out".to_string()), Some(said.to_string()));
    assert_eq!(result_of(events, "k1"), expected, "{events:?}");
    assert_eq!(told(&model, "k1"), said);
    assert_eq!(model.requests().len(), 2, "the turn went on once");
    assert_eq!(assistant_text(events), "Went on after the restart.");
    assert_eq!(events.last().unwrap()["status"], "success");
    assert!(!folder.join("ran.txt").exists(), "the call never ran");
    let audit = hub.lines("GET", &format!("/api/audit?folderPath={}", urlencoding(&folder)), None).await;
    assert_eq!(row(&audit, "k1"), ("timed_out", "hub", Some("skipped")));
}

/// The session's wait as the pages see it: (waitingSince, the card's
/// deadlineAt, the inbox's deadlineAt, the folder's approvalTimeoutSecs).
async fn seen(hub: &HubProcess, session: &str, folder: &Path) -> (Option<u64>, Option<u64>, Option<u64>, Option<u64>) {
    let since = hub.get("/api/projects").await["projects"][0]["sessions"][0]["waitingSince"].as_u64();
    let deadline = hub.get(&format!("/api/sessions/{session}")).await["pendingApproval"]["deadlineAt"].as_u64();
    let listed = hub.get("/api/approvals").await["waiting"][0]["deadlineAt"].as_u64();
    let secs = hub.get(&config_path(folder)).await["approvalTimeoutSecs"].as_u64();
    (since, deadline, listed, secs)
}

#[tokio::test]
async fn the_timeout_and_the_waits_start_survive_a_restart() {
    let model = FakeModel::start(vec![call("w1", "run_shell_command", json!({"command": "touch w.txt"}))]).await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = start_binary(&data, &model);
    set_timeout_of(&hub, &folder, json!(3600)).await;
    let first = hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "w"}))).await;
    let session = first[0]["session_id"].as_str().unwrap().to_string();
    let before = seen(&hub, &session, &folder).await;
    let since = before.0.expect("waitingSince while it waits");
    assert_eq!(before, (Some(since), Some(since + 3_600_000), Some(since + 3_600_000), Some(3600)));
    hub.kill_9();

    let hub = start_binary(&data, &model);
    assert_eq!(seen(&hub, &session, &folder).await, before, "the wait goes on from where it began");
    set_timeout_of(&hub, &folder, Value::Null).await;
    hub.stop();
    let hub = start_binary(&data, &model);
    assert_eq!(seen(&hub, &session, &folder).await, (Some(since), None, None, None), "waits forever, as set");
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await["status"], "waiting_approval");
}
