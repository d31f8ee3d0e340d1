//! Which agent a new session works with: a select of the hub's agents (those
//! not available are listed disabled, and why is said below), preset to the
//! folder's last choice. Part of the session list (the `session` part).

use leptos::prelude::*;

use crate::client;
use protocol::api::{AgentInfo, AgentsResponse};

/// An agent as the select lists it.
pub fn agent_option_label(agent: &AgentInfo) -> String {
    if agent.available {
        agent.name.clone()
    } else {
        format!("{} (unavailable)", agent.name)
    }
}

/// The agent the select starts on: the folder's last choice, else the hub's
/// default, while it is available; else the first available one.
pub fn preselected(agents: &AgentsResponse) -> Option<String> {
    let available = |id: &str| agents.agents.iter().any(|agent| agent.id == id && agent.available);
    agents
        .folder_default
        .iter()
        .chain(std::iter::once(&agents.default))
        .find(|id| available(id))
        .cloned()
        .or_else(|| agents.agents.iter().find(|agent| agent.available).map(|agent| agent.id.clone()))
}

/// The agents of the hub for `folder_path`; `chosen` follows the select.
#[component]
pub fn AgentPicker(folder_path: String, chosen: RwSignal<Option<String>>) -> impl IntoView {
    let agents = RwSignal::new(None::<AgentsResponse>);
    let failed = RwSignal::new(None::<String>);
    let folder = StoredValue::new(folder_path);
    // Another folder's pick does not carry over while this one's list loads.
    chosen.set(None);
    Effect::new(move |_| {
        leptos::task::spawn_local(async move {
            match client::agents(&folder.get_value()).await {
                Ok(response) => {
                    chosen.try_set(preselected(&response));
                    agents.try_set(Some(response));
                }
                Err(error) => {
                    failed.try_set(Some(error.message));
                }
            }
        });
    });
    let unavailable = move || {
        agents.with(|agents| {
            agents
                .iter()
                .flat_map(|agents| agents.agents.iter())
                .filter(|agent| !agent.available)
                .map(|agent| (agent.name.clone(), agent.reason.clone().unwrap_or_default()))
                .collect::<Vec<_>>()
        })
    };
    view! {
        <div class="flex flex-col gap-1" data-testid="agent-picker">
            <label class="flex items-center gap-2 text-xs text-slate-600 dark:text-slate-400">
                "Agent"
                <select
                    data-testid="agent-select"
                    title="The agent a new session works with"
                    disabled=move || agents.with(Option::is_none)
                    on:change=move |ev| chosen.set(Some(event_target_value(&ev)))
                    class="min-w-0 flex-1 rounded-md border border-slate-300 bg-white px-1 py-0.5 text-xs text-slate-800 dark:border-slate-700 dark:bg-slate-900 dark:text-slate-200"
                >
                    {move || {
                        agents
                            .get()
                            .map(|agents| {
                                agents
                                    .agents
                                    .into_iter()
                                    .map(|agent| {
                                        let selected = chosen.get_untracked().as_deref() == Some(agent.id.as_str());
                                        view! {
                                            <option
                                                value=agent.id.clone()
                                                disabled=!agent.available
                                                selected=selected
                                                title=agent.reason.clone().or(agent.command.clone()).or(agent.model.clone()).unwrap_or_default()
                                            >
                                                {agent_option_label(&agent)}
                                            </option>
                                        }
                                    })
                                    .collect_view()
                            })
                    }}
                </select>
            </label>
            {move || {
                failed
                    .get()
                    .map(|message| {
                        view! {
                            <p role="alert" class="text-xs text-red-700 dark:text-red-300">
                                {format!("The agents could not be listed: {message}")}
                            </p>
                        }
                    })
            }}
            {move || {
                let unavailable = unavailable();
                (!unavailable.is_empty())
                    .then(|| {
                        let count = unavailable.len();
                        view! {
                            <details data-testid="agents-unavailable" class="text-xs text-slate-600 dark:text-slate-400">
                                <summary class="cursor-pointer">
                                    {if count == 1 { "1 agent unavailable".to_string() } else { format!("{count} agents unavailable") }}
                                </summary>
                                <ul class="mt-1 flex flex-col gap-1">
                                    {unavailable
                                        .into_iter()
                                        .map(|(name, reason)| {
                                            view! {
                                                <li>
                                                    <span class="font-medium">{name}</span>
                                                    ": "
                                                    {reason}
                                                </li>
                                            }
                                        })
                                        .collect_view()}
                                </ul>
                            </details>
                        }
                    })
            }}
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::api::{AgentKind, AgentSource};

    fn agent(id: &str, available: bool) -> AgentInfo {
        AgentInfo {
            id: id.into(),
            name: id.to_uppercase(),
            kind: AgentKind::Acp,
            command: None,
            model: None,
            available,
            reason: (!available).then(|| "not installed".into()),
            source: AgentSource::Ready,
        }
    }

    #[test]
    fn the_folders_choice_then_the_default_then_any_available_agent_is_preselected() {
        let mut agents = AgentsResponse {
            agents: vec![agent("builtin", true), agent("gemini", true), agent("codex", false)],
            default: "builtin".into(),
            folder_default: Some("gemini".into()),
        };
        assert_eq!(preselected(&agents).as_deref(), Some("gemini"));
        agents.folder_default = Some("codex".into());
        assert_eq!(preselected(&agents).as_deref(), Some("builtin"), "the folder's choice is unavailable now");
        agents.agents[0].available = false;
        assert_eq!(preselected(&agents).as_deref(), Some("gemini"));
        agents.agents[1].available = false;
        assert_eq!(preselected(&agents), None);
        assert_eq!(agent_option_label(&agents.agents[2]), "CODEX (unavailable)");
    }
}
