//! A folder's sessions: each with its title (or "New session"), status, last
//! activity and waiting calls; a new one, switching, renaming in place, and
//! deleting (confirmed in the page when a turn runs or a card waits). Part of
//! the `session` part of the wasm: render it only from the open folder's view.

use leptos::prelude::*;

use crate::client::{self, HubError};
use crate::components::agent_picker::AgentPicker;
use crate::components::shortcuts::NEW_SESSION_KEYS;
use crate::components::status_badge::StatusBadge;
use crate::policy::now_ms;
use crate::state::HubState;
use protocol::api::{ProjectSummary, SessionStatus, SessionSummary};

/// What a session without a title is called.
pub const UNTITLED: &str = "New session";

/// How often the "5 min ago" labels are brought up to date.
const CLOCK_TICK: std::time::Duration = std::time::Duration::from_secs(30);

pub fn session_label(session: &SessionSummary) -> &str {
    session.title.as_deref().filter(|title| !title.trim().is_empty()).unwrap_or(UNTITLED)
}

/// Why deleting a session in this state needs the user's word, if it does.
pub fn delete_warning(status: SessionStatus) -> Option<&'static str> {
    match status {
        SessionStatus::Running => Some("A turn is running in this session. Deleting it stops the turn first."),
        SessionStatus::WaitingApproval => {
            Some("A tool call in this session is waiting for your decision. Deleting it withdraws the card.")
        }
        SessionStatus::WaitingInput => {
            Some("The agent in this session is waiting for your answer. Deleting it withdraws the question.")
        }
        SessionStatus::Idle | SessionStatus::Error => None,
    }
}

/// How long ago `at_ms` was, in words, as of `now`.
pub fn relative_time(at_ms: u64, now: u64) -> String {
    const MINUTE: u64 = 60;
    const HOUR: u64 = 60 * MINUTE;
    const DAY: u64 = 24 * HOUR;
    const TWO_DAYS: u64 = 2 * DAY;
    let seconds = now.saturating_sub(at_ms) / 1000;
    match seconds {
        0..MINUTE => "just now".to_string(),
        MINUTE..HOUR => format!("{} min ago", seconds / MINUTE),
        HOUR..DAY => format!("{} h ago", seconds / HOUR),
        DAY..=TWO_DAYS => "yesterday".to_string(),
        _ => format!("{} days ago", seconds / DAY),
    }
}

/// What the user asked of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new session with this agent (else the folder's last choice);
    /// `true`: isolated, in a git worktree of its own.
    Create(Option<String>, bool),
    Rename {
        id: String,
        title: String,
    },
    Delete {
        id: String,
        force: bool,
    },
}

/// What came of a change.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Done {
    Created(String),
    Renamed,
    Deleted(String),
}

async fn apply(folder_path: String, change: Change) -> Result<Done, (Change, HubError)> {
    let result = match &change {
        Change::Create(agent, isolated) => client::sessions::create(&folder_path, None, agent.clone(), *isolated)
            .await
            .map(|session| Done::Created(session.id)),
        Change::Rename { id, title } => client::sessions::rename(id, title).await.map(|_| Done::Renamed),
        Change::Delete { id, force } => client::sessions::delete(id, *force).await.map(|()| Done::Deleted(id.clone())),
    };
    result.map_err(|error| (change, error))
}

/// A delete waiting for the user's word: which session, and why it asks.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Confirm {
    id: String,
    why: String,
}

/// The sessions of `folder_path`, most recent first. `current` is the session
/// shown; `on_select` is called with the id of the one the user picks (a new
/// session is picked as it is made, and when the current one is deleted, the
/// most recent left); `on_none_left` when the current one was deleted and was the last.
#[component]
pub fn SessionList(
    folder_path: String,
    current: Signal<Option<String>>,
    on_select: Callback<String>,
    #[prop(optional)] on_none_left: Option<Callback<()>>,
) -> impl IntoView {
    let state = use_context::<HubState>();
    let folder = StoredValue::new(folder_path.clone());
    // The page's, so its key for a new session uses the same pick.
    let agent = state.map_or_else(|| RwSignal::new(None::<String>), |state| state.new_session_agent);
    // Without the page's state (kept fresh by /api/updates) the list fetches its own.
    let own = RwSignal::new(Vec::<ProjectSummary>::new());
    let sessions = Memo::new(move |_| {
        let folder = folder.get_value();
        let of_folder = |projects: &Vec<ProjectSummary>| {
            projects.iter().find(|project| project.folder_path == folder).map(|project| project.sessions.clone())
        };
        match state {
            Some(state) => state.projects.with(of_folder),
            None => own.with(of_folder),
        }
        .unwrap_or_default()
    });
    let refresh = move || match state {
        Some(state) => state.refresh_projects(),
        None => leptos::task::spawn_local(async move {
            if let Ok(response) = client::projects().await {
                own.try_set(response.projects);
            }
        }),
    };
    Effect::new(move |_| {
        if state.is_none() {
            refresh();
        }
    });
    let clock = RwSignal::new(now_ms());
    // In the browser only (effects do not run on the server).
    Effect::new(move |_| {
        if let Ok(ticker) = set_interval_with_handle(
            move || {
                let _ = clock.try_set(now_ms());
            },
            CLOCK_TICK,
        ) {
            on_cleanup(move || ticker.clear());
        }
    });

    // "Isolated" is offered in a git repository with a commit.
    let isolated = RwSignal::new(false);
    let isolatable = LocalResource::new(move || {
        let folder = folder.get_value();
        async move { client::sessions::folder_git(&folder).await }
    });
    let editing = RwSignal::new(None::<String>);
    let confirming = RwSignal::new(None::<Confirm>);
    let error = RwSignal::new(None::<HubError>);
    let change = Action::new_local(move |change: &Change| apply(folder.get_value(), change.clone()));
    let pending = Signal::derive(move || change.pending().get());
    Effect::new(move |_| {
        let Some(outcome) = change.value().get() else { return };
        match outcome {
            Ok(done) => {
                error.set(None);
                match done {
                    Done::Created(id) => on_select.run(id),
                    Done::Renamed => editing.set(None),
                    Done::Deleted(id) => {
                        confirming.set(None);
                        if current.get_untracked().as_deref() == Some(id.as_str()) {
                            let next =
                                sessions.with_untracked(|list| list.iter().find(|s| s.id != id).map(|s| s.id.clone()));
                            match (next, on_none_left) {
                                (Some(next), _) => on_select.run(next),
                                (None, Some(none_left)) => none_left.run(()),
                                (None, None) => {}
                            }
                        }
                    }
                }
                refresh();
            }
            // The session got busy since the list showed it: the hub says why; ask.
            Err((Change::Delete { id, force: false }, refused)) if refused.status == Some(409) => {
                confirming.set(Some(Confirm { id, why: refused.message }));
            }
            Err((_, failed)) => error.set(Some(failed)),
        }
    });
    let on_change = Callback::new(move |asked: Change| {
        if let Change::Delete { id, force: false } = &asked {
            let why = sessions
                .with_untracked(|list| list.iter().find(|s| &s.id == id).and_then(|s| delete_warning(s.status)));
            if let Some(why) = why {
                confirming.set(Some(Confirm { id: id.clone(), why: why.to_string() }));
                return;
            }
        }
        change.dispatch(asked);
    });

    view! {
        <section aria-labelledby="sessions-title" data-testid="session-list" class="flex flex-col gap-2 text-sm">
            <div class="flex items-center justify-between gap-2">
                <h2 id="sessions-title" class="text-xs font-semibold uppercase tracking-wide text-slate-600 dark:text-slate-400">
                    "Sessions"
                </h2>
                <button
                    type="button"
                    data-testid="new-session"
                    aria-keyshortcuts=NEW_SESSION_KEYS
                    title=format!("New session ({NEW_SESSION_KEYS})")
                    disabled=move || pending.get()
                    on:click=move |_| on_change.run(Change::Create(agent.get_untracked(), isolated.get_untracked()))
                    class="rounded-md border border-slate-300 px-2 py-0.5 text-xs font-medium text-slate-700 hover:bg-slate-100 disabled:opacity-50 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800"
                >
                    "New session"
                </button>
            </div>
            <AgentPicker folder_path chosen=agent />
            <Show when=move || isolatable.get().is_some_and(|answer| answer.is_ok_and(|git| git.isolatable))>
                <label class="flex items-center gap-2 text-xs text-slate-700 dark:text-slate-300">
                    <input
                        type="checkbox"
                        data-testid="new-session-isolated"
                        prop:checked=isolated
                        on:change=move |_| isolated.update(|on| *on = !*on)
                    />
                    "Isolated: a git worktree and branch of its own"
                </label>
            </Show>
            {move || {
                error
                    .get()
                    .map(|failed| {
                        view! {
                            <p role="alert" data-testid="session-list-error" class="text-red-700 dark:text-red-300">
                                {failed.message}
                            </p>
                        }
                    })
            }}
            <ul class="flex flex-col gap-1">
                <For
                    each=move || sessions.get()
                    key=|session| {
                        (
                            session.id.clone(),
                            session.title.clone(),
                            session.status.label(),
                            session.pending_count,
                            session.updated_at,
                        )
                    }
                    children=move |session| {
                        view! { <SessionRow session current clock editing confirming pending on_select on_change /> }
                    }
                />
            </ul>
            <Show when=move || sessions.with(Vec::is_empty)>
                <p class="text-slate-600 dark:text-slate-400">"No session yet: a prompt starts one."</p>
            </Show>
        </section>
    }
}

#[component]
fn SessionRow(
    session: SessionSummary,
    current: Signal<Option<String>>,
    clock: RwSignal<u64>,
    editing: RwSignal<Option<String>>,
    confirming: RwSignal<Option<Confirm>>,
    pending: Signal<bool>,
    on_select: Callback<String>,
    on_change: Callback<Change>,
) -> impl IntoView {
    let id = StoredValue::new(session.id.clone());
    let label = session_label(&session).to_string();
    let is_current = move || current.with(|current| current.as_deref() == Some(id.get_value().as_str()));
    let is_editing = move || editing.with(|editing| editing.as_deref() == Some(id.get_value().as_str()));
    let confirm = move || confirming.get().filter(|confirm| confirm.id == id.get_value());
    let updated_at = session.updated_at;
    let waiting = session.pending_count;
    let full_time = StoredValue::new(crate::policy::time_label(updated_at).1);
    let title = StoredValue::new(session.title.clone().unwrap_or_default());
    let row_label = StoredValue::new(label.clone());

    let untitled = session.title.is_none();
    let status = session.status;
    let agent_name = session.agent.as_ref().map(|agent| agent.name.clone());
    let branch = session.branch.clone();
    let summary = move || {
        view! {
            <button
                type="button"
                data-testid="session-open"
                aria-current=move || is_current().then_some("true")
                on:click=move |_| on_select.run(id.get_value())
                class="flex min-w-0 flex-1 flex-col items-start gap-1 rounded-md px-2 py-1.5 text-left hover:bg-slate-100 dark:hover:bg-slate-800"
                class=("bg-sky-50", is_current)
                class=("dark:bg-sky-950", is_current)
            >
                <span class="w-full truncate font-medium" class=("italic", untitled) title=row_label.get_value()>
                    {row_label.get_value()}
                </span>
                <span class="flex flex-wrap items-center gap-x-2 gap-y-1 text-xs text-slate-600 dark:text-slate-400">
                    <StatusBadge status />
                    {agent_name.clone().map(|name| view! { <span data-testid="session-agent-name">{name}</span> })}
                    {branch.clone().map(|branch| view! { <span data-testid="session-branch" class="font-mono">{branch}</span> })}
                    <span title=full_time.get_value()>{move || relative_time(updated_at, clock.get())}</span>
                    {(waiting > 0)
                        .then(|| {
                            view! {
                                <span data-testid="session-pending" class="rounded-full bg-amber-700 px-1.5 text-white">
                                    {waiting}
                                    <span class="sr-only">{if waiting == 1 { " call waiting" } else { " calls waiting" }}</span>
                                </span>
                            }
                        })}
                </span>
            </button>
            <button
                type="button"
                data-testid="session-rename"
                aria-label=format!("Rename session {}", row_label.get_value())
                title="Rename"
                disabled=move || pending.get()
                on:click=move |_| {
                    confirming.set(None);
                    editing.set(Some(id.get_value()));
                }
                class="rounded-md px-1.5 py-1 text-slate-600 hover:bg-slate-100 disabled:opacity-50 dark:text-slate-400 dark:hover:bg-slate-800"
            >
                <span aria-hidden="true">"✎"</span>
            </button>
            <button
                type="button"
                data-testid="session-delete"
                aria-label=format!("Delete session {}", row_label.get_value())
                title="Delete"
                disabled=move || pending.get()
                on:click=move |_| on_change.run(Change::Delete { id: id.get_value(), force: false })
                class="rounded-md px-1.5 py-1 text-slate-600 hover:bg-red-50 hover:text-red-700 disabled:opacity-50 dark:text-slate-400 dark:hover:bg-red-950 dark:hover:text-red-300"
            >
                <span aria-hidden="true">"✕"</span>
            </button>
        }
    };
    let row = move || {
        if is_editing() {
            view! { <TitleEditor id=id.get_value() title=title.get_value() editing pending on_change /> }.into_any()
        } else {
            view! { <div class="flex items-start gap-1">{summary()}</div> }.into_any()
        }
    };
    view! {
        <li data-testid="session-row" data-session-id=session.id.clone() class="flex flex-col gap-1">
            {row}
            {move || confirm().map(|confirm| view! { <ConfirmDelete confirm label=label.clone() confirming pending on_change /> })}
        </li>
    }
}

/// The title in an input: Enter saves, Escape cancels.
#[component]
fn TitleEditor(
    id: String,
    title: String,
    editing: RwSignal<Option<String>>,
    pending: Signal<bool>,
    on_change: Callback<Change>,
) -> impl IntoView {
    let draft = RwSignal::new(title);
    let input = NodeRef::<leptos::html::Input>::new();
    Effect::new(move |_| {
        if let Some(input) = input.get() {
            let _ = input.focus();
            input.select();
        }
    });
    let id = StoredValue::new(id);
    let save = move || {
        let title = draft.get_untracked().trim().to_string();
        if !title.is_empty() {
            on_change.run(Change::Rename { id: id.get_value(), title });
        }
    };
    let cancel = move || editing.set(None);
    view! {
        <div class="flex items-center gap-1 px-1 py-1">
            <input
                node_ref=input
                type="text"
                data-testid="session-title-input"
                aria-label="Session title (Enter saves, Escape cancels)"
                maxlength="200"
                bind:value=draft
                on:keydown=move |event| match event.key().as_str() {
                    "Enter" => {
                        event.prevent_default();
                        save();
                    }
                    "Escape" => {
                        event.prevent_default();
                        cancel();
                    }
                    _ => {}
                }
                class="min-w-0 flex-1 rounded-md border border-slate-300 bg-white px-2 py-1 text-sm focus:border-sky-500 focus:outline-none focus:ring-2 focus:ring-sky-500/30 dark:border-slate-700 dark:bg-slate-950"
            />
            <button
                type="button"
                data-testid="session-title-save"
                disabled=move || pending.get() || draft.with(|draft| draft.trim().is_empty())
                on:click=move |_| save()
                class="rounded-md bg-sky-700 px-2 py-1 text-xs font-medium text-white hover:bg-sky-800 disabled:opacity-50"
            >
                "Save"
            </button>
            <button
                type="button"
                data-testid="session-title-cancel"
                on:click=move |_| cancel()
                class="rounded-md border border-slate-300 px-2 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800"
            >
                "Cancel"
            </button>
        </div>
    }
}

/// The page's own confirmation, naming why deleting needs it.
#[component]
fn ConfirmDelete(
    confirm: Confirm,
    label: String,
    confirming: RwSignal<Option<Confirm>>,
    pending: Signal<bool>,
    on_change: Callback<Change>,
) -> impl IntoView {
    let Confirm { id, why } = confirm;
    let heading_id = format!("delete-{id}-title");
    let why_id = format!("delete-{id}-why");
    let (labelled_by, described_by) = (heading_id.clone(), why_id.clone());
    let keep = NodeRef::<leptos::html::Button>::new();
    // The safe choice has the focus, so Enter does not delete by accident.
    Effect::new(move |_| {
        if let Some(keep) = keep.get() {
            let _ = keep.focus();
        }
    });
    view! {
        <div
            role="alertdialog"
            data-testid="session-delete-confirm"
            aria-labelledby=labelled_by
            aria-describedby=described_by
            on:keydown=move |event| {
                if event.key() == "Escape" {
                    event.prevent_default();
                    confirming.set(None);
                }
            }
            class="flex flex-col gap-2 rounded-md border border-amber-300 bg-amber-50 p-2 text-amber-900 dark:border-amber-800 dark:bg-amber-950 dark:text-amber-100"
        >
            <p id=heading_id class="font-medium">{format!("Delete “{label}”?")}</p>
            <p id=why_id>{why}</p>
            <div class="flex gap-2">
                <button
                    type="button"
                    data-testid="session-delete-force"
                    disabled=move || pending.get()
                    on:click=move |_| on_change.run(Change::Delete { id: id.clone(), force: true })
                    class="rounded-md bg-red-700 px-2 py-1 text-xs font-medium text-white hover:bg-red-800 disabled:opacity-50"
                >
                    "Delete anyway"
                </button>
                <button
                    type="button"
                    node_ref=keep
                    data-testid="session-delete-keep"
                    on:click=move |_| confirming.set(None)
                    class="rounded-md border border-amber-400 px-2 py-1 text-xs font-medium hover:bg-amber-100 dark:border-amber-700 dark:hover:bg-amber-900"
                >
                    "Keep it"
                </button>
            </div>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_how_long_ago() {
        let now = 10 * 86_400_000;
        let rows: [(u64, &str); 8] = [
            (now, "just now"),
            (now - 59_000, "just now"),
            (now - 60_000, "1 min ago"),
            (now - 59 * 60_000, "59 min ago"),
            (now - 3 * 3_600_000, "3 h ago"),
            (now - 30 * 3_600_000, "yesterday"),
            (now - 5 * 86_400_000, "5 days ago"),
            (now + 5_000, "just now"),
        ];
        for (at, expected) in rows {
            assert_eq!(relative_time(at, now), expected, "{} ms before", now as i64 - at as i64);
        }
    }

    #[test]
    fn only_a_busy_session_asks_before_it_goes() {
        for status in [SessionStatus::Running, SessionStatus::WaitingApproval, SessionStatus::WaitingInput] {
            assert!(delete_warning(status).is_some(), "{status:?}");
        }
        assert_eq!((delete_warning(SessionStatus::Idle), delete_warning(SessionStatus::Error)), (None, None));
    }

    #[test]
    fn an_untitled_session_is_a_new_session() {
        let mut session = SessionSummary {
            id: "s".into(),
            title: None,
            status: SessionStatus::Idle,
            pending_count: 0,
            yolo_mode: false,
            updated_at: 0,
            agent: None,
            waiting_since: None,
            deadline_at: None,
            branch: None,
        };
        assert_eq!(session_label(&session), UNTITLED);
        session.title = Some("Fix it".into());
        assert_eq!(session_label(&session), "Fix it");
    }
}
