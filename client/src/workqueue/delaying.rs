//! Adding items after a delay (client-go's delaying queue): one task per queue holds the
//! waiting items in time order and adds each when its time comes. An item already waiting
//! keeps the earlier of its two times.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::warn;

use super::queue::Queue;

/// Items waiting for their time, earliest first. Heap entries of items since moved to an
/// earlier time stay behind and are skipped.
struct Waiting<T> {
    heap: BinaryHeap<Reverse<(Instant, u64)>>,
    by_seq: HashMap<u64, T>,
    by_item: HashMap<T, (Instant, u64)>,
    next_seq: u64,
}

impl<T: Clone + Eq + Hash> Waiting<T> {
    fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            by_seq: HashMap::new(),
            by_item: HashMap::new(),
            next_seq: 0,
        }
    }

    fn insert(&mut self, item: T, at: Instant) {
        if let Some(&(when, seq)) = self.by_item.get(&item) {
            if when <= at {
                return;
            }
            self.by_seq.remove(&seq);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Reverse((at, seq)));
        self.by_seq.insert(seq, item.clone());
        self.by_item.insert(item, (at, seq));
    }

    fn next_at(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, seq))) = self.heap.peek() {
            if self.by_seq.contains_key(&seq) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    fn take_ready(&mut self, now: Instant) -> Vec<T> {
        let mut ready = Vec::new();
        while let Some(&Reverse((at, seq))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            if let Some(item) = self.by_seq.remove(&seq) {
                self.by_item.remove(&item);
                ready.push(item);
            }
        }
        ready
    }
}

async fn run<T>(queue: Queue<T>, mut rx: mpsc::UnboundedReceiver<(T, Instant)>)
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    let mut waiting = Waiting::new();
    loop {
        let next = waiting.next_at();
        // Never reached when nothing waits: the branch is disabled then.
        let deadline = next.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            msg = rx.recv() => match msg {
                Some((item, at)) => waiting.insert(item, at),
                // The queue shut down or was dropped: what still waits is dropped with it.
                None => return,
            },
            () = tokio::time::sleep_until(deadline), if next.is_some() => {}
        }
        for item in waiting.take_ready(Instant::now()) {
            queue.add(item);
        }
    }
}

/// The sending side of a queue's delay task, started on first use.
pub(super) struct Delayer<T> {
    queue: Queue<T>,
    tx: Mutex<Option<mpsc::UnboundedSender<(T, Instant)>>>,
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Delayer<T> {
    pub(super) fn new(queue: Queue<T>) -> Self {
        Self {
            queue,
            tx: Mutex::new(None),
        }
    }

    pub(super) fn add_after(&self, item: T, delay: Duration) {
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        let mut tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        // Checked under the lock `shut_down` takes after the queue shut down, so no task is
        // started after it.
        if self.queue.is_shutting_down() {
            return;
        }
        if tx.is_none() {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                warn!("delayed add outside a tokio runtime; adding at once");
                self.queue.add(item);
                return;
            };
            let (sender, rx) = mpsc::unbounded_channel();
            runtime.spawn(run(self.queue.clone(), rx));
            *tx = Some(sender);
        }
        if let Some(sender) = tx.as_ref() {
            let _ = sender.send((item, Instant::now() + delay));
        }
    }

    /// Ends the delay task.
    pub(super) fn shut_down(&self) {
        self.tx.lock().unwrap_or_else(|p| p.into_inner()).take();
    }
}
