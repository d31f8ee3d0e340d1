//! Opening folders and listing the open ones.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::client;
use crate::components::changes::SessionActivity;
use crate::components::chat::ChatPanel;
use crate::components::folder_completion::Combo;
use crate::components::folder_tools::{FolderTools, ToolButtons, ToolPanel};
use crate::components::inbox::Inbox;
use crate::components::notify_phone::NotifyPhoneSlot;
use crate::components::sessions::SessionList;
use crate::components::status_badge::StatusBadge;
use crate::components::trust_banner::TrustBanner;
use crate::location::use_location;
use crate::parts::{deferred, wasm_split, PartMissing};
use crate::state::folder_name;
use crate::state::{folder_href, session_href, HubState};
use protocol::api::{ChatConfig, SessionSummary};

#[component]
pub fn FolderSidebar(on_open: Callback<ChatConfig>) -> impl IntoView {
    let state = expect_context::<HubState>();
    let path = RwSignal::new(String::new());
    let form_error = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    let combo = Combo::new(path);
    let submit = move |event: leptos::ev::SubmitEvent| {
        event.prevent_default();
        let typed = path.get_untracked().trim().to_string();
        if typed.is_empty() || busy.get_untracked() {
            return;
        }
        busy.set(true);
        combo.set_open(false);
        spawn_local(async move {
            let result = client::open_folder(&combo.expand_home(&typed)).await;
            // The sidebar went with the page while the hub answered: nothing to show.
            if busy.try_set(false).is_some() {
                return;
            }
            match result {
                Ok(config) => {
                    form_error.try_set(None);
                    path.try_set(String::new());
                    state.refresh_projects();
                    on_open.try_run(config);
                }
                Err(error) => {
                    form_error.try_set(Some(error.message));
                }
            }
        });
    };
    view! {
        <aside class="flex w-full flex-col border-b border-slate-200 bg-white p-4 md:w-80 md:border-b-0 md:border-r dark:border-slate-800 dark:bg-slate-900">
            <form on:submit=submit class="flex flex-col gap-2" data-testid="open-folder-form">
                <label for="folder-path" class="text-xs font-semibold uppercase tracking-wide text-slate-500 dark:text-slate-400">
                    "Open a folder"
                </label>
                <div class="relative flex gap-2">
                    <input
                        id="folder-path"
                        name="folder-path"
                        type="text"
                        autocomplete="off"
                        spellcheck="false"
                        placeholder="/path/to/project or ~/project"
                        role="combobox"
                        aria-autocomplete="list"
                        aria-controls=move || combo.controls()
                        aria-expanded=move || if combo.expanded() { "true" } else { "false" }
                        aria-activedescendant=move || combo.active_id()
                        on:keydown=move |event| combo.on_key(event)
                        on:input=move |_| combo.set_open(true)
                        on:focus=move |_| combo.set_open(true)
                        on:blur=move |_| combo.set_open(false)
                        bind:value=path
                        class="min-w-0 flex-1 rounded-md border border-slate-300 bg-white px-2 py-1.5 font-mono text-sm focus:border-sky-500 focus:outline-none focus:ring-2 focus:ring-sky-500/30 dark:border-slate-700 dark:bg-slate-950"
                    />
                    <button
                        type="submit"
                        disabled=move || busy.get()
                        class="rounded-md bg-sky-700 px-3 py-1.5 text-sm font-medium text-white hover:bg-sky-800 disabled:opacity-50"
                    >
                        "Open"
                    </button>
                    <div class="absolute inset-x-0 top-full">{combo.list()}</div>
                </div>
                <Show when=move || form_error.get().is_some()>
                    <p data-testid="open-folder-error" class="text-sm text-red-700 dark:text-red-400">
                        {move || form_error.get()}
                    </p>
                </Show>
            </form>
            <h2 class="mt-6 mb-2 text-xs font-semibold uppercase tracking-wide text-slate-500 dark:text-slate-400">"Open folders"</h2>
            <ul data-testid="folder-list" class="flex flex-col gap-1">
                <For
                    each=move || state.projects.get()
                    key=|project| {
                        let waiting: usize = project.sessions.iter().map(|session| session.pending_count).sum();
                        (project.folder_path.clone(), waiting)
                    }
                    children=move |project| {
                        let href = folder_href(&project.folder_path);
                        let current = {
                            let folder_path = project.folder_path.clone();
                            move || state.config.with(|config| config.as_ref().is_some_and(|c| c.folder_path == folder_path))
                        };
                        let waiting: usize = project.sessions.iter().map(|session| session.pending_count).sum();
                        view! {
                            <li>
                                <a
                                    href=href
                                    class="block truncate rounded-md px-2 py-1.5 font-mono text-sm max-sm:py-3 hover:bg-slate-100 dark:hover:bg-slate-800"
                                    class=("bg-sky-50", current.clone())
                                    class=("dark:bg-sky-950", current)
                                    title=project.folder_path.clone()
                                >
                                    {folder_name(&project.folder_path)}
                                    <Show when=move || { waiting > 0 }>
                                        <span class="ml-2 rounded-full bg-amber-700 px-1.5 text-xs text-white">{waiting}</span>
                                    </Show>
                                </a>
                            </li>
                        }
                    }
                />
            </ul>
            <Show when=move || state.projects.with(Vec::is_empty)>
                <p class="text-sm text-slate-500 dark:text-slate-400">"No folder open yet."</p>
            </Show>
            <Inbox />
            <NotifyPhoneSlot />
        </aside>
    }
}

#[component]
pub fn FolderPanel() -> impl IntoView {
    let state = expect_context::<HubState>();
    // Only a change of folder or session remounts the chat; a YOLO toggle does not.
    let open = Memo::new(move |_| {
        state
            .config
            .with(|config| config.as_ref().map(|config| (config.folder_path.clone(), config.session_id.clone())))
    });
    move || {
        match open.get() {
        None => view! {
            <section class="mx-auto max-w-xl py-16 text-center text-slate-600 dark:text-slate-400">
                <h1 class="mb-2 text-2xl font-semibold text-slate-900 dark:text-slate-100">"Supervise your coding agents"</h1>
                <p>"Open a project folder. Every command or file change the agent wants waits for your approval, unless you switch YOLO on for that folder."</p>
            </section>
        }
        .into_any(),
        Some((folder_path, session_id)) => deferred(open_folder_view(folder_path, session_id)),
    }
    }
}

/// The open folder: heading, tools and chat, from the `session` part of the
/// wasm (see `parts`). The server never renders it (the folder's config is
/// fetched by the browser), so hydration does not need it.
#[wasm_split(session, wasm_split_path = ::leptos::wasm_split, preload(preload_session), fallible)]
pub fn open_folder_view(folder_path: String, session_id: String) -> Result<AnyView, PartMissing> {
    let tools = FolderTools::new();
    // The chat tells the Changes panel when a call ended.
    SessionActivity::provide();
    let state = expect_context::<HubState>();
    let location = use_location();
    let current = Signal::derive({
        let session_id = session_id.clone();
        move || Some(session_id.clone())
    });
    let on_select = Callback::new({
        let folder_path = folder_path.clone();
        move |id: String| location.navigate(&session_href(&folder_path, &id))
    });
    // The last session went: the folder's default one opens, made anew.
    let on_none_left = Callback::new({
        let folder_path = folder_path.clone();
        move |()| {
            // The default session keeps its id: without this the chat would stay
            // mounted on the deleted one's transcript.
            state.config.set(None);
            location.navigate(&folder_href(&folder_path));
            state.load_config();
        }
    });
    Ok(view! {
        <div class="mx-auto flex w-full max-w-6xl flex-col gap-6 lg:flex-row">
            <nav aria-label="Sessions of this folder" class="lg:w-64 lg:shrink-0">
                <SessionList folder_path=folder_path.clone() current on_select on_none_left />
            </nav>
            <section class="flex min-w-0 flex-1 flex-col gap-4" data-testid="folder-panel">
                <FolderHeading folder_path=folder_path.clone() session_id=session_id.clone() tools />
                <ToolPanel tools folder_path=folder_path.clone() session_id=session_id.clone() />
                <ChatPanel folder_path session_id />
            </section>
        </div>
    }
    .into_any())
}

#[component]
fn FolderHeading(folder_path: String, session_id: String, tools: FolderTools) -> impl IntoView {
    let state = expect_context::<HubState>();
    let status = {
        let folder_path = folder_path.clone();
        move || {
            state.projects.with(|projects| {
                projects
                    .iter()
                    .filter(|project| project.folder_path == folder_path)
                    .flat_map(|project| project.sessions.iter())
                    .find(|session| session.id == session_id)
                    .map(|session: &SessionSummary| session.status)
            })
        }
    };
    let yolo_note = move || {
        state.config.with(|config| {
            let Some(config) = config else { return String::new() };
            let mode = if config.yolo_mode {
                "YOLO is on: the agent's tool calls run without asking."
            } else {
                "YOLO is off: every command and file change waits for your approval."
            };
            format!("{mode} {}", config.note.as_deref().unwrap_or_default()).trim_end().to_string()
        })
    };
    view! {
        <div class="flex flex-col gap-1">
            <div class="flex flex-wrap items-center gap-3">
                <h1 class="min-w-0 truncate font-mono text-xl font-semibold" title=folder_path.clone()>
                    {folder_name(&folder_path)}
                </h1>
                {move || status().map(|status| view! { <StatusBadge status /> })}
                <span class="flex-1"></span>
                <ToolButtons tools />
            </div>
            <p data-testid="yolo-note" class="text-sm text-slate-600 dark:text-slate-400">{yolo_note}</p>
            <TrustBanner folder_path />
        </div>
    }
}
