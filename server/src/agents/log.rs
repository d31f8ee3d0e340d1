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
//!
//! With a store, the log keeps only its latest events in memory (see
//! [`MAX_RESIDENT_EVENTS`]): older ones, on disk, are read back when asked for.

use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::Bytes;
use futures::Stream;
use protocol::events::{AgentEvent, SeqEvent};
use tokio::sync::watch;

use crate::store::{Store, StoreError};

/// A session's log keeps at most this many events in memory (with a store):
/// a long session's deltas would otherwise grow the hub without bound. Past
/// it (or past [`MAX_RESIDENT_BYTES`]), the oldest events that are on disk
/// leave memory, down to half, and are read back from the store when a reader
/// asks for them. A turn's own events are the latest, so it reads from memory.
pub const MAX_RESIDENT_EVENTS: usize = 4096;
/// As [`MAX_RESIDENT_EVENTS`], in bytes of the events' lines (an edit's diff
/// can be megabytes).
pub const MAX_RESIDENT_BYTES: usize = 16 << 20;

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
    /// The store ticket of its save, durable or not (0: none): once settled,
    /// and the session's writes all on disk, it may leave memory.
    stored: crate::store::Ticket,
}

impl Logged {
    fn new(event: &SeqEvent) -> Self {
        let mut line = serde_json::to_vec(event).unwrap_or_else(|err| {
            // Our own types always serialize; should one not, readers still get a line.
            tracing::error!(seq = event.seq, "event not serialized: {err}");
            let stand_in = AgentEvent::Error {
                severity: protocol::events::Severity::Error,
                message: format!("The hub could not write event {} down.", event.seq),
                code: None,
            };
            serde_json::to_vec(&SeqEvent { event: stand_in, seq: event.seq }).unwrap_or_default()
        });
        line.push(b'\n');
        Self { seq: event.seq, line: line.into(), ends_stream: event.event.ends_stream(), ticket: 0, stored: 0 }
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
    /// The last seq that left memory (0: none); changed under the events' lock.
    evicted: std::sync::atomic::AtomicU64,
    /// The bytes of the resident events' lines; changed under the events' lock.
    bytes: std::sync::atomic::AtomicUsize,
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
        let events: Vec<Logged> = events.iter().map(Logged::new).collect();
        let bytes = events.iter().map(|event| event.line.len()).sum();
        let log = Self {
            events: Mutex::new(events),
            published: watch::channel(last).0,
            sink,
            detached: Default::default(),
            saved: Default::default(),
            ids: Mutex::new(ids),
            evicted: Default::default(),
            bytes: std::sync::atomic::AtomicUsize::new(bytes),
        };
        log.bound(&mut log.events());
        log
    }

    /// Past [`MAX_RESIDENT_EVENTS`] or [`MAX_RESIDENT_BYTES`], the oldest
    /// events that are on disk leave memory, down to half of either.
    fn bound(&self, events: &mut Vec<Logged>) {
        use std::sync::atomic::Ordering::{Acquire, Release};
        let bytes = self.bytes.load(Acquire);
        if events.len() <= MAX_RESIDENT_EVENTS && bytes <= MAX_RESIDENT_BYTES {
            return;
        }
        let Some((store, session)) = self.sink.as_ref().filter(|_| !self.is_detached()) else { return };
        // Tickets grow with seq: the events on disk are a prefix. None is, while
        // a write of the session's is not (it failed and waits for a retry).
        if !store.committed(session, 0) {
            return;
        }
        let published = self.last_seq();
        let on_disk = events.partition_point(|event| event.seq <= published && store.settled(event.stored));
        let (mut count, mut left) = (0, bytes);
        while count < on_disk && (events.len() - count > MAX_RESIDENT_EVENTS / 2 || left > MAX_RESIDENT_BYTES / 2) {
            left -= events[count].line.len();
            count += 1;
        }
        if count == 0 {
            return;
        }
        self.evicted.store(events[count - 1].seq, Release);
        events.drain(..count);
        self.bytes.store(left, Release);
    }

    /// The events `after < seq <= through` that left memory, read back.
    fn read_back(&self, after: u64, through: u64, limit: usize) -> Result<Vec<Logged>, StoreError> {
        let Some((store, session)) = self.sink.as_ref().filter(|_| after < through) else { return Ok(Vec::new()) };
        let events = store.events_between(session, after, through, limit)?;
        Ok(events.iter().map(Logged::new).collect())
    }

    /// The last seq no longer in memory (0: all are).
    fn evicted(&self) -> u64 {
        self.evicted.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The published events still in memory (no read of the store): for
    /// checks that may miss what left memory long ago, and fail closed then.
    pub fn recent(&self) -> Vec<SeqEvent> {
        let published = self.last_seq();
        let events = self.events();
        let end = events.partition_point(|event| event.seq <= published);
        events_of(&events[..end])
    }

    /// How many events are in memory.
    pub fn resident(&self) -> usize {
        self.events().len()
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
        // Streamed text and live output may be lost with the last ~20 ms before a
        // crash (they are cheap to batch); everything else is durable before it is seen.
        let durable = !matches!(
            event,
            AgentEvent::Message { role: protocol::events::Role::Assistant, delta: true, .. }
                | AgentEvent::Thought { .. }
                | AgentEvent::ToolOutput { .. }
        );
        if let Some(id) = announced_id(&event) {
            self.ids.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(id.to_string());
        }
        let mut logged = Logged::new(&SeqEvent { event, seq });
        if let Some((store, session)) = self.sink.as_ref().filter(|_| !self.is_detached()) {
            let ticket = store.append_event(session, seq, logged.line.clone(), durable);
            self.saved.store(ticket, std::sync::atomic::Ordering::Release);
            logged.stored = ticket;
            if durable {
                logged.ticket = ticket;
            }
        }
        self.bytes.fetch_add(logged.line.len(), std::sync::atomic::Ordering::AcqRel);
        events.push(logged);
        self.bound(&mut events);
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
        let dropped: usize = events[keep..].iter().map(|event| event.line.len()).sum();
        self.bytes.fetch_sub(dropped, std::sync::atomic::Ordering::AcqRel);
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
    /// on disk yet (streamed text aside). Those no longer in memory are read
    /// back from the store (a failed read is logged, and they are left out).
    pub fn after(&self, after: u64) -> Vec<Logged> {
        self.page(after, usize::MAX).map(|(events, _)| events).unwrap_or_else(|err| {
            tracing::error!("a session's older events could not be read back: {err}");
            self.resident_after(&self.events(), after)
        })
    }

    /// At most `limit` events of [`EventLog::after`], and whether more follow.
    pub fn page(&self, after: u64, limit: usize) -> Result<(Vec<Logged>, bool), StoreError> {
        let (resident, evicted) = {
            let events = self.events();
            (self.resident_after(&events, after), self.evicted())
        };
        let wanted = limit.saturating_add(1);
        let mut page = self.read_back(after, evicted, wanted)?;
        page.extend(resident.into_iter().take(wanted.saturating_sub(page.len())));
        let more = page.len() > limit;
        page.truncate(limit);
        Ok((page, more))
    }

    /// [`EventLog::after`], of what is in memory (`events`, locked).
    fn resident_after(&self, events: &[Logged], after: u64) -> Vec<Logged> {
        let published = self.last_seq();
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
        let (resident, evicted) = {
            let events = self.events();
            let end = events.partition_point(|event| event.seq <= published);
            (events_of(&events[..end]), self.evicted())
        };
        let mut all = self.older_events(evicted);
        all.extend(resident);
        all
    }

    /// The events no longer in memory (`seq <= evicted`), read back.
    fn older_events(&self, evicted: u64) -> Vec<SeqEvent> {
        match &self.sink {
            Some((store, session)) if evicted > 0 => {
                store.events_between(session, 0, evicted, usize::MAX).unwrap_or_else(|err| {
                    tracing::error!(session, "a session's older events could not be read back: {err}");
                    Vec::new()
                })
            }
            _ => Vec::new(),
        }
    }

    /// The published `tool_use` that announced `tool_id`, the latest first
    /// (read back from the store when it is no longer in memory).
    pub fn announcement(&self, tool_id: &str) -> Option<SeqEvent> {
        let is_it = |event: &SeqEvent| matches!(&event.event, AgentEvent::ToolUse { tool_id: id, .. } if id == tool_id);
        let published = self.last_seq();
        let evicted = {
            let events = self.events();
            let found = events
                .iter()
                .rev()
                .filter(|event| event.seq <= published && event.line.starts_with(br#"{"type":"tool_use""#))
                .filter_map(Logged::event)
                .find(is_it);
            if found.is_some() {
                return found;
            }
            self.evicted()
        };
        self.older_events(evicted).into_iter().rev().find(is_it)
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
    use futures::StreamExt;
    use protocol::events::{ResultStatus, Role};

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

    /// Issue 24, item 7c: a long session's log does not stay in memory whole;
    /// what left is read back from the store, in order, without a gap.
    #[tokio::test]
    async fn a_long_log_keeps_its_latest_events_in_memory_and_reads_older_ones_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let log = EventLog::restored(Vec::new(), Some((store.clone(), "s1".into())));
        log.push(AgentEvent::ToolUse {
            tool_name: "glob".into(),
            tool_id: "early".into(),
            parameters: serde_json::json!({}),
            kind: protocol::events::ToolKind::Read,
            diff: None,
            policy: None,
        });
        for i in 0..MAX_RESIDENT_EVENTS {
            log.push(text(&i.to_string()));
        }
        store.flush().await.unwrap();
        let total = MAX_RESIDENT_EVENTS as u64 + 1_000;
        for i in log.last_seq()..total {
            log.push(text(&i.to_string()));
        }
        assert!(log.resident() <= MAX_RESIDENT_EVENTS, "{} events in memory", log.resident());
        let seqs: Vec<u64> = log.after(0).iter().map(|event| event.seq).collect();
        assert_eq!(seqs, (1..=total).collect::<Vec<_>>(), "every event, in order, no gap");
        assert_eq!(log.published().len() as u64, total);
        let (page, more) = log.page(10, 5).unwrap();
        assert_eq!((page.iter().map(|event| event.seq).collect::<Vec<_>>(), more), (vec![11, 12, 13, 14, 15], true));
        let (page, more) = log.page(total - 2, 5).unwrap();
        assert_eq!((page.len(), more), (2, false));
        assert_eq!(log.announcement("early").map(|event| event.seq), Some(1), "read back from the store");
        assert_eq!(log.last(), Some(text(&(total - 1).to_string())));
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
