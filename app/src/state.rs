//! The page's state shared by the components through context, and the
//! addresses they link to. Kept apart from the components so that each of
//! them depends on it, and none on the page that owns it.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::client::{self, HubError};
use crate::location::Location;
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
    /// The last call the hub answered "no decision" (folder, summary): the inbox notifies.
    pub timed_out: RwSignal<Option<(String, String)>>,
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
        self.change_config(|config| async move {
            client::set_yolo(&config.folder_path, &config.session_id, !config.yolo_mode).await
        });
    }

    /// Lets the folder's commands reach the network, or not (the sandbox's
    /// network namespace otherwise).
    pub fn toggle_network(self) {
        self.change_config(|config| async move {
            client::set_network(&config.folder_path, &config.session_id, !config.network).await
        });
    }

    /// Sends a change of the open session's config; the answer is shown, or its error.
    fn change_config<F: std::future::Future<Output = Result<ChatConfig, HubError>> + 'static>(
        self,
        change: impl FnOnce(ChatConfig) -> F,
    ) {
        let Some(Some(config)) = self.config.try_get_untracked() else { return };
        let change = change(config);
        spawn_local(async move {
            match change.await {
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

    pub fn apply_config(self, next: ChatConfig) {
        let same_session =
            self.config.try_with_untracked(|current| current.as_ref().is_some_and(|c| c.session_id == next.session_id));
        if same_session == Some(true) {
            self.config.try_set(Some(next));
        }
    }

    pub fn apply_update(self, update: HubUpdate) {
        match update {
            HubUpdate::Config(config) => {
                self.apply_config(*config);
                self.refresh_projects();
            }
            HubUpdate::Projects => self.refresh_projects(),
            HubUpdate::TimedOut(note) => {
                self.timed_out.try_set(Some((note.folder_path, note.summary)));
                self.refresh_projects();
            }
            HubUpdate::DevicePaired(paired) => {
                let said = format!(
                    "A device was paired with the hub: \"{}\" from {}. If that was not you, revoke it under Phones.",
                    paired.name, paired.address
                );
                self.error.try_set(Some(crate::client::HubError::from(said)));
            }
        }
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

/// The last component of a path, for compact lists (the full path is the title).
pub fn folder_name(path: &str) -> String {
    path.trim_end_matches('/').rsplit('/').next().filter(|name| !name.is_empty()).unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    use super::folder_name;

    #[test]
    fn folder_names_are_the_last_component() {
        assert_eq!(folder_name("/home/me/project"), "project");
        assert_eq!(folder_name("/home/me/project/"), "project");
        assert_eq!(folder_name("/"), "/");
    }
}
