//! Decisions of issue 27 with an ACP agent: the scripted agent
//! (tests/fixtures/scripted-acp-agent.mjs, scenario `two-calls`; `unprompted`
//! for a request made outside a prompt) as a real
//! child process, logging what the hub answered. `approve_turn` answers the
//! same tool's next request of the turn by itself, a request left past the
//! folder's timeout is rejected once and the agent goes on, and a batch
//! decides across two agents' sessions with a stale id failing alone.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use agent_hub::agents::acp::AcpAgent;
use agent_hub::hub::HubOptions;
use axum::http::StatusCode;
use common::*;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::decisions::{result_of, row};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scripted-acp-agent.mjs");
/// Each session's agent runs in its folder: its log lands there.
const LOG: &str = "received.jsonl";

/// A hub whose sessions talk to the scripted agent, with a database in `data`.
fn acp_hub(data: &tempfile::TempDir) -> TestHub {
    acp_hub_with(data, "two-calls")
}

fn acp_hub_with(data: &tempfile::TempDir, scenario: &str) -> TestHub {
    let command = format!("node '{SCRIPT}' {scenario} {LOG}");
    TestHub::with_options(HubOptions {
        acp: Some(Arc::new(AcpAgent::new(&command).unwrap())),
        store: Some(agent_hub::store::Store::open(data.path()).unwrap()),
        ..HubOptions::default()
    })
}

async fn open(hub: &TestHub) -> (tempfile::TempDir, PathBuf, String) {
    let (dir, folder) = project(None);
    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    (dir, folder, session)
}

/// The optionId the hub answered the agent's permission request for `tool_id` with.
async fn selected(folder: &Path, tool_id: &str) -> String {
    let id = format!("perm-{tool_id}");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(folder.join(LOG)).unwrap_or_default();
        let answer = text
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["message"].clone())
            .find(|message| message["id"] == id.as_str() && message.get("method").is_none());
        if let Some(answer) = answer {
            let outcome = &answer["result"]["outcome"];
            assert_eq!(outcome["outcome"], "selected", "{answer}");
            return outcome["optionId"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "{id} was never answered: {text}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn methods_sent(folder: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(folder.join(LOG)).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            serde_json::from_str::<Value>(line).unwrap()["message"]["method"].as_str().map(str::to_string)
        })
        .collect()
}

fn statuses(events: &[Value]) -> Vec<String> {
    events.iter().filter(|e| e["type"] == "result").map(|e| e["status"].as_str().unwrap().to_string()).collect()
}

fn carded(events: &[Value], tool_id: &str) -> bool {
    events.iter().any(|e| e["type"] == "tool_update" && e["tool_id"] == tool_id && e["choices"].is_array())
}

#[tokio::test]
async fn approve_turn_answers_the_agents_next_request_for_the_tool_and_the_next_prompt_asks_again() {
    let data = tempfile::tempdir().unwrap();
    let hub = acp_hub(&data);
    let (_dir, folder, session) = open(&hub).await;
    let paused = hub.prompt(&folder, "one").await.lines();
    assert_eq!(paused.last().unwrap()["pending"], json!(["call-1a"]), "{paused:?}");

    let reply = hub.decide(&session, json!({"toolId": "call-1a", "decision": "approve_turn"})).await;
    assert_eq!(reply.status, StatusCode::OK, "{:?}", reply.body);
    let rest = reply.lines();
    assert_eq!(statuses(&rest), ["success"], "{rest:?}");
    assert!(!carded(&rest, "call-1b"), "no card for the second call: {rest:?}");
    assert_eq!(selected(&folder, "call-1a").await, "allow-once");
    assert_eq!(selected(&folder, "call-1b").await, "allow-once", "the hub answered it on the grant");
    let rows = hub.settled_audit(&folder, &["call-1a", "call-1b"]).await;
    assert_eq!(row(&rows, "call-1a"), ("approved_turn", "user", Some("ran")));
    assert_eq!(row(&rows, "call-1b"), ("allowed", "turn_grant", Some("ran")));

    let next = hub.prompt(&folder, "two").await.lines();
    assert_eq!(next.last().unwrap()["pending"], json!(["call-2a"]), "the grant ended with its turn: {next:?}");
    assert!(carded(&next, "call-2a"));
}

#[tokio::test]
async fn an_acp_request_left_past_the_timeout_is_rejected_once_and_the_agent_goes_on() {
    let data = tempfile::tempdir().unwrap();
    let hub = acp_hub(&data);
    let (_dir, folder, session) = open(&hub).await;
    assert_eq!(hub.set_timeout(&folder, json!(1)).await.status, StatusCode::OK);
    let paused = hub.prompt(&folder, "one").await.lines();
    assert_eq!(paused.last().unwrap()["pending"], json!(["call-1a"]), "{paused:?}");

    // Both requests wait in turn, and both are answered "no decision".
    let detail = hub.wait_status(&session, "idle").await;
    let events = detail["events"].as_array().unwrap();
    let said = "No decision within 1 second; the call was not run.";
    for id in ["call-1a", "call-1b"] {
        assert_eq!(selected(&folder, id).await, "reject-once", "{id}");
        let expected = ("error".to_string(), Some("timed_out".to_string()), Some(said.to_string()));
        assert_eq!(result_of(events, id), expected, "one result, the hub's: {events:?}");
    }
    assert_eq!(statuses(events), ["waiting_approval", "waiting_approval", "success"], "{events:?}");
    assert_eq!(assistant_text(events), "went on");
    assert!(!methods_sent(&folder).contains(&"session/cancel".to_string()), "the agent went on by itself");
    let rows = hub.settled_audit(&folder, &["call-1a", "call-1b"]).await;
    assert_eq!(row(&rows, "call-1a"), ("timed_out", "hub", Some("skipped")));
    assert_eq!(row(&rows, "call-1b"), ("timed_out", "hub", Some("skipped")));
    // The agent's own "failed" for a call the hub answered is no second outcome.
    let db = rusqlite::Connection::open(data.path().join("agent-hub.db")).unwrap();
    let mut outcomes =
        db.prepare("SELECT tool_id, outcome FROM audit_outcomes WHERE session_id = ?1 ORDER BY id").unwrap();
    let outcomes: Vec<(String, String)> =
        outcomes.query_map([&session], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    let expected =
        [("call-1a", "skipped"), ("call-1b", "skipped")].map(|(id, outcome)| (id.to_string(), outcome.to_string()));
    assert_eq!(outcomes, expected);
}

#[tokio::test]
async fn a_batch_decides_two_agents_sessions_and_a_stale_id_fails_alone() {
    let data = tempfile::tempdir().unwrap();
    let hub = acp_hub(&data);
    let (_a_dir, a, a_session) = open(&hub).await;
    let (_b_dir, b, b_session) = open(&hub).await;
    assert_eq!(hub.prompt(&a, "one").await.lines().last().unwrap()["pending"], json!(["call-1a"]));
    assert_eq!(hub.prompt(&b, "one").await.lines().last().unwrap()["pending"], json!(["call-1a"]));
    assert_eq!(hub.get("/api/approvals").await.json()["waiting"].as_array().unwrap().len(), 2);

    let answer = hub
        .batch(json!([
            {"sessionId": a_session, "toolId": "call-1a", "decision": "approve"},
            {"sessionId": b_session, "toolId": "call-1b", "decision": "approve"},
            {"sessionId": b_session, "toolId": "call-1a", "decision": "approve_turn"},
        ]))
        .await;
    let results: Vec<(&str, bool, Option<&str>)> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["sessionId"].as_str().unwrap(), r["ok"].as_bool().unwrap(), r["error"].as_str()))
        .collect();
    assert_eq!(
        results,
        [
            (a_session.as_str(), true, None),
            (b_session.as_str(), false, Some("not_pending")),
            (b_session.as_str(), true, None)
        ],
        "{answer}"
    );
    assert_eq!(selected(&a, "call-1a").await, "allow-once");
    assert_eq!(selected(&b, "call-1a").await, "allow-once");
    // B's grant answers its next request; A's next request asks.
    assert_eq!(selected(&b, "call-1b").await, "allow-once");
    hub.wait_status(&b_session, "idle").await;
    let a_detail = hub.wait_status(&a_session, "waiting_approval").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut a_detail = a_detail;
    while a_detail["pendingApproval"]["toolId"] != "call-1b" {
        assert!(Instant::now() < deadline, "A never asked for call-1b: {a_detail}");
        tokio::time::sleep(Duration::from_millis(50)).await;
        a_detail = hub.session_detail(&a_session).await;
    }
    let waiting = hub.get("/api/approvals").await.json()["waiting"].clone();
    let listed: Vec<(&str, &str)> = waiting
        .as_array()
        .unwrap()
        .iter()
        .map(|item| (item["sessionId"].as_str().unwrap(), item["toolId"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, [(a_session.as_str(), "call-1b")], "{waiting}");
}

#[tokio::test]
async fn a_request_made_outside_a_prompt_and_left_past_the_timeout_is_rejected_and_the_session_is_free() {
    let data = tempfile::tempdir().unwrap();
    let hub = acp_hub_with(&data, "unprompted");
    let (_dir, folder, session) = open(&hub).await;
    assert_eq!(hub.set_timeout(&folder, json!(1)).await.status, StatusCode::OK);
    let first = hub.prompt(&folder, "hello").await.lines();
    assert_eq!(statuses(&first), ["success"], "{first:?}");

    assert_eq!(selected(&folder, "late-1").await, "no-once", "answered 'no decision' as a reject");
    let detail = hub.wait_status(&session, "idle").await;
    let events = detail["events"].as_array().unwrap();
    let said = "No decision within 1 second; the call was not run.";
    let expected = ("error".to_string(), Some("timed_out".to_string()), Some(said.to_string()));
    assert_eq!(result_of(events, "late-1"), expected, "{events:?}");
    assert_eq!(statuses(events), ["success", "waiting_approval", "success"], "{events:?}");
    let rows = hub.settled_audit(&folder, &["late-1"]).await;
    assert_eq!(row(&rows, "late-1"), ("timed_out", "hub", Some("skipped")));
    let next = hub.prompt(&folder, "again").await.lines();
    assert_eq!(statuses(&next), ["success"], "the session takes prompts again: {next:?}");
}
