//! One inbox for all folders: every session waiting on the user, its count in
//! the tab title, and a desktop notification when something new waits while
//! the tab is hidden (permission is asked once, on the first prompt sent).

use leptos::prelude::*;

use crate::components::shortcuts::NEXT_WAITING_KEYS;
use crate::components::status_badge::StatusBadge;
use crate::components::waiting_calls::waiting_calls_view;
use crate::parts::{after_hydration, when_loaded};
use crate::state::folder_name;
use crate::state::{session_href, HubState};
use crate::waiting::{newly_waiting, waiting_sessions, Waiting};

#[component]
pub fn Inbox() -> impl IntoView {
    let state = expect_context::<HubState>();
    let waiting = Memo::new(move |_| state.projects.with(|projects| waiting_sessions(projects)));
    Effect::new(move |_| {
        if let Some((folder_path, summary)) = state.timed_out.get() {
            notify::timed_out(&folder_path, &summary);
        }
    });
    // What came of the last batch decided from the inbox.
    let said = RwSignal::new(None::<String>);
    // Notify about what is new, not about what was already waiting when the page opened.
    Effect::new(move |previous: Option<Vec<Waiting>>| {
        let now = waiting.get();
        if let Some(before) = previous {
            for item in newly_waiting(&before, &now) {
                notify::show(item);
            }
        }
        now
    });
    view! {
        <section data-testid="inbox" class="mt-6 max-sm:order-first max-sm:mt-0 max-sm:mb-6">
            <h2 class="mb-2 flex items-center gap-2 text-xs font-semibold uppercase tracking-wide text-slate-500 dark:text-slate-400">
                "Waiting on you"
                <Show when=move || waiting.with(|w| !w.is_empty())>
                    <span data-testid="inbox-count" class="rounded-full bg-amber-700 px-1.5 text-white">
                        {move || waiting.with(Vec::len)}
                    </span>
                </Show>
                <span class="ml-auto font-normal normal-case tracking-normal max-sm:hidden" title="Open the next session that waits on you">
                    <kbd>{NEXT_WAITING_KEYS}</kbd>
                    " next"
                </span>
            </h2>
            <Show
                when=move || waiting.with(|w| !w.is_empty())
                fallback=|| view! { <p class="text-sm text-slate-500 dark:text-slate-400">"Nothing is waiting."</p> }
            >
                <ul class="flex flex-col gap-1">
                    <For
                        each=move || waiting.get()
                        key=|item| (item.session_id.clone(), item.updated_at)
                        let:item
                    >
                        <li>
                            <a
                                href=session_href(&item.folder_path, &item.session_id)
                                data-testid="inbox-item"
                                title=item.folder_path.clone()
                                class="max-sm:min-h-11 flex items-center gap-2 rounded-md px-2 py-1.5 text-sm hover:bg-amber-50 dark:hover:bg-amber-950/40"
                            >
                                <span class="min-w-0 flex-1 truncate font-mono">{folder_name(&item.folder_path)}</span>
                                <StatusBadge status=item.status />
                            </a>
                        </li>
                    </For>
                </ul>
                // An extra: should its part be missing, the sessions above still lead to each card.
                {after_hydration(move || when_loaded(waiting_calls_view(said), |view| view.unwrap_or_else(|_| ().into_any())))}
            </Show>
            <p role="status" data-testid="inbox-outcome" class="mt-1 text-xs text-slate-600 dark:text-slate-400">
                {move || said.get()}
            </p>
        </section>
    }
}

/// Desktop notifications (browser only).
pub mod notify {
    use super::Waiting;

    #[cfg(feature = "hydrate")]
    const ASKED_KEY: &str = "agent-hub.notifications-asked";

    /// Asks for permission the first time it is called in this browser.
    #[cfg(feature = "hydrate")]
    pub fn ask_once() {
        use web_sys::{Notification, NotificationPermission};
        let Some(storage) = web_sys::window().and_then(|w| w.local_storage().ok().flatten()) else { return };
        if Notification::permission() != NotificationPermission::Default
            || storage.get_item(ASKED_KEY).ok().flatten().is_some()
        {
            return;
        }
        let _ = storage.set_item(ASKED_KEY, "yes");
        let _ = Notification::request_permission();
    }

    #[cfg(feature = "hydrate")]
    pub fn show(item: &Waiting) {
        use web_sys::{Notification, NotificationOptions, NotificationPermission};
        let hidden = web_sys::window().and_then(|w| w.document()).is_some_and(|d| d.hidden());
        if !hidden || Notification::permission() != NotificationPermission::Granted {
            return;
        }
        let what = match item.status {
            protocol::api::SessionStatus::WaitingInput => "The agent asks you a question.".to_string(),
            _ => match item.pending_count {
                1 => "A tool call waits for your approval.".to_string(),
                n => format!("{n} tool calls wait for your approval."),
            },
        };
        let options = NotificationOptions::new();
        options.set_body(&format!("{}: {what}", super::folder_name(&item.folder_path)));
        options.set_tag(&item.session_id);
        let _ = Notification::new_with_options("Agent Hub: action required", &options);
    }

    /// Nobody decided in time: the hub answered "no decision" (said even when
    /// the tab is visible: the card just vanished).
    #[cfg(feature = "hydrate")]
    pub fn timed_out(folder_path: &str, summary: &str) {
        use web_sys::{Notification, NotificationOptions, NotificationPermission};
        if Notification::permission() != NotificationPermission::Granted {
            return;
        }
        let options = NotificationOptions::new();
        options.set_body(&format!(
            "{}: {summary} — no decision in time, it was not run.",
            super::folder_name(folder_path)
        ));
        let _ = Notification::new_with_options("Agent Hub: timed out", &options);
    }

    #[cfg(not(feature = "hydrate"))]
    pub fn timed_out(_folder_path: &str, _summary: &str) {}

    #[cfg(not(feature = "hydrate"))]
    pub fn ask_once() {}

    #[cfg(not(feature = "hydrate"))]
    pub fn show(_item: &Waiting) {}
}
