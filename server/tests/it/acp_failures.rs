//! ACP agents that cannot work, driven over HTTP with real child processes: a
//! command that does not exist, and one that dies at once. Each prompt gets a
//! clear error and ends; the hub stays up and the next prompt tries again.
//! (The working path runs against the real Gemini CLI in end2end/tests/acp.test.mjs.)

use crate::common;

use std::sync::Arc;

use agent_hub::agents::acp::AcpAgent;
use agent_hub::hub::HubOptions;
use axum::http::StatusCode;
use common::*;
use serde_json::{json, Value};

fn hub_with_agent(command_line: &str) -> TestHub {
    TestHub::with_options(HubOptions {
        acp: Some(Arc::new(AcpAgent::new(command_line).unwrap())),
        ..HubOptions::default()
    })
}

/// A live process whose command line names `script`.
fn running_script(script: &str) -> Option<String> {
    std::fs::read_dir("/proc").unwrap().flatten().find_map(|entry| {
        let pid = entry.file_name().to_str()?.parse::<u32>().ok()?.to_string();
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        (String::from_utf8_lossy(&cmdline).contains(script) && process_alive(&pid)).then_some(pid)
    })
}

fn error_of(events: &[Value]) -> (&str, &str) {
    let error = events.iter().find(|e| e["type"] == "error").unwrap_or_else(|| panic!("no error in {events:?}"));
    (error["code"].as_str().unwrap(), error["message"].as_str().unwrap())
}

#[tokio::test]
async fn a_missing_agent_command_is_a_clear_error_every_time() {
    let hub = hub_with_agent("/no/such/agent --acp");
    let (_dir, folder) = project(None);
    for _ in 0..2 {
        let reply = hub.prompt(&folder, "hello").await;
        assert_eq!(reply.status, StatusCode::OK);
        let events = reply.lines();
        assert_eq!(types(&events), ["init", "message", "error", "result"]);
        let (code, message) = error_of(&events);
        assert_eq!(code, "agent_unavailable");
        assert!(message.contains("/no/such/agent") && message.contains("--acp-command"), "{message}");
        assert_eq!(events[3]["status"], "error");
    }
}

#[tokio::test]
async fn an_agent_that_dies_at_start_is_reported_with_its_exit_and_last_words() {
    let hub = hub_with_agent("sh -c 'echo \"cannot find my config\" >&2; exit 3'");
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "hello").await.lines();
    let (code, message) = error_of(&events);
    assert_eq!(code, "agent_crashed");
    assert!(message.contains("exit status: 3") && message.contains("cannot find my config"), "{message}");
    assert_eq!(events.last().unwrap()["status"], "error");

    let session = events[0]["session_id"].as_str().unwrap().to_string();
    let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
    assert_eq!(detail["status"], "error");
    let stop = hub.post(&format!("/api/sessions/{session}/cancel"), "").await;
    assert_eq!((stop.status, stop.error_code()), (StatusCode::CONFLICT, "not_running".to_string()));
    let answer = hub
        .post(&format!("/api/sessions/{session}/input"), json!({"requestId": "q", "response": "x"}).to_string())
        .await;
    assert_eq!(answer.status, StatusCode::CONFLICT);
    assert_eq!(types(&hub.prompt(&folder, "again").await.lines()).last().unwrap(), "result", "the hub stays up");
}

#[tokio::test]
async fn an_agent_that_ignores_stop_is_ended_by_a_second_stop() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/stubborn-acp-agent.mjs");
    let hub = Arc::new(hub_with_agent(&format!("node {script}")));
    let (_dir, folder) = project(None);
    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let running = tokio::spawn({
        let (hub, folder) = (hub.clone(), folder.clone());
        async move { hub.prompt(&folder, "hello").await.lines() }
    });
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
        let streaming =
            detail["events"].as_array().is_some_and(|events| events.iter().any(|e| e["content"] == "working on it"));
        if streaming {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the agent never answered the prompt: {detail}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // The first Stop sends session/cancel, which this agent ignores.
    let first = tokio::spawn({
        let (hub, session) = (hub.clone(), session.clone());
        async move { hub.post(&format!("/api/sessions/{session}/cancel"), "").await.lines() }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!running.is_finished() && !first.is_finished(), "still running after the first Stop");

    let second = hub.post(&format!("/api/sessions/{session}/cancel"), "").await.lines();
    let (code, message) = error_of(&second);
    assert_eq!(code, "agent_killed");
    assert!(message.contains("did not stop"), "{message}");
    assert_eq!(second.last().unwrap()["status"], "error");
    for stream in [running.await.unwrap(), first.await.unwrap()] {
        assert_eq!(stream.last().unwrap()["status"], "error", "every open stream sees the end");
    }
    let detail = hub.get(&format!("/api/sessions/{session}")).await.json();
    assert_eq!(detail["status"], "error");

    // Found by its command line: the pid it wrote is its sandbox's PID namespace's.
    assert!(folder.join("agent.pid").exists(), "the agent ran");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while let Some(pid) = running_script(script) {
        assert!(tokio::time::Instant::now() < deadline, "the agent process {pid} was not ended");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// An agent gets an allow-listed environment (PATH, HOME, the locale…), the
/// variables `--acp-env` names (even a `HUB_` one) and nothing else of the
/// hub's: not a `HUB_` secret, not a token of the user's (issue 24, item 10).
/// The hub runs as a process of its own, given these variables: setting them
/// in this process would race with every other test reading its environment.
#[tokio::test]
async fn an_agent_gets_no_hub_secrets_but_the_variables_it_is_given() {
    let data = tempfile::tempdir().unwrap();
    let hub = common::process::HubProcess::start_with_env(
        data.path(),
        &["--agent", "acp", "--acp-command", "sh -c 'env > seen-env.txt; exit 3'", "--acp-env", "HUB_ACP_TEST_GIVEN"],
        "warn",
        &[
            ("HUB_ACP_TEST_SECRET", "launch-token-like"),
            ("HUB_ACP_TEST_GIVEN", "the-agents-key"),
            ("ACP_TEST_USERS_TOKEN", "ghp-like"),
        ],
    );
    let (_dir, folder) = project(None);
    let prompt = json!({"folderPath": folder.to_str().unwrap(), "message": "hello"});
    let events = hub.lines("POST", "/api/chat/prompt", Some(prompt)).await;
    assert_eq!(error_of(&events).0, "agent_crashed", "{events:?}");
    let seen = std::fs::read_to_string(folder.join("seen-env.txt")).unwrap();
    assert!(!seen.contains("HUB_ACP_TEST_SECRET"), "a HUB_ variable reached the agent");
    assert!(!seen.contains("ACP_TEST_USERS_TOKEN"), "a variable no one named reached the agent: {seen}");
    assert!(seen.contains("HUB_ACP_TEST_GIVEN=the-agents-key"), "the variable it was given did not: {seen}");
    let path = std::env::var("PATH").unwrap();
    assert!(seen.lines().any(|line| line == format!("PATH={path}")), "PATH: {seen}");
    hub.stop();
}
