//! Folder trust (Gemini CLI's folder trust, VS Code's workspace trust): a
//! folder's own `.gemini` files may tighten what the hub does at once (deny and
//! ask rules, `disableYoloMode: true`), but loosen it (allow rules,
//! `disableYoloMode: false`) only once the user trusts the folder. A cloned
//! repository, or a `git pull` into one, cannot approve for itself.
//!
//! Trust is kept in the store and withdrawn at will; `--no-folder-trust`
//! trusts every folder (the behaviour before trust existed).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use protocol::api::{FolderTrust as TrustAnswer, HubUpdate, PolicyDecision, TrustNeeded};

use super::{now_ms, Hub, HubError, HubResult};
use crate::folder::canonical_folder;
use crate::policy::Rule;
use crate::settings::{read_settings, SettingsDefault};
use crate::store::Store;

/// The folders the user trusts (canonical path → when), as the store has them.
pub struct FolderTrust {
    enforced: bool,
    trusted: Mutex<HashMap<PathBuf, u64>>,
}

impl FolderTrust {
    /// `enforced`: whether trust is asked for at all. A store that cannot be
    /// read trusts nothing (the safe side) and says so.
    pub fn load(enforced: bool, store: Option<&Store>) -> Self {
        let trusted = match store.map(Store::trusted_folders) {
            Some(Ok(rows)) => rows.into_iter().map(|row| (row.folder, row.trusted_at_ms)).collect(),
            Some(Err(err)) => {
                tracing::error!("the trusted folders could not be read, so no folder is trusted: {err}");
                HashMap::new()
            }
            None => HashMap::new(),
        };
        Self { enforced, trusted: Mutex::new(trusted) }
    }

    fn trusted(&self) -> MutexGuard<'_, HashMap<PathBuf, u64>> {
        self.trusted.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A held-back allow rule as the banner lists it.
fn describe(rule: &Rule) -> String {
    let tools = rule.tool_names.join(", ");
    let what = if !rule.command_prefixes.is_empty() {
        format!("{tools} starting with `{}`", rule.command_prefixes.join("`, `"))
    } else if let Some(regex) = &rule.command_regex {
        format!("{tools} matching `{regex}`")
    } else if let Some(pattern) = &rule.args_pattern {
        format!("{tools} with arguments matching `{pattern}`")
    } else {
        tools
    };
    format!("{}: allows {what}", rule.source)
}

impl Hub {
    /// Whether `folder` (canonical)'s own files may loosen anything.
    pub fn trusted(&self, folder: &Path) -> bool {
        !self.trust.enforced || self.trust.trusted().contains_key(folder)
    }

    /// The folder's settings as they apply: under its trust.
    pub fn folder_settings(&self, folder: &Path) -> SettingsDefault {
        read_settings(folder).under_trust(self.trusted(folder))
    }

    /// What the folder's own files would loosen once trusted; `None` when nothing.
    pub fn trust_needed(&self, folder: &Path) -> Option<TrustNeeded> {
        let yolo = read_settings(folder).yolo_mode;
        let held = self.policies().for_folder(folder, Vec::new(), false);
        let allows: Vec<String> =
            held.held_back().iter().filter(|rule| rule.decision == PolicyDecision::Allow).map(describe).collect();
        let agent_config = crate::sandbox::agent_config::what_would_run(folder);
        (yolo || !allows.is_empty() || !agent_config.is_empty()).then_some(TrustNeeded { allows, yolo, agent_config })
    }

    /// `POST /api/folders/trust` (`trusted`) and `DELETE /api/folders/trust`:
    /// kept in the store before it applies; the folder's sessions take the new
    /// word at once (YOLO re-derived, rules judged with it from the next call).
    pub async fn set_trust(&self, folder_path: &str, trusted: bool) -> HubResult<TrustAnswer> {
        let folder = canonical_folder(folder_path)?;
        if !self.trust.enforced {
            return Err(HubError::FolderTrustOff);
        }
        let failed = |err: crate::store::StoreError| {
            HubError::StoreFailed(format!("The folder's trust could not be saved: {err}."))
        };
        let trusted_at = match (trusted, self.store()) {
            (true, Some(store)) => Some(store.trust_folder(&folder, now_ms()).await.map_err(failed)?.trusted_at_ms),
            (true, None) => Some(now_ms()),
            (false, Some(store)) => {
                store.untrust_folder(&folder).await.map_err(failed)?;
                None
            }
            (false, None) => None,
        };
        {
            let mut set = self.trust.trusted();
            match trusted_at {
                Some(at) => {
                    set.entry(folder.clone()).or_insert(at);
                }
                None => {
                    set.remove(&folder);
                }
            }
        }
        tracing::info!(folder = %folder.display(), trusted, "folder trust changed");
        self.restart_idle_agents(&folder);
        self.settings_changed(&folder);
        for id in self.sessions_in(&folder) {
            self.config_changed(&id);
        }
        self.publish(HubUpdate::Projects);
        let trusted_at = trusted.then(|| self.trust.trusted().get(&folder).copied()).flatten();
        Ok(TrustAnswer { folder_path: folder.display().to_string(), trusted, trusted_at })
    }

    /// An ACP agent sees the folder's own config as its sandbox showed it at
    /// its start: the idle ones end, and the next prompt starts each under the
    /// new word (an agent in a turn keeps its view until its process ends).
    fn restart_idle_agents(&self, folder: &Path) {
        for id in self.sessions_in(folder) {
            let Some(runtime) = self.runtimes().get(&id).cloned() else { continue };
            let mut state = runtime.state();
            if state.machine.occupied().is_none() {
                crate::agents::acp::end_process(&mut state.agent);
            }
        }
    }

    /// The folder's trust as it is.
    pub fn trust_of(&self, folder_path: &str) -> HubResult<TrustAnswer> {
        let folder = canonical_folder(folder_path)?;
        let trusted_at = self.trust.trusted().get(&folder).copied();
        Ok(TrustAnswer { folder_path: folder.display().to_string(), trusted: self.trusted(&folder), trusted_at })
    }
}
