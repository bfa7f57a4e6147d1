//! The queue controllers use (client-go's rate-limited workqueue): the basic queue, delayed
//! adds, and retries spaced by a rate limiter.

use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use super::delaying::Delayer;
use super::queue::Queue;
use super::rate_limiter::{default_controller_rate_limiter, RateLimiter};

/// Cheap to clone; clones share the queue. Needs a tokio runtime for delayed adds.
pub struct RateLimitingQueue<T> {
    queue: Queue<T>,
    delayer: Arc<Delayer<T>>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            delayer: self.delayer.clone(),
            limiter: self.limiter.clone(),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimitingQueue<T> {
    /// `name` labels the queue's `workqueue_*` metrics, as upstream's queue config Name
    /// (each controller's, as upstream names it); an empty name records none.
    pub fn new(name: &str, limiter: impl RateLimiter<T> + 'static) -> Self {
        let queue = Queue::named(name);
        Self {
            delayer: Arc::new(Delayer::new(queue.clone())),
            queue,
            limiter: Arc::new(limiter),
        }
    }

    /// With upstream's default limiter (see [`default_controller_rate_limiter`]).
    pub fn with_default_rate_limiter(name: &str) -> Self {
        Self::new(name, default_controller_rate_limiter())
    }

    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    pub fn len(&self) -> usize {
        self.queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The next item, once there is one; None after shutdown. Call `done` when finished.
    pub async fn get(&self) -> Option<T> {
        self.queue.get().await
    }

    pub fn done(&self, item: &T) {
        self.queue.done(item);
    }

    /// Adds `item` once `delay` has passed (at once for zero). An item already waiting keeps
    /// the earlier time.
    pub fn add_after(&self, item: T, delay: Duration) {
        // Every delayed add counts as a retry, as in upstream's delaying queue.
        if !self.queue.is_shutting_down() {
            self.queue.count_retry();
        }
        self.delayer.add_after(item, delay);
    }

    /// Adds `item` after the wait the rate limiter gives it (a retry after a failure).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.add_after(item, delay);
    }

    /// Resets the item's backoff (it was processed successfully). It does not remove it from
    /// the queue.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    /// See [`Queue::shut_down`]; items waiting for a delay are dropped too.
    pub fn shut_down(&self) {
        self.queue.shut_down();
        self.delayer.shut_down();
    }

    pub fn is_shutting_down(&self) -> bool {
        self.queue.is_shutting_down()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workqueue::rate_limiter::ItemExponentialFailureRateLimiter;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    async fn get_now<T: Clone + Eq + Hash + Send + Sync + 'static>(
        q: &RateLimitingQueue<T>,
    ) -> Option<T> {
        tokio::time::timeout(Duration::ZERO, q.get())
            .await
            .ok()
            .flatten()
    }

    #[tokio::test(start_paused = true)]
    async fn add_after_waits_and_keeps_the_earliest_time() {
        let q = RateLimitingQueue::with_default_rate_limiter("");
        q.add_after("a", MS(100));
        q.add_after("b", MS(50));
        q.add_after("a", MS(30));
        // A later time for a waiting item changes nothing.
        q.add_after("b", MS(500));
        tokio::time::sleep(MS(29)).await;
        assert!(q.is_empty());
        tokio::time::sleep(MS(2)).await;
        assert_eq!(get_now(&q).await, Some("a"));
        assert!(q.is_empty());
        tokio::time::sleep(MS(20)).await;
        assert_eq!(get_now(&q).await, Some("b"));
        // Nothing left waiting: the dropped 100ms and 500ms times never fire.
        tokio::time::sleep(MS(1000)).await;
        assert!(q.is_empty());
        q.add_after("now", Duration::ZERO);
        assert_eq!(q.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_adds_back_off_until_forgotten() {
        let q = RateLimitingQueue::new(
            "",
            ItemExponentialFailureRateLimiter::new(MS(10), Duration::from_secs(1)),
        );
        let mut waits = Vec::new();
        for _ in 0..3 {
            let start = tokio::time::Instant::now();
            q.add_rate_limited("x");
            let item = q.get().await;
            assert_eq!(item, Some("x"));
            waits.push(start.elapsed());
            q.done(&"x");
        }
        assert_eq!(waits, [MS(10), MS(20), MS(40)]);
        assert_eq!(q.num_requeues(&"x"), 3);
        q.forget(&"x");
        assert_eq!(q.num_requeues(&"x"), 0);
        let start = tokio::time::Instant::now();
        q.add_rate_limited("x");
        assert_eq!(q.get().await, Some("x"));
        assert_eq!(start.elapsed(), MS(10));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_drops_waiting_items_and_unblocks_get() {
        let q = RateLimitingQueue::<u32>::with_default_rate_limiter("");
        q.add_after(1, MS(10));
        let worker = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(worker.await.expect("join"), None);
        tokio::time::sleep(MS(20)).await;
        assert!(q.is_empty());
        q.add_rate_limited(2);
        assert!(q.is_empty());
    }
}
