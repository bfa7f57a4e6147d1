//! The basic work queue (client-go's workqueue.Type): each item is queued at most once, and an
//! item being processed is never handed to a second worker; if it is added again meanwhile, it
//! is queued once the first worker calls `done`.

use std::collections::{HashSet, VecDeque};
use std::hash::Hash;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use tokio::sync::Notify;

use super::metrics::{self, InFlight, QueueMetrics};

struct State<T> {
    queue: VecDeque<T>,
    /// Items that need processing: queued, or re-added while being processed.
    dirty: HashSet<T>,
    /// Items handed out and not yet `done`.
    processing: HashSet<T>,
    shutting_down: bool,
    /// None for an unnamed queue.
    metrics: Option<QueueMetrics<T>>,
}

struct Inner<T> {
    state: Mutex<State<T>>,
    ready: Notify,
}

/// Cheap to clone; clones share the queue.
pub struct Queue<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Queue<T> {
    /// A queue without metrics.
    pub fn new() -> Self {
        Self::named("")
    }

    /// A queue whose metrics carry `name` (upstream's queue config Name); an empty name
    /// records none.
    pub fn named(name: &str) -> Self {
        let metrics = QueueMetrics::new(name);
        let named = metrics.is_some();
        let inner = Arc::new(Inner {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                shutting_down: false,
                metrics,
            }),
            ready: Notify::new(),
        });
        if named {
            let weak: Weak<dyn InFlight> = Arc::downgrade(&inner) as _;
            metrics::track(weak);
        }
        Self { inner }
    }

    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks `item` as needing processing; ignored after shutdown.
    pub fn add(&self, item: T) {
        let mut state = self.lock();
        if state.shutting_down || state.dirty.contains(&item) {
            return;
        }
        if let Some(m) = state.metrics.as_mut() {
            m.add(&item);
        }
        state.dirty.insert(item.clone());
        if state.processing.contains(&item) {
            return;
        }
        state.queue.push_back(item);
        self.inner.ready.notify_one();
    }

    /// Items waiting to be handed out.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the next item; None once the queue shuts down. The caller must call `done`
    /// with the item when finished with it.
    pub async fn get(&self) -> Option<T> {
        loop {
            let mut woken = pin!(self.inner.ready.notified());
            // Registered before looking, so an add between the look and the wait still wakes.
            woken.as_mut().enable();
            {
                let mut state = self.lock();
                if state.shutting_down {
                    return None;
                }
                if let Some(item) = state.queue.pop_front() {
                    if let Some(m) = state.metrics.as_mut() {
                        m.get(&item);
                    }
                    state.dirty.remove(&item);
                    state.processing.insert(item.clone());
                    return Some(item);
                }
            }
            woken.await;
        }
    }

    /// Ends the processing of `item`; if it was added meanwhile it is queued again.
    pub fn done(&self, item: &T) {
        let mut state = self.lock();
        if let Some(m) = state.metrics.as_mut() {
            m.done(item);
        }
        state.processing.remove(item);
        if state.dirty.contains(item) && !state.shutting_down {
            state.queue.push_back(item.clone());
            self.inner.ready.notify_one();
        }
    }

    /// Stops handing out items at once: waiting and later `get`s return None and adds are
    /// ignored. Unlike upstream, queued items are not drained: controllers stop when they lose
    /// leadership, and acting on more items after that would race the new leader.
    pub fn shut_down(&self) {
        let mut state = self.lock();
        if !state.shutting_down {
            state.shutting_down = true;
            let pending = state.dirty.len();
            if let Some(m) = state.metrics.as_mut() {
                m.abandon(pending);
            }
        }
        drop(state);
        self.inner.ready.notify_waiters();
    }

    /// Counts a retry (a delayed or rate-limited add) in `workqueue_retries_total`.
    pub(super) fn count_retry(&self) {
        if let Some(m) = self.lock().metrics.as_ref() {
            m.retry();
        }
    }

    pub fn is_shutting_down(&self) -> bool {
        self.lock().shutting_down
    }
}

impl<T: Send> InFlight for Inner<T> {
    fn update_in_flight(&self) {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = state.metrics.as_ref() {
            m.update_in_flight();
        }
    }
}

impl<T> Drop for Inner<T> {
    /// A queue dropped without shutting down takes its pending items out of the depth.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        if !state.shutting_down {
            let pending = state.dirty.len();
            if let Some(m) = state.metrics.as_mut() {
                m.abandon(pending);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn queued_items_are_deduplicated_in_order() {
        let q = Queue::new();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn an_item_re_added_while_processing_waits_for_done() {
        let q = Queue::new();
        q.add("a");
        let item = q.get().await;
        assert_eq!(item, Some("a"));
        q.add("a");
        q.add("a");
        // Not handed to a second worker while the first holds it.
        assert_eq!(q.len(), 0);
        let second = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!second.is_finished());
        q.done(&"a");
        assert_eq!(second.await.expect("join"), Some("a"));
        // Processed once more, then gone.
        q.done(&"a");
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn concurrent_workers_never_share_an_item() {
        let q: Queue<u32> = Queue::new();
        let busy = Arc::new(Mutex::new(HashSet::new()));
        let mut workers = Vec::new();
        for _ in 0..4 {
            let (q, busy) = (q.clone(), busy.clone());
            workers.push(tokio::spawn(async move {
                let mut handled = 0;
                while let Some(item) = q.get().await {
                    let fresh = busy.lock().map(|mut b| b.insert(item)).unwrap_or(false);
                    assert!(fresh, "item {item} handed to two workers at once");
                    tokio::task::yield_now().await;
                    busy.lock().map(|mut b| b.remove(&item)).unwrap_or(false);
                    q.done(&item);
                    handled += 1;
                }
                handled
            }));
        }
        for round in 0..50 {
            for item in 0..5 {
                q.add(item);
            }
            if round % 10 == 0 {
                tokio::task::yield_now().await;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        q.shut_down();
        let mut handled = 0;
        for w in workers {
            handled += w.await.expect("worker panicked");
        }
        assert!(handled >= 5, "every item at least once, got {handled}");
    }

    #[tokio::test]
    async fn shutdown_releases_waiting_workers_and_ignores_adds() {
        let q: Queue<&str> = Queue::new();
        let waiting = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        q.shut_down();
        assert_eq!(waiting.await.expect("join"), None);
        q.add("late");
        assert!(q.is_empty());
        assert_eq!(q.get().await, None);
        assert!(q.is_shutting_down());
    }
}
