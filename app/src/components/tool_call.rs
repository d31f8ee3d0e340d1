//! How a tool call reads on screen: its arguments as `key: value` rows (long
//! values folded), and a compact, expandable transcript entry with its result.

use leptos::prelude::*;
use serde_json::Value;

use crate::components::copy_button::{CopyButton, COPY_COMMAND};
use crate::components::diff_view::diff_view;
use crate::parts::deferred;
use crate::policy::command_text;
use crate::policy::{note_line, DENIED_BY_POLICY};
use crate::transcript::{Question, ToolCall};
use protocol::api::PolicyDecision;
use protocol::events::ToolStatus;

/// Values longer than this many lines or characters are folded.
const FOLD_LINES: usize = 8;
const FOLD_CHARS: usize = 400;

/// One argument, ready to show: strings as they are, anything else as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParameterRow {
    pub key: String,
    /// What is shown before unfolding.
    pub head: String,
    /// The whole value, when `head` is only its start.
    pub full: Option<String>,
}

/// A call's arguments as shown: what it does first, then the rest; the
/// agent's bookkeeping (ids, the decisions it offers, its parse of the
/// command) under a "details" disclosure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ParameterRows {
    pub shown: Vec<ParameterRow>,
    pub details: Vec<ParameterRow>,
}

/// Shown first, in this order: what runs, where, on which file, and why.
const LEADING: [&str; 9] =
    ["command", "cmd", "cwd", "dir_path", "workdir", "file_path", "path", "paths", "description"];

/// The agent's own bookkeeping, folded under "details" (codex sends its ids,
/// its parse of the command and the decisions it would take; Claude Code its
/// timeout). Any other argument is shown: a key the hub does not know may be
/// what the call does, so it is never hidden.
const BOOKKEEPING: [&str; 12] = [
    "turn_id",
    "call_id",
    "id",
    "available_decisions",
    "parsed_cmd",
    "reason",
    "argv",
    "proposed_execpolicy_amendment",
    "proposed_network_policy_amendments",
    "timeout",
    "timeout_ms",
    "tool_call_id",
];

/// Arguments that do not say what a call does: with only these, the agent
/// sent no details of it.
const NOT_DETAILS: [&str; 3] = ["description", "cwd", "workdir"];

fn is_bookkeeping(key: &str) -> bool {
    BOOKKEEPING.contains(&key) || key.starts_with('_')
}

pub fn parameter_rows(parameters: &Value) -> ParameterRows {
    let Some(object) = parameters.as_object() else {
        return ParameterRows { shown: vec![fold("arguments".into(), parameters.to_string())], details: Vec::new() };
    };
    let row = |key: &str, value: &Value| {
        let text = match (key, value) {
            (_, Value::String(text)) => text.clone(),
            ("command" | "cmd", value) => command_text(value).unwrap_or_else(|| value.to_string()),
            (_, other) => other.to_string(),
        };
        fold(key.to_string(), text)
    };
    let mut rows = ParameterRows::default();
    for key in LEADING {
        if let Some(value) = object.get(key) {
            rows.shown.push(row(key, value));
        }
    }
    for (key, value) in object.iter().filter(|(key, _)| !LEADING.contains(&key.as_str())) {
        let rows = if is_bookkeeping(key) { &mut rows.details } else { &mut rows.shown };
        rows.push(row(key, value));
    }
    rows
}

/// Whether the call says what it does: its diff, or an argument other than
/// a description, a working directory or the agent's bookkeeping, with a
/// value. Without, the card says the agent sent no details.
pub fn has_details(call: &ToolCall) -> bool {
    if call.diff.is_some() {
        return true;
    }
    let says_something = |value: &Value| match value {
        Value::Null => false,
        Value::String(text) => !text.trim().is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(map) => !map.is_empty(),
        _ => true,
    };
    match &call.parameters {
        Value::Object(object) => object
            .iter()
            .any(|(key, value)| !NOT_DETAILS.contains(&key.as_str()) && !is_bookkeeping(key) && says_something(value)),
        other => says_something(other),
    }
}

fn fold(key: String, text: String) -> ParameterRow {
    let lines = text.lines().count();
    if lines <= FOLD_LINES && text.chars().count() <= FOLD_CHARS {
        return ParameterRow { key, head: text, full: None };
    }
    let mut head: String = text.lines().take(FOLD_LINES).collect::<Vec<_>>().join("\n");
    if head.chars().count() > FOLD_CHARS {
        head = head.chars().take(FOLD_CHARS).collect();
    }
    head.push('…');
    ParameterRow { key, head, full: Some(text) }
}

/// A one-line summary of a call for the collapsed transcript entry: what it
/// runs or touches; else its arguments (without the agent's bookkeeping).
pub fn summary(call: &ToolCall) -> String {
    let text = |key: &str| {
        let value = call.parameters.get(key)?;
        match key {
            "command" | "cmd" => command_text(value),
            "paths" => value.as_array().map(|paths| {
                paths
                    .iter()
                    .map(|path| path.as_str().map_or_else(|| path.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(", ")
            }),
            _ => value.as_str().map(str::to_string),
        }
    };
    let main =
        ["command", "cmd", "file_path", "path", "paths", "dir_path", "pattern", "query", "url", "title", "details"]
            .iter()
            .find_map(|key| text(key).filter(|text| !text.trim().is_empty()))
            .unwrap_or_else(|| match &call.parameters {
                Value::Object(object) => {
                    let told: serde_json::Map<String, Value> = object
                        .iter()
                        .filter(|(key, _)| !is_bookkeeping(key))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if told.is_empty() {
                        String::new()
                    } else {
                        Value::Object(told).to_string()
                    }
                }
                other => other.to_string(),
            });
    let first_line = main.lines().next().unwrap_or_default();
    if first_line.chars().count() > 120 {
        format!("{}…", first_line.chars().take(120).collect::<String>())
    } else {
        first_line.to_string()
    }
}

/// `key: value` rows; folded values unfold on click. The agent's bookkeeping
/// is listed under a closed "details".
#[component]
pub fn ParameterList(parameters: Value) -> impl IntoView {
    let ParameterRows { shown, details } = parameter_rows(&parameters);
    let details = (!details.is_empty()).then(|| {
        let keys = details.iter().map(|row| row.key.as_str()).collect::<Vec<_>>().join(", ");
        view! {
            <details data-testid="tool-parameter-details" class="text-sm">
                <summary class="cursor-pointer select-none text-xs text-slate-500 dark:text-slate-400">
                    {format!("details ({keys})")}
                </summary>
                <dl class="mt-1 grid grid-cols-[max-content_1fr] gap-x-3 gap-y-1 text-slate-600 dark:text-slate-400">
                    {rows_view(details)}
                </dl>
            </details>
        }
    });
    view! {
        <dl class="grid grid-cols-1 gap-x-3 gap-y-1 text-sm sm:grid-cols-[max-content_1fr]" data-testid="tool-parameters">
            {rows_view(shown)}
        </dl>
        {details}
    }
}

fn rows_view(rows: Vec<ParameterRow>) -> impl IntoView {
    rows.into_iter()
        .map(|row| {
            // A command can be copied whole, folded or not.
            let copy = matches!(row.key.as_str(), "command" | "cmd")
                .then(|| row.full.clone().unwrap_or_else(|| row.head.clone()))
                // Without its last newline: pasted into a shell, it waits for Enter.
                .map(|command| command.trim_end_matches(['\n', '\r']).to_string())
                .filter(|command| !command.trim().is_empty());
            let value = match row.full {
                None => view! { <pre class="whitespace-pre-wrap break-all font-mono">{row.head}</pre> }.into_any(),
                Some(full) => {
                    let lines = full.lines().count();
                    view! {
                        <details>
                            <summary class="cursor-pointer list-none">
                                <pre class="inline whitespace-pre-wrap break-all font-mono">{row.head}</pre>
                                <span class="ml-2 text-xs text-sky-700 dark:text-sky-400">
                                    {format!("show all ({lines} lines, {} chars)", full.chars().count())}
                                </span>
                            </summary>
                            <pre class="mt-1 max-h-96 overflow-auto whitespace-pre-wrap break-all font-mono">{full}</pre>
                        </details>
                    }
                        .into_any()
                }
            };
            let value = match copy {
                None => value,
                Some(text) => view! {
                    <div class="flex items-start gap-2">
                        <div class="min-w-0 flex-1">{value}</div>
                        <CopyButton text label=COPY_COMMAND />
                    </div>
                }
                .into_any(),
            };
            view! {
                <dt class="font-mono text-slate-500 dark:text-slate-400">{format!("{}:", row.key)}</dt>
                <dd class="min-w-0">{value}</dd>
            }
        })
        .collect_view()
}

/// A tool call in the transcript: one line, expandable to its arguments and result.
#[component]
pub fn ToolEntry(call: ToolCall) -> impl IntoView {
    let error_kind = call.outcome.as_ref().and_then(|outcome| outcome.error_kind.clone());
    let denied = error_kind.as_deref() == Some(DENIED_BY_POLICY);
    let running = call.outcome.is_none() && !call.live.is_empty();
    let (mark, mark_class, state) = match call.outcome.as_ref().map(|outcome| outcome.status) {
        // A rule refused it: it never ran, which is not the tool failing.
        Some(_) if denied => ("⊘", "text-red-600 dark:text-red-400", "denied"),
        None if running => ("●", "text-sky-500 animate-pulse", "running"),
        None => ("●", "text-amber-500", "waiting"),
        Some(ToolStatus::Success) => ("✓", "text-emerald-600 dark:text-emerald-400", "success"),
        Some(ToolStatus::Error) => ("✗", "text-red-600 dark:text-red-400", "error"),
        Some(ToolStatus::Skipped) => ("↷", "text-slate-500 dark:text-slate-400", "skipped"),
    };
    // A call cut by a crash or a Stop says so on its line, not only "error".
    let label = match error_kind.as_deref() {
        Some("interrupted") => "interrupted",
        Some("stopped") => "stopped",
        Some(DENIED_BY_POLICY) => "denied by rule",
        _ => state,
    };
    let policy = call.policy.as_ref().map(|note| {
        let class = match note.decision {
            PolicyDecision::Allow => "text-emerald-700 dark:text-emerald-400",
            PolicyDecision::Deny => "text-red-700 dark:text-red-400",
            PolicyDecision::AskUser => "text-amber-700 dark:text-amber-400",
        };
        (note_line(note), note.decision.label(), class)
    });
    let line = summary(&call);
    // An edit shows its diff: what was really written when the user changed it.
    let written = call.outcome.as_ref().and_then(|outcome| outcome.written.clone());
    let diff = match written {
        Some(written) => Some((written, Some("your version"))),
        None => call.diff.map(|diff| (diff, None)),
    };
    let parameters = diff.is_none().then_some(call.parameters);
    let output = call.outcome.map(|outcome| outcome.text).filter(|text| !text.is_empty());
    // While it runs, what it printed so far shows open, the newest line in view
    // (a reversed column keeps the scroll at its end).
    let live = running.then_some(call.live);
    view! {
        <details
            data-testid="tool-entry"
            data-tool-id=call.tool_id
            data-state=state
            open=running
            class="rounded-lg border border-slate-200 bg-white text-sm dark:border-slate-800 dark:bg-slate-900"
        >
            <summary class="flex cursor-pointer flex-col gap-0.5 px-3 py-2">
                <span class="flex items-center gap-2">
                    <span class=mark_class aria-label=state>{mark}</span>
                    <span class="font-mono font-medium">{call.tool_name}</span>
                    <span class="min-w-0 flex-1 truncate font-mono text-slate-500 dark:text-slate-400">{line}</span>
                    <span class="text-xs text-slate-500 dark:text-slate-400">{label}</span>
                </span>
                {policy
                    .map(|(text, decision, class)| {
                        let title = text.clone();
                        view! {
                            <span
                                data-testid="tool-policy"
                                data-decision=decision
                                class=format!("truncate pl-5 text-xs {class}")
                                title=title
                            >
                                {text}
                            </span>
                        }
                    })}
            </summary>
            <div class="flex flex-col gap-2 border-t border-slate-200 px-3 py-2 dark:border-slate-800">
                {parameters.map(|parameters| view! { <ParameterList parameters /> })}
                {diff.map(|(diff, label)| deferred(diff_view(diff, label)))}
                {live
                    .map(|text| {
                        view! {
                            <div class="flex max-h-60 flex-col-reverse overflow-auto rounded bg-slate-100 dark:bg-slate-950">
                                <pre
                                    data-testid="tool-live"
                                    aria-live="off"
                                    class="p-2 font-mono text-xs whitespace-pre-wrap"
                                >
                                    {text}
                                </pre>
                            </div>
                        }
                    })}
                {output
                    .map(|text| {
                        view! {
                            <pre
                                data-testid="tool-output"
                                class="max-h-80 overflow-auto rounded bg-slate-100 p-2 font-mono text-xs whitespace-pre-wrap dark:bg-slate-950"
                            >
                                {text}
                            </pre>
                        }
                    })}
            </div>
        </details>
    }
}

/// The agent's question in the transcript, with the answer once given.
#[component]
pub fn QuestionEntry(question: Question) -> impl IntoView {
    let answer = question.answer.map(|outcome| match outcome.status {
        ToolStatus::Success => outcome.text,
        _ => "Rejected.".to_string(),
    });
    view! {
        <div data-testid="question-entry" class="rounded-lg border border-sky-200 bg-white px-3 py-2 text-sm dark:border-sky-900 dark:bg-slate-900">
            <p class="text-xs font-semibold uppercase tracking-wide text-sky-700 dark:text-sky-400">"The agent asked"</p>
            <p class="whitespace-pre-wrap">{question.prompt}</p>
            {answer.map(|answer| view! { <p data-testid="question-answer" class="mt-1 text-slate-600 dark:text-slate-300">{answer}</p> })}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::events::{FileDiff, ToolKind};
    use serde_json::json;

    fn call(parameters: Value) -> ToolCall {
        ToolCall {
            tool_id: "t".into(),
            tool_name: "x".into(),
            kind: ToolKind::Other,
            parameters,
            diff: None,
            outcome: None,
            policy: None,
            choices: None,
            live: String::new(),
        }
    }

    fn keys(rows: &[ParameterRow]) -> Vec<&str> {
        rows.iter().map(|row| row.key.as_str()).collect()
    }

    #[test]
    fn rows_show_strings_plainly_and_other_values_as_json() {
        let rows = parameter_rows(&json!({"command": "rm -rf cache", "timeout_s": 30})).shown;
        assert_eq!(rows[0], ParameterRow { key: "command".into(), head: "rm -rf cache".into(), full: None });
        assert_eq!(rows[1].head, "30");
    }

    #[test]
    fn the_command_where_and_why_come_first_and_bookkeeping_goes_under_details() {
        // What codex sends for a shell call.
        let codex = json!({
            "call_id": "call_1", "turn_id": "7", "reason": "needs to write",
            "command": ["bash", "-lc", "echo hi > a.txt"], "cwd": "/tmp/p",
            "parsed_cmd": [{"type": "unknown", "cmd": "echo hi > a.txt"}],
            "available_decisions": ["approved", "abort"], "_meta": {"x": 1}
        });
        let rows = parameter_rows(&codex);
        assert_eq!(keys(&rows.shown), ["command", "cwd"]);
        assert_eq!(rows.shown[0].head, "echo hi > a.txt", "the shell's script, not its words");
        let mut details = keys(&rows.details);
        details.sort_unstable();
        assert_eq!(details, ["_meta", "available_decisions", "call_id", "parsed_cmd", "reason", "turn_id"]);
        let claude =
            json!({"description": "Say hi", "command": "echo hi", "timeout": 1000, "dangerouslyDisableSandbox": true});
        let rows = parameter_rows(&claude);
        assert_eq!(
            keys(&rows.shown),
            ["command", "description", "dangerouslyDisableSandbox"],
            "an unknown key is shown"
        );
        assert_eq!(keys(&rows.details), ["timeout"]);
        let edit = json!({"new_string": "b", "file_path": "src/a.rs", "old_string": "a", "dir_path": "src"});
        assert_eq!(keys(&parameter_rows(&edit).shown), ["dir_path", "file_path", "new_string", "old_string"]);
        assert_eq!(parameter_rows(&json!("plain")).shown[0].key, "arguments");
    }

    #[test]
    fn command_words_read_as_a_shell_line() {
        assert_eq!(command_text(&json!(["ls", "-la", "my dir", "it's"])).unwrap(), r"ls -la 'my dir' 'it'\''s'");
        assert_eq!(command_text(&json!(["/bin/sh", "-c", "a && b"])).unwrap(), "a && b");
        assert_eq!(command_text(&json!(["git", ""])).unwrap(), "git ''");
        assert_eq!(command_text(&json!("echo hi")).unwrap(), "echo hi");
        assert_eq!(command_text(&json!([1, 2])), None);
        assert_eq!(parameter_rows(&json!({"command": ["rm", "-rf", "a b"]})).shown[0].head, "rm -rf 'a b'");
    }

    #[test]
    fn long_values_are_folded_with_the_whole_kept() {
        let content = (1..=50).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        let rows = parameter_rows(&json!({"content": content})).shown;
        assert!(rows[0].head.starts_with("line 1\n") && rows[0].head.ends_with("line 8…"), "{}", rows[0].head);
        assert_eq!(rows[0].full.as_deref(), Some(content.as_str()));
        let wide = "x".repeat(1000);
        assert_eq!(parameter_rows(&json!({"a": wide})).shown[0].head.chars().count(), FOLD_CHARS + 1);
    }

    #[test]
    fn summaries_prefer_the_command_or_path() {
        assert_eq!(summary(&call(json!({"description": "d", "command": "ls\npwd"}))), "ls");
        assert_eq!(summary(&call(json!({"file_path": "src/a.rs", "content": "…"}))), "src/a.rs");
        assert_eq!(summary(&call(json!({"command": ["bash", "-lc", "make"], "turn_id": "1"}))), "make");
        assert_eq!(summary(&call(json!({"paths": ["a.md", "b.md"]}))), "a.md, b.md");
        assert_eq!(summary(&call(json!({"n": 1}))), "{\"n\":1}");
        assert_eq!(summary(&call(json!({"call_id": "c", "turn_id": "t"}))), "", "no bookkeeping on the line");
    }

    #[test]
    fn a_call_without_command_path_or_diff_has_no_details() {
        assert!(!has_details(&call(json!({}))));
        assert!(!has_details(&call(json!({"description": "Run it", "cwd": "/p", "turn_id": "1", "command": ""}))));
        assert!(!has_details(&call(Value::Null)));
        assert!(has_details(&call(json!({"command": "ls"}))));
        assert!(
            has_details(&call(json!({"details": "[current working directory /p] (write)"}))),
            "Gemini CLI's shell call"
        );
        assert!(has_details(&call(json!({"paths": ["a.md"]}))));
        assert!(has_details(&call(json!({"issue": 5}))), "an unknown tool's arguments are its details");
        let mut edit = call(json!({}));
        edit.diff = Some(FileDiff { path: "a".into(), old_text: String::new(), new_text: "x".into() });
        assert!(has_details(&edit));
    }
}
