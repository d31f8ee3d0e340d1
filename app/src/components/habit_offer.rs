//! The card's line for a habit (issue 27, item 4): once the user has approved
//! the same command prefix, or the same file tool, three times in the folder,
//! "You approved `cargo test` 3 times here — Always allow it in this folder?".
//! It opens the card's "Always in this folder" step with the prefix filled in,
//! still editable: nothing is saved until the user confirms there. Asked of
//! the hub once, when the card shows; without an answer, no line.

use leptos::prelude::*;
use protocol::habits::Habit;

use crate::client;

#[component]
pub fn HabitOffer(
    session_id: String,
    tool_id: String,
    /// Whether the line hides (the card's editor or its Always step is open).
    hidden: Signal<bool>,
    /// Opens the Always step with the habit's prefix (none: the tool's rule).
    on_open: Callback<Option<String>>,
) -> impl IntoView {
    let habit = LocalResource::new(move || {
        let (session_id, tool_id) = (session_id.clone(), tool_id.clone());
        async move { client::policy::habit(&session_id, &tool_id).await.ok() }
    });
    move || {
        let habit = habit.get().flatten().filter(|habit| habit.offered)?;
        let (what, times) = offer_words(&habit);
        let prefix = habit.prefix.clone();
        Some(view! {
            <p
                data-testid="card-habit"
                role="note"
                class="mb-2 rounded-md bg-sky-50 px-2 py-1 text-sm text-slate-700 dark:bg-sky-950/40 dark:text-slate-200"
                class:hidden=move || hidden.get()
            >
                "You approved "
                <code data-testid="card-habit-what" class="rounded bg-white px-1 font-mono dark:bg-slate-800">{what}</code>
                {times}
                <button
                    type="button"
                    data-testid="card-habit-open"
                    class="max-sm:min-h-11 rounded-md px-2 py-0.5 font-medium text-sky-800 underline-offset-2 hover:underline dark:text-sky-300"
                    on:click=move |_| on_open.run(prefix.clone())
                >
                    "Always allow it in this folder?"
                </button>
            </p>
        })
    }
}

/// What the line names (the prefix, else the tool) and the rest of its sentence.
pub fn offer_words(habit: &Habit) -> (String, String) {
    let what = habit.prefix.clone().unwrap_or_else(|| habit.tool_name.clone());
    (what, format!(" {} times here — ", habit.approvals))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_prefix_or_else_the_tool() {
        let habit = Habit {
            tool_id: "t".into(),
            tool_name: "run_shell_command".into(),
            prefix: Some("cargo test".into()),
            approvals: 3,
            offered: true,
            withheld: None,
        };
        assert_eq!(offer_words(&habit), ("cargo test".to_string(), " 3 times here — ".to_string()));
        let file = Habit { tool_name: "write_file".into(), prefix: None, approvals: 4, ..habit };
        assert_eq!(offer_words(&file), ("write_file".to_string(), " 4 times here — ".to_string()));
    }
}
