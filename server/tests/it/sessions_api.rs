//! A folder's sessions over HTTP: created (`POST /api/sessions`), renamed
//! (`PATCH /api/sessions/{id}`), titled by their first prompt, and deleted
//! (`DELETE /api/sessions/{id}`), idle, waiting on a card, running, and across
//! a restart of the real binary on a real SQLite data dir.

use crate::common;

use std::path::Path;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::fake_model::{call, text, FakeModel};
use common::process::HubProcess;
use common::*;
use serde_json::{json, Value};

impl TestHub {
    async fn create_session(&self, body: Value) -> Reply {
        self.post("/api/sessions", body.to_string()).await
    }

    async fn rename(&self, id: &str, body: Value) -> Reply {
        let request =
            authorized(Request::patch(format!("/api/sessions/{id}"))).header("content-type", "application/json");
        self.send(request.body(Body::from(body.to_string())).unwrap()).await
    }

    async fn delete_session(&self, id: &str, force: bool) -> Reply {
        let path = if force { format!("/api/sessions/{id}?force=true") } else { format!("/api/sessions/{id}") };
        self.send(authorized(Request::delete(path)).body(Body::empty()).unwrap()).await
    }

    /// The sessions `/api/projects` lists for the folder.
    async fn sessions_of(&self, folder: &Path) -> Vec<Value> {
        let projects = self.get("/api/projects").await.json();
        let folder = folder.display().to_string();
        projects["projects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|project| project["folderPath"] == folder.as_str())
            .map(|project| project["sessions"].as_array().unwrap().clone())
            .unwrap_or_default()
    }

    async fn prompt_in(&self, folder: &Path, session: &str, message: &str) -> Reply {
        let body = json!({"folderPath": folder, "sessionId": session, "message": message});
        self.post("/api/chat/prompt", body.to_string()).await
    }
}

fn ids(sessions: &[Value]) -> Vec<&str> {
    sessions.iter().map(|session| session["id"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn a_new_session_gets_a_fresh_id_a_title_and_the_folders_settings() {
    let hub = TestHub::new();
    let (_dir, folder) = project(Some(r#"{"security":{"disableYoloMode":false}}"#));
    hub.trust(&folder).await;
    let mut updates = hub.hub.subscribe();

    let named = hub.create_session(json!({"folderPath": folder, "title": "  Release notes  "})).await;
    assert_eq!(named.status, StatusCode::CREATED, "{:?}", named.body);
    let named = named.json();
    let id = named["id"].as_str().unwrap();
    assert!(id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()), "a random id: {id}");
    assert_eq!(named["title"], "Release notes");
    assert_eq!((named["status"].as_str(), named["pendingCount"].as_u64()), (Some("idle"), Some(0)));
    assert_eq!(named["yoloMode"], true, "the folder's settings file is read for it");
    assert_eq!(updates.try_recv().ok(), Some(protocol::api::HubUpdate::Projects), "open pages hear of it");

    let plain = hub.create_session(json!({"folderPath": folder})).await.json();
    assert_ne!(plain["id"], named["id"]);
    assert_eq!(plain["title"], Value::Null, "untitled until its first prompt");

    let listed = hub.sessions_of(&folder).await;
    assert_eq!(listed.len(), 2);
    assert!(listed.contains(&named) && listed.contains(&plain), "{listed:?}");
    let detail = hub.get(&format!("/api/sessions/{id}")).await.json();
    assert_eq!((detail["title"].as_str(), detail["events"].as_array().map(Vec::len)), (Some("Release notes"), Some(0)));
    let config = hub.get(&format!("{}&sessionId={id}", config_path(&folder))).await.json();
    assert_eq!(config["sessionId"], id, "the folder knows it as its session");
}

#[tokio::test]
async fn creating_with_a_bad_folder_or_title_is_refused_and_creates_nothing() {
    let hub = TestHub::new();
    let (dir, folder) = project(None);
    std::fs::write(folder.join("file.txt"), "x").unwrap();
    let missing = dir.path().join("missing");
    let rows: [(Value, StatusCode, &str); 6] = [
        (json!({"folderPath": missing}), StatusCode::BAD_REQUEST, "folder_not_found"),
        (json!({"folderPath": folder.join("file.txt")}), StatusCode::BAD_REQUEST, "not_a_directory"),
        (json!({"folderPath": folder, "title": " \t "}), StatusCode::BAD_REQUEST, "bad_request"),
        (json!({"folderPath": folder, "title": "t".repeat(201)}), StatusCode::BAD_REQUEST, "bad_request"),
        (json!({"title": "no folder"}), StatusCode::UNPROCESSABLE_ENTITY, "bad_request"),
        (json!({"folderPath": folder, "title": 7}), StatusCode::UNPROCESSABLE_ENTITY, "bad_request"),
    ];
    for (body, status, code) in rows {
        let reply = hub.create_session(body.clone()).await;
        assert_eq!((reply.status, reply.error_code().as_str()), (status, code), "{body}");
    }
    let not_json = hub.post("/api/sessions", "{").await;
    assert_eq!((not_json.status, not_json.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    assert_eq!(hub.get("/api/projects").await.json()["projects"], json!([]), "nothing was created");

    let at_limit = hub.create_session(json!({"folderPath": folder, "title": "ü".repeat(200)})).await;
    assert_eq!(at_limit.status, StatusCode::CREATED, "200 characters (not bytes) are allowed");
}

#[tokio::test]
async fn a_session_is_renamed_and_bad_names_change_nothing() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let id = hub.create_session(json!({"folderPath": folder, "title": "First"})).await.json()["id"]
        .as_str()
        .unwrap()
        .to_string();

    let renamed = hub.rename(&id, json!({"title": " Second\t"})).await;
    assert_eq!(renamed.status, StatusCode::OK, "{:?}", renamed.body);
    assert_eq!((renamed.json()["id"].as_str(), renamed.json()["title"].as_str()), (Some(id.as_str()), Some("Second")));
    assert_eq!(hub.sessions_of(&folder).await[0]["title"], "Second");
    assert_eq!(hub.get(&format!("/api/sessions/{id}")).await.json()["title"], "Second");

    let rows: [(&str, Value, StatusCode, &str); 5] = [
        (&id, json!({"title": "   "}), StatusCode::BAD_REQUEST, "bad_request"),
        (&id, json!({"title": "x".repeat(201)}), StatusCode::BAD_REQUEST, "bad_request"),
        (&id, json!({}), StatusCode::UNPROCESSABLE_ENTITY, "bad_request"),
        ("no-such-session", json!({"title": "x"}), StatusCode::NOT_FOUND, "not_found"),
        ("bad%20id", json!({"title": "x"}), StatusCode::NOT_FOUND, "not_found"),
    ];
    for (session, body, status, code) in rows {
        let reply = hub.rename(session, body.clone()).await;
        assert_eq!((reply.status, reply.error_code().as_str()), (status, code), "{session} {body}");
    }
    assert_eq!(hub.sessions_of(&folder).await[0]["title"], "Second", "refusals changed nothing");
}

#[tokio::test]
async fn the_first_prompt_titles_a_session_and_later_ones_do_not() {
    let model = FakeModel::start(vec![text(&["one"]), text(&["two"]), text(&["three"])]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let config = hub.config(&folder).await.json();
    let default = config["sessionId"].as_str().unwrap();
    assert_eq!(hub.sessions_of(&folder).await[0]["title"], Value::Null);

    let first = hub.prompt(&folder, "\n  Fix the flaky login test  \nIt fails on CI about once a day.").await;
    assert_eq!(first.lines().last().unwrap()["status"], "success");
    assert_eq!(hub.sessions_of(&folder).await[0]["title"], "Fix the flaky login test");
    hub.prompt(&folder, "And the logout test too").await.lines();
    assert_eq!(hub.get(&format!("/api/sessions/{default}")).await.json()["title"], "Fix the flaky login test");

    // A long first line is cut at a character boundary.
    let id = hub.create_session(json!({"folderPath": folder})).await.json()["id"].as_str().unwrap().to_string();
    let long = format!("{}{}", "ä".repeat(79), "ßcdef more words");
    hub.prompt_in(&folder, &id, &long).await.lines();
    let title = hub.get(&format!("/api/sessions/{id}")).await.json()["title"].as_str().unwrap().to_string();
    assert_eq!(title, format!("{}ß…", "ä".repeat(79)));
}

#[tokio::test]
async fn an_idle_session_is_deleted_and_a_default_one_comes_back_empty() {
    let model = FakeModel::start(vec![text(&["hello"])]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let other = hub.create_session(json!({"folderPath": folder, "title": "keep me"})).await.json();
    let answered = hub.prompt(&folder, "hi").await.lines();
    let default = answered[0]["session_id"].as_str().unwrap().to_string();
    assert_eq!(hub.sessions_of(&folder).await.len(), 2);

    // The prompt's own late updates are over before listening.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut updates = hub.hub.subscribe();
    let deleted = hub.delete_session(&default, false).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{:?}", deleted.body);
    assert_eq!(updates.try_recv().ok(), Some(protocol::api::HubUpdate::Projects));
    assert_eq!(ids(&hub.sessions_of(&folder).await), [other["id"].as_str().unwrap()]);
    for reply in [hub.get(&format!("/api/sessions/{default}")).await, hub.delete_session(&default, false).await] {
        assert_eq!((reply.status, reply.error_code().as_str()), (StatusCode::NOT_FOUND, "not_found"));
    }
    let events = hub.get(&format!("/api/sessions/{default}/events")).await;
    assert_eq!(events.status, StatusCode::NOT_FOUND);

    // The folder's default session is created anew, empty, on next use.
    let config = hub.config(&folder).await.json();
    assert_eq!(config["sessionId"], default.as_str());
    let detail = hub.get(&format!("/api/sessions/{default}")).await.json();
    assert_eq!((detail["events"].clone(), detail["title"].clone()), (json!([]), Value::Null));

    // Any other session stays deleted: a page still showing it cannot make it anew.
    let other = other["id"].as_str().unwrap();
    assert_eq!(hub.delete_session(other, false).await.status, StatusCode::NO_CONTENT);
    let prompted = hub.prompt_in(&folder, other, "are you there?").await;
    assert_eq!((prompted.status, prompted.error_code().as_str()), (StatusCode::NOT_FOUND, "not_found"));
    assert!(prompted.json()["message"].as_str().unwrap().contains("was deleted"));
    let opened = hub.get(&format!("{}&sessionId={other}", common::config_path(&folder))).await;
    assert_eq!(opened.status, StatusCode::NOT_FOUND);
    assert_eq!(ids(&hub.sessions_of(&folder).await), [default.as_str()]);
}

#[tokio::test]
async fn a_waiting_card_holds_the_delete_until_forced_and_cannot_be_approved_after() {
    let model = FakeModel::start(vec![call("c1", "run_shell_command", json!({"command": "touch ran.txt"}))]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let id = hub.create_session(json!({"folderPath": folder})).await.json()["id"].as_str().unwrap().to_string();
    let paused = hub.prompt_in(&folder, &id, "make a file").await.lines();
    assert_eq!(paused.last().unwrap()["status"], "waiting_approval");

    let refused = hub.delete_session(&id, false).await;
    assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::CONFLICT, "session_busy"));
    assert!(refused.json()["message"].as_str().unwrap().contains("waiting for your decision"), "says why");
    assert_eq!(hub.sessions_of(&folder).await[0]["status"], "waiting_approval", "a refusal changes nothing");
    assert_eq!(hub.get(&format!("/api/sessions/{id}")).await.json()["pendingApproval"]["toolId"], "c1");

    let forced = hub.delete_session(&id, true).await;
    assert_eq!(forced.status, StatusCode::NO_CONTENT, "{:?}", forced.body);
    assert!(hub.sessions_of(&folder).await.is_empty());
    assert_eq!(hub.get(&format!("/api/sessions/{id}")).await.status, StatusCode::NOT_FOUND);
    let approve = hub.decide(&id, json!({"toolId": "c1", "decision": "approve"})).await;
    assert_eq!(approve.status, StatusCode::NOT_FOUND, "a deleted session has no call to decide");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!folder.join("ran.txt").exists(), "the waiting call never ran");
    assert_eq!(model.requests().len(), 1, "the model was not asked to go on");
}

#[tokio::test]
async fn a_running_turn_is_stopped_by_a_forced_delete_and_its_command_killed() {
    let model = FakeModel::start(vec![
        call("s", "run_shell_command", json!({"command": "echo $$ > pid; exec sleep 30.74"})),
        text(&["never asked"]),
    ])
    .await;
    let hub = std::sync::Arc::new(TestHub::with_model(&model));
    let (_dir, folder) = project(None);
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);
    let id = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();

    let running = tokio::spawn({
        let (hub, folder) = (hub.clone(), folder.clone());
        async move { hub.prompt(&folder, "slow").await.lines() }
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let pid = loop {
        assert!(tokio::time::Instant::now() < deadline, "the command never started");
        if let Some(pid) = folder.join("pid").exists().then(|| common::sleeping("30.74")).flatten() {
            break pid.to_string();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(process_alive(&pid));

    let refused = hub.delete_session(&id, false).await;
    assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::CONFLICT, "session_busy"));
    assert!(refused.json()["message"].as_str().unwrap().contains("running"));
    assert!(process_alive(&pid), "a refused delete stops nothing");

    let forced = hub.delete_session(&id, true).await;
    assert_eq!(forced.status, StatusCode::NO_CONTENT, "{:?}", forced.body);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while process_alive(&pid) {
        assert!(tokio::time::Instant::now() < deadline, "the running command was killed, not left running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let streamed =
        tokio::time::timeout(Duration::from_secs(5), running).await.expect("the prompt stream ended").unwrap();
    assert_eq!(streamed.last().unwrap()["status"], "cancelled");
    assert!(hub.sessions_of(&folder).await.is_empty());
    assert_eq!(hub.get(&format!("/api/sessions/{id}")).await.status, StatusCode::NOT_FOUND);
    assert_eq!(model.requests().len(), 1, "the model was not asked to go on");
}

fn start(data: &tempfile::TempDir, model: &FakeModel) -> HubProcess {
    HubProcess::start(data.path(), &["--model-url", &model.base_url, "--model", "fake-model"])
}

#[tokio::test]
async fn a_deleted_session_stays_deleted_after_a_restart_and_its_audit_rows_stay() {
    let model = FakeModel::start(vec![
        call("w1", "run_shell_command", json!({"command": "touch ran.txt"})),
        text(&["kept answer"]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = start(&data, &model);

    let (status, body) = hub.request("POST", "/api/sessions", Some(json!({"folderPath": folder}))).await;
    assert_eq!(status, 201, "{body}");
    let doomed = serde_json::from_str::<Value>(&body).unwrap()["id"].as_str().unwrap().to_string();
    let paused = hub
        .lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "sessionId": doomed, "message": "go"})))
        .await;
    assert_eq!(paused.last().unwrap()["status"], "waiting_approval");
    let kept =
        hub.lines("POST", "/api/chat/prompt", Some(json!({"folderPath": folder, "message": "Keep this one"}))).await;
    let kept = kept[0]["session_id"].as_str().unwrap().to_string();

    let (status, body) = hub.request("DELETE", &format!("/api/sessions/{doomed}?force=true"), None).await;
    assert_eq!(status, 204, "{body}");
    // Killed at once: what the answer promised must already be on disk.
    hub.kill_9();

    let hub = start(&data, &model);
    let projects = hub.get("/api/projects").await;
    let sessions = projects["projects"][0]["sessions"].as_array().unwrap().clone();
    assert_eq!(ids(&sessions), [kept.as_str()], "only the kept session came back");
    assert_eq!(sessions[0]["title"], "Keep this one", "titles are kept across restarts");
    let (status, _) = hub.request("GET", &format!("/api/sessions/{doomed}"), None).await;
    assert_eq!(status, 404);
    let approve = json!({"toolId": "w1", "decision": "approve"});
    let (status, _) = hub.request("POST", &format!("/api/sessions/{doomed}/approve"), Some(approve)).await;
    assert!(status == 404 || status == 409, "{status}");
    assert!(!folder.join("ran.txt").exists());
    let audit = hub.lines("GET", &format!("/api/audit?sessionId={doomed}"), None).await;
    assert_eq!(audit.len(), 1, "the audit trail keeps the deleted session's decision: {audit:?}");
    assert_eq!((audit[0]["toolId"].as_str(), audit[0]["decision"].as_str()), (Some("w1"), Some("stopped")));
}

const SCRIPTED_ACP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scripted-acp-agent.mjs");

#[tokio::test]
async fn an_acp_sessions_forced_delete_leaves_nothing_in_the_store_but_its_audit_rows() {
    use agent_hub::agents::acp::AcpAgent;
    use agent_hub::store::{AuditFilter, Store};

    let data = tempfile::tempdir().unwrap();
    let store = Store::open(data.path()).unwrap();
    let (_dir, folder) = project(None);
    let command = format!("node '{SCRIPTED_ACP}' reject-stays '{}'", folder.join("received.jsonl").display());
    let hub = TestHub::with_options(agent_hub::hub::HubOptions {
        acp: Some(std::sync::Arc::new(AcpAgent::new(&command).unwrap())),
        store: Some(store.clone()),
        ..agent_hub::hub::HubOptions::default()
    });
    let id = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let paused = hub.prompt(&folder, "say hi").await.lines();
    assert_eq!(paused.last().unwrap()["status"], "waiting_approval", "{paused:?}");

    let refused = hub.delete_session(&id, false).await;
    assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::CONFLICT, "session_busy"));
    let forced = hub.delete_session(&id, true).await;
    assert_eq!(forced.status, StatusCode::NO_CONTENT, "{:?}", forced.body);
    assert_eq!(hub.decide(&id, json!({"toolId": "call-1", "decision": "approve"})).await.status, StatusCode::NOT_FOUND);

    // Whatever the stopped turn still says after the delete stays out of the store.
    tokio::time::sleep(Duration::from_millis(500)).await;
    store.flush().await.unwrap();
    assert!(store.sessions().unwrap().iter().all(|row| row.id != id));
    assert_eq!((store.events(&id).unwrap(), store.agent_state(&id).unwrap()), (vec![], None));
    let audit = store.audit(&AuditFilter { session_id: Some(id.clone()), ..AuditFilter::default() }).unwrap();
    let decisions: Vec<(&str, &str)> = audit.iter().map(|row| (row.tool_id.as_str(), row.decision.as_str())).collect();
    assert_eq!(decisions, [("call-1", "stopped")], "the audit trail keeps what was decided");
}

/// Issue 24, item 7d: `GET /api/sessions/{id}` pages its events
/// (`?after=SEQ&limit=N`, `hasMore`, `nextAfter`); without them a short
/// session's answer is as it was.
#[tokio::test]
async fn a_sessions_events_come_in_pages_that_join_into_the_whole_log() {
    let model = common::fake_model::FakeModel::start(vec![
        common::fake_model::text(&["One."]),
        common::fake_model::text(&["Two."]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let first = hub.prompt(&folder, "one").await.lines();
    let second = hub.prompt(&folder, "two").await.lines();
    let session = first[0]["session_id"].as_str().unwrap().to_string();
    let whole: Vec<serde_json::Value> = first.into_iter().chain(second).collect();

    let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
    assert_eq!(detail["events"].as_array().unwrap(), &whole, "no paging asked: the whole log");
    assert_eq!((detail["hasMore"].as_bool(), detail["nextAfter"].is_null()), (Some(false), true));

    let mut joined = Vec::new();
    let mut after = 0;
    loop {
        let page = hub.get(&format!("/api/sessions/{session}?after={after}&limit=3")).await.json();
        let events = page["events"].as_array().unwrap();
        assert!(events.len() <= 3, "{page}");
        joined.extend(events.iter().cloned());
        if !page["hasMore"].as_bool().unwrap() {
            assert!(page["nextAfter"].is_null());
            break;
        }
        after = page["nextAfter"].as_u64().unwrap();
        assert_eq!(after, events.last().unwrap()["seq"].as_u64().unwrap());
    }
    assert_eq!(joined, whole, "the pages join into the whole log");
    for bad in ["limit=0", "limit=20001", "after=x"] {
        let reply = hub.get(&format!("/api/sessions/{session}?{bad}")).await;
        assert_eq!(reply.status.as_u16(), 400, "{bad}");
    }
}
