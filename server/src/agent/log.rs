//! A session's event log: every event gets the next `seq` here, and readers
//! (prompt streams, decision continuations, replays) read from the log, so a slow
//! or reconnecting reader can neither miss an event nor see one twice.

use std::sync::{Arc, Mutex, MutexGuard};

use app::events::{AgentEvent, SeqEvent};
use futures::{Stream, StreamExt};
use tokio::sync::watch;

pub struct EventLog {
    events: Mutex<Vec<SeqEvent>>,
    /// The latest seq, for readers waiting on more.
    latest: watch::Sender<u64>,
}

impl Default for EventLog {
    fn default() -> Self {
        Self { events: Mutex::default(), latest: watch::channel(0).0 }
    }
}

impl EventLog {
    fn events(&self) -> MutexGuard<'_, Vec<SeqEvent>> {
        self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends an event; seq starts at 1 and increases by one.
    pub fn push(&self, event: AgentEvent) -> u64 {
        let seq = {
            let mut events = self.events();
            let seq = events.len() as u64 + 1;
            events.push(SeqEvent { event, seq });
            seq
        };
        self.latest.send_replace(seq);
        seq
    }

    /// Every event with `seq > after`.
    pub fn after(&self, after: u64) -> Vec<SeqEvent> {
        let events = self.events();
        events.get(after as usize..).map(<[SeqEvent]>::to_vec).unwrap_or_default()
    }

    pub fn last_seq(&self) -> u64 {
        *self.latest.borrow()
    }

    pub fn all(&self) -> Vec<SeqEvent> {
        self.after(0)
    }
}

/// Events after `after`, then live ones as they come, ending after the first
/// event that ends a stream (a `result`: the turn ended or paused).
pub fn until_turn_pauses(log: Arc<EventLog>, after: u64) -> impl Stream<Item = SeqEvent> {
    let receiver = log.latest.subscribe();
    futures::stream::unfold((log, receiver, after, false), |(log, mut receiver, mut seen, done)| async move {
        if done {
            return None;
        }
        loop {
            let batch = log.after(seen);
            if !batch.is_empty() {
                let mut out = Vec::with_capacity(batch.len());
                let mut ended = false;
                for event in batch {
                    seen = event.seq;
                    ended = event.event.ends_stream();
                    out.push(event);
                    if ended {
                        break;
                    }
                }
                return Some((futures::stream::iter(out), (log, receiver, seen, ended)));
            }
            if receiver.changed().await.is_err() {
                return None;
            }
        }
    })
    .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::events::{ResultStatus, Role};
    use futures::StreamExt;

    fn text(content: &str) -> AgentEvent {
        AgentEvent::Message { role: Role::Assistant, content: content.into(), delta: true }
    }
    fn result() -> AgentEvent {
        AgentEvent::Result { status: ResultStatus::Success, pending: None }
    }

    #[test]
    fn seq_increases_from_one_and_after_slices() {
        let log = EventLog::default();
        assert_eq!((log.push(text("a")), log.push(text("b")), log.push(text("c"))), (1, 2, 3));
        let seqs: Vec<u64> = log.after(1).iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [2, 3]);
        assert!(log.after(3).is_empty() && log.after(99).is_empty());
        assert_eq!(log.last_seq(), 3);
    }

    #[tokio::test]
    async fn stream_replays_then_follows_live_and_stops_at_result() {
        let log = Arc::new(EventLog::default());
        log.push(text("old"));
        log.push(text("stored"));
        let reader = tokio::spawn(until_turn_pauses(log.clone(), 1).map(|e| e.seq).collect::<Vec<_>>());
        tokio::task::yield_now().await;
        for i in 0..1000 {
            log.push(text(&i.to_string()));
        }
        log.push(result());
        log.push(text("next turn"));
        let seqs = reader.await.unwrap();
        assert_eq!(seqs, (2..=1003).collect::<Vec<u64>>(), "no gaps, no duplicates, stops at the result");
    }
}
