//! A session's event log: every event gets the next `seq` here, and readers
//! (prompt streams, decision continuations, replays) read from the log, so a slow
//! or reconnecting reader can neither miss an event nor see one twice.
//!
//! Each event is serialized once, when it is appended: every stream, however
//! many readers, and the store take that line as it is.
//!
//! With a store, every event is also saved. Readers see events up to the
//! published mark only: [`EventLog::append_unpublished`] lets the agent make an
//! event durable before anyone can act on it.

use std::sync::{Arc, Mutex, MutexGuard};

use app::events::{AgentEvent, SeqEvent};
use axum::body::Bytes;
use futures::Stream;
use tokio::sync::watch;

use crate::store::Store;

/// An event as the log keeps it: its stream line, `{"type":…,"seq":N}` and a
/// newline, shared by every reader and the store.
#[derive(Debug, Clone)]
pub struct Logged {
    pub seq: u64,
    pub line: Bytes,
    /// A `result`: a prompt stream ends after it.
    pub ends_stream: bool,
    /// The store ticket readers wait for before they show it (0: none). Every
    /// event but streamed text is on disk before anyone sees it, so a seq a
    /// client saw never names another event after a crash.
    ticket: crate::store::Ticket,
}

impl Logged {
    fn new(event: &SeqEvent) -> Self {
        let mut line = serde_json::to_vec(event).unwrap_or_else(|err| {
            // Our own types always serialize; should one not, readers still get a line.
            tracing::error!(seq = event.seq, "event not serialized: {err}");
            let stand_in = AgentEvent::Error {
                severity: app::events::Severity::Error,
                message: format!("The hub could not write event {} down.", event.seq),
                code: None,
            };
            serde_json::to_vec(&SeqEvent { event: stand_in, seq: event.seq }).unwrap_or_default()
        });
        line.push(b'\n');
        Self { seq: event.seq, line: line.into(), ends_stream: event.event.ends_stream(), ticket: 0 }
    }

    /// The event, read back from its line (for the few readers that need it whole).
    pub fn event(&self) -> Option<SeqEvent> {
        serde_json::from_slice(&self.line)
            .map_err(|err| tracing::error!(seq = self.seq, "a logged event does not read back: {err}"))
            .ok()
    }
}

/// The events of `logged`, read back.
pub fn events_of(logged: &[Logged]) -> Vec<SeqEvent> {
    logged.iter().filter_map(Logged::event).collect()
}

pub struct EventLog {
    events: Mutex<Vec<Logged>>,
    /// The latest published seq, for readers waiting on more.
    published: watch::Sender<u64>,
    sink: Option<(Arc<Store>, String)>,
    /// The session was deleted: nothing more is saved (set under the events' lock,
    /// so no save can follow the store's delete).
    detached: std::sync::atomic::AtomicBool,
    /// The store ticket of the last event sent to be saved.
    saved: std::sync::atomic::AtomicU64,
    /// Every call and question id the log has announced: the hub never gives
    /// one twice in a session, even when a crash cut the turn that gave it.
    ids: Mutex<std::collections::HashSet<String>>,
}

/// The id an event announces (a call's `tool_use`, a question's `input_request`).
fn announced_id(event: &AgentEvent) -> Option<&str> {
    match event {
        AgentEvent::ToolUse { tool_id, .. } => Some(tool_id),
        AgentEvent::InputRequest { request_id, .. } => Some(request_id),
        _ => None,
    }
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
        let ids = events.iter().filter_map(|event| announced_id(&event.event)).map(str::to_string).collect();
        let events = events.iter().map(Logged::new).collect();
        Self {
            events: Mutex::new(events),
            published: watch::channel(last).0,
            sink,
            detached: Default::default(),
            saved: Default::default(),
            ids: Mutex::new(ids),
        }
    }

    fn events(&self) -> MutexGuard<'_, Vec<Logged>> {
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
        // Streamed text may be lost with the last ~20 ms before a crash (it is
        // cheap to batch); everything else is durable before it is seen.
        let durable = !matches!(
            event,
            AgentEvent::Message { role: app::events::Role::Assistant, delta: true, .. } | AgentEvent::Thought { .. }
        );
        if let Some(id) = announced_id(&event) {
            self.ids.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(id.to_string());
        }
        let mut logged = Logged::new(&SeqEvent { event, seq });
        if let Some((store, session)) = self.sink.as_ref().filter(|_| !self.is_detached()) {
            let ticket = store.append_event(session, seq, logged.line.clone(), durable);
            self.saved.store(ticket, std::sync::atomic::Ordering::Release);
            if durable {
                logged.ticket = ticket;
            }
        }
        events.push(logged);
        seq
    }

    /// The session is being deleted: from now on its events stay in memory
    /// only. Returns once no save of an event is under way.
    pub fn detach(&self) {
        let _events = self.events();
        self.detached.store(true, std::sync::atomic::Ordering::Release);
    }

    fn is_detached(&self) -> bool {
        self.detached.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Drops the events appended since the last publish (nobody saw them); the
    /// next event takes their seq, and its save replaces theirs in the store.
    pub fn withdraw_unpublished(&self) {
        let published = self.last_seq();
        let mut events = self.events();
        let keep = events.partition_point(|event| event.seq <= published);
        events.truncate(keep);
    }

    /// Whether a call or question of this session was ever announced with `id`.
    pub fn announced(&self, id: &str) -> bool {
        self.ids.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).contains(id)
    }

    /// The store ticket of the last event sent to be saved (0: none).
    pub fn saved_ticket(&self) -> crate::store::Ticket {
        self.saved.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Makes every appended event visible to readers.
    pub fn publish(&self) {
        let last = self.events().last().map_or(0, |event| event.seq);
        self.published.send_replace(last);
    }

    /// Every published event with `seq > after`, up to the first that is not
    /// on disk yet (streamed text aside).
    pub fn after(&self, after: u64) -> Vec<Logged> {
        let published = self.last_seq();
        let events = self.events();
        let start = events.partition_point(|event| event.seq <= after);
        let mut end = events.partition_point(|event| event.seq <= published);
        if let Some((store, _)) = &self.sink {
            let held = events[start.min(end)..end].iter().position(|event| !store.settled(event.ticket));
            if let Some(held) = held {
                end = start + held;
            }
        }
        events.get(start..end).map(<[Logged]>::to_vec).unwrap_or_default()
    }

    pub fn last_seq(&self) -> u64 {
        *self.published.borrow()
    }

    /// Every published event, read back, as clients may see it (up to the
    /// first not yet on disk).
    pub fn all(&self) -> Vec<SeqEvent> {
        events_of(&self.after(0))
    }

    /// Every published event, read back, on disk or not: for the hub's own
    /// reading of what a turn said (recovery), never for a client.
    pub fn published(&self) -> Vec<SeqEvent> {
        let published = self.last_seq();
        let events = self.events();
        let end = events.partition_point(|event| event.seq <= published);
        events_of(&events[..end])
    }

    /// The last published event.
    pub fn last(&self) -> Option<AgentEvent> {
        let published = self.last_seq();
        let last = self.events().iter().rev().find(|event| event.seq <= published).cloned()?;
        last.event().map(|event| event.event)
    }
}

/// Events after `after`, then live ones as they come, ending after the first
/// event that ends a stream (a `result`: the turn ended or paused). Events come
/// in batches, everything published since the last look, so a fast producer
/// costs one write per batch rather than per event.
pub fn until_turn_pauses(log: Arc<EventLog>, after: u64) -> impl Stream<Item = Vec<Logged>> {
    let receiver = log.published.subscribe();
    // An event waits for the store before it is shown: wake on writes too.
    let writes = log.sink.as_ref().map(|(store, _)| store.watch_writes());
    let state = (log, receiver, writes, after, false);
    futures::stream::unfold(state, |(log, mut receiver, mut writes, seen, done)| async move {
        if done {
            return None;
        }
        loop {
            let mut batch = log.after(seen);
            if let Some(end) = batch.iter().position(|event| event.ends_stream) {
                batch.truncate(end + 1);
                let seen = batch[end].seq;
                return Some((batch, (log, receiver, writes, seen, true)));
            }
            if let Some(last) = batch.last() {
                let seen = last.seq;
                return Some((batch, (log, receiver, writes, seen, false)));
            }
            let written = async {
                match writes.as_mut() {
                    Some(writes) => writes.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            let more = tokio::select! {
                changed = receiver.changed() => changed.is_ok(),
                changed = written => changed,
            };
            if !more {
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
    fn each_event_is_one_stream_line_that_reads_back_as_pushed() {
        let log = EventLog::default();
        log.push(text("say \"hi\"\n"));
        log.push(result());
        let logged = log.after(0);
        let lines: Vec<&[u8]> = logged.iter().map(|event| &event.line[..]).collect();
        assert_eq!(
            lines,
            [
                &b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"say \\\"hi\\\"\\n\",\"delta\":true,\"seq\":1}\n"[..],
                &b"{\"type\":\"result\",\"status\":\"success\",\"seq\":2}\n"[..],
            ]
        );
        assert_eq!(logged.iter().map(|event| event.ends_stream).collect::<Vec<_>>(), [false, true]);
        let expected = vec![SeqEvent { event: text("say \"hi\"\n"), seq: 1 }, SeqEvent { event: result(), seq: 2 }];
        assert_eq!(events_of(&logged), expected);
        assert_eq!(log.all(), expected);
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
