//! client-go's workqueue: a queue of keys for controllers' workers where an item is queued at
//! most once and never processed by two workers at once, with delayed and rate-limited adds
//! for retries. Named queues record client-go's `workqueue_*` metrics.

mod delaying;
mod metrics;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use metrics::register_metrics;
pub use queue::Queue;
pub use rate_limiter::{
    controller_rate_limiter, default_controller_rate_limiter, BucketRateLimiter,
    ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimiter,
};
pub use rate_limiting::RateLimitingQueue;
