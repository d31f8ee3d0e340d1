//! What a session's calls wrote, read from its event log: a call counts once
//! it succeeded, with the diff its `tool_result` carries (what was really
//! written, e.g. the user's version) or else the last diff it was shown with.
//! A rejected, skipped or failed call wrote nothing.

use std::collections::HashMap;

use protocol::changes::ChangeKind;
use protocol::events::{AgentEvent, FileDiff, SeqEvent, ToolStatus};

/// One file as the session left it, before texts are bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub path: String,
    /// The text before the first write.
    pub old_text: String,
    /// The text after the last write.
    pub new_text: String,
    pub tool_id: String,
    pub seq: u64,
    pub writes: usize,
}

impl Written {
    /// Created when there was nothing before; deleted when nothing is left and
    /// the file is gone (`exists` looks on disk); modified otherwise.
    pub fn kind(&self, exists: impl FnOnce(&str) -> bool) -> ChangeKind {
        if self.new_text.is_empty() && !exists(&self.path) {
            ChangeKind::Deleted
        } else if self.old_text.is_empty() {
            ChangeKind::Created
        } else {
            ChangeKind::Modified
        }
    }
}

/// Every file the events show written, the most recently written first.
pub fn written_files(events: &[SeqEvent]) -> Vec<Written> {
    let mut shown: HashMap<&str, &FileDiff> = HashMap::new();
    let mut files: Vec<Written> = Vec::new();
    for event in events {
        match &event.event {
            AgentEvent::ToolUse { tool_id, diff: Some(diff), .. }
            | AgentEvent::ToolUpdate { tool_id, diff: Some(diff), .. } => {
                shown.insert(tool_id, diff);
            }
            AgentEvent::ToolResult { tool_id, status: ToolStatus::Success, diff, .. } => {
                let Some(diff) = diff.as_ref().or_else(|| shown.get(tool_id.as_str()).copied()) else { continue };
                match files.iter_mut().find(|file| file.path == diff.path) {
                    Some(file) => {
                        file.new_text.clone_from(&diff.new_text);
                        file.tool_id.clone_from(tool_id);
                        file.seq = event.seq;
                        file.writes += 1;
                    }
                    None => files.push(Written {
                        path: diff.path.clone(),
                        old_text: diff.old_text.clone(),
                        new_text: diff.new_text.clone(),
                        tool_id: tool_id.clone(),
                        seq: event.seq,
                        writes: 1,
                    }),
                }
            }
            _ => {}
        }
    }
    files.sort_by_key(|file| std::cmp::Reverse(file.seq));
    files
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::events::ToolKind;
    use serde_json::json;

    fn diff(path: &str, old: &str, new: &str) -> Option<FileDiff> {
        Some(FileDiff { path: path.into(), old_text: old.into(), new_text: new.into() })
    }

    fn tool_use(id: &str, diff: Option<FileDiff>) -> AgentEvent {
        AgentEvent::ToolUse {
            tool_name: "write_file".into(),
            tool_id: id.into(),
            parameters: json!({}),
            kind: ToolKind::Edit,
            diff,
            policy: None,
        }
    }

    fn result(id: &str, status: ToolStatus, diff: Option<FileDiff>) -> AgentEvent {
        AgentEvent::ToolResult { tool_id: id.into(), status, output: None, error: None, diff }
    }

    fn logged(events: Vec<AgentEvent>) -> Vec<SeqEvent> {
        events.into_iter().zip(1..).map(|(event, seq)| SeqEvent { event, seq }).collect()
    }

    #[test]
    fn only_calls_that_ran_count_and_writes_of_one_file_collapse() {
        let events = logged(vec![
            tool_use("a", diff("a.txt", "one\n", "two\n")),
            result("a", ToolStatus::Success, None),
            tool_use("rejected", diff("r.txt", "", "never\n")),
            result("rejected", ToolStatus::Skipped, None),
            tool_use("failed", diff("f.txt", "x", "y")),
            result("failed", ToolStatus::Error, None),
            tool_use("new", diff("n.txt", "", "fresh\n")),
            result("new", ToolStatus::Success, None),
            // The user's own version is what was written.
            tool_use("b", diff("a.txt", "two\n", "three\n")),
            result("b", ToolStatus::Success, diff("a.txt", "two\n", "mine\n")),
            tool_use("shell", None),
            result("shell", ToolStatus::Success, None),
        ]);
        let files = written_files(&events);
        let summary: Vec<_> =
            files.iter().map(|f| (f.path.as_str(), f.old_text.as_str(), f.new_text.as_str(), f.writes)).collect();
        assert_eq!(summary, [("a.txt", "one\n", "mine\n", 2), ("n.txt", "", "fresh\n", 1)]);
        assert_eq!((files[0].tool_id.as_str(), files[0].seq), ("b", 10));
    }

    #[test]
    fn a_later_description_of_the_call_wins() {
        let events = logged(vec![
            tool_use("c", None),
            AgentEvent::ToolUpdate {
                tool_id: "c".into(),
                tool_name: "Edit".into(),
                parameters: json!({}),
                kind: ToolKind::Edit,
                diff: diff("p.rs", "fn a() {}\n", "fn b() {}\n"),
                choices: None,
                policy: None,
            },
            result("c", ToolStatus::Success, None),
        ]);
        assert_eq!(written_files(&events)[0].new_text, "fn b() {}\n");
    }

    #[test]
    fn kinds() {
        let file = |old: &str, new: &str| Written {
            path: "x".into(),
            old_text: old.into(),
            new_text: new.into(),
            tool_id: "t".into(),
            seq: 1,
            writes: 1,
        };
        let rows = [
            ("", "new\n", true, ChangeKind::Created),
            ("old\n", "new\n", true, ChangeKind::Modified),
            ("old\n", "", true, ChangeKind::Modified),
            ("old\n", "", false, ChangeKind::Deleted),
        ];
        for (old, new, exists, expected) in rows {
            assert_eq!(file(old, new).kind(|_| exists), expected, "{old:?} → {new:?}, on disk: {exists}");
        }
    }
}
