//! The inbox's cards, each with its summary, to decide many at once: select
//! calls across folders (or all of a folder) and approve or reject them
//! together (`POST /api/approvals`). Each decision goes through the hub's gate
//! as a card's does; a question is answered on its page.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::client::approvals;
use crate::components::countdown::Countdown;
use crate::parts::{wasm_split, PartMissing};
use crate::state::{folder_name, session_href, HubState};
use crate::waiting::waiting_sessions;
use protocol::api::{ApprovalDecision, BatchResult, WaitingCall, WaitingList};

/// A waiting call, as the batch names it: (session, tool call).
pub type CallKey = (String, String);

pub fn key_of(call: &WaitingCall) -> CallKey {
    (call.session_id.clone(), call.tool_id.clone())
}

/// The waiting cards by folder, folders in the order they first appear.
pub fn by_folder(calls: &[WaitingCall]) -> Vec<(String, Vec<WaitingCall>)> {
    let mut folders: Vec<(String, Vec<WaitingCall>)> = Vec::new();
    for call in calls {
        match folders.iter_mut().find(|(folder, _)| *folder == call.folder_path) {
            Some((_, calls)) => calls.push(call.clone()),
            None => folders.push((call.folder_path.clone(), vec![call.clone()])),
        }
    }
    folders
}

/// A folder's group is drawn again whenever any of its calls changes.
fn group_key((folder, calls): &(String, Vec<WaitingCall>)) -> (String, Vec<(CallKey, String, bool)>) {
    (folder.clone(), calls.iter().map(|call| (key_of(call), call.fingerprint.clone(), call.batchable)).collect())
}

/// What came of a batch, in a line: how many were decided, and why the others were not.
pub fn outcome_line(results: &[BatchResult], decision: &ApprovalDecision) -> String {
    let done = results.iter().filter(|result| result.ok).count();
    let verb = if *decision == ApprovalDecision::Reject { "rejected" } else { "approved" };
    let mut line = format!("{done} {verb}.");
    let stale = results.iter().filter(|result| result.error.as_deref() == Some("not_pending")).count();
    if stale > 0 {
        line.push_str(&format!(" {stale} no longer waited (decided elsewhere, or timed out)."));
    }
    for result in results.iter().filter(|result| !result.ok && result.error.as_deref() != Some("not_pending")) {
        line.push_str(&format!(" {}", result.message.as_deref().unwrap_or("A decision failed.")));
    }
    line
}

/// The list, from the `cards` part of the wasm (see `parts`).
#[wasm_split(cards, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn waiting_calls_view(said: RwSignal<Option<String>>) -> Result<AnyView, PartMissing> {
    Ok(view! { <WaitingCalls said /> }.into_any())
}

#[component]
pub fn WaitingCalls(
    /// What came of the last batch: the inbox says it, also once nothing waits.
    said: RwSignal<Option<String>>,
) -> impl IntoView {
    let state = expect_context::<HubState>();
    let list = LocalResource::new(move || {
        // Fetched again whenever the hub reports a change; not at all when nothing waits.
        let any = state.projects.with(|projects| !waiting_sessions(projects).is_empty());
        async move {
            match any {
                true => approvals::waiting().await,
                false => Ok(WaitingList::default()),
            }
        }
    });
    let calls = Memo::new(move |_| list.get().and_then(Result::ok).map(|list| list.waiting).unwrap_or_default());
    let selected = RwSignal::new(Vec::<CallKey>::new());
    let busy = RwSignal::new(false);
    // A call that no longer waits is no longer selected.
    Effect::new(move |_| {
        let waiting: Vec<CallKey> = calls.with(|calls| calls.iter().filter(|c| c.batchable).map(key_of).collect());
        selected.update(|chosen| chosen.retain(|key| waiting.contains(key)));
    });
    let decide = move |decision: ApprovalDecision| {
        let chosen: Vec<WaitingCall> = calls.with_untracked(|calls| {
            selected.with_untracked(|keys| calls.iter().filter(|call| keys.contains(&key_of(call))).cloned().collect())
        });
        if chosen.is_empty() || busy.get_untracked() {
            return;
        }
        busy.set(true);
        spawn_local(async move {
            let line = match approvals::decide_all(&chosen, decision.clone()).await {
                Ok(answer) => outcome_line(&answer.results, &decision),
                Err(error) => error.message,
            };
            let _ = said.try_set(Some(line));
            let _ = selected.try_set(Vec::new());
            let _ = busy.try_set(false);
            state.refresh_projects();
        });
    };
    let toggle = move |key: CallKey| {
        selected.update(|chosen| match chosen.iter().position(|k| *k == key) {
            Some(at) => {
                chosen.remove(at);
            }
            None => chosen.push(key),
        })
    };
    let count = move || selected.with(Vec::len);

    view! {
        <Show when=move || calls.with(|calls| !calls.is_empty())>
            <div data-testid="inbox-calls" class="mt-3 flex flex-col gap-2 text-sm">
                <For each=move || by_folder(&calls.get()) key=group_key let:group>
                    {
                        let (folder, items) = group;
                        let keys: Vec<CallKey> = items.iter().filter(|c| c.batchable).map(key_of).collect();
                        let keys = StoredValue::new(keys);
                        let all = move || {
                            keys.with_value(|keys| {
                                !keys.is_empty() && selected.with(|chosen| keys.iter().all(|key| chosen.contains(key)))
                            })
                        };
                        let toggle_all = move |_| {
                            let on = !all();
                            keys.with_value(|keys| {
                                selected.update(|chosen| {
                                    chosen.retain(|key| !keys.contains(key));
                                    if on {
                                        chosen.extend(keys.iter().cloned());
                                    }
                                })
                            })
                        };
                        let name = folder_name(&folder).to_string();
                        view! {
                            <fieldset data-testid="inbox-folder" data-folder=folder.clone() class="min-w-0 rounded-md border border-slate-200 px-2 py-1 dark:border-slate-700">
                                <legend class="px-1 font-mono text-xs">
                                    <label class="flex items-center gap-1" title=format!("Select every call waiting in {folder}")>
                                        <input type="checkbox" class="max-sm:size-5" data-testid="inbox-folder-select" prop:checked=all on:change=toggle_all />
                                        {name}
                                    </label>
                                </legend>
                                <ul class="flex flex-col gap-1">
                                    {items
                                        .into_iter()
                                        .map(|call| waiting_row(call, selected, toggle))
                                        .collect_view()}
                                </ul>
                            </fieldset>
                        }
                    }
                </For>
                <div class="flex flex-wrap gap-2">
                    <button
                        type="button"
                        data-testid="inbox-approve-selected"
                        disabled=move || busy.get() || count() == 0
                        on:click=move |_| decide(ApprovalDecision::Approve)
                        class="min-h-9 max-sm:min-h-11 rounded-md bg-amber-700 px-3 py-1 font-medium text-white disabled:opacity-50"
                    >
                        {move || format!("Approve selected ({})", count())}
                    </button>
                    <button
                        type="button"
                        data-testid="inbox-reject-selected"
                        disabled=move || busy.get() || count() == 0
                        on:click=move |_| decide(ApprovalDecision::Reject)
                        class="min-h-9 max-sm:min-h-11 rounded-md border border-slate-300 px-3 py-1 font-medium text-slate-700 disabled:opacity-50 dark:border-slate-600 dark:text-slate-200"
                    >
                        "Reject selected"
                    </button>
                </div>
            </div>
        </Show>
    }
}

/// One waiting card: its tool and summary, readable before deciding; a question links to its page.
fn waiting_row(
    call: WaitingCall,
    selected: RwSignal<Vec<CallKey>>,
    toggle: impl Fn(CallKey) + Copy + 'static,
) -> impl IntoView {
    let key = key_of(&call);
    let deadline = Signal::derive(move || call.deadline_at);
    let summary = if call.summary.is_empty() { call.tool_name.clone() } else { call.summary.clone() };
    let href = session_href(&call.folder_path, &call.session_id);
    let title = summary.clone();
    let kind = if call.question { "question".to_string() } else { call.tool_name.clone() };
    let label = format!("Select {} {}", call.tool_name, summary);
    let choice = call.batchable.then(move || {
        let checked = {
            let key = key.clone();
            move || selected.with(|chosen| chosen.contains(&key))
        };
        let key = key.clone();
        view! {
            <input
                type="checkbox"
                class="max-sm:size-5"
                data-testid="inbox-select"
                aria-label=label
                prop:checked=checked
                on:change=move |_| toggle(key.clone())
            />
        }
    });
    view! {
        <li data-testid="inbox-call" data-tool-id=call.tool_id.clone() class="flex items-center gap-2">
            {choice}
            <a href=href class="min-w-0 flex-1 hover:underline max-sm:py-1.5" title=title>
                <span class="text-xs text-slate-500 dark:text-slate-400">
                    {kind}
                    {(!call.batchable).then_some(" · decide on its card")}
                </span>
                " "
                <code data-testid="inbox-call-summary" class="block truncate font-mono text-xs">{summary}</code>
            </a>
            <Countdown deadline testid="inbox-countdown" />
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(folder: &str, session: &str, tool: &str) -> WaitingCall {
        WaitingCall {
            folder_path: folder.into(),
            session_id: session.into(),
            session_title: None,
            tool_id: tool.into(),
            tool_name: "run_shell_command".into(),
            summary: "ls".into(),
            question: false,
            batchable: true,
            fingerprint: String::new(),
            deadline_at: None,
        }
    }

    #[test]
    fn calls_group_by_folder_in_the_order_they_come() {
        let calls = [call("/b", "s1", "t1"), call("/a", "s2", "t2"), call("/b", "s3", "t3")];
        let groups = by_folder(&calls);
        let folders: Vec<&str> = groups.iter().map(|(folder, _)| folder.as_str()).collect();
        assert_eq!(folders, ["/b", "/a"]);
        assert_eq!(groups[0].1.iter().map(|c| c.tool_id.as_str()).collect::<Vec<_>>(), ["t1", "t3"]);
    }

    #[test]
    fn the_outcome_says_what_was_decided_and_what_no_longer_waited() {
        let ok = BatchResult { session_id: "s".into(), tool_id: "a".into(), ok: true, error: None, message: None };
        let stale = BatchResult {
            ok: false,
            error: Some("not_pending".into()),
            message: Some("Tool call 'b' is not waiting for a decision.".into()),
            ..ok.clone()
        };
        let gone = BatchResult {
            ok: false,
            error: Some("not_found".into()),
            message: Some("No session with id 'x'.".into()),
            ..ok.clone()
        };
        assert_eq!(outcome_line(&[ok.clone(), ok.clone()], &ApprovalDecision::Approve), "2 approved.");
        assert_eq!(
            outcome_line(&[ok.clone(), stale, gone], &ApprovalDecision::Reject),
            "1 rejected. 1 no longer waited (decided elsewhere, or timed out). No session with id 'x'."
        );
    }
}
