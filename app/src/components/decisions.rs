//! The audit trail as a table: every decision on every call, newest first,
//! with who made it and how the call ended. Per folder (from the chat's
//! header) or across folders (`/decisions`), filtered by session, with the
//! same rows as a CSV download.

use leptos::prelude::*;

use crate::client::policy::{audit_url, AuditFilter};
use crate::client::{self};
use crate::components::alert::Alert;
use crate::components::panel::Panel;
use crate::components::updates;
use crate::location::use_location;
use crate::parts::{after_hydration, deferred, wasm_split, PartMissing};
use crate::policy::{
    audit_decision_label, decided_by_label, decision_tone, outcome_label, outcome_tone, short_id, short_source,
    time_label, Tone,
};
use crate::state::folder_name;
use crate::state::{mark_hydrated, HubState};
use protocol::api::HubUpdate;
use protocol::audit::AuditEntry;

/// Rows drawn at first, and how many more each "show more" adds.
const FIRST_ROWS: usize = 200;

/// Sessions in the order they last decided something, most recent first.
pub fn sessions_of(entries: &[AuditEntry]) -> Vec<(String, String)> {
    let mut sessions: Vec<(String, String)> = Vec::new();
    for entry in entries.iter().rev() {
        if !sessions.iter().any(|(id, _)| *id == entry.session_id) {
            sessions.push((entry.session_id.clone(), entry.folder_path.clone()));
        }
    }
    sessions
}

/// The rows to show: the session's (or all), newest first.
pub fn newest_first(entries: &[AuditEntry], session: Option<&str>) -> Vec<AuditEntry> {
    entries.iter().rev().filter(|entry| session.is_none_or(|session| entry.session_id == session)).cloned().collect()
}

/// The view, from the `policy` part of the wasm (see `parts`).
#[wasm_split(policy, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn decisions_view(
    folder_path: Option<String>,
    on_close: Option<Callback<()>>,
    changes: Option<Signal<u64>>,
) -> Result<AnyView, PartMissing> {
    Ok(view! { <DecisionsView folder_path on_close changes /> }.into_any())
}

#[component]
pub fn DecisionsView(
    /// One folder's decisions; `None`: every folder's (with a Folder column).
    folder_path: Option<String>,
    /// Shown in a folder's panel: closes it.
    on_close: Option<Callback<()>>,
    /// Refetch when this changes (the hub reported something new).
    changes: Option<Signal<u64>>,
) -> impl IntoView {
    let across = folder_path.is_none();
    let folder = StoredValue::new(folder_path);
    let session = RwSignal::new(None::<String>);
    let shown = RwSignal::new(FIRST_ROWS);
    let hub = use_context::<HubState>();
    let entries = LocalResource::new(move || {
        if let Some(hub) = hub {
            hub.projects.track();
        }
        if let Some(changes) = changes {
            changes.track();
        }
        let filter = AuditFilter { folder_path: folder.get_value(), session_id: None };
        async move { client::policy::audit(&filter).await }
    });
    let csv = move || {
        let filter = AuditFilter { folder_path: folder.get_value(), session_id: session.get() };
        audit_url(&filter, true)
    };
    let loaded = move || entries.get().and_then(Result::ok).unwrap_or_default();
    let sessions = Memo::new(move |_| sessions_of(&loaded()));
    let rows = Memo::new(move |_| newest_first(&loaded(), session.get().as_deref()));
    let hidden = move || rows.with(|rows| rows.len().saturating_sub(shown.get()));

    let select_session = move |event: leptos::ev::Event| {
        let value = event_target_value(&event);
        session.set((!value.is_empty()).then_some(value));
        shown.set(FIRST_ROWS);
    };

    let title = move || if across { "Decisions in every folder" } else { "Decisions" };
    let tools = move || {
        view! {
            <label for="decisions-session" class="text-xs text-slate-500 dark:text-slate-400">
                "Session"
            </label>
            <select
                id="decisions-session"
                data-testid="decisions-session"
                on:change=select_session
                class="rounded-md border border-slate-300 bg-white px-2 py-1 font-mono text-xs dark:border-slate-700 dark:bg-slate-950"
            >
                <option value="" selected=move || session.with(Option::is_none)>
                    "All sessions"
                </option>
                <For each=move || sessions.get() key=|(id, _)| id.clone() let:((id, folder_path))>
                    {
                        let label = if across {
                            format!("{} · {}", short_id(&id), folder_name(&folder_path))
                        } else {
                            short_id(&id).to_string()
                        };
                        let selected = {
                            let id = id.clone();
                            move || session.with(|session| session.as_deref() == Some(id.as_str()))
                        };
                        view! {
                            <option value=id selected=selected>
                                {label}
                            </option>
                        }
                    }
                </For>
            </select>
            <span class="flex-1"></span>
            <button
                type="button"
                data-testid="decisions-refresh"
                on:click=move |_| entries.refetch()
                class="rounded-md px-2 py-1 text-sky-700 hover:bg-sky-50 dark:text-sky-400 dark:hover:bg-slate-800"
            >
                "Refresh"
            </button>
            <a
                href=csv
                download="agent-hub-decisions.csv"
                data-testid="decisions-csv"
                class="rounded-md px-2 py-1 text-sky-700 hover:bg-sky-50 hover:underline dark:text-sky-400 dark:hover:bg-slate-800"
            >
                "Download CSV"
            </a>
        }
    };
    view! {
        <Panel id="decisions-view" testid="decisions-view" name="decisions" title tools on_close>
            {move || match entries.get() {
                None => view! { <p role="status" class="text-slate-500 dark:text-slate-400">"Loading the decisions…"</p> }.into_any(),
                Some(Err(error)) => view! { <Alert message=error.message testid="decisions-error" /> }.into_any(),
                Some(Ok(_)) if rows.with(Vec::is_empty) => {
                    view! { <p class="text-slate-500 dark:text-slate-400">"No decisions recorded yet."</p> }.into_any()
                }
                Some(Ok(_)) => view! { <AuditTable rows across shown /> }.into_any(),
            }}
            <Show when=move || { hidden() > 0 }>
                <button
                    type="button"
                    data-testid="decisions-more"
                    class="self-center rounded-md px-3 py-1 text-sky-700 hover:bg-sky-50 dark:text-sky-400 dark:hover:bg-slate-800"
                    on:click=move |_| shown.update(|shown| *shown += FIRST_ROWS)
                >
                    {move || format!("Show older ({} more)", hidden())}
                </button>
            </Show>
        </Panel>
    }
}

fn tone_class(tone: Tone) -> &'static str {
    match tone {
        Tone::Go => "bg-emerald-100 text-emerald-800 dark:bg-emerald-900 dark:text-emerald-200",
        Tone::Stop => "bg-red-100 text-red-800 dark:bg-red-900 dark:text-red-200",
        Tone::Neutral => "bg-slate-100 text-slate-700 dark:bg-slate-800 dark:text-slate-300",
    }
}

#[component]
fn AuditTable(rows: Memo<Vec<AuditEntry>>, across: bool, shown: RwSignal<usize>) -> impl IntoView {
    let th = "whitespace-nowrap px-2 py-1.5 text-xs font-semibold uppercase tracking-wide text-slate-500 dark:text-slate-400";
    view! {
        <div class="overflow-x-auto">
            <table data-testid="decisions-table" class="w-full border-collapse text-left text-xs">
                <caption class="sr-only">"Decisions on tool calls, newest first"</caption>
                <thead>
                    <tr>
                        <th scope="col" class=th>"Time"</th>
                        {across.then(|| view! { <th scope="col" class=th>"Folder"</th> })}
                        <th scope="col" class=th>"Session"</th>
                        <th scope="col" class=th>"Tool"</th>
                        <th scope="col" class=th>"Call"</th>
                        <th scope="col" class=th>"Decision"</th>
                        <th scope="col" class=th>"Decided by"</th>
                        <th scope="col" class=th>"Rule"</th>
                        <th scope="col" class=th>"Outcome"</th>
                    </tr>
                </thead>
                <tbody>
                    <For
                        each=move || rows.with(|rows| rows.iter().take(shown.get()).cloned().collect::<Vec<_>>())
                        key=|entry| (entry.id, entry.outcome.clone())
                        let:entry
                    >
                        <AuditRow entry across />
                    </For>
                </tbody>
            </table>
        </div>
    }
}

#[component]
fn AuditRow(entry: AuditEntry, across: bool) -> impl IntoView {
    let td = "px-2 py-1.5 align-top";
    let badge = "whitespace-nowrap rounded-full px-2 py-0.5 text-xs";
    let decision_class = format!("{badge} {}", tone_class(decision_tone(&entry.decision)));
    let outcome = entry.outcome.as_ref();
    let outcome_class = format!("{badge} {}", tone_class(outcome_tone(outcome)));
    let (when, full_time) = time_label(entry.at);
    let rule = entry.rule.clone().unwrap_or_default();
    let rule_short = if rule.is_empty() { "—".to_string() } else { short_source(&rule).to_string() };
    let outcome_text = outcome_label(outcome);
    // The paired device the user decided from, when it was one.
    let decided_by = match &entry.device {
        Some(device) => format!("{} · {}", decided_by_label(&entry.decided_by), device.name),
        None => decided_by_label(&entry.decided_by),
    };
    view! {
        <tr
            data-testid="audit-row"
            data-tool-id=entry.tool_id.clone()
            data-decision=entry.decision.as_str().to_string()
            class="border-t border-slate-200 dark:border-slate-800"
        >
            <td class=format!("{td} whitespace-nowrap text-slate-600 dark:text-slate-400") title=full_time>
                {when}
            </td>
            {across
                .then(|| {
                    view! {
                        <td class=format!("{td} whitespace-nowrap font-mono") title=entry.folder_path.clone()>
                            {folder_name(&entry.folder_path)}
                        </td>
                    }
                })}
            <td class=format!("{td} font-mono") title=entry.session_id.clone()>{short_id(&entry.session_id).to_string()}</td>
            <td class=format!("{td} font-mono")>{entry.tool_name.clone()}</td>
            <td class=format!("{td} max-w-[16rem] truncate font-mono") title=entry.summary.clone()>
                {entry.summary.clone()}
            </td>
            <td class=td><span class=decision_class>{audit_decision_label(&entry.decision)}</span></td>
            <td class=format!("{td} whitespace-nowrap")>{decided_by}</td>
            <td class=format!("{td} max-w-[10rem] break-words text-slate-600 dark:text-slate-400") title=rule>
                {rule_short}
            </td>
            <td class=td><span class=outcome_class>{outcome_text}</span></td>
        </tr>
    }
}

pub const DECISIONS_TITLE: &str = "Decisions · Agent Hub";

/// `/decisions`: every folder's decisions (or one folder's, `?folder=`).
#[component]
pub fn DecisionsPage() -> impl IntoView {
    let folder = use_location().query("folder").get_untracked();
    let changes = RwSignal::new(0u64);
    Effect::new(move |_| {
        mark_hydrated();
        // New decisions come with session changes: refetch on each.
        updates::subscribe(
            move |update| {
                if matches!(update, HubUpdate::Projects) {
                    changes.update(|n| *n += 1);
                }
            },
            move || changes.update(|n| *n += 1),
        );
    });
    let subtitle = folder.clone().unwrap_or_else(|| "every folder".to_string());
    view! {
        <div class="flex min-h-screen flex-col">
            <header class="flex items-center gap-4 border-b border-slate-200 bg-white px-6 py-3 dark:border-slate-800 dark:bg-slate-900">
                <a href="/" class="text-lg font-semibold tracking-tight">"Agent Hub"</a>
                <h1 class="min-w-0 flex-1 truncate font-mono text-sm font-normal text-slate-600 dark:text-slate-400" title=subtitle.clone()>
                    {format!("Decisions · {subtitle}")}
                </h1>
                <a href="/" class="text-sm text-sky-700 hover:underline dark:text-sky-400">"Back to the folders"</a>
            </header>
            <main class="mx-auto flex w-full max-w-6xl flex-col gap-4 p-6">
                {after_hydration(move || deferred(decisions_view(folder.clone(), None, Some(changes.into()))))}
            </main>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, session: &str, folder: &str) -> AuditEntry {
        AuditEntry {
            id,
            at: id * 1000,
            folder_path: folder.into(),
            session_id: session.into(),
            tool_id: format!("t{id}"),
            tool_name: "run_shell_command".into(),
            summary: "ls".into(),
            decision: protocol::audit::AuditDecision::Approved,
            decided_by: protocol::audit::Decider::User,
            rule: None,
            device: None,
            outcome: Some(protocol::audit::Outcome::Ran),
            outcome_at: None,
        }
    }

    #[test]
    fn rows_are_newest_first_and_filtered_by_session() {
        let entries = [entry(1, "a", "/p"), entry(2, "b", "/q"), entry(3, "a", "/p")];
        let ids = |rows: Vec<AuditEntry>| rows.iter().map(|row| row.id).collect::<Vec<_>>();
        assert_eq!(ids(newest_first(&entries, None)), [3, 2, 1]);
        assert_eq!(ids(newest_first(&entries, Some("a"))), [3, 1]);
        assert!(newest_first(&entries, Some("gone")).is_empty());
    }

    #[test]
    fn sessions_are_listed_once_most_recent_first() {
        let entries = [entry(1, "a", "/p"), entry(2, "b", "/q"), entry(3, "a", "/p")];
        assert_eq!(sessions_of(&entries), [("a".to_string(), "/p".to_string()), ("b".to_string(), "/q".to_string())]);
        assert!(sessions_of(&[]).is_empty());
    }
}
