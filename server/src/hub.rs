//! The hub's shared state: the session registry, the settings watcher and the
//! channel that pushes updates to open pages.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use app::types::{ChatConfig, HubUpdate, ProjectsResponse};
use axum::http::StatusCode;
use tokio::sync::broadcast;

use crate::error::{ApiError, ApiResult};
use crate::folder::canonical_folder;
use crate::registry::{Registry, RegistryError, Session, YoloLocked};
use crate::settings::read_settings;
use crate::watcher::SettingsWatcher;

pub struct Hub {
    registry: Mutex<Registry>,
    updates: broadcast::Sender<HubUpdate>,
    watcher: Option<SettingsWatcher>,
}

impl Hub {
    /// A hub whose settings watcher runs on the current tokio runtime.
    pub fn new() -> Arc<Self> {
        Arc::new_cyclic(|weak| {
            let watcher = SettingsWatcher::start(weak.clone())
                .map_err(|err| tracing::warn!("settings files will not be watched: {err}"))
                .ok();
            Self { registry: Mutex::default(), updates: broadcast::channel(256).0, watcher }
        })
    }

    pub fn subscribe(&self) -> broadcast::Receiver<HubUpdate> {
        self.updates.subscribe()
    }

    fn registry(&self) -> MutexGuard<'_, Registry> {
        // A panic while holding the lock leaves plain data behind; keep serving.
        self.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn publish(&self, update: HubUpdate) {
        // No open page is not an error.
        let _ = self.updates.send(update);
    }

    /// Validates the folder and opens (creating on first use) the session.
    pub fn open_session(&self, folder_path: &str, session_id: Option<&str>) -> ApiResult<ChatConfig> {
        self.with_session(folder_path, session_id, |session| Ok(session.config()))
    }

    pub fn set_yolo(&self, folder_path: &str, session_id: Option<&str>, enabled: bool) -> ApiResult<ChatConfig> {
        let config = self.with_session(folder_path, session_id, |session| {
            session.yolo.set_by_user(enabled).map_err(|YoloLocked| {
                ApiError::new(
                    StatusCode::FORBIDDEN,
                    "yolo_locked",
                    "YOLO mode is locked off for this folder by security.disableYoloMode in .gemini/settings.json.",
                )
            })?;
            session.updated_at_ms = now_ms();
            Ok(session.config())
        })?;
        self.publish(HubUpdate::Config(config.clone()));
        Ok(config)
    }

    fn with_session<T>(
        &self,
        folder_path: &str,
        session_id: Option<&str>,
        act: impl FnOnce(&mut Session) -> ApiResult<T>,
    ) -> ApiResult<T> {
        let folder = canonical_folder(folder_path)?;
        let (result, created) = {
            let mut registry = self.registry();
            let (session, created) =
                registry.open(&folder, session_id, now_ms(), || read_settings(&folder)).map_err(registry_error)?;
            (act(session), created)
        };
        if created {
            if let Some(watcher) = &self.watcher {
                watcher.watch(&folder);
            }
            self.publish(HubUpdate::Projects);
        }
        result
    }

    pub fn projects(&self) -> ProjectsResponse {
        self.registry().projects()
    }

    pub fn session(&self, id: &str) -> Option<Session> {
        self.registry().get(id).cloned()
    }

    /// The folder's settings file changed on disk: re-derive every session's YOLO
    /// default and push what changed.
    pub fn settings_changed(&self, folder: &Path) {
        let settings = read_settings(folder);
        let changed: Vec<ChatConfig> = {
            let mut registry = self.registry();
            registry
                .sessions_in_mut(folder)
                .filter_map(|session| session.yolo.rederive(settings.clone()).then(|| session.config()))
                .collect()
        };
        for config in changed {
            tracing::info!(folder = %folder.display(), yolo = config.yolo_mode, "settings changed on disk");
            self.publish(HubUpdate::Config(config));
        }
    }
}

fn registry_error(err: RegistryError) -> ApiError {
    ApiError::bad_request(err.to_string())
}

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
