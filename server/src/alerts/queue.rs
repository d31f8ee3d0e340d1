//! A bounded queue between the alerts and a channel's sender task. Putting
//! never waits: when the queue is full the oldest alert is dropped (and
//! logged), since the newest says what waits on the user now.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

/// How many alerts may wait for a slow receiver.
pub const CAPACITY: usize = 64;

pub struct Queue<T> {
    items: Mutex<VecDeque<T>>,
    ready: Notify,
    capacity: usize,
    name: &'static str,
}

impl<T> Queue<T> {
    pub fn new(name: &'static str, capacity: usize) -> Arc<Self> {
        Arc::new(Self { items: Mutex::new(VecDeque::new()), ready: Notify::new(), capacity: capacity.max(1), name })
    }

    /// Adds `item`, dropping the oldest when full; answers whether one was dropped.
    pub fn put(&self, item: T) -> bool {
        let dropped = {
            let mut items = self.items.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let dropped = if items.len() >= self.capacity { items.pop_front().is_some() } else { false };
            items.push_back(item);
            dropped
        };
        if dropped {
            tracing::warn!(
                channel = self.name,
                "alerts queue full ({} waiting): the oldest alert was dropped",
                self.capacity
            );
        }
        self.ready.notify_one();
        dropped
    }

    /// The next item, waiting for one.
    pub async fn take(&self) -> T {
        loop {
            let notified = self.ready.notified();
            if let Some(item) = self.items.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop_front() {
                return item;
            }
            notified.await;
        }
    }

    pub fn len(&self) -> usize {
        self.items.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_queue_drops_the_oldest_and_never_waits() {
        let queue = Queue::new("test", 2);
        assert!(!queue.put(1));
        assert!(!queue.put(2));
        assert!(queue.put(3), "full: 1 goes");
        assert_eq!((queue.take().await, queue.take().await), (2, 3));
        assert!(queue.is_empty());
        let waiting = tokio::spawn({
            let queue = queue.clone();
            async move { queue.take().await }
        });
        tokio::task::yield_now().await;
        queue.put(4);
        assert_eq!(waiting.await.unwrap(), 4, "a taker waiting is woken");
    }
}
