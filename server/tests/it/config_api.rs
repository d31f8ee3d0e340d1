//! `/api/chat/config`, `/api/projects`, `/api/sessions/{id}` over HTTP.

use crate::common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use serde_json::json;
use tower::ServiceExt;

const LOCKED: &str = r#"{"security":{"disableYoloMode":true}}"#;
const YOLO_ON: &str = r#"{"security":{"disableYoloMode":false}}"#;

#[tokio::test]
async fn config_follows_the_settings_file_at_creation() {
    let hub = TestHub::new();
    for (settings, yolo, locked, source) in [
        (None, false, false, "default"),
        (Some(LOCKED), false, true, "settings"),
        (Some(YOLO_ON), true, false, "settings"),
        (Some("{broken"), false, false, "default"),
        (Some(r#"{"security":{"disableYoloMode":"false"}}"#), false, false, "default"),
    ] {
        let (_dir, folder) = project(settings);
        // Trusted: the folder's own settings may turn YOLO on (trust.rs tests the untrusted side).
        hub.trust(&folder).await;
        let reply = hub.config(&folder).await;
        assert_eq!(reply.status, StatusCode::OK, "{settings:?}");
        let body = reply.json();
        assert_eq!((body["yoloMode"].as_bool(), body["yoloLocked"].as_bool()), (Some(yolo), Some(locked)));
        assert_eq!(body["source"], source, "{settings:?}");
        assert_eq!(body["folderPath"], folder.to_str().unwrap());
    }
}

#[tokio::test]
async fn toggle_is_runtime_only_and_listed_in_projects() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let on = hub.set_yolo(&folder, true).await;
    assert_eq!(on.status, StatusCode::OK);
    assert_eq!((on.json()["yoloMode"].as_bool(), on.json()["source"].as_str()), (Some(true), Some("user")));
    assert_eq!(hub.config(&folder).await.json()["yoloMode"], true);
    assert!(!folder.join(".gemini").exists(), "the toggle is never written to disk");

    let projects = hub.get("/api/projects").await.json();
    let project = &projects["projects"][0];
    assert_eq!(project["folderPath"], folder.to_str().unwrap());
    let session = &project["sessions"][0];
    assert_eq!((session["status"].as_str(), session["yoloMode"].as_bool()), (Some("idle"), Some(true)));
    assert_eq!(session["pendingCount"], 0);
    assert!(session["updatedAt"].as_u64().unwrap() > 0);

    let id = session["id"].as_str().unwrap();
    let detail = hub.get(&format!("/api/sessions/{id}")).await.json();
    assert_eq!(detail["folderPath"], folder.to_str().unwrap());
    assert_eq!((detail["pendingApproval"].is_null(), detail["events"].as_array().map(Vec::len)), (true, Some(0)));
}

#[tokio::test]
async fn locked_folder_refuses_yolo_and_changes_nothing() {
    let hub = TestHub::new();
    let (_dir, folder) = project(Some(LOCKED));
    let refused = hub.set_yolo(&folder, true).await;
    assert_eq!((refused.status, refused.error_code().as_str()), (StatusCode::FORBIDDEN, "yolo_locked"));
    let after = hub.config(&folder).await.json();
    assert_eq!((after["yoloMode"].as_bool(), after["source"].as_str()), (Some(false), Some("settings")));
    // Turning it off (already off) is allowed.
    assert_eq!(hub.set_yolo(&folder, false).await.status, StatusCode::OK);
}

#[tokio::test]
async fn path_forms_of_one_folder_share_one_session() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    std::fs::create_dir(folder.join("sub")).unwrap();
    std::os::unix::fs::symlink(&folder, folder.join("sub/link")).unwrap();
    hub.set_yolo(&folder, true).await;
    for alias in [folder.join("sub/.."), folder.join("sub/link"), folder.join("./sub/../")] {
        let body = hub.config(&alias).await.json();
        assert_eq!((body["yoloMode"].as_bool(), body["folderPath"].as_str()), (Some(true), folder.to_str()));
    }
    assert_eq!(hub.get("/api/projects").await.json()["projects"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn named_sessions_are_independent() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let body = json!({"folderPath": folder, "sessionId": "feature-x", "yoloMode": true}).to_string();
    assert_eq!(hub.post("/api/chat/config", body).await.json()["sessionId"], "feature-x");
    assert_eq!(hub.config(&folder).await.json()["yoloMode"], false, "the default session is untouched");
    let (_other, other) = project(None);
    let clash = hub.get(&format!("{}&sessionId=feature-x", config_path(&other))).await;
    assert_eq!((clash.status, clash.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    let bad_id = hub.get(&format!("{}&sessionId=..%2Fx", config_path(&folder))).await;
    assert_eq!(bad_id.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("file.txt"), "x").unwrap();
    let cases = [
        (hub.get("/api/chat/config?folderPath=relative/path").await, StatusCode::BAD_REQUEST, "bad_request"),
        (hub.get("/api/chat/config?folderPath=").await, StatusCode::BAD_REQUEST, "bad_request"),
        (hub.get("/api/chat/config").await, StatusCode::BAD_REQUEST, "bad_request"),
        (hub.config(&folder.join("missing")).await, StatusCode::BAD_REQUEST, "folder_not_found"),
        (hub.config(&folder.join("file.txt")).await, StatusCode::BAD_REQUEST, "not_a_directory"),
        (hub.post("/api/chat/config", "{not json").await, StatusCode::BAD_REQUEST, "bad_request"),
        // Neither yoloMode nor approvalTimeoutSecs: the contract's 422, as before issue 27.
        (
            hub.post("/api/chat/config", json!({"folderPath": folder}).to_string()).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_request",
        ),
        (
            hub.post("/api/chat/config", json!({"folderPath": folder, "yoloMode": "yes"}).to_string()).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "bad_request",
        ),
        (hub.get("/api/sessions/nope").await, StatusCode::NOT_FOUND, "not_found"),
        (hub.get("/api/no-such-endpoint").await, StatusCode::NOT_FOUND, "not_found"),
        (hub.post("/api/projects", "{}").await, StatusCode::METHOD_NOT_ALLOWED, "bad_request"),
    ];
    for (index, (reply, status, code)) in cases.iter().enumerate() {
        assert_eq!((reply.status, reply.error_code().as_str()), (*status, *code), "case {index}");
    }
    let unsupported = hub
        .send(
            authorized(Request::post("/api/chat/config"))
                .header("content-type", "text/plain")
                .body(Body::from("{}"))
                .unwrap(),
        )
        .await;
    assert_eq!(
        (unsupported.status, unsupported.error_code().as_str()),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "bad_request")
    );
    let huge = format!(r#"{{"folderPath":"{}","yoloMode":true,"pad":"{}"}}"#, folder.display(), "x".repeat(5 << 20));
    let too_large = hub.post("/api/chat/config", huge).await;
    assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(hub.get("/api/projects").await.json()["projects"], json!([]), "nothing was created");
}

#[tokio::test]
async fn settings_change_on_disk_is_pushed_to_open_pages() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    hub.trust(&folder).await;
    assert_eq!(hub.config(&folder).await.json()["yoloMode"], false);
    let response =
        hub.router().oneshot(authorized(Request::get("/api/updates")).body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();

    write_settings(&folder, YOLO_ON);
    let update = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let frame = body.frame().await.expect("stream ended").expect("stream error");
            if let Some(data) = frame.data_ref() {
                let text = String::from_utf8_lossy(data);
                if let Some(json) = text.lines().find_map(|line| line.strip_prefix("data: ")) {
                    return serde_json::from_str::<serde_json::Value>(json).unwrap();
                }
            }
        }
    })
    .await
    .expect("no update pushed within 5 s");
    assert_eq!(update["type"], "config");
    assert_eq!((update["yoloMode"].as_bool(), update["source"].as_str()), (Some(true), Some("settings")));
    assert_eq!(hub.config(&folder).await.json()["yoloMode"], true);
}

#[tokio::test]
async fn settings_dir_created_later_is_watched_too() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    hub.trust(&folder).await;
    let mut updates = hub.hub.subscribe();
    hub.config(&folder).await;
    let _ = updates.recv().await; // the new session's `projects` update
    write_settings(&folder, LOCKED);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let update = tokio::time::timeout_at(deadline, updates.recv()).await.expect("no update").unwrap();
        if let protocol::api::HubUpdate::Config(config) = update {
            if config.yolo_locked {
                break;
            }
        }
    }
    std::fs::remove_dir_all(folder.join(".gemini")).unwrap();
    write_settings(&folder, YOLO_ON);
    loop {
        let update =
            tokio::time::timeout_at(deadline, updates.recv()).await.expect("no update after re-creation").unwrap();
        if let protocol::api::HubUpdate::Config(config) = update {
            if config.yolo_mode {
                break;
            }
        }
    }
}

/// Issue 24, item 14: `GET /api/chat/config` had a side effect (it made the
/// session). It reads only now; `POST /api/chat/open` makes the session.
#[tokio::test]
async fn a_config_get_makes_no_session_and_answers_what_opening_will() {
    let hub = TestHub::new();
    let (_dir, folder) = project(Some(YOLO_ON));
    hub.trust(&folder).await;
    let before = hub.get("/api/projects").await.json();
    let read = hub.read_config(&folder).await;
    assert_eq!(read.status, StatusCode::OK);
    let named = hub.get(&format!("{}&sessionId=feature-x", config_path(&folder))).await;
    assert_eq!((named.status, named.json()["sessionId"].as_str()), (StatusCode::OK, Some("feature-x")));
    assert_eq!(hub.get("/api/projects").await.json(), before, "a GET makes no session");
    let read = read.json();
    assert_eq!((read["yoloMode"].as_bool(), read["source"].as_str()), (Some(true), Some("settings")));
    let session = read["sessionId"].as_str().unwrap();
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await.status, StatusCode::NOT_FOUND);

    let opened = hub.config(&folder).await;
    assert_eq!(opened.status, StatusCode::OK);
    assert_eq!(opened.json(), read, "opening gives what the GET said it would");
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await.status, StatusCode::OK);
    assert_eq!(hub.read_config(&folder).await.json(), read, "and the GET now reads that session");
}
