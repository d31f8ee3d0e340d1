//! Checkpoints and rewind over HTTP with the built-in agent and the scripted
//! model: a turn's shell edits are recorded whichever way they were made,
//! the folder is recorded before the turn's first call runs, a rewind puts
//! it back (and can be undone), refuses over someone else's changes and
//! while a turn is under way, is audited, and survives a restart.

use crate::common;

use std::path::{Path, PathBuf};

use agent_hub::hub::HubOptions;
use axum::http::StatusCode;
use common::fake_model::{text, FakeModel};
use common::*;
use serde_json::{json, Value};

/// A hub with the scripted model, its database and its checkpoints in `data`.
fn hub(model: &FakeModel, data: &tempfile::TempDir) -> TestHub {
    let store = agent_hub::store::Store::open(data.path()).unwrap();
    TestHub::with_options(HubOptions {
        store: Some(store),
        checkpoints: Some(data.path().join("checkpoints")),
        ..model_options(model)
    })
}

/// The hub's repository for `folder`.
fn repository(data: &tempfile::TempDir, folder: &Path) -> PathBuf {
    agent_hub::checkpoints::Checkpoints::new(data.path().join("checkpoints")).repository_of(folder)
}

async fn checkpoints(hub: &TestHub, session: &str) -> Vec<Value> {
    let reply = hub.get(&format!("/api/sessions/{session}/checkpoints")).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    reply.json()["checkpoints"].as_array().unwrap().clone()
}

async fn rewind(hub: &TestHub, session: &str, body: Value) -> Reply {
    hub.post(&format!("/api/sessions/{session}/rewind"), body.to_string()).await
}

fn read(folder: &Path, rel: &str) -> String {
    std::fs::read_to_string(folder.join(rel)).unwrap()
}

fn files_of(checkpoint: &Value) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = checkpoint["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| (file["path"].as_str().unwrap().to_string(), file["change"].as_str().unwrap().to_string()))
        .collect();
    files.sort();
    files
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[tokio::test]
async fn a_turns_shell_edits_are_listed_diffed_rewound_and_the_rewind_undone() {
    let model = FakeModel::start(vec![
        shell("c1", "sed -i 's/two/TWO/' notes.txt && rm old.txt && mkdir -p a/b && echo deep > a/b/c"),
        text(&["Done."]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("notes.txt"), "one\ntwo\n").unwrap();
    std::fs::write(folder.join("old.txt"), "old\n").unwrap();
    hub.set_yolo(&folder, true).await;

    let events = hub.prompt(&folder, "tidy up").await.lines();
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    let session = session_of(&events);
    assert_eq!(read(&folder, "a/b/c"), "deep\n");

    let listed = checkpoints(&hub, &session).await;
    assert_eq!(listed.len(), 1, "{listed:?}");
    let turn = &listed[0];
    assert_eq!((turn["id"].as_u64(), turn["turn"].as_u64(), turn["kind"].as_str()), (Some(1), Some(1), Some("turn")));
    assert_eq!(turn["prompt"], "tidy up");
    assert_eq!(turn["seq"], 2, "the prompt's message event");
    assert!(turn["at"].as_u64().unwrap() > 0);
    assert_eq!(files_of(turn), pairs(&[("a/b/c", "added"), ("notes.txt", "modified"), ("old.txt", "deleted")]));

    let diff = hub.get(&format!("/api/sessions/{session}/checkpoints/1/diff")).await.json();
    let patch = diff["patch"].as_str().unwrap();
    assert!(patch.contains("-two\n+TWO"), "{patch}");
    assert!(patch.contains("+++ b/a/b/c"), "{patch}");
    assert_eq!(diff["truncated"], false);

    let done = rewind(&hub, &session, json!({"checkpoint": 1})).await;
    assert_eq!(done.status, StatusCode::OK, "{:?}", done.body);
    let done = done.json();
    assert_eq!(
        (done["checkpoint"]["kind"].as_str(), done["checkpoint"]["rewoundTo"].as_u64()),
        (Some("rewind"), Some(1))
    );
    assert_eq!(done["conversation"], true, "the built-in agent forgets the turn");
    assert_eq!(read(&folder, "notes.txt"), "one\ntwo\n");
    assert_eq!(read(&folder, "old.txt"), "old\n");
    assert!(!folder.join("a").exists(), "the new directories are gone");

    // Undone: back to before the rewind (the files; the conversation stays rewound).
    let undo = rewind(&hub, &session, json!({"checkpoint": 2})).await;
    assert_eq!(undo.status, StatusCode::OK, "{:?}", undo.body);
    assert_eq!(undo.json()["conversation"], false);
    assert_eq!(read(&folder, "notes.txt"), "one\nTWO\n");
    assert!(!folder.join("old.txt").exists());
    assert_eq!(read(&folder, "a/b/c"), "deep\n");
    let kinds: Vec<String> =
        checkpoints(&hub, &session).await.iter().map(|cp| cp["kind"].as_str().unwrap().to_string()).collect();
    assert_eq!(kinds, ["turn", "rewind", "rewind"]);

    // Both rewinds are in the audit trail, decided by the user.
    let store = hub.hub.store().unwrap().clone();
    store.flush().await.unwrap();
    let audit = store.audit(&agent_hub::store::AuditFilter::default()).unwrap();
    let rewinds: Vec<_> = audit.iter().filter(|entry| entry.tool_name == "rewind").collect();
    assert_eq!(rewinds.len(), 2, "{audit:?}");
    assert_eq!(rewinds[0].decided_by, protocol::audit::Decider::User);
    assert_eq!(rewinds[0].outcome, Some(protocol::audit::Outcome::Ran));
    assert!(rewinds[0].summary.contains("before checkpoint 1"), "{}", rewinds[0].summary);
}

#[tokio::test]
async fn the_folder_is_recorded_before_the_turns_first_call_runs() {
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("a.txt"), "original\n").unwrap();
    let git_dir = repository(&data, &folder);
    // The call itself reads the hub's refs as it runs, then changes the file.
    let command = format!(
        "git --git-dir={} for-each-ref --format='%(refname)' > {}/refs-seen && echo changed > a.txt",
        git_dir.display(),
        data.path().display()
    );
    let model = FakeModel::start(vec![shell("c1", &command), text(&["ok"])]).await;
    // The call reads the hub's data dir, which the sandbox masks: this hub runs without it.
    let store = agent_hub::store::Store::open(data.path()).unwrap();
    let unsandboxed =
        agent_hub::sandbox::Sandbox::new(agent_hub::sandbox::SandboxConfig { disabled: true, ..Default::default() });
    let hub = TestHub::with_options(HubOptions {
        store: Some(store),
        checkpoints: Some(data.path().join("checkpoints")),
        sandbox: Some(std::sync::Arc::new(unsandboxed)),
        ..model_options(&model)
    });
    hub.set_yolo(&folder, true).await;
    let events = hub.prompt(&folder, "change a").await.lines();
    let session = session_of(&events);
    let seen = std::fs::read_to_string(data.path().join("refs-seen")).unwrap();
    assert_eq!(
        seen.trim(),
        format!("refs/hub/{session}/1/before\nrefs/hub/{session}/1/left-out"),
        "only the before refs, already on disk"
    );
    // What it recorded is the file before the call.
    let shown = std::process::Command::new("git")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap())
        .arg(format!("--git-dir={}", git_dir.display()))
        .args(["cat-file", "-p", &format!("refs/hub/{session}/1/before:a.txt")])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&shown.stdout), "original\n");
    assert_eq!(files_of(&checkpoints(&hub, &session).await[0]), pairs(&[("a.txt", "modified")]));
}

#[tokio::test]
async fn a_rewind_over_someone_elses_change_is_refused_unless_forced() {
    let model = FakeModel::start(vec![shell("c1", "echo agent > a.txt && echo agent > b.txt"), text(&["ok"])]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("a.txt"), "a0\n").unwrap();
    std::fs::write(folder.join("b.txt"), "b0\n").unwrap();
    hub.set_yolo(&folder, true).await;
    let session = session_of(&hub.prompt(&folder, "edit").await.lines());

    // The user edits b.txt after the turn.
    std::fs::write(folder.join("b.txt"), "the user's\n").unwrap();
    let refused = rewind(&hub, &session, json!({"checkpoint": 1})).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.error_code(), "rewind_conflict");
    assert_eq!(refused.json()["conflicts"], json!(["b.txt"]));
    assert_eq!(
        (read(&folder, "a.txt"), read(&folder, "b.txt")),
        ("agent\n".into(), "the user's\n".into()),
        "nothing changed"
    );
    assert_eq!(checkpoints(&hub, &session).await.len(), 1, "a refused rewind is no checkpoint");

    let forced = rewind(&hub, &session, json!({"checkpoint": 1, "force": true})).await;
    assert_eq!(forced.status, StatusCode::OK, "{:?}", forced.body);
    assert_eq!((read(&folder, "a.txt"), read(&folder, "b.txt")), ("a0\n".into(), "b0\n".into()));
}

#[tokio::test]
async fn no_rewind_while_a_turn_waits_nor_to_a_checkpoint_that_is_not_there() {
    let model = FakeModel::start(vec![shell("c1", "echo x > x.txt"), text(&["ok"])]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "make x").await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval");
    let session = session_of(&events);
    let busy = rewind(&hub, &session, json!({"checkpoint": 1})).await;
    assert_eq!((busy.status, busy.error_code().as_str()), (StatusCode::CONFLICT, "session_busy"));

    hub.decide(&session, json!({"toolId": "c1", "decision": "approve"})).await.lines();
    assert_eq!(read(&folder, "x.txt"), "x\n");
    let listed = checkpoints(&hub, &session).await;
    assert_eq!(listed.len(), 1, "a turn paused on a card is one turn: {listed:?}");
    assert_eq!(files_of(&listed[0]), pairs(&[("x.txt", "added")]));

    let missing = rewind(&hub, &session, json!({"checkpoint": 9})).await;
    assert_eq!((missing.status, missing.error_code().as_str()), (StatusCode::NOT_FOUND, "not_found"));
    let no_diff = hub.get(&format!("/api/sessions/{session}/checkpoints/9/diff")).await;
    assert_eq!(no_diff.status, StatusCode::NOT_FOUND);
    let no_session = rewind(&hub, "nosuchsession", json!({"checkpoint": 1})).await;
    assert_eq!(no_session.status, StatusCode::NOT_FOUND);
    assert!(folder.join("x.txt").exists(), "nothing was rewound");
}

#[tokio::test]
async fn checkpoints_are_listed_again_after_a_restart_and_still_rewind() {
    let model = FakeModel::start(vec![shell("c1", "rm keep.txt && echo new > new.txt"), text(&["ok"])]).await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("keep.txt"), "keep\n").unwrap();
    let (session, before) = {
        let hub = hub(&model, &data);
        hub.set_yolo(&folder, true).await;
        let session = session_of(&hub.prompt(&folder, "shuffle").await.lines());
        let before = checkpoints(&hub, &session).await;
        hub.hub.store().unwrap().flush().await.unwrap();
        (session, before)
    };
    let again = hub(&model, &data);
    assert_eq!(checkpoints(&again, &session).await, before);
    assert_eq!(rewind(&again, &session, json!({"checkpoint": 1})).await.status, StatusCode::OK);
    assert_eq!(read(&folder, "keep.txt"), "keep\n");
    assert!(!folder.join("new.txt").exists());
}

#[tokio::test]
async fn a_hub_without_checkpoints_lists_none_and_rewinds_nothing() {
    let model = FakeModel::start(vec![shell("c1", "echo x > x.txt"), text(&["ok"])]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    hub.set_yolo(&folder, true).await;
    let session = session_of(&hub.prompt(&folder, "x").await.lines());
    assert!(checkpoints(&hub, &session).await.is_empty());
    assert_eq!(rewind(&hub, &session, json!({"checkpoint": 1})).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_acp_agents_own_writes_are_recorded_and_rewound() {
    // The scripted agent appends every message it receives to a log in the
    // folder: its prompt's line is a write of the agent's own, made after
    // the hub recorded the folder and before the turn ends.
    let data = tempfile::tempdir().unwrap();
    let hub = TestHub::with_options(HubOptions {
        checkpoints: Some(data.path().join("checkpoints")),
        ..scripted_acp_options(data.path())
    });
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "hello").await.lines();
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    let session = session_of(&events);
    assert!(read(&folder, "received.jsonl").contains("session/prompt"));
    let listed = checkpoints(&hub, &session).await;
    assert_eq!(files_of(&listed[0]), pairs(&[("received.jsonl", "modified")]), "{listed:?}");

    let done = rewind(&hub, &session, json!({"checkpoint": 1})).await;
    assert_eq!(done.status, StatusCode::OK, "{:?}", done.body);
    assert_eq!(done.json()["conversation"], false, "an ACP agent's conversation is its own");
    let log = read(&folder, "received.jsonl");
    assert!(log.contains("session/new") && !log.contains("session/prompt"), "as it was before the prompt: {log}");
}

#[tokio::test]
async fn a_deleted_sessions_checkpoints_go_with_it() {
    let model = FakeModel::start(vec![shell("c1", "echo x > x.txt"), text(&["ok"]), text(&["again"])]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = project(None);
    hub.set_yolo(&folder, true).await;
    let session = session_of(&hub.prompt(&folder, "x").await.lines());
    assert_eq!(checkpoints(&hub, &session).await.len(), 1);
    let deleted = hub.send(
        authorized(axum::http::Request::delete(format!("/api/sessions/{session}")))
            .body(axum::body::Body::empty())
            .unwrap(),
    );
    assert_eq!(deleted.await.status, StatusCode::NO_CONTENT);
    // The folder's default session, made anew, has the same id and starts with none.
    let again = session_of(&hub.prompt(&folder, "y").await.lines());
    assert_eq!(again, session);
    let listed = checkpoints(&hub, &session).await;
    assert_eq!(listed.len(), 1, "only the new turn's: {listed:?}");
    assert_eq!(listed[0]["prompt"], "y");
}

#[tokio::test]
async fn the_built_in_agent_forgets_the_rewound_turns() {
    let model = FakeModel::start(vec![
        text(&["first answer"]),
        shell("c1", "echo two > two.txt"),
        text(&["second answer"]),
        text(&["third answer"]),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = project(None);
    hub.set_yolo(&folder, true).await;
    let session = session_of(&hub.prompt(&folder, "one").await.lines());
    hub.prompt(&folder, "two").await.lines();
    assert!(folder.join("two.txt").exists());
    let done = rewind(&hub, &session, json!({"checkpoint": 2})).await;
    assert_eq!(done.status, StatusCode::OK, "{:?}", done.body);
    assert_eq!(done.json()["conversation"], true);
    assert!(!folder.join("two.txt").exists());
    hub.prompt(&folder, "three").await.lines();
    let said: Vec<String> = model
        .last_messages()
        .iter()
        .filter(|message| message["role"] == "user" || message["role"] == "assistant")
        .map(|message| message["content"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(said, ["one", "first answer", "three"], "turn two is forgotten");
}

/// The real binary, killed with SIGKILL while the turn's command runs: the
/// state before the turn was on disk, is listed after the restart (its end
/// unrecorded), a rewind is refused (nothing says what the turn left) and,
/// forced, puts the folder back.
#[tokio::test]
async fn the_state_before_a_turn_cut_by_kill_9_is_kept_and_rewinds() {
    use common::process::HubProcess;
    let command = "echo changed > a.txt; echo started > started.txt; sleep 2";
    let model = FakeModel::start(vec![shell("c1", command), text(&["ok"])]).await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("a.txt"), "original\n").unwrap();
    let args = ["--model-url", model.base_url.as_str(), "--model", "fake-model"];
    let hub = HubProcess::start(data.path(), &args);
    let (status, _) =
        hub.request("POST", "/api/chat/config", Some(json!({"folderPath": folder, "yoloMode": true}))).await;
    assert_eq!(status, 200);
    let url = format!("{}/api/chat/prompt", hub.base);
    let body = json!({"folderPath": folder, "message": "change a"}).to_string();
    let prompting = tokio::spawn(async move {
        let _ = reqwest::Client::new()
            .post(url)
            .bearer_auth(common::process::PROCESS_TOKEN)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map(|response| response.bytes());
    });
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while !folder.join("started.txt").exists() {
        assert!(tokio::time::Instant::now() < deadline, "the command never ran");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    hub.kill_9();
    prompting.abort();

    let hub = HubProcess::start(data.path(), &args);
    let projects = hub.get("/api/projects").await;
    let session = projects["projects"][0]["sessions"][0]["id"].as_str().unwrap().to_string();
    let listed = hub.get(&format!("/api/sessions/{session}/checkpoints")).await;
    let listed = listed["checkpoints"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0]["prompt"].as_str(), listed[0]["ended"].as_bool()), (Some("change a"), Some(false)));
    // Cut short, the turn left no "after": nothing says what it left, every path is a conflict.
    let (status, body) =
        hub.request("POST", &format!("/api/sessions/{session}/rewind"), Some(json!({"checkpoint": 1}))).await;
    assert_eq!(status, 409, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["conflicts"], json!(["a.txt", "started.txt"]));
    assert_eq!(read(&folder, "a.txt"), "changed\n", "nothing changed");
    let (status, body) = hub
        .request("POST", &format!("/api/sessions/{session}/rewind"), Some(json!({"checkpoint": 1, "force": true})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(&folder, "a.txt"), "original\n");
    assert!(!folder.join("started.txt").exists());
    hub.stop();
}

#[tokio::test]
async fn a_folder_that_cannot_be_recorded_is_said_and_the_turn_goes_on() {
    let model = FakeModel::start(vec![shell("c1", "echo x > x.txt"), text(&["ok"])]).await;
    let data = tempfile::tempdir().unwrap();
    // The checkpoints' directory cannot be made: a file stands there.
    std::fs::write(data.path().join("checkpoints"), "not a directory").unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = project(None);
    hub.set_yolo(&folder, true).await;
    let events = hub.prompt(&folder, "x").await.lines();
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    assert_eq!(read(&folder, "x.txt"), "x\n", "the turn went on");
    let warning = events.iter().find(|event| event["type"] == "error").expect("the failure is said");
    assert_eq!((warning["severity"].as_str(), warning["code"].as_str()), (Some("warning"), Some("checkpoint_failed")));
}

#[tokio::test]
async fn no_rewind_while_another_session_of_the_folder_has_a_turn_under_way() {
    let model =
        FakeModel::start(vec![shell("c1", "echo x > x.txt"), text(&["ok"]), shell("c2", "echo y > y.txt")]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub(&model, &data);
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "make x").await.lines();
    let session = session_of(&events);
    hub.decide(&session, json!({"toolId": "c1", "decision": "approve"})).await.lines();
    assert_eq!(read(&folder, "x.txt"), "x\n");
    // Another session of the same folder waits on a card.
    let body = json!({"folderPath": folder, "sessionId": "other", "message": "make y"});
    let events = hub.post("/api/chat/prompt", body.to_string()).await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval", "{events:?}");
    let busy = rewind(&hub, &session, json!({"checkpoint": 1})).await;
    assert_eq!((busy.status, busy.error_code().as_str()), (StatusCode::CONFLICT, "session_busy"));
    assert!(folder.join("x.txt").exists(), "nothing was rewound");
}

/// A folder git blocks on (a FIFO where `.gitignore` is: each git command
/// waits until its 30 s deadline); a turn is prompted there and stopped
/// (`stops` times, the first after `after_ms`) before or while its checkpoint
/// is recorded. Answers the turn's events, in 10 s or a panic; the FIFO is
/// a plain file again after.
async fn stopped_during_checkpoint(
    hub: std::sync::Arc<TestHub>,
    folder: &Path,
    after_ms: u64,
    stops: usize,
) -> Vec<Value> {
    let fifo = folder.join(".gitignore");
    let _ = std::fs::remove_file(&fifo);
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let session = hub.config(folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let running = tokio::spawn({
        let (hub, folder) = (hub.clone(), folder.to_path_buf());
        async move { hub.prompt(&folder, "x").await.lines() }
    });
    let status = || async { hub.get(&format!("/api/sessions/{session}")).await.json()["status"].clone() };
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while status().await != "running" {
        assert!(tokio::time::Instant::now() < deadline, "the turn never started");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    tokio::time::sleep(std::time::Duration::from_millis(after_ms)).await;
    let stopped = hub.post(&format!("/api/sessions/{session}/cancel"), "").await;
    assert_eq!(stopped.status, StatusCode::OK, "{:?}", stopped.body);
    for _ in 1..stops {
        // A second click: taken or refused as nothing runs, never an error of the hub's.
        let again = hub.post(&format!("/api/sessions/{session}/cancel"), "").await;
        assert!(again.status == StatusCode::OK || again.status == StatusCode::CONFLICT, "{:?}", again.body);
    }
    // Well before the git deadline.
    let events = tokio::time::timeout(std::time::Duration::from_secs(10), running)
        .await
        .expect("the turn ended when stopped, without waiting for git")
        .unwrap();
    assert_eq!(events.last().unwrap()["status"], "cancelled", "{events:?}");
    assert!(
        !events.iter().any(|event| event["code"] == "checkpoint_failed"),
        "a stop is not a failure to report: {events:?}"
    );
    assert!(checkpoints(&hub, &session).await.is_empty(), "nothing was recorded");
    std::fs::remove_file(&fifo).unwrap();
    std::fs::write(&fifo, "").unwrap();
    events
}

#[tokio::test]
async fn stop_gives_up_a_checkpoint_under_way_and_the_model_is_never_asked() {
    let model = FakeModel::start(vec![text(&["after"])]).await;
    let data = tempfile::tempdir().unwrap();
    let hub = std::sync::Arc::new(hub(&model, &data));
    let (_dir, folder) = project(None);
    hub.set_yolo(&folder, true).await;
    for after_ms in [300, 0] {
        stopped_during_checkpoint(hub.clone(), &folder, after_ms, 1).await;
        assert!(model.requests().is_empty(), "the model was asked: {:?}", model.requests());
    }
    // The next turn is a turn like any other, recorded.
    let events = hub.prompt(&folder, "again").await.lines();
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    assert_eq!(checkpoints(&hub, &session_of(&events)).await.len(), 1);
}

#[tokio::test]
async fn stop_gives_up_a_checkpoint_under_way_and_the_acp_agent_never_gets_the_prompt() {
    let data = tempfile::tempdir().unwrap();
    let hub = std::sync::Arc::new(TestHub::with_options(HubOptions {
        checkpoints: Some(data.path().join("checkpoints")),
        ..scripted_acp_options(data.path())
    }));
    let (_dir, folder) = project(None);
    // Stopped at once (the agent still starting), then twice in a row while recording.
    stopped_during_checkpoint(hub.clone(), &folder, 0, 1).await;
    stopped_during_checkpoint(hub.clone(), &folder, 300, 2).await;
    let log = read(&folder, "received.jsonl");
    assert!(log.contains("session/new") && !log.contains("session/prompt"), "the prompt was never sent: {log}");
    // Each stopped turn ended once, and the session is free.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let shown = hub.get(&format!("/api/sessions/{session}")).await.json();
    let results: Vec<&Value> = shown["events"].as_array().unwrap().iter().filter(|e| e["type"] == "result").collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(shown["status"], "idle");
    // The stale Stops end nothing more: the next turn runs to its end.
    let events = hub.prompt(&folder, "again").await.lines();
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    assert!(read(&folder, "received.jsonl").contains("session/prompt"));
}
