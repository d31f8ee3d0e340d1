//! A session's status as a small badge.

use leptos::prelude::*;
use protocol::api::SessionStatus;

#[component]
pub fn StatusBadge(status: SessionStatus) -> impl IntoView {
    let class = match status {
        SessionStatus::Idle => {
            "rounded-full bg-slate-100 px-2 py-0.5 text-xs text-slate-700 dark:bg-slate-800 dark:text-slate-300"
        }
        SessionStatus::Running => {
            "rounded-full bg-sky-100 px-2 py-0.5 text-xs text-sky-800 dark:bg-sky-900 dark:text-sky-200"
        }
        SessionStatus::WaitingApproval | SessionStatus::WaitingInput => {
            "rounded-full bg-amber-100 px-2 py-0.5 text-xs text-amber-800 dark:bg-amber-900 dark:text-amber-200"
        }
        SessionStatus::Error => {
            "rounded-full bg-red-100 px-2 py-0.5 text-xs text-red-800 dark:bg-red-900 dark:text-red-200"
        }
    };
    view! { <span class=class data-testid="status-badge">{status.label()}</span> }
}
