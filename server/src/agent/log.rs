//! A session's event log: every event gets the next `seq` here, and readers
//! (prompt streams, decision continuations, replays) read from the log, so a slow
//! or reconnecting reader can neither miss an event nor see one twice.
//!
//! With a store, every event is also saved. Readers see events up to the
//! published mark only: [`EventLog::append_unpublished`] lets the agent make an
//! event durable before anyone can act on it.

use std::sync::{Arc, Mutex, MutexGuard};

use app::events::{AgentEvent, SeqEvent};
use futures::Stream;
use tokio::sync::watch;

use crate::store::Store;

pub struct EventLog {
    events: Mutex<Vec<SeqEvent>>,
    /// The latest published seq, for readers waiting on more.
    published: watch::Sender<u64>,
    sink: Option<(Arc<Store>, String)>,
}

impl Default for EventLog {
    fn default() -> Self {
        Self::restored(Vec::new(), None)
    }
}

impl EventLog {
    /// A log that goes on from `events` (in seq order), saving new ones to the store.
    pub fn restored(events: Vec<SeqEvent>, sink: Option<(Arc<Store>, String)>) -> Self {
        let last = events.last().map_or(0, |event| event.seq);
        Self { events: Mutex::new(events), published: watch::channel(last).0, sink }
    }

    fn events(&self) -> MutexGuard<'_, Vec<SeqEvent>> {
        self.events.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends and publishes an event; seq increases by one from the last.
    pub fn push(&self, event: AgentEvent) -> u64 {
        let seq = self.append_unpublished(event);
        self.publish();
        seq
    }

    /// Appends (and saves) an event that readers do not see until [`EventLog::publish`].
    pub fn append_unpublished(&self, event: AgentEvent) -> u64 {
        let mut events = self.events();
        let seq = events.last().map_or(0, |event| event.seq) + 1;
        let event = SeqEvent { event, seq };
        if let Some((store, session)) = &self.sink {
            store.append_event(session, &event);
        }
        events.push(event);
        seq
    }

    /// Makes every appended event visible to readers.
    pub fn publish(&self) {
        let last = self.events().last().map_or(0, |event| event.seq);
        self.published.send_replace(last);
    }

    /// Every published event with `seq > after`.
    pub fn after(&self, after: u64) -> Vec<SeqEvent> {
        let published = self.last_seq();
        let events = self.events();
        let start = events.partition_point(|event| event.seq <= after);
        let end = events.partition_point(|event| event.seq <= published);
        events.get(start..end).map(<[SeqEvent]>::to_vec).unwrap_or_default()
    }

    pub fn last_seq(&self) -> u64 {
        *self.published.borrow()
    }

    pub fn all(&self) -> Vec<SeqEvent> {
        self.after(0)
    }

    /// The last published event.
    pub fn last(&self) -> Option<AgentEvent> {
        let published = self.last_seq();
        self.events().iter().rev().find(|event| event.seq <= published).map(|event| event.event.clone())
    }
}

/// Events after `after`, then live ones as they come, ending after the first
/// event that ends a stream (a `result`: the turn ended or paused). Events come
/// in batches, everything published since the last look, so a fast producer
/// costs one write per batch rather than per event.
pub fn until_turn_pauses(log: Arc<EventLog>, after: u64) -> impl Stream<Item = Vec<SeqEvent>> {
    let receiver = log.published.subscribe();
    futures::stream::unfold((log, receiver, after, false), |(log, mut receiver, seen, done)| async move {
        if done {
            return None;
        }
        loop {
            let mut batch = log.after(seen);
            if let Some(end) = batch.iter().position(|event| event.event.ends_stream()) {
                batch.truncate(end + 1);
                let seen = batch[end].seq;
                return Some((batch, (log, receiver, seen, true)));
            }
            if let Some(last) = batch.last() {
                let seen = last.seq;
                return Some((batch, (log, receiver, seen, false)));
            }
            if receiver.changed().await.is_err() {
                return None;
            }
        }
    })
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

    #[test]
    fn unpublished_events_are_hidden_until_published_and_gaps_are_kept() {
        let stored = vec![SeqEvent { event: text("a"), seq: 1 }, SeqEvent { event: text("c"), seq: 3 }];
        let log = EventLog::restored(stored, None);
        assert_eq!(log.last_seq(), 3);
        assert_eq!(log.append_unpublished(result()), 4, "seq goes on from the last stored one");
        assert_eq!(log.after(1).iter().map(|e| e.seq).collect::<Vec<_>>(), [3]);
        assert_eq!(log.last(), Some(text("c")));
        log.publish();
        assert_eq!(log.after(1).iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(log.last(), Some(result()));
    }

    #[tokio::test]
    async fn stream_replays_then_follows_live_and_stops_at_result() {
        let log = Arc::new(EventLog::default());
        log.push(text("old"));
        log.push(text("stored"));
        let reader = tokio::spawn(
            until_turn_pauses(log.clone(), 1).flat_map(futures::stream::iter).map(|e| e.seq).collect::<Vec<_>>(),
        );
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
