//! Live updates from the hub (`GET /api/updates`, server-sent events).

use crate::types::HubUpdate;

/// Calls `on_update` for every update and `on_open` whenever the stream
/// (re)connects, so the page can refetch what it missed while disconnected.
/// The browser's EventSource reconnects by itself.
#[cfg(feature = "hydrate")]
pub fn subscribe(on_update: impl Fn(HubUpdate) + 'static, on_open: impl Fn() + 'static) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let Ok(source) = web_sys::EventSource::new("/api/updates") else {
        leptos::logging::warn!("live updates unavailable");
        return;
    };
    let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
        if let Some(Ok(update)) = event.data().as_string().map(|text| serde_json::from_str::<HubUpdate>(&text)) {
            on_update(update);
        }
    });
    source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    let on_open = Closure::<dyn Fn()>::new(on_open);
    source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    // The page subscribes once for its lifetime.
    on_message.forget();
    on_open.forget();
    std::mem::forget(source);
}

#[cfg(not(feature = "hydrate"))]
pub fn subscribe(_on_update: impl Fn(HubUpdate) + 'static, _on_open: impl Fn() + 'static) {}
