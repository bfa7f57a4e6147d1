//! How long an item waits before it is retried (client-go's workqueue rate limiters): per-item
//! exponential backoff, an overall token bucket, and the slower of several.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now; counts as one more retry of it.
    fn when(&self, item: &T) -> Duration;
    /// Stops tracking `item` (it succeeded): its next failure starts from scratch.
    fn forget(&self, item: &T);
    /// Retries of `item` since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

/// `base * 2^failures`, capped at `max`.
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Mutex<HashMap<T, u32>>,
}

impl<T> ItemExponentialFailureRateLimiter<T> {
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Mutex::new(HashMap::new()),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let count = failures.entry(item.clone()).or_insert(0);
        let exp = *count;
        *count = count.saturating_add(1);
        2u32.checked_pow(exp)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.max, |d| d.min(self.max))
    }

    fn forget(&self, item: &T) {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(item)
            .copied()
            .unwrap_or(0)
    }
}

struct Bucket {
    tokens: f64,
    last: Option<Instant>,
}

/// A token bucket over all items: `burst` at once, then `qps` per second; each call reserves a
/// token and waits until it is there. A `qps` that is not positive and finite means no limit.
pub struct BucketRateLimiter {
    qps: f64,
    burst: f64,
    bucket: Mutex<Bucket>,
}

impl BucketRateLimiter {
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst: f64::from(burst.max(1)),
            bucket: Mutex::new(Bucket {
                tokens: 0.0,
                last: None,
            }),
        }
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        if !(self.qps.is_finite() && self.qps > 0.0) {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let mut bucket = self.bucket.lock().unwrap_or_else(|p| p.into_inner());
        // The bucket starts full.
        let refilled = match bucket.last {
            None => self.burst,
            Some(last) => {
                let earned = now.saturating_duration_since(last).as_secs_f64() * self.qps;
                (bucket.tokens + earned).min(self.burst)
            }
        };
        bucket.tokens = refilled - 1.0;
        bucket.last = Some(now);
        if bucket.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-bucket.tokens / self.qps)
        }
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// The longest wait of several limiters (all of them count the retry).
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Per-item backoff from 5ms to 1000s, within an overall `qps` / `burst` bucket.
pub fn controller_rate_limiter<T>(qps: f64, burst: u32) -> MaxOfRateLimiter<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(qps, burst)),
    ])
}

/// Upstream's default: [`controller_rate_limiter`] at 10 qps with a burst of 100.
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Clone + Eq + Hash + Send + Sync + 'static,
{
    controller_rate_limiter(10.0, 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn exponential_backoff_doubles_per_item_up_to_the_cap() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS(5), Duration::from_secs(1000));
        let waits: Vec<_> = (0..5).map(|_| limiter.when(&"a")).collect();
        assert_eq!(waits, [MS(5), MS(10), MS(20), MS(40), MS(80)]);
        assert_eq!(limiter.num_requeues(&"a"), 5);
        // Other items have their own count.
        assert_eq!(limiter.when(&"b"), MS(5));
        for _ in 0..40 {
            limiter.when(&"a");
        }
        assert_eq!(limiter.when(&"a"), Duration::from_secs(1000));
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        assert_eq!(limiter.when(&"a"), MS(5));
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_allows_a_burst_then_spaces_by_qps() {
        let limiter = BucketRateLimiter::new(10.0, 100);
        for i in 0..100 {
            assert_eq!(RateLimiter::<u32>::when(&limiter, &i), Duration::ZERO);
        }
        assert_eq!(RateLimiter::<u32>::when(&limiter, &100), MS(100));
        assert_eq!(RateLimiter::<u32>::when(&limiter, &101), MS(200));
        // Time refills it: after a second, 10 tokens are back, 2 of which were owed.
        tokio::time::advance(Duration::from_secs(1)).await;
        for i in 0..8 {
            assert_eq!(RateLimiter::<u32>::when(&limiter, &i), Duration::ZERO);
        }
        assert_eq!(RateLimiter::<u32>::when(&limiter, &8), MS(100));
    }

    #[tokio::test(start_paused = true)]
    async fn default_limiter_takes_the_longer_wait() {
        let limiter = default_controller_rate_limiter::<&str>();
        assert_eq!(limiter.when(&"a"), MS(5));
        assert_eq!(limiter.when(&"a"), MS(10));
        assert_eq!(limiter.num_requeues(&"a"), 2);
        // Exhaust the bucket with other items: the bucket's wait now dominates.
        for _ in 0..98 {
            limiter.when(&"x");
        }
        assert_eq!(limiter.when(&"b"), MS(100));
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
        // Unlimited overall: only the per-item backoff applies, however many items fail.
        let fast = controller_rate_limiter::<u32>(f64::INFINITY, 1);
        for i in 0..1000 {
            assert_eq!(fast.when(&i), MS(5));
        }
    }
}
