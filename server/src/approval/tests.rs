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

fn run(batch: &mut ApprovalBatch, id: &str) {
    assert_eq!(batch.step().unwrap(), Step::Run { tool_id: id.into(), modified_content: None });
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
    run(&mut batch, "r");
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
fn approve_session_clears_same_tool_calls_and_names_the_tool() {
    let mut batch = three_shell_calls();
    assert_eq!(batch.decide("a", Decision::ApproveSession), Ok(Some("run_shell_command".into())));
    run(&mut batch, "a");
    run(&mut batch, "b");
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["c".into()]), "other tools still ask");
    let mut later = ApprovalBatch::new([call("d", "write_file", true)]).unwrap();
    later.allow_tool("write_file");
    run(&mut later, "d");
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
    assert_eq!(batch.step().unwrap(), Step::Run { tool_id: "c".into(), modified_content: Some("mine".into()) });
}

#[test]
fn calls_that_need_no_approval_run_straight_away() {
    let mut batch = ApprovalBatch::new([call("r", "read_file", false), call("s", "run_shell_command", false)]).unwrap();
    run(&mut batch, "r");
    run(&mut batch, "s");
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
    assert_eq!(batch.step().unwrap(), Step::Run { tool_id: "a".into(), modified_content: None });
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
    assert!(matches!(batch.step().unwrap(), Step::Run { .. }));
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
fn a_call_that_could_not_start_is_cleared_again_and_stop_says_it_did_not_run() {
    let mut batch = ApprovalBatch::new([call("a", "run_shell_command", false)]).unwrap();
    assert!(matches!(batch.step().unwrap(), Step::Run { .. }));
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
    run(&mut batch, "a");
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
fn a_rule_saved_from_a_card_clears_only_the_calls_it_names_that_wait() {
    let mut batch = three_shell_calls();
    batch.decide("a", Decision::Approve).unwrap();
    batch.allow_calls(&["a".into(), "c".into(), "zz".into()]);
    run(&mut batch, "a");
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["b".into()]), "b is not named; c was cleared");
    batch.decide("b", Decision::Reject).unwrap();
    assert!(matches!(batch.step().unwrap(), Step::Skip { reason: SkipReason::Rejected, .. }));
    assert!(
        matches!(batch.step().unwrap(), Step::Skip { tool_id, reason: SkipReason::Rejected, .. } if tool_id == "c"),
        "a rejection still stops a call cleared by a rule"
    );
}

#[test]
fn approve_always_clears_the_call_and_the_others_its_rule_allows() {
    let mut batch = three_shell_calls();
    assert_eq!(batch.decide("b", Decision::ApproveAlways { also: vec!["c".into()] }), Ok(None));
    assert_eq!(batch.step().unwrap(), Step::Wait(vec!["a".into()]), "a was neither decided nor allowed");
    assert_eq!(
        batch.decide("b", Decision::ApproveAlways { also: vec![] }),
        Err(DecisionError::NotPending("b".into())),
        "decided once"
    );
    batch.decide("a", Decision::Approve).unwrap();
    for id in ["a", "b", "c"] {
        run(&mut batch, id);
    }
    assert_eq!(batch.step().unwrap(), Step::Continue);
}
