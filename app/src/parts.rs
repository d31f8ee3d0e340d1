//! Parts of the client that load on first use. A function marked
//! `#[wasm_split(part, …)]` goes, with all the code only it reaches, into a wasm
//! file of its own (`scripts/lib.sh` runs `wasm-split-cli`); calling it fetches
//! that file once. The page hydrates without them and [`prefetch`] fetches them
//! right after hydration (what a folder's page shows together, then the rest):
//! by the time the folder's config and transcript are in, they usually are too
//! (`bench/first-load` times it cold).
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

const PART_MISSING: &str = "This part of the page could not be loaded from the hub. Reload the page.";

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
    // A part already loaded answers at the first poll: its view is then made
    // here and now, as if it were not split, so a view that changes (the next
    // card) is updated in place rather than through a Suspend's later rebuild.
    let mut load = Box::pin(load);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    if let std::task::Poll::Ready(result) = load.as_mut().poll(&mut context) {
        return show(result);
    }
    // Still loading: the same future (its fetch under way) finishes in a Suspend.
    // It is not `Send` (nothing is, in the browser's one thread).
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
