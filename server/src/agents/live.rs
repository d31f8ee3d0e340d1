//! A running call's output on the page as it comes: `tool_output` events for
//! one call, from the built-in agent's commands and the terminals ACP agents
//! open. The result still carries what the model gets; this is only the view.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use protocol::events::{AgentEvent, OutputStream};

use super::log::EventLog;

/// How much of one call's output is shown live; the rest is in its result.
pub const LIVE_LIMIT: usize = 256 * 1024;

/// How long output waits to be sent with what follows it: a command that
/// prints a byte at a time makes a few events a second, not one a byte.
const GATHER: Duration = Duration::from_millis(50);
/// How much output waits at most before it is sent.
const GATHER_BYTES: usize = 8 * 1024;

/// Turns one call's output pieces into `tool_output` events.
pub struct LiveOutput {
    log: Arc<EventLog>,
    tool_id: String,
    state: Mutex<State>,
}

struct State {
    /// The start of a character a piece cut in two, per stream.
    carry: [Vec<u8>; 2],
    /// Text not sent yet, of one stream.
    gathered: Option<(OutputStream, String)>,
    sent_at: Instant,
    /// A send of what is gathered is due (a quiet command's last output is
    /// not held back for the next).
    due: bool,
    shown: usize,
    cut: bool,
}

impl LiveOutput {
    pub fn new(log: Arc<EventLog>, tool_id: &str) -> Self {
        let state = State {
            carry: Default::default(),
            gathered: None,
            sent_at: Instant::now(),
            due: false,
            shown: 0,
            cut: false,
        };
        Self { log, tool_id: tool_id.to_string(), state: Mutex::new(state) }
    }

    /// Takes a piece of output (whole characters only: a character split
    /// between two pieces goes with the second); an empty piece means the
    /// command has ended, and everything gathered is sent.
    pub fn push(self: &Arc<Self>, stream: OutputStream, piece: &[u8]) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if piece.is_empty() {
            self.send(&mut state);
            return;
        }
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
        if state.gathered.as_ref().is_some_and(|(gathered, _)| *gathered != stream) {
            self.send(&mut state);
        }
        state.gathered.get_or_insert_with(|| (stream, String::new())).1.push_str(&text);
        let full = state.gathered.as_ref().is_some_and(|(_, text)| text.len() >= GATHER_BYTES);
        if full || state.cut || state.sent_at.elapsed() >= GATHER {
            self.send(&mut state);
        } else if !state.due {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                state.due = true;
                let this = self.clone();
                runtime.spawn(async move {
                    tokio::time::sleep(GATHER).await;
                    let mut state = this.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                    this.send(&mut state);
                });
            }
        }
    }

    fn send(&self, state: &mut State) {
        state.sent_at = Instant::now();
        state.due = false;
        if let Some((stream, text)) = state.gathered.take() {
            self.log.push(AgentEvent::ToolOutput { tool_id: self.tool_id.clone(), stream, text });
        }
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
        let live = Arc::new(LiveOutput::new(log.clone(), "t1"));
        let word = "héllo ✓".as_bytes();
        // Cut inside "é" (2 bytes) and inside "✓" (3 bytes).
        live.push(OutputStream::Stdout, &word[..2]);
        live.push(OutputStream::Stdout, &word[2..8]);
        live.push(OutputStream::Stderr, b"err");
        live.push(OutputStream::Stdout, &word[8..]);
        live.push(OutputStream::Stdout, &[]);
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
        let live = Arc::new(LiveOutput::new(log.clone(), "t1"));
        let piece = vec![b'x'; 100 * 1024];
        for _ in 0..5 {
            live.push(OutputStream::Stdout, &piece);
        }
        live.push(OutputStream::Stdout, &[]);
        let events = shown(&log);
        assert_eq!(events.len(), 3, "two whole pieces and the cut one; nothing after");
        let total: usize = events.iter().map(|(_, text)| text.matches('x').count()).sum();
        assert_eq!(total, LIVE_LIMIT);
        assert!(events[2].1.ends_with("the result has the rest]\n"));
    }

    #[tokio::test]
    async fn a_quiet_commands_last_output_is_sent_soon_without_more() {
        let log = Arc::new(EventLog::default());
        let live = Arc::new(LiveOutput::new(log.clone(), "t1"));
        live.push(OutputStream::Stdout, b"a");
        live.push(OutputStream::Stdout, b"b");
        tokio::time::sleep(GATHER * 4).await;
        assert_eq!(shown(&log).iter().map(|(_, text)| text.as_str()).collect::<String>(), "ab");
    }

    #[test]
    fn small_pieces_are_gathered_and_sent_at_the_end_in_order() {
        let log = Arc::new(EventLog::default());
        let live = Arc::new(LiveOutput::new(log.clone(), "t1"));
        for _ in 0..1000 {
            live.push(OutputStream::Stdout, b"x");
        }
        live.push(OutputStream::Stderr, b"e");
        live.push(OutputStream::Stdout, b"y");
        assert!(shown(&log).len() < 10, "a byte at a time is not an event a byte: {}", shown(&log).len());
        live.push(OutputStream::Stdout, &[]);
        let events = shown(&log);
        let out: String = events.iter().filter(|(s, _)| *s == OutputStream::Stdout).map(|(_, t)| t.as_str()).collect();
        assert_eq!(out, format!("{}y", "x".repeat(1000)));
        let order: Vec<OutputStream> = events.iter().map(|(stream, _)| *stream).collect();
        let stderr_at = order.iter().position(|s| *s == OutputStream::Stderr).unwrap();
        assert_eq!(order[stderr_at + 1..], [OutputStream::Stdout], "the stderr piece stays between: {order:?}");
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
