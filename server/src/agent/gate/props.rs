//! The gate's property: random replies of calls (plain, read-only, protected,
//! denied, asking, allowed by a rule) and random user actions (approve, "for
//! this session", "Always", reject, YOLO toggles, rule deletions, trust,
//! restarts), driven through the approval batch the way the built-in agent's
//! runtime drives it (`Step::Judge` asked with the gate as things stand,
//! `reopen_allowed` after a loosening decision). Invariant: a call runs only
//! if, at the instant it starts, the gate allows it or the user approved
//! exactly that call. Seeded: the same rounds every run.

use std::collections::{BTreeSet, HashSet};

use app::types::PolicyDecision;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::{reopen_allowed, start, Facts, Start};
use crate::approval::{ApprovalBatch, Decision, Initial, NewCall, Step};
use crate::policy;

/// How many random sessions the property runs (each up to 40 actions).
pub const ROUNDS: u32 = 3000;
const SEED: [u8; 32] = *b"agent-hub gate property, seed 01";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    ReadOnly,
    /// Writes the folder's `.gemini`: always asks unless denied.
    Protected,
    /// A rule denies it.
    Denied,
    /// A rule asks.
    Asking,
    /// The folder's own allow rule `n` covers it (held back while untrusted).
    FolderAllowed(u8),
}

#[derive(Debug, Clone)]
struct Call {
    id: String,
    tool: &'static str,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Action {
    Reply(Vec<(&'static str, Kind)>),
    Approve(usize),
    ApproveSession(usize),
    ApproveAlways(usize),
    Reject(usize),
    Feedback(usize),
    Yolo(bool),
    DeleteRule(u8),
    Trust(bool),
    Restart,
}

/// Everything the gate reads, as it is now.
#[derive(Debug, Default)]
struct World {
    yolo: bool,
    trusted: bool,
    grants: HashSet<String>,
    /// The folder's own allow rules still in its files.
    folder_rules: BTreeSet<u8>,
    /// Tools allowed by "Always in this folder".
    always: HashSet<String>,
}

impl World {
    fn judge(&self, call: &Call) -> Start {
        let decision = match call.kind {
            Kind::Denied => Some(PolicyDecision::Deny),
            Kind::Asking => Some(PolicyDecision::AskUser),
            Kind::FolderAllowed(n) if self.trusted && self.folder_rules.contains(&n) => Some(PolicyDecision::Allow),
            _ if self.always.contains(call.tool) && call.kind != Kind::Protected => Some(PolicyDecision::Allow),
            _ => None,
        };
        let verdict = policy::Verdict { decision, source: decision.map(|_| "x.toml".into()), ..Default::default() };
        start(Facts {
            refused: false,
            read_only: call.kind == Kind::ReadOnly,
            granted: self.grants.contains(call.tool),
            protected: call.kind == Kind::Protected,
            yolo: self.yolo,
            verdict: &verdict,
        })
    }
}

struct Session {
    world: World,
    calls: Vec<Call>,
    batch: Option<ApprovalBatch>,
    /// Calls the user approved, each exactly.
    approved: HashSet<String>,
    next_id: usize,
    ran: Vec<String>,
}

impl Session {
    fn call(&self, id: &str) -> &Call {
        self.calls.iter().find(|call| call.id == id).expect("a planned call")
    }

    /// The runtime working through the batch, checking the invariant at each start.
    fn work_through(&mut self) -> Result<(), TestCaseError> {
        loop {
            let Some(batch) = self.batch.as_mut() else { return Ok(()) };
            match batch.step().map_err(|err| TestCaseError::fail(err.to_string()))? {
                Step::Judge(id) => {
                    let call = self.calls.iter().find(|call| call.id == id).expect("planned").clone();
                    let judged = self.world.judge(&call);
                    batch.judged(&id, judged.judgement()).map_err(|err| TestCaseError::fail(err.to_string()))?;
                    if judged.initial == Initial::Cleared {
                        batch.finished(&id).map_err(|err| TestCaseError::fail(err.to_string()))?;
                        self.ran.push(id);
                    }
                }
                Step::Run { tool_id, .. } => {
                    // Only the user's approval of exactly this call hands it out as Run.
                    prop_assert!(
                        self.approved.contains(&tool_id),
                        "{tool_id} ran without the gate's word at its start or the user's approval of it"
                    );
                    batch.finished(&tool_id).map_err(|err| TestCaseError::fail(err.to_string()))?;
                    self.ran.push(tool_id);
                }
                Step::Skip { .. } => {}
                Step::Wait(_) | Step::Ask(_) => return Ok(()),
                Step::Cancelled | Step::Continue => {
                    self.batch = None;
                    return Ok(());
                }
            }
        }
    }

    fn decide(&mut self, index: usize, decision: Decision) -> Result<(), TestCaseError> {
        let Some(batch) = self.batch.as_mut() else { return Ok(()) };
        let pending = batch.pending();
        if pending.is_empty() {
            return Ok(());
        }
        let id = pending[index % pending.len()].clone();
        let tool = self.calls.iter().find(|call| call.id == id).expect("planned").tool;
        let approves = matches!(decision, Decision::Approve | Decision::ApproveSession | Decision::ApproveAlways);
        let loosens = matches!(decision, Decision::ApproveSession | Decision::ApproveAlways);
        match &decision {
            Decision::ApproveSession => {
                self.world.grants.insert(tool.to_string());
            }
            Decision::ApproveAlways => {
                self.world.always.insert(tool.to_string());
            }
            _ => {}
        }
        batch.decide(&id, decision).map_err(|err| TestCaseError::fail(err.to_string()))?;
        if approves {
            self.approved.insert(id);
        }
        if loosens {
            let (world, calls) = (&self.world, &self.calls);
            reopen_allowed(batch, |id| calls.iter().find(|call| call.id == id).map(|call| world.judge(call)));
        }
        self.work_through()
    }

    fn act(&mut self, action: Action) -> Result<(), TestCaseError> {
        match action {
            Action::Reply(calls) if self.batch.is_none() => {
                let mut new_calls = Vec::new();
                for (tool, kind) in calls {
                    self.next_id += 1;
                    let call = Call { id: format!("c{}", self.next_id), tool, kind };
                    let planned = self.world.judge(&call);
                    new_calls.push(NewCall {
                        tool_id: call.id.clone(),
                        tool_name: tool.to_string(),
                        editable: false,
                        initial: planned.initial,
                    });
                    self.calls.push(call);
                }
                self.batch = Some(ApprovalBatch::new(new_calls).map_err(|err| TestCaseError::fail(err.to_string()))?);
                self.work_through()
            }
            Action::Reply(_) => Ok(()),
            Action::Approve(i) => self.decide(i, Decision::Approve),
            Action::ApproveSession(i) => self.decide(i, Decision::ApproveSession),
            Action::ApproveAlways(i) => self.decide(i, Decision::ApproveAlways),
            Action::Reject(i) => self.decide(i, Decision::Reject),
            Action::Feedback(i) => {
                self.decide(i, Decision::Edit { instruction: Some("not that".into()), modified_content: None })
            }
            Action::Yolo(on) => {
                self.world.yolo = on;
                Ok(())
            }
            Action::DeleteRule(n) => {
                self.world.folder_rules.remove(&n);
                self.world.always.clear();
                Ok(())
            }
            Action::Trust(on) => {
                self.world.trusted = on;
                Ok(())
            }
            Action::Restart => {
                // Saved, read back, and what was cut short closed; grants end with the session's memory.
                if let Some(batch) = self.batch.take() {
                    let text = serde_json::to_string(&batch).map_err(|err| TestCaseError::fail(err.to_string()))?;
                    let mut back: ApprovalBatch =
                        serde_json::from_str(&text).map_err(|err| TestCaseError::fail(err.to_string()))?;
                    back.interrupt();
                    self.batch = Some(back);
                    // Recovery judges nothing: it stops at the first waiting call.
                    let batch = self.batch.as_mut().expect("just set");
                    loop {
                        match batch.step().map_err(|err| TestCaseError::fail(err.to_string()))? {
                            Step::Skip { .. } => continue,
                            Step::Wait(_) | Step::Ask(_) => break,
                            Step::Cancelled | Step::Continue => {
                                self.batch = None;
                                break;
                            }
                            other => return Err(TestCaseError::fail(format!("recovery stepped to {other:?}"))),
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Plain),
        1 => Just(Kind::ReadOnly),
        2 => Just(Kind::Protected),
        1 => Just(Kind::Denied),
        1 => Just(Kind::Asking),
        2 => (0u8..3).prop_map(Kind::FolderAllowed),
    ]
}

fn action() -> impl Strategy<Value = Action> {
    let tool = prop::sample::select(vec!["run_shell_command", "write_file", "replace"]);
    prop_oneof![
        3 => prop::collection::vec((tool, kind()), 1..5).prop_map(Action::Reply),
        3 => (0usize..5).prop_map(Action::Approve),
        2 => (0usize..5).prop_map(Action::ApproveSession),
        2 => (0usize..5).prop_map(Action::ApproveAlways),
        1 => (0usize..5).prop_map(Action::Reject),
        1 => (0usize..5).prop_map(Action::Feedback),
        2 => any::<bool>().prop_map(Action::Yolo),
        1 => (0u8..3).prop_map(Action::DeleteRule),
        1 => any::<bool>().prop_map(Action::Trust),
        1 => Just(Action::Restart),
    ]
}

/// Every start is checked inside `work_through`; here, also that a call the
/// gate stops never ran on a sibling's decision: each run is accounted for.
#[test]
fn a_call_runs_only_if_the_gate_allows_it_at_its_start_or_the_user_approved_exactly_it() {
    let config = Config { cases: ROUNDS, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
    let strategy = (any::<bool>(), prop::collection::vec(action(), 1..40));
    let ran = std::cell::Cell::new(0usize);
    runner
        .run(&strategy, |(trusted, actions)| {
            let world = World { trusted, folder_rules: (0..3).collect(), ..World::default() };
            let mut session = Session {
                world,
                calls: Vec::new(),
                batch: None,
                approved: HashSet::new(),
                next_id: 0,
                ran: Vec::new(),
            };
            for action in actions {
                let before = session.ran.len();
                session.act(action)?;
                // No action both changes the world and runs calls after it: the
                // world now is the world each of these calls started in.
                for id in &session.ran[before..] {
                    let call = session.call(id);
                    let allowed_now = session.world.judge(call).initial == Initial::Cleared;
                    prop_assert!(
                        allowed_now || session.approved.contains(id),
                        "{id} ({:?}) ran: the gate does not allow it now and the user did not approve it",
                        call.kind
                    );
                }
            }
            ran.set(ran.get() + session.ran.len());
            Ok(())
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(ran.get() > ROUNDS as usize, "the property ran calls at all ({})", ran.get());
}
