//! The header: product name, the open folder, the session's agent, the ACP
//! agent's mode and the YOLO switch.

use leptos::prelude::*;

use crate::parts::{deferred, wasm_split, PartMissing};
use crate::state::HubState;
use protocol::api::{AgentMode, AgentModes, SandboxState, YoloSource};

/// "Phones", on the hub's own page only: a paired phone (HTTPS, the remote
/// listener) can neither pair nor revoke. Shown once hydrated, so the server's
/// page and the browser's agree.
#[component]
fn PhonesButton() -> impl IntoView {
    let on_loopback = RwSignal::new(false);
    let open = RwSignal::new(false);
    let button = NodeRef::<leptos::html::Button>::new();
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        on_loopback
            .set(web_sys::window().and_then(|window| window.location().protocol().ok()).as_deref() == Some("http:"));
    });
    let close = Callback::new(move |()| {
        open.set(false);
        if let Some(button) = button.get_untracked() {
            let _ = button.focus();
        }
    });
    view! {
        <button
            type="button"
            node_ref=button
            data-testid="phones-button"
            hidden=move || !on_loopback.get()
            aria-expanded=move || open.get().to_string()
            title="Pair a phone to answer cards away from the desk"
            on:click=move |_| open.update(|open| *open = !*open)
            class="text-sm text-sky-700 hover:underline dark:text-sky-400"
        >
            "Phones"
        </button>
        {move || open.get().then(|| deferred(crate::components::devices_panel::devices_panel_view(close)))}
    }
}

/// What still asks in YOLO, for the switch's tooltip and its description.
const GUARD_RAILS_HELP: &str = "Even with YOLO on, the built-in guard rails keep these calls asking: \
sudo, su and doas; recursive deletes of /, ~ or ..; force pushes; piping a download into a shell; \
writes to shell startup files and ~/.ssh. Any ask_user rule still asks and any deny rule still blocks. \
The folder's Rules panel lists them.";

#[component]
pub fn Header() -> impl IntoView {
    let state = expect_context::<HubState>();
    let folder = move || state.config.get().map(|config| config.folder_path).or_else(|| state.folder.get());
    let agent = move || state.config.with(|config| config.as_ref().and_then(|config| config.agent.clone()));
    let has_modes = Memo::new(move |_| {
        state.config.with(|config| config.as_ref().is_some_and(|config| config.agent_modes.is_some()))
    });
    let has_config = Memo::new(move |_| state.config.with(Option::is_some));
    let has_config = move || has_config.get();
    view! {
        <header class="flex items-center gap-3 border-b border-slate-200 bg-white px-4 py-3 sm:gap-4 sm:px-6 dark:border-slate-800 dark:bg-slate-900">
            <a href="/" class="shrink-0 whitespace-nowrap text-lg font-semibold tracking-tight">"Agent Hub"</a>
            <span
                data-testid="current-folder"
                class="min-w-0 flex-1 truncate font-mono text-sm text-slate-500 max-sm:invisible dark:text-slate-400"
                title=folder
            >
                {move || folder().unwrap_or_else(|| "No folder open".to_string())}
            </span>
            // Plain text and attributes, not an optional view: the first load stays as light.
            <span
                data-testid="session-agent"
                hidden=move || agent().is_none()
                title=move || {
                    agent()
                        .map(|agent| format!("This session works with {} (agent id: {})", agent.name, agent.id))
                        .unwrap_or_default()
                }
                class="shrink-0 rounded-full border border-slate-300 px-2 py-0.5 text-xs max-sm:hidden text-slate-700 dark:border-slate-700 dark:text-slate-300"
            >
                {move || agent().map(|agent| agent.name).unwrap_or_default()}
            </span>
            <a
                href="/decisions"
                data-testid="all-decisions-link"
                title="Every decision on every folder's tool calls: who allowed what"
                class="whitespace-nowrap text-sm text-sky-700 hover:underline dark:text-sky-400"
            >
                "All decisions"
            </a>
            <PhonesButton />
            {move || has_modes.get().then(|| deferred(agent_mode_picker_view()))}
            {move || has_config().then(|| deferred(sandbox_switch_view()))}
            <YoloSwitch />
        </header>
    }
}

/// A mode as the picker lists it: its name, and what the hub knows of it.
pub fn mode_option_label(mode: &AgentMode) -> String {
    match mode.asks {
        Some(true) => mode.name.clone(),
        Some(false) => format!("{} (skips asking)", mode.name),
        None => format!("{} (unknown to the hub)", mode.name),
    }
}

/// The amber badge of a mode in which the agent acts without asking, like YOLO.
pub fn skips_asking_badge(mode: &AgentMode) -> Option<String> {
    (mode.asks == Some(false)).then(|| format!("{}: the agent skips asking", mode.name))
}

/// The mode the agent is in now.
pub fn current_mode(modes: &AgentModes) -> Option<&AgentMode> {
    modes.modes.iter().find(|mode| mode.id == modes.current_mode_id)
}

/// Whether picking `mode_id` asks the user first: a mode that skips asking,
/// and not the one the agent is in already.
pub fn needs_confirmation(modes: &AgentModes, mode_id: &str) -> bool {
    mode_id != modes.current_mode_id && modes.modes.iter().any(|mode| mode.id == mode_id && mode.asks == Some(false))
}

const MODE_HELP: &str = "The agent's own approval mode. The hub keeps the agent in a mode that asks, so its \
commands and edits come here as cards; in a mode that skips asking, the agent runs them without a card.";

/// The mode picker, from the `session` part of the wasm (see `parts`): only a
/// folder open on an ACP agent has modes, and the server renders none.
#[wasm_split(session, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn agent_mode_picker_view() -> Result<AnyView, PartMissing> {
    Ok(view! { <AgentModePicker /> }.into_any())
}

/// The ACP agent's session modes, when it has some: a select of them (a mode
/// that skips asking is confirmed first and then shown like YOLO).
#[component]
fn AgentModePicker() -> impl IntoView {
    let state = expect_context::<HubState>();
    let config = state.config;
    let modes = Memo::new(move |_| config.with(|config| config.as_ref().and_then(|config| config.agent_modes.clone())));
    // The mode waiting for the user's confirmation, and the one being sent.
    let confirming = RwSignal::new(None::<String>);
    let sending = RwSignal::new(None::<String>);
    let cancel_ref = NodeRef::<leptos::html::Button>::new();
    let current_id =
        move || modes.with(|modes| modes.as_ref().map(|modes| modes.current_mode_id.clone()).unwrap_or_default());
    // What the select shows: the mode asked about or on its way, else the agent's.
    let shown = move || confirming.get().or_else(|| sending.get()).unwrap_or_else(current_id);
    let send = move |mode_id: String| {
        confirming.set(None);
        sending.set(Some(mode_id.clone()));
        state.set_agent_mode(mode_id, move |_| {
            sending.try_set(None);
        });
    };
    let pick = move |mode_id: String| {
        let confirm =
            modes.with_untracked(|modes| modes.as_ref().is_some_and(|modes| needs_confirmation(modes, &mode_id)));
        if confirm {
            confirming.set(Some(mode_id));
        } else if mode_id != current_id() {
            send(mode_id);
        }
    };
    Effect::new(move |_| {
        if confirming.with(Option::is_some) {
            if let Some(button) = cancel_ref.get() {
                let _ = button.focus();
            }
        }
    });
    let asked = move || {
        let id = confirming.get()?;
        modes.with(|modes| modes.as_ref()?.modes.iter().find(|mode| mode.id == id).cloned())
    };
    move || {
        modes.get().map(|agent_modes| {
            let current = current_mode(&agent_modes).cloned();
            let badge = current.as_ref().and_then(skips_asking_badge);
            let unknown = current.as_ref().is_some_and(|mode| mode.asks.is_none());
            let source = if agent_modes.chosen_by_user { "set by you" } else { "set by the hub" };
            let help = match current.as_ref().and_then(|mode| mode.description.clone()) {
                Some(description) => format!("{MODE_HELP} Now: {description}"),
                None => MODE_HELP.to_string(),
            };
            let options = agent_modes
                .modes
                .iter()
                .map(|mode| {
                    view! {
                        <option
                            value=mode.id.clone()
                            title=mode.description.clone()
                            selected=mode.id == agent_modes.current_mode_id
                        >
                            {mode_option_label(mode)}
                        </option>
                    }
                })
                .collect_view();
            view! {
                <div data-testid="agent-mode" class="flex items-center gap-2 text-sm">
                    <span class="flex flex-col items-end leading-tight">
                        <label for="agent-mode-select" class="font-medium">"Agent mode"</label>
                        <span data-testid="agent-mode-source" class="text-xs text-slate-500 dark:text-slate-400">
                            {source}
                        </span>
                    </span>
                    <div class="relative">
                        <select
                            id="agent-mode-select"
                            data-testid="agent-mode-select"
                            aria-describedby="agent-mode-help"
                            prop:value=shown
                            disabled=move || sending.with(Option::is_some)
                            on:change=move |event| pick(event_target_value(&event))
                            class="rounded-md border border-slate-300 bg-white px-2 py-1 text-sm focus:border-sky-500 focus:outline-none focus:ring-2 focus:ring-sky-500/30 disabled:opacity-50 dark:border-slate-700 dark:bg-slate-900"
                        >
                            {options}
                        </select>
                        {move || {
                            asked()
                                .map(|mode| {
                                    let id = mode.id.clone();
                                    let description = mode
                                        .description
                                        .clone()
                                        .filter(|description| !description.trim().is_empty())
                                        .map(|description| {
                                            view! {
                                                <p class="text-xs text-slate-500 dark:text-slate-400">
                                                    {format!("The agent says: {description}")}
                                                </p>
                                            }
                                        });
                                    view! {
                                        <div
                                            role="alertdialog"
                                            aria-labelledby="agent-mode-confirm-title"
                                            aria-describedby="agent-mode-confirm-text"
                                            data-testid="agent-mode-confirm"
                                            class="absolute right-0 top-full z-20 mt-2 flex w-80 flex-col gap-2 rounded-lg border border-amber-400 bg-white p-3 text-sm shadow-lg dark:border-amber-700 dark:bg-slate-900"
                                            on:keydown=move |event| {
                                                if event.key() == "Escape" {
                                                    event.prevent_default();
                                                    confirming.set(None);
                                                }
                                            }
                                        >
                                            <p id="agent-mode-confirm-title" class="font-medium">
                                                {format!("Switch the agent to {}?", mode.name)}
                                            </p>
                                            <p id="agent-mode-confirm-text" class="text-xs text-slate-600 dark:text-slate-400">
                                                "In this mode the agent skips asking for some or all of its calls: what it does without asking gets no card, and the hub's rules never see it."
                                            </p>
                                            {description}
                                            <div class="flex justify-end gap-2">
                                                <button
                                                    type="button"
                                                    node_ref=cancel_ref
                                                    data-testid="agent-mode-cancel"
                                                    on:click=move |_| confirming.set(None)
                                                    class="rounded-md px-3 py-1.5 text-slate-700 hover:bg-slate-100 dark:text-slate-200 dark:hover:bg-slate-800"
                                                >
                                                    "Keep asking"
                                                </button>
                                                <button
                                                    type="button"
                                                    data-testid="agent-mode-confirm-button"
                                                    on:click=move |_| send(id.clone())
                                                    class="rounded-md bg-amber-700 px-3 py-1.5 font-medium text-white hover:bg-amber-800"
                                                >
                                                    {format!("Switch to {}", mode.name)}
                                                </button>
                                            </div>
                                        </div>
                                    }
                                })
                        }}
                    </div>
                    {badge
                        .map(|badge| {
                            view! {
                                <span
                                    data-testid="agent-mode-skips"
                                    role="status"
                                    class="rounded-md bg-amber-100 px-2 py-1 text-xs font-medium text-amber-800 dark:bg-amber-900/50 dark:text-amber-300"
                                >
                                    {badge}
                                </span>
                            }
                        })}
                    {unknown
                        .then(|| {
                            view! {
                                <span
                                    data-testid="agent-mode-unknown"
                                    title="The hub does not know whether the agent asks before it acts in this mode."
                                    class="rounded-md bg-slate-100 px-2 py-1 text-xs text-slate-700 dark:bg-slate-800 dark:text-slate-300"
                                >
                                    "unknown to the hub"
                                </span>
                            }
                        })}
                    <span id="agent-mode-help" class="sr-only">{help}</span>
                </div>
            }
        })
    }
}

/// The sandbox switch, in the part a folder's page loads after hydration.
#[wasm_split(session, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn sandbox_switch_view() -> Result<AnyView, PartMissing> {
    Ok(view! { <SandboxSwitch /> }.into_any())
}

/// The sandbox's state and the folder's network for commands.
#[component]
fn SandboxSwitch() -> impl IntoView {
    let state = expect_context::<HubState>();
    let config = state.config;
    let sandbox = move || config.with(|config| config.as_ref().and_then(|config| config.sandbox.clone()));
    let network = move || config.with(|config| config.as_ref().is_some_and(|config| config.network));
    let label = move || match sandbox().map(|sandbox| sandbox.state) {
        Some(SandboxState::On) => "Sandbox",
        Some(SandboxState::Disabled) => "No sandbox",
        Some(SandboxState::Unavailable) => "No sandbox: YOLO off",
        None => "",
    };
    let why = move || {
        sandbox()
            .map(|sandbox| match sandbox.reason {
                Some(reason) => reason,
                None => "Commands and agents run in the kernel sandbox: they write only in the folder, \
                         cannot read your credentials or the hub's data, and start nothing that outlives them."
                    .to_string(),
            })
            .unwrap_or_default()
    };
    let on = move || sandbox().is_some_and(|sandbox| sandbox.state == SandboxState::On);
    let badge = move || {
        if on() {
            "rounded-full border border-emerald-600 px-2 py-0.5 text-xs text-emerald-800 dark:border-emerald-500 dark:text-emerald-300"
        } else {
            "rounded-full bg-red-100 px-2 py-0.5 text-xs font-medium text-red-800 dark:bg-red-950 dark:text-red-200"
        }
    };
    view! {
        <span hidden=move || sandbox().is_none() class="flex items-center gap-2 text-sm max-sm:hidden">
            <span data-testid="sandbox-state" class=badge title=why>{label}</span>
            <button
                type="button"
                role="switch"
                data-testid="network-switch"
                hidden=move || !on()
                aria-checked=move || network().to_string()
                aria-label="Network for this folder's commands"
                title="Commands reach the network only when this is on (YOLO and rules never turn it on)."
                class=move || if network() { "rounded-md bg-sky-700 px-2 py-0.5 text-xs text-white" } else { "rounded-md border border-slate-300 px-2 py-0.5 text-xs text-slate-700 dark:border-slate-700 dark:text-slate-300" }
                on:click=move |_| state.toggle_network()
            >
                {move || if network() { "Network on" } else { "Network off" }}
            </button>
        </span>
    }
}

#[component]
fn YoloSwitch() -> impl IntoView {
    let state = expect_context::<HubState>();
    let config = state.config;
    let on = move || config.with(|config| config.as_ref().is_some_and(|config| config.yolo_mode));
    let locked = move || config.with(|config| config.as_ref().is_some_and(|config| config.yolo_locked));
    let source = move || {
        config.with(|config| match config.as_ref().map(|config| config.source) {
            Some(YoloSource::Settings) => "from .gemini/settings.json",
            Some(YoloSource::Default) => "default",
            Some(YoloSource::User) => "set by you",
            None => "",
        })
    };
    let note = move || config.with(|config| config.as_ref().and_then(|config| config.note.clone()).unwrap_or_default());
    let rails_help = move || if on() { GUARD_RAILS_HELP } else { "" };
    let track = move || {
        if on() {
            "relative inline-flex h-6 w-11 shrink-0 items-center rounded-full bg-amber-500 transition-colors disabled:cursor-not-allowed disabled:opacity-50"
        } else {
            "relative inline-flex h-6 w-11 shrink-0 items-center rounded-full bg-slate-300 transition-colors disabled:cursor-not-allowed disabled:opacity-50 dark:bg-slate-700"
        }
    };
    let knob = move || {
        if on() {
            "inline-block h-5 w-5 translate-x-5 rounded-full bg-white shadow transition-transform"
        } else {
            "inline-block h-5 w-5 translate-x-0.5 rounded-full bg-white shadow transition-transform"
        }
    };
    view! {
        <div class="flex items-center gap-3 text-sm" title=note>
            <span class="flex flex-col items-end leading-tight">
                <span class="font-medium">
                    "YOLO"
                    <Show when=on>
                        <span
                            data-testid="yolo-guard-rails"
                            class="cursor-help font-normal text-amber-700 underline decoration-dotted underline-offset-2 dark:text-amber-400"
                            title=rails_help
                        >
                            " · guard rails on"
                        </span>
                    </Show>
                </span>
                <span id="yolo-guard-rails-help" class="sr-only">{rails_help}</span>
                <span data-testid="yolo-source" class="text-xs text-slate-500 dark:text-slate-400">
                    {source}
                </span>
            </span>
            <button
                type="button"
                role="switch"
                aria-label="YOLO mode: run tool calls without asking"
                aria-describedby="yolo-guard-rails-help"
                data-testid="yolo-switch"
                aria-checked=move || on().to_string()
                disabled=move || locked() || config.with(Option::is_none)
                class=track
                on:click=move |_| state.toggle_yolo()
            >
                <span class=knob></span>
            </button>
            <Show when=locked>
                <span
                    data-testid="yolo-lock"
                    class="inline-flex items-center gap-1 rounded-md bg-slate-100 px-2 py-1 text-xs text-slate-700 dark:bg-slate-800 dark:text-slate-300"
                >
                    <svg viewBox="0 0 16 16" class="h-3.5 w-3.5" fill="currentColor" aria-hidden="true">
                        <path d="M4 7V5a4 4 0 1 1 8 0v2h.5A1.5 1.5 0 0 1 14 8.5v5a1.5 1.5 0 0 1-1.5 1.5h-9A1.5 1.5 0 0 1 2 13.5v-5A1.5 1.5 0 0 1 3.5 7H4Zm2 0h4V5a2 2 0 1 0-4 0v2Z" />
                    </svg>
                    "Locked off by settings"
                </span>
            </Show>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(id: &str, asks: Option<bool>) -> AgentMode {
        AgentMode { id: id.into(), name: format!("{id} name"), description: None, asks }
    }

    /// Claude Code's modes, the hub having put it in `default`.
    fn claude() -> AgentModes {
        AgentModes {
            current_mode_id: "default".into(),
            modes: vec![
                mode("default", Some(true)),
                mode("acceptEdits", Some(false)),
                mode("bypassPermissions", Some(false)),
                mode("plan", None),
            ],
            chosen_by_user: false,
        }
    }

    #[test]
    fn modes_read_with_what_the_hub_knows_of_them() {
        let modes = claude();
        let labels: Vec<String> = modes.modes.iter().map(mode_option_label).collect();
        assert_eq!(
            labels,
            [
                "default name",
                "acceptEdits name (skips asking)",
                "bypassPermissions name (skips asking)",
                "plan name (unknown to the hub)"
            ]
        );
        assert_eq!(skips_asking_badge(&modes.modes[0]), None);
        assert_eq!(
            skips_asking_badge(&modes.modes[2]).as_deref(),
            Some("bypassPermissions name: the agent skips asking")
        );
        assert_eq!(skips_asking_badge(&modes.modes[3]), None, "an unknown mode is said so, not called safe or not");
        assert_eq!(current_mode(&modes).map(|mode| mode.id.as_str()), Some("default"));
    }

    #[test]
    fn only_a_mode_that_skips_asking_is_confirmed() {
        let mut modes = claude();
        assert!(needs_confirmation(&modes, "bypassPermissions"));
        assert!(!needs_confirmation(&modes, "plan"));
        assert!(!needs_confirmation(&modes, "default"));
        assert!(!needs_confirmation(&modes, "nope"));
        modes.current_mode_id = "acceptEdits".into();
        assert!(!needs_confirmation(&modes, "acceptEdits"), "already in it");
    }
}
