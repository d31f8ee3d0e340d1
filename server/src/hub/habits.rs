//! Rules from habits (issue 27, item 4): when the user has approved the same
//! command prefix, or the same file tool, in a folder three times, the card of
//! the next such call offers the matching "Always in this folder" rule. The
//! count is read from the audit trail, so no tally of its own can drift from
//! what was decided; the offer is only words on the card (saving still goes
//! through `approve_always` and its checks), never for a prefix that would
//! allow running anything, and never for a rule that would not let the call run.

use protocol::api::PolicyDecision;
use protocol::habits::{Habit, Withheld, HABIT_APPROVALS};
use serde_json::Value;

use super::{now_ms, Hub, HubError, HubResult};
use crate::agents::{AgentError, SessionRuntime};
use crate::policy::{self, Mode, Rule, ToolCall, SHELL_TOOL};

/// The file tools a habit is kept for: their rule allows the tool in the folder.
const FILE_TOOLS: [&str; 2] = ["write_file", "replace"];

/// What a habit is about, for the call waiting on a card.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Subject {
    /// A shell command: the prefix "Always in this folder" proposes for it.
    Command(String),
    /// A file tool (with a path).
    FileTool,
}

impl Hub {
    /// `GET /api/habits`: the user's approvals in the folder of calls like the
    /// one waiting on `runtime`'s card under `tool_id`, and whether its card
    /// offers the rule. Reads the database and the folder's policy files: call
    /// it off the async workers (after a flush, to count what was just decided).
    pub fn habit(&self, runtime: &SessionRuntime, tool_id: &str) -> HubResult<Habit> {
        let Some((name, args)) = runtime.waiting_call(tool_id) else {
            return Err(AgentError::call_not_pending(tool_id).into());
        };
        let mut habit = Habit {
            tool_id: tool_id.to_string(),
            tool_name: name.clone(),
            prefix: None,
            approvals: 0,
            offered: false,
            withheld: None,
        };
        let subject = match subject(&name, &args) {
            Some(subject) => subject,
            None => return Ok(Habit { withheld: Some(Withheld::NotAHabit), ..habit }),
        };
        let prefix = match &subject {
            Subject::Command(prefix) => Some(prefix.clone()),
            Subject::FileTool => None,
        };
        let store = self.store().ok_or_else(|| {
            HubError::StoreFailed(
                "Habits are read from the audit trail in the hub's database, and this hub runs without one.".into(),
            )
        })?;
        // The folder as the audit trail writes it: this folder's rows only.
        let folder = runtime.folder.display().to_string();
        habit.approvals = store
            .user_approvals(&folder, &name, prefix.as_deref())
            .map_err(|err| HubError::StoreFailed(format!("The audit trail could not be read: {err}.")))?;
        habit.prefix = prefix;
        let withheld = withheld(habit.prefix.as_deref(), habit.approvals, || {
            self.rules_say(runtime, &name, &args, habit.prefix.as_deref())
        });
        Ok(Habit { offered: withheld.is_none(), withheld, ..habit })
    }

    /// Whether the call runs without a card now, and whether it would with
    /// the habit's rule saved (the rule is only built here, never saved).
    fn rules_say(&self, runtime: &SessionRuntime, name: &str, args: &Value, prefix: Option<&str>) -> RulesSay {
        let mode = Mode::from_yolo(self.yolo(&runtime.id));
        let call = ToolCall { name, args };
        let allows = |verdict: policy::Verdict| verdict.decision == Some(PolicyDecision::Allow);
        if allows(self.policy_set(&runtime.folder).evaluate(&call, mode)) {
            return RulesSay { allowed_now: true, allowed_with_rule: true };
        }
        let Ok(rule) = Rule::saved(0, name, prefix, now_ms()) else {
            return RulesSay { allowed_now: false, allowed_with_rule: false };
        };
        let mut rules = self.saved_rules(&runtime.folder);
        rules.push(rule);
        let with_rule = self.policies().for_folder(&runtime.folder, rules, self.trusted(&runtime.folder));
        // A file the hub protects (the folder's `.gemini/`) keeps its card whatever the rules say.
        let protected = runtime.touches_settings(name, args);
        RulesSay { allowed_now: false, allowed_with_rule: !protected && allows(with_rule.evaluate(&call, mode)) }
    }
}

/// What the folder's rules say of the waiting call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RulesSay {
    allowed_now: bool,
    allowed_with_rule: bool,
}

/// What a habit of this call would be about: none for a call that is not a
/// shell command or a file tool, or that says nothing of what it does (a
/// rule saved from it would allow the whole tool, unseen).
fn subject(name: &str, args: &Value) -> Option<Subject> {
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::trim).filter(|text| !text.is_empty());
    if name == SHELL_TOOL {
        let prefix = policy::default_prefix(text("command")?);
        return (!prefix.is_empty()).then_some(Subject::Command(prefix));
    }
    (FILE_TOOLS.contains(&name) && text("file_path").is_some()).then_some(Subject::FileTool)
}

/// Why the card does not offer the habit's rule, or `None` when it does. The
/// rules are asked last, and only of a habit that is otherwise ripe.
fn withheld(prefix: Option<&str>, approvals: u32, rules_say: impl FnOnce() -> RulesSay) -> Option<Withheld> {
    if prefix.is_some_and(|prefix| policy::check_saved_prefix(prefix).is_err()) {
        return Some(Withheld::TooBroad);
    }
    if approvals < HABIT_APPROVALS {
        return Some(Withheld::TooFew);
    }
    let said = rules_say();
    if said.allowed_now {
        return Some(Withheld::AlreadyAllowed);
    }
    (!said.allowed_with_rule).then_some(Withheld::WouldNotAllow)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_habit_is_a_commands_proposed_prefix_or_a_file_tool_with_a_path() {
        let cases: Vec<(&str, Value, Option<Subject>)> = vec![
            (
                "run_shell_command",
                json!({"command": "cargo test -p server"}),
                Some(Subject::Command("cargo test".into())),
            ),
            (
                "run_shell_command",
                json!({"command": "git status --short"}),
                Some(Subject::Command("git status".into())),
            ),
            (
                "run_shell_command",
                json!({"command": "python3 -c 'print(1)'"}),
                Some(Subject::Command("python3 -c 'print(1)'".into())),
            ),
            ("run_shell_command", json!({"command": "  "}), None),
            ("run_shell_command", json!({}), None),
            ("write_file", json!({"file_path": "src/a.rs", "content": "x"}), Some(Subject::FileTool)),
            ("replace", json!({"file_path": "b.rs"}), Some(Subject::FileTool)),
            ("write_file", json!({"content": "x"}), None),
            ("web_fetch", json!({"url": "https://example.com"}), None),
            ("read_file", json!({"file_path": "a"}), None),
        ];
        for (name, args, expected) in cases {
            assert_eq!(subject(name, &args), expected, "{name} {args}");
        }
    }

    /// Each row: the prefix, the approvals, what the rules say → why it is withheld.
    #[test]
    fn the_rule_is_offered_after_three_approvals_unless_too_broad_already_allowed_or_of_no_use() {
        let free = RulesSay { allowed_now: false, allowed_with_rule: true };
        let allowed = RulesSay { allowed_now: true, allowed_with_rule: true };
        let stuck = RulesSay { allowed_now: false, allowed_with_rule: false };
        let cases = [
            (Some("cargo test"), 3, free, None),
            (Some("cargo test"), 7, free, None),
            (None, 3, free, None),
            (Some("cargo test"), 2, free, Some(Withheld::TooFew)),
            (None, 0, free, Some(Withheld::TooFew)),
            (Some("python3"), 50, free, Some(Withheld::TooBroad)),
            (Some("env FOO=1"), 3, free, Some(Withheld::TooBroad)),
            (Some("git config"), 3, free, Some(Withheld::TooBroad)),
            (Some("cargo test"), 3, allowed, Some(Withheld::AlreadyAllowed)),
            (Some("cargo test"), 3, stuck, Some(Withheld::WouldNotAllow)),
        ];
        for (prefix, approvals, said, expected) in cases {
            assert_eq!(withheld(prefix, approvals, || said), expected, "{prefix:?} × {approvals}, {said:?}");
        }
        let asked = std::cell::Cell::new(false);
        withheld(Some("cargo test"), 2, || {
            asked.set(true);
            free
        });
        assert!(!asked.get(), "the rules are not read for a habit that is not ripe");
    }
}
