//! The hub's one page: header, folder list, and the open folder.

use leptos::prelude::*;

use crate::components::alert::Alert;
use crate::components::folders::{FolderPanel, FolderSidebar};
use crate::components::header::Header;
use crate::components::{shortcuts, updates};
use crate::location::{set_title, use_location};
use crate::state::{folder_href, mark_hydrated, HubState};
use crate::waiting::{page_title, waiting_sessions};
use protocol::api::ChatConfig;

#[component]
pub fn HubPage() -> impl IntoView {
    let location = use_location();
    let folder = location.query("folder");
    let session = location.query("session");
    let state = HubState {
        folder,
        session,
        location,
        projects: RwSignal::new(Vec::new()),
        config: RwSignal::new(None),
        error: RwSignal::new(None),
        new_session_agent: RwSignal::new(None),
        timed_out: RwSignal::new(None),
    };
    provide_context(state);

    // Effects run in the browser only, after hydration.
    Effect::new(move |_| {
        mark_hydrated();
        prefetch();
        updates::subscribe(
            move |update| state.apply_update(update),
            move || {
                state.refresh_projects();
                state.load_config();
            },
        );
    });
    Effect::new(move |_| {
        folder.track();
        session.track();
        state.load_config();
    });
    shortcuts::listen(state, location);

    let open = Callback::new(move |config: ChatConfig| location.navigate(&folder_href(&config.folder_path)));

    Effect::new(move |_| set_title(&state.projects.with(|projects| page_title(waiting_sessions(projects).len()))));
    view! {
        <div class="flex min-h-screen flex-col">
            <Header />
            <div class="flex flex-1 flex-col md:flex-row">
                <FolderSidebar on_open=open />
                <main class="flex flex-1 flex-col gap-4 p-4 max-sm:has-[[data-testid=folder-panel]]:order-first sm:p-6">
                    <ErrorBanner />
                    <FolderPanel />
                </main>
            </div>
        </div>
    }
}

#[component]
fn ErrorBanner() -> impl IntoView {
    let state = expect_context::<HubState>();
    move || {
        state.error.get().map(|error| {
            view! {
                <Alert message=error.message testid="error-banner" on_dismiss=Callback::new(move |_| state.error.set(None)) />
            }
        })
    }
}

/// Fetches every part in the background, once the page is hydrated: first
/// (together, as they share chunks) what a folder's page shows, then the rest.
/// They start at once, beside the page's own requests: letting those go first
/// (a task later) measured no faster on loopback, within this machine's drift.
fn prefetch() {
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async {
        // A failure is not kept: the part's first use tries again and says so.
        let session = crate::components::folders::preload_session();
        let cards = crate::components::approval_card::preload_cards();
        let markdown = crate::markdown::preload_markdown();
        let _ = futures::future::join3(session, cards, markdown).await;
        let _ = crate::components::rules_panel::preload_policy().await;
    });
}
