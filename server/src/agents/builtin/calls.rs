//! A model reply's calls before they are worked through: checked (arguments,
//! paths, an edit's diff) before anyone is asked, given the hub's ids, and
//! their results put into words for the stream and the model.

use std::collections::HashSet;

use protocol::events::{AgentEvent, FileDiff, ToolError, ToolStatus};
use serde_json::{json, Value};

use super::model::ToolCallRequest;
use super::question;
use super::state::PlannedCall;
use crate::agents::log::EventLog;
use crate::tools::{Tool, ToolFailure, Workspace};

/// A call as checked before anyone is asked about it.
pub(super) struct Checked {
    pub tool: Option<Tool>,
    pub args: Value,
    /// An edit's change, shown on its card.
    pub diff: Option<FileDiff>,
    /// Found before any card (bad arguments, path outside, no match): the call's result.
    pub failure: Option<ToolFailure>,
}

/// Checks one call's name, arguments and paths (questions are checked when asked).
pub(super) fn check(workspace: &Workspace, request: &ToolCallRequest) -> Checked {
    let tool = Tool::from_name(&request.name);
    let failed = |failure| Checked { tool, args: json!({}), diff: None, failure: Some(failure) };
    if request.name == question::TOOL_NAME {
        return Checked { tool, args: json!({}), diff: None, failure: None };
    }
    let Some(known) = tool else {
        return failed(ToolFailure::new("unknown_tool", format!("There is no tool named '{}'.", request.name)));
    };
    let args: Value = match serde_json::from_str(&request.arguments) {
        Ok(args) => args,
        Err(err) => {
            return failed(ToolFailure::new("invalid_arguments", format!("The arguments are not valid JSON: {err}.")))
        }
    };
    match workspace.precheck(known, &args) {
        Ok(diff) => Checked { tool, args, diff, failure: None },
        Err(failure) => Checked { tool, args, diff: None, failure: Some(failure) },
    }
}

/// How much file text one reply's edits may put on their cards together (the
/// before and after of each): every diff is kept in memory, in the event log
/// and in the store, so a reply of many large edits would cost gigabytes.
pub(super) const MAX_REPLY_REVIEW_BYTES: usize = 16 << 20;

/// Refuses an edit whose diff would take the reply past
/// [`MAX_REPLY_REVIEW_BYTES`]: it becomes a failed call (nothing of it runs)
/// whose error says why. `used`: the bytes the reply's earlier edits took.
pub(super) fn keep_within_review_budget(checked: &mut Checked, used: &mut usize) {
    let Some(diff) = &checked.diff else { return };
    let size = diff.old_text.len() + diff.new_text.len();
    if *used + size <= MAX_REPLY_REVIEW_BYTES {
        *used += size;
        return;
    }
    let message = format!(
        "This reply's edits would show {} MiB of file text for review, more than {} MiB in one reply; this \
         edit was not made. Make fewer or smaller edits per reply.",
        (*used + size) >> 20,
        MAX_REPLY_REVIEW_BYTES >> 20
    );
    checked.diff = None;
    checked.failure = Some(ToolFailure::new("too_large", message));
}

/// A call's `tool_result` and the text the model gets for it.
pub(super) fn result_event(
    tool_id: &str,
    result: Result<(String, Option<FileDiff>), ToolFailure>,
) -> (AgentEvent, String) {
    match result {
        Ok((output, written)) => (
            AgentEvent::ToolResult {
                tool_id: tool_id.to_string(),
                status: ToolStatus::Success,
                output: Some(output.clone()),
                error: None,
                diff: written,
            },
            output,
        ),
        Err(failure) => {
            let text = format!("Error ({}): {}", failure.kind, failure.message);
            (
                AgentEvent::ToolResult {
                    tool_id: tool_id.to_string(),
                    status: ToolStatus::Error,
                    output: None,
                    error: Some(ToolError { kind: failure.kind, message: failure.message }),
                    diff: None,
                },
                text,
            )
        }
    }
}

/// The hub's ids for one model reply's calls. A model's own id is kept where it
/// can serve (the cards and tests read better with it): non-empty, short, plain,
/// and never given before in this session (its log, or its conversation).
/// Otherwise the hub makes one (`hub-<completion>-<n>`, a form a kept id never
/// has), again never given before: a crash can cut the turn that used one.
/// Real models send empty ids, and reuse ids across a turn.
pub(super) struct CallIds<'a> {
    used: HashSet<String>,
    log: &'a EventLog,
    completion: usize,
    made: usize,
}

const MADE_ID_PREFIX: &str = "hub-";

impl<'a> CallIds<'a> {
    /// `earlier`: the conversation before this reply.
    pub(super) fn new(earlier: &[Value], log: &'a EventLog, completion: usize) -> Self {
        let used = earlier
            .iter()
            .filter_map(|message| message.get("tool_calls")?.as_array())
            .flatten()
            .filter_map(|call| call["id"].as_str().map(str::to_string))
            .collect();
        Self { used, log, completion, made: 0 }
    }

    /// The call's hub id, and the model's id when it differs.
    pub(super) fn assign(&mut self, model_id: &str) -> (String, Option<String>) {
        let plain = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':');
        let fits = !model_id.is_empty()
            && model_id.len() <= 64
            && model_id.chars().all(plain)
            && !model_id.starts_with(MADE_ID_PREFIX);
        if fits && self.fresh(model_id) {
            return (model_id.to_string(), None);
        }
        loop {
            self.made += 1;
            let made = format!("{MADE_ID_PREFIX}{}-{}", self.completion, self.made);
            if self.fresh(&made) {
                return (made, Some(model_id.to_string()));
            }
        }
    }

    /// Not given before, and now taken.
    fn fresh(&mut self, id: &str) -> bool {
        !self.log.announced(id) && self.used.insert(id.to_string())
    }
}

/// A command the gate let run without a card, as the hub's rendering of the
/// parse it judged: no disagreement between the parser and bash can hide a
/// command in its text. The judge asked for any command it cannot render, so
/// a failure here is a bug, and the call fails rather than run its text.
pub(super) fn as_judged(mut call: PlannedCall) -> PlannedCall {
    if call.tool != Some(Tool::RunShellCommand) || call.failure.is_some() {
        return call;
    }
    let command = call.args.get("command").and_then(serde_json::Value::as_str).unwrap_or_default();
    match crate::policy::render::faithful(command) {
        Ok(rendered) => call.args["command"] = serde_json::Value::String(rendered),
        Err(why) => {
            call.failure = Some(ToolFailure::new(
                "internal",
                format!("The hub could not run this command as it was judged ({why}); it did not run."),
            ))
        }
    }
    call
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_past_the_review_budget_are_refused_and_their_diffs_dropped() {
        let edit = |size: usize| Checked {
            tool: Some(Tool::WriteFile),
            args: json!({}),
            diff: Some(FileDiff { path: "a".into(), old_text: String::new(), new_text: "x".repeat(size) }),
            failure: None,
        };
        let mut used = 0;
        let mut first = edit(MAX_REPLY_REVIEW_BYTES - 10);
        keep_within_review_budget(&mut first, &mut used);
        assert!(first.failure.is_none() && first.diff.is_some());
        let mut small = edit(10);
        keep_within_review_budget(&mut small, &mut used);
        assert!(small.failure.is_none(), "exactly at the budget");
        let mut over = edit(1);
        keep_within_review_budget(&mut over, &mut used);
        assert_eq!(over.failure.as_ref().map(|failure| failure.kind.as_str()), Some("too_large"));
        assert!(over.diff.is_none(), "nothing of it is kept");
        assert_eq!(used, MAX_REPLY_REVIEW_BYTES);
    }
    use protocol::events::ToolKind;

    fn announce(log: &EventLog, id: &str) {
        log.push(AgentEvent::ToolUse {
            tool_name: "run_shell_command".into(),
            tool_id: id.into(),
            parameters: json!({}),
            kind: ToolKind::Execute,
            diff: None,
            policy: None,
        });
    }

    #[test]
    fn an_id_is_never_given_twice_in_a_session_even_when_the_conversation_lost_it() {
        // A crash cut the turn that announced these; the conversation has none of them.
        let log = EventLog::default();
        announce(&log, "call_0");
        announce(&log, "hub-3-1");
        let mut ids = CallIds::new(&[], &log, 3);
        assert_eq!(ids.assign("call_0"), ("hub-3-2".to_string(), Some("call_0".to_string())), "skips hub-3-1 too");
        assert_eq!(ids.assign("fresh"), ("fresh".to_string(), None));
        assert_eq!(ids.assign("fresh"), ("hub-3-3".to_string(), Some("fresh".to_string())), "twice in one reply");
        assert_eq!(ids.assign(""), ("hub-3-4".to_string(), Some(String::new())));
        assert_eq!(ids.assign("hub-9-9"), ("hub-3-5".to_string(), Some("hub-9-9".to_string())), "the hub's form");
        let earlier = [json!({"role": "assistant", "tool_calls": [{"id": "old"}]})];
        assert_ne!(CallIds::new(&earlier, &log, 4).assign("old").0, "old", "given in the conversation before");
    }

    /// A command the gate let run without a card runs as its rendering; one
    /// that does not render fails rather than run its text; other tools are
    /// left as they are.
    #[test]
    fn what_runs_unseen_is_the_rendering_of_what_was_judged() {
        let call = |tool, command: &str| PlannedCall {
            model_id: None,
            tool: Some(tool),
            name: "x".into(),
            args: json!({ "command": command }),
            failure: None,
        };
        let rendered = as_judged(call(Tool::RunShellCommand, "git commit -m \"a b\" # note"));
        assert_eq!(rendered.args["command"], "git commit -m 'a b'");
        assert!(rendered.failure.is_none());
        let refused = as_judged(call(Tool::RunShellCommand, "git status \\\t#;touch x"));
        assert!(refused.failure.is_some_and(|failure| failure.message.contains("did not run")));
        let other = as_judged(call(Tool::ReadFile, "a b # c"));
        assert_eq!(other.args["command"], "a b # c");
    }
}
