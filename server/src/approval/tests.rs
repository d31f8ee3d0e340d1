//! The approval state machine, step by step: no IO, no runtime.

use super::*;

fn call(id: &str, name: &str, needs_approval: bool) -> NewCall {
    NewCall {
        tool_id: id.into(),
        tool_name: name.into(),
        editable: name == "write_file",
        initial: if needs_approval { Initial::Pending } else { Initial::Cleared },
    }
}

fn three_shell_calls() -> ApprovalBatch {
    ApprovalBatch::new([
        call("a", "run_shell_command", true),
        call("b", "run_shell_command", true),
        call("c", "write_file", true),
    ])
    .unwrap()
}

/// Runs a call the user approved.
fn run(batch: &mut ApprovalBatch, id: &str) {
    assert_eq!(
        batch.step().unwrap(),
        Step::Run { tool_id: id.into(), modified_content: None, network: false, unsandboxed: false }
    );
    batch.finished(id).unwrap();
}

/// Runs a call nobody decided: handed out to be judged, and the gate lets it run.
fn run_judged(batch: &mut ApprovalBatch, id: &str) {
    assert_eq!(batch.step().unwrap(), Step::Judge(id.into()));
    batch.judged(id, Judgement::Run).unwrap();
    batch.finished(id).unwrap();
}

#[test]
fn three_calls_wait_together_in_order() {
    let mut batch = three_shell_calls();
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["a".into(), "b".into(), "c".into()]));
}

#[test]
fn approve_runs_each_call_once_then_continues() {
    let mut batch = three_shell_calls();
    batch.decide("a", Decision::Approve).unwrap();
    run(&mut batch, "a");
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["b".into(), "c".into()]));
    assert_eq!(batch.decide("a", Decision::Approve), Err(DecisionError::NotPending("a".into())), "never twice");
    batch.decide("b", Decision::Approve).unwrap();
    batch.decide("c", Decision::Approve).unwrap();
    run(&mut batch, "b");
    run(&mut batch, "c");
    assert_eq!(batch.step().unwrap(), Step::Continue);
}

#[test]
fn out_of_order_decisions_wait_for_earlier_calls() {
    let mut batch = three_shell_calls();
    batch.decide("b", Decision::Approve).unwrap();
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["a".into(), "c".into()]));
}

#[test]
fn unknown_and_decided_ids_are_not_pending() {
    let mut batch = three_shell_calls();
    assert_eq!(batch.decide("zzz", Decision::Approve), Err(DecisionError::NotPending("zzz".into())));
    batch.decide("a", Decision::Reject).unwrap();
    assert!(matches!(batch.decide("b", Decision::Approve), Err(DecisionError::NotPending(_))));
}

#[test]
fn reject_skips_everything_left_and_cancels() {
    let mut batch = ApprovalBatch::new([
        call("r", "read_file", false),
        call("a", "run_shell_command", true),
        call("w", "write_file", true),
    ])
    .unwrap();
    run_judged(&mut batch, "r");
    batch.decide("w", Decision::Approve).unwrap();
    batch.decide("a", Decision::Reject).unwrap();
    for id in ["a", "w"] {
        assert_eq!(
            batch.step().unwrap(),
            Step::Skip { tool_id: id.into(), result: REJECTED_RESULT.into(), reason: SkipReason::Rejected }
        );
    }
    assert_eq!(batch.step().unwrap(), Step::Cancelled);
}

#[test]
fn approve_session_approves_that_call_only_and_names_the_tool() {
    let mut batch = three_shell_calls();
    assert_eq!(batch.decide("a", Decision::ApproveSession), Ok(Some(Grant::Session("run_shell_command".into()))));
    run(&mut batch, "a");
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["b".into(), "c".into()]), "the gate judges b, not the batch");
    assert!(batch.reopen("b"), "the runtime found that the grant lets b run");
    assert!(!batch.reopen("b") && !batch.reopen("a") && !batch.reopen("zz"), "only a waiting call reopens");
    assert_eq!(batch.step().unwrap(), Step::Judge("b".into()), "judged again when it starts");
    batch.judged("b", Judgement::Run).unwrap();
    batch.finished("b").unwrap();
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["c".into()]), "other tools still ask");
}

#[test]
fn approve_turn_approves_that_call_only_and_grants_the_tool_for_the_turn() {
    let mut batch = three_shell_calls();
    assert_eq!(batch.decide("a", Decision::ApproveTurn), Ok(Some(Grant::Turn("run_shell_command".into()))));
    assert_eq!(
        batch.pending(),
        vec!["b".to_string(), "c".to_string()],
        "the others wait until the runtime re-judges them"
    );
    assert_eq!(batch.decide("a", Decision::ApproveTurn), Err(DecisionError::NotPending("a".into())));
}

#[test]
fn a_time_out_answers_every_waiting_call_and_the_question_asked_and_the_turn_goes_on() {
    let mut batch = ApprovalBatch::new([
        call("a", "run_shell_command", false),
        call("b", "run_shell_command", true),
        question("q"),
    ])
    .unwrap();
    run_judged(&mut batch, "a");
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["b".into()]));
    assert_eq!(batch.time_out("not run", "unanswered"), vec!["b".to_string()], "the question is not asked yet");
    assert_eq!(
        batch.step().unwrap(),
        Step::Skip { tool_id: "b".into(), result: "not run".into(), reason: SkipReason::TimedOut }
    );
    assert_eq!(batch.step().unwrap(), Step::Ask("q".into()));
    assert_eq!(batch.time_out("not run", "unanswered"), vec!["q".to_string()]);
    assert_eq!(
        batch.step().unwrap(),
        Step::Skip { tool_id: "q".into(), result: "unanswered".into(), reason: SkipReason::TimedOut }
    );
    assert_eq!(batch.step().unwrap(), Step::Continue, "not a rejection: the model is called again");
    assert!(batch.time_out("x", "y").is_empty(), "nothing waits any more");
}

#[test]
fn the_time_out_result_says_how_long_in_words() {
    assert_eq!(timed_out_result(600, false), "No decision within 10 minutes; the call was not run.");
    assert_eq!(timed_out_result(60, false), "No decision within 1 minute; the call was not run.");
    assert_eq!(timed_out_result(90, false), "No decision within 90 seconds; the call was not run.");
    assert!(timed_out_result(1, true).starts_with("No answer within 1 second;"));
}

#[test]
fn an_open_call_is_judged_when_it_starts_and_may_ask_or_be_denied_then() {
    let mut batch = ApprovalBatch::new([
        call("a", "run_shell_command", false),
        call("b", "run_shell_command", false),
        call("c", "run_shell_command", false),
    ])
    .unwrap();
    assert_eq!(batch.judged("b", Judgement::Run), Err(BatchError::NotJudged("b".into())), "not its turn");
    run_judged(&mut batch, "a");
    assert_eq!(batch.step().unwrap(), Step::Judge("b".into()));
    batch.judged("b", Judgement::Ask).unwrap();
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["b".into()]), "YOLO went off: b gets its card now");
    assert_eq!(batch.judged("b", Judgement::Run), Err(BatchError::NotJudged("b".into())), "a card is the user's");
    batch.decide("b", Decision::Approve).unwrap();
    run(&mut batch, "b");
    assert_eq!(batch.step().unwrap(), Step::Judge("c".into()));
    batch.judged("c", Judgement::Deny("no".into())).unwrap();
    assert_eq!(
        batch.step().unwrap(),
        Step::Skip { tool_id: "c".into(), result: "no".into(), reason: SkipReason::Denied }
    );
    assert_eq!(batch.step().unwrap(), Step::Continue);
}

#[test]
fn a_batch_saved_by_an_earlier_version_keeps_only_the_users_content_as_a_decision() {
    let old = r#"{"calls":[
        {"tool_id":"a","tool_name":"write_file","editable":true,"state":{"Cleared":{"modified_content":"mine"}}},
        {"tool_id":"b","tool_name":"run_shell_command","editable":false,"state":{"Cleared":{"modified_content":null}}}
    ],"rejected":false}"#;
    let mut batch: ApprovalBatch = serde_json::from_str(old).unwrap();
    assert_eq!(
        batch.step().unwrap(),
        Step::Run { tool_id: "a".into(), modified_content: Some("mine".into()), network: false, unsandboxed: false }
    );
    batch.finished("a").unwrap();
    assert_eq!(batch.step().unwrap(), Step::Judge("b".into()), "cleared by whom is unknown: judged again");
}

#[test]
fn edit_feeds_the_instruction_back_to_every_waiting_call() {
    let mut batch = three_shell_calls();
    batch.decide("a", Decision::Approve).unwrap();
    run(&mut batch, "a");
    let edit = Decision::Edit { instruction: Some("  only delete .log files ".into()), modified_content: None };
    batch.decide("b", edit).unwrap();
    let expected = "[USER FEEDBACK - Tool was not executed]: only delete .log files".to_string();
    for id in ["b", "c"] {
        assert_eq!(
            batch.step().unwrap(),
            Step::Skip { tool_id: id.into(), result: expected.clone(), reason: SkipReason::Feedback }
        );
    }
    assert_eq!(batch.step().unwrap(), Step::Continue, "the model goes on and regenerates");
}

#[test]
fn blank_edit_is_refused_and_changes_nothing() {
    let mut batch = three_shell_calls();
    let before = batch.clone();
    for instruction in [None, Some(String::new()), Some(" \n\t".into())] {
        let edit = Decision::Edit { instruction, modified_content: None };
        assert_eq!(batch.decide("a", edit), Err(DecisionError::BlankInstruction));
    }
    assert_eq!(batch, before);
}

#[test]
fn modified_content_only_for_edit_tools() {
    let mut batch = three_shell_calls();
    let content = Decision::Edit { instruction: None, modified_content: Some("mine".into()) };
    assert!(matches!(batch.decide("a", content.clone()), Err(DecisionError::ContentNotEditable(_))));
    batch.decide("a", Decision::Approve).unwrap();
    batch.decide("b", Decision::Approve).unwrap();
    batch.decide("c", content).unwrap();
    run(&mut batch, "a");
    run(&mut batch, "b");
    assert_eq!(
        batch.step().unwrap(),
        Step::Run { tool_id: "c".into(), modified_content: Some("mine".into()), network: false, unsandboxed: false }
    );
}

#[test]
fn calls_that_need_no_approval_run_straight_away() {
    let mut batch = ApprovalBatch::new([call("r", "read_file", false), call("s", "run_shell_command", false)]).unwrap();
    run_judged(&mut batch, "r");
    run_judged(&mut batch, "s");
    assert_eq!(batch.step().unwrap(), Step::Continue);
    assert!(batch.pending().is_empty());
}

fn question(id: &str) -> NewCall {
    NewCall { tool_id: id.into(), tool_name: "ask_user".into(), editable: false, initial: Initial::Asking }
}

#[test]
fn a_question_is_asked_when_its_turn_comes_and_answered_once() {
    let mut batch =
        ApprovalBatch::new([call("a", "run_shell_command", true), question("q"), call("b", "run_shell_command", true)])
            .unwrap();
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["a".into(), "b".into()]), "questions are not approvals");
    assert_eq!(batch.asked(), None, "not yet its turn");
    assert_eq!(batch.answer("q", Some("x".into()), "no"), Err(DecisionError::NotPending("q".into())));
    batch.decide("a", Decision::Approve).unwrap();
    run(&mut batch, "a");
    assert_eq!(batch.step().unwrap(), Step::Ask("q".into()));
    assert_eq!(batch.asked(), Some("q"));
    assert!(matches!(batch.decide("q", Decision::Approve), Err(DecisionError::NotPending(_))));
    batch.answer("q", Some("blue".into()), "no").unwrap();
    assert_eq!(batch.answer("q", Some("red".into()), "no"), Err(DecisionError::NotPending("q".into())), "once");
    assert_eq!(
        batch.step().unwrap(),
        Step::Skip { tool_id: "q".into(), result: "blue".into(), reason: SkipReason::Answered }
    );
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["b".into()]));
}

#[test]
fn turning_a_question_down_ends_the_turn() {
    let mut batch = ApprovalBatch::new([question("q"), question("r"), call("s", "run_shell_command", false)]).unwrap();
    assert_eq!(batch.step().unwrap(), Step::Ask("q".into()));
    batch.answer("q", None, "turned down").unwrap();
    let skipped: Vec<Step> = (0..3).map(|_| batch.step().unwrap()).collect();
    assert_eq!(
        skipped[0],
        Step::Skip { tool_id: "q".into(), result: "turned down".into(), reason: SkipReason::Rejected }
    );
    assert!(matches!(&skipped[1], Step::Skip { tool_id, reason: SkipReason::Rejected, .. } if tool_id == "r"));
    assert!(matches!(&skipped[2], Step::Skip { tool_id, reason: SkipReason::Rejected, .. } if tool_id == "s"));
    assert_eq!(batch.step().unwrap(), Step::Cancelled);
}

#[test]
fn a_rejected_call_means_later_questions_are_never_asked() {
    let mut batch = ApprovalBatch::new([call("a", "write_file", true), question("q")]).unwrap();
    batch.decide("a", Decision::Reject).unwrap();
    assert!(matches!(batch.step().unwrap(), Step::Skip { .. }));
    assert!(matches!(batch.step().unwrap(), Step::Skip { reason: SkipReason::Rejected, .. }));
    assert_eq!(batch.step().unwrap(), Step::Cancelled);
}

#[test]
fn a_crash_interrupts_the_running_call_and_keeps_the_waiting_ones_and_what_was_approved_behind_them() {
    let mut batch = three_shell_calls();
    batch.decide("a", Decision::Approve).unwrap();
    batch.decide("c", Decision::Approve).unwrap();
    assert_eq!(
        batch.step().unwrap(),
        Step::Run { tool_id: "a".into(), modified_content: None, network: false, unsandboxed: false }
    );
    // The hub dies while `a` runs; the batch was saved in this state.
    let mut recovered: ApprovalBatch = serde_json::from_str(&serde_json::to_string(&batch).unwrap()).unwrap();
    assert_eq!(recovered.running(), Some("a"));
    assert_eq!(recovered.interrupt(), ["a"], "c waits behind b: it keeps the user's approval");
    assert_eq!(
        recovered.step().unwrap(),
        Step::Skip { tool_id: "a".into(), result: INTERRUPTED_RESULT.into(), reason: SkipReason::Interrupted }
    );
    assert_eq!(recovered.step().unwrap(), Step::Wait(vec!["b".into()]), "b keeps its card");
    assert!(matches!(recovered.decide("a", Decision::Approve), Err(DecisionError::NotPending(_))), "never again");
    recovered.decide("b", Decision::Approve).unwrap();
    run(&mut recovered, "b");
    run(&mut recovered, "c");
    assert_eq!(recovered.step().unwrap(), Step::Continue);
    assert!(recovered.interrupt().is_empty(), "a settled batch has nothing to interrupt");
}

#[test]
fn approved_calls_that_had_not_started_are_closed_as_not_run_when_nothing_waits_before_them() {
    let mut batch = ApprovalBatch::new([call("r", "read_file", false), call("w", "write_file", true)]).unwrap();
    batch.decide("w", Decision::Approve).unwrap();
    assert_eq!(batch.interrupt(), ["r", "w"]);
    for id in ["r", "w"] {
        assert_eq!(
            batch.step().unwrap(),
            Step::Skip { tool_id: id.into(), result: NOT_STARTED_RESULT.into(), reason: SkipReason::Interrupted }
        );
    }
    assert_eq!(batch.step().unwrap(), Step::Continue, "nothing is left to run after a restart");
}

#[test]
fn stop_closes_every_call_without_a_result_and_says_the_running_one_was_ended() {
    let mut batch = three_shell_calls();
    batch.decide("a", Decision::Approve).unwrap();
    run(&mut batch, "a");
    batch.decide("b", Decision::Approve).unwrap();
    assert!(matches!(batch.step().unwrap(), Step::Run { .. }));
    assert_eq!(batch.stop("stopped"), ["b", "c"]);
    assert_eq!(
        batch.step().unwrap(),
        Step::Skip { tool_id: "b".into(), result: STOPPED_RUNNING_RESULT.into(), reason: SkipReason::StoppedRunning },
        "it ran part way: the model must not think it never ran"
    );
    assert_eq!(
        batch.step().unwrap(),
        Step::Skip { tool_id: "c".into(), result: "stopped".into(), reason: SkipReason::Stopped }
    );
    assert_eq!(batch.step().unwrap(), Step::Continue);
}

#[test]
fn a_runtime_out_of_order_gets_an_error_not_a_panic() {
    let mut batch = ApprovalBatch::new([call("a", "read_file", false), call("b", "read_file", false)]).unwrap();
    assert_eq!(batch.step().unwrap(), Step::Judge("a".into()));
    batch.judged("a", Judgement::Run).unwrap();
    assert_eq!(batch.step(), Err(BatchError::StillRunning("a".into())));
    assert_eq!(batch.finished("b"), Err(BatchError::NotRunning("b".into())));
    batch.finished("a").unwrap();
    assert_eq!(batch.finished("a"), Err(BatchError::NotRunning("a".into())), "reported once");
}

#[test]
fn ids_must_be_unique_within_a_batch() {
    let twice = ApprovalBatch::new([call("x", "read_file", false), call("x", "run_shell_command", true)]);
    assert_eq!(twice, Err(BatchError::DuplicateId("x".into())));
}

#[test]
fn a_call_that_could_not_start_is_judged_again_and_stop_says_it_did_not_run() {
    let mut batch = ApprovalBatch::new([call("a", "run_shell_command", true)]).unwrap();
    batch.decide("a", Decision::Approve).unwrap();
    assert!(matches!(batch.step().unwrap(), Step::Run { .. }));
    batch.not_started("a").unwrap();
    assert_eq!(batch.step().unwrap(), Step::Judge("a".into()), "not run on an approval of the past");
    batch.judged("a", Judgement::Run).unwrap();
    batch.not_started("a").unwrap();
    assert_eq!(batch.not_started("a"), Err(BatchError::NotRunning("a".into())));
    batch.stop("not run");
    assert_eq!(
        batch.step().unwrap(),
        Step::Skip { tool_id: "a".into(), result: "not run".into(), reason: SkipReason::Stopped }
    );
}

#[test]
fn a_denied_call_never_runs_and_does_not_hold_up_the_others() {
    let denied = NewCall {
        tool_id: "d".into(),
        tool_name: "run_shell_command".into(),
        editable: false,
        initial: Initial::Denied("No force pushes here.".into()),
    };
    let mut batch = ApprovalBatch::new([call("a", "read_file", false), denied, call("w", "write_file", true)]).unwrap();
    run_judged(&mut batch, "a");
    assert_eq!(
        batch.step().unwrap(),
        Step::Skip { tool_id: "d".into(), result: "No force pushes here.".into(), reason: SkipReason::Denied }
    );
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["w".into()]));
    assert_eq!(batch.decide("d", Decision::Approve), Err(DecisionError::NotPending("d".into())), "no card to approve");
    batch.decide("w", Decision::Approve).unwrap();
    run(&mut batch, "w");
    assert_eq!(batch.step().unwrap(), Step::Continue, "a denial does not end the turn");
}

#[test]
fn approve_always_approves_the_call_and_leaves_the_others_to_the_gate() {
    let mut batch = three_shell_calls();
    assert_eq!(batch.decide("b", Decision::ApproveAlways), Ok(None));
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["a".into(), "c".into()]), "a and c still wait");
    assert_eq!(batch.decide("b", Decision::ApproveAlways), Err(DecisionError::NotPending("b".into())), "once");
    assert!(batch.reopen("c"), "the new rule lets c run, as the runtime judged");
    batch.decide("a", Decision::Approve).unwrap();
    run(&mut batch, "a");
    run(&mut batch, "b");
    assert_eq!(batch.step().unwrap(), Step::Judge("c".into()));
    batch.decide("a", Decision::Reject).unwrap_err();
}

#[test]
fn a_rejection_also_stops_calls_that_were_open_or_approved() {
    let mut batch = ApprovalBatch::new([
        call("a", "run_shell_command", true),
        call("b", "run_shell_command", false),
        call("c", "run_shell_command", true),
    ])
    .unwrap();
    batch.decide("c", Decision::Approve).unwrap();
    batch.decide("a", Decision::Reject).unwrap();
    for id in ["a", "b", "c"] {
        assert!(
            matches!(batch.step().unwrap(), Step::Skip { tool_id, reason: SkipReason::Rejected, .. } if tool_id == id)
        );
    }
    assert_eq!(batch.step().unwrap(), Step::Cancelled);
}

/// "Yes, with network": the command runs with the network, that call only;
/// a file edit cannot take it, and nothing changes on the refusal.
#[test]
fn a_command_approved_with_network_runs_with_it_and_only_a_command_takes_it() {
    let mut batch = ApprovalBatch::new([
        call("a", "run_shell_command", true),
        call("b", "write_file", true),
        call("c", "run_shell_command", true),
    ])
    .unwrap();
    assert_eq!(
        batch.decide("b", Decision::ApproveNetwork),
        Err(DecisionError::NetworkForCommandsOnly("write_file".into()))
    );
    assert_eq!(batch.pending(), ["a", "b", "c"], "the refusal changed nothing");
    batch.decide("a", Decision::ApproveNetwork).unwrap();
    batch.decide("b", Decision::Approve).unwrap();
    batch.decide("c", Decision::Approve).unwrap();
    assert_eq!(
        batch.step().unwrap(),
        Step::Run { tool_id: "a".into(), modified_content: None, network: true, unsandboxed: false }
    );
    batch.finished("a").unwrap();
    assert_eq!(
        batch.step().unwrap(),
        Step::Run { tool_id: "b".into(), modified_content: None, network: false, unsandboxed: false }
    );
    batch.finished("b").unwrap();
    assert_eq!(
        batch.step().unwrap(),
        Step::Run { tool_id: "c".into(), modified_content: None, network: false, unsandboxed: false }
    );
    // Kept across a restart as the batch is saved.
    let saved =
        serde_json::to_string(&CallState::Approved { modified_content: None, network: true, unsandboxed: false })
            .unwrap();
    assert_eq!(
        serde_json::from_str::<CallState>(&saved).unwrap(),
        CallState::Approved { modified_content: None, network: true, unsandboxed: false }
    );
    let older: CallState = serde_json::from_str(r#"{"Approved":{"modified_content":null}}"#).unwrap();
    assert_eq!(older, CallState::Approved { modified_content: None, network: false, unsandboxed: false });
}

/// "Yes, outside the sandbox": that command runs without it, that call only;
/// a file edit cannot take it, and it is kept across a restart.
#[test]
fn a_command_approved_outside_the_sandbox_runs_so_and_only_a_command_takes_it() {
    let mut batch = ApprovalBatch::new([call("a", "run_shell_command", true), call("b", "write_file", true)]).unwrap();
    assert_eq!(
        batch.decide("b", Decision::ApproveUnsandboxed),
        Err(DecisionError::UnsandboxedForCommandsOnly("write_file".into()))
    );
    assert_eq!(batch.pending(), ["a", "b"], "the refusal changed nothing");
    batch.decide("a", Decision::ApproveUnsandboxed).unwrap();
    batch.decide("b", Decision::Approve).unwrap();
    let unsandboxed = Step::Run { tool_id: "a".into(), modified_content: None, network: false, unsandboxed: true };
    assert_eq!(batch.step().unwrap(), unsandboxed);
    batch.finished("a").unwrap();
    let plain = Step::Run { tool_id: "b".into(), modified_content: None, network: false, unsandboxed: false };
    assert_eq!(batch.step().unwrap(), plain);
    let state = CallState::Approved { modified_content: None, network: false, unsandboxed: true };
    let saved = serde_json::to_string(&state).unwrap();
    assert_eq!(serde_json::from_str::<CallState>(&saved).unwrap(), state);
}
