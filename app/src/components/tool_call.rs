//! How a tool call reads on screen: its arguments as `key: value` rows (long
//! values folded), and a compact, expandable transcript entry with its result.

use leptos::prelude::*;
use serde_json::Value;

use crate::components::diff_view::DiffView;
use crate::events::ToolStatus;
use crate::policy::{note_line, DENIED_BY_POLICY};
use crate::transcript::{Question, ToolCall};
use crate::types::PolicyDecision;

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

pub fn parameter_rows(parameters: &Value) -> Vec<ParameterRow> {
    let Some(object) = parameters.as_object() else {
        return vec![fold("arguments".into(), parameters.to_string())];
    };
    object
        .iter()
        .map(|(key, value)| {
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            fold(key.clone(), text)
        })
        .collect()
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

/// A one-line summary of a call for the collapsed transcript entry.
pub fn summary(call: &ToolCall) -> String {
    let main = ["command", "file_path", "path", "pattern"]
        .iter()
        .find_map(|key| call.parameters.get(*key).and_then(Value::as_str))
        .map(str::to_string)
        .unwrap_or_else(|| call.parameters.to_string());
    let first_line = main.lines().next().unwrap_or_default();
    if first_line.chars().count() > 120 {
        format!("{}…", first_line.chars().take(120).collect::<String>())
    } else {
        first_line.to_string()
    }
}

/// `key: value` rows; folded values unfold on click.
#[component]
pub fn ParameterList(parameters: Value) -> impl IntoView {
    let rows = parameter_rows(&parameters);
    view! {
        <dl class="grid grid-cols-[max-content_1fr] gap-x-3 gap-y-1 text-sm" data-testid="tool-parameters">
            {rows
                .into_iter()
                .map(|row| {
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
                    view! {
                        <dt class="font-mono text-slate-500 dark:text-slate-400">{format!("{}:", row.key)}</dt>
                        <dd class="min-w-0">{value}</dd>
                    }
                })
                .collect_view()}
        </dl>
    }
}

/// A tool call in the transcript: one line, expandable to its arguments and result.
#[component]
pub fn ToolEntry(call: ToolCall) -> impl IntoView {
    let error_kind = call.outcome.as_ref().and_then(|outcome| outcome.error_kind.clone());
    let denied = error_kind.as_deref() == Some(DENIED_BY_POLICY);
    let (mark, mark_class, state) = match call.outcome.as_ref().map(|outcome| outcome.status) {
        // A rule refused it: it never ran, which is not the tool failing.
        Some(_) if denied => ("⊘", "text-red-600 dark:text-red-400", "denied"),
        None => ("●", "text-amber-500", "waiting"),
        Some(ToolStatus::Success) => ("✓", "text-emerald-600 dark:text-emerald-400", "success"),
        Some(ToolStatus::Error) => ("✗", "text-red-600 dark:text-red-400", "error"),
        Some(ToolStatus::Skipped) => ("↷", "text-slate-500", "skipped"),
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
    view! {
        <details
            data-testid="tool-entry"
            data-tool-id=call.tool_id
            data-state=state
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
                {diff.map(|(diff, label)| view! { <DiffView diff label=label.unwrap_or_default() /> })}
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
    use crate::events::ToolKind;
    use serde_json::json;

    #[test]
    fn rows_show_strings_plainly_and_other_values_as_json() {
        let rows = parameter_rows(&json!({"command": "rm -rf cache", "timeout": 30}));
        assert_eq!(rows[0], ParameterRow { key: "command".into(), head: "rm -rf cache".into(), full: None });
        assert_eq!(rows[1].head, "30");
    }

    #[test]
    fn long_values_are_folded_with_the_whole_kept() {
        let content = (1..=50).map(|i| format!("line {i}")).collect::<Vec<_>>().join("\n");
        let rows = parameter_rows(&json!({"content": content}));
        assert!(rows[0].head.starts_with("line 1\n") && rows[0].head.ends_with("line 8…"), "{}", rows[0].head);
        assert_eq!(rows[0].full.as_deref(), Some(content.as_str()));
        let wide = "x".repeat(1000);
        assert_eq!(parameter_rows(&json!({"a": wide}))[0].head.chars().count(), FOLD_CHARS + 1);
    }

    #[test]
    fn summaries_prefer_the_command_or_path() {
        let call = |parameters| ToolCall {
            tool_id: "t".into(),
            tool_name: "x".into(),
            kind: ToolKind::Other,
            parameters,
            diff: None,
            outcome: None,
            policy: None,
        };
        assert_eq!(summary(&call(json!({"description": "d", "command": "ls\npwd"}))), "ls");
        assert_eq!(summary(&call(json!({"file_path": "src/a.rs", "content": "…"}))), "src/a.rs");
        assert_eq!(summary(&call(json!({"n": 1}))), "{\"n\":1}");
    }
}
