//! Issue 39, items 1 and 2, over HTTP with the built-in agent and a scripted
//! model: where bash would read a command otherwise than the hub's parser,
//! the command asks, in YOLO too, and a deny rule's program never runs
//! unseen; what runs without a card runs as the hub's rendering of it.

use crate::common;

use axum::http::StatusCode;
use common::fake_model::{text, FakeModel};
use common::*;
use serde_json::json;

/// The tricks that ran `touch` past a deny rule (and an allow of `git status`).
const TRICKS: [(&str, &str); 4] = [
    ("t1", "git status \\\t#;touch tab.txt"),
    ("t2", "git status \\ #;touch blank.txt"),
    ("t3", "git status\n\\touch line.txt"),
    ("t4", "cat <<E\"O\"F\ntouch heredoc.txt\nEOF\nE\"O\"F"),
];

#[tokio::test]
async fn what_bash_reads_otherwise_asks_in_yolo_and_plain_commands_run_as_rendered() {
    let mut script: Vec<_> = TRICKS.iter().map(|(id, command)| shell(id, command)).collect();
    script.push(shell("plain", "printf '%s|%s\\n' \"a b\" $'c\\td' > out.txt"));
    script.push(text(&["done"]));
    let model = FakeModel::start(script).await;
    let data = tempfile::tempdir().unwrap();
    let hub = hub_with_store(&model, &data);
    let (_dir, folder) = project(None);
    policy(
        &folder,
        "team.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"touch\"\ndecision = \"deny\"\npriority = 100\n",
    );
    assert_eq!(hub.set_yolo(&folder, true).await.status, StatusCode::OK);

    for (id, command) in TRICKS {
        let events = hub.prompt(&folder, "go on").await.lines();
        let card = events.iter().find(|event| event["type"] == "tool_use" && event["tool_id"] == id);
        let card = card.unwrap_or_else(|| panic!("{command:?}: {events:?}"));
        assert_eq!(events.last().unwrap()["status"], "waiting_approval", "{command:?} ran without a card: {events:?}");
        let why = card["policy"]["message"].as_str().unwrap_or_default();
        assert!(why.contains("bash"), "{command:?}: the card says why: {card}");
        hub.decide(&session_of(&events), json!({"toolId": id, "decision": "reject"})).await;
    }
    for file in ["tab.txt", "blank.txt", "line.txt", "heredoc.txt"] {
        assert!(!folder.join(file).exists(), "{file} was made");
    }

    let events = hub.prompt(&folder, "write it").await.lines();
    assert_eq!(events.last().unwrap()["status"], "success", "{events:?}");
    assert_eq!(std::fs::read_to_string(folder.join("out.txt")).unwrap(), "a b|c\td\n");
    let audit = hub.audit_of(&folder).await;
    let row = audit.iter().find(|row| row["toolId"] == "plain").expect("the plain command is audited");
    assert_eq!((row["decision"].as_str(), row["outcome"].as_str()), (Some("allowed"), Some("ran")), "{row}");
}
