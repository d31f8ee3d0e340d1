use proptest::prelude::*;
use protocol::api::SessionStatus;
use protocol::events::ResultStatus;

use super::*;

fn waiting(ids: &[&str]) -> TurnEnd {
    TurnEnd::waiting(ids.iter().map(|id| id.to_string()).collect())
}

/// A machine whose turn has ended (or paused) with `end`, shown.
fn after(end: TurnEnd) -> Machine {
    let mut machine = Machine::default();
    machine.start();
    machine.end(&end, 1_000);
    machine.show_end();
    machine
}

#[test]
fn a_prompt_starts_a_turn_that_holds_the_session_until_its_end_is_shown() {
    let mut machine = Machine::default();
    assert_eq!(machine.check(Starting::Prompt), Ok(()));
    let (turn, status) = machine.start();
    assert_eq!((turn, status), (1, Status { status: SessionStatus::Running, pending_count: 0, waiting_since: None }));
    assert!(machine.holds(1));
    assert_eq!(machine.check(Starting::Prompt), Err(Refusal::Busy));

    // Saved ahead of its showing: the session is still held, the saved phase is the end's.
    let saved = machine.end(&waiting(&["a", "b"]), 1_000);
    assert_eq!(saved, Status { status: SessionStatus::WaitingApproval, pending_count: 2, waiting_since: Some(1_000) });
    assert_eq!(machine.saved_phase(), &Phase::Waiting { pending: vec!["a".into(), "b".into()] });
    assert_eq!(machine.status().status, SessionStatus::Running);
    assert_eq!(machine.check(Starting::Decide("a")), Err(Refusal::Busy));

    assert_eq!(machine.show_end(), Some(saved));
    assert!(!machine.holds(1));
    assert_eq!(machine.show_end(), None, "an end is shown once");
    assert_eq!(machine.status(), saved);
}

#[test]
fn what_may_start_follows_the_phase() {
    let idle = Machine::default();
    let errored = after(TurnEnd::error());
    let paused = after(waiting(&["a", "b"]));
    let asking = after(TurnEnd::asking("q".into()));
    for machine in [&idle, &errored] {
        assert_eq!(machine.check(Starting::Prompt), Ok(()));
        assert_eq!(machine.check(Starting::DecidingPrompt), Ok(()), "a yes with nothing waiting is a prompt");
        assert_eq!(machine.check(Starting::Decide("a")), Err(Refusal::CallNotPending("a".into())));
        assert_eq!(machine.check(Starting::Answer("q")), Err(Refusal::QuestionNotPending("q".into())));
    }
    assert_eq!(paused.check(Starting::Prompt), Err(Refusal::WaitingDecision));
    assert_eq!(paused.check(Starting::DecidingPrompt), Ok(()));
    assert_eq!(paused.check(Starting::Decide("b")), Ok(()));
    assert_eq!(paused.check(Starting::Decide("c")), Err(Refusal::CallNotPending("c".into())));
    assert_eq!(paused.check(Starting::Answer("a")), Err(Refusal::QuestionNotPending("a".into())));
    assert_eq!(asking.check(Starting::Prompt), Err(Refusal::WaitingAnswer));
    assert_eq!(asking.check(Starting::DecidingPrompt), Err(Refusal::WaitingAnswer));
    assert_eq!(asking.check(Starting::Answer("q")), Ok(()));
    assert_eq!(asking.check(Starting::Answer("r")), Err(Refusal::QuestionNotPending("r".into())));
    assert_eq!(asking.check(Starting::Decide("q")), Err(Refusal::CallNotPending("q".into())));
    assert_eq!(after(waiting(&[])).check(Starting::DecidingPrompt), Err(Refusal::WaitingDecision));
}

#[test]
fn stop_asks_a_running_turn_and_takes_up_a_waiting_one() {
    let mut running = Machine::default();
    running.start();
    assert_eq!(running.stop(), Ok(Stop::Running));
    assert_eq!(running.reopen(), (true, None));

    let mut paused = after(waiting(&["a"]));
    assert_eq!(paused.stop(), Ok(Stop::Waiting));
    assert_eq!(
        paused.reopen(),
        (true, Some(Status { status: SessionStatus::Running, pending_count: 0, waiting_since: None }))
    );
    assert_eq!(paused.check(Starting::Decide("a")), Err(Refusal::Busy), "taken up: nothing is decided any more");
    paused.end(&TurnEnd::ended(ResultStatus::Cancelled), 1_000);
    assert_eq!(paused.show_end().map(|status| status.status), Some(SessionStatus::Idle));

    let mut idle = Machine::default();
    assert_eq!(idle.stop(), Err(Refusal::NotRunning));
    assert_eq!(idle.reopen(), (false, None));
    assert_eq!(idle, Machine::default());
}

#[test]
fn an_agent_that_pauses_on_its_own_holds_the_session_until_the_pause_shows() {
    let mut machine = Machine::default();
    machine.end(&waiting(&["a"]), 1_000);
    assert_eq!(machine.check(Starting::Prompt), Err(Refusal::Busy));
    assert_eq!(machine.show_end().map(|status| status.pending_count), Some(1));
    assert_eq!(machine.check(Starting::Decide("a")), Ok(()));
}

#[test]
fn stop_while_a_pause_is_being_saved_keeps_it_from_showing() {
    let mut machine = Machine::default();
    machine.start();
    machine.end(&waiting(&["a"]), 1_000);
    assert_eq!(machine.reopen(), (true, None));
    assert_eq!(machine.show_end(), None, "what it waited on is being closed");
    assert!(machine.is_running(), "the turn's own end closes it");
    machine.end(&TurnEnd::ended(ResultStatus::Cancelled), 1_000);
    assert_eq!(machine.show_end().map(|status| status.status), Some(SessionStatus::Idle));
}

#[test]
fn a_deleted_sessions_turn_end_shows_nothing() {
    let mut machine = Machine::default();
    machine.start();
    assert_eq!(machine.delete(true), Ok(true));
    machine.end(&TurnEnd::error(), 1_000);
    assert_eq!(machine.show_end(), None, "no status is shown under an id a new session may take");
    assert_eq!(machine.phase(), &Phase::Idle);
}

#[test]
fn a_turns_task_acts_only_on_its_own_turn() {
    let mut machine = Machine::default();
    let (first, _) = machine.start();
    machine.end(&TurnEnd::ended(ResultStatus::Success), 1_000);
    machine.show_end();
    let (second, _) = machine.start();
    assert!(!machine.holds(first));
    assert!(machine.holds(second));
}

#[test]
fn deleting_is_refused_while_a_turn_is_under_way_unless_forced() {
    let mut paused = after(waiting(&["a"]));
    assert_eq!(paused.delete(false), Err(Occupied::WaitingApproval));
    assert_eq!(paused.phase(), &Phase::Waiting { pending: vec!["a".into()] }, "refused: nothing changed");
    assert_eq!(after(TurnEnd::asking("q".into())).delete(false), Err(Occupied::WaitingInput));

    let mut running = Machine::default();
    running.start();
    assert_eq!(running.clone().delete(false), Err(Occupied::Running));
    assert_eq!(running.delete(true), Ok(true));
    assert!(running.is_deleted());
    for starting in [Starting::Prompt, Starting::Decide("a"), Starting::Answer("q")] {
        assert_eq!(running.check(starting), Err(Refusal::Deleted));
    }
    assert_eq!(Machine::default().delete(false), Ok(false));
}

#[test]
fn the_phase_is_saved_in_a_form_that_reads_back() {
    for phase in [
        Phase::Idle,
        Phase::Running,
        Phase::Waiting { pending: vec!["a".into()] },
        Phase::Asking { request_id: "q".into() },
        Phase::Error,
    ] {
        let text = serde_json::to_string(&phase).unwrap();
        assert_eq!(serde_json::from_str::<Phase>(&text).unwrap(), phase, "{text}");
    }
    assert_eq!(
        serde_json::to_string(&Phase::Waiting { pending: vec!["a".into()] }).unwrap(),
        r#"{"phase":"waiting","pending":["a"]}"#
    );
}

#[test]
fn a_restart_closes_what_was_under_way_and_keeps_what_had_ended() {
    use Recovery::*;
    let cases = [
        (Phase::Idle, Tail::Empty, false, AsItWas(Phase::Idle)),
        (Phase::Idle, Tail::Result(ResultStatus::Success), false, AsItWas(Phase::Idle)),
        (Phase::Idle, Tail::Result(ResultStatus::Cancelled), false, AsItWas(Phase::Idle)),
        (Phase::Idle, Tail::Result(ResultStatus::Error), false, AsItWas(Phase::Error)),
        // An older database (no phase saved, read as idle): the log alone says a turn was cut.
        (Phase::Idle, Tail::Unsettled, false, Interrupted),
        // A wait with nothing saved to wait on: the ACP agent's request died with its process.
        (Phase::Idle, Tail::Result(ResultStatus::WaitingApproval), false, Interrupted),
        (Phase::Waiting { pending: vec!["a".into()] }, Tail::Result(ResultStatus::WaitingApproval), false, Interrupted),
        (Phase::Asking { request_id: "q".into() }, Tail::Result(ResultStatus::WaitingInput), false, Interrupted),
        // Saved as running, the log a step behind (the start's events written, or not yet).
        (Phase::Running, Tail::Result(ResultStatus::Success), false, Interrupted),
        (Phase::Running, Tail::Unsettled, false, Interrupted),
        // The end saved, its result not yet logged: closed as cut, never taken as done.
        (Phase::Idle, Tail::Unsettled, false, Interrupted),
        (Phase::Error, Tail::Result(ResultStatus::Error), false, AsItWas(Phase::Error)),
        // The built-in agent's saved calls say what was under way.
        (Phase::Running, Tail::Unsettled, true, Batch),
        (Phase::Waiting { pending: vec!["a".into()] }, Tail::Result(ResultStatus::WaitingApproval), true, Batch),
    ];
    for (saved, tail, batch, expected) in cases {
        assert_eq!(recover(&saved, tail, batch), expected, "{saved:?} {tail:?} batch {batch}");
    }
}

/// What the user or the agent does next.
#[derive(Debug, Clone)]
enum Input {
    Prompt,
    Decide,
    Answer,
    Stop,
    /// The running turn works on: events, and (the built-in agent) its calls saved.
    Work,
    /// An ACP agent asks for permission outside a prompt.
    AgentAsks,
    End(u8),
}

fn input() -> impl Strategy<Value = Input> {
    prop_oneof![
        Just(Input::Prompt),
        Just(Input::Decide),
        Just(Input::Answer),
        Just(Input::Stop),
        Just(Input::Work),
        Just(Input::AgentAsks),
        (0u8..5).prop_map(Input::End),
    ]
}

fn end_of(choice: u8, turn: u64) -> TurnEnd {
    match choice {
        0 => TurnEnd::ended(ResultStatus::Success),
        1 => TurnEnd::ended(ResultStatus::Cancelled),
        2 => TurnEnd::error(),
        3 => TurnEnd::waiting((0..=turn % 3).map(|n| format!("call-{turn}-{n}")).collect()),
        _ => TurnEnd::asking(format!("question-{turn}")),
    }
}

/// One write the runtime makes, in order, as the hub does: a start's events
/// before its phase, an end's phase before its `result`.
#[derive(Debug, Clone)]
enum Write {
    Events,
    Phase(Phase),
    Result(ResultStatus),
}

/// The machine as the runtime drives it, with the writes it makes; `builtin`:
/// a pause is saved with the turn's calls (the built-in agent), else it lives
/// only in the agent's process (ACP).
fn drive(inputs: &[Input], builtin: bool) -> (Machine, Vec<(Write, bool)>) {
    let mut machine = Machine::default();
    let mut writes = Vec::new();
    let batch = |phase: &Phase| builtin && matches!(phase, Phase::Waiting { .. } | Phase::Asking { .. });
    for input in inputs {
        let first_pending = match machine.phase() {
            Phase::Waiting { pending } => pending.first().cloned().unwrap_or_default(),
            Phase::Asking { request_id } => request_id.clone(),
            _ => String::new(),
        };
        let starting = match input {
            Input::Prompt => Some(Starting::Prompt),
            Input::Decide => Some(Starting::Decide(&first_pending)),
            Input::Answer => Some(Starting::Answer(&first_pending)),
            _ => None,
        };
        if let Some(starting) = starting {
            if machine.check(starting).is_ok() {
                // A decision or an answer resumes the built-in agent's saved calls.
                let resumed = batch(machine.phase());
                machine.start();
                if resumed {
                    // Saved first (the decision with the calls), then what it does is logged.
                    writes.push((Write::Phase(Phase::Running), true));
                    writes.push((Write::Events, false));
                } else {
                    // A prompt (or an ACP agent's decision) is logged, then the turn saved.
                    writes.push((Write::Events, false));
                    writes.push((Write::Phase(Phase::Running), false));
                }
            }
            continue;
        }
        let end = match input {
            Input::Work if machine.is_running() => {
                writes.push((Write::Events, false));
                writes.push((Write::Phase(Phase::Running), builtin));
                continue;
            }
            Input::AgentAsks if !builtin && machine.check(Starting::Prompt).is_ok() => {
                writes.push((Write::Events, false));
                TurnEnd::waiting(vec![format!("request-{}", writes.len())])
            }
            Input::Stop => match machine.stop() {
                Ok(stop) => {
                    if stop == Stop::Waiting {
                        // Taken up (saved as running), its calls answered as stopped.
                        let resumed = batch(machine.phase());
                        machine.reopen();
                        writes.push((Write::Phase(Phase::Running), resumed));
                        writes.push((Write::Events, false));
                    }
                    TurnEnd::ended(ResultStatus::Cancelled)
                }
                Err(_) => continue,
            },
            Input::End(choice) if machine.is_running() => end_of(*choice, writes.len() as u64),
            _ => continue,
        };
        machine.end(&end, 1_000);
        let saved = machine.saved_phase().clone();
        writes.push((Write::Phase(saved.clone()), batch(&saved)));
        writes.push((Write::Result(end.result), batch(&saved)));
        machine.show_end();
    }
    (machine, writes)
}

/// What survives a kill after the first `written` writes.
fn on_disk(writes: &[(Write, bool)], written: usize) -> (Phase, Tail, bool) {
    let (mut phase, mut tail, mut batch) = (Phase::Idle, Tail::Empty, false);
    for (write, saved_batch) in &writes[..written] {
        match write {
            Write::Events => tail = Tail::Unsettled,
            Write::Result(result) => tail = Tail::Result(*result),
            Write::Phase(saved) => {
                phase = saved.clone();
                batch = *saved_batch;
            }
        }
    }
    (phase, tail, batch)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Whatever the user and the agent did, the status the pages see is the
    /// phase's, a turn is held only while running, and a deleted session takes nothing.
    #[test]
    fn the_status_always_follows_the_phase(inputs in prop::collection::vec(input(), 0..40), builtin: bool) {
        let (mut machine, _) = drive(&inputs, builtin);
        prop_assert_eq!(machine.saved_phase(), machine.phase(), "every end was shown");
        prop_assert_eq!(machine.check(Starting::Prompt).is_ok(), matches!(machine.phase(), Phase::Idle | Phase::Error));
        prop_assert_eq!(machine.stop().is_ok(), machine.phase().under_way());
        let under_way = machine.phase().under_way();
        prop_assert_eq!(machine.clone().delete(false).is_err(), under_way);
        machine.delete(true).unwrap();
        prop_assert_eq!(machine.check(Starting::Prompt), Err(Refusal::Deleted));
    }

    /// Killed after any write: nothing is resumed as running, a turn whose
    /// start is on disk and whose end is not is closed (or its saved calls
    /// settle it), and a session whose last turn ended is as it left it.
    #[test]
    fn a_kill_at_any_write_leaves_nothing_running_and_nothing_unsaid(
        inputs in prop::collection::vec(input(), 0..30),
        builtin: bool,
        cut in any::<prop::sample::Index>(),
    ) {
        let (_, writes) = drive(&inputs, builtin);
        let written = cut.index(writes.len() + 1);
        let (phase, tail, batch) = on_disk(&writes, written);
        let recovery = recover(&phase, tail, batch);
        if let Recovery::AsItWas(phase) = &recovery {
            prop_assert!(!phase.under_way(), "resumed {:?}", phase);
        }
        let started = writes[..written]
            .iter()
            .rposition(|(write, _)| matches!(write, Write::Events | Write::Phase(Phase::Running)));
        let ended = writes[..written].iter().rposition(|(write, _)| matches!(write, Write::Result(_)));
        let cut_short = started.is_some_and(|start| ended.is_none_or(|end| end < start));
        if cut_short {
            prop_assert!(recovery == Recovery::Interrupted || recovery == Recovery::Batch, "{:?}", recovery);
        }
        let paused = matches!(tail, Tail::Result(ResultStatus::WaitingApproval | ResultStatus::WaitingInput));
        if paused && !batch {
            prop_assert_eq!(&recovery, &Recovery::Interrupted, "a wait nothing can answer is closed");
        }
        // Killed right after a turn's end was logged: the session is as that turn left it.
        match writes[..written].last() {
            Some((Write::Result(ResultStatus::Error), _)) => prop_assert_eq!(recovery, Recovery::AsItWas(Phase::Error)),
            Some((Write::Result(ResultStatus::Success | ResultStatus::Cancelled), _)) => {
                prop_assert_eq!(recovery, Recovery::AsItWas(Phase::Idle))
            }
            None => prop_assert_eq!(recovery, Recovery::AsItWas(Phase::Idle)),
            _ => {}
        }
    }
}

#[test]
fn a_wait_times_out_only_once_it_is_that_old_and_counts_from_the_pause() {
    let mut machine = Machine::default();
    machine.start();
    machine.end(&waiting(&["a"]), 10_000);
    let timing_out = |now_ms| Starting::TimeOut { now_ms, after_ms: 5_000, from_ms: 0 };
    assert_eq!(machine.check(timing_out(20_000)), Err(Refusal::Busy), "not shown yet: the turn still holds it");
    machine.show_end();
    assert_eq!(machine.waiting_since(), Some(10_000));
    assert_eq!(machine.status().waiting_since, Some(10_000));
    assert_eq!(machine.check(timing_out(14_999)), Err(Refusal::NotDue));
    assert_eq!(machine.check(timing_out(15_000)), Ok(()));

    // A decision resumes the turn; the next pause counts afresh.
    machine.start();
    assert_eq!(machine.waiting_since(), None);
    assert_eq!(machine.check(timing_out(u64::MAX)), Err(Refusal::Busy));
    machine.end(&TurnEnd::asking("q".into()), 30_000);
    machine.show_end();
    assert_eq!(machine.check(timing_out(34_999)), Err(Refusal::NotDue));
    assert_eq!(machine.check(timing_out(35_000)), Ok(()), "a question times out the same way");

    // An ended turn has nothing to time out.
    machine.start();
    machine.end(&TurnEnd::ended(ResultStatus::Success), 40_000);
    machine.show_end();
    assert_eq!((machine.waiting_since(), machine.check(timing_out(u64::MAX))), (None, Err(Refusal::NotDue)));

    // A timeout set after the pause began counts from when it was set.
    let paused = after(waiting(&["a"]));
    let set_late = |now_ms| Starting::TimeOut { now_ms, after_ms: 5_000, from_ms: 50_000 };
    assert_eq!(paused.check(set_late(54_999)), Err(Refusal::NotDue));
    assert_eq!(paused.check(set_late(55_000)), Ok(()));
}

#[test]
fn a_restored_wait_keeps_its_start_and_any_other_phase_drops_it() {
    let paused = Machine::restored_since(Phase::Waiting { pending: vec!["a".into()] }, Some(7));
    assert_eq!((paused.waiting_since(), paused.saved_status().waiting_since), (Some(7), Some(7)));
    assert_eq!(Machine::restored_since(Phase::Error, Some(7)).waiting_since(), None);
    assert_eq!(Machine::restored_since(Phase::Idle, Some(7)).saved_status().waiting_since, None);
}
