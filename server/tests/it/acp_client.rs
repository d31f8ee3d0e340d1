//! The hub as the ACP agent's client (issue 38, item 4): the agent's commands
//! run in the hub's terminals, in the command sandbox, their output live on
//! the page, and only as judged; its reads and writes go through the hub,
//! confined to the folder. With the scripted agent (a real child process).

use std::io::Read;
use std::net::TcpListener;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::time::Instant;

use crate::acp_driver::Scripted;
use crate::common::*;

/// What the scripted agent said in its chunk (it says JSON).
fn said(events: &[Value]) -> Value {
    serde_json::from_str(&assistant_text(events)).unwrap_or_else(|err| panic!("{err}: {events:?}"))
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|event| event["type"] == kind).collect()
}

#[tokio::test]
async fn the_hub_says_it_serves_writes_and_terminals() {
    let agent = Scripted::start("plain");
    agent.prompt("hello").await;
    let init = &agent.sent("initialize")[0]["message"]["params"]["clientCapabilities"];
    assert_eq!(init["terminal"], true, "{init}");
    assert_eq!(init["fs"]["readTextFile"], false, "reads are served, not offered: {init}");
    assert_eq!(init["fs"]["writeTextFile"], true, "{init}");
}

#[tokio::test]
async fn an_approved_command_runs_in_a_sandboxed_terminal_with_its_output_live() {
    let agent = Scripted::start("terminal");
    let session = agent.session().await;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // Outside the folder and outside `/tmp` (the sandbox's own is private): in the home.
    let home = std::env::var_os("HOME").filter(|home| !std::path::Path::new(home).starts_with("/tmp"));
    let away = tempfile::Builder::new()
        .prefix(".agent-hub-test-")
        .tempdir_in(home.map_or_else(|| std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")), Into::into))
        .unwrap();
    let outside = away.path().join("escaped");
    // A script file, which no reading of the command's text can judge.
    std::fs::write(
        agent.folder.join("s.sh"),
        format!(
            "echo one\n\
             echo oops >&2\n\
             echo x > '{}' 2>/dev/null || echo 'no write outside'\n\
             (echo hi > /dev/tcp/127.0.0.1/{port}) 2>/dev/null || echo 'no network'\n\
             while [ ! -e go ]; do sleep 0.05; done\n\
             echo two\n\
             exit 3\n",
            outside.display()
        ),
    )
    .unwrap();
    let first = agent.prompt("bash s.sh").await;
    let call = of_type(&first, "tool_use")[0]["tool_id"].as_str().unwrap().to_string();
    assert_eq!(last_status(&first), "waiting_approval", "{first:?}");
    // Nothing runs before the user decides.
    assert!(agent.sent("terminal/create").is_empty());

    let deciding = {
        let hub = agent.hub.clone();
        let (session, call) = (session.clone(), call.clone());
        tokio::spawn(async move { hub.decide(&session, json!({"toolId": call, "decision": "approve"})).await })
    };
    // Its output reaches the page while it runs: the command waits for `go`.
    let deadline = Instant::now() + Duration::from_secs(20);
    let live = loop {
        let events = agent.events(&session).await;
        let outputs: String = of_type(&events, "tool_output")
            .iter()
            .filter(|event| event["tool_id"] == call.as_str())
            .map(|event| event["text"].as_str().unwrap())
            .collect();
        if outputs.contains("no network") {
            assert!(of_type(&events, "tool_result").is_empty(), "still running: {events:?}");
            break outputs;
        }
        assert!(Instant::now() < deadline, "no live output: {events:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(live.contains("one\n") && live.contains("oops\n") && live.contains("no write outside\n"), "{live}");
    std::fs::write(agent.folder.join("go"), "").unwrap();
    let rest = deciding.await.unwrap().lines();
    assert_eq!(last_status(&rest), "success", "{rest:?}");

    let told = said(&rest);
    assert_eq!(told["exit"], 3, "{told}");
    assert!(told["output"].as_str().unwrap().contains("one\n"), "{told}");
    let output = told["output"].as_str().unwrap();
    assert!(output.contains("two\n") && output.contains("Read-only file system"), "{told}");
    assert!(output.contains("[sandbox: the kernel refused a write"), "the sandbox says what it refused: {told}");
    let result = of_type(&agent.events(&session).await, "tool_result")
        .into_iter()
        .find(|event| event["tool_id"] == call.as_str())
        .cloned()
        .unwrap();
    let text = result["output"].as_str().unwrap();
    assert!(text.contains("two\n") && text.ends_with("Exit code: 3"), "the call's result is its terminal: {result}");
    assert!(!outside.exists(), "the command wrote outside the folder");
    let mut stream = None;
    for _ in 0..20 {
        if let Ok((accepted, _)) = listener.accept() {
            stream = Some(accepted);
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if let Some(mut stream) = stream {
        let mut got = String::new();
        let _ = stream.read_to_string(&mut got);
        panic!("the command reached a local port with the folder's network off: {got:?}");
    }
}

#[tokio::test]
async fn a_command_the_agent_did_not_ask_about_runs_only_as_the_rules_say() {
    let agent = Scripted::start("unasked");
    let session = agent.session().await;
    let refused = said(&agent.prompt("touch unasked.txt").await);
    assert!(refused["refused"].as_str().is_some_and(|why| why.contains("without approval")), "{refused}");
    assert!(!agent.folder.join("unasked.txt").exists());

    // YOLO lets it run (in the sandbox); a deny rule holds even so.
    agent.hub.set_yolo(&agent.folder, true).await;
    let ran = said(&agent.prompt("touch unasked.txt").await);
    assert_eq!(ran["exit"], 0, "{ran}");
    assert!(agent.folder.join("unasked.txt").exists());
    // The folder's own rules count once it is trusted.
    agent.hub.trust(&agent.folder).await;
    policy(
        &agent.folder,
        "deny.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"rm\"\ndecision = \"deny\"\npriority = 10\n",
    );
    let denied = said(&agent.prompt("rm unasked.txt").await);
    assert!(denied["refused"].as_str().is_some_and(|why| why.contains("deny")), "{denied}");
    assert!(agent.folder.join("unasked.txt").exists());
    let _ = session;
}

#[tokio::test]
async fn the_agents_reads_and_writes_are_judged_and_stay_in_the_folder_off_what_the_sandbox_keeps() {
    let agent = Scripted::start("files");
    let folder = &agent.folder;
    std::fs::create_dir_all(folder.join(".gemini")).unwrap();
    std::fs::write(folder.join(".gemini/settings.json"), "{}").unwrap();
    std::fs::create_dir_all(folder.join(".vscode")).unwrap();
    std::os::unix::fs::symlink(".vscode", folder.join("editor")).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "secret").unwrap();
    // A write no call asked about is judged as one: with YOLO off, it needs the user.
    let unasked = json!({"writes": [[folder.join("notes.md"), "unasked"]]});
    let told = said(&agent.prompt(&unasked.to_string()).await);
    assert!(told[0]["refused"].as_str().is_some_and(|why| why.contains("without approval")), "{told}");
    assert!(!folder.join("notes.md").exists());
    agent.hub.set_yolo(&agent.folder, true).await;
    let plan = json!({
        "writes": [
            [folder.join("notes.md"), "# Notes\n"],
            [folder.join(".gemini/settings.json"), "{\"security\":{\"disableYoloMode\":false}}"],
            [folder.join("editor/tasks.json"), "{\"tasks\":[]}"],
            [outside.path(), "overwritten"],
        ],
        "reads": [folder.join("notes.md"), outside.path(), folder.join("missing.md")],
    });
    let told = said(&agent.prompt(&plan.to_string()).await);
    let told = told.as_array().unwrap();
    assert_eq!(told[0]["written"], true, "{told:?}");
    assert_eq!(std::fs::read_to_string(folder.join("notes.md")).unwrap(), "# Notes\n");
    for refused in &told[1..4] {
        assert!(refused["refused"].is_string(), "{refused}");
    }
    // The agents' settings always ask (so YOLO does not write them); what else the sandbox
    // keeps read-only is refused where the write would land, through a link too.
    assert!(told[1]["refused"].as_str().unwrap().contains("without approval"), "{told:?}");
    assert!(told[2]["refused"].as_str().unwrap().contains("read-only"), "through a link: {told:?}");
    assert!(!folder.join(".vscode/tasks.json").exists());
    assert_eq!(std::fs::read_to_string(folder.join(".gemini/settings.json")).unwrap(), "{}");
    assert_eq!(std::fs::read_to_string(outside.path()).unwrap(), "secret");
    assert_eq!(told[4]["content"], "# Notes\n", "{told:?}");
    assert!(told[5]["refused"].as_str().unwrap().contains("inside the folder only"), "{told:?}");
    assert!(told[6]["refused"].as_str().unwrap().contains("does not exist"), "{told:?}");
}

fn last_status(events: &[Value]) -> String {
    events.last().map(|event| event["status"].as_str().unwrap_or_default().to_string()).unwrap_or_default()
}

#[tokio::test]
async fn an_approved_command_cannot_be_swapped_for_another_in_its_terminal() {
    let agent = Scripted::start("terminal-swap");
    let session = agent.session().await;
    // The repository's own `bash`: what would run were the script judged instead of the program.
    let planted = agent.folder.join("bash");
    std::fs::write(&planted, "#!/bin/sh\ntouch swapped\n").unwrap();
    std::fs::set_permissions(&planted, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let first = agent.prompt("list").await;
    let call = of_type(&first, "tool_use")[0]["tool_id"].as_str().unwrap().to_string();
    let rest = agent.hub.decide(&session, json!({"toolId": call, "decision": "approve"})).await.lines();
    let told = said(&rest);
    assert!(told["refused"].as_str().is_some_and(|why| why.contains("without approval")), "{told}");
    assert!(!agent.folder.join("swapped").exists());
}

#[tokio::test]
async fn an_approved_edit_writes_its_path_through_the_hub_until_its_result() {
    let agent = Scripted::start("approved-write");
    let session = agent.session().await;
    let path = agent.folder.join("notes.md");
    let first = agent.prompt(&json!({"path": path, "content": "# Notes\n"}).to_string()).await;
    let call = of_type(&first, "tool_use")[0]["tool_id"].as_str().unwrap().to_string();
    assert_eq!(last_status(&first), "waiting_approval", "{first:?}");
    assert!(!path.exists(), "nothing is written before the decision");
    let rest = agent.hub.decide(&session, json!({"toolId": call, "decision": "approve"})).await.lines();
    let told = said(&rest);
    assert_eq!(told[0]["written"], true, "{told}");
    let again = told[1]["refused"].as_str();
    assert!(again.is_some_and(|why| why.contains("without approval")), "once its result is in: {told}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# Notes\n");
}

/// An edit is judged by every path it names: the agents' settings among them
/// put it on the card, in YOLO too, and the audit names both.
#[tokio::test]
async fn an_edit_naming_two_paths_is_judged_and_audited_by_both() {
    const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scripted-acp-agent.mjs");
    let data = tempfile::tempdir().unwrap();
    let command = format!("node '{SCRIPT}' two-paths received.jsonl");
    let hub = agent_hub_test_hub(&command, &data);
    let (_dir, folder) = project(None);
    hub.set_yolo(&folder, true).await;
    let first = hub.prompt(&folder, &folder.join("notes.md").display().to_string()).await.lines();
    assert_eq!(last_status(&first), "waiting_approval", "not allowed by YOLO: {first:?}");
    let session = session_of(&first);
    let rest = hub.decide(&session, json!({"toolId": "two-1", "decision": "reject"})).await.lines();
    assert_eq!(said(&rest)["selected"], "reject-once", "{rest:?}");
    let audit = hub.settled_audit(&folder, &["two-1"]).await;
    let row = audit.iter().find(|row| row["toolId"] == "two-1").unwrap_or_else(|| panic!("{audit:?}"));
    let summary = row["summary"].as_str().unwrap();
    assert!(summary.contains("notes.md") && summary.contains(".gemini/settings.json"), "{row}");
}

fn agent_hub_test_hub(command: &str, data: &tempfile::TempDir) -> TestHub {
    TestHub::with_options(agent_hub::hub::HubOptions {
        acp: Some(std::sync::Arc::new(agent_hub::agents::acp::AcpAgent::new(command).unwrap())),
        store: Some(agent_hub::store::Store::open(data.path()).unwrap()),
        ..agent_hub::hub::HubOptions::default()
    })
}
