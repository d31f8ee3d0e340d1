//! A folder's sessions as the user manages them: created with a fresh id,
//! titled (by the user, else by the first prompt), and deleted with all they
//! stored but their audit rows.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use protocol::api::{ChatConfig, CreatedSession, SessionDeleted, SessionStatus, SessionSummary};
use protocol::events::{AgentEvent, ResultStatus};

use super::{now_ms, Hub, HubError, HubResult};
use crate::agents::log::until_turn_pauses;
use crate::agents::SessionRuntime;
use crate::folder::canonical_folder;
use crate::registry::{checked_title, Session, YoloState};
use crate::session::Occupied;

/// How long a forced delete waits for a stopped turn to end (its running
/// command killed) before the session goes regardless.
const STOP_WAIT: Duration = Duration::from_secs(5);

/// Deleting would cut short what the session does.
fn occupied(occupied: Occupied) -> HubError {
    HubError::Occupied(occupied.describe().to_string())
}

/// A session id nobody chose: 128 random bits in hex.
fn random_session_id() -> HubResult<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|err| HubError::Internal(format!("No random id for the session: {err}.")))?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

impl Hub {
    /// `GET /api/chat/config`: the session's config, read only. A session that
    /// does not exist yet is answered with what it would start with (the
    /// folder's settings, its next agent), and is not made: a GET changes nothing.
    pub fn peek_config(&self, folder_path: &str, session_id: Option<&str>) -> HubResult<ChatConfig> {
        let folder = canonical_folder(folder_path)?;
        let new_id = match self.registry().peek(&folder, session_id)? {
            Ok(session) => return Ok(self.config_of(session)),
            Err(id) => id,
        };
        // Outside the registry's lock: the settings file is read, PATH looked at.
        let agent = self.folder_agent(&folder);
        let now = now_ms();
        let session = Session {
            id: new_id,
            folder: folder.clone(),
            status: SessionStatus::Idle,
            pending_count: 0,
            yolo: YoloState::from_settings(self.folder_settings(&folder)),
            title: None,
            agent,
            created_at_ms: now,
            updated_at_ms: now,
            waiting_since_ms: None,
            worktree: None,
        };
        Ok(self.config_of(&session))
    }

    /// `POST /api/sessions`: a new session in the folder, its settings read as
    /// for any new session, working with `agent` (else the folder's last
    /// choice); `isolated`: in a git worktree of its own (blocking: git runs).
    /// A bad title, folder or agent, or a folder without a git commit for an
    /// isolated one, changes nothing.
    pub fn create_session(
        &self,
        folder_path: &str,
        title: Option<&str>,
        agent: Option<&str>,
        isolated: bool,
    ) -> HubResult<CreatedSession> {
        let title = title.map(checked_title).transpose()?;
        let mut id = random_session_id()?;
        while self.registry().get(&id).is_some() {
            id = random_session_id()?;
        }
        let worktree = match isolated {
            false => None,
            true => {
                let folder = canonical_folder(folder_path)?;
                // The agent is checked before anything is made in the repository.
                let choice = self.registry().last_agent_in(&folder).map(str::to_string);
                self.agents.for_new_session(agent, choice.as_deref())?;
                let worktrees = self.worktrees_or_off()?;
                Some(worktrees.create(&folder, &id, title.as_deref())?)
            }
        };
        let made = worktree.clone();
        let result = self.with_session_tries(
            folder_path,
            Some(&id),
            agent,
            worktree,
            |session| {
                if title.is_some() {
                    session.title = title;
                    self.persist(session);
                }
                let worktree = session.worktree.as_ref().map(crate::worktrees::Worktree::info);
                Ok(CreatedSession { summary: self.summary_of(session), worktree })
            },
            1,
        );
        if let (Err(_), Some(made), Some(worktrees)) = (&result, made, &self.worktrees) {
            // Nothing is left of a session that was not made.
            if let Err(err) = worktrees.remove(&made) {
                tracing::warn!(path = %made.path.display(), "a worktree made for a refused session stays: {err}");
            }
        }
        result
    }

    /// `PATCH /api/sessions/{id}`: the user's title for the session.
    pub fn rename_session(&self, id: &str, title: &str) -> HubResult<SessionSummary> {
        let title = checked_title(title)?;
        let summary = {
            let mut registry = self.registry();
            let session =
                registry.rename(id, title).ok_or_else(|| HubError::NotFound(format!("No session with id '{id}'.")))?;
            self.persist(session);
            self.summary_of(session)
        };
        self.projects_changed();
        Ok(summary)
    }

    fn summary_of(&self, session: &crate::registry::Session) -> SessionSummary {
        SessionSummary { agent: Some(self.agent_ref(&session.agent)), ..session.summary() }
    }

    /// A prompt started a turn: a session without a title takes it from the prompt.
    pub fn note_prompt(&self, id: &str, prompt: &str) {
        let titled = {
            let mut registry = self.registry();
            registry.note_prompt(id, prompt).inspect(|session| self.persist(session)).is_some()
        };
        if titled {
            self.projects_changed();
        }
    }

    /// `DELETE /api/sessions/{id}`: the session goes from memory and from the
    /// store (its row, events, pending calls and agent state; its audit rows
    /// stay), and its checkpoints' refs with it. A running turn or a waiting card refuses it (409 `session_busy`)
    /// unless `force`, which stops the turn as Stop does first. An ACP agent's
    /// process ends with its whole group.
    pub async fn delete_session(
        self: &Arc<Self>,
        runtime: Arc<SessionRuntime>,
        force: bool,
    ) -> HubResult<Option<SessionDeleted>> {
        let why = runtime.state().machine.occupied();
        if let Some(why) = why {
            if !force {
                return Err(occupied(why));
            }
            self.stop_for_delete(&runtime).await;
        }
        let worktree = self.session(&runtime.id).and_then(|session| session.worktree);
        // The worktree goes first: should it fail, the session stays (and names
        // it), to be deleted again, never a worktree and branch nothing knows
        // of; with `force` the session goes anyway, and the answer says so.
        let deleted = match (worktree, self.worktrees.clone()) {
            (Some(worktree), Some(worktrees)) => match self.remove_worktree(&runtime.id, worktree, worktrees).await {
                Ok(deleted) => Some(deleted),
                Err(err) if !force => return Err(err),
                Err(_) => Some(SessionDeleted { branch_kept: None, worktree_removed: false }),
            },
            _ => None,
        };
        self.forget(&runtime, force)?;
        if let Some(checkpoints) = self.checkpoints.clone() {
            // Its checkpoints go too: a default session made anew starts without them.
            let (folder, id) = (runtime.root.clone(), runtime.id.clone());
            match tokio::task::spawn_blocking(move || checkpoints.forget(&folder, &id)).await {
                Ok(Ok(())) => {}
                Ok(Err(err)) => tracing::warn!(session = %runtime.id, "its checkpoints were not removed: {err}"),
                Err(err) => tracing::warn!(session = %runtime.id, "its checkpoints were not removed: {err}"),
            }
        }
        self.projects_changed();
        let Some(store) = &self.store else { return Ok(deleted) };
        store.flush_session(&runtime.id).await.map_err(|err| {
            HubError::StoreFailed(format!(
                "The session is gone from the hub, but the database could not record it ({err}): it may come back after a restart."
            ))
        })?;
        Ok(deleted)
    }

    /// A deleted session's worktree goes, and its branch unless it has
    /// commits; a failure is the deletion's (the session stays).
    async fn remove_worktree(
        &self,
        id: &str,
        worktree: crate::worktrees::Worktree,
        worktrees: Arc<crate::worktrees::Worktrees>,
    ) -> HubResult<SessionDeleted> {
        match tokio::task::spawn_blocking(move || worktrees.remove(&worktree)).await {
            Ok(Ok(removed)) => Ok(SessionDeleted { branch_kept: removed.branch_kept, worktree_removed: true }),
            Ok(Err(err)) => {
                tracing::warn!(session = id, "its worktree was not removed, so the session stays: {err}");
                Err(err.into())
            }
            Err(err) => Err(HubError::Internal(format!("the worktree's removal failed: {err}"))),
        }
    }

    /// Stops the session's turn as Stop does (cards answered as stopped, in
    /// the audit trail too); a built-in agent's running turn is given a moment
    /// to end, its command killed. An ACP agent's process ends with the session.
    async fn stop_for_delete(self: &Arc<Self>, runtime: &Arc<SessionRuntime>) {
        match crate::agents::cancel(&self.port(), runtime).await {
            Ok(after) if self.agent_of(&runtime.id).is_ok_and(|agent| agent.is_builtin()) => {
                let ended = until_turn_pauses(runtime.log.clone(), after).for_each(|_| std::future::ready(()));
                if tokio::time::timeout(STOP_WAIT, ended).await.is_err() {
                    tracing::warn!(session = %runtime.id, "the stopped turn had not ended; deleting the session anyway");
                }
            }
            Ok(_) => {}
            // It ended meanwhile: nothing to stop.
            Err(err) => tracing::debug!(session = %runtime.id, "not stopped before deleting: {err}"),
        }
    }

    /// Takes the session out of the hub: nothing more of it is saved or
    /// started, then it leaves the registry and memory. Under the session's
    /// lock, so a turn cannot slip in between the check and the removal.
    fn forget(&self, runtime: &SessionRuntime, force: bool) -> HubResult<()> {
        let mut state = runtime.state();
        let was_running = runtime.detach(&mut state, force).map_err(occupied)?;
        if let Some(stop) = &state.agent.builtin.stop {
            stop.cancel();
        }
        crate::agents::acp::end_process(&mut state.agent);
        if was_running {
            // Whoever still reads its live events hears that it ended (kept in memory only).
            runtime.log.push(AgentEvent::Result { status: ResultStatus::Cancelled, pending: None });
        }
        // Both under the registry's lock: a runtime being read from the store
        // meanwhile is not kept (see `try_runtime`).
        let mut registry = self.registry();
        registry.remove(&runtime.id);
        self.runtimes().remove(&runtime.id);
        // Queued under the lock too, after every row saved under it: a default
        // session made anew right after keeps its own new row.
        if let Some(store) = &self.store {
            store.delete_session(&runtime.id);
        }
        Ok(())
    }
}
