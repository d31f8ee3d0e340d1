//! Which alerts a change of the hub's state gives: a pure function of two
//! snapshots of what the pages see (the sessions' statuses and the inbox).

use std::collections::BTreeMap;

use protocol::api::{ProjectsResponse, SessionStatus, WaitingList};
use protocol::devices::AlertKind;

/// What the alerts are derived from: every session's status, and every call
/// or question waiting on the user, keyed by (session, call id).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub sessions: BTreeMap<String, SessionView>,
    pub waiting: BTreeMap<(String, String), WaitingView>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionView {
    pub folder_path: String,
    pub title: Option<String>,
    pub status: SessionStatus,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingView {
    pub folder_path: String,
    pub tool_name: String,
    /// The command or file path, or the question.
    pub summary: String,
    pub question: bool,
}

/// Something the user may want to be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    pub folder_path: String,
    pub session_id: String,
    pub kind: AlertKind,
    /// The command or path on the card, the question, or how the turn ended.
    pub summary: String,
    /// The waiting call's id (a question's request id); none for a turn's end.
    pub tool_id: Option<String>,
    /// The waiting call's tool (`run_shell_command`, `write_file`, …).
    pub tool: Option<String>,
}

impl Snapshot {
    pub fn of(projects: &ProjectsResponse, waiting: &WaitingList) -> Self {
        let sessions = projects
            .projects
            .iter()
            .flat_map(|project| {
                project.sessions.iter().map(|session| {
                    let view = SessionView {
                        folder_path: project.folder_path.clone(),
                        title: session.title.clone(),
                        status: session.status,
                    };
                    (session.id.clone(), view)
                })
            })
            .collect();
        let waiting = waiting
            .waiting
            .iter()
            .map(|call| {
                let view = WaitingView {
                    folder_path: call.folder_path.clone(),
                    tool_name: call.tool_name.clone(),
                    summary: call.summary.clone(),
                    question: call.question,
                };
                ((call.session_id.clone(), call.tool_id.clone()), view)
            })
            .collect();
        Self { sessions, waiting }
    }
}

/// A turn is under way in these (waiting on the user included).
fn in_turn(status: SessionStatus) -> bool {
    matches!(status, SessionStatus::Running | SessionStatus::WaitingApproval | SessionStatus::WaitingInput)
}

/// The alerts that going from `old` to `new` gives: a call or question that
/// waits in `new` and did not in `old` (so one that keeps waiting is told once),
/// and a session whose turn ended (`done`) or failed (`error`) between them.
/// A session that is new in `new` has no turn that ended.
pub fn alerts(old: &Snapshot, new: &Snapshot) -> Vec<Alert> {
    let mut alerts = Vec::new();
    for ((session_id, tool_id), call) in &new.waiting {
        if old.waiting.contains_key(&(session_id.clone(), tool_id.clone())) {
            continue;
        }
        alerts.push(Alert {
            folder_path: call.folder_path.clone(),
            session_id: session_id.clone(),
            kind: if call.question { AlertKind::Question } else { AlertKind::Approval },
            summary: call.summary.clone(),
            tool_id: Some(tool_id.clone()),
            tool: Some(call.tool_name.clone()),
        });
    }
    for (session_id, session) in &new.sessions {
        let Some(before) = old.sessions.get(session_id) else { continue };
        let (kind, summary) = match session.status {
            SessionStatus::Idle if in_turn(before.status) => (AlertKind::Done, "The agent's turn ended."),
            SessionStatus::Error if before.status != SessionStatus::Error => {
                (AlertKind::Error, "The agent's turn ended with an error.")
            }
            _ => continue,
        };
        let summary = match &session.title {
            Some(title) => format!("{summary} ({title})"),
            None => summary.to_string(),
        };
        let folder_path = session.folder_path.clone();
        alerts.push(Alert { folder_path, session_id: session_id.clone(), kind, summary, tool_id: None, tool: None });
    }
    alerts
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use SessionStatus::*;

    fn snapshot(sessions: &[(&str, SessionStatus)], waiting: &[(&str, &str, &str, bool)]) -> Snapshot {
        Snapshot {
            sessions: sessions
                .iter()
                .map(|(id, status)| {
                    let view = SessionView { folder_path: "/p".into(), title: None, status: *status };
                    (id.to_string(), view)
                })
                .collect(),
            waiting: waiting
                .iter()
                .map(|(session, tool, summary, question)| {
                    let view = WaitingView {
                        folder_path: "/p".into(),
                        tool_name: "run_shell_command".into(),
                        summary: summary.to_string(),
                        question: *question,
                    };
                    ((session.to_string(), tool.to_string()), view)
                })
                .collect(),
        }
    }

    /// An alert as a row reads it: whose, what kind, its summary.
    type Told = (String, AlertKind, String);

    fn kinds(alerts: &[Alert]) -> Vec<Told> {
        alerts.iter().map(|alert| (alert.session_id.clone(), alert.kind, alert.summary.clone())).collect()
    }

    #[test]
    fn each_transition_gives_its_alert() {
        let idle = snapshot(&[("s", Idle)], &[]);
        let running = snapshot(&[("s", Running)], &[]);
        let card = snapshot(&[("s", WaitingApproval)], &[("s", "c1", "git push", false)]);
        let two = snapshot(&[("s", WaitingApproval)], &[("s", "c1", "git push", false), ("s", "c2", "/p/a.rs", false)]);
        let question = snapshot(&[("s", WaitingInput)], &[("s", "q1", "Which branch?", false)]);
        let question = Snapshot {
            waiting: question
                .waiting
                .into_iter()
                .map(|(key, view)| (key, WaitingView { question: true, ..view }))
                .collect(),
            ..question
        };
        let failed = snapshot(&[("s", Error)], &[]);
        let s = |kind, summary: &str| ("s".to_string(), kind, summary.to_string());
        let rows: Vec<(&str, &Snapshot, &Snapshot, Vec<Told>)> = vec![
            ("a turn starting says nothing", &idle, &running, vec![]),
            ("a card starting to wait names its command", &running, &card, vec![s(AlertKind::Approval, "git push")]),
            (
                "a second card of the same reply is told, the first not again",
                &card,
                &two,
                vec![s(AlertKind::Approval, "/p/a.rs")],
            ),
            ("a question is told", &running, &question, vec![s(AlertKind::Question, "Which branch?")]),
            ("a card decided says nothing", &card, &running, vec![]),
            ("a turn that ends is done", &running, &idle, vec![s(AlertKind::Done, "The agent's turn ended.")]),
            ("a card stopped ends the turn", &card, &idle, vec![s(AlertKind::Done, "The agent's turn ended.")]),
            (
                "a turn that fails is an error",
                &running,
                &failed,
                vec![s(AlertKind::Error, "The agent's turn ended with an error.")],
            ),
            ("an error that stays is told once", &failed, &failed, vec![]),
            ("a new prompt after an error says nothing", &failed, &running, vec![]),
        ];
        for (what, old, new, expected) in rows {
            assert_eq!(kinds(&alerts(old, new)), expected, "{what}");
        }
    }

    #[test]
    fn a_session_seen_first_has_no_turn_that_ended_but_its_cards_are_told() {
        let empty = Snapshot::default();
        assert!(alerts(&empty, &snapshot(&[("s", Idle)], &[])).is_empty());
        assert!(alerts(&empty, &snapshot(&[("s", Error)], &[])).is_empty());
        let card = snapshot(&[("s", WaitingApproval)], &[("s", "c1", "ls", false)]);
        assert_eq!(kinds(&alerts(&empty, &card)), [("s".to_string(), AlertKind::Approval, "ls".to_string())]);
    }

    #[test]
    fn the_title_names_the_session_whose_turn_ended() {
        let mut old = snapshot(&[("s", Running)], &[]);
        old.sessions.get_mut("s").unwrap().title = Some("fix the build".into());
        let mut new = old.clone();
        new.sessions.get_mut("s").unwrap().status = Idle;
        assert_eq!(alerts(&old, &new)[0].summary, "The agent's turn ended. (fix the build)");
    }

    fn status() -> impl Strategy<Value = SessionStatus> {
        prop_oneof![Just(Idle), Just(Running), Just(WaitingApproval), Just(WaitingInput), Just(Error)]
    }

    /// Random snapshots over two sessions and four call ids.
    fn any_snapshot() -> impl Strategy<Value = Snapshot> {
        (proptest::collection::vec(status(), 2), proptest::collection::vec(any::<bool>(), 8)).prop_map(
            |(statuses, waits)| {
                let ids = ["s0", "s1"];
                let sessions: Vec<(&str, SessionStatus)> = ids.iter().copied().zip(statuses).collect();
                let calls: Vec<(&str, &str, &str, bool)> = waits
                    .iter()
                    .enumerate()
                    .filter(|(_, waiting)| **waiting)
                    .map(|(index, _)| (ids[index % 2], ["c0", "c1", "c2", "c3"][index / 2], "cmd", false))
                    .collect();
                snapshot(&sessions, &calls)
            },
        )
    }

    proptest! {
        #[test]
        fn nothing_changed_tells_nothing(snap in any_snapshot()) {
            prop_assert!(alerts(&snap, &snap).is_empty());
        }

        /// Along any sequence of snapshots, a call is told exactly as often as
        /// it starts to wait: once while it keeps waiting, never while it does
        /// not; and a turn's end is told at most once per transition.
        #[test]
        fn a_waiting_call_is_told_once_per_wait(sequence in proptest::collection::vec(any_snapshot(), 1..12)) {
            let mut previous = Snapshot::default();
            for snap in &sequence {
                let told = alerts(&previous, snap);
                for key in snap.waiting.keys() {
                    let times = told.iter().filter(|a| a.session_id == key.0 && a.tool_id.as_deref() == Some(key.1.as_str())).count();
                    prop_assert_eq!(times, usize::from(!previous.waiting.contains_key(key)));
                }
                for alert in told.iter().filter(|alert| alert.tool_id.is_some()) {
                    let key = (alert.session_id.clone(), alert.tool_id.clone().unwrap());
                    prop_assert!(snap.waiting.contains_key(&key), "told a call that does not wait");
                }
                for id in snap.sessions.keys() {
                    let ends = told.iter().filter(|a| &a.session_id == id && a.tool_id.is_none()).count();
                    prop_assert!(ends <= 1);
                }
                previous = snap.clone();
            }
        }
    }
}
