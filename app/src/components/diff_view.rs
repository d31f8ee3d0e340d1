//! A file edit as a unified diff: red and green lines with their numbers in
//! the old and the new file, unchanged stretches folded. Very long diffs show
//! their first rows and the rest on request. A file whose language is known
//! is highlighted once the diff is on screen (see `highlight`): each line as
//! it reads in the whole file, so a string or a comment over several lines
//! keeps its colour.

use std::sync::Arc;

use leptos::prelude::*;

use crate::diff::{unified, DiffRow, LineTag, CONTEXT};
use crate::highlight::{diff_when_seen, language_of_path, DiffLines};
use crate::parts::{wasm_split, PartMissing};
use protocol::events::FileDiff;

/// Rows shown before "show all": a new file of thousands of lines stays readable.
const FIRST_ROWS: usize = 400;

const LINE_CLASS: &str = "whitespace-pre-wrap break-all pr-3";

/// The diff, from the `cards` part of the wasm (see `parts`): diffing and its
/// view are needed only once an edit is on screen.
#[wasm_split(cards, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn diff_view(diff: FileDiff, label: Option<&'static str>) -> Result<AnyView, PartMissing> {
    Ok(match label {
        Some(label) => view! { <DiffView diff label /> }.into_any(),
        None => view! { <DiffView diff /> }.into_any(),
    })
}

#[component]
pub fn DiffView(diff: FileDiff, #[prop(optional)] label: Option<&'static str>) -> impl IntoView {
    let unified = unified(&diff.old_text, &diff.new_text, CONTEXT);
    let total = unified.rows.len();
    let show_all = RwSignal::new(total <= FIRST_ROWS);
    let rows = StoredValue::new(unified.rows);
    let new_file = diff.old_text.is_empty();
    let figure = NodeRef::<leptos::html::Figure>::new();
    let highlighted = RwSignal::new(None::<Arc<DiffLines>>);
    if let Some(language) = language_of_path(&diff.path).filter(|_| total > 0) {
        diff_when_seen(figure, language, diff.old_text, diff.new_text, highlighted);
    }
    let visible = move || {
        let limit = if show_all.get() { total } else { FIRST_ROWS };
        let lines = highlighted.get();
        rows.with_value(|rows| {
            rows.iter().take(limit).cloned().map(|row| row_view(row, lines.as_deref())).collect_view()
        })
    };
    view! {
        <figure node_ref=figure data-testid="diff" data-highlighted=move || highlighted.with(Option::is_some).then_some("true") class="overflow-hidden rounded-lg border border-slate-200 text-xs dark:border-slate-700">
            <figcaption class="flex items-center gap-3 border-b border-slate-200 bg-slate-100 px-3 py-1.5 dark:border-slate-700 dark:bg-slate-800">
                <span data-testid="diff-path" class="min-w-0 flex-1 truncate font-mono font-medium">{diff.path}</span>
                {label.map(|label| view! { <span class="rounded bg-sky-100 px-1.5 text-sky-800 dark:bg-sky-900 dark:text-sky-200">{label}</span> })}
                {new_file.then(|| view! { <span class="text-slate-500 dark:text-slate-400">"new file"</span> })}
                <span data-testid="diff-stats" class="font-mono">
                    <span class="text-emerald-700 dark:text-emerald-400">{format!("+{}", unified.added)}</span>
                    " "
                    <span class="text-red-700 dark:text-red-400">{format!("−{}", unified.removed)}</span>
                </span>
            </figcaption>
            {if total == 0 {
                view! { <p class="px-3 py-2 text-slate-500 dark:text-slate-400">"No changes to the file's content."</p> }.into_any()
            } else {
                view! {
                    <div class="max-h-[28rem] overflow-auto">
                        <table class="w-full border-collapse font-mono">
                            <tbody>{visible}</tbody>
                        </table>
                    </div>
                }
                    .into_any()
            }}
            <Show when=move || !show_all.get()>
                <button
                    type="button"
                    data-testid="diff-show-all"
                    class="w-full border-t border-slate-200 px-3 py-1.5 text-left text-sky-700 hover:bg-slate-50 dark:border-slate-700 dark:text-sky-400 dark:hover:bg-slate-800"
                    on:click=move |_| show_all.set(true)
                >
                    {format!("Show all {total} rows")}
                </button>
            </Show>
        </figure>
    }
}

/// The highlighted HTML of a row's line: a removed line is the old file's,
/// any other the new file's.
fn line_html(lines: &DiffLines, tag: LineTag, old: Option<usize>, new: Option<usize>) -> Option<&str> {
    let (side, number) = match tag {
        LineTag::Removed => (&lines.old, old?),
        LineTag::Same | LineTag::Added => (&lines.new, new?),
    };
    side.get(number.checked_sub(1)?).map(String::as_str)
}

fn row_view(row: DiffRow, lines: Option<&DiffLines>) -> AnyView {
    match row {
        DiffRow::Fold(lines) => view! {
            <tr data-testid="diff-fold" class="bg-slate-50 text-slate-500 dark:text-slate-400 dark:bg-slate-900">
                <td colspan="4" class="px-3 py-0.5">{format!("⋯ {lines} unchanged line{}", if lines == 1 { "" } else { "s" })}</td>
            </tr>
        }
        .into_any(),
        DiffRow::Line { tag, old, new, text } => {
            let (sign, class, testid) = match tag {
                LineTag::Same => (" ", "", "diff-same"),
                LineTag::Removed => ("-", "bg-red-50 text-red-900 dark:bg-red-950/50 dark:text-red-200", "diff-removed"),
                LineTag::Added => {
                    ("+", "bg-emerald-50 text-emerald-900 dark:bg-emerald-950/50 dark:text-emerald-200", "diff-added")
                }
            };
            let number = |n: Option<usize>| n.map(|n| n.to_string()).unwrap_or_default();
            // The highlighter's HTML (escaped text in spans) or the text itself, never text as HTML.
            let line = match lines.and_then(|lines| line_html(lines, tag, old, new)) {
                Some(html) => view! { <td class=LINE_CLASS inner_html=html.to_string()></td> }.into_any(),
                None => view! { <td class=LINE_CLASS>{text}</td> }.into_any(),
            };
            view! {
                <tr data-testid=testid class=class>
                    <td class="w-10 select-none px-1 text-right text-slate-600 dark:text-slate-400">{number(old)}</td>
                    <td class="w-10 select-none px-1 text-right text-slate-600 dark:text-slate-400">{number(new)}</td>
                    <td class="w-4 select-none text-center">{sign}</td>
                    {line}
                </tr>
            }
            .into_any()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removed_line_is_highlighted_as_in_the_old_file_the_others_as_in_the_new() {
        let lines = DiffLines {
            old: vec!["old 1".into(), "old 2".into()],
            new: vec!["new 1".into(), "new 2".into(), "new 3".into()],
        };
        assert_eq!(line_html(&lines, LineTag::Removed, Some(2), None), Some("old 2"));
        assert_eq!(line_html(&lines, LineTag::Added, None, Some(3)), Some("new 3"));
        assert_eq!(line_html(&lines, LineTag::Same, Some(1), Some(2)), Some("new 2"));
        assert_eq!(line_html(&lines, LineTag::Added, None, Some(4)), None, "past the end: plain text");
        assert_eq!(line_html(&lines, LineTag::Removed, Some(0), None), None);
        assert_eq!(line_html(&lines, LineTag::Removed, None, Some(1)), None);
    }
}
