//! The banner of a folder the user has not trusted whose own `.gemini` files
//! would loosen what the hub does: it says what they would allow (their allow
//! rules, YOLO on), with Trust and Not now. Until trusted, those files may only
//! tighten (deny and ask rules, YOLO locked off).

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::client;
use crate::state::HubState;

#[component]
pub fn TrustBanner(folder_path: String) -> impl IntoView {
    let state = expect_context::<HubState>();
    let dismissed = RwSignal::new(false);
    let busy = RwSignal::new(false);
    let error = RwSignal::new(None::<String>);
    let needed = move || state.config.with(|config| config.as_ref().and_then(|config| config.trust_needed.clone()));
    let trust = move |_| {
        let folder = folder_path.clone();
        busy.set(true);
        spawn_local(async move {
            match client::set_trust(&folder, true).await {
                Ok(_) => {
                    error.try_set(None);
                    state.load_config();
                }
                Err(err) => {
                    error.try_set(Some(format!("The folder could not be trusted: {}", err.message)));
                }
            }
            busy.try_set(false);
        });
    };
    move || {
        let needed = needed().filter(|_| !dismissed.get())?;
        let trust = trust.clone();
        let allows = needed.allows.clone();
        let agent_config = needed.agent_config.clone();
        let no_agent_config = agent_config.is_empty();
        let nothing_loosened = !needed.yolo && needed.allows.is_empty();
        Some(view! {
            <div
                role="region"
                aria-label="Folder trust"
                data-testid="trust-banner"
                class="rounded-md border border-amber-300 bg-amber-50 p-3 text-sm text-amber-900 dark:border-amber-700 dark:bg-amber-950 dark:text-amber-100"
            >
                <p class="font-semibold">"Do you trust this folder?"</p>
                <p hidden=nothing_loosened>
                    "Its own .gemini files would loosen what the hub asks you. Until you trust it, they may only tighten (deny and ask rules apply now)."
                </p>
                <ul class="my-1 list-disc pl-5" data-testid="trust-would" hidden=nothing_loosened>
                    {needed.yolo.then(|| view! { <li>"YOLO on once you trust this folder (its settings.json sets disableYoloMode to false)"</li> })}
                    {allows.into_iter().map(|line| view! { <li class="break-all font-mono text-xs">{line}</li> }).collect_view()}
                </ul>
                <div hidden=no_agent_config>
                    <p>"Its agents' own config would run these, in the agent's sandbox (hidden from the agents until you trust it):"</p>
                    <ul class="my-1 list-disc pl-5" data-testid="trust-agent-config">
                        {agent_config.into_iter().map(|line| view! { <li class="break-all font-mono text-xs">{line}</li> }).collect_view()}
                    </ul>
                </div>
                <div class="mt-2 flex gap-2">
                    <button
                        type="button"
                        data-testid="trust-folder"
                        class="min-h-9 rounded bg-amber-700 px-3 py-1 text-white hover:bg-amber-800 disabled:opacity-50"
                        disabled=move || busy.get()
                        on:click=trust
                    >
                        "Trust this folder"
                    </button>
                    <button
                        type="button"
                        data-testid="trust-not-now"
                        class="min-h-9 rounded border border-amber-700 px-3 py-1 hover:bg-amber-100 dark:hover:bg-amber-900"
                        on:click=move |_| dismissed.set(true)
                    >
                        "Not now"
                    </button>
                </div>
                {move || error.get().map(|message| view! { <p role="alert" class="mt-1 text-red-800 dark:text-red-300">{message}</p> })}
            </div>
        })
    }
}
