//! What waits on the user, and for how long it may: each folder's approval
//! timeout, the list of waiting cards across folders (the inbox), and the
//! task that answers "no decision" for what waited past its folder's timeout.
//! Whether a wait is due is asked of the session's machine at the instant the
//! hub acts, never taken from the list it scanned.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use protocol::api::{ChatConfig, HubUpdate, SessionStatus, WaitingCall, WaitingList, MAX_APPROVAL_TIMEOUT_SECS};

use super::{Hub, HubError, HubResult};
use crate::agents::{begin, AgentError, Start};
use crate::clock::now_ms;
use crate::folder::canonical_folder;
use crate::session::Phase;

/// The longest summary the inbox lists; a call whose summary would be longer
/// is decided on its card, where it shows whole.
const LISTED_CHARS: usize = 2_000;

/// How often the hub looks for waits past their folder's timeout.
const SWEEP_EVERY: Duration = Duration::from_millis(500);

/// A session waiting on the user, as the registry shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wait {
    pub session_id: String,
    pub folder: PathBuf,
    pub since_ms: u64,
}

/// A folder's approval timeout, and when it was set: a wait counts from
/// whichever came later, so setting a timeout never answers at once what
/// already waited longer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout {
    pub secs: u64,
    pub set_at_ms: u64,
}

impl Timeout {
    /// When a wait that began at `since_ms` is answered "no decision".
    pub fn deadline(self, since_ms: u64) -> u64 {
        since_ms.max(self.set_at_ms).saturating_add(self.secs.saturating_mul(1000))
    }
}

/// The waits past their folder's timeout at `now_ms`, with that timeout.
pub(crate) fn due(waits: &[Wait], timeouts: &HashMap<PathBuf, Timeout>, now_ms: u64) -> Vec<(Wait, Timeout)> {
    waits
        .iter()
        .filter_map(|wait| {
            let timeout = *timeouts.get(&wait.folder)?;
            (timeout.deadline(wait.since_ms) <= now_ms).then(|| (wait.clone(), timeout))
        })
        .collect()
}

/// The approval timeouts kept per folder (canonical folder), and a lock that
/// keeps a change's write to the store and to memory together.
#[derive(Debug, Default)]
pub(crate) struct Timeouts(std::sync::Mutex<HashMap<PathBuf, Timeout>>, tokio::sync::Mutex<()>);

impl Timeouts {
    pub fn load(store: Option<&crate::store::Store>) -> Self {
        let kept = store.map(|store| store.approval_timeouts()).transpose().unwrap_or_else(|err| {
            tracing::error!("the folders' approval timeouts could not be read; none applies: {err}");
            None
        });
        let kept =
            kept.unwrap_or_default().into_iter().map(|(folder, secs, set_at_ms)| (folder, Timeout { secs, set_at_ms }));
        Self(std::sync::Mutex::new(kept.collect()), tokio::sync::Mutex::new(()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Timeout>> {
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
        self.timeouts.lock().get(folder).map(|timeout| timeout.secs)
    }

    /// When what waits in `folder` since `since_ms` is answered "no decision".
    pub fn deadline(&self, folder: &Path, since_ms: u64) -> Option<u64> {
        self.timeouts.lock().get(folder).map(|timeout| timeout.deadline(since_ms))
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
        // The session is checked (it may be another folder's) before anything changes.
        self.peek_off_thread(folder_path, session_id).await?;
        // One change at a time: the store and memory never end up with two different ones.
        let _changing = self.timeouts.1.lock().await;
        let kept = self.timeouts.lock().get(&folder).copied();
        // The same timeout again moves no deadline.
        let set_at_ms = kept.filter(|kept| Some(kept.secs) == secs).map_or_else(now_ms, |kept| kept.set_at_ms);
        if let Some(store) = &self.store {
            let stored = store.set_approval_timeout(&folder, secs, set_at_ms).await;
            stored.map_err(|err| HubError::StoreFailed(err.to_string()))?;
        }
        match secs {
            Some(secs) => self.timeouts.lock().insert(folder.clone(), Timeout { secs, set_at_ms }),
            None => self.timeouts.lock().remove(&folder),
        };
        for id in self.sessions_in(&folder) {
            self.config_changed(&id);
        }
        self.projects_changed();
        self.peek_off_thread(folder_path, session_id).await
    }

    /// [`Hub::peek_config`] off the async workers: it may read the folder's settings file.
    pub async fn peek_off_thread(
        self: &Arc<Self>,
        folder_path: &str,
        session_id: Option<&str>,
    ) -> HubResult<ChatConfig> {
        let (hub, path, session) = (self.clone(), folder_path.to_string(), session_id.map(str::to_string));
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
            let deadline_at = self.deadline(&wait.folder, wait.since_ms);
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
                batchable: false,
                fingerprint: String::new(),
            };
            // What the session's machine waits on: the calls it would take a decision on, or the question.
            let state = runtime.state();
            match state.machine.phase() {
                Phase::Waiting { pending } => {
                    for tool_id in pending {
                        let Some((name, args)) = state.agent.waiting_call(tool_id) else { continue };
                        let summary = crate::audit::summarize_within(&name, &args, LISTED_CHARS);
                        // An edit is decided on its diff; a command cut short, on its card.
                        let whole = !summary.ends_with('…') && !name.trim().is_empty();
                        let batchable = whole && !matches!(name.as_str(), "write_file" | "replace");
                        waiting.push(WaitingCall {
                            batchable,
                            fingerprint: crate::agents::fingerprint(&name, &args),
                            ..item(tool_id.clone(), name.clone(), summary, false)
                        });
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
    /// timeout as it is now, if it still does at this instant (its machine
    /// says), and tells open pages. Blocking: the session may be read from the store.
    fn time_out(self: &Arc<Self>, session_id: &str) -> Swept {
        let Some(runtime) = self.runtime(session_id) else { return Swept::Failed };
        // Read again: a timeout changed since the sweep began counts.
        let Some(timeout) = self.timeouts.lock().get(&runtime.folder).copied() else { return Swept::NotDue };
        let summary = {
            let state = runtime.state();
            let first = state.agent.pending_calls().into_iter().next();
            match first.and_then(|id| state.agent.waiting_call(&id)) {
                Some((name, args)) => crate::audit::summarize(&name, &args),
                None => "a question".to_string(),
            }
        };
        let start = Start::TimeOut { after_secs: timeout.secs, counted_from_ms: timeout.set_at_ms, now_ms: now_ms() };
        match begin(&self.port(), &runtime, start) {
            Ok(_) => {
                self.publish(HubUpdate::TimedOut(Box::new(protocol::api::TimedOut {
                    folder_path: runtime.folder.display().to_string(),
                    session_id: session_id.to_string(),
                    summary,
                })));
                Swept::TimedOut
            }
            // Decided, stopped or given more time meanwhile: asked again while it waits.
            Err(AgentError::NotPending(_) | AgentError::Busy(_) | AgentError::NotRunning) => Swept::NotDue,
            Err(err) => {
                tracing::warn!(session = session_id, "a wait past its timeout could not be answered: {err}");
                Swept::Failed
            }
        }
    }
}

/// What came of answering a wait past its timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Swept {
    TimedOut,
    /// Not due after all (decided, or the timeout changed): looked at again next sweep.
    NotDue,
    /// It cannot be answered (its agent is gone, its state unreadable).
    Failed,
}

/// Looks for waits past their folder's timeout until the hub shuts down (or is gone).
pub(crate) fn spawn_sweeper(hub: Weak<Hub>, shutdown: tokio_util::sync::CancellationToken) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else { return };
    handle.spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // Waits that could not be timed out (their agent is gone, their state
        // unreadable): not tried again until they wait anew.
        let mut failed: HashSet<(String, u64)> = HashSet::new();
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
                let waits = hub.waits();
                // Only waits still waiting are remembered as failed.
                failed.retain(|(id, since)| waits.iter().any(|wait| wait.session_id == *id && wait.since_ms == *since));
                due(&waits, &timeouts, now_ms())
            };
            for (wait, _) in due {
                let tried = (wait.session_id.clone(), wait.since_ms);
                if failed.contains(&tried) {
                    continue;
                }
                let hub = hub.clone();
                let swept = tokio::task::spawn_blocking(move || hub.time_out(&wait.session_id)).await;
                if swept.unwrap_or(Swept::Failed) == Swept::Failed {
                    failed.insert(tried);
                }
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

    fn ids(due: Vec<(Wait, Timeout)>) -> Vec<String> {
        due.into_iter().map(|(wait, _)| wait.session_id).collect()
    }

    #[test]
    fn a_wait_is_due_once_its_folders_timeout_has_passed() {
        let timeouts = HashMap::from([
            (PathBuf::from("/a"), Timeout { secs: 60, set_at_ms: 0 }),
            (PathBuf::from("/b"), Timeout { secs: 1, set_at_ms: 0 }),
        ]);
        let waits = [wait("a1", "/a", 1_000), wait("b1", "/b", 1_000), wait("c1", "/c", 0)];
        assert!(due(&waits, &timeouts, 1_999).is_empty());
        assert_eq!(ids(due(&waits, &timeouts, 2_000)), ["b1"]);
        assert_eq!(ids(due(&waits, &timeouts, 61_000)), ["a1", "b1"]);
        assert_eq!(due(&waits, &timeouts, u64::MAX).len(), 2, "a folder without a timeout waits forever");
    }

    #[test]
    fn a_timeout_set_on_an_old_wait_counts_from_when_it_was_set() {
        let timeouts = HashMap::from([(PathBuf::from("/a"), Timeout { secs: 60, set_at_ms: 500_000 })]);
        let old = [wait("a1", "/a", 1_000)];
        assert!(due(&old, &timeouts, 500_000).is_empty(), "not answered the moment the timeout is set");
        assert!(due(&old, &timeouts, 559_999).is_empty());
        assert_eq!(ids(due(&old, &timeouts, 560_000)), ["a1"]);
        let newer = [wait("a2", "/a", 600_000)];
        assert_eq!(ids(due(&newer, &timeouts, 660_000)), ["a2"], "a later wait counts from its own start");
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
