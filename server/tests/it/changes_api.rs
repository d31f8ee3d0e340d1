//! `GET /api/sessions/{id}/changes` over HTTP with the scripted model: what
//! approved calls wrote, collapsed per file; nothing for a rejected call; and
//! the folder's git working tree against `HEAD` (git run for real).

use crate::common;

use std::path::Path;
use std::process::Command;

use axum::http::StatusCode;
use common::fake_model::{call, calls, text, FakeModel};
use common::*;
use serde_json::{json, Value};

impl TestHub {
    async fn changes(&self, session: &str) -> Value {
        let reply = self.get(&format!("/api/sessions/{session}/changes")).await;
        assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
        reply.json()
    }
}

/// (path, change, oldText, newText, writes) of each listed file, in order.
fn listed(changes: &Value) -> Vec<(String, String, String, String, u64)> {
    changes["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            let text = |key: &str| file[key].as_str().unwrap().to_string();
            (text("path"), text("change"), text("oldText"), text("newText"), file["writes"].as_u64().unwrap())
        })
        .collect()
}

/// A repository whose one commit holds `a.txt` ("a").
fn committed_repository(folder: &Path) {
    git(folder, &["init", "-q"]);
    std::fs::write(folder.join("a.txt"), "a\n").unwrap();
    git(folder, &["add", "."]);
    git(folder, &["commit", "-q", "-m", "first"]);
}

fn git(folder: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(folder)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn approved_writes_and_edits_are_listed_rejected_ones_are_not() {
    let model = FakeModel::start(vec![
        calls(&[
            ("w", "write_file", json!({"file_path": "notes/new.md", "content": "# New\n"})),
            ("r", "replace", json!({"file_path": "lib.rs", "old_string": "one", "new_string": "uno"})),
            ("no", "write_file", json!({"file_path": "rejected.txt", "content": "never\n"})),
        ]),
        text(&["done"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("lib.rs"), "fn one() {}\nfn two() {}\n").unwrap();
    let session = session_of(&hub.prompt(&folder, "edit").await.lines());
    assert!(hub.changes(&session).await["files"].as_array().unwrap().is_empty(), "nothing written while cards wait");

    hub.decide(&session, json!({"toolId": "w", "decision": "approve"})).await;
    hub.decide(&session, json!({"toolId": "r", "decision": "approve"})).await;
    hub.decide(&session, json!({"toolId": "no", "decision": "reject"})).await;
    assert!(!folder.join("rejected.txt").exists());

    let changes = hub.changes(&session).await;
    assert_eq!(
        listed(&changes),
        [
            (
                "lib.rs".into(),
                "modified".into(),
                "fn one() {}\nfn two() {}\n".into(),
                "fn uno() {}\nfn two() {}\n".into(),
                1
            ),
            ("notes/new.md".into(), "created".into(), "".into(), "# New\n".into(), 1),
        ],
        "newest first; the rejected write is not there"
    );
    let lib = &changes["files"][0];
    assert_eq!((lib["toolId"].as_str(), lib["added"].as_u64(), lib["removed"].as_u64()), (Some("r"), Some(1), Some(1)));
    assert!(lib["seq"].as_u64().unwrap() > changes["files"][1]["seq"].as_u64().unwrap());
    assert_eq!(changes["git"], Value::Null, "not a git repository");
    assert!(changes.get("note").is_none(), "{changes}");
}

#[tokio::test]
async fn a_file_written_twice_is_one_entry_from_before_the_first_to_after_the_last() {
    let model = FakeModel::start(vec![
        call("first", "write_file", json!({"file_path": "a.txt", "content": "two\n"})),
        call("other", "write_file", json!({"file_path": "b.txt", "content": "b\n"})),
        call("second", "replace", json!({"file_path": "a.txt", "old_string": "two", "new_string": "three"})),
        text(&["done"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("a.txt"), "one\n").unwrap();
    let session = session_of(&hub.prompt(&folder, "go").await.lines());
    for tool in ["first", "other", "second"] {
        hub.decide(&session, json!({"toolId": tool, "decision": "approve"})).await;
    }
    let changes = hub.changes(&session).await;
    assert_eq!(
        listed(&changes),
        [
            ("a.txt".into(), "modified".into(), "one\n".into(), "three\n".into(), 2),
            ("b.txt".into(), "created".into(), "".into(), "b\n".into(), 1),
        ]
    );
    assert_eq!(changes["files"][0]["toolId"], "second");
}

#[tokio::test]
async fn the_users_own_version_is_what_the_list_shows() {
    let model = FakeModel::start(vec![
        call("r", "replace", json!({"file_path": "lib.rs", "old_string": "one", "new_string": "uno"})),
        text(&["ok"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("lib.rs"), "fn one() {}\n").unwrap();
    let session = session_of(&hub.prompt(&folder, "rename").await.lines());
    let mine = "fn eins() {}\n";
    hub.decide(&session, json!({"toolId": "r", "decision": "edit", "modifiedContent": mine})).await;
    let changes = hub.changes(&session).await;
    assert_eq!(listed(&changes), [("lib.rs".into(), "modified".into(), "fn one() {}\n".into(), mine.into(), 1)]);
}

#[tokio::test]
async fn in_a_git_repository_the_working_tree_is_listed_against_head() {
    let model = FakeModel::start(vec![
        call("w", "replace", json!({"file_path": "src/lib.rs", "old_string": "old", "new_string": "new"})),
        text(&["done"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, root) = project(None);
    // The folder is a sub-directory of the repository: paths are the folder's.
    let folder = root.join("app");
    std::fs::create_dir_all(folder.join("src")).unwrap();
    std::fs::write(root.join("outside.txt"), "committed\n").unwrap();
    std::fs::write(folder.join("src/lib.rs"), "fn old() {}\n").unwrap();
    std::fs::write(folder.join("gone.txt"), "bye\n").unwrap();
    std::fs::write(folder.join("logo.bin"), [0u8, 1, 2, 3]).unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "first"]);
    // Changes beside the agent's: untracked, deleted, binary, and outside the folder.
    std::fs::write(folder.join("untracked.txt"), "fresh\n").unwrap();
    std::fs::remove_file(folder.join("gone.txt")).unwrap();
    std::fs::write(folder.join("logo.bin"), [0u8, 9, 9]).unwrap();
    std::fs::write(root.join("outside.txt"), "changed\n").unwrap();

    let session = session_of(&hub.prompt(&folder, "edit").await.lines());
    hub.decide(&session, json!({"toolId": "w", "decision": "approve"})).await;
    let changes = hub.changes(&session).await;
    assert_eq!(
        listed(&changes),
        [("src/lib.rs".into(), "modified".into(), "fn old() {}\n".into(), "fn new() {}\n".into(), 1)]
    );

    let git_section = &changes["git"];
    assert_eq!(git_section["branch"], "main", "{changes}");
    let mut files: Vec<(String, String, String, String, bool)> = git_section["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| {
            let text = |key: &str| file[key].as_str().unwrap().to_string();
            (text("path"), text("status"), text("oldText"), text("newText"), file.get("omitted").is_some())
        })
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            ("gone.txt".into(), "deleted".into(), "bye\n".into(), "".into(), false),
            ("logo.bin".into(), "modified".into(), "".into(), "".into(), true),
            ("src/lib.rs".into(), "modified".into(), "fn old() {}\n".into(), "fn new() {}\n".into(), false),
            ("untracked.txt".into(), "untracked".into(), "".into(), "fresh\n".into(), false),
        ],
        "only the folder's files, relative to it"
    );
    let binary = git_section["files"].as_array().unwrap().iter().find(|file| file["path"] == "logo.bin").unwrap();
    assert_eq!(binary["omitted"], "binary");
}

#[tokio::test]
async fn a_git_failure_is_a_note_and_no_git_section() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    git(&folder, &["init", "-q"]);
    // A repository git cannot read: its config does not parse.
    std::fs::write(folder.join(".git/config"), "[core\nbroken").unwrap();
    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let changes = hub.changes(&session).await;
    assert_eq!(changes["git"], Value::Null);
    assert!(changes["note"].as_str().is_some_and(|note| note.contains("git")), "{changes}");
}

#[tokio::test]
async fn an_unknown_session_is_not_found() {
    let hub = TestHub::new();
    let reply = hub.get("/api/sessions/nope/changes").await;
    assert_eq!((reply.status, reply.error_code().as_str()), (StatusCode::NOT_FOUND, "not_found"));
}

#[tokio::test]
async fn a_repository_without_commits_lists_its_files_as_new() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    git(&folder, &["init", "-q"]);
    std::fs::write(folder.join("first.txt"), "hello\n").unwrap();
    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let changes = hub.changes(&session).await;
    assert_eq!(changes["git"]["branch"], "main");
    let files = changes["git"]["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{changes}");
    let file = &files[0];
    assert_eq!(
        (file["path"].as_str(), file["status"].as_str(), file["oldText"].as_str(), file["newText"].as_str()),
        (Some("first.txt"), Some("untracked"), Some(""), Some("hello\n"))
    );
    assert_eq!((file["added"].as_u64(), file["removed"].as_u64()), (Some(1), Some(0)));
}

/// A repository's config can name a command `git status` runs (an fsmonitor
/// hook); the hub's own look at the working tree must not run it.
#[tokio::test]
async fn the_repositorys_fsmonitor_command_is_not_run() {
    let hub = TestHub::new();
    let (dir, folder) = project(None);
    committed_repository(&folder);
    let marker = dir.path().join("fsmonitor-ran");
    let hook = folder.join(".git/fsmonitor-hook");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&hook, executable).unwrap();
    git(&folder, &["config", "core.fsmonitor", hook.to_str().unwrap()]);
    std::fs::write(folder.join("a.txt"), "b\n").unwrap();

    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let changes = hub.changes(&session).await;
    assert_eq!(changes["git"]["files"][0]["path"], "a.txt", "{changes}");
    assert!(!marker.exists(), "the hub ran the repository's fsmonitor hook");
    // The hook is real: git's own status runs it.
    Command::new("git").arg("-C").arg(&folder).args(["status", "--porcelain"]).output().unwrap();
    assert!(marker.exists(), "the test's hook did not run under plain git status");
}

/// A clean filter named by `.gitattributes` and written into `.git/config`
/// (both files the agent can write) would run on `git status`: the hub's does not.
#[tokio::test]
async fn the_repositorys_filter_commands_are_not_run() {
    let hub = TestHub::new();
    let (dir, folder) = project(None);
    committed_repository(&folder);
    let marker = dir.path().join("filter-ran");
    std::fs::write(folder.join(".gitattributes"), "* filter=evil\n").unwrap();
    git(&folder, &["config", "filter.evil.clean", &format!("touch '{}'; cat", marker.display())]);
    std::fs::write(folder.join("a.txt"), "b\n").unwrap();

    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let changes = hub.changes(&session).await;
    let paths: Vec<&str> =
        changes["git"]["files"].as_array().unwrap().iter().filter_map(|f| f["path"].as_str()).collect();
    assert!(paths.contains(&"a.txt"), "{changes}");
    assert!(!marker.exists(), "the hub ran the repository's clean filter");
    // The filter is real: git's own status runs it.
    Command::new("git").arg("-C").arg(&folder).args(["status", "--porcelain"]).output().unwrap();
    assert!(marker.exists(), "the test's filter did not run under plain git status");
}

/// A `.git` written by hand (no repository made by git) whose HEAD names a
/// missing commit of a "promisor" remote: git would fetch it, running the
/// ssh command the config names. The hub's git fetches nothing.
#[tokio::test]
async fn a_handwritten_repository_cannot_make_the_hub_fetch() {
    let hub = TestHub::new();
    let (dir, folder) = project(None);
    let marker = dir.path().join("ssh-ran");
    let dot_git = folder.join(".git");
    for sub in ["objects/info", "objects/pack", "refs/heads", "refs/tags"] {
        std::fs::create_dir_all(dot_git.join(sub)).unwrap();
    }
    std::fs::write(dot_git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(dot_git.join("refs/heads/main"), format!("{}\n", "1".repeat(40))).unwrap();
    std::fs::write(
        dot_git.join("config"),
        format!(
            "[core]\n\trepositoryformatversion = 1\n\tbare = false\n\tsshCommand = touch '{}'; false\n\
             [extensions]\n\tpartialClone = origin\n[remote \"origin\"]\n\turl = ssh://example.invalid/x\n\tpromisor = true\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::write(folder.join("a.txt"), "a\n").unwrap();

    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let _ = hub.changes(&session).await;
    assert!(!marker.exists(), "the hub's git ran the repository's ssh command");
    // The trap is real: git's own cat-file of HEAD runs it.
    Command::new("git").arg("-C").arg(&folder).args(["cat-file", "-e", "HEAD"]).output().unwrap();
    assert!(marker.exists(), "the test's ssh command did not run under plain git");
}

/// Drivers the emptying could miss: one whose name holds `=` (which `-c` would
/// split), and one listed after a value too long to read. The hub lists no
/// working tree then (a note says why) rather than run git on that config.
#[tokio::test]
async fn a_config_the_hub_cannot_neutralise_is_not_run() {
    let hub = TestHub::new();
    for (driver, padding) in [("a=b", 0), ("evil", 1_100_000)] {
        let (dir, folder) = project(None);
        committed_repository(&folder);
        let marker = dir.path().join("filter-ran");
        if padding > 0 {
            // Too long for one command-line argument: written into the file.
            let config = folder.join(".git/config");
            let mut text = std::fs::read_to_string(&config).unwrap();
            text.push_str(&format!("[filter \"pad\"]\n\tx = {}\n", "p".repeat(padding)));
            std::fs::write(&config, text).unwrap();
        }
        std::fs::write(folder.join(".gitattributes"), format!("* filter={driver}\n")).unwrap();
        git(&folder, &["config", &format!("filter.{driver}.clean"), &format!("touch '{}'; cat", marker.display())]);
        std::fs::write(folder.join("a.txt"), "b\n").unwrap();

        let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
        let changes = hub.changes(&session).await;
        assert!(!marker.exists(), "the hub ran the clean filter of {driver}");
        assert!(changes["git"].is_null(), "{driver}: {changes}");
        assert!(changes["note"].as_str().is_some_and(|note| note.contains("not trusted")), "{driver}: {changes}");
        Command::new("git").arg("-C").arg(&folder).args(["status", "--porcelain"]).output().unwrap();
        assert!(marker.exists(), "the test's filter {driver} did not run under plain git status");
    }
}
