//! The folder's side of the sandbox: whether its commands reach the network
//! (off unless the user turns it on: neither YOLO nor a rule does), whether
//! YOLO may be on at all (not while the sandbox cannot work, unless the hub
//! was started with `--no-sandbox`), and the terms a session's process starts
//! under, asked when it starts.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use protocol::api::ChatConfig;

use super::{Hub, HubError, HubResult};
use crate::agents::port::SandboxTerms;
use crate::folder::canonical_folder;
use crate::sandbox::Mode;

/// A per-folder setting as the store has it, read once at start, and the lock
/// a change holds until it is saved (changes of one setting go one at a time).
#[derive(Debug, Default)]
pub(crate) struct Kept<T>(Mutex<T>, tokio::sync::Mutex<()>);

impl<T: Default> Kept<T> {
    /// What `read` gives, else (no store, or an error, logged with `lost`) the default.
    pub fn load<R: IntoIterator>(
        store: Option<&crate::store::Store>,
        read: impl FnOnce(&crate::store::Store) -> Result<R, crate::store::StoreError>,
        lost: &str,
    ) -> Self
    where
        T: FromIterator<R::Item>,
    {
        let kept = store.map(read).transpose().unwrap_or_else(|err| {
            tracing::error!("{lost}: {err}");
            None
        });
        Self(Mutex::new(kept.map(|rows| rows.into_iter().collect()).unwrap_or_default()), tokio::sync::Mutex::new(()))
    }

    fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// What each folder's sandbox masks besides the default list.
pub(crate) type Masks = Kept<HashMap<PathBuf, Vec<PathBuf>>>;
/// The folders whose commands may reach the network.
pub(crate) type Networks = Kept<HashSet<PathBuf>>;

/// The most paths a folder may mask besides the default list.
pub const MAX_MASKS: usize = 64;

/// A folder's masks as given (`~/…` or absolute), checked: absolute, no `..`,
/// never the folder itself or a folder around it (its agents could not work).
pub(crate) fn checked_masks(folder: &Path, given: &[String]) -> HubResult<Vec<PathBuf>> {
    if given.len() > MAX_MASKS {
        return Err(HubError::Invalid(format!("At most {MAX_MASKS} paths can be masked for a folder.")));
    }
    let home = std::env::var_os("HOME").filter(|home| !home.is_empty()).map(PathBuf::from);
    let mut masks = Vec::new();
    for text in given {
        let path = match (text.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(text),
        };
        let bad = |why: &str| HubError::Invalid(format!("'{text}' cannot be masked: {why}."));
        if text.len() > 4096 || !path.is_absolute() {
            return Err(bad("give an absolute path, or one starting with ~/"));
        }
        if path.components().any(|part| matches!(part, std::path::Component::ParentDir)) {
            return Err(bad("it holds '..'"));
        }
        let real = path.canonicalize().unwrap_or_else(|_| path.clone());
        if folder.starts_with(&path) || folder.starts_with(&real) {
            return Err(bad("it is the folder itself or holds it"));
        }
        if path.starts_with(folder) || real.starts_with(folder) {
            // The folder's own files are its agents' to read (the file tools, git's
            // objects, a renamed parent): a mask there would promise what it cannot keep.
            return Err(bad("it is inside the folder; keep secrets outside it"));
        }
        if !masks.contains(&path) {
            masks.push(path);
        }
    }
    Ok(masks)
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

    /// What the folder's sandbox masks besides the default list.
    pub fn masks(&self, folder: &Path) -> Vec<PathBuf> {
        self.masks.lock().get(folder).cloned().unwrap_or_default()
    }

    /// Sets what the folder's sandbox masks besides the default list (`~/…`
    /// or absolute paths), kept across restarts; answers the session's config.
    /// Checked whole first: nothing changes on error. Processes started from
    /// now on get it (a running agent keeps its own until it starts again).
    pub async fn set_masks(
        self: &Arc<Self>,
        folder_path: &str,
        session_id: Option<&str>,
        given: &[String],
    ) -> HubResult<ChatConfig> {
        let folder = canonical_folder(folder_path)?;
        let masks = checked_masks(&folder, given)?;
        self.peek_off_thread(folder_path, session_id).await?;
        let _changing = self.masks.1.lock().await;
        if let Some(store) = &self.store {
            store.set_masks(&folder, &masks).await.map_err(|err| HubError::StoreFailed(err.to_string()))?;
        }
        if masks.is_empty() {
            self.masks.lock().remove(&folder);
        } else {
            self.masks.lock().insert(folder.clone(), masks.clone());
        }
        tracing::info!(folder = %folder.display(), masks = ?masks, "the folder's own sandbox masks changed");
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
            masks: folder.as_deref().map(|folder| self.masks(folder)).unwrap_or_default(),
        }
    }
}
