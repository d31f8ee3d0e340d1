//! Agent Hub UI: Leptos components rendered on the server (`ssr`) and hydrated
//! in the browser (`hydrate`), plus the types of the HTTP contract.

#![recursion_limit = "256"]

// The server renders this UI and the browser hydrates it: both must be built
// with type-erased components, or the HTML does not hydrate (.cargo/config.toml
// sets the flag; RUSTFLAGS or CARGO_ENCODED_RUSTFLAGS in the environment replace it).
#[cfg(not(erase_components))]
compile_error!("app must be built with `--cfg erase_components` (see .cargo/config.toml and scripts/lib.sh)");

pub mod client;
pub mod components;
pub mod diff;
pub mod events;
pub mod markdown;
pub mod parts;
pub mod policy;
pub mod transcript;
pub mod types;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::components::{Route, Router, Routes};
use leptos_router::path;

use crate::components::decisions::DecisionsPage;
use crate::components::hub_page::HubPage;

/// The HTML document around the app (server side only).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" type="image/svg+xml" href="/favicon.svg" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body class="bg-slate-50 text-slate-900 dark:bg-slate-950 dark:text-slate-100">
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/agent_hub.css" />
        <Router>
            <Routes fallback=|| {
                view! {
                    <Title text="Agent Hub" />
                    <p class="p-8">"Page not found."</p>
                }
            }>
                <Route path=path!("/") view=HubPage />
                <Route path=path!("/decisions") view=DecisionsPage />
            </Routes>
        </Router>
    }
}
