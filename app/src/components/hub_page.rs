//! The hub's one page: header, folder list, and the open folder.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::client::{self, HubError};
use crate::components::folders::{FolderPanel, FolderSidebar};
use crate::components::header::Header;
use crate::components::inbox::{page_title, waiting_sessions};
use crate::components::{shortcuts, updates};
use crate::location::{set_title, use_location, Location};
use crate::parts;
use protocol::api::{ChatConfig, HubUpdate, ProjectSummary};

/// Page state shared by the components through context. `HubPage` owns it;
/// the tasks below reach it after an `.await` only through `try_*`, so a task
/// that finishes after the page went touches nothing.
#[derive(Clone, Copy)]
pub struct HubState {
    /// The folder named in the URL (`/?folder=…`), as typed or linked.
    pub folder: Memo<Option<String>>,
    /// The session named in the URL (`&session=…`); none is the folder's default.
    pub session: Memo<Option<String>>,
    pub location: Location,
    pub projects: RwSignal<Vec<ProjectSummary>>,
    /// The open folder's YOLO config, once the hub answered.
    pub config: RwSignal<Option<ChatConfig>>,
    pub error: RwSignal<Option<HubError>>,
    /// The agent picked for the open folder's next new session (the sessions
    /// list's select; New session and its key both use it).
    pub new_session_agent: RwSignal<Option<String>>,
}

impl HubState {
    pub fn refresh_projects(self) {
        spawn_local(async move {
            match client::projects().await {
                Ok(response) => {
                    if self.projects.try_set(response.projects).is_none() {
                        client::clear_unreachable(self.error);
                    }
                }
                Err(error) => {
                    self.error.try_set(Some(error));
                }
            }
        });
    }

    /// Fetches the config of the folder and session in the URL, ignoring
    /// answers that arrive after the user moved on to another.
    pub fn load_config(self) {
        let Some(opened) = self.opened_untracked() else { return };
        let Some((folder, session)) = opened else {
            self.config.try_set(None);
            return;
        };
        spawn_local(async move {
            // The page makes sessions with POST /api/sessions, so one named in the
            // address that the hub does not list was deleted (back, an old link):
            // opening it would make it anew, empty. The folder's default one opens.
            if let Some(id) = session.as_deref() {
                let listed = client::projects().await.map(|listed| {
                    listed.projects.iter().flat_map(|project| project.sessions.iter()).any(|s| s.id == id)
                });
                if matches!(listed, Ok(false)) {
                    if self.opened_untracked() == Some(Some((folder.clone(), session.clone()))) {
                        self.location.replace(&folder_href(&folder));
                    }
                    return;
                }
            }
            let result = client::open_session(&folder, session.as_deref()).await;
            if self.opened_untracked() != Some(Some((folder, session))) {
                return;
            }
            match result {
                Ok(config) => {
                    self.error.try_set(None);
                    self.config.try_set(Some(config));
                }
                Err(error) => {
                    self.config.try_set(None);
                    self.error.try_set(Some(error));
                }
            }
        });
    }

    /// The folder and session in the URL; `None` once the page is gone.
    fn opened_untracked(self) -> Option<Option<(String, Option<String>)>> {
        let folder = self.folder.try_get_untracked()?;
        let session = self.session.try_get_untracked()?;
        Some(folder.map(|folder| (folder, session)))
    }

    pub fn toggle_yolo(self) {
        let Some(Some(config)) = self.config.try_get_untracked() else { return };
        spawn_local(async move {
            match client::set_yolo(&config.folder_path, &config.session_id, !config.yolo_mode).await {
                Ok(next) => self.apply_config(next),
                Err(error) => {
                    self.error.try_set(Some(error));
                }
            }
        });
    }

    /// Puts the open session's agent in `mode_id`; `done` hears whether it worked.
    pub fn set_agent_mode(self, mode_id: String, done: impl FnOnce(bool) + 'static) {
        let Some(Some(config)) = self.config.try_get_untracked() else {
            done(false);
            return;
        };
        spawn_local(async move {
            match client::set_mode(&config.session_id, &mode_id).await {
                Ok(next) => {
                    self.apply_config(next);
                    done(true);
                }
                Err(error) => {
                    self.error.try_set(Some(error));
                    done(false);
                }
            }
        });
    }

    fn apply_config(self, next: ChatConfig) {
        let same_session =
            self.config.try_with_untracked(|current| current.as_ref().is_some_and(|c| c.session_id == next.session_id));
        if same_session == Some(true) {
            self.config.try_set(Some(next));
        }
    }

    fn apply_update(self, update: HubUpdate) {
        match update {
            HubUpdate::Config(config) => {
                self.apply_config(*config);
                self.refresh_projects();
            }
            HubUpdate::Projects => self.refresh_projects(),
        }
    }
}

/// The hub page's title with nothing waiting (the server's, before the page knows).
pub const HUB_TITLE: &str = "Agent Hub";

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
    };
    provide_context(state);

    // Effects run in the browser only, after hydration.
    Effect::new(move |_| {
        mark_hydrated();
        parts::prefetch();
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
                <main class="flex flex-1 flex-col gap-4 p-6">
                    <ErrorBanner />
                    <FolderPanel />
                </main>
            </div>
        </div>
    }
}

/// Lets tests (and curious users) tell a live page from server-rendered HTML.
pub fn mark_hydrated() {
    #[cfg(feature = "hydrate")]
    if let Some(root) = document().document_element() {
        let _ = root.set_attribute("data-hydrated", "true");
    }
}

pub fn folder_href(folder_path: &str) -> String {
    format!("/?folder={}", urlencoding::encode(folder_path))
}

/// The address of one session of a folder: a reload or a shared link opens it.
pub fn session_href(folder_path: &str, session_id: &str) -> String {
    format!("{}&session={}", folder_href(folder_path), urlencoding::encode(session_id))
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

/// An error the user should read: a red box, optionally dismissable.
#[component]
pub fn Alert(
    message: String,
    testid: &'static str,
    #[prop(optional, into)] code: Option<String>,
    #[prop(optional)] on_dismiss: Option<Callback<()>>,
) -> impl IntoView {
    view! {
        <div
            role="alert"
            data-testid=testid
            data-code=code
            class="flex items-start justify-between gap-4 rounded-lg border border-red-300 bg-red-50 px-4 py-3 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200"
        >
            <span>{message}</span>
            {on_dismiss
                .map(|dismiss| {
                    view! {
                        <button type="button" class="font-medium hover:underline" on:click=move |_| dismiss.run(())>
                            "Dismiss"
                        </button>
                    }
                })}
        </div>
    }
}
