//! A running call's output on the page as it comes: `tool_output` events for
//! one call, from the built-in agent's commands and the terminals ACP agents
//! open. The result still carries what the model gets; this is only the view.

use std::sync::{Arc, Mutex};

use protocol::events::{AgentEvent, OutputStream};

use super::log::EventLog;

/// How much of one call's output is shown live; the rest is in its result.
pub const LIVE_LIMIT: usize = 256 * 1024;

/// Turns one call's output pieces into `tool_output` events.
pub struct LiveOutput {
    log: Arc<EventLog>,
    tool_id: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The start of a character a piece cut in two, per stream.
    carry: [Vec<u8>; 2],
    shown: usize,
    cut: bool,
}

impl LiveOutput {
    pub fn new(log: Arc<EventLog>, tool_id: &str) -> Self {
        Self { log, tool_id: tool_id.to_string(), state: Mutex::new(State::default()) }
    }

    /// Shows a piece of output (whole characters only: a character split
    /// between two pieces is shown with the second).
    pub fn push(&self, stream: OutputStream, piece: &[u8]) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if state.cut {
            return;
        }
        let slot = usize::from(stream == OutputStream::Stderr);
        let mut bytes = std::mem::take(&mut state.carry[slot]);
        bytes.extend_from_slice(piece);
        let whole = whole_characters(&bytes);
        state.carry[slot] = bytes.split_off(whole);
        let room = LIVE_LIMIT.saturating_sub(state.shown);
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if text.len() > room {
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.push_str("\n[live output stops here; the result has the rest]\n");
            state.cut = true;
        }
        if text.is_empty() {
            return;
        }
        state.shown += text.len();
        self.log.push(AgentEvent::ToolOutput { tool_id: self.tool_id.clone(), stream, text });
    }
}

/// How many leading bytes of `bytes` end on a character boundary: all but an
/// incomplete UTF-8 sequence at the end (invalid bytes count as whole: they
/// show as U+FFFD).
fn whole_characters(bytes: &[u8]) -> usize {
    let tail = bytes.len().saturating_sub(3);
    for start in (tail..bytes.len()).rev() {
        let lead = bytes[start];
        let needs = match lead {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            0x80..=0xBF => continue,
            _ => return bytes.len(),
        };
        return if bytes.len() - start < needs { start } else { bytes.len() };
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(log: &EventLog) -> Vec<(OutputStream, String)> {
        log.all()
            .into_iter()
            .filter_map(|event| match event.event {
                AgentEvent::ToolOutput { stream, text, .. } => Some((stream, text)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_character_split_between_pieces_is_shown_whole() {
        let log = Arc::new(EventLog::default());
        let live = LiveOutput::new(log.clone(), "t1");
        let word = "héllo ✓".as_bytes();
        // Cut inside "é" (2 bytes) and inside "✓" (3 bytes).
        live.push(OutputStream::Stdout, &word[..2]);
        live.push(OutputStream::Stdout, &word[2..8]);
        live.push(OutputStream::Stderr, b"err");
        live.push(OutputStream::Stdout, &word[8..]);
        let joined: String = shown(&log)
            .iter()
            .filter(|(stream, _)| *stream == OutputStream::Stdout)
            .map(|(_, text)| text.as_str())
            .collect();
        assert_eq!(joined, "héllo ✓");
        assert!(!joined.contains('\u{FFFD}'));
        assert!(shown(&log).contains(&(OutputStream::Stderr, "err".to_string())));
    }

    #[test]
    fn output_past_the_limit_is_cut_once_with_a_note() {
        let log = Arc::new(EventLog::default());
        let live = LiveOutput::new(log.clone(), "t1");
        let piece = vec![b'x'; 100 * 1024];
        for _ in 0..5 {
            live.push(OutputStream::Stdout, &piece);
        }
        let events = shown(&log);
        assert_eq!(events.len(), 3, "two whole pieces and the cut one; nothing after");
        let total: usize = events.iter().map(|(_, text)| text.matches('x').count()).sum();
        assert_eq!(total, LIVE_LIMIT);
        assert!(events[2].1.ends_with("the result has the rest]\n"));
    }

    #[test]
    fn whole_characters_keeps_only_an_unfinished_sequence_back() {
        assert_eq!(whole_characters(b"abc"), 3);
        assert_eq!(whole_characters(&"é".as_bytes()[..1]), 0);
        assert_eq!(whole_characters("aé".as_bytes()), 3);
        assert_eq!(whole_characters(&"a✓".as_bytes()[..3]), 1);
        assert_eq!(whole_characters(b"\xff\xfe"), 2, "invalid bytes are not held back");
    }
}
