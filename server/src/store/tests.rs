//! The store's own tests: sessions, events, agent states, faults.

use super::writer::SLEEP_WHEN_QUIET;
use super::*;
use protocol::events::Role;

/// Saves `event` as the event log does: its stream line.
fn append(store: &Store, session: &str, event: SeqEvent) {
    let mut line = serde_json::to_vec(&event).unwrap();
    line.push(b'\n');
    store.append_event(session, event.seq, line.into(), false);
}

fn message(text: &str, seq: u64) -> SeqEvent {
    SeqEvent { event: AgentEvent::Message { role: Role::Assistant, content: text.into(), delta: true }, seq }
}

fn row(id: &str, status: SessionStatus) -> SessionRow {
    SessionRow {
        id: id.into(),
        folder: "/tmp/project".into(),
        status,
        yolo_override: Some(true),
        pending_count: 2,
        title: Some(format!("title of {id}")),
        agent: Some("gemini".into()),
        created_at_ms: 1,
        updated_at_ms: 5,
        worktree: None,
    }
}

/// Another process holding the database's write lock past the busy timeout
/// makes a write fail as a full or read-only disk would. Issue 24, item 13a:
/// the failed writes are kept and written again with the next batch; every
/// flush of their session (and every flush for everything) fails until then,
/// and no gap is left on disk.
#[tokio::test]
async fn a_failed_write_is_kept_told_to_every_flush_and_saved_by_the_next_batch_that_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    store.flush().await.unwrap();
    let blocker = Connection::open(store.path()).unwrap();
    blocker.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let lost = {
        let mut line = serde_json::to_vec(&message("lost", 1)).unwrap();
        line.push(b'\n');
        store.append_event("s1", 1, line.into(), false)
    };
    // Another session's flush in the same failing batch: its own writes were not in it.
    assert_eq!(store.flush_session("s2").await, Ok(()));
    let err = store.flush_session("s1").await.unwrap_err();
    assert!(matches!(&err, StoreError::Write { reason, .. } if reason.contains("locked")), "{err}");
    assert!(store.settled(lost), "dealt with: a reader waiting on it goes on");
    assert!(!store.committed("s1", lost), "what failed does not count as saved");
    assert!(store.flush().await.is_err(), "a flush for everything hears of it too");
    blocker.execute_batch("COMMIT").unwrap();

    append(&store, "s1", message("kept", 2));
    store.flush_session("s1").await.expect("the retry saved what failed, then this");
    store.flush().await.expect("nothing is left unsaved");
    assert_eq!(store.events("s1").unwrap(), vec![message("lost", 1), message("kept", 2)], "no gap on disk");
    assert!(store.committed("s1", lost), "saved by the retry");
    assert!(!store.settled(lost + 1_000), "a failure does not wave later writes through unwritten");
    let later = {
        let mut line = serde_json::to_vec(&message("later", 1)).unwrap();
        line.push(b'\n');
        store.append_event("s2", 1, line.into(), false)
    };
    store.flush().await.unwrap();
    assert!(store.settled(later) && store.committed("s2", later), "another session is not held in memory");
}

#[tokio::test]
async fn what_is_flushed_is_there_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        store.save_session(row("s1", SessionStatus::Running));
        for seq in 1..=3 {
            append(&store, "s1", message(&format!("m{seq}"), seq));
        }
        append(&store, "other", message("x", 1));
        // The status is written with the agent's state; a row saved again (a rename, a YOLO switch) leaves it.
        let waiting = StatusRow { status: SessionStatus::WaitingApproval, pending_count: 2, updated_at_ms: Some(5) };
        store.save_session_state("s1", Some("{\"messages\":[]}".into()), waiting);
        store.save_session(row("s1", SessionStatus::Idle));
        store.flush().await.unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.sessions().unwrap(), vec![row("s1", SessionStatus::WaitingApproval)]);
    let events = store.events("s1").unwrap();
    assert_eq!(events, vec![message("m1", 1), message("m2", 2), message("m3", 3)]);
    assert_eq!(store.agent_state("s1").unwrap().as_deref(), Some("{\"messages\":[]}"));
    assert_eq!(store.agent_state("nobody").unwrap(), None);
    let mode: String = store.read(|db| db.pragma_query_value(None, "journal_mode", |r| r.get(0))).unwrap();
    assert_eq!(mode, "wal");
}

#[tokio::test]
async fn a_deleted_session_leaves_nothing_but_its_audit_rows_and_may_come_back_new() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = Store::open(dir.path()).unwrap();
        for id in ["gone", "kept"] {
            store.save_session(row(id, SessionStatus::WaitingApproval));
            append(&store, id, message("m", 1));
            let status = StatusRow { status: SessionStatus::WaitingApproval, pending_count: 2, updated_at_ms: None };
            store.save_session_state(id, Some("{}".into()), status);
        }
        store.record_decision(DecisionRecord {
            at_ms: 1,
            folder: "/tmp/project".into(),
            session_id: "gone".into(),
            tool_id: "t".into(),
            tool_name: "run_shell_command".into(),
            summary: "ls".into(),
            decision: protocol::audit::AuditDecision::Approved,
            decided_by: protocol::audit::Decider::User,
            rule: None,
            device: None,
        });
        // Sent in the same batch as the writes it undoes: the order holds.
        store.delete_session("gone");
        store.flush_session("gone").await.unwrap();
    }
    let store = Store::open(dir.path()).unwrap();
    let ids: Vec<String> = store.sessions().unwrap().into_iter().map(|row| row.id).collect();
    assert_eq!(ids, ["kept"]);
    assert_eq!((store.events("gone").unwrap(), store.agent_state("gone").unwrap()), (vec![], None));
    assert_eq!((store.events("kept").unwrap().len(), store.agent_state("kept").unwrap().is_some()), (1, true));
    let audit = store.audit(&AuditFilter { session_id: Some("gone".into()), ..Default::default() }).unwrap();
    assert_eq!(audit.len(), 1, "the audit trail keeps the deleted session's decisions");
    // The same id used again starts from nothing.
    store.save_session(SessionRow { title: None, ..row("gone", SessionStatus::Idle) });
    store.flush().await.unwrap();
    let again = store.sessions().unwrap().into_iter().find(|row| row.id == "gone").unwrap();
    assert_eq!((again.title, again.status), (None, SessionStatus::Idle));
}

/// The status is the session's own write: a change of it is an update (a
/// restart's is not), a row saved for a rename leaves it, and a write queued
/// after the session's delete makes nothing come back.
#[tokio::test]
async fn a_sessions_status_is_written_with_its_state_and_only_there() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let read = |store: &Store| store.sessions().unwrap().into_iter().find(|row| row.id == "s");
    store.save_session(SessionRow { updated_at_ms: 5, ..row("s", SessionStatus::Idle) });
    let running = StatusRow { status: SessionStatus::Running, pending_count: 0, updated_at_ms: Some(9) };
    store.save_session_state("s", Some("{}".into()), running);
    store.flush().await.unwrap();
    let saved = read(&store).unwrap();
    assert_eq!((saved.status, saved.pending_count, saved.updated_at_ms), (SessionStatus::Running, 0, 9));

    // The same status again, or a restart's (no time), is no update.
    store.save_session_state("s", None, StatusRow { updated_at_ms: Some(20), ..running });
    let restart = StatusRow { status: SessionStatus::Error, pending_count: 0, updated_at_ms: None };
    store.save_session_state("s", None, restart);
    // A rename saves the row with whatever status its caller had: the status stays.
    store.save_session(SessionRow { title: Some("renamed".into()), updated_at_ms: 7, ..row("s", SessionStatus::Idle) });
    store.flush().await.unwrap();
    let saved = read(&store).unwrap();
    assert_eq!(
        (saved.status, saved.updated_at_ms, saved.title.as_deref()),
        (SessionStatus::Error, 9, Some("renamed")),
        "the status is the state's, the time never goes back"
    );
    assert_eq!(store.agent_state("s").unwrap().as_deref(), Some("{}"), "no state given: the saved one is kept");

    store.delete_session("s");
    store.save_session_state("s", None, running);
    store.flush().await.unwrap();
    assert_eq!(read(&store), None, "a status write after the delete makes no row");
}

#[tokio::test]
async fn rows_saved_before_bodies_carried_their_seq_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let old_body = r#"{"type":"message","role":"assistant","content":"old","delta":true}"#;
    store.read(|db| db.execute("INSERT INTO events VALUES ('s', 1, ?1)", [old_body])).unwrap();
    append(&store, "s", message("new", 2));
    store.flush().await.unwrap();
    assert_eq!(store.events("s").unwrap(), vec![message("old", 1), message("new", 2)]);
    let body: String =
        store.read(|db| db.query_row("SELECT body FROM events WHERE seq = 2", [], |row| row.get(0))).unwrap();
    assert!(body.ends_with(r#""seq":2}"#), "saved as its stream line, without the newline: {body}");
}

#[test]
fn what_was_sent_is_written_when_the_store_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    for seq in 1..=3 {
        append(&store, "s", message("m", seq));
    }
    drop(store);
    let seqs: Vec<u64> = Store::open(dir.path()).unwrap().events("s").unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 2, 3]);
}

#[tokio::test]
async fn the_wal_is_copied_into_the_database_once_the_writer_is_idle() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let database_size = || std::fs::metadata(store.path()).unwrap().len();
    for seq in 1..=100 {
        append(&store, "s", message(&"x".repeat(10_000), seq));
    }
    store.flush().await.unwrap();
    assert!(database_size() < 100_000, "a megabyte committed stays in the WAL at first");
    tokio::time::sleep(SLEEP_WHEN_QUIET * 3).await;
    assert!(database_size() > 1_000_000, "then it is copied into the database");
    assert_eq!(store.events("s").unwrap().len(), 100);
}

#[tokio::test]
async fn unreadable_events_are_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    append(&store, "s", message("ok", 1));
    store.flush().await.unwrap();
    store.read(|db| db.execute("INSERT INTO events VALUES ('s', 2, '{\"type\":\"from_the_future\"}')", [])).unwrap();
    append(&store, "s", message("ok", 3));
    store.flush().await.unwrap();
    let seqs: Vec<u64> = store.events("s").unwrap().iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [1, 3]);
}

#[test]
fn a_data_dir_that_cannot_be_made_is_a_clear_error() {
    let file = tempfile::NamedTempFile::new().unwrap();
    let err = Store::open(&file.path().join("sub")).unwrap_err();
    assert!(err.to_string().contains("cannot create the data dir"), "{err}");
}

/// Issue 39, item 9(d): the data dir was 0755 and the database and its WAL
/// 0644, holding device and push secrets; an older hub's are fixed at start.
#[tokio::test]
async fn the_data_dir_and_the_database_files_are_the_users_alone() {
    use std::os::unix::fs::PermissionsExt;
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("data");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    drop(Store::open(&dir).unwrap());
    let db = dir.join("agent-hub.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let store = Store::open(&dir).unwrap();
    store.record_folder_opened(Path::new("/projects/p"), 1);
    store.flush().await.unwrap();
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&db), 0o600);
    let wal = dir.join("agent-hub.db-wal");
    assert!(wal.exists());
    assert_eq!(mode(&wal), 0o600, "SQLite gives its WAL the database's mode");
}

#[tokio::test]
async fn recent_folders_are_newest_first_one_row_a_folder_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let folder = |n: usize| PathBuf::from(format!("/projects/p{n:02}"));
    for n in 0..RECENT_FOLDERS_KEPT + 5 {
        store.record_folder_opened(&folder(n), 1_000 + n as u64);
    }
    // Opened again: it moves to the front (an opening with an earlier time, told late, keeps the later time).
    store.record_folder_opened(&folder(7), 9_000);
    store.record_folder_opened(&folder(7), 8_000);
    store.flush().await.unwrap();
    let recent = store.recent_folders().unwrap();
    assert_eq!(recent.len(), RECENT_FOLDERS_KEPT);
    assert_eq!((recent[0].folder.clone(), recent[0].opened_at_ms), (folder(7), 9_000));
    let newest = RECENT_FOLDERS_KEPT + 4;
    assert_eq!(recent[1].folder, folder(newest));
    let kept: Vec<PathBuf> = recent.iter().map(|row| row.folder.clone()).collect();
    let expected: Vec<PathBuf> =
        std::iter::once(folder(7)).chain((5..=newest).rev().filter(|&n| n != 7).map(folder)).collect();
    assert_eq!(kept, expected, "the oldest were forgotten");
    // Two openings in the same millisecond: the later one first.
    store.record_folder_opened(&folder(40), 50_000);
    store.record_folder_opened(&folder(41), 50_000);
    store.flush().await.unwrap();
    let recent = store.recent_folders().unwrap();
    assert_eq!((recent[0].folder.clone(), recent[1].folder.clone()), (folder(41), folder(40)));

    drop(store);
    let reopened = Store::open(dir.path()).unwrap();
    assert_eq!(reopened.recent_folders().unwrap().len(), RECENT_FOLDERS_KEPT, "kept across a reopen");
}
