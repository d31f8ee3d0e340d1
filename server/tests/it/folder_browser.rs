//! The folder browser's API: `GET /api/fs/dirs` lists only sub-directory names
//! behind the same gates as every route; `GET /api/folders/recent` remembers the
//! folders opened, across restarts; folders on the command line open at start.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use agent_hub::hub::HubOptions;
use agent_hub::store::Store;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::process::HubProcess;
use common::*;
use serde_json::Value;

fn dirs_path(path: &str) -> String {
    format!("/api/fs/dirs?path={}", form_urlencoded::byte_serialize(path.as_bytes()).collect::<String>())
}

async fn list(hub: &TestHub, path: &str) -> Reply {
    hub.get(&dirs_path(path)).await
}

fn names(reply: &Reply) -> Vec<String> {
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    reply.json()["dirs"].as_array().unwrap().iter().map(|name| name.as_str().unwrap().to_string()).collect()
}

fn mkdirs(root: &Path, names: &[&str]) {
    for name in names {
        std::fs::create_dir_all(root.join(name)).unwrap();
    }
}

#[tokio::test]
async fn listing_needs_the_token_and_the_hubs_own_origin() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let path = dirs_path(folder.to_str().unwrap());

    let no_token = hub.send(Request::get(&path).header("host", HOST).body(Body::empty()).unwrap()).await;
    assert_eq!((no_token.status, no_token.error_code().as_str()), (StatusCode::UNAUTHORIZED, "unauthorized"));
    let foreign = hub
        .send(authorized(Request::get(&path)).header("origin", "http://evil.example").body(Body::empty()).unwrap())
        .await;
    assert_eq!((foreign.status, foreign.error_code().as_str()), (StatusCode::FORBIDDEN, "forbidden"));
    let foreign_host = hub
        .send(
            Request::get(&path)
                .header("host", "evil.example:7744")
                .header("authorization", format!("Bearer {TOKEN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(foreign_host.status, StatusCode::FORBIDDEN);
    assert_eq!(hub.get(&path).await.status, StatusCode::OK, "the same request with the token and no Origin");
    let recent = hub.send(Request::get("/api/folders/recent").header("host", HOST).body(Body::empty()).unwrap()).await;
    assert_eq!(recent.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn only_directory_names_are_listed_sorted_with_symlinks_to_directories() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let (_elsewhere, elsewhere) = project(None);
    mkdirs(&folder, &["beta", "alpha/nested", ".hidden", "Zeta"]);
    std::fs::write(folder.join("file.txt"), "not a folder").unwrap();
    std::fs::write(elsewhere.join("target.txt"), "x").unwrap();
    std::os::unix::fs::symlink(&elsewhere, folder.join("link-to-dir")).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("target.txt"), folder.join("link-to-file")).unwrap();
    std::os::unix::fs::symlink(folder.join("nowhere"), folder.join("dangling")).unwrap();

    let reply = list(&hub, folder.to_str().unwrap()).await;
    assert_eq!(names(&reply), [".hidden", "Zeta", "alpha", "beta", "link-to-dir"]);
    let body = reply.json();
    assert_eq!(body["path"], folder.to_str().unwrap());
    assert_eq!(body["truncated"], false);
    let mut keys: Vec<&String> = body.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["dirs", "path", "truncated"], "names only: no metadata of any kind");

    // A trailing slash lists the same folder; a symlinked folder lists its target's.
    assert_eq!(names(&list(&hub, &format!("{}/", folder.display())).await), names(&reply));
    mkdirs(&elsewhere, &["inside"]);
    assert_eq!(names(&list(&hub, folder.join("link-to-dir").to_str().unwrap()).await), ["inside"]);
    assert_eq!(names(&list(&hub, folder.join("alpha").to_str().unwrap()).await), ["nested"]);
}

#[tokio::test]
async fn relative_missing_and_file_paths_get_clear_errors() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("file.txt"), "x").unwrap();
    let cases = [
        ("relative/path", StatusCode::BAD_REQUEST, "bad_request"),
        ("~someone/else", StatusCode::BAD_REQUEST, "bad_request"),
        ("", StatusCode::BAD_REQUEST, "bad_request"),
        (&format!("{}/missing", folder.display()), StatusCode::BAD_REQUEST, "folder_not_found"),
        (&format!("{}/file.txt", folder.display()), StatusCode::BAD_REQUEST, "not_a_directory"),
        (&format!("{}/file.txt/below", folder.display()), StatusCode::BAD_REQUEST, "folder_not_found"),
    ];
    for (path, status, code) in cases {
        let reply = list(&hub, path).await;
        assert_eq!((reply.status, reply.error_code().as_str()), (status, code), "{path:?}");
    }
    let no_parameter = hub.get("/api/fs/dirs").await;
    assert_eq!((no_parameter.status, no_parameter.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    let message = list(&hub, "relative/path").await.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("relative/path") && message.contains("absolute"), "{message}");
}

#[tokio::test]
async fn a_folder_without_read_permission_is_forbidden() {
    // SAFETY: geteuid only reads the process's own id.
    if unsafe { libc::geteuid() } == 0 {
        eprintln!("skipped: running as root, which reads a chmod 000 folder anyway");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    mkdirs(&folder, &["locked/secret"]);
    std::fs::set_permissions(folder.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let locked = list(&hub, folder.join("locked").to_str().unwrap()).await;
    let below = list(&hub, folder.join("locked/secret").to_str().unwrap()).await;
    std::fs::set_permissions(folder.join("locked"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!((locked.status, locked.error_code().as_str()), (StatusCode::FORBIDDEN, "forbidden"));
    assert!(locked.json()["message"].as_str().unwrap().contains("permission denied"));
    assert_eq!((below.status, below.error_code().as_str()), (StatusCode::FORBIDDEN, "forbidden"));
    assert_eq!(names(&list(&hub, folder.to_str().unwrap()).await), ["locked"], "its parent still lists it");
}

#[tokio::test]
async fn tilde_expands_to_the_hub_users_home() {
    let Some(home) = std::env::var_os("HOME").filter(|home| !home.is_empty()) else {
        eprintln!("skipped: HOME is not set");
        return;
    };
    let hub = TestHub::new();
    let home = Path::new(&home);
    let reply = list(&hub, "~").await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.json()["path"], home.to_str().unwrap());

    let inside = tempfile::Builder::new().prefix("agent-hub-test-").tempdir_in(home).unwrap();
    mkdirs(inside.path(), &["one", "two"]);
    let name = inside.path().file_name().unwrap().to_str().unwrap();
    let reply = list(&hub, &format!("~/{name}")).await;
    assert_eq!(names(&reply), ["one", "two"]);
    assert_eq!(reply.json()["path"], home.join(name).to_str().unwrap(), "the answer says the expanded path");
    assert!(names(&list(&hub, "~/").await).contains(&name.to_string()));
}

#[tokio::test]
async fn a_huge_folder_answers_the_first_thousand_names_and_says_it_cut() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    for n in (0..1005).rev() {
        std::fs::create_dir(folder.join(format!("d{n:04}"))).unwrap();
    }
    let reply = list(&hub, folder.to_str().unwrap()).await;
    let dirs = names(&reply);
    assert_eq!((dirs.len(), dirs[0].as_str(), dirs[999].as_str()), (1000, "d0000", "d0999"));
    assert_eq!(reply.json()["truncated"], true);
}

fn recent_paths(body: &Value) -> Vec<String> {
    body["folders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|folder| folder["folderPath"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn opened_folders_come_newest_first_and_gone_ones_are_left_out() {
    let data = tempfile::tempdir().unwrap();
    let store = Store::open(data.path()).unwrap();
    let hub = TestHub::with_options(HubOptions { store: Some(store.clone()), ..HubOptions::default() });
    let (first_dir, first) = project(None);
    let (_second_dir, second) = project(None);
    assert_eq!(hub.config(&first).await.status, StatusCode::OK);
    assert_eq!(hub.config(&second).await.status, StatusCode::OK);
    let missing = first.join("missing");
    assert_eq!(hub.config(&missing).await.status, StatusCode::BAD_REQUEST);
    store.flush().await.unwrap();

    let reply = hub.get("/api/folders/recent").await;
    assert_eq!(reply.status, StatusCode::OK);
    let body = reply.json();
    assert_eq!(recent_paths(&body), [second.display().to_string(), first.display().to_string()]);
    let (newer, older) =
        (body["folders"][0]["openedAt"].as_u64().unwrap(), body["folders"][1]["openedAt"].as_u64().unwrap());
    assert!(newer >= older && older > 0, "{body}");

    // Opened again (a prompt or a page reading its config): first again.
    hub.config(&first).await;
    store.flush().await.unwrap();
    assert_eq!(recent_paths(&hub.get("/api/folders/recent").await.json())[0], first.display().to_string());

    drop(first_dir);
    assert_eq!(recent_paths(&hub.get("/api/folders/recent").await.json()), [second.display().to_string()]);
}

#[tokio::test]
async fn without_a_database_no_folder_is_remembered() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    hub.config(&folder).await;
    assert_eq!(hub.get("/api/folders/recent").await.json(), serde_json::json!({"folders": []}));
}

/// Polls until `check` holds for the hub's recent folders (what the list shows is on disk).
async fn recent_until(hub: &HubProcess, check: impl Fn(&[String]) -> bool) -> Vec<String> {
    for _ in 0..100 {
        let folders = recent_paths(&hub.get("/api/folders/recent").await);
        if check(&folders) {
            return folders;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the recent folders never matched: {:?}", recent_paths(&hub.get("/api/folders/recent").await));
}

#[tokio::test]
async fn recent_folders_survive_a_restart_and_command_line_folders_open_at_start() {
    let data = tempfile::tempdir().unwrap();
    let (_given_dir, given) = project(None);
    let (_opened_dir, opened) = project(None);

    let hub = HubProcess::start(data.path(), &[given.to_str().unwrap()]);
    let projects = hub.get("/api/projects").await;
    assert_eq!(projects["projects"][0]["folderPath"], given.to_str().unwrap(), "open at start: {projects}");
    recent_until(&hub, |folders| folders == [given.display().to_string()]).await;
    // Opened as the page opens a folder (a GET of its config only reads since issue 24).
    let (status, _) = hub.request("POST", "/api/chat/open", Some(serde_json::json!({"folderPath": opened}))).await;
    assert_eq!(status, 200);
    recent_until(&hub, |folders| folders.len() == 2).await;
    hub.kill_9();

    let hub = HubProcess::start(data.path(), &[]);
    let folders = recent_paths(&hub.get("/api/folders/recent").await);
    assert_eq!(folders, [opened.display().to_string(), given.display().to_string()]);
}

#[tokio::test]
async fn a_relative_folder_on_the_command_line_is_the_one_the_hub_started_in() {
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    mkdirs(&folder, &["sub"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
        .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
        .args(["--port", "0", "--token", process::PROCESS_TOKEN, "--data-dir"])
        .arg(data.path())
        .args([".", "sub"])
        .current_dir(&folder)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let started = line.starts_with("Agent Hub listening on ");
    let base =
        line.trim().strip_prefix("Agent Hub listening on ").and_then(|url| url.split("/?").next()).map(str::to_string);
    let projects: Value = match base {
        Some(base) => {
            // The client needs a TLS provider even for plain HTTP (the hub's own reqwest has none built in).
            let _ = rustls::crypto::ring::default_provider().install_default();
            let response = reqwest::Client::new()
                .get(format!("{base}/api/projects"))
                .bearer_auth(process::PROCESS_TOKEN)
                .send()
                .await
                .unwrap();
            serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
        }
        None => Value::Null,
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(started, "the hub did not start with relative folders: {line:?}");
    let mut listed: Vec<&str> = projects["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|project| project["folderPath"].as_str().unwrap())
        .collect();
    listed.sort();
    assert_eq!(listed, [folder.to_str().unwrap(), folder.join("sub").to_str().unwrap()]);
}
