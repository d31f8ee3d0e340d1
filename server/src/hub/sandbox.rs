//! The folder's side of the sandbox: whether its commands reach the network
//! (off unless the user turns it on: neither YOLO nor a rule does), whether
//! YOLO may be on at all (not while the sandbox cannot work, unless the hub
//! was started with `--no-sandbox`), and the terms a session's process starts
//! under, asked when it starts.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::api::ChatConfig;

use super::{Hub, HubError, HubResult};
use crate::agents::port::SandboxTerms;
use crate::folder::canonical_folder;
use crate::sandbox::Mode;

/// The folders whose commands may reach the network, as the store has them.
#[derive(Debug, Default)]
pub(crate) struct Networks(Mutex<HashSet<PathBuf>>, tokio::sync::Mutex<()>);

impl Networks {
    pub fn load(store: Option<&crate::store::Store>) -> Self {
        let kept = store.map(crate::store::Store::network_folders).transpose().unwrap_or_else(|err| {
            tracing::error!("the folders' network settings could not be read; every folder's is off: {err}");
            None
        });
        Self(Mutex::new(kept.unwrap_or_default().into_iter().collect()), tokio::sync::Mutex::new(()))
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<PathBuf>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Hub {
    pub fn sandbox(&self) -> &Arc<crate::sandbox::Sandbox> {
        &self.sandbox
    }

    /// Whether YOLO may be on: not while the sandbox cannot work here (the
    /// user may still choose `--no-sandbox`).
    pub fn yolo_allowed(&self) -> Result<(), HubError> {
        match self.sandbox.mode() {
            Mode::Unavailable { reason } => Err(HubError::SandboxUnavailable(reason.clone())),
            Mode::Enforced { .. } | Mode::Disabled => Ok(()),
        }
    }

    /// Whether the folder's commands may reach the network.
    pub fn network(&self, folder: &Path) -> bool {
        self.networks.lock().contains(folder)
    }

    /// Turns the folder's network for commands on or off, kept across
    /// restarts; answers the session's config. Nothing changes on error.
    pub async fn set_network(
        self: &Arc<Self>,
        folder_path: &str,
        session_id: Option<&str>,
        enabled: bool,
    ) -> HubResult<ChatConfig> {
        let folder = canonical_folder(folder_path)?;
        self.peek_off_thread(folder_path, session_id).await?;
        let _changing = self.networks.1.lock().await;
        if let Some(store) = &self.store {
            store.set_network(&folder, enabled).await.map_err(|err| HubError::StoreFailed(err.to_string()))?;
        }
        if enabled {
            self.networks.lock().insert(folder.clone());
        } else {
            self.networks.lock().remove(&folder);
        }
        tracing::info!(folder = %folder.display(), enabled, "the folder's network for commands changed");
        for id in self.sessions_in(&folder) {
            self.config_changed(&id);
        }
        self.peek_off_thread(folder_path, session_id).await
    }

    /// What a session's process starts under now: the sandbox, the folder's
    /// network, and whether its agents' own config waits for trust.
    pub fn sandbox_terms(&self, session_id: &str) -> SandboxTerms {
        let folder = self.registry().get(session_id).map(|session| session.folder.clone());
        SandboxTerms {
            sandbox: self.sandbox.clone(),
            network: folder.as_deref().is_some_and(|folder| self.network(folder)),
            // An unknown session's folder is not trusted.
            hide_agent_config: !folder.as_deref().is_some_and(|folder| self.trusted(folder)),
        }
    }
}
