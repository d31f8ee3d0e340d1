//! The header: product name, the open folder and its YOLO switch.

use leptos::prelude::*;

use crate::components::hub_page::HubState;
use crate::types::YoloSource;

/// What still asks in YOLO, for the switch's tooltip and its description.
const GUARD_RAILS_HELP: &str = "Even with YOLO on, the built-in guard rails keep these calls asking: \
sudo, su and doas; recursive deletes of /, ~ or ..; force pushes; piping a download into a shell; \
writes to shell startup files and ~/.ssh. Any ask_user rule still asks and any deny rule still blocks. \
The folder's Rules panel lists them.";

#[component]
pub fn Header() -> impl IntoView {
    let state = expect_context::<HubState>();
    let folder = move || state.config.get().map(|config| config.folder_path).or_else(|| state.folder.get());
    view! {
        <header class="flex items-center gap-4 border-b border-slate-200 bg-white px-6 py-3 dark:border-slate-800 dark:bg-slate-900">
            <a href="/" class="text-lg font-semibold tracking-tight">"Agent Hub"</a>
            <span
                data-testid="current-folder"
                class="min-w-0 flex-1 truncate font-mono text-sm text-slate-500 dark:text-slate-400"
                title=folder
            >
                {move || folder().unwrap_or_else(|| "No folder open".to_string())}
            </span>
            <a
                href="/decisions"
                data-testid="all-decisions-link"
                title="Every decision on every folder's tool calls: who allowed what"
                class="text-sm text-sky-700 hover:underline dark:text-sky-400"
            >
                "All decisions"
            </a>
            <YoloSwitch />
        </header>
    }
}

#[component]
fn YoloSwitch() -> impl IntoView {
    let state = expect_context::<HubState>();
    let config = state.config;
    let on = move || config.with(|config| config.as_ref().is_some_and(|config| config.yolo_mode));
    let locked = move || config.with(|config| config.as_ref().is_some_and(|config| config.yolo_locked));
    let source = move || {
        config.with(|config| match config.as_ref().map(|config| config.source) {
            Some(YoloSource::Settings) => "from .gemini/settings.json",
            Some(YoloSource::Default) => "default",
            Some(YoloSource::User) => "set by you",
            None => "",
        })
    };
    let note = move || config.with(|config| config.as_ref().and_then(|config| config.note.clone()).unwrap_or_default());
    let rails_help = move || if on() { GUARD_RAILS_HELP } else { "" };
    let track = move || {
        if on() {
            "relative inline-flex h-6 w-11 shrink-0 items-center rounded-full bg-amber-500 transition-colors disabled:cursor-not-allowed disabled:opacity-50"
        } else {
            "relative inline-flex h-6 w-11 shrink-0 items-center rounded-full bg-slate-300 transition-colors disabled:cursor-not-allowed disabled:opacity-50 dark:bg-slate-700"
        }
    };
    let knob = move || {
        if on() {
            "inline-block h-5 w-5 translate-x-5 rounded-full bg-white shadow transition-transform"
        } else {
            "inline-block h-5 w-5 translate-x-0.5 rounded-full bg-white shadow transition-transform"
        }
    };
    view! {
        <div class="flex items-center gap-3 text-sm" title=note>
            <span class="flex flex-col items-end leading-tight">
                <span class="font-medium">
                    "YOLO"
                    <Show when=on>
                        <span
                            data-testid="yolo-guard-rails"
                            class="cursor-help font-normal text-amber-700 underline decoration-dotted underline-offset-2 dark:text-amber-400"
                            title=rails_help
                        >
                            " · guard rails on"
                        </span>
                    </Show>
                </span>
                <span id="yolo-guard-rails-help" class="sr-only">{rails_help}</span>
                <span data-testid="yolo-source" class="text-xs text-slate-500 dark:text-slate-400">
                    {source}
                </span>
            </span>
            <button
                type="button"
                role="switch"
                aria-label="YOLO mode: run tool calls without asking"
                aria-describedby="yolo-guard-rails-help"
                data-testid="yolo-switch"
                aria-checked=move || on().to_string()
                disabled=move || locked() || config.with(Option::is_none)
                class=track
                on:click=move |_| state.toggle_yolo()
            >
                <span class=knob></span>
            </button>
            <Show when=locked>
                <span
                    data-testid="yolo-lock"
                    class="inline-flex items-center gap-1 rounded-md bg-slate-100 px-2 py-1 text-xs text-slate-700 dark:bg-slate-800 dark:text-slate-300"
                >
                    <svg viewBox="0 0 16 16" class="h-3.5 w-3.5" fill="currentColor" aria-hidden="true">
                        <path d="M4 7V5a4 4 0 1 1 8 0v2h.5A1.5 1.5 0 0 1 14 8.5v5a1.5 1.5 0 0 1-1.5 1.5h-9A1.5 1.5 0 0 1 2 13.5v-5A1.5 1.5 0 0 1 3.5 7H4Zm2 0h4V5a2 2 0 1 0-4 0v2Z" />
                    </svg>
                    "Locked off by settings"
                </span>
            </Show>
        </div>
    }
}
