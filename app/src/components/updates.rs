//! Live updates from the hub (`GET /api/updates`, server-sent events).

use protocol::api::HubUpdate;

/// Calls `on_update` for every update and `on_open` whenever the stream
/// (re)connects, so the page can refetch what it missed while disconnected.
/// The browser's EventSource reconnects by itself. The subscription belongs to
/// the current owner: when it cleans up, the stream is closed and neither
/// callback runs again.
#[cfg(feature = "hydrate")]
pub fn subscribe(on_update: impl Fn(HubUpdate) + 'static, on_open: impl Fn() + 'static) {
    use leptos::prelude::*;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;

    let Ok(source) = web_sys::EventSource::new("/api/updates") else {
        leptos::logging::warn!("live updates unavailable");
        return;
    };
    let on_message = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
        if let Some(Ok(update)) =
            event.data().as_string().map(|text| crate::client::decode::<HubUpdate>(text.as_bytes()))
        {
            on_update(update);
        }
    });
    source.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    let on_open = Closure::<dyn Fn()>::new(on_open);
    source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    // A dropped connection is retried by the browser; a refused one closes the
    // source for good. Refused for want of a token or a pairing (a revoked
    // phone): the reload shows the page that says so, not a page frozen in time.
    let closed = source.clone();
    let on_error = Closure::<dyn Fn()>::new(move || {
        if closed.ready_state() == web_sys::EventSource::CLOSED {
            leptos::task::spawn_local(async {
                if crate::client::projects().await.is_err_and(|err| err.status == Some(401)) {
                    if let Some(window) = web_sys::window() {
                        let _ = window.location().reload();
                    }
                }
            });
        }
    });
    source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    let subscription = StoredValue::new_local(Some(Subscription {
        source,
        _on_message: on_message,
        _on_open: on_open,
        _on_error: on_error,
    }));
    on_cleanup(move || {
        if let Some(Some(subscription)) = subscription.try_update_value(Option::take) {
            subscription.close();
        }
    });
}

#[cfg(feature = "hydrate")]
struct Subscription {
    source: web_sys::EventSource,
    _on_message: wasm_bindgen::closure::Closure<dyn Fn(web_sys::MessageEvent)>,
    _on_open: wasm_bindgen::closure::Closure<dyn Fn()>,
    _on_error: wasm_bindgen::closure::Closure<dyn Fn()>,
}

#[cfg(feature = "hydrate")]
impl Subscription {
    /// Stops the stream; the closures go with `self` once the source no longer calls them.
    fn close(self) {
        self.source.set_onmessage(None);
        self.source.set_onopen(None);
        self.source.set_onerror(None);
        self.source.close();
    }
}

#[cfg(not(feature = "hydrate"))]
pub fn subscribe(_on_update: impl Fn(HubUpdate) + 'static, _on_open: impl Fn() + 'static) {}
