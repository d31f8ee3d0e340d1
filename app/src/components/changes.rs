//! The Changes panel of the open session: every file the agent created,
//! changed or deleted, newest first, each opening to its diff; and in a git
//! repository the working tree against `HEAD`, to review the whole change
//! before committing. Refetched whenever the chat sees a call end (a write,
//! or a command that may have touched files) and when the hub reports a change.

use std::collections::HashSet;

use leptos::prelude::*;

use crate::components::panel::Panel;

use crate::client;
use crate::components::alert::Alert;
use crate::components::diff_view::diff_view;
use crate::components::worktree::WorktreeActions;
use crate::parts::deferred;
use crate::state::HubState;
use protocol::api::SessionSummary;
use protocol::changes::{ChangeKind, ChangesResponse, GitChanges, GitStatus, Omitted};
use protocol::events::{AgentEvent, FileDiff, SeqEvent};

/// The `seq` of the last `tool_result` the open session's chat applied: the
/// chat marks it, the Changes panel refetches on it. Provided by the open
/// folder's view, so both see the same one.
#[derive(Clone, Copy)]
pub struct SessionActivity(RwSignal<u64>);

impl SessionActivity {
    pub fn provide() {
        provide_context(Self(RwSignal::new(0)));
    }

    /// Notes the calls that ended among `events` (a no-op once the view is gone).
    pub fn saw(self, events: &[SeqEvent]) {
        let last =
            events.iter().filter(|event| matches!(event.event, AgentEvent::ToolResult { .. })).map(|e| e.seq).max();
        if let Some(last) = last {
            self.0.try_update(|seen| *seen = (*seen).max(last));
        }
    }
}

/// One row of either list, as the panel shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    /// Unique in the panel: which list, and the path.
    key: String,
    path: String,
    badge: &'static str,
    badge_class: &'static str,
    detail: Option<String>,
    added: usize,
    removed: usize,
    omitted: Option<Omitted>,
    diff: FileDiff,
}

const CREATED: &str =
    "rounded-full bg-emerald-100 px-2 py-0.5 text-xs text-emerald-800 dark:bg-emerald-900 dark:text-emerald-200";
const MODIFIED: &str = "rounded-full bg-sky-100 px-2 py-0.5 text-xs text-sky-800 dark:bg-sky-900 dark:text-sky-200";
const DELETED: &str = "rounded-full bg-red-100 px-2 py-0.5 text-xs text-red-800 dark:bg-red-900 dark:text-red-200";
const OTHER: &str =
    "rounded-full bg-slate-100 px-2 py-0.5 text-xs text-slate-700 dark:bg-slate-800 dark:text-slate-300";

fn session_rows(response: &ChangesResponse) -> Vec<Row> {
    response
        .files
        .iter()
        .map(|file| Row {
            key: format!("session:{}", file.path),
            path: file.path.clone(),
            badge: file.change.label(),
            badge_class: match file.change {
                ChangeKind::Created => CREATED,
                ChangeKind::Modified => MODIFIED,
                ChangeKind::Deleted => DELETED,
            },
            detail: (file.writes > 1).then(|| format!("{} writes", file.writes)),
            added: file.added,
            removed: file.removed,
            omitted: file.omitted,
            diff: FileDiff {
                path: file.path.clone(),
                old_text: file.old_text.clone(),
                new_text: file.new_text.clone(),
            },
        })
        .collect()
}

fn git_rows(git: &GitChanges) -> Vec<Row> {
    git.files
        .iter()
        .map(|file| Row {
            key: format!("git:{}", file.path),
            path: file.path.clone(),
            badge: file.status.label(),
            badge_class: match file.status {
                GitStatus::Added | GitStatus::Untracked => CREATED,
                GitStatus::Deleted => DELETED,
                GitStatus::Modified | GitStatus::Renamed | GitStatus::Copied => MODIFIED,
                GitStatus::TypeChanged | GitStatus::Conflicted => OTHER,
            },
            detail: file.old_path.as_ref().map(|old| format!("from {old}")),
            added: file.added,
            removed: file.removed,
            omitted: file.omitted,
            diff: FileDiff {
                path: file.path.clone(),
                old_text: file.old_text.clone(),
                new_text: file.new_text.clone(),
            },
        })
        .collect()
}

#[component]
pub fn ChangesPanel(session_id: String, on_close: Callback<()>) -> impl IntoView {
    let state = use_context::<HubState>();
    let activity = use_context::<SessionActivity>();
    let session = StoredValue::new(session_id);
    // This session's own line in the folder list: a turn that started, paused or
    // ended elsewhere changes it (other sessions' changes do not refetch).
    let summary = Memo::new(move |_| {
        own_summary(state, &session.get_value(), |summary| (summary.status, summary.updated_at, summary.pending_count))
    });
    // An isolated session's branch: its worktree's actions show above the changes.
    let branch =
        Memo::new(move |_| own_summary(state, &session.get_value(), |summary| summary.branch.clone()).flatten());
    let changes = LocalResource::new(move || {
        if let Some(activity) = activity {
            activity.0.track();
        }
        summary.track();
        let session = session.get_value();
        async move { client::changes(&session).await }
    });
    let expanded = RwSignal::new(HashSet::<String>::new());

    let body = move || {
        changes.get().map(|result| match result {
            Err(error) => view! { <Alert message=error.message testid="changes-error" /> }.into_any(),
            Ok(response) => view! { <ChangesBody response expanded /> }.into_any(),
        })
    };
    let tools = move || {
        view! {
            <span class="flex-1"></span>
            <button
                type="button"
                data-testid="changes-refresh"
                title="Read the changes and the working tree again"
                on:click=move |_| changes.refetch()
                class="rounded-md px-2 py-0.5 text-xs font-medium text-sky-700 hover:bg-sky-50 hover:underline dark:text-sky-400 dark:hover:bg-slate-800"
            >
                "Refresh"
            </button>
        }
    };
    view! {
        <Panel id="changes-panel" testid="changes-panel" name="changes" title=|| "Changes" tools on_close=Some(on_close)>
            {move || {
                branch
                    .get()
                    .map(|branch| {
                        let on_done = Callback::new(move |()| changes.refetch());
                        view! { <WorktreeActions session_id=session.get_value() branch on_done /> }
                    })
            }}
            {move || {
                body()
                    .unwrap_or_else(|| {
                        view! { <p role="status" class="text-slate-600 dark:text-slate-400">"Loading the changes…"</p> }
                            .into_any()
                    })
            }}
        </Panel>
    }
}

#[component]
fn ChangesBody(response: ChangesResponse, expanded: RwSignal<HashSet<String>>) -> impl IntoView {
    let session = session_rows(&response);
    let git = response.git.as_ref().map(|git| (git.branch.clone(), git.truncated, git_rows(git)));
    view! {
        <div class="flex flex-col gap-2">
            <h3 class="text-xs font-semibold uppercase tracking-wide text-slate-600 dark:text-slate-400">
                "Written by the agent in this session"
            </h3>
            {if session.is_empty() {
                view! { <p data-testid="changes-empty" class="text-slate-600 dark:text-slate-400">"No file written yet."</p> }
                    .into_any()
            } else {
                view! { <FileList rows=session testid="changes-files" expanded /> }.into_any()
            }}
        </div>
        {git.map(|(branch, truncated, rows)| {
            let heading = match branch {
                Some(branch) => format!("Working tree (git, {branch}) against HEAD"),
                None => "Working tree (git, detached HEAD) against HEAD".to_string(),
            };
            view! {
                <div class="flex flex-col gap-2" data-testid="changes-git">
                    <h3 class="text-xs font-semibold uppercase tracking-wide text-slate-600 dark:text-slate-400">{heading}</h3>
                    {if rows.is_empty() {
                        view! { <p class="text-slate-600 dark:text-slate-400">"Nothing to commit: the folder matches HEAD."</p> }
                            .into_any()
                    } else {
                        view! { <FileList rows testid="changes-git-files" expanded /> }.into_any()
                    }}
                    {truncated.then(|| view! {
                        <p class="text-slate-600 dark:text-slate-400">"More files changed than are listed here; see git status."</p>
                    })}
                </div>
            }
        })}
        {response.note.map(|note| view! { <p data-testid="changes-note" class="text-amber-800 dark:text-amber-300">{note}</p> })}
    }
}

#[component]
fn FileList(rows: Vec<Row>, testid: &'static str, expanded: RwSignal<HashSet<String>>) -> impl IntoView {
    view! {
        <ul data-testid=testid class="flex flex-col divide-y divide-slate-200 rounded-lg border border-slate-200 dark:divide-slate-800 dark:border-slate-800">
            {rows.into_iter().map(|row| view! { <FileRow row expanded /> }).collect_view()}
        </ul>
    }
}

fn lines(count: usize) -> String {
    format!("{count} line{}", if count == 1 { "" } else { "s" })
}

#[component]
fn FileRow(row: Row, expanded: RwSignal<HashSet<String>>) -> impl IntoView {
    let key = StoredValue::new(row.key.clone());
    let open = move || expanded.with(|open| key.with_value(|key| open.contains(key)));
    let toggle = move |_| {
        let key = key.get_value();
        expanded.update(|open| {
            if !open.remove(&key) {
                open.insert(key);
            }
        });
    };
    let diff_id = format!("diff-{}", row.key.replace(|c: char| !c.is_ascii_alphanumeric(), "-"));
    let label = format!(
        "{}, {}{}, {} added, {} removed",
        row.path,
        row.badge,
        row.detail.as_ref().map(|detail| format!(" ({detail})")).unwrap_or_default(),
        lines(row.added),
        lines(row.removed)
    );
    let diff = StoredValue::new(row.diff);
    let omitted = row.omitted;
    view! {
        <li data-testid="change-row" data-path=row.path.clone()>
            <button
                type="button"
                data-testid="change-toggle"
                aria-expanded=move || open().to_string()
                aria-controls=diff_id.clone()
                aria-label=label
                on:click=toggle
                class="flex w-full items-center gap-3 px-3 py-2 text-left hover:bg-slate-50 dark:hover:bg-slate-800"
            >
                <span aria-hidden="true" class="w-3 text-slate-500 dark:text-slate-400">{move || if open() { "▾" } else { "▸" }}</span>
                <span class="min-w-0 flex-1 truncate font-mono" title=row.path.clone()>{row.path.clone()}</span>
                {row.detail.map(|detail| view! { <span class="text-xs text-slate-600 dark:text-slate-400">{detail}</span> })}
                <span data-testid="change-kind" class=row.badge_class>{row.badge}</span>
                <span data-testid="change-stats" class="font-mono text-xs">
                    <span class="text-emerald-700 dark:text-emerald-400">{format!("+{}", row.added)}</span>
                    " "
                    <span class="text-red-700 dark:text-red-400">{format!("−{}", row.removed)}</span>
                </span>
            </button>
            <div id=diff_id class="px-3 pb-3" hidden=move || !open()>
                {move || {
                    open()
                        .then(|| match omitted {
                            Some(omitted) => view! { <p class="text-slate-600 dark:text-slate-400">{omitted.describe()}</p> }.into_any(),
                            None => deferred(diff_view(diff.get_value(), None)),
                        })
                }}
            </div>
        </li>
    }
}

/// What `read` takes from session `id`'s line in the folder list, if it is there.
fn own_summary<T>(state: Option<HubState>, id: &str, read: impl Fn(&SessionSummary) -> T) -> Option<T> {
    state.and_then(|state| {
        state.projects.with(|projects| {
            projects.iter().flat_map(|project| project.sessions.iter()).find(|summary| summary.id == id).map(read)
        })
    })
}
