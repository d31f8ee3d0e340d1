//! Parts of the client that load on first use. A function marked
//! `#[wasm_split(part, …)]` goes, with all the code only it reaches, into a wasm
//! file of its own (`scripts/lib.sh` runs `wasm-split-cli`); calling it fetches
//! that file once. The page loads without them and [`prefetch`] fetches them
//! all right after hydration, so a card never waits on the network.
//!
//! Parts: `session` (the open folder: its chat, transcript and tools), `cards`
//! (approval and question cards, the diff view, the editor),
//! `markdown` (the answer renderer), `policy` (the rules panel, decisions).
//!
//! On the server and in tests the functions are plain calls.

use std::future::Future;

use leptos::prelude::*;

pub use leptos::wasm_split::wasm_split;

/// A part of the client could not be fetched (the hub stopped or restarted).
/// Shown where the part would be; the next use tries again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartMissing;

impl From<leptos::wasm_split::SplitLoaderError> for PartMissing {
    fn from(_: leptos::wasm_split::SplitLoaderError) -> Self {
        PartMissing
    }
}

pub const PART_MISSING: &str = "This part of the page could not be loaded from the hub. Reload the page.";

/// The view a split function makes, shown as soon as its part is loaded (at
/// once when it already is), or a note that it could not be.
pub fn deferred<F>(load: F) -> AnyView
where
    F: Future<Output = Result<AnyView, PartMissing>> + 'static,
{
    when_loaded(load, |view| {
        view.unwrap_or_else(|PartMissing| {
            view! { <p role="alert" data-testid="part-missing" class="text-sm text-red-700 dark:text-red-300">{PART_MISSING}</p> }
                .into_any()
        })
    })
}

/// What `show` makes of a split function's answer, once its part is loaded.
#[cfg(feature = "hydrate")]
pub fn when_loaded<T, F>(load: F, show: impl FnOnce(Result<T, PartMissing>) -> AnyView + 'static) -> AnyView
where
    T: 'static,
    F: Future<Output = Result<T, PartMissing>> + 'static,
{
    // The loader's future is not `Send` (nothing is, in the browser's one thread).
    Suspend::new(send_wrapper::SendWrapper::new(async move { show(load.await) })).into_any()
}

/// On the server the parts are never needed: what uses them (transcript items,
/// cards, panels) is made in the browser, or [`after_hydration`].
#[cfg(not(feature = "hydrate"))]
pub fn when_loaded<T, F>(_load: F, _show: impl FnOnce(Result<T, PartMissing>) -> AnyView + 'static) -> AnyView
where
    T: 'static,
    F: Future<Output = Result<T, PartMissing>> + 'static,
{
    ().into_any()
}

/// A split view inside server-rendered HTML: the server leaves its place empty
/// and the browser fills it once hydrated, so hydration never waits on a part
/// (and never meets HTML it cannot match).
pub fn after_hydration(view: impl Fn() -> AnyView + Send + Sync + 'static) -> impl IntoView {
    let hydrated = RwSignal::new(false);
    Effect::new(move |_| hydrated.set(true));
    move || hydrated.get().then(&view)
}

/// Fetches every part in the background; called once the page is hydrated.
pub fn prefetch() {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async {
        // One after another, the likeliest first, so they do not hold up the
        // page's own requests (the transcript).
        let _ = crate::components::folders::preload_session().await;
        let _ = crate::markdown::preload_markdown().await;
        let _ = crate::components::approval_card::preload_cards().await;
        let _ = crate::components::rules_panel::preload_policy().await;
    });
}
