//! "Notify this phone": shown only where `GET /api/push/key` says the page may
//! subscribe (a paired device, on the remote listener). The work is done by
//! `public/push-subscribe.js`, loaded once the control shows: service workers
//! and `PushManager` through web-sys would put a dozen features and their glue
//! into the first-load bundle for a control most pages never show; a script
//! element and three `Reflect` calls cost next to nothing.

use leptos::prelude::*;

use crate::client;
use crate::parts::{deferred, wasm_split, PartMissing};
use protocol::devices::PushKeyResponse;

/// Where the control goes: it is fetched (with the cards part) only on a page
/// served over HTTPS, the remote listener's; the hub's own page never asks.
/// Decided once hydrated, so the server's page and the browser's agree.
#[component]
pub fn NotifyPhoneSlot() -> impl IntoView {
    let remote = RwSignal::new(false);
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        remote.set(web_sys::window().and_then(|window| window.location().protocol().ok()).as_deref() == Some("https:"));
    });
    move || remote.get().then(|| deferred(notify_phone_view()))
}

#[wasm_split(cards, wasm_split_path = ::leptos::wasm_split, fallible)]
fn notify_phone_view() -> Result<AnyView, PartMissing> {
    Ok(view! { <NotifyPhone /> }.into_any())
}

#[component]
fn NotifyPhone() -> impl IntoView {
    let key = LocalResource::new(|| async {
        let key = client::get_json::<PushKeyResponse>("/api/push/key").await.ok().filter(|key| key.subscribable)?;
        browser::load();
        Some(key.public_key)
    });
    let status = RwSignal::new(None::<String>);
    let busy = RwSignal::new(false);
    move || {
        let public_key = key.get().flatten()?;
        let subscribe = move |_| {
            // Called now, inside the click: the browser asks for permission only from a gesture.
            let started = browser::subscribe(&public_key);
            busy.set(true);
            leptos::task::spawn_local(async move {
                let said = match started.await.as_deref() {
                    Ok("subscribed") => "This phone will be notified.".to_string(),
                    Ok("denied") => "Notifications are blocked for this page in the browser's settings.".to_string(),
                    Ok(_) => "This browser cannot show notifications from a web page (on iPhone: add the hub to the Home Screen first).".to_string(),
                    Err(err) => format!("This phone could not be subscribed: {err}"),
                };
                status.try_set(Some(said));
                busy.try_set(false);
            });
        };
        Some(view! {
            <div data-testid="notify-phone" class="mt-4 text-sm">
                <button
                    type="button"
                    data-testid="notify-phone-button"
                    class="min-h-9 rounded-md border border-slate-300 px-3 py-1 hover:bg-slate-100 disabled:opacity-50 dark:border-slate-700 dark:hover:bg-slate-800"
                    disabled=move || busy.get()
                    on:click=subscribe
                >
                    "Notify this phone"
                </button>
                <p role="status" class="mt-1 text-slate-600 dark:text-slate-300">{move || status.get()}</p>
            </div>
        })
    }
}

#[cfg(feature = "hydrate")]
mod browser {
    use std::future::Future;

    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;

    const SCRIPT: &str = "/push-subscribe.js";

    /// Adds the script once (a second call finds its element).
    pub fn load() {
        let Some(document) = web_sys::window().and_then(|window| window.document()) else { return };
        if document.query_selector(&format!("script[src='{SCRIPT}']")).ok().flatten().is_some() {
            return;
        }
        let added = document.create_element("script").and_then(|script| {
            script.set_attribute("src", SCRIPT)?;
            let head = document.head().ok_or_else(|| JsValue::from_str("no head"))?;
            head.append_child(&script).map(drop)
        });
        if let Err(err) = added {
            leptos::logging::warn!("the notification script could not be added: {err:?}");
        }
    }

    /// Starts `hubPush.subscribe(key)` at once; its answer (`subscribed`,
    /// `denied`, `unsupported`) or why it failed, later.
    pub fn subscribe(key: &str) -> impl Future<Output = Result<String, String>> + 'static {
        let started = start(key);
        async move { JsFuture::from(started?).await.map(|answer| answer.as_string().unwrap_or_default()).map_err(message) }
    }

    fn start(key: &str) -> Result<js_sys::Promise, String> {
        let not_loaded = || "the notification script is not loaded yet; try again in a moment.".to_string();
        let window = web_sys::window().ok_or("no window")?;
        let api = js_sys::Reflect::get(&window, &"hubPush".into())
            .ok()
            .filter(|api| api.is_object())
            .ok_or_else(not_loaded)?;
        let function: js_sys::Function = js_sys::Reflect::get(&api, &"subscribe".into())
            .ok()
            .and_then(|f| f.dyn_into().ok())
            .ok_or_else(not_loaded)?;
        function.call1(&api, &JsValue::from_str(key)).map_err(message)?.dyn_into().map_err(message)
    }

    /// A JS error's message, not its stack.
    fn message(err: JsValue) -> String {
        js_sys::Reflect::get(&err, &"message".into())
            .ok()
            .and_then(|text| text.as_string())
            .unwrap_or_else(|| format!("{err:?}"))
    }
}

#[cfg(not(feature = "hydrate"))]
mod browser {
    pub fn load() {}

    pub fn subscribe(_key: &str) -> impl std::future::Future<Output = Result<String, String>> + 'static {
        async { Err("only in the browser".to_string()) }
    }
}
