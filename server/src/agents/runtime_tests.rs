//! The runtime's own tests: saving, deleting, settling what a kill left, a failed turn.

use super::*;
use crate::agents::builtin::PausedTurn;
use crate::approval::ApprovalBatch;
use protocol::api::SessionStatus;
use std::collections::HashMap;

#[test]
fn the_phase_is_saved_beside_the_agents_state_and_older_states_still_read() {
    let mut state = SessionState::default();
    state.agent.builtin.completions = 3;
    state.machine.start();
    state.machine.end(&TurnEnd::waiting(vec!["a".into()]), 1_000);
    // Saved ahead of its showing: the end's phase is what goes to disk.
    state.agent.turn_tools.insert("run_shell_command".into());
    let back = decode(&encode(&state).unwrap()).unwrap();
    assert_eq!(back.machine.phase(), &Phase::Waiting { pending: vec!["a".into()] });
    assert_eq!(back.machine.waiting_since(), Some(1_000), "the wait's start, for its timeout after a restart");
    assert_eq!(back.agent.builtin.completions, 3);
    assert!(back.agent.turn_tools.contains("run_shell_command"), "a paused turn keeps its grant");

    let older = decode(r#"{"messages":[],"paused":null,"allowed_tools":[],"completions":2}"#).unwrap();
    assert_eq!((older.machine.phase(), older.agent.builtin.completions), (&Phase::Idle, 2));
}

/// "For this turn" ends with the turn, whichever way it ends; a pause keeps it.
#[tokio::test]
async fn a_turn_grant_ends_with_its_turn_and_not_with_a_pause() {
    struct Quiet;
    impl HubPort for Quiet {
        fn show_status(&self, _: &str, _: Status, _: u64) {}
        fn projects_changed(&self) {}
        fn config_changed(&self, _: &str) {}
        fn agent_of(&self, id: &str) -> Result<Arc<dyn crate::agents::Agent>, AgentError> {
            Err(AgentError::NoSession(id.into()))
        }
        fn yolo(&self, _: &str) -> bool {
            false
        }
        fn policy_set(&self, _: &std::path::Path) -> crate::policy::PolicySet {
            crate::policy::PolicySet::default()
        }
        fn shell_timeout(&self) -> std::time::Duration {
            std::time::Duration::from_secs(1)
        }
        fn shutdown_token(&self) -> tokio_util::sync::CancellationToken {
            tokio_util::sync::CancellationToken::new()
        }
        fn sandbox_terms(&self, _: &str) -> crate::agents::port::SandboxTerms {
            crate::agents::port::SandboxTerms {
                sandbox: crate::sandbox::Sandbox::detected(None),
                network: false,
                hide_agent_config: true,
                masks: Vec::new(),
            }
        }
    }
    for (end, kept) in [
        (TurnEnd::waiting(vec!["a".into()]), true),
        (TurnEnd::asking("q".into()), true),
        (TurnEnd::ended(ResultStatus::Success), false),
        (TurnEnd::ended(ResultStatus::Cancelled), false),
        (TurnEnd::error(), false),
    ] {
        let runtime = SessionRuntime::fresh("s".into(), std::env::temp_dir(), None);
        {
            let mut state = runtime.state();
            runtime.start_turn(&Quiet, &mut state);
            state.agent.turn_tools.insert("run_shell_command".into());
        }
        runtime.end_turn(&Quiet, end.clone()).await;
        assert_eq!(runtime.state().agent.turn_tools.contains("run_shell_command"), kept, "{end:?}");
    }
}

/// A session read after the start (its first read failed) is not left
/// with the phase a killed hub saved: running, or waiting on a request
/// that died with its agent's process. A built-in agent's card still waits.
#[tokio::test]
async fn a_phase_only_a_kill_leaves_is_settled_when_read_later() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let card = || {
        let call = crate::approval::NewCall {
            tool_id: "a".into(),
            tool_name: "run_shell_command".into(),
            editable: false,
            initial: crate::approval::Initial::Pending,
        };
        PausedTurn { batch: ApprovalBatch::new(vec![call]).unwrap(), calls: HashMap::new() }
    };
    let cases = [
        ("running", None, false),
        ("acp-waiting", Some(vec!["a".to_string()]), false),
        ("builtin-waiting", Some(vec!["a".to_string()]), true),
    ];
    for (id, waiting, builtin) in &cases {
        let runtime = SessionRuntime::fresh(id.to_string(), dir.path().into(), Some(store.clone()));
        let user = AgentEvent::Message { role: protocol::events::Role::User, content: "go".into(), delta: false };
        runtime.log.push(user);
        let mut state = runtime.state();
        state.machine.start();
        if let Some(pending) = waiting {
            let end = TurnEnd::waiting(pending.clone());
            state.machine.end(&end, 1_000);
            state.machine.show_end();
            runtime.log.push(AgentEvent::Result { status: end.result, pending: end.pending() });
        }
        if *builtin {
            state.agent.builtin.paused = Some(card());
        }
        runtime.save(&state);
    }
    store.flush().await.unwrap();
    for (id, _, builtin) in cases {
        let runtime = SessionRuntime::load(id.into(), dir.path().into(), Some(store.clone())).unwrap();
        assert_eq!(runtime.needs_recovery(), !builtin, "{id}");
        if builtin {
            continue;
        }
        assert_eq!(runtime.recover().status, SessionStatus::Error, "{id}");
        assert!(!runtime.needs_recovery(), "{id}");
        assert_eq!(runtime.state().machine.check(crate::session::Starting::Prompt), Ok(()), "{id} takes a prompt");
    }
}

#[tokio::test]
async fn a_detached_runtime_saves_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).unwrap();
    let runtime = SessionRuntime::fresh("s".into(), dir.path().into(), Some(store.clone()));
    let ended = |status| AgentEvent::Result { status, pending: None };
    runtime.log.push(ended(ResultStatus::Success));
    runtime.save(&runtime.state());
    store.flush().await.unwrap();
    assert_eq!((store.events("s").unwrap().len(), store.agent_state("s").unwrap().is_some()), (1, true));

    runtime.detach(&mut runtime.state(), false).unwrap();
    store.delete_session("s");
    runtime.log.push(ended(ResultStatus::Cancelled));
    {
        let mut state = runtime.state();
        state.agent.builtin.completions = 7;
        runtime.save(&state);
    }
    store.flush().await.unwrap();
    assert_eq!((store.events("s").unwrap(), store.agent_state("s").unwrap()), (vec![], None));
    assert_eq!(runtime.log.all().len(), 2, "kept in memory for whoever still reads it");
}

#[tokio::test]
async fn a_turn_that_panics_ends_with_an_error_and_frees_the_session() {
    let hub = crate::hub::Hub::new(crate::hub::HubOptions::default());
    let dir = tempfile::tempdir().unwrap();
    let config = hub.open_session(dir.path().to_str().unwrap(), None).unwrap();
    let runtime = hub.runtime(&config.session_id).unwrap();
    let number = runtime.start_turn(&*hub.port(), &mut runtime.state());
    assert_eq!(hub.session(&runtime.id).unwrap().status, SessionStatus::Running);
    spawn_turn(&hub.port(), &runtime, number, async { panic!("a bug in the turn") });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while runtime.state().machine.is_running() {
        assert!(std::time::Instant::now() < deadline, "the session stayed running");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(hub.session(&runtime.id).unwrap().status, SessionStatus::Error);
    let events: Vec<AgentEvent> = runtime.log.all().into_iter().map(|logged| logged.event).collect();
    assert!(
        matches!(&events[..], [AgentEvent::Error { code: Some(code), message, .. }, AgentEvent::Result { status: ResultStatus::Error, .. }]
            if code == "internal" && message.contains("a bug in the turn")),
        "{events:?}"
    );
}
