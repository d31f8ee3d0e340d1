//! The gate's property, on the built-in agent's real runtime: random replies
//! of calls (plain, read-only, protected, denied, asking, allowed by a folder
//! rule) and random user actions (approve, "for this session", "Always",
//! reject, feedback, YOLO toggles, rule deletions, trust, restarts) go through
//! `SessionRuntime::settle` (which asks the gate when a call starts),
//! `builtin::apply_decision` (which re-judges waiting calls after a grant or a
//! rule) and `recover_batch`. Only the world the gate reads (rules, YOLO,
//! trust) is made up. Invariant: a call runs only if, at the instant it is
//! handed out to run, the gate allows it or the user approved exactly that
//! call. Seeded: the same rounds every run.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use protocol::api::PolicyDecision;
use protocol::events::{AgentEvent, ToolStatus};
use serde_json::json;

use super::{start, Facts, Ruling};
use crate::agents::builtin::apply_decision;
use crate::agents::builtin::batch::{AlreadyLogged, Settled};
use crate::agents::builtin::{PausedTurn, PlannedCall};
use crate::agents::Grants;
use crate::agents::SessionRuntime;
use crate::approval::{ApprovalBatch, Decision, Initial, NewCall};
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

impl Kind {
    fn code(self) -> u64 {
        match self {
            Kind::Plain => 0,
            Kind::ReadOnly => 1,
            Kind::Protected => 2,
            Kind::Denied => 3,
            Kind::Asking => 4,
            Kind::FolderAllowed(n) => 10 + u64::from(n),
        }
    }

    fn of(call: &PlannedCall) -> Kind {
        match call.args["kind"].as_u64().unwrap_or(0) {
            1 => Kind::ReadOnly,
            2 => Kind::Protected,
            3 => Kind::Denied,
            4 => Kind::Asking,
            n @ 10.. => Kind::FolderAllowed((n - 10) as u8),
            _ => Kind::Plain,
        }
    }
}

#[derive(Debug, Clone)]
enum Action {
    Reply(Vec<(&'static str, Kind)>),
    Approve(usize),
    ApproveSession(usize),
    ApproveTurn(usize),
    /// The model's turn ends (nothing of it waits): "for this turn" ends with it.
    EndTurn,
    ApproveAlways(usize),
    Reject(usize),
    Feedback(usize),
    Yolo(bool),
    DeleteRule(u8),
    Trust(bool),
    Restart,
}

/// What the gate reads besides the session's grants, as it is now.
#[derive(Debug, Default)]
struct World {
    yolo: bool,
    trusted: bool,
    /// The folder's own allow rules still in its files.
    folder_rules: BTreeSet<u8>,
    /// Tools allowed by "Always in this folder".
    always: HashSet<String>,
}

impl World {
    /// The gate as the hub would ask it (`builtin::judge_now`), with the session's `grants`.
    fn judge(&self, call: &PlannedCall, grants: Grants) -> Ruling {
        let kind = Kind::of(call);
        let decision = match kind {
            Kind::Denied => Some(PolicyDecision::Deny),
            Kind::Asking => Some(PolicyDecision::AskUser),
            Kind::FolderAllowed(n) if self.trusted && self.folder_rules.contains(&n) => Some(PolicyDecision::Allow),
            _ if self.always.contains(&call.name) && kind != Kind::Protected => Some(PolicyDecision::Allow),
            _ => None,
        };
        let verdict = policy::Verdict { decision, source: decision.map(|_| "x.toml".into()), ..Default::default() };
        start(Facts {
            refused: false,
            read_only: kind == Kind::ReadOnly,
            granted: grants.session.contains(&call.name),
            turn_granted: grants.turn.contains(&call.name),
            protected: kind == Kind::Protected,
            yolo: self.yolo,
            verdict: &verdict,
        })
    }
}

struct Session {
    world: World,
    runtime: SessionRuntime,
    /// Calls the user approved, each exactly.
    approved: HashSet<String>,
    next_id: usize,
    ran: usize,
}

fn fail(err: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(err.to_string())
}

impl Session {
    fn new(world: World) -> Self {
        let runtime = SessionRuntime::fresh("props".into(), PathBuf::from("/nonexistent/props"), None);
        Session { world, runtime, approved: HashSet::new(), next_id: 0, ran: 0 }
    }

    /// The runtime working through its batch as a turn does, checking each start.
    fn work_through(&mut self) -> Result<(), TestCaseError> {
        loop {
            let world = &self.world;
            let judge = |call: &PlannedCall, grants: Grants| world.judge(call, grants);
            match self.runtime.settle(&AlreadyLogged::default(), Some(&judge)).map_err(fail)? {
                Settled::Run { tool_id, .. } => {
                    let allowed_now = {
                        let state = self.runtime.state();
                        let call =
                            state.agent.builtin.paused.as_ref().and_then(|paused| paused.calls.get(&tool_id)).cloned();
                        call.is_some_and(|call| world.judge(&call, state.agent.grants()).initial == Initial::Cleared)
                    };
                    prop_assert!(
                        allowed_now || self.approved.contains(&tool_id),
                        "{tool_id} ran: the gate does not allow it now and the user did not approve exactly it"
                    );
                    let event = AgentEvent::ToolResult {
                        tool_id: tool_id.clone(),
                        status: ToolStatus::Success,
                        output: Some("ok".into()),
                        error: None,
                        diff: None,
                    };
                    self.runtime.finish(&tool_id, event, "ok".into()).map_err(fail)?;
                    self.ran += 1;
                }
                Settled::Continue => {
                    self.runtime.state().agent.builtin.paused = None;
                    return Ok(());
                }
                Settled::Cancelled => {
                    self.runtime.close_batch("stopped");
                    return Ok(());
                }
                Settled::Wait(_) | Settled::Ask(_) => return Ok(()),
            }
        }
    }

    fn decide(&mut self, index: usize, decision: Decision) -> Result<(), TestCaseError> {
        let pending = match self.runtime.state().agent.builtin.paused.as_ref() {
            Some(paused) => paused.batch.pending(),
            None => return Ok(()),
        };
        if pending.is_empty() {
            return Ok(());
        }
        let id = pending[index % pending.len()].clone();
        if decision == Decision::ApproveAlways {
            // The hub saves the rule before the decision (api::chat::approve_always).
            let name = self
                .runtime
                .state()
                .agent
                .builtin
                .paused
                .as_ref()
                .and_then(|paused| paused.calls.get(&id))
                .map(|c| c.name.clone());
            self.world.always.extend(name);
        }
        let approves = matches!(
            decision,
            Decision::Approve | Decision::ApproveSession | Decision::ApproveTurn | Decision::ApproveAlways
        );
        {
            let world = &self.world;
            let judge = |call: &PlannedCall, grants: Grants| world.judge(call, grants);
            let mut state = self.runtime.state();
            apply_decision(&judge, &self.runtime, &mut state.agent, &id, decision)
                .map_err(|err| fail(err.to_string()))?;
        }
        if approves {
            self.approved.insert(id);
        }
        self.work_through()
    }

    fn reply(&mut self, calls: Vec<(&'static str, Kind)>) -> Result<(), TestCaseError> {
        if self.runtime.state().agent.builtin.paused.is_some() {
            return Ok(());
        }
        let mut planned = HashMap::new();
        let mut new_calls = Vec::new();
        {
            let state = self.runtime.state();
            for (tool, kind) in calls {
                self.next_id += 1;
                let id = format!("c{}", self.next_id);
                let call = PlannedCall {
                    model_id: None,
                    tool: None,
                    name: tool.to_string(),
                    args: json!({ "kind": kind.code() }),
                    failure: None,
                };
                // As `Turn::plan` does: the gate when the reply is planned shows the cards.
                let initial = self.world.judge(&call, state.agent.grants()).initial;
                new_calls.push(NewCall { tool_id: id.clone(), tool_name: tool.to_string(), editable: false, initial });
                planned.insert(id, call);
            }
        }
        let batch = ApprovalBatch::new(new_calls).map_err(fail)?;
        self.runtime.state().agent.builtin.paused = Some(PausedTurn { batch, calls: planned });
        self.work_through()
    }

    /// The hub stopped and came back: the saved state read anew, and recovered.
    fn restart(&mut self) -> Result<(), TestCaseError> {
        // In the form the store keeps, the session's phase with it.
        let saved = crate::agents::encode(&self.runtime.state()).map_err(fail)?;
        let state = crate::agents::decode(&saved).map_err(fail)?;
        self.runtime =
            SessionRuntime::with("props".into(), PathBuf::from("/nonexistent/props"), None, Vec::new(), state);
        // Recovery judges nothing: it closes what was cut short and keeps the cards.
        let _ = self.runtime.recover_batch();
        Ok(())
    }

    fn act(&mut self, action: Action) -> Result<(), TestCaseError> {
        match action {
            Action::Reply(calls) => self.reply(calls),
            Action::Approve(i) => self.decide(i, Decision::Approve),
            Action::ApproveSession(i) => self.decide(i, Decision::ApproveSession),
            Action::ApproveTurn(i) => self.decide(i, Decision::ApproveTurn),
            Action::EndTurn => {
                let mut state = self.runtime.state();
                if state.agent.builtin.paused.is_none() {
                    state.agent.turn_tools.clear();
                }
                Ok(())
            }
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
            Action::Restart => self.restart(),
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
        2 => (0usize..5).prop_map(Action::ApproveTurn),
        1 => Just(Action::EndTurn),
        2 => (0usize..5).prop_map(Action::ApproveAlways),
        1 => (0usize..5).prop_map(Action::Reject),
        1 => (0usize..5).prop_map(Action::Feedback),
        2 => any::<bool>().prop_map(Action::Yolo),
        1 => (0u8..3).prop_map(Action::DeleteRule),
        1 => any::<bool>().prop_map(Action::Trust),
        1 => Just(Action::Restart),
    ]
}

#[test]
fn a_call_runs_only_if_the_gate_allows_it_at_its_start_or_the_user_approved_exactly_it() {
    let config = Config { cases: ROUNDS, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
    let strategy = (any::<bool>(), prop::collection::vec(action(), 1..40));
    let ran = std::cell::Cell::new(0usize);
    runner
        .run(&strategy, |(trusted, actions)| {
            let mut session = Session::new(World { trusted, folder_rules: (0..3).collect(), ..World::default() });
            for action in actions {
                session.act(action)?;
            }
            ran.set(ran.get() + session.ran);
            Ok(())
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
    assert!(ran.get() > ROUNDS as usize, "the property ran calls at all ({})", ran.get());
}
