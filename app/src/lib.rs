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
pub mod highlight;
pub mod location;
pub mod markdown;
pub mod parts;
pub mod policy;
pub mod state;
pub mod transcript;
pub mod waiting;

use leptos::prelude::*;

use crate::components::decisions::{DecisionsPage, DECISIONS_TITLE};
use crate::components::hub_page::HubPage;
use crate::location::{provide_location, Url};
use crate::waiting::HUB_TITLE;

/// The paths of the hub's pages; the server serves these and nothing else as HTML.
pub const PAGES: [&str; 2] = ["/", DECISIONS_PATH];
const DECISIONS_PATH: &str = "/decisions";

/// Registers `/sw.js` once the page has loaded, where the browser allows service workers.
const REGISTER_SERVICE_WORKER: &str = "if(window.isSecureContext&&'serviceWorker'in navigator)\
addEventListener('load',()=>navigator.serviceWorker.register('/sw.js').catch(()=>{}))";

/// The HTML document around the app (server side only).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    // The first title; the page keeps it current from then on (`location::set_title`).
    let title = if Url::current().path == DECISIONS_PATH { DECISIONS_TITLE } else { HUB_TITLE };
    // Named as HydrationScripts names the js and wasm (Leptos.toml's output-name and site-pkg-dir).
    let stylesheet = format!("/{}/{}.css", options.site_pkg_dir, options.output_name);
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <link rel="icon" type="image/svg+xml" href="/favicon.svg" />
                // The installable app (public/manifest.webmanifest; docs/working.md "On a phone").
                // use-credentials: the manifest is fetched with the token's cookie, as every path needs it.
                <link rel="manifest" href="/manifest.webmanifest" crossorigin="use-credentials" />
                <link rel="apple-touch-icon" href="/apple-touch-icon.png" />
                <meta name="theme-color" media="(prefers-color-scheme: light)" content="#ffffff" />
                <meta name="theme-color" media="(prefers-color-scheme: dark)" content="#0f172a" />
                // The service worker (public/sw.js) caches the shell only. Plain script, not wasm:
                // the first load stays as light. Secure contexts only (http://127.0.0.1 is one).
                // The nonce of the page's script-src (server side; none in the browser).
                <script nonce=leptos::nonce::use_nonce() inner_html=REGISTER_SERVICE_WORKER></script>
                // inner_html: a text child would carry a hydration marker, which a title shows as text.
                <title inner_html=title></title>
                <link rel="stylesheet" href=stylesheet />
                <HydrationScripts options />
            </head>
            <body class="bg-slate-50 text-slate-900 dark:bg-slate-950 dark:text-slate-100">
                <App />
            </body>
        </html>
    }
}

/// The page the path names, chosen once per load: the server and the browser
/// choose alike, and moving between pages is a full load.
#[component]
pub fn App() -> impl IntoView {
    let location = provide_location();
    if location.path_untracked() == DECISIONS_PATH {
        view! { <DecisionsPage /> }.into_any()
    } else {
        view! { <HubPage /> }.into_any()
    }
}
