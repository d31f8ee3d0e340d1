//! A session's transcript, folded from its events one at a time: what the chat
//! view shows, and which tool call waits on the Action Required card. Events
//! at or below the last seen `seq` are ignored, so replays and overlapping
//! streams never show anything twice.

use std::collections::HashMap;

use serde_json::Value;

use protocol::events::{
    AgentChoice, AgentEvent, FileDiff, InputType, PolicyNote, ResultStatus, Role, SeqEvent, ToolKind, ToolStatus,
};

#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub tool_id: String,
    pub tool_name: String,
    pub kind: ToolKind,
    pub parameters: Value,
    pub diff: Option<FileDiff>,
    pub outcome: Option<ToolOutcome>,
    /// The rule that allowed or denied the call without a card, or made it ask.
    pub policy: Option<PolicyNote>,
    /// An ACP agent's answers to its permission request, in its own words.
    pub choices: Option<Vec<AgentChoice>>,
    /// What the call printed so far while it runs (its last [`LIVE_TAIL`] bytes).
    pub live: String,
}

/// How much of a running call's output the page keeps.
pub const LIVE_TAIL: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub status: ToolStatus,
    /// An error's `type` (`interrupted`, `stopped`, `timeout`, …).
    pub error_kind: Option<String>,
    pub text: String,
    /// What an edit really wrote, when the user changed the proposal.
    pub written: Option<FileDiff>,
}

/// The agent's question to the user, and the answer once given.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub request_id: String,
    pub input_type: InputType,
    pub prompt: String,
    pub choices: Vec<String>,
    pub answer: Option<ToolOutcome>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    User(String),
    /// Assistant text; streamed deltas are joined into one entry.
    Assistant(String),
    /// The agent's reasoning, joined like assistant text; shown collapsed.
    Thought(String),
    Tool(Box<ToolCall>),
    Question(Question),
    Error {
        message: String,
        code: Option<String>,
    },
    /// How a turn ended, when that is worth saying (cancelled, failed).
    Notice(String),
}

/// One row of the transcript. `key` stays while `version` moves on each change,
/// so a view keyed by both redraws only the rows that changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub key: u64,
    pub version: u64,
    pub entry: Entry,
}

/// The call on the Action Required card, and its place in the model turn's batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub call: ToolCall,
    pub position: usize,
    pub total: usize,
    /// The sandbox refused this very command earlier in the session: the card
    /// may run it outside the sandbox.
    pub refused_before: bool,
}

/// What a command's result ends with when the sandbox refused something.
pub const SANDBOX_REFUSED: &str = "[sandbox: the kernel refused";

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    items: Vec<Item>,
    last_seq: u64,
    /// Where each tool call and question is in `items`, by id.
    tools: HashMap<String, usize>,
    /// The question waiting for the user's answer.
    asking: Option<String>,
    /// The turn ends because the user turned a question down.
    rejected_question: bool,
    /// A call of this turn was not run (rejected, or feedback instead).
    skipped_call: bool,
    /// Calls waiting for the user, in order.
    pending: Vec<String>,
    /// How many calls of the current batch needed the user.
    batch_total: usize,
    announced_since_result: bool,
    last_result: Option<ResultStatus>,
}

impl Transcript {
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// How the latest turn ended or paused (`None` before any).
    pub fn last_result(&self) -> Option<ResultStatus> {
        self.last_result
    }

    pub fn pending(&self) -> &[String] {
        &self.pending
    }

    /// Applies an event; returns whether it was new.
    pub fn apply(&mut self, event: &SeqEvent) -> bool {
        if event.seq <= self.last_seq {
            return false;
        }
        self.last_seq = event.seq;
        let seq = event.seq;
        match &event.event {
            AgentEvent::Init { .. } => {}
            AgentEvent::Message { role: Role::User, content, .. } => self.push(seq, Entry::User(content.clone())),
            AgentEvent::Message { role: Role::Assistant, content, delta } => match self.items.last_mut() {
                Some(Item { entry: Entry::Assistant(text), version, .. }) if *delta => {
                    text.push_str(content);
                    *version = seq;
                }
                _ => self.push(seq, Entry::Assistant(content.clone())),
            },
            AgentEvent::Thought { content } => match self.items.last_mut() {
                Some(Item { entry: Entry::Thought(text), version, .. }) => {
                    text.push_str(content);
                    *version = seq;
                }
                _ => self.push(seq, Entry::Thought(content.clone())),
            },
            AgentEvent::ToolUse { tool_name, tool_id, parameters, kind, diff, policy } => {
                self.announced_since_result = true;
                self.tools.insert(tool_id.clone(), self.items.len());
                self.push(
                    seq,
                    Entry::Tool(Box::new(ToolCall {
                        tool_id: tool_id.clone(),
                        tool_name: tool_name.clone(),
                        kind: *kind,
                        parameters: parameters.clone(),
                        diff: diff.clone(),
                        outcome: None,
                        policy: policy.clone(),
                        choices: None,
                        live: String::new(),
                    })),
                );
            }
            AgentEvent::ToolUpdate { tool_id, tool_name, parameters, kind, diff, choices, policy } => {
                if let Some(item) = self.tools.get(tool_id).and_then(|&index| self.items.get_mut(index)) {
                    if let Entry::Tool(call) = &mut item.entry {
                        call.tool_name.clone_from(tool_name);
                        call.parameters.clone_from(parameters);
                        call.kind = *kind;
                        call.diff.clone_from(diff);
                        if choices.is_some() {
                            call.choices.clone_from(choices);
                        }
                        if policy.is_some() {
                            call.policy.clone_from(policy);
                        }
                        item.version = seq;
                    }
                }
            }
            AgentEvent::ToolResult { tool_id, status, output, error, diff } => {
                self.pending.retain(|id| id != tool_id);
                if self.asking.as_ref() == Some(tool_id) {
                    self.asking = None;
                    self.rejected_question = *status == ToolStatus::Skipped;
                } else if *status == ToolStatus::Skipped {
                    self.skipped_call = true;
                }
                let text = match error {
                    Some(error) => format!("{} ({})", error.message, error.kind),
                    None => output.clone().unwrap_or_default(),
                };
                let error_kind = error.as_ref().map(|error| error.kind.clone());
                let outcome = ToolOutcome { status: *status, error_kind, text, written: diff.clone() };
                if let Some(item) = self.tools.get(tool_id).and_then(|&index| self.items.get_mut(index)) {
                    match &mut item.entry {
                        Entry::Tool(call) => call.outcome = Some(outcome),
                        Entry::Question(question) => question.answer = Some(outcome),
                        _ => return true,
                    }
                    item.version = seq;
                }
            }
            AgentEvent::ToolOutput { tool_id, text, .. } => {
                if let Some(item) = self.tools.get(tool_id).and_then(|&index| self.items.get_mut(index)) {
                    if let Entry::Tool(call) = &mut item.entry {
                        call.live.push_str(text);
                        if call.live.len() > LIVE_TAIL {
                            let mut start = call.live.len() - LIVE_TAIL;
                            while !call.live.is_char_boundary(start) {
                                start += 1;
                            }
                            call.live.drain(..start);
                        }
                        item.version = seq;
                    }
                }
            }
            AgentEvent::InputRequest { request_id, input_type, prompt, choices } => {
                self.tools.insert(request_id.clone(), self.items.len());
                self.asking = Some(request_id.clone());
                self.push(
                    seq,
                    Entry::Question(Question {
                        request_id: request_id.clone(),
                        input_type: *input_type,
                        prompt: prompt.clone(),
                        choices: choices.clone(),
                        answer: None,
                    }),
                );
            }
            AgentEvent::Error { message, code, .. } => {
                self.push(seq, Entry::Error { message: message.clone(), code: code.clone() })
            }
            AgentEvent::Result { status, pending } => {
                self.last_result = Some(*status);
                if *status != ResultStatus::WaitingInput {
                    self.asking = None;
                }
                self.pending = match status {
                    ResultStatus::WaitingApproval => pending.clone().unwrap_or_default(),
                    _ => Vec::new(),
                };
                if self.announced_since_result {
                    self.batch_total = self.pending.len();
                }
                self.announced_since_result = false;
                if *status == ResultStatus::Cancelled {
                    let notice = if self.rejected_question {
                        "Turn cancelled: the question was rejected."
                    } else if self.skipped_call {
                        "Turn cancelled: the rejected call did not run."
                    } else {
                        "Turn stopped."
                    };
                    self.push(seq, Entry::Notice(notice.to_string()));
                }
                self.rejected_question = false;
                self.skipped_call = false;
            }
        }
        true
    }

    fn push(&mut self, seq: u64, entry: Entry) {
        self.items.push(Item { key: seq, version: seq, entry });
    }

    /// The question waiting for the user's answer.
    pub fn question(&self) -> Option<Question> {
        let item = self.items.get(*self.tools.get(self.asking.as_ref()?)?)?;
        let Entry::Question(question) = &item.entry else { return None };
        Some(question.clone())
    }

    /// The first call waiting for the user, as the card shows it.
    pub fn card(&self) -> Option<Card> {
        let first = self.pending.first()?;
        let item = self.items.get(*self.tools.get(first)?)?;
        let Entry::Tool(call) = &item.entry else { return None };
        let total = self.batch_total.max(self.pending.len());
        let command = call.parameters.get("command").and_then(|command| command.as_str());
        let refused_before = call.tool_name == "run_shell_command"
            && command.is_some_and(|command| {
                self.items.iter().any(|item| match &item.entry {
                    Entry::Tool(earlier) => {
                        earlier.tool_id != call.tool_id
                            && earlier.tool_name == "run_shell_command"
                            && earlier.parameters.get("command").and_then(|c| c.as_str()) == Some(command)
                            && earlier.outcome.as_ref().is_some_and(|outcome| outcome.text.contains(SANDBOX_REFUSED))
                    }
                    _ => false,
                })
            });
        Some(Card { call: (**call).clone(), position: total - self.pending.len() + 1, total, refused_before })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::events::ToolError;
    use serde_json::json;

    fn events(list: Vec<AgentEvent>) -> Vec<SeqEvent> {
        list.into_iter().enumerate().map(|(i, event)| SeqEvent { event, seq: i as u64 + 1 }).collect()
    }
    fn assistant(text: &str) -> AgentEvent {
        AgentEvent::Message { role: Role::Assistant, content: text.into(), delta: true }
    }
    fn tool_use(id: &str) -> AgentEvent {
        AgentEvent::ToolUse {
            tool_name: "run_shell_command".into(),
            tool_id: id.into(),
            parameters: json!({"command": id}),
            kind: ToolKind::Execute,
            diff: None,
            policy: None,
        }
    }
    fn waiting(ids: &[&str]) -> AgentEvent {
        AgentEvent::Result {
            status: ResultStatus::WaitingApproval,
            pending: Some(ids.iter().map(|id| id.to_string()).collect()),
        }
    }
    fn ran(id: &str) -> AgentEvent {
        AgentEvent::ToolResult {
            tool_id: id.into(),
            status: ToolStatus::Success,
            output: Some("ok".into()),
            error: None,
            diff: None,
        }
    }
    fn fold(list: &[SeqEvent]) -> Transcript {
        let mut transcript = Transcript::default();
        for event in list {
            transcript.apply(event);
        }
        transcript
    }

    #[test]
    fn a_card_knows_when_the_sandbox_refused_its_very_command_before() {
        let refused = AgentEvent::ToolResult {
            tool_id: "a".into(),
            status: ToolStatus::Success,
            output: Some(format!("x: Read-only file system\n{SANDBOX_REFUSED} a write]\nExit code: 1")),
            error: None,
            diff: None,
        };
        let same = events(vec![tool_use("cmd"), refused.clone(), tool_use("cmd"), waiting(&["cmd"])]);
        // `tool_use(id)` names the call and its command alike: give the first its own id.
        let mut list = same.clone();
        if let AgentEvent::ToolUse { tool_id, .. } = &mut list[0].event {
            *tool_id = "a".into();
        }
        assert!(fold(&list).card().unwrap().refused_before);
        let other = events(vec![tool_use("a"), refused, tool_use("cmd"), waiting(&["cmd"])]);
        assert!(!fold(&other).card().unwrap().refused_before, "another command was refused");
        let fine = events(vec![tool_use("cmd"), ran("cmd"), tool_use("cmd2"), waiting(&["cmd2"])]);
        assert!(!fold(&fine).card().unwrap().refused_before);
        // The same command, run before without a refusal.
        let mut ran_fine = events(vec![tool_use("cmd"), ran("a"), tool_use("cmd"), waiting(&["cmd"])]);
        if let AgentEvent::ToolUse { tool_id, .. } = &mut ran_fine[0].event {
            *tool_id = "a".into();
        }
        assert!(!fold(&ran_fine).card().unwrap().refused_before, "the same command, not refused");
    }

    #[test]
    fn deltas_join_into_one_message_and_replays_are_ignored() {
        let list = events(vec![
            AgentEvent::Message { role: Role::User, content: "hi".into(), delta: false },
            assistant("Hel"),
            assistant("lo"),
            tool_use("a"),
            assistant("after"),
        ]);
        let mut transcript = fold(&list);
        assert!(!transcript.apply(&list[2]), "an old seq changes nothing");
        let entries: Vec<&Entry> = transcript.items().iter().map(|item| &item.entry).collect();
        assert_eq!(entries[0], &Entry::User("hi".into()));
        assert_eq!(entries[1], &Entry::Assistant("Hello".into()));
        assert_eq!(entries[3], &Entry::Assistant("after".into()), "text after a tool call is a new message");
        assert_eq!((transcript.items()[1].key, transcript.items()[1].version), (2, 3));
        assert_eq!(transcript.last_seq(), 5);
    }

    #[test]
    fn the_card_walks_through_a_batch_of_three() {
        let mut list = events(vec![
            tool_use("a"),
            tool_use("b"),
            tool_use("c"),
            waiting(&["a", "b", "c"]),
            ran("a"),
            waiting(&["b", "c"]),
        ]);
        let mut transcript = fold(&list[..4]);
        let card = transcript.card().unwrap();
        assert_eq!((card.call.tool_id.as_str(), card.position, card.total), ("a", 1, 3));
        transcript = fold(&list);
        let card = transcript.card().unwrap();
        assert_eq!((card.call.tool_id.as_str(), card.position, card.total), ("b", 2, 3));
        assert_eq!(
            transcript.items()[0].entry,
            Entry::Tool(Box::new(ToolCall {
                tool_id: "a".into(),
                tool_name: "run_shell_command".into(),
                kind: ToolKind::Execute,
                parameters: json!({"command": "a"}),
                diff: None,
                outcome: Some(ToolOutcome {
                    status: ToolStatus::Success,
                    error_kind: None,
                    text: "ok".into(),
                    written: None,
                }),
                policy: None,
                choices: None,
                live: String::new(),
            }))
        );
        // A regenerated call after feedback is a new batch of its own.
        list.extend(events(vec![
            AgentEvent::ToolResult {
                tool_id: "b".into(),
                status: ToolStatus::Skipped,
                output: Some("[USER FEEDBACK - Tool was not executed]: no".into()),
                error: None,
                diff: None,
            },
            tool_use("d"),
            waiting(&["d"]),
        ]));
        for (i, event) in list.iter_mut().enumerate() {
            event.seq = i as u64 + 1;
        }
        let card = fold(&list).card().unwrap();
        assert_eq!((card.call.tool_id.as_str(), card.position, card.total), ("d", 1, 1));
    }

    #[test]
    fn a_result_for_the_waiting_call_or_the_turn_clears_the_card() {
        let list = events(vec![tool_use("a"), waiting(&["a"]), ran("a")]);
        assert!(fold(&list[..2]).card().is_some());
        assert!(fold(&list).card().is_none(), "decided: the card goes before the next result");
        let cancelled = events(vec![
            tool_use("a"),
            waiting(&["a"]),
            AgentEvent::Result { status: ResultStatus::Cancelled, pending: None },
        ]);
        let transcript = fold(&cancelled);
        assert!(transcript.card().is_none());
        assert_eq!(transcript.last_result(), Some(ResultStatus::Cancelled));
        assert!(matches!(transcript.items().last().unwrap().entry, Entry::Notice(_)));
    }

    #[test]
    fn tool_errors_read_as_message_and_kind() {
        let list = events(vec![
            tool_use("a"),
            AgentEvent::ToolResult {
                tool_id: "a".into(),
                status: ToolStatus::Error,
                output: None,
                error: Some(ToolError { kind: "path_outside_folder".into(), message: "'..' is outside".into() }),
                diff: None,
            },
        ]);
        let transcript = fold(&list);
        let Entry::Tool(call) = &transcript.items()[0].entry else { panic!() };
        assert_eq!(call.outcome.as_ref().unwrap().text, "'..' is outside (path_outside_folder)");
    }

    #[test]
    fn a_call_keeps_the_rule_that_decided_it() {
        use protocol::api::PolicyDecision;
        use protocol::events::PolicyNote;
        let note = PolicyNote {
            decision: PolicyDecision::Deny,
            source: ".gemini/policies/git.toml rule 1".into(),
            message: Some("No force pushes.".into()),
        };
        let list = events(vec![
            AgentEvent::ToolUse {
                tool_name: "run_shell_command".into(),
                tool_id: "a".into(),
                parameters: json!({"command": "git push --force"}),
                kind: ToolKind::Execute,
                diff: None,
                policy: Some(note.clone()),
            },
            AgentEvent::ToolResult {
                tool_id: "a".into(),
                status: ToolStatus::Error,
                output: None,
                error: Some(ToolError { kind: "denied_by_policy".into(), message: "No force pushes.".into() }),
                diff: None,
            },
        ]);
        let transcript = fold(&list);
        let Entry::Tool(call) = &transcript.items()[0].entry else { panic!() };
        assert_eq!(call.policy.as_ref(), Some(&note));
        assert_eq!(call.outcome.as_ref().unwrap().error_kind.as_deref(), Some("denied_by_policy"));
        assert!(transcript.card().is_none(), "a denied call never waits on a card");
    }

    #[test]
    fn a_question_waits_until_its_answer_and_then_shows_it() {
        let ask = |id: &str| AgentEvent::InputRequest {
            request_id: id.into(),
            input_type: InputType::Choice,
            prompt: "Which?".into(),
            choices: vec!["a".into(), "b".into()],
        };
        let waiting = AgentEvent::Result { status: ResultStatus::WaitingInput, pending: None };
        let answered = AgentEvent::ToolResult {
            tool_id: "q".into(),
            status: ToolStatus::Success,
            output: Some("The user chose option 2 of 2: b".into()),
            error: None,
            diff: None,
        };
        let list = events(vec![ask("q"), waiting.clone(), answered, ask("r"), waiting]);
        let transcript = fold(&list[..2]);
        assert_eq!(transcript.question().map(|q| q.request_id), Some("q".into()));
        assert!(transcript.card().is_none(), "a question is not an approval");
        let transcript = fold(&list[..3]);
        assert!(transcript.question().is_none(), "answered: the card goes");
        let Entry::Question(first) = &transcript.items()[0].entry else { panic!("a question entry") };
        assert_eq!(first.answer.as_ref().map(|a| a.text.as_str()), Some("The user chose option 2 of 2: b"));
        assert_eq!(fold(&list).question().map(|q| q.request_id), Some("r".into()), "the next one");

        let mut rejected =
            events(vec![ask("q"), AgentEvent::Result { status: ResultStatus::WaitingInput, pending: None }]);
        rejected.extend(events(vec![
            AgentEvent::ToolResult {
                tool_id: "q".into(),
                status: ToolStatus::Skipped,
                output: None,
                error: None,
                diff: None,
            },
            AgentEvent::Result { status: ResultStatus::Cancelled, pending: None },
        ]));
        for (i, event) in rejected.iter_mut().enumerate() {
            event.seq = i as u64 + 1;
        }
        let transcript = fold(&rejected);
        assert!(transcript.question().is_none());
        assert_eq!(
            transcript.items().last().unwrap().entry,
            Entry::Notice("Turn cancelled: the question was rejected.".into())
        );
    }
}
