//! Watches each open folder's `.gemini/settings.json` with `notify`.
//!
//! Each folder is watched non-recursively (to see `.gemini` appear or vanish), and
//! so is its `.gemini` directory while it exists: a recursive watch of a project
//! could mean hundreds of thousands of inotify watches.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::settings::{SETTINGS_DIR, SETTINGS_FILE};

/// Editors save in bursts (truncate, write, rename); settle before re-reading.
const SETTLE: Duration = Duration::from_millis(60);

pub struct SettingsWatcher {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    watcher: RecommendedWatcher,
    folders: HashSet<PathBuf>,
}

impl Inner {
    fn watch_settings_dir(&mut self, folder: &Path) {
        let dir = folder.join(SETTINGS_DIR);
        if dir.is_dir() {
            if let Err(err) = self.watcher.watch(&dir, RecursiveMode::NonRecursive) {
                tracing::warn!("cannot watch {}: {err}", dir.display());
            }
        }
    }

    /// The open folder whose settings an event path may concern: the `.gemini`
    /// directory itself, or its `settings.json`. Other files there (the policy
    /// files the hub reads on every call) are none of the settings' business.
    fn folder_of(&self, path: &Path) -> Option<PathBuf> {
        let candidate = if path.file_name()? == SETTINGS_DIR {
            path.parent()?
        } else if path.file_name()? == SETTINGS_FILE && path.parent()?.file_name()? == SETTINGS_DIR {
            path.parent()?.parent()?
        } else {
            return None;
        };
        self.folders.contains(candidate).then(|| candidate.to_path_buf())
    }
}

impl SettingsWatcher {
    /// `changed` is told of each folder whose settings changed on disk (the
    /// hub re-derives its sessions' YOLO); the watcher knows nothing else of the hub.
    pub fn start(changed: SettingsChanged) -> notify::Result<Self> {
        let (tx, rx) = mpsc::unbounded_channel::<PathBuf>();
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
            // Reading a file is no change to it (and the hub reads settings and
            // policy files itself: reacting would re-derive YOLO over the user's toggle).
            Ok(event) if event.kind.is_access() => {}
            Ok(event) => event.paths.into_iter().for_each(|path| {
                let _ = tx.send(path);
            }),
            Err(err) => tracing::warn!("settings watcher: {err}"),
        })?;
        let inner = Arc::new(Mutex::new(Inner { watcher, folders: HashSet::new() }));
        tokio::spawn(dispatch(rx, Arc::downgrade(&inner), changed));
        Ok(Self { inner })
    }

    pub fn watch(&self, folder: &Path) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !inner.folders.insert(folder.to_path_buf()) {
            return;
        }
        if let Err(err) = inner.watcher.watch(folder, RecursiveMode::NonRecursive) {
            tracing::warn!("cannot watch {}: {err}", folder.display());
        }
        inner.watch_settings_dir(folder);
    }
}

/// Told of a folder whose settings changed; `false` once nobody listens (the hub is gone).
pub type SettingsChanged = Box<dyn Fn(&std::path::Path) -> bool + Send + Sync>;

async fn dispatch(mut rx: mpsc::UnboundedReceiver<PathBuf>, inner: Weak<Mutex<Inner>>, changed: SettingsChanged) {
    while let Some(first) = rx.recv().await {
        tokio::time::sleep(SETTLE).await;
        let mut paths = vec![first];
        while let Ok(path) = rx.try_recv() {
            paths.push(path);
        }
        let Some(inner) = inner.upgrade() else { return };
        let folders: HashSet<PathBuf> = {
            let mut inner = inner.lock().unwrap_or_else(|p| p.into_inner());
            let folders: HashSet<PathBuf> = paths.iter().filter_map(|path| inner.folder_of(path)).collect();
            // A new `.gemini` directory needs a watch of its own; re-adding an
            // existing watch is harmless.
            for folder in &folders {
                inner.watch_settings_dir(folder);
            }
            folders
        };
        for folder in folders {
            if !changed(&folder) {
                return;
            }
        }
    }
}
