//! The ACP driver over HTTP with a real child process: a scripted agent
//! (tests/fixtures/scripted-acp-agent.mjs) that logs every message it receives,
//! so each test checks both what the user sees and what the hub told the agent.
//! Covers: a reject lets the agent end its turn (`session/cancel` only after the
//! grace), a permission request outside a prompt is a turn of its own, the
//! session is put in the agent's asking mode (and the user's pick holds), a
//! failed start quotes the agent's stderr, YOLO never answers an "always",
//! `agent_option` decisions, calls told in pieces, and unknown requests.

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_hub::agents::acp::AcpAgent;
use agent_hub::hub::HubOptions;
use axum::http::StatusCode;
use common::*;
use serde_json::{json, Value};
use tokio::time::Instant;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scripted-acp-agent.mjs");

/// A hub whose ACP agent is the scripted one in `scenario`, and its project folder.
pub(crate) struct Scripted {
    pub(crate) hub: Arc<TestHub>,
    pub(crate) folder: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Scripted {
    pub(crate) fn start(scenario: &str) -> Self {
        let (dir, folder) = project(None);
        let log = folder.join("received.jsonl");
        let command = format!("node '{SCRIPT}' {scenario} '{}'", log.display());
        let hub = Arc::new(TestHub::with_options(HubOptions {
            acp: Some(Arc::new(AcpAgent::new(&command).unwrap())),
            ..HubOptions::default()
        }));
        Self { hub, folder, log, _dir: dir }
    }

    pub(crate) async fn session(&self) -> String {
        self.hub.config(&self.folder).await.json()["sessionId"].as_str().unwrap().to_string()
    }

    pub(crate) async fn prompt(&self, message: &str) -> Vec<Value> {
        self.hub.prompt(&self.folder, message).await.lines()
    }

    async fn decide(&self, session: &str, body: Value) -> Reply {
        self.hub.decide(session, body).await
    }

    /// Everything the agent received so far: `{at, message}`, in order.
    fn received(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// The methods the hub sent (requests and notifications), in order.
    fn methods(&self) -> Vec<String> {
        self.received().iter().filter_map(|entry| entry["message"]["method"].as_str().map(str::to_string)).collect()
    }

    /// What the agent received for `method`, with when.
    pub(crate) fn sent(&self, method: &str) -> Vec<Value> {
        self.received().into_iter().filter(|entry| entry["message"]["method"] == method).collect()
    }

    /// The hub's answer to the agent's request `id`, with when.
    fn answer(&self, id: &str) -> Option<Value> {
        self.received()
            .into_iter()
            .find(|entry| entry["message"]["id"] == id && entry["message"].get("method").is_none())
    }

    /// The optionId the hub selected for the agent's permission request on
    /// `tool_id` (waited for: the answer may still be on its way to the agent).
    async fn selected(&self, tool_id: &str) -> String {
        let id = format!("perm-{tool_id}");
        let answer = self
            .wait_received(&format!("an answer to {id}"), |received| {
                received.iter().find(|entry| entry["message"]["id"] == id.as_str()).cloned()
            })
            .await;
        let outcome = &answer["message"]["result"]["outcome"];
        assert_eq!(outcome["outcome"], "selected", "the request was not answered with an option: {answer}");
        outcome["optionId"].as_str().unwrap().to_string()
    }

    /// Waits until the agent has received something that `found` picks.
    async fn wait_received(&self, what: &str, found: impl Fn(&[Value]) -> Option<Value>) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(entry) = found(&self.received()) {
                return entry;
            }
            assert!(Instant::now() < deadline, "the agent never received {what}: {:?}", self.received());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(crate) async fn detail(&self, session: &str) -> Value {
        self.hub.get(&format!("/api/sessions/{session}")).await.json()
    }

    pub(crate) async fn events(&self, session: &str) -> Vec<Value> {
        self.detail(session).await["events"].as_array().unwrap().clone()
    }

    pub(crate) async fn wait_status(&self, session: &str, status: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let detail = self.detail(session).await;
            if detail["status"] == status {
                return detail;
            }
            assert!(Instant::now() < deadline, "the session never became {status}: {detail}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn set_mode(&self, session: &str, mode_id: &str) -> Reply {
        self.hub.post(&format!("/api/sessions/{session}/mode"), json!({ "modeId": mode_id }).to_string()).await
    }

    async fn agent_modes(&self) -> Value {
        self.hub.config(&self.folder).await.json()["agentModes"].clone()
    }
}

fn last(events: &[Value]) -> &Value {
    events.last().unwrap_or_else(|| panic!("no events"))
}

fn assert_paused_on(events: &[Value], tool_id: &str) {
    let result = last(events);
    assert_eq!(result["type"], "result", "{events:?}");
    assert_eq!(result["status"], "waiting_approval", "{events:?}");
    assert_eq!(result["pending"], json!([tool_id]), "{events:?}");
}

fn of_call<'a>(events: &'a [Value], kind: &str, tool_id: &str) -> Vec<&'a Value> {
    events.iter().filter(|event| event["type"] == kind && event["tool_id"] == tool_id).collect()
}

fn errors<'a>(events: &'a [Value], code: &str) -> Vec<&'a Value> {
    events.iter().filter(|event| event["type"] == "error" && event["code"] == code).collect()
}

/// 1a. Claude Code after a reject: reports the call failed and ends its prompt at once.
#[tokio::test]
async fn a_reject_lets_the_agent_end_its_turn_and_no_cancel_follows() {
    let agent = Scripted::start("reject-ends");
    let session = agent.session().await;
    let paused = agent.prompt("say hi").await;
    assert_paused_on(&paused, "call-1");

    let ended = agent.decide(&session, json!({"toolId": "call-1", "decision": "reject"})).await.lines();
    assert_eq!(last(&ended)["status"], "cancelled", "{ended:?}");
    assert_eq!(agent.selected("call-1").await.as_str(), "reject-once");

    // Past the grace: the agent ended its turn, so nothing is cancelled.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    assert!(!agent.methods().contains(&"session/cancel".to_string()), "{:?}", agent.methods());

    let events = agent.events(&session).await;
    let results = of_call(&events, "tool_result", "call-1");
    assert_eq!(results.len(), 1, "one result per call, although the agent reported it failed: {results:?}");
    assert_eq!(results[0]["status"], "skipped");
    assert_eq!(agent.detail(&session).await["status"], "idle");
}

/// 1b. An agent that goes on after a reject gets `session/cancel`, after the grace.
#[tokio::test]
async fn a_rejected_turn_that_does_not_end_is_cancelled_after_the_grace() {
    let agent = Scripted::start("reject-stays");
    let session = agent.session().await;
    assert_paused_on(&agent.prompt("say hi").await, "call-1");

    let started = Instant::now();
    let ended = agent.decide(&session, json!({"toolId": "call-1", "decision": "reject"})).await.lines();
    assert_eq!(last(&ended)["status"], "cancelled", "{ended:?}");
    assert!(started.elapsed() >= Duration::from_secs(2), "ended after {:?}", started.elapsed());

    let answered = agent.answer("perm-call-1").expect("the request was answered");
    assert_eq!(answered["message"]["result"]["outcome"]["optionId"], "reject-once");
    let cancels = agent.sent("session/cancel");
    assert_eq!(cancels.len(), 1, "{:?}", agent.methods());
    let waited = cancels[0]["at"].as_i64().unwrap() - answered["at"].as_i64().unwrap();
    assert!((2000..8000).contains(&waited), "session/cancel came {waited} ms after the reject");
    let events = agent.events(&session).await;
    let results = of_call(&events, "tool_result", "call-1");
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0]["status"], "skipped");
}

/// 1c. The hub's own `session/cancel` after the grace is not the user's first
/// Stop: the user's Stop asks again, and only a second Stop ends the process
/// (docs/working.md: "An ACP agent that does not stop when asked is ended by a second Stop").
#[tokio::test]
async fn the_users_first_stop_after_the_grace_asks_again_and_does_not_kill() {
    let agent = Scripted::start("reject-slow");
    let session = agent.session().await;
    assert_paused_on(&agent.prompt("say hi").await, "call-1");
    let rejected = tokio::spawn({
        let (hub, session) = (agent.hub.clone(), session.clone());
        async move { hub.decide(&session, json!({"toolId": "call-1", "decision": "reject"})).await.lines() }
    });
    agent
        .wait_received("the grace's session/cancel", |received| {
            received.iter().find(|entry| entry["message"]["method"] == "session/cancel").cloned()
        })
        .await;

    let stopped = agent.hub.post(&format!("/api/sessions/{session}/cancel"), "").await.lines();
    assert!(errors(&stopped, "agent_killed").is_empty(), "one Stop killed the agent: {stopped:?}");
    assert_eq!(last(&stopped)["status"], "cancelled", "{stopped:?}");
    assert_eq!(agent.sent("session/cancel").len(), 2, "{:?}", agent.methods());
    assert_eq!(last(&rejected.await.unwrap())["status"], "cancelled");
}

/// 2. A request while no prompt runs: a card of its own, said as such.
///
/// In YOLO too: outside a prompt the agent acts on its own, so the user decides.
async fn an_unprompted_request(decision: &str, option: &str, status: &str, yolo: bool) {
    let agent = Scripted::start("unprompted");
    let session = agent.session().await;
    if yolo {
        assert_eq!(agent.hub.set_yolo(&agent.folder, true).await.json()["yoloMode"], true);
    }
    let first = agent.prompt("hello").await;
    assert_eq!(last(&first)["status"], "success", "{first:?}");

    let detail = agent.wait_status(&session, "waiting_approval").await;
    assert_eq!(detail["pendingApproval"]["toolId"], "late-1", "{detail}");
    let events = detail["events"].as_array().unwrap();
    let ended = events.iter().position(|event| event["type"] == "result").unwrap();
    let after: Vec<Value> = events[ended + 1..].to_vec();
    let warned = errors(&after, "unprompted_request");
    assert_eq!(warned.len(), 1, "{after:?}");
    assert_eq!(warned[0]["severity"], "warning");
    assert_eq!(of_call(&after, "tool_use", "late-1").len(), 1, "{after:?}");
    assert!(of_call(&after, "tool_update", "late-1").iter().any(|update| update["choices"].is_array()), "{after:?}");
    assert_paused_on(&after, "late-1");
    assert!(agent.answer("perm-late-1").is_none(), "answered before the user decided");

    let decided = agent.decide(&session, json!({"toolId": "late-1", "decision": decision})).await.lines();
    assert_eq!(last(&decided)["status"], status, "{decided:?}");
    assert_eq!(agent.selected("late-1").await.as_str(), option);
    assert_eq!(agent.detail(&session).await["status"], "idle");
}

#[tokio::test]
async fn approving_a_request_made_outside_a_prompt_answers_allow_once_and_succeeds() {
    an_unprompted_request("approve", "yes-once", "success", false).await;
}

#[tokio::test]
async fn in_yolo_a_request_made_outside_a_prompt_still_waits_for_the_user() {
    an_unprompted_request("approve", "yes-once", "success", true).await;
}

#[tokio::test]
async fn rejecting_a_request_made_outside_a_prompt_answers_reject_and_cancels() {
    an_unprompted_request("reject", "no-once", "cancelled", false).await;
}

/// 3. The session is put in the agent's asking mode; the user's pick holds.
#[tokio::test]
async fn the_session_is_put_in_the_asking_mode_and_the_user_picks_another() {
    let agent = Scripted::start("modes");
    let session = agent.session().await;
    let early = agent.set_mode(&session, "yolo").await;
    assert_eq!((early.status, early.error_code()), (StatusCode::CONFLICT, "agent_not_started".to_string()));

    let events = agent.prompt("hello").await;
    assert_eq!(last(&events)["status"], "success", "{events:?}");
    let methods = agent.methods();
    let set_mode = methods.iter().position(|method| method == "session/set_mode").expect("set_mode sent");
    let prompt = methods.iter().position(|method| method == "session/prompt").unwrap();
    assert!(set_mode < prompt, "set_mode after the prompt: {methods:?}");
    assert_eq!(agent.sent("session/set_mode")[0]["message"]["params"]["modeId"], "default");

    let modes = agent.agent_modes().await;
    assert_eq!(modes["currentModeId"], "default", "{modes}");
    assert_eq!(modes["chosenByUser"], false);
    let asks: Vec<(&str, &Value)> =
        modes["modes"].as_array().unwrap().iter().map(|mode| (mode["id"].as_str().unwrap(), &mode["asks"])).collect();
    assert_eq!(
        asks,
        [("plan", &json!(true)), ("default", &json!(true)), ("auto", &json!(false)), ("yolo", &json!(false))]
    );

    let picked = agent.set_mode(&session, "yolo").await;
    assert_eq!(picked.status, StatusCode::OK, "{:?}", picked.body);
    let config = picked.json();
    assert_eq!(config["agentModes"]["currentModeId"], "yolo", "{config}");
    assert_eq!(config["agentModes"]["chosenByUser"], true);
    let asked: Vec<Value> =
        agent.sent("session/set_mode").iter().map(|entry| entry["message"]["params"]["modeId"].clone()).collect();
    assert_eq!(asked, [json!("default"), json!("yolo")]);

    // The agent's echo of the user's pick is not put back.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(agent.sent("session/set_mode").len(), 2, "{:?}", agent.methods());
    assert_eq!(agent.agent_modes().await["currentModeId"], "yolo");

    let unknown = agent.set_mode(&session, "nope").await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    let message = unknown.json()["message"].as_str().unwrap().to_string();
    assert!(message.contains("nope") && message.contains("plan, default, auto, yolo"), "{message}");
    assert_eq!(agent.sent("session/set_mode").len(), 2);
    let modes = agent.agent_modes().await;
    assert_eq!((&modes["currentModeId"], &modes["chosenByUser"]), (&json!("yolo"), &json!(true)));
    assert!(errors(&agent.events(&session).await, "mode_skips_asking").is_empty());
}

#[tokio::test]
async fn an_agent_that_switches_itself_to_a_mode_that_skips_asking_is_put_back() {
    let agent = Scripted::start("mode-self-switch");
    let events = agent.prompt("hello").await;
    assert_eq!(last(&events)["status"], "success", "{events:?}");

    let asked: Vec<Value> =
        agent.sent("session/set_mode").iter().map(|entry| entry["message"]["params"]["modeId"].clone()).collect();
    assert_eq!(asked, [json!("default"), json!("default")], "set at start, then put back");
    let warned = errors(&events, "mode_skips_asking");
    assert_eq!(warned.len(), 1, "{events:?}");
    assert_eq!(warned[0]["severity"], "warning");
    assert!(warned[0]["message"].as_str().unwrap().contains("yolo"));
    let modes = agent.agent_modes().await;
    assert_eq!((&modes["currentModeId"], &modes["chosenByUser"]), (&json!("default"), &json!(false)), "{modes}");
}

/// 4. Why it failed is in the error, in the agent's own words.
#[tokio::test]
async fn a_failed_start_quotes_the_agents_stderr() {
    let agent = Scripted::start("stderr-fail");
    let events = agent.prompt("hello").await;
    let error = events.iter().find(|event| event["type"] == "error").unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(error["code"], "agent_unavailable", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("--dangerously-skip-permissions cannot be used with root"), "{message}");
    assert!(message.contains("Query closed before response received"), "{message}");
    assert_eq!(last(&events)["status"], "error");
}

/// 5. YOLO answers `allow_once`, never an "always" the agent would keep by itself.
#[tokio::test]
async fn yolo_answers_allow_once_and_never_allow_always() {
    let agent = Scripted::start("yolo");
    let session = agent.session().await;
    let yolo = agent.hub.set_yolo(&agent.folder, true).await;
    assert_eq!(yolo.json()["yoloMode"], true, "{:?}", yolo.body);

    let paused = agent.prompt("two calls").await;
    assert_eq!(agent.selected("call-a").await.as_str(), "allow-once", "YOLO answers the agent's allow_once");
    assert_paused_on(&paused, "call-b");
    assert!(agent.answer("perm-call-b").is_none(), "YOLO answered an allow_always");
    let card = of_call(&paused, "tool_update", "call-b");
    let choices = card.iter().find_map(|update| update["choices"].as_array()).expect("the card's choices");
    let kinds: Vec<&Value> = choices.iter().map(|choice| &choice["kind"]).collect();
    assert_eq!(kinds, [&json!("allow_always"), &json!("reject_once")]);
    assert!(of_call(&paused, "tool_update", "call-a").iter().all(|update| update["choices"].is_null()), "no card");
    assert_eq!(agent.detail(&session).await["status"], "waiting_approval");

    // A plain approve would need an allow_once: never widened to the agent's "always".
    let approve = agent.decide(&session, json!({"toolId": "call-b", "decision": "approve"})).await;
    assert_eq!(approve.status, StatusCode::BAD_REQUEST, "{:?}", approve.body);
    assert!(agent.answer("perm-call-b").is_none());

    let ended = agent.decide(&session, json!({"toolId": "call-b", "decision": "reject"})).await.lines();
    assert_eq!(last(&ended)["status"], "cancelled", "{ended:?}");
    assert_eq!(agent.selected("call-b").await.as_str(), "reject-b");
}

/// 6. `agent_option` answers exactly the option picked.
#[tokio::test]
async fn an_agent_option_is_answered_as_it_is_and_an_unknown_one_changes_nothing() {
    let agent = Scripted::start("options");
    let session = agent.session().await;
    assert_paused_on(&agent.prompt("six").await, "call-6");

    let unknown =
        agent.decide(&session, json!({"toolId": "call-6", "decision": "agent_option", "optionId": "nope"})).await;
    assert_eq!((unknown.status, unknown.error_code()), (StatusCode::BAD_REQUEST, "bad_request".to_string()));
    let missing = agent.decide(&session, json!({"toolId": "call-6", "decision": "agent_option"})).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(agent.answer("perm-call-6").is_none(), "an unknown option was answered");
    let detail = agent.detail(&session).await;
    assert_eq!(detail["status"], "waiting_approval");
    assert_eq!(detail["pendingApproval"]["toolId"], "call-6");

    let chosen =
        agent.decide(&session, json!({"toolId": "call-6", "decision": "agent_option", "optionId": "always"})).await;
    assert_eq!(chosen.status, StatusCode::OK, "{:?}", chosen.body);
    let ended = chosen.lines();
    assert_eq!(last(&ended)["status"], "success", "{ended:?}");
    assert_eq!(agent.selected("call-6").await.as_str(), "always");
    let results = of_call(&ended, "tool_result", "call-6");
    assert_eq!(results.len(), 1, "{ended:?}");
    assert_eq!((&results[0]["status"], &results[0]["output"]), (&json!("success"), &json!("six")));
}

#[tokio::test]
async fn the_built_in_agent_refuses_agent_option() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let session = hub.config(&folder).await.json()["sessionId"].as_str().unwrap().to_string();
    let reply = hub.decide(&session, json!({"toolId": "t1", "decision": "agent_option", "optionId": "allow"})).await;
    assert_eq!((reply.status, reply.error_code()), (StatusCode::BAD_REQUEST, "bad_request".to_string()));
    assert!(reply.json()["message"].as_str().unwrap().contains("built-in agent"));
}

/// 7. A call announced bare, then told: shown once it says what it does.
#[tokio::test]
async fn a_call_told_in_pieces_is_shown_once_with_its_command_then_carded() {
    let agent = Scripted::start("pieces");
    let session = agent.session().await;
    let paused = agent.prompt("say hi").await;
    assert_paused_on(&paused, "call-7");

    let uses = of_call(&paused, "tool_use", "call-7");
    assert_eq!(uses.len(), 1, "{paused:?}");
    assert_eq!(uses[0]["parameters"]["command"], "echo hi", "{paused:?}");
    assert_eq!(uses[0]["tool_name"], "Bash", "the agent's own tool name, not its title");
    assert_eq!(uses[0]["kind"], "execute");
    let cards: Vec<&Value> =
        of_call(&paused, "tool_update", "call-7").into_iter().filter(|update| update["choices"].is_array()).collect();
    assert_eq!(cards.len(), 1, "{paused:?}");
    assert_eq!(cards[0]["parameters"]["command"], "echo hi");
    assert_eq!(cards[0]["choices"].as_array().unwrap().len(), 3);
    let detail = agent.detail(&session).await;
    assert_eq!(detail["pendingApproval"]["parameters"]["command"], "echo hi", "{detail}");

    let ended = agent.decide(&session, json!({"toolId": "call-7", "decision": "approve"})).await.lines();
    assert_eq!(last(&ended)["status"], "success", "{ended:?}");
    assert_eq!(agent.selected("call-7").await.as_str(), "allow-once");
    let events = agent.events(&session).await;
    assert_eq!(of_call(&events, "tool_use", "call-7").len(), 1, "{events:?}");
    let results = of_call(&events, "tool_result", "call-7");
    assert_eq!(results.len(), 1);
    assert_eq!((&results[0]["status"], &results[0]["output"]), (&json!("success"), &json!("hi")));
}

/// 8. A request the hub does not know is answered with an error; the turn goes on.
#[tokio::test]
async fn an_unknown_request_from_the_agent_gets_an_error_and_the_turn_goes_on() {
    let agent = Scripted::start("unknown-request");
    let events = agent.prompt("hello").await;
    assert_eq!(last(&events)["status"], "success", "{events:?}");
    assert_eq!(assistant_text(&events), "asking the client and going on");
    let answer = agent
        .wait_received("an answer to craft/drainMidTurnQueue", |received| {
            received.iter().find(|entry| entry["message"]["id"] == "drain-1").cloned()
        })
        .await;
    let message = &answer["message"];
    assert!(message["error"]["code"].is_i64(), "not a JSON-RPC error: {message}");
    assert!(message.get("result").is_none(), "{message}");
}
