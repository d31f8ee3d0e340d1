//! What waits on the user, and for how long it may: each folder's approval
//! timeout, the list of waiting cards across folders (the inbox), and the
//! task that answers "no decision" for what waited past its folder's timeout.
//! Whether a wait is due is asked of the session's machine at the instant the
//! hub acts, never taken from the list it scanned.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use protocol::api::{ChatConfig, HubUpdate, SessionStatus, WaitingCall, WaitingList, MAX_APPROVAL_TIMEOUT_SECS};

use super::{Hub, HubError, HubResult};
use crate::agents::{begin, Start};
use crate::clock::now_ms;
use crate::folder::canonical_folder;
use crate::session::Phase;

/// How often the hub looks for waits past their folder's timeout.
const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// A session waiting on the user, as the registry shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wait {
    pub session_id: String,
    pub folder: PathBuf,
    pub since_ms: u64,
}

/// The waits past their folder's timeout at `now_ms`, with that timeout (seconds).
pub(crate) fn due(waits: &[Wait], timeouts: &HashMap<PathBuf, u64>, now_ms: u64) -> Vec<(String, u64)> {
    waits
        .iter()
        .filter_map(|wait| {
            let secs = *timeouts.get(&wait.folder)?;
            (wait.since_ms.saturating_add(secs.saturating_mul(1000)) <= now_ms).then(|| (wait.session_id.clone(), secs))
        })
        .collect()
}

/// The approval timeouts kept per folder (canonical folder → seconds).
#[derive(Debug, Default)]
pub(crate) struct Timeouts(std::sync::Mutex<HashMap<PathBuf, u64>>);

impl Timeouts {
    pub fn load(store: Option<&crate::store::Store>) -> Self {
        let kept = store.map(|store| store.approval_timeouts()).transpose().unwrap_or_else(|err| {
            tracing::error!("the folders' approval timeouts could not be read; none applies: {err}");
            None
        });
        Self(std::sync::Mutex::new(kept.unwrap_or_default().into_iter().collect()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, u64>> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A timeout a folder may set: 1 s to a day.
pub fn checked_timeout(secs: Option<u64>) -> HubResult<Option<u64>> {
    match secs {
        Some(secs) if !(1..=MAX_APPROVAL_TIMEOUT_SECS).contains(&secs) => Err(HubError::Invalid(format!(
            "approvalTimeoutSecs must be 1 to {MAX_APPROVAL_TIMEOUT_SECS} seconds, or null to wait forever; got {secs}."
        ))),
        other => Ok(other),
    }
}

impl Hub {
    /// The folder's approval timeout in seconds (`None`: it waits forever).
    pub fn approval_timeout(&self, folder: &Path) -> Option<u64> {
        self.timeouts.lock().get(folder).copied()
    }

    /// Sets the folder's approval timeout (`None`: wait forever), kept across
    /// restarts; answers the session's config. Nothing changes on error.
    pub async fn set_approval_timeout(
        self: &Arc<Self>,
        folder_path: &str,
        session_id: Option<&str>,
        secs: Option<u64>,
    ) -> HubResult<ChatConfig> {
        let secs = checked_timeout(secs)?;
        let folder = canonical_folder(folder_path)?;
        if let Some(store) = &self.store {
            store.set_approval_timeout(&folder, secs).await.map_err(|err| HubError::StoreFailed(err.to_string()))?;
        }
        match secs {
            Some(secs) => self.timeouts.lock().insert(folder.clone(), secs),
            None => self.timeouts.lock().remove(&folder),
        };
        for id in self.sessions_in(&folder) {
            self.config_changed(&id);
        }
        let (hub, path, session) = (self.clone(), folder_path.to_string(), session_id.map(str::to_string));
        // The folder's settings file may be read: off the async workers.
        tokio::task::spawn_blocking(move || hub.peek_config(&path, session.as_deref()))
            .await
            .map_err(|err| HubError::Internal(format!("The config could not be read: {err}.")))?
    }

    /// The sessions waiting on the user, as the registry shows them.
    fn waits(&self) -> Vec<Wait> {
        self.registry()
            .sessions()
            .filter(|session| matches!(session.status, SessionStatus::WaitingApproval | SessionStatus::WaitingInput))
            .filter_map(|session| {
                Some(Wait {
                    session_id: session.id.clone(),
                    folder: session.folder.clone(),
                    since_ms: session.waiting_since_ms?,
                })
            })
            .collect()
    }

    /// Every card and question waiting on the user, across folders (reads
    /// sessions not in memory from the store: call off the async workers).
    pub fn waiting_list(&self) -> WaitingList {
        let mut waiting = Vec::new();
        for wait in self.waits() {
            let Some(runtime) = self.runtime(&wait.session_id) else { continue };
            let title = self.registry().get(&wait.session_id).and_then(|session| session.title.clone());
            let deadline_at =
                self.approval_timeout(&wait.folder).map(|secs| wait.since_ms.saturating_add(secs.saturating_mul(1000)));
            let folder_path = wait.folder.display().to_string();
            let item = |tool_id: String, tool_name: String, summary: String, question: bool| WaitingCall {
                folder_path: folder_path.clone(),
                session_id: wait.session_id.clone(),
                session_title: title.clone(),
                tool_id,
                tool_name,
                summary,
                question,
                deadline_at,
            };
            // What the session's machine waits on: the calls it would take a decision on, or the question.
            let state = runtime.state();
            match state.machine.phase() {
                Phase::Waiting { pending } => {
                    for tool_id in pending {
                        let Some((name, args)) = state.agent.waiting_call(tool_id) else { continue };
                        waiting.push(item(tool_id.clone(), name.clone(), crate::audit::summarize(&name, &args), false));
                    }
                }
                Phase::Asking { request_id } => {
                    let asked = crate::agents::builtin::pending_input(&state.agent);
                    let prompt = asked.as_ref().and_then(|asked| asked["prompt"].as_str()).unwrap_or_default();
                    let name = crate::agents::builtin::question::TOOL_NAME.to_string();
                    waiting.push(item(request_id.clone(), name, prompt.to_string(), true));
                }
                Phase::Idle | Phase::Running | Phase::Error => {}
            }
        }
        WaitingList { waiting }
    }

    /// Answers "no decision" for what waited in the session past the folder's
    /// timeout, if it still does at this instant (its machine says), and tells
    /// open pages. Blocking: the session may be read from the store.
    fn time_out(self: &Arc<Self>, session_id: &str, after_secs: u64) {
        let Some(runtime) = self.runtime(session_id) else { return };
        let summary = {
            let state = runtime.state();
            let first = state.agent.pending_calls().into_iter().next();
            match first.and_then(|id| state.agent.waiting_call(&id)) {
                Some((name, args)) => crate::audit::summarize(&name, &args),
                None => "a question".to_string(),
            }
        };
        match begin(&self.port(), &runtime, Start::TimeOut { after_secs, now_ms: now_ms() }) {
            Ok(_) => self.publish(HubUpdate::TimedOut {
                folder_path: runtime.folder.display().to_string(),
                session_id: session_id.to_string(),
                summary,
            }),
            Err(err) => tracing::debug!(session = session_id, "not timed out: {err}"),
        }
    }
}

/// Looks for waits past their folder's timeout until the hub shuts down (or is gone).
pub(crate) fn spawn_sweeper(hub: Weak<Hub>, shutdown: tokio_util::sync::CancellationToken) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
    handle.spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = every.tick() => {}
                () = shutdown.cancelled() => return,
            }
            let Some(hub) = hub.upgrade() else { return };
            let due = {
                let timeouts = hub.timeouts.lock().clone();
                if timeouts.is_empty() {
                    continue;
                }
                due(&hub.waits(), &timeouts, now_ms())
            };
            for (session_id, after_secs) in due {
                let hub = hub.clone();
                let _ = tokio::task::spawn_blocking(move || hub.time_out(&session_id, after_secs)).await;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wait(id: &str, folder: &str, since_ms: u64) -> Wait {
        Wait { session_id: id.into(), folder: folder.into(), since_ms }
    }

    #[test]
    fn a_wait_is_due_once_its_folders_timeout_has_passed() {
        let timeouts = HashMap::from([(PathBuf::from("/a"), 60), (PathBuf::from("/b"), 1)]);
        let waits = [wait("a1", "/a", 1_000), wait("b1", "/b", 1_000), wait("c1", "/c", 0)];
        assert_eq!(due(&waits, &timeouts, 1_999), vec![]);
        assert_eq!(due(&waits, &timeouts, 2_000), vec![("b1".to_string(), 1)]);
        assert_eq!(due(&waits, &timeouts, 61_000), vec![("a1".to_string(), 60), ("b1".to_string(), 1)]);
        assert_eq!(due(&waits, &timeouts, u64::MAX).len(), 2, "a folder without a timeout waits forever");
    }

    #[test]
    fn a_timeout_is_one_second_to_a_day() {
        assert_eq!(checked_timeout(None).unwrap(), None);
        assert_eq!(checked_timeout(Some(1)).unwrap(), Some(1));
        assert_eq!(checked_timeout(Some(MAX_APPROVAL_TIMEOUT_SECS)).unwrap(), Some(MAX_APPROVAL_TIMEOUT_SECS));
        assert!(checked_timeout(Some(0)).is_err());
        assert!(checked_timeout(Some(MAX_APPROVAL_TIMEOUT_SECS + 1)).is_err());
    }
}
