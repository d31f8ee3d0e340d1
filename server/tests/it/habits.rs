//! Rules from habits (issue 27, item 4) over HTTP with the built-in agent and
//! a scripted model: after the user approved commands of the same prefix three
//! times in a folder, the fourth card's `GET /api/habits` offers the rule, with
//! the prefix; another folder's approvals never count; asking saves nothing,
//! and saving still goes through `approve_always`. An ACP agent's calls (a
//! scripted agent) count and get the offer the same way.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use agent_hub::agents::acp::AcpAgent;
use agent_hub::hub::HubOptions;
use axum::http::StatusCode;
use common::fake_model::{call, text, FakeModel};
use common::*;
use serde_json::{json, Value};

impl TestHub {
    async fn habit(&self, session: &str, tool_id: &str) -> Value {
        let reply = self.get(&format!("/api/habits?sessionId={session}&toolId={tool_id}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
        reply.json()
    }

    /// Prompts until the card of `tool_id` shows; answers its session.
    async fn card(&self, folder: &Path, tool_id: &str) -> String {
        let waiting = self.prompt(folder, "go").await.lines();
        assert_eq!(waiting.last().unwrap()["status"], "waiting_approval", "{waiting:?}");
        assert!(waiting.iter().any(|event| event["type"] == "tool_use" && event["tool_id"] == tool_id), "{waiting:?}");
        session_of(&waiting)
    }

    async fn approve(&self, session: &str, tool_id: &str, decision: &str) {
        let done = self.decide(session, json!({"toolId": tool_id, "decision": decision})).await.lines();
        assert_eq!(done.last().unwrap()["status"], "success", "{done:?}");
    }

    async fn approve_always(&self, session: &str, tool_id: &str, prefix: &str) {
        let body = json!({"toolId": tool_id, "decision": "approve_always", "commandPrefix": prefix});
        let done = self.decide(session, body).await.lines();
        assert_eq!(done.last().unwrap()["status"], "success", "{done:?}");
    }

    async fn saved_rules(&self, folder: &Path) -> Vec<Value> {
        let reply = self.get(&format!("/api/rules?folderPath={}", urlencoding(folder))).await;
        let rules = reply.json()["rules"].as_array().unwrap().clone();
        rules.into_iter().filter(|rule| rule["origin"] == "hub").collect()
    }
}

#[tokio::test]
async fn three_approvals_of_a_prefix_offer_its_rule_on_the_fourth_card() {
    let model = FakeModel::start(vec![
        shell("h1", "ls -a"),
        text(&["Listed."]),
        shell("h2", "ls -l"),
        text(&["Listed."]),
        // Another folder's approval of the same prefix: never counted here.
        shell("o1", "ls -l"),
        text(&["Listed."]),
        shell("h3", "ls -la ."),
        text(&["Listed."]),
        shell("h4", "ls -1"),
        text(&["Listed."]),
        call("w1", "write_file", json!({"file_path": "notes.txt", "content": "hi\n"})),
    ])
    .await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    let (_other_dir, other) = project(None);

    let session = hub.card(&folder, "h1").await;
    let first = hub.habit(&session, "h1").await;
    assert_eq!(
        first,
        json!({"toolId": "h1", "toolName": "run_shell_command", "prefix": "ls", "approvals": 0, "offered": false,
               "withheld": "too_few"})
    );
    hub.approve(&session, "h1", "approve").await;
    hub.card(&folder, "h2").await;
    hub.approve(&session, "h2", "approve").await;
    let elsewhere = hub.card(&other, "o1").await;
    assert_eq!(hub.habit(&elsewhere, "o1").await["approvals"], 0, "this folder's approvals only");
    hub.approve(&elsewhere, "o1", "approve").await;

    hub.card(&folder, "h3").await;
    let third = hub.habit(&session, "h3").await;
    assert_eq!((third["approvals"].as_u64(), third["offered"].as_bool()), (Some(2), Some(false)), "{third}");
    // "Yes, for this turn" counts as well (the turn ends with the model's text).
    hub.approve(&session, "h3", "approve_turn").await;

    hub.card(&folder, "h4").await;
    let fourth = hub.habit(&session, "h4").await;
    assert_eq!(
        fourth,
        json!({"toolId": "h4", "toolName": "run_shell_command", "prefix": "ls", "approvals": 3, "offered": true})
    );
    assert!(hub.saved_rules(&folder).await.is_empty(), "offering saves nothing");
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await.json()["status"], "waiting_approval");

    // Saving goes through approve_always with the (edited) prefix and its checks.
    let broad = hub.decide(&session, json!({"toolId": "h4", "decision": "approve_always", "commandPrefix": "ls -1 x"}));
    assert_eq!(broad.await.status, StatusCode::BAD_REQUEST, "a prefix that does not begin the command");
    hub.approve_always(&session, "h4", "ls").await;
    let saved = hub.saved_rules(&folder).await;
    assert_eq!(saved.len(), 1, "{saved:?}");
    assert_eq!(saved[0]["commandPrefixes"], json!(["ls"]));

    // A file tool: the same tool in this folder, no prefix.
    hub.card(&folder, "w1").await;
    let file = hub.habit(&session, "w1").await;
    assert_eq!(
        file,
        json!({"toolId": "w1", "toolName": "write_file", "approvals": 0, "offered": false, "withheld": "too_few"})
    );

    // A stale or unknown call, an unknown session, a bad query.
    let stale = hub.get(&format!("/api/habits?sessionId={session}&toolId=h4")).await;
    assert_eq!((stale.status, stale.error_code().as_str()), (StatusCode::CONFLICT, "not_pending"));
    let unknown = hub.get("/api/habits?sessionId=nope&toolId=w1").await;
    assert_eq!((unknown.status, unknown.error_code().as_str()), (StatusCode::NOT_FOUND, "not_found"));
    for query in [format!("sessionId={session}"), "toolId=w1".to_string(), format!("sessionId={session}&toolId=")] {
        let bad = hub.get(&format!("/api/habits?{query}")).await;
        assert_eq!((bad.status, bad.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"), "{query}");
    }
}

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scripted-acp-agent.mjs");

/// Issue 27, item 5: an ACP agent's calls are in the same audit trail, under
/// Gemini CLI's names, so its card counts and offers alike.
#[tokio::test]
async fn an_acp_agents_approvals_count_and_its_fourth_card_gets_the_offer() {
    let (_dir, folder) = project(None);
    let data = tempfile::tempdir().unwrap();
    // In the folder: the agent's sandbox lets it write there and nowhere else.
    let log = folder.join("received.jsonl");
    // Each prompt: a permission request for `echo hi` (call-1), then the end of the turn.
    let command = format!("node '{SCRIPT}' reject-ends '{}'", log.display());
    let hub = TestHub::with_options(HubOptions {
        acp: Some(Arc::new(AcpAgent::new(&command).unwrap())),
        store: Some(agent_hub::store::Store::open(data.path()).unwrap()),
        ..HubOptions::default()
    });
    for round in 0..4u64 {
        let session = hub.card(&folder, "call-1").await;
        let habit = hub.habit(&session, "call-1").await;
        assert_eq!(
            (habit["prefix"].as_str(), habit["approvals"].as_u64(), habit["offered"].as_bool()),
            (Some("echo hi"), Some(round), Some(round == 3)),
            "{habit}"
        );
        if round < 3 {
            hub.approve(&session, "call-1", "approve").await;
        }
    }
}
