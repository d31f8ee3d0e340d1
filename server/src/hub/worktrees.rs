//! Isolated sessions' worktrees as the API sees them: whether a folder can
//! have one, the session's change against its base, Apply, Commit and
//! Discard (see `crate::worktrees`). Git runs in the caller's blocking task.

use protocol::api::{WorktreeDone, WorktreeStatus};

use super::user_actions::UserAction;
use super::{Hub, HubError, HubResult};
use crate::agents::AgentError;
use crate::worktrees::{Worktree, WorktreeError, Worktrees};

impl Hub {
    pub(super) fn worktrees_or_off(&self) -> HubResult<&std::sync::Arc<Worktrees>> {
        self.worktrees.as_ref().ok_or(HubError::Worktree(WorktreeError::Off))
    }

    /// Whether a new session in `folder` may be isolated: a git repository
    /// with a commit, and a hub that keeps worktrees (blocking).
    pub fn can_isolate(&self, folder: &std::path::Path) -> bool {
        self.worktrees.as_ref().is_some_and(|worktrees| worktrees.can_isolate(folder))
    }

    /// The session's worktree; 404 for no session, 400 for one not isolated.
    fn worktree_of(&self, session_id: &str) -> HubResult<Worktree> {
        let session = self.session(session_id).ok_or_else(|| AgentError::NoSession(session_id.to_string()))?;
        session.worktree.ok_or_else(|| HubError::Worktree(WorktreeError::NotIsolated(session_id.to_string())))
    }

    /// Refused while a turn of the session is under way: its agent writes there.
    fn idle_for_worktree(&self, session_id: &str) -> HubResult<()> {
        self.idle_session(session_id, "A turn is under way in this session: wait for its end (or stop it).").map(drop)
    }

    /// Runs `act` (Apply, Commit, Discard: the user's) with its decision in
    /// the audit trail before (`toolName` `worktree_<what>`) and its outcome
    /// after: `ran`, `skipped` (refused: a conflict, nothing to commit) or `failed`.
    fn audited<T>(
        &self,
        session_id: &str,
        worktree: &Worktree,
        what: &str,
        act: impl FnOnce() -> Result<T, WorktreeError>,
    ) -> HubResult<T> {
        let folder = self.session(session_id).map(|session| session.folder).unwrap_or_default();
        let action = UserAction {
            session_id,
            folder: &folder,
            tool_name: &format!("worktree_{what}"),
            summary: format!("{} ({})", worktree.branch, worktree.path.display()),
        };
        let refused = |err: &WorktreeError| {
            matches!(err, WorktreeError::Conflict(_) | WorktreeError::Invalid(_) | WorktreeError::Missing(_))
        };
        Ok(self.audited_action(action, act, refused)?)
    }

    /// `GET /api/sessions/{id}/worktree` (blocking).
    pub fn worktree_status(&self, session_id: &str) -> HubResult<WorktreeStatus> {
        let worktree = self.worktree_of(session_id)?;
        // One deleted by hand is said (`missing`), with no files.
        let files = match worktree.exists() {
            true => self.worktrees_or_off()?.files(&worktree)?,
            false => Vec::new(),
        };
        Ok(WorktreeStatus { worktree: worktree.info(), files })
    }

    /// `POST /api/sessions/{id}/worktree/apply` (blocking). Not while a turn
    /// of a session working in the folder's repository (not isolated) is
    /// under way either: its tools would write while the change is applied.
    pub fn apply_worktree(&self, session_id: &str) -> HubResult<WorktreeDone> {
        let worktree = self.worktree_of(session_id)?;
        self.idle_for_worktree(session_id)?;
        self.no_other_turn_around(
            session_id,
            &worktree.top,
            "A turn of another session in this folder is under way: apply once it has ended (or stop it).",
        )?;
        let worktrees = self.worktrees_or_off()?;
        let applied = self.audited(session_id, &worktree, "apply", || worktrees.apply(&worktree))?;
        tracing::info!(session = session_id, files = applied.len(), "a worktree was applied to its folder");
        Ok(WorktreeDone { applied, commit: None })
    }

    /// `POST /api/sessions/{id}/worktree/commit` (blocking).
    pub fn commit_worktree(&self, session_id: &str, message: &str) -> HubResult<WorktreeDone> {
        let worktree = self.worktree_of(session_id)?;
        self.idle_for_worktree(session_id)?;
        let worktrees = self.worktrees_or_off()?;
        let commit = self.audited(session_id, &worktree, "commit", || worktrees.commit(&worktree, message))?;
        self.projects_changed();
        Ok(WorktreeDone { applied: Vec::new(), commit: Some(commit) })
    }

    /// `POST /api/sessions/{id}/worktree/discard` (blocking).
    pub fn discard_worktree(&self, session_id: &str) -> HubResult<WorktreeDone> {
        let worktree = self.worktree_of(session_id)?;
        self.idle_for_worktree(session_id)?;
        let worktrees = self.worktrees_or_off()?;
        self.audited(session_id, &worktree, "discard", || worktrees.discard(&worktree))?;
        Ok(WorktreeDone { applied: Vec::new(), commit: None })
    }
}
