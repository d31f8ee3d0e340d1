//! Isolated sessions over HTTP on real git repositories (issue 29): a session
//! made with `isolated: true` gets a worktree under the data dir on a branch
//! of its own; the built-in agent's shell and file tools and an ACP agent
//! work there; the folder's rules apply; Apply brings the work into the
//! folder (409 with the files on a conflict, the folder untouched); Commit,
//! Discard; deleting removes the worktree and its branch unless it has
//! commits; a restart finds the worktrees again, one deleted by hand is said.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use agent_hub::hub::HubOptions;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::fake_model::{call, text, FakeModel};
use common::*;
use serde_json::{json, Value};

/// A hub with the scripted model, its database, checkpoints and worktrees in `data`.
fn hub(model: &FakeModel, data: &tempfile::TempDir) -> TestHub {
    TestHub::with_options(HubOptions {
        store: Some(agent_hub::store::Store::open(data.path()).unwrap()),
        checkpoints: Some(data.path().join("checkpoints")),
        worktrees: Some(data.path().join("worktrees")),
        ..model_options(model)
    })
}

/// The user's git, as the user runs it.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "User")
        .env("GIT_AUTHOR_EMAIL", "user@example.com")
        .env("GIT_COMMITTER_NAME", "User")
        .env("GIT_COMMITTER_EMAIL", "user@example.com")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A project folder that is a git repository with one commit.
fn repository() -> (tempfile::TempDir, PathBuf) {
    let (dir, folder) = project(None);
    git(&folder, &["init", "-q", "-b", "main"]);
    std::fs::write(folder.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    git(&folder, &["add", "-A"]);
    git(&folder, &["commit", "-q", "-m", "first"]);
    (dir, folder)
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

async fn create(hub: &TestHub, body: Value) -> Reply {
    hub.post("/api/sessions", body.to_string()).await
}

async fn isolated(hub: &TestHub, folder: &Path, title: &str) -> Value {
    let made = create(hub, json!({"folderPath": folder, "isolated": true, "title": title})).await;
    assert_eq!(made.status, StatusCode::CREATED, "{:?}", made.body);
    made.json()
}

async fn prompt_in(hub: &TestHub, folder: &Path, session: &str, message: &str) -> Vec<Value> {
    let body = json!({"folderPath": folder, "sessionId": session, "message": message});
    hub.post("/api/chat/prompt", body.to_string()).await.lines()
}

/// YOLO on for one session (the folder's default session is another).
async fn yolo(hub: &TestHub, folder: &Path, session: &str) {
    let body = json!({"folderPath": folder, "sessionId": session, "yoloMode": true});
    let reply = hub.post("/api/chat/config", body.to_string()).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
}

async fn delete(hub: &TestHub, id: &str) -> Reply {
    hub.send(authorized(Request::delete(format!("/api/sessions/{id}"))).body(Body::empty()).unwrap()).await
}

async fn worktree_post(hub: &TestHub, id: &str, what: &str, body: Value) -> Reply {
    hub.post(&format!("/api/sessions/{id}/worktree/{what}"), body.to_string()).await
}

/// Everything the user's repository keeps besides the files: HEAD, the index.
fn repo_state(folder: &Path) -> (String, Vec<u8>) {
    (git(folder, &["rev-parse", "HEAD"]), std::fs::read(folder.join(".git/index")).unwrap())
}

#[tokio::test]
async fn an_isolated_session_works_in_its_worktree_and_apply_brings_the_work_into_the_folder() {
    let model = FakeModel::start(vec![
        shell("c1", "sed -i 's/two/TWO/' notes.txt && echo new > added.txt && pwd > where.txt"),
        call("c2", "write_file", json!({"file_path": "tool.txt", "content": "by the file tool\n"})),
        text(&["Done."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = repository();
    let head = git(&folder, &["rev-parse", "HEAD"]);
    let before = repo_state(&folder);

    let made = isolated(&hub, &folder, "Tidy notes").await;
    let id = made["id"].as_str().unwrap().to_string();
    let worktree = &made["worktree"];
    let path = PathBuf::from(worktree["path"].as_str().unwrap());
    assert!(path.starts_with(data.path().join("worktrees")), "{path:?}");
    assert_eq!(worktree["base"], head.as_str());
    let branch = worktree["branch"].as_str().unwrap().to_string();
    assert_eq!(branch, format!("agent-hub/tidy-notes-{}", &id[..8]));
    assert_eq!(git(&folder, &["rev-parse", &branch]), head, "the branch is in the folder's repository");
    // The project list shows the session's branch.
    let projects = hub.get("/api/projects").await.json();
    let listed = &projects["projects"][0]["sessions"][0];
    assert_eq!(listed["branch"], branch.as_str());

    yolo(&hub, &folder, &id).await;
    let events = prompt_in(&hub, &folder, &id, "tidy").await;
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    assert_eq!(read(&path, "where.txt").trim(), path.display().to_string(), "the shell's cwd");
    assert_eq!(read(&path, "tool.txt"), "by the file tool\n", "the file tools' root");
    assert_eq!(read(&folder, "notes.txt"), "one\ntwo\nthree\n", "the folder is untouched");
    assert!(!folder.join("added.txt").exists() && !folder.join("tool.txt").exists());

    // The Changes view: the session's work against its base.
    let status = hub.get(&format!("/api/sessions/{id}/worktree")).await;
    assert_eq!(status.status, StatusCode::OK, "{:?}", status.body);
    let mut files: Vec<(String, String)> = status.json()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| (file["path"].as_str().unwrap().into(), file["status"].as_str().unwrap().into()))
        .collect();
    files.sort();
    let expected = [("added.txt", "added"), ("notes.txt", "modified"), ("tool.txt", "added"), ("where.txt", "added")];
    assert_eq!(files, expected.map(|(p, s)| (p.to_string(), s.to_string())));
    let changes = hub.get(&format!("/api/sessions/{id}/changes")).await.json();
    assert_eq!(changes["files"][0]["path"], "tool.txt", "{changes}");
    // The checkpoints recorded the worktree, not the folder.
    let checkpoints = hub.get(&format!("/api/sessions/{id}/checkpoints")).await.json();
    let recorded = checkpoints["checkpoints"][0]["files"].as_array().unwrap().len();
    assert_eq!(recorded, 4, "{checkpoints}");

    let applied = worktree_post(&hub, &id, "apply", json!({})).await;
    assert_eq!(applied.status, StatusCode::OK, "{:?}", applied.body);
    assert_eq!(applied.json()["applied"].as_array().unwrap().len(), 4);
    assert_eq!(read(&folder, "notes.txt"), "one\nTWO\nthree\n");
    assert_eq!(read(&folder, "tool.txt"), "by the file tool\n");
    assert_eq!(repo_state(&folder), before, "HEAD and the index are the user's");

    let deleted = delete(&hub, &id).await;
    assert_eq!(deleted.status, StatusCode::OK, "{:?}", deleted.body);
    assert_eq!(deleted.json(), json!({"worktreeRemoved": true}));
    assert!(!path.exists(), "the worktree is gone");
    assert_eq!(git(&folder, &["branch", "--list", &branch]), "", "its branch without commits is gone");
    assert_eq!(read(&folder, "notes.txt"), "one\nTWO\nthree\n", "what was applied stays");
}

#[tokio::test]
async fn two_isolated_sessions_change_one_file_the_second_apply_is_a_conflict_and_changes_nothing() {
    let model = FakeModel::start(vec![
        shell("a1", "sed -i 's/two/FIRST/' notes.txt"),
        text(&["first done"]),
        shell("b1", "sed -i 's/two/SECOND/' notes.txt && echo b > only-b.txt"),
        text(&["second done"]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = repository();
    let first = isolated(&hub, &folder, "first").await["id"].as_str().unwrap().to_string();
    let second = isolated(&hub, &folder, "second").await["id"].as_str().unwrap().to_string();
    yolo(&hub, &folder, &first).await;
    yolo(&hub, &folder, &second).await;
    assert_eq!(prompt_in(&hub, &folder, &first, "a").await.last().unwrap()["status"], "success");
    assert_eq!(prompt_in(&hub, &folder, &second, "b").await.last().unwrap()["status"], "success");

    assert_eq!(worktree_post(&hub, &first, "apply", json!({})).await.status, StatusCode::OK);
    let refused = worktree_post(&hub, &second, "apply", json!({})).await;
    assert_eq!(refused.status, StatusCode::CONFLICT, "{:?}", refused.body);
    assert_eq!(refused.error_code(), "worktree_conflict");
    assert_eq!(refused.json()["conflicts"], json!(["notes.txt"]));
    assert_eq!(read(&folder, "notes.txt"), "one\nFIRST\nthree\n");
    assert!(!folder.join("only-b.txt").exists(), "all or nothing");

    // Both Applies are in the audit trail, decided by the user: one ran, one was refused.
    let store = hub.hub.store().unwrap().clone();
    store.flush().await.unwrap();
    let audit = store.audit(&agent_hub::store::AuditFilter::default()).unwrap();
    let applies: Vec<_> = audit.iter().filter(|entry| entry.tool_name == "worktree_apply").collect();
    let outcomes: Vec<_> = applies.iter().map(|entry| (entry.session_id.clone(), entry.outcome.clone())).collect();
    use protocol::audit::Outcome;
    assert!(outcomes.contains(&(first.clone(), Some(Outcome::Ran))), "{audit:?}");
    assert!(outcomes.contains(&(second.clone(), Some(Outcome::Skipped))), "{audit:?}");
    assert!(applies.iter().all(|entry| entry.decided_by == protocol::audit::Decider::User));
}

#[tokio::test]
async fn no_apply_while_a_turn_of_the_folders_own_session_is_under_way() {
    let model = FakeModel::start(vec![
        shell("i1", "echo isolated > notes.txt"),
        text(&["done"]),
        shell("f1", "echo folder > other.txt"),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = repository();
    let id = isolated(&hub, &folder, "fenced").await["id"].as_str().unwrap().to_string();
    yolo(&hub, &folder, &id).await;
    prompt_in(&hub, &folder, &id, "work").await;
    // The folder's default session waits on a card: its turn is under way.
    let events = hub.prompt(&folder, "other").await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval", "{events:?}");
    let busy = worktree_post(&hub, &id, "apply", json!({})).await;
    assert_eq!((busy.status, busy.error_code()), (StatusCode::CONFLICT, "session_busy".into()));
    assert_eq!(read(&folder, "notes.txt"), "one\ntwo\nthree\n", "nothing applied");
    let default = session_of(&events);
    hub.decide(&default, json!({"toolId": "f1", "decision": "reject"})).await;
    let applied = worktree_post(&hub, &id, "apply", json!({})).await;
    assert_eq!(applied.status, StatusCode::OK, "{:?}", applied.body);
    assert_eq!(read(&folder, "notes.txt"), "isolated\n");
}

#[tokio::test]
async fn a_rewind_of_an_isolated_session_puts_its_worktree_back_not_the_folder() {
    let model = FakeModel::start(vec![shell("c1", "echo agent > notes.txt"), text(&["done"])]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = repository();
    let made = isolated(&hub, &folder, "rewound").await;
    let id = made["id"].as_str().unwrap().to_string();
    let path = PathBuf::from(made["worktree"]["path"].as_str().unwrap());
    yolo(&hub, &folder, &id).await;
    prompt_in(&hub, &folder, &id, "edit").await;
    assert_eq!(read(&path, "notes.txt"), "agent\n");
    // The user edits the folder's own copy meanwhile: not the session's to rewind.
    std::fs::write(folder.join("notes.txt"), "the user's\n").unwrap();
    let rewound = hub.post(&format!("/api/sessions/{id}/rewind"), json!({"checkpoint": 1}).to_string()).await;
    assert_eq!(rewound.status, StatusCode::OK, "{:?}", rewound.body);
    assert_eq!(read(&path, "notes.txt"), "one\ntwo\nthree\n");
    assert_eq!(read(&folder, "notes.txt"), "the user's\n");
}

#[tokio::test]
async fn commit_keeps_the_branch_when_the_session_goes_and_discard_drops_what_is_not_committed() {
    let model = FakeModel::start(vec![
        shell("c1", "echo committed > notes.txt"),
        text(&["one"]),
        shell("c2", "echo stray > stray.txt && echo changed > notes.txt"),
        text(&["two"]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = repository();
    let made = isolated(&hub, &folder, "keep").await;
    let (id, branch) = (made["id"].as_str().unwrap().to_string(), made["worktree"]["branch"].as_str().unwrap());
    yolo(&hub, &folder, &id).await;
    let path = PathBuf::from(made["worktree"]["path"].as_str().unwrap());
    prompt_in(&hub, &folder, &id, "one").await;
    let blank = worktree_post(&hub, &id, "commit", json!({"message": "  "})).await;
    assert_eq!((blank.status, blank.error_code()), (StatusCode::BAD_REQUEST, "bad_request".into()));
    let committed = worktree_post(&hub, &id, "commit", json!({"message": "the session's work"})).await;
    assert_eq!(committed.status, StatusCode::OK, "{:?}", committed.body);
    let commit = committed.json()["commit"].as_str().unwrap().to_string();
    assert_eq!(git(&folder, &["log", "-1", "--format=%H %s", branch]), format!("{commit} the session's work"));

    prompt_in(&hub, &folder, &id, "two").await;
    assert_eq!(worktree_post(&hub, &id, "discard", json!({})).await.status, StatusCode::OK);
    assert_eq!(read(&path, "notes.txt"), "committed\n", "back to the commit");
    assert!(!path.join("stray.txt").exists());

    let deleted = delete(&hub, &id).await;
    assert_eq!(deleted.json(), json!({"worktreeRemoved": true, "branchKept": branch}));
    assert!(!path.exists());
    assert_eq!(git(&folder, &["rev-parse", branch]), commit, "the branch with a commit stays");
}

#[tokio::test]
async fn bad_requests_are_refused_clearly_and_make_nothing() {
    let data = tempfile::tempdir().unwrap();
    let model = FakeModel::start(vec![]).await;
    let hub = hub(&model, &data);
    let (_plain_dir, plain) = project(None);
    let refused = create(&hub, json!({"folderPath": plain, "isolated": true})).await;
    assert_eq!((refused.status, refused.error_code()), (StatusCode::BAD_REQUEST, "not_a_git_repository".into()));
    let (_empty_dir, empty) = project(None);
    git(&empty, &["init", "-q"]);
    let refused = create(&hub, json!({"folderPath": empty, "isolated": true})).await;
    assert_eq!((refused.status, refused.error_code()), (StatusCode::BAD_REQUEST, "no_git_commit".into()));
    let missing = create(&hub, json!({"folderPath": "/no/such/folder", "isolated": true})).await;
    assert_eq!((missing.status, missing.error_code()), (StatusCode::BAD_REQUEST, "folder_not_found".into()));
    assert_eq!(hub.get("/api/projects").await.json()["projects"], json!([]), "no session was made");
    let made: Vec<_> =
        std::fs::read_dir(data.path().join("worktrees")).map(|dir| dir.flatten().collect()).unwrap_or_default();
    assert!(made.is_empty(), "{made:?}");

    // What the New session control asks.
    let asks = |folder: &Path| format!("/api/folders/git?folderPath={}", urlencoding(folder));
    assert_eq!(hub.get(&asks(&plain)).await.json(), json!({"isolatable": false}));
    assert_eq!(hub.get(&asks(&empty)).await.json(), json!({"isolatable": false}));
    let (_repo_dir, repo) = repository();
    assert_eq!(hub.get(&asks(&repo)).await.json(), json!({"isolatable": true}));

    // A session that is not isolated, a stale id.
    let plain_session = create(&hub, json!({"folderPath": repo})).await.json();
    assert!(plain_session.get("worktree").is_none(), "{plain_session}");
    let id = plain_session["id"].as_str().unwrap();
    for what in ["apply", "discard"] {
        let refused = worktree_post(&hub, id, what, json!({})).await;
        assert_eq!((refused.status, refused.error_code()), (StatusCode::BAD_REQUEST, "not_isolated".into()), "{what}");
        let stale = worktree_post(&hub, "no-such-session", what, json!({})).await;
        assert_eq!((stale.status, stale.error_code()), (StatusCode::NOT_FOUND, "not_found".into()), "{what}");
    }
    assert_eq!(delete(&hub, id).await.status, StatusCode::NO_CONTENT, "a plain session's delete is as before");

    // A hub without a data dir keeps no worktrees.
    let bare = TestHub::with_model(&model);
    let refused = create(&bare, json!({"folderPath": repo, "isolated": true})).await;
    assert_eq!((refused.status, refused.error_code()), (StatusCode::BAD_REQUEST, "worktrees_off".into()));
}

#[tokio::test]
async fn a_restart_finds_the_worktrees_again_and_one_deleted_by_hand_is_said_not_fatal() {
    let model = FakeModel::start(vec![shell("c1", "pwd > where.txt"), text(&["ok"])]).await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = repository();
    let (kept, kept_path, gone, gone_path, gone_branch, unreadable) = {
        let hub = hub(&model, &data);
        let kept = isolated(&hub, &folder, "kept").await;
        let gone = isolated(&hub, &folder, "gone").await;
        let unreadable = isolated(&hub, &folder, "unreadable").await["id"].as_str().unwrap().to_string();
        hub.hub.store().unwrap().flush().await.unwrap();
        let path = |made: &Value| PathBuf::from(made["worktree"]["path"].as_str().unwrap());
        let branch = gone["worktree"]["branch"].as_str().unwrap().to_string();
        let id = |made: &Value| made["id"].as_str().unwrap().to_string();
        (id(&kept), path(&kept), id(&gone), path(&gone), branch, unreadable)
    };
    std::fs::remove_dir_all(&gone_path).unwrap();
    // A record this hub cannot read (a newer hub's, a damaged row).
    let db = rusqlite::Connection::open(data.path().join("agent-hub.db")).unwrap();
    db.execute("UPDATE sessions SET worktree = '{\"path\": 7}' WHERE id = ?1", [&unreadable]).unwrap();
    drop(db);

    let hub = hub(&model, &data);
    let projects = hub.get("/api/projects").await.json();
    let sessions = projects["projects"][0]["sessions"].as_array().unwrap().clone();
    let of = |id: &str| sessions.iter().find(|session| session["id"] == id).unwrap().clone();
    assert_eq!(of(&gone)["branch"], gone_branch.as_str(), "listed again: {sessions:?}");
    let kept_status = hub.get(&format!("/api/sessions/{kept}/worktree")).await.json();
    assert_eq!(kept_status["worktree"]["path"], kept_path.display().to_string());
    assert!(kept_status["worktree"].get("missing").is_none(), "{kept_status}");
    let gone_status = hub.get(&format!("/api/sessions/{gone}/worktree")).await.json();
    assert_eq!((&gone_status["worktree"]["missing"], &gone_status["files"]), (&json!(true), &json!([])));

    // The kept one still works in its worktree.
    yolo(&hub, &folder, &kept).await;
    let events = prompt_in(&hub, &folder, &kept, "where").await;
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    assert_eq!(read(&kept_path, "where.txt").trim(), kept_path.display().to_string());

    let refused = worktree_post(&hub, &gone, "apply", json!({})).await;
    assert_eq!((refused.status, refused.error_code()), (StatusCode::CONFLICT, "worktree_missing".into()));
    let body = json!({"folderPath": folder, "sessionId": gone, "message": "hello"});
    let refused = hub.post("/api/chat/prompt", body.to_string()).await;
    assert_eq!((refused.status, refused.error_code()), (StatusCode::CONFLICT, "worktree_missing".into()));
    // Fails closed: never a session working in the folder itself.
    let body = json!({"folderPath": folder, "sessionId": unreadable, "message": "hello"});
    let refused = hub.post("/api/chat/prompt", body.to_string()).await;
    assert_eq!((refused.status, refused.error_code()), (StatusCode::CONFLICT, "worktree_missing".into()));
    let deleted = delete(&hub, &gone).await;
    assert_eq!(deleted.json(), json!({"worktreeRemoved": true}));
    assert_eq!(git(&folder, &["branch", "--list", &gone_branch]), "");
    assert!(!git(&folder, &["worktree", "list"]).contains(gone_path.to_str().unwrap()), "pruned");
}

#[tokio::test]
async fn the_folders_rules_apply_in_the_worktree_and_its_gemini_is_protected() {
    let model = FakeModel::start(vec![
        shell("c1", "echo ok > ok.txt"),
        text(&["ran"]),
        shell("c2", "mkdir -p .gemini && echo '{}' > .gemini/settings.json"),
        text(&["never"]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    // The folder locks YOLO off: so does its isolated session.
    // Locked in the folder only (not committed): the worktree, made from HEAD, has no settings.
    let (_dir, locked) = repository();
    write_settings(&locked, r#"{"security": {"disableYoloMode": true}}"#);
    let id = isolated(&hub, &locked, "rules").await["id"].as_str().unwrap().to_string();
    let worktree = hub.get(&format!("/api/sessions/{id}/worktree")).await.json();
    let worktree_path = PathBuf::from(worktree["worktree"]["path"].as_str().unwrap());
    assert!(!worktree_path.join(".gemini").exists(), "the worktree has no settings of its own");
    let config = hub.get(&format!("{}&sessionId={id}", config_path(&locked))).await.json();
    assert_eq!((config["yoloLocked"].as_bool(), config["yoloMode"].as_bool()), (Some(true), Some(false)), "{config}");
    let body = json!({"folderPath": locked, "sessionId": id, "yoloMode": true});
    assert_eq!(hub.post("/api/chat/config", body.to_string()).await.status, StatusCode::FORBIDDEN);

    // In YOLO a plain command runs; one writing the worktree's .gemini waits for the user.
    let (_dir2, folder) = repository();
    let id = isolated(&hub, &folder, "protected").await["id"].as_str().unwrap().to_string();
    yolo(&hub, &folder, &id).await;
    let ran = prompt_in(&hub, &folder, &id, "plain").await;
    assert_eq!(ran.last().unwrap()["status"], "success", "{ran:?}");
    let events = prompt_in(&hub, &folder, &id, "loosen").await;
    assert_eq!(events.last().unwrap()["status"], "waiting_approval", "{events:?}");
}

#[tokio::test]
async fn an_acp_agent_works_in_the_worktree() {
    let data = tempfile::tempdir().unwrap();
    // Its log is relative: written in the agent's cwd.
    let hub = TestHub::with_options(HubOptions {
        worktrees: Some(data.path().join("worktrees")),
        ..scripted_acp_options(data.path())
    });
    let (_dir, folder) = repository();
    let made = isolated(&hub, &folder, "acp").await;
    let id = made["id"].as_str().unwrap();
    let path = PathBuf::from(made["worktree"]["path"].as_str().unwrap());
    let events = prompt_in(&hub, &folder, id, "hello").await;
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    assert!(!folder.join("received.jsonl").exists(), "the agent's cwd is not the folder");
    let received = read(&path, "received.jsonl");
    let new_session = received
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|entry| entry["message"]["method"] == "session/new")
        .unwrap();
    assert_eq!(new_session["message"]["params"]["cwd"], path.display().to_string());
}
