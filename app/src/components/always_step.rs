//! The card's "Always in this folder" step: what the saved rule will allow,
//! shown before anything is sent. For a shell command, the command prefix
//! (the hub's proposal, editable); for any other tool, the tool itself.

use leptos::prelude::*;

use crate::client;
use crate::policy::{first_words, prefix_covers, rule_tool, shell_command};
use crate::transcript::ToolCall;

#[component]
pub fn AlwaysStep(
    call: ToolCall,
    /// Whether the step shows (the card's buttons hide meanwhile).
    open: Signal<bool>,
    busy: Signal<bool>,
    /// A file edit: saving applies it as proposed.
    edit: bool,
    /// Saves the rule: the prefix for a command, `None` for another tool.
    on_save: Callback<Option<String>>,
    on_back: Callback<()>,
    /// A prefix to fill in instead of the hub's proposal (a habit's, from the
    /// card's offer); still editable.
    preset: Signal<Option<String>>,
) -> impl IntoView {
    let command = shell_command(&call);
    let tool = rule_tool(&call);
    let shell = command.is_some();
    let command_text = StoredValue::new(command.clone().unwrap_or_default());
    let prefix = RwSignal::new(String::new());
    let touched = RwSignal::new(false);
    let input_ref = NodeRef::<leptos::html::Input>::new();
    let save_ref = NodeRef::<leptos::html::Button>::new();

    // The hub's proposal, asked for as soon as the card shows a command, so the
    // step opens filled in. Without an answer, the command's first words.
    if let Some(command) = command {
        let suggestion = LocalResource::new(move || {
            let command = command.clone();
            async move { client::policy::suggest_prefix(&command).await }
        });
        Effect::new(move |_| {
            if let Some(result) = suggestion.get() {
                if !touched.get_untracked() && preset.with_untracked(Option::is_none) {
                    prefix.set(result.unwrap_or_else(|_| first_words(&command_text.get_value())));
                }
            }
        });
    }
    Effect::new(move |_| {
        if let Some(preset) = preset.get() {
            prefix.set(preset);
        }
    });
    Effect::new(move |_| {
        if open.get() {
            if let Some(input) = input_ref.get() {
                let _ = input.focus();
                input.select();
            } else if let Some(button) = save_ref.get() {
                let _ = button.focus();
            }
        }
    });

    let blank = move || shell && prefix.with(|prefix| prefix.trim().is_empty());
    let save = move || {
        if !busy.get_untracked() && !blank() {
            on_save.run(shell.then(|| prefix.get_untracked()));
        }
    };
    let uncovered = move || {
        let prefix = prefix.get();
        let command = command_text.get_value();
        (shell && !prefix.trim().is_empty() && !prefix_covers(&command, &prefix))
            .then(|| format!("“{command}” does not start with “{}”: the rule would not cover it.", prefix.trim()))
    };
    let what = if shell {
        view! {
            <label for="card-prefix" class="text-slate-700 dark:text-slate-300">
                "Allow commands that start with"
            </label>
            <input
                id="card-prefix"
                type="text"
                node_ref=input_ref
                data-testid="card-prefix-input"
                autocomplete="off"
                spellcheck="false"
                placeholder="e.g. git status"
                aria-describedby="card-prefix-help"
                bind:value=prefix
                on:input=move |_| touched.set(true)
                class="w-full rounded-md border border-slate-300 bg-white px-2 py-1.5 font-mono focus:border-amber-500 focus:outline-none focus:ring-2 focus:ring-amber-500/30 dark:border-slate-700 dark:bg-slate-950"
            />
            <p id="card-prefix-help" class="text-xs text-slate-600 dark:text-slate-400">
                "From now on, in every session of this folder, matching commands run without a card. "
                "In a chained command (;, &&, |) each part must be allowed on its own, and a redirection (>, <) still asks."
            </p>
            <p data-testid="card-prefix-warning" role="status" class="text-xs text-amber-800 dark:text-amber-300">
                {uncovered}
            </p>
        }
        .into_any()
    } else {
        view! {
            <p data-testid="card-always-tool" class="text-slate-700 dark:text-slate-300">
                "From now on, every "
                <code class="rounded bg-slate-100 px-1 font-mono dark:bg-slate-800">{tool}</code>
                " call in this folder runs without a card, in every session."
            </p>
        }
        .into_any()
    };
    view! {
        <form
            data-testid="card-always"
            aria-labelledby="card-always-title"
            class="mt-4 flex flex-col gap-2 rounded-lg border border-amber-300 bg-white/70 p-3 text-sm dark:border-amber-800 dark:bg-slate-900/60"
            class:hidden=move || !open.get()
            on:submit=move |event| {
                event.prevent_default();
                save();
            }
            on:keydown=move |event| {
                if event.key() == "Escape" {
                    event.prevent_default();
                    on_back.run(());
                }
            }
        >
            <p id="card-always-title" class="font-medium">"Always in this folder"</p>
            {what}
            <p class="text-xs text-slate-500 dark:text-slate-400">
                "Saved in the hub as an allow rule (your folder's files are not changed). Delete it any time under Rules."
            </p>
            <div class="flex flex-wrap items-center gap-2">
                <button
                    type="submit"
                    node_ref=save_ref
                    data-testid="card-prefix-save"
                    disabled=move || busy.get() || blank()
                    class="max-sm:min-h-11 rounded-md bg-amber-700 px-3 py-1.5 font-medium text-white hover:bg-amber-800 disabled:opacity-50"
                >
                    {if edit { "Save rule and apply" } else { "Save rule and run" }}
                </button>
                <button
                    type="button"
                    data-testid="card-prefix-cancel"
                    on:click=move |_| on_back.run(())
                    class="max-sm:min-h-11 rounded-md px-3 py-1.5 text-slate-700 hover:bg-amber-100 dark:text-slate-200 dark:hover:bg-amber-900/40"
                >
                    "Back"
                </button>
                <span class="text-xs text-slate-500 dark:text-slate-400">"Enter Save • Esc Back"</span>
            </div>
        </form>
    }
}
