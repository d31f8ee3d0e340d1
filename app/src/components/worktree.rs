//! An isolated session's worktree in the Changes panel (issue 29): its
//! branch, the files it changed against its base, and **Apply** (into the
//! folder's working tree; a conflict names the files and changes nothing),
//! **Commit** (on the session's branch, with a message) and **Discard** (what
//! is not committed). Comes with the `session` part, as the panel does.

use leptos::prelude::*;

use crate::client;
use crate::components::alert::Alert;
use protocol::api::WorktreeDone;

const BUTTON: &str = "rounded-md border border-slate-300 px-2 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100 disabled:opacity-50 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800";

/// What the user asked: `apply`, `commit` or `discard` (the endpoint's name).
fn said(what: &str, done: &WorktreeDone) -> String {
    match what {
        "apply" if done.applied.is_empty() => "Nothing to apply: the session changed nothing against its base.".into(),
        "apply" => format!("Applied to the folder: {}.", done.applied.join(", ")),
        "commit" => format!(
            "Committed {} on the session's branch.",
            done.commit.as_deref().unwrap_or("").get(..8).unwrap_or("")
        ),
        _ => "Discarded what was not committed.".into(),
    }
}

#[component]
pub fn WorktreeActions(session_id: String, branch: String, on_done: Callback<()>) -> impl IntoView {
    let session = StoredValue::new(session_id);
    let message = RwSignal::new(String::new());
    let status = LocalResource::new(move || {
        let id = session.get_value();
        async move { client::sessions::worktree(&id).await }
    });
    let act = Action::new_local(move |what: &&'static str| {
        let (id, what, text) = (session.get_value(), *what, message.get_untracked());
        async move { client::sessions::worktree_act(&id, what, text).await.map(|done| said(what, &done)) }
    });
    let busy = Signal::derive(move || act.pending().get());
    Effect::new(move |_| {
        if let Some(result) = act.value().get() {
            if result.is_ok() {
                message.set(String::new());
            }
            status.refetch();
            on_done.run(());
        }
    });
    let files = move || {
        status.get().map(|answer| match answer {
            Err(error) => view! { <Alert message=error.message testid="worktree-error" /> }.into_any(),
            Ok(status) if status.worktree.missing => {
                view! { <p role="alert" class="text-red-700 dark:text-red-300">"The worktree was deleted outside the hub."</p> }
                    .into_any()
            }
            Ok(status) if status.files.is_empty() => {
                view! { <p class="text-slate-600 dark:text-slate-400">"No change against the base yet."</p> }.into_any()
            }
            Ok(status) => view! {
                <ul data-testid="worktree-files" class="font-mono text-xs">
                    {status
                        .files
                        .into_iter()
                        .map(|file| view! { <li data-path=file.path.clone()>{format!("{} {}", file.status, file.path)}</li> })
                        .collect_view()}
                </ul>
            }
            .into_any(),
        })
    };
    view! {
        <div data-testid="worktree" class="flex flex-col gap-2 rounded-lg border border-slate-200 p-2 dark:border-slate-800">
            <h3 class="text-xs font-semibold uppercase tracking-wide text-slate-600 dark:text-slate-400">
                "Isolated: " <span data-testid="worktree-branch" class="font-mono normal-case">{branch}</span> " against its base"
            </h3>
            {files}
            <div class="flex flex-wrap items-center gap-2">
                <button type="button" data-testid="worktree-apply" class=BUTTON disabled=busy on:click=move |_| {
                    act.dispatch("apply");
                }>"Apply to the folder"</button>
                <input
                    type="text"
                    data-testid="worktree-message"
                    aria-label="Commit message"
                    placeholder="Commit message"
                    bind:value=message
                    class="min-w-0 flex-1 rounded-md border border-slate-300 bg-white px-2 py-1 text-xs dark:border-slate-700 dark:bg-slate-950"
                />
                <button
                    type="button"
                    data-testid="worktree-commit"
                    class=BUTTON
                    disabled=move || busy.get() || message.with(|text| text.trim().is_empty())
                    on:click=move |_| {
                        act.dispatch("commit");
                    }
                >
                    "Commit"
                </button>
                <button type="button" data-testid="worktree-discard" class=BUTTON disabled=busy on:click=move |_| {
                    act.dispatch("discard");
                }>"Discard"</button>
            </div>
            {move || {
                act.value()
                    .get()
                    .map(|result| match result {
                        Ok(text) => view! { <p role="status" data-testid="worktree-done">{text}</p> }.into_any(),
                        Err(error) => view! { <Alert message=error.message testid="worktree-refused" /> }.into_any(),
                    })
            }}
        </div>
    }
}
