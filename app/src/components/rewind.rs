//! "Rewind to before this turn" under each prompt whose turn changed files:
//! the turn's files and diff first, then the rewind; files someone else
//! changed since are listed, with Force to overwrite them, and Undo once done
//! (issue 28). The first load holds only which prompts can be rewound
//! ([`SessionCheckpoints`]); reading the checkpoints and what opens under a
//! prompt come with the `session` part of the wasm.

use leptos::prelude::*;

use crate::client;
use crate::client::checkpoints::RewindError;
use crate::components::alert::Alert;
use crate::parts::{deferred, wasm_split, PartMissing};
use crate::state::HubState;
use protocol::checkpoints::{
    CheckpointDiff, CheckpointFile, CheckpointKind, FileChange, RewindRequest, RewindResponse,
};

/// A prompt whose turn changed files, and its checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnMark {
    /// The prompt's event.
    seq: u64,
    checkpoint: u64,
}

/// The open session's prompts that can be rewound to, kept by the chat and
/// filled from the `session` part ([`follow_checkpoints`]): only these marks
/// are in the first load, the checkpoints' shapes and the panel are not.
#[derive(Clone, Copy)]
pub struct SessionCheckpoints {
    marks: RwSignal<Vec<TurnMark>>,
    /// Bumped after a rewind: the list is read again.
    changed: RwSignal<u64>,
    session: StoredValue<String>,
}

impl SessionCheckpoints {
    /// Provided by the chat; returns the view that follows them (it shows nothing).
    pub fn provide(session_id: String) -> AnyView {
        let checkpoints =
            Self { marks: RwSignal::new(Vec::new()), changed: RwSignal::new(0), session: StoredValue::new(session_id) };
        provide_context(checkpoints);
        deferred(follow_checkpoints(checkpoints))
    }

    fn of_prompt(self, seq: u64) -> Option<u64> {
        self.marks.with(|marks| marks.iter().find(|mark| mark.seq == seq).map(|mark| mark.checkpoint))
    }
}

/// Reads the session's checkpoints whenever the hub reports a change (a turn
/// ended) and after a rewind, and marks the prompts whose turns changed files.
#[wasm_split(session, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn follow_checkpoints(checkpoints: SessionCheckpoints) -> Result<AnyView, PartMissing> {
    let state = use_context::<HubState>();
    let list = LocalResource::new(move || {
        if let Some(state) = state {
            state.projects.track();
        }
        checkpoints.changed.track();
        let session = checkpoints.session.get_value();
        async move { client::checkpoints::list(&session).await }
    });
    Effect::new(move |_| {
        let Some(Ok(answer)) = list.get() else { return };
        let marks: Vec<TurnMark> = answer
            .checkpoints
            .iter()
            .filter(|cp| cp.kind == CheckpointKind::Turn && !cp.files.is_empty())
            .filter_map(|cp| Some(TurnMark { seq: cp.seq?, checkpoint: cp.id }))
            .collect();
        if checkpoints.marks.with_untracked(|known| *known != marks) {
            checkpoints.marks.set(marks);
        }
    });
    Ok(().into_any())
}

/// Under the prompt with event `seq`: the rewind button once its turn is
/// known to have changed files (nothing otherwise), from the `session` part.
#[wasm_split(session, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn rewind_to_turn(seq: u64) -> Result<AnyView, PartMissing> {
    Ok(view! { <RewindToTurn seq /> }.into_any())
}

#[component]
fn RewindToTurn(seq: u64) -> impl IntoView {
    let Some(checkpoints) = use_context::<SessionCheckpoints>() else { return ().into_any() };
    let open = RwSignal::new(false);
    let checkpoint = Memo::new(move |_| checkpoints.of_prompt(seq));
    let on_done = Callback::new(move |()| checkpoints.changed.update(|count| *count += 1));
    let on_close = Callback::new(move |()| open.set(false));
    (move || {
        let checkpoint = checkpoint.get()?;
        Some(if open.get() {
            view! { <RewindPanel session_id=checkpoints.session.get_value() checkpoint on_done on_close /> }.into_any()
        } else {
            view! {
                <button
                    type="button"
                    data-testid="rewind-button"
                    class="ml-auto rounded-md px-2 py-0.5 text-xs font-medium text-sky-700 hover:bg-sky-50 hover:underline dark:text-sky-400 dark:hover:bg-slate-900"
                    title="Put back the files this turn and the later ones changed"
                    on:click=move |_| open.set(true)
                >
                    "Rewind to before this turn"
                </button>
            }
            .into_any()
        })
    })
    .into_any()
}

/// The files and diff of the checkpoint's turn, and the rewind itself.
#[component]
fn RewindPanel(session_id: String, checkpoint: u64, on_done: Callback<()>, on_close: Callback<()>) -> impl IntoView {
    let session = StoredValue::new(session_id);
    let id = checkpoint;
    let diff = LocalResource::new(move || {
        let session = session.get_value();
        async move { client::checkpoints::diff(&session, id).await }
    });
    // To before this turn (forced or not), or back to before a rewind made here (its undo).
    let rewind = Action::new_local(move |request: &RewindRequest| {
        let request = request.clone();
        let session = session.get_value();
        async move { client::checkpoints::rewind(&session, &request).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(_)) = rewind.value().get() {
            on_done.run(());
        }
    });
    let pending = move || rewind.pending().get();
    let outcome = move || {
        rewind.value().get().map(|result| match result {
            Ok(done) => {
                let undo = RewindRequest { checkpoint: done.checkpoint.id, force: false, paths: None };
                view! {
                    {done_view(&done)}
                    <button
                        type="button"
                        data-testid="rewind-undo"
                        class="self-start rounded-md border border-slate-300 px-3 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100 disabled:opacity-50 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800"
                        disabled=pending
                        on:click=move |_| {
                            rewind.dispatch(undo.clone());
                        }
                    >
                        "Undo"
                    </button>
                }
                .into_any()
            }
            Err(RewindError::Conflict { message, conflicts }) => {
                // Force overwrites exactly the paths shown: a conflict that appears meanwhile is asked about again.
                let seen = StoredValue::new(conflicts.clone());
                view! {
                <div role="alert" data-testid="rewind-conflicts" class="flex flex-col gap-1 rounded-md border border-amber-300 bg-amber-50 p-2 text-amber-900 dark:border-amber-700 dark:bg-amber-950 dark:text-amber-100">
                    <p>{message}</p>
                    <ul class="list-inside list-disc font-mono text-xs">
                        {conflicts.into_iter().map(|path| view! { <li data-testid="rewind-conflict">{path}</li> }).collect_view()}
                    </ul>
                    <button
                        type="button"
                        data-testid="rewind-force"
                        class="self-start rounded-md bg-amber-700 px-3 py-1 text-xs font-medium text-white hover:bg-amber-800 disabled:opacity-50"
                        disabled=pending
                        on:click=move |_| {
                            rewind.dispatch(RewindRequest { checkpoint: id, force: true, paths: Some(seen.get_value()) });
                        }
                    >
                        "Force: overwrite them"
                    </button>
                </div>
            }
            .into_any()
            }
            Err(RewindError::Hub(error)) => view! { <Alert message=error.message testid="rewind-error" /> }.into_any(),
        })
    };
    let done = move || rewind.value().with(|value| matches!(value, Some(Ok(_))));
    view! {
        <section data-testid="rewind-panel" aria-label="Rewind to before this turn" class="flex flex-col gap-2 rounded-lg border border-slate-200 p-3 text-sm dark:border-slate-700">
            <p class="font-medium">"These files go back as they were before this turn, with what later turns changed:"</p>
            {move || diff.get().map(|result| match result {
                Ok(diff) => files_and_patch(diff).into_any(),
                Err(error) => view! { <Alert message=error.message testid="rewind-diff-error" /> }.into_any(),
            })}
            {outcome}
            <div class="flex gap-2">
                <Show when=move || !done()>
                    <button
                        type="button"
                        data-testid="rewind-confirm"
                        class="rounded-md bg-sky-700 px-3 py-1 text-xs font-medium text-white hover:bg-sky-800 disabled:opacity-50"
                        disabled=pending
                        on:click=move |_| {
                            rewind.dispatch(RewindRequest { checkpoint: id, force: false, paths: None });
                        }
                    >
                        "Rewind"
                    </button>
                </Show>
                <button
                    type="button"
                    data-testid="rewind-close"
                    class="rounded-md px-3 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100 dark:text-slate-300 dark:hover:bg-slate-800"
                    on:click=move |_| on_close.run(())
                >
                    {move || if done() { "Close" } else { "Cancel" }}
                </button>
            </div>
        </section>
    }
}

fn change_label(change: FileChange) -> &'static str {
    change.label()
}

/// Files as `<ul data-testid=list>` of `<li data-testid=item>`: what changed, and where.
fn file_list(files: Vec<CheckpointFile>, list: &'static str, item: &'static str) -> impl IntoView {
    view! {
        <ul data-testid=list class="flex flex-col gap-0.5 font-mono text-xs">
            {files.into_iter().map(|file| {
                let (path, change) = (file.path.clone(), change_label(file.change));
                view! {
                    <li data-testid=item data-path=file.path data-change=change>
                        <span class="text-slate-500 dark:text-slate-400">{change}</span>
                        " "
                        {path}
                    </li>
                }
            }).collect_view()}
        </ul>
    }
}

fn files_and_patch(diff: CheckpointDiff) -> impl IntoView {
    let truncated = diff.truncated;
    let later = (!diff.later.is_empty()).then(|| {
        view! {
            <p class="text-xs">"Later turns changed these too; they go back as well:"</p>
            {file_list(diff.later, "rewind-later-files", "rewind-later-file")}
        }
    });
    view! {
        {file_list(diff.files, "rewind-files", "rewind-file")}
        {later}
        <pre data-testid="rewind-diff" class="max-h-80 overflow-auto rounded-md bg-slate-100 p-2 text-xs dark:bg-slate-900">{diff.patch}</pre>
        {truncated.then(|| view! { <p class="text-xs text-slate-500 dark:text-slate-400">"The diff is cut at 4 MiB."</p> })}
    }
}

fn done_view(done: &RewindResponse) -> impl IntoView {
    let files = done.checkpoint.files.len();
    let conversation = if done.conversation {
        "The agent forgot the rewound turns too."
    } else {
        "The agent's conversation was not rewound: it still remembers these turns (an ACP agent's conversation is its own)."
    };
    view! {
        <p role="status" data-testid="rewind-done" class="text-emerald-800 dark:text-emerald-300">
            {format!("Done: {files} files put back (checkpoint {}: Undo goes back to before it). {conversation}", done.checkpoint.id)}
        </p>
    }
}
