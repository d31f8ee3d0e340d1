//! The habit counter (issue 27, item 4): the user's own approvals of a command
//! prefix or a file tool in one folder, read from the audit trail.

use protocol::audit::{AuditDecision, Decider};

use super::{DecisionRecord, Store};

const HERE: &str = "/home/me/project";

fn row(folder: &str, tool_name: &str, summary: &str, decision: AuditDecision, by: Decider) -> DecisionRecord {
    DecisionRecord {
        at_ms: 1_700_000_000_000,
        folder: folder.into(),
        session_id: "s1".into(),
        tool_id: format!("t-{summary}"),
        tool_name: tool_name.into(),
        summary: summary.into(),
        decision,
        decided_by: by,
        rule: None,
        device: None,
    }
}

fn approved(summary: &str) -> DecisionRecord {
    row(HERE, "run_shell_command", summary, AuditDecision::Approved, Decider::User)
}

async fn store_with(rows: Vec<DecisionRecord>) -> (tempfile::TempDir, std::sync::Arc<Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for row in rows {
        store.record_decision(row);
    }
    store.flush().await.unwrap();
    (dir, store)
}

#[tokio::test]
async fn a_command_counts_toward_every_prefix_it_starts_with_at_a_words_end() {
    let (_dir, store) = store_with(vec![
        approved("cargo test"),
        approved("cargo test -p server"),
        approved("cargo test --all && cargo build"),
        approved("cargo testing"),
        approved("cargo tes"),
        approved(" cargo test"),
        approved("cargo test⏎rm -rf x"),
        approved("cargo build"),
        approved("cargo test_%"),
    ])
    .await;
    let count = |prefix: &str| store.user_approvals(HERE, "run_shell_command", Some(prefix)).unwrap();
    assert_eq!(count("cargo test"), 3, "the prefix alone or followed by a space");
    assert_eq!(count("cargo"), 8, "every command of cargo's, `cargo test⏎…` too");
    assert_eq!(count("cargo build"), 1);
    assert_eq!(count("cargo tes"), 1, "only the command that is exactly it");
    assert_eq!(count("cargo test_"), 0, "no LIKE wildcards: `_` and `%` are plain characters");
    assert_eq!(count("cargo test_%"), 1);
    assert_eq!(count("npm test"), 0);
}

#[tokio::test]
async fn only_the_users_own_approvals_count() {
    let mut rows = Vec::new();
    for decision in AuditDecision::ALL {
        for by in Decider::ALL {
            rows.push(row(HERE, "run_shell_command", "git status", decision.clone(), by.clone()));
        }
    }
    let (_dir, store) = store_with(rows).await;
    // approved, approved_edited, approved_session, approved_turn, each by the user.
    assert_eq!(store.user_approvals(HERE, "run_shell_command", Some("git status")).unwrap(), 4);
}

#[tokio::test]
async fn the_count_is_per_folder_and_per_tool() {
    let (_dir, store) = store_with(vec![
        approved("git status"),
        row("/home/me/other", "run_shell_command", "git status", AuditDecision::Approved, Decider::User),
        row("/home/me/project/sub", "run_shell_command", "git status", AuditDecision::Approved, Decider::User),
        row(HERE, "write_file", "src/a.rs", AuditDecision::Approved, Decider::User),
        row(HERE, "write_file", "src/b.rs", AuditDecision::ApprovedEdited, Decider::User),
        row(HERE, "replace", "src/a.rs", AuditDecision::Approved, Decider::User),
        row("/home/me/other", "write_file", "src/a.rs", AuditDecision::Approved, Decider::User),
    ])
    .await;
    assert_eq!(store.user_approvals(HERE, "run_shell_command", Some("git status")).unwrap(), 1);
    assert_eq!(store.user_approvals("/home/me/other", "run_shell_command", Some("git status")).unwrap(), 1);
    assert_eq!(store.user_approvals(HERE, "write_file", None).unwrap(), 2, "any path: the rule allows the tool");
    assert_eq!(store.user_approvals(HERE, "replace", None).unwrap(), 1);
    assert_eq!(store.user_approvals(HERE, "run_shell_command", Some("src/a.rs")).unwrap(), 0);
    assert_eq!(store.user_approvals("/home/me", "write_file", None).unwrap(), 0, "not a parent's rows either");
}
