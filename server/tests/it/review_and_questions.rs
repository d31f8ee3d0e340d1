//! Reviewable file edits (diffs on `tool_use`, the user's own content written
//! instead) and the agent's questions (`ask_user`, `input_request`,
//! `POST /api/sessions/{id}/input`), over HTTP against the scripted model.

use crate::common;

use axum::http::StatusCode;
use common::fake_model::{call, calls, text, FakeModel};
use common::*;
use serde_json::{json, Value};

impl TestHub {
    async fn input(&self, session: &str, body: Value) -> Reply {
        self.post(&format!("/api/sessions/{session}/input"), body.to_string()).await
    }

    async fn detail(&self, session: &str) -> Value {
        self.get(&format!("/api/sessions/{session}")).await.json()
    }
}

fn ask(id: &str, prompt: &str, input_type: &str, choices: &[&str]) -> common::fake_model::Reply {
    call(id, "ask_user", json!({"prompt": prompt, "input_type": input_type, "choices": choices}))
}

#[tokio::test]
async fn edit_cards_carry_the_diff_and_bad_replacements_never_get_a_card() {
    let model = FakeModel::start(vec![
        calls(&[
            ("w", "write_file", json!({"file_path": "notes/new.md", "content": "# New\n"})),
            ("r", "replace", json!({"file_path": "lib.rs", "old_string": "one", "new_string": "uno"})),
            ("missing", "replace", json!({"file_path": "lib.rs", "old_string": "zzz", "new_string": "x"})),
            ("twice", "replace", json!({"file_path": "lib.rs", "old_string": "fn", "new_string": "pub fn"})),
        ]),
        text(&["done"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("lib.rs"), "fn one() {}\nfn two() {}\n").unwrap();

    let events = hub.prompt(&folder, "edit").await.lines();
    assert_eq!(types(&events), ["init", "message", "tool_use", "tool_use", "tool_use", "tool_use", "result"]);
    assert_eq!(events[2]["diff"], json!({"path": "notes/new.md", "old_text": "", "new_text": "# New\n"}));
    assert_eq!(
        events[3]["diff"],
        json!({"path": "lib.rs", "old_text": "fn one() {}\nfn two() {}\n", "new_text": "fn uno() {}\nfn two() {}\n"})
    );
    assert_eq!(events[6]["pending"], json!(["w", "r"]), "the bad replacements are not cards");
    let session = session_of(&events);
    assert_eq!(hub.detail(&session).await["pendingApproval"]["diff"]["path"], "notes/new.md");

    hub.decide(&session, json!({"toolId": "w", "decision": "approve"})).await;
    let rest = hub.decide(&session, json!({"toolId": "r", "decision": "approve"})).await.lines();
    let results: Vec<(&str, &str)> = rest
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .map(|e| (e["tool_id"].as_str().unwrap(), e["status"].as_str().unwrap()))
        .collect();
    assert_eq!(results, [("r", "success"), ("missing", "error"), ("twice", "error")]);
    let errors: Vec<&str> = rest.iter().filter_map(|e| e["error"]["type"].as_str()).collect();
    assert_eq!(errors, ["edit_no_match", "edit_not_unique"]);
    assert_eq!(std::fs::read_to_string(folder.join("lib.rs")).unwrap(), "fn uno() {}\nfn two() {}\n");
}

#[tokio::test]
async fn the_users_content_is_written_instead_and_the_model_is_told() {
    let model = FakeModel::start(vec![
        call("r", "replace", json!({"file_path": "lib.rs", "old_string": "one", "new_string": "uno"})),
        text(&["ok"]),
        call("s", "run_shell_command", json!({"command": "true"})),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    std::fs::write(folder.join("lib.rs"), "fn one() {}\n").unwrap();
    let session = session_of(&hub.prompt(&folder, "rename").await.lines());

    let mine = "fn eins() {}\n// kept by the user\n";
    let more = hub.decide(&session, json!({"toolId": "r", "decision": "edit", "modifiedContent": mine})).await.lines();
    assert_eq!(std::fs::read_to_string(folder.join("lib.rs")).unwrap(), mine);
    let result = &more[0];
    assert_eq!((result["type"].as_str(), result["status"].as_str()), (Some("tool_result"), Some("success")));
    let told = "Successfully applied user-modified edit to lib.rs. Note: the user modified your suggested changes \
                before accepting. Do not attempt to revert to your original suggestion.";
    assert_eq!(result["output"], told);
    assert_eq!(
        result["diff"],
        json!({"path": "lib.rs", "old_text": "fn one() {}\n", "new_text": mine}),
        "what was written"
    );
    let tool_message = model.last_messages().into_iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_message["content"], told);

    // Content goes with edit tools only, and not with a rejection.
    hub.prompt(&folder, "run").await;
    let shell = hub.decide(&session, json!({"toolId": "s", "decision": "approve", "modifiedContent": "x"})).await;
    assert_eq!((shell.status, shell.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"));
    let reject = hub.decide(&session, json!({"toolId": "s", "decision": "reject", "modifiedContent": "x"})).await;
    assert_eq!(reject.status, StatusCode::BAD_REQUEST);
    assert_eq!(hub.detail(&session).await["pendingApproval"]["toolId"], "s", "still waiting");
}

#[tokio::test]
async fn a_choice_question_pauses_the_turn_and_the_answer_goes_to_the_model() {
    let model = FakeModel::start(vec![
        ask("q1", "Which database?", "choice", &["SQLite", "Postgres"]),
        text(&["Using SQLite."]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "set up storage").await.lines();
    assert_eq!(types(&events), ["init", "message", "input_request", "result"]);
    assert_eq!(
        events[2],
        json!({"type": "input_request", "request_id": "q1", "input_type": "choice", "prompt": "Which database?",
               "choices": ["SQLite", "Postgres"], "seq": 3})
    );
    assert_eq!(events[3], json!({"type": "result", "status": "waiting_input", "seq": 4}));
    let session = session_of(&events);
    let detail = hub.detail(&session).await;
    assert_eq!(detail["status"], "waiting_input");
    assert_eq!(detail["pendingInput"]["requestId"], "q1");
    assert_eq!(detail["pendingInput"]["choices"], json!(["SQLite", "Postgres"]));
    assert!(detail["pendingApproval"].is_null());

    // Invalid answers change nothing.
    for bad in [
        json!({"index": 2, "value": "MySQL"}),
        json!({"index": 1, "value": "SQLite"}),
        json!("approve"),
        json!(""),
        json!({"index": "0", "value": "SQLite"}),
    ] {
        let reply = hub.input(&session, json!({"requestId": "q1", "response": bad})).await;
        assert_eq!((reply.status, reply.error_code().as_str()), (StatusCode::BAD_REQUEST, "bad_request"), "{bad}");
    }
    assert_eq!(hub.detail(&session).await["pendingInput"]["requestId"], "q1", "still pending");
    let stale = hub.input(&session, json!({"requestId": "nope", "response": "reject"})).await;
    assert_eq!((stale.status, stale.error_code().as_str()), (StatusCode::CONFLICT, "not_pending"));
    let busy = hub.prompt(&folder, "something else").await;
    assert_eq!((busy.status, busy.error_code().as_str()), (StatusCode::CONFLICT, "session_busy"));

    let more =
        hub.input(&session, json!({"requestId": "q1", "response": {"index": 0, "value": "SQLite"}})).await.lines();
    assert_eq!(shape(&more), ["tool_result", "text", "result"]);
    assert_eq!(more[0]["tool_id"], "q1");
    assert_eq!(more[0]["output"], "The user chose option 1 of 2: SQLite");
    assert_eq!(more[0]["seq"], 5);
    assert_eq!(more.last().unwrap()["status"], "success");
    let tool_message = model.last_messages().into_iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_message["content"], "The user chose option 1 of 2: SQLite");
    let again = hub.input(&session, json!({"requestId": "q1", "response": {"index": 0, "value": "SQLite"}})).await;
    assert_eq!(again.status, StatusCode::CONFLICT, "answered once");
    assert!(hub.detail(&session).await["pendingInput"].is_null());
}

#[tokio::test]
async fn several_questions_are_asked_one_after_another_and_reject_ends_the_turn() {
    let model = FakeModel::start(vec![
        calls(&[
            ("a", "ask_user", json!({"prompt": "Delete build/?", "input_type": "approval", "choices": ["Yes", "No"]})),
            ("b", "ask_user", json!({"prompt": "Name of the branch?", "input_type": "text"})),
            ("c", "ask_user", json!({"prompt": "And then?", "input_type": "text"})),
        ]),
        text(&["never"]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let events = hub.prompt(&folder, "clean up").await.lines();
    assert_eq!(types(&events), ["init", "message", "input_request", "result"]);
    assert_eq!(events[2]["request_id"], "a");
    let session = session_of(&events);

    let bad = hub.input(&session, json!({"requestId": "a", "response": "yes"})).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "approval takes approve or reject");
    let next = hub.input(&session, json!({"requestId": "a", "response": "approve"})).await.lines();
    assert_eq!(types(&next), ["tool_result", "input_request", "result"]);
    assert_eq!((next[1]["request_id"].as_str(), next[1]["input_type"].as_str()), (Some("b"), Some("text")));
    let blank = hub.input(&session, json!({"requestId": "b", "response": "   "})).await;
    assert_eq!(blank.status, StatusCode::BAD_REQUEST);

    let end = hub.input(&session, json!({"requestId": "b", "response": "reject"})).await.lines();
    assert_eq!(types(&end), ["tool_result", "tool_result", "result"]);
    assert_eq!((end[0]["tool_id"].as_str(), end[0]["status"].as_str()), (Some("b"), Some("skipped")));
    assert_eq!(end[1]["tool_id"], "c", "the question after a rejection is not asked");
    assert_eq!(end[2]["status"], "cancelled");
    assert_eq!(model.requests().len(), 1, "the model is not called again");
    let detail = hub.detail(&session).await;
    assert_eq!(detail["status"], "idle");
    assert_eq!(detail["events"].as_array().unwrap().len(), 10, "history kept");

    // The conversation goes on: the next prompt sees the answers and the rejection.
    model.push(text(&["ok"]));
    hub.prompt(&folder, "fine").await;
    let tool_results: Vec<String> = model
        .last_messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(tool_results[0], "The user approved (Yes).");
    assert!(tool_results[1].contains("rejected the question"));
}

#[tokio::test]
async fn questions_nobody_can_answer_are_rejected_with_an_error_saying_why() {
    let model = FakeModel::start(vec![
        ask("q", "Pick one", "choice", &[]),
        ask("r", "Slide it", "slider", &["a"]),
        call("s", "ask_user", json!({"input_type": "text"})),
        text(&["I will ask properly."]),
    ])
    .await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);

    let events = hub.prompt(&folder, "go").await.lines();
    assert_eq!(types(&events), ["init", "message", "error", "tool_result", "result"]);
    assert!(events[2]["message"].as_str().unwrap().contains("needs choices"), "{}", events[2]);
    assert_eq!(events[2]["code"], "invalid_question");
    assert_eq!(events[4]["status"], "cancelled");

    let events = hub.prompt(&folder, "again").await.lines();
    assert!(events[2]["message"].as_str().unwrap().contains("unknown input_type 'slider'"));

    // No prompt at all is a tool error the model sees, and the turn goes on.
    let events = hub.prompt(&folder, "once more").await.lines();
    assert_eq!(shape(&events), ["init", "message", "tool_use", "tool_result", "text", "result"]);
    assert_eq!(events[3]["error"]["type"], "invalid_arguments");
    assert_eq!(events.last().unwrap()["status"], "success");
}
