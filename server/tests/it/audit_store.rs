//! The store's rules saved in the hub and its audit trail: the migration from
//! a v1 database, rules that survive a restart and fail loudly, the join of
//! decisions with their outcomes, the filters, and rows the database itself
//! keeps append-only.

use std::path::Path;
use std::time::{Duration, Instant};

use agent_hub::store::{AuditFilter, DecisionRecord, NewSavedRule, OutcomeRecord, Store, StoreError, AUDIT_LIMIT};
use protocol::api::PolicyDecision;
use protocol::audit::{AuditDecision, AuditEntry, Decider, Outcome};
use rusqlite::Connection;

fn database(dir: &Path) -> Connection {
    Connection::open(dir.join("agent-hub.db")).unwrap()
}

fn user_version(dir: &Path) -> i64 {
    database(dir).pragma_query_value(None, "user_version", |row| row.get(0)).unwrap()
}

fn rule(folder: &str, tool: &str, prefix: Option<&str>) -> NewSavedRule {
    NewSavedRule {
        folder: folder.into(),
        tool_name: tool.into(),
        command_prefix: prefix.map(str::to_string),
        created_at_ms: 1_700_000_000_000,
        session_id: "s1".into(),
        tool_id: "c1".into(),
    }
}

fn decision(at_ms: u64, folder: &str, session: &str, tool_id: &str, decision: &str) -> DecisionRecord {
    DecisionRecord {
        at_ms,
        folder: folder.into(),
        session_id: session.into(),
        tool_id: tool_id.into(),
        tool_name: "run_shell_command".into(),
        summary: format!("echo {tool_id}"),
        decision: AuditDecision::from_word(decision),
        decided_by: Decider::User,
        rule: None,
        device: None,
    }
}

fn outcome(at_ms: u64, session: &str, tool_id: &str, outcome: &str) -> OutcomeRecord {
    OutcomeRecord { at_ms, session_id: session.into(), tool_id: tool_id.into(), outcome: Outcome::from_word(outcome) }
}

/// Each entry as (tool id, decision, outcome, outcome time): what the join decides.
fn joined(entries: &[AuditEntry]) -> Vec<(String, String, Option<String>, Option<u64>)> {
    entries
        .iter()
        .map(|e| (e.tool_id.clone(), e.decision.to_string(), e.outcome.as_ref().map(|o| o.to_string()), e.outcome_at))
        .collect()
}

fn row(tool_id: &str, decision: &str, outcome: Option<(&str, u64)>) -> (String, String, Option<String>, Option<u64>) {
    (tool_id.into(), decision.into(), outcome.map(|(o, _)| o.to_string()), outcome.map(|(_, at)| at))
}

/// Another connection holding the write lock past the busy timeout makes a
/// write fail as a full or read-only disk would.
fn lock(dir: &Path) -> Connection {
    let blocker = database(dir);
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    blocker
}

/// How many migrations there are: `user_version` after all of them ran.
fn migrations() -> i64 {
    let dir = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations")).unwrap();
    dir.filter(|entry| entry.as_ref().unwrap().path().extension().is_some_and(|ext| ext == "sql")).count() as i64
}

#[tokio::test]
async fn a_v1_database_is_migrated_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    {
        let old = database(dir.path());
        old.execute_batch(include_str!("../../migrations/001_init.sql")).unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
        old.execute("INSERT INTO sessions VALUES ('s1', '/tmp/project', 'idle', NULL, 0, 1, 2)", []).unwrap();
        old.execute(
            "INSERT INTO events VALUES ('s1', 1, '{\"type\":\"message\",\"role\":\"user\",\"content\":\"hi\",\"delta\":false}')",
            [],
        )
        .unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(user_version(dir.path()), migrations());
    let sessions = store.sessions().unwrap();
    assert_eq!((sessions.len(), sessions[0].id.as_str(), sessions[0].updated_at_ms), (1, "s1", 2));
    assert_eq!(sessions[0].title, None, "a session from before titles has none");
    assert_eq!(store.events("s1").unwrap().len(), 1, "the old events read as before");
    assert_eq!(store.saved_rules(Path::new("/tmp/project")).unwrap(), vec![]);
    assert_eq!(store.audit(&AuditFilter::default()).unwrap(), vec![]);
    let saved = store.save_rule(rule("/tmp/project", "read_file", None)).await.unwrap();
    drop(store);

    let store = Store::open(dir.path()).unwrap();
    assert_eq!(user_version(dir.path()), migrations(), "a migration runs once");
    assert_eq!(store.sessions().unwrap().len(), 1);
    assert_eq!(store.saved_rules(Path::new("/tmp/project")).unwrap(), vec![saved]);
}

#[tokio::test]
async fn saved_rules_survive_a_restart_until_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let (here, there) = ("/home/me/here", "/home/me/there");
    let (git, write, other) = {
        let store = Store::open(dir.path()).unwrap();
        let git = store.save_rule(rule(here, "run_shell_command", Some("git status"))).await.unwrap();
        let other = store.save_rule(rule(there, "run_shell_command", Some("cargo test"))).await.unwrap();
        let write = store.save_rule(rule(here, "write_file", None)).await.unwrap();
        assert!(git.id < other.id && other.id < write.id, "ids in the order saved");
        (git, write, other)
    };
    let expected = rule(here, "run_shell_command", Some("git status"));
    assert_eq!(
        (git.folder.as_str(), git.tool_name.as_str(), git.command_prefix.as_deref(), git.decision),
        (here, "run_shell_command", Some("git status"), PolicyDecision::Allow)
    );
    assert_eq!(
        (git.created_at_ms, git.session_id.as_str(), git.tool_id.as_str()),
        (expected.created_at_ms, "s1", "c1")
    );

    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.saved_rules(Path::new(here)).unwrap(),
        vec![git.clone(), write.clone()],
        "by id, this folder only"
    );
    assert_eq!(store.saved_rules(Path::new(there)).unwrap(), vec![other.clone()]);
    assert_eq!(store.saved_rule(git.id).unwrap(), Some(git.clone()));
    assert_eq!(store.delete_rule(git.id).await.unwrap(), Some(git.clone()), "the rule deleted comes back");
    assert_eq!(store.delete_rule(git.id).await.unwrap(), None, "deleted once");
    assert_eq!(store.delete_rule(9_999).await.unwrap(), None);
    assert_eq!(store.saved_rule(git.id).unwrap(), None);
    drop(store);

    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.saved_rules(Path::new(here)).unwrap(), vec![write]);
    assert_eq!(store.saved_rules(Path::new(there)).unwrap(), vec![other]);
}

#[tokio::test]
async fn a_saved_rule_reads_back_its_decision_and_an_unknown_one_is_an_error_not_an_allow() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let folder = "/home/me/project";
    database(dir.path())
        .execute("INSERT INTO saved_rules (folder, tool_name, decision) VALUES (?1, 'glob', 'deny')", [folder])
        .unwrap();
    let rules = store.saved_rules(Path::new(folder)).unwrap();
    assert_eq!((rules.len(), rules[0].decision), (1, PolicyDecision::Deny));
    assert_eq!((rules[0].created_at_ms, rules[0].session_id.as_str()), (0, ""), "NULLs read as empty");
    database(dir.path())
        .execute("INSERT INTO saved_rules (folder, tool_name, decision) VALUES (?1, 'glob', 'maybe')", [folder])
        .unwrap();
    let err = store.saved_rules(Path::new(folder)).unwrap_err();
    assert!(matches!(&err, StoreError::Read { reason, .. } if reason.contains("maybe")), "{err}");
}

/// The audit trail reads its words into the contract's enums; a word this
/// hub does not know (a newer hub wrote it) comes back as it was written.
/// Rows cannot be changed or deleted, so one such row must never hide the rest.
#[tokio::test]
async fn an_audit_row_with_a_word_this_hub_does_not_know_is_kept_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.record_decision(decision(1, "/p", "s", "c", "approved_agent_always"));
    store.record_outcome(outcome(2, "s", "c", "interrupted"));
    store.flush().await.unwrap();
    database(dir.path())
        .execute(
            "INSERT INTO audit_decisions (at_ms, folder, session_id, tool_id, tool_name, summary, decision, decided_by)
             VALUES (3, '/p', 's', 'd', 'run_shell_command', 'ls', 'approved_forever', 'the_moon')",
            [],
        )
        .unwrap();
    let entries = store.audit(&AuditFilter::default()).unwrap();
    assert_eq!(entries.len(), 2, "{entries:?}");
    assert_eq!(
        (&entries[0].decision, &entries[0].decided_by, &entries[0].outcome),
        (&AuditDecision::ApprovedAgentAlways, &Decider::User, &Some(Outcome::Interrupted))
    );
    assert_eq!(
        (&entries[1].decision, &entries[1].decided_by, &entries[1].outcome),
        (&AuditDecision::Other("approved_forever".into()), &Decider::Other("the_moon".into()), &None)
    );
    let json = serde_json::to_value(&entries[1]).unwrap();
    assert_eq!((json["decision"].as_str(), json["decidedBy"].as_str()), (Some("approved_forever"), Some("the_moon")));
}

/// 10 rules one after another: were each held for the writer's 20 ms tick,
/// they would take 200 ms at least; a commit takes about a millisecond.
#[tokio::test]
async fn saving_and_deleting_rules_is_not_held_back_by_the_writer_batching() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await; // the writer is asleep now
    let started = Instant::now();
    let mut ids = Vec::new();
    for n in 0..5 {
        ids.push(store.save_rule(rule("/p", &format!("tool{n}"), None)).await.unwrap().id);
    }
    for id in ids {
        assert!(store.delete_rule(id).await.unwrap().is_some());
    }
    let took = started.elapsed();
    assert!(took < Duration::from_millis(200), "10 rule changes took {took:?}");
}

#[tokio::test]
async fn a_rule_that_cannot_be_written_is_an_error_and_is_not_saved() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let kept = store.save_rule(rule("/p", "read_file", None)).await.unwrap();

    let blocker = lock(dir.path());
    let err = store.save_rule(rule("/p", "write_file", None)).await.unwrap_err();
    assert!(matches!(&err, StoreError::Write { reason, .. } if reason.contains("locked")), "{err}");
    let err = store.delete_rule(kept.id).await.unwrap_err();
    assert!(matches!(err, StoreError::Write { .. }), "{err}");
    drop(blocker);

    assert_eq!(store.saved_rules(Path::new("/p")).unwrap(), vec![kept.clone()], "neither change is on disk");
    store.flush().await.expect("told to the one who asked, not to the next flush");
    let saved = store.save_rule(rule("/p", "write_file", None)).await.unwrap();
    assert_eq!(store.saved_rules(Path::new("/p")).unwrap(), vec![kept, saved], "the writer goes on");
}

#[tokio::test]
async fn each_decision_shows_the_first_outcome_recorded_after_it_and_before_the_next_decision() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let f = "/p";
    // Waiting: no outcome yet.
    store.record_decision(decision(100, f, "s1", "waiting", "approved"));
    // Ran, then (a later report) something else: the first one counts.
    store.record_decision(decision(110, f, "s1", "ran", "allowed"));
    store.record_outcome(outcome(111, "s1", "ran", "ran"));
    store.record_outcome(outcome(112, "s1", "ran", "interrupted"));
    // The same tool id decided again after its outcome: each its own.
    store.record_decision(decision(120, f, "s1", "again", "approved"));
    store.record_outcome(outcome(121, "s1", "again", "failed"));
    store.record_decision(decision(130, f, "s1", "again", "rejected"));
    store.record_outcome(outcome(131, "s1", "again", "rejected"));
    // Decided twice before it ended (a restart): the outcome shows once, under the last.
    store.record_decision(decision(140, f, "s1", "twice", "approved"));
    store.record_decision(decision(141, f, "s1", "twice", "approved"));
    store.record_outcome(outcome(142, "s1", "twice", "ran"));
    // The same tool id in another session is another call.
    store.record_decision(decision(150, f, "s2", "ran", "denied"));
    // An outcome with no decision shows nowhere.
    store.record_outcome(outcome(160, "s3", "orphan", "ran"));
    store.flush().await.unwrap();

    let entries = store.audit(&AuditFilter::default()).unwrap();
    assert_eq!(
        joined(&entries),
        vec![
            row("waiting", "approved", None),
            row("ran", "allowed", Some(("ran", 111))),
            row("again", "approved", Some(("failed", 121))),
            row("again", "rejected", Some(("rejected", 131))),
            row("twice", "approved", None),
            row("twice", "approved", Some(("ran", 142))),
            row("ran", "denied", None),
        ]
    );
    let first = &entries[0];
    assert_eq!(
        (first.at, first.folder_path.as_str(), first.session_id.as_str(), first.tool_name.as_str()),
        (100, f, "s1", "run_shell_command")
    );
    assert_eq!(
        (first.summary.as_str(), first.decided_by.as_str(), first.rule.as_deref()),
        ("echo waiting", "user", None)
    );
    let ids: Vec<u64> = entries.iter().map(|e| e.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
}

/// Clocks go back and several decisions fall in one millisecond: the join
/// goes by the order rows were recorded, not by their times.
#[tokio::test]
async fn the_join_holds_when_times_tie_or_go_back() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.record_decision(decision(500, "/p", "s", "c", "approved"));
    store.record_outcome(outcome(500, "s", "c", "ran"));
    store.record_decision(decision(500, "/p", "s", "c", "approved"));
    store.record_outcome(outcome(400, "s", "c", "failed"));
    store.flush().await.unwrap();
    assert_eq!(
        joined(&store.audit(&AuditFilter::default()).unwrap()),
        vec![row("c", "approved", Some(("ran", 500))), row("c", "approved", Some(("failed", 400)))]
    );
}

#[tokio::test]
async fn filters_pick_folder_session_and_time_and_the_limit_keeps_the_newest_oldest_first() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.record_decision(decision(10, "/a", "s1", "a1", "allowed"));
    store.record_decision(decision(20, "/b", "s2", "b1", "allowed"));
    store.record_decision(decision(30, "/a", "s3", "a2", "allowed"));
    store.record_decision(decision(40, "/a", "s1", "a3", "allowed"));
    // Recorded last, made first (a clock set back): listed by time.
    store.record_decision(decision(5, "/a", "s1", "a0", "allowed"));
    store.flush().await.unwrap();
    let tools = |filter: AuditFilter| -> Vec<String> {
        store.audit(&filter).unwrap().into_iter().map(|entry| entry.tool_id).collect()
    };
    let folder = |f: &str| Some(f.to_string());
    let cases: Vec<(AuditFilter, Vec<&str>)> = vec![
        (AuditFilter::default(), vec!["a0", "a1", "b1", "a2", "a3"]),
        (AuditFilter { folder: folder("/a"), ..Default::default() }, vec!["a0", "a1", "a2", "a3"]),
        (AuditFilter { folder: folder("/b"), ..Default::default() }, vec!["b1"]),
        (AuditFilter { folder: folder("/a/"), ..Default::default() }, vec![]),
        (AuditFilter { session_id: Some("s1".into()), ..Default::default() }, vec!["a0", "a1", "a3"]),
        (AuditFilter { folder: folder("/a"), session_id: Some("s2".into()), ..Default::default() }, vec![]),
        (AuditFilter { after_ms: Some(20), ..Default::default() }, vec!["a2", "a3"]),
        (AuditFilter { after_ms: Some(0), ..Default::default() }, vec!["a0", "a1", "b1", "a2", "a3"]),
        (AuditFilter { after_ms: Some(u64::MAX), ..Default::default() }, vec![]),
        (AuditFilter { limit: Some(2), ..Default::default() }, vec!["a2", "a3"]),
        (AuditFilter { folder: folder("/a"), limit: Some(3), ..Default::default() }, vec!["a1", "a2", "a3"]),
        (
            AuditFilter { folder: folder("/a"), session_id: Some("s1".into()), after_ms: Some(5), limit: Some(1) },
            vec!["a3"],
        ),
        (AuditFilter { limit: Some(0), ..Default::default() }, vec![]),
    ];
    for (filter, expected) in cases {
        assert_eq!(tools(filter.clone()), expected, "{filter:?}");
    }
}

#[tokio::test]
async fn at_most_ten_thousand_rows_come_back_the_newest() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for n in 0..AUDIT_LIMIT as u64 + 5 {
        store.record_decision(decision(n, "/p", "s", &format!("c{n}"), "allowed"));
    }
    store.flush().await.unwrap();
    for limit in [None, Some(AUDIT_LIMIT + 1), Some(usize::MAX)] {
        let entries = store.audit(&AuditFilter { limit, ..Default::default() }).unwrap();
        assert_eq!(entries.len(), AUDIT_LIMIT, "{limit:?}");
        assert_eq!((entries[0].at, entries[AUDIT_LIMIT - 1].at), (5, AUDIT_LIMIT as u64 + 4), "{limit:?}");
    }
}

#[tokio::test]
async fn audit_rows_cannot_be_changed_or_deleted_even_with_sql() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.record_decision(decision(1, "/p", "s", "c", "approved"));
    store.record_outcome(outcome(2, "s", "c", "ran"));
    store.flush().await.unwrap();
    let before = store.audit(&AuditFilter::default()).unwrap();
    let db = database(dir.path());
    for sql in [
        "UPDATE audit_decisions SET decision = 'rejected'",
        "DELETE FROM audit_decisions",
        "UPDATE audit_outcomes SET outcome = 'failed'",
        "DELETE FROM audit_outcomes WHERE id = 1",
    ] {
        let err = db.execute(sql, []).unwrap_err();
        assert!(err.to_string().contains("audit rows are append-only"), "{sql}: {err}");
    }
    assert_eq!(store.audit(&AuditFilter::default()).unwrap(), before);
    assert_eq!(joined(&before), vec![row("c", "approved", Some(("ran", 2)))]);
}

#[tokio::test]
async fn an_audit_row_that_cannot_be_written_is_reported_by_its_sessions_flush() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.flush().await.unwrap();
    let blocker = lock(dir.path());
    store.record_decision(decision(1, "/p", "s1", "c", "approved"));
    let err = store.flush_session("s1").await.unwrap_err();
    assert!(matches!(err, StoreError::Write { .. }), "{err}");
    drop(blocker);
    store.record_decision(decision(2, "/p", "s1", "d", "approved"));
    store.flush_session("s1").await.unwrap();
    // Issue 24 (13a): the failed row was kept and written again with the next batch, in order.
    assert_eq!(
        joined(&store.audit(&AuditFilter::default()).unwrap()),
        vec![row("c", "approved", None), row("d", "approved", None)]
    );
}
