//! The folder's approval timeout: how long a card or question waits before the
//! hub answers "no decision" itself (the call is not run; the agent goes on).

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::client::approvals;
use crate::state::HubState;

/// The choices offered, in seconds (`None`: wait forever, the default).
pub const CHOICES: [(Option<u64>, &str); 6] = [
    (None, "never"),
    (Some(60), "1 min"),
    (Some(5 * 60), "5 min"),
    (Some(15 * 60), "15 min"),
    (Some(60 * 60), "1 hour"),
    (Some(8 * 60 * 60), "8 hours"),
];

/// A timeout's words: a choice's label, else its seconds as they are.
pub fn label(secs: Option<u64>) -> String {
    match CHOICES.iter().find(|(choice, _)| *choice == secs) {
        Some((_, label)) => label.to_string(),
        None => format!("{} s", secs.unwrap_or_default()),
    }
}

/// The select's value for a timeout, and back.
pub fn value_of(secs: Option<u64>) -> String {
    secs.map_or_else(String::new, |secs| secs.to_string())
}

pub fn secs_of(value: &str) -> Option<u64> {
    value.parse().ok()
}

#[component]
pub fn TimeoutPicker() -> impl IntoView {
    let state = expect_context::<HubState>();
    let set = move |secs: Option<u64>| {
        let Some(Some(config)) = state.config.try_get_untracked() else { return };
        spawn_local(async move {
            match approvals::set_timeout(&config.folder_path, &config.session_id, secs).await {
                Ok(next) => state.apply_config(next),
                Err(error) => {
                    state.error.try_set(Some(error));
                }
            }
        });
    };
    let current = Memo::new(move |_| state.config.with(|c| c.as_ref().and_then(|c| c.approval_timeout_secs)));
    // The folder's own value when it is none of the choices (set through the API).
    let options = move || {
        let mut options: Vec<Option<u64>> = CHOICES.iter().map(|(secs, _)| *secs).collect();
        if !options.contains(&current.get()) {
            options.push(current.get());
        }
        options
            .into_iter()
            .map(|secs| {
                view! {
                    <option value=value_of(secs) selected=move || current.get() == secs>
                        {label(secs)}
                    </option>
                }
            })
            .collect_view()
    };
    view! {
        <label
            class="flex items-center gap-1 text-xs text-slate-600 dark:text-slate-400"
            title="A card or question left this long is answered 'no decision' by the hub: the call is not run and the agent goes on"
        >
            "Time out"
            <select
                data-testid="timeout-picker"
                class="rounded-md border border-slate-300 bg-white px-1 py-0.5 text-xs dark:border-slate-700 dark:bg-slate-950"
                on:change=move |event| set(secs_of(&event_target_value(&event)))
            >
                {options}
            </select>
        </label>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timeout_reads_and_writes_through_the_select() {
        for (secs, _) in CHOICES {
            assert_eq!(secs_of(&value_of(secs)), secs);
        }
        assert_eq!(label(None), "never");
        assert_eq!(label(Some(300)), "5 min");
        assert_eq!(label(Some(42)), "42 s", "a value set through the API is shown as it is");
        assert_eq!(secs_of("abc"), None);
    }
}
