//! Which sessions wait on the user, across folders, and the page title that
//! counts them. Pure: the inbox, the shortcuts and the page all read it.

use protocol::api::{ProjectSummary, SessionStatus};

/// The hub page's title with nothing waiting (the server's, before the page knows).
pub const HUB_TITLE: &str = "Agent Hub";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub folder_path: String,
    pub session_id: String,
    pub status: SessionStatus,
    pub pending_count: usize,
    pub updated_at: u64,
}

/// Sessions waiting on the user, the longest-waiting first.
pub fn waiting_sessions(projects: &[ProjectSummary]) -> Vec<Waiting> {
    let mut waiting: Vec<Waiting> = projects
        .iter()
        .flat_map(|project| {
            project
                .sessions
                .iter()
                .filter(|s| matches!(s.status, SessionStatus::WaitingApproval | SessionStatus::WaitingInput))
                .map(|session| Waiting {
                    folder_path: project.folder_path.clone(),
                    session_id: session.id.clone(),
                    status: session.status,
                    pending_count: session.pending_count,
                    updated_at: session.updated_at,
                })
        })
        .collect();
    waiting.sort_by(|a, b| a.updated_at.cmp(&b.updated_at).then_with(|| a.session_id.cmp(&b.session_id)));
    waiting
}

/// When the hub answers "no decision" for what waits in the session, as the
/// hub said (`None`: nothing waits, or the folder has no timeout).
pub fn deadline(projects: &[ProjectSummary], session_id: &str) -> Option<u64> {
    projects.iter().flat_map(|project| &project.sessions).find(|s| s.id == session_id)?.deadline_at
}

pub fn page_title(waiting: usize) -> String {
    if waiting == 0 {
        HUB_TITLE.to_string()
    } else {
        format!("({waiting}) {HUB_TITLE}")
    }
}

/// What is newly waiting since `before`: a session that was not waiting, or one
/// that waits again after it changed.
pub fn newly_waiting<'a>(before: &[Waiting], now: &'a [Waiting]) -> Vec<&'a Waiting> {
    now.iter()
        .filter(|item| !before.iter().any(|old| old.session_id == item.session_id && old.updated_at == item.updated_at))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::api::SessionSummary;

    fn session(id: &str, status: SessionStatus, updated_at: u64) -> SessionSummary {
        SessionSummary {
            id: id.into(),
            title: None,
            status,
            pending_count: 1,
            yolo_mode: false,
            updated_at,
            agent: None,
            waiting_since: None,
            deadline_at: None,
            branch: None,
        }
    }

    #[test]
    fn a_sessions_deadline_is_the_hubs() {
        let mut waiting = session("s", SessionStatus::WaitingApproval, 1);
        waiting.deadline_at = Some(65_000);
        let projects = vec![ProjectSummary { folder_path: "/a".into(), sessions: vec![waiting] }];
        assert_eq!(deadline(&projects, "s"), Some(65_000));
        assert_eq!(deadline(&projects, "other"), None);
    }

    #[test]
    fn only_sessions_waiting_on_the_user_across_folders_oldest_first() {
        let projects = vec![
            ProjectSummary {
                folder_path: "/a".into(),
                sessions: vec![
                    session("a1", SessionStatus::WaitingApproval, 30),
                    session("a2", SessionStatus::Running, 1),
                ],
            },
            ProjectSummary {
                folder_path: "/b".into(),
                sessions: vec![session("b1", SessionStatus::WaitingInput, 10), session("b2", SessionStatus::Idle, 2)],
            },
        ];
        let waiting = waiting_sessions(&projects);
        let ids: Vec<&str> = waiting.iter().map(|w| w.session_id.as_str()).collect();
        assert_eq!(ids, ["b1", "a1"]);
        assert_eq!(waiting[1].folder_path, "/a");
        assert_eq!(page_title(waiting.len()), "(2) Agent Hub");
        assert_eq!(page_title(0), "Agent Hub");
    }

    #[test]
    fn new_means_newly_waiting_or_waiting_again() {
        let item = |id: &str, at| Waiting {
            folder_path: "/a".into(),
            session_id: id.into(),
            status: SessionStatus::WaitingApproval,
            pending_count: 1,
            updated_at: at,
        };
        let before = vec![item("a", 1), item("b", 1)];
        let now = vec![item("a", 1), item("b", 5), item("c", 2)];
        let new: Vec<&str> = newly_waiting(&before, &now).iter().map(|w| w.session_id.as_str()).collect();
        assert_eq!(new, ["b", "c"]);
        assert!(newly_waiting(&now, &now).is_empty());
    }
}
