//! A folder's sessions: created, renamed and deleted. The list itself comes
//! with `/api/projects` ([`super::projects`]).

use super::{send_for_status, send_json, HubError};
use protocol::api::{
    CreateSessionRequest, FolderGit, RenameSessionRequest, SessionSummary, WorktreeCommitRequest, WorktreeDone,
    WorktreeStatus,
};

fn session_url(id: &str) -> String {
    format!("/api/sessions/{}", urlencoding::encode(id))
}

/// A new session in the folder, untitled until its first prompt unless `title`
/// names it, working with `agent` (else the folder's last choice);
/// `isolated`: in a git worktree of its own.
pub async fn create(
    folder_path: &str,
    title: Option<String>,
    agent: Option<String>,
    isolated: bool,
) -> Result<SessionSummary, HubError> {
    let body = CreateSessionRequest { folder_path: folder_path.to_string(), title, agent, isolated };
    send_json("POST", "/api/sessions", Some(&body)).await
}

pub async fn rename(id: &str, title: &str) -> Result<SessionSummary, HubError> {
    send_json("PATCH", &session_url(id), Some(&RenameSessionRequest { title: title.to_string() })).await
}

/// Deletes the session; without `force` the hub refuses while a turn runs or
/// a card waits (its message says which).
pub async fn delete(id: &str, force: bool) -> Result<(), HubError> {
    let url = if force { format!("{}?force=true", session_url(id)) } else { session_url(id) };
    send_for_status("DELETE", &url).await
}

/// Whether a new session in the folder may be isolated (a git repository with a commit).
pub async fn folder_git(folder_path: &str) -> Result<FolderGit, HubError> {
    super::get_json(&format!("/api/folders/git?folderPath={}", urlencoding::encode(folder_path))).await
}

/// An isolated session's worktree and its files against its base.
pub async fn worktree(id: &str) -> Result<WorktreeStatus, HubError> {
    super::get_json(&format!("{}/worktree", session_url(id))).await
}

/// `apply`, `commit` (with `message`) or `discard` the session's worktree.
pub async fn worktree_act(id: &str, what: &str, message: String) -> Result<WorktreeDone, HubError> {
    send_json("POST", &format!("{}/worktree/{what}", session_url(id)), Some(&WorktreeCommitRequest { message })).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_encoded_in_the_url() {
        assert_eq!(session_url("a b/c"), "/api/sessions/a%20b%2Fc");
    }
}
