//! Writes a session of N events into a data dir, through the hub's own store:
//! prompts, read_file calls with their results, and markdown answers, as the
//! built-in agent would log them. Used by bench/open_session.mjs.
//!
//! `cargo run -p agent-hub-server --example seed_session -- DATA_DIR FOLDER N`

use std::path::PathBuf;

use agent_hub::agents::log::EventLog;
use agent_hub::registry::default_session_id;
use agent_hub::store::{SessionRow, Store};
use protocol::api::SessionStatus;
use protocol::events::{AgentEvent, ResultStatus, Role, ToolKind, ToolStatus};
use serde_json::json;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [data_dir, folder, count] = args.as_slice() else {
        eprintln!("usage: seed_session DATA_DIR FOLDER EVENTS");
        std::process::exit(2);
    };
    let folder = PathBuf::from(folder).canonicalize().expect("the folder exists");
    let count: u64 = count.parse().expect("EVENTS is a number");
    let store = Store::open(&PathBuf::from(data_dir)).expect("the store opens");
    let id = default_session_id(&folder);
    let mut events: Vec<AgentEvent> = Vec::new();
    let mut turn = 0;
    let mut last_answer = String::new();
    // Whole turns (55 events each) until there are at least `count` events.
    while (events.len() as u64) < count {
        events.push(AgentEvent::Init { session_id: id.clone(), model: "seeded".into() });
        events.push(AgentEvent::Message {
            role: Role::User,
            content: format!("Read the notes, turn {turn}."),
            delta: false,
        });
        for call in 0..20 {
            let tool_id = format!("c{turn}_{call}");
            events.push(AgentEvent::ToolUse {
                tool_name: "read_file".into(),
                tool_id: tool_id.clone(),
                parameters: json!({"file_path": "notes.txt"}),
                kind: ToolKind::Read,
                diff: None,
                policy: None,
            });
            events.push(AgentEvent::ToolResult {
                tool_id,
                status: ToolStatus::Success,
                output: Some("some notes\n".into()),
                error: None,
                diff: None,
            });
        }
        last_answer = format!("Read the **notes** 20 times; they say `some notes`. Turn {turn} done.");
        for piece in last_answer.split_inclusive(' ') {
            events.push(AgentEvent::Message { role: Role::Assistant, content: piece.to_string(), delta: true });
        }
        events.push(AgentEvent::Result { status: ResultStatus::Success, pending: None });
        turn += 1;
    }
    let seq = events.len();
    // Through an event log, which saves each event as the hub does.
    let log = EventLog::restored(Vec::new(), Some((store.clone(), id.clone())));
    for event in events {
        log.push(event);
    }
    store.save_session(SessionRow {
        id: id.clone(),
        folder: folder.clone(),
        status: SessionStatus::Idle,
        yolo_override: None,
        pending_count: 0,
        title: None,
        agent: None,
        created_at_ms: 1,
        updated_at_ms: 2,
        worktree: None,
    });
    store.flush().await.expect("the session is saved");
    println!("{{\"sessionId\":\"{id}\",\"events\":{seq},\"turns\":{turn},\"lastAnswer\":\"{last_answer}\"}}");
}
