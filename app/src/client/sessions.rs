//! A folder's sessions: created, renamed and deleted. The list itself comes
//! with `/api/projects` ([`super::projects`]).

use super::{send_for_status, send_json, HubError};
use protocol::api::{CreateSessionRequest, RenameSessionRequest, SessionSummary};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_encoded_in_the_url() {
        assert_eq!(session_url("a b/c"), "/api/sessions/a%20b%2Fc");
    }
}
